//! The command line: global options and one subcommand per task, each explained in one help line.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, ArgGroup, Args, CommandFactory, Parser, Subcommand, ValueEnum};

/// Connect to your MCP servers, list their tools and call them.
///
/// Servers come from the MCP files of the applications you already use
/// (Claude Code, Claude Desktop, Cursor, VS Code, Windsurf, Codex, Gemini
/// CLI, Zed, goose, opencode, Cline: the project's, then yours), every
/// --config FILE and the store (mcp.json in $MCPCTL_DATA_DIR, else
/// $XDG_DATA_HOME/mcpctl, else ~/.local/share/mcpctl; `mcpctl sources`
/// shows where). A project's files win over yours; among yours,
/// --config files and the store win over other applications' files.
/// `mcpctl sources` lists every file looked at. --no-host-configs, or
/// MCPCTL_NO_HOST_CONFIGS=1 in the environment, reads only the project's
/// .mcp.json, --config files and the store. With no file at all, mcpctl
/// uses its built-in demo server, `demo`.
#[derive(Debug, Parser)]
#[command(
    name = "mcpctl",
    version,
    propagate_version = true,
    after_long_help = JSON_NAMES
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The `--json` naming scheme, at the end of the long help.
const JSON_NAMES: &str = "\
--json field names are snake_case in every command (model_name, is_error, has_more, approved_at...). \
What a server sent is passed through as it sent it, in MCP's own names: input and output \
schemas, a call's content and structured_content, a resource's contents, a prompt's messages.";

/// Options every command accepts, before or after its name. A command's
/// `--help` shows them under their own heading, and only those it uses
/// ([`command`]).
#[derive(Debug, Args)]
#[command(next_help_heading = GLOBAL_HEADING)]
pub(crate) struct GlobalArgs {
    /// Also read servers from FILE (mcpServers, VS Code or store format); repeatable
    #[arg(long = "config", value_name = "FILE", global = true)]
    pub(crate) configs: Vec<PathBuf>,

    /// Read the project's files (.mcp.json, .cursor/mcp.json, .vscode/mcp.json, ...) from DIR [default: the current directory]
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) project: Option<PathBuf>,

    /// Ignore the project's files (.mcp.json and other applications' project files)
    #[arg(long, global = true, conflicts_with = "project")]
    pub(crate) no_project: bool,

    /// Do not read other applications' MCP files (Claude, Cursor, VS Code, ...); also MCPCTL_NO_HOST_CONFIGS=1
    #[arg(
        long,
        global = true,
        env = "MCPCTL_NO_HOST_CONFIGS",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub(crate) no_host_configs: bool,

    /// Permission preset for calls: full calls without asking; workspace and readonly ask first
    #[arg(long, value_enum, value_name = "PRESET", default_value_t = Preset::Full, global = true)]
    pub(crate) preset: Preset,

    /// Print one JSON document on stdout (listings, call results, and errors as {"error": {...}})
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// Log to stderr: -v info, -vv debug, -vvv trace
    #[arg(short, long, action = ArgAction::Count, global = true)]
    pub(crate) verbose: u8,

    /// A directory servers may work in, answered to their `roots/list`; repeatable [default: the current directory]
    #[arg(long = "root", value_name = "DIR", global = true)]
    pub(crate) roots: Vec<PathBuf>,

    /// Wait at most SECS for each server to start and for each request (a call, a read), over every server's own `timeout` [default: the server's `timeout`, else 10 s to start]
    #[arg(long, value_name = "SECS", global = true, value_parser = parse_seconds)]
    pub(crate) timeout: Option<Duration>,
}

/// `--timeout SECS`: a positive number of seconds, fractions allowed.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 86_400.0 * 365.0 {
        return Err(format!(
            "`{text}`: give a number of seconds above 0 (e.g. 2 or 0.5)"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Servers given on the command line instead of in a file, beside the
/// configured ones.
#[derive(Debug, Args, Default, Clone)]
pub(crate) struct AdHocArgs {
    /// Also connect an ad-hoc stdio server, id `stdio` (`stdio-2`, ... when repeated): "CMD ARG..." split as a shell would, run without one
    #[arg(long = "stdio", value_name = "COMMAND")]
    pub(crate) stdio: Vec<String>,

    /// Also connect an ad-hoc Streamable HTTP server, id `url`
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,

    /// A header for the --url server, 'K: V' (or K=V); repeatable
    #[arg(long = "header", value_name = "'K: V'", requires = "url")]
    pub(crate) headers: Vec<String>,

    /// Send `Authorization: Bearer $VAR` to the --url server
    #[arg(long, value_name = "VAR", requires = "url")]
    pub(crate) bearer_env: Option<String>,
}

/// A log level (MCP "Server/Utilities/Logging", RFC 5424 severities).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogLevel {
    /// Debug-level messages.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant conditions.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The protocol's level.
    pub(crate) fn level(self) -> mcp_proto::types::LoggingLevel {
        use mcp_proto::types::LoggingLevel as L;
        match self {
            LogLevel::Debug => L::Debug,
            LogLevel::Info => L::Info,
            LogLevel::Notice => L::Notice,
            LogLevel::Warning => L::Warning,
            LogLevel::Error => L::Error,
            LogLevel::Critical => L::Critical,
            LogLevel::Alert => L::Alert,
            LogLevel::Emergency => L::Emergency,
        }
    }
}

/// The session permission preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Preset {
    /// Full access: calls run without asking.
    Full,
    /// Workspace write: every call asks first, unless allowed for the session.
    Workspace,
    /// Read only: every call asks first, unless allowed for the session.
    Readonly,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List every configured server: status, transport, tool count, source, and what to fix (exit 2 or 3 if one failed)
    Servers {
        /// Exit 0 even when a configured server failed
        #[arg(long)]
        allow_failures: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// List every file servers are read from, found or not: application, level, path and status
    Sources,

    /// Copy an application's servers (user and project files) into the store; existing ids are kept
    Import {
        /// The application: claude-code, claude-desktop, cursor, vscode, windsurf, codex, gemini, zed, goose, opencode or cline
        #[arg(value_parser = parse_host, value_name = "HOST")]
        host: mcp_config::Host,
    },

    /// List the tools of ready servers (all, or SERVER's): model name, raw name, description (exit 2 or 3 if a server failed)
    Tools {
        /// Only this server's tools (`SERVER.TOOL`: only that tool)
        server: Option<String>,
        /// Only this tool of SERVER (its raw name, as the table shows it)
        tool: Option<String>,
        /// Exit 0 even when a configured server failed
        #[arg(long)]
        allow_failures: bool,
        /// Print each tool's whole input schema (`tools SERVER TOOL --schema`: one tool's)
        #[arg(long)]
        schema: bool,
        /// Connect this command's own servers even when a background gateway (`serve --daemon`) serves them
        #[arg(long)]
        no_daemon: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Call a tool (`SERVER TOOL` or `SERVER.TOOL`) with JSON or key=value arguments, asking for approval when the preset requires it
    Call {
        /// The server's id, or SERVER.TOOL
        server: String,
        /// The tool's raw name (as `mcpctl tools` shows it)
        tool: Option<String>,
        /// key=value pairs (typed by the tool's schema; key=@FILE reads a file) for one call, or JSON objects, one call each; `-` reads JSON from stdin [default: {}]
        #[arg(value_name = "ARGS")]
        arguments: Vec<String>,
        /// Connect this command's own server even when a background gateway (`serve --daemon`) serves it
        #[arg(long)]
        no_daemon: bool,
        /// Write the result's images, audio and blobs into DIR (TOOL-INDEX.EXT, INDEX the block's place in the content)
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
        /// With --save, replace files that exist
        #[arg(long, requires = "save")]
        force: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// List the resources of ready servers (all, or SERVER's): server, URI, name, MIME type (exit 2 or 3 if a server failed)
    Resources {
        /// Only this server's resources
        server: Option<String>,
        /// Exit 0 even when a configured server failed
        #[arg(long)]
        allow_failures: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// List the skills ready servers publish (all, or SERVER's): server, SKILL.md URI, name, files (exit 2 or 3 if a server failed)
    Skills {
        /// Only this server's skills
        server: Option<String>,
        /// Exit 0 even when a configured server failed
        #[arg(long)]
        allow_failures: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Load a skill: its SKILL.md is verified against the server's entry (size, digest, frontmatter) and printed
    Skill {
        /// The server's id
        server: String,
        /// The skill's SKILL.md URI (as `mcpctl skills` shows it)
        uri: String,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Read a resource: text is printed, binary contents are saved with --output (or piped)
    Read {
        /// The server's id
        server: String,
        /// The resource's URI (as `mcpctl resources` shows it)
        uri: String,
        /// Write the contents, exactly as read, to FILE instead of stdout
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Subscribe to the resource and print it again each time the server says it changed, until Ctrl-C
        #[arg(long, conflicts_with = "output")]
        follow: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Print the log messages servers send (all, or SERVER's), asking each for LEVEL and above
    Logs {
        /// Only this server's messages
        server: Option<String>,
        /// The least severe level asked for (logging/setLevel) [default: the server's own]
        #[arg(long, value_enum, value_name = "LEVEL")]
        level: Option<LogLevel>,
        /// Keep printing until Ctrl-C (without it: until the servers are ready, then a moment more)
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// List the prompts of ready servers (all, or SERVER's): server, name, arguments, description (exit 2 or 3 if a server failed)
    Prompts {
        /// Only this server's prompts
        server: Option<String>,
        /// Exit 0 even when a configured server failed
        #[arg(long)]
        allow_failures: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Get a prompt with key=value arguments and print its messages
    Prompt {
        /// The server's id
        server: String,
        /// The prompt's name (as `mcpctl prompts` shows it)
        name: String,
        /// key=value pairs, one per argument (values are strings)
        #[arg(value_name = "KEY=VALUE")]
        arguments: Vec<String>,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Ask a server for the values a prompt's argument or a resource template's variable may take (`completion/complete`), one per line
    Complete {
        /// The server's id
        server: String,
        /// The prompt's name, or a resource template (`demo://greeting/{name}`, as `mcpctl resources` shows it)
        prompt: String,
        /// The argument (or template variable) to complete
        argument: String,
        /// What is typed so far [default: nothing]
        #[arg(default_value = "", hide_default_value = true)]
        prefix: String,
        /// Arguments already chosen, key=value, for servers whose values depend on them
        #[arg(long = "with", value_name = "KEY=VALUE")]
        context: Vec<String>,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Add a server to the store: `add NAME -- COMMAND ARGS...` or `add NAME --url URL` (a COMMAND not found is saved with a warning)
    Add(Box<AddArgs>),

    /// Remove a server (and its saved secrets) from the store
    Remove {
        /// The server's id
        name: String,
    },

    /// Enable a stored server
    Enable {
        /// The server's id
        name: String,
    },

    /// Disable a stored server: it stays in the store and is never connected
    Disable {
        /// The server's id
        name: String,
    },

    /// Connect to a server afresh (after an error) and show its status
    Retry {
        /// The server's id
        server: String,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Show every server's status live until all have settled
    Watch {
        /// Keep watching after the servers settle and print each event as it happens (one JSON line each with --json) until Ctrl-C
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        adhoc: AdHocArgs,
    },

    /// Log in to an HTTP server with OAuth: prints a URL to open (none for client_credentials), then stores the tokens
    Login {
        /// The server's id
        server: String,
    },

    /// Forget the OAuth tokens stored for an HTTP server
    Logout {
        /// The server's id
        server: String,
    },

    /// Approve a project server as it is defined now (`--list`: every approval)
    #[command(group(ArgGroup::new("what").required(true).args(["server", "list"])))]
    Trust {
        /// The project server's id
        server: Option<String>,
        /// List the approved project servers
        #[arg(long)]
        list: bool,
    },

    /// Forget the approval of a project server
    Untrust {
        /// The project server's id
        server: String,
    },

    /// Serve the settings page on 127.0.0.1: add, edit, enable and delete stored servers
    Ui(UiArgs),

    /// Serve every configured server's tools as one MCP server: on stdin/stdout (for a host that launches mcpctl as its MCP server), or with --http to many clients at once
    Serve {
        /// Start a server only when a call needs it, listing its tools from mcpctl's tool cache (servers not cached yet start at once)
        #[arg(long)]
        lazy: bool,
        /// Serve Streamable HTTP on 127.0.0.1 instead of stdio; prints the URL and the bearer token each request needs
        #[arg(long)]
        http: bool,
        /// The port for --http [default: one the system picks]
        #[arg(long, value_name = "PORT", requires = "http")]
        port: Option<u16>,
        /// Keep serving in the background on a Unix socket in the data directory; later `mcpctl serve` commands for the same sources relay to it
        #[arg(long, conflicts_with_all = ["http", "stop", "no_daemon"])]
        daemon: bool,
        /// End the background gateway `--daemon` started
        #[arg(long, conflicts_with_all = ["http", "no_daemon"])]
        stop: bool,
        /// Start this command's own servers even when a background gateway runs
        #[arg(long)]
        no_daemon: bool,
        /// The background gateway's own role (started by --daemon)
        #[arg(long, hide = true, conflicts_with_all = ["http", "daemon", "stop"])]
        in_background: bool,
        /// Tool names: `model` (mcp_SERVER_TOOL, fit for every model provider), `plain` (SERVER__TOOL, prompts, resources and templates alike) or `keep` (every server's own names for tools, prompts, resources and templates, results and errors passed on as they came; refused when two servers share a name)
        #[arg(long, value_enum, value_name = "NAMES", default_value_t = Names::Model)]
        names: Names,
    },

    /// Run the built-in demo MCP server on stdin/stdout (the default server)
    DemoServer,

    /// Print the completion script for SHELL on stdout (e.g. `mcpctl completions bash > ~/.local/share/bash-completion/completions/mcpctl`)
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },

    /// The words that complete the end of LINE, one per line: what the
    /// completion scripts ask for server ids, tools, prompts and resources
    #[command(name = "__complete", hide = true)]
    DynamicComplete {
        /// The shell asking
        #[arg(long, value_enum)]
        shell: DynamicShell,
        /// The command line up to the cursor, as one word
        #[arg(last = true, value_name = "LINE")]
        line: Vec<String>,
    },

    /// Print the man page (roff) on stdout, or write mcpctl.1 and one page per command to --out DIR
    Man {
        /// Write `mcpctl.1` and `mcpctl-COMMAND.1` for every command into DIR
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

/// The heading global options are listed under in every `--help`.
pub(crate) const GLOBAL_HEADING: &str = "Global options";

/// The commands that read servers from the sources (`--config`,
/// `--project`, `--no-project`, `--no-host-configs` change what they see).
const READS_SOURCES: &[&str] = &[
    "servers",
    "sources",
    "tools",
    "call",
    "resources",
    "read",
    "skills",
    "skill",
    "prompts",
    "prompt",
    "complete",
    "remove",
    "enable",
    "disable",
    "retry",
    "watch",
    "logs",
    "login",
    "logout",
    "trust",
    "untrust",
    "ui",
    "serve",
];

/// Whether the global flag `id` changes what the command `command` does
/// (see `main::run` for who reads which). A flag that does nothing for a
/// command is still accepted there, so a line that puts it before any
/// command keeps working, but that command's `--help`, man page and
/// completions leave it out.
fn uses_global(command: &str, id: &str) -> bool {
    match id {
        "configs" | "no_host_configs" => READS_SOURCES.contains(&command),
        // `import` reads the chosen application's project files too.
        "project" | "no_project" => READS_SOURCES.contains(&command) || command == "import",
        "preset" => matches!(command, "call" | "serve"),
        // The settings page and the demo server print no document; the
        // generators print a script or a page.
        "json" => !matches!(
            command,
            "ui" | "serve" | "demo-server" | "completions" | "man"
        ),
        "verbose" => !matches!(command, "completions" | "man"),
        "timeout" => CONNECTS.contains(&command) || matches!(command, "add" | "login"),
        // What servers may ask back is answered only for a person's run
        // (the settings page's included).
        "roots" => CONNECTS.contains(&command) && !matches!(command, "trust" | "serve"),
        _ => true,
    }
}

/// The commands that connect servers, whose waits `--timeout` bounds.
const CONNECTS: &[&str] = &[
    "servers",
    "tools",
    "call",
    "resources",
    "read",
    "skills",
    "skill",
    "prompts",
    "prompt",
    "complete",
    "retry",
    "watch",
    "logs",
    "trust",
    "ui",
    "serve",
];

/// One example per command, shown at the end of its `--help` and man page.
const EXAMPLES: &[(&str, &str)] = &[
    ("servers", "mcpctl servers --timeout 5"),
    ("sources", "mcpctl sources --no-host-configs"),
    ("import", "mcpctl import claude-code"),
    ("tools", "mcpctl tools demo echo --schema"),
    ("call", "mcpctl call demo echo text='hello there'"),
    ("resources", "mcpctl resources demo"),
    ("skills", "mcpctl skills demo"),
    ("skill", "mcpctl skill docs skill://docs/review/SKILL.md"),
    ("read", "mcpctl read demo demo://about"),
    ("prompts", "mcpctl prompts demo"),
    ("prompt", "mcpctl prompt demo try_tool tool=echo"),
    (
        "complete",
        "mcpctl complete demo 'demo://greeting/{name}' name A",
    ),
    (
        "add",
        "mcpctl add everything -- npx -y @modelcontextprotocol/server-everything",
    ),
    ("remove", "mcpctl remove everything"),
    ("enable", "mcpctl enable everything"),
    ("disable", "mcpctl disable everything"),
    ("retry", "mcpctl retry everything"),
    ("watch", "mcpctl watch --follow"),
    ("logs", "mcpctl logs everything --level info --follow"),
    ("login", "mcpctl login linear"),
    ("logout", "mcpctl logout linear"),
    ("trust", "mcpctl trust project-db"),
    ("untrust", "mcpctl untrust project-db"),
    ("ui", "mcpctl ui --open"),
    ("serve", "mcpctl serve --http --port 8931"),
    ("demo-server", "mcpctl demo-server < requests.jsonl"),
    ("completions", "mcpctl completions zsh > ~/.zfunc/_mcpctl"),
    ("man", "mcpctl man --out ~/.local/share/man/man1"),
];

/// `command`'s example, as the end of its help.
fn example(command: &str) -> Option<String> {
    EXAMPLES
        .iter()
        .find(|(name, _)| *name == command)
        .map(|(_, example)| format!("Example:\n  {example}"))
}

/// The help of a global flag that means something of its own for
/// `command` (`--timeout` is what `add` stores, and how long `login` waits
/// for the browser); `None` for the flag's own help.
fn own_help(command: &str, id: &str) -> Option<&'static str> {
    match (command, id) {
        ("add", "timeout") => Some(
            "How long the server may take to start, in seconds: stored as its `timeout` [default: 10]",
        ),
        ("login", "timeout") => {
            Some("How long to wait for the browser to come back, in seconds [default: 300]")
        }
        _ => None,
    }
}

/// The whole command line as clap parses it, with each command's unused
/// global flags hidden from its `--help`. Such a flag is still accepted
/// there (it changes nothing), so a line that puts it anywhere keeps
/// working.
pub(crate) fn command() -> clap::Command {
    per_command_globals(Shape::Parse)
}

/// The command line as the man pages and completion scripts describe it:
/// each command with only the global flags it uses. (Completion scripts
/// offer hidden flags too, so [`command`]'s hiding is not enough there.)
pub(crate) fn documented_command() -> clap::Command {
    per_command_globals(Shape::Docs)
}

/// What [`per_command_globals`] builds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Globals stay global; a command that ignores one gets a hidden copy
    /// (clap keeps a command's own argument of a global's id instead of
    /// propagating the global over it).
    Parse,
    /// Globals are the top level's own; a command that uses one gets a
    /// visible copy, a command that ignores one has none.
    Docs,
}

fn per_command_globals(shape: Shape) -> clap::Command {
    let mut top = Cli::command();
    let globals: Vec<clap::Arg> = top
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .cloned()
        .collect();
    if shape == Shape::Docs {
        for arg in &globals {
            top = top.mut_arg(arg.get_id(), |arg| arg.global(false));
        }
    }
    let names: Vec<String> = top
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .collect();
    names.iter().fold(top, |top, name| {
        top.mut_subcommand(name, |sub| {
            let sub = match example(name) {
                Some(example) => sub.after_help(example),
                None => sub,
            };
            globals.iter().fold(sub, |sub, arg| {
                let id = arg.get_id().as_str();
                let help = own_help(name, id);
                match (shape, uses_global(name, id)) {
                    (Shape::Parse, false) => sub.arg(arg.clone().hide(true)),
                    // A copy of the same id and type, so the value still
                    // reaches the global field, with this command's words.
                    (Shape::Parse, true) => match help {
                        Some(help) => sub.arg(arg.clone().help(help)),
                        None => sub,
                    },
                    (Shape::Docs, true) => {
                        let arg = arg.clone().global(false);
                        sub.arg(match help {
                            Some(help) => arg.help(help),
                            None => arg,
                        })
                    }
                    (Shape::Docs, false) => sub,
                }
            })
        })
    })
}

/// `mcpctl ui`.
#[derive(Debug, Args)]
pub(crate) struct UiArgs {
    /// Listen on this port of 127.0.0.1 [default: a free one]
    #[arg(long, value_name = "N")]
    pub(crate) port: Option<u16>,

    /// Also open the page in the system's browser
    #[arg(long)]
    pub(crate) open: bool,
}

/// `mcpctl add`.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("target").required(true).args(["url", "command"])),
    override_usage = "mcpctl add [OPTIONS] NAME -- COMMAND [ARGS]...\n       \
                      mcpctl add [OPTIONS] NAME --url URL [--header K=V]... [--bearer-env VAR]"
)]
pub(crate) struct AddArgs {
    /// The server's id: its key in the store
    pub(crate) name: String,

    /// A Streamable HTTP endpoint (http or https; legacy SSE is detected)
    #[arg(long, value_name = "URL", conflicts_with_all = ["command", "env", "cwd"])]
    pub(crate) url: Option<String>,

    /// An HTTP header, stored as a write-only secret; repeatable
    #[arg(long = "header", value_name = "K=V", requires = "url")]
    pub(crate) headers: Vec<String>,

    /// Send `Authorization: Bearer $VAR`, read from the environment when connecting
    #[arg(long, value_name = "VAR", requires = "url")]
    pub(crate) bearer_env: Option<String>,

    /// OAuth: a pre-registered client id (without one, a client ID metadata
    /// document or dynamic registration is used)
    #[arg(long, value_name = "ID", requires = "url")]
    pub(crate) oauth_client_id: Option<String>,

    /// OAuth: the environment variable that holds the client's secret (the
    /// secret itself is never stored)
    #[arg(long, value_name = "VAR", requires = "oauth_client_id")]
    pub(crate) oauth_client_secret_env: Option<String>,

    /// OAuth: a scope to ask for; repeatable
    #[arg(long = "oauth-scope", value_name = "SCOPE", requires = "url")]
    pub(crate) oauth_scopes: Vec<String>,

    /// OAuth: this client's metadata document URL
    #[arg(long, value_name = "URL", requires = "url")]
    pub(crate) oauth_client_metadata_url: Option<String>,

    /// OAuth: the loopback port `mcpctl login` listens on for the redirect
    /// (for a client registered with a fixed redirect URI)
    #[arg(long, value_name = "PORT", requires = "url")]
    pub(crate) oauth_redirect_port: Option<u16>,

    /// OAuth: the grant; client_credentials (machine to machine) needs
    /// --oauth-client-id and --oauth-client-secret-env and no login;
    /// jwt_bearer (a workload's identity) needs --oauth-assertion-file or
    /// --oauth-assertion-env [default: authorization_code]
    #[arg(long, value_enum, value_name = "GRANT", requires = "url")]
    pub(crate) oauth_grant: Option<OAuthGrantArg>,

    /// OAuth jwt_bearer: the file (an absolute path) holding the workload's
    /// JWT, read afresh for each token request
    #[arg(
        long,
        value_name = "PATH",
        requires = "url",
        conflicts_with = "oauth_assertion_env"
    )]
    pub(crate) oauth_assertion_file: Option<PathBuf>,

    /// OAuth jwt_bearer: the environment variable holding the workload's JWT
    #[arg(long, value_name = "VAR", requires = "url")]
    pub(crate) oauth_assertion_env: Option<String>,

    /// An environment variable for the command, stored as a write-only secret; repeatable
    #[arg(long = "env", value_name = "K=V")]
    pub(crate) env: Vec<String>,

    /// The command's working directory [default: where the host starts]
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,

    /// The name to show [default: NAME]
    #[arg(long, value_name = "TEXT")]
    pub(crate) display_name: Option<String>,

    /// The protocol era to speak: auto detects it when connecting; modern
    /// pins the stateless 2026-07-28 era (no initialize, server/discover);
    /// legacy pins the initialize handshake era (2024-11-05 to 2025-11-25)
    /// [default: auto]
    #[arg(long, value_enum, value_name = "ERA")]
    pub(crate) era: Option<EraArg>,

    /// Save the server disabled
    #[arg(long)]
    pub(crate) disabled: bool,

    /// The command and its arguments, after `--` (run directly, without a shell)
    #[arg(last = true, value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
}

/// `--oauth-grant`: the config's `oauth.grant` values, spelled as in files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub(crate) enum OAuthGrantArg {
    /// A person logs in once in a browser (`mcpctl login`).
    AuthorizationCode,
    /// Machine to machine: the client's own secret, no login.
    ClientCredentials,
    /// A workload's identity: a JWT its platform issued, no login.
    JwtBearer,
}

/// `--era`: the config's `era` values, spelled as in files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum EraArg {
    /// Detect the server's era when connecting.
    Auto,
    /// Only the stateless 2026-07-28 era.
    Modern,
    /// Only the initialize handshake era.
    Legacy,
}

/// A host's id, as `mcp_config::Host::id` spells it.
fn parse_host(id: &str) -> Result<mcp_config::Host, String> {
    mcp_config::Host::from_id(id).ok_or_else(|| {
        let ids: Vec<&str> = mcp_config::Host::ALL.iter().map(|host| host.id()).collect();
        format!("unknown application `{id}`; one of: {}", ids.join(", "))
    })
}

/// What `mcpctl serve` calls the tools it serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Names {
    /// `mcp_SERVER_TOOL`: the names a model sees.
    Model,
    /// `SERVER__TOOL`: each server's id and its own tool name (prompts, resources and templates alike).
    Plain,
    /// Each server's own names for tools, prompts, resources and templates, unchanged (a transparent gateway); two servers sharing a name are refused.
    Keep,
}

/// The shells whose scripts ask `mcpctl __complete` for dynamic words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum DynamicShell {
    /// bash: the candidates replace the current word after its last `:`
    /// or `=` (bash splits words there).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
}

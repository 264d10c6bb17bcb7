//! Where `mcpctl` finds servers: other applications' files, `--config` files, the store, or the embedded default.
//!
//! Sources, in precedence order for a server id defined more than once
//! (mcp-config's discovery rules: project over user, then the first source
//! of a level):
//!
//! 1. the project's files (`--project DIR`, default the current directory;
//!    `--no-project` skips them): every host's project-level file
//!    (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`, ...), in the
//!    order of `mcp_config::Host::ALL`; with host files off, only
//!    `.mcp.json`;
//! 2. every `--config FILE`, in the order given (any supported format);
//! 3. the store, `mcp.json` in the data dir ([`store_location`]:
//!    `$MCPCTL_DATA_DIR`, else `$LOOP_DATA_DIR`, else the platform's data
//!    directory, `$XDG_DATA_HOME/mcpctl` or `~/.local/share/mcpctl` on
//!    Linux), which `add`, `remove`, `enable`, `disable` and `import` edit.
//!    While the old `~/.loop/mcp.json` is the only store there is, it is
//!    the store, read and written where it is, with a note on stderr
//!    saying where to move it;
//! 4. every host's user-level file (`~/.claude.json`, Claude Desktop's
//!    `claude_desktop_config.json`, `~/.cursor/mcp.json`, ...), in the order
//!    of `Host::ALL` (mcp-config's `HostSources` knows where each is on this
//!    OS).
//!
//! `--config` files and the store are what the person wrote for mcpctl, so
//! at user level they win over other applications' files; a project's files
//! still win over them, as a project overrides the user everywhere.
//! `--no-host-configs`, or `MCPCTL_NO_HOST_CONFIGS=1` in the environment,
//! turns the other applications' files off (the project's `.mcp.json` is
//! still read).
//!
//! The embedded default: when no source has a file at all, the one server is
//! `demo`, which runs this same executable as `mcpctl demo-server`.

use std::path::PathBuf;

use mcp_config::{
    ConfigLevel, ConfigSource, Discovery, DiscoveryOptions, FileSource, Format, HostDirs,
    HostSources, HttpConfig, Os, ParsedDocument, ProcessEnv, ServerConfig, SourceError, SourceMeta,
    StdioConfig, StoreLocation, TransportConfig,
};

use crate::exit::CliError;

/// The id of the embedded default server.
pub(crate) const DEMO_ID: &str = "demo";

/// The global options that choose sources.
#[derive(Clone, Debug, Default)]
pub(crate) struct SourceOptions {
    /// `--config FILE`, repeatable.
    pub(crate) configs: Vec<PathBuf>,
    /// `--project DIR`.
    pub(crate) project: Option<PathBuf>,
    /// `--no-project`.
    pub(crate) no_project: bool,
    /// Whether this command may ask on a terminal before it starts a
    /// project server nobody approved, or needs an `${input:ID}` answer.
    pub(crate) ask: bool,
    /// `--no-host-configs` (or `MCPCTL_NO_HOST_CONFIGS=1`).
    pub(crate) no_host_configs: bool,
    /// `--stdio`, `--url` and their options: servers from the command line.
    pub(crate) adhoc: crate::cli::AdHocArgs,
    /// `--timeout`: every server's start and request deadline for this
    /// run, over what its configuration says.
    pub(crate) timeout: Option<std::time::Duration>,
    /// How servers' questions (elicitation, sampling) and `roots/list` are
    /// answered; `None` declares none of them, so servers ask nothing.
    pub(crate) asks: Option<crate::asks::AskOptions>,
    /// `serve`: the gateway's clients answer servers' questions
    /// (elicitation, sampling, roots) instead, through this handler.
    pub(crate) gateway_asks: Option<std::sync::Arc<mcp_toolbridge::GatewayAsks>>,
}

/// The sources this run reads, ready to discover.
#[derive(Debug)]
pub(crate) struct Sources {
    /// Discovery over every source.
    pub(crate) discovery: Discovery,
}

/// The variable that moves mcpctl's data dir (the store, approvals, saved
/// inputs and OAuth tokens).
pub(crate) const DATA_DIR_ENV: &str = "MCPCTL_DATA_DIR";

/// Where mcpctl's data dir is: [`DATA_DIR_ENV`], `LOOP_DATA_DIR`, else
/// `mcpctl` in the platform's data directory (mcp-config's rules).
pub(crate) fn store_location() -> StoreLocation {
    StoreLocation::new(DATA_DIR_ENV, "mcpctl")
}

/// The store file, or why there is none. A store still in the old place
/// (`~/.loop/mcp.json`, with no other) stays the store where it is, so
/// nothing in it is hidden or moved; the first call says so on stderr.
pub(crate) fn store_path() -> Result<PathBuf, CliError> {
    let location = store_location();
    if let Some(legacy) = location.legacy_store_path(&ProcessEnv) {
        static NOTED: std::sync::Once = std::sync::Once::new();
        NOTED.call_once(|| {
            let to = location.data_dir(&ProcessEnv).map_or_else(
                |_| format!("${DATA_DIR_ENV}"),
                |dir| format!("{}{}", dir.display(), std::path::MAIN_SEPARATOR),
            );
            eprintln!(
                "mcpctl: note: servers read from {} (the old location); move it, and the files beside it, to {}",
                legacy.display(),
                to
            );
        });
        return Ok(legacy);
    }
    Ok(location.store_path(&ProcessEnv)?)
}

/// The project directory, absolute (hosts key projects by their absolute
/// path); `None` with `--no-project`.
pub(crate) fn project_dir(options: &SourceOptions) -> Result<Option<PathBuf>, CliError> {
    if options.no_project {
        return Ok(None);
    }
    let dir = match &options.project {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(CliError::usage(format!(
                    "--project {}: no such directory",
                    dir.display()
                )));
            }
            std::path::absolute(dir).unwrap_or_else(|_| dir.clone())
        }
        None => std::env::current_dir().map_err(|e| {
            CliError::usage(format!("cannot read the current directory: {e}"))
                .hint("pass --project DIR or --no-project")
        })?,
    };
    Ok(Some(dir))
}

/// Every host's files for this user and project; `None` when there is no
/// home directory to find them under.
pub(crate) fn host_sources(project: Option<&PathBuf>) -> Option<HostSources> {
    let Some(dirs) = HostDirs::from_env(&ProcessEnv, Os::current()) else {
        tracing::warn!("no home directory: other applications' MCP files are not read");
        return None;
    };
    let hosts = HostSources::new(dirs);
    Some(match project {
        Some(project) => hosts.project(project.clone()),
        None => hosts,
    })
}

/// Builds discovery over the sources `options` name. A `--config` file that
/// does not exist is a usage error (a missing store, project or host file is
/// simply empty).
pub(crate) fn gather(options: &SourceOptions) -> Result<Sources, CliError> {
    for config in &options.configs {
        if !config.is_file() {
            return Err(CliError::usage(format!(
                "--config {}: no such file",
                config.display()
            )));
        }
    }
    let project = project_dir(options)?;
    // Listings work without a store location; only the store commands need one.
    let store = match store_path() {
        Ok(path) => Some(path),
        Err(error) => {
            tracing::warn!("no store: {}", error.message);
            None
        }
    };
    let hosts = if options.no_host_configs {
        None
    } else {
        host_sources(project.as_ref())
    };

    // In precedence order (see the module documentation).
    let mut files: Vec<FileSource> = Vec::new();
    match &hosts {
        Some(hosts) => {
            let context = hosts.context();
            files.extend(hosts.project_files().iter().map(|f| f.source(&context)));
        }
        None => files.extend(project.iter().map(|dir| {
            FileSource::new(
                dir.join(DiscoveryOptions::default().project_file_name),
                ConfigLevel::Project,
                "project",
            )
        })),
    }
    for config in &options.configs {
        // Absolute, so listings say exactly which file a server came from.
        let path = std::path::absolute(config).unwrap_or_else(|_| config.clone());
        files.push(FileSource::new(path, ConfigLevel::User, "--config"));
    }
    if let Some(store) = &store {
        files.push(
            FileSource::new(store.clone(), ConfigLevel::User, "store").with_format(Format::StoreV1),
        );
    }
    if let Some(hosts) = &hosts {
        let context = hosts.context();
        files.extend(hosts.user_files().iter().map(|f| f.source(&context)));
    }

    let adhoc = adhoc_servers(&options.adhoc)?;
    let embedded_default = adhoc.is_empty() && !files.iter().any(ConfigSource::exists);
    let mut discovery_options = DiscoveryOptions::default();
    discovery_options.project_configs = !options.no_project;
    let mut discovery = Discovery::new(discovery_options);
    if !adhoc.is_empty() {
        // What the person typed for this run wins among the user's sources.
        discovery = discovery.source(CommandLine(adhoc));
    }
    for file in files {
        discovery = discovery.source(file);
    }
    if embedded_default {
        discovery = discovery.source(EmbeddedDefault);
    }
    Ok(Sources { discovery })
}

/// The embedded default server: this executable as `mcpctl demo-server`.
pub(crate) fn demo_config() -> ServerConfig {
    // `current_exe` fails only on exotic platforms; `mcpctl` on PATH is the
    // best guess there.
    let command = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.into_os_string().into_string().ok())
        .unwrap_or_else(|| "mcpctl".to_owned());
    let mut stdio = StdioConfig::new(command);
    stdio.args = vec!["demo-server".to_owned()];
    let mut config = ServerConfig::new(DEMO_ID, TransportConfig::Stdio(stdio));
    config.name = "Demo".to_owned();
    config.description = Some("mcpctl's built-in demo server".to_owned());
    config
}

/// The source of the embedded default.
#[derive(Debug)]
struct EmbeddedDefault;

impl ConfigSource for EmbeddedDefault {
    fn meta(&self) -> SourceMeta {
        SourceMeta::new(ConfigLevel::Host, None, "built-in")
    }

    fn load(&self) -> Result<ParsedDocument, SourceError> {
        Ok(ParsedDocument::from_servers([demo_config()]))
    }
}

/// The servers `--stdio` and `--url` describe: `stdio` (`stdio-2`, ...)
/// and `url`. A `--stdio` command line is split as a POSIX shell would
/// (quotes, backslashes) and run directly, without a shell.
pub(crate) fn adhoc_servers(args: &crate::cli::AdHocArgs) -> Result<Vec<ServerConfig>, CliError> {
    let mut servers = Vec::new();
    for (index, line) in args.stdio.iter().enumerate() {
        let words = shlex::split(line).ok_or_else(|| {
            CliError::usage(format!(
                "--stdio {}: an unclosed quote or a trailing backslash",
                crate::output::line(line)
            ))
            .code("invalid_arguments")
        })?;
        let Some((command, rest)) = words.split_first() else {
            return Err(CliError::usage("--stdio needs a command").code("invalid_arguments"));
        };
        let mut stdio = StdioConfig::new(command.clone());
        stdio.args = rest.to_vec();
        let id = match index {
            0 => "stdio".to_owned(),
            n => format!("stdio-{}", n + 1),
        };
        servers.push(ServerConfig::new(id, TransportConfig::Stdio(stdio)));
    }
    if let Some(url) = &args.url {
        let mut http = HttpConfig::new(url.clone());
        for header in &args.headers {
            let (key, value) = header
                .split_once(':')
                .or_else(|| header.split_once('='))
                .filter(|(key, _)| !key.trim().is_empty())
                .ok_or_else(|| {
                    // Never the value: it may be a credential.
                    CliError::usage("--header takes 'NAME: VALUE'; one has no `:` or no name")
                        .code("invalid_arguments")
                })?;
            http.headers
                .push(mcp_config::SecretEntry::new(key.trim(), value.trim()));
        }
        http.bearer_token_env = args.bearer_env.clone();
        servers.push(ServerConfig::new("url", TransportConfig::Http(http)));
    }
    Ok(servers)
}

/// The ids `adhoc_servers` gives the servers of `args`, in order.
pub(crate) fn adhoc_ids(args: &crate::cli::AdHocArgs) -> Vec<String> {
    let mut ids: Vec<String> = (0..args.stdio.len())
        .map(|index| match index {
            0 => "stdio".to_owned(),
            n => format!("stdio-{}", n + 1),
        })
        .collect();
    if args.url.is_some() {
        ids.push("url".to_owned());
    }
    ids
}

/// The flag that gives the command-line server `id` (`--stdio 'CMD ARG'`
/// or `--url URL`), quoted for a shell, so that a hint can name a command
/// that reaches it again; `None` for a server from a file. Headers are
/// left out: they may hold credentials.
pub(crate) fn adhoc_flags(args: &crate::cli::AdHocArgs, id: &str) -> Option<String> {
    let index = adhoc_ids(args).iter().position(|known| known == id)?;
    let word = |w: &str| crate::output::line(&crate::output::shell_word(w)).into_owned();
    match args.stdio.get(index) {
        Some(command) => Some(format!("--stdio {}", word(command))),
        None => args
            .url
            .as_deref()
            .map(|url| format!("--url {}", word(url))),
    }
}

/// How a message names server `id` from `source`: `server `id`` for one
/// from a file, `the `--stdio` server` (or `--url`) for one typed on the
/// command line, which the person knows by its flag rather than its id.
pub(crate) fn server_name(id: &str, source: Option<&SourceMeta>) -> String {
    if source.is_none_or(|s| s.provider_label != COMMAND_LINE) {
        return format!("server `{id}`");
    }
    let flag = if id.starts_with("url") {
        "--url"
    } else {
        "--stdio"
    };
    if id == "stdio" || id == "url" {
        format!("the `{flag}` server")
    } else {
        format!("the `{flag}` server `{id}`")
    }
}

/// The display name of the servers given on the command line.
pub(crate) const COMMAND_LINE: &str = "command line";

/// The source of the servers given on the command line.
#[derive(Debug)]
struct CommandLine(Vec<ServerConfig>);

impl ConfigSource for CommandLine {
    fn meta(&self) -> SourceMeta {
        SourceMeta::new(ConfigLevel::User, None, COMMAND_LINE)
    }

    fn load(&self) -> Result<ParsedDocument, SourceError> {
        Ok(ParsedDocument::from_servers(self.0.clone()))
    }
}

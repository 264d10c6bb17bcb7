//! `mcpctl servers` (and the rows `watch` and `retry` print): every configured server with its status.
//!
//! `--json` prints an array with one object per server, in source order:
//!
//! ```json
//! {"id": "demo", "name": "Demo", "status": "ready", "transport": "stdio",
//!  "tools": 5, "enabled": true,
//!  "source": {"level": "host", "label": "built-in", "host": null, "path": null},
//!  "env": [], "headers": [], "also_in": [], "shadows": [], "shadowed_by": null,
//!  "error": null}
//! ```
//!
//! `env` and `headers` are the names of the env variables and headers the
//! configuration sets, never their values. `source.label` is the application whose file the server is in
//! (`Claude Code`, `Cursor`, ...; `host` its id) or mcpctl's own source
//! (`store`, `--config`, `project`, `built-in`). `also_in` lists the other
//! sources holding an identical definition (the same server configured in
//! several applications, shown once). A definition that loses to a
//! different one of the same id is its own row, `"status": "shadowed"`,
//! with `shadowed_by` naming the source used instead; the winning row's
//! `shadows` lists the sources it shadows.
//!
//! `error` is `null` or `{"code", "message", "config_key", "cause", "hint"}`
//! with the manager's stable code; `hint` says what to change in the words
//! the person typed (the flag of a `--stdio` or `--url` server, else the
//! key and its file; `--timeout` and the `timeout` key for a timeout), or
//! is `null`; `cause` is `null` or the last lines a stdio
//! server wrote to stderr as it failed (escaped, bounded, one per line),
//! which the table shows under the problem's line. A configuration file that cannot be read at all
//! is one row with `"id": null`. When a configured server failed
//! (`error`, an unusable entry included; untrusted, disabled and shadowed
//! ones are not failures) the exit status is the one that failure has in
//! `call`: 2 for a configuration problem (`missing_command`,
//! `missing_env`, an unreadable file, ...), 3 for a connection failure,
//! 3 when there are both; 0 otherwise or with `--allow-failures`.

use mcp_config::{DiscoveryEntry, ServerConfig, SourceMeta, TransportConfig};
use mcp_manager::{ErrorCode, ServerError, ServerInfo};
use serde::Serialize;

use crate::exit::{CliError, Exit};
use crate::output::{Output, Paint, Table, line};
use crate::runtime::{Runtime, Select};
use crate::sources::SourceOptions;

/// One server's row.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ServerRow {
    /// The id; `None` for a source that could not be read at all.
    pub(crate) id: Option<String>,
    /// The display name.
    pub(crate) name: Option<String>,
    /// `disabled`, `queued`, `connecting`, `refreshing`, `ready`, `idle`,
    /// `disconnected` or `error`.
    pub(crate) status: &'static str,
    /// `stdio`, `http` or `sse`; `None` when the entry could not be read.
    pub(crate) transport: Option<&'static str>,
    /// How many tools the server lists.
    pub(crate) tools: usize,
    /// Whether the configuration is enabled.
    pub(crate) enabled: bool,
    /// Where the configuration came from.
    pub(crate) source: Option<SourceJson>,
    /// Why the server is not usable.
    pub(crate) error: Option<ErrorJson>,
    /// `legacy` (the handshake era) or `modern` (2026-07-28), once connected.
    pub(crate) era: Option<&'static str>,
    /// The protocol version spoken, once connected.
    pub(crate) protocol: Option<&'static str>,
    /// The names of the env variables a stdio server gets (set or passed
    /// through); never their values.
    pub(crate) env: Vec<String>,
    /// The names of the headers an HTTP server sends (set, read from the
    /// environment, or the bearer token's `Authorization`); never values.
    pub(crate) headers: Vec<String>,
    /// Other sources with an identical definition.
    pub(crate) also_in: Vec<SourceJson>,
    /// The sources whose different definitions of this id this one shadows.
    pub(crate) shadows: Vec<SourceJson>,
    /// For a shadowed definition: the source whose definition is used.
    pub(crate) shadowed_by: Option<SourceJson>,
}

/// A row's `source`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SourceJson {
    /// `user`, `project` or `host`.
    pub(crate) level: &'static str,
    /// The application (`Claude Code`, `Cursor`, ...), or `store`,
    /// `--config`, `project` or `built-in`.
    pub(crate) label: String,
    /// The application's id (`claude-code`, ...); `None` for mcpctl's own
    /// sources.
    pub(crate) host: Option<&'static str>,
    /// The file, if the source is one.
    pub(crate) path: Option<String>,
}

/// A row's `error`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ErrorJson {
    /// The stable code, e.g. `missing_command`.
    pub(crate) code: &'static str,
    /// What is wrong, for a person; never a secret.
    pub(crate) message: String,
    /// The configuration field to change, e.g. `transport.command`.
    pub(crate) config_key: String,
    /// What the server said as it failed (the last lines of a stdio
    /// server's stderr, escaped, one per line), or `null`.
    pub(crate) cause: Option<String>,
    /// The first line a stdio server wrote to stdout that is not JSON-RPC
    /// (escaped), when it failed before answering, or `null`.
    pub(crate) stray_stdout: Option<String>,
    /// What to change, in the words the person typed (the flag of a
    /// server given on the command line, else the key and its file), or
    /// `null`.
    pub(crate) hint: Option<String>,
}

impl ErrorJson {
    /// `error` of a server from `source`, with what to change
    /// ([`crate::runtime::fix_hint`]).
    pub(crate) fn new(error: &ServerError, source: Option<&SourceMeta>) -> Self {
        ErrorJson {
            code: error.code.as_str(),
            message: error.message.clone(),
            config_key: error.config_key.clone(),
            cause: error.cause.clone(),
            stray_stdout: error.stray_stdout.clone(),
            hint: crate::runtime::fix_hint(error, source),
        }
    }
}

impl From<&SourceMeta> for SourceJson {
    fn from(source: &SourceMeta) -> Self {
        SourceJson {
            level: source.level.as_str(),
            label: source.provider_label.clone(),
            host: source.host.map(|host| host.id()),
            path: source.path.as_ref().map(|p| p.display().to_string()),
        }
    }
}

/// `mcpctl servers`: exit 2 or 3 when a configured server failed (see
/// [`Failures`]), unless `allow_failures`.
pub(crate) async fn run(
    options: &SourceOptions,
    allow_failures: bool,
    output: &Output,
) -> Result<Exit, CliError> {
    let runtime = Runtime::start(options, Select::All).await?;
    runtime.settle(output).await;
    let rows = with_shadowed(rows(&runtime), &runtime);
    let warnings = runtime.report.warnings.clone();
    runtime.close().await;
    print(&rows, output)?;
    // What the files hold and this client does not use goes to stderr,
    // each naming its file and key, so that nothing is dropped in silence.
    for warning in &warnings {
        let place = warning.source.path.as_ref().map_or_else(
            || warning.source.provider_label.clone(),
            |p| p.display().to_string(),
        );
        let json = crate::sources_cmd::WarningJson::from(&warning.diagnostic);
        eprintln!(
            "mcpctl: warning: {}: {} [{}]",
            crate::output::line(&place),
            crate::output::line(&crate::sources_cmd::located(&json)),
            json.code
        );
    }
    let mut failures = Failures::default();
    for row in rows.iter().filter(|row| row.status == "error") {
        failures.add(row.error.as_ref().map(|error| error.code));
    }
    Ok(failures.exit(allow_failures))
}

/// The configured servers that failed in a listing, counted by the exit
/// status each failure has on its own (the status `call`, `tools SERVER`
/// and the other one-server commands exit with for it): a configuration
/// problem (`missing_command`, `missing_env`, ...) is 2, anything else 3.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Failures {
    /// Failures the person fixes in the configuration (exit 2).
    config: usize,
    /// Failures of the connection or the server (exit 3).
    connection: usize,
}

impl Failures {
    /// Counts one failed server by its stable code (`None` when unknown,
    /// counted as a connection failure).
    pub(crate) fn add(&mut self, code: Option<&str>) {
        let config = code
            .and_then(ErrorCode::parse)
            .is_some_and(ErrorCode::is_config_error);
        if config {
            self.config += 1;
        } else {
            self.connection += 1;
        }
    }

    /// The exit status of the listing: 0 when nothing failed or with
    /// `allow_failures`, else the worse of the failures' own statuses
    /// (3 over 2), with a note on stderr.
    pub(crate) fn exit(self, allow_failures: bool) -> Exit {
        let failed = self.config + self.connection;
        if failed == 0 || allow_failures {
            return Exit::Success;
        }
        let exit = if self.connection > 0 {
            Exit::Connection
        } else {
            Exit::Usage
        };
        eprintln!(
            "mcpctl: {failed} configured {} failed (exit {}; --allow-failures exits 0)",
            if failed == 1 { "server" } else { "servers" },
            exit.code()
        );
        exit
    }
}

/// The rows of every entry, in source order.
pub(crate) fn rows(runtime: &Runtime) -> Vec<ServerRow> {
    let servers = runtime.manager.servers();
    let mut whole_source_errors = runtime.config_errors.iter().filter(|e| e.server.is_none());
    let mut rows = Vec::new();
    for entry in &runtime.report.entries {
        match entry {
            DiscoveryEntry::Server(server) | DiscoveryEntry::Disabled(server) => {
                if let Some(info) = servers.iter().find(|s| s.id == server.config.id) {
                    rows.push(row(info, &server.source));
                }
            }
            DiscoveryEntry::Error {
                server: Some(id),
                source,
                ..
            } => {
                if let Some(error) = runtime.config_error(id) {
                    rows.push(config_error_row(Some(id.clone()), source, error));
                }
            }
            DiscoveryEntry::Error {
                server: None,
                source,
                ..
            } => {
                if let Some(failure) = whole_source_errors.next() {
                    rows.push(config_error_row(None, source, &failure.error));
                }
            }
            _ => {}
        }
    }
    rows
}

/// `rows`, with each shadowed definition as a row of its own after the row
/// that shadows it, and every row's env and header names, `also_in` and
/// `shadows` filled in.
pub(crate) fn with_shadowed(rows: Vec<ServerRow>, runtime: &Runtime) -> Vec<ServerRow> {
    let report = &runtime.report;
    let mut listed = Vec::with_capacity(rows.len() + report.shadowed.len());
    for mut row in rows {
        let id = row.id.clone();
        if let Some(server) = report
            .entries
            .iter()
            .filter_map(|entry| match entry {
                DiscoveryEntry::Server(server) | DiscoveryEntry::Disabled(server) => Some(server),
                _ => None,
            })
            .find(|server| Some(&server.config.id) == id.as_ref())
        {
            row.also_in = server.also_in.iter().map(SourceJson::from).collect();
            (row.env, row.headers) = names(&server.config);
        } else if let Some(held) = runtime
            .untrusted
            .iter()
            .find(|held| Some(&held.config.id) == id.as_ref())
        {
            // Held back until trusted: what it would run is what a person
            // needs to see to decide.
            row.transport = Some(held.config.transport.kind().as_str());
            row.also_in = held.also_in.iter().map(SourceJson::from).collect();
            (row.env, row.headers) = names(&held.config);
        }
        let shadowed: Vec<&mcp_config::Shadowed> = report
            .shadowed
            .iter()
            .filter(|shadowed| Some(&shadowed.id) == id.as_ref() && id.is_some())
            .collect();
        row.shadows = shadowed.iter().map(|s| s.source().into()).collect();
        listed.push(row);
        for shadowed in shadowed {
            listed.push(shadowed_row(shadowed));
        }
    }
    listed
}

/// The row of a definition that is not used.
fn shadowed_row(shadowed: &mcp_config::Shadowed) -> ServerRow {
    let (name, transport, enabled, (env, headers), also_in) = match &shadowed.entry {
        DiscoveryEntry::Server(server) | DiscoveryEntry::Disabled(server) => (
            Some(server.config.name.clone()),
            Some(server.config.transport.kind().as_str()),
            server.config.enabled,
            names(&server.config),
            server.also_in.iter().map(SourceJson::from).collect(),
        ),
        _ => (None, None, true, (Vec::new(), Vec::new()), Vec::new()),
    };
    ServerRow {
        id: Some(shadowed.id.clone()),
        name,
        status: "shadowed",
        transport,
        tools: 0,
        enabled,
        source: Some(shadowed.source().into()),
        error: None,
        era: None,
        protocol: None,
        env,
        headers,
        also_in,
        shadows: Vec::new(),
        shadowed_by: Some((&shadowed.winner).into()),
    }
}

/// The env variable and header names a configuration sets.
fn names(config: &ServerConfig) -> (Vec<String>, Vec<String>) {
    match &config.transport {
        TransportConfig::Stdio(stdio) => (
            stdio
                .env
                .iter()
                .map(|entry| entry.key.clone())
                .chain(stdio.env_passthrough.iter().cloned())
                .collect(),
            Vec::new(),
        ),
        TransportConfig::Http(http) | TransportConfig::Sse(http) => (
            Vec::new(),
            http.headers
                .iter()
                .map(|entry| entry.key.clone())
                .chain(http.env_headers.iter().map(|h| h.header.clone()))
                .chain(
                    http.bearer_token_env
                        .as_ref()
                        .map(|_| "Authorization".to_owned()),
                )
                .collect(),
        ),
        _ => (Vec::new(), Vec::new()),
    }
}

/// The row of a server the manager knows.
pub(crate) fn row(info: &ServerInfo, source: &SourceMeta) -> ServerRow {
    ServerRow {
        id: Some(info.id.clone()),
        name: Some(info.name.clone()),
        status: info.status.as_str(),
        transport: Some(info.transport.as_str()),
        tools: info.tool_count,
        enabled: info.enabled,
        source: Some(source.into()),
        error: info.status.error().map(|e| ErrorJson::new(e, Some(source))),
        era: info.protocol_version.map(|v| v.era().as_str()),
        protocol: info.protocol_version.map(|v| v.as_str()),
        env: Vec::new(),
        headers: Vec::new(),
        also_in: Vec::new(),
        shadows: Vec::new(),
        shadowed_by: None,
    }
}

fn config_error_row(id: Option<String>, source: &SourceMeta, error: &ServerError) -> ServerRow {
    ServerRow {
        name: id.clone(),
        id,
        // A project server waiting for approval is no broken configuration.
        status: if error.code == mcp_manager::ErrorCode::Untrusted {
            "untrusted"
        } else {
            "error"
        },
        transport: None,
        tools: 0,
        enabled: true,
        source: Some(source.into()),
        error: Some(ErrorJson::new(error, Some(source))),
        era: None,
        protocol: None,
        env: Vec::new(),
        headers: Vec::new(),
        also_in: Vec::new(),
        shadows: Vec::new(),
        shadowed_by: None,
    }
}

/// Prints rows: the JSON array, or a table and, below it, what to change
/// for each failed server.
pub(crate) fn print(rows: &[ServerRow], output: &Output) -> Result<(), CliError> {
    let printed = if output.json {
        output.json(&rows)
    } else {
        output.text(&render(rows, output))
    };
    printed.map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))
}

/// The table for people.
pub(crate) fn render(rows: &[ServerRow], output: &Output) -> String {
    if rows.is_empty() {
        return "no servers are configured; `mcpctl add NAME -- COMMAND` adds one\n".to_owned();
    }
    let mut table = Table::new(&["id", "status", "transport", "protocol", "tools", "source"]);
    for row in rows {
        table.painted_row(vec![
            (label(row), None),
            (row.status.to_owned(), Some(status_paint(row.status))),
            (row.transport.unwrap_or("-").to_owned(), None),
            (row.protocol.unwrap_or("-").to_owned(), None),
            (row.tools.to_string(), None),
            (source_text(row), Some(Paint::Dim)),
        ]);
    }
    let mut text = table.render(output);
    let problems: Vec<String> = rows
        .iter()
        .filter_map(|row| {
            let error = row.error.as_ref()?;
            let mut text = format!(
                "  {}: {} [{}]",
                line(&label(row)),
                line(&error.message),
                output.paint(Paint::Red, error.code)
            );
            let file = row
                .source
                .as_ref()
                .and_then(|s| s.path.as_deref())
                .map_or_else(String::new, |path| format!(" in {path}"));
            if row.id.is_none() {
                // A whole file failed: the key is a position in it.
                if !error.config_key.is_empty() {
                    text.push_str(&format!("; at {}{file}", line(&error.config_key)));
                }
            } else if let Some(hint) = &error.hint {
                text.push_str(&format!("; {hint}"));
            }
            text.push_str(&crate::output::cause_lines(
                error.stray_stdout.as_deref(),
                error.cause.as_deref(),
                "    ",
            ));
            Some(text)
        })
        .collect();
    if !problems.is_empty() {
        text.push_str("\nproblems:\n");
        for line in problems {
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

fn label(row: &ServerRow) -> String {
    row.id.clone().unwrap_or_else(|| "(source)".to_owned())
}

fn source_text(row: &ServerRow) -> String {
    let mut text = match &row.source {
        Some(SourceJson {
            label,
            path: Some(path),
            ..
        }) => format!("{label} ({path})"),
        Some(source) => source.label.clone(),
        None => "-".to_owned(),
    };
    if !row.also_in.is_empty() {
        let labels: Vec<&str> = row.also_in.iter().map(|s| s.label.as_str()).collect();
        text.push_str(&format!(", also in {}", labels.join(", ")));
    }
    if let Some(winner) = &row.shadowed_by {
        text.push_str(&format!(", shadowed by {}", winner.label));
    }
    text
}

/// The colour of a status.
pub(crate) fn status_paint(status: &str) -> Paint {
    match status {
        "ready" => Paint::Green,
        "error" => Paint::Red,
        "disabled" | "disconnected" | "idle" | "shadowed" => Paint::Dim,
        _ => Paint::Yellow,
    }
}

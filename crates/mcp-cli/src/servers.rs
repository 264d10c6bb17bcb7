//! `mcpctl servers` (and the rows `watch` and `retry` print): every configured server with its status.
//!
//! `--json` prints an array with one object per server, in source order:
//!
//! ```json
//! {"id": "demo", "name": "Demo", "status": "ready", "transport": "stdio",
//!  "tools": 5, "enabled": true,
//!  "source": {"level": "host", "label": "built-in", "path": null},
//!  "error": null}
//! ```
//!
//! `error` is `null` or `{"code", "message", "config_key"}` with the
//! manager's stable code. A configuration file that cannot be read at all
//! is one row with `"id": null`. Listing is not failing: the exit status
//! is 0 whatever the servers' states.

use mcp_config::{DiscoveryEntry, SourceMeta};
use mcp_manager::{ServerError, ServerInfo};
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
}

/// A row's `source`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SourceJson {
    /// `user`, `project` or `host`.
    pub(crate) level: &'static str,
    /// `store`, `--config`, `project` or `built-in`.
    pub(crate) label: String,
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
}

impl From<&ServerError> for ErrorJson {
    fn from(error: &ServerError) -> Self {
        ErrorJson {
            code: error.code.as_str(),
            message: error.message.clone(),
            config_key: error.config_key.clone(),
        }
    }
}

impl From<&SourceMeta> for SourceJson {
    fn from(source: &SourceMeta) -> Self {
        SourceJson {
            level: source.level.as_str(),
            label: source.provider_label.clone(),
            path: source.path.as_ref().map(|p| p.display().to_string()),
        }
    }
}

/// `mcpctl servers`.
pub(crate) async fn run(options: &SourceOptions, output: &Output) -> Result<Exit, CliError> {
    let runtime = Runtime::start(options, Select::All).await?;
    runtime.settle().await;
    let rows = rows(&runtime);
    runtime.close().await;
    print(&rows, output)?;
    Ok(Exit::Success)
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
        error: info.status.error().map(ErrorJson::from),
        era: info.protocol_version.map(|v| v.era().as_str()),
        protocol: info.protocol_version.map(|v| v.as_str()),
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
        error: Some(error.into()),
        era: None,
        protocol: None,
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
            if error.config_key.is_empty() {
                // Nothing to point at.
            } else if row.id.is_none() {
                // A whole file failed: the key is a position in it.
                text.push_str(&format!("; at {}{file}", line(&error.config_key)));
            } else {
                text.push_str(&format!("; change `{}`{file}", line(&error.config_key)));
            }
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
    match &row.source {
        Some(SourceJson {
            label,
            path: Some(path),
            ..
        }) => format!("{label} ({path})"),
        Some(source) => source.label.clone(),
        None => "-".to_owned(),
    }
}

/// The colour of a status.
pub(crate) fn status_paint(status: &str) -> Paint {
    match status {
        "ready" => Paint::Green,
        "error" => Paint::Red,
        "disabled" | "disconnected" | "idle" => Paint::Dim,
        _ => Paint::Yellow,
    }
}

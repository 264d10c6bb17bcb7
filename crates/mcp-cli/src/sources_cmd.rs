//! `mcpctl sources`: every place servers are read from, found or not, with its application, level, path and status.
//!
//! The sources are exactly those `mcpctl servers` reads (see the `sources`
//! module for their order, which is also their precedence). `--json`
//! prints an array with one object per source:
//!
//! ```json
//! {"label": "Cursor", "host": "cursor", "level": "user",
//!  "path": "/home/ada/.cursor/mcp.json", "status": "found", "servers": 2,
//!  "error": null, "warnings": [{"code": "ignored_field",
//!  "message": "...", "field": "mcpServers.x.envFile", "line": 4, "column": 7}]}
//! ```
//!
//! `warnings` lists what the file holds that is not used (a field this
//! client has no meaning for, an entry it cannot start, a shape it does not
//! understand), each naming the key as the file wrote it; the table prints
//! them below itself.
//!
//! `status` is `found` (with `servers`, the number of entries the file
//! holds before precedence), `not_found`, `error` (with `error`:
//! `{"code", "message"}`) or `skipped` (a project file with
//! `--no-project`). Listing is not failing: the exit status is 0 whatever
//! the sources hold.

use mcp_config::{SourceReport, SourceStatus};
use serde::Serialize;

use crate::exit::{CliError, Exit};
use crate::output::{Output, Paint, Table, line};
use crate::sources::{self, SourceOptions};

/// One source's row.
#[derive(Debug, Serialize)]
struct SourceRow {
    /// The application's name (`Claude Code`, ...), or `store`, `--config`,
    /// `project`, `built-in`.
    label: String,
    /// The application's id (`claude-code`, ...); `None` for mcpctl's own
    /// sources.
    host: Option<&'static str>,
    /// `user`, `project` or `host`.
    level: &'static str,
    /// The file, if the source is one.
    path: Option<String>,
    /// `found`, `not_found`, `error` or `skipped`.
    status: &'static str,
    /// How many server entries a found source holds.
    servers: Option<usize>,
    /// Why a source could not be read.
    error: Option<SourceErrorJson>,
    /// What the source holds that is not used.
    warnings: Vec<WarningJson>,
}

/// One of a row's `warnings`.
#[derive(Debug, Serialize)]
pub(crate) struct WarningJson {
    /// The stable code, e.g. `ignored_field`.
    pub(crate) code: &'static str,
    /// What was not used, for a person; never a secret.
    pub(crate) message: String,
    /// The key as the file wrote it; empty for the whole file.
    pub(crate) field: String,
    /// Where the key is, when known (1-based).
    pub(crate) line: Option<usize>,
    /// Where the key is, when known (1-based).
    pub(crate) column: Option<usize>,
}

impl From<&mcp_config::Diagnostic> for WarningJson {
    fn from(diagnostic: &mcp_config::Diagnostic) -> Self {
        WarningJson {
            code: diagnostic.code(),
            message: diagnostic.message.clone(),
            field: diagnostic.field.clone(),
            line: diagnostic.line,
            column: diagnostic.column,
        }
    }
}

/// A row's `error`.
#[derive(Debug, Serialize)]
struct SourceErrorJson {
    /// The stable code, e.g. `parse_error`.
    code: &'static str,
    /// What is wrong, for a person; never a secret.
    message: String,
}

impl From<&SourceReport> for SourceRow {
    fn from(report: &SourceReport) -> Self {
        let source = &report.source;
        let (status, servers, error) = match &report.status {
            SourceStatus::Found { servers } => ("found", Some(*servers), None),
            SourceStatus::NotFound => ("not_found", None, None),
            SourceStatus::Error { code, message } => (
                "error",
                None,
                Some(SourceErrorJson {
                    code,
                    message: message.clone(),
                }),
            ),
            _ => ("skipped", None, None),
        };
        SourceRow {
            label: source.provider_label.clone(),
            host: source.host.map(|host| host.id()),
            level: source.level.as_str(),
            path: source.path.as_ref().map(|p| p.display().to_string()),
            status,
            servers,
            error,
            warnings: Vec::new(),
        }
    }
}

/// `mcpctl sources`.
pub(crate) fn run(options: &SourceOptions, output: &Output) -> Result<Exit, CliError> {
    let sources = sources::gather(options)?;
    let report = sources.discovery.discover();
    let rows: Vec<SourceRow> = report
        .sources
        .iter()
        .map(|source| {
            let mut row = SourceRow::from(source);
            row.warnings = report
                .warnings
                .iter()
                .filter(|warning| warning.source == source.source)
                .map(|warning| WarningJson::from(&warning.diagnostic))
                .collect();
            row
        })
        .collect();
    let printed = if output.json {
        output.json(&rows)
    } else {
        output.text(&render(&rows, output))
    };
    printed.map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))?;
    Ok(Exit::Success)
}

/// The table for people: `found: 3 servers`, `not found`, `error: CODE MESSAGE`.
fn render(rows: &[SourceRow], output: &Output) -> String {
    let mut table = Table::new(&["source", "level", "path", "status"]);
    for row in rows {
        let (status, paint) = match (row.status, row.servers, &row.error) {
            ("found", Some(1), _) => ("found: 1 server".to_owned(), Paint::Green),
            ("found", Some(n), _) => (format!("found: {n} servers"), Paint::Green),
            ("error", _, Some(error)) => (
                format!("error: {} {}", error.code, error.message),
                Paint::Red,
            ),
            ("skipped", _, _) => ("skipped (--no-project)".to_owned(), Paint::Dim),
            _ => ("not found".to_owned(), Paint::Dim),
        };
        table.painted_row(vec![
            (row.label.clone(), None),
            (row.level.to_owned(), None),
            (
                row.path.clone().unwrap_or_else(|| "-".to_owned()),
                Some(Paint::Dim),
            ),
            (status, Some(paint)),
        ]);
    }
    let mut text = table.render(output);
    for row in rows {
        for warning in &row.warnings {
            let place = row.path.as_deref().unwrap_or(&row.label);
            text.push_str(&format!(
                "warning: {}: {} [{}]\n",
                line(place),
                line(&located(warning)),
                warning.code
            ));
        }
    }
    text
}

/// `FIELD at line L column C: message`, or as much of it as is known.
pub(crate) fn located(warning: &WarningJson) -> String {
    let place = match (warning.field.is_empty(), warning.line, warning.column) {
        (true, Some(l), Some(c)) => format!("line {l} column {c}"),
        (false, Some(l), Some(c)) => format!("{} at line {l} column {c}", warning.field),
        (false, _, _) => warning.field.clone(),
        _ => String::new(),
    };
    if place.is_empty() {
        warning.message.clone()
    } else {
        format!("{place}: {}", warning.message)
    }
}

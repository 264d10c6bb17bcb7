//! `mcpctl tools [SERVER]`: the tools of ready servers, with the model-facing names mcp-toolbridge gives them.
//!
//! The table shows each tool's parameters compactly (`echo(text: string)`,
//! `?` for one not required) and its description, cut to fit on a
//! terminal and whole when piped; `--schema` prints each tool's whole
//! input schema instead.
//!
//! `--json` prints an array, servers in source order and each server's
//! tools in the order it lists them:
//!
//! ```json
//! {"server": "demo", "name": "echo", "model_name": "mcp_demo_echo",
//!  "title": "Echo", "description": "Returns the given text unchanged.",
//!  "signature": "echo(text: string)", "input_schema": {"type": "object", ...}}
//! ```
//!
//! `name`, `title`, `description` and `input_schema` are exactly what the
//! server listed (the table shows them with control characters escaped,
//! see [`crate::output`]); `model_name` is `null` for a tool the bridge could not
//! name (the reason goes to stderr). Servers that are not ready contribute
//! nothing; a note on stderr names them. Without SERVER the exit status is
//! 3 when a configured server failed (0 with `--allow-failures`); with
//! SERVER it is that server's.
//!
//! When a background gateway (`mcpctl serve --daemon`) serves the same
//! sources, the listing is its servers' (see [`crate::daemon_client`]),
//! and the same; `--no-daemon` always connects this command's own.

use std::collections::HashMap;

use mcp_toolbridge::SessionOptions;
use serde::Serialize;
use serde_json::Value;

use crate::cli::Preset;
use crate::daemon_client::Daemon;
use crate::exit::{CliError, Exit};
use crate::output::{Output, Paint, Table, line, one_line};
use crate::runtime::{Runtime, Select};
use crate::sources::SourceOptions;

/// One tool's row.
#[derive(Debug, Serialize)]
struct ToolRow {
    server: String,
    name: String,
    model_name: Option<String>,
    title: Option<String>,
    description: Option<String>,
    /// The compact form of the parameters, `echo(text: string)`; a
    /// parameter not required has a `?`.
    signature: String,
    input_schema: Value,
}

/// `name(param: type, optional?: type)` from an input schema's
/// `properties` and `required`; a type the schema does not name is `any`,
/// a list of types is joined with `|`.
fn signature(name: &str, schema: &serde_json::Map<String, Value>) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(param, property)| {
                    let kind = match property.get("type") {
                        Some(Value::String(kind)) => kind.clone(),
                        Some(Value::Array(kinds)) => kinds
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("|"),
                        _ => "any".to_owned(),
                    };
                    let optional = if required.contains(&param.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{param}{optional}: {kind}")
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{name}({})", params.join(", "))
}

/// `mcpctl tools`: through the background gateway when `daemon` and one
/// serves these sources (see [`crate::daemon_client`]), else directly.
pub(crate) async fn run(
    server: Option<&str>,
    allow_failures: bool,
    schema: bool,
    options: &SourceOptions,
    output: &Output,
    daemon: bool,
) -> Result<Exit, CliError> {
    // Listing does not depend on the preset: a daemon with any will do.
    let presets = [Preset::Full, Preset::Workspace, Preset::Readonly];
    if daemon && let Some(daemon) = Daemon::connect(options, &presets).await {
        let listed = through_daemon(&daemon, server, allow_failures, schema, output);
        daemon.close().await;
        if let Some(listed) = listed {
            return listed;
        }
    }
    let select = Select::of(server);
    Runtime::run(options, select, output, async |runtime| {
        list(runtime, server, allow_failures, schema, output)
    })
    .await
}

/// The listing from the daemon's report; `None` when SERVER is not ready
/// there (a direct run then reports it in its own words).
fn through_daemon(
    daemon: &Daemon,
    only: Option<&str>,
    allow_failures: bool,
    schema: bool,
    output: &Output,
) -> Option<Result<Exit, CliError>> {
    if let Some(id) = only {
        daemon.ready(id)?;
    }
    let servers = daemon
        .servers
        .iter()
        .filter(|server| only.is_none_or(|id| server.id == id));
    let mut not_ready = Vec::new();
    let mut failed = 0;
    let mut rows = Vec::new();
    for server in servers {
        if server.status != "ready" {
            if server.status == "error" {
                failed += 1;
            }
            if server.status != "disabled" {
                not_ready.push(crate::ready::NotReady {
                    id: server.id.clone(),
                    status: server.status.clone(),
                    why: None,
                });
            }
            continue;
        }
        for tool in &server.tools {
            rows.push(row(&server.id, &tool.tool, tool.model_name.clone()));
        }
    }
    crate::ready::note_not_ready(&not_ready, "tools are");
    // The binding's order: by server id, each server's in its own order.
    let mut unusable: Vec<(&str, &str)> = daemon
        .servers
        .iter()
        .filter(|server| only.is_none_or(|id| server.id == id))
        .flat_map(|server| server.unusable.iter().map(|text| (&*server.id, &**text)))
        .collect();
    unusable.sort_by_key(|(server, _)| *server);
    for (_, text) in unusable {
        eprintln!("mcpctl: note: {}; a model cannot call it", line(text));
    }
    Some(
        print(&rows, schema, output)
            .map(|()| crate::servers::failures_exit(failed, allow_failures)),
    )
}

fn row(server: &str, tool: &mcp_proto::types::Tool, model_name: Option<String>) -> ToolRow {
    let input_schema = tool.input_schema.to_object().unwrap_or_default();
    ToolRow {
        server: server.to_owned(),
        name: tool.name.clone(),
        model_name,
        title: tool.title.clone(),
        description: tool.description.clone(),
        signature: signature(&tool.name, &input_schema),
        input_schema: Value::Object(input_schema),
    }
}

fn print(rows: &[ToolRow], schema: bool, output: &Output) -> Result<(), CliError> {
    let printed = if output.json {
        output.json(&rows)
    } else {
        output.text(&render(rows, schema, output))
    };
    printed.map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))
}

fn list(
    runtime: &Runtime,
    only: Option<&str>,
    allow_failures: bool,
    schema: bool,
    output: &Output,
) -> Result<Exit, CliError> {
    let ready = crate::ready::catalogs(runtime, only, "tools are")?;
    let session = runtime.session(SessionOptions::default());
    let bound = session.bind();
    let mut model_names: HashMap<(String, String), String> = HashMap::new();
    for tool in bound.tools() {
        if let Some((server, raw)) = bound.resolve(tool.name()) {
            model_names.insert((server.to_owned(), raw.to_owned()), tool.name().to_owned());
        }
    }
    for unusable in bound.unusable() {
        eprintln!(
            "mcpctl: note: {}; a model cannot call it",
            line(&unusable.to_string())
        );
    }

    let mut rows = Vec::new();
    for (id, catalog) in &ready.catalogs {
        for tool in catalog.tools() {
            let model_name = model_names
                .get(&(id.to_owned(), tool.name.clone()))
                .cloned();
            rows.push(row(id, tool, model_name));
        }
    }
    for failure in runtime.config_errors.iter().filter(|e| e.server.is_none()) {
        eprintln!(
            "mcpctl: note: {} [{}]",
            line(&failure.error.message),
            failure.error.code
        );
    }
    print(&rows, schema, output)?;
    Ok(ready.exit(allow_failures))
}

fn render(rows: &[ToolRow], schema: bool, output: &Output) -> String {
    if rows.is_empty() {
        return "no tools to list\n".to_owned();
    }
    if schema {
        let mut text = String::new();
        for row in rows {
            text.push_str(&output.paint(
                Paint::Bold,
                &line(&format!("{}.{}", row.server, row.signature)),
            ));
            text.push('\n');
            text.push_str(&crate::output::to_json(&row.input_schema).unwrap_or_default());
            text.push_str("\n\n");
        }
        return text;
    }
    // On a terminal a description is cut to fit; piped, it is whole (on
    // one line), for grep and for people who page it.
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let describe = |text: &str| {
        if terminal {
            one_line(text, 72)
        } else {
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        }
    };
    let mut table = Table::new(&["model name", "server", "tool", "description"]);
    for row in rows {
        table.painted_row(vec![
            (
                row.model_name.clone().unwrap_or_else(|| "-".to_owned()),
                Some(Paint::Bold),
            ),
            (row.server.clone(), None),
            (row.signature.clone(), None),
            (
                describe(row.description.as_deref().unwrap_or("")),
                Some(Paint::Dim),
            ),
        ]);
    }
    table.render(output)
}

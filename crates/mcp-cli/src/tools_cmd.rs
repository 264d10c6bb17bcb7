//! `mcpctl tools [SERVER [TOOL]]` (or `SERVER.TOOL`): the tools of ready servers, with the model-facing names mcp-toolbridge gives them.
//!
//! The table shows each tool's parameters compactly, TypeScript-like
//! (`get(kind: "a" | "b", ids?: string[], who: {name, role}[])`, `?` for
//! one not required, see [`type_of`]) and its description, cut to fit on
//! a terminal and whole when piped; `--schema` prints each tool's whole
//! input schema instead. With TOOL, only that tool.
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
//! name, and `not_exposed` says why (otherwise `null`): a tool that can
//! only run as a task, a name listed twice, an empty name. The table
//! shows `(not exposed)` as its model name; the reason goes to stderr
//! only when that one tool is asked for (`tools SERVER TOOL`), so a
//! plain listing repeats no note on every run. Servers that are not ready contribute
//! nothing; a note on stderr names them. Without SERVER the exit status is
//! that of a failed configured server (2 for a configuration problem, 3
//! for a connection failure, the worse of them; 0 with
//! `--allow-failures`); with SERVER it is that server's.
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
    /// Why the tool has no model name (`model_name` is `null`), e.g. "the
    /// tool can only run as a task, which this client does not do".
    not_exposed: Option<String>,
}

/// `name(param: type, optional?: type)` from an input schema's
/// `properties` and `required`, each type as [`type_of`] writes it.
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
                    let optional = if required.contains(&param.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{param}{optional}: {}", type_of(property))
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{name}({})", params.join(", "))
}

/// The widest a parameter's type is written in a signature; past it the
/// type ends with `…` (`--schema` shows the whole schema).
const TYPE_WIDTH: usize = 48;

/// A JSON Schema's type, compactly, TypeScript-like: a `const` or `enum`
/// as its literals (`"a" | "b"`), an array as its items' type with `[]`
/// (`string[]`, `{name, entityType}[]`), an object with properties as
/// their names in braces, a list of types or an `anyOf`/`oneOf` as a
/// union, a `$ref` by the definition's name, anything unsaid as `any`;
/// cut to [`TYPE_WIDTH`] characters.
pub(crate) fn type_of(schema: &Value) -> String {
    let full = type_at(schema, 0);
    if full.chars().count() <= TYPE_WIDTH {
        return full;
    }
    let cut: String = full.chars().take(TYPE_WIDTH - 1).collect();
    format!("{cut}…")
}

/// How deep [`type_at`] looks into items and unions.
const TYPE_DEPTH: usize = 3;

/// The most enum values or union members written before `…`.
const UNION_MEMBERS: usize = 6;

fn type_at(schema: &Value, depth: usize) -> String {
    let Some(object) = schema.as_object() else {
        // `true` (anything) or a malformed schema.
        return "any".to_owned();
    };
    if depth > TYPE_DEPTH {
        return "…".to_owned();
    }
    if let Some(value) = object.get("const") {
        return literal(value);
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(literal));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(members) = object.get(key).and_then(Value::as_array) {
            return union(members.iter().map(|m| type_at(m, depth + 1)));
        }
    }
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return crate::output::line(name).into_owned();
    }
    match object.get("type") {
        Some(Value::String(kind)) => named(kind, object, depth),
        Some(Value::Array(kinds)) => union(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| named(kind, object, depth)),
        ),
        _ if object.contains_key("properties") => named("object", object, depth),
        _ if object.contains_key("items") => named("array", object, depth),
        _ => "any".to_owned(),
    }
}

/// One named JSON type, with what the schema says of its items or
/// properties.
fn named(kind: &str, object: &serde_json::Map<String, Value>, depth: usize) -> String {
    match kind {
        "array" => match object.get("items") {
            Some(items) => {
                let item = type_at(items, depth + 1);
                if item.contains(" | ") {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            None => "any[]".to_owned(),
        },
        "object" => match object.get("properties").and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => {
                let mut names: Vec<String> = properties
                    .keys()
                    .take(4)
                    .map(|name| crate::output::line(name).into_owned())
                    .collect();
                if properties.len() > 4 {
                    names.push("…".to_owned());
                }
                format!("{{{}}}", names.join(", "))
            }
            _ => "object".to_owned(),
        },
        other => crate::output::line(other).into_owned(),
    }
}

/// Members joined with ` | `, each once, at most [`UNION_MEMBERS`] and
/// as many as fit in [`TYPE_WIDTH`] whole, the rest as `…`.
fn union(members: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut width = 0;
    let mut more = false;
    for member in members {
        if seen.contains(&member) {
            continue;
        }
        let grown = width + member.chars().count() + if seen.is_empty() { 0 } else { 3 };
        // Room is kept for ` | …`.
        if seen.len() == UNION_MEMBERS || (!seen.is_empty() && grown > TYPE_WIDTH - 4) {
            more = true;
            break;
        }
        width = grown;
        seen.push(member);
    }
    if more {
        seen.push("…".to_owned());
    }
    if seen.is_empty() {
        return "never".to_owned();
    }
    seen.join(" | ")
}

/// A `const` or `enum` value as JSON, on one line and escaped.
fn literal(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    let text = crate::output::line(&text);
    if text.chars().count() <= 24 {
        return text.into_owned();
    }
    let cut: String = text.chars().take(23).collect();
    format!("{cut}…")
}

/// `mcpctl tools`: through the background gateway when `daemon` and one
/// serves these sources (see [`crate::daemon_client`]), else directly.
pub(crate) async fn run(
    server: Option<&str>,
    tool: Option<&str>,
    allow_failures: bool,
    schema: bool,
    options: &SourceOptions,
    output: &Output,
    daemon: bool,
) -> Result<Exit, CliError> {
    // Listing does not depend on the preset: a daemon with any will do.
    let presets = [Preset::Full, Preset::Workspace, Preset::Readonly];
    if daemon && let Some(daemon) = Daemon::connect(options, &presets).await {
        let listed = through_daemon(&daemon, server, tool, allow_failures, schema, output);
        daemon.close().await;
        if let Some(listed) = listed {
            return listed;
        }
    }
    let select = Select::of(server);
    Runtime::run(options, select, output, async |runtime| {
        list(runtime, server, tool, allow_failures, schema, output)
    })
    .await
}

/// The listing from the daemon's report; `None` when SERVER is not ready
/// there (a direct run then reports it in its own words).
fn through_daemon(
    daemon: &Daemon,
    only: Option<&str>,
    tool: Option<&str>,
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
    let mut failed = crate::servers::Failures::default();
    let mut rows = Vec::new();
    for server in servers {
        if server.status != "ready" {
            if server.status == "error" {
                failed.add(server.error.as_ref().map(|e| e.code.as_str()));
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
    // The daemon reports each tool without a model name as the text of
    // mcp-toolbridge's `UnusableTool`: the reason follows its fixed start.
    for row in rows.iter_mut().filter(|row| row.model_name.is_none()) {
        let start = format!(
            "tool {:?} of server {:?} is not exposed: ",
            row.name, row.server
        );
        row.not_exposed = daemon
            .servers
            .iter()
            .filter(|server| server.id == row.server)
            .flat_map(|server| &server.unusable)
            .find_map(|text| text.strip_prefix(&start))
            .map(str::to_owned);
    }
    let rows = match one_tool(rows, only, None, tool) {
        Ok(rows) => rows,
        Err(error) => return Some(Err(error)),
    };
    note_not_exposed(&rows, tool.is_some());
    Some(print(&rows, schema, output).map(|()| failed.exit(allow_failures)))
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
        not_exposed: None,
    }
}

/// The note on stderr for each listed tool a model cannot call, and why:
/// only when one tool was asked for (`tools SERVER TOOL`). A whole
/// listing says it in the table (`(not exposed)`) and in `--json`
/// (`not_exposed`) instead, so that it is not repeated on every run.
fn note_not_exposed(rows: &[ToolRow], one_tool: bool) {
    if !one_tool {
        return;
    }
    for row in rows {
        if let Some(reason) = &row.not_exposed {
            eprintln!(
                "mcpctl: note: tool \"{}\" of server \"{}\" is not exposed: {}; a model cannot call it",
                line(&row.name),
                line(&row.server),
                line(reason)
            );
        }
    }
}

/// The rows of `server`'s tool `tool` when one is asked for (`tools
/// SERVER TOOL`), else all; a tool the server does not list is an error
/// naming the closest one.
fn one_tool(
    rows: Vec<ToolRow>,
    server: Option<&str>,
    source: Option<&mcp_config::SourceMeta>,
    tool: Option<&str>,
) -> Result<Vec<ToolRow>, CliError> {
    let (Some(server), Some(tool)) = (server, tool) else {
        return Ok(rows);
    };
    let known: Vec<String> = rows
        .iter()
        .filter(|row| row.server == server)
        .map(|row| row.name.clone())
        .collect();
    let rows: Vec<ToolRow> = rows
        .into_iter()
        .filter(|row| row.server == server && row.name == tool)
        .collect();
    if rows.is_empty() {
        return Err(crate::suggest::unknown_tool_of(
            &known, server, source, tool,
        ));
    }
    Ok(rows)
}

/// The command that shows a tool's whole input schema, for hints; for a
/// server given on the command line, with the flags that give it
/// ([`crate::sources::adhoc_flags`]).
pub(crate) fn schema_command(server: &str, tool: &str, flags: Option<&str>) -> String {
    let word = |w: &str| line(&crate::output::shell_word(w)).into_owned();
    let flags = flags.map_or_else(String::new, |flags| format!("{flags} "));
    format!(
        "`mcpctl tools {flags}{} {} --schema`",
        word(server),
        word(tool)
    )
}

/// `SERVER TOOL`, or `SERVER.TOOL` in one word (cut at its first dot),
/// or `SERVER` alone.
pub(crate) fn target(
    server: Option<String>,
    tool: Option<String>,
) -> (Option<String>, Option<String>) {
    match (server, tool) {
        (Some(server), None) => match server
            .split_once('.')
            .filter(|(id, name)| !id.is_empty() && !name.is_empty())
        {
            Some((id, name)) => (Some(id.to_owned()), Some(name.to_owned())),
            None => (Some(server), None),
        },
        other => other,
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
    tool: Option<&str>,
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
    let not_exposed: HashMap<(&str, &str), String> = bound
        .unusable()
        .iter()
        .map(|unusable| {
            (
                (unusable.server.as_str(), unusable.tool.as_str()),
                unusable.reason.to_string(),
            )
        })
        .collect();

    let mut rows = Vec::new();
    for (id, catalog) in &ready.catalogs {
        for tool in catalog.tools() {
            let model_name = model_names
                .get(&(id.to_owned(), tool.name.clone()))
                .cloned();
            let mut row = row(id, tool, model_name);
            row.not_exposed = not_exposed.get(&(id.as_str(), tool.name.as_str())).cloned();
            rows.push(row);
        }
    }
    for failure in runtime.config_errors.iter().filter(|e| e.server.is_none()) {
        eprintln!(
            "mcpctl: note: {} [{}]",
            line(&failure.error.message),
            failure.error.code
        );
    }
    let source = only.and_then(|id| runtime.manager.source(id));
    let rows = one_tool(rows, only, source.as_ref(), tool)?;
    note_not_exposed(&rows, tool.is_some());
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
        let model_name = match (&row.model_name, &row.not_exposed) {
            (Some(name), _) => (name.clone(), Some(Paint::Bold)),
            (None, Some(_)) => ("(not exposed)".to_owned(), Some(Paint::Dim)),
            (None, None) => ("-".to_owned(), Some(Paint::Dim)),
        };
        table.painted_row(vec![
            model_name,
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn types_are_written_compactly_and_bounded() {
        assert_eq!(type_of(&json!({"type": "string"})), "string");
        assert_eq!(type_of(&json!(true)), "any");
        assert_eq!(type_of(&json!({})), "any");
        assert_eq!(
            type_of(&json!({"enum": ["a", 1, null]})),
            r#""a" | 1 | null"#
        );
        assert_eq!(type_of(&json!({"const": 3})), "3");
        assert_eq!(
            type_of(
                &json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}})
            ),
            "(string | number)[]"
        );
        assert_eq!(type_of(&json!({"type": "array"})), "any[]");
        assert_eq!(type_of(&json!({"$ref": "#/$defs/Entity"})), "Entity");
        assert_eq!(
            type_of(
                &json!({"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}}})
            ),
            "{a, b, c, d, …}"
        );
        // Deep nesting stops; a long literal is cut; escapes stay visible.
        let deep = json!({"type": "array", "items": {"type": "array", "items": {"type": "array",
            "items": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}}});
        assert_eq!(type_of(&deep), "…[][][][]");
        let long = type_of(&json!({"const": "x".repeat(100)}));
        assert!(long.ends_with('…') && long.chars().count() == 24, "{long}");
        assert_eq!(type_of(&json!({"type": "str\u{1b}[31m"})), "str\\x1b[31m");
        let many: Vec<String> = (0..40).map(|n| format!("value-{n}")).collect();
        let wide = type_of(&json!({"enum": many}));
        assert!(wide.chars().count() <= TYPE_WIDTH, "{wide}");
        assert!(wide.ends_with(" | …"), "{wide}");
    }
}

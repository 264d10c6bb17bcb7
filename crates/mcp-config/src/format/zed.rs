//! Zed's `settings.json`: the `context_servers` section.
//!
//! Zed writes a custom server flat, `{"source": "custom", "command": "...",
//! "args": [], "env": {}}`, or (older files) nested, `{"command": {"path":
//! "...", "args": [], "env": {}}}`; a remote server is `{"url": "...",
//! "headers": {}}`. A server provided by a Zed extension has only
//! `settings` (and `source: "extension"`): Zed knows its command, this crate
//! cannot, so such an entry is a warning that names it.

use crate::diagnostic::{Code, Diagnostic};
use crate::json::{FieldReader, Json, join_key};
use crate::model::{HttpConfig, ServerConfig, StdioConfig, TransportConfig};

use super::host::{Ignored, TextRules};
use super::mcp_servers::{Entry, servers_object};
use super::{
    DocumentError, EntryError, Format, ParsedDocument, ParsedEntry, ReadContext,
    entry_not_an_object,
};
use super::{reject_duplicate_ids, top_level_not_object};

const KEY: &str = "context_servers";

pub(super) fn read(root: &Json, context: &ReadContext) -> Result<ParsedDocument, DocumentError> {
    if root.as_object().is_none() {
        return Err(top_level_not_object(root));
    }
    let servers = servers_object(root.get(KEY), KEY)?;
    let rules = TextRules::new(context);
    let mut warnings = Vec::new();
    let mut ignored = Ignored::default();
    let mut entries = Vec::new();
    for (name, value) in servers {
        let path = join_key(KEY, name);
        if let Some(entry) = read_entry(name, value, &path, &rules, &mut warnings, &mut ignored) {
            entries.push((path, entry));
        }
    }
    warnings.extend(ignored.into_warnings("Zed", |key| match key {
        "settings" => Some("a server's `settings` are for the Zed extension that provides it"),
        _ => None,
    }));
    Ok(ParsedDocument {
        format: Some(Format::Zed),
        entries: reject_duplicate_ids(entries, "context server"),
        warnings,
    })
}

fn read_entry(
    name: &str,
    value: &Json,
    path: &str,
    rules: &TextRules,
    warnings: &mut Vec<Diagnostic>,
    ignored: &mut Ignored,
) -> Option<ParsedEntry> {
    let server = Some(name.to_owned());
    let Some(members) = value.as_object() else {
        return Some(Err(entry_not_an_object(
            name,
            path,
            "a context server",
            value,
        )));
    };
    let mut e = Entry::new(FieldReader::new(members, path, server.clone()), rules);
    let source = e.r.string("source");
    let enabled = e.r.bool("enabled").unwrap_or(true);
    let transport = match e.r.raw("command") {
        Some(Json::String(_)) => {
            let mut stdio = StdioConfig::new(e.text("command", "transport.command"));
            stdio.args = e.texts("args", "transport.args");
            stdio.env = e.secret_map("env", "transport.env");
            Some(TransportConfig::Stdio(stdio))
        }
        Some(Json::Object(fields)) => {
            let command_path = e.r.field_path("command");
            let mut c = Entry::new(
                FieldReader::new(fields, command_path, server.clone()),
                rules,
            );
            let mut stdio = StdioConfig::new(c.text("path", "transport.command"));
            if !c.r.has("path") {
                let field = c.r.field_path("path");
                c.r.problem(
                    Code::MissingField,
                    field,
                    "`path` (the program to run) is required",
                );
            }
            stdio.args = c.texts("args", "transport.args");
            stdio.env = c.secret_map("env", "transport.env");
            for key in c.r.unread() {
                ignored.note(key, c.r.field_path(key), name);
            }
            e.r.problems.append(&mut c.r.problems);
            for (store, origin) in c.origins.iter() {
                e.origins.insert(store, origin.path.clone());
            }
            Some(TransportConfig::Stdio(stdio))
        }
        Some(Json::Null) | None if e.r.has("url") => {
            let mut http = HttpConfig::new(e.text("url", "transport.url"));
            http.headers = e.secret_map("headers", "transport.headers");
            Some(TransportConfig::Http(http))
        }
        Some(Json::Null) | None => {
            let from = match source.as_deref() {
                Some("extension") => "is provided by a Zed extension",
                _ => "has no `command` or `url` (a Zed extension's server)",
            };
            let _ = e.r.has("settings");
            warnings.push(Diagnostic::new(
                Code::UnstartableServer,
                server,
                path,
                format!(
                    "context server `{name}` {from}: only Zed knows how to start it, so it is \
                     not listed here; give it a `command` to use it outside Zed"
                ),
            ));
            return None;
        }
        Some(other) => {
            let field = e.r.field_path("command");
            let message = format!(
                "`command` must be a string or an object with `path`, not {}",
                other.type_name()
            );
            e.r.problem(Code::InvalidField, field, message);
            None
        }
    };
    if transport.is_some() {
        ignored.note_unread(&e.r, name);
    }
    let Entry { r, mut origins, .. } = e;
    origins.insert("id", path);
    origins.insert("name", path);
    origins.insert("transport", path);
    Some(match transport {
        Some(transport) if r.problems.is_empty() => {
            let mut config = ServerConfig::new(name, transport);
            config.enabled = enabled;
            config.origins = origins;
            Ok(config)
        }
        _ => Err(EntryError::new(server, r.problems)),
    })
}

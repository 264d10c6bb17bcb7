//! opencode's `opencode.json` / `opencode.jsonc`: the `mcp` section.
//!
//! `{"type": "local", "command": ["program", "arg", ...], "environment":
//! {}, "enabled": true, "timeout": 5000}` or `{"type": "remote", "url":
//! "...", "headers": {}, "oauth": false | {...}, "enabled": true}`.
//! `{env:NAME}` references become `${NAME}`; `{file:PATH}` is refused.

use crate::diagnostic::Code;
use crate::json::{FieldReader, Json, join_index, join_key};
use crate::model::{HttpConfig, OAuthConfig, StdioConfig, TransportConfig};

use super::host::{Ignored, TextRules};
use super::mcp_servers::{Entry, secret_reference, servers_object};
use super::{DocumentError, Format, ParsedDocument, ParsedEntry, ReadContext, entry_not_an_object};
use super::{reject_duplicate_ids, shorten, top_level_not_object};

const KEY: &str = "mcp";

pub(super) fn read(root: &Json, context: &ReadContext) -> Result<ParsedDocument, DocumentError> {
    if root.as_object().is_none() {
        return Err(top_level_not_object(root));
    }
    let servers = servers_object(root.get(KEY), KEY)?;
    let mut rules = TextRules::new(context);
    rules.brace_env = true;
    rules.file_reference = Some("{file:");
    let mut ignored = Ignored::default();
    let mut entries = Vec::new();
    for (name, value) in servers {
        let path = join_key(KEY, name);
        let entry = read_entry(name, value, &path, &rules, &mut ignored);
        entries.push((path, entry));
    }
    let warnings = ignored.into_warnings("opencode", |key| match key {
        "oauth" => Some(
            "`oauth: false` turns opencode's automatic OAuth off; here a server that asks \
             for authorization is still offered a login",
        ),
        _ => None,
    });
    Ok(ParsedDocument {
        format: Some(Format::OpenCode),
        entries: reject_duplicate_ids(entries, "server"),
        warnings,
    })
}

fn read_entry(
    name: &str,
    value: &Json,
    path: &str,
    rules: &TextRules,
    ignored: &mut Ignored,
) -> ParsedEntry {
    let Some(members) = value.as_object() else {
        return Err(entry_not_an_object(name, path, "a server entry", value));
    };
    let mut e = Entry::new(
        FieldReader::new(members, path, Some(name.to_owned())),
        rules,
    );
    let kind = match e.r.string("type").as_deref() {
        Some("local") => Some(true),
        Some("remote") => Some(false),
        Some(other) => {
            let field = e.r.field_path("type");
            e.r.problem(
                Code::UnknownTransport,
                field,
                format!("unknown type `{}`; use `local` or `remote`", shorten(other)),
            );
            None
        }
        None if e.r.has("type") => None,
        None if e.r.has("command") => Some(true),
        None if e.r.has("url") => Some(false),
        None => {
            let field = e.r.field_path("type");
            e.r.problem(
                Code::MissingTransport,
                field,
                "set `type` to `local` (with `command`) or `remote` (with `url`)",
            );
            None
        }
    };
    let enabled = e.r.bool("enabled").unwrap_or(true);
    let timeout_ms = e.r.millis("timeout");
    if timeout_ms.is_some() {
        e.origins.insert("timeout", e.r.field_path("timeout"));
    }
    let transport = match kind {
        Some(true) => {
            let base = e.r.field_path("command");
            let mut words = e.texts("command", "transport.args").into_iter();
            let mut stdio = StdioConfig::new(words.next().unwrap_or_default());
            stdio.args = words.collect();
            // `command[0]` is the program; `command[i + 1]` is argument `i`.
            e.origins.insert("transport.command", join_index(&base, 0));
            for index in 0..stdio.args.len() {
                e.origins.insert(
                    format!("transport.args[{index}]"),
                    join_index(&base, index + 1),
                );
            }
            if stdio.command.is_empty() {
                e.origins.insert("transport.command", base);
            }
            stdio.env = e.secret_map("environment", "transport.env");
            refuse_other_transport(&mut e, &["url", "headers", "oauth"], "remote", "local");
            Some(TransportConfig::Stdio(stdio))
        }
        Some(false) => {
            let mut http = HttpConfig::new(e.text("url", "transport.url"));
            http.headers = e.secret_map("headers", "transport.headers");
            http.oauth = read_oauth(&mut e, name, ignored);
            refuse_other_transport(&mut e, &["command", "environment"], "local", "remote");
            Some(TransportConfig::Http(http))
        }
        None => None,
    };
    let mut config = e.finish(name, path, transport, ignored)?;
    config.enabled = enabled;
    config.timeout_ms = timeout_ms;
    Ok(config)
}

/// Reports each of `keys` present in a `this` (local or remote) server:
/// they belong to the `other` kind (`wrong_transport_field`).
fn refuse_other_transport(e: &mut Entry<'_, '_>, keys: &[&str], other: &str, this: &str) {
    for key in keys {
        if e.r.has(key) {
            let field = e.r.field_path(key);
            e.r.problem(
                Code::WrongTransportField,
                field,
                format!("`{key}` belongs to a {other} server, but this one is {this}"),
            );
        }
    }
}

/// opencode's `oauth`: `false` (no automatic OAuth, which has no
/// equivalent here: reported as ignored) or `{"clientId", "clientSecret",
/// "scope"}`. The secret must be a `{env:NAME}` reference, read as
/// `clientSecretEnv`; a literal secret is refused.
fn read_oauth(e: &mut Entry<'_, '_>, name: &str, ignored: &mut Ignored) -> Option<OAuthConfig> {
    let field = e.r.field_path("oauth");
    let members = match e.r.raw("oauth")? {
        Json::Null | Json::Bool(true) => return None,
        Json::Bool(false) => {
            ignored.note("oauth", field, name);
            return None;
        }
        Json::Object(members) => members,
        other => {
            let message = format!(
                "`oauth` must be false or an object, not {}",
                other.type_name()
            );
            e.r.problem(Code::InvalidField, field, message);
            return None;
        }
    };
    e.origins.insert("transport.oauth", field.clone());
    let mut o = FieldReader::new(members, field, Some(name.to_owned()));
    let mut oauth = OAuthConfig::new();
    oauth.client_id = o.string("clientId");
    oauth.client_secret_env = secret_reference(&mut o, "clientSecret", "{env:");
    if let Some(scope) = o.string("scope") {
        oauth.scopes = scope.split_whitespace().map(str::to_owned).collect();
    }
    for key in o.unread() {
        ignored.note(key, o.field_path(key), name);
    }
    e.r.problems.append(&mut o.problems);
    Some(oauth)
}

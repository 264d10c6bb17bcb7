//! The map formats: `{"mcpServers": {...}}` (Claude) and VS Code's `{"servers": {...}}`.
//!
//! Both key servers by name and spell an entry the same way; VS Code adds
//! `inputs` (prompted variables), `envFile` and `${env:NAME}` references.

use crate::diagnostic::{Code, Diagnostic};
use crate::json::{FieldReader, Json, join_key};
use crate::model::{
    EnvHeader, HttpConfig, SecretEntry, ServerConfig, StdioConfig, TransportConfig, TransportKind,
};

use super::{
    DocumentError, EntryError, Format, ParsedDocument, ParsedEntry, read_era, read_oauth,
    reject_duplicate_ids, top_level_not_object, transport_kind_from_name,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flavor {
    McpServers,
    VsCode,
}

impl Flavor {
    fn servers_key(self) -> &'static str {
        match self {
            Flavor::McpServers => "mcpServers",
            Flavor::VsCode => "servers",
        }
    }
}

/// Entry fields that only a stdio server has, and only an HTTP one has
/// (validation: "fields that belong to the other transport").
const STDIO_FIELDS: [&str; 5] = ["command", "args", "env", "envVars", "cwd"];
const HTTP_FIELDS: [&str; 5] = ["url", "headers", "envHeaders", "bearerTokenEnv", "oauth"];

pub(super) fn read(root: &Json, flavor: Flavor) -> Result<ParsedDocument, DocumentError> {
    let Some(members) = root.as_object() else {
        return Err(top_level_not_object(root));
    };
    let key = flavor.servers_key();
    let mut warnings = Vec::new();
    if flavor == Flavor::McpServers && members.iter().any(|(k, _)| k == "servers") {
        warnings.push(Diagnostic::new(
            Code::IgnoredField,
            None,
            "servers",
            "`servers` is ignored because this file has `mcpServers`",
        ));
    }
    if flavor == Flavor::VsCode
        && let Some(inputs) = root.get("inputs")
    {
        warnings.push(inputs_warning(inputs));
    }
    let servers: &[(String, Json)] = match root.get(key) {
        None | Some(Json::Null) => &[],
        Some(Json::Object(servers)) => servers,
        Some(other) => {
            return Err(DocumentError::Shape {
                path: key.to_owned(),
                message: format!(
                    "`{key}` must be an object keyed by server name, not {}",
                    other.type_name()
                ),
            });
        }
    };
    let mut entries = Vec::with_capacity(servers.len());
    for (name, value) in servers {
        let path = join_key(key, name);
        let entry = read_entry(name, value, &path, flavor, &mut warnings);
        entries.push((path, entry));
    }
    Ok(ParsedDocument {
        format: Some(match flavor {
            Flavor::McpServers => Format::McpServers,
            Flavor::VsCode => Format::VsCode,
        }),
        entries: reject_duplicate_ids(entries, "server"),
        warnings,
    })
}

/// VS Code prompts for `inputs` interactively; a host runtime cannot, so they
/// are named in a warning and `${input:...}` references fail validation.
fn inputs_warning(inputs: &Json) -> Diagnostic {
    let ids: Vec<String> = match inputs {
        Json::Array(items) => items
            .iter()
            .filter_map(|item| match item.get("id") {
                Some(Json::String(id)) => Some(format!("`{id}`")),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let named = if ids.is_empty() {
        String::from("(none named)")
    } else {
        ids.join(", ")
    };
    Diagnostic::new(
        Code::IgnoredInputs,
        None,
        "inputs",
        format!(
            "VS Code input prompts are not supported and were ignored: {named}; \
             put the values in environment variables and reference them as ${{NAME}}"
        ),
    )
}

fn read_entry(
    name: &str,
    value: &Json,
    path: &str,
    flavor: Flavor,
    warnings: &mut Vec<Diagnostic>,
) -> ParsedEntry {
    let server = Some(name.to_owned());
    let Some(members) = value.as_object() else {
        return Err(EntryError::new(
            server.clone(),
            vec![Diagnostic::new(
                Code::InvalidField,
                server,
                path,
                format!(
                    "a server entry must be an object, not {}",
                    value.type_name()
                ),
            )],
        ));
    };
    let mut r = FieldReader::new(members, path, server.clone());
    let kind = read_kind(&mut r);
    let description = r.string("description");
    let timeout_ms = r.millis("timeout");
    let era = read_era(&mut r);
    let disabled = r.bool("disabled").unwrap_or(false);
    if flavor == Flavor::VsCode && r.has("envFile") {
        warnings.push(Diagnostic::new(
            Code::IgnoredEnvFile,
            server.clone(),
            r.field_path("envFile"),
            "`envFile` is not supported and was ignored; list the variables in `env` or `envVars`",
        ));
    }
    // VS Code spells environment references `${env:NAME}`; ours are `${NAME}`.
    let text = |s: String| match flavor {
        Flavor::VsCode => s.replace("${env:", "${"),
        Flavor::McpServers => s,
    };
    let transport = match kind {
        Some(TransportKind::Stdio) => {
            let mut stdio = StdioConfig::new(text(r.string("command").unwrap_or_default()));
            stdio.args = r.string_array("args").into_iter().map(text).collect();
            stdio.env = r
                .string_map("env")
                .into_iter()
                .map(|(key, value)| SecretEntry::new(key, text(value)))
                .collect();
            stdio.env_passthrough = r.string_array("envVars");
            stdio.cwd = r.string("cwd").filter(|cwd| !cwd.is_empty());
            Some(TransportConfig::Stdio(stdio))
        }
        Some(kind @ (TransportKind::Http | TransportKind::Sse)) => {
            let mut http = HttpConfig::new(text(r.string("url").unwrap_or_default()));
            http.headers = r
                .string_map("headers")
                .into_iter()
                .map(|(key, value)| SecretEntry::new(key, text(value)))
                .collect();
            http.env_headers = r
                .string_map("envHeaders")
                .into_iter()
                .map(|(header, var)| EnvHeader::new(header, var))
                .collect();
            http.bearer_token_env = r.string("bearerTokenEnv").filter(|v| !v.is_empty());
            http.oauth = read_oauth(&mut r);
            Some(if kind == TransportKind::Sse {
                TransportConfig::Sse(http)
            } else {
                TransportConfig::Http(http)
            })
        }
        None => None,
    };
    let foreign: &[&str] = match kind {
        Some(TransportKind::Stdio) => &HTTP_FIELDS,
        Some(_) => &STDIO_FIELDS,
        None => &[],
    };
    let misplaced_fields = foreign
        .iter()
        .filter(|key| r.has(key))
        .map(|key| format!("transport.{key}"))
        .collect();
    match transport {
        Some(transport) if r.problems.is_empty() => {
            let mut config = ServerConfig::new(name, transport);
            config.enabled = !disabled;
            config.description = description;
            config.timeout_ms = timeout_ms;
            config.era = era;
            config.misplaced_fields = misplaced_fields;
            Ok(config)
        }
        _ => Err(EntryError::new(server, r.problems)),
    }
}

/// Decides the transport: `type`, `transport` or `transportType` when given
/// (they must agree), else `command` means stdio and `url` means HTTP.
fn read_kind(r: &mut FieldReader<'_>) -> Option<TransportKind> {
    let mut declared: Vec<(&str, TransportKind)> = Vec::new();
    let mut unknown = false;
    for key in ["type", "transport", "transportType"] {
        let Some(name) = r.string(key) else {
            unknown |= r.has(key) && !matches!(r.raw(key), Some(Json::Null));
            continue;
        };
        match transport_kind_from_name(&name) {
            Some(kind) => declared.push((key, kind)),
            None => {
                unknown = true;
                let field = r.field_path(key);
                r.problem(
                    Code::UnknownTransport,
                    field,
                    format!("unknown transport `{name}`; use `stdio`, `http` or `sse`"),
                );
            }
        }
    }
    if unknown {
        return None;
    }
    match declared.as_slice() {
        [] if r.has("command") => Some(TransportKind::Stdio),
        [] if r.has("url") => Some(TransportKind::Http),
        [] => {
            let field = r.path().to_owned();
            r.problem(
                Code::MissingTransport,
                field,
                "set `command` for a stdio server or `url` for an HTTP server",
            );
            None
        }
        [(_, first), rest @ ..] => {
            if let Some((key, other)) = rest.iter().find(|(_, kind)| kind != first) {
                let field = r.field_path(key);
                let (first_key, _) = declared[0];
                r.problem(
                    Code::ConflictingTransport,
                    field,
                    format!(
                        "`{first_key}` says {} but `{key}` says {}; keep one",
                        first.as_str(),
                        other.as_str()
                    ),
                );
                return None;
            }
            Some(*first)
        }
    }
}

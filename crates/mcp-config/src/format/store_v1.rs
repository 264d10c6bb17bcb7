//! The store format: `{"version": 1, "servers": [{id, name, enabled, transport}]}`.
//!
//! `transport` is `{type: "stdio", command, args, env: [{key, value}],
//! envVars, cwd}` or `{type: "http" | "sse", url, bearerTokenEnv, headers:
//! [{key, value}], envHeaders: [{key, value}]}`. The writer always writes
//! every field of the transport (empty strings and arrays included) so the
//! file stays readable by hosts that expect full shape, and adds
//! `description`, `timeout`, `callTimeout` (ms), `tools` (`{include,
//! exclude}`) and `inputs` (prompts, never answers) only when set, and `era` (`"modern"` or
//! `"legacy"`, beside `timeout`, for every transport) only when it is not
//! `"auto"`.

use serde_json::{Map, Value, json};

use crate::diagnostic::{Code, Diagnostic};
use crate::json::{self, FieldReader, Json, Row, join_index};
use crate::model::{
    EnvHeader, HttpConfig, InputPrompt, OAuthConfig, OAuthGrant, ProtocolEra, SecretEntry,
    ServerConfig, StdioConfig, ToolFilter, TransportConfig, TransportKind,
};
use crate::secret::SecretValue;

use super::{
    DocumentError, EntryError, Format, ParsedDocument, read_era, read_oauth, reject_duplicate_ids,
    top_level_not_object, transport_kind_from_name,
};

/// The store version this build reads and writes.
pub const STORE_VERSION: u64 = 1;

const STDIO_FIELDS: [&str; 5] = ["command", "args", "env", "envVars", "cwd"];
const HTTP_FIELDS: [&str; 5] = ["url", "bearerTokenEnv", "headers", "envHeaders", "oauth"];

pub(super) fn read(root: &Json) -> Result<ParsedDocument, DocumentError> {
    let Some(_) = root.as_object() else {
        return Err(top_level_not_object(root));
    };
    match root.get("version") {
        Some(Json::Number(n)) if n.as_u64() == Some(STORE_VERSION) => {}
        Some(Json::Number(n)) => {
            return Err(DocumentError::UnsupportedVersion {
                found: n.to_string(),
            });
        }
        Some(other) => {
            return Err(DocumentError::Shape {
                path: String::from("version"),
                message: format!("`version` must be the number 1, not {}", other.type_name()),
            });
        }
        None => {
            return Err(DocumentError::Shape {
                path: String::from("version"),
                message: String::from(
                    "`version` is missing; a store file starts with {\"version\": 1, \"servers\": [...]}",
                ),
            });
        }
    }
    let items: &[Json] = match root.get("servers") {
        None | Some(Json::Null) => &[],
        Some(Json::Array(items)) => items,
        Some(other) => {
            return Err(DocumentError::Shape {
                path: String::from("servers"),
                message: format!("`servers` must be an array, not {}", other.type_name()),
            });
        }
    };
    let entries = items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let path = join_index("servers", index);
            let entry = read_server(item, &path);
            (format!("{path}.id"), entry)
        })
        .collect();
    Ok(ParsedDocument {
        format: Some(Format::StoreV1),
        entries: reject_duplicate_ids(entries, "server id"),
        warnings: Vec::new(),
    })
}

fn read_server(item: &Json, path: &str) -> Result<ServerConfig, EntryError> {
    let Some(members) = item.as_object() else {
        return Err(EntryError::new(
            None,
            vec![Diagnostic::new(
                Code::InvalidField,
                None,
                path,
                format!("a server must be an object, not {}", item.type_name()),
            )],
        ));
    };
    // The id names the server in every later diagnostic, so read it first.
    let id = match item.get("id") {
        Some(Json::String(id)) => Some(id.clone()),
        _ => None,
    };
    let mut r = FieldReader::new(members, path, id.clone());
    let id = r.required_string("id");
    let name = r.string("name");
    let enabled = r.bool("enabled").unwrap_or(true);
    let description = r.string("description");
    let timeout_ms = r.millis("timeout");
    let call_timeout_ms = r.millis("callTimeout");
    let era = read_era(&mut r);
    let tools = read_tool_filter(&mut r);
    let inputs = read_inputs(&mut r);
    let mut misplaced = Vec::new();
    let transport = match r.raw("transport") {
        None | Some(Json::Null) => {
            let field = r.field_path("transport");
            r.problem(
                Code::MissingTransport,
                field,
                "`transport` is required: {\"type\": \"stdio\", ...} or {\"type\": \"http\", ...}",
            );
            None
        }
        Some(Json::Object(fields)) => {
            let mut t = FieldReader::new(fields, r.field_path("transport"), r.server());
            let transport = read_transport(&mut t, &mut misplaced);
            r.problems.append(&mut t.problems);
            transport
        }
        Some(other) => {
            let field = r.field_path("transport");
            let message = format!("`transport` must be an object, not {}", other.type_name());
            r.problem(Code::InvalidField, field, message);
            None
        }
    };
    match (id, transport) {
        (Some(id), Some(transport)) if r.problems.is_empty() => {
            let mut config = ServerConfig::new(id, transport);
            if let Some(name) = name {
                config.name = name;
            }
            config.enabled = enabled;
            config.description = description;
            config.timeout_ms = timeout_ms;
            config.call_timeout_ms = call_timeout_ms;
            config.era = era;
            config.tools = tools;
            config.inputs = inputs;
            config.misplaced_fields = misplaced;
            Ok(config)
        }
        _ => Err(EntryError::new(r.server(), r.problems)),
    }
}

/// Reads the optional `tools` object: `{"include": [...], "exclude": [...]}`
/// (see [`ToolFilter`]); absent is every tool.
fn read_tool_filter(r: &mut FieldReader<'_>) -> ToolFilter {
    let mut filter = ToolFilter::default();
    match r.raw("tools") {
        None | Some(Json::Null) => {}
        Some(Json::Object(fields)) => {
            let mut t = FieldReader::new(fields, r.field_path("tools"), r.server());
            if t.has("include") && !matches!(t.raw("include"), Some(Json::Null)) {
                filter.include = Some(t.string_array("include"));
            }
            filter.exclude = t.string_array("exclude");
            r.problems.append(&mut t.problems);
        }
        Some(other) => {
            let field = r.field_path("tools");
            let message = format!(
                "`tools` must be an object with `include` and `exclude` lists, not {}",
                other.type_name()
            );
            r.problem(Code::InvalidField, field, message);
        }
    }
    filter
}

/// Reads the optional `inputs` array: `[{"id", "description"?, "password"?,
/// "default"?}]` (see [`InputPrompt`]).
fn read_inputs(r: &mut FieldReader<'_>) -> Vec<InputPrompt> {
    let items = match r.raw("inputs") {
        None | Some(Json::Null) => return Vec::new(),
        Some(Json::Array(items)) => items,
        Some(other) => {
            let field = r.field_path("inputs");
            let message = format!("`inputs` must be an array, not {}", other.type_name());
            r.problem(Code::InvalidField, field, message);
            return Vec::new();
        }
    };
    let base = r.field_path("inputs");
    let mut inputs = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let path = join_index(&base, index);
        let Json::Object(fields) = item else {
            let message = format!("every input must be an object, not {}", item.type_name());
            r.problem(Code::InvalidField, path, message);
            continue;
        };
        let mut i = FieldReader::new(fields, path, r.server());
        if let Some(id) = i.required_string("id") {
            let mut input = InputPrompt::new(id);
            input.description = i.string("description");
            input.password = i.bool("password").unwrap_or(false);
            input.default = i.string("default");
            inputs.push(input);
        }
        r.problems.append(&mut i.problems);
    }
    inputs
}

fn read_transport(t: &mut FieldReader<'_>, misplaced: &mut Vec<String>) -> Option<TransportConfig> {
    let kind_name = t.required_string("type")?;
    let Some(kind) = transport_kind_from_name(&kind_name) else {
        let field = t.field_path("type");
        t.problem(
            Code::UnknownTransport,
            field,
            format!("unknown transport `{kind_name}`; use `stdio`, `http` or `sse`"),
        );
        return None;
    };
    let foreign: &[&str] = match kind {
        TransportKind::Stdio => &HTTP_FIELDS,
        _ => &STDIO_FIELDS,
    };
    misplaced.extend(
        foreign
            .iter()
            .filter(|key| t.has(key))
            .map(|key| format!("transport.{key}")),
    );
    Some(match kind {
        TransportKind::Stdio => {
            let mut stdio = StdioConfig::new(t.string("command").unwrap_or_default());
            stdio.args = t.string_array("args");
            stdio.env = t
                .key_value_rows("env")
                .into_iter()
                .map(secret_entry)
                .collect();
            stdio.env_passthrough = t.string_array("envVars");
            stdio.cwd = t.string("cwd").filter(|cwd| !cwd.is_empty());
            TransportConfig::Stdio(stdio)
        }
        TransportKind::Http | TransportKind::Sse => {
            let mut http = HttpConfig::new(t.string("url").unwrap_or_default());
            http.bearer_token_env = t.string("bearerTokenEnv").filter(|v| !v.is_empty());
            http.headers = t
                .key_value_rows("headers")
                .into_iter()
                .map(secret_entry)
                .collect();
            http.env_headers = t
                .key_value_rows("envHeaders")
                .into_iter()
                .map(|row| EnvHeader::new(row.key, row.value))
                .collect();
            http.oauth = read_oauth(t);
            if kind == TransportKind::Sse {
                TransportConfig::Sse(http)
            } else {
                TransportConfig::Http(http)
            }
        }
    })
}

/// The rule: "Retain the same key and saved marker with an empty value to
/// preserve it"; a nonempty value replaces the old one even when marked saved.
fn secret_entry(row: Row) -> SecretEntry {
    if row.saved && row.value.is_empty() {
        SecretEntry::saved(row.key)
    } else {
        SecretEntry::new(row.key, row.value)
    }
}

/// Writes servers as a version 1 store document: pretty-printed JSON with a
/// trailing newline.
///
/// Literal values are written as they are (the store keeps them in
/// plaintext); [`SecretValue::Saved`] rows are written
/// `{"key": K, "value": "", "saved": true}`, which is also the shape `list()`
/// results take when a host sends them to a UI. Legacy and misplaced fields
/// are never written.
///
/// ```
/// use mcp_config::{parse_store_v1, write_store_v1, HttpConfig, ServerConfig, TransportConfig};
///
/// let server = ServerConfig::new("docs", TransportConfig::Http(HttpConfig::new("https://example.com/mcp")));
/// let text = write_store_v1(&[server.clone()]);
/// let back = parse_store_v1(&text)?;
/// assert_eq!(back.servers().next(), Some(&server));
/// # Ok::<(), mcp_config::DocumentError>(())
/// ```
pub fn write_store_v1(servers: &[ServerConfig]) -> String {
    let document = json!({
        "version": STORE_VERSION,
        "servers": servers.iter().map(server_to_store_json).collect::<Vec<_>>(),
    });
    let mut text = serde_json::to_string_pretty(&document)
        .unwrap_or_else(|_| unreachable!("a JSON value always serializes"));
    text.push('\n');
    text
}

/// One server in the store's JSON shape (an element of its `servers` array).
///
/// Meant for a host's API: serialize a redacted server (from `Store::list`)
/// for a UI, and read the UI's answer back with [`parse_store_server`].
/// Serializing an unredacted server writes its secret values.
pub fn server_to_store_json(server: &ServerConfig) -> Value {
    let mut object = Map::new();
    object.insert("id".into(), Value::String(server.id.clone()));
    object.insert("name".into(), Value::String(server.name.clone()));
    object.insert("enabled".into(), Value::Bool(server.enabled));
    if let Some(description) = &server.description {
        object.insert("description".into(), Value::String(description.clone()));
    }
    if let Some(timeout) = server.timeout_ms {
        object.insert("timeout".into(), Value::from(timeout));
    }
    if let Some(timeout) = server.call_timeout_ms {
        object.insert("callTimeout".into(), Value::from(timeout));
    }
    if !server.tools.is_all() {
        let mut tools = Map::new();
        if let Some(include) = &server.tools.include {
            tools.insert("include".into(), json!(include));
        }
        if !server.tools.exclude.is_empty() {
            tools.insert("exclude".into(), json!(server.tools.exclude));
        }
        object.insert("tools".into(), Value::Object(tools));
    }
    if !server.inputs.is_empty() {
        let inputs = server.inputs.iter().map(input_json).collect();
        object.insert("inputs".into(), Value::Array(inputs));
    }
    // `auto` is what an absent `era` means, so it is left out: stores
    // written before the field existed read back byte for byte the same.
    if server.era != ProtocolEra::Auto {
        object.insert("era".into(), Value::String(server.era.as_str().into()));
    }
    let transport = match &server.transport {
        TransportConfig::Stdio(stdio) => json!({
            "type": "stdio",
            "command": stdio.command,
            "args": stdio.args,
            "env": stdio.env.iter().map(row_json).collect::<Vec<_>>(),
            "envVars": stdio.env_passthrough,
            "cwd": stdio.cwd.clone().unwrap_or_default(),
        }),
        TransportConfig::Http(http) | TransportConfig::Sse(http) => {
            let mut transport = json!({
                "type": server.transport.kind().as_str(),
                "url": http.url,
                "bearerTokenEnv": http.bearer_token_env.clone().unwrap_or_default(),
                "headers": http.headers.iter().map(row_json).collect::<Vec<_>>(),
                "envHeaders": http.env_headers.iter()
                    .map(|h| json!({"key": h.header, "value": h.var}))
                    .collect::<Vec<_>>(),
            });
            if let (Some(oauth), Value::Object(fields)) = (&http.oauth, &mut transport) {
                fields.insert("oauth".into(), oauth_json(oauth));
            }
            transport
        }
    };
    object.insert("transport".into(), transport);
    Value::Object(object)
}

/// The `oauth` object: only the fields that are set. It holds no secret
/// (the client secret is named by its variable).
fn oauth_json(oauth: &OAuthConfig) -> Value {
    let mut object = Map::new();
    if let Some(client_id) = &oauth.client_id {
        object.insert("clientId".into(), Value::String(client_id.clone()));
    }
    if let Some(var) = &oauth.client_secret_env {
        object.insert("clientSecretEnv".into(), Value::String(var.clone()));
    }
    if !oauth.scopes.is_empty() {
        object.insert("scopes".into(), json!(oauth.scopes));
    }
    if let Some(url) = &oauth.client_metadata_url {
        object.insert("clientMetadataUrl".into(), Value::String(url.clone()));
    }
    if let Some(port) = oauth.redirect_port {
        object.insert("redirectPort".into(), Value::from(port));
    }
    // The default grant is left out, so stores written before `grant`
    // existed read back byte for byte the same.
    if oauth.grant != OAuthGrant::default() {
        object.insert("grant".into(), Value::String(oauth.grant.as_str().into()));
    }
    if let Some(path) = &oauth.assertion_file {
        object.insert("assertionFile".into(), Value::String(path.clone()));
    }
    if let Some(var) = &oauth.assertion_env {
        object.insert("assertionEnv".into(), Value::String(var.clone()));
    }
    Value::Object(object)
}

/// One `inputs` element: the prompt, never an answer.
fn input_json(input: &InputPrompt) -> Value {
    let mut object = Map::new();
    object.insert("id".into(), Value::String(input.id.clone()));
    if let Some(description) = &input.description {
        object.insert("description".into(), Value::String(description.clone()));
    }
    if input.password {
        object.insert("password".into(), Value::Bool(true));
    }
    if let Some(default) = &input.default {
        object.insert("default".into(), Value::String(default.clone()));
    }
    Value::Object(object)
}

fn row_json(entry: &SecretEntry) -> Value {
    match &entry.value {
        SecretValue::Literal(secret) => json!({"key": entry.key, "value": secret.expose()}),
        SecretValue::Saved => json!({"key": entry.key, "value": "", "saved": true}),
    }
}

/// Reads one server in the store's JSON shape, as a host's API receives it
/// from a UI (`saved: true` rows with empty values keep stored secrets).
///
/// ```
/// use mcp_config::{parse_store_server, SecretValue, TransportConfig};
///
/// let server = parse_store_server(r#"{"id": "gh", "name": "GitHub", "enabled": true,
///   "transport": {"type": "stdio", "command": "gh-mcp",
///                 "env": [{"key": "GH_TOKEN", "value": "", "saved": true}]}}"#)?;
/// let TransportConfig::Stdio(stdio) = &server.transport else { unreachable!() };
/// assert_eq!(stdio.env[0].value, SecretValue::Saved);
/// # Ok::<(), mcp_config::EntryError>(())
/// ```
pub fn parse_store_server(text: &str) -> Result<ServerConfig, EntryError> {
    let root = json::parse(text).map_err(|error| {
        EntryError::new(
            None,
            vec![Diagnostic::new(
                Code::ParseError,
                None,
                "",
                format!(
                    "not valid JSON at line {} column {}: {}",
                    error.line, error.column, error.message
                ),
            )],
        )
    })?;
    read_server(&root, "")
}

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

use serde::Serialize;
use serde_json::Value;

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
    let document = StoreDocument {
        version: STORE_VERSION,
        servers: servers.iter().map(StoreServer::new).collect(),
    };
    let mut text = serde_json::to_string_pretty(&document)
        .unwrap_or_else(|_| unreachable!("the store's shape always serializes"));
    text.push('\n');
    text
}

/// One server in the store's JSON shape (an element of its `servers` array).
///
/// Meant for a host's API: serialize a redacted server (from `Store::list`)
/// for a UI, and read the UI's answer back with [`parse_store_server`].
/// Serializing an unredacted server writes its secret values. The object's
/// keys come in the order [`StoreServer`] writes them only if the host's
/// `serde_json` keeps insertion order (its `preserve_order` feature);
/// serialize a [`StoreServer`] for text in the store's order.
pub fn server_to_store_json(server: &ServerConfig) -> Value {
    serde_json::to_value(StoreServer::new(server))
        .unwrap_or_else(|_| unreachable!("the store's shape always serializes"))
}

/// A server serialized in the store's JSON shape, its keys always in the
/// store's order (`id`, `name`, `enabled`, the optional fields, `transport`
/// last): a struct writes its fields in declaration order whatever
/// `serde_json::Map` is built with.
///
/// ```
/// use mcp_config::{HttpConfig, ServerConfig, StoreServer, TransportConfig};
///
/// let server = ServerConfig::new("docs", TransportConfig::Http(HttpConfig::new("https://example.com/mcp")));
/// let text = serde_json::to_string(&StoreServer::new(&server))?;
/// assert!(text.starts_with(r#"{"id":"docs","name":"docs","enabled":true,"transport":{"type":"http","#));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreServer<'a> {
    id: &'a str,
    name: &'a str,
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call_timeout: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<StoreTools<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    inputs: Vec<StoreInput<'a>>,
    /// `auto` is what an absent `era` means, so it is left out: stores
    /// written before the field existed read back byte for byte the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    era: Option<&'static str>,
    transport: StoreTransport<'a>,
}

impl<'a> StoreServer<'a> {
    /// The store's shape of `server`; legacy and misplaced fields are left out.
    #[must_use]
    pub fn new(server: &'a ServerConfig) -> Self {
        let tools = (!server.tools.is_all()).then(|| StoreTools {
            include: server.tools.include.as_deref(),
            exclude: &server.tools.exclude,
        });
        let transport = match &server.transport {
            TransportConfig::Stdio(stdio) => StoreTransport::Stdio {
                kind: "stdio",
                command: &stdio.command,
                args: &stdio.args,
                env: stdio.env.iter().map(StoreRow::new).collect(),
                env_vars: &stdio.env_passthrough,
                cwd: stdio.cwd.as_deref().unwrap_or_default(),
            },
            TransportConfig::Http(http) | TransportConfig::Sse(http) => StoreTransport::Http {
                kind: server.transport.kind().as_str(),
                url: &http.url,
                bearer_token_env: http.bearer_token_env.as_deref().unwrap_or_default(),
                headers: http.headers.iter().map(StoreRow::new).collect(),
                env_headers: http
                    .env_headers
                    .iter()
                    .map(|h| StoreEnvHeader {
                        key: &h.header,
                        value: &h.var,
                    })
                    .collect(),
                oauth: http.oauth.as_ref().map(StoreOAuth::new),
            },
        };
        Self {
            id: &server.id,
            name: &server.name,
            enabled: server.enabled,
            description: server.description.as_deref(),
            timeout: server.timeout_ms,
            call_timeout: server.call_timeout_ms,
            tools,
            inputs: server.inputs.iter().map(StoreInput::new).collect(),
            era: (server.era != ProtocolEra::Auto).then(|| server.era.as_str()),
            transport,
        }
    }
}

/// `tools`: `{include, exclude}`, each only when set.
#[derive(Debug, Serialize)]
struct StoreTools<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<&'a [String]>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    exclude: &'a [String],
}

/// `transport`: every field of its kind, empty strings and arrays included.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum StoreTransport<'a> {
    #[serde(rename_all = "camelCase")]
    Stdio {
        #[serde(rename = "type")]
        kind: &'static str,
        command: &'a str,
        args: &'a [String],
        env: Vec<StoreRow<'a>>,
        env_vars: &'a [String],
        cwd: &'a str,
    },
    #[serde(rename_all = "camelCase")]
    Http {
        #[serde(rename = "type")]
        kind: &'static str,
        url: &'a str,
        bearer_token_env: &'a str,
        headers: Vec<StoreRow<'a>>,
        env_headers: Vec<StoreEnvHeader<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        oauth: Option<StoreOAuth<'a>>,
    },
}

/// An `env` or `headers` row: a literal is written as it is (the store
/// keeps them in plaintext), a saved secret as
/// `{"key": K, "value": "", "saved": true}`.
#[derive(Debug, Serialize)]
struct StoreRow<'a> {
    key: &'a str,
    value: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    saved: bool,
}

impl<'a> StoreRow<'a> {
    fn new(entry: &'a SecretEntry) -> Self {
        match &entry.value {
            SecretValue::Literal(secret) => Self {
                key: &entry.key,
                value: secret.expose(),
                saved: false,
            },
            SecretValue::Saved => Self {
                key: &entry.key,
                value: "",
                saved: true,
            },
        }
    }
}

/// An `envHeaders` row: the header and the variable its value comes from.
#[derive(Debug, Serialize)]
struct StoreEnvHeader<'a> {
    key: &'a str,
    value: &'a str,
}

/// The `oauth` object: only the fields that are set. It holds no secret
/// (the client secret is named by its variable).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StoreOAuth<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_secret_env: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    scopes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    client_metadata_url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    redirect_port: Option<u16>,
    /// The default grant is left out, so stores written before `grant`
    /// existed read back byte for byte the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    grant: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assertion_file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assertion_env: Option<&'a str>,
}

impl<'a> StoreOAuth<'a> {
    fn new(oauth: &'a OAuthConfig) -> Self {
        Self {
            client_id: oauth.client_id.as_deref(),
            client_secret_env: oauth.client_secret_env.as_deref(),
            scopes: &oauth.scopes,
            client_metadata_url: oauth.client_metadata_url.as_deref(),
            redirect_port: oauth.redirect_port,
            grant: (oauth.grant != OAuthGrant::default()).then(|| oauth.grant.as_str()),
            assertion_file: oauth.assertion_file.as_deref(),
            assertion_env: oauth.assertion_env.as_deref(),
        }
    }
}

/// One `inputs` element: the prompt, never an answer.
#[derive(Debug, Serialize)]
struct StoreInput<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    password: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    default: Option<&'a str>,
}

impl<'a> StoreInput<'a> {
    fn new(input: &'a InputPrompt) -> Self {
        Self {
            id: &input.id,
            description: input.description.as_deref(),
            password: input.password,
            default: input.default.as_deref(),
        }
    }
}

/// The whole store document.
#[derive(Debug, Serialize)]
struct StoreDocument<'a> {
    version: u64,
    servers: Vec<StoreServer<'a>>,
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

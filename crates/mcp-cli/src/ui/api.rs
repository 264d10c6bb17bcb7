//! The page's JSON API: server configs in store shape, with secrets write-only, over the manager's methods.
//!
//! A config travels as the store writes it: `{id, name, enabled, era, transport}` (`era`: `auto`, `modern`
//! or `legacy`, `auto` when absent) with `transport` either
//! `{type: "stdio", command, args, env: [{key, value, saved}], envVars, cwd}`
//! or `{type: "http" | "sse", url, bearerTokenEnv, headers: [{key, value,
//! saved}], envHeaders: [{key, value}]}`. Responses never carry a literal
//! env or header value: every row goes out as `value: ""` with
//! `saved: true`, whatever the manager handed over. A row sent back with
//! `saved: true` and an empty value keeps the stored value; a row left out
//! deletes it.

use std::path::Path;

use http::{Method, StatusCode};
use mcp_config::{
    EnvHeader, HttpConfig, ProtocolEra, SecretEntry, ServerConfig, StdioConfig, TransportConfig,
};
use mcp_manager::{ManagerError, McpManager, ServerStatus};
use serde_json::{Value, json};

use super::App;
use super::response::{ResponseBody, json};

/// Answers an `/api/...` request other than the event stream.
pub(crate) async fn route(
    app: &App,
    method: &Method,
    path: &str,
    body: &[u8],
) -> http::Response<ResponseBody> {
    let rest = path.trim_start_matches("/api/servers");
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let manager = &app.manager;
    match (method, segments.as_slice()) {
        (&Method::GET, []) => {
            let listing = listing(manager, app.store.path()).await;
            let status = if listing.get("error").is_some() {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::OK
            };
            json(status, &listing)
        }
        (&Method::POST, []) => match parse_config(body) {
            Ok(config) => {
                let id = config.id.clone();
                saved(manager, &id, manager.create(config).await)
            }
            Err(message) => bad_request(&message),
        },
        (&Method::PUT, [id]) => match parse_config(body) {
            Ok(config) if config.id == *id => saved(manager, id, manager.save(config).await),
            Ok(_) => bad_request("the id in the path and the body differ; ids cannot be renamed"),
            Err(message) => bad_request(&message),
        },
        (&Method::DELETE, [id]) => done(manager.remove(id).await),
        (&Method::POST, [id, "enabled"]) => {
            match serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| v.get("enabled").and_then(Value::as_bool))
            {
                Some(enabled) => done(manager.set_enabled(id, enabled).await),
                None => bad_request("send {\"enabled\": true} or {\"enabled\": false}"),
            }
        }
        (&Method::POST, [id, "retry"]) => done(manager.retry(id)),
        _ => json(
            StatusCode::NOT_FOUND,
            &json!({"error": {"code": "not_found", "message": "no such API route"}}),
        ),
    }
}

/// Every stored server with its status and tools, or the store's error:
/// `{store, servers: [...]}` or `{store, error: {...}}`.
pub(crate) async fn listing(manager: &McpManager, store: &Path) -> Value {
    let store_path = store.display().to_string();
    match manager.list().await {
        Ok(servers) => {
            let servers: Vec<Value> = servers
                .iter()
                .map(|server| {
                    let tools: Vec<Value> = manager
                        .catalog(&server.config.id)
                        .filter(|_| server.status.is_connected())
                        .map(|catalog| {
                            catalog
                                .tools()
                                .iter()
                                .map(|tool| json!({"name": tool.name, "description": tool.description}))
                                .collect()
                        })
                        .unwrap_or_default();
                    json!({
                        "id": server.config.id,
                        "name": server.config.name,
                        "enabled": server.config.enabled,
                        "transport": server.config.transport.kind().as_str(),
                        "source": store_path,
                        "status": server.status.as_str(),
                        "error": status_error(&server.status),
                        "toolCount": server.tool_count,
                        "generation": server.generation,
                        "era": server.protocol_version.map(|v| v.era().as_str()),
                        "protocolVersion": server.protocol_version.map(|v| v.as_str()),
                        "tools": tools,
                        "config": config_json(&server.config),
                    })
                })
                .collect();
            json!({"store": store_path, "servers": servers})
        }
        Err(error) => json!({"store": store_path, "error": error_json(&error)}),
    }
}

fn status_error(status: &ServerStatus) -> Value {
    match status.error() {
        Some(error) => json!({
            "code": error.code.as_str(),
            "message": error.message,
            "configKey": error.config_key,
        }),
        None => Value::Null,
    }
}

/// A config as the page edits it. Secret rows never carry their value.
fn config_json(config: &ServerConfig) -> Value {
    let transport = match &config.transport {
        TransportConfig::Stdio(stdio) => json!({
            "type": "stdio",
            "command": stdio.command,
            "args": stdio.args,
            "env": secret_rows(&stdio.env),
            "envVars": stdio.env_passthrough,
            "cwd": stdio.cwd.clone().unwrap_or_default(),
        }),
        TransportConfig::Http(http) | TransportConfig::Sse(http) => json!({
            "type": config.transport.kind().as_str(),
            "url": http.url,
            "bearerTokenEnv": http.bearer_token_env.clone().unwrap_or_default(),
            "headers": secret_rows(&http.headers),
            "envHeaders": http.env_headers.iter()
                .map(|h| json!({"key": h.header, "value": h.var}))
                .collect::<Vec<_>>(),
        }),
        _ => json!({"type": config.transport.kind().as_str()}),
    };
    json!({
        "id": config.id,
        "name": config.name,
        "enabled": config.enabled,
        "era": config.era.as_str(),
        "transport": transport,
    })
}

/// Write-only rows: the key, an empty value and the "saved" marker. The
/// value is never read here, so it cannot leak through this function.
fn secret_rows(rows: &[SecretEntry]) -> Vec<Value> {
    rows.iter()
        .map(|row| json!({"key": row.key, "value": "", "saved": true}))
        .collect()
}

/// Reads a config from the page. Validation (ids, absolute cwd, URL rules,
/// duplicate headers) is the store's; this only checks the shape.
fn parse_config(body: &[u8]) -> Result<ServerConfig, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let id = string(&value, "id")?;
    let transport = value.get("transport").ok_or("`transport` is missing")?;
    let kind = string(transport, "type")?;
    let transport = match kind.as_str() {
        "stdio" => {
            let mut stdio = StdioConfig::new(string(transport, "command")?);
            stdio.args = strings(transport, "args")?;
            stdio.env = secret_entries(transport, "env")?;
            stdio.env_passthrough = strings(transport, "envVars")?
                .into_iter()
                .filter(|name| !name.trim().is_empty())
                .collect();
            let cwd = optional_string(transport, "cwd")?;
            stdio.cwd = cwd.filter(|cwd| !cwd.is_empty());
            TransportConfig::Stdio(stdio)
        }
        "http" | "sse" => {
            let mut http = HttpConfig::new(string(transport, "url")?);
            http.bearer_token_env =
                optional_string(transport, "bearerTokenEnv")?.filter(|v| !v.is_empty());
            http.headers = secret_entries(transport, "headers")?;
            http.env_headers = rows(transport, "envHeaders")?
                .into_iter()
                .map(|(key, value, _)| EnvHeader::new(key, value))
                .collect();
            if kind == "http" {
                TransportConfig::Http(http)
            } else {
                TransportConfig::Sse(http)
            }
        }
        other => return Err(format!("unknown transport type `{other}`")),
    };
    let mut config = ServerConfig::new(id.clone(), transport);
    config.name = optional_string(&value, "name")?
        .filter(|name| !name.trim().is_empty())
        .unwrap_or(id);
    config.enabled = value
        .get("enabled")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    // The page sends back the era it was given, so an edit keeps it.
    config.era = match optional_string(&value, "era")? {
        None => ProtocolEra::Auto,
        Some(name) => ProtocolEra::from_name(&name).ok_or_else(|| {
            let accepted: Vec<String> = ProtocolEra::ALL
                .iter()
                .map(|era| format!("`{era}`"))
                .collect();
            format!("`era` must be one of {}", accepted.join(", "))
        })?,
    };
    Ok(config)
}

/// Secret rows: `saved: true` with an empty value keeps the stored value
/// Any other row is a new literal.
fn secret_entries(value: &Value, field: &str) -> Result<Vec<SecretEntry>, String> {
    Ok(rows(value, field)?
        .into_iter()
        .map(|(key, value, saved)| {
            if saved && value.is_empty() {
                SecretEntry::saved(key)
            } else {
                SecretEntry::new(key, value)
            }
        })
        .collect())
}

/// `[{key, value, saved?}]`, rows with an empty key skipped (an empty row
/// the person added and left blank).
fn rows(value: &Value, field: &str) -> Result<Vec<(String, String, bool)>, String> {
    let Some(list) = value.get(field) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| format!("`{field}` must be a list"))?;
    let mut out = Vec::new();
    for row in list {
        let key = row.get("key").and_then(Value::as_str).unwrap_or_default();
        let text = row.get("value").and_then(Value::as_str).unwrap_or_default();
        let saved = row.get("saved").and_then(Value::as_bool).unwrap_or(false);
        if !key.trim().is_empty() {
            out.push((key.trim().to_owned(), text.to_owned(), saved));
        }
    }
    Ok(out)
}

fn string(value: &Value, field: &str) -> Result<String, String> {
    optional_string(value, field)?.ok_or_else(|| format!("`{field}` is missing"))
}

fn optional_string(value: &Value, field: &str) -> Result<Option<String>, String> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{field}` must be a string")),
    }
}

fn strings(value: &Value, field: &str) -> Result<Vec<String>, String> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("`{field}` must be a list of strings"))
            })
            .collect(),
        Some(_) => Err(format!("`{field}` must be a list of strings")),
    }
}

/// A save's answer: what it did and the status right after.
fn saved(
    manager: &McpManager,
    id: &str,
    result: Result<mcp_manager::SaveReport, ManagerError>,
) -> http::Response<ResponseBody> {
    match result {
        Ok(report) => json(
            if report.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            &json!({
                "created": report.created,
                "status": report.status.as_str(),
                // The page waits for a status of this generation or later,
                // so that a list sent just before the save cannot end it.
                "generation": manager.generation(id).unwrap_or(0),
                "droppedSecrets": report.dropped_secrets.iter()
                    .map(|d| json!({"field": d.field, "key": d.key}))
                    .collect::<Vec<_>>(),
            }),
        ),
        Err(error) => failed(&error),
    }
}

fn done(result: Result<(), ManagerError>) -> http::Response<ResponseBody> {
    match result {
        Ok(()) => json(StatusCode::OK, &json!({"ok": true})),
        Err(error) => failed(&error),
    }
}

fn failed(error: &ManagerError) -> http::Response<ResponseBody> {
    let status = match error {
        ManagerError::UnknownServer { .. }
        | ManagerError::Store(mcp_config::StoreError::NotFound { .. }) => StatusCode::NOT_FOUND,
        ManagerError::Invalid { .. }
        | ManagerError::Disabled { .. }
        | ManagerError::Store(
            mcp_config::StoreError::Invalid { .. } | mcp_config::StoreError::DuplicateId { .. },
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    json(status, &json!({"error": error_json(error)}))
}

/// An error for the page: code, message (never a value) and, for invalid
/// configs, every diagnostic with its field.
fn error_json(error: &ManagerError) -> Value {
    let diagnostics = match error {
        ManagerError::Invalid { diagnostics, .. }
        | ManagerError::Store(mcp_config::StoreError::Invalid { diagnostics, .. }) => diagnostics
            .iter()
            .map(|d| json!({"field": d.field, "code": d.code(), "message": d.message}))
            .collect(),
        _ => Vec::new(),
    };
    json!({
        "code": error.code(),
        "message": error.to_string(),
        "diagnostics": diagnostics,
    })
}

fn bad_request(message: &str) -> http::Response<ResponseBody> {
    json(
        StatusCode::BAD_REQUEST,
        &json!({"error": {"code": "bad_request", "message": message, "diagnostics": []}}),
    )
}

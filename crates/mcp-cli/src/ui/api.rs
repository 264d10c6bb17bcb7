//! The page's JSON API for servers: every source's servers with their status, and the store's servers edited through the manager.
//!
//! `GET /api/servers` answers `{store, servers: [...]}` (or `{store, error}`
//! when the store cannot be read). Each server is the row `mcpctl servers
//! --json` prints (id, name, status, transport, tool count, source with its
//! level, label, host and file, error with its stable code, era, names of
//! env variables and headers, `also_in`, `shadows`, `shadowed_by`), plus:
//! `editable` (its definition is in the store, so the page may change it),
//! `copyable` (another source's definition the store does not have yet),
//! `generation`, `description`, `config` (the definition in the store's
//! JSON shape, `mcp_config::server_to_store_json`, with every env and
//! header value replaced by the "saved" marker), `catalog` (a connected
//! server's tools: name, title, description, input schema), `canLogin`
//! (an HTTP server, which may use OAuth), `login` (a login started from
//! the page: `{state, message}`), `logging` (it declares `logging`) and
//! `logLevel` (the level chosen in the page, or null).
//!
//! A config travels as the store writes it (`mcp_config::parse_store_server`
//! reads the page's answer back, so every field of the store format
//! round-trips: description, timeouts, tool filter, inputs, era, OAuth).
//! Responses never carry a literal env or header value; a row sent back
//! with `saved: true` and an empty value keeps the stored value; a row
//! left out deletes it.
//!
//! | method | path | what |
//! |---|---|---|
//! | POST | `/api/servers` | create a store server |
//! | POST | `/api/servers/validate` | the problems a save would report, saving nothing |
//! | PUT | `/api/servers/{id}` | save (edit) a store server |
//! | DELETE | `/api/servers/{id}` | remove a store server |
//! | POST | `/api/servers/{id}/enabled` | `{"enabled": bool}`, a store server |
//! | POST | `/api/servers/{id}/retry` | a fresh connection attempt, any server |
//! | POST | `/api/servers/{id}/copy` | copy another source's definition into the store |
//!
//! Changing a server another application's file defines is refused with
//! `read_only` (409): that file is the other application's.

use http::{Method, StatusCode};
use mcp_config::{
    Code, Diagnostic, DiscoveryEntry, ServerConfig, parse_store_server, server_to_store_json,
};
use mcp_manager::{ManagerError, McpManager};
use serde_json::{Value, json};

use super::App;
use super::response::{ResponseBody, json};
use crate::runtime::Runtime;

/// Answers an `/api/servers...` request.
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
            let listing = listing(app).await;
            let status = if listing.get("error").is_some() {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::OK
            };
            json(status, &listing)
        }
        (&Method::POST, ["validate"]) => match parse_config(body) {
            Ok(config) => {
                let mut problems = mcp_config::validate(&config);
                problems.extend(mcp_config::Store::id_problems(&config.id));
                json(
                    StatusCode::OK,
                    &json!({"diagnostics": problems.iter().map(diagnostic_json).collect::<Vec<_>>()}),
                )
            }
            Err(error) => json(StatusCode::BAD_REQUEST, &json!({"error": error})),
        },
        (&Method::POST, []) => match parse_config(body) {
            Ok(config) if !mcp_config::Store::id_problems(&config.id).is_empty() => json(
                StatusCode::BAD_REQUEST,
                &json!({"error": {
                    "code": "invalid_config",
                    "message": "the configuration cannot be used",
                    "diagnostics": mcp_config::Store::id_problems(&config.id)
                        .iter().map(diagnostic_json).collect::<Vec<_>>(),
                }}),
            ),
            Ok(config) => {
                let id = config.id.clone();
                let result = manager.create(config).await;
                app.reload().await;
                saved(manager, &id, result)
            }
            Err(error) => json(StatusCode::BAD_REQUEST, &json!({"error": error})),
        },
        (&Method::PUT, [id]) => match parse_config(body) {
            Ok(config) if config.id != *id => {
                bad_request("the id in the path and the body differ; ids cannot be renamed")
            }
            Ok(config) => {
                if let Some(refusal) = read_only(app, id).await {
                    return refusal;
                }
                let result = manager.save(config).await;
                app.reload().await;
                saved(manager, id, result)
            }
            Err(error) => json(StatusCode::BAD_REQUEST, &json!({"error": error})),
        },
        (&Method::DELETE, [id]) => {
            if let Some(refusal) = read_only(app, id).await {
                return refusal;
            }
            let result = manager.remove(id).await;
            app.reload().await;
            done(result)
        }
        (&Method::POST, [id, "enabled"]) => {
            let Some(enabled) = serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| v.get("enabled").and_then(Value::as_bool))
            else {
                return bad_request("send {\"enabled\": true} or {\"enabled\": false}");
            };
            if let Some(refusal) = read_only(app, id).await {
                return refusal;
            }
            let result = manager.set_enabled(id, enabled).await;
            app.reload().await;
            done(result)
        }
        (&Method::POST, [id, "retry"]) => done(manager.retry(id)),
        (&Method::POST, [id, "copy"]) => copy(app, id).await,
        _ => not_found(),
    }
}

/// The listing (see the module documentation).
pub(crate) async fn listing(app: &App) -> Value {
    let store_path = app.store.path().display().to_string();
    let store = mcp_config::Store::open(app.store.path());
    let stored = match tokio::task::spawn_blocking(move || store.list()).await {
        Ok(Ok(stored)) => stored,
        Ok(Err(error)) => {
            return json!({"store": store_path, "error": {
                "code": error.code(),
                "message": mcp_proto::text::ErrorChain(&error).to_string(),
                "diagnostics": []}});
        }
        Err(_) => Vec::new(),
    };
    let runtime = app.runtime.read().await;
    let rows = crate::servers::with_shadowed(crate::servers::rows(&runtime), &runtime);
    let servers: Vec<Value> = rows
        .iter()
        // The project servers waiting for approval have their own list,
        // with what they would run (`/api/trust`).
        .filter(|row| row.error.as_ref().is_none_or(|e| e.code != "untrusted"))
        .map(|row| {
            let mut value = serde_json::to_value(row).unwrap_or(Value::Null);
            let Some(id) = row.id.as_deref() else {
                return value;
            };
            let shadowed = row.status == "shadowed";
            let from_store = row
                .source
                .as_ref()
                .and_then(|s| s.path.as_deref())
                .is_some_and(|p| p == store_path);
            let in_store = stored.iter().find(|c| c.id == id);
            let definition = if from_store {
                in_store.cloned()
            } else {
                definition(&runtime, id, shadowed).map(|c| c.redacted())
            };
            let catalog: Vec<Value> = if shadowed {
                Vec::new()
            } else {
                app.manager
                    .catalog(id)
                    .filter(|_| app.manager.status(id).is_some_and(|s| s.is_connected()))
                    .map(|catalog| {
                        catalog
                            .tools()
                            .iter()
                            .map(|tool| {
                                json!({
                                    "name": tool.name,
                                    "title": tool.title,
                                    "description": tool.description,
                                    "inputSchema": tool.input_schema,
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let object = value.as_object_mut().expect("a row is an object");
            object.insert("editable".into(), Value::Bool(from_store));
            object.insert(
                "copyable".into(),
                Value::Bool(!from_store && in_store.is_none() && definition.is_some()),
            );
            object.insert(
                "generation".into(),
                json!(if shadowed {
                    0
                } else {
                    app.manager.generation(id).unwrap_or(0)
                }),
            );
            object.insert(
                "description".into(),
                json!(definition.as_ref().and_then(|c| c.description.clone())),
            );
            object.insert(
                "canLogin".into(),
                Value::Bool(!shadowed && matches!(row.transport, Some("http" | "sse"))),
            );
            object.insert("login".into(), app.logins.state(id));
            object.insert(
                "config".into(),
                definition
                    .as_ref()
                    .map_or(Value::Null, server_to_store_json),
            );
            object.insert("catalog".into(), Value::Array(catalog));
            object.insert(
                "logging".into(),
                Value::Bool(
                    !shadowed
                        && app
                            .manager
                            .catalog(id)
                            .is_some_and(|c| c.capabilities().logging.is_some()),
                ),
            );
            object.insert(
                "logLevel".into(),
                json!(app.manager.logging_level(id).map(|level| level.as_str())),
            );
            value
        })
        .collect();
    json!({"store": store_path, "servers": servers})
}

/// The definition of `id` in the run's report: the one used, or the
/// shadowed one.
fn definition(runtime: &Runtime, id: &str, shadowed: bool) -> Option<ServerConfig> {
    let report = &runtime.report;
    let entry = if shadowed {
        report
            .shadowed
            .iter()
            .find(|s| s.id == id)
            .map(|s| &s.entry)?
    } else {
        report.entries.iter().find(|e| e.server_id() == Some(id))?
    };
    match entry {
        DiscoveryEntry::Server(server) | DiscoveryEntry::Disabled(server) => {
            Some(server.config.clone())
        }
        _ => None,
    }
}

/// `read_only` when `id` is not one of the store's servers.
async fn read_only(app: &App, id: &str) -> Option<http::Response<ResponseBody>> {
    let store = mcp_config::Store::open(app.store.path());
    let owned = id.to_owned();
    let in_store = tokio::task::spawn_blocking(move || {
        store
            .list()
            .map(|servers| servers.iter().any(|s| s.id == owned))
    })
    .await
    .ok()?
    .ok()?;
    if in_store {
        return None;
    }
    let runtime = app.runtime.read().await;
    let source = runtime
        .manager
        .source(id)
        .map(|s| s.path.map_or(s.provider_label, |p| p.display().to_string()));
    Some(match source {
        Some(source) => json(
            StatusCode::CONFLICT,
            &json!({"error": {"code": "read_only", "message": format!(
                "`{id}` is defined in {}, not in mcpctl's store; copy it into the store to change it here",
                crate::output::line(&source)), "diagnostics": []}}),
        ),
        None => not_found(),
    })
}

/// Copies another source's definition of `id`, secrets included, into the
/// store (`Store::create`: validated, written owner-only, values kept as
/// write-only secrets), then discovers again so the store's copy is the one
/// listed and used where the store wins.
async fn copy(app: &App, id: &str) -> http::Response<ResponseBody> {
    let config = {
        let runtime = app.runtime.read().await;
        definition(&runtime, id, false).or_else(|| definition(&runtime, id, true))
    };
    let Some(mut config) = config else {
        return not_found();
    };
    // The store keeps what the person wrote, not where it was read from.
    config.origins = mcp_config::Origins::default();
    let result = app.manager.create(config).await;
    app.reload().await;
    saved(&app.manager, id, result)
}

/// Reads a config from the page, in the store's shape.
fn parse_config(body: &[u8]) -> Result<ServerConfig, Value> {
    let text = std::str::from_utf8(body).map_err(
        |_| json!({"code": "bad_request", "message": "the body is not UTF-8", "diagnostics": []}),
    )?;
    parse_store_server(text).map_err(|error| {
        json!({
            "code": "invalid_config",
            "message": "the configuration cannot be used",
            "diagnostics": error.diagnostics.iter().map(diagnostic_json).collect::<Vec<_>>(),
        })
    })
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
pub(crate) fn error_json(error: &ManagerError) -> Value {
    let diagnostics: Vec<Value> = match error {
        ManagerError::Invalid { diagnostics, .. }
        | ManagerError::Store(mcp_config::StoreError::Invalid { diagnostics, .. }) => {
            diagnostics.iter().map(diagnostic_json).collect()
        }
        ManagerError::Store(mcp_config::StoreError::DuplicateId { id }) => {
            vec![diagnostic_json(&Diagnostic::new(
                Code::DuplicateId,
                Some(id.clone()),
                "id",
                format!("the store already has a server with the id `{id}`; choose another id"),
            ))]
        }
        _ => Vec::new(),
    };
    json!({
        "code": error.code(),
        "message": mcp_proto::text::ErrorChain(error).to_string(),
        "diagnostics": diagnostics,
    })
}

/// One problem: the field (`transport.command`, `transport.env[0].key`),
/// the stable code and the sentence for a person.
fn diagnostic_json(diagnostic: &Diagnostic) -> Value {
    json!({
        "field": diagnostic.field,
        "code": diagnostic.code(),
        "message": diagnostic.message,
    })
}

pub(crate) fn bad_request(message: &str) -> http::Response<ResponseBody> {
    json(
        StatusCode::BAD_REQUEST,
        &json!({"error": {"code": "bad_request", "message": message, "diagnostics": []}}),
    )
}

pub(crate) fn not_found() -> http::Response<ResponseBody> {
    json(
        StatusCode::NOT_FOUND,
        &json!({"error": {"code": "not_found", "message": "no such server or API route", "diagnostics": []}}),
    )
}

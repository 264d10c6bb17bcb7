//! The page's project-trust API: the project servers waiting for approval, and approving one.
//!
//! `GET /api/trust` answers `{project, servers: [{id, sourceFile, command,
//! reads, hash, approveCommand}], error}`: every project server (of the
//! directory `mcpctl ui` was started in, or `--project DIR`) that the
//! person has not approved, as discovery with the trust gate reports it.
//! `command` is the command line (`null` for an HTTP server) and `reads`
//! the environment variables it would receive or send; both are the
//! project's text with control characters escaped (`mcp_proto::text`).
//!
//! `POST /api/trust/{id}` with `{"hash": "sha256:..."}` approves that
//! server, remembering it in `trust.json` like `mcpctl trust`, and starts it. The hash is
//! the one the page showed: when the definition changed in the meantime
//! the answer is 409 `definition_changed` and nothing is approved, so a
//! person never approves a command they did not see.

use http::{Method, StatusCode};
use mcp_config::{DiscoveryReport, UntrustedServer};
use serde_json::{Value, json};

use super::App;
use super::response::{ResponseBody, json};
use crate::output::line;
use crate::trust_cmd;

/// Answers a `/api/trust...` request.
pub(crate) async fn route(
    app: &App,
    method: &Method,
    path: &str,
    body: &[u8],
) -> http::Response<ResponseBody> {
    let rest = path.trim_start_matches("/api/trust");
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    match (method, segments.as_slice()) {
        (&Method::GET, []) => match discover(app).await {
            Ok(report) => json(StatusCode::OK, &listing(app, &report)),
            Err(error) => json(StatusCode::INTERNAL_SERVER_ERROR, &error),
        },
        (&Method::POST, [id]) => {
            let Some(hash) = serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| v.get("hash").and_then(Value::as_str).map(str::to_owned))
            else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    "send {\"hash\": \"...\"}, the definition's hash as listed",
                );
            };
            approve(app, id, &hash).await
        }
        _ => error(StatusCode::NOT_FOUND, "not_found", "no such API route"),
    }
}

async fn approve(app: &App, id: &str, hash: &str) -> http::Response<ResponseBody> {
    let report = match discover(app).await {
        Ok(report) => report,
        Err(error) => return json(StatusCode::INTERNAL_SERVER_ERROR, &error),
    };
    let Some(untrusted) = report.untrusted().find(|u| u.request.server == id) else {
        return error(
            StatusCode::NOT_FOUND,
            "not_untrusted",
            "no project server with this id is waiting for approval",
        );
    };
    if untrusted.request.hash != hash {
        return error(
            StatusCode::CONFLICT,
            "definition_changed",
            "the server's definition changed since it was listed; look at it again before approving",
        );
    }
    let store = match trust_cmd::store() {
        Ok(store) => store,
        Err(cli) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no_data_dir",
                &cli.message,
            );
        }
    };
    let request = untrusted.request.clone();
    match tokio::task::spawn_blocking(move || store.approve(&request)).await {
        Ok(Ok(())) => {
            // Discovered again, the approved server passes the gate and
            // starts, as on the next run of any command.
            app.reload().await;
            json(StatusCode::OK, &json!({"approved": true, "id": id}))
        }
        Ok(Err(failure)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            failure.code(),
            &mcp_proto::text::ErrorChain(&failure).to_string(),
        ),
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the approval did not finish",
        ),
    }
}

/// Discovery over the page's project, with the trust gate and nobody to ask.
async fn discover(app: &App) -> Result<DiscoveryReport, Value> {
    let options = app.sources.clone();
    let found = tokio::task::spawn_blocking(move || {
        trust_cmd::discovery(&options).map(|discovery| discovery.discover())
    })
    .await;
    match found {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(cli)) => Err(json!({"error": {"code": "discovery_failed", "message": cli.message}})),
        Err(_) => {
            Err(json!({"error": {"code": "internal", "message": "discovery did not finish"}}))
        }
    }
}

fn listing(app: &App, report: &DiscoveryReport) -> Value {
    let servers: Vec<Value> = report.untrusted().map(untrusted_json).collect();
    let project =
        trust_cmd::project_dir(&app.sources).map(|dir| line(&dir.to_string_lossy()).into_owned());
    json!({"project": project, "servers": servers})
}

fn untrusted_json(untrusted: &UntrustedServer) -> Value {
    let request = &untrusted.request;
    json!({
        "id": line(&request.server),
        "name": line(&untrusted.server.config.name),
        "sourceFile": request.source_file.as_ref().map(|f| line(&f.to_string_lossy()).into_owned()),
        "command": request.subject.command_line().map(|c| line(&c).into_owned()),
        "reads": request.subject.reads().iter().map(|n| line(n).into_owned()).collect::<Vec<_>>(),
        "hash": request.hash,
        "approveCommand": request.approve_command.as_ref().map(|c| line(c).into_owned()),
    })
}

fn error(status: StatusCode, code: &str, message: &str) -> http::Response<ResponseBody> {
    json(
        status,
        &json!({"error": {"code": code, "message": message}}),
    )
}

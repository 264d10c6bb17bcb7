//! The page's use of a ready server: trying a tool, reading a resource, and the resources and prompts it offers.
//!
//! | method | path | what |
//! |---|---|---|
//! | POST | `/api/servers/{id}/call` | `{"tool": NAME, "arguments": {...}}`: one `tools/call` |
//! | GET | `/api/servers/{id}/offers` | `{resources, templates, prompts, subscribe, subscribed}` from the server's catalog: `subscribe` when it accepts `resources/subscribe`, `subscribed` the URIs the page follows |
//! | POST | `/api/servers/{id}/read` | `{"uri": URI}`: one `resources/read` |
//!
//! A call goes through the tool bridge like a host's model call
//! (arguments checked against the input schema, the server's deadline,
//! results as the server sent them), with the permission preset `full`:
//! the person clicking Try is the one deciding, so nothing asks again. The
//! answer is `{"isError", "content": [...], "structuredContent"}`, or
//! `{"error": {code, message}}` when the call was not made or failed on
//! the way. While it runs, what the server asks back is put before the
//! page (`asks_api`) and attributed to this Try. Text in answers is the
//! server's own; the page shows it as text, never as markup.

use http::StatusCode;
use mcp_proto::types::ReadResourceRequestParams;
use mcp_toolbridge::{
    CallFailure, ContentMode, McpSession, PermissionPreset, SessionOptions, ToolCall, ToolOutcome,
};
use serde_json::{Value, json};

use super::App;
use super::response::{ResponseBody, json};

/// The largest answer the page is sent (a tool's images included).
const ANSWER_LIMIT: usize = 4 * 1024 * 1024;

/// `POST /api/servers/{id}/call`.
pub(crate) async fn call(app: &App, id: &str, body: &[u8]) -> http::Response<ResponseBody> {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let Some(tool) = request.get("tool").and_then(Value::as_str) else {
        return super::api::bad_request("send {\"tool\": NAME, \"arguments\": {...}}");
    };
    let arguments = request
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if !arguments.is_object() {
        return super::api::bad_request("`arguments` must be an object");
    }
    let mut options = SessionOptions::default();
    options.preset = PermissionPreset::FullAccess;
    options.content = ContentMode::Raw;
    options.budget = None;
    let session = McpSession::new(&app.manager, options);
    let tools = session.bind();
    let Some(bound) = tools
        .tools()
        .iter()
        .find(|t| tools.resolve(t.name()) == Some((id, tool)))
        .cloned()
    else {
        return error(
            StatusCode::NOT_FOUND,
            "unknown_tool",
            &format!(
                "`{id}` does not offer a tool named `{}` (or is not ready)",
                crate::output::line(tool)
            ),
        );
    };
    // While it runs, the server's questions are attributed to this Try.
    let _trying = app.asks.trying(id, tool);
    let outcome = bound.call(ToolCall::new("mcpctl-ui-try", arguments)).await;
    let answer = match outcome {
        ToolOutcome::Completed(result) => json!({
            "isError": result.is_error,
            "content": result.content,
            "structuredContent": result.structured_content,
        }),
        ToolOutcome::Failed { failure, .. } => {
            let code = match &failure {
                CallFailure::InvalidArguments { .. } => "invalid_arguments",
                CallFailure::Server { .. } => "server_error",
                CallFailure::Timeout { .. } => "timeout",
                _ => "call_failed",
            };
            json!({"error": {"code": code, "message": crate::output::line(&failure.to_string())}})
        }
        _ => json!({"error": {"code": "cancelled", "message": "the call was cancelled"}}),
    };
    bounded(answer)
}

/// `GET /api/servers/{id}/offers`: what the catalog lists (`resources`,
/// `templates` asked of the server, `prompts` with their arguments).
pub(crate) async fn offers(app: &App, id: &str) -> http::Response<ResponseBody> {
    let (Some(catalog), Some(client)) = (app.manager.catalog(id), app.manager.server(id)) else {
        return error(
            StatusCode::CONFLICT,
            "not_ready",
            &format!("`{id}` is not connected"),
        );
    };
    let resources = catalog.resources().unwrap_or_default();
    let templates = if catalog.capabilities().resources.is_some() {
        client
            .list_resource_templates(None)
            .await
            .map(|list| list.resource_templates)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let prompts = catalog.prompts().unwrap_or_default();
    let subscribe = catalog
        .capabilities()
        .resources
        .as_ref()
        .is_some_and(|r| r.subscribe == Some(true));
    bounded(json!({
        "resources": resources,
        "templates": templates,
        "prompts": prompts,
        "subscribe": subscribe,
        "subscribed": app.manager.subscribed_resources(id),
    }))
}

/// `POST /api/servers/{id}/read`.
pub(crate) async fn read(app: &App, id: &str, body: &[u8]) -> http::Response<ResponseBody> {
    let Some(uri) = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("uri").and_then(Value::as_str).map(str::to_owned))
    else {
        return super::api::bad_request("send {\"uri\": URI}");
    };
    let Some(client) = app.manager.server(id) else {
        return error(
            StatusCode::CONFLICT,
            "not_ready",
            &format!("`{id}` is not connected"),
        );
    };
    let params = ReadResourceRequestParams {
        uri,
        ..ReadResourceRequestParams::default()
    };
    let options = mcp_transport::CallOptions::default().timeout(app.manager.call_timeout(id));
    match client.read_resource_with(&params, options).await {
        Ok(result) => bounded(json!({"contents": result.contents})),
        Err(failure) => error(
            StatusCode::BAD_GATEWAY,
            "read_failed",
            &crate::output::line(&failure.to_string()),
        ),
    }
}

/// The answer, or `too_large` when it exceeds [`ANSWER_LIMIT`].
fn bounded(answer: Value) -> http::Response<ResponseBody> {
    let size = serde_json::to_vec(&answer).map_or(0, |bytes| bytes.len());
    if size > ANSWER_LIMIT {
        return error(
            StatusCode::OK,
            "too_large",
            &format!(
                "the answer is {size} bytes, more than the page shows ({ANSWER_LIMIT}); use `mcpctl` on a terminal"
            ),
        );
    }
    json(StatusCode::OK, &answer)
}

fn error(status: StatusCode, code: &str, message: &str) -> http::Response<ResponseBody> {
    json(
        status,
        &json!({"error": {"code": code, "message": message}}),
    )
}

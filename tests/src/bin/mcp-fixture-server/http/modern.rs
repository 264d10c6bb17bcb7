//! 2026-07-28 Streamable HTTP (MCP 2026-07-28 "Transports" §Streamable HTTP):
//! POST only, no session, headers that mirror the body.
//!
//! - `MCP-Protocol-Version` must equal `_meta`'s version, `Mcp-Method` the
//!   body's method, `Mcp-Name` `params.name` (tools/call, prompts/get) or
//!   `params.uri` (resources/read), after decoding `=?base64?..?=`; and for
//!   a tool's `x-mcp-header` properties, `Mcp-Param-{Name}` the argument.
//!   A missing or different header is 400 with -32020 (HeaderMismatch).
//! - A missing `_meta` field is 400 with -32602, an unsupported version
//!   400 with -32022, an unknown method 404 with -32601.
//! - A request is answered with JSON, or with an SSE stream when it is
//!   `subscriptions/listen`, carries a progress token, or `--sse-responses`
//!   is on. Messages related to a request go only on its stream; closing
//!   the stream cancels the request (and ends a subscription).
//!
//! Every modern POST shares one [`Server`]: runtime-added tools and
//! subscriptions span requests, as they would on a real stateless server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::{Response, StatusCode};
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::types::meta;
use mcp_proto::{ErrorObject, Message, RequestId, methods};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{Body, full, message_data, rpc_error, rpc_error_for, sse_event, sse_until_closed};
use crate::catalog;
use crate::options::Era;
use crate::server::{
    Fixture, Outbound, Route, Server, check_meta, is_modern, known_method, lock,
    supported_versions, unsupported_version,
};

const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// Where the answer to one modern POST goes.
enum Waiter {
    Json(oneshot::Sender<Message>),
    Sse(mpsc::UnboundedSender<Bytes>),
}

type Waiters = Arc<Mutex<HashMap<RequestId, Waiter>>>;

/// The modern side of the Streamable HTTP endpoint.
pub(crate) struct ModernHttp {
    fixture: Arc<Fixture>,
    server: Arc<Server>,
    waiters: Waiters,
}

impl ModernHttp {
    pub(crate) fn new(fixture: Arc<Fixture>) -> ModernHttp {
        let waiters: Waiters = Arc::new(Mutex::new(HashMap::new()));
        let sink_waiters = Arc::clone(&waiters);
        let server = Server::new(
            Arc::clone(&fixture),
            Box::new(move |out| deliver(&sink_waiters, out)),
        );
        ModernHttp {
            fixture,
            server,
            waiters,
        }
    }

    /// Whether a POST belongs to the modern era: always in `--era modern`;
    /// in `--era both` when it names 2026-07-28 in `MCP-Protocol-Version`,
    /// or carries no session and is a modern-shaped request.
    pub(crate) fn claims(&self, headers: &HeaderMap, message: &Message) -> bool {
        match self.fixture.options.era {
            Era::Modern => true,
            Era::Legacy => false,
            Era::Both => {
                if header(headers, VERSION_HEADER) == Some(crate::server::MODERN) {
                    return true;
                }
                let Message::Request(request) = message else {
                    return false;
                };
                headers.get("mcp-session-id").is_none()
                    && request.method != methods::INITIALIZE
                    && is_modern(&request.method, &params_of(request))
            }
        }
    }

    pub(crate) async fn post(&self, headers: &HeaderMap, message: Message) -> Response<Body> {
        let options = &self.fixture.options;
        let supported = supported_versions(options.era, options.discover_legacy_only);
        let version_header = header(headers, VERSION_HEADER);
        let request = match message {
            Message::Request(request) => request,
            Message::Notification(_) => {
                self.server.receive(message);
                return full(StatusCode::ACCEPTED, None, "");
            }
            Message::Response(_) | Message::Error(_) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    error_codes::INVALID_REQUEST,
                    "a 2026-07-28 server sends no requests, so it takes no responses",
                );
            }
        };
        let id = request.id.clone();
        let params = params_of(&request);
        let method = request.method.as_str();
        let refuse =
            |status: StatusCode, error: ErrorObject| rpc_error_for(status, Some(id.clone()), error);
        let mismatch = |what: String| {
            refuse(
                StatusCode::BAD_REQUEST,
                ErrorObject::new(
                    error_codes::HEADER_MISMATCH,
                    format!("Header mismatch: {what}"),
                ),
            )
        };
        // A handshake-era request (initialize, no `_meta` version) that does
        // not name 2026-07-28 either: this server does not speak its version.
        if version_header != Some(crate::server::MODERN)
            && (method == methods::INITIALIZE || !is_modern(method, &params))
        {
            let requested =
                version_header.or_else(|| params.get("protocolVersion").and_then(Value::as_str));
            return refuse(
                StatusCode::BAD_REQUEST,
                unsupported_version(&supported, requested),
            );
        }
        let meta_version = params
            .pointer("/_meta")
            .and_then(|m| m.get(meta::PROTOCOL_VERSION))
            .and_then(Value::as_str);
        if meta_version.is_some() {
            match version_header {
                None => return mismatch("MCP-Protocol-Version is missing".to_owned()),
                Some(header) if Some(header) != meta_version => {
                    return mismatch(format!(
                        "MCP-Protocol-Version {header:?} differs from _meta's {meta_version:?}"
                    ));
                }
                Some(_) => {}
            }
        }
        if let Err(error) = check_meta(&params, &supported) {
            return refuse(StatusCode::BAD_REQUEST, error);
        }
        match header(headers, METHOD_HEADER) {
            None => return mismatch("Mcp-Method is missing".to_owned()),
            Some(value) if value != method => {
                return mismatch(format!("Mcp-Method {value:?} differs from {method:?}"));
            }
            Some(_) => {}
        }
        if !known_method(method, !options.no_tools_capability) {
            return refuse(StatusCode::NOT_FOUND, ErrorObject::method_not_found(method));
        }
        let name_field = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => Some("name"),
            methods::RESOURCES_READ => Some("uri"),
            _ => None,
        };
        if let Some(field) = name_field {
            let body = params.get(field).and_then(Value::as_str);
            match decoded(headers, NAME_HEADER) {
                Err(e) => return mismatch(e),
                Ok(None) => return mismatch("Mcp-Name is missing".to_owned()),
                Ok(Some(value)) if Some(value.as_str()) != body => {
                    return mismatch(format!(
                        "Mcp-Name {value:?} differs from params.{field} {body:?}"
                    ));
                }
                Ok(Some(_)) => {}
            }
        }
        if method == methods::TOOLS_CALL
            && let Some(tool) = params
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| self.fixture.modern_tool(name))
        {
            for (name, property) in catalog::param_headers(tool) {
                let value = params.get("arguments").and_then(|a| a.get(&property));
                if let Err(e) = param_matches(headers, &name, value) {
                    return mismatch(e);
                }
            }
        }

        let streamed = options.sse_responses
            || method == methods::SUBSCRIPTIONS_LISTEN
            || params.pointer("/_meta/progressToken").is_some();
        let message = Message::Request(request);
        if streamed {
            let (tx, rx) = mpsc::unbounded_channel();
            lock(&self.waiters).insert(id.clone(), Waiter::Sse(tx));
            self.server.receive(message);
            let waiters = Arc::clone(&self.waiters);
            let server = Arc::clone(&self.server);
            sse_until_closed(rx, move || {
                // Still waiting: the client closed the stream, which cancels.
                if lock(&waiters).remove(&id).is_some() {
                    server.cancel(&id);
                }
            })
        } else {
            let (tx, rx) = oneshot::channel();
            lock(&self.waiters).insert(id.clone(), Waiter::Json(tx));
            self.server.receive(message);
            match rx.await {
                Ok(answer) => full(StatusCode::OK, Some("application/json"), answer.to_bytes()),
                Err(_) => rpc_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    error_codes::INTERNAL_ERROR,
                    "the request ended without an answer",
                ),
            }
        }
    }
}

/// Routes one outbound message to the POST it belongs to. Standalone
/// messages have nowhere to go in this era.
fn deliver(waiters: &Waiters, out: Outbound) {
    let Route::Related(id) = &out.route else {
        eprintln!("fixture: dropping a message unrelated to any request (2026-07-28)");
        return;
    };
    let is_response = matches!(out.message, Message::Response(_) | Message::Error(_));
    let mut waiters = lock(waiters);
    match waiters.get(id) {
        Some(Waiter::Sse(tx)) => {
            let _ = tx.send(sse_event(None, None, None, message_data(&out.message)));
            if is_response {
                // Dropping the sender ends the stream.
                waiters.remove(id);
            }
        }
        Some(Waiter::Json(_)) if is_response => {
            if let Some(Waiter::Json(tx)) = waiters.remove(id) {
                let _ = tx.send(out.message);
            }
        }
        Some(Waiter::Json(_)) => {
            eprintln!("fixture: dropping a notification for {id}: it is answered with JSON");
        }
        None => eprintln!("fixture: dropping a message for {id}: its POST is gone"),
    }
}

fn params_of(request: &mcp_proto::jsonrpc::Request) -> Value {
    request
        .params
        .as_ref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A header that may use the `=?base64?{b64}?=` form, decoded; an error
/// for a value that is not visible ASCII or not valid base64 UTF-8.
fn decoded(headers: &HeaderMap, name: &str) -> Result<Option<String>, String> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| format!("{name} holds characters that are not visible ASCII"))?;
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .map(Some)
            .ok_or_else(|| format!("{name} is not valid base64 of UTF-8")),
        None => Ok(Some(value.to_owned())),
    }
}

/// Whether `Mcp-Param-{name}` mirrors the argument `value`: strings as is
/// or base64, numbers compared numerically, booleans `true`/`false`, and
/// no header for a missing or null argument.
fn param_matches(headers: &HeaderMap, name: &str, value: Option<&Value>) -> Result<(), String> {
    let header_name = format!("mcp-param-{}", name.to_ascii_lowercase());
    let header = decoded(headers, &header_name)?;
    let shown = format!("Mcp-Param-{name}");
    let matches = match (value, header.as_deref()) {
        (None | Some(Value::Null), None) => return Ok(()),
        (None | Some(Value::Null), Some(_)) => {
            return Err(format!("{shown} is present but the argument is absent"));
        }
        (Some(_), None) => return Err(format!("{shown} is missing")),
        (Some(Value::String(s)), Some(h)) => s == h,
        (Some(Value::Number(n)), Some(h)) => h
            .parse::<f64>()
            .ok()
            .zip(n.as_f64())
            .is_some_and(|(a, b)| a == b),
        (Some(Value::Bool(b)), Some(h)) => h == if *b { "true" } else { "false" },
        (Some(_), Some(_)) => false,
    };
    if matches {
        Ok(())
    } else {
        Err(format!(
            "{shown} {header:?} differs from the argument {}",
            value.map(Value::to_string).unwrap_or_default()
        ))
    }
}

//! 2026-07-28 Streamable HTTP (MCP 2026-07-28 "Transports" §Streamable HTTP):
//! POST only, no session, headers that mirror the body.
//!
//! - `MCP-Protocol-Version` must equal `_meta`'s version, `Mcp-Method` the
//!   body's method, `Mcp-Name` `params.name` (tools/call, prompts/get) or
//!   `params.uri` (resources/read), after decoding `=?base64?..?=`; and for
//!   a tool's `x-mcp-header` properties, `Mcp-Param-{Name}` the argument.
//!   A missing or different header is 400 with -32020 (HeaderMismatch).
//! - What the session refuses itself is 400 (a missing `_meta` field is
//!   -32602, an unsupported version -32022), and 404 for an unknown
//!   method (-32601).
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
use hyper::header::HeaderMap;
use hyper::{Response, StatusCode};
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::types::meta;
use mcp_proto::{ErrorObject, Frame, Message, RequestId, methods};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Body, full, message_data, rpc_error, rpc_error_for, sse_event, sse_until_closed};
use crate::catalog;
use crate::options::Era;
use crate::server::{Fixture, Outbound, Route, Server, lock};

const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// The frames for one modern POST: what is related to its request, then
/// its answer.
type Waiters = Arc<Mutex<HashMap<RequestId, mpsc::UnboundedSender<Frame>>>>;

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
    /// or carries no session and names a version in its `_meta` (the
    /// header rule below then refuses it: the header is missing).
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
                headers.get("mcp-session-id").is_none() && meta_version(request).is_some()
            }
        }
    }

    /// Answers one modern POST. The transport's own rules come first (the
    /// headers must mirror the body: 400 with -32020); the session then
    /// reads the request: what it refuses itself (its `_meta` envelope,
    /// a version it does not speak, a method it does not serve) is 400, or
    /// 404 for an unknown method; what reaches the fixture is answered with
    /// JSON, or with an SSE stream when it is `subscriptions/listen`,
    /// carries a progress token, or `--sse-responses` is on.
    pub(crate) async fn post(&self, headers: &HeaderMap, message: Message) -> Response<Body> {
        let options = &self.fixture.options;
        let version_header = header(headers, VERSION_HEADER);
        let request = match message {
            Message::Request(request) => request,
            Message::Notification(_) => {
                self.server.receive_frame(Frame::Single(message));
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
        let method = request.method.clone();
        let mismatch = |what: String| {
            rpc_error_for(
                StatusCode::BAD_REQUEST,
                Some(id.clone()),
                ErrorObject::new(
                    error_codes::HEADER_MISMATCH,
                    format!("Header mismatch: {what}"),
                ),
            )
        };
        if let Some(meta_version) = meta_version(&request) {
            match version_header {
                None => return mismatch("MCP-Protocol-Version is missing".to_owned()),
                Some(header) if header != meta_version => {
                    return mismatch(format!(
                        "MCP-Protocol-Version {header:?} differs from _meta's {meta_version:?}"
                    ));
                }
                Some(_) => {}
            }
            match header(headers, METHOD_HEADER) {
                None => return mismatch("Mcp-Method is missing".to_owned()),
                Some(value) if value != method => {
                    return mismatch(format!("Mcp-Method {value:?} differs from {method:?}"));
                }
                Some(_) => {}
            }
            let name_field = match method.as_str() {
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
        }

        let (tx, mut rx) = mpsc::unbounded_channel();
        lock(&self.waiters).insert(id.clone(), tx);
        let Some(progress) = self.server.receive_request(request) else {
            // The session answered it itself: a refusal, now in the channel.
            lock(&self.waiters).remove(&id);
            let answer = rx.try_recv().ok();
            let status = match answer.as_ref().and_then(refusal_code) {
                Some(error_codes::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
                Some(_) => StatusCode::BAD_REQUEST,
                None => StatusCode::OK,
            };
            let body = answer.map(|frame| message_data(&frame)).unwrap_or_default();
            return full(status, Some("application/json"), body);
        };
        let streamed = options.sse_responses || method == methods::SUBSCRIPTIONS_LISTEN || progress;
        if streamed {
            let (events, body) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                while let Some(frame) = rx.recv().await {
                    let _ = events.send(sse_event(None, None, None, message_data(&frame)));
                }
            });
            let waiters = Arc::clone(&self.waiters);
            let server = Arc::clone(&self.server);
            sse_until_closed(body, move || {
                // Still waiting: the client closed the stream, which cancels.
                if lock(&waiters).remove(&id).is_some() {
                    server.cancel(&id);
                }
            })
        } else {
            // Messages related to the request have no stream to go on.
            let mut answer = None;
            while let Some(frame) = rx.recv().await {
                if is_answer(&frame) {
                    answer = Some(frame);
                    break;
                }
            }
            match answer {
                Some(frame) => full(
                    StatusCode::OK,
                    Some("application/json"),
                    message_data(&frame),
                ),
                None => rpc_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    error_codes::INTERNAL_ERROR,
                    "the request ended without an answer",
                ),
            }
        }
    }
}

/// Routes one outbound frame to the POST it belongs to; its answer ends
/// that POST's channel. Standalone messages have nowhere to go in this era.
fn deliver(waiters: &Waiters, out: Outbound) {
    let Route::Related(id) = &out.route else {
        eprintln!("fixture: dropping a message unrelated to any request (2026-07-28)");
        return;
    };
    let answer = out.is_answer();
    let mut waiters = lock(waiters);
    let Some(tx) = (if answer {
        waiters.remove(id)
    } else {
        waiters.get(id).cloned()
    }) else {
        eprintln!("fixture: dropping a message for {id}: its POST is gone");
        return;
    };
    let _ = tx.send(out.frame);
}

/// Whether `frame` answers a request.
fn is_answer(frame: &Frame) -> bool {
    matches!(frame, Frame::Single(m @ (Message::Response(_) | Message::Error(_))) if m.id().is_some())
}

/// The code of the error the session answered with, if it is one.
fn refusal_code(frame: &Frame) -> Option<i64> {
    match frame {
        Frame::Single(Message::Error(error)) => Some(error.error.code),
        _ => None,
    }
}

/// The version a request's `_meta` names, which `MCP-Protocol-Version`
/// must mirror (2026-07-28 "Transports" §Streamable HTTP); the session
/// reads the rest of the envelope.
fn meta_version(request: &mcp_proto::jsonrpc::Request) -> Option<String> {
    params_of(request)
        .pointer("/_meta")?
        .get(meta::PROTOCOL_VERSION)?
        .as_str()
        .map(str::to_owned)
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

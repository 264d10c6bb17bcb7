//! Streamable HTTP (MCP "Transports" §Streamable HTTP), both eras, on one
//! endpoint, `/mcp`: served by `mcp_transport`'s server core
//! ([`HttpServer`]), with the fixture's faults a wrapper around it.
//!
//! The core owns the transport: sessions and `Mcp-Session-Id` (404 for an
//! unknown or ended one), the `MCP-Protocol-Version` checks, the stateless
//! era's `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` checks (-32020), JSON or SSE
//! answers, the GET stream (409 while one is open), resumption with
//! `Last-Event-ID`, DELETE, 2025-03-26 batches. The fixture answers
//! requests through [`CoreHandler`]. `--sse-responses` is the core's
//! `stream_answers`, `--retry-ms` its `retry`.
//!
//! [`Front`] meets every request before the core, answering a fault itself
//! or changing the core's answer:
//! - the late switches (`--http-status`, `--content-type`, redirects,
//!   `--refuse-origin`, `--huge-headers-kib`), as legacy SSE does;
//! - `--era modern`: GET and DELETE are 405; `--era legacy`: a POST naming
//!   `MCP-Protocol-Version: 2026-07-28` without a session is a bare 400, as
//!   legacy servers and gateways answer it; `--no-get-stream`: a GET
//!   without `Last-Event-ID` is 405;
//! - `--http-500-html-kib` (every `tools/call`), `--error-message-kib`
//!   (`long_error` answered whole, past the core's bound on error texts);
//! - `initialize`: delayed (`--delay-initialize-ms`), never answered
//!   (`--hang-initialize-if-exists`), its `protocolVersion` rewritten
//!   (`--protocol-version` naming a version the core does not know);
//! - a session unknown after N requests (`--expire-session-after`, for the
//!   first `--expire-sessions`), answered 404 here and ended in the core;
//! - each POST's SSE stream ended after its priming event
//!   (`--close-sse-before-response`) or halfway through its answer
//!   (`--cut-sse-mid-event`), `initialize` exempt: the core keeps the
//!   stream's events, so a GET with `Last-Event-ID` gets the answer whole;
//! - `--exit-after`: the Nth answer closes its connection and the process
//!   exits once it is sent.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Frame as BodyFrame, Incoming, SizeHint};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use mcp_proto::codec::sse::{SseEvent, encode_event};
use mcp_proto::headers::{ToolParamHeaders, tool_param_headers};
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::server::ServerOptions;
use mcp_proto::{ErrorObject, Message, methods};
use mcp_transport::server::http::SESSION_HEADER;
use mcp_transport::server::{
    AccessPolicy, HttpApp, HttpServer, HttpServerOptions, Peer, Refusal, ServerHandler,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Body, Handler, HttpFaults, full, origin_allowed, rpc_error};
use crate::catalog;
use crate::eventlog;
use crate::options::Era;
use crate::server::{CoreHandler, Fixture, MODERN, Server, lock};

/// The MCP endpoint's path.
const ENDPOINT: &str = "/mcp";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";

/// The largest request body read: 64 MiB, the stdio line limit.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// How long the process waits, once the answer `--exit-after` counts last
/// has left the server, before it exits: time for the kernel to send it.
const EXIT_GRACE: Duration = Duration::from_millis(100);

/// How long a session expired by `--expire-session-after` lives on in the
/// core (while the wrapper answers 404 for it), so that an answer still
/// streaming when it expired gets out whole.
const EXPIRY_GRACE: Duration = Duration::from_millis(100);

/// Serves Streamable HTTP until the process ends.
pub(crate) async fn serve(fixture: Arc<Fixture>) -> anyhow::Result<()> {
    let tcp = super::bind(fixture.options.port, ENDPOINT).await?;
    let options = &fixture.options;
    let mut param_headers = HashMap::new();
    for tool in &fixture.modern_tools {
        if let Some(name) = tool["name"].as_str() {
            // The first tool of a name is the one `modern_tool` finds.
            param_headers.entry(name.to_owned()).or_insert_with(|| {
                let schema = tool.get("inputSchema")?;
                tool_param_headers(schema.as_object()?).ok()
            });
        }
    }
    let app = App {
        stateless: Server::under_core(Arc::clone(&fixture), None, false),
        options: fixture.session_options(),
        param_headers,
        fixture: Arc::clone(&fixture),
    };
    let core = HttpServer::new(
        Arc::new(app),
        Arc::new(LocalOrigins),
        HttpServerOptions::default()
            .endpoint(ENDPOINT)
            .body_limit(MAX_BODY)
            .stream_answers(options.sse_responses)
            .retry(Some(options.retry)),
    );
    let faults = HttpFaults::of(options);
    let front = Arc::new(Front {
        fixture,
        core,
        sessions: Mutex::new(HashMap::new()),
        expired: Mutex::new(HashSet::new()),
        sessions_kept: AtomicU64::new(0),
        answers: AtomicU64::new(0),
    });
    super::serve(tcp, faults, front).await
}

/// What the core serves: the fixture's session options, and a
/// [`CoreHandler`] per connection.
struct App {
    fixture: Arc<Fixture>,
    /// The server every stateless-era request shares.
    stateless: Arc<Server>,
    /// The fixture's session options, built once: they follow from its
    /// command line alone.
    options: ServerOptions,
    /// Each 2026-07-28 tool's `x-mcp-header` annotations (`None` for a
    /// schema that has malformed ones), read once from its schema.
    param_headers: HashMap<String, Option<ToolParamHeaders>>,
}

impl HttpApp for App {
    fn options(&self) -> ServerOptions {
        self.options.clone()
    }

    fn connect(&self, peer: Peer) -> Arc<dyn ServerHandler> {
        Arc::new(CoreHandler {
            session: Server::under_core(Arc::clone(&self.fixture), Some(peer), false),
            stateless: Arc::clone(&self.stateless),
        })
    }

    fn tool_param_headers(&self, tool: &str) -> Option<ToolParamHeaders> {
        self.param_headers.get(tool)?.clone()
    }
}

/// MCP "Transports" §Security Warning: servers MUST validate `Origin`. A
/// request without one (not from a browser) passes; one from a page not
/// served by this machine gets 403.
struct LocalOrigins;

impl AccessPolicy for LocalOrigins {
    fn check_origin(&self, request: &hyper::http::request::Parts) -> Result<(), Refusal> {
        if origin_allowed(&request.headers) {
            Ok(())
        } else {
            Err(Refusal::new(StatusCode::FORBIDDEN, "forbidden origin"))
        }
    }
}

/// The fault wrapper in front of the core (see the module docs).
struct Front {
    fixture: Arc<Fixture>,
    core: HttpServer,
    /// Requests seen per session, for `--expire-session-after`: only the
    /// sessions that expire (`--expire-sessions`) are counted.
    sessions: Mutex<HashMap<String, u64>>,
    /// Sessions expired here: 404 from now on.
    expired: Mutex<HashSet<String>>,
    /// Sessions started so far, for `--expire-sessions`.
    sessions_kept: AtomicU64,
    /// Requests answered so far, for `--exit-after`.
    answers: AtomicU64,
}

/// What the wrapper read of a POSTed message.
struct Posted {
    method: Option<String>,
    id: Option<Value>,
    /// `params.name`.
    name: Option<String>,
}

/// How a response's SSE stream is cut short.
#[derive(Clone, Debug)]
enum Cut {
    /// Ended after its first (priming) event.
    AfterPriming,
    /// Ended halfway through the event that answers the request `id`.
    AnswerInHalf(Value),
}

impl Handler for Front {
    fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> {
        Box::pin(async move { self.route(request).await })
    }
}

impl Front {
    async fn route(self: &Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let options = &self.fixture.options;
        let is_endpoint = request.uri().path() == ENDPOINT;
        if is_endpoint && options.era == Era::Modern && request.method() != Method::POST {
            let mut response = full(StatusCode::METHOD_NOT_ALLOWED, None, "");
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        let session = header_str(request.headers(), SESSION_HEADER).map(str::to_owned);
        if is_endpoint
            && let Some(id) = &session
            && lock(&self.expired).contains(id)
        {
            return rpc_error(StatusCode::NOT_FOUND, -32001, "session not found");
        }
        if is_endpoint
            && request.method() == Method::GET
            && options.no_get_stream
            && !request.headers().contains_key(LAST_EVENT_ID)
        {
            return full(
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                "this server offers no GET stream",
            );
        }
        if !(is_endpoint && request.method() == Method::POST) {
            return self.core.handle(request).await;
        }
        if options.era == Era::Legacy
            && session.is_none()
            && header_str(request.headers(), VERSION_HEADER) == Some(MODERN)
        {
            return full(StatusCode::BAD_REQUEST, None, "");
        }
        let (parts, body) = request.into_parts();
        let body = match Limited::new(body, MAX_BODY).collect().await {
            Ok(body) => body.to_bytes(),
            Err(e) => {
                return rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    error_codes::INVALID_REQUEST,
                    format!("cannot read the body: {e}"),
                );
            }
        };
        let posted = posted(&body);
        let request = Request::from_parts(parts, Full::new(body));
        let method = posted.method.as_deref();
        if let Some(kib) = options.http_500_html_kib
            && method == Some(methods::TOOLS_CALL)
        {
            return full(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some("text/html; charset=utf-8"),
                catalog::traceback_page(kib),
            );
        }
        if let Some(kib) = options.error_message_kib
            && method == Some(methods::TOOLS_CALL)
            && posted.name.as_deref() == Some("long_error")
        {
            // The core bounds error texts; this fault is the text unbounded.
            let id = posted
                .id
                .clone()
                .and_then(|id| serde_json::from_value(id).ok());
            let mut message = String::from("long error: ");
            message.push_str(&"e".repeat((kib * 1024).saturating_sub(message.len())));
            let body = Message::error(id, ErrorObject::new(error_codes::INTERNAL_ERROR, message));
            return self.counted(full(
                StatusCode::OK,
                Some("application/json"),
                body.to_bytes(),
            ));
        }
        if session.is_none() && method == Some(methods::INITIALIZE) {
            return self.initialize(request).await;
        }
        let is_request = method.is_some() && posted.id.is_some();
        let mut expires_now = false;
        if is_request
            && let Some(id) = &session
            && let Some(after) = options.expire_session_after
            && let Some(seen) = lock(&self.sessions).get_mut(id)
        {
            *seen += 1;
            expires_now = *seen == after;
        }
        let response = self.core.handle(request).await;
        if expires_now && let Some(id) = session {
            // This request is still answered; the session is unknown after it.
            self.expire(id);
        }
        if !is_request {
            return response;
        }
        let cut = if options.close_sse_before_response {
            Some(Cut::AfterPriming)
        } else if options.cut_sse_mid_event {
            posted.id.map(Cut::AnswerInHalf)
        } else {
            None
        };
        let response = match cut {
            Some(cut) if is_event_stream(response.headers()) => {
                response.map(|body| FaultBody::new(body, Some(cut)).boxed())
            }
            _ => response,
        };
        self.counted(response)
    }

    /// `initialize` without a session: logged, delayed or never answered,
    /// its version rewritten; the session it opens counted for
    /// `--expire-sessions`.
    async fn initialize(self: &Arc<Self>, request: Request<Full<Bytes>>) -> Response<Body> {
        let options = &self.fixture.options;
        let log = options.event_log.as_deref();
        eventlog::record(log, "initialize-start");
        if options
            .hang_initialize_if_exists
            .as_deref()
            .is_some_and(std::path::Path::exists)
        {
            eprintln!("fixture: the hang file exists; initialize is never answered");
            std::future::pending::<()>().await;
        }
        if !options.delay_initialize.is_zero() {
            tokio::time::sleep(options.delay_initialize).await;
        }
        let mut response = self.core.handle(request).await;
        eventlog::record(log, "initialize-end");
        if let (Some(forced), None) = (&options.protocol_version, self.fixture.forced_version()) {
            response = rewrite_version(response, forced).await;
        }
        let Some(id) = header_str(response.headers(), SESSION_HEADER).map(str::to_owned) else {
            // Refused (`--era modern`: -32022): no session, and a 400 as
            // for the stateless era's refusals.
            let (mut parts, body) = collect(response).await;
            if parts.status == StatusCode::OK {
                parts.status = StatusCode::BAD_REQUEST;
            }
            return self.counted(Response::from_parts(parts, Full::new(body).boxed()));
        };
        if options.sse_responses && !is_event_stream(response.headers()) {
            response = as_event_stream(response, options.retry).await;
        }
        let n = self.sessions_kept.fetch_add(1, Ordering::Relaxed) + 1;
        if options.expire_session_after.is_some()
            && options.expire_sessions.is_none_or(|first| n <= first)
        {
            lock(&self.sessions).insert(id.clone(), 1);
            if options.expire_session_after == Some(1) {
                self.expire(id);
            }
        }
        self.counted(response)
    }

    /// Makes session `id` unknown: 404 here at once, ended in the core
    /// (its GET stream closed) once its answers in flight are out.
    fn expire(self: &Arc<Self>, id: String) {
        lock(&self.sessions).remove(&id);
        lock(&self.expired).insert(id.clone());
        let core = self.core.clone();
        tokio::spawn(async move {
            tokio::time::sleep(EXPIRY_GRACE).await;
            core.end_session(&id).await;
        });
    }

    /// Counts an answer for `--exit-after`: the last one closes its
    /// connection, and the process exits once its body is sent.
    fn counted(&self, mut response: Response<Body>) -> Response<Body> {
        let Some(last) = self.fixture.options.exit_after else {
            return response;
        };
        let n = self.answers.fetch_add(1, Ordering::Relaxed) + 1;
        if n != last {
            return response;
        }
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response.map(|body| {
            let mut body = FaultBody::new(body, None);
            body.on_drop = Some(Box::new(|| {
                tokio::spawn(async {
                    tokio::time::sleep(EXIT_GRACE).await;
                    std::process::exit(0);
                });
            }));
            body.boxed()
        })
    }
}

/// The method, id and `params.name` of a POSTed message, as far as the
/// body says (nothing for a batch or what is not JSON: the core answers it).
/// The members are borrowed as their text and only these three are built:
/// the params (a 2026-07-28 request's `_meta` among them) are stepped over.
fn posted(body: &[u8]) -> Posted {
    #[derive(Deserialize)]
    struct Members<'a> {
        #[serde(borrow, default)]
        method: Option<&'a RawValue>,
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default)]
        name: Option<&'a RawValue>,
    }
    let string =
        |raw: Option<&RawValue>| raw.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
    let Ok(members) = serde_json::from_slice::<Members<'_>>(body) else {
        return Posted {
            method: None,
            id: None,
            name: None,
        };
    };
    Posted {
        method: string(members.method),
        id: members
            .id
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .filter(|id| !id.is_null()),
        name: members
            .params
            .and_then(|raw| serde_json::from_str::<Params<'_>>(raw.get()).ok())
            .and_then(|params| string(params.name)),
    }
}

/// `response` (the answer to `initialize`, JSON or an SSE stream that ends
/// with it) with its `protocolVersion` replaced by `version`: the server
/// misstates what it speaks on purpose.
async fn rewrite_version(response: Response<Body>, version: &str) -> Response<Body> {
    let (mut parts, body) = collect(response).await;
    let text = String::from_utf8_lossy(&body).into_owned();
    const KEY: &str = "\"protocolVersion\":\"";
    let rewritten = match text.find(KEY) {
        Some(start) => {
            let from = start + KEY.len();
            let end = text[from..].find('"').map_or(text.len(), |n| from + n);
            format!("{}{version}{}", &text[..from], &text[end..])
        }
        None => text,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(Bytes::from(rewritten)).boxed())
}

/// A response's head and whole body.
async fn collect(response: Response<Body>) -> (hyper::http::response::Parts, Bytes) {
    let (parts, body) = response.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    (parts, body)
}

/// A JSON answer to `initialize` as the SSE stream `--sse-responses`
/// answers every request with: a priming event (an id, `retry`, no data),
/// then the answer. The core answers `initialize` with JSON whatever its
/// options; nobody resumes this stream, so its ids are the fixture's own.
async fn as_event_stream(response: Response<Body>, retry: Duration) -> Response<Body> {
    let (mut parts, body) = collect(response).await;
    let priming = SseEvent {
        event: "message".to_owned(),
        data: String::new(),
        id: Some("initialize-0".to_owned()),
        retry: Some(u64::try_from(retry.as_millis()).unwrap_or(u64::MAX)),
    };
    let answer = SseEvent {
        event: "message".to_owned(),
        data: String::from_utf8_lossy(&body).trim().to_owned(),
        id: Some("initialize-1".to_owned()),
        retry: None,
    };
    let mut stream = String::new();
    encode_event(&priming, &mut stream);
    encode_event(&answer, &mut stream);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    Response::from_parts(parts, Full::new(Bytes::from(stream)).boxed())
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    header_str(headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|media| media.starts_with("text/event-stream"))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A response body passed on from the core, cut short where a fault says
/// ([`Cut`]), running `on_drop` once hyper is done with it.
struct FaultBody {
    inner: Body,
    cut: Option<Cut>,
    /// Bytes of an SSE event not complete yet (only while cutting).
    pending: BytesMut,
    /// Whether an event with an id went by, from which a client can resume.
    resumable: bool,
    ended: bool,
    on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl FaultBody {
    fn new(inner: Body, cut: Option<Cut>) -> FaultBody {
        FaultBody {
            inner,
            cut,
            pending: BytesMut::new(),
            resumable: false,
            ended: false,
            on_drop: None,
        }
    }

    /// Passes on the complete events in `pending`, cutting where the fault
    /// says; what to send now, if anything.
    fn events(&mut self) -> Option<Bytes> {
        let mut out = BytesMut::new();
        while let Some(end) = find(&self.pending, b"\n\n") {
            let event = self.pending.split_to(end + 2);
            let fields = fields(&event);
            match &self.cut {
                // The core primes a stream from 2025-11-25 only: before it
                // there is no id to resume from, and the stream is whole.
                Some(Cut::AfterPriming) if fields.id && fields.data.is_empty() => {
                    out.extend_from_slice(&event);
                    self.ended = true;
                    break;
                }
                Some(Cut::AnswerInHalf(id)) if self.resumable && answers(&fields.data, id) => {
                    // Half an event and no blank line: the client must drop
                    // it and resume from the last id it saw.
                    out.extend_from_slice(&event[..event.len() / 2]);
                    self.ended = true;
                    break;
                }
                Some(Cut::AfterPriming) => {
                    self.cut = None;
                    out.extend_from_slice(&event);
                }
                _ => out.extend_from_slice(&event),
            }
            self.resumable |= fields.id;
        }
        (!out.is_empty()).then(|| out.freeze())
    }
}

/// What an SSE event holds: whether it has an id, and its data.
struct Fields {
    id: bool,
    data: String,
}

fn fields(event: &[u8]) -> Fields {
    let text = String::from_utf8_lossy(event);
    let id = text.lines().any(|line| line.starts_with("id:"));
    let data = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    Fields { id, data }
}

/// Whether an SSE event's data is the answer to request `id`.
fn answers(data: &str, id: &Value) -> bool {
    serde_json::from_str::<Value>(data).is_ok_and(|message| {
        message.get("id") == Some(id)
            && (message.get("result").is_some() || message.get("error").is_some())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

impl Drop for FaultBody {
    fn drop(&mut self) {
        if let Some(on_drop) = self.on_drop.take() {
            on_drop();
        }
    }
}

impl hyper::body::Body for FaultBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => frame,
                Poll::Ready(None) => {
                    this.ended = true;
                    let rest = std::mem::take(&mut this.pending);
                    if rest.is_empty() {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Ok(BodyFrame::data(rest.freeze()))));
                }
                Poll::Ready(Some(Err(never))) => match never {},
                Poll::Pending => return Poll::Pending,
            };
            if this.cut.is_none() {
                return Poll::Ready(Some(Ok(frame)));
            }
            let Ok(data) = frame.into_data() else {
                continue;
            };
            this.pending.extend_from_slice(&data);
            if let Some(out) = this.events() {
                return Poll::Ready(Some(Ok(BodyFrame::data(out))));
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        if self.cut.is_none() {
            self.inner.size_hint()
        } else {
            SizeHint::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_event_is_found_by_its_id() {
        let event = fields(b"id: 1-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n");
        assert!(event.id);
        assert!(answers(&event.data, &serde_json::json!(7)));
        assert!(!answers(&event.data, &serde_json::json!(8)));
        let progress =
            fields(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n");
        assert!(!progress.id);
        assert!(!answers(&progress.data, &serde_json::json!(7)));
    }

    fn cut(stream: &[&[u8]], how: Cut) -> Vec<u8> {
        let mut body = FaultBody::new(Full::new(Bytes::new()).boxed(), Some(how));
        let mut sent = Vec::new();
        for chunk in stream {
            body.pending.extend_from_slice(chunk);
            if let Some(out) = body.events() {
                sent.extend_from_slice(&out);
            }
            if body.ended {
                break;
            }
        }
        sent
    }

    #[test]
    fn streams_are_cut_only_where_a_client_can_resume() {
        let priming: &[u8] = b"id: 1-1\nretry: 100\ndata:\n\n";
        let answer: &[u8] =
            b"event: message\nid: 1-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n";
        assert_eq!(cut(&[priming, answer], Cut::AfterPriming), priming);
        let half = cut(&[priming, answer], Cut::AnswerInHalf(serde_json::json!(2)));
        assert_eq!(half.len(), priming.len() + answer.len() / 2);
        // Without a priming event (before 2025-11-25) the answer goes whole.
        assert_eq!(
            cut(&[answer], Cut::AnswerInHalf(serde_json::json!(2))),
            answer
        );
        assert_eq!(cut(&[answer], Cut::AfterPriming), answer);
    }

    #[test]
    fn posted_messages_are_read_loosely() {
        let call =
            posted(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}"#);
        assert_eq!(call.method.as_deref(), Some("tools/call"));
        assert_eq!(call.id, Some(serde_json::json!(3)));
        assert_eq!(call.name.as_deref(), Some("echo"));
        let garbage = posted(b"{oops");
        assert!(garbage.method.is_none() && garbage.id.is_none());
    }
}

//! `mcpctl serve --http`: the gateway over Streamable HTTP on 127.0.0.1, for clients of both eras, behind a per-launch bearer token.
//!
//! One endpoint, `/mcp` (MCP "Transports" §Streamable HTTP):
//!
//! - **Handshake era** (2025-03-26 to 2025-11-25): a POST of `initialize`
//!   without a session starts one: its answer carries `Mcp-Session-Id`,
//!   which every later request must carry (an unknown one gets 404, as for
//!   a session that ended, so the client starts again). Each session is
//!   its own [`GatewayConnection`]. A GET with the session opens the
//!   stream its `notifications/tools/list_changed` arrive on (one at a
//!   time: a second gets 409); DELETE ends the session and cancels its
//!   calls. An `MCP-Protocol-Version` header must name a version of that
//!   era (400 otherwise). A client's disconnect is not a cancellation; a
//!   `notifications/cancelled` POST is.
//! - **2026-07-28**: a POST whose `_meta` names the version, no session.
//!   Its `MCP-Protocol-Version` header must equal that version, `Mcp-Method`
//!   the method and `Mcp-Name` the tool, prompt or resource it names
//!   (missing or different: 400 with -32020, HeaderMismatch). Every such
//!   request goes through one shared connection under an id of the
//!   gateway's own, so clients cannot collide on theirs; closing the
//!   response stream cancels the call. An unknown method is a 404 with
//!   -32601; GET and DELETE without a session are 405.
//!
//! A request's answer is one JSON body, or, when the call reports
//! progress first, an SSE stream: the progress notifications, then the
//! answer, which ends it.
//!
//! Security, as for `mcpctl ui`: the listener binds 127.0.0.1 only, every
//! request needs `Authorization: Bearer <token>` with the token printed at
//! launch, or a path of `/mcp/<token>` for a client that can be given only
//! a URL (401 otherwise), `Host` must name the listener and a present
//! `Origin` must be its own (403 otherwise: no DNS rebinding, no web page
//! can drive it). Request bodies are limited to 4 MiB; at most 256
//! handshake sessions are kept, the least recently used one without calls
//! in flight making room for a new one. Connections are accepted by
//! mcp-transport's bounded listener ([`mcp_transport::server::Listener`]):
//! a request head must arrive within 10 s (and an idle kept-alive
//! connection is closed after as long), and a connection cap under the
//! descriptor limit evicts the slowest connections, then answers 503, so
//! that slow or idle connections cannot keep a client from being answered.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame as BodyFrame, Incoming};
use mcp_proto::jsonrpc::{Notification, Request as RpcRequest, error_codes};
use mcp_proto::{ErrorObject, Frame, Message, ProtocolVersion, RequestId, headers, methods};
use mcp_toolbridge::{Gateway, GatewayConnection};
use mcp_transport::server::{Listener as Bounded, ListenerOptions};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The MCP endpoint's path.
pub(crate) const ENDPOINT: &str = "/mcp";

/// The largest request body read (a call's arguments are rarely more than
/// a few KiB; a file's content a client passes may be more).
const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// The most handshake-era sessions kept at once.
const MAX_SESSIONS: usize = 256;

/// `Mcp-Session-Id` (2025-03-26 spelling; header names compare without case).
const SESSION_HEADER: &str = "mcp-session-id";

type ResponseBody = BoxBody<Bytes, Infallible>;

/// The gateway behind one listener.
pub(crate) struct HttpGateway {
    gateway: Gateway,
    token: String,
    port: u16,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The connection every 2026-07-28 request goes through.
    modern: Arc<Session>,
    /// The ids the gateway gives 2026-07-28 requests on `modern`.
    next_id: AtomicI64,
}

/// The most notifications kept for a session whose GET stream is not open.
const MAX_PENDING: usize = 16;

/// One client's connection, with the stream its notifications go to.
struct Session {
    connection: GatewayConnection,
    listener: Arc<Mutex<Listener>>,
    last_used: Mutex<Instant>,
}

/// Where a session's notifications go: its open GET stream, or, until one
/// opens, a short queue (a client opens its stream after `initialize`, and
/// a catalog may change before it does).
#[derive(Default)]
struct Listener {
    stream: Option<mpsc::UnboundedSender<Bytes>>,
    pending: std::collections::VecDeque<Bytes>,
}

impl Listener {
    fn deliver(&mut self, event: Bytes) {
        if let Some(stream) = &self.stream {
            match stream.send(event) {
                Ok(()) => {}
                Err(mpsc::error::SendError(event)) => {
                    self.stream = None;
                    self.queue(event);
                }
            }
        } else {
            self.queue(event);
        }
    }

    fn queue(&mut self, event: Bytes) {
        if self.pending.len() == MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(event);
    }
}

impl Session {
    fn new(gateway: &Gateway) -> Arc<Session> {
        let (notify, mut notifications) = mpsc::unbounded_channel::<Message>();
        let listener: Arc<Mutex<Listener>> = Arc::default();
        let relay = Arc::clone(&listener);
        // Notifications for the connection as a whole go to its GET stream.
        tokio::spawn(async move {
            while let Some(message) = notifications.recv().await {
                relay
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .deliver(sse_event(&message));
            }
        });
        Arc::new(Session {
            connection: gateway.connect(notify),
            listener,
            last_used: Mutex::new(Instant::now()),
        })
    }

    fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }
}

impl HttpGateway {
    /// A gateway for the listener on `port`, requiring `token`.
    pub(crate) fn new(gateway: Gateway, port: u16, token: String) -> Arc<HttpGateway> {
        let modern = Session::new(&gateway);
        Arc::new(HttpGateway {
            gateway,
            token,
            port,
            sessions: Mutex::default(),
            modern,
            next_id: AtomicI64::new(1),
        })
    }

    /// Serves connections from `listener` until the future is dropped,
    /// within the bounds of mcp-transport's listener (header-read and
    /// keep-alive timeouts, a connection cap under the descriptor limit).
    pub(crate) async fn serve(self: Arc<Self>, listener: TcpListener) {
        Bounded::new(listener, ListenerOptions::default())
            .serve(move |request| {
                let this = Arc::clone(&self);
                async move { this.handle(request).await }
            })
            .await;
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers one HTTP request.
    async fn handle(self: &Arc<Self>, request: Request<Incoming>) -> Response<ResponseBody> {
        if let Err(refusal) = crate::loopback::check_host_and_origin(self.port, request.headers()) {
            return text(StatusCode::FORBIDDEN, refusal);
        }
        let path = request.uri().path();
        let endpoint = path == ENDPOINT
            || path
                .strip_prefix(ENDPOINT)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|token| !token.contains('/'));
        if !endpoint {
            return text(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
        }
        if !self.authorized(&request) {
            let mut response = text(
                StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token: send the token `mcpctl serve --http` printed",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mcpctl serve\""),
            );
            return response;
        }
        match *request.method() {
            Method::POST => self.post(request).await,
            Method::GET => self.get(request.headers()),
            Method::DELETE => self.delete(request.headers()),
            _ => {
                let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                response
            }
        }
    }

    /// Whether the request carries the token: as a bearer token, or, for
    /// a client that can be given only a URL, as the last segment of the
    /// endpoint's path (`/mcp/<token>`).
    fn authorized(&self, request: &Request<Incoming>) -> bool {
        let bearer = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| {
                let (scheme, token) = value.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        let in_path = request
            .uri()
            .path()
            .strip_prefix(ENDPOINT)
            .and_then(|rest| rest.strip_prefix('/'));
        bearer
            .or(in_path)
            .is_some_and(|token| crate::loopback::same_secret(token, &self.token))
    }

    /// The session a request names: `Ok(None)` when it names none, an
    /// error response when it names one that is not (or no longer) there.
    fn session(&self, headers: &HeaderMap) -> Result<Option<Arc<Session>>, ()> {
        let Some(id) = headers.get(SESSION_HEADER) else {
            return Ok(None);
        };
        let id = id.to_str().map_err(|_| ())?;
        let session = self.lock_sessions().get(id).cloned().ok_or(())?;
        session.touch();
        Ok(Some(session))
    }

    async fn post(self: &Arc<Self>, request: Request<Incoming>) -> Response<ResponseBody> {
        let headers = request.headers().clone();
        if !media_type_is(&headers, "application/json") {
            return text(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be application/json",
            );
        }
        if !accepts_both(&headers) {
            return text(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must list application/json and text/event-stream",
            );
        }
        let body = match Limited::new(request.into_body(), BODY_LIMIT)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the body is over 4 MiB or was cut off",
                );
            }
        };
        let message = match Frame::from_slice(&body) {
            Ok(Frame::Single(message)) => message,
            Ok(Frame::Batch(_)) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    ErrorObject::new(
                        error_codes::INVALID_REQUEST,
                        "batches are not accepted: send one message per POST",
                    ),
                );
            }
            Err(error) => {
                let code = if serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_ok() {
                    error_codes::INVALID_REQUEST
                } else {
                    error_codes::PARSE_ERROR
                };
                let error = error.to_string();
                let text = mcp_proto::text::bound(&error, 256);
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    ErrorObject::new(code, format!("not a JSON-RPC message: {text}")),
                );
            }
        };
        let session = match self.session(&headers) {
            Ok(session) => session,
            Err(()) => return session_not_found(&message),
        };
        match message {
            Message::Request(request) => self.request(request, session, &headers).await,
            Message::Notification(notification) => {
                if let Some(session) = session {
                    session.connection.notification(notification);
                } else {
                    self.modern_notification(notification);
                }
                empty(StatusCode::ACCEPTED)
            }
            // The gateway sends no requests, so expects no responses.
            Message::Response(_) | Message::Error(_) => empty(StatusCode::ACCEPTED),
        }
    }

    /// A notification without a session: the 2026-07-28 era cancels by
    /// closing the stream, so nothing needs it (a `notifications/cancelled`
    /// names the client's id, which the shared connection does not use).
    fn modern_notification(&self, _notification: Notification) {}

    async fn request(
        self: &Arc<Self>,
        request: RpcRequest,
        session: Option<Arc<Session>>,
        headers: &HeaderMap,
    ) -> Response<ResponseBody> {
        let header_version = headers
            .get(headers::MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .and_then(ProtocolVersion::parse);
        let modern_header = header_version.is_some_and(|v| ProtocolVersion::MODERN.contains(&v));
        if request.method == methods::INITIALIZE && session.is_none() && modern_header {
            // 2026-07-28 has no initialize: the header says that era.
            return rpc_error(
                StatusCode::NOT_FOUND,
                Some(request.id),
                ErrorObject::method_not_found(&request.method),
            );
        }
        if request.method == methods::INITIALIZE {
            if session.is_some() {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    Some(request.id),
                    ErrorObject::new(
                        error_codes::INVALID_REQUEST,
                        "initialize starts a session: send it without Mcp-Session-Id",
                    ),
                );
            }
            let (id, session) = self.open_session();
            let mut response = answer(session, request, None, false).await;
            if response.status().is_success() {
                if let Ok(value) = HeaderValue::from_str(&id) {
                    response.headers_mut().insert(SESSION_HEADER, value);
                }
            } else {
                self.lock_sessions().remove(&id);
            }
            return response;
        }
        if let Some(session) = session {
            if let Some(value) = headers.get(headers::MCP_PROTOCOL_VERSION) {
                let version = value.to_str().ok().and_then(ProtocolVersion::parse);
                if !version.is_some_and(|v| ProtocolVersion::HANDSHAKE.contains(&v)) {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        Some(request.id),
                        ErrorObject::new(
                            error_codes::INVALID_REQUEST,
                            format!(
                                "unsupported MCP-Protocol-Version {} for a session",
                                mcp_proto::text::bound(
                                    &String::from_utf8_lossy(value.as_bytes()),
                                    64
                                )
                            ),
                        ),
                    );
                }
            }
            return answer(session, request, None, false).await;
        }
        let version = meta_version(&request);
        if version.is_none() && modern_header {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Some(request.id),
                ErrorObject::invalid_params(format!(
                    "a 2026-07-28 request carries its protocol version in _meta ({})",
                    mcp_proto::types::meta::PROTOCOL_VERSION
                )),
            );
        }
        if version.is_none() && request.method != methods::SERVER_DISCOVER {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Some(request.id),
                ErrorObject::new(
                    error_codes::INVALID_REQUEST,
                    "no Mcp-Session-Id: send initialize first, or a 2026-07-28 request with \
                     its protocol version in _meta",
                ),
            );
        }
        if let Err(error) = check_modern_headers(headers, &request, version.as_deref()) {
            return rpc_error(StatusCode::BAD_REQUEST, Some(request.id), error);
        }
        let mut request = request;
        let theirs = std::mem::replace(
            &mut request.id,
            RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed)),
        );
        answer(Arc::clone(&self.modern), request, Some(theirs), true).await
    }

    /// A new handshake-era session, making room when the table is full.
    fn open_session(&self) -> (String, Arc<Session>) {
        let session = Session::new(&self.gateway);
        let id = crate::loopback::new_secret();
        let mut sessions = self.lock_sessions();
        if sessions.len() >= MAX_SESSIONS {
            let idle = sessions
                .iter()
                .filter(|(_, s)| !s.connection.busy())
                .min_by_key(|(_, s)| *s.last_used.lock().unwrap_or_else(PoisonError::into_inner))
                .map(|(id, _)| id.clone());
            if let Some(idle) = idle {
                sessions.remove(&idle);
            }
        }
        sessions.insert(id.clone(), Arc::clone(&session));
        (id, session)
    }

    /// GET: the stream of a session's notifications.
    fn get(&self, headers: &HeaderMap) -> Response<ResponseBody> {
        let session = match self.session(headers) {
            Ok(Some(session)) => session,
            Ok(None) => return no_session_stream(),
            Err(()) => return text(StatusCode::NOT_FOUND, "session not found: initialize again"),
        };
        let accepts = headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/event-stream") || v.contains("*/*"));
        if !accepts {
            return text(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must list text/event-stream",
            );
        }
        let (sender, receiver) = mpsc::unbounded_channel();
        {
            let mut listener = session
                .listener
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if listener
                .stream
                .as_ref()
                .is_some_and(|stream| !stream.is_closed())
            {
                return text(
                    StatusCode::CONFLICT,
                    "this session already has its notification stream open",
                );
            }
            for event in listener.pending.drain(..) {
                let _ = sender.send(event);
            }
            listener.stream = Some(sender);
        }
        let mut response = Response::new(StreamBody(receiver).boxed());
        set_event_stream(&mut response);
        response
    }

    /// DELETE: ends a session, cancelling its calls.
    fn delete(&self, headers: &HeaderMap) -> Response<ResponseBody> {
        let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
            return no_session_stream();
        };
        // Removed from the table, the session may still be held by a
        // request waiting on its answer: its calls are cancelled here, so
        // each upstream server hears of it and no answer follows.
        let removed = self.lock_sessions().remove(id);
        match removed {
            Some(session) => {
                session.connection.cancel_all();
                empty(StatusCode::OK)
            }
            None => text(StatusCode::NOT_FOUND, "session not found"),
        }
    }
}

/// Runs `request` on `session` and answers with what it sends: one JSON
/// body when the answer comes first, else an SSE stream. `theirs` is the
/// client's id when the gateway's own stands in for it; `cancel_on_drop`
/// makes a client that goes away before the answer cancel the call.
async fn answer(
    session: Arc<Session>,
    request: RpcRequest,
    theirs: Option<RequestId>,
    cancel_on_drop: bool,
) -> Response<ResponseBody> {
    let (reply, mut messages) = mpsc::unbounded_channel();
    let mut guard = CancelGuard {
        id: request.id.clone(),
        session,
        armed: cancel_on_drop,
    };
    guard.session.connection.request(request, &reply);
    drop(reply);
    let modern = theirs.is_some();
    match messages.recv().await {
        // Cancelled: nothing comes (the client asked for that).
        None => {
            guard.armed = false;
            let mut response = Response::new(Full::new(Bytes::new()).boxed());
            set_event_stream(&mut response);
            response
        }
        Some(message @ (Message::Response(_) | Message::Error(_))) => {
            guard.armed = false;
            let message = restore_id(message, theirs);
            let status = match &message {
                Message::Error(error) if modern => modern_status(error.error.code),
                _ => StatusCode::OK,
            };
            json(status, &message)
        }
        Some(first) => {
            let body = SseBody {
                first: Some(first),
                messages,
                theirs,
                guard,
                done: false,
            };
            let mut response = Response::new(body.boxed());
            set_event_stream(&mut response);
            response
        }
    }
}

/// Cancels a call when its client goes away before the answer.
struct CancelGuard {
    id: RequestId,
    session: Arc<Session>,
    armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if self.armed {
            self.session.connection.cancel(&self.id);
        }
    }
}

/// A request's SSE stream: what came before the answer, then the answer.
struct SseBody {
    first: Option<Message>,
    messages: mpsc::UnboundedReceiver<Message>,
    theirs: Option<RequestId>,
    guard: CancelGuard,
    done: bool,
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let message = match self.first.take() {
            Some(message) => message,
            None => match self.messages.poll_recv(cx) {
                Poll::Ready(Some(message)) => message,
                Poll::Ready(None) => {
                    self.done = true;
                    self.guard.armed = false;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            },
        };
        let message = if matches!(message, Message::Response(_) | Message::Error(_)) {
            self.done = true;
            self.guard.armed = false;
            restore_id(message, self.theirs.clone())
        } else {
            restore_subscription_id(message, self.theirs.as_ref())
        };
        Poll::Ready(Some(Ok(BodyFrame::data(sse_event(&message)))))
    }
}

/// A stream of ready-made events (a session's GET stream).
struct StreamBody(mpsc::UnboundedReceiver<Bytes>);

impl Body for StreamBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|event| event.map(|bytes| Ok(BodyFrame::data(bytes))))
    }
}

/// Puts the client's id back on an answer the gateway's id stood in for.
fn restore_id(message: Message, theirs: Option<RequestId>) -> Message {
    match (message, theirs) {
        (Message::Response(mut response), Some(id)) => {
            response.id = id;
            Message::Response(response)
        }
        (Message::Error(mut error), Some(id)) => {
            error.id = Some(id);
            Message::Error(error)
        }
        (message, _) => message,
    }
}

/// Puts the client's id back as the subscription id of a
/// `subscriptions/listen` stream's notification ("Subscriptions": it is
/// the listen request's id, which the gateway's own id stood in for).
fn restore_subscription_id(message: Message, theirs: Option<&RequestId>) -> Message {
    let (mut notification, theirs) = match (message, theirs) {
        (Message::Notification(notification), Some(theirs)) => (notification, theirs),
        (message, _) => return message,
    };
    let rewritten = notification.params.as_ref().and_then(|raw| {
        let mut params: Value = raw.decode().ok()?;
        let id = params
            .get_mut("_meta")?
            .get_mut(mcp_proto::types::meta::SUBSCRIPTION_ID)?;
        *id = serde_json::to_value(theirs).ok()?;
        mcp_proto::jsonrpc::RawJson::encode(&params).ok()
    });
    if let Some(raw) = rewritten {
        notification.params = Some(raw);
    }
    Message::Notification(notification)
}

/// The HTTP status of a 2026-07-28 error ("Transports" §Streamable HTTP):
/// an unknown method is a 404; the era's own errors, invalid params (a
/// `_meta` without what it needs, an unknown tool) and invalid requests a
/// 400.
fn modern_status(code: i64) -> StatusCode {
    match code {
        error_codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        -32022..=-32020
        | error_codes::INVALID_PARAMS
        | error_codes::INVALID_REQUEST
        | error_codes::PARSE_ERROR => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// The protocol version a request's `_meta` names, if any.
fn meta_version(request: &RpcRequest) -> Option<String> {
    let params: Value = request.params.as_ref()?.decode().ok()?;
    let version = params
        .get("_meta")?
        .get(mcp_proto::types::meta::PROTOCOL_VERSION)?;
    Some(
        version
            .as_str()
            .map_or_else(|| version.to_string(), str::to_owned),
    )
}

/// The 2026-07-28 request headers ("Transports" §Standard Request Headers):
/// `MCP-Protocol-Version` equal to `_meta`'s, `Mcp-Method` equal to the
/// method, and `Mcp-Name` equal to the name or URI of a request that has
/// one. Missing or different: -32020.
fn check_modern_headers(
    headers: &HeaderMap,
    request: &RpcRequest,
    version: Option<&str>,
) -> Result<(), ErrorObject> {
    let mismatch = |message: String| ErrorObject::new(error_codes::HEADER_MISMATCH, message);
    // Field values are compared without the whitespace around them (RFC
    // 9110 §5.5); names compare without case (the map's own lookup).
    let header = |name: &str| {
        headers
            .get(name)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).trim().to_owned())
    };
    let bound = |text: &str| mcp_proto::text::bound(text, 64).into_owned();
    if let Some(version) = version {
        match header(headers::MCP_PROTOCOL_VERSION) {
            Some(given) if given == version => {}
            Some(given) => {
                return Err(mismatch(format!(
                    "the MCP-Protocol-Version header ({}) differs from the request's _meta ({})",
                    bound(&given),
                    bound(version)
                )));
            }
            None => {
                return Err(mismatch(
                    "the MCP-Protocol-Version header is missing".to_owned(),
                ));
            }
        }
    }
    match header(headers::MCP_METHOD) {
        Some(given) if given == request.method => {}
        Some(given) => {
            return Err(mismatch(format!(
                "the Mcp-Method header ({}) differs from the method ({})",
                bound(&given),
                bound(&request.method)
            )));
        }
        None => return Err(mismatch("the Mcp-Method header is missing".to_owned())),
    }
    if let Some(expected) = headers::name_value(&request.method, request.params.as_ref()) {
        let given = header(headers::MCP_NAME);
        let decoded = given
            .as_deref()
            .map(|given| headers::decode_value(given).map(|v| v.into_owned()));
        match decoded {
            Some(Ok(given)) if given == expected => {}
            Some(_) => {
                return Err(mismatch(format!(
                    "the Mcp-Name header differs from the request's name ({})",
                    bound(&expected)
                )));
            }
            None => return Err(mismatch("the Mcp-Name header is missing".to_owned())),
        }
    }
    Ok(())
}

/// Whether the `Content-Type` is `media` (parameters such as `charset`
/// aside).
fn media_type_is(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|value| value.trim().eq_ignore_ascii_case(media))
}

/// Whether `Accept` lists both answers a POST may get.
fn accepts_both(headers: &HeaderMap) -> bool {
    let accept: Vec<String> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let has = |media: &str| accept.iter().any(|a| a == media || a == "*/*");
    has("application/json") && has("text/event-stream")
}

/// One SSE event carrying `message`.
fn sse_event(message: &Message) -> Bytes {
    let mut line = Vec::new();
    encode_line(message, &mut line);
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    let mut event = Vec::with_capacity(line.len() + 24);
    event.extend_from_slice(b"event: message\ndata: ");
    event.extend_from_slice(&line);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

fn json(status: StatusCode, message: &Message) -> Response<ResponseBody> {
    let mut body = Vec::new();
    encode_line(message, &mut body);
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Appends `message` as one line. A response with no one-line form (a
/// result kept raw from a server, holding a line break inside a string) is
/// replaced by an internal error for its id, so that the peer waiting for
/// it is answered; any other such message is dropped.
fn encode_line(message: &Message, out: &mut Vec<u8>) {
    if let Err(error) = mcp_proto::codec::ndjson::encode(message, out)
        && let Message::Response(response) = message
    {
        let error = ErrorObject::new(error_codes::INTERNAL_ERROR, error.to_string());
        // An error object of our own always has a one-line form.
        let _ = mcp_proto::codec::ndjson::encode(
            &Message::error(Some(response.id.clone()), error),
            out,
        );
    }
}

fn rpc_error(
    status: StatusCode,
    id: Option<RequestId>,
    error: ErrorObject,
) -> Response<ResponseBody> {
    json(status, &Message::error(id, error))
}

/// 404 for a session that is not there: the client starts a new one
/// ("Transports" §Session Management).
fn session_not_found(message: &Message) -> Response<ResponseBody> {
    let id = match message {
        Message::Request(request) => Some(request.id.clone()),
        _ => None,
    };
    rpc_error(
        StatusCode::NOT_FOUND,
        id,
        ErrorObject::new(
            error_codes::INVALID_REQUEST,
            "session not found: it ended; send initialize again",
        ),
    )
}

/// 405 for GET or DELETE without a session: there is no stream or
/// session outside one.
fn no_session_stream() -> Response<ResponseBody> {
    let mut response = text(
        StatusCode::METHOD_NOT_ALLOWED,
        "GET and DELETE need an Mcp-Session-Id",
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

fn set_event_stream(response: &mut Response<ResponseBody>) {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

fn text(status: StatusCode, body: &'static str) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn empty(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, params: Value) -> RpcRequest {
        match Message::request(1, method, Some(&params)).unwrap() {
            Message::Request(request) => request,
            _ => unreachable!(),
        }
    }

    use crate::loopback::headers;

    #[test]
    fn modern_headers_must_mirror_the_body() {
        let call = request(
            "tools/call",
            serde_json::json!({"name": "mcp_fx_echo", "arguments": {},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        );
        let version = meta_version(&call);
        assert_eq!(version.as_deref(), Some("2026-07-28"));
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "mcp_fx_echo"),
        ];
        assert!(check_modern_headers(&headers(&good), &call, version.as_deref()).is_ok());
        let encoded = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?bWNwX2Z4X2VjaG8=?="),
        ];
        assert!(check_modern_headers(&headers(&encoded), &call, version.as_deref()).is_ok());
        for bad in [
            &good[1..],
            &[good[0], good[2]][..],
            &good[..2],
            &[good[0], ("mcp-method", "tools/list"), good[2]][..],
            &[good[0], good[1], ("mcp-name", "other")][..],
            &[("mcp-protocol-version", "2025-11-25"), good[1], good[2]][..],
        ] {
            let error = check_modern_headers(&headers(bad), &call, version.as_deref())
                .expect_err("refused");
            assert_eq!(error.code, error_codes::HEADER_MISMATCH, "{bad:?}");
        }
        let list = request("tools/list", serde_json::json!({}));
        assert!(meta_version(&list).is_none());
    }

    #[test]
    fn posts_must_be_json_and_accept_both_answers() {
        assert!(media_type_is(
            &headers(&[("content-type", "application/json; charset=utf-8")]),
            "application/json"
        ));
        assert!(!media_type_is(
            &headers(&[("content-type", "text/plain")]),
            "application/json"
        ));
        assert!(accepts_both(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(accepts_both(&headers(&[("accept", "*/*")])));
        assert!(!accepts_both(&headers(&[("accept", "application/json")])));
    }

    #[test]
    fn modern_errors_get_their_http_status_and_answers_their_client_id() {
        assert_eq!(
            modern_status(error_codes::METHOD_NOT_FOUND),
            StatusCode::NOT_FOUND
        );
        assert_eq!(modern_status(-32022), StatusCode::BAD_REQUEST);
        assert_eq!(
            modern_status(error_codes::INVALID_PARAMS),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(modern_status(error_codes::INTERNAL_ERROR), StatusCode::OK);
        let error = Message::error(Some(RequestId::Number(77)), ErrorObject::new(-32601, "x"));
        match restore_id(error, Some(RequestId::String("theirs".into()))) {
            Message::Error(error) => assert_eq!(error.id, Some(RequestId::String("theirs".into()))),
            _ => unreachable!(),
        }
        let event = sse_event(&Message::error(None, ErrorObject::new(-32700, "bad")));
        assert!(event.starts_with(b"event: message\ndata: {"));
        assert!(event.ends_with(b"}\n\n"));
    }
}

//! Streamable HTTP serving (MCP "Transports" §Streamable HTTP): one endpoint answering both protocol eras through an application's [`ServerHandler`], with sessions, SSE streams, an access policy hook and bounds.
//!
//! [`HttpServer`] answers the requests of one endpoint
//! ([`HttpServerOptions::endpoint`], `/mcp` by default), served by the bounded
//! accept loop ([`Listener`]) or by a host's own ([`HttpServer::handle`]):
//!
//! - **Handshake era** (2024-11-05 to 2025-11-25): a POST of `initialize`
//!   without a session starts one, a [`ServerSession`] of its own with the
//!   handler [`HttpApp::connect`] gives it; its answer carries
//!   `Mcp-Session-Id`, which every later request must carry (an unknown
//!   one gets 404, as for a session that ended, so that the client starts
//!   again; "Transports" §Session Management). A GET with the session
//!   opens the stream its notifications and the server's own requests
//!   arrive on (one at a time: a second gets 409; until one opens, the
//!   newest [`HttpServerOptions::pending_events`] wait). DELETE ends the session:
//!   every request in flight is cancelled (the handler's future is
//!   dropped) and none is answered. An `MCP-Protocol-Version` header must
//!   name a version of that era (400 otherwise). A client's disconnect is
//!   not a cancellation ("Transports" §Streamable HTTP); a
//!   `notifications/cancelled` POST is.
//! - **Stateless era** (2026-07-28): a POST whose `_meta` names the
//!   version, without a session. Its `MCP-Protocol-Version` header must
//!   equal that version, `Mcp-Method` the method and `Mcp-Name` the tool,
//!   prompt or resource it names (missing or different: 400 with -32020,
//!   "Transports" §Standard Request Headers). Each such request is a
//!   connection of its own (a session and a handler from
//!   [`HttpApp::connect`]), so clients never collide on ids; closing its
//!   response stream cancels it. Its errors get their HTTP status (an
//!   unknown method 404; invalid params, invalid requests and the era's
//!   own errors 400). `initialize` with that era's header is a 404 with
//!   -32601, so that a client probing eras falls back; GET and DELETE
//!   without a session are 405.
//!
//! A request's answer is one JSON body when it comes first, or else an SSE
//! stream: what concerns the request (its progress; in the stateless era,
//! every notification of its connection), then the answer, which ends it.
//!
//! Access: before anything else, the application's [`AccessPolicy`] sees
//! each request's head ([`AccessPolicy::check_origin`], then, for the
//! endpoint, [`AccessPolicy::authorize`]); [`LoopbackPolicy`] is the
//! policy of a server on 127.0.0.1 (`Host` and `Origin` must name it, and
//! a bearer token). Every response carries `X-Content-Type-Options:
//! nosniff`, `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.
//!
//! Bounds on what clients feed the server:
//! - a request body over [`HttpServerOptions::body_limit`] (4 MiB) is refused
//!   with 413 without being held whole; batches are refused (400);
//! - at most [`HttpServerOptions::max_sessions`] sessions are kept: the least
//!   recently used one with nothing in flight makes room for a new one;
//! - a session answers at most [`ServerOptions::max_in_flight`] requests
//!   at once, and at most as many stateless requests run at once
//!   ([`HttpServerOptions::max_stateless_in_flight`]): above it the request is
//!   refused with a JSON-RPC error (-32603, "too many requests in flight
//!   (at most N); try again when one has ended");
//! - a session takes its client's messages through a queue of
//!   [`HttpServerOptions::session_queue`]: a POST waits for room (backpressure);
//! - a request's stream holds at most [`HttpServerOptions::request_stream`]
//!   messages its client has not read, and the GET stream
//!   [`HttpServerOptions::event_stream`]: past that, further progress reports and
//!   notifications are dropped (never the request's answer, which always
//!   has its place).

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame as BodyFrame};
use mcp_proto::jsonrpc::{Message, Request as RpcRequest, error_codes};
use mcp_proto::server::{ServerOptions, ServerSession};
use mcp_proto::{ErrorObject, Frame, ProtocolVersion, RequestId, headers, methods};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use super::listener::Listener;
use super::stream::{Command, Connection, Outlet, Peer, ServerHandler, next_answer, sleep_until};

/// The body of every response [`HttpServer`] gives.
pub type HttpBody = BoxBody<Bytes, Infallible>;

/// `Mcp-Session-Id` (header names compare without case).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The default of [`HttpServerOptions::body_limit`]: 4 MiB.
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// The default of [`HttpServerOptions::max_sessions`]: 256.
pub const MAX_SESSIONS: usize = 256;

/// Options of an [`HttpServer`]. Every field has a documented default.
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct HttpServerOptions {
    /// The endpoint's path. A request for another path is answered 404,
    /// except `<endpoint>/<segment>`, which is the endpoint with a segment
    /// the [`AccessPolicy`] may read (a token in the URL). Default `/mcp`.
    #[setters(into)]
    pub endpoint: String,
    /// The largest request body read. Default [`BODY_LIMIT`].
    pub body_limit: usize,
    /// The most handshake-era sessions kept. Default [`MAX_SESSIONS`].
    pub max_sessions: usize,
    /// The most stateless-era requests answered at once. Default 64.
    pub max_stateless_in_flight: usize,
    /// The messages a session's queue holds before a POST waits. Default 16.
    pub session_queue: usize,
    /// The messages a request's SSE stream holds unread before its progress
    /// reports are dropped (its answer always has a place). Default 32.
    pub request_stream: usize,
    /// The events a session's GET stream holds unread before further ones
    /// are dropped. Default 64.
    pub event_stream: usize,
    /// The newest events kept for a session whose GET stream is not open.
    /// Default 16.
    pub pending_events: usize,
}

impl Default for HttpServerOptions {
    fn default() -> Self {
        HttpServerOptions {
            endpoint: "/mcp".to_owned(),
            body_limit: BODY_LIMIT,
            max_sessions: MAX_SESSIONS,
            max_stateless_in_flight: 64,
            session_queue: 16,
            request_stream: 32,
            event_stream: 64,
            pending_events: 16,
        }
    }
}

/// The application an [`HttpServer`] serves: what each connection's
/// session says of the server, and the handler that answers its requests.
pub trait HttpApp: Send + Sync + 'static {
    /// The session options of a new connection (who the server is, what it
    /// offers, its versions and bounds), read once per connection.
    fn options(&self) -> ServerOptions;

    /// The handler of a new connection: a handshake-era session, or one
    /// stateless-era request. `peer` is that connection's client.
    fn connect(&self, peer: Peer) -> Arc<dyn ServerHandler>;

    /// The `x-mcp-header` annotations of the tool served as `tool`, which
    /// the server checks each 2026-07-28 `tools/call`'s `Mcp-Param-*`
    /// headers against (SEP-2243; MCP 2026-07-28 "Transports" §Streamable
    /// HTTP, Custom Headers from Tool Parameters): a header that is
    /// missing, extra, different from its argument or not a valid header
    /// value is refused with 400 and -32020. Default: none, nothing
    /// checked.
    fn tool_param_headers(&self, tool: &str) -> Option<headers::ToolParamHeaders> {
        let _ = tool;
        None
    }
}

/// The same options and handler for every connection.
impl HttpApp for (ServerOptions, Arc<dyn ServerHandler>) {
    fn options(&self) -> ServerOptions {
        self.0.clone()
    }

    fn connect(&self, _peer: Peer) -> Arc<dyn ServerHandler> {
        Arc::clone(&self.1)
    }
}

/// A request refused by an [`AccessPolicy`]: its status, its reason (the
/// body, plain text) and, for a 401, the `WWW-Authenticate` challenge.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Refusal {
    /// The response's status (403, 401, ...).
    pub status: StatusCode,
    /// Why, in words; sent as the body.
    pub reason: Cow<'static, str>,
    /// A `WWW-Authenticate` value to send with it.
    pub challenge: Option<HeaderValue>,
}

impl Refusal {
    /// A refusal with `status` and `reason`.
    pub fn new(status: StatusCode, reason: impl Into<Cow<'static, str>>) -> Self {
        Refusal {
            status,
            reason: reason.into(),
            challenge: None,
        }
    }

    /// The same refusal with a `WWW-Authenticate` challenge.
    pub fn challenge(mut self, value: HeaderValue) -> Self {
        self.challenge = Some(value);
        self
    }
}

/// Who may use an [`HttpServer`], decided from each request's head
/// ("Transports" §Security Warning: validate `Origin`; bind to localhost;
/// authenticate). Both checks pass by default.
pub trait AccessPolicy: Send + Sync + 'static {
    /// Whether the request is addressed to this server at all (`Host`,
    /// `Origin`); checked first, for every path.
    fn check_origin(&self, request: &Parts) -> Result<(), Refusal> {
        let _ = request;
        Ok(())
    }

    /// Whether the request carries the credentials the endpoint needs;
    /// checked once its path is the endpoint's.
    fn authorize(&self, request: &Parts) -> Result<(), Refusal> {
        let _ = request;
        Ok(())
    }
}

/// The policy of a server on 127.0.0.1 (no DNS rebinding, no web page can
/// drive it): `Host` must be `127.0.0.1:PORT` or `localhost:PORT` and an
/// `Origin`, when present, `http://` one of them (403 otherwise); with a
/// token, every request to the endpoint must carry it, as
/// `Authorization: Bearer <token>` or as the path's last segment
/// (`<endpoint>/<token>`, for a client that can be given only a URL), 401
/// otherwise. Tokens are compared without stopping at the first difference.
#[derive(Clone)]
pub struct LoopbackPolicy {
    port: u16,
    token: Option<String>,
    realm: String,
}

impl std::fmt::Debug for LoopbackPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: never listed.
        f.debug_struct("LoopbackPolicy")
            .field("port", &self.port)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl LoopbackPolicy {
    /// The policy of a listener on port `port`, without a token.
    pub fn new(port: u16) -> Self {
        LoopbackPolicy {
            port,
            token: None,
            realm: "mcp".to_owned(),
        }
    }

    /// The same policy requiring `token`; a refusal names `realm` in its
    /// `WWW-Authenticate` challenge.
    pub fn bearer_token(mut self, token: impl Into<String>, realm: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self.realm = realm.into();
        self
    }
}

impl AccessPolicy for LoopbackPolicy {
    fn check_origin(&self, request: &Parts) -> Result<(), Refusal> {
        check_host_and_origin(self.port, &request.headers)
            .map_err(|reason| Refusal::new(StatusCode::FORBIDDEN, reason))
    }

    fn authorize(&self, request: &Parts) -> Result<(), Refusal> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        let bearer = request
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| {
                let (scheme, token) = value.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        let in_path = request.uri.path().rsplit_once('/').map(|(_, last)| last);
        if bearer.is_some_and(|given| same_secret(given, token))
            || in_path.is_some_and(|given| same_secret(given, token))
        {
            return Ok(());
        }
        let challenge = HeaderValue::from_str(&format!(
            "Bearer realm=\"{}\"",
            self.realm.replace(['"', '\\'], "")
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        Err(Refusal::new(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token: send the token the server printed at launch",
        )
        .challenge(challenge))
    }
}

/// Refuses a request that is not addressed to a loopback listener on
/// `port`: `Host` must be `127.0.0.1:PORT` or `localhost:PORT` (a rebound
/// DNS name fails here), and an `Origin`, when present, must be `http://`
/// one of the same (a cross-site request fails here). The error is the
/// refusal's text.
pub fn check_host_and_origin(port: u16, headers: &HeaderMap) -> Result<(), &'static str> {
    let allowed = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !allowed.iter().any(|a| a.eq_ignore_ascii_case(host)) {
        return Err("refused: the Host header does not name this loopback listener");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !allowed
            .iter()
            .any(|a| origin.eq_ignore_ascii_case(&format!("http://{a}")))
        {
            return Err("refused: cross-origin request");
        }
    }
    Ok(())
}

/// Whether `given` is `secret`, compared without stopping at the first
/// difference.
pub fn same_secret(given: &str, secret: &str) -> bool {
    given.len() == secret.len()
        && given
            .bytes()
            .zip(secret.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A fresh secret: 128 random bits from the operating system, as 32 hex
/// digits (a session id; a launch's token). The standard library's
/// `RandomState` keys come from the same source; they are the fallback
/// where `/dev/urandom` is missing.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 16];
    let from_os = std::fs::File::open("/dev/urandom")
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut bytes));
    if from_os.is_err() {
        use std::hash::{BuildHasher, Hasher};
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_usize(i);
            chunk.copy_from_slice(&hasher.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A Streamable HTTP server of an [`HttpApp`] (see the module docs).
/// Cheap to clone; clones share the sessions.
#[derive(Clone)]
pub struct HttpServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("options", &self.inner.options)
            .field("sessions", &self.inner.lock().len())
            .finish_non_exhaustive()
    }
}

struct Inner {
    app: Arc<dyn HttpApp>,
    policy: Arc<dyn AccessPolicy>,
    options: HttpServerOptions,
    sessions: Mutex<HashMap<String, Arc<SessionEntry>>>,
    stateless: Arc<Semaphore>,
}

/// A handshake-era session as the table holds it.
struct SessionEntry {
    inbound: mpsc::Sender<Inbound>,
    last_used: Mutex<Instant>,
    in_flight: Arc<AtomicUsize>,
}

/// What a session's task is asked.
enum Inbound {
    /// A message from the client, with the stream its answer goes to when
    /// it is a request.
    Message(Message, Option<Route>),
    /// A GET: the stream the session's own messages go to from now on, or
    /// `Err` through `opened` when one is already open.
    Stream(mpsc::Sender<Bytes>, oneshot::Sender<bool>),
    /// DELETE: the session ends, its requests cancelled.
    End,
}

/// What goes down a request's stream.
enum Out {
    /// A message about the request (progress, a notification).
    Event(Message),
    /// Its answer, the last.
    Final(Message),
}

type Route = mpsc::Sender<Out>;

impl HttpServer {
    /// A server of `app`, admitting what `policy` admits.
    pub fn new(
        app: Arc<dyn HttpApp>,
        policy: Arc<dyn AccessPolicy>,
        options: HttpServerOptions,
    ) -> Self {
        let stateless = Arc::new(Semaphore::new(options.max_stateless_in_flight.max(1)));
        HttpServer {
            inner: Arc::new(Inner {
                app,
                policy,
                options,
                sessions: Mutex::default(),
                stateless,
            }),
        }
    }

    /// Serves `listener`'s connections until the future is dropped (the
    /// sessions end with the last clone of the server).
    pub async fn serve(self, listener: Listener) {
        listener
            .serve(move |request| {
                let server = self.clone();
                async move { server.handle(request).await }
            })
            .await;
    }

    /// How many handshake-era sessions are open.
    pub fn sessions(&self) -> usize {
        self.inner.lock().len()
    }

    /// Answers one HTTP request, for a host that runs its own accept loop.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<HttpBody>
    where
        B: Body + Send,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut response = self.inner.route(request).await;
        let headers = response.headers_mut();
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<SessionEntry>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn route<B>(self: &Arc<Self>, request: Request<B>) -> Response<HttpBody>
    where
        B: Body + Send,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        if let Err(refusal) = self.policy.check_origin(&parts) {
            return refused(refusal);
        }
        let endpoint = &self.options.endpoint;
        let path = parts.uri.path();
        let at_endpoint = path == endpoint
            || path
                .strip_prefix(endpoint.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|segment| !segment.contains('/'));
        if !at_endpoint {
            return text(
                StatusCode::NOT_FOUND,
                "not found: this is not the MCP endpoint",
            );
        }
        if let Err(refusal) = self.policy.authorize(&parts) {
            return refused(refusal);
        }
        match parts.method {
            Method::POST => self.post(parts, body).await,
            Method::GET => self.get(&parts.headers).await,
            Method::DELETE => self.delete(&parts.headers).await,
            _ => {
                let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                response
            }
        }
    }

    /// The session a request names: `Ok(None)` when it names none, `Err`
    /// when it names one that is not (or no longer) there.
    fn session(&self, headers: &HeaderMap) -> Result<Option<Arc<SessionEntry>>, ()> {
        let Some(id) = headers.get(SESSION_HEADER) else {
            return Ok(None);
        };
        let id = id.to_str().map_err(|_| ())?;
        let session = self.lock().get(id).cloned().ok_or(())?;
        *session
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        Ok(Some(session))
    }

    async fn post<B>(self: &Arc<Self>, parts: Parts, body: B) -> Response<HttpBody>
    where
        B: Body + Send,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let headers = parts.headers;
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
        let body = match Limited::new(body, self.options.body_limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the body is over the server's limit or was cut off",
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
            // A notification or an answer to the server's request: a
            // session's (without one, the stateless era cancels by closing
            // the stream, and its connections send no requests).
            other => {
                if let Some(session) = session {
                    let _ = session.inbound.send(Inbound::Message(other, None)).await;
                }
                empty(StatusCode::ACCEPTED)
            }
        }
    }

    async fn request(
        self: &Arc<Self>,
        request: RpcRequest,
        session: Option<Arc<SessionEntry>>,
        headers: &HeaderMap,
    ) -> Response<HttpBody> {
        let header_version = headers
            .get(headers::MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .and_then(ProtocolVersion::parse);
        let modern_header = header_version.is_some_and(|v| ProtocolVersion::MODERN.contains(&v));
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
            if modern_header {
                // 2026-07-28 has no initialize: the header says that era.
                return rpc_error(
                    StatusCode::NOT_FOUND,
                    Some(request.id),
                    ErrorObject::method_not_found(&request.method),
                );
            }
            return self.open_session(request).await;
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
            return answer(
                &session.inbound,
                request,
                false,
                self.options.request_stream,
            )
            .await;
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
        if let Err(error) = check_modern_headers(headers, &request, version.as_deref())
            .and_then(|()| params::check(headers, &request, self.app.as_ref()))
        {
            return rpc_error(StatusCode::BAD_REQUEST, Some(request.id), error);
        }
        let Ok(permit) = Arc::clone(&self.stateless).try_acquire_owned() else {
            return rpc_error(
                StatusCode::OK,
                Some(request.id),
                ErrorObject::new(
                    error_codes::INTERNAL_ERROR,
                    format!(
                        "too many requests in flight (at most {}); try again when one has ended",
                        self.options.max_stateless_in_flight.max(1)
                    ),
                ),
            );
        };
        let inbound = self.start(true, Some(permit), Arc::default());
        answer(&inbound, request, true, self.options.request_stream).await
    }

    /// Starts a connection's task: a session of its own with the
    /// application's handler. `stateless`: it answers one request, then
    /// ends (or ends when that request's stream is closed).
    fn start(
        &self,
        stateless: bool,
        permit: Option<OwnedSemaphorePermit>,
        in_flight: Arc<AtomicUsize>,
    ) -> mpsc::Sender<Inbound> {
        let (peer, commands) = Peer::channel();
        let handler = self.app.connect(peer.clone());
        let session = ServerSession::new(self.app.options());
        let outlet = Routes {
            routes: HashMap::new(),
            stateless,
            stream: None,
            pending: VecDeque::new(),
            pending_cap: self.options.pending_events,
            answered: false,
        };
        let connection = Connection::new(session, handler, peer, outlet);
        let (inbound, receiver) = mpsc::channel(self.options.session_queue.max(1));
        tokio::spawn(run(connection, receiver, commands, in_flight, permit));
        inbound
    }

    /// `initialize` without a session: a new session, kept when the
    /// handshake succeeds.
    async fn open_session(self: &Arc<Self>, request: RpcRequest) -> Response<HttpBody> {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let inbound = self.start(false, None, Arc::clone(&in_flight));
        let mut response = answer(&inbound, request, false, self.options.request_stream).await;
        if response.extensions().get::<Succeeded>().is_none() {
            let _ = inbound.send(Inbound::End).await;
            return response;
        }
        let id = new_secret();
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
        let entry = Arc::new(SessionEntry {
            inbound,
            last_used: Mutex::new(Instant::now()),
            in_flight,
        });
        let evicted = {
            let mut sessions = self.lock();
            let mut evicted = None;
            if sessions.len() >= self.options.max_sessions.max(1) {
                let idle = sessions
                    .iter()
                    .filter(|(_, s)| s.in_flight.load(Ordering::Acquire) == 0)
                    .min_by_key(|(_, s)| {
                        *s.last_used.lock().unwrap_or_else(PoisonError::into_inner)
                    })
                    .map(|(id, _)| id.clone());
                evicted = idle.and_then(|idle| sessions.remove(&idle));
            }
            sessions.insert(id, entry);
            evicted
        };
        if let Some(evicted) = evicted {
            let _ = evicted.inbound.send(Inbound::End).await;
        }
        response
    }

    /// GET: the stream of a session's own messages.
    async fn get(&self, headers: &HeaderMap) -> Response<HttpBody> {
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
        let (sender, receiver) = mpsc::channel(self.options.event_stream.max(1));
        let (opened, answer) = oneshot::channel();
        if session
            .inbound
            .send(Inbound::Stream(sender, opened))
            .await
            .is_err()
            || !answer.await.unwrap_or(false)
        {
            return text(
                StatusCode::CONFLICT,
                "this session already has its stream open",
            );
        }
        let mut response = Response::new(EventsBody(receiver).boxed());
        set_event_stream(&mut response);
        response
    }

    /// DELETE: ends a session, cancelling its requests.
    async fn delete(&self, headers: &HeaderMap) -> Response<HttpBody> {
        let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
            return no_session_stream();
        };
        let removed = self.lock().remove(id);
        match removed {
            Some(session) => {
                let _ = session.inbound.send(Inbound::End).await;
                empty(StatusCode::OK)
            }
            None => text(StatusCode::NOT_FOUND, "session not found"),
        }
    }
}

/// Marks a response whose JSON body is a result (not an error).
#[derive(Clone, Copy)]
struct Succeeded;

/// Sends `request` to a connection's task and answers with what comes
/// back: one JSON body when the answer comes first, else an SSE stream of
/// what comes before it, then it. `modern`: a stateless-era request, whose
/// errors get their HTTP status.
async fn answer(
    inbound: &mpsc::Sender<Inbound>,
    request: RpcRequest,
    modern: bool,
    capacity: usize,
) -> Response<HttpBody> {
    let (route, mut messages) = mpsc::channel(capacity.max(2));
    let id = request.id.clone();
    if inbound
        .send(Inbound::Message(Message::Request(request), Some(route)))
        .await
        .is_err()
    {
        return session_gone(Some(id));
    }
    match messages.recv().await {
        // Ended without an answer (cancelled, the session deleted).
        None => {
            let mut response = Response::new(Full::new(Bytes::new()).boxed());
            set_event_stream(&mut response);
            response
        }
        Some(Out::Final(message)) => {
            let status = match &message {
                Message::Error(error) if modern => modern_status(error.error.code),
                _ => StatusCode::OK,
            };
            let ok = matches!(message, Message::Response(_));
            let mut response = json(status, &message);
            if ok {
                response.extensions_mut().insert(Succeeded);
            }
            response
        }
        Some(Out::Event(first)) => {
            let body = SseBody {
                first: Some(first),
                messages,
                done: false,
            };
            let mut response = Response::new(body.boxed());
            set_event_stream(&mut response);
            response
        }
    }
}

/// Runs one connection: its client's messages, its handler's answers and
/// the session's deadlines, until it ends (a handshake-era session when
/// deleted or dropped from the table; a stateless one when its request is
/// answered or its stream closed). Then every request still in flight is
/// cancelled.
async fn run(
    mut connection: Connection<Routes>,
    mut inbound: mpsc::Receiver<Inbound>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    in_flight: Arc<AtomicUsize>,
    _permit: Option<OwnedSemaphorePermit>,
) {
    let stateless = connection.out.stateless;
    let mut reading = true;
    let mut watched: Option<Route> = None;
    loop {
        in_flight.store(connection.in_flight(), Ordering::Release);
        if stateless && connection.out.answered {
            break;
        }
        let timeout = connection.session.poll_timeout();
        tokio::select! {
            biased;
            Some(command) = commands.recv() => connection.command(command),
            Some(answered) = next_answer(&mut connection.running) => connection.answered(answered, &mut commands),
            () = sleep_until(timeout) => connection.timeout(),
            // A stateless request's client closed its stream: cancelled.
            () = closed(watched.as_ref()) => break,
            message = inbound.recv(), if reading => match message {
                None if stateless => reading = false,
                None | Some(Inbound::End) => break,
                Some(Inbound::Message(message, route)) => {
                    if let (Message::Request(request), Some(route)) = (&message, route) {
                        if connection.out.routes.contains_key(&request.id) {
                            // Its answer would go to the first request's
                            // stream: refused here, the first goes on.
                            let _ = route.try_send(Out::Final(duplicate(&request.id)));
                            continue;
                        }
                        if stateless {
                            watched = Some(route.clone());
                        }
                        connection.out.routes.insert(request.id.clone(), route);
                    }
                    connection.message(message);
                }
                Some(Inbound::Stream(stream, opened)) => {
                    let _ = opened.send(connection.out.open_stream(stream));
                }
            },
        }
    }
    connection.shut();
    in_flight.store(0, Ordering::Release);
}

/// The answer to a request whose id is one the session still has in
/// flight ("Base Protocol": ids are unique among a session's requests).
fn duplicate(id: &RequestId) -> Message {
    Message::error(
        Some(id.clone()),
        ErrorObject::new(
            error_codes::INVALID_REQUEST,
            format!(
                "request id {} is already in flight in this session",
                mcp_proto::text::bound(&id.to_string(), 64)
            ),
        ),
    )
}

/// Waits until the stream `route` feeds is closed by its reader (forever
/// when there is none).
async fn closed(route: Option<&Route>) {
    match route {
        Some(route) => route.closed().await,
        None => std::future::pending().await,
    }
}

/// Where one HTTP connection's outgoing messages go: an answer to the
/// stream of its request, a request's progress to the same, anything else
/// to the GET stream (or, until it opens, a short queue); in a stateless
/// connection everything to its one request's stream.
struct Routes {
    routes: HashMap<RequestId, Route>,
    stateless: bool,
    stream: Option<mpsc::Sender<Bytes>>,
    pending: VecDeque<Bytes>,
    pending_cap: usize,
    /// A stateless connection's request was answered.
    answered: bool,
}

impl Routes {
    /// A GET stream opens: `false` when one is open already.
    fn open_stream(&mut self, stream: mpsc::Sender<Bytes>) -> bool {
        if self.stream.as_ref().is_some_and(|open| !open.is_closed()) {
            return false;
        }
        for event in self.pending.drain(..) {
            // A new stream has room for what was queued (at most its size).
            let _ = stream.try_send(event);
        }
        self.stream = Some(stream);
        true
    }

    /// A message for the session as a whole.
    fn deliver(&mut self, message: &Message) {
        let event = sse_event(message);
        if let Some(stream) = &self.stream {
            match stream.try_send(event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::debug!("a client's event stream is full: an event is dropped");
                }
                Err(mpsc::error::TrySendError::Closed(event)) => {
                    self.stream = None;
                    self.queue(event);
                }
            }
        } else {
            self.queue(event);
        }
    }

    fn queue(&mut self, event: Bytes) {
        if self.pending_cap == 0 {
            return;
        }
        if self.pending.len() >= self.pending_cap {
            self.pending.pop_front();
        }
        self.pending.push_back(event);
    }
}

/// Sends one message about a request, keeping the stream's last place for
/// its answer.
fn event(route: &Route, message: Message) {
    if route.capacity() > 1 {
        let _ = route.try_send(Out::Event(message));
    } else {
        tracing::debug!("a request's stream is full: a progress report is dropped");
    }
}

impl Outlet for Routes {
    fn transmit(&mut self, frame: Frame, about: Option<&RequestId>) {
        // Batches are refused before they reach the session.
        let Frame::Single(message) = frame else {
            return;
        };
        let answered = match &message {
            Message::Response(response) => Some(response.id.clone()),
            Message::Error(error) => error.id.clone(),
            _ => None,
        };
        if let Some(id) = answered {
            if let Some(route) = self.routes.remove(&id) {
                // The last place was kept for it.
                let _ = route.try_send(Out::Final(message));
            }
            if self.stateless {
                self.answered = true;
            }
            return;
        }
        if let Some(route) = about.and_then(|id| self.routes.get(id)) {
            return event(route, message);
        }
        if self.stateless {
            if let Some(route) = self.routes.values().next() {
                event(route, message);
            }
            return;
        }
        self.deliver(&message);
    }

    fn ended(&mut self, id: &RequestId) {
        // Its stream ends without an answer.
        self.routes.remove(id);
        if self.stateless {
            self.answered = true;
        }
    }
}

/// A request's SSE stream: what came before the answer, then the answer.
struct SseBody {
    first: Option<Message>,
    messages: mpsc::Receiver<Out>,
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
                Poll::Ready(Some(Out::Event(message))) => message,
                Poll::Ready(Some(Out::Final(message))) => {
                    self.done = true;
                    message
                }
                Poll::Ready(None) => {
                    self.done = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            },
        };
        Poll::Ready(Some(Ok(BodyFrame::data(sse_event(&message)))))
    }
}

/// A session's GET stream: ready-made events.
struct EventsBody(mpsc::Receiver<Bytes>);

impl Body for EventsBody {
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

fn json(status: StatusCode, message: &Message) -> Response<HttpBody> {
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
/// result kept raw from elsewhere, holding a line break inside a string)
/// is replaced by an internal error for its id, so that the peer waiting
/// for it is answered; any other such message is dropped.
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

fn rpc_error(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Response<HttpBody> {
    json(status, &Message::error(id, error))
}

/// 404 for a session that is not there: the client starts a new one
/// ("Transports" §Session Management).
fn session_not_found(message: &Message) -> Response<HttpBody> {
    let id = match message {
        Message::Request(request) => Some(request.id.clone()),
        _ => None,
    };
    session_gone(id)
}

/// 404 for a request to a session that is not (or no longer) there.
fn session_gone(id: Option<RequestId>) -> Response<HttpBody> {
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
fn no_session_stream() -> Response<HttpBody> {
    let mut response = text(
        StatusCode::METHOD_NOT_ALLOWED,
        "GET and DELETE need an Mcp-Session-Id",
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

fn set_event_stream(response: &mut Response<HttpBody>) {
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
}

fn refused(refusal: Refusal) -> Response<HttpBody> {
    let mut response = text(refusal.status, refusal.reason);
    if let Some(challenge) = refusal.challenge {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

fn text(status: StatusCode, body: impl Into<Cow<'static, str>>) -> Response<HttpBody> {
    let body = match body.into() {
        Cow::Borrowed(text) => Bytes::from_static(text.as_bytes()),
        Cow::Owned(text) => Bytes::from(text),
    };
    let mut response = Response::new(Full::new(body).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn empty(status: StatusCode) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

mod params;
#[cfg(test)]
mod tests;

//! Streamable HTTP serving (MCP "Transports" §Streamable HTTP): one endpoint answering both protocol eras through an application's [`ServerHandler`], with sessions, SSE streams, an access policy hook and bounds.
//!
//! [`HttpServer`] answers the requests of one endpoint
//! ([`HttpServerOptions::endpoint`], `/mcp` by default), served by the bounded
//! accept loop ([`Listener`]) or by a host's own ([`HttpServer::handle`], or
//! the server as a hyper `Service`), which may wrap it; a host may end a
//! session itself ([`HttpServer::end_session`]):
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
//!   [`HttpApp::connect`]), so clients never collide on ids, run on the
//!   request's own task (a task of its own only when it outlives the
//!   response: an answer on an SSE stream); closing its response stream
//!   cancels it. Its errors get their HTTP status (an
//!   unknown method 404; invalid params, invalid requests and the era's
//!   own errors 400). `initialize` with that era's header is a 404 with
//!   -32601, so that a client probing eras falls back; GET and DELETE
//!   without a session are 405.
//!
//! A request's answer is one JSON body when it comes first, or else an SSE
//! stream: what concerns the request (its progress; in the stateless era,
//! every notification of its connection), then the answer, which ends it.
//! [`HttpServerOptions::stream_answers`] (every request) and
//! [`RequestContext::open_stream`] (one request) open the stream at once
//! instead, with a priming event (in sessions at 2025-11-25 and later).
//! Over [`RequestContext::notify`] and [`RequestContext::request`] a
//! handler's messages about its request go on the request's stream;
//! [`Peer`]'s go on the GET stream.
//!
//! Resumability ("Transports" §Resumability and Redelivery): in a
//! handshake-era session every SSE event has an id, `STREAM-SEQ`, unique
//! within the session, and each stream keeps its newest events for
//! replay, at most [`REPLAY_EVENTS`] (64) and [`REPLAY_BYTES`] (256 KiB)
//! (the newest event whatever its size); a session keeps its open streams
//! and the [`RETAINED_STREAMS`] (16) that finished last. A GET whose
//! `Last-Event-ID` names a kept stream gets that stream's kept events
//! after the id, then the rest of the stream as it comes (a request's
//! answer ends it); any other GET opens the session's stream. From
//! 2025-11-25, SSE streams open with a priming event (an id, no data,
//! [`HttpServerOptions::retry`]), and a handler may close its request's
//! stream early with [`RequestContext::close_stream`] ("SSE polling"): an
//! event with an id and `retry`, then the end of the response; the client
//! comes back with GET and `Last-Event-ID`. Events older than the replay
//! bounds are gone: a client that resumes after them gets what is kept.
//!
//! Batches (2025-03-26 only, "Base Protocol" §Batching): a POST of a
//! JSON array in a session that negotiated 2025-03-26 is answered with
//! one array once every request in it ended (202 when it holds no
//! request); elsewhere, and without a session, 400 with -32600.
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
//!   with 413 without being held whole;
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
//!   messages its client has not read: past that, its progress is not sent
//!   on it (it stays in the replay buffer) and other messages about it go
//!   to the GET stream; the answer always has its place;
//! - the GET stream holds at most [`HttpServerOptions::event_stream`]
//!   messages its client has not read: past that, progress reports are
//!   dropped, and every other message (a notification, a server request)
//!   waits in order for room, and with it the handlers' notifications,
//!   progress and server requests (a [`Peer::request`] is sent only once
//!   those before it are): backpressure rather than loss. Until a GET
//!   stream opens (or after its client leaves without resuming it), the
//!   newest [`HttpServerOptions::pending_events`] wait for one.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

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
#[cfg(doc)]
use super::stream::RequestContext;
use super::stream::{Commands, Connection, Outlet, Peer, ServerHandler, next_answer, sleep_until};

/// The body of every response [`HttpServer`] gives.
pub type HttpBody = BoxBody<Bytes, Infallible>;

/// `Mcp-Session-Id` (header names compare without case).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The default of [`HttpServerOptions::body_limit`]: 4 MiB.
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// The default of [`HttpServerOptions::max_sessions`]: 256.
pub const MAX_SESSIONS: usize = 256;

/// The most events of one SSE stream kept for a client that resumes it
/// with `Last-Event-ID`: the newest 64 ("Transports" §Resumability and
/// Redelivery). With [`REPLAY_BYTES`], the bound of each stream's replay
/// buffer; the newest event is kept whatever its size.
pub const REPLAY_EVENTS: usize = 64;

/// The most bytes of one SSE stream's events kept for replay: 256 KiB
/// (see [`REPLAY_EVENTS`]).
pub const REPLAY_BYTES: usize = 256 * 1024;

/// How many finished SSE streams a session keeps for replay beside its
/// open ones: the 16 that finished last. A session's replay memory is so
/// at most ([`ServerOptions::max_in_flight`] + 1 + 16) streams of
/// [`REPLAY_BYTES`] each (plus one oversized newest event per stream).
pub const RETAINED_STREAMS: usize = 16;

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
    /// wait (progress reports are dropped). Default 64.
    pub event_stream: usize,
    /// The newest events kept for a session whose GET stream is not open.
    /// Default 16.
    pub pending_events: usize,
    /// Answer every request of a handshake-era session on an SSE stream
    /// that opens at once with a priming event (an id, no data; 2025-11-25
    /// and later), rather than with one JSON body when the answer comes
    /// first. A handler can ask the same for one request
    /// ([`RequestContext::open_stream`]). Default `false`.
    pub stream_answers: bool,
    /// The `retry` field of the priming event that opens a session's SSE
    /// streams (2025-11-25 and later): how long a client waits before it
    /// reconnects to a stream that ended. Default `None`: the client's own.
    pub retry: Option<Duration>,
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
            stream_answers: false,
            retry: None,
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
    /// The session's client, for the version it negotiated.
    peer: Peer,
    last_used: Mutex<Instant>,
    in_flight: Arc<AtomicUsize>,
}

/// What a session's task is asked.
enum Inbound {
    /// A message from the client, with the stream its answer goes to when
    /// it is a request.
    Message(Message, Option<Route>),
    /// A batch (2025-03-26), with the stream its answer goes to when it
    /// holds requests.
    Batch(Vec<Message>, Option<Route>),
    /// A GET, with its `Last-Event-ID`: the stream it resumes, or else the
    /// stream the session's own messages go to from now on; `false`
    /// through the sender when one is open already.
    Stream(Route, Option<String>, oneshot::Sender<bool>),
    /// DELETE: the session ends, its requests cancelled.
    End,
}

/// What goes down a response's stream.
enum Out {
    /// An SSE event (a message about the request, a notification, a
    /// priming event).
    Event(Bytes),
    /// The stream's last event: its answer.
    Last(Bytes),
    /// The answer, when it comes before anything else: one JSON body.
    Json(Frame),
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

    /// Ends the handshake-era session `id` from the server's side
    /// ("Transports" §Session Management: a server may end a session at any
    /// time, and then answers requests naming it with 404, so that the
    /// client initializes again): as on DELETE, its requests in flight are
    /// cancelled (their handlers' futures dropped) and not answered, and its
    /// streams end. For a host that expires sessions (idle, revoked
    /// credentials). False when no session `id` is open.
    pub async fn end_session(&self, id: &str) -> bool {
        self.inner.end(id).await
    }

    /// Answers one HTTP request, for a host that runs its own accept loop
    /// or router: the request's path, policy, session and body are all
    /// checked here, as [`HttpServer::serve`] does. A host that wants to
    /// answer some requests itself, or to change a response, wraps this
    /// call; [`HttpServer`] is also a hyper
    /// [`Service`](hyper::service::Service) doing the same, for
    /// `hyper::server::conn::http1::Builder::serve_connection`.
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

/// The same as [`HttpServer::handle`], as a hyper service: a host serves a
/// connection with a clone of the server (`serve_connection(io, server)`).
impl<B> hyper::service::Service<Request<B>> for HttpServer
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Response<HttpBody>, Infallible>> + Send>>;

    fn call(&self, request: Request<B>) -> Self::Future {
        let server = self.clone();
        Box::pin(async move { Ok(server.handle(request).await) })
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
            Ok(Frame::Batch(messages)) => return self.batch(messages, &headers).await,
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

    /// A batch: answered in a session that negotiated 2025-03-26 (the one
    /// version with batches, "Base Protocol" §Batching), with one batch
    /// (JSON, or the last event of an SSE stream when something about its
    /// requests came first); refused with 400 and -32600 anywhere else.
    async fn batch(&self, messages: Vec<Message>, headers: &HeaderMap) -> Response<HttpBody> {
        let refuse = |message: String| {
            rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                ErrorObject::new(error_codes::INVALID_REQUEST, message),
            )
        };
        let session = match self.session(headers) {
            Ok(Some(session)) => session,
            Ok(None) => {
                return refuse(
                    "batches are accepted only in a session that negotiated 2025-03-26: \
                     send one message per POST"
                        .to_owned(),
                );
            }
            Err(()) => return session_gone(None),
        };
        match session.peer.handshake() {
            Some(handshake) if handshake.version.accepts_batches() => {}
            Some(handshake) => {
                return refuse(format!(
                    "JSON-RPC batches exist only in protocol version 2025-03-26; this session \
                     speaks {}",
                    handshake.version
                ));
            }
            None => return refuse("the session has not finished initialize".to_owned()),
        }
        if messages.is_empty() {
            return refuse("empty batch".to_owned());
        }
        if !messages.iter().any(|m| matches!(m, Message::Request(_))) {
            let _ = session.inbound.send(Inbound::Batch(messages, None)).await;
            return empty(StatusCode::ACCEPTED);
        }
        answer(
            &session.inbound,
            |route| Inbound::Batch(messages, Some(route)),
            None,
            false,
            self.options.request_stream,
        )
        .await
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
            let id = request.id.clone();
            return answer(
                &session.inbound,
                |route| Inbound::Message(Message::Request(request), Some(route)),
                Some(id),
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
        self.stateless_request(request, permit).await
    }

    /// A stateless-era request, answered on the request's own task: its
    /// connection (a session of its own with the application's handler)
    /// runs right here until the answer, or whatever comes first about
    /// the request, is ready. A connection not finished by then (its
    /// answer streams, or the request's client went away) goes on in a
    /// task of its own, as a handshake-era session does.
    async fn stateless_request(
        &self,
        request: RpcRequest,
        permit: OwnedSemaphorePermit,
    ) -> Response<HttpBody> {
        let (peer, commands) = Peer::channel();
        let connection = self.connection(true, &peer);
        // One message in a queue of its own: there is room. The sender
        // goes at once, as it would after the message was sent: the
        // connection reads no more and ends with its answer.
        let (inbound, receiver) = mpsc::channel(1);
        let (route, messages) = mpsc::channel(self.options.request_stream.max(2));
        let id = request.id.clone();
        if inbound
            .try_send(Inbound::Message(Message::Request(request), Some(route)))
            .is_err()
        {
            return session_gone(Some(id));
        }
        drop(inbound);
        let mut inline = Inline {
            task: Some(Box::pin(run(
                connection,
                receiver,
                commands,
                Arc::default(),
                Some(permit),
            ))),
        };
        let respond = respond(messages, true);
        let mut respond = std::pin::pin!(respond);
        std::future::poll_fn(|cx| {
            inline.poll(cx);
            respond.as_mut().poll(cx)
        })
        .await
    }

    /// A connection with the application's handler and a session of its
    /// own. `stateless`: it answers one request, then ends (or ends when
    /// that request's stream is closed).
    fn connection(&self, stateless: bool, peer: &Peer) -> Connection<Routes> {
        let handler = self.app.connect(peer.clone());
        let session = ServerSession::new(self.app.options());
        let outlet = Routes::new(stateless, peer.clone(), &self.options);
        Connection::new(session, handler, peer.clone(), outlet)
    }

    /// Starts a connection's task (see [`Inner::connection`]).
    fn start(
        &self,
        stateless: bool,
        permit: Option<OwnedSemaphorePermit>,
        in_flight: Arc<AtomicUsize>,
    ) -> (mpsc::Sender<Inbound>, Peer) {
        let (peer, commands) = Peer::channel();
        let connection = self.connection(stateless, &peer);
        let (inbound, receiver) = mpsc::channel(self.options.session_queue.max(1));
        tokio::spawn(run(connection, receiver, commands, in_flight, permit));
        (inbound, peer)
    }

    /// `initialize` without a session: a new session, kept when the
    /// handshake succeeds.
    async fn open_session(self: &Arc<Self>, request: RpcRequest) -> Response<HttpBody> {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (inbound, peer) = self.start(false, None, Arc::clone(&in_flight));
        let id = request.id.clone();
        let mut response = answer(
            &inbound,
            |route| Inbound::Message(Message::Request(request), Some(route)),
            Some(id),
            false,
            self.options.request_stream,
        )
        .await;
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
            peer,
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

    /// GET: the stream of a session's own messages, or, with
    /// `Last-Event-ID`, the rest of a stream the session still keeps
    /// ("Transports" §Resumability and Redelivery).
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
        let last_event_id = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // Room for a whole replay, then the stream's own bound.
        let capacity = self.options.event_stream.max(REPLAY_EVENTS) + 2;
        let (sender, receiver) = mpsc::channel(capacity);
        let (opened, answer) = oneshot::channel();
        if session
            .inbound
            .send(Inbound::Stream(sender, last_event_id, opened))
            .await
            .is_err()
            || !answer.await.unwrap_or(false)
        {
            return text(
                StatusCode::CONFLICT,
                "this session already has its stream open",
            );
        }
        let body = SseBody {
            first: None,
            messages: receiver,
            done: false,
        };
        let mut response = Response::new(body.boxed());
        set_event_stream(&mut response);
        response
    }

    /// DELETE: ends a session, cancelling its requests.
    async fn delete(&self, headers: &HeaderMap) -> Response<HttpBody> {
        let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
            return no_session_stream();
        };
        if self.end(id).await {
            empty(StatusCode::OK)
        } else {
            text(StatusCode::NOT_FOUND, "session not found")
        }
    }

    /// Ends session `id`, cancelling its requests; false if it is not open.
    async fn end(&self, id: &str) -> bool {
        let removed = self.lock().remove(id);
        match removed {
            Some(session) => {
                let _ = session.inbound.send(Inbound::End).await;
                true
            }
            None => false,
        }
    }
}

/// Marks a response whose JSON body is a result (not an error).
#[derive(Clone, Copy)]
struct Succeeded;

/// Sends a request (or a batch) to a connection's task, built by `send`
/// around the stream its answer goes to, and answers with what comes
/// back: one JSON body when the answer comes first, else an SSE stream of
/// what comes before it, then it. `id`: the request's, for an error when
/// the session is gone. `modern`: a stateless-era request, whose errors
/// get their HTTP status.
async fn answer(
    inbound: &mpsc::Sender<Inbound>,
    send: impl FnOnce(Route) -> Inbound,
    id: Option<RequestId>,
    modern: bool,
    capacity: usize,
) -> Response<HttpBody> {
    let (route, messages) = mpsc::channel(capacity.max(2));
    if inbound.send(send(route)).await.is_err() {
        return session_gone(id);
    }
    respond(messages, modern).await
}

/// The response to a request whose answer comes on `messages`: one JSON
/// body when the answer comes first, else an SSE stream of what comes
/// before it, then it (see [`answer`]).
async fn respond(mut messages: mpsc::Receiver<Out>, modern: bool) -> Response<HttpBody> {
    match messages.recv().await {
        // Ended without an answer (cancelled, the session deleted).
        None => {
            let mut response = Response::new(Full::new(Bytes::new()).boxed());
            set_event_stream(&mut response);
            response
        }
        Some(Out::Json(frame)) => {
            let status = match &frame {
                Frame::Single(Message::Error(error)) if modern => modern_status(error.error.code),
                _ => StatusCode::OK,
            };
            let ok = matches!(frame, Frame::Single(Message::Response(_)));
            let mut response = json(status, &frame);
            if ok {
                response.extensions_mut().insert(Succeeded);
            }
            response
        }
        Some(first) => {
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
    mut commands: Commands,
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
        // While the GET stream's client has not taken what must not be
        // lost, the handlers' commands wait: backpressure.
        let backlogged = connection.out.backlogged();
        tokio::select! {
            biased;
            room = room(backlogged.clone()), if backlogged.is_some() => connection.out.drain(room),
            Some(command) = commands.recv(), if backlogged.is_none() => connection.command(command),
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
                            let refusal = Frame::Single(duplicate(&request.id));
                            let _ = route.try_send(Out::Json(refusal));
                            continue;
                        }
                        if stateless {
                            watched = Some(route.clone());
                        }
                        let opens = request.method != methods::INITIALIZE;
                        connection.out.request(request.id.clone(), route, opens);
                    }
                    connection.message(message);
                }
                Some(Inbound::Batch(messages, route)) => {
                    if let Some(route) = route {
                        let ids: Vec<RequestId> = messages
                            .iter()
                            .filter_map(|m| match m {
                                Message::Request(request) => Some(request.id.clone()),
                                _ => None,
                            })
                            .collect();
                        let twice = ids.iter().enumerate().find(|(i, id)| {
                            connection.out.routes.contains_key(id)
                                || ids.iter().skip(i + 1).any(|other| other == *id)
                        });
                        if let Some((_, id)) = twice {
                            let refusal = Message::error(None, duplicate_error(id));
                            let _ = route.try_send(Out::Json(Frame::Single(refusal)));
                            continue;
                        }
                        connection.out.batch(ids, route);
                    }
                    connection.batch(messages);
                }
                Some(Inbound::Stream(stream, last_event_id, opened)) => {
                    let _ = opened.send(connection.out.open_get(stream, last_event_id.as_deref()));
                }
            },
        }
    }
    connection.shut();
    in_flight.store(0, Ordering::Release);
}

/// A stateless-era connection run on its request's task (see
/// `Inner::stateless_request`) until it ends; whatever is left of it
/// when the request's response is ready (or the request is dropped) goes
/// on in a task of its own.
struct Inline<F: Future<Output = ()> + Send + 'static> {
    /// The connection's run, until it has ended.
    task: Option<Pin<Box<F>>>,
}

impl<F: Future<Output = ()> + Send + 'static> Inline<F> {
    /// Runs the connection as far as it goes now.
    fn poll(&mut self, cx: &mut Context<'_>) {
        if let Some(task) = self.task.as_mut()
            && task.as_mut().poll(cx).is_ready()
        {
            self.task = None;
        }
    }
}

impl<F: Future<Output = ()> + Send + 'static> Drop for Inline<F> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(task);
        }
    }
}

/// Waits for room on `stream` (a GET stream with a backlog).
async fn room(stream: Option<Route>) -> Result<mpsc::OwnedPermit<Out>, mpsc::error::SendError<()>> {
    match stream {
        Some(stream) => stream.reserve_owned().await,
        None => std::future::pending().await,
    }
}

/// The answer to a request whose id is one the session still has in
/// flight ("Base Protocol": ids are unique among a session's requests).
fn duplicate(id: &RequestId) -> Message {
    Message::error(Some(id.clone()), duplicate_error(id))
}

fn duplicate_error(id: &RequestId) -> ErrorObject {
    ErrorObject::new(
        error_codes::INVALID_REQUEST,
        format!(
            "request id {} is already in flight in this session",
            mcp_proto::text::bound(&id.to_string(), 64)
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

/// One SSE stream of a connection: a request's response or the session's
/// GET stream. In a handshake-era session its events carry ids
/// (`STREAM-SEQ`) and the newest are kept for a client that resumes it
/// (at most [`REPLAY_EVENTS`] and [`REPLAY_BYTES`]).
struct Stream {
    /// Where its events go while a client reads it.
    live: Option<Route>,
    /// The response is an SSE stream (not one JSON body).
    sse: bool,
    /// The session's GET stream (its own messages, no answer).
    standalone: bool,
    /// The sequence number of its next event.
    next: u64,
    replay: VecDeque<(u64, Bytes)>,
    replay_bytes: usize,
    /// Messages that must not be lost, waiting for room on `live` (the GET
    /// stream only).
    backlog: VecDeque<Message>,
    /// Its last event (the answer) was sent.
    done: bool,
}

impl Stream {
    fn remember(&mut self, seq: u64, event: Bytes) {
        self.replay_bytes += event.len();
        self.replay.push_back((seq, event));
        while self.replay.len() > 1
            && (self.replay.len() > REPLAY_EVENTS || self.replay_bytes > REPLAY_BYTES)
        {
            if let Some((_, old)) = self.replay.pop_front() {
                self.replay_bytes -= old.len();
            }
        }
    }
}

/// Where one HTTP connection's outgoing messages go: an answer to the
/// stream of its request, a request's progress to the same, anything else
/// to the GET stream (or, until it opens, a short queue); in a stateless
/// connection everything to its one request's stream.
struct Routes {
    /// The stream of each request in flight (a batch's requests share one).
    routes: HashMap<RequestId, u64>,
    streams: HashMap<u64, Stream>,
    next_stream: u64,
    /// Finished streams kept for replay, oldest first.
    finished: VecDeque<u64>,
    /// The session's GET stream.
    get: Option<u64>,
    stateless: bool,
    /// The session's client, for the version it negotiated.
    peer: Peer,
    stream_answers: bool,
    retry: Option<Duration>,
    /// The session's messages while no GET stream is open.
    pending: VecDeque<Message>,
    pending_cap: usize,
    /// A stateless connection's request was answered.
    answered: bool,
}

impl Routes {
    fn new(stateless: bool, peer: Peer, options: &HttpServerOptions) -> Self {
        Routes {
            routes: HashMap::new(),
            streams: HashMap::new(),
            next_stream: 1,
            finished: VecDeque::new(),
            get: None,
            stateless,
            peer,
            stream_answers: options.stream_answers,
            retry: options.retry,
            pending: VecDeque::new(),
            pending_cap: options.pending_events,
            answered: false,
        }
    }

    /// Whether the session's version has priming events and polling
    /// (2025-11-25 and later).
    fn polling(&self) -> bool {
        !self.stateless
            && self
                .peer
                .handshake()
                .is_some_and(|handshake| handshake.version.has_sse_polling())
    }

    fn open(&mut self, live: Option<Route>, standalone: bool) -> u64 {
        let id = self.next_stream;
        self.next_stream += 1;
        self.streams.insert(
            id,
            Stream {
                live,
                sse: false,
                standalone,
                next: 1,
                replay: VecDeque::new(),
                replay_bytes: 0,
                backlog: VecDeque::new(),
                done: false,
            },
        );
        id
    }

    /// A request arrives with the stream its answer goes to; `opens`: it
    /// may open as an SSE stream at once ([`HttpServerOptions::stream_answers`]).
    fn request(&mut self, id: RequestId, route: Route, opens: bool) {
        let stream = self.open(Some(route), false);
        self.routes.insert(id, stream);
        if opens && self.stream_answers {
            self.prime(stream, None);
        }
    }

    /// A batch's requests arrive with the stream their answer goes to.
    fn batch(&mut self, ids: Vec<RequestId>, route: Route) {
        let stream = self.open(Some(route), false);
        for id in ids {
            self.routes.insert(id, stream);
        }
    }

    /// Stream `id`'s next event: `data` (none for a priming event) with an
    /// id in a session, kept for replay.
    fn next_event(&mut self, id: u64, data: Option<&Frame>, retry: Option<Duration>) -> Bytes {
        let resumable = !self.stateless;
        let Some(stream) = self.streams.get_mut(&id) else {
            return sse_frame(None, retry, data);
        };
        stream.sse = true;
        if !resumable {
            return sse_frame(None, retry, data);
        }
        let seq = stream.next;
        stream.next += 1;
        let event = sse_frame(Some(&format!("{id}-{seq}")), retry, data);
        if data.is_some() {
            stream.remember(seq, event.clone());
        }
        event
    }

    /// Opens stream `id` as SSE now, with a priming event (2025-11-25 and
    /// later), unless it is open already.
    fn prime(&mut self, id: u64, retry: Option<Duration>) {
        if !self.polling() || self.streams.get(&id).is_none_or(|s| s.sse || s.done) {
            return;
        }
        let event = self.next_event(id, None, retry.or(self.retry));
        if let Some(live) = self.streams.get(&id).and_then(|s| s.live.as_ref()) {
            let _ = live.try_send(Out::Event(event));
        }
    }

    /// SSE polling: ends stream `id`'s response now, after an event with
    /// an id and `retry`; what follows waits for a GET with `Last-Event-ID`.
    fn close(&mut self, id: u64, retry: Duration) {
        if !self.polling() || self.streams.get(&id).is_none_or(|s| s.done) {
            return;
        }
        let event = self.next_event(id, None, Some(retry));
        if let Some(live) = self.streams.get_mut(&id).and_then(|s| s.live.take()) {
            let _ = live.try_send(Out::Event(event));
        }
    }

    /// A message about a request, on its stream, keeping the stream's last
    /// place for its answer. When its client reads too slowly, progress is
    /// not sent on it (it stays in the replay buffer) and anything else
    /// goes to the GET stream instead, so that it is not lost.
    fn event(&mut self, id: u64, message: Message) {
        let Some(stream) = self.streams.get(&id) else {
            return;
        };
        let full = stream
            .live
            .as_ref()
            .is_some_and(|live| live.capacity() <= 1);
        if full && !is_progress(&message) {
            return self.deliver(message);
        }
        let event = self.next_event(id, Some(&Frame::Single(message)), None);
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        if let Some(live) = &stream.live {
            if full {
                tracing::debug!("a request's stream is full: a progress report is not sent on it");
            } else if live.try_send(Out::Event(event)).is_err() {
                stream.live = None;
            }
        }
    }

    /// The answer on stream `id`: its one JSON body when nothing came
    /// before it, else its last event.
    fn finish(&mut self, id: u64, frame: Frame) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        if !stream.sse {
            if let Some(live) = stream.live.take() {
                let _ = live.try_send(Out::Json(frame));
            }
            self.streams.remove(&id);
            return;
        }
        let event = self.next_event(id, Some(&frame), None);
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        stream.done = true;
        if let Some(live) = stream.live.take() {
            // The last place was kept for it.
            let _ = live.try_send(Out::Last(event));
        }
        self.retire(id);
    }

    /// Keeps finished stream `id` for replay, forgetting the oldest beyond
    /// [`RETAINED_STREAMS`].
    fn retire(&mut self, id: u64) {
        if self.stateless {
            self.streams.remove(&id);
            return;
        }
        self.finished.push_back(id);
        while self.finished.len() > RETAINED_STREAMS {
            if let Some(old) = self.finished.pop_front() {
                self.streams.remove(&old);
            }
        }
    }

    fn get_is_live(&self) -> bool {
        self.get
            .and_then(|id| self.streams.get(&id))
            .and_then(|stream| stream.live.as_ref())
            .is_some_and(|live| !live.is_closed())
    }

    /// A GET: resumes the stream `last_event_id` names when the session
    /// still keeps it, else opens the GET stream; `false` when one is open
    /// already.
    fn open_get(&mut self, live: Route, last_event_id: Option<&str>) -> bool {
        if let Some((id, seq)) = last_event_id.and_then(parse_event_id)
            && self.streams.contains_key(&id)
        {
            self.resume(id, seq, live);
            return true;
        }
        if self.get_is_live() {
            return false;
        }
        if let Some(old) = self.get.take()
            && let Some(stream) = self.streams.get_mut(&old)
        {
            stream.done = true;
            self.retire(old);
        }
        let id = self.open(Some(live), true);
        self.get = Some(id);
        if self.polling() {
            let event = self.next_event(id, None, self.retry);
            if let Some(live) = self.streams.get(&id).and_then(|s| s.live.as_ref()) {
                let _ = live.try_send(Out::Event(event));
            }
        }
        self.flush_pending();
        true
    }

    /// Replays stream `id`'s kept events after `seq` to `live`, which then
    /// carries the stream on unless it finished.
    fn resume(&mut self, id: u64, seq: u64, live: Route) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        for (_, event) in stream.replay.iter().filter(|(s, _)| *s > seq) {
            let _ = live.try_send(Out::Event(event.clone()));
        }
        if stream.done {
            // The reader's body ends after the replay.
            return;
        }
        stream.sse = true;
        stream.live = Some(live);
        if stream.standalone {
            self.get = Some(id);
            self.flush_pending();
        }
    }

    fn flush_pending(&mut self) {
        for message in std::mem::take(&mut self.pending) {
            self.deliver(message);
        }
    }

    /// A message for the session as a whole, on the GET stream. When its
    /// client reads too slowly, progress is dropped and anything else waits
    /// in the stream's backlog (and the handlers with it); with no GET
    /// stream open, it waits among the newest
    /// [`HttpServerOptions::pending_events`].
    fn deliver(&mut self, message: Message) {
        let Some(id) = self.get.filter(|_| self.get_is_live()) else {
            self.queue(message);
            return;
        };
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let droppable = is_progress(&message);
        if !stream.backlog.is_empty() {
            if !droppable {
                stream.backlog.push_back(message);
            }
            return;
        }
        let Some(live) = stream.live.clone() else {
            return self.queue(message);
        };
        match live.try_reserve() {
            Ok(permit) => {
                let event = self.next_event(id, Some(&Frame::Single(message)), None);
                permit.send(Out::Event(event));
            }
            Err(mpsc::error::TrySendError::Full(())) => {
                if droppable {
                    tracing::debug!(
                        "a client's event stream is full: a progress report is dropped"
                    );
                } else {
                    stream.backlog.push_back(message);
                }
            }
            Err(mpsc::error::TrySendError::Closed(())) => {
                stream.live = None;
                self.queue(message);
            }
        }
    }

    /// The GET stream when messages wait for room on it.
    fn backlogged(&self) -> Option<Route> {
        let stream = self.streams.get(&self.get?)?;
        if stream.backlog.is_empty() {
            return None;
        }
        stream.live.clone()
    }

    /// Room on the GET stream (or its end): sends what waits for it.
    fn drain(&mut self, room: Result<mpsc::OwnedPermit<Out>, mpsc::error::SendError<()>>) {
        let Some(id) = self.get else {
            return;
        };
        let Ok(permit) = room else {
            // Its client went away: what waited is the session's again,
            // before anything queued since.
            let mut backlog = match self.streams.get_mut(&id) {
                Some(stream) => {
                    stream.live = None;
                    std::mem::take(&mut stream.backlog)
                }
                None => VecDeque::new(),
            };
            backlog.append(&mut self.pending);
            let excess = backlog.len().saturating_sub(self.pending_cap);
            backlog.drain(..excess);
            self.pending = backlog;
            return;
        };
        let mut permit = Some(permit);
        loop {
            let Some(stream) = self.streams.get_mut(&id) else {
                return;
            };
            if stream.backlog.is_empty() {
                return;
            }
            let place = match permit.take() {
                Some(place) => place,
                None => match stream.live.clone().map(mpsc::Sender::try_reserve_owned) {
                    Some(Ok(place)) => place,
                    // No more room: the rest waits for the next.
                    _ => return,
                },
            };
            let Some(message) = stream.backlog.pop_front() else {
                return;
            };
            let event = self.next_event(id, Some(&Frame::Single(message)), None);
            place.send(Out::Event(event));
        }
    }

    fn queue(&mut self, message: Message) {
        if self.pending_cap == 0 {
            return;
        }
        if self.pending.len() >= self.pending_cap {
            self.pending.pop_front();
        }
        self.pending.push_back(message);
    }
}

/// Whether `message` is a progress report (which may be dropped).
fn is_progress(message: &Message) -> bool {
    matches!(message, Message::Notification(n) if n.method == methods::NOTIFICATION_PROGRESS)
}

/// `STREAM-SEQ`, as the server's event ids are written.
fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

impl Outlet for Routes {
    fn transmit(&mut self, frame: Frame, about: Option<&RequestId>) {
        let message = match frame {
            Frame::Single(message) => message,
            Frame::Batch(replies) => {
                // A batch's answer: its requests share one stream.
                let mut stream = None;
                for reply in &replies {
                    if let Some(id) = reply.id()
                        && let Some(found) = self.routes.remove(id)
                    {
                        stream = Some(found);
                    }
                }
                if let Some(stream) = stream {
                    self.finish(stream, Frame::Batch(replies));
                }
                return;
            }
        };
        let answered = match &message {
            Message::Response(response) => Some(response.id.clone()),
            Message::Error(error) => error.id.clone(),
            _ => None,
        };
        if let Some(id) = answered {
            if let Some(stream) = self.routes.remove(&id) {
                self.finish(stream, Frame::Single(message));
            }
            if self.stateless {
                self.answered = true;
            }
            return;
        }
        if let Some(&stream) = about.and_then(|id| self.routes.get(id)) {
            return self.event(stream, message);
        }
        if self.stateless {
            if let Some(&stream) = self.routes.values().next() {
                self.event(stream, message);
            }
            return;
        }
        self.deliver(message);
    }

    fn ended(&mut self, id: &RequestId) {
        // Its stream ends without an answer (unless a batch's other
        // requests still go on it).
        if let Some(stream) = self.routes.remove(id)
            && !self.routes.values().any(|other| *other == stream)
        {
            self.streams.remove(&stream);
        }
        if self.stateless {
            self.answered = true;
        }
    }

    fn stream(&mut self, id: &RequestId, close: Option<Duration>) {
        let Some(&stream) = self.routes.get(id) else {
            return;
        };
        match close {
            None => self.prime(stream, None),
            Some(retry) => self.close(stream, retry),
        }
    }
}

/// A response's SSE stream: its events until the last, or until the
/// connection's task lets it go.
struct SseBody {
    first: Option<Out>,
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
        let out = match self.first.take() {
            Some(out) => out,
            None => match self.messages.poll_recv(cx) {
                Poll::Ready(Some(out)) => out,
                Poll::Ready(None) => {
                    self.done = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            },
        };
        let event = match out {
            Out::Event(event) => event,
            Out::Last(event) => {
                self.done = true;
                event
            }
            Out::Json(frame) => {
                self.done = true;
                sse_frame(None, None, Some(&frame))
            }
        };
        Poll::Ready(Some(Ok(BodyFrame::data(event))))
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
    /// The params' `_meta`, borrowed; every other member is stepped over.
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<Meta<'a>>,
    }
    /// `_meta`'s protocol version, as its JSON text.
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
        version: Option<&'a serde_json::value::RawValue>,
    }
    let text = request.params.as_ref()?.get();
    if !(text.contains("_meta") || text.contains("\\u")) {
        return None;
    }
    let version = serde_json::from_str::<Params<'_>>(text)
        .ok()?
        .meta?
        .version?;
    // A string is the version; any other value is named by its JSON text.
    Some(match serde_json::from_str::<Cow<'_, str>>(version.get()) {
        Ok(text) => text.into_owned(),
        Err(_) => serde_json::from_str::<Value>(version.get())
            .map_or_else(|_| version.get().to_owned(), |value| value.to_string()),
    })
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
    // Borrowed from the map unless the value is not UTF-8.
    let header = |name: &str| {
        headers
            .get(name)
            .map(|value| String::from_utf8_lossy(value.as_bytes()))
    };
    let bound = |text: &str| mcp_proto::text::bound(text, 64).into_owned();
    if let Some(version) = version {
        match header(headers::MCP_PROTOCOL_VERSION) {
            Some(given) if given.trim() == version => {}
            Some(given) => {
                return Err(mismatch(format!(
                    "the MCP-Protocol-Version header ({}) differs from the request's _meta ({})",
                    bound(given.trim()),
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
        Some(given) if given.trim() == request.method => {}
        Some(given) => {
            return Err(mismatch(format!(
                "the Mcp-Method header ({}) differs from the method ({})",
                bound(given.trim()),
                bound(&request.method)
            )));
        }
        None => return Err(mismatch("the Mcp-Method header is missing".to_owned())),
    }
    // The name as `Mcp-Name` carries it: borrowed from the params unless
    // it has escapes or needs the base64 form.
    let name = headers::request_name(&request.method, request.params.as_ref());
    if let Some(expected) = name.as_deref().map(headers::encode_value) {
        let given = header(headers::MCP_NAME);
        let decoded = given
            .as_deref()
            .map(|given| headers::decode_value(given.trim()));
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
    // Read in place: media types compare without case.
    let has = |media: &str| {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|v| v.split(';').next().unwrap_or_default().trim())
            .any(|a| a.eq_ignore_ascii_case(media) || a == "*/*")
    };
    has("application/json") && has("text/event-stream")
}

/// One SSE event: `id` and `retry` when given, and `data` (nothing for a
/// priming event, which has an empty `data` field).
fn sse_frame(id: Option<&str>, retry: Option<Duration>, data: Option<&Frame>) -> Bytes {
    let mut line = Vec::new();
    if let Some(frame) = data {
        encode_frame_line(frame, &mut line);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    let mut event = Vec::with_capacity(line.len() + 64);
    if data.is_some() {
        event.extend_from_slice(b"event: message\n");
    }
    if let Some(id) = id {
        event.extend_from_slice(b"id: ");
        event.extend_from_slice(id.as_bytes());
        event.push(b'\n');
    }
    if let Some(retry) = retry {
        event.extend_from_slice(format!("retry: {}\n", retry.as_millis()).as_bytes());
    }
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(&line);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

/// Appends `frame` as one line (see [`encode_line`]; a batch without a
/// one-line form is dropped).
fn encode_frame_line(frame: &Frame, out: &mut Vec<u8>) {
    match frame {
        Frame::Single(message) => encode_line(message, out),
        Frame::Batch(_) => {
            if mcp_proto::codec::ndjson::encode_frame(frame, out).is_err() {
                tracing::warn!("dropping a batch answer with no one-line form");
            }
        }
    }
}

fn json(status: StatusCode, frame: &Frame) -> Response<HttpBody> {
    let mut body = Vec::new();
    encode_frame_line(frame, &mut body);
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
    json(status, &Frame::Single(Message::error(id, error)))
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

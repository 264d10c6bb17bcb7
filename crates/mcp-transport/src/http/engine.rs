//! The HTTP transport object: its mode (Streamable HTTP, legacy SSE, or not yet known), session state, background tasks and inbound queue.
//!
//! Every HTTP exchange runs in a background task that the transport owns
//! (a `JoinSet` aborted on close and on drop), so that `send` returns as
//! soon as the message is handed over (the `Transport` contract) and many
//! requests are in flight at once. Tasks deliver what they read, and the
//! failures of single messages, through one queue that `recv` reads: all
//! streams go through one dispatcher (checklist §5.3).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::HeaderValue;
use http::header::{HeaderMap, HeaderName};
use mcp_proto::{Frame, Message, ProtocolVersion, RequestId};
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinSet};
use url::Url;

use super::client::{HttpClient, parse_url};
use super::{HttpOptions, HttpProtocol, legacy_sse, streamable};
use crate::transport::{Inbound, Transport, TransportError};

/// `Mcp-Session-Id` (header names are case-insensitive; `http` lowercases).
/// A `HeaderName` made at compile time: a `&str` name is parsed again on
/// every request it is inserted in.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method` (2026-07-28).
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (2026-07-28).
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// An MCP client transport over HTTP: Streamable HTTP, legacy HTTP+SSE, or
/// Streamable HTTP with automatic fallback to legacy SSE (see
/// [`HttpProtocol`]).
///
/// Behaviour, by MCP "Transports" (2025-11-25) section:
/// - Every message is its own POST, run in the background; the response
///   (a JSON body or an SSE stream, either one for any request) arrives
///   through [`recv`](Transport::recv). A failed POST comes back as
///   [`Inbound::Undelivered`] for its request id (or with no id, for a
///   notification or response).
/// - §Session Management: the `Mcp-Session-Id` of the `initialize`
///   response is sent on every later request and never logged; a 404 on a
///   request that carried it is [`TransportError::SessionExpired`]. Sending
///   another `initialize` starts a new session (no session header on it).
///   [`close`](Transport::close) DELETEs the session (405 is fine).
/// - §Protocol Version Header: the version given to
///   [`set_protocol_version`](Transport::set_protocol_version) goes on every
///   request after `initialize`, never on the `initialize` POST.
/// - §Listening for Messages from the Server: once the
///   `notifications/initialized` POST is accepted, a GET stream is opened
///   for server-initiated messages; 404, 405 or 406 there means the server
///   offers none. If an established GET stream later gets 404, the session
///   has expired and the transport ends with `Closed(Some(SessionExpired))`.
/// - §Resumability: when a POST's SSE stream ends before its response, it
///   is resumed by GET with `Last-Event-ID` after the server's `retry`
///   (or [`HttpOptions::default_retry`]); the GET stream reconnects the
///   same way. Priming events (empty data) only record their id.
/// - The stateless era (2026-07-28 "Streamable HTTP"): once the client
///   settles it through [`set_protocol_version`](Transport::set_protocol_version),
///   and for the `server/discover` that probes for it, every POST carries
///   `MCP-Protocol-Version`, `Mcp-Method`, and for `tools/call`,
///   `prompts/get` and `resources/read` `Mcp-Name` (values that are not
///   plain visible ASCII are sent in the `=?base64?...?=` form), plus the
///   `Mcp-Param-*` headers a tool's `x-mcp-header` annotations ask for
///   (learned through [`set_tool_headers`](Transport::set_tool_headers)).
///   There is no session id, GET stream, DELETE or resumption; a
///   `notifications/cancelled` is not posted: the request's response
///   stream is closed instead. An error status whose body is a JSON-RPC
///   error for the request (a 400 with -32020/-32021/-32022/-32602, a 404
///   with -32601) reaches the request as the server's error; any other
///   refusal of the era probe comes back undelivered, which the session
///   takes for a handshake-era server.
/// - Legacy HTTP+SSE (2024-11-05): a GET stream whose `endpoint` event,
///   resolved against the SSE URL and on the same origin, receives every
///   POST; all server messages arrive on the stream, and its end ends the
///   transport.
pub struct HttpTransport {
    shared: Arc<Shared>,
    inbound: tokio::sync::Mutex<InboundQueue>,
    close_started: AtomicBool,
}

impl HttpTransport {
    /// Validates the options, reads the environment variables they name and
    /// builds the client. For [`HttpProtocol::LegacySse`] it also opens the
    /// SSE stream and waits for its `endpoint` event; the other protocols
    /// send nothing until the first message.
    pub async fn connect(options: HttpOptions) -> Result<Self, TransportError> {
        let url = parse_url(&options.url)?;
        let client = HttpClient::new(&options)?;
        let initial_mode = match options.protocol {
            HttpProtocol::Streamable => Mode::Streamable,
            HttpProtocol::Auto | HttpProtocol::LegacySse => Mode::Undecided,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            client,
            url,
            limits: Limits {
                max_message_size: options.max_message_size,
                close_timeout: options.close_timeout,
                endpoint_timeout: options.endpoint_timeout,
                default_retry: options.default_retry,
                max_reconnect_attempts: options.max_reconnect_attempts,
            },
            inbound: tx,
            mode: watch::Sender::new(initial_mode),
            listener_gate: watch::Sender::new(true),
            session: Mutex::new(Session::default()),
            tasks: Mutex::new(Tasks {
                set: JoinSet::new(),
                closed: false,
            }),
            closed: AtomicBool::new(false),
            inflight: Mutex::new(HashMap::new()),
            tool_headers: Mutex::new(HashMap::new()),
        });
        let transport = HttpTransport {
            shared,
            inbound: tokio::sync::Mutex::new(InboundQueue { rx, terminal: None }),
            close_started: AtomicBool::new(false),
        };
        if options.protocol == HttpProtocol::LegacySse {
            legacy_sse::start(&transport.shared).await?;
        }
        Ok(transport)
    }

    /// Starts the POST of one message as a background task; gives the
    /// message back when the transport is closed.
    fn start_post(&self, message: Message) -> Result<(), Message> {
        if self.shared.is_closed() {
            return Err(message);
        }
        let modern = self.shared.modern_version();
        if modern.is_some()
            && let Message::Notification(n) = &message
            && n.method == mcp_proto::methods::NOTIFICATION_CANCELLED
        {
            // 2026-07-28 "Cancellation": over HTTP, closing the response
            // stream is the cancel; nothing is posted.
            self.shared.cancel_inflight(n.params.as_deref());
            return Ok(());
        }
        let mut out = Outgoing::new(&message);
        if out.kind == Kind::Discover || modern.is_some() {
            out.modern = Some(Box::new(self.shared.modern_headers(&message, modern)));
        }
        let probe = self.shared.prepare(&out);
        let shared = Arc::clone(&self.shared);
        let after_initialized = matches!(
            out.kind,
            Kind::Request | Kind::Notification | Kind::Response
        );
        let track = out.modern.is_some().then(|| out.id.clone()).flatten();
        let task = async move {
            if probe {
                streamable::post(&shared, out, true).await;
                return;
            }
            if out.modern.is_some() {
                let id = out.id.clone();
                streamable::post(&shared, out, false).await;
                if let Some(id) = id {
                    shared.forget_inflight(&id);
                }
                return;
            }
            match shared.wait_mode().await {
                Mode::Legacy(endpoint) => {
                    if out.kind == Kind::Initialized {
                        // Legacy SSE has no GET stream to wait for.
                        shared.open_listener_gate();
                    }
                    legacy_sse::post(&shared, &endpoint, out).await;
                }
                Mode::Streamable | Mode::Undecided => {
                    if after_initialized {
                        shared.wait_listener().await;
                    }
                    streamable::post(&shared, out, false).await;
                }
            }
        };
        // Boxed: the POST's state machine (hyper's futures included) is
        // 4.7 KB, and a task moves its future several times while it is set
        // up and again when it finishes; moving a box instead cut about
        // 4,000 instructions per call (callgrind).
        match self.shared.spawn(Box::pin(task)) {
            Some(handle) => {
                if let Some(id) = track {
                    self.shared.track_inflight(id, handle);
                }
                Ok(())
            }
            None => Err(message),
        }
    }

    /// The protocol in use: `None` while [`HttpProtocol::Auto`] has not yet
    /// seen the server's answer to `initialize`.
    pub fn active_protocol(&self) -> Option<HttpProtocol> {
        match self.shared.mode() {
            Mode::Undecided => None,
            Mode::Streamable => Some(HttpProtocol::Streamable),
            Mode::Legacy(_) => Some(HttpProtocol::LegacySse),
        }
    }
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("origin", &self.shared.url.origin().ascii_serialization())
            .field("protocol", &self.active_protocol())
            .field("closed", &self.shared.is_closed())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Transport for HttpTransport {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.start_post(message).map_err(|_| TransportError::Closed)
    }

    /// Starting a POST never waits (it runs as its own task), so every
    /// message is taken at once, unless the transport is closed or the
    /// caller is outside a tokio runtime (then `send` reports why).
    fn try_send(&self, message: Message) -> Result<(), Message> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(message);
        }
        self.start_post(message)
    }

    /// What the background tasks already queued: responses that arrived
    /// together are handled in one pass of the driver. The end of the
    /// connection is passed on like any item and remembered for `recv`.
    fn try_recv(&self) -> Option<Inbound> {
        let mut queue = self.inbound.try_lock().ok()?;
        if queue.terminal.is_some() {
            return None;
        }
        match queue.rx.try_recv().ok()? {
            Inbound::Closed(error) => {
                queue.terminal = Some(error.as_ref().map(TransportError::duplicate));
                Some(Inbound::Closed(error))
            }
            item => Some(item),
        }
    }

    async fn recv(&self) -> Inbound {
        // Cancel safe: the lock and `UnboundedReceiver::recv` both are, and
        // nothing happens between taking an item and returning it.
        let mut queue = self.inbound.lock().await;
        if let Some(terminal) = &queue.terminal {
            return Inbound::Closed(terminal.as_ref().map(TransportError::duplicate));
        }
        match queue.rx.recv().await {
            Some(Inbound::Closed(error)) => {
                queue.terminal = Some(error.as_ref().map(TransportError::duplicate));
                Inbound::Closed(error)
            }
            Some(item) => item,
            // `Shared` holds a sender for as long as `self` lives.
            None => Inbound::Closed(None),
        }
    }

    async fn close(&self) -> Result<(), TransportError> {
        if self.close_started.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.shared.abort_all();
        if matches!(self.shared.mode(), Mode::Streamable) {
            streamable::delete_session(&self.shared).await;
        }
        self.shared.finish(None);
        Ok(())
    }

    fn set_protocol_version(&self, version: ProtocolVersion) {
        self.shared.session().version = Some(version);
        if !version.uses_handshake() {
            // The stateless era is Streamable HTTP's; nothing to fall back to.
            self.shared.set_mode(Mode::Streamable);
        }
    }

    fn set_tool_headers(&self, tool: &str, headers: Option<mcp_proto::headers::ToolParamHeaders>) {
        let mut tools = lock(&self.shared.tool_headers);
        match headers {
            Some(headers) if !headers.is_empty() => {
                tools.insert(tool.to_owned(), headers);
            }
            _ => {
                tools.remove(tool);
            }
        }
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        // The tasks hold the shared state; aborting them breaks that cycle
        // and drops every connection.
        self.shared.abort_all();
    }
}

/// One message on its way out, classified for the rules that depend on
/// what it is.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) kind: Kind,
    /// The request id, for requests.
    pub(crate) id: Option<RequestId>,
    pub(crate) body: Bytes,
    /// The stateless era's headers (protocol version, method, name,
    /// parameters), when the message goes out in that era.
    pub(crate) modern: Option<Box<HeaderMap>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The `initialize` request: starts a session.
    Initialize,
    /// `server/discover`: the stateless era's first request, and its probe.
    Discover,
    /// Any other request: expects a response.
    Request,
    /// `notifications/initialized`: its acceptance opens the GET stream.
    Initialized,
    /// Any other notification.
    Notification,
    /// A response or error response to a server request.
    Response,
}

impl Outgoing {
    fn new(message: &Message) -> Self {
        let (kind, id) = match message {
            Message::Request(r) if r.method == mcp_proto::methods::INITIALIZE => {
                (Kind::Initialize, Some(r.id.clone()))
            }
            Message::Request(r) if r.method == mcp_proto::methods::SERVER_DISCOVER => {
                (Kind::Discover, Some(r.id.clone()))
            }
            Message::Request(r) => (Kind::Request, Some(r.id.clone())),
            Message::Notification(n)
                if n.method == mcp_proto::methods::NOTIFICATION_INITIALIZED =>
            {
                (Kind::Initialized, None)
            }
            Message::Notification(_) => (Kind::Notification, None),
            Message::Response(_) | Message::Error(_) => (Kind::Response, None),
        };
        Outgoing {
            kind,
            id,
            body: Bytes::from(message.to_bytes()),
            modern: None,
        }
    }

    pub(crate) fn is_request(&self) -> bool {
        matches!(self.kind, Kind::Initialize | Kind::Discover | Kind::Request)
    }
}

/// Which protocol the transport speaks.
#[derive(Clone, Debug)]
pub(crate) enum Mode {
    /// Auto mode before the server answered `initialize`: messages other
    /// than the probing `initialize` wait.
    Undecided,
    Streamable,
    /// Legacy SSE, with the endpoint every POST goes to.
    Legacy(Arc<Url>),
}

/// Numbers the tasks need from [`HttpOptions`].
#[derive(Debug)]
pub(crate) struct Limits {
    pub(crate) max_message_size: usize,
    pub(crate) close_timeout: Duration,
    pub(crate) endpoint_timeout: Duration,
    pub(crate) default_retry: Duration,
    pub(crate) max_reconnect_attempts: u32,
}

/// The state the transport and its tasks share.
pub(crate) struct Shared {
    pub(crate) client: HttpClient,
    /// The configured URL: the MCP endpoint, or the legacy SSE URL.
    pub(crate) url: Url,
    pub(crate) limits: Limits,
    inbound: mpsc::UnboundedSender<Inbound>,
    mode: watch::Sender<Mode>,
    /// Open (true) except between `notifications/initialized` and the
    /// moment the GET stream's answer is known: see [`Shared::wait_listener`].
    listener_gate: watch::Sender<bool>,
    session: Mutex<Session>,
    tasks: Mutex<Tasks>,
    /// `Closed` has been queued; sends fail from now on.
    closed: AtomicBool,
    /// Stateless era: the POST task of each request in flight, so that a
    /// cancel closes its response stream.
    inflight: Mutex<HashMap<RequestId, AbortHandle>>,
    /// Stateless era: the `Mcp-Param-*` headers of each tool that has any.
    tool_headers: Mutex<HashMap<String, mcp_proto::headers::ToolParamHeaders>>,
}

/// The longest a message waits for the GET stream to be opened (see
/// [`Shared::wait_listener`]); past it the message goes anyway.
const LISTENER_GATE_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Session {
    /// Secret: marked sensitive, never logged.
    id: Option<HeaderValue>,
    version: Option<ProtocolVersion>,
    /// Bumped by every `initialize`, so that a GET stream of an old session
    /// stops reconnecting.
    generation: u64,
    /// The GET stream task of the current session.
    listener: Option<AbortHandle>,
    /// Auto mode: the probing `initialize` is in flight.
    probing: bool,
}

struct Tasks {
    set: JoinSet<()>,
    /// No task may start any more (closed or dropped).
    closed: bool,
}

#[derive(Debug)]
struct InboundQueue {
    rx: mpsc::UnboundedReceiver<Inbound>,
    /// Set once `Closed` has been returned: `recv` repeats it.
    terminal: Option<Option<TransportError>>,
}

impl Shared {
    pub(crate) fn push_frame(&self, frame: Frame) {
        let _ = self.inbound.send(Inbound::Frame(frame));
    }

    /// Reports that one message was not delivered. For a notification or a
    /// response nobody waits, so it is also logged.
    pub(crate) fn report(&self, out: &Outgoing, error: TransportError) {
        if !out.is_request() {
            tracing::warn!(%error, "an HTTP POST of a notification or response failed");
        }
        let _ = self.inbound.send(Inbound::Undelivered {
            id: out.id.clone(),
            error,
        });
    }

    /// Ends the connection: queues `Closed(error)` unless it is already
    /// closed. Sends fail from now on.
    pub(crate) fn finish(&self, error: Option<TransportError>) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            if let Some(error) = &error {
                tracing::debug!(%error, "HTTP transport ended");
            }
            let _ = self.inbound.send(Inbound::Closed(error));
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Starts a background task, unless the transport is closed.
    pub(crate) fn spawn(
        &self,
        task: impl Future<Output = ()> + Send + 'static,
    ) -> Option<AbortHandle> {
        let mut tasks = lock(&self.tasks);
        if tasks.closed {
            return None;
        }
        // Forget finished tasks so the set does not grow with every POST.
        while tasks.set.try_join_next().is_some() {}
        Some(tasks.set.spawn(task))
    }

    /// Aborts every task and refuses new ones.
    pub(crate) fn abort_all(&self) {
        let mut tasks = lock(&self.tasks);
        tasks.closed = true;
        tasks.set.abort_all();
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode.borrow().clone()
    }

    /// Settles the mode (ending an Auto probe).
    pub(crate) fn set_mode(&self, mode: Mode) {
        self.session().probing = false;
        self.mode.send_replace(mode);
    }

    /// Waits (at most [`LISTENER_GATE_TIMEOUT`]) until the GET stream that
    /// `notifications/initialized` opens has been answered. Servers (the
    /// TypeScript SDK's among them) send requests that belong to no client
    /// request, such as an elicitation from inside a tool, on the GET stream
    /// and drop them when it is not open yet; the TypeScript client avoids
    /// the race by issuing its GET before anything else, and so do we.
    pub(crate) async fn wait_listener(&self) {
        let mut gate = self.listener_gate.subscribe();
        let _ = tokio::time::timeout(LISTENER_GATE_TIMEOUT, gate.wait_for(|open| *open)).await;
    }

    /// Lets messages held by [`Shared::wait_listener`] go.
    pub(crate) fn open_listener_gate(&self) {
        self.listener_gate.send_replace(true);
    }

    /// The mode, once it is settled.
    async fn wait_mode(&self) -> Mode {
        let mut rx = self.mode.subscribe();
        match rx.wait_for(|m| !matches!(m, Mode::Undecided)).await {
            Ok(mode) => mode.clone(),
            // The sender lives in `self`, so this cannot happen.
            Err(_) => Mode::Streamable,
        }
    }

    /// Bookkeeping at `send` time, before the task starts. Returns whether
    /// this message is the Auto probe (the first `initialize`).
    fn prepare(&self, out: &Outgoing) -> bool {
        let mode = self.mode();
        let mut session = self.session();
        let probe = match mode {
            Mode::Undecided if session.probing => false,
            Mode::Undecided if out.kind == Kind::Initialize => {
                session.probing = true;
                true
            }
            // The era probe decides nothing about the transport: a
            // handshake-era answer leads to the `initialize` that does.
            Mode::Undecided if out.kind == Kind::Discover => false,
            Mode::Undecided => {
                // The first message is not `initialize` (a stateless
                // client): nothing to probe with.
                drop(session);
                self.mode.send_replace(Mode::Streamable);
                return false;
            }
            Mode::Streamable | Mode::Legacy(_) => false,
        };
        match out.kind {
            Kind::Initialize => {
                self.listener_gate.send_replace(true);
            }
            Kind::Initialized => {
                self.listener_gate.send_replace(false);
            }
            Kind::Discover | Kind::Request | Kind::Notification | Kind::Response => {}
        }
        if out.kind == Kind::Initialize {
            // MCP "Transports" §Session Management: a new session starts
            // with an `initialize` that carries no session id.
            session.id = None;
            session.version = None;
            session.generation += 1;
            if let Some(listener) = session.listener.take() {
                listener.abort();
            }
        }
        probe
    }

    /// The session headers for a request: `Mcp-Session-Id` and
    /// `MCP-Protocol-Version` when known. Returns whether the session id
    /// was included.
    pub(crate) fn session_headers(&self, headers: &mut HeaderMap) -> bool {
        let session = self.session();
        if let Some(version) = session.version {
            headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version.as_str()));
        }
        match &session.id {
            Some(id) => {
                headers.insert(SESSION_ID, id.clone());
                true
            }
            None => false,
        }
    }

    /// Records the session id of an `initialize` response. The value must
    /// be visible ASCII (0x21 to 0x7E); anything else is ignored.
    pub(crate) fn set_session_id(&self, value: &HeaderValue) {
        let valid = !value.is_empty() && value.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b));
        if !valid {
            tracing::warn!("ignoring an Mcp-Session-Id header that is not visible ASCII");
            return;
        }
        let mut value = value.clone();
        value.set_sensitive(true);
        self.session().id = Some(value);
    }

    pub(crate) fn generation(&self) -> u64 {
        self.session().generation
    }

    /// Starts the GET stream of the current session, unless one runs.
    pub(crate) fn start_listener(self: &Arc<Self>) {
        let generation = self.generation();
        if self.session().listener.is_some() {
            self.open_listener_gate();
            return;
        }
        let shared = Arc::clone(self);
        let Some(handle) = self.spawn(async move { streamable::listen(&shared, generation).await })
        else {
            self.open_listener_gate();
            return;
        };
        let mut session = self.session();
        if session.generation == generation && session.listener.is_none() {
            session.listener = Some(handle);
        } else {
            handle.abort();
        }
    }

    fn session(&self) -> MutexGuard<'_, Session> {
        lock(&self.session)
    }

    /// The stateless-era version the client settled, if it did.
    pub(crate) fn modern_version(&self) -> Option<ProtocolVersion> {
        self.session().version.filter(|v| !v.uses_handshake())
    }

    /// The stateless era's headers for one message (2026-07-28 "Streamable
    /// HTTP" §Standard headers, §Custom headers). The version is the one
    /// settled, or for the era probe the one in its own `_meta`, so that the
    /// header always equals `_meta`.
    fn modern_headers(&self, message: &Message, settled: Option<ProtocolVersion>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let Message::Request(request) = message else {
            if let Some(version) = settled {
                headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version.as_str()));
            }
            return headers;
        };
        let params = request.params.as_deref();
        let version = settled.or_else(|| {
            params
                .and_then(|p| request_protocol_version(p).and_then(|v| ProtocolVersion::parse(&v)))
        });
        if let Some(version) = version {
            headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version.as_str()));
        }
        if let Ok(value) = HeaderValue::from_str(&mcp_proto::headers::encode_value(&request.method))
        {
            headers.insert(MCP_METHOD, value);
        }
        if let Some(name) = mcp_proto::headers::name_value(&request.method, params)
            && let Ok(value) = HeaderValue::from_str(&name)
        {
            headers.insert(MCP_NAME, value);
        }
        if request.method == mcp_proto::methods::TOOLS_CALL
            && let Some(params) = params
        {
            let tools = lock(&self.tool_headers);
            if !tools.is_empty()
                && let Some(name) = call_name(params)
                && let Some(param_headers) = tools.get(name.as_str())
            {
                let arguments = call_arguments(params);
                for (name, value) in param_headers.values(arguments.as_ref()) {
                    if let (Ok(name), Ok(value)) = (
                        HeaderName::from_bytes(name.as_bytes()),
                        HeaderValue::from_str(&value),
                    ) {
                        headers.insert(name, value);
                    }
                }
            }
        }
        headers
    }

    /// Remembers the POST task of a stateless-era request.
    fn track_inflight(&self, id: RequestId, handle: AbortHandle) {
        if handle.is_finished() {
            return;
        }
        lock(&self.inflight).insert(id, handle);
    }

    /// Forgets a finished stateless-era request.
    pub(crate) fn forget_inflight(&self, id: &RequestId) {
        lock(&self.inflight).remove(id);
    }

    /// Closes the response stream of the request a `notifications/cancelled`
    /// names (2026-07-28 "Cancellation": that is the cancel over HTTP).
    fn cancel_inflight(&self, params: Option<&mcp_proto::RawValue>) {
        let Some(params) = params else {
            return;
        };
        let Ok(cancelled) =
            serde_json::from_str::<mcp_proto::types::CancelledNotificationParams>(params.get())
        else {
            return;
        };
        if let Some(id) = cancelled.request_id
            && let Some(task) = lock(&self.inflight).remove(&id)
        {
            task.abort();
        }
    }
}

/// `_meta["io.modelcontextprotocol/protocolVersion"]` of request params,
/// read without decoding the rest.
fn request_protocol_version(params: &mcp_proto::RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
        version: Option<String>,
    }
    serde_json::from_str::<Params>(params.get())
        .ok()?
        .meta?
        .version
}

/// A `tools/call`'s tool name, read without decoding the arguments.
fn call_name(params: &mcp_proto::RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        name: String,
    }
    serde_json::from_str::<Params>(params.get())
        .ok()
        .map(|p| p.name)
}

/// A `tools/call`'s arguments, for a tool with `Mcp-Param-*` headers.
fn call_arguments(params: &mcp_proto::RawValue) -> Option<mcp_proto::types::JsonObject> {
    #[derive(serde::Deserialize)]
    struct Params {
        arguments: Option<mcp_proto::types::JsonObject>,
    }
    serde_json::from_str::<Params>(params.get()).ok()?.arguments
}

/// Locks a mutex whose holder never panics; poisoning is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

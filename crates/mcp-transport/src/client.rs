//! The async MCP client: pumps `mcp_proto`'s sans-IO session over any [`Transport`].
//!
//! [`Client::new`] returns a cheap-to-clone [`Client`] and the [`Driver`]
//! future that owns the I/O, in the shape of hyper's `(SendRequest,
//! Connection)`. The driver is the only place that touches the transport: it
//! polls inbound frames, the next deadline and outbound messages together,
//! so a slow `send` never stops it from reading. Callers lock the shared
//! session only for the few instructions it takes to queue a request.
//!
//! Guarantees a host can rely on:
//! - many requests are in flight at once on one connection;
//! - every request has a deadline; dropping a call's future cancels the
//!   request on the wire (`notifications/cancelled`);
//! - progress goes to the caller that asked for it;
//! - server requests go to the host's [`ClientHandler`], or are answered
//!   "method not found" without one;
//! - when the transport ends, every pending call fails at once with
//!   [`ClientError::Closed`]: nobody waits for a deadline on a dead peer;
//! - both eras of MCP: the session detects the server's
//!   ([`SessionOptions::era`]); in the stateless era (2026-07-28) a result's
//!   `resultType` is checked (missing means complete, an unknown value is
//!   [`ClientError::UnexpectedResultType`]), and `tools/call`,
//!   `prompts/get` and `resources/read` that need input first
//!   (`input_required`, "Multi round-trip requests") are answered through
//!   the same [`ClientHandler`] that serves the handshake era's server
//!   requests, then sent again with `inputResponses` and the server's
//!   `requestState` echoed unchanged, a new id per round, at most
//!   [`ClientOptions::max_input_rounds`] rounds, all within the call's
//!   deadline; or, for a call with [`CallOptions::return_input_required`],
//!   handed to the caller as [`ClientError::InputRequired`] (the server's
//!   keys and `requestState` unchanged) to answer and retry itself.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::jsonrpc::{ErrorObject, Notification, RawJson, RawValue, RequestId};
use mcp_proto::methods;
use mcp_proto::session::{
    ClientSession, CloseReason, Event, HandshakeError, Negotiated, RequestError, RequestHandle,
    RequestOptions, ServerRequest, SessionError, SessionOptions, SessionState,
};
use mcp_proto::text;
use mcp_proto::types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, CreateMessageRequestParams,
    CreateMessageResult, ElicitAction, ElicitRequestParams, ElicitResult,
    ElicitationCompleteNotificationParams, EmptyResult, InputRequiredResult, JsonObject,
    ListRootsResult, ListToolsResult, LoggingMessageNotificationParams, PaginatedRequestParams,
    ProgressNotificationParams, ResourceUpdatedNotificationParams, ResultType,
    fill_elicitation_defaults,
};
use mcp_proto::{Era, Frame, Message};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::transport::{FrameSink, Inbound, Transport, TransportError};

/// Options for a [`Client`]; start from [`ClientOptions::default`] and set
/// what differs with the setter of the same name.
#[derive(Clone, derive_setters::Setters)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The session's options: client info, capabilities, versions, deadlines.
    pub session: SessionOptions,
    /// Answers the server's requests (roots, sampling, elicitation). Without
    /// one they are answered "method not found". [`Client::new`] declares
    /// what [`ClientHandler::capabilities`] names for each of `roots`,
    /// `sampling` and `elicitation` that [`SessionOptions::capabilities`]
    /// leaves unset.
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// How many server notifications wait for [`Client::take_notifications`]'s
    /// reader before new ones are dropped (with a warning). Default: 1024.
    pub notification_capacity: usize,
    /// Fill in the schema defaults of fields an accepted form elicitation
    /// left out, before the answer goes back. Default: true.
    pub fill_elicitation_defaults: bool,
    /// In the stateless era, how many times one call may come back asking
    /// for input (`input_required`) before it fails with
    /// [`ClientError::TooManyInputRounds`]. Default: 10.
    pub max_input_rounds: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            session: SessionOptions::default(),
            handler: None,
            notification_capacity: 1024,
            fill_elicitation_defaults: true,
            max_input_rounds: 10,
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("session", &self.session)
            .field("handler", &self.handler.is_some())
            .field("notification_capacity", &self.notification_capacity)
            .field("fill_elicitation_defaults", &self.fill_elicitation_defaults)
            .field("max_input_rounds", &self.max_input_rounds)
            .finish()
    }
}

/// Answers requests the server sends the client.
///
/// Every method has a default that refuses with "method not found", so a
/// host implements only what it declared. Methods run on their own tasks;
/// a request the server withdraws (`notifications/cancelled`) has its task
/// aborted and is never answered.
#[async_trait]
pub trait ClientHandler: Send + Sync + 'static {
    /// The capabilities this handler answers for (MCP "Basic/Lifecycle",
    /// "Capability Negotiation"): `roots`, `sampling`, `elicitation` (with
    /// its `form` and `url` modes). [`Client::new`] declares each one the
    /// session options leave unset, so a server sees exactly what the host
    /// can answer. Default: none.
    ///
    /// Tool use in sampling (MCP 2025-11-25 "Client/Sampling", §Tools in
    /// Sampling) is a capability of its own: a handler whose
    /// [`create_message`](ClientHandler::create_message) can offer the
    /// request's `tools` to its model, honour `toolChoice` and answer with
    /// `tool_use` blocks (stop reason `toolUse`), then take the
    /// `tool_result` blocks of the next request, declares it with
    /// `sampling.tools` (`SamplingCapability { tools: Some(JsonObject::new()), .. }`,
    /// on the wire `"sampling": {"tools": {}}`). Without it a server may not
    /// send `tools` or `toolChoice`, and a request that does is answered
    /// with -32602 before the handler sees it, in either era.
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::default()
    }

    /// `roots/list`.
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Err(ErrorObject::method_not_found(methods::ROOTS_LIST))
    }

    /// `sampling/createMessage` (MCP "Client/Sampling"). `params.tools` and
    /// `params.tool_choice` are present only when
    /// [`capabilities`](ClientHandler::capabilities) declared
    /// `sampling.tools`.
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let _ = params;
        Err(ErrorObject::method_not_found(
            methods::SAMPLING_CREATE_MESSAGE,
        ))
    }

    /// `elicitation/create`.
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let _ = params;
        Err(ErrorObject::method_not_found(methods::ELICITATION_CREATE))
    }

    /// `notifications/elicitation/complete` (MCP 2025-11-25
    /// "Client/Elicitation", URL mode): the server says the out-of-band
    /// flow of the URL-mode elicitation `params.elicitation_id` finished,
    /// whether or not the handler's [`elicit`](ClientHandler::elicit) for
    /// it has answered yet (a host still waiting for the person may stop
    /// waiting). An id the handler does not know is to be ignored. Called
    /// on the connection's driver as the notification arrives, before the
    /// requests and notifications that follow it: it must return at once
    /// (hand the news to a task, set a flag); it must not block or wait.
    /// Default: nothing.
    fn elicitation_complete(&self, params: ElicitationCompleteNotificationParams) {
        let _ = params;
    }

    /// Any other request the session let through (for example `tasks/*`
    /// when the client declared tasks).
    async fn other_request(
        &self,
        method: &str,
        params: Option<RawJson>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let _ = params;
        Err(ErrorObject::method_not_found(method))
    }
}

/// A notification from the server, decoded.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated(ResourceUpdatedNotificationParams),
    /// `notifications/message`: a log message.
    LogMessage(LoggingMessageNotificationParams),
    /// Anything else, raw (including known notifications whose params did
    /// not parse).
    Other(Notification),
}

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("server error: {0}")]
    Rpc(ErrorObject),
    /// The deadline passed; the request was cancelled on the wire.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The request was cancelled.
    #[error("request cancelled")]
    Cancelled,
    /// The connection is closed; `reason` says why.
    #[error("connection closed: {reason}")]
    Closed {
        /// Why the connection closed, in words; `transport error` when the
        /// transport's error, the `source`, says why.
        reason: String,
        /// The transport's error, when one ended the connection (see
        /// [`ClientError::transport_error`]).
        #[source]
        source: Option<Arc<TransportError>>,
    },
    /// The server no longer knows this session (HTTP 404): connect again.
    /// Calls are never replayed automatically.
    #[error("session expired: the server no longer knows this session")]
    SessionExpired,
    /// The handshake failed; the second field is the transport's error when
    /// one caused it (`initialize` undelivered, or the connection closed
    /// while probing).
    #[error("handshake failed: {0}")]
    Handshake(HandshakeError, #[source] Option<Arc<TransportError>>),
    /// The transport could not deliver the request; the connection goes on.
    #[error("request not delivered: {reason}")]
    Undelivered {
        /// Why, in words; `transport error` when the transport's error, the
        /// `source`, says why.
        reason: String,
        /// The transport's error (see [`ClientError::transport_error`]).
        #[source]
        source: Option<Arc<TransportError>>,
    },
    /// The session refused the call locally (not ready, capability not
    /// declared by the server, ...). Nothing was sent.
    #[error(transparent)]
    Refused(#[from] SessionError),
    /// The server's result did not have the expected shape.
    #[error("invalid {method} result")]
    InvalidResult {
        /// The method called.
        method: String,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A stateless-era result whose `resultType` this client does not know,
    /// or `input_required` on a method that cannot ask for input.
    #[error("invalid {method} result: unexpected resultType {result_type:?}")]
    UnexpectedResultType {
        /// The method called.
        method: String,
        /// The value, bounded to 64 bytes and escaped.
        result_type: String,
    },
    /// The server asked for input this client cannot give (no handler, or
    /// the handler refused one of the requests).
    #[error("{method} needs input the client cannot give: {reason}")]
    InputNotGiven {
        /// The method called.
        method: String,
        /// Why, in words.
        reason: String,
    },
    /// The server asked for input (`input_required`, 2026-07-28 "Multi
    /// round-trip requests") and the call's
    /// [`CallOptions::return_input_required`] hands the round to the
    /// caller: answer its `inputRequests` and retry with `inputResponses`
    /// and its `requestState`.
    #[error("{method} needs input: the server asked for {}", input_count(round))]
    InputRequired {
        /// The method called.
        method: String,
        /// The server's result: its `inputRequests` by the server's keys,
        /// its `requestState` exactly as sent.
        round: Box<InputRequiredResult>,
    },
    /// The server kept asking for input past
    /// [`ClientOptions::max_input_rounds`].
    #[error("{method} still asked for input after {rounds} rounds")]
    TooManyInputRounds {
        /// The method called.
        method: String,
        /// How many rounds were answered.
        rounds: u32,
    },
}

impl ClientError {
    /// Whether the server went away when probed for its era (older
    /// handshake-era servers exit on a request before `initialize`): start
    /// it again with [`EraPolicy::Legacy`](mcp_proto::EraPolicy::Legacy).
    pub fn is_closed_during_probe(&self) -> bool {
        matches!(self, ClientError::Handshake(e, _) if e.is_closed_during_probe())
    }

    /// The transport's error behind this one, kept as it was reported (not
    /// only as text), so that a caller can tell an HTTP status, a refused
    /// redirect or a size limit apart: for [`ClientError::Closed`],
    /// [`ClientError::Handshake`] and [`ClientError::Undelivered`] when a
    /// transport error caused them, and for [`ClientError::SessionExpired`].
    pub fn transport_error(&self) -> Option<&TransportError> {
        match self {
            ClientError::Closed { source, .. }
            | ClientError::Handshake(_, source)
            | ClientError::Undelivered { source, .. } => source.as_deref(),
            ClientError::SessionExpired => Some(&TransportError::SessionExpired),
            _ => None,
        }
    }

    /// Whether the deadline passed.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout(_))
    }

    /// Whether the connection is gone (closed or session expired).
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            ClientError::Closed { .. } | ClientError::SessionExpired
        )
    }
}

/// Per-call options; start from [`CallOptions::default`] and set what
/// differs with the setter of the same name.
#[derive(Clone, Debug, Default, derive_setters::Setters)]
#[non_exhaustive]
pub struct CallOptions {
    /// The deadline; `None` takes [`SessionOptions::request_timeout`].
    pub timeout: Option<Duration>,
    /// Where progress notifications for this call go; setting it asks the
    /// server for progress.
    pub progress: Option<mpsc::UnboundedSender<ProgressNotificationParams>>,
    /// Restart the deadline when progress arrives, up to `max_total_timeout`.
    pub reset_timeout_on_progress: bool,
    /// The hard limit when progress resets the deadline.
    pub max_total_timeout: Option<Duration>,
    /// In the stateless era, hand a `tools/call`, `prompts/get` or
    /// `resources/read` that comes back `input_required` (2026-07-28
    /// "Multi round-trip requests") to the caller as
    /// [`ClientError::InputRequired`], its `inputRequests` under the
    /// server's own keys and its `requestState` as sent, instead of
    /// answering it through the [`ClientHandler`]. The caller answers the
    /// requests itself and retries: the same method and params with
    /// `inputResponses` (by the same keys) and that `requestState` set in
    /// the params (`CallToolRequestParams`, `GetPromptRequestParams` and
    /// `ReadResourceRequestParams` have both fields), with this option set
    /// again for the next round. For a host that relays the rounds to a
    /// client of its own, such as a gateway. Default: false.
    pub return_input_required: bool,
    /// Where to hear that the server ended this request's SSE stream
    /// before answering it (Streamable HTTP, 2025-11-25 "Transports"
    /// §Resumability and Redelivery: SSE polling), with the delay after
    /// which the transport resumes it (by GET with `Last-Event-ID`; the
    /// answer comes on the resumed stream). Said after what the stream
    /// carried before it ended; nothing fails. For a gateway that mirrors
    /// a server's streams to its own client. Other transports never say
    /// it. Default: `None`.
    pub stream_paused: Option<mpsc::UnboundedSender<Duration>>,
}

/// A connection to one MCP server. Cheap to clone; every clone talks over
/// the same connection.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    /// Shared by every clone; when the last clone goes, the connection closes.
    _alive: Arc<AliveGuard>,
}

/// Closes the connection when the last [`Client`] clone is dropped, so a
/// forgotten client does not keep a server process or socket alive.
struct AliveGuard {
    shared: Arc<Shared>,
}

impl Drop for AliveGuard {
    fn drop(&mut self) {
        let mut inner = self.shared.lock();
        if inner.closed.is_none() {
            inner.closed = Some(ClosedCause::other("every client handle was dropped"));
        }
        inner.session.close();
        drop(inner);
        self.shared.wake.notify_one();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.shared.lock();
        f.debug_struct("Client")
            .field("session", &inner.session)
            .finish_non_exhaustive()
    }
}

/// The future that runs a [`Client`]'s connection. Spawn it (or let
/// [`Client::connect`] do so); the client does nothing until it runs. It
/// ends when the connection closes, after closing the transport.
#[must_use = "the client does nothing unless its driver runs"]
pub struct Driver {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

struct Shared {
    inner: Mutex<Inner>,
    /// Wakes the driver when callers queued something.
    wake: Notify,
    transport: Arc<dyn Transport>,
    handler: Option<Arc<dyn ClientHandler>>,
    fill_elicitation_defaults: bool,
    /// The client declared `sampling.tools` (2025-11-25): a sampling
    /// request may carry `tools` and `toolChoice`.
    sampling_tools: bool,
    max_input_rounds: u32,
    /// Tools whose `Mcp-Param-*` headers the transport was told.
    header_tools: Mutex<std::collections::HashSet<String>>,
    /// The session's default deadline, for the whole of a multi-round call.
    request_timeout: Option<Duration>,
    /// Becomes true when the driver has finished (transport closed too).
    finished: watch::Sender<bool>,
    /// How many notifications went onto the notification channel (see
    /// [`Client::notifications_sent`]); written under `inner`'s lock.
    notifications_sent: std::sync::atomic::AtomicU64,
}

struct Inner {
    session: ClientSession,
    /// Keyed by handles that wrap the session's sequential ids, hashed as
    /// the session hashes them.
    waiters: HashMap<RequestHandle, Waiter, mcp_proto::session::IdBuildHasher>,
    handshake: Option<oneshot::Sender<Result<Arc<Negotiated>, ClientError>>>,
    negotiated: Option<Arc<Negotiated>>,
    /// Why the connection ended, once it has.
    closed: Option<ClosedCause>,
    /// The transport's errors for requests it could not deliver, until
    /// their waiters hear of it.
    undelivered: HashMap<RequestId, Arc<TransportError>>,
    /// The last of those, for a handshake that fails on it.
    last_undelivered: Option<Arc<TransportError>>,
    notifications_tx: Option<mpsc::Sender<ServerNotification>>,
    notifications_rx: Option<mpsc::Receiver<ServerNotification>>,
    /// Requests whose SSE stream the server ended ([`Inbound::StreamPaused`]),
    /// told to their callers after the session's events.
    paused: Vec<(RequestId, Duration)>,
    /// Handler tasks of server requests in progress, to abort on withdrawal.
    server_tasks: HashMap<RequestId, AbortHandle>,
    /// Messages taken from the session that wait for the transport, in order.
    outbox: Outbox,
    /// Whether the driver has a `Transport::send` in flight; while it has,
    /// nobody else may hand the transport a message (order).
    sending: bool,
    /// The deadline the driver's timer is set for; a caller whose request
    /// brings an earlier one wakes the driver.
    armed: Option<Instant>,
    /// When a request last started or a message last arrived (see
    /// [`Client::last_activity`]).
    last_activity: Instant,
}

/// How a request failed, with the transport's error when it was not
/// delivered.
type Failure = (RequestError, Option<Arc<TransportError>>);

/// The reason a request or the connection failed when the transport's
/// error (kept as the source) says why: the `Display` of the error around
/// it leaves the details to that source rather than printing them twice.
const TRANSPORT_ERROR: &str = "transport error";

struct Waiter {
    reply: oneshot::Sender<Result<RawJson, Failure>>,
    progress: Option<mpsc::UnboundedSender<ProgressNotificationParams>>,
    /// See [`CallOptions::stream_paused`].
    paused: Option<mpsc::UnboundedSender<Duration>>,
}

#[derive(Clone, Debug)]
enum ClosedCause {
    SessionExpired,
    Handshake(HandshakeError, Option<Arc<TransportError>>),
    Other(String, Option<Arc<TransportError>>),
}

impl ClosedCause {
    fn other(reason: impl Into<String>) -> ClosedCause {
        ClosedCause::Other(reason.into(), None)
    }

    fn transport(error: TransportError) -> ClosedCause {
        if error.is_session_expired() {
            return ClosedCause::SessionExpired;
        }
        ClosedCause::Other(TRANSPORT_ERROR.to_owned(), Some(Arc::new(error)))
    }

    fn to_error(&self) -> ClientError {
        match self {
            ClosedCause::SessionExpired => ClientError::SessionExpired,
            ClosedCause::Handshake(e, source) => ClientError::Handshake(e.clone(), source.clone()),
            ClosedCause::Other(reason, source) => ClientError::Closed {
                reason: reason.clone(),
                source: source.clone(),
            },
        }
    }

    fn source(&self) -> Option<Arc<TransportError>> {
        match self {
            ClosedCause::SessionExpired => Some(Arc::new(TransportError::SessionExpired)),
            ClosedCause::Handshake(_, source) | ClosedCause::Other(_, source) => source.clone(),
        }
    }
}

impl Shared {
    /// After a caller changed the session under `inner`'s lock: puts what
    /// the session wants to send on the wire straight from the caller's task
    /// when the transport takes it without waiting (no hop through the
    /// driver: that hop costs a thread wake-up per call), and wakes the
    /// driver only when something is left for it to do.
    fn kick(&self, mut inner: MutexGuard<'_, Inner>) {
        flush(self, &mut inner);
        let earlier_deadline = match (inner.session.poll_timeout(), inner.armed) {
            (Some(deadline), Some(armed)) => Instant::from_std(deadline) < armed,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let wake = !inner.outbox.is_empty()
            || earlier_deadline
            || inner.session.state() == SessionState::Closed;
        drop(inner);
        if wake {
            self.wake.notify_one();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        mcp_proto::sync::lock(&self.inner)
    }
}

impl Client {
    /// A client over `transport` and the driver that runs it. Nothing is
    /// sent until [`Client::initialize`] is called and the driver runs.
    pub fn new(transport: impl Transport, options: ClientOptions) -> (Client, Driver) {
        let (notifications_tx, notifications_rx) =
            mpsc::channel(options.notification_capacity.max(1));
        let request_timeout = options.session.request_timeout;
        let mut session = options.session;
        if let Some(handler) = &options.handler {
            declare(&mut session.capabilities, handler.capabilities());
        }
        let sampling_tools = session
            .capabilities
            .sampling
            .as_ref()
            .is_some_and(|sampling| sampling.tools.is_some());
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                session: ClientSession::new(session),
                waiters: HashMap::default(),
                handshake: None,
                negotiated: None,
                closed: None,
                undelivered: HashMap::new(),
                last_undelivered: None,
                notifications_tx: Some(notifications_tx),
                notifications_rx: Some(notifications_rx),
                paused: Vec::new(),
                server_tasks: HashMap::new(),
                outbox: Outbox::default(),
                sending: false,
                armed: None,
                last_activity: Instant::now(),
            }),
            wake: Notify::new(),
            transport: Arc::new(transport),
            handler: options.handler,
            fill_elicitation_defaults: options.fill_elicitation_defaults,
            sampling_tools,
            max_input_rounds: options.max_input_rounds,
            header_tools: Mutex::new(std::collections::HashSet::new()),
            request_timeout,
            finished: watch::Sender::new(false),
            notifications_sent: std::sync::atomic::AtomicU64::new(0),
        });
        // Weak: the transport's reading task holds the sink, and must not
        // keep the connection alive after the last handle and the driver.
        let sink = Arc::new(SessionSink(Arc::downgrade(&shared)));
        if let Some(extensions) = shared.transport.extensions() {
            extensions.set_frame_sink(sink);
        }
        (
            Client {
                shared: shared.clone(),
                _alive: Arc::new(AliveGuard {
                    shared: shared.clone(),
                }),
            },
            Driver { shared },
        )
    }

    /// Connects: spawns the driver on the current tokio runtime and runs
    /// the handshake. On failure the connection is closed.
    pub async fn connect(
        transport: impl Transport,
        options: ClientOptions,
    ) -> Result<Client, ClientError> {
        let (client, driver) = Client::new(transport, options);
        tokio::spawn(driver.run());
        client.initialize().await?;
        Ok(client)
    }

    /// Settles the era and version and returns what was settled: by
    /// [`SessionOptions::era`], the `server/discover` probe and then, for a
    /// handshake-era server, `initialize` and `notifications/initialized`.
    pub async fn initialize(&self) -> Result<Arc<Negotiated>, ClientError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut inner = self.shared.lock();
            inner
                .session
                .start(Instant::now().into_std())
                .map_err(|e| match (&inner.closed, e) {
                    (Some(cause), SessionError::Closed) => cause.to_error(),
                    (_, e) => ClientError::Refused(e),
                })?;
            inner.handshake = Some(tx);
        }
        self.shared.wake.notify_one();
        match rx.await {
            Ok(result) => result,
            Err(_) => Err(self.closed_error()),
        }
    }

    /// What the handshake settled, once it has.
    pub fn negotiated(&self) -> Option<Arc<Negotiated>> {
        self.shared.lock().negotiated.clone()
    }

    /// Why the connection closed, once it has: the error that calls made
    /// now fail with (its [`ClientError::transport_error`] is the
    /// transport's own, when one ended the connection).
    pub fn closed_reason(&self) -> Option<ClientError> {
        self.shared
            .lock()
            .closed
            .as_ref()
            .map(ClosedCause::to_error)
    }

    /// What the server process last wrote to stderr, raw
    /// ([`TransportExtensions::stderr_tail`]; `None` for a transport
    /// without one): complete once [`Client::close`] has returned. For a
    /// person, bounded and escaped; never for a model.
    ///
    /// [`TransportExtensions::stderr_tail`]: crate::TransportExtensions::stderr_tail
    pub fn stderr_tail(&self) -> Option<String> {
        self.shared.transport.extensions()?.stderr_tail()
    }

    /// The first line the server process wrote to stdout that is not a
    /// JSON-RPC message, raw ([`TransportExtensions::first_stray_line`];
    /// `None` for a transport without one, or while there is none): why a
    /// stdio server that prints a banner may never seem to answer. For a
    /// person, bounded and escaped; never for a model.
    ///
    /// [`TransportExtensions::first_stray_line`]: crate::TransportExtensions::first_stray_line
    pub fn first_stray_line(&self) -> Option<String> {
        self.shared.transport.extensions()?.first_stray_line()
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.shared.lock().session.state() == SessionState::Closed
    }

    /// How much the connection is doing now: our requests still waiting for
    /// their response, plus the server's requests a handler is still
    /// answering (a sampling or elicitation round trip). An idle policy must
    /// not close a connection while this is above zero: a long tool call is
    /// use, however long ago it started.
    pub fn in_flight(&self) -> usize {
        let inner = self.shared.lock();
        inner.waiters.len() + inner.server_tasks.len()
    }

    /// When a request last started or a message from the server last
    /// arrived: with [`Client::in_flight`], what an idle timer measures from.
    pub fn last_activity(&self) -> Instant {
        self.shared.lock().last_activity
    }

    /// The server's notifications, in arrival order. Returns the receiver
    /// once; later calls return `None`. The stream ends when the connection
    /// closes.
    pub fn take_notifications(&self) -> Option<mpsc::Receiver<ServerNotification>> {
        self.shared.lock().notifications_rx.take()
    }

    /// How many of the server's notifications this client has put on the
    /// channel [`Client::take_notifications`] returns, in all (one dropped
    /// because the channel was full is not counted): the one its reader
    /// takes n-th is the n-th counted. Messages are handled in the order
    /// they arrived, so a caller reading this once its response arrived
    /// gets a count that includes every notification the server sent
    /// before that response; a reader that counts what it took knows when
    /// it has taken them all (a gateway relaying a server's log messages
    /// ahead of the answer they came before does so).
    pub fn notifications_sent(&self) -> u64 {
        self.shared
            .notifications_sent
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Sends a request and waits for its raw result, not yet read through
    /// ([`RawJson::decode`] checks it).
    ///
    /// Dropping the returned future before it finishes cancels the request
    /// (`notifications/cancelled` goes to the server, or over Streamable
    /// HTTP in the stateless era, its response stream is closed).
    ///
    /// In the stateless era the result's `resultType` is checked, and a
    /// request that comes back `input_required` is answered and sent again
    /// (see the module docs) until it completes, or with
    /// [`CallOptions::return_input_required`] handed back as
    /// [`ClientError::InputRequired`].
    pub async fn request_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
        options: CallOptions,
    ) -> Result<RawJson, ClientError> {
        let modern = self
            .shared
            .lock()
            .negotiated
            .as_ref()
            .is_some_and(|n| n.era() == Era::Modern);
        if !modern {
            return self.request_once(method, params, options, &mut None).await;
        }
        // When the first request went out: the whole call's deadline, which
        // only input rounds read, runs from it.
        let mut started = None;
        let first = match self
            .request_once(method, params, options.clone(), &mut started)
            .await
        {
            // 2026-07-28 "Streamable HTTP" §Custom headers: a HeaderMismatch
            // means the tool's headers changed; list the tools again and
            // retry once.
            Err(ClientError::Rpc(error))
                if error.code == HEADER_MISMATCH && method == methods::TOOLS_CALL =>
            {
                tracing::debug!(message = %error.message, "header mismatch; listing tools again");
                self.relist_tools().await?;
                self.request_once(method, params, options.clone(), &mut None)
                    .await?
            }
            other => other?,
        };
        match peek_result_type(method, &first)? {
            ResultType::Complete if method == methods::TOOLS_LIST => self.learn_tool_headers(first),
            ResultType::Complete => Ok(first),
            ResultType::InputRequired
                if asks_for_input(method) && options.return_input_required =>
            {
                Err(input_required(method, &first))
            }
            ResultType::InputRequired if asks_for_input(method) => {
                let timeout = options.timeout.or(self.shared.request_timeout);
                let deadline = timeout.and_then(|t| started?.checked_add(t));
                self.answer_input(method, params, options, deadline, first)
                    .await
            }
            other => Err(unexpected_result_type(method, &other)),
        }
    }

    /// Every page of `tools/list` again, so that the transport learns the
    /// tools' current headers.
    async fn relist_tools(&self) -> Result<(), ClientError> {
        let mut cursor = None;
        for _ in 0..MAX_RELIST_PAGES {
            let params = PaginatedRequestParams {
                cursor,
                ..Default::default()
            };
            let raw = self
                .request_once(
                    methods::TOOLS_LIST,
                    Some(&params),
                    CallOptions::default(),
                    &mut None,
                )
                .await?;
            let raw = self.learn_tool_headers(raw)?;
            let page: ListToolsResult =
                raw.decode().map_err(|source| ClientError::InvalidResult {
                    method: methods::TOOLS_LIST.to_owned(),
                    source,
                })?;
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        Ok(())
    }

    /// A stateless-era `tools/list` page: each tool's `x-mcp-header`
    /// annotations are checked; the transport learns the valid ones, and a
    /// tool with an invalid one is dropped from the page with a warning
    /// naming it (2026-07-28 "Streamable HTTP" §Custom headers: the client
    /// MUST NOT use such a tool).
    ///
    /// Only what the annotations need is read: a page whose text never
    /// mentions `x-mcp-header` (most servers') is passed on untouched, and
    /// otherwise only the annotated tools' names and input schemas are
    /// decoded; the page is rebuilt from the kept tools' own text when one
    /// is dropped.
    fn learn_tool_headers(&self, raw: RawJson) -> Result<RawJson, ClientError> {
        #[derive(serde::Deserialize)]
        struct Annotated {
            name: String,
            #[serde(rename = "inputSchema", default)]
            input_schema: JsonObject,
        }
        #[derive(serde::Deserialize)]
        struct Named {
            name: String,
        }
        let invalid = |source| ClientError::InvalidResult {
            method: methods::TOOLS_LIST.to_owned(),
            source,
        };
        let mentions =
            |text: &str| memchr::memmem::find(text.as_bytes(), b"x-mcp-header").is_some();
        let registered = !lock_set(&self.shared.header_tools).is_empty();
        if !mentions(raw.get()) && !registered {
            return Ok(raw);
        }
        let mut page: std::collections::BTreeMap<String, Box<RawValue>> =
            serde_json::from_str(raw.get()).map_err(invalid)?;
        let Some(tools) = page.get("tools") else {
            return Ok(raw);
        };
        let tools: Vec<Box<RawValue>> = serde_json::from_str(tools.get()).map_err(invalid)?;
        let mut kept = Vec::with_capacity(tools.len());
        let mut dropped = false;
        for tool in tools {
            if mentions(tool.get()) {
                let annotated: Annotated = serde_json::from_str(tool.get()).map_err(invalid)?;
                match mcp_proto::headers::tool_param_headers(&annotated.input_schema) {
                    Ok(headers) => {
                        self.remember_headers(&annotated.name, Some(headers));
                        kept.push(tool);
                    }
                    Err(error) => {
                        tracing::warn!(
                            tool = %bounded(&annotated.name),
                            %error,
                            "dropping a tool whose x-mcp-header annotation is invalid"
                        );
                        self.remember_headers(&annotated.name, None);
                        dropped = true;
                    }
                }
            } else {
                if registered && let Ok(named) = serde_json::from_str::<Named>(tool.get()) {
                    self.remember_headers(&named.name, None);
                }
                kept.push(tool);
            }
        }
        if !dropped {
            return Ok(raw);
        }
        let list = format!(
            "[{}]",
            kept.iter().map(|t| t.get()).collect::<Vec<_>>().join(",")
        );
        page.insert(
            "tools".to_owned(),
            RawValue::from_string(list).map_err(invalid)?,
        );
        RawJson::encode(&page).map_err(invalid)
    }

    /// Tells the transport a tool's headers and keeps track of which tools
    /// have any, so that a later listing can forget the ones that lost theirs.
    fn remember_headers(&self, tool: &str, headers: Option<mcp_proto::headers::ToolParamHeaders>) {
        let has = headers.as_ref().is_some_and(|h| !h.is_empty());
        {
            let mut set = lock_set(&self.shared.header_tools);
            if has {
                set.insert(tool.to_owned());
            } else if !set.remove(tool) {
                return;
            }
        }
        if let Some(extensions) = self.shared.transport.extensions() {
            extensions.set_tool_headers(tool, headers);
        }
    }

    /// The rounds of a request that needs input (2026-07-28 "Multi
    /// round-trip requests"): fulfil `inputRequests` through the handler,
    /// resend the same method and params with `inputResponses` and the
    /// `requestState` echoed, each round a new request (a new id) with what
    /// is left of the call's deadline.
    async fn answer_input<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
        mut options: CallOptions,
        deadline: Option<Instant>,
        mut raw: RawJson,
    ) -> Result<RawJson, ClientError> {
        let base = match params {
            Some(p) => serde_json::to_value(p).map_err(|e| {
                ClientError::Refused(SessionError::Encode {
                    method: method.to_owned(),
                    source: e,
                })
            })?,
            None => serde_json::Value::Object(JsonObject::new()),
        };
        if !base.is_object() {
            return Err(ClientError::Refused(SessionError::ParamsNotObject {
                method: method.to_owned(),
            }));
        }
        let mut rounds = 0u32;
        loop {
            if rounds >= self.shared.max_input_rounds {
                return Err(ClientError::TooManyInputRounds {
                    method: method.to_owned(),
                    rounds,
                });
            }
            rounds += 1;
            let asked: InputRequiredResult =
                raw.decode().map_err(|source| ClientError::InvalidResult {
                    method: method.to_owned(),
                    source,
                })?;
            let mut next = base.clone();
            let object = next.as_object_mut().expect("checked to be an object above");
            if let Some(requests) = asked.input_requests {
                let responses = self.fulfil(method, requests).await?;
                object.insert(
                    "inputResponses".to_owned(),
                    serde_json::Value::Object(responses),
                );
            }
            // Echoed exactly as given; never one of our own.
            if let Some(state) = asked.request_state {
                object.insert("requestState".to_owned(), serde_json::Value::String(state));
            }
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(ClientError::Timeout(
                        options
                            .timeout
                            .or(self.shared.request_timeout)
                            .unwrap_or_default(),
                    ));
                }
                options.timeout = Some(left);
            }
            raw = self
                .request_once(method, Some(&next), options.clone(), &mut None)
                .await?;
            match peek_result_type(method, &raw)? {
                ResultType::Complete => return Ok(raw),
                ResultType::InputRequired => continue,
                other => return Err(unexpected_result_type(method, &other)),
            }
        }
    }

    /// Answers each of a round's `inputRequests` through the handler.
    async fn fulfil(&self, method: &str, requests: JsonObject) -> Result<JsonObject, ClientError> {
        #[derive(serde::Deserialize)]
        struct InputRequest {
            method: String,
            #[serde(default)]
            params: Option<RawJson>,
        }
        let not_given = |reason: String| ClientError::InputNotGiven {
            method: method.to_owned(),
            reason,
        };
        let Some(handler) = self.shared.handler.clone() else {
            return Err(not_given(
                "no handler answers the server's requests".to_owned(),
            ));
        };
        let mut responses = JsonObject::new();
        for (key, request) in requests {
            let request: InputRequest = serde_json::from_value(request).map_err(|e| {
                not_given(format!(
                    "input request {:?} is malformed: {e}",
                    bounded(&key)
                ))
            })?;
            if !matches!(
                request.method.as_str(),
                methods::ELICITATION_CREATE
                    | methods::SAMPLING_CREATE_MESSAGE
                    | methods::ROOTS_LIST
            ) {
                return Err(not_given(format!(
                    "input request {:?} asks for {:?}",
                    bounded(&key),
                    bounded(&request.method)
                )));
            }
            let answer = answer(
                handler.as_ref(),
                &request.method,
                request.params,
                Answering::of(&self.shared),
            )
            .await
            .map_err(|e| {
                not_given(format!(
                    "{} for {:?} was refused: {}",
                    request.method,
                    bounded(&key),
                    bounded(&e.message)
                ))
            })?;
            let value: serde_json::Value = serde_json::from_str(answer.get())
                .map_err(|e| not_given(format!("the handler's answer is not JSON: {e}")))?;
            responses.insert(key, value);
        }
        Ok(responses)
    }

    /// One request and its raw result (see [`Client::request_raw`]);
    /// `sent_at` is set to when the session took the request (the clock is
    /// read once per request, here).
    async fn request_once<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
        options: CallOptions,
        sent_at: &mut Option<Instant>,
    ) -> Result<RawJson, ClientError> {
        let (tx, rx) = oneshot::channel();
        let handle = {
            let mut inner = self.shared.lock();
            let request_options = RequestOptions::default()
                .timeout(options.timeout)
                .progress(options.progress.is_some())
                .reset_timeout_on_progress(options.reset_timeout_on_progress)
                .max_total_timeout(options.max_total_timeout);
            let now = Instant::now();
            inner.last_activity = now;
            *sent_at = Some(now);
            let handle = inner
                .session
                .request(now.into_std(), method, params, request_options)
                .map_err(|e| match (&inner.closed, e) {
                    (Some(cause), SessionError::Closed) => cause.to_error(),
                    (_, e) => ClientError::Refused(e),
                })?;
            inner.waiters.insert(
                handle,
                Waiter {
                    reply: tx,
                    progress: options.progress,
                    paused: options.stream_paused,
                },
            );
            self.shared.kick(inner);
            handle
        };
        let mut guard = CancelOnDrop {
            shared: &self.shared,
            handle,
            armed: true,
        };
        let outcome = rx.await;
        guard.armed = false;
        match outcome {
            Ok(Ok(raw)) => Ok(raw),
            Ok(Err(error)) => Err(self.map_request_error(error)),
            Err(_) => Err(self.closed_error()),
        }
    }

    /// Sends a request and decodes its result as `R` (after the stateless
    /// era's input rounds, if any).
    pub async fn request<P: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<&P>,
        options: CallOptions,
    ) -> Result<R, ClientError> {
        let raw = self.request_raw(method, params, options).await?;
        raw.decode().map_err(|source| ClientError::InvalidResult {
            method: method.to_owned(),
            source,
        })
    }

    /// Sends a notification.
    pub fn notify<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), ClientError> {
        let mut inner = self.shared.lock();
        inner
            .session
            .notify(method, params)
            .map_err(|e| match (&inner.closed, e) {
                (Some(cause), SessionError::Closed) => cause.to_error(),
                (_, e) => ClientError::Refused(e),
            })?;
        self.shared.kick(inner);
        Ok(())
    }

    /// `ping`.
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.request::<_, EmptyResult>(methods::PING, None::<&()>, CallOptions::default())
            .await
            .map(|_| ())
    }

    /// One page of `tools/list`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            ..Default::default()
        };
        self.request(methods::TOOLS_LIST, Some(&params), CallOptions::default())
            .await
    }

    /// `tools/call` with arguments.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ClientError> {
        let params = CallToolRequestParams {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        };
        self.call_tool_with(&params, CallOptions::default()).await
    }

    /// `tools/call` with full parameters and per-call options.
    pub async fn call_tool_with(
        &self,
        params: &CallToolRequestParams,
        options: CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        let raw = self
            .request_raw(methods::TOOLS_CALL, Some(params), options)
            .await?;
        // The stateless era's `_meta` (the server's name on every result)
        // is taken apart, checked once while it stays the same, and a long
        // text the transport moved aside is moved into the result.
        raw.into_result()
            .map_err(|source| ClientError::InvalidResult {
                method: methods::TOOLS_CALL.to_owned(),
                source,
            })
    }

    /// One page of `tools/list` (MCP "Server/Tools", "Listing Tools") with
    /// full parameters and per-call options.
    pub async fn list_tools_with(
        &self,
        params: &PaginatedRequestParams,
        options: CallOptions,
    ) -> Result<ListToolsResult, ClientError> {
        self.request(methods::TOOLS_LIST, Some(params), options)
            .await
    }

    /// One page of `resources/list` (MCP "Server/Resources", "Listing
    /// Resources"); `cursor` is the previous page's `nextCursor`.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<mcp_proto::types::ListResourcesResult, ClientError> {
        self.list_resources_with(
            &PaginatedRequestParams::page(cursor),
            CallOptions::default(),
        )
        .await
    }

    /// `resources/list` with full parameters and per-call options.
    pub async fn list_resources_with(
        &self,
        params: &PaginatedRequestParams,
        options: CallOptions,
    ) -> Result<mcp_proto::types::ListResourcesResult, ClientError> {
        self.request(methods::RESOURCES_LIST, Some(params), options)
            .await
    }

    /// One page of `resources/templates/list` (MCP "Server/Resources",
    /// "Resource Templates").
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<mcp_proto::types::ListResourceTemplatesResult, ClientError> {
        self.list_resource_templates_with(
            &PaginatedRequestParams::page(cursor),
            CallOptions::default(),
        )
        .await
    }

    /// `resources/templates/list` with full parameters and per-call options.
    pub async fn list_resource_templates_with(
        &self,
        params: &PaginatedRequestParams,
        options: CallOptions,
    ) -> Result<mcp_proto::types::ListResourceTemplatesResult, ClientError> {
        self.request(methods::RESOURCES_TEMPLATES_LIST, Some(params), options)
            .await
    }

    /// `resources/read` of one URI (MCP "Server/Resources", "Reading
    /// Resources"): its contents, text or base64 blobs, possibly several.
    pub async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<mcp_proto::types::ReadResourceResult, ClientError> {
        let params = mcp_proto::types::ReadResourceRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        self.read_resource_with(&params, CallOptions::default())
            .await
    }

    /// `resources/read` with full parameters and per-call options. In the
    /// stateless era its input rounds run as for [`Client::request_raw`].
    pub async fn read_resource_with(
        &self,
        params: &mcp_proto::types::ReadResourceRequestParams,
        options: CallOptions,
    ) -> Result<mcp_proto::types::ReadResourceResult, ClientError> {
        self.request(methods::RESOURCES_READ, Some(params), options)
            .await
    }

    /// `resources/subscribe` (MCP "Server/Resources", "Subscriptions"):
    /// the server sends `notifications/resources/updated` for `uri` from
    /// now on. In the 2026-07-28 era, which has no such method, the
    /// session adds `uri` to the `resourceSubscriptions` of its
    /// `subscriptions/listen` request (2026-07-28 "Subscriptions") and
    /// opens it again, answering at once. Refused by the session when the
    /// server did not declare `resources.subscribe`.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        let params = mcp_proto::types::SubscribeRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        self.request::<_, EmptyResult>(
            methods::RESOURCES_SUBSCRIBE,
            Some(&params),
            CallOptions::default(),
        )
        .await
        .map(|_| ())
    }

    /// `resources/unsubscribe`: ends a [`Client::subscribe_resource`] (in
    /// the 2026-07-28 era, takes `uri` out of the listen request's filter).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        let params = mcp_proto::types::UnsubscribeRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        self.request::<_, EmptyResult>(
            methods::RESOURCES_UNSUBSCRIBE,
            Some(&params),
            CallOptions::default(),
        )
        .await
        .map(|_| ())
    }

    /// One page of `prompts/list` (MCP "Server/Prompts", "Listing Prompts").
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<mcp_proto::types::ListPromptsResult, ClientError> {
        self.list_prompts_with(
            &PaginatedRequestParams::page(cursor),
            CallOptions::default(),
        )
        .await
    }

    /// `prompts/list` with full parameters and per-call options.
    pub async fn list_prompts_with(
        &self,
        params: &PaginatedRequestParams,
        options: CallOptions,
    ) -> Result<mcp_proto::types::ListPromptsResult, ClientError> {
        self.request(methods::PROMPTS_LIST, Some(params), options)
            .await
    }

    /// `prompts/get` (MCP "Server/Prompts", "Getting a Prompt"): the
    /// prompt's messages with its arguments filled in (values are strings).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<mcp_proto::types::GetPromptResult, ClientError> {
        let params = mcp_proto::types::GetPromptRequestParams {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        };
        self.get_prompt_with(&params, CallOptions::default()).await
    }

    /// `prompts/get` with full parameters and per-call options. In the
    /// stateless era its input rounds run as for [`Client::request_raw`].
    pub async fn get_prompt_with(
        &self,
        params: &mcp_proto::types::GetPromptRequestParams,
        options: CallOptions,
    ) -> Result<mcp_proto::types::GetPromptResult, ClientError> {
        self.request(methods::PROMPTS_GET, Some(params), options)
            .await
    }

    /// `completion/complete` (MCP "Server/Utilities/Completion"): values
    /// for a prompt's argument or a resource template's variable. Refused
    /// by the session when the server did not declare `completions`.
    pub async fn complete(
        &self,
        params: &mcp_proto::types::CompleteRequestParams,
    ) -> Result<mcp_proto::types::CompleteResult, ClientError> {
        self.complete_with(params, CallOptions::default()).await
    }

    /// `completion/complete` with per-call options.
    pub async fn complete_with(
        &self,
        params: &mcp_proto::types::CompleteRequestParams,
        options: CallOptions,
    ) -> Result<mcp_proto::types::CompleteResult, ClientError> {
        self.request(methods::COMPLETION_COMPLETE, Some(params), options)
            .await
    }

    /// `logging/setLevel` (MCP "Server/Utilities/Logging"; handshake era
    /// only, the stateless era sets the level per request in `_meta`): the
    /// least severe `notifications/message` the server should send.
    pub async fn set_logging_level(
        &self,
        level: mcp_proto::types::LoggingLevel,
    ) -> Result<(), ClientError> {
        let params = mcp_proto::types::SetLevelRequestParams {
            level,
            meta: None,
            extra: JsonObject::new(),
        };
        self.request::<_, EmptyResult>(
            methods::LOGGING_SET_LEVEL,
            Some(&params),
            CallOptions::default(),
        )
        .await
        .map(|_| ())
    }

    /// Closes the connection politely and waits until the transport is
    /// closed. Pending calls fail with [`ClientError::Closed`].
    pub async fn close(&self) {
        {
            let mut inner = self.shared.lock();
            if inner.closed.is_none() {
                inner.closed = Some(ClosedCause::other("closed by the client"));
            }
            inner.session.close();
        }
        self.shared.wake.notify_one();
        self.wait_closed().await;
    }

    /// Waits until the connection has closed and the driver has finished.
    pub async fn wait_closed(&self) {
        let mut finished = self.shared.finished.subscribe();
        // `wait_for` only fails when the sender is gone, which also means
        // the driver is gone.
        let _ = finished.wait_for(|done| *done).await;
    }

    fn closed_error(&self) -> ClientError {
        self.shared
            .lock()
            .closed
            .as_ref()
            .map(ClosedCause::to_error)
            .unwrap_or_else(|| ClientError::Closed {
                reason: "the driver stopped".to_owned(),
                source: None,
            })
    }

    fn map_request_error(&self, (error, source): Failure) -> ClientError {
        match error {
            RequestError::Rpc(e) => ClientError::Rpc(e),
            RequestError::Timeout(d) => ClientError::Timeout(d),
            RequestError::Cancelled => ClientError::Cancelled,
            RequestError::Undelivered(reason) => ClientError::Undelivered { reason, source },
            RequestError::Closed => self.closed_error(),
            other => ClientError::Closed {
                reason: other.to_string(),
                source: None,
            },
        }
    }
}

/// Handles inbound frames on the transport's reading task, for transports
/// that offer it (`TransportExtensions::set_frame_sink`): the frame goes to the
/// session and a completed request's caller is woken from there, so the
/// driver is not woken to relay it (that hop cost a thread wake-up per
/// call). What the session then wants sent goes out as a caller's request
/// does ([`Shared::kick`]); the driver is woken only for what is left.
struct SessionSink(Weak<Shared>);

impl FrameSink for SessionSink {
    fn frames(&self, frames: &mut dyn Iterator<Item = Frame>) {
        let Some(shared) = self.0.upgrade() else {
            return;
        };
        let mut frames = frames.peekable();
        while frames.peek().is_some() {
            let mut inner = shared.lock();
            let arrived = Instant::now();
            inner.last_activity = arrived;
            let now = arrived.into_std();
            // Every frame of the batch under one lock and one pass that
            // wakes their callers (a lock and a pass per frame cost more
            // than the frame with many calls in flight), in passes of a
            // bounded size so that callers are not held off for long.
            for frame in frames.by_ref().take(MAX_INBOUND_BATCH) {
                inner.session.handle_frame(now, frame);
            }
            // Within the same lock: an `Initialized` event must reach the
            // transport before a caller can flush the
            // `notifications/initialized` queued with it.
            pump(&shared, &mut inner);
            shared.kick(inner);
        }
    }
}

/// Cancels the request when a call's future is dropped before it finished.
struct CancelOnDrop<'a> {
    shared: &'a Shared,
    handle: RequestHandle,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut inner = self.shared.lock();
        inner.waiters.remove(&self.handle);
        let cancelled = inner
            .session
            .cancel(self.handle, Some("the caller gave up"));
        drop(inner);
        if cancelled {
            self.shared.wake.notify_one();
        }
    }
}

type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<(), TransportError>> + Send + 'a>>;

impl Driver {
    /// Runs the connection until it closes, and returns why it closed: the
    /// error calls now fail with, as [`Client::closed_reason`] gives it
    /// (its [`ClientError::transport_error`] is the transport's own when one
    /// ended the connection).
    pub async fn run(self) -> ClientError {
        let shared = self.shared;
        let transport = shared.transport.clone();
        // The futures live across passes of the loop: a new `recv()` or
        // timer per pass costs an allocation and a timer registration per
        // message (measured with `cargo xtask bench`).
        let mut receiving = transport.recv();
        let mut sending: Option<SendFuture<'_>> = None;
        // The id of the request `sending` carries, so that a message the
        // transport cannot encode fails that request alone.
        let mut sending_id: Option<RequestId> = None;
        let timer = tokio::time::sleep_until(Instant::now());
        tokio::pin!(timer);
        let mut armed: Option<Instant> = None;
        let mut transport_open = true;
        loop {
            let (deadline, closed, next) = {
                let mut inner = shared.lock();
                pump(&shared, &mut inner);
                let next = if sending.is_none() {
                    inner.outbox.pop_front()
                } else {
                    None
                };
                inner.sending = sending.is_some() || next.is_some();
                // The timer is moved only to an earlier deadline: the
                // earliest deadline changes with almost every response, and
                // moving the timer each time cost a timer-wheel update per
                // call (measured with callgrind). A timer left earlier than
                // needed fires once for nothing and is then set again.
                let deadline = match (inner.session.poll_timeout().map(Instant::from_std), armed) {
                    (Some(deadline), Some(armed)) => Some(deadline.min(armed)),
                    (deadline, armed) => deadline.or(armed),
                };
                inner.armed = deadline;
                let closed = inner.session.state() == SessionState::Closed;
                (deadline, closed, next)
            };
            if closed {
                break;
            }
            if let Some(message) = next {
                sending_id = match &message {
                    Message::Request(request) => Some(request.id.clone()),
                    _ => None,
                };
                sending = Some(transport.send(message));
            }
            if deadline != armed {
                if let Some(deadline) = deadline {
                    timer.as_mut().reset(deadline);
                }
                armed = deadline;
            }
            tokio::select! {
                result = poll_optional(&mut sending) => {
                    sending = None;
                    let id = sending_id.take();
                    let mut inner = shared.lock();
                    inner.sending = false;
                    match result {
                        Ok(()) => {}
                        // Nothing was written: the connection is still in
                        // step, and only this message is lost.
                        Err(error @ TransportError::Encode(_)) => {
                            on_undelivered(&mut inner, id, error);
                        }
                        Err(error) => close_on_transport_error(&mut inner, error),
                    }
                }
                inbound = &mut receiving, if transport_open => {
                    let mut inner = shared.lock();
                    let arrived = Instant::now();
                    inner.last_activity = arrived;
                    let now = arrived.into_std();
                    transport_open = on_inbound(&mut inner, now, inbound);
                    // Everything else that has already arrived is handled in
                    // the same pass, under the same lock: with many calls in
                    // flight, a pass per frame cost more than the frame.
                    let mut batch = 1;
                    while transport_open && batch < MAX_INBOUND_BATCH {
                        let Some(inbound) = transport.try_recv() else {
                            break;
                        };
                        transport_open = on_inbound(&mut inner, now, inbound);
                        batch += 1;
                    }
                    // Within the same lock: an `Initialized` event must reach
                    // the transport before a caller can flush the
                    // `notifications/initialized` queued with it.
                    pump(&shared, &mut inner);
                    drop(inner);
                    if transport_open {
                        receiving = transport.recv();
                    }
                }
                () = &mut timer, if armed.is_some() => {
                    armed = None;
                    shared.lock().session.handle_timeout(Instant::now().into_std());
                }
                () = shared.wake.notified() => {}
            }
        }
        drop(sending);
        drop(receiving);
        if let Err(error) = transport.close().await {
            tracing::debug!(%error, "closing the transport failed");
        }
        let tasks: Vec<AbortHandle> = shared.lock().server_tasks.drain().map(|(_, t)| t).collect();
        for task in tasks {
            task.abort();
        }
        let reason = shared
            .lock()
            .closed
            .as_ref()
            .map(ClosedCause::to_error)
            .unwrap_or_else(|| ClientError::Closed {
                reason: "the connection was closed".to_owned(),
                source: None,
            });
        shared.finished.send_replace(true);
        reason
    }
}

/// Takes what the session wants to send into the outbox and, unless a
/// `send` is in flight, hands as much of it as the transport takes without
/// waiting straight to the transport (order is kept: the outbox is FIFO and
/// nothing bypasses it while the driver sends).
fn flush(shared: &Shared, inner: &mut Inner) {
    while let Some(message) = inner.session.poll_transmit() {
        inner.outbox.push_back(message);
    }
    if inner.outbox.replies > MAX_UNSENT_REPLIES {
        // The server keeps sending requests (pings) and does not read the
        // answers, over a transport that kept reading it regardless.
        tracing::warn!(
            replies = inner.outbox.replies,
            "the server does not read our answers to its requests; closing the connection"
        );
        inner.outbox.clear();
        if inner.closed.is_none() {
            inner.closed = Some(ClosedCause::transport(TransportError::Protocol(format!(
                "the server sent more than {MAX_UNSENT_REPLIES} requests whose answers it did not read"
            ))));
        }
        inner.session.handle_close();
        shared.wake.notify_one();
        return;
    }
    if inner.sending {
        return;
    }
    while let Some(message) = inner.outbox.pop_front() {
        if let Err(message) = shared.transport.try_send(message) {
            inner.outbox.push_front(message);
            break;
        }
    }
}

/// Moves the session's output to where it goes: events to waiters and
/// streams, messages towards the transport (see [`flush`]).
fn pump(shared: &Arc<Shared>, inner: &mut Inner) {
    while let Some(event) = inner.session.poll_event() {
        match event {
            Event::Initialized(negotiated) => {
                // The HTTP transport must know the version before
                // `notifications/initialized` (queued with this event) goes.
                if let Some(extensions) = shared.transport.extensions() {
                    extensions.set_protocol_version(negotiated.version);
                }
                let negotiated: Arc<Negotiated> = Arc::from(negotiated);
                inner.negotiated = Some(negotiated.clone());
                if let Some(tx) = inner.handshake.take() {
                    let _ = tx.send(Ok(negotiated));
                }
            }
            Event::Completed { handle, outcome } => {
                if let Some(waiter) = inner.waiters.remove(&handle) {
                    let _ = waiter.reply.send(outcome.map_err(|error| {
                        let source = match error {
                            RequestError::Undelivered(_) => inner.undelivered.remove(&handle.id()),
                            _ => None,
                        };
                        (error, source)
                    }));
                } else if matches!(outcome, Err(RequestError::Undelivered(_))) {
                    inner.undelivered.remove(&handle.id());
                }
            }
            Event::Progress { handle, params } => {
                if let Some(progress) = inner.waiters.get(&handle).and_then(|w| w.progress.as_ref())
                {
                    let _ = progress.send(params);
                }
            }
            Event::Request(request) => dispatch_server_request(shared, inner, request),
            Event::RequestCancelled { id, reason } => {
                tracing::debug!(%id, ?reason, "server withdrew its request");
                if let Some(task) = inner.server_tasks.remove(&id) {
                    task.abort();
                }
            }
            Event::Notification(notification) => {
                if notification.method == methods::NOTIFICATION_ELICITATION_COMPLETE
                    && let Some(handler) = &shared.handler
                {
                    match notification
                        .params
                        .as_ref()
                        .map(RawJson::decode::<ElicitationCompleteNotificationParams>)
                    {
                        Some(Ok(params)) => handler.elicitation_complete(params),
                        _ => tracing::debug!("a malformed notifications/elicitation/complete"),
                    }
                }
                let decoded = decode_notification(notification);
                if let Some(tx) = &inner.notifications_tx {
                    match tx.try_send(decoded) {
                        Ok(()) => {
                            shared
                                .notifications_sent
                                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        Err(mpsc::error::TrySendError::Full(dropped)) => tracing::warn!(
                            ?dropped,
                            "notification buffer full; dropping a notification"
                        ),
                        Err(mpsc::error::TrySendError::Closed(_)) => {}
                    }
                }
            }
            Event::Diagnostic(diagnostic) => {
                tracing::warn!(?diagnostic, "the server broke a protocol rule");
            }
            Event::Closed(reason) => {
                if inner.closed.is_none() {
                    inner.closed = Some(match &reason {
                        CloseReason::Handshake(e) => {
                            ClosedCause::Handshake(e.clone(), handshake_source(inner, e))
                        }
                        other => ClosedCause::other(other.to_string()),
                    });
                }
                let cause = inner.closed.clone();
                if let Some(tx) = inner.handshake.take() {
                    let error = match (&reason, cause) {
                        (CloseReason::Handshake(e), cause) => ClientError::Handshake(
                            e.clone(),
                            handshake_source(inner, e).or_else(|| cause?.source()),
                        ),
                        (_, Some(cause)) => cause.to_error(),
                        (_, None) => ClientError::Closed {
                            reason: reason.to_string(),
                            source: None,
                        },
                    };
                    let _ = tx.send(Err(error));
                }
                // Ends the notification stream for its reader.
                inner.notifications_tx = None;
            }
            other => tracing::debug!(?other, "unhandled session event"),
        }
    }
    for (id, retry) in std::mem::take(&mut inner.paused) {
        let paused = inner
            .waiters
            .iter()
            .find(|(handle, _)| handle.id() == id)
            .and_then(|(_, waiter)| waiter.paused.as_ref());
        if let Some(paused) = paused {
            let _ = paused.send(retry);
        }
    }
    if inner.session.state() == SessionState::Closed {
        inner.outbox.clear();
    }
    flush(shared, inner);
}

/// The most answers to the server's requests (pongs, say) that may wait to
/// be sent before the connection fails: a server that keeps sending
/// requests without reading what we write, over a transport that does not
/// stop reading it (the newline-delimited transports stop first, at
/// [`OUTBOUND_BUDGET`](crate::ndjson::OUTBOUND_BUDGET)), would otherwise
/// grow the client without bound.
pub(crate) const MAX_UNSENT_REPLIES: usize = 16 * 1024;

/// Messages taken from the session that wait for the transport, in order,
/// with a count of the answers among them (see [`MAX_UNSENT_REPLIES`]).
#[derive(Default)]
struct Outbox {
    messages: VecDeque<mcp_proto::Message>,
    replies: usize,
}

impl Outbox {
    fn is_reply(message: &mcp_proto::Message) -> bool {
        matches!(
            message,
            mcp_proto::Message::Response(_) | mcp_proto::Message::Error(_)
        )
    }

    fn push_back(&mut self, message: mcp_proto::Message) {
        self.replies += usize::from(Self::is_reply(&message));
        self.messages.push_back(message);
    }

    fn push_front(&mut self, message: mcp_proto::Message) {
        self.replies += usize::from(Self::is_reply(&message));
        self.messages.push_front(message);
    }

    fn pop_front(&mut self) -> Option<mcp_proto::Message> {
        let message = self.messages.pop_front()?;
        self.replies -= usize::from(Self::is_reply(&message));
        Some(message)
    }

    fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    fn clear(&mut self) {
        self.messages.clear();
        self.replies = 0;
    }
}

/// How many inbound items the driver handles in one pass at most, so that
/// callers waiting for the session's lock are not held off for long.
const MAX_INBOUND_BATCH: usize = 64;

/// Hands one inbound item to the session; returns whether the transport is
/// still open.
fn on_inbound(inner: &mut Inner, now: std::time::Instant, inbound: Inbound) -> bool {
    match inbound {
        Inbound::Frame(frame) => inner.session.handle_frame(now, frame),
        Inbound::Undelivered { id, error } => on_undelivered(inner, id, error),
        Inbound::StreamPaused { id, retry } => {
            // Said after the events of the frames before it.
            inner.paused.push((id, retry));
        }
        Inbound::Closed(error) => {
            if inner.closed.is_none() {
                inner.closed = Some(match error {
                    Some(e) => ClosedCause::transport(e),
                    None => ClosedCause::other("the server closed the connection"),
                });
            }
            inner.session.handle_close();
            return false;
        }
    }
    true
}

fn on_undelivered(inner: &mut Inner, id: Option<RequestId>, error: TransportError) {
    if error.is_session_expired() {
        // MCP "Transports" §Session Management: the session is gone; the
        // layer above starts a new one. Calls are not replayed here.
        if inner.closed.is_none() {
            inner.closed = Some(ClosedCause::SessionExpired);
        }
        inner.session.handle_close();
        return;
    }
    match id {
        Some(id) => {
            let reason = TRANSPORT_ERROR.to_owned();
            let error = Arc::new(error);
            inner.undelivered.insert(id.clone(), Arc::clone(&error));
            inner.last_undelivered = Some(error);
            let failed = inner
                .session
                .fail_request(Instant::now().into_std(), &id, reason);
            if !failed {
                inner.undelivered.remove(&id);
            }
        }
        None => tracing::warn!(%error, "a notification or response was not delivered"),
    }
}

fn close_on_transport_error(inner: &mut Inner, error: TransportError) {
    if inner.closed.is_none() {
        inner.closed = Some(ClosedCause::transport(error));
    }
    inner.session.handle_close();
}

fn decode_notification(notification: Notification) -> ServerNotification {
    let params = notification.params.as_ref();
    match notification.method.as_str() {
        methods::NOTIFICATION_TOOLS_LIST_CHANGED => ServerNotification::ToolsListChanged,
        methods::NOTIFICATION_RESOURCES_LIST_CHANGED => ServerNotification::ResourcesListChanged,
        methods::NOTIFICATION_PROMPTS_LIST_CHANGED => ServerNotification::PromptsListChanged,
        methods::NOTIFICATION_RESOURCES_UPDATED => match params.map(RawJson::decode) {
            Some(Ok(p)) => ServerNotification::ResourceUpdated(p),
            _ => ServerNotification::Other(notification),
        },
        methods::NOTIFICATION_MESSAGE => match params.map(RawJson::decode) {
            Some(Ok(p)) => ServerNotification::LogMessage(p),
            _ => ServerNotification::Other(notification),
        },
        _ => ServerNotification::Other(notification),
    }
}

/// Declares the handler's `roots`, `sampling` and `elicitation` where the
/// session options declare none of their own.
fn declare(declared: &mut ClientCapabilities, handler: ClientCapabilities) {
    if declared.roots.is_none() {
        declared.roots = handler.roots;
    }
    if declared.sampling.is_none() {
        declared.sampling = handler.sampling;
    }
    if declared.elicitation.is_none() {
        declared.elicitation = handler.elicitation;
    }
}

fn dispatch_server_request(shared: &Arc<Shared>, inner: &mut Inner, request: ServerRequest) {
    let Some(handler) = shared.handler.clone() else {
        let error = ErrorObject::method_not_found(&request.method);
        inner.session.respond_err(&request.id, error);
        return;
    };
    let id = request.id.clone();
    let task_shared = shared.clone();
    let answering = Answering::of(shared);
    let task = tokio::spawn(async move {
        let ServerRequest { id, method, params } = request;
        let result = answer(handler.as_ref(), &method, params, answering).await;
        let mut inner = task_shared.lock();
        inner.server_tasks.remove(&id);
        match result {
            Ok(raw) => {
                if let Err(error) = inner.session.respond_ok(&id, &raw) {
                    tracing::warn!(%error, "could not answer the server");
                }
            }
            Err(error) => {
                inner.session.respond_err(&id, error);
            }
        }
        task_shared.kick(inner);
    });
    inner.server_tasks.insert(id, task.abort_handle());
}

/// What the client's options say about answering the server's requests.
#[derive(Clone, Copy)]
struct Answering {
    /// Fill an accepted form's defaults in (SEP-1034).
    fill_defaults: bool,
    /// `sampling.tools` was declared.
    sampling_tools: bool,
}

impl Answering {
    fn of(shared: &Shared) -> Answering {
        Answering {
            fill_defaults: shared.fill_elicitation_defaults,
            sampling_tools: shared.sampling_tools,
        }
    }
}

/// Answers one server request (or one input request of a stateless-era
/// round) through `handler`.
async fn answer(
    handler: &dyn ClientHandler,
    method: &str,
    params: Option<RawJson>,
    answering: Answering,
) -> Result<Box<RawValue>, ErrorObject> {
    fn encode<T: Serialize>(value: &T) -> Result<Box<RawValue>, ErrorObject> {
        mcp_proto::jsonrpc::to_raw(value).map_err(|e| {
            ErrorObject::new(
                mcp_proto::jsonrpc::error_codes::INTERNAL_ERROR,
                format!("cannot encode the answer: {e}"),
            )
        })
    }
    fn decode<T: DeserializeOwned>(params: Option<&RawJson>) -> Result<T, ErrorObject> {
        let raw = params.map_or("{}", RawJson::get);
        serde_json::from_str(raw)
            .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
    }
    match method {
        methods::ROOTS_LIST => encode(&handler.list_roots().await?),
        methods::SAMPLING_CREATE_MESSAGE => {
            let params: CreateMessageRequestParams = decode(params.as_ref())?;
            // MCP 2025-11-25 "Client/Sampling" §Tools in Sampling: a server
            // sends `tools` only to a client that declared `sampling.tools`,
            // which MUST answer any other with an error. The handshake
            // era's session refuses it before it gets here; this covers a
            // stateless-era input round too.
            if (params.tools.is_some() || params.tool_choice.is_some()) && !answering.sampling_tools
            {
                return Err(ErrorObject::invalid_params(
                    "sampling with tools requires the client capability sampling.tools",
                ));
            }
            encode(&handler.create_message(params).await?)
        }
        methods::ELICITATION_CREATE => {
            let params: ElicitRequestParams = decode(params.as_ref())?;
            let schema = match &params {
                ElicitRequestParams::Form(form) => Some(form.requested_schema.clone()),
                ElicitRequestParams::Url(_) => None,
            };
            let mut result = handler.elicit(params).await?;
            // SEP-1034 (2025-11-25): an accepted form carries the schema's
            // defaults for every field the user left out.
            if answering.fill_defaults
                && result.action == ElicitAction::Accept
                && let Some(schema) = schema
            {
                let content = result.content.take().unwrap_or_default();
                result.content = Some(fill_elicitation_defaults(&schema, content));
            }
            encode(&result)
        }
        _ => handler.other_request(method, params).await,
    }
}

fn lock_set(
    set: &Mutex<std::collections::HashSet<String>>,
) -> MutexGuard<'_, std::collections::HashSet<String>> {
    mcp_proto::sync::lock(set)
}

/// `HeaderMismatch` (2026-07-28 "Base protocol" §Error codes).
const HEADER_MISMATCH: i64 = -32020;

/// The most `tools/list` pages read again after a header mismatch.
const MAX_RELIST_PAGES: usize = 100;

/// The methods whose result may be `input_required` (2026-07-28 "Multi
/// round-trip requests").
fn asks_for_input(method: &str) -> bool {
    matches!(
        method,
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
    )
}

/// The transport's error behind a failed handshake: the one that left
/// `initialize` (or the probe) undelivered, or that closed the connection.
fn handshake_source(inner: &Inner, error: &HandshakeError) -> Option<Arc<TransportError>> {
    match error {
        HandshakeError::Undelivered(_) => inner.last_undelivered.clone(),
        HandshakeError::ClosedDuringProbe => inner.closed.as_ref().and_then(ClosedCause::source),
        _ => None,
    }
}

/// A stateless-era result's `resultType`: missing means complete.
fn peek_result_type(method: &str, raw: &RawJson) -> Result<ResultType, ClientError> {
    raw.result_type()
        .map_err(|source| ClientError::InvalidResult {
            method: method.to_owned(),
            source,
        })
}

/// [`ClientError::InputRequired`] with the round `raw` holds, or why it
/// is not one.
fn input_required(method: &str, raw: &RawJson) -> ClientError {
    match raw.decode::<InputRequiredResult>() {
        Ok(round) => ClientError::InputRequired {
            method: method.to_owned(),
            round: Box::new(round),
        },
        Err(source) => ClientError::InvalidResult {
            method: method.to_owned(),
            source,
        },
    }
}

fn unexpected_result_type(method: &str, result_type: &ResultType) -> ClientError {
    ClientError::UnexpectedResultType {
        method: method.to_owned(),
        result_type: bounded(result_type.as_str()),
    }
}

/// Server text for an error: bounded to [`text::NAME_LIMIT`] bytes and
/// escaped onto one line ([`text::error_text`]).
fn bounded(peer: &str) -> String {
    text::error_text(peer, text::NAME_LIMIT).into_owned()
}

async fn poll_optional(future: &mut Option<SendFuture<'_>>) -> Result<(), TransportError> {
    match future {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

/// "1 input" or "N inputs": how many answers an input round asks for.
fn input_count(round: &InputRequiredResult) -> String {
    match round
        .input_requests
        .as_ref()
        .map_or(0, |requests| requests.len())
    {
        1 => "1 input".to_owned(),
        n => format!("{n} inputs"),
    }
}

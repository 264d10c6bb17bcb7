//! The sans-IO client session: handshake, ids, pending requests, deadlines, cancellation.
//!
//! [`ClientSession`] holds every protocol rule of an MCP client connection and
//! none of its I/O, in the style of `quinn-proto`: the caller feeds it
//! inbound messages ([`ClientSession::handle_message`]), the passing of time
//! ([`ClientSession::handle_timeout`]) and the end of the transport
//! ([`ClientSession::handle_close`]), gives it commands
//! ([`ClientSession::request`], [`ClientSession::notify`],
//! [`ClientSession::cancel`], [`ClientSession::respond_ok`]), and takes back
//! messages to send ([`ClientSession::poll_transmit`]), the next deadline
//! ([`ClientSession::poll_timeout`]) and events ([`ClientSession::poll_event`]).
//! It never reads the clock: every input that depends on time carries the
//! caller's `now`.
//!
//! It speaks both eras of MCP and finds out which one a server speaks
//! ([`EraPolicy`]; 2026-07-28 "Versioning" §Backward Compatibility):
//! - **Auto** (the default) probes with `server/discover` carrying the
//!   newest modern version in `_meta`. A `DiscoverResult` that lists a
//!   modern version both sides support means the stateless era; a
//!   recognised modern error (-32020, -32021, -32022) means a modern server
//!   (a -32022 is answered with a version from its `data.supported`). Any
//!   other error, an undelivered probe (an HTTP 400 with no modern body),
//!   no answer within [`SessionOptions::probe_timeout`], or a result that
//!   lists only handshake versions falls back to `initialize`. A -32022
//!   answer to that fallback means the server was modern after all (a slow
//!   starter): the session switches once and never loops. A transport that
//!   closes during the probe ends the session with
//!   [`HandshakeError::ClosedDuringProbe`], so that the layer that owns
//!   the process can start it again in the handshake era.
//! - **Modern** sends `server/discover` and never `initialize`.
//! - **Legacy** sends `initialize` and never probes.
//!
//! In the stateless era every request carries
//! `_meta["io.modelcontextprotocol/protocolVersion"]`, `.../clientCapabilities`
//! and `.../clientInfo`; methods the era does not have (`ping`,
//! `logging/setLevel`, `notifications/roots/list_changed`) are refused with
//! [`SessionError::NotInEra`], except `resources/subscribe` and
//! `resources/unsubscribe`, which the session answers itself by adding the
//! URI to (or taking it from) the `resourceSubscriptions` of its
//! `subscriptions/listen` request, opened again with the new filter; the server sends no requests (any it sends
//! are dropped with a diagnostic, never answered); and when the server
//! offers list-change notifications the session keeps a
//! `subscriptions/listen` request open (2026-07-28 "Subscriptions"): its
//! acknowledgement is checked against the filter asked for, its
//! notifications come out as [`Event::Notification`], a graceful end (a
//! result) is final, and an abrupt end (the stream broke) is retried with
//! backoff.
//!
//! The rules it enforces in the handshake era (MCP 2024-11-05 .. 2025-11-25):
//! - "Lifecycle": `initialize` first, then `notifications/initialized`; before
//!   the initialize result only `ping` may be sent; the answered version must
//!   be one the client supports, else the connection is closed. An
//!   initialize error that lists `data.supported` is retried once with the
//!   best version both sides support.
//! - "Capabilities": a request the server did not declare a capability for
//!   is refused locally; a server request for a capability the client did
//!   not declare is answered `-32601` (an undeclared elicitation mode, or
//!   sampling tools without `sampling.tools`, with `-32602`).
//! - "Utilities/Cancellation": a caller giving up (or a deadline passing)
//!   sends `notifications/cancelled`, never for `initialize`; a late response
//!   is ignored. A server cancelling one of its own requests withdraws it:
//!   no response is sent afterwards.
//! - "Utilities/Progress": a request that asks for progress carries a token
//!   unique among active requests; progress for it is routed to that request
//!   and may extend its deadline up to a maximum.
//! - "Utilities/Ping": a server `ping` is answered `{}` at once, in any state.
//! - "Base Protocol" (2025-03-26 only): inbound batches are accepted; in every
//!   other version they are refused with a diagnostic.
//!
//! Every request ends exactly once, with [`Event::Completed`]: a result, an
//! error from the server, a timeout, a cancellation or the close of the
//! session.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::jsonrpc::{
    ErrorObject, ErrorResponse, Frame, Message, Notification, RawJson, Request, RequestId,
    Response, empty_object, error_codes,
};
use crate::methods;
use crate::text;
use crate::types::{
    CancelledNotificationParams, ClientCapabilities, DiscoverResult, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ProgressNotificationParams,
    ServerCapabilities, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, meta,
};
use crate::version::{Era, EraPolicy, ProtocolVersion, UnsupportedVersion, VersionPolicy};

/// Options for a [`ClientSession`]. Every field has a documented default;
/// start from [`SessionOptions::default`] and set what differs with the
/// setter of the same name.
///
/// ```
/// use std::time::Duration;
/// use mcp_proto::session::SessionOptions;
///
/// let options = SessionOptions::default()
///     .request_timeout(Some(Duration::from_secs(5)))
///     .listen(false);
/// assert_eq!(options.request_timeout, Some(Duration::from_secs(5)));
/// ```
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct SessionOptions {
    /// Who the client is (`clientInfo`). Default: this crate's name and version.
    pub client_info: Implementation,
    /// What the client declares it can do. Default: nothing.
    pub capabilities: ClientCapabilities,
    /// Which versions are offered and accepted. Default: offer 2025-11-25,
    /// accept every handshake version.
    pub versions: VersionPolicy,
    /// How long the server may take to answer `initialize`. Default: 10 s.
    pub initialize_timeout: Duration,
    /// The deadline of a request that sets none itself; `None` means no
    /// deadline. Default: 60 s.
    pub request_timeout: Option<Duration>,
    /// Retry `initialize` once with a mutually supported version when the
    /// server's error lists the versions it supports. Default: true.
    pub retry_initialize_on_version_error: bool,
    /// How many server-to-client requests may wait for an answer at once;
    /// more are answered `-32603` straight away. Default: 256.
    pub max_pending_server_requests: usize,
    /// Which era to speak, or whether to detect it. Default: [`EraPolicy::Auto`].
    pub era: EraPolicy,
    /// How long the Auto probe (`server/discover`) waits for an answer
    /// before the server is taken for a handshake-era one. A server that is
    /// up answers in milliseconds. Default: 2 s.
    pub probe_timeout: Duration,
    /// In the stateless era, keep a `subscriptions/listen` request open for
    /// the list changes the server offers. Default: true.
    pub listen: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            client_info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            versions: VersionPolicy::default(),
            initialize_timeout: Duration::from_secs(10),
            request_timeout: Some(Duration::from_secs(60)),
            retry_initialize_on_version_error: true,
            max_pending_server_requests: 256,
            era: EraPolicy::Auto,
            probe_timeout: Duration::from_secs(2),
            listen: true,
        }
    }
}

/// Options for one request; start from [`RequestOptions::default`] and set
/// what differs with the setter of the same name.
#[derive(Clone, Debug, Default, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The deadline; `None` takes [`SessionOptions::request_timeout`].
    pub timeout: Option<Duration>,
    /// Ask the server for progress notifications (adds `_meta.progressToken`).
    pub progress: bool,
    /// Restart the deadline each time progress arrives (MCP "Utilities/Progress"
    /// allows it), never past [`RequestOptions::max_total_timeout`].
    pub reset_timeout_on_progress: bool,
    /// The hard limit when progress resets the deadline. `None` means ten
    /// times the timeout.
    pub max_total_timeout: Option<Duration>,
}

/// Where the session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionState {
    /// Created; [`ClientSession::start`] has not been called.
    Idle,
    /// `server/discover` or `initialize` was sent; waiting for its result.
    Initializing,
    /// The era and version are settled (the handshake succeeded, or the
    /// server was discovered); requests may be sent.
    Ready,
    /// The session ended; see [`Event::Closed`].
    Closed,
}

/// A request the caller sent; names it in [`Event::Completed`] and
/// [`Event::Progress`], and is what [`ClientSession::cancel`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestHandle(i64);

impl RequestHandle {
    /// The JSON-RPC id the request went out with.
    pub fn id(self) -> RequestId {
        RequestId::Number(self.0)
    }
}

/// What the handshake (or, in the stateless era, `server/discover`) settled.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Negotiated {
    /// The protocol version both sides speak.
    pub version: ProtocolVersion,
    /// The server's `initialize` result, as sent; in the stateless era, the
    /// same facts taken from its `DiscoverResult` (the version chosen, its
    /// capabilities, `_meta` server info and instructions).
    pub result: InitializeResult,
    /// The `server/discover` result, in the stateless era.
    pub discover: Option<DiscoverResult>,
}

impl Negotiated {
    /// What a handshake settled.
    pub fn from_initialize(version: ProtocolVersion, result: InitializeResult) -> Self {
        Negotiated {
            version,
            result,
            discover: None,
        }
    }

    /// What a `server/discover` settled: the facts the rest of the client
    /// reads from an initialize result are copied from it.
    pub fn from_discover(version: ProtocolVersion, discover: DiscoverResult) -> Self {
        let server_info = discover
            .meta
            .as_ref()
            .and_then(|m| m.get(meta::SERVER_INFO))
            .and_then(|v| serde_json::from_value::<Implementation>(v).ok())
            .unwrap_or_else(|| Implementation::new("", ""));
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: discover.capabilities.clone(),
            server_info,
            instructions: discover.instructions.clone(),
            meta: None,
            extra: JsonObject::default(),
        };
        Negotiated {
            version,
            result,
            discover: Some(discover),
        }
    }

    /// The era the connection speaks.
    pub fn era(&self) -> Era {
        self.version.era()
    }

    /// What the server offers.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.result.capabilities
    }

    /// Who the server is.
    pub fn server_info(&self) -> &Implementation {
        &self.result.server_info
    }

    /// The server's instructions for the model, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.result.instructions.as_deref()
    }
}

/// Something the caller must act on or may want to know.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// The handshake succeeded; requests may be sent now.
    Initialized(Box<Negotiated>),
    /// A request ended. Emitted exactly once per [`RequestHandle`].
    Completed {
        /// The request.
        handle: RequestHandle,
        /// Its result (raw JSON, to decode into the expected type) or why it failed.
        outcome: Result<RawJson, RequestError>,
    },
    /// Progress for a request that asked for it.
    Progress {
        /// The request.
        handle: RequestHandle,
        /// The notification's parameters.
        params: ProgressNotificationParams,
    },
    /// The server asks the client something; answer with
    /// [`ClientSession::respond_ok`] or [`ClientSession::respond_err`].
    /// Only requests for capabilities the client declared get here.
    Request(ServerRequest),
    /// The server withdrew one of its requests: answer it no more.
    RequestCancelled {
        /// The id of the withdrawn request.
        id: RequestId,
        /// The server's reason, if given.
        reason: Option<String>,
    },
    /// A server notification the session does not handle itself
    /// (list changes, log messages, resource updates, ...).
    Notification(Notification),
    /// The peer broke a rule in a way the session survived; for logs.
    Diagnostic(Diagnostic),
    /// The session ended. Emitted once; every pending request has already
    /// completed when it arrives.
    Closed(CloseReason),
}

/// A request from the server to the client.
#[derive(Clone, Debug)]
pub struct ServerRequest {
    /// The id to answer with.
    pub id: RequestId,
    /// The method, for example `roots/list`.
    pub method: String,
    /// Its parameters, as JSON text, checked when they are decoded.
    pub params: Option<RawJson>,
}

/// Why a request did not produce a result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The server answered with a JSON-RPC error.
    #[error("server error: {0}")]
    Rpc(ErrorObject),
    /// The deadline passed; `notifications/cancelled` was sent.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The caller cancelled it; `notifications/cancelled` was sent.
    #[error("request cancelled")]
    Cancelled,
    /// The session closed before an answer came.
    #[error("connection closed")]
    Closed,
    /// The transport could not deliver the request (an HTTP error status,
    /// for example); the connection goes on.
    #[error("request not delivered: {0}")]
    Undelivered(String),
}

impl RequestError {
    /// Whether the deadline passed.
    pub fn is_timeout(&self) -> bool {
        matches!(self, RequestError::Timeout(_))
    }

    /// Whether the session closed first.
    pub fn is_closed(&self) -> bool {
        matches!(self, RequestError::Closed)
    }

    /// The server's error, if it sent one.
    pub fn rpc(&self) -> Option<&ErrorObject> {
        match self {
            RequestError::Rpc(e) => Some(e),
            _ => None,
        }
    }
}

/// Why the handshake failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The server answered `initialize` with an error.
    #[error("server rejected initialize: {0}")]
    Rejected(ErrorObject),
    /// The server chose a version this client does not support.
    #[error(transparent)]
    UnsupportedVersion(#[from] UnsupportedVersion),
    /// The initialize result could not be read.
    #[error("invalid initialize result: {0}")]
    InvalidResult(String),
    /// The server did not answer in time.
    #[error("initialize timed out after {0:?}")]
    Timeout(Duration),
    /// The caller gave up on the handshake.
    #[error("initialize cancelled")]
    Cancelled,
    /// The transport could not deliver `initialize`.
    #[error("initialize not delivered: {0}")]
    Undelivered(String),
    /// The server refused `server/discover` (stateless era).
    #[error("server rejected server/discover: {0}")]
    DiscoverRejected(ErrorObject),
    /// The server speaks the stateless era but none of its versions is one
    /// this client supports (or the other way round).
    #[error(
        "no protocol version in common: the server supports {server}; this client supports {client}"
    )]
    NoCommonVersion {
        /// What the server listed, comma-separated (bounded).
        server: String,
        /// What the client supports, newest first.
        client: String,
    },
    /// The transport closed while the server was being probed with
    /// `server/discover`: older servers exit on any request before
    /// `initialize`. Start it again and speak the handshake era.
    #[error("the server closed the connection when probed with server/discover")]
    ClosedDuringProbe,
}

impl HandshakeError {
    /// Whether the server went away during the era probe (start it again in
    /// the handshake era).
    pub fn is_closed_during_probe(&self) -> bool {
        matches!(self, HandshakeError::ClosedDuringProbe)
    }
}

/// Why the session closed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CloseReason {
    /// The handshake failed.
    #[error("handshake failed")]
    Handshake(#[from] HandshakeError),
    /// The transport ended (the peer hung up or the stream broke).
    #[error("transport closed")]
    TransportClosed,
    /// The caller closed the session.
    #[error("closed by the client")]
    Local,
}

/// A rule the peer broke that the session survived.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Diagnostic {
    /// A response whose id matches no request this session sent.
    UnknownResponseId(RequestId),
    /// An error response without an id (the server could not read a request).
    ErrorWithoutId(ErrorObject),
    /// A batch arrived where the negotiated version has none.
    BatchRefused {
        /// The negotiated version, if the handshake had finished.
        version: Option<ProtocolVersion>,
        /// How many messages the batch held.
        len: usize,
    },
    /// A notification or request the session handles had unreadable params.
    MalformedParams {
        /// The method.
        method: String,
        /// What was wrong.
        error: String,
    },
    /// A server request reused the id of one still waiting for an answer.
    DuplicateServerRequestId(RequestId),
    /// A server request arrived while too many were waiting; it was refused.
    TooManyServerRequests(RequestId),
    /// A server sent a request in the stateless era, where servers send
    /// none; it was dropped unanswered (clients send no responses there).
    RequestInStatelessEra {
        /// The request's method.
        method: String,
    },
    /// The server acknowledged a `subscriptions/listen` with fewer
    /// notification kinds than were asked for.
    SubscriptionNarrowed {
        /// What was asked for.
        requested: SubscriptionFilter,
        /// What the server agreed to.
        acknowledged: SubscriptionFilter,
    },
    /// The `subscriptions/listen` request failed with an error; it is not
    /// opened again on this connection.
    SubscriptionRefused(ErrorObject),
}

/// A command the session refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// [`ClientSession::start`] has not been called.
    #[error("the session has not been started")]
    NotStarted,
    /// [`ClientSession::start`] was called twice.
    #[error("the session was already started")]
    AlreadyStarted,
    /// Only `ping` may be sent before the handshake finishes.
    #[error("cannot send {method} before initialization finishes")]
    NotReady {
        /// The refused method.
        method: String,
    },
    /// The session is closed.
    #[error("the session is closed")]
    Closed,
    /// The method does not exist in the era the connection speaks (for
    /// example `ping` or `logging/setLevel` in 2026-07-28).
    #[error("{method} does not exist in protocol {version} (the {era} era)")]
    NotInEra {
        /// The refused method.
        method: String,
        /// The version the connection speaks.
        version: ProtocolVersion,
        /// Its era.
        era: Era,
    },
    /// The server did not declare the capability the method needs.
    #[error("the server does not support {method} (capability `{capability}` not declared)")]
    CapabilityNotDeclared {
        /// The refused method.
        method: String,
        /// The capability it needs, for example `tools` or `resources.subscribe`.
        capability: &'static str,
    },
    /// The client did not declare the capability this notification belongs to.
    #[error("cannot send {method}: the client did not declare `{capability}`")]
    ClientCapabilityNotDeclared {
        /// The refused method.
        method: String,
        /// The client capability it needs.
        capability: &'static str,
    },
    /// The method belongs to the session itself (`initialize`,
    /// `notifications/initialized`, `notifications/cancelled`).
    #[error("{method} is sent by the session itself")]
    Reserved {
        /// The refused method.
        method: String,
    },
    /// Progress was asked for, but the parameters (or their `_meta`) are not
    /// a JSON object, so there is nowhere to put the progress token.
    #[error("cannot ask for progress on {method}: its params are not an object")]
    ParamsNotObject {
        /// The method.
        method: String,
    },
    /// The parameters could not be encoded as JSON.
    #[error("cannot encode parameters of {method}")]
    Encode {
        /// The method.
        method: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
}

/// The client side of one MCP connection, without I/O. See the module docs.
pub struct ClientSession {
    options: SessionOptions,
    state: SessionState,
    next_id: i64,
    /// Requests waiting for an answer, by our numeric id.
    pending: HashMap<i64, Pending, IdBuildHasher>,
    /// Deadlines of pending requests, ordered, for `poll_timeout`.
    deadlines: BTreeSet<(Instant, i64)>,
    /// The initialize request in flight, if any.
    initialize: Option<InitializeAttempt>,
    negotiated: Option<Box<Negotiated>>,
    /// Server-to-client requests waiting for the caller's answer.
    server_requests: HashMap<RequestId, ()>,
    transmit: VecDeque<Message>,
    events: VecDeque<Event>,
    /// Era detection: whether the Auto probe has already fallen back to
    /// `initialize`, and whether a -32022 answer to that fallback already
    /// switched back to the stateless era (once, never a loop).
    fell_back: bool,
    switched: bool,
    /// The stateless era's `_meta` object, encoded once: the members that go
    /// into every request (without the surrounding braces).
    modern_meta: Option<ModernMeta>,
    /// The open `subscriptions/listen`, in the stateless era.
    listen: Option<Listen>,
}

/// The session's own `subscriptions/listen` request.
struct Listen {
    /// What it asks for.
    filter: SubscriptionFilter,
    /// The request id while one is open.
    id: Option<i64>,
    /// When to open it again after an abrupt end.
    retry_at: Option<Instant>,
    /// Abrupt ends in a row without an acknowledgement.
    failures: u32,
}

struct Pending {
    deadline: Option<Instant>,
    /// The timeout this request was given, for resets and for the error.
    timeout: Option<Duration>,
    /// The latest the deadline may be pushed to by progress, if it may move.
    hard_deadline: Option<Instant>,
}

struct InitializeAttempt {
    id: i64,
    offered: ProtocolVersion,
    retried: bool,
    step: Step,
}

/// What the handshake request in flight is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// `server/discover` sent to find out the era (Auto).
    Probe,
    /// `server/discover` sent to a server known or taken to be modern.
    Discover,
    /// `initialize`.
    Initialize,
}

impl fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientSession")
            .field("state", &self.state)
            .field("pending", &self.pending.len())
            .field("server_requests", &self.server_requests.len())
            .field(
                "version",
                &self.negotiated.as_ref().map(|n| n.version.as_str()),
            )
            .finish_non_exhaustive()
    }
}

impl ClientSession {
    /// A session that has not started yet.
    pub fn new(options: SessionOptions) -> Self {
        ClientSession {
            options,
            state: SessionState::Idle,
            next_id: 0,
            pending: HashMap::default(),
            deadlines: BTreeSet::new(),
            initialize: None,
            negotiated: None,
            server_requests: HashMap::new(),
            transmit: VecDeque::new(),
            events: VecDeque::new(),
            fell_back: false,
            switched: false,
            modern_meta: None,
            listen: None,
        }
    }

    /// The era the connection speaks, once it is settled.
    pub fn era(&self) -> Option<Era> {
        self.negotiated.as_ref().map(|n| n.era())
    }

    /// Where the session is.
    pub fn state(&self) -> SessionState {
        self.state
    }

    /// What the handshake settled, once it has.
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_deref()
    }

    /// The options the session was created with.
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// How many of the caller's requests wait for an answer (the session's
    /// own handshake and `subscriptions/listen` requests are not counted).
    pub fn pending_requests(&self) -> usize {
        self.pending.len()
            - usize::from(self.initialize.is_some())
            - usize::from(self.listen.as_ref().is_some_and(|l| l.id.is_some()))
    }

    /// Starts the session: by [`SessionOptions::era`], queues the
    /// `server/discover` probe (Auto), `server/discover` (Modern) or
    /// `initialize` with the offered version (Legacy).
    pub fn start(&mut self, now: Instant) -> Result<(), SessionError> {
        match self.state {
            SessionState::Idle => {}
            SessionState::Closed => return Err(SessionError::Closed),
            SessionState::Initializing | SessionState::Ready => {
                return Err(SessionError::AlreadyStarted);
            }
        }
        self.state = SessionState::Initializing;
        let modern = self.options.versions.preferred_modern();
        match (self.options.era, modern) {
            (EraPolicy::Auto, Some(version)) => self.send_discover(now, version, Step::Probe),
            (EraPolicy::Modern, Some(version)) => self.send_discover(now, version, Step::Discover),
            (EraPolicy::Modern, None) => {
                self.close_with(CloseReason::Handshake(HandshakeError::NoCommonVersion {
                    server: "any".to_owned(),
                    client: self.options.versions.supported_list(),
                }));
                Ok(())
            }
            (EraPolicy::Auto | EraPolicy::Legacy, _) => {
                self.send_initialize(now, self.options.versions.offered, false)
            }
        }
    }

    /// Sends a request. `params` is encoded once; with
    /// [`RequestOptions::progress`] a progress token is added to its `_meta`.
    ///
    /// Refused when the session is not ready (only `ping` may go before the
    /// handshake finishes), when the server did not declare the capability
    /// the method needs, and for `initialize` (use [`ClientSession::start`]).
    pub fn request<P: Serialize + ?Sized>(
        &mut self,
        now: Instant,
        method: &str,
        params: Option<&P>,
        options: RequestOptions,
    ) -> Result<RequestHandle, SessionError> {
        if method == methods::INITIALIZE {
            return Err(SessionError::Reserved {
                method: method.to_owned(),
            });
        }
        match self.state {
            SessionState::Idle => return Err(SessionError::NotStarted),
            SessionState::Closed => return Err(SessionError::Closed),
            SessionState::Initializing
                if method != methods::PING
                    || self.initialize.as_ref().map(|i| i.step) != Some(Step::Initialize) =>
            {
                return Err(SessionError::NotReady {
                    method: method.to_owned(),
                });
            }
            SessionState::Initializing | SessionState::Ready => {}
        }
        if let Some(negotiated) = &self.negotiated {
            if negotiated.era() == Era::Modern
                && matches!(
                    method,
                    methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE
                )
            {
                check_server_capability(negotiated, method)?;
                let uri = subscribed_uri(method, params)?;
                return Ok(self.listen_for_resource(method == methods::RESOURCES_SUBSCRIBE, uri));
            }
            if negotiated.era() == Era::Modern && !exists_in_stateless_era(method) {
                return Err(SessionError::NotInEra {
                    method: method.to_owned(),
                    version: negotiated.version,
                    era: Era::Modern,
                });
            }
            check_server_capability(negotiated, method)?;
        }

        let id = self.allocate_id();
        let encode_error = |source| SessionError::Encode {
            method: method.to_owned(),
            source,
        };
        let params = match &self.modern_meta {
            Some(modern_meta) => Some(
                modern_params(modern_meta, params, options.progress.then_some(id)).map_err(
                    |error| match error {
                        ParamsError::Encode(source) => encode_error(source),
                        ParamsError::NotObject => SessionError::ParamsNotObject {
                            method: method.to_owned(),
                        },
                    },
                )?,
            ),
            None => match params {
                None if options.progress => {
                    Some(RawJson::encode(&progress_meta_only(id)).map_err(encode_error)?)
                }
                None => None,
                Some(p) if options.progress => {
                    let mut value = serde_json::to_value(p).map_err(encode_error)?;
                    if !insert_progress_token(&mut value, id) {
                        return Err(SessionError::ParamsNotObject {
                            method: method.to_owned(),
                        });
                    }
                    Some(RawJson::encode(&value).map_err(encode_error)?)
                }
                Some(p) => Some(RawJson::encode(p).map_err(encode_error)?),
            },
        };

        let timeout = options.timeout.or(self.options.request_timeout);
        let deadline = timeout.and_then(|t| now.checked_add(t));
        let hard_deadline = if options.reset_timeout_on_progress {
            options
                .max_total_timeout
                .or_else(|| timeout.and_then(|t| t.checked_mul(10)))
                .and_then(|t| now.checked_add(t))
        } else {
            None
        };
        self.insert_pending(
            id,
            Pending {
                deadline,
                timeout,
                hard_deadline,
            },
        );
        self.transmit.push_back(Message::Request(Request {
            id: RequestId::Number(id),
            method: method.to_owned(),
            params,
        }));
        Ok(RequestHandle(id))
    }

    /// Sends a notification (for example `notifications/roots/list_changed`
    /// or progress for a server request the client is serving).
    pub fn notify<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), SessionError> {
        if method == methods::NOTIFICATION_INITIALIZED || method == methods::NOTIFICATION_CANCELLED
        {
            return Err(SessionError::Reserved {
                method: method.to_owned(),
            });
        }
        match self.state {
            SessionState::Idle => return Err(SessionError::NotStarted),
            SessionState::Closed => return Err(SessionError::Closed),
            SessionState::Initializing => {
                return Err(SessionError::NotReady {
                    method: method.to_owned(),
                });
            }
            SessionState::Ready => {}
        }
        if let Some(negotiated) = &self.negotiated
            && negotiated.era() == Era::Modern
            && method == methods::NOTIFICATION_ROOTS_LIST_CHANGED
        {
            return Err(SessionError::NotInEra {
                method: method.to_owned(),
                version: negotiated.version,
                era: Era::Modern,
            });
        }
        // MCP "Client Features/Roots": list_changed belongs to a client that
        // declared `roots.listChanged`.
        if method == methods::NOTIFICATION_ROOTS_LIST_CHANGED
            && self
                .options
                .capabilities
                .roots
                .as_ref()
                .and_then(|r| r.list_changed)
                != Some(true)
        {
            return Err(SessionError::ClientCapabilityNotDeclared {
                method: method.to_owned(),
                capability: "roots.listChanged",
            });
        }
        let params =
            params
                .map(RawJson::encode)
                .transpose()
                .map_err(|source| SessionError::Encode {
                    method: method.to_owned(),
                    source,
                })?;
        self.transmit.push_back(Message::Notification(Notification {
            method: method.to_owned(),
            params,
        }));
        Ok(())
    }

    /// Gives up on a request: it completes with [`RequestError::Cancelled`]
    /// and `notifications/cancelled` is sent. Returns false when the request
    /// already ended (nothing is sent then).
    pub fn cancel(&mut self, handle: RequestHandle, reason: Option<&str>) -> bool {
        if self.is_listen(handle.0) {
            return false;
        }
        let Some(_) = self.remove_pending(handle.0) else {
            return false;
        };
        self.send_cancelled(handle.0, reason.unwrap_or("cancelled by the client"));
        self.events.push_back(Event::Completed {
            handle,
            outcome: Err(RequestError::Cancelled),
        });
        true
    }

    /// Fails a request the transport could not deliver: it completes with
    /// [`RequestError::Undelivered`]. Nothing is sent (the server never saw
    /// it). Returns false when no such request is pending. A failed
    /// `initialize` closes the session.
    ///
    /// An undelivered Auto probe (`server/discover` refused with an HTTP
    /// status and no modern error) is the handshake era's sign: the session
    /// falls back to `initialize` instead.
    pub fn fail_request(
        &mut self,
        now: Instant,
        id: &RequestId,
        reason: impl Into<String>,
    ) -> bool {
        let RequestId::Number(number) = *id else {
            return false;
        };
        if let Some(attempt) = self.initialize.as_ref().filter(|i| i.id == number) {
            let step = attempt.step;
            let reason = reason.into();
            if step == Step::Probe {
                // An HTTP 400 without a modern error body: a handshake-era
                // server (2026-07-28 "Streamable HTTP" §Backward Compatibility).
                self.take_attempt(number);
                self.fall_back(now);
                return true;
            }
            self.close_with(CloseReason::Handshake(HandshakeError::Undelivered(reason)));
            return true;
        }
        if self.is_listen(number) {
            self.remove_pending(number);
            self.on_listen_abrupt_end(now);
            return true;
        }
        if self.remove_pending(number).is_none() {
            return false;
        }
        self.events.push_back(Event::Completed {
            handle: RequestHandle(number),
            outcome: Err(RequestError::Undelivered(reason.into())),
        });
        true
    }

    /// Abandons the handshake. `initialize` is never cancelled on the wire
    /// (MCP "Utilities/Cancellation"); the session just closes.
    pub fn abandon_initialize(&mut self) {
        if self.state == SessionState::Initializing {
            self.close_with(CloseReason::Handshake(HandshakeError::Cancelled));
        }
    }

    /// Answers a server request with a result. Returns false when there is
    /// nothing to answer (unknown id, already answered, or withdrawn by the
    /// server: MCP "Utilities/Cancellation" says to send no response then).
    pub fn respond_ok<R: Serialize + ?Sized>(
        &mut self,
        id: &RequestId,
        result: &R,
    ) -> Result<bool, SessionError> {
        if !self.server_requests.contains_key(id) {
            return Ok(false);
        }
        let result = RawJson::encode(result).map_err(|source| SessionError::Encode {
            method: "response".to_owned(),
            source,
        })?;
        self.server_requests.remove(id);
        self.transmit.push_back(Message::Response(Response {
            id: id.clone(),
            result,
        }));
        Ok(true)
    }

    /// Answers a server request with an error. Returns false when there is
    /// nothing to answer (see [`ClientSession::respond_ok`]).
    pub fn respond_err(&mut self, id: &RequestId, error: ErrorObject) -> bool {
        if self.server_requests.remove(id).is_none() {
            return false;
        }
        self.transmit.push_back(Message::Error(ErrorResponse {
            id: Some(id.clone()),
            error,
        }));
        true
    }

    /// Feeds one inbound frame (a message or, in 2025-03-26, a batch).
    pub fn handle_frame(&mut self, now: Instant, frame: Frame) {
        match frame {
            Frame::Single(message) => self.handle_message(now, message),
            Frame::Batch(messages) => {
                let version = self.negotiated.as_ref().map(|n| n.version);
                if version.is_some_and(ProtocolVersion::accepts_batches) {
                    for message in messages {
                        self.handle_message(now, message);
                    }
                } else {
                    self.events
                        .push_back(Event::Diagnostic(Diagnostic::BatchRefused {
                            version,
                            len: messages.len(),
                        }));
                }
            }
        }
    }

    /// Feeds one inbound message.
    pub fn handle_message(&mut self, now: Instant, message: Message) {
        if matches!(self.state, SessionState::Closed | SessionState::Idle) {
            return;
        }
        match message {
            Message::Response(response) => self.on_response(now, response.id, Ok(response.result)),
            Message::Error(error) => match error.id {
                Some(id) => self.on_response(now, id, Err(error.error)),
                None => self
                    .events
                    .push_back(Event::Diagnostic(Diagnostic::ErrorWithoutId(error.error))),
            },
            Message::Request(request) => self.on_server_request(request),
            Message::Notification(notification) => self.on_notification(now, notification),
        }
    }

    /// Tells the session the time is `now`: requests whose deadline passed
    /// complete with [`RequestError::Timeout`] and are cancelled on the wire.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            if let Some(attempt) = self.initialize.as_ref().filter(|i| i.id == id) {
                if attempt.step == Step::Probe {
                    // No answer to the probe in time: a handshake-era server
                    // that ignores unknown requests (or a slow starter, which
                    // the fallback's -32022 catches).
                    self.take_attempt(id);
                    self.fall_back(now);
                    continue;
                }
                let timeout = self.options.initialize_timeout;
                self.close_with(CloseReason::Handshake(HandshakeError::Timeout(timeout)));
                return;
            }
            let Some(pending) = self.pending.remove(&id) else {
                continue;
            };
            self.send_cancelled(id, "timed out");
            self.events.push_back(Event::Completed {
                handle: RequestHandle(id),
                outcome: Err(RequestError::Timeout(pending.timeout.unwrap_or_default())),
            });
        }
        if let Some(listen) = &self.listen
            && listen.retry_at.is_some_and(|at| at <= now)
            && self.state == SessionState::Ready
        {
            self.open_listen();
        }
    }

    /// Tells the session the transport ended: every pending request
    /// completes with [`RequestError::Closed`] at once.
    pub fn handle_close(&mut self) {
        if self.initialize.as_ref().map(|i| i.step) == Some(Step::Probe) {
            self.close_with(CloseReason::Handshake(HandshakeError::ClosedDuringProbe));
            return;
        }
        self.close_with(CloseReason::TransportClosed);
    }

    /// Closes the session from the client's side.
    pub fn close(&mut self) {
        self.close_with(CloseReason::Local);
    }

    /// The next message to send.
    pub fn poll_transmit(&mut self) -> Option<Message> {
        self.transmit.pop_front()
    }

    /// The earliest deadline; call [`ClientSession::handle_timeout`] then.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let deadline = self.deadlines.first().map(|&(deadline, _)| deadline);
        let retry = self.listen.as_ref().and_then(|l| l.retry_at);
        match (deadline, retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // --- private helpers -------------------------------------------------

    fn allocate_id(&mut self) -> i64 {
        let id = self.next_id;
        // Ids are never reused on a connection (MCP "Base Protocol"); i64
        // does not run out in practice, and saturating keeps this panic-free.
        self.next_id = self.next_id.saturating_add(1);
        id
    }

    fn insert_pending(&mut self, id: i64, pending: Pending) {
        if let Some(deadline) = pending.deadline {
            self.deadlines.insert((deadline, id));
        }
        self.pending.insert(id, pending);
    }

    fn remove_pending(&mut self, id: i64) -> Option<Pending> {
        if self.initialize.as_ref().is_some_and(|i| i.id == id) {
            return None;
        }
        let pending = self.pending.remove(&id)?;
        if let Some(deadline) = pending.deadline {
            self.deadlines.remove(&(deadline, id));
        }
        Some(pending)
    }

    fn send_initialize(
        &mut self,
        now: Instant,
        version: ProtocolVersion,
        retried: bool,
    ) -> Result<(), SessionError> {
        let params = InitializeRequestParams {
            protocol_version: version.as_str().to_owned(),
            capabilities: self.options.capabilities.clone(),
            client_info: self.options.client_info.clone(),
            meta: None,
            extra: Default::default(),
        };
        let params = RawJson::encode(&params).map_err(|source| SessionError::Encode {
            method: methods::INITIALIZE.to_owned(),
            source,
        })?;
        let attempt = InitializeAttempt {
            id: self.allocate_id(),
            offered: version,
            retried,
            step: Step::Initialize,
        };
        self.send_attempt(now, attempt, params);
        Ok(())
    }

    /// Queues the handshake request of `attempt` (`initialize` or
    /// `server/discover`) with its deadline: the probe's for the Auto probe,
    /// [`SessionOptions::initialize_timeout`] otherwise.
    fn send_attempt(&mut self, now: Instant, attempt: InitializeAttempt, params: RawJson) {
        let (method, timeout) = match attempt.step {
            Step::Probe => (
                methods::SERVER_DISCOVER,
                self.options
                    .probe_timeout
                    .min(self.options.initialize_timeout),
            ),
            Step::Discover => (methods::SERVER_DISCOVER, self.options.initialize_timeout),
            Step::Initialize => (methods::INITIALIZE, self.options.initialize_timeout),
        };
        let id = attempt.id;
        self.insert_pending(
            id,
            Pending {
                deadline: now.checked_add(timeout),
                timeout: Some(timeout),
                hard_deadline: None,
            },
        );
        self.initialize = Some(attempt);
        self.transmit.push_back(Message::Request(Request {
            id: RequestId::Number(id),
            method: method.to_owned(),
            params: Some(params),
        }));
    }

    /// Queues `server/discover` with `version` in `_meta`: the Auto probe
    /// (deadline [`SessionOptions::probe_timeout`]) or the stateless era's
    /// first request (deadline [`SessionOptions::initialize_timeout`]).
    fn send_discover(
        &mut self,
        now: Instant,
        version: ProtocolVersion,
        step: Step,
    ) -> Result<(), SessionError> {
        let meta = encode_modern_meta(
            version,
            &self.options.capabilities,
            &self.options.client_info,
        );
        let params = modern_params(&meta, None::<&()>, None).map_err(|error| match error {
            ParamsError::Encode(source) => SessionError::Encode {
                method: methods::SERVER_DISCOVER.to_owned(),
                source,
            },
            ParamsError::NotObject => SessionError::ParamsNotObject {
                method: methods::SERVER_DISCOVER.to_owned(),
            },
        })?;
        let attempt = InitializeAttempt {
            id: self.allocate_id(),
            offered: version,
            retried: false,
            step,
        };
        self.send_attempt(now, attempt, params);
        Ok(())
    }

    fn send_cancelled(&mut self, id: i64, reason: &str) {
        let params = CancelledNotificationParams {
            request_id: Some(RequestId::Number(id)),
            reason: Some(reason.to_owned()),
            meta: None,
            extra: Default::default(),
        };
        if let Ok(params) = RawJson::encode(&params) {
            self.transmit.push_back(Message::Notification(Notification {
                method: methods::NOTIFICATION_CANCELLED.to_owned(),
                params: Some(params),
            }));
        }
    }

    fn on_response(&mut self, now: Instant, id: RequestId, outcome: Result<RawJson, ErrorObject>) {
        let RequestId::Number(number) = id else {
            self.events
                .push_back(Event::Diagnostic(Diagnostic::UnknownResponseId(id)));
            return;
        };
        if self.initialize.as_ref().is_some_and(|i| i.id == number) {
            self.on_initialize_response(now, number, outcome);
            return;
        }
        if self.is_listen(number) {
            self.remove_pending(number);
            self.on_listen_end(outcome);
            return;
        }
        match self.remove_pending(number) {
            Some(_) => self.events.push_back(Event::Completed {
                handle: RequestHandle(number),
                outcome: outcome.map_err(RequestError::Rpc),
            }),
            // A late answer to a request that timed out or was cancelled is
            // expected and ignored (MCP "Utilities/Cancellation"); an id we
            // never sent is the peer's mistake.
            None if number >= 0 && number < self.next_id => {}
            None => self
                .events
                .push_back(Event::Diagnostic(Diagnostic::UnknownResponseId(id))),
        }
    }

    fn on_initialize_response(
        &mut self,
        now: Instant,
        id: i64,
        outcome: Result<RawJson, ErrorObject>,
    ) {
        let Some(attempt) = self.take_attempt(id) else {
            return;
        };
        if attempt.step != Step::Initialize {
            self.on_discover_response(now, attempt, outcome);
            return;
        }
        let raw = match outcome {
            Ok(raw) => raw,
            Err(error) => {
                // 2026-07-28 "Versioning": a -32022 to the fallback
                // `initialize` whose `supported` lists a modern version means
                // the server was modern after all (it missed the probe's
                // deadline); switch once.
                if self.options.era == EraPolicy::Auto
                    && !self.switched
                    && error.code == UNSUPPORTED_PROTOCOL_VERSION
                {
                    let supported = supported_versions(&error);
                    if let Some(version) = self
                        .options
                        .versions
                        .best_mutual_modern(supported.iter().map(String::as_str))
                    {
                        self.switched = true;
                        if self.send_discover(now, version, Step::Discover).is_ok() {
                            return;
                        }
                    }
                }
                // MCP "Lifecycle" §Version Negotiation: an error may list the
                // versions the server supports; retry once with the best one
                // both sides know.
                if self.options.retry_initialize_on_version_error && !attempt.retried {
                    let supported = supported_versions(&error);
                    let retry = self
                        .options
                        .versions
                        .best_mutual(supported.iter().map(String::as_str))
                        .filter(|v| *v != attempt.offered);
                    if let Some(version) = retry
                        && self.send_initialize(now, version, true).is_ok()
                    {
                        return;
                    }
                }
                self.close_with(CloseReason::Handshake(HandshakeError::Rejected(error)));
                return;
            }
        };
        let result: InitializeResult = match raw.decode() {
            Ok(result) => result,
            Err(e) => {
                self.close_with(CloseReason::Handshake(HandshakeError::InvalidResult(
                    e.to_string(),
                )));
                return;
            }
        };
        let version = match self.options.versions.accept(&result.protocol_version) {
            Ok(version) => version,
            Err(mut unsupported) => {
                unsupported.offered = attempt.offered;
                self.close_with(CloseReason::Handshake(HandshakeError::UnsupportedVersion(
                    unsupported,
                )));
                return;
            }
        };
        self.state = SessionState::Ready;
        self.transmit.push_back(Message::Notification(Notification {
            method: methods::NOTIFICATION_INITIALIZED.to_owned(),
            params: None,
        }));
        let negotiated = Box::new(Negotiated::from_initialize(version, result));
        self.negotiated = Some(negotiated.clone());
        self.events.push_back(Event::Initialized(negotiated));
    }

    /// The answer to `server/discover` (2026-07-28 "Versioning"
    /// §Backward Compatibility; "stdio" §Backward Compatibility).
    fn on_discover_response(
        &mut self,
        now: Instant,
        attempt: InitializeAttempt,
        outcome: Result<RawJson, ErrorObject>,
    ) {
        let probing = attempt.step == Step::Probe;
        let error = match outcome {
            Ok(raw) => {
                let discover: DiscoverResult = match raw.decode() {
                    Ok(discover) => discover,
                    // Not a DiscoverResult: a lax handshake-era server that
                    // answers anything.
                    Err(_) if probing => return self.fall_back(now),
                    Err(e) => {
                        return self.close_with(CloseReason::Handshake(
                            HandshakeError::InvalidResult(e.to_string()),
                        ));
                    }
                };
                let listed = discover.supported_versions.iter().map(String::as_str);
                if let Some(version) = self.options.versions.best_mutual_modern(listed) {
                    return self.become_modern(version, discover);
                }
                // A result listing only handshake versions is no proof of a
                // modern server: speak the handshake era.
                if self.options.era == EraPolicy::Auto {
                    return self.fall_back(now);
                }
                return self.close_with(CloseReason::Handshake(HandshakeError::NoCommonVersion {
                    server: bounded_list(&discover.supported_versions),
                    client: self.options.versions.supported_list(),
                }));
            }
            Err(error) => error,
        };
        if !is_modern_error(error.code) {
            // Any other error: a handshake-era server (never keyed on one code).
            if probing {
                return self.fall_back(now);
            }
            return self.close_with(CloseReason::Handshake(HandshakeError::DiscoverRejected(
                error,
            )));
        }
        if error.code == UNSUPPORTED_PROTOCOL_VERSION {
            let supported = supported_versions(&error);
            let modern = self
                .options
                .versions
                .best_mutual_modern(supported.iter().map(String::as_str));
            // Retried once, with a new id, even with the same version: the
            // server may have refused something else about the first try.
            if let Some(version) = modern
                && !attempt.retried
            {
                let step = Step::Discover;
                if self.send_discover(now, version, step).is_ok() {
                    if let Some(a) = self.initialize.as_mut() {
                        a.retried = true;
                    }
                    return;
                }
            }
            // A modern server whose list names only handshake versions: use
            // one of them, through `initialize`.
            if self.options.era == EraPolicy::Auto
                && self
                    .options
                    .versions
                    .best_mutual(supported.iter().map(String::as_str))
                    .is_some()
            {
                return self.fall_back(now);
            }
            return self.close_with(CloseReason::Handshake(HandshakeError::NoCommonVersion {
                server: bounded_list(&supported),
                client: self.options.versions.supported_list(),
            }));
        }
        self.close_with(CloseReason::Handshake(HandshakeError::DiscoverRejected(
            error,
        )));
    }

    /// Settles the stateless era.
    fn become_modern(&mut self, version: ProtocolVersion, discover: DiscoverResult) {
        self.modern_meta = Some(encode_modern_meta(
            version,
            &self.options.capabilities,
            &self.options.client_info,
        ));
        self.state = SessionState::Ready;
        let negotiated = Box::new(Negotiated::from_discover(version, discover));
        let filter = listen_filter(negotiated.server_capabilities());
        self.negotiated = Some(negotiated.clone());
        self.events.push_back(Event::Initialized(negotiated));
        if self.options.listen
            && let Some(filter) = filter
        {
            self.listen = Some(Listen {
                filter,
                id: None,
                retry_at: None,
                failures: 0,
            });
            self.open_listen();
        }
    }

    /// The Auto probe found no modern server: the handshake era, once.
    fn fall_back(&mut self, now: Instant) {
        if self.fell_back {
            self.close_with(CloseReason::Handshake(HandshakeError::Cancelled));
            return;
        }
        self.fell_back = true;
        if let Err(error) = self.send_initialize(now, self.options.versions.offered, false) {
            self.close_with(CloseReason::Handshake(HandshakeError::InvalidResult(
                error.to_string(),
            )));
        }
    }

    /// Removes the handshake attempt `id` and its deadline.
    fn take_attempt(&mut self, id: i64) -> Option<InitializeAttempt> {
        if self.initialize.as_ref().is_none_or(|i| i.id != id) {
            return None;
        }
        let attempt = self.initialize.take();
        if let Some(pending) = self.pending.remove(&id)
            && let Some(deadline) = pending.deadline
        {
            self.deadlines.remove(&(deadline, id));
        }
        attempt
    }

    fn is_listen(&self, id: i64) -> bool {
        self.listen.as_ref().and_then(|l| l.id) == Some(id)
    }

    /// Sends `subscriptions/listen` with the session's filter; it has no
    /// deadline (it lasts as long as the subscription).
    fn open_listen(&mut self) {
        let Some(listen) = self.listen.as_mut() else {
            return;
        };
        listen.retry_at = None;
        let params = SubscriptionsListenRequestParams {
            notifications: listen.filter.clone(),
            meta: None,
            extra: JsonObject::default(),
        };
        let Some(modern_meta) = &self.modern_meta else {
            return;
        };
        let Ok(raw) = modern_params(modern_meta, Some(&params), None) else {
            return;
        };
        let id = self.allocate_id();
        if let Some(listen) = self.listen.as_mut() {
            listen.id = Some(id);
        }
        self.insert_pending(
            id,
            Pending {
                deadline: None,
                timeout: None,
                hard_deadline: None,
            },
        );
        self.transmit.push_back(Message::Request(Request {
            id: RequestId::Number(id),
            method: methods::SUBSCRIPTIONS_LISTEN.to_owned(),
            params: Some(raw),
        }));
    }

    /// `resources/subscribe` (`subscribe`) or `resources/unsubscribe` of
    /// `uri` in the stateless era, which has neither method (2026-07-28
    /// "Subscriptions": `subscriptions/listen` replaces them): the URI
    /// joins or leaves the `resourceSubscriptions` of the session's listen
    /// request, which is opened again with the new filter (the one open is
    /// cancelled; a filter left empty closes it), and the request
    /// completes at once with `{}`. An acknowledgement that leaves the URI
    /// out is a [`Diagnostic::SubscriptionNarrowed`].
    fn listen_for_resource(&mut self, subscribe: bool, uri: String) -> RequestHandle {
        let handle = RequestHandle(self.allocate_id());
        let listen = self.listen.get_or_insert_with(|| Listen {
            filter: SubscriptionFilter::default(),
            id: None,
            retry_at: None,
            failures: 0,
        });
        let uris = listen
            .filter
            .resource_subscriptions
            .get_or_insert_with(Vec::new);
        let held = uris.contains(&uri);
        let changed = subscribe != held;
        if subscribe && !held {
            uris.push(uri);
        } else if !subscribe && held {
            uris.retain(|held| *held != uri);
        }
        if uris.is_empty() {
            listen.filter.resource_subscriptions = None;
        }
        if changed {
            self.reopen_listen();
        } else if self
            .listen
            .as_ref()
            .is_some_and(|l| listen_is_empty(&l.filter))
        {
            self.listen = None;
        }
        self.events.push_back(Event::Completed {
            handle,
            outcome: Ok(RawJson::from(crate::jsonrpc::empty_object())),
        });
        handle
    }

    /// Cancels the open listen request, if any, and opens it again with
    /// the current filter; a filter that asks for nothing is not opened.
    fn reopen_listen(&mut self) {
        if let Some(old) = self.listen.as_mut().and_then(|l| l.id.take()) {
            self.remove_pending(old);
            self.send_cancelled(old, "the subscription's filter changed");
        }
        if self
            .listen
            .as_ref()
            .is_some_and(|l| listen_is_empty(&l.filter))
        {
            self.listen = None;
            return;
        }
        self.open_listen();
    }

    /// The listen request was answered: a result is a graceful end (the
    /// server tore the subscription down; it is not reopened), an error a
    /// refusal.
    fn on_listen_end(&mut self, outcome: Result<RawJson, ErrorObject>) {
        match outcome {
            Ok(_) => {
                self.listen = None;
            }
            Err(error) => {
                self.listen = None;
                self.events
                    .push_back(Event::Diagnostic(Diagnostic::SubscriptionRefused(error)));
            }
        }
    }

    /// The listen stream broke without an answer: open it again after a
    /// backoff (1 s, doubling, at most 30 s).
    fn on_listen_abrupt_end(&mut self, now: Instant) {
        let Some(listen) = self.listen.as_mut() else {
            return;
        };
        listen.id = None;
        listen.failures = listen.failures.saturating_add(1);
        let backoff = LISTEN_BACKOFF_START
            .saturating_mul(1u32 << listen.failures.saturating_sub(1).min(5))
            .min(LISTEN_BACKOFF_MAX);
        listen.retry_at = now.checked_add(backoff);
    }

    fn on_server_request(&mut self, request: Request) {
        let Request { id, method, params } = request;
        // 2026-07-28 "Message patterns": servers send no requests, and
        // clients MUST NOT write responses.
        if self.era() == Some(Era::Modern) {
            self.events
                .push_back(Event::Diagnostic(Diagnostic::RequestInStatelessEra {
                    method,
                }));
            return;
        }
        // MCP "Utilities/Ping": answer promptly, in any state.
        if method == methods::PING {
            self.transmit.push_back(Message::Response(Response {
                id,
                result: RawJson::from(empty_object()),
            }));
            return;
        }
        if let Err(error) = self.check_client_capability(&method, params.as_ref()) {
            self.transmit.push_back(Message::Error(ErrorResponse {
                id: Some(id),
                error,
            }));
            return;
        }
        if self.server_requests.contains_key(&id) {
            self.events
                .push_back(Event::Diagnostic(Diagnostic::DuplicateServerRequestId(id)));
            return;
        }
        if self.server_requests.len() >= self.options.max_pending_server_requests {
            self.transmit.push_back(Message::Error(ErrorResponse {
                id: Some(id.clone()),
                error: ErrorObject::new(
                    error_codes::INTERNAL_ERROR,
                    "too many requests waiting for the client",
                ),
            }));
            self.events
                .push_back(Event::Diagnostic(Diagnostic::TooManyServerRequests(id)));
            return;
        }
        self.server_requests.insert(id.clone(), ());
        self.events
            .push_back(Event::Request(ServerRequest { id, method, params }));
    }

    /// Checks a server request against what the client declared
    /// (MCP "Lifecycle" §Capability Negotiation; "Client Features").
    fn check_client_capability(
        &self,
        method: &str,
        params: Option<&RawJson>,
    ) -> Result<(), ErrorObject> {
        let caps = &self.options.capabilities;
        match method {
            methods::ROOTS_LIST if caps.roots.is_some() => Ok(()),
            methods::SAMPLING_CREATE_MESSAGE => {
                let Some(sampling) = &caps.sampling else {
                    return Err(ErrorObject::method_not_found(method));
                };
                // 2025-11-25: a server may send `tools` only to a client that
                // declared `sampling.tools`; the client MUST answer with an error.
                let probe: SamplingProbe = parse_probe(params)?;
                if probe.tools.is_some() && sampling.tools.is_none() {
                    return Err(ErrorObject::invalid_params(
                        "sampling with tools requires the client capability sampling.tools",
                    ));
                }
                Ok(())
            }
            methods::ELICITATION_CREATE => {
                let Some(elicitation) = &caps.elicitation else {
                    return Err(ErrorObject::method_not_found(method));
                };
                // A missing mode means form (2025-11-25); an undeclared mode is -32602.
                let probe: ElicitationProbe = parse_probe(params)?;
                let supported = match probe.mode.as_deref() {
                    None | Some("form") => elicitation.supports_form(),
                    Some("url") => elicitation.supports_url(),
                    Some(_) => false,
                };
                if supported {
                    Ok(())
                } else {
                    Err(ErrorObject::invalid_params(format!(
                        "elicitation mode {:?} is not supported by this client",
                        probe.mode.as_deref().unwrap_or("form")
                    )))
                }
            }
            m if m.starts_with("tasks/") && caps.tasks.is_some() => Ok(()),
            _ => Err(ErrorObject::method_not_found(method)),
        }
    }

    fn on_notification(&mut self, now: Instant, notification: Notification) {
        match notification.method.as_str() {
            methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED => {
                match parse_params::<SubscriptionsAcknowledgedNotificationParams>(
                    notification.params.as_ref(),
                ) {
                    Ok(params) => self.on_acknowledged(params),
                    Err(error) => self.malformed(notification.method, error),
                }
            }
            methods::NOTIFICATION_PROGRESS => {
                match parse_params::<ProgressNotificationParams>(notification.params.as_ref()) {
                    Ok(params) => self.on_progress(now, params),
                    Err(error) => self.malformed(notification.method, error),
                }
            }
            methods::NOTIFICATION_CANCELLED => {
                // Never error on a malformed cancel; ignore unknown ids.
                let Ok(params) =
                    parse_params::<CancelledNotificationParams>(notification.params.as_ref())
                else {
                    return;
                };
                if let Some(id) = params.request_id
                    && self.server_requests.remove(&id).is_some()
                {
                    self.events.push_back(Event::RequestCancelled {
                        id,
                        reason: params.reason,
                    });
                }
            }
            _ => self.events.push_back(Event::Notification(notification)),
        }
    }

    /// `notifications/subscriptions/acknowledged`: the filter the server
    /// honours, checked against the one asked for (2026-07-28
    /// "Subscriptions" §Acknowledgment).
    fn on_acknowledged(&mut self, params: SubscriptionsAcknowledgedNotificationParams) {
        let subscription = params
            .meta
            .as_ref()
            .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
            .and_then(|v| v.as_i64());
        let Some(listen) = self.listen.as_mut() else {
            return;
        };
        if listen.id.is_none() || subscription != listen.id {
            return;
        }
        listen.failures = 0;
        let requested = &listen.filter;
        let acknowledged = &params.notifications;
        let narrowed = (requested.tools_list_changed == Some(true)
            && acknowledged.tools_list_changed != Some(true))
            || (requested.prompts_list_changed == Some(true)
                && acknowledged.prompts_list_changed != Some(true))
            || (requested.resources_list_changed == Some(true)
                && acknowledged.resources_list_changed != Some(true))
            || requested
                .resource_subscriptions
                .iter()
                .flatten()
                .any(|uri| {
                    !acknowledged
                        .resource_subscriptions
                        .iter()
                        .flatten()
                        .any(|acked| acked == uri)
                });
        if narrowed {
            let requested = requested.clone();
            self.events
                .push_back(Event::Diagnostic(Diagnostic::SubscriptionNarrowed {
                    requested,
                    acknowledged: params.notifications,
                }));
        }
    }

    fn on_progress(&mut self, now: Instant, params: ProgressNotificationParams) {
        // Our tokens are the numeric ids of our requests; a token we don't
        // know, or one for a request that already ended, is ignored.
        let RequestId::Number(id) = params.progress_token else {
            return;
        };
        if self.initialize.as_ref().is_some_and(|i| i.id == id) {
            return;
        }
        let Some(pending) = self.pending.get_mut(&id) else {
            return;
        };
        if let (Some(hard), Some(timeout), Some(old)) =
            (pending.hard_deadline, pending.timeout, pending.deadline)
        {
            let new = now.checked_add(timeout).map_or(hard, |d| d.min(hard));
            if new != old {
                self.deadlines.remove(&(old, id));
                self.deadlines.insert((new, id));
                pending.deadline = Some(new);
            }
        }
        self.events.push_back(Event::Progress {
            handle: RequestHandle(id),
            params,
        });
    }

    fn malformed(&mut self, method: String, error: serde_json::Error) {
        self.events
            .push_back(Event::Diagnostic(Diagnostic::MalformedParams {
                method,
                error: error.to_string(),
            }));
    }

    fn close_with(&mut self, reason: CloseReason) {
        if self.state == SessionState::Closed {
            return;
        }
        self.state = SessionState::Closed;
        self.transmit.clear();
        self.deadlines.clear();
        self.server_requests.clear();
        let init_id = self.initialize.take().map(|i| i.id);
        let listen_id = self.listen.take().and_then(|l| l.id);
        let mut ids: Vec<i64> = self
            .pending
            .drain()
            .map(|(id, _)| id)
            .filter(|id| Some(*id) != init_id && Some(*id) != listen_id)
            .collect();
        ids.sort_unstable();
        for id in ids {
            self.events.push_back(Event::Completed {
                handle: RequestHandle(id),
                outcome: Err(RequestError::Closed),
            });
        }
        self.events.push_back(Event::Closed(reason));
    }
}

/// Which server capability a client request needs (MCP 2025-06-18
/// "Lifecycle": use only negotiated capabilities).
fn check_server_capability(negotiated: &Negotiated, method: &str) -> Result<(), SessionError> {
    let caps = negotiated.server_capabilities();
    let missing = |capability| {
        Err(SessionError::CapabilityNotDeclared {
            method: method.to_owned(),
            capability,
        })
    };
    match method {
        methods::TOOLS_LIST | methods::TOOLS_CALL if caps.tools.is_none() => missing("tools"),
        methods::RESOURCES_LIST | methods::RESOURCES_TEMPLATES_LIST | methods::RESOURCES_READ
            if caps.resources.is_none() =>
        {
            missing("resources")
        }
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE
            if caps.resources.as_ref().and_then(|r| r.subscribe) != Some(true) =>
        {
            missing("resources.subscribe")
        }
        methods::PROMPTS_LIST | methods::PROMPTS_GET if caps.prompts.is_none() => {
            missing("prompts")
        }
        methods::LOGGING_SET_LEVEL if caps.logging.is_none() => missing("logging"),
        methods::SKILLS_LIST | methods::SKILLS_GET if caps.skills().is_none() => {
            missing("extensions.io.modelcontextprotocol/skills")
        }
        methods::RESOURCES_DIRECTORY_READ
            if caps.skills().and_then(|s| s.directory_read) != Some(true) =>
        {
            missing("extensions.io.modelcontextprotocol/skills.directoryRead")
        }
        // 2024-11-05 had no `completions` flag: a client may try and treat
        // -32601 as "unsupported".
        methods::COMPLETION_COMPLETE
            if caps.completions.is_none() && negotiated.version.has_completions_capability() =>
        {
            missing("completions")
        }
        m if m.starts_with("tasks/") && caps.tasks.is_none() => missing("tasks"),
        _ => Ok(()),
    }
}

/// A hasher for the ids a session allocates (sequential integers), and for
/// keys that wrap them: one multiplication by an odd constant maps
/// consecutive ids to distinct table slots and mixes the high bits the
/// table also uses. SipHash's resistance to flooding is not needed for keys
/// we choose, and it was about a twentieth of a small call's instructions
/// (measured with callgrind). Other keys go through `write`, a simple
/// byte-wise mix. Use it only for keys a peer cannot choose.
///
/// ```
/// use std::collections::HashMap;
/// use mcp_proto::session::IdBuildHasher;
///
/// let mut pending: HashMap<i64, &str, IdBuildHasher> = HashMap::default();
/// pending.insert(1, "tools/call");
/// assert_eq!(pending.get(&1), Some(&"tools/call"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

/// The [`std::hash::BuildHasher`] of [`IdHasher`], for `HashMap`s keyed by
/// request ids.
pub type IdBuildHasher = BuildHasherDefault<IdHasher>;

const ID_HASH_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(ID_HASH_MULTIPLIER);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(ID_HASH_MULTIPLIER);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Deserialize)]
struct VersionErrorData {
    #[serde(default)]
    supported: Vec<String>,
}

/// `UnsupportedProtocolVersion` (2026-07-28 "Base protocol" §Error codes).
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The stateless era's own error codes: `HeaderMismatch` (-32020),
/// `MissingRequiredClientCapability` (-32021) and `UnsupportedProtocolVersion`
/// (-32022). A plain -32601 or -32602 is not among them: handshake-era
/// servers send those too.
fn is_modern_error(code: i64) -> bool {
    matches!(code, -32022..=-32020)
}

/// The versions an error's `data.supported` lists (2026-07-28 "Versioning").
fn supported_versions(error: &ErrorObject) -> Vec<String> {
    error
        .data_as::<VersionErrorData>()
        .map(|d| d.supported)
        .unwrap_or_default()
}

/// A server's version list for an error message: at most 8 entries, each
/// bounded and escaped as [`text::error_text`] does with
/// [`text::NAME_LIMIT`].
fn bounded_list(versions: &[String]) -> String {
    let mut out: Vec<String> = versions
        .iter()
        .take(8)
        .map(|v| text::error_text(v, text::NAME_LIMIT).into_owned())
        .collect();
    if versions.len() > 8 {
        out.push("...".to_owned());
    }
    if out.is_empty() {
        return "no version".to_owned();
    }
    out.join(", ")
}

/// Methods of the handshake era that 2026-07-28 removed.
fn exists_in_stateless_era(method: &str) -> bool {
    !matches!(
        method,
        methods::PING
            | methods::LOGGING_SET_LEVEL
            | methods::RESOURCES_SUBSCRIBE
            | methods::RESOURCES_UNSUBSCRIBE
            | methods::SUBSCRIPTIONS_LISTEN
            | methods::SERVER_DISCOVER
    )
}

/// Whether a listen filter asks for nothing at all.
fn listen_is_empty(filter: &SubscriptionFilter) -> bool {
    filter.tools_list_changed != Some(true)
        && filter.prompts_list_changed != Some(true)
        && filter.resources_list_changed != Some(true)
        && filter
            .resource_subscriptions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// The `uri` of a `resources/subscribe` or `resources/unsubscribe`'s
/// params.
fn subscribed_uri<P: Serialize + ?Sized>(
    method: &str,
    params: Option<&P>,
) -> Result<String, SessionError> {
    let encode_error = |source| SessionError::Encode {
        method: method.to_owned(),
        source,
    };
    let value = params
        .map(serde_json::to_value)
        .transpose()
        .map_err(encode_error)?;
    value
        .as_ref()
        .and_then(|v| v.get("uri"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            encode_error(<serde_json::Error as serde::de::Error>::custom(format!(
                "{method} needs a `uri`"
            )))
        })
}

/// The first backoff before a broken `subscriptions/listen` is opened again.
const LISTEN_BACKOFF_START: Duration = Duration::from_secs(1);
/// The longest backoff between attempts to open `subscriptions/listen`.
const LISTEN_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What `subscriptions/listen` asks for: the list changes the server
/// declared (2026-07-28 "Subscriptions"), or nothing to listen for.
fn listen_filter(caps: &ServerCapabilities) -> Option<SubscriptionFilter> {
    let tools = caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true);
    let prompts = caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true);
    let resources = caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true);
    if !(tools || prompts || resources) {
        return None;
    }
    Some(SubscriptionFilter {
        tools_list_changed: tools.then_some(true),
        prompts_list_changed: prompts.then_some(true),
        resources_list_changed: resources.then_some(true),
        resource_subscriptions: None,
        extra: JsonObject::default(),
    })
}

/// The stateless era's `_meta` members of every request (2026-07-28 "Base
/// protocol" §Per-request metadata), encoded once, as the text of the
/// members without the braces (`"k":v,...`).
#[derive(Debug)]
struct ModernMeta {
    members: String,
    /// Each member's key and where its value lies in `members`, read once
    /// for [`merge_meta`].
    values: Vec<(String, std::ops::Range<usize>)>,
}

impl ModernMeta {
    fn new(members: String) -> ModernMeta {
        let object = format!("{{{members}}}");
        let values = object_members(&object)
            .map(|found| {
                found
                    .into_iter()
                    .map(|(key, value)| {
                        // Where the value lies in `object`, less its brace.
                        let start = value.get().as_ptr() as usize - object.as_ptr() as usize - 1;
                        (key.into_string(), start..start + value.get().len())
                    })
                    .collect()
            })
            .unwrap_or_default();
        ModernMeta { members, values }
    }
}

fn encode_modern_meta(
    version: ProtocolVersion,
    capabilities: &ClientCapabilities,
    client_info: &Implementation,
) -> ModernMeta {
    ModernMeta::new(encode_modern_members(version, capabilities, client_info))
}

fn encode_modern_members(
    version: ProtocolVersion,
    capabilities: &ClientCapabilities,
    client_info: &Implementation,
) -> String {
    let mut out = String::with_capacity(160);
    // Each value serializes infallibly (plain data, string keys); a failure
    // would leave the member out and the server would answer -32602.
    let caps = serde_json::to_string(capabilities).unwrap_or_else(|_| "{}".to_owned());
    let info = serde_json::to_string(client_info).unwrap_or_else(|_| "{}".to_owned());
    out.push('"');
    out.push_str(meta::PROTOCOL_VERSION);
    out.push_str("\":\"");
    out.push_str(version.as_str());
    out.push_str("\",\"");
    out.push_str(meta::CLIENT_CAPABILITIES);
    out.push_str("\":");
    out.push_str(&caps);
    out.push_str(",\"");
    out.push_str(meta::CLIENT_INFO);
    out.push_str("\":");
    out.push_str(&info);
    out
}

enum ParamsError {
    Encode(serde_json::Error),
    NotObject,
}

/// Room for a request's own params beside the `_meta` envelope, so that
/// writing a small call's params does not grow the buffer.
const PARAMS_ESTIMATE: usize = 128;

/// Request params with the stateless era's `_meta` members (and a progress
/// token) merged in.
///
/// Most params have no `_meta` of their own: they are written once, into
/// the buffer that already holds our `_meta` object, their opening brace
/// turned into the comma after it, and the result is not read again (two
/// valid pieces of JSON joined this way are valid JSON). Params that
/// mention `_meta` are merged as a value instead, keeping the caller's own
/// `_meta` keys.
fn modern_params<P: Serialize + ?Sized>(
    meta: &ModernMeta,
    params: Option<&P>,
    progress: Option<i64>,
) -> Result<RawJson, ParamsError> {
    const OPEN: &[u8] = b"{\"_meta\":{";
    let members = meta.members.as_bytes();
    let mut out = Vec::with_capacity(OPEN.len() + members.len() + PARAMS_ESTIMATE);
    out.extend_from_slice(OPEN);
    out.extend_from_slice(members);
    if let Some(id) = progress {
        out.extend_from_slice(b",\"progressToken\":");
        out.extend_from_slice(id.to_string().as_bytes());
    }
    out.push(b'}');
    let ours = out.len();
    match params {
        None => out.push(b'}'),
        Some(params) => {
            serde_json::to_writer(&mut out, params).map_err(ParamsError::Encode)?;
            match out.get(ours..) {
                Some(b"{}") => {
                    out.truncate(ours);
                    out.push(b'}');
                }
                Some(body) if body.first() == Some(&b'{') => {
                    if names_meta(body) {
                        return merge_meta(meta, body, progress);
                    }
                    out[ours] = b',';
                }
                _ => return Err(ParamsError::NotObject),
            }
        }
    }
    // serde_json writes UTF-8 and so do we: the bytes are kept as they
    // are, not checked again on every request (about 180 instructions of
    // an echo call, measured with callgrind) when only the encoder reads
    // them.
    Ok(RawJson::written_bytes(out))
}

/// Whether encoded params mention `"_meta"` anywhere, nested or not, so
/// that a params `_meta` is never missed; the rare false alarm only sends
/// the request down [`merge_meta`]. `_` is rare in params, so finding each
/// one and looking around it costs less than setting a substring search up.
fn names_meta(body: &[u8]) -> bool {
    memchr::memchr_iter(b'_', body)
        .any(|at| at > 0 && body[at - 1] == b'"' && body.get(at..at + 6) == Some(b"_meta\""))
}

/// The general path of [`modern_params`]: `body` (params as serde_json
/// wrote them) with our `_meta` members added where the caller's `_meta`
/// lacks them and the progress token set, as decoding it, merging and
/// writing it again would (members in their order, a key written twice
/// in its first place with its last value, ours after the caller's), but
/// on the text: only the keys of the params and of their `_meta` are
/// read, every value is copied as written. Decoding the whole params
/// (a call's arguments with them) into values and writing them again cost
/// a gateway forwarding a 2026-07-28 client's capabilities about 32,000
/// instructions per call (callgrind); this costs a pass over the keys.
fn merge_meta(
    meta: &ModernMeta,
    body: &[u8],
    progress: Option<i64>,
) -> Result<RawJson, ParamsError> {
    let encode = |e: serde_json::Error| ParamsError::Encode(e);
    let body = std::str::from_utf8(body).map_err(|e| encode(serde::ser::Error::custom(e)))?;
    let params = object_members(body).map_err(encode)?;
    let caller = match last_member(&params, "_meta") {
        Some(raw) => object_members(raw.get()).map_err(|_| ParamsError::NotObject)?,
        None => Vec::new(),
    };
    let token = progress.map(|id| id.to_string());
    // The merged `_meta`: the caller's members (its progress token
    // replaced by ours), then ours it lacks, then our token if it had none.
    let mut merged = String::with_capacity(128 + meta.members.len());
    merged.push('{');
    write_members(&mut merged, &caller, |key| {
        (key == "progressToken")
            .then_some(token.as_deref())
            .flatten()
    });
    for (key, value) in &meta.values {
        if last_member(&caller, key).is_none() {
            write_member(&mut merged, key, &meta.members[value.clone()]);
        }
    }
    if let Some(token) = &token
        && last_member(&caller, "progressToken").is_none()
    {
        write_member(&mut merged, "progressToken", token);
    }
    merged.push('}');
    let mut out = String::with_capacity(body.len() + merged.len() + 16);
    out.push('{');
    write_members(&mut out, &params, |key| {
        (key == "_meta").then_some(merged.as_str())
    });
    if last_member(&params, "_meta").is_none() {
        write_member(&mut out, "_meta", &merged);
    }
    out.push('}');
    Ok(RawJson::written(out))
}

/// The members of the JSON object `text` in order, each value as its
/// text; every occurrence of a key written more than once.
fn object_members(
    text: &str,
) -> Result<Vec<(crate::types::de::Key<'_>, &serde_json::value::RawValue)>, serde_json::Error> {
    struct Members;
    impl<'de> serde::de::Visitor<'de> for Members {
        type Value = Vec<(crate::types::de::Key<'de>, &'de serde_json::value::RawValue)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut members = Vec::new();
            while let Some(key) = map.next_key()? {
                members.push((key, map.next_value()?));
            }
            Ok(members)
        }
    }
    let mut decoder = serde_json::Deserializer::from_str(text);
    let members = serde::Deserializer::deserialize_map(&mut decoder, Members)?;
    decoder.end()?;
    Ok(members)
}

/// The last value of `key` among `members`.
fn last_member<'a>(
    members: &[(crate::types::de::Key<'_>, &'a serde_json::value::RawValue)],
    key: &str,
) -> Option<&'a serde_json::value::RawValue> {
    members
        .iter()
        .rev()
        .find(|(name, _)| name.as_str() == key)
        .map(|(_, value)| *value)
}

/// Writes `members` after what `out` holds (an object's opening brace and
/// perhaps members), each key once, in its first place, with its last value
/// or the one `replaced` gives for it.
fn write_members<'r>(
    out: &mut String,
    members: &[(crate::types::de::Key<'_>, &serde_json::value::RawValue)],
    replaced: impl Fn(&str) -> Option<&'r str>,
) {
    for (i, (key, _)) in members.iter().enumerate() {
        let key = key.as_str();
        if members[..i]
            .iter()
            .any(|(earlier, _)| earlier.as_str() == key)
        {
            continue;
        }
        let value = replaced(key)
            .or_else(|| last_member(members, key).map(serde_json::value::RawValue::get))
            .unwrap_or("null");
        write_member(out, key, value);
    }
}

/// Writes `"key":value` after what `out` holds, with a comma unless it
/// follows the object's opening brace. Built as a `String` from `str`s,
/// the merged text needs no check that it is UTF-8 (the two checks were
/// about 300 of a merge's 6,900 instructions for a gateway's forwarded
/// `tools/call`, measured with callgrind).
fn write_member(out: &mut String, key: &str, value: &str) {
    if !out.ends_with('{') {
        out.push(',');
    }
    crate::jsonrpc::push_json_string(out, key);
    out.push(':');
    out.push_str(value);
}

#[derive(Deserialize)]
struct SamplingProbe {
    #[serde(default)]
    tools: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct ElicitationProbe {
    #[serde(default)]
    mode: Option<String>,
}

fn parse_probe<T: serde::de::DeserializeOwned>(params: Option<&RawJson>) -> Result<T, ErrorObject> {
    parse_params(params).map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

fn parse_params<T: serde::de::DeserializeOwned>(
    params: Option<&RawJson>,
) -> Result<T, serde_json::Error> {
    match params {
        Some(raw) => raw.decode(),
        None => serde_json::from_str("{}"),
    }
}

fn progress_meta_only(id: i64) -> serde_json::Value {
    serde_json::json!({ "_meta": { "progressToken": id } })
}

/// Adds `_meta.progressToken` to request params, keeping any other `_meta`
/// keys the caller set. Returns false, changing nothing, when the params or
/// their `_meta` are not objects: there is nowhere to put the token.
fn insert_progress_token(params: &mut serde_json::Value, id: i64) -> bool {
    let Some(object) = params.as_object_mut() else {
        return false;
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    let Some(meta) = meta.as_object_mut() else {
        return false;
    };
    meta.insert("progressToken".to_owned(), serde_json::Value::from(id));
    true
}

#[cfg(test)]
mod tests;

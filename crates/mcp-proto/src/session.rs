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
//! The rules it enforces (MCP 2024-11-05 .. 2025-11-25):
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
    ErrorObject, ErrorResponse, Frame, Message, Notification, RawJson, RawValue, Request,
    RequestId, Response, empty_object, error_codes, to_raw,
};
use crate::methods;
use crate::types::{
    CancelledNotificationParams, ClientCapabilities, Implementation, InitializeRequestParams,
    InitializeResult, ProgressNotificationParams, ServerCapabilities,
};
use crate::version::{ProtocolVersion, UnsupportedVersion, VersionPolicy};

/// Options for a [`ClientSession`]. Every field has a documented default.
#[derive(Clone, Debug)]
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
        }
    }
}

/// Options for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    /// `initialize` was sent; waiting for its result.
    Initializing,
    /// The handshake succeeded; requests may be sent.
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

/// What the handshake settled.
#[derive(Clone, Debug, PartialEq)]
pub struct Negotiated {
    /// The protocol version both sides speak.
    pub version: ProtocolVersion,
    /// The server's `initialize` result, as sent.
    pub result: InitializeResult,
}

impl Negotiated {
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
    /// Its parameters, as raw JSON.
    pub params: Option<Box<RawValue>>,
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
}

/// Why the session closed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CloseReason {
    /// The handshake failed.
    #[error("handshake failed: {0}")]
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
    pending: HashMap<i64, Pending, BuildHasherDefault<IdHasher>>,
    /// Deadlines of pending requests, ordered, for `poll_timeout`.
    deadlines: BTreeSet<(Instant, i64)>,
    /// The initialize request in flight, if any.
    initialize: Option<InitializeAttempt>,
    negotiated: Option<Box<Negotiated>>,
    /// Server-to-client requests waiting for the caller's answer.
    server_requests: HashMap<RequestId, ()>,
    transmit: VecDeque<Message>,
    events: VecDeque<Event>,
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
        }
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

    /// How many of the caller's requests wait for an answer.
    pub fn pending_requests(&self) -> usize {
        self.pending.len() - usize::from(self.initialize.is_some())
    }

    /// Starts the handshake: queues `initialize` with the offered version.
    pub fn start(&mut self, now: Instant) -> Result<(), SessionError> {
        match self.state {
            SessionState::Idle => {}
            SessionState::Closed => return Err(SessionError::Closed),
            SessionState::Initializing | SessionState::Ready => {
                return Err(SessionError::AlreadyStarted);
            }
        }
        self.state = SessionState::Initializing;
        self.send_initialize(now, self.options.versions.offered, false)
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
            SessionState::Initializing if method != methods::PING => {
                return Err(SessionError::NotReady {
                    method: method.to_owned(),
                });
            }
            SessionState::Initializing | SessionState::Ready => {}
        }
        if let Some(negotiated) = &self.negotiated {
            check_server_capability(negotiated, method)?;
        }

        let id = self.allocate_id();
        let encode_error = |source| SessionError::Encode {
            method: method.to_owned(),
            source,
        };
        let params = match params {
            None if options.progress => {
                Some(to_raw(&progress_meta_only(id)).map_err(encode_error)?)
            }
            None => None,
            Some(p) if options.progress => {
                let mut value = serde_json::to_value(p).map_err(encode_error)?;
                if !insert_progress_token(&mut value, id) {
                    return Err(SessionError::ParamsNotObject {
                        method: method.to_owned(),
                    });
                }
                Some(to_raw(&value).map_err(encode_error)?)
            }
            Some(p) => Some(to_raw(p).map_err(encode_error)?),
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
        let params = params
            .map(to_raw)
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
    pub fn fail_request(&mut self, id: &RequestId, reason: impl Into<String>) -> bool {
        let RequestId::Number(number) = *id else {
            return false;
        };
        if self.initialize.as_ref().is_some_and(|i| i.id == number) {
            self.close_with(CloseReason::Handshake(HandshakeError::Undelivered(
                reason.into(),
            )));
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
            if self.initialize.as_ref().is_some_and(|i| i.id == id) {
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
    }

    /// Tells the session the transport ended: every pending request
    /// completes with [`RequestError::Closed`] at once.
    pub fn handle_close(&mut self) {
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
        self.deadlines.first().map(|&(deadline, _)| deadline)
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
        let params = to_raw(&params).map_err(|source| SessionError::Encode {
            method: methods::INITIALIZE.to_owned(),
            source,
        })?;
        let id = self.allocate_id();
        let timeout = self.options.initialize_timeout;
        self.insert_pending(
            id,
            Pending {
                deadline: now.checked_add(timeout),
                timeout: Some(timeout),
                hard_deadline: None,
            },
        );
        self.initialize = Some(InitializeAttempt {
            id,
            offered: version,
            retried,
        });
        self.transmit.push_back(Message::Request(Request {
            id: RequestId::Number(id),
            method: methods::INITIALIZE.to_owned(),
            params: Some(params),
        }));
        Ok(())
    }

    fn send_cancelled(&mut self, id: i64, reason: &str) {
        let params = CancelledNotificationParams {
            request_id: Some(RequestId::Number(id)),
            reason: Some(reason.to_owned()),
            meta: None,
            extra: Default::default(),
        };
        if let Ok(params) = to_raw(&params) {
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
        let Some(attempt) = self.initialize.take() else {
            return;
        };
        if let Some(pending) = self.pending.remove(&id)
            && let Some(deadline) = pending.deadline
        {
            self.deadlines.remove(&(deadline, id));
        }
        let raw = match outcome {
            Ok(raw) => raw,
            Err(error) => {
                // MCP "Lifecycle" §Version Negotiation: an error may list the
                // versions the server supports; retry once with the best one
                // both sides know.
                if self.options.retry_initialize_on_version_error && !attempt.retried {
                    let supported = error
                        .data_as::<VersionErrorData>()
                        .map(|d| d.supported)
                        .unwrap_or_default();
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
        let negotiated = Box::new(Negotiated { version, result });
        self.negotiated = Some(negotiated.clone());
        self.events.push_back(Event::Initialized(negotiated));
    }

    fn on_server_request(&mut self, request: Request) {
        let Request { id, method, params } = request;
        // MCP "Utilities/Ping": answer promptly, in any state.
        if method == methods::PING {
            self.transmit.push_back(Message::Response(Response {
                id,
                result: RawJson::from(empty_object()),
            }));
            return;
        }
        if let Err(error) = self.check_client_capability(&method, params.as_deref()) {
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
        params: Option<&RawValue>,
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
            methods::NOTIFICATION_PROGRESS => {
                match parse_params::<ProgressNotificationParams>(notification.params.as_deref()) {
                    Ok(params) => self.on_progress(now, params),
                    Err(error) => self.malformed(notification.method, error),
                }
            }
            methods::NOTIFICATION_CANCELLED => {
                // Never error on a malformed cancel; ignore unknown ids.
                let Ok(params) =
                    parse_params::<CancelledNotificationParams>(notification.params.as_deref())
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
        let mut ids: Vec<i64> = self
            .pending
            .drain()
            .map(|(id, _)| id)
            .filter(|id| Some(*id) != init_id)
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

/// Hashes the ids this session allocates (sequential integers): one
/// multiplication by an odd constant maps consecutive ids to distinct table
/// slots and mixes the high bits the table also uses. SipHash's resistance
/// to flooding is not needed for keys we choose, and it was about a twentieth
/// of a small call's instructions (measured with callgrind). Other keys go
/// through `write`, a simple byte-wise mix.
#[derive(Clone, Copy, Debug, Default)]
struct IdHasher(u64);

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

fn parse_probe<T: serde::de::DeserializeOwned>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject> {
    parse_params(params).map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

fn parse_params<T: serde::de::DeserializeOwned>(
    params: Option<&RawValue>,
) -> Result<T, serde_json::Error> {
    match params {
        Some(raw) => serde_json::from_str(raw.get()),
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

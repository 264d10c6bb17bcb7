//! The sans-IO server session: both eras' lifecycle, requests in and out, cancellation, progress and bounds.
//!
//! [`ServerSession`] is the server-side counterpart of
//! [`ClientSession`](crate::session::ClientSession), in the same
//! `quinn-proto` style: the caller feeds it what arrives
//! ([`ServerSession::handle_bytes`], [`ServerSession::handle_frame`],
//! [`ServerSession::handle_message`], or a decoder's refusal:
//! [`ServerSession::handle_undecodable`]), the passing of time
//! ([`ServerSession::handle_timeout`]) and the end of the transport
//! ([`ServerSession::handle_close`]), gives it commands
//! ([`ServerSession::respond`], [`ServerSession::respond_error`],
//! [`ServerSession::notify`], [`ServerSession::progress`],
//! [`ServerSession::request`], [`ServerSession::cancel`]), and takes back
//! frames to send ([`ServerSession::poll_transmit`]), the next deadline
//! ([`ServerSession::poll_timeout`]) and events
//! ([`ServerSession::poll_event`]). It does no I/O and never reads the
//! clock: every input that depends on time carries the caller's `now`.
//!
//! Which versions (and so which eras) a server speaks is
//! [`ServerOptions::versions`]; a connection may carry both eras, and each
//! request is read in the era it announces (2026-07-28 "Versioning"
//! §Backward Compatibility: a server may serve both). A server of the
//! handshake era only reads every request after `initialize` in the version
//! it negotiated, whatever `_meta` carries.
//!
//! The handshake era (MCP 2024-11-05 .. 2025-11-25, "Lifecycle"):
//! - `initialize` is answered by the session: the client's version when it
//!   is one the server offers, else the server's newest handshake version
//!   (the client decides whether it can use it); a second `initialize` is
//!   refused `-32600`, as is one inside a batch (2025-03-26 "Lifecycle").
//! - Before `initialize` only `ping` is answered; every other request is
//!   refused `-32600`. `notifications/initialized` makes the session
//!   [`ServerState::Ready`]; before it the server sends no requests but
//!   `ping` ("Lifecycle" §Initialization).
//! - "Base Protocol" §Batching: batches are accepted only when the
//!   negotiated version is 2025-03-26 (before `initialize`, when the server
//!   offers it) and answered with one batch once every request in it has
//!   ended; elsewhere a batch is refused with one `-32600`.
//!
//! The stateless era (2026-07-28, "Base protocol" §Per-request metadata): a
//! request whose `_meta` carries `io.modelcontextprotocol/protocolVersion`
//! stands alone. A version the server does not offer is refused `-32022`
//! naming both the requested and the supported versions (`data.supported`,
//! `data.requested`); a missing `clientCapabilities` object is `-32602`.
//! `server/discover` is answered by the session from
//! [`ServerOptions`]; the methods the era dropped (`initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`) are
//! `-32601`; the server sends no requests.
//!
//! In both eras:
//! - A request the session does not answer itself becomes
//!   [`Event::Request`]; the application ends it exactly once with
//!   [`ServerSession::respond`] or [`ServerSession::respond_error`] (a
//!   second answer is refused with [`ServerError::UnknownRequest`], never
//!   sent). Methods outside MCP (unless listed in
//!   [`ServerOptions::extra_methods`]) and methods whose capability the
//!   server did not declare are answered `-32601` with the name bounded to
//!   [`text::NAME_LIMIT`].
//! - "Utilities/Cancellation": the client's `notifications/cancelled` ends
//!   the request with [`Event::Cancelled`] and suppresses its answer; the
//!   server withdraws its own requests with [`ServerSession::cancel`] and
//!   the deadline of [`ServerSession::request`], both sending
//!   `notifications/cancelled`. Late answers are dropped.
//! - "Utilities/Progress": [`ServerSession::progress`] uses the progress
//!   token of the client's request; the client's progress for a server
//!   request is routed by the token that request's params carried.
//! - Bounds: a frame longer than [`ServerOptions::max_message_size`] and
//!   requests beyond [`ServerOptions::max_in_flight`] are refused with a
//!   JSON-RPC error and the connection goes on; text that is not JSON is
//!   `-32700` and JSON that is not a message `-32600`, both with a null id
//!   (JSON-RPC 2.0 §5.1); every error message sent is bounded to
//!   [`text::ERROR_TEXT_LIMIT`]. Nothing a peer sends panics the session.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::jsonrpc::{
    ErrorObject, Frame, Message, Notification, RawJson, RawValue, Request, RequestId, Response,
    empty_object, error_codes,
};
use crate::methods;
use crate::session::IdBuildHasher;
use crate::text;
use crate::types::{
    CacheScope, CancelledNotificationParams, ClientCapabilities, DiscoverResult, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, Meta, ProgressNotificationParams,
    ProgressToken, ServerCapabilities, meta,
};
use crate::version::{Era, ProtocolVersion};

/// The default of [`ServerOptions::max_message_size`]: 4 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;

/// The default of [`ServerOptions::max_in_flight`].
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// Options for a [`ServerSession`]. Every field has a documented default.
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Who the server is (`serverInfo`; in the stateless era
    /// `_meta["io.modelcontextprotocol/serverInfo"]` of `server/discover`).
    /// Default: this crate's name and version.
    pub server_info: Implementation,
    /// What the server offers. Requests for a capability not declared here
    /// are answered `-32601`. Default: nothing.
    pub capabilities: ServerCapabilities,
    /// A hint for the model on how to use this server. Default: none.
    pub instructions: Option<String>,
    /// The protocol versions the server speaks, any order; the eras it
    /// serves follow from them. Default: every version this crate knows.
    pub versions: Vec<ProtocolVersion>,
    /// The longest frame [`ServerSession::handle_bytes`] reads; a longer
    /// one is answered `-32600`. Default: [`DEFAULT_MAX_MESSAGE_SIZE`].
    pub max_message_size: usize,
    /// How many of the client's requests may wait for the application's
    /// answer at once; more are answered `-32603`. Default:
    /// [`DEFAULT_MAX_IN_FLIGHT`].
    pub max_in_flight: usize,
    /// Methods outside MCP that the application answers; any other unknown
    /// method is answered `-32601` by the session. Default: none.
    pub extra_methods: Vec<String>,
    /// Whether the session answers `server/discover` itself from these
    /// options (2026-07-28 "Versioning"). When false, `server/discover`
    /// becomes an [`Event::Request`]: in the stateless era once its `_meta`
    /// envelope passed; without `_meta`, or from a server that offers no
    /// stateless-era version, as it comes (`client` is `None`). For a
    /// server whose answer carries more than the options say, or comes
    /// later. Default: true.
    pub answer_discover: bool,
    /// Whether [`ServerSession::request`] refuses a method whose client
    /// capability the client did not declare
    /// ([`ServerError::CapabilityNotDeclared`], MCP "Client Features").
    /// Turned off only by a test server that checks how clients answer a
    /// request they did not ask for. Default: true.
    pub enforce_client_capabilities: bool,
    /// How long a client may cache the `server/discover` answer
    /// (`ttlMs`, 2026-07-28 "Caching"), in milliseconds. Default: none
    /// (the field is left out).
    #[setters(strip_option)]
    pub discover_ttl_ms: Option<u64>,
    /// Who may share a cached `server/discover` answer (`cacheScope`,
    /// 2026-07-28 "Caching"). Default: none (the field is left out).
    #[setters(strip_option)]
    pub discover_cache_scope: Option<CacheScope>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            server_info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            capabilities: ServerCapabilities::default(),
            instructions: None,
            versions: ProtocolVersion::ALL.to_vec(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            extra_methods: Vec::new(),
            answer_discover: true,
            enforce_client_capabilities: true,
            discover_ttl_ms: None,
            discover_cache_scope: None,
        }
    }
}

/// Where the session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerState {
    /// No `initialize` yet. Stateless-era requests are served in this
    /// state, which they never leave.
    Idle,
    /// `initialize` was answered; `notifications/initialized` has not come.
    Initialized,
    /// The handshake finished; the server may send requests.
    Ready,
    /// The session ended; see [`Event::Closed`].
    Closed,
}

/// A request the server sent to the client; names it in
/// [`Event::Completed`] and [`Event::Progress`], and is what
/// [`ServerSession::cancel`] takes. The server's ids are its own, apart from
/// the client's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestHandle(i64);

impl RequestHandle {
    /// The JSON-RPC id the request went out with.
    pub fn id(self) -> RequestId {
        RequestId::Number(self.0)
    }
}

/// What the `initialize` handshake settled (MCP "Lifecycle").
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Handshake {
    /// The version the server answered.
    pub version: ProtocolVersion,
    /// The version the client asked for, verbatim (bounded to
    /// [`text::NAME_LIMIT`]).
    pub requested: String,
    /// Who the client is.
    pub client_info: Implementation,
    /// What the client can do.
    pub client_capabilities: ClientCapabilities,
}

/// Who sent a stateless-era request and what it can do, from the request's
/// own `_meta` (2026-07-28 "Base protocol" §Per-request metadata).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RequestClient {
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub capabilities: ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo`, when sent and readable.
    pub info: Option<Implementation>,
}

/// A request from the client for the application to answer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientRequest {
    /// The id to answer with.
    pub id: RequestId,
    /// The method, for example `tools/call`.
    pub method: String,
    /// Its parameters, as JSON text, checked when they are decoded.
    pub params: Option<RawJson>,
    /// The version the request speaks: the negotiated one in the handshake
    /// era, its own `_meta` version in the stateless era.
    pub version: ProtocolVersion,
    /// `_meta.progressToken`, when the client asked for progress; see
    /// [`ServerSession::progress`].
    pub progress_token: Option<ProgressToken>,
    /// In the stateless era, the client as the request describes it; in
    /// the handshake era, `None` (see [`ServerSession::handshake`]).
    pub client: Option<Box<RequestClient>>,
}

impl ClientRequest {
    /// The era the request speaks.
    pub fn era(&self) -> Era {
        self.version.era()
    }
}

/// Why a client request ended without the application's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancellation {
    /// The client sent `notifications/cancelled`, with its reason (bounded
    /// to [`text::ERROR_TEXT_LIMIT`]) if it gave one.
    ByClient(Option<String>),
    /// The session closed first.
    Closed,
}

/// Why a server request did not produce a result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The client answered with a JSON-RPC error.
    #[error("client error: {0}")]
    Rpc(ErrorObject),
    /// The deadline passed; `notifications/cancelled` was sent.
    #[error("request timed out")]
    Timeout,
    /// The application cancelled it; `notifications/cancelled` was sent.
    #[error("request cancelled")]
    Cancelled,
    /// The session closed before an answer came.
    #[error("connection closed")]
    Closed,
}

/// Why the session closed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CloseReason {
    /// The transport ended (the client hung up or the stream broke).
    #[error("transport closed")]
    TransportClosed,
    /// The application closed the session.
    #[error("closed by the server")]
    Local,
}

/// Something the application must act on or may want to know.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// `initialize` was answered; the handshake era is settled.
    Initialized(Box<Handshake>),
    /// `notifications/initialized` arrived: the server may send requests.
    Ready,
    /// A request to answer with [`ServerSession::respond`] or
    /// [`ServerSession::respond_error`].
    Request(ClientRequest),
    /// A request from [`Event::Request`] ended without an answer; answering
    /// it now is refused and nothing is sent.
    Cancelled {
        /// The request's id.
        id: RequestId,
        /// Why.
        reason: Cancellation,
    },
    /// A server request ended. Emitted exactly once per [`RequestHandle`].
    Completed {
        /// The request.
        handle: RequestHandle,
        /// Its result (raw JSON) or why it failed.
        outcome: Result<RawJson, RequestError>,
    },
    /// The client's progress on a server request whose params carried a
    /// progress token.
    Progress {
        /// The request.
        handle: RequestHandle,
        /// The notification's parameters.
        params: ProgressNotificationParams,
    },
    /// A client notification the session does not handle itself
    /// (`notifications/roots/list_changed`, for example).
    Notification(Notification),
    /// The client broke a rule in a way the session survived; for logs.
    Diagnostic(Diagnostic),
    /// The session ended. Emitted once; every request of both sides has
    /// already ended when it arrives.
    Closed(CloseReason),
}

/// A rule the client broke that the session survived.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Diagnostic {
    /// A request reused the id of one still waiting for an answer; it was
    /// dropped (an answer would be taken for the first one's).
    DuplicateRequestId(RequestId),
    /// A response whose id matches no request this session sent.
    UnknownResponseId(RequestId),
    /// An error response without an id (the client could not read something).
    ErrorWithoutId(ErrorObject),
    /// A notification the session handles had unreadable params.
    MalformedParams {
        /// The method.
        method: String,
        /// What was wrong (bounded).
        error: String,
    },
}

/// A command the session refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The session is closed.
    #[error("the session is closed")]
    Closed,
    /// The handshake has not finished: only `ping` may be sent before
    /// `notifications/initialized`.
    #[error("cannot send {method} before initialization finishes")]
    NotReady {
        /// The refused method.
        method: String,
    },
    /// Servers send no requests in the stateless era (2026-07-28 "Message
    /// patterns").
    #[error("cannot send {method}: servers send no requests in the stateless era")]
    NotInEra {
        /// The refused method.
        method: String,
    },
    /// The client did not declare the capability the request needs.
    #[error("the client does not support {method} (capability `{capability}` not declared)")]
    CapabilityNotDeclared {
        /// The refused method.
        method: String,
        /// The capability it needs, for example `roots`.
        capability: &'static str,
    },
    /// The method belongs to the session itself.
    #[error("{method} is sent by the session itself")]
    Reserved {
        /// The refused method.
        method: String,
    },
    /// No request with this id waits for an answer: it was never received,
    /// was answered already, or was cancelled ([`Event::Cancelled`]).
    #[error("no request {} is waiting for an answer", shown_id(.id))]
    UnknownRequest {
        /// The id given.
        id: RequestId,
    },
    /// The request asked for no progress (its params carry no progress token).
    #[error("request {} asked for no progress", shown_id(.id))]
    NoProgressToken {
        /// The id given.
        id: RequestId,
    },
    /// A value could not be encoded as JSON.
    #[error("cannot encode {what}")]
    Encode {
        /// What was being encoded (a method, or `response`).
        what: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
}

/// A peer's id as an error shows it: bounded and escaped.
fn shown_id(id: &RequestId) -> String {
    text::error_text(&id.to_string(), text::NAME_LIMIT).into_owned()
}

/// The server side of one MCP connection, without I/O. See the module docs.
pub struct ServerSession {
    options: ServerOptions,
    state: ServerState,
    handshake: Option<Box<Handshake>>,
    /// Whether a stateless-era request arrived: the server then sends none.
    stateless: bool,
    /// The client's requests waiting for the application, by their id (the
    /// client chooses these, so the map keeps std's hasher).
    in_flight: HashMap<RequestId, InFlight>,
    /// Open batches, by the session's own number.
    batches: HashMap<u64, Batch, IdBuildHasher>,
    next_batch: u64,
    /// The server's own requests waiting for the client.
    next_id: i64,
    pending: HashMap<i64, Pending, IdBuildHasher>,
    deadlines: BTreeSet<(Instant, i64)>,
    /// Progress tokens of the server's requests, to route the client's
    /// progress notifications.
    progress_tokens: HashMap<ProgressToken, i64>,
    transmit: VecDeque<Frame>,
    events: VecDeque<Event>,
}

struct InFlight {
    batch: Option<u64>,
    progress_token: Option<ProgressToken>,
}

struct Pending {
    deadline: Option<Instant>,
    progress_token: Option<ProgressToken>,
}

/// A batch being answered: its replies so far and how many of its requests
/// the application has still to end.
#[derive(Default)]
struct Batch {
    replies: Vec<Message>,
    waiting: usize,
    /// The batch's members are still being read.
    reading: bool,
}

impl fmt::Debug for ServerSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSession")
            .field("state", &self.state)
            .field("version", &self.handshake.as_ref().map(|h| h.version))
            .field("in_flight", &self.in_flight.len())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl ServerSession {
    /// A session waiting for its first message.
    pub fn new(options: ServerOptions) -> Self {
        ServerSession {
            options,
            state: ServerState::Idle,
            handshake: None,
            stateless: false,
            in_flight: HashMap::new(),
            batches: HashMap::default(),
            next_batch: 0,
            next_id: 0,
            pending: HashMap::default(),
            deadlines: BTreeSet::new(),
            progress_tokens: HashMap::new(),
            transmit: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// Where the session is.
    pub fn state(&self) -> ServerState {
        self.state
    }

    /// What the `initialize` handshake settled, once it has.
    pub fn handshake(&self) -> Option<&Handshake> {
        self.handshake.as_deref()
    }

    /// The options the session was created with.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// How many client requests wait for the application's answer.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// How many of the server's requests wait for the client's answer.
    pub fn pending_requests(&self) -> usize {
        self.pending.len()
    }

    /// Feeds one inbound frame as bytes (a line of newline-delimited JSON
    /// without its `\n`, an HTTP body). Bytes that are not one JSON-RPC
    /// message or batch are answered as JSON-RPC 2.0 §5.1 asks: `-32700`
    /// for text that is not JSON, `-32600` for anything else, a null id;
    /// so is a frame longer than [`ServerOptions::max_message_size`].
    pub fn handle_bytes(&mut self, now: Instant, bytes: &[u8]) {
        if self.state == ServerState::Closed {
            return;
        }
        if bytes.len() > self.options.max_message_size {
            let message = format!(
                "message of {} bytes exceeds the limit of {} bytes",
                bytes.len(),
                self.options.max_message_size
            );
            self.reply(
                None,
                Message::error(
                    None,
                    ErrorObject::new(error_codes::INVALID_REQUEST, message),
                ),
            );
            return;
        }
        let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
        if first != Some(b'[') {
            match Frame::from_slice(bytes) {
                Ok(frame) => self.handle_frame(now, frame),
                Err(error) => self.reply(None, Message::error(None, undecodable(&error))),
            }
            return;
        }
        // A batch is split first, so that each member that is not a
        // message gets its own error (JSON-RPC 2.0 §6).
        let members: Vec<Box<RawValue>> = match serde_json::from_slice(bytes) {
            Ok(members) => members,
            Err(error) => {
                self.reply(None, Message::error(None, undecodable(&error)));
                return;
            }
        };
        let members = members
            .iter()
            .map(
                |member| match serde_json::from_str::<Message>(member.get()) {
                    Ok(message) => Ok(message),
                    Err(error) => Err(undecodable(&error)),
                },
            )
            .collect();
        self.handle_batch(now, members);
    }

    /// Answers a frame the transport's decoder could not read (for example
    /// [`NdjsonError::to_error_object`](crate::codec::ndjson::NdjsonError::to_error_object):
    /// `-32700` for a line that is not JSON, `-32600` for one that is not a
    /// message or is too long) with `error`, its message bounded, and a
    /// null id (JSON-RPC 2.0 §5.1). The connection goes on.
    pub fn handle_undecodable(&mut self, error: ErrorObject) {
        if self.state == ServerState::Closed {
            return;
        }
        self.reply(None, Message::error(None, bounded(error)));
    }

    /// Feeds one decoded frame: a message or a batch.
    pub fn handle_frame(&mut self, now: Instant, frame: Frame) {
        match frame {
            Frame::Single(message) => self.handle_message(now, message),
            Frame::Batch(messages) => {
                self.handle_batch(now, messages.into_iter().map(Ok).collect())
            }
        }
    }

    /// Feeds one decoded message. Deadlines that passed by `now` are
    /// settled first, so that an answer that comes after its request's
    /// deadline never counts.
    pub fn handle_message(&mut self, now: Instant, message: Message) {
        if self.state == ServerState::Closed {
            return;
        }
        self.handle_timeout(now);
        self.on_message(message, None);
    }

    /// Tells the session the time is `now`: server requests whose deadline
    /// passed complete with [`RequestError::Timeout`] and are cancelled on
    /// the wire.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            if self.remove_pending(id).is_some() {
                self.send_cancelled(id, "timed out");
                self.events.push_back(Event::Completed {
                    handle: RequestHandle(id),
                    outcome: Err(RequestError::Timeout),
                });
            }
        }
    }

    /// Tells the session the transport ended.
    pub fn handle_close(&mut self) {
        self.close_with(CloseReason::TransportClosed);
    }

    /// Closes the session from the server's side.
    pub fn close(&mut self) {
        self.close_with(CloseReason::Local);
    }

    /// Answers a client request with a result. Refused, with nothing sent,
    /// when no request with this id waits for an answer (never received,
    /// answered already, or cancelled by the client).
    pub fn respond<R: Serialize + ?Sized>(
        &mut self,
        id: &RequestId,
        result: &R,
    ) -> Result<(), ServerError> {
        if !self.in_flight.contains_key(id) {
            return Err(ServerError::UnknownRequest { id: id.clone() });
        }
        let result = RawJson::encode(result).map_err(|source| ServerError::Encode {
            what: "response".to_owned(),
            source,
        })?;
        self.respond_raw(id, result)
    }

    /// Answers a client request with a result already encoded, which is
    /// sent as it is (a [`RawJson`] holds one JSON value by construction).
    /// Refused like [`ServerSession::respond`].
    pub fn respond_raw(&mut self, id: &RequestId, result: RawJson) -> Result<(), ServerError> {
        if !self.in_flight.contains_key(id) {
            return Err(ServerError::UnknownRequest { id: id.clone() });
        }
        self.end_request(
            id,
            Some(Message::Response(Response {
                id: id.clone(),
                result,
            })),
        );
        Ok(())
    }

    /// Answers a client request with an error; its message is bounded to
    /// [`text::ERROR_TEXT_LIMIT`]. Refused like [`ServerSession::respond`].
    pub fn respond_error(&mut self, id: &RequestId, error: ErrorObject) -> Result<(), ServerError> {
        if !self.in_flight.contains_key(id) {
            return Err(ServerError::UnknownRequest { id: id.clone() });
        }
        self.end_request(id, Some(Message::error(Some(id.clone()), bounded(error))));
        Ok(())
    }

    /// Sends `notifications/progress` for a client request that asked for
    /// progress, with its token (MCP "Utilities/Progress"; `progress` must
    /// grow from one notification to the next).
    pub fn progress(
        &mut self,
        id: &RequestId,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), ServerError> {
        let Some(request) = self.in_flight.get(id) else {
            return Err(ServerError::UnknownRequest { id: id.clone() });
        };
        let Some(token) = request.progress_token.clone() else {
            return Err(ServerError::NoProgressToken { id: id.clone() });
        };
        let params = ProgressNotificationParams {
            progress_token: token,
            progress,
            total,
            message: message.map(str::to_owned),
            meta: None,
            extra: JsonObject::default(),
        };
        self.send_notification(methods::NOTIFICATION_PROGRESS, Some(&params))
    }

    /// Sends a notification (list changes, log messages, resource updates).
    /// `notifications/cancelled` is the session's own (see
    /// [`ServerSession::cancel`]).
    pub fn notify<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), ServerError> {
        if method == methods::NOTIFICATION_CANCELLED {
            return Err(ServerError::Reserved {
                method: method.to_owned(),
            });
        }
        if self.state == ServerState::Closed {
            return Err(ServerError::Closed);
        }
        self.send_notification(method, params)
    }

    /// Sends a request to the client (`roots/list`, `sampling/createMessage`,
    /// `elicitation/create`, `ping`) with ids of the server's own; its end
    /// comes as [`Event::Completed`], at the latest at `deadline`. A
    /// `_meta.progressToken` in `params` routes the client's progress to
    /// [`Event::Progress`].
    ///
    /// Refused before `notifications/initialized` (but `ping`), on a
    /// connection that speaks the stateless era, and when the client did
    /// not declare the capability the method needs.
    pub fn request<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
        deadline: Option<Instant>,
    ) -> Result<RequestHandle, ServerError> {
        let refuse = |make: fn(String) -> ServerError| Err(make(method.to_owned()));
        if method == methods::INITIALIZE {
            return refuse(|method| ServerError::Reserved { method });
        }
        match self.state {
            ServerState::Closed => return Err(ServerError::Closed),
            ServerState::Idle if self.stateless => {
                return refuse(|method| ServerError::NotInEra { method });
            }
            ServerState::Idle => return refuse(|method| ServerError::NotReady { method }),
            ServerState::Initialized if method != methods::PING => {
                return refuse(|method| ServerError::NotReady { method });
            }
            ServerState::Initialized | ServerState::Ready => {}
        }
        if let Some(handshake) = &self.handshake
            && self.options.enforce_client_capabilities
        {
            check_client_capability(&handshake.client_capabilities, method)?;
        }
        let encode_error = |source| ServerError::Encode {
            what: method.to_owned(),
            source,
        };
        let params = params
            .map(RawJson::encode)
            .transpose()
            .map_err(encode_error)?;
        let progress_token = params.as_ref().and_then(|raw| envelope(raw).progress_token);
        let id = self.next_id;
        // Ids are never reused on a connection (MCP "Base Protocol").
        self.next_id = self.next_id.saturating_add(1);
        if let Some(deadline) = deadline {
            self.deadlines.insert((deadline, id));
        }
        if let Some(token) = &progress_token {
            self.progress_tokens.insert(token.clone(), id);
        }
        self.pending.insert(
            id,
            Pending {
                deadline,
                progress_token,
            },
        );
        self.transmit
            .push_back(Frame::Single(Message::Request(Request {
                id: RequestId::Number(id),
                method: method.to_owned(),
                params,
            })));
        Ok(RequestHandle(id))
    }

    /// Withdraws a server request: it completes with
    /// [`RequestError::Cancelled`] and `notifications/cancelled` is sent.
    /// Returns false when the request already ended (nothing is sent then).
    pub fn cancel(&mut self, handle: RequestHandle, reason: Option<&str>) -> bool {
        if self.remove_pending(handle.0).is_none() {
            return false;
        }
        self.send_cancelled(handle.0, reason.unwrap_or("cancelled by the server"));
        self.events.push_back(Event::Completed {
            handle,
            outcome: Err(RequestError::Cancelled),
        });
        true
    }

    /// The next frame to send: a message, or the answer to a batch.
    pub fn poll_transmit(&mut self) -> Option<Frame> {
        self.transmit.pop_front()
    }

    /// The earliest deadline of a server request; call
    /// [`ServerSession::handle_timeout`] then.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(deadline, _)| deadline)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // --- inbound ----------------------------------------------------------

    fn handle_batch(&mut self, now: Instant, members: Vec<Result<Message, ErrorObject>>) {
        if self.state == ServerState::Closed {
            return;
        }
        if members.is_empty() {
            let error = ErrorObject::new(error_codes::INVALID_REQUEST, "empty batch");
            self.reply(None, Message::error(None, error));
            return;
        }
        if !self.accepts_batches() {
            let speaks = match (&self.handshake, self.stateless) {
                (Some(h), _) => h.version.as_str(),
                (None, true) => ProtocolVersion::LATEST_MODERN.as_str(),
                (None, false) => "a version without them",
            };
            let message = format!(
                "JSON-RPC batches exist only in protocol version 2025-03-26; this connection speaks {speaks}"
            );
            let error = ErrorObject::new(error_codes::INVALID_REQUEST, message);
            self.reply(None, Message::error(None, error));
            return;
        }
        self.handle_timeout(now);
        let batch = self.next_batch;
        self.next_batch = self.next_batch.wrapping_add(1);
        self.batches.insert(
            batch,
            Batch {
                reading: true,
                ..Batch::default()
            },
        );
        for member in members {
            match member {
                Ok(message) => self.on_message(message, Some(batch)),
                Err(error) => self.reply(Some(batch), Message::error(None, error)),
            }
            if self.state == ServerState::Closed {
                return;
            }
        }
        if let Some(open) = self.batches.get_mut(&batch) {
            open.reading = false;
        }
        self.flush_batch(batch);
    }

    fn accepts_batches(&self) -> bool {
        match (&self.handshake, self.stateless) {
            (Some(handshake), _) => handshake.version.accepts_batches(),
            (None, true) => false,
            (None, false) => self.options.versions.iter().any(|v| v.accepts_batches()),
        }
    }

    fn on_message(&mut self, message: Message, batch: Option<u64>) {
        match message {
            Message::Request(request) => self.on_request(request, batch),
            Message::Notification(notification) => self.on_notification(notification),
            Message::Response(response) => self.on_response(response.id, Ok(response.result)),
            Message::Error(error) => match error.id {
                Some(id) => self.on_response(id, Err(error.error)),
                None => self
                    .events
                    .push_back(Event::Diagnostic(Diagnostic::ErrorWithoutId(error.error))),
            },
        }
    }

    fn on_request(&mut self, request: Request, batch: Option<u64>) {
        if self.in_flight.contains_key(&request.id) {
            self.events
                .push_back(Event::Diagnostic(Diagnostic::DuplicateRequestId(
                    request.id,
                )));
            return;
        }
        let envelope = request.params.as_ref().map(envelope).unwrap_or_default();
        let claimed = envelope.version.as_ref().filter(|claimed| {
            // `initialize` is the handshake whatever its `_meta` says, and a
            // handshake-era client that repeats its negotiated version in
            // `_meta` is still in the handshake era. Once initialized, a
            // server that speaks only the handshake era reads every request
            // in the version it negotiated: a `_meta` key it does not know
            // is the client's own data there ("Basic" §_meta), as an
            // intermediary that passes a stateless client's `_meta` on
            // would send it.
            request.method != methods::INITIALIZE
                && self.handshake.as_ref().is_none_or(|h| {
                    h.version.as_str() != claimed.as_str() && self.offers(Era::Modern)
                })
        });
        // A server of the handshake era only that answers `server/discover`
        // itself gets it whatever version its `_meta` names.
        let discover_unknown = request.method == methods::SERVER_DISCOVER
            && !self.options.answer_discover
            && !self.offers(Era::Modern);
        if let Some(claimed) = claimed.filter(|_| !discover_unknown) {
            return self.on_stateless_request(request, batch, claimed.clone(), envelope);
        }
        let id = request.id.clone();
        match request.method.as_str() {
            methods::SERVER_DISCOVER if self.options.answer_discover => {
                return self.answer_discover(id, batch);
            }
            methods::SERVER_DISCOVER => {
                let version = self
                    .newest(Era::Modern)
                    .or(self.newest(Era::Legacy))
                    .unwrap_or(ProtocolVersion::LATEST_MODERN);
                return self.admit(request, batch, version, envelope.progress_token, None);
            }
            methods::INITIALIZE => return self.on_initialize(request, batch),
            // MCP "Utilities/Ping": answered in any state of the handshake era.
            methods::PING => {
                let result = RawJson::from(empty_object());
                return self.reply(batch, Message::Response(Response { id, result }));
            }
            _ => {}
        }
        let Some(version) = self.handshake.as_ref().map(|h| h.version) else {
            let error = if self.offers(Era::Legacy) {
                ErrorObject::new(
                    error_codes::INVALID_REQUEST,
                    format!(
                        "{} before initialize: the server is not initialized",
                        text::bound(&request.method, text::NAME_LIMIT)
                    ),
                )
            } else {
                ErrorObject::invalid_params(format!(
                    "_meta needs {} (this server speaks only the stateless era)",
                    meta::PROTOCOL_VERSION
                ))
            };
            return self.reply(batch, Message::error(Some(id), error));
        };
        if let Err(error) = self.check_method(&request.method, Era::Legacy) {
            return self.reply(batch, Message::error(Some(id), error));
        }
        self.admit(request, batch, version, envelope.progress_token, None);
    }

    /// A request that announces its version in `_meta` (2026-07-28 "Base
    /// protocol" §Per-request metadata).
    fn on_stateless_request(
        &mut self,
        request: Request,
        batch: Option<u64>,
        claimed: String,
        envelope: Envelope,
    ) {
        let id = request.id.clone();
        let version = ProtocolVersion::parse(&claimed)
            .filter(|v| v.era() == Era::Modern && self.options.versions.contains(v));
        let Some(version) = version else {
            let error = self.unsupported_version(&claimed);
            return self.reply(batch, Message::error(Some(id), error));
        };
        let Some(capabilities) =
            Envelope::text(request.params.as_ref(), envelope.client_capabilities)
                .filter(|raw| raw.starts_with('{'))
        else {
            let error = ErrorObject::invalid_params(format!(
                "_meta needs {} (an object; {{}} for none) beside the protocol version",
                meta::CLIENT_CAPABILITIES
            ));
            return self.reply(batch, Message::error(Some(id), error));
        };
        // None declared (`{}`, as most clients send) needs no decoding.
        let decoded = if capabilities == "{}" {
            Ok(ClientCapabilities::default())
        } else {
            serde_json::from_str::<ClientCapabilities>(capabilities)
        };
        let capabilities = match decoded {
            Ok(capabilities) => capabilities,
            Err(error) => {
                let error = ErrorObject::invalid_params(format!(
                    "invalid {}: {}",
                    meta::CLIENT_CAPABILITIES,
                    text::bound(&error.to_string(), text::ERROR_TEXT_LIMIT)
                ));
                return self.reply(batch, Message::error(Some(id), error));
            }
        };
        self.stateless = true;
        let discover = request.method == methods::SERVER_DISCOVER;
        if discover && self.options.answer_discover {
            return self.answer_discover(id, batch);
        }
        if let (false, Err(error)) = (discover, self.check_method(&request.method, Era::Modern)) {
            return self.reply(batch, Message::error(Some(id), error));
        }
        let info =
            Envelope::text(request.params.as_ref(), envelope.client_info).and_then(client_info);
        let client = Box::new(RequestClient { capabilities, info });
        self.admit(
            request,
            batch,
            version,
            envelope.progress_token,
            Some(client),
        );
    }

    /// Hands a request to the application, within the in-flight cap.
    fn admit(
        &mut self,
        request: Request,
        batch: Option<u64>,
        version: ProtocolVersion,
        progress_token: Option<ProgressToken>,
        client: Option<Box<RequestClient>>,
    ) {
        let Request { id, method, params } = request;
        if self.in_flight.len() >= self.options.max_in_flight {
            let error = ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!(
                    "too many requests in flight (at most {}); try again when one has ended",
                    self.options.max_in_flight
                ),
            );
            return self.reply(batch, Message::error(Some(id), error));
        }
        if let Some(open) = batch.and_then(|b| self.batches.get_mut(&b)) {
            open.waiting += 1;
        }
        self.in_flight.insert(
            id.clone(),
            InFlight {
                batch,
                progress_token: progress_token.clone(),
            },
        );
        self.events.push_back(Event::Request(ClientRequest {
            id,
            method,
            params,
            version,
            progress_token,
            client,
        }));
    }

    /// Whether the application answers `method` in `era`: an MCP client
    /// request whose capability the server declared, or one of
    /// [`ServerOptions::extra_methods`]. Else `-32601` with the name bounded.
    fn check_method(&self, method: &str, era: Era) -> Result<(), ErrorObject> {
        let caps = &self.options.capabilities;
        let served = match method {
            methods::TOOLS_LIST | methods::TOOLS_CALL => caps.tools.is_some(),
            methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ => caps.resources.is_some(),
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                era == Era::Legacy
                    && caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true)
            }
            methods::PROMPTS_LIST | methods::PROMPTS_GET => caps.prompts.is_some(),
            methods::LOGGING_SET_LEVEL => era == Era::Legacy && caps.logging.is_some(),
            methods::COMPLETION_COMPLETE => caps.completions.is_some(),
            methods::SKILLS_LIST | methods::SKILLS_GET | methods::RESOURCES_DIRECTORY_READ => {
                caps.skills().is_some()
            }
            methods::SUBSCRIPTIONS_LISTEN => era == Era::Modern,
            methods::INITIALIZE | methods::PING => false,
            m if m.starts_with("tasks/") => caps.tasks.is_some(),
            m => self.options.extra_methods.iter().any(|extra| extra == m),
        };
        if served {
            Ok(())
        } else {
            Err(ErrorObject::method_not_found(&text::error_text(
                method,
                text::NAME_LIMIT,
            )))
        }
    }

    /// `initialize` (MCP "Lifecycle" §Initialization, §Version Negotiation).
    fn on_initialize(&mut self, request: Request, batch: Option<u64>) {
        let id = request.id;
        let refuse =
            |this: &mut Self, error| this.reply(batch, Message::error(Some(id.clone()), error));
        if self.state != ServerState::Idle {
            let error = ErrorObject::new(
                error_codes::INVALID_REQUEST,
                "initialize was already received on this connection",
            );
            return refuse(self, error);
        }
        if batch.is_some() {
            let error = ErrorObject::new(
                error_codes::INVALID_REQUEST,
                "initialize must not be part of a JSON-RPC batch",
            );
            return refuse(self, error);
        }
        let params: InitializeRequestParams = match request.params.as_ref() {
            Some(raw) => match raw.decode() {
                Ok(params) => params,
                Err(error) => {
                    let message = format!(
                        "invalid initialize params: {}",
                        text::bound(&error.to_string(), text::ERROR_TEXT_LIMIT)
                    );
                    return refuse(self, ErrorObject::invalid_params(message));
                }
            },
            None => return refuse(self, ErrorObject::invalid_params("initialize needs params")),
        };
        let offered = self.newest(Era::Legacy);
        let version = ProtocolVersion::parse(&params.protocol_version)
            .filter(|v| v.uses_handshake() && self.options.versions.contains(v))
            .or(offered);
        let Some(version) = version else {
            let error = self.unsupported_version(&params.protocol_version);
            return refuse(self, error);
        };
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: self.options.capabilities.clone(),
            server_info: self.options.server_info.clone(),
            instructions: self.options.instructions.clone(),
            meta: None,
            extra: JsonObject::default(),
        };
        let result = match RawJson::encode(&result) {
            Ok(result) => result,
            Err(error) => {
                let error = ErrorObject::new(error_codes::INTERNAL_ERROR, error.to_string());
                return refuse(self, error);
            }
        };
        self.state = ServerState::Initialized;
        let handshake = Box::new(Handshake {
            version,
            requested: text::bound(&params.protocol_version, text::NAME_LIMIT).into_owned(),
            client_info: params.client_info,
            client_capabilities: params.capabilities,
        });
        self.handshake = Some(handshake.clone());
        self.reply(batch, Message::Response(Response { id, result }));
        self.events.push_back(Event::Initialized(handshake));
    }

    /// `server/discover` (2026-07-28 "Versioning"): what the server speaks
    /// and offers, or `-32601` from a server that offers no stateless-era
    /// version (as a handshake-era server that does not know the method).
    fn answer_discover(&mut self, id: RequestId, batch: Option<u64>) {
        if !self.offers(Era::Modern) {
            let error = ErrorObject::method_not_found(methods::SERVER_DISCOVER);
            return self.reply(batch, Message::error(Some(id), error));
        }
        let mut server_meta = JsonObject::default();
        if let Ok(info) = serde_json::to_value(&self.options.server_info) {
            server_meta.insert(meta::SERVER_INFO.to_owned(), info);
        }
        let result = DiscoverResult {
            supported_versions: self.supported_list(),
            capabilities: self.options.capabilities.clone(),
            instructions: self.options.instructions.clone(),
            meta: Some(Meta::from(server_meta)),
            ttl_ms: self.options.discover_ttl_ms.map(Into::into),
            cache_scope: self.options.discover_cache_scope.clone(),
            ..DiscoverResult::default()
        };
        let message = match Message::response(id.clone(), &result) {
            Ok(message) => message,
            Err(error) => Message::error(
                Some(id),
                ErrorObject::new(error_codes::INTERNAL_ERROR, error.to_string()),
            ),
        };
        self.reply(batch, message);
    }

    fn on_notification(&mut self, notification: Notification) {
        match notification.method.as_str() {
            methods::NOTIFICATION_INITIALIZED => {
                if self.state == ServerState::Initialized {
                    self.state = ServerState::Ready;
                    self.events.push_back(Event::Ready);
                }
            }
            methods::NOTIFICATION_CANCELLED => {
                // MCP "Utilities/Cancellation": an unknown or finished
                // request is ignored, and a malformed notice is no error.
                let Ok(params) = decode_params::<CancelledNotificationParams>(&notification) else {
                    return;
                };
                let Some(id) = params.request_id else {
                    return;
                };
                if !self.in_flight.contains_key(&id) {
                    return;
                }
                self.end_request(&id, None);
                let reason = params
                    .reason
                    .map(|r| text::bound(&r, text::ERROR_TEXT_LIMIT).into_owned());
                self.events.push_back(Event::Cancelled {
                    id,
                    reason: Cancellation::ByClient(reason),
                });
            }
            methods::NOTIFICATION_PROGRESS => {
                match decode_params::<ProgressNotificationParams>(&notification) {
                    Ok(params) => {
                        if let Some(&id) = self.progress_tokens.get(&params.progress_token) {
                            self.events.push_back(Event::Progress {
                                handle: RequestHandle(id),
                                params,
                            });
                        }
                    }
                    Err(error) => self.malformed(notification.method, error),
                }
            }
            _ => self.events.push_back(Event::Notification(notification)),
        }
    }

    fn on_response(&mut self, id: RequestId, outcome: Result<RawJson, ErrorObject>) {
        let number = match id {
            RequestId::Number(number) if self.pending.contains_key(&number) => number,
            // A late answer to a request that timed out or was cancelled is
            // expected and dropped (MCP "Utilities/Cancellation").
            RequestId::Number(number) if (0..self.next_id).contains(&number) => return,
            other => {
                self.events
                    .push_back(Event::Diagnostic(Diagnostic::UnknownResponseId(other)));
                return;
            }
        };
        self.remove_pending(number);
        self.events.push_back(Event::Completed {
            handle: RequestHandle(number),
            outcome: outcome.map_err(RequestError::Rpc),
        });
    }

    fn malformed(&mut self, method: String, error: serde_json::Error) {
        let error = text::bound(&error.to_string(), text::ERROR_TEXT_LIMIT).into_owned();
        self.events
            .push_back(Event::Diagnostic(Diagnostic::MalformedParams {
                method,
                error,
            }));
    }

    // --- outbound ---------------------------------------------------------

    /// Queues `message`: into its batch's answer, or on its own.
    fn reply(&mut self, batch: Option<u64>, message: Message) {
        match batch.and_then(|b| self.batches.get_mut(&b)) {
            Some(open) => open.replies.push(message),
            None => self.transmit.push_back(Frame::Single(message)),
        }
    }

    /// Ends a client request: with its answer, or (cancelled, closed) with none.
    fn end_request(&mut self, id: &RequestId, answer: Option<Message>) {
        let Some(request) = self.in_flight.remove(id) else {
            return;
        };
        if let Some(answer) = answer {
            self.reply(request.batch, answer);
        }
        if let Some(batch) = request.batch {
            if let Some(open) = self.batches.get_mut(&batch) {
                open.waiting = open.waiting.saturating_sub(1);
            }
            self.flush_batch(batch);
        }
    }

    /// Sends a batch's answer once it is read and every request in it ended
    /// (JSON-RPC 2.0 §6: one array, and nothing when nothing is to be said).
    fn flush_batch(&mut self, batch: u64) {
        let done = self
            .batches
            .get(&batch)
            .is_some_and(|open| !open.reading && open.waiting == 0);
        if !done {
            return;
        }
        if let Some(open) = self.batches.remove(&batch)
            && !open.replies.is_empty()
        {
            self.transmit.push_back(Frame::Batch(open.replies));
        }
    }

    fn send_notification<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), ServerError> {
        let params =
            params
                .map(RawJson::encode)
                .transpose()
                .map_err(|source| ServerError::Encode {
                    what: method.to_owned(),
                    source,
                })?;
        self.transmit
            .push_back(Frame::Single(Message::Notification(Notification {
                method: method.to_owned(),
                params,
            })));
        Ok(())
    }

    fn send_cancelled(&mut self, id: i64, reason: &str) {
        let params = CancelledNotificationParams {
            request_id: Some(RequestId::Number(id)),
            reason: Some(reason.to_owned()),
            meta: None,
            extra: JsonObject::default(),
        };
        // Plain data with string keys: encoding does not fail.
        let _ = self.send_notification(methods::NOTIFICATION_CANCELLED, Some(&params));
    }

    fn remove_pending(&mut self, id: i64) -> Option<Pending> {
        let pending = self.pending.remove(&id)?;
        if let Some(deadline) = pending.deadline {
            self.deadlines.remove(&(deadline, id));
        }
        if let Some(token) = &pending.progress_token {
            self.progress_tokens.remove(token);
        }
        Some(pending)
    }

    fn close_with(&mut self, reason: CloseReason) {
        if self.state == ServerState::Closed {
            return;
        }
        self.state = ServerState::Closed;
        self.transmit.clear();
        self.batches.clear();
        self.deadlines.clear();
        self.progress_tokens.clear();
        let mut ids: Vec<i64> = self.pending.drain().map(|(id, _)| id).collect();
        ids.sort_unstable();
        for id in ids {
            self.events.push_back(Event::Completed {
                handle: RequestHandle(id),
                outcome: Err(RequestError::Closed),
            });
        }
        let requests: Vec<RequestId> = self.in_flight.drain().map(|(id, _)| id).collect();
        for id in requests {
            self.events.push_back(Event::Cancelled {
                id,
                reason: Cancellation::Closed,
            });
        }
        self.events.push_back(Event::Closed(reason));
    }

    // --- versions ---------------------------------------------------------

    fn offers(&self, era: Era) -> bool {
        self.options.versions.iter().any(|v| v.era() == era)
    }

    fn newest(&self, era: Era) -> Option<ProtocolVersion> {
        self.options
            .versions
            .iter()
            .copied()
            .filter(|v| v.era() == era)
            .max()
    }

    /// Every version offered, newest first, as the wire writes them.
    fn supported_list(&self) -> Vec<String> {
        let mut versions = self.options.versions.clone();
        versions.sort_by(|a, b| b.cmp(a));
        versions.dedup();
        versions.iter().map(|v| v.as_str().to_owned()).collect()
    }

    /// `-32022 UnsupportedProtocolVersion` (2026-07-28 "Versioning"),
    /// naming the version asked for (bounded) and the ones offered, in the
    /// message and in `data`.
    fn unsupported_version(&self, requested: &str) -> ErrorObject {
        let requested = text::error_text(requested, text::NAME_LIMIT);
        let supported = self.supported_list();
        let mut error = ErrorObject::new(
            error_codes::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "unsupported protocol version {requested:?}; this server supports {}",
                supported.join(", ")
            ),
        );
        error.data = crate::jsonrpc::to_raw(&serde_json::json!({
            "supported": supported,
            "requested": requested,
        }))
        .ok();
        error
    }
}

/// The error for bytes that are not a JSON-RPC message (JSON-RPC 2.0 §5.1):
/// `-32700` for text that is not JSON, `-32600` for JSON that is not a
/// message. The decoder's words are bounded.
fn undecodable(error: &serde_json::Error) -> ErrorObject {
    let (code, what) = if error.is_data() {
        (error_codes::INVALID_REQUEST, "invalid request")
    } else {
        (error_codes::PARSE_ERROR, "parse error")
    };
    let detail = error.to_string();
    ErrorObject::new(
        code,
        format!("{what}: {}", text::bound(&detail, text::ERROR_TEXT_LIMIT)),
    )
}

/// `error` with its message bounded to [`text::ERROR_TEXT_LIMIT`].
fn bounded(mut error: ErrorObject) -> ErrorObject {
    if error.message.len() > text::ERROR_TEXT_LIMIT {
        error.message = text::bound(&error.message, text::ERROR_TEXT_LIMIT).into_owned();
    }
    error
}

/// Which client capability a server request needs (MCP "Client Features").
fn check_client_capability(caps: &ClientCapabilities, method: &str) -> Result<(), ServerError> {
    let missing = |capability| {
        Err(ServerError::CapabilityNotDeclared {
            method: method.to_owned(),
            capability,
        })
    };
    match method {
        methods::ROOTS_LIST if caps.roots.is_none() => missing("roots"),
        methods::SAMPLING_CREATE_MESSAGE if caps.sampling.is_none() => missing("sampling"),
        methods::ELICITATION_CREATE if caps.elicitation.is_none() => missing("elicitation"),
        _ => Ok(()),
    }
}

/// What a request's `params._meta` says of the request's era and client
/// (2026-07-28 "Base protocol" §Per-request metadata). The client's
/// capabilities and description are kept as where their text lies in the
/// params (byte ranges), read only once the version is accepted.
#[derive(Default)]
struct Envelope {
    version: Option<String>,
    client_capabilities: Option<(usize, usize)>,
    client_info: Option<(usize, usize)>,
    progress_token: Option<ProgressToken>,
}

impl Envelope {
    /// The text of a member `range` notes, in the params it was read from.
    fn text(params: Option<&RawJson>, range: Option<(usize, usize)>) -> Option<&str> {
        let (start, end) = range?;
        params?.get().get(start..end)
    }
}

#[derive(Deserialize)]
struct ParamsMeta<'a> {
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<MetaMembers<'a>>,
}

/// The members of `_meta` the session reads, borrowed from the params;
/// the others are stepped over without being built.
#[derive(Deserialize)]
struct MetaMembers<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default, borrow)]
    version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default, borrow)]
    client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default, borrow)]
    client_info: Option<&'a RawValue>,
    #[serde(rename = "progressToken", default, borrow)]
    progress_token: Option<&'a RawValue>,
}

/// `io.modelcontextprotocol/clientInfo`, or `None` when it is not a
/// description. Most clients send only a name and a version as plain
/// strings: those are read by the scanner and built without serde's
/// buffering of the struct's flattened members; anything else is decoded
/// by serde, to the same value.
fn client_info(text: &str) -> Option<Implementation> {
    use std::ops::ControlFlow;
    let (mut name, mut version, mut other) = (None, None, false);
    let scanned = crate::scan::each_member(text.as_bytes(), 0, |key, _, value| {
        let slot = match key {
            b"name" => &mut name,
            b"version" => &mut version,
            _ => {
                other = true;
                return ControlFlow::Break(());
            }
        };
        if slot.replace(value).is_some() {
            other = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    let plain = |range: Option<(usize, usize)>| {
        range
            .and_then(|(start, end)| text.get(start..end))
            .and_then(crate::jsonrpc::plain_string)
    };
    if scanned.is_some()
        && !other
        && let (Some(name), Some(version)) = (plain(name), plain(version))
    {
        return Some(Implementation::new(name, version));
    }
    serde_json::from_str::<Implementation>(text).ok()
}

/// The byte range `part` (a slice of `text`) takes in `text`.
fn range_in(text: &str, part: &str) -> (usize, usize) {
    let start = (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    (start, start + part.len())
}

/// Reads `params._meta`. Params without `_meta` (spelt out or escaped) are
/// not decoded a second time; params that are not an object, or whose
/// `_meta` is not one, have no envelope (the application's decoding says
/// what is wrong with them), and neither have params that repeat `_meta`
/// or one of the members read here.
///
/// The structural scanner steps through the params once and through
/// `_meta` once, building nothing; params it cannot step through as they
/// are (escaped keys) are read by serde instead, to the same envelope.
fn envelope(params: &RawJson) -> Envelope {
    let text = params.get();
    if !(text.contains("_meta") || text.contains("\\u")) {
        return Envelope::default();
    }
    let members = scanned_members(text).or_else(|| decoded_members(text));
    let Some(m) = members else {
        return Envelope::default();
    };
    let slice = |range: Option<(usize, usize)>| range.and_then(|(s, e)| text.get(s..e));
    // A version that is not a string is named by its JSON text, and refused
    // as a version nobody speaks.
    let version = slice(m.version).map(|raw| match crate::jsonrpc::plain_string(raw) {
        Some(plain) => plain.to_owned(),
        None => serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_owned()),
    });
    Envelope {
        version,
        client_capabilities: m.client_capabilities,
        client_info: m.client_info,
        progress_token: slice(m.progress_token).and_then(|token| serde_json::from_str(token).ok()),
    }
}

/// Where the members of `_meta` the session reads lie in the params text.
#[derive(Default)]
struct MetaRanges {
    version: Option<(usize, usize)>,
    client_capabilities: Option<(usize, usize)>,
    client_info: Option<(usize, usize)>,
    progress_token: Option<(usize, usize)>,
}

/// [`MetaRanges`] by the structural scanner: `None` when it cannot step
/// through the params as they are (then serde reads them), `Some` of no
/// ranges when they have no usable `_meta`.
fn scanned_members(text: &str) -> Option<MetaRanges> {
    let bytes = text.as_bytes();
    let start = crate::scan::skip_space(bytes, 0);
    if bytes.get(start) != Some(&b'{') {
        return Some(MetaRanges::default());
    }
    let Some((meta_start, _)) = crate::scan::sole_member(bytes, start, b"_meta")? else {
        return Some(MetaRanges::default());
    };
    if bytes.get(meta_start) != Some(&b'{') {
        return Some(MetaRanges::default());
    }
    let mut ranges = MetaRanges::default();
    let mut repeated = false;
    crate::scan::each_member(bytes, meta_start, |key, _, value| {
        let slot = match key {
            b"io.modelcontextprotocol/protocolVersion" => &mut ranges.version,
            b"io.modelcontextprotocol/clientCapabilities" => &mut ranges.client_capabilities,
            b"io.modelcontextprotocol/clientInfo" => &mut ranges.client_info,
            b"progressToken" => &mut ranges.progress_token,
            _ => return std::ops::ControlFlow::Continue(()),
        };
        if slot.replace(value).is_some() {
            repeated = true;
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    })?;
    Some(if repeated {
        MetaRanges::default()
    } else {
        ranges
    })
}

/// [`MetaRanges`] by serde, for params the scanner does not step through.
fn decoded_members(text: &str) -> Option<MetaRanges> {
    let Ok(ParamsMeta { meta: Some(m) }) = serde_json::from_str::<ParamsMeta<'_>>(text) else {
        return Some(MetaRanges::default());
    };
    let range = |raw: Option<&RawValue>| raw.map(|raw| range_in(text, raw.get()));
    Some(MetaRanges {
        version: range(m.version),
        client_capabilities: range(m.client_capabilities),
        client_info: range(m.client_info),
        progress_token: range(m.progress_token),
    })
}

fn decode_params<T: serde::de::DeserializeOwned>(
    notification: &Notification,
) -> Result<T, serde_json::Error> {
    match &notification.params {
        Some(raw) => raw.decode(),
        None => serde_json::from_str("{}"),
    }
}

#[cfg(test)]
mod tests;

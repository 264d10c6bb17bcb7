//! The state an HTTP transport shares with its background tasks: mode, session, limits, tasks, and how one outgoing message is classified.
//!
//! [`Shared`] is what the transport object (`engine`) and the exchange
//! modules (`streamable` for Streamable HTTP, `legacy_sse` for HTTP+SSE)
//! have in common: each of them uses it, and it uses none of them.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderValue;
use http::header::{HeaderMap, HeaderName};
use mcp_proto::session::IdBuildHasher;
use mcp_proto::{Frame, Message, ProtocolVersion, RequestId};
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinSet};
use url::Url;

use super::body::BodyBuffers;
use super::client::HttpClient;
use crate::transport::{FrameSink, Inbound, TransportError};

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

/// Room for a stateless-era POST's headers: the era's own (version, method,
/// name) and the `Accept` and `Content-Type` the POST adds to the same map,
/// so that it is not grown on the way (a tool's `Mcp-Param-*` headers may
/// grow it). `http` makes room for 8 entries for this, within glibc's
/// per-thread cache; room for 8 made room for 16, whose 1.6 KB took
/// glibc's slower path. The request's copy of the map then grows once when
/// hyper adds its own headers, which costs less: about 620 instructions
/// fewer per stateless-era echo over HTTP (measured with callgrind).
const POST_HEADERS: usize = 6;

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
    pub(super) fn new(message: &Message) -> Self {
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
    pub(super) inbound: mpsc::UnboundedSender<Inbound>,
    /// Where inbound frames go instead of `inbound`, once the client has
    /// asked for it (`TransportExtensions::set_frame_sink`); never unset.
    pub(super) sink: OnceLock<Arc<dyn FrameSink>>,
    /// Held while a frame is queued on `inbound` for want of a sink, and
    /// while the sink is set: a frame is either queued before the sink is
    /// set (which then sees it and is refused) or handed to the sink.
    pub(super) sink_gate: Mutex<()>,
    pub(super) mode: watch::Sender<Mode>,
    /// How many answers messages after `notifications/initialized` still
    /// wait for: that POST's and the GET stream's (see
    /// [`Shared::wait_listener`]); 0 is open.
    pub(super) listener_gate: watch::Sender<u8>,
    pub(super) session: Mutex<Session>,
    pub(super) tasks: Mutex<Tasks>,
    /// `Closed` has been queued; sends fail from now on.
    pub(super) closed: AtomicBool,
    /// Stateless era: the POST task of each request in flight, so that a
    /// cancel closes its response stream. Keyed by our own request ids, so
    /// hashed with the session's id hasher rather than SipHash (SipHash
    /// here and for `tool_headers` cost about 560 instructions of a
    /// stateless-era echo over HTTP, measured with callgrind).
    pub(super) inflight: Mutex<HashMap<RequestId, AbortHandle, IdBuildHasher>>,
    /// Stateless era: the `Mcp-Param-*` headers of each tool that has any.
    /// Looked up by name on every call; the names are the server's, so
    /// ordered rather than hashed with a hasher a peer could flood, and a
    /// few string comparisons cost less than SipHash's set-up.
    pub(super) tool_headers: Mutex<BTreeMap<String, mcp_proto::headers::ToolParamHeaders>>,
    /// The buffers JSON response bodies are read into, reused.
    pub(crate) bodies: BodyBuffers,
    /// The era probe was refused as a handshake-era server refuses it, or
    /// not sent because the endpoint is remembered as one: a handshake that
    /// then succeeds lists the endpoint ([`super::eras`]).
    pub(super) handshake_era: AtomicBool,
    /// The era probe was not sent because the endpoint is remembered as
    /// handshake-era: a 400 to the `initialize` that went first may carry
    /// the server's JSON-RPC answer (a -32022 from a server that moved to
    /// the 2026-07-28 era).
    pub(super) probe_skipped: AtomicBool,
}

/// The longest a message waits for the GET stream to be opened (see
/// [`Shared::wait_listener`]); past it the message goes anyway.
const LISTENER_GATE_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Default)]
pub(super) struct Session {
    /// Secret: marked sensitive, never logged.
    id: Option<HeaderValue>,
    pub(super) version: Option<ProtocolVersion>,
    /// Bumped by every `initialize`, so that a GET stream of an old session
    /// stops reconnecting.
    pub(super) generation: u64,
    /// The GET stream task of the current session.
    pub(super) listener: Option<AbortHandle>,
    /// Auto mode: the probing `initialize` is in flight.
    probing: bool,
}

pub(super) struct Tasks {
    pub(super) set: JoinSet<()>,
    /// No task may start any more (closed or dropped).
    pub(super) closed: bool,
}

impl Shared {
    /// Hands one inbound frame on: to the client's sink when it set one,
    /// from the task that read the frame (the caller waiting for a response
    /// is woken from here, without a hop through the client's driver),
    /// else to the queue `recv` reads. The caller holds none of this
    /// transport's locks: the sink may send (the client's `kick`), which
    /// takes them.
    pub(crate) fn push_frame(&self, frame: Frame) {
        if let Some(sink) = self.sink.get() {
            sink.frames(&mut std::iter::once(frame));
            return;
        }
        let queueing = lock(&self.sink_gate);
        match self.sink.get() {
            Some(sink) => {
                drop(queueing);
                sink.frames(&mut std::iter::once(frame));
            }
            None => {
                let _ = self.inbound.send(Inbound::Frame(frame));
            }
        }
    }

    /// Says, after the frames before it, that the server ended request
    /// `id`'s SSE stream before its answer and that it is resumed after
    /// `retry` ([`Inbound::StreamPaused`]).
    pub(crate) fn stream_paused(&self, id: RequestId, retry: std::time::Duration) {
        let _ = self.inbound.send(Inbound::StreamPaused { id, retry });
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

    /// Waits (at most [`LISTENER_GATE_TIMEOUT`]) until the
    /// `notifications/initialized` POST and the GET stream opened beside it
    /// have both been answered. Servers (the TypeScript SDK's among them)
    /// send requests that belong to no client request, such as an
    /// elicitation from inside a tool, on the GET stream and drop them when
    /// it is not open yet; the TypeScript client avoids the race by issuing
    /// its GET before anything else, and so do we. The GET goes out with
    /// the `initialized` POST rather than after its answer, so that the
    /// wait costs one round trip, not two.
    pub(crate) async fn wait_listener(&self) {
        // Open (every request once the handshake is over): no receiver, no
        // timer.
        if *self.listener_gate.borrow() == 0 {
            return;
        }
        let mut gate = self.listener_gate.subscribe();
        let _ = tokio::time::timeout(LISTENER_GATE_TIMEOUT, gate.wait_for(|left| *left == 0)).await;
    }

    /// Lets messages held by [`Shared::wait_listener`] go.
    pub(crate) fn open_listener_gate(&self) {
        self.listener_gate.send_replace(0);
    }

    /// One of the answers [`Shared::wait_listener`] waits for has come.
    pub(crate) fn listener_gate_step(&self) {
        self.listener_gate
            .send_modify(|left| *left = left.saturating_sub(1));
    }

    /// The mode, once it is settled.
    pub(super) async fn wait_mode(&self) -> Mode {
        let mut rx = self.mode.subscribe();
        match rx.wait_for(|m| !matches!(m, Mode::Undecided)).await {
            Ok(mode) => mode.clone(),
            // The sender lives in `self`, so this cannot happen.
            Err(_) => Mode::Streamable,
        }
    }

    /// Bookkeeping at `send` time, before the task starts. Returns whether
    /// this message is the Auto probe (the first `initialize`).
    pub(super) fn prepare(&self, out: &Outgoing) -> bool {
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
                self.listener_gate.send_replace(0);
            }
            Kind::Initialized => {
                // The POST's answer and the GET stream's.
                self.listener_gate.send_replace(2);
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

    pub(super) fn session(&self) -> MutexGuard<'_, Session> {
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
    pub(super) fn modern_headers(
        &self,
        message: &Message,
        settled: Option<ProtocolVersion>,
    ) -> HeaderMap {
        // The POST adds its own to this map (see `streamable::post`).
        let mut headers = HeaderMap::with_capacity(POST_HEADERS);
        let Message::Request(request) = message else {
            if let Some(version) = settled {
                headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version.as_str()));
            }
            return headers;
        };
        let params = request.params.as_ref();
        let version = settled.or_else(|| {
            params
                .and_then(|p| request_protocol_version(p).and_then(|v| ProtocolVersion::parse(&v)))
        });
        if let Some(version) = version {
            headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version.as_str()));
        }
        if let Some(value) = method_header(&request.method) {
            headers.insert(MCP_METHOD, value);
        }
        // The name is read once: for `Mcp-Name`, and for a call to find the
        // tool's `Mcp-Param-*` headers.
        let name = mcp_proto::headers::request_name(&request.method, params);
        if let Some(name) = &name
            && let Ok(value) = HeaderValue::from_str(&mcp_proto::headers::encode_value(name))
        {
            headers.insert(MCP_NAME, value);
        }
        if request.method == mcp_proto::methods::TOOLS_CALL
            && let (Some(params), Some(name)) = (params, &name)
        {
            let tools = lock(&self.tool_headers);
            if let Some(param_headers) = tools.get(name.as_ref()) {
                let arguments = mcp_proto::headers::call_arguments(params);
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
    pub(super) fn track_inflight(&self, id: RequestId, handle: AbortHandle) {
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
    pub(super) fn cancel_inflight(&self, params: Option<&mcp_proto::jsonrpc::RawJson>) {
        let Some(params) = params else {
            return;
        };
        let Ok(cancelled) = params.decode::<mcp_proto::types::CancelledNotificationParams>() else {
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
fn request_protocol_version(params: &mcp_proto::jsonrpc::RawJson) -> Option<String> {
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
    params.decode::<Params>().ok()?.meta?.version
}

/// Locks a mutex whose holder never panics; poisoning is ignored.
pub(super) use mcp_proto::sync::lock;

/// The `Mcp-Method` header of a request (2026-07-28 "Streamable HTTP"
/// §Custom headers): the requests a client sends on every call are named
/// by their constants, written without a copy; any other method is
/// encoded as a header value ([`mcp_proto::headers::encode_value`]).
fn method_header(method: &str) -> Option<HeaderValue> {
    use mcp_proto::methods;
    let known = [
        methods::TOOLS_CALL,
        methods::TOOLS_LIST,
        methods::RESOURCES_READ,
        methods::RESOURCES_LIST,
        methods::RESOURCES_TEMPLATES_LIST,
        methods::PROMPTS_GET,
        methods::PROMPTS_LIST,
        methods::COMPLETION_COMPLETE,
        methods::SERVER_DISCOVER,
        methods::SUBSCRIPTIONS_LISTEN,
        methods::PING,
    ];
    match known.into_iter().find(|known| *known == method) {
        Some(known) => Some(HeaderValue::from_static(known)),
        None => HeaderValue::from_str(&mcp_proto::headers::encode_value(method)).ok(),
    }
}

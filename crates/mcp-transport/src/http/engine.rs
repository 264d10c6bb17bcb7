//! The HTTP transport object: its mode (Streamable HTTP, legacy SSE, or not yet known), session state, background tasks and inbound queue.
//!
//! Every HTTP exchange runs in a background task that the transport owns
//! (a `JoinSet` aborted on close and on drop), so that `send` returns as
//! soon as the message is handed over (the `Transport` contract) and many
//! requests are in flight at once. Tasks deliver what they read, and the
//! failures of single messages, through one queue that `recv` reads: all
//! streams go through one dispatcher (MCP "Transports": a response may
//! arrive on any stream).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_proto::{Message, ProtocolVersion};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::client::{HttpClient, parse_url};
use super::shared::{Kind, Limits, Mode, Outgoing, Session, Shared, Tasks, lock};
use super::{HttpOptions, HttpProtocol, eras, legacy_sse, streamable};
use crate::transport::{FrameSink, Inbound, Transport, TransportError, TransportExtensions};

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
///   [`set_protocol_version`](TransportExtensions::set_protocol_version) goes on every
///   request after `initialize`, never on the `initialize` POST.
/// - §Listening for Messages from the Server: a GET stream for
///   server-initiated messages is opened beside the
///   `notifications/initialized` POST, and later messages wait until both
///   have been answered; 404, 405 or 406 there means the server offers
///   none. The stream's connection is opened while `initialize` is
///   answered (once that request's own connection succeeded), so that the
///   wait includes no TCP or TLS handshake. If an established GET stream
///   later gets 404, the session has expired and the transport ends with
///   `Closed(Some(SessionExpired))`.
/// - §Resumability: when a POST's SSE stream ends before its response, it
///   is resumed by GET with `Last-Event-ID` after the server's `retry`
///   (or [`HttpOptions::default_retry`]); the GET stream reconnects the
///   same way. Priming events (empty data) only record their id.
/// - The stateless era (2026-07-28 "Streamable HTTP"): once the client
///   settles it through [`set_protocol_version`](TransportExtensions::set_protocol_version),
///   and for the `server/discover` that probes for it, every POST carries
///   `MCP-Protocol-Version`, `Mcp-Method`, and for `tools/call`,
///   `prompts/get` and `resources/read` `Mcp-Name` (values that are not
///   plain visible ASCII are sent in the `=?base64?...?=` form), plus the
///   `Mcp-Param-*` headers a tool's `x-mcp-header` annotations ask for
///   (learned through [`set_tool_headers`](TransportExtensions::set_tool_headers)).
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
///   transport. It has only the handshake era: a `server/discover` era
///   probe is never posted, and comes back undelivered at once.
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
        let client = HttpClient::new(&options, &url)?;
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
            sink: std::sync::OnceLock::new(),
            sink_gate: Mutex::new(()),
            mode: watch::Sender::new(initial_mode),
            listener_gate: watch::Sender::new(0),
            session: Mutex::new(Session::default()),
            tasks: Mutex::new(Tasks {
                set: JoinSet::new(),
                closed: false,
            }),
            closed: AtomicBool::new(false),
            inflight: Mutex::new(HashMap::default()),
            tool_headers: Mutex::new(BTreeMap::new()),
            bodies: Default::default(),
            handshake_era: AtomicBool::new(false),
            probe_skipped: AtomicBool::new(false),
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
            self.shared.cancel_inflight(n.params.as_ref());
            return Ok(());
        }
        let mut out = Outgoing::new(&message);
        if out.kind == Kind::Discover && matches!(self.shared.mode(), Mode::Legacy(_)) {
            // Legacy HTTP+SSE (2024-11-05) has only the handshake era, and
            // its SSE URL takes no POST: the era probe is not sent, and
            // comes back undelivered at once, which the session takes for
            // a handshake-era server.
            self.shared.report(
                &out,
                TransportError::Protocol(
                    "legacy HTTP+SSE has no 2026-07-28 era: server/discover is not sent".to_owned(),
                ),
            );
            return Ok(());
        }
        if out.kind == Kind::Discover && eras::take(self.shared.url.as_str()) {
            // A server that refused the probe before and then shook hands
            // (2026-07-28 "Versioning" §Backward Compatibility: the era is
            // cached per server): the probe comes back undelivered at once,
            // and `initialize` goes next. The endpoint is listed again once
            // that handshake succeeds.
            self.shared.handshake_era.store(true, Ordering::Relaxed);
            self.shared.probe_skipped.store(true, Ordering::Relaxed);
            self.shared.report(
                &out,
                TransportError::Protocol(
                    "server/discover is not sent: this endpoint answered it as a handshake-era server"
                        .to_owned(),
                ),
            );
            return Ok(());
        }
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

    /// The protocol version and the tool headers its requests carry.
    fn extensions(&self) -> Option<&dyn TransportExtensions> {
        Some(self)
    }
}

/// What Streamable HTTP's headers echo: the negotiated version and the
/// `Mcp-Param-*` headers of tools.
impl TransportExtensions for HttpTransport {
    fn set_protocol_version(&self, version: ProtocolVersion) {
        self.shared.session().version = Some(version);
        if version.uses_handshake() && self.shared.handshake_era.load(Ordering::Relaxed) {
            eras::remember(self.shared.url.as_str());
        }
        if !version.uses_handshake() {
            // The stateless era is Streamable HTTP's; nothing to fall back to.
            self.shared.set_mode(Mode::Streamable);
        }
    }

    /// Taken when nothing waits for `recv` yet (as when the client asks,
    /// before anything was sent): every later frame then goes to `sink`
    /// from the task that read it, POST or GET stream, each stream's frames
    /// in the order they arrived (streams are not ordered among
    /// themselves, MCP "Transports"), so that a response wakes its caller
    /// without a hop through the client's driver. Failures, paused streams
    /// and the end still go through `recv`, after the frames before them.
    /// Refused when something is already queued (a legacy SSE stream's
    /// early message): the queue then keeps carrying everything, in order.
    fn set_frame_sink(&self, sink: Arc<dyn FrameSink>) -> bool {
        let Ok(queue) = self.inbound.try_lock() else {
            return false;
        };
        let _gate = lock(&self.shared.sink_gate);
        if queue.terminal.is_some() || !queue.rx.is_empty() {
            return false;
        }
        self.shared.sink.set(sink).is_ok()
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

#[derive(Debug)]
struct InboundQueue {
    rx: mpsc::UnboundedReceiver<Inbound>,
    /// Set once `Closed` has been returned: `recv` repeats it.
    terminal: Option<Option<TransportError>>,
}

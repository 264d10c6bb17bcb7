//! A [`ServerSession`] served over one byte stream in newline-delimited JSON (MCP "Transports" §stdio), with an application's [`ServerHandler`] answering the requests.
//!
//! [`StreamServer`] reads the client's lines, feeds them to the sans-IO
//! session (which owns the lifecycle of both eras: `initialize`,
//! `server/discover`, `ping`, batches, ids, `-32601`, `-32022`), and hands
//! each request it lets through to [`ServerHandler::request`]. The
//! handlers' futures run concurrently on the connection's own task, so an
//! answer goes to the client from the task that learns of it, with no
//! hand-off between tasks. The handler's [`RequestContext`] sends progress for that
//! request, and its [`Peer`] sends notifications and server-to-client
//! requests (and waits for their answers) for as long as the connection
//! lives.
//!
//! Cancellation: a client's `notifications/cancelled`, or the end of the
//! client's input, drops the handler's future for the request it names (or
//! for every request in flight); its answer is never sent ("Utilities/
//! Cancellation").
//!
//! Bounds on what a client feeds the server:
//! - a line longer than [`ServerOptions::max_message_size`] is refused
//!   (`-32600`, null id) without being held whole;
//! - at most [`ServerOptions::max_in_flight`] requests wait for the handler
//!   at once, the rest are refused by the session;
//! - at most [`StreamOptions::reply_budget`] (default [`REPLY_BUDGET`])
//!   bytes of replies wait for the client to read them: past it the client
//!   is not read until its replies drain, so a client that writes and never
//!   reads costs a bounded amount of memory (its further requests wait in
//!   the kernel's buffer and its writes block);
//! - at most [`PEER_BUDGET`] bytes of what the handlers and the [`Peer`]
//!   send (notifications, progress, server-to-client requests) wait for the
//!   connection's task, which stops taking them while the client's replies
//!   are past their budget: past it [`Peer::notify`] fails with
//!   [`PeerError::Backlogged`] and [`Peer::request`] and
//!   [`Peer::send_notification`] wait for room.
//!
//! ```
//! use std::sync::Arc;
//! use mcp_proto::server::{ClientRequest, ServerOptions};
//! use mcp_proto::types::ServerCapabilities;
//! use mcp_proto::jsonrpc::{ErrorObject, RawJson, error_codes};
//! use mcp_transport::server::stream::{RequestContext, ServerHandler, StreamOptions, serve};
//!
//! struct Tools;
//!
//! #[async_trait::async_trait]
//! impl ServerHandler for Tools {
//!     async fn request(&self, request: ClientRequest, _: RequestContext) -> Result<RawJson, ErrorObject> {
//!         match request.method.as_str() {
//!             "tools/list" => RawJson::encode(&serde_json::json!({"tools": []}))
//!                 .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string())),
//!             other => Err(ErrorObject::method_not_found(other)),
//!         }
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let options = StreamOptions::new(ServerOptions::default().capabilities(ServerCapabilities {
//!     tools: Some(Default::default()),
//!     ..ServerCapabilities::default()
//! }));
//! // Any byte stream will do: stdin and stdout, a Unix socket. This one is
//! // an in-memory pipe with the client at its other end.
//! let (client, server) = tokio::io::duplex(64 * 1024);
//! let (read, write) = tokio::io::split(server);
//! let serving = tokio::spawn(serve(options, Arc::new(Tools), read, write));
//!
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
//! let (answers, mut requests) = tokio::io::split(client);
//! let mut answers = tokio::io::BufReader::new(answers).lines();
//! requests.write_all(concat!(
//!     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","#,
//!     r#""capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#, "\n",
//!     r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, "\n",
//!     r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, "\n",
//! ).as_bytes()).await?;
//! let initialized = answers.next_line().await?.unwrap();
//! assert!(initialized.contains(r#""protocolVersion":"2025-06-18""#));
//! assert_eq!(answers.next_line().await?.unwrap(), r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#);
//! // The client's input ends: serving ends.
//! requests.shutdown().await?;
//! serving.await??;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::{AbortHandle, Abortable, Aborted, BoxFuture, FutureExt};
use futures_util::stream::{FuturesUnordered, StreamExt};
use mcp_proto::codec::ndjson::{self, NdjsonDecoder};
use mcp_proto::jsonrpc::{
    ErrorObject, Frame, Message, Notification, RawJson, RequestId, error_codes,
};
use mcp_proto::methods;
use mcp_proto::server::{
    ClientRequest, Event, Handshake, RequestError, RequestHandle, ServerError, ServerOptions,
    ServerSession,
};
use serde::Serialize;
use std::panic::AssertUnwindSafe;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::time::Instant;

/// The default of [`StreamOptions::reply_budget`]: 8 MiB of replies the
/// client has not read yet. Past it the client is not read until they
/// drain. Replies of requests already in flight still queue, so the most
/// held is this plus one read of requests (64 KiB) and the answers of the
/// requests then in flight.
pub const REPLY_BUDGET: usize = 8 * 1024 * 1024;

/// The most bytes of messages (a method and its parameters, plus 64 bytes
/// each) that the handlers and the [`Peer`] of one connection may have
/// waiting for the connection's task: 1 MiB. The task stops taking them
/// while the client has more than its reply budget left to read (over
/// Streamable HTTP: while the GET stream is full), so a client that does
/// not read costs at most this much here, however much the application
/// sends. Past it [`Peer::notify`], [`RequestContext::progress`] and the
/// stream controls fail with [`PeerError::Backlogged`], and
/// [`Peer::request`] and [`Peer::send_notification`] wait for room. A
/// message larger than the budget waits until nothing else does.
pub const PEER_BUDGET: usize = 1024 * 1024;

/// What a message costs of [`PEER_BUDGET`] besides its bytes.
const MESSAGE_OVERHEAD: usize = 64;

/// How much is read from the client at once.
const READ_CHUNK: usize = 64 * 1024;

/// Options of a [`StreamServer`]. Every field has a documented default.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StreamOptions {
    /// The session's options: who the server is, what it offers, which
    /// versions it speaks, the longest line
    /// ([`ServerOptions::max_message_size`], also the decoder's limit) and
    /// the requests in flight ([`ServerOptions::max_in_flight`]).
    pub session: ServerOptions,
    /// The most bytes of replies held for a client that does not read them
    /// before the client is no longer read. Default: [`REPLY_BUDGET`].
    pub reply_budget: usize,
}

impl StreamOptions {
    /// Options serving `session`, with the default reply budget.
    pub fn new(session: ServerOptions) -> Self {
        StreamOptions {
            session,
            reply_budget: REPLY_BUDGET,
        }
    }

    /// The same options with another reply budget.
    pub fn reply_budget(mut self, bytes: usize) -> Self {
        self.reply_budget = bytes;
        self
    }
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions::new(ServerOptions::default())
    }
}

/// Answers what a client asks of a server.
///
/// The session answers the protocol's own requests (`initialize`,
/// `server/discover`, `ping`) and refuses what the server's capabilities do
/// not cover; everything else comes here. The requests' futures run
/// concurrently on the connection's task, so one that waits holds up no
/// other; one that blocks the thread (long computation, blocking I/O)
/// holds up the connection, and belongs on a task of its own
/// (`tokio::task::spawn_blocking`). A request's future is dropped when the
/// client cancels the request or goes away; one that panics is answered
/// with an internal error.
#[async_trait]
pub trait ServerHandler: Send + Sync + 'static {
    /// Answers one request (`tools/call`, `resources/read`, ...) with its
    /// result as JSON, or a JSON-RPC error. `context` sends the request's
    /// progress and reaches the client through [`RequestContext::peer`].
    async fn request(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject>;

    /// A client notification the session does not handle itself
    /// (`notifications/roots/list_changed`, for example). Called on the
    /// connection's own task, so it must not block; it may spawn. Default:
    /// ignored.
    fn notification(&self, notification: Notification, peer: &Peer) {
        let _ = (notification, peer);
    }
}

/// Why a message to the client could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// The connection ended.
    #[error("the connection to the client is closed")]
    Closed,
    /// The session refused the message (the handshake has not finished, the
    /// client did not declare the capability, the era sends no requests).
    #[error(transparent)]
    Refused(#[from] ServerError),
    /// The client did not answer the request, or answered with an error.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The client is not taking what is sent to it: [`PEER_BUDGET`] bytes
    /// already wait, so this message was not sent. A sender that must not
    /// lose it waits for room instead ([`Peer::send_notification`]).
    #[error(
        "the client is not reading: the messages waiting for it are at their bound, so this one was not sent"
    )]
    Backlogged,
}

/// The client at the other end of a connection: notifications and
/// server-to-client requests ("Client Features": roots, sampling,
/// elicitation). Cheap to clone; valid until the connection ends.
#[derive(Clone, Debug)]
pub struct Peer {
    commands: mpsc::UnboundedSender<Queued>,
    /// What is left of [`PEER_BUDGET`]: each queued command holds its
    /// bytes until the connection's task takes it.
    room: Arc<Semaphore>,
    /// A caller stopped waiting for a server request since the task last
    /// looked: at most one [`Command::Sweep`] is queued at a time.
    sweep: Arc<AtomicBool>,
    handshake: Arc<Mutex<Option<Handshake>>>,
}

/// A command on its way to the connection's task, with its share of
/// [`PEER_BUDGET`] (given back when the task takes it).
struct Queued {
    command: Command,
    _room: Option<OwnedSemaphorePermit>,
}

/// The connection's task's end of what its handlers and [`Peer`] ask of it.
pub(crate) struct Commands {
    receiver: mpsc::UnboundedReceiver<Queued>,
    room: Arc<Semaphore>,
    sweep: Arc<AtomicBool>,
}

impl Commands {
    /// The next command, waiting for one.
    pub(crate) async fn recv(&mut self) -> Option<Command> {
        let queued = self.receiver.recv().await?;
        Some(self.taken(queued))
    }

    /// The next command if one is queued.
    pub(crate) fn try_recv(&mut self) -> Option<Command> {
        let queued = self.receiver.try_recv().ok()?;
        Some(self.taken(queued))
    }

    fn taken(&self, queued: Queued) -> Command {
        if matches!(queued.command, Command::Sweep) {
            self.sweep.store(false, Ordering::Release);
        }
        queued.command
    }
}

impl Drop for Commands {
    fn drop(&mut self) {
        // The connection ended: whoever waits for room learns it.
        self.room.close();
    }
}

impl std::fmt::Debug for Commands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Commands")
            .field("room", &self.room.available_permits())
            .finish_non_exhaustive()
    }
}

impl Peer {
    /// A peer for a new connection, with the receiving end of what it and
    /// the connection's handlers ask of the connection's task.
    pub(crate) fn channel() -> (Peer, Commands) {
        let (commands, receiver) = mpsc::unbounded_channel();
        let room = Arc::new(Semaphore::new(PEER_BUDGET));
        let sweep = Arc::new(AtomicBool::new(false));
        let peer = Peer {
            commands,
            room: Arc::clone(&room),
            sweep: Arc::clone(&sweep),
            handshake: Arc::new(Mutex::new(None)),
        };
        let receiver = Commands {
            receiver,
            room,
            sweep,
        };
        (peer, receiver)
    }

    /// Sends a notification (`notifications/tools/list_changed`, a log
    /// message, a resource update) without waiting: when [`PEER_BUDGET`]
    /// bytes already wait for a client that is not reading, it is not
    /// sent and [`PeerError::Backlogged`] says so.
    pub fn notify<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), PeerError> {
        let command = notification(None, method, params)?;
        self.try_send(command)
    }

    /// Sends a notification as [`Peer::notify`] does, waiting for room
    /// when [`PEER_BUDGET`] bytes already wait for the client (for as long
    /// as the client does not read): nothing is dropped, and the sender is
    /// held back instead.
    pub async fn send_notification<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), PeerError> {
        let command = notification(None, method, params)?;
        self.send(command).await
    }

    /// Sends a request to the client and waits for its answer, at most
    /// `timeout` (then the request is cancelled on the wire). The
    /// session refuses it before `notifications/initialized` (but `ping`),
    /// in the stateless era, and when the client did not declare the
    /// capability it needs. Dropping the future withdraws the request
    /// (`notifications/cancelled`). The client's progress on it is not
    /// passed on.
    pub async fn request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<RawJson, PeerError> {
        self.request_about(None, method, params, timeout).await
    }

    async fn request_about<P: Serialize + ?Sized>(
        &self,
        about: Option<&RequestId>,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<RawJson, PeerError> {
        let params = encode_params(params)?;
        let (reply, answer) = oneshot::channel();
        self.send(Command::Request {
            method: method.to_owned(),
            params,
            deadline: timeout.map(|timeout| Instant::now() + timeout),
            reply,
            about: about.cloned(),
        })
        .await?;
        let mut guard = RequestGuard {
            peer: self.clone(),
            answer,
            answered: false,
        };
        let answer = (&mut guard.answer).await;
        guard.answered = true;
        answer.unwrap_or(Err(PeerError::Closed))
    }

    /// What the `initialize` handshake settled, once it has (never for a
    /// stateless-era client).
    pub fn handshake(&self) -> Option<Handshake> {
        self.handshake
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.commands.is_closed()
    }

    /// Queues `command` if its bytes fit in what is left of
    /// [`PEER_BUDGET`].
    fn try_send(&self, command: Command) -> Result<(), PeerError> {
        let room = match Arc::clone(&self.room).try_acquire_many_owned(command.cost()) {
            Ok(room) => room,
            Err(tokio::sync::TryAcquireError::NoPermits) => return Err(PeerError::Backlogged),
            Err(tokio::sync::TryAcquireError::Closed) => return Err(PeerError::Closed),
        };
        self.queue(command, Some(room))
    }

    /// Queues `command` once its bytes fit in what is left of
    /// [`PEER_BUDGET`].
    async fn send(&self, command: Command) -> Result<(), PeerError> {
        let room = Arc::clone(&self.room)
            .acquire_many_owned(command.cost())
            .await
            .map_err(|_| PeerError::Closed)?;
        self.queue(command, Some(room))
    }

    fn queue(&self, command: Command, room: Option<OwnedSemaphorePermit>) -> Result<(), PeerError> {
        self.commands
            .send(Queued {
                command,
                _room: room,
            })
            .map_err(|_| PeerError::Closed)
    }

    /// Asks the connection's task to look for server requests nobody waits
    /// for any more; one such ask is queued at a time, outside the budget.
    fn sweep(&self) {
        if !self.sweep.swap(true, Ordering::AcqRel) {
            let _ = self.queue(Command::Sweep, None);
        }
    }
}

/// A notification's command, refusing the method the session owns.
fn notification<P: Serialize + ?Sized>(
    about: Option<&RequestId>,
    method: &str,
    params: Option<&P>,
) -> Result<Command, PeerError> {
    if method == methods::NOTIFICATION_CANCELLED {
        return Err(PeerError::Refused(ServerError::Reserved {
            method: method.to_owned(),
        }));
    }
    let params = encode_params(params)?;
    Ok(Command::Notify {
        method: method.to_owned(),
        params,
        about: about.cloned(),
    })
}

/// Withdraws a server request whose caller stopped waiting.
struct RequestGuard {
    peer: Peer,
    answer: oneshot::Receiver<Result<RawJson, PeerError>>,
    answered: bool,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        // Not answered yet: the connection's task cancels the request once
        // it sees the answer's receiver closed.
        if !self.answered {
            self.answer.close();
            self.peer.sweep();
        }
    }
}

/// What a [`ServerHandler`] gets with one request.
#[derive(Clone, Debug)]
pub struct RequestContext {
    id: RequestId,
    peer: Peer,
    progress: bool,
}

impl RequestContext {
    /// The request's JSON-RPC id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The client, for notifications and requests of the server's own.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Whether the client asked for progress (`_meta.progressToken`).
    pub fn wants_progress(&self) -> bool {
        self.progress
    }

    /// Sends a notification about this request (a log message while it
    /// runs, say): as [`Peer::notify`], and over Streamable HTTP on the
    /// request's own stream while it is open ("Transports" §Sending
    /// Messages to the Server: messages related to the request).
    pub fn notify<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), PeerError> {
        let command = notification(Some(&self.id), method, params)?;
        self.peer.try_send(command)
    }

    /// Sends a notification about this request as
    /// [`RequestContext::notify`] does, waiting for room as
    /// [`Peer::send_notification`] does.
    pub async fn send_notification<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), PeerError> {
        let command = notification(Some(&self.id), method, params)?;
        self.peer.send(command).await
    }

    /// Sends a request to the client while answering this one (sampling,
    /// elicitation, roots) and waits for its answer: as [`Peer::request`],
    /// and over Streamable HTTP on this request's own stream while it is
    /// open (the GET stream when that stream has no room).
    pub async fn request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<RawJson, PeerError> {
        self.peer
            .request_about(Some(&self.id), method, params, timeout)
            .await
    }

    /// Answers this request on an SSE stream from now on rather than with
    /// one JSON body (Streamable HTTP, "Transports" §Sending Messages to the
    /// Server): the stream opens at once with an event that has an id and
    /// no data (the 2025-11-25 priming event, from which a client can
    /// resume), and the answer ends it. A transport without response
    /// streams (a byte stream) ignores it.
    pub fn open_stream(&self) -> Result<(), PeerError> {
        self.peer.try_send(Command::Stream {
            id: self.id.clone(),
            close: None,
        })
    }

    /// SSE polling (2025-11-25 "Transports" §Resumability and Redelivery):
    /// ends this request's SSE stream now, after an event with an id and a
    /// `retry` field of `retry`, while the request goes on; the client
    /// comes back after `retry` with a GET carrying `Last-Event-ID` and
    /// receives what followed, the answer included. Opens the stream first
    /// if it has not opened ([`RequestContext::open_stream`]). Only where
    /// the session's protocol version has polling (2025-11-25 and later)
    /// and the transport has response streams; elsewhere nothing happens.
    pub fn close_stream(&self, retry: Duration) -> Result<(), PeerError> {
        self.peer.try_send(Command::Stream {
            id: self.id.clone(),
            close: Some(retry),
        })
    }

    /// Sends `notifications/progress` for this request with the client's
    /// token ("Utilities/Progress"; `progress` must grow from one report to
    /// the next). Nothing is sent when the client asked for no progress;
    /// [`PeerError::Backlogged`] when the client is not reading (progress
    /// is the first thing a slow client does without).
    pub fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), PeerError> {
        if !self.progress {
            return Ok(());
        }
        self.peer.try_send(Command::Progress {
            id: self.id.clone(),
            progress,
            total,
            message: message.map(str::to_owned),
        })
    }
}

/// What the handlers and the [`Peer`] ask of the connection's task.
pub(crate) enum Command {
    Progress {
        id: RequestId,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    Notify {
        method: String,
        params: Option<RawJson>,
        /// The client request it is about, if any.
        about: Option<RequestId>,
    },
    Request {
        method: String,
        params: Option<RawJson>,
        deadline: Option<Instant>,
        reply: oneshot::Sender<Result<RawJson, PeerError>>,
        /// The client request it is about, if any.
        about: Option<RequestId>,
    },
    /// A caller stopped waiting for a server request.
    Sweep,
    /// A request's response stream: opened, or closed for polling with
    /// this `retry`.
    Stream {
        id: RequestId,
        close: Option<Duration>,
    },
}

impl Command {
    /// What the command costs of [`PEER_BUDGET`]: its bytes and
    /// [`MESSAGE_OVERHEAD`], at most the whole budget (a larger one waits
    /// until nothing else does).
    fn cost(&self) -> u32 {
        let bytes = match self {
            Command::Progress { message, .. } => message.as_ref().map_or(0, String::len),
            Command::Notify { method, params, .. } | Command::Request { method, params, .. } => {
                method.len() + params.as_ref().map_or(0, |params| params.get().len())
            }
            Command::Sweep | Command::Stream { .. } => 0,
        };
        let cost = bytes.saturating_add(MESSAGE_OVERHEAD).min(PEER_BUDGET);
        u32::try_from(cost).unwrap_or(u32::MAX)
    }
}

fn encode_params<P: Serialize + ?Sized>(params: Option<&P>) -> Result<Option<RawJson>, PeerError> {
    params.map(RawJson::encode).transpose().map_err(|source| {
        PeerError::Refused(ServerError::Encode {
            what: "params".to_owned(),
            source,
        })
    })
}

/// One connection's server: a [`ServerSession`] over a byte stream. Made
/// first so that the application can hold its [`Peer`] (to notify the
/// client of its own accord) before [`StreamServer::serve`] runs.
#[derive(Debug)]
pub struct StreamServer {
    options: StreamOptions,
    peer: Peer,
    commands: Commands,
}

/// Serves one client with `handler` on `reader`/`writer` until the client's
/// input ends; see [`StreamServer::serve`].
pub async fn serve<R, W>(
    options: StreamOptions,
    handler: Arc<dyn ServerHandler>,
    reader: R,
    writer: W,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    StreamServer::new(options)
        .serve(handler, reader, writer)
        .await
}

impl StreamServer {
    /// A server for one connection.
    pub fn new(options: StreamOptions) -> Self {
        let (peer, commands) = Peer::channel();
        StreamServer {
            options,
            peer,
            commands,
        }
    }

    /// The client of this connection, for the application to keep.
    pub fn peer(&self) -> Peer {
        self.peer.clone()
    }

    /// Serves the client until its input ends (or the output fails): then
    /// every request in flight is cancelled (its handler's future dropped),
    /// the server's own requests fail with [`RequestError::Closed`], and
    /// what is left to write is written. Fails only when reading fails.
    pub async fn serve<R, W>(
        self,
        handler: Arc<dyn ServerHandler>,
        mut reader: R,
        writer: W,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let StreamServer {
            options,
            peer,
            mut commands,
        } = self;
        let budget = options.reply_budget;
        let mut decoder = NdjsonDecoder::with_max_message_size(options.session.max_message_size);
        let mut conn = Connection::new(
            ServerSession::new(options.session),
            handler,
            peer,
            Output::default(),
        );
        let mut writer = writer;
        let mut buf = vec![0; READ_CHUNK];
        let mut reading = true;
        let read = loop {
            let timeout = conn.session.poll_timeout();
            // Past the budget the client's requests stay in the kernel's
            // buffer until it reads its replies.
            let below = conn.out.pending.len() < budget;
            let writing = conn.out.has_work();
            tokio::select! {
                biased;
                // Past the budget the handlers' messages wait too (within
                // PEER_BUDGET, then their senders wait or are refused).
                Some(command) = commands.recv(), if below => conn.command(command),
                Some(answered) = next_answer(&mut conn.running) => conn.answered(answered, &mut commands),
                () = sleep_until(timeout) => conn.session.handle_timeout(Instant::now().into_std()),
                // Written by this task as the client takes them.
                written = conn.out.write_some(&mut writer), if writing => {
                    if written.is_err() {
                        break Ok(());
                    }
                }
                n = reader.read(&mut buf), if reading && below => match n {
                    Ok(0) => reading = false,
                    Ok(n) => {
                        decoder.push(buf.get(..n).unwrap_or_default());
                        while let Some(item) = decoder.next_frame() {
                            conn.frame(item);
                        }
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => break Err(error),
                },
            }
            if !reading {
                while let Some(item) = decoder.finish() {
                    conn.frame(item);
                }
                break Ok(());
            }
            conn.pump(None);
        };
        conn.shut();
        conn.out.finish(&mut writer).await;
        read
    }
}

/// This process's standard input, as [`stdio`] reads it.
pub type StdinReader = Box<dyn AsyncRead + Send + Unpin>;

/// This process's standard output, as [`stdio`] writes it.
pub type StdoutWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// This process's standard input and output as the byte stream of a stdio
/// server (MCP "Transports" §stdio), for [`serve`] or
/// [`StreamServer::serve`].
///
/// On Unix, a standard stream that is a pipe or a socket (as a host that
/// launches the server makes it) is read and written in non-blocking mode
/// on the runtime's own event loop, so a message goes from the pipe to the
/// server's task and back with no thread between: tokio's
/// `stdin()`/`stdout()` hand every read and write to a thread of the
/// blocking pool instead, a switch between threads each way. Setting
/// `O_NONBLOCK` changes the stream's open file description, which this
/// process shares with whoever gave it the stream; a host's pipe to its
/// server is its server's alone. Any other stream (a terminal, a file), and
/// every stream elsewhere, is tokio's `stdin()`/`stdout()`.
pub fn stdio() -> (StdinReader, StdoutWriter) {
    (standard_input(), standard_output())
}

/// Another process's standard input and output, handed to this one as
/// descriptors (a relaying stdio server passes its own over a Unix socket
/// with `SCM_RIGHTS`), read and written as [`stdio`] reads and writes this
/// process's own: in non-blocking mode on the runtime's event loop, so
/// this process serves the relaying one's client with no copy between.
/// `None` unless `input` is a readable and `output` a writable pipe or
/// Unix socket (nothing else can be polled); both are then closed. Called
/// within a Tokio runtime.
#[cfg(unix)]
pub fn handed_stdio(
    input: std::os::fd::OwnedFd,
    output: std::os::fd::OwnedFd,
) -> Option<(StdinReader, StdoutWriter)> {
    let reader: StdinReader = match nonblocking(input)? {
        Stream::Pipe(file) => Box::new(tokio::net::unix::pipe::Receiver::from_file(file).ok()?),
        Stream::Socket(socket) => Box::new(tokio::net::UnixStream::from_std(socket).ok()?),
    };
    let writer: StdoutWriter = match nonblocking(output)? {
        Stream::Pipe(file) => Box::new(tokio::net::unix::pipe::Sender::from_file(file).ok()?),
        Stream::Socket(socket) => Box::new(tokio::net::UnixStream::from_std(socket).ok()?),
    };
    Some((reader, writer))
}

#[cfg(unix)]
fn standard_input() -> StdinReader {
    use std::os::fd::AsFd;
    let own = std::io::stdin().as_fd().try_clone_to_owned();
    match own.map(nonblocking) {
        Ok(Some(Stream::Pipe(file))) => match tokio::net::unix::pipe::Receiver::from_file(file) {
            Ok(pipe) => return Box::new(pipe),
            Err(error) => tracing::debug!(%error, "stdin stays blocking"),
        },
        Ok(Some(Stream::Socket(socket))) => match tokio::net::UnixStream::from_std(socket) {
            Ok(socket) => return Box::new(socket),
            Err(error) => tracing::debug!(%error, "stdin stays blocking"),
        },
        Ok(None) => {}
        Err(error) => tracing::debug!(%error, "stdin stays blocking"),
    }
    Box::new(tokio::io::stdin())
}

#[cfg(unix)]
fn standard_output() -> StdoutWriter {
    use std::os::fd::AsFd;
    let own = std::io::stdout().as_fd().try_clone_to_owned();
    match own.map(nonblocking) {
        Ok(Some(Stream::Pipe(file))) => match tokio::net::unix::pipe::Sender::from_file(file) {
            Ok(pipe) => return Box::new(pipe),
            Err(error) => tracing::debug!(%error, "stdout stays blocking"),
        },
        Ok(Some(Stream::Socket(socket))) => match tokio::net::UnixStream::from_std(socket) {
            Ok(socket) => return Box::new(socket),
            Err(error) => tracing::debug!(%error, "stdout stays blocking"),
        },
        Ok(None) => {}
        Err(error) => tracing::debug!(%error, "stdout stays blocking"),
    }
    Box::new(tokio::io::stdout())
}

#[cfg(not(unix))]
fn standard_input() -> StdinReader {
    Box::new(tokio::io::stdin())
}

#[cfg(not(unix))]
fn standard_output() -> StdoutWriter {
    Box::new(tokio::io::stdout())
}

/// A standard stream the event loop can poll.
#[cfg(unix)]
enum Stream {
    Pipe(std::fs::File),
    Socket(std::os::unix::net::UnixStream),
}

/// `fd` in non-blocking mode when it is a pipe or a Unix socket; `None`
/// for anything else (a terminal, a file, `/dev/null`), left as it is.
#[cfg(unix)]
fn nonblocking(fd: std::os::fd::OwnedFd) -> Option<Stream> {
    use std::os::unix::fs::FileTypeExt;
    let file = std::fs::File::from(fd);
    let kind = file.metadata().ok()?.file_type();
    if kind.is_fifo() {
        // Made non-blocking by tokio's pipe, which checks its access mode.
        Some(Stream::Pipe(file))
    } else if kind.is_socket() {
        let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
        socket.set_nonblocking(true).ok()?;
        Some(Stream::Socket(socket))
    } else {
        None
    }
}

/// The next answer of the handlers' futures; `None` at once when none
/// runs (the `select!` branch waiting on it is then off until the next
/// turn, when a request may have started one).
pub(crate) async fn next_answer(running: &mut Running) -> Option<Answered> {
    running.next().await
}

pub(crate) async fn sleep_until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(Instant::from_std(deadline)).await,
        None => std::future::pending().await,
    }
}

/// Where a connection's outgoing frames go: one byte stream, or (over
/// HTTP) the response of the request each concerns.
pub(crate) trait Outlet {
    /// Sends one frame the session produced; `about` is the client request
    /// whose handling produced it, when there is one (its progress, its
    /// answer).
    fn transmit(&mut self, frame: Frame, about: Option<&RequestId>);

    /// The client's request `id` ended without an answer (cancelled): its
    /// answer will never be sent.
    fn ended(&mut self, id: &RequestId) {
        let _ = id;
    }

    /// The handler of request `id` asked for its response stream to open
    /// now, or to close for polling with `close`'s retry
    /// ([`RequestContext::open_stream`], [`RequestContext::close_stream`]).
    /// Nothing by default: a byte stream has no response streams.
    fn stream(&mut self, id: &RequestId, close: Option<Duration>) {
        let _ = (id, close);
    }
}

/// A request's answer from the handler, or nothing when it was cancelled.
pub(crate) type Answered = Result<(RequestId, Result<RawJson, ErrorObject>), Aborted>;

/// The handlers' futures in flight, polled by the connection's task.
pub(crate) type Running =
    FuturesUnordered<Abortable<BoxFuture<'static, (RequestId, Result<RawJson, ErrorObject>)>>>;

/// The connection's task state: the session, the handlers' futures and the
/// server's requests waiting for the client, over an [`Outlet`].
pub(crate) struct Connection<O> {
    pub(crate) session: ServerSession,
    handler: Arc<dyn ServerHandler>,
    peer: Peer,
    /// What cancels each handler's future, by the request it answers.
    tasks: HashMap<RequestId, AbortHandle>,
    /// The handlers' futures, polled by the connection's task through
    /// [`next_answer`].
    pub(crate) running: Running,
    /// The server's requests waiting for the client, with their callers.
    waiting: HashMap<RequestHandle, oneshot::Sender<Result<RawJson, PeerError>>>,
    pub(crate) out: O,
}

impl<O: Outlet> Connection<O> {
    pub(crate) fn new(
        session: ServerSession,
        handler: Arc<dyn ServerHandler>,
        peer: Peer,
        out: O,
    ) -> Self {
        Connection {
            session,
            handler,
            peer,
            tasks: HashMap::new(),
            running: FuturesUnordered::new(),
            waiting: HashMap::new(),
            out,
        }
    }

    fn frame(&mut self, item: Result<mcp_proto::Frame, ndjson::NdjsonError>) {
        let now = Instant::now().into_std();
        match item {
            Ok(frame) => self.session.handle_frame(now, frame),
            Err(error) => self.session.handle_undecodable(error.to_error_object()),
        }
        self.pump(None);
    }

    /// Feeds one message the client sent.
    #[cfg(feature = "http")]
    pub(crate) fn message(&mut self, message: Message) {
        self.session
            .handle_message(Instant::now().into_std(), message);
        self.pump(None);
    }

    /// Feeds a batch the client sent (2025-03-26 "Base Protocol"
    /// §Batching); the session answers it with one batch.
    #[cfg(feature = "http")]
    pub(crate) fn batch(&mut self, messages: Vec<Message>) {
        self.session
            .handle_frame(Instant::now().into_std(), Frame::Batch(messages));
        self.pump(None);
    }

    /// Settles the server's requests whose deadline passed.
    #[cfg(feature = "http")]
    pub(crate) fn timeout(&mut self) {
        self.session.handle_timeout(Instant::now().into_std());
        self.pump(None);
    }

    pub(crate) fn command(&mut self, command: Command) {
        let about = match &command {
            Command::Progress { id, .. } => Some(id.clone()),
            Command::Notify { about, .. } | Command::Request { about, .. } => about.clone(),
            _ => None,
        };
        match command {
            Command::Progress {
                id,
                progress,
                total,
                message,
            } => {
                // A request that ended gets no more progress.
                let _ = self
                    .session
                    .progress(&id, progress, total, message.as_deref());
            }
            Command::Notify { method, params, .. } => {
                // Refused only once the session closed: nobody to tell.
                let _ = self.session.notify(&method, params.as_ref());
            }
            Command::Request {
                method,
                params,
                deadline,
                reply,
                ..
            } => {
                let deadline = deadline.map(Instant::into_std);
                match self.session.request(&method, params.as_ref(), deadline) {
                    Ok(handle) => {
                        self.waiting.insert(handle, reply);
                    }
                    Err(error) => {
                        let _ = reply.send(Err(error.into()));
                    }
                }
            }
            Command::Stream { id, close } => {
                self.out.stream(&id, close);
            }
            Command::Sweep => {
                let abandoned: Vec<RequestHandle> = self
                    .waiting
                    .iter()
                    .filter(|(_, reply)| reply.is_closed())
                    .map(|(handle, _)| *handle)
                    .collect();
                for handle in abandoned {
                    self.session
                        .cancel(handle, Some("the server stopped waiting"));
                }
            }
        }
        self.pump(about.as_ref());
    }

    /// Answers the request a handler's future answered (nothing for one
    /// that was cancelled), after what the handlers asked of the connection
    /// before it (a request's progress goes out before its answer).
    pub(crate) fn answered(&mut self, answered: Answered, commands: &mut Commands) {
        while let Some(command) = commands.try_recv() {
            self.command(command);
        }
        let Ok((id, answer)) = answered else {
            return;
        };
        self.tasks.remove(&id);
        // Refused only when the request ended first (the client cancelled
        // it): nothing is to be sent then.
        let _ = match answer {
            Ok(result) => self.session.respond_raw(&id, result),
            Err(error) => self.session.respond_error(&id, error),
        };
        self.pump(Some(&id));
    }

    /// Acts on the session's events and sends what it has to send; `about`
    /// is the client request whose handling this follows, if any.
    pub(crate) fn pump(&mut self, about: Option<&RequestId>) {
        while let Some(event) = self.session.poll_event() {
            match event {
                Event::Request(request) => self.start(request),
                Event::Cancelled { id, .. } => {
                    if let Some(task) = self.tasks.remove(&id) {
                        task.abort();
                    }
                    self.out.ended(&id);
                }
                Event::Completed { handle, outcome } => {
                    if let Some(reply) = self.waiting.remove(&handle) {
                        let _ = reply.send(outcome.map_err(PeerError::from));
                    }
                }
                Event::Initialized(handshake) => {
                    *self
                        .peer
                        .handshake
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(*handshake);
                }
                Event::Notification(notification) => {
                    self.handler.notification(notification, &self.peer);
                }
                Event::Diagnostic(diagnostic) => {
                    tracing::debug!(?diagnostic, "the client broke a rule");
                }
                // Progress on the server's requests is not surfaced.
                Event::Ready | Event::Progress { .. } | Event::Closed(_) => {}
                _ => {}
            }
        }
        while let Some(frame) = self.session.poll_transmit() {
            self.out.transmit(frame, about);
        }
    }

    /// Starts the handler's future for one request, among those the
    /// connection's task polls. A handler that panics answers with an
    /// internal error.
    fn start(&mut self, request: ClientRequest) {
        let id = request.id.clone();
        let context = RequestContext {
            id: id.clone(),
            peer: self.peer.clone(),
            progress: request.progress_token.is_some(),
        };
        let handler = Arc::clone(&self.handler);
        let key = id.clone();
        let future: BoxFuture<'static, _> = Box::pin(async move {
            let answer = AssertUnwindSafe(handler.request(request, context))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(ErrorObject::new(
                        error_codes::INTERNAL_ERROR,
                        "the server failed while answering the request",
                    ))
                });
            (id, answer)
        });
        let (cancel, registration) = AbortHandle::new_pair();
        self.running.push(Abortable::new(future, registration));
        self.tasks.insert(key, cancel);
    }

    /// The client is gone: the handler's work ends (every request's future
    /// is dropped, its answer never sent), and so does the session; the
    /// server's requests fail with [`PeerError::Closed`].
    pub(crate) fn shut(&mut self) {
        self.tasks.clear();
        // Dropped here and now: every handler's work ends with it.
        self.running.clear();
        self.session.handle_close();
        self.pump(None);
        for (_, reply) in self.waiting.drain() {
            let _ = reply.send(Err(PeerError::Closed));
        }
    }

    /// How many client requests wait for the handler.
    #[cfg(feature = "http")]
    pub(crate) fn in_flight(&self) -> usize {
        self.session.in_flight()
    }
}

impl Outlet for Output {
    fn transmit(&mut self, frame: Frame, _about: Option<&RequestId>) {
        let mut line = Vec::new();
        encode_frame(&frame, &mut line);
        self.pending.extend(line);
    }
}

/// The writing half: the encoded lines the client has not taken yet,
/// written by the connection's own task as the output takes them (no task
/// between the answer and the write). Every reply counts against the
/// reply budget from encoding until written.
#[derive(Default)]
struct Output {
    pending: VecDeque<u8>,
    /// Written since the last flush.
    unflushed: bool,
    /// Writing failed: nothing more will be written.
    failed: bool,
}

impl Output {
    /// Whether there is something to write or flush.
    fn has_work(&self) -> bool {
        !self.failed && (!self.pending.is_empty() || self.unflushed)
    }

    /// One step of writing: one write of what is pending, or the flush
    /// once it is all written. Cancel-safe: a step either happened or did
    /// not.
    async fn write_some<W: AsyncWrite + Unpin>(&mut self, writer: &mut W) -> io::Result<()> {
        let step = self.step(writer).await;
        if step.is_err() {
            self.failed = true;
            // What is pending will never be written.
            self.pending = VecDeque::new();
        }
        step
    }

    async fn step<W: AsyncWrite + Unpin>(&mut self, writer: &mut W) -> io::Result<()> {
        if self.pending.is_empty() {
            writer.flush().await?;
            self.unflushed = false;
            return Ok(());
        }
        let (front, _) = self.pending.as_slices();
        let n = writer.write(front).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        self.pending.drain(..n);
        self.unflushed = true;
        Ok(())
    }

    /// Writes what is left (unless writing failed) and shuts the output.
    async fn finish<W: AsyncWrite + Unpin>(mut self, writer: &mut W) {
        while self.has_work() {
            if self.write_some(writer).await.is_err() {
                return;
            }
        }
        let _ = writer.shutdown().await;
    }
}

/// Appends `frame` as one line. An answer with no one-line form (a result
/// kept raw from elsewhere, holding a line break inside a string) is
/// replaced by an internal error for its id, so that the client waiting for
/// it is answered; anything else without one is dropped and logged rather
/// than written in half.
fn encode_frame(frame: &Frame, out: &mut Vec<u8>) {
    let Err(error) = ndjson::encode_frame(frame, out) else {
        return;
    };
    if let Frame::Single(Message::Response(response)) = frame {
        let answer = Message::error(
            Some(response.id.clone()),
            ErrorObject::new(error_codes::INTERNAL_ERROR, error.to_string()),
        );
        if ndjson::encode(&answer, out).is_ok() {
            return;
        }
    }
    tracing::warn!(%error, "dropping a message with no one-line form");
}

#[cfg(test)]
mod tests;

//! Newline-delimited JSON over any byte stream: [`NdjsonTransport`], which the stdio and Unix socket transports are built on.
//!
//! # Framing
//!
//! The rules of MCP "Transports" §stdio, for any pair of an
//! [`AsyncRead`] and an [`AsyncWrite`] (a child's stdout and stdin, a
//! socket, an in-memory pipe):
//!
//! - **One frame per line.** Each line is one JSON-RPC message, or one
//!   batch (an array of messages, 2025-03-26 only), as UTF-8 JSON ending in
//!   `\n`. Outgoing messages are written as compact JSON; a message whose
//!   raw payload holds a line break inside a string (invalid JSON kept raw
//!   from a peer) has no one-line form, so `send` refuses it with
//!   [`TransportError::Encode`], writes nothing, and the connection goes on.
//! - **Line endings.** A `\r` before the `\n` is dropped (CRLF from Windows
//!   servers), blank lines are skipped, and a UTF-8 byte order mark at the
//!   very start of the stream is skipped. The last line needs no `\n` when
//!   the stream ends after it.
//! - **Line length.** A line longer than [`NdjsonOptions::max_message_size`]
//!   (default 64 MiB, not counting the `\n`) ends the connection with
//!   [`TransportError::TooLarge`]; it is refused as soon as the limit is
//!   passed, never buffered whole. The stream cannot be trusted to be in
//!   step after it.
//! - **Malformed lines.** A line that is not a JSON-RPC frame (not UTF-8,
//!   not JSON, JSON that is not a message) is skipped and logged with
//!   `tracing`, so that a peer's stray output does not end the connection;
//!   the first such line is kept ([`NdjsonTransport::first_stray_line`]) to
//!   explain a handshake that fails. When the line reads as an answer to a
//!   request (a response whose only fault is invalid UTF-8, or an object
//!   with an `id` and a `result` or `error`), that request fails at once
//!   with [`Inbound::Undelivered`] and a [`TransportError::Protocol`]
//!   instead of waiting for its deadline.
//! - **The end.** The end of the input ends the connection
//!   (`Closed(None)`); a read error ends it with [`TransportError::Io`].
//!
//! # Bounds
//!
//! - **Inbound.** At most 256 decoded frames wait for
//!   [`Transport::recv`]; past that the stream is not read until they are
//!   taken (the peer's writes wait in the kernel's buffer).
//! - **Outbound.** `send` waits while 4 MiB of encoded messages wait to be
//!   written. And while more than [`NdjsonOptions::outbound_budget`]
//!   (default [`OUTBOUND_BUDGET`]) bytes are unsent, the stream is not read
//!   either: a peer that keeps writing requests (pings) and never reads
//!   the answers would otherwise make the client hold an answer for each,
//!   without bound. Its frames wait in the kernel's buffer until it reads.
//!   This mirrors the serving side's reply budget
//!   (`server::stream::REPLY_BUDGET`).
//!
//! ```
//! use mcp_transport::ndjson::{NdjsonOptions, NdjsonTransport};
//! use mcp_transport::{Inbound, Transport};
//! use mcp_proto::{Frame, Message};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // Any byte stream will do; this one is an in-memory pipe whose far end
//! // echoes every line back.
//! let (near, far) = tokio::io::duplex(64 * 1024);
//! let (far_read, mut far_write) = tokio::io::split(far);
//! tokio::spawn(async move {
//!     let mut far_read = far_read;
//!     tokio::io::copy(&mut far_read, &mut far_write).await
//! });
//! let (read, write) = tokio::io::split(near);
//! let transport = NdjsonTransport::new(read, write, NdjsonOptions::new("echo"))?;
//! let ping = Message::notification("notifications/ping", None::<&()>)?;
//! transport.send(ping.clone()).await?;
//! assert!(matches!(transport.recv().await, Inbound::Frame(Frame::Single(m)) if m == ping));
//! transport.close().await?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
// Without a byte-stream transport of ours, the hooks they use stay unused.
#![cfg_attr(
    not(all(unix, any(feature = "stdio", feature = "unix"))),
    allow(dead_code)
)]

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::codec::ndjson::{self, EncodeError, NdjsonDecoder, NdjsonError};
use mcp_proto::sync::lock;
use mcp_proto::{Frame, Message, RequestId};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, OnceCell, watch};
use tokio::task::{AbortHandle, JoinHandle};

use crate::transport::{FrameSink, Inbound, Transport, TransportError, TransportExtensions};

/// The default of [`NdjsonOptions::outbound_budget`]: 4 MiB of encoded
/// messages not yet written. Past it the peer is not read until they drain,
/// so a peer that writes and never reads costs a bounded amount of memory:
/// this, plus the 4 MiB `send` may queue, plus the answers to one read
/// (64 KiB) of its requests.
pub const OUTBOUND_BUDGET: usize = 4 * 1024 * 1024;

/// Options of an [`NdjsonTransport`]. Every field has a documented default.
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct NdjsonOptions {
    /// Who the peer is, for logs (a pid, a socket path).
    #[setters(into)]
    pub peer: String,
    /// The longest line accepted, in bytes, without its `\n` (default
    /// 64 MiB, [`ndjson::DEFAULT_MAX_MESSAGE_SIZE`]). A longer one ends the
    /// connection with [`TransportError::TooLarge`].
    pub max_message_size: usize,
    /// The most bytes of encoded messages left unsent before the peer is no
    /// longer read (default [`OUTBOUND_BUDGET`]).
    pub outbound_budget: usize,
}

impl NdjsonOptions {
    /// Options naming the peer `peer` in logs, with the defaults above.
    pub fn new(peer: impl Into<String>) -> Self {
        NdjsonOptions {
            peer: peer.into(),
            max_message_size: ndjson::DEFAULT_MAX_MESSAGE_SIZE,
            outbound_budget: OUTBOUND_BUDGET,
        }
    }
}

impl Default for NdjsonOptions {
    /// Options naming the peer `ndjson peer`.
    fn default() -> Self {
        NdjsonOptions::new("ndjson peer")
    }
}

/// A [`Transport`] speaking newline-delimited JSON over a byte stream (the
/// rules are the [module's](self)).
///
/// Two background tasks do the I/O: a reader decodes lines into a bounded
/// queue (so that [`Transport::recv`] is cancel safe) or hands them to a
/// [`FrameSink`], and a writer writes what `send` queued, in order, so that
/// bursts cost one write. Dropping the transport stops both at once and
/// drops the stream's halves; [`Transport::close`] first writes what is
/// queued (waiting up to 2 s) and shuts the write half down.
pub struct NdjsonTransport {
    core: Arc<Core>,
    /// `true` once `close` has begun: the writer flushes and lets go of the
    /// write half, the reader stops delivering, `recv` yields `Closed(None)`.
    closing: watch::Sender<bool>,
    tasks: Mutex<Tasks>,
    aborts: Vec<AbortHandle>,
    shutdown: OnceCell<()>,
}

/// The two I/O tasks, until a close takes them.
#[derive(Debug, Default)]
pub(crate) struct Tasks {
    pub(crate) writer: Option<JoinHandle<()>>,
    pub(crate) reader: Option<JoinHandle<()>>,
}

/// What the transport and its tasks share.
struct Core {
    peer: String,
    writer: Writer,
    inbound: InboundQueue,
    end: Mutex<Option<End>>,
    /// The first write failure; every later `send` reports it.
    write_error: Mutex<Option<(io::ErrorKind, String)>>,
    /// The first line that was not a message, as its preview.
    first_stray_line: Mutex<Option<String>>,
    outbound_budget: usize,
}

/// How the connection ended, as the reader saw it; `recv` builds its error
/// from this every time it reports `Closed`.
pub(crate) enum End {
    Clean,
    TooLarge(usize),
    Io(io::ErrorKind, String),
    /// An error the owner of the stream knows better (a server process that
    /// exited abnormally).
    #[cfg_attr(not(all(unix, feature = "stdio")), allow(dead_code))]
    Other(Arc<dyn Fn() -> TransportError + Send + Sync>),
}

impl fmt::Debug for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Clean => f.write_str("Clean"),
            End::TooLarge(limit) => write!(f, "TooLarge({limit})"),
            End::Io(kind, message) => write!(f, "Io({kind:?}, {message:?})"),
            End::Other(error) => write!(f, "Other({})", error()),
        }
    }
}

impl End {
    fn error(&self) -> Option<TransportError> {
        match self {
            End::Clean => None,
            End::TooLarge(limit) => Some(TransportError::TooLarge { limit: *limit }),
            End::Io(kind, message) => {
                Some(TransportError::Io(io::Error::new(*kind, message.clone())))
            }
            End::Other(error) => Some(error()),
        }
    }
}

/// A boxed future, for the hooks of [`Parts`].
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A write half that callers may write to without waiting, from any
/// thread: a lone message then goes out with no hop through the writer
/// task (a thread wake-up per call).
pub(crate) trait DirectWrite: Send + Sync + 'static {
    /// Writes what the stream takes now; `WouldBlock` when it takes nothing.
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize>;
    /// Waits until the stream may take bytes.
    fn writable(&self) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>>;
}

#[cfg(all(unix, feature = "stdio"))]
impl DirectWrite for tokio::net::unix::pipe::Sender {
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        tokio::net::unix::pipe::Sender::try_write(self, bytes)
    }

    fn writable(&self) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>> {
        Box::pin(tokio::net::unix::pipe::Sender::writable(self))
    }
}

#[cfg(all(unix, feature = "unix"))]
impl DirectWrite for tokio::net::unix::OwnedWriteHalf {
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        tokio::net::unix::OwnedWriteHalf::try_write(self, bytes)
    }

    fn writable(&self) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>> {
        Box::pin(tokio::net::unix::OwnedWriteHalf::writable(self))
    }
}

/// Where the writer writes.
pub(crate) enum Output {
    /// A stream callers may also write to directly.
    Direct(Arc<dyn DirectWrite>),
    /// Any stream, written by the writer task alone (and flushed after
    /// each write, then shut down on close).
    Stream(Box<dyn AsyncWrite + Send + Unpin>),
}

/// What [`NdjsonTransport::from_parts`] builds a transport from: the
/// stream's halves, and what its owner adds to how it ends.
pub(crate) struct Parts {
    pub(crate) reader: Box<dyn AsyncRead + Send + Unpin>,
    pub(crate) output: Output,
    pub(crate) options: NdjsonOptions,
    /// Reading stops when this resolves (a server process that exited
    /// while something else holds its stdout open).
    pub(crate) peer_gone: Option<BoxFuture<()>>,
    /// How a clean end of the input is reported (with a server's abnormal
    /// exit status, say); by default `Closed(None)`.
    pub(crate) at_eof: Option<Box<dyn FnOnce() -> BoxFuture<End> + Send>>,
}

impl NdjsonTransport {
    /// A transport reading frames from `reader` and writing them to
    /// `writer`, with its two I/O tasks spawned on the current tokio
    /// runtime. Outside a runtime it returns [`TransportError::Setup`].
    pub fn new<R, W>(
        reader: R,
        writer: W,
        options: NdjsonOptions,
    ) -> Result<NdjsonTransport, TransportError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            TransportError::Setup(
                "the newline-delimited JSON transport must be started within a tokio runtime"
                    .to_owned(),
            )
        })?;
        Ok(NdjsonTransport::from_parts(
            &runtime,
            Parts {
                reader: Box::new(reader),
                output: Output::Stream(Box::new(writer)),
                options,
                peer_gone: None,
                at_eof: None,
            },
        ))
    }

    /// A transport over `parts`, its tasks spawned on `runtime`.
    pub(crate) fn from_parts(runtime: &tokio::runtime::Handle, parts: Parts) -> NdjsonTransport {
        let Parts {
            reader,
            output,
            options,
            peer_gone,
            at_eof,
        } = parts;
        let direct = match &output {
            Output::Direct(direct) => Some(Arc::clone(direct)),
            Output::Stream(_) => None,
        };
        let core = Arc::new(Core {
            peer: options.peer,
            writer: Writer {
                state: Mutex::new(WriteState {
                    open: true,
                    direct,
                    buf: Vec::new(),
                    busy: false,
                    in_flight: 0,
                    last_direct: None,
                }),
                wake: Notify::new(),
                room: Notify::new(),
                drained: Notify::new(),
            },
            inbound: InboundQueue {
                state: Mutex::new(InboundState {
                    frames: VecDeque::new(),
                    undelivered: VecDeque::new(),
                    ended: false,
                    sink: None,
                    handing_over: false,
                }),
                ready: Notify::new(),
                room: Notify::new(),
                delivering: Mutex::new(()),
            },
            end: Mutex::new(None),
            write_error: Mutex::new(None),
            first_stray_line: Mutex::new(None),
            outbound_budget: options.outbound_budget,
        });
        let (closing, closing_rx) = watch::channel(false);
        let writer = runtime.spawn(write_loop(Arc::clone(&core), output, closing_rx.clone()));
        let reader = runtime.spawn(read_loop(ReadLoop {
            reader,
            core: Arc::clone(&core),
            closing: closing_rx,
            max_message_size: options.max_message_size,
            sink: None,
            peer_gone,
            at_eof,
        }));
        let aborts = vec![writer.abort_handle(), reader.abort_handle()];
        NdjsonTransport {
            core,
            closing,
            tasks: Mutex::new(Tasks {
                writer: Some(writer),
                reader: Some(reader),
            }),
            aborts,
            shutdown: OnceCell::new(),
        }
    }

    /// The first line the peer wrote that was not a JSON-RPC message (its
    /// first 120 characters, invalid UTF-8 replaced), if any: a server
    /// that prints a banner on stdout, say. Raw peer text: escape and bound
    /// it before showing it to a person (`mcp_proto::text`).
    pub fn first_stray_line(&self) -> Option<String> {
        lock(&self.core.first_stray_line).clone()
    }

    /// Whether writing has failed (a broken pipe): the peer is no longer
    /// reading, so a close need not wait for it.
    #[cfg_attr(not(all(unix, feature = "stdio")), allow(dead_code))]
    pub(crate) fn write_failed(&self) -> bool {
        lock(&self.core.write_error).is_some()
    }

    /// Marks the transport closing: the writer writes what is queued and
    /// lets go of the write half, the reader drops what it reads, `recv`
    /// reports `Closed(None)`.
    pub(crate) fn begin_close(&self) {
        self.closing.send_replace(true);
    }

    /// Takes the I/O tasks, for a close that waits on them itself.
    pub(crate) fn take_tasks(&self) -> Tasks {
        std::mem::take(&mut *lock(&self.tasks))
    }

    /// Lets go of a direct write half at once (the writer task, if any, was
    /// stopped): nothing is written any more, and the stream's write side
    /// closes once nothing else holds it.
    pub(crate) fn drop_output(&self) {
        let mut state = lock(&self.core.writer.state);
        state.open = false;
        state.direct = None;
        state.buf = Vec::new();
        drop(state);
        self.core.writer.room.notify_waiters();
    }

    /// How long [`Transport::close`] waits for the queued messages to be
    /// written before it drops the write half.
    const CLOSE_FLUSH_WAIT: Duration = Duration::from_secs(2);
}

impl Drop for NdjsonTransport {
    fn drop(&mut self) {
        self.closing.send_replace(true);
        for task in &self.aborts {
            task.abort();
        }
    }
}

impl fmt::Debug for NdjsonTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NdjsonTransport")
            .field("peer", &self.core.peer)
            .field("closing", &*self.closing.borrow())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Transport for NdjsonTransport {
    /// Writes `message` to the stream, or queues it for the writer task
    /// behind what is already waiting (waiting while 4 MiB is). It returns
    /// once the message is written or queued, not once the peer has read
    /// it: a write failure (a broken pipe) makes the next `send` fail.
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let mut closing = self.closing.subscribe();
        let mut message = message;
        loop {
            if *closing.borrow_and_update() {
                return Err(TransportError::Closed);
            }
            if let Some(error) = self.core.write_error() {
                return Err(error);
            }
            let room = self.core.writer.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.core.writer.offer(message, &self.core) {
                Offer::Taken => return Ok(()),
                Offer::Full(back) => message = back,
                Offer::Unencodable(_, error) => return Err(TransportError::Encode(error)),
            }
            tokio::select! {
                () = &mut room => {}
                _ = closing.wait_for(|closing| *closing) => return Err(TransportError::Closed),
            }
        }
    }

    /// Writes the message, or queues it behind what is waiting, unless too
    /// much is waiting; a full queue, a closing transport, a failed write
    /// or a message with no one-line form leave it to `send`, which waits
    /// or reports the error.
    fn try_send(&self, message: Message) -> Result<(), Message> {
        if *self.closing.borrow() || self.core.write_error().is_some() {
            return Err(message);
        }
        match self.core.writer.offer(message, &self.core) {
            Offer::Taken => Ok(()),
            Offer::Full(message) | Offer::Unencodable(message, _) => Err(message),
        }
    }

    /// Cancel safe: frames wait in a queue until a `recv` takes them.
    async fn recv(&self) -> Inbound {
        if *self.closing.borrow() {
            return Inbound::Closed(None);
        }
        // A frame already waiting needs no subscription to `closing` and no
        // `select!`: the common case under load.
        if let Some(inbound) = self.core.pop() {
            return inbound;
        }
        let mut closing = self.closing.subscribe();
        loop {
            if *closing.borrow_and_update() {
                return Inbound::Closed(None);
            }
            // Registered before the queue is checked, so that a frame pushed
            // in between is not missed.
            let ready = self.core.inbound.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            if let Some(inbound) = self.core.pop() {
                return inbound;
            }
            tokio::select! {
                biased;
                () = &mut ready => {}
                _ = closing.wait_for(|closing| *closing) => return Inbound::Closed(None),
            }
        }
    }

    /// A frame (or a failed request) the reader has already decoded, if
    /// any; an ended connection is left for `recv` to report.
    fn try_recv(&self) -> Option<Inbound> {
        if *self.closing.borrow() {
            return None;
        }
        match self.core.pop()? {
            Inbound::Closed(_) => None,
            inbound => Some(inbound),
        }
    }

    /// Writes what is queued (waiting up to 2 s for a peer that does not
    /// read), shuts the write half down and stops reading. Idempotent;
    /// concurrent calls wait for the same close.
    async fn close(&self) -> Result<(), TransportError> {
        self.shutdown
            .get_or_init(|| async {
                self.begin_close();
                let tasks = self.take_tasks();
                if let Some(mut writer) = tasks.writer
                    && tokio::time::timeout(Self::CLOSE_FLUSH_WAIT, &mut writer)
                        .await
                        .is_err()
                {
                    writer.abort();
                    self.drop_output();
                }
                if let Some(reader) = tasks.reader {
                    reader.abort();
                }
            })
            .await;
        Ok(())
    }

    /// The frame sink and [`NdjsonTransport::first_stray_line`].
    fn extensions(&self) -> Option<&dyn TransportExtensions> {
        Some(self)
    }
}

/// The reader can hand frames straight to a sink, and keeps the first line
/// that was not JSON.
impl TransportExtensions for NdjsonTransport {
    /// From now on the reader task hands each frame to `sink` itself (the
    /// frames already waiting first), so that a response reaches its caller
    /// without a hop through the driver.
    fn set_frame_sink(&self, sink: Arc<dyn FrameSink>) -> bool {
        self.core.inbound.set_sink(sink);
        true
    }

    /// [`NdjsonTransport::first_stray_line`].
    fn first_stray_line(&self) -> Option<String> {
        NdjsonTransport::first_stray_line(self)
    }
}

impl Core {
    fn write_error(&self) -> Option<TransportError> {
        let error = lock(&self.write_error);
        let (kind, message) = error.as_ref()?;
        Some(TransportError::Io(io::Error::new(*kind, message.clone())))
    }

    fn fail_writes(&self, error: &io::Error) {
        tracing::debug!(peer = %self.peer, %error, "cannot write to the peer");
        let mut first = lock(&self.write_error);
        if first.is_none() {
            *first = Some((error.kind(), error.to_string()));
        }
    }

    /// The next inbound item for `recv`: a failed request, a frame, the end
    /// (once every frame before it is taken), or `None` while nothing is
    /// ready.
    fn pop(&self) -> Option<Inbound> {
        match self.inbound.pop()? {
            Popped::Frame(frame) => Some(Inbound::Frame(frame)),
            Popped::Undelivered(id, error) => Some(Inbound::Undelivered {
                id: Some(id),
                error: TransportError::Protocol(error),
            }),
            Popped::End => Some(Inbound::Closed(
                lock(&self.end).as_ref().and_then(End::error),
            )),
        }
    }

    /// Bytes encoded and not yet written.
    fn unsent(&self) -> usize {
        let state = lock(&self.writer.state);
        state.buf.len() + state.in_flight
    }
}

/// Bytes that may wait for the writer task before `send` waits for room
/// (a message is always taken when nothing waits, however large).
const MAX_QUEUED_WRITE: usize = 4 * 1024 * 1024;
/// A message within this long of a caller's own write waits for the writer
/// task, to be written together with the messages around it.
const COALESCE_WINDOW: Duration = Duration::from_micros(10);
/// Frames the reader may hold before it stops reading (backpressure on the
/// peer rather than unbounded memory).
pub(crate) const INBOUND_QUEUE: usize = 256;
/// Failed requests waiting for `recv`; past it a failure is only logged
/// (and the request waits for its deadline).
const UNDELIVERED_QUEUE: usize = 256;
/// The size of one read. Reads of 256 KiB measured no faster for 1 MiB
/// results once a stdio server's pipe is large, and cost the client 0.2 MiB
/// more peak memory.
const READ_CHUNK: usize = 64 * 1024;
/// Write buffer capacity kept between writes.
const RETAINED_WRITE_BUFFER: usize = 256 * 1024;

/// The write side, shared by the callers that write directly and the
/// writer task that writes what the stream did not take at once.
struct Writer {
    state: Mutex<WriteState>,
    /// Wakes the writer task when bytes wait for it.
    wake: Notify,
    /// Wakes `send` calls waiting for room in the queue.
    room: Notify,
    /// Wakes the reader waiting for unsent bytes to drain below the budget.
    drained: Notify,
}

struct WriteState {
    /// `false` once the writer is done (closed, or a write failed):
    /// messages are dropped.
    open: bool,
    /// The write half, when callers may write to it themselves.
    direct: Option<Arc<dyn DirectWrite>>,
    /// Encoded bytes waiting for the writer task, in order.
    buf: Vec<u8>,
    /// The writer task is writing bytes it took from `buf`; until it is
    /// done, nobody else may write (order).
    busy: bool,
    /// How many of the bytes the writer task took are not written yet.
    in_flight: usize,
    /// When a caller last wrote to the stream itself.
    last_direct: Option<std::time::Instant>,
}

/// What became of a message offered to the [`Writer`].
enum Offer {
    /// Written to the stream, or queued for the writer task.
    Taken,
    /// The queue is full; the message is given back.
    Full(Message),
    /// The message has no newline-delimited form; nothing was written.
    Unencodable(Message, EncodeError),
}

impl Writer {
    /// Writes `message` to the stream if nothing waits and the stream takes
    /// it, leaving any rest for the writer task; queues it behind what
    /// waits otherwise. Gives it back when the queue is full or the message
    /// has no newline-delimited form.
    fn offer(&self, message: Message, core: &Core) -> Offer {
        // The message is freed after the lock is released.
        match self.write_or_queue(&message, core) {
            Ok(true) => Offer::Taken,
            Ok(false) => Offer::Full(message),
            Err(error) => Offer::Unencodable(message, error),
        }
    }

    /// [`Writer::offer`] under the lock; `false` when the queue is full.
    fn write_or_queue(&self, message: &Message, core: &Core) -> Result<bool, EncodeError> {
        let mut state = lock(&self.state);
        let idle = !state.busy && state.buf.is_empty();
        if !idle && state.buf.len() >= MAX_QUEUED_WRITE {
            return Ok(false);
        }
        let start = state.buf.len();
        ndjson::encode(message, &mut state.buf)?;
        if !state.open {
            // Closing: the message is dropped as a queued one would be.
            state.buf.clear();
            return Ok(true);
        }
        if !idle {
            return Ok(true);
        }
        // Messages in quick succession (many calls in flight) are left for
        // the writer task, which writes them together once the tasks that
        // are ready have run; a lone message goes straight to the stream
        // when it may be written directly.
        let now = std::time::Instant::now();
        let recent = state
            .last_direct
            .is_some_and(|last| now.duration_since(last) < COALESCE_WINDOW);
        let Some(direct) = state.direct.as_ref().filter(|_| !recent).map(Arc::clone) else {
            state.busy = true;
            drop(state);
            self.wake.notify_one();
            return Ok(true);
        };
        state.last_direct = Some(now);
        let written = match direct.try_write(state.buf.get(start..).unwrap_or_default()) {
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => 0,
            Err(error) => {
                core.fail_writes(&error);
                state.buf.clear();
                return Ok(true);
            }
        };
        state.buf.drain(..written);
        let left = !state.buf.is_empty();
        if !left {
            // A large message must not pin its buffer for the connection's life.
            state.buf.shrink_to(RETAINED_WRITE_BUFFER);
        }
        drop(state);
        if left {
            self.wake.notify_one();
        }
        Ok(true)
    }
}

/// Writes what callers queued, in order. Ends on a write error, when the
/// transport is dropped, or when closing (after writing what was queued);
/// the write half closes as it ends.
async fn write_loop(core: Arc<Core>, output: Output, mut closing: watch::Receiver<bool>) {
    let mut output = output;
    let writer = &core.writer;
    let mut buf = Vec::new();
    loop {
        let stop = tokio::select! {
            biased;
            () = writer.wake.notified() => false,
            _ = closing.wait_for(|closing| *closing) => true,
        };
        // Lets the other tasks that are ready queue their messages first.
        tokio::task::yield_now().await;
        loop {
            {
                let mut state = lock(&writer.state);
                if state.buf.is_empty() {
                    state.busy = false;
                    break;
                }
                std::mem::swap(&mut buf, &mut state.buf);
                state.busy = true;
                state.in_flight = buf.len();
            }
            writer.room.notify_waiters();
            if let Err(error) = write_all(&core, &mut output, &buf).await {
                core.fail_writes(&error);
                let mut state = lock(&writer.state);
                state.open = false;
                state.direct = None;
                state.in_flight = 0;
                state.buf = Vec::new();
                drop(state);
                writer.room.notify_waiters();
                writer.drained.notify_waiters();
                return;
            }
            buf.clear();
            buf.shrink_to(RETAINED_WRITE_BUFFER);
        }
        if stop {
            {
                let mut state = lock(&writer.state);
                state.open = false;
                // Nobody writes once `direct` is gone; dropping the last
                // handle closes the write side.
                state.direct = None;
            }
            if let Output::Stream(stream) = &mut output {
                let _ = stream.shutdown().await;
            }
            writer.room.notify_waiters();
            return;
        }
    }
}

/// Writes `bytes` whole, counting down the writer's bytes in flight as
/// they go (the reader waits on them, see [`NdjsonOptions::outbound_budget`]).
async fn write_all(core: &Core, output: &mut Output, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        let n = match output {
            Output::Direct(direct) => {
                direct.writable().await?;
                match direct.try_write(bytes) {
                    Ok(n) => n,
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(error) => return Err(error),
                }
            }
            Output::Stream(stream) => match stream.write(bytes).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => n,
            },
        };
        bytes = bytes.get(n..).unwrap_or_default();
        {
            let mut state = lock(&core.writer.state);
            state.in_flight = state.in_flight.saturating_sub(n);
        }
        core.writer.drained.notify_waiters();
    }
    if let Output::Stream(stream) = output {
        stream.flush().await?;
    }
    Ok(())
}

/// Decoded frames on their way from the reader task to `recv`, or to a
/// [`FrameSink`] once one is set. A plain queue under a lock: the driver
/// takes every ready frame in one pass ([`Transport::try_recv`]), and a
/// channel's per-frame semaphore and receiver lock cost more than the queue
/// itself (measured with callgrind).
struct InboundQueue {
    state: Mutex<InboundState>,
    /// Wakes `recv` when a frame arrives or the reader ends.
    ready: Notify,
    /// Wakes the reader when the queue has room again.
    room: Notify,
    /// Held by whoever hands frames to the sink, so that the frames that
    /// were waiting when it was set reach it before any later one.
    delivering: Mutex<()>,
}

struct InboundState {
    frames: VecDeque<Frame>,
    /// Requests answered by a line that could not be read, and why.
    undelivered: VecDeque<(RequestId, String)>,
    /// The reader has finished (or was stopped): once `frames` is empty,
    /// `recv` reports how the connection ended.
    ended: bool,
    /// Where frames go instead of `frames`, once set.
    sink: Option<Arc<dyn FrameSink>>,
    /// The frames that waited when the sink was set are being handed to
    /// it: the end is not reported before they are.
    handing_over: bool,
}

/// What [`InboundQueue::pop`] found.
enum Popped {
    Frame(Frame),
    Undelivered(RequestId, String),
    End,
}

/// What [`InboundQueue::push`] did with a frame.
enum Pushed {
    Queued,
    /// The queue is full: the frame is given back.
    Full(Frame),
    /// A sink is set: the frame is given back with it, to hand over.
    ToSink(Arc<dyn FrameSink>, Frame),
}

impl InboundQueue {
    /// The next item, or nothing yet.
    fn pop(&self) -> Option<Popped> {
        let mut state = lock(&self.state);
        if let Some((id, error)) = state.undelivered.pop_front() {
            return Some(Popped::Undelivered(id, error));
        }
        match state.frames.pop_front() {
            Some(frame) => {
                let was_full = state.frames.len() + 1 == INBOUND_QUEUE;
                drop(state);
                if was_full {
                    self.room.notify_one();
                }
                Some(Popped::Frame(frame))
            }
            None if state.ended && !state.handing_over => Some(Popped::End),
            None => None,
        }
    }

    /// Queues `frame` unless the queue is full or a sink is set.
    fn push(&self, frame: Frame) -> Pushed {
        let mut state = lock(&self.state);
        if let Some(sink) = &state.sink {
            return Pushed::ToSink(Arc::clone(sink), frame);
        }
        if state.frames.len() >= INBOUND_QUEUE {
            return Pushed::Full(frame);
        }
        let was_empty = state.frames.is_empty() && state.undelivered.is_empty();
        state.frames.push_back(frame);
        drop(state);
        // A `recv` waits only on an empty queue.
        if was_empty {
            self.ready.notify_one();
        }
        Pushed::Queued
    }

    /// Queues the failure of request `id`, for `recv` (whether or not a
    /// sink is set); `false` when too many wait.
    fn push_undelivered(&self, id: RequestId, error: String) -> bool {
        let mut state = lock(&self.state);
        if state.undelivered.len() >= UNDELIVERED_QUEUE {
            return false;
        }
        state.undelivered.push_back((id, error));
        drop(state);
        self.ready.notify_one();
        true
    }

    /// Sends every later frame to `sink`, after the frames already waiting.
    fn set_sink(&self, sink: Arc<dyn FrameSink>) {
        // Held while the waiting frames are handed over: a frame the reader
        // decodes meanwhile waits for them (see `hand_over`).
        let _delivering = lock(&self.delivering);
        let waiting = {
            let mut state = lock(&self.state);
            state.sink = Some(Arc::clone(&sink));
            state.handing_over = true;
            std::mem::take(&mut state.frames)
        };
        // A reader waiting for room finds the sink when it tries again.
        self.room.notify_one();
        if !waiting.is_empty() {
            sink.frames(&mut waiting.into_iter());
        }
        lock(&self.state).handing_over = false;
        // A `recv` that saw no end while the frames were handed over.
        self.ready.notify_one();
    }

    /// Hands frames to the sink in one call, in order with the others.
    fn hand_over(&self, sink: &dyn FrameSink, frames: &mut dyn Iterator<Item = Frame>) {
        let _delivering = lock(&self.delivering);
        sink.frames(frames);
    }

    fn end(&self) {
        lock(&self.state).ended = true;
        self.ready.notify_one();
    }
}

/// What the reader task works with.
struct ReadLoop {
    reader: Box<dyn AsyncRead + Send + Unpin>,
    core: Arc<Core>,
    closing: watch::Receiver<bool>,
    max_message_size: usize,
    /// The sink, once the reader has seen that one is set (it is never
    /// unset), so that later frames skip the queue's lock.
    sink: Option<Arc<dyn FrameSink>>,
    peer_gone: Option<BoxFuture<()>>,
    at_eof: Option<Box<dyn FnOnce() -> BoxFuture<End> + Send>>,
}

/// Ends the frame queue however the reader stops (aborted included), so
/// that `recv` reports `Closed` rather than waiting for ever.
impl Drop for ReadLoop {
    fn drop(&mut self) {
        self.core.inbound.end();
    }
}

/// Decodes the input until the connection ends, then records how it ended
/// and ends the frame queue, so that `recv` reports `Closed`.
async fn read_loop(mut task: ReadLoop) {
    let end = read_frames(&mut task).await;
    let end = if *task.closing.borrow() {
        End::Clean
    } else {
        end
    };
    tracing::debug!(peer = %task.core.peer, ?end, "the peer's output ended");
    *lock(&task.core.end) = Some(end);
}

async fn read_frames(task: &mut ReadLoop) -> End {
    let mut decoder = NdjsonDecoder::with_max_message_size(task.max_message_size);
    let mut buf = vec![0; READ_CHUNK];
    let mut batch = Vec::new();
    let mut peer_gone = task
        .peer_gone
        .take()
        .unwrap_or_else(|| Box::pin(std::future::pending()));
    loop {
        if !wait_for_budget(task).await {
            // Closing while the budget was spent: nothing more is delivered.
            return End::Clean;
        }
        let read = tokio::select! {
            // Reading first: the owner's grace only counts while the input
            // is silent, never while data is waiting.
            biased;
            read = task.reader.read(&mut buf) => read,
            () = &mut peer_gone => {
                tracing::debug!(peer = %task.core.peer, "the peer is gone but its output is held open");
                break;
            }
        };
        let chunk = match read {
            Ok(0) => break,
            Ok(n) => buf.get(..n).unwrap_or_default(),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return End::Io(error.kind(), error.to_string()),
        };
        decoder.push(chunk);
        while let Some(item) = decoder.next_frame() {
            if let Some(end) = decoded(task, &mut batch, item) {
                deliver(task, &mut batch).await;
                return end;
            }
        }
        // Every frame of the read at once: the sink takes its lock and
        // wakes its callers once for them all.
        deliver(task, &mut batch).await;
    }
    while let Some(item) = decoder.finish() {
        if let Some(end) = decoded(task, &mut batch, item) {
            deliver(task, &mut batch).await;
            return end;
        }
    }
    deliver(task, &mut batch).await;
    match task.at_eof.take() {
        Some(at_eof) => at_eof().await,
        None => End::Clean,
    }
}

/// Waits while more than the outbound budget is unsent (the peer is not
/// reading what we write); `false` when the transport closes meanwhile.
async fn wait_for_budget(task: &mut ReadLoop) -> bool {
    let core = Arc::clone(&task.core);
    let mut paused = false;
    loop {
        let drained = core.writer.drained.notified();
        tokio::pin!(drained);
        drained.as_mut().enable();
        let unsent = core.unsent();
        if unsent < core.outbound_budget || !lock(&core.writer.state).open {
            if paused {
                tracing::debug!(peer = %core.peer, unsent, "the peer reads again: reading resumes");
            }
            return true;
        }
        if !paused {
            paused = true;
            tracing::debug!(
                peer = %core.peer,
                unsent,
                budget = core.outbound_budget,
                "the peer does not read what we write: reading pauses"
            );
        }
        tokio::select! {
            () = &mut drained => {}
            _ = task.closing.wait_for(|closing| *closing) => return false,
        }
    }
}

/// Takes one decoded line: a frame joins `batch`, to be handed on with the
/// others of its read; `Some` when the line ends the connection.
fn decoded(
    task: &ReadLoop,
    batch: &mut Vec<Frame>,
    item: Result<Frame, NdjsonError>,
) -> Option<End> {
    let peer = &task.core.peer;
    match item {
        Ok(frame) => batch.push(frame),
        Err(NdjsonError::TooLarge { limit }) => {
            tracing::warn!(
                %peer,
                limit,
                "the peer sent a message over the size limit; closing the connection"
            );
            return Some(End::TooLarge(limit));
        }
        Err(NdjsonError::NotJson {
            preview,
            line_len,
            source,
            answers,
            ..
        }) => {
            tracing::warn!(%peer, line_len, %preview, error = %source, "skipping a line that is not a JSON-RPC message");
            if let Some(id) = answers {
                let error = format!(
                    "the peer's answer to this request is not a JSON-RPC message ({source})"
                );
                if !task.core.inbound.push_undelivered(id, error) {
                    tracing::warn!(%peer, "too many unreadable answers wait; one is dropped");
                }
            }
            let mut first = lock(&task.core.first_stray_line);
            if first.is_none() {
                *first = Some(preview);
            }
        }
        Err(error) => tracing::warn!(%peer, %error, "skipping an undecodable line"),
    }
    None
}

/// Hands the frames in `batch` on, in order, and empties it: all to the
/// sink in one call once one is set, else into the queue for `recv`.
async fn deliver(task: &mut ReadLoop, batch: &mut Vec<Frame>) {
    if batch.is_empty() {
        return;
    }
    // Once closing, frames are dropped, but the input is still read so
    // that a peer writing as it shuts down does not block.
    if *task.closing.borrow() {
        batch.clear();
        return;
    }
    if let Some(sink) = &task.sink {
        task.core
            .inbound
            .hand_over(sink.as_ref(), &mut batch.drain(..));
        return;
    }
    let mut frames = batch.drain(..);
    while let Some(frame) = frames.next() {
        if *task.closing.borrow() {
            return;
        }
        if let Some((sink, frame)) = queue(task, frame).await {
            // The sink was set meanwhile: this frame and the rest go to it.
            task.core
                .inbound
                .hand_over(sink.as_ref(), &mut std::iter::once(frame).chain(frames));
            task.sink = Some(sink);
            return;
        }
    }
}

/// Queues one frame for `recv`, waiting for room when the queue is full;
/// gives it back with the sink when one has been set.
async fn queue(task: &mut ReadLoop, frame: Frame) -> Option<(Arc<dyn FrameSink>, Frame)> {
    let core = Arc::clone(&task.core);
    let mut frame = match core.inbound.push(frame) {
        Pushed::Queued => return None,
        Pushed::ToSink(sink, frame) => return Some((sink, frame)),
        Pushed::Full(back) => back,
    };
    loop {
        // Registered before the push, so that room made in between is not
        // missed.
        let room = core.inbound.room.notified();
        tokio::pin!(room);
        room.as_mut().enable();
        match core.inbound.push(frame) {
            Pushed::Queued => return None,
            Pushed::ToSink(sink, frame) => return Some((sink, frame)),
            Pushed::Full(back) => frame = back,
        }
        tokio::select! {
            () = &mut room => {}
            // Closing: the frame is dropped, as in `deliver`.
            _ = task.closing.wait_for(|closing| *closing) => return None,
        }
    }
}

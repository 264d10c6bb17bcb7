//! The stdio transport: an MCP server run as a child process, spoken to over its stdin and stdout.
//!
//! MCP spec, "Transports" §stdio, and its shutdown advice. The server is spawned
//! directly (never through a shell) in a process group of its own. Four
//! background tasks do the I/O, so that no pipe is ever left unread:
//!
//! - the **writer** flushes stdin: [`Transport::try_send`] and
//!   [`Transport::send`] encode a message straight into the pipe when
//!   nothing is waiting to be written and no other message went out in the
//!   last few microseconds (no hop through another task, which cost a thread
//!   wake-up per call), and otherwise append it to a buffer that the writer
//!   writes as a whole, in order, once the ready tasks have added theirs, so
//!   that bursts cost one system call;
//! - the **reader** decodes stdout with the NDJSON codec and hands frames to
//!   [`Transport::recv`] and [`Transport::try_recv`] through a bounded queue
//!   (which makes `recv` cancel safe, and stops reading while it is full);
//! - the **stderr drain** keeps the last bytes of stderr in a ring buffer for
//!   diagnostics and logs each line with `tracing`; a server flooding stderr
//!   never stalls on a full pipe;
//! - the **reaper** waits for the server to exit, records its status, and
//!   kills whatever the server left behind in its process group (an `npx`
//!   launcher's children), so that no orphan survives the server.
//!
//! Unix only: process groups and signals are how shutdown reaches an
//! `npx`-style launcher's children.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::codec::ndjson::{self, EncodeError, NdjsonDecoder, NdjsonError};
use mcp_proto::{Frame, Message};
use rustix::process::{Pid, Signal};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::{Notify, OnceCell, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::{Instant, timeout, timeout_at};

use crate::transport::{FrameSink, Inbound, Transport, TransportError};

/// How a stdio server is started and stopped. Every field is public; start
/// from [`StdioOptions::new`] and set what differs from the defaults.
#[derive(Clone, derive_setters::Setters)]
#[non_exhaustive]
pub struct StdioOptions {
    /// The program: an absolute path, a path relative to the working
    /// directory (it contains a `/`), or a name looked up in the child's
    /// `PATH`. Never interpreted by a shell.
    pub command: String,
    /// The arguments, passed verbatim.
    pub args: Vec<String>,
    /// Literal environment variables; they override everything else.
    pub env: Vec<(String, String)>,
    /// Names of host environment variables copied to the child when set.
    pub env_passthrough: Vec<String>,
    /// Copy the host's proxy and certificate variables ([`NETWORK_ENV`]:
    /// `HTTPS_PROXY`, `NO_PROXY`, `SSL_CERT_FILE`, `NODE_EXTRA_CA_CERTS`,
    /// ...) to the child when set (default true): a server behind a
    /// corporate proxy or a private CA fails without them.
    pub network_env: bool,
    /// The working directory. `None` or an empty path inherits the host's;
    /// otherwise it must be absolute.
    pub cwd: Option<PathBuf>,
    /// The longest stdout line accepted, in bytes (default 64 MiB). A longer
    /// one ends the connection with [`TransportError::TooLarge`].
    pub max_message_size: usize,
    /// How much of the end of stderr [`StdioTransport::stderr_tail`] keeps
    /// (default 64 KiB).
    pub stderr_tail_bytes: usize,
    /// How long [`Transport::close`] waits for the server to exit after
    /// closing its stdin, before SIGTERM (default 2 s).
    pub close_stdin_wait: Duration,
    /// How long [`Transport::close`] waits after SIGTERM, before SIGKILL
    /// (default 2 s).
    pub sigterm_wait: Duration,
}

impl StdioOptions {
    /// The default longest stdout line: 64 MiB.
    pub const DEFAULT_MAX_MESSAGE_SIZE: usize = ndjson::DEFAULT_MAX_MESSAGE_SIZE;
    /// The default stderr tail: 64 KiB.
    pub const DEFAULT_STDERR_TAIL_BYTES: usize = 64 * 1024;
    /// The default wait after closing stdin: 2 s.
    pub const DEFAULT_CLOSE_STDIN_WAIT: Duration = Duration::from_secs(2);
    /// The default wait after SIGTERM: 2 s.
    pub const DEFAULT_SIGTERM_WAIT: Duration = Duration::from_secs(2);

    /// Options that run `command` with no arguments and the defaults above.
    pub fn new(command: impl Into<String>) -> Self {
        StdioOptions {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            env_passthrough: Vec::new(),
            network_env: true,
            cwd: None,
            max_message_size: Self::DEFAULT_MAX_MESSAGE_SIZE,
            stderr_tail_bytes: Self::DEFAULT_STDERR_TAIL_BYTES,
            close_stdin_wait: Self::DEFAULT_CLOSE_STDIN_WAIT,
            sigterm_wait: Self::DEFAULT_SIGTERM_WAIT,
        }
    }
}

impl Default for StdioOptions {
    /// Options without a command: set [`StdioOptions::command`] before use.
    fn default() -> Self {
        StdioOptions::new(String::new())
    }
}

impl fmt::Debug for StdioOptions {
    /// Literal environment values are often credentials: only their names
    /// are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("StdioOptions")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &env_names)
            .field("env_passthrough", &self.env_passthrough)
            .field("network_env", &self.network_env)
            .field("cwd", &self.cwd)
            .field("max_message_size", &self.max_message_size)
            .field("stderr_tail_bytes", &self.stderr_tail_bytes)
            .field("close_stdin_wait", &self.close_stdin_wait)
            .field("sigterm_wait", &self.sigterm_wait)
            .finish()
    }
}

/// The error inside [`TransportError::Other`] when the server process ended
/// abnormally (a nonzero exit code or a signal) and so ended the connection.
/// It carries the exit status only: stderr never goes into errors; read
/// [`StdioTransport::stderr_tail`] for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("server process exited abnormally ({status})")]
#[non_exhaustive]
pub struct ServerExited {
    /// How the process ended.
    pub status: ExitStatus,
}

/// A [`Transport`] to an MCP server run as a child process.
///
/// Start one with [`StdioTransport::spawn`]. Dropping it kills the server's
/// whole process group at once (SIGKILL); [`Transport::close`] is the polite
/// way: close stdin, wait, SIGTERM the group, wait, SIGKILL the group.
pub struct StdioTransport {
    command: String,
    /// The server's pid, which is also its process group id.
    pid: u32,
    pgid: Option<Pid>,
    close_stdin_wait: Duration,
    sigterm_wait: Duration,
    writer: Arc<Writer>,
    inbound: Arc<InboundQueue>,
    shared: Arc<Shared>,
    /// `true` once `close` has begun: the writer flushes and lets go of
    /// stdin, the reader stops delivering, `recv` yields `Closed(None)`.
    closing: watch::Sender<bool>,
    child: watch::Receiver<ChildState>,
    tasks: Mutex<Tasks>,
    aborts: Vec<AbortHandle>,
    shutdown: OnceCell<()>,
}

impl StdioTransport {
    /// Starts the server and its I/O tasks.
    ///
    /// Synchronous (starting a process does not wait on the child), but it
    /// must be called within a tokio runtime with I/O and time enabled, on
    /// which the tasks run; outside one it returns
    /// [`TransportError::Setup`].
    ///
    /// The child gets a clean environment: PATH, HOME, USER, LOGNAME, SHELL,
    /// TERM, LANG, every LC_*, TMPDIR and TZ copied from the host when set,
    /// then the proxy and certificate variables ([`NETWORK_ENV`]) unless
    /// [`StdioOptions::network_env`] is off,
    /// then the names in [`StdioOptions::env_passthrough`] that the host has,
    /// then the literal [`StdioOptions::env`], which win.
    ///
    /// Errors ([`TransportError::Setup`], with a message for people that
    /// names the command): no command, a relative or missing working
    /// directory, a malformed environment variable, a command that cannot be
    /// found (for a bare name, after searching the child's `PATH`) or run.
    pub fn spawn(options: StdioOptions) -> Result<StdioTransport, TransportError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            TransportError::Setup(
                "the stdio transport must be started within a tokio runtime".to_owned(),
            )
        })?;
        let command = options.command.clone();
        if command.is_empty() {
            return Err(TransportError::Setup(
                "no command given for the stdio server".to_owned(),
            ));
        }
        let cwd = working_directory(options.cwd.as_deref())?;
        let env = child_environment(&options)?;
        let path = env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.as_os_str());
        find_command(&command, cwd.as_deref(), path)?;

        let mut cmd = Command::new(&command);
        cmd.args(&options.args)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own, so that shutdown reaches everything the
            // server starts (an `npx` launcher's node process, say).
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &cwd {
            cmd.current_dir(cwd);
        }
        let mut child = cmd.spawn().map_err(|error| spawn_error(&command, &error))?;
        let pipes = (
            child.id(),
            child.stdin.take(),
            child.stdout.take(),
            child.stderr.take(),
        );
        let (Some(pid), Some(stdin), Some(stdout), Some(stderr)) = pipes else {
            // `kill_on_drop` ends the child as it is dropped here.
            return Err(TransportError::Setup(format!(
                "cannot start `{command}`: its pipes were not set up"
            )));
        };
        let pgid = i32::try_from(pid).ok().and_then(Pid::from_raw);
        // A larger stdout pipe lets a server write a large result in a few
        // writes instead of stalling every 64 KiB (Linux's default) until we
        // have read: a 1 MiB result then crosses in one or two wake-ups
        // rather than sixteen. Best effort: an unprivileged process past
        // its pipe-memory quota keeps the default, which only costs speed.
        if let Err(error) = rustix::pipe::fcntl_setpipe_size(&stdout, STDOUT_PIPE_SIZE) {
            tracing::debug!(pid, %error, "cannot enlarge the stdio server's stdout pipe");
        }

        let shared = Arc::new(Shared {
            end: Mutex::new(None),
            write_error: Mutex::new(None),
            stderr: Mutex::new(Ring::new(options.stderr_tail_bytes)),
        });
        let (closing, closing_rx) = watch::channel(false);
        let (state_tx, state_rx) = watch::channel(ChildState::Running);
        // Non-blocking writes from any thread need the pipe itself rather
        // than the child's `AsyncWrite` handle.
        let pipe = stdin
            .into_owned_fd()
            .and_then(tokio::net::unix::pipe::Sender::from_owned_fd)
            .map_err(|error| {
                TransportError::Setup(format!("cannot set up `{command}`'s stdin: {error}"))
            })?;
        let writer = Arc::new(Writer {
            state: Mutex::new(WriteState {
                pipe: Some(Arc::new(pipe)),
                buf: Vec::new(),
                busy: false,
                last_direct: None,
            }),
            wake: Notify::new(),
            room: Notify::new(),
        });
        let inbound = Arc::new(InboundQueue {
            state: Mutex::new(InboundState {
                frames: VecDeque::new(),
                ended: false,
                sink: None,
                handing_over: false,
            }),
            ready: Notify::new(),
            room: Notify::new(),
            delivering: Mutex::new(()),
        });

        runtime.spawn(reap(child, pgid, state_tx));
        let writer_task = runtime.spawn(write_loop(
            Arc::clone(&writer),
            closing_rx.clone(),
            Arc::clone(&shared),
            pid,
        ));
        let reader = runtime.spawn(read_loop(ReadLoop {
            stdout,
            frames: Arc::clone(&inbound),
            closing: closing_rx,
            child: state_rx.clone(),
            max_message_size: options.max_message_size,
            shared: Arc::clone(&shared),
            pid,
            sink: None,
        }));
        let stderr = runtime.spawn(drain_stderr(stderr, Arc::clone(&shared), pid));
        let aborts = vec![
            writer_task.abort_handle(),
            reader.abort_handle(),
            stderr.abort_handle(),
        ];
        tracing::debug!(pid, command = %command, "stdio server started");

        Ok(StdioTransport {
            command,
            pid,
            pgid,
            close_stdin_wait: options.close_stdin_wait,
            sigterm_wait: options.sigterm_wait,
            writer,
            inbound,
            shared,
            closing,
            child: state_rx,
            tasks: Mutex::new(Tasks {
                writer: Some(writer_task),
                reader: Some(reader),
                stderr: Some(stderr),
            }),
            aborts,
            shutdown: OnceCell::new(),
        })
    }

    /// The server's process id (also its process group id) while it runs;
    /// `None` once it has exited and been reaped.
    pub fn pid(&self) -> Option<u32> {
        match *self.child.borrow() {
            ChildState::Running => Some(self.pid),
            ChildState::Exited(_) | ChildState::Lost => None,
        }
    }

    /// How the server exited, once it has.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        match *self.child.borrow() {
            ChildState::Exited(status) => Some(status),
            ChildState::Running | ChildState::Lost => None,
        }
    }

    /// The last [`StdioOptions::stderr_tail_bytes`] bytes the server wrote
    /// to stderr, decoded lossily, for logs and diagnostics (never put into
    /// errors). After [`Transport::close`] returns it includes the server's
    /// very last writes (unless a process that left the server's group
    /// keeps stderr open).
    pub fn stderr_tail(&self) -> String {
        lock(&self.shared.stderr).text()
    }

    fn signal_group(&self, signal: Signal) {
        // Only while the server has not been reaped: afterwards its pid may
        // be reused, and the reaper has already dealt with the group.
        if let (Some(pgid), true) = (self.pgid, self.child.borrow().is_running()) {
            signal_group(pgid, signal);
        }
    }

    fn take_tasks(&self) -> Tasks {
        let mut tasks = lock(&self.tasks);
        Tasks {
            writer: tasks.writer.take(),
            reader: tasks.reader.take(),
            stderr: tasks.stderr.take(),
        }
    }

    /// The shutdown sequence of MCP "Lifecycle" §shutdown: close stdin, wait, SIGTERM the
    /// group, wait, SIGKILL the group. The reaper kills what is left of the
    /// group once the server itself has exited.
    ///
    /// A connection that is dead (the server closed stdout, sent a line
    /// over the size limit or stopped reading stdin, before or during the
    /// close) has nobody left to finish politely: from the moment it is
    /// known dead, each wait is at most [`DEAD_CONNECTION_WAIT`], so a
    /// process that outlived its connection is ended at once rather than
    /// after the whole grace.
    async fn shut_down(&self) {
        let broken_stdin = lock(&self.shared.write_error).is_some();
        self.closing.send_replace(true);
        let mut tasks = self.take_tasks();
        let stdin_wait = if broken_stdin {
            self.close_stdin_wait.min(DEAD_CONNECTION_WAIT)
        } else {
            self.close_stdin_wait
        };
        let deadline = Instant::now() + stdin_wait;
        // The writer writes what is already queued and drops stdin. A server
        // that does not read its stdin keeps it waiting: then stdin is
        // dropped when the wait is over (or once stdout has ended).
        if let Some(mut writer) = tasks.writer {
            let written = tokio::select! {
                biased;
                written = timeout_at(deadline, &mut writer) => written.is_ok(),
                () = stdout_ended(&mut tasks.reader) => false,
            };
            if !written {
                writer.abort();
                // The last handle on stdin: dropping it closes the pipe.
                lock(&self.writer.state).pipe = None;
            }
        }
        let mut child = self.child.clone();
        if !wait_unless_dead(&mut child, deadline, &mut tasks.reader).await {
            tracing::debug!(pid = self.pid, "stdio server ignored stdin EOF: SIGTERM");
            self.signal_group(Signal::TERM);
            let deadline = Instant::now() + self.sigterm_wait;
            if !wait_unless_dead(&mut child, deadline, &mut tasks.reader).await {
                tracing::debug!(pid = self.pid, "stdio server ignored SIGTERM: SIGKILL");
                self.signal_group(Signal::KILL);
                if !wait_for_exit(&mut child, Instant::now() + KILL_WAIT).await {
                    tracing::warn!(pid = self.pid, "stdio server did not exit after SIGKILL");
                }
            }
        }
        // The group is gone, so stderr ends now; wait for its last bytes so
        // that `stderr_tail` is complete, but not for an escaped process.
        if let Some(mut stderr) = tasks.stderr
            && timeout(STDERR_DRAIN_WAIT, &mut stderr).await.is_err()
        {
            stderr.abort();
        }
        if let Some(reader) = tasks.reader {
            reader.abort();
        }
    }
}

/// Resolves once the reader has finished (stdout ended, an oversize line, a
/// read error); `reader` is then `None`, and so it resolves at once. The
/// reader also finishes a moment after the server exits.
async fn stdout_ended(reader: &mut Option<JoinHandle<()>>) {
    if let Some(handle) = reader.as_mut() {
        let _ = handle.await;
        *reader = None;
    }
}

/// Waits for the server to exit until `deadline`, or, once its stdout has
/// ended (the connection is dead), for at most [`DEAD_CONNECTION_WAIT`]
/// more. Whether it exited.
async fn wait_unless_dead(
    child: &mut watch::Receiver<ChildState>,
    deadline: Instant,
    reader: &mut Option<JoinHandle<()>>,
) -> bool {
    let mut exit = child.clone();
    tokio::select! {
        biased;
        exited = wait_for_exit(&mut exit, deadline) => return exited,
        () = stdout_ended(reader) => {}
    }
    wait_for_exit(child, deadline.min(Instant::now() + DEAD_CONNECTION_WAIT)).await
}

#[async_trait]
impl Transport for StdioTransport {
    /// Writes `message` to stdin, or queues it for the writer task behind
    /// what is already waiting (waiting while too much is). It returns once
    /// the message is written or queued, not once the server has read it: a
    /// write failure (a broken pipe) makes the next `send` fail.
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let mut closing = self.closing.subscribe();
        let mut message = message;
        loop {
            if *closing.borrow_and_update() {
                return Err(TransportError::Closed);
            }
            if let Some(error) = self.shared.write_error() {
                return Err(error);
            }
            let room = self.writer.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.writer.offer(message, &self.shared, self.pid) {
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

    /// Writes the message to stdin, or queues it behind what is waiting,
    /// unless too much is waiting; a full queue, a closing transport, a
    /// broken pipe or a message with no one-line form leave it to `send`,
    /// which waits or reports the error.
    fn try_send(&self, message: Message) -> Result<(), Message> {
        if *self.closing.borrow() || self.shared.write_error().is_some() {
            return Err(message);
        }
        match self.writer.offer(message, &self.shared, self.pid) {
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
        match self.inbound.pop() {
            Some(Some(frame)) => return Inbound::Frame(frame),
            Some(None) => return Inbound::Closed(self.shared.end_error()),
            None => {}
        }
        let mut closing = self.closing.subscribe();
        loop {
            if *closing.borrow_and_update() {
                return Inbound::Closed(None);
            }
            // Registered before the queue is checked, so that a frame pushed
            // in between is not missed.
            let ready = self.inbound.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            match self.inbound.pop() {
                Some(Some(frame)) => return Inbound::Frame(frame),
                Some(None) => return Inbound::Closed(self.shared.end_error()),
                None => {}
            }
            tokio::select! {
                biased;
                () = &mut ready => {}
                _ = closing.wait_for(|closing| *closing) => return Inbound::Closed(None),
            }
        }
    }

    /// A frame the reader has already decoded, if any; an ended connection
    /// is left for `recv` to report.
    fn try_recv(&self) -> Option<Inbound> {
        if *self.closing.borrow() {
            return None;
        }
        match self.inbound.pop() {
            Some(Some(frame)) => Some(Inbound::Frame(frame)),
            _ => None,
        }
    }

    /// From now on the reader task hands each frame to `sink` itself (the
    /// frames already waiting first), so that a response reaches its caller
    /// without a hop through the driver.
    fn set_frame_sink(&self, sink: Arc<dyn FrameSink>) -> bool {
        self.inbound.set_sink(sink);
        true
    }

    /// Closes stdin and waits up to [`StdioOptions::close_stdin_wait`] for
    /// the server to exit, then SIGTERMs its process group and waits up to
    /// [`StdioOptions::sigterm_wait`], then SIGKILLs the group. Reaps the
    /// server. Once the connection is dead (stdout closed, an oversize
    /// line, a broken stdin), before or during the close, each wait is at
    /// most 200 ms: the server can no longer take part in a polite close.
    /// Idempotent; concurrent calls wait for the same shutdown.
    async fn close(&self) -> Result<(), TransportError> {
        self.shutdown.get_or_init(|| self.shut_down()).await;
        Ok(())
    }

    /// [`StdioTransport::stderr_tail`]; `None` while the server wrote
    /// nothing there.
    fn stderr_tail(&self) -> Option<String> {
        Some(StdioTransport::stderr_tail(self)).filter(|tail| !tail.is_empty())
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.closing.send_replace(true);
        self.signal_group(Signal::KILL);
        for task in &self.aborts {
            task.abort();
        }
    }
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("command", &self.command)
            .field("pid", &self.pid)
            .field("state", &*self.child.borrow())
            .finish_non_exhaustive()
    }
}

/// Bytes that may wait for the writer task before `send` waits for room
/// (a message is always taken when nothing waits, however large).
const MAX_QUEUED_WRITE: usize = 4 * 1024 * 1024;
/// A message within this long of a caller's own write waits for the writer
/// task, to be written together with the messages around it.
const COALESCE_WINDOW: Duration = Duration::from_micros(10);
/// Frames the reader may hold before it stops reading stdout (backpressure
/// on the server rather than unbounded memory).
const INBOUND_QUEUE: usize = 256;
/// The size of one read from stdout. Reads of 256 KiB measured no faster
/// for 1 MiB results once the pipe is large, and cost the client 0.2 MiB
/// more peak memory.
const READ_CHUNK: usize = 64 * 1024;
/// The size of one read from stderr, which carries logs, not results.
const STDERR_READ_CHUNK: usize = 16 * 1024;
/// The capacity asked for the server's stdout pipe (Linux's
/// `/proc/sys/fs/pipe-max-size` is 1 MiB by default).
const STDOUT_PIPE_SIZE: usize = 1024 * 1024;
/// Write buffer capacity kept between writes.
const RETAINED_WRITE_BUFFER: usize = 256 * 1024;
/// After stdout EOF, how long the reader waits to learn the exit status. A
/// dying server's status follows its EOF within microseconds, so this only
/// delays the report for a server that closed stdout and still runs (which
/// ended the connection cleanly); the slack is for a starved runtime.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);
/// After the server exits, how long a stdout held open by a process outside
/// its group may stay silent before the connection is considered over.
const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(100);
/// Each of `close`'s waits (after closing stdin, after SIGTERM) when the
/// connection had already ended: a server that closed its stdout, or that
/// the reader gave up on, is not finishing anything for us, and one that
/// is exiting anyway has done so by now.
const DEAD_CONNECTION_WAIT: Duration = Duration::from_millis(200);
/// How long `close` waits for the server to be reaped after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long `close` waits for stderr to reach EOF once the server is gone.
const STDERR_DRAIN_WAIT: Duration = Duration::from_millis(500);
/// The longest stderr line logged with `tracing`, in bytes.
const MAX_LOGGED_STDERR_LINE: usize = 2048;
/// Variables copied from the host when set, besides every `LC_*`.
const MINIMAL_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TMPDIR", "TZ",
];
/// The proxy and certificate variables a stdio server gets from the host
/// when [`StdioOptions::network_env`] is on (both spellings of the proxy
/// variables: curl and most runtimes read the lower-case ones too).
pub const NETWORK_ENV: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
];
/// What `execvp` searches when the child's environment has no PATH.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// The server process as the reaper last saw it.
#[derive(Debug, Clone, Copy)]
enum ChildState {
    Running,
    Exited(ExitStatus),
    /// Waiting failed (something else reaped the child): its status is lost.
    Lost,
}

impl ChildState {
    fn is_running(&self) -> bool {
        matches!(self, ChildState::Running)
    }
}

/// How the connection ended, as the reader saw it; `recv` rebuilds its
/// error from this every time it reports `Closed`.
#[derive(Debug)]
enum End {
    Clean,
    TooLarge(usize),
    Exited(ExitStatus),
    Io(io::ErrorKind, String),
}

/// State the tasks and the transport share.
#[derive(Debug)]
struct Shared {
    end: Mutex<Option<End>>,
    /// The first write failure; every later `send` reports it.
    write_error: Mutex<Option<(io::ErrorKind, String)>>,
    stderr: Mutex<Ring>,
}

impl Shared {
    fn end_error(&self) -> Option<TransportError> {
        match lock(&self.end).as_ref()? {
            End::Clean => None,
            End::TooLarge(limit) => Some(TransportError::TooLarge { limit: *limit }),
            End::Exited(status) => Some(TransportError::Other(Box::new(ServerExited {
                status: *status,
            }))),
            End::Io(kind, message) => {
                Some(TransportError::Io(io::Error::new(*kind, message.clone())))
            }
        }
    }

    fn write_error(&self) -> Option<TransportError> {
        let error = lock(&self.write_error);
        let (kind, message) = error.as_ref()?;
        Some(TransportError::Io(io::Error::new(*kind, message.clone())))
    }
}

#[derive(Debug)]
struct Tasks {
    writer: Option<JoinHandle<()>>,
    reader: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<()>>,
}

/// Locks a mutex, ignoring poisoning: every critical section here leaves
/// the data consistent even if it panics midway.
use mcp_proto::sync::lock;

fn signal_group(pgid: Pid, signal: Signal) {
    match rustix::process::kill_process_group(pgid, signal) {
        // ESRCH: the group is already empty.
        Ok(()) | Err(rustix::io::Errno::SRCH) => {}
        Err(error) => {
            tracing::warn!(pgid = pgid.as_raw_nonzero().get(), %error, "cannot signal the stdio server's process group")
        }
    }
}

/// Whether the server exits (or already has) before `deadline`.
async fn wait_for_exit(child: &mut watch::Receiver<ChildState>, deadline: Instant) -> bool {
    // A dropped sender (the reaper is gone) counts as exited too.
    timeout_at(deadline, child.wait_for(|state| !state.is_running()))
        .await
        .is_ok()
}

/// Owns the child: waits for it, then kills the rest of its group and
/// publishes the status.
async fn reap(mut child: Child, pgid: Option<Pid>, state: watch::Sender<ChildState>) {
    let status = child.wait().await;
    // Whatever the server left in its group is an orphan now (an `npx`
    // launcher's children). The group id cannot have been reused yet: it
    // stays allocated while the group has members.
    if let Some(pgid) = pgid {
        signal_group(pgid, Signal::KILL);
    }
    let new_state = match status {
        Ok(status) => ChildState::Exited(status),
        Err(error) => {
            tracing::warn!(%error, "cannot wait for the stdio server");
            ChildState::Lost
        }
    };
    state.send_replace(new_state);
}

/// The write side of stdin, shared by the callers that write directly and
/// the writer task that flushes what the pipe did not take at once.
#[derive(Debug)]
struct Writer {
    state: Mutex<WriteState>,
    /// Wakes the writer task when bytes wait for it.
    wake: Notify,
    /// Wakes `send` calls waiting for room in the queue.
    room: Notify,
}

#[derive(Debug)]
struct WriteState {
    /// `None` once the writer task has finished: stdin is closed.
    pipe: Option<Arc<tokio::net::unix::pipe::Sender>>,
    /// Encoded bytes waiting for the writer task, in order.
    buf: Vec<u8>,
    /// The writer task is writing bytes it took from `buf`; until it is
    /// done, nobody else may write (order).
    busy: bool,
    /// When a caller last wrote to the pipe itself.
    last_direct: Option<std::time::Instant>,
}

impl Writer {
    /// Writes `message` to the pipe if nothing waits and the pipe takes it,
    /// leaving any rest for the writer task; queues it behind what waits
    /// otherwise. Gives it back when the queue is full or the message has
    /// no newline-delimited form.
    fn offer(&self, message: Message, shared: &Shared, pid: u32) -> Offer {
        // The message is freed after the lock is released.
        match self.write_or_queue(&message, shared, pid) {
            Ok(true) => Offer::Taken,
            Ok(false) => Offer::Full(message),
            Err(error) => Offer::Unencodable(message, error),
        }
    }

    /// [`Writer::offer`] under the lock; `false` when the queue is full.
    fn write_or_queue(
        &self,
        message: &Message,
        shared: &Shared,
        pid: u32,
    ) -> Result<bool, EncodeError> {
        let mut state = lock(&self.state);
        let idle = !state.busy && state.buf.is_empty();
        if !idle && state.buf.len() >= MAX_QUEUED_WRITE {
            return Ok(false);
        }
        let start = state.buf.len();
        ndjson::encode(message, &mut state.buf)?;
        if !idle {
            return Ok(true);
        }
        // Messages in quick succession (many calls in flight) are left for
        // the writer task, which writes them together once the tasks that
        // are ready have run; a lone message goes straight to the pipe.
        let now = std::time::Instant::now();
        let recent = state
            .last_direct
            .is_some_and(|last| now.duration_since(last) < COALESCE_WINDOW);
        if recent {
            state.busy = true;
            drop(state);
            self.wake.notify_one();
            return Ok(true);
        }
        state.last_direct = Some(now);
        let written = match state.pipe.as_deref() {
            Some(pipe) => match pipe.try_write(state.buf.get(start..).unwrap_or_default()) {
                Ok(n) => n,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => 0,
                Err(error) => {
                    tracing::debug!(pid, %error, "cannot write to the stdio server's stdin");
                    *lock(&shared.write_error) = Some((error.kind(), error.to_string()));
                    state.buf.clear();
                    return Ok(true);
                }
            },
            // Closing: the writer task is gone; the message is dropped as a
            // queued one would be.
            None => {
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

/// What became of a message offered to the [`Writer`].
enum Offer {
    /// Written to the pipe, or queued for the writer task.
    Taken,
    /// The queue is full; the message is given back.
    Full(Message),
    /// The message has no newline-delimited form; nothing was written.
    Unencodable(Message, EncodeError),
}

/// Writes what callers queued because the pipe was full, in order. Ends on a
/// write error, when the transport is dropped, or when closing (after
/// writing what was queued); stdin closes as it ends.
async fn write_loop(
    writer: Arc<Writer>,
    mut closing: watch::Receiver<bool>,
    shared: Arc<Shared>,
    pid: u32,
) {
    let Some(pipe) = lock(&writer.state).pipe.clone() else {
        return;
    };
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
            }
            writer.room.notify_waiters();
            if let Err(error) = write_all(&pipe, &buf).await {
                tracing::debug!(pid, %error, "cannot write to the stdio server's stdin");
                *lock(&shared.write_error) = Some((error.kind(), error.to_string()));
                lock(&writer.state).pipe = None;
                writer.room.notify_waiters();
                return;
            }
            buf.clear();
            buf.shrink_to(RETAINED_WRITE_BUFFER);
        }
        if stop {
            // Nobody writes once `pipe` is gone; dropping the last handle
            // closes stdin.
            lock(&writer.state).pipe = None;
            writer.room.notify_waiters();
            return;
        }
    }
}

async fn write_all(pipe: &tokio::net::unix::pipe::Sender, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        pipe.writable().await?;
        match pipe.try_write(bytes) {
            Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
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
    /// The reader has finished (or was stopped): once `frames` is empty,
    /// `recv` reports how the connection ended.
    ended: bool,
    /// Where frames go instead of `frames`, once set.
    sink: Option<Arc<dyn FrameSink>>,
    /// The frames that waited when the sink was set are being handed to
    /// it: the end is not reported before they are.
    handing_over: bool,
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
    /// The next frame (`Some(Some)`), the end of the stream (`Some(None)`),
    /// or nothing yet (`None`).
    fn pop(&self) -> Option<Option<Frame>> {
        let mut state = lock(&self.state);
        match state.frames.pop_front() {
            Some(frame) => {
                let was_full = state.frames.len() + 1 == INBOUND_QUEUE;
                drop(state);
                if was_full {
                    self.room.notify_one();
                }
                Some(Some(frame))
            }
            None if state.ended && !state.handing_over => Some(None),
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
        let was_empty = state.frames.is_empty();
        state.frames.push_back(frame);
        drop(state);
        // A `recv` waits only on an empty queue.
        if was_empty {
            self.ready.notify_one();
        }
        Pushed::Queued
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
    stdout: ChildStdout,
    frames: Arc<InboundQueue>,
    closing: watch::Receiver<bool>,
    child: watch::Receiver<ChildState>,
    max_message_size: usize,
    shared: Arc<Shared>,
    pid: u32,
    /// The sink, once the reader has seen that one is set (it is never
    /// unset), so that later frames skip the queue's lock.
    sink: Option<Arc<dyn FrameSink>>,
}

/// Ends the frame queue however the reader stops (aborted included), so
/// that `recv` reports `Closed` rather than waiting for ever.
impl Drop for ReadLoop {
    fn drop(&mut self) {
        self.frames.end();
    }
}

/// Decodes stdout until the connection ends, then records how it ended and
/// ends the frame queue, so that `recv` reports `Closed`.
async fn read_loop(mut task: ReadLoop) {
    let end = read_frames(&mut task).await;
    let end = if *task.closing.borrow() {
        End::Clean
    } else {
        end
    };
    tracing::debug!(pid = task.pid, ?end, "stdio server's stdout ended");
    *lock(&task.shared.end) = Some(end);
}

async fn read_frames(task: &mut ReadLoop) -> End {
    let mut decoder = NdjsonDecoder::with_max_message_size(task.max_message_size);
    let mut buf = vec![0; READ_CHUNK];
    let mut batch = Vec::new();
    let mut server_gone = task.child.clone();
    let server_gone = async move {
        let _ = server_gone.wait_for(|state| !state.is_running()).await;
        tokio::time::sleep(EXIT_DRAIN_GRACE).await;
    };
    tokio::pin!(server_gone);
    loop {
        let read = tokio::select! {
            // Reading first: the grace below only counts while stdout is
            // silent, never while data is waiting in the pipe.
            biased;
            read = task.stdout.read(&mut buf) => read,
            () = &mut server_gone => {
                tracing::debug!(pid = task.pid, "the stdio server exited but its stdout is held open");
                break;
            }
        };
        let chunk = match read {
            Ok(0) => break,
            Ok(n) => buf.get(..n).unwrap_or_default(),
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
        // wakes its callers once for them all, as the driver did when it
        // took every ready frame in one pass.
        deliver(task, &mut batch).await;
    }
    while let Some(item) = decoder.finish() {
        if let Some(end) = decoded(task, &mut batch, item) {
            deliver(task, &mut batch).await;
            return end;
        }
    }
    deliver(task, &mut batch).await;
    exit_end(&mut task.child).await
}

/// Takes one decoded line: a frame joins `batch`, to be handed on with the
/// others of its read; `Some` when the line ends the connection.
fn decoded(
    task: &ReadLoop,
    batch: &mut Vec<Frame>,
    item: Result<Frame, NdjsonError>,
) -> Option<End> {
    match crate::framing::line(&format_args!("stdio server {}", task.pid), item) {
        crate::framing::Line::Frame(frame) => {
            batch.push(frame);
            None
        }
        crate::framing::Line::TooLarge(limit) => Some(End::TooLarge(limit)),
        crate::framing::Line::Skipped => None,
    }
}

/// Hands the frames in `batch` on, in order, and empties it: all to the
/// sink in one call once one is set, else into the queue for `recv`.
async fn deliver(task: &mut ReadLoop, batch: &mut Vec<Frame>) {
    if batch.is_empty() {
        return;
    }
    // Once closing, frames are dropped, but stdout is still read so that a
    // server writing as it shuts down does not block.
    if *task.closing.borrow() {
        batch.clear();
        return;
    }
    if let Some(sink) = &task.sink {
        task.frames.hand_over(sink.as_ref(), &mut batch.drain(..));
        return;
    }
    let mut frames = batch.drain(..);
    while let Some(frame) = frames.next() {
        if *task.closing.borrow() {
            return;
        }
        if let Some((sink, frame)) = queue(task, frame).await {
            // The sink was set meanwhile: this frame and the rest go to it.
            task.frames
                .hand_over(sink.as_ref(), &mut std::iter::once(frame).chain(frames));
            task.sink = Some(sink);
            return;
        }
    }
}

/// Queues one frame for `recv`, waiting for room when the queue is full;
/// gives it back with the sink when one has been set.
async fn queue(task: &mut ReadLoop, frame: Frame) -> Option<(Arc<dyn FrameSink>, Frame)> {
    let mut frame = match task.frames.push(frame) {
        Pushed::Queued => return None,
        Pushed::ToSink(sink, frame) => return Some((sink, frame)),
        Pushed::Full(back) => back,
    };
    loop {
        // Registered before the push, so that room made in between is not
        // missed.
        let room = task.frames.room.notified();
        tokio::pin!(room);
        room.as_mut().enable();
        match task.frames.push(frame) {
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

/// How a connection whose stdout ended is reported: with the exit status if
/// the server died abnormally.
async fn exit_end(child: &mut watch::Receiver<ChildState>) -> End {
    match timeout(
        EXIT_STATUS_WAIT,
        child.wait_for(|state| !state.is_running()),
    )
    .await
    {
        Ok(Ok(state)) => match *state {
            ChildState::Exited(status) if !status.success() => End::Exited(status),
            _ => End::Clean,
        },
        // Still running with stdout closed (the server ended the connection),
        // or the reaper is gone.
        _ => End::Clean,
    }
}

/// Reads stderr until EOF into the ring buffer and the debug log.
async fn drain_stderr(mut stderr: ChildStderr, shared: Arc<Shared>, pid: u32) {
    let mut buf = vec![0; STDERR_READ_CHUNK];
    let mut lines = LineLogger::new(pid);
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                let chunk = buf.get(..n).unwrap_or_default();
                lock(&shared.stderr).push(chunk);
                lines.feed(chunk);
            }
            Err(error) => {
                tracing::debug!(pid, %error, "cannot read the stdio server's stderr");
                break;
            }
        }
    }
    lines.flush();
}

/// The last `capacity` bytes of a stream.
#[derive(Debug)]
struct Ring {
    capacity: usize,
    bytes: VecDeque<u8>,
    /// Some bytes were dropped from the front.
    truncated: bool,
}

impl Ring {
    fn new(capacity: usize) -> Self {
        Ring {
            capacity,
            bytes: VecDeque::new(),
            truncated: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let keep = chunk.len().min(self.capacity);
        let overflow = (self.bytes.len() + keep).saturating_sub(self.capacity);
        self.truncated |= overflow > 0 || keep < chunk.len();
        self.bytes.drain(..overflow.min(self.bytes.len()));
        self.bytes
            .extend(chunk.get(chunk.len() - keep..).unwrap_or_default());
    }

    fn text(&self) -> String {
        let (front, back) = self.bytes.as_slices();
        let mut bytes = Vec::with_capacity(self.bytes.len());
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        let mut start = 0;
        if self.truncated {
            // Do not start in the middle of a UTF-8 sequence.
            while start < 3 && bytes.get(start).is_some_and(|b| b & 0xC0 == 0x80) {
                start += 1;
            }
        }
        String::from_utf8_lossy(bytes.get(start..).unwrap_or_default()).into_owned()
    }
}

/// Splits stderr into lines for `tracing::debug!`, each cut to
/// [`MAX_LOGGED_STDERR_LINE`] bytes.
struct LineLogger {
    pid: u32,
    line: Vec<u8>,
    cut: bool,
}

impl LineLogger {
    fn new(pid: u32) -> Self {
        LineLogger {
            pid,
            line: Vec::new(),
            cut: false,
        }
    }

    fn feed(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let (part, rest, ended) = match chunk.iter().position(|&b| b == b'\n') {
                Some(end) => (
                    chunk.get(..end).unwrap_or_default(),
                    chunk.get(end + 1..).unwrap_or_default(),
                    true,
                ),
                None => (chunk, &[][..], false),
            };
            let room = MAX_LOGGED_STDERR_LINE.saturating_sub(self.line.len());
            self.line
                .extend_from_slice(part.get(..room.min(part.len())).unwrap_or_default());
            self.cut |= part.len() > room;
            if ended {
                self.flush();
            }
            chunk = rest;
        }
    }

    fn flush(&mut self) {
        if self.line.is_empty() && !self.cut {
            return;
        }
        let line = String::from_utf8_lossy(&self.line);
        let line = line.trim_end_matches('\r');
        let cut = if self.cut { " [cut]" } else { "" };
        tracing::debug!(target: "mcp_transport::stdio::stderr", pid = self.pid, "{line}{cut}");
        self.line.clear();
        self.cut = false;
    }
}

/// The working directory to set: `None` inherits.
fn working_directory(cwd: Option<&Path>) -> Result<Option<PathBuf>, TransportError> {
    let Some(cwd) = cwd.filter(|cwd| !cwd.as_os_str().is_empty()) else {
        return Ok(None);
    };
    if !cwd.is_absolute() {
        return Err(TransportError::Setup(format!(
            "the working directory `{}` is not an absolute path",
            cwd.display()
        )));
    }
    if !cwd.is_dir() {
        return Err(TransportError::Setup(format!(
            "the working directory `{}` does not exist or is not a directory",
            cwd.display()
        )));
    }
    Ok(Some(cwd.to_path_buf()))
}

/// The child's whole environment, in the order of precedence: the minimal
/// platform set (and the network variables), then passthrough names, then
/// literal values.
fn child_environment(options: &StdioOptions) -> Result<Vec<(OsString, OsString)>, TransportError> {
    environment_from(options, std::env::vars_os().collect())
}

/// [`child_environment`] over the host environment `host`.
fn environment_from(
    options: &StdioOptions,
    host: Vec<(OsString, OsString)>,
) -> Result<Vec<(OsString, OsString)>, TransportError> {
    let lookup = |name: &str| {
        host.iter()
            .find(|(n, _)| n.as_os_str() == std::ffi::OsStr::new(name))
            .map(|(_, v)| v.clone())
    };
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |name: OsString, value: OsString| match env.iter_mut().find(|(n, _)| *n == name) {
        Some(entry) => entry.1 = value,
        None => env.push((name, value)),
    };
    for (name, value) in host.iter().cloned() {
        let minimal = name.to_str().is_some_and(|name| {
            MINIMAL_ENV.contains(&name)
                || name.starts_with("LC_")
                || (options.network_env && NETWORK_ENV.contains(&name))
        });
        if minimal {
            set(name, value);
        }
    }
    for name in &options.env_passthrough {
        check_env_name(name)?;
        if let Some(value) = lookup(name) {
            set(name.into(), value);
        }
    }
    for (name, value) in &options.env {
        check_env_name(name)?;
        if value.contains('\0') {
            return Err(TransportError::Setup(format!(
                "the value of environment variable `{name}` contains a NUL byte"
            )));
        }
        set(name.into(), value.into());
    }
    Ok(env)
}

fn check_env_name(name: &str) -> Result<(), TransportError> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(TransportError::Setup(format!(
            "`{}` is not a valid environment variable name",
            name.escape_debug()
        )));
    }
    Ok(())
}

/// Checks that `command` names an executable file, the way `execvp` will
/// look for it in the child (after it changes to `cwd`, with its `PATH`),
/// so that a missing command gets an error that says what was searched.
fn find_command(
    command: &str,
    cwd: Option<&Path>,
    path: Option<&OsStr>,
) -> Result<(), TransportError> {
    if command.contains('\0') {
        return Err(TransportError::Setup(format!(
            "the command `{}` contains a NUL byte",
            command.escape_debug()
        )));
    }
    let base = || {
        cwd.map_or_else(
            || std::env::current_dir().unwrap_or_default(),
            Path::to_path_buf,
        )
    };
    if command.contains('/') {
        let path = Path::new(command);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            base().join(path)
        };
        return match std::fs::metadata(&full) {
            Ok(meta) if is_executable(&meta) => Ok(()),
            Ok(_) => Err(TransportError::Setup(format!(
                "the command `{command}` is not an executable file"
            ))),
            Err(_) => Err(TransportError::Setup(format!(
                "the command `{command}` was not found"
            ))),
        };
    }
    let path = path.unwrap_or(OsStr::new(DEFAULT_PATH));
    let found = std::env::split_paths(path).any(|dir| {
        // An empty entry means the current directory, as in a shell.
        let dir = if dir.as_os_str().is_empty() {
            base()
        } else if dir.is_relative() {
            base().join(dir)
        } else {
            dir
        };
        std::fs::metadata(dir.join(command)).is_ok_and(|meta| is_executable(&meta))
    });
    if found {
        Ok(())
    } else {
        Err(TransportError::Setup(format!(
            "the command `{command}` was not found: searched the directories in PATH"
        )))
    }
}

fn is_executable(meta: &std::fs::Metadata) -> bool {
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

fn spawn_error(command: &str, error: &io::Error) -> TransportError {
    TransportError::Setup(match error.kind() {
        // The file exists (checked before): its interpreter (`#!`) is missing.
        io::ErrorKind::NotFound => {
            format!("cannot run `{command}`: it or its interpreter was not found ({error})")
        }
        io::ErrorKind::PermissionDenied => {
            format!("cannot run `{command}`: permission denied")
        }
        _ => format!("cannot run `{command}`: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).into(), (*v).into()))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        let mut names: Vec<String> = env
            .iter()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn proxy_and_certificate_variables_reach_the_child_unless_turned_off() {
        let host = host(&[
            ("PATH", "/bin"),
            ("HTTPS_PROXY", "http://proxy.internal:3128"),
            ("no_proxy", "localhost"),
            ("NODE_EXTRA_CA_CERTS", "/etc/ca.pem"),
            ("SSL_CERT_FILE", "/etc/ssl/ca.pem"),
            ("AWS_SECRET_ACCESS_KEY", "s3cret"),
        ]);
        let env = environment_from(&StdioOptions::new("x"), host.clone()).unwrap();
        assert_eq!(
            names(&env),
            [
                "HTTPS_PROXY",
                "NODE_EXTRA_CA_CERTS",
                "PATH",
                "SSL_CERT_FILE",
                "no_proxy"
            ]
        );
        let env =
            environment_from(&StdioOptions::new("x").network_env(false), host.clone()).unwrap();
        assert_eq!(names(&env), ["PATH"]);
        // Passthrough reads the same host environment.
        let options = StdioOptions::new("x")
            .network_env(false)
            .env_passthrough(vec!["AWS_SECRET_ACCESS_KEY".to_owned()]);
        let env = environment_from(&options, host).unwrap();
        assert_eq!(names(&env), ["AWS_SECRET_ACCESS_KEY", "PATH"]);
    }

    /// `cat` echoes every line back: a server that answers nothing but
    /// returns each message as it was written.
    fn cat() -> StdioTransport {
        StdioTransport::spawn(StdioOptions::new("cat")).expect("`cat` runs")
    }

    fn numbered(i: i64) -> Message {
        Message::notification("n", Some(&i)).expect("encodes")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn more_frames_than_the_inbound_queue_holds_arrive_in_order() {
        // More lines than the queue holds come back before anything is taken:
        // the reader stops at a full queue and goes on as `try_recv` and
        // `recv` make room, and no line is lost or reordered.
        let transport = cat();
        let total = i64::try_from(INBOUND_QUEUE * 4).expect("small");
        for i in 0..total {
            transport.send(numbered(i)).await.expect("send");
        }
        for i in 0..total {
            let inbound = match transport.try_recv() {
                Some(inbound) => inbound,
                None => transport.recv().await,
            };
            match inbound {
                Inbound::Frame(Frame::Single(message)) => assert_eq!(message, numbered(i)),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(transport.try_recv().is_none());
        transport.close().await.expect("close");
        assert!(matches!(transport.recv().await, Inbound::Closed(None)));
    }

    /// Records each call a sink gets, as the frames it was handed.
    struct Recording(Mutex<Vec<Vec<Frame>>>);

    impl FrameSink for Recording {
        fn frames(&self, frames: &mut dyn Iterator<Item = Frame>) {
            lock(&self.0).push(frames.collect());
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_frames_of_one_read_reach_the_sink_in_one_call_and_in_order_before_the_end() {
        // The server writes three lines in one write and exits: the sink gets
        // them in one call (its lock and its wake-ups paid once), in order,
        // and `recv` reports the end only after.
        let lines: String = (0..3)
            .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{i}}}\\n"))
            .collect();
        let mut options = StdioOptions::new("sh");
        options.args = vec!["-c".to_owned(), format!("printf '{lines}'")];
        let transport = StdioTransport::spawn(options).expect("`sh` runs");
        let sink = Arc::new(Recording(Mutex::new(Vec::new())));
        assert!(transport.set_frame_sink(sink.clone()));
        assert!(matches!(transport.recv().await, Inbound::Closed(None)));
        let calls = std::mem::take(&mut *lock(&sink.0));
        let expected: Vec<Frame> = (0..3).map(|i| Frame::Single(numbered(i))).collect();
        assert_eq!(calls, vec![expected]);
        transport.close().await.expect("close");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bursts_of_sends_keep_their_order_through_direct_and_queued_writes() {
        // Writes in quick succession go through the writer task, a lone one
        // straight to the pipe; large messages do not fit the pipe at once.
        // Whichever path each takes, the lines come back whole and in order.
        let transport = Arc::new(cat());
        let fill = "x".repeat(100 * 1024);
        let message = |i: i64| {
            let params =
                serde_json::json!({"i": i, "fill": if i % 7 == 0 { fill.as_str() } else { "" }});
            Message::notification("n", Some(&params)).expect("encodes")
        };
        let total = 300;
        for i in 0..total {
            match transport.try_send(message(i)) {
                Ok(()) => {}
                Err(back) => transport.send(back).await.expect("send"),
            }
        }
        for i in 0..total {
            match transport.recv().await {
                Inbound::Frame(Frame::Single(got)) => assert_eq!(got, message(i)),
                other => panic!("unexpected {other:?}"),
            }
        }
        transport.close().await.expect("close");
    }
}

//! The stdio transport: an MCP server run as a child process, spoken to over its stdin and stdout.
//!
//! MCP spec, "Transports" §stdio, and checklist §4. The server is spawned
//! directly (never through a shell) in a process group of its own. Four
//! background tasks do the I/O, so that no pipe is ever left unread:
//!
//! - the **writer** owns stdin; [`Transport::send`] queues a message for it,
//!   and it encodes everything queued into one buffer and writes it with one
//!   call, so lines never interleave and bursts cost one system call;
//! - the **reader** decodes stdout with the NDJSON codec and hands frames to
//!   [`Transport::recv`] through a channel (which makes `recv` cancel safe);
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
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::codec::ndjson::{self, NdjsonDecoder, NdjsonError};
use mcp_proto::{Frame, Message};
use rustix::process::{Pid, Signal};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{OnceCell, mpsc, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::{Instant, timeout, timeout_at};

use crate::transport::{Inbound, Transport, TransportError};

/// How a stdio server is started and stopped. Every field is public; start
/// from [`StdioOptions::new`] and set what differs from the defaults.
#[derive(Clone)]
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
    outbound: mpsc::Sender<Message>,
    inbound: tokio::sync::Mutex<mpsc::Receiver<Frame>>,
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

        let shared = Arc::new(Shared {
            end: Mutex::new(None),
            write_error: Mutex::new(None),
            stderr: Mutex::new(Ring::new(options.stderr_tail_bytes)),
        });
        let (closing, closing_rx) = watch::channel(false);
        let (state_tx, state_rx) = watch::channel(ChildState::Running);
        let (outbound, outbound_rx) = mpsc::channel(OUTBOUND_QUEUE);
        let (inbound_tx, inbound) = mpsc::channel(INBOUND_QUEUE);

        runtime.spawn(reap(child, pgid, state_tx));
        let writer = runtime.spawn(write_loop(
            stdin,
            outbound_rx,
            closing_rx.clone(),
            Arc::clone(&shared),
            pid,
        ));
        let reader = runtime.spawn(read_loop(ReadLoop {
            stdout,
            frames: inbound_tx,
            closing: closing_rx,
            child: state_rx.clone(),
            max_message_size: options.max_message_size,
            shared: Arc::clone(&shared),
            pid,
        }));
        let stderr = runtime.spawn(drain_stderr(stderr, Arc::clone(&shared), pid));
        let aborts = vec![
            writer.abort_handle(),
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
            outbound,
            inbound: tokio::sync::Mutex::new(inbound),
            shared,
            closing,
            child: state_rx,
            tasks: Mutex::new(Tasks {
                writer: Some(writer),
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

    /// The shutdown sequence of checklist §4: close stdin, wait, SIGTERM the
    /// group, wait, SIGKILL the group. The reaper kills what is left of the
    /// group once the server itself has exited.
    async fn shut_down(&self) {
        self.closing.send_replace(true);
        let tasks = self.take_tasks();
        let deadline = Instant::now() + self.close_stdin_wait;
        // The writer writes what is already queued and drops stdin. A server
        // that does not read its stdin keeps it waiting: then stdin is
        // dropped when the wait is over.
        if let Some(mut writer) = tasks.writer
            && timeout_at(deadline, &mut writer).await.is_err()
        {
            writer.abort();
        }
        let mut child = self.child.clone();
        if !wait_for_exit(&mut child, deadline).await {
            tracing::debug!(pid = self.pid, "stdio server ignored stdin EOF: SIGTERM");
            self.signal_group(Signal::TERM);
            if !wait_for_exit(&mut child, Instant::now() + self.sigterm_wait).await {
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

#[async_trait]
impl Transport for StdioTransport {
    /// Queues `message` for the writer task. It returns once the message is
    /// queued (waiting while the queue is full), not once it is written: a
    /// write failure (a broken pipe) makes the next `send` fail.
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let mut closing = self.closing.subscribe();
        if *closing.borrow_and_update() {
            return Err(TransportError::Closed);
        }
        if let Some(error) = self.shared.write_error() {
            return Err(error);
        }
        tokio::select! {
            sent = self.outbound.send(message) => match sent {
                Ok(()) => Ok(()),
                Err(_) => Err(self.shared.write_error().unwrap_or(TransportError::Closed)),
            },
            _ = closing.wait_for(|closing| *closing) => Err(TransportError::Closed),
        }
    }

    /// Queues the message for the writer task when its queue has room; a
    /// full queue, a closing transport or a broken pipe leave it to `send`,
    /// which waits or reports the error.
    fn try_send(&self, message: Message) -> Result<(), Message> {
        if *self.closing.borrow() || self.shared.write_error().is_some() {
            return Err(message);
        }
        self.outbound
            .try_send(message)
            .map_err(|error| error.into_inner())
    }

    /// Cancel safe: frames wait in a channel until a `recv` takes them.
    async fn recv(&self) -> Inbound {
        if *self.closing.borrow() {
            return Inbound::Closed(None);
        }
        // A frame already waiting needs no subscription to `closing` and no
        // `select!`: the common case under load.
        if let Ok(mut inbound) = self.inbound.try_lock() {
            match inbound.try_recv() {
                Ok(frame) => return Inbound::Frame(frame),
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    return Inbound::Closed(self.shared.end_error());
                }
                Err(mpsc::error::TryRecvError::Empty) => {}
            }
        }
        let mut closing = self.closing.subscribe();
        if *closing.borrow_and_update() {
            return Inbound::Closed(None);
        }
        let mut inbound = tokio::select! {
            inbound = self.inbound.lock() => inbound,
            _ = closing.wait_for(|closing| *closing) => return Inbound::Closed(None),
        };
        tokio::select! {
            biased;
            frame = inbound.recv() => match frame {
                Some(frame) => Inbound::Frame(frame),
                None => Inbound::Closed(self.shared.end_error()),
            },
            _ = closing.wait_for(|closing| *closing) => Inbound::Closed(None),
        }
    }

    /// Closes stdin and waits up to [`StdioOptions::close_stdin_wait`] for
    /// the server to exit, then SIGTERMs its process group and waits up to
    /// [`StdioOptions::sigterm_wait`], then SIGKILLs the group. Reaps the
    /// server. Idempotent; concurrent calls wait for the same shutdown.
    async fn close(&self) -> Result<(), TransportError> {
        self.shutdown.get_or_init(|| self.shut_down()).await;
        Ok(())
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

/// Messages `send` may queue before it waits for the writer.
const OUTBOUND_QUEUE: usize = 256;
/// Frames the reader may hold before it stops reading stdout (backpressure
/// on the server rather than unbounded memory).
const INBOUND_QUEUE: usize = 256;
/// The size of one read from stdout or stderr.
const READ_CHUNK: usize = 64 * 1024;
/// The writer stops coalescing queued messages into one write at this size.
const MAX_WRITE_BATCH: usize = 1024 * 1024;
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
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

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

/// Writes queued messages to stdin, coalescing everything already queued
/// into one write. Ends on a write error, when the transport is dropped, or
/// when closing (after writing what was queued); stdin closes as it ends.
async fn write_loop(
    mut stdin: ChildStdin,
    mut queue: mpsc::Receiver<Message>,
    mut closing: watch::Receiver<bool>,
    shared: Arc<Shared>,
    pid: u32,
) {
    let mut buf = Vec::with_capacity(READ_CHUNK);
    loop {
        let stop = tokio::select! {
            biased;
            message = queue.recv() => match message {
                Some(message) => {
                    ndjson::encode(&message, &mut buf);
                    false
                }
                None => true,
            },
            _ = closing.wait_for(|closing| *closing) => true,
        };
        while buf.len() < MAX_WRITE_BATCH {
            match queue.try_recv() {
                Ok(message) => ndjson::encode(&message, &mut buf),
                Err(_) => break,
            }
        }
        if !buf.is_empty() {
            if let Err(error) = stdin.write_all(&buf).await {
                tracing::debug!(pid, %error, "cannot write to the stdio server's stdin");
                *lock(&shared.write_error) = Some((error.kind(), error.to_string()));
                return;
            }
            buf.clear();
            buf.shrink_to(RETAINED_WRITE_BUFFER);
        }
        if stop && queue.is_empty() {
            return;
        }
    }
}

/// What the reader task works with.
struct ReadLoop {
    stdout: ChildStdout,
    frames: mpsc::Sender<Frame>,
    closing: watch::Receiver<bool>,
    child: watch::Receiver<ChildState>,
    max_message_size: usize,
    shared: Arc<Shared>,
    pid: u32,
}

/// Decodes stdout until the connection ends, then records how it ended and
/// drops the frame sender, so that `recv` reports `Closed`.
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
            if let Some(end) = deliver(task, item).await {
                return end;
            }
        }
    }
    while let Some(item) = decoder.finish() {
        if let Some(end) = deliver(task, item).await {
            return end;
        }
    }
    exit_end(&mut task.child).await
}

/// Hands one decoded line on; `Some` when it ends the connection.
async fn deliver(task: &mut ReadLoop, item: Result<Frame, NdjsonError>) -> Option<End> {
    match item {
        Ok(frame) => {
            // Once closing, frames are dropped, but stdout is still read so
            // that a server writing as it shuts down does not block.
            if *task.closing.borrow() {
                return None;
            }
            let frame = match task.frames.try_send(frame) {
                Ok(()) => return None,
                Err(mpsc::error::TrySendError::Closed(_)) => return Some(End::Clean),
                Err(mpsc::error::TrySendError::Full(frame)) => frame,
            };
            let sent = tokio::select! {
                sent = task.frames.send(frame) => sent.is_ok(),
                _ = task.closing.wait_for(|closing| *closing) => true,
            };
            // A closed channel: the transport was dropped.
            (!sent).then_some(End::Clean)
        }
        Err(NdjsonError::TooLarge { limit }) => {
            tracing::warn!(
                pid = task.pid,
                limit,
                "the stdio server sent a message over the size limit; closing the connection"
            );
            Some(End::TooLarge(limit))
        }
        Err(NdjsonError::NotJson {
            preview,
            line_len,
            source,
        }) => {
            tracing::warn!(pid = task.pid, line_len, %preview, error = %source, "skipping a stdout line that is not a JSON-RPC message");
            None
        }
        Err(error) => {
            tracing::warn!(pid = task.pid, %error, "skipping an undecodable stdout line");
            None
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
    let mut buf = vec![0; READ_CHUNK];
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
/// platform set, then passthrough names, then literal values.
fn child_environment(options: &StdioOptions) -> Result<Vec<(OsString, OsString)>, TransportError> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |name: OsString, value: OsString| match env.iter_mut().find(|(n, _)| *n == name) {
        Some(entry) => entry.1 = value,
        None => env.push((name, value)),
    };
    for (name, value) in std::env::vars_os() {
        let minimal = name
            .to_str()
            .is_some_and(|name| MINIMAL_ENV.contains(&name) || name.starts_with("LC_"));
        if minimal {
            set(name, value);
        }
    }
    for name in &options.env_passthrough {
        check_env_name(name)?;
        if let Some(value) = std::env::var_os(name) {
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

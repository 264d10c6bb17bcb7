//! The stdio transport: an MCP server run as a child process, spoken to over its stdin and stdout.
//!
//! MCP spec, "Transports" §stdio, and its shutdown advice. The server is spawned
//! directly (never through a shell) in a process group of its own. Four
//! background tasks do the I/O, so that no pipe is ever left unread:
//!
//! - the **writer** and the **reader** of an [`NdjsonTransport`] over stdin
//!   and stdout (the framing, its bounds and the direct writes of a lone
//!   message are that module's: [`crate::ndjson`]); the reader also stops
//!   once the server has exited and its stdout stayed silent for a moment
//!   (a process outside the group holding it open), and reports an
//!   abnormal exit status as the end of the connection;
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
use mcp_proto::Message;
use mcp_proto::codec::ndjson;
use rustix::process::{Pid, Signal};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{OnceCell, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::{Instant, timeout, timeout_at};

use crate::ndjson::{BoxFuture, End, NdjsonOptions, NdjsonTransport, Output, Parts};
use crate::transport::{FrameSink, Inbound, Transport, TransportError, TransportExtensions};

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

impl StdioOptions {
    /// Looks for the command as [`StdioTransport::start`] will, without
    /// starting anything: in the working directory for a path with a `/`,
    /// else in the directories of the `PATH` the child would get (MCP
    /// "Transports" §stdio: the client launches the server as a
    /// subprocess). A host can warn about a server that cannot start
    /// before anyone starts it. The error is [`TransportError::Setup`]
    /// saying what was searched, as `start` would fail.
    pub fn find_command(&self) -> Result<(), TransportError> {
        if self.command.is_empty() {
            return Err(TransportError::Setup(
                "no command given for the stdio server".to_owned(),
            ));
        }
        let cwd = working_directory(self.cwd.as_deref())?;
        let env = child_environment(self)?;
        let path = env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.as_os_str());
        find_command(&self.command, cwd.as_deref(), path)
    }
}

impl Default for StdioOptions {
    /// Options without a command: set [`StdioOptions::command`] before use.
    fn default() -> Self {
        StdioOptions::new(String::new())
    }
}

impl fmt::Debug for StdioOptions {
    /// Arguments and literal environment values are often credentials (an
    /// API key on the command line): only how many arguments there are and
    /// the environment's names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        let args = match self.args.len() {
            1 => "<1 argument, redacted>".to_owned(),
            n => format!("<{n} arguments, redacted>"),
        };
        f.debug_struct("StdioOptions")
            .field("command", &self.command)
            .field("args", &args)
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
    /// The newline-delimited JSON on stdin and stdout.
    stream: NdjsonTransport,
    shared: Arc<Shared>,
    child: watch::Receiver<ChildState>,
    stderr_task: Mutex<Option<JoinHandle<()>>>,
    stderr_abort: AbortHandle,
    shutdown: OnceCell<()>,
}

impl StdioTransport {
    /// Starts the server and its I/O tasks, with the process's start
    /// (finding the command, building its environment, `fork` and `exec`)
    /// on tokio's blocking threads, so that no worker of the runtime waits
    /// for it: a `fork` of a large host process on a loaded machine takes
    /// milliseconds, and a host starting many servers at once would
    /// otherwise stop every other task for as long. The preferred way to
    /// start a server from async code; [`StdioTransport::spawn`] does the
    /// same work on the calling thread.
    ///
    /// Must be called within a tokio runtime with I/O and time enabled, on
    /// which the tasks run; outside one it returns [`TransportError::Setup`].
    /// Dropped before it completes, the process it may have started is
    /// killed with its group. The child's environment and the errors are
    /// those of [`StdioTransport::spawn`].
    pub async fn start(options: StdioOptions) -> Result<StdioTransport, TransportError> {
        let runtime = current_runtime()?;
        let launched = runtime
            .spawn_blocking(move || Launched::launch(options))
            .await
            .map_err(|error| {
                TransportError::Setup(format!("the stdio server's start failed: {error}"))
            })??;
        launched.attach(&runtime)
    }

    /// Starts the server and its I/O tasks on the calling thread.
    ///
    /// Synchronous: the process's start (`fork` and `exec`, and the search
    /// of `PATH` before them) runs on the caller's thread, which on a
    /// runtime worker holds up the worker's other tasks meanwhile (about a
    /// millisecond, far more on a loaded machine); from async code prefer
    /// [`StdioTransport::start`]. It must be called within a tokio runtime
    /// with I/O and time enabled, on which the tasks run; outside one it
    /// returns [`TransportError::Setup`].
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
        let runtime = current_runtime()?;
        Launched::launch(options)?.attach(&runtime)
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

    /// The first line the server printed on stdout that was not a JSON-RPC
    /// message (a banner such as `Welcome to my server v1.0`), at most 120
    /// characters, raw: see [`NdjsonTransport::first_stray_line`].
    pub fn first_stray_line(&self) -> Option<String> {
        self.stream.first_stray_line()
    }

    fn signal_group(&self, signal: Signal) {
        // Only while the server has not been reaped: afterwards its pid may
        // be reused, and the reaper has already dealt with the group.
        if let (Some(pgid), true) = (self.pgid, self.child.borrow().is_running()) {
            signal_group(pgid, signal);
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
        let broken_stdin = self.stream.write_failed();
        self.stream.begin_close();
        let mut tasks = self.stream.take_tasks();
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
                self.stream.drop_output();
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
        let stderr = lock(&self.stderr_task).take();
        if let Some(mut stderr) = stderr
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

/// Messages go over the server's stdin and stdout as
/// [`NdjsonTransport`] frames them; `close` is the process's shutdown.
#[async_trait]
impl Transport for StdioTransport {
    /// Writes `message` to stdin, or queues it for the writer task behind
    /// what is already waiting (waiting while too much is). It returns once
    /// the message is written or queued, not once the server has read it: a
    /// write failure (a broken pipe) makes the next `send` fail.
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.stream.send(message).await
    }

    /// Writes the message to stdin, or queues it behind what is waiting,
    /// unless too much is waiting; a full queue, a closing transport, a
    /// broken pipe or a message with no one-line form leave it to `send`,
    /// which waits or reports the error.
    fn try_send(&self, message: Message) -> Result<(), Message> {
        self.stream.try_send(message)
    }

    /// Cancel safe: frames wait in a queue until a `recv` takes them.
    async fn recv(&self) -> Inbound {
        self.stream.recv().await
    }

    /// A frame the reader has already decoded, if any; an ended connection
    /// is left for `recv` to report.
    fn try_recv(&self) -> Option<Inbound> {
        self.stream.try_recv()
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

    /// The frame sink, the server's stderr and its first stray stdout line.
    fn extensions(&self) -> Option<&dyn TransportExtensions> {
        Some(self)
    }
}

/// A child process's own diagnostics, and the frame sink of the
/// [`NdjsonTransport`] underneath.
impl TransportExtensions for StdioTransport {
    /// From now on the reader task hands each frame to `sink` itself (the
    /// frames already waiting first), so that a response reaches its caller
    /// without a hop through the driver.
    fn set_frame_sink(&self, sink: Arc<dyn FrameSink>) -> bool {
        self.stream.set_frame_sink(sink)
    }

    /// [`StdioTransport::stderr_tail`]; `None` while the server wrote
    /// nothing there.
    fn stderr_tail(&self) -> Option<String> {
        Some(StdioTransport::stderr_tail(self)).filter(|tail| !tail.is_empty())
    }

    /// [`StdioTransport::first_stray_line`].
    fn first_stray_line(&self) -> Option<String> {
        StdioTransport::first_stray_line(self)
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // The stream's own drop stops its tasks.
        self.stream.begin_close();
        self.signal_group(Signal::KILL);
        self.stderr_abort.abort();
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

/// The size of one read from stderr, which carries logs, not results.
const STDERR_READ_CHUNK: usize = 16 * 1024;
/// The capacity asked for the server's stdout pipe (Linux's
/// `/proc/sys/fs/pipe-max-size` is 1 MiB by default).
const STDOUT_PIPE_SIZE: usize = 1024 * 1024;
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

/// State the tasks and the transport share.
#[derive(Debug)]
struct Shared {
    stderr: Mutex<Ring>,
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
            ChildState::Exited(status) if !status.success() => End::Other(Arc::new(move || {
                TransportError::Other(Box::new(ServerExited { status }))
            })),
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

/// The runtime the transport's tasks run on: the caller's.
fn current_runtime() -> Result<tokio::runtime::Handle, TransportError> {
    tokio::runtime::Handle::try_current().map_err(|_| {
        TransportError::Setup(
            "the stdio transport must be started within a tokio runtime".to_owned(),
        )
    })
}

/// A server process just started, with its pipes, before the tasks that
/// serve it: what [`StdioTransport::start`] hands back from the blocking
/// thread. Dropped before [`Launched::attach`], it kills the process's
/// group (`kill_on_drop` kills the process itself and has it reaped).
struct Launched {
    command: String,
    options: StdioOptions,
    pid: u32,
    pgid: Option<Pid>,
    /// `None` once attached.
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
}

impl Launched {
    /// Checks the options, finds the command and starts the process, on
    /// the calling thread (which must be within a tokio runtime: the
    /// pipes register with its reactor).
    fn launch(options: StdioOptions) -> Result<Launched, TransportError> {
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
        Ok(Launched {
            command,
            options,
            pid,
            pgid,
            child: Some(child),
            stdin: Some(stdin),
            stdout: Some(stdout),
            stderr: Some(stderr),
        })
    }

    /// Starts the reaper, the stderr drain and the newline-delimited JSON
    /// over stdin and stdout on `runtime`.
    fn attach(
        mut self,
        runtime: &tokio::runtime::Handle,
    ) -> Result<StdioTransport, TransportError> {
        let (Some(child), Some(stdin), Some(stdout), Some(stderr)) = (
            self.child.take(),
            self.stdin.take(),
            self.stdout.take(),
            self.stderr.take(),
        ) else {
            return Err(TransportError::Setup(format!(
                "cannot start `{}`: its pipes were not set up",
                self.command
            )));
        };
        let (command, pid, pgid) = (self.command.clone(), self.pid, self.pgid);
        let options = &self.options;
        let shared = Arc::new(Shared {
            stderr: Mutex::new(Ring::new(options.stderr_tail_bytes)),
        });
        let (state_tx, state_rx) = watch::channel(ChildState::Running);
        // The reaper owns the child from here on, so that an error below
        // still leaves it reaped once the group is killed.
        runtime.spawn(reap(child, pgid, state_tx));
        // Non-blocking writes from any thread need the pipe itself rather
        // than the child's `AsyncWrite` handle.
        let pipe = match stdin
            .into_owned_fd()
            .and_then(tokio::net::unix::pipe::Sender::from_owned_fd)
        {
            Ok(pipe) => pipe,
            Err(error) => {
                if let Some(pgid) = pgid {
                    signal_group(pgid, Signal::KILL);
                }
                return Err(TransportError::Setup(format!(
                    "cannot set up `{command}`'s stdin: {error}"
                )));
            }
        };

        let mut exited = state_rx.clone();
        // A server that exited while a process outside its group holds
        // stdout open: stdout may stay silent for a grace, then reading
        // stops.
        let peer_gone = Box::pin(async move {
            let _ = exited.wait_for(|state| !state.is_running()).await;
            tokio::time::sleep(EXIT_DRAIN_GRACE).await;
        });
        let mut status = state_rx.clone();
        let at_eof = Box::new(move || -> BoxFuture<End> {
            Box::pin(async move { exit_end(&mut status).await })
        });
        let stream = NdjsonTransport::from_parts(
            runtime,
            Parts {
                reader: Box::new(stdout),
                output: Output::Direct(Arc::new(pipe)),
                options: NdjsonOptions::new(format!("stdio server {pid}"))
                    .max_message_size(options.max_message_size),
                peer_gone: Some(peer_gone),
                at_eof: Some(at_eof),
            },
        );
        let stderr = runtime.spawn(drain_stderr(stderr, Arc::clone(&shared), pid));
        tracing::debug!(pid, command = %command, "stdio server started");

        Ok(StdioTransport {
            command,
            pid,
            pgid,
            close_stdin_wait: options.close_stdin_wait,
            sigterm_wait: options.sigterm_wait,
            stream,
            shared,
            child: state_rx,
            stderr_abort: stderr.abort_handle(),
            stderr_task: Mutex::new(Some(stderr)),
            shutdown: OnceCell::new(),
        })
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        // Never attached (the start was abandoned): nothing will serve the
        // process, so it goes with whatever it started.
        if self.child.is_some()
            && let Some(pgid) = self.pgid
        {
            signal_group(pgid, Signal::KILL);
        }
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
    use crate::ndjson::INBOUND_QUEUE;
    use mcp_proto::Frame;

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

    #[tokio::test(flavor = "current_thread")]
    async fn start_on_a_one_thread_runtime_serves_the_process_and_names_a_missing_command() {
        // The process starts on a blocking thread and its pipes are served
        // by the runtime's one thread.
        let transport = StdioTransport::start(StdioOptions::new("cat"))
            .await
            .expect("`cat` runs");
        transport.send(numbered(7)).await.expect("send");
        match transport.recv().await {
            Inbound::Frame(Frame::Single(message)) => assert_eq!(message, numbered(7)),
            other => panic!("unexpected {other:?}"),
        }
        assert!(transport.pid().is_some());
        transport.close().await.expect("close");
        assert!(
            transport
                .exit_status()
                .is_some_and(|status| status.success())
        );

        let missing = StdioTransport::start(StdioOptions::new("no-such-command-here")).await;
        match missing {
            Err(TransportError::Setup(text)) => {
                assert!(
                    text.contains("`no-such-command-here` was not found"),
                    "{text}"
                );
            }
            other => panic!("expected a setup error, got {other:?}"),
        }
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

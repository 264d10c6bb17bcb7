//! `mcpctl serve --daemon`: the gateway kept running in the background on a Unix socket in the data directory, so that every `mcpctl serve` a host launches shares its warm connections.
//!
//! - `mcpctl serve --daemon` starts `mcpctl` again in the background (its
//!   own process group, so a terminal's Ctrl-C does not reach it; output to
//!   `gateway/gateway.log` in the data directory), waits until it has
//!   connected its servers and listens on `gateway/gateway.sock` (mode
//!   0600, in a 0700 directory), prints its pid and exits 0. When one for
//!   the same sources already runs, it says so and exits 0; one for other
//!   sources is an error naming its pid.
//! - `mcpctl serve` (stdio) then relays its stdin and stdout to that
//!   socket instead of starting servers of its own, when the daemon serves
//!   the same sources (the same project directory, `--config` files,
//!   `--no-project`, `--no-host-configs`, `--preset`, `--names` and
//!   `--lazy`); `--no-daemon` starts its own servers anyway. Five hosts
//!   launching `mcpctl serve` then hold one set of server processes.
//! - `mcpctl tools` and `mcpctl call` are clients of it too, for the same
//!   sources (a daemon of any `--names`, not `--lazy`; for `call`, with the
//!   same `--preset`): their output and exit status are a direct run's,
//!   over its warm connections (see `daemon_client`, which also says when
//!   they run directly anyway); `--no-daemon` bypasses it.
//! - `mcpctl serve --stop` sends the daemon SIGTERM, only once it is
//!   proven to be the daemon (the process answering on the socket is the
//!   pid it recorded and runs this mcpctl), and waits until it has closed
//!   its servers.
//!
//! Nothing here is trusted before `local_trust` has checked it: the data
//! directory and `gateway/` must be the user's, no symbolic link and closed
//! to others, the socket and the record the user's, and the process at the
//! other end of a connection the user's, on both sides. A client that finds
//! something else says so in one line and connects its servers itself;
//! `--daemon` and `--stop` refuse, naming what they found. Nothing of
//! another user's is removed or overwritten.
//!
//! Each connection to the socket is one gateway client (newline-delimited
//! JSON, as on stdio); a client that disconnects cancels only its own calls.
//! On Linux a relaying `mcpctl serve` hands the daemon its standard input
//! and output instead, and the daemon serves its client on them directly
//! (`handover`): a call then crosses one process between the host and a
//! server, as through `mcpctl serve` on its own.
//! Servers given on the command line (`--stdio`, `--url`) are not served by
//! a daemon. Its record (`gateway.json`) holds its pid, its key (the
//! sources and settings it serves, see [`key`]), whether its discovery was
//! complete (no configuration error, no server held back for trust) and its
//! servers in source order; [`matching`] is the one decision every command
//! makes to go through it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mcp_toolbridge::Gateway;
use serde::{Deserialize, Serialize};
use tokio::net::{UnixListener, UnixStream};

use crate::cli::{Names, Preset};
use crate::exit::{CliError, Exit};
use crate::local_trust::{self, Kind};
use crate::sources::SourceOptions;

#[cfg(target_os = "linux")]
mod handover;

/// The longest `--daemon` waits for the background gateway to listen.
const START_DEADLINE: Duration = Duration::from_secs(150);

/// The longest `--stop` waits for it to end.
const STOP_DEADLINE: Duration = Duration::from_secs(30);

/// Where the daemon's files are.
#[derive(Clone, Debug)]
pub(crate) struct Paths {
    data: PathBuf,
    dir: PathBuf,
}

impl Paths {
    /// `<data dir>/gateway`.
    pub(crate) fn new() -> Result<Paths, CliError> {
        let data = crate::sources::store_location().data_dir(&mcp_config::ProcessEnv)?;
        Ok(Paths {
            dir: data.join("gateway"),
            data,
        })
    }

    /// The socket the daemon listens on.
    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.join("gateway.sock")
    }

    fn record(&self) -> PathBuf {
        self.dir.join("gateway.json")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("gateway.log")
    }
}

/// What a running daemon wrote about itself.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    pid: u32,
    /// What it serves (see [`key`]).
    key: String,
    /// Whether its discovery found every server usable as configured: no
    /// configuration error and no project server held back for trust. Only
    /// then does its report say everything `mcpctl tools` would.
    #[serde(default)]
    pub(crate) complete: bool,
    /// Its servers' ids in source order (the manager knows them by id).
    #[serde(default)]
    pub(crate) servers: Vec<String>,
}

/// What the background gateway serves beyond its key (see [`Record`]).
#[derive(Debug, Default)]
pub(crate) struct Served {
    /// [`Record::complete`].
    pub(crate) complete: bool,
    /// [`Record::servers`].
    pub(crate) servers: Vec<String>,
}

/// The settings part of a daemon's [`key`]: what changes what the gateway
/// serves besides the sources.
pub(crate) fn settings(preset: Preset, names: Names, lazy: bool) -> String {
    format!("preset={preset:?}; names={names:?}; lazy={lazy}")
}

/// The sources and options a daemon serves, as a comparable text (paths
/// and flags only: nothing secret).
pub(crate) fn key(sources: &SourceOptions, settings: &str) -> String {
    let project = if sources.no_project {
        "none".to_owned()
    } else {
        let dir = sources
            .project
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        std::fs::canonicalize(&dir)
            .unwrap_or(dir)
            .display()
            .to_string()
    };
    let configs: Vec<String> = sources
        .configs
        .iter()
        .map(|path| {
            std::fs::canonicalize(path)
                .unwrap_or_else(|_| path.clone())
                .display()
                .to_string()
        })
        .collect();
    format!(
        "project={project}; configs={}; host-configs={}; {settings}",
        configs.join(","),
        !sources.no_host_configs
    )
}

/// Whether command-line servers were given (a daemon does not serve them).
pub(crate) fn has_adhoc(sources: &SourceOptions) -> bool {
    !sources.adhoc.stdio.is_empty() || sources.adhoc.url.is_some()
}

/// What is found on the socket (see [`probe`]).
pub(crate) enum Probe {
    /// Nothing usable answers: no directory, no socket, a stale socket,
    /// or no readable record.
    Nothing,
    /// Something is there that is not this user's: the sentence says what.
    /// Nothing was sent to it or changed, and a socket in a directory that
    /// failed its check was not even connected to.
    Refused(String),
    /// A process of this user answers: the record, the connection, and
    /// the pid the socket's peer credentials report (where the system
    /// reports one), which may still differ from the record's (see
    /// [`Probe::daemon`]).
    Daemon(Record, UnixStream, Option<i32>),
}

impl Probe {
    /// The daemon when the record describes the process answering: a
    /// mismatch is a daemon of this user between binding its socket and
    /// writing its record, or not a daemon at all, and is not used.
    fn daemon(self) -> Option<(Record, UnixStream)> {
        match self {
            Probe::Daemon(record, stream, pid)
                if pid.is_none_or(|pid| i64::from(pid) == i64::from(record.pid)) =>
            {
                Some((record, stream))
            }
            _ => None,
        }
    }
}

/// The daemon that answers on the socket now, checked before it is
/// trusted with anything: the data directory and `gateway/` are this
/// user's and closed to others, the socket and the record are this user's,
/// and the process answering runs as this user (`local_trust`).
pub(crate) async fn probe(paths: &Paths) -> Probe {
    let checked = (|| {
        for dir in [paths.data.as_path(), paths.dir.as_path()] {
            if !local_trust::private_dir(dir)? {
                return Ok(false);
            }
        }
        local_trust::own_entry(&paths.socket(), Kind::Socket)
    })();
    match checked {
        Ok(true) => {}
        Ok(false) => return Probe::Nothing,
        Err(why) => return Probe::Refused(why),
    }
    let Ok(stream) = UnixStream::connect(paths.socket()).await else {
        return Probe::Nothing;
    };
    let pid = match local_trust::same_user(&stream) {
        Ok(pid) => pid,
        Err(why) => return Probe::Refused(format!("{}: {why}", paths.socket().display())),
    };
    match local_trust::own_entry(&paths.record(), Kind::File) {
        Ok(true) => {}
        Ok(false) => return Probe::Nothing,
        Err(why) => return Probe::Refused(why),
    }
    let Some(record) = std::fs::read_to_string(paths.record())
        .ok()
        .and_then(|text| serde_json::from_str::<Record>(&text).ok())
    else {
        return Probe::Nothing;
    };
    Probe::Daemon(record, stream, pid)
}

/// This user's daemon answering on the socket, if any; a refused one is
/// reported in one line on stderr, and the caller works without it.
async fn running(paths: &Paths) -> Option<(Record, UnixStream)> {
    match probe(paths).await {
        Probe::Refused(why) => {
            eprintln!("mcpctl: not using the background gateway: {why}; connecting directly");
            None
        }
        found => found.daemon(),
    }
}

/// The decision to go through the daemon: the one that answers on the
/// socket now, when it serves one of `keys` (the same sources, with
/// settings the caller can use); `None` otherwise, and the caller does the
/// work itself.
pub(crate) async fn matching(paths: &Paths, keys: &[String]) -> Option<(Record, UnixStream)> {
    let (record, stream) = running(paths).await?;
    keys.contains(&record.key).then_some((record, stream))
}

/// `mcpctl serve` (stdio) through a running daemon for `key`: hands it
/// stdin and stdout where it can (`handover`, Linux: pipes or sockets, a
/// daemon running this executable) and waits until it has served them;
/// otherwise relays them to its socket by copying until either side ends.
/// `None` when no daemon for `key` runs.
pub(crate) async fn relay(paths: &Paths, key: &str) -> Option<Result<Exit, CliError>> {
    let (record, stream) = matching(paths, &[key.to_owned()]).await?;
    // The daemon serves our standard streams itself where it can: no copy
    // through this process (see `handover`).
    #[cfg(target_os = "linux")]
    let stream = match handover::relay(record.pid, stream).await {
        Ok(served) => return Some(served),
        Err(stream) => stream,
    };
    #[cfg(not(target_os = "linux"))]
    let _ = record;
    let (mut from_daemon, mut to_daemon) = stream.into_split();
    // Non-blocking standard streams where they are pipes or sockets, on a
    // task of the runtime: each message goes from one stream to the other
    // on the worker that polled its read, with no blocking-pool thread
    // (tokio's `stdin()`/`stdout()`) or parked main thread in between.
    let (mut input, mut output) = mcp_transport::server::stdio();
    let upstream = async move {
        let copied = tokio::io::copy(&mut input, &mut to_daemon).await;
        // The client's input ended: the daemon sees the end of ours too.
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut to_daemon).await;
        copied
    };
    let downstream = async move {
        let copied = tokio::io::copy(&mut from_daemon, &mut output).await;
        let _ = tokio::io::AsyncWriteExt::flush(&mut output).await;
        copied
    };
    // Done once the daemon has answered everything it will (its side ends
    // after our input does).
    let mut relaying = Cancelled(tokio::spawn(
        async move { tokio::join!(upstream, downstream).1 },
    ));
    let answered = (&mut relaying.0)
        .await
        .unwrap_or_else(|joined| Err(std::io::Error::other(joined)));
    Some(
        answered
            .map(|_| Exit::Success)
            .map_err(|e| CliError::connection(format!("the background gateway: {e}"))),
    )
}

/// `mcpctl serve --daemon`: starts the background gateway unless one runs.
pub(crate) async fn start(paths: &Paths, key: &str) -> Result<Exit, CliError> {
    let found = match probe(paths).await {
        Probe::Refused(why) => return Err(untrusted(why)),
        found => found.daemon(),
    };
    if let Some((record, _)) = found {
        if record.key == key {
            println!(
                "mcpctl serve: already running in the background (pid {}), socket {}",
                record.pid,
                paths.socket().display()
            );
            return Ok(Exit::Success);
        }
        return Err(CliError::usage(format!(
            "a background gateway for other sources runs (pid {}): `mcpctl serve --stop` first",
            record.pid
        )));
    }
    prepare_dir(paths)?;
    local_trust::own_entry(&paths.log(), Kind::File).map_err(untrusted)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(paths.log())
        .map_err(|e| CliError::usage(format!("cannot open {}: {e}", paths.log().display())))?;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::usage(format!("cannot find mcpctl's own executable: {e}")))?;
    // The same command line, with the background role instead of --daemon.
    let args: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .map(|arg| {
            if arg == "--daemon" {
                "--in-background".into()
            } else {
                arg
            }
        })
        .collect();
    let mut command = std::process::Command::new(exe);
    command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(
            log.try_clone()
                .map_err(|e| CliError::usage(e.to_string()))?,
        )
        .stderr(log);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| CliError::usage(format!("cannot start the background gateway: {e}")))?;
    let started = tokio::time::Instant::now();
    loop {
        if let Some((record, _)) = probe(paths).await.daemon()
            && record.pid == child.id()
        {
            println!(
                "mcpctl serve: running in the background (pid {}), socket {}; \
                 `mcpctl serve` relays to it, `mcpctl serve --stop` ends it",
                record.pid,
                paths.socket().display()
            );
            return Ok(Exit::Success);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(CliError::connection(format!(
                "the background gateway ended ({status}) before it listened; its log: {}",
                paths.log().display()
            )));
        }
        if started.elapsed() > START_DEADLINE {
            // Ours, by its handle.
            let _ = child.kill();
            let _ = child.wait();
            return Err(CliError::connection(format!(
                "the background gateway did not listen within {} s; its log: {}",
                START_DEADLINE.as_secs(),
                paths.log().display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The background gateway itself: listens on the socket, one gateway
/// client per connection, until `stop` resolves; then removes its files.
pub(crate) async fn listen(
    paths: &Paths,
    key: &str,
    served: Served,
    gateway: Gateway,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), CliError> {
    prepare_dir(paths)?;
    let socket = paths.socket();
    // Nobody answers on it (`start` checked): a stale file from a daemon
    // of this user that was killed (never another user's file).
    if local_trust::own_entry(&socket, Kind::Socket).map_err(untrusted)? {
        let _ = std::fs::remove_file(&socket);
    }
    local_trust::own_entry(&paths.record(), Kind::File).map_err(untrusted)?;
    let listener = UnixListener::bind(&socket)
        .map_err(|e| CliError::usage(format!("cannot listen on {}: {e}", socket.display())))?;
    set_mode(&socket, 0o600)?;
    let record = Record {
        pid: std::process::id(),
        key: key.to_owned(),
        complete: served.complete,
        servers: served.servers,
    };
    let text = serde_json::to_string(&record).map_err(|e| CliError::usage(e.to_string()))?;
    std::fs::write(paths.record(), text)
        .map_err(|e| CliError::usage(format!("cannot write {}: {e}", paths.record().display())))?;
    eprintln!("mcpctl serve: listening on {}", socket.display());
    let accept = async {
        loop {
            // A failed accept is most often the process out of
            // descriptors for a moment: wait rather than spin.
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(mcp_transport::server::listener::ACCEPT_BACKOFF).await;
                continue;
            };
            // Only this user's processes are served; the socket's mode
            // says so too, and this holds where a mode is not enforced.
            if let Err(why) = local_trust::same_user(&stream) {
                eprintln!("mcpctl serve: refused a connection: {why}");
                continue;
            }
            let gateway = gateway.clone();
            // Each client is served on mcp-transport's stream server, within
            // its reply budget: one that never reads its replies stops being
            // read. A relaying `mcpctl serve` may hand over its standard
            // streams, its client's, to be served on instead (`handover`).
            tokio::spawn(async move {
                #[cfg(target_os = "linux")]
                let stream = match handover::opening(stream).await {
                    handover::Opening::Client(stream) => stream,
                    handover::Opening::Handed(stream, input, output) => {
                        return handover::serve(gateway, stream, input, output).await;
                    }
                    handover::Opening::Refused(stream, why) => {
                        return handover::refuse(stream, why).await;
                    }
                };
                let (read, write) = stream.into_split();
                let _ = gateway.serve(read, write).await;
            });
        }
    };
    tokio::select! {
        () = accept => {}
        () = stop => {}
    }
    // Only our own files: a newer daemon may have replaced them.
    let ours = std::fs::read_to_string(paths.record())
        .ok()
        .and_then(|text| serde_json::from_str::<Record>(&text).ok())
        .is_some_and(|r| r.pid == std::process::id());
    if ours {
        let _ = std::fs::remove_file(&socket);
        let _ = std::fs::remove_file(paths.record());
    }
    Ok(())
}

/// `mcpctl serve --stop`: signals only a process proven to be this
/// user's daemon (see [`proven_daemon`]).
pub(crate) async fn stop(paths: &Paths) -> Result<Exit, CliError> {
    let (record, stream, peer) = match probe(paths).await {
        Probe::Nothing => {
            println!("mcpctl serve: no background gateway runs");
            return Ok(Exit::Success);
        }
        Probe::Refused(why) => return Err(untrusted(why)),
        Probe::Daemon(record, stream, peer) => (record, stream, peer),
    };
    let target = proven_daemon(paths, &record, peer)?;
    drop(stream);
    target.terminate().map_err(|e| {
        CliError::usage(format!(
            "cannot stop the background gateway (pid {}): {e}",
            record.pid
        ))
    })?;
    let pid = target.pid;
    let started = tokio::time::Instant::now();
    while rustix::process::test_kill_process(pid).is_ok() {
        if started.elapsed() > STOP_DEADLINE {
            return Err(CliError::connection(format!(
                "the background gateway (pid {}) did not end within {} s",
                record.pid,
                STOP_DEADLINE.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    println!(
        "mcpctl serve: stopped the background gateway (pid {})",
        record.pid
    );
    let _ = std::io::stdout().flush();
    Ok(Exit::Success)
}

/// The process `--stop` may signal, held by a pidfd where Linux has one.
struct Target {
    pid: rustix::process::Pid,
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl Target {
    /// Sends SIGTERM: through the pidfd when there is one, so that the
    /// process checked is the process signalled.
    fn terminate(&self) -> rustix::io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(pidfd) = &self.pidfd {
            return rustix::process::pidfd_send_signal(pidfd, rustix::process::Signal::TERM);
        }
        rustix::process::kill_process(self.pid, rustix::process::Signal::TERM)
    }
}

/// Proves that the daemon's record names the process answering on its
/// socket, and that this process runs this mcpctl: the peer credentials'
/// pid (already checked to be this user's) is the record's pid, and on
/// Linux its executable (`/proc/PID/exe`, read after a pidfd holds the
/// process) is the same file as this one's. Anything else is refused with
/// the reason, and nothing is signalled.
fn proven_daemon(paths: &Paths, record: &Record, peer: Option<i32>) -> Result<Target, CliError> {
    let refuse = |why: String| {
        CliError::usage(format!("not signalling pid {}: {why}", record.pid)).code("not_the_daemon")
    };
    let Some(peer) = peer else {
        return Err(refuse(format!(
            "the system does not say which process answers on {}",
            paths.socket().display()
        )));
    };
    if i64::from(peer) != i64::from(record.pid) {
        return Err(refuse(format!(
            "the process answering on {} is pid {peer}, not the one {} names",
            paths.socket().display(),
            paths.record().display()
        )));
    }
    let pid = rustix::process::Pid::from_raw(peer)
        .ok_or_else(|| refuse(format!("{} names no pid", paths.record().display())))?;
    #[cfg(target_os = "linux")]
    {
        // Held first, so that the process checked below is the one signalled.
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
        same_executable(peer).map_err(refuse)?;
        Ok(Target { pid, pidfd })
    }
    #[cfg(not(target_os = "linux"))]
    Ok(Target { pid })
}

/// Whether process `pid` runs the same executable file as this process.
#[cfg(target_os = "linux")]
fn same_executable(pid: i32) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let theirs = std::fs::metadata(format!("/proc/{pid}/exe"))
        .map_err(|e| format!("cannot read which program pid {pid} runs: {e}"))?;
    let ours = std::fs::metadata("/proc/self/exe")
        .map_err(|e| format!("cannot read which program this is: {e}"))?;
    if (theirs.dev(), theirs.ino()) != (ours.dev(), ours.ino()) {
        let program = std::fs::read_link(format!("/proc/{pid}/exe"))
            .map(|path| path.display().to_string())
            .unwrap_or_else(|_| "another program".to_owned());
        return Err(format!(
            "it runs {}, not this mcpctl",
            mcp_proto::text::error_text(&program, 200)
        ));
    }
    Ok(())
}

/// A refused trust check as the command's error.
fn untrusted(why: String) -> CliError {
    CliError::usage(format!("refusing the background gateway's files: {why}"))
        .code("untrusted_local_file")
}

/// Creates the data directory and `gateway/` (0700) where missing, and
/// refuses to use them unless both are this user's and closed to others.
fn prepare_dir(paths: &Paths) -> Result<(), CliError> {
    use std::os::unix::fs::DirBuilderExt;
    for (dir, recursive) in [(&paths.data, true), (&paths.dir, false)] {
        if !local_trust::private_dir(dir).map_err(untrusted)? {
            std::fs::DirBuilder::new()
                .recursive(recursive)
                .mode(0o700)
                .create(dir)
                .map_err(|e| CliError::usage(format!("cannot create {}: {e}", dir.display())))?;
            local_trust::private_dir(dir).map_err(untrusted)?;
        }
    }
    set_mode(&paths.dir, 0o700)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), CliError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| CliError::usage(format!("cannot restrict {}: {e}", path.display())))
}

/// A task that ends with the future awaiting it: when the command is
/// stopped (Ctrl-C), serving stops with it.
pub(crate) struct Cancelled<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for Cancelled<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

//! Shared helpers for mcpctl's end-to-end tests: an isolated environment per test and the built binary run in it.
//!
//! Every run gets its own data dir (`LOOP_DATA_DIR`), `HOME` and working
//! directory, with the variables that move other applications' files
//! (`XDG_CONFIG_HOME`, ...) removed, so the user's store, project and host
//! files are never read, and
//! `NO_COLOR` so human output is plain. A run that outlives its deadline is
//! killed and the test fails, naming the command.

#![allow(dead_code)]

pub(crate) mod cdp;
pub(crate) mod oauth_fake;
pub(crate) mod pty;
pub(crate) mod ui;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

/// The built `mcpctl`.
pub(crate) const MCPCTL: &str = env!("CARGO_BIN_EXE_mcpctl");

/// How long one mcpctl run may take before it is killed.
pub(crate) const RUN_DEADLINE: Duration = Duration::from_secs(90);

/// An isolated place to run mcpctl.
#[derive(Debug)]
pub(crate) struct Env {
    root: TempDir,
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub(crate) struct Run {
    /// The exit status (`-1` when killed by a signal).
    pub(crate) code: i32,
    /// Everything on stdout.
    pub(crate) stdout: String,
    /// Everything on stderr.
    pub(crate) stderr: String,
}

impl Env {
    /// A fresh environment: empty data dir, home and working directory.
    pub(crate) fn new() -> Env {
        let root = tempfile::tempdir().expect("a temp dir");
        for dir in ["data", "home", "work"] {
            std::fs::create_dir(root.path().join(dir)).expect("a test directory");
        }
        Env { root }
    }

    /// The data dir (`LOOP_DATA_DIR`).
    pub(crate) fn data_dir(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// The store file.
    pub(crate) fn store(&self) -> PathBuf {
        self.data_dir().join("mcp.json")
    }

    /// The home directory (`HOME`).
    pub(crate) fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// The working directory mcpctl runs in (the default project).
    pub(crate) fn work_dir(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// Writes `value` as JSON to `name` under the environment's root and
    /// returns the path.
    pub(crate) fn write_json(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.root.path().join(name);
        std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap())
            .expect("write a test file");
        path
    }

    /// `mcpctl ARGS` as a stdio server for this workspace's client, with
    /// this environment (the same variables and directory as [`Env::command`]).
    pub(crate) fn serve_options(&self, args: &[&str]) -> mcp_transport::StdioOptions {
        let mut stdio = mcp_transport::StdioOptions::new(MCPCTL);
        stdio.args = args.iter().map(|a| (*a).to_owned()).collect();
        stdio.cwd = Some(self.work_dir());
        stdio.env = self
            .command(&[])
            .get_envs()
            .filter_map(|(key, value)| {
                Some((key.to_str()?.to_owned(), value?.to_str()?.to_owned()))
            })
            .collect();
        stdio
    }

    /// `mcpctl ARGS` in this environment, not yet started.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(MCPCTL);
        command
            .args(args)
            .current_dir(self.work_dir())
            .env("LOOP_DATA_DIR", self.data_dir())
            // mcpctl's own variable and the platform's data directory would
            // win over (or stand in for) LOOP_DATA_DIR.
            .env_remove("MCPCTL_DATA_DIR")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", self.root.path().join("home"))
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            // Other applications' files are found under HOME only.
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("APPDATA")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("MCPCTL_NO_HOST_CONFIGS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs `mcpctl ARGS` to the end.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        run_to_end(self.command(args), args)
    }

    /// Runs `mcpctl --json ARGS`, expects exit 0 and returns the one JSON
    /// document stdout holds (and nothing else).
    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = self.run(&all);
        assert_eq!(run.code, 0, "mcpctl {all:?} failed: {run:#?}");
        parse_one_document(&run.stdout)
    }
}

/// A runtime of two workers, as the tests that drive a client of `mcpctl`
/// from this process use.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Parses stdout as exactly one JSON document: anything else on stdout fails.
pub(crate) fn parse_one_document(stdout: &str) -> Value {
    let mut stream = serde_json::Deserializer::from_str(stdout).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(value)) => value,
        other => panic!("stdout is not a JSON document ({other:?}): {stdout:?}"),
    };
    let rest = stdout.get(stream.byte_offset()..).unwrap_or_default();
    assert!(
        rest.trim().is_empty(),
        "stdout holds more than one JSON document: {rest:?}"
    );
    value
}

/// Runs `command` to the end, killing it after [`RUN_DEADLINE`].
pub(crate) fn run_to_end(mut command: Command, args: &[&str]) -> Run {
    let mut child = command.spawn().expect("mcpctl starts");
    let stdout = drain(&mut child, true);
    let stderr = drain(&mut child, false);
    let watchdog = Watchdog::start(&child, format!("mcpctl {args:?}"));
    let status = child.wait().expect("wait for mcpctl");
    watchdog.stop();
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

fn drain(child: &mut Child, stdout: bool) -> std::thread::JoinHandle<String> {
    let mut pipe: Box<dyn Read + Send> = if stdout {
        Box::new(child.stdout.take().expect("piped stdout"))
    } else {
        Box::new(child.stderr.take().expect("piped stderr"))
    };
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Kills a process that outlives its deadline, so a hung run fails the
/// test instead of hanging it.
pub(crate) struct Watchdog {
    done: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Watchdog {
    /// Starts watching `child`.
    pub(crate) fn start(child: &Child, what: String) -> Watchdog {
        let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child pid");
        let (done, rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(RUN_DEADLINE) {
                eprintln!("{what} ran longer than {RUN_DEADLINE:?}; killing it");
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        });
        Watchdog { done, thread }
    }

    /// The process ended in time.
    pub(crate) fn stop(self) {
        let _ = self.done.send(());
        let _ = self.thread.join();
    }
}

/// The repository root.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/mcp-cli is two levels below the root")
        .to_path_buf()
}

/// server-everything's entry point, installed by `.ci/run`. Panics with the
/// command to run when it is missing: a missing prerequisite fails.
pub(crate) fn server_everything() -> PathBuf {
    let path = repo_root()
        .join("tests/interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "server-everything is not installed at {}: run `npm ci --prefix tests/interop` (or bash .ci/run)",
        path.display()
    );
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("node").is_file()));
    assert!(on_path, "node is not on PATH: install Node.js 20 or newer");
    path
}

/// The workspace's fixture server (`tests/src/bin/mcp-fixture-server`),
/// built beside `mcpctl` by `cargo test --workspace`. Panics with the
/// command that builds it when it is missing: a missing prerequisite fails.
pub(crate) fn fixture_server() -> PathBuf {
    let path = Path::new(MCPCTL).with_file_name(format!(
        "mcp-fixture-server{}",
        std::env::consts::EXE_SUFFIX
    ));
    assert!(
        path.is_file(),
        "the fixture server is not built at {}: run `cargo build -p tests --bin mcp-fixture-server` \
         (`cargo test --workspace` builds it)",
        path.display()
    );
    path
}

/// The venv Python with FastMCP, installed by `.ci/run`.
pub(crate) fn venv_python() -> PathBuf {
    let path = repo_root().join(".venv/bin/python");
    assert!(
        path.is_file(),
        "the Python venv is missing at {}: run `python3 -m venv .venv && .venv/bin/pip install -r tests/interop/requirements.txt` (or bash .ci/run)",
        path.display()
    );
    path
}

/// The FastMCP server script of the interop tests.
pub(crate) fn fastmcp_script() -> PathBuf {
    repo_root().join("tests/interop/fastmcp_server.py")
}

/// A free loopback port: bound, read and released.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

/// A server process listening on a loopback port; killed when dropped.
#[derive(Debug)]
pub(crate) struct HttpServer {
    child: Child,
    /// The port.
    pub(crate) port: u16,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` and waits (at most 30 s) until a line of its output
/// mentions `port`: server-everything and uvicorn print one once they listen.
pub(crate) fn start_http_server(mut command: Command, port: u16) -> HttpServer {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the server process starts");
    let (tx, rx) = mpsc::channel::<String>();
    for pipe in [
        Box::new(child.stdout.take().expect("piped stdout")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("piped stderr")),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                // After the server is up nobody listens; keep draining so
                // the pipe never fills.
                let _ = tx.send(line);
            }
        });
    }
    drop(tx);
    let needle = port.to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(&needle) => return HttpServer { child, port },
            Ok(line) => seen.push(line),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!(
                    "the server did not report listening on {port} within 30 s; it printed {seen:?}"
                )
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the server exited before listening on {port}; it printed {seen:?}")
            }
        }
    }
}

/// server-everything over Streamable HTTP on a free port (`/mcp`).
pub(crate) fn everything_http() -> HttpServer {
    let script = server_everything();
    let port = free_port();
    let mut command = Command::new("node");
    command
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .env("GZIP_ALLOWED_DOMAINS", "localhost");
    start_http_server(command, port)
}

impl Env {
    /// Writes `text` to `name` under the environment's root.
    pub(crate) fn root_file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.root.path().join(name);
        std::fs::write(&path, text).expect("write a test file");
        path
    }
}

/// The lines `reader` yields, one by one as they are written, from a
/// thread of their own (a test waits on them with `recv_timeout`).
pub(crate) fn lines_of(
    reader: impl std::io::Read + Send + 'static,
) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Everything `reader` yields until its end, read on a thread of its own.
pub(crate) fn read_all(
    mut reader: impl std::io::Read + Send + 'static,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = reader.read_to_string(&mut text);
        text
    })
}

/// Whether process `pid` still runs.
pub(crate) fn alive(pid: i32) -> bool {
    rustix::process::Pid::from_raw(pid)
        .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
}

/// The pids the fixture wrote, one per start.
pub(crate) fn pids(path: &std::path::Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

//! Starting independently written servers as real processes for the interop tests.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A server process listening on a loopback port. The process is killed
/// when this is dropped.
#[derive(Debug)]
pub struct HttpServerProcess {
    /// The child; `kill_on_drop` ends it with the test.
    pub child: Child,
    /// The port it listens on.
    pub port: u16,
}

/// A free loopback port: bound, read and released. Another process could
/// take it in between; tests that use it fail loudly if that happens.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Starts `command` and waits (at most 30 s) until one of its output lines
/// mentions `port`, which both server-everything and uvicorn print once
/// they listen.
pub async fn start_http_server(mut command: Command, port: u16) -> HttpServerProcess {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("the server process starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    for stream in [
        Box::new(stdout) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
        Box::new(stderr),
    ] {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).is_err() {
                    // Nobody listens any more; keep draining so the pipe never fills.
                    continue;
                }
            }
        });
    }
    drop(tx);
    let needle = port.to_string();
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        let mut seen = Vec::new();
        while let Some(line) = rx.recv().await {
            if line.contains(&needle) {
                return Ok(());
            }
            seen.push(line);
        }
        Err(seen)
    })
    .await;
    match ready {
        Ok(Ok(())) => HttpServerProcess { child, port },
        Ok(Err(seen)) => {
            panic!("the server exited before listening on {port}; it printed: {seen:?}")
        }
        Err(_) => panic!("the server did not report listening on {port} within 30 s"),
    }
}

/// The fixture server in an HTTP mode and the URL it printed; the process
/// is killed when this is dropped.
#[derive(Debug)]
pub struct FixtureHttp {
    /// The child; `kill_on_drop` ends it with the test.
    pub child: Child,
    /// The URL of its first stdout line, `listening on URL`.
    pub url: String,
}

/// Starts the fixture server `program` (the test's
/// `env!("CARGO_BIN_EXE_mcp-fixture-server")`) with `args` on a port it
/// picks, and waits (at most 20 s) for the URL it prints.
pub async fn start_fixture_http(program: &str, args: &[&str]) -> FixtureHttp {
    let mut child = Command::new(program)
        .args(args)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the fixture server starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let first = tokio::time::timeout(
        Duration::from_secs(20),
        BufReader::new(stdout).lines().next_line(),
    )
    .await
    .expect("the fixture prints its URL")
    .expect("readable stdout")
    .expect("a first line");
    let url = first
        .strip_prefix("listening on ")
        .expect("`listening on URL`")
        .to_owned();
    FixtureHttp { child, url }
}

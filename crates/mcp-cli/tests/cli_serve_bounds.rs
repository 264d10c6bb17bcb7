//! The bounds of the servers `mcpctl` runs, against real processes: a stdio client that never reads its replies, a thousand slow connections to `serve --http` and `ui` under a 1,024-descriptor limit, and a DELETE of a session whose call is in flight.

mod support;

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::Env;

/// The resident set of process `pid`, in bytes, from `/proc`.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e}"));
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"));
    kib * 1024
}

/// Kills a child of the test (by its handle) when the test ends early.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A stdio client writes 64 MiB of pings and never reads: mcpctl stops
/// reading once 8 MiB of answers wait, and stays small.
#[test]
fn a_client_that_never_reads_keeps_serve_bounded() {
    const VOLUME: usize = 64 * 1024 * 1024;
    const RSS_LIMIT: u64 = 64 * 1024 * 1024;
    let env = Env::new();
    let mut command = env.command(&["serve", "--no-daemon", "--no-host-configs"]);
    command.stdin(Stdio::piped()).stderr(Stdio::null());
    let mut child = Killed(command.spawn().expect("mcpctl serve starts"));
    let pid = child.0.id();
    let mut stdin = child.0.stdin.take().expect("piped stdin");
    // Held, never read: the answers fill the pipe, then mcpctl's budget.
    let _stdout = child.0.stdout.take().expect("piped stdout");
    let (progress, written) = mpsc::channel::<usize>();
    std::thread::spawn(move || {
        let mut total = 0;
        let mut id = 0u64;
        while total < VOLUME {
            let mut chunk = Vec::with_capacity(1024 * 1024 + 64);
            while chunk.len() < 1024 * 1024 {
                id += 1;
                writeln!(chunk, r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).unwrap();
            }
            // Fails once the test kills mcpctl.
            if stdin.write_all(&chunk).is_err() {
                return;
            }
            total += chunk.len();
            if progress.send(total).is_err() {
                return;
            }
        }
    });
    let mut total = 0;
    let mut peak = 0;
    let mut last_progress = Instant::now();
    // Until the writer is done, or has been blocked for 5 s: mcpctl no
    // longer reads.
    loop {
        match written.recv_timeout(Duration::from_millis(100)) {
            Ok(now) => {
                total = now;
                last_progress = Instant::now();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        peak = peak.max(rss(pid));
        if last_progress.elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    assert!(
        matches!(child.0.try_wait(), Ok(None)),
        "mcpctl serve ended while its client wrote"
    );
    assert!(
        total < VOLUME,
        "mcpctl read all {VOLUME} bytes of pings without their answers being read"
    );
    assert!(
        total >= 8 * 1024 * 1024,
        "mcpctl stopped reading after {total} bytes, before its 8 MiB budget of answers"
    );
    assert!(
        peak < RSS_LIMIT,
        "mcpctl grew to {} MiB after {} MiB of pings",
        peak >> 20,
        total >> 20
    );
}

/// `mcpctl ARGS` in `env` under a soft and hard limit of 1,024 open files
/// (`prlimit`, from util-linux).
fn limited(env: &Env, args: &[&str]) -> Child {
    let base = env.command(args);
    let mut command = Command::new("prlimit");
    command
        .arg("--nofile=1024")
        .arg(base.get_program())
        .args(base.get_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(dir) = base.get_current_dir() {
        command.current_dir(dir);
    }
    for (key, value) in base.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
        .spawn()
        .expect("prlimit runs mcpctl (install util-linux for `prlimit`)")
}

/// The first `count` lines `child` prints.
fn first_lines(child: &mut Child, count: usize) -> Vec<String> {
    let lines = support::lines_of(child.stdout.take().expect("piped stdout"));
    (0..count)
        .map(|_| {
            lines
                .recv_timeout(support::RUN_DEADLINE)
                .expect("mcpctl prints where it listens")
        })
        .collect()
}

/// 1,100 connections to `port`, each having sent two bytes of a request
/// head, more than the descriptors mcpctl has. The test's own soft limit is
/// raised to its hard one to hold them.
fn slow_connections(port: u16) -> Vec<TcpStream> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    )
    .expect("raise the test's open-file limit");
    assert!(
        limit.maximum.is_none_or(|max| max >= 1300),
        "the test holds 1,100 connections: raise the hard open-file limit (ulimit -Hn) to 1,300"
    );
    let mut slow: Vec<TcpStream> = (0..1100)
        .map(|_| {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
            // A connection mcpctl closed already is fine: it was evicted.
            let _ = stream.write_all(b"P");
            stream
        })
        .collect();
    for stream in &mut slow {
        let _ = stream.write_all(b"O");
    }
    slow
}

/// With 1,100 slow connections open to `mcpctl serve --http`, which has
/// 1,024 descriptors, a client's `initialize` and `tools/list` are
/// answered within 2 s.
#[test]
fn slow_connections_do_not_keep_serve_http_from_answering() {
    let env = Env::new();
    let mut child = limited(&env, &["--no-host-configs", "serve", "--http"]);
    let lines = first_lines(&mut child, 2);
    let _child = Killed(child);
    let (port, bearer) = http_endpoint(&lines);
    let headers = [
        bearer.as_str(),
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
    ];
    let _slow = slow_connections(port);
    let started = Instant::now();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let answer = support::ui::request(port, "POST", "/mcp", &headers, &init.to_string());
    assert_eq!(answer.status, 200, "{answer:?}");
    let session = answer
        .head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| format!("Mcp-Session-Id: {}", value.trim()))
        })
        .unwrap_or_else(|| panic!("no session in {answer:?}"));
    let mut with_session = headers.to_vec();
    with_session.push(&session);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let answer = support::ui::request(port, "POST", "/mcp", &with_session, &list.to_string());
    let took = started.elapsed();
    assert!(answer.json()["result"]["tools"].is_array(), "{answer:?}");
    assert!(
        took < Duration::from_secs(2),
        "answered in {took:?} with 1,100 slow connections open"
    );
}

/// The same for `mcpctl ui`: its server list is answered within 2 s.
#[test]
fn slow_connections_do_not_keep_the_settings_page_from_answering() {
    let env = Env::new();
    let mut child = limited(&env, &["ui"]);
    let lines = first_lines(&mut child, 1);
    let _child = Killed(child);
    let url = lines[0]
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in {lines:?}"));
    let (port, token) = url
        .trim_start_matches("http://127.0.0.1:")
        .split_once("/?token=")
        .expect("a URL with a token");
    let port: u16 = port.parse().expect("a port");
    let _slow = slow_connections(port);
    let started = Instant::now();
    let header = format!("x-mcpctl-token: {token}");
    let answer = support::ui::request(port, "GET", "/api/servers", &[&header], "");
    let took = started.elapsed();
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        took < Duration::from_secs(2),
        "answered in {took:?} with 1,100 slow connections open"
    );
}

/// DELETE of a handshake-era session while its call runs upstream: the
/// upstream server is told the call is cancelled, and the call's stream
/// ends without an answer.
#[test]
fn deleting_a_session_cancels_its_calls_upstream() {
    let env = Env::new();
    let log = env.work_dir().join("fx-events.log");
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {"command": support::fixture_server(),
            "args": ["--era", "legacy", "--event-log", log]}}}),
    );
    let config = config.display().to_string();
    let mut child = env
        .command(&["--no-host-configs", "--config", &config, "serve", "--http"])
        .stderr(Stdio::null())
        .spawn()
        .expect("mcpctl serve --http starts");
    let lines = first_lines(&mut child, 2);
    let _child = Killed(child);
    let (port, bearer) = http_endpoint(&lines);
    let headers = [
        bearer.as_str(),
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let answer = support::ui::request(port, "POST", "/mcp", &headers, &init.to_string());
    let session = answer
        .head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session in {answer:?}"));
    // A 6 s call (30 steps of 200 ms) reporting progress, so that the test
    // knows when it runs upstream.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "mcp_fx_progress", "arguments": {"steps": 30, "ms": 200},
        "_meta": {"progressToken": "p"}}})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{bearer}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Mcp-Session-Id: {session}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{call}",
        call.len()
    )
    .unwrap();
    let mut reader = std::io::BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the call's stream ended before its first progress report"
        );
        if line.starts_with("data:") {
            assert!(line.contains("notifications/progress"), "{line}");
            break;
        }
    }
    let id = format!("Mcp-Session-Id: {session}");
    let deleted = support::ui::request(port, "DELETE", "/mcp", &[&bearer, &id], "");
    assert_eq!(deleted.status, 200, "{deleted:?}");
    // The rest of the call's stream: progress at most, never the answer.
    let mut rest = String::new();
    reader
        .read_to_string(&mut rest)
        .expect("the call's stream ends once the session is deleted");
    assert!(
        !rest.contains("\"result\""),
        "an answer after DELETE: {rest}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let events = std::fs::read_to_string(&log).unwrap_or_default();
        if events
            .lines()
            .any(|l| l.starts_with("cancelled ") && l.contains("\"inFlight\":true"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the fixture never saw the call cancelled: {events}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The port and the `Authorization` header line `serve --http` printed on
/// its first two lines.
fn http_endpoint(lines: &[String]) -> (u16, String) {
    let url = lines[0]
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in {lines:?}"));
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("a port");
    let token = lines[1].rsplit_once("Bearer ").expect("a token").1;
    (port, format!("Authorization: Bearer {token}"))
}

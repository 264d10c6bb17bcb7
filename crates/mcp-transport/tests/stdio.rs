//! The stdio transport against real processes: `tests/fixtures/stdio_server.py` in its many modes.
//!
//! The fixture needs `python3`; without it every test fails and says to
//! install it. Nothing here sleeps to synchronize: tests wait on inbound
//! messages, on `close` (which reaps the server), or, for processes that are
//! not our children, on a bounded poll of `kill(pid, 0)` (see [`wait_gone`]).

#![cfg(all(unix, feature = "stdio"))]

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_proto::codec::EncodeError;
use mcp_proto::{Frame, Message, RequestId};
use mcp_transport::{
    Inbound, ServerExited, StdioOptions, StdioTransport, Transport, TransportError,
};
use serde_json::{Value, json};
use tokio::time::{Instant, timeout};

/// How long any single wait in these tests may take before the test fails
/// (a stalled transport, a server that never answers).
const DEADLINE: Duration = Duration::from_secs(30);

/// The absolute path of the Python 3 interpreter (so that the child's
/// minimal environment does not matter for finding it).
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let output = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output();
        let path = match output {
            Ok(output) if output.status.success() => {
                String::from_utf8_lossy(&output.stdout).trim().to_owned()
            }
            _ => String::new(),
        };
        assert!(
            !path.is_empty(),
            "the stdio transport tests need `python3` on PATH: install Python 3 \
             (for example `apt-get install python3`)"
        );
        path
    })
}

/// Options running the fixture server in `mode` with extra arguments.
fn server(mode: &str, args: &[&str]) -> StdioOptions {
    let mut options = StdioOptions::new(python());
    options.args = [
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/stdio_server.py"
        ),
        mode,
    ]
    .iter()
    .chain(args)
    .map(|arg| (*arg).to_owned())
    .collect();
    options
}

fn spawn(options: StdioOptions) -> StdioTransport {
    match StdioTransport::spawn(options) {
        Ok(transport) => transport,
        Err(error) => panic!("spawn failed: {error}"),
    }
}

fn setup_error(options: StdioOptions) -> String {
    match StdioTransport::spawn(options) {
        Err(TransportError::Setup(message)) => message,
        Err(other) => panic!("expected a setup error, got {other:?}"),
        Ok(transport) => panic!("expected a setup error, got {transport:?}"),
    }
}

async fn next(transport: &StdioTransport) -> Inbound {
    match timeout(DEADLINE, transport.recv()).await {
        Ok(inbound) => inbound,
        Err(_) => panic!("nothing arrived within {DEADLINE:?}: the transport stalled"),
    }
}

async fn next_message(transport: &StdioTransport) -> Message {
    match next(transport).await {
        Inbound::Frame(Frame::Single(message)) => message,
        other => panic!("expected a message, got {other:?}"),
    }
}

fn request(id: i64, params: &Value) -> Message {
    Message::request(id, "echo", Some(params)).expect("a request encodes")
}

fn payload(raw: &mcp_proto::RawJson) -> Value {
    raw.decode().expect("the fixture sends JSON")
}

/// Sends request `id` and returns the result of the response to it.
async fn call(transport: &StdioTransport, id: i64, params: Value) -> Value {
    transport.send(request(id, &params)).await.expect("send");
    match next_message(transport).await {
        Message::Response(response) => {
            assert_eq!(response.id, RequestId::Number(id));
            payload(&response.result)
        }
        other => panic!("expected the response to {id}, got {other:?}"),
    }
}

/// Receives the notification `method` and returns its params.
async fn notification(transport: &StdioTransport, method: &str) -> Value {
    match next_message(transport).await {
        Message::Notification(n) if n.method == method => {
            n.params.as_ref().map(payload).unwrap_or(Value::Null)
        }
        other => panic!("expected notification {method}, got {other:?}"),
    }
}

/// The fixture in `mode` answers three requests with echoes, in order, and
/// ends cleanly at stdin EOF.
async fn check_echoes(mode: &str) {
    let transport = spawn(server(mode, &[]));
    for id in 1..=3 {
        let params = json!({"id": id, "text": "héllo\nwörld \u{2028}", "nested": [1, {"a": null}]});
        assert_eq!(
            call(&transport, id, params.clone()).await,
            json!({"echo": params})
        );
    }
    transport.close().await.expect("close");
    assert_eq!(transport.exit_status().and_then(|s| s.code()), Some(0));
}

fn exit_error(inbound: Inbound) -> ServerExited {
    match inbound {
        Inbound::Closed(Some(TransportError::Other(error))) => {
            assert!(
                !error.to_string().contains("secret"),
                "stderr leaked into the error: {error}"
            );
            match error.downcast_ref::<ServerExited>() {
                Some(exited) => *exited,
                None => panic!("expected ServerExited, got {error:?}"),
            }
        }
        other => panic!("expected Closed with the exit status, got {other:?}"),
    }
}

/// Whether process `pid` is gone: `kill(pid, 0)` fails with ESRCH, or it is
/// a zombie (dead; an orphan waits there until init reaps it).
fn gone(pid: u32) -> bool {
    let raw = i32::try_from(pid).expect("pids fit in i32");
    let pid_t = rustix::process::Pid::from_raw(raw).expect("nonzero pid");
    match rustix::process::test_kill_process(pid_t) {
        Err(rustix::io::Errno::SRCH) => true,
        Err(error) => panic!("kill({pid}, 0): {error}"),
        Ok(()) => std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(true),
    }
}

/// Waits until process `pid` is gone. Nothing notifies us when a process
/// that is not our child dies, and a signalled process dies asynchronously,
/// so this is a bounded poll of process state (every 10 ms, at most 10 s),
/// not a sleep standing in for an event.
async fn wait_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(pid) {
        assert!(Instant::now() < deadline, "process {pid} is still alive");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_request_round_trips_through_an_echo_server() {
    check_echoes("echo").await;
}

#[tokio::test]
async fn junk_stdout_lines_are_skipped_and_the_stream_goes_on() {
    check_echoes("junk").await;
}

#[tokio::test]
async fn crlf_line_endings_are_accepted() {
    check_echoes("crlf").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sends_never_interleave_lines() {
    // Messages larger than PIPE_BUF (4 KiB) from several tasks at once: any
    // interleaving would corrupt lines and lose responses.
    let transport = Arc::new(spawn(server("echo", &[])));
    let tasks = 8;
    let per_task = 40;
    let mut senders = Vec::new();
    for task in 0..tasks {
        let transport = Arc::clone(&transport);
        senders.push(tokio::spawn(async move {
            for i in 0..per_task {
                let id = task * per_task + i;
                let params = json!({"id": id, "fill": format!("{id:08}").repeat(1500)});
                transport.send(request(id, &params)).await.expect("send");
            }
        }));
    }
    let mut seen = BTreeMap::new();
    while seen.len() < usize::try_from(tasks * per_task).unwrap_or(usize::MAX) {
        match next_message(&transport).await {
            Message::Response(response) => {
                let RequestId::Number(id) = response.id else {
                    panic!("unexpected id {:?}", response.id)
                };
                let expected = json!({"echo": {"id": id, "fill": format!("{id:08}").repeat(1500)}});
                assert_eq!(payload(&response.result), expected);
                assert!(seen.insert(id, ()).is_none(), "response {id} arrived twice");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    for sender in senders {
        sender.await.expect("sender task");
    }
    transport.close().await.expect("close");
}

#[tokio::test]
async fn recv_is_cancel_safe() {
    let transport = spawn(server("echo", &[]));
    let count = 200;
    for id in 0..count {
        transport
            .send(request(id, &json!({"n": id})))
            .await
            .expect("send");
    }
    // Drop `recv` futures at arbitrary points: no response may be lost.
    let mut received = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    while received.len() < usize::try_from(count).unwrap_or(usize::MAX) {
        assert!(
            Instant::now() < deadline,
            "responses were lost: got {received:?}"
        );
        match timeout(Duration::from_micros(50), transport.recv()).await {
            Ok(Inbound::Frame(Frame::Single(Message::Response(response)))) => {
                received.push(response.id)
            }
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) => {}
        }
    }
    let expected: Vec<RequestId> = (0..count).map(RequestId::Number).collect();
    assert_eq!(received, expected);
    transport.close().await.expect("close");
}

#[tokio::test]
async fn a_message_over_the_limit_ends_the_connection_with_too_large() {
    let mut options = server("oversize", &["1000"]);
    options.max_message_size = 256;
    let transport = spawn(options);
    transport.send(request(1, &json!({}))).await.expect("send");
    for _ in 0..2 {
        match next(&transport).await {
            Inbound::Closed(Some(TransportError::TooLarge { limit: 256 })) => {}
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }
    transport.close().await.expect("close");
}

#[tokio::test]
async fn a_stderr_flood_does_not_stall_and_only_the_tail_is_kept() {
    let flood = 10 * 1024 * 1024;
    let mut options = server("stderr-flood", &[&flood.to_string()]);
    options.stderr_tail_bytes = 4096;
    let transport = spawn(options);
    assert_eq!(
        call(&transport, 1, json!({})).await,
        json!({"flooded": flood})
    );
    assert_eq!(
        call(&transport, 2, json!("after")).await,
        json!({"echo": "after"})
    );
    transport.close().await.expect("close");
    let tail = transport.stderr_tail();
    assert_eq!(tail.len(), 4096);
    assert!(
        tail.ends_with(&format!("{}\nTAIL-MARKER\n", "y".repeat(1023))),
        "{tail}"
    );
    assert!(!tail.contains("HEAD-MARKER"));
}

#[tokio::test]
async fn stdout_eof_after_a_clean_exit_gives_closed_none() {
    let transport = spawn(server("exit-after-first", &["0"]));
    assert_eq!(call(&transport, 1, json!("x")).await, json!({"echo": "x"}));
    for _ in 0..2 {
        assert!(matches!(next(&transport).await, Inbound::Closed(None)));
    }
    transport.close().await.expect("close");
    assert_eq!(transport.exit_status().and_then(|s| s.code()), Some(0));
    // stderr is for diagnostics, never for errors.
    assert!(transport.stderr_tail().contains("secret diagnostics"));
}

#[tokio::test]
async fn an_abnormal_exit_gives_closed_with_the_status_and_no_stderr() {
    let transport = spawn(server("exit-after-first", &["3"]));
    assert_eq!(call(&transport, 1, json!("x")).await, json!({"echo": "x"}));
    let exited = exit_error(next(&transport).await);
    assert_eq!(exited.status.code(), Some(3));
    // `Closed` stays `Closed`, with the same cause.
    assert_eq!(exit_error(next(&transport).await).status.code(), Some(3));
    assert_eq!(transport.pid(), None);
}

#[tokio::test]
async fn a_server_that_exits_mid_message_gives_closed_promptly() {
    let transport = spawn(server("exit-mid-line", &["5"]));
    assert_eq!(call(&transport, 1, json!("x")).await, json!({"echo": "x"}));
    let sent = Instant::now();
    transport.send(request(2, &json!("y"))).await.expect("send");
    let exited = exit_error(next(&transport).await);
    assert_eq!(exited.status.code(), Some(5));
    // The half-written line is dropped; the end is reported at once, not
    // after some timeout (generous bound for a loaded machine).
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "took {:?}",
        sent.elapsed()
    );
}

#[tokio::test]
async fn a_server_that_closes_stdout_and_keeps_running_gives_closed_none() {
    let mut options = server("close-stdout", &[]);
    options.close_stdin_wait = Duration::from_millis(100);
    let transport = spawn(options);
    assert_eq!(call(&transport, 1, json!("x")).await, json!({"echo": "x"}));
    assert!(matches!(next(&transport).await, Inbound::Closed(None)));
    assert!(transport.pid().is_some(), "the server still runs");
    transport.close().await.expect("close");
    assert_eq!(transport.exit_status().and_then(|s| s.signal()), Some(15));
}

#[tokio::test]
async fn a_server_that_exits_ends_the_connection_even_if_its_stdout_stays_open() {
    // A process outside the server's group (it started a new session) keeps
    // stdout open, so no EOF comes: the server's exit ends the connection.
    let transport = spawn(server("escape", &["4"]));
    let escaped = notification(&transport, "ready").await["escaped"]
        .as_u64()
        .and_then(|pid| u32::try_from(pid).ok())
        .expect("a pid");
    assert_eq!(call(&transport, 1, json!("x")).await, json!({"echo": "x"}));
    assert_eq!(exit_error(next(&transport).await).status.code(), Some(4));
    // `close` does not wait for the escaped process's stderr either.
    timeout(DEADLINE, transport.close())
        .await
        .expect("close returns")
        .expect("close");
    assert!(!gone(escaped), "the escaped process is not ours to kill");
    let pid = rustix::process::Pid::from_raw(i32::try_from(escaped).expect("pid")).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::KILL)
        .expect("kill the escaped process");
    wait_gone(escaped).await;
}

#[tokio::test]
async fn writing_to_a_closed_stdin_fails() {
    let transport = spawn(server("close-stdin", &[]));
    notification(&transport, "ready").await;
    // `send` queues for the writer task; the write fails in the background
    // and the sends after it report the broken pipe. The writer runs as
    // soon as this task yields, so a handful of attempts is plenty.
    let mut error = None;
    for _ in 0..100 {
        if let Err(e) = transport.send(request(1, &json!({}))).await {
            error = Some(e);
            break;
        }
        tokio::task::yield_now().await;
    }
    match error {
        Some(TransportError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe),
        other => panic!("expected a broken pipe, got {other:?}"),
    }
    assert!(transport.send(request(2, &json!({}))).await.is_err());
}

fn is_minimal(name: &str) -> bool {
    [
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TMPDIR", "TZ",
    ]
    .contains(&name)
        || name.starts_with("LC_")
        || mcp_transport::NETWORK_ENV.contains(&name)
}

#[tokio::test]
async fn the_child_gets_only_the_minimal_environment_passthrough_and_literals() {
    // Host variables outside the minimal set (cargo's CARGO_*, say): the
    // first is passed through, the others must not reach the child. Tests
    // cannot set variables (`set_var` is unsafe), so they use what is there.
    let mut others: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| !is_minimal(name))
        .collect();
    others.sort();
    assert!(
        others.len() >= 3,
        "the test needs a few environment variables besides the minimal set: run it through cargo"
    );
    let (passed, passed_value) = others[0].clone();
    let (overridden, _) = others[1].clone();
    let mut options = server("env", &[]);
    options.env_passthrough = vec![
        passed.clone(),
        overridden.clone(),
        "MCP_STDIO_TEST_SURELY_UNSET".to_owned(),
    ];
    options.env = vec![
        (overridden.clone(), "literal wins".to_owned()),
        ("HOME".to_owned(), "/literal/home".to_owned()),
        ("API_TOKEN".to_owned(), "s3cret".to_owned()),
    ];
    assert!(
        !format!("{options:?}").contains("s3cret"),
        "Debug shows a secret"
    );
    let transport = spawn(options);
    let result = call(&transport, 1, json!({})).await;

    let mut expected = BTreeMap::new();
    for (name, value) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if is_minimal(&name) {
            expected.insert(name, value.to_string_lossy().into_owned());
        }
    }
    expected.insert(passed, passed_value);
    expected.insert(overridden, "literal wins".to_owned());
    expected.insert("HOME".to_owned(), "/literal/home".to_owned());
    expected.insert("API_TOKEN".to_owned(), "s3cret".to_owned());
    let env: BTreeMap<String, String> =
        serde_json::from_value(result["env"].clone()).expect("env is an object of strings");
    assert_eq!(env, expected);
    transport.close().await.expect("close");
}

#[tokio::test]
async fn arguments_reach_the_server_verbatim_without_a_shell() {
    let args = ["$HOME", "a b", "*", "; echo hi", "'q'", "\"d\"", "", "`id`"];
    let transport = spawn(server("env", &args));
    let result = call(&transport, 1, json!({})).await;
    assert_eq!(result["argv"], json!(args));
    transport.close().await.expect("close");
}

#[tokio::test]
async fn an_absolute_cwd_is_used_and_an_empty_one_inherits() {
    let dir = std::env::temp_dir().canonicalize().expect("temp dir");
    for (cwd, expected) in [
        (Some(dir.clone()), dir),
        (Some(PathBuf::new()), std::env::current_dir().expect("cwd")),
        (None, std::env::current_dir().expect("cwd")),
    ] {
        let mut options = server("env", &[]);
        options.cwd = cwd;
        let transport = spawn(options);
        let result = call(&transport, 1, json!({})).await;
        assert_eq!(result["cwd"], json!(expected.to_string_lossy()));
        transport.close().await.expect("close");
    }
}

#[tokio::test]
async fn a_relative_or_missing_cwd_is_refused() {
    let mut options = server("env", &[]);
    options.cwd = Some(PathBuf::from("relative/dir"));
    let message = setup_error(options);
    assert!(
        message.contains("relative/dir") && message.contains("absolute"),
        "{message}"
    );

    let mut options = server("env", &[]);
    options.cwd = Some(PathBuf::from("/mcp-stdio-test/no/such/dir"));
    let message = setup_error(options);
    assert!(message.contains("/mcp-stdio-test/no/such/dir"), "{message}");
}

#[tokio::test]
async fn a_missing_command_is_a_setup_error_naming_it() {
    let message = setup_error(StdioOptions::new("mcp-stdio-test-no-such-command"));
    assert!(
        message.contains("`mcp-stdio-test-no-such-command`"),
        "{message}"
    );
    assert!(message.contains("PATH"), "{message}");

    let message = setup_error(StdioOptions::new("/mcp-stdio-test/no/such/server"));
    assert!(
        message.contains("`/mcp-stdio-test/no/such/server`"),
        "{message}"
    );

    let message = setup_error(StdioOptions::default());
    assert!(message.contains("no command"), "{message}");

    // A bare name is found through the child's PATH.
    let mut options = StdioOptions::new("python3");
    options.env = vec![("PATH".to_owned(), "/mcp-stdio-test/empty".to_owned())];
    let message = setup_error(options);
    assert!(
        message.contains("`python3`") && message.contains("PATH"),
        "{message}"
    );
}

#[test]
fn find_command_looks_as_the_start_does_and_starts_nothing() {
    // Outside a runtime: nothing is started, so none is needed.
    let missing = StdioOptions::new("mcp-stdio-test-no-such-command");
    match missing.find_command() {
        Err(TransportError::Setup(message)) => {
            assert!(
                message.contains("`mcp-stdio-test-no-such-command` was not found")
                    && message.contains("PATH"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(StdioOptions::new(python()).find_command().is_ok());
    // The child's PATH is the one searched, and the working directory
    // holds a relative path's command.
    let mut options = StdioOptions::new("python3");
    options.env = vec![("PATH".to_owned(), "/mcp-stdio-test/empty".to_owned())];
    assert!(matches!(
        options.find_command(),
        Err(TransportError::Setup(_))
    ));
    let mut options = StdioOptions::new("./sh");
    options.cwd = Some(PathBuf::from("/bin"));
    assert!(
        options.find_command().is_ok(),
        "{:?}",
        options.find_command()
    );
    assert!(matches!(
        StdioOptions::default().find_command(),
        Err(TransportError::Setup(message)) if message.contains("no command")
    ));
}

#[test]
fn spawning_outside_a_tokio_runtime_is_a_setup_error() {
    let message = setup_error(server("echo", &[]));
    assert!(message.contains("tokio runtime"), "{message}");
}

#[tokio::test]
async fn close_is_polite_when_the_server_exits_on_stdin_eof() {
    let transport = spawn(server("exit-on-eof", &[]));
    notification(&transport, "ready").await;
    transport.close().await.expect("close");
    assert_eq!(transport.exit_status().and_then(|s| s.code()), Some(0));
    assert!(transport.stderr_tail().ends_with("got stdin EOF\n"));
    assert_eq!(transport.pid(), None);
    // Idempotent; the transport stays closed.
    transport.close().await.expect("second close");
    assert!(matches!(transport.recv().await, Inbound::Closed(None)));
    assert!(matches!(
        transport.send(request(1, &json!({}))).await,
        Err(TransportError::Closed)
    ));
}

#[tokio::test]
async fn close_sends_sigterm_when_stdin_eof_is_ignored() {
    let mut options = server("term-only", &[]);
    options.close_stdin_wait = Duration::from_millis(200);
    let transport = spawn(options);
    notification(&transport, "ready").await;
    transport.close().await.expect("close");
    assert_eq!(transport.exit_status().and_then(|s| s.signal()), Some(15));
    assert_eq!(transport.stderr_tail(), "got stdin EOF\n");
}

#[tokio::test]
async fn close_escalates_to_sigkill_when_sigterm_is_ignored() {
    let mut options = server("stubborn", &[]);
    options.close_stdin_wait = Duration::from_millis(200);
    options.sigterm_wait = Duration::from_millis(200);
    let transport = spawn(options);
    notification(&transport, "ready").await;
    let started = Instant::now();
    // Concurrent closes share one shutdown.
    let (a, b) = tokio::join!(transport.close(), transport.close());
    a.expect("close");
    b.expect("close");
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(transport.exit_status().and_then(|s| s.signal()), Some(9));
    // The sequence, as the server saw it.
    assert_eq!(transport.stderr_tail(), "got stdin EOF\ngot SIGTERM\n");
}

/// Starts the `launcher` fixture and returns the pids of the launcher and
/// of its grandchild, once the grandchild runs.
async fn launcher() -> (StdioTransport, u32, u32) {
    let transport = spawn(server("launcher", &[]));
    let mut from_launcher = None;
    let mut from_grandchild = None;
    while from_launcher.is_none() || from_grandchild.is_none() {
        match next_message(&transport).await {
            Message::Notification(n) => {
                let params = n.params.as_ref().map(payload).unwrap_or(Value::Null);
                match n.method.as_str() {
                    "ready" => from_launcher = params["grandchild"].as_u64(),
                    "grandchild-ready" => from_grandchild = params["pid"].as_u64(),
                    other => panic!("unexpected notification {other}"),
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(from_launcher, from_grandchild);
    let grandchild = from_grandchild
        .and_then(|pid| u32::try_from(pid).ok())
        .expect("a pid");
    let leader = transport.pid().expect("the launcher runs");
    assert!(!gone(grandchild) && !gone(leader));
    (transport, leader, grandchild)
}

#[tokio::test]
async fn a_launchers_grandchild_is_gone_after_close() {
    let (transport, leader, grandchild) = launcher().await;
    transport.close().await.expect("close");
    // The launcher exited on stdin EOF; its grandchild ignored both that
    // and SIGTERM, and shares stdout, yet the connection ended cleanly.
    assert_eq!(transport.exit_status().and_then(|s| s.code()), Some(0));
    wait_gone(leader).await;
    wait_gone(grandchild).await;
}

#[tokio::test]
async fn dropping_the_transport_kills_the_server_and_its_group() {
    let (transport, leader, grandchild) = launcher().await;
    drop(transport);
    wait_gone(leader).await;
    wait_gone(grandchild).await;
}

/// The server's stdout is a 1 MiB pipe (Linux `F_SETPIPE_SZ`), so that a
/// large result crosses in a few writes: the child reads the capacity of
/// its own stdout (`F_GETPIPE_SZ`, 1032) and reports it.
#[tokio::test]
async fn the_servers_stdout_pipe_holds_a_mebibyte() {
    let mut options = StdioOptions::new(python());
    options.args = vec![
        "-c".to_owned(),
        "import fcntl, json, sys\n\
         size = fcntl.fcntl(1, 1032)\n\
         print(json.dumps({'jsonrpc': '2.0', 'method': 'pipe', 'params': {'size': size}}), flush=True)\n\
         sys.stdin.read()"
            .to_owned(),
    ];
    let transport = spawn(options);
    let params = notification(&transport, "pipe").await;
    assert_eq!(params["size"], json!(1024 * 1024), "{params}");
    transport.close().await.expect("close");
}

/// A request whose params were kept raw from a peer and hold a raw line
/// break inside a string: invalid JSON with no one-line form.
fn unencodable_request(id: i64) -> Message {
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"echo\",\"params\":{{\"text\":\"a\nb\"}}}}"
    );
    match Frame::from_slice(line.as_bytes()) {
        Ok(Frame::Single(message)) => message,
        other => panic!("the envelope is read and the params stay raw: {other:?}"),
    }
}

#[tokio::test]
async fn a_message_that_cannot_be_encoded_fails_at_send_and_the_stream_goes_on() {
    let transport = spawn(server("echo", &[]));
    // Both ways in: through the non-waiting path (which leaves it to
    // `send`) and through `send`, which reports it without writing a byte.
    let refused = transport
        .try_send(unencodable_request(1))
        .expect_err("try_send leaves an unencodable message to send");
    assert_eq!(refused, unencodable_request(1));
    match transport.send(unencodable_request(1)).await {
        Err(TransportError::Encode(EncodeError::LineBreakInString)) => {}
        other => panic!("expected an encode error, got {other:?}"),
    }
    // Nothing half-written reached the server: the next request's echo
    // is the next line it answers.
    assert_eq!(
        call(&transport, 2, json!({"text": "ok"})).await,
        json!({"echo": {"text": "ok"}})
    );
    transport.close().await.expect("close");
}

#[test]
fn debug_counts_the_arguments_and_never_shows_them() {
    let mut options = StdioOptions::new("my-server");
    options.args = vec!["--api-key".to_owned(), "sk-live-4242".to_owned()];
    let shown = format!("{options:?}");
    assert!(
        !shown.contains("sk-live-4242"),
        "Debug shows an argument: {shown}"
    );
    assert!(
        !shown.contains("--api-key"),
        "Debug shows an argument: {shown}"
    );
    assert!(shown.contains("<2 arguments, redacted>"), "{shown}");
    assert!(shown.contains("my-server"), "the command is shown: {shown}");
    options.args.truncate(1);
    assert!(format!("{options:?}").contains("<1 argument, redacted>"));
}

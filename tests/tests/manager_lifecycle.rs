//! `mcp-manager` keeping real fixture servers honest: a `list_changed` storm, a failed refresh, a killed server, reconnect on and off, the log level and subscriptions asked again of a new process, disable during connect, an expired HTTP session, and pagination.
//!
//! Every wait is on a real event (a status, a catalog swap, a process
//! exit), bounded by [`DEADLINE`], which only a failure reaches.

use std::path::Path;
use std::time::Duration;

use mcp_config::{HttpConfig, ServerConfig, StdioConfig, Store, TransportConfig};
use mcp_manager::{
    ErrorCode, ManagerEvent, ManagerOptions, McpManager, ReconnectPolicy, ServerStatus, StartupMode,
};
use mcp_proto::types::{JsonObject, LoggingLevel};
use serde_json::json;
use tokio::sync::broadcast;
use tokio::time::Instant;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// How long any single step may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// A fixture server run over stdio with `args`.
fn fixture(id: &str, args: &[&str]) -> ServerConfig {
    let mut stdio = StdioConfig::new(FIXTURE);
    // These tests exercise the handshake era: the fixture serves only it
    // (the client still probes for the stateless era first, and falls back).
    stdio.args = ["--era", "legacy"]
        .iter()
        .chain(args)
        .map(|arg| (*arg).to_owned())
        .collect();
    ServerConfig::new(id, TransportConfig::Stdio(stdio))
}

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

/// Waits until `id`'s status matches, on the manager's events.
async fn until(manager: &McpManager, id: &str, f: impl Fn(&ServerStatus) -> bool) {
    let mut events = manager.events();
    let deadline = Instant::now() + DEADLINE;
    loop {
        if manager.status(id).as_ref().is_some_and(&f) {
            return;
        }
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
            _ => panic!("{id}: status never matched; it is {:?}", manager.status(id)),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_100_list_changed_within_1_s_ends_in_one_or_two_refreshes() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let log = dir.path().join("events.log");
    let manager = McpManager::new(ManagerOptions::default());
    let report = manager
        .connect_servers([fixture(
            "stormy",
            &["--storm-tool", "--event-log", &log.display().to_string()],
        )])
        .await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    let before = manager.catalog("stormy").unwrap();
    assert_eq!(before.tools().len(), 13);
    let mut events = manager.events();

    let client = manager.server("stormy").unwrap();
    client
        .call_tool("list_changed_storm", args(json!({"count": 100, "ms": 5})))
        .await
        .expect("the storm starts");
    // The final catalog: 13 tools and the 100 the storm added.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let done = manager.status("stormy") == Some(ServerStatus::Ready)
            && manager
                .catalog("stormy")
                .is_some_and(|c| c.tool("storm_0100").is_some());
        if done {
            break;
        }
        tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("the storm settles")
            .expect("events");
    }
    let catalog = manager.catalog("stormy").unwrap();
    assert_eq!(catalog.tools().len(), 113);
    let refreshes = tests::tools_list_calls(&log) - 1;
    assert!(
        (1..=2).contains(&refreshes),
        "{refreshes} refreshes, by the server's log"
    );
    assert_ne!(catalog.lifetime(), before.lifetime());
    println!("a storm of 100 list_changed in 0.5 s: {refreshes} refresh passes");
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_refresh_closes_the_connection_and_leaves_the_others() {
    let manager = McpManager::new(ManagerOptions::default());
    let report = manager
        .connect_servers([
            fixture("flaky", &["--fail-tools-list-after", "1"]),
            fixture("steady", &[]),
        ])
        .await;
    assert_eq!(report.ready.len(), 2, "{:?}", report.errors);
    let steady = manager.catalog("steady").unwrap().lifetime();
    let client = manager.server("flaky").unwrap();
    client
        .call_tool("add_tool", args(json!({"name": "extra"})))
        .await
        .expect("add_tool");
    until(&manager, "flaky", |s| s.error().is_some()).await;
    let error = manager.status("flaky").unwrap().error().unwrap().clone();
    assert_eq!(error.code, ErrorCode::RefreshFailed);
    // The server's answer failed, not a setting: no key to point at.
    assert_eq!(error.config_key, "");
    assert!(
        !error.message.contains("-32603"),
        "raw errors stay out: {error}"
    );
    assert!(manager.catalog("flaky").is_none());
    tokio::time::timeout(DEADLINE, client.wait_closed())
        .await
        .expect("the connection closes");
    assert_eq!(manager.catalog("steady").unwrap().lifetime(), steady);
    // The configuration is intact: Retry brings it back (its first list works).
    manager.retry("flaky").unwrap();
    until(&manager, "flaky", |s| *s == ServerStatus::Ready).await;
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_closed_without_reconnect_by_default() {
    let manager = McpManager::new(ManagerOptions::default());
    manager
        .connect_servers([fixture("victim", &[]), fixture("bystander", &[])])
        .await;
    let bystander = manager.catalog("bystander").unwrap().lifetime();
    let client = manager.server("victim").unwrap();
    let crashed = client.call_tool("crash", None).await;
    assert!(crashed.is_err(), "{crashed:?}");
    until(&manager, "victim", |s| s.error().is_some()).await;
    let status = manager.status("victim").unwrap();
    let ServerStatus::Error { error, retry } = status else {
        unreachable!()
    };
    assert_eq!(error.code, ErrorCode::Closed);
    assert_eq!(retry, None, "reconnect is off by default");
    assert!(manager.catalog("victim").is_none());
    let snapshot = manager.snapshot(None);
    let ids: Vec<&str> = snapshot.servers().iter().map(|s| s.id()).collect();
    assert_eq!(ids, ["bystander"]);
    assert_eq!(manager.catalog("bystander").unwrap().lifetime(), bystander);
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_comes_back_when_reconnect_is_on() {
    let options = {
        let mut options = ManagerOptions::default();
        options.reconnect = ReconnectPolicy::on();
        options
    };
    let manager = McpManager::new(options);
    manager.connect_servers([fixture("phoenix", &[])]).await;
    let lifetime = manager.catalog("phoenix").unwrap().lifetime();
    let mut events = manager.events();
    let crashed = manager
        .server("phoenix")
        .unwrap()
        .call_tool("crash", None)
        .await;
    assert!(crashed.is_err());
    until(&manager, "phoenix", |s| s.error().is_some()).await;
    let connected = manager
        .wait_ready("phoenix", Instant::now() + DEADLINE)
        .await
        .expect("reconnected");
    assert_ne!(connected.catalog.lifetime(), lifetime);
    let mut saw_retry = None;
    while let Ok(event) = events.try_recv() {
        if let ManagerEvent::StatusChanged {
            status: ServerStatus::Error { retry, .. },
            ..
        } = event
        {
            saw_retry = retry;
        }
    }
    let retry = saw_retry.expect("a retry was scheduled");
    assert_eq!((retry.attempt, retry.delay), (1, Duration::from_secs(1)));
    // The new connection works.
    let echo = connected
        .server
        .call_tool("echo", args(json!({"text": "back"})))
        .await
        .expect("echo");
    assert_eq!(echo.is_error, None);
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_during_connect_drops_the_late_result() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let store = Store::open(dir.path().join("mcp.json"));
    let options = {
        let mut options = ManagerOptions::default();
        options.startup = StartupMode::Background;
        options
    };
    let manager = McpManager::builder().options(options).store(store).build();
    let mut events = manager.events();
    let slow = ["--delay-initialize-ms", "1500"];
    manager.save(fixture("late", &slow)).await.unwrap();
    // A witness with the same delay, started right after: once it is
    // ready, the late server's answer would have arrived too.
    manager.save(fixture("witness", &slow)).await.unwrap();
    until(&manager, "late", |s| *s == ServerStatus::Connecting).await;
    manager.set_enabled("late", false).await.unwrap();
    assert_eq!(manager.status("late"), Some(ServerStatus::Disabled));

    manager
        .wait_ready("witness", Instant::now() + DEADLINE)
        .await
        .expect("the witness connects");
    assert_eq!(manager.status("late"), Some(ServerStatus::Disabled));
    assert!(manager.catalog("late").is_none());
    let listed = manager.list().await.unwrap();
    assert!(
        !listed
            .iter()
            .find(|l| l.config.id == "late")
            .unwrap()
            .config
            .enabled
    );
    while let Ok(event) = events.try_recv() {
        assert!(
            !matches!(&event, ManagerEvent::CatalogSwapped { id, .. } if id == "late"),
            "a late result was applied: {event:?}"
        );
    }
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_http_session_is_initialized_again() {
    let port = tests::servers::free_port();
    let mut command = tokio::process::Command::new(FIXTURE);
    command.args(["--era", "legacy"]);
    command.args([
        "--transport",
        "http",
        "--port",
        &port.to_string(),
        "--expire-session-after",
        "6",
    ]);
    let _server = tests::servers::start_http_server(command, port).await;
    let config = ServerConfig::new(
        "web",
        TransportConfig::Http(HttpConfig::new(format!("http://127.0.0.1:{port}/mcp"))),
    );
    // Reconnect stays off: the session is renewed regardless.
    let manager = McpManager::new(ManagerOptions::default());
    let report = manager.connect_servers([config]).await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    let lifetime = manager.catalog("web").unwrap().lifetime();
    let mut events = manager.events();
    let client = manager.server("web").unwrap();
    // initialize, tools/list, resources/list and prompts/list were 1-4.
    client.ping().await.expect("the 5th request");
    client
        .ping()
        .await
        .expect("the 6th request ends the session");
    let expired = client.ping().await.expect_err("the session is gone");
    // Either the request met the closed session, or the manager had
    // already replaced the connection and refused it unsent.
    assert!(
        expired.is_stale() || expired.request_error().is_some_and(|e| e.is_closed()),
        "{expired:?}"
    );
    let deadline = Instant::now() + DEADLINE;
    loop {
        let renewed = manager
            .catalog("web")
            .is_some_and(|c| c.lifetime() != lifetime);
        if renewed && manager.status("web") == Some(ServerStatus::Ready) {
            break;
        }
        tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("the session is renewed")
            .expect("events");
    }
    assert!(
        manager.status("web").is_some_and(|s| s.error().is_none()),
        "no error status on the way"
    );
    let pong = manager.server("web").unwrap().ping().await;
    assert!(pong.is_ok(), "{pong:?}");
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pagination_three_pages_600_tools_and_a_repeated_cursor() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let three = dir.path().join("three.log");
    let big = dir.path().join("big.log");
    let manager = McpManager::new(ManagerOptions::default());
    let report = manager
        .connect_servers([
            fixture(
                "three",
                &[
                    "--page-size",
                    "5",
                    "--event-log",
                    &three.display().to_string(),
                ],
            ),
            fixture(
                "big",
                &[
                    "--tools",
                    "588",
                    "--page-size",
                    "100",
                    "--event-log",
                    &big.display().to_string(),
                ],
            ),
            fixture("looping", &["--page-size", "5", "--repeat-cursor"]),
        ])
        .await;

    let three_catalog = manager.catalog("three").unwrap();
    assert_eq!(three_catalog.tools().len(), 12);
    assert!(!three_catalog.is_truncated());
    assert_eq!(tests::tools_list_calls(&three), 3);

    let big_catalog = manager.catalog("big").unwrap();
    assert_eq!(big_catalog.tools().len(), 500);
    assert!(big_catalog.is_truncated());
    assert_eq!(big_catalog.tool_names().last(), Some("tool_0488"));
    assert_eq!(
        tests::tools_list_calls(&big),
        5,
        "the sixth page is never asked for"
    );

    let error = report.error("looping").expect("the looping server fails");
    assert_eq!(error.code, ErrorCode::InvalidCatalog);
    assert!(manager.catalog("looping").is_none());
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_and_startup_errors_of_real_processes() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let mut missing_dir = StdioConfig::new(FIXTURE);
    missing_dir.cwd = Some(dir.path().join("nope").display().to_string());
    let mut no_env = StdioConfig::new(FIXTURE);
    no_env.args = vec![
        "--instructions".into(),
        "${MANAGER_TEST_UNSET_VARIABLE}".into(),
    ];
    let configs = vec![
        ServerConfig::new(
            "nocommand",
            TransportConfig::Stdio(StdioConfig::new("/nonexistent/mcp-server")),
        ),
        ServerConfig::new("nodir", TransportConfig::Stdio(missing_dir)),
        ServerConfig::new("noenv", TransportConfig::Stdio(no_env)),
        fixture("notools", &["--no-tools-capability"]),
        fixture("exits", &["--exit-after", "1"]),
    ];
    let manager = McpManager::new(ManagerOptions::default());
    let report = manager.connect_servers(configs).await;
    let code = |id: &str| report.error(id).map(|e| (e.code, e.config_key.as_str()));
    assert_eq!(
        code("nocommand"),
        Some((ErrorCode::MissingCommand, "transport.command"))
    );
    assert_eq!(
        code("nodir"),
        Some((ErrorCode::MissingDirectory, "transport.cwd"))
    );
    assert_eq!(
        code("noenv"),
        Some((ErrorCode::MissingEnv, "transport.args[1]"))
    );
    assert_eq!(code("exits").map(|c| c.0), Some(ErrorCode::Closed));
    assert_eq!(manager.status("notools"), Some(ServerStatus::Ready));
    assert!(manager.catalog("notools").unwrap().tools().is_empty());
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_and_legacy_sse_fixtures_connect_through_the_default_factory() {
    let mut servers = Vec::new();
    let mut configs = Vec::new();
    for (id, mode, path) in [("http", "http", "/mcp"), ("sse", "sse", "/sse")] {
        let port = tests::servers::free_port();
        let mut command = tokio::process::Command::new(FIXTURE);
        command.args(["--era", "legacy"]);
        command.args(["--transport", mode, "--port", &port.to_string()]);
        servers.push(tests::servers::start_http_server(command, port).await);
        let http = HttpConfig::new(format!("http://127.0.0.1:{port}{path}"));
        configs.push(ServerConfig::new(
            id,
            if mode == "sse" {
                TransportConfig::Sse(http)
            } else {
                TransportConfig::Http(http)
            },
        ));
    }
    let manager = McpManager::new(ManagerOptions::default());
    let report = manager.connect_servers(configs).await;
    assert_eq!(report.ready.len(), 2, "{:?}", report.errors);
    for id in ["http", "sse"] {
        let catalog = manager.catalog(id).unwrap();
        assert_eq!(catalog.tools().len(), 12, "{id}");
        assert!(catalog.resources().is_some_and(|r| r.len() == 1), "{id}");
        let echo = manager
            .server(id)
            .unwrap()
            .call_tool("echo", args(json!({"text": id})))
            .await
            .expect("echo");
        assert_ne!(echo.is_error, Some(true), "{id}: {echo:?}");
    }
    manager.close().await;
    assert_eq!(manager.status("sse"), Some(ServerStatus::Disconnected));
}

/// The pids a fixture started with `--pid-file` wrote.
fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|line| line.parse().expect("a pid line"))
        .collect()
}

/// Whether process `pid` exists (a zombie counts: nobody reaped it).
fn exists(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_and_close_wait_for_a_connection_that_is_still_closing() {
    // The server closes stdout after prompts/list (the fifth request) and
    // stays up, ignoring stdin EOF and SIGTERM: its connection ends while
    // served, and the process must be killed. `disconnect` and `close`
    // each find that old connection still closing, and must not return
    // before its process is gone.
    for step in ["disconnect", "close"] {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        let pid_arg = pid_file.display().to_string();
        let config = fixture(
            "stays",
            &[
                "--close-stdout-after",
                "5",
                "--ignore-sigterm",
                "--pid-file",
                &pid_arg,
            ],
        );
        let manager = McpManager::new(ManagerOptions::default());
        manager.connect_servers([config]).await;
        // The catalog is listed, then the connection ends: `error`, with the process alive.
        until(&manager, "stays", |s| s.error().is_some()).await;
        let error = manager.status("stays").and_then(|s| s.error().cloned());
        assert_eq!(error.map(|e| e.code), Some(ErrorCode::Closed), "{step}");
        let started = pids(&pid_file);
        assert_eq!(started.len(), 1, "{step}: {started:?}");
        let began = Instant::now();
        match step {
            "disconnect" => manager.disconnect("stays").await.unwrap(),
            _ => manager.close().await,
        }
        let took = began.elapsed();
        let alive: Vec<i32> = started.iter().copied().filter(|&pid| exists(pid)).collect();
        for &pid in &alive {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        assert!(
            alive.is_empty(),
            "{step} returned with the server process {alive:?} still running"
        );
        assert!(
            took < Duration::from_secs(3),
            "{step} took {took:?}: the dead connection got the whole polite grace"
        );
        manager.close().await;
    }
}

/// The `(pid, detail)` of every `event` line in a fixture's event log.
fn logged(file: &Path, event: &str) -> Vec<(i32, serde_json::Value)> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(4, ' ');
            (fields.next() == Some(event)).then(|| {
                let _nanos = fields.next();
                let pid = fields.next().and_then(|p| p.parse().ok()).expect("a pid");
                let detail = fields.next().map_or(serde_json::Value::Null, |d| {
                    serde_json::from_str(d).expect("JSON")
                });
                (pid, detail)
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_server_process_is_asked_again_for_the_log_level_and_subscriptions() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let (log, pid_file) = (dir.path().join("events.log"), dir.path().join("pids"));
    let (log_arg, pid_arg) = (log.display().to_string(), pid_file.display().to_string());
    let config = fixture(
        "keeps",
        &[
            "--reference-catalog",
            "--event-log",
            &log_arg,
            "--pid-file",
            &pid_arg,
        ],
    );
    let options = ManagerOptions::default()
        .reconnect(ReconnectPolicy::on().initial_delay(Duration::from_millis(50)))
        .max_subscriptions(2);
    let manager = McpManager::new(options);
    manager.connect_servers([config]).await;
    let handle = manager
        .wait_ready("keeps", Instant::now() + DEADLINE)
        .await
        .expect("ready")
        .server;
    handle
        .set_logging_level(LoggingLevel::Debug)
        .await
        .expect("setLevel");
    for uri in ["test://a", "test://b"] {
        handle.subscribe_resource(uri).await.expect("subscribe");
    }
    // The third is past the bound: refused before it is sent.
    let refused = handle.subscribe_resource("test://c").await.unwrap_err();
    assert_eq!(refused.code(), "too_many_subscriptions", "{refused}");
    handle
        .unsubscribe_resource("test://b")
        .await
        .expect("unsubscribe");
    assert_eq!(manager.logging_level("keeps"), Some(LoggingLevel::Debug));
    assert_eq!(manager.subscribed_resources("keeps"), ["test://a"]);
    let first = pids(&pid_file);
    assert_eq!(first.len(), 1, "{first:?}");
    let subscribed = |pid: i32| -> Vec<serde_json::Value> {
        logged(&log, "subscribe")
            .into_iter()
            .filter(|(p, _)| *p == pid)
            .map(|(_, detail)| detail["uri"].clone())
            .collect()
    };
    let levels = |pid: i32| -> Vec<serde_json::Value> {
        logged(&log, "set-level")
            .into_iter()
            .filter(|(p, _)| *p == pid)
            .map(|(_, detail)| detail["level"].clone())
            .collect()
    };
    assert_eq!(subscribed(first[0]), [json!("test://a"), json!("test://b")]);

    // Killed: the manager reconnects, and the new process is asked for
    // both before the server is reported ready.
    let pid = rustix::process::Pid::from_raw(first[0]).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("kill the server");
    until(&manager, "keeps", |s| s.error().is_some()).await;
    manager
        .wait_ready("keeps", Instant::now() + DEADLINE)
        .await
        .expect("reconnected");
    let second = pids(&pid_file);
    assert_eq!(second.len(), 2, "{second:?}");
    assert_eq!(levels(second[1]), [json!("debug")]);
    assert_eq!(subscribed(second[1]), [json!("test://a")]);

    // A restart (Retry) is a new process too.
    manager.retry("keeps").expect("retry");
    let connected = manager
        .wait_ready("keeps", Instant::now() + DEADLINE)
        .await
        .expect("restarted");
    let third = pids(&pid_file);
    assert_eq!(third.len(), 3, "{third:?}");
    assert_eq!(levels(third[2]), [json!("debug")]);
    assert_eq!(subscribed(third[2]), [json!("test://a")]);
    // The remembered state is the host's to change on the new connection.
    connected
        .server
        .unsubscribe_resource("test://a")
        .await
        .expect("unsubscribe");
    assert!(manager.subscribed_resources("keeps").is_empty());
    manager.close().await;
}

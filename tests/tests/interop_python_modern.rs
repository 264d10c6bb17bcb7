//! Era detection against servers we did not write: the Python `mcp` 2.3.0 `MCPServer` (tests/interop/modern_server.py, dual-era and `--modern-only`) lands on 2026-07-28, FastMCP 1.x and server-everything stay in the handshake era, and the manager's tool cache persists the era so a second start skips the probe.
//!
//! Prerequisites (`bash .ci/run` installs them): `.venv-modern` with `mcp`
//! 2.3.0, `.venv` with FastMCP, Node.js with `tests/interop/node_modules`.
//! A missing one fails the test with the command to run.
//!
//! Every wait is on a real event (a notification, a port accepting, a
//! startup report), bounded by a deadline only a failure reaches. The
//! measured connect times are printed (`cargo test -- --nocapture`).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{JsonFileToolCache, ManagerOptions, McpManager, StartupMode, ToolCache};
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::types::{
    ContentBlock, ElicitAction, ElicitRequestParams, ElicitResult, ElicitationCapability,
    JsonObject,
};
use mcp_proto::{Era, ProtocolVersion};
use mcp_transport::{
    Client, ClientHandler, ClientOptions, HttpOptions, HttpProtocol, HttpTransport,
    ServerNotification, StdioOptions, StdioTransport,
};
use serde_json::{Value, json};
use tests::servers::{free_port, start_http_server};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How long any single step may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(30);

/// The bound on waiting for `notifications/tools/list_changed`.
const NOTIFICATION_DEADLINE: Duration = Duration::from_secs(20);

/// The name the host's user types into `ask_name`'s form.
const USER_NAME: &str = "Grace Hopper";

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// The host side of the server's requests: a user who accepts the form
/// after typing [`USER_NAME`].
struct Host;

#[async_trait]
impl ClientHandler for Host {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let ElicitRequestParams::Form(_) = params else {
            return Err(ErrorObject::invalid_params("only form mode"));
        };
        let mut result = ElicitResult::new(ElicitAction::Accept);
        let mut content = JsonObject::new();
        content.insert("name".into(), json!(USER_NAME));
        result.content = Some(content);
        Ok(result)
    }
}

/// Client options on the default era policy (Auto), with a host that
/// answers form elicitations.
fn options() -> ClientOptions {
    let mut options = ClientOptions::default().handler(Some(Arc::new(Host)));
    options.session.client_info.name = "interop-python-modern".to_owned();
    options.session.client_info.version = "1.0.0".to_owned();
    options.session.capabilities.elicitation = Some(ElicitationCapability {
        form: Some(JsonObject::new()),
        ..Default::default()
    });
    options
}

fn args(value: Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

fn text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The arguments that run modern_server.py with `extra`.
fn modern_args(extra: &[&str]) -> Vec<String> {
    std::iter::once(tests::modern_script().display().to_string())
        .chain(extra.iter().map(|a| (*a).to_owned()))
        .collect()
}

/// A client connected over stdio to modern_server.py run with `extra`.
async fn modern_stdio(extra: &[&str]) -> Client {
    let mut stdio = StdioOptions::new(tests::modern_venv_python().display().to_string());
    stdio.args = modern_args(&["stdio"].iter().chain(extra).copied().collect::<Vec<_>>());
    let transport = StdioTransport::spawn(stdio).expect("modern_server.py starts");
    Client::connect(transport, options())
        .await
        .expect("connects to modern_server.py over stdio")
}

/// modern_server.py over Streamable HTTP; the process ends with the test.
struct ModernHttp {
    _child: Child,
    port: u16,
    /// Where the server's stderr (uvicorn's log) goes, for failure messages.
    _dir: tempfile::TempDir,
}

impl ModernHttp {
    /// Starts it with `extra` and waits until its port accepts a
    /// connection: the readiness signal the script guarantees.
    async fn start(extra: &[&str]) -> ModernHttp {
        let port = free_port();
        let dir = tempfile::tempdir().expect("a scratch dir");
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).expect("the server log");
        let mut command = Command::new(tests::modern_venv_python());
        let port_arg = port.to_string();
        command
            .args(modern_args(
                &["http", "--port", port_arg.as_str()]
                    .iter()
                    .chain(extra)
                    .copied()
                    .collect::<Vec<_>>(),
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        let mut child = command.spawn().expect("modern_server.py starts");
        let deadline = Instant::now() + DEADLINE;
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "modern_server.py exited ({status}) before listening on {port}: {}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "modern_server.py did not listen on {port} within {DEADLINE:?}: {}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
            // The poll interval of a bounded readiness poll (the script's
            // own signal is the port accepting), not a synchronization sleep.
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        ModernHttp {
            _child: child,
            port,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// A client connected over Streamable HTTP to `url`; also how long the
/// connect (era detection included) took.
async fn http_client(url: String) -> (Client, Duration) {
    let mut http = HttpOptions::new(url);
    http.protocol = HttpProtocol::Streamable;
    let transport = HttpTransport::connect(http).await.expect("transport");
    let started = Instant::now();
    let client = Client::connect(transport, options())
        .await
        .expect("connects over Streamable HTTP");
    (client, started.elapsed())
}

fn assert_modern(client: &Client) {
    let negotiated = client.negotiated().expect("negotiated");
    assert_eq!(negotiated.version, ProtocolVersion::V2026_07_28);
    assert_eq!(negotiated.era(), Era::Modern);
    assert_eq!(negotiated.server_info().name, "interop-modern");
}

fn assert_legacy(client: &Client) {
    let negotiated = client.negotiated().expect("negotiated");
    assert_eq!(negotiated.era(), Era::Legacy, "{:?}", negotiated.version);
    assert!(
        negotiated.version.as_str().starts_with("2025-"),
        "a handshake-era version: {:?}",
        negotiated.version
    );
}

/// Waits (bounded) for `notifications/tools/list_changed` on `rx`.
async fn tools_list_changed(rx: &mut tokio::sync::mpsc::Receiver<ServerNotification>) {
    let arrived = tokio::time::timeout(NOTIFICATION_DEADLINE, async {
        loop {
            match rx.recv().await {
                Some(ServerNotification::ToolsListChanged) => return true,
                Some(_) => continue,
                None => return false,
            }
        }
    })
    .await;
    assert_eq!(
        arrived,
        Ok(true),
        "tools/list_changed arrives within {NOTIFICATION_DEADLINE:?}"
    );
}

/// The 2026-07-28 checks: the era, the tools, MRTR elicitation, and a
/// runtime tool announced through `subscriptions/listen`.
async fn exercise_modern(client: &Client) {
    assert_modern(client);
    let mut notifications = client.take_notifications().expect("notifications");

    let tools = client.list_tools(None).await.expect("tools/list");
    let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
    for tool in ["echo", "add", "ask_name", "add_tool"] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
    assert!(!names.contains(&"late_tool"), "{names:?}");

    let echo = client
        .call_tool("echo", args(json!({"text": "interop at 2026-07-28"})))
        .await
        .expect("echo");
    assert_ne!(echo.is_error, Some(true), "{echo:?}");
    assert_eq!(text(&echo.content), "interop at 2026-07-28");

    let sum = client
        .call_tool("add", args(json!({"a": 20, "b": 22})))
        .await
        .expect("add");
    assert_ne!(sum.is_error, Some(true), "{sum:?}");
    assert_eq!(text(&sum.content), "42");

    let greeted = client
        .call_tool("ask_name", None)
        .await
        .expect("ask_name completes through MRTR");
    assert_ne!(greeted.is_error, Some(true), "{greeted:?}");
    assert!(
        text(&greeted.content).contains(USER_NAME),
        "the elicited name is in the result: {greeted:?}"
    );

    let registered = client.call_tool("add_tool", None).await.expect("add_tool");
    assert_ne!(registered.is_error, Some(true), "{registered:?}");
    assert_eq!(text(&registered.content), "registered late_tool");
    tools_list_changed(&mut notifications).await;

    let tools = client.list_tools(None).await.expect("tools/list again");
    assert!(
        tools.tools.iter().any(|t| t.name == "late_tool"),
        "{:?}",
        tools.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let late = client
        .call_tool("late_tool", args(json!({"text": "hello"})))
        .await
        .expect("late_tool is callable");
    assert_ne!(late.is_error, Some(true), "{late:?}");
    assert_eq!(text(&late.content), "late: hello");
}

#[tokio::test]
async fn modern_server_over_stdio_lands_on_2026_07_28() {
    let client = modern_stdio(&[]).await;
    exercise_modern(&client).await;
    client.close().await;
}

#[tokio::test]
async fn modern_server_over_streamable_http_lands_on_2026_07_28() {
    let server = ModernHttp::start(&[]).await;
    let (client, took) = http_client(server.url()).await;
    eprintln!(
        "HTTP first connect, modern_server.py (dual-era): {:.1} ms",
        ms(took)
    );
    exercise_modern(&client).await;
    client.close().await;
}

#[tokio::test]
async fn modern_only_server_over_stdio_lands_on_2026_07_28() {
    let client = modern_stdio(&["--modern-only"]).await;
    exercise_modern(&client).await;
    client.close().await;
}

#[tokio::test]
async fn modern_only_server_over_streamable_http_lands_on_2026_07_28() {
    let server = ModernHttp::start(&["--modern-only"]).await;
    let (client, took) = http_client(server.url()).await;
    eprintln!(
        "HTTP first connect, modern_server.py --modern-only: {:.1} ms",
        ms(took)
    );
    exercise_modern(&client).await;
    client.close().await;
}

#[tokio::test]
async fn fastmcp_over_stdio_stays_in_the_handshake_era() {
    let mut stdio = StdioOptions::new(tests::venv_python().display().to_string());
    stdio.args = vec![
        tests::fastmcp_script().display().to_string(),
        "stdio".to_owned(),
    ];
    let transport = StdioTransport::spawn(stdio).expect("the FastMCP server starts");
    let client = Client::connect(transport, options())
        .await
        .expect("connects to FastMCP");
    assert_legacy(&client);
    let sum = client
        .call_tool("add", args(json!({"a": 20, "b": 22})))
        .await
        .expect("add");
    assert_eq!(text(&sum.content), "42");
    client.close().await;
}

#[tokio::test]
async fn fastmcp_over_streamable_http_stays_in_the_handshake_era() {
    let port = free_port();
    let mut command = Command::new(tests::venv_python());
    command
        .arg(tests::fastmcp_script())
        .arg("http")
        .arg(port.to_string());
    let _server = start_http_server(command, port).await;
    let (client, took) = http_client(format!("http://127.0.0.1:{port}/mcp")).await;
    eprintln!(
        "HTTP first connect, FastMCP 1.x (legacy): {:.1} ms",
        ms(took)
    );
    assert_legacy(&client);
    let sum = client
        .call_tool("add", args(json!({"a": 20, "b": 22})))
        .await
        .expect("add");
    assert_eq!(text(&sum.content), "42");
    client.close().await;
}

#[tokio::test]
async fn server_everything_over_stdio_stays_in_the_handshake_era() {
    let mut stdio = StdioOptions::new(tests::node());
    stdio.args = vec![
        tests::server_everything().display().to_string(),
        "stdio".to_owned(),
    ];
    stdio.env = vec![("GZIP_ALLOWED_DOMAINS".to_owned(), "localhost".to_owned())];
    let transport = StdioTransport::spawn(stdio).expect("server-everything starts");
    let client = Client::connect(transport, options())
        .await
        .expect("connects to server-everything");
    assert_legacy(&client);
    let echo = client
        .call_tool("echo", args(json!({"message": "legacy"})))
        .await
        .expect("echo");
    assert!(text(&echo.content).contains("legacy"), "{echo:?}");
    client.close().await;
}

#[tokio::test]
async fn server_everything_over_streamable_http_stays_in_the_handshake_era() {
    let port = free_port();
    let mut command = Command::new(tests::node());
    command
        .arg(tests::server_everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .env("GZIP_ALLOWED_DOMAINS", "localhost");
    let _server = start_http_server(command, port).await;
    let (client, took) = http_client(format!("http://127.0.0.1:{port}/mcp")).await;
    eprintln!(
        "HTTP first connect, server-everything (legacy): {:.1} ms",
        ms(took)
    );
    assert_legacy(&client);
    let echo = client
        .call_tool("echo", args(json!({"message": "legacy"})))
        .await
        .expect("echo");
    assert!(text(&echo.content).contains("legacy"), "{echo:?}");
    client.close().await;
}

// --- The manager: the era persisted with the cached tools. ---

/// A manager on `cache` whose startup waits (bounded) for every server, so
/// `connect_servers`' elapsed time is the time to ready.
fn manager_with(cache: &Path) -> McpManager {
    let mut options = ManagerOptions::default();
    options.startup = StartupMode::Gate { wait: DEADLINE };
    McpManager::builder()
        .options(options)
        .cache(Arc::new(JsonFileToolCache::open(cache)) as Arc<dyn ToolCache>)
        .build()
}

/// Starts `config` through a fresh manager on `cache`; the era it landed
/// on and how long `connect_servers` took. Closing flushes the cache.
async fn start_once(cache: &Path, config: &ServerConfig) -> (Era, ProtocolVersion, Duration) {
    let manager = manager_with(cache);
    let report = manager.connect_servers([config.clone()]).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.ready.len(), 1, "{report:?}");
    let connected = manager
        .wait_ready(&config.id, Instant::now() + DEADLINE)
        .await
        .expect("ready");
    let version = connected.catalog.protocol_version();
    let landed = (version.era(), version, report.elapsed);
    manager.close().await;
    landed
}

/// The `era` of the cache file's one entry for `server_id`.
fn cached_era(cache: &Path, server_id: &str) -> Option<String> {
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(cache).expect("the cache file"))
            .expect("the cache file is JSON");
    let entries = file["entries"].as_object().expect("entries");
    let mut found = entries
        .values()
        .filter(|entry| entry["serverId"] == server_id);
    let entry = found.next().expect("an entry for the server");
    assert!(found.next().is_none(), "one entry for {server_id}");
    entry["era"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fastmcp_era_is_persisted_and_the_second_start_is_ready_in_it() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let cache = dir.path().join("tools.json");
    let mut stdio = StdioConfig::new(tests::venv_python().display().to_string());
    stdio.args = vec![
        tests::fastmcp_script().display().to_string(),
        "stdio".to_owned(),
    ];
    let config = ServerConfig::new("fastmcp", TransportConfig::Stdio(stdio));

    let (era, version, first) = start_once(&cache, &config).await;
    assert_eq!(era, Era::Legacy, "{version:?}");
    assert_eq!(cached_era(&cache, "fastmcp").as_deref(), Some("legacy"));

    let (era, version, second) = start_once(&cache, &config).await;
    assert_eq!(era, Era::Legacy, "{version:?}");
    assert_eq!(cached_era(&cache, "fastmcp").as_deref(), Some("legacy"));
    eprintln!(
        "manager, FastMCP 1.x over stdio (legacy): first connect_servers {:.1} ms (probe), second {:.1} ms (cached era)",
        ms(first),
        ms(second)
    );
}

/// The `modern-request` lines of the fixture's event log, as JSON details.
fn modern_requests(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(4, ' ');
            (fields.next() == Some("modern-request"))
                .then(|| fields.nth(2))
                .flatten()
                .map(|detail| serde_json::from_str(detail).expect("a JSON detail"))
        })
        .collect()
}

/// How many `initialize-start` lines the fixture's event log holds.
fn initializes(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.starts_with("initialize-start "))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_legacy_era_sends_no_probe_on_the_second_start() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let cache = dir.path().join("tools.json");
    let log = dir.path().join("events.log");
    // A handshake-era server that answers the probe with only handshake
    // versions (rather than -32601), so the probe shows in its event log.
    let mut stdio = StdioConfig::new(FIXTURE);
    stdio.args = [
        "--era",
        "legacy",
        "--discover-legacy-only",
        "--event-log",
        log.to_str().expect("a UTF-8 path"),
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    let config = ServerConfig::new("fixture-legacy", TransportConfig::Stdio(stdio));

    let (era, version, first) = start_once(&cache, &config).await;
    assert_eq!(era, Era::Legacy, "{version:?}");
    let probes = modern_requests(&log);
    assert_eq!(probes.len(), 1, "the first start probes once: {probes:?}");
    assert_eq!(probes[0]["method"], "server/discover", "{probes:?}");
    assert_eq!(initializes(&log), 1);
    assert_eq!(
        cached_era(&cache, "fixture-legacy").as_deref(),
        Some("legacy")
    );

    let (era, version, second) = start_once(&cache, &config).await;
    assert_eq!(era, Era::Legacy, "{version:?}");
    assert_eq!(
        modern_requests(&log).len(),
        1,
        "the second start sent no server/discover nor any modern request: {:?}",
        modern_requests(&log)
    );
    assert_eq!(initializes(&log), 2, "the second start initialized");
    eprintln!(
        "manager, fixture --era legacy over stdio: first connect_servers {:.1} ms (probe), second {:.1} ms (cached era)",
        ms(first),
        ms(second)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_server_era_is_persisted_and_the_second_start_lands_on_2026_07_28() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let cache = dir.path().join("tools.json");
    let mut stdio = StdioConfig::new(tests::modern_venv_python().display().to_string());
    stdio.args = modern_args(&["stdio"]);
    let config = ServerConfig::new("python-modern", TransportConfig::Stdio(stdio));

    let (era, version, first) = start_once(&cache, &config).await;
    assert_eq!((era, version), (Era::Modern, ProtocolVersion::V2026_07_28));
    assert_eq!(
        cached_era(&cache, "python-modern").as_deref(),
        Some("modern")
    );

    let (era, version, second) = start_once(&cache, &config).await;
    assert_eq!((era, version), (Era::Modern, ProtocolVersion::V2026_07_28));
    assert_eq!(
        cached_era(&cache, "python-modern").as_deref(),
        Some("modern")
    );
    eprintln!(
        "manager, modern_server.py over stdio (2026-07-28): first connect_servers {:.1} ms (probe), second {:.1} ms (cached era)",
        ms(first),
        ms(second)
    );
}

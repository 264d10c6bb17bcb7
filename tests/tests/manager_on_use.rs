//! Servers that start on use, over real fixture processes: a lazy host with 40 configured stdio servers starts only the one whose tool is called, and under restart on use a server whose process was killed is started again by the next call.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{
    ErrorCode, JsonFileToolCache, ManagerEvent, ManagerOptions, McpManager, RestartPolicy,
    ToolCache,
};
use mcp_toolbridge::{
    McpSession, PermissionPreset, SessionOptions, ToolCall, ToolOutcome, ToolSet,
};
use serde_json::json;
use tokio::sync::broadcast;
use tokio::time::Instant;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// How long any single step may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(30);

/// A handshake-era fixture server over stdio that appends its pid to `pids`.
fn fixture(id: &str, pids: &Path) -> ServerConfig {
    let mut stdio = StdioConfig::new(FIXTURE);
    stdio.args = vec![
        "--era".into(),
        "legacy".into(),
        "--pid-file".into(),
        pids.display().to_string(),
    ];
    ServerConfig::new(id, TransportConfig::Stdio(stdio))
}

fn session(manager: &McpManager) -> McpSession {
    let mut options = SessionOptions::default();
    options.preset = PermissionPreset::FullAccess;
    McpSession::new(manager, options)
}

/// The pids `file` holds (one per start).
fn pids(file: &Path) -> Vec<u32> {
    match std::fs::read_to_string(file) {
        Ok(text) => text.lines().map(|l| l.parse().expect("a pid")).collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => panic!("{}: {error}", file.display()),
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'))
        })
}

async fn call(tools: &ToolSet, name: &str) -> ToolOutcome {
    let tool = tools.get(name).unwrap_or_else(|| panic!("no tool {name}"));
    tokio::time::timeout(
        DEADLINE,
        tool.call(ToolCall::new("call", json!({"text": "hello"}))),
    )
    .await
    .expect("the call ends within the deadline")
}

fn text(outcome: &ToolOutcome) -> String {
    outcome
        .result()
        .map(|r| r.joined_text())
        .unwrap_or_else(|| format!("{outcome:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_host_with_40_servers_starts_only_the_one_it_calls() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(JsonFileToolCache::open(dir.path().join("tools.json")));
    let files: Vec<PathBuf> = (0..40)
        .map(|i| dir.path().join(format!("s{i:02}.pids")))
        .collect();
    let configs = || -> Vec<ServerConfig> {
        files
            .iter()
            .enumerate()
            .map(|(i, file)| fixture(&format!("s{i:02}"), file))
            .collect()
    };

    // An earlier run of the host cached every catalog.
    let eager = McpManager::builder()
        .cache(Arc::clone(&cache) as Arc<dyn ToolCache>)
        .build();
    let report = eager.connect_servers(configs()).await;
    assert_eq!(report.ready.len(), 40, "{:?}", report.errors);
    let per_server = report.ready[0].catalog.tools().len();
    eager.close().await;
    for file in &files {
        let started = pids(file);
        assert_eq!(started.len(), 1);
        assert!(!alive(started[0]), "closed, its process is gone");
        std::fs::remove_file(file).unwrap();
    }

    // This run starts none of them: every tool is offered from the cache.
    let mut options = ManagerOptions::default();
    options.lazy = true;
    let lazy = McpManager::builder()
        .options(options)
        .cache(Arc::clone(&cache) as Arc<dyn ToolCache>)
        .build();
    let started = Instant::now();
    let report = lazy.connect_servers(configs()).await;
    let startup = started.elapsed();
    assert_eq!(report.deferred.len(), 40, "{:?}", report.errors);
    assert!(report.ready.is_empty());
    let session = session(&lazy);
    let tools = session.bind_startup(&report);
    assert_eq!(tools.tools().len(), 40 * per_server);
    assert!(
        files.iter().all(|file| pids(file).is_empty()),
        "a server was started"
    );

    // Calling one of them starts that one, and only that one.
    let echo = call(&tools, "mcp_s07_echo").await;
    assert_eq!(text(&echo), "hello", "{echo:?}");
    for (i, file) in files.iter().enumerate() {
        assert_eq!(pids(file).len(), usize::from(i == 7), "s{i:02}");
    }
    assert!(lazy.starts_on_use("s08"));
    assert!(!lazy.starts_on_use("s07"));
    let started = pids(&files[7])[0];
    lazy.close().await;
    assert!(!alive(started));
    eprintln!("lazy startup of 40 cached servers: {startup:?}");
}

/// Waits for `id`'s catalog to be revoked (its connection ended).
async fn revoked(events: &mut broadcast::Receiver<ManagerEvent>, id: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(ManagerEvent::CatalogRevoked { id: gone, .. })) if gone == id => return,
            Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
            other => panic!("no revocation of {id}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_restart_on_use_the_next_call_starts_a_killed_server_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fx.pids");
    let mut options = ManagerOptions::default();
    options.restart = RestartPolicy::OnUse;
    let manager = McpManager::builder().options(options).build();
    let report = manager.connect_servers([fixture("fx", &file)]).await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    let session = session(&manager);
    let tools = session.bind();
    assert_eq!(text(&call(&tools, "mcp_fx_echo").await), "hello");

    // The process dies (killed by its id: this test's manager started it).
    let mut events = manager.events();
    let first = pids(&file)[0];
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    revoked(&mut events, "fx").await;
    let status = manager.status("fx").unwrap();
    assert_eq!(
        status.error().map(|e| e.code),
        Some(ErrorCode::Closed),
        "{status:?}"
    );
    assert!(manager.starts_on_use("fx"));
    assert_eq!(pids(&file).len(), 1, "nothing restarts it before a use");

    // A binding made now still offers the tool; the bound one from before
    // works too: each call starts the server once.
    let rebound = session.bind();
    assert!(rebound.get("mcp_fx_echo").is_some());
    let echo = call(&tools, "mcp_fx_echo").await;
    assert_eq!(text(&echo), "hello", "{echo:?}");
    let started = pids(&file);
    assert_eq!(started.len(), 2);
    assert!(!alive(first) && alive(started[1]));
    manager.close().await;
    assert!(!alive(started[1]));
}

//! A stdio server's first start on this machine (no tool-cache entry for its configuration) gets the setup allowance, and says so while it connects; once cached, the ordinary deadline applies.

use std::sync::Arc;
use std::time::Duration;

use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{
    ErrorCode, JsonFileToolCache, ManagerOptions, McpManager, ServerStatus, StartupMode, ToolCache,
};
use tokio::time::Instant;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// A fixture server that takes 600 ms to answer `initialize`.
fn slow_start() -> ServerConfig {
    let mut stdio = StdioConfig::new(FIXTURE);
    stdio.args = ["--era", "legacy", "--delay-initialize-ms", "600"]
        .map(str::to_owned)
        .to_vec();
    ServerConfig::new("slow", TransportConfig::Stdio(stdio))
}

fn manager(cache: &Arc<JsonFileToolCache>) -> McpManager {
    let mut options = ManagerOptions::default();
    // Deadlines the slow start misses, and an allowance it does not.
    options.initialize_timeout = Duration::from_millis(150);
    options.discovery_timeout = Duration::from_millis(150);
    options.setup_timeout = Duration::from_secs(30);
    options.startup = StartupMode::Background;
    McpManager::builder()
        .options(options)
        .cache(Arc::clone(cache) as Arc<dyn ToolCache>)
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_start_gets_the_setup_allowance_and_a_known_server_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(JsonFileToolCache::open(dir.path().join("tools.json")));

    // Never seen: connecting says "first start", and the allowance holds.
    let first = manager(&cache);
    let mut events = first.events();
    first.connect_servers(vec![slow_start()]).await;
    let info = loop {
        let info = first.servers().pop().unwrap();
        if info.status == ServerStatus::Connecting {
            break info;
        }
        events.recv().await.unwrap();
    };
    assert!(info.first_start, "{info:?}");
    first
        .wait_ready("slow", Instant::now() + Duration::from_secs(30))
        .await
        .expect("the first start connects within the allowance");
    assert!(
        !first.servers().pop().unwrap().first_start,
        "ready: no longer a first start"
    );
    first.close().await;

    // Closing flushes the cache: the server is known from now on.
    let fingerprint = mcp_config::fingerprint(
        &mcp_config::resolve(&slow_start(), &mcp_config::ProcessEnv).expect("resolves"),
    );
    assert!(cache.contains(&fingerprint).await, "the catalog was cached");

    // Known now: the ordinary 150 ms deadline applies and is missed.
    let known = manager(&cache);
    known.connect_servers(vec![slow_start()]).await;
    let error = known
        .wait_ready("slow", Instant::now() + Duration::from_secs(30))
        .await
        .expect_err("a known server gets the ordinary deadline");
    let status = known.status("slow").unwrap();
    assert_eq!(
        status.error().map(|e| e.code),
        Some(ErrorCode::Timeout),
        "{error:?} {status:?}"
    );
    assert!(!known.servers().pop().unwrap().first_start);
    known.close().await;
}

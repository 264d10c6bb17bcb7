//! `mcp-manager` starting real fixture servers: 20 at once with a warm and a cold tool cache, one hung, the 3-at-once limit seen from the servers' own clocks, and snapshots that share their catalogs.
//!
//! Every wait is on a real event (a startup report, a server becoming
//! ready or failing), bounded by a deadline that only a failure reaches.
//! The measured figures are printed (`cargo test -- --nocapture` shows
//! them).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{ErrorCode, JsonFileToolCache, McpManager, StartupReport, ToolCache};
use tokio::time::Instant;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

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

/// Twenty fixture servers with 100 tools each (12 built-in + 88
/// generated); server `fx07` hangs in `initialize` while `hang` exists.
fn twenty(hang: &Path) -> Vec<ServerConfig> {
    (0..20)
        .map(|i| {
            let id = format!("fx{i:02}");
            let hang_file = hang.with_file_name(format!("hang-{id}"));
            let hang_arg = if id == "fx07" {
                hang.display().to_string()
            } else {
                hang_file.display().to_string()
            };
            fixture(
                &id,
                &["--tools", "88", "--hang-initialize-if-exists", &hang_arg],
            )
        })
        .collect()
}

fn manager_with(cache: Arc<JsonFileToolCache>) -> McpManager {
    McpManager::builder()
        .cache(cache as Arc<dyn ToolCache>)
        .build()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_servers_cold_then_warm_with_one_hung_and_cheap_snapshots() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let cache_path = dir.path().join("tools.json");
    let hang = dir.path().join("hang-fx07");
    let configs = twenty(&hang);

    // Cold: no cache entries, so the gate waits for every server.
    let cold = manager_with(Arc::new(JsonFileToolCache::open(&cache_path)));
    let report = cold.connect_servers(configs.clone()).await;
    assert_eq!(report.ready.len(), 20, "{:?}", report.errors);
    assert!(report.deferred.is_empty());
    let cold_elapsed = report.elapsed;
    for ready in &report.ready {
        assert_eq!(ready.catalog.tools().len(), 100, "{}", ready.id);
    }

    // Snapshots of 20 servers x 100 tools: the bound is 50 ms for 1,000.
    let started = std::time::Instant::now();
    let mut rows = 0;
    for _ in 0..1000 {
        let snapshot = cold.snapshot(None);
        rows += snapshot.servers().len();
        std::hint::black_box(&snapshot);
    }
    let snapshot_cost = started.elapsed();
    assert_eq!(rows, 20_000);
    assert_eq!(cold.snapshot(None).tool_count(), 2000);
    // Cheap by construction: a snapshot shares every catalog, it copies no
    // tool (the time is printed below; wall-clock bounds flake on a loaded
    // machine).
    let (a, b) = (cold.snapshot(None), cold.snapshot(None));
    assert!(
        a.servers()
            .iter()
            .zip(b.servers())
            .all(|(a, b)| Arc::ptr_eq(a.catalog(), b.catalog())),
        "two snapshots share their catalogs"
    );
    cold.close().await;

    // Warm, healthy: every server has a cache entry.
    let warm = manager_with(Arc::new(JsonFileToolCache::open(&cache_path)));
    let started = Instant::now();
    let report = warm.connect_servers(configs.clone()).await;
    let warm_gate = report.elapsed;
    assert_eq!(report.ready.len() + report.deferred.len(), 20);
    // Far below the 15 s a discovery may take: nothing waited for a deadline.
    assert!(warm_gate < Duration::from_secs(5), "{warm_gate:?}");
    wait_all_ready(&warm, &report, started + Duration::from_secs(30)).await;
    let warm_all = started.elapsed();
    warm.close().await;

    // Warm, with fx07 hung: the gate closes at 250 ms and offers fx07's
    // cached tools; the other 19 become ready within their deadlines.
    std::fs::write(&hang, b"").expect("the hang file");
    let hung = manager_with(Arc::new(JsonFileToolCache::open(&cache_path)));
    let mut events = hung.events();
    let started = Instant::now();
    let report = hung.connect_servers(configs).await;
    let hung_gate = report.elapsed;
    assert!(hung_gate >= Duration::from_millis(250), "{hung_gate:?}");
    // fx07 fails only after its 10 s initialize deadline: a report this
    // early means the gate closed without it.
    assert!(hung_gate < Duration::from_secs(5), "{hung_gate:?}");
    let fx07 = report
        .deferred
        .iter()
        .find(|d| d.id == "fx07")
        .expect("fx07 is deferred with cached tools");
    assert_eq!(fx07.tools.len(), 100);
    assert!(fx07.tools.iter().any(|t| t.name == "tool_0088"));
    assert_eq!(
        report.tools().count(),
        2000,
        "live and deferred tools together"
    );
    for i in (0..20).filter(|i| *i != 7) {
        let id = format!("fx{i:02}");
        hung.wait_ready(&id, started + Duration::from_secs(15))
            .await
            .unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    let nineteen_ready = started.elapsed();
    let failure = hung
        .wait_ready("fx07", started + Duration::from_secs(30))
        .await
        .expect_err("fx07 never answers initialize");
    assert_eq!(failure.code(), "timeout");
    assert_eq!(
        hung.status("fx07").unwrap().error().map(|e| e.code),
        Some(ErrorCode::Timeout)
    );
    let fx07_failed = started.elapsed();
    assert!(fx07_failed >= Duration::from_secs(10), "{fx07_failed:?}");
    // The late failure did not disturb anyone else.
    assert_eq!(hung.snapshot(None).servers().len(), 19);
    let mut swaps = HashMap::new();
    while let Ok(event) = events.try_recv() {
        if let mcp_manager::ManagerEvent::CatalogSwapped { id, .. } = event {
            *swaps.entry(id).or_insert(0) += 1;
        }
    }
    assert_eq!(swaps.len(), 19);
    assert!(swaps.values().all(|n| *n == 1), "{swaps:?}");
    hung.close().await;

    println!(
        "startup of 20 fixture servers (100 tools each): cold cache {:.0} ms until the \
         report (all ready); warm cache: report after {:.0} ms, all ready after {:.0} ms; \
         one hung: report after {:.0} ms, 19 ready after {:.0} ms, the hung one failed \
         after {:.0} ms; 1,000 snapshots of 20 x 100 tools: {:.2} ms",
        ms(cold_elapsed),
        ms(warm_gate),
        ms(warm_all),
        ms(hung_gate),
        ms(nineteen_ready),
        ms(fx07_failed),
        ms(snapshot_cost),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_servers_start_in_250_ms_with_a_warm_cache() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let cache_path = dir.path().join("tools.json");
    let configs: Vec<ServerConfig> = (0..20)
        .map(|i| {
            fixture(
                &format!("slow{i:02}"),
                &["--tools", "88", "--delay-initialize-ms", "200"],
            )
        })
        .collect();

    let cold = manager_with(Arc::new(JsonFileToolCache::open(&cache_path)));
    let report = cold.connect_servers(configs.clone()).await;
    assert_eq!(report.ready.len(), 20, "{:?}", report.errors);
    let cold_elapsed = report.elapsed;
    // Three at a time, 200 ms each: at least seven rounds.
    assert!(
        cold_elapsed >= Duration::from_millis(1400),
        "{cold_elapsed:?}"
    );
    cold.close().await;

    let warm = manager_with(Arc::new(JsonFileToolCache::open(&cache_path)));
    let started = Instant::now();
    let report = warm.connect_servers(configs).await;
    let warm_gate = report.elapsed;
    assert!(warm_gate >= Duration::from_millis(250), "{warm_gate:?}");
    assert!(warm_gate < Duration::from_millis(1000), "{warm_gate:?}");
    assert!(
        report.deferred.len() >= 10,
        "{} deferred",
        report.deferred.len()
    );
    assert_eq!(report.tools().count(), 2000);
    wait_all_ready(&warm, &report, started + Duration::from_secs(30)).await;
    let warm_all = started.elapsed();
    warm.close().await;
    println!(
        "startup of 20 fixture servers answering initialize after 200 ms: cold cache {:.0} ms \
         until the report (all ready); warm cache: report with {} deferred servers after \
         {:.0} ms, all ready after {:.0} ms",
        ms(cold_elapsed),
        report.deferred.len(),
        ms(warm_gate),
        ms(warm_all),
    );
}

async fn wait_all_ready(manager: &McpManager, report: &StartupReport, deadline: Instant) {
    for id in report.deferred.iter().map(|d| &d.id) {
        manager
            .wait_ready(id, deadline)
            .await
            .unwrap_or_else(|e| panic!("{id}: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_than_three_initialize_at_once_by_the_servers_own_clocks() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let log = dir.path().join("events.log");
    let log_arg = log.display().to_string();
    let configs: Vec<ServerConfig> = (0..20)
        .map(|i| {
            fixture(
                &format!("c{i:02}"),
                &["--delay-initialize-ms", "100", "--event-log", &log_arg],
            )
        })
        .collect();
    let manager = McpManager::builder().build();
    let report = manager.connect_servers(configs).await;
    assert_eq!(report.ready.len(), 20, "{:?}", report.errors);
    manager.close().await;

    let text = std::fs::read_to_string(&log).expect("the event log");
    let mut edges: Vec<(u128, i32)> = Vec::new();
    let mut starts = 0;
    for line in text.lines() {
        let mut fields = line.split(' ');
        let (Some(event), Some(nanos)) = (fields.next(), fields.next()) else {
            panic!("malformed event line {line:?}");
        };
        let nanos: u128 = nanos.parse().expect("nanoseconds");
        match event {
            "initialize-start" => {
                starts += 1;
                edges.push((nanos, 1));
            }
            "initialize-end" => edges.push((nanos, -1)),
            _ => {}
        }
    }
    assert_eq!(starts, 20, "{text}");
    assert_eq!(edges.len(), 40, "{text}");
    // At equal times an end comes before a start: touching intervals do
    // not overlap.
    edges.sort();
    let mut open = 0;
    let mut most = 0;
    for (_, delta) in edges {
        open += delta;
        most = most.max(open);
    }
    assert!(most <= 3, "{most} servers initialized at once:\n{text}");
    assert!(
        most >= 2,
        "the servers were not set up in parallel:\n{text}"
    );
    println!("most fixture servers in initialize at once, by their own clocks: {most}");
}

//! Lifecycle: dropped connections, reconnect policy, session expiry, idle timeout, generations, teardown.

use std::time::Duration;

use mcp_proto::types::CallToolRequestParams;
use mcp_transport::CallOptions;
use tokio::time::Instant;

use super::support::*;
use crate::{
    ErrorCode, IdlePolicy, ManagerEvent, ManagerOptions, ReconnectPolicy, RetryState, ServerStatus,
    WaitError,
};

fn reconnecting() -> ManagerOptions {
    ManagerOptions {
        reconnect: ReconnectPolicy::on(),
        ..ManagerOptions::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_that_dies_is_closed_its_tools_gone_and_the_others_untouched() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a"), stdio("b")]).await;
    let b = manager.catalog("b").unwrap().lifetime();
    fake.control("a", Control::Close);
    until(&manager, "a", |s| s.error().is_some()).await;
    let error = manager.status("a").unwrap().error().unwrap().clone();
    assert_eq!(error.code, ErrorCode::Closed);
    assert_eq!(error.message, "the server process exited");
    assert!(manager.catalog("a").is_none() && manager.server("a").is_none());
    assert_eq!(manager.catalog("b").unwrap().lifetime(), b);
    let snapshot = manager.snapshot(None);
    let ids: Vec<&str> = snapshot.servers().iter().map(|s| s.id()).collect();
    assert_eq!(ids, ["b"]);
}

#[tokio::test(start_paused = true)]
async fn reconnect_is_off_by_default() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a")]).await;
    fake.control("a", Control::Close);
    until(&manager, "a", |s| s.error().is_some()).await;
    assert!(matches!(
        manager.status("a"),
        Some(ServerStatus::Error { retry: None, .. })
    ));
    // An hour later nothing has tried again.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(fake.stats("a").connects, 1);
}

#[tokio::test(start_paused = true)]
async fn reconnect_backs_off_1_2_4_s_and_recovers() {
    let fake = Fake::new();
    let manager = manager(&fake, reconnecting());
    manager.connect_servers([stdio("a")]).await;
    let lifetime = manager.catalog("a").unwrap().lifetime();
    fake.edit("a", |s| s.connect_error = Some(ErrorCode::Closed));
    let mut events = manager.events();
    let started = Instant::now();
    fake.control("a", Control::Close);
    fake.until_stats("a", |s| s.connects == 3).await;
    // The drop, then tries at 1 s and 1 + 2 s.
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    fake.edit("a", |s| s.connect_error = None);
    until_ready(&manager, "a").await;
    assert_eq!(started.elapsed(), Duration::from_secs(7));
    assert_eq!(fake.stats("a").connects, 4);
    assert_ne!(manager.catalog("a").unwrap().lifetime(), lifetime);
    let retries: Vec<RetryState> = drain(&mut events)
        .into_iter()
        .filter_map(|event| match event {
            ManagerEvent::StatusChanged {
                status: ServerStatus::Error { retry, .. },
                ..
            } => retry,
            _ => None,
        })
        .collect();
    let delays: Vec<u64> = retries.iter().map(|r| r.delay.as_secs()).collect();
    assert_eq!(delays, [1, 2, 4]);
    assert!(retries.iter().all(|r| r.max_attempts == 3));
}

#[tokio::test(start_paused = true)]
async fn reconnect_gives_up_after_three_tries() {
    let fake = Fake::new();
    let manager = manager(&fake, reconnecting());
    manager.connect_servers([stdio("a")]).await;
    fake.edit("a", |s| s.connect_error = Some(ErrorCode::Closed));
    fake.control("a", Control::Close);
    until(&manager, "a", |s| {
        matches!(s, ServerStatus::Error { retry: None, .. })
    })
    .await;
    assert_eq!(
        fake.stats("a").connects,
        4,
        "the first connect and three tries"
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(fake.stats("a").connects, 4);
    let wait = manager
        .wait_ready("a", Instant::now() + Duration::from_secs(1))
        .await;
    assert!(matches!(wait, Err(WaitError::Failed { .. })), "{wait:?}");
}

#[tokio::test(start_paused = true)]
async fn configuration_errors_are_never_retried() {
    let fake = Fake::new();
    fake.script(
        "a",
        Script {
            connect_error: Some(ErrorCode::MissingCommand),
            ..Script::default()
        },
    );
    let manager = manager(&fake, reconnecting());
    let report = manager.connect_servers([stdio("a")]).await;
    assert_eq!(report.error("a").unwrap().code, ErrorCode::MissingCommand);
    assert!(matches!(
        manager.status("a"),
        Some(ServerStatus::Error { retry: None, .. })
    ));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(fake.stats("a").connects, 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_first_connect_is_retried_when_the_policy_is_on() {
    let fake = Fake::new();
    fake.script(
        "a",
        Script {
            reject_initialize: true,
            ..Script::default()
        },
    );
    let manager = manager(&fake, reconnecting());
    let report = manager.connect_servers([stdio("a")]).await;
    assert_eq!(report.error("a").unwrap().code, ErrorCode::Protocol);
    fake.edit("a", |s| s.reject_initialize = false);
    let deadline = Instant::now() + Duration::from_secs(5);
    let connected = manager.wait_ready("a", deadline).await.unwrap();
    assert_eq!(connected.catalog.tools().len(), 2);
    assert_eq!(fake.stats("a").connects, 2);
}

#[tokio::test(start_paused = true)]
async fn an_expired_session_is_initialized_again_once_whatever_the_policy() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([http("api")]).await;
    let lifetime = manager.catalog("api").unwrap().lifetime();
    let mut events = manager.events();
    fake.control("api", Control::Expire);
    fake.until_stats("api", |s| s.connects == 2).await;
    until_ready(&manager, "api").await;
    assert_ne!(manager.catalog("api").unwrap().lifetime(), lifetime);
    let events = drain(&mut events);
    assert!(events.contains(&ManagerEvent::CatalogRevoked {
        id: "api".into(),
        lifetime
    }));
    assert!(!statuses_of(&events, "api").contains(&"error"));

    // If the new session cannot be set up, the policy (off) decides.
    fake.edit("api", |s| s.connect_error = Some(ErrorCode::Closed));
    fake.control("api", Control::Expire);
    until(&manager, "api", |s| s.error().is_some()).await;
    assert_eq!(fake.stats("api").connects, 3);
    assert!(matches!(
        manager.status("api"),
        Some(ServerStatus::Error { retry: None, .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn idle_connections_close_after_30_min_stdio_and_5_min_http_and_reconnect_on_demand() {
    let fake = Fake::new();
    let options = ManagerOptions {
        idle: IdlePolicy::on(),
        ..ManagerOptions::default()
    };
    let manager = manager(&fake, options);
    let started = Instant::now();
    manager
        .connect_servers([stdio("local"), http("remote")])
        .await;

    tokio::time::sleep(Duration::from_secs(4 * 60)).await;
    // Taking a handle counts as a use.
    assert!(manager.server("remote").is_some());
    tokio::time::sleep(Duration::from_secs(4 * 60)).await;
    assert_eq!(
        manager.status("remote"),
        Some(ServerStatus::Ready),
        "touched at 4 min"
    );
    until(&manager, "remote", |s| *s == ServerStatus::Idle).await;
    assert_eq!(started.elapsed(), Duration::from_secs(9 * 60));
    assert!(manager.catalog("remote").is_none());
    fake.until_stats("remote", |s| s.closed_by_client == 1)
        .await;

    // So does taking a handle to another server.
    tokio::time::sleep(Duration::from_secs(20 * 60)).await;
    assert!(manager.server("local").is_some());
    until(&manager, "local", |s| *s == ServerStatus::Idle).await;
    assert_eq!(started.elapsed(), Duration::from_secs(59 * 60));

    let connected = manager
        .wait_ready("remote", Instant::now() + Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(connected.catalog.server_id(), "remote");
    assert_eq!(fake.stats("remote").connects, 2);
}

#[tokio::test(start_paused = true)]
async fn a_call_in_flight_keeps_an_idle_connection_open_until_an_idle_period_after_it_ends() {
    let fake = Fake::new();
    fake.script(
        "remote",
        Script {
            call_delay: Duration::from_secs(12 * 60),
            ..Script::default()
        },
    );
    let options = ManagerOptions {
        idle: IdlePolicy::on(),
        ..ManagerOptions::default()
    };
    let manager = manager(&fake, options);
    let started = Instant::now();
    manager.connect_servers([http("remote")]).await;
    let server = manager.server("remote").unwrap();
    let call = tokio::spawn(async move {
        let params = CallToolRequestParams::new("tool-0", None);
        let options = CallOptions::default().timeout(Some(Duration::from_secs(3600)));
        server.call_tool_with(&params, options).await
    });

    // Well past the 5 min idle time of an HTTP server, the call is still
    // running: the connection is in use.
    tokio::time::sleep(Duration::from_secs(11 * 60)).await;
    assert_eq!(manager.status("remote"), Some(ServerStatus::Ready));
    let result = call.await.unwrap().unwrap();
    assert!(!result.failed());
    assert_eq!(started.elapsed(), Duration::from_secs(12 * 60));

    // Idle counts from the answer, not from a look taken while it ran.
    tokio::time::sleep(Duration::from_secs(4 * 60)).await;
    assert_eq!(manager.status("remote"), Some(ServerStatus::Ready));
    until(&manager, "remote", |s| *s == ServerStatus::Idle).await;
    assert_eq!(started.elapsed(), Duration::from_secs(17 * 60));
    assert_eq!(fake.stats("remote").closed_by_client, 1);
}

#[tokio::test(start_paused = true)]
async fn idle_timeout_is_off_by_default() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([http("remote")]).await;
    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
    assert_eq!(manager.status("remote"), Some(ServerStatus::Ready));
}

#[tokio::test(start_paused = true)]
async fn disabling_a_server_during_connect_drops_the_late_result() {
    let fake = Fake::new();
    fake.script(
        "slow",
        Script {
            init_delay: Duration::from_secs(5),
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    let mut events = manager.events();
    manager.connect_servers([stdio("slow")]).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(manager.status("slow"), Some(ServerStatus::Connecting));
    let generation = manager.generation("slow").unwrap();
    manager.set_enabled("slow", false).await.unwrap();
    assert_eq!(manager.status("slow"), Some(ServerStatus::Disabled));
    assert!(manager.generation("slow").unwrap() > generation);

    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(manager.status("slow"), Some(ServerStatus::Disabled));
    assert!(manager.catalog("slow").is_none());
    let events = drain(&mut events);
    assert_eq!(swaps_of(&events, "slow"), 0, "{events:?}");
    assert_eq!(fake.stats("slow").closed_by_client, 1);
    let wait = manager.wait_ready("slow", Instant::now()).await;
    assert_eq!(wait.unwrap_err(), WaitError::Disabled { id: "slow".into() });

    manager.set_enabled("slow", true).await.unwrap();
    until_ready(&manager, "slow").await;
}

#[tokio::test(start_paused = true)]
async fn a_config_change_during_connect_replaces_the_attempt() {
    let fake = Fake::new();
    fake.script(
        "srv",
        Script {
            init_delay: Duration::from_secs(5),
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    manager.connect_servers([stdio("srv")]).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut changed = stdio("srv");
    if let mcp_config::TransportConfig::Stdio(s) = &mut changed.transport {
        s.args = vec!["--v2".into()];
    }
    let report = manager.save(changed.clone()).await.unwrap();
    assert_eq!(report.status, ServerStatus::Queued);
    until_ready(&manager, "srv").await;
    assert_eq!(fake.stats("srv").connects, 2);
    assert_eq!(
        fake.stats("srv").closed_by_client,
        1,
        "the old attempt was closed"
    );
    assert_eq!(
        manager.catalog("srv").unwrap().fingerprint(),
        fingerprint_of(&changed)
    );
}

#[tokio::test(start_paused = true)]
async fn saving_an_unchanged_ready_server_keeps_its_connection() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a")]).await;
    let lifetime = manager.catalog("a").unwrap().lifetime();
    let mut events = manager.events();
    let mut renamed = stdio("a");
    renamed.name = "Renamed".into();
    let report = manager.save(renamed).await.unwrap();
    assert!(!report.created);
    assert_eq!(report.status, ServerStatus::Ready);
    assert_eq!(manager.catalog("a").unwrap().lifetime(), lifetime);
    assert_eq!(fake.stats("a").connects, 1);
    assert_eq!(
        manager.snapshot(None).server("a").unwrap().name(),
        "Renamed"
    );
    assert_eq!(
        drain(&mut events),
        [ManagerEvent::ServerUpdated { id: "a".into() }]
    );
}

#[tokio::test(start_paused = true)]
async fn saving_an_unchanged_failed_or_pending_server_starts_a_fresh_attempt() {
    let fake = Fake::new();
    fake.script(
        "failed",
        Script {
            reject_initialize: true,
            ..Script::default()
        },
    );
    fake.script(
        "pending",
        Script {
            init_delay: Duration::from_secs(5),
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    manager
        .connect_servers([stdio("failed"), stdio("pending")])
        .await;
    until(&manager, "failed", |s| s.error().is_some()).await;
    fake.edit("failed", |s| s.reject_initialize = false);
    manager.save(stdio("failed")).await.unwrap();
    manager.save(stdio("pending")).await.unwrap();
    until_ready(&manager, "failed").await;
    until_ready(&manager, "pending").await;
    assert_eq!(fake.stats("failed").connects, 2);
    assert_eq!(fake.stats("pending").connects, 2);
}

#[tokio::test(start_paused = true)]
async fn the_first_save_of_a_stdio_server_gets_120_s_once() {
    let fake = Fake::new();
    fake.script(
        "npx",
        Script {
            init_delay: Duration::from_secs(90),
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    let started = Instant::now();
    let report = manager.save(stdio("npx")).await.unwrap();
    assert!(report.created);
    until_ready(&manager, "npx").await;
    assert_eq!(started.elapsed(), Duration::from_secs(90));
    // Once only: a retry has the ordinary 10 s.
    manager.retry("npx").unwrap();
    until(&manager, "npx", |s| s.error().is_some()).await;
    assert_eq!(error_code(&manager, "npx"), Some(ErrorCode::Timeout));
    // And an HTTP server never gets it.
    fake.script(
        "web",
        Script {
            init_delay: Duration::from_secs(90),
            ..Script::default()
        },
    );
    manager.save(http("web")).await.unwrap();
    until(&manager, "web", |s| s.error().is_some()).await;
    assert_eq!(error_code(&manager, "web"), Some(ErrorCode::Timeout));
}

#[tokio::test(start_paused = true)]
async fn removing_a_server_closes_it_and_forgets_it() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a")]).await;
    let lifetime = manager.catalog("a").unwrap().lifetime();
    let mut events = manager.events();
    manager.remove("a").await.unwrap();
    assert_eq!(manager.status("a"), None);
    assert_eq!(
        drain(&mut events),
        [
            ManagerEvent::CatalogRevoked {
                id: "a".into(),
                lifetime
            },
            ManagerEvent::ServerRemoved { id: "a".into() }
        ]
    );
    fake.until_stats("a", |s| s.closed_by_client == 1).await;
    assert_eq!(
        manager.remove("a").await.unwrap_err().code(),
        "unknown_server"
    );
}

#[tokio::test(start_paused = true)]
async fn disconnect_and_disconnect_all_settle_every_server() {
    let fake = Fake::new();
    fake.script(
        "pending",
        Script {
            hang_initialize: true,
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    manager
        .connect_servers([stdio("a"), stdio("b"), stdio("pending")])
        .await;
    until_ready(&manager, "a").await;
    until_ready(&manager, "b").await;
    manager.disconnect("a").await.unwrap();
    assert_eq!(manager.status("a"), Some(ServerStatus::Disconnected));
    let wait = manager.wait_ready("a", Instant::now()).await;
    assert_eq!(wait.unwrap_err().code(), "disconnected");

    manager.disconnect_all().await;
    for id in ["a", "b", "pending"] {
        assert_eq!(manager.status(id), Some(ServerStatus::Disconnected), "{id}");
    }
    assert!(manager.snapshot(None).is_empty());
    fake.until_stats("b", |s| s.closed_by_client == 1).await;
    fake.until_stats("pending", |s| s.closed_by_client == 1)
        .await;

    manager.retry("a").unwrap();
    until_ready(&manager, "a").await;
}

#[tokio::test(start_paused = true)]
async fn close_stops_everything_and_refuses_new_work() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a")]).await;
    manager.close().await;
    assert_eq!(manager.status("a"), Some(ServerStatus::Disconnected));
    fake.until_stats("a", |s| s.closed_by_client == 1).await;
    let report = manager.connect_servers([stdio("b")]).await;
    assert_eq!(report.error("b").unwrap().code, ErrorCode::Closed);
    assert_eq!(manager.retry("a").unwrap_err().code(), "manager_closed");
    assert_eq!(
        manager.save(stdio("c")).await.unwrap_err().code(),
        "manager_closed"
    );
    assert_eq!(fake.stats("b").connects, 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_last_handle_closes_every_connection() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    let clone = manager.clone();
    manager.connect_servers([stdio("a"), stdio("b")]).await;
    drop(manager);
    assert_eq!(
        clone.status("a"),
        Some(ServerStatus::Ready),
        "a clone keeps it alive"
    );
    drop(clone);
    fake.until_stats("a", |s| s.closed_by_client == 1).await;
    fake.until_stats("b", |s| s.closed_by_client == 1).await;
}

#[tokio::test(start_paused = true)]
async fn wait_ready_waits_for_pending_servers_and_fails_fast_otherwise() {
    let fake = Fake::new();
    fake.script(
        "slow",
        Script {
            init_delay: Duration::from_secs(3),
            ..Script::default()
        },
    );
    fake.script(
        "broken",
        Script {
            reject_initialize: true,
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    manager
        .connect_servers([stdio("slow"), stdio("broken")])
        .await;
    let started = Instant::now();
    let timeout = manager
        .wait_ready("slow", started + Duration::from_secs(1))
        .await;
    assert_eq!(
        timeout.unwrap_err(),
        WaitError::Timeout { id: "slow".into() }
    );
    let connected = manager
        .wait_ready("slow", started + Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!(connected.catalog.tools().len(), 2);

    until(&manager, "broken", |s| s.error().is_some()).await;
    let failed = manager
        .wait_ready("broken", Instant::now() + Duration::from_secs(10))
        .await
        .unwrap_err();
    assert_eq!(failed.code(), "protocol");
    assert_eq!(
        manager
            .wait_ready("nobody", Instant::now())
            .await
            .unwrap_err()
            .code(),
        "unknown_server"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cache_write_that_is_due_survives_the_server_being_stopped() {
    let fake = Fake::new();
    let cache = std::sync::Arc::new(crate::MemoryToolCache::new());
    let manager = manager_with_cache(
        &fake,
        ManagerOptions::default(),
        std::sync::Arc::clone(&cache),
    );
    manager.connect_servers([stdio("a")]).await;
    // Stopped at once: the write queued at the swap still lands.
    manager.set_enabled("a", false).await.unwrap();
    manager.flush_cache().await;
    let cached = crate::ToolCache::load(cache.as_ref(), &fingerprint_of(&stdio("a"))).await;
    assert_eq!(cached.unwrap().tools.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn without_a_store_configuration_changes_apply_in_memory() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    assert_eq!(manager.load_store().await.unwrap_err().code(), "no_store");
    let mut secret = stdio("a");
    if let mcp_config::TransportConfig::Stdio(s) = &mut secret.transport {
        s.env
            .push(mcp_config::SecretEntry::new("TOKEN", "sk-IN-MEMORY-SECRET"));
    }
    let report = manager.create(secret).await.unwrap();
    assert!(report.created);
    assert_eq!(
        manager.create(stdio("a")).await.unwrap_err().code(),
        "duplicate_id"
    );
    until_ready(&manager, "a").await;
    let listed = manager.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, ServerStatus::Ready);
    assert!(!format!("{listed:?}").contains("sk-IN-MEMORY-SECRET"));

    let mut invalid = stdio("b");
    if let mcp_config::TransportConfig::Stdio(s) = &mut invalid.transport {
        s.command.clear();
    }
    let error = manager.save(invalid).await.unwrap_err();
    assert_eq!(error.code(), "invalid_config");
    assert_eq!(manager.status("b"), None);
    assert_eq!(
        manager
            .set_enabled("nobody", false)
            .await
            .unwrap_err()
            .code(),
        "unknown_server"
    );
    assert_eq!(
        manager.retry("nobody").unwrap_err().code(),
        "unknown_server"
    );
    manager.set_enabled("a", false).await.unwrap();
    assert_eq!(manager.retry("a").unwrap_err().code(), "disabled");
}

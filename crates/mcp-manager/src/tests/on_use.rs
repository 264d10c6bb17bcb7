//! Servers that start on use: lazy start from the tool cache, idle servers that keep offering their tools, and restart on next use.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::support::*;
use crate::{
    CachedTools, ErrorCode, IdlePolicy, ManagerOptions, MemoryToolCache, ReconnectPolicy,
    RestartPolicy, ServerStatus, ToolCache, WaitError,
};

fn lazy() -> ManagerOptions {
    ManagerOptions {
        lazy: true,
        ..ManagerOptions::default()
    }
}

fn on_use() -> ManagerOptions {
    ManagerOptions {
        restart: RestartPolicy::OnUse,
        ..ManagerOptions::default()
    }
}

/// A cache that knows `ids`' configurations, each with `n` tools.
async fn cache_of(ids: &[&str], n: usize) -> Arc<MemoryToolCache> {
    let cache = Arc::new(MemoryToolCache::new());
    for id in ids {
        cache
            .store(
                &fingerprint_of(&stdio(id)),
                CachedTools::new(*id, tools("cached", n)),
            )
            .await;
    }
    cache
}

fn deferred_ids(manager: &crate::McpManager) -> Vec<(String, usize)> {
    let mut ids: Vec<(String, usize)> = manager
        .deferred()
        .into_iter()
        .map(|d| (d.id, d.tools.len()))
        .collect();
    ids.sort();
    ids
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

#[tokio::test(start_paused = true)]
async fn a_lazy_start_starts_no_cached_server_and_the_first_use_starts_it() {
    let fake = Fake::new();
    let cache = cache_of(&["a", "b"], 3).await;
    let manager = manager_with_cache(&fake, lazy(), cache);

    let report = manager
        .connect_servers([stdio("a"), stdio("b"), stdio("new")])
        .await;
    // "new" has no cache entry: it is started and waited for, as without
    // the option; the others are not started at all.
    assert_eq!(report.elapsed, Duration::ZERO);
    let ready: Vec<&str> = report.ready.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ready, ["new"]);
    let deferred: Vec<(&str, usize, &str)> = report
        .deferred
        .iter()
        .map(|d| (d.id.as_str(), d.tools.len(), d.status.as_str()))
        .collect();
    assert_eq!(deferred, [("a", 3, "idle"), ("b", 3, "idle")]);
    assert_eq!(report.tools().count(), 2 + 3 + 3);
    for id in ["a", "b"] {
        assert_eq!(fake.stats(id).connects, 0, "{id} was started");
        assert_eq!(manager.status(id), Some(ServerStatus::Idle));
        assert!(manager.starts_on_use(id));
    }
    assert_eq!(deferred_ids(&manager), [("a".into(), 3), ("b".into(), 3)]);

    // The first use starts it; the live catalog replaces the cached tools.
    let connected = manager.wait_ready("a", soon()).await.unwrap();
    assert_eq!(connected.catalog.tools().len(), 2);
    assert_eq!(fake.stats("a").connects, 1);
    assert_eq!(fake.stats("b").connects, 0);
    assert_eq!(deferred_ids(&manager), [("b".into(), 3)]);
    assert!(!manager.starts_on_use("a"));
}

#[tokio::test(start_paused = true)]
async fn a_lazy_server_keeps_offering_its_tools_while_it_connects() {
    let fake = Fake::new();
    fake.script(
        "slow",
        Script {
            init_delay: Duration::from_secs(5),
            ..Script::default()
        },
    );
    let manager = manager_with_cache(&fake, lazy(), cache_of(&["slow"], 4).await);
    manager.connect_servers([stdio("slow")]).await;

    let waiter = {
        let manager = manager.clone();
        tokio::spawn(async move { manager.wait_ready("slow", soon()).await.map(|_| ()) })
    };
    until(&manager, "slow", |s| *s == ServerStatus::Connecting).await;
    // A binding made meanwhile still offers the cached tools.
    assert_eq!(deferred_ids(&manager), [("slow".into(), 4)]);
    waiter.await.unwrap().unwrap();
    assert!(manager.deferred().is_empty());
}

#[tokio::test(start_paused = true)]
async fn without_the_option_or_without_a_cache_every_server_starts() {
    let fake = Fake::new();
    let eager = manager_with_cache(&fake, ManagerOptions::default(), cache_of(&["a"], 3).await);
    let report = eager.connect_servers([stdio("a")]).await;
    assert_eq!(report.ready.len(), 1);
    assert_eq!(fake.stats("a").connects, 1);

    let no_cache = manager(&fake, lazy());
    let report = no_cache.connect_servers([stdio("b")]).await;
    assert_eq!(report.ready.len(), 1);
    assert_eq!(fake.stats("b").connects, 1);
}

#[tokio::test(start_paused = true)]
async fn a_lazy_server_stops_again_when_idle_and_offers_the_tools_it_had() {
    let fake = Fake::new();
    let options = ManagerOptions {
        idle: IdlePolicy::on(),
        ..lazy()
    };
    let manager = manager_with_cache(&fake, options, cache_of(&["a"], 3).await);
    manager.connect_servers([stdio("a")]).await;
    manager.wait_ready("a", soon()).await.unwrap();

    until(&manager, "a", |s| *s == ServerStatus::Idle).await;
    fake.until_stats("a", |s| s.closed_by_client == 1).await;
    assert!(manager.catalog("a").is_none());
    // The live catalog had 2 tools; those are offered now, not the cache's 3.
    assert_eq!(deferred_ids(&manager), [("a".into(), 2)]);
    assert!(manager.starts_on_use("a"));

    manager.wait_ready("a", soon()).await.unwrap();
    assert_eq!(fake.stats("a").connects, 2);
}

#[tokio::test(start_paused = true)]
async fn a_rediscovery_leaves_an_idle_server_idle() {
    let fake = Fake::new();
    let manager = manager_with_cache(&fake, lazy(), cache_of(&["a"], 3).await);
    manager.connect_servers([stdio("a")]).await;
    let report = manager.connect_servers([stdio("a")]).await;
    assert_eq!(report.deferred.len(), 1);
    assert_eq!(fake.stats("a").connects, 0);
}

#[tokio::test(start_paused = true)]
async fn a_dead_server_is_started_again_by_its_next_use_under_restart_on_use() {
    let fake = Fake::new();
    let manager = manager(&fake, on_use());
    manager.connect_servers([stdio("a")]).await;
    fake.control("a", Control::Close);
    until(&manager, "a", |s| s.error().is_some()).await;

    // Reported as dead until something needs it, and nothing restarts it
    // on its own.
    assert_eq!(error_code(&manager, "a"), Some(ErrorCode::Closed));
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(fake.stats("a").connects, 1);
    assert!(manager.starts_on_use("a"));
    assert_eq!(deferred_ids(&manager), [("a".into(), 2)]);

    let connected = manager.wait_ready("a", soon()).await.unwrap();
    assert_eq!(connected.catalog.tools().len(), 2);
    assert_eq!(fake.stats("a").connects, 2);
    assert!(manager.deferred().is_empty());
}

#[tokio::test(start_paused = true)]
async fn restart_on_use_tries_once_per_use() {
    let fake = Fake::new();
    let manager = manager(&fake, on_use());
    manager.connect_servers([stdio("a")]).await;
    fake.edit("a", |s| s.reject_initialize = true);
    fake.control("a", Control::Close);
    until(&manager, "a", |s| s.error().is_some()).await;

    // The start this use makes fails: that failure is the answer.
    let error = manager.wait_ready("a", soon()).await.unwrap_err();
    assert!(
        matches!(&error, WaitError::Failed { error, .. } if error.code == ErrorCode::Protocol),
        "{error:?}"
    );
    assert_eq!(fake.stats("a").initializes, 2);
    // The next use tries once more.
    fake.edit("a", |s| s.reject_initialize = false);
    manager.wait_ready("a", soon()).await.unwrap();
    assert_eq!(fake.stats("a").initializes, 3);
}

#[tokio::test(start_paused = true)]
async fn restart_on_use_leaves_configuration_errors_and_the_default_leaves_everything() {
    let fake = Fake::new();
    let manager = manager(&fake, on_use());
    fake.edit("auth", |s| s.reject_auth = true);
    manager.connect_servers([http("auth")]).await;
    let code = error_code(&manager, "auth").unwrap();
    assert!(code.is_config_error(), "{code}");
    assert!(!manager.starts_on_use("auth"));
    let connects = fake.stats("auth").connects;
    assert!(manager.wait_ready("auth", soon()).await.is_err());
    assert_eq!(fake.stats("auth").connects, connects);

    let never = manager_for_default(&fake);
    never.connect_servers([stdio("b")]).await;
    fake.control("b", Control::Close);
    until(&never, "b", |s| s.error().is_some()).await;
    assert!(!never.starts_on_use("b"));
    assert!(never.deferred().is_empty());
    assert!(never.wait_ready("b", soon()).await.is_err());
    assert_eq!(fake.stats("b").connects, 1);
}

fn manager_for_default(fake: &Fake) -> crate::McpManager {
    manager(fake, ManagerOptions::default())
}

#[tokio::test(start_paused = true)]
async fn a_scheduled_reconnect_comes_before_restart_on_use() {
    let fake = Fake::new();
    let options = ManagerOptions {
        reconnect: ReconnectPolicy::on(),
        ..on_use()
    };
    let manager = manager(&fake, options);
    manager.connect_servers([stdio("a")]).await;
    fake.control("a", Control::Close);
    until(&manager, "a", |s| s.is_pending()).await;
    assert!(!manager.starts_on_use("a"));
    // The policy's reconnect (after 1 s) brings it back without a use.
    until(&manager, "a", |s| *s == ServerStatus::Ready).await;
    assert_eq!(fake.stats("a").connects, 2);
}

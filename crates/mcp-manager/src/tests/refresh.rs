//! Keeping catalogs fresh: `list_changed` refreshes, coalescing, lifetimes, failed refreshes.

use std::sync::Arc;
use std::time::Duration;

use mcp_proto::methods;
use tokio::time::Instant;

use super::support::*;
use crate::{ErrorCode, ManagerEvent, ManagerOptions, MemoryToolCache, ServerStatus, ToolCache};

fn names(manager: &crate::McpManager, id: &str) -> Vec<String> {
    manager
        .catalog(id)
        .map(|c| c.tool_names().map(str::to_owned).collect())
        .unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn list_changed_refreshes_on_the_same_connection_with_a_new_lifetime() {
    let fake = Fake::new();
    let cache = Arc::new(MemoryToolCache::new());
    let manager = manager_with_cache(&fake, ManagerOptions::default(), Arc::clone(&cache));
    manager.connect_servers([stdio("a"), stdio("b")]).await;
    let before = manager.catalog("a").unwrap();
    let b_lifetime = manager.catalog("b").unwrap().lifetime();
    let snapshot_before = manager.snapshot(None);
    let mut events = manager.events();

    fake.edit("a", |s| s.tools = tools("new", 3));
    fake.control(
        "a",
        Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
    );
    fake.until_stats("a", |s| s.list_calls == 2).await;
    until_ready(&manager, "a").await;

    let events = drain(&mut events);
    assert_eq!(statuses_of(&events, "a"), ["refreshing", "ready"]);
    let after = manager.catalog("a").unwrap();
    assert_ne!(after.lifetime(), before.lifetime());
    assert!(events.contains(&ManagerEvent::CatalogSwapped {
        id: "a".into(),
        lifetime: after.lifetime(),
        previous: Some(before.lifetime()),
        tools: 3,
        truncated: false,
    }));
    assert_eq!(names(&manager, "a"), ["new_0000", "new_0001", "new_0002"]);
    assert_eq!(fake.stats("a").connects, 1, "same connection");
    assert_eq!(
        manager.catalog("b").unwrap().lifetime(),
        b_lifetime,
        "others untouched"
    );
    // A snapshot taken before keeps the catalog it saw.
    assert_eq!(snapshot_before.server("a").unwrap().tool_names().len(), 2);
    manager.flush_cache().await;
    assert_eq!(
        cache
            .load(&fingerprint_of(&stdio("a")))
            .await
            .unwrap()
            .tools
            .len(),
        3
    );
}

#[tokio::test(start_paused = true)]
async fn a_storm_of_100_notifications_in_1_s_ends_in_at_most_two_refreshes() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("stormy")]).await;
    let mut events = manager.events();
    let started = Instant::now();
    for i in 0..100u64 {
        tokio::time::sleep_until(started + Duration::from_millis(i * 9)).await;
        fake.edit("stormy", |s| s.tools = tools("storm", i as usize + 1));
        fake.control(
            "stormy",
            Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
        );
    }
    until_ready(&manager, "stormy").await;
    let refreshes = fake.stats("stormy").list_calls - 1;
    assert!((1..=2).contains(&refreshes), "{refreshes} refreshes");
    assert_eq!(names(&manager, "stormy").len(), 100, "the final catalog");
    assert_eq!(swaps_of(&drain(&mut events), "stormy"), refreshes);
}

#[tokio::test(start_paused = true)]
async fn notifications_during_a_refresh_coalesce_into_one_more_pass() {
    let fake = Fake::new();
    let options = ManagerOptions {
        refresh_min_interval: Duration::ZERO,
        ..ManagerOptions::default()
    };
    let manager = manager(&fake, options);
    manager.connect_servers([stdio("a")]).await;
    fake.edit("a", |s| s.list_delay = Duration::from_secs(1));
    fake.control(
        "a",
        Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
    );
    fake.until_stats("a", |s| s.list_calls == 2).await;
    // The first pass is in flight; five more notifications arrive.
    fake.edit("a", |s| s.tools = tools("late", 5));
    for _ in 0..5 {
        fake.control(
            "a",
            Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
        );
    }
    fake.until_stats("a", |s| s.list_calls == 3).await;
    until_ready(&manager, "a").await;
    // Nothing more is scheduled: a day later there was no fourth pass.
    tokio::time::sleep(Duration::from_secs(86_400)).await;
    assert_eq!(fake.stats("a").list_calls, 3);
    assert_eq!(names(&manager, "a").len(), 5);
}

#[tokio::test(start_paused = true)]
async fn the_first_notification_is_acted_on_at_once_and_later_ones_wait_the_interval() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a")]).await;
    let started = Instant::now();
    fake.control(
        "a",
        Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
    );
    fake.until_stats("a", |s| s.list_calls == 2).await;
    assert_eq!(started.elapsed(), Duration::ZERO);
    until_ready(&manager, "a").await;
    fake.control(
        "a",
        Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
    );
    fake.until_stats("a", |s| s.list_calls == 3).await;
    assert_eq!(started.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn resources_and_prompts_changes_refresh_only_their_list() {
    let fake = Fake::new();
    fake.script(
        "rich",
        Script {
            resources: Some(vec![serde_json::json!({"uri": "file:///a", "name": "a"})]),
            ..Script::default()
        },
    );
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("rich")]).await;
    fake.edit("rich", |s| {
        s.resources = Some(vec![
            serde_json::json!({"uri": "file:///a", "name": "a"}),
            serde_json::json!({"uri": "file:///b", "name": "b"}),
        ])
    });
    let mut events = manager.events();
    fake.control(
        "rich",
        Control::Notify(methods::NOTIFICATION_RESOURCES_LIST_CHANGED),
    );
    let mut seen = Vec::new();
    while !seen.contains(&"ready") {
        let event = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("an event")
            .expect("the manager is alive");
        if let ManagerEvent::StatusChanged { status, .. } = &event {
            seen.push(status.as_str());
        }
        if matches!(event, ManagerEvent::CatalogSwapped { .. }) {
            seen.push("swapped");
        }
    }
    assert_eq!(seen, ["refreshing", "swapped", "ready"]);
    assert_eq!(
        manager.catalog("rich").unwrap().resources().unwrap().len(),
        2
    );
    assert_eq!(
        fake.stats("rich").list_calls,
        1,
        "tools were not listed again"
    );
    assert!(drain(&mut events).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_failed_refresh_closes_the_connection_and_leaves_the_config_alone() {
    let fake = Fake::new();
    fake.script(
        "flaky",
        Script {
            fail_list_after: Some(1),
            ..Script::default()
        },
    );
    let options = ManagerOptions {
        reconnect: crate::ReconnectPolicy::on(),
        ..ManagerOptions::default()
    };
    let manager = manager(&fake, options);
    manager
        .connect_servers([stdio("flaky"), stdio("other")])
        .await;
    let other = manager.catalog("other").unwrap().lifetime();
    let lifetime = manager.catalog("flaky").unwrap().lifetime();
    let mut events = manager.events();

    fake.control(
        "flaky",
        Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
    );
    until(&manager, "flaky", |s| s.error().is_some()).await;
    let status = manager.status("flaky").unwrap();
    let ServerStatus::Error { error, retry } = &status else {
        unreachable!()
    };
    assert_eq!(error.code, ErrorCode::RefreshFailed);
    assert_eq!(
        *retry, None,
        "a failed refresh is never retried automatically"
    );
    assert!(manager.catalog("flaky").is_none(), "its tools are gone");
    assert!(manager.server("flaky").is_none());
    assert!(drain(&mut events).contains(&ManagerEvent::CatalogRevoked {
        id: "flaky".into(),
        lifetime
    }));
    fake.until_stats("flaky", |s| s.closed_by_client == 1).await;
    assert_eq!(manager.catalog("other").unwrap().lifetime(), other);
    assert!(manager.snapshot(None).server("flaky").is_none());
    // The configuration is intact: Retry connects it again.
    fake.edit("flaky", |s| s.fail_list_after = None);
    manager.retry("flaky").unwrap();
    until_ready(&manager, "flaky").await;
    assert_eq!(fake.stats("flaky").connects, 2);
}

#[tokio::test(start_paused = true)]
async fn a_refresh_that_takes_too_long_fails_after_its_deadline() {
    let fake = Fake::new();
    let options = ManagerOptions {
        list_page_timeout: Duration::from_secs(60),
        ..ManagerOptions::default()
    };
    let manager = manager(&fake, options);
    manager.connect_servers([stdio("slow")]).await;
    fake.edit("slow", |s| s.list_delay = Duration::from_secs(30));
    let started = Instant::now();
    fake.control(
        "slow",
        Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
    );
    until(&manager, "slow", |s| s.error().is_some()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(15));
    let error = manager.status("slow").unwrap().error().unwrap().clone();
    assert_eq!(error.code, ErrorCode::RefreshFailed);
    assert_eq!(
        error.message,
        "the catalog refresh did not finish within 15 s"
    );
}

#[tokio::test(start_paused = true)]
async fn during_a_refresh_the_old_catalog_stays_current_and_in_snapshots() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a")]).await;
    let lifetime = manager.catalog("a").unwrap().lifetime();
    fake.edit("a", |s| s.list_delay = Duration::from_secs(5));
    fake.control(
        "a",
        Control::Notify(methods::NOTIFICATION_TOOLS_LIST_CHANGED),
    );
    until(&manager, "a", |s| *s == ServerStatus::Refreshing).await;
    let snapshot = manager.snapshot(None);
    assert_eq!(snapshot.server("a").unwrap().lifetime(), lifetime);
    assert!(manager.server("a").is_some());
    until_ready(&manager, "a").await;
    assert_ne!(manager.catalog("a").unwrap().lifetime(), lifetime);
}

#[tokio::test(start_paused = true)]
async fn a_url_elicitations_completion_becomes_an_event_with_its_id_bounded() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a")]).await;
    let mut events = manager.events();
    // In order: malformed params (no elicitationId) are no event; then an
    // ordinary id; then one past the limit.
    let long = "é".repeat(crate::ELICITATION_ID_LIMIT);
    for params in [
        serde_json::json!({"id": "e-0"}),
        serde_json::json!({"elicitationId": "e-1"}),
        serde_json::json!({"elicitationId": long}),
    ] {
        fake.control(
            "a",
            Control::NotifyWith(methods::NOTIFICATION_ELICITATION_COMPLETE, params),
        );
    }
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("an event within 5 s")
            .unwrap();
        if let ManagerEvent::ElicitationComplete { id, elicitation_id } = event {
            assert_eq!(id, "a");
            seen.push(elicitation_id);
        }
    }
    assert_eq!(seen[0], "e-1");
    assert_eq!(
        seen[1],
        format!(
            "{}… [{} more bytes]",
            "é".repeat(crate::ELICITATION_ID_LIMIT / 2),
            crate::ELICITATION_ID_LIMIT
        ),
        "cut at the limit, marked"
    );
    assert_eq!(manager.status("a").unwrap().as_str(), "ready", "no refresh");
}

#[tokio::test(start_paused = true)]
async fn log_messages_and_resource_updates_become_events_of_their_server() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a"), stdio("b")]).await;
    let mut events = manager.events();

    fake.control(
        "a",
        Control::NotifyWith(
            methods::NOTIFICATION_MESSAGE,
            serde_json::json!({"level": "warning", "logger": "db", "data": {"rows": 3}}),
        ),
    );
    fake.control(
        "b",
        Control::NotifyWith(
            methods::NOTIFICATION_RESOURCES_UPDATED,
            serde_json::json!({"uri": "file:///notes.txt"}),
        ),
    );
    // Malformed params (no level) are not an event.
    fake.control(
        "a",
        Control::NotifyWith(
            methods::NOTIFICATION_MESSAGE,
            serde_json::json!({"data": 1}),
        ),
    );
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("an event within 5 s")
            .unwrap();
        if matches!(
            event,
            ManagerEvent::Log { .. } | ManagerEvent::ResourceUpdated { .. }
        ) {
            seen.push(event);
        }
    }
    seen.sort_by(|x, y| x.server_id().cmp(y.server_id()));
    assert_eq!(
        seen,
        [
            ManagerEvent::Log {
                id: "a".into(),
                level: mcp_proto::types::LoggingLevel::Warning,
                logger: Some("db".into()),
                data: serde_json::json!({"rows": 3}),
            },
            ManagerEvent::ResourceUpdated {
                id: "b".into(),
                uri: "file:///notes.txt".into(),
            },
        ]
    );
    assert_eq!(manager.status("a").unwrap().as_str(), "ready", "no refresh");
}

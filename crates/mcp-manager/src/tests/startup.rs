//! Startup: the gate, background mode, the 3-at-once limit, deadlines and per-server failures.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::support::*;
use crate::{
    CachedTools, ErrorCode, ManagerEvent, ManagerOptions, McpManager, MemoryToolCache,
    ServerStatus, ToolCache,
};

#[tokio::test(start_paused = true)]
async fn gate_returns_after_250_ms_with_ready_errors_and_cached_deferred_tools() {
    let fake = Fake::new();
    fake.script("fast", Script::default());
    fake.script(
        "refused",
        Script {
            reject_initialize: true,
            ..Script::default()
        },
    );
    fake.script(
        "hung",
        Script {
            hang_initialize: true,
            ..Script::default()
        },
    );
    fake.script(
        "slow",
        Script {
            init_delay: Duration::from_secs(2),
            tools: tools("fresh", 3),
            ..Script::default()
        },
    );
    let cache = Arc::new(MemoryToolCache::new());
    for id in ["hung", "slow"] {
        cache
            .store(
                &fingerprint_of(&stdio(id)),
                CachedTools::new(id, tools("cached", 4)),
            )
            .await;
    }
    let manager = manager_with_cache(&fake, ManagerOptions::default(), Arc::clone(&cache));
    let mut events = manager.events();

    let started = Instant::now();
    let report = manager
        .connect_servers(["fast", "refused", "hung", "slow"].map(stdio))
        .await;
    assert_eq!(started.elapsed(), Duration::from_millis(250));
    assert_eq!(report.elapsed, Duration::from_millis(250));

    let ready: Vec<&str> = report.ready.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ready, ["fast"]);
    assert_eq!(
        report.error("refused").map(|e| e.code),
        Some(ErrorCode::Protocol)
    );
    let deferred: Vec<(&str, usize)> = report
        .deferred
        .iter()
        .map(|d| (d.id.as_str(), d.tools.len()))
        .collect();
    assert_eq!(deferred, [("hung", 4), ("slow", 4)]);
    assert_eq!(report.tools().count(), 2 + 4 + 4);

    // The late result replaces that server's slice and refreshes the cache.
    until_ready(&manager, "slow").await;
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    let names: Vec<String> = manager
        .catalog("slow")
        .unwrap()
        .tool_names()
        .map(str::to_owned)
        .collect();
    assert_eq!(names, ["fresh_0000", "fresh_0001", "fresh_0002"]);
    manager.flush_cache().await;
    let cached = cache.load(&fingerprint_of(&stdio("slow"))).await.unwrap();
    assert_eq!(cached.tools.len(), 3);
    assert!(drain(&mut events).iter().any(|e| matches!(
        e,
        ManagerEvent::CatalogSwapped { id, tools: 3, .. } if id == "slow"
    )));

    // The hung one fails late, at its initialize deadline; its cache entry stays.
    until(&manager, "hung", |s| s.error().is_some()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert_eq!(error_code(&manager, "hung"), Some(ErrorCode::Timeout));
    assert_eq!(
        manager.status("hung").unwrap().error().unwrap().config_key,
        "timeout"
    );
    assert!(cache.load(&fingerprint_of(&stdio("hung"))).await.is_some());
    assert_eq!(fake.stats("fast").connects, 1);
}

#[tokio::test(start_paused = true)]
async fn gate_waits_for_a_pending_server_without_a_cache_entry() {
    let fake = Fake::new();
    fake.script(
        "slow",
        Script {
            init_delay: Duration::from_secs(3),
            ..Script::default()
        },
    );
    let manager = manager_with_cache(
        &fake,
        ManagerOptions::default(),
        Arc::new(MemoryToolCache::new()),
    );
    let report = manager.connect_servers([stdio("slow")]).await;
    assert_eq!(report.elapsed, Duration::from_secs(3));
    assert_eq!(report.ready.len(), 1);
    assert!(report.deferred.is_empty() && report.pending.is_empty());
}

#[tokio::test(start_paused = true)]
async fn gate_returns_early_when_everything_settles() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    let report = manager.connect_servers([stdio("a"), stdio("b")]).await;
    assert_eq!(report.elapsed, Duration::ZERO);
    assert_eq!(report.ready.len(), 2);
    let empty = manager.connect_servers(Vec::new()).await;
    assert!(empty.ready.is_empty() && empty.elapsed == Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn background_mode_never_waits_and_ready_servers_join_later_snapshots() {
    let fake = Fake::new();
    fake.script(
        "slow",
        Script {
            init_delay: Duration::from_secs(1),
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    let report = manager.connect_servers([stdio("slow")]).await;
    assert_eq!(report.elapsed, Duration::ZERO);
    assert_eq!(report.pending.len(), 1);
    assert!(manager.snapshot(None).is_empty());
    until_ready(&manager, "slow").await;
    assert_eq!(manager.snapshot(None).servers().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn never_more_than_three_initialize_at_once_and_the_rest_are_queued() {
    let fake = Fake::new();
    let ids: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
    for id in &ids {
        fake.script(
            id,
            Script {
                init_delay: Duration::from_secs(1),
                ..Script::default()
            },
        );
    }
    let manager = manager(&fake, ManagerOptions::default());
    let mut events = manager.events();
    let report = manager
        .connect_servers(ids.iter().map(|id| stdio(id)))
        .await;
    // Four rounds of three, one second each.
    assert_eq!(report.elapsed, Duration::from_secs(4));
    assert_eq!(report.ready.len(), 10);
    assert_eq!(fake.max_initializing(), 3);
    let events = drain(&mut events);
    let queued = ids
        .iter()
        .filter(|id| statuses_of(&events, id).contains(&"connecting"))
        .filter(|id| statuses_of(&events, id)[..2] == ["queued", "connecting"])
        .count();
    assert_eq!(queued, 10, "every server starts queued, then connects");
}

#[tokio::test(start_paused = true)]
async fn the_limit_is_an_option() {
    let fake = Fake::new();
    for i in 0..4 {
        fake.script(
            &format!("s{i}"),
            Script {
                init_delay: Duration::from_secs(1),
                ..Script::default()
            },
        );
    }
    let options = ManagerOptions {
        max_concurrent_connects: 1,
        ..ManagerOptions::default()
    };
    let manager = manager(&fake, options);
    let report = manager
        .connect_servers((0..4).map(|i| stdio(&format!("s{i}"))))
        .await;
    assert_eq!(report.elapsed, Duration::from_secs(4));
    assert_eq!(fake.max_initializing(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_server_without_the_tools_capability_is_ready_with_zero_tools() {
    let fake = Fake::new();
    fake.script(
        "plain",
        Script {
            tools_capability: false,
            ..Script::default()
        },
    );
    let manager = manager(&fake, ManagerOptions::default());
    let report = manager.connect_servers([stdio("plain")]).await;
    assert_eq!(report.ready.len(), 1);
    assert_eq!(manager.status("plain"), Some(ServerStatus::Ready));
    assert!(manager.catalog("plain").unwrap().tools().is_empty());
    assert_eq!(
        fake.stats("plain").list_calls,
        0,
        "tools/list is never called"
    );
    assert!(
        manager.snapshot(None).is_empty(),
        "zero-tool servers are omitted"
    );
}

#[tokio::test(start_paused = true)]
async fn resources_and_prompts_are_listed_only_when_declared_and_asked_for() {
    let fake = Fake::new();
    fake.script(
        "rich",
        Script {
            resources: Some(vec![serde_json::json!({"uri": "file:///a", "name": "a"})]),
            prompts: Some(vec![serde_json::json!({"name": "greet"})]),
            instructions: Some("Use me wisely.".into()),
            ..Script::default()
        },
    );
    fake.script("bare", Script::default());
    let manager = manager(&fake, ManagerOptions::default());
    manager
        .connect_servers([stdio("rich"), stdio("bare")])
        .await;
    let rich = manager.catalog("rich").unwrap();
    assert_eq!(rich.resources().unwrap()[0].uri, "file:///a");
    assert_eq!(rich.prompts().unwrap()[0].name, "greet");
    assert_eq!(rich.instructions(), Some("Use me wisely."));
    let bare = manager.catalog("bare").unwrap();
    assert!(bare.resources().is_none() && bare.prompts().is_none());

    // The policy: tools only.
    let fake = Fake::new();
    fake.script(
        "rich",
        Script {
            resources: Some(vec![serde_json::json!({"uri": "file:///a", "name": "a"})]),
            ..Script::default()
        },
    );
    let options = ManagerOptions {
        list_resources: false,
        list_prompts: false,
        ..ManagerOptions::default()
    };
    let manager = super::support::manager(&fake, options);
    manager.connect_servers([stdio("rich")]).await;
    assert!(manager.catalog("rich").unwrap().resources().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_missing_variable_fails_that_server_only() {
    let fake = Fake::new();
    let mut broken = stdio("broken");
    if let mcp_config::TransportConfig::Stdio(s) = &mut broken.transport {
        s.args = vec!["--token=${NOT_SET_ANYWHERE}".into()];
    }
    let manager = manager(&fake, ManagerOptions::default());
    let report = manager.connect_servers([broken, stdio("fine")]).await;
    let error = report.error("broken").unwrap();
    assert_eq!(error.code, ErrorCode::MissingEnv);
    assert_eq!(error.config_key, "transport.args[0]");
    assert!(error.message.contains("NOT_SET_ANYWHERE"));
    assert_eq!(report.ready.len(), 1);
    assert_eq!(fake.stats("broken").connects, 0, "nothing is spawned");
}

#[tokio::test(start_paused = true)]
async fn connect_failures_carry_the_factorys_code_and_key() {
    let fake = Fake::new();
    fake.script(
        "gone",
        Script {
            connect_error: Some(ErrorCode::MissingCommand),
            ..Script::default()
        },
    );
    let manager = manager(&fake, ManagerOptions::default());
    let report = manager.connect_servers([stdio("gone")]).await;
    let error = report.error("gone").unwrap();
    assert_eq!(error.code, ErrorCode::MissingCommand);
    assert_eq!(error.config_key, "transport.command");
}

#[tokio::test(start_paused = true)]
async fn initialize_deadline_defaults_to_10_s_and_the_servers_timeout_overrides_it() {
    let fake = Fake::new();
    for id in ["default", "custom"] {
        fake.script(
            id,
            Script {
                hang_initialize: true,
                ..Script::default()
            },
        );
    }
    let mut custom = stdio("custom");
    custom.timeout_ms = Some(2_000);
    let manager = manager(&fake, background());
    let started = Instant::now();
    manager.connect_servers([stdio("default"), custom]).await;
    until(&manager, "custom", |s| s.error().is_some()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    until(&manager, "default", |s| s.error().is_some()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    let error = manager.status("default").unwrap().error().unwrap().clone();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert_eq!(error.message, "initialize did not finish within 10 s");
}

#[tokio::test(start_paused = true)]
async fn each_tools_list_page_has_10_s() {
    let fake = Fake::new();
    fake.script(
        "slowlist",
        Script {
            list_delay: Duration::from_secs(11),
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    let started = Instant::now();
    manager.connect_servers([stdio("slowlist")]).await;
    until(&manager, "slowlist", |s| s.error().is_some()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    let error = manager.status("slowlist").unwrap().error().unwrap().clone();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert!(error.message.contains("tools/list"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn the_whole_discovery_has_15_s() {
    let fake = Fake::new();
    fake.script(
        "paged",
        Script {
            init_delay: Duration::from_secs(6),
            list_delay: Duration::from_secs(6),
            page_size: Some(1),
            tools: tools("t", 3),
            ..Script::default()
        },
    );
    let manager = manager(&fake, background());
    let started = Instant::now();
    manager.connect_servers([stdio("paged")]).await;
    until(&manager, "paged", |s| s.error().is_some()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(15));
    let error = manager.status("paged").unwrap().error().unwrap().clone();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert_eq!(error.message, "discovery did not finish within 15 s");
}

#[tokio::test(start_paused = true)]
async fn queue_time_does_not_count_against_the_discovery_deadline() {
    let fake = Fake::new();
    for i in 0..4 {
        fake.script(
            &format!("s{i}"),
            Script {
                init_delay: Duration::from_secs(9),
                ..Script::default()
            },
        );
    }
    let manager = manager(&fake, ManagerOptions::default());
    let report = manager
        .connect_servers((0..4).map(|i| stdio(&format!("s{i}"))))
        .await;
    // The fourth waited 9 s in the queue, then took 9 s itself: 18 s > 15 s.
    assert_eq!(report.elapsed, Duration::from_secs(18));
    assert_eq!(report.ready.len(), 4, "{:?}", report.errors);
}

#[tokio::test(start_paused = true)]
async fn rejected_credentials_are_auth_rejected_and_no_secret_leaks() {
    const SECRET: &str = "sk-SECRET-TOKEN-4242";
    let fake = Fake::new();
    fake.script(
        "api",
        Script {
            reject_auth: true,
            ..Script::default()
        },
    );
    let mut config = http("api");
    if let mcp_config::TransportConfig::Http(h) = &mut config.transport {
        h.bearer_token_env = Some("API_TOKEN".into());
        h.headers
            .push(mcp_config::SecretEntry::new("X-Api-Key", SECRET));
    }
    let manager = McpManager::builder()
        .factory(fake.clone())
        .environment(HashMap::from([("API_TOKEN".to_owned(), SECRET.to_owned())]))
        .build();
    let mut events = manager.events();
    let report = manager.connect_servers([config]).await;
    let error = report.error("api").unwrap();
    assert_eq!(error.code, ErrorCode::AuthRejected);
    assert_eq!(error.config_key, "transport.bearerTokenEnv");

    let everything = format!(
        "{report:?} {:?} {:?} {manager:?} {:?}",
        drain(&mut events),
        manager.servers(),
        manager.list().await.unwrap(),
    );
    for secret in [SECRET, "sk-SECRET-FROM-BODY"] {
        assert!(
            !everything.contains(secret),
            "{secret} leaked: {everything}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn raw_server_errors_stay_out_of_statuses() {
    let fake = Fake::new();
    fake.script(
        "refused",
        Script {
            reject_initialize: true,
            ..Script::default()
        },
    );
    let manager = manager(&fake, ManagerOptions::default());
    let report = manager.connect_servers([stdio("refused")]).await;
    let error = report.error("refused").unwrap();
    // The server's own words are shown, bounded, with what looks like a
    // credential redacted.
    assert_eq!(
        error.message,
        "the server refused to initialize (code -32603): scripted refusal with [redacted]"
    );
    assert_eq!(error.config_key, "transport.command");
    assert!(!format!("{report:?}").contains("sk-SECRET-FROM-SERVER"));
}

#[tokio::test(start_paused = true)]
async fn reconnecting_servers_are_not_restarted_by_a_second_startup() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a")]).await;
    let lifetime = manager.catalog("a").unwrap().lifetime();
    let report = manager.connect_servers([stdio("a"), stdio("b")]).await;
    assert_eq!(report.ready.len(), 2);
    assert_eq!(manager.catalog("a").unwrap().lifetime(), lifetime);
    assert_eq!(fake.stats("a").connects, 1);
}

#[tokio::test(start_paused = true)]
async fn deferred_tools_from_the_cache_pass_the_server_tool_filter() {
    let fake = Fake::new();
    fake.script(
        "hung",
        Script {
            hang_initialize: true,
            ..Script::default()
        },
    );
    let mut config = stdio("hung");
    config.tools.include = Some(vec!["cached_0001".into()]);
    let cache = Arc::new(MemoryToolCache::new());
    cache
        .store(
            &fingerprint_of(&config),
            CachedTools::new("hung", tools("cached", 4)),
        )
        .await;
    let manager = manager_with_cache(&fake, ManagerOptions::default(), cache);
    let report = manager.connect_servers([config]).await;
    let deferred: Vec<&str> = report.tools().map(|(_, tool)| tool.name.as_str()).collect();
    assert_eq!(deferred, ["cached_0001"]);
}

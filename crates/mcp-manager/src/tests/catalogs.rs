//! Catalog listing: pagination, the 500-tool cap, repeated cursors, duplicates, snapshots.

use std::time::Duration;

use super::support::*;
use crate::{ErrorCode, ManagerOptions, ServerStatus};

/// Connects one scripted server and returns the manager.
async fn connect(script: Script) -> (Fake, crate::McpManager) {
    let fake = Fake::new();
    fake.script("s", script);
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("s")]).await;
    (fake, manager)
}

#[tokio::test(start_paused = true)]
async fn pagination_follows_next_cursor_across_three_pages() {
    let (fake, manager) = connect(Script {
        tools: tools("t", 25),
        page_size: Some(10),
        ..Script::default()
    })
    .await;
    let catalog = manager.catalog("s").unwrap();
    assert_eq!(catalog.tools().len(), 25);
    assert!(!catalog.is_truncated());
    assert_eq!(fake.stats("s").list_calls, 3);
    let names: Vec<&str> = catalog.tool_names().collect();
    assert_eq!(names.first(), Some(&"t_0000"));
    assert_eq!(names.last(), Some(&"t_0024"));
}

/// A catalog names the transport its server is connected over, as
/// configured: a caller listens for a paused stream only where one can be.
#[tokio::test(start_paused = true)]
async fn a_catalog_names_its_servers_transport() {
    let fake = Fake::new();
    fake.script("local", Script::default());
    fake.script("remote", Script::default());
    let manager = manager(&fake, ManagerOptions::default());
    manager
        .connect_servers([stdio("local"), http("remote")])
        .await;
    let transport = |id: &str| manager.catalog(id).map(|catalog| catalog.transport());
    assert_eq!(transport("local"), Some(mcp_config::TransportKind::Stdio));
    assert_eq!(transport("remote"), Some(mcp_config::TransportKind::Http));
}

#[tokio::test(start_paused = true)]
async fn listing_stops_at_500_tools_and_says_so() {
    let (fake, manager) = connect(Script {
        tools: tools("t", 600),
        page_size: Some(100),
        ..Script::default()
    })
    .await;
    let catalog = manager.catalog("s").unwrap();
    assert_eq!(catalog.tools().len(), 500);
    assert!(catalog.is_truncated());
    assert_eq!(
        fake.stats("s").list_calls,
        5,
        "the sixth page is never asked for"
    );
    assert_eq!(manager.status("s"), Some(ServerStatus::Ready));

    // In one big page too.
    let (_, manager) = connect(Script {
        tools: tools("t", 600),
        ..Script::default()
    })
    .await;
    let catalog = manager.catalog("s").unwrap();
    assert_eq!(catalog.tools().len(), 500);
    assert!(catalog.is_truncated());
    assert_eq!(catalog.tool_names().last(), Some("t_0499"));
}

#[tokio::test(start_paused = true)]
async fn exactly_500_tools_are_not_truncated() {
    let (_, manager) = connect(Script {
        tools: tools("t", 500),
        page_size: Some(250),
        ..Script::default()
    })
    .await;
    let catalog = manager.catalog("s").unwrap();
    assert_eq!(catalog.tools().len(), 500);
    assert!(!catalog.is_truncated());
}

#[tokio::test(start_paused = true)]
async fn the_cap_is_an_option() {
    let fake = Fake::new();
    fake.script(
        "s",
        Script {
            tools: tools("t", 30),
            page_size: Some(10),
            ..Script::default()
        },
    );
    let options = ManagerOptions {
        max_tools: 15,
        ..ManagerOptions::default()
    };
    let manager = manager(&fake, options);
    manager.connect_servers([stdio("s")]).await;
    let catalog = manager.catalog("s").unwrap();
    assert_eq!(catalog.tools().len(), 15);
    assert!(catalog.is_truncated());
}

#[tokio::test(start_paused = true)]
async fn a_repeated_cursor_is_an_invalid_catalog() {
    let (fake, manager) = connect(Script {
        tools: tools("t", 30),
        page_size: Some(10),
        repeat_cursor: true,
        ..Script::default()
    })
    .await;
    let error = manager.status("s").unwrap().error().unwrap().clone();
    assert_eq!(error.code, ErrorCode::InvalidCatalog);
    // The server's answer is at fault: no setting to point at.
    assert_eq!(error.config_key, "");
    assert!(!error.to_string().contains("(see"), "{error}");
    assert_eq!(fake.stats("s").list_calls, 2);
    assert!(manager.catalog("s").is_none());
}

#[tokio::test(start_paused = true)]
async fn duplicate_tool_names_keep_the_first() {
    let mut list = tools("t", 3);
    let mut duplicate = list[0].clone();
    duplicate.description = Some("the second one".into());
    list.push(duplicate);
    let (_, manager) = connect(Script {
        tools: list,
        ..Script::default()
    })
    .await;
    let catalog = manager.catalog("s").unwrap();
    assert_eq!(catalog.tools().len(), 3);
    assert_eq!(catalog.tool("t_0000").unwrap().description, None);
}

#[tokio::test(start_paused = true)]
async fn tools_are_kept_exactly_as_listed() {
    let mut tool = mcp_proto::types::Tool::new("exact");
    tool.title = Some("Exact".into());
    tool.extra
        .insert("x-vendor".into(), serde_json::json!({"keep": [1, 2]}));
    let (_, manager) = connect(Script {
        tools: vec![tool.clone()],
        ..Script::default()
    })
    .await;
    assert_eq!(manager.catalog("s").unwrap().tools(), [tool]);
}

#[tokio::test(start_paused = true)]
async fn snapshots_omit_connecting_failed_disabled_and_toolless_servers() {
    let fake = Fake::new();
    fake.script(
        "connecting",
        Script {
            hang_initialize: true,
            ..Script::default()
        },
    );
    fake.script(
        "failed",
        Script {
            reject_initialize: true,
            ..Script::default()
        },
    );
    fake.script(
        "toolless",
        Script {
            tools: Vec::new(),
            ..Script::default()
        },
    );
    fake.script(
        "ready",
        Script {
            instructions: Some("Ready for anything.".into()),
            ..Script::default()
        },
    );
    let mut disabled = stdio("disabled");
    disabled.enabled = false;
    let manager = manager(&fake, background());
    manager
        .connect_servers([
            stdio("connecting"),
            stdio("failed"),
            stdio("toolless"),
            stdio("ready"),
            disabled,
        ])
        .await;
    until_ready(&manager, "ready").await;
    until_ready(&manager, "toolless").await;
    until(&manager, "failed", |s| s.error().is_some()).await;
    let snapshot = manager.snapshot(None);
    let rows: Vec<(&str, &str, Option<&str>, Vec<&str>)> = snapshot
        .servers()
        .iter()
        .map(|s| (s.id(), s.name(), s.instructions(), s.tool_names().collect()))
        .collect();
    assert_eq!(
        rows,
        [(
            "ready",
            "ready",
            Some("Ready for anything."),
            vec!["tool_0000", "tool_0001"]
        )]
    );
    assert_eq!(snapshot.tool_count(), 2);
    assert_eq!(manager.status("disabled"), Some(ServerStatus::Disabled));
    assert_eq!(manager.status("connecting"), Some(ServerStatus::Connecting));
}

#[tokio::test(start_paused = true)]
async fn a_thousand_snapshots_of_20_servers_with_100_tools_take_under_50_ms() {
    let fake = Fake::new();
    let ids: Vec<String> = (0..20).map(|i| format!("server{i:02}")).collect();
    for id in &ids {
        fake.script(
            id,
            Script {
                tools: tools(id, 100),
                page_size: Some(50),
                instructions: Some(format!("Instructions of {id}.")),
                ..Script::default()
            },
        );
    }
    let manager = manager(&fake, ManagerOptions::default());
    let report = manager
        .connect_servers(ids.iter().map(|id| stdio(id)))
        .await;
    assert_eq!(report.ready.len(), 20);

    let started = std::time::Instant::now();
    let mut tools_seen = 0;
    for _ in 0..1000 {
        let snapshot = manager.snapshot(None);
        tools_seen += snapshot.servers().len() * 100;
        std::hint::black_box(&snapshot);
    }
    let elapsed = started.elapsed();
    assert_eq!(tools_seen, 1000 * 20 * 100);
    assert!(
        elapsed < Duration::from_millis(50),
        "1,000 snapshots took {elapsed:?}"
    );
    // Captured together: every row's catalog is the one the manager holds.
    let snapshot = manager.snapshot(None);
    for row in snapshot.servers() {
        assert!(std::sync::Arc::ptr_eq(
            row.catalog(),
            &manager.catalog(row.id()).unwrap()
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn project_servers_show_only_in_their_workspace_and_rediscovery_drops_the_gone() {
    use std::path::Path;

    use mcp_config::{ConfigLevel, Discovery, DiscoveryOptions};

    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.json");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        &user,
        r#"{"mcpServers": {
            "everyone": {"command": "fake-everyone"},
            "bad": {"command": "fake-bad", "cwd": "relative/dir"}
        }}"#,
    )
    .unwrap();
    std::fs::write(
        repo.join(".mcp.json"),
        r#"{"mcpServers": {"mine": {"command": "fake-mine"}}}"#,
    )
    .unwrap();
    let discovery = || {
        Discovery::new(DiscoveryOptions::default())
            .user_file(&user)
            .project_root(&repo)
    };
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    let startup = manager.discover_and_connect(&discovery()).await;
    let error = startup.error("bad").unwrap();
    assert_eq!(error.code, ErrorCode::InvalidConfig);
    // Named as the file wrote it, not in the store's vocabulary.
    assert_eq!(error.config_key, "mcpServers.bad.cwd");
    assert_eq!(manager.status("bad"), None);
    assert_eq!(startup.ready.len(), 2);

    let ids = |workspace: Option<&Path>| -> Vec<String> {
        manager
            .snapshot(workspace)
            .servers()
            .iter()
            .map(|s| s.id().to_owned())
            .collect()
    };
    assert_eq!(ids(Some(&repo.join("src"))), ["everyone", "mine"]);
    assert_eq!(ids(Some(dir.path())), ["everyone"]);
    assert_eq!(ids(None), ["everyone", "mine"]);
    assert_eq!(manager.source("mine").unwrap().level, ConfigLevel::Project);

    // The reload: the project file no longer has "mine".
    std::fs::write(repo.join(".mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    manager.discover_and_connect(&discovery()).await;
    assert_eq!(manager.status("mine"), None);
    fake.until_stats("mine", |s| s.closed_by_client == 1).await;
    assert_eq!(fake.stats("everyone").connects, 1, "kept its connection");
}

fn names<'a>(tools: impl IntoIterator<Item = &'a mcp_proto::types::Tool>) -> Vec<&'a str> {
    tools.into_iter().map(|tool| tool.name.as_str()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_tool_filter_hides_tools_the_cache_keeps_them_and_a_new_filter_needs_no_reconnect() {
    let fake = Fake::new();
    fake.script(
        "s",
        Script {
            tools: tools("t", 4),
            ..Script::default()
        },
    );
    let cache = std::sync::Arc::new(crate::MemoryToolCache::new());
    let manager = manager_with_cache(&fake, ManagerOptions::default(), cache.clone());
    let mut config = stdio("s");
    config.tools.include = Some(vec!["t_0000".into(), "t_0001".into(), "t_0003".into()]);
    config.tools.exclude = vec!["t_0001".into()];
    manager.connect_servers([config.clone()]).await;

    let first = manager.catalog("s").unwrap();
    assert_eq!(names(first.tools()), ["t_0000", "t_0003"]);
    assert_eq!(names(first.filtered_out()), ["t_0001", "t_0002"]);
    assert_eq!(manager.snapshot(None).tool_count(), 2);
    // The cache keeps the whole listing, in order; what reads it filters.
    manager.flush_cache().await;
    let stored = crate::ToolCache::load(&*cache, &fingerprint_of(&config))
        .await
        .unwrap();
    assert_eq!(
        names(&stored.tools),
        ["t_0000", "t_0001", "t_0002", "t_0003"]
    );
    let cached = manager.cached_tools("s").await.unwrap();
    assert_eq!(names(&cached.tools), ["t_0000", "t_0003"]);

    // Another filter is applied to the listing the connection has: a new
    // catalog lifetime, no new connection, no new listing.
    config.tools = mcp_config::ToolFilter::default();
    config.tools.exclude = vec!["t_0003".into()];
    manager.connect_servers([config]).await;
    let second = manager.catalog("s").unwrap();
    assert_eq!(names(second.tools()), ["t_0000", "t_0001", "t_0002"]);
    assert_eq!(names(second.filtered_out()), ["t_0003"]);
    assert_ne!(second.lifetime(), first.lifetime());
    let stats = fake.stats("s");
    assert_eq!((stats.connects, stats.list_calls), (1, 1), "{stats:?}");
}

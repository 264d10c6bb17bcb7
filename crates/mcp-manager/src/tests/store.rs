//! The config store kept consistent with the connections: load, list, save, set_enabled, remove; secrets stay out.
//!
//! Store operations run on the blocking pool, so these tests use the real
//! clock (a paused clock could jump ahead while a file is written) and wait
//! only on real events, each bounded by [`BOUND`].

use std::collections::HashMap;
use std::time::Duration;

use mcp_config::{SecretEntry, SecretValue, Store, TransportConfig};

use super::support::*;
use crate::{ManagerEvent, ManagerOptions, McpManager, ServerStatus};

/// A failure bound, not a synchronization delay.
const BOUND: Duration = Duration::from_secs(30);

const SECRET: &str = "sk-SECRET-VALUE-7781";

fn with_store(fake: &Fake, store: Store) -> McpManager {
    McpManager::builder()
        .options(ManagerOptions::default())
        .factory(fake.clone())
        .environment(HashMap::from([(
            "HOST_TOKEN".to_owned(),
            SECRET.to_owned(),
        )]))
        .store(store)
        .build()
}

fn secret_server(id: &str) -> mcp_config::ServerConfig {
    let mut config = stdio(id);
    if let TransportConfig::Stdio(s) = &mut config.transport {
        s.env.push(SecretEntry::new("API_KEY", SECRET));
        s.env_passthrough.push("HOST_TOKEN".into());
    }
    config
}

#[tokio::test]
async fn save_list_enable_disable_remove_keep_store_and_connections_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let fake = Fake::new();
    let manager = with_store(&fake, Store::open(&path));

    let report = manager.create(secret_server("gh")).await.unwrap();
    assert!(report.created);
    until_within(&manager, "gh", |s| *s == ServerStatus::Ready, BOUND).await;
    assert_eq!(
        manager.create(stdio("gh")).await.unwrap_err().code(),
        "duplicate_id"
    );

    let listed = manager.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, ServerStatus::Ready);
    assert_eq!(listed[0].tool_count, 2);
    assert_eq!(Some(listed[0].generation), manager.generation("gh"));
    let TransportConfig::Stdio(stdio_config) = &listed[0].config.transport else {
        unreachable!()
    };
    assert_eq!(stdio_config.env[0].value, SecretValue::Saved);

    // Sending the listed (redacted) form back keeps the secret and the
    // connection: nothing that decides the connection changed.
    let lifetime = manager.catalog("gh").unwrap().lifetime();
    let mut renamed = listed[0].config.clone();
    renamed.name = "GitHub".into();
    manager.save(renamed).await.unwrap();
    assert_eq!(manager.catalog("gh").unwrap().lifetime(), lifetime);
    assert_eq!(fake.stats("gh").connects, 1);
    let stored = Store::open(&path).load().unwrap();
    assert_eq!(stored[0].name, "GitHub");

    let before = manager.list().await.unwrap()[0].generation;
    manager.set_enabled("gh", false).await.unwrap();
    assert_eq!(manager.status("gh"), Some(ServerStatus::Disabled));
    let after = manager.list().await.unwrap()[0].generation;
    assert!(
        after > before,
        "disabling starts a new generation: {before} -> {after}"
    );
    assert!(!Store::open(&path).load().unwrap()[0].enabled);
    fake.until_stats("gh", |s| s.closed_by_client == 1).await;
    assert_eq!(
        manager.list().await.unwrap()[0].status,
        ServerStatus::Disabled
    );

    manager.set_enabled("gh", true).await.unwrap();
    until_within(&manager, "gh", |s| *s == ServerStatus::Ready, BOUND).await;
    assert!(Store::open(&path).load().unwrap()[0].enabled);

    manager.remove("gh").await.unwrap();
    assert_eq!(manager.status("gh"), None);
    assert!(Store::open(&path).load().unwrap().is_empty());
    assert_eq!(manager.remove("gh").await.unwrap_err().code(), "not_found");
}

#[tokio::test]
async fn load_store_connects_the_stored_servers_and_records_disabled_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let store = Store::open(&path);
    store.create(secret_server("one")).unwrap();
    let mut off = stdio("off");
    off.enabled = false;
    store.create(off).unwrap();
    let fake = Fake::new();
    let manager = with_store(&fake, Store::open(&path));
    let report = manager.load_store().await.unwrap();
    assert_eq!(report.ready.len(), 1);
    assert_eq!(report.disabled, ["off"]);
    assert_eq!(fake.stats("off").connects, 0);
}

#[tokio::test]
async fn a_store_refusal_changes_no_connection() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let fake = Fake::new();
    let manager = with_store(&fake, Store::open(&path));
    manager.save(stdio("ok")).await.unwrap();
    until_within(&manager, "ok", |s| *s == ServerStatus::Ready, BOUND).await;
    let lifetime = manager.catalog("ok").unwrap().lifetime();

    let mut invalid = stdio("ok");
    if let TransportConfig::Stdio(s) = &mut invalid.transport {
        s.cwd = Some("relative/dir".into());
    }
    let error = manager.save(invalid).await.unwrap_err();
    assert_eq!(error.code(), "invalid_config");
    assert_eq!(manager.catalog("ok").unwrap().lifetime(), lifetime);

    // A malformed store file is refused and never overwritten.
    std::fs::write(&path, "{broken").unwrap();
    assert_eq!(
        manager.set_enabled("ok", false).await.unwrap_err().code(),
        "malformed_store"
    );
    assert_eq!(manager.status("ok"), Some(ServerStatus::Ready));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{broken");
}

#[tokio::test]
async fn no_secret_reaches_statuses_events_errors_or_debug_output() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new();
    fake.script(
        "failing",
        Script {
            reject_initialize: true,
            ..Script::default()
        },
    );
    let manager = with_store(&fake, Store::open(dir.path().join("mcp.json")));
    let mut events = manager.events();
    manager.save(secret_server("ok")).await.unwrap();
    manager.save(secret_server("failing")).await.unwrap();
    let mut missing = secret_server("missing");
    if let TransportConfig::Stdio(s) = &mut missing.transport {
        s.args.push("${NOT_SET_FOR_THIS_TEST}".into());
    }
    manager.save(missing).await.unwrap();
    until_within(&manager, "ok", |s| *s == ServerStatus::Ready, BOUND).await;
    until_within(&manager, "failing", |s| s.error().is_some(), BOUND).await;

    let listed = manager.list().await.unwrap();
    let events: Vec<ManagerEvent> = drain(&mut events);
    let everything = format!(
        "{listed:?} {events:?} {:?} {manager:?} {:?} {:?}",
        manager.servers(),
        manager.snapshot(None),
        manager.status("failing"),
    );
    assert!(everything.contains("MissingEnv"), "{everything}");
    assert!(
        !everything.contains(SECRET),
        "a secret leaked: {everything}"
    );
    assert!(
        !everything.contains("sk-SECRET-FROM-SERVER"),
        "{everything}"
    );
}

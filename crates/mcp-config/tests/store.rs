//! The store (`mcp.json` in the data directory): missing and malformed files, kept secrets, id rules, file mode, concurrent saves.

use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::thread;

use mcp_config::{
    DropReason, EnvHeader, HttpConfig, InputPrompt, ProtocolEra, SecretEntry, SecretValue,
    ServerConfig, StdioConfig, Store, StoreError, TransportConfig, parse_store_server,
};
use tempfile::TempDir;

fn scratch() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data").join("mcp.json");
    (dir, path)
}

fn stdio_server(id: &str, command: &str, env: &[(&str, &str)]) -> ServerConfig {
    let mut stdio = StdioConfig::new(command);
    stdio.env = env.iter().map(|(k, v)| SecretEntry::new(*k, *v)).collect();
    ServerConfig::new(id, TransportConfig::Stdio(stdio))
}

fn http_server(id: &str, url: &str, headers: &[(&str, &str)]) -> ServerConfig {
    let mut http = HttpConfig::new(url);
    http.headers = headers
        .iter()
        .map(|(k, v)| SecretEntry::new(*k, *v))
        .collect();
    ServerConfig::new(id, TransportConfig::Http(http))
}

/// The literal rows (env or headers) of a stored server, as `key=value`.
fn rows(server: &ServerConfig) -> Vec<String> {
    let rows = match &server.transport {
        TransportConfig::Stdio(stdio) => &stdio.env,
        TransportConfig::Http(http) | TransportConfig::Sse(http) => &http.headers,
        _ => panic!("unexpected transport"),
    };
    rows.iter()
        .map(|row| match &row.value {
            SecretValue::Literal(value) => format!("{}={}", row.key, value.expose()),
            SecretValue::Saved => format!("{}=<saved>", row.key),
        })
        .collect()
}

fn stored(store: &Store, id: &str) -> ServerConfig {
    store
        .load()
        .unwrap()
        .into_iter()
        .find(|s| s.id == id)
        .unwrap()
}

#[test]
fn a_missing_file_is_an_empty_store_and_the_first_write_creates_it_owner_only() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    assert!(store.list().unwrap().is_empty());
    assert!(!path.exists(), "reading must not create the file");
    let outcome = store.create(stdio_server("a", "x", &[])).unwrap();
    assert!(outcome.created);
    assert!(path.exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "store file mode {mode:o}");
        let dir_mode = fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700, "created data dir mode {dir_mode:o}");
    }
    // No temp file is left behind after a successful write: only the store
    // and the lock file that serializes writers across processes.
    let mut names: Vec<String> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["mcp.json", "mcp.json.lock"]);
}

#[cfg(unix)]
#[test]
fn a_rewrite_tightens_a_loose_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = scratch();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, r#"{"version": 1, "servers": []}"#).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    Store::open(&path)
        .create(stdio_server("a", "x", &[]))
        .unwrap();
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_malformed_file_is_reported_with_its_position_and_never_overwritten() {
    let (_dir, path) = scratch();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let broken = "{\"version\": 1,\n \"servers\": [\n  {\"id\": \"a\" \"transport\": {}}\n]}\n";
    fs::write(&path, broken).unwrap();
    let store = Store::open(&path);

    let error = store.list().unwrap_err();
    assert_eq!(error.code(), "malformed_store");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("line 3 column 14"), "{message}");

    for attempt in [
        store.create(stdio_server("b", "x", &[])).map(drop),
        store.save(stdio_server("b", "x", &[])).map(drop),
        store.set_enabled("a", false).map(drop),
        store.remove("a"),
    ] {
        assert_eq!(attempt.unwrap_err().code(), "malformed_store");
    }
    assert_eq!(fs::read_to_string(&path).unwrap(), broken);

    // Repairing the file by hand is enough: nothing was cached.
    fs::write(
        &path,
        r#"{"version": 1, "servers": [{"id": "a", "transport": {"type": "stdio", "command": "x"}}]}"#,
    )
    .unwrap();
    store.create(stdio_server("b", "x", &[])).unwrap();
    assert_eq!(store.list().unwrap().len(), 2);
}

#[test]
fn one_bad_entry_or_a_newer_version_also_blocks_writes() {
    let (_dir, path) = scratch();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let bad_entry = r#"{"version": 1, "servers": [
        {"id": "ok", "transport": {"type": "stdio", "command": "x"}},
        {"id": "bad", "transport": {"type": "stdio", "command": 5}}
    ]}"#;
    fs::write(&path, bad_entry).unwrap();
    let store = Store::open(&path);
    let error = store.save(stdio_server("c", "x", &[])).unwrap_err();
    assert_eq!(error.code(), "malformed_store");
    assert!(
        error.to_string().contains("servers[1].transport.command"),
        "{error}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), bad_entry);

    let newer = r#"{"version": 2, "servers": []}"#;
    fs::write(&path, newer).unwrap();
    let error = store.save(stdio_server("c", "x", &[])).unwrap_err();
    assert_eq!(error.code(), "unsupported_version");
    assert_eq!(fs::read_to_string(&path).unwrap(), newer);
}

#[test]
fn legacy_fields_are_read_and_gone_after_the_next_write() {
    let (_dir, path) = scratch();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        &path,
        r#"{"version": 1, "servers": [{"id": "a", "name": "A", "enabled": true,
            "approvalMode": "always", "toolPolicies": {"rm": "deny"},
            "transport": {"type": "stdio", "command": "x", "args": [], "env": [], "envVars": [], "cwd": ""}}]}"#,
    )
    .unwrap();
    let store = Store::open(&path);
    assert_eq!(store.list().unwrap()[0].name, "A");
    store.set_enabled("a", false).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.contains("approvalMode"), "{text}");
    assert!(!text.contains("toolPolicies"), "{text}");
    assert!(text.contains("\"enabled\": false"), "{text}");
}

#[test]
fn a_pinned_era_is_kept_and_auto_is_never_written() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    let mut modern = http_server("modern", "https://e.com/mcp", &[("X-Key", "k")]);
    modern.era = ProtocolEra::Modern;
    let mut legacy = stdio_server("legacy", "x", &[]);
    legacy.era = ProtocolEra::Legacy;
    store.create(modern).unwrap();
    store.create(legacy).unwrap();
    store.create(stdio_server("auto", "x", &[])).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("\"era\"").count(), 2, "{text}");
    assert!(!text.contains("\"era\": \"auto\""), "{text}");

    // Every path through the store keeps it: list, load, set_enabled, save.
    let eras = |servers: Vec<ServerConfig>| -> Vec<ProtocolEra> {
        servers.into_iter().map(|s| s.era).collect()
    };
    let expected = [ProtocolEra::Modern, ProtocolEra::Legacy, ProtocolEra::Auto];
    assert_eq!(eras(store.list().unwrap()), expected);
    store.set_enabled("modern", false).unwrap();
    store.set_enabled("modern", true).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    // A save from a UI sends the listed (redacted) config back.
    let listed = store.list().unwrap().remove(0);
    store.save(listed).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    assert_eq!(eras(store.load().unwrap()), expected);

    // Unpinning writes the field away again.
    let mut unpinned = stored(&store, "legacy");
    unpinned.era = ProtocolEra::Auto;
    store.save(unpinned).unwrap();
    assert_eq!(
        fs::read_to_string(&path)
            .unwrap()
            .matches("\"era\"")
            .count(),
        1
    );
}

#[test]
fn ids_are_unique_and_missing_ids_are_not_found() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    store.create(stdio_server("a", "x", &[])).unwrap();
    let error = store.create(stdio_server("a", "y", &[])).unwrap_err();
    assert!(matches!(error, StoreError::DuplicateId { ref id } if id == "a"));
    assert_eq!(error.code(), "duplicate_id");
    assert_eq!(
        store.set_enabled("nope", true).unwrap_err().code(),
        "not_found"
    );
    assert_eq!(store.remove("nope").unwrap_err().code(), "not_found");
    // save() updates in place and keeps the position.
    store.create(stdio_server("b", "x", &[])).unwrap();
    let outcome = store.save(stdio_server("a", "z", &[])).unwrap();
    assert!(!outcome.created);
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, ["a", "b"]);
}

#[test]
fn set_enabled_and_remove() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    store.create(stdio_server("a", "x", &[])).unwrap();
    store.create(stdio_server("b", "x", &[])).unwrap();
    assert!(store.set_enabled("a", false).unwrap());
    assert!(!store.set_enabled("a", false).unwrap(), "unchanged");
    assert!(!store.list().unwrap()[0].enabled);
    assert!(store.set_enabled("a", true).unwrap());
    store.remove("a").unwrap();
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, ["b"]);
}

#[test]
fn invalid_configs_are_refused_with_every_diagnostic() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    let mut stdio = StdioConfig::new("");
    stdio.cwd = Some("relative".into());
    let error = store
        .create(ServerConfig::new("a", TransportConfig::Stdio(stdio)))
        .unwrap_err();
    assert_eq!(error.code(), "invalid_config");
    let StoreError::Invalid { diagnostics, .. } = &error else {
        panic!("{error:?}")
    };
    let codes: Vec<&str> = diagnostics.iter().map(|d| d.code()).collect();
    assert_eq!(codes, ["missing_command", "relative_cwd"]);
    assert!(!path.exists());
}

#[test]
fn list_redacts_and_saved_markers_keep_replace_or_delete() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    store
        .create(stdio_server(
            "gh",
            "gh-mcp",
            &[("KEEP", "k1"), ("REPLACE", "r1"), ("DELETE", "d1")],
        ))
        .unwrap();
    let listed = store.list().unwrap().remove(0);
    assert_eq!(
        rows(&listed),
        ["KEEP=<saved>", "REPLACE=<saved>", "DELETE=<saved>"]
    );

    // The UI sends back: KEEP untouched, REPLACE re-entered, DELETE removed, NEW added.
    let mut edited = listed.clone();
    let TransportConfig::Stdio(stdio) = &mut edited.transport else {
        unreachable!()
    };
    stdio.env = vec![
        SecretEntry::saved("KEEP"),
        SecretEntry::new("REPLACE", "r2"),
        SecretEntry::new("NEW", "n1"),
    ];
    edited.name = "GitHub".into();
    let outcome = store.save(edited).unwrap();
    assert!(outcome.dropped_secrets.is_empty());
    assert_eq!(
        rows(&stored(&store, "gh")),
        ["KEEP=k1", "REPLACE=r2", "NEW=n1"]
    );

    // The same shape through JSON, as a web UI sends it.
    let from_ui = parse_store_server(
        r#"{"id": "gh", "name": "GitHub", "enabled": true, "transport": {"type": "stdio",
            "command": "gh-mcp", "args": [], "envVars": [], "cwd": "",
            "env": [{"key": "KEEP", "value": "", "saved": true}, {"key": "NEW", "value": "n2", "saved": true}]}}"#,
    )
    .unwrap();
    store.save(from_ui).unwrap();
    assert_eq!(rows(&stored(&store, "gh")), ["KEEP=k1", "NEW=n2"]);
}

#[test]
fn changing_the_command_args_or_cwd_drops_kept_secrets_and_reports_them() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    let mut base = stdio_server("s", "srv", &[("A", "a1"), ("B", "b1")]);
    let TransportConfig::Stdio(stdio) = &mut base.transport else {
        unreachable!()
    };
    stdio.args = vec!["--one".into()];
    stdio.cwd = Some("/srv".into());
    store.create(base).unwrap();

    type Edit = fn(&mut StdioConfig);
    let edits: [(&str, Edit); 3] = [
        ("command", |s| s.command = "other-srv".into()),
        ("args", |s| s.args.push("--two".into())),
        ("cwd", |s| s.cwd = None),
    ];
    for (what, edit) in edits {
        // Start every round from a stored state with both secrets.
        store
            .save(stored_with(&store, "s", &[("A", "a1"), ("B", "b1")]))
            .unwrap();
        let mut edited = store.list().unwrap().remove(0);
        let TransportConfig::Stdio(stdio) = &mut edited.transport else {
            unreachable!()
        };
        edit(stdio);
        // A is re-entered, B is only marked as saved.
        stdio.env = vec![SecretEntry::new("A", "a2"), SecretEntry::saved("B")];
        let outcome = store.save(edited).unwrap();
        assert_eq!(outcome.dropped_secrets.len(), 1, "{what}");
        let dropped = &outcome.dropped_secrets[0];
        assert_eq!(
            (dropped.key.as_str(), dropped.field.as_str(), dropped.reason),
            ("B", "transport.env[1]", DropReason::ConnectionChanged),
            "{what}"
        );
        assert_eq!(rows(&stored(&store, "s")), ["A=a2"], "{what}");
    }
}

/// The stored server `id` with its env replaced by literal values, for resetting a test.
fn stored_with(store: &Store, id: &str, env: &[(&str, &str)]) -> ServerConfig {
    let mut server = stored(store, id);
    if let TransportConfig::Stdio(stdio) = &mut server.transport {
        stdio.env = env.iter().map(|(k, v)| SecretEntry::new(*k, *v)).collect();
    }
    server
}

#[test]
fn http_headers_keep_secrets_case_insensitively_until_the_url_changes() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    let mut server = http_server(
        "api",
        "https://api.example.com/mcp",
        &[("X-Api-Key", "key-1")],
    );
    if let TransportConfig::Http(http) = &mut server.transport {
        http.env_headers.push(EnvHeader::new("X-Tenant", "TENANT"));
    }
    store.create(server).unwrap();

    let mut edited = store.list().unwrap().remove(0);
    if let TransportConfig::Http(http) = &mut edited.transport {
        http.headers = vec![SecretEntry::saved("x-api-key")];
    }
    assert!(
        store
            .save(edited.clone())
            .unwrap()
            .dropped_secrets
            .is_empty()
    );
    assert_eq!(rows(&stored(&store, "api")), ["x-api-key=key-1"]);

    if let TransportConfig::Http(http) = &mut edited.transport {
        http.url = "https://other.example.com/mcp".into();
    }
    let outcome = store.save(edited).unwrap();
    assert_eq!(outcome.dropped_secrets[0].key, "x-api-key");
    assert_eq!(
        outcome.dropped_secrets[0].reason,
        DropReason::ConnectionChanged
    );
    assert!(rows(&stored(&store, "api")).is_empty());
}

#[test]
fn a_new_transport_or_an_unknown_key_cannot_keep_anything() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    store
        .create(stdio_server("s", "srv", &[("TOKEN", "t")]))
        .unwrap();

    let mut renamed_key = store.list().unwrap().remove(0);
    if let TransportConfig::Stdio(stdio) = &mut renamed_key.transport {
        stdio.env = vec![SecretEntry::saved("API_TOKEN")];
    }
    let outcome = store.save(renamed_key).unwrap();
    assert_eq!(outcome.dropped_secrets[0].reason, DropReason::NotStored);

    let mut moved = http_server("s", "https://e.com/mcp", &[]);
    if let TransportConfig::Http(http) = &mut moved.transport {
        http.headers = vec![SecretEntry::saved("TOKEN")];
    }
    let outcome = store.save(moved).unwrap();
    assert_eq!(
        outcome.dropped_secrets[0].reason,
        DropReason::ConnectionChanged
    );

    // `create` has nothing stored to keep.
    let mut fresh = stdio_server("new", "x", &[]);
    if let TransportConfig::Stdio(stdio) = &mut fresh.transport {
        stdio.env = vec![SecretEntry::saved("K")];
    }
    let outcome = store.create(fresh).unwrap();
    assert_eq!(outcome.dropped_secrets[0].reason, DropReason::NotStored);
    assert!(rows(&stored(&store, "new")).is_empty());
}

/// 100 saves from 10 threads, released together: every one lands.
#[test]
fn concurrent_saves_all_land() {
    let (_dir, path) = scratch();
    let threads = 10;
    let per_thread = 10;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let barrier = Arc::clone(&barrier);
            let path = path.clone();
            thread::spawn(move || {
                // Each thread opens its own Store: the lock is per file, not per value.
                let store = Store::open(&path);
                barrier.wait();
                for i in 0..per_thread {
                    let id = format!("t{t}-s{i}");
                    store
                        .create(stdio_server(
                            &id,
                            "srv",
                            &[("TOKEN", &format!("secret-{t}-{i}"))],
                        ))
                        .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let servers = Store::open(&path).load().unwrap();
    assert_eq!(servers.len(), threads * per_thread);
    for t in 0..threads {
        for i in 0..per_thread {
            let server = servers
                .iter()
                .find(|s| s.id == format!("t{t}-s{i}"))
                .unwrap();
            assert_eq!(rows(server), [format!("TOKEN=secret-{t}-{i}")]);
        }
    }
    // Per thread, creates land in the order they were made.
    for t in 0..threads {
        let positions: Vec<usize> = (0..per_thread)
            .map(|i| {
                servers
                    .iter()
                    .position(|s| s.id == format!("t{t}-s{i}"))
                    .unwrap()
            })
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    }
}

/// 100 concurrent saves that each update an existing server, 10 threads
/// each saving its own server 10 times: no update is lost to another
/// thread's read-modify-write, and each server ends with its thread's last
/// save (saves land in the order they were made).
#[test]
fn concurrent_updates_land_in_order() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    for t in 0..10 {
        store
            .create(stdio_server(&format!("own-{t}"), "srv", &[]))
            .unwrap();
    }
    let barrier = Arc::new(Barrier::new(10));
    let handles: Vec<_> = (0..10)
        .map(|t| {
            let barrier = Arc::clone(&barrier);
            let path = path.clone();
            thread::spawn(move || {
                let store = Store::open(&path);
                barrier.wait();
                for i in 0..10 {
                    let mut server = stdio_server(&format!("own-{t}"), "srv", &[]);
                    if let TransportConfig::Stdio(stdio) = &mut server.transport {
                        stdio.args = vec![i.to_string()];
                    }
                    assert!(!store.save(server).unwrap().created);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let servers = store.load().unwrap();
    let summary: Vec<String> = servers
        .iter()
        .map(|server| match &server.transport {
            TransportConfig::Stdio(stdio) => format!("{}:{}", server.id, stdio.args.join(",")),
            _ => unreachable!(),
        })
        .collect();
    let expected: Vec<String> = (0..10).map(|t| format!("own-{t}:9")).collect();
    assert_eq!(summary, expected);
}

/// The environment variable that turns this test binary into a writer
/// child for [`saves_from_several_processes_all_land`]: `PATH|PREFIX|COUNT`.
const CHILD_WRITER: &str = "MCP_CONFIG_TEST_CHILD_WRITER";

/// Creates COUNT servers named PREFIX-N in the store at PATH; run by the
/// children of [`saves_from_several_processes_all_land`].
fn child_writer(spec: &str) {
    let mut parts = spec.split('|');
    let (Some(path), Some(prefix), Some(count)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("bad {CHILD_WRITER} value {spec:?}");
    };
    let store = Store::open(path);
    for i in 0..count.parse::<usize>().unwrap() {
        store
            .create(stdio_server(&format!("{prefix}-{i}"), "srv", &[]))
            .unwrap();
    }
}

/// A host and `mcpctl` may edit one store at the same time: 4 processes
/// creating 25 servers each all land (the advisory lock file serializes
/// their read-merge-write cycles).
#[test]
fn saves_from_several_processes_all_land() {
    if let Ok(spec) = std::env::var(CHILD_WRITER) {
        // This process is one of the writers the parent started below.
        child_writer(&spec);
        return;
    }
    let (_dir, path) = scratch();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|p| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "saves_from_several_processes_all_land",
                    "--nocapture",
                ])
                .env(CHILD_WRITER, format!("{}|p{p}|25", path.display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a writer process failed");
    }
    let servers = Store::open(&path).load().unwrap();
    assert_eq!(servers.len(), 100, "every save from every process landed");
    assert!(path.with_file_name("mcp.json.lock").exists());
}

#[test]
fn a_save_removes_temp_files_a_killed_writer_left_and_nothing_else() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    store.save(stdio_server("a", "/bin/a", &[])).unwrap();
    let data = path.parent().unwrap();
    let stale = data.join(".mcp.json.Ab3dE9.tmp");
    fs::write(
        &stale,
        "{\"version\":1,\"servers\":{\"old\":{\"env\":\"sk-stale\"}}}",
    )
    .unwrap();
    let others = [
        data.join(".other.json.Ab3dE9.tmp"),
        data.join("notes.tmp"),
        data.join(".mcp.json.keep"),
    ];
    for other in &others {
        fs::write(other, "not ours").unwrap();
    }
    store.save(stdio_server("b", "/bin/b", &[])).unwrap();
    assert!(
        !stale.exists(),
        "the killed writer's temp file is still there"
    );
    for other in &others {
        assert!(other.exists(), "{} was removed", other.display());
    }
    assert_eq!(store.list().unwrap().len(), 2);
}

#[test]
fn call_timeouts_tool_filters_and_input_prompts_round_trip_and_are_absent_when_unset() {
    let (_dir, path) = scratch();
    let store = Store::open(&path);
    let mut filtered = stdio_server("filtered", "x", &[("TOKEN", "t")]);
    filtered.call_timeout_ms = Some(90_000);
    filtered.tools.include = Some(vec!["read".into(), "list".into()]);
    filtered.tools.exclude = vec!["list".into()];
    let mut prompt = InputPrompt::new("token");
    prompt.description = Some("API token".into());
    prompt.password = true;
    filtered.inputs = vec![prompt];
    store.create(filtered.clone()).unwrap();
    store.create(stdio_server("plain", "x", &[])).unwrap();

    let text = fs::read_to_string(&path).unwrap();
    for key in ["\"callTimeout\"", "\"tools\"", "\"inputs\"", "\"password\""] {
        assert_eq!(text.matches(key).count(), 1, "{key}: {text}");
    }
    assert_eq!(stored(&store, "filtered"), filtered);
    let plain = stored(&store, "plain");
    assert_eq!(
        (
            plain.call_timeout_ms,
            plain.tools.is_all(),
            plain.inputs.len()
        ),
        (None, true, 0)
    );
    // A save of the listed (redacted) config keeps every one of them.
    let listed = store.list().unwrap().remove(0);
    store.save(listed).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), text);

    // A wrong shape is one clear error naming the field.
    let bad = parse_store_server(
        r#"{"id": "b", "tools": ["read"], "callTimeout": 0,
            "transport": {"type": "stdio", "command": "x"}}"#,
    )
    .unwrap_err();
    assert_eq!(bad.diagnostics[0].field, "tools", "{bad}");
    let zero = parse_store_server(
        r#"{"id": "z", "callTimeout": 0, "transport": {"type": "stdio", "command": "x"}}"#,
    )
    .unwrap();
    let problems = mcp_config::validate(&zero);
    assert!(
        problems
            .iter()
            .any(|d| d.code() == "invalid_timeout" && d.field == "callTimeout"),
        "{problems:?}"
    );
}

//! `mcpctl` introduces itself to servers as `mcpctl` with its version, in `initialize` and in the 2026-07-28 era's per-request `_meta`.

mod support;

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;
use support::Env;

/// Runs `mcpctl servers` against the fixture in `era` through a script
/// that copies everything mcpctl sends into a file; returns the messages.
fn sent(era: &str) -> Vec<Value> {
    let env = Env::new();
    let log = env.data_dir().join("sent.jsonl");
    let script = env.root_file(
        "tee.sh",
        &format!(
            "#!/bin/sh\ntee -a '{}' | exec '{}' --era {era}\n",
            log.display(),
            support::fixture_server().display()
        ),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rows = env.json(&[
        "servers",
        "--no-host-configs",
        "--stdio",
        &script.display().to_string(),
    ]);
    assert_eq!(rows[0]["status"], "ready", "{rows:#}");
    std::fs::read_to_string(&log)
        .expect("the script copied what mcpctl sent")
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON message a line"))
        .collect()
}

#[test]
fn initialize_names_mcpctl_and_its_version() {
    let messages = sent("legacy");
    let initialize = messages
        .iter()
        .find(|m| m["method"] == mcp_proto::methods::INITIALIZE)
        .expect("an initialize request");
    assert_eq!(
        initialize["params"]["clientInfo"],
        serde_json::json!({"name": "mcpctl", "version": env!("CARGO_PKG_VERSION")})
    );
}

#[test]
fn every_stateless_request_names_mcpctl_and_its_version() {
    let messages = sent("modern");
    let requests: Vec<&Value> = messages.iter().filter(|m| m.get("id").is_some()).collect();
    assert!(!requests.is_empty());
    for request in requests {
        assert_eq!(
            request["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"], "mcpctl",
            "{request}"
        );
        assert_eq!(
            request["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["version"],
            env!("CARGO_PKG_VERSION"),
            "{request}"
        );
    }
}

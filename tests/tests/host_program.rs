//! The bridge's host example (`crates/mcp-toolbridge/examples/host.rs`, one import path) run as a host runs it: a project's `.mcp.json` naming the fixture server over stdio, the startup gate with a tool cache on disk, an approval, one call, shutdown.

#[path = "../../crates/mcp-toolbridge/examples/host.rs"]
#[expect(dead_code, reason = "its `main` is for `cargo run --example host`")]
mod host;

use std::time::Duration;

use serde_json::json;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

#[tokio::test]
async fn the_host_example_finds_starts_offers_and_calls_a_configured_server() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("repo");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join(".mcp.json"),
        json!({"mcpServers": {"fx": {"command": FIXTURE}}}).to_string(),
    )
    .unwrap();
    let cache = dir.path().join("tools.json");

    for run in 0..2 {
        let transcript = tokio::time::timeout(
            Duration::from_secs(30),
            host::turn(
                &project,
                &cache,
                "mcp_fx_echo",
                json!({"text": "hello host"}),
            ),
        )
        .await
        .expect("one turn ends");
        assert!(
            transcript.contains("<mcp_servers>"),
            "run {run}: {transcript}"
        );
        assert!(
            transcript.contains("offered: mcp_fx_echo\n")
                && transcript.contains("offered: read_mcp_result\n"),
            "run {run}: {transcript}"
        );
        assert!(
            transcript.ends_with("mcp_fx_echo: hello host\n"),
            "run {run}: the approved call's result: {transcript}"
        );
        let cached: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
        assert!(
            cached.to_string().contains("\"echo\""),
            "run {run}: the catalog is cached"
        );
    }
}

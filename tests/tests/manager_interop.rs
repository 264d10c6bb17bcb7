//! `mcp-manager` with servers we did not write: `@modelcontextprotocol/server-everything` (stdio and Streamable HTTP) and a FastMCP server (stdio), including a FastMCP `list_changed` refresh.
//!
//! Prerequisites (`bash .ci/run` installs them): Node.js with
//! `tests/interop/node_modules`, and the Python venv with FastMCP. A missing
//! one fails the test with the command to run.

use std::time::Duration;

use mcp_config::{HttpConfig, SecretEntry, ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{ManagerEvent, ManagerOptions, McpManager, ServerStatus};
use mcp_proto::types::JsonObject;
use serde_json::json;
use tests::servers::{free_port, start_http_server};
use tokio::time::Instant;

/// How long any single step may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(30);

fn everything_stdio() -> ServerConfig {
    let mut stdio = StdioConfig::new(tests::node());
    stdio.args = vec![
        tests::server_everything().display().to_string(),
        "stdio".to_owned(),
    ];
    stdio
        .env
        .push(SecretEntry::new("GZIP_ALLOWED_DOMAINS", "localhost"));
    ServerConfig::new("everything", TransportConfig::Stdio(stdio))
}

fn fastmcp_stdio() -> ServerConfig {
    let mut stdio = StdioConfig::new(tests::venv_python().display().to_string());
    stdio.args = vec![
        tests::fastmcp_script().display().to_string(),
        "stdio".to_owned(),
    ];
    ServerConfig::new("fastmcp", TransportConfig::Stdio(stdio))
}

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_and_fastmcp_connect_through_the_manager() {
    let manager = McpManager::new(ManagerOptions::default());
    let report = manager
        .connect_servers([everything_stdio(), fastmcp_stdio()])
        .await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.ready.len(), 2, "{report:?}");

    let everything = manager.catalog("everything").unwrap();
    assert!(
        everything.server_info().name.contains("everything"),
        "{:?}",
        everything.server_info()
    );
    for tool in ["echo", "get-sum"] {
        assert!(everything.tool(tool).is_some(), "{tool} missing");
    }
    assert!(
        everything.resources().is_some_and(|r| !r.is_empty()),
        "server-everything declares resources"
    );
    assert!(everything.prompts().is_some_and(|p| !p.is_empty()));

    let fastmcp = manager.catalog("fastmcp").unwrap();
    assert_eq!(
        fastmcp.instructions(),
        Some("A FastMCP server used by interop tests.")
    );
    assert!(fastmcp.tool("add").is_some());

    let snapshot = manager.snapshot(None);
    let ids: Vec<&str> = snapshot.servers().iter().map(|s| s.id()).collect();
    assert_eq!(ids, ["everything", "fastmcp"]);

    // A call through the manager's client.
    let connected = manager
        .wait_ready("fastmcp", Instant::now() + DEADLINE)
        .await
        .unwrap();
    let sum = connected
        .server
        .call_tool("add", args(json!({"a": 20, "b": 22})))
        .await
        .expect("add");
    assert_ne!(sum.is_error, Some(true), "{sum:?}");
    assert_eq!(
        sum.structured_content,
        Some(json!({"result": 42})),
        "{sum:?}"
    );

    // FastMCP announces a new tool with list_changed: the manager refreshes
    // on the same connection.
    let mut events = manager.events();
    let before = fastmcp.lifetime();
    connected
        .server
        .call_tool("register_tool", args(json!({"name": "shout"})))
        .await
        .expect("register_tool");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let catalog = manager.catalog("fastmcp").unwrap();
        if catalog.tool("shout").is_some() && manager.status("fastmcp") == Some(ServerStatus::Ready)
        {
            assert_ne!(catalog.lifetime(), before);
            break;
        }
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(ManagerEvent::StatusChanged { id, status, .. })) if id == "fastmcp" => {
                assert!(status.error().is_none(), "{status:?}");
            }
            Ok(_) => {}
            Err(_) => panic!("the new tool never appeared"),
        }
    }
    manager.close().await;
    assert_eq!(manager.status("fastmcp"), Some(ServerStatus::Disconnected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http() {
    let port = free_port();
    let mut command = tokio::process::Command::new(tests::node());
    command
        .arg(tests::server_everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    let _server = start_http_server(command, port).await;
    let config = ServerConfig::new(
        "everything-http",
        TransportConfig::Http(HttpConfig::new(format!("http://127.0.0.1:{port}/mcp"))),
    );
    let manager = McpManager::new(ManagerOptions::default());
    let report = manager.connect_servers([config]).await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    let catalog = manager.catalog("everything-http").unwrap();
    assert!(catalog.tool("echo").is_some());
    manager.close().await;
}

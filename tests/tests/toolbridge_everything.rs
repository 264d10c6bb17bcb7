//! `mcp-toolbridge` with a server we did not write: `@modelcontextprotocol/server-everything` over stdio, through live tools (calls, its schemas' validation, an image, cancellation, the deadline) and the loader tools (manifest, a resource read, search).
//!
//! Prerequisite (`bash .ci/run` installs it): Node.js with
//! `tests/interop/node_modules`. Its absence fails the test with the
//! command to run.

use std::sync::Arc;
use std::time::Duration;

use mcp_config::{SecretEntry, ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{McpManager, ServerStatus};
use mcp_toolbridge::{
    ApprovalEvent, CallFailure, CancelToken, McpSession, ModelTool, PermissionPreset,
    SessionOptions, ToolCall, ToolOutcome,
};
use serde_json::{Value, json};
use tokio::sync::broadcast;
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

/// A manager with server-everything ready and settled: right after
/// `initialize` it registers more tools and announces them (refreshes that
/// end with status `ready`), which would make a binding taken before them
/// stale.
async fn everything() -> McpManager {
    let manager = McpManager::builder().build();
    let mut events = manager.events();
    let report = manager.connect_servers([everything_stdio()]).await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    let deadline = Instant::now() + DEADLINE;
    let settled = |manager: &McpManager| {
        manager.status("everything") == Some(ServerStatus::Ready)
            && manager
                .catalog("everything")
                .is_some_and(|c| c.tool("simulate-research-query").is_some())
    };
    while !settled(&manager) {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
            other => panic!("server-everything never announced its late tools: {other:?}"),
        }
    }
    manager
}

/// Full access, a call deadline, and calls that follow a refresh when
/// their tool did not change: server-everything announces its late tools
/// in several notifications, so a refresh can still land after the
/// manager first reports it settled.
fn full_access(call_timeout: Duration) -> SessionOptions {
    let mut options = SessionOptions::default();
    options.preset = PermissionPreset::FullAccess;
    options.call_timeout = Some(call_timeout);
    options.follow_unchanged_tools = true;
    options
}

async fn call(tool: &Arc<dyn ModelTool>, args: Value) -> ToolOutcome {
    tokio::time::timeout(DEADLINE, tool.call(ToolCall::new("call", args)))
        .await
        .expect("the call ends within the deadline")
}

fn text(outcome: &ToolOutcome) -> String {
    outcome
        .result()
        .map(|r| r.joined_text())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_through_live_tools() {
    let manager = everything().await;
    let session = McpSession::new(&manager, full_access(Duration::from_secs(60)));
    let tools = session.bind();
    // Its task-only tool cannot be called without tasks: reported, not bound.
    assert!(
        tools
            .unusable()
            .iter()
            .any(|u| u.tool == "simulate-research-query"),
        "{:?}",
        tools.unusable()
    );
    assert!(
        tools
            .get("mcp_everything_simulate-research-query")
            .is_none()
    );
    let tool = |name: &str| {
        tools
            .get(name)
            .unwrap_or_else(|| panic!("no {name} among {:?}", tools.tools()))
            .clone()
    };

    let echo = call(&tool("mcp_everything_echo"), json!({"message": "bridged"})).await;
    assert!(text(&echo).contains("bridged"), "{echo:?}");
    let sum = call(&tool("mcp_everything_get-sum"), json!({"a": 19, "b": 23})).await;
    assert!(text(&sum).contains("42"), "{sum:?}");
    let image = call(&tool("mcp_everything_get-tiny-image"), json!({})).await;
    let kinds: Vec<_> = image
        .result()
        .unwrap()
        .content
        .iter()
        .filter_map(|b| b.kind())
        .collect();
    assert!(kinds.contains(&"image"), "{kinds:?}");

    // Its schemas (as its SDK writes them) are enforced here.
    let invalid = call(&tool("mcp_everything_echo"), json!({})).await;
    assert!(
        matches!(invalid.failure(), Some(CallFailure::InvalidArguments(_))),
        "{invalid:?}"
    );
    assert!(
        text(&invalid).contains("\"message\" is a required property"),
        "{}",
        text(&invalid)
    );
    let wrong = call(&tool("mcp_everything_get-sum"), json!({"a": "19", "b": 23})).await;
    assert!(text(&wrong).contains("at /a"), "{}", text(&wrong));

    // Cancelling a long operation once it is authorized.
    let long = tool("mcp_everything_trigger-long-running-operation");
    let mut approvals = session.approval_events();
    let token = CancelToken::new();
    let started = Instant::now();
    let pending = tokio::spawn({
        let token = token.clone();
        let long = long.clone();
        async move {
            long.call(ToolCall::new("long", json!({"duration": 30, "steps": 3})).with_cancel(token))
                .await
        }
    });
    while !matches!(
        approvals.recv().await.unwrap(),
        ApprovalEvent::Resolved { .. }
    ) {}
    token.cancel();
    assert_eq!(pending.await.unwrap(), ToolOutcome::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(20));

    // The deadline, with a session whose calls get 500 ms.
    let hasty = McpSession::new(&manager, full_access(Duration::from_millis(500)));
    let long = hasty
        .bind()
        .get("mcp_everything_trigger-long-running-operation")
        .unwrap()
        .clone();
    let late = call(&long, json!({"duration": 30, "steps": 3})).await;
    assert_eq!(
        late.failure(),
        Some(&CallFailure::Timeout(Duration::from_millis(500)))
    );
    assert!(text(&late).starts_with("MCP error:"));

    // And the connection still answers.
    let again = call(&tool("mcp_everything_echo"), json!({"message": "again"})).await;
    assert!(text(&again).contains("again"));
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_through_the_loader_tools() {
    let manager = everything().await;
    let session = McpSession::new(&manager, full_access(Duration::from_secs(60)));
    session.bind();
    let loader = session.loader_tools();
    let manifest = call(&loader[0], json!({"server": "everything"})).await;
    let manifest = manifest
        .result()
        .unwrap()
        .structured_content
        .clone()
        .unwrap();
    let tools = manifest["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "echo"));
    let resource = manifest["resources"][0]["uri"]
        .as_str()
        .expect("server-everything lists resources")
        .to_owned();

    let read = call(&loader[2], json!({"server": "everything", "uri": resource})).await;
    let result = read.result().unwrap();
    assert!(!result.is_error && !result.content.is_empty(), "{read:?}");
    assert!(result.content.iter().all(|b| b.kind() == Some("text")));

    let echoed = call(
        &loader[1],
        json!({"server": "everything", "tool": "echo", "arguments": {"message": "via loader"}}),
    )
    .await;
    assert!(text(&echoed).contains("via loader"));

    let catalog = session.catalog_tools();
    let found = call(&catalog[0], json!({"query": "sum two numbers"})).await;
    let hits = found.result().unwrap().structured_content.clone().unwrap();
    assert_eq!(hits["tools"][0]["tool"], "get-sum", "{hits}");
    manager.close().await;
}

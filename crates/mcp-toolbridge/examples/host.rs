//! A whole host in one file: find a project's servers, start them behind the startup gate (250 ms, the default) with a tool cache, offer their tools (and the reader of results over the budget) to the model, ask before a call, make one call, shut down. Run: `cargo run -p mcp-toolbridge --example host -- PROJECT_DIR mcp_SERVER_TOOL '{"json": "arguments"}'`.
use mcp_toolbridge::prelude::*;
use std::{path::Path, sync::Arc};

/// Approves every call; a real host shows the person the request and waits.
struct AllowOnce;
#[async_trait]
impl ApprovalHandler for AllowOnce {
    async fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::AllowOnce
    }
}

/// One model turn: what the model is told and offered, and one call's result.
pub(crate) async fn turn(project: &Path, cache: &Path, tool: &str, args: Value) -> String {
    let cache = Arc::new(JsonFileToolCache::open(cache));
    let manager = McpManager::builder().cache(cache).build();
    let discovery = Discovery::default().project_root(project);
    let report = manager.discover_and_connect(&discovery).await;
    let session = McpSession::new(&manager, SessionOptions::default());
    session.set_approval_handler(Some(Arc::new(AllowOnce)));
    let tools = session.bind_startup(&report);
    let mut transcript = format!("You are a coding agent.\n{}", tools.prompt_section());
    // The servers' tools, and `read_mcp_result` for results over the budget.
    for offered in tools.tools().iter().chain(&session.result_tools()) {
        transcript += &format!("offered: {}\n", offered.name());
    }
    let outcome = tools.call(tool, ToolCall::new("call_1", args)).await;
    manager.close().await;
    let result = outcome.result().map(ToolResult::joined_text);
    transcript + &format!("{tool}: {}\n", result.as_deref().unwrap_or("cancelled"))
}

#[tokio::main]
async fn main() {
    let [project, tool, args] = [1, 2, 3].map(|i| std::env::args().nth(i).unwrap_or_default());
    let cache = std::env::temp_dir().join("mcp-host-example-tools.json");
    let args = serde_json::from_str(&args).unwrap_or_default();
    print!("{}", turn(project.as_ref(), &cache, &tool, args).await);
}

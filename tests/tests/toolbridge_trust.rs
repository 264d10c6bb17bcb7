//! What a model sees of project servers, over real fixture processes: a project server the person has not approved never starts and never appears in the prompt section, the loader tools' list or a `load_mcp`; an approved one appears only to sessions working inside its project.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_config::{Discovery, DiscoveryOptions, TrustDecision, TrustGate, TrustStore};
use mcp_manager::McpManager;
use mcp_toolbridge::{
    LOAD_MCP, McpSession, ModelTool, PermissionPreset, SessionOptions, ToolCall, ToolOutcome,
};
use serde_json::json;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// How long any single step may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(30);

/// An `mcpServers` entry running the fixture, appending its pid to `pids`.
fn entry(pids: &Path) -> serde_json::Value {
    json!({"command": FIXTURE, "args": ["--era", "legacy", "--pid-file", pids]})
}

fn session(manager: &McpManager, workspace: &Path) -> McpSession {
    let mut options = SessionOptions::default();
    options.preset = PermissionPreset::FullAccess;
    options.workspace = Some(workspace.to_owned());
    McpSession::new(manager, options)
}

fn load_mcp(session: &McpSession) -> std::sync::Arc<dyn ModelTool> {
    session
        .loader_tools()
        .into_iter()
        .find(|tool| tool.name() == LOAD_MCP)
        .expect("load_mcp is offered")
}

async fn load(session: &McpSession, server: &str) -> ToolOutcome {
    let tool = load_mcp(session);
    tokio::time::timeout(
        DEADLINE,
        tool.call(ToolCall::new("load", json!({"server": server}))),
    )
    .await
    .expect("load_mcp ends within the deadline")
}

fn text(outcome: &ToolOutcome) -> String {
    format!("{outcome:?}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unapproved_project_servers_never_reach_the_model_and_approved_ones_stay_in_their_project()
{
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (repo, elsewhere) = (root.join("repo"), root.join("elsewhere"));
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let pids = |name: &str| -> PathBuf { root.join(format!("{name}.pids")) };
    let user = root.join("user.json");
    std::fs::write(
        &user,
        json!({"mcpServers": {"mine": entry(&pids("mine"))}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        repo.join(".mcp.json"),
        json!({"mcpServers": {"proj": entry(&pids("proj"))}}).to_string(),
    )
    .unwrap();
    let gate = || TrustGate::new(TrustStore::open(root.join("data/trust.json")));
    let discover = |gate: TrustGate| {
        Discovery::new(DiscoveryOptions::default())
            .user_file(&user)
            .project_root(&repo)
            .trust(gate)
            .discover()
    };

    // Not approved, nobody to ask: the project server is held back.
    let report = discover(gate());
    assert_eq!(report.untrusted().count(), 1);
    let manager = McpManager::builder().build();
    let startup = manager.connect_discovered(&report).await;
    assert_eq!(startup.ready.len(), 1, "{:?}", startup.errors);
    let inside = session(&manager, &repo.join("src"));
    let tools = inside.bind();
    assert!(tools.get("mcp_mine_echo").is_some());
    assert!(tools.tools().iter().all(|t| !t.name().contains("proj")));
    assert!(
        !tools.prompt_section().contains("proj"),
        "{}",
        tools.prompt_section()
    );
    assert!(!load_mcp(&inside).description().contains("proj"));
    // Not even a name the model could pass: the schema has no such server.
    let refused = load(&inside, "proj").await;
    assert!(text(&refused).contains("is not one of"), "{refused:?}");
    assert!(!pids("proj").exists(), "the unapproved server was started");
    manager.close().await;

    // Approved: it starts, and a session inside the project gets it ...
    let report = discover(gate().prompt(|_: &_| TrustDecision::ApproveOnce));
    assert_eq!(report.untrusted().count(), 0);
    let manager = McpManager::builder().build();
    let startup = manager.connect_discovered(&report).await;
    assert_eq!(startup.ready.len(), 2, "{:?}", startup.errors);
    let inside = session(&manager, &repo.join("src"));
    let tools = inside.bind();
    assert!(tools.get("mcp_proj_echo").is_some());
    assert!(tools.prompt_section().contains("proj"));
    assert!(load_mcp(&inside).description().contains("proj"));

    // ... and a session working elsewhere does not, by any way.
    let outside = session(&manager, &elsewhere);
    let tools = outside.bind();
    assert!(tools.get("mcp_mine_echo").is_some());
    assert!(tools.get("mcp_proj_echo").is_none());
    assert!(!tools.prompt_section().contains("proj"));
    assert!(!load_mcp(&outside).description().contains("proj"));
    let refused = load(&outside, "proj").await;
    assert!(text(&refused).contains("is not one of"), "{refused:?}");
    manager.close().await;
}

//! `mcp-toolbridge` over real fixture servers run by `mcp-manager`: live and deferred tools, argument validation, image results, cancellation, the call deadline, approval flows with grant revocation, loader tools, 1,000 tools from 10 servers, and a prompt section free of configuration secrets.
//!
//! Every wait is on a real event (a manager event, a call's answer, a
//! rebinding), bounded by [`DEADLINE`], which only a failure reaches. The
//! two timing tests wait on the deadline they test.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_config::{HttpConfig, SecretEntry, ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{JsonFileToolCache, ManagerEvent, McpManager, ToolCache};
use mcp_toolbridge::{
    ApprovalDecision, ApprovalEvent, ApprovalHandler, ApprovalRequest, ApprovalSource, CallFailure,
    CancelToken, McpSession, ModelTool, NameOptions, NotApproved, PermissionPreset, SessionOptions,
    ToolAccess, ToolCall, ToolOutcome, ToolSet, async_trait, names,
};
use serde_json::{Value, json};
use tests::servers::{free_port, start_http_server};
use tokio::sync::broadcast;
use tokio::time::Instant;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// How long any single step may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// A fixture server run over stdio with `args`.
fn fixture(id: &str, args: &[&str]) -> ServerConfig {
    let mut stdio = StdioConfig::new(FIXTURE);
    // These tests exercise the handshake era: the fixture serves only it
    // (the client still probes for the stateless era first, and falls back).
    stdio.args = ["--era", "legacy"]
        .iter()
        .chain(args)
        .map(|arg| (*arg).to_owned())
        .collect();
    ServerConfig::new(id, TransportConfig::Stdio(stdio))
}

/// A manager with the fixture `fx` ready.
async fn manager_with_fx(args: &[&str]) -> McpManager {
    let manager = McpManager::builder().build();
    let report = manager.connect_servers([fixture("fx", args)]).await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    manager
}

fn full_access() -> SessionOptions {
    let mut options = SessionOptions::default();
    options.preset = PermissionPreset::FullAccess;
    options
}

async fn call(tools: &ToolSet, name: &str, args: Value) -> ToolOutcome {
    let tool = tools.get(name).unwrap_or_else(|| panic!("no tool {name}"));
    tokio::time::timeout(DEADLINE, tool.call(ToolCall::new("call", args)))
        .await
        .expect("the call ends within the deadline")
}

async fn call_tool(tool: &Arc<dyn ModelTool>, args: Value) -> ToolOutcome {
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

/// Waits for a catalog swap of `id` on `events`.
async fn swapped(events: &mut broadcast::Receiver<ManagerEvent>, id: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(ManagerEvent::CatalogSwapped { id: swapped, .. })) if swapped == id => return,
            Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
            other => panic!("no catalog swap of {id}: {other:?}"),
        }
    }
}

/// An approval handler that answers from a queue (an empty queue denies)
/// and keeps every request.
#[derive(Default)]
struct Scripted {
    decisions: Mutex<VecDeque<ApprovalDecision>>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Scripted {
    fn with(decisions: &[ApprovalDecision]) -> Arc<Self> {
        let handler = Scripted::default();
        handler.decisions.lock().unwrap().extend(decisions);
        Arc::new(handler)
    }

    fn then(&self, decision: ApprovalDecision) {
        self.decisions.lock().unwrap().push_back(decision);
    }

    fn asked(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

#[async_trait]
impl ApprovalHandler for Scripted {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request.clone());
        self.decisions
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(ApprovalDecision::Deny)
    }
}

/// A handler that never answers.
struct Silent;

#[async_trait]
impl ApprovalHandler for Silent {
    async fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        std::future::pending().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_tools_call_validate_and_convert_results() {
    let manager =
        manager_with_fx(&["--instructions", "Fixture tools for tests.\nMore detail."]).await;
    let session = McpSession::new(&manager, full_access());
    let tools = session.bind();
    assert!(tools.unusable().is_empty());
    assert_eq!(tools.tools().len(), 12);
    assert_eq!(tools.resolve("mcp_fx_ask_roots"), Some(("fx", "ask_roots")));
    assert_eq!(
        tools.prompt_section(),
        "<mcp_servers>\n<server id=\"fx\" name=\"fx\" access=\"12 tools, declared directly\">Fixture tools for tests.</server>\n</mcp_servers>"
    );

    let echo = call(&tools, "mcp_fx_echo", json!({"text": "hello"})).await;
    assert_eq!(text(&echo), "hello");
    let sum = call(&tools, "mcp_fx_add", json!({"a": 2, "b": 40})).await;
    assert_eq!(
        sum.result().unwrap().structured_content,
        Some(json!({"sum": 42}))
    );
    let image = call(&tools, "mcp_fx_image", json!({})).await;
    let block = &image.result().unwrap().content[0];
    assert_eq!(block.kind(), Some("image"));
    let failed = call(&tools, "mcp_fx_fail", json!({})).await;
    assert!(matches!(&failed, ToolOutcome::Completed(r) if r.is_error));
    assert!(text(&failed).contains("always fails"));

    // Validation happens here, before the server sees anything.
    let invalid = call(&tools, "mcp_fx_add", json!({"a": "two"})).await;
    assert!(matches!(
        invalid.failure(),
        Some(CallFailure::InvalidArguments(_))
    ));
    let message = text(&invalid);
    assert!(
        message.contains("at /a: \"two\" is not of type \"number\""),
        "{message}"
    );
    assert!(
        message.contains("\"b\" is a required property"),
        "{message}"
    );
    let negative = call(&tools, "mcp_fx_slow", json!({"ms": -5})).await;
    assert!(
        text(&negative).contains("-5 is less than the minimum of 0"),
        "{}",
        text(&negative)
    );
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_is_an_outcome_and_the_deadline_fails_the_call() {
    let manager = manager_with_fx(&[]).await;
    let mut options = full_access();
    options.call_timeout = Some(Duration::from_millis(300));
    let session = McpSession::new(&manager, options);
    let tools = session.bind();

    // Cancelled once the call is authorized (its request is then going out).
    let mut approvals = session.approval_events();
    let token = CancelToken::new();
    let slow = tools.get("mcp_fx_slow").unwrap().clone();
    let started = Instant::now();
    let pending = tokio::spawn({
        let token = token.clone();
        async move {
            slow.call(ToolCall::new("c1", json!({"ms": 30000})).with_cancel(token))
                .await
        }
    });
    loop {
        if let ApprovalEvent::Resolved { source, .. } = approvals.recv().await.unwrap() {
            assert_eq!(source, ApprovalSource::FullAccess);
            break;
        }
    }
    token.cancel();
    assert_eq!(pending.await.unwrap(), ToolOutcome::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));

    // The 300 ms deadline: an `MCP error` for the model, the request withdrawn.
    let started = Instant::now();
    let late = call(&tools, "mcp_fx_slow", json!({"ms": 30000})).await;
    assert_eq!(
        late.failure(),
        Some(&CallFailure::Timeout(Duration::from_millis(300)))
    );
    assert!(text(&late).starts_with("MCP error: the call did not finish within 0.3 s"));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(started.elapsed() < Duration::from_secs(10));

    // The connection is still good: nothing was retried, nothing is stuck.
    assert_eq!(
        text(&call(&tools, "mcp_fx_echo", json!({"text": "still here"})).await),
        "still here"
    );
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_tools_wait_for_a_late_server_then_the_session_rebinds() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let cache_path = dir.path().join("tools.json");
    let late = fixture("late", &["--delay-initialize-ms", "1500"]);

    // First run: no cache entry, so the startup gate waits; the cache fills.
    let first = McpManager::builder()
        .cache(Arc::new(JsonFileToolCache::open(&cache_path)) as Arc<dyn ToolCache>)
        .build();
    let report = first.connect_servers([late.clone()]).await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    first.flush_cache().await;
    first.close().await;

    // Second run: the gate closes at 250 ms with the cached tools.
    let manager = McpManager::builder()
        .cache(Arc::new(JsonFileToolCache::open(&cache_path)) as Arc<dyn ToolCache>)
        .build();
    let report = manager.connect_servers([late]).await;
    assert_eq!(report.deferred.len(), 1, "{report:?}");
    let session = McpSession::new(&manager, full_access());
    let tools = session.bind_startup(&report);
    let echo = tools.get("mcp_late_echo").expect("a deferred echo").clone();
    assert!(format!("{echo:?}").starts_with("DeferredTool"), "{echo:?}");
    assert_eq!(tools.prompt_section(), "", "a connecting server has no row");
    // A host that calls plain `bind` (no report at hand) is offered the
    // same deferred tool: the manager remembers what the gate deferred.
    let other = McpSession::new(&manager, full_access());
    let plain = other.bind();
    let deferred = plain
        .get("mcp_late_echo")
        .expect("bind offers the deferred echo");
    assert!(
        format!("{deferred:?}").starts_with("DeferredTool"),
        "{deferred:?}"
    );
    let mut changes = session.changes();
    changes.borrow_and_update();

    let outcome = call_tool(&echo, json!({"text": "worth the wait"})).await;
    assert_eq!(text(&outcome), "worth the wait");

    // The late-connection path: the session rebinds on its own.
    tokio::time::timeout(DEADLINE, changes.changed())
        .await
        .expect("the session rebinds")
        .unwrap();
    let rebound = session.tools();
    let live = rebound.get("mcp_late_echo").unwrap();
    assert!(format!("{live:?}").starts_with("LiveTool"), "{live:?}");
    assert!(rebound.prompt_section().contains("id=\"late\""));
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_allow_deny_grant_and_revoke() {
    let manager = manager_with_fx(&[]).await;
    let session = McpSession::new(&manager, SessionOptions::default());
    assert_eq!(session.preset(), PermissionPreset::ReadOnly);
    let handler = Scripted::with(&[
        ApprovalDecision::Deny,
        ApprovalDecision::AllowOnce,
        ApprovalDecision::AllowSession,
    ]);
    session.set_approval_handler(Some(handler.clone()));
    let mut manager_events = manager.events();
    let tools = session.bind();

    // Deny: the side effect (a new tool) never happens.
    let denied = call(&tools, "mcp_fx_add_tool", json!({"name": "denied_tool"})).await;
    assert_eq!(
        denied.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Denied))
    );
    // Allow once: it does, and the server announces a new catalog.
    let allowed = call(&tools, "mcp_fx_add_tool", json!({"name": "allowed_tool"})).await;
    assert!(allowed.failure().is_none(), "{allowed:?}");
    swapped(&mut manager_events, "fx").await;
    let catalog = manager.catalog("fx").unwrap();
    assert!(catalog.tool("allowed_tool").is_some());
    assert!(catalog.tool("denied_tool").is_none());
    let asked = handler.asked.lock().unwrap().clone();
    assert_eq!(
        asked[0].arguments,
        json!({"name": "denied_tool"}).as_object().unwrap().clone()
    );
    assert_eq!(
        (asked[1].server.as_str(), asked[1].tool.as_str()),
        ("fx", "add_tool")
    );

    // The tools bound before the refresh are stale now.
    let stale = call(&tools, "mcp_fx_echo", json!({"text": "x"})).await;
    assert_eq!(
        stale.failure(),
        Some(&CallFailure::Stale {
            server: "fx".into()
        })
    );

    // Allow for this session: the exact tool, any arguments, no more asking.
    let tools = session.bind();
    assert!(tools.get("mcp_fx_allowed_tool").is_some());
    let mut approvals = session.approval_events();
    for text_arg in ["one", "two"] {
        assert_eq!(
            text(&call(&tools, "mcp_fx_echo", json!({"text": text_arg})).await),
            text_arg
        );
    }
    assert_eq!(handler.asked(), 3);
    assert_eq!(session.grants().len(), 1);
    let sources: Vec<ApprovalSource> = std::iter::from_fn(|| approvals.try_recv().ok())
        .filter_map(|e| match e {
            ApprovalEvent::Resolved { source, .. } => Some(source),
            _ => None,
        })
        .collect();
    assert_eq!(
        sources,
        [ApprovalSource::Handler, ApprovalSource::SessionGrant]
    );

    // A display-name-only change keeps the grant.
    let mut renamed = fixture("fx", &[]);
    renamed.name = "Fixture, renamed".to_owned();
    manager.save(renamed).await.unwrap();
    let tools = session.bind();
    assert!(tools.prompt_section().contains("name=\"Fixture, renamed\""));
    assert_eq!(
        text(&call(&tools, "mcp_fx_echo", json!({"text": "three"})).await),
        "three"
    );
    assert_eq!(handler.asked(), 3);
    assert_eq!(session.grants().len(), 1);

    // A refresh revokes it.
    let added = call(&tools, "mcp_fx_add_tool", json!({"name": "another"})).await;
    assert_eq!(handler.asked(), 4, "add_tool was not granted");
    assert_eq!(
        added.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Denied))
    );
    handler.then(ApprovalDecision::AllowOnce);
    let added = call(&tools, "mcp_fx_add_tool", json!({"name": "another"})).await;
    assert!(added.failure().is_none(), "{added:?}");
    swapped(&mut manager_events, "fx").await;
    assert!(session.grants().is_empty());
    handler.then(ApprovalDecision::AllowSession);
    let tools = session.bind();
    assert_eq!(
        text(&call(&tools, "mcp_fx_echo", json!({"text": "four"})).await),
        "four"
    );
    assert_eq!(handler.asked(), 6);
    assert_eq!(session.grants().len(), 1);

    // A connection config change revokes it too.
    manager
        .save(fixture("fx", &["--instructions", "changed"]))
        .await
        .unwrap();
    swapped(&mut manager_events, "fx").await;
    assert!(session.grants().is_empty());
    let tools = session.bind();
    let _ = call(&tools, "mcp_fx_echo", json!({"text": "five"})).await;
    assert_eq!(handler.asked(), 7, "asked again after the config change");
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_handler_times_out_and_a_refresh_ends_a_pending_approval() {
    let manager = manager_with_fx(&[]).await;
    let mut options = SessionOptions::default();
    options.approval_timeout = Some(Duration::from_millis(300));
    let session = McpSession::new(&manager, options);
    session.set_approval_handler(Some(Arc::new(Silent)));
    let tools = session.bind();
    let timed_out = call(&tools, "mcp_fx_echo", json!({"text": "x"})).await;
    assert_eq!(
        timed_out.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Timeout(
            Duration::from_millis(300)
        )))
    );

    // A second session without a timeout: the approval stays pending until
    // the catalog changes under it.
    let mut options = SessionOptions::default();
    options.approval_timeout = None;
    let patient = McpSession::new(&manager, options);
    patient.set_approval_handler(Some(Arc::new(Silent)));
    let mut approvals = patient.approval_events();
    let echo = patient.bind().get("mcp_fx_echo").unwrap().clone();
    let pending =
        tokio::spawn(async move { echo.call(ToolCall::new("c", json!({"text": "x"}))).await });
    assert!(matches!(
        approvals.recv().await.unwrap(),
        ApprovalEvent::Requested(_)
    ));
    // Someone else's call changes the catalog (add_tool → list_changed).
    manager
        .server("fx")
        .unwrap()
        .call_tool("add_tool", json!({"name": "surprise"}).as_object().cloned())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(DEADLINE, pending)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Revoked))
    );
    assert!(matches!(
        approvals.recv().await.unwrap(),
        ApprovalEvent::Resolved {
            source: ApprovalSource::Revoked,
            ..
        }
    ));
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loader_tools_connect_list_call_and_read() {
    let manager = manager_with_fx(&["--instructions", "The fixture."]).await;
    manager.disconnect("fx").await.unwrap();
    let session = McpSession::new(&manager, SessionOptions::default());
    let handler = Scripted::with(&[ApprovalDecision::AllowOnce]);
    session.set_approval_handler(Some(handler.clone()));
    assert!(
        session.bind().tools().is_empty(),
        "a disconnected server has no tools"
    );
    let loader = session.loader_tools();
    let [load, call_mcp, read] = &loader[..] else {
        panic!("three loader tools: {loader:?}")
    };
    assert_eq!(
        load.input_schema().to_value()["properties"]["server"]["enum"],
        json!(["fx"])
    );

    let early = call_tool(
        call_mcp,
        json!({"server": "fx", "tool": "echo", "arguments": {"text": "x"}}),
    )
    .await;
    assert!(
        text(&early).contains("call load_mcp with server \"fx\" first"),
        "{}",
        text(&early)
    );

    let loaded = call_tool(load, json!({"server": "fx"})).await;
    let manifest = loaded.result().unwrap().structured_content.clone().unwrap();
    assert_eq!(manifest["instructions"], "The fixture.");
    let tool_names: Vec<&str> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tool_names.contains(&"echo") && tool_names.contains(&"image"),
        "{tool_names:?}"
    );
    assert_eq!(manifest["resources"][0]["uri"], "fixture://readme");

    let echoed = call_tool(
        call_mcp,
        json!({"server": "fx", "tool": "echo", "arguments": {"text": "loaded"}}),
    )
    .await;
    assert_eq!(text(&echoed), "loaded");
    assert_eq!(handler.asked.lock().unwrap()[0].via, "call_mcp_tool");
    let invalid = call_tool(
        call_mcp,
        json!({"server": "fx", "tool": "echo", "arguments": {"text": 1}}),
    )
    .await;
    assert!(matches!(
        invalid.failure(),
        Some(CallFailure::InvalidArguments(_))
    ));
    let failing = call_tool(call_mcp, json!({"server": "fx", "tool": "fail"})).await;
    assert_eq!(
        failing.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Denied))
    );

    let readme = call_tool(read, json!({"server": "fx", "uri": "fixture://readme"})).await;
    assert!(
        text(&readme).starts_with("This is mcp-fixture-server"),
        "{}",
        text(&readme)
    );

    // Catalog search over the binding, schemas only on request.
    let tools = session.bind();
    assert_eq!(tools.tools().len(), 12);
    let catalog = session.catalog_tools();
    let found = call_tool(&catalog[0], json!({"query": "image png"})).await;
    let hits = found.result().unwrap().structured_content.clone().unwrap();
    assert_eq!(hits["tools"][0]["name"], "mcp_fx_image");
    let described = call_tool(&catalog[1], json!({"name": "mcp_fx_add"})).await;
    let schema = described
        .result()
        .unwrap()
        .structured_content
        .clone()
        .unwrap();
    assert_eq!(schema["inputSchema"]["required"], json!(["a", "b"]));
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_tools_from_ten_servers_get_distinct_names() {
    // Ids that read the same once sanitized (`team.0` and `team_0`), so
    // every one of their tools collides and needs a hash suffix.
    let ids: Vec<String> = (0..5)
        .flat_map(|i| [format!("team.{i}"), format!("team_{i}")])
        .collect();
    let configs: Vec<ServerConfig> = ids
        .iter()
        .map(|id| fixture(id, &["--tools", "88"]))
        .collect();
    let manager = McpManager::builder().build();
    let report = manager.connect_servers(configs).await;
    assert_eq!(report.ready.len(), 10, "{:?}", report.errors);
    let session = McpSession::new(&manager, full_access());
    let tools = session.bind();
    assert_eq!(tools.tools().len(), 1000);
    assert!(tools.unusable().is_empty());
    let mut seen = HashSet::new();
    for tool in tools.tools() {
        assert!(
            names::is_valid_name(tool.name(), &NameOptions::default()),
            "{}",
            tool.name()
        );
        assert!(seen.insert(tool.name().to_owned()), "{} twice", tool.name());
        let (server, raw) = tools.resolve(tool.name()).unwrap();
        assert!(ids.iter().any(|id| id == server));
        assert!(!raw.is_empty());
    }
    // A suffixed name dispatches to its exact server.
    let dotted = tools
        .tools()
        .iter()
        .find(|t| tools.resolve(t.name()) == Some(("team.3", "echo")))
        .unwrap();
    assert!(
        dotted.name().starts_with("mcp_team_3_echo_"),
        "{}",
        dotted.name()
    );
    assert_eq!(
        text(&call_tool(dotted, json!({"text": "team.3"})).await),
        "team.3"
    );
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_section_never_shows_configuration_secrets() {
    const ENV_SECRET: &str = "sk-live-ENVSECRET-4242";
    const HEADER_SECRET: &str = "Bearer HDRSECRET-1717";
    const URL_SECRET: &str = "URLSECRET-9393";
    let port = free_port();
    let mut command = tokio::process::Command::new(FIXTURE);
    command.args(["--era", "legacy"]);
    command.args([
        "--transport",
        "http",
        "--port",
        &port.to_string(),
        "--instructions",
        "Remote fixture.",
    ]);
    let _http = start_http_server(command, port).await;

    let mut local = fixture("local", &["--instructions", "Local fixture.\nSecond line."]);
    if let TransportConfig::Stdio(stdio) = &mut local.transport {
        stdio.env.push(SecretEntry::new("API_TOKEN", ENV_SECRET));
    }
    local.description = Some("Local tools.".to_owned());
    let url = format!("http://127.0.0.1:{port}/mcp?key={URL_SECRET}");
    let mut http = HttpConfig::new(url.clone());
    http.headers
        .push(SecretEntry::new("Authorization", HEADER_SECRET));
    let remote = ServerConfig::new("remote", TransportConfig::Http(http));

    let manager = McpManager::builder().build();
    let report = manager.connect_servers([local, remote]).await;
    assert_eq!(report.ready.len(), 2, "{:?}", report.errors);
    let mut options = full_access();
    options.access = ToolAccess::Loader;
    let session = McpSession::new(&manager, options);
    let tools = session.bind();
    let section = tools.prompt_section();
    assert!(
        section.contains("Local fixture.") && section.contains("Remote fixture."),
        "{section}"
    );

    // Everything a model could be shown: the section, tool and loader
    // descriptions, a manifest, and the Debug forms a host might log.
    let loader = session.loader_tools();
    let manifest = call_tool(&loader[0], json!({"server": "remote"})).await;
    let mut shown = vec![
        section.to_owned(),
        format!("{tools:?} {session:?}"),
        text(&manifest),
    ];
    for tool in tools.tools().iter().chain(&loader) {
        shown.push(format!(
            "{} {} {:?} {tool:?}",
            tool.name(),
            tool.description(),
            tool.input_schema()
        ));
    }
    for text in &shown {
        for secret in [
            ENV_SECRET,
            HEADER_SECRET,
            "HDRSECRET",
            URL_SECRET,
            &url,
            FIXTURE,
            "127.0.0.1",
        ] {
            assert!(!text.contains(secret), "{secret:?} leaked into {text}");
        }
    }
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_drops_every_mcp_tool_and_rebinds_the_current_ones() {
    let manager = manager_with_fx(&[]).await;
    let session = McpSession::new(&manager, SessionOptions::default());
    let handler = Scripted::with(&[ApprovalDecision::AllowSession]);
    session.set_approval_handler(Some(handler.clone()));
    let before = session.bind();
    assert_eq!(
        text(&call(&before, "mcp_fx_echo", json!({"text": "a"})).await),
        "a"
    );
    assert_eq!(session.grants().len(), 1);

    // A host's reload: it reconnects (here: a whole new manager with
    // one more server) and refreshes the session's MCP tools.
    let reloaded = McpManager::builder().build();
    let report = reloaded
        .connect_servers([fixture("fx", &[]), fixture("fy", &[])])
        .await;
    assert_eq!(report.ready.len(), 2, "{:?}", report.errors);
    manager.close().await;
    let mut changes = session.changes();
    changes.borrow_and_update();
    let after = session.refresh(&reloaded);
    assert!(changes.has_changed().unwrap());
    assert_eq!(after.tools().len(), 24);
    assert!(after.get("mcp_fy_echo").is_some());
    assert!(session.grants().is_empty(), "a reload ends the grants");
    let stale = call(&before, "mcp_fx_echo", json!({"text": "b"})).await;
    assert_eq!(
        stale.failure(),
        Some(&CallFailure::Stale {
            server: "fx".into()
        })
    );
    handler.then(ApprovalDecision::AllowOnce);
    assert_eq!(
        text(&call(&after, "mcp_fy_echo", json!({"text": "c"})).await),
        "c"
    );
    assert_eq!(handler.asked(), 2);

    // A reconnect of one server through the same manager: its old tools go
    // stale, a refresh binds the new connection.
    let mut events = reloaded.events();
    reloaded.retry("fx").unwrap();
    swapped(&mut events, "fx").await;
    let stale = call(&after, "mcp_fx_echo", json!({"text": "d"})).await;
    assert_eq!(
        stale.failure(),
        Some(&CallFailure::Stale {
            server: "fx".into()
        })
    );
    handler.then(ApprovalDecision::AllowOnce);
    let fresh = session.refresh(&reloaded);
    assert_eq!(
        text(&call(&fresh, "mcp_fx_echo", json!({"text": "e"})).await),
        "e"
    );
    reloaded.close().await;
}

/// A manager with `web`, the fixture over Streamable HTTP (handshake era)
/// whose session expires after six requests, ready; and the fixture.
async fn manager_with_expiring_web(extra: &[&str]) -> (McpManager, tests::servers::FixtureHttp) {
    let mut args = vec![
        "--era",
        "legacy",
        "--transport",
        "http",
        "--expire-session-after",
        "6",
    ];
    args.extend_from_slice(extra);
    let server = tests::servers::start_fixture_http(FIXTURE, &args).await;
    let config = ServerConfig::new(
        "web",
        TransportConfig::Http(HttpConfig::new(server.url.clone())),
    );
    let manager = McpManager::builder().build();
    let report = manager.connect_servers([config]).await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    (manager, server)
}

/// Calls `echo` until the session has expired: initialize and the three
/// listings were requests 1-4, the calls are 5 and 6, the third call finds
/// the session gone. Returns once the manager has dropped the old catalog.
async fn expire_the_session(manager: &McpManager, tools: &ToolSet) {
    let mut events = manager.events();
    for n in 5..=6 {
        let outcome = call(tools, "mcp_web_echo", json!({"text": "before"})).await;
        assert_eq!(text(&outcome), "before", "request {n}: {outcome:?}");
    }
    let expired = call(tools, "mcp_web_echo", json!({"text": "expired"})).await;
    assert!(
        matches!(expired.failure(), Some(CallFailure::Connection(_))),
        "{expired:?}"
    );
    let deadline = Instant::now() + DEADLINE;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(ManagerEvent::CatalogRevoked { id, .. })) if id == "web" => return,
            Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
            other => panic!("the old catalog was never dropped: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_tool_waits_for_its_server_to_renew_an_expired_session() {
    // Initialize takes 300 ms, so the call after the expiry certainly finds
    // the new session on its way rather than ready.
    let (manager, _server) = manager_with_expiring_web(&["--delay-initialize-ms", "300"]).await;
    let session = McpSession::new(&manager, full_access());
    let tools = session.bind();
    expire_the_session(&manager, &tools).await;
    let outcome = call(&tools, "mcp_web_echo", json!({"text": "renewed"})).await;
    assert_eq!(text(&outcome), "renewed", "{outcome:?}");
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_tool_whose_server_does_not_come_back_fails_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let hang = dir.path().join("hang");
    let hang_arg = hang.display().to_string();
    let (manager, _server) =
        manager_with_expiring_web(&["--hang-initialize-if-exists", &hang_arg]).await;
    let wait = Duration::from_secs(1);
    let mut options = full_access();
    options.connect_wait = wait;
    let session = McpSession::new(&manager, options);
    let tools = session.bind();
    // From now on the fixture never answers initialize.
    std::fs::write(&hang, "").unwrap();
    expire_the_session(&manager, &tools).await;
    let started = Instant::now();
    let outcome = call(&tools, "mcp_web_echo", json!({"text": "never"})).await;
    let took = started.elapsed();
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotReady {
            server: "web".into(),
            waited: wait,
        }),
        "{outcome:?}"
    );
    assert!(
        took >= wait && took < wait + Duration::from_secs(2),
        "the call gave up after {took:?}, not at its {wait:?} deadline"
    );
    manager.close().await;
}

/// The Skills extension through the loader tools, over a real fixture in
/// each era: `load_mcp` lists the skills from their entries; reading a
/// listed skill's `SKILL.md` loads it, verified; a loaded skill's listed
/// file is read, an unlisted one in its directory is refused without being
/// used; a skill the listing leaves out is found with `skills/get`; a
/// skill whose `SKILL.md` does not match its digest never reaches the
/// model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_listed_loaded_verified_and_read_through_the_loader_tools() {
    for era in ["legacy", "modern"] {
        let mut config = fixture("fx", &["--skills"]);
        if let TransportConfig::Stdio(stdio) = &mut config.transport {
            stdio.args[1] = era.to_owned();
        }
        let manager = McpManager::builder().build();
        let report = manager.connect_servers([config]).await;
        assert_eq!(report.ready.len(), 1, "{era}: {:?}", report.errors);
        let catalog = manager.catalog("fx").unwrap();
        assert_eq!(catalog.skills().map(<[_]>::len), Some(2), "{era}");

        let session = McpSession::new(&manager, full_access());
        let loader = session.loader_tools();
        let [load, _, read] = &loader[..] else {
            panic!("three loader tools: {loader:?}")
        };
        let loaded = call_tool(load, json!({"server": "fx"})).await;
        let manifest = loaded.result().unwrap().structured_content.clone().unwrap();
        assert_eq!(
            manifest["skills"],
            json!([
                {"uri": "skill://pdf-processing/SKILL.md", "name": "pdf-processing",
                 "description": "Extract, fill, and assemble PDF documents"},
                {"uri": "skill://tampered/SKILL.md", "name": "tampered",
                 "description": "A skill whose file changed after listing"}
            ]),
            "{era}"
        );
        let read_uri = |uri: &str| json!({"server": "fx", "uri": uri});

        // Before the skill is loaded, its supporting file is an ordinary
        // resource read; loading the skill verifies its SKILL.md.
        let skill = call_tool(read, read_uri("skill://pdf-processing/SKILL.md")).await;
        assert!(
            text(&skill).contains("Read references/FORMS.md"),
            "{era}: {skill:?}"
        );
        let forms = call_tool(read, read_uri("skill://pdf-processing/references/FORMS.md")).await;
        assert_eq!(text(&forms), "Forms have fields; fill each one.\n", "{era}");
        // The server serves this file, but the held entry does not list it.
        let unlisted =
            call_tool(read, read_uri("skill://pdf-processing/scripts/unlisted.sh")).await;
        let Some(CallFailure::Protocol(message)) = unlisted.failure() else {
            panic!("{era}: an unlisted file of a loaded skill was used: {unlisted:?}")
        };
        assert!(message.contains("skill_unlisted_file"), "{era}: {message}");

        // A skill the listing leaves out is confirmed with skills/get and
        // loaded the same way; a SKILL.md URI that is no skill is a plain
        // read (here: not found).
        let hidden = call_tool(read, read_uri("skill://hidden/SKILL.md")).await;
        assert!(
            text(&hidden).contains("Found by its URI."),
            "{era}: {hidden:?}"
        );
        let nothing = call_tool(read, read_uri("skill://nothing/SKILL.md")).await;
        assert!(
            matches!(nothing.failure(), Some(CallFailure::Server { .. })),
            "{era}: {nothing:?}"
        );

        let tampered = call_tool(read, read_uri("skill://tampered/SKILL.md")).await;
        let Some(CallFailure::Protocol(message)) = tampered.failure() else {
            panic!("{era}: a tampered skill was loaded: {tampered:?}")
        };
        assert!(
            message.contains("skill_digest_mismatch"),
            "{era}: {message}"
        );
        assert!(!text(&tampered).contains("Be harmful"), "{era}");
        manager.close().await;
    }
}

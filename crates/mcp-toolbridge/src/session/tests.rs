//! Session tests against a scripted backend: in-memory MCP servers behind
//! a fake connection layer whose catalog lifetimes the tests control.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_manager::ServerHandle;
use mcp_proto::types::{Resource, Tool};
use mcp_transport::scripted::{self, Reply, ScriptedServer};
use mcp_transport::{Client, ClientOptions};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;

use super::loader::{CALL_MCP_TOOL, LOAD_MCP, READ_MCP_RESOURCE, SEARCH_TOOLS};
use super::*;
use crate::backend::{ConfiguredServer, EventStream};

// ---------------------------------------------------------------- server

/// What a scripted server saw.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Call { name: String, arguments: Value },
    Cancelled,
    Read { uri: String },
}

/// The calls, cancellations and reads among what the server received.
struct Observed(scripted::Seen);

impl Observed {
    fn pick(received: scripted::Received) -> Option<Seen> {
        let params = &received.params;
        match received.method.as_str() {
            "tools/call" => Some(Seen::Call {
                name: params["name"].as_str().unwrap_or("").to_owned(),
                arguments: params["arguments"].clone(),
            }),
            "notifications/cancelled" => Some(Seen::Cancelled),
            "resources/read" => Some(Seen::Read {
                uri: params["uri"].as_str().unwrap_or("").to_owned(),
            }),
            _ => None,
        }
    }

    async fn recv(&mut self) -> Option<Seen> {
        loop {
            if let Some(seen) = Self::pick(self.0.recv().await?) {
                return Some(seen);
            }
        }
    }

    fn try_recv(&mut self) -> Result<Seen, mpsc::error::TryRecvError> {
        loop {
            if let Some(seen) = Self::pick(self.0.try_recv()?) {
                return Ok(seen);
            }
        }
    }
}

/// Starts an in-memory MCP server and returns a connected client and the
/// stream of what the server saw.
async fn scripted_server() -> (Client, Observed) {
    let (transport, seen) = ScriptedServer::new()
        .capabilities(json!({"tools": {}, "resources": {}}))
        .tool(json!({"name": "echo"}), |arguments| {
            Reply::result(json!({"content": [{"type": "text", "text": arguments["text"]}]}))
        })
        .tool(json!({"name": "media"}), |_| {
            Reply::result(json!({"content": [
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
            ], "structuredContent": {"ok": true}}))
        })
        .tool(json!({"name": "fail"}), |_| {
            Reply::result(
                json!({"content": [{"type": "text", "text": "it failed"}], "isError": true}),
            )
        })
        .tool(json!({"name": "slow"}), |_| Reply::Never)
        .tool(json!({"name": "bad"}), |_| {
            Reply::error(-32602, "bad things")
        })
        .on("resources/read", |params| {
            Reply::result(json!({"contents": [
                {"uri": params["uri"], "mimeType": "text/plain", "text": "resource text"},
                {"uri": "blob://x", "blob": "AAEC"}
            ]}))
        })
        .spawn();
    let (client, driver) = Client::new(transport, ClientOptions::default());
    tokio::spawn(driver.run());
    client.initialize().await.unwrap();
    (client, Observed(seen))
}

// --------------------------------------------------------------- backend

#[derive(Debug)]
struct FakeCatalog {
    tools: Vec<Tool>,
    resources: Vec<Resource>,
    instructions: Option<String>,
}

impl CatalogData for FakeCatalog {
    fn tools(&self) -> &[Tool] {
        &self.tools
    }
    fn resources(&self) -> Option<&[Resource]> {
        Some(&self.resources)
    }
    fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }
}

#[derive(Clone)]
enum FakeStatus {
    Ready,
    Pending,
    Stopped,
    Disabled,
}

struct FakeServer {
    name: String,
    status: FakeStatus,
    lifetime: u64,
    catalog: Arc<FakeCatalog>,
    client: Option<Client>,
    /// What `connect` does: the client it will be ready with.
    on_connect: Option<Client>,
}

#[derive(Default)]
struct Fake {
    servers: Mutex<HashMap<String, FakeServer>>,
    next_lifetime: Mutex<u64>,
    events: Mutex<Option<broadcast::Sender<BackendEvent>>>,
    changed: watch::Sender<u64>,
    /// The servers a handle was taken for, in order: each is a use of the
    /// server for its idle timer.
    handles_taken: Mutex<Vec<String>>,
    /// Per-server call deadlines, as a server's configuration sets them.
    call_timeouts: Mutex<HashMap<String, Duration>>,
    /// Runs once, inside the next `snapshot`, after the servers were read:
    /// lets a test hold one rebind between its snapshot and its install.
    after_snapshot: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Fake {
    fn new() -> Arc<Self> {
        let fake = Fake::default();
        *fake.events.lock().unwrap() = Some(broadcast::channel(64).0);
        Arc::new(fake)
    }

    fn lifetime(&self) -> u64 {
        let mut next = self.next_lifetime.lock().unwrap();
        *next += 1;
        *next
    }

    fn emit(&self, event: BackendEvent) {
        if let Some(tx) = &*self.events.lock().unwrap() {
            let _ = tx.send(event);
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// Adds a ready server with `tools` (names and input schemas).
    fn add_ready(&self, id: &str, tools: Vec<Tool>, client: Client) -> u64 {
        let lifetime = self.lifetime();
        self.servers.lock().unwrap().insert(
            id.to_owned(),
            FakeServer {
                name: format!("{id} server"),
                status: FakeStatus::Ready,
                lifetime,
                catalog: Arc::new(FakeCatalog {
                    tools,
                    resources: vec![
                        serde_json::from_value(
                            json!({"uri": "fixture://readme", "name": "readme"}),
                        )
                        .unwrap(),
                    ],
                    instructions: Some(format!("The {id} server.\nMore.")),
                }),
                client: Some(client),
                on_connect: None,
            },
        );
        self.emit(BackendEvent::CatalogSwapped {
            id: id.to_owned(),
            lifetime,
        });
        lifetime
    }

    /// Adds a server in `status` that becomes ready with `tools` on
    /// `connect` or `make_ready`.
    fn add_pending(&self, id: &str, tools: Vec<Tool>, status: FakeStatus, client: Client) {
        self.servers.lock().unwrap().insert(
            id.to_owned(),
            FakeServer {
                name: format!("{id} server"),
                status,
                lifetime: 0,
                catalog: Arc::new(FakeCatalog {
                    tools,
                    resources: Vec::new(),
                    instructions: None,
                }),
                client: None,
                on_connect: Some(client),
            },
        );
    }

    fn make_ready(&self, id: &str) -> u64 {
        let lifetime = self.lifetime();
        {
            let mut servers = self.servers.lock().unwrap();
            let server = servers.get_mut(id).unwrap();
            server.status = FakeStatus::Ready;
            server.lifetime = lifetime;
            if let Some(client) = server.on_connect.take() {
                server.client = Some(client);
            }
        }
        self.emit(BackendEvent::CatalogSwapped {
            id: id.to_owned(),
            lifetime,
        });
        lifetime
    }

    /// A refresh: same connection, new lifetime.
    fn swap(&self, id: &str) -> u64 {
        self.make_ready(id)
    }

    /// A new lifetime that nobody hears about (lost events).
    fn swap_silently(&self, id: &str) {
        let lifetime = self.lifetime();
        self.servers.lock().unwrap().get_mut(id).unwrap().lifetime = lifetime;
    }

    fn disable(&self, id: &str) {
        let lifetime = {
            let mut servers = self.servers.lock().unwrap();
            let server = servers.get_mut(id).unwrap();
            server.status = FakeStatus::Disabled;
            server.client = None;
            server.lifetime
        };
        self.emit(BackendEvent::CatalogRevoked {
            id: id.to_owned(),
            lifetime,
        });
    }

    fn rename(&self, id: &str, name: &str) {
        self.servers.lock().unwrap().get_mut(id).unwrap().name = name.to_owned();
    }
}

struct FakeEvents(broadcast::Receiver<BackendEvent>);

#[async_trait]
impl EventStream for FakeEvents {
    async fn next(&mut self) -> Option<BackendEvent> {
        match self.0.recv().await {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(_)) => Some(BackendEvent::Lagged),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

#[async_trait]
impl Backend for Fake {
    fn snapshot(&self, _workspace: Option<&std::path::Path>) -> Vec<ReadyServer> {
        let servers = self.servers.lock().unwrap();
        let mut out: Vec<ReadyServer> = servers
            .iter()
            .filter(|(_, s)| matches!(s.status, FakeStatus::Ready) && !s.catalog.tools.is_empty())
            .map(|(id, s)| ReadyServer {
                id: id.as_str().into(),
                name: s.name.as_str().into(),
                lifetime: s.lifetime,
                catalog: s.catalog.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        drop(servers);
        let hook = self.after_snapshot.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        out
    }

    fn availability(&self, id: &str) -> Availability {
        let servers = self.servers.lock().unwrap();
        let Some(s) = servers.get(id) else {
            return Availability::Unknown;
        };
        match s.status {
            FakeStatus::Ready => Availability::Ready(ReadyServer {
                id: id.into(),
                name: s.name.as_str().into(),
                lifetime: s.lifetime,
                catalog: s.catalog.clone(),
            }),
            FakeStatus::Pending => Availability::Pending {
                status: "connecting".into(),
            },
            FakeStatus::Stopped => Availability::Stopped {
                status: "disconnected".into(),
            },
            FakeStatus::Disabled => Availability::Disabled,
        }
    }

    fn server(&self, id: &str) -> Option<ServerHandle> {
        let client = self.servers.lock().unwrap().get(id)?.client.clone()?;
        self.handles_taken.lock().unwrap().push(id.to_owned());
        Some(ServerHandle::unmanaged(id, client))
    }

    async fn wait_ready(&self, id: &str, deadline: Instant) -> Availability {
        let mut changed = self.changed.subscribe();
        loop {
            let availability = self.availability(id);
            if !matches!(availability, Availability::Pending { .. }) {
                return availability;
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                return self.availability(id);
            }
        }
    }

    fn connect(&self, id: &str) {
        if let Some(s) = self.servers.lock().unwrap().get_mut(id) {
            s.status = FakeStatus::Pending;
        }
        self.changed.send_modify(|n| *n += 1);
    }

    fn servers(&self) -> Vec<ConfiguredServer> {
        self.servers
            .lock()
            .unwrap()
            .iter()
            .map(|(id, s)| ConfiguredServer {
                id: id.clone(),
                name: s.name.clone(),
                description: Some(format!("What {id} does.")),
                enabled: !matches!(s.status, FakeStatus::Disabled),
            })
            .collect()
    }

    fn events(&self) -> Box<dyn EventStream> {
        let rx = self.events.lock().unwrap().as_ref().unwrap().subscribe();
        Box::new(FakeEvents(rx))
    }

    fn call_timeout(&self, id: &str) -> Option<Duration> {
        self.call_timeouts.lock().unwrap().get(id).copied()
    }
}

// --------------------------------------------------------------- helpers

fn tool(name: &str, schema: Value) -> Tool {
    let mut tool = Tool::new(name);
    if let Value::Object(schema) = schema {
        tool.input_schema = schema.into();
    }
    tool.description = Some(format!("The {name} tool."));
    tool
}

fn fixture_tools() -> Vec<Tool> {
    vec![
        tool(
            "echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        tool("media", json!({"type": "object"})),
        tool("fail", json!({"type": "object"})),
        tool("slow", json!({"type": "object"})),
        tool("bad", json!({"type": "object"})),
    ]
}

struct Harness {
    fake: Arc<Fake>,
    session: McpSession,
    seen: Observed,
    events: broadcast::Receiver<ApprovalEvent>,
}

async fn harness(options: SessionOptions) -> Harness {
    let fake = Fake::new();
    let (client, seen) = scripted_server().await;
    fake.add_ready("fx", fixture_tools(), client);
    let session = McpSession::with_backend(fake.clone(), options);
    let events = session.approval_events();
    Harness {
        fake,
        session,
        seen,
        events,
    }
}

fn full_access() -> SessionOptions {
    SessionOptions {
        preset: PermissionPreset::FullAccess,
        ..SessionOptions::default()
    }
}

async fn call(tools: &ToolSet, name: &str, args: Value) -> ToolOutcome {
    tools
        .get(name)
        .unwrap_or_else(|| panic!("no tool {name}"))
        .call(ToolCall::new("call-1", args))
        .await
}

fn text(outcome: &ToolOutcome) -> String {
    outcome
        .result()
        .map(ToolResult::joined_text)
        .unwrap_or_default()
}

/// A handler that answers with a fixed decision and counts its requests.
struct Answer {
    decision: ApprovalDecision,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Answer {
    fn new(decision: ApprovalDecision) -> Arc<Self> {
        Arc::new(Answer {
            decision,
            asked: Mutex::new(Vec::new()),
        })
    }
    fn count(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

#[async_trait]
impl ApprovalHandler for Answer {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request.clone());
        self.decision
    }
}

/// A handler that never answers.
struct Never;

#[async_trait]
impl ApprovalHandler for Never {
    async fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        std::future::pending().await
    }
}

fn drain(events: &mut broadcast::Receiver<ApprovalEvent>) -> Vec<ApprovalEvent> {
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(event);
    }
    out
}

/// The (result, source) of every resolution, checking each follows its request.
fn resolutions(events: &[ApprovalEvent]) -> Vec<(ApprovalResult, ApprovalSource)> {
    let mut open = Vec::new();
    let mut out = Vec::new();
    for event in events {
        match event {
            ApprovalEvent::Requested(request) => open.push(request.request_id),
            ApprovalEvent::Resolved {
                request_id,
                result,
                source,
                ..
            } => {
                let at = open
                    .iter()
                    .position(|id| id == request_id)
                    .expect("resolved before requested");
                open.remove(at);
                out.push((*result, *source));
            }
        }
    }
    assert!(open.is_empty(), "unresolved requests: {open:?}");
    out
}

/// Lets spawned tasks (the session's event follower) run.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

// ----------------------------------------------------------------- tests

#[tokio::test]
async fn bind_names_tools_and_renders_the_prompt_section() {
    let h = harness(full_access()).await;
    let tools = h.session.bind();
    let names: Vec<&str> = tools.tools().iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "mcp_fx_bad",
            "mcp_fx_echo",
            "mcp_fx_fail",
            "mcp_fx_media",
            "mcp_fx_slow"
        ]
    );
    assert_eq!(tools.resolve("mcp_fx_echo"), Some(("fx", "echo")));
    assert_eq!(
        tools.get("mcp_fx_echo").unwrap().description(),
        "The echo tool."
    );
    assert_eq!(
        tools.prompt_section(),
        "<mcp_servers>\n<server id=\"fx\" name=\"fx server\" access=\"5 tools, declared directly\">The fx server.</server>\n</mcp_servers>"
    );
    assert!(tools.generation() > 0);
}

#[tokio::test]
async fn full_access_calls_at_once_with_paired_events() {
    let mut h = harness(full_access()).await;
    let tools = h.session.bind();
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": "hi"})).await;
    assert_eq!(outcome, ToolOutcome::Completed(ToolResult::text("hi")));
    assert_eq!(
        h.seen.recv().await,
        Some(Seen::Call {
            name: "echo".into(),
            arguments: json!({"text": "hi"})
        })
    );
    assert_eq!(
        resolutions(&drain(&mut h.events)),
        [(ApprovalResult::AllowedOnce, ApprovalSource::FullAccess)]
    );
    assert_eq!(h.fake.handles_taken.lock().unwrap().as_slice(), ["fx"]);
}

#[tokio::test]
async fn results_keep_images_structured_content_and_errors() {
    let h = harness(full_access()).await;
    let tools = h.session.bind();
    let media = call(&tools, "mcp_fx_media", json!({})).await;
    let result = media.result().unwrap();
    assert_eq!(result.content[0].kind(), Some("image"));
    assert_eq!(result.content[1].kind(), Some("text"));
    assert!(result.content[1].as_text().unwrap().contains("\"audio\""));
    assert_eq!(result.structured_content, Some(json!({"ok": true})));
    let failed = call(&tools, "mcp_fx_fail", json!({})).await;
    assert!(
        matches!(&failed, ToolOutcome::Completed(r) if r.is_error && r.joined_text() == "it failed")
    );
    let rpc = call(&tools, "mcp_fx_bad", json!({})).await;
    assert_eq!(text(&rpc), "MCP error -32602: bad things");
    assert!(matches!(
        rpc.failure(),
        Some(CallFailure::Server { code: -32602, .. })
    ));
}

#[tokio::test]
async fn raw_content_mode_keeps_audio() {
    let h = harness(SessionOptions {
        content: ContentMode::Raw,
        ..full_access()
    })
    .await;
    let tools = h.session.bind();
    let media = call(&tools, "mcp_fx_media", json!({})).await;
    assert_eq!(media.result().unwrap().content[1].kind(), Some("audio"));
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_dispatch() {
    let mut h = harness(full_access()).await;
    let tools = h.session.bind();
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": 5})).await;
    assert!(matches!(
        outcome.failure(),
        Some(CallFailure::InvalidArguments(_))
    ));
    let message = text(&outcome);
    assert!(
        message.contains("Invalid arguments for tool mcp_fx_echo"),
        "{message}"
    );
    assert!(
        message.contains("at /text: 5 is not of type \"string\""),
        "{message}"
    );
    assert!(h.seen.try_recv().is_err(), "nothing reached the server");
    assert!(
        drain(&mut h.events).is_empty(),
        "no approval for an invalid call"
    );
}

#[tokio::test]
async fn without_a_handler_nothing_is_called() {
    let mut h = harness(SessionOptions::default()).await;
    let tools = h.session.bind();
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": "hi"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotApproved(NotApproved::NoHandler))
    );
    assert!(h.seen.try_recv().is_err());
    assert_eq!(
        resolutions(&drain(&mut h.events)),
        [(ApprovalResult::Denied, ApprovalSource::NoHandler)]
    );
}

#[tokio::test]
async fn allow_once_asks_every_time_and_binds_the_exact_call() {
    let mut h = harness(SessionOptions {
        preset: PermissionPreset::WorkspaceWrite,
        ..SessionOptions::default()
    })
    .await;
    let handler = Answer::new(ApprovalDecision::AllowOnce);
    h.session.set_approval_handler(Some(handler.clone()));
    let tools = h.session.bind();
    for text in ["one", "two"] {
        let outcome = tools
            .get("mcp_fx_echo")
            .unwrap()
            .call(ToolCall::new(format!("call-{text}"), json!({"text": text})))
            .await;
        assert_eq!(outcome, ToolOutcome::Completed(ToolResult::text(text)));
        assert_eq!(
            h.seen.recv().await,
            Some(Seen::Call {
                name: "echo".into(),
                arguments: json!({"text": text})
            })
        );
    }
    assert_eq!(handler.count(), 2);
    let asked = handler.asked.lock().unwrap().clone();
    assert_eq!(asked[1].call_id, "call-two");
    assert_eq!(
        asked[1].arguments,
        json!({"text": "two"}).as_object().unwrap().clone()
    );
    assert_eq!(
        (asked[1].server.as_str(), asked[1].tool.as_str()),
        ("fx", "echo")
    );
    assert_eq!(asked[1].via, "mcp_fx_echo");
    assert_eq!(asked[1].preset, PermissionPreset::WorkspaceWrite);
    assert!(asked[1].allow_session);
    assert_ne!(asked[0].request_id, asked[1].request_id);
    assert_eq!(
        resolutions(&drain(&mut h.events)),
        [
            (ApprovalResult::AllowedOnce, ApprovalSource::Handler),
            (ApprovalResult::AllowedOnce, ApprovalSource::Handler)
        ]
    );
}

#[tokio::test]
async fn deny_means_no_call() {
    let mut h = harness(SessionOptions::default()).await;
    h.session
        .set_approval_handler(Some(Answer::new(ApprovalDecision::Deny)));
    let tools = h.session.bind();
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": "hi"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Denied))
    );
    assert_eq!(text(&outcome), "The call was not made: the user denied it.");
    assert!(h.seen.try_recv().is_err());
    assert_eq!(
        resolutions(&drain(&mut h.events)),
        [(ApprovalResult::Denied, ApprovalSource::Handler)]
    );
}

#[tokio::test]
async fn annotations_never_bypass_approval() {
    let fake = Fake::new();
    let (client, mut seen) = scripted_server().await;
    let mut echo = tool("echo", json!({"type": "object"}));
    echo.annotations = Some(
        serde_json::from_value(
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true}),
        )
        .unwrap(),
    );
    fake.add_ready("fx", vec![echo], client);
    let session = McpSession::with_backend(fake.clone(), SessionOptions::default());
    let handler = Answer::new(ApprovalDecision::Deny);
    session.set_approval_handler(Some(handler.clone()));
    let outcome = call(&session.bind(), "mcp_fx_echo", json!({"text": "x"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Denied))
    );
    assert_eq!(handler.count(), 1);
    let asked = handler.asked.lock().unwrap()[0].clone();
    assert_eq!(asked.annotations.and_then(|a| a.read_only_hint), Some(true));
    assert!(seen.try_recv().is_err());
}

#[tokio::test]
async fn allow_for_session_grants_the_exact_tool_until_the_catalog_changes() {
    let mut h = harness(SessionOptions::default()).await;
    let handler = Answer::new(ApprovalDecision::AllowSession);
    h.session.set_approval_handler(Some(handler.clone()));
    let tools = h.session.bind();
    assert!(
        call(&tools, "mcp_fx_echo", json!({"text": "a"}))
            .await
            .failure()
            .is_none()
    );
    // Same tool, other arguments: the grant covers it.
    assert!(
        call(&tools, "mcp_fx_echo", json!({"text": "b"}))
            .await
            .failure()
            .is_none()
    );
    assert_eq!(handler.count(), 1);
    // Another tool of the same server is not covered.
    let _ = call(&tools, "mcp_fx_fail", json!({})).await;
    assert_eq!(handler.count(), 2);
    assert_eq!(
        resolutions(&drain(&mut h.events)),
        [
            (ApprovalResult::AllowedForSession, ApprovalSource::Handler),
            (ApprovalResult::AllowedOnce, ApprovalSource::SessionGrant),
            (ApprovalResult::AllowedForSession, ApprovalSource::Handler),
        ]
    );
    assert_eq!(h.session.grants().len(), 2);

    // A display-name-only change keeps the grants.
    h.fake.rename("fx", "Renamed");
    let renamed = h.session.bind();
    assert!(renamed.prompt_section().contains("name=\"Renamed\""));
    let _ = call(&renamed, "mcp_fx_echo", json!({"text": "c"})).await;
    assert_eq!(handler.count(), 2);

    // A refresh (new catalog lifetime) revokes them; the old binding's
    // tools are stale, the new binding asks again.
    h.fake.swap("fx");
    settle().await;
    assert!(h.session.grants().is_empty());
    let stale = call(&renamed, "mcp_fx_echo", json!({"text": "d"})).await;
    assert_eq!(
        stale.failure(),
        Some(&CallFailure::Stale {
            server: "fx".into()
        })
    );
    let fresh = h.session.bind();
    let _ = call(&fresh, "mcp_fx_echo", json!({"text": "e"})).await;
    assert_eq!(handler.count(), 3);
}

#[tokio::test]
async fn grants_end_on_disable() {
    let h = harness(SessionOptions::default()).await;
    h.session
        .set_approval_handler(Some(Answer::new(ApprovalDecision::AllowSession)));
    let tools = h.session.bind();
    let _ = call(&tools, "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(h.session.grants().len(), 1);
    h.fake.disable("fx");
    settle().await;
    assert!(h.session.grants().is_empty());
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::Unavailable {
            server: "fx".into(),
            reason: "disabled".into()
        })
    );
}

#[tokio::test]
async fn allow_for_session_is_refused_when_not_offered() {
    let mut h = harness(SessionOptions {
        offer_session_grants: false,
        ..SessionOptions::default()
    })
    .await;
    let handler = Answer::new(ApprovalDecision::AllowSession);
    h.session.set_approval_handler(Some(handler.clone()));
    let outcome = call(&h.session.bind(), "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotApproved(NotApproved::InvalidDecision))
    );
    assert!(!handler.asked.lock().unwrap()[0].allow_session);
    assert!(h.session.grants().is_empty());
    assert!(h.seen.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn a_handler_timeout_means_no_call() {
    let mut h = harness(SessionOptions {
        approval_timeout: Some(Duration::from_secs(30)),
        ..SessionOptions::default()
    })
    .await;
    h.session.set_approval_handler(Some(Arc::new(Never)));
    let started = Instant::now();
    let outcome = call(&h.session.bind(), "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Timeout(
            Duration::from_secs(30)
        )))
    );
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert!(h.seen.try_recv().is_err());
    assert_eq!(
        resolutions(&drain(&mut h.events)),
        [(ApprovalResult::Denied, ApprovalSource::Timeout)]
    );
}

#[tokio::test]
async fn cancelling_while_waiting_for_approval_is_a_cancellation() {
    let mut h = harness(SessionOptions::default()).await;
    h.session.set_approval_handler(Some(Arc::new(Never)));
    let tools = h.session.bind();
    let token = CancelToken::new();
    let tool = tools.get("mcp_fx_echo").unwrap().clone();
    let pending = tokio::spawn({
        let token = token.clone();
        async move {
            tool.call(ToolCall::new("c", json!({"text": "a"})).with_cancel(token))
                .await
        }
    });
    // Wait until the request is pending.
    assert!(matches!(
        h.events.recv().await.unwrap(),
        ApprovalEvent::Requested(_)
    ));
    token.cancel();
    assert_eq!(pending.await.unwrap(), ToolOutcome::Cancelled);
    assert!(matches!(
        h.events.recv().await.unwrap(),
        ApprovalEvent::Resolved {
            source: ApprovalSource::Cancelled,
            result: ApprovalResult::Denied,
            ..
        }
    ));
    assert!(h.seen.try_recv().is_err());
}

/// The approval requests the session is waiting on.
fn pending_requests(session: &McpSession) -> Vec<u64> {
    let mut ids: Vec<u64> = session.inner.lock().pending.keys().copied().collect();
    ids.sort_unstable();
    ids
}

#[tokio::test]
async fn dropping_a_call_that_waits_for_approval_resolves_it_as_abandoned() {
    let mut h = harness(SessionOptions::default()).await;
    h.session.set_approval_handler(Some(Arc::new(Never)));
    let tools = h.session.bind();
    let tool = tools.get("mcp_fx_echo").unwrap().clone();
    let mut call = Box::pin(tool.call(ToolCall::new("c", json!({"text": "a"}))));
    // The call runs up to the handler's wait, which publishes the request.
    let requested = tokio::select! {
        biased;
        outcome = &mut call => panic!("the call ended without a decision: {outcome:?}"),
        event = h.events.recv() => event.unwrap(),
    };
    let ApprovalEvent::Requested(request) = requested else {
        panic!("expected a request, got {requested:?}");
    };
    assert_eq!(pending_requests(&h.session), [request.request_id]);

    drop(call);

    assert_eq!(pending_requests(&h.session), [] as [u64; 0]);
    assert_eq!(
        drain(&mut h.events),
        [ApprovalEvent::Resolved {
            request_id: request.request_id,
            call_id: "c".into(),
            result: ApprovalResult::Denied,
            source: ApprovalSource::Abandoned,
        }]
    );
    assert!(h.seen.try_recv().is_err());
}

#[tokio::test]
async fn aborting_the_task_of_a_call_that_waits_for_approval_resolves_it_once() {
    let mut h = harness(SessionOptions::default()).await;
    h.session.set_approval_handler(Some(Arc::new(Never)));
    let tools = h.session.bind();
    let tool = tools.get("mcp_fx_echo").unwrap().clone();
    let task =
        tokio::spawn(async move { tool.call(ToolCall::new("c", json!({"text": "a"}))).await });
    let ApprovalEvent::Requested(request) = h.events.recv().await.unwrap() else {
        panic!("expected a request first");
    };
    assert_eq!(pending_requests(&h.session), [request.request_id]);

    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());

    assert_eq!(pending_requests(&h.session), [] as [u64; 0]);
    let events = drain(&mut h.events);
    assert_eq!(
        resolutions(
            &[ApprovalEvent::Requested(request.clone())]
                .into_iter()
                .chain(events.iter().cloned())
                .collect::<Vec<_>>()
        ),
        [(ApprovalResult::Denied, ApprovalSource::Abandoned)]
    );
    assert_eq!(events.len(), 1, "one resolution, nothing else: {events:?}");
    // Later revocations find nothing left to end.
    h.fake.swap("fx");
    assert!(h.seen.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_rebind_that_snapshotted_first_never_installs_over_a_newer_one() {
    let h = harness(full_access()).await;
    let first = h.session.bind();
    let old = h.fake.availability("fx").lifetime().unwrap();
    assert_eq!(first.binding.servers[0].lifetime, old);

    // One rebind reads the servers, then is held before it installs.
    let (read_tx, read_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    *h.fake.after_snapshot.lock().unwrap() = Some(Box::new(move || {
        read_tx.send(()).unwrap();
        go_rx.recv().unwrap();
    }));
    let slow = std::thread::spawn({
        let session = h.session.clone();
        move || session.bind()
    });
    read_rx.recv().unwrap();

    // Meanwhile the catalog is refreshed and another rebind runs whole.
    let new = h.fake.swap("fx");
    assert_ne!(new, old);
    let fast = h.session.bind();
    assert_eq!(fast.binding.servers[0].lifetime, new);

    go_tx.send(()).unwrap();
    let late = slow.join().unwrap();

    let current = h.session.tools();
    assert_eq!(
        current.binding.servers[0].lifetime, new,
        "the older snapshot was installed last"
    );
    assert_eq!(late.binding.servers[0].lifetime, new);
    assert_eq!(current.generation(), fast.generation());
    assert_eq!(*h.session.changes().borrow(), current.generation());
    assert!(current.generation() > first.generation());
    // The current binding's tools call the current catalog.
    assert_eq!(
        text(&call(&current, "mcp_fx_echo", json!({"text": "hi"})).await),
        "hi"
    );
}

#[tokio::test]
async fn a_refresh_ends_pending_approvals() {
    let mut h = harness(SessionOptions::default()).await;
    h.session.set_approval_handler(Some(Arc::new(Never)));
    let tools = h.session.bind();
    let tool = tools.get("mcp_fx_echo").unwrap().clone();
    let pending =
        tokio::spawn(async move { tool.call(ToolCall::new("c", json!({"text": "a"}))).await });
    assert!(matches!(
        h.events.recv().await.unwrap(),
        ApprovalEvent::Requested(_)
    ));
    h.fake.swap("fx");
    let outcome = pending.await.unwrap();
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Revoked))
    );
    assert!(matches!(
        h.events.recv().await.unwrap(),
        ApprovalEvent::Resolved {
            source: ApprovalSource::Revoked,
            ..
        }
    ));
    assert!(h.seen.try_recv().is_err());
}

#[tokio::test]
async fn the_tool_is_checked_again_after_approval() {
    // The catalog changes while the handler decides, and the event is
    // lost: the re-check after waiting still refuses the call.
    struct SwapThenAllow(Arc<Fake>);
    #[async_trait]
    impl ApprovalHandler for SwapThenAllow {
        async fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
            self.0.swap_silently("fx");
            ApprovalDecision::AllowOnce
        }
    }
    let mut h = harness(SessionOptions::default()).await;
    h.session
        .set_approval_handler(Some(Arc::new(SwapThenAllow(h.fake.clone()))));
    let outcome = call(&h.session.bind(), "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotApproved(NotApproved::Revoked))
    );
    assert!(h.seen.try_recv().is_err());
    assert_eq!(
        resolutions(&drain(&mut h.events)),
        [(ApprovalResult::Denied, ApprovalSource::Revoked)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_live_tool_of_a_server_that_stays_away_fails_at_the_call_deadline() {
    // The server's connection ended and the new one never gets ready: the
    // call waits for it until the deadline (the shorter of connect_wait and
    // call_timeout), then fails without being made.
    let h = harness(SessionOptions {
        connect_wait: Duration::from_secs(15),
        call_timeout: Some(Duration::from_secs(4)),
        ..full_access()
    })
    .await;
    let tools = h.session.bind();
    h.fake.servers.lock().unwrap().get_mut("fx").unwrap().status = FakeStatus::Pending;
    let started = Instant::now();
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(started.elapsed(), Duration::from_secs(4));
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::NotReady {
            server: "fx".into(),
            waited: Duration::from_secs(4),
        })
    );
    assert_eq!(
        text(&outcome),
        "MCP error: server \"fx\" is reconnecting and was not ready within 4 s; the call was not made"
    );
}

#[tokio::test]
async fn a_live_tool_of_a_reconnecting_server_waits_and_runs_on_the_new_connection() {
    let mut h = harness(full_access()).await;
    let tools = h.session.bind();
    h.fake.servers.lock().unwrap().get_mut("fx").unwrap().status = FakeStatus::Pending;
    let tool = tools.get("mcp_fx_echo").unwrap().clone();
    let pending =
        tokio::spawn(async move { tool.call(ToolCall::new("c", json!({"text": "back"}))).await });
    settle().await;
    assert!(!pending.is_finished(), "the call waits for the server");
    // Back with a new lifetime and the identical tool.
    h.fake.make_ready("fx");
    assert_eq!(
        pending.await.unwrap(),
        ToolOutcome::Completed(ToolResult::text("back"))
    );
    assert!(matches!(h.seen.recv().await, Some(Seen::Call { .. })));
}

#[tokio::test]
async fn cancelling_a_call_in_flight_withdraws_it() {
    let mut h = harness(full_access()).await;
    let tools = h.session.bind();
    let token = CancelToken::new();
    let tool = tools.get("mcp_fx_slow").unwrap().clone();
    let pending = tokio::spawn({
        let token = token.clone();
        async move {
            tool.call(ToolCall::new("c", json!({})).with_cancel(token))
                .await
        }
    });
    assert!(matches!(h.seen.recv().await, Some(Seen::Call { .. })));
    token.cancel();
    assert_eq!(pending.await.unwrap(), ToolOutcome::Cancelled);
    assert_eq!(h.seen.recv().await, Some(Seen::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn the_call_deadline_cancels_on_the_wire() {
    let mut h = harness(SessionOptions {
        call_timeout: Some(Duration::from_secs(60)),
        ..full_access()
    })
    .await;
    let tools = h.session.bind();
    let started = Instant::now();
    let outcome = call(&tools, "mcp_fx_slow", json!({})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::Timeout(Duration::from_secs(60)))
    );
    assert!(text(&outcome).starts_with("MCP error: the call did not finish within 60 s"));
    assert!(started.elapsed() >= Duration::from_secs(60));
    assert!(matches!(h.seen.recv().await, Some(Seen::Call { .. })));
    assert_eq!(h.seen.recv().await, Some(Seen::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn a_server_call_deadline_replaces_the_session_one() {
    let mut h = harness(SessionOptions {
        call_timeout: Some(Duration::from_secs(60)),
        ..full_access()
    })
    .await;
    h.fake
        .call_timeouts
        .lock()
        .unwrap()
        .insert("fx".into(), Duration::from_secs(5));
    let tools = h.session.bind();
    let started = Instant::now();
    let outcome = call(&tools, "mcp_fx_slow", json!({})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::Timeout(Duration::from_secs(5)))
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(matches!(h.seen.recv().await, Some(Seen::Call { .. })));
    assert_eq!(h.seen.recv().await, Some(Seen::Cancelled));
}

#[tokio::test]
async fn deferred_tools_wait_for_their_server_and_the_session_rebinds() {
    let fake = Fake::new();
    let (client, mut seen) = scripted_server().await;
    fake.add_pending("late", fixture_tools(), FakeStatus::Pending, client);
    let session = McpSession::with_backend(fake.clone(), full_access());
    session.set_deferred(vec![DeferredCatalog {
        id: "late".into(),
        name: "Late".into(),
        tools: fixture_tools().into(),
    }]);
    let tools = session.bind();
    let echo = tools.get("mcp_late_echo").unwrap().clone();
    assert!(format!("{echo:?}").starts_with("DeferredTool"));
    // Connecting servers have no prompt row.
    assert_eq!(tools.prompt_section(), "");
    let mut changes = session.changes();
    changes.borrow_and_update();
    let pending = tokio::spawn(async move {
        echo.call(ToolCall::new("c", json!({"text": "later"})))
            .await
    });
    settle().await;
    assert!(!pending.is_finished());
    fake.make_ready("late");
    assert_eq!(
        pending.await.unwrap(),
        ToolOutcome::Completed(ToolResult::text("later"))
    );
    assert!(matches!(seen.recv().await, Some(Seen::Call { .. })));
    // The session rebound on its own: the tool is live now.
    changes.changed().await.unwrap();
    let rebound = session.tools();
    assert!(format!("{:?}", rebound.get("mcp_late_echo").unwrap()).starts_with("LiveTool"));
    assert!(rebound.prompt_section().contains("id=\"late\""));
}

#[tokio::test(start_paused = true)]
async fn a_deferred_tool_gives_up_after_its_wait() {
    let fake = Fake::new();
    let (client, _seen) = scripted_server().await;
    fake.add_pending("late", fixture_tools(), FakeStatus::Pending, client);
    let session = McpSession::with_backend(
        fake.clone(),
        SessionOptions {
            connect_wait: Duration::from_secs(5),
            ..full_access()
        },
    );
    session.set_deferred(vec![DeferredCatalog {
        id: "late".into(),
        name: "Late".into(),
        tools: fixture_tools().into(),
    }]);
    let started = Instant::now();
    let outcome = call(&session.bind(), "mcp_late_echo", json!({"text": "x"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::Unavailable {
            server: "late".into(),
            reason: "connecting".into()
        })
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

#[tokio::test]
async fn the_allowlist_and_the_channel_switch_remove_tools() {
    let fake = Fake::new();
    let (a, _sa) = scripted_server().await;
    let (b, _sb) = scripted_server().await;
    fake.add_ready("alpha", fixture_tools(), a);
    fake.add_ready("beta", fixture_tools(), b);
    let session = McpSession::with_backend(
        fake.clone(),
        SessionOptions {
            allowed_servers: Some(BTreeSet::from(["alpha".to_owned()])),
            ..full_access()
        },
    );
    let tools = session.bind();
    assert!(
        tools
            .tools()
            .iter()
            .all(|t| t.name().starts_with("mcp_alpha_"))
    );
    assert!(!tools.prompt_section().contains("beta"));
    let load = session.loader_tools().remove(0);
    assert_eq!(
        load.input_schema().to_value()["properties"]["server"]["enum"],
        json!(["alpha"])
    );
    assert!(!load.description().contains("beta"));
    let denied = session.loader_tools()[1]
        .call(ToolCall::new(
            "c",
            json!({"server": "alpha", "tool": "echo", "arguments": {"text": "ok"}}),
        ))
        .await;
    assert_eq!(text(&denied), "ok");
    // Widening the list brings beta in; the switch takes everything away.
    session.set_allowed_servers(None);
    assert!(session.tools().get("mcp_beta_echo").is_some());
    let old = session.tools();
    session.set_mcp_enabled(false);
    assert!(session.bind().tools().is_empty());
    assert!(session.loader_tools().is_empty());
    assert!(session.catalog_tools().is_empty());
    assert_eq!(session.tools().prompt_section(), "");
    let refused = call(&old, "mcp_beta_echo", json!({"text": "x"})).await;
    assert!(text(&refused).contains("turned off"), "{}", text(&refused));
}

#[tokio::test]
async fn loader_tools_connect_list_call_and_read() {
    let fake = Fake::new();
    let (client, mut seen) = scripted_server().await;
    fake.add_pending("lazy", fixture_tools(), FakeStatus::Stopped, client);
    let session = McpSession::with_backend(fake.clone(), SessionOptions::default());
    let handler = Answer::new(ApprovalDecision::AllowOnce);
    session.set_approval_handler(Some(handler.clone()));
    let loader = session.loader_tools();
    let names: Vec<&str> = loader.iter().map(|t| t.name()).collect();
    assert_eq!(names, [LOAD_MCP, CALL_MCP_TOOL, READ_MCP_RESOURCE]);
    // The model reads the server first, then the tool, then its arguments.
    let call_schema = loader[1].input_schema().as_str();
    let at = |key: &str| call_schema.find(&format!("\"{key}\":")).unwrap();
    assert!(
        at("type") < at("properties")
            && at("server") < at("tool")
            && at("tool") < at("arguments")
            && at("arguments") < at("required"),
        "{call_schema}"
    );
    assert!(
        loader[0]
            .description()
            .contains("- lazy (lazy server): What lazy does.")
    );

    // Not connected: call_mcp_tool and read_mcp_resource say to load first.
    let early = loader[1]
        .call(ToolCall::new(
            "c",
            json!({"server": "lazy", "tool": "echo", "arguments": {"text": "x"}}),
        ))
        .await;
    assert!(
        text(&early).contains("call load_mcp with server \"lazy\" first"),
        "{}",
        text(&early)
    );
    let early_read = loader[2]
        .call(ToolCall::new(
            "c",
            json!({"server": "lazy", "uri": "fixture://readme"}),
        ))
        .await;
    assert!(text(&early_read).contains("call load_mcp"));

    // load_mcp connects (the fake becomes ready when asked).
    let fake2 = fake.clone();
    let mut changed = fake2.changed.subscribe();
    let connector = tokio::spawn(async move {
        loop {
            changed.changed().await.unwrap();
            let pending = matches!(
                fake2.servers.lock().unwrap()["lazy"].status,
                FakeStatus::Pending
            );
            if pending {
                fake2.make_ready("lazy");
                return;
            }
        }
    });
    let loaded = loader[0]
        .call(ToolCall::new("c", json!({"server": "lazy"})))
        .await;
    connector.await.unwrap();
    let manifest = loaded.result().unwrap().structured_content.clone().unwrap();
    assert_eq!(manifest["server"], "lazy");
    assert_eq!(manifest["tools"][0]["name"], "echo");
    assert_eq!(
        manifest["tools"][0]["inputSchema"]["required"],
        json!(["text"])
    );
    assert_eq!(manifest["resources"], json!([]));
    // The model reads the server first and each tool's name before its
    // schema, which is the text the server wrote.
    let shown = text(&loaded);
    let at = |text: &str, key: &str| text.find(&format!("\"{key}\":")).unwrap();
    let tools = &shown[at(&shown, "tools")..];
    assert!(
        at(&shown, "server") < at(&shown, "tools") && at(tools, "name") < at(tools, "inputSchema"),
        "{shown}"
    );
    let echo = &fixture_tools()[0];
    assert!(
        shown.contains(&format!("\"inputSchema\":{}", echo.input_schema.as_str())),
        "{shown}"
    );

    // call_mcp_tool goes through validation and approval.
    let invalid = loader[1]
        .call(ToolCall::new(
            "c",
            json!({"server": "lazy", "tool": "echo", "arguments": {}}),
        ))
        .await;
    assert!(
        text(&invalid).contains("\"text\" is a required property"),
        "{}",
        text(&invalid)
    );
    let called = loader[1]
        .call(ToolCall::new(
            "c2",
            json!({"server": "lazy", "tool": "echo", "arguments": {"text": "hey"}}),
        ))
        .await;
    assert_eq!(called, ToolOutcome::Completed(ToolResult::text("hey")));
    assert_eq!(handler.asked.lock().unwrap()[0].via, CALL_MCP_TOOL);
    assert!(matches!(seen.recv().await, Some(Seen::Call { .. })));
    let unknown = loader[1]
        .call(ToolCall::new(
            "c",
            json!({"server": "lazy", "tool": "nope"}),
        ))
        .await;
    assert!(matches!(
        unknown.failure(),
        Some(CallFailure::UnknownTool { .. })
    ));
    let failed = loader[1]
        .call(ToolCall::new(
            "c",
            json!({"server": "lazy", "tool": "fail"}),
        ))
        .await;
    assert!(failed.result().unwrap().is_error);

    // read_mcp_resource: text as text, blobs as JSON text.
    let read = loader[2]
        .call(ToolCall::new(
            "c",
            json!({"server": "lazy", "uri": "fixture://readme"}),
        ))
        .await;
    let result = read.result().unwrap();
    assert_eq!(result.content[0].as_text(), Some("resource text"));
    assert!(
        result.content[1]
            .as_text()
            .unwrap()
            .contains("\"blob\":\"AAEC\"")
    );
    assert!(matches!(seen.recv().await, Some(Seen::Call { name, .. }) if name == "fail"));
    assert_eq!(
        seen.recv().await,
        Some(Seen::Read {
            uri: "fixture://readme".into()
        })
    );

    // Loader arguments are validated too.
    let bad = loader[0]
        .call(ToolCall::new("c", json!({"server": "elsewhere"})))
        .await;
    assert!(matches!(
        bad.failure(),
        Some(CallFailure::InvalidArguments(_))
    ));
}

#[tokio::test]
async fn search_and_describe_tools() {
    let h = harness(full_access()).await;
    h.session.bind();
    let catalog = h.session.catalog_tools();
    assert_eq!(catalog[0].name(), SEARCH_TOOLS);
    let found = catalog[0]
        .call(ToolCall::new("c", json!({"query": "echo"})))
        .await;
    let hits = found.result().unwrap().structured_content.clone().unwrap();
    assert_eq!(hits["tools"][0]["name"], "mcp_fx_echo");
    assert_eq!(hits["tools"][0]["server"], "fx");
    assert!(hits["tools"][0].get("inputSchema").is_none());
    let described = catalog[1]
        .call(ToolCall::new("c", json!({"name": "mcp_fx_echo"})))
        .await;
    let description = described
        .result()
        .unwrap()
        .structured_content
        .clone()
        .unwrap();
    assert_eq!(description["inputSchema"]["required"], json!(["text"]));
    assert_eq!(
        Some(description.clone()),
        h.session.describe_tool("mcp_fx_echo")
    );
    // The model reads the names first and the schema as the server wrote it.
    let shown = text(&described);
    let at = |key: &str| shown.find(&format!("\"{key}\":")).unwrap();
    assert!(
        at("name") < at("server") && at("tool") < at("inputSchema"),
        "{shown}"
    );
    let echo = &fixture_tools()[0];
    assert!(
        shown.contains(&format!("\"inputSchema\":{}", echo.input_schema.as_str())),
        "{shown}"
    );
    let missing = catalog[1]
        .call(ToolCall::new("c", json!({"name": "nope"})))
        .await;
    assert!(matches!(
        missing.failure(),
        Some(CallFailure::UnknownTool { .. })
    ));
}

#[tokio::test]
async fn rebinding_unchanged_catalogs_allocates_no_tool_again() {
    let h = harness(SessionOptions::default()).await;
    let first = h.session.bind();
    let again = h.session.bind();
    assert!(again.generation() > first.generation());
    let pairs = || first.binding.tools.iter().zip(&again.binding.tools);
    assert_eq!(first.binding.tools.len(), fixture_tools().len());
    assert_eq!(again.binding.tools.len(), first.binding.tools.len());
    // The same catalog lifetime: every tool is the first binding's own.
    for (a, b) in pairs() {
        assert!(Arc::ptr_eq(a, b), "{} was bound anew", b.model_name);
    }
    // Another session binds tools of its own, deriving nothing again.
    let other = McpSession::with_backend(h.fake.clone(), SessionOptions::default());
    let theirs = other.bind();
    for (a, b) in first.binding.tools.iter().zip(&theirs.binding.tools) {
        assert!(!Arc::ptr_eq(a, b));
        assert!(Arc::ptr_eq(&a.facts, &b.facts), "{}", b.model_name);
        assert_eq!(a.description(), b.description());
    }
    // A new lifetime of the same catalog: new tools, the same facts.
    let lifetime = h.fake.swap("fx");
    settle().await;
    let swapped = h.session.bind();
    for (a, b) in again.binding.tools.iter().zip(&swapped.binding.tools) {
        assert!(!Arc::ptr_eq(a, b));
        assert_eq!(b.lifetime, Some(lifetime));
        assert!(Arc::ptr_eq(&a.facts, &b.facts));
    }
    // A renamed server is searched under its new name: new facts.
    h.fake.rename("fx", "Renamed Fixture");
    let renamed = h.session.bind();
    assert!(!Arc::ptr_eq(
        &swapped.binding.tools[0].facts,
        &renamed.binding.tools[0].facts
    ));
    assert!(!renamed.search("renamed", 10).is_empty());
    assert!(swapped.search("renamed", 10).is_empty());
    // The facts go with the last binding that holds them.
    let facts = Arc::downgrade(&first.binding.tools[0].facts);
    drop((first, again, theirs, swapped, other));
    assert!(facts.upgrade().is_none());
}

#[tokio::test]
async fn lost_events_are_reconciled() {
    let h = harness(SessionOptions::default()).await;
    h.session
        .set_approval_handler(Some(Answer::new(ApprovalDecision::AllowSession)));
    let _ = call(&h.session.bind(), "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(h.session.grants().len(), 1);
    h.fake.swap_silently("fx");
    h.fake.emit(BackendEvent::Lagged);
    settle().await;
    assert!(h.session.grants().is_empty());
}

#[tokio::test]
async fn task_only_tools_are_reported_not_bound() {
    let fake = Fake::new();
    let (client, _seen) = scripted_server().await;
    let mut research = tool("research", json!({"type": "object"}));
    research.execution = Some(serde_json::from_value(json!({"taskSupport": "required"})).unwrap());
    let mut optional = tool("maybe_task", json!({"type": "object"}));
    optional.execution = Some(serde_json::from_value(json!({"taskSupport": "optional"})).unwrap());
    fake.add_ready(
        "fx",
        vec![research, optional, tool("", json!({"type": "object"}))],
        client,
    );
    let session = McpSession::with_backend(fake.clone(), full_access());
    let tools = session.bind();
    let names: Vec<&str> = tools.tools().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["mcp_fx_maybe_task"]);
    let reasons: Vec<(&str, &UnusableReason)> = tools
        .unusable()
        .iter()
        .map(|u| (u.tool.as_str(), &u.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            ("", &UnusableReason::EmptyName),
            ("research", &UnusableReason::TaskRequired)
        ]
    );
}

#[tokio::test]
async fn removing_a_server_revokes_its_grants() {
    let h = harness(SessionOptions::default()).await;
    h.session
        .set_approval_handler(Some(Answer::new(ApprovalDecision::AllowSession)));
    let tools = h.session.bind();
    let _ = call(&tools, "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(h.session.grants().len(), 1);
    h.fake.servers.lock().unwrap().remove("fx");
    h.fake.emit(BackendEvent::Removed { id: "fx".into() });
    settle().await;
    assert!(h.session.grants().is_empty());
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": "a"})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::Unavailable {
            server: "fx".into(),
            reason: "not configured".into()
        })
    );
}

#[tokio::test]
async fn unchanged_tools_can_follow_a_refresh() {
    let mut h = harness(SessionOptions {
        follow_unchanged_tools: true,
        ..SessionOptions::default()
    })
    .await;
    let handler = Answer::new(ApprovalDecision::AllowSession);
    h.session.set_approval_handler(Some(handler.clone()));
    let tools = h.session.bind();
    let _ = call(&tools, "mcp_fx_echo", json!({"text": "a"})).await;
    // A refresh with an identical catalog: the old binding's call runs
    // under the new lifetime, after asking again (the grant ended).
    h.fake.swap("fx");
    settle().await;
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": "b"})).await;
    assert_eq!(outcome, ToolOutcome::Completed(ToolResult::text("b")));
    assert_eq!(handler.count(), 2);
    assert_eq!(
        h.seen.recv().await.map(|s| matches!(s, Seen::Call { .. })),
        Some(true)
    );
    // A changed definition is still stale.
    {
        let mut servers = h.fake.servers.lock().unwrap();
        let server = servers.get_mut("fx").unwrap();
        let mut tools = server.catalog.tools.clone();
        tools[0].description = Some("Changed.".into());
        server.catalog = Arc::new(FakeCatalog {
            tools,
            resources: Vec::new(),
            instructions: None,
        });
    }
    h.fake.swap("fx");
    let stale = call(&tools, "mcp_fx_echo", json!({"text": "c"})).await;
    assert_eq!(
        stale.failure(),
        Some(&CallFailure::Stale {
            server: "fx".into()
        })
    );
}

#[tokio::test]
async fn compiled_schemas_are_cached_per_catalog_lifetime() {
    let h = harness(full_access()).await;
    let tools = h.session.bind();
    let first = h.fake.servers.lock().unwrap()["fx"].lifetime;
    let _ = call(&tools, "mcp_fx_echo", json!({"text": "a"})).await;
    let cell = h.session.inner.schema_cell("fx", first, "echo");
    let _ = call(&tools, "mcp_fx_echo", json!({"text": "b"})).await;
    assert!(Arc::ptr_eq(
        &cell,
        &h.session.inner.schema_cell("fx", first, "echo")
    ));
    assert!(cell.get().is_some(), "compiled on first use");
    h.fake.swap("fx");
    settle().await;
    let keys: Vec<(String, u64)> = h.session.inner.lock().schemas.keys().cloned().collect();
    assert!(
        keys.iter().all(|(_, lifetime)| *lifetime != first),
        "{keys:?}"
    );
}

// ------------------------------------------------------------- progress

/// A session over one server `fx`, reached through `transport`, whose
/// catalog is `tools`.
async fn session_on(
    transport: mcp_transport::MemoryTransport,
    tools: Vec<Tool>,
    options: SessionOptions,
) -> (McpSession, Arc<Fake>) {
    let (client, driver) = Client::new(transport, ClientOptions::default());
    tokio::spawn(driver.run());
    client.initialize().await.unwrap();
    let fake = Fake::new();
    fake.add_ready("fx", tools, client);
    let session = McpSession::with_backend(fake.clone(), options);
    (session, fake)
}

/// A session over one server whose `ticks` tool answers after
/// `answer_after`, the test sending its progress through the handle.
async fn ticking(
    options: SessionOptions,
    answer_after: Duration,
) -> (
    McpSession,
    scripted::Seen,
    scripted::ServerHandle,
    Arc<Fake>,
) {
    let (transport, seen, handle) = ScriptedServer::new()
        .capabilities(json!({"tools": {}}))
        .on_async("tools/call", move |_params| async move {
            tokio::time::sleep(answer_after).await;
            Reply::result(json!({"content": [{"type": "text", "text": "done"}]}))
        })
        .spawn_with_handle();
    let (session, fake) = session_on(
        transport,
        vec![tool("ticks", json!({"type": "object"}))],
        options,
    )
    .await;
    (session, seen, handle, fake)
}

/// Waits for the call on the wire and reports progress every `every`
/// with its token, numbering the reports from 1.
async fn report_progress(
    mut seen: scripted::Seen,
    handle: scripted::ServerHandle,
    every: Duration,
) {
    let call = loop {
        let received = seen.recv().await.expect("the server saw the call");
        if received.method == "tools/call" {
            break received;
        }
    };
    let token = call.params["_meta"]["progressToken"].clone();
    assert!(
        !token.is_null(),
        "a call with a progress sink asks for progress"
    );
    for step in 1.. {
        tokio::time::sleep(every).await;
        handle.notify(
            "notifications/progress",
            Some(
                json!({"progressToken": token, "progress": step, "total": 10,
                "message": format!("step {step}\u{1b}[2J")}),
            ),
        );
    }
}

#[tokio::test(start_paused = true)]
async fn progress_restarts_the_call_deadline_and_reaches_the_host() {
    let options = SessionOptions {
        call_timeout: Some(Duration::from_secs(60)),
        ..full_access()
    };
    let (session, seen, handle, _fake) = ticking(options, Duration::from_secs(150)).await;
    let reporter = tokio::spawn(report_progress(seen, handle, Duration::from_secs(40)));
    let tools = session.bind();
    let (sink, mut reports) = mpsc::unbounded_channel();
    let started = Instant::now();
    let outcome = tools
        .get("mcp_fx_ticks")
        .unwrap()
        .call(ToolCall::new("c", json!({})).with_progress(sink))
        .await;
    reporter.abort();
    assert_eq!(outcome, ToolOutcome::Completed(ToolResult::text("done")));
    assert!(
        started.elapsed() >= Duration::from_secs(150),
        "past the 60 s deadline"
    );
    let first = reports.recv().await.unwrap();
    assert_eq!(first.progress, 1.0);
    assert_eq!(first.fraction(), Some(0.1));
    assert_eq!(first.message.as_deref(), Some("step 1\u{1b}[2J"));
    let mut count = 1;
    while reports.try_recv().is_ok() {
        count += 1;
    }
    assert_eq!(count, 3, "reports at 40, 80 and 120 s");
}

#[tokio::test(start_paused = true)]
async fn progress_does_not_extend_a_call_past_the_hard_limit() {
    let options = SessionOptions {
        call_timeout: Some(Duration::from_secs(60)),
        max_call_time: Duration::from_secs(100),
        ..full_access()
    };
    let (session, seen, handle, _fake) = ticking(options, Duration::from_secs(500)).await;
    let reporter = tokio::spawn(report_progress(seen, handle, Duration::from_secs(20)));
    let tools = session.bind();
    let (sink, _reports) = mpsc::unbounded_channel();
    let started = Instant::now();
    let outcome = tools
        .get("mcp_fx_ticks")
        .unwrap()
        .call(ToolCall::new("c", json!({})).with_progress(sink))
        .await;
    reporter.abort();
    assert!(
        matches!(outcome.failure(), Some(CallFailure::Timeout(_))),
        "{outcome:?}"
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(100) && elapsed < Duration::from_secs(101),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_sink_no_progress_is_asked_and_the_deadline_holds() {
    let options = SessionOptions {
        call_timeout: Some(Duration::from_secs(60)),
        ..full_access()
    };
    let (session, mut seen, _handle, _fake) = ticking(options, Duration::from_secs(150)).await;
    let tools = session.bind();
    let outcome = call(&tools, "mcp_fx_ticks", json!({})).await;
    assert_eq!(
        outcome.failure(),
        Some(&CallFailure::Timeout(Duration::from_secs(60)))
    );
    let call = loop {
        let received = seen.recv().await.unwrap();
        if received.method == "tools/call" {
            break received;
        }
    };
    assert!(call.params.pointer("/_meta/progressToken").is_none());
}

// ---------------------------------------------------------------- budget

/// `n` bytes of numbered lines (ASCII), so that any cut shows.
fn numbered(n: usize) -> String {
    let mut text = String::with_capacity(n + 16);
    let mut line = 0u64;
    while text.len() < n {
        text.push_str(&format!("line {line:08}\n"));
        line += 1;
    }
    text.truncate(n);
    text
}

/// Reads a spilled result whole through `read_mcp_result`, page by page.
async fn read_whole(tool: &Arc<dyn ModelTool>, id: &str, from: usize) -> (String, usize) {
    let mut whole = String::new();
    let mut offset = from;
    let mut pages = 0;
    loop {
        let outcome = tool
            .call(ToolCall::new("r", json!({"id": id, "offset": offset})))
            .await;
        let page = text(&outcome);
        let (body, footer) = page.rsplit_once("\n[").expect("a footer");
        assert!(
            page.chars().count() <= 100_000 + 100,
            "a page stays within the budget"
        );
        whole.push_str(body);
        offset += body.chars().count();
        pages += 1;
        if footer.contains("the end") {
            return (whole, pages);
        }
    }
}

#[tokio::test]
async fn results_over_the_budget_reach_the_model_cut_and_page_back_whole() {
    let spill_root = tempfile::tempdir().unwrap();
    let (transport, _seen) = ScriptedServer::new()
        .capabilities(json!({"tools": {}}))
        .tool(json!({"name": "big"}), |arguments| {
            let bytes = arguments["bytes"].as_u64().unwrap_or(0) as usize;
            Reply::result(json!({"content": [{"type": "text", "text": numbered(bytes)}]}))
        })
        .spawn();
    let options = SessionOptions {
        budget: Some(crate::ResultBudget::default().spill_dir(spill_root.path().to_owned())),
        ..full_access()
    };
    let (session, _fake) = session_on(
        transport,
        vec![tool("big", json!({"type": "object"}))],
        options,
    )
    .await;
    let tools = session.bind();
    let reader = session.result_tools().pop().expect("read_mcp_result");
    assert_eq!(reader.name(), crate::READ_MCP_RESULT);

    for bytes in [1024, 1024 * 1024, 50 * 1024 * 1024] {
        let started = std::time::Instant::now();
        let outcome = call(&tools, "mcp_fx_big", json!({"bytes": bytes})).await;
        let elapsed = started.elapsed();
        let shown = text(&outcome);
        let chars = shown.chars().count();
        println!("budget: {bytes} bytes in, {chars} characters to the model, {elapsed:?}");
        assert!(
            chars <= 100_000,
            "{bytes}: {chars} characters reach the model"
        );
        let original = numbered(bytes);
        if bytes == 1024 {
            assert_eq!(shown, original, "a small result is untouched");
            continue;
        }
        assert!(shown.starts_with("line 00000000\n"));
        assert!(
            shown.ends_with(&original[original.len() - 1000..]),
            "the tail is kept"
        );
        let marker = shown
            .split("call read_mcp_result with ")
            .nth(1)
            .and_then(|rest| rest.split_once('}'))
            .map(|(args, _)| format!("{args}}}"))
            .expect("the marker says how to read on");
        let args: Value = serde_json::from_str(&marker).unwrap();
        let id = args["id"].as_str().unwrap().to_owned();
        let from = args["offset"].as_u64().unwrap() as usize;
        assert_eq!(&original[..from], &shown[..from], "the head is the start");
        if bytes == 1024 * 1024 {
            let (rest, pages) = read_whole(&reader, &id, from).await;
            assert_eq!(format!("{}{rest}", &original[..from]), original);
            assert!(pages >= 10, "{pages} pages");
        } else {
            let page = text(
                &reader
                    .call(ToolCall::new("r", json!({"id": id, "offset": bytes - 20})))
                    .await,
            );
            assert!(page.starts_with(&original[bytes - 20..]), "{page}");
            assert!(page.ends_with("the end]"), "{page}");
        }
    }
    let unknown = reader
        .call(ToolCall::new("r", json!({"id": "result-99"})))
        .await;
    assert!(text(&unknown).contains("no spilled result"), "{unknown:?}");

    // The spill directory goes with the session.
    let dirs = || std::fs::read_dir(spill_root.path()).unwrap().count();
    assert_eq!(dirs(), 1);
    drop((tools, reader, session));
    assert_eq!(dirs(), 0, "the spill directory is removed with the session");
}

#[tokio::test]
async fn a_session_without_a_budget_passes_results_whole_and_offers_no_reader() {
    let (transport, _seen) = ScriptedServer::new()
        .capabilities(json!({"tools": {}}))
        .tool(json!({"name": "big"}), |_| {
            Reply::result(json!({"content": [{"type": "text", "text": numbered(300_000)}]}))
        })
        .spawn();
    let options = SessionOptions {
        budget: None,
        ..full_access()
    };
    let (session, _fake) = session_on(
        transport,
        vec![tool("big", json!({"type": "object"}))],
        options,
    )
    .await;
    assert!(session.result_tools().is_empty());
    let outcome = call(&session.bind(), "mcp_fx_big", json!({})).await;
    assert_eq!(text(&outcome).len(), 300_000);
}

#[tokio::test]
async fn a_resource_over_the_budget_reaches_the_model_cut_too() {
    let (transport, _seen) = ScriptedServer::new()
        .capabilities(json!({"resources": {}}))
        .on("resources/read", |params| {
            Reply::result(json!({"contents": [
                {"uri": params["uri"], "mimeType": "text/plain", "text": numbered(300_000)}
            ]}))
        })
        .spawn();
    let options = SessionOptions {
        budget: Some(crate::ResultBudget::default().chars(20_000)),
        ..full_access()
    };
    let (session, _fake) = session_on(transport, Vec::new(), options).await;
    let read = session
        .loader_tools()
        .into_iter()
        .find(|t| t.name() == READ_MCP_RESOURCE)
        .expect("read_mcp_resource");
    let outcome = read
        .call(ToolCall::new(
            "r",
            json!({"server": "fx", "uri": "file:///big.log"}),
        ))
        .await;
    let shown = text(&outcome);
    assert!(shown.chars().count() <= 20_000, "{}", shown.chars().count());
    assert!(shown.starts_with("line 00000000\n"));
    assert!(
        shown.contains("call read_mcp_result"),
        "the marker says how to read on"
    );
}

#[tokio::test]
async fn a_tools_size_hint_lowers_its_budget_and_cannot_raise_it_past_the_hosts() {
    let (transport, _seen) = ScriptedServer::new()
        .capabilities(json!({"tools": {}}))
        .tool(json!({"name": "small"}), |_| {
            Reply::result(json!({"content": [{"type": "text", "text": numbered(50_000)}]}))
        })
        .tool(json!({"name": "greedy"}), |_| {
            Reply::result(json!({"content": [{"type": "text", "text": numbered(50_000)}]}))
        })
        .spawn();
    let hinted = |name: &str, hint: u64| {
        let mut tool = tool(name, json!({"type": "object"}));
        let mut meta = serde_json::Map::new();
        meta.insert(crate::ResultBudget::HINT_KEY.to_owned(), json!(hint));
        tool.meta = Some(meta.into());
        tool
    };
    let options = SessionOptions {
        budget: Some(crate::ResultBudget::default().chars(20_000)),
        ..full_access()
    };
    let (session, _fake) = session_on(
        transport,
        vec![hinted("small", 5_000), hinted("greedy", 1_000_000)],
        options,
    )
    .await;
    let tools = session.bind();
    let small = text(&call(&tools, "mcp_fx_small", json!({})).await);
    assert!(small.chars().count() <= 5_000, "{}", small.chars().count());
    assert!(small.contains("call read_mcp_result"));
    let greedy = text(&call(&tools, "mcp_fx_greedy", json!({})).await);
    let shown = greedy.chars().count();
    assert!(shown <= 20_000 && shown > 5_000, "{shown}");
}

// ------------------------------------------------------------ dialects

/// `echo` with an optional note, a constant and a closed object: Gemini
/// can declare neither the constant nor the closing.
fn dialect_harness_tools() -> Vec<Tool> {
    let mut echo = tool("echo", json!({}));
    // As the server writes it: the declaration keeps this order.
    echo.input_schema = mcp_proto::types::JsonText::from_text(
        r#"{
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "note": {"type": "string"},
                "n": {"const": 3}
            },
            "required": ["text"],
            "additionalProperties": false
        }"#,
    )
    .unwrap();
    vec![echo]
}

async fn dialect_harness(dialect: crate::SchemaDialect) -> Harness {
    let fake = Fake::new();
    let (client, seen) = scripted_server().await;
    fake.add_ready("fx", dialect_harness_tools(), client);
    let session = McpSession::with_backend(fake.clone(), full_access().schema_dialect(dialect));
    let events = session.approval_events();
    Harness {
        fake,
        session,
        seen,
        events,
    }
}

#[tokio::test]
async fn a_loose_declaration_never_lets_through_what_the_server_schema_refuses() {
    let mut h = dialect_harness(crate::SchemaDialect::Gemini).await;
    let tools = h.session.bind();
    let echo = tools.get("mcp_fx_echo").unwrap();
    assert_eq!(
        echo.input_schema().to_value(),
        json!({
            "type": "object",
            "properties": {"text": {"type": "string"}, "note": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["text"]
        })
    );
    assert!(!echo.fidelity().is_exact());
    let notes = tools.declaration_notes();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].tool, "mcp_fx_echo");
    assert!(
        notes[0]
            .reasons
            .iter()
            .any(|r| r.contains("a const integer")),
        "{notes:?}"
    );

    // The declaration allows this call; the server's schema does not.
    let loose_call = json!({"text": "hi", "n": 4, "extra": true});
    let declared = jsonschema::validator_for(&echo.input_schema().to_value()).unwrap();
    assert!(declared.is_valid(&loose_call));
    let outcome = call(&tools, "mcp_fx_echo", loose_call).await;
    let Some(CallFailure::InvalidArguments(invalid)) = outcome.failure() else {
        panic!("not refused: {outcome:?}");
    };
    let message = invalid.to_string();
    assert!(message.contains("at /n: 3 was expected"), "{message}");
    assert!(
        message.contains("Additional properties are not allowed"),
        "{message}"
    );
    assert!(h.seen.try_recv().is_err(), "nothing reached the server");

    // What the server's schema allows goes through.
    let outcome = call(&tools, "mcp_fx_echo", json!({"text": "hi", "n": 3})).await;
    assert_eq!(text(&outcome), "hi");
}

#[tokio::test]
async fn strict_declarations_are_cached_per_lifetime_and_their_nulls_mean_absent() {
    let mut h = dialect_harness(crate::SchemaDialect::OpenAiStrict).await;
    let first = h.session.bind();
    let second = h.session.bind();
    let a = first.get("mcp_fx_echo").unwrap();
    let b = second.get("mcp_fx_echo").unwrap();
    assert!(
        std::ptr::eq(a.input_schema(), b.input_schema()),
        "one declaration per catalog lifetime"
    );
    assert!(a.fidelity().is_exact(), "{:?}", a.fidelity());
    assert!(first.declaration_notes().is_empty());
    assert_eq!(
        a.input_schema().to_value(),
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "note": {"type": ["string", "null"]},
                "n": {"anyOf": [{"type": "integer", "const": 3}, {"type": "null"}]}
            },
            "required": ["text", "note", "n"],
            "additionalProperties": false
        })
    );
    let outcome = call(
        &second,
        "mcp_fx_echo",
        json!({"text": "hi", "note": null, "n": null}),
    )
    .await;
    assert_eq!(text(&outcome), "hi");
    assert_eq!(
        h.seen.recv().await,
        Some(Seen::Call {
            name: "echo".into(),
            arguments: json!({"text": "hi"})
        })
    );

    // A new catalog lifetime declares again.
    h.fake.swap("fx");
    let third = h.session.bind();
    let c = third.get("mcp_fx_echo").unwrap();
    assert!(!std::ptr::eq(a.input_schema(), c.input_schema()));
    assert_eq!(a.input_schema(), c.input_schema());
}

#[tokio::test]
async fn loader_and_catalog_tools_declare_valid_schemas_in_every_dialect() {
    for dialect in [
        crate::SchemaDialect::AsIs,
        crate::SchemaDialect::OpenAiStrict,
        crate::SchemaDialect::Gemini,
    ] {
        let mut h = dialect_harness(dialect).await;
        h.session.bind();
        let mut tools = h.session.loader_tools();
        tools.extend(h.session.result_tools());
        tools.extend(h.session.catalog_tools());
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            [
                LOAD_MCP,
                CALL_MCP_TOOL,
                READ_MCP_RESOURCE,
                crate::READ_MCP_RESULT,
                SEARCH_TOOLS,
                "describe_tool"
            ]
        );
        for tool in &tools {
            if let Err(problem) = crate::dialect::tests::check_declaration(
                dialect,
                &tool.input_schema().to_object().unwrap(),
            ) {
                panic!("{dialect:?} {}: {problem}", tool.name());
            }
            if dialect == crate::SchemaDialect::OpenAiStrict {
                assert!(
                    tool.fidelity().is_exact(),
                    "{}: {:?}",
                    tool.name(),
                    tool.fidelity()
                );
            }
        }
        // call_mcp_tool's arguments: an object, or in strict mode JSON text.
        let arguments = if dialect == crate::SchemaDialect::OpenAiStrict {
            json!("{\"text\": \"via loader\"}")
        } else {
            json!({"text": "via loader"})
        };
        let outcome = tools[1]
            .call(ToolCall::new(
                "c",
                json!({"server": "fx", "tool": "echo", "arguments": arguments}),
            ))
            .await;
        assert_eq!(text(&outcome), "via loader", "{dialect:?}");
        assert_eq!(
            h.seen.recv().await,
            Some(Seen::Call {
                name: "echo".into(),
                arguments: json!({"text": "via loader"})
            })
        );
        // Strict mode's nulls for optional loader arguments mean absent.
        if dialect == crate::SchemaDialect::OpenAiStrict {
            let outcome = tools[3]
                .call(ToolCall::new(
                    "c",
                    json!({"id": "result-9", "offset": null, "length": null, "path": null}),
                ))
                .await;
            assert!(
                !matches!(outcome.failure(), Some(CallFailure::InvalidArguments(_))),
                "{outcome:?}"
            );
        }
    }
}

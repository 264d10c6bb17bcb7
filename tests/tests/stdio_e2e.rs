//! The client over the stdio transport against the fixture server: real processes, real pipes.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::types::{
    ContentBlock, ElicitAction, ElicitRequestParams, ElicitResult, ElicitationCapability,
    JsonObject, ListRootsResult, Root, RootsCapability,
};
use mcp_transport::{
    CallOptions, Client, ClientError, ClientHandler, ClientOptions, ServerNotification,
    StdioOptions, StdioTransport, TransportError,
};
use serde_json::json;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

fn fixture(args: &[&str]) -> StdioOptions {
    let mut options = StdioOptions::new(FIXTURE);
    // These tests exercise the handshake era: the fixture serves only it
    // (the client still probes for the stateless era first, and falls back).
    options.args = ["--era", "legacy"]
        .iter()
        .chain(args)
        .map(|a| (*a).to_owned())
        .collect();
    options
}

async fn connect(args: &[&str]) -> Client {
    connect_with(fixture(args), ClientOptions::default()).await
}

async fn connect_with(stdio: StdioOptions, options: ClientOptions) -> Client {
    let transport = StdioTransport::spawn(stdio).expect("the fixture server starts");
    Client::connect(transport, options)
        .await
        .expect("the handshake succeeds")
}

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

fn text(block: &ContentBlock) -> &str {
    match block {
        ContentBlock::Text(t) => &t.text,
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn lists_and_calls_tools() {
    let client = connect(&[]).await;
    let negotiated = client.negotiated().unwrap();
    assert_eq!(negotiated.version.as_str(), "2025-11-25");
    let tools = client.list_tools(None).await.unwrap();
    let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "add", "slow", "image", "crash"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = client
        .call_tool("echo", args(json!({"text": "hello"})))
        .await
        .unwrap();
    assert_eq!(text(&echo.content[0]), "hello");
    let add = client
        .call_tool("add", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(add.structured_content, Some(json!({"sum": 42})));
    let image = client.call_tool("image", None).await.unwrap();
    assert!(
        matches!(&image.content[0], ContentBlock::Image(i) if i.mime_type == "image/png" && !i.data.is_empty())
    );
    let fail = client.call_tool("fail", None).await.unwrap();
    assert_eq!(fail.is_error, Some(true));
    client.close().await;
}

#[tokio::test]
async fn pipelined_calls_all_complete() {
    let client = connect(&[]).await;
    let calls: Vec<_> = (0..64)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .call_tool("echo", args(json!({"text": format!("n{i}")})))
                    .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let result = call.await.unwrap().unwrap();
        assert_eq!(text(&result.content[0]), format!("n{i}"));
    }
    client.close().await;
}

#[tokio::test]
async fn progress_is_delivered() {
    let client = connect(&[]).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let params = mcp_proto::types::CallToolRequestParams {
        name: "progress".into(),
        arguments: args(json!({"steps": 4})),
        ..Default::default()
    };
    client
        .call_tool_with(&params, CallOptions::default().progress(Some(tx)))
        .await
        .unwrap();
    let mut steps = Vec::new();
    while let Ok(p) = rx.try_recv() {
        steps.push(p.progress);
    }
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    client.close().await;
}

#[tokio::test]
async fn list_changed_arrives_and_the_new_tool_is_callable() {
    let client = connect(&[]).await;
    let mut notifications = client.take_notifications().unwrap();
    client
        .call_tool("add_tool", args(json!({"name": "late_tool"})))
        .await
        .unwrap();
    let notification = tokio::time::timeout(Duration::from_secs(10), notifications.recv())
        .await
        .expect("list_changed arrives");
    assert!(matches!(
        notification,
        Some(ServerNotification::ToolsListChanged)
    ));
    let tools = client.list_tools(None).await.unwrap();
    assert!(tools.tools.iter().any(|t| t.name == "late_tool"));
    let result = client
        .call_tool("late_tool", args(json!({"text": "hi"})))
        .await
        .unwrap();
    assert!(text(&result.content[0]).contains("hi"));
    client.close().await;
}

#[tokio::test]
async fn a_crash_fails_every_pending_call_promptly() {
    let client = connect(&[]).await;
    let slow: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let result = client.call_tool("slow", args(json!({"ms": 60_000}))).await;
                (result, tokio::time::Instant::now())
            })
        })
        .collect();
    // The server answers `ping` only after reading everything before it, so
    // once it answers, all eight slow calls are in its hands.
    client.ping().await.unwrap();
    let crash = client.call_tool("crash", None).await;
    let crashed_at = tokio::time::Instant::now();
    assert!(
        matches!(crash, Err(ClientError::Closed { .. })),
        "{crash:?}"
    );
    for call in slow {
        let (result, at) = call.await.unwrap();
        assert!(
            matches!(result, Err(ClientError::Closed { .. })),
            "{result:?}"
        );
        let late = at.saturating_duration_since(crashed_at);
        assert!(
            late <= Duration::from_millis(100),
            "a pending call failed {late:?} after the crash"
        );
    }
}

#[tokio::test]
async fn junk_and_crlf_stdout_lines_are_tolerated() {
    let client = connect(&["--junk-stdout", "--crlf"]).await;
    for i in 0..5 {
        let result = client
            .call_tool("echo", args(json!({"text": format!("x{i}")})))
            .await
            .unwrap();
        assert_eq!(text(&result.content[0]), format!("x{i}"));
    }
    client.close().await;
}

#[tokio::test]
async fn an_oversize_message_ends_the_connection_with_a_clear_error() {
    let mut stdio = fixture(&["--oversize-kib", "256"]);
    stdio.max_message_size = 64 * 1024;
    let client = connect_with(stdio, ClientOptions::default()).await;
    let error = client.list_tools(None).await.unwrap_err();
    match &error {
        // The reason says a transport error ended it; the error, its source, names the limit.
        ClientError::Closed {
            source: Some(source),
            ..
        } => assert!(
            matches!(**source, TransportError::TooLarge { limit: 65536 }),
            "{source:?}"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_stderr_flood_does_not_stall_the_server() {
    let transport = StdioTransport::spawn(fixture(&["--stderr-flood-mib", "10"])).expect("spawns");
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .unwrap();
    let result = client
        .call_tool("echo", args(json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(text(&result.content[0]), "still here");
    client.close().await;
}

#[tokio::test]
async fn a_hung_call_hits_its_deadline_and_the_connection_survives() {
    let client = connect(&[]).await;
    let params = mcp_proto::types::CallToolRequestParams {
        name: "slow".into(),
        arguments: args(json!({"ms": 60_000})),
        ..Default::default()
    };
    let error = client
        .call_tool_with(
            &params,
            CallOptions::default().timeout(Some(Duration::from_millis(200))),
        )
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    client.ping().await.unwrap();
    client.close().await;
}

struct Host;

#[async_trait]
impl ClientHandler for Host {
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: vec![Root {
                uri: "file:///workspace".into(),
                name: Some("workspace".into()),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        assert!(matches!(params, ElicitRequestParams::Form(_)));
        let mut result = ElicitResult::new(ElicitAction::Accept);
        result.content = Some(JsonObject::new());
        Ok(result)
    }
}

#[tokio::test]
async fn server_requests_reach_the_host_handler() {
    let mut options = ClientOptions::default().handler(Some(Arc::new(Host)));
    options.session.capabilities.roots = Some(RootsCapability::default());
    options.session.capabilities.elicitation = Some(ElicitationCapability::default());
    let client = connect_with(fixture(&[]), options).await;
    let roots = client.call_tool("ask_roots", None).await.unwrap();
    assert_ne!(roots.is_error, Some(true), "{roots:?}");
    let structured = roots
        .structured_content
        .expect("roots come back as structured content");
    assert_eq!(structured["roots"][0]["uri"], "file:///workspace");

    let elicited = client.call_tool("ask_elicitation", None).await.unwrap();
    let structured = elicited
        .structured_content
        .expect("the answer comes back as structured content");
    assert_eq!(structured["action"], "accept");
    let content = structured["content"].as_object().expect("content");
    assert!(
        !content.is_empty(),
        "schema defaults were filled in: {content:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn undeclared_server_requests_are_refused() {
    let client = connect(&[]).await;
    let result = client.call_tool("ask_sampling", None).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result.content[0]).contains("-32601"), "{result:?}");
    client.close().await;
}

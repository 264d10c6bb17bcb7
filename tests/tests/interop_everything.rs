//! Interop with `@modelcontextprotocol/server-everything`, a server we did not write,
//! over stdio, legacy HTTP+SSE and Streamable HTTP.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::types::{
    ContentBlock, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequestParams, ElicitResult, ElicitationCapability, JsonObject, ListRootsResult,
    RootsCapability, SamplingCapability,
};
use mcp_transport::{
    CallOptions, Client, ClientHandler, ClientOptions, HttpOptions, HttpProtocol, HttpTransport,
    StdioOptions, StdioTransport,
};
use serde_json::json;
use tests::servers::{free_port, start_http_server};

/// The host side of the server's requests: one root, a canned model answer,
/// and a user who accepts the form after typing a name.
struct Host;

#[async_trait]
impl ClientHandler for Host {
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(serde_json::from_value(
            json!({"roots": [{"uri": "file:///interop", "name": "interop"}]}),
        )
        .expect("valid roots"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        assert!(!params.messages.is_empty());
        Ok(serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "sampled by the interop host"},
            "model": "interop-model",
            "stopReason": "endTurn"
        }))
        .expect("valid sampling result"))
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let ElicitRequestParams::Form(_) = params else {
            return Err(ErrorObject::invalid_params("only form mode"));
        };
        let mut result = ElicitResult::new(ElicitAction::Accept);
        let mut content = JsonObject::new();
        content.insert("name".into(), json!("Ada Lovelace"));
        content.insert("check".into(), json!(true));
        result.content = Some(content);
        Ok(result)
    }
}

fn options() -> ClientOptions {
    let mut options = ClientOptions::default().handler(Some(Arc::new(Host)));
    options.session.capabilities.roots = Some(RootsCapability::default());
    options.session.capabilities.sampling = Some(SamplingCapability::default());
    options.session.capabilities.elicitation = Some(ElicitationCapability::default());
    options
}

fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

/// Tools that depend on client capabilities are registered after
/// initialization and announced with `list_changed`; list until they are
/// there, waking on each notification (bounded: 20 s).
async fn wait_for_tool(client: &Client, name: &str) {
    let mut notifications = client.take_notifications();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let tools = client.list_tools(None).await.expect("tools/list");
        if tools.tools.iter().any(|t| t.name == name) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never appeared in {:?}",
            tools.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
        if let Some(rx) = notifications.as_mut() {
            let _ = tokio::time::timeout(Duration::from_millis(200), rx.recv()).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
}

/// The same checks over every transport.
async fn exercise(client: &Client) {
    let negotiated = client.negotiated().expect("negotiated");
    assert!(
        negotiated.server_info().name.contains("everything"),
        "{:?}",
        negotiated.server_info()
    );

    let echo = client
        .call_tool("echo", args(json!({"message": "interop"})))
        .await
        .expect("echo");
    assert!(text_of(&echo.content).contains("interop"), "{echo:?}");

    let sum = client
        .call_tool("get-sum", args(json!({"a": 19, "b": 23})))
        .await
        .expect("get-sum");
    assert!(text_of(&sum.content).contains("42"), "{sum:?}");

    let image = client
        .call_tool("get-tiny-image", None)
        .await
        .expect("get-tiny-image");
    assert!(
        image
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::Image(i) if i.mime_type == "image/png" && !i.data.is_empty())),
        "{image:?}"
    );

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let params = mcp_proto::types::CallToolRequestParams {
        name: "trigger-long-running-operation".into(),
        arguments: args(json!({"duration": 1, "steps": 3})),
        ..Default::default()
    };
    client
        .call_tool_with(&params, CallOptions::default().progress(Some(tx)))
        .await
        .expect("long-running operation");
    let mut steps = 0;
    while rx.try_recv().is_ok() {
        steps += 1;
    }
    assert_eq!(steps, 3, "one progress notification per step");

    wait_for_tool(client, "trigger-elicitation-request").await;
    let roots = client
        .call_tool("get-roots-list", None)
        .await
        .expect("get-roots-list");
    assert!(
        text_of(&roots.content).contains("file:///interop"),
        "{roots:?}"
    );

    let sampled = client
        .call_tool(
            "trigger-sampling-request",
            args(json!({"prompt": "hi", "maxTokens": 10})),
        )
        .await
        .expect("trigger-sampling-request");
    assert!(
        text_of(&sampled.content).contains("sampled by the interop host"),
        "{sampled:?}"
    );

    let elicited = client
        .call_tool("trigger-elicitation-request", None)
        .await
        .expect("trigger-elicitation-request");
    let shown = text_of(&elicited.content);
    assert!(shown.contains("Ada Lovelace"), "{elicited:?}");
    assert!(
        shown.contains("It was a dark and stormy night."),
        "the schema default was filled in: {shown}"
    );
}

#[tokio::test]
async fn over_stdio() {
    let mut stdio = StdioOptions::new(tests::node());
    stdio.args = vec![
        tests::server_everything().display().to_string(),
        "stdio".to_owned(),
    ];
    stdio.env = vec![("GZIP_ALLOWED_DOMAINS".to_owned(), "localhost".to_owned())];
    let transport = StdioTransport::spawn(stdio).expect("server-everything starts");
    let client = Client::connect(transport, options())
        .await
        .expect("handshake");
    exercise(&client).await;
    client.close().await;
}

async fn start_everything(mode: &str) -> tests::servers::HttpServerProcess {
    let port = free_port();
    let mut command = tokio::process::Command::new(tests::node());
    command
        .arg(tests::server_everything())
        .arg(mode)
        .env("PORT", port.to_string())
        .env("GZIP_ALLOWED_DOMAINS", "localhost");
    start_http_server(command, port).await
}

#[tokio::test]
async fn over_streamable_http() {
    let server = start_everything("streamableHttp").await;
    let mut http = HttpOptions::new(format!("http://127.0.0.1:{}/mcp", server.port));
    http.protocol = HttpProtocol::Streamable;
    let transport = HttpTransport::connect(http).await.expect("transport");
    let client = Client::connect(transport, options())
        .await
        .expect("handshake");
    exercise(&client).await;
    client.close().await;
}

#[tokio::test]
async fn over_legacy_sse() {
    let server = start_everything("sse").await;
    let mut http = HttpOptions::new(format!("http://127.0.0.1:{}/sse", server.port));
    http.protocol = HttpProtocol::LegacySse;
    let transport = HttpTransport::connect(http).await.expect("transport");
    let client = Client::connect(transport, options())
        .await
        .expect("handshake");
    exercise(&client).await;
    client.close().await;
}

#[tokio::test]
async fn an_sse_server_configured_as_http_falls_back_automatically() {
    let server = start_everything("sse").await;
    let http = HttpOptions::new(format!("http://127.0.0.1:{}/sse", server.port));
    let transport = HttpTransport::connect(http).await.expect("transport");
    let client = Client::connect(transport, options())
        .await
        .expect("handshake after fallback");
    let echo = client
        .call_tool("echo", args(json!({"message": "fallback"})))
        .await
        .expect("echo");
    assert!(text_of(&echo.content).contains("fallback"));
    client.close().await;
}

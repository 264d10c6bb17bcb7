//! Interop with a FastMCP server (the Python SDK, `mcp` 1.x) over stdio and Streamable HTTP.

use std::time::Duration;

use mcp_proto::types::{ContentBlock, JsonObject};
use mcp_transport::{
    Client, ClientOptions, HttpOptions, HttpProtocol, HttpTransport, ServerNotification,
    StdioOptions, StdioTransport,
};
use serde_json::json;
use tests::servers::{free_port, start_http_server};

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

fn text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

/// Adds a tool at runtime: the list_changed notification arrives and the
/// new tool is listed and callable.
async fn exercise(client: &Client) {
    let mut notifications = client.take_notifications().expect("notifications");
    let negotiated = client.negotiated().expect("negotiated");
    assert_eq!(negotiated.server_info().name, "interop-fastmcp");
    assert_eq!(
        negotiated.instructions(),
        Some("A FastMCP server used by interop tests.")
    );

    let sum = client
        .call_tool("add", args(json!({"a": 20, "b": 22})))
        .await
        .expect("add");
    assert_eq!(text(&sum.content), "42");

    let registered = client
        .call_tool("register_tool", args(json!({"name": "shout"})))
        .await
        .expect("register_tool");
    assert_eq!(text(&registered.content), "registered shout");
    let notification = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match notifications.recv().await {
                Some(ServerNotification::ToolsListChanged) => return true,
                Some(_) => continue,
                None => return false,
            }
        }
    })
    .await;
    assert_eq!(notification, Ok(true), "tools/list_changed arrives");

    let tools = client.list_tools(None).await.expect("tools/list");
    assert!(tools.tools.iter().any(|t| t.name == "shout"), "{tools:?}");
    let shouted = client
        .call_tool("shout", args(json!({"text": "hello"})))
        .await
        .expect("the new tool is callable");
    assert_eq!(text(&shouted.content), "shout says hello");
}

#[tokio::test]
async fn over_stdio() {
    let mut stdio = StdioOptions::new(tests::venv_python().display().to_string());
    stdio.args = vec![
        tests::fastmcp_script().display().to_string(),
        "stdio".to_owned(),
    ];
    let transport = StdioTransport::spawn(stdio).expect("the FastMCP server starts");
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("handshake");
    exercise(&client).await;
    client.close().await;
}

#[tokio::test]
async fn over_streamable_http() {
    let port = free_port();
    let mut command = tokio::process::Command::new(tests::venv_python());
    command
        .arg(tests::fastmcp_script())
        .arg("http")
        .arg(port.to_string());
    let server = start_http_server(command, port).await;
    let mut http = HttpOptions::new(format!("http://127.0.0.1:{}/mcp", server.port));
    http.protocol = HttpProtocol::Streamable;
    let transport = HttpTransport::connect(http).await.expect("transport");
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("handshake");
    exercise(&client).await;
    client.close().await;
}

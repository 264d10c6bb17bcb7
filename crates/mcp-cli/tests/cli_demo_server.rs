//! `mcpctl demo-server` as a real process, spoken to by mcp-transport's client over stdio.

mod support;

use std::time::Duration;

use mcp_proto::ProtocolVersion;
use mcp_proto::session::SessionOptions;
use mcp_proto::types::{ContentBlock, JsonObject};
use mcp_proto::version::VersionPolicy;
use mcp_transport::{Client, ClientError, ClientOptions, StdioOptions, StdioTransport};
use serde_json::{Value, json};

async fn connect(offered: ProtocolVersion) -> Client {
    let mut stdio = StdioOptions::new(support::MCPCTL);
    stdio.args = vec!["demo-server".to_owned()];
    let transport = StdioTransport::spawn(stdio).expect("mcpctl demo-server starts");
    let options = ClientOptions::default()
        .session(SessionOptions::default().versions(VersionPolicy::default().offered(offered)));
    tokio::time::timeout(Duration::from_secs(30), Client::connect(transport, options))
        .await
        .expect("the handshake finishes")
        .expect("the handshake succeeds")
}

fn args(value: Value) -> Option<JsonObject> {
    match value {
        Value::Object(map) => Some(map),
        _ => panic!("arguments must be an object"),
    }
}

#[tokio::test]
async fn handshake_tools_and_calls() {
    let client = connect(ProtocolVersion::LATEST_HANDSHAKE).await;
    let negotiated = client.negotiated().unwrap();
    assert_eq!(negotiated.version, ProtocolVersion::LATEST_HANDSHAKE);
    assert_eq!(negotiated.server_info().name, "mcpctl-demo");
    assert!(negotiated.server_capabilities().tools.is_some());
    assert!(negotiated.instructions().unwrap().contains("demo"));
    client.ping().await.unwrap();

    let listed = client.list_tools(None).await.unwrap();
    assert_eq!(listed.next_cursor, None);
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["echo", "add", "current_time", "word_count", "tiny_image"]
    );
    for tool in &listed.tools {
        assert_eq!(
            tool.input_schema.to_value()["type"],
            "object",
            "{}",
            tool.name
        );
        assert!(tool.description.is_some(), "{}", tool.name);
    }

    let echo = client
        .call_tool("echo", args(json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(echo.content, vec![ContentBlock::text("hi")]);
    assert!(!echo.failed());

    let sum = client
        .call_tool("add", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(sum.content[0].as_text(), Some("42"));
    assert_eq!(sum.structured_content, Some(json!({"sum": 42})));

    let words = client
        .call_tool("word_count", args(json!({"text": "a b  c"})))
        .await
        .unwrap();
    assert_eq!(words.structured_content.unwrap()["words"], 3);

    let time = client.call_tool("current_time", None).await.unwrap();
    let text = time.content[0].as_text().unwrap();
    assert!(text.len() == 20 && text.ends_with('Z'), "{text}");

    let image = client.call_tool("tiny_image", None).await.unwrap();
    let ContentBlock::Image(image) = &image.content[0] else {
        panic!("{image:?}")
    };
    assert_eq!(image.mime_type, "image/png");

    // Bad arguments are a tool error the caller can correct ...
    let bad = client
        .call_tool("add", args(json!({"a": "2"})))
        .await
        .unwrap();
    assert!(bad.failed());
    assert!(
        bad.content[0]
            .as_text()
            .unwrap()
            .contains("`a` must be a number")
    );
    // ... an unknown tool is a protocol error.
    let unknown = client.call_tool("nope", None).await.unwrap_err();
    assert!(
        matches!(unknown, ClientError::Rpc(ref e) if e.code == -32602),
        "{unknown:?}"
    );

    client.close().await;
}

#[tokio::test]
async fn older_versions_are_negotiated_without_structured_content() {
    let client = connect(ProtocolVersion::V2025_03_26).await;
    assert_eq!(
        client.negotiated().unwrap().version,
        ProtocolVersion::V2025_03_26
    );
    let listed = client.list_tools(None).await.unwrap();
    assert!(listed.tools.iter().all(|t| t.output_schema.is_none()));
    let sum = client
        .call_tool("add", args(json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    assert_eq!(sum.structured_content, None);
    assert_eq!(sum.content[0].as_text(), Some("2"));
    client.close().await;
}

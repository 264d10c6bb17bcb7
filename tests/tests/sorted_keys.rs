//! A server that sorts its keys (every content block's `type` after its other keys) is understood like any other: the fixture's `--sorted-keys` over stdio.

use mcp_proto::types::{CallToolRequestParams, ContentBlock, JsonObject};
use mcp_transport::{CallOptions, Client, ClientOptions, StdioOptions, StdioTransport};
use serde_json::json;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

fn args(value: serde_json::Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

#[tokio::test]
async fn results_with_sorted_keys_decode_as_results_with_the_tag_first() {
    let mut options = StdioOptions::new(FIXTURE);
    options.args = ["--era", "legacy", "--sorted-keys"]
        .map(str::to_owned)
        .to_vec();
    let transport = StdioTransport::spawn(options).expect("the fixture server starts");
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("the handshake succeeds");

    // What the wire carries: the tag last.
    let params = CallToolRequestParams {
        name: "echo".to_owned(),
        arguments: args(json!({"text": "hello world"})),
        ..CallToolRequestParams::default()
    };
    let raw = client
        .request_raw("tools/call", Some(&params), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(
        raw.get(),
        r#"{"content":[{"text":"hello world","type":"text"}]}"#
    );

    let echo = client
        .call_tool("echo", args(json!({"text": "hello world"})))
        .await
        .unwrap();
    assert_eq!(echo.content, vec![ContentBlock::text("hello world")]);
    let image = client.call_tool("image", None).await.unwrap();
    match &image.content[..] {
        [ContentBlock::Image(image)] => {
            assert_eq!(image.mime_type, "image/png");
            assert!(!image.data.is_empty());
            assert!(image.extra.is_empty(), "{:?}", image.extra);
        }
        other => panic!("expected one image block, got {other:?}"),
    }
    let tools = client.list_tools(None).await.unwrap();
    assert!(tools.tools.iter().any(|t| t.name == "echo"));
    client.close().await;
}

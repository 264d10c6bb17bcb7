//! The client over Streamable HTTP and legacy SSE against the fixture server's HTTP modes.

use std::time::Duration;

use mcp_proto::types::{ContentBlock, JsonObject};
use mcp_transport::{
    CallOptions, Client, ClientError, ClientOptions, HttpOptions, HttpProtocol, HttpTransport,
    ServerNotification,
};
use serde_json::json;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

type Fixture = tests::servers::FixtureHttp;

/// The fixture in an HTTP mode, in the handshake era only (see `fixture`
/// in the stdio tests).
async fn start(args: &[&str]) -> Fixture {
    let args: Vec<&str> = ["--era", "legacy"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    tests::servers::start_fixture_http(FIXTURE, &args).await
}

async fn connect(fixture: &Fixture, protocol: HttpProtocol) -> Client {
    let mut http = HttpOptions::new(fixture.url.clone());
    http.protocol = protocol;
    let transport = HttpTransport::connect(http).await.expect("transport");
    Client::connect(transport, ClientOptions::default())
        .await
        .expect("handshake")
}

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

#[tokio::test]
async fn json_and_sse_responses_with_many_calls_in_flight() {
    for mode in [
        &["--transport", "http"][..],
        &["--transport", "http", "--sse-responses"],
    ] {
        let fixture = start(mode).await;
        let client = connect(&fixture, HttpProtocol::Auto).await;
        let calls: Vec<_> = (0..32)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move {
                    client
                        .call_tool("echo", args(json!({"text": format!("m{i}")})))
                        .await
                })
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            assert_eq!(text(&call.await.unwrap().unwrap().content), format!("m{i}"));
        }
        client.close().await;
    }
}

#[tokio::test]
async fn progress_and_notifications_over_sse_responses() {
    let fixture = start(&["--transport", "http", "--sse-responses"]).await;
    let client = connect(&fixture, HttpProtocol::Streamable).await;
    let mut notifications = client.take_notifications().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let params = mcp_proto::types::CallToolRequestParams {
        name: "progress".into(),
        arguments: args(json!({"steps": 3})),
        ..Default::default()
    };
    client
        .call_tool_with(&params, CallOptions::default().progress(Some(tx)))
        .await
        .unwrap();
    let mut steps = 0;
    while rx.try_recv().is_ok() {
        steps += 1;
    }
    assert_eq!(steps, 3);
    client
        .call_tool("add_tool", args(json!({"name": "late"})))
        .await
        .unwrap();
    let notification = tokio::time::timeout(Duration::from_secs(10), notifications.recv())
        .await
        .expect("list_changed arrives");
    assert!(matches!(
        notification,
        Some(ServerNotification::ToolsListChanged)
    ));
    client.close().await;
}

#[tokio::test]
async fn a_stream_closed_before_its_response_resumes() {
    for flag in ["--close-sse-before-response", "--cut-sse-mid-event"] {
        let fixture = start(&[
            "--transport",
            "http",
            "--sse-responses",
            flag,
            "--retry-ms",
            "50",
        ])
        .await;
        let client = connect(&fixture, HttpProtocol::Streamable).await;
        let result = client
            .call_tool("echo", args(json!({"text": "resumed"})))
            .await
            .unwrap_or_else(|e| panic!("{flag}: {e}"));
        assert_eq!(text(&result.content), "resumed", "{flag}");
        client.close().await;
    }
}

#[tokio::test]
async fn an_expired_session_is_reported_and_calls_are_not_replayed() {
    let fixture = start(&["--transport", "http", "--expire-session-after", "2"]).await;
    let client = connect(&fixture, HttpProtocol::Streamable).await;
    client
        .ping()
        .await
        .expect("the second request is still served");
    let error = client
        .call_tool("echo", args(json!({"text": "x"})))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::SessionExpired), "{error:?}");
    assert!(client.is_closed());
}

#[tokio::test]
async fn no_get_stream_is_not_an_error() {
    let fixture = start(&["--transport", "http", "--no-get-stream"]).await;
    let client = connect(&fixture, HttpProtocol::Streamable).await;
    let result = client
        .call_tool("echo", args(json!({"text": "fine"})))
        .await
        .unwrap();
    assert_eq!(text(&result.content), "fine");
    client.close().await;
}

#[tokio::test]
async fn legacy_sse_directly_and_by_fallback() {
    let fixture = start(&["--transport", "sse"]).await;
    for protocol in [HttpProtocol::LegacySse, HttpProtocol::Auto] {
        let client = connect(&fixture, protocol).await;
        let result = client
            .call_tool("echo", args(json!({"text": "legacy"})))
            .await
            .unwrap();
        assert_eq!(text(&result.content), "legacy", "{protocol:?}");
        client.close().await;
    }
}

#[tokio::test]
async fn the_reference_catalog_answers_as_the_conformance_suites_expect() {
    let fixture = start(&["--transport", "http", "--reference-catalog"]).await;
    let client = connect(&fixture, HttpProtocol::Auto).await;

    let templates = client
        .list_resource_templates(None)
        .await
        .expect("templates");
    assert_eq!(
        serde_json::to_value(&templates).expect("results are JSON")["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
    let read = client
        .read_resource("test://template/123/data")
        .await
        .expect("the template reads");
    let read_text = serde_json::to_value(&read).expect("results are JSON")["contents"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(read_text.contains("123"), "the id is not in {read_text:?}");
    let binary = client
        .read_resource("test://static-binary")
        .await
        .expect("the binary resource reads");
    assert_eq!(
        serde_json::to_value(&binary).expect("results are JSON")["contents"][0]["mimeType"],
        "image/png"
    );
    client
        .subscribe_resource("test://watched-resource")
        .await
        .expect("subscriptions are accepted");
    client
        .unsubscribe_resource("test://watched-resource")
        .await
        .expect("and ended");
    let unknown = client.read_resource("test://template/1/2/data").await;
    assert!(unknown.is_err(), "a URI outside the template: {unknown:?}");

    let failed = client
        .call_tool("test_error_handling", None)
        .await
        .expect("a tool error is a result");
    assert_eq!(failed.is_error, Some(true));
    assert!(!text(&failed.content).is_empty());

    let arguments = [("arg1", "first"), ("arg2", "second")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let prompt = client
        .get_prompt("test_prompt_with_arguments", Some(arguments))
        .await
        .expect("the prompt");
    let rendered = serde_json::to_value(&prompt).expect("results are JSON")["messages"].to_string();
    assert!(
        rendered.contains("first") && rendered.contains("second"),
        "{rendered}"
    );

    let params = serde_json::from_value(json!({
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "testV"}
    }))
    .expect("completion params");
    let completed = client.complete(&params).await.expect("completion");
    assert_eq!(
        serde_json::to_value(&completed).expect("results are JSON")["completion"]["values"],
        json!(["testValue1", "testValue2"])
    );
    client.close().await;
}

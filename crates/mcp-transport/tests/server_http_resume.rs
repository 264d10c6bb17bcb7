//! This crate's Streamable HTTP client against this crate's Streamable HTTP server on a real loopback listener: a call whose response stream the server closes for SSE polling is finished by the client's GET with `Last-Event-ID`, in 2025-11-25 sessions.
#![cfg(all(feature = "http", feature = "server"))]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::ProtocolVersion;
use mcp_proto::jsonrpc::{ErrorObject, RawJson};
use mcp_proto::server::{ClientRequest, ServerOptions};
use mcp_proto::types::{ContentBlock, ServerCapabilities};
use mcp_transport::server::http::{AccessPolicy, HttpServer, HttpServerOptions, Refusal};
use mcp_transport::server::stream::RequestContext;
use mcp_transport::server::{Listener, ListenerOptions, ServerHandler};
use mcp_transport::{Client, ClientOptions, HttpOptions, HttpTransport};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// `poll` closes its stream for polling, then reports progress three
/// times and answers; anything else echoes its name.
struct Polling;

#[async_trait]
impl ServerHandler for Polling {
    async fn request(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let params: Value = request
            .params
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let name = params["name"].as_str().unwrap_or_default().to_owned();
        if name == "poll" {
            context.close_stream(Duration::from_millis(20)).unwrap();
            for n in 1..=3 {
                context
                    .notify(
                        "notifications/message",
                        Some(&json!({"level": "info", "data": format!("step {n}")})),
                    )
                    .unwrap();
            }
        }
        Ok(RawJson::encode(&json!({"content": [{"type": "text", "text": name}]})).unwrap())
    }
}

/// Everyone may use the test's server; the `Last-Event-ID` of each GET
/// is noted.
#[derive(Default)]
struct Open {
    resumed: std::sync::Mutex<Vec<String>>,
}

impl AccessPolicy for Open {
    fn check_origin(&self, request: &http::request::Parts) -> Result<(), Refusal> {
        if request.method == http::Method::GET
            && let Some(id) = request.headers.get("last-event-id")
        {
            let id = String::from_utf8_lossy(id.as_bytes()).into_owned();
            self.resumed.lock().unwrap().push(id);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_call_closed_for_polling_is_finished_through_last_event_id() {
    let tcp = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    let session = ServerOptions::default()
        .versions(vec![ProtocolVersion::V2025_11_25])
        .capabilities(ServerCapabilities {
            tools: Some(Default::default()),
            ..ServerCapabilities::default()
        });
    let handler: Arc<dyn ServerHandler> = Arc::new(Polling);
    let policy = Arc::new(Open::default());
    let server = HttpServer::new(
        Arc::new((session, handler)),
        Arc::clone(&policy) as Arc<dyn AccessPolicy>,
        HttpServerOptions::default(),
    );
    let listener = Listener::new(tcp, ListenerOptions::default());
    let serving = tokio::spawn(server.serve(listener));

    let url = format!("http://127.0.0.1:{port}/mcp");
    let transport = HttpTransport::connect(HttpOptions::new(url)).await.unwrap();
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("the handshake succeeds");
    assert_eq!(
        client.negotiated().unwrap().version,
        ProtocolVersion::V2025_11_25
    );
    for round in 0..3 {
        let result = tokio::time::timeout(Duration::from_secs(30), client.call_tool("poll", None))
            .await
            .expect("the call was not finished after its stream closed")
            .unwrap();
        match result.content.first() {
            Some(ContentBlock::Text(text)) => assert_eq!(text.text, "poll", "round {round}"),
            other => panic!("round {round}: {other:?}"),
        }
    }
    // Each call was finished by a GET that resumed its stream.
    let resumed = policy.resumed.lock().unwrap().clone();
    assert_eq!(resumed.len(), 3, "{resumed:?}");
    // Calls that are not closed early still answer on their own.
    let echoed = client.call_tool("echo", None).await.unwrap();
    assert!(matches!(echoed.content.first(), Some(ContentBlock::Text(t)) if t.text == "echo"));
    client.close().await;
    serving.abort();
}

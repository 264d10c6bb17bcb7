//! Legacy HTTP+SSE transport tests and the automatic fallback from Streamable HTTP, against real hyper servers on 127.0.0.1.
#![cfg(feature = "http")]

mod http_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Method;
use http_support::*;
use mcp_proto::RequestId;
use mcp_transport::{HttpOptions, HttpProtocol, HttpTransport, Inbound, Transport, TransportError};
use serde_json::{Value, json};

/// A 2024-11-05 server: `GET sse_path` opens the stream, whose first event
/// is `endpoint`; POSTs to `/messages?sessionId=abc` are answered on the
/// stream. Other requests get `other(request)`.
#[derive(Clone)]
struct LegacyServer {
    sse_path: &'static str,
    endpoint: Arc<Mutex<String>>,
    stream: Arc<Mutex<Option<SseWriter>>>,
}

const ENDPOINT_PATH: &str = "/messages?sessionId=abc";

impl LegacyServer {
    fn new(sse_path: &'static str) -> Self {
        LegacyServer {
            sse_path,
            endpoint: Arc::new(Mutex::new(ENDPOINT_PATH.to_owned())),
            stream: Arc::new(Mutex::new(None)),
        }
    }

    fn handle(&self, r: &Recorded, other: impl Fn(&Recorded) -> Reply) -> Reply {
        if r.method == Method::GET && r.path == self.sse_path {
            let (reply, w) = Reply::sse();
            let endpoint = self.endpoint.lock().unwrap().clone();
            w.raw(&format!("event: endpoint\ndata: {endpoint}\n\n"));
            *self.stream.lock().unwrap() = Some(w);
            return reply;
        }
        if r.method == Method::POST && r.path == ENDPOINT_PATH {
            self.answer(r);
            return Reply::accepted();
        }
        other(r)
    }

    /// Answers a POSTed message on the stream, as `event: message`.
    fn answer(&self, r: &Recorded) {
        let body = r.json();
        let Some(id) = body.get("id").cloned() else {
            return;
        };
        if body.get("method").is_none() {
            return;
        }
        let result = if body["method"] == mcp_proto::methods::INITIALIZE {
            json!({"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "legacy", "version": "0"}})
        } else {
            json!({"echo": body["method"]})
        };
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if let Some(w) = self.stream.lock().unwrap().as_ref() {
            w.raw(&format!("event: message\ndata: {message}\n\n"));
        }
    }

    /// Ends the SSE stream.
    fn end_stream(&self) {
        self.stream.lock().unwrap().take();
    }
}

fn legacy_options(server: &TestServer) -> HttpOptions {
    let mut options = HttpOptions::new(server.url("/sse"));
    options.protocol = HttpProtocol::LegacySse;
    options
}

#[tokio::test]
async fn legacy_sse_round_trip() {
    let legacy = LegacyServer::new("/sse");
    let script = legacy.clone();
    let server = TestServer::start(move |r| {
        let script = script.clone();
        async move { script.handle(&r, |_| Reply::status(404)) }
    })
    .await;
    let t = connect(legacy_options(&server)).await;
    assert_eq!(t.active_protocol(), Some(HttpProtocol::LegacySse));
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    close_and_expect_nothing_else(&t).await;

    let requests = server.requests();
    let get = &requests[0];
    assert_eq!(get.method, Method::GET);
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    let posts: Vec<_> = requests
        .iter()
        .filter(|r| r.method == Method::POST)
        .collect();
    assert_eq!(posts.len(), 3, "{posts:?}");
    for post in posts {
        assert_eq!(post.path, ENDPOINT_PATH);
        assert_eq!(post.header("content-type"), Some("application/json"));
        // No Streamable HTTP headers on the legacy transport.
        assert_eq!(post.header("mcp-protocol-version"), None);
        assert_eq!(post.header("mcp-session-id"), None);
    }
    // No DELETE: the legacy transport has no session to end.
    assert!(requests.iter().all(|r| r.method != Method::DELETE));
}

#[tokio::test]
async fn legacy_stream_end_closes_the_transport() {
    let legacy = LegacyServer::new("/sse");
    let script = legacy.clone();
    let server = TestServer::start(move |r| {
        let script = script.clone();
        async move { script.handle(&r, |_| Reply::status(404)) }
    })
    .await;
    let t = connect(legacy_options(&server)).await;
    handshake(&t).await;
    legacy.end_stream();
    assert!(matches!(next(&t).await, Inbound::Closed(None)));
    assert!(t.send(request(2, "tools/list")).await.is_err());
}

#[tokio::test]
async fn legacy_post_refused_fails_that_request() {
    let legacy = LegacyServer::new("/sse");
    let script = legacy.clone();
    let server = TestServer::start(move |r| {
        let script = script.clone();
        async move {
            if r.is_post_of("tools/list") {
                return Reply::status(400).body("bad");
            }
            script.handle(&r, |_| Reply::status(404))
        }
    })
    .await;
    let t = connect(legacy_options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(2)));
    assert_eq!(error.http_status(), Some(400));
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn endpoint_on_another_origin_is_refused() {
    let port_holder = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other_port = port_holder.local_addr().unwrap().port();
    for endpoint in [
        // `localhost` is another origin than `127.0.0.1`, even on one port.
        "http://localhost:{port}/messages".to_owned(),
        format!("http://127.0.0.1:{other_port}/messages"),
        "https://127.0.0.1:{port}/messages".to_owned(),
        "//example.com/messages".to_owned(),
    ] {
        let legacy = LegacyServer::new("/sse");
        let script = legacy.clone();
        let server = TestServer::start(move |r| {
            let script = script.clone();
            async move { script.handle(&r, |_| Reply::status(404)) }
        })
        .await;
        *legacy.endpoint.lock().unwrap() =
            endpoint.replace("{port}", &server.addr.port().to_string());
        match HttpTransport::connect(legacy_options(&server)).await {
            Err(TransportError::Protocol(message)) => {
                assert!(message.contains("another origin"), "{endpoint}: {message}");
            }
            other => panic!("{endpoint}: {other:?}"),
        }
        // Nothing was POSTed anywhere.
        assert!(server.requests().iter().all(|r| r.method == Method::GET));
    }
}

#[tokio::test]
async fn endpoint_event_must_come_in_time() {
    // The writers are kept, so the stream stays open without an endpoint event.
    let writers = Arc::new(Mutex::new(Vec::new()));
    let server = TestServer::start(move |r| {
        let writers = Arc::clone(&writers);
        async move {
            if r.method == Method::GET {
                let (reply, w) = Reply::sse();
                w.raw(": waiting\n\n");
                writers.lock().unwrap().push(w);
                return reply;
            }
            Reply::status(404)
        }
    })
    .await;
    let mut options = legacy_options(&server);
    options.endpoint_timeout = Duration::from_millis(200);
    match HttpTransport::connect(options).await {
        Err(TransportError::Protocol(message)) => {
            assert!(message.contains("endpoint"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

/// A server at `/mcp` whose Streamable HTTP POST is refused with `status`
/// but whose GET serves the legacy protocol.
async fn refusing_server(status: u16) -> (TestServer, LegacyServer) {
    let legacy = LegacyServer::new("/mcp");
    let script = legacy.clone();
    let server = TestServer::start(move |r| {
        let script = script.clone();
        async move {
            script.handle(&r, |r| {
                if r.method == Method::POST && r.path == "/mcp" {
                    Reply::status(status).body("not a Streamable HTTP endpoint")
                } else {
                    Reply::status(404)
                }
            })
        }
    })
    .await;
    (server, legacy)
}

#[tokio::test]
async fn falls_back_to_legacy_sse_on_400_404_or_405_for_initialize() {
    for status in [400, 404, 405] {
        let (server, _legacy) = refusing_server(status).await;
        let t = connect(HttpOptions::new(server.url("/mcp"))).await;
        assert_eq!(t.active_protocol(), None);
        handshake(&t).await;
        assert_eq!(
            t.active_protocol(),
            Some(HttpProtocol::LegacySse),
            "{status}"
        );
        t.send(request(2, "tools/list")).await.unwrap();
        assert!(is_response_to(&next_message(&t).await, 2), "{status}");
        close_and_expect_nothing_else(&t).await;

        let requests = server.requests();
        let inits: Vec<_> = requests
            .iter()
            .filter(|r| r.is_post_of("initialize"))
            .map(|r| r.path.as_str())
            .collect();
        assert_eq!(inits, ["/mcp", ENDPOINT_PATH], "{status}");
        assert!(
            requests
                .iter()
                .any(|r| r.method == Method::GET && r.path == "/mcp"),
            "{status}"
        );
    }
}

#[tokio::test]
async fn no_fallback_on_401_403_or_5xx() {
    for status in [401, 403, 500, 503] {
        let (server, _legacy) = refusing_server(status).await;
        let t = connect(HttpOptions::new(server.url("/mcp"))).await;
        t.send(initialize(1)).await.unwrap();
        let (id, error) = next_undelivered(&t).await;
        assert_eq!(id, Some(RequestId::Number(1)));
        assert_eq!(error.http_status(), Some(status), "{error:?}");
        assert_eq!(t.active_protocol(), Some(HttpProtocol::Streamable));
        close_and_expect_nothing_else(&t).await;
        assert!(
            server.requests().iter().all(|r| r.method != Method::GET),
            "{status}: probed the legacy transport"
        );
    }
}

#[tokio::test]
async fn no_fallback_on_a_network_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let t = connect(HttpOptions::new(format!("http://{addr}/mcp"))).await;
    t.send(initialize(1)).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(1)));
    assert!(matches!(error, TransportError::Io(_)), "{error:?}");
    assert_eq!(t.active_protocol(), Some(HttpProtocol::Streamable));
}

#[tokio::test]
async fn failed_fallback_reports_the_original_refusal() {
    // 404 for everything: neither Streamable HTTP nor legacy SSE.
    let server = TestServer::start(|_| async { Reply::status(404).body("nothing here") }).await;
    let t = connect(HttpOptions::new(server.url("/mcp"))).await;
    t.send(initialize(1)).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(1)));
    match error {
        TransportError::Http { status, body } => {
            assert_eq!(status, 404);
            assert_eq!(body, "nothing here");
        }
        other => panic!("{other:?}"),
    }
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn post_answered_with_an_endpoint_event_is_treated_as_legacy() {
    // A legacy server that answers any request to its SSE URL, POST
    // included, with its event stream.
    let legacy = LegacyServer::new("/sse");
    let script = legacy.clone();
    let server = TestServer::start(move |r| {
        let script = script.clone();
        async move {
            if r.path == "/sse" {
                let mut as_get = r.clone();
                as_get.method = Method::GET;
                return script.handle(&as_get, |_| Reply::status(404));
            }
            script.handle(&r, |_| Reply::status(404))
        }
    })
    .await;
    let t = connect(HttpOptions::new(server.url("/sse"))).await;
    handshake(&t).await;
    assert_eq!(t.active_protocol(), Some(HttpProtocol::LegacySse));
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    close_and_expect_nothing_else(&t).await;
    let inits: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.is_post_of("initialize"))
        .map(|r| json!(r.path))
        .collect();
    assert_eq!(inits, [json!("/sse"), json!(ENDPOINT_PATH)]);
}

#[tokio::test]
async fn messages_sent_while_probing_wait_for_the_outcome() {
    let (server, _legacy) = refusing_server(405).await;
    let t = connect(HttpOptions::new(server.url("/mcp"))).await;
    t.send(initialize(1)).await.unwrap();
    // Sent before the probe's outcome is known: it must go to wherever the
    // initialize went, never to the Streamable endpoint.
    t.send(request(2, "ping")).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..2 {
        match next_message(&t).await {
            m if m.id().is_some() => got.push(m.id().cloned().unwrap()),
            other => panic!("{other:?}"),
        }
    }
    got.sort();
    assert_eq!(got, [RequestId::Number(1), RequestId::Number(2)]);
    let ping = server.wait_for(|r| r.is_post_of("ping")).await;
    assert_eq!(ping.path, ENDPOINT_PATH);
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn a_client_on_legacy_sse_posts_no_era_probe() {
    // The default client probes for the 2026-07-28 era with server/discover;
    // legacy HTTP+SSE has only the handshake era, and its SSE URL takes
    // no POST: the probe never goes on the wire.
    let legacy = LegacyServer::new("/sse");
    let script = legacy.clone();
    let server = TestServer::start(move |r| {
        let script = script.clone();
        async move { script.handle(&r, |_| Reply::status(405)) }
    })
    .await;
    let transport = HttpTransport::connect(legacy_options(&server))
        .await
        .unwrap();
    let client = mcp_transport::Client::connect(transport, mcp_transport::ClientOptions::default())
        .await
        .expect("the handshake-era initialize succeeds");
    assert!(client.negotiated().unwrap().version.uses_handshake());
    client.close().await;
    let requests = server.requests();
    let posts: Vec<_> = requests
        .iter()
        .filter(|r| r.method == Method::POST)
        .map(|r| (r.path.clone(), r.rpc_method()))
        .collect();
    assert!(
        posts.iter().all(|(path, _)| path == ENDPOINT_PATH),
        "a POST went elsewhere than the endpoint: {posts:?}"
    );
    assert!(
        posts
            .iter()
            .all(|(_, method)| method.as_deref() != Some("server/discover")),
        "{posts:?}"
    );
}

/// An endpoint remembered as handshake-era (its probe refused, then a
/// handshake on legacy HTTP+SSE) is connected again without the probe,
/// and the `initialize` that goes first still falls back to legacy SSE.
#[tokio::test]
async fn a_remembered_handshake_era_endpoint_still_falls_back_to_legacy_sse() {
    let (server, _legacy) = refusing_server(405).await;
    for _ in 0..2 {
        let transport = connect(HttpOptions::new(server.url("/mcp"))).await;
        let client =
            mcp_transport::Client::connect(transport, mcp_transport::ClientOptions::default())
                .await
                .expect("the handshake-era initialize succeeds over legacy SSE");
        assert!(client.negotiated().unwrap().version.uses_handshake());
        client.close().await;
    }
    let requests = server.requests();
    let probes = requests
        .iter()
        .filter(|r| r.is_post_of("server/discover"))
        .count();
    let inits = requests
        .iter()
        .filter(|r| r.is_post_of("initialize") && r.path == ENDPOINT_PATH)
        .count();
    assert_eq!(probes, 1, "the second connect sent no probe");
    assert_eq!(inits, 2, "both connects shook hands over legacy SSE");
}

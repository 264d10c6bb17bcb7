//! Streamable HTTP transport tests, each against a real hyper server on 127.0.0.1 scripted per scenario.
#![cfg(feature = "http")]

mod http_support;

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use http_support::*;
use mcp_proto::types::{CallToolResult, ContentBlock};
use mcp_proto::{Frame, Message, RequestId};
use mcp_transport::{
    HttpOptions, HttpProtocol, Inbound, Transport, TransportError, TransportExtensions,
};
use serde_json::json;
use tokio::sync::mpsc;

fn options(server: &TestServer) -> HttpOptions {
    HttpOptions::new(server.url("/mcp"))
}

#[tokio::test]
async fn json_initialize_then_session_and_version_headers_on_every_later_request() {
    let server = TestServer::start(|r| async move { basic(&r) }).await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    server.wait_for(|r| r.method == Method::GET).await;
    assert_eq!(t.active_protocol(), Some(HttpProtocol::Streamable));
    close_and_expect_nothing_else(&t).await;

    let requests = server.requests();
    let init = requests
        .iter()
        .find(|r| r.is_post_of("initialize"))
        .unwrap();
    assert_eq!(init.path, "/mcp");
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    for later in [
        requests
            .iter()
            .find(|r| r.is_post_of("notifications/initialized"))
            .unwrap(),
        requests
            .iter()
            .find(|r| r.is_post_of("tools/list"))
            .unwrap(),
        requests.iter().find(|r| r.method == Method::GET).unwrap(),
        requests
            .iter()
            .find(|r| r.method == Method::DELETE)
            .unwrap(),
    ] {
        assert_eq!(later.header("mcp-session-id"), Some(SESSION), "{later:?}");
        assert_eq!(
            later.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "{later:?}"
        );
    }
    let get = requests.iter().find(|r| r.method == Method::GET).unwrap();
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    // The GET was refused with 405: tolerated, not retried.
    assert_eq!(
        requests.iter().filter(|r| r.method == Method::GET).count(),
        1
    );
}

#[tokio::test]
async fn sse_initialize_response_with_priming_event_and_a_notification_first() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("initialize") {
            let (reply, w) = Reply::sse();
            w.priming("0", None);
            w.message(
                Some("1"),
                &json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "hello"}}),
            );
            w.raw(": a comment\n\n");
            w.message(
                Some("2"),
                &json!({"jsonrpc": "2.0", "id": r.rpc_id(), "result": init_result()}),
            );
            return reply.header("mcp-session-id", SESSION);
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    t.send(initialize(1)).await.unwrap();
    let first = next_message(&t).await;
    assert_eq!(first.method(), Some("notifications/message"));
    assert!(is_response_to(&next_message(&t).await, 1));
    t.set_protocol_version(mcp_proto::ProtocolVersion::V2025_11_25);
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    let list = server.wait_for(|r| r.is_post_of("tools/list")).await;
    assert_eq!(list.header("mcp-session-id"), Some(SESSION));
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn post_stream_carries_a_server_request_and_our_response_is_accepted() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/call") {
            let (reply, w) = Reply::sse();
            w.message(
                None,
                &json!({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}),
            );
            w.message(
                None,
                &json!({"jsonrpc": "2.0", "id": r.rpc_id(), "result": {"content": []}}),
            );
            return reply;
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/call")).await.unwrap();
    let server_request = next_message(&t).await;
    assert_eq!(server_request.method(), Some("roots/list"));
    t.send(Message::response(RequestId::from("srv-1"), &json!({"roots": []})).unwrap())
        .await
        .unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    let answer = server
        .wait_for(|r| r.method == Method::POST && r.json().get("result").is_some())
        .await;
    assert_eq!(answer.rpc_id(), json!("srv-1"));
    assert_eq!(answer.header("mcp-session-id"), Some(SESSION));
    close_and_expect_nothing_else(&t).await;
}

/// Servers send requests that belong to no client request (an elicitation
/// from inside a tool) on the GET stream, and drop them when it is not open
/// yet: a request sent right after `notifications/initialized` waits until
/// the GET stream has been answered.
#[tokio::test]
async fn requests_after_initialized_wait_for_the_get_stream() {
    let release = Arc::new(tokio::sync::Notify::new());
    let server = TestServer::start({
        let release = release.clone();
        move |r| {
            let release = release.clone();
            async move {
                if r.method == Method::GET {
                    release.notified().await;
                    let (reply, _writer) = Reply::sse();
                    return reply;
                }
                basic(&r)
            }
        }
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(Message::request(2, "tools/list", None::<&()>).unwrap())
        .await
        .unwrap();
    server.wait_for(|r| r.method == Method::GET).await;
    assert!(
        !server.requests().iter().any(|r| r.is_post_of("tools/list")),
        "tools/list went out before the GET stream was answered"
    );
    release.notify_one();
    let list = server.wait_for(|r| r.is_post_of("tools/list")).await;
    let get = server
        .requests()
        .into_iter()
        .find(|r| r.method == Method::GET)
        .unwrap();
    assert!(list.at >= get.at);
    let response = next_message(&t).await;
    assert!(is_response_to(&response, 2), "{response:?}");
}

#[tokio::test]
async fn the_get_stream_opens_beside_the_initialized_post_and_requests_wait_for_both() {
    // The server answers `notifications/initialized` only once the GET
    // stream has arrived: a client that waited for that answer before
    // opening the stream would never send it.
    let got_get = Arc::new(tokio::sync::Notify::new());
    let answered = Arc::new(std::sync::Mutex::new(None));
    let server = TestServer::start({
        let (got_get, answered) = (got_get.clone(), answered.clone());
        move |r| {
            let (got_get, answered) = (got_get.clone(), answered.clone());
            async move {
                if r.method == Method::GET {
                    got_get.notify_one();
                    let (reply, _writer) = Reply::sse();
                    return reply;
                }
                if r.is_post_of("notifications/initialized") {
                    got_get.notified().await;
                    *answered.lock().unwrap() = Some(std::time::Instant::now());
                }
                basic(&r)
            }
        }
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(Message::request(2, "tools/list", None::<&()>).unwrap())
        .await
        .unwrap();
    let response = next_message(&t).await;
    assert!(is_response_to(&response, 2), "{response:?}");
    let requests = server.requests();
    let get = requests.iter().find(|r| r.method == Method::GET).unwrap();
    assert_eq!(get.header("mcp-session-id"), Some(SESSION));
    let list = requests
        .iter()
        .find(|r| r.is_post_of("tools/list"))
        .unwrap();
    let initialized_answered = answered.lock().unwrap().expect("initialized was answered");
    assert!(list.at >= initialized_answered && list.at >= get.at);
    close_and_expect_nothing_else(&t).await;
}

/// The GET stream of a session needs a connection of its own, and requests
/// after `notifications/initialized` wait for its answer: that connection
/// is opened while `initialize` is still unanswered, so that the GET does
/// not wait for a TCP handshake after it.
#[tokio::test]
async fn the_get_streams_connection_opens_while_initialize_is_answered() {
    let release = Arc::new(tokio::sync::Notify::new());
    let server = TestServer::start({
        let release = release.clone();
        move |r| {
            let release = release.clone();
            async move {
                if r.is_post_of("initialize") {
                    release.notified().await;
                }
                basic(&r)
            }
        }
    })
    .await;
    let t = connect(options(&server)).await;
    t.send(initialize(1)).await.unwrap();
    server.wait_for(|r| r.is_post_of("initialize")).await;
    // The initialize is held unanswered until the second connection has
    // arrived: a transport that opened it only for the GET would never
    // get there.
    server.wait_for_connections(2).await;
    assert_eq!(server.requests().len(), 1, "{:?}", server.requests());
    release.notify_one();
    assert!(is_response_to(&next_message(&t).await, 1));
    t.set_protocol_version(mcp_proto::ProtocolVersion::V2025_11_25);
    t.send(initialized()).await.unwrap();
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    assert!(server.requests().iter().any(|r| r.method == Method::GET));
    close_and_expect_nothing_else(&t).await;
}

/// The GET stream carries the version the client settled, which is the
/// server's answer to `initialize` (here not the version offered), not the
/// one the request offered.
#[tokio::test]
async fn the_get_stream_carries_the_version_the_client_settled() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("initialize") {
            let mut result = init_result();
            result["protocolVersion"] = json!("2025-06-18");
            return Reply::result(r.rpc_id(), result).header("mcp-session-id", SESSION);
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    t.send(initialize(1)).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 1));
    t.set_protocol_version(mcp_proto::ProtocolVersion::V2025_06_18);
    t.send(initialized()).await.unwrap();
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    let requests = server.requests();
    let gets: Vec<_> = requests
        .iter()
        .filter(|r| r.method == Method::GET)
        .collect();
    assert_eq!(gets.len(), 1, "{requests:?}");
    assert_eq!(gets[0].header("mcp-protocol-version"), Some("2025-06-18"));
    assert_eq!(gets[0].header("mcp-session-id"), Some(SESSION));
    close_and_expect_nothing_else(&t).await;
}

/// Collects what a transport hands to its frame sink.
#[derive(Default)]
struct RecordingSink {
    frames: std::sync::Mutex<Vec<Frame>>,
    arrived: tokio::sync::Notify,
}

impl mcp_transport::FrameSink for RecordingSink {
    fn frames(&self, frames: &mut dyn Iterator<Item = Frame>) {
        self.frames.lock().unwrap().extend(frames);
        self.arrived.notify_one();
    }
}

impl RecordingSink {
    /// Waits until a frame answers request `id`.
    async fn wait_for_response(&self, id: i64) {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let notified = self.arrived.notified();
                if self
                    .frames
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|f| matches!(f, Frame::Single(m) if is_response_to(m, id)))
                {
                    return;
                }
                notified.await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no response to {id} reached the sink"));
    }
}

/// With a frame sink set, every frame (a POST's JSON answer, a POST's SSE
/// events) goes to the sink from the task that read it, and `recv` carries
/// only what is not a frame: a request that was not delivered, the end.
#[tokio::test]
async fn frames_go_to_the_sink_and_failures_still_to_recv() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/call") {
            let (reply, w) = Reply::sse();
            w.message(
                None,
                &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 1, "progress": 1}}),
            );
            w.message(
                None,
                &json!({"jsonrpc": "2.0", "id": r.rpc_id(), "result": {"content": []}}),
            );
            return reply;
        }
        if r.is_post_of("resources/read") {
            return Reply::status(500);
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    let sink = Arc::new(RecordingSink::default());
    assert!(t.set_frame_sink(sink.clone()));
    t.send(initialize(1)).await.unwrap();
    sink.wait_for_response(1).await;
    t.set_protocol_version(mcp_proto::ProtocolVersion::V2025_11_25);
    t.send(initialized()).await.unwrap();
    t.send(request(2, "tools/call")).await.unwrap();
    sink.wait_for_response(2).await;
    {
        let frames = sink.frames.lock().unwrap();
        let methods: Vec<_> = frames
            .iter()
            .map(|f| match f {
                Frame::Single(m) => m.method().map(str::to_owned),
                Frame::Batch(_) => None,
            })
            .collect();
        // The progress notification before the response of its stream.
        assert_eq!(
            methods,
            [None, Some("notifications/progress".to_owned()), None],
            "{frames:?}"
        );
    }
    t.send(request(3, "resources/read")).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::from(3)));
    assert!(
        matches!(error, TransportError::Http { status: 500, .. }),
        "{error:?}"
    );
    assert!(t.try_recv().is_none(), "a frame was queued for recv");
    close_and_expect_nothing_else(&t).await;
    assert_eq!(sink.frames.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn get_stream_delivers_server_initiated_messages() {
    let (writers_tx, mut writers) = mpsc::unbounded_channel();
    let server = TestServer::start(move |r| {
        let writers_tx = writers_tx.clone();
        async move {
            if r.method == Method::GET {
                let (reply, w) = Reply::sse();
                let _ = writers_tx.send(w);
                return reply;
            }
            basic(&r)
        }
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    let get = server.wait_for(|r| r.method == Method::GET).await;
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some(SESSION));
    assert_eq!(get.header("last-event-id"), None);
    let w = tokio::time::timeout(PATIENCE, writers.recv())
        .await
        .unwrap()
        .unwrap();
    w.priming("g0", None);
    w.message(
        Some("g1"),
        &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
    );
    w.message(
        Some("g2"),
        &json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
    );
    assert_eq!(
        next_message(&t).await.method(),
        Some("notifications/tools/list_changed")
    );
    let ping = next_message(&t).await;
    assert_eq!(ping.method(), Some("ping"));
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn get_stream_reconnects_with_last_event_id_after_the_server_ends_it() {
    let (writers_tx, mut writers) = mpsc::unbounded_channel();
    let server = TestServer::start(move |r| {
        let writers_tx = writers_tx.clone();
        async move {
            if r.method == Method::GET {
                let (reply, w) = Reply::sse();
                if r.header("last-event-id").is_none() {
                    w.priming("g-1", Some(10));
                    w.message(
                        Some("g-2"),
                        &json!({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": "first"}}),
                    );
                    // Ends here.
                } else {
                    let _ = writers_tx.send(w);
                }
                return reply;
            }
            basic(&r)
        }
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    assert_eq!(
        next_message(&t).await.method(),
        Some("notifications/message")
    );
    let resumed = server
        .wait_for(|r| r.method == Method::GET && r.header("last-event-id").is_some())
        .await;
    assert_eq!(resumed.header("last-event-id"), Some("g-2"));
    assert_eq!(resumed.header("mcp-session-id"), Some(SESSION));
    let w = tokio::time::timeout(PATIENCE, writers.recv())
        .await
        .unwrap()
        .unwrap();
    w.message(
        Some("g-3"),
        &json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}),
    );
    assert_eq!(
        next_message(&t).await.method(),
        Some("notifications/resources/list_changed")
    );
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn get_stream_refused_with_404_405_or_406_means_no_stream() {
    for status in [404, 405, 406] {
        let server = TestServer::start(move |r| async move {
            if r.method == Method::GET {
                return Reply::status(status);
            }
            basic(&r)
        })
        .await;
        let t = connect(options(&server)).await;
        handshake(&t).await;
        server.wait_for(|r| r.method == Method::GET).await;
        t.send(request(2, "tools/list")).await.unwrap();
        assert!(is_response_to(&next_message(&t).await, 2), "GET {status}");
        assert_eq!(
            t.active_protocol(),
            Some(HttpProtocol::Streamable),
            "GET {status}"
        );
        close_and_expect_nothing_else(&t).await;
        let gets = server
            .requests()
            .iter()
            .filter(|r| r.method == Method::GET)
            .count();
        assert_eq!(gets, 1, "GET {status}");
    }
}

#[tokio::test]
async fn stream_closed_before_the_response_resumes_by_get_after_retry() {
    const RETRY_MS: u64 = 300;
    let (closed_tx, mut closed_at) = mpsc::unbounded_channel();
    let server = TestServer::start(move |r| {
        let closed_tx = closed_tx.clone();
        async move {
            if r.is_post_of("tools/call") {
                let (reply, w) = Reply::sse();
                w.priming("ev-1", Some(RETRY_MS));
                // The writer drops here: the server ends the stream after
                // the priming event, before the response.
                let _ = closed_tx.send(std::time::Instant::now());
                return reply;
            }
            if r.method == Method::GET && r.header("last-event-id").is_some() {
                let (reply, w) = Reply::sse();
                w.message(
                    Some("ev-2"),
                    &json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}}),
                );
                return reply;
            }
            basic(&r)
        }
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/call")).await.unwrap();
    // The stream's end is said, with the server's retry, then the answer
    // comes on the resumed stream.
    expect_paused(&t, 2, Duration::from_millis(RETRY_MS)).await;
    assert!(is_response_to(&next_message(&t).await, 2));
    let resume = server
        .wait_for(|r| r.method == Method::GET && r.header("last-event-id").is_some())
        .await;
    assert_eq!(resume.header("last-event-id"), Some("ev-1"));
    assert_eq!(resume.header("accept"), Some("text/event-stream"));
    assert_eq!(resume.header("mcp-session-id"), Some(SESSION));
    assert_eq!(resume.header("mcp-protocol-version"), Some("2025-11-25"));
    // MCP 2025-11-25 §Resumability: the client MUST wait `retry` ms.
    let closed_at = closed_at.recv().await.unwrap();
    let waited = resume.at.duration_since(closed_at);
    assert!(
        waited >= Duration::from_millis(RETRY_MS),
        "reconnected after {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(5),
        "reconnected after {waited:?}"
    );
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn stream_cut_mid_event_resumes_without_the_partial_event() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/call") {
            let (reply, w) = Reply::sse();
            w.priming("p-1", Some(10));
            w.raw("id: p-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"res");
            w.abort();
            return reply;
        }
        if r.method == Method::GET && r.header("last-event-id") == Some("p-1") {
            let (reply, w) = Reply::sse();
            w.message(
                Some("p-2"),
                &json!({"jsonrpc": "2.0", "id": 2, "result": {"whole": true}}),
            );
            return reply;
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/call")).await.unwrap();
    expect_paused(&t, 2, Duration::from_millis(10)).await;
    match next_message(&t).await {
        Message::Response(r) => {
            assert_eq!(r.id, RequestId::Number(2));
            assert_eq!(r.result.get(), r#"{"whole":true}"#);
        }
        other => panic!("{other:?}"),
    }
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn stream_ended_without_an_event_id_fails_only_that_request() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/call") {
            let (reply, w) = Reply::sse();
            w.message(
                None,
                &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 1, "progress": 1}}),
            );
            return reply;
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/call")).await.unwrap();
    assert_eq!(
        next_message(&t).await.method(),
        Some("notifications/progress")
    );
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(2)));
    assert!(matches!(error, TransportError::Protocol(_)), "{error:?}");
    t.send(request(3, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 3));
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn resumption_gives_up_after_the_attempt_limit() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/call") {
            let (reply, w) = Reply::sse();
            w.priming("x-1", Some(5));
            return reply;
        }
        if r.method == Method::GET && r.header("last-event-id").is_some() {
            return Reply::status(503);
        }
        basic(&r)
    })
    .await;
    let mut opts = options(&server);
    opts.max_reconnect_attempts = 2;
    let t = connect(opts).await;
    handshake(&t).await;
    t.send(request(2, "tools/call")).await.unwrap();
    expect_paused(&t, 2, Duration::from_millis(5)).await;
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(2)));
    assert!(matches!(error, TransportError::Protocol(_)), "{error:?}");
    let resumes = server
        .requests()
        .iter()
        .filter(|r| r.header("last-event-id").is_some())
        .count();
    assert_eq!(resumes, 2);
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn http_404_on_a_request_with_a_session_is_session_expired() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/list") {
            return Reply::status(404).body("no such session");
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(2)));
    assert!(error.is_session_expired(), "{error:?}");

    // A fresh `initialize` starts a new session: no old session id on it.
    t.send(initialize(3)).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 3));
    let reinit = server
        .wait_for(|r| r.is_post_of("initialize") && r.rpc_id() == json!(3))
        .await;
    assert_eq!(reinit.header("mcp-session-id"), None);
    assert_eq!(reinit.header("mcp-protocol-version"), None);
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn http_404_on_initialize_without_a_session_is_an_http_error() {
    let server = TestServer::start(|_| async move { Reply::status(404).body("not here") }).await;
    let mut opts = options(&server);
    opts.protocol = HttpProtocol::Streamable;
    let t = connect(opts).await;
    t.send(initialize(1)).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(1)));
    assert_eq!(error.http_status(), Some(404), "{error:?}");
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn get_stream_404_after_it_was_established_closes_with_session_expired() {
    let server = TestServer::start(|r| async move {
        if r.method == Method::GET {
            if r.header("last-event-id").is_some() {
                return Reply::status(404);
            }
            let (reply, w) = Reply::sse();
            w.priming("s-1", Some(10));
            // The stream ends here; the reconnection meets an expired session.
            return reply;
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    match next(&t).await {
        Inbound::Closed(Some(error)) => assert!(error.is_session_expired(), "{error:?}"),
        other => panic!("{other:?}"),
    }
    // `Closed` repeats, and sending fails.
    assert!(matches!(next(&t).await, Inbound::Closed(Some(_))));
    assert!(t.send(request(2, "tools/list")).await.is_err());
}

#[tokio::test]
async fn notification_refused_is_reported_without_an_id() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("notifications/cancelled") {
            return Reply::status(500).body("boom");
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(
        Message::notification("notifications/cancelled", Some(&json!({"requestId": 9}))).unwrap(),
    )
    .await
    .unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, None);
    assert_eq!(error.http_status(), Some(500));
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn error_bodies_are_cut_to_1_kib_with_a_marker_and_escaped() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/list") {
            let page = format!("<h1>\x1b]0;PWNED\x07</h1>\n{}", "x".repeat(100 * 1024));
            return Reply::status(500).body(page);
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    match next_undelivered(&t).await {
        (Some(RequestId::Number(2)), TransportError::Http { status, body }) => {
            assert_eq!(status, 500);
            // 20 bytes of markup, then 1004 of the x's: 1 KiB read.
            let sent = 20 + 100 * 1024;
            assert_eq!(
                body,
                format!(
                    r"<h1>\x1b]0;PWNED\x07</h1>\n{}… [{} more bytes]",
                    "x".repeat(1024 - 20),
                    sent - 1024
                )
            );
        }
        other => panic!("{other:?}"),
    }
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn unexpected_content_type_fails_that_request() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/list") {
            return Reply::status(200)
                .header("content-type", "text/html; charset=utf-8")
                .body("<html></html>");
        }
        if r.is_post_of("prompts/list") {
            // Media types compare without parameters and case.
            return Reply::status(200)
                .header("content-type", "Application/JSON; charset=utf-8")
                .body(json!({"jsonrpc": "2.0", "id": 3, "result": {}}).to_string());
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(2)));
    assert!(
        matches!(
            &error,
            TransportError::UnexpectedContentType { status: 200, content_type, .. }
                if content_type == "text/html"
        ),
        "{error:?}"
    );
    t.send(request(3, "prompts/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 3));
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn oversize_message_ends_the_connection() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/list") {
            return Reply::result(r.rpc_id(), json!({"blob": "y".repeat(8192)}));
        }
        if r.is_post_of("tools/call") {
            let (reply, w) = Reply::sse();
            w.message(
                None,
                &json!({"jsonrpc": "2.0", "id": 3, "result": {"blob": "z".repeat(8192)}}),
            );
            return reply;
        }
        basic(&r)
    })
    .await;
    for method in ["tools/list", "tools/call"] {
        let mut opts = options(&server);
        opts.max_message_size = 4096;
        let t = connect(opts).await;
        handshake(&t).await;
        t.send(request(3, method)).await.unwrap();
        match next(&t).await {
            Inbound::Closed(Some(TransportError::TooLarge { limit })) => assert_eq!(limit, 4096),
            other => panic!("{method}: {other:?}"),
        }
        assert!(t.send(request(4, "ping")).await.is_err());
    }
}

/// A 1 MiB result, as the big text it carries and as a JSON-RPC response.
fn big_response(id: i64) -> (String, serde_json::Value) {
    // Every byte value a JSON string holds unescaped, plus escapes and
    // multi-byte characters, so that a cut anywhere lands on all of them.
    let unit = "abc\"\\\n\t é€𝄞 xyz 0123456789 ";
    let text = unit.repeat((1 << 20) / unit.len() + 1);
    let response = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"content": [{"type": "text", "text": text}]}
    });
    (text, response)
}

/// The text of the first content block of a `tools/call` result.
fn result_text(message: &Message) -> String {
    let Message::Response(response) = message else {
        panic!("expected a response, got {message:?}");
    };
    let result: serde_json::Value = response.result.decode().unwrap();
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// Cuts `body` into chunks whose sizes follow a fixed pseudo-random
/// sequence from 1 byte to 64 KiB (the same on every run).
fn chunks_of(body: &[u8], mut state: u64) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    let mut at = 0;
    while at < body.len() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let size = match (state >> 33) % 4 {
            0 => 1 + (state >> 40) as usize % 7,
            1 => 1 + (state >> 40) as usize % 4096,
            _ => 1 + (state >> 40) as usize % (64 * 1024),
        };
        let end = (at + size).min(body.len());
        chunks.push(body[at..end].to_vec());
        at = end;
    }
    chunks
}

#[tokio::test]
async fn a_1_mib_result_decodes_whole_as_json_and_as_sse_however_the_body_is_cut() {
    // Ids 2 and 3: a JSON body with `Content-Length`, then the same body
    // chunked in pieces; 4 and 5: one SSE event, in pieces with LF and
    // with CRLF line endings.
    let server = TestServer::start(|r| async move {
        if !r.is_post_of("tools/call") {
            return basic(&r);
        }
        let id = r.rpc_id().as_i64().unwrap();
        let (_, response) = big_response(id);
        let body = response.to_string();
        match id {
            2 => Reply::json(response),
            3 => {
                let (mut reply, w) = Reply::sse();
                reply.headers = vec![("content-type".into(), "application/json".into())];
                for chunk in chunks_of(body.as_bytes(), 3) {
                    w.raw_bytes(chunk);
                }
                reply
            }
            _ => {
                let (reply, w) = Reply::sse();
                let ending = if id == 4 { "\n" } else { "\r\n" };
                let event = format!("id: {id}{ending}data: {body}{ending}{ending}");
                for chunk in chunks_of(event.as_bytes(), id as u64) {
                    w.raw_bytes(chunk);
                }
                reply
            }
        }
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    for id in 2..=5 {
        t.send(request(id, "tools/call")).await.unwrap();
        let message = next_message(&t).await;
        assert!(is_response_to(&message, id), "{id}: {message:?}");
        assert_eq!(result_text(&message), big_response(id).0, "{id}");
    }
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn a_1_mib_plain_text_result_decodes_whole_however_the_json_body_is_cut() {
    // A text block's text without escapes, written type first as servers
    // write it, which the transport moves into a string of its own as the
    // body arrives: id 2 with `Content-Length`, 3 to 5 chunked in pieces
    // cut at different places (multi-byte characters among them), 6 with
    // a second block and `isError` after the long one.
    let unit = "plain é€𝄞 text 0123456789 ";
    let text = unit.repeat((1 << 20) / unit.len() + 1);
    let body_of = {
        let text = text.clone();
        move |id: i64| {
            let after = if id == 6 {
                r#",{"type":"text","text":"after"}],"isError":false"#
            } else {
                "]"
            };
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}{after}}}}}"#
            )
        }
    };
    let server = TestServer::start({
        let body_of = body_of.clone();
        move |r| {
            let body_of = body_of.clone();
            async move {
                if !r.is_post_of("tools/call") {
                    return basic(&r);
                }
                let id = r.rpc_id().as_i64().unwrap();
                let body = body_of(id);
                if id == 2 {
                    return Reply::status(200)
                        .header("content-type", "application/json")
                        .body(body);
                }
                let (mut reply, w) = Reply::sse();
                reply.headers = vec![("content-type".into(), "application/json".into())];
                for chunk in chunks_of(body.as_bytes(), id as u64) {
                    w.raw_bytes(chunk);
                }
                reply
            }
        }
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    for id in 2..=6 {
        t.send(request(id, "tools/call")).await.unwrap();
        let message = next_message(&t).await;
        let Message::Response(response) = message else {
            panic!("{id}: expected a response, got {message:?}");
        };
        let expected: serde_json::Value = serde_json::from_str(&body_of(id)).unwrap();
        // Read as text, and decoded into the typed result.
        let whole: serde_json::Value = response.result.decode().unwrap();
        assert_eq!(whole, expected["result"], "{id}");
        let result: CallToolResult = response.result.into_result().unwrap();
        let expected: CallToolResult = serde_json::from_value(expected["result"].clone()).unwrap();
        assert_eq!(result, expected, "{id}");
        assert!(
            matches!(result.content.first(), Some(ContentBlock::Text(block)) if block.text == text),
            "{id}"
        );
    }
    close_and_expect_nothing_else(&t).await;
}

/// Where a response's result lies in memory.
fn result_address(message: &Message) -> usize {
    let Message::Response(response) = message else {
        panic!("expected a response, got {message:?}");
    };
    response.result.get().as_ptr() as usize
}

#[tokio::test]
async fn a_released_large_result_leaves_its_buffer_to_the_next_body_and_a_held_one_keeps_it() {
    // Ids 2 to 4: JSON bodies with `Content-Length`; 5 and 6: SSE events.
    let server = TestServer::start(|r| async move {
        if !r.is_post_of("tools/call") {
            return basic(&r);
        }
        let id = r.rpc_id().as_i64().unwrap();
        let (_, response) = big_response(id);
        if id <= 4 {
            return Reply::json(response);
        }
        let (reply, w) = Reply::sse();
        w.raw_bytes(format!("data: {response}\n\n").into_bytes());
        reply
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    let call = async |id: i64| {
        t.send(request(id, "tools/call")).await.unwrap();
        let message = next_message(&t).await;
        assert_eq!(result_text(&message), big_response(id).0, "{id}");
        message
    };
    // Released before the next call: the next body is read where it lay.
    let first = result_address(&call(2).await);
    let held = call(3).await;
    assert_eq!(result_address(&held), first);
    // Still held by its reader: the next body goes elsewhere, and the
    // held result is intact.
    let other = call(4).await;
    assert_ne!(result_address(&other), first);
    assert_eq!(result_text(&held), big_response(3).0);
    drop((held, other));
    // The same for SSE events' data.
    let event = result_address(&call(5).await);
    assert_eq!(result_address(&call(6).await), event);
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn close_deletes_the_session_and_tolerates_405() {
    let server = TestServer::start(|r| async move {
        if r.method == Method::DELETE {
            return Reply::status(405);
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.close().await.unwrap();
    let delete = server.wait_for(|r| r.method == Method::DELETE).await;
    assert_eq!(delete.header("mcp-session-id"), Some(SESSION));
    assert!(matches!(next(&t).await, Inbound::Closed(None)));
    assert!(matches!(next(&t).await, Inbound::Closed(None)));
    assert!(t.send(request(2, "tools/list")).await.is_err());
    // Idempotent: no second DELETE.
    t.close().await.unwrap();
    let deletes = server
        .requests()
        .iter()
        .filter(|r| r.method == Method::DELETE)
        .count();
    assert_eq!(deletes, 1);
}

#[tokio::test]
async fn many_requests_in_flight_share_kept_alive_connections() {
    const IN_FLIGHT: usize = 32;
    let barrier = Arc::new(tokio::sync::Barrier::new(IN_FLIGHT));
    let server = TestServer::start(move |r| {
        let barrier = Arc::clone(&barrier);
        async move {
            if r.is_post_of("tools/call") {
                // No call is answered before all of them have arrived: `send`
                // must not wait for a response, and each POST runs at once.
                barrier.wait().await;
                return Reply::result(r.rpc_id(), json!({"n": r.rpc_id()}));
            }
            basic(&r)
        }
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    for round in 0..3 {
        let base = 100 * (round + 1);
        for i in 0..IN_FLIGHT as i64 {
            t.send(request(base + i, "tools/call")).await.unwrap();
        }
        let mut seen = std::collections::BTreeSet::new();
        while seen.len() < IN_FLIGHT {
            match next_message(&t).await {
                Message::Response(r) => {
                    assert!(seen.insert(r.id.clone()), "duplicate {:?}", r.id);
                }
                other => panic!("{other:?}"),
            }
        }
    }
    // Three rounds of 32 concurrent calls: later rounds reuse the pooled
    // connections of the first instead of opening new ones.
    let connections = server.connections();
    assert!(
        connections <= IN_FLIGHT + 8,
        "{connections} connections for 3 rounds of {IN_FLIGHT}"
    );
    close_and_expect_nothing_else(&t).await;
}

#[tokio::test]
async fn batch_json_body_is_delivered_as_a_batch() {
    let server = TestServer::start(|r| async move {
        if r.is_post_of("tools/list") {
            return Reply::json(json!([
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 1}},
                {"jsonrpc": "2.0", "id": 2, "result": {}}
            ]));
        }
        basic(&r)
    })
    .await;
    let t = connect(options(&server)).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    match next(&t).await {
        Inbound::Frame(Frame::Batch(messages)) => assert_eq!(messages.len(), 2),
        other => panic!("{other:?}"),
    }
    close_and_expect_nothing_else(&t).await;
}

/// `try_recv` hands over what is already queued, passes the end on once,
/// and leaves the rest to `recv`, which keeps repeating the end.
#[tokio::test]
async fn try_recv_takes_what_is_queued_and_the_end_once() {
    let server = TestServer::start(|r| async move { basic(&r) }).await;
    let t = connect(options(&server)).await;
    assert!(
        t.try_recv().is_none(),
        "nothing is queued before anything was sent"
    );
    handshake(&t).await;
    t.close().await.unwrap();
    assert!(matches!(t.try_recv(), Some(Inbound::Closed(None))));
    assert!(t.try_recv().is_none());
    assert!(matches!(next(&t).await, Inbound::Closed(None)));
}

/// Counts the requests the transport builds (each one asks the auth hook
/// for its headers just before it goes out), and adds nothing.
#[derive(Default)]
struct CountsRequests(std::sync::atomic::AtomicUsize);

#[async_trait::async_trait]
impl mcp_transport::AuthProvider for CountsRequests {
    async fn authorization(&self) -> Result<Option<String>, TransportError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(None)
    }

    async fn on_unauthorized(
        &self,
        _status: u16,
        _www_authenticate: Option<&str>,
    ) -> Result<bool, TransportError> {
        Ok(false)
    }
}

/// A server nobody listens on is tried once per connect: the era probe
/// (`server/discover`) is refused, and the handshake-era `initialize` that
/// follows it fails with that refusal at once instead of connecting again.
/// The error keeps the kind and the operating system's words.
#[tokio::test]
async fn a_refused_connection_is_one_attempt_and_names_the_refusal() {
    // A loopback port that was just free: nothing listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a loopback port")
        .port();
    let counter = Arc::new(CountsRequests::default());
    let mut options = HttpOptions::new(format!("http://127.0.0.1:{port}/mcp"));
    options.auth = Some(Arc::clone(&counter) as Arc<dyn mcp_transport::AuthProvider>);
    let transport = connect(options).await;
    let error =
        match mcp_transport::Client::connect(transport, mcp_transport::ClientOptions::default())
            .await
        {
            Ok(_) => panic!("nothing listens on port {port}"),
            Err(error) => error,
        };
    let Some(TransportError::Io(io)) = error.transport_error() else {
        panic!("expected an I/O error, got {error:?}");
    };
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused, "{io}");
    assert!(
        io.to_string().to_lowercase().contains("connection refused"),
        "{io}"
    );
    assert!(
        error
            .transport_error()
            .is_some_and(TransportError::is_unreachable),
        "{error:?}"
    );
    assert_eq!(
        counter.0.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one request went out: the era probe"
    );
}

/// What the era tests' server is: a handshake-era one (the probe refused
/// with a plain 400), or, once switched, a 2026-07-28 one that answers
/// `server/discover` and refuses `initialize` with a 400: plain, or (with
/// `names_versions`) carrying a -32022 that names its versions.
fn era_server(
    modern: Arc<std::sync::atomic::AtomicBool>,
    names_versions: bool,
) -> impl Fn(Recorded) -> std::future::Ready<Reply> {
    move |req: Recorded| {
        let modern = modern.load(std::sync::atomic::Ordering::SeqCst);
        std::future::ready(match req.rpc_method().as_deref() {
            Some(mcp_proto::methods::INITIALIZE) if modern && names_versions => Reply::status(400)
                .header("content-type", "application/json")
                .body(
                    json!({
                        "jsonrpc": "2.0", "id": req.rpc_id(),
                        "error": {
                            "code": -32022, "message": "Unsupported protocol version",
                            "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}
                        }
                    })
                    .to_string(),
                ),
            Some(mcp_proto::methods::SERVER_DISCOVER) if modern => Reply::result(
                req.rpc_id(),
                json!({
                    "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "1"}}
                }),
            ),
            Some(mcp_proto::methods::SERVER_DISCOVER) => Reply::status(400).body("unknown session"),
            Some(mcp_proto::methods::INITIALIZE) if modern => {
                Reply::status(400).body("missing MCP-Protocol-Version")
            }
            _ => basic(&req),
        })
    }
}

/// How many POSTs of `method` the server has seen.
fn posts_of(server: &TestServer, method: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.is_post_of(method))
        .count()
}

async fn connect_client(url: &str) -> Result<mcp_transport::Client, mcp_transport::ClientError> {
    let transport = connect(HttpOptions::new(url)).await;
    mcp_transport::Client::connect(transport, mcp_transport::ClientOptions::default()).await
}

/// 2026-07-28 "Versioning" §Backward Compatibility: the era is a property
/// of the server, cached per server. An endpoint that refused the era
/// probe as a handshake-era server does and then shook hands is not probed
/// again by the next connect in the process: `initialize` goes first.
#[tokio::test]
async fn a_handshake_era_endpoint_is_probed_once() {
    let server = TestServer::start(era_server(Arc::default(), false)).await;
    let url = server.url("/mcp");
    for _ in 0..3 {
        let client = connect_client(&url).await.expect("a handshake-era connect");
        assert!(client.negotiated().unwrap().version.uses_handshake());
        client.close().await;
    }
    assert_eq!(posts_of(&server, "server/discover"), 1);
    assert_eq!(posts_of(&server, "initialize"), 3);
    // Another endpoint of the same origin has an answer of its own.
    let other = server.url("/other");
    connect_client(&other)
        .await
        .expect("a handshake-era connect")
        .close()
        .await;
    assert_eq!(posts_of(&server, "server/discover"), 2);
}

/// A server remembered as handshake-era that moved to the 2026-07-28 era
/// fails the one connect that skipped the probe, with the server's
/// refusal, and the next connect probes it again and speaks the new era.
#[tokio::test]
async fn an_endpoint_that_changed_era_is_probed_again_after_one_failed_connect() {
    let modern = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = TestServer::start(era_server(Arc::clone(&modern), false)).await;
    let url = server.url("/mcp");
    connect_client(&url)
        .await
        .expect("a handshake-era connect")
        .close()
        .await;
    modern.store(true, std::sync::atomic::Ordering::SeqCst);

    let error = match connect_client(&url).await {
        Ok(_) => panic!("initialize was refused"),
        Err(error) => error,
    };
    assert!(
        matches!(
            error.transport_error(),
            Some(TransportError::Http { status: 400, .. })
        ),
        "{error:?}"
    );
    assert_eq!(posts_of(&server, "server/discover"), 1);

    let client = connect_client(&url).await.expect("a 2026-07-28 connect");
    assert_eq!(client.negotiated().unwrap().version.as_str(), "2026-07-28");
    assert_eq!(posts_of(&server, "server/discover"), 2);
    client.close().await;
}

/// A server remembered as handshake-era that moved to the 2026-07-28 era
/// and names its versions in a -32022 to `initialize` (as 2026-07-28
/// "Versioning" asks of it) is connected in the new era at once: the
/// error is delivered, and the session switches back and probes.
#[tokio::test]
async fn an_endpoint_that_changed_era_and_names_its_versions_connects_at_once() {
    let modern = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = TestServer::start(era_server(Arc::clone(&modern), true)).await;
    let url = server.url("/mcp");
    connect_client(&url)
        .await
        .expect("a handshake-era connect")
        .close()
        .await;
    modern.store(true, std::sync::atomic::Ordering::SeqCst);

    let client = connect_client(&url).await.expect("a 2026-07-28 connect");
    assert_eq!(client.negotiated().unwrap().version.as_str(), "2026-07-28");
    assert_eq!(posts_of(&server, "server/discover"), 2);
    assert_eq!(posts_of(&server, "initialize"), 2);
    client.close().await;
}

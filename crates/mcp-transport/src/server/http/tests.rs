//! The Streamable HTTP server on a real loopback listener, driven by hyper's client: sessions, DELETE cancelling a call in flight, the stateless era, the loopback policy, the in-flight cap, SSE progress, the security headers, and a host serving through its own accept loop and ending a session.

use std::sync::Arc;

use async_trait::async_trait;
use http_body_util::{BodyExt, Full};
use mcp_proto::jsonrpc::{ErrorObject, RawJson};
use mcp_proto::server::{ClientRequest, ServerOptions};
use mcp_proto::types::ServerCapabilities;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::*;
use crate::server::stream::{PeerError, RequestContext};
use crate::server::{ListenerOptions, ServerHandler};

/// Tells the test when a handler's work ends without finishing (its future
/// dropped).
struct Dropped(Option<mpsc::UnboundedSender<String>>, String);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(self.1.clone());
        }
    }
}

/// Tools: `log` logs a message about its call and `ask` asks the client
/// for its roots before answering; `hang` never answers (and reports when its work is dropped),
/// `slow` reports progress twice and answers, `poll` closes its stream for
/// polling and answers once the test releases it, `chatty` closes its
/// stream and reports progress 100 times before answering, `flood` sends
/// 200 notifications of 64 KiB to the session's stream (waiting for room),
/// `burst` as many as are taken without waiting and answers their count,
/// anything else
/// echoes its `text` argument.
struct Tools {
    started: mpsc::UnboundedSender<String>,
    dropped: mpsc::UnboundedSender<String>,
    release: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl ServerHandler for Tools {
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
        let text = match params["name"].as_str().unwrap_or_default() {
            "hang" => {
                let mut guard = Dropped(Some(self.dropped.clone()), context.id().to_string());
                let _ = self.started.send(context.id().to_string());
                std::future::pending::<()>().await;
                guard.0 = None;
                unreachable!("pending never ends")
            }
            "slow" => {
                context.progress(1.0, Some(2.0), Some("half")).unwrap();
                context.progress(2.0, Some(2.0), None).unwrap();
                "done".to_owned()
            }
            "poll" => {
                context
                    .close_stream(std::time::Duration::from_millis(50))
                    .unwrap();
                let _ = self.started.send(context.id().to_string());
                self.release.notified().await;
                "polled".to_owned()
            }
            "chatty" => {
                context
                    .close_stream(std::time::Duration::from_millis(50))
                    .unwrap();
                for n in 1..=100 {
                    context.progress(f64::from(n), None, None).unwrap();
                }
                "chatted".to_owned()
            }
            "log" => {
                context
                    .notify(
                        "notifications/message",
                        Some(&json!({"level": "info", "data": "working"})),
                    )
                    .unwrap();
                "logged".to_owned()
            }
            "ask" => {
                let answer = context
                    .request("roots/list", None::<&()>, None)
                    .await
                    .unwrap();
                let roots: Value = serde_json::from_str(answer.get()).unwrap();
                roots["roots"][0]["uri"].as_str().unwrap().to_owned()
            }
            "flood" => {
                let padding = "x".repeat(64 * 1024);
                for n in 0..200 {
                    context
                        .peer()
                        .send_notification(
                            "notifications/message",
                            Some(&json!({"level": "info", "data": {"n": n, "pad": padding}})),
                        )
                        .await
                        .unwrap();
                }
                "flooded".to_owned()
            }
            "burst" => {
                // As many 64 KiB notifications as are taken without
                // waiting, at most 400 (25 MiB).
                let padding = "x".repeat(64 * 1024);
                let mut sent = 0;
                while sent < 400 {
                    let note = json!({"level": "info", "data": {"n": sent, "pad": padding}});
                    match context.peer().notify("notifications/message", Some(&note)) {
                        Ok(()) => sent += 1,
                        Err(PeerError::Backlogged) => break,
                        Err(error) => panic!("{error}"),
                    }
                    tokio::task::yield_now().await;
                }
                sent.to_string()
            }
            _ => params["arguments"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        };
        Ok(RawJson::encode(&json!({"content": [{"type": "text", "text": text}]})).unwrap())
    }
}

struct Served {
    port: u16,
    started: mpsc::UnboundedReceiver<String>,
    dropped: mpsc::UnboundedReceiver<String>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
    }
}

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

async fn serve(session: ServerOptions) -> Served {
    serve_with(session, HttpServerOptions::default()).await.0
}

async fn serve_with(
    session: ServerOptions,
    options: HttpServerOptions,
) -> (Served, Arc<tokio::sync::Notify>) {
    let tcp = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    let (started_tx, started) = mpsc::unbounded_channel();
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let handler: Arc<dyn ServerHandler> = Arc::new(Tools {
        started: started_tx,
        dropped: dropped_tx,
        release: Arc::clone(&release),
    });
    let session = session.capabilities(ServerCapabilities {
        tools: Some(Default::default()),
        ..ServerCapabilities::default()
    });
    let server = HttpServer::new(
        Arc::new((session, handler)),
        Arc::new(LoopbackPolicy::new(port).bearer_token(TOKEN, "test")),
        options,
    );
    let listener = Listener::new(tcp, ListenerOptions::default().max_connections(Some(64)));
    let server = tokio::spawn(server.serve(listener));
    let served = Served {
        port,
        started,
        dropped,
        server,
    };
    (served, release)
}

/// What came back: status, headers, body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

/// A connection of hyper's client to the server on `port`: its sender,
/// and the task that drives it.
async fn connect(
    port: u16,
) -> (
    hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    tokio::task::JoinHandle<hyper::Result<()>>,
) {
    let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    (sender, tokio::spawn(connection))
}

/// Sends one request on a connection of its own with hyper's client.
async fn send(port: u16, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let (mut sender, _driving) = connect(port).await;
    let mut request = http::Request::builder().method(method).uri("/mcp");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request = request.header("host", format!("127.0.0.1:{port}"));
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

const AUTH: (&str, &str) = ("authorization", "Bearer 0123456789abcdef0123456789abcdef");
const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("content-type", "application/json");

async fn post(port: u16, extra: &[(&str, &str)], body: &Value) -> Answer {
    let mut headers = vec![AUTH, ACCEPT, JSON];
    headers.extend_from_slice(extra);
    send(port, "POST", &headers, &body.to_string()).await
}

/// A handshake-era session, initialized: its id.
async fn session(port: u16) -> String {
    session_at(port, "2025-06-18").await
}

/// A handshake-era session at `version`, initialized: its id.
async fn session_at(port: u16, version: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let started = post(port, &[], &init).await;
    assert_eq!(started.status, 200, "{started:?}");
    assert_eq!(started.json()["result"]["protocolVersion"], version);
    let id = started.header(SESSION_HEADER).to_owned();
    assert_eq!(id.len(), 32, "{started:?}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let acknowledged = post(port, &[(SESSION_HEADER, &id)], &initialized).await;
    assert_eq!(acknowledged.status, 202, "{acknowledged:?}");
    id
}

fn call(id: u64, name: &str, meta: Option<Value>) -> Value {
    let mut params = json!({"name": name, "arguments": {"text": name}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

fn assert_secure(answer: &Answer) {
    assert_eq!(
        answer.header("x-content-type-options"),
        "nosniff",
        "{answer:?}"
    );
    assert_eq!(
        answer.header("referrer-policy"),
        "no-referrer",
        "{answer:?}"
    );
    assert_eq!(answer.header("cache-control"), "no-store", "{answer:?}");
}

#[tokio::test]
async fn a_session_is_started_used_and_ended() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let id = session(port).await;
    let echoed = post(port, &[(SESSION_HEADER, &id)], &call(2, "hello", None)).await;
    assert_eq!(echoed.status, 200, "{echoed:?}");
    assert_secure(&echoed);
    assert_eq!(echoed.json()["id"], 2);
    assert_eq!(echoed.json()["result"]["content"][0]["text"], "hello");
    // Without the session, a handshake-era request is refused.
    let sessionless = post(port, &[], &call(3, "hello", None)).await;
    assert_eq!(sessionless.status, 400, "{sessionless:?}");
    // A second initialize within the session is refused.
    let again = json!({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}});
    let refused = post(port, &[(SESSION_HEADER, &id)], &again).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    // A version header of another era within a session: 400.
    let odd = post(
        port,
        &[
            (SESSION_HEADER, &id),
            ("mcp-protocol-version", "2026-07-28"),
        ],
        &call(5, "hello", None),
    )
    .await;
    assert_eq!(odd.status, 400, "{odd:?}");
    // Progress comes first on an SSE stream, then the answer.
    let slow = call(6, "slow", Some(json!({"progressToken": "p"})));
    let streamed = post(port, &[(SESSION_HEADER, &id)], &slow).await;
    assert_eq!(streamed.header("content-type"), "text/event-stream");
    let events: Vec<Value> = streamed
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{streamed:?}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], "p");
    assert_eq!(events[2]["result"]["content"][0]["text"], "done");
    // GET opens the session's stream; DELETE ends the session.
    let ended = send(port, "DELETE", &[AUTH, (SESSION_HEADER, &id)], "").await;
    assert_eq!(ended.status, 200, "{ended:?}");
    assert_secure(&ended);
    let gone = post(port, &[(SESSION_HEADER, &id)], &call(7, "hello", None)).await;
    assert_eq!(gone.status, 404, "{gone:?}");
    let get = send(port, "GET", &[AUTH, ("accept", "text/event-stream")], "").await;
    assert_eq!(get.status, 405, "{get:?}");
}

#[tokio::test]
async fn deleting_a_session_cancels_its_call_and_answers_nothing() {
    let mut served = serve(ServerOptions::default()).await;
    let port = served.port;
    let id = session(port).await;
    let waiting = {
        let id = id.clone();
        tokio::spawn(
            async move { post(port, &[(SESSION_HEADER, &id)], &call(9, "hang", None)).await },
        )
    };
    assert_eq!(served.started.recv().await.as_deref(), Some("9"));
    let ended = send(port, "DELETE", &[AUTH, (SESSION_HEADER, &id)], "").await;
    assert_eq!(ended.status, 200, "{ended:?}");
    // The handler's future was dropped, and the call got no answer.
    assert_eq!(served.dropped.recv().await.as_deref(), Some("9"));
    let answered = waiting.await.unwrap();
    assert_eq!(answered.status, 200, "{answered:?}");
    assert!(answered.body.is_empty(), "{answered:?}");
    assert_eq!(
        send(port, "DELETE", &[AUTH, (SESSION_HEADER, &id)], "")
            .await
            .status,
        404
    );
}

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

const MODERN: (&str, &str) = ("mcp-protocol-version", "2026-07-28");
const CALL: (&str, &str) = ("mcp-method", "tools/call");

#[tokio::test]
async fn the_stateless_era_needs_no_session_and_closing_its_stream_cancels() {
    let mut served = serve(ServerOptions::default()).await;
    let port = served.port;
    let answered = post(
        port,
        &[MODERN, CALL, ("mcp-name", "hi")],
        &call(1, "hi", Some(modern_meta())),
    )
    .await;
    assert_eq!(answered.status, 200, "{answered:?}");
    assert_eq!(answered.json()["id"], 1);
    assert_eq!(answered.json()["result"]["content"][0]["text"], "hi");
    assert!(answered.header(SESSION_HEADER).is_empty());
    // Two clients may use the same id at once: each request stands alone.
    let (first, second) = (
        call(1, "a", Some(modern_meta())),
        call(1, "b", Some(modern_meta())),
    );
    let (a, b) = tokio::join!(
        post(port, &[MODERN, CALL, ("mcp-name", "a")], &first),
        post(port, &[MODERN, CALL, ("mcp-name", "b")], &second),
    );
    assert_eq!(a.json()["result"]["content"][0]["text"], "a");
    assert_eq!(b.json()["result"]["content"][0]["text"], "b");
    // Headers that disagree with the body: 400, -32020.
    let mismatched = post(
        port,
        &[MODERN, CALL, ("mcp-name", "other")],
        &call(2, "hi", Some(modern_meta())),
    )
    .await;
    assert_eq!(mismatched.status, 400, "{mismatched:?}");
    assert_eq!(mismatched.json()["error"]["code"], -32020);
    // An unknown method: 404 with -32601; initialize in this era too.
    let unknown = json!({"jsonrpc": "2.0", "id": 3, "method": "nope/nothing",
        "params": {"_meta": modern_meta()}});
    let missing = post(port, &[MODERN, ("mcp-method", "nope/nothing")], &unknown).await;
    assert_eq!(missing.status, 404, "{missing:?}");
    assert_eq!(missing.json()["error"]["code"], -32601);
    let init = json!({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}});
    let probe = post(port, &[MODERN], &init).await;
    assert_eq!(probe.status, 404, "{probe:?}");
    // A client that closes its stream cancels its call.
    let hang = call(5, "hang", Some(modern_meta()));
    let waiting =
        tokio::spawn(async move { post(port, &[MODERN, CALL, ("mcp-name", "hang")], &hang).await });
    assert_eq!(served.started.recv().await.as_deref(), Some("5"));
    waiting.abort();
    assert_eq!(served.dropped.recv().await.as_deref(), Some("5"));
}

#[tokio::test]
async fn a_stateless_request_whose_progress_comes_first_streams_to_its_answer() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let mut meta = modern_meta();
    meta["progressToken"] = json!("p");
    let streamed = post(
        port,
        &[MODERN, CALL, ("mcp-name", "slow")],
        &call(7, "slow", Some(meta)),
    )
    .await;
    // The response began before the answer: the connection went on after
    // it, to the answer.
    assert_eq!(streamed.status, 200, "{streamed:?}");
    assert_eq!(
        streamed.header("content-type"),
        "text/event-stream",
        "{streamed:?}"
    );
    let events: Vec<Value> = streamed
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| !data.trim().is_empty())
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert!(events.len() >= 2, "{streamed:?}");
    assert_eq!(
        events[0]["method"], "notifications/progress",
        "{streamed:?}"
    );
    assert_eq!(events[0]["params"]["progressToken"], "p");
    let last = events.last().unwrap();
    assert_eq!(last["id"], 7, "{streamed:?}");
    assert_eq!(last["result"]["content"][0]["text"], "done", "{streamed:?}");
}

#[tokio::test]
async fn host_origin_and_token_are_checked() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string();
    let rebound = send(
        port,
        "POST",
        &[AUTH, ACCEPT, JSON, ("host", "attacker.example")],
        &init,
    )
    .await;
    assert_eq!(rebound.status, 403, "{rebound:?}");
    assert_secure(&rebound);
    let foreign = send(
        port,
        "POST",
        &[AUTH, ACCEPT, JSON, ("origin", "http://attacker.example")],
        &init,
    )
    .await;
    assert_eq!(foreign.status, 403, "{foreign:?}");
    assert_secure(&foreign);
    let none = send(port, "POST", &[ACCEPT, JSON], &init).await;
    assert_eq!(none.status, 401, "{none:?}");
    assert_eq!(none.header("www-authenticate"), "Bearer realm=\"test\"");
    let wrong = send(
        port,
        "POST",
        &[
            ("authorization", "Bearer 00000000000000000000000000000000"),
            ACCEPT,
            JSON,
        ],
        &init,
    )
    .await;
    assert_eq!(wrong.status, 401, "{wrong:?}");
}

#[test]
fn only_this_listener_and_its_own_origin_pass() {
    let headers = |pairs: &[(&'static str, &str)]| {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    };
    assert!(check_host_and_origin(8080, &headers(&[("host", "127.0.0.1:8080")])).is_ok());
    assert!(check_host_and_origin(8080, &headers(&[("host", "LOCALHOST:8080")])).is_ok());
    assert!(check_host_and_origin(8080, &headers(&[("host", "127.0.0.1:8081")])).is_err());
    assert!(check_host_and_origin(8080, &headers(&[("host", "evil.example:8080")])).is_err());
    assert!(check_host_and_origin(8080, &headers(&[])).is_err());
    let same = [
        ("host", "127.0.0.1:8080"),
        ("origin", "http://localhost:8080"),
    ];
    assert!(check_host_and_origin(8080, &headers(&same)).is_ok());
    let cross = [
        ("host", "127.0.0.1:8080"),
        ("origin", "http://evil.example"),
    ];
    assert_eq!(
        check_host_and_origin(8080, &headers(&cross)),
        Err("refused: cross-origin request")
    );
}

#[tokio::test]
async fn requests_above_the_in_flight_cap_are_refused_with_a_stable_error() {
    let mut served = serve(ServerOptions::default().max_in_flight(1)).await;
    let port = served.port;
    let id = session(port).await;
    let waiting = {
        let id = id.clone();
        tokio::spawn(
            async move { post(port, &[(SESSION_HEADER, &id)], &call(2, "hang", None)).await },
        )
    };
    assert_eq!(served.started.recv().await.as_deref(), Some("2"));
    let refused = post(port, &[(SESSION_HEADER, &id)], &call(3, "hello", None)).await;
    assert_eq!(refused.status, 200, "{refused:?}");
    assert_eq!(refused.json()["id"], 3);
    assert_eq!(refused.json()["error"]["code"], -32603);
    assert_eq!(
        refused.json()["error"]["message"],
        "too many requests in flight (at most 1); try again when one has ended"
    );
    // An id still in flight is refused, and the call holding it goes on.
    let twice = post(port, &[(SESSION_HEADER, &id)], &call(2, "hello", None)).await;
    assert_eq!(twice.json()["id"], 2, "{twice:?}");
    assert_eq!(twice.json()["error"]["code"], -32600, "{twice:?}");
    // A client's disconnect is not a cancellation in this era: the call
    // still holds its place until the client cancels it.
    waiting.abort();
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2}});
    assert_eq!(
        post(port, &[(SESSION_HEADER, &id)], &cancel).await.status,
        202
    );
    assert_eq!(served.dropped.recv().await.as_deref(), Some("2"));
    let answered = post(port, &[(SESSION_HEADER, &id)], &call(4, "again", None)).await;
    assert_eq!(answered.json()["result"]["content"][0]["text"], "again");
}

/// `future`, failing the test when it has not finished within 30 s (a
/// stream whose events were dropped would otherwise wait forever).
async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(std::time::Duration::from_secs(30), future)
        .await
        .expect("no answer within 30 s: an event was lost")
}

/// One SSE event as the tests read it: its id, retry and data fields.
#[derive(Debug, Default)]
struct Event {
    id: Option<String>,
    retry: Option<String>,
    data: String,
}

fn events(body: &str) -> Vec<Event> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = Event::default();
            for line in block.lines() {
                if let Some(id) = line.strip_prefix("id: ") {
                    event.id = Some(id.to_owned());
                } else if let Some(retry) = line.strip_prefix("retry: ") {
                    event.retry = Some(retry.to_owned());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    event.data = data.to_owned();
                }
            }
            event
        })
        .collect()
}

fn resume(id: &str, last_event_id: &str) -> Vec<(&'static str, String)> {
    vec![
        ("authorization", AUTH.1.to_owned()),
        ("accept", "text/event-stream".to_owned()),
        (SESSION_HEADER, id.to_owned()),
        ("last-event-id", last_event_id.to_owned()),
    ]
}

async fn get_resumed(port: u16, id: &str, last_event_id: &str) -> Answer {
    let headers = resume(id, last_event_id);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    send(port, "GET", &headers, "").await
}

#[tokio::test]
async fn a_stream_closed_for_polling_is_resumed_by_get_with_last_event_id() {
    let (mut served, release) =
        serve_with(ServerOptions::default(), HttpServerOptions::default()).await;
    let port = served.port;
    let id = session_at(port, "2025-11-25").await;
    // The POST's stream opens with a priming event (an id, a retry, no
    // data) and ends there, while the call goes on.
    let closed = post(port, &[(SESSION_HEADER, &id)], &call(2, "poll", None)).await;
    assert_eq!(closed.status, 200, "{closed:?}");
    assert_eq!(closed.header("content-type"), "text/event-stream");
    let primed = events(&closed.body);
    assert_eq!(primed.len(), 1, "{closed:?}");
    assert_eq!(primed[0].retry.as_deref(), Some("50"), "{closed:?}");
    assert!(primed[0].data.is_empty(), "{closed:?}");
    let last = primed[0].id.clone().expect("the priming event has an id");
    assert_eq!(served.started.recv().await.as_deref(), Some("2"));
    // The client comes back with the priming event's id: the answer
    // arrives on that GET once the call ends, and ends it.
    let resumed = {
        let (id, last) = (id.clone(), last.clone());
        tokio::spawn(async move { get_resumed(port, &id, &last).await })
    };
    release.notify_one();
    let resumed = within(resumed).await.unwrap();
    assert_eq!(resumed.status, 200, "{resumed:?}");
    let answered = events(&resumed.body);
    assert_eq!(answered.len(), 1, "{resumed:?}");
    let answer: Value = serde_json::from_str(&answered[0].data).unwrap();
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["content"][0]["text"], "polled");
    // The finished stream is kept: the same id replays the answer.
    let again = get_resumed(port, &id, &last).await;
    let replayed = events(&again.body);
    assert_eq!(replayed.len(), 1, "{again:?}");
    assert_eq!(replayed[0].id, answered[0].id);
    // An id after the answer replays nothing; the stream has ended.
    let after = get_resumed(port, &id, answered[0].id.as_deref().unwrap()).await;
    assert!(events(&after.body).is_empty(), "{after:?}");
}

#[tokio::test]
async fn a_replay_keeps_the_newest_events_of_the_stream() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let id = session_at(port, "2025-11-25").await;
    let call = call(2, "chatty", Some(json!({"progressToken": "p"})));
    let closed = post(port, &[(SESSION_HEADER, &id)], &call).await;
    let primed = events(&closed.body);
    assert_eq!(primed.len(), 1, "{closed:?}");
    let last = primed[0].id.clone().unwrap();
    // 100 progress reports and the answer followed; the newest
    // REPLAY_EVENTS of them are replayed, the answer last.
    let resumed = get_resumed(port, &id, &last).await;
    let replayed = events(&resumed.body);
    assert_eq!(replayed.len(), REPLAY_EVENTS, "{resumed:?}");
    let first: Value = serde_json::from_str(&replayed[0].data).unwrap();
    assert_eq!(
        first["params"]["progress"],
        f64::from(101 - u32::try_from(REPLAY_EVENTS).unwrap() + 1)
    );
    let answer: Value = serde_json::from_str(&replayed[REPLAY_EVENTS - 1].data).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "chatted");
}

#[tokio::test]
async fn answers_open_as_streams_with_a_priming_event_when_asked() {
    let options = HttpServerOptions::default()
        .stream_answers(true)
        .retry(Some(std::time::Duration::from_millis(250)));
    let (served, _) = serve_with(ServerOptions::default(), options).await;
    let port = served.port;
    let id = session_at(port, "2025-11-25").await;
    let echoed = post(port, &[(SESSION_HEADER, &id)], &call(2, "hello", None)).await;
    assert_eq!(echoed.header("content-type"), "text/event-stream");
    let streamed = events(&echoed.body);
    assert_eq!(streamed.len(), 2, "{echoed:?}");
    assert_eq!(streamed[0].retry.as_deref(), Some("250"));
    assert!(streamed[0].data.is_empty() && streamed[0].id.is_some());
    let answer: Value = serde_json::from_str(&streamed[1].data).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "hello");
    // An earlier version gets no priming event: the answer comes as JSON.
    let older = session_at(port, "2025-06-18").await;
    let plain = post(port, &[(SESSION_HEADER, &older)], &call(3, "hello", None)).await;
    assert_eq!(
        plain.header("content-type"),
        "application/json",
        "{plain:?}"
    );
}

/// Opens the session's GET stream, read by nobody until the test says.
async fn open_get_stream(
    port: u16,
    id: &str,
) -> (
    http::Response<hyper::body::Incoming>,
    tokio::task::JoinHandle<hyper::Result<()>>,
) {
    let (mut sender, driving) = connect(port).await;
    let request = http::Request::builder()
        .method("GET")
        .uri("/mcp")
        .header("host", format!("127.0.0.1:{port}"))
        .header(AUTH.0, AUTH.1)
        .header("accept", "text/event-stream")
        .header(SESSION_HEADER, id)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    (response, driving)
}

/// Reads `count` log notifications from an event stream and returns their
/// `data.n`, in the order they came.
async fn numbered_notifications(
    response: http::Response<hyper::body::Incoming>,
    count: usize,
) -> Vec<u64> {
    let mut body = response.into_body();
    let mut buffer = String::new();
    let mut seen = Vec::new();
    while seen.len() < count {
        let frame = within(body.frame())
            .await
            .expect("the stream ended early")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buffer.push_str(std::str::from_utf8(&data).unwrap());
        }
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            for event in events(&block) {
                let message: Value = serde_json::from_str(&event.data).unwrap();
                seen.push(message["params"]["data"]["n"].as_u64().unwrap());
            }
        }
    }
    seen
}

#[tokio::test]
async fn notifications_wait_for_a_slow_event_stream_rather_than_being_dropped() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let id = session(port).await;
    // The GET stream opens, and its client does not read it for now.
    let (response, _driving) = open_get_stream(port, &id).await;
    // 12.5 MiB of notifications: more than the stream's queue, the
    // sockets' buffers and PEER_BUDGET hold, so the call goes on only as
    // the client reads.
    let flooded =
        tokio::spawn(
            async move { post(port, &[(SESSION_HEADER, &id)], &call(2, "flood", None)).await },
        );
    // Every one arrives, in order, once the client reads.
    let seen = numbered_notifications(response, 200).await;
    assert_eq!(seen, (0..200).collect::<Vec<u64>>());
    let flooded = within(flooded).await.unwrap();
    assert_eq!(flooded.json()["result"]["content"][0]["text"], "flooded");
}

#[tokio::test]
async fn what_waits_for_a_stream_nobody_reads_is_bounded_and_none_of_it_lost() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let id = session(port).await;
    let (response, _driving) = open_get_stream(port, &id).await;
    // Nobody reads the GET stream: the notifications stop being taken once
    // the stream's queue, the sockets and PEER_BUDGET are full.
    let burst = post(port, &[(SESSION_HEADER, &id)], &call(2, "burst", None)).await;
    let sent: u64 = burst.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (16..400).contains(&sent),
        "{sent} notifications of 64 KiB taken"
    );
    // Those taken all arrive, in order, once the client reads.
    let seen = numbered_notifications(response, usize::try_from(sent).unwrap()).await;
    assert_eq!(seen, (0..sent).collect::<Vec<u64>>());
}

#[tokio::test]
async fn batches_are_answered_in_2025_03_26_and_refused_after_it() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let id = session_at(port, "2025-03-26").await;
    let batch = json!([
        call(2, "a", None),
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        call(3, "b", None),
    ]);
    let answered = post(port, &[(SESSION_HEADER, &id)], &batch).await;
    assert_eq!(answered.status, 200, "{answered:?}");
    assert_eq!(answered.header("content-type"), "application/json");
    let replies = answered.json();
    let mut texts: Vec<(u64, String)> = replies
        .as_array()
        .expect("a batch answers with a batch")
        .iter()
        .map(|reply| {
            (
                reply["id"].as_u64().unwrap(),
                reply["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    texts.sort();
    assert_eq!(texts, [(2, "a".to_owned()), (3, "b".to_owned())]);
    // Notifications alone: accepted, nothing to answer.
    let quiet = json!([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]);
    assert_eq!(
        post(port, &[(SESSION_HEADER, &id)], &quiet).await.status,
        202
    );
    // The same id twice: the batch is refused whole.
    let twice = json!([call(4, "a", None), call(4, "b", None)]);
    let refused = post(port, &[(SESSION_HEADER, &id)], &twice).await;
    assert_eq!(refused.json()["error"]["code"], -32600, "{refused:?}");
    // Later versions have no batches: 400 with -32600 naming the version.
    let later = session(port).await;
    let refused = post(port, &[(SESSION_HEADER, &later)], &batch).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    assert_eq!(refused.json()["error"]["code"], -32600);
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("2025-06-18"), "{message}");
    // And so has a POST without a session.
    assert_eq!(post(port, &[], &batch).await.status, 400);
}

#[tokio::test]
async fn messages_about_a_request_go_on_its_own_stream() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
        "clientInfo": {"name": "t", "version": "0"}}});
    let started = post(port, &[], &init).await;
    let id = started.header(SESSION_HEADER).to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(port, &[(SESSION_HEADER, &id)], &initialized)
            .await
            .status,
        202
    );
    // A log message about the call comes on the call's stream, first.
    let logged = post(port, &[(SESSION_HEADER, &id)], &call(2, "log", None)).await;
    assert_eq!(logged.header("content-type"), "text/event-stream");
    let streamed = events(&logged.body);
    assert_eq!(streamed.len(), 2, "{logged:?}");
    let log: Value = serde_json::from_str(&streamed[0].data).unwrap();
    assert_eq!(log["method"], "notifications/message");
    assert_eq!(log["params"]["data"], "working");
    // So does a request to the client; its answer, POSTed, lets the call
    // finish on the same stream.
    let (mut sender, _driving) = connect(port).await;
    let request = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", format!("127.0.0.1:{port}"))
        .header(AUTH.0, AUTH.1)
        .header(ACCEPT.0, ACCEPT.1)
        .header(JSON.0, JSON.1)
        .header(SESSION_HEADER, &id)
        .body(Full::new(Bytes::from(call(3, "ask", None).to_string())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let mut buffer = String::new();
    let asked: Value = loop {
        let frame = within(body.frame())
            .await
            .expect("the stream ended")
            .unwrap();
        buffer.push_str(std::str::from_utf8(&frame.into_data().unwrap()).unwrap());
        if let Some(event) = events(&buffer).into_iter().find(|e| !e.data.is_empty()) {
            break serde_json::from_str(&event.data).unwrap();
        }
    };
    assert_eq!(asked["method"], "roots/list", "{asked}");
    let roots = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"roots": [{"uri": "file:///work"}]}});
    assert_eq!(
        post(port, &[(SESSION_HEADER, &id)], &roots).await.status,
        202
    );
    let rest = within(body.collect()).await.unwrap().to_bytes();
    let answered = events(std::str::from_utf8(&rest).unwrap());
    let answer: Value = serde_json::from_str(&answered.last().unwrap().data).unwrap();
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["content"][0]["text"], "file:///work");
}

#[tokio::test]
async fn a_last_event_id_the_session_does_not_keep_opens_its_stream_instead() {
    let served = serve(ServerOptions::default()).await;
    let port = served.port;
    let long = "9".repeat(4096);
    for bogus in [
        "",
        "x",
        "7-",
        "-1",
        "18446744073709551615-0",
        "99-1",
        long.as_str(),
    ] {
        // Each opens a new session's stream, primed.
        let id = session_at(port, "2025-11-25").await;
        let (mut sender, driving) = connect(port).await;
        let request = http::Request::builder()
            .method("GET")
            .uri("/mcp")
            .header("host", format!("127.0.0.1:{port}"))
            .header(AUTH.0, AUTH.1)
            .header("accept", "text/event-stream")
            .header(SESSION_HEADER, &id)
            .header("last-event-id", bogus)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200, "{bogus:?}");
        let mut body = response.into_body();
        let first = within(body.frame()).await.unwrap().unwrap();
        let primed = events(std::str::from_utf8(&first.into_data().unwrap()).unwrap());
        assert!(
            primed[0].data.is_empty() && primed[0].id.is_some(),
            "{bogus:?}"
        );
        driving.abort();
    }
}

/// A host's own accept loop: each connection served by hyper with a
/// wrapper around the server (`/teapot` answered by the host itself, the
/// rest delegated to the server as a hyper service), for a session the
/// host then ends.
#[tokio::test]
async fn a_host_serves_through_its_own_loop_and_ends_a_session() {
    use hyper::service::Service as _;

    let tcp = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (dropped_tx, mut dropped) = mpsc::unbounded_channel();
    let handler: Arc<dyn ServerHandler> = Arc::new(Tools {
        started: started_tx,
        dropped: dropped_tx,
        release: Arc::new(tokio::sync::Notify::new()),
    });
    let options = ServerOptions::default().capabilities(ServerCapabilities {
        tools: Some(Default::default()),
        ..ServerCapabilities::default()
    });
    let server = HttpServer::new(
        Arc::new((options, handler)),
        Arc::new(LoopbackPolicy::new(port).bearer_token(TOKEN, "test")),
        HttpServerOptions::default(),
    );
    let host = {
        let server = server.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = tcp.accept().await.unwrap();
                let server = server.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<_>| {
                        let server = server.clone();
                        async move {
                            if request.uri().path() == "/teapot" {
                                return Ok::<_, Infallible>(text(
                                    StatusCode::IM_A_TEAPOT,
                                    "the host's own",
                                ));
                            }
                            server.call(request).await
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        })
    };

    let id = session(port).await;
    assert_eq!(server.sessions(), 1);
    let echoed = post(port, &[(SESSION_HEADER, &id)], &call(2, "hello", None)).await;
    assert_eq!(echoed.status, 200, "{echoed:?}");
    assert_secure(&echoed);
    assert_eq!(echoed.json()["result"]["content"][0]["text"], "hello");

    let waiting = {
        let id = id.clone();
        tokio::spawn(
            async move { post(port, &[(SESSION_HEADER, &id)], &call(3, "hang", None)).await },
        )
    };
    assert_eq!(started.recv().await.as_deref(), Some("3"));
    assert!(server.end_session(&id).await);
    assert!(!server.end_session(&id).await, "the session ended once");
    assert_eq!(server.sessions(), 0);
    // Its call was cancelled and not answered; the session is unknown now.
    assert_eq!(dropped.recv().await.as_deref(), Some("3"));
    let answered = waiting.await.unwrap();
    assert!(answered.body.is_empty(), "{answered:?}");
    let gone = post(port, &[(SESSION_HEADER, &id)], &call(4, "hello", None)).await;
    assert_eq!(gone.status, 404, "{gone:?}");

    let teapot = {
        let (mut sender, _driving) = connect(port).await;
        let request = http::Request::builder()
            .uri("/teapot")
            .header("host", format!("127.0.0.1:{port}"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        sender.send_request(request).await.unwrap().status()
    };
    assert_eq!(teapot, StatusCode::IM_A_TEAPOT);
    host.abort();
}

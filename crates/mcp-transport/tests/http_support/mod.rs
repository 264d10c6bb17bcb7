//! A scriptable HTTP/1.1 server on 127.0.0.1 (plain or TLS) and client-side helpers, shared by the `http_*` transport tests.
//!
//! Each test starts a real hyper server with a handler that sees every
//! request (method, path, headers, body, arrival time) and scripts the
//! reply: a whole body, or an SSE stream the test writes to, ends, or
//! breaks at will. Requests are also queued so that a test can wait for
//! the next one instead of sleeping.

#![allow(dead_code, unreachable_pub)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame as BodyFrame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_proto::{Frame, Message, RequestId};
use mcp_transport::{
    HttpOptions, HttpTransport, Inbound, Transport, TransportError, TransportExtensions,
};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// How long a test waits for something that should happen at once before
/// it fails. A guard against hangs, never a synchronization device.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: Method,
    /// Path and query.
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON-RPC body, `Null` when there is none.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of a POST body.
    pub fn rpc_method(&self) -> Option<String> {
        self.json()
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The JSON-RPC id of a POST body.
    pub fn rpc_id(&self) -> Value {
        self.json().get("id").cloned().unwrap_or(Value::Null)
    }

    pub fn is_post_of(&self, method: &str) -> bool {
        self.method == Method::POST && self.rpc_method().as_deref() == Some(method)
    }
}

/// A piece of a streamed body.
#[derive(Debug)]
pub enum Chunk {
    Data(Bytes),
    /// Break the connection mid-body.
    Abort,
}

/// A scripted reply.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: Vec<(String, String)>,
    body: ReplyBody,
}

#[derive(Debug)]
enum ReplyBody {
    Full(Bytes),
    Stream(mpsc::UnboundedReceiver<Chunk>),
}

impl Reply {
    /// An empty body with `status`.
    pub fn status(status: u16) -> Reply {
        Reply {
            status: StatusCode::from_u16(status).unwrap(),
            headers: Vec::new(),
            body: ReplyBody::Full(Bytes::new()),
        }
    }

    pub fn accepted() -> Reply {
        Reply::status(202)
    }

    /// A JSON body with status 200.
    pub fn json(value: Value) -> Reply {
        Reply::status(200)
            .header("content-type", "application/json")
            .body(value.to_string())
    }

    /// A JSON-RPC result for `id`.
    pub fn result(id: Value, result: Value) -> Reply {
        Reply::json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// An SSE stream with status 200, and the writer that feeds it.
    pub fn sse() -> (Reply, SseWriter) {
        let (tx, rx) = mpsc::unbounded_channel();
        let reply = Reply {
            status: StatusCode::OK,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: ReplyBody::Stream(rx),
        };
        (reply, SseWriter { tx })
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: impl Into<Bytes>) -> Reply {
        self.body = ReplyBody::Full(body.into());
        self
    }
}

/// Feeds an SSE reply. Dropping it ends the stream cleanly.
#[derive(Debug, Clone)]
pub struct SseWriter {
    tx: mpsc::UnboundedSender<Chunk>,
}

impl SseWriter {
    pub fn raw(&self, text: &str) {
        let _ = self.tx.send(Chunk::Data(Bytes::from(text.to_owned())));
    }

    /// Bytes as they are: a piece of a body cut anywhere, even inside a
    /// UTF-8 sequence.
    pub fn raw_bytes(&self, bytes: Vec<u8>) {
        let _ = self.tx.send(Chunk::Data(Bytes::from(bytes)));
    }

    /// A message event, with an id if given.
    pub fn message(&self, id: Option<&str>, message: &Value) {
        let mut text = String::new();
        if let Some(id) = id {
            text.push_str(&format!("id: {id}\n"));
        }
        text.push_str(&format!("data: {message}\n\n"));
        self.raw(&text);
    }

    /// A 2025-11-25 priming event: an id, empty data, and `retry` if given.
    pub fn priming(&self, id: &str, retry_ms: Option<u64>) {
        let mut text = format!("id: {id}\n");
        if let Some(ms) = retry_ms {
            text.push_str(&format!("retry: {ms}\n"));
        }
        text.push_str("data:\n\n");
        self.raw(&text);
    }

    /// Breaks the connection mid-body.
    pub fn abort(self) {
        let _ = self.tx.send(Chunk::Abort);
    }

    /// Whether the client is gone (the body was dropped).
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

struct ReplyStream {
    full: Option<Bytes>,
    len: u64,
    rx: Option<mpsc::UnboundedReceiver<Chunk>>,
    /// An abort was read; it takes effect on the next poll, so that hyper
    /// first flushes what was written before it.
    aborting: bool,
}

impl Body for ReplyStream {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Some(bytes) = this.full.take() {
            return Poll::Ready(Some(Ok(BodyFrame::data(bytes))));
        }
        if this.aborting {
            return Poll::Ready(Some(Err(std::io::Error::other("aborted by the test"))));
        }
        match &mut this.rx {
            None => Poll::Ready(None),
            Some(rx) => match rx.poll_recv(cx) {
                Poll::Ready(Some(Chunk::Data(bytes))) => {
                    Poll::Ready(Some(Ok(BodyFrame::data(bytes))))
                }
                Poll::Ready(Some(Chunk::Abort)) => {
                    this.aborting = true;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rx.is_none() && self.full.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        if self.rx.is_none() {
            SizeHint::with_exact(self.len)
        } else {
            SizeHint::default()
        }
    }
}

type Handler = Arc<dyn Fn(Recorded) -> Pin<Box<dyn Future<Output = Reply> + Send>> + Send + Sync>;

/// A running test server. Dropping it stops it.
pub struct TestServer {
    pub addr: SocketAddr,
    scheme: &'static str,
    log: Arc<Mutex<Vec<Recorded>>>,
    arrivals: tokio::sync::Mutex<mpsc::UnboundedReceiver<Recorded>>,
    connections: Arc<tokio::sync::watch::Sender<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts a plain HTTP server on 127.0.0.1 with a free port.
    pub async fn start<F, Fut>(handler: F) -> TestServer
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        Self::start_inner(handler, None).await
    }

    /// Starts an HTTPS server on 127.0.0.1 with a free port.
    pub async fn start_tls<F, Fut>(handler: F, acceptor: tokio_rustls::TlsAcceptor) -> TestServer
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        Self::start_inner(handler, Some(acceptor)).await
    }

    async fn start_inner<F, Fut>(handler: F, tls: Option<tokio_rustls::TlsAcceptor>) -> TestServer
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |r| Box::pin(handler(r)));
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::unbounded_channel();
        let connections = Arc::new(tokio::sync::watch::Sender::new(0));
        let task = {
            let log = Arc::clone(&log);
            let connections = Arc::clone(&connections);
            tokio::spawn(async move {
                let mut conns = JoinSet::new();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    connections.send_modify(|n| *n += 1);
                    let handler = Arc::clone(&handler);
                    let log = Arc::clone(&log);
                    let tx = tx.clone();
                    let tls = tls.clone();
                    conns.spawn(async move {
                        let service = service_fn(move |req: Request<Incoming>| {
                            let handler = Arc::clone(&handler);
                            let log = Arc::clone(&log);
                            let tx = tx.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let recorded = Recorded {
                                    method: parts.method,
                                    path: parts
                                        .uri
                                        .path_and_query()
                                        .map(|p| p.as_str().to_owned())
                                        .unwrap_or_default(),
                                    headers: parts.headers,
                                    body,
                                    at: Instant::now(),
                                };
                                log.lock().unwrap().push(recorded.clone());
                                let _ = tx.send(recorded.clone());
                                let reply = handler(recorded).await;
                                Ok::<_, Infallible>(into_response(reply))
                            }
                        });
                        let builder = hyper::server::conn::http1::Builder::new();
                        match tls {
                            None => {
                                let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
                            }
                            Some(acceptor) => {
                                if let Ok(stream) = acceptor.accept(tcp).await {
                                    let _ = builder
                                        .serve_connection(TokioIo::new(stream), service)
                                        .await;
                                }
                            }
                        }
                    });
                    while conns.try_join_next().is_some() {}
                }
            })
        };
        TestServer {
            addr,
            scheme,
            log,
            arrivals: tokio::sync::Mutex::new(rx),
            connections,
            task,
        }
    }

    /// `scheme://127.0.0.1:port` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{}", self.scheme, self.addr, path)
    }

    /// Waits for the next request to arrive (in arrival order).
    pub async fn next_request(&self) -> Recorded {
        let mut arrivals = self.arrivals.lock().await;
        tokio::time::timeout(PATIENCE, arrivals.recv())
            .await
            .expect("the server saw no further request")
            .expect("the server stopped")
    }

    /// Waits for the next request that matches `pred`, skipping others.
    pub async fn wait_for(&self, pred: impl Fn(&Recorded) -> bool) -> Recorded {
        loop {
            let r = self.next_request().await;
            if pred(&r) {
                return r;
            }
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().unwrap().clone()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        *self.connections.borrow()
    }

    /// Waits until `n` TCP connections have been accepted; fails the test
    /// after [`PATIENCE`].
    pub async fn wait_for_connections(&self, n: usize) {
        let mut accepted = self.connections.subscribe();
        tokio::time::timeout(PATIENCE, accepted.wait_for(|seen| *seen >= n))
            .await
            .unwrap_or_else(|_| panic!("{n} connections never arrived: {}", self.connections()))
            .unwrap();
    }
}

fn into_response(reply: Reply) -> Response<ReplyStream> {
    let body = match reply.body {
        ReplyBody::Full(bytes) => ReplyStream {
            len: bytes.len() as u64,
            full: (!bytes.is_empty()).then_some(bytes),
            rx: None,
            aborting: false,
        },
        ReplyBody::Stream(rx) => ReplyStream {
            full: None,
            len: 0,
            rx: Some(rx),
            aborting: false,
        },
    };
    let mut response = Response::new(body);
    *response.status_mut() = reply.status;
    for (name, value) in reply.headers {
        response.headers_mut().append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            http::HeaderValue::from_str(&value).unwrap(),
        );
    }
    response
}

// ---------------------------------------------------------------------------
// A small MCP server script, for the parts of a test that are not its point.
// ---------------------------------------------------------------------------

/// The session id [`basic`] hands out.
pub const SESSION: &str = "sess-3f9a";

/// The default answer of a well-behaved Streamable HTTP server: JSON
/// `initialize` result with a session id, 202 for notifications and
/// responses, `{"echo": method}` for other requests, 405 for GET, 200 for
/// DELETE.
pub fn basic(req: &Recorded) -> Reply {
    match req.method {
        Method::GET => Reply::status(405),
        Method::DELETE => Reply::status(200),
        _ => {
            let body = req.json();
            match (body.get("method").and_then(Value::as_str), body.get("id")) {
                (Some(mcp_proto::methods::INITIALIZE), Some(id)) => {
                    Reply::result(id.clone(), init_result()).header("mcp-session-id", SESSION)
                }
                (Some(method), Some(id)) => Reply::result(id.clone(), json!({"echo": method})),
                _ => Reply::accepted(),
            }
        }
    }
}

pub fn init_result() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "scripted", "version": "0"}
    })
}

// ---------------------------------------------------------------------------
// Client-side helpers.
// ---------------------------------------------------------------------------

pub fn initialize(id: i64) -> Message {
    Message::request(
        id,
        "initialize",
        Some(&json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "http-test", "version": "0"}
        })),
    )
    .unwrap()
}

pub fn initialized() -> Message {
    Message::notification("notifications/initialized", None::<&()>).unwrap()
}

pub fn request(id: i64, method: &str) -> Message {
    Message::request(id, method, Some(&json!({}))).unwrap()
}

pub async fn connect(options: HttpOptions) -> HttpTransport {
    HttpTransport::connect(options).await.expect("connect")
}

/// The next inbound item, failing the test if none comes.
pub async fn next(t: &HttpTransport) -> Inbound {
    tokio::time::timeout(PATIENCE, t.recv())
        .await
        .expect("the transport yielded nothing")
}

/// The next inbound message; fails on anything else.
pub async fn next_message(t: &HttpTransport) -> Message {
    match next(t).await {
        Inbound::Frame(Frame::Single(m)) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

/// The next inbound item is [`Inbound::StreamPaused`] for request `id`,
/// to be resumed after `retry`.
pub async fn expect_paused(t: &HttpTransport, id: i64, retry: std::time::Duration) {
    match next(t).await {
        Inbound::StreamPaused {
            id: paused,
            retry: after,
        } => {
            assert_eq!(paused, RequestId::Number(id));
            assert_eq!(after, retry);
        }
        other => panic!("expected StreamPaused, got {other:?}"),
    }
}

/// The next inbound failure of one message.
pub async fn next_undelivered(t: &HttpTransport) -> (Option<RequestId>, TransportError) {
    match next(t).await {
        Inbound::Undelivered { id, error } => (id, error),
        other => panic!("expected Undelivered, got {other:?}"),
    }
}

/// Whether `m` is the response to request `id`.
pub fn is_response_to(m: &Message, id: i64) -> bool {
    matches!(m, Message::Response(_)) && m.id() == Some(&RequestId::Number(id))
}

/// Sends `initialize`, awaits its response, sets the version, and sends
/// `notifications/initialized`, like the client driver does.
pub async fn handshake(t: &HttpTransport) {
    t.send(initialize(1)).await.unwrap();
    let response = next_message(t).await;
    assert!(is_response_to(&response, 1), "{response:?}");
    t.set_protocol_version(mcp_proto::ProtocolVersion::V2025_11_25);
    t.send(initialized()).await.unwrap();
}

/// Closes the transport and checks that nothing was queued before the
/// `Closed(None)` that closing queues: no stray frame or failure.
pub async fn close_and_expect_nothing_else(t: &HttpTransport) {
    t.close().await.unwrap();
    match next(t).await {
        Inbound::Closed(None) => {}
        other => panic!("expected only Closed(None) after close, got {other:?}"),
    }
}

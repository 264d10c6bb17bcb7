//! The deprecated HTTP+SSE transport (MCP 2024-11-05 "Transports" §HTTP with SSE).
//!
//! `GET /sse` opens a session: its first event is `endpoint`, whose data is
//! `/message?sessionId=ID`; every server message follows as `event: message`.
//! `POST /message?sessionId=ID` takes one client message and answers 202;
//! the reply comes on the stream. `POST /sse` is 405, as a client probing
//! for Streamable HTTP at the SSE URL expects before it falls back.
//! Closing the stream ends the session.
//!
//! The library serves no legacy SSE, so this small layer is the fixture's
//! own: each stream is a connection of the core's byte-stream server
//! (`mcp_transport::server::stream`), fed the session's POSTs one line
//! each through an in-memory pipe, its output lines becoming the stream's
//! events, through the raw path ([`crate::raw`]) as stdio's are.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use mcp_proto::jsonrpc::error_codes;
use mcp_transport::server::{StreamOptions, StreamServer};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

use super::{Body, Handler, accepts, full, origin_allowed, read_body, rpc_error, sse, sse_event};
use crate::raw::{After, Outstanding, RawInput, RawOutput};
use crate::server::{CoreHandler, Fixture, Server, lock};

const SSE_PATH: &str = "/sse";
const MESSAGE_PATH: &str = "/message";

/// How many bytes the in-memory pipe between a session's POSTs and its
/// stream and the core holds each way.
const PIPE: usize = 256 * 1024;

/// Serves HTTP+SSE until the process ends.
pub(crate) async fn serve(fixture: Arc<Fixture>) -> anyhow::Result<()> {
    let port = fixture.options.port;
    let faults = super::HttpFaults::of(&fixture.options);
    let handler = Arc::new(Legacy {
        fixture,
        sessions: Arc::new(Mutex::new(HashMap::new())),
        next_session: AtomicU64::new(1),
    });
    let tcp = super::bind(port, SSE_PATH).await?;
    super::serve(tcp, faults, handler).await
}

type Sessions = Arc<Mutex<HashMap<String, Arc<LegacySession>>>>;

struct Legacy {
    fixture: Arc<Fixture>,
    sessions: Sessions,
    next_session: AtomicU64,
}

/// One GET /sse: a connection of the stream server, fed by the session's
/// POSTs, its output the stream's events.
struct LegacySession {
    /// The core's input: each POSTed message, as one line.
    input: tokio::sync::Mutex<DuplexStream>,
    /// What the client sent, for the raw path's faults.
    watch: Mutex<RawInput>,
    /// The stream's sender: closed once the client went away.
    events: mpsc::UnboundedSender<Bytes>,
}

impl Handler for Legacy {
    fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> {
        Box::pin(async move {
            if !origin_allowed(request.headers()) {
                return full(StatusCode::FORBIDDEN, None, "forbidden origin");
            }
            let path = request.uri().path();
            let known_path = matches!(path, SSE_PATH | MESSAGE_PATH);
            let (get_sse, post_message) = (
                request.method() == Method::GET && path == SSE_PATH,
                request.method() == Method::POST && path == MESSAGE_PATH,
            );
            if get_sse {
                self.open(&request)
            } else if post_message {
                self.post(request).await
            } else if known_path {
                full(StatusCode::METHOD_NOT_ALLOWED, None, "")
            } else {
                full(StatusCode::NOT_FOUND, None, "not found")
            }
        })
    }
}

impl Legacy {
    fn open(&self, request: &Request<Incoming>) -> Response<Body> {
        if !accepts(request.headers(), "text/event-stream") {
            return full(
                StatusCode::NOT_ACCEPTABLE,
                None,
                "Accept must list text/event-stream",
            );
        }
        let id = format!(
            "legacy-{}",
            self.next_session.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let url = format!("{MESSAGE_PATH}?sessionId={id}");
        if self.fixture.options.no_endpoint {
            // --no-endpoint: the stream stays open and says nothing.
            let _ = tx.send(Bytes::from_static(b": no endpoint here\n\n"));
        } else {
            let _ = tx.send(sse_event(None, Some("endpoint"), None, url));
        }
        let core = StreamServer::new(StreamOptions::new(self.fixture.session_options()));
        let server = Server::under_core(Arc::clone(&self.fixture), Some(core.peer()), true);
        let handler = Arc::new(CoreHandler {
            session: Arc::clone(&server),
            stateless: server,
        });
        let outstanding = self
            .fixture
            .options
            .event_log
            .is_some()
            .then(Outstanding::default);
        let (input, core_input) = tokio::io::duplex(PIPE);
        let (core_output, from_core) = tokio::io::duplex(PIPE);
        tokio::spawn(async move {
            // Ends when the session is dropped (its input with it).
            let _ = core.serve(handler, core_input, core_output).await;
        });
        let session = Arc::new(LegacySession {
            input: tokio::sync::Mutex::new(input),
            watch: Mutex::new(RawInput::new(outstanding.clone())),
            events: tx.clone(),
        });
        lock(&self.sessions).insert(id.clone(), session);
        let fixture = Arc::clone(&self.fixture);
        let sessions = Arc::clone(&self.sessions);
        tokio::spawn(async move {
            let mut raw = RawOutput::new(false, outstanding);
            let mut lines = BufReader::new(from_core);
            let mut line = Vec::new();
            while lines
                .read_until(b'\n', &mut line)
                .await
                .is_ok_and(|n| n > 0)
            {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                let (message, after) = raw.line(&fixture.options, std::mem::take(&mut line)).await;
                // `event: message` spelled out, as 2024-11-05 servers do.
                let data = String::from_utf8_lossy(&message).into_owned();
                let mut event = sse_event(None, None, None, data).to_vec();
                event.splice(0..0, b"event: message\n".iter().copied());
                if tx.send(Bytes::from(event)).is_err() {
                    // The client left: the session ends, its calls cancelled.
                    lock(&sessions).remove(&id);
                    break;
                }
                if after == After::Exit {
                    // The stream never ends by itself, so there is no
                    // connection close to wait for: give the event a moment
                    // to leave, then exit.
                    tokio::spawn(async {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        std::process::exit(0);
                    });
                }
            }
        });
        sse(rx)
    }

    async fn post(&self, request: Request<Incoming>) -> Response<Body> {
        let id = request
            .uri()
            .query()
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|pair| pair.strip_prefix("sessionId="))
            .map(str::to_owned);
        let session = {
            let mut sessions = lock(&self.sessions);
            let Some(id) = id else {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    error_codes::INVALID_REQUEST,
                    "missing sessionId",
                );
            };
            match sessions.get(&id) {
                Some(session) if !session.events.is_closed() => Arc::clone(session),
                Some(_) => {
                    // The stream closed: the session is over.
                    sessions.remove(&id);
                    return rpc_error(StatusCode::NOT_FOUND, -32001, "session not found");
                }
                None => return rpc_error(StatusCode::NOT_FOUND, -32001, "session not found"),
            }
        };
        // Whatever the body holds, the answer comes on the stream: the
        // core answers bytes that are not a message there too.
        let body = match read_body(request).await {
            Ok(body) => body,
            Err(refusal) => return refusal.into_response(),
        };
        lock(&session.watch).message(&self.fixture.options, &body);
        // One line for the core: a line break outside a JSON string is
        // whitespace, and JSON holds none inside one.
        let mut line: Vec<u8> = body
            .iter()
            .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
            .collect();
        line.push(b'\n');
        let written = session.input.lock().await.write_all(&line).await;
        if written.is_err() {
            return rpc_error(StatusCode::NOT_FOUND, -32001, "session not found");
        }
        full(StatusCode::ACCEPTED, None, "Accepted")
    }
}

//! The deprecated HTTP+SSE transport (MCP 2024-11-05 "Transports" §HTTP with SSE).
//!
//! `GET /sse` opens a session: its first event is `endpoint`, whose data is
//! `/message?sessionId=ID`; every server message follows as `event: message`.
//! `POST /message?sessionId=ID` takes one client message and answers 202;
//! the reply comes on the stream. `POST /sse` is 405, as a client probing
//! for Streamable HTTP at the SSE URL expects before it falls back.
//! Closing the stream ends the session.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use mcp_proto::jsonrpc::error_codes;
use tokio::sync::mpsc;

use super::{
    Body, Handler, accepts, full, message_data, origin_allowed, read_body, rpc_error, sse,
    sse_event,
};
use crate::server::{Fixture, Server, lock};

const SSE_PATH: &str = "/sse";
const MESSAGE_PATH: &str = "/message";

/// Serves HTTP+SSE until the process ends.
pub(crate) async fn serve(fixture: Arc<Fixture>) -> anyhow::Result<()> {
    let port = fixture.options.port;
    let faults = super::HttpFaults::of(&fixture.options);
    let handler = Arc::new(Legacy {
        fixture,
        sessions: Mutex::new(HashMap::new()),
        next_session: AtomicU64::new(1),
    });
    super::serve(port, SSE_PATH, faults, handler).await
}

struct Legacy {
    fixture: Arc<Fixture>,
    sessions: Mutex<HashMap<String, LegacySession>>,
    next_session: AtomicU64,
}

struct LegacySession {
    server: Arc<Server>,
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
        let sink_tx = tx.clone();
        let server = Server::new(
            Arc::clone(&self.fixture),
            Box::new(move |out| {
                // `event: message` spelled out, as 2024-11-05 servers do.
                let mut event = sse_event(None, None, None, message_data(&out.frame)).to_vec();
                event.splice(0..0, b"event: message\n".iter().copied());
                let _ = sink_tx.send(Bytes::from(event));
                if out.last {
                    // The stream never ends by itself, so there is no
                    // connection close to wait for: give the event a moment
                    // to leave, then exit.
                    tokio::spawn(async {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        std::process::exit(0);
                    });
                }
            }),
        );
        lock(&self.sessions).insert(id, LegacySession { server, events: tx });
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
        let server = {
            let mut sessions = lock(&self.sessions);
            let Some(id) = id else {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    error_codes::INVALID_REQUEST,
                    "missing sessionId",
                );
            };
            match sessions.get(&id) {
                Some(session) if !session.events.is_closed() => Arc::clone(&session.server),
                Some(_) => {
                    // The stream closed: the session is over.
                    if let Some(session) = sessions.remove(&id) {
                        session.server.abort_all();
                    }
                    return rpc_error(StatusCode::NOT_FOUND, -32001, "session not found");
                }
                None => return rpc_error(StatusCode::NOT_FOUND, -32001, "session not found"),
            }
        };
        // Whatever the body holds, the answer comes on the stream: the
        // session answers bytes that are not a message there too.
        match read_body(request).await {
            Ok(body) => {
                server.receive_bytes(&body);
                full(StatusCode::ACCEPTED, None, "Accepted")
            }
            Err(refusal) => refusal.into_response(),
        }
    }
}

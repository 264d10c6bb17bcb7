//! Streamable HTTP (MCP "Transports" §Streamable HTTP, 2025-03-26 .. 2025-11-25)
//! on one endpoint, `/mcp`.
//!
//! - POST carries one client message. A request is answered with JSON, or
//!   with an SSE stream (`--sse-responses`) that opens with a priming event
//!   (an `id`, `retry` and empty `data`) and carries the messages related to
//!   the request, then its response. Notifications and responses get 202.
//! - `Mcp-Session-Id` is issued on the initialize response and required on
//!   every later request: 400 without it, 404 for one that is unknown,
//!   deleted or expired (`--expire-session-after`). A POST without it goes
//!   to a new session, kept only if its `ServerSession` answered
//!   `initialize`; the session answers the protocol itself.
//! - A POST holds one message: a batch is 400.
//! - `MCP-Protocol-Version`, when present, must name a handshake version,
//!   and after initialize the negotiated one: 400 otherwise.
//! - GET opens the stream of messages unrelated to any request (405 with
//!   `--no-get-stream`, 409 while one is open). With `Last-Event-ID` it
//!   resumes the stream that id belongs to, POST streams included, replaying
//!   the events after it.
//! - DELETE ends the session.
//!
//! Event ids are `STREAM-SEQ`: per stream, and unique across the session.
//!
//! 2026-07-28 POSTs (`--era`) go to [`super::modern`]. In `--era modern`
//! GET and DELETE are 405; in `--era legacy` a POST that names
//! `MCP-Protocol-Version: 2026-07-28` without a session is a bare 400 with
//! an empty body, as legacy servers and gateways answer it.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::{Frame, Message, ProtocolVersion, RequestId, methods};
use tokio::sync::{mpsc, oneshot};

use super::modern::ModernHttp;
use super::{
    Body, Handler, Refusal, accepts, exit_after, full, message_data, origin_allowed, read_frame,
    rpc_error, sse, sse_event,
};
use crate::catalog;
use crate::options::Era;
use crate::server::{Fixture, MODERN, Outbound, Route, Server, lock};

/// The MCP endpoint's path.
const ENDPOINT: &str = "/mcp";
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";

/// Serves Streamable HTTP until the process ends.
pub(crate) async fn serve(fixture: Arc<Fixture>) -> anyhow::Result<()> {
    let port = fixture.options.port;
    let faults = super::HttpFaults::of(&fixture.options);
    let handler = Arc::new(Streamable {
        modern: ModernHttp::new(Arc::clone(&fixture)),
        fixture,
        sessions: Mutex::new(HashMap::new()),
        ids: RandomState::new(),
        next_session: AtomicU64::new(1),
        sessions_kept: AtomicU64::new(0),
    });
    super::serve(port, ENDPOINT, faults, handler).await
}

struct Streamable {
    fixture: Arc<Fixture>,
    /// The 2026-07-28 POSTs.
    modern: ModernHttp,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Keys the session id hash: ids are unguessable across runs.
    ids: RandomState,
    next_session: AtomicU64,
    /// Sessions kept so far, for `--expire-sessions`.
    sessions_kept: AtomicU64,
}

struct Session {
    server: Arc<Server>,
    streams: Arc<Mutex<Streams>>,
    /// JSON-RPC requests received, for `--expire-session-after`.
    requests: AtomicU64,
    /// Whether `--expire-session-after` applies (`--expire-sessions`).
    expires: AtomicBool,
}

/// The session's SSE streams and where each outbound message goes.
struct Streams {
    next_stream: u64,
    table: HashMap<u64, Stream>,
    /// POST streams waiting for their request's response.
    by_request: HashMap<RequestId, u64>,
    /// JSON-mode POSTs waiting for their response.
    json_waiters: HashMap<RequestId, oneshot::Sender<Outbound>>,
    /// The standalone (GET) stream, once one was opened.
    get_stream: Option<u64>,
    /// Standalone messages sent while no GET stream was connected.
    pending: Vec<Frame>,
}

struct Stream {
    next_seq: u64,
    /// Every event after the priming one, for replay on resumption.
    events: Vec<(u64, Bytes)>,
    /// The connected client, if any.
    live: Option<mpsc::UnboundedSender<Bytes>>,
    /// The response was sent: the stream ends after it.
    done: bool,
    /// Every event reached a connected client; a finished stream that is
    /// still lossless is forgotten, since nobody will resume it.
    lossless: bool,
    /// `--cut-sse-mid-event`: the live copy of the response is cut in half.
    cut_response: bool,
}

impl Handler for Streamable {
    fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> {
        Box::pin(async move {
            if request.uri().path() != ENDPOINT {
                return full(StatusCode::NOT_FOUND, None, "not found");
            }
            if !origin_allowed(request.headers()) {
                return full(StatusCode::FORBIDDEN, None, "forbidden origin");
            }
            if self.fixture.options.era == Era::Modern && request.method() != Method::POST {
                let mut response = full(StatusCode::METHOD_NOT_ALLOWED, None, "");
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("POST"));
                return response;
            }
            match *request.method() {
                Method::POST => self.post(request).await,
                Method::GET => self.get(request.headers()),
                Method::DELETE => self.delete(request.headers()),
                _ => {
                    let mut response = full(StatusCode::METHOD_NOT_ALLOWED, None, "");
                    response
                        .headers_mut()
                        .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                    response
                }
            }
        })
    }
}

impl Streamable {
    async fn post(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let headers = request.headers();
        // §Sending Messages: the client MUST accept both.
        if !(accepts(headers, "application/json") && accepts(headers, "text/event-stream")) {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                error_codes::INVALID_REQUEST,
                "Accept must list application/json and text/event-stream",
            );
        }
        let session_id = header_str(headers, SESSION_HEADER).map(str::to_owned);
        let version = header_str(headers, VERSION_HEADER).map(str::to_owned);
        if self.fixture.options.era == Era::Legacy
            && session_id.is_none()
            && version.as_deref() == Some(MODERN)
        {
            return full(StatusCode::BAD_REQUEST, None, "");
        }
        let headers = headers.clone();
        let message = match read_frame(request).await {
            Ok(Frame::Single(message)) => message,
            // The transport carries one message per POST.
            Ok(Frame::Batch(_)) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    error_codes::INVALID_REQUEST,
                    "JSON-RPC batches are not supported",
                );
            }
            Err(refusal) => return refusal,
        };
        if let Some(kib) = self.fixture.options.http_500_html_kib
            && message.method() == Some(methods::TOOLS_CALL)
        {
            return full(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some("text/html; charset=utf-8"),
                catalog::traceback_page(kib),
            );
        }
        if self.modern.claims(&headers, &message) {
            return self.modern.post(&headers, message).await;
        }
        if let Err(refusal) = check_version_header(&headers, None) {
            return refusal.into_response();
        }
        // A POST without a session goes to a new one, which is kept only
        // if the request initialized it (§Session Management: the id is
        // issued on the initialize response).
        let (session_id, session, fresh) = match session_id {
            None => {
                let (id, session) = self.new_session();
                (id, session, true)
            }
            Some(id) => {
                let session = match self.session(Some(&id)) {
                    Ok(session) => session,
                    Err(refusal) => return refusal.into_response(),
                };
                if let Err(refusal) = check_version_header_value(version.as_deref(), Some(&session))
                {
                    return refusal.into_response();
                }
                (id, session, false)
            }
        };
        let Message::Request(rpc_request) = message else {
            if fresh {
                return missing_session().into_response();
            }
            session.server.receive_frame(Frame::Single(message));
            return full(StatusCode::ACCEPTED, None, "");
        };
        let mut response = if self.fixture.options.sse_responses {
            match self.answer_with_stream(&session_id, &session, rpc_request, fresh) {
                Some(response) => response,
                None => return missing_session().into_response(),
            }
        } else {
            let (tx, rx) = oneshot::channel();
            lock(&session.streams)
                .json_waiters
                .insert(rpc_request.id.clone(), tx);
            session.server.receive_request(rpc_request);
            if !self.keep(&session_id, &session, fresh) {
                return missing_session().into_response();
            }
            json_response(rx.await)
        };
        if fresh && let Ok(value) = HeaderValue::from_str(&session_id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
        response
    }

    /// After a request: registers a new session that the request
    /// initialized (false if it did not: the session is dropped), and
    /// counts the request for `--expire-session-after`.
    fn keep(&self, session_id: &str, session: &Arc<Session>, fresh: bool) -> bool {
        if fresh {
            if !session.server.initialized() {
                return false;
            }
            // Counted among `--expire-sessions` only once it is kept.
            let n = self.sessions_kept.fetch_add(1, Ordering::Relaxed) + 1;
            let expires = self
                .fixture
                .options
                .expire_sessions
                .is_none_or(|first| n <= first);
            session.expires.store(expires, Ordering::Relaxed);
            lock(&self.sessions).insert(session_id.to_owned(), Arc::clone(session));
        }
        let seen = session.requests.fetch_add(1, Ordering::Relaxed) + 1;
        if session.expires.load(Ordering::Relaxed)
            && self.fixture.options.expire_session_after == Some(seen)
        {
            // This request is still answered; the session is unknown after it.
            self.end_session(session_id, false);
        }
        true
    }

    /// Answers a request on a new SSE stream; `None` when the request was
    /// the first of a new session and did not initialize it.
    fn answer_with_stream(
        &self,
        session_id: &str,
        session: &Arc<Session>,
        request: mcp_proto::jsonrpc::Request,
        fresh: bool,
    ) -> Option<Response<Body>> {
        let options = &self.fixture.options;
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut streams = lock(&session.streams);
            // The initializing POST is exempt from the resumption faults.
            let stream_id = streams.open(options.cut_sse_mid_event && !fresh);
            let _ = tx.send(priming(stream_id, options.retry.as_millis() as u64));
            if let Some(stream) = streams.table.get_mut(&stream_id) {
                if options.close_sse_before_response && !fresh {
                    // The client must come back with GET and Last-Event-ID.
                    stream.lossless = false;
                } else {
                    stream.live = Some(tx);
                }
            }
            streams.by_request.insert(request.id.clone(), stream_id);
        }
        session.server.receive_request(request);
        self.keep(session_id, session, fresh).then(|| sse(rx))
    }

    fn get(&self, headers: &HeaderMap) -> Response<Body> {
        if !accepts(headers, "text/event-stream") {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                error_codes::INVALID_REQUEST,
                "Accept must list text/event-stream",
            );
        }
        let session = match self.session(header_str(headers, SESSION_HEADER)) {
            Ok(session) => session,
            Err(refusal) => return refusal.into_response(),
        };
        if let Err(refusal) = check_version_header(headers, Some(&session)) {
            return refusal.into_response();
        }
        let retry_ms = self.fixture.options.retry.as_millis() as u64;
        let (tx, rx) = mpsc::unbounded_channel();
        let mut streams = lock(&session.streams);
        if let Some((stream_id, seq)) = header_str(headers, LAST_EVENT_ID).and_then(parse_event_id)
            && streams.resume(stream_id, seq, tx.clone())
        {
            return sse(rx);
        }
        if self.fixture.options.no_get_stream {
            return full(
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                "this server offers no GET stream",
            );
        }
        if streams.get_stream_is_live() {
            return rpc_error(
                StatusCode::CONFLICT,
                error_codes::INVALID_REQUEST,
                "only one GET stream is allowed per session",
            );
        }
        let stream_id = streams.open(false);
        let _ = tx.send(priming(stream_id, retry_ms));
        if let Some(stream) = streams.table.get_mut(&stream_id) {
            stream.live = Some(tx);
        }
        streams.get_stream = Some(stream_id);
        streams.flush_pending();
        sse(rx)
    }

    fn delete(&self, headers: &HeaderMap) -> Response<Body> {
        let session_id = header_str(headers, SESSION_HEADER);
        if let Err(refusal) = self.session(session_id) {
            return refusal.into_response();
        }
        self.end_session(session_id.unwrap_or_default(), true);
        full(StatusCode::OK, None, "")
    }

    /// A new session under a fresh id, not registered yet (see
    /// [`Streamable::keep`]).
    fn new_session(&self) -> (String, Arc<Session>) {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        let id = format!(
            "{:016x}{:016x}",
            self.ids.hash_one(n),
            self.ids
                .hash_one(std::process::id() as u64 ^ n.rotate_left(32))
        );
        let streams = Arc::new(Mutex::new(Streams::new()));
        let sink_streams = Arc::clone(&streams);
        let server = Server::new(
            Arc::clone(&self.fixture),
            Box::new(move |out| lock(&sink_streams).deliver(out)),
        );
        let session = Arc::new(Session {
            server,
            streams,
            requests: AtomicU64::new(0),
            expires: AtomicBool::new(false),
        });
        (id, session)
    }

    /// The session a request names: 400 without an id, 404 for an unknown one
    /// (§Session Management).
    fn session(&self, id: Option<&str>) -> Result<Arc<Session>, Refusal> {
        let Some(id) = id else {
            return Err(missing_session());
        };
        lock(&self.sessions)
            .get(id)
            .cloned()
            .ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, -32001, "session not found"))
    }

    /// Forgets a session: later requests naming it get 404. Its GET stream
    /// ends; with `abort`, so do its requests in flight.
    fn end_session(&self, id: &str, abort: bool) {
        let Some(session) = lock(&self.sessions).remove(id) else {
            return;
        };
        if abort {
            session.server.abort_all();
            let mut streams = lock(&session.streams);
            for stream in streams.table.values_mut() {
                stream.live = None;
            }
            streams.json_waiters.clear();
        } else {
            let mut streams = lock(&session.streams);
            if let Some(get) = streams.get_stream
                && let Some(stream) = streams.table.get_mut(&get)
            {
                stream.live = None;
            }
        }
    }
}

impl Streams {
    fn new() -> Streams {
        Streams {
            next_stream: 1,
            table: HashMap::new(),
            by_request: HashMap::new(),
            json_waiters: HashMap::new(),
            get_stream: None,
            pending: Vec::new(),
        }
    }

    /// Opens a stream whose priming event has seq 0.
    fn open(&mut self, cut_response: bool) -> u64 {
        let id = self.next_stream;
        self.next_stream += 1;
        self.table.insert(
            id,
            Stream {
                next_seq: 1,
                events: Vec::new(),
                live: None,
                done: false,
                lossless: true,
                cut_response,
            },
        );
        id
    }

    /// Routes one outbound message (§Sending Messages to the Server, §Listening
    /// for Messages from the Server): a response goes to the POST that asked,
    /// a message related to a request on an SSE stream goes on that stream,
    /// everything else on the GET stream, or waits for one.
    fn deliver(&mut self, out: Outbound) {
        let is_response = out.is_answer();
        let to_json =
            matches!(&out.route, Route::Related(id) if self.json_waiters.contains_key(id));
        if out.last && !to_json {
            // `--exit-after` on an SSE stream, which never closes its
            // connection by itself: give the event a moment to leave.
            tokio::spawn(async {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                std::process::exit(0);
            });
        }
        if let Route::Related(id) = &out.route {
            if is_response {
                if let Some(waiter) = self.json_waiters.remove(id) {
                    let _ = waiter.send(out);
                    return;
                }
                if let Some(stream_id) = self.by_request.remove(id) {
                    self.push(stream_id, &out.frame, true);
                    return;
                }
                eprintln!("fixture: dropping the response to {id}: its POST is gone");
                return;
            }
            if let Some(&stream_id) = self.by_request.get(id) {
                self.push(stream_id, &out.frame, false);
                return;
            }
        } else if is_response {
            eprintln!("fixture: dropping a response with no request to answer");
            return;
        }
        match self.get_stream {
            Some(stream_id) if self.get_stream_is_live() => self.push(stream_id, &out.frame, false),
            _ => self.pending.push(out.frame),
        }
    }

    fn get_stream_is_live(&self) -> bool {
        self.get_stream
            .and_then(|id| self.table.get(&id))
            .and_then(|stream| stream.live.as_ref())
            .is_some_and(|live| !live.is_closed())
    }

    fn flush_pending(&mut self) {
        if let Some(stream_id) = self.get_stream {
            for message in std::mem::take(&mut self.pending) {
                self.push(stream_id, &message, false);
            }
        }
    }

    /// Appends an event to a stream and sends it to the connected client.
    fn push(&mut self, stream_id: u64, frame: &Frame, is_response: bool) {
        let Some(stream) = self.table.get_mut(&stream_id) else {
            return;
        };
        let seq = stream.next_seq;
        stream.next_seq += 1;
        let event = sse_event(
            Some(format!("{stream_id}-{seq}")),
            None,
            None,
            message_data(frame),
        );
        stream.events.push((seq, event.clone()));
        match stream.live.take() {
            Some(live) if is_response && stream.cut_response => {
                // Half an event and no blank line: the client must drop it
                // and resume from the priming event's id.
                let _ = live.send(event.slice(..event.len() / 2));
                stream.cut_response = false;
                stream.lossless = false;
            }
            Some(live) => {
                if live.send(event).is_ok() {
                    stream.live = Some(live);
                } else {
                    stream.lossless = false;
                }
            }
            None => stream.lossless = false,
        }
        if is_response {
            stream.done = true;
            stream.live = None;
            if stream.lossless {
                self.table.remove(&stream_id);
            }
        }
    }

    /// Resumes stream `stream_id` after event `seq` (§Resumability and
    /// Redelivery): replays the later events to `live`, then keeps it
    /// connected unless the stream is finished. False if no such stream.
    fn resume(&mut self, stream_id: u64, seq: u64, live: mpsc::UnboundedSender<Bytes>) -> bool {
        let Some(stream) = self.table.get_mut(&stream_id) else {
            return false;
        };
        for (_, event) in stream.events.iter().filter(|(s, _)| *s > seq) {
            let _ = live.send(event.clone());
        }
        if !stream.done {
            stream.live = Some(live);
        }
        if self.get_stream == Some(stream_id) {
            self.flush_pending();
        }
        true
    }
}

/// A request without `Mcp-Session-Id` that does not start a session: 400.
fn missing_session() -> Refusal {
    Refusal::new(
        StatusCode::BAD_REQUEST,
        error_codes::INVALID_REQUEST,
        "missing Mcp-Session-Id",
    )
}

fn priming(stream_id: u64, retry_ms: u64) -> Bytes {
    sse_event(
        Some(format!("{stream_id}-0")),
        None,
        Some(retry_ms),
        String::new(),
    )
}

fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

fn json_response(answer: Result<Outbound, oneshot::error::RecvError>) -> Response<Body> {
    match answer {
        Ok(out) => {
            let mut response = full(
                StatusCode::OK,
                Some("application/json"),
                message_data(&out.frame),
            );
            if out.last {
                // `--exit-after`: the last response closes its connection.
                exit_after(&mut response);
            }
            response
        }
        Err(_) => rpc_error(
            StatusCode::NOT_FOUND,
            -32001,
            "the session ended before the request was answered",
        ),
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// §Protocol Version Header: a value that is not a handshake version, or
/// (after initialize) not the negotiated one, is 400. No header is fine: the
/// server then assumes 2025-03-26.
fn check_version_header(headers: &HeaderMap, session: Option<&Session>) -> Result<(), Refusal> {
    check_version_header_value(header_str(headers, VERSION_HEADER), session)
}

fn check_version_header_value(
    value: Option<&str>,
    session: Option<&Session>,
) -> Result<(), Refusal> {
    let Some(value) = value else { return Ok(()) };
    let supported =
        ProtocolVersion::parse(value).is_some_and(|v| ProtocolVersion::HANDSHAKE.contains(&v));
    let negotiated = session.and_then(|s| s.server.negotiated_version());
    let matches = negotiated.is_none_or(|n| n.as_str() == value);
    if supported && matches {
        Ok(())
    } else {
        Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            error_codes::INVALID_REQUEST,
            format!(
                "unsupported MCP-Protocol-Version {value:?} (negotiated: {})",
                negotiated.map_or("none yet", |n| n.as_str())
            ),
        ))
    }
}

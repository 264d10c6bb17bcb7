//! A `ClientSession` and a `ServerSession` talking in memory on a virtual clock, driven by random interleavings: both sides agree on every request's fate, and every request ends exactly once on each side.
//!
//! Needs the `proptest` feature for the shared strategies; CI runs
//! `cargo test --workspace --all-features`.
#![cfg(feature = "proptest")]

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use mcp_proto::codec::ndjson;
use mcp_proto::jsonrpc::{ErrorObject, Frame, Message, RequestId};
use mcp_proto::server::{self, Cancellation, ServerError, ServerOptions, ServerSession};
use mcp_proto::session::{self, ClientSession, RequestOptions, SessionOptions, SessionState};
use mcp_proto::strategies::arb_message;
use mcp_proto::types::{
    ClientCapabilities, ListChangedCapability, RootsCapability, ServerCapabilities,
};
use mcp_proto::version::VersionPolicy;
use mcp_proto::{EraPolicy, ProtocolVersion, methods};
use proptest::prelude::*;
use serde_json::{Value, json};

/// How a request ended, as one side saw it.
#[derive(Clone, Debug, PartialEq)]
enum Fate {
    /// A result, as JSON.
    Answered(Value),
    /// A JSON-RPC error: its code and message.
    Errored(i64, String),
    /// The side that sent it gave up (cancel) or, on the receiving side,
    /// the sender withdrew it.
    Cancelled,
    TimedOut,
    Closed,
}

/// One step of the script.
#[derive(Clone, Debug)]
enum Op {
    ClientRequest {
        timeout_ms: Option<u16>,
        progress: bool,
    },
    ClientCancel(usize),
    ClientAnswer {
        pick: usize,
        ok: bool,
    },
    ClientNotify,
    ServerAnswer {
        pick: usize,
        ok: bool,
    },
    ServerProgress(usize),
    ServerRequest {
        timeout_ms: Option<u16>,
    },
    ServerCancel(usize),
    ServerNotify,
    ToServer(usize),
    ToClient(usize),
    Advance(u16),
    ClientCloses,
    ServerCloses,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::option::of(1..3_000u16), any::<bool>())
            .prop_map(|(timeout_ms, progress)| Op::ClientRequest { timeout_ms, progress }),
        1 => any::<usize>().prop_map(Op::ClientCancel),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(pick, ok)| Op::ClientAnswer { pick, ok }),
        1 => Just(Op::ClientNotify),
        3 => (any::<usize>(), any::<bool>()).prop_map(|(pick, ok)| Op::ServerAnswer { pick, ok }),
        2 => any::<usize>().prop_map(Op::ServerProgress),
        2 => proptest::option::of(1..3_000u16).prop_map(|timeout_ms| Op::ServerRequest { timeout_ms }),
        1 => any::<usize>().prop_map(Op::ServerCancel),
        1 => Just(Op::ServerNotify),
        4 => (1..4usize).prop_map(Op::ToServer),
        4 => (1..4usize).prop_map(Op::ToClient),
        2 => (1..2_000u16).prop_map(Op::Advance),
    ]
}

/// Both sessions, the wire between them (bytes, oldest first), the clock,
/// and what each side's application saw.
struct Pair {
    client: ClientSession,
    server: ServerSession,
    now: Instant,
    to_server: VecDeque<Vec<u8>>,
    to_client: VecDeque<Vec<u8>>,
    closed: bool,
    modern: bool,
    /// Client requests: their fates on the client, and on the server (for
    /// those that reached the server's application).
    client_requests: Vec<session::RequestHandle>,
    client_side: HashMap<RequestId, Vec<Fate>>,
    server_side: HashMap<RequestId, Vec<Fate>>,
    /// Requests waiting for the server's application, oldest first, and
    /// whether each asked for progress.
    server_todo: Vec<(RequestId, bool)>,
    progress_sent: HashMap<RequestId, usize>,
    progress_seen: HashMap<RequestId, usize>,
    /// Server requests: their fates on the server, and on the client (its
    /// answer, or a withdrawal).
    server_requests: Vec<server::RequestHandle>,
    server_outcomes: HashMap<RequestId, Vec<Fate>>,
    client_outcomes: HashMap<RequestId, Vec<Fate>>,
    client_todo: Vec<RequestId>,
    notifications_sent: (usize, usize),
    notifications_seen: (usize, usize),
    /// Client requests the server session refused itself (the in-flight
    /// cap), seen on the wire.
    refused: HashSet<RequestId>,
    /// The ids each side named in a `notifications/cancelled` it sent.
    client_cancels: HashSet<RequestId>,
    server_cancels: HashSet<RequestId>,
}

impl Pair {
    /// A pair whose handshake (or discovery) has finished.
    fn new(modern: bool, offered: ProtocolVersion) -> Pair {
        let client_options = SessionOptions::default()
            .era(if modern {
                EraPolicy::Modern
            } else {
                EraPolicy::Legacy
            })
            .versions(VersionPolicy::default().offered(offered))
            .capabilities(ClientCapabilities {
                roots: Some(RootsCapability::default()),
                ..ClientCapabilities::default()
            });
        let server_options = ServerOptions::default()
            .capabilities(ServerCapabilities {
                tools: Some(ListChangedCapability::default()),
                ..ServerCapabilities::default()
            })
            .max_in_flight(4);
        let now = Instant::now();
        let mut pair = Pair {
            client: ClientSession::new(client_options),
            server: ServerSession::new(server_options),
            now,
            to_server: VecDeque::new(),
            to_client: VecDeque::new(),
            closed: false,
            modern,
            client_requests: Vec::new(),
            client_side: HashMap::new(),
            server_side: HashMap::new(),
            server_todo: Vec::new(),
            progress_sent: HashMap::new(),
            progress_seen: HashMap::new(),
            server_requests: Vec::new(),
            server_outcomes: HashMap::new(),
            client_outcomes: HashMap::new(),
            client_todo: Vec::new(),
            notifications_sent: (0, 0),
            notifications_seen: (0, 0),
            refused: HashSet::new(),
            client_cancels: HashSet::new(),
            server_cancels: HashSet::new(),
        };
        pair.client.start(now).unwrap();
        pair.deliver_all();
        assert_eq!(pair.client.state(), SessionState::Ready);
        let expected = if modern {
            ProtocolVersion::V2026_07_28
        } else {
            offered
        };
        assert_eq!(pair.client.negotiated().unwrap().version, expected);
        pair
    }

    /// Moves what each session queued onto the wire, and what each raised
    /// into the record.
    fn pump(&mut self) {
        while let Some(message) = self.client.poll_transmit() {
            if let Some(id) = cancelled_id(&message) {
                self.client_cancels.insert(id);
            }
            self.to_server.push_back(message.to_bytes());
        }
        while let Some(frame) = self.server.poll_transmit() {
            if let Frame::Single(Message::Error(error)) = &frame
                && error.error.code == -32603
                && let Some(id) = &error.id
            {
                self.refused.insert(id.clone());
            }
            if let Frame::Single(message) = &frame
                && let Some(id) = cancelled_id(message)
            {
                self.server_cancels.insert(id);
            }
            let mut line = Vec::new();
            ndjson::encode_frame(&frame, &mut line)
                .expect("a frame of the sessions has a one-line form");
            assert_eq!(line.pop(), Some(b'\n'), "a frame the codec cannot write");
            self.to_client.push_back(line);
        }
        while let Some(event) = self.client.poll_event() {
            match event {
                session::Event::Completed { handle, outcome } => {
                    let fate = match outcome {
                        Ok(raw) => Fate::Answered(raw.decode().unwrap()),
                        Err(session::RequestError::Rpc(e)) => Fate::Errored(e.code, e.message),
                        Err(session::RequestError::Timeout(_)) => Fate::TimedOut,
                        Err(session::RequestError::Cancelled) => Fate::Cancelled,
                        Err(session::RequestError::Closed) => Fate::Closed,
                        Err(other) => panic!("unexpected client outcome {other:?}"),
                    };
                    self.client_side.entry(handle.id()).or_default().push(fate);
                }
                session::Event::Progress { handle, .. } => {
                    *self.progress_seen.entry(handle.id()).or_default() += 1;
                }
                session::Event::Request(request) => {
                    assert_eq!(request.method, methods::ROOTS_LIST);
                    self.client_todo.push(request.id);
                }
                session::Event::RequestCancelled { id, .. } => {
                    // A withdrawn request is not answered any more.
                    assert!(!self.client.respond_ok(&id, &json!({})).unwrap());
                    self.client_todo.retain(|todo| *todo != id);
                    self.client_outcomes
                        .entry(id)
                        .or_default()
                        .push(Fate::Cancelled);
                }
                session::Event::Notification(n) => {
                    assert_eq!(n.method, methods::NOTIFICATION_MESSAGE);
                    self.notifications_seen.1 += 1;
                }
                session::Event::Initialized(_) | session::Event::Closed(_) => {}
                other => panic!("unexpected client event {other:?}"),
            }
        }
        while let Some(event) = self.server.poll_event() {
            match event {
                server::Event::Request(request) => {
                    assert_eq!(request.method, methods::TOOLS_CALL);
                    assert_eq!(request.client.is_some(), self.modern);
                    let progress = request.progress_token.is_some();
                    self.server_todo.push((request.id, progress));
                }
                server::Event::Cancelled { id, reason } => {
                    assert_eq!(reason == Cancellation::Closed, self.closed, "{reason:?}");
                    // A second end of the request is refused, and nothing is sent.
                    assert!(matches!(
                        self.server.respond_error(&id, ErrorObject::new(1, "late")),
                        Err(ServerError::UnknownRequest { .. })
                    ));
                    self.server_todo.retain(|(todo, _)| *todo != id);
                    let fate = if self.closed {
                        Fate::Closed
                    } else {
                        Fate::Cancelled
                    };
                    self.server_side.entry(id).or_default().push(fate);
                }
                server::Event::Completed { handle, outcome } => {
                    let fate = match outcome {
                        Ok(raw) => Fate::Answered(raw.decode().unwrap()),
                        Err(server::RequestError::Rpc(e)) => Fate::Errored(e.code, e.message),
                        Err(server::RequestError::Timeout) => Fate::TimedOut,
                        Err(server::RequestError::Cancelled) => Fate::Cancelled,
                        Err(server::RequestError::Closed) => Fate::Closed,
                        Err(other) => panic!("unexpected server outcome {other:?}"),
                    };
                    self.server_outcomes
                        .entry(handle.id())
                        .or_default()
                        .push(fate);
                }
                server::Event::Notification(n) => {
                    assert_eq!(n.method, "notifications/test");
                    self.notifications_seen.0 += 1;
                }
                server::Event::Initialized(_) | server::Event::Ready | server::Event::Closed(_) => {
                }
                other => panic!("unexpected server event {other:?}"),
            }
        }
    }

    fn deliver_to_server(&mut self, n: usize) {
        for _ in 0..n {
            let Some(bytes) = self.to_server.pop_front() else {
                break;
            };
            self.server.handle_bytes(self.now, &bytes);
            self.pump();
        }
    }

    fn deliver_to_client(&mut self, n: usize) {
        for _ in 0..n {
            let Some(bytes) = self.to_client.pop_front() else {
                break;
            };
            let frame = Frame::from_slice(&bytes).expect("the server wrote a valid frame");
            self.client.handle_frame(self.now, frame);
            self.pump();
        }
    }

    fn deliver_all(&mut self) {
        self.pump();
        while !(self.to_server.is_empty() && self.to_client.is_empty()) {
            self.deliver_to_server(usize::MAX);
            self.deliver_to_client(usize::MAX);
        }
    }

    fn run(&mut self, op: Op) {
        match op {
            Op::ClientRequest {
                timeout_ms,
                progress,
            } => {
                let options = RequestOptions::default()
                    .timeout(timeout_ms.map(|ms| Duration::from_millis(ms.into())))
                    .progress(progress);
                let params = json!({"name": "t"});
                match self
                    .client
                    .request(self.now, methods::TOOLS_CALL, Some(&params), options)
                {
                    Ok(handle) => self.client_requests.push(handle),
                    Err(error) => assert!(self.closed, "{error}"),
                }
            }
            Op::ClientCancel(pick) => {
                if let Some(handle) = pick_from(&self.client_requests, pick) {
                    self.client.cancel(handle, Some("gave up"));
                }
            }
            Op::ClientAnswer { pick, ok } => {
                if let Some(id) = pick_from(&self.client_todo, pick) {
                    self.client_todo.retain(|todo| *todo != id);
                    let fate = if ok {
                        let result = json!({"roots": [], "_meta": {"for": id.to_string()}});
                        assert!(self.client.respond_ok(&id, &result).unwrap());
                        Fate::Answered(result)
                    } else {
                        let message = format!("no roots for {id}");
                        assert!(
                            self.client
                                .respond_err(&id, ErrorObject::new(-32001, message.clone()))
                        );
                        Fate::Errored(-32001, message)
                    };
                    self.client_outcomes.entry(id).or_default().push(fate);
                }
            }
            Op::ClientNotify => {
                if self
                    .client
                    .notify("notifications/test", None::<&()>)
                    .is_ok()
                {
                    self.notifications_sent.0 += 1;
                }
            }
            Op::ServerAnswer { pick, ok } => {
                let ids: Vec<RequestId> =
                    self.server_todo.iter().map(|(id, _)| id.clone()).collect();
                if let Some(id) = pick_from(&ids, pick) {
                    self.server_todo.retain(|(todo, _)| *todo != id);
                    let fate = if ok {
                        let result = json!({"content": [], "for": id.to_string()});
                        self.server.respond(&id, &result).unwrap();
                        Fate::Answered(result)
                    } else {
                        let message = format!("tool failed for {id}");
                        self.server
                            .respond_error(&id, ErrorObject::new(-32000, message.clone()))
                            .unwrap();
                        Fate::Errored(-32000, message)
                    };
                    self.server_side.entry(id.clone()).or_default().push(fate);
                    // A second answer is refused, and nothing more is sent.
                    assert!(matches!(
                        self.server.respond(&id, &json!({})),
                        Err(ServerError::UnknownRequest { .. })
                    ));
                }
            }
            Op::ServerProgress(pick) => {
                if let Some(&(ref id, asked)) = pick_from_ref(&self.server_todo, pick) {
                    let id = id.clone();
                    let sent = self.server.progress(&id, 1.0, None, None);
                    match (asked, sent) {
                        (true, Ok(())) => *self.progress_sent.entry(id).or_default() += 1,
                        (false, Err(ServerError::NoProgressToken { .. })) => {}
                        (asked, sent) => panic!("progress asked {asked}, sent {sent:?}"),
                    }
                }
            }
            Op::ServerRequest { timeout_ms } => {
                let deadline = timeout_ms.map(|ms| self.now + Duration::from_millis(ms.into()));
                match self
                    .server
                    .request::<()>(methods::ROOTS_LIST, None, deadline)
                {
                    Ok(handle) => {
                        assert!(!self.modern && !self.closed);
                        self.server_requests.push(handle);
                    }
                    Err(ServerError::NotInEra { .. }) => assert!(self.modern),
                    Err(ServerError::Closed) => assert!(self.closed),
                    Err(other) => panic!("{other}"),
                }
            }
            Op::ServerCancel(pick) => {
                if let Some(handle) = pick_from(&self.server_requests, pick) {
                    self.server.cancel(handle, None);
                }
            }
            Op::ServerNotify => {
                let params = json!({"level": "info", "data": "x"});
                if self
                    .server
                    .notify(methods::NOTIFICATION_MESSAGE, Some(&params))
                    .is_ok()
                {
                    self.notifications_sent.1 += 1;
                }
            }
            Op::ToServer(n) => self.deliver_to_server(n),
            Op::ToClient(n) => self.deliver_to_client(n),
            Op::Advance(ms) => {
                self.now += Duration::from_millis(ms.into());
                self.client.handle_timeout(self.now);
                self.server.handle_timeout(self.now);
            }
            Op::ClientCloses | Op::ServerCloses => {
                if self.closed {
                    return;
                }
                self.closed = true;
                // The transport is gone: what was on the wire is lost.
                self.to_server.clear();
                self.to_client.clear();
                // The client session forgets the server's requests it held
                // (it answers nothing more); the server's application hears
                // of its own through `Event::Cancelled`.
                self.client_todo.clear();
                if matches!(op, Op::ClientCloses) {
                    self.client.close();
                    self.server.handle_close();
                } else {
                    self.server.close();
                    self.client.handle_close();
                }
            }
        }
        self.pump();
    }

    /// Both applications answer everything left and the wire empties,
    /// until nothing moves.
    fn settle(&mut self) {
        loop {
            self.deliver_all();
            if self.server_todo.is_empty() && self.client_todo.is_empty() {
                break;
            }
            while !self.server_todo.is_empty() {
                self.run(Op::ServerAnswer { pick: 0, ok: true });
            }
            while !self.client_todo.is_empty() {
                self.run(Op::ClientAnswer { pick: 0, ok: true });
            }
        }
    }

    fn check(&self) {
        let closed = self.closed;
        // Client requests end exactly once on the client, and at most once
        // (exactly once when they reached it) on the server.
        for handle in &self.client_requests {
            let id = &handle.id();
            let client = self
                .client_side
                .get(id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            assert_eq!(client.len(), 1, "client fates of {id}: {client:?}");
            let server = self
                .server_side
                .get(id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            assert!(server.len() <= 1, "server fates of {id}: {server:?}");
            match (&client[0], server.first()) {
                (Fate::Answered(a), Some(Fate::Answered(b))) => assert_eq!(a, b),
                (Fate::Errored(c, m), Some(Fate::Errored(d, n))) => assert_eq!((c, m), (d, n)),
                // Refused by the server session itself (the in-flight cap):
                // the server's application never saw it.
                (Fate::Errored(code, _), None) => {
                    assert_eq!(*code, -32603, "{id}");
                    assert!(self.refused.contains(id), "{id}");
                }
                // The client gave up: the server saw the cancel, or had
                // answered already, or refused it, or (once closed) never
                // ended it.
                (Fate::Cancelled | Fate::TimedOut, Some(_)) => {}
                (Fate::Cancelled | Fate::TimedOut, None) => {
                    assert!(
                        closed || self.refused.contains(id),
                        "{id} was never ended on the server"
                    )
                }
                (Fate::Closed, _) => assert!(closed),
                (client, server) => panic!("{id}: client {client:?}, server {server:?}"),
            }
            if let Some(Fate::Cancelled) = server.first() {
                assert!(
                    matches!(client[0], Fate::Cancelled | Fate::TimedOut),
                    "{id}: {client:?}"
                );
            }
            if matches!(client[0], Fate::Cancelled | Fate::TimedOut) {
                assert!(self.client_cancels.contains(id), "{id} given up silently");
            }
            if let Some(Fate::Closed) = server.first() {
                assert!(closed);
            }
            let seen = self.progress_seen.get(id).copied().unwrap_or(0);
            let sent = self.progress_sent.get(id).copied().unwrap_or(0);
            assert!(seen <= sent, "{id}: {seen} progress seen, {sent} sent");
        }
        for id in self.server_side.keys() {
            assert!(
                self.client_requests.iter().any(|h| h.id() == *id),
                "the server ended {id}, never sent"
            );
        }
        // Server requests end exactly once on the server; on the client at
        // most once (exactly once, unless the connection closed).
        for handle in &self.server_requests {
            let id = handle.id();
            let server = self
                .server_outcomes
                .get(&id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            assert_eq!(server.len(), 1, "server fates of {id}: {server:?}");
            let client = self
                .client_outcomes
                .get(&id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            assert!(client.len() <= 1, "client fates of {id}: {client:?}");
            match (&server[0], client.first()) {
                (Fate::Answered(a), Some(Fate::Answered(b))) => assert_eq!(a, b),
                (Fate::Errored(c, m), Some(Fate::Errored(d, n))) => assert_eq!((c, m), (d, n)),
                (Fate::Cancelled | Fate::TimedOut, _) => {}
                (Fate::Closed, _) => assert!(closed),
                (server, client) => panic!("{id}: server {server:?}, client {client:?}"),
            }
            if let Some(Fate::Cancelled) = client.first() {
                assert!(
                    matches!(server[0], Fate::Cancelled | Fate::TimedOut),
                    "{id}: {server:?}"
                );
            }
            if matches!(server[0], Fate::Cancelled | Fate::TimedOut) {
                assert!(self.server_cancels.contains(&id), "{id} given up silently");
            }
            if !closed {
                assert_eq!(client.len(), 1, "{id} never ended on the client");
            }
        }
        if !closed {
            assert_eq!(self.notifications_seen, self.notifications_sent);
            assert_eq!(self.server.in_flight(), 0);
            assert_eq!(self.server.pending_requests(), 0);
            assert_eq!(self.client.pending_requests(), 0);
        }
    }
}

/// The request a `notifications/cancelled` names.
fn cancelled_id(message: &Message) -> Option<RequestId> {
    match message {
        Message::Notification(n) if n.method == methods::NOTIFICATION_CANCELLED => {
            let params: Value = n.params.as_ref()?.decode().ok()?;
            serde_json::from_value(params.get("requestId")?.clone()).ok()
        }
        _ => None,
    }
}

fn pick_from<T: Clone>(items: &[T], pick: usize) -> Option<T> {
    pick_from_ref(items, pick).cloned()
}

fn pick_from_ref<T>(items: &[T], pick: usize) -> Option<&T> {
    if items.is_empty() {
        None
    } else {
        items.get(pick % items.len())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn both_sides_agree_on_every_requests_fate(
        modern in any::<bool>(),
        offered in proptest::sample::select(ProtocolVersion::HANDSHAKE.to_vec()),
        ops in proptest::collection::vec(op(), 0..60),
        // Half the runs end with one side closing, somewhere in the script.
        close in proptest::option::of((any::<usize>(), prop_oneof![Just(Op::ClientCloses), Just(Op::ServerCloses)])),
    ) {
        let mut pair = Pair::new(modern, offered);
        let close_at = close.as_ref().map(|(at, _)| at % (ops.len() + 1));
        for (at, op) in ops.into_iter().enumerate() {
            if close_at == Some(at)
                && let Some((_, close)) = &close
            {
                pair.run(close.clone());
            }
            pair.run(op);
        }
        // Or at the end of the script (a second close changes nothing).
        if let Some((_, close)) = close {
            pair.run(close);
        }
        pair.settle();
        pair.check();
    }

    /// Any message the shared strategies make, fed to a server at any
    /// stage, panics nothing, and every frame it sends back decodes.
    #[test]
    fn any_message_is_survived(
        version in proptest::sample::select(ProtocolVersion::HANDSHAKE.to_vec()),
        before in proptest::collection::vec(arb_message(), 0..4),
        after in proptest::collection::vec(arb_message(), 0..8),
    ) {
        let now = Instant::now();
        let mut server = ServerSession::new(ServerOptions::default());
        let feed = |server: &mut ServerSession, message: &Message| {
            server.handle_bytes(now, &message.to_bytes());
            while let Some(frame) = server.poll_transmit() {
                let mut line = Vec::new();
                ndjson::encode_frame(&frame, &mut line).expect("a frame of the sessions has a one-line form");
                prop_assert!(Frame::from_slice(&line).is_ok());
            }
            while let Some(event) = server.poll_event() {
                if let server::Event::Request(request) = event {
                    server.respond(&request.id, &json!({})).unwrap();
                }
            }
            Ok(())
        };
        for message in &before {
            feed(&mut server, message)?;
        }
        let init = Message::request(0, methods::INITIALIZE, Some(&json!({
            "protocolVersion": version.as_str(),
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        }))).unwrap();
        feed(&mut server, &init)?;
        for message in &after {
            feed(&mut server, message)?;
        }
    }
}

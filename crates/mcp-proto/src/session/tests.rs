//! Deterministic tests of every session rule, against a scripted server on a virtual clock.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::types::{ElicitationCapability, RootsCapability, SamplingCapability};

/// A session plus a virtual clock and a scripted server's view of the wire.
struct Harness {
    session: ClientSession,
    start: Instant,
    now: Instant,
}

impl Harness {
    /// A session that speaks the handshake era: the handshake rules below
    /// are tested without the era probe in front of them (an `Auto` policy
    /// is pinned to `Legacy`; the era tests use [`Harness::detecting`]).
    fn new(mut options: SessionOptions) -> Self {
        if options.era == EraPolicy::Auto {
            options.era = EraPolicy::Legacy;
        }
        Self::detecting(options)
    }

    /// A session with its era policy as given.
    fn detecting(options: SessionOptions) -> Self {
        let start = Instant::now();
        Harness {
            session: ClientSession::new(options),
            start,
            now: start,
        }
    }

    /// A session whose handshake finished with the given server capabilities.
    fn ready(server_caps: Value) -> Self {
        Self::ready_with(SessionOptions::default(), "2025-11-25", server_caps)
    }

    fn ready_with(options: SessionOptions, version: &str, server_caps: Value) -> Self {
        let mut h = Harness::new(options);
        h.session.start(h.now).unwrap();
        let init = h.sent();
        assert_eq!(init.len(), 1);
        h.recv(json!({"jsonrpc": "2.0", "id": init[0]["id"], "result": init_result(version, server_caps)}));
        let sent = h.sent();
        assert_eq!(
            sent,
            vec![json!({"jsonrpc": "2.0", "method": "notifications/initialized"})]
        );
        let events = h.events();
        assert!(
            matches!(events.as_slice(), [Event::Initialized(_)]),
            "{events:?}"
        );
        h
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.session.handle_timeout(self.now);
    }

    fn recv(&mut self, message: Value) {
        let message: Message = serde_json::from_value(message).unwrap();
        self.session.handle_message(self.now, message);
    }

    fn sent(&mut self) -> Vec<Value> {
        std::iter::from_fn(|| self.session.poll_transmit())
            .map(|m| serde_json::from_slice(&m.to_bytes()).unwrap())
            .collect()
    }

    fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.session.poll_event()).collect()
    }

    fn request(&mut self, method: &str, params: Value) -> RequestHandle {
        self.session
            .request(self.now, method, Some(&params), RequestOptions::default())
            .unwrap()
    }
}

fn init_result(version: &str, caps: Value) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": {"name": "scripted", "version": "1.0"},
        "instructions": "Use me."
    })
}

fn all_caps() -> Value {
    json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}, "prompts": {}, "logging": {}, "completions": {}})
}

fn completed(events: &[Event]) -> Vec<(RequestHandle, Result<Value, RequestError>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Completed { handle, outcome } => Some((
                *handle,
                outcome
                    .clone()
                    .map(|raw| serde_json::from_str(raw.get()).unwrap()),
            )),
            _ => None,
        })
        .collect()
}

fn close_reason(events: &[Event]) -> Option<CloseReason> {
    events.iter().find_map(|e| match e {
        Event::Closed(reason) => Some(reason.clone()),
        _ => None,
    })
}

// --- handshake -----------------------------------------------------------

#[test]
fn handshake_sends_initialize_first_then_initialized() {
    let mut options = SessionOptions {
        client_info: Implementation::new("host", "9.9"),
        ..Default::default()
    };
    options.capabilities.roots = Some(RootsCapability {
        list_changed: Some(true),
        ..Default::default()
    });
    let mut h = Harness::new(options);
    assert_eq!(h.session.state(), SessionState::Idle);
    h.session.start(h.now).unwrap();
    assert_eq!(h.session.state(), SessionState::Initializing);
    let sent = h.sent();
    assert_eq!(
        sent,
        vec![json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"roots": {"listChanged": true}},
                "clientInfo": {"name": "host", "version": "9.9"}
            }
        })]
    );
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "result": init_result("2025-11-25", json!({"tools": {}}))}));
    assert_eq!(h.session.state(), SessionState::Ready);
    assert_eq!(
        h.sent(),
        vec![json!({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    );
    match h.events().as_slice() {
        [Event::Initialized(n)] => {
            assert_eq!(n.version, ProtocolVersion::V2025_11_25);
            assert_eq!(n.server_info().name, "scripted");
            assert_eq!(n.instructions(), Some("Use me."));
        }
        other => panic!("{other:?}"),
    }
    assert!(h.session.negotiated().is_some());
}

#[test]
fn only_ping_may_precede_the_initialize_result() {
    let mut h = Harness::new(SessionOptions::default());
    assert!(matches!(
        h.session.request(
            h.now,
            "tools/list",
            None::<&Value>,
            RequestOptions::default()
        ),
        Err(SessionError::NotStarted)
    ));
    h.session.start(h.now).unwrap();
    assert!(matches!(
        h.session.start(h.now),
        Err(SessionError::AlreadyStarted)
    ));
    assert!(matches!(
        h.session.request(
            h.now,
            "tools/list",
            None::<&Value>,
            RequestOptions::default()
        ),
        Err(SessionError::NotReady { .. })
    ));
    assert!(matches!(
        h.session
            .notify("notifications/roots/list_changed", None::<&Value>),
        Err(SessionError::NotReady { .. })
    ));
    let ping = h
        .session
        .request(h.now, "ping", None::<&Value>, RequestOptions::default())
        .unwrap();
    let sent = h.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["method"], "ping");
    assert_eq!(sent[1]["id"], json!(ping.0));
}

#[test]
fn initialize_is_reserved_to_start() {
    let mut h = Harness::ready(json!({}));
    assert!(matches!(
        h.session.request(
            h.now,
            "initialize",
            None::<&Value>,
            RequestOptions::default()
        ),
        Err(SessionError::Reserved { .. })
    ));
    assert!(matches!(
        h.session
            .notify("notifications/initialized", None::<&Value>),
        Err(SessionError::Reserved { .. })
    ));
}

#[test]
fn accepts_any_supported_older_version() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let h = Harness::ready_with(SessionOptions::default(), version, json!({}));
        assert_eq!(h.session.negotiated().unwrap().version.as_str(), version);
    }
}

#[test]
fn unsupported_version_closes_naming_both_versions() {
    for answered in ["1999-01-01", "2026-07-28"] {
        let mut h = Harness::new(SessionOptions::default());
        h.session.start(h.now).unwrap();
        h.sent();
        h.recv(json!({"jsonrpc": "2.0", "id": 0, "result": init_result(answered, json!({}))}));
        assert_eq!(h.session.state(), SessionState::Closed);
        assert!(
            h.sent().is_empty(),
            "no initialized after a refused version"
        );
        let reason = close_reason(&h.events()).unwrap();
        // The reason says the handshake failed; its source says why.
        let text = crate::text::ErrorChain(&reason).to_string();
        assert!(
            text.contains(answered) && text.contains("2025-11-25"),
            "{text}"
        );
        assert!(matches!(
            reason,
            CloseReason::Handshake(HandshakeError::UnsupportedVersion(_))
        ));
    }
}

#[test]
fn invalid_initialize_result_closes() {
    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    h.sent();
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 5}}));
    assert!(matches!(
        close_reason(&h.events()),
        Some(CloseReason::Handshake(HandshakeError::InvalidResult(_)))
    ));
}

#[test]
fn initialize_error_listing_versions_is_retried_once() {
    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    h.sent();
    let version_error = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32602, "message": "Unsupported protocol version",
            "data": {"supported": ["2024-11-05", "2025-03-26"], "requested": "2025-11-25"}}})
    };
    h.recv(version_error(0));
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "initialize");
    assert_eq!(sent[0]["id"], 1, "a retry uses a new id");
    assert_eq!(sent[0]["params"]["protocolVersion"], "2025-03-26");
    assert!(h.events().is_empty());
    h.recv(version_error(1));
    assert!(matches!(
        close_reason(&h.events()),
        Some(CloseReason::Handshake(HandshakeError::Rejected(e))) if e.code == -32602
    ));
}

#[test]
fn initialize_error_without_versions_closes() {
    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    h.sent();
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32603, "message": "boom"}}));
    assert!(h.sent().is_empty());
    assert!(matches!(
        close_reason(&h.events()),
        Some(CloseReason::Handshake(HandshakeError::Rejected(_)))
    ));
}

#[test]
fn initialize_timeout_closes_without_cancelling() {
    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    h.sent();
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.start + Duration::from_secs(10))
    );
    h.advance(Duration::from_millis(9_999));
    assert_eq!(h.session.state(), SessionState::Initializing);
    h.advance(Duration::from_millis(1));
    assert!(
        h.sent().is_empty(),
        "initialize is never cancelled on the wire"
    );
    assert_eq!(
        close_reason(&h.events()),
        Some(CloseReason::Handshake(HandshakeError::Timeout(
            Duration::from_secs(10)
        )))
    );
}

#[test]
fn abandoning_initialize_sends_nothing() {
    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    h.sent();
    h.session.abandon_initialize();
    assert!(h.sent().is_empty());
    assert_eq!(
        close_reason(&h.events()),
        Some(CloseReason::Handshake(HandshakeError::Cancelled))
    );
}

// --- requests and responses ------------------------------------------------

#[test]
fn ids_are_unique_and_responses_route_by_id() {
    let mut h = Harness::ready(all_caps());
    let a = h.request("tools/list", json!({}));
    let b = h.request("tools/call", json!({"name": "echo"}));
    assert_ne!(a, b);
    let sent = h.sent();
    assert_eq!(sent[0]["id"], json!(a.0));
    assert_eq!(sent[1]["id"], json!(b.0));
    h.recv(
        json!({"jsonrpc": "2.0", "id": b.0, "error": {"code": -32602, "message": "unknown tool"}}),
    );
    h.recv(json!({"jsonrpc": "2.0", "id": a.0, "result": {"tools": []}}));
    let done = completed(&h.events());
    assert_eq!(done.len(), 2);
    assert_eq!(done[0].0, b);
    assert_eq!(done[0].1.as_ref().unwrap_err().rpc().unwrap().code, -32602);
    assert_eq!(done[1], (a, Ok(json!({"tools": []}))));
    assert_eq!(h.session.pending_requests(), 0);
}

#[test]
fn unknown_and_string_response_ids_are_diagnostics() {
    let mut h = Harness::ready(all_caps());
    h.recv(json!({"jsonrpc": "2.0", "id": 999, "result": {}}));
    h.recv(json!({"jsonrpc": "2.0", "id": "1", "result": {}}));
    h.recv(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse"}}));
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [
                Event::Diagnostic(Diagnostic::UnknownResponseId(RequestId::Number(999))),
                Event::Diagnostic(Diagnostic::UnknownResponseId(RequestId::String(_))),
                Event::Diagnostic(Diagnostic::ErrorWithoutId(_)),
            ]
        ),
        "{events:?}"
    );
}

#[test]
fn timeout_completes_once_and_cancels_on_the_wire() {
    let mut h = Harness::ready(all_caps());
    let handle = h
        .session
        .request(
            h.now,
            "tools/call",
            Some(&json!({"name": "slow"})),
            RequestOptions {
                timeout: Some(Duration::from_secs(2)),
                ..Default::default()
            },
        )
        .unwrap();
    h.sent();
    h.advance(Duration::from_millis(1_999));
    assert!(h.events().is_empty());
    h.advance(Duration::from_millis(1));
    assert_eq!(
        completed(&h.events()),
        vec![(handle, Err(RequestError::Timeout(Duration::from_secs(2))))]
    );
    assert_eq!(
        h.sent(),
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": handle.0, "reason": "timed out"}})
        ]
    );
    // The late answer is ignored: no second completion, no diagnostic.
    h.recv(json!({"jsonrpc": "2.0", "id": handle.0, "result": {"content": []}}));
    assert!(h.events().is_empty());
    assert_eq!(h.session.poll_timeout(), None);
}

#[test]
fn default_request_timeout_applies_and_can_be_disabled() {
    let mut h = Harness::ready(all_caps());
    h.request("tools/list", json!({}));
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + Duration::from_secs(60))
    );

    let options = SessionOptions {
        request_timeout: None,
        ..Default::default()
    };
    let mut h = Harness::ready_with(options, "2025-11-25", all_caps());
    h.request("tools/list", json!({}));
    assert_eq!(h.session.poll_timeout(), None);
}

#[test]
fn cancel_completes_once_and_notifies() {
    let mut h = Harness::ready(all_caps());
    let handle = h.request("tools/call", json!({"name": "x"}));
    h.sent();
    assert!(h.session.cancel(handle, Some("user pressed stop")));
    assert!(
        !h.session.cancel(handle, None),
        "a second cancel is a no-op"
    );
    assert_eq!(
        completed(&h.events()),
        vec![(handle, Err(RequestError::Cancelled))]
    );
    assert_eq!(
        h.sent(),
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": handle.0, "reason": "user pressed stop"}})
        ]
    );
    h.recv(json!({"jsonrpc": "2.0", "id": handle.0, "result": {}}));
    assert!(h.events().is_empty());
    assert_eq!(h.session.poll_timeout(), None, "the deadline went with it");
}

#[test]
fn undelivered_requests_fail_without_cancelling() {
    let mut h = Harness::ready(all_caps());
    let handle = h.request("tools/call", json!({"name": "x"}));
    h.sent();
    assert!(h.session.fail_request(h.now, &handle.id(), "HTTP 500"));
    assert!(!h.session.fail_request(h.now, &handle.id(), "again"));
    assert!(
        !h.session
            .fail_request(h.now, &RequestId::from("s"), "unknown")
    );
    assert_eq!(
        completed(&h.events()),
        vec![(handle, Err(RequestError::Undelivered("HTTP 500".into())))]
    );
    assert!(
        h.sent().is_empty(),
        "the server never saw it: nothing to cancel"
    );

    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    h.sent();
    assert!(
        h.session
            .fail_request(h.now, &RequestId::Number(0), "HTTP 503")
    );
    assert_eq!(
        close_reason(&h.events()),
        Some(CloseReason::Handshake(HandshakeError::Undelivered(
            "HTTP 503".into()
        )))
    );
}

// --- progress --------------------------------------------------------------

#[test]
fn progress_token_is_added_and_routed() {
    let mut h = Harness::ready(all_caps());
    let handle = h
        .session
        .request(
            h.now,
            "tools/call",
            Some(&json!({"name": "long", "_meta": {"traceparent": "00-abc"}})),
            RequestOptions {
                progress: true,
                ..Default::default()
            },
        )
        .unwrap();
    let sent = h.sent();
    assert_eq!(
        sent[0]["params"]["_meta"],
        json!({"traceparent": "00-abc", "progressToken": handle.0})
    );

    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": handle.0, "progress": 0.5, "total": 1.0, "message": "half"}}));
    // Unknown tokens (and string tokens we never issued) are ignored.
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": 12345, "progress": 1}}));
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "x", "progress": 1}}));
    let events = h.events();
    match events.as_slice() {
        [
            Event::Progress {
                handle: got,
                params,
            },
        ] => {
            assert_eq!(*got, handle);
            assert_eq!(params.progress, 0.5);
            assert_eq!(params.message.as_deref(), Some("half"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn progress_without_params_gets_meta_only() {
    let mut h = Harness::ready(all_caps());
    let handle = h
        .session
        .request(
            h.now,
            "tools/list",
            None::<&Value>,
            RequestOptions {
                progress: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        h.sent()[0]["params"],
        json!({"_meta": {"progressToken": handle.0}})
    );
}

#[test]
fn progress_on_non_object_params_is_refused() {
    let mut h = Harness::ready(all_caps());
    let result = h.session.request(
        h.now,
        "custom/thing",
        Some(&json!([1, 2])),
        RequestOptions {
            progress: true,
            ..Default::default()
        },
    );
    assert!(matches!(result, Err(SessionError::ParamsNotObject { .. })));
    assert!(h.sent().is_empty());
}

#[test]
fn progress_resets_the_deadline_up_to_the_hard_limit() {
    let mut h = Harness::ready(all_caps());
    let handle = h
        .session
        .request(
            h.now,
            "tools/call",
            Some(&json!({"name": "long"})),
            RequestOptions {
                timeout: Some(Duration::from_secs(10)),
                progress: true,
                reset_timeout_on_progress: true,
                max_total_timeout: Some(Duration::from_secs(25)),
            },
        )
        .unwrap();
    h.sent();
    let progress = |h: &mut Harness| {
        h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": handle.0, "progress": 1}}));
    };
    h.advance(Duration::from_secs(8));
    progress(&mut h); // deadline now t=18
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.start + Duration::from_secs(18))
    );
    h.advance(Duration::from_secs(8));
    progress(&mut h); // t=16: would be 26, capped at 25
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.start + Duration::from_secs(25))
    );
    h.events();
    h.advance(Duration::from_secs(9)); // t=25
    assert_eq!(
        completed(&h.events()),
        vec![(handle, Err(RequestError::Timeout(Duration::from_secs(10))))]
    );
}

#[test]
fn progress_without_reset_keeps_the_deadline() {
    let mut h = Harness::ready(all_caps());
    let handle = h
        .session
        .request(
            h.now,
            "tools/call",
            Some(&json!({"name": "long"})),
            RequestOptions {
                timeout: Some(Duration::from_secs(10)),
                progress: true,
                ..Default::default()
            },
        )
        .unwrap();
    h.advance(Duration::from_secs(8));
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": handle.0, "progress": 1}}));
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.start + Duration::from_secs(10))
    );
}

#[test]
fn malformed_progress_is_a_diagnostic_and_malformed_cancel_is_ignored() {
    let mut h = Harness::ready(all_caps());
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "lots"}}));
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"x": 1}}}));
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/cancelled"}));
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [Event::Diagnostic(Diagnostic::MalformedParams { method, .. })] if method == "notifications/progress"
        ),
        "{events:?}"
    );
    assert!(h.sent().is_empty());
}

// --- capability gating -------------------------------------------------------

#[test]
fn requests_need_the_servers_capability() {
    let mut h = Harness::ready(json!({"resources": {}}));
    let refused = |h: &mut Harness, method: &str| match h.session.request(
        h.now,
        method,
        Some(&json!({})),
        RequestOptions::default(),
    ) {
        Err(SessionError::CapabilityNotDeclared { capability, .. }) => capability,
        other => panic!("{method}: {other:?}"),
    };
    assert_eq!(refused(&mut h, "tools/list"), "tools");
    assert_eq!(refused(&mut h, "tools/call"), "tools");
    assert_eq!(refused(&mut h, "prompts/get"), "prompts");
    assert_eq!(refused(&mut h, "logging/setLevel"), "logging");
    assert_eq!(refused(&mut h, "completion/complete"), "completions");
    assert_eq!(
        refused(&mut h, "resources/subscribe"),
        "resources.subscribe"
    );
    assert_eq!(refused(&mut h, "tasks/list"), "tasks");
    assert!(h.sent().is_empty(), "nothing refused went out");
    // Declared or ungated methods go through.
    h.request("resources/read", json!({"uri": "file:///a"}));
    h.request("ping", json!({}));
    h.request("vendor/custom", json!({}));
    assert_eq!(h.sent().len(), 3);
}

#[test]
fn completion_has_no_flag_in_2024_11_05() {
    let mut h = Harness::ready_with(
        SessionOptions::default(),
        "2024-11-05",
        json!({"prompts": {}}),
    );
    h.request("completion/complete", json!({}));
    assert_eq!(h.sent().len(), 1);
}

// --- server-to-client requests ---------------------------------------------

#[test]
fn ping_is_answered_in_any_state_echoing_the_id_type() {
    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    h.sent();
    h.recv(json!({"jsonrpc": "2.0", "id": "p-1", "method": "ping"}));
    assert_eq!(
        h.sent(),
        vec![json!({"jsonrpc": "2.0", "id": "p-1", "result": {}})]
    );
    assert!(h.events().is_empty());
}

#[test]
fn undeclared_client_capabilities_get_method_not_found() {
    let mut h = Harness::ready(all_caps());
    for (id, method) in [
        (1, "roots/list"),
        (2, "sampling/createMessage"),
        (3, "elicitation/create"),
        (4, "tasks/get"),
        (5, "made/up"),
    ] {
        h.recv(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}));
        let sent = h.sent();
        assert_eq!(sent.len(), 1, "{method}");
        assert_eq!(sent[0]["id"], id);
        assert_eq!(sent[0]["error"]["code"], -32601, "{method}");
    }
    assert!(h.events().is_empty());
}

fn client_with_everything() -> SessionOptions {
    let mut options = SessionOptions::default();
    options.capabilities.roots = Some(RootsCapability::default());
    options.capabilities.sampling = Some(SamplingCapability::default());
    options.capabilities.elicitation = Some(ElicitationCapability::default());
    options
}

#[test]
fn declared_server_requests_surface_and_are_answered_once() {
    let mut h = Harness::ready_with(client_with_everything(), "2025-11-25", all_caps());
    h.recv(json!({"jsonrpc": "2.0", "id": 7, "method": "roots/list"}));
    let events = h.events();
    let [Event::Request(request)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(request.method, "roots/list");
    assert!(
        h.session
            .respond_ok(&request.id, &json!({"roots": []}))
            .unwrap()
    );
    assert!(
        !h.session
            .respond_ok(&request.id, &json!({"roots": []}))
            .unwrap()
    );
    assert!(
        !h.session
            .respond_err(&request.id, ErrorObject::new(-1, "late"))
    );
    assert_eq!(
        h.sent(),
        vec![json!({"jsonrpc": "2.0", "id": 7, "result": {"roots": []}})]
    );

    h.recv(json!({"jsonrpc": "2.0", "id": "s", "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}));
    let events = h.events();
    let [Event::Request(request)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert!(
        h.session
            .respond_err(&request.id, ErrorObject::new(-1, "user rejected"))
    );
    assert_eq!(
        h.sent(),
        vec![
            json!({"jsonrpc": "2.0", "id": "s", "error": {"code": -1, "message": "user rejected"}})
        ]
    );
}

#[test]
fn elicitation_modes_are_checked() {
    // `{}` declares form mode only (2025-06-18 compatibility).
    let mut h = Harness::ready_with(client_with_everything(), "2025-11-25", all_caps());
    h.recv(
        json!({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create",
        "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}}),
    );
    assert!(matches!(h.events().as_slice(), [Event::Request(_)]));
    h.recv(json!({"jsonrpc": "2.0", "id": 2, "method": "elicitation/create",
        "params": {"mode": "url", "message": "log in", "elicitationId": "e", "url": "https://example.test"}}));
    let sent = h.sent();
    assert_eq!(sent[0]["id"], 2);
    assert_eq!(sent[0]["error"]["code"], -32602);
    assert!(h.events().is_empty());

    let mut options = client_with_everything();
    options.capabilities.elicitation = Some(ElicitationCapability {
        url: Some(Default::default()),
        ..Default::default()
    });
    let mut h = Harness::ready_with(options, "2025-11-25", all_caps());
    h.recv(json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create",
        "params": {"mode": "url", "message": "log in", "elicitationId": "e", "url": "https://example.test"}}));
    assert!(matches!(h.events().as_slice(), [Event::Request(_)]));
    h.recv(json!({"jsonrpc": "2.0", "id": 4, "method": "elicitation/create",
        "params": {"mode": "form", "message": "x", "requestedSchema": {"type": "object", "properties": {}}}}));
    assert_eq!(
        h.sent()[0]["error"]["code"],
        -32602,
        "form not declared when only url is"
    );
}

#[test]
fn sampling_tools_need_the_sampling_tools_capability() {
    let mut h = Harness::ready_with(client_with_everything(), "2025-11-25", all_caps());
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 5, "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}));
    assert_eq!(h.sent()[0]["error"]["code"], -32602);
    assert!(h.events().is_empty());
    // Params that are not an object at all are refused the same way.
    h.recv(json!({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage", "params": [1]}));
    assert_eq!(h.sent()[0]["error"]["code"], -32602);
}

#[test]
fn a_server_request_with_malformed_params_is_answered_with_an_error() {
    let mut h = Harness::ready_with(client_with_everything(), "2025-11-25", all_caps());
    // Framing does not read params through, so the request arrives and
    // the server learns why it failed instead of waiting for an answer.
    let frame = Frame::from_slice(
        br#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"messages":[tru],"maxTokens":5}}"#,
    )
    .unwrap();
    h.session.handle_frame(h.now, frame);
    let sent = h.sent();
    assert_eq!(sent[0]["id"], 7);
    assert_eq!(sent[0]["error"]["code"], -32602, "{sent:?}");
    assert!(h.events().is_empty());
}

#[test]
fn server_cancel_withdraws_its_request() {
    let mut h = Harness::ready_with(client_with_everything(), "2025-11-25", all_caps());
    h.recv(json!({"jsonrpc": "2.0", "id": 9, "method": "roots/list"}));
    h.events();
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "reason": "gone"}}));
    // Unknown ids are ignored.
    h.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10}}),
    );
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [Event::RequestCancelled { id: RequestId::Number(9), reason: Some(r) }] if r == "gone"
        ),
        "{events:?}"
    );
    assert!(
        !h.session
            .respond_ok(&RequestId::Number(9), &json!({"roots": []}))
            .unwrap()
    );
    assert!(
        h.sent().is_empty(),
        "no response after the server cancelled"
    );
}

#[test]
fn duplicate_and_excess_server_requests() {
    let mut options = client_with_everything();
    options.max_pending_server_requests = 2;
    let mut h = Harness::ready_with(options, "2025-11-25", all_caps());
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}));
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}));
    h.recv(json!({"jsonrpc": "2.0", "id": 2, "method": "roots/list"}));
    h.recv(json!({"jsonrpc": "2.0", "id": 3, "method": "roots/list"}));
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [
                Event::Request(_),
                Event::Diagnostic(Diagnostic::DuplicateServerRequestId(_)),
                Event::Request(_),
                Event::Diagnostic(Diagnostic::TooManyServerRequests(_)),
            ]
        ),
        "{events:?}"
    );
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["id"], 3);
    assert_eq!(sent[0]["error"]["code"], -32603);
}

// --- notifications -----------------------------------------------------------

#[test]
fn other_notifications_surface_before_and_after_init() {
    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "booting"}}));
    assert!(
        matches!(h.events().as_slice(), [Event::Notification(n)] if n.method == "notifications/message")
    );
    let mut h = Harness::ready(all_caps());
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    assert!(
        matches!(h.events().as_slice(), [Event::Notification(n)] if n.method == "notifications/tools/list_changed")
    );
}

#[test]
fn roots_list_changed_needs_the_declared_capability() {
    let mut h = Harness::ready(all_caps());
    assert!(matches!(
        h.session
            .notify("notifications/roots/list_changed", None::<&Value>),
        Err(SessionError::ClientCapabilityNotDeclared { .. })
    ));
    let mut options = SessionOptions::default();
    options.capabilities.roots = Some(RootsCapability {
        list_changed: Some(true),
        ..Default::default()
    });
    let mut h = Harness::ready_with(options, "2025-11-25", all_caps());
    h.session
        .notify("notifications/roots/list_changed", None::<&Value>)
        .unwrap();
    assert_eq!(
        h.sent(),
        vec![json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})]
    );
}

// --- batches -----------------------------------------------------------------

fn batch(ids: [i64; 2]) -> Frame {
    Frame::Batch(vec![
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": ids[0], "result": {"tools": []}}))
            .unwrap(),
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": ids[1], "result": {"tools": []}}))
            .unwrap(),
    ])
}

#[test]
fn batches_only_in_2025_03_26() {
    let mut h = Harness::ready_with(SessionOptions::default(), "2025-03-26", all_caps());
    let a = h.request("tools/list", json!({}));
    let b = h.request("tools/list", json!({}));
    let frame = batch([a.0, b.0]);
    h.session.handle_frame(h.now, frame);
    assert_eq!(completed(&h.events()).len(), 2);

    let mut h = Harness::ready(all_caps());
    let a = h.request("tools/list", json!({}));
    let b = h.request("tools/list", json!({}));
    let frame = batch([a.0, b.0]);
    h.session.handle_frame(h.now, frame);
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [Event::Diagnostic(Diagnostic::BatchRefused { len: 2, .. })]
        ),
        "{events:?}"
    );
    assert_eq!(h.session.pending_requests(), 2);
}

// --- close ---------------------------------------------------------------------

#[test]
fn close_fails_every_pending_request_at_once() {
    let mut h = Harness::ready(all_caps());
    let handles: Vec<_> = (0..5).map(|_| h.request("tools/list", json!({}))).collect();
    h.session.handle_close();
    let events = h.events();
    let done = completed(&events);
    assert_eq!(done.len(), 5);
    for (handle, outcome) in done {
        assert!(handles.contains(&handle));
        assert_eq!(outcome, Err(RequestError::Closed));
    }
    assert!(matches!(
        events.last(),
        Some(Event::Closed(CloseReason::TransportClosed))
    ));
    assert!(h.sent().is_empty(), "queued messages are dropped on close");
    assert_eq!(h.session.poll_timeout(), None);
    h.session.close();
    assert!(h.events().is_empty(), "closed is reported once");
    assert!(matches!(
        h.session
            .request(h.now, "ping", None::<&Value>, RequestOptions::default()),
        Err(SessionError::Closed)
    ));
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert!(h.events().is_empty(), "nothing is processed after close");
}

#[test]
fn close_during_handshake_reports_transport_closed() {
    let mut h = Harness::new(SessionOptions::default());
    h.session.start(h.now).unwrap();
    let ping = h
        .session
        .request(h.now, "ping", None::<&Value>, RequestOptions::default())
        .unwrap();
    h.session.handle_close();
    let events = h.events();
    assert_eq!(completed(&events), vec![(ping, Err(RequestError::Closed))]);
    assert_eq!(close_reason(&events), Some(CloseReason::TransportClosed));
}

// --- exactly once, under any interleaving --------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Request { timeout_ms: u64, progress: bool },
    Respond { pick: usize, error: bool },
    RespondUnknown(i64),
    Progress { pick: usize },
    Cancel { pick: usize },
    Advance(u64),
    Close,
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..5_000, any::<bool>()).prop_map(|(timeout_ms, progress)| Op::Request { timeout_ms, progress }),
        4 => (any::<usize>(), any::<bool>()).prop_map(|(pick, error)| Op::Respond { pick, error }),
        1 => (-5i64..100).prop_map(Op::RespondUnknown),
        2 => any::<usize>().prop_map(|pick| Op::Progress { pick }),
        2 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        3 => (0u64..3_000).prop_map(Op::Advance),
        1 => Just(Op::Close),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_request_ends_exactly_once(ops in proptest::collection::vec(arb_op(), 1..80)) {
        let mut h = Harness::ready(all_caps());
        let mut issued: Vec<RequestHandle> = Vec::new();
        let mut ended: std::collections::HashMap<RequestHandle, usize> = Default::default();
        let record = |h: &mut Harness, ended: &mut std::collections::HashMap<RequestHandle, usize>| {
            for event in h.events() {
                if let Event::Completed { handle, .. } = event {
                    *ended.entry(handle).or_default() += 1;
                }
            }
            h.sent();
        };
        for op in ops {
            match op {
                Op::Request { timeout_ms, progress } => {
                    if let Ok(handle) = h.session.request(
                        h.now,
                        "tools/call",
                        Some(&json!({"name": "t"})),
                        RequestOptions {
                            timeout: Some(Duration::from_millis(timeout_ms)),
                            progress,
                            reset_timeout_on_progress: progress,
                            max_total_timeout: None,
                        },
                    ) {
                        issued.push(handle);
                    }
                }
                Op::Respond { pick, error } if !issued.is_empty() => {
                    let handle = issued[pick % issued.len()];
                    let message = if error {
                        json!({"jsonrpc": "2.0", "id": handle.0, "error": {"code": -1, "message": "no"}})
                    } else {
                        json!({"jsonrpc": "2.0", "id": handle.0, "result": {}})
                    };
                    h.recv(message);
                }
                Op::RespondUnknown(id) => h.recv(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
                Op::Progress { pick } if !issued.is_empty() => {
                    let handle = issued[pick % issued.len()];
                    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": handle.0, "progress": 1}}));
                }
                Op::Cancel { pick } if !issued.is_empty() => {
                    let handle = issued[pick % issued.len()];
                    h.session.cancel(handle, None);
                }
                Op::Advance(ms) => h.advance(Duration::from_millis(ms)),
                Op::Close => h.session.handle_close(),
                Op::Respond { .. } | Op::Progress { .. } | Op::Cancel { .. } => {}
            }
            record(&mut h, &mut ended);
            // No deadline is ever left in the past.
            if let Some(deadline) = h.session.poll_timeout() {
                prop_assert!(deadline > h.now);
            }
        }
        h.session.handle_close();
        record(&mut h, &mut ended);
        for handle in &issued {
            prop_assert_eq!(ended.get(handle).copied(), Some(1), "request {:?}", handle);
        }
        prop_assert_eq!(ended.len(), issued.len());
        prop_assert_eq!(h.session.pending_requests(), 0);
    }
}

// --- the stateless era and era detection ------------------------------------

fn discover_result(versions: &[&str], caps: Value) -> Value {
    json!({
        "supportedVersions": versions,
        "capabilities": caps,
        "instructions": "use me",
        "ttlMs": 60000,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-srv", "version": "2.0"}}
    })
}

fn auto_options() -> SessionOptions {
    SessionOptions {
        client_info: Implementation::new("host-app", "9.1"),
        ..SessionOptions::default()
    }
}

/// Starts an Auto session and returns the probe it sent.
fn probing(options: SessionOptions) -> (Harness, Value) {
    let mut h = Harness::detecting(options);
    h.session.start(h.now).unwrap();
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "server/discover");
    (h, sent[0].clone())
}

/// An Auto session that found a modern server offering `caps`.
fn modern(caps: Value) -> Harness {
    let (mut h, probe) = probing(auto_options());
    h.recv(json!({"jsonrpc": "2.0", "id": probe["id"], "result": discover_result(&["2026-07-28"], caps)}));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Initialized(n)] if n.era() == Era::Modern),
        "{events:?}"
    );
    h
}

#[test]
fn the_probe_carries_the_modern_meta() {
    let (_, probe) = probing(auto_options());
    let meta = &probe["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"],
        json!({"name": "host-app", "version": "9.1"})
    );
}

#[test]
fn a_discover_result_settles_the_stateless_era() {
    let (mut h, probe) = probing(auto_options());
    h.recv(json!({"jsonrpc": "2.0", "id": probe["id"],
        "result": discover_result(&["2025-11-25", "2026-07-28"], json!({"tools": {}}))}));
    let events = h.events();
    let [Event::Initialized(n)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(n.version, ProtocolVersion::V2026_07_28);
    assert_eq!(n.server_info().name, "modern-srv");
    assert_eq!(n.instructions(), Some("use me"));
    assert!(n.discover.is_some());
    // No `notifications/initialized`, and no listen without list changes.
    assert_eq!(h.sent(), Vec::<Value>::new());
    assert_eq!(h.session.era(), Some(Era::Modern));

    h.request("tools/list", json!({}));
    let sent = h.sent();
    let meta = &sent[0]["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "host-app"
    );
    h.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "_meta"}}),
    );
    let sent = h.sent();
    assert_eq!(sent[0]["params"]["name"], "echo");
    assert_eq!(sent[0]["params"]["arguments"]["text"], "_meta");
    assert!(sent[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].is_object());
}

#[test]
fn the_stateless_era_refuses_what_it_does_not_have() {
    let mut h = modern(json!({"tools": {}, "logging": {}, "resources": {"subscribe": true}}));
    for method in ["ping", "logging/setLevel"] {
        let error = h
            .session
            .request(h.now, method, Some(&json!({})), RequestOptions::default())
            .unwrap_err();
        assert!(
            matches!(
                &error,
                SessionError::NotInEra {
                    era: Era::Modern,
                    ..
                }
            ),
            "{method}: {error:?}"
        );
        assert!(error.to_string().contains("2026-07-28"), "{error}");
    }
    // Subscriptions ride on `subscriptions/listen`; one needs its URI.
    let error = h
        .session
        .request(
            h.now,
            "resources/subscribe",
            Some(&json!({})),
            RequestOptions::default(),
        )
        .unwrap_err();
    let cause = std::error::Error::source(&error).map(ToString::to_string);
    assert!(
        cause.as_deref().is_some_and(|c| c.contains("uri")),
        "{cause:?}"
    );
    let error = h
        .session
        .notify("notifications/roots/list_changed", None::<&()>)
        .unwrap_err();
    assert!(matches!(error, SessionError::NotInEra { .. }), "{error:?}");
    assert_eq!(h.sent(), Vec::<Value>::new());
}

#[test]
fn caller_meta_and_progress_merge_with_the_modern_meta() {
    let mut h = modern(json!({"tools": {}}));
    let handle = h
        .session
        .request(
            h.now,
            "tools/call",
            Some(&json!({"name": "slow", "_meta": {"com.example/trace": "t1"}})),
            RequestOptions {
                progress: true,
                ..RequestOptions::default()
            },
        )
        .unwrap();
    let sent = h.sent();
    let meta = &sent[0]["params"]["_meta"];
    assert_eq!(meta["com.example/trace"], "t1");
    assert_eq!(meta["progressToken"], json!(handle.id()));
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    h.session
        .request(
            h.now,
            "tools/call",
            Some(&json!({"name": "fast"})),
            RequestOptions {
                progress: true,
                ..RequestOptions::default()
            },
        )
        .unwrap();
    let sent = h.sent();
    assert!(
        sent[0]["params"]["_meta"]["progressToken"].is_i64(),
        "{sent:?}"
    );
    assert_eq!(sent[0]["params"]["name"], "fast");
}

#[test]
fn caller_meta_without_progress_merges_with_the_modern_meta() {
    let mut h = modern(json!({"tools": {}}));
    for params in [
        json!({"name": "slow", "_meta": {"com.example/trace": "t1"}}),
        json!({"name": "slow", "arguments": {"_meta": 1}, "_meta": {"com.example/trace": "t1"}}),
    ] {
        h.session
            .request(
                h.now,
                "tools/call",
                Some(&params),
                RequestOptions::default(),
            )
            .unwrap();
        let sent = h.sent();
        let meta = &sent[0]["params"]["_meta"];
        assert_eq!(meta["com.example/trace"], "t1", "{sent:?}");
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{sent:?}"
        );
        assert_eq!(sent[0]["params"]["name"], "slow");
    }
    // Params without `_meta` are spliced next to the era's own.
    h.session
        .request(
            h.now,
            "tools/call",
            Some(&json!({"name": "fast", "arguments": {"text": "_meta"}})),
            RequestOptions::default(),
        )
        .unwrap();
    let sent = h.sent();
    assert_eq!(sent[0]["params"]["arguments"]["text"], "_meta");
    assert_eq!(
        sent[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
}

#[test]
fn a_callers_own_protocol_meta_is_kept_and_the_merge_writes_values_as_they_came() {
    let mut h = modern(json!({"tools": {}}));
    // The caller's capabilities are its own (a gateway relaying its
    // client's); its progress token gives way to the request's.
    let params = json!({"name": "slow", "arguments": {"n": 1.5e3, "_meta": [1]},
        "_meta": {"com.example/trace": "t1", "progressToken": "theirs",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    let handle = h
        .session
        .request(
            h.now,
            "tools/call",
            Some(&params),
            RequestOptions {
                progress: true,
                ..RequestOptions::default()
            },
        )
        .unwrap();
    let sent = h.sent();
    let sent_params = &sent[0]["params"];
    assert_eq!(sent_params["name"], "slow");
    assert_eq!(sent_params["arguments"], json!({"n": 1500.0, "_meta": [1]}));
    let meta = sent_params["_meta"].as_object().unwrap();
    assert_eq!(meta.len(), 5, "{sent:?}");
    assert_eq!(meta["com.example/trace"], "t1");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(meta["io.modelcontextprotocol/clientInfo"].is_object());
    assert_eq!(meta["progressToken"], json!(handle.id()));
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {}})
    );

    // `_meta` named only inside the arguments: the era's own is added.
    h.session
        .request(
            h.now,
            "tools/call",
            Some(&json!({"name": "fast", "arguments": {"_meta": {"a": 1}}})),
            RequestOptions::default(),
        )
        .unwrap();
    let sent = h.sent();
    assert_eq!(sent[0]["params"]["arguments"], json!({"_meta": {"a": 1}}));
    assert_eq!(
        sent[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );

    // A `_meta` that is not an object has nowhere to take ours.
    assert!(
        h.session
            .request(
                h.now,
                "tools/call",
                Some(&json!({"name": "x", "_meta": 1})),
                RequestOptions::default(),
            )
            .is_err()
    );
}

#[test]
fn the_merge_keeps_the_order_a_map_would_and_copies_values_as_written() {
    let ours = super::ModernMeta::new(r#""v":"2026-07-28","caps":{"a":{}}"#.to_owned());
    let merged = |body: &str, progress| match super::merge_meta(&ours, body.as_bytes(), progress) {
        Ok(raw) => raw.get().to_owned(),
        Err(_) => "error".to_owned(),
    };
    // The caller's members first (its token replaced, a key written twice
    // in its first place with its last value), then ours it lacks.
    assert_eq!(
        merged(
            r#"{"name":"x","_meta":{"t":1,"progressToken":"p","caps":[2],"t":3},"args":{"n":1.5e3}}"#,
            Some(7)
        ),
        r#"{"name":"x","_meta":{"t":3,"progressToken":7,"caps":[2],"v":"2026-07-28"},"args":{"n":1.5e3}}"#
    );
    // No `_meta` of its own (named inside the arguments): ours at the end.
    assert_eq!(
        merged(r#"{"args":{"_meta":1}}"#, None),
        r#"{"args":{"_meta":1},"_meta":{"v":"2026-07-28","caps":{"a":{}}}}"#
    );
    assert_eq!(
        merged(r#"{"_meta":{}}"#, Some(1)),
        r#"{"_meta":{"v":"2026-07-28","caps":{"a":{}},"progressToken":1}}"#
    );
    assert_eq!(merged(r#"{"_meta":[]}"#, None), "error");
    // Keys are written as serde_json writes them: escaped only where JSON
    // needs it.
    assert_eq!(
        merged(r#"{"a\"b\u0001":1,"_meta":{"\u00e9\u007f/k\\":2}}"#, None),
        "{\"a\\\"b\\u0001\":1,\"_meta\":{\"é\u{7f}/k\\\\\":2,\"v\":\"2026-07-28\",\"caps\":{\"a\":{}}}}"
    );
}

#[test]
fn any_other_probe_outcome_falls_back_to_initialize() {
    // Error codes handshake-era servers send: never keyed on one of them.
    for code in [-32601, -32602, -32600, -32000, -32603] {
        let (mut h, probe) = probing(auto_options());
        h.recv(
            json!({"jsonrpc": "2.0", "id": probe["id"], "error": {"code": code, "message": "no"}}),
        );
        let sent = h.sent();
        assert_eq!(sent.len(), 1, "{code}: {sent:?}");
        assert_eq!(sent[0]["method"], "initialize", "{code}");
        assert_eq!(sent[0]["params"]["protocolVersion"], "2025-11-25");
    }
    // Silence until the probe deadline.
    let (mut h, _) = probing(auto_options());
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + Duration::from_secs(2))
    );
    h.advance(Duration::from_millis(1999));
    assert_eq!(h.sent(), Vec::<Value>::new());
    h.advance(Duration::from_millis(1));
    let sent = h.sent();
    assert_eq!(sent[0]["method"], "initialize");
    assert!(h.events().is_empty());
    // A late answer to the probe is ignored.
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "late"}}));
    assert!(h.events().is_empty());
    h.recv(json!({"jsonrpc": "2.0", "id": sent[0]["id"], "result": init_result("2025-06-18", json!({}))}));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Initialized(n)] if n.era() == Era::Legacy && n.version == ProtocolVersion::V2025_06_18),
        "{events:?}"
    );
    // An undelivered probe (HTTP 400 without a modern body).
    let (mut h, probe) = probing(auto_options());
    let id: RequestId = serde_json::from_value(probe["id"].clone()).unwrap();
    assert!(h.session.fail_request(h.now, &id, "HTTP 400"));
    assert_eq!(h.sent()[0]["method"], "initialize");
    // A DiscoverResult that lists only handshake versions is no modern server.
    let (mut h, probe) = probing(auto_options());
    h.recv(json!({"jsonrpc": "2.0", "id": probe["id"], "result": discover_result(&["2025-06-18"], json!({}))}));
    assert_eq!(h.sent()[0]["method"], "initialize");
    assert!(h.events().is_empty());
}

#[test]
fn a_version_error_listing_our_version_is_retried_once_with_a_new_id() {
    let (mut h, probe) = probing(auto_options());
    let refuse = |id: &Value| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
            "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}})
    };
    h.recv(refuse(&probe["id"]));
    let retry = h.sent();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0]["method"], "server/discover");
    assert_ne!(retry[0]["id"], probe["id"]);
    h.recv(refuse(&retry[0]["id"]));
    assert_eq!(h.sent(), Vec::<Value>::new(), "no loop");
    assert!(matches!(
        h.events().as_slice(),
        [Event::Closed(CloseReason::Handshake(
            HandshakeError::NoCommonVersion { .. }
        ))]
    ));
}

#[test]
fn a_modern_version_error_is_answered_not_fallen_back_from() {
    // -32022 naming only a version we do not know: a modern server with no
    // version in common; both lists are named.
    let (mut h, probe) = probing(auto_options());
    h.recv(json!({"jsonrpc": "2.0", "id": probe["id"], "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": ["2027-01-01"], "requested": "2026-07-28"}}}));
    assert_eq!(h.sent(), Vec::<Value>::new());
    let events = h.events();
    let [Event::Closed(CloseReason::Handshake(error))] = events.as_slice() else {
        panic!("{events:?}")
    };
    let text = error.to_string();
    assert!(
        text.contains("2027-01-01") && text.contains("2026-07-28"),
        "{text}"
    );
    // -32021 (missing client capability) is modern too: reported, no fallback.
    let (mut h, probe) = probing(auto_options());
    h.recv(json!({"jsonrpc": "2.0", "id": probe["id"], "error": {
        "code": -32021, "message": "needs elicitation",
        "data": {"requiredCapabilities": {"elicitation": {}}}}}));
    assert_eq!(h.sent(), Vec::<Value>::new());
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Closed(CloseReason::Handshake(HandshakeError::DiscoverRejected(e)))] if e.code == -32021),
        "{events:?}"
    );
}

#[test]
fn a_slow_modern_starter_is_switched_to_once() {
    let (mut h, _) = probing(auto_options());
    h.advance(Duration::from_secs(2));
    let init = h.sent();
    assert_eq!(init[0]["method"], "initialize");
    let version_error = |id: &Value| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
            "message": "only 2026-07-28", "data": {"supported": ["2026-07-28"]}}})
    };
    h.recv(version_error(&init[0]["id"]));
    let discover = h.sent();
    assert_eq!(discover.len(), 1);
    assert_eq!(discover[0]["method"], "server/discover");
    // This one has the whole initialize deadline, not the probe's.
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + SessionOptions::default().initialize_timeout)
    );
    h.recv(json!({"jsonrpc": "2.0", "id": discover[0]["id"], "result": discover_result(&["2026-07-28"], json!({}))}));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Initialized(n)] if n.era() == Era::Modern),
        "{events:?}"
    );

    // Never a loop: a server that refuses both ends the session.
    let (mut h, probe) = probing(auto_options());
    h.recv(json!({"jsonrpc": "2.0", "id": probe["id"], "error": {"code": -32601, "message": "?"}}));
    let init = h.sent();
    h.recv(version_error(&init[0]["id"]));
    let discover = h.sent();
    assert_eq!(discover[0]["method"], "server/discover");
    h.recv(json!({"jsonrpc": "2.0", "id": discover[0]["id"], "error": {"code": -32601, "message": "?"}}));
    assert_eq!(h.sent(), Vec::<Value>::new());
    assert!(matches!(
        h.events().as_slice(),
        [Event::Closed(CloseReason::Handshake(_))]
    ));
}

#[test]
fn a_server_that_exits_on_the_probe_is_reported_as_such() {
    let (mut h, _) = probing(auto_options());
    h.session.handle_close();
    let events = h.events();
    let [Event::Closed(CloseReason::Handshake(error))] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert!(error.is_closed_during_probe());
    // After the fallback, a close is an ordinary one.
    let (mut h, probe) = probing(auto_options());
    h.recv(json!({"jsonrpc": "2.0", "id": probe["id"], "error": {"code": -32601, "message": "?"}}));
    h.sent();
    h.session.handle_close();
    assert!(matches!(
        h.events().as_slice(),
        [Event::Closed(CloseReason::TransportClosed)]
    ));
}

#[test]
fn pinned_eras_do_not_detect() {
    let mut h = Harness::detecting(SessionOptions {
        era: EraPolicy::Legacy,
        ..SessionOptions::default()
    });
    h.session.start(h.now).unwrap();
    assert_eq!(h.sent()[0]["method"], "initialize");

    let (mut h, probe) = probing(SessionOptions {
        era: EraPolicy::Modern,
        ..SessionOptions::default()
    });
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + SessionOptions::default().initialize_timeout)
    );
    h.recv(json!({"jsonrpc": "2.0", "id": probe["id"], "error": {"code": -32601, "message": "Method not found"}}));
    assert_eq!(h.sent(), Vec::<Value>::new());
    let events = h.events();
    let [Event::Closed(CloseReason::Handshake(error))] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert!(error.to_string().contains("server/discover"), "{error}");
}

#[test]
fn servers_send_no_requests_in_the_stateless_era() {
    let mut h = modern(json!({}));
    h.recv(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    h.recv(json!({"jsonrpc": "2.0", "id": 8, "method": "roots/list"}));
    assert_eq!(h.sent(), Vec::<Value>::new());
    let events = h.events();
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|e| matches!(
        e,
        Event::Diagnostic(Diagnostic::RequestInStatelessEra { .. })
    )));
}

#[test]
fn listen_is_opened_checked_demultiplexed_and_reopened() {
    let mut h = modern(json!({"tools": {"listChanged": true}, "prompts": {"listChanged": true}}));
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "subscriptions/listen");
    assert_eq!(
        sent[0]["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true})
    );
    assert_eq!(
        sent[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let listen_id = sent[0]["id"].clone();
    // The listen request is the session's own: not a caller's pending request,
    // and no deadline.
    assert_eq!(h.session.pending_requests(), 0);
    assert_eq!(h.session.poll_timeout(), None);

    // An acknowledgement of another subscription is not ours.
    h.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 999}, "notifications": {}}}),
    );
    assert!(h.events().is_empty());
    h.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id},
                   "notifications": {"toolsListChanged": true}}}),
    );
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Diagnostic(Diagnostic::SubscriptionNarrowed { acknowledged, .. })] if acknowledged.prompts_list_changed.is_none()),
        "{events:?}"
    );
    h.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id}}}),
    );
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Notification(n)] if n.method == "notifications/tools/list_changed"),
        "{events:?}"
    );

    // An abrupt end (the stream broke): reopened after 1 s, then 2 s.
    let id: RequestId = serde_json::from_value(listen_id.clone()).unwrap();
    assert!(h.session.fail_request(h.now, &id, "stream broke"));
    assert!(h.events().is_empty());
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + Duration::from_secs(1))
    );
    h.advance(Duration::from_millis(999));
    assert_eq!(h.sent(), Vec::<Value>::new());
    h.advance(Duration::from_millis(1));
    let again = h.sent();
    assert_eq!(again[0]["method"], "subscriptions/listen");
    assert_ne!(again[0]["id"], listen_id);
    let id: RequestId = serde_json::from_value(again[0]["id"].clone()).unwrap();
    assert!(h.session.fail_request(h.now, &id, "stream broke"));
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + Duration::from_secs(2))
    );
    h.advance(Duration::from_secs(2));
    let third = h.sent();
    assert_eq!(third[0]["method"], "subscriptions/listen");

    // A graceful end is final.
    h.recv(
        json!({"jsonrpc": "2.0", "id": third[0]["id"], "result": {"resultType": "complete",
        "_meta": {"io.modelcontextprotocol/subscriptionId": third[0]["id"]}}}),
    );
    assert!(h.events().is_empty());
    h.advance(Duration::from_secs(60));
    assert_eq!(h.sent(), Vec::<Value>::new());
    assert_eq!(h.session.poll_timeout(), None);
}

#[test]
fn a_refused_listen_is_not_retried_and_close_completes_nothing_of_it() {
    let mut h = modern(json!({"tools": {"listChanged": true}}));
    let sent = h.sent();
    h.recv(
        json!({"jsonrpc": "2.0", "id": sent[0]["id"], "error": {"code": -32601, "message": "no"}}),
    );
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [Event::Diagnostic(Diagnostic::SubscriptionRefused(_))]
        ),
        "{events:?}"
    );
    h.advance(Duration::from_secs(60));
    assert_eq!(h.sent(), Vec::<Value>::new());

    let mut h = modern(json!({"tools": {"listChanged": true}}));
    h.sent();
    h.session.handle_close();
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [Event::Closed(CloseReason::TransportClosed)]
        ),
        "{events:?}"
    );
}

#[test]
fn resource_subscriptions_ride_on_listen_in_the_stateless_era() {
    let mut h = modern(json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}}));
    let first = h.sent();
    assert_eq!(first[0]["method"], "subscriptions/listen");

    // Subscribing answers at once and opens the listen again, the URI in
    // its filter; the old one is cancelled.
    let handle = h.request("resources/subscribe", json!({"uri": "test://a"}));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Completed { handle: done, outcome: Ok(raw) }] if *done == handle && raw.get() == "{}"),
        "{events:?}"
    );
    let sent = h.sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0]["method"], "notifications/cancelled");
    assert_eq!(sent[0]["params"]["requestId"], first[0]["id"]);
    assert_eq!(sent[1]["method"], "subscriptions/listen");
    assert_eq!(
        sent[1]["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})
    );
    let listen_id = sent[1]["id"].clone();

    // An update on it comes out as a notification; an acknowledgement
    // without the URI is a narrowed subscription.
    h.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id},
                   "notifications": {"toolsListChanged": true}}}),
    );
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [Event::Diagnostic(Diagnostic::SubscriptionNarrowed { .. })]
        ),
        "{events:?}"
    );
    h.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
        "params": {"uri": "test://a", "_meta": {"io.modelcontextprotocol/subscriptionId": listen_id}}}),
    );
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Notification(n)] if n.method == "notifications/resources/updated"),
        "{events:?}"
    );

    // The same URI again changes nothing; unsubscribing reopens without it.
    h.request("resources/subscribe", json!({"uri": "test://a"}));
    h.events();
    assert_eq!(h.sent(), Vec::<Value>::new());
    h.request("resources/unsubscribe", json!({"uri": "test://a"}));
    h.events();
    let sent = h.sent();
    assert_eq!(
        sent[1]["params"]["notifications"],
        json!({"toolsListChanged": true})
    );

    // A server with no list changes: the listen exists for the URI alone
    // and closes with its last one.
    let mut h = modern(json!({"resources": {"subscribe": true}}));
    assert_eq!(h.sent(), Vec::<Value>::new());
    h.request("resources/subscribe", json!({"uri": "test://b"}));
    h.events();
    let sent = h.sent();
    assert_eq!(
        sent[0]["params"]["notifications"],
        json!({"resourceSubscriptions": ["test://b"]})
    );
    h.request("resources/unsubscribe", json!({"uri": "test://b"}));
    h.events();
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "notifications/cancelled");
}

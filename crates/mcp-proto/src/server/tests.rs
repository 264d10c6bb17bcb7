//! Deterministic tests of every server session rule, against a scripted client on a virtual clock.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::types::{ListChangedCapability, RootsCapability};

/// A server session plus a virtual clock and a scripted client's view of the wire.
struct Harness {
    server: ServerSession,
    now: Instant,
}

/// Options with tools declared, the usual server under test.
fn tools_options() -> ServerOptions {
    ServerOptions::default().capabilities(ServerCapabilities {
        tools: Some(ListChangedCapability::default()),
        ..ServerCapabilities::default()
    })
}

/// The stateless era's `_meta` envelope of a request.
fn modern_meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
    })
}

fn initialize(id: i64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "test-client", "version": "1.0"},
    }})
}

fn call(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo"}})
}

impl Harness {
    fn new(options: ServerOptions) -> Self {
        Harness {
            server: ServerSession::new(options),
            now: Instant::now(),
        }
    }

    /// A session whose handshake finished at `version`, with the wire and
    /// the events drained.
    fn ready(options: ServerOptions, version: &str) -> Self {
        let mut h = Harness::new(options);
        h.recv(initialize(0, version));
        h.recv(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(h.server.state(), ServerState::Ready);
        h.sent();
        h.events();
        h
    }

    fn recv(&mut self, message: Value) {
        let bytes = serde_json::to_vec(&message).unwrap();
        self.server.handle_bytes(self.now, &bytes);
    }

    fn recv_text(&mut self, text: &str) {
        self.server.handle_bytes(self.now, text.as_bytes());
    }

    fn sent(&mut self) -> Vec<Value> {
        std::iter::from_fn(|| self.server.poll_transmit())
            .map(|frame| serde_json::from_slice(&frame_bytes(&frame)).unwrap())
            .collect()
    }

    fn events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.server.poll_event()).collect()
    }

    /// The one request event queued, with nothing else.
    fn request(&mut self) -> ClientRequest {
        let mut events = self.events();
        match (events.pop(), events.is_empty()) {
            (Some(Event::Request(request)), true) => request,
            other => panic!("expected one request event, got {other:?} after {events:?}"),
        }
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.server.handle_timeout(self.now);
    }
}

fn frame_bytes(frame: &Frame) -> Vec<u8> {
    let mut out = Vec::new();
    crate::codec::ndjson::encode_frame(frame, &mut out)
        .expect("a frame of the session has a one-line form");
    out
}

fn error_code(message: &Value) -> i64 {
    message["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {message}"))
}

// --- the handshake era -------------------------------------------------------

#[test]
fn initialize_echoes_a_supported_version_and_reports_the_client() {
    let mut h = Harness::new(tools_options().instructions(Some("be brief".to_owned())));
    h.recv(initialize(1, "2025-06-18"));
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["id"], 1);
    assert_eq!(sent[0]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(sent[0]["result"]["serverInfo"]["name"], "mcp-proto");
    assert_eq!(sent[0]["result"]["instructions"], "be brief");
    assert!(sent[0]["result"]["capabilities"]["tools"].is_object());
    let events = h.events();
    let [Event::Initialized(handshake)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert_eq!(handshake.version, ProtocolVersion::V2025_06_18);
    assert_eq!(handshake.client_info.name, "test-client");
    assert!(handshake.client_capabilities.roots.is_some());
    assert_eq!(h.server.state(), ServerState::Initialized);
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert!(matches!(h.events().as_slice(), [Event::Ready]));
    assert_eq!(h.server.state(), ServerState::Ready);
}

#[test]
fn an_unknown_or_unoffered_version_is_answered_with_the_newest_offered() {
    let mut h = Harness::new(ServerOptions::default());
    h.recv(initialize(1, "1999-01-01"));
    assert_eq!(h.sent()[0]["result"]["protocolVersion"], "2025-11-25");

    let older = ServerOptions::default().versions(vec![
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ]);
    let mut h = Harness::new(older);
    h.recv(initialize(1, "2025-11-25"));
    assert_eq!(h.sent()[0]["result"]["protocolVersion"], "2025-03-26");
    // The stateless version is never chosen by the handshake.
    let mut h = Harness::new(ServerOptions::default());
    h.recv(initialize(1, "2026-07-28"));
    assert_eq!(h.sent()[0]["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn a_second_initialize_and_bad_initialize_params_are_refused() {
    let mut h = Harness::ready(ServerOptions::default(), "2025-11-25");
    h.recv(initialize(5, "2025-11-25"));
    let sent = h.sent();
    assert_eq!(
        (sent[0]["id"].clone(), error_code(&sent[0])),
        (json!(5), -32600)
    );
    assert!(h.events().is_empty());

    let mut h = Harness::new(ServerOptions::default());
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 7}}));
    assert_eq!(error_code(&h.sent()[0]), -32602);
    assert_eq!(h.server.state(), ServerState::Idle);
    h.recv(json!({"jsonrpc": "2.0", "id": 2, "method": "initialize"}));
    assert_eq!(error_code(&h.sent()[0]), -32602);
}

#[test]
fn a_modern_only_server_refuses_initialize_naming_both_versions() {
    let options = ServerOptions::default().versions(vec![ProtocolVersion::V2026_07_28]);
    let mut h = Harness::new(options);
    h.recv(initialize(1, "2025-11-25"));
    let sent = h.sent();
    assert_eq!(error_code(&sent[0]), -32022);
    let message = sent[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("2025-11-25") && message.contains("2026-07-28"),
        "{message}"
    );
    assert_eq!(sent[0]["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(sent[0]["error"]["data"]["requested"], "2025-11-25");
    // And a request without the envelope is told what is missing.
    h.recv(call(2));
    let sent = h.sent();
    assert_eq!(error_code(&sent[0]), -32602);
    assert!(
        sent[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protocolVersion")
    );
}

#[test]
fn before_initialize_only_ping_is_answered() {
    let mut h = Harness::new(tools_options());
    h.recv(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}));
    h.recv(call(1));
    let sent = h.sent();
    assert_eq!(sent[0], json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    assert_eq!(error_code(&sent[1]), -32600);
    assert!(
        sent[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/call before initialize")
    );
    assert!(h.events().is_empty());
    // A very long method name is bounded in the refusal.
    let method = "x".repeat(10_000);
    h.recv(json!({"jsonrpc": "2.0", "id": 2, "method": method}));
    let message = h.sent()[0]["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.len() < 200, "{}", message.len());
    assert!(message.contains("more bytes]"), "{message}");
}

#[test]
fn server_requests_wait_for_initialized_and_the_clients_capabilities() {
    let mut h = Harness::new(ServerOptions::default());
    assert!(matches!(
        h.server.request::<()>(methods::ROOTS_LIST, None, None),
        Err(ServerError::NotReady { .. })
    ));
    h.recv(initialize(0, "2025-11-25"));
    assert!(matches!(
        h.server.request::<()>(methods::ROOTS_LIST, None, None),
        Err(ServerError::NotReady { .. })
    ));
    // Ping may go before `notifications/initialized`.
    assert!(h.server.request::<()>(methods::PING, None, None).is_ok());
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert!(
        h.server
            .request::<()>(methods::ROOTS_LIST, None, None)
            .is_ok()
    );
    assert!(matches!(
        h.server
            .request::<()>(methods::SAMPLING_CREATE_MESSAGE, None, None),
        Err(ServerError::CapabilityNotDeclared {
            capability: "sampling",
            ..
        })
    ));
    assert!(matches!(
        h.server.request::<()>(methods::INITIALIZE, None, None),
        Err(ServerError::Reserved { .. })
    ));
}

// --- batches -----------------------------------------------------------------

#[test]
fn batches_are_answered_as_one_batch_only_under_2025_03_26() {
    let mut h = Harness::ready(tools_options(), "2025-03-26");
    h.recv(json!([
        call(1),
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/custom"},
        call(3),
    ]));
    // Nothing goes until every request in it has ended.
    assert!(h.sent().is_empty());
    let events = h.events();
    assert_eq!(events.len(), 3, "{events:?}");
    h.server
        .respond(&RequestId::Number(3), &json!({"n": 3}))
        .unwrap();
    assert!(h.sent().is_empty());
    h.server
        .respond_error(&RequestId::Number(1), ErrorObject::new(-1, "no"))
        .unwrap();
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    let answers = sent[0].as_array().expect("a batch answer");
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, vec![&json!(2), &json!(3), &json!(1)]);

    let mut h = Harness::ready(tools_options(), "2025-11-25");
    h.recv(json!([call(1), call(2)]));
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0]["id"].clone(), error_code(&sent[0])),
        (Value::Null, -32600)
    );
    assert!(
        sent[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2025-11-25")
    );
    assert!(h.events().is_empty());
}

#[test]
fn a_batch_gives_each_bad_member_its_own_error_and_refuses_initialize() {
    let options = tools_options().versions(vec![ProtocolVersion::V2025_03_26]);
    let mut h = Harness::new(options);
    h.recv_text(r#"[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}, 5, {"jsonrpc":"2.0","id":2,"method":"ping"}]"#);
    let sent = h.sent();
    let answers = sent[0].as_array().expect("a batch answer");
    assert_eq!(answers.len(), 3);
    assert_eq!(
        (answers[0]["id"].clone(), error_code(&answers[0])),
        (json!(1), -32600)
    );
    assert_eq!(
        (answers[1]["id"].clone(), error_code(&answers[1])),
        (Value::Null, -32600)
    );
    assert_eq!(answers[2]["result"], json!({}));
    assert_eq!(h.server.state(), ServerState::Idle);

    h.recv_text("[]");
    assert_eq!(error_code(&h.sent()[0]), -32600);
    // A batch of notifications and responses needs no answer at all.
    h.recv(json!([{"jsonrpc": "2.0", "method": "notifications/custom"}]));
    assert!(h.sent().is_empty());
}

#[test]
fn a_cancelled_member_leaves_the_batch_answer() {
    let mut h = Harness::ready(tools_options(), "2025-03-26");
    h.recv(json!([call(1), call(2)]));
    h.events();
    h.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    );
    assert!(h.sent().is_empty());
    h.server.respond(&RequestId::Number(2), &json!({})).unwrap();
    let sent = h.sent();
    assert_eq!(
        sent,
        vec![json!([{"jsonrpc": "2.0", "id": 2, "result": {}}])]
    );
}

// --- the stateless era -------------------------------------------------------

#[test]
fn server_discover_is_answered_from_the_options() {
    let mut h = Harness::new(tools_options().instructions(Some("hi".to_owned())));
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": modern_meta("2026-07-28")}}));
    let sent = h.sent();
    let result = &sent[0]["result"];
    assert_eq!(result["supportedVersions"][0], "2026-07-28");
    assert_eq!(result["supportedVersions"].as_array().unwrap().len(), 5);
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(result["instructions"], "hi");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-proto"
    );
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    assert!(h.events().is_empty());

    // The caching fields the options give are kept.
    let cached = tools_options()
        .discover_ttl_ms(60_000)
        .discover_cache_scope(crate::types::CacheScope::Public);
    let mut h = Harness::new(cached);
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": modern_meta("2026-07-28")}}));
    let sent = h.sent();
    assert_eq!(sent[0]["result"]["ttlMs"], 60_000);
    assert_eq!(sent[0]["result"]["cacheScope"], "public");

    // A server of the handshake era only does not know the method.
    let legacy = ServerOptions::default().versions(ProtocolVersion::HANDSHAKE.to_vec());
    let mut h = Harness::new(legacy);
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": modern_meta("2026-07-28")}}));
    assert_eq!(error_code(&h.sent()[0]), -32022);
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}));
    assert_eq!(error_code(&h.sent()[0]), -32601);
}

#[test]
fn a_stateless_request_carries_its_client_and_version() {
    let mut h = Harness::new(tools_options());
    let mut meta = modern_meta("2026-07-28");
    meta["progressToken"] = json!("tok");
    h.recv(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "echo", "_meta": meta}}));
    let request = h.request();
    assert_eq!(request.version, ProtocolVersion::V2026_07_28);
    assert_eq!(request.era(), Era::Modern);
    assert_eq!(
        request.progress_token,
        Some(RequestId::String("tok".to_owned()))
    );
    let client = request.client.expect("the request's client");
    assert_eq!(client.info.expect("client info").name, "probe");
    assert!(client.capabilities.roots.is_some());
    // The server sends no requests to a stateless client.
    assert!(matches!(
        h.server.request::<()>(methods::ROOTS_LIST, None, None),
        Err(ServerError::NotInEra { .. })
    ));
    assert_eq!(h.server.state(), ServerState::Idle);
    // Batches do not exist in the stateless era.
    h.recv(json!([call(1)]));
    assert_eq!(error_code(&h.sent()[0]), -32600);
}

#[test]
fn a_stateless_envelope_reads_the_same_however_its_keys_are_written() {
    // Spelt out (read by the structural scanner), with escaped keys (read
    // by serde), with whitespace, and with members the session does not
    // read around it: the same version, client and progress token.
    let texts = [
        r#"{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"probe","version":"1"},"progressToken":7}}"#,
        r#"{"name":"echo","\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"probe","version":"1"},"progressToken":7}}"#,
        r#"{"_meta":{"io.modelcontextprotocol/client\u0049nfo":{"name":"probe","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-\u00307-28","progressToken":7,"io.modelcontextprotocol/clientCapabilities":{"roots":{}}},"name":"echo"}"#,
        r#" { "arguments" : {"_meta": 1} , "_meta" : { "other" : [ "x" ] , "io.modelcontextprotocol/protocolVersion" : "2026-07-28" , "progressToken" : 7 , "io.modelcontextprotocol/clientInfo" : {"name":"probe","version":"1"} , "io.modelcontextprotocol/clientCapabilities" : { "roots" : { } } } , "name" : "echo" } "#,
    ];
    for (id, params) in texts.iter().enumerate() {
        let mut h = Harness::new(tools_options());
        h.recv_text(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#
        ));
        let request = h.request();
        assert_eq!(request.version, ProtocolVersion::V2026_07_28, "{params}");
        assert_eq!(
            request.progress_token,
            Some(RequestId::Number(7)),
            "{params}"
        );
        let client = request.client.expect("the request's client");
        assert_eq!(client.info.expect("client info").name, "probe", "{params}");
        assert!(client.capabilities.roots.is_some(), "{params}");
    }
}

#[test]
fn the_client_description_reads_the_same_however_it_is_written() {
    let plain = Implementation::new("probe", "1");
    let titled = Implementation {
        title: Some("Probe".to_owned()),
        ..Implementation::new("probe", "1")
    };
    for (info, expected) in [
        (r#"{"name":"probe","version":"1"}"#, Some(&plain)),
        (r#"{ "version" : "1" , "name" : "probe" }"#, Some(&plain)),
        (r#"{"name":"pro\u0062e","version":"1"}"#, Some(&plain)),
        (r#"{"n\u0061me":"probe","version":"1"}"#, Some(&plain)),
        (
            r#"{"name":"probe","version":"1","title":"Probe"}"#,
            Some(&titled),
        ),
        (r#"{"name":"probe"}"#, None),
        (r#"{"name":"probe","version":1}"#, None),
        (r#""probe""#, None),
    ] {
        let mut h = Harness::new(tools_options());
        h.recv_text(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{info}}}}}}}"#
        ));
        let client = h.request().client.expect("the request's client");
        assert_eq!(client.info.as_ref(), expected, "{info}");
    }
}

#[test]
fn a_repeated_envelope_member_leaves_the_request_in_the_handshake_era() {
    // Which of two values a reader takes is its own choice: the session
    // takes neither, and the request is read as one without `_meta`.
    let repeated = [
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"_meta":{}}"#,
    ];
    for params in repeated {
        let mut h = Harness::ready(tools_options(), "2025-11-25");
        h.recv_text(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#
        ));
        let request = h.request();
        assert_eq!(request.version, ProtocolVersion::V2025_11_25, "{params}");
        assert!(request.client.is_none(), "{params}");
    }
}

#[test]
fn declared_capabilities_are_read_and_none_are_the_default() {
    for (capabilities, roots) in [("{}", false), ("{ }", false), (r#"{"roots":{}}"#, true)] {
        let mut h = Harness::new(tools_options());
        h.recv_text(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{capabilities}}}}}}}"#
        ));
        let client = h.request().client.expect("the request's client");
        assert_eq!(client.capabilities.roots.is_some(), roots, "{capabilities}");
        if !roots {
            assert_eq!(client.capabilities, ClientCapabilities::default());
        }
        assert!(client.info.is_none());
    }
}

#[test]
fn an_encoded_result_is_sent_as_it_is_and_only_while_its_request_waits() {
    let mut h = Harness::new(tools_options());
    h.recv(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "_meta": modern_meta("2026-07-28")}}));
    let request = h.request();
    let text = r#"{"content":[{"type":"text","text":"hi \u00e9"}],"resultType":"complete"}"#;
    let result = RawJson::from_text(text).unwrap();
    h.server.respond_raw(&request.id, result.clone()).unwrap();
    let mut wire = Vec::new();
    while let Some(frame) = h.server.poll_transmit() {
        wire.extend(frame_bytes(&frame));
    }
    let wire = String::from_utf8(wire).unwrap();
    assert_eq!(
        wire,
        format!("{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{text}}}\n")
    );
    // Answered already: refused, nothing sent.
    assert!(matches!(
        h.server.respond_raw(&request.id, result),
        Err(ServerError::UnknownRequest { .. })
    ));
    assert!(h.sent().is_empty());
}

#[test]
fn a_stateless_request_with_an_unknown_version_is_refused_naming_both() {
    let mut h = Harness::new(tools_options());
    let long = format!("2099-{}", "9".repeat(500));
    for version in ["2099-01-01", "2025-11-25", long.as_str()] {
        h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": modern_meta(version)}}));
        let sent = h.sent();
        assert_eq!(error_code(&sent[0]), -32022, "{version}");
        let message = sent[0]["error"]["message"].as_str().unwrap();
        assert!(message.contains("2026-07-28"), "{message}");
        assert!(message.len() < 300, "{}", message.len());
        let requested = sent[0]["error"]["data"]["requested"].as_str().unwrap();
        assert!(requested.starts_with("2099-") || requested == "2025-11-25");
        assert!(requested.len() <= text::NAME_LIMIT + 32, "{requested}");
        assert!(
            sent[0]["error"]["data"]["supported"]
                .as_array()
                .unwrap()
                .contains(&json!("2026-07-28"))
        );
    }
    assert!(h.events().is_empty());
}

#[test]
fn a_stateless_request_needs_client_capabilities_and_a_method_of_its_era() {
    let mut h = Harness::new(tools_options());
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}));
    assert_eq!(error_code(&h.sent()[0]), -32602);
    for method in [
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "initialize",
    ] {
        h.recv(json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {"_meta": modern_meta("2026-07-28")}}));
        let sent = h.sent();
        assert_eq!(
            error_code(&sent[0]),
            if method == "initialize" {
                -32602
            } else {
                -32601
            },
            "{method}"
        );
    }
    assert!(h.events().is_empty());
}

// --- requests end exactly once -----------------------------------------------

#[test]
fn a_request_is_answered_once_and_a_second_answer_is_refused() {
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    h.recv(call(7));
    let request = h.request();
    assert_eq!(request.method, "tools/call");
    assert_eq!(request.version, ProtocolVersion::V2025_11_25);
    assert!(request.client.is_none());
    assert_eq!(h.server.in_flight(), 1);
    h.server
        .respond(&request.id, &json!({"content": []}))
        .unwrap();
    assert!(matches!(
        h.server.respond(&request.id, &json!({})),
        Err(ServerError::UnknownRequest { .. })
    ));
    assert!(matches!(
        h.server
            .respond_error(&request.id, ErrorObject::new(-1, "x")),
        Err(ServerError::UnknownRequest { .. })
    ));
    assert_eq!(
        h.sent(),
        vec![json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}})]
    );
    assert_eq!(h.server.in_flight(), 0);
}

#[test]
fn an_answers_error_text_is_bounded() {
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    h.recv(call(1));
    h.events();
    let long = "é".repeat(10_000);
    h.server
        .respond_error(&RequestId::Number(1), ErrorObject::new(-32000, long))
        .unwrap();
    let message = h.sent()[0]["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.len() <= text::ERROR_TEXT_LIMIT + 32,
        "{}",
        message.len()
    );
    assert!(message.ends_with("more bytes]"), "{message}");
}

#[test]
fn the_clients_cancel_ends_the_request_and_suppresses_its_answer() {
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    h.recv(call(1));
    h.events();
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "user"}}));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Cancelled { id: RequestId::Number(1), reason: Cancellation::ByClient(Some(r)) }] if r == "user"),
        "{events:?}"
    );
    assert!(matches!(
        h.server.respond(&RequestId::Number(1), &json!({})),
        Err(ServerError::UnknownRequest { .. })
    ));
    assert!(h.sent().is_empty());
    // A cancel for nothing, or a malformed one, is ignored.
    h.recv(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}),
    );
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}));
    assert!(h.events().is_empty());
    assert!(h.sent().is_empty());
}

#[test]
fn a_reused_id_in_flight_is_dropped_with_a_diagnostic() {
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    h.recv(call(1));
    h.recv(call(1));
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [
                Event::Request(_),
                Event::Diagnostic(Diagnostic::DuplicateRequestId(RequestId::Number(1)))
            ]
        ),
        "{events:?}"
    );
    assert!(h.sent().is_empty());
}

// --- server-to-client requests -----------------------------------------------

#[test]
fn server_requests_have_their_own_ids_and_their_answers_come_back() {
    let mut h = Harness::ready(ServerOptions::default(), "2025-11-25");
    let first = h
        .server
        .request::<()>(methods::ROOTS_LIST, None, None)
        .unwrap();
    let second = h
        .server
        .request(methods::PING, Some(&json!({})), None)
        .unwrap();
    assert_ne!(first, second);
    let sent = h.sent();
    assert_eq!(
        sent[0],
        json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"})
    );
    assert_eq!(sent[1]["id"], 1);
    assert_eq!(h.server.pending_requests(), 2);
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}));
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "result": {"roots": []}}));
    let events = h.events();
    match events.as_slice() {
        [
            Event::Completed {
                handle: a,
                outcome: Err(RequestError::Rpc(error)),
            },
            Event::Completed {
                handle: b,
                outcome: Ok(result),
            },
        ] => {
            assert_eq!((*a, *b), (second, first));
            assert_eq!(error.code, -32601);
            assert_eq!(result.get(), r#"{"roots":[]}"#);
        }
        other => panic!("{other:?}"),
    }
    // An id the server never used is the client's mistake; a repeat is late.
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "result": {}}));
    h.recv(json!({"jsonrpc": "2.0", "id": "zz", "result": {}}));
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [Event::Diagnostic(Diagnostic::UnknownResponseId(
                RequestId::String(_)
            ))]
        ),
        "{events:?}"
    );
}

#[test]
fn the_server_cancels_its_own_request_and_drops_the_late_answer() {
    let mut h = Harness::ready(ServerOptions::default(), "2025-11-25");
    let handle = h
        .server
        .request::<()>(methods::ROOTS_LIST, None, None)
        .unwrap();
    h.sent();
    assert!(h.server.cancel(handle, Some("changed my mind")));
    assert!(!h.server.cancel(handle, None));
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "notifications/cancelled");
    assert_eq!(
        sent[0]["params"],
        json!({"requestId": 0, "reason": "changed my mind"})
    );
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [Event::Completed {
                outcome: Err(RequestError::Cancelled),
                ..
            }]
        ),
        "{events:?}"
    );
    h.recv(json!({"jsonrpc": "2.0", "id": 0, "result": {"roots": []}}));
    assert!(h.events().is_empty());
}

#[test]
fn a_server_request_times_out_at_its_deadline() {
    let mut h = Harness::ready(ServerOptions::default(), "2025-11-25");
    let deadline = h.now + Duration::from_secs(5);
    let handle = h
        .server
        .request::<()>(methods::ROOTS_LIST, None, Some(deadline))
        .unwrap();
    let later = h
        .server
        .request::<()>(methods::PING, None, Some(deadline + Duration::from_secs(5)))
        .unwrap();
    h.sent();
    assert_eq!(h.server.poll_timeout(), Some(deadline));
    h.advance(Duration::from_millis(4_999));
    assert!(h.events().is_empty());
    h.advance(Duration::from_millis(1));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Completed { handle: done, outcome: Err(RequestError::Timeout) }] if *done == handle),
        "{events:?}"
    );
    assert_eq!(h.sent()[0]["params"]["requestId"], 0);
    assert_eq!(
        h.server.poll_timeout(),
        Some(deadline + Duration::from_secs(5))
    );
    // An answer that arrives after its deadline counts as late, even when
    // the caller did not call `handle_timeout` first.
    h.now += Duration::from_secs(6);
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Completed { handle: done, outcome: Err(RequestError::Timeout) }] if *done == later),
        "{events:?}"
    );
    assert_eq!(h.server.poll_timeout(), None);
}

// --- progress ----------------------------------------------------------------

#[test]
fn progress_goes_out_with_the_requests_token_and_comes_back_by_token() {
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": {"progressToken": 42}}}));
    h.recv(call(2));
    h.events();
    h.server
        .progress(&RequestId::Number(1), 0.5, Some(1.0), Some("half"))
        .unwrap();
    assert!(matches!(
        h.server.progress(&RequestId::Number(2), 0.5, None, None),
        Err(ServerError::NoProgressToken { .. })
    ));
    assert!(matches!(
        h.server.progress(&RequestId::Number(3), 0.5, None, None),
        Err(ServerError::UnknownRequest { .. })
    ));
    let sent = h.sent();
    assert_eq!(
        sent,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 42, "progress": 0.5, "total": 1.0, "message": "half"}})
        ]
    );

    let handle = h
        .server
        .request(
            methods::ROOTS_LIST,
            Some(&json!({"_meta": {"progressToken": "p"}})),
            None,
        )
        .unwrap();
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}));
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "other", "progress": 1}}));
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "bad"}}));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Progress { handle: h1, .. }, Event::Diagnostic(Diagnostic::MalformedParams { .. })] if *h1 == handle),
        "{events:?}"
    );
}

// --- bounds --------------------------------------------------------------------

#[test]
fn an_oversized_frame_is_refused_and_the_connection_goes_on() {
    let mut h = Harness::ready(tools_options().max_message_size(256), "2025-11-25");
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x".repeat(300)}});
    h.recv(big);
    let sent = h.sent();
    assert_eq!(
        (sent[0]["id"].clone(), error_code(&sent[0])),
        (Value::Null, -32600)
    );
    assert!(
        sent[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 256 bytes")
    );
    assert!(h.events().is_empty());
    h.recv(call(2));
    assert_eq!(h.request().id, RequestId::Number(2));
}

#[test]
fn requests_beyond_the_in_flight_cap_are_refused_until_one_ends() {
    let mut h = Harness::ready(tools_options().max_in_flight(2), "2025-11-25");
    h.recv(call(1));
    h.recv(call(2));
    h.recv(call(3));
    assert_eq!(h.events().len(), 2);
    let sent = h.sent();
    assert_eq!(
        (sent[0]["id"].clone(), error_code(&sent[0])),
        (json!(3), -32603)
    );
    h.server.respond(&RequestId::Number(1), &json!({})).unwrap();
    h.sent();
    h.recv(call(4));
    assert_eq!(h.request().id, RequestId::Number(4));
    // Ping is answered by the session and needs no slot.
    h.recv(json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}));
    assert_eq!(h.sent()[0]["result"], json!({}));
}

#[test]
fn unknown_and_undeclared_methods_are_method_not_found_with_a_bounded_name() {
    let options = tools_options().extra_methods(vec!["acme/reindex".to_owned()]);
    let mut h = Harness::ready(options, "2025-11-25");
    let long = format!("nope/{}", "\u{202e}x".repeat(5_000));
    h.recv(json!({"jsonrpc": "2.0", "id": 1, "method": long}));
    h.recv(json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/list"}));
    h.recv(json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen"}));
    let sent = h.sent();
    for answer in &sent {
        assert_eq!(error_code(answer), -32601, "{answer}");
    }
    let message = sent[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.len() < 200 && !message.contains('\u{202e}'),
        "{message}"
    );
    assert!(h.events().is_empty());
    h.recv(json!({"jsonrpc": "2.0", "id": 4, "method": "acme/reindex"}));
    assert_eq!(h.request().method, "acme/reindex");
}

#[test]
fn text_that_is_not_a_message_is_answered_as_json_rpc_asks() {
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    for (text, code) in [
        ("{", -32700),
        ("not json", -32700),
        ("[1,", -32700),
        (r#"{"jsonrpc":"2.0","method":1}"#, -32600),
        (r#""just a string""#, -32600),
        (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, -32600),
    ] {
        h.recv_text(text);
        let sent = h.sent();
        assert_eq!(sent.len(), 1, "{text}");
        assert_eq!(
            (sent[0]["id"].clone(), error_code(&sent[0])),
            (Value::Null, code),
            "{text}"
        );
    }
    assert!(h.events().is_empty());
    h.recv(call(1));
    assert_eq!(h.request().id, RequestId::Number(1));
}

#[test]
fn a_line_the_decoder_refused_is_answered_with_its_error_and_a_null_id() {
    let mut decoder = crate::codec::ndjson::NdjsonDecoder::with_max_message_size(16);
    decoder.push(b"not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    while let Some(item) = decoder.next_frame() {
        match item {
            Ok(frame) => h.server.handle_frame(h.now, frame),
            Err(error) => h.server.handle_undecodable(error.to_error_object()),
        }
    }
    let sent = h.sent();
    let codes: Vec<(Value, i64)> = sent
        .iter()
        .map(|m| (m["id"].clone(), error_code(m)))
        .collect();
    assert_eq!(codes, vec![(Value::Null, -32700), (Value::Null, -32600)]);
    h.server
        .handle_undecodable(ErrorObject::new(-32700, "y".repeat(5_000)));
    let message = h.sent()[0]["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.len() <= text::ERROR_TEXT_LIMIT + 32,
        "{}",
        message.len()
    );
}

// --- closing -------------------------------------------------------------------

#[test]
fn closing_ends_every_request_of_both_sides_once() {
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    h.recv(call(1));
    let handle = h
        .server
        .request::<()>(methods::ROOTS_LIST, None, None)
        .unwrap();
    h.events();
    h.server.handle_close();
    h.server.close();
    let events = h.events();
    assert!(
        matches!(
            events.as_slice(),
            [
                Event::Completed { handle: done, outcome: Err(RequestError::Closed) },
                Event::Cancelled { id: RequestId::Number(1), reason: Cancellation::Closed },
                Event::Closed(CloseReason::TransportClosed),
            ] if *done == handle
        ),
        "{events:?}"
    );
    assert!(h.sent().is_empty());
    assert!(matches!(
        h.server.respond(&RequestId::Number(1), &json!({})),
        Err(ServerError::UnknownRequest { .. })
    ));
    assert!(matches!(
        h.server.notify::<()>("notifications/x", None),
        Err(ServerError::Closed)
    ));
    assert!(matches!(
        h.server.request::<()>(methods::PING, None, None),
        Err(ServerError::Closed)
    ));
    h.recv(call(2));
    assert!(h.events().is_empty() && h.sent().is_empty());
}

#[test]
fn notifications_the_session_does_not_handle_reach_the_application() {
    let mut h = Harness::ready(ServerOptions::default(), "2025-11-25");
    h.recv(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    let events = h.events();
    assert!(
        matches!(events.as_slice(), [Event::Notification(n)] if n.method == "notifications/roots/list_changed"),
        "{events:?}"
    );
    h.server
        .notify("notifications/tools/list_changed", None::<&()>)
        .unwrap();
    assert!(matches!(
        h.server.notify::<()>("notifications/cancelled", None),
        Err(ServerError::Reserved { .. })
    ));
    assert_eq!(
        h.sent(),
        vec![json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]
    );
    // The client's capabilities from initialize gate the server's requests.
    let caps = h.server.handshake().unwrap().client_capabilities.clone();
    assert_eq!(
        caps.roots,
        Some(RootsCapability {
            list_changed: Some(true),
            ..RootsCapability::default()
        })
    );
}

proptest! {
    /// No bytes a client sends panic the session, and whatever it answers
    /// is one valid JSON-RPC frame.
    #[test]
    fn no_bytes_panic_the_session(
        lines in proptest::collection::vec(
            prop_oneof![
                any::<Vec<u8>>(),
                "[\\[\\]{}\",:0-9a-z _/]{0,40}".prop_map(String::into_bytes),
            ],
            1..8,
        ),
    ) {
        let mut h = Harness::new(tools_options());
        h.recv(initialize(0, "2025-03-26"));
        for line in &lines {
            h.server.handle_bytes(h.now, line);
            while let Some(frame) = h.server.poll_transmit() {
                let bytes = frame_bytes(&frame);
                prop_assert!(Frame::from_slice(&bytes).is_ok());
            }
            while let Some(event) = h.server.poll_event() {
                if let Event::Request(request) = event {
                    h.server.respond(&request.id, &json!({})).unwrap();
                }
            }
        }
    }
}

// --- options for servers that answer more themselves --------------------------

#[test]
fn discover_goes_to_the_application_when_the_session_does_not_answer_it() {
    let mut h = Harness::new(tools_options().answer_discover(false));
    h.recv(
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                  "params": {"_meta": modern_meta("2026-07-28")}}),
    );
    assert!(h.sent().is_empty());
    let request = h.request();
    assert_eq!(request.method, "server/discover");
    assert_eq!(request.era(), Era::Modern);
    assert!(request.client.is_some());
    h.server
        .respond(&request.id, &json!({"late": true}))
        .unwrap();
    assert_eq!(h.sent()[0]["result"]["late"], true);

    // The envelope is still the session's: a version it does not offer is -32022.
    h.recv(
        json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover",
                  "params": {"_meta": modern_meta("2099-01-01")}}),
    );
    assert_eq!(
        error_code(&h.sent()[0]),
        error_codes::UNSUPPORTED_PROTOCOL_VERSION
    );
    assert!(h.events().is_empty());

    // A handshake-only server that answers discover itself gets it as it comes.
    let legacy = tools_options()
        .versions(ProtocolVersion::HANDSHAKE.to_vec())
        .answer_discover(false);
    let mut h = Harness::new(legacy);
    h.recv(
        json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover",
                  "params": {"_meta": modern_meta("2026-07-28")}}),
    );
    let request = h.request();
    assert!(request.client.is_none());
    assert_eq!(request.era(), Era::Legacy);
}

#[test]
fn client_capabilities_can_be_left_unchecked_for_server_requests() {
    let mut strict = Harness::ready(tools_options(), "2025-11-25");
    assert!(matches!(
        strict
            .server
            .request::<Value>("elicitation/create", None, None),
        Err(ServerError::CapabilityNotDeclared { .. })
    ));
    let mut lax = Harness::ready(
        tools_options().enforce_client_capabilities(false),
        "2025-11-25",
    );
    let handle = lax
        .server
        .request::<Value>("elicitation/create", None, None)
        .unwrap();
    assert_eq!(lax.sent()[0]["method"], "elicitation/create");
    lax.recv(json!({"jsonrpc": "2.0", "id": handle.id(),
                    "error": {"code": -32601, "message": "method not found"}}));
    assert!(matches!(
        lax.events().as_slice(),
        [Event::Completed {
            outcome: Err(RequestError::Rpc(_)),
            ..
        }]
    ));
}

#[test]
fn a_handshake_only_server_reads_a_passed_on_envelope_in_its_negotiated_version() {
    // An intermediary that passes a stateless client's `_meta` on: once
    // initialized, a server of the handshake era only answers the request
    // in the version it negotiated, with the keys left to the application.
    let options = tools_options().versions(ProtocolVersion::HANDSHAKE.to_vec());
    let mut h = Harness::ready(options, "2025-11-25");
    h.recv(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo", "_meta": modern_meta("2026-07-28")}}));
    let request = h.request();
    assert_eq!(request.version, ProtocolVersion::V2025_11_25);
    assert_eq!(request.era(), Era::Legacy);
    assert!(h.sent().is_empty());

    // A server that speaks both eras still reads it in the era it announces.
    let mut h = Harness::ready(tools_options(), "2025-11-25");
    h.recv(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "_meta": modern_meta("2026-07-28")}}));
    assert_eq!(h.request().version, ProtocolVersion::V2026_07_28);
}

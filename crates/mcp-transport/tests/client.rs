//! The async client over the in-memory transport, against a server the test drives one message at a time: the handshake, calls, the handler of server requests (tool use in sampling among them) and the stateless era's input rounds.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::session::SessionOptions;
use mcp_proto::types::{
    CallToolRequestParams, ClientCapabilities, CreateMessageRequestParams, CreateMessageResult,
    ElicitAction, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ElicitationCompleteNotificationParams, JsonObject, ListRootsResult, Role, Root,
    RootsCapability, SamplingCapability, SamplingContent, SamplingMessageContent, StopReason,
    ToolChoiceMode, ToolUseContent,
};
use mcp_transport::scripted::Peer;
use mcp_transport::{
    CallOptions, Client, ClientError, ClientHandler, ClientOptions, ServerNotification,
};
use serde_json::{Value, json};

async fn connected(options: ClientOptions, capabilities: Value) -> (Client, Peer) {
    let (client_end, server) = Peer::pair();
    let (client, driver) = Client::new(client_end, options);
    tokio::spawn(driver.run());
    let handshake = tokio::spawn({
        let client = client.clone();
        async move { client.initialize().await }
    });
    server.handshake(capabilities).await;
    handshake.await.unwrap().unwrap();
    (client, server)
}

fn tools() -> Value {
    json!({"tools": {"listChanged": true}})
}

#[tokio::test]
async fn handshake_then_list_and_call() {
    let (client, server) = connected(ClientOptions::default(), tools()).await;
    let negotiated = client.negotiated().unwrap();
    assert_eq!(negotiated.server_info().name, "scripted");

    let list = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools(None).await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "tools/list");
    server
        .respond(
            &request,
            json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}}
            ]}),
        )
        .await;
    let list = list.await.unwrap().unwrap();
    assert_eq!(list.tools[0].name, "echo");

    let mut args = JsonObject::new();
    args.insert("text".into(), json!("hi"));
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("echo", Some(args)).await }
    });
    let request = server.next().await;
    assert_eq!(
        request["params"],
        json!({"name": "echo", "arguments": {"text": "hi"}})
    );
    server
        .respond(
            &request,
            json!({
                "content": [{"type": "text", "text": "hi"}], "isError": false
            }),
        )
        .await;
    let result = call.await.unwrap().unwrap();
    assert_eq!(result.is_error, Some(false));
}

#[tokio::test]
async fn many_calls_in_flight_get_their_own_answers() {
    let (client, server) = connected(ClientOptions::default(), tools()).await;
    let calls: Vec<_> = (0..32)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut args = JsonObject::new();
                args.insert("n".into(), json!(i));
                client.call_tool("echo", Some(args)).await
            })
        })
        .collect();
    let mut requests = Vec::new();
    for _ in 0..32 {
        requests.push(server.next().await);
    }
    // Answer in reverse order: routing is by id, not by arrival.
    for request in requests.iter().rev() {
        let n = request["params"]["arguments"]["n"].clone();
        server
            .respond(
                request,
                json!({
                    "content": [], "structuredContent": {"n": n}
                }),
            )
            .await;
    }
    for (i, call) in calls.into_iter().enumerate() {
        let result = call.await.unwrap().unwrap();
        assert_eq!(result.structured_content, Some(json!({"n": i})));
    }
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_hits_the_deadline_and_is_told() {
    let (client, server) = connected(ClientOptions::default(), tools()).await;
    let started = tokio::time::Instant::now();
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .request_raw(
                    "tools/call",
                    Some(&json!({"name": "slow"})),
                    CallOptions::default().timeout(Some(Duration::from_secs(3))),
                )
                .await
        }
    });
    let request = server.next().await;
    let error = call.await.unwrap().unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    let cancel = server.next().await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
}

#[tokio::test]
async fn dropping_a_call_cancels_it_on_the_wire() {
    let (client, server) = connected(ClientOptions::default(), tools()).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("slow", None).await }
    });
    let request = server.next().await;
    call.abort();
    let cancel = server.next().await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    // A late answer harms nothing; the connection still works.
    server.respond(&request, json!({"content": []})).await;
    let ping = tokio::spawn({
        let client = client.clone();
        async move { client.ping().await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "ping");
    server.respond(&request, json!({})).await;
    ping.await.unwrap().unwrap();
}

#[tokio::test]
async fn progress_reaches_the_caller_that_asked() {
    let (client, server) = connected(ClientOptions::default(), tools()).await;
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .request_raw(
                    "tools/call",
                    Some(&json!({"name": "long"})),
                    CallOptions::default().progress(Some(progress_tx)),
                )
                .await
        }
    });
    let request = server.next().await;
    let token = request["params"]["_meta"]["progressToken"].clone();
    assert!(!token.is_null());
    for step in 1..=3 {
        server
            .send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": step, "total": 3}}))
            .await;
    }
    server.respond(&request, json!({"content": []})).await;
    call.await.unwrap().unwrap();
    let mut seen = Vec::new();
    while let Ok(p) = progress_rx.try_recv() {
        seen.push(p.progress);
    }
    assert_eq!(seen, vec![1.0, 2.0, 3.0]);
}

struct Host;

#[async_trait]
impl ClientHandler for Host {
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: vec![Root {
                uri: "file:///work".into(),
                name: Some("work".into()),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        assert_eq!(params.message(), "Your name?");
        let mut result = ElicitResult::new(ElicitAction::Accept);
        let mut content = JsonObject::new();
        content.insert("name".into(), json!("Ada"));
        result.content = Some(content);
        Ok(result)
    }
}

#[tokio::test]
async fn server_requests_go_to_the_handler() {
    let mut options = ClientOptions::default().handler(Some(Arc::new(Host)));
    options.session.capabilities.roots = Some(RootsCapability::default());
    options.session.capabilities.elicitation = Some(ElicitationCapability::default());
    let (_client, server) = connected(options, tools()).await;

    server
        .send(json!({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}))
        .await;
    assert_eq!(
        server.next().await,
        json!({"jsonrpc": "2.0", "id": "r1", "result": {"roots": [{"uri": "file:///work", "name": "work"}]}})
    );

    server
        .send(
            json!({"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": {
                "message": "Your name?",
                "requestedSchema": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "age": {"type": "integer", "default": 30},
                    "subscribe": {"type": "boolean", "default": true}
                }}
            }}),
        )
        .await;
    let answer = server.next().await;
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["result"]["action"], "accept");
    assert_eq!(
        answer["result"]["content"],
        json!({"name": "Ada", "age": 30, "subscribe": true}),
        "omitted fields get their schema defaults"
    );

    // Not declared: refused by the session, whatever the handler could do.
    server
        .send(json!({"jsonrpc": "2.0", "id": 6, "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}))
        .await;
    assert_eq!(server.next().await["error"]["code"], -32601);
}

/// A host that can answer roots and URL-mode elicitation, and says so.
struct Declaring;

#[async_trait]
impl ClientHandler for Declaring {
    fn capabilities(&self) -> ClientCapabilities {
        let url = ElicitationCapability {
            url: Some(JsonObject::new()),
            ..Default::default()
        };
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            elicitation: Some(url),
            ..Default::default()
        }
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Host.list_roots().await
    }
}

#[tokio::test]
async fn a_handler_declares_exactly_what_it_answers() {
    let (client_end, server) = Peer::pair();
    let options = ClientOptions::default().handler(Some(Arc::new(Declaring)));
    let (client, driver) = Client::new(client_end, options);
    tokio::spawn(driver.run());
    let handshake = tokio::spawn({
        let client = client.clone();
        async move { client.initialize().await }
    });
    server.refuse_probe().await;
    let init = server.expect("initialize").await;
    assert_eq!(
        init["params"]["capabilities"],
        json!({"roots": {}, "elicitation": {"url": {}}}),
        "roots and URL elicitation, no sampling"
    );
    server
        .respond(&init, mcp_transport::scripted::initialize_result(tools()))
        .await;
    server.expect("notifications/initialized").await;
    handshake.await.unwrap().unwrap();

    server
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}))
        .await;
    assert_eq!(
        server.next().await["result"]["roots"][0]["uri"],
        "file:///work"
    );
    server
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}))
        .await;
    assert_eq!(
        server.next().await["error"]["code"],
        -32601,
        "sampling was not declared"
    );
}

#[tokio::test]
async fn without_a_handler_declared_requests_get_method_not_found() {
    let mut options = ClientOptions::default();
    options.session.capabilities.roots = Some(RootsCapability::default());
    let (_client, server) = connected(options, tools()).await;
    server
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}))
        .await;
    let answer = server.next().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["code"], -32601);
}

#[tokio::test(start_paused = true)]
async fn a_dead_peer_fails_every_pending_call_at_once() {
    let (client, server) = connected(ClientOptions::default(), tools()).await;
    let started = tokio::time::Instant::now();
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("slow", None).await })
        })
        .collect();
    for _ in 0..5 {
        server.next().await;
    }
    drop(server);
    for call in calls {
        let error = call.await.unwrap().unwrap_err();
        assert!(matches!(error, ClientError::Closed { .. }), "{error:?}");
    }
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "no call waited for its deadline"
    );
    client.wait_closed().await;
    assert!(client.is_closed());
    assert!(matches!(
        client.ping().await,
        Err(ClientError::Closed { .. })
    ));
}

#[tokio::test]
async fn notifications_arrive_on_the_stream_which_ends_on_close() {
    let (client, server) = connected(ClientOptions::default(), tools()).await;
    let mut notifications = client.take_notifications().unwrap();
    assert!(client.take_notifications().is_none());
    server
        .send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        .await;
    server
        .send(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hello"}}))
        .await;
    server
        .send(json!({"jsonrpc": "2.0", "method": "vendor/thing", "params": {"x": 1}}))
        .await;
    assert!(matches!(
        notifications.recv().await,
        Some(ServerNotification::ToolsListChanged)
    ));
    assert!(matches!(
        notifications.recv().await,
        Some(ServerNotification::LogMessage(m)) if m.data == json!("hello")
    ));
    assert!(matches!(
        notifications.recv().await,
        Some(ServerNotification::Other(n)) if n.method == "vendor/thing"
    ));
    client.close().await;
    assert!(notifications.recv().await.is_none());
    assert!(server.closed().await);
}

#[tokio::test]
async fn dropping_every_client_closes_the_connection() {
    let (client, server) = connected(ClientOptions::default(), tools()).await;
    let clone = client.clone();
    drop(client);
    drop(clone);
    assert!(server.closed().await);
}

#[tokio::test]
async fn a_refused_version_fails_the_handshake_and_closes() {
    let (client_end, server) = Peer::pair();
    let connect = tokio::spawn(Client::connect(client_end, ClientOptions::default()));
    let probe = server.next().await;
    server.respond_error(&probe, -32602, "bad").await;
    let init = server.next().await;
    server
        .respond(
            &init,
            json!({
                "protocolVersion": "1999-01-01", "capabilities": {},
                "serverInfo": {"name": "old", "version": "0"}
            }),
        )
        .await;
    let error = connect.await.unwrap().unwrap_err();
    assert!(matches!(error, ClientError::Handshake(..)), "{error:?}");
    assert!(error.to_string().contains("1999-01-01"), "{error}");
    assert!(server.closed().await, "the transport is closed");
}

#[tokio::test]
async fn calls_the_server_did_not_declare_are_refused_locally() {
    let (client, server) = connected(
        ClientOptions::default().session(SessionOptions::default()),
        json!({}),
    )
    .await;
    let error = client.list_tools(None).await.unwrap_err();
    assert!(matches!(error, ClientError::Refused(_)), "{error:?}");
    drop(client);
    assert!(server.closed().await, "nothing was sent before the close");
}

// --- the stateless era (2026-07-28) ----------------------------------------

/// A client connected to a scripted 2026-07-28 server offering `capabilities`.
async fn modern(options: ClientOptions, capabilities: Value) -> (Client, Peer) {
    let (client_end, server) = Peer::pair();
    let (client, driver) = Client::new(client_end, options);
    tokio::spawn(driver.run());
    let connecting = tokio::spawn({
        let client = client.clone();
        async move { client.initialize().await }
    });
    let probe = server.expect("server/discover").await;
    server
        .respond(
            &probe,
            json!({
                "supportedVersions": ["2026-07-28"], "capabilities": capabilities,
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "1"}}
            }),
        )
        .await;
    let negotiated = connecting.await.unwrap().unwrap();
    assert_eq!(negotiated.version.as_str(), "2026-07-28");
    (client, server)
}

/// Answers elicitations with a fixed name, counting them.
struct NameGiver(std::sync::atomic::AtomicUsize);

#[async_trait]
impl ClientHandler for NameGiver {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert!(matches!(params, ElicitRequestParams::Form(_)));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(serde_json::from_value(json!({"name": "Ada"})).unwrap()),
            meta: None,
            extra: JsonObject::new(),
        })
    }
}

#[tokio::test]
async fn input_required_is_answered_through_the_handler_and_retried() {
    let handler = Arc::new(NameGiver(Default::default()));
    let options = ClientOptions::default().handler(Some(handler.clone()));
    let (client, server) = modern(options, json!({"tools": {}})).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("ask_name", None).await }
    });
    let state = "v1.\"quoted\"/é/🙂";
    let ask = |id: &Value, state: Option<&str>| {
        let mut result = json!({"resultType": "input_required", "inputRequests": {
            "who": {"method": "elicitation/create", "params": {"mode": "form", "message": "Name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}});
        if let Some(state) = state {
            result["requestState"] = json!(state);
        }
        json!({"jsonrpc": "2.0", "id": id, "result": result})
    };
    let first = server.next().await;
    assert_eq!(first["method"], "tools/call");
    assert!(first["params"].get("inputResponses").is_none());
    server.send(ask(&first["id"], Some(state))).await;
    let second = server.next().await;
    assert_eq!(second["method"], "tools/call");
    assert_ne!(second["id"], first["id"], "a new id per round");
    assert_eq!(second["params"]["name"], "ask_name");
    assert_eq!(second["params"]["requestState"], state, "echoed exactly");
    assert_eq!(
        second["params"]["inputResponses"]["who"],
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    assert_eq!(
        second["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    // A second round without a state: the retry carries none.
    server.send(ask(&second["id"], None)).await;
    let third = server.next().await;
    assert!(third["params"].get("requestState").is_none(), "{third}");
    // No resultType: complete.
    server
        .respond(
            &third,
            json!({
            "content": [{"type": "text", "text": "hello Ada"}]}),
        )
        .await;
    let result = call.await.unwrap().unwrap();
    assert_eq!(result.content.len(), 1);
    assert_eq!(handler.0.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn input_rounds_are_bounded_and_need_a_handler() {
    let options = ClientOptions::default()
        .handler(Some(Arc::new(NameGiver(Default::default()))))
        .max_input_rounds(2);
    let (client, server) = modern(options, json!({"tools": {}})).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("forever", None).await }
    });
    for _ in 0..3 {
        let request = server.next().await;
        server
            .respond(
                &request,
                json!({
                "resultType": "input_required", "requestState": "again"}),
            )
            .await;
    }
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(error, ClientError::TooManyInputRounds { rounds: 2, .. }),
        "{error:?}"
    );

    let (client, server) = modern(ClientOptions::default(), json!({"tools": {}})).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("ask", None).await }
    });
    let request = server.next().await;
    server
        .respond(
            &request,
            json!({
            "resultType": "input_required", "inputRequests": {"k": {"method": "roots/list"}}}),
        )
        .await;
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(error, ClientError::InputNotGiven { .. }),
        "{error:?}"
    );
}

/// With `return_input_required`, a round goes to the caller with the
/// server's keys and state, the handler untouched; the caller's retry
/// carries its own answers and that state.
#[tokio::test]
async fn a_caller_that_takes_its_input_rounds_gets_the_servers_keys_and_state() {
    let handler = Arc::new(NameGiver(Default::default()));
    let options = ClientOptions::default().handler(Some(handler.clone()));
    let (client, server) = modern(options, json!({"prompts": {}, "tools": {}})).await;
    let taking = CallOptions::default().return_input_required(true);
    let state = "opaque.\"state\"/é";
    let requests = json!({"server-key": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}});
    let call = tokio::spawn({
        let client = client.clone();
        let taking = taking.clone();
        async move {
            let params = CallToolRequestParams::new("ask_name", None);
            client.call_tool_with(&params, taking).await
        }
    });
    let first = server.next().await;
    server
        .respond(
            &first,
            json!({"resultType": "input_required", "inputRequests": requests, "requestState": state}),
        )
        .await;
    let error = call.await.unwrap().unwrap_err();
    let ClientError::InputRequired { method, round } = error else {
        panic!("expected the round, got {error:?}");
    };
    assert_eq!(method, "tools/call");
    assert_eq!(round.request_state.as_deref(), Some(state));
    assert_eq!(
        Value::Object(round.input_requests.clone().unwrap()),
        requests
    );
    assert_eq!(
        handler.0.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the handler was not asked"
    );

    // The caller's retry: its answers under the server's key, the state echoed.
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            let mut params = CallToolRequestParams::new("ask_name", None);
            let answers = json!({"server-key": {"action": "decline"}});
            params.input_responses = Some(serde_json::from_value(answers).unwrap());
            params.request_state = round.request_state;
            client.call_tool_with(&params, taking).await
        }
    });
    let retry = server.next().await;
    assert_ne!(retry["id"], first["id"]);
    assert_eq!(retry["params"]["requestState"], state);
    assert_eq!(
        retry["params"]["inputResponses"]["server-key"]["action"],
        "decline"
    );
    server
        .respond(
            &retry,
            json!({"content": [{"type": "text", "text": "declined"}]}),
        )
        .await;
    assert_eq!(call.await.unwrap().unwrap().content.len(), 1);

    // Prompts take their rounds the same way.
    let get = tokio::spawn({
        let client = client.clone();
        async move {
            let params = mcp_proto::types::GetPromptRequestParams {
                name: "p".to_owned(),
                ..Default::default()
            };
            let taking = CallOptions::default().return_input_required(true);
            client.get_prompt_with(&params, taking).await
        }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "prompts/get");
    server
        .respond(
            &request,
            json!({"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}}),
        )
        .await;
    let error = get.await.unwrap().unwrap_err();
    assert!(
        matches!(&error, ClientError::InputRequired { method, round }
            if method == "prompts/get" && round.request_state.is_none()),
        "{error:?}"
    );
    assert!(
        error.to_string().ends_with("the server asked for 1 input"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unknown_result_type_is_an_invalid_result() {
    let (client, server) = modern(ClientOptions::default(), json!({"tools": {}})).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("odd", None).await }
    });
    let request = server.next().await;
    server
        .respond(
            &request,
            json!({
            "resultType": "mystery", "content": []}),
        )
        .await;
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(&error, ClientError::UnexpectedResultType { result_type, .. } if result_type == "mystery"),
        "{error:?}"
    );
    // input_required where no input can be asked for is invalid too.
    let list = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools(None).await }
    });
    let request = server.next().await;
    server
        .respond(
            &request,
            json!({
            "resultType": "input_required", "requestState": "x"}),
        )
        .await;
    let error = list.await.unwrap().unwrap_err();
    assert!(
        matches!(error, ClientError::UnexpectedResultType { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn tools_with_invalid_header_annotations_are_dropped() {
    let (client, server) = modern(ClientOptions::default(), json!({"tools": {}})).await;
    let list = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools(None).await }
    });
    let request = server.next().await;
    server
        .respond(
            &request,
            json!({"tools": [
                {"name": "good", "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"}}}},
                {"name": "bad_number", "inputSchema": {"type": "object", "properties": {
                    "n": {"type": "number", "x-mcp-header": "N"}}}},
                {"name": "bad_space", "inputSchema": {"type": "object", "properties": {
                    "n": {"type": "string", "x-mcp-header": "Has Space"}}}},
                {"name": "plain", "inputSchema": {"type": "object"}}
            ]}),
        )
        .await;
    let page = list.await.unwrap().unwrap();
    let names: Vec<&str> = page.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["good", "plain"]);
}

#[tokio::test]
async fn the_stateless_era_refuses_ping_and_cancels_with_a_notification_over_stdio_like_pipes() {
    let (client, server) = modern(ClientOptions::default(), json!({"tools": {}})).await;
    let error = client.ping().await.unwrap_err();
    assert!(matches!(error, ClientError::Refused(_)), "{error:?}");
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .call_tool_with(
                    &CallToolRequestParams {
                        name: "slow".into(),
                        ..Default::default()
                    },
                    CallOptions::default().timeout(Some(Duration::from_millis(50))),
                )
                .await
        }
    });
    let request = server.next().await;
    let cancel = server.next().await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    assert!(call.await.unwrap().unwrap_err().is_timeout());
}

#[tokio::test]
async fn the_driver_returns_why_the_connection_ended() {
    let (client_end, server) = Peer::pair();
    let (client, driver) = Client::new(client_end, ClientOptions::default());
    let driver = tokio::spawn(driver.run());
    // The server goes away before anything was said.
    drop(server);
    let reason = driver.await.unwrap();
    assert!(matches!(reason, ClientError::Closed { .. }), "{reason:?}");
    assert_eq!(
        client.closed_reason().map(|error| error.to_string()),
        Some(reason.to_string())
    );
}

// --- tool use in sampling (2025-11-25) ---------------------------------------

/// A host whose model may use tools in sampling, and says so when `tools`
/// is set: it answers every request with a `tool_use` of the first tool
/// offered, counting the requests it saw.
struct ToolSampler {
    tools: bool,
    seen: std::sync::atomic::AtomicUsize,
}

impl ToolSampler {
    fn new(tools: bool) -> Arc<ToolSampler> {
        Arc::new(ToolSampler {
            tools,
            seen: Default::default(),
        })
    }

    fn seen(&self) -> usize {
        self.seen.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait]
impl ClientHandler for ToolSampler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: Some(SamplingCapability {
                tools: self.tools.then(JsonObject::new),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let tool = params.tools.as_ref().and_then(|tools| tools.first());
        assert_eq!(
            params.tool_choice.and_then(|choice| choice.mode),
            Some(ToolChoiceMode::Required)
        );
        let tool = tool.expect("the offered tools reach the handler");
        Ok(CreateMessageResult {
            role: Role::Assistant,
            content: SamplingMessageContent::One(SamplingContent::ToolUse(ToolUseContent {
                id: "use-1".into(),
                name: tool.name.clone(),
                input: serde_json::from_value(json!({"city": "Paris"})).unwrap(),
                meta: None,
                extra: JsonObject::new(),
            })),
            model: "tool-model".into(),
            stop_reason: Some(StopReason::ToolUse),
            meta: None,
            extra: JsonObject::new(),
        })
    }
}

/// A `sampling/createMessage` offering the `weather` tool, a use required.
fn sampling_with_tools() -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}}],
        "maxTokens": 100,
        "tools": [{"name": "weather", "inputSchema": {"type": "object",
            "properties": {"city": {"type": "string"}}}}],
        "toolChoice": {"mode": "required"}
    })
}

#[tokio::test]
async fn a_handler_that_declares_sampling_tools_gets_the_tools_and_answers_with_a_tool_use() {
    let handler = ToolSampler::new(true);
    let (client_end, server) = Peer::pair();
    let options = ClientOptions::default().handler(Some(handler.clone()));
    let (client, driver) = Client::new(client_end, options);
    tokio::spawn(driver.run());
    let handshake = tokio::spawn({
        let client = client.clone();
        async move { client.initialize().await }
    });
    server.refuse_probe().await;
    let init = server.expect("initialize").await;
    assert_eq!(
        init["params"]["capabilities"],
        json!({"sampling": {"tools": {}}})
    );
    server
        .respond(&init, mcp_transport::scripted::initialize_result(tools()))
        .await;
    server.expect("notifications/initialized").await;
    handshake.await.unwrap().unwrap();

    server
        .send(
            json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage",
            "params": sampling_with_tools()}),
        )
        .await;
    let answer = server.next().await;
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(
        answer["result"],
        json!({"role": "assistant", "model": "tool-model", "stopReason": "toolUse",
            "content": {"type": "tool_use", "id": "use-1", "name": "weather",
                "input": {"city": "Paris"}}})
    );
    assert_eq!(handler.seen(), 1);
}

#[tokio::test]
async fn sampling_with_tools_is_refused_without_the_capability_in_both_eras() {
    // The handshake era: the session answers -32602; the handler never sees it.
    let handler = ToolSampler::new(false);
    let options = ClientOptions::default().handler(Some(handler.clone()));
    let (_client, server) = connected(options, tools()).await;
    server
        .send(
            json!({"jsonrpc": "2.0", "id": 8, "method": "sampling/createMessage",
            "params": sampling_with_tools()}),
        )
        .await;
    let answer = server.next().await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(handler.seen(), 0);

    // The stateless era: an input round asking for it is not given.
    let options = ClientOptions::default().handler(Some(handler.clone()));
    let (client, server) = modern(options, json!({"tools": {}})).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("ask_model", None).await }
    });
    let request = server.next().await;
    server
        .respond(
            &request,
            json!({"resultType": "input_required", "inputRequests": {
                "m": {"method": "sampling/createMessage", "params": sampling_with_tools()}}}),
        )
        .await;
    let error = call.await.unwrap().unwrap_err();
    let ClientError::InputNotGiven { reason, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(reason.contains("sampling with tools requires"), "{reason}");
    assert_eq!(handler.seen(), 0);
}

// --- URL-mode elicitation's completion (2025-11-25) ---------------------------

/// Notes the elicitation ids the server said are complete, and answers
/// `roots/list` (by which the test knows what came before was handled).
#[derive(Default)]
struct CompletionWatcher(std::sync::Mutex<Vec<String>>);

#[async_trait]
impl ClientHandler for CompletionWatcher {
    fn capabilities(&self) -> ClientCapabilities {
        Declaring.capabilities()
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Host.list_roots().await
    }

    fn elicitation_complete(&self, params: ElicitationCompleteNotificationParams) {
        self.0.lock().unwrap().push(params.elicitation_id);
    }
}

#[tokio::test]
async fn the_handler_hears_that_a_url_elicitation_completed() {
    let handler = Arc::new(CompletionWatcher::default());
    let options = ClientOptions::default().handler(Some(handler.clone()));
    let (client, server) = connected(options, tools()).await;
    let mut notifications = client.take_notifications().unwrap();
    for params in [json!({"elicitationId": "e-1"}), json!({"elicitation": 3})] {
        server
            .send(
                json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                "params": params}),
            )
            .await;
    }
    server
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}))
        .await;
    assert_eq!(server.next().await["id"], 1);
    assert_eq!(
        *handler.0.lock().unwrap(),
        ["e-1"],
        "the well-formed one, once; the malformed one is not passed on"
    );
    // Hosts reading the notifications still see both.
    for _ in 0..2 {
        let notification = notifications.recv().await.unwrap();
        assert!(
            matches!(&notification, ServerNotification::Other(n)
                if n.method == "notifications/elicitation/complete"),
            "{notification:?}"
        );
    }
}

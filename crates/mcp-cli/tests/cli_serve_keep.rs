//! `mcpctl serve --names keep`, the transparent gateway: a client (this workspace's, over stdio) sees the fixture server's own names, sets its log level and gets the server's log messages, subscribes to a resource through the gateway, and answers the fixture's elicitation, sampling and `roots/list`, the fixture speaking the handshake era or 2026-07-28 (which has no `logging/setLevel`, `resources/subscribe` or server requests: the gateway translates); two servers sharing a name are refused at start, naming both.

mod support;

use std::sync::Arc;

use mcp_proto::ErrorObject;
use mcp_proto::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ListRootsResult, LoggingLevel, Root, RootsCapability,
    SamplingCapability,
};
use mcp_transport::{Client, ClientHandler, ClientOptions, StdioTransport};
use serde_json::{Value, json};
use support::Env;

/// The fixture, in the handshake era and with the conformance suites'
/// catalog (resource subscriptions among it), as the one server `fx`.
fn fixture_config(env: &Env) -> std::path::PathBuf {
    env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": ["--era", "legacy", "--reference-catalog"],
            "era": "legacy",
        }}}),
    )
}

/// A host answering every question the same recognisable way.
struct Answers;

#[async_trait::async_trait]
impl ClientHandler for Answers {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            sampling: Some(SamplingCapability::default()),
            elicitation: Some(ElicitationCapability {
                form: Some(Default::default()),
                ..ElicitationCapability::default()
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: vec![
                serde_json::from_value::<Root>(json!({"uri": "file:///answered/by/the/client"}))
                    .map_err(|e| ErrorObject::new(-32603, e.to_string()))?,
            ],
            ..ListRootsResult::default()
        })
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        serde_json::from_value(json!({"role": "assistant", "model": "the-client",
            "content": {"type": "text", "text": "sampled by the client"}}))
        .map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }

    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        serde_json::from_value(json!({"action": "accept", "content": {"answer": "elicited"}}))
            .map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }
}

#[test]
fn a_client_of_the_kept_gateway_sees_the_servers_names_and_answers_its_questions() {
    let env = Env::new();
    let config = fixture_config(&env);
    let config = config.to_str().unwrap();
    let stdio = env.serve_options(&[
        "--no-host-configs",
        "--config",
        config,
        "serve",
        "--names",
        "keep",
    ]);
    let runtime = support::runtime();
    runtime.block_on(async {
        let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
        let mut options = ClientOptions::default();
        options.handler = Some(Arc::new(Answers));
        // The handshake era: the server's questions come as requests on
        // the connection (`cli_serve_rounds` has the 2026-07-28 era's).
        options.session.era = mcp_proto::EraPolicy::Legacy;
        let (client, driver) = Client::new(transport, options);
        let mut notifications = client.take_notifications().expect("the notifications");
        tokio::spawn(driver.run());
        client.initialize().await.expect("initialize");
        let declared = client
            .negotiated()
            .expect("negotiated")
            .result
            .capabilities
            .clone();
        assert!(declared.logging.is_some(), "{declared:?}");
        assert_eq!(declared.resources.as_ref().unwrap().subscribe, Some(true));

        let tools = client.list_tools(None).await.unwrap();
        let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
        assert!(names.contains(&"echo"), "{names:?}");
        assert!(
            !names
                .iter()
                .any(|n| n.starts_with("mcp_") || n.contains("__"))
        );

        let text = |result: &mcp_proto::types::CallToolResult| -> String {
            serde_json::to_value(&result.content).unwrap().to_string()
        };
        let echoed = client
            .call_tool("echo", json!({"text": "kept"}).as_object().cloned())
            .await
            .unwrap();
        assert!(text(&echoed).contains("kept"), "{}", text(&echoed));
        for (tool, arguments, expected) in [
            ("ask_elicitation", json!({"message": "?"}), "elicited"),
            (
                "ask_sampling",
                json!({"prompt": "hi"}),
                "sampled by the client",
            ),
            ("ask_roots", json!({}), "file:///answered/by/the/client"),
        ] {
            let answered = client
                .call_tool(tool, arguments.as_object().cloned())
                .await
                .unwrap_or_else(|e| panic!("{tool}: {e}"));
            assert!(
                text(&answered).contains(expected),
                "{tool}: {}",
                text(&answered)
            );
        }

        client
            .set_logging_level(LoggingLevel::Info)
            .await
            .expect("logging/setLevel through the gateway");
        // The server's log messages at the client's level reach it.
        client
            .call_tool("test_tool_with_logging", None)
            .await
            .expect("a call that logs");
        let mut logged = 0;
        while logged < 3 {
            let next =
                tokio::time::timeout(std::time::Duration::from_secs(10), notifications.recv())
                    .await
                    .expect("the server's three log messages within 10 s")
                    .expect("the notifications go on");
            if let mcp_transport::ServerNotification::LogMessage(message) = next {
                assert_eq!(message.level, LoggingLevel::Info);
                logged += 1;
            }
        }
        client
            .subscribe_resource("fixture://readme")
            .await
            .expect("resources/subscribe through the gateway");
        client
            .unsubscribe_resource("fixture://readme")
            .await
            .expect("resources/unsubscribe through the gateway");
        // A resource no server has: the server's own "not found", its URI
        // in `data`.
        let missing = client
            .read_resource("fixture://no-such-resource")
            .await
            .expect_err("an unknown resource");
        let shown = missing.to_string();
        assert!(
            shown.contains("-32002") || shown.contains("not found"),
            "{shown}"
        );
        client.close().await;
    });
}

#[test]
fn a_handshake_era_client_gets_the_same_from_a_2026_07_28_server_behind_the_gateway() {
    let env = Env::new();
    let events = env.work_dir().join("fixture-events.jsonl");
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": ["--era", "modern", "--reference-catalog",
                     "--event-log", events.to_str().unwrap()],
            "era": "modern",
        }}}),
    );
    let config = config.to_str().unwrap();
    let stdio = env.serve_options(&[
        "--no-host-configs",
        "--config",
        config,
        "serve",
        "--names",
        "keep",
    ]);
    let runtime = support::runtime();
    runtime.block_on(async {
        let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
        let mut options = ClientOptions::default();
        options.handler = Some(Arc::new(Answers));
        options.session.era = mcp_proto::EraPolicy::Legacy;
        let (client, driver) = Client::new(transport, options);
        let mut notifications = client.take_notifications().expect("the notifications");
        tokio::spawn(driver.run());
        client.initialize().await.expect("initialize");
        let declared = client
            .negotiated()
            .expect("negotiated")
            .result
            .capabilities
            .clone();
        assert!(declared.logging.is_some(), "{declared:?}");
        assert_eq!(declared.resources.as_ref().unwrap().subscribe, Some(true));
        let text = |result: &mcp_proto::types::CallToolResult| -> String {
            serde_json::to_value(&result.content).unwrap().to_string()
        };

        // The server's input rounds are asked of this client as requests.
        for (tool, arguments, expected) in [
            ("test_elicitation", json!({"message": "?"}), "elicited"),
            (
                "test_sampling",
                json!({"prompt": "hi"}),
                "sampled by the client",
            ),
            (
                "test_input_required_result_list_roots",
                json!({}),
                "file:///answered/by/the/client",
            ),
        ] {
            let answered = client
                .call_tool(tool, arguments.as_object().cloned())
                .await
                .unwrap_or_else(|e| panic!("{tool}: {e}"));
            assert!(
                text(&answered).contains(expected),
                "{tool}: {}",
                text(&answered)
            );
        }

        // Results come in this client's era: without the 2026-07-28
        // server's `resultType`, caching hints and `_meta` serverInfo.
        let no_envelope = |what: &str, meta: Option<&mcp_proto::types::Meta>| {
            let meta = meta.map(|m| m.as_str().to_owned()).unwrap_or_default();
            assert!(!meta.contains("serverInfo"), "{what}: {meta}");
        };
        let simple = client
            .call_tool("test_simple_text", None)
            .await
            .expect("test_simple_text");
        assert_eq!(simple.result_type, None, "{simple:?}");
        assert!(simple.extra.is_empty(), "{:?}", simple.extra);
        no_envelope("tools/call", simple.meta.as_ref());
        let prompt = client
            .get_prompt("test_simple_prompt", None)
            .await
            .expect("test_simple_prompt");
        assert_eq!(prompt.result_type, None, "{prompt:?}");
        assert!(prompt.extra.is_empty(), "{:?}", prompt.extra);
        no_envelope("prompts/get", prompt.meta.as_ref());
        let read = client
            .read_resource("test://static-text")
            .await
            .expect("test://static-text");
        assert!(
            read.result_type.is_none() && read.ttl_ms.is_none() && read.cache_scope.is_none(),
            "{read:?}"
        );
        no_envelope("resources/read", read.meta.as_ref());

        // No level set yet: a 2026-07-28 server is asked for none, and
        // sends no log messages.
        let quiet = client
            .call_tool("test_tool_with_logging", None)
            .await
            .expect("a call that would log");
        assert!(
            text(&quiet).contains("Nothing was logged"),
            "{}",
            text(&quiet)
        );
        client
            .set_logging_level(LoggingLevel::Info)
            .await
            .expect("logging/setLevel, kept by the gateway");
        let logged_call = client
            .call_tool("test_tool_with_logging", None)
            .await
            .expect("a call that logs");
        assert!(
            text(&logged_call).contains("logged 3 messages at info"),
            "{}",
            text(&logged_call)
        );
        let mut logged = 0;
        while logged < 3 {
            let next =
                tokio::time::timeout(std::time::Duration::from_secs(10), notifications.recv())
                    .await
                    .expect("the server's three log messages within 10 s")
                    .expect("the notifications go on");
            if let mcp_transport::ServerNotification::LogMessage(message) = next {
                assert_eq!(message.level, LoggingLevel::Info);
                logged += 1;
            }
        }

        // A subscription becomes the server's subscriptions/listen.
        client
            .subscribe_resource("test://static-text")
            .await
            .expect("resources/subscribe through the gateway");
        // `listen-start NANOS PID {"id":..,"accepted":{..}}` lines.
        let listened = |uri: &str| {
            std::fs::read_to_string(&events)
                .unwrap_or_default()
                .lines()
                .filter_map(|line| line.strip_prefix("listen-start "))
                .filter_map(|rest| rest.splitn(3, ' ').nth(2))
                .filter_map(|detail| serde_json::from_str::<Value>(detail).ok())
                .any(|detail| {
                    detail["accepted"]["resourceSubscriptions"]
                        .as_array()
                        .is_some_and(|uris| uris.iter().any(|u| u == uri))
                })
        };
        // A call answered after it: the server read the listen request,
        // sent before the call on the same stream, first.
        client
            .call_tool("test_simple_text", None)
            .await
            .expect("a call after the subscription");
        assert!(
            listened("test://static-text"),
            "the server accepted no listen for the URI: {}",
            std::fs::read_to_string(&events).unwrap_or_default()
        );
        client
            .unsubscribe_resource("test://static-text")
            .await
            .expect("resources/unsubscribe through the gateway");
        client.close().await;
    });
}

#[test]
fn two_servers_sharing_a_name_are_refused_at_start_naming_both() {
    let env = Env::new();
    let server = || json!({"command": support::fixture_server(), "args": ["--era", "legacy"]});
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"left": server(), "right": server()}}),
    );
    let run = env.run(&[
        "--no-host-configs",
        "--config",
        config.to_str().unwrap(),
        "serve",
        "--names",
        "keep",
    ]);
    assert_eq!(run.code, 2, "{run:#?}");
    let said: Value = json!(run.stderr);
    let said = said.as_str().unwrap();
    assert!(
        said.contains("servers left and right") && said.contains("--names keep"),
        "{said}"
    );
}

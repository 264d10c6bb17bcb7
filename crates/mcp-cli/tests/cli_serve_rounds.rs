//! `mcpctl serve --names keep` and its 2026-07-28 clients: a server's elicitation, sampling and roots requests (a handshake-era server's during a call, a prompt or a read; a 2026-07-28 server's `input_required`, with the server's own keys and its `requestState` kept at the gateway) reach a 2026-07-28 client (this workspace's, over stdio) as input rounds, and its answers reach the server; a question the client did not declare it can answer is refused, not asked.

mod support;

use std::sync::{Arc, Mutex};

use mcp_proto::types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationCapability,
    InputRequiredResult, ListRootsResult, Root, RootsCapability, SamplingCapability,
};
use mcp_proto::{EraPolicy, ErrorObject};
use mcp_transport::{
    CallOptions, Client, ClientError, ClientHandler, ClientOptions, StdioTransport,
};
use serde_json::json;
use support::Env;

/// `tests/interop/prompting_server.py` (Python SDK) as the one server
/// `py` of a config file.
fn prompting_config(env: &Env) -> std::path::PathBuf {
    let script = support::repo_root().join("tests/interop/prompting_server.py");
    env.write_json(
        "servers.json",
        &json!({"mcpServers": {"py": {"command": support::venv_python(), "args": [script]}}}),
    )
}

/// The fixture in `era` as the one server `fx` of a config file.
fn fixture_config(env: &Env, era: &str) -> std::path::PathBuf {
    let mut args = vec!["--era", era];
    if era == "legacy" {
        args.push("--reference-catalog");
    }
    env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": args,
            "era": era,
        }}}),
    )
}

/// A host answering each question the same recognisable way, recording
/// the methods it was asked; `sampling`: whether it declares sampling.
struct Answers {
    sampling: bool,
    asked: Mutex<Vec<&'static str>>,
}

impl Answers {
    fn new(sampling: bool) -> Arc<Answers> {
        Arc::new(Answers {
            sampling,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<&'static str> {
        self.asked.lock().unwrap().clone()
    }
}

fn internal(error: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(-32603, error.to_string())
}

#[async_trait::async_trait]
impl ClientHandler for Answers {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            sampling: self.sampling.then(SamplingCapability::default),
            elicitation: Some(ElicitationCapability {
                form: Some(Default::default()),
                ..ElicitationCapability::default()
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        self.asked.lock().unwrap().push("roots");
        Ok(ListRootsResult {
            roots: vec![
                serde_json::from_value::<Root>(json!({"uri": "file:///answered/by/the/client"}))
                    .map_err(internal)?,
            ],
            ..ListRootsResult::default()
        })
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.asked.lock().unwrap().push("sampling");
        serde_json::from_value(json!({"role": "assistant", "model": "the-client",
            "content": {"type": "text", "text": "sampled by the client"}}))
        .map_err(internal)
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.asked.lock().unwrap().push("elicitation");
        let asked = serde_json::to_value(&params).map_err(internal)?;
        // The fixture's `two_rounds` and the Python server's prompt ask for
        // a name, the rest for an answer.
        let message = asked["message"].as_str().unwrap_or_default();
        let content = if ["What is your name?", "Whom shall I greet?"].contains(&message) {
            json!({"name": "Ada"})
        } else {
            json!({"answer": "elicited"})
        };
        serde_json::from_value(json!({"action": "accept", "content": content})).map_err(internal)
    }
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap().to_string()
}

/// Serves `mcpctl serve --names keep` over the fixture in `era` (or with
/// `"python"`, the Python server of [`prompting_config`]) to a 2026-07-28
/// client answering with `handler`, and runs `check` with it.
fn with_modern_client<F, Fut>(era: &str, handler: Arc<Answers>, check: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let env = Env::new();
    let config = if era == "python" {
        prompting_config(&env)
    } else {
        fixture_config(&env, era)
    };
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
        options.handler = Some(handler);
        options.session.era = EraPolicy::Modern;
        let (client, driver) = Client::new(transport, options);
        tokio::spawn(driver.run());
        client.initialize().await.expect("server/discover");
        check(client.clone()).await;
        client.close().await;
    });
}

#[test]
fn a_handshake_era_servers_questions_reach_a_2026_07_28_client_as_input_rounds() {
    let answers = Answers::new(true);
    with_modern_client("legacy", Arc::clone(&answers), |client| async move {
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
    });
    assert_eq!(answers.asked(), ["elicitation", "sampling", "roots"]);
}

#[test]
fn a_2026_07_28_servers_input_rounds_are_relayed_round_by_round() {
    let answers = Answers::new(true);
    with_modern_client("modern", Arc::clone(&answers), |client| async move {
        let confirmed = client
            .call_tool("confirm", json!({"message": "Go?"}).as_object().cloned())
            .await
            .expect("confirm through the gateway");
        assert!(
            text(&confirmed).contains("confirmed: elicited"),
            "{}",
            text(&confirmed)
        );
        let two = client
            .call_tool(
                "two_rounds",
                json!({"second": "sampling"}).as_object().cloned(),
            )
            .await
            .expect("two_rounds through the gateway");
        assert!(
            text(&two).contains("name: Ada; sampling: the model said \\\"sampled by the client"),
            "{}",
            text(&two)
        );
    });
    assert_eq!(answers.asked(), ["elicitation", "elicitation", "sampling"]);
}

#[test]
fn a_question_the_client_cannot_answer_is_refused_not_asked() {
    let answers = Answers::new(false);
    with_modern_client("legacy", Arc::clone(&answers), |client| async move {
        let outcome = client
            .call_tool("ask_sampling", json!({"prompt": "hi"}).as_object().cloned())
            .await;
        // The server learns it cannot sample: its error, or a failed
        // result, either way not the client's answer.
        let shown = match outcome {
            Ok(result) => {
                assert_eq!(result.is_error, Some(true), "{}", text(&result));
                text(&result)
            }
            Err(error) => error.to_string(),
        };
        assert!(!shown.contains("sampled by the client"), "{shown}");
    });
    assert!(answers.asked().is_empty(), "{:?}", answers.asked());
}

#[test]
fn a_prompt_and_a_read_whose_server_asks_back_are_answered_in_input_rounds() {
    let answers = Answers::new(true);
    with_modern_client("python", Arc::clone(&answers), |client| async move {
        let prompt = client
            .get_prompt("greet", None)
            .await
            .expect("prompts/get through the gateway");
        let shown = serde_json::to_string(&prompt.messages).unwrap();
        assert!(shown.contains("Hello, Ada!"), "{shown}");
        let read = client
            .read_resource("note://roots")
            .await
            .expect("resources/read through the gateway");
        let shown = serde_json::to_string(&read.contents).unwrap();
        assert!(shown.contains("file:///answered/by/the/client"), "{shown}");
    });
    assert_eq!(answers.asked(), ["elicitation", "roots"]);
}

/// `tools/call` of `tool` through the gateway with its input rounds taken
/// by the caller: `answers` and `state` from the round before, if any.
async fn call_taking_rounds(
    client: &Client,
    tool: &str,
    arguments: serde_json::Value,
    answers: Option<serde_json::Value>,
    state: Option<String>,
) -> Result<CallToolResult, Box<InputRequiredResult>> {
    let mut params = CallToolRequestParams::new(tool, arguments.as_object().cloned());
    params.input_responses = answers.map(|a| serde_json::from_value(a).unwrap());
    params.request_state = state;
    let taking = CallOptions::default().return_input_required(true);
    match client.call_tool_with(&params, taking).await {
        Ok(result) => Ok(result),
        Err(ClientError::InputRequired { round, .. }) => Err(round),
        Err(other) => panic!("{tool}: {other}"),
    }
}

/// The gateway's `requestState`: 32 hex digits, never the server's.
fn gateways_state(round: &InputRequiredResult) -> String {
    let state = round.request_state.clone().expect("a requestState");
    assert_eq!(state.len(), 32, "{state}");
    assert!(state.bytes().all(|b| b.is_ascii_hexdigit()), "{state}");
    state
}

#[test]
fn a_2026_07_28_servers_own_keys_reach_the_client_and_its_state_goes_back_unchanged() {
    // Nothing reaches the handler: the caller answers each round itself.
    let answers = Answers::new(true);
    with_modern_client("modern", Arc::clone(&answers), |client| async move {
        let round = call_taking_rounds(&client, "confirm", json!({"message": "Go?"}), None, None)
            .await
            .expect_err("confirm asks first");
        let requests = round.input_requests.clone().expect("inputRequests");
        assert_eq!(
            requests.keys().collect::<Vec<_>>(),
            ["answer"],
            "the server's key"
        );
        assert_eq!(requests["answer"]["method"], "elicitation/create");
        assert_eq!(requests["answer"]["params"]["message"], "Go?");
        let state = gateways_state(&round);
        // The fixture checks its own requestState byte for byte: the
        // gateway sent the server's back, not its own.
        let done = call_taking_rounds(
            &client,
            "confirm",
            json!({"message": "Go?"}),
            Some(json!({"answer": {"action": "accept", "content": {"answer": "yes"}}})),
            Some(state.clone()),
        )
        .await
        .expect("confirm completes");
        assert!(text(&done).contains("confirmed: yes"), "{}", text(&done));
        // The gateway's state is good for one retry.
        let again = client
            .call_tool_with(
                &{
                    let mut p = CallToolRequestParams::new("confirm", None);
                    p.request_state = Some(state);
                    p
                },
                CallOptions::default().return_input_required(true),
            )
            .await
            .expect_err("a used requestState is refused");
        assert!(again.to_string().contains("requestState"), "{again}");

        // Two rounds, each with the server's keys.
        let arguments = json!({"second": "roots"});
        let first = call_taking_rounds(&client, "two_rounds", arguments.clone(), None, None)
            .await
            .expect_err("two_rounds asks first");
        let requests = first.input_requests.clone().unwrap();
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["first"]);
        let second = call_taking_rounds(
            &client,
            "two_rounds",
            arguments.clone(),
            Some(json!({"first": {"action": "accept", "content": {"name": "Grace"}}})),
            Some(gateways_state(&first)),
        )
        .await
        .expect_err("two_rounds asks again");
        let requests = second.input_requests.clone().unwrap();
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["second"]);
        assert_eq!(requests["second"]["method"], "roots/list");
        let done = call_taking_rounds(
            &client,
            "two_rounds",
            arguments,
            Some(json!({"second": {"roots": [{"uri": "file:///the/callers/root"}]}})),
            Some(gateways_state(&second)),
        )
        .await
        .expect("two_rounds completes");
        let shown = text(&done);
        assert!(shown.contains("name: Grace; roots: 1 roots"), "{shown}");
    });
    assert!(answers.asked().is_empty(), "{:?}", answers.asked());
}

#[test]
fn a_2026_07_28_server_sees_the_capabilities_of_the_client_that_answers_its_rounds() {
    // This client cannot sample: the server hears so from the gateway
    // (which itself could pass sampling on) and refuses rather than ask.
    let answers = Answers::new(false);
    with_modern_client("modern", Arc::clone(&answers), |client| async move {
        let params = CallToolRequestParams::new(
            "two_rounds",
            json!({"second": "sampling"}).as_object().cloned(),
        );
        let taking = CallOptions::default().return_input_required(true);
        let error = client
            .call_tool_with(&params, taking)
            .await
            .expect_err("sampling is not the client's");
        let ClientError::Rpc(error) = error else {
            panic!("expected the server's refusal, got {error}");
        };
        // MissingRequiredClientCapability (2026-07-28).
        assert_eq!(error.code, -32021, "{}", error.message);
        assert!(error.message.contains("sampling"), "{}", error.message);
        // What it can answer is asked as before.
        let round = call_taking_rounds(
            &client,
            "two_rounds",
            json!({"second": "roots"}),
            None,
            None,
        )
        .await
        .expect_err("roots are the client's");
        assert!(round.input_requests.unwrap().contains_key("first"));
    });
    assert!(answers.asked().is_empty(), "{:?}", answers.asked());
}

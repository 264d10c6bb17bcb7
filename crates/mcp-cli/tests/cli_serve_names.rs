//! `mcpctl serve --names plain` and `--names model` with the fixture server behind: prompts, resources and templates are named as the tools are in each mode (`fx__NAME`, `mcp_fx_NAME`), and every feature reaches the server by the renamed name: a prompt got, its arguments completed, a tool's log messages at the client's level, and a 2026-07-28 server's input rounds relayed to a 2026-07-28 client.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_proto::types::{
    CallToolResult, ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationCapability,
    LoggingLevel,
};
use mcp_proto::{EraPolicy, ErrorObject};
use mcp_transport::{CallOptions, Client, ClientHandler, ClientOptions, StdioTransport};
use serde_json::{Value, json};
use support::Env;

/// The two naming modes other than kept names, each with the prefix it
/// gives server `fx`'s names.
const MODES: [(&str, &str); 2] = [("plain", "fx__"), ("model", "mcp_fx_")];

/// A host that accepts every elicitation with the same recognisable answer.
struct Answers;

#[async_trait::async_trait]
impl ClientHandler for Answers {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(Default::default()),
                ..ElicitationCapability::default()
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        serde_json::from_value(json!({"action": "accept", "content": {"answer": "elicited"}}))
            .map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap().to_string()
}

/// Serves `mcpctl serve --names MODE` over the fixture (`fx`) speaking
/// `era` (with the conformance suites' catalog in the handshake era) to a
/// client of the same era, and runs `check` with it.
fn with_client<F, Fut>(mode: &str, era: &str, check: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let env = Env::new();
    let mut args = vec!["--era", era];
    if era == "legacy" {
        args.push("--reference-catalog");
    }
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": args,
            "era": era,
        }}}),
    );
    let config = config.to_str().unwrap();
    let stdio = env.serve_options(&[
        "--no-host-configs",
        "--config",
        config,
        "serve",
        "--names",
        mode,
    ]);
    let runtime = support::runtime();
    runtime.block_on(async {
        let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
        let mut options = ClientOptions::default();
        options.handler = Some(Arc::new(Answers));
        options.session.era = if era == "legacy" {
            EraPolicy::Legacy
        } else {
            EraPolicy::Modern
        };
        let (client, driver) = Client::new(transport, options);
        tokio::spawn(driver.run());
        client.initialize().await.expect("initialize");
        check(client.clone()).await;
        client.close().await;
    });
}

#[test]
fn prompts_resources_and_templates_are_named_as_tools_are_and_reach_their_server() {
    for (mode, prefix) in MODES {
        with_client(mode, "legacy", |client| async move {
            let tools = client.list_tools(None).await.unwrap();
            assert!(
                tools.tools.iter().all(|t| t.name.starts_with(prefix)),
                "{mode}: {:?}",
                tools.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
            );
            let prompts = client.list_prompts(None).await.unwrap();
            let names: Vec<&str> = prompts.prompts.iter().map(|p| p.name.as_str()).collect();
            let with_arguments = format!("{prefix}test_prompt_with_arguments");
            assert!(
                names.contains(&with_arguments.as_str()),
                "{mode}: {names:?}"
            );
            assert!(
                names.iter().all(|n| n.starts_with(prefix)),
                "{mode}: {names:?}"
            );
            let resources = client.list_resources(None).await.unwrap();
            assert!(
                !resources.resources.is_empty()
                    && resources
                        .resources
                        .iter()
                        .all(|r| r.name.starts_with(prefix)),
                "{mode}: {:?}",
                resources.resources
            );
            let templates = client.list_resource_templates(None).await.unwrap();
            let template_names: Vec<&str> = templates
                .resource_templates
                .iter()
                .map(|t| t.name.as_str())
                .collect();
            assert_eq!(template_names, [format!("{prefix}template-data")], "{mode}");

            let arguments = BTreeMap::from([
                ("arg1".to_owned(), "one".to_owned()),
                ("arg2".to_owned(), "two".to_owned()),
            ]);
            let got = client
                .get_prompt(&with_arguments, Some(arguments.clone()))
                .await
                .unwrap_or_else(|e| panic!("{mode}: prompts/get {with_arguments}: {e}"));
            let shown = serde_json::to_string(&got.messages).unwrap();
            assert!(
                shown.contains("arg1 is one, arg2 is two"),
                "{mode}: {shown}"
            );
            // The server's own name is not one the gateway serves here.
            client
                .get_prompt("test_prompt_with_arguments", Some(arguments))
                .await
                .expect_err("the upstream's own name, renamed");

            let completed: Value = client
                .request(
                    "completion/complete",
                    Some(&json!({
                        "ref": {"type": "ref/prompt", "name": with_arguments},
                        "argument": {"name": "arg1", "value": "testV"},
                    })),
                    CallOptions::default(),
                )
                .await
                .unwrap_or_else(|e| panic!("{mode}: completion/complete: {e}"));
            assert_eq!(
                completed["completion"]["values"],
                json!(["testValue1", "testValue2"]),
                "{mode}: {completed}"
            );

            let mut notifications = client.take_notifications().expect("the notifications");
            client
                .set_logging_level(LoggingLevel::Info)
                .await
                .expect("logging/setLevel through the gateway");
            client
                .call_tool(&format!("{prefix}test_tool_with_logging"), None)
                .await
                .unwrap_or_else(|e| panic!("{mode}: a renamed call that logs: {e}"));
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
        });
    }
}

#[test]
fn a_renamed_tools_input_rounds_reach_a_2026_07_28_client() {
    for (mode, prefix) in MODES {
        with_client(mode, "modern", |client| async move {
            let confirmed = client
                .call_tool(
                    &format!("{prefix}confirm"),
                    json!({"message": "Go?"}).as_object().cloned(),
                )
                .await
                .unwrap_or_else(|e| panic!("{mode}: confirm through the gateway: {e}"));
            assert!(
                text(&confirmed).contains("confirmed: elicited"),
                "{mode}: {}",
                text(&confirmed)
            );
        });
    }
}

//! The client's typed helpers for what a host calls (resources, templates, prompts, completion, logging level) against a scripted server: each sends its method with the parameters the spec names and decodes the answer.

use std::collections::BTreeMap;

use mcp_proto::session::SessionError;
use mcp_proto::types::{
    CompleteArgument, CompleteRequestParams, ContentBlock, LoggingLevel, PaginatedRequestParams,
    PromptReference, Reference, ResourceContents,
};
use mcp_transport::scripted::{Received, Reply, ScriptedServer, Seen};
use mcp_transport::{CallOptions, Client, ClientError, ClientOptions};
use serde_json::{Value, json};

/// Every capability the helpers need.
fn everything() -> Value {
    json!({
        "tools": {},
        "resources": {"subscribe": true},
        "prompts": {},
        "completions": {},
        "logging": {}
    })
}

async fn connect(server: ScriptedServer) -> (Client, Seen) {
    let (transport, seen) = server.spawn();
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("handshake");
    (client, seen)
}

/// The next request the server saw with this method (skipping the
/// handshake and anything else).
async fn seen(seen: &mut Seen, method: &str) -> Received {
    loop {
        let received = seen.recv().await.expect("the server is running");
        if received.method == method {
            return received;
        }
    }
}

#[tokio::test]
async fn resources_are_listed_page_by_page_and_read() {
    let server = ScriptedServer::new()
        .capabilities(everything())
        .on("resources/list", |params| {
            if params["cursor"] == "2" {
                Reply::result(json!({"resources": [
                    {"uri": "file:///b", "name": "b"}
                ]}))
            } else {
                Reply::result(json!({
                    "resources": [{"uri": "file:///a", "name": "a", "mimeType": "text/plain"}],
                    "nextCursor": "2"
                }))
            }
        })
        .on("resources/read", |params| {
            Reply::result(json!({"contents": [
                {"uri": params["uri"], "mimeType": "text/plain", "text": "hello"},
                {"uri": "file:///a#png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}
            ]}))
        });
    let (client, mut received) = connect(server).await;

    let first = client.list_resources(None).await.unwrap();
    assert_eq!(first.resources[0].uri, "file:///a");
    assert_eq!(first.resources[0].mime_type.as_deref(), Some("text/plain"));
    assert_eq!(first.next_cursor.as_deref(), Some("2"));
    let request = seen(&mut received, "resources/list").await;
    assert!(request.request);
    assert!(
        request.params.get("cursor").is_none(),
        "{:?}",
        request.params
    );

    let second = client
        .list_resources_with(
            &PaginatedRequestParams::page(first.next_cursor),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(second.resources[0].name, "b");
    assert_eq!(second.next_cursor, None);
    assert_eq!(
        seen(&mut received, "resources/list").await.params["cursor"],
        "2"
    );

    let read = client.read_resource("file:///a").await.unwrap();
    assert_eq!(
        seen(&mut received, "resources/read").await.params,
        json!({"uri": "file:///a"})
    );
    match &read.contents[..] {
        [ResourceContents::Text(text), ResourceContents::Blob(blob)] => {
            assert_eq!(text.text, "hello");
            assert_eq!(blob.blob, "iVBORw0KGgo=");
        }
        other => panic!("unexpected contents: {other:?}"),
    }
}

#[tokio::test]
async fn templates_are_listed() {
    let server =
        ScriptedServer::new()
            .capabilities(everything())
            .on("resources/templates/list", |_| {
                Reply::result(json!({"resourceTemplates": [
                    {"uriTemplate": "file:///{path}", "name": "files"}
                ]}))
            });
    let (client, mut received) = connect(server).await;
    let templates = client.list_resource_templates(None).await.unwrap();
    assert_eq!(
        templates.resource_templates[0].uri_template,
        "file:///{path}"
    );
    seen(&mut received, "resources/templates/list").await;
}

#[tokio::test]
async fn subscribe_and_unsubscribe_name_the_uri() {
    let server = ScriptedServer::new()
        .capabilities(everything())
        .on("resources/subscribe", |_| Reply::result(json!({})))
        .on("resources/unsubscribe", |_| Reply::result(json!({})));
    let (client, mut received) = connect(server).await;
    client.subscribe_resource("file:///a").await.unwrap();
    assert_eq!(
        seen(&mut received, "resources/subscribe").await.params,
        json!({"uri": "file:///a"})
    );
    client.unsubscribe_resource("file:///a").await.unwrap();
    assert_eq!(
        seen(&mut received, "resources/unsubscribe").await.params,
        json!({"uri": "file:///a"})
    );
}

#[tokio::test]
async fn subscribe_is_refused_without_the_capability() {
    let server = ScriptedServer::new().capabilities(json!({"resources": {}}));
    let (client, _received) = connect(server).await;
    let error = client.subscribe_resource("file:///a").await.unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::Refused(SessionError::CapabilityNotDeclared { capability, .. })
                if *capability == "resources.subscribe"
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn prompts_are_listed_and_got_with_string_arguments() {
    let server = ScriptedServer::new()
        .capabilities(everything())
        .on("prompts/list", |_| {
            Reply::result(json!({"prompts": [{
                "name": "greet",
                "description": "Says hello",
                "arguments": [{"name": "who", "required": true}]
            }]}))
        })
        .on("prompts/get", |params| {
            let who = params["arguments"]["who"].as_str().unwrap_or("?").to_owned();
            Reply::result(json!({
                "description": "A greeting",
                "messages": [{"role": "user", "content": {"type": "text", "text": format!("Hello, {who}")}}]
            }))
        });
    let (client, mut received) = connect(server).await;

    let prompts = client.list_prompts(None).await.unwrap();
    let greet = &prompts.prompts[0];
    assert_eq!(greet.name, "greet");
    assert_eq!(greet.arguments.as_ref().unwrap()[0].required, Some(true));
    seen(&mut received, "prompts/list").await;

    let arguments = BTreeMap::from([("who".to_owned(), "Ada".to_owned())]);
    let prompt = client.get_prompt("greet", Some(arguments)).await.unwrap();
    assert_eq!(
        seen(&mut received, "prompts/get").await.params,
        json!({"name": "greet", "arguments": {"who": "Ada"}})
    );
    assert_eq!(prompt.description.as_deref(), Some("A greeting"));
    match &prompt.messages[0].content {
        ContentBlock::Text(text) => assert_eq!(text.text, "Hello, Ada"),
        other => panic!("unexpected content: {other:?}"),
    }
}

#[tokio::test]
async fn a_prompt_error_from_the_server_is_an_rpc_error() {
    let server = ScriptedServer::new()
        .capabilities(everything())
        .on("prompts/get", |_| Reply::error(-32602, "no prompt `nope`"));
    let (client, _received) = connect(server).await;
    let error = client.get_prompt("nope", None).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Rpc(e) if e.code == -32602 && e.message == "no prompt `nope`"),
        "{error:?}"
    );
}

#[tokio::test]
async fn completion_sends_the_reference_and_the_typed_prefix() {
    let server = ScriptedServer::new()
        .capabilities(everything())
        .on("completion/complete", |_| {
            Reply::result(json!({"completion": {"values": ["Ada", "Alan"], "hasMore": false}}))
        });
    let (client, mut received) = connect(server).await;
    let params = CompleteRequestParams {
        reference: Reference::Prompt(PromptReference {
            name: "greet".to_owned(),
            ..Default::default()
        }),
        argument: CompleteArgument {
            name: "who".to_owned(),
            value: "A".to_owned(),
            ..Default::default()
        },
        context: None,
        meta: None,
        extra: Default::default(),
    };
    let result = client.complete(&params).await.unwrap();
    assert_eq!(result.completion.values, ["Ada", "Alan"]);
    assert_eq!(
        seen(&mut received, "completion/complete").await.params,
        json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "A"}})
    );
}

#[tokio::test]
async fn completion_is_refused_without_the_capability() {
    let server = ScriptedServer::new().capabilities(json!({"prompts": {}}));
    let (client, _received) = connect(server).await;
    let params = CompleteRequestParams {
        reference: Reference::Prompt(PromptReference {
            name: "greet".to_owned(),
            ..Default::default()
        }),
        argument: CompleteArgument::default(),
        context: None,
        meta: None,
        extra: Default::default(),
    };
    let error = client.complete(&params).await.unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::Refused(SessionError::CapabilityNotDeclared { capability, .. })
                if *capability == "completions"
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_logging_level_is_sent_in_its_wire_form() {
    let server = ScriptedServer::new()
        .capabilities(everything())
        .on("logging/setLevel", |_| Reply::result(json!({})));
    let (client, mut received) = connect(server).await;
    client
        .set_logging_level(LoggingLevel::Warning)
        .await
        .unwrap();
    assert_eq!(
        seen(&mut received, "logging/setLevel").await.params,
        json!({"level": "warning"})
    );
}

//! `mcp-conformance-client`: the client the official MCP conformance runner drives.
//!
//! Usage: `mcp-conformance-client <server-url>` (the runner appends the URL).
//! `MCP_CONFORMANCE_SCENARIO` names the scenario; `MCP_CONFORMANCE_CONTEXT`
//! (JSON) carries scenario data where the runner gives it. The client uses
//! the public crates the way a host does: an `HttpTransport` (Streamable HTTP
//! with legacy fallback), a `Client`, a `ClientHandler` for server requests.
//! It exits 0 when the scenario's client side succeeded, 1 with a message on
//! stderr otherwise.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use async_trait::async_trait;
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::session::SessionOptions;
use mcp_proto::types::{
    ElicitAction, ElicitRequestParams, ElicitResult, ElicitationCapability, Implementation,
    JsonObject, Tool,
};
use mcp_transport::{Client, ClientHandler, ClientOptions, HttpOptions, HttpTransport};
use serde_json::{Value, json};

/// Accepts every form elicitation without typing anything: the client
/// fills in the schema's defaults (SEP-1034), which is what the
/// `elicitation-sep1034-client-defaults` scenario checks.
struct AcceptingUser;

#[async_trait]
impl ClientHandler for AcceptingUser {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        match params {
            ElicitRequestParams::Form(_) => {
                let mut result = ElicitResult::new(ElicitAction::Accept);
                result.content = Some(JsonObject::new());
                Ok(result)
            }
            ElicitRequestParams::Url(_) => Ok(ElicitResult::new(ElicitAction::Decline)),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-conformance-client: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let url = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
        .context("usage: mcp-conformance-client <server-url>")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();

    let mut session = SessionOptions {
        client_info: Implementation::new("mcp-conformance-client", env!("CARGO_PKG_VERSION")),
        ..Default::default()
    };
    session.capabilities.elicitation = Some(ElicitationCapability::default());
    let options = ClientOptions {
        session,
        handler: Some(Arc::new(AcceptingUser)),
        ..Default::default()
    };
    let transport = HttpTransport::connect(HttpOptions::new(url))
        .await
        .context("setting up the HTTP transport")?;
    let client = Client::connect(transport, options)
        .await
        .context("connecting")?;

    let result = drive(&client, &scenario).await;
    client.close().await;
    result
}

/// Lists the tools and calls each one with arguments made from its schema:
/// what every client scenario needs (`initialize` stops after the handshake).
async fn drive(client: &Client, scenario: &str) -> anyhow::Result<()> {
    // Only what the server declared (MCP 2025-06-18 "Lifecycle"): the
    // `initialize` scenario's server declares no capabilities at all.
    let declares_tools = client
        .negotiated()
        .is_some_and(|n| n.server_capabilities().tools.is_some());
    if !declares_tools {
        return Ok(());
    }
    let tools = list_all_tools(client).await?;
    if scenario == "initialize" {
        return Ok(());
    }
    for tool in &tools {
        let arguments = sample_arguments(tool);
        let result = tokio::time::timeout(
            Duration::from_secs(20),
            client.call_tool(&tool.name, Some(arguments)),
        )
        .await
        .with_context(|| format!("calling {} timed out", tool.name))?
        .with_context(|| format!("calling {}", tool.name))?;
        if result.is_error == Some(true) {
            bail!("tool {} reported an error: {:?}", tool.name, result.content);
        }
    }
    Ok(())
}

async fn list_all_tools(client: &Client) -> anyhow::Result<Vec<Tool>> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..100 {
        let page = client
            .list_tools(cursor.take())
            .await
            .context("tools/list")?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    bail!("tools/list did not end after 100 pages")
}

/// Arguments that satisfy a tool's input schema: its defaults where given,
/// else a small value of each required property's type.
fn sample_arguments(tool: &Tool) -> JsonObject {
    let mut arguments = JsonObject::new();
    let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return arguments;
    };
    for (name, property) in properties {
        let value = property.get("default").cloned().unwrap_or_else(|| {
            match property.get("type").and_then(Value::as_str) {
                Some("number" | "integer") => json!(2),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("conformance"),
            }
        });
        arguments.insert(name.clone(), value);
    }
    arguments
}

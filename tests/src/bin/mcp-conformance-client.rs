//! `mcp-conformance-client`: the client the official MCP conformance runner drives.
//!
//! Usage: `mcp-conformance-client <server-url>` (the runner appends the URL).
//! `MCP_CONFORMANCE_CONTEXT` (JSON) carries the scenario's data where the
//! runner gives it, read as a host reads its server entry;
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` (the pre-release runner sets it on
//! every run, `--spec-version` or its default) is the protocol version the
//! host is configured with. `MCP_CONFORMANCE_SCENARIO` (the scenario's
//! name) is not read: the client behaves the same whatever the scenario. The client uses the public crates the way a
//! host does: an `HttpTransport` (Streamable HTTP with legacy fallback), a
//! `Client` that detects the server's era (`EraPolicy::Auto`), a
//! `ClientHandler` for server requests (and the stateless era's input
//! rounds).
//!
//! The flow is a host's whose model uses everything offered: connect, list
//! the tools, call them; load every skill a server with the Skills
//! extension lists (verified before use) and read its files. The tool
//! calls are the context's `toolCalls` when the runner gives them, else
//! every listed tool with arguments made from its schema; a failing call
//! (an error, a refusal, a timeout, a result with `isError`) is reported on
//! stderr and the run goes on with the next one, as a host reports a
//! failed tool and carries on. It exits 0 when the connection and the
//! listing succeeded, 1 with a message on stderr otherwise. `RUST_LOG`
//! (`error` … `trace`) prints the workspace's logs on stderr.
//!
//! A protocol version from the runner is the host's configured version:
//! a handshake-era one is the only version offered and accepted (no
//! `server/discover` probe); a stateless-era one is preferred, with the
//! handshake versions still accepted on a fallback.
//!
//! Authorization (the `auth/*` scenarios) goes through `mcp-client-oauth` as a
//! host would wire it from its server entry, here the context: the grant
//! and pre-registered credentials come from the context's fields (see
//! `grant_of`), never from the scenario's name; a client ID metadata
//! document URL; and a headless interactive step that GETs the
//! authorization URL without following the redirect and reads the code
//! from `Location`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use mcp_client_oauth::{
    Grant, IdentityAssertionGrant, Interaction, OAuthError, OAuthOptions, OAuthProvider, Secret,
    WorkloadAssertion,
};
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::session::SessionOptions;
use mcp_proto::types::{
    ElicitAction, ElicitRequestParams, ElicitResult, ElicitationCapability, Implementation,
    JsonObject, Tool,
};
use mcp_proto::version::VersionPolicy;
use mcp_proto::{EraPolicy, ProtocolVersion};
use mcp_transport::{Client, ClientHandler, ClientOptions, HttpOptions, HttpTransport};
use serde_json::{Value, json};

/// The client ID metadata document URL the `auth/basic-cimd` scenario expects.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

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
    init_logging();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-conformance-client: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `RUST_LOG=<level>` prints the workspace's logs on stderr.
fn init_logging() {
    let level = match std::env::var("RUST_LOG").as_deref() {
        Ok("error") => tracing::Level::ERROR,
        Ok("warn") => tracing::Level::WARN,
        Ok("info") => tracing::Level::INFO,
        Ok("debug") => tracing::Level::DEBUG,
        Ok("trace") => tracing::Level::TRACE,
        _ => return,
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

async fn run() -> anyhow::Result<()> {
    let url = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
        .context("usage: mcp-conformance-client <server-url>")?;
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text).context("MCP_CONFORMANCE_CONTEXT is not JSON")?,
        Err(_) => Value::Null,
    };

    let mut session = SessionOptions::default()
        .client_info(Implementation::new(
            "mcp-conformance-client",
            env!("CARGO_PKG_VERSION"),
        ))
        .era(EraPolicy::Auto);
    if let Ok(wire) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        session.versions = configured_versions(&wire)?;
    }
    session.capabilities.elicitation = Some(ElicitationCapability::default());
    let options = ClientOptions::default()
        .session(session)
        .handler(Some(Arc::new(AcceptingUser)));
    let mut http_options = HttpOptions::new(url.clone());
    // The workload's JWT, where the context gives one, lives in a private
    // file for the run, as a platform mounts it: the host names the file.
    let workload_file = workload_token_file(&context)?;
    let provider = oauth_provider(&url, &context, workload_file.as_ref())?;
    http_options.auth = Some(Arc::new(provider));
    let transport = HttpTransport::connect(http_options)
        .await
        .context("setting up the HTTP transport")?;
    let client = Client::connect(transport, options)
        .await
        .context("connecting")?;

    let result = drive(&client, &context).await;
    client.close().await;
    result
}

/// The versions a host configured with `wire` offers and accepts: a
/// handshake-era version alone (no stateless-era probe), or a
/// stateless-era one preferred over the handshake versions it may fall
/// back to.
fn configured_versions(wire: &str) -> anyhow::Result<VersionPolicy> {
    let Some(version) = ProtocolVersion::parse(wire) else {
        bail!(
            "MCP_CONFORMANCE_PROTOCOL_VERSION {wire:?} is not a protocol version this client knows"
        );
    };
    Ok(if version.uses_handshake() {
        VersionPolicy::default()
            .offered(version)
            .accepted(vec![version])
    } else {
        let mut accepted = vec![version];
        accepted.extend(ProtocolVersion::HANDSHAKE);
        VersionPolicy::default()
            .offered(ProtocolVersion::LATEST_HANDSHAKE)
            .accepted(accepted)
    })
}

/// The context's workload JWT (`valid_jwt`), written to a file only its
/// owner reads (0600), removed when the guard drops.
fn workload_token_file(context: &Value) -> anyhow::Result<Option<tempfile::NamedTempFile>> {
    let Some(jwt) = context.get("valid_jwt").and_then(Value::as_str) else {
        return Ok(None);
    };
    let mut file = tempfile::NamedTempFile::new().context("creating the workload token file")?;
    std::io::Write::write_all(&mut file, jwt.as_bytes())
        .context("writing the workload token file")?;
    Ok(Some(file))
}

/// The grant a host configures from `context`, its server entry:
/// - a workload token file: workload identity federation (SEP-1933, the
///   JWT bearer grant);
/// - an identity provider's token endpoint and ID token: cross-app access
///   (SEP-990);
/// - a `private_key_pem`: machine to machine (client credentials with
///   `private_key_jwt`);
/// - a `client_id` with a `client_secret` and no `issuer`: machine to
///   machine too, the credentials being the client's own; a pre-registered
///   app names the `issuer` it is registered at, and its user authorizes;
/// - otherwise the authorization code grant, through the headless browser.
fn grant_of(
    context: &Value,
    workload_file: Option<&tempfile::NamedTempFile>,
) -> anyhow::Result<Grant> {
    let field = |name: &str| context.get(name).and_then(Value::as_str).map(str::to_owned);
    if let Some(file) = workload_file {
        return Ok(Grant::JwtBearer(WorkloadAssertion::File(
            file.path().to_owned(),
        )));
    }
    if let (Some(endpoint), Some(id_token)) = (field("idp_token_endpoint"), field("idp_id_token")) {
        let mut grant = IdentityAssertionGrant::new(
            endpoint.parse().context("idp_token_endpoint")?,
            Secret::new(id_token),
        );
        grant.idp_client_id = field("idp_client_id");
        return Ok(Grant::IdentityAssertion(grant));
    }
    let machine = field("private_key_pem").is_some()
        || (field("client_id").is_some()
            && field("client_secret").is_some()
            && field("issuer").is_none());
    Ok(if machine {
        Grant::ClientCredentials
    } else {
        Grant::AuthorizationCode(Arc::new(HeadlessBrowser))
    })
}

/// The OAuth client, configured from `MCP_CONFORMANCE_CONTEXT` the way a
/// host configures one from its server entry: the grant of [`grant_of`],
/// with the pre-registered credentials the context gives.
fn oauth_provider(
    url: &str,
    context: &Value,
    workload_file: Option<&tempfile::NamedTempFile>,
) -> anyhow::Result<OAuthProvider> {
    let field = |name: &str| context.get(name).and_then(Value::as_str).map(str::to_owned);
    let private_key_pem = field("private_key_pem").map(Secret::new);
    let grant = grant_of(context, workload_file)?;
    let mut options = OAuthOptions::new(url.parse().context("server URL")?, grant);
    options.client_name = "mcp-conformance-client".to_owned();
    options.client_id = field("client_id");
    options.client_secret = field("client_secret").map(Secret::new);
    options.private_key_pem = private_key_pem;
    options.client_metadata_url = Some(CLIENT_METADATA_URL.to_owned());
    Ok(OAuthProvider::new(options)?)
}

/// The interactive step without a user: the mock authorization server
/// redirects at once, so the redirect's `Location` is the answer.
#[derive(Debug, Default)]
struct HeadlessBrowser;

#[async_trait]
impl Interaction for HeadlessBrowser {
    fn redirect_uri(&self) -> String {
        "http://localhost:3000/callback".to_owned()
    }

    async fn authorize(&self, authorization_url: &url::Url) -> Result<url::Url, OAuthError> {
        tracing::debug!(url = %authorization_url, "headless browser: authorizing");
        let failed = |why: &str| OAuthError::Authorization(format!("headless browser: {why}"));
        let client = HyperClient::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
        let uri: hyper::Uri = authorization_url
            .as_str()
            .parse()
            .map_err(|_| failed("the authorization URL is not a URI"))?;
        let response = client
            .get(uri)
            .await
            .map_err(|_| failed("the authorization request failed"))?;
        let location = response
            .headers()
            .get(hyper::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| failed("the authorization endpoint did not redirect"))?;
        authorization_url
            .join(location)
            .map_err(|_| failed("the redirect Location is not a URL"))
    }
}

/// A host's session whose model uses everything it is offered: list the
/// tools, then call the ones the context's `toolCalls` name or, without
/// them, every listed tool with arguments from its schema; and when the
/// server declares the Skills extension, load every listed skill and read
/// each loaded skill's files. A failed call or a skill that fails
/// verification is reported and the run goes on.
async fn drive(client: &Client, context: &Value) -> anyhow::Result<()> {
    // Only what the server declared (MCP 2025-06-18 "Lifecycle"): the
    // `initialize` scenario's server declares no capabilities at all.
    let capabilities = client
        .negotiated()
        .map(|n| n.server_capabilities().clone())
        .unwrap_or_default();
    if capabilities.tools.is_some() {
        use_tools(client, context).await?;
    }
    if capabilities.skills().is_some() {
        use_skills(client).await?;
    }
    Ok(())
}

async fn use_tools(client: &Client, context: &Value) -> anyhow::Result<()> {
    let tools = list_all_tools(client).await?;
    for tool in &tools {
        tracing::debug!(tool = %tool.name, input_schema = %tool.input_schema, "listed");
    }
    let calls = match context.get("toolCalls") {
        Some(calls) => requested_calls(calls)?,
        None => tools
            .iter()
            .map(|tool| (tool.name.clone(), sample_arguments(tool)))
            .collect(),
    };
    for (name, arguments) in calls {
        if let Err(error) = call(client, &name, arguments).await {
            eprintln!("mcp-conformance-client: {error:#}");
        }
    }
    Ok(())
}

/// Each listed skill is loaded through the client's skill-loading path
/// (its `SKILL.md` read and verified against the entry); only a skill that
/// loaded has its other listed files read, each verified too.
async fn use_skills(client: &Client) -> anyhow::Result<()> {
    let skills = client.list_all_skills(50).await.context("skills/list")?;
    for entry in &skills {
        let loaded = match client.load_skill(entry).await {
            Ok(loaded) => loaded,
            Err(error) => {
                eprintln!(
                    "mcp-conformance-client: skill not loaded ({}): {error}",
                    error.code()
                );
                continue;
            }
        };
        tracing::debug!(skill = %entry.uri, bytes = loaded.text.len(), "loaded");
        let others: Vec<String> = entry
            .files()
            .unwrap_or_default()
            .iter()
            .filter(|file| file.uri != entry.uri)
            .map(|file| file.uri.clone())
            .collect();
        for file in others {
            if let Err(error) = client.read_skill_file(&loaded, &file).await {
                eprintln!(
                    "mcp-conformance-client: skill file not used ({}): {error}",
                    error.code()
                );
            }
        }
    }
    Ok(())
}

/// The context's `toolCalls`: `[{"name": ..., "arguments": {...}}, ...]`.
fn requested_calls(calls: &Value) -> anyhow::Result<Vec<(String, JsonObject)>> {
    let calls = calls
        .as_array()
        .context("the context's toolCalls is not an array")?;
    calls
        .iter()
        .map(|call| {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .context("a toolCalls entry has no name")?;
            let arguments = match call.get("arguments") {
                None | Some(Value::Null) => JsonObject::new(),
                Some(Value::Object(arguments)) => arguments.clone(),
                Some(_) => bail!("the toolCalls arguments of {name} are not an object"),
            };
            Ok((name.to_owned(), arguments))
        })
        .collect()
}

/// One `tools/call`; a tool result with `isError` counts as a failure.
async fn call(client: &Client, name: &str, arguments: JsonObject) -> anyhow::Result<()> {
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        client.call_tool(name, Some(arguments)),
    )
    .await
    .with_context(|| format!("calling {name} timed out"))?
    .with_context(|| format!("calling {name}"))?;
    if result.is_error == Some(true) {
        bail!("tool {name} reported an error: {:?}", result.content);
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
    let schema = tool.input_schema.to_object().unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
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

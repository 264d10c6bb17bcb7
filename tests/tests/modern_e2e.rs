//! Both eras end to end against the fixture server as a real process: era detection over stdio and Streamable HTTP, and the stateless era's input rounds, subscriptions, headers and result types.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::jsonrpc::ErrorObject;
use mcp_proto::session::SessionOptions;
use mcp_proto::types::{
    CallToolResult, ClientCapabilities, ContentBlock, CreateMessageRequestParams,
    CreateMessageResult, ElicitAction, ElicitRequestParams, ElicitResult, ElicitationCapability,
    JsonObject, Role, SamplingCapability, SamplingContent, SamplingMessageContent, TextContent,
};
use mcp_proto::{Era, EraPolicy, ProtocolVersion};
use mcp_transport::{
    Client, ClientError, ClientHandler, ClientOptions, HttpOptions, HttpTransport,
    ServerNotification, StdioOptions, StdioTransport,
};
use serde_json::{Value, json};

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// The longest any one step may take; a bound, never a wait.
const BOUND: Duration = Duration::from_secs(20);

/// A host's handler: answers form elicitations with a name and sampling
/// with a fixed reply.
struct Host;

#[async_trait]
impl ClientHandler for Host {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let ElicitRequestParams::Form(form) = params else {
            return Err(ErrorObject::invalid_params("only forms"));
        };
        // Answer every string field the form asks for.
        let mut content = JsonObject::new();
        for name in form.requested_schema.properties.keys() {
            content.insert(name.clone(), json!("Ada"));
        }
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            meta: None,
            extra: JsonObject::new(),
        })
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Ok(CreateMessageResult {
            role: Role::Assistant,
            content: SamplingMessageContent::One(SamplingContent::Text(TextContent::new(
                "sampled",
            ))),
            model: "test-model".to_owned(),
            stop_reason: None,
            meta: None,
            extra: JsonObject::new(),
        })
    }
}

fn host_options() -> ClientOptions {
    let capabilities = ClientCapabilities {
        elicitation: Some(ElicitationCapability::default()),
        sampling: Some(SamplingCapability::default()),
        ..ClientCapabilities::default()
    };
    ClientOptions::default()
        .session(
            SessionOptions::default()
                .client_info(mcp_proto::types::Implementation::new("e2e-host", "3.1"))
                .capabilities(capabilities),
        )
        .handler(Some(Arc::new(Host)))
}

fn stdio(args: &[&str]) -> StdioOptions {
    let mut options = StdioOptions::new(FIXTURE);
    options.args = args.iter().map(|a| (*a).to_owned()).collect();
    options
}

async fn connect_stdio(args: &[&str], options: ClientOptions) -> Result<Client, ClientError> {
    let transport = StdioTransport::spawn(stdio(args)).expect("the fixture starts");
    tokio::time::timeout(BOUND, Client::connect(transport, options))
        .await
        .expect("connect within the bound")
}

use tests::servers::FixtureHttp as HttpFixture;

async fn start_http(args: &[&str]) -> HttpFixture {
    tests::servers::start_fixture_http(FIXTURE, args).await
}

async fn connect_http(url: &str, options: ClientOptions) -> Result<Client, ClientError> {
    let transport = HttpTransport::connect(HttpOptions::new(url))
        .await
        .expect("the transport is built");
    tokio::time::timeout(BOUND, Client::connect(transport, options))
        .await
        .expect("connect within the bound")
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn args(value: Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

async fn tool_names(client: &Client) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor = None;
    loop {
        let page = client.list_tools(cursor).await.expect("tools/list");
        names.extend(page.tools.into_iter().map(|t| t.name));
        cursor = page.next_cursor;
        if cursor.is_none() {
            return names;
        }
    }
}

fn event_lines(path: &Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.split(' ').next() == Some(event))
        .map(|line| {
            let json = line.splitn(4, ' ').nth(3).expect("a JSON field");
            serde_json::from_str(json).expect("the event's JSON")
        })
        .collect()
}

/// Everything a host does in the stateless era, on one connection.
async fn use_the_stateless_era(client: &Client) {
    let negotiated = client.negotiated().expect("settled");
    assert_eq!(negotiated.version, ProtocolVersion::V2026_07_28);
    assert_eq!(negotiated.era(), Era::Modern);
    assert!(negotiated.discover.is_some());
    assert!(!negotiated.server_info().name.is_empty());

    let names = tool_names(client).await;
    for expected in ["echo", "confirm", "two_rounds", "region_echo", "add_tool"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n == "bad_header"),
        "a tool with an invalid x-mcp-header is dropped: {names:?}"
    );

    let echoed = client
        .call_tool("echo", args(json!({"text": "hi there"})))
        .await
        .expect("echo");
    assert_eq!(text_of(&echoed), "hi there");

    // Input rounds through the host's handler.
    let confirmed = client
        .call_tool("confirm", args(json!({"message": "go?"})))
        .await
        .expect("confirm completes through an input round");
    assert!(text_of(&confirmed).contains("Ada"), "{confirmed:?}");
    let two = client
        .call_tool("two_rounds", args(json!({"second": "sampling"})))
        .await
        .expect("two input rounds");
    assert!(!two.is_error.unwrap_or(false), "{two:?}");

    // Headers mirrored from arguments (checked by the server over HTTP).
    let region = client
        .call_tool(
            "region_echo",
            args(json!({"region": " eu-west é ", "zone": 7, "dry_run": true, "text": "x"})),
        )
        .await
        .expect("region_echo");
    assert!(!region.is_error.unwrap_or(false), "{region:?}");

    // A tool added at runtime arrives through subscriptions/listen.
    let mut notifications = client
        .take_notifications()
        .expect("the notification stream");
    let added = client
        .call_tool("add_tool", args(json!({"name": "added_late"})))
        .await
        .expect("add_tool");
    assert!(!added.is_error.unwrap_or(false), "{added:?}");
    let changed = tokio::time::timeout(BOUND, async {
        while let Some(notification) = notifications.recv().await {
            if matches!(notification, ServerNotification::ToolsListChanged) {
                return true;
            }
        }
        false
    })
    .await
    .expect("a list change within the bound");
    assert!(changed, "tools/list_changed arrives on the listen stream");
    let names = tool_names(client).await;
    assert!(
        names.iter().any(|n| n == "added_late"),
        "the added tool is listed: {names:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_auto_lands_on_the_stateless_era_and_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let client = connect_stdio(&["--event-log", log.to_str().unwrap()], host_options())
        .await
        .expect("connects");
    use_the_stateless_era(&client).await;
    client.close().await;

    let requests = event_lines(&log, "modern-request");
    assert_eq!(requests[0]["method"], "server/discover", "{requests:?}");
    for request in &requests {
        let meta = &request["meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"],
            json!({"name": "e2e-host", "version": "3.1"}),
            "the host's name on every request"
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"].is_object());
    }
    let methods: Vec<&str> = requests
        .iter()
        .filter_map(|r| r["method"].as_str())
        .collect();
    assert!(methods.contains(&"subscriptions/listen"), "{methods:?}");
    assert!(!methods.contains(&"initialize"));
    // A new id per input round, the state echoed.
    let rounds = event_lines(&log, "mrtr-round");
    let confirm: Vec<&Value> = rounds.iter().filter(|r| r["tool"] == "confirm").collect();
    assert_eq!(confirm.len(), 2, "{rounds:?}");
    assert_ne!(confirm[0]["id"], confirm[1]["id"]);
    assert_eq!(confirm[1]["requestStateMatched"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_auto_lands_on_the_stateless_era_with_its_headers() {
    let server = start_http(&["--transport", "http"]).await;
    let client = connect_http(&server.url, host_options())
        .await
        .expect("connects");
    use_the_stateless_era(&client).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_only_servers_are_reached_over_both_transports() {
    let client = connect_stdio(&["--era", "modern"], host_options())
        .await
        .expect("stdio connects");
    assert_eq!(client.negotiated().unwrap().era(), Era::Modern);
    client.close().await;

    let server = start_http(&["--transport", "http", "--era", "modern"]).await;
    let client = connect_http(&server.url, host_options())
        .await
        .expect("http connects");
    assert_eq!(client.negotiated().unwrap().era(), Era::Modern);
    assert_eq!(
        text_of(
            &client
                .call_tool("echo", args(json!({"text": "m"})))
                .await
                .unwrap()
        ),
        "m"
    );
    client.close().await;

    // Pinned to the handshake era, a modern-only server refuses, and the
    // error names both sides' versions and the server's words.
    let mut legacy = host_options();
    legacy.session.era = EraPolicy::Legacy;
    let error = connect_stdio(&["--era", "modern"], legacy)
        .await
        .expect_err("a handshake-era client cannot speak to it");
    let text = error.to_string();
    assert!(
        text.contains("2026-07-28") || text.contains("-32022"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_era_servers_are_reached_whatever_they_do_with_the_probe() {
    for fault in [
        &["--era", "legacy"][..],
        &["--probe-noise", "1048576"],
        &["--discover-legacy-only"],
    ] {
        let client = connect_stdio(fault, host_options())
            .await
            .unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        let negotiated = client.negotiated().unwrap();
        assert_eq!(negotiated.era(), Era::Legacy, "{fault:?}");
        assert_eq!(
            negotiated.version,
            ProtocolVersion::V2025_11_25,
            "{fault:?}"
        );
        assert_eq!(
            text_of(
                &client
                    .call_tool("echo", args(json!({"text": "l"})))
                    .await
                    .unwrap()
            ),
            "l"
        );
        client.close().await;
    }

    // A server that exits on the probe: the client says so, so that the
    // layer owning the process can start it again in the handshake era.
    let error = connect_stdio(&["--exit-before-initialize"], host_options())
        .await
        .expect_err("the process exits on the probe");
    assert!(error.is_closed_during_probe(), "{error:?}");
    let mut legacy = host_options();
    legacy.session.era = EraPolicy::Legacy;
    let client = connect_stdio(&["--exit-before-initialize"], legacy)
        .await
        .expect("started again, spoken to in the handshake era");
    assert_eq!(client.negotiated().unwrap().era(), Era::Legacy);
    client.close().await;

    // Over HTTP: the bare 400 a handshake-era server gives a modern POST,
    // then legacy HTTP+SSE behind the same automatic fallback.
    let server = start_http(&["--transport", "http", "--era", "legacy"]).await;
    let client = connect_http(&server.url, host_options())
        .await
        .expect("http connects");
    assert_eq!(client.negotiated().unwrap().era(), Era::Legacy);
    client.close().await;
    let server = start_http(&["--transport", "sse", "--era", "legacy"]).await;
    let sse_url = server.url.clone();
    let client = connect_http(&sse_url, host_options())
        .await
        .expect("legacy SSE connects");
    assert_eq!(client.negotiated().unwrap().era(), Era::Legacy);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_modern_starter_is_switched_to_after_the_probe_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let mut options = host_options();
    options.session.probe_timeout = Duration::from_millis(200);
    let client = connect_stdio(
        &[
            "--era",
            "modern",
            "--discover-delay-ms",
            "600",
            "--event-log",
            log.to_str().unwrap(),
        ],
        options,
    )
    .await
    .expect("connects");
    assert_eq!(client.negotiated().unwrap().era(), Era::Modern);
    client.close().await;
    let discovers = event_lines(&log, "modern-request")
        .into_iter()
        .filter(|r| r["method"] == "server/discover")
        .count();
    assert_eq!(
        discovers, 2,
        "the probe, then once more after -32022: no loop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_types_are_checked() {
    let client = connect_stdio(&["--omit-result-type"], host_options())
        .await
        .expect("connects");
    assert_eq!(
        text_of(
            &client
                .call_tool("echo", args(json!({"text": "c"})))
                .await
                .unwrap()
        ),
        "c",
        "a missing resultType is complete"
    );
    client.close().await;

    let client = connect_stdio(&["--bad-result-type"], host_options())
        .await
        .expect("connects");
    let error = client
        .call_tool("echo", args(json!({"text": "c"})))
        .await
        .expect_err("an unknown resultType is an invalid result");
    assert!(
        matches!(&error, ClientError::UnexpectedResultType { result_type, .. } if result_type == "mystery"),
        "{error:?}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_starts_a_server_that_exits_on_the_probe_again_in_the_handshake_era() {
    use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let mut stdio = StdioConfig::new(FIXTURE);
    stdio.args = vec![
        "--exit-before-initialize".to_owned(),
        "--event-log".to_owned(),
        log.to_str().unwrap().to_owned(),
    ];
    let manager = mcp_manager::McpManager::builder().build();
    let report = manager
        .connect_servers([ServerConfig::new("picky", TransportConfig::Stdio(stdio))])
        .await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    let ready = &report.ready[0];
    assert_eq!(
        ready.catalog.protocol_version(),
        ProtocolVersion::V2025_11_25
    );
    let info = manager.servers();
    assert_eq!(info[0].protocol_version.map(|v| v.era()), Some(Era::Legacy));
    manager.close().await;
    // The process started again was initialized.
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(log.contains("initialize-end"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_hosted_http_connection_mirrors_tool_headers() {
    use mcp_config::{HttpConfig, ServerConfig, TransportConfig};
    let server = start_http(&["--transport", "http"]).await;
    let manager = mcp_manager::McpManager::builder().build();
    let report = manager
        .connect_servers([ServerConfig::new(
            "modern",
            TransportConfig::Http(HttpConfig::new(server.url.clone())),
        )])
        .await;
    assert_eq!(report.ready.len(), 1, "{:?}", report.errors);
    let catalog = &report.ready[0].catalog;
    assert_eq!(catalog.protocol_version(), ProtocolVersion::V2026_07_28);
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"region_echo"), "{names:?}");
    assert!(!names.contains(&"bad_header"), "{names:?}");
    let client = manager.server("modern").expect("a live client");
    // The server answers -32020 unless Mcp-Param-Region mirrors `region`.
    let result = client
        .call_tool(
            "region_echo",
            args(json!({"region": "ap-south", "zone": 3, "text": "t"})),
        )
        .await
        .expect("the headers the tool asks for are sent through the manager's transport");
    assert!(!result.is_error.unwrap_or(false), "{result:?}");
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_era_is_kept_and_a_mismatch_points_at_it() {
    use mcp_config::{ProtocolEra, ServerConfig, StdioConfig, TransportConfig};
    let config = |id: &str, era: ProtocolEra, server_era: &str| {
        let mut stdio = StdioConfig::new(FIXTURE);
        stdio.args = vec!["--era".to_owned(), server_era.to_owned()];
        let mut config = ServerConfig::new(id, TransportConfig::Stdio(stdio));
        config.era = era;
        config
    };
    let manager = mcp_manager::McpManager::builder().build();
    let report = manager
        .connect_servers([
            config("pinned-legacy", ProtocolEra::Legacy, "both"),
            config("pinned-modern", ProtocolEra::Modern, "both"),
            config("mismatch", ProtocolEra::Modern, "legacy"),
        ])
        .await;
    let version = |id: &str| {
        report
            .ready
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.catalog.protocol_version())
    };
    assert_eq!(version("pinned-legacy"), Some(ProtocolVersion::V2025_11_25));
    assert_eq!(version("pinned-modern"), Some(ProtocolVersion::V2026_07_28));
    let error = report
        .error("mismatch")
        .expect("a modern-only client fails");
    assert_eq!(error.config_key, "era", "{error:?}");
    assert!(error.message.contains("server/discover"), "{error:?}");
    manager.close().await;
}

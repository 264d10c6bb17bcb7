//! A build without a transport's feature: the default factory fails that transport's servers with `transport_disabled`, naming the feature, and starts the others.
//!
//! These run in the builds they are about (`cargo test -p mcp-manager
//! --no-default-features --features stdio`, say); with every feature on
//! there is nothing disabled to test.

use std::collections::HashMap;

use super::support::*;
use crate::{DefaultTransportFactory, ErrorCode, McpManager, ServerError, ServerStatus};

/// A manager on the default factory, with an empty environment.
fn default_manager() -> McpManager {
    McpManager::builder()
        .factory(DefaultTransportFactory::new())
        .environment(HashMap::<String, String>::new())
        .build()
}

/// The error `id` ended in, once its connect settled.
fn failure(manager: &McpManager, id: &str) -> ServerError {
    match manager.status(id) {
        Some(ServerStatus::Error { error, retry, .. }) => {
            // A build cannot change under a running host: never retried.
            assert!(retry.is_none(), "{id}: a disabled transport was retried");
            error
        }
        other => panic!("{id}: expected an error, the status is {other:?}"),
    }
}

/// The error of a server refused for the compiled-out `feature`.
fn assert_disabled(error: &ServerError, feature: &str) {
    assert_eq!(error.code, ErrorCode::TransportDisabled);
    assert_eq!(error.code.as_str(), "transport_disabled");
    assert!(error.code.is_config_error());
    assert!(
        error.message.contains(&format!("`{feature}` feature")),
        "the message names the feature: {}",
        error.message
    );
    assert_eq!(error.config_key, "transport.type");
}

#[cfg(not(feature = "http"))]
#[tokio::test]
async fn http_and_sse_servers_fail_with_transport_disabled_naming_http() {
    let manager = default_manager();
    let sse = mcp_config::ServerConfig::new(
        "legacy",
        mcp_config::TransportConfig::Sse(mcp_config::HttpConfig::new("http://127.0.0.1:9/sse")),
    );
    let report = manager.connect_servers([http("remote"), sse]).await;
    assert!(report.ready.is_empty());
    assert_eq!(report.errors.len(), 2);
    for id in ["remote", "legacy"] {
        assert_disabled(&failure(&manager, id), "http");
    }
    manager.close().await;
}

/// In the same build the stdio transport is there: a server whose command
/// does not exist is spawned for real and fails as a missing command, not
/// as a disabled transport.
#[cfg(all(unix, feature = "stdio", not(feature = "http")))]
#[tokio::test]
async fn stdio_servers_still_start_when_http_is_compiled_out() {
    let manager = default_manager();
    let missing = mcp_config::ServerConfig::new(
        "local",
        mcp_config::TransportConfig::Stdio(mcp_config::StdioConfig::new(
            "/nonexistent/mcp-server-for-this-test",
        )),
    );
    manager.connect_servers([missing, http("remote")]).await;
    assert_eq!(failure(&manager, "local").code, ErrorCode::MissingCommand);
    assert_disabled(&failure(&manager, "remote"), "http");
    manager.close().await;
}

#[cfg(not(feature = "stdio"))]
#[tokio::test]
async fn stdio_servers_fail_with_transport_disabled_naming_stdio() {
    let manager = default_manager();
    manager.connect_servers([stdio("local")]).await;
    assert_disabled(&failure(&manager, "local"), "stdio");
    manager.close().await;
}

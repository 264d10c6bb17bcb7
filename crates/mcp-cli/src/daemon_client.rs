//! `mcpctl tools` and `mcpctl call` through the background gateway (`mcpctl serve --daemon`): an ordinary MCP client of its Unix socket, so that repeated commands reuse its warm connections.
//!
//! When a command goes through it: no `--no-daemon`, no `--stdio`/`--url`
//! servers, and a daemon answers whose key (see `serve_daemon::matching`,
//! the decision `mcpctl serve` relays by) says it serves the same sources,
//! not lazily, and, for `call`, with the same `--preset`. Its record must
//! also say its discovery was complete (no configuration error, no project
//! server held back for trust), since only then does it know everything
//! the command would report. Otherwise, or when the daemon cannot be
//! reached, the command connects its own servers as before; so it does,
//! after one warning line, when the daemon's directory, socket or process
//! is not the user's own (`serve_daemon::probe`).
//!
//! What it asks: `tools/list` with `_meta["dev.mcp-gateway/servers"]`, which
//! the gateway answers with every upstream server's status and tools as the
//! servers listed them (mcp-toolbridge's `gateway_report`), so the output
//! is the one a direct run prints; and `tools/call` under the name the
//! gateway serves the tool by, whose failure comes back with the bridge's
//! own failure in `_meta["dev.mcp-gateway/failure"]`, so the exit status
//! and message are a direct run's too. A command about one server the
//! daemon does not have ready (failed, connecting, unknown) runs directly,
//! and so reports that server's error in a direct run's words.
//!
//! Approvals are never bypassed: the daemon's session enforces the same
//! preset, and it has nobody to ask, so a call it would have to ask about
//! is refused there exactly as a direct run without a terminal refuses it
//! ("there is no terminal to ask on"). A `call` whose preset asks
//! (`workspace`, `readonly`) on a terminal therefore runs directly, where
//! the person is asked and session grants hold for the batch.

use mcp_proto::types::{CallToolRequestParams, CallToolResult, PaginatedRequestParams};
use mcp_toolbridge::gateway_report::{self, FailureReport, GatewayReport, ServerReport};
use mcp_transport::{CallOptions, Client, ClientOptions, UnixSocketTransport};

use crate::cli::{Names, Preset};
use crate::serve_daemon;
use crate::sources::SourceOptions;

/// A connection to the background gateway, with what it reported.
pub(crate) struct Daemon {
    client: Client,
    /// The servers, in the daemon's source order.
    pub(crate) servers: Vec<ServerReport>,
}

impl Daemon {
    /// The daemon serving `sources` with one of `presets`, connected and
    /// listed; `None` when there is none to use (see the module docs).
    pub(crate) async fn connect(sources: &SourceOptions, presets: &[Preset]) -> Option<Daemon> {
        if serve_daemon::has_adhoc(sources) {
            return None;
        }
        let paths = serve_daemon::Paths::new().ok()?;
        let keys: Vec<String> = presets
            .iter()
            .flat_map(|preset| {
                [Names::Model, Names::Plain].map(|names| {
                    serve_daemon::key(sources, &serve_daemon::settings(*preset, names, false))
                })
            })
            .collect();
        let (record, stream) = serve_daemon::matching(&paths, &keys).await?;
        if !record.complete {
            return None;
        }
        let transport = UnixSocketTransport::from_stream(stream, paths.socket());
        let mut options = ClientOptions::default();
        options.session.client_info = crate::runtime::client_info();
        let client = Client::connect(transport, options).await.ok()?;
        let mut params = PaginatedRequestParams::default();
        let mut meta = mcp_proto::types::JsonObject::new();
        meta.insert(gateway_report::SERVERS.to_owned(), serde_json::json!({}));
        params.meta = Some(meta.into());
        let Some(report) = client
            .list_tools_with(&params, CallOptions::default())
            .await
            .ok()
            .and_then(|list| GatewayReport::parse(list.meta.as_ref()))
        else {
            client.close().await;
            return None;
        };
        let mut servers = report.servers;
        let rank = |id: &str| {
            record
                .servers
                .iter()
                .position(|known| known == id)
                .unwrap_or(usize::MAX)
        };
        servers.sort_by_key(|server| rank(&server.id));
        tracing::debug!(socket = %paths.socket().display(), "through the background gateway");
        Some(Daemon { client, servers })
    }

    /// The server `id` when it is ready.
    pub(crate) fn ready(&self, id: &str) -> Option<&ServerReport> {
        self.servers
            .iter()
            .find(|server| server.id == id && server.status == "ready")
    }

    /// Calls the tool the gateway serves as `served`; dropping the future
    /// cancels the call (the gateway cancels it upstream).
    pub(crate) async fn call(
        &self,
        served: &str,
        arguments: serde_json::Value,
        options: CallOptions,
    ) -> Result<CallToolResult, mcp_transport::ClientError> {
        let params = CallToolRequestParams {
            name: served.to_owned(),
            arguments: match arguments {
                serde_json::Value::Object(map) => Some(map),
                _ => None,
            },
            // Every failure as the gateway's report, a server's JSON-RPC
            // error too: the failure is made again here as a direct call
            // makes it.
            meta: mcp_proto::types::Meta::from_text(format!(
                r#"{{"{}":true}}"#,
                gateway_report::FAILURE
            ))
            .ok(),
            ..Default::default()
        };
        self.client.call_tool_with(&params, options).await
    }

    /// Ends this connection (the daemon and its servers keep running).
    pub(crate) async fn close(self) {
        self.client.close().await;
    }
}

/// The bridge's failure a call result carries, if it failed.
pub(crate) fn failure(result: &CallToolResult) -> Option<mcp_toolbridge::CallFailure> {
    FailureReport::parse(result.meta.as_ref()).map(|report| report.failure())
}

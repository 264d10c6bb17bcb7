//! What a host asked each server to send it, remembered across connections: the log level and the subscribed resources, asked again of every new connection.
//!
//! `logging/setLevel` (MCP "Server/Utilities/Logging") and
//! `resources/subscribe` (MCP "Server/Resources", "Subscriptions") are
//! state of one connection: a server started again, reconnected after a
//! failure or given a new session has forgotten them. The manager keeps,
//! per server, the last level a [`ServerHandle`](crate::ServerHandle) set
//! successfully and the URIs subscribed to (at most
//! [`ManagerOptions::max_subscriptions`](crate::ManagerOptions::max_subscriptions)),
//! and its task asks each new connection for them once the catalog is
//! listed and before the server is reported `ready`, so a host that sees
//! `ready` finds them in force. What the new connection refuses (a
//! capability it no longer declares, an error, no answer within
//! [`ManagerOptions::list_page_timeout`](crate::ManagerOptions::list_page_timeout)
//! for the whole pass) is logged and stays remembered for the next
//! connection; the server becomes `ready` all the same. The stateless era
//! (2026-07-28) has neither request, and nothing is asked there. What is
//! remembered goes with the server's entry: removing the server forgets
//! it; a restart, a reconnect, a new configuration of the same id keep it.

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_proto::Era;
use mcp_proto::session::Negotiated;
use mcp_proto::text;
use mcp_proto::types::LoggingLevel;
use mcp_transport::Client;

/// One server's remembered level and subscriptions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Interest {
    /// The last level set successfully, if any.
    pub(crate) level: Option<LoggingLevel>,
    /// The URIs subscribed to and not unsubscribed from since.
    pub(crate) subscriptions: BTreeSet<String>,
}

impl Interest {
    fn is_empty(&self) -> bool {
        self.level.is_none() && self.subscriptions.is_empty()
    }
}

/// Asks a new connection for `interest`, within `deadline` for the whole
/// pass. Failures are logged; nothing here fails the connection.
pub(crate) async fn reapply(
    id: &str,
    client: &Client,
    negotiated: &Negotiated,
    interest: Interest,
    deadline: Duration,
) {
    if interest.is_empty() {
        return;
    }
    if negotiated.era() != Era::Legacy {
        tracing::debug!(
            server = id,
            "the stateless era has no logging/setLevel or resources/subscribe; nothing asked again"
        );
        return;
    }
    let capabilities = negotiated.server_capabilities();
    let logging = capabilities.logging.is_some();
    let subscribe = capabilities
        .resources
        .as_ref()
        .and_then(|resources| resources.subscribe)
        == Some(true);
    let pass = async {
        if let Some(level) = interest.level {
            if !logging {
                tracing::warn!(
                    server = id,
                    level = level.as_str(),
                    "the new connection does not declare logging; the log level is not set again"
                );
            } else if let Err(error) = client.set_logging_level(level).await {
                tracing::warn!(
                    server = id,
                    level = level.as_str(),
                    error = %text::ErrorChain(&error),
                    "the new connection refused the log level"
                );
            }
        }
        if interest.subscriptions.is_empty() {
            return;
        }
        if !subscribe {
            tracing::warn!(
                server = id,
                subscriptions = interest.subscriptions.len(),
                "the new connection does not declare resources.subscribe; no subscription is made again"
            );
            return;
        }
        for uri in &interest.subscriptions {
            if let Err(error) = client.subscribe_resource(uri).await {
                tracing::warn!(
                    server = id,
                    uri = %text::error_text(uri, text::ERROR_TEXT_LIMIT),
                    error = %text::ErrorChain(&error),
                    "the new connection refused a subscription"
                );
            }
        }
    };
    if tokio::time::timeout(deadline, pass).await.is_err() {
        tracing::warn!(
            server = id,
            deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
            "the log level and subscriptions were not all asked again in time"
        );
    }
}

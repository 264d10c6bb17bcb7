//! Logging and resource subscriptions through the gateway ("Server/Utilities/Logging", "Server/Resources" §Subscriptions), per client.
//!
//! The gateway declares `logging` when a usable server does and
//! `resources.subscribe` when one does. Each client's `logging/setLevel`
//! is its own: the handshake-era servers that log are asked for the most
//! verbose level any connected client set, and each client gets the
//! `notifications/message` at or above its own level (every one before it
//! set a level, as a server sends what it likes until then). A 2026-07-28
//! server has no `logging/setLevel` (2026-07-28 "Utilities/Logging"): it
//! is not sent one, and each request forwarded to it for a client that
//! set a level carries that level as the request's
//! `io.modelcontextprotocol/logLevel` instead ([`super::forward::with_log_level`]).
//! A 2026-07-28 client's own requests carry their level the same way, and
//! it gets a server's log messages during such a request only when the
//! request asked for a level, at or above it. `resources/subscribe` is forwarded to
//! the server the URI belongs to (the one that lists it, else the one with
//! the longest matching template) once, however many clients subscribe
//! (to a 2026-07-28 server, whose era has no such method, as a URI of its
//! `subscriptions/listen` filter: the connection's session does that);
//! `notifications/resources/updated` goes to the clients subscribed to that
//! URI, and the server is unsubscribed when the last of them unsubscribes
//! or disconnects.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use mcp_proto::types::{LoggingLevel, ServerCapabilities};
use mcp_proto::{ErrorObject, jsonrpc::error_codes};

use super::Gateway;
use super::forward::{self, Upstream};

/// What the gateway's clients asked of the servers together.
#[derive(Debug, Default)]
pub(super) struct Relays {
    state: Mutex<RelayState>,
}

#[derive(Debug, Default)]
struct RelayState {
    /// The next connection's number.
    next: u64,
    /// Each connection's level, by connection number.
    levels: HashMap<u64, LoggingLevel>,
    /// The subscribed URIs: the server subscribed to and how many
    /// connections hold the subscription.
    subscribed: HashMap<String, (String, usize)>,
}

impl Relays {
    fn lock(&self) -> std::sync::MutexGuard<'_, RelayState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A number for a new connection.
    pub(super) fn connection(&self) -> u64 {
        let mut state = self.lock();
        state.next += 1;
        state.next
    }
}

/// The capabilities the usable servers bring to the gateway's: `logging`
/// when one declares it, `resources.subscribe` when one does.
pub(super) fn add_capabilities(gateway: &Gateway, capabilities: &mut ServerCapabilities) {
    for server in forward::usable(gateway) {
        let declared = server.capabilities();
        if declared.logging.is_some() {
            capabilities.logging.get_or_insert_with(Default::default);
        }
        if declared
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true))
            && let Some(resources) = capabilities.resources.as_mut()
        {
            resources.subscribe = Some(true);
        }
    }
}

/// `logging/setLevel` of connection `connection`: kept as its level, and
/// the handshake-era servers that log asked for the most verbose level any
/// connection set (a 2026-07-28 server gets the connection's level with
/// each of its requests instead). Fails when no server logs.
pub(super) async fn set_level(
    gateway: &Gateway,
    connection: u64,
    level: LoggingLevel,
) -> Result<(), ErrorObject> {
    let wanted = {
        let mut state = gateway.relays.lock();
        state.levels.insert(connection, level);
        state.levels.values().min().copied().unwrap_or(level)
    };
    let mut asked = 0;
    let mut failure = None;
    for server in forward::usable(gateway) {
        if server.capabilities().logging.is_none() {
            continue;
        }
        asked += 1;
        if forward::speaks_modern(gateway, &server.id) {
            // Its level goes with each request (`with_log_level`).
            continue;
        }
        let upstream = Upstream::of(gateway, &server.id)?;
        if let Err(error) = upstream.client.set_logging_level(wanted).await {
            failure = Some(forward::upstream_error(error));
        }
    }
    match (asked, failure) {
        (0, _) => Err(ErrorObject::method_not_found(
            mcp_proto::methods::LOGGING_SET_LEVEL,
        )),
        // One server's refusal is the answer when it is the only one.
        (1, Some(error)) => Err(error),
        _ => Ok(()),
    }
}

/// A connection that ended: its level no longer counts, and its
/// subscriptions are given up (`uris`), the server unsubscribed from each
/// one no other connection holds.
pub(super) fn forget(gateway: &Gateway, connection: u64, uris: Vec<String>) {
    let released: Vec<(String, String)> = {
        let mut state = gateway.relays.lock();
        state.levels.remove(&connection);
        uris.into_iter()
            .filter_map(|uri| release(&mut state, uri))
            .collect()
    };
    if released.is_empty() {
        return;
    }
    let gateway = gateway.clone();
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            for (server, uri) in released {
                if let Ok(upstream) = Upstream::of(&gateway, &server) {
                    let _ = upstream.client.unsubscribe_resource(&uri).await;
                }
            }
        });
    }
}

/// One connection's hold on `uri` given up: the server and URI to
/// unsubscribe when it was the last.
fn release(state: &mut RelayState, uri: String) -> Option<(String, String)> {
    let (server, count) = state.subscribed.get_mut(&uri)?;
    *count -= 1;
    if *count > 0 {
        return None;
    }
    let server = server.clone();
    state.subscribed.remove(&uri);
    Some((server, uri))
}

/// `resources/subscribe` of `uri` for one connection (which did not hold
/// it yet): the server it belongs to is subscribed unless another
/// connection holds it already.
pub(super) async fn subscribe(
    gateway: &Gateway,
    uri: &str,
    modern: bool,
) -> Result<(), ErrorObject> {
    {
        let mut state = gateway.relays.lock();
        if let Some((_, count)) = state.subscribed.get_mut(uri) {
            *count += 1;
            return Ok(());
        }
    }
    let server = forward::resource_server(gateway, uri, modern, true).await?;
    let upstream = Upstream::of(gateway, &server)?;
    let declared = forward::usable(gateway)
        .iter()
        .find(|usable| usable.id == server)
        .is_some_and(|usable| {
            usable
                .capabilities()
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true))
        });
    if !declared {
        return Err(ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            format!(
                "server {} does not offer resource subscriptions",
                mcp_proto::text::error_text(&server, mcp_proto::text::NAME_LIMIT)
            ),
        ));
    }
    upstream
        .client
        .subscribe_resource(uri)
        .await
        .map_err(forward::upstream_error)?;
    let mut state = gateway.relays.lock();
    state
        .subscribed
        .entry(uri.to_owned())
        .or_insert_with(|| (server, 0))
        .1 += 1;
    Ok(())
}

/// `resources/unsubscribe` of `uri` for one connection that held it.
pub(super) async fn unsubscribe(gateway: &Gateway, uri: &str) -> Result<(), ErrorObject> {
    let released = release(&mut gateway.relays.lock(), uri.to_owned());
    if let Some((server, uri)) = released {
        let upstream = Upstream::of(gateway, &server)?;
        upstream
            .client
            .unsubscribe_resource(&uri)
            .await
            .map_err(forward::upstream_error)?;
    }
    Ok(())
}

/// Whether a log message at `level` reaches a client whose level is
/// `client` (none set: every message does).
pub(super) fn reaches(client: Option<LoggingLevel>, level: LoggingLevel) -> bool {
    client.is_none_or(|client| level >= client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_gets_the_messages_at_or_above_its_level() {
        assert!(reaches(None, LoggingLevel::Debug));
        assert!(reaches(Some(LoggingLevel::Warning), LoggingLevel::Error));
        assert!(reaches(Some(LoggingLevel::Warning), LoggingLevel::Warning));
        assert!(!reaches(Some(LoggingLevel::Warning), LoggingLevel::Info));
    }

    #[test]
    fn a_uri_is_released_by_its_last_holder() {
        let mut state = RelayState::default();
        state.subscribed.insert("test://a".into(), ("fx".into(), 2));
        assert_eq!(release(&mut state, "test://a".into()), None);
        assert_eq!(
            release(&mut state, "test://a".into()),
            Some(("fx".into(), "test://a".into()))
        );
        assert_eq!(release(&mut state, "test://a".into()), None);
    }
}

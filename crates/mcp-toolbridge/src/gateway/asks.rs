//! Servers that ask back through the gateway: `elicitation/create`, `sampling/createMessage` and `roots/list` from a server, passed to the gateway's client whose call caused them ("Client/Elicitation", "Client/Sampling", "Client/Roots").
//!
//! The servers' connections are the manager's, made before any client of
//! the gateway connects, so the gateway's handler ([`GatewayAsks`], the
//! manager's `ClientHandler`) offers the servers all three capabilities,
//! and each request is answered by the client that is waiting on the
//! server: the one handshake-era connection with a call, prompt or read in
//! flight (a request names no call of its own, so while two clients wait
//! at once the request is refused rather than guessed). That client's own
//! session refuses a capability the client did not declare, and with no
//! client to ask the server gets -32601: nothing is queued.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_proto::jsonrpc::error_codes;
use mcp_proto::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ListRootsResult, RootsCapability, SamplingCapability,
};
use mcp_proto::{ErrorObject, methods};
use mcp_transport::ClientHandler;
use mcp_transport::server::{Peer, PeerError};

/// The manager's `ClientHandler` for a gateway: it passes each request a
/// server sends (elicitation, sampling, roots) to the gateway's client
/// whose request is waiting on a server (see the module docs). Make one
/// before the manager (`ManagerOptions::client`'s `handler`), and give the
/// same to the gateway ([`GatewayOptions::asks`](crate::GatewayOptions::asks)).
#[derive(Debug, Default)]
pub struct GatewayAsks {
    waiting: Mutex<HashMap<u64, Waiting>>,
}

/// One connection with requests in flight on the servers.
#[derive(Debug)]
struct Waiting {
    peer: Peer,
    requests: usize,
}

impl GatewayAsks {
    /// A handler with no client waiting yet.
    pub fn new() -> Arc<GatewayAsks> {
        Arc::new(GatewayAsks::default())
    }

    /// Connection `connection` (whose client is `peer`) waits on a server
    /// until the guard drops.
    pub(super) fn waiting(self: &Arc<Self>, connection: u64, peer: Peer) -> WaitGuard {
        let mut waiting = self.lock();
        waiting
            .entry(connection)
            .or_insert(Waiting { peer, requests: 0 })
            .requests += 1;
        WaitGuard {
            asks: Arc::clone(self),
            connection,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client to ask: the one connection waiting on a server.
    fn target(&self, method: &str) -> Result<Peer, ErrorObject> {
        let waiting = self.lock();
        let mut clients = waiting.values();
        match (clients.next(), clients.next()) {
            (Some(only), None) => Ok(only.peer.clone()),
            (None, _) => Err(ErrorObject::new(
                error_codes::METHOD_NOT_FOUND,
                format!(
                    "{method}: no client of the gateway is waiting on this server to answer it"
                ),
            )),
            (Some(_), Some(_)) => Err(ErrorObject::new(
                error_codes::METHOD_NOT_FOUND,
                format!(
                    "{method}: several clients of the gateway are waiting on servers, and the \
                     request does not say whose call it belongs to"
                ),
            )),
        }
    }

    /// Sends `method` to the client waiting and decodes its answer.
    async fn ask<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<T, ErrorObject> {
        let peer = self.target(method)?;
        let answer = peer
            .request(method, params, None)
            .await
            .map_err(|error| match error {
                PeerError::Request(mcp_proto::server::RequestError::Rpc(error)) => {
                    super::forward::passed_on(error)
                }
                PeerError::Refused(refused) => ErrorObject::new(
                    error_codes::METHOD_NOT_FOUND,
                    format!("{method}: the gateway's client cannot answer it ({refused})"),
                ),
                other => ErrorObject::new(
                    error_codes::INTERNAL_ERROR,
                    format!("{method}: the gateway's client did not answer ({other})"),
                ),
            })?;
        answer.decode().map_err(|error| {
            ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!(
                    "{method}: the gateway's client answered with an invalid result: {}",
                    mcp_proto::text::bound(&error.to_string(), 256)
                ),
            )
        })
    }
}

/// Ends a connection's wait on a server.
pub(super) struct WaitGuard {
    asks: Arc<GatewayAsks>,
    connection: u64,
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let mut waiting = self.asks.lock();
        if let Some(entry) = waiting.get_mut(&self.connection) {
            entry.requests -= 1;
            if entry.requests == 0 {
                waiting.remove(&self.connection);
            }
        }
    }
}

#[async_trait::async_trait]
impl ClientHandler for GatewayAsks {
    /// All three, with elicitation's form and URL modes: the clients that
    /// will answer connect later, each declaring its own.
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            sampling: Some(SamplingCapability::default()),
            elicitation: Some(ElicitationCapability {
                form: Some(Default::default()),
                url: Some(Default::default()),
                ..ElicitationCapability::default()
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        self.ask::<(), _>(methods::ROOTS_LIST, None).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.ask(methods::SAMPLING_CREATE_MESSAGE, Some(&params))
            .await
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.ask(methods::ELICITATION_CREATE, Some(&params)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_no_client_waiting_a_servers_request_is_refused_at_once() {
        let asks = GatewayAsks::new();
        let error = asks.target(methods::ELICITATION_CREATE).unwrap_err();
        assert_eq!(error.code, error_codes::METHOD_NOT_FOUND);
        assert!(error.message.contains("no client"), "{error}");
        let declared = asks.capabilities();
        assert!(declared.sampling.is_some() && declared.roots.is_some());
        assert!(declared.elicitation.unwrap().form.is_some());
    }
}

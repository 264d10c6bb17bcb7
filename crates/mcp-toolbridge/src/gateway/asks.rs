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
//!
//! A 2026-07-28 server's own input rounds in a 2026-07-28 client's request
//! do not come here: the gateway takes them back from the call and relays
//! them whole ([`super::rounds`]); in a handshake-era client's request
//! they come here, and that client is asked as for any server request.
//!
//! A 2026-07-28 client has no connection a server's request could reach:
//! its call, prompt or read waits instead as a request of its own, and the
//! question goes into that request's input rounds ([`super::rounds`]),
//! refused (-32601) when the request's client did not declare the
//! capability (2026-07-28 "Multi round-trip requests": a server never asks
//! for input the client cannot give). Such a request waits on its server
//! while its work runs; parked between rounds (answered `input_required`,
//! its work waiting for the client's retry, for up to five minutes) it is
//! no client waiting: another client's server may ask its own client
//! meanwhile. A parked request is asked only when no other client waits
//! (its own server asking again before the retry).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mcp_proto::jsonrpc::error_codes;
use mcp_proto::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ListRootsResult, RootsCapability, SamplingCapability,
};
use mcp_proto::{ErrorObject, methods};
use mcp_transport::ClientHandler;
use mcp_transport::server::{Peer, PeerError};
use tokio::sync::{mpsc, oneshot};

use super::rounds::Ask;

/// The manager's `ClientHandler` for a gateway: it passes each request a
/// server sends (elicitation, sampling, roots) to the gateway's client
/// whose request is waiting on a server (see the module docs). Make one
/// before the manager (`ManagerOptions::client`'s `handler`), and give the
/// same to the gateway ([`GatewayOptions::asks`](crate::GatewayOptions::asks)).
#[derive(Debug, Default)]
pub struct GatewayAsks {
    /// By connection, and for a 2026-07-28 request by its own number too
    /// (0 for a handshake-era connection, whose client answers itself).
    waiting: Mutex<HashMap<(u64, u64), Waiting>>,
    /// The last number given to a 2026-07-28 request.
    requests: AtomicU64,
}

/// One connection, or one 2026-07-28 request, with requests in flight on
/// the servers.
#[derive(Debug)]
struct Waiting {
    asker: Asker,
    requests: usize,
    /// A 2026-07-28 request parked between its input rounds
    /// ([`WaitGuard::parked`]).
    parked: Arc<AtomicBool>,
}

/// Who answers a server's request.
#[derive(Clone, Debug)]
enum Asker {
    /// A handshake-era client, asked on its connection.
    Peer(Peer),
    /// A 2026-07-28 request's input rounds, with what its client declared.
    Rounds {
        asks: mpsc::UnboundedSender<Ask>,
        capabilities: Box<ClientCapabilities>,
    },
}

impl GatewayAsks {
    /// A handler with no client waiting yet.
    pub fn new() -> Arc<GatewayAsks> {
        Arc::new(GatewayAsks::default())
    }

    /// Connection `connection` (whose client is `peer`) waits on a server
    /// until the guard drops.
    pub(super) fn waiting(self: &Arc<Self>, connection: u64, peer: Peer) -> WaitGuard {
        self.wait((connection, 0), Asker::Peer(peer))
    }

    /// A 2026-07-28 request of connection `connection`, whose client
    /// declared `capabilities`, waits on a server until the guard drops;
    /// the server's requests meanwhile go to `asks`.
    pub(super) fn waiting_in_rounds(
        self: &Arc<Self>,
        connection: u64,
        asks: mpsc::UnboundedSender<Ask>,
        capabilities: ClientCapabilities,
    ) -> WaitGuard {
        let request = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        self.wait(
            (connection, request),
            Asker::Rounds {
                asks,
                capabilities: Box::new(capabilities),
            },
        )
    }

    fn wait(self: &Arc<Self>, key: (u64, u64), asker: Asker) -> WaitGuard {
        let mut waiting = self.lock();
        let entry = waiting.entry(key).or_insert(Waiting {
            asker,
            requests: 0,
            parked: Arc::default(),
        });
        entry.requests += 1;
        WaitGuard {
            asks: Arc::clone(self),
            key,
            parked: Arc::clone(&entry.parked),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(u64, u64), Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client to ask: the one connection (or 2026-07-28 request)
    /// waiting on a server; a request parked between its input rounds
    /// only when none is.
    fn target(&self, method: &str) -> Result<Asker, ErrorObject> {
        let waiting = self.lock();
        let running = |w: &&Waiting| !w.parked.load(Ordering::Acquire);
        let mut clients: Box<dyn Iterator<Item = &Waiting>> =
            if waiting.values().any(|w| running(&w)) {
                Box::new(waiting.values().filter(running))
            } else {
                Box::new(waiting.values())
            };
        match (clients.next(), clients.next()) {
            (Some(only), None) => Ok(only.asker.clone()),
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
        let peer = match self.target(method)? {
            Asker::Peer(peer) => peer,
            Asker::Rounds { asks, capabilities } => {
                return in_rounds(method, params, &asks, &capabilities).await;
            }
        };
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

/// Puts a server's request `method` into a 2026-07-28 request's input
/// rounds (`asks`) and waits for the client's answer on its retry; -32601
/// when the client did not declare the capability the request needs.
async fn in_rounds<P: serde::Serialize, T: serde::de::DeserializeOwned>(
    method: &str,
    params: Option<&P>,
    asks: &mpsc::UnboundedSender<Ask>,
    capabilities: &ClientCapabilities,
) -> Result<T, ErrorObject> {
    let params = params
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))?;
    if let Some(missing) = undeclared(method, params.as_ref(), capabilities) {
        return Err(ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            format!("{method}: the gateway's client did not declare {missing}"),
        ));
    }
    let (answer, answered) = oneshot::channel();
    asks.send(Ask {
        method: method.to_owned(),
        params,
        answer,
    })
    .map_err(|_| {
        ErrorObject::new(
            error_codes::INTERNAL_ERROR,
            format!("{method}: the gateway's client is no longer waiting"),
        )
    })?;
    let value = answered.await.map_err(|_| {
        ErrorObject::new(
            error_codes::INTERNAL_ERROR,
            format!("{method}: the gateway's client did not answer before its request ended"),
        )
    })?;
    serde_json::from_value(value).map_err(|error| {
        ErrorObject::new(
            error_codes::INTERNAL_ERROR,
            format!(
                "{method}: the gateway's client answered with an invalid result: {}",
                mcp_proto::text::bound(&error.to_string(), 256)
            ),
        )
    })
}

/// The capability a client must have declared to be asked `method` (with
/// `params`: an elicitation's mode), when `capabilities` lack it.
fn undeclared(
    method: &str,
    params: Option<&serde_json::Value>,
    capabilities: &ClientCapabilities,
) -> Option<&'static str> {
    match method {
        methods::ROOTS_LIST if capabilities.roots.is_none() => Some("roots"),
        methods::SAMPLING_CREATE_MESSAGE if capabilities.sampling.is_none() => Some("sampling"),
        methods::ELICITATION_CREATE => {
            let Some(elicitation) = &capabilities.elicitation else {
                return Some("elicitation");
            };
            let url = params
                .and_then(|p| p.get("mode"))
                .and_then(serde_json::Value::as_str)
                == Some("url");
            if url {
                (!elicitation.supports_url()).then_some("elicitation in URL mode")
            } else {
                (!elicitation.supports_form()).then_some("elicitation in form mode")
            }
        }
        _ => None,
    }
}

/// Ends a connection's (or a 2026-07-28 request's) wait on a server.
pub(super) struct WaitGuard {
    asks: Arc<GatewayAsks>,
    key: (u64, u64),
    parked: Arc<AtomicBool>,
}

impl WaitGuard {
    /// The flag that marks the request parked between its input rounds
    /// (set while its work waits for the client's retry): then it is no
    /// client waiting on a server.
    pub(super) fn parked(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.parked)
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let mut waiting = self.asks.lock();
        if let Some(entry) = waiting.get_mut(&self.key) {
            entry.requests -= 1;
            if entry.requests == 0 {
                waiting.remove(&self.key);
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

    /// Whether `asker` is the input rounds of the request fed by `sender`.
    fn is(asker: &Asker, sender: &mpsc::UnboundedSender<Ask>) -> bool {
        matches!(asker, Asker::Rounds { asks, .. } if asks.same_channel(sender))
    }

    #[test]
    fn a_request_parked_between_rounds_is_no_client_waiting() {
        let asks = GatewayAsks::new();
        let (first_asks, _first_asked) = mpsc::unbounded_channel();
        let (second_asks, _second_asked) = mpsc::unbounded_channel();
        let all = ClientCapabilities::default();
        let first = asks.waiting_in_rounds(1, first_asks.clone(), all.clone());
        let second = asks.waiting_in_rounds(2, second_asks.clone(), all);
        // Both running: a request names no call, so it is refused.
        let error = asks.target(methods::SAMPLING_CREATE_MESSAGE).unwrap_err();
        assert!(error.message.contains("several clients"), "{error}");

        // The first parked (its work waits for its client's retry): the
        // second is the one client waiting.
        first.parked().store(true, Ordering::Release);
        let asker = asks.target(methods::SAMPLING_CREATE_MESSAGE).unwrap();
        assert!(is(&asker, &second_asks), "{asker:?}");

        // Both parked: as ambiguous as both running.
        second.parked().store(true, Ordering::Release);
        assert!(asks.target(methods::ROOTS_LIST).is_err());

        // The second gone: the parked first is the only one its server
        // can mean, and it gets the question for its next round.
        drop(second);
        let asker = asks.target(methods::ROOTS_LIST).unwrap();
        assert!(is(&asker, &first_asks), "{asker:?}");

        // Resumed: running again.
        first.parked().store(false, Ordering::Release);
        assert!(is(&asks.target(methods::ROOTS_LIST).unwrap(), &first_asks));
        drop(first);
        assert!(asks.target(methods::ROOTS_LIST).is_err());
    }
}

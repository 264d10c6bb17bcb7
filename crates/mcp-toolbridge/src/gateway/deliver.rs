//! What the gateway passes on to a client from its servers: in the order each server sent it, and held back rather than dropped while the client reads slowly.
//!
//! - Order. A server's answer comes to the gateway on the call's own
//!   path, its log messages and resource updates as the manager's events
//!   (`ManagerEvent::Log`, read by each connection's watcher task): two
//!   paths that race. A call, prompt or read whose server said anything
//!   while it ran ([`Marks`]) waits, before its answer goes, until the
//!   manager has emitted everything that server sent before the answer
//!   (`ServerHandle::notifications_handled`) and the connection's watcher
//!   has passed those events on ([`Settle`]), so that a log message sent
//!   just before the answer reaches the client before it ("Transports":
//!   messages related to a request go on its stream ahead of its answer).
//!   Each wait is bounded: the manager's by [`SETTLE_LIMIT`] (it reads a
//!   server's notifications between its catalog refreshes), the
//!   watcher's by [`CATCH_UP_LIMIT`] (it sends at the pace the client
//!   reads: past that the answer goes first).
//! - Backpressure. What the watcher relays ([`Outgoing`]) is sent with the
//!   waiting `send_notification`, so a client that reads slowly holds its
//!   own watcher back instead of losing messages. Nothing else waits for
//!   it: each connection has its own watcher, and the manager's event
//!   channel never blocks its sender. A client so far behind that the
//!   manager's channel (`ManagerOptions::event_capacity` events) moved on
//!   without it has the events it missed dropped, counted in a warning
//!   ([`lagged`]).

use std::sync::Arc;
use std::time::Duration;

use mcp_manager::ServerHandle;
use mcp_proto::jsonrpc::Notification;
use mcp_transport::server::{Peer, RequestContext};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{Connection, Gateway, forward};

/// Where a call's progress goes, on the stream it opens: the request's own
/// context, or, for the work of a 2026-07-28 client's call that goes on
/// across input rounds, the request it now answers to, the first and then
/// each retry that resumes it (2026-07-28: request-scoped notifications
/// go only on that request's own response stream, with its own
/// `progressToken`; between a round's answer and its retry there is no
/// stream, and a report then is not sent). A server's log messages need
/// no following: each 2026-07-28 request over HTTP is a connection of its
/// own, and the retry's connection passes them on itself.
#[derive(Clone, Debug)]
pub(super) enum Target {
    /// One request's, for as long as it runs.
    Fixed(RequestContext),
    /// The request the work answers to now.
    Follows(Arc<std::sync::Mutex<RequestContext>>),
}

impl Target {
    /// Follows `context`, then each request [`Target::follow`] names.
    pub(super) fn following(context: RequestContext) -> Target {
        Target::Follows(Arc::new(std::sync::Mutex::new(context)))
    }

    /// The request's context now.
    pub(super) fn now(&self) -> RequestContext {
        match self {
            Target::Fixed(context) => context.clone(),
            Target::Follows(current) => current
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }

    /// The work answers to `context` from now on (a retry that resumed
    /// it); a fixed target stays.
    pub(super) fn follow(&self, context: RequestContext) {
        if let Target::Follows(current) = self {
            *current
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = context;
        }
    }
}

/// The longest an answer waits for the manager to handle the
/// notifications its server sent before it.
pub(super) const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// The longest an answer then waits for the connection's watcher to pass
/// those notifications on: it sends at the pace the client reads, and a
/// client that reads slowly gets them before the answer within this.
pub(super) const CATCH_UP_LIMIT: Duration = Duration::from_secs(30);

/// A notification the connection's watcher sends, waiting for room.
pub(super) enum Outgoing {
    /// To the client's connection as a whole.
    Connection(Notification),
    /// About a request in flight: over Streamable HTTP on its stream.
    About {
        context: RequestContext,
        method: &'static str,
        params: Value,
    },
}

/// Asks for the connection's watcher to catch up: the sender is answered
/// once every manager event emitted before the ask was handled and what
/// it relays was handed to the client's connection.
pub(super) type Settle = oneshot::Sender<()>;

/// Sends what the watcher queued, in order, each waiting for room
/// ([`Peer::send_notification`]); a connection that ended takes nothing.
pub(super) async fn send_queued(connection: &Connection, peer: Option<&Peer>) {
    loop {
        let queued = std::mem::take(&mut connection.lock().outgoing);
        if queued.is_empty() {
            return;
        }
        for outgoing in queued {
            let sent = match &outgoing {
                Outgoing::Connection(notification) => match peer {
                    Some(peer) => {
                        peer.send_notification(&notification.method, notification.params.as_ref())
                            .await
                    }
                    None => Ok(()),
                },
                Outgoing::About {
                    context,
                    method,
                    params,
                } => context.send_notification(method, Some(params)).await,
            };
            if sent.is_err() {
                // The client is gone: nothing left to tell it.
                connection.lock().outgoing.clear();
                return;
            }
        }
    }
}

/// The watcher fell `missed` events behind the manager's channel: they
/// are lost for this client; counted, and said in a warning with the
/// connection's total.
pub(super) fn lagged(connection: &Connection, missed: u64) {
    let total = {
        let mut state = connection.lock();
        state.dropped = state.dropped.saturating_add(missed);
        state.dropped
    };
    tracing::warn!(
        connection = connection.number,
        missed,
        total,
        "a client is not reading what the gateway relays: the servers' events it fell behind on were dropped for it"
    );
}

/// How many notifications each server a request may reach had sent when
/// the request started.
pub(super) struct Marks(Vec<(ServerHandle, u64)>);

impl Marks {
    /// `server`'s mark, or every usable server's when it is not known yet
    /// (a prompt or a read, routed as it runs).
    pub(super) fn of(gateway: &Gateway, server: Option<&str>) -> Marks {
        let backend = gateway.session.inner.backend();
        let handles: Vec<ServerHandle> = match server {
            Some(server) => backend.server(server).into_iter().collect(),
            None => forward::usable(gateway)
                .iter()
                .filter_map(|usable| backend.server(&usable.id))
                .collect(),
        };
        Marks(
            handles
                .into_iter()
                .map(|handle| {
                    let sent = handle.notifications_sent();
                    (handle, sent)
                })
                .collect(),
        )
    }

    /// Before the answer: when a server sent notifications since the
    /// mark, waits until the manager has emitted them (at most
    /// [`SETTLE_LIMIT`]) and `connection`'s watcher has passed them on (at
    /// most [`CATCH_UP_LIMIT`]).
    /// Returns at once when none did, the common case.
    pub(super) async fn settle(&self, connection: &Arc<Connection>) {
        let mut said = false;
        for (handle, sent) in &self.0 {
            if handle.notifications_sent() != *sent {
                said = true;
                handle.notifications_handled(SETTLE_LIMIT).await;
            }
        }
        if !said {
            return;
        }
        let (settled, caught_up) = oneshot::channel();
        // A watcher already [`SETTLE_QUEUE`] asks behind (its client reads
        // nothing) is not waited for: the answer goes first.
        if connection.settle.try_send(settled).is_ok() {
            let _ = tokio::time::timeout(CATCH_UP_LIMIT, caught_up).await;
        }
    }
}

/// The most asks to catch up a connection's watcher holds: each request
/// whose server spoke while it ran asks once, and the watcher answers them
/// as it gets to them; past this, requests answer without waiting.
pub(super) const SETTLE_QUEUE: usize = 64;

/// The sending end of a connection's asks to its watcher, and the
/// watcher's end, holding at most [`SETTLE_QUEUE`].
pub(super) fn settle_channel() -> (mpsc::Sender<Settle>, mpsc::Receiver<Settle>) {
    mpsc::channel(SETTLE_QUEUE)
}

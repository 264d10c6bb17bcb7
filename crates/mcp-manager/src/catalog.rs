//! Catalogs: a server's tools, resources and prompts as one immutable, shared value, and how they are listed.
//!
//! A [`Catalog`] never changes once built; a refresh builds a new one and
//! swaps the `Arc`, so a snapshot taken earlier keeps the catalog it saw
//! (an in-flight catalog never changes). Every swap gets a new
//! [`LifetimeId`]; the tool bridge binds session grants to it, so a refresh,
//! reconnect, disable, delete or config change revokes them.
//!
//! Listing follows `nextCursor` (MCP "Utilities/Pagination"), with a
//! deadline per page, stops after [`ManagerOptions::max_tools`](crate::ManagerOptions::max_tools)
//! items, [`ManagerOptions::max_list_pages`](crate::ManagerOptions::max_list_pages)
//! pages or [`ManagerOptions::max_empty_pages`](crate::ManagerOptions::max_empty_pages)
//! empty pages in a row (in each case the catalog keeps what it got and
//! says it was truncated), and refuses a cursor the server already sent
//! (it would loop forever).

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use mcp_proto::ProtocolVersion;
use mcp_proto::methods;
use mcp_proto::types::{
    Implementation, ListPromptsResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, Prompt, Resource, ServerCapabilities, Skill, Tool,
};
use mcp_transport::{CallOptions, Client, ClientError};

/// One catalog lifetime: unique within a manager, new on every swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LifetimeId(u64);

impl LifetimeId {
    pub(crate) fn new(value: u64) -> Self {
        LifetimeId(value)
    }

    /// The number, for logs and maps.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for LifetimeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lifetime-{}", self.0)
    }
}

/// The listing back in order: `kept` as they came, each of `out` put back
/// at its position.
fn merge_listing(kept: Vec<Tool>, out: Vec<(usize, Tool)>) -> Vec<Tool> {
    if out.is_empty() {
        return kept;
    }
    let mut all = Vec::with_capacity(kept.len() + out.len());
    let mut kept = kept.into_iter();
    for (index, tool) in out {
        while all.len() < index {
            match kept.next() {
                Some(next) => all.push(next),
                None => break,
            }
        }
        all.push(tool);
    }
    all.extend(kept);
    all
}

/// What one server offers, as listed on one connection. Immutable.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub(crate) server_id: String,
    pub(crate) lifetime: LifetimeId,
    pub(crate) generation: u64,
    pub(crate) fingerprint: String,
    pub(crate) tools: Vec<Tool>,
    /// Listed tools the server's configured [`mcp_config::ToolFilter`] keeps
    /// from the host, each with its position in the listing; empty without
    /// a filter.
    pub(crate) filtered_out: Vec<(usize, Tool)>,
    pub(crate) tools_truncated: bool,
    pub(crate) resources: Option<Vec<Resource>>,
    pub(crate) skills: Option<Vec<Skill>>,
    pub(crate) prompts: Option<Vec<Prompt>>,
    pub(crate) instructions: Option<String>,
    pub(crate) server_info: Implementation,
    pub(crate) capabilities: ServerCapabilities,
    pub(crate) protocol_version: ProtocolVersion,
    pub(crate) transport: mcp_config::TransportKind,
}

impl Catalog {
    /// The server's id.
    pub fn server_id(&self) -> &str {
        &self.server_id
    }

    /// This catalog's lifetime: it changes on every swap.
    pub fn lifetime(&self) -> LifetimeId {
        self.lifetime
    }

    /// The generation of the server's configuration this catalog belongs to.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The fingerprint of the resolved configuration
    /// ([`mcp_config::fingerprint`]): the tool cache's key.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The tools the host may offer: as the server listed them, in its order
    /// (at most [`ManagerOptions::max_tools`](crate::ManagerOptions::max_tools);
    /// later duplicates of a name are dropped), without those the server's
    /// configured tool filter ([`mcp_config::ServerConfig::tools`]) leaves out.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The listed tools the server's configured tool filter leaves out, in
    /// listing order: never offered, never callable through the bridge.
    pub fn filtered_out(&self) -> impl ExactSizeIterator<Item = &Tool> + '_ {
        self.filtered_out.iter().map(|(_, tool)| tool)
    }

    /// Applies `filter`: the tools it does not allow move to
    /// [`Catalog::filtered_out`], the others stay in listing order.
    pub(crate) fn apply_filter(&mut self, filter: &mcp_config::ToolFilter) {
        if filter.is_all() && self.filtered_out.is_empty() {
            return;
        }
        let listed = std::mem::take(&mut self.tools);
        let mut kept = Vec::with_capacity(listed.len());
        let mut out = Vec::new();
        for (index, tool) in merge_listing(listed, std::mem::take(&mut self.filtered_out))
            .into_iter()
            .enumerate()
        {
            if filter.allows(&tool.name) {
                kept.push(tool);
            } else {
                out.push((index, tool));
            }
        }
        self.tools = kept;
        self.filtered_out = out;
    }

    /// Every tool the server listed, the filtered-out ones included, in
    /// listing order.
    pub(crate) fn listed_tools(&self) -> Vec<Tool> {
        merge_listing(self.tools.clone(), self.filtered_out.clone())
    }

    /// The tool names, in order.
    pub fn tool_names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.tools.iter().map(|tool| tool.name.as_str())
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    /// Whether listing stopped before the server's last page: at the tool
    /// limit, the page limit or the limit of empty pages in a row (see the
    /// module docs). The tools got until then are kept.
    pub fn is_truncated(&self) -> bool {
        self.tools_truncated
    }

    /// The resources, when the server declared them and listing them is
    /// on and succeeded (failures are logged, not fatal).
    pub fn resources(&self) -> Option<&[Resource]> {
        self.resources.as_deref()
    }

    /// The skills' entries (the Skills extension, `skills/list`), when the
    /// server declared the extension and listing resources is on; listed
    /// with the resources and refreshed with them. No skill file is read
    /// for the catalog.
    pub fn skills(&self) -> Option<&[Skill]> {
        self.skills.as_deref()
    }

    /// The prompts, under the same conditions as [`Catalog::resources`].
    pub fn prompts(&self) -> Option<&[Prompt]> {
        self.prompts.as_deref()
    }

    /// The server's instructions for the model, from `initialize`.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// Who the server says it is.
    pub fn server_info(&self) -> &Implementation {
        &self.server_info
    }

    /// What the server declared.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.protocol_version
    }

    /// The transport the server is connected over, as configured (MCP
    /// "Transports"). Only Streamable HTTP can end a request's stream
    /// before its answer (SSE polling, "Resumability and Redelivery"): a
    /// caller that mirrors that ([`CallOptions::stream_paused`]) need not
    /// listen for it on a stdio server.
    pub fn transport(&self) -> mcp_config::TransportKind {
        self.transport
    }
}

/// Which lists a refresh pass fetches again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Kinds {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Kinds {
    pub(crate) const ALL: Kinds = Kinds {
        tools: true,
        resources: true,
        prompts: true,
    };

    pub(crate) fn any(self) -> bool {
        self.tools || self.resources || self.prompts
    }
}

/// The parts of a catalog a listing pass produced; `None` where the kind
/// was not asked for.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    pub(crate) tools: Option<(Vec<Tool>, bool)>,
    pub(crate) resources: Option<Option<Vec<Resource>>>,
    pub(crate) skills: Option<Option<Vec<Skill>>>,
    pub(crate) prompts: Option<Option<Vec<Prompt>>>,
}

/// Why listing failed.
#[derive(Debug)]
pub(crate) enum ListError {
    /// The request failed.
    Client(ClientError),
    /// The server sent a cursor it had sent before.
    RepeatedCursor,
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListError::Client(error) => error.fmt(f),
            ListError::RepeatedCursor => f.write_str("the server repeated a pagination cursor"),
        }
    }
}

/// The client's error shows through as it is, its causes included.
impl std::error::Error for ListError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ListError::Client(error) => error.source(),
            ListError::RepeatedCursor => None,
        }
    }
}

/// Limits for one listing pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ListLimits {
    pub(crate) page_timeout: Duration,
    pub(crate) max_items: usize,
    pub(crate) max_pages: usize,
    pub(crate) max_empty_pages: usize,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

/// Lists the `kinds` the server declared, concurrently on one connection.
/// Tools failing fails the pass; resources and prompts failing is logged
/// and leaves them out, so a server with usable tools stays usable.
pub(crate) async fn list(
    client: &Client,
    server: &str,
    capabilities: &ServerCapabilities,
    kinds: Kinds,
    limits: ListLimits,
) -> Result<Listed, ListError> {
    let want_tools = kinds.tools;
    let want_resources = kinds.resources && limits.resources && capabilities.resources.is_some();
    let want_skills = want_resources && capabilities.skills().is_some();
    let want_prompts = kinds.prompts && limits.prompts && capabilities.prompts.is_some();
    let tools = async {
        if !want_tools {
            return Ok(None);
        }
        if capabilities.tools.is_none() {
            // MCP "Server/Tools": without the capability there is no
            // tools/list to call; the server is ready with zero tools.
            return Ok(Some((Vec::new(), false)));
        }
        paginate::<ListToolsResult>(client, limits)
            .await
            .map(|(tools, truncated)| Some((dedup_tools(server, tools), truncated)))
    };
    let resources = async {
        if !kinds.resources {
            return None;
        }
        if !want_resources {
            return Some(None);
        }
        Some(optional(
            server,
            methods::RESOURCES_LIST,
            paginate::<ListResourcesResult>(client, limits).await,
        ))
    };
    let skills = async {
        if !kinds.resources {
            return None;
        }
        if !want_skills {
            return Some(None);
        }
        Some(optional(
            server,
            methods::SKILLS_LIST,
            paginate::<ListSkillsResult>(client, limits).await,
        ))
    };
    let prompts = async {
        if !kinds.prompts {
            return None;
        }
        if !want_prompts {
            return Some(None);
        }
        Some(optional(
            server,
            methods::PROMPTS_LIST,
            paginate::<ListPromptsResult>(client, limits).await,
        ))
    };
    let (tools, resources, skills, prompts) = tokio::join!(tools, resources, skills, prompts);
    Ok(Listed {
        tools: tools?,
        resources,
        skills,
        prompts,
    })
}

fn optional<T>(
    server: &str,
    what: &str,
    result: Result<(Vec<T>, bool), ListError>,
) -> Option<Vec<T>> {
    match result {
        Ok((items, _)) => Some(items),
        Err(error) => {
            tracing::warn!(
                server,
                error = %mcp_proto::text::ErrorChain(&error),
                "{what} failed; the catalog goes on without it"
            );
            None
        }
    }
}

/// A later tool with the name of an earlier one cannot be told apart by
/// callers; keep the first (MCP "Server/Tools": names are unique per server).
fn dedup_tools(server: &str, tools: Vec<Tool>) -> Vec<Tool> {
    let mut seen = HashSet::with_capacity(tools.len());
    let before = tools.len();
    let tools: Vec<Tool> = tools
        .into_iter()
        .filter(|tool| seen.insert(tool.name.clone()))
        .collect();
    if tools.len() != before {
        tracing::warn!(
            server,
            dropped = before - tools.len(),
            "the server listed tools with duplicate names; kept the first of each"
        );
    }
    tools
}

/// A paginated list result, and the client's typed helper that asks for
/// one page of it.
trait Page: Sized {
    type Item;
    /// The method, for logs.
    const METHOD: &'static str;
    fn fetch<'a>(
        client: &'a Client,
        params: &'a PaginatedRequestParams,
        options: CallOptions,
    ) -> impl Future<Output = Result<Self, ClientError>> + Send + 'a;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

impl Page for ListToolsResult {
    type Item = Tool;
    const METHOD: &'static str = methods::TOOLS_LIST;
    fn fetch<'a>(
        client: &'a Client,
        params: &'a PaginatedRequestParams,
        options: CallOptions,
    ) -> impl Future<Output = Result<Self, ClientError>> + Send + 'a {
        client.list_tools_with(params, options)
    }
    fn into_parts(self) -> (Vec<Tool>, Option<String>) {
        (self.tools, self.next_cursor)
    }
}

impl Page for ListResourcesResult {
    type Item = Resource;
    const METHOD: &'static str = methods::RESOURCES_LIST;
    fn fetch<'a>(
        client: &'a Client,
        params: &'a PaginatedRequestParams,
        options: CallOptions,
    ) -> impl Future<Output = Result<Self, ClientError>> + Send + 'a {
        client.list_resources_with(params, options)
    }
    fn into_parts(self) -> (Vec<Resource>, Option<String>) {
        (self.resources, self.next_cursor)
    }
}

impl Page for ListSkillsResult {
    type Item = Skill;
    const METHOD: &'static str = methods::SKILLS_LIST;
    fn fetch<'a>(
        client: &'a Client,
        params: &'a PaginatedRequestParams,
        options: CallOptions,
    ) -> impl Future<Output = Result<Self, ClientError>> + Send + 'a {
        client.list_skills_with(params, options)
    }
    fn into_parts(self) -> (Vec<Skill>, Option<String>) {
        (self.skills, self.next_cursor)
    }
}

impl Page for ListPromptsResult {
    type Item = Prompt;
    const METHOD: &'static str = methods::PROMPTS_LIST;
    fn fetch<'a>(
        client: &'a Client,
        params: &'a PaginatedRequestParams,
        options: CallOptions,
    ) -> impl Future<Output = Result<Self, ClientError>> + Send + 'a {
        client.list_prompts_with(params, options)
    }
    fn into_parts(self) -> (Vec<Prompt>, Option<String>) {
        (self.prompts, self.next_cursor)
    }
}

/// Follows `nextCursor` until the last page, the item, page or empty-page
/// limit (then the result is truncated) or a repeated cursor (an error).
async fn paginate<P: Page>(
    client: &Client,
    limits: ListLimits,
) -> Result<(Vec<P::Item>, bool), ListError> {
    let method = P::METHOD;
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    let mut pages = 0usize;
    let mut empty_in_a_row = 0usize;
    loop {
        let params = PaginatedRequestParams::page(cursor.take());
        let options = CallOptions::default().timeout(Some(limits.page_timeout));
        let page = P::fetch(client, &params, options)
            .await
            .map_err(ListError::Client)?;
        let (page_items, next) = page.into_parts();
        pages += 1;
        empty_in_a_row = if page_items.is_empty() {
            empty_in_a_row + 1
        } else {
            0
        };
        items.extend(page_items);
        if items.len() > limits.max_items {
            items.truncate(limits.max_items);
            return Ok((items, true));
        }
        let Some(next) = next else {
            return Ok((items, false));
        };
        if items.len() == limits.max_items {
            // Full, and the server has more.
            return Ok((items, true));
        }
        if pages >= limits.max_pages || empty_in_a_row >= limits.max_empty_pages {
            tracing::warn!(
                method,
                pages,
                empty_in_a_row,
                items = items.len(),
                "the server keeps paging; listing stops here and the list is marked truncated"
            );
            return Ok((items, true));
        }
        if !seen.insert(next.clone()) {
            return Err(ListError::RepeatedCursor);
        }
        cursor = Some(next);
    }
}

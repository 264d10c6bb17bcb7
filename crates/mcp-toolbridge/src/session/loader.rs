//! Loader tools for hosts that keep MCP tools out of the initial
//! declarations, and the catalog search tools
//! (`searchTools`/`describeTool`).
//!
//! - `load_mcp(server)`: the `server` enum lists the allowed servers with
//!   their descriptions; connects the server if needed and returns its
//!   tools (with schemas) and resources.
//! - `call_mcp_tool(server, tool, arguments)`: calls a tool of a connected
//!   server through the same validation, approval and deadline as a direct
//!   tool; a server that is not connected gets "call load_mcp first".
//!   Under [`SchemaDialect::OpenAiStrict`], which has no free-form object,
//!   `arguments` is JSON text, decoded before the tool's validation.
//! - `read_mcp_resource(server, uri)`: reads a resource of a connected
//!   server. Reading is not a tool call, so it needs no approval
//!   (resources follow server-level trust). It is also the bridge's
//!   skill-loading path (Skills extension): the `SKILL.md` URI of a skill
//!   the server lists (in `load_mcp`'s `skills`), or one `skills/get`
//!   confirms when the listing leaves it out, loads the skill, its
//!   `SKILL.md` verified against the entry (size, digest, frontmatter)
//!   before the model sees it; while the skill is loaded, a URI in its
//!   directory is read only when the held entry lists it, and only bytes
//!   that match the entry reach the model. Loaded skills are held per
//!   server and catalog lifetime: a refreshed catalog starts with none.
//! - `search_tools(query)` and `describe_tool(name)`: find tools of the
//!   current binding by name and description, and fetch one schema, so
//!   schemas enter the model's context only when asked for.
//!
//! Their own schemas are declared in the session's dialect like every
//! tool's, and are valid in each.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_manager::{HandleError, ServerHandle};
use mcp_proto::types::{
    ContentBlock, EmbeddedResource, JsonObject, JsonText, ReadResourceRequestParams,
    ResourceContents,
};
use mcp_transport::{CallOptions, ClientError};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{Inner, McpSession, Target};
use crate::backend::{Availability, ReadyServer};
use crate::dialect::{Declared, Fidelity, SchemaDialect, declare};
use crate::prompt::instructions_summary;
use crate::result::{CallFailure, ContentMode, ToolOutcome, ToolResult};
use crate::schema::ArgumentSchema;
use crate::search;
use crate::text::truncate_chars;
use crate::tool::{ModelTool, ToolCall};

/// The name of the tool that connects a server and lists what it offers.
pub const LOAD_MCP: &str = "load_mcp";
/// The name of the tool that calls a tool of a connected server.
pub const CALL_MCP_TOOL: &str = "call_mcp_tool";
/// The name of the tool that reads a resource of a connected server.
pub const READ_MCP_RESOURCE: &str = "read_mcp_resource";
/// The name of the catalog search tool.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The name of the tool that returns one tool's schema.
pub const DESCRIBE_TOOL: &str = "describe_tool";

/// The longest server description in `load_mcp`'s description, in characters.
const SERVER_DESCRIPTION_CHARS: usize = 200;

impl McpSession {
    /// The loader tools `load_mcp`, `call_mcp_tool` and `read_mcp_resource`,
    /// built for the servers this session may use now. Empty when the MCP
    /// channel is off or no server is allowed.
    pub fn loader_tools(&self) -> Vec<Arc<dyn ModelTool>> {
        let inner = &self.inner;
        if !inner.enabled() {
            return Vec::new();
        }
        let mut servers: Vec<_> = inner
            .backend()
            .servers()
            .into_iter()
            .filter(|s| s.enabled && inner.allows(&s.id))
            .collect();
        if servers.is_empty() {
            return Vec::new();
        }
        servers.sort_by(|a, b| a.id.cmp(&b.id));
        let ids: Vec<Value> = servers.iter().map(|s| Value::from(s.id.clone())).collect();
        let mut listing = String::new();
        for s in &servers {
            listing.push_str(&format!("\n- {}", s.id));
            if s.name != s.id {
                listing.push_str(&format!(" ({})", s.name));
            }
            if let Some(d) = s.description.as_deref().and_then(instructions_summary) {
                listing.push_str(": ");
                listing.push_str(&truncate_chars(&d, SERVER_DESCRIPTION_CHARS));
            }
        }
        let server_property = json!({
            "type": "string",
            "enum": ids,
            "description": "The MCP server's id."
        });
        let load = LoaderTool::new(
            inner.clone(),
            Kind::Load,
            LOAD_MCP,
            format!(
                "Connects to an MCP server if it is not connected yet and returns its tools (with their input schemas), resources and skills as JSON. Call it before call_mcp_tool or read_mcp_resource. Servers:{listing}"
            ),
            object_schema(&[("server", &server_property)], &["server"]),
        );
        // Strict mode has no free-form object: there the arguments travel
        // as JSON text, decoded before they are checked.
        let arguments = if inner.options.schema_dialect == SchemaDialect::OpenAiStrict {
            json!({"type": "string", "description": "The tool's arguments: a JSON object as text, such as {\"path\": \"README.md\"}."})
        } else {
            json!({"type": "object", "description": "The tool's arguments."})
        };
        let call = LoaderTool::new(
            inner.clone(),
            Kind::Call,
            CALL_MCP_TOOL,
            "Calls a tool of a connected MCP server with arguments that match its input schema (from load_mcp or describe_tool). If the server is not connected, call load_mcp first.".to_owned(),
            object_schema(
                &[
                    ("server", &server_property),
                    (
                        "tool",
                        &json!({"type": "string", "description": "The tool's name on that server."}),
                    ),
                    ("arguments", &arguments),
                ],
                &["server", "tool"],
            ),
        );
        let read = LoaderTool::new(
            inner.clone(),
            Kind::Read,
            READ_MCP_RESOURCE,
            "Reads a resource of a connected MCP server by URI (from load_mcp's resources) and returns its contents. A skill's SKILL.md URI (from load_mcp's skills) loads the skill; then the files it names are read by their URIs.".to_owned(),
            object_schema(
                &[
                    ("server", &server_property),
                    (
                        "uri",
                        &json!({"type": "string", "description": "The resource's URI."}),
                    ),
                ],
                &["server", "uri"],
            ),
        );
        vec![Arc::new(load), Arc::new(call), Arc::new(read)]
    }

    /// The tool that pages through results too large for the session's
    /// [`ResultBudget`](crate::ResultBudget), `read_mcp_result(id, offset?,
    /// length?, path?)`: the model reads on from where a cut result's
    /// marker says. Empty when the session has no budget or the MCP channel
    /// is off.
    pub fn result_tools(&self) -> Vec<Arc<dyn ModelTool>> {
        let inner = &self.inner;
        let Some(budget) = &inner.options.budget else {
            return Vec::new();
        };
        if !inner.enabled() {
            return Vec::new();
        }
        let read = LoaderTool::new(
            inner.clone(),
            Kind::ReadResult,
            crate::READ_MCP_RESULT,
            format!(
                "Reads part of an MCP tool result that was too long to show whole, by the id its marker gave (\"result-1\"): up to `length` characters (at most {}) from `offset`, or for structured content the JSON value at `path` (a JSON Pointer such as \"/rows/0\").",
                budget.chars
            ),
            object_schema(
                &[
                    (
                        "id",
                        &json!({"type": "string", "description": "The spilled result's id."}),
                    ),
                    (
                        "offset",
                        &json!({"type": "integer", "minimum": 0, "description": "The first character to read. Default 0."}),
                    ),
                    (
                        "length",
                        &json!({"type": "integer", "minimum": 1, "description": "How many characters to read."}),
                    ),
                    (
                        "path",
                        &json!({"type": "string", "description": "A JSON Pointer into structured content."}),
                    ),
                ],
                &["id"],
            ),
        );
        vec![Arc::new(read)]
    }

    /// The catalog tools `search_tools` and `describe_tool`, over the
    /// session's current binding. Empty when the MCP channel is off.
    pub fn catalog_tools(&self) -> Vec<Arc<dyn ModelTool>> {
        let inner = &self.inner;
        if !inner.enabled() {
            return Vec::new();
        }
        let search = LoaderTool::new(
            inner.clone(),
            Kind::Search,
            SEARCH_TOOLS,
            "Searches the available MCP tools by name and description and returns the best matches (name, server, tool, short description), without schemas. Use describe_tool for one tool's schema.".to_owned(),
            object_schema(
                &[(
                    "query",
                    &json!({"type": "string", "description": "Words to look for."}),
                )],
                &["query"],
            ),
        );
        let describe = LoaderTool::new(
            inner.clone(),
            Kind::Describe,
            DESCRIBE_TOOL,
            "Returns one MCP tool's description and input schema, by the name search_tools returned.".to_owned(),
            object_schema(
                &[(
                    "name",
                    &json!({"type": "string", "description": "The tool's name."}),
                )],
                &["name"],
            ),
        );
        vec![Arc::new(search), Arc::new(describe)]
    }
}

/// A closed object schema whose `properties` come in the order given (the
/// order a model reads them in, the server first), written as text: the
/// order is the text's, whatever map type `serde_json` builds.
fn object_schema(properties: &[(&str, &Value)], required: &[&str]) -> JsonText {
    struct Properties<'a>(&'a [(&'a str, &'a Value)]);
    impl serde::Serialize for Properties<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(Some(self.0.len()))?;
            for (name, schema) in self.0 {
                map.serialize_entry(name, schema)?;
            }
            map.end()
        }
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Schema<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        properties: Properties<'a>,
        required: &'a [&'a str],
        additional_properties: bool,
    }
    let schema = Schema {
        kind: "object",
        properties: Properties(properties),
        required,
        additional_properties: false,
    };
    // Plain data with string keys always encodes.
    JsonText::encode(&schema).unwrap_or_default()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Load,
    Call,
    Read,
    Search,
    Describe,
    ReadResult,
}

struct LoaderTool {
    inner: Arc<Inner>,
    kind: Kind,
    name: &'static str,
    description: String,
    /// The schema calls are checked against.
    validator: ArgumentSchema,
    /// The schema in the session's dialect, as the model sees it.
    declared: Declared,
}

impl fmt::Debug for LoaderTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoaderTool")
            .field("name", &self.name)
            .finish()
    }
}

impl LoaderTool {
    fn new(
        inner: Arc<Inner>,
        kind: Kind,
        name: &'static str,
        description: String,
        schema: JsonText,
    ) -> Self {
        let validator = ArgumentSchema::compile(&schema);
        let declared = declare(&schema, inner.options.schema_dialect);
        LoaderTool {
            inner,
            kind,
            name,
            description,
            validator,
            declared,
        }
    }
}

#[async_trait]
impl ModelTool for LoaderTool {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &JsonText {
        self.declared.schema_text()
    }

    fn fidelity(&self) -> &Fidelity {
        &self.declared.fidelity
    }

    async fn call(&self, call: ToolCall) -> ToolOutcome {
        if call.cancel.is_cancelled() {
            return ToolOutcome::Cancelled;
        }
        if !self.inner.enabled() {
            return ToolOutcome::failed(CallFailure::Unavailable {
                server: String::new(),
                reason: "MCP tools are turned off in this session".to_owned(),
            });
        }
        let arguments = self.declared.restore_arguments(call.arguments.clone());
        let args = match self.validator.check(self.name, &arguments) {
            Ok(args) => args,
            Err(invalid) => return ToolOutcome::failed(CallFailure::InvalidArguments(invalid)),
        };
        let text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        match self.kind {
            Kind::Load => load(&self.inner, &text("server"), &call).await,
            Kind::Call => {
                let arguments = match args.get("arguments") {
                    // JSON text (strict mode); text that is not JSON goes on
                    // as it is, and the tool's validation names the problem.
                    Some(Value::String(text)) => {
                        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
                    }
                    Some(value) => value.clone(),
                    None => Value::Null,
                };
                let target = Target::Named {
                    server: text("server"),
                    tool: text("tool"),
                };
                let forwarded = ToolCall {
                    call_id: call.call_id.clone(),
                    arguments,
                    cancel: call.cancel.clone(),
                    progress: call.progress.clone(),
                    passthrough: call.passthrough.clone(),
                };
                self.inner.run_call(target, forwarded).await
            }
            Kind::Read => read(&self.inner, &text("server"), &text("uri"), &call).await,
            Kind::ReadResult => {
                let budget = self.inner.options.budget.as_ref();
                let limit = budget.map_or(crate::ResultBudget::MIN_CHARS, |b| b.chars);
                let number = |key: &str| {
                    args.get(key)
                        .and_then(Value::as_u64)
                        .and_then(|n| usize::try_from(n).ok())
                };
                let length = number("length").unwrap_or(limit).min(limit);
                let path = args.get("path").and_then(Value::as_str);
                match self
                    .inner
                    .spills
                    .read(&text("id"), number("offset").unwrap_or(0), length, path)
                    .await
                {
                    Ok(part) => ToolOutcome::Completed(ToolResult::text(part)),
                    Err(message) => ToolOutcome::Completed(ToolResult::error_text(message)),
                }
            }
            Kind::Search => {
                let hits = search_current(&self.inner, &text("query"));
                json_result(json!({ "tools": hits }))
            }
            Kind::Describe => {
                let binding = self.inner.lock().binding.clone();
                match binding.description(&text("name")) {
                    Some(description) => json_result(description),
                    None => ToolOutcome::failed(CallFailure::UnknownTool { name: text("name") }),
                }
            }
        }
    }
}

fn search_current(inner: &Arc<Inner>, query: &str) -> Vec<search::SearchHit> {
    McpSession {
        inner: inner.clone(),
    }
    .search_tools(query)
}

/// A result the model reads as JSON text, in the order `value` writes its
/// keys, and a host reads as structured content.
fn json_result(value: impl Serialize) -> ToolOutcome {
    let text = serde_json::to_string(&value).unwrap_or_default();
    ToolOutcome::Completed(ToolResult {
        content: vec![ContentBlock::text(text)],
        structured_content: serde_json::to_value(&value).ok(),
        is_error: false,
    })
}

fn unavailable(server: &str, reason: impl Into<String>) -> ToolOutcome {
    ToolOutcome::failed(CallFailure::Unavailable {
        server: server.to_owned(),
        reason: reason.into(),
    })
}

/// `load_mcp`: connects if needed ("if not connected,
/// connect()"), then returns the manifest.
async fn load(inner: &Arc<Inner>, server: &str, call: &ToolCall) -> ToolOutcome {
    if !inner.allows(server) {
        return unavailable(server, "not allowed in this session");
    }
    let backend = inner.backend();
    let availability = match backend.availability(server) {
        ready @ Availability::Ready(_) => ready,
        Availability::Disabled => {
            return unavailable(server, "disabled; only its configuration can enable it");
        }
        Availability::Unknown => {
            return unavailable(server, "no MCP server has this id");
        }
        other => {
            if matches!(other, Availability::Stopped { .. }) {
                backend.connect(server);
            }
            let deadline = Instant::now() + inner.options.connect_wait;
            tokio::select! {
                availability = backend.wait_ready(server, deadline) => availability,
                () = call.cancel.cancelled() => return ToolOutcome::Cancelled,
            }
        }
    };
    let Availability::Ready(ready) = availability else {
        return unavailable(server, availability.describe());
    };
    // Loading a server's manifest is a use of it (the model is about to
    // call it): taking a handle records that.
    drop(backend.server(server));
    json_result(manifest(&ready))
}

/// What `load_mcp` returns: the server, then its tools, resources and
/// skills, each entry's keys in reading order (name first) and each tool's
/// input schema as the server wrote it.
fn manifest(server: &ReadyServer) -> Manifest<'_> {
    let tools = server
        .catalog
        .tools()
        .iter()
        .map(|tool| ManifestTool {
            name: &tool.name,
            title: tool.title.as_deref(),
            description: tool.description.as_deref(),
            input_schema: &tool.input_schema,
        })
        .collect();
    let resources = server
        .catalog
        .resources()
        .unwrap_or_default()
        .iter()
        .map(|resource| ManifestResource {
            uri: &resource.uri,
            name: &resource.name,
            description: resource.description.as_deref(),
            mime_type: resource.mime_type.as_deref(),
        })
        .collect();
    let skills = server.catalog.skills().map(|skills| {
        skills
            .iter()
            .map(|skill| ManifestSkill {
                uri: &skill.uri,
                name: skill.name(),
                description: skill.description(),
            })
            .collect()
    });
    Manifest {
        server: server.id.to_string(),
        name: server.name.to_string(),
        instructions: server.catalog.instructions().and_then(instructions_summary),
        tools,
        resources,
        skills,
    }
}

#[derive(Serialize)]
struct Manifest<'a> {
    server: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    tools: Vec<ManifestTool<'a>>,
    resources: Vec<ManifestResource<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skills: Option<Vec<ManifestSkill<'a>>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ManifestTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a JsonText,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ManifestResource<'a> {
    uri: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
}

#[derive(Serialize)]
struct ManifestSkill<'a> {
    uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
}

/// `read_mcp_resource`: reads through the server's connection with the
/// call deadline; text contents become text blocks, binary contents JSON
/// text (or embedded resources, raw).
async fn read(inner: &Arc<Inner>, server: &str, uri: &str, call: &ToolCall) -> ToolOutcome {
    if !inner.allows(server) {
        return unavailable(server, "not allowed in this session");
    }
    let backend = inner.backend();
    let ready = match backend.availability(server) {
        Availability::Ready(ready) => ready,
        other => {
            return unavailable(
                server,
                format!(
                    "{}; call {LOAD_MCP} with server {server:?} first",
                    other.describe()
                ),
            );
        }
    };
    let Some(handle) = backend.server(server) else {
        return unavailable(server, backend.availability(server).describe());
    };
    let options =
        CallOptions::default().timeout(backend.call_timeout(server).or(inner.options.call_timeout));
    let listed = ready.catalog.skills();
    let mut entry = listed.and_then(|skills| skills.iter().find(|skill| skill.uri == uri).cloned());
    // A listing may be partial: a SKILL.md URI it leaves out (from the
    // server's instructions, another skill, the user) is confirmed with
    // skills/get, and loaded only if it is a skill.
    let unlisted_skill_file = uri
        .strip_suffix(mcp_proto::types::SKILL_FILE)
        .is_some_and(|dir| dir.ends_with('/'));
    if entry.is_none() && listed.is_some() && unlisted_skill_file {
        let answer = tokio::select! {
            biased;
            () = call.cancel.cancelled() => return ToolOutcome::Cancelled,
            answer = handle.get_skill(uri) => answer,
        };
        entry = answer
            .ok()
            .map(|got| got.skill)
            .filter(|skill| skill.uri == uri);
    }
    if let Some(entry) = entry {
        return load_skill(inner, server, &ready, &handle, &entry, options, call).await;
    }
    if let Some(skill) = inner.loaded_skill(server, ready.lifetime, uri) {
        return read_skill_file(inner, server, &handle, &skill, uri, options, call).await;
    }
    let params = ReadResourceRequestParams {
        uri: uri.to_owned(),
        ..ReadResourceRequestParams::default()
    };
    let answer = tokio::select! {
        biased;
        () = call.cancel.cancelled() => return ToolOutcome::Cancelled,
        answer = handle.read_resource_with(&params, options) => answer,
    };
    match answer {
        Ok(result) => read_outcome(inner, server, result).await,
        Err(HandleError::Request(ClientError::Cancelled)) => ToolOutcome::Cancelled,
        Err(HandleError::Request(error)) => {
            ToolOutcome::failed(CallFailure::from_client_error(&error))
        }
        Err(_) => replaced(server),
    }
}

/// A read's contents as the model gets them: text as text blocks, binary
/// contents converted, under the same budget as a tool result (per server,
/// or per "tool" `read_mcp_resource`).
async fn read_outcome(
    inner: &Arc<Inner>,
    server: &str,
    result: mcp_proto::types::ReadResourceResult,
) -> ToolOutcome {
    let content = result
        .contents
        .into_iter()
        .map(|contents| resource_block(contents, inner.options.content))
        .collect();
    let result = ToolResult {
        content,
        structured_content: None,
        is_error: false,
    };
    ToolOutcome::Completed(
        inner
            .budgeted(result, server, READ_MCP_RESOURCE, None)
            .await,
    )
}

/// The skill-loading path: the entry checked, its `SKILL.md` read and
/// verified, the skill held for this catalog lifetime, the text returned.
async fn load_skill(
    inner: &Arc<Inner>,
    server: &str,
    ready: &ReadyServer,
    handle: &ServerHandle,
    entry: &mcp_proto::types::Skill,
    options: CallOptions,
    call: &ToolCall,
) -> ToolOutcome {
    let answer = tokio::select! {
        biased;
        () = call.cancel.cancelled() => return ToolOutcome::Cancelled,
        answer = handle.load_skill_with(entry, options) => answer,
    };
    match answer {
        Ok(loaded) => {
            let text = loaded.text.clone();
            inner.hold_skill(server, ready.lifetime, loaded);
            let result = ToolResult::text(text);
            ToolOutcome::Completed(
                inner
                    .budgeted(result, server, READ_MCP_RESOURCE, None)
                    .await,
            )
        }
        Err(HandleError::Request(error)) => skill_failure(&error),
        Err(_) => replaced(server),
    }
}

/// A file of a loaded skill: listed in the held entry and matching it, or
/// refused.
async fn read_skill_file(
    inner: &Arc<Inner>,
    server: &str,
    handle: &ServerHandle,
    skill: &mcp_transport::LoadedSkill,
    uri: &str,
    options: CallOptions,
    call: &ToolCall,
) -> ToolOutcome {
    let answer = tokio::select! {
        biased;
        () = call.cancel.cancelled() => return ToolOutcome::Cancelled,
        answer = handle.read_skill_file_with(skill, uri, options) => answer,
    };
    match answer {
        Ok(result) => read_outcome(inner, server, result).await,
        Err(HandleError::Request(error)) => skill_failure(&error),
        Err(_) => replaced(server),
    }
}

/// A request refused because the server's connection was replaced or
/// closed after its handle was taken: nothing was sent.
fn replaced(server: &str) -> ToolOutcome {
    unavailable(server, "its connection was replaced or closed")
}

fn skill_failure(error: &mcp_transport::SkillLoadError) -> ToolOutcome {
    match error {
        mcp_transport::SkillLoadError::Client(ClientError::Cancelled) => ToolOutcome::Cancelled,
        mcp_transport::SkillLoadError::Client(error) => {
            ToolOutcome::failed(CallFailure::from_client_error(error))
        }
        mcp_transport::SkillLoadError::Verification(error) => {
            ToolOutcome::failed(CallFailure::Protocol(format!("{error} ({})", error.code())))
        }
    }
}

fn resource_block(contents: ResourceContents, mode: ContentMode) -> ContentBlock {
    match contents {
        ResourceContents::Text(text) => ContentBlock::text(text.text),
        blob => crate::result::convert_block(
            ContentBlock::Resource(EmbeddedResource {
                resource: blob,
                annotations: None,
                meta: None,
                extra: JsonObject::new(),
            }),
            mode,
        ),
    }
}

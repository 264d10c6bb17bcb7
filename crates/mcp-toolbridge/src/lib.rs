//! What the model sees of MCP: collision-free tool names, validated arguments, approvals, lazy loading, and the gateway.
//!
#![doc = include_str!("../README.md")]
//!
//! ## How it fits
//!
//! A host creates one [`McpSession`] per agent session over the shared
//! [`McpManager`](mcp_manager::McpManager), binds a [`ToolSet`] before each
//! prompt ([`McpSession::bind_startup`], then [`McpSession::bind`]) and
//! calls its tools by the names the model sees ([`ToolSet::call`]), as the
//! example above does.
//!
//! Hosts that keep MCP tools out of the initial declarations register
//! [`McpSession::loader_tools`] (`load_mcp`, `call_mcp_tool`,
//! `read_mcp_resource`) and [`McpSession::catalog_tools`] (`search_tools`,
//! `describe_tool`) instead, with [`ToolAccess::Loader`] or
//! [`ToolAccess::Search`] for the prompt section.
//!
//! A result longer than the session's [`ResultBudget`] (100,000
//! characters by default) reaches the model as its head and tail around a
//! marker; the whole waits in a spill file, and [`McpSession::result_tools`]
//! (`read_mcp_result`) lets the model read on from where the marker says.
//!
//! Model providers accept different subsets of JSON Schema for tool
//! parameters. [`SessionOptions::schema_dialect`] declares every tool's
//! input schema in one of them with [`declare`]: [`SchemaDialect::AsIs`]
//! (the default: the server's schema, for Anthropic and any provider that
//! takes full JSON Schema), [`SchemaDialect::OpenAiStrict`] or
//! [`SchemaDialect::Gemini`]. [`ToolSet::declaration_notes`] lists the tools
//! whose declaration is loosened and why; calls are checked against the
//! server's own schema whatever the declaration says.
//!
//! The options that reproduce the defaults of three common kinds of host:
//!
//! | host | tools reach the model | [`NameOptions`] | [`SessionOptions`] |
//! |---|---|---|---|
//! | a coding agent that declares every tool | declared as `mcp_<server>_<tool>` | default ([`Suffix::WhenNeeded`]) | default ([`ToolAccess::Direct`]) |
//! | a chat web app that keeps tools out of its declarations | found by search, called by name | `.suffix(Suffix::Always)` | `.access(ToolAccess::Search)`, register [`McpSession::catalog_tools`] and [`McpSession::loader_tools`] |
//! | an IDE that connects servers on demand | `load_mcp`, then `call_mcp_tool` | default | `.access(ToolAccess::Loader)`, register [`McpSession::loader_tools`] |
//!
//! `examples/host.rs` is the same integration as a program that reads a
//! project's `.mcp.json`, with a tool cache on disk.
//!
//! Modules: [`prelude`] (one import for a host program: the types above
//! and the manager's and configuration's it needs), [`names`] (model names
//! and the reverse map), [`prompt`] (the `<mcp_servers>` section),
//! [`dialect`] (each schema dialect's rules and the provider documentation
//! they follow; [`declare`] and its types are re-exported); the rest
//! is re-exported here: the session and
//! its [`ToolSet`], the [`ModelTool`] trait with [`LiveTool`] and
//! [`DeferredTool`], [`ArgumentSchema`] validation, [`ToolOutcome`] and
//! [`ToolResult`], the approval types.
//!
//! **Invariant:** the bridge owns no sockets and no processes; it reaches
//! servers only through the manager.
//!
//! **Invariant:** nothing a server declares (annotations included)
//! bypasses approval, and the prompt section never shows commands, URLs,
//! environment values or credentials: it is rendered from server ids,
//! display names and `initialize` instructions only.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod approval;
mod backend;
mod budget;
mod cancel;
pub mod dialect;
mod gateway;
mod manager;
pub mod names;
pub mod prelude;
pub mod prompt;
mod result;
mod schema;
mod search;
mod session;
mod text;
mod tool;

pub use approval::{
    ApprovalDecision, ApprovalEvent, ApprovalHandler, ApprovalRequest, ApprovalResult,
    ApprovalSource, Grant, PermissionPreset,
};
/// The attribute for implementing [`ApprovalHandler`] (re-exported so hosts
/// need no dependency of their own).
pub use async_trait::async_trait;
pub use budget::{READ_MCP_RESULT, ResultBudget};
pub use cancel::CancelToken;
pub use dialect::{Declared, Fidelity, SchemaDialect, declare};
pub use gateway::report as gateway_report;
pub use gateway::{Gateway, GatewayAsks, GatewayOptions, NameCollision, ToolNaming};
pub use names::{NameOptions, Suffix, ToolKey, ToolNames, UnusableReason, UnusableTool};
pub use prompt::ToolAccess;
pub use result::{
    CallFailure, ContentMode, DESCRIBED_ERROR_LIMIT, NotApproved, ToolOutcome, ToolResult,
};
pub use schema::{ArgumentProblem, ArgumentSchema, InvalidArguments};
pub use search::SearchHit;
pub use session::loader::{
    CALL_MCP_TOOL, DESCRIBE_TOOL, LOAD_MCP, READ_MCP_RESOURCE, SEARCH_TOOLS,
};
pub use session::{DeclarationNote, DeferredTool, LiveTool, McpSession, SessionOptions, ToolSet};
pub use tool::{CallProgress, ModelTool, ProgressSink, ToolCall};

//! One import for a host: `use mcp_toolbridge::prelude::*;` brings the types a host program uses to configure servers, run the manager and offer tools to its model.
//!
//! It re-exports, under their own names:
//! - from `mcp-config`: how servers are described and found
//!   ([`ServerConfig`], [`StdioConfig`], [`HttpConfig`], [`TransportConfig`],
//!   [`Discovery`], [`DiscoveryOptions`], [`Store`]);
//! - from `mcp-manager`: the connection layer ([`McpManager`],
//!   [`ManagerOptions`], [`StartupMode`], [`ReconnectPolicy`],
//!   [`IdlePolicy`], [`JsonFileToolCache`], [`ToolCache`],
//!   [`StartupReport`], [`ServerStatus`], [`ManagerEvent`]);
//! - from this crate: the session and its tools ([`McpSession`],
//!   [`SessionOptions`], [`ToolSet`], [`ModelTool`], [`ToolCall`],
//!   [`ToolOutcome`], [`ToolResult`], [`CallFailure`], [`CancelToken`]),
//!   approvals ([`ApprovalHandler`], [`ApprovalDecision`],
//!   [`ApprovalRequest`], [`PermissionPreset`], [`async_trait`](macro@async_trait)), naming
//!   and the prompt section ([`NameOptions`], [`ToolAccess`]);
//! - from `serde_json`: [`Value`] and [`json!`](macro@json), what tool
//!   arguments and results are made of.
//!
//! ```
//! use std::sync::Arc;
//! use mcp_toolbridge::prelude::*;
//!
//! let config = ServerConfig::new("files", TransportConfig::Stdio(StdioConfig::new("mcp-files")));
//! let options = SessionOptions::default().preset(PermissionPreset::ReadOnly);
//! let cache: Arc<dyn ToolCache> = Arc::new(JsonFileToolCache::open("/tmp/tools.json"));
//! let _ = (config, options, cache, ManagerOptions::default().startup(StartupMode::Background));
//! ```

pub use mcp_config::{
    Discovery, DiscoveryOptions, HttpConfig, ServerConfig, StdioConfig, Store, TransportConfig,
};
pub use mcp_manager::{
    IdlePolicy, JsonFileToolCache, ManagerEvent, ManagerOptions, McpManager, ReconnectPolicy,
    ServerStatus, StartupMode, StartupReport, ToolCache,
};

pub use crate::{
    ApprovalDecision, ApprovalHandler, ApprovalRequest, CallFailure, CallProgress, CancelToken,
    Fidelity, McpSession, ModelTool, NameOptions, PermissionPreset, SchemaDialect, SessionOptions,
    ToolAccess, ToolCall, ToolOutcome, ToolResult, ToolSet, async_trait,
};
pub use serde_json::{Value, json};

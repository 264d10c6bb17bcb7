//! The host-facing tool trait and its two MCP implementations: live tools,
//! which call a ready server's connection, and deferred tools, built from
//! the tool cache, which wait for their server first (`MCPTool`
//! and `DeferredMCPTool`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_proto::types::{JsonObject, Tool};
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::result::ToolOutcome;
use crate::session::{BoundTool, Inner, Target};

/// A tool as a host declares it to its model and calls it.
///
/// Implemented by the MCP tool adapters ([`LiveTool`], [`DeferredTool`])
/// and by the loader tools (`load_mcp`, `call_mcp_tool`,
/// `read_mcp_resource`, `search_tools`, `describe_tool`), so a host
/// registers all of them the same way.
#[async_trait]
pub trait ModelTool: Send + Sync + fmt::Debug {
    /// The name the model calls it by: `[A-Za-z0-9_-]`, within the length
    /// limit.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// The JSON Schema of its arguments.
    fn input_schema(&self) -> &JsonObject;
    /// Runs one call. Never panics on anything a server sends; every
    /// failure is a [`ToolOutcome`].
    async fn call(&self, call: ToolCall) -> ToolOutcome;
}

/// One call of a [`ModelTool`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ToolCall {
    /// The host's id of the call (the model's tool-call id). Approval
    /// requests carry it.
    pub call_id: String,
    /// The arguments the model sent; `null` counts as `{}`.
    pub arguments: Value,
    /// Cancels the call: the outcome is then [`ToolOutcome::Cancelled`], and
    /// a request already sent is withdrawn with `notifications/cancelled`.
    pub cancel: CancelToken,
}

impl ToolCall {
    /// A call with an id and arguments, not cancelled.
    pub fn new(call_id: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            call_id: call_id.into(),
            arguments,
            cancel: CancelToken::new(),
        }
    }

    /// The same call, cancelled through `token`.
    pub fn with_cancel(mut self, token: CancelToken) -> Self {
        self.cancel = token;
        self
    }
}

/// An MCP tool of a ready server: calls go straight to its connection, and
/// fail at once, with the server's status, if it is no longer ready.
pub struct LiveTool {
    pub(crate) session: Arc<Inner>,
    pub(crate) bound: Arc<BoundTool>,
}

/// An MCP tool offered from the tool cache while its server connects: a
/// call waits for the server (up to
/// [`SessionOptions::connect_wait`](crate::SessionOptions::connect_wait)),
/// then runs against the live catalog. When the server turns out ready the
/// session rebinds its tools on its own (late-connection path).
pub struct DeferredTool {
    pub(crate) session: Arc<Inner>,
    pub(crate) bound: Arc<BoundTool>,
}

impl LiveTool {
    /// The server's id.
    pub fn server(&self) -> &str {
        &self.bound.server
    }

    /// The tool as the server listed it.
    pub fn tool(&self) -> &Tool {
        self.bound.tool()
    }
}

impl DeferredTool {
    /// The server's id.
    pub fn server(&self) -> &str {
        &self.bound.server
    }

    /// The tool as the cache holds it.
    pub fn tool(&self) -> &Tool {
        self.bound.tool()
    }
}

impl fmt::Debug for LiveTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveTool")
            .field("name", &self.bound.model_name)
            .field("server", &self.bound.server)
            .field("tool", &self.bound.tool().name)
            .finish()
    }
}

impl fmt::Debug for DeferredTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeferredTool")
            .field("name", &self.bound.model_name)
            .field("server", &self.bound.server)
            .field("tool", &self.bound.tool().name)
            .finish()
    }
}

#[async_trait]
impl ModelTool for LiveTool {
    fn name(&self) -> &str {
        &self.bound.model_name
    }

    fn description(&self) -> &str {
        &self.bound.description
    }

    fn input_schema(&self) -> &JsonObject {
        &self.bound.tool().input_schema
    }

    async fn call(&self, call: ToolCall) -> ToolOutcome {
        self.session
            .run_call(Target::Live(self.bound.clone()), call)
            .await
    }
}

#[async_trait]
impl ModelTool for DeferredTool {
    fn name(&self) -> &str {
        &self.bound.model_name
    }

    fn description(&self) -> &str {
        &self.bound.description
    }

    fn input_schema(&self) -> &JsonObject {
        &self.bound.tool().input_schema
    }

    async fn call(&self, call: ToolCall) -> ToolOutcome {
        self.session
            .run_call(Target::Deferred(self.bound.clone()), call)
            .await
    }
}

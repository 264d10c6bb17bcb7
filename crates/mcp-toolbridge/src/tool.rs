//! The host-facing tool trait, [`ModelTool`], and one call of it, [`ToolCall`].
//!
//! The session implements it for its MCP tools (`LiveTool`, `DeferredTool`)
//! and for the loader tools; this module knows none of them.

use std::fmt;

use async_trait::async_trait;
use mcp_proto::types::JsonObject;
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::result::ToolOutcome;

/// A tool as a host declares it to its model and calls it.
///
/// Implemented by the MCP tool adapters ([`LiveTool`](crate::LiveTool),
/// [`DeferredTool`](crate::DeferredTool))
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

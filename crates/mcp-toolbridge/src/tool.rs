//! The host-facing tool trait, [`ModelTool`], and one call of it, [`ToolCall`].
//!
//! The session implements it for its MCP tools (`LiveTool`, `DeferredTool`)
//! and for the loader tools; this module knows none of them.

use std::fmt;

use async_trait::async_trait;
use mcp_proto::types::JsonText;
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::dialect::Fidelity;
use crate::result::ToolOutcome;

/// The fidelity of a tool whose schema is declared unchanged.
static EXACT: Fidelity = Fidelity::Exact;

/// How far a call has come, as the server reported it with
/// `notifications/progress` (MCP basic/utilities/progress).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CallProgress {
    /// The progress so far; it increases with every report.
    pub progress: f64,
    /// The total the progress counts towards, when the server knows it.
    pub total: Option<f64>,
    /// The server's words about the step, bounded to
    /// [`CallProgress::MESSAGE_LIMIT`] bytes (a marker says when it was
    /// cut); not sanitised for a terminal.
    pub message: Option<String>,
}

impl CallProgress {
    /// The most bytes of a server's progress message kept.
    pub const MESSAGE_LIMIT: usize = 512;

    /// The host's view of one progress notification: the message bounded.
    pub(crate) fn from_params(params: &mcp_proto::types::ProgressNotificationParams) -> Self {
        CallProgress {
            progress: params.progress,
            total: params.total,
            message: params
                .message
                .as_deref()
                .map(|m| mcp_proto::text::bound(m, Self::MESSAGE_LIMIT).into_owned()),
        }
    }

    /// The fraction done, `0.0..=1.0`, when the total is known and positive.
    pub fn fraction(&self) -> Option<f64> {
        self.total
            .filter(|total| *total > 0.0)
            .map(|total| (self.progress / total).clamp(0.0, 1.0))
    }
}

/// Where a call's progress goes (see [`ToolCall::with_progress`]).
pub type ProgressSink = tokio::sync::mpsc::UnboundedSender<CallProgress>;

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
    /// The JSON Schema of its arguments, as the session's
    /// [`SchemaDialect`](crate::SchemaDialect) declares it.
    fn input_schema(&self) -> &JsonText;
    /// How faithfully [`ModelTool::input_schema`] says what the tool
    /// accepts in the session's dialect. Calls are checked against the
    /// tool's own schema whatever this says. Default: exact.
    fn fidelity(&self) -> &Fidelity {
        &EXACT
    }
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
    /// Where the server's progress reports go. Setting it asks the server
    /// for progress (`_meta.progressToken`), and each report restarts the
    /// call's deadline, up to [`SessionOptions::max_call_time`](crate::SessionOptions::max_call_time)
    /// in all. `None` (the default): no progress is asked for and the
    /// deadline is fixed.
    pub progress: Option<ProgressSink>,
    /// For the gateway: request `_meta` to forward and where the server's
    /// own answer is kept as it came.
    pub(crate) passthrough: Option<std::sync::Arc<Passthrough>>,
}

/// What a gateway call forwards beyond the arguments, and the server's
/// answer as the server sent it (its result whole, or its JSON-RPC error
/// with `data`), for a client that must see it unchanged.
#[derive(Debug, Default)]
pub(crate) struct Passthrough {
    /// The client's request `_meta`, its protocol keys already removed.
    pub(crate) meta: Option<mcp_proto::types::Meta>,
    /// Whether the client knows the tool by the server's own name (kept
    /// names), which failures then name it by.
    pub(crate) server_names: bool,
    /// The server's answer, once it came.
    pub(crate) answer:
        std::sync::Mutex<Option<Result<mcp_proto::types::CallToolResult, mcp_proto::ErrorObject>>>,
    /// Whether a 2026-07-28 server's input round (`input_required`) comes
    /// back to the gateway, which relays it to its client, rather than
    /// being answered by the connection's handler.
    pub(crate) rounds: bool,
    /// With `rounds`: the client's answers to the server's previous round,
    /// by the server's keys, sent as they came.
    pub(crate) input_responses: Option<mcp_proto::types::JsonObject>,
    /// With `rounds`: the server's `requestState` of the previous round.
    pub(crate) request_state: Option<String>,
    /// The server's input round, once it came.
    pub(crate) round: std::sync::Mutex<Option<mcp_proto::types::InputRequiredResult>>,
    /// Where to hear that the server ended the call's SSE stream before
    /// answering ([`mcp_transport::CallOptions::stream_paused`]), for the
    /// gateway to end its client's stream the same way.
    pub(crate) stream_paused:
        std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<std::time::Duration>>,
}

impl Passthrough {
    /// Keeps the server's answer.
    pub(crate) fn keep(
        &self,
        answer: Result<mcp_proto::types::CallToolResult, mcp_proto::ErrorObject>,
    ) {
        *self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(answer);
    }

    /// Keeps the server's input round.
    pub(crate) fn keep_round(&self, round: mcp_proto::types::InputRequiredResult) {
        *self
            .round
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(round);
    }

    /// The server's input round, if it asked.
    pub(crate) fn take_round(&self) -> Option<mcp_proto::types::InputRequiredResult> {
        self.round
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// The server's answer, if it came.
    pub(crate) fn take(
        &self,
    ) -> Option<Result<mcp_proto::types::CallToolResult, mcp_proto::ErrorObject>> {
        self.answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

impl ToolCall {
    /// A call with an id and arguments, not cancelled.
    pub fn new(call_id: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            call_id: call_id.into(),
            arguments,
            cancel: CancelToken::new(),
            progress: None,
            passthrough: None,
        }
    }

    /// The same call, cancelled through `token`.
    pub fn with_cancel(mut self, token: CancelToken) -> Self {
        self.cancel = token;
        self
    }

    /// The same call, asking the server for progress and sending each
    /// report to `sink` (see [`ToolCall::progress`]).
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }
}

//! Sampling: the server's `sampling/createMessage` request and the client's answer (MCP "Client/Sampling").

use serde::{Deserialize, Serialize};

use super::Meta;
use super::de::open_string_enum;
use super::{JsonObject, Role, SamplingMessageContent, TaskMetadata, Tool};

/// `sampling/createMessage` request parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation to continue.
    pub messages: Vec<SamplingMessage>,
    /// The server's model preferences; advisory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may change or drop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Context from MCP servers to attach; `thisServer` and `allServers` are
    /// soft-deprecated (2025-11-25) and need the `sampling.context` capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The most tokens to sample.
    pub max_tokens: u64,
    /// Sequences that stop sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata to pass through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may use (2025-11-25; needs the `sampling.tools` capability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use the tools (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Ask for task-augmented execution (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One message of a sampling conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// One block, or (2025-11-25) several.
    pub content: SamplingMessageContent,
    /// Message metadata (2025-11-25).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The server's preferences for model selection, all advisory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, evaluated in order as substrings of model names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// How much speed matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A model name hint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelHint {
    /// A substring of a model name, such as `"sonnet"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// Which servers' context to include in a sampling request.
    pub enum IncludeContext {
        /// No context (the default).
        None = "none",
        /// Context from the requesting server (soft-deprecated).
        ThisServer = "thisServer",
        /// Context from every server (soft-deprecated).
        AllServers = "allServers",
    }
}

/// How the model may use tools in sampling (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolChoice {
    /// `auto` (the default), `required` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// The `mode` of a [`ToolChoice`].
    pub enum ToolChoiceMode {
        /// The model decides.
        Auto = "auto",
        /// The model must use at least one tool.
        Required = "required",
        /// The model must not use tools.
        None = "none",
    }
}

/// `sampling/createMessage` result, sent by the client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who speaks (the assistant, normally).
    pub role: Role,
    /// One block, or (2025-11-25) several. Older versions take one text,
    /// image or audio block.
    pub content: SamplingMessageContent,
    /// The model that produced the message.
    pub model: String,
    /// Why sampling stopped, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// Why sampling stopped. The spec leaves the set open for provider-specific reasons.
    pub enum StopReason {
        /// The assistant's turn ended naturally.
        EndTurn = "endTurn",
        /// A stop sequence was met.
        StopSequence = "stopSequence",
        /// The token limit was reached.
        MaxTokens = "maxTokens",
        /// The model wants to use tools (2025-11-25).
        ToolUse = "toolUse",
    }
}

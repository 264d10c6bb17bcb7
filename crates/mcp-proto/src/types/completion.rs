//! Argument completion: `completion/complete` (MCP "Server/Utilities/Completion").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};

use super::Meta;
use super::common::impl_result_type;
use super::de::{deserialize_object, deserialize_tagged};
use super::{JsonObject, ResultType};

/// `completion/complete` request parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteRequestParams {
    /// What is being completed: a prompt or a resource template.
    #[serde(rename = "ref")]
    pub reference: Reference,
    /// The argument being typed.
    pub argument: CompleteArgument,
    /// Arguments already resolved (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `ref` of a completion request, tagged by `type`.
#[derive(Clone, Debug, PartialEq)]
pub enum Reference {
    /// `type: "ref/prompt"`: a prompt's argument.
    Prompt(PromptReference),
    /// `type: "ref/resource"`: a resource template's variable.
    Resource(ResourceTemplateReference),
    /// Any other `type`, kept exactly as received.
    Unknown(serde_json::Value),
}

impl Serialize for Reference {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Reference::Prompt(r) => r.serialize(serializer),
            Reference::Resource(r) => r.serialize(serializer),
            Reference::Unknown(v) => v.serialize(serializer),
        }
    }
}

deserialize_tagged!(Reference, "a completion reference", "type", {
    "ref/prompt" => Prompt(PromptReference),
    "ref/resource" => Resource(ResourceTemplateReference),
});

/// Identifies a prompt (`type: "ref/prompt"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "type", rename = "ref/prompt", rename_all = "camelCase")]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// Human-readable name (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(PromptReference, "a prompt reference", tag "type" = "ref/prompt", {
    name: "name" => req,
    title: "title" => opt,
});

/// Identifies a resource template (`type: "ref/resource"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "type", rename = "ref/resource", rename_all = "camelCase")]
pub struct ResourceTemplateReference {
    /// The URI or URI template.
    pub uri: String,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_object!(ResourceTemplateReference, "a resource template reference", tag "type" = "ref/resource", {
    uri: "uri" => req,
});

/// The argument being completed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// What the user has typed so far.
    pub value: String,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Context for a completion (2025-06-18).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteContext {
    /// Values of arguments already resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `completion/complete` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
    /// What the result holds (2026-07-28); missing means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Completion suggestions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 values.
    pub values: Vec<String>,
    /// How many values exist in all, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more values exist than were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl_result_type!(CompleteResult);

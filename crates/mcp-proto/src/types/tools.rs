//! Tools: `tools/list`, `tools/call` and the tool definition (MCP "Server/Tools").

use serde::{Deserialize, Serialize};

use super::Meta;
use super::common::{impl_cacheable, impl_result_type};
use super::de::open_string_enum;
use super::{
    CacheScope, ContentBlock, Cursor, Icon, JsonObject, JsonText, ResultType, TaskMetadata,
};

/// A tool the client can call (`tools/list`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool's name, unique within its server. See [`tool_name_issues`].
    pub name: String,
    /// Human-readable name (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, as a hint for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments: an object schema with `type: "object"`,
    /// kept as the server wrote it (decoding checks only that it is an
    /// object; [`JsonText::to_object`] decodes it).
    #[serde(deserialize_with = "super::json_text::object")]
    pub input_schema: JsonText,
    /// JSON Schema of `structuredContent` (2025-06-18). An object schema up
    /// to 2025-11-25; any JSON Schema 2020-12 (including `true`) from
    /// 2026-07-28; kept as the server wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonText>,
    /// Behaviour hints (2025-03-26). Untrusted unless the server is trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons for display (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Execution properties (2025-11-25): task support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Tool metadata (2025-06-18).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Tool {
    /// A tool with a name and an input schema `{"type": "object"}`.
    pub fn new(name: impl Into<String>) -> Self {
        Tool {
            name: name.into(),
            input_schema: JsonText::from_text(r#"{"type":"object"}"#)
                .expect("the empty object schema is JSON"),
            ..Tool::default()
        }
    }

    /// The name to show: `title`, then `annotations.title`, then `name`
    /// (2025-06-18 display-name precedence).
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&self.name)
    }

    /// Whether the tool may, must or must not be called as a task; missing
    /// means [`TaskSupport::Forbidden`] (2025-11-25).
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .and_then(|e| e.task_support.clone())
            .unwrap_or(TaskSupport::Forbidden)
    }
}

/// Hints about a tool's behaviour (2025-03-26). All of them are hints: a
/// client must not trust them from an untrusted server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (default `true`; meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call has no further effect (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world of external entities (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolAnnotations {
    /// `readOnlyHint` with its default (`false`).
    pub fn read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }

    /// `destructiveHint` with its default (`true`), and `false` for a read-only tool.
    pub fn destructive(&self) -> bool {
        !self.read_only() && self.destructive_hint.unwrap_or(true)
    }

    /// `idempotentHint` with its default (`false`).
    pub fn idempotent(&self) -> bool {
        self.idempotent_hint.unwrap_or(false)
    }

    /// `openWorldHint` with its default (`true`).
    pub fn open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }
}

/// How a tool may be executed (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool supports task-augmented calls; missing means forbidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// Whether a tool can be called as a task (2025-11-25 `execution.taskSupport`).
    pub enum TaskSupport {
        /// Never as a task (the default).
        Forbidden = "forbidden",
        /// As a task or not.
        Optional = "optional",
        /// Only as a task.
        Required = "required",
    }
}

/// `tools/list` request parameters.
pub type ListToolsRequestParams = super::PaginatedRequestParams;

/// `tools/list` result: one page of tools.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// The cursor for the next page; `None` on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// How long the result may be cached, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<serde_json::Number>,
    /// Who may reuse a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
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

/// `tools/call` request parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// The arguments, matching the tool's input schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Ask for task-augmented execution (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Answers to the server's `inputRequests`, on an MRTR retry (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<JsonObject>,
    /// The server's `requestState`, echoed byte for byte on an MRTR retry (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata (`progressToken` and, in 2026-07-28, the per-request
    /// version and capabilities).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolRequestParams {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Option<JsonObject>) -> Self {
        CallToolRequestParams {
            name: name.into(),
            arguments,
            ..CallToolRequestParams::default()
        }
    }
}

/// `tools/call` result.
///
/// `isError: true` is a tool execution error (bad input, a failing API) that
/// the model should see; protocol errors arrive as JSON-RPC errors instead.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result.
    #[serde(deserialize_with = "super::de::deserialize_small_vec")]
    pub content: Vec<ContentBlock>,
    /// The structured result (2025-06-18): an object up to 2025-11-25, any
    /// JSON value from 2026-07-28.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<serde_json::Value>,
    /// Whether the tool failed; missing means `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// What the result holds (2026-07-28); missing means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata (taken apart from the rest of the result when
    /// decoded with [`RawJson::decode_result`](crate::jsonrpc::RawJson::decode_result)).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl super::LiftsMeta for CallToolResult {
    const META: Option<fn(&mut Self) -> &mut Option<Meta>> = Some(|result| &mut result.meta);
    const RESULT_TYPE: Option<fn(&mut Self) -> &mut Option<ResultType>> =
        Some(|result| &mut result.result_type);
}

impl CallToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            ..CallToolResult::default()
        }
    }

    /// Whether the tool reported a failure (`isError`, default `false`).
    pub fn failed(&self) -> bool {
        self.is_error.unwrap_or(false)
    }
}

impl_result_type!(ListToolsResult, CallToolResult);
impl_cacheable!(ListToolsResult);

/// The longest tool name the 2025-11-25 guidance allows.
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Checks a tool name against the 2025-11-25 naming guidance (1 to 128
/// characters from `A-Z a-z 0-9 _ - .`) and returns what is wrong, if
/// anything.
///
/// The guidance is a SHOULD, so this is a diagnostic for logs and linters,
/// never a reason to drop a tool. Uniqueness within a server is the
/// caller's check.
pub fn tool_name_issues(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("tool name is empty");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Some("tool name has characters other than A-Z, a-z, 0-9, '_', '-' and '.'");
    }
    // Every allowed character is one byte, so the byte length is the character count.
    if name.len() > MAX_TOOL_NAME_LEN {
        return Some("tool name is longer than 128 characters");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_linted_leniently() {
        for ok in [
            "get_weather",
            "a",
            "ns.tool-1",
            "ABC_def.9",
            &"x".repeat(128),
        ] {
            assert_eq!(tool_name_issues(ok), None, "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("has space", "characters"),
            ("a,b", "characters"),
            ("tool/name", "characters"),
            ("outil-é", "characters"),
            (&"x".repeat(129), "longer"),
        ] {
            let issue = tool_name_issues(bad).unwrap_or_else(|| panic!("{bad:?} passed"));
            assert!(issue.contains(why), "{bad:?}: {issue}");
        }
    }

    #[test]
    fn display_name_precedence() {
        let mut tool = Tool::new("n");
        assert_eq!(tool.display_name(), "n");
        tool.annotations = Some(ToolAnnotations {
            title: Some("annotated".into()),
            ..ToolAnnotations::default()
        });
        assert_eq!(tool.display_name(), "annotated");
        tool.title = Some("titled".into());
        assert_eq!(tool.display_name(), "titled");
    }

    #[test]
    fn annotation_defaults() {
        let a = ToolAnnotations::default();
        assert!(!a.read_only() && a.destructive() && !a.idempotent() && a.open_world());
        let ro = ToolAnnotations {
            read_only_hint: Some(true),
            ..ToolAnnotations::default()
        };
        assert!(!ro.destructive());
    }

    #[test]
    fn keeps_unknown_fields_at_every_level() {
        let json = r#"{"name":"t","inputSchema":{"type":"object"},"x-new":[1,{"a":null}],
            "annotations":{"readOnlyHint":true,"futureHint":"?"},"execution":{"taskSupport":"someday"}}"#;
        let tool: Tool = serde_json::from_str(json).unwrap();
        assert_eq!(tool.extra["x-new"], serde_json::json!([1, {"a": null}]));
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(annotations.extra["futureHint"], "?");
        assert_eq!(tool.task_support(), TaskSupport::Other("someday".into()));
        let back = serde_json::to_value(&tool).unwrap();
        let orig: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(back, orig);
    }

    #[test]
    fn rejects_missing_and_duplicate_fields() {
        for bad in [
            r#"{"inputSchema":{"type":"object"}}"#,
            r#"{"name":"t"}"#,
            r#"{"name":"t","name":"u","inputSchema":{}}"#,
            r#"{"name":"t","inputSchema":[]}"#,
            r#"["t"]"#,
        ] {
            assert!(serde_json::from_str::<Tool>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn null_optional_fields_are_none() {
        let tool: Tool =
            serde_json::from_str(r#"{"name":"t","title":null,"inputSchema":{}}"#).unwrap();
        assert_eq!(tool.title, None);
    }

    #[test]
    fn escaped_keys_are_recognised() {
        let tool: Tool =
            serde_json::from_str(r#"{"n\u0061me":"t","inputSchema":{},"\u0078":1}"#).unwrap();
        assert_eq!(tool.name, "t");
        assert_eq!(tool.extra["x"], 1);
    }
}

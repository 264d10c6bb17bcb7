//! Every MCP request, result, notification and data type a client meets.
//!
//! Conventions, the same in every file here:
//! - field names are the spec's camelCase on the wire;
//! - optional fields are `Option` and are left out when `None`;
//! - every object keeps the fields this crate does not know in `extra`, so a
//!   newer peer's data survives a round trip;
//! - `_meta` is the `meta` field.
//!
//! [`meta`] has the reserved `_meta` keys and the key-format rules. A result
//! that 2026-07-28 may mark with `resultType` has a `result_type` field and a
//! `result_type()` accessor (missing means complete). Tagged unions
//! ([`ContentBlock`], [`SamplingContent`], [`Reference`]) keep members of an
//! unknown type in an `Unknown` variant, exactly as received.
//!
//! Tagged unions and their members decode with generated one-pass visitors
//! instead of derived internally tagged enums, which buffer every block
//! before decoding it and cannot keep unknown ones; see `de.rs`.

mod common;
mod completion;
mod content;
pub(crate) mod de;
mod discovery;
mod elicitation;
mod json_text;
mod lifecycle;
mod logging;
pub mod meta;
mod notifications;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod skills;
mod tasks;
mod tools;

pub use common::*;
pub use completion::*;
pub use content::*;
pub use discovery::*;
pub use elicitation::*;
pub use json_text::JsonText;
pub use lifecycle::*;
pub use logging::*;
pub use meta::{LiftsMeta, Meta};
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use skills::*;
pub use tasks::*;
pub use tools::*;

/// A JSON object: the type of `_meta`, of capability objects and of unknown fields.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// The kind of a JSON value with its article (`null`, `a boolean`,
/// `a number`, `a string`, `an array`, `an object`), as a message about a
/// value of the wrong type names it.
///
/// ```
/// assert_eq!(mcp_proto::types::json_kind(&serde_json::json!([1])), "an array");
/// ```
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

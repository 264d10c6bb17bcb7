//! Every MCP request, result, notification and data type a client meets.
//!
//! Conventions, the same in every file here:
//! - field names are the spec's camelCase on the wire;
//! - optional fields are `Option` and are left out when `None`;
//! - every object keeps the fields this crate does not know in `extra`, so a
//!   newer peer's data survives a round trip;
//! - `_meta` is the `meta` field.

mod common;
mod lifecycle;
mod notifications;

pub use common::*;
pub use lifecycle::*;
pub use notifications::*;

/// A JSON object: the type of `_meta`, of capability objects and of unknown fields.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

//! Model Context Protocol types, codecs and the sans-IO client and server sessions.
//!
#![doc = include_str!("../README.md")]
//!
//! ## Modules
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 framing (ids, messages, batches).
//! - [`types`]: every MCP request, result and notification a client meets.
//! - [`methods`]: method names as constants.
//! - [`version`]: protocol versions and negotiation.
//! - [`codec`]: incremental newline-delimited JSON and Server-Sent Events decoders.
//! - [`headers`]: the 2026-07-28 Streamable HTTP request headers (`Mcp-Method`,
//!   `Mcp-Name`, `Mcp-Param-*` from `x-mcp-header`) and their value encoding.
//! - [`session`]: the client session state machine.
//! - [`server`]: the server session state machine, both eras.
//! - [`text`]: a peer's text made safe to show: escaped for terminals,
//!   bounded for errors and a model's context.
#![cfg_attr(
    feature = "proptest",
    doc = "- [`strategies`] (feature `proptest`): proptest strategies for every message type,"
)]
#![cfg_attr(
    not(feature = "proptest"),
    doc = "- `strategies` (feature `proptest`): proptest strategies for every message type,"
)]
//!   whole typed requests and whole client sessions, with `proptest` itself
//!   re-exported.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod codec;
pub mod headers;
pub mod jsonrpc;
pub mod methods;
mod scan;
pub mod secret;
pub mod server;
pub mod session;
pub mod sync;
pub mod text;
pub mod types;
pub mod version;

#[cfg(feature = "proptest")]
#[cfg_attr(docsrs, doc(cfg(feature = "proptest")))]
pub mod strategies;

pub use jsonrpc::{ErrorObject, Frame, Message, RawJson, RawValue, RequestId};
pub use version::{Era, EraPolicy, ProtocolVersion};

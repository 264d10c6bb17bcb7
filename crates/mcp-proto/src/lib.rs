//! Model Context Protocol types, codecs and the sans-IO client session.
//!
//! This crate does no I/O and never reads the clock: callers hand it bytes
//! and [`std::time::Instant`]s and take bytes, events and deadlines back.
//! `mcp-transport` pumps it over real pipes and sockets.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 framing (ids, messages, batches).
//! - [`types`]: every MCP request, result and notification a client meets.
//! - [`methods`]: method names as constants.
//! - [`version`]: protocol versions and negotiation.
//! - [`codec`]: incremental newline-delimited JSON and Server-Sent Events decoders.
//! - [`headers`]: the 2026-07-28 Streamable HTTP request headers (`Mcp-Method`,
//!   `Mcp-Name`, `Mcp-Param-*` from `x-mcp-header`) and their value encoding.
//! - [`session`]: the client session state machine.
//! - [`text`]: a peer's text made safe to show: escaped for terminals,
//!   bounded for errors and a model's context.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod codec;
pub mod headers;
pub mod jsonrpc;
pub mod methods;
mod scan;
pub mod secret;
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

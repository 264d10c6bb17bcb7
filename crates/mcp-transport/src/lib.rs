//! MCP transports and the async client that speaks MCP over them.
//!
#![doc = include_str!("../README.md")]
//!
//! ## How the pieces fit
//!
//! A [`Transport`] moves whole JSON-RPC messages
//! ([`mcp_proto::Message`]) to and from one server, and reports what went
//! wrong on the wire as a [`TransportError`]:
//! - [`StdioTransport`] spawns the server process (in its own process
//!   group, so nothing it starts outlives the connection) and speaks
//!   newline-delimited JSON on its stdin and stdout (MCP "Transports"
//!   §stdio);
//! - [`HttpTransport`] speaks Streamable HTTP, or the legacy HTTP+SSE
//!   transport ([`HttpProtocol`]), over hyper and rustls, with an optional
//!   [`AuthProvider`] for bearer tokens (§Streamable HTTP, "Authorization");
//! - [`UnixSocketTransport`] speaks the same newline-delimited JSON over a
//!   Unix domain socket, to a server already listening there (a local
//!   daemon);
//! - [`ndjson::NdjsonTransport`] speaks newline-delimited JSON over any
//!   `AsyncRead` and `AsyncWrite` (the framing rules are documented once,
//!   there); stdio and Unix sockets are built on it;
//! - [`memory_pair`] joins two in-memory ends, for tests and embedding;
//!   third parties implement the trait for their own channels;
//! - `scripted` (feature `scripted`): scripted MCP servers on the far end
//!   of an in-memory pair, for tests and examples.
//! - `server` (feature `server`): the serving side's I/O:
//!   `server::stream`, which serves `mcp_proto`'s `ServerSession` over any
//!   byte stream in newline-delimited JSON for an application's
//!   `ServerHandler` (within a budget of unread replies), and
//!   `server::listener`, the bounded HTTP/1.1 accept loop (timeouts, a
//!   connection cap under the descriptor limit) a host's local servers
//!   share.
//!
//! A [`Client`] owns one transport. [`Client::new`] returns it with its
//! [`Driver`], the task that pumps `mcp_proto`'s sans-IO session over the
//! transport (request ids, deadlines, cancellation, progress); [`Client::connect`]
//! spawns the driver and settles the protocol era (the 2026-07-28
//! `server/discover` probe, or the `initialize` handshake). Requests the
//! server sends (sampling, elicitation, roots) go to a [`ClientHandler`],
//! which in the 2026-07-28 era also answers a call's input rounds, unless
//! the call's [`CallOptions::return_input_required`] hands them to the
//! caller ([`ClientError::InputRequired`]: the server's keys and
//! `requestState` unchanged, for a gateway to relay); each request's
//! failure is a [`ClientError`] that keeps its transport cause.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
#[cfg(feature = "fuzzing")]
#[cfg_attr(docsrs, doc(cfg(feature = "fuzzing")))]
pub mod fuzzing;
#[cfg(feature = "http")]
mod http;
mod memory;
pub mod ndjson;
#[cfg(feature = "scripted")]
#[cfg_attr(docsrs, doc(cfg(feature = "scripted")))]
pub mod scripted;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod server;
mod skills;
#[cfg(all(unix, feature = "stdio"))]
mod stdio;
mod transport;
#[cfg(all(unix, feature = "unix"))]
mod unix;

pub use client::{
    CallOptions, Client, ClientError, ClientHandler, ClientOptions, Driver, ServerNotification,
};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use http::{
    AuthProvider, CaEnv, HttpOptions, HttpProtocol, HttpTransport, ProxyConfig, ProxyConnector,
    TlsError, TlsFailure, https_connector, tls_root_store,
};
pub use memory::{MemoryTransport, memory_pair};
pub use skills::{LoadedSkill, SkillLoadError};
#[cfg(all(unix, feature = "stdio"))]
#[cfg_attr(docsrs, doc(cfg(all(unix, feature = "stdio"))))]
pub use stdio::{NETWORK_ENV, ServerExited, StdioOptions, StdioTransport};
pub use transport::{FrameSink, Inbound, Transport, TransportError, TransportExtensions};
#[cfg(all(unix, feature = "unix"))]
#[cfg_attr(docsrs, doc(cfg(all(unix, feature = "unix"))))]
pub use unix::UnixSocketTransport;

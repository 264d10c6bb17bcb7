//! MCP transports and the async client that speaks MCP over them.
//!
//! How the pieces fit. A [`Transport`] moves whole JSON-RPC messages
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
//! server sends (sampling, elicitation, roots) go to a [`ClientHandler`];
//! each request's failure is a [`ClientError`] that keeps its transport
//! cause.
//!
//! ```
//! use mcp_transport::scripted::{Reply, ScriptedServer};
//! use mcp_transport::{Client, ClientOptions};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // Any transport will do; `StdioTransport::spawn(StdioOptions::new("my-server"))`
//! // for a process. This one is an in-memory scripted server.
//! let (transport, _seen) = ScriptedServer::new()
//!     .tool(json!({"name": "add", "inputSchema": {"type": "object"}}), |args| {
//!         let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
//!         Reply::result(json!({"content": [{"type": "text", "text": sum.to_string()}]}))
//!     })
//!     .spawn();
//! let client = Client::connect(transport, ClientOptions::default()).await?;
//! let args = json!({"a": 2, "b": 3}).as_object().cloned();
//! let result = client.call_tool("add", args).await?;
//! assert_eq!(serde_json::to_value(&result.content[0])?["text"], "5");
//! client.close().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod client;
#[cfg(unix)]
mod framing;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod http;
mod memory;
#[cfg(feature = "scripted")]
pub mod scripted;
#[cfg(feature = "server")]
pub mod server;
mod skills;
#[cfg(unix)]
mod stdio;
mod transport;
#[cfg(unix)]
mod unix;

pub use client::{
    CallOptions, Client, ClientError, ClientHandler, ClientOptions, Driver, ServerNotification,
};
pub use http::{
    AuthProvider, CaEnv, HttpOptions, HttpProtocol, HttpTransport, ProxyConfig, ProxyConnector,
    https_connector, tls_root_store,
};
pub use memory::{MemoryTransport, memory_pair};
pub use skills::{LoadedSkill, SkillLoadError};
#[cfg(unix)]
pub use stdio::{NETWORK_ENV, ServerExited, StdioOptions, StdioTransport};
pub use transport::{FrameSink, Inbound, Transport, TransportError};
#[cfg(unix)]
pub use unix::UnixSocketTransport;

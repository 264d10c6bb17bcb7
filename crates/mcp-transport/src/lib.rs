//! MCP transports and the async client.
//!
//! - [`Transport`]: the small async trait every transport implements; third
//!   parties implement it too.
//! - [`memory_pair`]: the in-memory reference transport.
//! - [`Client`]: pumps `mcp_proto`'s sans-IO session over any transport.

mod client;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod http;
mod memory;
#[cfg(feature = "scripted")]
pub mod scripted;
#[cfg(unix)]
mod stdio;
mod transport;

pub use client::{
    CallOptions, Client, ClientError, ClientHandler, ClientOptions, Driver, ServerNotification,
};
pub use http::{AuthProvider, HttpOptions, HttpProtocol, HttpTransport, tls_root_store};
pub use memory::{MemoryTransport, memory_pair};
#[cfg(unix)]
pub use stdio::{ServerExited, StdioOptions, StdioTransport};
pub use transport::{FrameSink, Inbound, Transport, TransportError};

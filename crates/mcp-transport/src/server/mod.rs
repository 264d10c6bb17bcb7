//! Serving MCP over I/O (feature `server`): a [`ServerSession`](mcp_proto::server::ServerSession) driven over a byte stream for an application's [`ServerHandler`], and a bounded HTTP/1.1 accept loop.
//!
//! - [`stream`]: one connection in newline-delimited JSON (stdio, a Unix
//!   socket): the requests' futures run concurrently on the connection's
//!   task, cancellation, progress,
//!   server-to-client requests, and a bound on the replies a client leaves
//!   unread ([`stream::REPLY_BUDGET`]).
//! - `http` (with feature `http` too): Streamable HTTP, both eras, for an
//!   application's [`HttpApp`]: handshake-era sessions with
//!   `Mcp-Session-Id`, stateless-era requests, SSE streams, an
//!   [`AccessPolicy`] hook and bounds.
//! - `listener` (with feature `http` too): the accept loop every HTTP
//!   server of a host shares (header-read and keep-alive timeouts, a connection cap under the
//!   process's file-descriptor limit, 503 above it).

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod listener;
pub mod stream;

#[cfg(feature = "http")]
pub use http::{AccessPolicy, HttpApp, HttpServer, HttpServerOptions, LoopbackPolicy, Refusal};
#[cfg(feature = "http")]
pub use listener::{Listener, ListenerOptions};
#[cfg(unix)]
pub use stream::handed_stdio;
pub use stream::{
    Peer, PeerError, REPLY_BUDGET, RequestContext, ServerHandler, StdinReader, StdoutWriter,
    StreamOptions, StreamServer, serve, stdio,
};

//! Serving MCP over I/O (feature `server`): what a server process needs around its handler, starting with a bounded HTTP/1.1 accept loop.
//!
//! - `listener` (with feature `http` too): the accept loop every HTTP
//!   server of a host shares (header-read and keep-alive timeouts, a
//!   connection cap under the process's file-descriptor limit, 503 above
//!   it).

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod listener;

#[cfg(feature = "http")]
pub use listener::{Listener, ListenerOptions};

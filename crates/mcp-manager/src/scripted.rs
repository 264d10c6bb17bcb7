//! A [`TransportFactory`] of scripted in-memory servers, for tests and runnable examples: each server id is answered by its [`ScriptedServer`].
//!
//! Behind the `scripted` feature, like `mcp_transport::scripted`, which it
//! builds on: nothing here starts a process or opens a socket.
//!
//! ```
//! use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
//! use mcp_manager::McpManager;
//! use mcp_manager::scripted::{Reply, ScriptedFactory, ScriptedServer};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let echo = ScriptedServer::new().tool(json!({"name": "echo", "inputSchema": {"type": "object"}}), |args| {
//!     Reply::result(json!({"content": [{"type": "text", "text": args["text"]}]}))
//! });
//! let manager = McpManager::builder()
//!     .factory(ScriptedFactory::new().server("echo", echo))
//!     .build();
//! let config = ServerConfig::new("echo", TransportConfig::Stdio(StdioConfig::new("unused")));
//! let report = manager.connect_servers([config]).await;
//! assert_eq!(report.tools().map(|(_, tool)| tool.name.as_str()).collect::<Vec<_>>(), ["echo"]);
//! manager.close().await;
//! # });
//! ```
#![cfg_attr(docsrs, doc(cfg(feature = "scripted")))]

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use mcp_config::ResolvedConfig;
use mcp_transport::Transport;
pub use mcp_transport::scripted::{Received, Reply, ScriptedServer, Seen};
use tokio::time::Instant;

use crate::error::ErrorCode;
use crate::factory::{ConnectError, TransportFactory};

/// Answers each server id with its scripted server; an id it was not
/// given fails to connect with `missing_command`. Every connection gets a
/// fresh copy of the script; what each one receives is kept for
/// [`ScriptedFactory::seen`].
#[derive(Debug, Default)]
pub struct ScriptedFactory {
    servers: HashMap<String, ScriptedServer>,
    seen: Mutex<HashMap<String, Vec<Seen>>>,
}

impl ScriptedFactory {
    /// A factory with no servers.
    pub fn new() -> Self {
        ScriptedFactory::default()
    }

    /// Answers server `id` with `server`.
    pub fn server(mut self, id: impl Into<String>, server: ScriptedServer) -> Self {
        self.servers.insert(id.into(), server);
        self
    }

    /// What the connections to `id` received so far, one channel per
    /// connection, oldest first; each call takes them.
    pub fn seen(&self, id: &str) -> Vec<Seen> {
        mcp_proto::sync::lock(&self.seen)
            .remove(id)
            .unwrap_or_default()
    }
}

#[async_trait]
impl TransportFactory for ScriptedFactory {
    async fn connect(
        &self,
        server: &ResolvedConfig,
        _deadline: Instant,
    ) -> Result<Box<dyn Transport>, ConnectError> {
        let Some(script) = self.servers.get(&server.id) else {
            return Err(ConnectError::new(
                ErrorCode::MissingCommand,
                format!("no scripted server is named `{}`", server.id),
                "transport.command",
            ));
        };
        let (transport, seen) = script.clone().spawn();
        mcp_proto::sync::lock(&self.seen)
            .entry(server.id.clone())
            .or_default()
            .push(seen);
        Ok(Box::new(transport))
    }
}

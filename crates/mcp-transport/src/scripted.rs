//! A scripted MCP server in memory, for tests and examples: say what it answers to each method, and it speaks the handshake era over a [`MemoryTransport`].
//!
//! [`ScriptedServer`] answers `initialize` (protocol 2025-11-25, with the
//! capabilities it was given), `ping`, `tools/list` (every tool added with
//! [`ScriptedServer::tool`]) and `tools/call` (the tool's handler), and
//! whatever else [`ScriptedServer::on`] scripts. Any other request is
//! refused with "method not found" (`-32601`), which is also how it answers
//! the 2026-07-28 era's `server/discover`, so a client detecting the era
//! settles on the handshake. Every message it receives is reported on the
//! [`Seen`] channel, so a test can assert what the client sent.
//!
//! Behind the `scripted` feature: it is for tests, not a server to ship.
//!
//! ```
//! use mcp_transport::scripted::{Reply, ScriptedServer};
//! use mcp_transport::{Client, ClientOptions};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let (transport, mut seen) = ScriptedServer::new()
//!     .tool(json!({"name": "echo", "inputSchema": {"type": "object"}}), |arguments| {
//!         Reply::result(json!({"content": [{"type": "text", "text": arguments["text"]}]}))
//!     })
//!     .spawn();
//! let (client, driver) = Client::new(transport, ClientOptions::default());
//! tokio::spawn(driver.run());
//! client.initialize().await?;
//! let tools = client.list_tools(None).await?;
//! assert_eq!(tools.tools[0].name, "echo");
//! # Ok::<(), mcp_transport::ClientError>(())
//! # }).unwrap();
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use mcp_proto::jsonrpc::{ErrorObject, Frame, Message, RequestId};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::memory::{MemoryTransport, memory_pair};
use crate::transport::{Inbound, Transport};

/// What a scripted handler answers.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Reply {
    /// A result (the `result` member of the response).
    Result(Value),
    /// A JSON-RPC error.
    Error(ErrorObject),
    /// No answer, ever: the request stays in flight (for deadlines and
    /// cancellation).
    Never,
}

impl Reply {
    /// A result.
    pub fn result(value: Value) -> Reply {
        Reply::Result(value)
    }

    /// A JSON-RPC error with this code and message.
    pub fn error(code: i64, message: impl Into<String>) -> Reply {
        Reply::Error(ErrorObject::new(code, message))
    }
}

/// One message the server received: a request or a notification, with its
/// parameters as JSON (`null` when there were none).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Received {
    /// The method.
    pub method: String,
    /// The parameters.
    pub params: Value,
    /// Whether it was a request (it had an id).
    pub request: bool,
}

/// The messages the server received, in order.
pub type Seen = mpsc::UnboundedReceiver<Received>;

type Handler = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// A scripted MCP server. Build it, then [`spawn`](ScriptedServer::spawn)
/// it inside a tokio runtime.
#[derive(Clone, Default)]
pub struct ScriptedServer {
    capabilities: Option<Value>,
    instructions: Option<String>,
    tools: Vec<(Value, Handler)>,
    methods: HashMap<String, Handler>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("tools", &self.tools.len())
            .field("methods", &self.methods.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ScriptedServer {
    /// A server with no tools, declaring the `tools` capability.
    pub fn new() -> Self {
        ScriptedServer::default()
    }

    /// The capabilities `initialize` declares. Default `{"tools": {}}`.
    pub fn capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// The instructions `initialize` returns.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool (`tool` is its `tools/list` entry) and what a
    /// `tools/call` of it answers, given the call's `arguments`.
    pub fn tool(
        mut self,
        tool: Value,
        handler: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.tools.push((tool, Arc::new(handler)));
        self
    }

    /// Scripts any other request method (or replaces a built-in answer),
    /// given the request's `params`.
    pub fn on(
        mut self,
        method: impl Into<String>,
        handler: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.methods.insert(method.into(), Arc::new(handler));
        self
    }

    /// Starts the server on a task and returns the client's end of the
    /// connection and what the server receives. The server stops when the
    /// client's end is dropped or closed.
    pub fn spawn(self) -> (MemoryTransport, Seen) {
        let (client_end, server_end) = memory_pair();
        let (seen_tx, seen_rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let messages = match server_end.recv().await {
                    Inbound::Frame(Frame::Single(message)) => vec![message],
                    Inbound::Frame(Frame::Batch(messages)) => messages,
                    Inbound::Closed(_) => return,
                    _ => continue,
                };
                for message in messages {
                    if let Some(answer) = self.answer(&message, &seen_tx)
                        && server_end.send(answer).await.is_err()
                    {
                        return;
                    }
                }
            }
        });
        (client_end, seen_rx)
    }

    /// The response to one message, if it calls for one.
    fn answer(&self, message: &Message, seen: &mpsc::UnboundedSender<Received>) -> Option<Message> {
        let (id, method, params) = match message {
            Message::Request(request) => (
                Some(request.id.clone()),
                request.method.as_str(),
                &request.params,
            ),
            Message::Notification(notification) => {
                (None, notification.method.as_str(), &notification.params)
            }
            _ => return None,
        };
        let params: Value = params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null);
        let _ = seen.send(Received {
            method: method.to_owned(),
            params: params.clone(),
            request: id.is_some(),
        });
        let id = id?;
        let reply = match self.methods.get(method) {
            Some(handler) => handler(&params),
            None => self.built_in(method, &params),
        };
        respond(id, reply)
    }

    fn built_in(&self, method: &str, params: &Value) -> Reply {
        match method {
            "initialize" => {
                let mut result = json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": self.capabilities.clone().unwrap_or_else(|| json!({"tools": {}})),
                    "serverInfo": {"name": "scripted", "version": "1.0.0"},
                });
                if let Some(instructions) = &self.instructions {
                    result["instructions"] = json!(instructions);
                }
                Reply::Result(result)
            }
            "ping" => Reply::Result(json!({})),
            "tools/list" => {
                let tools: Vec<&Value> = self.tools.iter().map(|(tool, _)| tool).collect();
                Reply::Result(json!({"tools": tools}))
            }
            "tools/call" => {
                let name = params["name"].as_str().unwrap_or_default();
                let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
                match self.tools.iter().find(|(tool, _)| tool["name"] == name) {
                    Some((_, handler)) => handler(&arguments),
                    None => Reply::error(-32602, format!("unknown tool: {name}")),
                }
            }
            other => Reply::Error(ErrorObject::method_not_found(other)),
        }
    }
}

fn respond(id: RequestId, reply: Reply) -> Option<Message> {
    match reply {
        Reply::Result(value) => Message::response(id, &value).ok(),
        Reply::Error(error) => Some(Message::error(Some(id), error)),
        Reply::Never => None,
    }
}

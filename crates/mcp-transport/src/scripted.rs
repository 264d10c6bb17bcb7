//! Scripted MCP servers in memory, for tests and examples: say what the server answers to each method, or drive the wire one message at a time.
//!
//! Two ways to script the far end of a [`MemoryTransport`] (and, for
//! [`ScriptedServer::serve`], of any [`Transport`], so that a downstream
//! transport can be tested against it):
//!
//! - Handler mode, [`ScriptedServer`]: it answers `initialize` (protocol
//!   2025-11-25, with the capabilities it was given), `ping`, `tools/list`
//!   (every tool added with [`ScriptedServer::tool`]) and `tools/call` (the
//!   tool's handler), and whatever else [`ScriptedServer::on`] or
//!   [`ScriptedServer::on_async`] scripts. Any other request is refused
//!   with "method not found" (`-32601`), which is also how it answers the
//!   2026-07-28 era's `server/discover`, so a client detecting the era
//!   settles on the handshake. A [`Reply`] can come at once, after a delay
//!   on the tokio clock ([`Reply::after`]) or never; a request that waits
//!   holds up no other. Every message it receives is reported on the
//!   [`Seen`] channel, so a test can assert what the client sent, and a
//!   [`ServerHandle`] pushes messages to the client, hangs up, and tells
//!   whether the client closed the connection.
//! - Step mode, [`Peer`]: the test reads each message the client sends and
//!   writes each one it receives, for the rules that depend on exactly what
//!   is on the wire and when (ids, cancellation, ordering, server
//!   requests, a version refused).
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
#![cfg_attr(docsrs, doc(cfg(feature = "scripted")))]

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use mcp_proto::jsonrpc::{ErrorObject, Frame, Message, RequestId};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::memory::{MemoryTransport, memory_pair};
use crate::transport::{Inbound, Transport};

/// The protocol version the scripted servers' `initialize` answers with.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The `initialize` result of a scripted server (MCP 2025-11-25,
/// "Lifecycle"): [`PROTOCOL_VERSION`], these capabilities, and server
/// info named `scripted`.
///
/// ```
/// let result = mcp_transport::scripted::initialize_result(serde_json::json!({"tools": {}}));
/// assert_eq!(result["serverInfo"]["name"], "scripted");
/// ```
pub fn initialize_result(capabilities: Value) -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": capabilities,
        "serverInfo": {"name": "scripted", "version": "1.0.0"},
    })
}

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
    /// The inner reply, once this long has passed on the tokio clock (a
    /// paused clock included); the server answers other requests meanwhile.
    After(Duration, Box<Reply>),
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

    /// This reply, `delay` later on the tokio clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_transport::scripted::{Reply, ScriptedServer};
    /// use mcp_transport::{Client, ClientOptions};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
    /// let (transport, mut seen) = ScriptedServer::new()
    ///     .tool(json!({"name": "slow", "inputSchema": {"type": "object"}}), |_| {
    ///         Reply::result(json!({"content": []})).after(Duration::from_secs(30))
    ///     })
    ///     .spawn();
    /// let client = Client::connect(transport, ClientOptions::default()).await?;
    /// let started = tokio::time::Instant::now();
    /// let slow = tokio::spawn({
    ///     let client = client.clone();
    ///     async move { client.call_tool("slow", None).await }
    /// });
    /// while seen.recv().await.unwrap().method != "tools/call" {}
    /// client.ping().await?; // not held up by the slow call
    /// assert!(started.elapsed() < Duration::from_secs(30));
    /// slow.await.unwrap()?;
    /// assert!(started.elapsed() >= Duration::from_secs(30));
    /// # Ok::<(), mcp_transport::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub fn after(self, delay: Duration) -> Reply {
        Reply::After(delay, Box::new(self))
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

/// What an asynchronous handler returns.
type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// A handler that answers as the request arrives.
type NowHandler = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

#[derive(Clone)]
enum Handler {
    Now(NowHandler),
    Later(Arc<dyn Fn(Value) -> ReplyFuture + Send + Sync>),
}

/// A scripted MCP server. Build it, then [`spawn`](ScriptedServer::spawn)
/// it inside a tokio runtime.
#[derive(Clone, Default)]
pub struct ScriptedServer {
    capabilities: Option<Value>,
    instructions: Option<String>,
    tools: Vec<(Value, NowHandler)>,
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
    /// given the request's `params`. The handler runs as the request
    /// arrives, so handlers see requests in the order the client sent them.
    pub fn on(
        mut self,
        method: impl Into<String>,
        handler: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.methods
            .insert(method.into(), Handler::Now(Arc::new(handler)));
        self
    }

    /// Scripts a request method with an asynchronous handler, given the
    /// request's `params`: each request runs on a task of its own, so one
    /// that waits (on the tokio clock, on the test) holds up no other.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcp_transport::scripted::{Reply, ScriptedServer};
    /// use mcp_transport::{Client, ClientOptions};
    /// use serde_json::json;
    /// use tokio::sync::Notify;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let go = Arc::new(Notify::new());
    /// let (transport, mut seen) = ScriptedServer::new()
    ///     .on_async("tools/call", {
    ///         let go = Arc::clone(&go);
    ///         move |_params| {
    ///             let go = Arc::clone(&go);
    ///             async move {
    ///                 go.notified().await;
    ///                 Reply::result(json!({"content": []}))
    ///             }
    ///         }
    ///     })
    ///     .spawn();
    /// let client = Client::connect(transport, ClientOptions::default()).await?;
    /// let call = tokio::spawn({
    ///     let client = client.clone();
    ///     async move { client.call_tool("wait", None).await }
    /// });
    /// while seen.recv().await.unwrap().method != "tools/call" {}
    /// client.ping().await?; // answered while the call waits
    /// go.notify_one();
    /// call.await.unwrap()?;
    /// # Ok::<(), mcp_transport::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub fn on_async<F, Fut>(mut self, method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        let handler = move |params: Value| -> ReplyFuture { Box::pin(handler(params)) };
        self.methods
            .insert(method.into(), Handler::Later(Arc::new(handler)));
        self
    }

    /// Starts the server on a task and returns the client's end of the
    /// connection and what the server receives. The server stops when the
    /// client's end is dropped or closed.
    pub fn spawn(self) -> (MemoryTransport, Seen) {
        let (transport, seen, _handle) = self.spawn_with_handle();
        (transport, seen)
    }

    /// [`spawn`](ScriptedServer::spawn), with a [`ServerHandle`] to act on
    /// the live connection.
    pub fn spawn_with_handle(self) -> (MemoryTransport, Seen, ServerHandle) {
        let (client_end, server_end) = memory_pair();
        let (seen, handle) = self.serve(server_end);
        (client_end, seen, handle)
    }

    /// Serves the script over `transport`, the server's end of any
    /// connection (an [`NdjsonTransport`](crate::ndjson::NdjsonTransport)
    /// over a byte stream, a downstream project's own transport under
    /// test), on a task of its own; returns what the server receives and a
    /// [`ServerHandle`]. The server stops when `transport` reports the
    /// connection closed, or when it hangs up. Must be called within a
    /// tokio runtime.
    ///
    /// ```
    /// use mcp_transport::ndjson::{NdjsonOptions, NdjsonTransport};
    /// use mcp_transport::scripted::ScriptedServer;
    /// use mcp_transport::{Client, ClientOptions};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// // Both ends speak newline-delimited JSON over an in-memory pipe.
    /// let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    /// let (read, write) = tokio::io::split(server_io);
    /// let server_end = NdjsonTransport::new(read, write, NdjsonOptions::new("client"))?;
    /// let (_seen, handle) = ScriptedServer::new().serve(server_end);
    /// let (read, write) = tokio::io::split(client_io);
    /// let client_end = NdjsonTransport::new(read, write, NdjsonOptions::new("server"))?;
    /// let client = Client::connect(client_end, ClientOptions::default()).await?;
    /// assert!(client.list_tools(None).await?.tools.is_empty());
    /// client.close().await;
    /// assert!(handle.ended().await, "the client closed the connection");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn serve(self, transport: impl Transport) -> (Seen, ServerHandle) {
        let server_end: Arc<dyn Transport> = Arc::new(transport);
        let (seen_tx, seen_rx) = mpsc::unbounded_channel();
        let (commands_tx, mut commands) = mpsc::unbounded_channel();
        let (ended_tx, ended) = watch::channel(None);
        tokio::spawn(async move {
            let mut commands_open = true;
            let client_closed = loop {
                let inbound = tokio::select! {
                    inbound = server_end.recv() => inbound,
                    command = commands.recv(), if commands_open => {
                        match command {
                            Some(Command::Send(message)) => {
                                let _ = server_end.send(message).await;
                            }
                            Some(Command::HangUp) => {
                                let _ = server_end.close().await;
                                break false;
                            }
                            None => commands_open = false,
                        }
                        continue;
                    }
                };
                let messages = match inbound {
                    Inbound::Frame(Frame::Single(message)) => vec![message],
                    Inbound::Frame(Frame::Batch(messages)) => messages,
                    Inbound::Closed(_) => break true,
                    _ => continue,
                };
                for message in messages {
                    self.answer(&message, &seen_tx, &server_end).await;
                }
            };
            let _ = ended_tx.send(Some(client_closed));
        });
        let handle = ServerHandle {
            commands: commands_tx,
            ended,
        };
        (seen_rx, handle)
    }

    /// Reports one message and answers it if it calls for an answer: at
    /// once, or from a task of its own when the answer waits.
    async fn answer(
        &self,
        message: &Message,
        seen: &mpsc::UnboundedSender<Received>,
        end: &Arc<dyn Transport>,
    ) {
        let (id, method, params) = match message {
            Message::Request(request) => (
                Some(request.id.clone()),
                request.method.as_str(),
                &request.params,
            ),
            Message::Notification(notification) => {
                (None, notification.method.as_str(), &notification.params)
            }
            _ => return,
        };
        let params: Value = params
            .as_ref()
            .and_then(|raw| raw.decode().ok())
            .unwrap_or(Value::Null);
        let _ = seen.send(Received {
            method: method.to_owned(),
            params: params.clone(),
            request: id.is_some(),
        });
        let Some(id) = id else { return };
        let reply = match self.methods.get(method) {
            Some(Handler::Now(handler)) => handler(&params),
            Some(Handler::Later(handler)) => {
                let reply = handler(params);
                let end = Arc::clone(end);
                tokio::spawn(async move { send_reply(end.as_ref(), id, reply.await).await });
                return;
            }
            None => self.built_in(method, &params),
        };
        match reply {
            Reply::After(..) => {
                let end = Arc::clone(end);
                tokio::spawn(async move { send_reply(end.as_ref(), id, reply).await });
            }
            reply => send_reply(end.as_ref(), id, reply).await,
        }
    }

    fn built_in(&self, method: &str, params: &Value) -> Reply {
        match method {
            "initialize" => {
                let mut result = initialize_result(
                    self.capabilities
                        .clone()
                        .unwrap_or_else(|| json!({"tools": {}})),
                );
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

/// Sends the response `reply` stands for, once its delay has passed.
async fn send_reply(end: &dyn Transport, id: RequestId, mut reply: Reply) {
    while let Reply::After(delay, inner) = reply {
        tokio::time::sleep(delay).await;
        reply = *inner;
    }
    let message = match reply {
        Reply::Result(value) => Message::response(id, &value).ok(),
        Reply::Error(error) => Some(Message::error(Some(id), error)),
        Reply::Never | Reply::After(..) => None,
    };
    if let Some(message) = message {
        let _ = end.send(message).await;
    }
}

#[derive(Debug)]
enum Command {
    Send(Message),
    HangUp,
}

/// Acts on a running [`ScriptedServer`]'s connection: pushes messages to
/// the client, hangs up, and learns how the connection ended. Cheap to
/// clone; the server keeps running when every handle is dropped.
///
/// ```
/// use mcp_transport::scripted::ScriptedServer;
/// use mcp_transport::{Client, ClientOptions, ServerNotification};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (transport, _seen, handle) = ScriptedServer::new().spawn_with_handle();
/// let client = Client::connect(transport, ClientOptions::default()).await?;
/// let mut notifications = client.take_notifications().unwrap();
/// handle.notify("notifications/tools/list_changed", None);
/// assert!(matches!(notifications.recv().await, Some(ServerNotification::ToolsListChanged)));
/// client.close().await;
/// assert!(handle.ended().await, "the client closed the connection");
/// # Ok::<(), mcp_transport::ClientError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct ServerHandle {
    commands: mpsc::UnboundedSender<Command>,
    ended: watch::Receiver<Option<bool>>,
}

impl ServerHandle {
    /// Sends any message to the client (a notification, a request, a
    /// response). Answers the client gives to requests sent this way are
    /// not reported; drive such exchanges with a [`Peer`].
    pub fn send(&self, message: Message) {
        let _ = self.commands.send(Command::Send(message));
    }

    /// Sends the notification `method` with these parameters.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        if let Ok(message) = Message::notification(method, params.as_ref()) {
            self.send(message);
        }
    }

    /// Closes the server's end of the connection, as a server that exits
    /// does; the client's next receive reports it closed.
    pub fn hang_up(&self) {
        let _ = self.commands.send(Command::HangUp);
    }

    /// Waits until the connection has ended: `true` when the client closed
    /// (or dropped) its end, `false` when the server hung up.
    pub async fn ended(&self) -> bool {
        let mut ended = self.ended.clone();
        match ended.wait_for(Option::is_some).await {
            Ok(value) => value.unwrap_or(false),
            // The server's task is gone without saying: it was dropped
            // with its runtime.
            Err(_) => false,
        }
    }
}

/// The server's end of an in-memory connection, driven one message at a
/// time by the test (step mode), in JSON values.
///
/// Each method waits for what it expects and panics with what came
/// instead: a test helper's way to fail the test that uses it.
///
/// ```
/// use mcp_transport::scripted::Peer;
/// use mcp_transport::{Client, ClientOptions};
/// use serde_json::json;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (transport, peer) = Peer::pair();
/// let (client, driver) = Client::new(transport, ClientOptions::default());
/// tokio::spawn(driver.run());
/// let connecting = tokio::spawn({
///     let client = client.clone();
///     async move { client.initialize().await }
/// });
/// peer.handshake(json!({"tools": {}})).await;
/// connecting.await.unwrap()?;
///
/// let list = tokio::spawn({
///     let client = client.clone();
///     async move { client.list_tools(None).await }
/// });
/// let request = peer.expect("tools/list").await;
/// peer.respond(&request, json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})).await;
/// assert_eq!(list.await.unwrap()?.tools[0].name, "echo");
///
/// client.close().await;
/// assert!(peer.closed().await);
/// # Ok::<(), mcp_transport::ClientError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Peer {
    end: MemoryTransport,
}

impl Peer {
    /// A connected pair: the client's end and the peer on the other.
    pub fn pair() -> (MemoryTransport, Peer) {
        let (client_end, end) = memory_pair();
        (client_end, Peer { end })
    }

    /// The next message the client sent, as JSON.
    ///
    /// # Panics
    ///
    /// When the client closed the connection or sent something other than
    /// one message.
    pub async fn next(&self) -> Value {
        match self.end.recv().await {
            Inbound::Frame(Frame::Single(message)) => serde_json::from_slice(&message.to_bytes())
                .unwrap_or_else(|error| panic!("the client's message is not JSON: {error}")),
            other => panic!("expected a message from the client, got {other:?}"),
        }
    }

    /// The next message, which must be a request or notification of
    /// `method`.
    ///
    /// # Panics
    ///
    /// When it is anything else.
    pub async fn expect(&self, method: &str) -> Value {
        let message = self.next().await;
        assert_eq!(
            message["method"], method,
            "expected `{method}` from the client, got {message}"
        );
        message
    }

    /// Whether the next thing the client does is close the connection
    /// (`false`: it sent a message, which is dropped).
    pub async fn closed(&self) -> bool {
        matches!(self.end.recv().await, Inbound::Closed(_))
    }

    /// Sends any message, written as JSON, to the client.
    ///
    /// # Panics
    ///
    /// When `message` is not a JSON-RPC message, or the client's end is
    /// gone.
    pub async fn send(&self, message: Value) {
        let message: Message = serde_json::from_value(message)
            .unwrap_or_else(|error| panic!("not a JSON-RPC message: {error}"));
        self.end
            .send(message)
            .await
            .unwrap_or_else(|error| panic!("the client's end is closed: {error}"));
    }

    /// Answers `request` (as returned by [`next`](Peer::next)) with this
    /// result.
    pub async fn respond(&self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
    }

    /// Answers `request` with a JSON-RPC error.
    pub async fn respond_error(&self, request: &Value, code: i64, message: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"],
            "error": {"code": code, "message": message}}))
            .await;
    }

    /// Answers the 2026-07-28 era probe (`server/discover`) as a
    /// handshake-era server does: "method not found" (`-32601`).
    pub async fn refuse_probe(&self) {
        let probe = self.expect("server/discover").await;
        self.respond_error(&probe, -32601, "Method not found").await;
    }

    /// The whole handshake-era opening (MCP 2025-11-25, "Lifecycle"): the
    /// probe refused, `initialize` answered with [`initialize_result`] of
    /// these capabilities, and `notifications/initialized` received.
    pub async fn handshake(&self, capabilities: Value) {
        self.refuse_probe().await;
        let init = self.expect("initialize").await;
        self.respond(&init, initialize_result(capabilities)).await;
        let initialized = self.expect("notifications/initialized").await;
        assert_eq!(
            initialized,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
    }
}

//! The gateway: a manager's tools served as one MCP server, so that other processes (a host, a subagent) share its connections, catalogs and approvals.
//!
//! A [`Gateway`] answers MCP requests over a byte stream of
//! newline-delimited JSON (MCP "Transports" §stdio) with the tools of a
//! [`McpSession`] of its own: each tool under its model name
//! (`mcp_<server>_<tool>`, see [`crate::names`]; or `<server>__<tool>`
//! with [`ToolNaming::Plain`]; each server's own name, with its whole
//! declaration, with [`ToolNaming::Keep`]), its description and input
//! schema as the bridge declares them, and every call dispatched through
//! the session, so argument validation, the permission preset and
//! approvals, deadlines and result handling are the bridge's. A server
//! that is still connecting, stopped until its next use, or reconnecting is
//! the bridge's business too: the client sees one steady server.
//!
//! What a client gets, in both eras: a handshake-era client (every version
//! up to 2025-11-25) starts with `initialize`; a 2026-07-28 client asks
//! `server/discover` (or nothing) and sends each request with its version in
//! `_meta`, which the gateway checks (-32022 with the versions it speaks
//! for any other).
//!
//! - `initialize`: the version negotiated as "Lifecycle" §Version
//!   Negotiation says (a requested version this build supports is echoed,
//!   else the newest), `tools` with `listChanged`, the gateway's
//!   [`GatewayOptions::server_info`] and, as instructions, the session's
//!   prompt section (which servers are there and what they are for).
//!   Requests before it are refused, as are repeated ones.
//! - `ping`; `tools/list` (one page); `tools/call`, answered when the call
//!   ends. Calls run concurrently; `notifications/cancelled` cancels one
//!   (the upstream server gets its own cancellation); a request's
//!   `_meta.progressToken` gets the upstream server's progress reports as
//!   `notifications/progress`.
//! - `resources/list`, `resources/templates/list`, `resources/read`,
//!   `prompts/list`, `prompts/get` and `completion/complete`: every
//!   usable server's, named as tools are (`mcp_<server>_<name>`, with a
//!   hash where two would share a name; `<server>__<name>` with
//!   [`ToolNaming::Plain`]; their own names with
//!   [`ToolNaming::Keep`]), each read or got from the server it came from
//!   (see `forward`).
//! - In 2026-07-28, results say `resultType: "complete"` and lists (and
//!   `server/discover`) `ttlMs: 0` with `cacheScope: "private"` (they follow the servers'
//!   catalogs and the session's rules); there is no `ping`, and a request
//!   whose `_meta` lacks the client's capabilities is invalid (-32602).
//! - `notifications/tools/list_changed` (and the prompts' and resources'
//!   lists' once listed), for a handshake-era client,
//!   whenever the tools a fresh binding offers differ from those it last
//!   listed (a server became ready, changed its catalog, failed or was
//!   removed). A 2026-07-28 client gets the same on a
//!   `subscriptions/listen` request it keeps open: acknowledged first
//!   (tools, prompts and resources lists; not single resources' updates),
//!   every message carrying the request's id as its subscription id, until
//!   it cancels the request or closes its HTTP stream.
//! - `logging/setLevel` and `resources/subscribe`/`unsubscribe`, declared
//!   (`logging`, `resources.subscribe`) when a usable server declares
//!   them, each client's own: its level filters the `notifications/message`
//!   it gets, and it gets `notifications/resources/updated` for the URIs it
//!   subscribed to (see `relay`). A 2026-07-28 server, whose era has
//!   neither method, gets the level as each request's `logLevel` `_meta`
//!   and the subscriptions as its `subscriptions/listen` filter; a
//!   2026-07-28 client's request that sets no `logLevel` gets no log
//!   messages.
//!   subscribed to (see `relay`). What a server says during a call reaches
//!   the client ahead of the answer it came before, and waits for a slow
//!   client rather than being dropped (see `deliver`).
//! - A server's `elicitation/create`, `sampling/createMessage` and
//!   `roots/list` reach the handshake-era client whose call, prompt or read
//!   is waiting on it, when the host gave the manager the gateway's
//!   [`GatewayAsks`] (see [`GatewayOptions::asks`]); otherwise, or with no
//!   such client, the server gets -32601.
//! - With [`ToolNaming::Keep`], a call's result or JSON-RPC error is the
//!   server's as it came, `_meta` and error `data` included, and the
//!   client's own request `_meta` keys (not the protocol's) are forwarded.
//! - An unknown tool is a JSON-RPC error (-32602, "Server/Tools" §Error
//!   Handling); a tool that fails, is refused by the permission rules or
//!   gets invalid arguments is a result with `isError: true` and the
//!   bridge's text, which says what happened.
//!
//! A client that disconnects (its input ends) cancels every call it still
//! has in flight; the manager and its connections stay, for the next
//! client.
//!
//! A client on the host's side (`mcpctl` through its daemon) learns more
//! in namespaced `_meta` keys (see [`report`]): which upstream server and
//! tool each served tool is, each server's status, and why a call failed.
//!
//! [`Gateway::serve`] speaks newline-delimited JSON over one byte stream
//! (stdio, a Unix socket) on `mcp_transport`'s stream server
//! ([`StreamServer`]): the protocol's lifecycle (`initialize`,
//! `server/discover`, `ping`, batches, ids, `-32601`, `-32022`) is its
//! `ServerSession`'s, as are the bounds on what a client feeds it (lines,
//! requests in flight, and at most
//! [`REPLY_BUDGET`](mcp_transport::server::REPLY_BUDGET) bytes of replies
//! it has not read: past it the client is not read until they drain). The
//! gateway answers only the requests of the features above, through
//! [`ServerHandler`]. With feature `http`, a [`Gateway`] is also an
//! [`HttpApp`](mcp_transport::server::HttpApp) for `mcp_transport`'s
//! Streamable HTTP server: each handshake-era session, and each 2026-07-28
//! request, is a connection of its own on the same handler, and a
//! connection that ends (a DELETE, a closed stream) drops its requests,
//! which cancels their calls upstream.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_manager::{ManagerEvent, McpManager};
use mcp_proto::codec::ndjson;
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::server::{ClientRequest, ServerOptions};
use mcp_proto::types::{
    self, CallToolRequestParams, CallToolResult, Implementation, JsonText, ListChangedCapability,
    ListToolsResult, ServerCapabilities, Tool,
};
use mcp_proto::{Era, ErrorObject, Message, RawJson, RequestId, methods};
use mcp_transport::server::{Peer, RequestContext, ServerHandler, StreamOptions, StreamServer};
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

use crate::cancel::CancelToken;
use crate::result::{ContentMode, ToolOutcome};
use crate::session::{McpSession, SessionOptions, ToolSet};
use crate::tool::{ModelTool, ToolCall};

mod asks;
mod deliver;
mod forward;
mod keep;
mod members;
mod relay;
pub mod report;
mod rounds;
mod skills;

pub use asks::GatewayAsks;
pub use keep::NameCollision;

/// How the gateway presents itself.
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// The `serverInfo` of `initialize`. Default `mcp-gateway` with this
    /// crate's version.
    pub server_info: Implementation,
    /// What the tools are called. Default [`ToolNaming::Model`].
    pub naming: ToolNaming,
    /// The manager's handler of the servers' requests (elicitation,
    /// sampling, roots), through which the gateway passes each one to the
    /// client whose call caused it ([`GatewayAsks`]). Default none: the
    /// manager's own handler, if any, answers them.
    #[setters(strip_option)]
    pub asks: Option<Arc<GatewayAsks>>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            server_info: Implementation::new("mcp-gateway", env!("CARGO_PKG_VERSION")),
            naming: ToolNaming::Model,
            asks: None,
        }
    }
}

/// What the gateway calls the tools it serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolNaming {
    /// The bridge's model names (`mcp_<server>_<tool>`, made to fit every
    /// model provider's limits; see [`crate::names`]).
    #[default]
    Model,
    /// `<server>__<tool>`, the server's id and its own tool name as they
    /// are, for a client that is not a model's (a person's tool, a test
    /// harness) and wants the names it knows; prompts, resources and
    /// resource templates are named the same way (`<server>__<name>`).
    Plain,
    /// Every server's own names, unchanged: tools, prompts, resources and
    /// resource templates as the servers list them, and each tool's call
    /// answered with the server's result or JSON-RPC error as it came
    /// (`_meta` and error `data` included): a transparent gateway, for a
    /// host that puts it between itself and one server (or several whose
    /// names do not meet). A name two servers share is refused: the
    /// listing of its kind, and a request naming it, are an error naming
    /// both servers and the name (see [`NameCollision`]).
    Keep,
}

impl ToolNaming {
    /// The name `tool` (a model name in `tools`) is served under.
    fn served(self, tools: &ToolSet, model_name: &str) -> String {
        match (self, tools.resolve(model_name)) {
            (ToolNaming::Plain, Some((server, tool))) => format!("{server}__{tool}"),
            (ToolNaming::Keep, Some((_, tool))) => tool.to_owned(),
            _ => model_name.to_owned(),
        }
    }

    /// The tool served under `name`: `Ok(None)` when there is none, an
    /// error when, with kept names, two servers offer it.
    fn find(
        self,
        tools: &ToolSet,
        name: &str,
    ) -> Result<Option<Arc<dyn crate::tool::ModelTool>>, NameCollision> {
        Ok(match self {
            ToolNaming::Model => tools.get(name).cloned(),
            ToolNaming::Plain => tools
                .tools()
                .iter()
                .find(|tool| match tools.resolve(tool.name()) {
                    Some((server, raw)) => name
                        .strip_prefix(server)
                        .and_then(|rest| rest.strip_prefix("__"))
                        .is_some_and(|rest| rest == raw),
                    None => tool.name() == name,
                })
                .cloned(),
            ToolNaming::Keep => {
                let Some(server) = keep::owner("tool", raw_names(tools), name)? else {
                    return Ok(None);
                };
                tools
                    .tools()
                    .iter()
                    .find(|tool| tools.resolve(tool.name()) == Some((server, name)))
                    .cloned()
            }
        })
    }
}

/// Every bound tool's `(server, raw name)`.
fn raw_names(tools: &ToolSet) -> impl Iterator<Item = (&str, &str)> {
    tools
        .tools()
        .iter()
        .filter_map(|tool| tools.resolve(tool.name()))
}

/// A manager's tools served as one MCP server (see the module docs).
/// Cheap to clone; clones serve with the same session.
#[derive(Clone, Debug)]
pub struct Gateway {
    manager: McpManager,
    session: McpSession,
    options: Arc<GatewayOptions>,
    /// What the clients asked of the servers together (log levels,
    /// resource subscriptions).
    relays: Arc<relay::Relays>,
    /// The 2026-07-28 clients' requests waiting for their input rounds'
    /// retries.
    rounds: Arc<rounds::Rounds>,
}

impl Gateway {
    /// A gateway over `manager`, calling through a session with `session`'s
    /// options, except that content blocks pass through as the servers sent
    /// them ([`ContentMode::Raw`]) and results are not cut to a model's
    /// budget: the client is a host with rules of its own.
    pub fn new(manager: &McpManager, session: SessionOptions, options: GatewayOptions) -> Self {
        let session = SessionOptions {
            content: ContentMode::Raw,
            budget: None,
            ..session
        };
        Gateway {
            manager: manager.clone(),
            session: McpSession::new(manager, session),
            options: Arc::new(options),
            relays: Arc::default(),
            rounds: Arc::default(),
        }
    }

    /// The session calls go through (its preset, approval handler, grants).
    pub fn session(&self) -> &McpSession {
        &self.session
    }

    /// With kept names ([`ToolNaming::Keep`]): the first name two usable
    /// servers share (a tool, a prompt, a resource URI or a resource
    /// template), which the gateway would refuse to list; `Ok` when there
    /// is none or names are not kept. A host checks it before serving, to
    /// refuse a configuration it cannot serve whole.
    pub async fn check_names(&self) -> Result<(), NameCollision> {
        if self.options.naming != ToolNaming::Keep {
            return Ok(());
        }
        let tools = self.session.bind();
        match forward::kept_name_collision(self, raw_names(&tools)).await {
            Some(collision) => Err(collision),
            None => Ok(()),
        }
    }

    /// Serves one client on `reader`/`writer` in newline-delimited JSON
    /// until its input ends or the output can no longer be written, then
    /// cancels the calls it left in flight. Fails only when reading the
    /// input fails.
    ///
    /// The protocol's lifecycle is `mcp_transport`'s
    /// [`StreamServer`]'s (the session of both eras, its bounds, and at
    /// most [`REPLY_BUDGET`](mcp_transport::server::REPLY_BUDGET) bytes of
    /// replies the client has not read); the gateway answers the requests
    /// it lets through.
    pub async fn serve<R, W>(&self, reader: R, writer: W) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let server = StreamServer::new(StreamOptions::new(self.server_options()));
        let connection = Arc::new(self.connect_reply(Reply::Peer(server.peer())));
        server
            .serve(Arc::new(Served { connection }), reader, writer)
            .await
    }

    /// What the stream's session answers `initialize` and
    /// `server/discover` with: the gateway's `serverInfo` and capabilities,
    /// every version of both eras, and as instructions the session's prompt
    /// section (which servers are there and what they are for) as it is
    /// when the client connects.
    /// What the gateway declares: what it serves itself, and logging and
    /// resource subscriptions when a usable server offers them.
    fn capabilities(&self) -> ServerCapabilities {
        let mut declared = capabilities();
        relay::add_capabilities(self, &mut declared);
        skills::add_capability(self, &mut declared);
        declared
    }

    fn server_options(&self) -> ServerOptions {
        let section = self.session.bind().prompt_section().to_owned();
        ServerOptions::default()
            .server_info(self.options.server_info.clone())
            .capabilities(self.capabilities())
            .instructions((!section.is_empty()).then_some(section))
            // A line as long as the codec's own limit, as before the
            // session served the stream: `tools/call` arguments may be
            // large (an image, a document).
            .max_message_size(ndjson::DEFAULT_MAX_MESSAGE_SIZE)
            // As the lists': what the gateway offers follows its servers
            // and its session's rules, for this client.
            .discover_ttl_ms(0)
            .discover_cache_scope(types::CacheScope::Private)
    }

    fn connect_reply(&self, notifications: Reply) -> GatewayConnection {
        let (settle, settles) = deliver::settle_channel();
        let inner = Arc::new(Connection {
            number: self.relays.connection(),
            gateway: self.clone(),
            notify: notifications,
            state: Mutex::new(ConnState::default()),
            settle,
        });
        let watcher = tokio::spawn(watch_catalogs(
            Arc::downgrade(&inner),
            self.manager.events(),
            settles,
        ));
        GatewayConnection { inner, watcher }
    }
}

/// The gateway as a Streamable HTTP application
/// ([`mcp_transport::server::http`]): each handshake-era session, and each
/// stateless-era request, is a connection of its own, with the session
/// options and handler [`Gateway::serve`] gives a byte stream's client.
/// Ending the connection (a DELETE, a stateless client closing its stream)
/// drops its requests' futures, which cancels their calls upstream.
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
impl mcp_transport::server::HttpApp for Gateway {
    fn options(&self) -> ServerOptions {
        self.server_options()
    }

    fn connect(&self, peer: Peer) -> Arc<dyn ServerHandler> {
        Arc::new(Served {
            connection: Arc::new(self.connect_reply(Reply::Peer(peer))),
        })
    }

    /// The annotations of the input schema the gateway lists for `tool`
    /// (the server's own with kept names): what a 2026-07-28 call's
    /// `Mcp-Param-*` headers must mirror. A tool whose annotations are
    /// invalid has none checked here: the client leaves it out.
    fn tool_param_headers(&self, tool: &str) -> Option<mcp_proto::headers::ToolParamHeaders> {
        let tools = self.session.tools();
        let found = self.options.naming.find(&tools, tool).ok()??;
        let schema = match self.options.naming {
            ToolNaming::Keep => tools
                .declaration(found.name())
                .map(|declared| declared.input_schema.to_value()),
            _ => Some(found.input_schema().to_value()),
        }?;
        let headers = mcp_proto::headers::tool_param_headers(schema.as_object()?).ok()?;
        (!headers.is_empty()).then_some(headers)
    }
}

/// One client's connection to a [`Gateway`]: what the client's era makes
/// per-connection state (the calls in flight, by request id, which the
/// client keeps unique on its connection; the tools it last listed) and
/// the task that follows the catalogs for it. Dropping it cancels every
/// call still in flight.
#[derive(Debug)]
struct GatewayConnection {
    inner: Arc<Connection>,
    watcher: JoinHandle<()>,
}

impl Drop for GatewayConnection {
    fn drop(&mut self) {
        self.watcher.abort();
        self.inner.cancel_all();
    }
}

/// One client's connection.
struct Connection {
    /// This connection's number among the gateway's.
    number: u64,
    gateway: Gateway,
    /// Where connection-wide notifications go.
    notify: Reply,
    state: Mutex<ConnState>,
    /// Asks the connection's watcher to catch up ([`deliver::Marks::settle`]).
    settle: mpsc::Sender<deliver::Settle>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct ConnState {
    /// The calls in flight, by request id.
    calls: HashMap<RequestId, CancelToken>,
    /// The tools (name and schema) the client last listed.
    listed: Option<Vec<(String, JsonText)>>,
    /// The client's `logging/setLevel`, if it sent one; for a 2026-07-28
    /// client, its last request's `io.modelcontextprotocol/logLevel`.
    log_level: Option<types::LoggingLevel>,
    /// The client speaks 2026-07-28: its level is each request's own, and
    /// a request that asks for none gets no log messages (2026-07-28
    /// "Utilities/Logging" §Per-request log level).
    levels_per_request: bool,
    /// The resources the client subscribed to (`resources/subscribe`).
    resource_subscriptions: std::collections::HashSet<String>,
    /// The prompts (names) the client last listed.
    listed_prompts: Option<Vec<String>>,
    /// The resources (URIs) the client last listed.
    listed_resources: Option<Vec<String>>,
    /// The open 2026-07-28 `subscriptions/listen` requests, by id.
    subscriptions: HashMap<RequestId, Subscription>,
    /// The calls, prompts and reads in flight that a server's log
    /// messages may be about, by id.
    streamable: HashMap<RequestId, Streamable>,
    /// The binding requests use, made again after each catalog event
    /// (binding per request would cost more than the call it serves).
    tools: Option<ToolSet>,
    /// What the watcher sends the client next, waiting for room
    /// ([`deliver::send_queued`]).
    outgoing: Vec<deliver::Outgoing>,
    /// The servers' events dropped for this client because it fell behind
    /// ([`deliver::lagged`]).
    dropped: u64,
}

/// A call, prompt or read in flight: over Streamable HTTP its answer can
/// become a stream that carries what its server says meanwhile.
struct Streamable {
    /// The server it went to, when known before it is sent.
    server: Option<String>,
    context: RequestContext,
}

/// One open `subscriptions/listen` request: where its notifications go,
/// and, for each list it asked about, the list as it last heard of it.
struct Subscription {
    reply: Reply,
    tools: Option<Vec<(String, JsonText)>>,
    prompts: Option<Vec<String>>,
    resources: Option<Vec<String>>,
}

impl Connection {
    fn lock(&self) -> std::sync::MutexGuard<'_, ConnState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current binding.
    fn tools(&self) -> ToolSet {
        if let Some(tools) = &self.lock().tools {
            return tools.clone();
        }
        self.keep(self.gateway.session.bind())
    }

    /// Keeps `tools` as the binding requests use, unless one of a newer
    /// generation is kept already (binding happens outside the lock, so a
    /// request's binding and the catalog watcher's may finish in either
    /// order); returns the binding kept.
    fn keep(&self, tools: ToolSet) -> ToolSet {
        let mut state = self.lock();
        match &state.tools {
            Some(kept) if kept.generation() >= tools.generation() => kept.clone(),
            _ => {
                state.tools = Some(tools.clone());
                tools
            }
        }
    }

    /// Answers a request of the server's features (tools, prompts,
    /// resources, completions, subscriptions) now, or starts the work that
    /// answers it later; everything about it goes to `reply`. `modern`:
    /// the request speaks 2026-07-28. `rounds`: a 2026-07-28 server's
    /// input round of a `prompts/get` or `resources/read` is the answer
    /// (see [`answer`]).
    #[allow(clippy::too_many_arguments)]
    fn answer(
        self: &Arc<Self>,
        id: RequestId,
        method: &str,
        params: &str,
        modern: bool,
        rounds: bool,
        reply: &Reply,
    ) -> Result<(), ErrorObject> {
        match method {
            methods::PROMPTS_LIST => {
                first_page(params, method)?;
                let servers = forward::usable(&self.gateway);
                let mut result = forward::list_prompts(&servers, forward::naming(&self.gateway))
                    .map_err(|collision| collision.to_error())?;
                if modern {
                    uncacheable!(result);
                } else {
                    self.lock().listed_prompts = Some(prompt_names(&self.gateway, &servers));
                }
                respond(reply, id, &result)
            }
            methods::RESOURCES_LIST => {
                first_page(params, method)?;
                let servers = forward::usable(&self.gateway);
                let mut result = forward::list_resources(&servers, forward::naming(&self.gateway))
                    .map_err(|collision| collision.to_error())?;
                if modern {
                    uncacheable!(result);
                } else {
                    self.lock().listed_resources = Some(resource_uris(&servers));
                }
                respond(reply, id, &result)
            }
            methods::RESOURCES_TEMPLATES_LIST => {
                first_page(params, method)?;
                let gateway = self.gateway.clone();
                self.spawn_answer(id, reply, modern, true, async move {
                    let servers = forward::usable(&gateway);
                    let templates = forward::templates(&gateway, &servers).await;
                    let listed = forward::list_templates(templates, forward::naming(&gateway))
                        .map_err(|collision| collision.to_error())?;
                    serde_json::to_value(listed)
                        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
                });
                Ok(())
            }
            methods::PROMPTS_GET => {
                let params: types::GetPromptRequestParams = decode(params, methods::PROMPTS_GET)?;
                let servers = forward::usable(&self.gateway);
                let Some((server, name)) =
                    forward::prompt_target(&servers, forward::naming(&self.gateway), &params.name)
                        .map_err(|collision| collision.to_error())?
                else {
                    return Err(ErrorObject::invalid_params(format!(
                        "unknown prompt: {}",
                        mcp_proto::text::bound(&params.name, 128)
                    )));
                };
                let level = self.log_level_for(params.meta.as_ref(), modern);
                let upstream = forward::Upstream::of(&self.gateway, &server)?
                    .rounds(rounds)
                    .log_level(level);
                self.spawn_answer(
                    id,
                    reply,
                    modern,
                    false,
                    forward::get_prompt(upstream, params, name),
                );
                Ok(())
            }
            methods::RESOURCES_READ => {
                let params: types::ReadResourceRequestParams =
                    decode(params, methods::RESOURCES_READ)?;
                let gateway = self.gateway.clone();
                let level = self.log_level_for(params.meta.as_ref(), modern);
                // A read is cacheable in 2026-07-28 ("Caching"): not here,
                // where it follows the server's current content.
                self.spawn_answer(id, reply, modern, true, async move {
                    let server =
                        forward::resource_server(&gateway, &params.uri, modern, false).await?;
                    let upstream = forward::Upstream::of(&gateway, &server)?
                        .rounds(rounds)
                        .log_level(level);
                    forward::read_resource(upstream, params).await
                });
                Ok(())
            }
            methods::LOGGING_SET_LEVEL => {
                let params: types::SetLevelRequestParams =
                    decode(params, methods::LOGGING_SET_LEVEL)?;
                let connection = Arc::clone(self);
                self.spawn_answer(id, reply, modern, false, async move {
                    relay::set_level(&connection.gateway, connection.number, params.level).await?;
                    connection.lock().log_level = Some(params.level);
                    Ok(Value::Object(Default::default()))
                });
                Ok(())
            }
            methods::RESOURCES_SUBSCRIBE => {
                let params: types::SubscribeRequestParams =
                    decode(params, methods::RESOURCES_SUBSCRIBE)?;
                let connection = Arc::clone(self);
                self.spawn_answer(id, reply, modern, false, async move {
                    if !connection
                        .lock()
                        .resource_subscriptions
                        .contains(&params.uri)
                    {
                        relay::subscribe(&connection.gateway, &params.uri, modern).await?;
                        let fresh = connection
                            .lock()
                            .resource_subscriptions
                            .insert(params.uri.clone());
                        if !fresh {
                            // Subscribed twice at once: one hold is enough.
                            relay::unsubscribe(&connection.gateway, &params.uri).await?;
                        }
                    }
                    Ok(Value::Object(Default::default()))
                });
                Ok(())
            }
            methods::RESOURCES_UNSUBSCRIBE => {
                let params: types::UnsubscribeRequestParams =
                    decode(params, methods::RESOURCES_UNSUBSCRIBE)?;
                let connection = Arc::clone(self);
                self.spawn_answer(id, reply, modern, false, async move {
                    let held = connection.lock().resource_subscriptions.remove(&params.uri);
                    if held {
                        relay::unsubscribe(&connection.gateway, &params.uri).await?;
                    }
                    Ok(Value::Object(Default::default()))
                });
                Ok(())
            }
            methods::SUBSCRIPTIONS_LISTEN if modern => {
                let params: types::SubscriptionsListenRequestParams =
                    decode(params, methods::SUBSCRIPTIONS_LISTEN)?;
                self.listen(id, params.notifications, reply);
                Ok(())
            }
            methods::SKILLS_LIST => {
                first_page(params, method)?;
                let servers = forward::usable(&self.gateway);
                let mut result = skills::list(&servers, forward::naming(&self.gateway))
                    .map_err(|collision| collision.to_error())?;
                if modern {
                    uncacheable!(result);
                }
                respond(reply, id, &result)
            }
            methods::SKILLS_GET => {
                let params: types::GetSkillRequestParams = decode(params, methods::SKILLS_GET)?;
                let gateway = self.gateway.clone();
                self.spawn_answer(id, reply, modern, false, skills::get(gateway, params));
                Ok(())
            }
            methods::COMPLETION_COMPLETE => {
                let params: types::CompleteRequestParams =
                    decode(params, methods::COMPLETION_COMPLETE)?;
                let gateway = self.gateway.clone();
                self.spawn_answer(id, reply, modern, false, async move {
                    forward::complete(&gateway, params).await
                });
                Ok(())
            }
            methods::TOOLS_LIST => {
                first_page(params, method)?;
                let tools = self.tools();
                let naming = self.gateway.options.naming;
                if naming == ToolNaming::Keep
                    && let Some(collision) = keep::collision("tool", raw_names(&tools))
                {
                    return Err(collision.to_error());
                }
                let listed = listing(&tools, naming);
                let mut result = ListToolsResult {
                    tools: declared(&tools, naming),
                    ..ListToolsResult::default()
                };
                if report::asked(params) {
                    let servers = report::GatewayReport::of(&self.gateway.manager, &tools, naming);
                    if let Ok(value) = serde_json::to_value(servers) {
                        result
                            .meta
                            .get_or_insert_with(Default::default)
                            .insert(report::SERVERS.to_owned(), value);
                    }
                }
                if modern {
                    uncacheable!(result);
                }
                if !modern {
                    // `list_changed` goes to handshake-era clients, which
                    // listen on the connection itself.
                    self.lock().listed = Some(listed);
                }
                respond(reply, id, &result)
            }
            _ => Err(ErrorObject::method_not_found(method)),
        }
    }

    /// Request `id` (a call, prompt or read, to `server` when known) is in
    /// flight until it ends: a server's log messages meanwhile may go on
    /// its stream ([`Connection::on_log`]).
    fn streaming(&self, id: &RequestId, server: Option<String>, context: &RequestContext) {
        self.lock().streamable.insert(
            id.clone(),
            Streamable {
                server,
                context: context.clone(),
            },
        );
    }

    /// The log level a request of this client is made for, which a
    /// 2026-07-28 server gets in the request's `_meta`: the level the
    /// client set (`logging/setLevel`), or for a 2026-07-28 client
    /// (`modern`) the one the request's `_meta` asks for, kept as the
    /// connection's to filter the log messages relayed meanwhile.
    fn log_level_for(
        &self,
        meta: Option<&types::Meta>,
        modern: bool,
    ) -> Option<types::LoggingLevel> {
        self.log_level_asked(|| forward::requested_log_level(meta), modern)
    }

    /// [`Connection::log_level_for`], the level a 2026-07-28 request's
    /// `_meta` asks for being `requested()`.
    fn log_level_asked(
        &self,
        requested: impl FnOnce() -> Option<types::LoggingLevel>,
        modern: bool,
    ) -> Option<types::LoggingLevel> {
        let requested = modern.then(requested);
        let mut state = self.lock();
        if let Some(requested) = requested {
            state.levels_per_request = true;
            state.log_level = requested;
        }
        state.log_level
    }

    /// The tool a `tools/call` names and the call to make, cancelled by
    /// cancelling request `id`. `modern`: the client speaks 2026-07-28.
    fn prepare_call(
        &self,
        id: &RequestId,
        params: &str,
        rounds: bool,
        modern: bool,
    ) -> Result<Prepared, ErrorObject> {
        let call: CallToolRequestParams = decode(params, methods::TOOLS_CALL)?;
        let tools = self.tools();
        let found = self
            .gateway
            .options
            .naming
            .find(&tools, &call.name)
            .map_err(|collision| collision.to_error())?;
        let Some(tool) = found else {
            return Err(ErrorObject::invalid_params(format!(
                "unknown tool: {}",
                mcp_proto::text::bound(&call.name, 128)
            )));
        };
        let server = tools
            .resolve(tool.name())
            .map(|(server, _)| server.to_owned());
        let cancel = CancelToken::new();
        self.lock().calls.insert(id.clone(), cancel.clone());
        let arguments = call
            .arguments
            .map_or(Value::Object(Default::default()), Value::Object);
        let mut tool_call = ToolCall::new(id.to_string(), arguments).with_cancel(cancel);
        // Under every naming the server's JSON-RPC error reaches the client
        // as one (not as a failed result), and the client's own `_meta`
        // reaches the server; with kept names the result passes whole too.
        // A client's input rounds are with the gateway: only a 2026-07-28
        // server whose rounds are relayed has answers and state sent to it.
        let relays = rounds
            && server
                .as_deref()
                .is_some_and(|server| forward::speaks_modern(&self.gateway, server));
        let (input_responses, request_state) = if relays {
            (call.input_responses, call.request_state)
        } else {
            (None, None)
        };
        // The client's `_meta`, read once for all the gateway takes of it.
        let meta = forward::RequestMeta::read(call.meta.as_ref());
        let reported = meta.failures();
        // A 2026-07-28 server logs only at a level the request asks for.
        let level = self
            .log_level_asked(|| meta.log_level(), modern)
            .filter(|_| {
                // A server whose rounds are relayed speaks 2026-07-28.
                relays
                    || server
                        .as_deref()
                        .is_some_and(|server| forward::speaks_modern(&self.gateway, server))
            });
        let passthrough = Some(Arc::new(crate::tool::Passthrough {
            meta: meta.relayed(relays, level),
            server_names: self.gateway.options.naming == ToolNaming::Keep,
            rounds: relays,
            input_responses,
            request_state,
            ..Default::default()
        }));
        tool_call.passthrough.clone_from(&passthrough);
        Ok(Prepared {
            tool,
            call: tool_call,
            passthrough,
            reported,
            server,
        })
    }

    /// After a catalog event: tells the client when the tools it listed
    /// are no longer those a fresh binding offers.
    fn check_tools(&self) {
        let tools = self.keep(self.gateway.session.bind());
        let now = listing(&tools, self.gateway.options.naming);
        let changed = announce_once(&mut self.lock().listed, &now);
        if changed {
            self.notify_changed(methods::NOTIFICATION_TOOLS_LIST_CHANGED);
        }
        self.check_subscriptions(&tools);
        let (listed_prompts, listed_resources) = {
            let state = self.lock();
            (
                state.listed_prompts.is_some(),
                state.listed_resources.is_some(),
            )
        };
        if !listed_prompts && !listed_resources {
            return;
        }
        let servers = forward::usable(&self.gateway);
        if listed_prompts {
            let now = prompt_names(&self.gateway, &servers);
            if announce_once(&mut self.lock().listed_prompts, &now) {
                self.notify_changed(methods::NOTIFICATION_PROMPTS_LIST_CHANGED);
            }
        }
        if listed_resources {
            let now = resource_uris(&servers);
            if announce_once(&mut self.lock().listed_resources, &now) {
                self.notify_changed(methods::NOTIFICATION_RESOURCES_LIST_CHANGED);
            }
        }
    }

    /// `subscriptions/listen` (2026-07-28 "Subscriptions"): acknowledges
    /// the list changes the gateway sends (tools, prompts, resources; not
    /// single resources' updates), each message carrying the request's id
    /// as its subscription id, then sends each change as it happens. The
    /// request stays open until cancelled.
    fn listen(&self, id: RequestId, asked: types::SubscriptionFilter, reply: &Reply) {
        let tools = asked.tools_list_changed == Some(true);
        let prompts = asked.prompts_list_changed == Some(true);
        let resources = asked.resources_list_changed == Some(true);
        let servers = forward::usable(&self.gateway);
        let subscription = Subscription {
            reply: reply.clone(),
            tools: tools.then(|| listing(&self.tools(), self.gateway.options.naming)),
            prompts: prompts.then(|| prompt_names(&self.gateway, &servers)),
            resources: resources.then(|| resource_uris(&servers)),
        };
        let mut accepted = serde_json::Map::new();
        for (key, on) in [
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        ] {
            if on {
                accepted.insert(key.into(), true.into());
            }
        }
        let params = serde_json::json!({
            "notifications": accepted,
            "_meta": {types::meta::SUBSCRIPTION_ID: id},
        });
        if let Ok(message) = Message::notification(
            methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
            Some(&params),
        ) {
            send(reply, message);
        }
        self.lock().subscriptions.insert(id, subscription);
    }

    /// After a catalog event: tells every subscription whose lists changed.
    fn check_subscriptions(&self, tools: &ToolSet) {
        if self.lock().subscriptions.is_empty() {
            return;
        }
        let servers = forward::usable(&self.gateway);
        let now_tools = listing(tools, self.gateway.options.naming);
        let now_prompts = prompt_names(&self.gateway, &servers);
        let now_resources = resource_uris(&servers);
        let mut state = self.lock();
        for (id, subscription) in &mut state.subscriptions {
            let changed = [
                (
                    follow(&mut subscription.tools, &now_tools),
                    methods::NOTIFICATION_TOOLS_LIST_CHANGED,
                ),
                (
                    follow(&mut subscription.prompts, &now_prompts),
                    methods::NOTIFICATION_PROMPTS_LIST_CHANGED,
                ),
                (
                    follow(&mut subscription.resources, &now_resources),
                    methods::NOTIFICATION_RESOURCES_LIST_CHANGED,
                ),
            ]
            .into_iter()
            .filter_map(|(changed, method)| changed.then_some(method));
            let params = serde_json::json!({"_meta": {types::meta::SUBSCRIPTION_ID: id}});
            for method in changed {
                if let Ok(message) = Message::notification(method, Some(&params)) {
                    send(&subscription.reply, message);
                }
            }
        }
    }

    /// Server `server`'s `notifications/message`, passed on when the
    /// client's level lets it through: on the stream of the client's one
    /// call, prompt or read in flight (of that server, or of one not known
    /// yet), opened for it ("Transports" §Sending Messages to the Server:
    /// messages related to the request go on its stream), as the server
    /// sent it during that request; else on the connection.
    fn on_log(&self, server: &str, level: types::LoggingLevel, logger: Option<&str>, data: &Value) {
        let during = {
            let state = self.lock();
            let asked_none = state.levels_per_request && state.log_level.is_none();
            if asked_none || !relay::reaches(state.log_level, level) {
                return;
            }
            // A 2026-07-28 connection that only listens gets none: log
            // messages are about requests, and never go on the listen
            // stream (2026-07-28 "Subscriptions").
            if state.streamable.is_empty() && !state.subscriptions.is_empty() {
                return;
            }
            let mut streamable = state.streamable.values();
            match (streamable.next(), streamable.next()) {
                (Some(only), None)
                    if only.server.as_deref().is_none_or(|asked| asked == server) =>
                {
                    Some(only.context.clone())
                }
                _ => None,
            }
        };
        let mut params = serde_json::json!({"level": level, "data": data});
        if let Some(logger) = logger {
            params["logger"] = logger.into();
        }
        if let Some(context) = during {
            let _ = context.open_stream();
            self.lock().outgoing.push(deliver::Outgoing::About {
                context,
                method: methods::NOTIFICATION_MESSAGE,
                params,
            });
            return;
        }
        if let Ok(message) = Message::notification(methods::NOTIFICATION_MESSAGE, Some(&params)) {
            self.relay(message);
        }
    }

    /// A server's `notifications/resources/updated`, passed on when the
    /// client subscribed to the URI.
    fn on_updated(&self, uri: &str) {
        if !self.lock().resource_subscriptions.contains(uri) {
            return;
        }
        let params = serde_json::json!({"uri": uri});
        if let Ok(message) =
            Message::notification(methods::NOTIFICATION_RESOURCES_UPDATED, Some(&params))
        {
            self.relay(message);
        }
    }

    fn notify_changed(&self, method: &str) {
        if let Ok(message) = Message::notification(method, None::<&Value>) {
            self.relay(message);
        }
    }

    /// A notification for the connection as a whole, from its watcher: a
    /// served client's is queued for the watcher to send, waiting for room
    /// ([`deliver::send_queued`]); a caller's channel takes it at once.
    fn relay(&self, message: Message) {
        match &self.notify {
            Reply::Peer(_) => {
                if let Message::Notification(notification) = message {
                    self.lock()
                        .outgoing
                        .push(deliver::Outgoing::Connection(notification));
                }
            }
            reply => send(reply, message),
        }
    }

    /// The client's peer, when it is served ([`Gateway::serve`], HTTP).
    fn peer(&self) -> Option<&Peer> {
        match &self.notify {
            Reply::Peer(peer) => Some(peer),
            Reply::Channel(_) => None,
        }
    }

    /// Runs `work` for request `id` and answers with its outcome on
    /// `reply`, unless the request is cancelled first (then nothing is
    /// sent). A 2026-07-28 result is marked complete, and when `cacheable`
    /// (a list) not to be cached.
    fn spawn_answer<F>(
        self: &Arc<Self>,
        id: RequestId,
        reply: &Reply,
        modern: bool,
        cacheable: bool,
        work: F,
    ) where
        F: std::future::Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        let cancel = CancelToken::new();
        self.lock().calls.insert(id.clone(), cancel.clone());
        let connection = Arc::clone(self);
        let reply = reply.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                outcome = work => Some(outcome),
            };
            let cancelled = connection.lock().calls.remove(&id).is_none();
            let Some(outcome) = outcome.filter(|_| !cancelled) else {
                return;
            };
            match outcome {
                Ok(mut value) => {
                    if modern && let Some(object) = value.as_object_mut() {
                        // A server's input round, relayed, stays one.
                        let asks = object.get("resultType").and_then(Value::as_str)
                            == Some(types::ResultType::InputRequired.as_str());
                        if !asks {
                            object.insert("resultType".into(), "complete".into());
                        }
                        if cacheable && !asks {
                            object.insert("ttlMs".into(), 0.into());
                            object.insert("cacheScope".into(), "private".into());
                        }
                    } else if !modern && let Some(object) = value.as_object_mut() {
                        forward::to_handshake_era(object);
                    }
                    if let Err(error) = respond(&reply, id.clone(), &value) {
                        send(&reply, Message::error(Some(id), error));
                    }
                }
                Err(error) => send(&reply, Message::error(Some(id), error)),
            }
        });
    }

    /// The client is gone: every call it left is cancelled, its log level
    /// and resource subscriptions given up.
    fn cancel_all(&self) {
        let (calls, uris): (Vec<CancelToken>, Vec<String>) = {
            let mut state = self.lock();
            state.subscriptions.clear();
            (
                state.calls.drain().map(|(_, token)| token).collect(),
                state.resource_subscriptions.drain().collect(),
            )
        };
        relay::forget(&self.gateway, self.number, uris);
        for token in calls {
            token.cancel();
        }
    }
}

/// Marks a 2026-07-28 list result complete and not to be cached
/// ("Caching"): it follows the servers' catalogs, and it is this
/// gateway's (its permission rules) for this client.
macro_rules! uncacheable {
    ($result:expr) => {{
        $result.result_type = Some(types::ResultType::Complete);
        $result.ttl_ms = Some(0.into());
        $result.cache_scope = Some(types::CacheScope::Private);
    }};
}
use uncacheable;

/// Where the messages about one request go.
#[derive(Clone)]
enum Reply {
    /// A channel of the caller's ([`Gateway::connect`]), or of one request
    /// [`Gateway::serve`] answers.
    Channel(mpsc::UnboundedSender<Message>),
    /// The client of [`Gateway::serve`], for notifications about the
    /// connection as a whole.
    Peer(Peer),
}

/// Sends one message; a closed channel means the client is gone, with
/// nothing left to tell it.
fn send(reply: &Reply, message: Message) {
    match reply {
        Reply::Channel(channel) => {
            let _ = channel.send(message);
        }
        Reply::Peer(peer) => {
            // Only notifications are about the connection as a whole.
            if let Message::Notification(notification) = message {
                let _ = peer.notify(&notification.method, notification.params.as_ref());
            }
        }
    }
}

/// One [`Gateway::serve`] client's requests, answered through its
/// connection: the session in front has settled the era, the handshake and
/// the protocol's own requests.
struct Served {
    /// Shared with the work of the 2026-07-28 requests that wait for
    /// their clients' input ([`rounds`]): the connection outlives the
    /// request that started the work.
    connection: Arc<GatewayConnection>,
}

/// Whether a request's server may ask back while answering it (and in the
/// 2026-07-28 era answer `input_required`).
fn may_ask(method: &str) -> bool {
    matches!(
        method,
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
    )
}

#[async_trait::async_trait]
impl ServerHandler for Served {
    async fn request(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let inner = &self.connection.inner;
        let waiting = match &inner.gateway.options.asks {
            Some(asks) if may_ask(&request.method) => {
                if request.era() == Era::Modern {
                    return self.in_rounds(asks, request, context).await;
                }
                // A handshake-era client answers its servers' questions
                // itself, on its connection, while it waits.
                Some(asks.waiting(inner.number, context.peer().clone()))
            }
            _ => None,
        };
        let answer = answer(inner, request, deliver::Target::Fixed(context), false).await;
        drop(waiting);
        answer
    }
}

impl Served {
    /// A 2026-07-28 call, prompt or read, with its servers' questions
    /// answered in input rounds ([`rounds`]): a retry (`requestState`)
    /// resumes the work waiting for it, or for a 2026-07-28 server's own
    /// round sends the request to the server again with the client's
    /// `inputResponses` and the server's `requestState`; a first request
    /// starts its work (its params unchanged), its servers' questions
    /// going to `asks`, and the work goes on in the background once a
    /// server asks one.
    async fn in_rounds(
        &self,
        asks: &Arc<GatewayAsks>,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let gateway = &self.connection.inner.gateway;
        // A first request (no `requestState`) goes on as it came: only its
        // name or URI is read, and nothing is written again.
        let raw = request.params.as_ref().map_or("{}", |raw| raw.get());
        let members = members::of(raw).map_err(|e| {
            ErrorObject::invalid_params(format!(
                "invalid {} params: {}",
                request.method,
                mcp_proto::text::bound(&e.to_string(), 256)
            ))
        })?;
        if members::last(&members, "requestState").is_none() {
            let subject = subject_of(&request.method, &members);
            drop(members);
            let work = self.start(asks, request, None, subject, context)?;
            return gateway.rounds.drive(work).await;
        }
        drop(members);
        let mut params = match request.params.as_ref() {
            Some(raw) => decode::<types::JsonObject>(raw.get(), &request.method)?,
            None => types::JsonObject::new(),
        };
        // A retry's state is this gateway's, never the server's; its
        // answers go where the state says. A first request's answers (a
        // client may send some unasked) go on to a 2026-07-28 server, which
        // may use them ("Multi round-trip requests"), and no further.
        let state = params.remove("requestState");
        let responses = if state.is_some() {
            params.remove("inputResponses")
        } else {
            None
        };
        let subject = rounds::Subject::of(&request.method, &params);
        let work = match state {
            Some(Value::String(state)) => {
                match gateway.rounds.resume(&state, &subject, responses)? {
                    rounds::Resumed::Work(work) => {
                        // What the servers say from now on goes on this
                        // retry's stream.
                        if let Some(target) = &work.target {
                            target.follow(context);
                        }
                        work
                    }
                    rounds::Resumed::Retry { responses, state } => {
                        // The server's round: its own keys and state.
                        if let Some(responses) = responses {
                            params.insert("inputResponses".to_owned(), Value::Object(responses));
                        }
                        if let Some(state) = state {
                            params.insert("requestState".to_owned(), Value::String(state));
                        }
                        self.start(asks, request, Some(params), subject, context)?
                    }
                }
            }
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "requestState must be the string the gateway gave",
                ));
            }
            None => self.start(asks, request, Some(params), subject, context)?,
        };
        gateway.rounds.drive(work).await
    }

    /// The work answering `request` (with `params`, or its own when
    /// `None`), its servers' questions going to `asks`, a 2026-07-28
    /// server's own round coming back as its result; it goes on in the
    /// background once a server asks ([`rounds::Rounds::drive`]).
    fn start(
        &self,
        asks: &Arc<GatewayAsks>,
        mut request: ClientRequest,
        params: Option<types::JsonObject>,
        subject: rounds::Subject,
        context: RequestContext,
    ) -> Result<rounds::Work, ErrorObject> {
        if let Some(params) = params {
            request.params = Some(
                RawJson::encode(&params)
                    .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))?,
            );
        }
        let (sender, asked) = mpsc::unbounded_channel();
        let capabilities = request
            .client
            .as_ref()
            .map(|client| client.capabilities.clone())
            .unwrap_or_default();
        let waiting = asks.waiting_in_rounds(self.connection.inner.number, sender, capabilities);
        let parked = waiting.parked();
        let connection = Arc::clone(&self.connection);
        let target = deliver::Target::following(context);
        let followed = target.clone();
        let done = async move {
            let answer = answer(&connection.inner, request, target, true).await;
            drop(waiting);
            answer
        };
        let mut work = rounds::Work::here(subject, asked, done).parking(parked);
        work.target = Some(followed);
        Ok(work)
    }
}

/// [`rounds::Subject::of`] from a request's parameters as text: its
/// `name`, or for `resources/read` its `uri`, empty when not a string.
fn subject_of(
    method: &str,
    params: &[(std::borrow::Cow<'_, str>, &serde_json::value::RawValue)],
) -> rounds::Subject {
    let field = if method == methods::RESOURCES_READ {
        "uri"
    } else {
        "name"
    };
    rounds::Subject {
        method: method.to_owned(),
        name: members::last(params, field)
            .and_then(|name| serde_json::from_str::<String>(name.get()).ok())
            .unwrap_or_default(),
    }
}

/// Answers one request of a [`Gateway::serve`] (or HTTP) client.
/// `rounds`: a 2026-07-28 server's input round comes back as the answer
/// (its `input_required` result as sent), and the request's
/// `inputResponses`, `requestState` and the client's capabilities go to
/// that server, for [`rounds::Rounds::drive`] to relay.
async fn answer(
    inner: &Arc<Connection>,
    request: ClientRequest,
    target: deliver::Target,
    rounds: bool,
) -> Result<RawJson, ErrorObject> {
    // The request's own context; what the server says as the work goes
    // on goes to `target`'s context then.
    let context = target.now();
    let inner = Arc::clone(inner);
    // Dropped when the request ends, answered or not: a cancelled one
    // cancels its call upstream and ends its subscription.
    let _ended = Ended {
        connection: Arc::clone(&inner),
        id: request.id.clone(),
    };
    let modern = request.era() == Era::Modern;
    let params = request.params.as_ref().map_or("{}", |raw| raw.get());
    if request.method == methods::TOOLS_CALL {
        // Called on this task: the call ends with the request (its
        // future dropped, its token cancelled by `_ended`).
        let Prepared {
            tool,
            call,
            passthrough,
            reported,
            server,
        } = inner.prepare_call(&request.id, params, rounds, modern)?;
        let marks = deliver::Marks::of(&inner.gateway, server.as_deref());
        // A handshake-era client can be polled (2025-11-25 SSE polling):
        // when the server ends the call's stream before its answer, so
        // does the gateway, its client resuming as the gateway does. A
        // stdio server cannot: nothing to listen for.
        let pausable = !modern
            && server
                .as_deref()
                .is_none_or(|server| forward::can_pause(&inner.gateway, server));
        inner.streaming(&request.id, server, &context);
        let mut paused = None;
        if pausable && let Some(passthrough) = &passthrough {
            let (sender, receiver) = mpsc::unbounded_channel();
            if passthrough.stream_paused.set(sender).is_ok() {
                paused = Some(receiver);
            }
        }
        let outcome = if context.wants_progress() || paused.is_some() {
            let (sink, mut reports) = mpsc::unbounded_channel();
            let calling = if context.wants_progress() {
                tool.call(call.with_progress(sink))
            } else {
                tool.call(call)
            };
            tokio::pin!(calling);
            // The request whose stream is open.
            let mut streaming: Option<RequestId> = None;
            // The server streams the call: so does the answer (over
            // Streamable HTTP, from a priming event on), on the stream of
            // the request it now answers to.
            let mut pass_on = |report: &crate::tool::CallProgress| {
                let now = target.now();
                if streaming.as_ref() != Some(now.id()) {
                    streaming = Some(now.id().clone());
                    let _ = now.open_stream();
                }
                relay(&now, report);
            };
            let outcome = loop {
                tokio::select! {
                    outcome = &mut calling => break outcome,
                    Some(report) = reports.recv() => pass_on(&report),
                    Some(retry) = async { paused.as_mut()?.recv().await } => {
                        // What came before the end goes before it.
                        while let Ok(report) = reports.try_recv() {
                            pass_on(&report);
                        }
                        marks.settle(&inner).await;
                        let _ = context.close_stream(retry);
                    }
                }
            };
            // Progress sent before the answer arrives first.
            while let Ok(report) = reports.try_recv() {
                pass_on(&report);
            }
            outcome
        } else {
            tool.call(call).await
        };
        // What the server said before its answer goes first.
        marks.settle(&inner).await;
        inner.lock().calls.remove(&request.id);
        if outcome.is_cancelled() {
            return Err(ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                "the call was cancelled",
            ));
        }
        if let Some(round) = passthrough.as_ref().and_then(|p| p.take_round()) {
            return RawJson::encode(&round)
                .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()));
        }
        let mut result = match passthrough.as_ref().and_then(|p| p.take()) {
            // With kept names the server's answer goes back as it came.
            Some(Ok(result)) if inner.gateway.options.naming == ToolNaming::Keep => result,
            // A server's JSON-RPC error stays one, whatever the naming,
            // unless the client asked for failure reports.
            Some(Err(error)) if !reported => return Err(forward::passed_on(error)),
            _ => call_result(&outcome),
        };
        if modern {
            result.result_type = Some(types::ResultType::Complete);
        } else {
            result.result_type = None;
            result.meta = forward::handshake_meta(result.meta.take());
            result.extra.remove("ttlMs");
            result.extra.remove("cacheScope");
        }
        return RawJson::encode(&result)
            .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()));
    }
    let marks = matches!(
        request.method.as_str(),
        methods::PROMPTS_GET | methods::RESOURCES_READ
    )
    .then(|| {
        inner.streaming(&request.id, None, &context);
        deliver::Marks::of(&inner.gateway, None)
    });
    let (messages, mut about) = mpsc::unbounded_channel();
    inner.answer(
        request.id.clone(),
        &request.method,
        params,
        modern,
        rounds,
        &Reply::Channel(messages),
    )?;
    while let Some(message) = about.recv().await {
        match message {
            // Progress, and a subscription's notifications, waiting for
            // room: a client that reads slowly holds back its own request.
            Message::Notification(notification) => {
                let _ = context
                    .peer()
                    .send_notification(&notification.method, notification.params.as_ref())
                    .await;
            }
            Message::Response(response) => {
                if let Some(marks) = marks {
                    marks.settle(&inner).await;
                }
                return Ok(response.result);
            }
            Message::Error(error) => {
                if let Some(marks) = marks {
                    marks.settle(&inner).await;
                }
                return Err(error.error);
            }
            Message::Request(_) => {}
        }
    }
    Err(ErrorObject::new(
        error_codes::INTERNAL_ERROR,
        "the request ended without an answer",
    ))
}

/// A `tools/call` ready to run.
struct Prepared {
    tool: Arc<dyn ModelTool>,
    call: ToolCall,
    /// Where the server's own answer is kept.
    passthrough: Option<Arc<crate::tool::Passthrough>>,
    /// Whether the client asked for a server's JSON-RPC error as a
    /// failed result with its [`report::FailureReport`].
    reported: bool,
    /// The server the call goes to.
    server: Option<String>,
}

/// Passes a call's progress report on to the client.
fn relay(context: &RequestContext, report: &crate::tool::CallProgress) {
    // The request may have ended meanwhile: nothing to report to then.
    let _ = context.progress(report.progress, report.total, report.message.as_deref());
}

/// Ends a served request's call or subscription when its answer is no
/// longer awaited.
struct Ended {
    connection: Arc<Connection>,
    id: RequestId,
}

impl Drop for Ended {
    fn drop(&mut self) {
        let (token, _subscription, _streamable) = {
            let mut state = self.connection.lock();
            (
                state.calls.remove(&self.id),
                state.subscriptions.remove(&self.id),
                state.streamable.remove(&self.id),
            )
        };
        if let Some(token) = token {
            token.cancel();
        }
    }
}

/// Sends a request's result.
fn respond(reply: &Reply, id: RequestId, result: &impl Serialize) -> Result<(), ErrorObject> {
    let message = Message::response(id, result)
        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))?;
    send(reply, message);
    Ok(())
}

/// Follows the manager's events for one connection, checking its tools
/// after each catalog change, and sends what it relays to the client
/// waiting for room ([`deliver`]); when a request asks it to catch up
/// (`settles`), handles every event already emitted first.
async fn watch_catalogs(
    connection: std::sync::Weak<Connection>,
    mut events: broadcast::Receiver<ManagerEvent>,
    mut settles: mpsc::Receiver<deliver::Settle>,
) {
    loop {
        let event = tokio::select! {
            biased;
            event = events.recv() => event,
            Some(settled) = settles.recv() => {
                // Every event emitted before the ask is in `events` now.
                loop {
                    let event = match events.try_recv() {
                        Ok(event) => Ok(event),
                        Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                            Err(broadcast::error::RecvError::Lagged(missed))
                        }
                        Err(broadcast::error::TryRecvError::Empty) => break,
                        Err(broadcast::error::TryRecvError::Closed) => return,
                    };
                    if !on_event(&connection, event).await {
                        return;
                    }
                }
                let _ = settled.send(());
                continue;
            }
        };
        if !on_event(&connection, event).await {
            return;
        }
    }
}

/// One manager event for one connection: relayed, or its tools checked;
/// what it relays sent before the next. `false` when the connection or
/// the manager is gone.
async fn on_event(
    connection: &std::sync::Weak<Connection>,
    event: Result<ManagerEvent, broadcast::error::RecvError>,
) -> bool {
    let Some(connection) = connection.upgrade() else {
        return false;
    };
    match event {
        Ok(ManagerEvent::Log {
            id,
            level,
            logger,
            data,
        }) => connection.on_log(&id, level, logger.as_deref(), &data),
        Ok(ManagerEvent::ResourceUpdated { uri, .. }) => connection.on_updated(&uri),
        Ok(
            ManagerEvent::CatalogSwapped { .. }
            | ManagerEvent::CatalogRevoked { .. }
            | ManagerEvent::ServerRemoved { .. },
        ) => connection.check_tools(),
        Err(broadcast::error::RecvError::Lagged(missed)) => {
            deliver::lagged(&connection, missed);
            connection.check_tools();
        }
        Ok(_) => {}
        Err(broadcast::error::RecvError::Closed) => return false,
    }
    deliver::send_queued(&connection, connection.peer()).await;
    true
}

/// The tools as the client sees them: model names, descriptions, schemas.
fn declared(tools: &ToolSet, naming: ToolNaming) -> Vec<Tool> {
    tools
        .tools()
        .iter()
        .map(|tool| {
            if naming == ToolNaming::Keep
                && let Some(declaration) = tools.declaration(tool.name())
            {
                return declaration.clone();
            }
            let mut declared = Tool::new(naming.served(tools, tool.name()));
            declared.description = Some(tool.description().to_owned());
            declared.input_schema = tool.input_schema().clone();
            declared
        })
        .collect()
}

/// What a listing showed, to tell whether a later one differs.
fn listing(tools: &ToolSet, naming: ToolNaming) -> Vec<(String, JsonText)> {
    tools
        .tools()
        .iter()
        .map(|tool| {
            (
                naming.served(tools, tool.name()),
                tool.input_schema().clone(),
            )
        })
        .collect()
}

/// A call's outcome as a `tools/call` result: the bridge's result, or for
/// a failure the text the bridge gives it with `isError: true` and the
/// failure itself in `_meta` ([`report::FAILURE`]).
fn call_result(outcome: &ToolOutcome) -> CallToolResult {
    let failure = match outcome {
        ToolOutcome::Failed { failure, .. } => {
            serde_json::to_value(report::FailureReport::of(failure)).ok()
        }
        _ => None,
    };
    match outcome.result() {
        Some(result) => CallToolResult {
            content: result.content.clone(),
            structured_content: result.structured_content.clone(),
            is_error: result.is_error.then_some(true),
            meta: failure.map(|failure| {
                let mut meta = types::JsonObject::new();
                meta.insert(report::FAILURE.to_owned(), failure);
                meta.into()
            }),
            ..CallToolResult::default()
        },
        None => {
            let mut result = CallToolResult::text("the call ended without a result");
            result.is_error = Some(true);
            result
        }
    }
}

/// What the gateway serves, in both eras: tools, prompts and resources
/// with their list changes (on the connection for a handshake-era client,
/// on `subscriptions/listen` for a 2026-07-28 one), and completions; the
/// servers add logging and resource subscriptions when one offers them
/// ([`relay::add_capabilities`]).
fn capabilities() -> ServerCapabilities {
    let list_changed = || ListChangedCapability {
        list_changed: Some(true),
        ..ListChangedCapability::default()
    };
    ServerCapabilities {
        tools: Some(list_changed()),
        prompts: Some(list_changed()),
        resources: Some(types::ResourcesCapability {
            list_changed: Some(true),
            ..types::ResourcesCapability::default()
        }),
        completions: Some(Default::default()),
        ..ServerCapabilities::default()
    }
}

/// Whether the list a handshake-era client last saw (`listed`) differs
/// from `now`; a change is announced once, until the client lists again.
fn announce_once<T: PartialEq>(listed: &mut Option<Vec<T>>, now: &[T]) -> bool {
    let changed = listed.as_deref().is_some_and(|listed| listed != now);
    if changed {
        *listed = None;
    }
    changed
}

/// Whether a subscription's list (`Some` when it asked about it) differs
/// from `now`; it then follows `now`.
fn follow<T: Clone + PartialEq>(listed: &mut Option<Vec<T>>, now: &[T]) -> bool {
    match listed {
        Some(listed) if listed.as_slice() != now => {
            *listed = now.to_vec();
            true
        }
        _ => false,
    }
}

/// The prompts' listed names.
fn prompt_names(gateway: &Gateway, servers: &[forward::Usable]) -> Vec<String> {
    match forward::list_prompts(servers, forward::naming(gateway)) {
        Ok(listed) => listed.prompts.into_iter().map(|p| p.name).collect(),
        // Kept names two servers share: nothing the client could list.
        Err(_) => Vec::new(),
    }
}

/// The resources' URIs.
fn resource_uris(servers: &[forward::Usable]) -> Vec<String> {
    forward::resource_uris(servers)
}

/// Refuses a list request for a page after the first: the gateway lists
/// everything on one.
fn first_page(params: &str, method: &str) -> Result<(), ErrorObject> {
    let params: Value = decode(params, method)?;
    if let Some(cursor) = params.get("cursor").filter(|c| !c.is_null()) {
        return Err(ErrorObject::invalid_params(format!(
            "invalid cursor {}: everything is on the first page",
            mcp_proto::text::bound(&cursor.to_string(), 64)
        )));
    }
    Ok(())
}

/// A request's parameters as `T`, or "invalid params" naming the method.
fn decode<T: serde::de::DeserializeOwned>(params: &str, method: &str) -> Result<T, ErrorObject> {
    serde_json::from_str(params).map_err(|e| {
        ErrorObject::invalid_params(format!(
            "invalid {method} params: {}",
            mcp_proto::text::bound(&e.to_string(), 256)
        ))
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
    use mcp_manager::scripted::{Reply, ScriptedFactory, ScriptedServer};
    use serde_json::json;
    use tokio::io::{
        AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf,
    };

    use super::*;
    use crate::PermissionPreset;

    struct Client {
        write: WriteHalf<DuplexStream>,
        lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
        serve: tokio::task::JoinHandle<io::Result<()>>,
    }

    impl Client {
        async fn send(&mut self, message: Value) {
            let mut line = message.to_string();
            line.push('\n');
            self.write.write_all(line.as_bytes()).await.unwrap();
        }

        async fn next(&mut self) -> Value {
            let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
                .await
                .expect("an answer within 10 s")
                .unwrap()
                .expect("the gateway is still writing");
            serde_json::from_str(&line).unwrap()
        }

        async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
                .await;
            self.next().await
        }
    }

    /// A gateway over one scripted server `fx` (tools `echo` and `hang`,
    /// whose calls never answer), serving one client on an in-memory pipe.
    async fn serving() -> Client {
        serving_with(GatewayOptions::default()).await
    }

    async fn serving_with(gateway_options: GatewayOptions) -> Client {
        let server = ScriptedServer::new()
            .tool(
                json!({"name": "echo", "inputSchema": {"type": "object"}}),
                |args| Reply::result(json!({"content": [{"type": "text", "text": args["text"]}]})),
            )
            .tool(
                json!({"name": "hang", "inputSchema": {"type": "object"}}),
                |_| Reply::Never,
            );
        let manager = McpManager::builder()
            .factory(ScriptedFactory::new().server("fx", server))
            .build();
        let config = ServerConfig::new("fx", TransportConfig::Stdio(StdioConfig::new("fx")));
        let report = manager.connect_servers([config]).await;
        assert_eq!(report.ready.len(), 1, "{report:?}");
        let options = SessionOptions {
            preset: PermissionPreset::FullAccess,
            ..SessionOptions::default()
        };
        let gateway = Gateway::new(&manager, options, gateway_options);
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let serve = tokio::spawn(async move { gateway.serve(server_read, server_write).await });
        let (read, write) = tokio::io::split(client);
        Client {
            write,
            lines: BufReader::new(read).lines(),
            serve,
        }
    }

    async fn initialized() -> Client {
        let mut client = serving().await;
        let init = client
            .request(
                1,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
        client
    }

    #[tokio::test]
    async fn requests_before_initialize_and_a_second_initialize_are_refused() {
        let mut client = serving().await;
        let early = client.request(7, "tools/list", json!({})).await;
        assert_eq!(early["id"], 7);
        assert_eq!(
            early["error"]["code"],
            error_codes::INVALID_REQUEST,
            "{early}"
        );
        let init = client
            .request(
                1,
                "initialize",
                json!({"protocolVersion": "1999-01-01", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        // An unknown version is answered with the newest handshake one.
        assert_eq!(
            init["result"]["protocolVersion"],
            mcp_proto::ProtocolVersion::LATEST_HANDSHAKE.as_str()
        );
        let again = client
            .request(
                2,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        assert_eq!(
            again["error"]["code"],
            error_codes::INVALID_REQUEST,
            "{again}"
        );
    }

    #[tokio::test]
    async fn tools_are_listed_by_model_name_and_called_through_the_session() {
        let mut client = initialized().await;
        let list = client.request(2, "tools/list", json!({})).await;
        let names: Vec<&str> = list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["mcp_fx_echo", "mcp_fx_hang"]);
        // A model name is not a plain one.
        let plain = client
            .request(
                30,
                "tools/call",
                json!({"name": "fx__echo", "arguments": {"text": "hi"}}),
            )
            .await;
        assert_eq!(plain["error"]["code"], error_codes::INVALID_PARAMS);
        let call = client
            .request(
                3,
                "tools/call",
                json!({"name": "mcp_fx_echo", "arguments": {"text": "hi"}}),
            )
            .await;
        assert_eq!(call["result"]["content"][0]["text"], "hi", "{call}");
        let unknown = client
            .request(4, "tools/call", json!({"name": "echo", "arguments": {}}))
            .await;
        assert_eq!(
            unknown["error"]["code"],
            error_codes::INVALID_PARAMS,
            "{unknown}"
        );
        let paged = client
            .request(5, "tools/list", json!({"cursor": "x"}))
            .await;
        assert_eq!(
            paged["error"]["code"],
            error_codes::INVALID_PARAMS,
            "{paged}"
        );
        let unknown_method = client.request(6, "logging/setLevel", json!({})).await;
        assert_eq!(
            unknown_method["error"]["code"],
            error_codes::METHOD_NOT_FOUND
        );
    }

    #[tokio::test]
    async fn plain_names_are_the_servers_own() {
        let mut client = serving_with(GatewayOptions::default().naming(ToolNaming::Plain)).await;
        let init = client
            .request(
                1,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        assert!(init["result"].is_object(), "{init}");
        let list = client.request(2, "tools/list", json!({})).await;
        let names: Vec<&str> = list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["fx__echo", "fx__hang"]);
        let call = client
            .request(
                3,
                "tools/call",
                json!({"name": "fx__echo", "arguments": {"text": "plain"}}),
            )
            .await;
        assert_eq!(call["result"]["content"][0]["text"], "plain", "{call}");
        for wrong in ["mcp_fx_echo", "fx__", "fx_echo", "__echo"] {
            let refused = client
                .request(4, "tools/call", json!({"name": wrong, "arguments": {}}))
                .await;
            assert_eq!(
                refused["error"]["code"],
                error_codes::INVALID_PARAMS,
                "{wrong}"
            );
        }
    }

    #[tokio::test]
    async fn malformed_lines_get_errors_with_a_null_id_and_the_connection_goes_on() {
        let mut client = initialized().await;
        client.write.write_all(b"{not json\n").await.unwrap();
        let parse = client.next().await;
        assert_eq!(parse["error"]["code"], error_codes::PARSE_ERROR, "{parse}");
        assert!(parse["id"].is_null());
        client.write.write_all(b"[1, 2]\n").await.unwrap();
        let invalid = client.next().await;
        assert!(invalid["error"].is_object(), "{invalid}");
        let ping = client.request(9, "ping", json!({})).await;
        assert_eq!(ping["result"], json!({}));
    }

    #[tokio::test]
    async fn a_cancelled_call_gets_no_answer_and_a_closed_input_ends_the_calls_left() {
        let mut client = initialized().await;
        client
            .send(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                         "params": {"name": "mcp_fx_hang", "arguments": {}}}))
            .await;
        client
            .send(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 10, "reason": "enough"}}),
            )
            .await;
        // The next answer is the ping's: the cancelled call never answers.
        let ping = client.request(11, "ping", json!({})).await;
        assert_eq!(ping["id"], 11, "{ping}");
        client
            .send(json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                         "params": {"name": "mcp_fx_hang", "arguments": {}}}))
            .await;
        // The client goes away with a call in flight: serving ends.
        client.write.shutdown().await.unwrap();
        drop(client.write);
        let served = tokio::time::timeout(Duration::from_secs(10), client.serve)
            .await
            .expect("serving ends when the input does");
        // It would not end had the call been left running: the call holds
        // the connection's output open until it answers.
        served.unwrap().unwrap();
    }

    /// The `_meta` of a 2026-07-28 request.
    fn modern_meta(version: &str) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}
        })
    }

    #[tokio::test]
    async fn a_2026_07_28_client_discovers_and_calls_without_initialize() {
        let mut client = serving().await;
        let discover = client
            .request(
                1,
                "server/discover",
                json!({"_meta": modern_meta("2026-07-28")}),
            )
            .await;
        let result = &discover["result"];
        assert_eq!(result["supportedVersions"][0], "2026-07-28", "{discover}");
        assert!(
            result["supportedVersions"]
                .as_array()
                .unwrap()
                .contains(&json!("2025-11-25"))
        );
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "mcp-gateway"
        );
        assert!(result["capabilities"]["tools"].is_object(), "{discover}");
        assert_eq!(result["ttlMs"], 0, "{discover}");
        assert_eq!(result["cacheScope"], "private", "{discover}");
        let list = client
            .request(2, "tools/list", json!({"_meta": modern_meta("2026-07-28")}))
            .await;
        assert_eq!(list["result"]["tools"][0]["name"], "mcp_fx_echo", "{list}");
        let call = client
            .request(
                3,
                "tools/call",
                json!({"name": "mcp_fx_echo", "arguments": {"text": "modern"},
                       "_meta": modern_meta("2026-07-28")}),
            )
            .await;
        assert_eq!(call["result"]["content"][0]["text"], "modern", "{call}");
        let unsupported = client
            .request(4, "tools/list", json!({"_meta": modern_meta("2027-01-01")}))
            .await;
        assert_eq!(unsupported["error"]["code"], -32022, "{unsupported}");
        assert_eq!(unsupported["error"]["data"]["requested"], "2027-01-01");
        assert_eq!(unsupported["error"]["data"]["supported"][0], "2026-07-28");
        // Without `_meta` the request is of the handshake era, which needs
        // an `initialize` first.
        let legacy = client.request(5, "tools/list", json!({})).await;
        assert_eq!(
            legacy["error"]["code"],
            error_codes::INVALID_REQUEST,
            "{legacy}"
        );
    }

    /// A gateway over scripted servers, connected, with its session's
    /// rules wide open.
    async fn gateway_over(servers: Vec<(&str, ScriptedServer)>) -> Gateway {
        gateway_with(servers, GatewayOptions::default()).await
    }

    /// [`gateway_over`] with these gateway options.
    pub(super) async fn gateway_with(
        servers: Vec<(&str, ScriptedServer)>,
        gateway_options: GatewayOptions,
    ) -> Gateway {
        let mut factory = ScriptedFactory::new();
        let mut configs = Vec::new();
        for (id, server) in servers {
            factory = factory.server(id, server);
            configs.push(ServerConfig::new(
                id,
                TransportConfig::Stdio(StdioConfig::new(id)),
            ));
        }
        let manager = McpManager::builder().factory(factory).build();
        let count = configs.len();
        let report = manager.connect_servers(configs).await;
        assert_eq!(report.ready.len(), count, "{report:?}");
        let options = SessionOptions {
            preset: PermissionPreset::FullAccess,
            ..SessionOptions::default()
        };
        Gateway::new(&manager, options, gateway_options)
    }

    /// `{"jsonrpc":"2.0","id":N,"method":"ping"}` lines, `count` of them.
    fn pings(first: u64, count: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for id in first..first + count {
            out.extend_from_slice(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes(),
            );
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_never_reads_is_not_read_past_the_reply_budget() {
        let gateway = gateway_over(vec![("fx", ScriptedServer::new())]).await;
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let serve = tokio::spawn(async move { gateway.serve(server_read, server_write).await });
        let (mut read, mut write) = tokio::io::split(client);
        let init = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}\n";
        write.write_all(init).await.unwrap();
        // Pings in 1 MiB chunks, their answers never read: 64 MiB of them
        // would queue about 55 MiB of answers. A write that does not finish
        // while nothing else can run (the paused clock then jumps ahead)
        // means the gateway stopped reading.
        let mut written = 0usize;
        let mut next_id = 1;
        let mut stopped = false;
        for _ in 0..64 {
            let bytes = pings(next_id, 1024 * 1024 / 42);
            next_id += 1024 * 1024 / 42;
            match tokio::time::timeout(Duration::from_secs(5), write.write_all(&bytes)).await {
                Ok(result) => {
                    result.unwrap();
                    written += bytes.len();
                }
                Err(_) => {
                    stopped = true;
                    break;
                }
            }
        }
        assert!(stopped, "the gateway read all {written} bytes of pings");
        // About 8 MiB of answers (`{"jsonrpc":"2.0","id":N,"result":{}}`,
        // a little shorter than the pings) plus what the pipes hold.
        assert!(
            (8 * 1024 * 1024..16 * 1024 * 1024).contains(&written),
            "read {written} bytes of pings before stopping"
        );
        // Once the client reads its answers, its requests are read again.
        let mut sink = vec![0u8; 1024 * 1024];
        let mut drained = 0usize;
        while drained < 8 * 1024 * 1024 {
            let n = tokio::time::timeout(Duration::from_secs(5), read.read(&mut sink))
                .await
                .expect("answers to read")
                .unwrap();
            assert!(n > 0, "the gateway's output ended");
            drained += n;
        }
        let more = pings(next_id, 100);
        tokio::time::timeout(Duration::from_secs(5), write.write_all(&more))
            .await
            .expect("the gateway reads again once its answers drained")
            .unwrap();
        drop(write);
        drop(read);
        tokio::time::timeout(Duration::from_secs(30), serve)
            .await
            .expect("serving ends with the client")
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn prompts_that_would_share_a_name_get_distinct_ones_and_reach_their_server() {
        let server = |prompt: &'static str| {
            ScriptedServer::new()
                .capabilities(json!({"tools": {}, "prompts": {}}))
                .on("prompts/list", move |_| {
                    Reply::result(json!({"prompts": [{"name": prompt}]}))
                })
                .on("prompts/get", move |params| {
                    let asked = params["name"].as_str().unwrap_or_default().to_owned();
                    Reply::result(json!({"messages": [{"role": "user",
                        "content": {"type": "text", "text": format!("{prompt} got {asked}")}}]}))
                })
        };
        // `mcp_a_b_c` both ways: server `a`'s `b_c` and server `a_b`'s `c`.
        let gateway = gateway_over(vec![("a", server("b_c")), ("a_b", server("c"))]).await;
        let (client, end) = tokio::io::duplex(64 * 1024);
        let (end_read, end_write) = tokio::io::split(end);
        let serve = tokio::spawn(async move { gateway.serve(end_read, end_write).await });
        let (read, write) = tokio::io::split(client);
        let mut client = Client {
            write,
            lines: BufReader::new(read).lines(),
            serve,
        };
        client
            .request(
                1,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        let list = client.request(2, "prompts/list", json!({})).await;
        let names: Vec<String> = list["result"]["prompts"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names.len(), 2, "{list}");
        assert_ne!(names[0], names[1], "{list}");
        for name in &names {
            assert!(name.starts_with("mcp_a_b_c_"), "a hash suffix: {name}");
        }
        let mut answers = Vec::new();
        for (id, name) in (3..).zip(&names) {
            let got = client
                .request(id, "prompts/get", json!({"name": name}))
                .await;
            answers.push(
                got["result"]["messages"][0]["content"]["text"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{got}"))
                    .to_owned(),
            );
        }
        answers.sort();
        assert_eq!(answers, ["b_c got b_c", "c got c"]);
    }

    #[tokio::test]
    async fn an_older_binding_never_replaces_a_newer_one() {
        let gateway = gateway_over(vec![("fx", ScriptedServer::new())]).await;
        let (notify, _notifications) = mpsc::unbounded_channel();
        let connection = gateway.connect_reply(super::Reply::Channel(notify));
        // Two bindings, made in this order, reaching the connection in the
        // other (a request's binding overtaken by the watcher's).
        let older = gateway.session().bind();
        let newer = gateway.session().bind();
        assert!(newer.generation() > older.generation());
        let kept = connection.inner.keep(newer.clone());
        assert_eq!(kept.generation(), newer.generation());
        let kept = connection.inner.keep(older);
        assert_eq!(kept.generation(), newer.generation());
        assert_eq!(connection.inner.tools().generation(), newer.generation());
    }
}

#[cfg(test)]
mod keep_tests {
    use std::time::Duration;

    use mcp_manager::scripted::{Reply, ScriptedServer};
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;

    /// A gateway with kept names over scripted servers.
    async fn kept(servers: Vec<(&str, ScriptedServer)>) -> Gateway {
        super::tests::gateway_with(servers, GatewayOptions::default().naming(ToolNaming::Keep))
            .await
    }

    /// Sends each request in turn over a served pipe; their answers.
    async fn exchange(gateway: Gateway, requests: &[Value]) -> Vec<Value> {
        let (client, end) = tokio::io::duplex(64 * 1024);
        let (end_read, end_write) = tokio::io::split(end);
        let serve = tokio::spawn(async move { gateway.serve(end_read, end_write).await });
        let (read, mut write) = tokio::io::split(client);
        let mut lines = BufReader::new(read).lines();
        let mut answers = Vec::new();
        for request in requests {
            write
                .write_all(format!("{request}\n").as_bytes())
                .await
                .unwrap();
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("an answer within 10 s")
                .unwrap()
                .expect("an answer");
            answers.push(serde_json::from_str(&line).unwrap());
        }
        write.shutdown().await.unwrap();
        drop(write);
        tokio::time::timeout(Duration::from_secs(10), serve)
            .await
            .expect("serving ends with the client's input")
            .unwrap()
            .unwrap();
        answers
    }

    fn request(id: u64, method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    fn initialize() -> Value {
        request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}),
        )
    }

    #[tokio::test]
    async fn kept_names_are_the_servers_own_and_answers_pass_as_they_came() {
        let server = ScriptedServer::new()
            .capabilities(json!({"tools": {}, "prompts": {}}))
            .tool(
                json!({"name": "echo", "title": "Echo", "inputSchema": {"type": "object"},
                       "annotations": {"readOnlyHint": true}}),
                |args| {
                    Reply::result(json!({"content": [{"type": "text", "text": args["text"]}],
                                         "_meta": {"example.com/trace": "t1"}}))
                },
            )
            .tool(
                json!({"name": "broken", "inputSchema": {"type": "object"}}),
                |_| {
                    Reply::Error(ErrorObject {
                        data: serde_json::value::to_raw_value(&json!({"why": "on purpose"})).ok(),
                        ..ErrorObject::new(-32099, "it broke")
                    })
                },
            )
            .tool(
                json!({"name": "needs", "inputSchema": {"type": "object",
                       "properties": {"x": {"type": "string"}}, "required": ["x"]}}),
                |_| Reply::result(json!({"content": []})),
            )
            .on("prompts/list", |_| {
                Reply::result(json!({"prompts": [{"name": "greet"}]}))
            })
            .on("prompts/get", |params| {
                Reply::result(json!({"messages": [{"role": "user",
                    "content": {"type": "text", "text": format!("got {}", params["name"])}}]}))
            });
        let gateway = kept(vec![("fx", server)]).await;
        assert_eq!(gateway.check_names().await, Ok(()));
        let answers = exchange(
            gateway,
            &[
                initialize(),
                request(1, "tools/list", json!({})),
                request(
                    2,
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": "hi"}}),
                ),
                request(3, "tools/call", json!({"name": "broken", "arguments": {}})),
                request(4, "prompts/list", json!({})),
                request(5, "prompts/get", json!({"name": "greet"})),
                request(6, "tools/call", json!({"name": "needs", "arguments": {}})),
            ],
        )
        .await;
        let tools = answers[1]["result"]["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["broken", "echo", "needs"], "{}", answers[1]);
        // Arguments the schema refuses: nothing sent, and the text names
        // the tool as the client knows it.
        let refused = answers[6]["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(answers[6]["result"]["isError"], true, "{}", answers[6]);
        assert!(
            refused.contains("needs") && !refused.contains("mcp_"),
            "{refused}"
        );
        assert_eq!(tools[1]["title"], "Echo");
        assert_eq!(tools[1]["annotations"]["readOnlyHint"], true);
        assert_eq!(answers[2]["result"]["content"][0]["text"], "hi");
        assert_eq!(answers[2]["result"]["_meta"]["example.com/trace"], "t1");
        assert_eq!(answers[3]["error"]["code"], -32099, "{}", answers[3]);
        assert_eq!(answers[3]["error"]["data"]["why"], "on purpose");
        assert_eq!(answers[4]["result"]["prompts"][0]["name"], "greet");
        assert_eq!(
            answers[5]["result"]["messages"][0]["content"]["text"],
            "got \"greet\""
        );
    }

    #[tokio::test]
    async fn a_name_two_servers_share_is_refused_naming_both() {
        let server = || {
            ScriptedServer::new().tool(
                json!({"name": "echo", "inputSchema": {"type": "object"}}),
                |_| Reply::result(json!({"content": []})),
            )
        };
        let gateway = kept(vec![("left", server()), ("right", server())]).await;
        let collision = gateway.check_names().await.unwrap_err();
        assert_eq!(collision.kind, "tool");
        assert_eq!(collision.name, "echo");
        assert_eq!(
            (collision.first.as_str(), collision.second.as_str()),
            ("left", "right")
        );
        let answers = exchange(
            gateway,
            &[
                initialize(),
                request(1, "tools/list", json!({})),
                request(2, "tools/call", json!({"name": "echo", "arguments": {}})),
            ],
        )
        .await;
        for answer in &answers[1..] {
            let message = answer["error"]["message"]
                .as_str()
                .unwrap_or_else(|| panic!("{answer}"));
            assert!(
                message.contains("servers left and right") && message.contains("tool echo"),
                "{message}"
            );
            assert_eq!(answer["error"]["data"]["servers"], json!(["left", "right"]));
        }
    }
}

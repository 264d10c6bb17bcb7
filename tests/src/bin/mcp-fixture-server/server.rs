//! The transport-independent MCP server: the fixture's answers (tools,
//! resources, prompts, the requests it sends to the client), as the
//! [`CoreHandler`] of `mcp_transport`'s server core, which owns the
//! protocol: `mcp_proto`'s `ServerSession` answers `initialize`, `ping`,
//! batches, the per-request `_meta` envelope and every protocol error, and
//! cancels a request by dropping its future; what reaches the fixture is a
//! request to answer, with its `RequestContext`.
//!
//! What the fixture sends about a request (progress, log messages,
//! `list_changed`, a `roots/list` request) goes through that request's
//! context or the connection's `Peer` ([`Server::context`]).
//!
//! The scripted faults that break the protocol on purpose act outside it,
//! on the wire: the raw path of byte streams ([`crate::raw`]: stdio, legacy
//! SSE) and the wrapper in front of the Streamable HTTP server
//! (`crate::http::streamable`).
//!
//! [`modern`] answers the stateless 2026-07-28 era beside the handshake
//! (`--era`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_proto::jsonrpc::error_codes;
use mcp_proto::server::{ClientRequest, RequestError, ServerOptions};
use mcp_proto::types::{
    Implementation, ListChangedCapability, ProgressToken, ResourcesCapability, ServerCapabilities,
};
use mcp_proto::version::Era as ProtocolEra;
use mcp_proto::{ErrorObject, ProtocolVersion, RawJson, RequestId, methods};
use mcp_transport::server::{Peer, PeerError, RequestContext, ServerHandler};
use serde_json::{Value, json};

use crate::catalog;
use crate::eventlog;
use crate::options::{Era, Options};
use crate::raw::LONG_ERROR;
use crate::reference;

mod asking;
mod modern;

pub(crate) use modern::MODERN;

/// The largest message the fixture reads: 64 MiB, as stdio's line limit
/// and HTTP's body limit.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// How many requests may wait for their answer at once: far more than any
/// test or benchmark keeps in flight, so that the bound never shapes one.
const MAX_IN_FLIGHT: usize = 4096;

/// The fixture's configuration, shared by every session of the process.
#[derive(Debug)]
pub(crate) struct Fixture {
    pub(crate) options: Options,
    /// Built-in and generated tools, built once: `tools/list` only appends
    /// the session's runtime-added tools.
    tools: Vec<Value>,
    /// The modern era's tools: the built-ins that send no requests to the
    /// client, the MRTR and `x-mcp-header` tools, then the rest as above.
    pub(crate) modern_tools: Vec<Value>,
    /// The last `big` result, encoded: the benchmark calls `big` with the
    /// same size again and again, and encoding 1 MiB for every call made
    /// the fixture, not the client, the bottleneck of that measurement.
    big_result: Mutex<Option<(u64, RawJson)>>,
}

impl Fixture {
    pub(crate) fn new(options: Options) -> Arc<Fixture> {
        let builtin = catalog::builtin_tools();
        let mut tools = builtin.clone();
        let mut modern_tools: Vec<Value> = builtin
            .into_iter()
            .filter(|t| !catalog::asks_client(t["name"].as_str().unwrap_or("")))
            .chain(catalog::modern_only_tools())
            .collect();
        let mut rest = Vec::new();
        if options.storm_tool {
            rest.push(catalog::storm_tool());
        }
        if options.remove_tool {
            rest.push(catalog::remove_tool());
        }
        if options.hostile_text {
            rest.extend(catalog::hostile_tools());
        }
        if options.error_message_kib.is_some() {
            rest.push(catalog::long_error_tool());
        }
        if options.reference_catalog {
            // The modern era lists it already, with the MRTR tools.
            tools.push(catalog::region_echo_tool());
            rest.extend(reference::tools());
        }
        rest.extend((1..=options.extra_tools).map(catalog::generated_tool));
        tools.extend(rest.iter().cloned());
        modern_tools.extend(rest);
        if options.reference_catalog {
            let acting = reference::acting_tools();
            tools.extend(acting.iter().cloned());
            modern_tools.extend(acting);
        }
        Arc::new(Fixture {
            options,
            tools,
            modern_tools,
            big_result: Mutex::new(None),
        })
    }

    /// The `resources/list` result: the fixture's, then the reference
    /// catalog's with `--reference-catalog`.
    pub(crate) fn resources(&self) -> Value {
        let mut result = catalog::resources();
        if self.options.reference_catalog
            && let Some(list) = result["resources"].as_array_mut()
        {
            list.extend(reference::resources());
        }
        result
    }

    /// The `resources/templates/list` result: none but the reference
    /// catalog's.
    pub(crate) fn resource_templates(&self) -> Value {
        let templates = if self.options.reference_catalog {
            reference::templates()
        } else {
            Vec::new()
        };
        json!({"resourceTemplates": templates})
    }

    /// The `prompts/list` result: the fixture's, then the reference
    /// catalog's with `--reference-catalog` (the one that asks for input
    /// included, in both eras).
    pub(crate) fn prompts(&self) -> Value {
        let mut result = catalog::prompts();
        if self.options.reference_catalog
            && let Some(list) = result["prompts"].as_array_mut()
        {
            list.extend(reference::prompts());
            list.push(reference::mrtr::prompt());
        }
        result
    }

    /// `resources/read`: the fixture's resources, then the reference
    /// catalog's; -32002 for any other URI.
    pub(crate) fn read_resource(&self, params: &Value) -> Result<Value, ErrorObject> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match self
            .options
            .reference_catalog
            .then(|| reference::read(uri))
            .flatten()
        {
            Some(contents) => Ok(contents),
            None => read_resource(params),
        }
    }

    /// `prompts/get`: the fixture's prompt, then the reference catalog's.
    pub(crate) fn get_prompt(&self, params: &Value) -> Result<Value, ErrorObject> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        match self
            .options
            .reference_catalog
            .then(|| reference::get_prompt(name, &arguments))
            .flatten()
        {
            Some(result) => result,
            None => get_prompt(params),
        }
    }

    /// The session's options: the versions `--era` (and
    /// `--protocol-version`) allow, the capabilities the handshake
    /// announces, and `server/discover` left to the fixture, whose answer
    /// carries `ttlMs` and `cacheScope` and may come late.
    pub(crate) fn session_options(&self) -> ServerOptions {
        let options = &self.options;
        let mut versions = match options.era {
            Era::Both => ProtocolVersion::ALL.to_vec(),
            Era::Modern => vec![ProtocolVersion::V2026_07_28],
            Era::Legacy => ProtocolVersion::HANDSHAKE.to_vec(),
        };
        if let Some(forced) = self.forced_version() {
            versions.retain(|v| v.era() == ProtocolEra::Modern);
            versions.push(forced);
        }
        ServerOptions::default()
            .server_info(server_info())
            .capabilities(ServerCapabilities {
                tools: (!options.no_tools_capability).then(|| ListChangedCapability {
                    list_changed: Some(true),
                    ..ListChangedCapability::default()
                }),
                resources: Some(ResourcesCapability {
                    subscribe: options.reference_catalog.then_some(true),
                    ..ResourcesCapability::default()
                }),
                prompts: Some(ListChangedCapability::default()),
                logging: Some(Default::default()),
                extensions: options.skills.then(catalog::skills_extension),
                completions: options.reference_catalog.then(Default::default),
                ..ServerCapabilities::default()
            })
            .instructions(options.instructions.clone())
            .versions(versions)
            .max_message_size(MAX_MESSAGE)
            .max_in_flight(MAX_IN_FLIGHT)
            .answer_discover(false)
            // The fixture asks for roots, sampling and elicitation whatever
            // the client declared: it exists to test how clients answer.
            .enforce_client_capabilities(false)
    }

    /// `--protocol-version` when it names a handshake version the session
    /// can negotiate by offering only it.
    pub(crate) fn forced_version(&self) -> Option<ProtocolVersion> {
        forced_version(&self.options)
    }
}

/// `--protocol-version` when it names a handshake version the session can
/// negotiate by offering only it (another is written into the answer to
/// `initialize` by the fault paths).
pub(crate) fn forced_version(options: &Options) -> Option<ProtocolVersion> {
    let forced = ProtocolVersion::parse(options.protocol_version.as_deref()?)?;
    forced.uses_handshake().then_some(forced)
}

/// Who the fixture is, in `initialize` and `server/discover` results.
pub(crate) fn server_info() -> Implementation {
    Implementation {
        title: Some("MCP fixture server".to_owned()),
        ..Implementation::new("mcp-fixture-server", env!("CARGO_PKG_VERSION"))
    }
}

/// Which client request an outbound message belongs to.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    /// The response to this request, or a message sent while handling it
    /// (progress, `list_changed`, a `roots/list` request...).
    Related(RequestId),
    /// Not related to any request.
    Standalone,
}

/// One MCP connection of the server core: a stdio connection, a legacy
/// SSE stream, a Streamable HTTP session, or (one shared by all) the
/// stateless era's requests. What the fixture sends about a request goes
/// through that request's context when [`Server::related_on_own_stream`]
/// says so, the rest through the connection's peer (the GET stream over
/// HTTP; none for the stateless era's shared server).
pub(crate) struct Server {
    fixture: Arc<Fixture>,
    peer: Option<Peer>,
    /// Whether a message about a request goes on the request's own stream
    /// by default: over a byte stream it is all one stream; over HTTP only
    /// with `--sse-responses` (with JSON answers the fixture sends it on
    /// the GET stream, as servers that answer with JSON do), and always in
    /// the stateless era.
    related_on_own_stream: bool,
    /// Whether a request that ends unanswered is logged `cancelled` here:
    /// over a byte stream the raw path logs the client's cancellations as
    /// they come instead ([`crate::raw::Outstanding`]).
    logs_cancels: bool,
    /// The requests being answered: their contexts, and whether what
    /// concerns them goes on their own stream (see [`Server::context`]).
    contexts: Mutex<HashMap<RequestId, (RequestContext, bool)>>,
    state: Mutex<State>,
    /// `tools/list` requests answered so far, for `--fail-tools-list-after`.
    tools_list_calls: AtomicU64,
    /// Open `subscriptions/listen` streams (2026-07-28), by the listen's id.
    subscriptions: Mutex<HashMap<RequestId, mcp_proto::types::SubscriptionFilter>>,
}

#[derive(Debug, Default)]
struct State {
    /// Tools added by `add_tool`, in order.
    added_tools: Vec<String>,
    /// Tools taken out of the list by `remove_tool`.
    removed_tools: Vec<String>,
}

/// How a request is answered.
enum Reply {
    Now(Result<Value, ErrorObject>),
    Later(Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>),
    /// A result already encoded.
    Encoded(RawJson),
}

impl Server {
    /// A connection's server, reaching the client through `peer` for what
    /// concerns no request.
    /// `byte_stream`: the connection is a byte stream (stdio, legacy SSE),
    /// where every message goes on the one stream and the raw path logs
    /// cancellations; otherwise a Streamable HTTP session (or, without
    /// `peer`, the stateless era's shared server).
    pub(crate) fn under_core(
        fixture: Arc<Fixture>,
        peer: Option<Peer>,
        byte_stream: bool,
    ) -> Arc<Server> {
        let related_on_own_stream = byte_stream || peer.is_none() || fixture.options.sse_responses;
        Arc::new(Server {
            fixture,
            peer,
            related_on_own_stream,
            logs_cancels: !byte_stream,
            contexts: Mutex::new(HashMap::new()),
            state: Mutex::new(State::default()),
            tools_list_calls: AtomicU64::new(0),
            subscriptions: Mutex::new(HashMap::new()),
        })
    }

    /// The protocol version `initialize` settled, once answered.
    pub(crate) fn negotiated_version(&self) -> Option<ProtocolVersion> {
        self.peer.as_ref()?.handshake().map(|h| h.version)
    }

    /// A subscription ends with its request: logs `listen-end` if it was
    /// still open.
    fn end_subscription(&self, id: &RequestId, how: &str) {
        if lock(&self.subscriptions).remove(id).is_some() {
            eventlog::record_with(
                self.fixture.options.event_log.as_deref(),
                "listen-end",
                &json!({"id": id, "how": how}),
            );
        }
    }

    /// The context of the request `route` names, if what concerns it goes
    /// on its own stream (see [`Server::related_on_own_stream`]), or the
    /// request asked for it ([`Server::open_request_stream`]).
    fn context(&self, route: &Route) -> Option<RequestContext> {
        let Route::Related(id) = route else {
            return None;
        };
        let contexts = lock(&self.contexts);
        let (context, streamed) = contexts.get(id)?;
        (self.related_on_own_stream || *streamed).then(|| context.clone())
    }

    /// Answers the request `route` names on its own
    /// SSE stream from now on (`RequestContext::open_stream`), and sends
    /// what concerns it there: for the conformance scenarios that listen
    /// for a call's progress and log messages on the call's stream.
    fn open_request_stream(&self, route: &Route) {
        let Route::Related(id) = route else {
            return;
        };
        if let Some((context, streamed)) = lock(&self.contexts).get_mut(id) {
            *streamed = context.open_stream().is_ok();
        }
    }

    /// SSE polling on the request `route` names
    /// (2025-11-25 "Transports" §Resumability and Redelivery): its stream
    /// ends now with a `retry` of `retry`, the request goes on, and the
    /// client gets the rest with GET and `Last-Event-ID`. Elsewhere nothing
    /// happens.
    fn close_request_stream(&self, route: &Route, retry: Duration) {
        let Route::Related(id) = route else {
            return;
        };
        if let Some((context, _)) = lock(&self.contexts).get(id)
            && let Err(e) = context.close_stream(retry)
        {
            eprintln!("fixture: cannot close the stream of {id}: {e}");
        }
    }

    /// Logs `cancelled`: a request ended before it was answered.
    fn log_cancelled(&self, id: &RequestId) {
        eventlog::record_with(
            self.fixture.options.event_log.as_deref(),
            "cancelled",
            &json!({"requestId": id, "inFlight": true}),
        );
    }

    /// Answers one request under the server core: `context` carries what
    /// the handler sends about it while it runs. A request whose future is
    /// dropped first (the client cancelled it, closed its stream, or the
    /// session ended) is logged `cancelled`.
    async fn answer_under_core(
        self: &Arc<Self>,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let id = request.id.clone();
        lock(&self.contexts).insert(id.clone(), (context, false));
        let mut running = Running {
            server: Arc::clone(self),
            id: Some(id),
        };
        let result = match self.dispatch(request) {
            Reply::Now(result) => result,
            Reply::Later(future) => future.await,
            Reply::Encoded(raw) => {
                running.finish();
                return Ok(raw);
            }
        };
        running.finish();
        let result = if self.fixture.options.sorted_keys {
            result.map(sort_keys)
        } else {
            result
        };
        result.and_then(|value| {
            RawJson::encode(&value)
                .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
        })
    }

    /// The `big` result for `kib` KiB, encoded once per size in a row
    /// (a clone shares the text).
    fn big_result(&self, kib: u64) -> RawJson {
        let mut cached = lock(&self.fixture.big_result);
        match &*cached {
            Some((size, raw)) if *size == kib => raw.clone(),
            _ => {
                let value = text_result(&big_text(kib as usize * 1024));
                // A JSON value always encodes.
                let raw = RawJson::encode(&value)
                    .unwrap_or_else(|_| RawJson::from(mcp_proto::jsonrpc::empty_object()));
                *cached = Some((kib, raw.clone()));
                raw
            }
        }
    }

    fn notify(self: &Arc<Self>, route: Route, method: &str, params: Value) {
        let sent = match (self.context(&route), &self.peer) {
            (Some(context), _) => context.notify(method, Some(&params)),
            (None, Some(peer)) => peer.notify(method, Some(&params)),
            (None, None) => Err(PeerError::Closed),
        };
        if let Err(e) = sent {
            eprintln!("fixture: cannot send {method}: {e}");
        }
    }

    fn dispatch(self: &Arc<Self>, request: ClientRequest) -> Reply {
        let options = &self.fixture.options;
        if options.refuse_version
            && request.method != methods::SERVER_DISCOVER
            && request.era() == ProtocolEra::Modern
        {
            // --refuse-version: a server that offered 2026-07-28 in its
            // discover result and then refuses it on every request.
            let mut error = ErrorObject::new(
                error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                "protocol version \u{1b}[31mnot supported\u{1b}[0m here",
            );
            error.data = mcp_proto::jsonrpc::to_raw(&json!({"supported": ["2099-01-01"]})).ok();
            return Reply::Now(Err(error));
        }
        if request.method == methods::SERVER_DISCOVER || request.era() == ProtocolEra::Modern {
            return self.dispatch_modern(request);
        }
        let params: Value = match &request.params {
            Some(raw) => match serde_json::from_str(raw.get()) {
                Ok(value) => value,
                Err(e) => return Reply::Now(Err(ErrorObject::invalid_params(e.to_string()))),
            },
            None => Value::Null,
        };
        let id = request.id;
        Reply::Now(match request.method.as_str() {
            methods::TOOLS_LIST => self.list_tools(&params, false),
            methods::TOOLS_CALL => {
                return self.call_tool(id, params, request.progress_token, false);
            }
            methods::RESOURCES_LIST => Ok(self.fixture.resources()),
            methods::RESOURCES_TEMPLATES_LIST => Ok(self.fixture.resource_templates()),
            methods::RESOURCES_READ => self.fixture.read_resource(&params),
            methods::SKILLS_LIST if options.skills => Ok(catalog::skills()),
            methods::SKILLS_GET if options.skills => catalog::skill(&params),
            methods::PROMPTS_LIST => Ok(self.fixture.prompts()),
            methods::PROMPTS_GET
                if options.reference_catalog
                    && params.get("name").and_then(Value::as_str)
                        == Some(reference::mrtr::PROMPT) =>
            {
                return self.get_prompt_asking(Route::Related(id), &params);
            }
            methods::PROMPTS_GET => self.fixture.get_prompt(&params),
            methods::COMPLETION_COMPLETE if options.reference_catalog => {
                reference::complete(&params)
            }
            // The fixture's resources never change: a subscription is
            // accepted ("Server Features/Resources" §Subscriptions) and
            // never has an update to send.
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE
                if options.reference_catalog =>
            {
                let event = if request.method == methods::RESOURCES_SUBSCRIBE {
                    "subscribe"
                } else {
                    "unsubscribe"
                };
                eventlog::record_with(
                    options.event_log.as_deref(),
                    event,
                    &json!({"uri": params.get("uri")}),
                );
                Ok(json!({}))
            }
            methods::LOGGING_SET_LEVEL => self.set_level(id, &params),
            other => Err(ErrorObject::method_not_found(other)),
        })
    }

    /// `tools/list`, paginated with `--page-size` (MCP "Utilities/Pagination":
    /// cursors are opaque; an invalid one is `-32602`).
    fn list_tools(&self, params: &Value, modern: bool) -> Result<Value, ErrorObject> {
        let options = &self.fixture.options;
        eventlog::record(options.event_log.as_deref(), "tools-list");
        let calls = self.tools_list_calls.fetch_add(1, Ordering::Relaxed) + 1;
        if options.fail_tools_list_after.is_some_and(|n| calls > n) {
            return Err(ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!("tools/list #{calls} fails (--fail-tools-list-after)"),
            ));
        }
        if options.endless_empty_pages {
            // A new cursor every time, never a tool: only a client that
            // caps its pages stops.
            let next = params
                .get("cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.strip_prefix("empty:"))
                .and_then(|n| n.parse::<u64>().ok())
                .map_or(1, |n| n + 1);
            return Ok(json!({"tools": [], "nextCursor": format!("empty:{next}")}));
        }
        let (added, removed) = {
            let state = lock(&self.state);
            let added: Vec<Value> = state
                .added_tools
                .iter()
                .map(|name| catalog::added_tool(name))
                .collect();
            (added, state.removed_tools.clone())
        };
        let all = if modern {
            &self.fixture.modern_tools
        } else {
            &self.fixture.tools
        };
        let kept: Vec<Value>;
        let (base, added) = if removed.is_empty() {
            (all, added)
        } else {
            let present = |tool: &Value| {
                !removed
                    .iter()
                    .any(|name| tool["name"].as_str() == Some(name.as_str()))
            };
            kept = all.iter().filter(|t| present(t)).cloned().collect();
            (&kept, added.into_iter().filter(|t| present(t)).collect())
        };
        let total = base.len() + added.len();
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(cursor) => cursor
                .as_str()
                .and_then(|c| c.strip_prefix("page:"))
                .and_then(|offset| offset.parse::<usize>().ok())
                .filter(|offset| *offset <= total && options.page_size.is_some())
                .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor {cursor}")))?,
        };
        let end = options
            .page_size
            .map_or(total, |size| (start + size).min(total));
        let tools: Vec<&Value> = base
            .iter()
            .chain(&added)
            .skip(start)
            .take(end - start)
            .collect();
        let mut result = json!({"tools": tools});
        if let Some(size) = options.page_size {
            let next = if options.repeat_cursor && start == size {
                // The second page names the cursor that led to it: a client
                // that follows cursors blindly never stops.
                Some(start)
            } else {
                (end < total).then_some(end)
            };
            if let Some(next) = next {
                result["nextCursor"] = json!(format!("page:{next}"));
            }
        }
        if let Some(kib) = options.oversize_kib {
            let len = serde_json::to_string(&result).map_or(0, |s| s.len());
            let padding = (kib * 1024).saturating_sub(len);
            result["_meta"] = json!({"padding": "x".repeat(padding)});
        }
        Ok(result)
    }

    /// `tools/call` of a tool both eras share; `modern` sends list changes
    /// to subscriptions only.
    fn call_tool(
        self: &Arc<Self>,
        id: RequestId,
        params: Value,
        token: Option<ProgressToken>,
        modern: bool,
    ) -> Reply {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Reply::Now(Err(ErrorObject::invalid_params("tools/call needs a name")));
        };
        if self.is_removed(name) {
            return Reply::Now(Err(ErrorObject::invalid_params(format!(
                "unknown tool: {name}"
            ))));
        }
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let route = Route::Related(id.clone());
        if self.fixture.options.reference_catalog {
            if let Some(result) = reference::call(name) {
                return Reply::Now(Ok(result));
            }
            if let Some(own) = reference::alias(name, &args, modern) {
                if name == "test_tool_with_progress" {
                    self.open_request_stream(&route);
                }
                return self.call_tool(id, own, token, modern);
            }
            if name == reference::RECONNECTION && !modern {
                // The stream ends before the answer, which the client gets
                // on resuming it.
                self.close_request_stream(&route, self.fixture.options.retry);
                return Reply::Now(Ok(text_result("Reconnection test completed")));
            }
            if let Some(mut params) = reference::elicitation(name).filter(|_| !modern) {
                if self
                    .negotiated_version()
                    .is_some_and(ProtocolVersion::has_url_elicitation)
                {
                    params["mode"] = json!("form");
                }
                return self.ask_client(route, methods::ELICITATION_CREATE, Some(params));
            }
            if !modern && let Some(reply) = self.call_asking(route.clone(), name, &params) {
                return reply;
            }
            if name == "region_echo" && !modern {
                return Reply::Now(Ok(catalog::region_echo(&args)));
            }
            if (name == "test_tool_with_logging" || name == "test_logging_tool") && !modern {
                self.open_request_stream(&route);
                for message in reference::log_messages() {
                    self.notify(route.clone(), methods::NOTIFICATION_MESSAGE, message);
                }
                return Reply::Now(Ok(text_result("logged three messages")));
            }
        }
        let uint = |key: &str, default: u64| match args.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_u64()
                .ok_or(format!("`{key}` must be a non-negative integer")),
        };
        let result = match name {
            "echo" => match args.get("text").and_then(Value::as_str) {
                Some(text) => text_result(text),
                None => tool_error("`text` must be a string"),
            },
            "add" => add(&args),
            "slow" => {
                let ms = match uint("ms", 1000) {
                    Ok(ms) => ms,
                    Err(e) => return Reply::Now(Ok(tool_error(&e))),
                };
                return Reply::Later(Box::pin(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(text_result(&format!("slept {ms} ms")))
                }));
            }
            "progress" => {
                let (steps, ms) = match (uint("steps", 3), uint("ms", 0)) {
                    (Ok(steps), Ok(ms)) => (steps, ms),
                    (Err(e), _) | (_, Err(e)) => return Reply::Now(Ok(tool_error(&e))),
                };
                // With the token the session read from the request's `_meta`,
                // and none when the client asked for none.
                let this = Arc::clone(self);
                let report = move |step: u64| {
                    if let Some(token) = &token {
                        this.notify(
                            route.clone(),
                            methods::NOTIFICATION_PROGRESS,
                            json!({
                                "progressToken": token,
                                "progress": step,
                                "total": steps,
                                "message": format!("step {step} of {steps}")
                            }),
                        );
                    }
                };
                let done = text_result(&format!("done: {steps} steps"));
                if ms == 0 {
                    (1..=steps).for_each(report);
                    done
                } else {
                    return Reply::Later(Box::pin(async move {
                        for step in 1..=steps {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            report(step);
                        }
                        Ok(done)
                    }));
                }
            }
            "crash" => {
                eprintln!("fixture: crash tool called, exiting with status 1");
                std::process::exit(1);
            }
            "big" => match uint("kib", 1) {
                Ok(kib) if kib <= 256 * 1024 => return Reply::Encoded(self.big_result(kib)),
                Ok(_) => tool_error("`kib` is at most 262144"),
                Err(e) => tool_error(&e),
            },
            "image" => json!({
                "content": [{"type": "image", "data": catalog::TINY_PNG_BASE64, "mimeType": "image/png"}]
            }),
            "fail" => tool_error("fail: this tool always fails"),
            "add_tool" => self.add_tool(route, &args, modern),
            catalog::REMOVE_TOOL if self.fixture.options.remove_tool => {
                self.remove_tool(route, &args, modern)
            }
            catalog::STORM_TOOL if self.fixture.options.storm_tool => {
                let (count, ms) = match (uint("count", 0), uint("ms", 0)) {
                    (Ok(count), Ok(ms)) => (count, ms),
                    (Err(e), _) | (_, Err(e)) => return Reply::Now(Ok(tool_error(&e))),
                };
                self.storm(count, ms, modern);
                text_result(&format!("storm of {count} list changes started"))
            }
            catalog::HOSTILE_NAME if self.fixture.options.hostile_text => text_result("called"),
            "hostile_error" if self.fixture.options.hostile_text => {
                let mut error =
                    ErrorObject::new(error_codes::INTERNAL_ERROR, catalog::HOSTILE_ERROR);
                error.data =
                    serde_json::value::to_raw_value(&json!({"detail": "\x1b[2J\u{9b}"})).ok();
                return Reply::Now(Err(error));
            }
            "hostile_output" if self.fixture.options.hostile_text => catalog::hostile_output(),
            "long_error" if self.fixture.options.error_message_kib.is_some() => {
                // The session bounds error texts; the wire's fault paths
                // write this one whole, `--error-message-kib` long.
                let message = format!("{LONG_ERROR}eeee");
                return Reply::Now(Err(ErrorObject::new(error_codes::INTERNAL_ERROR, message)));
            }
            "ask_roots" => return self.ask_client(route, methods::ROOTS_LIST, None),
            "ask_sampling" => {
                let prompt = args
                    .get("prompt")
                    .and_then(Value::as_str)
                    .unwrap_or("Say hello.");
                let params = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 64
                });
                return self.ask_client(route, methods::SAMPLING_CREATE_MESSAGE, Some(params));
            }
            "ask_elicitation" => {
                let message = args
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("Please fill in the form.");
                let mut params = json!({
                    "message": message,
                    "requestedSchema": catalog::elicitation_schema()
                });
                // `mode` exists from 2025-11-25; older versions have form mode only.
                let version = self.negotiated_version();
                if version.is_some_and(ProtocolVersion::has_url_elicitation) {
                    params["mode"] = json!("form");
                }
                return self.ask_client(route, methods::ELICITATION_CREATE, Some(params));
            }
            other => {
                if let Some(index) =
                    catalog::generated_index(other, self.fixture.options.extra_tools)
                {
                    let query = args.get("query").and_then(Value::as_str).unwrap_or("");
                    text_result(&format!(
                        "{}: no entries match {query:?}",
                        catalog::generated_name(index)
                    ))
                } else if lock(&self.state).added_tools.iter().any(|t| t == other) {
                    text_result(args.get("text").and_then(Value::as_str).unwrap_or(""))
                } else {
                    return Reply::Now(Err(ErrorObject::invalid_params(format!(
                        "unknown tool: {other}"
                    ))));
                }
            }
        };
        Reply::Now(Ok(result))
    }

    fn add_tool(self: &Arc<Self>, route: Route, args: &Value, modern: bool) -> Value {
        let name = match tool_name(args) {
            Ok(name) => name,
            Err(error) => return error,
        };
        {
            let mut state = lock(&self.state);
            let exists = catalog::is_builtin(name)
                || catalog::is_modern_only(name)
                || catalog::generated_index(name, self.fixture.options.extra_tools).is_some()
                || state.added_tools.iter().any(|t| t == name);
            if exists {
                return tool_error(&format!("a tool called {name} already exists"));
            }
            state.added_tools.push(name.to_owned());
        }
        // Sent before the response, so that a client sees the notification
        // by the time the call returns on transports that keep order.
        self.tools_changed((!modern).then_some(route));
        text_result(&format!("added tool {name}"))
    }

    /// Adds the next `signal_NNNN` echo tool and sends
    /// `notifications/tools/list_changed` on its own (no call asked for
    /// it): `--add-tool-on-sigusr1`.
    pub(crate) fn add_signal_tool(self: &Arc<Self>) {
        {
            let mut state = lock(&self.state);
            let n = state
                .added_tools
                .iter()
                .filter(|t| t.starts_with("signal_"))
                .count();
            state.added_tools.push(format!("signal_{:04}", n + 1));
        }
        self.tools_changed(Some(Route::Standalone));
    }

    /// Whether `remove_tool` took `name` out of the list.
    fn is_removed(&self, name: &str) -> bool {
        lock(&self.state).removed_tools.iter().any(|t| t == name)
    }

    /// `remove_tool`: takes a tool out of tools/list (itself included) and
    /// sends the change before the response, as `add_tool` does.
    fn remove_tool(self: &Arc<Self>, route: Route, args: &Value, modern: bool) -> Value {
        let name = match tool_name(args) {
            Ok(name) => name,
            Err(error) => return error,
        };
        {
            let mut state = lock(&self.state);
            if state.removed_tools.iter().any(|t| t == name) {
                return tool_error(&format!("the tool {name} was removed already"));
            }
            state.removed_tools.push(name.to_owned());
        }
        self.tools_changed((!modern).then_some(route));
        text_result(&format!("removed tool {name}"))
    }

    /// `list_changed_storm`: adds `count` tools one by one, each followed by
    /// `notifications/tools/list_changed`, on a schedule of `ms` apart kept
    /// against the start (no drift), in a task of its own: the call has
    /// already been answered, so the notifications are standalone.
    fn storm(self: &Arc<Self>, count: u64, ms: u64, modern: bool) {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            for i in 0..count {
                tokio::time::sleep_until(start + Duration::from_millis(i * ms)).await;
                let name = format!("storm_{:04}", i + 1);
                {
                    let mut state = lock(&this.state);
                    if !state.added_tools.contains(&name) {
                        state.added_tools.push(name);
                    }
                }
                this.tools_changed((!modern).then_some(Route::Standalone));
            }
        });
    }

    /// The tool list changed: `notifications/tools/list_changed` on `legacy`
    /// (the handshake era's route) if given, and on every subscription that
    /// asked for it.
    fn tools_changed(self: &Arc<Self>, legacy: Option<Route>) {
        if let Some(route) = legacy {
            self.notify(route, methods::NOTIFICATION_TOOLS_LIST_CHANGED, json!({}));
        }
        self.broadcast(methods::NOTIFICATION_TOOLS_LIST_CHANGED, |f| {
            f.tools_list_changed == Some(true)
        });
    }

    /// Sends a request to the client (roots, sampling, elicitation) whatever
    /// capabilities it declared, since the fixture exists to test how a
    /// client answers, including with `-32601`. The tool's result reports
    /// the client's answer: its result as text and structured content, or
    /// its error as a tool error.
    fn ask_client(
        self: &Arc<Self>,
        route: Route,
        method: &'static str,
        params: Option<Value>,
    ) -> Reply {
        let context = self.context(&route);
        let peer = self.peer.clone();
        Reply::Later(Box::pin(async move {
            let answer = match (context, peer) {
                (Some(context), _) => context.request(method, params.as_ref(), None).await,
                (None, Some(peer)) => peer.request(method, params.as_ref(), None).await,
                (None, None) => Err(PeerError::Closed),
            };
            Ok(match answer {
                Ok(answer) => {
                    let answer: Value = answer.decode().unwrap_or(Value::Null);
                    json!({
                        "content": [{"type": "text", "text": answer.to_string()}],
                        "structuredContent": answer
                    })
                }
                Err(PeerError::Request(RequestError::Rpc(error))) => tool_error(&format!(
                    "the client answered {method} with error {}: {}",
                    error.code, error.message
                )),
                Err(error) => tool_error(&format!("no answer to {method}: {error}")),
            })
        }))
    }

    /// `logging/setLevel`: notes the level in the event log (`set-level`)
    /// and confirms with one `notifications/message` at the level asked
    /// for, so that the client always lets it through.
    fn set_level(self: &Arc<Self>, id: RequestId, params: &Value) -> Result<Value, ErrorObject> {
        const LEVELS: [&str; 8] = [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ];
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .filter(|level| LEVELS.contains(level))
            .ok_or_else(|| ErrorObject::invalid_params("`level` must be a syslog level name"))?;
        eventlog::record_with(
            self.fixture.options.event_log.as_deref(),
            "set-level",
            &json!({"level": level}),
        );
        self.notify(
            Route::Related(id),
            methods::NOTIFICATION_MESSAGE,
            json!({
                "level": level,
                "logger": "mcp-fixture-server",
                "data": format!("log level set to {level}")
            }),
        );
        Ok(json!({}))
    }
}

/// The fixture under `mcp_transport`'s server core: a handshake-era
/// request goes to the connection's own [`Server`], a stateless-era one to
/// the server every stateless request shares, so that runtime-added tools
/// and subscriptions span requests as on a real stateless server.
pub(crate) struct CoreHandler {
    pub(crate) session: Arc<Server>,
    pub(crate) stateless: Arc<Server>,
}

#[async_trait::async_trait]
impl ServerHandler for CoreHandler {
    async fn request(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let server = if request.era() == ProtocolEra::Modern {
            &self.stateless
        } else {
            &self.session
        };
        server.answer_under_core(request, context).await
    }
}

/// A request being answered under the server core: forgets its context
/// when it ends, and logs it `cancelled` when it ends unanswered.
struct Running {
    server: Arc<Server>,
    id: Option<RequestId>,
}

impl Running {
    fn finish(&mut self) {
        if let Some(id) = self.id.take() {
            self.forget(&id);
        }
    }

    fn forget(&self, id: &RequestId) {
        lock(&self.server.contexts).remove(id);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.forget(&id);
            self.server.end_subscription(&id, "cancelled");
            if self.server.logs_cancels {
                self.server.log_cancelled(&id);
            }
        }
    }
}

fn add(args: &Value) -> Value {
    let (Some(a), Some(b)) = (args.get("a"), args.get("b")) else {
        return tool_error("`a` and `b` must be numbers");
    };
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => a.checked_add(b).map(Value::from),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) => serde_json::Number::from_f64(a + b).map(Value::Number),
            _ => None,
        },
    };
    match sum {
        Some(sum) => json!({
            "content": [{"type": "text", "text": sum.to_string()}],
            "structuredContent": {"sum": sum}
        }),
        None => tool_error("`a` and `b` must be numbers with a finite sum"),
    }
}

fn read_resource(params: &Value) -> Result<Value, ErrorObject> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if uri == catalog::README_URI {
        Ok(json!({
            "contents": [{"uri": uri, "mimeType": "text/plain", "text": catalog::README_TEXT}]
        }))
    } else if let Some(text) = catalog::skill_file(uri) {
        Ok(json!({
            "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]
        }))
    } else {
        let mut error = ErrorObject::new(error_codes::RESOURCE_NOT_FOUND, "resource not found");
        error.data = mcp_proto::jsonrpc::to_raw(&json!({"uri": uri})).ok();
        Err(error)
    }
}

fn get_prompt(params: &Value) -> Result<Value, ErrorObject> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name != catalog::GREET_PROMPT {
        return Err(ErrorObject::invalid_params(format!(
            "unknown prompt: {name}"
        )));
    }
    let who = params
        .pointer("/arguments/name")
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorObject::invalid_params("greet needs the argument `name`"))?;
    Ok(json!({
        "description": "Greets someone by name.",
        "messages": [{
            "role": "user",
            "content": {"type": "text", "text": format!("Please greet {who} warmly.")}
        }]
    }))
}

/// `value` with every object's keys in sorted order.
fn sort_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// A tool execution error: a result with `isError: true`, which the model
/// sees, rather than a JSON-RPC error (MCP "Server/Tools" §Error Handling).
fn tool_error(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// `len` bytes of printable ASCII.
fn big_text(len: usize) -> String {
    const PATTERN: &str = "abcdefghijklmnopqrstuvwxyz012345";
    let mut text = PATTERN.repeat(len / PATTERN.len() + 1);
    text.truncate(len);
    text
}

/// Locks a mutex, going on after a panic elsewhere: every critical section
/// here leaves the data consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The non-empty `name` argument of `add_tool` and `remove_tool`, or the
/// tool error that says it is missing.
fn tool_name(args: &Value) -> Result<&str, Value> {
    args.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| tool_error("`name` must be a non-empty string"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_keeps_integers_exact() {
        assert_eq!(
            add(&json!({"a": 2, "b": 3}))["structuredContent"]["sum"],
            json!(5)
        );
        assert_eq!(
            add(&json!({"a": 0.5, "b": 1}))["structuredContent"]["sum"],
            json!(1.5)
        );
        assert_eq!(add(&json!({"a": "x", "b": 1}))["isError"], json!(true));
    }

    #[test]
    fn big_text_has_the_exact_length() {
        for len in [0, 1, 31, 32, 33, 1024, 1024 * 1024] {
            assert_eq!(big_text(len).len(), len);
        }
    }
}

//! Scripted in-memory MCP servers behind a `TransportFactory`, and helpers to drive a manager on a paused clock.
//!
//! A [`Fake`] is a factory: for each connect it looks up the [`Script`] of
//! the server id and starts a `mcp_transport::scripted::ScriptedServer`
//! whose handlers answer `initialize`, `tools/list` (paginated),
//! `resources/list`, `prompts/list`, `tools/call` and `ping` as the script
//! says (delays on the tokio clock, hangs, failures). A test changes a
//! script at any time and sends [`Control`]s to the live connection
//! (notifications, a hang-up, a session expiry). The fake records what it
//! saw, including how many `initialize` handshakes were in progress at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use mcp_config::{HttpConfig, ResolvedConfig, ServerConfig, StdioConfig, TransportConfig};
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::types::Tool;
use mcp_proto::{Message, RequestId, methods};
use mcp_transport::scripted::{Reply, ScriptedServer, ServerHandle};
use mcp_transport::{Inbound, MemoryTransport, Transport, TransportError};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::{
    ConnectError, ErrorCode, ManagerEvent, ManagerOptions, McpManager, MemoryToolCache,
    ServerStatus, ToolCache,
};

/// How one fake server behaves. Read at every request, so changes apply
/// to the live connection.
#[derive(Clone, Debug)]
pub(crate) struct Script {
    pub(crate) tools: Vec<Tool>,
    pub(crate) page_size: Option<usize>,
    pub(crate) repeat_cursor: bool,
    pub(crate) tools_capability: bool,
    pub(crate) resources: Option<Vec<Value>>,
    pub(crate) prompts: Option<Vec<Value>>,
    pub(crate) instructions: Option<String>,
    pub(crate) init_delay: Duration,
    pub(crate) hang_initialize: bool,
    pub(crate) reject_initialize: bool,
    pub(crate) list_delay: Duration,
    /// `tools/list` calls beyond this many fail with -32603.
    pub(crate) fail_list_after: Option<usize>,
    /// Connects fail with this code (and are counted).
    pub(crate) connect_error: Option<ErrorCode>,
    /// The transport reports HTTP 401 for every request.
    pub(crate) reject_auth: bool,
    /// How long a `tools/call` takes before it answers.
    pub(crate) call_delay: Duration,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            tools: tools("tool", 2),
            page_size: None,
            repeat_cursor: false,
            tools_capability: true,
            resources: None,
            prompts: None,
            instructions: None,
            init_delay: Duration::ZERO,
            hang_initialize: false,
            reject_initialize: false,
            list_delay: Duration::ZERO,
            fail_list_after: None,
            connect_error: None,
            reject_auth: false,
            call_delay: Duration::ZERO,
        }
    }
}

/// `n` tools called `{prefix}_0000`, `{prefix}_0001`, ...
pub(crate) fn tools(prefix: &str, n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| Tool::new(format!("{prefix}_{i:04}")))
        .collect()
}

/// What the test can tell a live connection.
#[derive(Debug)]
pub(crate) enum Control {
    /// Send a notification with this method.
    Notify(&'static str),
    /// Send a notification with this method and these params.
    NotifyWith(&'static str, Value),
    /// Hang up (the process "dies").
    Close,
    /// The transport reports the session as expired (HTTP 404).
    Expire,
}

/// What the fake saw of one server.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) connects: usize,
    pub(crate) initializes: usize,
    pub(crate) list_calls: usize,
    /// Connections whose far end saw the client hang up.
    pub(crate) closed_by_client: usize,
}

/// The live connection of one server: its scripted far end, and what makes
/// the client's end report the session expired.
struct Live {
    server: ServerHandle,
    expire: Arc<Notify>,
}

#[derive(Default)]
struct FakeState {
    scripts: HashMap<String, Script>,
    stats: HashMap<String, Stats>,
    initializing: usize,
    max_initializing: usize,
    live: HashMap<String, Live>,
}

/// The factory of scripted servers. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Fake {
    state: Arc<Mutex<FakeState>>,
    changed: Arc<Notify>,
}

impl Fake {
    pub(crate) fn new() -> Fake {
        Fake::default()
    }

    fn lock(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets (or replaces) the script of server `id`.
    pub(crate) fn script(&self, id: &str, script: Script) {
        self.lock().scripts.insert(id.to_owned(), script);
    }

    /// Changes the script of server `id`.
    pub(crate) fn edit(&self, id: &str, f: impl FnOnce(&mut Script)) {
        f(self.lock().scripts.entry(id.to_owned()).or_default());
    }

    pub(crate) fn stats(&self, id: &str) -> Stats {
        self.lock().stats.get(id).cloned().unwrap_or_default()
    }

    /// The most `initialize` handshakes that were in progress at once.
    pub(crate) fn max_initializing(&self) -> usize {
        self.lock().max_initializing
    }

    /// Sends a control to the latest connection of `id`.
    pub(crate) fn control(&self, id: &str, control: Control) {
        let state = self.lock();
        let Some(live) = state.live.get(id) else {
            panic!("server {id} has no live connection");
        };
        match control {
            Control::Notify(method) => live.server.notify(method, None),
            Control::NotifyWith(method, params) => live.server.notify(method, Some(params)),
            Control::Close => live.server.hang_up(),
            Control::Expire => live.expire.notify_one(),
        }
    }

    /// Waits (on the tokio clock, bounded) until `f(stats)` holds.
    pub(crate) async fn until_stats(&self, id: &str, f: impl Fn(&Stats) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(3600);
        loop {
            let notified = self.changed.notified();
            if f(&self.stats(id)) {
                return;
            }
            tokio::time::timeout_at(deadline, notified)
                .await
                .unwrap_or_else(|_| panic!("{id}: stats never matched: {:?}", self.stats(id)));
        }
    }

    fn record(&self, id: &str, f: impl FnOnce(&mut Stats)) {
        f(self.lock().stats.entry(id.to_owned()).or_default());
        self.changed.notify_waiters();
    }

    /// The script of `id` as it is now.
    fn script_of(&self, id: &str) -> Script {
        self.lock().scripts.get(id).cloned().unwrap_or_default()
    }

    /// The far end of one connection to `id`: each handler reads the
    /// script as the request arrives.
    fn server(&self, id: &str) -> ScriptedServer {
        let on = |answer: fn(&Fake, &str, &Value) -> Reply| {
            let (fake, id) = (self.clone(), id.to_owned());
            move |params: &Value| answer(&fake, &id, params)
        };
        let (fake, server_id) = (self.clone(), id.to_owned());
        ScriptedServer::new()
            .on_async(methods::INITIALIZE, move |params| {
                fake.clone().initialize(server_id.clone(), params)
            })
            .on(methods::TOOLS_LIST, on(Fake::tools_list))
            .on(
                methods::RESOURCES_LIST,
                on(|fake, id, _| {
                    Reply::result(
                        json!({"resources": fake.script_of(id).resources.unwrap_or_default()}),
                    )
                }),
            )
            .on(
                methods::PROMPTS_LIST,
                on(|fake, id, _| {
                    Reply::result(
                        json!({"prompts": fake.script_of(id).prompts.unwrap_or_default()}),
                    )
                }),
            )
            .on(
                methods::TOOLS_CALL,
                on(|fake, id, _| {
                    Reply::result(json!({"content": [{"type": "text", "text": "done"}]}))
                        .after(fake.script_of(id).call_delay)
                }),
            )
    }

    async fn initialize(self, id: String, params: Value) -> Reply {
        let script = self.script_of(&id);
        self.record(&id, |s| s.initializes += 1);
        if script.hang_initialize {
            return Reply::Never;
        }
        {
            let mut state = self.lock();
            state.initializing += 1;
            state.max_initializing = state.max_initializing.max(state.initializing);
        }
        tokio::time::sleep(script.init_delay).await;
        self.lock().initializing -= 1;
        if script.reject_initialize {
            return Reply::error(
                error_codes::INTERNAL_ERROR,
                "scripted refusal with sk-SECRET-FROM-SERVER",
            );
        }
        let mut capabilities = json!({});
        if script.tools_capability {
            capabilities["tools"] = json!({"listChanged": true});
        }
        if script.resources.is_some() {
            capabilities["resources"] = json!({"listChanged": true});
        }
        if script.prompts.is_some() {
            capabilities["prompts"] = json!({"listChanged": true});
        }
        let mut result = json!({
            "protocolVersion": params["protocolVersion"],
            "capabilities": capabilities,
            "serverInfo": {"name": format!("fake-{id}"), "version": "1.0.0"},
        });
        if let Some(instructions) = &script.instructions {
            result["instructions"] = json!(instructions);
        }
        Reply::result(result)
    }

    fn tools_list(&self, id: &str, params: &Value) -> Reply {
        let script = self.script_of(id);
        let calls = {
            let mut state = self.lock();
            let stats = state.stats.entry(id.to_owned()).or_default();
            stats.list_calls += 1;
            stats.list_calls
        };
        self.changed.notify_waiters();
        let reply = if script.fail_list_after.is_some_and(|n| calls > n) {
            Reply::error(error_codes::INTERNAL_ERROR, "scripted tools/list failure")
        } else {
            Reply::result(tools_page(&script, params))
        };
        reply.after(script.list_delay)
    }
}

#[async_trait]
impl crate::TransportFactory for Fake {
    async fn connect(
        &self,
        server: &ResolvedConfig,
        _deadline: Instant,
    ) -> Result<Box<dyn Transport>, ConnectError> {
        let id = server.id.clone();
        let script = self.lock().scripts.get(&id).cloned().unwrap_or_default();
        self.record(&id, |s| s.connects += 1);
        if let Some(code) = script.connect_error {
            return Err(ConnectError::new(
                code,
                "scripted connect failure",
                "transport.command",
            ));
        }
        let (client_end, _seen, server) = self.server(&id).spawn_with_handle();
        let expire = Arc::new(Notify::new());
        let live = Live {
            server: server.clone(),
            expire: Arc::clone(&expire),
        };
        self.lock().live.insert(id.clone(), live);
        tokio::spawn({
            let fake = self.clone();
            async move {
                if server.ended().await {
                    fake.record(&id, |s| s.closed_by_client += 1);
                }
            }
        });
        let (rejections_tx, rejections_rx) = mpsc::unbounded_channel();
        Ok(Box::new(FakeTransport {
            inner: client_end,
            expire,
            expired: AtomicBool::new(false),
            reject_auth: script.reject_auth,
            rejections_tx,
            rejections_rx: tokio::sync::Mutex::new(rejections_rx),
        }))
    }
}

/// The client end: an in-memory transport that can also report a session
/// expiry or an HTTP 401 the way the HTTP transport does.
struct FakeTransport {
    inner: MemoryTransport,
    expire: Arc<Notify>,
    expired: AtomicBool,
    reject_auth: bool,
    rejections_tx: mpsc::UnboundedSender<RequestId>,
    rejections_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<RequestId>>,
}

#[async_trait]
impl Transport for FakeTransport {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        if self.reject_auth
            && let Message::Request(request) = &message
        {
            let _ = self.rejections_tx.send(request.id.clone());
            return Ok(());
        }
        self.inner.send(message).await
    }

    async fn recv(&self) -> Inbound {
        if self.expired.load(Ordering::Relaxed) {
            return Inbound::Closed(Some(TransportError::SessionExpired));
        }
        let mut rejections = self.rejections_rx.lock().await;
        tokio::select! {
            inbound = self.inner.recv() => inbound,
            () = self.expire.notified() => {
                self.expired.store(true, Ordering::Relaxed);
                Inbound::Closed(Some(TransportError::SessionExpired))
            }
            Some(id) = rejections.recv() => Inbound::Undelivered {
                id: Some(id),
                error: TransportError::Http {
                    status: 401,
                    body: "invalid token sk-SECRET-FROM-BODY".to_owned(),
                },
            },
        }
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.inner.close().await
    }
}

fn tools_page(script: &Script, params: &Value) -> Value {
    let start = params
        .get("cursor")
        .and_then(Value::as_str)
        .and_then(|c| c.strip_prefix('c'))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let all = &script.tools;
    let end = script
        .page_size
        .map_or(all.len(), |size| (start + size).min(all.len()));
    let page: Vec<&Tool> = all.iter().skip(start).take(end - start).collect();
    let mut result = json!({"tools": page});
    if let Some(size) = script.page_size {
        let next = if script.repeat_cursor && start == size {
            Some(start)
        } else {
            (end < all.len()).then_some(end)
        };
        if let Some(next) = next {
            result["nextCursor"] = json!(format!("c{next}"));
        }
    }
    result
}

// ---------------------------------------------------------------------------
// Managers and configs

/// A stdio config whose command the fake never runs.
pub(crate) fn stdio(id: &str) -> ServerConfig {
    ServerConfig::new(
        id,
        TransportConfig::Stdio(StdioConfig::new(format!("fake-{id}"))),
    )
}

/// An HTTP config.
pub(crate) fn http(id: &str) -> ServerConfig {
    ServerConfig::new(
        id,
        TransportConfig::Http(HttpConfig::new(format!("https://fake.example/{id}"))),
    )
}

pub(crate) fn manager(fake: &Fake, options: ManagerOptions) -> McpManager {
    McpManager::builder()
        .options(options)
        .factory(fake.clone())
        .environment(HashMap::<String, String>::new())
        .build()
}

pub(crate) fn manager_with_cache(
    fake: &Fake,
    options: ManagerOptions,
    cache: Arc<MemoryToolCache>,
) -> McpManager {
    McpManager::builder()
        .options(options)
        .factory(fake.clone())
        .cache(cache as Arc<dyn ToolCache>)
        .environment(HashMap::<String, String>::new())
        .build()
}

pub(crate) fn background() -> ManagerOptions {
    ManagerOptions {
        startup: crate::StartupMode::Background,
        ..ManagerOptions::default()
    }
}

/// The fingerprint the manager computes for `config` (empty environment).
pub(crate) fn fingerprint_of(config: &ServerConfig) -> String {
    mcp_config::fingerprint(
        &mcp_config::resolve(config, &HashMap::<String, String>::new()).expect("resolvable"),
    )
}

/// Waits (on the tokio clock, bounded by an hour: on a paused clock that
/// costs nothing) until the status of `id` matches.
pub(crate) async fn until(manager: &McpManager, id: &str, f: impl Fn(&ServerStatus) -> bool) {
    until_within(manager, id, f, Duration::from_secs(3600)).await;
}

/// Waits at most `bound` until the status of `id` matches.
pub(crate) async fn until_within(
    manager: &McpManager,
    id: &str,
    f: impl Fn(&ServerStatus) -> bool,
    bound: Duration,
) {
    let mut changed = manager.core().changed.subscribe();
    let deadline = Instant::now() + bound;
    loop {
        if manager.status(id).as_ref().is_some_and(&f) {
            return;
        }
        match tokio::time::timeout_at(deadline, changed.changed()).await {
            Ok(Ok(())) => {}
            _ => panic!("{id}: status never matched; it is {:?}", manager.status(id)),
        }
    }
}

pub(crate) async fn until_ready(manager: &McpManager, id: &str) {
    until(manager, id, |s| *s == ServerStatus::Ready).await;
}

/// The code of the server's error, if it has one.
pub(crate) fn error_code(manager: &McpManager, id: &str) -> Option<ErrorCode> {
    manager.status(id).and_then(|s| s.error().map(|e| e.code))
}

/// Every event received so far.
pub(crate) fn drain(
    events: &mut tokio::sync::broadcast::Receiver<ManagerEvent>,
) -> Vec<ManagerEvent> {
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(event);
    }
    out
}

/// The statuses `id` went through, from a list of events.
pub(crate) fn statuses_of(events: &[ManagerEvent], id: &str) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|event| match event {
            ManagerEvent::StatusChanged {
                id: server, status, ..
            } if server == id => Some(status.as_str()),
            _ => None,
        })
        .collect()
}

/// How many catalog swaps `id` had, from a list of events.
pub(crate) fn swaps_of(events: &[ManagerEvent], id: &str) -> usize {
    events
        .iter()
        .filter(|event| matches!(event, ManagerEvent::CatalogSwapped { id: server, .. } if server == id))
        .count()
}

//! The host session: binds the manager's ready tools to model names once
//! per prompt, runs calls through validation, approval and dispatch, and
//! keeps session grants and pending approvals honest as catalogs change.
//!
//! Each user prompt snapshots ready tools before the model runs
//! ([`McpSession::bind`]); an in-flight catalog never changes, and a call
//! whose catalog lifetime ended meanwhile is refused ([`CallFailure::Stale`]).
//! [`McpSession::refresh`] drops every MCP tool and rebinds the
//! current ones, and a session that waited for a server (a deferred tool)
//! rebinds on its own when that server becomes ready.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, Weak};
use std::time::Duration;

use mcp_manager::HandleError;
use mcp_proto::types::{CallToolRequestParams, TaskSupport, Tool};
use mcp_transport::{CallOptions, ClientError};
use serde_json::{Map, Value};
use tokio::sync::{broadcast, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::approval::{
    ApprovalDecision, ApprovalEvent, ApprovalHandler, ApprovalRequest, ApprovalResult,
    ApprovalSource, Grant, PermissionPreset,
};
use crate::backend::{
    Availability, Backend, BackendEvent, CatalogData, DeferredCatalog, ReadyServer,
};
use crate::cancel::CancelToken;
use crate::names::{NameOptions, ToolNames, UnusableReason, UnusableTool};
use crate::prompt::{self, ServerRow, ToolAccess};
use crate::result::{CallFailure, ContentMode, NotApproved, ToolOutcome, ToolResult};
use crate::schema::ArgumentSchema;
use crate::search::{self, IndexEntry, SearchHit};
use crate::tool::{ModelTool, ToolCall};

mod approvals;
mod binding;
mod calls;
mod facts;
pub(crate) mod loader;
mod tools;

pub(crate) use binding::{Binding, BoundTool};
pub(crate) use calls::Target;
pub use tools::{DeclarationNote, DeferredTool, LiveTool};

/// Options of a [`McpSession`]. Every field has the default documented on
/// it, and a setter named after it:
///
/// ```
/// use std::time::Duration;
/// use mcp_toolbridge::{NameOptions, SessionOptions};
///
/// let options = SessionOptions::default()
///     .call_timeout(Some(Duration::from_secs(120)))
///     .names(NameOptions::with_max_len(48))
///     .search_limit(5);
/// assert_eq!(options.names.max_len, 48);
/// ```
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct SessionOptions {
    /// Model-name rules. Default: 64 characters, 8-digit suffixes.
    pub names: NameOptions,
    /// The total deadline of one call on the wire, after approval. Default
    /// 60 s; `None` takes the connection's request timeout. A server whose
    /// configuration sets its own (`call_timeout_ms`) uses that instead.
    /// Calls are never retried.
    pub call_timeout: Option<Duration>,
    /// How long a deferred tool or `load_mcp` waits for its server to
    /// connect, and a live tool for its server to reconnect (an expired
    /// session being renewed, say), at most [`SessionOptions::call_timeout`]
    /// when that is set. Default 15 s (the manager's discovery deadline).
    pub connect_wait: Duration,
    /// How long the approval handler may take. Default 5 minutes; `None`
    /// waits for as long as it takes. A timeout means no call.
    pub approval_timeout: Option<Duration>,
    /// How audio, resource links and embedded resources reach the host.
    /// Default: as JSON text.
    pub content: ContentMode,
    /// The permission preset the session starts with. Default read only.
    pub preset: PermissionPreset,
    /// Whether approval requests offer "allow this tool for this session".
    /// Default true.
    pub offer_session_grants: bool,
    /// The servers this session may use (server-level trust); a
    /// server outside the list contributes no tools, no loader entries and
    /// no prompt row. Default `None`: every server.
    pub allowed_servers: Option<BTreeSet<String>>,
    /// The switch for the whole MCP tool channel: when off, the session
    /// binds no tools, offers no loader tools and refuses every call.
    /// Default on.
    pub mcp_enabled: bool,
    /// How the prompt section tells the model to reach the tools. Default
    /// [`ToolAccess::Direct`].
    pub access: ToolAccess,
    /// The host's workspace, for the manager's snapshot (project-level
    /// servers are visible only inside their project). Default `None`.
    pub workspace: Option<PathBuf>,
    /// How many hits `search_tools` returns at most. Default 10.
    pub search_limit: usize,
    /// What a call of a tool whose catalog lifetime has ended does. Default
    /// false: it is refused as stale ([`CallFailure::Stale`];:
    /// execution checks reject invalidated calls). True: it runs if the
    /// server's current catalog has the same tool with an identical
    /// definition, under the current lifetime (approval is asked again, the
    /// refresh having ended the grants). Servers that refresh right after
    /// connecting (server-everything does) make this worth having.
    pub follow_unchanged_tools: bool,
    /// The hard limit of one call whose deadline the server's progress
    /// keeps restarting (a call with [`ToolCall::progress`](crate::ToolCall::progress)
    /// set): however often it reports, it ends after this long. Never less
    /// than the call's own deadline. Default 10 minutes.
    pub max_call_time: Duration,
    /// How much of one tool result reaches the model; the rest is spilled
    /// to a file the model reads with [`READ_MCP_RESULT`](crate::READ_MCP_RESULT)
    /// (register [`McpSession::result_tools`]). Default
    /// [`ResultBudget::default`](crate::ResultBudget): 100,000 characters.
    /// `None`: results reach the host whole (a person's terminal, say).
    pub budget: Option<crate::ResultBudget>,
    /// How tools' input schemas are declared to the model: the subset of
    /// JSON Schema its provider accepts ([`input_schema`](ModelTool::input_schema)
    /// of the bound, loader and catalog tools). Calls are checked against
    /// the servers' own schemas whatever the dialect. Default
    /// [`SchemaDialect::AsIs`](crate::SchemaDialect::AsIs).
    pub schema_dialect: crate::SchemaDialect,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            names: NameOptions::default(),
            call_timeout: Some(Duration::from_secs(60)),
            connect_wait: Duration::from_secs(15),
            approval_timeout: Some(Duration::from_secs(300)),
            content: ContentMode::default(),
            preset: PermissionPreset::default(),
            offer_session_grants: true,
            allowed_servers: None,
            mcp_enabled: true,
            access: ToolAccess::default(),
            workspace: None,
            search_limit: 10,
            follow_unchanged_tools: false,
            max_call_time: Duration::from_secs(600),
            budget: Some(crate::ResultBudget::default()),
            schema_dialect: crate::SchemaDialect::AsIs,
        }
    }
}

/// One host session's view of MCP: the tools bound for the current prompt,
/// the permission state, session grants and approval events. Cheap to
/// clone; clones share everything.
///
/// Create it inside a tokio runtime: it follows the manager's events on a
/// task of its own (to revoke grants, cancel pending approvals and rebind
/// late servers), which ends when the last clone is dropped.
#[derive(Clone)]
pub struct McpSession {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for McpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("McpSession")
            .field("generation", &state.binding.generation)
            .field("tools", &state.binding.tools.len())
            .field("preset", &state.preset)
            .field("grants", &state.grants.len())
            .field("mcp_enabled", &state.enabled)
            .finish_non_exhaustive()
    }
}

/// The tools bound for one prompt, and the prompt section that goes with
/// them. Never changes: a later [`McpSession::bind`] makes a new one.
#[derive(Clone)]
pub struct ToolSet {
    binding: Arc<Binding>,
    tools: Vec<Arc<dyn ModelTool>>,
    section: String,
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSet")
            .field("generation", &self.binding.generation)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl ToolSet {
    /// The MCP tools, live and deferred, sorted by model name.
    pub fn tools(&self) -> &[Arc<dyn ModelTool>] {
        &self.tools
    }

    /// The tool with model name `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ModelTool>> {
        let index = self.binding.position(name)?;
        self.tools.get(index)
    }

    /// Calls the tool the model named, as [`ModelTool::call`] does; a
    /// name this set does not hold fails with [`CallFailure::UnknownTool`]
    /// (nothing is sent). This is how a host dispatches a model's tool call.
    pub async fn call(&self, name: &str, call: ToolCall) -> ToolOutcome {
        match self.get(name) {
            Some(tool) => tool.call(call).await,
            None => ToolOutcome::failed(CallFailure::UnknownTool {
                name: name.to_owned(),
            }),
        }
    }

    /// The `<mcp_servers>` section for this prompt (empty when no ready
    /// server has tools).
    pub fn prompt_section(&self) -> &str {
        &self.section
    }

    /// Tools that were not bound, and why (sorted by server and tool).
    pub fn unusable(&self) -> &[UnusableTool] {
        &self.binding.unusable
    }

    /// Which binding this is; every binding installed increments it (a
    /// rebind overtaken by a newer one installs nothing).
    pub fn generation(&self) -> u64 {
        self.binding.generation
    }

    /// The server's own declaration of the tool behind a model name.
    pub(crate) fn declaration(&self, name: &str) -> Option<&mcp_proto::types::Tool> {
        Some(self.binding.get(name)?.tool())
    }

    /// The raw `(server, tool)` behind a model name.
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        let bound = self.binding.get(name)?;
        Some((&bound.server, &bound.tool().name))
    }

    /// Ranks this prompt's tools against `query` (names and descriptions).
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        search::search(self.binding.index(), query, limit)
    }

    /// One tool's full description and input schema, as JSON.
    pub fn describe(&self, name: &str) -> Option<Value> {
        self.binding.describe(name)
    }
}

impl McpSession {
    pub(crate) fn with_backend(backend: Arc<dyn Backend>, options: SessionOptions) -> Self {
        let state = State {
            preset: options.preset,
            handler: None,
            allowed: options.allowed_servers.clone(),
            enabled: options.mcp_enabled,
            binding: Arc::new(Binding::empty(0)),
            installed: 0,
            deferred: Vec::new(),
            grants: HashSet::new(),
            pending: HashMap::new(),
            schemas: HashMap::new(),
            skills: HashMap::new(),
            watching: HashSet::new(),
            event_task: None,
        };
        let inner = Arc::new(Inner {
            backend: RwLock::new(backend),
            options,
            state: Mutex::new(state),
            approvals: broadcast::channel(256).0,
            changed: watch::Sender::new(0),
            next_request: AtomicU64::new(1),
            snapshots: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            spills: crate::budget::Spills::default(),
            declarations: tools::Declarations::default(),
        });
        inner.start_events();
        McpSession { inner }
    }

    /// Follows another backend from now on. Catalog lifetimes are unique
    /// only within one backend, so everything bound to the old one ends:
    /// grants, pending approvals, compiled schemas, and the tools of earlier
    /// bindings (their calls are refused as stale).
    pub(crate) fn replace_backend(&self, backend: Arc<dyn Backend>) {
        *self
            .inner
            .backend
            .write()
            .unwrap_or_else(|e| e.into_inner()) = backend;
        self.inner.epoch.fetch_add(1, Ordering::SeqCst);
        self.inner.lock().revoke_where(|_, _| true);
        self.inner.start_events();
    }

    pub(crate) fn set_deferred(&self, deferred: Vec<DeferredCatalog>) {
        let mut state = self.inner.lock();
        for catalog in &deferred {
            state.watching.insert(catalog.id.to_string());
        }
        state.deferred = deferred;
    }

    /// Takes a fresh snapshot of the ready servers and binds their tools
    /// (plus deferred tools of servers still connecting) for the next
    /// prompt. calls this once per user prompt.
    pub fn bind(&self) -> ToolSet {
        self.inner.rebind();
        self.tools()
    }

    /// The current binding, without a new snapshot.
    pub fn tools(&self) -> ToolSet {
        let binding = self.inner.lock().binding.clone();
        self.inner.tool_set(binding)
    }

    /// Subscribes to the session's approval events.
    pub fn approval_events(&self) -> broadcast::Receiver<ApprovalEvent> {
        self.inner.approvals.subscribe()
    }

    /// Follows the binding generation: it changes when the session rebinds,
    /// on its own (a late server) or when asked.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// The permission preset.
    pub fn preset(&self) -> PermissionPreset {
        self.inner.lock().preset
    }

    /// Changes the permission preset; applies to the next decision.
    pub fn set_preset(&self, preset: PermissionPreset) {
        self.inner.lock().preset = preset;
    }

    /// Installs (or removes) the approval handler. Without one, calls that
    /// need approval are not made.
    pub fn set_approval_handler(&self, handler: Option<Arc<dyn ApprovalHandler>>) {
        self.inner.lock().handler = handler;
    }

    /// Restricts the session to `servers` (`None`: every server). Pending
    /// approvals for servers no longer allowed end; the binding is redone.
    pub fn set_allowed_servers(&self, servers: Option<BTreeSet<String>>) {
        {
            let mut state = self.inner.lock();
            state.allowed = servers;
            let allowed = state.allowed.clone();
            state.revoke_where(|server, _| allowed.as_ref().is_some_and(|a| !a.contains(server)));
        }
        self.inner.rebind();
    }

    /// Turns the whole MCP tool channel on or off. Off: no tools, no loader
    /// tools, no prompt rows, every call refused and pending approvals
    /// ended.
    pub fn set_mcp_enabled(&self, enabled: bool) {
        {
            let mut state = self.inner.lock();
            state.enabled = enabled;
            if !enabled {
                state.revoke_where(|_, _| true);
            }
        }
        self.inner.rebind();
    }

    /// Whether the MCP tool channel is on.
    pub fn mcp_enabled(&self) -> bool {
        self.inner.lock().enabled
    }

    /// The session grants in force, sorted. Grants whose catalog lifetime
    /// has ended are dropped first, so the answer never depends on whether
    /// the session has heard the manager's events yet.
    pub fn grants(&self) -> Vec<Grant> {
        self.inner.reconcile();
        let mut grants: Vec<Grant> = self.inner.lock().grants.iter().cloned().collect();
        grants.sort();
        grants
    }

    /// Revokes every session grant.
    pub fn clear_grants(&self) {
        self.inner.lock().grants.clear();
    }

    /// Ranks the current binding's tools against `query`.
    pub fn search_tools(&self, query: &str) -> Vec<SearchHit> {
        let binding = self.inner.lock().binding.clone();
        search::search(binding.index(), query, self.inner.options.search_limit)
    }

    /// One tool of the current binding, with its input schema, as JSON.
    pub fn describe_tool(&self, name: &str) -> Option<Value> {
        let binding = self.inner.lock().binding.clone();
        binding.describe(name)
    }

    /// The session's options.
    pub fn options(&self) -> &SessionOptions {
        &self.inner.options
    }
}

pub(crate) struct Inner {
    backend: RwLock<Arc<dyn Backend>>,
    pub(crate) options: SessionOptions,
    state: Mutex<State>,
    approvals: broadcast::Sender<ApprovalEvent>,
    changed: watch::Sender<u64>,
    next_request: AtomicU64,
    /// Numbers the snapshots rebinds take, in the order they start.
    snapshots: AtomicU64,
    /// Bumped when the session follows another backend.
    epoch: AtomicU64,
    /// Results over the budget, spilled; their directory goes with the session.
    pub(crate) spills: crate::budget::Spills,
    /// The bound tools' schemas in the session's dialect.
    declarations: tools::Declarations,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(task) = state.event_task.take() {
            task.abort();
        }
    }
}

struct State {
    preset: PermissionPreset,
    handler: Option<Arc<dyn ApprovalHandler>>,
    allowed: Option<BTreeSet<String>>,
    enabled: bool,
    binding: Arc<Binding>,
    /// The number of the snapshot `binding` was built from.
    installed: u64,
    deferred: Vec<DeferredCatalog>,
    grants: HashSet<Grant>,
    pending: HashMap<u64, Pending>,
    /// Compiled input schemas per (server, lifetime), then tool name.
    schemas: HashMap<(String, u64), SchemaCells>,
    /// The skills loaded per (server, lifetime), by their `SKILL.md` URI:
    /// the entries held while the model acts on them (Skills extension,
    /// "The Acting Window"). A new catalog lifetime starts with none.
    pub(crate) skills: HashMap<(String, u64), HashMap<String, Arc<mcp_transport::LoadedSkill>>>,
    /// Servers whose readiness makes the session rebind on its own.
    watching: HashSet<String>,
    event_task: Option<AbortHandle>,
}

/// One catalog lifetime's compiled schemas, by tool name; each compiled
/// once, on first use.
type SchemaCells = HashMap<String, Arc<OnceLock<ArgumentSchema>>>;

/// An approval that is being waited for.
struct Pending {
    server: String,
    lifetime: u64,
    revoke: CancelToken,
}

impl State {
    fn allows(&self, server: &str) -> bool {
        self.enabled && self.allowed.as_ref().is_none_or(|a| a.contains(server))
    }

    /// Drops grants, ends pending approvals and forgets compiled schemas
    /// for every (server, lifetime) that `revoked` selects.
    fn revoke_where(&mut self, revoked: impl Fn(&str, u64) -> bool) {
        self.grants.retain(|g| !revoked(&g.server, g.lifetime));
        for pending in self.pending.values() {
            if revoked(&pending.server, pending.lifetime) {
                pending.revoke.cancel();
            }
        }
        self.schemas
            .retain(|(server, lifetime), _| !revoked(server, *lifetime));
        self.skills
            .retain(|(server, lifetime), _| !revoked(server, *lifetime));
    }
}

impl Inner {
    /// The skill loaded from `uri` on `server` in catalog `lifetime`, if
    /// any; or the loaded skill of that server whose directory holds `uri`.
    pub(crate) fn loaded_skill(
        &self,
        server: &str,
        lifetime: u64,
        uri: &str,
    ) -> Option<Arc<mcp_transport::LoadedSkill>> {
        let state = self.lock();
        let loaded = state.skills.get(&(server.to_owned(), lifetime))?;
        if let Some(skill) = loaded.get(uri) {
            return Some(skill.clone());
        }
        loaded
            .values()
            .find(|skill| {
                skill
                    .entry
                    .uri
                    .strip_suffix(mcp_proto::types::SKILL_FILE)
                    .is_some_and(|root| uri.starts_with(root))
            })
            .cloned()
    }

    /// Records a skill loaded on `server` in catalog `lifetime`.
    pub(crate) fn hold_skill(
        &self,
        server: &str,
        lifetime: u64,
        skill: mcp_transport::LoadedSkill,
    ) {
        self.lock()
            .skills
            .entry((server.to_owned(), lifetime))
            .or_default()
            .insert(skill.entry.uri.clone(), Arc::new(skill));
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        mcp_proto::sync::lock(&self.state)
    }

    pub(crate) fn backend(&self) -> Arc<dyn Backend> {
        self.backend
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the session may use `server` now: allowed by the session,
    /// and visible from its workspace (a project's servers only from
    /// inside that project).
    pub(crate) fn allows(&self, server: &str) -> bool {
        self.lock().allows(server)
            && self
                .backend()
                .visible(server, self.options.workspace.as_deref())
    }

    pub(crate) fn enabled(&self) -> bool {
        self.lock().enabled
    }

    /// Starts (or restarts) the task that follows the backend's events.
    fn start_events(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                "McpSession created outside a tokio runtime: grants are still checked at each call, but pending approvals are not ended early"
            );
            return;
        };
        let mut events = self.backend().events();
        let weak: Weak<Inner> = Arc::downgrade(self);
        let task = runtime.spawn(async move {
            while let Some(event) = events.next().await {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                inner.on_event(event);
            }
        });
        if let Some(old) = self.lock().event_task.replace(task.abort_handle()) {
            old.abort();
        }
    }

    fn on_event(self: &Arc<Self>, event: BackendEvent) {
        let rebind = {
            let mut state = self.lock();
            match &event {
                BackendEvent::CatalogSwapped { id, lifetime } => {
                    state.revoke_where(|s, l| s == id && l != *lifetime);
                    state.watching.remove(id) || state.deferred.iter().any(|d| &*d.id == id)
                }
                BackendEvent::CatalogRevoked { id, lifetime } => {
                    state.revoke_where(|s, l| s == id && l == *lifetime);
                    false
                }
                BackendEvent::Removed { id } => {
                    state.revoke_where(|s, _| s == id);
                    false
                }
                BackendEvent::Lagged => {
                    drop(state);
                    self.reconcile();
                    false
                }
            }
        };
        if rebind {
            tracing::debug!(
                ?event,
                "a server the session waited for is ready; rebinding"
            );
            self.rebind();
        }
    }

    /// After lost events: drops whatever is bound to a lifetime that is no
    /// longer current.
    fn reconcile(&self) {
        let backend = self.backend();
        let mut servers: HashSet<String> = HashSet::new();
        {
            let state = self.lock();
            servers.extend(state.grants.iter().map(|g| g.server.clone()));
            servers.extend(state.pending.values().map(|p| p.server.clone()));
            servers.extend(state.schemas.keys().map(|(s, _)| s.clone()));
        }
        let current: HashMap<String, Option<u64>> = servers
            .into_iter()
            .map(|s| {
                let lifetime = backend.availability(&s).lifetime();
                (s, lifetime)
            })
            .collect();
        self.lock()
            .revoke_where(|s, l| current.get(s).copied().flatten() != Some(l));
    }

    /// Takes a snapshot and makes it the current binding, unless a rebind
    /// that started later has already installed its own.
    ///
    /// Rebinds run concurrently (the host's [`McpSession::bind`], the event
    /// task's for a late server, a settings change) and take their
    /// snapshots outside the session lock, so they can reach the lock in
    /// any order. Each snapshot is numbered before it is taken, and only a
    /// number above the installed one is installed: a snapshot that was
    /// overtaken is dropped instead of replacing a newer one, and the
    /// generation counts installed bindings only, so the one a caller sees
    /// is always the one in force.
    pub(crate) fn rebind(&self) {
        let number = self.snapshots.fetch_add(1, Ordering::SeqCst) + 1;
        let epoch = self.epoch.load(Ordering::SeqCst);
        let backend = self.backend();
        let ready = backend.snapshot(self.options.workspace.as_deref());
        let ready_ids: HashSet<&str> = ready.iter().map(|s| &*s.id).collect();
        let offered = backend.deferred();
        let mut state = self.lock();
        if number <= state.installed {
            tracing::debug!("a newer snapshot is already bound; dropping an overtaken one");
            return;
        }
        // Deferred servers the backend knows of join those the host handed
        // over, so a plain `bind` after startup offers them too.
        let workspace = self.options.workspace.as_deref();
        for catalog in offered {
            if !backend.visible(&catalog.id, workspace) {
                continue;
            }
            if !state.deferred.iter().any(|d| d.id == catalog.id) {
                state.watching.insert(catalog.id.to_string());
                state.deferred.push(catalog);
            }
        }
        // A deferred server that is ready now binds live; one that is no
        // longer connecting or waiting for its next use (failed, disabled,
        // removed) is dropped.
        state.deferred.retain(|d| {
            !ready_ids.contains(&*d.id)
                && backend.visible(&d.id, workspace)
                && matches!(
                    backend.availability(&d.id),
                    Availability::Pending { .. } | Availability::Dormant { .. }
                )
        });
        let generation = state.binding.generation + 1;
        let binding = if state.enabled {
            let ready: Vec<ReadyServer> =
                ready.into_iter().filter(|s| state.allows(&s.id)).collect();
            let deferred: Vec<DeferredCatalog> = state
                .deferred
                .iter()
                .filter(|d| state.allows(&d.id))
                .cloned()
                .collect();
            Binding::build(
                generation,
                epoch,
                ready,
                deferred,
                &self.options.names,
                &state.binding,
            )
        } else {
            Binding::empty(generation)
        };
        // Compiled schemas of lifetimes that are neither bound nor current
        // are of no more use.
        let live: HashSet<(String, u64)> = binding
            .servers
            .iter()
            .map(|s| (s.id.to_string(), s.lifetime))
            .collect();
        state.schemas.retain(|key, _| live.contains(key));
        state.binding = Arc::new(binding);
        state.installed = number;
        // Still under the lock, so the generations followers see arrive in
        // the order they were installed.
        self.changed.send_replace(generation);
    }

    fn tool_set(self: &Arc<Self>, binding: Arc<Binding>) -> ToolSet {
        let declared = self
            .declarations
            .for_binding(&binding.tools, self.options.schema_dialect);
        let tools = binding
            .tools
            .iter()
            .zip(declared)
            .map(|(bound, declared)| -> Arc<dyn ModelTool> {
                if bound.lifetime.is_some() {
                    Arc::new(LiveTool {
                        session: self.clone(),
                        bound: bound.clone(),
                        declared,
                    })
                } else {
                    Arc::new(DeferredTool {
                        session: self.clone(),
                        bound: bound.clone(),
                        declared,
                    })
                }
            })
            .collect();
        let rows: Vec<ServerRow<'_>> = binding
            .servers
            .iter()
            .map(|s| ServerRow {
                id: &s.id,
                name: &s.name,
                instructions: s.catalog.instructions(),
                tool_count: s.tool_count,
            })
            .collect();
        let section = prompt::render(&rows, self.options.access);
        ToolSet {
            binding,
            tools,
            section,
        }
    }

    /// The cell holding the compiled input schema of `tool` in catalog
    /// `lifetime` of `server`: compiled once per lifetime, on first use.
    fn schema_cell(
        &self,
        server: &str,
        lifetime: u64,
        tool: &str,
    ) -> Arc<OnceLock<ArgumentSchema>> {
        self.lock()
            .schemas
            .entry((server.to_owned(), lifetime))
            .or_default()
            .entry(tool.to_owned())
            .or_default()
            .clone()
    }
}

#[cfg(test)]
mod tests;

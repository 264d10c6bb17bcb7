//! The manager's shared state: one entry per server, generations, status changes and the rules that start and stop connections.
//!
//! Every server has one [`Entry`] holding its configuration, source
//! metadata, status, current client and catalog, and the handle of the
//! task that runs its connection (`task.rs`). The registries
//! (connected, pending connect, pending tool load, tools, sources) are
//! views of these entries: the status says which registry a server is in.
//!
//! **Generations.** Any config change, disable, delete, retry or
//! disconnect gives the entry a new generation. A task carries the
//! generation it was started for and every result it applies is checked
//! against the entry's current one under the lock, so a late result of an
//! older generation is dropped, never applied, even if the abort of the old
//! task has not taken effect yet. A task holds its generation as a
//! [`Lease`](crate::lease::Lease), the only way it changes its entry.
//!
//! **Closing.** Whatever a change stops (the old task, the old client) is
//! closed through [`Closings`], which `close` and `disconnect` wait for.
//!
//! The state lock is a `std::sync::Mutex`, held for a few instructions and
//! never across an `.await`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_config::{
    Environment, ResolveError, ResolvedConfig, ServerConfig, SourceMeta, Store, TransportConfig,
    TransportKind,
};
use mcp_transport::Client;
use tokio::sync::{Semaphore, broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::cache::{CachedTools, ToolCache};
use crate::catalog::{Catalog, LifetimeId};
use crate::closing::Closings;
use crate::error::ServerError;
use crate::events::ManagerEvent;
use crate::factory::TransportFactory;
use crate::options::ManagerOptions;
use crate::snapshot::{Snapshot, SnapshotServer};
use crate::status::ServerStatus;

/// The calls in flight through [`ServerHandle`](crate::ServerHandle)s to
/// one connection, and how many of its notifications the connection's task
/// has handled, shared by the task and every handle to it. Its identity is
/// the connection's: a new connection gets a new one, so a handle compares
/// it to tell whether its connection is still current.
pub(crate) type Calls = Arc<ConnCounters>;

/// What [`Calls`] counts.
#[derive(Debug, Default)]
pub(crate) struct ConnCounters {
    /// The calls in flight through handles.
    pub(crate) in_flight: std::sync::atomic::AtomicUsize,
    /// The server notifications the connection's task has handled (taken
    /// from the client and, for a log message or a resource update,
    /// emitted as an event), to compare with
    /// [`Client::notifications_sent`](mcp_transport::Client::notifications_sent).
    pub(crate) noted: std::sync::atomic::AtomicU64,
    /// Wakes those waiting for `noted` to grow.
    pub(crate) noted_grew: tokio::sync::Notify,
}

impl ConnCounters {
    /// One more notification handled.
    pub(crate) fn note(&self) {
        self.noted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.noted_grew.notify_waiters();
    }
}

/// How a server came to the manager; decides what a rediscovery may remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `connect_servers`.
    Direct,
    /// `discover_and_connect` / `connect_discovered`.
    Discovered,
    /// The config store (`load_store`, `save`).
    Store,
}

/// Why a configuration is being applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// Startup or rediscovery (`connectServers`): a server that is
    /// connected or pending with the same fingerprint is left alone.
    Startup,
    /// A save: a ready server with the same fingerprint keeps its
    /// connection; a failed or pending one starts a fresh attempt.
    Save {
        /// The save created the server.
        created: bool,
    },
}

pub(crate) struct Entry {
    pub(crate) id: Arc<str>,
    pub(crate) config: ServerConfig,
    pub(crate) name: Arc<str>,
    pub(crate) source: Option<SourceMeta>,
    pub(crate) origin: Origin,
    pub(crate) generation: u64,
    pub(crate) status: ServerStatus,
    pub(crate) fingerprint: Option<Arc<str>>,
    pub(crate) client: Option<Client>,
    /// The calls in flight through handles to the current connection; a
    /// new connection gets a new counter (see [`Calls`]).
    pub(crate) calls: Option<Calls>,
    pub(crate) catalog: Option<Arc<Catalog>>,
    /// The cached tools a startup report offered while the server was still
    /// connecting; gone once it publishes a catalog or starts again.
    pub(crate) deferred: Option<crate::DeferredServer>,
    pub(crate) task: Option<JoinHandle<()>>,
    pub(crate) last_used: Instant,
    /// Whether the current connection attempt is the server's first start
    /// on this machine (see [`crate::ServerInfo::first_start`]).
    pub(crate) first_start: bool,
    /// The log level and subscriptions asked of every new connection
    /// (`interest.rs`); kept for as long as the entry.
    pub(crate) interest: crate::interest::Interest,
}

impl Entry {
    pub(crate) fn kind(&self) -> TransportKind {
        self.config.transport.kind()
    }
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) entries: BTreeMap<String, Entry>,
}

/// What a task needs to connect one server once.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) resolved: Arc<ResolvedConfig>,
    pub(crate) fingerprint: Arc<str>,
    pub(crate) kind: TransportKind,
    pub(crate) keys: Keys,
    /// The one-time setup allowance: a first save of a stdio server, or
    /// (decided by each attempt) a first start on this machine.
    pub(crate) setup: bool,
}

/// The config keys error messages point at.
#[derive(Clone, Debug)]
pub(crate) struct Keys {
    /// `transport.command` or `transport.url`.
    pub(crate) endpoint: &'static str,
    /// Where credentials are configured.
    pub(crate) auth: &'static str,
}

impl Keys {
    pub(crate) fn of(config: &ServerConfig) -> Keys {
        match &config.transport {
            TransportConfig::Stdio(_) => Keys {
                endpoint: "transport.command",
                auth: "transport.env",
            },
            TransportConfig::Http(http) | TransportConfig::Sse(http) => Keys {
                endpoint: "transport.url",
                auth: if http.bearer_token_env.is_some() {
                    "transport.bearerTokenEnv"
                } else if !http.env_headers.is_empty() {
                    "transport.envHeaders"
                } else if http.oauth.is_some() {
                    "transport.oauth"
                } else {
                    "transport.headers"
                },
            },
            _ => Keys {
                endpoint: "transport",
                auth: "transport",
            },
        }
    }
}

pub(crate) struct Core {
    pub(crate) options: ManagerOptions,
    pub(crate) factory: Arc<dyn TransportFactory>,
    pub(crate) cache: Option<Arc<dyn ToolCache>>,
    pub(crate) env: Arc<dyn Environment + Send + Sync>,
    pub(crate) store: Option<Arc<Store>>,
    /// Serializes store operations with the connection changes they cause.
    pub(crate) store_lock: tokio::sync::Mutex<()>,
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) events: broadcast::Sender<ManagerEvent>,
    /// Bumped on every status change; waiters re-check their condition.
    pub(crate) changed: watch::Sender<u64>,
    /// The connections being closed and the tasks being stopped.
    pub(crate) closings: Arc<Closings>,
    state: Mutex<State>,
    /// Set (under the state lock) by `close` and by dropping the last
    /// handle; nothing starts afterwards.
    closed: AtomicBool,
    next_generation: AtomicU64,
    next_lifetime: AtomicU64,
    /// The queue of the cache writer task, started on first use.
    cache_jobs: Mutex<Option<mpsc::UnboundedSender<CacheJob>>>,
}

/// Work for the cache writer.
enum CacheJob {
    Store(String, CachedTools),
    Flush(oneshot::Sender<()>),
}

/// Writes cache entries in the order they were queued. It is a task of its
/// own so that aborting a server's task (disable, disconnect, close) never
/// loses a write that was due, and it ends when the manager is gone and
/// the queue is empty. The stores queued while a write ran go to the cache
/// together ([`ToolCache::store_all`]): twenty servers becoming ready at
/// once cost one rewrite of a cache file, not twenty.
async fn write_cache(cache: Arc<dyn ToolCache>, mut jobs: mpsc::UnboundedReceiver<CacheJob>) {
    let mut stores = Vec::new();
    let mut flushes = Vec::new();
    while let Some(job) = jobs.recv().await {
        let mut next = Some(job);
        while let Some(job) = next.take() {
            match job {
                CacheJob::Store(fingerprint, entry) => stores.push((fingerprint, entry)),
                // A flush waits for the stores queued before it, and those
                // are in this batch.
                CacheJob::Flush(done) => flushes.push(done),
            }
            next = jobs.try_recv().ok();
        }
        if !stores.is_empty() {
            cache.store_all(std::mem::take(&mut stores)).await;
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
}

impl Core {
    pub(crate) fn new(
        options: ManagerOptions,
        factory: Arc<dyn TransportFactory>,
        cache: Option<Arc<dyn ToolCache>>,
        env: Arc<dyn Environment + Send + Sync>,
        store: Option<Arc<Store>>,
    ) -> Core {
        let (events, _) = broadcast::channel(options.event_capacity.max(1));
        Core {
            slots: Arc::new(Semaphore::new(options.max_concurrent_connects.max(1))),
            options,
            factory,
            cache,
            env,
            store,
            store_lock: tokio::sync::Mutex::new(()),
            events,
            changed: watch::Sender::new(0),
            closings: Arc::new(Closings::default()),
            state: Mutex::new(State::default()),
            closed: AtomicBool::new(false),
            next_generation: AtomicU64::new(1),
            next_lifetime: AtomicU64::new(1),
            cache_jobs: Mutex::new(None),
        }
    }

    fn cache_queue(&self) -> Option<mpsc::UnboundedSender<CacheJob>> {
        let cache = self.cache.as_ref()?;
        let mut jobs = mcp_proto::sync::lock(&self.cache_jobs);
        if let Some(sender) = jobs.as_ref().filter(|s| !s.is_closed()) {
            return Some(sender.clone());
        }
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(write_cache(Arc::clone(cache), receiver));
        *jobs = Some(sender.clone());
        Some(sender)
    }

    /// Queues a cache write (best-effort, in order).
    pub(crate) fn cache_store(&self, fingerprint: &str, entry: CachedTools) {
        if let Some(queue) = self.cache_queue() {
            let _ = queue.send(CacheJob::Store(fingerprint.to_owned(), entry));
        }
    }

    /// Waits until every cache write queued so far has landed.
    pub(crate) async fn flush_cache(&self) {
        let Some(queue) = self.cache_queue() else {
            return;
        };
        let (done, landed) = oneshot::channel();
        if queue.send(CacheJob::Flush(done)).is_ok() {
            let _ = landed.await;
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        mcp_proto::sync::lock(&self.state)
    }

    /// Whether the manager was closed. Read under the state lock where it
    /// must agree with a decision to start something.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Marks the manager closed; the caller holds the state lock.
    pub(crate) fn mark_closed(&self, _state: &mut State) {
        self.closed.store(true, Ordering::SeqCst);
    }

    pub(crate) fn emit(&self, event: ManagerEvent) {
        // An error only means nobody listens.
        let _ = self.events.send(event);
    }

    pub(crate) fn bump(&self) {
        self.changed
            .send_modify(|version| *version = version.wrapping_add(1));
    }

    pub(crate) fn next_lifetime(&self) -> LifetimeId {
        LifetimeId::new(self.next_lifetime.fetch_add(1, Ordering::Relaxed))
    }

    fn next_generation(&self) -> u64 {
        self.next_generation.fetch_add(1, Ordering::Relaxed)
    }

    /// Sets a status, announcing it when it changed.
    pub(crate) fn set_status(&self, entry: &mut Entry, status: ServerStatus) {
        if entry.status == status {
            return;
        }
        entry.status = status.clone();
        self.emit(ManagerEvent::StatusChanged {
            id: entry.id.to_string(),
            status,
            generation: entry.generation,
        });
        self.bump();
    }

    /// Drops the entry's catalog, announcing the revocation.
    pub(crate) fn revoke(&self, entry: &mut Entry) {
        if let Some(catalog) = entry.catalog.take() {
            self.emit(ManagerEvent::CatalogRevoked {
                id: entry.id.to_string(),
                lifetime: catalog.lifetime(),
            });
        }
    }

    /// Ends whatever the entry is doing: stops its task, revokes its
    /// catalog, closes its client and gives it a new generation, so nothing
    /// the old task still produces is applied. The task's end and the close
    /// are recorded in [`Core::closings`].
    pub(crate) fn stop(&self, entry: &mut Entry) {
        if let Some(task) = entry.task.take() {
            self.closings.stop(&entry.id, task);
        }
        self.revoke(entry);
        entry.generation = self.next_generation();
        entry.calls = None;
        if let Some(client) = entry.client.take() {
            self.closings.close(&entry.id, client);
        }
    }

    /// Starts connecting the entry with `plan` on a new task (or, once the
    /// manager is closed, leaves it `disconnected`).
    pub(crate) fn start(self: &Arc<Self>, entry: &mut Entry, plan: Plan) {
        if let Some(task) = entry.task.take() {
            self.closings.stop(&entry.id, task);
        }
        entry.generation = self.next_generation();
        entry.fingerprint = Some(plan.fingerprint.clone());
        entry.deferred = None;
        if self.is_closed() {
            self.set_status(entry, ServerStatus::Disconnected);
            return;
        }
        self.set_status(entry, ServerStatus::Queued);
        let lease = crate::lease::Lease::new(Arc::clone(self), entry);
        entry.task = Some(tokio::spawn(crate::task::run(lease, plan)));
    }

    /// Resolves the entry's configuration against the environment.
    pub(crate) fn resolve(&self, config: &ServerConfig) -> Result<ResolvedConfig, ResolveError> {
        mcp_config::resolve(config, self.env.as_ref())
    }

    /// Resolves the entry's configuration and starts it, or records why it
    /// cannot start. `setup` grants the one-time setup allowance.
    pub(crate) fn restart(self: &Arc<Self>, entry: &mut Entry, setup: bool) {
        self.stop(entry);
        if !entry.config.enabled {
            entry.fingerprint = None;
            self.set_status(entry, ServerStatus::Disabled);
            return;
        }
        match self.resolve(&entry.config) {
            Ok(resolved) => {
                let plan = self.plan(&entry.config, resolved, setup);
                self.start(entry, plan);
            }
            Err(error) => self.config_failed(entry, &error),
        }
    }

    pub(crate) fn plan(
        &self,
        config: &ServerConfig,
        resolved: ResolvedConfig,
        setup: bool,
    ) -> Plan {
        Plan {
            fingerprint: Arc::from(mcp_config::fingerprint(&resolved)),
            resolved: Arc::new(resolved),
            kind: config.transport.kind(),
            keys: Keys::of(config),
            setup,
        }
    }

    fn config_failed(&self, entry: &mut Entry, error: &ResolveError) {
        entry.fingerprint = None;
        let server_error = ServerError::from_diagnostics(&error.problems);
        tracing::warn!(
            server = %entry.id,
            code = %server_error.code,
            key = %server_error.config_key,
            "the server cannot connect: {}",
            server_error.message
        );
        self.set_status(entry, ServerStatus::error_status(server_error));
    }

    /// Applies a configuration: adds the server, or updates it keeping or
    /// replacing its connection by the rules of `trigger`.
    pub(crate) fn apply(
        self: &Arc<Self>,
        state: &mut State,
        config: ServerConfig,
        source: Option<SourceMeta>,
        origin: Origin,
        trigger: Trigger,
        cached: Option<CachedTools>,
    ) {
        let resolved = config.enabled.then(|| self.resolve(&config));
        let id = config.id.clone();
        let created = !state.entries.contains_key(&id);
        let entry = state.entries.entry(id.clone()).or_insert_with(|| Entry {
            id: Arc::from(id.as_str()),
            name: Arc::from(config.name.as_str()),
            config: config.clone(),
            source: source.clone(),
            origin,
            generation: 0,
            status: ServerStatus::Disconnected,
            fingerprint: None,
            client: None,
            calls: None,
            catalog: None,
            task: None,
            last_used: Instant::now(),
            deferred: None,
            first_start: false,
            interest: crate::interest::Interest::default(),
        });
        if created {
            self.emit(ManagerEvent::ServerAdded { id: id.clone() });
        }
        let described_differently = entry.config.name != config.name
            || entry.config.description != config.description
            || entry.source != source;
        let filter_changed = entry.config.tools != config.tools;
        entry.name = Arc::from(config.name.as_str());
        entry.config = config;
        entry.source = source;
        entry.origin = origin;

        let Some(resolved) = resolved else {
            if created || entry.status != ServerStatus::Disabled {
                self.stop(entry);
                entry.fingerprint = None;
                self.set_status(entry, ServerStatus::Disabled);
            }
            return;
        };
        let resolved = match resolved {
            Ok(resolved) => resolved,
            Err(error) => {
                self.stop(entry);
                self.config_failed(entry, &error);
                return;
            }
        };
        let stdio = entry.kind() == TransportKind::Stdio;
        let plan_setup =
            |same: bool| matches!(trigger, Trigger::Save { created } if created || !same) && stdio;
        let fingerprint = mcp_config::fingerprint(&resolved);
        let same = entry.fingerprint.as_deref() == Some(fingerprint.as_str());
        let keep = same
            && match trigger {
                Trigger::Startup => {
                    entry.status.is_connected()
                        || entry.status.is_pending()
                        || entry.status == ServerStatus::Idle
                }
                Trigger::Save { .. } => entry.status.is_connected(),
            };
        if keep {
            if filter_changed {
                self.refilter(entry);
            }
            if described_differently && !created {
                self.emit(ManagerEvent::ServerUpdated { id });
            }
            return;
        }
        self.stop(entry);
        let setup = plan_setup(same);
        let plan = self.plan(&entry.config, resolved, setup);
        match cached {
            Some(cached) if trigger == Trigger::Startup => self.park(entry, plan, &cached),
            _ => self.start(entry, plan),
        }
    }

    /// Lazy start: leaves a stopped entry `idle` instead of starting it,
    /// offering `cached` (its tool cache entry for `plan`'s fingerprint) as
    /// its deferred tools until something needs it.
    fn park(&self, entry: &mut Entry, plan: Plan, cached: &CachedTools) {
        entry.fingerprint = Some(plan.fingerprint.clone());
        if self.is_closed() {
            entry.deferred = None;
            self.set_status(entry, ServerStatus::Disconnected);
            return;
        }
        entry.deferred = Some(crate::DeferredServer {
            id: entry.id.to_string(),
            name: entry.name.to_string(),
            fingerprint: plan.fingerprint.to_string(),
            tools: cached
                .tools
                .iter()
                .filter(|tool| entry.config.tools.allows(&tool.name))
                .cloned()
                .collect(),
            instructions: cached.instructions.clone(),
            status: ServerStatus::Idle,
        });
        tracing::debug!(server = %entry.id, "lazy start: offering the cached tools until first use");
        self.set_status(entry, ServerStatus::Idle);
        // A status that was already `idle` announced nothing.
        self.bump();
    }

    /// Whether the entry is stopped and the next
    /// [`wait_ready`](crate::McpManager::wait_ready) starts it: `idle`, or
    /// failed without a scheduled reconnect under
    /// [`RestartPolicy::OnUse`](crate::RestartPolicy::OnUse) with an error
    /// a restart can cure.
    pub(crate) fn starts_on_use(&self, entry: &Entry) -> bool {
        match &entry.status {
            ServerStatus::Idle => true,
            ServerStatus::Error { error, retry: None } => {
                self.options.restart == crate::RestartPolicy::OnUse
                    && entry.config.enabled
                    && restartable(error)
            }
            _ => false,
        }
    }

    /// Starts a stopped entry again for a use ([`Core::starts_on_use`]):
    /// the same as a Retry, except that the tools it offered while stopped
    /// stay offered while it connects, when its configuration is unchanged.
    pub(crate) fn wake(self: &Arc<Self>, entry: &mut Entry) {
        let offered = entry.deferred.take();
        let fingerprint = entry.fingerprint.clone();
        self.restart(entry, false);
        if entry.status.is_pending() && entry.fingerprint == fingerprint {
            entry.deferred = offered.map(|mut deferred| {
                deferred.status = entry.status.clone();
                deferred
            });
        }
    }

    /// The deferred tools a stopped entry offers in place of `catalog`, the
    /// one it is losing (idle, or dead under restart on use).
    pub(crate) fn offer_while_stopped(entry: &mut Entry, catalog: Option<&Arc<Catalog>>) {
        entry.deferred = catalog
            .filter(|catalog| !catalog.tools().is_empty())
            .map(|catalog| crate::DeferredServer {
                id: entry.id.to_string(),
                name: entry.name.to_string(),
                fingerprint: catalog.fingerprint().to_owned(),
                tools: catalog.tools().into(),
                instructions: catalog.instructions().map(str::to_owned),
                status: ServerStatus::Idle,
            })
            .or_else(|| entry.deferred.take());
    }

    /// A kept connection whose tool filter changed: its catalog is swapped
    /// for one filtered anew, under a new lifetime (grants for the tools it
    /// offered end with the old one). Nothing is listed again.
    fn refilter(&self, entry: &mut Entry) {
        let Some(current) = entry.catalog.as_ref() else {
            return;
        };
        let mut catalog = Catalog::clone(current);
        catalog.apply_filter(&entry.config.tools);
        catalog.lifetime = self.next_lifetime();
        let event = ManagerEvent::CatalogSwapped {
            id: entry.id.to_string(),
            lifetime: catalog.lifetime(),
            previous: Some(current.lifetime()),
            tools: catalog.tools().len(),
            truncated: catalog.is_truncated(),
        };
        entry.catalog = Some(Arc::new(catalog));
        self.emit(event);
        self.bump();
    }

    /// Removes a server entirely. Returns whether it was there.
    pub(crate) fn remove_entry(&self, state: &mut State, id: &str) -> bool {
        let Some(mut entry) = state.entries.remove(id) else {
            return false;
        };
        self.stop(&mut entry);
        self.emit(ManagerEvent::ServerRemoved { id: id.to_owned() });
        self.bump();
        true
    }

    /// Stops a server's connection and marks it `disconnected`.
    pub(crate) fn disconnect_entry(&self, entry: &mut Entry) {
        self.stop(entry);
        if entry.config.enabled {
            self.set_status(entry, ServerStatus::Disconnected);
        }
    }

    /// The ready servers and their catalogs, captured under one lock.
    pub(crate) fn snapshot(&self, workspace: Option<&Path>) -> Snapshot {
        let state = self.lock();
        let servers = state
            .entries
            .values()
            .filter(|entry| entry.status.is_connected())
            .filter(|entry| visible_from(entry.source.as_ref(), workspace))
            .filter_map(|entry| {
                let catalog = entry.catalog.as_ref()?;
                (!catalog.tools().is_empty()).then(|| SnapshotServer {
                    id: Arc::clone(&entry.id),
                    name: Arc::clone(&entry.name),
                    catalog: Arc::clone(catalog),
                })
            })
            .collect();
        Snapshot { servers }
    }

    /// Aborts every task and drops every client, at once: the last
    /// manager handle is gone.
    pub(crate) fn shutdown_now(&self) {
        let mut state = self.lock();
        self.mark_closed(&mut state);
        for entry in state.entries.values_mut() {
            if let Some(task) = entry.task.take() {
                task.abort();
            }
            entry.client = None;
            entry.calls = None;
        }
    }
}

/// Whether starting again can cure `error` (restart on use): not a
/// configuration problem, not a failed refresh (the server's answers are at
/// fault).
pub(crate) fn restartable(error: &ServerError) -> bool {
    !error.code.is_config_error() && error.code != crate::ErrorCode::RefreshFailed
}

/// A project-level server is visible only from inside its project: a
/// session in another workspace must not get a project's servers (they come
/// from that checkout's `.mcp.json`). Servers of other levels are visible
/// everywhere, and so is everything when no workspace is given.
fn visible_from(source: Option<&SourceMeta>, workspace: Option<&Path>) -> bool {
    match (source, workspace) {
        (Some(source), Some(workspace)) => source.visible_from(workspace),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mcp_config::ConfigLevel;

    use super::*;

    #[test]
    fn project_servers_are_visible_only_inside_their_project() {
        let project = SourceMeta::new(
            ConfigLevel::Project,
            Some(PathBuf::from("/repo/.mcp.json")),
            "project",
        );
        let user = SourceMeta::new(
            ConfigLevel::User,
            Some(PathBuf::from("/home/u/.mcp.json")),
            "user",
        );
        assert!(visible_from(Some(&project), Some(Path::new("/repo"))));
        assert!(visible_from(
            Some(&project),
            Some(Path::new("/repo/sub/dir"))
        ));
        assert!(!visible_from(Some(&project), Some(Path::new("/other"))));
        assert!(!visible_from(
            Some(&project),
            Some(Path::new("/repository"))
        ));
        assert!(visible_from(Some(&project), None));
        assert!(visible_from(Some(&user), Some(Path::new("/other"))));
        assert!(visible_from(None, Some(Path::new("/other"))));
        // A host's project file in a dot-directory belongs to the project
        // that holds the directory.
        for file in [
            "/repo/.vscode/mcp.json",
            "/repo/.cursor/mcp.json",
            "/repo/.zed/settings.json",
        ] {
            let source = SourceMeta::new(ConfigLevel::Project, Some(PathBuf::from(file)), "host");
            assert!(
                visible_from(Some(&source), Some(Path::new("/repo"))),
                "{file}"
            );
            assert!(
                visible_from(Some(&source), Some(Path::new("/repo/src"))),
                "{file}"
            );
            assert!(
                !visible_from(Some(&source), Some(Path::new("/other"))),
                "{file}"
            );
        }
    }
}

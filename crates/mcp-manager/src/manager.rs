//! `McpManager`: the public face of the lifecycle engine, shared by every host session.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use mcp_config::{
    DiscoveredServer, Discovery, DiscoveryEntry, DiscoveryReport, Environment, ProcessEnv,
    ServerConfig, SourceMeta, Store, TransportKind,
};
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::cache::{CachedTools, ToolCache};
use crate::catalog::{Catalog, LifetimeId};
use crate::core::{Core, Origin, Trigger};
use crate::error::{ManagerError, ServerError, WaitError};
use crate::events::ManagerEvent;
use crate::factory::{DefaultTransportFactory, TransportFactory};
use crate::handle::ServerHandle;
use crate::options::ManagerOptions;
use crate::snapshot::Snapshot;
use crate::startup::{StartupError, StartupReport};
use crate::status::ServerStatus;

/// The connection lifecycle engine. Cheap to clone: every clone is the same
/// manager, so one manager serves many host sessions (subagents
/// reuse their parent's connections this way).
///
/// Dropping the last clone aborts every server task and closes every
/// connection; call [`McpManager::close`] first to close them politely and
/// wait for it. Nothing the manager runs (the idle timers included) keeps
/// it alive: its tasks hold no handle to it.
///
/// Every method that may start a connection must be called within a tokio
/// runtime.
#[derive(Clone)]
pub struct McpManager {
    handle: Arc<Handle>,
}

/// Owned by the `McpManager` clones only; its drop ends the tasks.
struct Handle {
    core: Arc<Core>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.core.shutdown_now();
    }
}

impl fmt::Debug for McpManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.core().lock();
        let mut map = f.debug_map();
        for (id, entry) in &state.entries {
            map.entry(id, &entry.status.as_str());
        }
        map.finish()
    }
}

/// Builds an [`McpManager`].
pub struct ManagerBuilder {
    options: ManagerOptions,
    factory: Option<Arc<dyn TransportFactory>>,
    cache: Option<Arc<dyn ToolCache>>,
    env: Option<Arc<dyn Environment + Send + Sync>>,
    store: Option<Arc<Store>>,
}

impl fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("options", &self.options)
            .field("factory", &self.factory.is_some())
            .field("cache", &self.cache)
            .field("env", &self.env.is_some())
            .field("store", &self.store)
            .finish()
    }
}

impl ManagerBuilder {
    /// Sets the options.
    pub fn options(mut self, options: ManagerOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the transport factory. Default: [`DefaultTransportFactory`].
    pub fn factory(mut self, factory: impl TransportFactory) -> Self {
        self.factory = Some(Arc::new(factory));
        self
    }

    /// Sets a shared transport factory.
    pub fn shared_factory(mut self, factory: Arc<dyn TransportFactory>) -> Self {
        self.factory = Some(factory);
        self
    }

    /// Sets the tool cache. Default: none (the gate then waits for every
    /// pending server).
    pub fn cache(mut self, cache: Arc<dyn ToolCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Sets where `${VAR}` references and `envVars` are read. Default: the
    /// process environment.
    pub fn environment(mut self, env: impl Environment + Send + Sync + 'static) -> Self {
        self.env = Some(Arc::new(env));
        self
    }

    /// Sets the config store that `save`, `set_enabled`, `remove`, `list`
    /// and `load_store` keep consistent with the connections.
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Builds the manager. Starts nothing.
    pub fn build(self) -> McpManager {
        let factory = self
            .factory
            .unwrap_or_else(|| Arc::new(DefaultTransportFactory::new()));
        let env = self.env.unwrap_or_else(|| Arc::new(ProcessEnv));
        let core = Core::new(self.options, factory, self.cache, env, self.store);
        McpManager {
            handle: Arc::new(Handle {
                core: Arc::new(core),
            }),
        }
    }
}

/// A server's identity and state, as [`McpManager::servers`] lists them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The description from the configuration.
    pub description: Option<String>,
    /// Whether the configuration is enabled.
    pub enabled: bool,
    /// The transport.
    pub transport: TransportKind,
    /// The status.
    pub status: ServerStatus,
    /// Where the configuration came from, when discovered.
    pub source: Option<SourceMeta>,
    /// The configuration generation.
    pub generation: u64,
    /// The current catalog's lifetime, when there is one.
    pub lifetime: Option<LifetimeId>,
    /// How many tools the current catalog has.
    pub tool_count: usize,
    /// The protocol version the current connection speaks (its era is
    /// [`ProtocolVersion::era`](mcp_proto::ProtocolVersion::era)), when
    /// there is a catalog.
    pub protocol_version: Option<mcp_proto::ProtocolVersion>,
    /// Whether the server is being started for the first time on this
    /// machine: a stdio server the tool cache has no entry for (without a
    /// cache, one run by a package launcher such as `npx` or `uvx`). Its
    /// attempts get [`ManagerOptions::setup_timeout`](crate::ManagerOptions::setup_timeout),
    /// since the launcher may be downloading it; a UI can say so.
    pub first_start: bool,
}

/// A connected server: a handle to its connection and its current
/// catalog, as [`McpManager::wait_ready`] hands them out.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Connected {
    /// The connection, bound to it: requests through it never reconnect by
    /// themselves, and are refused once the server reconnected or closed.
    pub server: ServerHandle,
    /// The current catalog.
    pub catalog: Arc<Catalog>,
}

impl McpManager {
    /// A manager with `options`, the default transport factory, no tool
    /// cache, no store and the process environment.
    pub fn new(options: ManagerOptions) -> McpManager {
        McpManager::builder().options(options).build()
    }

    /// A builder with default options.
    pub fn builder() -> ManagerBuilder {
        ManagerBuilder {
            options: ManagerOptions::default(),
            factory: None,
            cache: None,
            env: None,
            store: None,
        }
    }

    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.handle.core
    }

    /// The options.
    pub fn options(&self) -> &ManagerOptions {
        &self.core().options
    }

    /// Connects `configs` in parallel (at most 3 setting up at once) and
    /// returns as the startup mode says. Servers already connected or
    /// pending with the same fingerprint are left alone; disabled ones are
    /// recorded as `disabled`; one failing server never affects the others.
    pub async fn connect_servers(
        &self,
        configs: impl IntoIterator<Item = ServerConfig>,
    ) -> StartupReport {
        let started = Instant::now();
        let configs: Vec<(ServerConfig, Option<SourceMeta>)> =
            configs.into_iter().map(|config| (config, None)).collect();
        self.connect_all(configs, Origin::Direct, Vec::new(), started)
            .await
    }

    /// Runs `discovery` and connects what it found, like
    /// [`McpManager::connect_discovered`]. Discovery reads small files
    /// synchronously.
    pub async fn discover_and_connect(&self, discovery: &Discovery) -> StartupReport {
        let started = Instant::now();
        let report = discovery.discover();
        self.connect_report(&report, started).await
    }

    /// Connects the servers of a discovery report: enabled ones connect,
    /// disabled ones are recorded, error entries become startup errors, and
    /// servers an earlier discovery added that this report no longer has
    /// are removed (`/mcp` reload).
    pub async fn connect_discovered(&self, report: &DiscoveryReport) -> StartupReport {
        self.connect_report(report, Instant::now()).await
    }

    async fn connect_report(&self, report: &DiscoveryReport, started: Instant) -> StartupReport {
        let mut configs = Vec::new();
        let mut errors = Vec::new();
        for entry in &report.entries {
            match entry {
                DiscoveryEntry::Server(DiscoveredServer { config, source, .. })
                | DiscoveryEntry::Disabled(DiscoveredServer { config, source, .. }) => {
                    let mut config = config.clone();
                    if matches!(entry, DiscoveryEntry::Disabled(_)) {
                        config.enabled = false;
                    }
                    configs.push((config, Some(source.clone())));
                }
                DiscoveryEntry::Error {
                    source,
                    server,
                    diagnostics,
                } => {
                    let error = ServerError::from_diagnostics(diagnostics);
                    tracing::warn!(
                        server = server.as_deref().unwrap_or("-"),
                        source = %source,
                        code = %error.code,
                        "a configuration entry cannot be used: {}",
                        error.message
                    );
                    errors.push(StartupError {
                        server: server.clone(),
                        source: Some(source.clone()),
                        error,
                    });
                }
                _ => {}
            }
        }
        // Servers of an earlier discovery that are gone (or now broken).
        let keep: std::collections::HashSet<&str> =
            configs.iter().map(|(c, _)| c.id.as_str()).collect();
        {
            let core = self.core();
            let mut state = core.lock();
            let gone: Vec<String> = state
                .entries
                .values()
                .filter(|e| e.origin == Origin::Discovered && !keep.contains(&*e.id))
                .map(|e| e.id.to_string())
                .collect();
            for id in gone {
                core.remove_entry(&mut state, &id);
            }
        }
        self.connect_all(configs, Origin::Discovered, errors, started)
            .await
    }

    pub(crate) async fn connect_all(
        &self,
        configs: Vec<(ServerConfig, Option<SourceMeta>)>,
        origin: Origin,
        mut errors: Vec<StartupError>,
        started: Instant,
    ) -> StartupReport {
        let core = self.core();
        let mut ids = Vec::with_capacity(configs.len());
        let mut cached = core.lazy_entries(&configs).await;
        {
            let mut state = core.lock();
            if core.is_closed() {
                drop(state);
                for (config, source) in configs {
                    errors.push(StartupError {
                        server: Some(config.id),
                        source,
                        error: ServerError::new(
                            crate::ErrorCode::Closed,
                            "the manager is closed",
                            "",
                        ),
                    });
                }
                return StartupReport {
                    errors,
                    elapsed: started.elapsed(),
                    ..StartupReport::default()
                };
            }
            for (config, source) in configs {
                ids.push(config.id.clone());
                let lazy = cached.remove(&config.id);
                core.apply(&mut state, config, source, origin, Trigger::Startup, lazy);
            }
        }
        core.startup_report(ids, errors, started).await
    }

    /// The ready servers (and those refreshing, with their current catalog)
    /// that have at least one tool, with their catalogs, captured together.
    /// Project-level servers are included only when `workspace` is inside
    /// their project; `None` includes every server. Cheap: it clones `Arc`s.
    pub fn snapshot(&self, workspace: Option<&Path>) -> Snapshot {
        self.core().snapshot(workspace)
    }

    /// A receiver of every event from now on.
    pub fn events(&self) -> broadcast::Receiver<ManagerEvent> {
        self.core().events.subscribe()
    }

    /// Every server the manager knows, by id.
    pub fn servers(&self) -> Vec<ServerInfo> {
        let state = self.core().lock();
        state
            .entries
            .values()
            .map(|entry| ServerInfo {
                id: entry.id.to_string(),
                name: entry.name.to_string(),
                description: entry.config.description.clone(),
                enabled: entry.config.enabled,
                transport: entry.kind(),
                status: entry.status.clone(),
                source: entry.source.clone(),
                generation: entry.generation,
                lifetime: entry.catalog.as_ref().map(|c| c.lifetime()),
                tool_count: entry.catalog.as_ref().map_or(0, |c| c.tools().len()),
                protocol_version: entry.catalog.as_ref().map(|c| c.protocol_version()),
                first_start: entry.first_start && entry.status.is_pending(),
            })
            .collect()
    }

    /// A server's status.
    pub fn status(&self, id: &str) -> Option<ServerStatus> {
        self.core().lock().entries.get(id).map(|e| e.status.clone())
    }

    /// A server's current catalog (also while it refreshes).
    pub fn catalog(&self, id: &str) -> Option<Arc<Catalog>> {
        self.core()
            .lock()
            .entries
            .get(id)
            .and_then(|e| e.catalog.clone())
    }

    /// A server's source metadata.
    pub fn source(&self, id: &str) -> Option<SourceMeta> {
        self.core()
            .lock()
            .entries
            .get(id)
            .and_then(|e| e.source.clone())
    }

    /// A server's configuration generation.
    pub fn generation(&self, id: &str) -> Option<u64> {
        self.core().lock().entries.get(id).map(|e| e.generation)
    }

    /// The servers a binding offers deferred tools for in place of a
    /// catalog, with those tools: servers a startup report offered cached
    /// tools for that are still connecting, servers a lazy start left
    /// `idle` (their cached tools), and stopped servers that start on use
    /// (the tools they had). A server leaves the list when it publishes a
    /// catalog, fails for good, or its configuration starts it again.
    pub fn deferred(&self) -> Vec<crate::DeferredServer> {
        let core = self.core();
        let state = core.lock();
        state
            .entries
            .values()
            .filter(|entry| entry.status.is_pending() || core.starts_on_use(entry))
            .filter_map(|entry| entry.deferred.clone())
            .collect()
    }

    /// The tool-call deadline configured for server `id`
    /// ([`mcp_config::ServerConfig::call_timeout_ms`]), if it has one.
    pub fn call_timeout(&self, id: &str) -> Option<std::time::Duration> {
        let state = self.core().lock();
        let millis = state.entries.get(id)?.config.call_timeout_ms?;
        Some(std::time::Duration::from_millis(millis))
    }

    /// A handle to the current connection of server `id`, when it has one
    /// (`ready` or `refreshing`). Counts as a use. Each request through the
    /// handle counts as one too and keeps the idle policy away while it is
    /// in flight; once the server reconnected, restarted or closed, the
    /// handle refuses requests with `stale_handle` (see [`ServerHandle`]).
    pub fn server(&self, id: &str) -> Option<ServerHandle> {
        let core = self.core();
        let mut state = core.lock();
        let entry = state.entries.get_mut(id)?;
        let handle = ServerHandle::of(core, entry)?;
        entry.last_used = Instant::now();
        Some(handle)
    }

    /// The log level last set on server `id` through a
    /// [`ServerHandle::set_logging_level`] the server accepted, which every
    /// new connection of it is asked for again; `None` when none was set or
    /// the server is unknown.
    pub fn logging_level(&self, id: &str) -> Option<mcp_proto::types::LoggingLevel> {
        self.core().lock().entries.get(id)?.interest.level
    }

    /// The resources of server `id` subscribed to through
    /// [`ServerHandle::subscribe_resource`] and not unsubscribed from, in
    /// URI order, which every new connection of it is asked for again;
    /// empty for an unknown server.
    pub fn subscribed_resources(&self, id: &str) -> Vec<String> {
        self.core()
            .lock()
            .entries
            .get(id)
            .map(|entry| entry.interest.subscriptions.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether server `id` is stopped and the next
    /// [`wait_ready`](McpManager::wait_ready) starts it: `idle` (lazy start
    /// or the idle timeout), or failed without a scheduled reconnect under
    /// [`RestartPolicy::OnUse`](crate::RestartPolicy::OnUse) with an error
    /// a restart can cure. False for an unknown server.
    pub fn starts_on_use(&self, id: &str) -> bool {
        let core = self.core();
        let state = core.lock();
        state
            .entries
            .get(id)
            .is_some_and(|entry| core.starts_on_use(entry))
    }

    /// The cached tools of a server's current fingerprint, if the manager
    /// has a cache and it holds them, without those the server's tool
    /// filter leaves out.
    pub async fn cached_tools(&self, id: &str) -> Option<CachedTools> {
        let core = self.core();
        let cache = core.cache.as_ref()?;
        let (fingerprint, filter) = {
            let state = core.lock();
            let entry = state.entries.get(id)?;
            (entry.fingerprint.clone()?, entry.config.tools.clone())
        };
        let mut cached = cache.load(&fingerprint).await?;
        cached.tools.retain(|tool| filter.allows(&tool.name));
        Some(cached)
    }

    /// Waits until server `id` is connected, at most until `deadline`, and
    /// returns a handle to its connection and its catalog. Fails at once when the server is
    /// unknown, disabled, disconnected or failed without a scheduled retry.
    /// A server that starts on use ([`McpManager::starts_on_use`]: idle, or
    /// failed under [`RestartPolicy::OnUse`](crate::RestartPolicy::OnUse))
    /// is started, once per wait. Counts as a use.
    pub async fn wait_ready(&self, id: &str, deadline: Instant) -> Result<Connected, WaitError> {
        let core = self.core();
        let mut changed = core.changed.subscribe();
        let mut woken = false;
        loop {
            {
                let mut state = core.lock();
                let closed = core.is_closed();
                let Some(entry) = state.entries.get_mut(id) else {
                    return Err(WaitError::UnknownServer { id: id.to_owned() });
                };
                match &entry.status {
                    ServerStatus::Ready | ServerStatus::Refreshing => {
                        let server = ServerHandle::of(core, entry);
                        if let (Some(server), Some(catalog)) = (server, &entry.catalog) {
                            entry.last_used = Instant::now();
                            return Ok(Connected {
                                server,
                                catalog: Arc::clone(catalog),
                            });
                        }
                    }
                    ServerStatus::Disabled => {
                        return Err(WaitError::Disabled { id: id.to_owned() });
                    }
                    ServerStatus::Disconnected => {
                        return Err(WaitError::Disconnected { id: id.to_owned() });
                    }
                    ServerStatus::Idle => {
                        if closed {
                            return Err(WaitError::Closed);
                        }
                        core.wake(entry);
                        woken = true;
                        continue;
                    }
                    ServerStatus::Error { error, retry: None } => {
                        // Restart on use: once per wait; a second failure
                        // is this wait's answer.
                        if !woken && !closed && core.starts_on_use(entry) {
                            tracing::info!(
                                server = id,
                                "starting a failed server again for its next use"
                            );
                            core.wake(entry);
                            woken = true;
                            continue;
                        }
                        return Err(WaitError::Failed {
                            id: id.to_owned(),
                            error: error.clone(),
                        });
                    }
                    _ => {}
                }
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(WaitError::Closed),
                Err(_) => return Err(WaitError::Timeout { id: id.to_owned() }),
            }
        }
    }

    /// Starts a fresh connection attempt for an enabled server (the
    /// Retry): the configuration is resolved again (a variable set since
    /// counts) and any current connection is closed. Returns at once; the
    /// status and events follow the attempt.
    pub fn retry(&self, id: &str) -> Result<(), ManagerError> {
        let core = self.core();
        let mut state = core.lock();
        if core.is_closed() {
            return Err(ManagerError::Closed);
        }
        let entry = state
            .entries
            .get_mut(id)
            .ok_or_else(|| ManagerError::UnknownServer { id: id.to_owned() })?;
        if !entry.config.enabled {
            return Err(ManagerError::Disabled { id: id.to_owned() });
        }
        core.restart(entry, false);
        Ok(())
    }

    /// Closes a server's connection and waits for it, and for every
    /// earlier connection of the server still closing (one replaced by a
    /// save or retry, one whose peer hung up); the server stays configured,
    /// `disconnected`, until `retry` or a save.
    pub async fn disconnect(&self, id: &str) -> Result<(), ManagerError> {
        let core = self.core();
        {
            let mut state = core.lock();
            let entry = state
                .entries
                .get_mut(id)
                .ok_or_else(|| ManagerError::UnknownServer { id: id.to_owned() })?;
            core.disconnect_entry(entry);
        }
        core.closings.settle(Some(id)).await;
        Ok(())
    }

    /// Closes every connection and waits until every connection the
    /// manager has let go of is closed (the current ones, and those
    /// replaced, removed or ended earlier and still closing); never fails
    /// on one. Servers stay configured, `disconnected`.
    pub async fn disconnect_all(&self) {
        let core = self.core();
        {
            let mut state = core.lock();
            for entry in state.entries.values_mut() {
                core.disconnect_entry(entry);
            }
        }
        core.closings.settle(None).await;
    }

    /// Stops every task, closes every connection politely and waits for
    /// them, and for every connection the manager let go of earlier and is
    /// still closing: once it returns, no server process the manager
    /// started is left running. Afterwards nothing connects: startup calls report every server
    /// as failed and the other operations return [`ManagerError::Closed`].
    pub async fn close(&self) {
        {
            let core = self.core();
            let mut state = core.lock();
            core.mark_closed(&mut state);
        }
        self.disconnect_all().await;
        self.flush_cache().await;
    }

    /// Waits until every tool cache write due so far has landed. Writes
    /// happen in the background after each catalog swap; [`McpManager::close`]
    /// flushes too.
    pub async fn flush_cache(&self) {
        self.core().flush_cache().await;
    }

    // ------------------------------------------------------------------
    // Configuration changes (with or without a store)
}

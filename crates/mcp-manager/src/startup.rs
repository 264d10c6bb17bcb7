//! Startup: the report `connect_servers` returns, and the fast startup gate that decides when to return it.
//!
//! With [`StartupMode::Gate`](crate::StartupMode::Gate) the manager waits up
//! to 250 ms for every server it just started. Then it returns the ready
//! ones, the failures, and for servers still pending the tools the tool
//! cache holds for their fingerprint ("deferred" tools: the tool bridge
//! shows them at once and waits for the server when one is called). A
//! pending server without a cache entry is waited for, so a first start
//! never silently lacks a server's tools; each such wait is bounded by that
//! server's own deadlines. Late results replace the server's slice as they
//! come (a [`ManagerEvent::CatalogSwapped`](crate::ManagerEvent)) and
//! refresh the cache; late failures are logged and show in the status.
//!
//! With [`StartupMode::Background`](crate::StartupMode::Background)
//! nothing waits: every started server is reported pending and joins
//! later snapshots when it is ready.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_config::SourceMeta;
use mcp_proto::types::Tool;
use tokio::time::{Instant, timeout_at};

use crate::cache::CachedTools;
use crate::catalog::Catalog;
use crate::core::Core;
use crate::error::ServerError;
use crate::options::StartupMode;
use crate::status::ServerStatus;

/// What a startup call found, per server.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct StartupReport {
    /// Servers that are ready, with their catalogs.
    pub ready: Vec<ReadyServer>,
    /// Servers still pending when the gate closed, with their cached tools.
    pub deferred: Vec<DeferredServer>,
    /// Servers still pending without cached tools (background mode only:
    /// the gate waits for these).
    pub pending: Vec<PendingServer>,
    /// Servers (or whole config sources) that failed.
    pub errors: Vec<StartupError>,
    /// Servers that are disabled.
    pub disabled: Vec<String>,
    /// How long the call took.
    pub elapsed: Duration,
}

impl StartupReport {
    /// Every tool the host can offer now: the ready servers' and the
    /// deferred ones', with their server id.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &Tool)> + '_ {
        let ready = self.ready.iter().flat_map(|server| {
            server
                .catalog
                .tools()
                .iter()
                .map(move |tool| (server.id.as_str(), tool))
        });
        let deferred = self.deferred.iter().flat_map(|server| {
            server
                .tools
                .iter()
                .map(move |tool| (server.id.as_str(), tool))
        });
        ready.chain(deferred)
    }

    /// The error of server `id`, if it failed.
    pub fn error(&self, id: &str) -> Option<&ServerError> {
        self.errors
            .iter()
            .find(|e| e.server.as_deref() == Some(id))
            .map(|e| &e.error)
    }
}

/// A ready server in a [`StartupReport`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadyServer {
    /// The server id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// Its catalog.
    pub catalog: Arc<Catalog>,
}

/// A server offered through tools it is not serving right now: still
/// connecting when the gate closed (the tools the cache kept from an
/// earlier run), not started yet by a lazy start (the same), or stopped
/// until its next use (the tools it had).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DeferredServer {
    /// The server id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The fingerprint the cache entry belongs to.
    pub fingerprint: String,
    /// The cached tools.
    pub tools: Arc<[Tool]>,
    /// The cached instructions.
    pub instructions: Option<String>,
    /// The status when the gate closed (`queued`, `connecting`, `idle` for a
    /// lazy start or a stopped server that starts on use, or `error`
    /// with a retry scheduled).
    pub status: ServerStatus,
}

/// A server still pending, without tools yet.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PendingServer {
    /// The server id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// Its status.
    pub status: ServerStatus,
}

/// A failure in a [`StartupReport`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StartupError {
    /// The server, or `None` when a whole config source failed.
    pub server: Option<String>,
    /// Where the configuration came from, when known.
    pub source: Option<SourceMeta>,
    /// Why.
    pub error: ServerError,
}

impl Core {
    /// Waits as the startup mode says for the servers `ids`, then reports.
    /// `extra_errors` are failures found before connecting (broken sources).
    pub(crate) async fn startup_report(
        &self,
        ids: Vec<String>,
        extra_errors: Vec<StartupError>,
        started: Instant,
    ) -> StartupReport {
        let mut report = match self.options.startup {
            StartupMode::Background => self.collect(&ids, &HashMap::new(), false),
            StartupMode::Gate { wait } => {
                let gate = started + wait;
                // Read the cache while waiting: by the time the gate
                // closes, the deferred tools are at hand.
                let (cached, ()) =
                    tokio::join!(self.cached_for(&ids), self.wait_settled(&ids, Some(gate)));
                let unsettled: Vec<String> = self
                    .pending_ids(&ids)
                    .into_iter()
                    .filter(|id| !cached.contains_key(id))
                    .collect();
                if !unsettled.is_empty() {
                    tracing::debug!(
                        servers = unsettled.len(),
                        "waiting past the startup gate for servers without cached tools"
                    );
                    self.wait_settled(&unsettled, None).await;
                }
                self.collect(&ids, &cached, true)
            }
        };
        report.errors.splice(0..0, extra_errors);
        report.elapsed = started.elapsed();
        report
    }

    /// Lazy start ([`ManagerOptions::lazy`](crate::ManagerOptions::lazy)):
    /// the cache entries of the enabled `configs` that resolve, by id, read
    /// before any of them is applied. Empty when the option is off or there
    /// is no cache.
    pub(crate) async fn lazy_entries(
        &self,
        configs: &[(mcp_config::ServerConfig, Option<SourceMeta>)],
    ) -> HashMap<String, CachedTools> {
        let mut found = HashMap::new();
        let Some(cache) = self.cache.as_ref().filter(|_| self.options.lazy) else {
            return found;
        };
        for (config, _) in configs.iter().filter(|(config, _)| config.enabled) {
            let Ok(resolved) = self.resolve(config) else {
                continue;
            };
            if let Some(entry) = cache.load(&mcp_config::fingerprint(&resolved)).await {
                found.insert(config.id.clone(), entry);
            }
        }
        found
    }

    /// The cache entries of the servers' current fingerprints.
    async fn cached_for(&self, ids: &[String]) -> HashMap<String, (String, CachedTools)> {
        let Some(cache) = &self.cache else {
            return HashMap::new();
        };
        let fingerprints: Vec<(String, Arc<str>)> = {
            let state = self.lock();
            ids.iter()
                .filter_map(|id| {
                    let entry = state.entries.get(id)?;
                    Some((id.clone(), Arc::clone(entry.fingerprint.as_ref()?)))
                })
                .collect()
        };
        let mut found = HashMap::new();
        for (id, fingerprint) in fingerprints {
            if let Some(entry) = cache.load(&fingerprint).await {
                found.insert(id, (fingerprint.to_string(), entry));
            }
        }
        found
    }

    /// Servers among `ids` still queued or connecting.
    fn pending_ids(&self, ids: &[String]) -> Vec<String> {
        let state = self.lock();
        ids.iter()
            .filter(|id| state.entries.get(*id).is_some_and(|e| unsettled(&e.status)))
            .cloned()
            .collect()
    }

    /// Waits until none of `ids` is queued or connecting, or `deadline`.
    pub(crate) async fn wait_settled(&self, ids: &[String], deadline: Option<Instant>) {
        let mut changed = self.changed.subscribe();
        loop {
            if self.pending_ids(ids).is_empty() {
                return;
            }
            let next = changed.changed();
            let outcome = match deadline {
                Some(deadline) => match timeout_at(deadline, next).await {
                    Ok(outcome) => outcome,
                    Err(_) => return,
                },
                None => next.await,
            };
            if outcome.is_err() {
                return;
            }
        }
    }

    fn collect(
        &self,
        ids: &[String],
        cached: &HashMap<String, (String, CachedTools)>,
        gate: bool,
    ) -> StartupReport {
        let mut state = self.lock();
        let mut report = StartupReport::default();
        for id in ids {
            let Some(entry) = state.entries.get_mut(id) else {
                continue;
            };
            let name = entry.name.to_string();
            match &entry.status {
                ServerStatus::Ready | ServerStatus::Refreshing => match &entry.catalog {
                    Some(catalog) => report.ready.push(ReadyServer {
                        id: id.clone(),
                        name,
                        catalog: Arc::clone(catalog),
                    }),
                    None => report.pending.push(PendingServer {
                        id: id.clone(),
                        name,
                        status: entry.status.clone(),
                    }),
                },
                ServerStatus::Disabled => report.disabled.push(id.clone()),
                // Lazy start: offered from the cache, started on first use.
                ServerStatus::Idle if entry.deferred.is_some() => {
                    report.deferred.extend(entry.deferred.clone());
                }
                ServerStatus::Error { error, .. } => report.errors.push(StartupError {
                    server: Some(id.clone()),
                    source: entry.source.clone(),
                    error: error.clone(),
                }),
                status => match cached.get(id) {
                    Some((fingerprint, cached)) if gate => {
                        let deferred = DeferredServer {
                            id: id.clone(),
                            name,
                            fingerprint: fingerprint.clone(),
                            tools: cached
                                .tools
                                .iter()
                                .filter(|tool| entry.config.tools.allows(&tool.name))
                                .cloned()
                                .collect(),
                            instructions: cached.instructions.clone(),
                            status: status.clone(),
                        };
                        // Kept until the server publishes a catalog, so
                        // that every later binding offers the same tools.
                        entry.deferred = Some(deferred.clone());
                        report.deferred.push(deferred);
                    }
                    _ => report.pending.push(PendingServer {
                        id: id.clone(),
                        name,
                        status: status.clone(),
                    }),
                },
            }
        }
        report
    }
}

/// Whether the gate still waits for a server in this status.
fn unsettled(status: &ServerStatus) -> bool {
    matches!(status, ServerStatus::Queued | ServerStatus::Connecting)
}

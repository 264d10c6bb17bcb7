//! A task's lease on its server's entry: the entry's id and the generation the task was started for, and the only way the task changes the entry.
//!
//! The rule of generations (see `core.rs`) lives here: every change a task
//! makes goes through [`Lease::apply`], which checks under the state lock
//! that the entry still has the lease's generation. Once a configuration
//! change, disconnect or retry has given the entry a new one, every method
//! of an old lease does nothing and says so (`false` or `None`), and the
//! task ends.

use std::sync::Arc;
use std::time::Duration;

use mcp_proto::session::Negotiated;
use mcp_transport::Client;
use tokio::time::Instant;

use crate::cache::CachedTools;
use crate::catalog::Catalog;
use crate::core::{Core, Entry};
use crate::error::{ErrorCode, RetryState, ServerError};
use crate::events::ManagerEvent;
use crate::status::ServerStatus;

/// One generation of one entry, held by the task started for it.
pub(crate) struct Lease {
    core: Arc<Core>,
    id: Arc<str>,
    generation: u64,
}

impl Lease {
    /// The lease on `entry`'s current generation.
    pub(crate) fn new(core: Arc<Core>, entry: &Entry) -> Lease {
        Lease {
            core,
            id: Arc::clone(&entry.id),
            generation: entry.generation,
        }
    }

    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The server's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Runs `f` on the entry if the lease still holds (the entry exists and
    /// has the lease's generation); `None` otherwise.
    pub(crate) fn apply<R>(&self, f: impl FnOnce(&Core, &mut Entry) -> R) -> Option<R> {
        let mut state = self.core.lock();
        let entry = state.entries.get_mut(&*self.id)?;
        if entry.generation != self.generation {
            return None;
        }
        Some(f(&self.core, entry))
    }

    /// Sets the status. Returns whether the lease still holds.
    pub(crate) fn set_status(&self, status: ServerStatus) -> bool {
        self.apply(|core, entry| core.set_status(entry, status))
            .is_some()
    }

    /// Records whether this attempt is the server's first start on this
    /// machine. Returns whether the lease still holds.
    pub(crate) fn set_first_start(&self, first: bool) -> bool {
        self.apply(|_, entry| entry.first_start = first).is_some()
    }

    /// The connection is gone: the entry drops its client and catalog.
    /// Returns whether the lease still holds.
    pub(crate) fn lose_connection(&self) -> bool {
        self.apply(|core, entry| {
            entry.client = None;
            entry.calls = None;
            core.revoke(entry);
        })
        .is_some()
    }

    /// The idle timeout closed the connection: the entry drops its client,
    /// catalog and task and becomes `idle`, offering the catalog's tools as
    /// deferred ones until the next use starts it. Returns whether the
    /// lease still holds.
    pub(crate) fn go_idle(&self) -> bool {
        self.apply(|core, entry| {
            entry.client = None;
            entry.calls = None;
            let catalog = entry.catalog.clone();
            Core::offer_while_stopped(entry, catalog.as_ref());
            core.revoke(entry);
            entry.task = None;
            core.set_status(entry, ServerStatus::Idle);
        })
        .is_some()
    }

    /// Records a failure: the connection and catalog are gone, the status
    /// is `error`, with a retry scheduled when the policy allows one.
    /// Returns the delay before that retry; `None` ends the task.
    pub(crate) fn fail(&self, error: ServerError, failures: u32) -> Option<Duration> {
        let policy = self.core.options.reconnect;
        let retry = (policy.enabled
            && !error.code.is_config_error()
            && error.code != ErrorCode::RefreshFailed
            && failures <= policy.max_attempts)
            .then(|| RetryState {
                attempt: failures,
                max_attempts: policy.max_attempts,
                delay: policy.delay(failures),
            });
        let restarts = retry.is_none()
            && self.core.options.restart == crate::RestartPolicy::OnUse
            && crate::core::restartable(&error);
        let applied = self.apply(|core, entry| {
            entry.client = None;
            entry.calls = None;
            if restarts {
                // Restart on use: the tools stay offered (deferred) and the
                // next use starts the server again.
                let catalog = entry.catalog.clone();
                Core::offer_while_stopped(entry, catalog.as_ref());
            }
            core.revoke(entry);
            if retry.is_none() {
                entry.task = None;
            }
            core.set_status(
                entry,
                ServerStatus::Error {
                    error: error.clone(),
                    retry,
                },
            );
        });
        applied?;
        let id = self.id();
        match retry {
            Some(retry) => tracing::warn!(
                server = id,
                code = %error.code,
                attempt = retry.attempt,
                delay_ms = u64::try_from(retry.delay.as_millis()).unwrap_or(u64::MAX),
                "{}; reconnecting",
                error.message
            ),
            None => {
                tracing::warn!(server = id, code = %error.code, key = %error.config_key, "{}", error.message)
            }
        }
        retry.map(|retry| retry.delay)
    }

    /// Makes `catalog` current (a new lifetime) with `client` as the
    /// entry's client (and `calls` as its connection's count of calls
    /// through handles), and with `ready`, sets the status to `ready`. Then
    /// queues a cache write when the tools changed or `era_changed`.
    /// Returns whether it was applied.
    pub(crate) fn publish(
        &self,
        client: &Client,
        calls: &crate::core::Calls,
        negotiated: &Negotiated,
        era_changed: bool,
        mut catalog: Catalog,
        ready: bool,
    ) -> bool {
        let id = self.id();
        let generation = self.generation;
        let published = self.apply(|core, entry| {
            catalog.lifetime = core.next_lifetime();
            catalog.generation = generation;
            catalog.apply_filter(&entry.config.tools);
            let catalog = Arc::new(catalog);
            let previous = entry.catalog.replace(Arc::clone(&catalog));
            entry.deferred = None;
            entry.client = Some(client.clone());
            entry.calls = Some(Arc::clone(calls));
            core.emit(ManagerEvent::CatalogSwapped {
                id: id.to_owned(),
                lifetime: catalog.lifetime(),
                previous: previous.as_ref().map(|p| p.lifetime()),
                tools: catalog.tools().len(),
                truncated: catalog.is_truncated(),
            });
            // Queued before anyone can see the new status: a host that waits
            // for `ready` and then closes (which flushes the cache) must find
            // the write already queued.
            let tools_changed = previous
                .is_none_or(|p| p.tools != catalog.tools || p.filtered_out != catalog.filtered_out);
            if (tools_changed || era_changed) && core.cache.is_some() {
                // The cache keeps every listed tool: the filter is
                // configuration, applied again whenever tools are read.
                let mut cached = CachedTools::new(id, catalog.listed_tools());
                cached.instructions = catalog.instructions.clone();
                cached.truncated = catalog.tools_truncated;
                cached.era = Some(negotiated.era());
                cached.protocol_version = Some(negotiated.version.as_str().to_owned());
                core.cache_store(catalog.fingerprint(), cached);
            }
            if ready {
                entry.last_used = Instant::now();
                core.set_status(entry, ServerStatus::Ready);
            }
            // Readers of `changed` (the gate, `wait_ready`) see the new catalog.
            core.bump();
            catalog
        });
        let Some(catalog) = published else {
            tracing::debug!(server = id, "dropping the result of an older generation");
            return false;
        };
        tracing::debug!(
            server = id,
            lifetime = %catalog.lifetime(),
            tools = catalog.tools().len(),
            "catalog published"
        );
        true
    }
}

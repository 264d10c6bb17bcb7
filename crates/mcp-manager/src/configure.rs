//! `McpManager`'s store-backed configuration: loading the persisted servers, listing them with their status, and the saves, toggles and removals a settings UI sends.
//!
//! The lifecycle (connecting, snapshots, waiting, closing) is in `manager`;
//! this half adds only what needs a [`Store`](mcp_config::Store) set with
//! [`ManagerBuilder::store`](crate::ManagerBuilder::store).

use std::sync::Arc;

use mcp_config::{ServerConfig, Store};
use tokio::time::Instant;

use crate::core::{Origin, Trigger};
use crate::error::ManagerError;
use crate::manager::McpManager;
use crate::startup::StartupReport;
use crate::status::ServerStatus;

/// A stored server and its status, as [`McpManager::list`] returns them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerListing {
    /// The configuration, with every literal env and header value
    /// replaced by the "saved" marker (write-only secrets).
    pub config: ServerConfig,
    /// The status.
    pub status: ServerStatus,
    /// How many tools the current catalog has.
    pub tool_count: usize,
    /// The protocol version of the current catalog's connection, if any.
    pub protocol_version: Option<mcp_proto::ProtocolVersion>,
    /// The server's generation when `status` was read (0 for a server the
    /// manager does not run): read together with the status, so that a
    /// page that waits for "this generation or later" cannot pair a status
    /// with a generation from another moment.
    pub generation: u64,
}

/// What a save did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SaveReport {
    /// Whether the server is new.
    pub created: bool,
    /// Kept secrets that were dropped (the connection fields changed); the
    /// user must enter them again.
    pub dropped_secrets: Vec<mcp_config::DroppedSecret>,
    /// The status right after the save.
    pub status: ServerStatus,
}

impl McpManager {
    /// Connects every server of the store (enabled ones; disabled ones are
    /// recorded), as the startup mode says.
    pub async fn load_store(&self) -> Result<StartupReport, ManagerError> {
        let started = Instant::now();
        let store = self.store_handle()?;
        let _guard = self.core().store_lock.lock().await;
        let configs = blocking(move || store.load()).await??;
        let configs = configs.into_iter().map(|config| (config, None)).collect();
        Ok(self
            .connect_all(configs, Origin::Store, Vec::new(), started)
            .await)
    }

    /// The servers with redacted configurations and their statuses: the
    /// store's, in file order, when there is a store; else every server the
    /// manager knows. Waits for store writes in progress.
    pub async fn list(&self) -> Result<Vec<ServerListing>, ManagerError> {
        let core = self.core();
        let configs = match &core.store {
            Some(store) => {
                let _guard = core.store_lock.lock().await;
                let store = Arc::clone(store);
                blocking(move || store.list()).await??
            }
            None => core
                .lock()
                .entries
                .values()
                .map(|e| e.config.redacted())
                .collect(),
        };
        let state = core.lock();
        Ok(configs
            .into_iter()
            .map(|config| {
                let entry = state.entries.get(&config.id);
                let status = match entry {
                    Some(entry) => entry.status.clone(),
                    None if config.enabled => ServerStatus::Disconnected,
                    None => ServerStatus::Disabled,
                };
                let catalog = entry.and_then(|e| e.catalog.as_ref());
                let tool_count = catalog.map_or(0, |c| c.tools().len());
                ServerListing {
                    config,
                    status,
                    tool_count,
                    protocol_version: catalog.map(|c| c.protocol_version()),
                    generation: entry.map_or(0, |e| e.generation),
                }
            })
            .collect())
    }

    /// Saves a new or changed server (persisting it when there is a store)
    /// and applies it: an unchanged ready server keeps its
    /// connection; an unchanged failed or pending one starts a fresh
    /// attempt; a changed one reconnects (results of the old connection are
    /// dropped); a disabled one is saved without connecting. A save that
    /// introduces an enabled stdio server (new, or with a changed command
    /// line) gets the one-time setup allowance
    /// ([`ManagerOptions::setup_timeout`](crate::ManagerOptions::setup_timeout)).
    pub async fn save(&self, config: ServerConfig) -> Result<SaveReport, ManagerError> {
        self.put(config, false).await
    }

    /// Like [`McpManager::save`], but fails with `duplicate_id` when the id
    /// exists.
    pub async fn create(&self, config: ServerConfig) -> Result<SaveReport, ManagerError> {
        self.put(config, true).await
    }

    async fn put(&self, config: ServerConfig, create: bool) -> Result<SaveReport, ManagerError> {
        let core = self.core();
        if core.is_closed() {
            return Err(ManagerError::Closed);
        }
        let id = config.id.clone();
        let _guard = core.store_lock.lock().await;
        let (created, dropped_secrets, config) = match &core.store {
            Some(store) => {
                let store = Arc::clone(store);
                let saved_id = id.clone();
                blocking(move || {
                    let outcome = if create {
                        store.create(config)?
                    } else {
                        store.save(config)?
                    };
                    // The stored form has the kept secrets filled in.
                    let stored = store
                        .load()?
                        .into_iter()
                        .find(|c| c.id == saved_id)
                        .ok_or(mcp_config::StoreError::NotFound { id: saved_id })?;
                    Ok::<_, mcp_config::StoreError>((
                        outcome.created,
                        outcome.dropped_secrets,
                        stored,
                    ))
                })
                .await??
            }
            None => {
                let problems = mcp_config::validate(&config);
                if !problems.is_empty() {
                    return Err(ManagerError::Invalid {
                        id,
                        diagnostics: problems,
                    });
                }
                let exists = core.lock().entries.contains_key(&id);
                if create && exists {
                    return Err(ManagerError::Store(mcp_config::StoreError::DuplicateId {
                        id,
                    }));
                }
                (!exists, Vec::new(), config)
            }
        };
        let status = {
            let mut state = core.lock();
            if core.is_closed() {
                return Err(ManagerError::Closed);
            }
            let origin = match &core.store {
                Some(_) => Origin::Store,
                None => state.entries.get(&id).map_or(Origin::Direct, |e| e.origin),
            };
            let source = state.entries.get(&id).and_then(|e| e.source.clone());
            core.apply(
                &mut state,
                config,
                source,
                origin,
                Trigger::Save { created },
                None,
            );
            state
                .entries
                .get(&id)
                .map_or(ServerStatus::Disconnected, |e| e.status.clone())
        };
        Ok(SaveReport {
            created,
            dropped_secrets,
            status,
        })
    }

    /// Enables or disables a server (persisting it when there is a store).
    /// Disabling closes its connection and drops any late result; enabling
    /// connects it.
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<(), ManagerError> {
        let core = self.core();
        if enabled && core.is_closed() {
            return Err(ManagerError::Closed);
        }
        let _guard = core.store_lock.lock().await;
        if let Some(store) = &core.store {
            let store = Arc::clone(store);
            let owned = id.to_owned();
            blocking(move || store.set_enabled(&owned, enabled)).await??;
        }
        {
            let mut state = core.lock();
            let Some(entry) = state.entries.get_mut(id) else {
                if core.store.is_some() {
                    // Stored but never loaded: the store is updated; the
                    // next `load_store` connects it.
                    return Ok(());
                }
                return Err(ManagerError::UnknownServer { id: id.to_owned() });
            };
            // Re-enabling a failed or stopped server starts a fresh
            // attempt; one that is connected or pending is kept.
            if entry.config.enabled != enabled || (enabled && !entry_active(entry)) {
                entry.config.enabled = enabled;
                core.restart(entry, false);
            }
        }
        Ok(())
    }

    /// Removes a server (from the store too, when there is one) and closes
    /// its connection; late results are dropped.
    pub async fn remove(&self, id: &str) -> Result<(), ManagerError> {
        let core = self.core();
        let _guard = core.store_lock.lock().await;
        if let Some(store) = &core.store {
            let store = Arc::clone(store);
            let owned = id.to_owned();
            blocking(move || store.remove(&owned)).await??;
        }
        let removed = core.remove_entry(&mut core.lock(), id);
        if !removed && core.store.is_none() {
            return Err(ManagerError::UnknownServer { id: id.to_owned() });
        }
        core.closings.settle(Some(id)).await;
        Ok(())
    }

    fn store_handle(&self) -> Result<Arc<Store>, ManagerError> {
        self.core().store.clone().ok_or(ManagerError::NoStore)
    }
}

/// Whether an entry is connected or on its way there.
fn entry_active(entry: &crate::core::Entry) -> bool {
    entry.status.is_connected() || entry.status.is_pending()
}

/// Runs a blocking store operation off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ManagerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| ManagerError::StoreTask)
}

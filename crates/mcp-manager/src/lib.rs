//! The MCP connection lifecycle engine: turns validated configuration into live, honest connections.
//!
#![doc = include_str!("../README.md")]
//!
//! ## How it fits
//!
//! [`McpManager`] connects servers in parallel (at most 3 setting up at
//! once, the others `queued`), applies deadlines (initialize 10 s, each
//! `tools/list` page 10 s, whole discovery 15 s, a one-time 120 s for a
//! first stdio save), runs the startup gate with deferred tools from
//! a [`ToolCache`] (or background startup), keeps catalogs fresh
//! on `notifications/tools/list_changed`, reconnects and closes idle
//! connections when asked to, and publishes [`Snapshot`]s and
//! [`ManagerEvent`]s. It is shared by every host session (cheap `Clone`).
//!
//! ## Modules
//!
//! - `manager`: the public API of the lifecycle ([`McpManager`],
//!   [`ManagerBuilder`]: connect, snapshots, status, waiting, closing);
//!   `handle`: [`ServerHandle`], a connected server's connection as the
//!   manager hands it out, bound to that connection and keeping the idle
//!   clock;
//!   `interest`: the log level and resource subscriptions each server was
//!   asked for, asked again of every new connection;
//!   `configure`: its store-backed half (load the persisted servers, list,
//!   save, create, enable, remove: [`ServerListing`], [`SaveReport`]).
//! - `core`: the entries, generations and the rules that start and stop
//!   connections; `task`: the per-server task (connect, list, serve,
//!   refresh, reconnect, idle); `startup`: the gate and [`StartupReport`].
//! - [`options`](ManagerOptions), [`status`](ServerStatus),
//!   [`error`](ServerError), [`events`](ManagerEvent),
//!   [`catalog`](Catalog), [`snapshot`](Snapshot), [`cache`](ToolCache),
//!   [`factory`](TransportFactory).
//!
//! **Invariant:** the manager knows nothing about model-facing tool names or
//! permissions: it hands out tools exactly as servers list them.
//!
//! **Invariant:** management errors carry a stable [`ErrorCode`], a short
//! message and the config key to change; raw server errors and stderr go
//! to `tracing` (a stdio server's last stderr lines, bounded and escaped,
//! also to [`ServerError::cause`], for a person and never in the message),
//! and no status, event, error or `Debug` output contains a secret value.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod cache;
mod catalog;
mod closing;
mod configure;
mod core;
mod error;
mod events;
mod factory;
mod handle;
mod interest;
mod lease;
mod manager;
mod options;
#[cfg(feature = "scripted")]
#[cfg_attr(docsrs, doc(cfg(feature = "scripted")))]
pub mod scripted;
mod snapshot;
mod startup;
mod status;
mod task;

#[cfg(test)]
mod tests;

pub use cache::{CachedTools, JsonFileToolCache, MemoryToolCache, ToolCache};
pub use catalog::{Catalog, LifetimeId};
pub use configure::{SaveReport, ServerListing};
pub use error::{ErrorCode, HandleError, ManagerError, RetryState, ServerError, WaitError};
pub use events::{ELICITATION_ID_LIMIT, ManagerEvent};
pub use factory::{ConnectError, DefaultTransportFactory, TransportFactory};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use factory::{oauth_options, workload_grant};
pub use handle::ServerHandle;
pub use manager::{Connected, ManagerBuilder, McpManager, ServerInfo};
pub use options::{IdlePolicy, ManagerOptions, ReconnectPolicy, RestartPolicy, StartupMode};
pub use snapshot::{Snapshot, SnapshotServer};
pub use startup::{DeferredServer, PendingServer, ReadyServer, StartupError, StartupReport};
pub use status::ServerStatus;

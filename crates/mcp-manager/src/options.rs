//! Manager options: every number the manager works by is a field here, with its default.

use std::time::Duration;

use mcp_config::TransportKind;
use mcp_transport::ClientOptions;

/// Options of an [`McpManager`](crate::McpManager). Start from
/// [`ManagerOptions::default`] and change fields, or chain the setter of
/// each field (every field has one, named after it):
///
/// ```
/// use std::time::Duration;
/// use mcp_manager::{IdlePolicy, ManagerOptions, ReconnectPolicy, StartupMode};
///
/// let options = ManagerOptions::default()
///     .startup(StartupMode::Gate { wait: Duration::from_millis(500) })
///     .reconnect(ReconnectPolicy::on().max_attempts(5))
///     .idle(IdlePolicy::on().stdio(Duration::from_secs(600)))
///     .max_tools(200);
/// assert_eq!(options.reconnect.max_attempts, 5);
/// assert!(options.idle.enabled);
/// ```
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct ManagerOptions {
    /// How `connect_servers` and friends return. Default
    /// [`StartupMode::Gate`] waiting 250 ms.
    pub startup: StartupMode,
    /// How many connections may be set up (transport, initialize, catalog
    /// listing) at once; the others are `queued`. Default 3.
    pub max_concurrent_connects: usize,
    /// The deadline of building the transport and the `initialize`
    /// handshake. A server's own `timeout` overrides it. Default 10 s.
    pub initialize_timeout: Duration,
    /// The deadline of each `tools/list` (and `resources/list`,
    /// `prompts/list`) page. Default 10 s.
    pub list_page_timeout: Duration,
    /// The deadline of a whole discovery (transport, initialize and every
    /// page), counted from the moment the connection slot is taken, so that
    /// waiting in the queue does not eat into it. Default 15 s.
    pub discovery_timeout: Duration,
    /// The one-time allowance for initialize and discovery when a save
    /// introduces an enabled stdio server (a first `npx` download).
    /// Default 120 s.
    pub setup_timeout: Duration,
    /// The deadline of one catalog refresh pass. Default 15 s.
    pub refresh_timeout: Duration,
    /// The least time between the starts of two refresh passes of one
    /// server. The first `list_changed` is acted on at once; the ones that
    /// follow within this interval (or during the pass) coalesce into one
    /// more pass when it has passed. It bounds the refresh rate a server
    /// can cause: a storm of 100 notifications within 1 s ends in at most
    /// two passes. Zero refreshes again as soon as a pass ends. Default 1 s.
    pub refresh_min_interval: Duration,
    /// The most tools kept from `tools/list`; listing stops there and the
    /// catalog says it was truncated. The same bound applies to resources
    /// and prompts. Default 500.
    pub max_tools: usize,
    /// The most pages one listing of tools (resources, prompts) asks for
    /// (MCP "Utilities/Pagination" puts no bound on a server's cursors):
    /// past it, listing stops, the catalog keeps what it got and says it was
    /// truncated, and a warning is logged. Default 1000.
    pub max_list_pages: usize,
    /// The most pages in a row without a single item that a listing
    /// follows before it stops the same way: a server handing out new
    /// cursors for empty pages would otherwise be asked forever.
    /// Default 10.
    pub max_empty_pages: usize,
    /// List resources when the server declares them (manifest).
    /// Default true.
    pub list_resources: bool,
    /// List prompts when the server declares them. Default true.
    pub list_prompts: bool,
    /// Automatic reconnects. Default off: a host that wants them says so.
    pub reconnect: ReconnectPolicy,
    /// Closing unused connections. Default off.
    pub idle: IdlePolicy,
    /// Lazy start: at startup, a server whose configuration the tool cache
    /// has a catalog for is not started at all. It is `idle` at once, its
    /// cached tools are offered as deferred ones (in the startup report and
    /// [`McpManager::deferred`](crate::McpManager::deferred)), and the first
    /// [`wait_ready`](crate::McpManager::wait_ready) (a call of one of its
    /// tools, `load_mcp`) starts it. With an [`IdlePolicy`] it stops again
    /// when unused, and offers the tools it had until it is next needed.
    /// Servers without a cache entry start as the startup mode says.
    /// Needs a tool cache; without one it changes nothing. Default false.
    pub lazy: bool,
    /// What a connection that died becomes when no automatic reconnect is
    /// scheduled. Default [`RestartPolicy::Never`].
    pub restart: RestartPolicy,
    /// The options of every client connection: client info, declared
    /// capabilities, the handler of server requests (roots, sampling,
    /// elicitation). The manager sets the initialize deadline itself.
    pub client: ClientOptions,
    /// How many events a slow [`events`](crate::McpManager::events)
    /// receiver may fall behind before it misses some. Default 1024.
    pub event_capacity: usize,
    /// The most resources of one server the manager keeps subscribed
    /// through [`ServerHandle::subscribe_resource`](crate::ServerHandle::subscribe_resource)
    /// and asks for again on every new connection; a subscription beyond
    /// it is refused before it is sent
    /// ([`HandleError::TooManySubscriptions`](crate::HandleError::TooManySubscriptions)).
    /// Default 256.
    pub max_subscriptions: usize,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            startup: StartupMode::default(),
            max_concurrent_connects: 3,
            initialize_timeout: Duration::from_secs(10),
            list_page_timeout: Duration::from_secs(10),
            discovery_timeout: Duration::from_secs(15),
            setup_timeout: Duration::from_secs(120),
            refresh_timeout: Duration::from_secs(15),
            refresh_min_interval: Duration::from_secs(1),
            max_tools: 500,
            max_list_pages: 1000,
            max_empty_pages: 10,
            list_resources: true,
            list_prompts: true,
            reconnect: ReconnectPolicy::default(),
            idle: IdlePolicy::default(),
            lazy: false,
            restart: RestartPolicy::default(),
            client: ClientOptions::default(),
            event_capacity: 1024,
            max_subscriptions: 256,
        }
    }
}

/// How startup calls return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartupMode {
    /// The fast startup gate: wait up to `wait` for every server;
    /// then return the ready ones, the failures, and deferred tools from the
    /// tool cache for servers still pending. A pending server without a
    /// cache entry is waited for.
    Gate {
        /// How long to wait for every server. Default 250 ms.
        wait: Duration,
    },
    /// Never wait; servers join later snapshots as they become
    /// ready.
    Background,
}

impl Default for StartupMode {
    fn default() -> Self {
        StartupMode::Gate {
            wait: Duration::from_millis(250),
        }
    }
}

/// Automatic reconnects after a failed connect or a dropped connection.
///
/// Configuration errors ([`ErrorCode::is_config_error`](crate::ErrorCode::is_config_error))
/// and failed refreshes are never retried, and no business call is ever
/// replayed: calls in flight on a dropped connection fail. Independently of
/// this policy, a Streamable HTTP session the server forgot ("session
/// expired") is initialized again once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    /// Whether to reconnect at all. Default false.
    pub enabled: bool,
    /// How many tries after one failure. Default 3.
    pub max_attempts: u32,
    /// The wait before the first try; each next one doubles. Default 1 s.
    pub initial_delay: Duration,
    /// The longest wait. Default 30 s (1, 2, 4, 8, 16, 30 s).
    pub max_delay: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            enabled: false,
            max_attempts: 3,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl ReconnectPolicy {
    /// The policy with reconnects turned on and the other defaults.
    pub fn on() -> Self {
        ReconnectPolicy {
            enabled: true,
            ..ReconnectPolicy::default()
        }
    }

    /// The wait before try `attempt` (from 1): `initial_delay * 2^(attempt-1)`,
    /// at most `max_delay`.
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_delay
            .checked_mul(factor)
            .map_or(self.max_delay, |delay| delay.min(self.max_delay))
    }
}

/// Starting a failed server again when it is next needed, between "only
/// an explicit Retry" and automatic reconnects with back-off
/// ([`ReconnectPolicy`]).
///
/// Under [`RestartPolicy::OnUse`], a server whose connection died (a stdio
/// process that exited, an HTTP server that went away) or whose start
/// failed, and that has no reconnect scheduled, keeps its `error` status
/// (the dead connection is reported as such) until something needs it:
/// the next [`wait_ready`](crate::McpManager::wait_ready) (a call of one of
/// its tools, `load_mcp`) starts it once, and that wait ends with the new
/// attempt's outcome; a second failure is reported, not retried within the
/// same wait. Calls that were in flight when it died fail and are never
/// replayed. Configuration errors
/// ([`ErrorCode::is_config_error`](crate::ErrorCode::is_config_error)) and
/// failed refreshes still need a Retry or a save. While it waits, the
/// tools it had are offered as deferred ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RestartPolicy {
    /// Only [`retry`](crate::McpManager::retry) or a save starts a failed
    /// server again.
    #[default]
    Never,
    /// The next use starts it again, once per use.
    OnUse,
}

/// Closing connections nobody used for a while.
#[derive(Clone, Copy, Debug, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct IdlePolicy {
    /// Whether to close idle connections at all. Default false.
    pub enabled: bool,
    /// The idle time of a stdio server. Default 30 min.
    pub stdio: Duration,
    /// The idle time of an HTTP or SSE server. Default 5 min.
    pub http: Duration,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy {
            enabled: false,
            stdio: Duration::from_secs(30 * 60),
            http: Duration::from_secs(5 * 60),
        }
    }
}

impl IdlePolicy {
    /// The policy with idle shutdown turned on and the default times.
    pub fn on() -> Self {
        IdlePolicy {
            enabled: true,
            ..IdlePolicy::default()
        }
    }

    /// The idle time for a transport, or `None` when the policy is off.
    pub fn timeout_for(&self, kind: TransportKind) -> Option<Duration> {
        if !self.enabled {
            return None;
        }
        Some(match kind {
            TransportKind::Stdio => self.stdio,
            _ => self.http,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps_at_30_s() {
        let policy = ReconnectPolicy::on();
        let delays: Vec<u64> = (1..=8).map(|a| policy.delay(a).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(policy.delay(200), Duration::from_secs(30));
    }

    #[test]
    fn defaults_are_the_issues_numbers() {
        let o = ManagerOptions::default();
        assert_eq!(
            o.startup,
            StartupMode::Gate {
                wait: Duration::from_millis(250)
            }
        );
        assert_eq!(o.max_concurrent_connects, 3);
        assert_eq!(o.initialize_timeout, Duration::from_secs(10));
        assert_eq!(o.list_page_timeout, Duration::from_secs(10));
        assert_eq!(o.discovery_timeout, Duration::from_secs(15));
        assert_eq!(o.setup_timeout, Duration::from_secs(120));
        assert_eq!(o.refresh_timeout, Duration::from_secs(15));
        assert_eq!(o.max_tools, 500);
        assert_eq!(o.max_list_pages, 1000);
        assert_eq!(o.max_empty_pages, 10);
        assert!(!o.reconnect.enabled);
        assert_eq!(o.reconnect.max_attempts, 3);
        assert!(!o.idle.enabled);
        assert_eq!(o.idle.stdio, Duration::from_secs(1800));
        assert_eq!(o.idle.http, Duration::from_secs(300));
        assert_eq!(
            IdlePolicy::default().timeout_for(TransportKind::Stdio),
            None
        );
        assert_eq!(
            IdlePolicy::on().timeout_for(TransportKind::Sse),
            Some(Duration::from_secs(300))
        );
    }
}

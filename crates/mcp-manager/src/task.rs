//! The task that runs one server's connection: queue, connect, list, serve, refresh, reconnect, idle.
//!
//! One task per server and generation. It takes a connection slot (at most
//! [`ManagerOptions::max_concurrent_connects`](crate::ManagerOptions::max_concurrent_connects)
//! set up at once), builds the transport through the factory, initializes,
//! lists what the server declared, publishes the catalog, then serves: it
//! follows the server's notifications (a `list_changed` starts a refresh on
//! the same connection), the idle timer and the connection's end. Because a
//! single task owns the connection, two catalog swaps of one server can
//! never run at once, and notifications that arrive during a refresh wait
//! in the channel and coalesce into one more pass.
//!
//! Everything it applies goes through [`Core::with_entry`], which checks
//! the generation: a result of an older generation is dropped.

use std::sync::Arc;
use std::time::Duration;

use mcp_proto::EraPolicy;
use mcp_proto::session::{HandshakeError, Negotiated};
use mcp_proto::text;
use mcp_transport::{Client, ClientError, ServerNotification};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};

use crate::cache::CachedTools;
use crate::catalog::{self, Catalog, Kinds, ListError, ListLimits, Listed};
use crate::core::{Core, Plan};
use crate::error::{ErrorCode, RetryState, ServerError};
use crate::events::ManagerEvent;
use crate::observe::{Observations, Observed};
use crate::status::ServerStatus;

/// One live connection, owned by its task.
struct Conn {
    client: Client,
    observed: Arc<Observations>,
    notifications: mpsc::Receiver<ServerNotification>,
    negotiated: Arc<Negotiated>,
    /// The era this connection found differs from the one the tool cache
    /// holds for the server: the next cache write records it.
    era_changed: bool,
}

enum Attempt {
    Connected(Box<(Conn, Catalog)>),
    Failed(ServerError),
    Stale,
}

/// Why serving a connection ended.
enum End {
    /// The connection closed (the peer hung up, the process exited, the
    /// session expired).
    Closed,
    /// A refresh failed; the connection is to be closed.
    RefreshFailed(ServerError),
    /// The idle timeout passed.
    Idle,
    /// The entry moved to another generation.
    Stale,
}

/// Runs one server until its generation ends or it settles in a final
/// status (error without retry, idle).
pub(crate) async fn run(core: Arc<Core>, id: Arc<str>, generation: u64, mut plan: Plan) {
    let id: &str = &id;
    let mut failures: u32 = 0;
    loop {
        let attempt = attempt(&core, id, generation, &plan).await;
        plan.setup = false;
        let mut conn = match attempt {
            Attempt::Stale => return,
            Attempt::Failed(error) => {
                failures += 1;
                match core.fail(id, generation, error, failures) {
                    Some(delay) => {
                        tokio::time::sleep(delay).await;
                        continue;
                    }
                    None => return,
                }
            }
            Attempt::Connected(connected) => {
                let (conn, catalog) = *connected;
                if !publish(&core, id, generation, &conn, catalog, true) {
                    conn.client.close().await;
                    return;
                }
                conn
            }
        };
        failures = 0;
        let end = serve(&core, id, generation, &plan, &mut conn).await;
        match end {
            End::Stale => {
                conn.client.close().await;
                return;
            }
            End::Idle => {
                let went_idle = core.with_entry(id, generation, |core, entry| {
                    entry.client = None;
                    core.revoke(entry);
                    entry.task = None;
                    core.set_status(entry, ServerStatus::Idle);
                });
                if went_idle.is_some() {
                    tracing::info!(server = id, "closing the idle connection");
                }
                conn.client.close().await;
                return;
            }
            End::RefreshFailed(error) => {
                // Seed 002: a failed refresh closes that connection, leaves
                // the configuration intact and offers Retry; no automatic
                // reconnect.
                core.fail(id, generation, error, u32::MAX);
                conn.client.close().await;
                return;
            }
            End::Closed => {
                // The connection is already gone: its status changes first,
                // and releasing what is left of it (a DELETE that may wait
                // for a vanished HTTP server) happens aside.
                let client = conn.client.clone();
                tokio::spawn(async move { client.close().await });
                // MCP "Transports" §Session Management: a client whose
                // session expired starts a new one. One attempt per expiry,
                // whatever the reconnect policy says; if it fails, the
                // policy decides as for any failure.
                if conn.observed.session_expired() {
                    tracing::info!(server = id, "the session expired; initializing again");
                    let lost = core.with_entry(id, generation, |core, entry| {
                        entry.client = None;
                        core.revoke(entry);
                    });
                    if lost.is_none() {
                        return;
                    }
                    continue;
                }
                let error = closed_error(&conn.observed, &plan);
                failures += 1;
                match core.fail(id, generation, error, failures) {
                    Some(delay) => {
                        tokio::time::sleep(delay).await;
                        continue;
                    }
                    None => return,
                }
            }
        }
    }
}

impl Core {
    /// Records a failure: the connection and catalog are gone, the status
    /// is `error`, with a retry scheduled when the policy allows one.
    /// Returns the delay before that retry; `None` ends the task.
    fn fail(
        &self,
        id: &str,
        generation: u64,
        error: ServerError,
        failures: u32,
    ) -> Option<Duration> {
        let policy = self.options.reconnect;
        let retry = (policy.enabled
            && !error.code.is_config_error()
            && error.code != ErrorCode::RefreshFailed
            && failures <= policy.max_attempts)
            .then(|| RetryState {
                attempt: failures,
                max_attempts: policy.max_attempts,
                delay: policy.delay(failures),
            });
        let applied = self.with_entry(id, generation, |core, entry| {
            entry.client = None;
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
}

/// Takes a slot and connects once, within the discovery deadline.
async fn attempt(core: &Arc<Core>, id: &str, generation: u64, plan: &Plan) -> Attempt {
    let permit = match Arc::clone(&core.slots).try_acquire_owned() {
        Ok(permit) => permit,
        Err(_) => {
            let queued = core.with_entry(id, generation, |core, entry| {
                core.set_status(entry, ServerStatus::Queued);
            });
            if queued.is_none() {
                return Attempt::Stale;
            }
            match Arc::clone(&core.slots).acquire_owned().await {
                Ok(permit) => permit,
                Err(_) => return Attempt::Stale,
            }
        }
    };
    let connecting = core.with_entry(id, generation, |core, entry| {
        core.set_status(entry, ServerStatus::Connecting);
    });
    if connecting.is_none() {
        return Attempt::Stale;
    }
    let (initialize, discovery) = deadlines(core, plan);
    let started = Instant::now();
    let outcome = timeout_at(
        started + discovery,
        discover(core, id, plan, started + initialize, initialize),
    )
    .await;
    drop(permit);
    match outcome {
        Ok(Ok(connected)) => Attempt::Connected(Box::new(connected)),
        Ok(Err(error)) => Attempt::Failed(error),
        Err(_) => Attempt::Failed(ServerError::new(
            ErrorCode::Timeout,
            format!("discovery did not finish within {}", human(discovery)),
            "timeout",
        )),
    }
}

/// The initialize and whole-discovery deadlines of one attempt.
fn deadlines(core: &Core, plan: &Plan) -> (Duration, Duration) {
    let options = &core.options;
    if plan.setup {
        return (options.setup_timeout, options.setup_timeout);
    }
    let initialize = plan
        .resolved
        .timeout_ms
        .map_or(options.initialize_timeout, Duration::from_millis);
    (initialize, options.discovery_timeout.max(initialize))
}

fn limits(core: &Core) -> ListLimits {
    ListLimits {
        page_timeout: core.options.list_page_timeout,
        max_items: core.options.max_tools,
        resources: core.options.list_resources,
        prompts: core.options.list_prompts,
    }
}

/// Builds the transport, settles the era (initialize or discover) and lists
/// the catalog.
///
/// The era (2026-07-28 "Versioning" §Backward Compatibility) belongs to the
/// server: a configured `era` is used as is; with `auto`, the era the tool
/// cache recorded for this configuration is tried first, so a known server
/// pays for the probe once, and the probe runs again when that era no
/// longer works. A server that exits when probed is started again in the
/// handshake era.
async fn discover(
    core: &Core,
    id: &str,
    plan: &Plan,
    init_deadline: Instant,
    initialize: Duration,
) -> Result<(Conn, Catalog), ServerError> {
    let configured = configured_era(&plan.resolved, core.options.client.session.era);
    let cached = match (configured, &core.cache) {
        (EraPolicy::Auto, Some(cache)) => cache.era(&plan.fingerprint).await,
        _ => None,
    };
    let first = cached.map_or(configured, EraPolicy::from);
    let (client, observed) = match connect(core, id, plan, init_deadline, initialize, first).await {
        Ok(connected) => connected,
        Err((error, Some(cause))) if cause.is_closed_during_probe() => {
            tracing::info!(
                server = id,
                "the server exited when probed; starting it again in the handshake era"
            );
            connect(core, id, plan, init_deadline, initialize, EraPolicy::Legacy)
                .await
                .map_err(|(e, _)| e)
                .map_err(|e| {
                    if e.code == ErrorCode::Timeout {
                        error
                    } else {
                        e
                    }
                })?
        }
        Err((_, Some(cause))) if cached.is_some() && !cause.is_timeout() => {
            tracing::info!(server = id, %cause, "the cached protocol era failed; probing again");
            connect(core, id, plan, init_deadline, initialize, EraPolicy::Auto)
                .await
                .map_err(|(e, _)| e)?
        }
        Err((error, _)) => return Err(error),
    };
    let (Some(notifications), Some(negotiated)) =
        (client.take_notifications(), client.negotiated())
    else {
        return Err(ServerError::new(
            ErrorCode::Protocol,
            "the connection ended right after initialize",
            plan.keys.endpoint,
        ));
    };
    let listed = catalog::list(
        &client,
        id,
        negotiated.server_capabilities(),
        Kinds::ALL,
        limits(core),
    )
    .await
    .map_err(|error| {
        tracing::warn!(server = id, %error, "listing the catalog failed");
        list_error(
            &error,
            &client,
            &observed,
            plan,
            core.options.list_page_timeout,
        )
    })?;
    let catalog = build(id, plan, &negotiated, listed, None);
    let era_changed = cached != Some(negotiated.era());
    Ok((
        Conn {
            client,
            observed,
            notifications,
            negotiated,
            era_changed,
        },
        catalog,
    ))
}

/// The era the server's configuration asks for; `auto` leaves the host's
/// own choice ([`ManagerOptions::client`](crate::ManagerOptions::client)'s
/// session era, `Auto` unless the host changed it).
fn configured_era(resolved: &mcp_config::ResolvedConfig, host: EraPolicy) -> EraPolicy {
    match resolved.era {
        mcp_config::ProtocolEra::Modern => EraPolicy::Modern,
        mcp_config::ProtocolEra::Legacy => EraPolicy::Legacy,
        _ => host,
    }
}

/// Builds the transport and settles the era with `era`. On failure, the
/// management error and, when the client got that far, its error.
async fn connect(
    core: &Core,
    id: &str,
    plan: &Plan,
    init_deadline: Instant,
    initialize: Duration,
    era: EraPolicy,
) -> Result<(Client, Arc<Observations>), (ServerError, Option<ClientError>)> {
    let init_timeout = || {
        ServerError::new(
            ErrorCode::Timeout,
            format!("initialize did not finish within {}", human(initialize)),
            "timeout",
        )
    };
    let transport = match timeout_at(
        init_deadline,
        core.factory.connect(&plan.resolved, init_deadline),
    )
    .await
    {
        Err(_) => return Err((init_timeout(), None)),
        Ok(Err(error)) => {
            tracing::warn!(
                server = id,
                code = %error.error.code,
                cause = ?error.source.as_ref().map(ToString::to_string),
                "cannot build the transport"
            );
            return Err((error.error, None));
        }
        Ok(Ok(transport)) => transport,
    };
    let observed = Arc::new(Observations::default());
    let transport = Observed::new(transport, Arc::clone(&observed));
    let mut options = core.options.client.clone();
    options.session.era = era;
    options.session.initialize_timeout = init_deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    match timeout_at(init_deadline, Client::connect(transport, options)).await {
        Err(_) => Err((init_timeout(), None)),
        Ok(Err(error)) => {
            tracing::warn!(server = id, %error, era = era.as_str(), "initialize failed");
            let management = initialize_error(&error, &observed, plan, initialize);
            Err((management, Some(error)))
        }
        Ok(Ok(client)) => Ok((client, observed)),
    }
}

/// A catalog from a listing pass; kinds the pass did not list come from
/// `previous`.
fn build(
    id: &str,
    plan: &Plan,
    negotiated: &Negotiated,
    listed: Listed,
    previous: Option<&Catalog>,
) -> Catalog {
    let (tools, tools_truncated) = listed.tools.unwrap_or_else(|| {
        previous.map_or((Vec::new(), false), |p| {
            (p.tools.clone(), p.tools_truncated)
        })
    });
    Catalog {
        server_id: id.to_owned(),
        // Both are set when the catalog is published.
        lifetime: crate::catalog::LifetimeId::new(0),
        generation: 0,
        fingerprint: plan.fingerprint.to_string(),
        tools,
        tools_truncated,
        resources: listed
            .resources
            .unwrap_or_else(|| previous.and_then(|p| p.resources.clone())),
        prompts: listed
            .prompts
            .unwrap_or_else(|| previous.and_then(|p| p.prompts.clone())),
        instructions: negotiated.instructions().map(str::to_owned),
        server_info: negotiated.server_info().clone(),
        capabilities: negotiated.server_capabilities().clone(),
        protocol_version: negotiated.version,
    }
}

/// Makes `catalog` current (a new lifetime) if the generation still holds,
/// and with `ready`, sets the status to `ready`. Then queues a cache write
/// when the tools changed. Returns whether it was applied.
fn publish(
    core: &Core,
    id: &str,
    generation: u64,
    conn: &Conn,
    mut catalog: Catalog,
    ready: bool,
) -> bool {
    let published = core.with_entry(id, generation, |core, entry| {
        catalog.lifetime = core.next_lifetime();
        catalog.generation = generation;
        let catalog = Arc::new(catalog);
        let previous = entry.catalog.replace(Arc::clone(&catalog));
        entry.client = Some(conn.client.clone());
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
        let tools_changed = previous.is_none_or(|p| p.tools != catalog.tools);
        if (tools_changed || conn.era_changed) && core.cache.is_some() {
            let mut cached = CachedTools::new(id, catalog.tools().to_vec());
            cached.instructions = catalog.instructions.clone();
            cached.truncated = catalog.tools_truncated;
            cached.era = Some(conn.negotiated.era());
            cached.protocol_version = Some(conn.negotiated.version.as_str().to_owned());
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

/// Serves a published connection until it ends.
async fn serve(core: &Core, id: &str, generation: u64, plan: &Plan, conn: &mut Conn) -> End {
    let min_interval = core.options.refresh_min_interval;
    let idle = core.options.idle.timeout_for(plan.kind);
    let mut pending = Kinds::default();
    let mut last_pass: Option<Instant> = None;
    loop {
        let refresh_at = pending
            .any()
            .then(|| last_pass.map_or_else(Instant::now, |last| last + min_interval));
        // Idle counts from the last use through the manager or the last
        // activity on the connection itself (a request starting, a message
        // arriving), whichever is later.
        let idle_at = match idle {
            Some(idle) => {
                let activity = conn.client.last_activity();
                match core.with_entry(id, generation, |_, entry| {
                    entry.last_used.max(activity) + idle
                }) {
                    Some(at) => Some(at),
                    None => return End::Stale,
                }
            }
            None => None,
        };
        tokio::select! {
            biased;
            notification = conn.notifications.recv() => {
                let Some(notification) = notification else {
                    return End::Closed;
                };
                if !note(core, id, generation, &mut pending, notification) {
                    return End::Stale;
                }
            }
            () = sleep_until_optional(refresh_at) => {
                last_pass = Some(Instant::now());
                let kinds = std::mem::take(&mut pending);
                if let Err(end) = refresh(core, id, generation, plan, conn, kinds).await {
                    return end;
                }
                // Notifications that came during the pass coalesce into the
                // next one; read them now so the status does not flicker.
                while let Ok(notification) = conn.notifications.try_recv() {
                    if !note(core, id, generation, &mut pending, notification) {
                        return End::Stale;
                    }
                }
                if !pending.any() {
                    let ready = core.with_entry(id, generation, |core, entry| {
                        core.set_status(entry, ServerStatus::Ready);
                    });
                    if ready.is_none() {
                        return End::Stale;
                    }
                }
            }
            () = sleep_until_optional(idle_at) => {
                // A call in flight (or a server request being answered) is
                // use, however long ago it started: the connection stays, and
                // the idle period restarts now.
                let busy = conn.client.in_flight() > 0;
                let activity = conn.client.last_activity();
                let expired = idle.and_then(|idle| {
                    core.with_entry(id, generation, |_, entry| {
                        if busy {
                            entry.last_used = Instant::now();
                            return false;
                        }
                        entry.last_used.max(activity).elapsed() >= idle
                    })
                });
                match expired {
                    Some(true) => return End::Idle,
                    Some(false) => {}
                    None => return End::Stale,
                }
            }
        }
    }
}

/// Handles one notification: list changes mark what to refresh (and the
/// status `refreshing`), log messages go to `tracing`. Returns false when
/// the generation has ended.
fn note(
    core: &Core,
    id: &str,
    generation: u64,
    pending: &mut Kinds,
    notification: ServerNotification,
) -> bool {
    let before = *pending;
    match notification {
        ServerNotification::ToolsListChanged => pending.tools = true,
        ServerNotification::ResourcesListChanged => pending.resources = true,
        ServerNotification::PromptsListChanged => pending.prompts = true,
        ServerNotification::LogMessage(message) => {
            tracing::debug!(server = id, level = ?message.level, data = %message.data, "server log");
            return true;
        }
        other => {
            tracing::trace!(server = id, notification = ?other, "server notification");
            return true;
        }
    }
    if before.any() {
        return true;
    }
    core.with_entry(id, generation, |core, entry| {
        core.set_status(entry, ServerStatus::Refreshing);
    })
    .is_some()
}

/// One refresh pass on the same connection, within the refresh deadline.
async fn refresh(
    core: &Core,
    id: &str,
    generation: u64,
    plan: &Plan,
    conn: &mut Conn,
    kinds: Kinds,
) -> Result<(), End> {
    let previous = core
        .with_entry(id, generation, |_, entry| entry.catalog.clone())
        .ok_or(End::Stale)?;
    let deadline = core.options.refresh_timeout;
    let outcome = timeout(
        deadline,
        catalog::list(
            &conn.client,
            id,
            conn.negotiated.server_capabilities(),
            kinds,
            limits(core),
        ),
    )
    .await;
    let message = match outcome {
        Ok(Ok(listed)) => {
            let catalog = build(id, plan, &conn.negotiated, listed, previous.as_deref());
            if !publish(core, id, generation, conn, catalog, false) {
                return Err(End::Stale);
            }
            return Ok(());
        }
        Ok(Err(error)) => {
            tracing::warn!(server = id, %error, "the catalog refresh failed");
            match error {
                ListError::RepeatedCursor => {
                    "the server repeated a pagination cursor while refreshing its catalog"
                        .to_owned()
                }
                ListError::Client(error) if error.is_timeout() => format!(
                    "a catalog page did not arrive within {} during a refresh",
                    human(core.options.list_page_timeout)
                ),
                ListError::Client(_) => "the server failed to list its catalog again".to_owned(),
            }
        }
        Err(_) => format!(
            "the catalog refresh did not finish within {}",
            human(deadline)
        ),
    };
    if conn.client.is_closed() {
        return Err(End::Closed);
    }
    Err(End::RefreshFailed(ServerError::new(
        ErrorCode::RefreshFailed,
        message,
        plan.keys.endpoint,
    )))
}

/// The management error for a failed `initialize`. The raw error was logged.
fn initialize_error(
    error: &ClientError,
    observed: &Observations,
    plan: &Plan,
    initialize: Duration,
) -> ServerError {
    let endpoint = plan.keys.endpoint;
    if observed.auth_required() {
        return crate::error::auth_required(&plan.resolved.id);
    }
    if observed.auth_rejected() {
        return auth_rejected(plan);
    }
    if let Some(failure) = observed.oauth_failure() {
        return oauth_failed(&failure);
    }
    let (code, message) = match error {
        ClientError::Timeout(_) | ClientError::Handshake(HandshakeError::Timeout(_)) => {
            return ServerError::new(
                ErrorCode::Timeout,
                format!("initialize did not finish within {}", human(initialize)),
                "timeout",
            );
        }
        ClientError::Handshake(HandshakeError::Rejected(e)) => {
            return ServerError::new(
                ErrorCode::Protocol,
                format!(
                    "the server refused to initialize (code {}): {}",
                    e.code,
                    server_text(&e.message)
                ),
                endpoint,
            );
        }
        ClientError::Handshake(HandshakeError::DiscoverRejected(e)) => {
            return ServerError::new(
                ErrorCode::Protocol,
                format!(
                    "the server refused server/discover (code {}): {}",
                    e.code,
                    server_text(&e.message)
                ),
                "era",
            );
        }
        ClientError::Handshake(error @ HandshakeError::UnsupportedVersion(_))
        | ClientError::Handshake(error @ HandshakeError::NoCommonVersion { .. }) => {
            return ServerError::new(ErrorCode::Protocol, server_text(&error.to_string()), "era");
        }
        ClientError::Handshake(HandshakeError::InvalidResult(_)) => (
            ErrorCode::Protocol,
            "the server's initialize result is malformed",
        ),
        ClientError::Handshake(HandshakeError::Undelivered(reason))
        | ClientError::Undelivered(reason)
            if reason.starts_with("HTTP ") =>
        {
            return ServerError::new(
                ErrorCode::Protocol,
                format!("the server refused the connection: {}", server_text(reason)),
                endpoint,
            );
        }
        ClientError::Handshake(HandshakeError::Undelivered(_)) | ClientError::Undelivered(_) => {
            (ErrorCode::Closed, "the server could not be reached")
        }
        ClientError::Handshake(HandshakeError::ClosedDuringProbe) => (
            ErrorCode::Closed,
            "the server closed the connection when probed with server/discover",
        ),
        ClientError::Closed { .. } | ClientError::SessionExpired => (
            ErrorCode::Closed,
            if endpoint == "transport.command" {
                "the server process exited during initialize"
            } else {
                "the server closed the connection during initialize"
            },
        ),
        _ => (ErrorCode::Protocol, "initialize failed"),
    };
    ServerError::new(code, message, endpoint)
}

/// Server text in a management error: words that look like credentials
/// (a known token prefix such as `sk-`, or a run of 32 or more token
/// characters) replaced by `[redacted]` (a server may echo what it was
/// sent), then at most 200 bytes of it ([`text::bound`], with its cut
/// marker), control characters shown escaped on one line, never
/// interpreted ([`text::escape`]).
fn server_text(peer: &str) -> String {
    let mut out = String::with_capacity(peer.len().min(256));
    for word in peer.split_inclusive(char::is_whitespace) {
        let bare = word.trim_end();
        if looks_like_a_credential(bare.trim_matches(|c: char| "\"'()[]{}<>,;.".contains(c))) {
            out.push_str("[redacted]");
            out.push_str(&word[bare.len()..]);
        } else {
            out.push_str(word);
        }
    }
    text::escape(&text::bound(&out, 200), text::Lines::One).into_owned()
}

/// Whether a word of server text looks like a secret (see [`server_text`]).
fn looks_like_a_credential(word: &str) -> bool {
    const PREFIXES: [&str; 8] = ["sk-", "sk_", "pk_", "ghp_", "gho_", "xoxb-", "xoxp-", "eyJ"];
    let token_chars = |w: &str| {
        w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '/' | '='))
    };
    (PREFIXES.iter().any(|p| word.starts_with(p)) && word.len() > 8 && token_chars(word))
        || (word.len() >= 32 && token_chars(word))
}

/// The management error for a failed first listing. The raw error was logged.
fn list_error(
    error: &ListError,
    client: &Client,
    observed: &Observations,
    plan: &Plan,
    page_timeout: Duration,
) -> ServerError {
    let endpoint = plan.keys.endpoint;
    if observed.auth_required() {
        return crate::error::auth_required(&plan.resolved.id);
    }
    if observed.auth_rejected() {
        return auth_rejected(plan);
    }
    if let Some(failure) = observed.oauth_failure() {
        return oauth_failed(&failure);
    }
    let (code, message) = match error {
        ListError::RepeatedCursor => (
            ErrorCode::InvalidCatalog,
            "the server repeated a pagination cursor in tools/list".to_owned(),
        ),
        ListError::Client(error) if error.is_timeout() => {
            return ServerError::new(
                ErrorCode::Timeout,
                format!(
                    "a tools/list page did not arrive within {}",
                    human(page_timeout)
                ),
                "timeout",
            );
        }
        ListError::Client(ClientError::InvalidResult { .. }) => (
            ErrorCode::InvalidCatalog,
            "the server's tools/list result is malformed".to_owned(),
        ),
        ListError::Client(_) if client.is_closed() => (
            ErrorCode::Closed,
            "the server closed the connection while listing its tools".to_owned(),
        ),
        ListError::Client(_) => (
            ErrorCode::Protocol,
            "the server failed tools/list".to_owned(),
        ),
    };
    ServerError::new(code, message, endpoint)
}

/// The OAuth client could not get credentials, so the server was never
/// asked: say why (the message names no secret), not "could not be reached".
fn oauth_failed(failure: &str) -> ServerError {
    ServerError::new(
        ErrorCode::AuthRejected,
        format!("OAuth failed: {failure}"),
        "transport.oauth",
    )
}

fn auth_rejected(plan: &Plan) -> ServerError {
    ServerError::new(
        ErrorCode::AuthRejected,
        "the server rejected the credentials",
        plan.keys.auth,
    )
}

/// The management error for a connection that ended while serving.
fn closed_error(observed: &Observations, plan: &Plan) -> ServerError {
    if observed.auth_required() {
        return crate::error::auth_required(&plan.resolved.id);
    }
    if observed.auth_rejected() {
        return auth_rejected(plan);
    }
    if let Some(failure) = observed.oauth_failure() {
        return oauth_failed(&failure);
    }
    let message = if observed.session_expired() {
        "the server ended the session"
    } else if plan.keys.endpoint == "transport.command" {
        "the server process exited"
    } else {
        "the server closed the connection"
    };
    ServerError::new(ErrorCode::Closed, message, plan.keys.endpoint)
}

async fn sleep_until_optional(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A duration as people write it: `250 ms`, `10 s`, `2 min`.
pub(crate) fn human(duration: Duration) -> String {
    let (secs, millis) = (duration.as_secs(), duration.subsec_millis());
    if secs == 0 || millis != 0 {
        format!("{} ms", duration.as_millis())
    } else if secs >= 60 && (secs / 60) * 60 == secs {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(Duration::from_millis(250)), "250 ms");
        assert_eq!(human(Duration::from_secs(10)), "10 s");
        assert_eq!(human(Duration::from_secs(120)), "2 min");
        assert_eq!(human(Duration::from_millis(1500)), "1500 ms");
    }
}

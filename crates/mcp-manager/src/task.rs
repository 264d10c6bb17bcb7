//! The task that runs one server's connection: queue, connect, list, serve, refresh, reconnect, idle.
//!
//! One task per server and generation. It takes a connection slot (at most
//! [`ManagerOptions::max_concurrent_connects`](crate::ManagerOptions::max_concurrent_connects)
//! set up at once), builds the transport through the factory, initializes,
//! lists what the server declared, publishes the catalog, then serves: it
//! follows the server's notifications (a `list_changed` starts a refresh on
//! the same connection), the idle timer and the connection's end. Every
//! new connection is asked for the log level and subscriptions the host
//! set on earlier ones (`interest.rs`) before the server is `ready`. Because a
//! single task owns the connection, two catalog swaps of one server can
//! never run at once, and notifications that arrive during a refresh wait
//! in the channel and coalesce into one more pass.
//!
//! Everything it applies goes through its [`Lease`], which checks the
//! generation: a result of an older generation is dropped. Every
//! connection it makes is [`Owned`]: when the task lets go of it, however
//! it does, the connection is closed where `close` waits for it.

use std::sync::Arc;
use std::time::Duration;

use mcp_config::{ResolvedTransport, TransportKind};
use mcp_proto::session::{HandshakeError, Negotiated};
use mcp_proto::text;
use mcp_proto::types::ElicitationCompleteNotificationParams;
use mcp_proto::{EraPolicy, RawJson, methods};
use mcp_transport::{Client, ClientError, ServerNotification, TransportError};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};

use crate::catalog::{self, Catalog, Kinds, ListError, ListLimits, Listed};
use crate::closing::Owned;
use crate::core::{Core, Plan};
use crate::error::{ErrorCode, ServerError, server_text};
use crate::events::{ELICITATION_ID_LIMIT, ManagerEvent};
use crate::lease::Lease;
use crate::status::ServerStatus;

/// One live connection, owned by its task.
struct Conn {
    owned: Owned,
    notifications: mpsc::Receiver<ServerNotification>,
    negotiated: Arc<Negotiated>,
    /// The era this connection found differs from the one the tool cache
    /// holds for the server: the next cache write records it.
    era_changed: bool,
    /// The calls in flight through handles to this connection; also what
    /// tells handles to this connection from handles to any other.
    calls: crate::core::Calls,
}

impl Conn {
    fn client(&self) -> &Client {
        self.owned.client()
    }

    /// Makes `catalog` current through `lease` (see [`Lease::publish`]).
    fn publish(&self, lease: &Lease, catalog: Catalog, ready: bool) -> bool {
        lease.publish(
            self.client(),
            &self.calls,
            &self.negotiated,
            self.era_changed,
            catalog,
            ready,
        )
    }
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
/// status (error without retry, idle). Whatever connection it holds when
/// it returns is closed as its [`Conn`] is dropped.
pub(crate) async fn run(lease: Lease, mut plan: Plan) {
    let id = lease.id();
    let mut failures: u32 = 0;
    loop {
        let attempt = attempt(&lease, &plan).await;
        plan.setup = false;
        let mut conn = match attempt {
            Attempt::Stale => return,
            Attempt::Failed(error) => {
                if back_off(&lease, error, &mut failures).await {
                    continue;
                }
                return;
            }
            Attempt::Connected(connected) => {
                let (conn, catalog) = *connected;
                // A new connection has forgotten what the host asked of the
                // last one: asked again before anyone sees `ready`.
                let Some(interest) = lease.apply(|_, entry| entry.interest.clone()) else {
                    return;
                };
                crate::interest::reapply(
                    id,
                    conn.client(),
                    &conn.negotiated,
                    interest,
                    lease.core().options.list_page_timeout,
                )
                .await;
                if !conn.publish(&lease, catalog, true) {
                    return;
                }
                conn
            }
        };
        failures = 0;
        let end = serve(&lease, &plan, &mut conn).await;
        match end {
            End::Stale => return,
            End::Idle => {
                if lease.go_idle() {
                    tracing::info!(server = id, "closing the idle connection");
                }
                return;
            }
            End::RefreshFailed(error) => {
                // A failed refresh closes that connection, leaves
                // the configuration intact and offers Retry; no automatic
                // reconnect.
                lease.fail(error, u32::MAX);
                return;
            }
            End::Closed => {
                // The connection is already gone: its status changes first,
                // and releasing what is left of it (a DELETE that may wait
                // for a vanished HTTP server, a process that outlived its
                // stdout) happens aside, where `close` waits for it.
                let reason = conn.owned.client().closed_reason();
                // Read before the close aside: what the server wrote as it
                // went, which may miss its very last bytes.
                let stderr = conn.owned.client().stderr_tail();
                drop(conn);
                // MCP "Transports" §Session Management: a client whose
                // session expired starts a new one. One attempt per expiry,
                // whatever the reconnect policy says; if it fails, the
                // policy decides as for any failure.
                if reason.as_ref().is_some_and(session_expired) {
                    tracing::info!(server = id, "the session expired; initializing again");
                    if !lease.lose_connection() {
                        return;
                    }
                    continue;
                }
                let error = closed_error(reason.as_ref(), &plan).with_stderr(stderr.as_deref());
                if back_off(&lease, error, &mut failures).await {
                    continue;
                }
                return;
            }
        }
    }
}

/// Records one more failure in a row; when the reconnect policy allows
/// another attempt, waits its delay and returns `true`, otherwise the
/// server settles in its error and this returns `false`.
async fn back_off(lease: &Lease, error: ServerError, failures: &mut u32) -> bool {
    *failures += 1;
    match lease.fail(error, *failures) {
        Some(delay) => {
            tokio::time::sleep(delay).await;
            true
        }
        None => false,
    }
}

/// Takes a slot and connects once, within the discovery deadline.
async fn attempt(lease: &Lease, plan: &Plan) -> Attempt {
    let core = lease.core();
    let first = !plan.setup && first_start(core, plan).await;
    if !lease.set_first_start(plan.setup || first) {
        return Attempt::Stale;
    }
    let plan = &Plan {
        setup: plan.setup || first,
        ..plan.clone()
    };
    let permit = match Arc::clone(&core.slots).try_acquire_owned() {
        Ok(permit) => permit,
        Err(_) => {
            if !lease.set_status(ServerStatus::Queued) {
                return Attempt::Stale;
            }
            match Arc::clone(&core.slots).acquire_owned().await {
                Ok(permit) => permit,
                Err(_) => return Attempt::Stale,
            }
        }
    };
    if !lease.set_status(ServerStatus::Connecting) {
        return Attempt::Stale;
    }
    let (initialize, discovery) = deadlines(core, plan);
    let started = Instant::now();
    let latest = Latest::default();
    let outcome = timeout_at(
        started + discovery,
        discover(lease, plan, started + initialize, initialize, &latest),
    )
    .await;
    drop(permit);
    match outcome {
        Ok(Ok(connected)) => Attempt::Connected(Box::new(connected)),
        Ok(Err(error)) => Attempt::Failed(error),
        Err(_) => {
            let error = ServerError::new(
                ErrorCode::Timeout,
                format!("discovery did not finish within {}", human(discovery)),
                "timeout",
            );
            // What the server wrote, when the deadline caught it still in
            // its handshake (its process is stopped as the client drops).
            let client = mcp_proto::sync::lock(&latest).take();
            Attempt::Failed(match client {
                Some(client) if client.negotiated().is_none() => {
                    stray_output(error, client.first_stray_line().as_deref(), discovery)
                        .with_stderr(client.stderr_tail().as_deref())
                }
                _ => error,
            })
        }
    }
}

/// The client of the connection an attempt is making, kept so that a
/// discovery deadline that drops the attempt can still read what the
/// server wrote.
type Latest = std::sync::Mutex<Option<Client>>;

/// Whether an attempt is a stdio server's first start on this machine,
/// when a package launcher may be downloading it: the tool cache has no
/// entry for its configuration, or, without a cache, its command is a
/// package launcher's.
async fn first_start(core: &Core, plan: &Plan) -> bool {
    let ResolvedTransport::Stdio(stdio) = &plan.resolved.transport else {
        return false;
    };
    match &core.cache {
        Some(cache) => !cache.contains(&plan.fingerprint).await,
        None => is_package_launcher(&stdio.command, &stdio.args),
    }
}

/// Whether `command args` runs a package that is fetched on first use:
/// `npx`, `pnpx`, `bunx`, `uvx`, `pipx run`, `pnpm dlx`, `yarn dlx`,
/// `uv tool run`, `docker run` or `podman run`.
pub(crate) fn is_package_launcher(command: &str, args: &[String]) -> bool {
    let name = std::path::Path::new(command)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(command);
    let first = args.first().map(String::as_str);
    match name {
        "npx" | "pnpx" | "bunx" | "uvx" => true,
        "pipx" | "docker" | "podman" => first == Some("run"),
        "pnpm" | "yarn" => first == Some("dlx"),
        "uv" => first == Some("tool") && args.get(1).is_some_and(|a| a == "run"),
        _ => false,
    }
}

/// The initialize and whole-discovery deadlines of one attempt.
fn deadlines(core: &Core, plan: &Plan) -> (Duration, Duration) {
    let options = &core.options;
    if plan.setup {
        // A configured initialize deadline longer than the allowance wins.
        let setup = plan
            .resolved
            .timeout_ms
            .map_or(options.setup_timeout, Duration::from_millis)
            .max(options.setup_timeout);
        return (setup, setup);
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
        max_pages: core.options.max_list_pages,
        max_empty_pages: core.options.max_empty_pages,
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
    lease: &Lease,
    plan: &Plan,
    init_deadline: Instant,
    initialize: Duration,
    latest: &Latest,
) -> Result<(Conn, Catalog), ServerError> {
    let (core, id) = (lease.core(), lease.id());
    let configured = configured_era(&plan.resolved, core.options.client.session.era);
    let cached = match (configured, &core.cache) {
        (EraPolicy::Auto, Some(cache)) => cache.era(&plan.fingerprint).await,
        _ => None,
    };
    let first = cached.map_or(configured, EraPolicy::from);
    let mut owned = match connect(core, id, plan, init_deadline, initialize, first, latest).await {
        Ok(connected) => connected,
        Err((error, Some(cause))) if cause.is_closed_during_probe() => {
            tracing::info!(
                server = id,
                "the server exited when probed; starting it again in the handshake era"
            );
            connect(
                core,
                id,
                plan,
                init_deadline,
                initialize,
                EraPolicy::Legacy,
                latest,
            )
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
            connect(
                core,
                id,
                plan,
                init_deadline,
                initialize,
                EraPolicy::Auto,
                latest,
            )
            .await
            .map_err(|(e, _)| e)?
        }
        Err((error, _)) => return Err(error),
    };
    // MCP "Transports" §Session Management: a session that expires between
    // initialize and the listing is started again with a fresh initialize,
    // once; a second expiry in a row is the server's failure.
    let mut renewed = false;
    loop {
        let client = owned.client();
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
            client,
            id,
            negotiated.server_capabilities(),
            Kinds::ALL,
            limits(core),
        )
        .await;
        let listed = match listed {
            Ok(listed) => listed,
            Err(error) if listing_session_expired(&error, client) => {
                if renewed {
                    owned.client().close().await;
                    tracing::warn!(server = id, "the new session expired too");
                    return Err(ServerError::new(
                        ErrorCode::SessionExpired,
                        "the server ended the session before its tools were listed, \
                         and again right after a new session started",
                        plan.keys.endpoint,
                    ));
                }
                renewed = true;
                tracing::info!(
                    server = id,
                    "the session expired before the catalog was listed; initializing again"
                );
                // The expired connection is closed as it is replaced.
                owned = connect(
                    core,
                    id,
                    plan,
                    Instant::now() + initialize,
                    initialize,
                    EraPolicy::from(negotiated.era()),
                    latest,
                )
                .await
                .map_err(|(e, _)| e)?;
                continue;
            }
            Err(error) => {
                tracing::warn!(server = id, error = %text::ErrorChain(&error), "listing the catalog failed");
                let error = list_error(&error, client, plan, core.options.list_page_timeout);
                client.close().await;
                return Err(error.with_stderr(client.stderr_tail().as_deref()));
            }
        };
        let catalog = build(id, plan, &negotiated, listed, None);
        let era_changed = cached != Some(negotiated.era());
        return Ok((
            Conn {
                owned,
                notifications,
                negotiated,
                era_changed,
                calls: crate::core::Calls::default(),
            },
            catalog,
        ));
    }
}

/// Whether a listing failed because the session expired (HTTP 404 on a
/// request that carried `Mcp-Session-Id`).
fn listing_session_expired(error: &ListError, client: &Client) -> bool {
    match error {
        ListError::Client(error) => {
            session_expired(error) || client.closed_reason().is_some_and(|r| session_expired(&r))
        }
        _ => false,
    }
}

fn session_expired(error: &ClientError) -> bool {
    error
        .transport_error()
        .is_some_and(TransportError::is_session_expired)
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
/// management error and, when the client got that far, its error (the
/// client itself is closed as it is dropped). `latest` gets the client as
/// soon as there is one.
async fn connect(
    core: &Core,
    id: &str,
    plan: &Plan,
    init_deadline: Instant,
    initialize: Duration,
    era: EraPolicy,
    latest: &Latest,
) -> Result<Owned, (ServerError, Option<ClientError>)> {
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
    let mut options = core.options.client.clone();
    options.session.era = era;
    options.session.initialize_timeout = init_deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    // Owned from the start: a connection whose initialize fails or times
    // out is closed where `close` waits for it, not left to its driver; and
    // it is closed before the failure is reported, so that a stdio server
    // process is gone by the time a host sees the error.
    let (client, driver) = Client::new(transport, options);
    tokio::spawn(driver.run());
    let owned = Owned::new(client, Arc::from(id), Arc::clone(&core.closings));
    let client = owned.client();
    *mcp_proto::sync::lock(latest) = Some(client.clone());
    match timeout_at(init_deadline, client.initialize()).await {
        Err(_) => {
            client.close().await;
            let stray = client.first_stray_line();
            Err((
                stray_output(init_timeout(), stray.as_deref(), initialize)
                    .with_stderr(client.stderr_tail().as_deref()),
                None,
            ))
        }
        Ok(Err(error)) => {
            tracing::warn!(server = id, error = %text::ErrorChain(&error), era = era.as_str(), "initialize failed");
            client.close().await;
            // Closed, so the tail holds the server's last words.
            let stray = client.first_stray_line();
            let management = stray_output(
                initialize_error(&error, plan, initialize),
                stray.as_deref(),
                initialize,
            )
            .with_stderr(client.stderr_tail().as_deref());
            Err((management, Some(error)))
        }
        Ok(Ok(_)) => Ok(owned),
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
    // A pass that did not list tools keeps every tool the previous one
    // listed; the filter is applied again when the catalog is published.
    let (tools, tools_truncated) = listed.tools.unwrap_or_else(|| {
        previous.map_or((Vec::new(), false), |p| {
            (p.listed_tools(), p.tools_truncated)
        })
    });
    Catalog {
        server_id: id.to_owned(),
        // Both are set when the catalog is published.
        lifetime: crate::catalog::LifetimeId::new(0),
        generation: 0,
        fingerprint: plan.fingerprint.to_string(),
        tools,
        filtered_out: Vec::new(),
        tools_truncated,
        resources: listed
            .resources
            .unwrap_or_else(|| previous.and_then(|p| p.resources.clone())),
        skills: listed
            .skills
            .unwrap_or_else(|| previous.and_then(|p| p.skills.clone())),
        prompts: listed
            .prompts
            .unwrap_or_else(|| previous.and_then(|p| p.prompts.clone())),
        instructions: negotiated.instructions().map(str::to_owned),
        server_info: negotiated.server_info().clone(),
        capabilities: negotiated.server_capabilities().clone(),
        protocol_version: negotiated.version,
        transport: plan.kind,
    }
}

/// Serves a published connection until it ends.
async fn serve(lease: &Lease, plan: &Plan, conn: &mut Conn) -> End {
    let core = lease.core();
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
                let activity = conn.client().last_activity();
                match lease.apply(|_, entry| entry.last_used.max(activity) + idle) {
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
                let live = note(lease, &mut pending, notification);
                conn.calls.note();
                if !live {
                    return End::Stale;
                }
            }
            () = sleep_until_optional(refresh_at) => {
                last_pass = Some(Instant::now());
                let kinds = std::mem::take(&mut pending);
                if let Err(end) = refresh(lease, plan, conn, kinds).await {
                    return end;
                }
                // Notifications that came during the pass coalesce into the
                // next one; read them now so the status does not flicker.
                while let Ok(notification) = conn.notifications.try_recv() {
                    let live = note(lease, &mut pending, notification);
                    conn.calls.note();
                    if !live {
                        return End::Stale;
                    }
                }
                if !pending.any() && !lease.set_status(ServerStatus::Ready) {
                    return End::Stale;
                }
            }
            () = sleep_until_optional(idle_at) => {
                // A call in flight (through a handle, or on the connection
                // itself: a server request being answered) is use, however
                // long ago it started: the connection stays, and the idle
                // period restarts now.
                let busy = conn.calls.in_flight.load(std::sync::atomic::Ordering::SeqCst) > 0
                    || conn.client().in_flight() > 0;
                let activity = conn.client().last_activity();
                let expired = idle.and_then(|idle| {
                    lease.apply(|_, entry| {
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
/// status `refreshing`), log messages, resource updates and URL
/// elicitations' completions become events. Returns false when the
/// generation has ended.
fn note(lease: &Lease, pending: &mut Kinds, notification: ServerNotification) -> bool {
    let before = *pending;
    match notification {
        ServerNotification::ToolsListChanged => pending.tools = true,
        ServerNotification::ResourcesListChanged => pending.resources = true,
        ServerNotification::PromptsListChanged => pending.prompts = true,
        ServerNotification::LogMessage(message) => {
            tracing::debug!(server = lease.id(), level = ?message.level, "server log");
            lease.core().emit(ManagerEvent::Log {
                id: lease.id().to_owned(),
                level: message.level,
                logger: message.logger,
                data: message.data,
            });
            return true;
        }
        ServerNotification::ResourceUpdated(update) => {
            lease.core().emit(ManagerEvent::ResourceUpdated {
                id: lease.id().to_owned(),
                uri: update.uri,
            });
            return true;
        }
        ServerNotification::Other(other)
            if other.method == methods::NOTIFICATION_ELICITATION_COMPLETE =>
        {
            match other
                .params
                .as_ref()
                .map(RawJson::decode::<ElicitationCompleteNotificationParams>)
            {
                Some(Ok(params)) => lease.core().emit(ManagerEvent::ElicitationComplete {
                    id: lease.id().to_owned(),
                    elicitation_id: text::bound(&params.elicitation_id, ELICITATION_ID_LIMIT)
                        .into_owned(),
                }),
                _ => tracing::debug!(
                    server = lease.id(),
                    "a notifications/elicitation/complete without an elicitationId"
                ),
            }
            return true;
        }
        other => {
            tracing::trace!(server = lease.id(), notification = ?other, "server notification");
            return true;
        }
    }
    if before.any() {
        return true;
    }
    lease.set_status(ServerStatus::Refreshing)
}

/// One refresh pass on the same connection, within the refresh deadline.
async fn refresh(lease: &Lease, plan: &Plan, conn: &mut Conn, kinds: Kinds) -> Result<(), End> {
    let (core, id) = (lease.core(), lease.id());
    let previous = lease
        .apply(|_, entry| entry.catalog.clone())
        .ok_or(End::Stale)?;
    let deadline = core.options.refresh_timeout;
    let outcome = timeout(
        deadline,
        catalog::list(
            conn.client(),
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
            if !conn.publish(lease, catalog, false) {
                return Err(End::Stale);
            }
            return Ok(());
        }
        Ok(Err(error)) => {
            tracing::warn!(server = id, error = %text::ErrorChain(&error), "the catalog refresh failed");
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
    if conn.client().is_closed() {
        return Err(End::Closed);
    }
    // The server's answer is at fault, not a setting.
    Err(End::RefreshFailed(ServerError::new(
        ErrorCode::RefreshFailed,
        message,
        "",
    )))
}

/// The management error for a failed `initialize`. The raw error was logged.
/// A failed handshake's error with the first line a stdio server wrote to
/// stdout that is not JSON-RPC (`stray`), if it wrote one. A server that
/// did so and never answered within the timeout is broken, not slow: its
/// timeout becomes a `protocol` error that names stdout as the cause
/// instead of suggesting a longer wait. Any other failure keeps its code
/// and gets the line beside it.
fn stray_output(error: ServerError, stray: Option<&str>, initialize: Duration) -> ServerError {
    let Some(line) = stray else {
        return error;
    };
    let error = if error.code == ErrorCode::Timeout {
        ServerError::new(
            ErrorCode::Protocol,
            format!(
                "the server wrote a line that is not JSON-RPC to stdout, where only MCP \
                 messages may go, and did not answer initialize within {}",
                human(initialize)
            ),
            "",
        )
    } else {
        error
    };
    error.with_stray_stdout(Some(line))
}

fn initialize_error(error: &ClientError, plan: &Plan, initialize: Duration) -> ServerError {
    let endpoint = plan.keys.endpoint;
    if let Some(cause) = error
        .transport_error()
        .and_then(|error| transport_cause(error, plan))
    {
        return cause;
    }
    let (code, message) = match error {
        ClientError::Timeout(_) | ClientError::Handshake(HandshakeError::Timeout(_), _) => {
            return ServerError::new(
                ErrorCode::Timeout,
                format!("initialize did not finish within {}", human(initialize)),
                "timeout",
            );
        }
        ClientError::Handshake(HandshakeError::Rejected(e), _) => {
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
        ClientError::Handshake(HandshakeError::DiscoverRejected(e), _) => {
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
        ClientError::Handshake(error @ HandshakeError::UnsupportedVersion(_), _)
        | ClientError::Handshake(error @ HandshakeError::NoCommonVersion { .. }, _) => {
            return ServerError::new(
                ErrorCode::UnsupportedVersion,
                server_text(&error.to_string()),
                "era",
            );
        }
        ClientError::Handshake(HandshakeError::InvalidResult(_), _) => (
            ErrorCode::Protocol,
            "the server's initialize result is malformed",
        ),
        ClientError::Handshake(HandshakeError::Undelivered(reason), source)
        | ClientError::Undelivered { reason, source } => {
            // The transport's error says why, when there is one.
            let why = match source {
                Some(source) => text::ErrorChain(source.as_ref()).to_string(),
                None => reason.clone(),
            };
            return ServerError::new(
                ErrorCode::Closed,
                format!("initialize could not be delivered: {}", server_text(&why)),
                endpoint,
            );
        }
        ClientError::Handshake(HandshakeError::ClosedDuringProbe, _) => (
            ErrorCode::Closed,
            "the server closed the connection when probed with server/discover",
        ),
        ClientError::Closed { .. } | ClientError::SessionExpired => (
            ErrorCode::Closed,
            if plan.kind == TransportKind::Stdio {
                "the server process exited during initialize"
            } else {
                "the server closed the connection during initialize"
            },
        ),
        _ => (ErrorCode::Protocol, "initialize failed"),
    };
    ServerError::new(code, message, endpoint)
}

/// The management error a transport's error stands for (see
/// [`crate::error::transport_cause`]).
fn transport_cause(error: &TransportError, plan: &Plan) -> Option<ServerError> {
    crate::error::transport_cause(error, &plan.resolved.id, plan.keys.endpoint, plan.keys.auth)
}

/// The management error for a failed first listing. The raw error was logged.
fn list_error(
    error: &ListError,
    client: &Client,
    plan: &Plan,
    page_timeout: Duration,
) -> ServerError {
    let endpoint = plan.keys.endpoint;
    let cause = match error {
        ListError::Client(error) => error.transport_error(),
        _ => None,
    };
    if let Some(cause) = cause.and_then(|error| transport_cause(error, plan)) {
        return cause;
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
        ListError::Client(ClientError::Rpc(e))
            if e.code == mcp_proto::jsonrpc::error_codes::UNSUPPORTED_PROTOCOL_VERSION =>
        {
            let ours = client.negotiated().map(|n| n.version);
            return crate::error::version_refused("tools/list", e, ours);
        }
        ListError::Client(_) if client.is_closed() => (
            ErrorCode::Closed,
            "the server closed the connection while listing its tools".to_owned(),
        ),
        ListError::Client(_) => (
            ErrorCode::Protocol,
            "the server failed tools/list".to_owned(),
        ),
    };
    // A malformed catalog is the server's answer, not a setting.
    let key = if code == ErrorCode::InvalidCatalog {
        ""
    } else {
        endpoint
    };
    ServerError::new(code, message, key)
}

/// The management error for a connection that ended while serving.
fn closed_error(reason: Option<&ClientError>, plan: &Plan) -> ServerError {
    if let Some(cause) = reason
        .and_then(ClientError::transport_error)
        .and_then(|error| transport_cause(error, plan))
    {
        return cause;
    }
    let message = if reason.is_some_and(session_expired) {
        "the server ended the session"
    } else if plan.kind == TransportKind::Stdio {
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
    fn package_launchers_are_recognised() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        for (command, words) in [
            (
                "npx",
                &["-y", "@modelcontextprotocol/server-everything"][..],
            ),
            ("/usr/local/bin/uvx", &["mcp-server-fetch"][..]),
            ("bunx", &["x"][..]),
            ("pipx", &["run", "x"][..]),
            ("docker", &["run", "-i", "--rm", "mcp/fetch"][..]),
            ("pnpm", &["dlx", "x"][..]),
            ("uv", &["tool", "run", "x"][..]),
            ("npx.cmd", &["x"][..]),
        ] {
            assert!(
                is_package_launcher(command, &args(words)),
                "{command} {words:?}"
            );
        }
        for (command, words) in [
            ("node", &["server.js"][..]),
            ("docker", &["exec", "c", "x"][..]),
            ("uv", &["run", "server.py"][..]),
            ("python3", &["-m", "npx"][..]),
        ] {
            assert!(
                !is_package_launcher(command, &args(words)),
                "{command} {words:?}"
            );
        }
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(Duration::from_millis(250)), "250 ms");
        assert_eq!(human(Duration::from_secs(10)), "10 s");
        assert_eq!(human(Duration::from_secs(120)), "2 min");
        assert_eq!(human(Duration::from_millis(1500)), "1500 ms");
    }
}

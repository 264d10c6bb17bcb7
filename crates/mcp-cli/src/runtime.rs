//! One run's connections: discovery over the chosen sources, handed to mcp-manager, and waiting for servers to settle.
//!
//! Everything about connecting (deadlines, the three-at-once limit,
//! statuses, error codes) is mcp-manager's. What is decided here is which
//! servers this command needs: all of them for `servers`, `tools` and
//! `watch`, one for `call`, `retry` and `tools SERVER`, so that a call
//! never starts unrelated server processes.

use std::time::Duration;

use mcp_config::{DiscoveryEntry, DiscoveryReport, ProcessEnv, SourceMeta, Store, WithInputs};
use mcp_manager::{
    DefaultTransportFactory, ErrorCode, ManagerEvent, ManagerOptions, McpManager, ServerError,
    ServerStatus, StartupError, StartupMode,
};
use mcp_toolbridge::{McpSession, SessionOptions};
use mcp_transport::{CaEnv, ProxyConfig};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use crate::exit::CliError;
use crate::output::Output;
pub(crate) use crate::progress::is_settled;
use crate::sources::SourceOptions;
use crate::{inputs, trust_cmd};

/// How long to wait for servers to settle at most. Every connection has
/// its own, shorter deadlines in the manager (15 s per discovery); this
/// only guards against waiting forever should one be missed.
const SETTLE_LIMIT: Duration = Duration::from_secs(600);

/// The transport factory of every `mcpctl` command that connects (and of
/// `mcpctl login`, whose OAuth client goes where the manager's does): HTTP
/// servers authorize with OAuth on a 401, with the tokens `mcpctl login`
/// stored (none without a data dir); proxies come from curl's variables
/// (loopback direct); and, as with curl and git, `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` add trusted roots.
pub(crate) fn transport_factory() -> DefaultTransportFactory {
    factory_from(crate::login::oauth_dir().ok(), |name| {
        std::env::var(name).ok()
    })
}

/// [`transport_factory`] with tokens in `oauth_dir` and the variables asked
/// of `lookup`.
fn factory_from(
    oauth_dir: Option<std::path::PathBuf>,
    lookup: impl Fn(&str) -> Option<String>,
) -> DefaultTransportFactory {
    let mut factory = DefaultTransportFactory::new();
    factory.oauth_dir = oauth_dir;
    factory.ca_env = CaEnv::from_lookup(&lookup);
    factory.proxy = ProxyConfig::from_lookup(&lookup);
    factory
}

/// The manager of this run and what discovery found.
#[derive(Debug)]
pub(crate) struct Runtime {
    /// The connections.
    pub(crate) manager: McpManager,
    /// The discovery report the servers came from (only the selected
    /// entries when the command needs one server).
    pub(crate) report: DiscoveryReport,
    /// Configuration entries that could not be used (invalid entries,
    /// unreadable files), from the manager's startup report.
    pub(crate) config_errors: Vec<StartupError>,
    /// Project servers held back until the person trusts them, as defined.
    pub(crate) untrusted: Vec<mcp_config::DiscoveredServer>,
    /// Every manager event since before the first connection started.
    events: Option<broadcast::Receiver<ManagerEvent>>,
    /// When the connections started.
    started: Instant,
}

/// Which servers to connect.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Select<'a> {
    /// Every discovered server.
    All,
    /// Only this one; an id no source defines is a usage error.
    One(&'a str),
}

impl<'a> Select<'a> {
    /// `One(id)` for a command given a SERVER, else `All`.
    pub(crate) fn of(server: Option<&'a str>) -> Self {
        server.map_or(Select::All, Select::One)
    }

    /// The one id, if only one is selected.
    fn id(self) -> Option<&'a str> {
        match self {
            Select::All => None,
            Select::One(id) => Some(id),
        }
    }
}

impl Runtime {
    /// Discovers servers, starts connecting the selected ones in the
    /// background and returns at once.
    pub(crate) async fn start(
        options: &SourceOptions,
        select: Select<'_>,
    ) -> Result<Runtime, CliError> {
        Runtime::start_with(options, select, None).await
    }

    /// [`Runtime::start`], with a lazy start over the tool cache at
    /// `lazy_cache` when given: servers it knows are not started until a
    /// call needs them, and every connection refreshes the cache.
    pub(crate) async fn start_with(
        options: &SourceOptions,
        select: Select<'_>,
        lazy_cache: Option<std::path::PathBuf>,
    ) -> Result<Runtime, CliError> {
        Runtime::start_built(options, select, lazy_cache, None).await
    }

    /// [`Runtime::start`] over every source for a settings page: the
    /// manager also holds `store`, so that saves, toggles and removals
    /// persist there ([`McpManager::save`]), and `handler` answers what
    /// servers ask back (the page's questions); nothing is asked on a
    /// terminal (project servers nobody approved are held back, as the
    /// page shows them).
    pub(crate) async fn start_with_store(
        options: &SourceOptions,
        store: Store,
        handler: std::sync::Arc<dyn mcp_transport::ClientHandler>,
    ) -> Result<Runtime, CliError> {
        let mut options = options.clone();
        options.ask = false;
        Runtime::start_built(&options, Select::All, None, Some((store, handler))).await
    }

    /// The one construction of a run's manager, whatever the command: the
    /// options, transport factory (with the OAuth token store), input
    /// answers, tool cache, and the store with the page's handler of
    /// server requests.
    async fn start_built(
        options: &SourceOptions,
        select: Select<'_>,
        lazy_cache: Option<std::path::PathBuf>,
        store: Option<(Store, std::sync::Arc<dyn mcp_transport::ClientHandler>)>,
    ) -> Result<Runtime, CliError> {
        let (report, untrusted, answers) = discover(options, select).await?;
        let mut manager_options = ManagerOptions::default();
        // The mode: never wait inside the manager; this run waits
        // for exactly the servers it needs, and `watch` shows the progress.
        manager_options.startup = StartupMode::Background;
        manager_options.client.session.client_info = client_info();
        if let Some((_, handler)) = &store {
            manager_options.client.handler = Some(std::sync::Arc::clone(handler));
        } else if let Some(asks) = &options.asks {
            let handler: std::sync::Arc<dyn mcp_transport::ClientHandler> =
                crate::asks::TerminalAsks::new(asks);
            manager_options.client.handler = Some(handler);
        }
        if let Some(asks) = &options.gateway_asks {
            let handler: std::sync::Arc<dyn mcp_transport::ClientHandler> = asks.clone();
            manager_options.client.handler = Some(handler);
        }
        manager_options.lazy = lazy_cache.is_some();
        if let Some(timeout) = options.timeout {
            // `--timeout`: each server's own `timeout` is overridden in
            // `discover`; these bound the rest of its start.
            manager_options.discovery_timeout = timeout;
            manager_options.list_page_timeout = timeout;
            manager_options.initialize_timeout = timeout;
        }
        let mut builder = McpManager::builder();
        if let Some(path) = lazy_cache {
            builder = builder.cache(std::sync::Arc::new(mcp_manager::JsonFileToolCache::open(
                path,
            )));
        }
        if let Some((store, _)) = store {
            builder = builder.store(store);
        }
        let manager = builder
            .options(manager_options)
            .factory(transport_factory())
            .environment(WithInputs::new(ProcessEnv, answers))
            .build();
        crate::interrupt::register(&manager);
        let events = manager.events();
        let started = Instant::now();
        let startup = manager.connect_discovered(&report).await;
        Ok(Runtime {
            manager,
            report,
            config_errors: startup.errors,
            untrusted,
            events: Some(events),
            started,
        })
    }

    /// Discovers every source again and hands the report to the manager
    /// (`connect_discovered`: new servers start, changed ones reconnect,
    /// unchanged ones keep their connection, vanished ones stop), after a
    /// change to the files: a save, an approval, a copy into the store.
    /// Nothing is asked on a terminal; input answers are the ones the
    /// manager was built with.
    pub(crate) async fn reload(&mut self, options: &SourceOptions) -> Result<(), CliError> {
        let mut options = options.clone();
        options.ask = false;
        let (report, untrusted, _) = discover(&options, Select::All).await?;
        let startup = self.manager.connect_discovered(&report).await;
        self.report = report;
        self.untrusted = untrusted;
        self.config_errors = startup.errors;
        Ok(())
    }

    /// Waits until every server has settled: ready, failed or disabled, no
    /// longer queued, connecting or refreshing. Each status change is an
    /// event, so this wakes only when something happened, or to redraw the
    /// servers' lines on a terminal ([`crate::progress::Connecting`]).
    pub(crate) async fn settle(&self, output: &Output) {
        let deadline = Instant::now() + SETTLE_LIMIT;
        let mut events = self.manager.events();
        let mut shown = crate::progress::Connecting::new(output, self.started);
        loop {
            let servers = self.manager.servers();
            if let Some(shown) = &mut shown {
                shown.show(&servers);
            }
            if servers.iter().all(|server| is_settled(&server.status)) {
                break;
            }
            let tick = crate::progress::tick(shown.is_some());
            tokio::select! {
                event = tokio::time::timeout_at(deadline, events.recv()) => match event {
                    // A lagged receiver only means "look again".
                    Ok(Ok(_) | Err(RecvError::Lagged(_))) => {}
                    Ok(Err(RecvError::Closed)) | Err(_) => break,
                },
                () = tick => {}
            }
        }
        if let Some(shown) = &mut shown {
            shown.finish();
        }
    }

    /// Starts the servers `select` names, waits for them to settle, runs
    /// `body` over them and closes them, whatever `body` returned.
    pub(crate) async fn run<T>(
        options: &SourceOptions,
        select: Select<'_>,
        output: &Output,
        body: impl AsyncFnOnce(&Runtime) -> Result<T, CliError>,
    ) -> Result<T, CliError> {
        let runtime = Runtime::start(options, select).await?;
        runtime.settle(output).await;
        let result = body(&runtime).await;
        runtime.close().await;
        result
    }

    /// A tool-bridge session over this run's manager: model names,
    /// argument validation, approvals and calls are the bridge's.
    pub(crate) fn session(&self, options: SessionOptions) -> McpSession {
        McpSession::new(&self.manager, options)
    }

    /// The events since before the first connection started; `None` after
    /// the first call.
    pub(crate) fn take_events(&mut self) -> Option<broadcast::Receiver<ManagerEvent>> {
        self.events.take()
    }

    /// Closes every connection politely (stdin closed, then signals) and
    /// waits for the servers to exit.
    pub(crate) async fn close(self) {
        self.manager.close().await;
    }

    /// The configuration error for `id`, if its entry could not be used.
    pub(crate) fn config_error(&self, id: &str) -> Option<&ServerError> {
        self.config_errors
            .iter()
            .find(|e| e.server.as_deref() == Some(id))
            .map(|e| &e.error)
    }
}

/// Discovery over `options`' sources, the trust gate settled (asking on a
/// terminal when `options.ask`) and the `${input:ID}` answers collected:
/// the report, the project servers held back, and the answers.
async fn discover(
    options: &SourceOptions,
    select: Select<'_>,
) -> Result<
    (
        DiscoveryReport,
        Vec<mcp_config::DiscoveredServer>,
        inputs::RunAnswers,
    ),
    CliError,
> {
    let discovery = trust_cmd::discovery(options)?;
    let gate = trust_cmd::gate(options)?;
    let ask = options.ask;
    let selected = select.id().map(str::to_owned);
    // Discovery reads files, and the trust and input questions read the
    // terminal: both block, off the async workers.
    let (report, untrusted, answers) = tokio::task::spawn_blocking(move || {
        let mut report = discovery.discover();
        if let Some(id) = &selected {
            report = only(report, id)?;
        }
        // Only the selected servers are asked about.
        let untrusted = trust_cmd::settle(&mut report, gate.as_ref(), ask);
        let answers = inputs::collect(&report, ask);
        Ok::<_, CliError>((report, untrusted, answers))
    })
    .await
    .map_err(|e| CliError::usage(format!("discovery failed: {e}")))??;
    let mut report = report;
    if let Some(timeout) = options.timeout {
        override_timeouts(&mut report, timeout);
    }
    for warning in &report.warnings {
        if warning.diagnostic.code == mcp_config::Code::TrustStoreUnavailable {
            eprintln!(
                "mcpctl: {}",
                crate::output::line(&warning.diagnostic.message)
            );
        }
    }
    Ok((report, untrusted, answers))
}

/// `--timeout`: every server of `report` starts, and answers each
/// request, within `timeout`, whatever its configuration's `timeout` (and
/// call timeout) say. The person typed it for this run, so it wins.
fn override_timeouts(report: &mut DiscoveryReport, timeout: Duration) {
    let millis = u64::try_from(timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    for entry in &mut report.entries {
        if let DiscoveryEntry::Server(server) = entry {
            server.config.timeout_ms = Some(millis);
            server.config.call_timeout_ms = Some(millis);
        }
    }
}

/// The report with only `id`'s entry. When no source defines `id`, the
/// error lists the servers that exist.
pub(crate) fn only(report: DiscoveryReport, id: &str) -> Result<DiscoveryReport, CliError> {
    let known: Vec<String> = report
        .entries
        .iter()
        .filter_map(DiscoveryEntry::server_id)
        .map(str::to_owned)
        .collect();
    let mut selected = DiscoveryReport::default();
    selected.entries = report
        .entries
        .into_iter()
        .filter(|entry| entry.server_id() == Some(id))
        .collect();
    if selected.entries.is_empty() {
        let hint = if known.is_empty() {
            "no server is configured; `mcpctl add` adds one".to_owned()
        } else {
            let guess = crate::suggest::closest(id, known.iter().map(String::as_str))
                .map_or_else(String::new, |name| format!("did you mean `{name}`? "));
            format!("{guess}configured servers: {}", known.join(", "))
        };
        return Err(CliError::usage(format!("no server with id `{id}`"))
            .hint(hint)
            .code("unknown_server")
            .server(id));
    }
    Ok(selected)
}

/// The exit status and message for a server that is not usable: a
/// configuration problem (the user must change something) is a usage
/// error (2), anything else a connection failure (3).
pub(crate) fn server_failure(
    id: &str,
    status: &ServerStatus,
    source: Option<&SourceMeta>,
) -> CliError {
    match status {
        ServerStatus::Error { error, .. } => server_error(id, error, source),
        ServerStatus::Disabled => CliError::usage(format!("server `{id}` is disabled"))
            .hint(format!("`mcpctl enable {id}` enables it"))
            .code("disabled")
            .server(id),
        other => CliError::connection(format!("server `{id}` is not ready ({})", other.as_str()))
            .server(id),
    }
}

/// A server's error as a CLI error: code, message and the key to change.
pub(crate) fn server_error(id: &str, error: &ServerError, source: Option<&SourceMeta>) -> CliError {
    let message = format!(
        "{}: {} [{}]{}",
        crate::sources::server_name(id, source),
        crate::output::line(&error.message),
        error.code,
        crate::output::cause_lines(error.stray_stdout.as_deref(), error.cause.as_deref(), "  ")
    );
    let cli = if error.code.is_config_error() {
        CliError::usage(message)
    } else {
        CliError::connection(message)
    }
    .code(error.code.as_str())
    .server(id);
    match fix_hint(error, source) {
        Some(hint) => cli.hint(hint),
        None => cli,
    }
}

/// What the person can change so that a server's error goes away, in the
/// words of what they typed: for a server given on the command line
/// (`--stdio`, `--url`) the flag, for one from a file the key and the
/// file; a timeout names `--timeout` for this run and the `timeout` key
/// (milliseconds) for every run. `None` when there is nothing to point at.
pub(crate) fn fix_hint(error: &ServerError, source: Option<&SourceMeta>) -> Option<String> {
    if error.code == ErrorCode::MissingInput {
        return Some(
            "run the command on a terminal to answer the input (and save the answer if you like)"
                .to_owned(),
        );
    }
    let adhoc = source.is_some_and(|s| s.provider_label == crate::sources::COMMAND_LINE);
    let place = source
        .and_then(|s| s.path.as_deref())
        .map_or_else(String::new, |p| format!(" in {}", p.display()));
    if error.code == ErrorCode::Timeout {
        return Some(if adhoc {
            "`--timeout SECS` waits longer".to_owned()
        } else {
            format!(
                "`--timeout SECS` waits longer this once; set `timeout` (milliseconds){place} for every run"
            )
        });
    }
    if error.config_key.is_empty() {
        return None;
    }
    if adhoc {
        // A server typed for this run: the flag that made the key.
        let flag = match error.config_key.as_str() {
            key if key.contains("header") => "--header",
            key if key.contains("bearer") => "--bearer-env",
            key if key.contains("url") => "--url",
            _ => "--stdio",
        };
        return Some(format!("check the `{flag}` you gave"));
    }
    Some(format!(
        "change `{}`{place}",
        crate::output::line(&error.config_key)
    ))
}

/// Who `mcpctl` says it is to servers: `clientInfo` in `initialize`, and
/// `_meta["io.modelcontextprotocol/clientInfo"]` on every 2026-07-28 request.
pub(crate) fn client_info() -> mcp_proto::types::Implementation {
    mcp_proto::types::Implementation::new("mcpctl", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factory_reads_the_ca_and_proxy_variables_it_is_given() {
        let vars = [
            ("SSL_CERT_FILE", "/etc/corp/ca.pem"),
            ("SSL_CERT_DIR", "/etc/corp/certs"),
            ("HTTPS_PROXY", "http://proxy.corp.example:3128"),
        ];
        let lookup = |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        };
        let dir = std::path::PathBuf::from("/data/oauth");
        let factory = factory_from(Some(dir.clone()), lookup);
        assert!(factory.ca_env.is_set());
        assert_eq!(factory.ca_env, CaEnv::from_lookup(lookup));
        assert_ne!(factory.ca_env, CaEnv::none());
        assert_eq!(
            factory
                .proxy
                .proxy_for("https://mcp.example.com/mcp")
                .as_deref(),
            Some("proxy.corp.example:3128")
        );
        assert_eq!(factory.oauth_dir, Some(dir));
        // Nothing set: no extra roots, no proxy.
        let bare = factory_from(None, |_| None);
        assert!(!bare.ca_env.is_set());
        assert_eq!(bare.proxy.proxy_for("https://mcp.example.com/mcp"), None);
    }
}

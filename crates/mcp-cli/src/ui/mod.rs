//! `mcpctl ui`: settings page (Settings → Integrations → MCPs), served on 127.0.0.1.
//!
//! The page shows every server `mcpctl servers` shows, from every source
//! (the project's files, `--config` files, the store, other applications'
//! files, the built-in demo), each with its source; only the store's
//! servers (the `mcp.json` `mcpctl add` edits) can be changed there, and
//! any other one can be copied into the store. Project servers that wait
//! for the person's approval are listed with an approve button
//! (`trust_api`). A server that needs an OAuth login gets a Login button
//! (`login_api`); a ready server's tools can be tried, and its resources
//! and prompts looked at (`use_api`).
//!
//! One process holds one [`McpManager`], built by the same
//! [`Runtime`] construction as every other command (sources, trust gate,
//! OAuth token store, options) with the store added, exactly as a host
//! would: the page saves, enables, retries and removes through the
//! manager, so the store and the connections stay consistent; after each
//! change the sources are discovered again (`Runtime::reload`), and the
//! page follows the manager's event stream over server-sent events.
//!
//! The page is plain HTML, CSS and JavaScript compiled into the binary
//! (`assets/`); there is no front-end build step.
//!
//! Security: the listener binds 127.0.0.1 only; a random token
//! made at launch and printed in the URL gates the page and every API
//! call; `Host` must name this listener and `Origin`, when present, must be
//! this page, which refuses DNS rebinding and cross-site requests.
//! Connections are accepted by mcp-transport's bounded [`Listener`]
//! (header-read and keep-alive timeouts, a connection cap under the
//! descriptor limit), so slow connections cannot keep the page from
//! answering.

mod api;
mod login_api;
mod response;
mod routes;
mod trust_api;
mod use_api;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use mcp_config::Store;
use mcp_manager::McpManager;
use mcp_transport::server::{Listener, ListenerOptions};
use tokio::net::TcpListener;
use tokio::sync::{RwLock, broadcast};

use crate::cli::UiArgs;
use crate::exit::{CliError, Exit};
use crate::runtime::Runtime;
use crate::sources::{self, SourceOptions};

/// What every request handler needs: the manager, its store, and the
/// launch's token and address.
#[derive(Debug)]
pub(crate) struct App {
    /// The manager over every source, with the store; the page's only way
    /// to change anything.
    pub(crate) manager: McpManager,
    /// The run: the manager and the discovery report the listing is made
    /// of, replaced by [`App::reload`] after every change.
    pub(crate) runtime: RwLock<Runtime>,
    /// The store file (for the malformed-store page and the source column).
    pub(crate) store: Store,
    /// The per-launch token every API call must carry.
    pub(crate) token: String,
    /// The port the listener is bound to (for the `Host`/`Origin` checks).
    pub(crate) port: u16,
    /// The sources of the launch, for discovery and project trust.
    pub(crate) sources: SourceOptions,
    /// Logins started from the page, by server id.
    pub(crate) logins: login_api::Logins,
    /// Told when something the listing shows changed outside the manager
    /// (a reload, a login's progress), so the event stream sends it again.
    pub(crate) changed: broadcast::Sender<()>,
}

impl App {
    /// Discovers every source again after a change (a save, an approval, a
    /// copy) and has the event stream send the listing again. A failure is
    /// logged: the manager keeps what it runs.
    pub(crate) async fn reload(&self) {
        let result = self.runtime.write().await.reload(&self.sources).await;
        if let Err(error) = result {
            eprintln!(
                "mcpctl ui: cannot read the sources again: {}",
                error.message
            );
        }
        let _ = self.changed.send(());
    }
}

/// Runs `mcpctl ui` until Ctrl-C.
pub(crate) async fn run(args: UiArgs, sources: &SourceOptions) -> Result<Exit, CliError> {
    let path = sources::store_path()?;
    let listener = TcpListener::bind(SocketAddr::from((
        Ipv4Addr::LOCALHOST,
        args.port.unwrap_or(0),
    )))
    .await
    .map_err(|e| CliError::usage(format!("cannot listen on 127.0.0.1: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| CliError::usage(format!("cannot read the listening address: {e}")))?
        .port();

    // The construction every command uses (startup never waits; the page
    // shows it live), with the store. A malformed store is not fatal
    // here: the page explains how to repair it, and nothing writes to the
    // file until it parses again.
    let runtime = Runtime::start_with_store(sources, Store::open(path.clone())).await?;
    let manager = runtime.manager.clone();
    // Ctrl-C is how the page is stopped: the servers are closed below.
    let claim = crate::interrupt::claim();

    let app = Arc::new(App {
        manager,
        runtime: RwLock::new(runtime),
        store: Store::open(path),
        token: crate::loopback::new_secret(),
        port,
        sources: sources.clone(),
        logins: login_api::Logins::default(),
        changed: broadcast::channel(16).0,
    });
    let url = format!("http://127.0.0.1:{port}/?token={}", app.token);
    println!("mcpctl ui: serving the settings page at {url}");
    println!("Press Ctrl-C to stop.");
    if args.open {
        open_browser(&url);
    }

    // mcp-transport's bounded accept loop: header-read and keep-alive
    // timeouts, and a connection cap under the descriptor limit, so that
    // slow or idle connections cannot keep the page from answering.
    let serve = {
        let app = Arc::clone(&app);
        Listener::new(listener, ListenerOptions::default()).serve(move |request| {
            let app = Arc::clone(&app);
            async move { routes::handle(&app, request).await }
        })
    };
    tokio::select! {
        () = serve => {}
        () = claim.pressed() => {
            eprintln!("mcpctl ui: interrupted; closing the servers");
        }
    }
    app.manager.close().await;
    // Ctrl-C is the only way the page ends: 130, as for every command.
    Ok(Exit::Interrupted)
}

/// `--open`: hands the URL to the desktop's opener; a failure only means
/// the person copies the printed URL.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => {}
        Err(e) => eprintln!("mcpctl ui: cannot run {opener} ({e}); open the URL above"),
    }
}

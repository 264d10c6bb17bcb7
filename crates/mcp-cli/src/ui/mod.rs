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
//! and prompts looked at (`use_api`). While a Try runs, what the server
//! asks back (a form, a URL to visit, a sampling request) is answered in
//! the page (`asks_api`); each server's log messages and resource updates
//! show live, with its log level and resource subscriptions set from the
//! page (`live`).
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
//! this page, which refuses DNS rebinding and cross-site requests. Every
//! answer says `nosniff` and `no-referrer`, the API's and the page's
//! `no-store`, and the page carries its content security policy. The
//! token is never on a command line or in an environment: `--open` hands
//! the desktop's opener the path of an owner-only file (0600, in a 0700
//! `ui/` directory of the data directory) that sends the browser on to the
//! URL, and removes the file once the page has been loaded with the token
//! (or when `mcpctl ui` ends), so another local user reading every
//! process's arguments learns nothing that opens the page.
//! Connections are accepted by mcp-transport's bounded [`Listener`]
//! (header-read and keep-alive timeouts, a connection cap under the
//! descriptor limit), so slow connections cannot keep the page from
//! answering.

mod api;
mod asks_api;
mod live;
mod login_api;
mod response;
mod routes;
mod trust_api;
mod use_api;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
    /// The owner-only file `--open` handed to the opener, until the page
    /// has been loaded with the token.
    pub(crate) launch_file: Mutex<Option<PathBuf>>,
    /// What servers ask back, put before the page (`asks_api`).
    pub(crate) asks: Arc<asks_api::PageAsks>,
    /// Each server's log messages and resource updates (`live`).
    pub(crate) live: Arc<live::Live>,
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

    /// Removes the `--open` launch file: the page has been loaded with the
    /// token (or the page is stopping), so nobody needs it again.
    pub(crate) fn forget_launch_file(&self) {
        let taken = self
            .launch_file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(path) = taken {
            let _ = std::fs::remove_file(path);
        }
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
    // What servers ask is answered in the page, with `--root`'s
    // directories (else the current one) as roots.
    let roots = sources
        .asks
        .as_ref()
        .map(|a| a.roots.as_slice())
        .unwrap_or_default();
    let asks = asks_api::PageAsks::new(crate::asks::roots(roots));
    let handler: Arc<dyn mcp_transport::ClientHandler> = asks.clone();
    let live = live::Live::new();
    let mut runtime =
        Runtime::start_with_store(sources, Store::open(path.clone()), handler).await?;
    let manager = runtime.manager.clone();
    // Followed from before the first connection was made: no log line of
    // a starting server is missed.
    let events = runtime.take_events().unwrap_or_else(|| manager.events());
    let follow = tokio::spawn(Arc::clone(&live).follow(events));
    // Servers' completions of URL elicitations, each naming its server.
    let completions = tokio::spawn(Arc::clone(&asks).follow(manager.events()));
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
        launch_file: Mutex::new(None),
        asks,
        live,
    });
    let url = format!("http://127.0.0.1:{port}/?token={}", app.token);
    println!("mcpctl ui: serving the settings page at {url}");
    println!("Press Ctrl-C to stop.");
    if args.open {
        let file = open_browser(&url);
        *app.launch_file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = file;
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
    app.forget_launch_file();
    app.manager.close().await;
    follow.abort();
    completions.abort();
    // Ctrl-C is the only way the page ends: 130, as for every command.
    Ok(Exit::Interrupted)
}

/// `--open`: hands the desktop's opener the path of an owner-only file
/// that sends the browser on to `url`, never `url` itself (a command
/// line is readable by every local user). Returns the file, to be removed
/// once the page has loaded; a failure only means the person copies the
/// printed URL.
fn open_browser(url: &str) -> Option<PathBuf> {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let file = match write_launch_file(url) {
        Ok(file) => file,
        Err(why) => {
            eprintln!("mcpctl ui: cannot open the page: {why}; open the URL above");
            return None;
        }
    };
    match std::process::Command::new(opener)
        .arg(&file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            // Reaped when it ends (an opener usually hands over and exits).
            std::thread::spawn(move || child.wait());
            Some(file)
        }
        Err(e) => {
            eprintln!("mcpctl ui: cannot run {opener} ({e}); open the URL above");
            let _ = std::fs::remove_file(&file);
            None
        }
    }
}

/// Writes the page that sends the browser on to `url`: a new file, mode
/// 0600, in `<data dir>/ui/` (0700), both checked to be this user's and
/// closed to others before anything is written.
fn write_launch_file(url: &str) -> Result<PathBuf, String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let data = sources::store_location()
        .data_dir(&mcp_config::ProcessEnv)
        .map_err(|e| e.to_string())?;
    let dir = data.join("ui");
    for (dir, recursive) in [(data.as_path(), true), (dir.as_path(), false)] {
        private_dir_created(dir, recursive)?;
    }
    let name = format!("open-{}.html", &crate::loopback::new_secret()[..16]);
    let path = dir.join(name);
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <meta http-equiv=\"refresh\" content=\"0; url={url}\">\
         <title>MCP settings</title></head><body>\
         <p><a href=\"{url}\">Open the MCP settings page</a></p></body></html>\n"
    );
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.write_all(page.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Creates `dir` (0700) when missing, and checks that it is this user's
/// and closed to others.
fn private_dir_created(dir: &Path, recursive: bool) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt as _;
    if !crate::local_trust::private_dir(dir)? {
        std::fs::DirBuilder::new()
            .recursive(recursive)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        crate::local_trust::private_dir(dir)?;
    }
    Ok(())
}

//! `mcpctl serve`: every configured server's tools behind one MCP server on stdin/stdout, for a host that launches `mcpctl` as its only MCP server.
//!
//! The servers are discovered and connected as for `mcpctl tools` (nobody
//! is asked anything: stdin carries the protocol), and served through
//! mcp-toolbridge's [`Gateway`]: each tool under its model name
//! (`mcp_<server>_<tool>`; `--names plain`: `<server>__<tool>`; `--names
//! keep`: each server's own names for tools, prompts, resources and
//! templates, refused at start when two servers share one), calls
//! dispatched with the `--preset` rules (a
//! call that needs approval is refused, since there is no terminal to ask
//! on), progress and cancellation passed through, a server's elicitation,
//! sampling and `roots/list` passed to the client whose call caused it
//! (mcp-toolbridge's `GatewayAsks`), and
//! `notifications/tools/list_changed` when a server's tools change. The
//! answer to `initialize` waits until every server has settled (each within
//! its own connection deadlines), so the first `tools/list` has every
//! server that could connect. When the client closes stdin, the servers
//! are closed and `mcpctl` exits 0.
//!
//! With `--lazy`, a server whose tools are in mcpctl's tool cache
//! (`tool-cache.json` in the data directory, written by every connection
//! of a `--lazy` run) is not started until a call needs it: its cached
//! tools are listed at once, and the first call of one starts it. A server
//! the cache does not know yet is started and waited for as without it.
//!
//! With `--daemon`, it keeps running in the background on a Unix socket,
//! and later `mcpctl serve` commands for the same sources relay to it
//! (see `serve_daemon`).
//!
//! With `--http`, the same gateway is served over Streamable HTTP on
//! 127.0.0.1 instead (see `serve_http`), for several clients at once:
//! once every server has settled, mcpctl prints the endpoint's URL and the
//! bearer token every request must carry, then serves until Ctrl-C or
//! SIGTERM, which close the servers (exit 130 and 0). A call the `--preset`
//! asks about is asked on the terminal `mcpctl` runs on (answered as for
//! `mcpctl call`), and refused when there is none.

use mcp_toolbridge::{Gateway, GatewayOptions, SessionOptions, ToolNaming};

use crate::serve_daemon;
use crate::serve_http::ENDPOINT;

use crate::cli::{Names, Preset};
use crate::exit::{CliError, Exit};
use crate::output::Output;
use crate::runtime::{Runtime, Select};
use crate::sources::SourceOptions;

/// Where `mcpctl serve` serves.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Listen {
    /// stdin and stdout, until stdin ends: through the background gateway
    /// when one serves the same sources, unless `own` (`--no-daemon`).
    Stdio { own: bool },
    /// Streamable HTTP on 127.0.0.1 (port 0: one the system picks).
    Http { port: u16 },
    /// `--daemon`: start the background gateway.
    StartDaemon,
    /// The background gateway itself, on its Unix socket.
    Background,
    /// `--stop`: end the background gateway.
    StopDaemon,
}

/// Serves until stdin ends (stdio) or until Ctrl-C or SIGTERM (HTTP).
pub(crate) async fn run(
    sources: &SourceOptions,
    preset: Preset,
    lazy: bool,
    listen: Listen,
    names: Names,
    output: &Output,
) -> Result<Exit, CliError> {
    let daemon = serve_daemon::key(sources, &serve_daemon::settings(preset, names, lazy));
    match listen {
        Listen::StopDaemon => return serve_daemon::stop(&serve_daemon::Paths::new()?).await,
        Listen::StartDaemon | Listen::Background if serve_daemon::has_adhoc(sources) => {
            return Err(CliError::usage(
                "a background gateway serves configured servers only, not --stdio or --url ones",
            ));
        }
        Listen::StartDaemon => {
            return serve_daemon::start(&serve_daemon::Paths::new()?, &daemon).await;
        }
        Listen::Stdio { own: false } if !serve_daemon::has_adhoc(sources) => {
            if let Ok(paths) = serve_daemon::Paths::new()
                && let Some(relayed) = serve_daemon::relay(&paths, &daemon).await
            {
                return relayed;
            }
        }
        _ => {}
    }
    let cache = if lazy {
        Some(
            crate::sources::store_location()
                .data_dir(&mcp_config::ProcessEnv)?
                .join("tool-cache.json"),
        )
    } else {
        None
    };
    // The port is taken first: a busy one fails before any server starts.
    let listener = match listen {
        Listen::Http { port } => Some(
            tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port))
                .await
                .map_err(|e| CliError::usage(format!("cannot listen on 127.0.0.1:{port}: {e}")))?,
        ),
        _ => None,
    };
    // The servers' questions (elicitation, sampling, roots) go to the
    // gateway's client whose call caused them.
    let asks = mcp_toolbridge::GatewayAsks::new();
    let sources = &SourceOptions {
        gateway_asks: Some(asks.clone()),
        ..sources.clone()
    };
    let runtime = Runtime::start_with(sources, Select::All, cache).await?;
    runtime.settle(output).await;
    let mut session = SessionOptions::default();
    session.preset = crate::call::preset(preset);
    let gateway = Gateway::new(
        &runtime.manager,
        session,
        GatewayOptions::default()
            .server_info(crate::runtime::client_info())
            .asks(asks)
            .naming(match names {
                Names::Model => ToolNaming::Model,
                Names::Plain => ToolNaming::Plain,
                Names::Keep => ToolNaming::Keep,
            }),
    );
    // Kept names two servers share cannot be served: refused before a
    // client connects, naming both servers and the name.
    if let Err(collision) = gateway.check_names().await {
        runtime.close().await;
        return Err(CliError::usage(format!("--names keep: {collision}")));
    }
    if let Listen::Background = listen {
        crate::interrupt::register(&runtime.manager);
        let claim = crate::interrupt::claim();
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let stop = async {
            tokio::select! {
                () = claim.pressed() => {}
                Some(()) = async { match terminate.as_mut() { Some(t) => t.recv().await, None => None } } => {}
            }
        };
        let served = serve_daemon::Served {
            complete: runtime.config_errors.is_empty() && runtime.untrusted.is_empty(),
            servers: runtime
                .report
                .entries
                .iter()
                .filter_map(mcp_config::DiscoveryEntry::server_id)
                .map(str::to_owned)
                .collect(),
        };
        let listened =
            serve_daemon::listen(&serve_daemon::Paths::new()?, &daemon, served, gateway, stop)
                .await;
        eprintln!("mcpctl serve: closing the servers");
        runtime.close().await;
        return listened.map(|()| Exit::Success);
    }
    let Some(listener) = listener else {
        let (input, output) = mcp_transport::server::stdio();
        // Served on a task of the runtime: a message read from stdin or
        // from a server then wakes the gateway on the worker that polled
        // the read, rather than this command's thread, parked outside the
        // workers (a hop between threads each way of every call).
        let serving = gateway.clone();
        let mut serving =
            serve_daemon::Cancelled(tokio::spawn(
                async move { serving.serve(input, output).await },
            ));
        let served = (&mut serving.0)
            .await
            .unwrap_or_else(|joined| Err(std::io::Error::other(joined)));
        drop(serving);
        runtime.close().await;
        return served
            .map(|()| Exit::Success)
            .map_err(|e| CliError::connection(format!("cannot read stdin: {e}")));
    };
    let port = listener
        .local_addr()
        .map_err(|e| CliError::usage(format!("cannot read the listening address: {e}")))?
        .port();
    // Over HTTP the terminal is free: a call the preset asks about is asked
    // there, as `mcpctl call` asks (on stdio it carries the protocol, so
    // such a call is refused).
    if std::io::IsTerminal::is_terminal(&std::io::stdin())
        && gateway.session().preset().requires_approval()
    {
        gateway
            .session()
            .set_approval_handler(Some(crate::approval::TerminalApproval::new(*output)));
    }
    let token = crate::loopback::new_secret();
    // Ctrl-C and SIGTERM stop serving; the servers are closed below.
    crate::interrupt::register(&runtime.manager);
    let claim = crate::interrupt::claim();
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    println!("mcpctl serve: MCP endpoint http://127.0.0.1:{port}{ENDPOINT}");
    println!("mcpctl serve: every request needs the header: Authorization: Bearer {token}");
    println!(
        "mcpctl serve: or, for a client that takes only a URL: http://127.0.0.1:{port}{ENDPOINT}/{token}"
    );
    let exit = tokio::select! {
        () = crate::serve_http::serve(gateway, listener, &token) => Exit::Success,
        () = claim.pressed() => {
            eprintln!("mcpctl serve: interrupted; closing the servers");
            Exit::Interrupted
        }
        Some(()) = async { match terminate.as_mut() { Some(t) => t.recv().await, None => None } } => {
            eprintln!("mcpctl serve: terminated; closing the servers");
            Exit::Success
        }
    };
    runtime.close().await;
    Ok(exit)
}

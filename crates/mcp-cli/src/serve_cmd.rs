//! `mcpctl serve`: every configured server's tools behind one MCP server on stdin/stdout, for a host that launches `mcpctl` as its only MCP server.
//!
//! The servers are discovered and connected as for `mcpctl tools` (nobody
//! is asked anything: stdin carries the protocol), and served through
//! mcp-toolbridge's [`Gateway`]: each tool under its model name
//! (`mcp_<server>_<tool>`), calls dispatched with the `--preset` rules (a
//! call that needs approval is refused, since there is no terminal to ask
//! on), progress and cancellation passed through, and
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

use mcp_toolbridge::{Gateway, GatewayOptions, SessionOptions};

use crate::cli::Preset;
use crate::exit::{CliError, Exit};
use crate::output::Output;
use crate::runtime::{Runtime, Select};
use crate::sources::SourceOptions;

/// Serves until stdin ends.
pub(crate) async fn run(
    sources: &SourceOptions,
    preset: Preset,
    lazy: bool,
    output: &Output,
) -> Result<Exit, CliError> {
    let cache = if lazy {
        Some(
            crate::sources::store_location()
                .data_dir(&mcp_config::ProcessEnv)?
                .join("tool-cache.json"),
        )
    } else {
        None
    };
    let runtime = Runtime::start_with(sources, Select::All, cache).await?;
    runtime.settle(output).await;
    let mut session = SessionOptions::default();
    session.preset = crate::call::preset(preset);
    let gateway = Gateway::new(
        &runtime.manager,
        session,
        GatewayOptions::default().server_info(crate::runtime::client_info()),
    );
    let served = gateway.serve(tokio::io::stdin(), tokio::io::stdout()).await;
    runtime.close().await;
    served
        .map(|()| Exit::Success)
        .map_err(|e| CliError::connection(format!("cannot read stdin: {e}")))
}

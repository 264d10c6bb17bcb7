//! `mcpctl retry SERVER`: connect one server afresh and show the status it settles in.
//!
//! Each `mcpctl` run starts its own connections, so the first attempt is
//! already a fresh one. When it fails for a reason another attempt may
//! cure (a timeout, a closed connection: a first `npx` download, a server
//! still starting), the manager's `retry` makes one more, fresh attempt;
//! configuration errors are not retried, since only an edit fixes them.
//!
//! Output: the server's row as `mcpctl servers` prints it (`--json`: the
//! one object). Exit status: 0 ready, 2 a configuration error, 3 a
//! connection failure.

use crate::exit::{CliError, Exit};
use crate::output::{Output, line};
use crate::runtime::{self, Runtime, Select};
use crate::servers;
use crate::sources::SourceOptions;

/// `mcpctl retry`.
pub(crate) async fn run(
    id: &str,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    let runtime = Runtime::start(options, Select::One(id)).await?;
    runtime.settle(output).await;
    let status = runtime.manager.status(id);
    if let Some(error) = status
        .as_ref()
        .and_then(|s| s.error())
        .filter(|error| !error.code.is_config_error())
    {
        eprintln!(
            "mcpctl: `{id}` failed ({}: {}); trying once more",
            error.code,
            line(&error.message)
        );
        runtime.manager.retry(id).map_err(|e| {
            CliError::usage(format!(
                "cannot retry `{id}`: {}",
                mcp_proto::text::ErrorChain(&e)
            ))
        })?;
        runtime.settle(output).await;
    }
    let rows = servers::rows(&runtime);
    let status = runtime.manager.status(id);
    let source = runtime.manager.source(id);
    let outcome = match (&status, runtime.config_error(id)) {
        (_, Some(error)) => Err(runtime::server_error(id, error, source.as_ref())),
        (Some(status), None) if status.is_connected() => Ok(Exit::Success),
        (Some(status), None) => Err(runtime::server_failure(id, status, source.as_ref())),
        (None, None) => Err(CliError::usage(format!("no server with id `{id}`"))),
    };
    runtime.close().await;
    let printed = if output.json {
        match rows.first() {
            // A failure is the run's one document instead (see `crate::exit`).
            Some(row) if outcome.is_ok() => output.json(row),
            _ => Ok(()),
        }
    } else {
        output.text(&servers::render(&rows, output))
    };
    printed.map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))?;
    // The row already says what is wrong; the error adds the exit status
    // and the hint on stderr.
    outcome
}

//! The ready servers of a run, for the commands that list or use what one server offers (`resources`, `read`, `prompts`, `prompt`, `complete`).
//!
//! The same rules as `tools` and `call`: with one SERVER, its
//! configuration error or status is the command's error (exit 2 or 3, the
//! manager's code); over every server, the ones not ready are named in
//! one note on stderr and a failed one makes the exit status its own
//! (2 for a configuration problem, 3 for a connection failure, the worse
//! of them; see [`crate::servers::Failures`]) unless `--allow-failures`.

use std::sync::Arc;

use mcp_config::DiscoveryEntry;
use mcp_manager::{Catalog, ErrorCode, HandleError, ServerHandle, ServerStatus};
use mcp_transport::CallOptions;

use crate::exit::{CliError, Exit};
use crate::output::line;
use crate::runtime::{self, Runtime};

/// The catalogs of the ready servers, in source order.
#[derive(Debug)]
pub(crate) struct Ready {
    /// `(server id, catalog)` for each ready server.
    pub(crate) catalogs: Vec<(String, Arc<Catalog>)>,
    /// The configured servers that failed (not counting untrusted or
    /// disabled ones).
    failed: crate::servers::Failures,
}

impl Ready {
    /// The exit status of a listing over these servers.
    pub(crate) fn exit(&self, allow_failures: bool) -> Exit {
        self.failed.exit(allow_failures)
    }
}

/// The error for `id` when it is not usable: a configuration error, a
/// status other than connected, or no such server.
fn check(runtime: &Runtime, id: &str) -> Result<(), CliError> {
    let source = runtime.manager.source(id);
    if let Some(error) = runtime.config_error(id) {
        return Err(runtime::server_error(id, error, source.as_ref()));
    }
    match runtime.manager.status(id) {
        Some(status) if status.is_connected() => Ok(()),
        Some(status) => Err(runtime::server_failure(id, &status, source.as_ref())),
        None => Err(CliError::usage(format!("no server with id `{id}`"))
            .code("unknown_server")
            .server(id)),
    }
}

/// The ready servers' catalogs (all, or `only`'s), with the note about the
/// others on stderr. `what` names what is listed, for the note.
pub(crate) fn catalogs(
    runtime: &Runtime,
    only: Option<&str>,
    what: &str,
) -> Result<Ready, CliError> {
    if let Some(id) = only {
        check(runtime, id)?;
    }
    let mut catalogs = Vec::new();
    let mut not_ready = Vec::new();
    let mut failed = crate::servers::Failures::default();
    for entry in &runtime.report.entries {
        let Some(id) = entry.server_id() else {
            continue;
        };
        let source = runtime.manager.source(id);
        if matches!(entry, DiscoveryEntry::Error { .. }) {
            let error = runtime.config_error(id);
            let untrusted = error.is_some_and(|e| e.code == ErrorCode::Untrusted);
            if !untrusted {
                failed.add(error.map(|e| e.code.as_str()));
            }
            not_ready.push(NotReady {
                id: id.to_owned(),
                status: if untrusted { "untrusted" } else { "error" }.to_owned(),
                why: error.map(|e| why(e, source.as_ref())),
            });
            continue;
        }
        let status = runtime.manager.status(id);
        match runtime.manager.catalog(id) {
            Some(catalog) if status.as_ref().is_some_and(ServerStatus::is_connected) => {
                catalogs.push((id.to_owned(), catalog));
            }
            _ => {
                let name = status.as_ref().map_or("unknown", |s| s.as_str());
                if name == "error" {
                    failed.add(
                        status
                            .as_ref()
                            .and_then(ServerStatus::error)
                            .map(|e| e.code.as_str()),
                    );
                }
                if name != "disabled" {
                    not_ready.push(NotReady {
                        id: id.to_owned(),
                        status: name.to_owned(),
                        why: status
                            .as_ref()
                            .and_then(ServerStatus::error)
                            .map(|e| why(e, source.as_ref())),
                    });
                }
            }
        }
    }
    note_not_ready(&not_ready, what);
    Ok(Ready { catalogs, failed })
}

/// A server left out of a listing: its id, its status and, when known,
/// why (its error and what to change).
#[derive(Debug)]
pub(crate) struct NotReady {
    /// The server's id.
    pub(crate) id: String,
    /// Its status (`error`, `untrusted`, `connecting`, ...).
    pub(crate) status: String,
    /// Its error on one line, `message [code]; what to change`.
    pub(crate) why: Option<String>,
}

/// A server's error on one line, with what to change.
fn why(error: &mcp_manager::ServerError, source: Option<&mcp_config::SourceMeta>) -> String {
    let mut text = format!("{} [{}]", line(&error.message), error.code);
    if let Some(hint) = runtime::fix_hint(error, source) {
        text.push_str("; ");
        text.push_str(&hint);
    }
    text
}

/// The note on stderr naming the servers not ready, whose `what` are not
/// listed: each on a line of its own with why when that is known, else
/// `id (status)` in one line that points at `mcpctl servers`; nothing when
/// there are none.
pub(crate) fn note_not_ready(not_ready: &[NotReady], what: &str) {
    if not_ready.is_empty() {
        return;
    }
    let count = not_ready.len();
    let head = format!(
        "mcpctl: {count} {} not ready and {} {what} not listed",
        if count == 1 {
            "server is"
        } else {
            "servers are"
        },
        if count == 1 { "its" } else { "their" },
    );
    if not_ready.iter().any(|n| n.why.is_some()) {
        eprintln!("{head}:");
        for server in not_ready {
            match &server.why {
                Some(why) => eprintln!("  {}: {why}", server.id),
                None => eprintln!("  {} ({})", server.id, server.status),
            }
        }
    } else {
        let names: Vec<String> = not_ready
            .iter()
            .map(|n| format!("{} ({})", n.id, n.status))
            .collect();
        eprintln!("{head}: {}; `mcpctl servers` says why", names.join(", "));
    }
}

/// A handle to `id`'s connection and its catalog, once it is ready, with
/// the call options its configuration asks for (its call deadline).
pub(crate) fn server(
    runtime: &Runtime,
    id: &str,
) -> Result<(ServerHandle, Arc<Catalog>, CallOptions), CliError> {
    check(runtime, id)?;
    let gone = || {
        CliError::connection(format!("server `{id}` closed its connection"))
            .code("closed")
            .server(id)
    };
    let server = runtime.manager.server(id).ok_or_else(gone)?;
    let catalog = runtime.manager.catalog(id).ok_or_else(gone)?;
    let options = CallOptions::default().timeout(runtime.manager.call_timeout(id));
    Ok((server, catalog, options))
}

/// The error for a request through a server handle: refused before it was
/// sent because the server's connection was replaced or closed
/// (`stale_handle`, exit 3) or because the server has as many
/// subscriptions as the manager keeps (`too_many_subscriptions`, exit 2),
/// or as [`request_error`] says.
pub(crate) fn handle_error(id: &str, what: &str, error: &HandleError) -> CliError {
    match error {
        HandleError::Request(error) => request_error(id, what, error),
        HandleError::TooManySubscriptions { .. } => {
            CliError::usage(format!("cannot {what}: {}", line(&error.to_string())))
                .code(error.code())
                .server(id)
        }
        stale => stale_handle(id, what, stale),
    }
}

/// The error for a request refused because `id`'s connection was replaced
/// or closed after its handle was taken: nothing was sent.
pub(crate) fn stale_handle<E>(id: &str, what: &str, error: &HandleError<E>) -> CliError {
    CliError::connection(format!(
        "cannot {what}: server `{id}` reconnected or closed meanwhile; nothing was sent"
    ))
    .code(error.code())
    .server(id)
}

/// The error for a request the server answered with a JSON-RPC error (exit
/// 1: it got the request and refused it), or that failed on the way (exit
/// 3), or that was refused before it was sent (exit 2). `what` says what
/// was asked, e.g. "read `fixture://x`".
pub(crate) fn request_error(id: &str, what: &str, error: &mcp_transport::ClientError) -> CliError {
    use mcp_transport::ClientError;
    match error {
        ClientError::Rpc(rpc) => {
            let mut cli = CliError::usage(format!(
                "server `{id}` refused to {what}: {} (JSON-RPC error {})",
                line(&mcp_proto::text::bound(
                    &rpc.message,
                    mcp_proto::text::ERROR_TEXT_LIMIT
                )),
                rpc.code
            ));
            cli.exit = Exit::ToolError;
            cli.code("request_refused").server(id)
        }
        ClientError::Refused(refused) => CliError::usage(format!(
            "cannot {what} on server `{id}`: {}",
            line(&refused.to_string())
        ))
        .code("unsupported")
        .server(id),
        // The server took the request and it ended without a usable
        // result: not the connection's failure.
        ClientError::TooManyInputRounds { .. }
        | ClientError::UnexpectedResultType { .. }
        | ClientError::InputNotGiven { .. }
        | ClientError::InvalidResult { .. } => {
            let mut cli = CliError::usage(format!(
                "server `{id}`: cannot {what}: {}",
                line(&mcp_proto::text::ErrorChain(error).to_string())
            ));
            cli.exit = Exit::ToolError;
            cli.code("request_failed").server(id)
        }
        ClientError::Cancelled => {
            let mut cli = CliError::connection(format!("the request to {what} was cancelled"));
            cli.exit = Exit::Interrupted;
            cli.server(id)
        }
        other => CliError::connection(format!(
            "server `{id}`: cannot {what}: {}",
            line(&mcp_proto::text::ErrorChain(other).to_string())
        ))
        .server(id),
    }
}

//! `mcpctl logs`: the log messages servers send (`notifications/message`, MCP "Server/Utilities/Logging"), and how `watch --follow` shows them, resource updates and URL elicitations' completions.
//!
//! `mcpctl logs [SERVER]` connects the servers (all, or SERVER), asks each
//! that declares `logging` for `--level` and above (`logging/setLevel`)
//! once it is ready, and prints every message as it arrives: one line
//! each, `server level [logger] message`, on stdout; with `--json` one
//! compact JSON line each (`{"t_ms", "event": "log", "id", "level",
//! "logger", "data"}`). Without `--follow` it stops [`AFTER_READY`] after
//! the last server settled; with it, at Ctrl-C (exit 130).
//!
//! A server's text is escaped onto one line and cut to [`LOG_TEXT`] bytes
//! before it reaches a terminal; JSON output escapes control characters.

use std::io::Write;
use std::time::Duration;

use mcp_manager::{ManagerEvent, ServerStatus};
use mcp_proto::text;
use mcp_proto::types::LoggingLevel;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use crate::cli::LogLevel;
use crate::exit::{CliError, Exit};
use crate::output::{self, Output, Paint, line};
use crate::runtime::{self, Runtime, Select};
use crate::sources::SourceOptions;

/// How long `logs` without `--follow` keeps printing after every server
/// settled (and was asked for its level).
pub(crate) const AFTER_READY: Duration = Duration::from_secs(1);

/// The most bytes of one log message shown on a line.
const LOG_TEXT: usize = 2000;

/// One event of `logs` or `watch --follow` as a JSON line.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Streamed<'a> {
    /// A server's log message.
    Log {
        /// Milliseconds since the run started.
        t_ms: u128,
        /// The server.
        id: &'a str,
        /// The message's level, in MCP's words.
        level: LoggingLevel,
        /// The logger's name.
        logger: Option<&'a str>,
        /// The message as the server sent it.
        data: &'a Value,
    },
    /// A subscribed resource changed.
    ResourceUpdated {
        /// Milliseconds since the run started.
        t_ms: u128,
        /// The server.
        id: &'a str,
        /// The resource's URI.
        uri: &'a str,
    },
    /// A server says a URL-mode elicitation's flow finished
    /// (`notifications/elicitation/complete`, MCP 2025-11-25
    /// "Client/Elicitation").
    ElicitationComplete {
        /// Milliseconds since the run started.
        t_ms: u128,
        /// The server.
        id: &'a str,
        /// The elicitation's id, as the manager bounds it.
        elicitation_id: &'a str,
    },
}

impl<'a> Streamed<'a> {
    /// The log message, resource update or elicitation's completion
    /// `event` is, if it is one.
    pub(crate) fn of(event: &'a ManagerEvent, elapsed: Duration) -> Option<Self> {
        let t_ms = elapsed.as_millis();
        match event {
            ManagerEvent::Log {
                id,
                level,
                logger,
                data,
            } => Some(Streamed::Log {
                t_ms,
                id,
                level: *level,
                logger: logger.as_deref(),
                data,
            }),
            ManagerEvent::ResourceUpdated { id, uri } => {
                Some(Streamed::ResourceUpdated { t_ms, id, uri })
            }
            ManagerEvent::ElicitationComplete { id, elicitation_id } => {
                Some(Streamed::ElicitationComplete {
                    t_ms,
                    id,
                    elicitation_id,
                })
            }
            _ => None,
        }
    }

    /// The line shown: one compact JSON line with `--json`, else a line
    /// for a person, the server's text escaped and bounded.
    pub(crate) fn render(&self, output: &Output) -> String {
        if output.json {
            return output::to_json_line(self);
        }
        match self {
            Streamed::Log {
                id,
                level,
                logger,
                data,
                ..
            } => {
                let message = message_text(data);
                let paint = match level {
                    LoggingLevel::Debug | LoggingLevel::Info | LoggingLevel::Notice => Paint::Dim,
                    LoggingLevel::Warning => Paint::Yellow,
                    _ => Paint::Red,
                };
                let logger = logger
                    .map(|l| format!(" [{}]", line(&text::bound(l, 200))))
                    .unwrap_or_default();
                format!(
                    "{} {}{logger} {}",
                    line(id),
                    output.paint(paint, level.as_str()),
                    line(&text::bound(&message, LOG_TEXT))
                )
            }
            Streamed::ResourceUpdated { id, uri, .. } => format!(
                "{} resource updated: {}",
                line(id),
                line(&text::bound(uri, LOG_TEXT))
            ),
            Streamed::ElicitationComplete {
                id, elicitation_id, ..
            } => format!(
                "{} elicitation complete: {}",
                line(id),
                line(elicitation_id)
            ),
        }
    }
}

/// A log message's `data` as text: a string as it is, any other JSON
/// value as one compact line. Not yet escaped.
pub(crate) fn message_text(data: &Value) -> String {
    match data {
        Value::String(text) => text.clone(),
        other => output::to_json_line(other),
    }
}

/// `mcpctl logs [SERVER] [--level L] [--follow]`.
pub(crate) async fn run(
    server: Option<&str>,
    level: Option<LogLevel>,
    follow: bool,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    let mut runtime = Runtime::start(options, Select::of(server)).await?;
    let started = Instant::now();
    let mut events = runtime
        .take_events()
        .ok_or_else(|| CliError::usage("the manager's events are not available"))?;
    let claim = crate::interrupt::claim();
    let interrupt = claim.pressed();
    tokio::pin!(interrupt);
    // Servers asked for their level, by id and connection generation.
    let mut asked: std::collections::HashSet<(String, u64)> = Default::default();
    let mut until: Option<Instant> = None;
    let mut interrupted = false;
    let mut result = Ok(Exit::Success);
    loop {
        let servers = runtime.manager.servers();
        for info in &servers {
            if info.status != ServerStatus::Ready {
                continue;
            }
            let generation = runtime.manager.generation(&info.id).unwrap_or(0);
            if !asked.insert((info.id.clone(), generation)) {
                continue;
            }
            if let Some(level) = level {
                set_level(&runtime, &info.id, level.level(), server.is_some()).await?;
            }
        }
        if let Some(only) = server
            && let Some(info) = servers.iter().find(|info| info.id == only)
            && runtime::is_settled(&info.status)
            && info.status != ServerStatus::Ready
        {
            result = Err(crate::ready::server(&runtime, only)
                .map(|_| ())
                .err()
                .unwrap_or_else(|| {
                    CliError::connection(format!("server `{only}` is not ready")).server(only)
                }));
            break;
        }
        if !follow
            && until.is_none()
            && servers.iter().all(|info| runtime::is_settled(&info.status))
        {
            until = Some(Instant::now() + AFTER_READY);
        }
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => {
                    if server.is_none_or(|only| event.server_id() == only)
                        && let Some(shown @ Streamed::Log { .. }) = Streamed::of(&event, started.elapsed())
                    {
                        let mut stdout = std::io::stdout().lock();
                        let _ = writeln!(stdout, "{}", shown.render(output));
                        let _ = stdout.flush();
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    eprintln!("mcpctl: {missed} log messages were dropped (printing fell behind)");
                }
                Err(RecvError::Closed) => break,
            },
            () = sleep_until(until) => break,
            _ = &mut interrupt => {
                interrupted = true;
                break;
            }
        }
    }
    runtime.close().await;
    if interrupted {
        eprintln!("mcpctl: interrupted");
        return Ok(Exit::Interrupted);
    }
    result
}

/// Waits until `until`; forever without one.
async fn sleep_until(until: Option<Instant>) {
    match until {
        Some(until) => tokio::time::sleep_until(until).await,
        None => std::future::pending().await,
    }
}

/// Asks `id` for `level` and above. A server that does not declare
/// `logging` is told about on stderr (an error when it was named).
async fn set_level(
    runtime: &Runtime,
    id: &str,
    level: LoggingLevel,
    named: bool,
) -> Result<(), CliError> {
    let Some(handle) = runtime.manager.server(id) else {
        return Ok(());
    };
    match handle.set_logging_level(level).await {
        Ok(()) => Ok(()),
        Err(error) => {
            let error = crate::ready::handle_error(id, "set the log level", &error);
            if named {
                return Err(error);
            }
            eprintln!("mcpctl: note: {error}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elicitations_completion_is_one_escaped_line_or_one_json_line() {
        let event = ManagerEvent::ElicitationComplete {
            id: "ask".into(),
            elicitation_id: "e-1\u{1b}[2J\nnext".into(),
        };
        let shown = Streamed::of(&event, Duration::from_millis(7)).expect("streamed");
        let plain = Output {
            json: false,
            color: false,
            color_stderr: false,
            progress: false,
        };
        assert_eq!(
            shown.render(&plain),
            "ask elicitation complete: e-1\\x1b[2J\\nnext"
        );
        let json = Output {
            json: true,
            ..plain
        };
        let line: Value = serde_json::from_str(&shown.render(&json)).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"t_ms": 7, "event": "elicitation_complete", "id": "ask",
                "elicitation_id": "e-1\u{1b}[2J\nnext"})
        );
    }
}

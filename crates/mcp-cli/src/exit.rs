//! Exit statuses and the error every command returns.
//!
//! The statuses are part of the scripting interface: 0 success,
//! 1 the tool reported an error (`isError`) or the server took the request
//! and it failed there (a JSON-RPC error; input rounds exhausted, an
//! unknown `resultType`, input nobody could give), 2 a usage or configuration
//! error, 3 a connection failure; 130 when
//! Ctrl-C interrupted the command (see [`crate::interrupt`]).
//! clap's own usage errors exit with 2 too. A server that cannot be used
//! exits with the same status from every command: 2 when its
//! configuration must change (the manager's configuration codes, e.g.
//! `missing_command`, `missing_env`), 3 otherwise; a listing over every
//! server (`servers`, `tools`, ...) exits with the worse of its failed
//! servers' statuses, unless `--allow-failures`.
//!
//! With `--json` an error is one JSON document on stdout instead of text
//! on stderr: `{"error": {"code", "message", "server", "hint"}}`. `code`
//! is stable: a server's own (the manager's codes, e.g. `closed`,
//! `missing_env`), the store's (e.g. `malformed_store`), one of
//! `unknown_server`, `unknown_tool`, `invalid_arguments`, `not_approved`,
//! `call_refused`, `request_refused` (a JSON-RPC error), `call_failed`,
//! `request_failed` (taken by the server, ended without a usable result),
//! `tools_changed` (a tool list that kept changing under a
//! call), or, for anything else, the exit status's kind:
//! `usage_error`, `connection_failed`, `tool_error`, `interrupted`.
//! `server` is the server's id or `null`, `hint` what to do or `null`.

use std::fmt;
use std::process::ExitCode;

/// How `mcpctl` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0: the command did what was asked.
    Success,
    /// 1: the tool ran and reported a failure (`isError: true`), or the
    /// server took the request and it failed there.
    ToolError,
    /// 2: bad usage or configuration: nothing was connected, or the
    /// request was refused before it reached a server.
    Usage,
    /// 3: the server could not be reached or the connection failed.
    Connection,
    /// 130: interrupted with Ctrl-C (the shell's convention for SIGINT).
    Interrupted,
}

impl Exit {
    /// The process exit status.
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::ToolError => 1,
            Exit::Usage => 2,
            Exit::Connection => 3,
            Exit::Interrupted => 130,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// Why a command failed: the message for stderr and the exit status.
/// Messages never contain secret values.
#[derive(Debug)]
pub(crate) struct CliError {
    /// The exit status.
    pub(crate) exit: Exit,
    /// What went wrong, one line.
    pub(crate) message: String,
    /// What to do about it, if there is something to say.
    pub(crate) hint: Option<String>,
    /// The stable code; `None` names the exit status's kind.
    pub(crate) code: Option<&'static str>,
    /// The server it concerns, if one.
    pub(crate) server: Option<String>,
}

impl CliError {
    /// A usage or configuration error (exit 2).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Usage,
            message: message.into(),
            hint: None,
            code: None,
            server: None,
        }
    }

    /// A connection failure (exit 3).
    pub(crate) fn connection(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Connection,
            message: message.into(),
            hint: None,
            code: None,
            server: None,
        }
    }

    /// Adds what to do about it.
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Sets the stable code.
    pub(crate) fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// Names the server it concerns.
    pub(crate) fn server(mut self, id: impl Into<String>) -> Self {
        self.server = Some(id.into());
        self
    }

    /// The stable code: the one set, else the exit status's kind.
    pub(crate) fn code_str(&self) -> &'static str {
        self.code.unwrap_or(match self.exit {
            Exit::Success | Exit::ToolError => "tool_error",
            Exit::Usage => "usage_error",
            Exit::Connection => "connection_failed",
            Exit::Interrupted => "interrupted",
        })
    }

    /// The scripting interface's error document (see the module docs).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"error": {
            "code": self.code_str(),
            "message": self.message,
            "server": self.server,
            "hint": self.hint,
        }})
    }
}

/// The message, then the hint on its own line. Whatever a server put into
/// them was escaped where it was put in (onto one line); as a last guard,
/// any control character left but a line break or tab is shown escaped
/// here, so an error never lets a terminal act on a server's bytes.
impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::output::block(&self.message))?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {}", crate::output::block(hint))?;
        }
        Ok(())
    }
}

impl From<mcp_config::StoreError> for CliError {
    fn from(error: mcp_config::StoreError) -> Self {
        use mcp_config::StoreError;
        let hint = match &error {
            StoreError::Malformed { .. } | StoreError::UnsupportedVersion { .. } => {
                Some("the file was left as it is; repair or move it, then run the command again")
            }
            StoreError::NoDataDir { .. } => {
                Some("set MCPCTL_DATA_DIR to the directory of mcp.json")
            }
            _ => None,
        };
        let text = format!("{} [{}]", mcp_proto::text::ErrorChain(&error), error.code());
        let error = CliError::usage(text).code(error.code());
        match hint {
            Some(hint) => error.hint(hint),
            None => error,
        }
    }
}

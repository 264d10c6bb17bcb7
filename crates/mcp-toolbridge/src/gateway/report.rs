//! What the gateway tells a client that runs on the same host's side (`mcpctl tools` and `mcpctl call` through `mcpctl serve --daemon`): the upstream servers behind its tools, and why a call failed, in namespaced `_meta` keys; the writer and the parser live here together so that they cannot drift.
//!
//! - [`SERVERS`] in a `tools/list` result, when the request's `_meta`
//!   asks for it (the key present, any value): a [`GatewayReport`], every
//!   server the manager knows with its status (and its error's stable
//!   [`ErrorCode`] when it failed) and, for a ready one, every tool as the
//!   server listed it, with its model name and the name it is served
//!   under. A host's model never asks, so it never pays for the copy.
//! - [`FAILURE`] in the `tools/call` result of a call the bridge did not
//!   complete (`isError: true`, the bridge's text as content): a
//!   [`FailureReport`], the [`CallFailure`] with a stable code, from which
//!   [`FailureReport::failure`] makes the same failure again. A server's
//!   JSON-RPC error for the call is such a failure only when the request's
//!   `_meta` asks for reports (the key present, any value); otherwise it
//!   reaches the client as that JSON-RPC error.

use std::time::Duration;

use mcp_manager::{ErrorCode, McpManager, ServerError, ServerStatus};
use mcp_proto::types::{Meta, Tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::result::{CallFailure, NotApproved};
use crate::schema::{ArgumentProblem, InvalidArguments};
use crate::session::ToolSet;

use super::ToolNaming;

/// The `_meta` key of the servers' report in a `tools/list` result, and of
/// the request asking for it.
pub const SERVERS: &str = "dev.mcp-gateway/servers";

/// The `_meta` key of a failed call's [`FailureReport`], and of the
/// `tools/call` request asking for one even for a server's JSON-RPC error.
pub const FAILURE: &str = "dev.mcp-gateway/failure";

/// The upstream servers behind a gateway's tools.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GatewayReport {
    /// Every server the manager knows, by id.
    pub servers: Vec<ServerReport>,
}

/// One upstream server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerReport {
    /// The server's id.
    pub id: String,
    /// Its status as [`ServerStatus::as_str`] names it (`ready`, `error`,
    /// `connecting`, ...).
    pub status: String,
    /// Why it failed, when its status is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorReport>,
    /// Its tools, when it is ready, in the order it listed them.
    #[serde(default)]
    pub tools: Vec<ToolReport>,
    /// Why some of them got no model name (the text of each
    /// [`UnusableTool`](crate::UnusableTool)), in the binding's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unusable: Vec<String>,
}

/// A failed server's [`ServerError`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ErrorReport {
    /// The stable code ([`ErrorCode::as_str`]).
    pub code: String,
    /// The message.
    pub message: String,
    /// The configuration field to change.
    #[serde(default)]
    pub config_key: String,
    /// What the server said as it failed, for a person (never a model's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The first line a stdio server wrote to stdout that is not JSON-RPC
    /// ([`ServerError::stray_stdout`]), for a person (never a model's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stray_stdout: Option<String>,
}

impl ErrorReport {
    /// The error again; `None` when the code is one this build does not
    /// know.
    pub fn server_error(&self) -> Option<ServerError> {
        let mut error = ServerError::new(
            ErrorCode::parse(&self.code)?,
            self.message.clone(),
            self.config_key.clone(),
        );
        error.cause = self.cause.clone();
        error.stray_stdout = self.stray_stdout.clone();
        Some(error)
    }
}

/// One tool of a ready server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolReport {
    /// The tool exactly as the server listed it.
    pub tool: Tool,
    /// Its model name; `None` when the bridge could not name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The name the gateway serves it under (what `tools/call` takes);
    /// `None` when it does not serve it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<String>,
}

impl GatewayReport {
    /// The report for `manager`'s servers and the binding `tools`, named as
    /// `naming` serves them.
    pub(super) fn of(manager: &McpManager, tools: &ToolSet, naming: ToolNaming) -> Self {
        let mut names = std::collections::HashMap::new();
        for tool in tools.tools() {
            if let Some((server, raw)) = tools.resolve(tool.name()) {
                names.insert(
                    (server.to_owned(), raw.to_owned()),
                    (tool.name().to_owned(), naming.served(tools, tool.name())),
                );
            }
        }
        let servers = manager
            .servers()
            .into_iter()
            .map(|info| {
                let ready = info.status.is_connected();
                let error = match &info.status {
                    ServerStatus::Error { error, .. } => Some(ErrorReport {
                        code: error.code.as_str().to_owned(),
                        message: error.message.clone(),
                        config_key: error.config_key.clone(),
                        cause: error.cause.clone(),
                        stray_stdout: error.stray_stdout.clone(),
                    }),
                    _ => None,
                };
                let listed = manager
                    .catalog(&info.id)
                    .filter(|_| ready)
                    .map(|catalog| {
                        catalog
                            .tools()
                            .iter()
                            .map(|tool| {
                                let named = names.get(&(info.id.clone(), tool.name.clone()));
                                ToolReport {
                                    tool: tool.clone(),
                                    model_name: named.map(|(model, _)| model.clone()),
                                    served: named.map(|(_, served)| served.clone()),
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let unusable = tools
                    .unusable()
                    .iter()
                    .filter(|unusable| unusable.server == info.id)
                    .map(ToString::to_string)
                    .collect();
                ServerReport {
                    unusable,
                    id: info.id,
                    status: if ready {
                        "ready".to_owned()
                    } else {
                        info.status.as_str().to_owned()
                    },
                    error,
                    tools: listed,
                }
            })
            .collect();
        GatewayReport { servers }
    }

    /// The report in a `tools/list` result's `_meta`, if it has one.
    pub fn parse(meta: Option<&Meta>) -> Option<GatewayReport> {
        serde_json::from_value(meta?.get(SERVERS)?).ok()
    }
}

/// Whether a `tools/list` request's params ask for the report.
pub(super) fn asked(params: &str) -> bool {
    params.contains(SERVERS)
        && serde_json::from_str::<Value>(params)
            .ok()
            .is_some_and(|params| params.get("_meta").and_then(|m| m.get(SERVERS)).is_some())
}

/// A [`CallFailure`] as a gateway reports it: a stable `code`, the text
/// the model would read, and what the failure holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FailureReport {
    /// `unknown_tool`, `invalid_arguments`, `not_approved`, `unavailable`,
    /// `not_ready`, `tools_changed`, `timeout`, `connection`,
    /// `call_refused` (a JSON-RPC error from the server) or `protocol`.
    pub code: String,
    /// The failure's text, as the model reads it.
    pub message: String,
    /// The server's id (`unavailable`, `not_ready`, `tools_changed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The tool's name (`unknown_tool`, `invalid_arguments`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `unavailable`: the server's status; `not_approved`: `denied`,
    /// `no_handler`, `timeout`, `revoked` or `invalid_decision`;
    /// `connection` and `protocol`: the description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `invalid_arguments`: the first problems, `(pointer, message)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<(String, String)>,
    /// `invalid_arguments`: how many more problems there were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: usize,
    /// `call_refused`: the JSON-RPC error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_code: Option<i64>,
    /// `timeout`, `not_ready` and a `not_approved` timeout: how long, in
    /// milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub millis: Option<u64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl FailureReport {
    /// The report of `failure`.
    pub fn of(failure: &CallFailure) -> FailureReport {
        let mut report = FailureReport {
            code: String::new(),
            message: failure.to_string(),
            server: None,
            tool: None,
            reason: None,
            problems: Vec::new(),
            more: 0,
            rpc_code: None,
            millis: None,
        };
        let millis = |d: &Duration| Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        report.code = match failure {
            CallFailure::UnknownTool { name } => {
                report.tool = Some(name.clone());
                "unknown_tool"
            }
            CallFailure::InvalidArguments(invalid) => {
                report.tool = Some(invalid.tool.clone());
                report.problems = invalid
                    .problems
                    .iter()
                    .map(|p| (p.path.clone(), p.message.clone()))
                    .collect();
                report.more = invalid.more;
                "invalid_arguments"
            }
            CallFailure::NotApproved(why) => {
                let reason = match why {
                    NotApproved::Denied => "denied",
                    NotApproved::NoHandler => "no_handler",
                    NotApproved::Timeout(d) => {
                        report.millis = millis(d);
                        "timeout"
                    }
                    NotApproved::Revoked => "revoked",
                    NotApproved::InvalidDecision => "invalid_decision",
                };
                report.reason = Some(reason.to_owned());
                "not_approved"
            }
            CallFailure::Unavailable { server, reason } => {
                report.server = Some(server.clone());
                report.reason = Some(reason.clone());
                "unavailable"
            }
            CallFailure::NotReady { server, waited } => {
                report.server = Some(server.clone());
                report.millis = millis(waited);
                "not_ready"
            }
            CallFailure::Stale { server } => {
                report.server = Some(server.clone());
                "tools_changed"
            }
            CallFailure::Timeout(d) => {
                report.millis = millis(d);
                "timeout"
            }
            CallFailure::Connection(text) => {
                report.reason = Some(text.clone());
                "connection"
            }
            CallFailure::Server { code, message } => {
                report.rpc_code = Some(*code);
                report.reason = Some(message.clone());
                "call_refused"
            }
            CallFailure::Protocol(text) => {
                report.reason = Some(text.clone());
                "protocol"
            }
        }
        .to_owned();
        report
    }

    /// The report in a `tools/call` result's `_meta`, if it has one.
    pub fn parse(meta: Option<&Meta>) -> Option<FailureReport> {
        serde_json::from_value(meta?.get(FAILURE)?).ok()
    }

    /// The failure again. A code this build does not know is a
    /// [`CallFailure::Protocol`] with the report's message.
    pub fn failure(&self) -> CallFailure {
        let text = |field: &Option<String>| field.clone().unwrap_or_default();
        let duration = Duration::from_millis(self.millis.unwrap_or(0));
        match self.code.as_str() {
            "unknown_tool" => CallFailure::UnknownTool {
                name: text(&self.tool),
            },
            "invalid_arguments" => CallFailure::InvalidArguments(InvalidArguments::reported(
                text(&self.tool),
                self.problems
                    .iter()
                    .map(|(path, message)| ArgumentProblem {
                        path: path.clone(),
                        message: message.clone(),
                    })
                    .collect(),
                self.more,
            )),
            "not_approved" => CallFailure::NotApproved(match self.reason.as_deref() {
                Some("denied") => NotApproved::Denied,
                Some("no_handler") => NotApproved::NoHandler,
                Some("timeout") => NotApproved::Timeout(duration),
                Some("revoked") => NotApproved::Revoked,
                _ => NotApproved::InvalidDecision,
            }),
            "unavailable" => CallFailure::Unavailable {
                server: text(&self.server),
                reason: text(&self.reason),
            },
            "not_ready" => CallFailure::NotReady {
                server: text(&self.server),
                waited: duration,
            },
            "tools_changed" => CallFailure::Stale {
                server: text(&self.server),
            },
            "timeout" => CallFailure::Timeout(duration),
            "connection" => CallFailure::Connection(text(&self.reason)),
            "call_refused" => CallFailure::Server {
                code: self.rpc_code.unwrap_or(0),
                message: text(&self.reason),
            },
            "protocol" => CallFailure::Protocol(text(&self.reason)),
            _ => CallFailure::Protocol(self.message.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_reads_back_as_itself() {
        let failures = [
            CallFailure::UnknownTool { name: "x".into() },
            CallFailure::InvalidArguments(InvalidArguments::reported(
                "mcp_fx_echo".into(),
                vec![ArgumentProblem {
                    path: "/text".into(),
                    message: "is not a string".into(),
                }],
                2,
            )),
            CallFailure::NotApproved(NotApproved::NoHandler),
            CallFailure::NotApproved(NotApproved::Timeout(Duration::from_millis(1500))),
            CallFailure::Unavailable {
                server: "fx".into(),
                reason: "connecting".into(),
            },
            CallFailure::NotReady {
                server: "fx".into(),
                waited: Duration::from_secs(3),
            },
            CallFailure::Stale {
                server: "fx".into(),
            },
            CallFailure::Timeout(Duration::from_secs(60)),
            CallFailure::Connection("closed".into()),
            CallFailure::Server {
                code: -32603,
                message: "boom".into(),
            },
            CallFailure::Protocol("bad result".into()),
        ];
        for failure in failures {
            let report = FailureReport::of(&failure);
            let mut meta = mcp_proto::types::JsonObject::new();
            meta.insert(FAILURE.into(), serde_json::to_value(&report).unwrap());
            let back = FailureReport::parse(Some(&Meta::from(meta))).expect("a report");
            assert_eq!(back, report);
            assert_eq!(back.failure(), failure);
            assert_eq!(back.message, failure.to_string());
        }
    }

    #[test]
    fn a_list_request_asks_for_the_report_in_its_meta() {
        assert!(asked(r#"{"_meta":{"dev.mcp-gateway/servers":{}}}"#));
        assert!(!asked(r#"{"cursor":"dev.mcp-gateway/servers"}"#));
        assert!(!asked("{}"));
    }
}

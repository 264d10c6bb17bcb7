//! Permissions and approvals.
//!
//! MCP calls follow the live session's permission preset. Full access
//! calls without asking; read only and workspace write ask the host's
//! [`ApprovalHandler`] unless the exact tool holds a session grant. The
//! handler answers allow once, deny, or allow this tool for this session
//! (the last only when the request offers it). Nothing a server declares,
//! `readOnlyHint` and `destructiveHint` included, changes any of this: the
//! annotations are shown to the person deciding and nothing more.
//!
//! Every decision, automatic or not, is published as a pair of
//! [`ApprovalEvent`]s (requested, then resolved with its source).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_proto::types::ToolAnnotations;
use serde::Serialize;
use serde_json::{Map, Value};

/// The session's permission preset, shared with the host's built-in tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PermissionPreset {
    /// Calls need no confirmation.
    FullAccess,
    /// Calls need approval unless the tool holds a session grant.
    WorkspaceWrite,
    /// Calls need approval unless the tool holds a session grant (the
    /// default: the most careful preset).
    #[default]
    ReadOnly,
}

impl PermissionPreset {
    /// Whether MCP calls need approval (or a grant) under this preset. The
    /// preset governs call authorization only, not what the server itself
    /// can reach.
    pub fn requires_approval(self) -> bool {
        !matches!(self, PermissionPreset::FullAccess)
    }
}

/// What the host is asked to decide: one exact call.
///
/// The approval binds everything here: the call id, the arguments (which
/// are sent exactly as shown) and the tool identity (server, tool and the
/// server's catalog lifetime). After the decision, the bridge checks again
/// that the tool is still current and the call was not cancelled.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// Unique within the session.
    pub request_id: u64,
    /// The host's id of the call (the model's tool-call id).
    pub call_id: String,
    /// The server's id.
    pub server: String,
    /// The server's display name (a label, never a key).
    pub server_name: String,
    /// The tool's name on its server.
    pub tool: String,
    /// The model-facing tool the call came through (`mcp_<server>_<tool>`
    /// or `call_mcp_tool`).
    pub via: String,
    /// The arguments that will be sent.
    pub arguments: Map<String, Value>,
    /// The preset that made approval necessary.
    pub preset: PermissionPreset,
    /// Whether [`ApprovalDecision::AllowSession`] is offered.
    pub allow_session: bool,
    /// The tool's annotations as the server declared them: hints for the
    /// person deciding, never a reason to skip asking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

/// The host's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run this call.
    AllowOnce,
    /// Do not run it.
    Deny,
    /// Run it, and run this exact tool without asking for the rest of the
    /// session (until its catalog lifetime ends). Valid only when the
    /// request offers it; otherwise the call is not made.
    AllowSession,
}

/// Decides approval requests; supplied by the host (an approval card, a
/// terminal prompt, a policy engine).
///
/// The bridge bounds the wait by
/// [`SessionOptions::approval_timeout`](crate::SessionOptions::approval_timeout)
/// and drops the future when the call is cancelled or its tool is revoked,
/// so an implementation should be cancel safe.
#[async_trait]
pub trait ApprovalHandler: Send + Sync + 'static {
    /// Decides one request.
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision;
}

/// Who or what resolved an approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ApprovalSource {
    /// Allowed automatically: the session has full access.
    FullAccess,
    /// Allowed automatically: the tool holds a session grant.
    SessionGrant,
    /// The host's handler decided.
    Handler,
    /// Denied: the session has no handler.
    NoHandler,
    /// Denied: the handler did not decide in time.
    Timeout,
    /// Ended: the call was cancelled while waiting.
    Cancelled,
    /// Ended: the call was abandoned while waiting: its future was dropped
    /// or its task aborted, so nobody is left to run it.
    Abandoned,
    /// Ended: the tool's catalog lifetime ended (refresh, reconnect,
    /// configuration change, disable, delete) or the server was disallowed
    /// while waiting.
    Revoked,
}

/// How an approval request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalResult {
    /// The call may run once.
    AllowedOnce,
    /// The call may run, and the tool holds a session grant from now on.
    AllowedForSession,
    /// The call does not run.
    Denied,
}

impl ApprovalResult {
    /// Whether the call may run.
    pub fn is_allowed(self) -> bool {
        !matches!(self, ApprovalResult::Denied)
    }
}

/// Approval events, in pairs: every [`ApprovalEvent::Requested`] is
/// followed by exactly one [`ApprovalEvent::Resolved`] with the same
/// `request_id`, automatic decisions included.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ApprovalEvent {
    /// A call needs (or automatically got) a decision.
    Requested(Arc<ApprovalRequest>),
    /// The decision.
    Resolved {
        /// The request this resolves.
        request_id: u64,
        /// The call id of the request.
        call_id: String,
        /// The result.
        result: ApprovalResult,
        /// Who decided.
        source: ApprovalSource,
    },
}

impl ApprovalEvent {
    /// The request id the event belongs to.
    pub fn request_id(&self) -> u64 {
        match self {
            ApprovalEvent::Requested(request) => request.request_id,
            ApprovalEvent::Resolved { request_id, .. } => *request_id,
        }
    }
}

impl fmt::Display for ApprovalSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApprovalSource::FullAccess => "full-access",
            ApprovalSource::SessionGrant => "session-grant",
            ApprovalSource::Handler => "handler",
            ApprovalSource::NoHandler => "no-handler",
            ApprovalSource::Timeout => "timeout",
            ApprovalSource::Cancelled => "cancelled",
            ApprovalSource::Abandoned => "abandoned",
            ApprovalSource::Revoked => "revoked",
        })
    }
}

/// A session grant: one exact tool of one catalog lifetime of one server.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Grant {
    /// The server's id.
    pub server: String,
    /// The server's catalog lifetime the grant is bound to.
    pub lifetime: u64,
    /// The tool's name on its server.
    pub tool: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_full_access_skips_approval() {
        assert!(!PermissionPreset::FullAccess.requires_approval());
        assert!(PermissionPreset::WorkspaceWrite.requires_approval());
        assert!(PermissionPreset::ReadOnly.requires_approval());
        assert_eq!(PermissionPreset::default(), PermissionPreset::ReadOnly);
    }

    #[test]
    fn sources_are_named_in_kebab_case() {
        assert_eq!(ApprovalSource::SessionGrant.to_string(), "session-grant");
        assert_eq!(ApprovalSource::FullAccess.to_string(), "full-access");
        let json = serde_json::to_value(ApprovalSource::SessionGrant).unwrap();
        assert_eq!(json, "session-grant");
    }
}

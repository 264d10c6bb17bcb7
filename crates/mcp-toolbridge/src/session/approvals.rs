//! Approvals inside a session: asking the handler, waiting for its decision under the deadline, and resolving every request exactly once.

use super::calls::Resolved;
use super::*;

impl Inner {
    /// Decides whether the call may run (full access, then the
    /// exact tool's grant, then the handler), publishing the event pair.
    pub(super) async fn authorize(
        &self,
        resolved: &Resolved,
        arguments: &Map<String, Value>,
        call: &ToolCall,
        via: &str,
    ) -> Result<(), ToolOutcome> {
        let server = &resolved.server;
        let tool = resolved.tool();
        let grant = Grant {
            server: server.id.to_string(),
            lifetime: server.lifetime,
            tool: tool.name.clone(),
        };
        let (preset, handler, granted) = {
            let state = self.lock();
            (
                state.preset,
                state.handler.clone(),
                state.grants.contains(&grant),
            )
        };
        let request = Arc::new(ApprovalRequest {
            request_id: self.next_request.fetch_add(1, Ordering::Relaxed),
            call_id: call.call_id.clone(),
            server: server.id.to_string(),
            server_name: server.name.to_string(),
            tool: tool.name.clone(),
            via: via.to_owned(),
            arguments: arguments.clone(),
            preset,
            allow_session: self.options.offer_session_grants,
            annotations: tool.annotations.clone(),
        });
        self.emit(ApprovalEvent::Requested(request.clone()));
        if !preset.requires_approval() {
            self.resolved(
                &request,
                ApprovalResult::AllowedOnce,
                ApprovalSource::FullAccess,
            );
            return Ok(());
        }
        if granted {
            self.resolved(
                &request,
                ApprovalResult::AllowedOnce,
                ApprovalSource::SessionGrant,
            );
            return Ok(());
        }
        let Some(handler) = handler else {
            self.resolved(&request, ApprovalResult::Denied, ApprovalSource::NoHandler);
            return Err(ToolOutcome::failed(CallFailure::NotApproved(
                NotApproved::NoHandler,
            )));
        };

        let revoke = CancelToken::new();
        self.lock().pending.insert(
            request.request_id,
            Pending {
                server: grant.server.clone(),
                lifetime: grant.lifetime,
                revoke: revoke.clone(),
            },
        );
        // From here on the request ends through the guard: if this future
        // is dropped while the handler decides (the caller gave up on it,
        // its task was aborted), the guard still removes the pending entry
        // and publishes the one `Resolved` the request was promised.
        let mut waiting = AwaitingDecision {
            inner: self,
            request: &request,
            resolved: false,
        };
        let waited = self
            .wait_for_decision(&*handler, &request, &call.cancel, &revoke)
            .await;
        waiting.remove_pending();

        let decision = match waited {
            Waited::Decision(decision) => decision,
            Waited::Timeout(limit) => {
                waiting.resolve(ApprovalResult::Denied, ApprovalSource::Timeout);
                return Err(ToolOutcome::failed(CallFailure::NotApproved(
                    NotApproved::Timeout(limit),
                )));
            }
            Waited::Cancelled => {
                waiting.resolve(ApprovalResult::Denied, ApprovalSource::Cancelled);
                return Err(ToolOutcome::Cancelled);
            }
            Waited::Revoked => {
                waiting.resolve(ApprovalResult::Denied, ApprovalSource::Revoked);
                return Err(ToolOutcome::failed(CallFailure::NotApproved(
                    NotApproved::Revoked,
                )));
            }
        };
        let result = match decision {
            ApprovalDecision::AllowOnce => ApprovalResult::AllowedOnce,
            ApprovalDecision::AllowSession if request.allow_session => {
                ApprovalResult::AllowedForSession
            }
            ApprovalDecision::AllowSession => {
                waiting.resolve(ApprovalResult::Denied, ApprovalSource::Handler);
                return Err(ToolOutcome::failed(CallFailure::NotApproved(
                    NotApproved::InvalidDecision,
                )));
            }
            _ => {
                waiting.resolve(ApprovalResult::Denied, ApprovalSource::Handler);
                return Err(ToolOutcome::failed(CallFailure::NotApproved(
                    NotApproved::Denied,
                )));
            }
        };
        // "Configuration and cancellation are rechecked after
        // waiting".
        if call.cancel.is_cancelled() {
            waiting.resolve(ApprovalResult::Denied, ApprovalSource::Cancelled);
            return Err(ToolOutcome::Cancelled);
        }
        let still_current = self.gate(&server.id).is_ok()
            && self.epoch.load(Ordering::SeqCst) == resolved.epoch
            && self.backend().availability(&server.id).lifetime() == Some(server.lifetime);
        if !still_current {
            waiting.resolve(ApprovalResult::Denied, ApprovalSource::Revoked);
            return Err(ToolOutcome::failed(CallFailure::NotApproved(
                NotApproved::Revoked,
            )));
        }
        if result == ApprovalResult::AllowedForSession {
            self.lock().grants.insert(grant);
        }
        waiting.resolve(result, ApprovalSource::Handler);
        Ok(())
    }

    pub(super) async fn wait_for_decision(
        &self,
        handler: &dyn ApprovalHandler,
        request: &ApprovalRequest,
        cancel: &CancelToken,
        revoke: &CancelToken,
    ) -> Waited {
        let limit = self.options.approval_timeout;
        let deadline = async {
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            decision = handler.decide(request) => Waited::Decision(decision),
            () = deadline => Waited::Timeout(limit.unwrap_or_default()),
            () = cancel.cancelled() => Waited::Cancelled,
            () = revoke.cancelled() => Waited::Revoked,
        }
    }

    pub(super) fn emit(&self, event: ApprovalEvent) {
        // Nobody listening is fine.
        let _ = self.approvals.send(event);
    }

    pub(super) fn resolved(
        &self,
        request: &ApprovalRequest,
        result: ApprovalResult,
        source: ApprovalSource,
    ) {
        self.emit(ApprovalEvent::Resolved {
            request_id: request.request_id,
            call_id: request.call_id.clone(),
            result,
            source,
        });
    }
}

/// An approval request the handler is deciding: in the pending table until
/// the wait ends, and resolved exactly once, by the call or, when the call
/// is dropped before that, by this guard's `Drop`.
pub(super) struct AwaitingDecision<'a> {
    pub(super) inner: &'a Inner,
    pub(super) request: &'a ApprovalRequest,
    pub(super) resolved: bool,
}

impl AwaitingDecision<'_> {
    /// Takes the request out of the pending table: nothing can revoke it
    /// any more.
    pub(super) fn remove_pending(&self) {
        self.inner.lock().pending.remove(&self.request.request_id);
    }

    /// Publishes the request's resolution.
    pub(super) fn resolve(&mut self, result: ApprovalResult, source: ApprovalSource) {
        self.resolved = true;
        self.inner.resolved(self.request, result, source);
    }
}

impl Drop for AwaitingDecision<'_> {
    fn drop(&mut self) {
        if !self.resolved {
            self.remove_pending();
            self.resolve(ApprovalResult::Denied, ApprovalSource::Abandoned);
        }
    }
}

pub(super) enum Waited {
    Decision(ApprovalDecision),
    Timeout(Duration),
    Cancelled,
    Revoked,
}

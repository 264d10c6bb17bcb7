//! A transport wrapper that notices what the client's errors flatten away: rejected credentials and expired sessions.
//!
//! The client turns a transport's HTTP 401 into a handshake error whose
//! text is for people, and a Streamable HTTP 404 into a closed session.
//! The manager needs both as facts (`auth_rejected`; "session expired
//! re-initializes once"), so every transport it gets from a factory is
//! wrapped in [`Observed`], which records them as they pass and changes
//! nothing else. It keeps `recv` cancel safe: it only inspects what the
//! inner `recv` already returned.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use mcp_proto::Message;
use mcp_transport::{Inbound, Transport, TransportError};

/// What a connection's transport reported.
#[derive(Debug, Default)]
pub(crate) struct Observations {
    auth_rejected: AtomicBool,
    auth_required: AtomicBool,
    session_expired: AtomicBool,
    /// Why the OAuth client failed (other than needing a login): its
    /// message, which mcp-oauth keeps free of secrets.
    oauth_failure: Mutex<Option<String>>,
}

impl Observations {
    pub(crate) fn auth_rejected(&self) -> bool {
        self.auth_rejected.load(Ordering::Relaxed)
    }

    /// The OAuth provider needed a person to log in (mcp-oauth's
    /// `InteractionRequired`).
    pub(crate) fn auth_required(&self) -> bool {
        self.auth_required.load(Ordering::Relaxed)
    }

    pub(crate) fn session_expired(&self) -> bool {
        self.session_expired.load(Ordering::Relaxed)
    }

    /// Why the OAuth client could not get credentials (a refused client
    /// secret, an authorization server that cannot be reached), if it
    /// failed.
    pub(crate) fn oauth_failure(&self) -> Option<String> {
        self.oauth_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn note(&self, error: &TransportError) {
        if error.is_session_expired() {
            self.session_expired.store(true, Ordering::Relaxed);
        }
        match crate::error::oauth_error(error) {
            Some(mcp_oauth::OAuthError::InteractionRequired) => {
                self.auth_required.store(true, Ordering::Relaxed);
            }
            Some(other) => {
                *self
                    .oauth_failure
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(other.to_string());
            }
            None => {}
        }
        if matches!(error.http_status(), Some(401 | 403)) {
            self.auth_rejected.store(true, Ordering::Relaxed);
        }
    }
}

/// A transport that records [`Observations`] about its inner one.
pub(crate) struct Observed {
    inner: Box<dyn Transport>,
    seen: Arc<Observations>,
}

impl Observed {
    pub(crate) fn new(inner: Box<dyn Transport>, seen: Arc<Observations>) -> Self {
        Observed { inner, seen }
    }
}

#[async_trait]
impl Transport for Observed {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let result = self.inner.send(message).await;
        if let Err(error) = &result {
            self.seen.note(error);
        }
        result
    }

    async fn recv(&self) -> Inbound {
        let inbound = self.inner.recv().await;
        match &inbound {
            Inbound::Undelivered { error, .. } | Inbound::Closed(Some(error)) => {
                self.seen.note(error)
            }
            _ => {}
        }
        inbound
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.inner.close().await
    }

    fn set_protocol_version(&self, version: mcp_proto::ProtocolVersion) {
        self.inner.set_protocol_version(version);
    }

    // Every provided method is forwarded: a wrapper that kept a default
    // would silently switch the inner transport's behaviour off.
    fn set_tool_headers(&self, tool: &str, headers: Option<mcp_proto::headers::ToolParamHeaders>) {
        self.inner.set_tool_headers(tool, headers);
    }

    fn try_send(&self, message: Message) -> Result<(), Message> {
        self.inner.try_send(message)
    }

    fn try_recv(&self) -> Option<Inbound> {
        let inbound = self.inner.try_recv()?;
        match &inbound {
            Inbound::Undelivered { error, .. } | Inbound::Closed(Some(error)) => {
                self.seen.note(error)
            }
            _ => {}
        }
        Some(inbound)
    }
}

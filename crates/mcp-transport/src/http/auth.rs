//! The authorization hook of the HTTP transports: where an OAuth client (or any other token source) plugs in.

use async_trait::async_trait;
use http::Method;
use http::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use url::Url;

use crate::transport::TransportError;

/// Supplies the `Authorization` header (and any other credential header)
/// of every HTTP request a transport sends, and hears about the server's
/// answers and refusals.
///
/// The transports call [`authorize_request`](Self::authorize_request) before
/// each request (POST, GET stream, DELETE, legacy SSE), by default
/// [`authorization`](Self::authorization), and
/// [`on_response`](Self::on_response) with each response. When the server answers
/// `401 Unauthorized`, or `403 Forbidden` with a `WWW-Authenticate`
/// challenge (MCP "Authorization" §Scope Challenge Handling: step-up), they
/// call [`on_refusal`](Self::on_refusal) (by default
/// [`on_unauthorized`](Self::on_unauthorized)); when it returns `true`
/// they send the same request again, with a fresh `authorization()`.
/// A request is retried at most once after a 401 (a second 401 is reported
/// as [`TransportError::Http`], so a provider that keeps minting tokens the
/// server refuses cannot loop), and at most three times in all, so a 401
/// may be followed by up to two 403 step-up challenges.
///
/// An implementation must never log the tokens it hands out.
#[async_trait]
pub trait AuthProvider: Send + Sync + 'static {
    /// The full value of the `Authorization` header (for example
    /// `Bearer abc`), or `None` to send none. Overrides a bearer token
    /// configured through [`HttpOptions::bearer_token_env`](super::HttpOptions::bearer_token_env).
    async fn authorization(&self) -> Result<Option<String>, TransportError>;

    /// Adds this provider's headers to one request about to be sent:
    /// `method` to `url` (where the request goes, redirects followed).
    /// Every value added is marked sensitive, so that it is never printed,
    /// and replaces a header of the same name set elsewhere (a configured
    /// `Authorization`, say). A provider whose credentials depend on the
    /// request overrides it: a DPoP client (RFC 9449 §7) adds a proof for
    /// this method and URL to every request. The default sets
    /// `Authorization` to [`authorization`](Self::authorization)'s value.
    async fn authorize_request(
        &self,
        method: &Method,
        url: &Url,
        headers: &mut HeaderMap,
    ) -> Result<(), TransportError> {
        let _ = (method, url);
        if let Some(value) = self.authorization().await? {
            let value = HeaderValue::from_str(&value).map_err(|_| {
                TransportError::Setup(
                    "the auth provider's Authorization value is not a valid header value"
                        .to_owned(),
                )
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        Ok(())
    }

    /// Sees the status and headers of every response to a request sent
    /// with this provider, before the transport acts on it. `Ok(true)` has
    /// the same request sent again at once, through a fresh
    /// [`authorize_request`](Self::authorize_request), without counting as
    /// a renewal of credentials: a DPoP server's `use_dpop_nonce` challenge
    /// that brought a new nonce (RFC 9449 §9) is answered this way. At most
    /// two such resends per request; past them, or with `Ok(false)`, the
    /// response goes on to the refusal handling below. The default returns
    /// `Ok(false)`.
    async fn on_response(&self, status: u16, headers: &HeaderMap) -> Result<bool, TransportError> {
        let _ = (status, headers);
        Ok(false)
    }

    /// The server refused a request with `status` (401, or 403 with a
    /// challenge); `www_authenticate` is its `WWW-Authenticate` header, when
    /// it sent one that is valid text. Return `Ok(true)` once new
    /// credentials are ready and the request should be retried, `Ok(false)`
    /// to give up (the refusal is then reported as
    /// [`TransportError::Http`]), or an error to report instead.
    async fn on_unauthorized(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, TransportError>;

    /// What the transports actually call on a refusal: as
    /// [`on_unauthorized`](Self::on_unauthorized), and also told the
    /// `Authorization` value the refused request carried (`None` when it
    /// carried none). A provider shared by concurrent requests uses it to
    /// see that the refused credentials were already replaced (by another
    /// request's renewal) and to retry with the new ones instead of renewing
    /// again. The default ignores it and calls `on_unauthorized`.
    async fn on_refusal(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
        sent_authorization: Option<&str>,
    ) -> Result<bool, TransportError> {
        let _ = sent_authorization;
        self.on_unauthorized(status, www_authenticate).await
    }
}

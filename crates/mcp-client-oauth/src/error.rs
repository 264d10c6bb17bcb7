//! The one error type of the crate. No variant ever carries a token, a client secret, an authorization code or a code verifier.

use std::io;

/// Why authorization failed. Messages are lowercase and never contain a
/// credential; server-supplied text is cut short.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// A request to an authorization server or metadata URL failed before
    /// an answer arrived.
    #[error("request to {url} failed: {message}")]
    Http {
        /// The URL without its query.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The HTTP proxy a request to an authorization server or metadata URL
    /// goes through failed, not the server: it could not be reached,
    /// refused or dropped the CONNECT tunnel, or its setting is unusable
    /// (see [`OAuthOptions::proxy`](crate::OAuthOptions::proxy)). The
    /// message names the proxy and where it was set, never its credentials.
    #[error("request to {url} failed: {message}")]
    Proxy {
        /// The URL without its query.
        url: String,
        /// The proxy's `host:port`; empty when its setting is unusable.
        proxy: String,
        /// The proxy's status answering CONNECT, when it refused.
        status: Option<u16>,
        /// What went wrong, naming the proxy.
        message: String,
    },
    /// A metadata document could not be used.
    #[error("invalid metadata at {url}: {message}")]
    Metadata {
        /// Where it was fetched.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The protected resource metadata names another resource than this
    /// server (RFC 9728 §3.3); no authorization request was sent.
    #[error("protected resource metadata is for {found}, not for {expected}")]
    ResourceMismatch {
        /// The server URL.
        expected: String,
        /// The metadata's `resource`.
        found: String,
    },
    /// No authorization server metadata could be found.
    #[error("no authorization server metadata for {issuer}")]
    NoMetadata {
        /// The issuer tried.
        issuer: String,
    },
    /// The authorization server does not list `S256` in
    /// `code_challenge_methods_supported` (MCP 2025-11-25 MUST refuse).
    #[error("the authorization server does not support PKCE S256")]
    PkceUnsupported,
    /// No pre-registered credentials, no client ID metadata document the
    /// server accepts, and no registration endpoint.
    #[error("no way to identify this client to {issuer}: configure a client id")]
    NoClientIdentity {
        /// The issuer.
        issuer: String,
    },
    /// The authorization step failed (the user refused, `state` or `iss`
    /// did not match, no code came back).
    #[error("authorization failed: {0}")]
    Authorization(String),
    /// An endpoint (token, registration) answered with an error.
    #[error("{endpoint} endpoint answered HTTP {status}{}", oauth_error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default())]
    Refused {
        /// `token` or `registration`.
        endpoint: &'static str,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code and description, cut short.
        oauth_error: Option<String>,
    },
    /// The private key for `private_key_jwt` is unusable.
    #[error("client key: {0}")]
    Key(String),
    /// The token store failed.
    #[error("the token store failed")]
    Store(#[source] io::Error),
    /// New tokens need a person (the authorization code grant) and the
    /// host's [`Interaction`](crate::Interaction) is not interactive: stored
    /// tokens were missing, expired or refused. A host tells the user to log
    /// in (`mcpctl login SERVER`).
    #[error("authorization needs a person to log in")]
    InteractionRequired,
    /// The configuration cannot work (for example a client-credentials grant
    /// without credentials).
    #[error("{0}")]
    Config(String),
}

impl From<OAuthError> for mcp_transport::TransportError {
    fn from(error: OAuthError) -> Self {
        mcp_transport::TransportError::Other(Box::new(error))
    }
}

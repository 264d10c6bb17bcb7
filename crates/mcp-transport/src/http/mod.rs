//! The HTTP transports: Streamable HTTP (2025-03-26 and later), legacy HTTP+SSE (2024-11-05), and the automatic fallback between them.
//!
//! One type, [`HttpTransport`], speaks both. [`HttpOptions::protocol`] picks
//! Streamable HTTP, legacy HTTP+SSE, or [`HttpProtocol::Auto`] (the
//! default): start as Streamable HTTP and switch to legacy SSE when the
//! `initialize` POST is refused with 400, 404 or 405 (MCP "Transports"
//! §Backwards Compatibility).
//!
//! Module map:
//! - `client`: the hyper client (keep-alive pool, rustls, fixed headers,
//!   redirects, auth retries, body limits).
//! - `body`: reading a JSON body into a buffer reused from one response
//!   to the next.
//! - `events`: reading an SSE response body through `mcp_proto`'s decoder.
//! - `engine`: the transport object, its background tasks and inbound queue.
//! - `streamable`: Streamable HTTP's POST, GET stream, resumption, DELETE.
//! - `legacy_sse`: the legacy GET stream, its `endpoint` event and POSTs.
//! - `auth`: the [`AuthProvider`] hook.
//! - `proxy`: [`ProxyConfig`] (which proxy, curl's variables) and
//!   [`ProxyConnector`], the connector's CONNECT tunnel through it (also
//!   for hosts' own HTTP clients, through [`https_connector`]).
//! - `ca_env`: [`CaEnv`], the opt-in `SSL_CERT_FILE` / `SSL_CERT_DIR` roots.
//! - `tls`: [`TlsError`], a failed TLS handshake in words (issuer, expiry,
//!   name, a plain HTTP server on an `https://` URL).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

mod auth;
pub(crate) mod body;
mod ca_env;
mod client;
mod engine;
mod eras;
pub(crate) mod events;
mod legacy_sse;
mod pool;
mod proxy;
mod shared;
mod streamable;
mod tls;

pub use auth::AuthProvider;
pub use ca_env::CaEnv;
pub use client::{https_connector, tls_root_store};
pub use engine::HttpTransport;
pub use proxy::{ProxyConfig, ProxyConnector};
pub use tls::{TlsError, TlsFailure};

/// Which HTTP protocol an [`HttpTransport`] speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpProtocol {
    /// Streamable HTTP, falling back to legacy HTTP+SSE when the server
    /// refuses the `initialize` POST with 400, 404 or 405, or answers it with
    /// an SSE stream whose first event is `endpoint`. 401/403, 5xx and
    /// network errors are not fallback signals, nor is a refused GET stream.
    #[default]
    Auto,
    /// Streamable HTTP only.
    Streamable,
    /// Legacy HTTP+SSE only (deprecated since 2025-03-26).
    LegacySse,
}

/// How to reach an MCP server over HTTP. Every number is a default that a
/// host may change; the defaults are those of [`HttpOptions::new`].
#[derive(Clone, derive_setters::Setters)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The MCP endpoint (Streamable HTTP) or SSE URL (legacy). `http` or
    /// `https` only, with no user info and no fragment.
    pub url: String,
    /// Which protocol to speak. Default [`HttpProtocol::Auto`].
    pub protocol: HttpProtocol,
    /// The name of an environment variable that holds a bearer token, read
    /// once at connect; sent as `Authorization: Bearer <token>`. A missing
    /// or empty variable fails the connect with an error that names the
    /// variable (never a value).
    pub bearer_token_env: Option<String>,
    /// Headers sent on every request, as (name, value). Headers the
    /// transport sets itself (`Accept`, `Content-Type`, `Mcp-Session-Id`,
    /// `MCP-Protocol-Version`, `Last-Event-ID`) override these.
    pub headers: Vec<(String, String)>,
    /// Headers whose values come from environment variables read once at
    /// connect, as (header name, variable name). They override
    /// [`headers`](Self::headers) of the same name; the bearer token
    /// overrides both for `Authorization`.
    pub env_headers: Vec<(String, String)>,
    /// Extra trusted root certificates, PEM text (one or more certificates
    /// each), added to the built-in webpki (Mozilla) roots: for self-signed
    /// or private-CA servers and tests.
    pub extra_root_certificates: Vec<String>,
    /// More trusted roots from `SSL_CERT_FILE` and `SSL_CERT_DIR`, read at
    /// connect; a file that cannot be read fails the connect naming the
    /// variable and path. Default [`CaEnv::none`]: opt in with
    /// [`CaEnv::from_env`].
    pub ca_env: CaEnv,
    /// Which proxy the server is reached through, if any (HTTP CONNECT).
    /// Default [`ProxyConfig::from_env`], read by [`HttpOptions::new`]:
    /// curl's `https_proxy`, `http_proxy`, `all_proxy` and `no_proxy`,
    /// except that loopback servers are reached directly.
    /// [`ProxyConfig::none`] turns proxies off.
    pub proxy: ProxyConfig,
    /// The largest message (a JSON body or one SSE event) accepted; a larger
    /// one ends the connection with [`TransportError::TooLarge`](crate::TransportError::TooLarge).
    /// Default 64 MiB.
    pub max_message_size: usize,
    /// The longest wait for a TCP connection. Default 10 s.
    pub connect_timeout: Duration,
    /// The longest wait for a response's status line and headers (the TLS
    /// handshake included). Bodies are not bounded by it: an SSE stream may
    /// last as long as its request. Default 300 s; a call's own deadline is
    /// the client driver's business.
    pub request_timeout: Duration,
    /// The longest [`close`](crate::Transport::close) waits for the server
    /// to answer its DELETE. Default 5 s.
    pub close_timeout: Duration,
    /// Legacy SSE: the longest wait for the `endpoint` event after the GET
    /// stream opened. Default 10 s.
    pub endpoint_timeout: Duration,
    /// The wait before reconnecting an SSE stream when the server sent no
    /// `retry` field. Default 1 s. When the server sent one, its value is
    /// waited (MCP 2025-11-25 "Transports" §Resumability: the client MUST
    /// respect it).
    pub default_retry: Duration,
    /// How many times in a row an SSE stream (a POST's, or the GET stream)
    /// is reconnected without receiving an event before the transport gives
    /// up on it: the POST's request then fails, and the GET stream stays
    /// closed. A failed reconnection counts as one. Default 3.
    pub max_reconnect_attempts: u32,
    /// How many same-origin redirects one request follows. Default 5.
    pub max_redirects: u32,
    /// The authorization hook (OAuth, token refresh). Default none.
    pub auth: Option<Arc<dyn AuthProvider>>,
}

impl HttpOptions {
    /// Options for `url` with every default; the proxy variables are read
    /// from the environment now ([`ProxyConfig::from_env`]).
    pub fn new(url: impl Into<String>) -> Self {
        HttpOptions {
            url: url.into(),
            protocol: HttpProtocol::Auto,
            bearer_token_env: None,
            headers: Vec::new(),
            env_headers: Vec::new(),
            extra_root_certificates: Vec::new(),
            ca_env: CaEnv::none(),
            proxy: ProxyConfig::from_env(),
            max_message_size: mcp_proto::codec::sse::DEFAULT_MAX_EVENT_SIZE,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(300),
            close_timeout: Duration::from_secs(5),
            endpoint_timeout: Duration::from_secs(10),
            default_retry: Duration::from_secs(1),
            max_reconnect_attempts: 3,
            max_redirects: 5,
            auth: None,
        }
    }
}

impl fmt::Debug for HttpOptions {
    /// Header values may be secrets and the URL may carry a token in its
    /// query, so neither is printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpOptions")
            .field("protocol", &self.protocol)
            .field("bearer_token_env", &self.bearer_token_env)
            .field("headers", &header_names)
            .field("env_headers", &self.env_headers)
            .field(
                "extra_root_certificates",
                &self.extra_root_certificates.len(),
            )
            .field("ca_env", &self.ca_env)
            .field("proxy", &self.proxy)
            .field("max_message_size", &self.max_message_size)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("endpoint_timeout", &self.endpoint_timeout)
            .field("default_retry", &self.default_retry)
            .field("max_reconnect_attempts", &self.max_reconnect_attempts)
            .field("max_redirects", &self.max_redirects)
            .field("auth", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

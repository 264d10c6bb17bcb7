//! Management errors: a stable code, a short message and the config key to change.
//!
//! A server's error carries a
//! code a UI may branch on, a message for a person, and the field of the
//! configuration to look at. Raw server errors and stderr go to `tracing`,
//! never into the message; a stdio server's last stderr lines go into
//! [`ServerError::cause`] only, bounded, escaped and with credential-like
//! words redacted, for a person. No secret value (env values, header
//! values, tokens) ever appears in them: messages name fields, variables
//! and commands, not values.

use std::fmt;
use std::time::Duration;

use mcp_config::{Diagnostic, StoreError};
use mcp_proto::text;
use mcp_transport::ClientError;

/// A stable code for why a server is not usable.
///
/// The strings of [`ErrorCode::as_str`] are part of the public contract: a
/// host may branch on them. Every code, and what its message names:
///
/// | code | cause | the message names |
/// |---|---|---|
/// | `missing_env` | a `${VAR}`, `envVars`, `envHeaders` or `bearerTokenEnv` variable is not set | the variable |
/// | `missing_input` | an `${input:ID}` prompt nobody answered (no input provider, no terminal, declined) | the input |
/// | `untrusted` | a project server the person has not approved (`mcp_config::TrustGate`) | the command to approve it |
/// | `missing_command` | the stdio command is empty, cannot be found or cannot be run | the command |
/// | `missing_directory` | the stdio working directory does not exist | the field |
/// | `invalid_config` | the configuration does not validate | the problem |
/// | `auth_rejected` | the server refused the credentials (HTTP 401, or 403 with a `WWW-Authenticate` challenge), or OAuth failed | the OAuth failure, if any |
/// | `auth_required` | an OAuth login only a person can give is needed | `mcpctl login <id>` |
/// | `forbidden` | HTTP 403 without a challenge: the server refused the request itself (its `Origin` or `Host`), not credentials | the status and the start of the body |
/// | `http_status` | the server answered with another HTTP error status (500, 400 without a JSON-RPC error, ...) | the status and the start of the body |
/// | `unexpected_content_type` | an HTTP response whose media type the transport cannot read (`text/plain` where JSON or SSE belongs) | the status, the media type and what was expected |
/// | `redirect_refused` | a redirect to another origin (or to a URL with user info), never followed | the origin |
/// | `redirect_loop` | more redirects in a row than the transport follows | the limit |
/// | `headers_too_large` | the response's headers exceed what the transport reads | the limit in bytes |
/// | `message_too_large` | a message from the server exceeds the size limit; the connection ended | the limit in bytes |
/// | `unreachable` | no connection could be made (refused, no route, DNS) | the cause |
/// | `tls` | the TLS handshake with an HTTPS server failed: its certificate was refused (unknown issuer, expired, not valid for the host) or it does not speak TLS (a plain HTTP server on an `https://` URL) | the server's origin and what failed |
/// | `proxy_failed` | the HTTP proxy failed, not the server: it could not be reached, refused the CONNECT tunnel (407, 403, 502, ...), closed it, or its setting is unusable; for the server or for its OAuth client's request to an authorization server | the proxy's `host:port`, the variable that set it, the status (and the OAuth request's URL) |
/// | `unsupported_version` | no protocol version in common: the server speaks only versions this client does not, or refuses the settled one on a later request (-32022) | both sides' versions (and the server's own words) |
/// | `timeout` | initialize, a `tools/list` page or the whole discovery took longer than its deadline | the deadline |
/// | `closed` | the connection ended (the process exited, the server hung up) | which |
/// | `session_expired` | the Streamable HTTP session expired again right after a new one was started | — |
/// | `transport_disabled` | the server's transport is compiled out of this build (its cargo feature, `stdio` or `http`, is off) | the feature |
/// | `invalid_catalog` | the tool catalog could not be read (a repeated cursor, a malformed result) | the problem |
/// | `refresh_failed` | a refresh after `notifications/tools/list_changed` failed | the problem |
/// | `protocol` | the server broke the protocol (refused or answered `initialize` wrongly, errored on a request it declared) | the server's code and bounded text |
///
/// A request through a [`ServerHandle`](crate::ServerHandle) has codes of
/// its own ([`HandleError::code`]): `stale_handle` when the handle's
/// connection was replaced or closed (nothing was sent), `request_failed`
/// when the connection's own error says why.
///
/// A server that keeps paging (`tools/list` past the page limits) is not an
/// error: its catalog keeps the tools got so far and
/// [`Catalog::is_truncated`](crate::Catalog::is_truncated) says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `missing_env`: a `${VAR}`, `envVars`, `envHeaders` or `bearerTokenEnv`
    /// variable is not set.
    MissingEnv,
    /// `missing_input`: an `${input:ID}` prompt that nobody answered (see
    /// `mcp_config::WithInputs`).
    MissingInput,
    /// `untrusted`: a project server whose definition the person has not
    /// approved (`mcp_config::TrustGate`); it is never started.
    Untrusted,
    /// `missing_command`: the stdio command is empty, cannot be found or
    /// cannot be run.
    MissingCommand,
    /// `missing_directory`: the stdio working directory does not exist.
    MissingDirectory,
    /// `auth_rejected`: the server refused the credentials (HTTP 401, or
    /// 403 with a `WWW-Authenticate` challenge).
    AuthRejected,
    /// `auth_required`: the server needs an OAuth authorization that only a
    /// person can give (no stored tokens, or they expired and could not be
    /// refreshed); the message says to run `mcpctl login <id>`. The
    /// manager never waits for a browser.
    AuthRequired,
    /// `timeout`: initialize, a `tools/list` page or the whole discovery
    /// took longer than its deadline.
    Timeout,
    /// `closed`: the connection ended (the process exited, the server
    /// closed the connection).
    Closed,
    /// `invalid_catalog`: the tool catalog could not be read (a repeated
    /// pagination cursor, a malformed `tools/list` result).
    InvalidCatalog,
    /// `refresh_failed`: a refresh after `notifications/tools/list_changed`
    /// failed; the connection was closed, the configuration left alone.
    RefreshFailed,
    /// `protocol`: the server broke the protocol (refused or answered
    /// `initialize` wrongly, errored on a request it declared).
    Protocol,
    /// `invalid_config`: the configuration does not validate (a bad URL
    /// scheme, a relative working directory, ...); the message names the
    /// problem and [`ServerError::config_key`] the field.
    InvalidConfig,
    /// `forbidden`: HTTP 403 without a `WWW-Authenticate` challenge: the
    /// server refused the request itself (MCP "Transports" §Security
    /// Warning: an `Origin` or `Host` it does not accept), not credentials.
    Forbidden,
    /// `http_status`: the server answered with an HTTP error status other
    /// than an authentication refusal; the message names it.
    HttpStatus,
    /// `unexpected_content_type`: an HTTP response with a media type the
    /// transport cannot read (MCP "Transports" §Sending Messages).
    UnexpectedContentType,
    /// `redirect_refused`: a redirect to another origin or to a URL with
    /// user info, which is never followed.
    RedirectRefused,
    /// `redirect_loop`: more redirects in a row than the transport follows.
    RedirectLoop,
    /// `headers_too_large`: the response headers exceed the transport's limit.
    HeadersTooLarge,
    /// `message_too_large`: a message from the server exceeds the size limit.
    MessageTooLarge,
    /// `unreachable`: no connection could be made to the server.
    Unreachable,
    /// `tls`: the TLS handshake with an HTTPS server failed (RFC 8446):
    /// its certificate was refused (an issuer that is not trusted, expired,
    /// not valid for the URL's host) or it does not speak TLS at all; the
    /// message names the origin and what failed. Tried once per connect:
    /// the refusal cannot change on the next try.
    Tls,
    /// `proxy_failed`: the HTTP proxy the server is reached through failed
    /// (unreachable, refused the CONNECT tunnel, closed it, or set up
    /// wrongly); the message names the proxy, where it was set and the
    /// status, never its credentials.
    ProxyFailed,
    /// `unsupported_version`: the server and this client have no protocol
    /// version in common (MCP "Lifecycle" §Version Negotiation).
    UnsupportedVersion,
    /// `session_expired`: the Streamable HTTP session expired, a new one was
    /// started (MCP "Transports" §Session Management), and it expired too
    /// before the catalog was listed.
    SessionExpired,
    /// `transport_disabled`: the server's transport is not in this build:
    /// the host was compiled without the cargo feature it needs (`stdio`,
    /// `http`); the message names the feature. Only a rebuild or another
    /// transport in the configuration helps.
    TransportDisabled,
}

impl ErrorCode {
    /// Every code, in the order of the table above: for a host that reads
    /// codes back from text (a peer's report, a log) with [`ErrorCode::parse`].
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::MissingEnv,
        ErrorCode::MissingInput,
        ErrorCode::Untrusted,
        ErrorCode::MissingCommand,
        ErrorCode::MissingDirectory,
        ErrorCode::AuthRejected,
        ErrorCode::AuthRequired,
        ErrorCode::Timeout,
        ErrorCode::Closed,
        ErrorCode::InvalidCatalog,
        ErrorCode::RefreshFailed,
        ErrorCode::Protocol,
        ErrorCode::InvalidConfig,
        ErrorCode::Forbidden,
        ErrorCode::HttpStatus,
        ErrorCode::UnexpectedContentType,
        ErrorCode::RedirectRefused,
        ErrorCode::RedirectLoop,
        ErrorCode::HeadersTooLarge,
        ErrorCode::MessageTooLarge,
        ErrorCode::Unreachable,
        ErrorCode::Tls,
        ErrorCode::ProxyFailed,
        ErrorCode::UnsupportedVersion,
        ErrorCode::SessionExpired,
        ErrorCode::TransportDisabled,
    ];

    /// The code whose [`as_str`](ErrorCode::as_str) is `text`; `None` for
    /// a code this build does not know (a newer peer's).
    pub fn parse(text: &str) -> Option<ErrorCode> {
        ErrorCode::ALL
            .iter()
            .copied()
            .find(|code| code.as_str() == text)
    }

    /// The stable string form, e.g. `missing_env`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MissingEnv => "missing_env",
            ErrorCode::MissingInput => "missing_input",
            ErrorCode::Untrusted => "untrusted",
            ErrorCode::MissingCommand => "missing_command",
            ErrorCode::MissingDirectory => "missing_directory",
            ErrorCode::AuthRejected => "auth_rejected",
            ErrorCode::AuthRequired => "auth_required",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Closed => "closed",
            ErrorCode::InvalidCatalog => "invalid_catalog",
            ErrorCode::RefreshFailed => "refresh_failed",
            ErrorCode::Protocol => "protocol",
            ErrorCode::InvalidConfig => "invalid_config",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::HttpStatus => "http_status",
            ErrorCode::UnexpectedContentType => "unexpected_content_type",
            ErrorCode::RedirectRefused => "redirect_refused",
            ErrorCode::RedirectLoop => "redirect_loop",
            ErrorCode::HeadersTooLarge => "headers_too_large",
            ErrorCode::MessageTooLarge => "message_too_large",
            ErrorCode::Unreachable => "unreachable",
            ErrorCode::Tls => "tls",
            ErrorCode::ProxyFailed => "proxy_failed",
            ErrorCode::UnsupportedVersion => "unsupported_version",
            ErrorCode::SessionExpired => "session_expired",
            ErrorCode::TransportDisabled => "transport_disabled",
        }
    }

    /// Whether only a change of configuration (or of the environment) can
    /// fix this: such errors are never retried automatically (the
    /// `isConfigError`). Rejected credentials count: retrying them with the
    /// same token cannot succeed, and so do a refused `Origin`/`Host` and a
    /// redirect to another origin: the URL has to change.
    pub fn is_config_error(self) -> bool {
        matches!(
            self,
            ErrorCode::MissingEnv
                | ErrorCode::MissingInput
                | ErrorCode::Untrusted
                | ErrorCode::MissingCommand
                | ErrorCode::MissingDirectory
                | ErrorCode::AuthRejected
                | ErrorCode::AuthRequired
                | ErrorCode::InvalidConfig
                | ErrorCode::Forbidden
                | ErrorCode::RedirectRefused
                | ErrorCode::TransportDisabled
        )
    }
}

/// The error of a server that needs `mcpctl login`.
#[cfg(feature = "oauth")]
pub(crate) fn auth_required(id: &str) -> ServerError {
    ServerError::new(
        ErrorCode::AuthRequired,
        format!("the server requires you to log in: run `mcpctl login {id}`"),
        "transport.oauth",
    )
}

#[cfg(feature = "oauth")]
/// The mcp-client-oauth error in `error`'s chain, if any: the OAuth client failed
/// before the server was asked (discovery, registration, a token request).
pub(crate) fn oauth_error<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a mcp_client_oauth::OAuthError> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(oauth) = error.downcast_ref::<mcp_client_oauth::OAuthError>() {
            return Some(oauth);
        }
        if let Some(mcp_transport::TransportError::Other(inner)) =
            error.downcast_ref::<mcp_transport::TransportError>()
            && let Some(oauth) = oauth_error(inner.as_ref())
        {
            return Some(oauth);
        }
        current = error.source();
    }
    None
}

/// The management error a transport's error stands for, whichever request
/// met it (`initialize`, a listing, or the connection's end); `None` when
/// it says no more than the client's error around it (a plain close).
pub(crate) fn transport_cause(
    error: &mcp_transport::TransportError,
    id: &str,
    endpoint: &str,
    auth_key: &str,
) -> Option<ServerError> {
    let error_of = |code, message: String| Some(ServerError::new(code, message, endpoint));
    // Only OAuth's `auth_required` names the server (`mcpctl login <id>`).
    #[cfg(not(feature = "oauth"))]
    let _ = id;
    #[cfg(feature = "oauth")]
    match crate::error::oauth_error(error) {
        Some(mcp_client_oauth::OAuthError::InteractionRequired) => {
            return Some(auth_required(id));
        }
        // The OAuth client goes through the transport's proxy: the proxy
        // failed, not the authorization server.
        Some(mcp_client_oauth::OAuthError::Proxy { url, message, .. }) => {
            return Some(ServerError::new(
                ErrorCode::ProxyFailed,
                text::bound(
                    &format!("OAuth request to {url} failed: {message}"),
                    text::ERROR_TEXT_LIMIT,
                )
                .into_owned(),
                "",
            ));
        }
        Some(other) => {
            return Some(ServerError::new(
                ErrorCode::AuthRejected,
                format!("OAuth failed: {}", text::ErrorChain(other)),
                "transport.oauth",
            ));
        }
        None => {}
    }
    #[cfg(feature = "http")]
    if let mcp_transport::TransportError::Io(io) = error
        && let Some(tls) = io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<mcp_transport::TlsError>())
    {
        return error_of(
            ErrorCode::Tls,
            text::bound(&tls.to_string(), text::ERROR_TEXT_LIMIT).into_owned(),
        );
    }
    match error {
        mcp_transport::TransportError::Http {
            status: 401 | 403, ..
        } => Some(ServerError::new(
            ErrorCode::AuthRejected,
            "the server rejected the credentials",
            auth_key,
        )),
        mcp_transport::TransportError::Forbidden { body } => error_of(
            ErrorCode::Forbidden,
            format!(
                "the server refused the request with HTTP 403 and no authentication challenge \
                 (it may not accept this client's Origin or Host){}",
                body_text(body)
            ),
        ),
        mcp_transport::TransportError::Http { status, body } => error_of(
            ErrorCode::HttpStatus,
            format!("the server answered HTTP {status}{}", body_text(body)),
        ),
        mcp_transport::TransportError::UnexpectedContentType {
            status,
            content_type,
            expected,
        } => error_of(
            ErrorCode::UnexpectedContentType,
            format!(
                "the server answered HTTP {status} with content type {} (expected {expected})",
                server_text(content_type)
            ),
        ),
        mcp_transport::TransportError::RedirectRefused { reason } => error_of(
            ErrorCode::RedirectRefused,
            format!(
                "the server redirected {}; only redirects within the same origin are followed",
                server_text(reason)
            ),
        ),
        mcp_transport::TransportError::TooManyRedirects { limit } => error_of(
            ErrorCode::RedirectLoop,
            format!("the server redirected more than {limit} times in a row (a redirect loop)"),
        ),
        mcp_transport::TransportError::HeadersTooLarge { limit } => error_of(
            ErrorCode::HeadersTooLarge,
            format!("the server's response headers exceed the {limit}-byte limit"),
        ),
        mcp_transport::TransportError::TooLarge { limit } => error_of(
            ErrorCode::MessageTooLarge,
            format!("a message from the server exceeds the {limit}-byte limit"),
        ),
        // The proxy comes from the environment (or the host), not from a
        // field of the server's configuration.
        mcp_transport::TransportError::Proxy { message, .. } => Some(ServerError::new(
            ErrorCode::ProxyFailed,
            text::bound(message, text::ERROR_TEXT_LIMIT).into_owned(),
            "",
        )),
        mcp_transport::TransportError::Io(io) if error.is_unreachable() => error_of(
            ErrorCode::Unreachable,
            format!(
                "the server could not be reached: {}",
                server_text(&io.to_string())
            ),
        ),
        mcp_transport::TransportError::Protocol(message) => error_of(
            ErrorCode::Protocol,
            format!(
                "the server broke the transport's rules: {}",
                server_text(message)
            ),
        ),
        _ => None,
    }
}

/// A request refused with -32022 (2026-07-28 "Versioning": unsupported
/// protocol version) after the era was settled: `unsupported_version`,
/// naming the version this connection speaks (`ours`), the versions the
/// server says it supports (its error's `data.supported`, at most eight,
/// each bounded and escaped) and the server's own words, bounded and
/// escaped with credential-like words redacted.
pub(crate) fn version_refused(
    method: &str,
    error: &mcp_proto::ErrorObject,
    ours: Option<mcp_proto::ProtocolVersion>,
) -> ServerError {
    let supported: Vec<String> = error
        .data_as::<serde_json::Value>()
        .and_then(|data| data.get("supported").cloned())
        .and_then(|list| serde_json::from_value::<Vec<serde_json::Value>>(list).ok())
        .unwrap_or_default()
        .iter()
        .map(|version| match version {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    let mut listed: Vec<String> = supported
        .iter()
        .take(8)
        .map(|version| text::error_text(version, text::NAME_LIMIT).into_owned())
        .collect();
    if supported.len() > listed.len() {
        listed.push(format!("and {} more", supported.len() - listed.len()));
    }
    let theirs = if listed.is_empty() {
        "it named no version it supports".to_owned()
    } else {
        format!("it supports {}", listed.join(", "))
    };
    let ours = ours.map_or_else(|| "the negotiated version".to_owned(), |v| v.to_string());
    ServerError::new(
        ErrorCode::UnsupportedVersion,
        format!(
            "the server refused protocol version {ours} on {method} (-32022 unsupported \
             protocol version); {theirs}: {}",
            server_text(&error.message)
        ),
        "era",
    )
}

/// `: BODY` for a non-empty error body, bounded; empty otherwise.
fn body_text(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {}", server_text(body))
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a server is in the `error` status.
///
/// `message` is short, for a person, and never contains a secret or a raw
/// server error; `config_key` is the field to change, in the store's JSON
/// vocabulary (`transport.command`, `transport.envVars[0]`, `timeout`, ...),
/// or empty when no setting is at fault (a server that lists a malformed
/// catalog, say).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} [{code}]{}", if config_key.is_empty() { String::new() } else { format!(" (see `{config_key}`)") })]
#[non_exhaustive]
pub struct ServerError {
    /// The stable code.
    pub code: ErrorCode,
    /// A short explanation for a person.
    pub message: String,
    /// The configuration field to change.
    pub config_key: String,
    /// What the server itself said as it failed, for a person: the last
    /// lines a stdio server wrote to stderr, each bounded, escaped onto
    /// one line and with credential-like words redacted. Never part of
    /// `message` nor of this error's `Display`, so that it reaches no
    /// model; hosts show it under the status.
    pub cause: Option<String>,
    /// The first line a stdio server wrote to stdout that is not a
    /// JSON-RPC message (a banner, a log line on the wrong stream; MCP
    /// "Transports" §stdio allows only MCP messages there), when the
    /// connection failed before the server had answered: bounded, escaped
    /// and redacted like [`cause`](ServerError::cause), and like it never
    /// part of `message` nor of `Display`.
    pub stray_stdout: Option<String>,
}

impl ServerError {
    /// An error. Callers outside this crate build these in their
    /// [`TransportFactory`](crate::TransportFactory) through
    /// [`ConnectError`](crate::ConnectError).
    pub fn new(code: ErrorCode, message: impl Into<String>, config_key: impl Into<String>) -> Self {
        ServerError {
            code,
            message: message.into(),
            config_key: config_key.into(),
            cause: None,
            stray_stdout: None,
        }
    }

    /// The error with a stdio server's first stray stdout line as its
    /// [`stray_stdout`](ServerError::stray_stdout), made safe to show as
    /// [`server_text`] does; unchanged when there is none.
    pub(crate) fn with_stray_stdout(mut self, line: Option<&str>) -> Self {
        if let Some(line) = line.filter(|line| !line.trim().is_empty()) {
            self.stray_stdout = Some(server_text(line.trim_end()));
        }
        self
    }

    /// The error with the last lines of a stdio server's stderr as its
    /// [`cause`](ServerError::cause) (see [`stderr_cause`]); unchanged when
    /// there are none.
    pub(crate) fn with_stderr(mut self, tail: Option<&str>) -> Self {
        if let Some(cause) = tail.and_then(stderr_cause) {
            self.cause = Some(cause);
        }
        self
    }

    /// The error for the first of a configuration's problems. Diagnostics
    /// of `mcp-config` never contain values, so their messages can be shown.
    pub(crate) fn from_diagnostics(diagnostics: &[Diagnostic]) -> Self {
        let Some(first) = diagnostics.first() else {
            return ServerError::new(
                ErrorCode::InvalidConfig,
                "the configuration is not valid",
                "",
            );
        };
        let code = match first.code {
            mcp_config::Code::MissingEnv => ErrorCode::MissingEnv,
            mcp_config::Code::MissingInput => ErrorCode::MissingInput,
            mcp_config::Code::Untrusted => ErrorCode::Untrusted,
            mcp_config::Code::MissingCommand => ErrorCode::MissingCommand,
            _ => ErrorCode::InvalidConfig,
        };
        let mut message = first.message.clone();
        if diagnostics.len() > 1 {
            message.push_str(&format!(" (and {} more problems)", diagnostics.len() - 1));
        }
        ServerError::new(code, message, first.field.clone())
    }
}

/// An automatic reconnect that is scheduled (reconnect policy on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryState {
    /// Which try comes next, from 1.
    pub attempt: u32,
    /// How many tries the policy allows.
    pub max_attempts: u32,
    /// How long the manager waits before it.
    pub delay: Duration,
}

/// Why a manager operation (`retry`, `save`, `set_enabled`, ...) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// No server has this id.
    #[error("no server with id `{id}`")]
    UnknownServer {
        /// The id asked for.
        id: String,
    },
    /// The server is disabled; enable it first.
    #[error("server `{id}` is disabled")]
    Disabled {
        /// The server's id.
        id: String,
    },
    /// The configuration does not validate; nothing was saved.
    #[error("server `{id}` is not valid: {}", Diagnostic::summary(diagnostics))]
    Invalid {
        /// The server's id.
        id: String,
        /// Every problem; messages never contain values.
        diagnostics: Vec<Diagnostic>,
    },
    /// The operation needs a config store and the manager has none.
    #[error("the manager has no config store")]
    NoStore,
    /// The config store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The manager was closed.
    #[error("the manager is closed")]
    Closed,
    /// A blocking store operation could not run to completion (its thread
    /// panicked or the runtime is shutting down).
    #[error("the config store operation did not complete")]
    StoreTask,
}

impl ManagerError {
    /// The stable code: `unknown_server`, `disabled`, `invalid_config`,
    /// `no_store`, `manager_closed`, `store_task_failed`, or the store's own code
    /// ([`StoreError::code`]).
    pub fn code(&self) -> &'static str {
        match self {
            ManagerError::UnknownServer { .. } => "unknown_server",
            ManagerError::Disabled { .. } => "disabled",
            ManagerError::Invalid { .. } => "invalid_config",
            ManagerError::NoStore => "no_store",
            ManagerError::Store(error) => error.code(),
            ManagerError::Closed => "manager_closed",
            ManagerError::StoreTask => "store_task_failed",
        }
    }
}

/// Why [`McpManager::wait_ready`](crate::McpManager::wait_ready) gave up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// No server has this id (or it was removed while waiting).
    #[error("no server with id `{id}`")]
    UnknownServer {
        /// The id asked for.
        id: String,
    },
    /// The server is disabled.
    #[error("server `{id}` is disabled")]
    Disabled {
        /// The server's id.
        id: String,
    },
    /// The server was disconnected on request; `retry` connects it again.
    #[error("server `{id}` is disconnected")]
    Disconnected {
        /// The server's id.
        id: String,
    },
    /// The server failed and no automatic retry is scheduled.
    #[error("server `{id}` failed: {error}")]
    Failed {
        /// The server's id.
        id: String,
        /// Why.
        error: ServerError,
    },
    /// The deadline passed first.
    #[error("server `{id}` was not ready before the deadline")]
    Timeout {
        /// The server's id.
        id: String,
    },
    /// The manager was closed or dropped.
    #[error("the manager is closed")]
    Closed,
}

impl WaitError {
    /// The stable code: `unknown_server`, `disabled`, `disconnected`, the
    /// server's own code for `Failed`, `timeout` or `manager_closed`.
    pub fn code(&self) -> &'static str {
        match self {
            WaitError::UnknownServer { .. } => "unknown_server",
            WaitError::Disabled { .. } => "disabled",
            WaitError::Disconnected { .. } => "disconnected",
            WaitError::Failed { error, .. } => error.code.as_str(),
            WaitError::Timeout { .. } => "timeout",
            WaitError::Closed => "manager_closed",
        }
    }
}

/// Why a request through a [`ServerHandle`](crate::ServerHandle) failed.
///
/// `E` is the connection's own error: [`ClientError`] for every request,
/// [`SkillLoadError`](mcp_transport::SkillLoadError) for the skill loads
/// that verify what they read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandleError<E = ClientError> {
    /// The handle belongs to a connection the manager no longer holds: the
    /// server reconnected, was restarted, disconnected, removed, went idle,
    /// or the manager closed. Nothing was sent; take a fresh handle with
    /// [`McpManager::server`](crate::McpManager::server) or
    /// [`McpManager::wait_ready`](crate::McpManager::wait_ready).
    #[error("the handle to server `{id}` is stale: its connection was replaced or closed")]
    Stale {
        /// The server's id.
        id: String,
    },
    /// `resources/subscribe` refused before it was sent: the server already
    /// has [`ManagerOptions::max_subscriptions`](crate::ManagerOptions::max_subscriptions)
    /// subscriptions, the most the manager keeps and asks for again after
    /// a reconnect. Unsubscribe from one first.
    #[error(
        "server `{id}` already has {limit} resource subscriptions, the most kept; unsubscribe from one first"
    )]
    TooManySubscriptions {
        /// The server's id.
        id: String,
        /// The limit.
        limit: usize,
    },
    /// The request went out on the current connection and failed there.
    #[error(transparent)]
    Request(#[from] E),
}

impl<E> HandleError<E> {
    /// The stable code: `stale_handle`, `too_many_subscriptions`, or
    /// `request_failed` when the connection's own error (in
    /// [`HandleError::request_error`]) says why.
    pub fn code(&self) -> &'static str {
        match self {
            HandleError::Stale { .. } => "stale_handle",
            HandleError::TooManySubscriptions { .. } => "too_many_subscriptions",
            HandleError::Request(_) => "request_failed",
        }
    }

    /// Whether the handle was stale and nothing was sent.
    pub fn is_stale(&self) -> bool {
        matches!(self, HandleError::Stale { .. })
    }

    /// The connection's own error, when the request was sent.
    pub fn request_error(&self) -> Option<&E> {
        match self {
            HandleError::Stale { .. } | HandleError::TooManySubscriptions { .. } => None,
            HandleError::Request(error) => Some(error),
        }
    }
}

/// Server text in a management error: words that look like credentials
/// (a known token prefix such as `sk-`, or a run of 32 or more token
/// characters) replaced by `[redacted]` (a server may echo what it was
/// sent), then at most 200 bytes of it ([`text::bound`], with its cut
/// marker), control characters shown escaped on one line, never
/// interpreted ([`text::escape`]).
pub(crate) fn server_text(peer: &str) -> String {
    let mut out = String::with_capacity(peer.len().min(256));
    for word in peer.split_inclusive(char::is_whitespace) {
        let bare = word.trim_end();
        if looks_like_a_credential(bare.trim_matches(|c: char| "\"'()[]{}<>,;.".contains(c))) {
            out.push_str("[redacted]");
            out.push_str(&word[bare.len()..]);
        } else {
            out.push_str(word);
        }
    }
    text::escape(&text::bound(&out, 200), text::Lines::One).into_owned()
}

/// How many of a server's last stderr lines a [`ServerError::cause`] keeps.
pub(crate) const STDERR_CAUSE_LINES: usize = 5;

/// The last [`STDERR_CAUSE_LINES`] non-blank lines of a server's stderr,
/// each as [`server_text`] makes server text safe to show (at most 200
/// bytes, control characters written as escapes, credential-like words
/// redacted), joined with line breaks; `None` when there is no such line.
pub(crate) fn stderr_cause(tail: &str) -> Option<String> {
    let lines: Vec<&str> = tail
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let start = lines.len().saturating_sub(STDERR_CAUSE_LINES);
    let kept: Vec<String> = lines
        .get(start..)
        .unwrap_or_default()
        .iter()
        .map(|line| server_text(line.trim_end()))
        .collect();
    (!kept.is_empty()).then(|| kept.join("\n"))
}

/// Whether a word of server text looks like a secret (see [`server_text`]).
fn looks_like_a_credential(word: &str) -> bool {
    const PREFIXES: [&str; 8] = ["sk-", "sk_", "pk_", "ghp_", "gho_", "xoxb-", "xoxp-", "eyJ"];
    let token_chars = |w: &str| {
        w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '/' | '='))
    };
    (PREFIXES.iter().any(|p| word.starts_with(p)) && word.len() > 8 && token_chars(word))
        || (word.len() >= 32 && token_chars(word))
}

#[cfg(test)]
mod stderr_tests {
    use super::*;

    #[test]
    fn every_code_reads_back_from_its_text() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
        }
        let distinct: std::collections::HashSet<_> = ErrorCode::ALL.iter().collect();
        assert_eq!(distinct.len(), ErrorCode::ALL.len());
        assert_eq!(ErrorCode::parse("no_such_code"), None);
    }

    #[test]
    fn a_stderr_cause_keeps_the_last_lines_escaped_bounded_and_redacted() {
        let tail = "one\n\ntwo\nthree\nfour\nfive\nsix \x1b[31mred\ntoken sk-abcdefghijklmnop\n\n";
        let cause = stderr_cause(tail).expect("a cause");
        assert_eq!(
            cause,
            "three\nfour\nfive\nsix \\x1b[31mred\ntoken [redacted]"
        );
        assert_eq!(stderr_cause("\n  \n"), None);
        let long = stderr_cause(&"word ".repeat(200)).expect("a cause");
        assert!(long.len() < 250 && long.contains(" more bytes]"), "{long}");
        let error = ServerError::new(ErrorCode::Closed, "exited", "").with_stderr(Some("boom"));
        assert_eq!(error.cause.as_deref(), Some("boom"));
        assert_eq!(
            error.to_string(),
            "exited [closed]",
            "Display is not widened"
        );
    }

    #[test]
    fn a_stray_stdout_line_is_escaped_bounded_redacted_and_kept_out_of_display() {
        let error = ServerError::new(ErrorCode::Protocol, "no answer", "").with_stray_stdout(Some(
            &format!(
                "Welcome \x1b[2J key sk-abcdefghijklmnop {}\n",
                "word ".repeat(80)
            ),
        ));
        let line = error.stray_stdout.as_deref().expect("a line");
        assert!(
            line.starts_with("Welcome \\x1b[2J key [redacted] word"),
            "{line}"
        );
        assert!(line.len() < 250 && line.contains(" more bytes]"), "{line}");
        assert_eq!(error.to_string(), "no answer [protocol]");
        let none = ServerError::new(ErrorCode::Timeout, "t", "").with_stray_stdout(Some("  "));
        assert_eq!(none.stray_stdout, None);
    }
}

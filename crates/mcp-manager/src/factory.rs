//! Transport factories: how the manager turns a resolved config into a transport, and the default one.
//!
//! The manager never builds a transport itself: it asks its
//! [`TransportFactory`], so tests and third parties inject their own
//! (in-memory scripted servers, a custom transport).
//! [`DefaultTransportFactory`] builds stdio, Streamable HTTP (with the
//! automatic legacy SSE fallback) and legacy SSE from [`ResolvedConfig`].
//!
//! OAuth: with [`DefaultTransportFactory::oauth_dir`] set, every HTTP/SSE
//! server gets its own [`OAuthProvider`] over a [`FileTokenStore`] in that
//! directory, configured from the server's `oauth` section when it has one.
//! A server with a static `Authorization` header (and no `oauth` section)
//! keeps its header and gets none. The provider is lazy: it sends nothing
//! until the server answers 401, so servers without OAuth never notice it.
//! Its interaction is never interactive: stored tokens are used and
//! refreshed, but when a person must authorize, the connection fails at
//! once with `auth_required` ("run `mcpctl login <id>`") instead of waiting
//! for a browser. A server whose `oauth.grant` is `client_credentials`
//! needs no person: its provider runs that grant itself on the first 401.
//! The provider reaches the authorization servers through the factory's
//! [`proxy`](DefaultTransportFactory::proxy) and trusts its roots, as the
//! transport does.
//!
//! Features: stdio servers need the `stdio` feature, HTTP and SSE servers
//! `http`, and OAuth `oauth`. A server whose transport is compiled out
//! fails to connect with [`ErrorCode::TransportDisabled`]
//! (`transport_disabled`), naming the feature to turn on.

use std::fmt;
#[cfg(feature = "oauth")]
use std::path::PathBuf;
#[cfg(feature = "http")]
use std::sync::Arc;

use async_trait::async_trait;
#[cfg(feature = "oauth")]
use mcp_client_oauth::{
    FileTokenStore, Grant, Interaction, OAuthError, OAuthOptions, OAuthProvider, WorkloadAssertion,
};
#[cfg(feature = "oauth")]
use mcp_config::{AssertionSource, OAuthGrant, ResolvedOAuth};
use mcp_config::{ResolvedConfig, ResolvedTransport};
use mcp_transport::Transport;
#[cfg(any(feature = "http", feature = "stdio"))]
use mcp_transport::TransportError;
#[cfg(feature = "http")]
use mcp_transport::{AuthProvider, CaEnv, HttpOptions, HttpProtocol, HttpTransport, ProxyConfig};
use tokio::time::Instant;

use crate::error::{ErrorCode, ServerError};

/// Builds transports for the manager.
#[async_trait]
pub trait TransportFactory: Send + Sync + 'static {
    /// Builds a transport to `server`. The manager also bounds the call by
    /// `deadline` (the initialize deadline); a factory that waits (an HTTP
    /// connect, a legacy SSE `endpoint` event) may use it for its own
    /// timeouts.
    async fn connect(
        &self,
        server: &ResolvedConfig,
        deadline: Instant,
    ) -> Result<Box<dyn Transport>, ConnectError>;
}

/// Why a factory could not build a transport: the management error to show
/// (code, message, config key) and the raw cause, which goes to `tracing`
/// only.
///
/// Its `Display` is the management error's, which already says for people
/// what the cause means (often quoting it), so the raw cause is not its
/// [`Error::source`](std::error::Error::source): a host printing the chain
/// would show it twice. It stays in [`ConnectError::source`] for logs.
#[derive(Debug)]
#[non_exhaustive]
pub struct ConnectError {
    /// What the server's status will say. No secrets, no raw server text.
    pub error: ServerError,
    /// The underlying failure, for logs.
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for ConnectError {}

impl ConnectError {
    /// An error with a code, a short message and the config key to change.
    pub fn new(code: ErrorCode, message: impl Into<String>, config_key: impl Into<String>) -> Self {
        ConnectError {
            error: ServerError::new(code, message, config_key),
            source: None,
        }
    }

    /// Attaches the raw cause (logged, never shown).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }
}

/// The factory the manager uses unless told otherwise: stdio processes
/// (Unix), Streamable HTTP with the automatic legacy SSE fallback for
/// `http`, legacy HTTP+SSE for `sse`. Its settings are public fields with
/// a setter each: `DefaultTransportFactory::new().proxy(ProxyConfig::none())`.
#[derive(Clone, Default, derive_setters::Setters)]
#[non_exhaustive]
pub struct DefaultTransportFactory {
    /// Extra trusted root certificates (PEM) for HTTPS servers.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub extra_root_certificates: Vec<String>,
    /// More roots from `SSL_CERT_FILE` / `SSL_CERT_DIR`, read at each
    /// connect, for HTTPS servers and their OAuth authorization servers.
    /// Default [`CaEnv::none`]; a host opts in with [`CaEnv::from_env`]. A
    /// file that cannot be read fails the connect with `invalid_config`
    /// naming the variable and path.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub ca_env: CaEnv,
    /// The HTTP proxies for every HTTP server and for its OAuth client's
    /// requests (discovery, registration, tokens), one setting for both.
    /// Default [`ProxyConfig::from_env`] (curl's variables, read when the
    /// factory is made; loopback servers direct); [`ProxyConfig::none`]
    /// turns them off. A proxy failing either is `proxy_failed`.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub proxy: ProxyConfig,
    /// One authorization hook for every HTTP server; when set it replaces
    /// the per-server OAuth providers of `oauth_dir` (feature `oauth`).
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// Where OAuth tokens persist (`<data dir>/oauth` for `mcpctl`). When
    /// set, HTTP and SSE servers authorize with OAuth on a 401 (see the
    /// module docs). Default `None`: no OAuth.
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub oauth_dir: Option<PathBuf>,
}

impl fmt::Debug for DefaultTransportFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("DefaultTransportFactory");
        #[cfg(feature = "http")]
        f.field(
            "extra_root_certificates",
            &self.extra_root_certificates.len(),
        )
        .field("ca_env", &self.ca_env)
        .field("proxy", &self.proxy)
        .field("auth", &self.auth.is_some());
        #[cfg(feature = "oauth")]
        f.field("oauth_dir", &self.oauth_dir);
        f.finish()
    }
}

impl DefaultTransportFactory {
    /// The factory with no extra roots and no auth hook, proxies from the
    /// environment.
    pub fn new() -> Self {
        DefaultTransportFactory::default()
    }

    /// The factory with OAuth tokens kept in `dir`.
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub fn with_oauth_dir(dir: impl Into<PathBuf>) -> Self {
        DefaultTransportFactory {
            oauth_dir: Some(dir.into()),
            ..DefaultTransportFactory::default()
        }
    }

    /// The authorization hook for one server: the shared one, else an
    /// OAuth provider when tokens have a home and no static
    /// `Authorization` header is configured instead.
    #[cfg(feature = "http")]
    fn auth_for(
        &self,
        http: &mcp_config::ResolvedHttp,
        roots: &[String],
    ) -> Result<Option<Arc<dyn AuthProvider>>, ConnectError> {
        if let Some(auth) = &self.auth {
            return Ok(Some(auth.clone()));
        }
        #[cfg(feature = "oauth")]
        return self.oauth_for(http, roots);
        #[cfg(not(feature = "oauth"))]
        {
            let _ = (http, roots);
            Ok(None)
        }
    }

    /// The OAuth provider for one server, when tokens have a home and no
    /// static `Authorization` header is configured instead.
    #[cfg(feature = "oauth")]
    fn oauth_for(
        &self,
        http: &mcp_config::ResolvedHttp,
        roots: &[String],
    ) -> Result<Option<Arc<dyn AuthProvider>>, ConnectError> {
        let Some(dir) = &self.oauth_dir else {
            return Ok(None);
        };
        let static_authorization = http
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        if http.oauth.is_none() && static_authorization {
            return Ok(None);
        }
        let Ok(url) = url::Url::parse(&http.url) else {
            return Ok(None);
        };
        let grant = unattended_grant(http.oauth.as_ref())?;
        let mut options = oauth_options(url, grant, http.oauth.as_ref(), dir.clone());
        // The authorization server may sit behind the same private CA and
        // the same proxy as the MCP server.
        options.extra_root_certificates = roots.to_vec();
        options.proxy = self.proxy.clone();
        match OAuthProvider::new(options) {
            Ok(provider) => Ok(Some(Arc::new(provider))),
            Err(error) => Err(ConnectError::new(
                ErrorCode::InvalidConfig,
                "the OAuth client could not be set up",
                "transport.oauth",
            )
            .with_source(error)),
        }
    }

    /// The options of the OAuth provider this factory gives the server at
    /// `url`: [`oauth_options`] with tokens in [`oauth_dir`](Self::oauth_dir)
    /// (in memory when it is unset), and this factory's
    /// [`proxy`](Self::proxy) and trusted roots
    /// ([`extra_root_certificates`](Self::extra_root_certificates) and
    /// those of [`ca_env`](Self::ca_env), read now), so that the
    /// authorization servers are reached the way the MCP server is. For
    /// hosts that run the interactive login themselves (`mcpctl login`). An
    /// unreadable `SSL_CERT_FILE`/`SSL_CERT_DIR` is `invalid_config` naming
    /// the variable and path.
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub fn oauth_options_for(
        &self,
        url: url::Url,
        grant: Grant,
        oauth: Option<&ResolvedOAuth>,
    ) -> Result<OAuthOptions, ConnectError> {
        let mut options = section_options(url, grant, oauth);
        if let Some(dir) = &self.oauth_dir {
            options.store = Arc::new(FileTokenStore::new(dir.clone()));
        }
        options.extra_root_certificates = self.roots()?;
        options.proxy = self.proxy.clone();
        Ok(options)
    }

    /// The trusted roots of a connect: the extra ones and those of
    /// `ca_env`, read now.
    #[cfg(feature = "http")]
    fn roots(&self) -> Result<Vec<String>, ConnectError> {
        let mut roots = self.extra_root_certificates.clone();
        roots.extend(self.ca_env.load().map_err(|error| {
            // The message names the variable and the path, never a value.
            ConnectError::new(ErrorCode::InvalidConfig, error.to_string(), "").with_source(error)
        })?);
        Ok(roots)
    }
}

/// The provider options for a server: its `oauth` settings, tokens in
/// `dir`. Shared with hosts that run the interactive login (`mcpctl
/// login`), so that the login stores exactly what the manager loads.
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub fn oauth_options(
    url: url::Url,
    grant: Grant,
    oauth: Option<&ResolvedOAuth>,
    dir: PathBuf,
) -> OAuthOptions {
    let mut options = section_options(url, grant, oauth);
    options.store = Arc::new(FileTokenStore::new(dir));
    options
}

/// The provider options of a server's `oauth` section, every other
/// setting at its default.
#[cfg(feature = "oauth")]
fn section_options(url: url::Url, grant: Grant, oauth: Option<&ResolvedOAuth>) -> OAuthOptions {
    let mut options = OAuthOptions::new(url, grant);
    if let Some(oauth) = oauth {
        options.client_id.clone_from(&oauth.client_id);
        options.client_secret = oauth
            .client_secret
            .as_ref()
            .map(|secret| mcp_client_oauth::Secret::new(secret.expose()));
        options
            .client_metadata_url
            .clone_from(&oauth.client_metadata_url);
        options.scopes.clone_from(&oauth.scopes);
    }
    options
}

/// The grant the manager runs for a server. The client credentials grant
/// (RFC 6749 §4.4) needs nobody: the client authenticates with its own
/// secret (from `clientSecretEnv`, which [`oauth_options`] passes on), so
/// such a server becomes ready without a login; so does the JWT bearer
/// grant of workload identity federation, with the JWT from the configured
/// file or variable ([`workload_grant`]). Every other server gets the
/// authorization code grant with nobody at the browser: stored tokens are
/// used and refreshed, and anything more ends as `auth_required`.
#[cfg(feature = "oauth")]
fn unattended_grant(oauth: Option<&ResolvedOAuth>) -> Result<Grant, ConnectError> {
    if let Some(oauth) = oauth
        && oauth.grant == OAuthGrant::JwtBearer
    {
        return workload_grant(oauth);
    }
    match oauth {
        Some(oauth) if oauth.grant == OAuthGrant::ClientCredentials => {
            // Validation already demands both; a host that built its
            // `ResolvedOAuth` itself may not have. Without a pre-registered
            // client the provider would register one, which the manager
            // never does on its own.
            if oauth.client_id.is_none() || oauth.client_secret.is_none() {
                return Err(ConnectError::new(
                    ErrorCode::InvalidConfig,
                    "the client_credentials grant needs `oauth.clientId` and `oauth.clientSecretEnv`",
                    "transport.oauth",
                ));
            }
            Ok(Grant::ClientCredentials)
        }
        _ => Ok(Grant::AuthorizationCode(Arc::new(Unattended))),
    }
}

/// The JWT bearer grant (SEP-1933) of a `jwt_bearer` section: the JWT is
/// read from `assertionFile` or `assertionEnv` only when a token is asked
/// for. Validation demands one of them; a host that built its
/// `ResolvedOAuth` itself may have left both out.
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub fn workload_grant(oauth: &ResolvedOAuth) -> Result<Grant, ConnectError> {
    let source = match &oauth.assertion {
        Some(AssertionSource::File(path)) => WorkloadAssertion::File(path.clone()),
        Some(AssertionSource::Env(var)) => WorkloadAssertion::Env(var.clone()),
        _ => {
            return Err(ConnectError::new(
                ErrorCode::InvalidConfig,
                "the jwt_bearer grant needs `oauth.assertionFile` or `oauth.assertionEnv`",
                "transport.oauth",
            ));
        }
    };
    Ok(Grant::JwtBearer(source))
}

/// The manager's side of the authorization code grant: nobody is there.
#[cfg(feature = "oauth")]
#[derive(Debug)]
struct Unattended;

#[cfg(feature = "oauth")]
#[async_trait]
impl Interaction for Unattended {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1/callback".to_owned()
    }

    async fn authorize(&self, _authorization_url: &url::Url) -> Result<url::Url, OAuthError> {
        Err(OAuthError::InteractionRequired)
    }

    fn interactive(&self) -> bool {
        false
    }
}

#[async_trait]
impl TransportFactory for DefaultTransportFactory {
    async fn connect(
        &self,
        server: &ResolvedConfig,
        deadline: Instant,
    ) -> Result<Box<dyn Transport>, ConnectError> {
        match &server.transport {
            ResolvedTransport::Stdio(stdio) => spawn_stdio(stdio).await,
            #[cfg(feature = "http")]
            ResolvedTransport::Http(http) => {
                self.connect_http(server, http, HttpProtocol::Auto, deadline)
                    .await
            }
            #[cfg(feature = "http")]
            ResolvedTransport::Sse(http) => {
                self.connect_http(server, http, HttpProtocol::LegacySse, deadline)
                    .await
            }
            #[cfg(not(feature = "http"))]
            ResolvedTransport::Http(_) | ResolvedTransport::Sse(_) => {
                let _ = deadline;
                Err(transport_disabled("http"))
            }
            _ => Err(ConnectError::new(
                ErrorCode::InvalidConfig,
                "this transport is not supported by this build",
                "transport.type",
            )),
        }
    }
}

/// The error of a server whose transport's cargo `feature` is off in this
/// build.
#[cfg(any(not(feature = "http"), not(feature = "stdio")))]
fn transport_disabled(feature: &str) -> ConnectError {
    ConnectError::new(
        ErrorCode::TransportDisabled,
        format!(
            "this build cannot start {feature} servers: it was compiled without \
             mcp-manager's `{feature}` feature"
        ),
        "transport.type",
    )
}

/// How far past the manager's initialize deadline the transport's own
/// legacy SSE endpoint deadline is put when the manager's is the earlier:
/// far enough that the two never fall on one timer tick.
#[cfg(feature = "http")]
const ENDPOINT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(feature = "http")]
impl DefaultTransportFactory {
    async fn connect_http(
        &self,
        server: &ResolvedConfig,
        http: &mcp_config::ResolvedHttp,
        protocol: HttpProtocol,
        deadline: Instant,
    ) -> Result<Box<dyn Transport>, ConnectError> {
        let mut options = HttpOptions::new(http.url.clone());
        options.protocol = protocol;
        options.headers = http
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.expose().to_owned()))
            .collect();
        let roots = self.roots()?;
        options.auth = self.auth_for(http, &roots)?;
        options.extra_root_certificates = roots;
        options.proxy = self.proxy.clone();
        let remaining = deadline.saturating_duration_since(Instant::now());
        options.connect_timeout = options.connect_timeout.min(remaining);
        // One deadline for the phase: the manager's initialize deadline
        // (the caller's `deadline`) bounds the legacy SSE `endpoint` wait.
        // The transport's own endpoint deadline is kept only when it is
        // the earlier one; otherwise it is put past the manager's, which
        // it would meet at the same instant and win about half the time,
        // turning `timeout` into `protocol` at random.
        if options.endpoint_timeout >= remaining {
            options.endpoint_timeout = remaining + ENDPOINT_GRACE;
        }
        match HttpTransport::connect(options).await {
            Ok(transport) => Ok(Box::new(transport)),
            Err(error) => Err(http_connect_error(&server.id, error)),
        }
    }
}

#[cfg(feature = "http")]
fn http_connect_error(id: &str, error: TransportError) -> ConnectError {
    if let Some(cause) =
        crate::error::transport_cause(&error, id, "transport.url", "transport.headers")
    {
        return ConnectError::new(cause.code, cause.message, cause.config_key).with_source(error);
    }
    let connect = match &error {
        TransportError::Setup(_) => ConnectError::new(
            ErrorCode::InvalidConfig,
            "the server URL cannot be used",
            "transport.url",
        ),
        TransportError::Protocol(_) => ConnectError::new(
            ErrorCode::Protocol,
            "the server broke the transport protocol",
            "transport.url",
        ),
        _ => ConnectError::new(
            ErrorCode::Closed,
            "cannot reach the server",
            "transport.url",
        ),
    };
    connect.with_source(error)
}

/// Starts a stdio server with [`mcp_transport::StdioTransport::start`]:
/// the process starts on tokio's blocking threads, never on a worker.
#[cfg(all(unix, feature = "stdio"))]
async fn spawn_stdio(
    stdio: &mcp_config::ResolvedStdio,
) -> Result<Box<dyn Transport>, ConnectError> {
    use mcp_transport::{StdioOptions, StdioTransport};

    let mut options = StdioOptions::new(stdio.command.clone());
    options.args = stdio.args.clone();
    options.env = stdio
        .env
        .iter()
        .map(|(name, value)| (name.clone(), value.expose().to_owned()))
        .collect();
    options.cwd = stdio.cwd.clone();
    match StdioTransport::start(options).await {
        Ok(transport) => Ok(Box::new(transport)),
        // The transport reports every setup problem as one `Setup` error
        // whose text is for people; a missing directory gets its own code,
        // and what remains is about the command.
        Err(error @ TransportError::Setup(_))
            if stdio.cwd.as_ref().is_some_and(|cwd| !cwd.is_dir()) =>
        {
            Err(ConnectError::new(
                ErrorCode::MissingDirectory,
                "the working directory does not exist or is not a directory",
                "transport.cwd",
            )
            .with_source(error))
        }
        Err(error @ TransportError::Setup(_)) => Err(ConnectError::new(
            ErrorCode::MissingCommand,
            format!(
                "the command `{}` was not found or cannot be run",
                whole_command(&stdio.command)
            ),
            "transport.command",
        )
        .with_source(error)),
        Err(error) => Err(ConnectError::new(
            ErrorCode::Closed,
            "the server process could not be started",
            "transport.command",
        )
        .with_source(error)),
    }
}

#[cfg(not(feature = "stdio"))]
async fn spawn_stdio(
    _stdio: &mcp_config::ResolvedStdio,
) -> Result<Box<dyn Transport>, ConnectError> {
    Err(transport_disabled("stdio"))
}

#[cfg(all(not(unix), feature = "stdio"))]
async fn spawn_stdio(
    _stdio: &mcp_config::ResolvedStdio,
) -> Result<Box<dyn Transport>, ConnectError> {
    Err(ConnectError::new(
        ErrorCode::InvalidConfig,
        "stdio servers are not supported on this platform yet",
        "transport.type",
    ))
}

/// The program as configured, directory included (`/opt/x/server` and
/// `server` are different mistakes), escaped and bounded: the person needs
/// to see which file was looked for. Arguments, which may carry tokens, are
/// left out.
#[cfg(all(unix, feature = "stdio"))]
fn whole_command(command: &str) -> String {
    use mcp_proto::text::{Lines, bound, escape};
    bound(&escape(command, Lines::One), 256).into_owned()
}

/// Which grant the manager picks; the end-to-end run is in mcp-cli's
/// `cli_login` tests.
#[cfg(all(test, feature = "oauth"))]
mod grant_tests {
    use mcp_config::Secret;

    use super::*;

    fn oauth(grant: OAuthGrant, id: Option<&str>, secret: Option<&str>) -> ResolvedOAuth {
        let mut oauth = ResolvedOAuth::default();
        oauth.grant = grant;
        oauth.client_id = id.map(str::to_owned);
        oauth.client_secret = secret.map(Secret::new);
        oauth
    }

    #[test]
    fn client_credentials_servers_get_that_grant_and_others_the_unattended_code_grant() {
        let machine = oauth(OAuthGrant::ClientCredentials, Some("m"), Some("s"));
        assert!(matches!(
            unattended_grant(Some(&machine)),
            Ok(Grant::ClientCredentials)
        ));
        let person = oauth(OAuthGrant::AuthorizationCode, Some("m"), Some("s"));
        for section in [Some(&person), None] {
            let Ok(Grant::AuthorizationCode(interaction)) = unattended_grant(section) else {
                panic!("expected the authorization code grant");
            };
            assert!(!interaction.interactive());
        }
    }

    #[test]
    fn jwt_bearer_servers_read_the_configured_file_or_variable_and_need_one() {
        let mut workload = oauth(OAuthGrant::JwtBearer, Some("w"), None);
        workload.assertion = Some(AssertionSource::File("/run/secrets/token".into()));
        let Ok(Grant::JwtBearer(WorkloadAssertion::File(path))) = unattended_grant(Some(&workload))
        else {
            panic!("expected the JWT bearer grant from the file");
        };
        assert_eq!(path, std::path::Path::new("/run/secrets/token"));
        workload.assertion = Some(AssertionSource::Env("WORKLOAD_JWT".into()));
        assert!(matches!(
            unattended_grant(Some(&workload)),
            Ok(Grant::JwtBearer(WorkloadAssertion::Env(var))) if var == "WORKLOAD_JWT"
        ));
        workload.assertion = None;
        let Err(error) = unattended_grant(Some(&workload)) else {
            panic!("accepted a jwt_bearer grant without its token");
        };
        assert_eq!(error.error.code, ErrorCode::InvalidConfig);
    }

    #[test]
    fn client_credentials_without_a_client_or_secret_is_a_config_error_not_a_registration() {
        for (id, secret) in [(None, Some("s")), (Some("m"), None), (None, None)] {
            let incomplete = oauth(OAuthGrant::ClientCredentials, id, secret);
            let Err(error) = unattended_grant(Some(&incomplete)) else {
                panic!("accepted an incomplete client");
            };
            assert_eq!(error.error.code, ErrorCode::InvalidConfig);
            assert_eq!(error.error.config_key, "transport.oauth");
        }
    }
}

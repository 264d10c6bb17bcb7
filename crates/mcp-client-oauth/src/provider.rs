//! `OAuthProvider`: the [`AuthProvider`] that runs discovery, client identification, the grants, refresh and step-up for one MCP server.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::Method;
use http::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use mcp_transport::{AuthProvider, ProxyConfig, TransportError};
use serde::Deserialize;
use tokio::sync::Mutex;
use url::Url;

use crate::challenge::Challenge;
use crate::discovery::{Discovered, canonical_resource, discover};
use crate::dpop::{self, DpopKey};
use crate::http::{ClientAuth, HttpClient, shown};
use crate::store::{StoreKey, StoredCredentials, unix_now};
use crate::{ClientRegistration, OAuthError, Secret, TokenStore, Tokens, crypto};

/// The host's part of the authorization code grant: show the user the
/// authorization URL (a browser), and hand back the URL the authorization
/// server redirected to.
#[async_trait]
pub trait Interaction: Send + Sync + std::fmt::Debug + 'static {
    /// Where the authorization server sends the user back (a loopback
    /// `http://127.0.0.1:PORT/callback` or an HTTPS URL).
    fn redirect_uri(&self) -> String;

    /// Has the user authorize at `authorization_url` (already checked to be
    /// `https`, or `http` on a loopback host) and returns the full redirect
    /// URL with its query (`code`, `state`).
    async fn authorize(&self, authorization_url: &Url) -> Result<Url, OAuthError>;

    /// Whether a person can take part now. A host that must never wait for
    /// a browser (a background connection manager) returns `false`: the
    /// provider then still uses and refreshes stored tokens, but instead of
    /// registering a client and starting an authorization it fails at once
    /// with [`OAuthError::InteractionRequired`]. Default `true`.
    fn interactive(&self) -> bool {
        true
    }
}

/// Which grant obtains tokens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Grant {
    /// Authorization code with PKCE, through the host's [`Interaction`].
    AuthorizationCode(Arc<dyn Interaction>),
    /// Client credentials (machine to machine): needs a pre-registered
    /// `client_id` with a `client_secret` or a `private_key_pem`.
    ClientCredentials,
    /// Enterprise-managed authorization (SEP-990, "cross-app access"): the
    /// user's identity provider exchanges their ID token for an identity
    /// assertion grant (RFC 8693), which the authorization server takes as
    /// a JWT bearer grant (RFC 7523) from the pre-registered client.
    IdentityAssertion(IdentityAssertionGrant),
    /// Workload identity federation (SEP-1933): the JWT bearer grant
    /// (RFC 7523 §2.1) with a JWT the workload's platform issued it, read
    /// afresh for every token request (platforms rotate it). Errors are
    /// reported as they come: no other grant is tried instead.
    JwtBearer(WorkloadAssertion),
}

/// Where the workload's JWT for [`Grant::JwtBearer`] is read from. The
/// JWT itself is never logged, shown or put in an error; errors name the
/// file or the variable only.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkloadAssertion {
    /// A file holding the JWT (surrounding whitespace ignored).
    File(std::path::PathBuf),
    /// An environment variable holding the JWT.
    Env(String),
}

/// The longest workload JWT read: platform tokens are a few kilobytes.
const ASSERTION_LIMIT: u64 = 64 * 1024;

impl WorkloadAssertion {
    /// Reads the JWT now.
    ///
    /// ```
    /// use mcp_client_oauth::WorkloadAssertion;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("token");
    /// std::fs::write(&path, "eyJhbGciOiJFUzI1NiJ9.e30.c2ln\n")?;
    /// let jwt = WorkloadAssertion::File(path).read()?;
    /// assert_eq!(jwt.expose(), "eyJhbGciOiJFUzI1NiJ9.e30.c2ln");
    /// let missing = WorkloadAssertion::Env("MCP_OAUTH_DOC_UNSET_VARIABLE".to_owned()).read();
    /// assert!(missing.unwrap_err().to_string().contains("MCP_OAUTH_DOC_UNSET_VARIABLE"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(&self) -> Result<Secret, OAuthError> {
        let text = match self {
            WorkloadAssertion::File(path) => {
                let shown = path.display();
                let unreadable = || {
                    OAuthError::Config(format!("the workload token file {shown} cannot be read"))
                };
                let length = std::fs::metadata(path).map_err(|_| unreadable())?.len();
                if length > ASSERTION_LIMIT {
                    return Err(OAuthError::Config(format!(
                        "the workload token file {shown} is longer than {ASSERTION_LIMIT} bytes"
                    )));
                }
                let bytes = std::fs::read(path).map_err(|_| unreadable())?;
                String::from_utf8(bytes).map_err(|_| {
                    OAuthError::Config(format!("the workload token file {shown} is not text"))
                })?
            }
            WorkloadAssertion::Env(var) => std::env::var(var).map_err(|_| {
                OAuthError::Config(format!(
                    "the environment variable {var} holding the workload token is not set"
                ))
            })?,
        };
        let jwt = text.trim();
        // A JWT is three base64url parts (RFC 7519 §3): anything else would
        // only be refused by the server, after being sent.
        let parts: Vec<&str> = jwt.split('.').collect();
        let base64url = |p: &&str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if parts.len() != 3 || !parts[..2].iter().all(base64url) {
            return Err(OAuthError::Config(format!(
                "the workload token from {} is not a JWT",
                self.origin()
            )));
        }
        Ok(Secret::new(jwt))
    }

    /// The file or variable, as errors name it.
    fn origin(&self) -> String {
        match self {
            WorkloadAssertion::File(path) => format!("the file {}", path.display()),
            WorkloadAssertion::Env(var) => format!("the environment variable {var}"),
        }
    }
}

/// The identity provider side of [`Grant::IdentityAssertion`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IdentityAssertionGrant {
    /// The identity provider's token endpoint.
    pub idp_token_endpoint: Url,
    /// The user's ID token from the identity provider.
    pub id_token: Secret,
    /// This client's id at the identity provider. Default none.
    pub idp_client_id: Option<String>,
    /// This client's secret at the identity provider (sent with HTTP
    /// Basic). Default none.
    pub idp_client_secret: Option<Secret>,
}

impl IdentityAssertionGrant {
    /// A grant from the identity provider's token endpoint and an ID token.
    pub fn new(idp_token_endpoint: Url, id_token: Secret) -> Self {
        IdentityAssertionGrant {
            idp_token_endpoint,
            id_token,
            idp_client_id: None,
            idp_client_secret: None,
        }
    }
}

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// Options of an [`OAuthProvider`]. Build with [`OAuthOptions::new`] and
/// set the public fields.
///
/// `Debug` shows the server URL's origin only (its path or query may hold
/// a token) and secrets redacted.
#[derive(Clone, derive_setters::Setters)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// The MCP server's URL (the protected resource).
    pub server_url: Url,
    /// How tokens are obtained.
    pub grant: Grant,
    /// Where credentials persist. Default: a [`MemoryTokenStore`](crate::MemoryTokenStore).
    pub store: Arc<dyn TokenStore>,
    /// The name shown to users in dynamic registration. Default `mcpctl`.
    pub client_name: String,
    /// A pre-registered client id. Default none.
    pub client_id: Option<String>,
    /// The pre-registered client's secret. Default none.
    pub client_secret: Option<Secret>,
    /// A PKCS#8 PEM P-256 key for `private_key_jwt` (ES256). Default none.
    pub private_key_pem: Option<Secret>,
    /// This client's metadata document URL, used as `client_id` where the
    /// authorization server supports client ID metadata documents. Default
    /// none.
    pub client_metadata_url: Option<String>,
    /// Scopes the host asks for (from its configuration), added to those of
    /// the server's challenge; with neither, the resource's
    /// `scopes_supported` decide. Default empty.
    pub scopes: Vec<String>,
    /// Refresh this long before expiry. Default 60 s.
    pub refresh_margin: Duration,
    /// Timeout of each request to an authorization server. Default 30 s.
    pub request_timeout: Duration,
    /// PEM certificates trusted besides the webpki roots for requests to
    /// authorization servers: give the same as the transport's
    /// [`HttpOptions::extra_root_certificates`](mcp_transport::HttpOptions::extra_root_certificates).
    /// Default none.
    pub extra_root_certificates: Vec<String>,
    /// Which proxy each request to an authorization server, metadata URL or
    /// the MCP server's challenge goes through: give the same as the
    /// transport's [`HttpOptions::proxy`](mcp_transport::HttpOptions::proxy),
    /// so that one setting governs both. Default [`ProxyConfig::from_env`],
    /// read by [`OAuthOptions::new`] (the transport's rules: curl's
    /// `https_proxy`, `http_proxy`, `all_proxy` and `no_proxy`, loopback
    /// reached directly).
    pub proxy: ProxyConfig,
    /// Bind tokens with DPoP (RFC 9449) where the authorization server
    /// lists `ES256` in `dpop_signing_alg_values_supported`: token requests
    /// carry a proof of a key kept with the tokens, and every request to
    /// the MCP server presents a `DPoP`-bound token with a fresh proof.
    /// Default `true`.
    pub dpop: bool,
}

impl OAuthOptions {
    /// Options with the defaults above.
    pub fn new(server_url: Url, grant: Grant) -> Self {
        OAuthOptions {
            server_url,
            grant,
            store: Arc::new(crate::MemoryTokenStore::default()),
            client_name: "mcpctl".to_owned(),
            client_id: None,
            client_secret: None,
            private_key_pem: None,
            client_metadata_url: None,
            scopes: Vec::new(),
            refresh_margin: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
            extra_root_certificates: Vec::new(),
            proxy: ProxyConfig::from_env(),
            dpop: true,
        }
    }
}

impl std::fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthOptions")
            .field(
                "server_origin",
                &self.server_url.origin().ascii_serialization(),
            )
            .field("grant", &self.grant)
            .field("client_name", &self.client_name)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("private_key_pem", &self.private_key_pem)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("refresh_margin", &self.refresh_margin)
            .field("request_timeout", &self.request_timeout)
            .field("proxy", &self.proxy)
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

/// At most this many step-up authorizations for the same scopes (MCP
/// "Scope Challenge Handling": limit retries).
const MAX_STEP_UPS: u32 = 3;

/// The OAuth client of one MCP server, plugged into
/// [`HttpOptions::auth`](mcp_transport::HttpOptions::auth).
///
/// It sends no `Authorization` until the server refuses a request: the
/// refusal starts discovery, which names the issuer, and only then are
/// stored tokens for this server *and* issuer loaded (or new ones
/// obtained). Tokens are refreshed shortly before they expire and once
/// after a 401. A 401 refusing the held tokens fetches the protected
/// resource metadata again: when it names another authorization server
/// (SEP-2352), that issuer gets a registration and tokens of its own, and
/// the old issuer's are neither sent to it nor forgotten in the store.
/// Tokens, secrets and codes never reach a log or an error; `Debug` shows
/// the options only (see [`OAuthOptions`]), never the state (tokens, the
/// URL a challenge came from).
pub struct OAuthProvider {
    options: OAuthOptions,
    http: HttpClient,
    /// Held for a few steps at a time, never across a request to an
    /// authorization server, the store or the person: a renewal works on
    /// its own copy and puts it in place when it ends, so that requests
    /// read the tokens held meanwhile without waiting.
    state: Mutex<State>,
    /// Held by the one renewal in flight (single flight): a refresh before
    /// expiry ([`current_tokens`](Self::current_tokens)), a refusal's
    /// renewal ([`refused`](Self::refused)), an explicit authorization or
    /// logout. Only what holds it changes `state`.
    flight: Mutex<()>,
    /// Apart from `state`: every response is shown to it, and a response
    /// must not wait for a renewal to end.
    dpop: std::sync::Mutex<Dpop>,
}

impl std::fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthProvider")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The DPoP side (RFC 9449) of the current server and issuer.
#[derive(Debug, Default)]
struct Dpop {
    /// The key the tokens are bound to, once made or loaded.
    key: Option<Arc<DpopKey>>,
    /// The authorization server's last nonce (§8).
    server_nonce: Option<String>,
    /// The MCP server's last nonce (§9).
    resource_nonce: Option<String>,
}

#[derive(Debug, Default, Clone)]
struct State {
    discovered: Option<Discovered>,
    /// The challenge URL discovery ran for.
    discovered_for: Option<String>,
    loaded_from_store: bool,
    client: Option<ClientRegistration>,
    tokens: Option<Tokens>,
    /// The current tokens came from a refresh that no request has used
    /// successfully yet: a 401 now needs a full authorization.
    just_refreshed: bool,
    step_ups: HashMap<String, u32>,
    /// The scopes the current tokens were asked for: a step-up asks for
    /// them again beside the new ones.
    granted_scopes: Vec<String>,
}

impl OAuthProvider {
    /// A provider; no request is sent until the server asks for
    /// authorization.
    pub fn new(options: OAuthOptions) -> Result<Self, OAuthError> {
        let http = HttpClient::new(
            options.request_timeout,
            &options.extra_root_certificates,
            options.proxy.clone(),
        )?;
        Ok(OAuthProvider {
            options,
            http,
            state: Mutex::new(State::default()),
            flight: Mutex::new(()),
            dpop: std::sync::Mutex::new(Dpop::default()),
        })
    }

    /// Runs discovery and obtains tokens now, as `mcpctl login` does,
    /// given the `WWW-Authenticate` challenge of a refusal (or none).
    pub async fn authorize(&self, www_authenticate: Option<&str>) -> Result<(), OAuthError> {
        let challenge = Challenge::parse(www_authenticate.unwrap_or_default());
        let _flight = self.flight.lock().await;
        let mut work = self.state.lock().await.clone();
        let result = async {
            self.ensure_discovered(&mut work, &challenge, false).await?;
            let scope = self.select_scope(&work, &challenge);
            self.obtain(&mut work, scope).await
        }
        .await;
        *self.state.lock().await = work;
        result
    }

    /// An explicit login (`mcpctl login`): asks the server with an
    /// unauthenticated `initialize` for its challenge and, whatever it
    /// answers, runs discovery and obtains tokens now ([`authorize`](Self::authorize)
    /// with the challenge of a 401 or 403, else none).
    pub async fn login(&self) -> Result<(), OAuthError> {
        let probe = serde_json::json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": self.options.client_name, "version": "0"},
            },
        });
        let response = self
            .http
            .probe_mcp(&self.options.server_url, &probe)
            .await?;
        let challenge = match response.status {
            401 | 403 => response.www_authenticate,
            _ => None,
        };
        self.authorize(challenge.as_deref()).await
    }

    /// Forgets this server's tokens in memory and in the store.
    pub async fn logout(&self) -> Result<(), OAuthError> {
        let _flight = self.flight.lock().await;
        let key = {
            let mut state = self.state.lock().await;
            state.tokens = None;
            self.dpop().key = None;
            self.key(&state)
        };
        if let Some(key) = key {
            self.options.store.remove(&key).await?;
        }
        Ok(())
    }

    async fn refused(
        &self,
        status: u16,
        header: Option<&str>,
        sent: Option<Option<&str>>,
    ) -> Result<bool, OAuthError> {
        let challenge = Challenge::parse(header.unwrap_or_default());
        let step_up = status == 403;
        if step_up && challenge.error.as_deref() != Some("insufficient_scope") {
            return Ok(false);
        }
        // One renewal at a time; a refusal that arrives meanwhile waits
        // for it (and is then retried with its tokens, below), while
        // requests that are not refused read the tokens held meanwhile.
        let _flight = self.flight.lock().await;
        let mut work = {
            let state = self.state.lock().await;
            // Concurrent requests: when the refused request carried other
            // credentials than the current ones, another request has
            // renewed them meanwhile; retry with those instead of renewing
            // again.
            if let Some(sent) = sent
                && let Some(current) = state.tokens.as_ref()
                && sent.and_then(access_token_of) != Some(current.access_token.expose())
            {
                return Ok(true);
            }
            state.clone()
        };
        let result = self.renew(&mut work, &challenge, step_up).await;
        *self.state.lock().await = work;
        result
    }

    /// A refusal's renewal on `state`, the renewal's own copy of the
    /// provider's state (the caller holds the flight): discovery again when
    /// the held tokens were refused, the stored tokens once, a refresh, else
    /// new tokens with the configured grant. `true` when the request should
    /// be sent again.
    async fn renew(
        &self,
        state: &mut State,
        challenge: &Challenge,
        step_up: bool,
    ) -> Result<bool, OAuthError> {
        // A 401 refusing the tokens held now: the resource may have moved to
        // another authorization server (MCP 2026-07-28 "Authorization",
        // SEP-2352), which only its protected resource metadata says, even
        // when the challenge points at the same document as before.
        let tokens_refused = !step_up && state.tokens.is_some();
        self.ensure_discovered(state, challenge, tokens_refused)
            .await?;
        if !state.loaded_from_store {
            state.loaded_from_store = true;
            if let Some(key) = self.key(state)
                && let Some(stored) = self.options.store.load(&key).await?
            {
                state.client = stored.client.or(state.client.take());
                let key = stored.dpop_key.as_ref().and_then(|stored| {
                    DpopKey::from_stored(stored)
                        .map_err(|error| tracing::debug!(%error, "the stored DPoP key is unusable"))
                        .ok()
                });
                let has_key = key.is_some();
                if let Some(key) = key {
                    self.dpop().key = Some(Arc::new(key));
                }
                // A DPoP-bound token is of no use without its key.
                let tokens = stored.tokens.filter(|t| !t.dpop || has_key);
                if !step_up && let Some(tokens) = tokens {
                    state.tokens = Some(tokens);
                    if self.refresh(state).await {
                        return Ok(true);
                    }
                    if state
                        .tokens
                        .as_ref()
                        .is_some_and(|t| !t.expires_within(self.margin()))
                    {
                        return Ok(true);
                    }
                }
            }
        }
        if step_up {
            let key = challenge.scope.clone().unwrap_or_default();
            let attempts = state.step_ups.entry(key).or_default();
            if *attempts >= MAX_STEP_UPS {
                return Ok(false);
            }
            *attempts += 1;
        } else if !state.just_refreshed && self.refresh(state).await {
            return Ok(true);
        }
        let mut scope = self.select_scope(state, challenge);
        if step_up {
            // 2026-07-28 "Authorization" §Scope challenge handling: a
            // step-up asks for the union of what was granted and what the
            // challenge names, so that the new token loses nothing.
            scope = union_scopes(&state.granted_scopes, scope);
        }
        self.obtain(state, scope).await?;
        Ok(true)
    }

    /// Runs discovery when nothing was discovered yet, when the challenge
    /// points at other protected resource metadata than last time, or when
    /// `again` (the held tokens were refused). A new issuer means new
    /// credentials: the old issuer's tokens and registration are dropped
    /// here (they stay in the store under that issuer's key) and the new
    /// issuer's are looked up in the store.
    async fn ensure_discovered(
        &self,
        state: &mut State,
        challenge: &Challenge,
        again: bool,
    ) -> Result<(), OAuthError> {
        let fresh_pointer = challenge.resource_metadata.is_some()
            && challenge.resource_metadata != state.discovered_for;
        if state.discovered.is_some() && !fresh_pointer && !again {
            return Ok(());
        }
        let discovered = match discover(&self.http, &self.options.server_url, challenge).await {
            Ok(discovered) => discovered,
            // Looking again found nothing usable: the authorization server
            // known so far stays (its refresh may still work).
            Err(error) if again && !fresh_pointer && state.discovered.is_some() => {
                tracing::debug!(%error, "discovery again failed; keeping the authorization server");
                return Ok(());
            }
            Err(error) => return Err(error),
        };
        let issuer_changed = state
            .discovered
            .as_ref()
            .is_some_and(|d| d.metadata.issuer != discovered.metadata.issuer);
        if issuer_changed {
            // Tokens and registrations belong to the old issuer (SEP-2352:
            // credentials are not portable between authorization servers).
            tracing::debug!(issuer = %discovered.metadata.issuer, "the authorization server changed");
            state.tokens = None;
            state.client = None;
            state.loaded_from_store = false;
            state.just_refreshed = false;
            state.step_ups.clear();
            state.granted_scopes.clear();
            let mut dpop = self.dpop();
            dpop.key = None;
            dpop.server_nonce = None;
        }
        state.discovered = Some(discovered);
        state.discovered_for = challenge.resource_metadata.clone();
        Ok(())
    }

    fn key(&self, state: &State) -> Option<StoreKey> {
        let discovered = state.discovered.as_ref()?;
        Some(StoreKey {
            server: canonical_resource(&self.options.server_url),
            issuer: discovered.metadata.issuer.clone(),
        })
    }

    fn margin(&self) -> u64 {
        self.options.refresh_margin.as_secs()
    }

    /// MCP "Scope Selection Strategy": the challenge's `scope`, else the
    /// resource's `scopes_supported`, else none; `offline_access` is added
    /// when the authorization server lists it (SEP-2207) and the grant can
    /// use a refresh token.
    fn select_scope(&self, state: &State, challenge: &Challenge) -> Option<String> {
        let mut scopes = challenge.scopes();
        for scope in &self.options.scopes {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        let discovered = state.discovered.as_ref();
        if scopes.is_empty()
            && let Some(supported) = discovered.and_then(|d| d.resource_scopes.as_ref())
        {
            scopes.clone_from(supported);
        }
        let offers_offline = discovered
            .and_then(|d| d.metadata.scopes_supported.as_ref())
            .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if offers_offline
            && matches!(self.options.grant, Grant::AuthorizationCode(_))
            && !scopes.is_empty()
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".to_owned());
        }
        (!scopes.is_empty()).then(|| scopes.join(" "))
    }

    /// Gets new tokens with the configured grant, and stores them.
    async fn obtain(&self, state: &mut State, scope: Option<String>) -> Result<(), OAuthError> {
        let asked: Vec<String> = scope
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        let discovered = state
            .discovered
            .clone()
            .ok_or_else(|| OAuthError::Config("authorization before discovery".to_owned()))?;
        let tokens = match &self.options.grant {
            Grant::AuthorizationCode(interaction) => {
                if !interaction.interactive() {
                    return Err(OAuthError::InteractionRequired);
                }
                let client = self
                    .client(state, &discovered, Some(interaction.as_ref()))
                    .await?;
                self.authorization_code(&discovered, &client, interaction.as_ref(), scope)
                    .await?
            }
            Grant::ClientCredentials => {
                let client = self.client(state, &discovered, None).await?;
                self.client_credentials(&discovered, &client, scope).await?
            }
            Grant::IdentityAssertion(grant) => {
                let client = self.client(state, &discovered, None).await?;
                self.identity_assertion(&discovered, &client, grant, scope)
                    .await?
            }
            Grant::JwtBearer(source) => {
                let client = self.client(state, &discovered, None).await?;
                self.workload_assertion(&discovered, &client, source, scope)
                    .await?
            }
        };
        state.tokens = Some(tokens);
        state.just_refreshed = false;
        state.granted_scopes = asked;
        self.persist(state).await
    }

    async fn persist(&self, state: &State) -> Result<(), OAuthError> {
        let Some(key) = self.key(state) else {
            return Ok(());
        };
        // Pre-registered and metadata-document identities come from the
        // configuration; only registrations are worth keeping.
        let registered = state
            .client
            .clone()
            .filter(|c| Some(&c.client_id) != self.options.client_id.as_ref())
            .filter(|c| Some(&c.client_id) != self.options.client_metadata_url.as_ref());
        let value = StoredCredentials {
            client: registered,
            tokens: state.tokens.clone(),
            dpop_key: self.dpop().key.as_ref().map(|k| k.stored().clone()),
        };
        self.options.store.save(&key, &value).await
    }

    /// Refreshes when there is a refresh token; `true` when new tokens are
    /// in place. A failed refresh drops the tokens. The caller holds the
    /// flight and `state` is its own copy (a refusal's renewal).
    async fn refresh(&self, state: &mut State) -> bool {
        let Some(request) = self.refresh_request(state).await else {
            return false;
        };
        let result = self.send_refresh(&request).await;
        self.refresh_done(state, request, result).await
    }

    /// What a refresh sends, read from the state: `None` without a
    /// refresh token, a discovery or a client identity. A configured
    /// identity is made here without any request.
    async fn refresh_request(&self, state: &mut State) -> Option<RefreshRequest> {
        let refresh_token = state
            .tokens
            .as_ref()
            .and_then(|t| t.refresh_token.clone())?;
        let discovered = state.discovered.clone()?;
        // Configured identities are not stored (see `persist`): after a
        // restart they come from the options again, without any request.
        let configured = self.options.client_id.is_some()
            || (self.options.client_metadata_url.is_some()
                && discovered.metadata.client_id_metadata_document_supported == Some(true));
        if state.client.is_none()
            && configured
            && let Err(error) = self.client(state, &discovered, None).await
        {
            tracing::debug!(%error, "no client identity for the refresh");
            return None;
        }
        let client = state.client.clone()?;
        Some(RefreshRequest {
            refresh_token,
            discovered,
            client,
        })
    }

    /// The refresh's token request (RFC 6749 §6), bounded by
    /// [`OAuthOptions::request_timeout`].
    async fn send_refresh(&self, request: &RefreshRequest) -> Result<Tokens, OAuthError> {
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", request.refresh_token.expose().to_owned()),
            ("resource", request.discovered.resource.clone()),
        ];
        self.token_request(&request.discovered, &request.client, &form)
            .await
    }

    /// Puts a refresh's outcome in place: the new tokens (stored), or none
    /// after a failure. `true` when new tokens are in place.
    async fn refresh_done(
        &self,
        state: &mut State,
        request: RefreshRequest,
        result: Result<Tokens, OAuthError>,
    ) -> bool {
        match result {
            Ok(mut tokens) => {
                // RFC 6749 §6: the old refresh token stays good unless a new one came.
                if tokens.refresh_token.is_none() {
                    tokens.refresh_token = Some(request.refresh_token);
                }
                state.tokens = Some(tokens);
                state.just_refreshed = true;
                if let Err(error) = self.persist(state).await {
                    tracing::warn!(%error, "could not store refreshed tokens");
                }
                true
            }
            Err(error) => {
                tracing::debug!(%error, "token refresh failed");
                state.tokens = None;
                false
            }
        }
    }

    /// The client identity, in the order of MCP "Client Registration
    /// Approaches": pre-registered, client ID metadata document, a stored
    /// registration, dynamic registration.
    async fn client(
        &self,
        state: &mut State,
        discovered: &Discovered,
        interaction: Option<&dyn Interaction>,
    ) -> Result<ClientRegistration, OAuthError> {
        let metadata = &discovered.metadata;
        let supported = metadata.token_endpoint_auth_methods_supported.as_deref();
        let supports = |method: &str| match supported {
            Some(list) => list.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        };
        if let Some(client_id) = &self.options.client_id {
            let method = if self.options.private_key_pem.is_some() {
                "private_key_jwt"
            } else if self.options.client_secret.is_some() {
                if !supports("client_secret_basic") && supports("client_secret_post") {
                    "client_secret_post"
                } else {
                    "client_secret_basic"
                }
            } else {
                "none"
            };
            let client = ClientRegistration::new(
                client_id.clone(),
                self.options.client_secret.clone(),
                method,
            );
            state.client = Some(client.clone());
            return Ok(client);
        }
        if let Some(url) = &self.options.client_metadata_url
            && metadata.client_id_metadata_document_supported == Some(true)
        {
            let client = ClientRegistration::new(url.clone(), None, "none");
            state.client = Some(client.clone());
            return Ok(client);
        }
        if let Some(client) = &state.client {
            return Ok(client.clone());
        }
        let Some(endpoint) = metadata.registration_endpoint.as_deref() else {
            return Err(OAuthError::NoClientIdentity {
                issuer: metadata.issuer.clone(),
            });
        };
        let endpoint = parse_endpoint(endpoint, "registration_endpoint")?;
        let method = ["client_secret_basic", "client_secret_post", "none"]
            .into_iter()
            .find(|m| supports(m))
            .unwrap_or("none");
        let (grant_types, redirect_uris) = match interaction {
            Some(i) => (
                vec!["authorization_code", "refresh_token"],
                vec![i.redirect_uri()],
            ),
            None if matches!(self.options.grant, Grant::JwtBearer(_)) => (vec![JWT_BEARER], vec![]),
            None => (vec!["client_credentials"], vec![]),
        };
        let body = serde_json::json!({
            "client_name": self.options.client_name,
            "redirect_uris": redirect_uris,
            "grant_types": grant_types,
            "response_types": if interaction.is_some() { vec!["code"] } else { vec![] },
            "token_endpoint_auth_method": method,
            "application_type": "native",
        });
        let response = self.http.post_json(&endpoint, &body).await?;
        if !response.is_success() {
            return Err(OAuthError::Refused {
                endpoint: "registration",
                status: response.status,
                oauth_error: response.oauth_error(),
            });
        }
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            client_secret: Option<String>,
            token_endpoint_auth_method: Option<String>,
        }
        let registered: Registered =
            serde_json::from_slice(&response.body).map_err(|e| OAuthError::Metadata {
                url: shown(&endpoint),
                message: format!("registration response: {e}"),
            })?;
        let mut method = registered
            .token_endpoint_auth_method
            .unwrap_or_else(|| method.to_owned());
        if method != "none" && registered.client_secret.is_none() {
            method = "none".to_owned();
        }
        let secret = (method != "none")
            .then_some(registered.client_secret)
            .flatten()
            .map(Secret::new);
        let client = ClientRegistration::new(registered.client_id, secret, method);
        state.client = Some(client.clone());
        Ok(client)
    }

    /// RFC 6749 §4.1 with PKCE S256 (RFC 7636), `state`, and the RFC 8707
    /// `resource` in both requests.
    async fn authorization_code(
        &self,
        discovered: &Discovered,
        client: &ClientRegistration,
        interaction: &dyn Interaction,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let metadata = &discovered.metadata;
        // MCP 2025-11-25 "Authorization Code Protection": refuse without
        // S256. Only the 2025-03-26 default endpoints come without metadata.
        let s256 = metadata
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"));
        if discovered.has_metadata && !s256 {
            return Err(OAuthError::PkceUnsupported);
        }
        let endpoint =
            metadata
                .authorization_endpoint
                .as_deref()
                .ok_or_else(|| OAuthError::Metadata {
                    url: metadata.issuer.clone(),
                    message: "no authorization_endpoint".to_owned(),
                })?;
        let mut url = parse_endpoint(endpoint, "authorization_endpoint")?;
        check_browser_url(&url)?;
        let (verifier, challenge) = crypto::pkce_pair()?;
        let state = crypto::random_token(16)?;
        let redirect_uri = interaction.redirect_uri();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &discovered.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        let redirect = interaction.authorize(&url).await?;
        let params: HashMap<String, String> = redirect.query_pairs().into_owned().collect();
        if let Some(error) = params.get("error") {
            return Err(OAuthError::Authorization(format!(
                "the authorization server answered {}",
                error.chars().take(64).collect::<String>()
            )));
        }
        if params.get("state") != Some(&state) {
            return Err(OAuthError::Authorization(
                "the redirect's state does not match the request's".to_owned(),
            ));
        }
        // RFC 9207: when present, `iss` must be the issuer, exactly.
        if let Some(iss) = params.get("iss")
            && iss != &metadata.issuer
        {
            return Err(OAuthError::Authorization(
                "the redirect's iss is not the authorization server's issuer".to_owned(),
            ));
        }
        if metadata.authorization_response_iss_parameter_supported == Some(true)
            && !params.contains_key("iss")
        {
            return Err(OAuthError::Authorization(
                "the redirect lacks the iss the authorization server promised".to_owned(),
            ));
        }
        let code = params
            .get("code")
            .ok_or_else(|| OAuthError::Authorization("the redirect carries no code".to_owned()))?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.clone()),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier.expose().to_owned()),
            ("resource", discovered.resource.clone()),
        ];
        self.token_request(discovered, client, &form).await
    }

    /// RFC 6749 §4.4, authenticated with a secret or a signed assertion.
    async fn client_credentials(
        &self,
        discovered: &Discovered,
        client: &ClientRegistration,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        if client.client_secret.is_none() && client.token_endpoint_auth_method != "private_key_jwt"
        {
            return Err(OAuthError::Config(
                "the client credentials grant needs a client secret or a private key".to_owned(),
            ));
        }
        let mut form = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("resource", discovered.resource.clone()),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope));
        }
        self.token_request(discovered, client, &form).await
    }

    /// SEP-990: token exchange at the identity provider (RFC 8693) for an
    /// identity assertion grant naming this authorization server and
    /// resource, then the JWT bearer grant (RFC 7523) here.
    async fn identity_assertion(
        &self,
        discovered: &Discovered,
        client: &ClientRegistration,
        grant: &IdentityAssertionGrant,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("requested_token_type", ID_JAG),
            ("subject_token", grant.id_token.expose()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("audience", discovered.metadata.issuer.as_str()),
            ("resource", discovered.resource.as_str()),
        ];
        if let Some(scope) = &scope {
            form.push(("scope", scope));
        }
        let auth = match (&grant.idp_client_id, &grant.idp_client_secret) {
            (Some(id), Some(secret)) => ClientAuth::Basic {
                id,
                secret: secret.expose(),
            },
            (Some(id), None) => {
                form.push(("client_id", id));
                ClientAuth::None
            }
            _ => ClientAuth::None,
        };
        let response = self
            .http
            .post_form(&grant.idp_token_endpoint, &form, auth)
            .await?;
        if !response.is_success() {
            return Err(OAuthError::Refused {
                endpoint: "identity provider token",
                status: response.status,
                oauth_error: response.oauth_error(),
            });
        }
        #[derive(Deserialize)]
        struct Exchanged {
            access_token: String,
            issued_token_type: Option<String>,
        }
        let exchanged: Exchanged =
            serde_json::from_slice(&response.body).map_err(|_| OAuthError::Metadata {
                url: shown(&grant.idp_token_endpoint),
                message: "the token exchange response is not valid".to_owned(),
            })?;
        if exchanged
            .issued_token_type
            .as_deref()
            .is_some_and(|t| t != ID_JAG)
        {
            return Err(OAuthError::Metadata {
                url: shown(&grant.idp_token_endpoint),
                message: "the identity provider did not issue an identity assertion grant"
                    .to_owned(),
            });
        }
        let mut form = vec![
            ("grant_type", JWT_BEARER.to_owned()),
            ("assertion", exchanged.access_token),
            ("resource", discovered.resource.clone()),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope));
        }
        self.token_request(discovered, client, &form).await
    }

    /// SEP-1933: the JWT bearer grant (RFC 7523 §2.1) with the workload's
    /// JWT as `assertion`, for this resource.
    async fn workload_assertion(
        &self,
        discovered: &Discovered,
        client: &ClientRegistration,
        source: &WorkloadAssertion,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let assertion = source.read()?;
        let mut form = vec![
            ("grant_type", JWT_BEARER.to_owned()),
            ("assertion", assertion.expose().to_owned()),
            ("resource", discovered.resource.clone()),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope));
        }
        self.token_request(discovered, client, &form).await
    }

    /// POSTs to the token endpoint with the client's authentication method,
    /// and a DPoP proof (RFC 9449 §5) where the server offers DPoP; a
    /// `use_dpop_nonce` refusal is answered once with the server's nonce
    /// (§8). The answer's `token_type` must be `Bearer`, or `DPoP` when a
    /// proof went with the request.
    async fn token_request(
        &self,
        discovered: &Discovered,
        client: &ClientRegistration,
        form: &[(&'static str, String)],
    ) -> Result<Tokens, OAuthError> {
        let metadata = &discovered.metadata;
        let endpoint = metadata
            .token_endpoint
            .as_deref()
            .ok_or_else(|| OAuthError::Metadata {
                url: metadata.issuer.clone(),
                message: "no token_endpoint".to_owned(),
            })?;
        let endpoint = parse_endpoint(endpoint, "token_endpoint")?;
        let key = self.dpop_key_for(discovered)?;
        let mut nonce_retried = false;
        let response = loop {
            let mut form = form.to_vec();
            let auth = self.client_authentication(client, &metadata.issuer, &mut form)?;
            let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let proof = match &key {
                Some(key) => {
                    let nonce = self.dpop().server_nonce.clone();
                    Some(key.proof("POST", &endpoint, None, nonce.as_deref())?)
                }
                None => None,
            };
            let response = self
                .http
                .post_form_with_proof(&endpoint, &pairs, auth, proof.as_ref())
                .await?;
            if key.is_some()
                && let Some(nonce) = &response.dpop_nonce
            {
                self.dpop().server_nonce = Some(nonce.clone());
            }
            let wants_nonce = response.status == 400
                && response.dpop_nonce.is_some()
                && response.oauth_error_code().as_deref() == Some(dpop::USE_DPOP_NONCE);
            if key.is_some() && wants_nonce && !nonce_retried {
                nonce_retried = true;
                continue;
            }
            break response;
        };
        if !response.is_success() {
            return Err(OAuthError::Refused {
                endpoint: "token",
                status: response.status,
                oauth_error: response.oauth_error(),
            });
        }
        #[derive(Deserialize)]
        struct TokenResponse {
            access_token: String,
            token_type: Option<String>,
            expires_in: Option<u64>,
            refresh_token: Option<String>,
            scope: Option<String>,
        }
        let parsed: TokenResponse =
            serde_json::from_slice(&response.body).map_err(|_| OAuthError::Metadata {
                url: shown(&endpoint),
                message: "the token response is not a valid token response".to_owned(),
            })?;
        // RFC 9449 §5: `DPoP` only answers a request with a proof; a
        // server that answers one with `Bearer` did not bind the token.
        let bound = match parsed.token_type.as_deref() {
            None => false,
            Some(t) if t.eq_ignore_ascii_case("bearer") => false,
            Some(t) if t.eq_ignore_ascii_case("dpop") && key.is_some() => true,
            Some(t) if t.eq_ignore_ascii_case("dpop") => {
                return Err(OAuthError::Metadata {
                    url: shown(&endpoint),
                    message: "the token type is DPoP, but the request carried no DPoP proof"
                        .to_owned(),
                });
            }
            Some(_) => {
                return Err(OAuthError::Metadata {
                    url: shown(&endpoint),
                    message: "the token type is neither Bearer nor DPoP".to_owned(),
                });
            }
        };
        let mut tokens = Tokens::new(Secret::new(parsed.access_token));
        tokens.refresh_token = parsed.refresh_token.map(Secret::new);
        tokens.expires_at = parsed.expires_in.map(|s| unix_now().saturating_add(s));
        tokens.scope = parsed.scope;
        tokens.dpop = bound;
        Ok(tokens)
    }

    /// How a token request authenticates `client` (its registered method),
    /// adding what goes in the form: a `client_secret_basic` pair for the
    /// header, the form fields of the others. A `private_key_jwt`
    /// assertion is signed anew for each request.
    fn client_authentication<'a>(
        &self,
        client: &'a ClientRegistration,
        issuer: &str,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<ClientAuth<'a>, OAuthError> {
        let secret = client.client_secret.as_ref().map(Secret::expose);
        Ok(match (client.token_endpoint_auth_method.as_str(), secret) {
            ("client_secret_basic", Some(secret)) => ClientAuth::Basic {
                id: &client.client_id,
                secret,
            },
            ("client_secret_post", Some(secret)) => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", secret.to_owned()));
                ClientAuth::None
            }
            ("private_key_jwt", _) => {
                let key = self.options.private_key_pem.as_ref().ok_or_else(|| {
                    OAuthError::Config("private_key_jwt needs a private key".to_owned())
                })?;
                let assertion = crypto::client_assertion(key, &client.client_id, issuer)?;
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push(("client_assertion", assertion.expose().to_owned()));
                form.push(("client_id", client.client_id.clone()));
                ClientAuth::None
            }
            _ => {
                form.push(("client_id", client.client_id.clone()));
                ClientAuth::None
            }
        })
    }

    /// The DPoP key for a token request to the discovered server: made on
    /// first use, when DPoP is on and the server offers ES256; `None`
    /// otherwise.
    fn dpop_key_for(&self, discovered: &Discovered) -> Result<Option<Arc<DpopKey>>, OAuthError> {
        let offered = discovered
            .metadata
            .dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|algs| algs.iter().any(|a| a == dpop::ALGORITHM));
        if !self.options.dpop || !offered {
            return Ok(None);
        }
        let mut dpop = self.dpop();
        if dpop.key.is_none() {
            dpop.key = Some(Arc::new(DpopKey::generate()?));
        }
        Ok(dpop.key.clone())
    }

    fn dpop(&self) -> std::sync::MutexGuard<'_, Dpop> {
        mcp_proto::sync::lock(&self.dpop)
    }

    /// The tokens to send now, refreshed first when they expire within the
    /// margin (without a refresh token the old one is still sent and the
    /// server's 401 starts a new authorization).
    ///
    /// One renewal at a time (single flight: this refresh, or a refusal's
    /// renewal), and no lock on the state while its requests are out: a
    /// request whose token has not expired yet sends it rather than wait
    /// for another request's renewal; one whose token has expired waits
    /// for that renewal (a refresh is bounded by
    /// [`OAuthOptions::request_timeout`]), and then takes its tokens.
    async fn current_tokens(&self) -> Option<Tokens> {
        let tokens = self.state.lock().await.tokens.clone();
        let held = tokens.as_ref()?;
        if !held.expires_within(self.margin()) {
            return tokens;
        }
        let _flight = match self.flight.try_lock() {
            Ok(flight) => flight,
            Err(_) if !held.expires_within(0) => return tokens,
            Err(_) => self.flight.lock().await,
        };
        let same = |state: &State| {
            state.tokens.as_ref().map(|t| t.access_token.expose())
                == Some(held.access_token.expose())
        };
        let request = {
            let mut state = self.state.lock().await;
            // Renewed meanwhile (the refresh this request waited for, or
            // an authorization): nothing left to do.
            if !same(&state) {
                return state.tokens.clone();
            }
            match self.refresh_request(&mut state).await {
                Some(request) => request,
                None => return state.tokens.clone(),
            }
        };
        let result = self.send_refresh(&request).await;
        let mut state = self.state.lock().await;
        // An authorization that ended meanwhile wins over this refresh.
        if same(&state) {
            self.refresh_done(&mut state, request, result).await;
        }
        state.tokens.clone()
    }
}

/// What a refresh sends (RFC 6749 §6), read from the state under its lock
/// so that the token request goes out without it.
struct RefreshRequest {
    refresh_token: Secret,
    discovered: Discovered,
    client: ClientRegistration,
}

#[async_trait]
impl AuthProvider for OAuthProvider {
    /// `Bearer <token>`, or `DPoP <token>` for a DPoP-bound token (which
    /// also needs the proof that only [`authorize_request`](Self::authorize_request)
    /// adds).
    async fn authorization(&self) -> Result<Option<String>, TransportError> {
        Ok(self.current_tokens().await.map(|t| {
            let scheme = if t.dpop { "DPoP" } else { "Bearer" };
            format!("{scheme} {}", t.access_token.expose())
        }))
    }

    /// `Authorization` as [`authorization`](Self::authorization) says; for
    /// a DPoP-bound token also a `DPoP` proof for this method and URL, with
    /// `ath` and the MCP server's last nonce (RFC 9449 §7, §9).
    async fn authorize_request(
        &self,
        method: &Method,
        url: &url::Url,
        headers: &mut HeaderMap,
    ) -> Result<(), TransportError> {
        let Some(tokens) = self.current_tokens().await else {
            return Ok(());
        };
        let token = tokens.access_token.expose();
        let invalid =
            || TransportError::Setup("the access token is not a valid header value".to_owned());
        if !tokens.dpop {
            let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| invalid())?;
            headers.insert(AUTHORIZATION, value);
            return Ok(());
        }
        let (key, nonce) = {
            let dpop = self.dpop();
            (dpop.key.clone(), dpop.resource_nonce.clone())
        };
        let key = key.ok_or_else(|| {
            TransportError::from(OAuthError::Key(
                "a DPoP-bound token without its key".to_owned(),
            ))
        })?;
        let proof = key
            .proof(method.as_str(), url, Some(token), nonce.as_deref())
            .map_err(TransportError::from)?;
        let value = HeaderValue::from_str(&format!("DPoP {token}")).map_err(|_| invalid())?;
        headers.insert(AUTHORIZATION, value);
        let proof = HeaderValue::from_str(proof.expose()).map_err(|_| invalid())?;
        headers.insert(HeaderName::from_static("dpop"), proof);
        Ok(())
    }

    /// Keeps the MCP server's `DPoP-Nonce` for the next proofs, and asks
    /// for the request again when a 401 says `use_dpop_nonce` (RFC 9449 §9).
    async fn on_response(&self, status: u16, headers: &HeaderMap) -> Result<bool, TransportError> {
        let Some(nonce) = headers
            .get(dpop::NONCE_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(dpop::valid_nonce)
        else {
            return Ok(false);
        };
        let mut state = self.dpop();
        if state.key.is_none() {
            return Ok(false);
        }
        state.resource_nonce = Some(nonce);
        let asks = status == 401
            && headers
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .any(|v| Challenge::parse(v).error.as_deref() == Some(dpop::USE_DPOP_NONCE));
        Ok(asks)
    }

    async fn on_unauthorized(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, TransportError> {
        report(self.refused(status, www_authenticate, None).await)
    }

    async fn on_refusal(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
        sent_authorization: Option<&str>,
    ) -> Result<bool, TransportError> {
        report(
            self.refused(status, www_authenticate, Some(sent_authorization))
                .await,
        )
    }
}

/// The access token of an `Authorization` value of the `Bearer` or `DPoP`
/// scheme (RFC 6750 §2.1, RFC 9449 §7.1; the scheme is case-insensitive).
fn access_token_of(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop"))
        .then(|| token.trim_start())
}

fn report(result: Result<bool, OAuthError>) -> Result<bool, TransportError> {
    result.map_err(|error| {
        tracing::warn!(%error, "authorization failed");
        error.into()
    })
}

fn parse_endpoint(text: &str, field: &str) -> Result<Url, OAuthError> {
    let url = Url::parse(text).map_err(|_| OAuthError::Metadata {
        url: field.to_owned(),
        message: format!("{field} is not a URL"),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(OAuthError::Metadata {
            url: field.to_owned(),
            message: format!("{field} is not an http(s) URL"),
        });
    }
    Ok(url)
}

/// A URL a browser will open: `https`, or `http` on a loopback host only
/// (MCP "Authorization", security considerations: open redirects and
/// insecure endpoints).
fn check_browser_url(url: &Url) -> Result<(), OAuthError> {
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if url.scheme() == "https" || (url.scheme() == "http" && loopback) {
        Ok(())
    } else {
        Err(OAuthError::Authorization(format!(
            "refused to open the authorization URL {}: only https (or http on loopback)",
            shown(url)
        )))
    }
}

/// The scopes granted before, then those of `scope` not among them, space
/// separated; `None` when both are empty.
fn union_scopes(granted: &[String], scope: Option<String>) -> Option<String> {
    let mut all: Vec<String> = granted.to_vec();
    for s in scope.as_deref().unwrap_or_default().split_whitespace() {
        if !all.iter().any(|g| g == s) {
            all.push(s.to_owned());
        }
    }
    (!all.is_empty()).then(|| all.join(" "))
}

#[cfg(test)]
mod tests {
    use super::{Grant, OAuthOptions, OAuthProvider, union_scopes};
    use crate::secret::Secret;

    #[test]
    fn debug_shows_the_server_origin_and_no_secret() {
        let url =
            url::Url::parse("https://mcp.example:8443/v1/path-key?token=query-token").unwrap();
        let mut options = OAuthOptions::new(url, Grant::ClientCredentials);
        options.client_secret = Some(Secret::new("client-secret-value"));
        options.private_key_pem = Some(Secret::new("private-key-value"));
        let provider = OAuthProvider::new(options.clone()).unwrap();
        for shown in [format!("{options:?}"), format!("{provider:?}")] {
            assert!(shown.contains("https://mcp.example:8443"), "{shown}");
            for secret in [
                "query-token",
                "path-key",
                "client-secret-value",
                "private-key-value",
            ] {
                assert!(!shown.contains(secret), "{secret} in {shown}");
            }
        }
    }

    #[test]
    fn a_step_up_keeps_what_was_granted() {
        let granted = vec!["mcp:basic".to_owned(), "offline_access".to_owned()];
        assert_eq!(
            union_scopes(&granted, Some("mcp:write mcp:basic".to_owned())).as_deref(),
            Some("mcp:basic offline_access mcp:write")
        );
        assert_eq!(union_scopes(&[], None), None);
        assert_eq!(
            union_scopes(&[], Some("a".to_owned())).as_deref(),
            Some("a")
        );
    }
}

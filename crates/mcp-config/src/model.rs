//! The configuration model every format reads into: a server and its transport, described as data.
//!
//! The model follows the store (`id`, `name`, `enabled`,
//! `transport`), extended with the per-server `description` and
//! `timeout` that the other formats carry. It describes a transport;
//! connecting is `mcp-manager`'s job.

use crate::origins::Origins;
use crate::secret::SecretValue;
use std::fmt;

/// One configured MCP server.
///
/// Built with [`ServerConfig::new`] (the type is `#[non_exhaustive]`); every
/// field is public so it can be adjusted afterwards.
///
/// ```
/// use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
///
/// let mut config = ServerConfig::new("github", TransportConfig::Stdio(StdioConfig::new("npx")));
/// config.name = "GitHub".into();
/// assert!(config.enabled);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The unique key of the server: the store's `id`, or the key of the
    /// `mcpServers` / `servers` map in the other formats.
    pub id: String,
    /// The display name. Formats without one use the id.
    pub name: String,
    /// Disabled servers are kept and listed but never connected. Default `true`.
    pub enabled: bool,
    /// A description for people and models. Default `None`.
    pub description: Option<String>,
    /// Overrides the initialize deadline, in milliseconds (the
    /// `timeout`). Default `None`: the manager's own deadline applies.
    pub timeout_ms: Option<u64>,
    /// Which protocol era the client speaks to this server (the formats'
    /// `era`). Default [`ProtocolEra::Auto`], also when the field is absent.
    pub era: ProtocolEra,
    /// How long one tool call may take on the wire, in milliseconds (Codex's
    /// `tool_timeout_sec`, goose's `timeout`, ...). Default `None`: the
    /// host's own call deadline applies.
    pub call_timeout_ms: Option<u64>,
    /// Which of the server's tools reach the host (Codex's `enabled_tools` /
    /// `disabled_tools`, Gemini's `includeTools` / `excludeTools`). Default:
    /// every tool.
    pub tools: ToolFilter,
    /// The values the person is asked for when the server connects
    /// (VS Code's `inputs`), referenced as `${input:ID}` in the server's
    /// strings. Default empty.
    pub inputs: Vec<InputPrompt>,
    /// How to reach the server.
    pub transport: TransportConfig,
    /// Fields the source document set that belong to another transport (for
    /// example `url` on a stdio server), as store field paths such as
    /// `transport.url`. Readers fill it so that [`crate::validate`] can report
    /// `wrong_transport_field`; writers never write these fields. Default empty.
    pub misplaced_fields: Vec<String>,
    /// Where each field was written in the host's file the server was read
    /// from, so that [`crate::validate`] names fields as the person wrote
    /// them, with their line and column. Default empty (the store's own
    /// format, and servers built in code, keep store paths). Never part of
    /// equality: see [`Origins`].
    pub origins: Origins,
}

impl ServerConfig {
    /// A server named after its id, enabled, with no description or
    /// timeout, its protocol era detected ([`ProtocolEra::Auto`]).
    pub fn new(id: impl Into<String>, transport: TransportConfig) -> Self {
        let id = id.into();
        ServerConfig {
            name: id.clone(),
            id,
            enabled: true,
            description: None,
            timeout_ms: None,
            era: ProtocolEra::Auto,
            call_timeout_ms: None,
            tools: ToolFilter::default(),
            inputs: Vec::new(),
            transport,
            misplaced_fields: Vec::new(),
            origins: Origins::new(),
        }
    }

    /// A copy whose literal env and header values are all replaced by
    /// [`SecretValue::Saved`]: what `Store::list` hands out.
    pub fn redacted(&self) -> ServerConfig {
        let mut copy = self.clone();
        let entries = match &mut copy.transport {
            TransportConfig::Stdio(stdio) => &mut stdio.env,
            TransportConfig::Http(http) | TransportConfig::Sse(http) => &mut http.headers,
        };
        for entry in entries {
            entry.value = SecretValue::Saved;
        }
        copy
    }
}

/// A value the person is asked for when a server connects (VS Code's
/// `{"type": "promptString", "id": ..., "description": ..., "password": true}`),
/// referenced as `${input:ID}` in the server's command, args, env, URL or
/// headers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct InputPrompt {
    /// The id that `${input:ID}` names.
    pub id: String,
    /// What to ask, for a person.
    pub description: Option<String>,
    /// Whether the answer is a secret (shown as dots, never echoed).
    pub password: bool,
    /// The answer offered when the person gives none.
    pub default: Option<String>,
}

impl InputPrompt {
    /// A prompt for `id` with no description, not a password, no default.
    pub fn new(id: impl Into<String>) -> Self {
        InputPrompt {
            id: id.into(),
            ..InputPrompt::default()
        }
    }
}

/// Which of a server's tools a host offers, by the names the server gives
/// them: a tool is offered when `include` is `None` or lists it, and
/// `exclude` does not list it (`exclude` wins).
///
/// ```
/// use mcp_config::ToolFilter;
///
/// let mut filter = ToolFilter::default();
/// assert!(filter.allows("anything"));
/// filter.include = Some(vec!["read".into(), "write".into()]);
/// filter.exclude = vec!["write".into()];
/// assert!(filter.allows("read"));
/// assert!(!filter.allows("write"));
/// assert!(!filter.allows("delete"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ToolFilter {
    /// The only tools offered; `None`: every tool.
    pub include: Option<Vec<String>>,
    /// Tools never offered, even when `include` lists them.
    pub exclude: Vec<String>,
}

impl ToolFilter {
    /// Whether the tool the server calls `name` is offered.
    pub fn allows(&self, name: &str) -> bool {
        let included = self
            .include
            .as_ref()
            .is_none_or(|include| include.iter().any(|tool| tool == name));
        included && !self.exclude.iter().any(|tool| tool == name)
    }

    /// True when every tool is offered.
    pub fn is_all(&self) -> bool {
        self.include.is_none() && self.exclude.is_empty()
    }
}

/// Which era of the MCP protocol a client speaks to a server (`"era"` in
/// every format; the same for stdio and HTTP servers).
///
/// MCP has two eras. The handshake era (versions 2024-11-05 to 2025-11-25)
/// opens every session with `initialize` and negotiates a version there.
/// The stateless era (2026-07-28) has no `initialize`: the client learns
/// about the server with `server/discover` and sends `_meta` on every
/// request. A client detects which one a server speaks unless the
/// configuration pins it.
///
/// ```
/// use mcp_config::ProtocolEra;
///
/// assert_eq!(ProtocolEra::default(), ProtocolEra::Auto);
/// assert_eq!(ProtocolEra::from_name("legacy"), Some(ProtocolEra::Legacy));
/// assert_eq!(ProtocolEra::from_name("Legacy"), None);
/// assert_eq!(ProtocolEra::Modern.as_str(), "modern");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolEra {
    /// `auto` (the default, and what an absent `era` means): the client
    /// detects the server's era when it connects and speaks that one.
    #[default]
    Auto,
    /// `modern`: the stateless 2026-07-28 era only. The client never sends
    /// `initialize`; a server that speaks only the handshake era fails to
    /// connect instead of being spoken to in an older protocol.
    Modern,
    /// `legacy`: the handshake era only (2024-11-05 to 2025-11-25). The
    /// client opens with `initialize` and never sends a 2026-07-28 request
    /// such as `server/discover`, not even to detect the era; for servers
    /// that mishandle requests they do not know.
    Legacy,
}

impl ProtocolEra {
    /// Every era, in the order messages list them.
    pub const ALL: [ProtocolEra; 3] = [ProtocolEra::Auto, ProtocolEra::Modern, ProtocolEra::Legacy];

    /// The name the formats use: `auto`, `modern` or `legacy`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolEra::Auto => "auto",
            ProtocolEra::Modern => "modern",
            ProtocolEra::Legacy => "legacy",
        }
    }

    /// The era a format names, exactly as [`ProtocolEra::as_str`] spells
    /// it; `None` for any other text.
    pub fn from_name(name: &str) -> Option<ProtocolEra> {
        ProtocolEra::ALL
            .into_iter()
            .find(|era| era.as_str() == name)
    }
}

impl std::fmt::Display for ProtocolEra {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportConfig {
    /// A child process speaking newline-delimited JSON on stdin/stdout.
    Stdio(StdioConfig),
    /// Streamable HTTP.
    Http(HttpConfig),
    /// The legacy HTTP+SSE transport; same fields as HTTP.
    Sse(HttpConfig),
}

impl TransportConfig {
    /// Which transport this is.
    pub fn kind(&self) -> TransportKind {
        match self {
            TransportConfig::Stdio(_) => TransportKind::Stdio,
            TransportConfig::Http(_) => TransportKind::Http,
            TransportConfig::Sse(_) => TransportKind::Sse,
        }
    }
}

/// The transport of a server, without its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// See [`TransportConfig::Stdio`].
    Stdio,
    /// See [`TransportConfig::Http`].
    Http,
    /// See [`TransportConfig::Sse`].
    Sse,
}

impl TransportKind {
    /// The name the store writes in `transport.type`: `stdio`, `http` or `sse`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Http => "http",
            TransportKind::Sse => "sse",
        }
    }
}

/// A stdio server: a command spawned directly, without a shell. Start from
/// [`StdioConfig::new`] and set the rest with the setter of each field.
///
/// `Debug` shows how many arguments there are, not what they are, and env
/// values redacted.
#[derive(Clone, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The program. May contain `${VAR}` references.
    pub command: String,
    /// Arguments, passed as given, without shell splitting. May contain
    /// `${VAR}` references, and often credentials (`--api-key ...`).
    pub args: Vec<String>,
    /// Literal environment values, in order; they override the passthrough
    /// variables. Values are secrets and may contain `${VAR}` references.
    pub env: Vec<SecretEntry>,
    /// Names of host environment variables passed through to the process
    /// (the store's `envVars`).
    pub env_passthrough: Vec<String>,
    /// The working directory: must be absolute; `None` (or empty) inherits
    /// the host's launch directory. Never expanded.
    pub cwd: Option<String>,
}

impl StdioConfig {
    /// A command with no arguments, environment or working directory.
    pub fn new(command: impl Into<String>) -> Self {
        StdioConfig {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            env_passthrough: Vec::new(),
            cwd: None,
        }
    }
}

/// An HTTP (Streamable HTTP or legacy SSE) server. Start from
/// [`HttpConfig::new`] and set the rest with the setter of each field.
///
/// `Debug` shows the URL's scheme and host only, and header values
/// redacted.
#[derive(Clone, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint: `http` or `https`, without userinfo or fragment. May
    /// contain `${VAR}` references; its path or query may hold a token.
    pub url: String,
    /// Names an environment variable whose value is sent as
    /// `Authorization: Bearer <value>` (the store's `bearerTokenEnv`).
    pub bearer_token_env: Option<String>,
    /// Literal headers. Values are secrets and may contain `${VAR}` references.
    pub headers: Vec<SecretEntry>,
    /// Headers whose values come from environment variables (the store's `envHeaders`).
    pub env_headers: Vec<EnvHeader>,
    /// OAuth 2.1 client settings (the formats' `oauth` object). Default
    /// `None`: a host may still authorize with OAuth when the server asks
    /// (a 401), using discovery and dynamic registration.
    pub oauth: Option<OAuthConfig>,
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &crate::secret::args_for_debug(&self.args))
            .field("env", &self.env)
            .field("env_passthrough", &self.env_passthrough)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &crate::secret::url_for_debug(&self.url))
            .field("bearer_token_env", &self.bearer_token_env)
            .field("headers", &self.headers)
            .field("env_headers", &self.env_headers)
            .field("oauth", &self.oauth)
            .finish()
    }
}

impl HttpConfig {
    /// A URL with no authentication or headers.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            bearer_token_env: None,
            headers: Vec::new(),
            env_headers: Vec::new(),
            oauth: None,
        }
    }
}

/// How a host identifies itself to the authorization server of an HTTP
/// server that requires OAuth (`{"oauth": {"clientId": ..., ...}}`).
///
/// Holds no secret: the client secret is only ever named, by the
/// environment variable that holds it (`clientSecretEnv`); a literal
/// `clientSecret` in a file is refused (`oauth_literal_secret`).
///
/// `grant` picks how tokens are obtained: `"authorization_code"` (the
/// default: a person logs in once), `"client_credentials"` (machine to
/// machine, which needs `clientId` and `clientSecretEnv`:
/// `oauth_client_credentials_incomplete` otherwise) or `"jwt_bearer"`
/// (workload identity federation: the JWT the workload's platform issued
/// it, from the file `assertionFile` or the variable `assertionEnv`, exactly
/// one of them: `oauth_jwt_bearer_incomplete` otherwise). The JWT itself is
/// never in the file either, only where to read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// A pre-registered client id (`clientId`). Default `None`: a client ID
    /// metadata document or dynamic registration is used.
    pub client_id: Option<String>,
    /// The environment variable holding the pre-registered client's secret
    /// (`clientSecretEnv`). Needs `client_id`.
    pub client_secret_env: Option<String>,
    /// Scopes to ask for (`scopes`); empty: the server's challenge or its
    /// advertised scopes decide.
    pub scopes: Vec<String>,
    /// This client's metadata document URL (`clientMetadataUrl`), used as
    /// its `client_id` where the authorization server supports that.
    pub client_metadata_url: Option<String>,
    /// The loopback port `mcpctl login` listens on for the redirect
    /// (`redirectPort`); `None`: any free port. Needed when the client was
    /// registered with a fixed redirect URI.
    pub redirect_port: Option<u16>,
    /// Which OAuth grant obtains tokens (`grant`). Default
    /// [`OAuthGrant::AuthorizationCode`].
    pub grant: OAuthGrant,
    /// The file holding the workload's JWT for [`OAuthGrant::JwtBearer`]
    /// (`assertionFile`, an absolute path), read afresh for each token
    /// request.
    pub assertion_file: Option<String>,
    /// The environment variable holding the workload's JWT for
    /// [`OAuthGrant::JwtBearer`] (`assertionEnv`), read afresh for each
    /// token request.
    pub assertion_env: Option<String>,
}

impl OAuthConfig {
    /// Settings with every field unset.
    pub fn new() -> Self {
        OAuthConfig::default()
    }
}

/// The OAuth grant a server's `oauth` section selects (`"grant"`).
///
/// ```
/// use mcp_config::OAuthGrant;
///
/// assert_eq!(OAuthGrant::default(), OAuthGrant::AuthorizationCode);
/// assert_eq!(OAuthGrant::from_name("client_credentials"), Some(OAuthGrant::ClientCredentials));
/// assert_eq!(OAuthGrant::ClientCredentials.as_str(), "client_credentials");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// `authorization_code` (the default): a person authorizes once in a
    /// browser (`mcpctl login`), with PKCE (OAuth 2.1 §4.1); an unattended
    /// host only uses and refreshes the tokens that login stored.
    #[default]
    AuthorizationCode,
    /// `client_credentials`: machine to machine (RFC 6749 §4.4). The
    /// pre-registered client (`clientId`, with its secret in
    /// `clientSecretEnv`) gets tokens by itself, so an unattended host
    /// authorizes without anybody logging in.
    ClientCredentials,
    /// `jwt_bearer`: workload identity federation (SEP-1933), the JWT
    /// bearer grant (RFC 7523 §2.1, `grant_type`
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer`) with the JWT the
    /// workload's platform issued it (`assertionFile` or `assertionEnv`);
    /// nobody logs in.
    JwtBearer,
}

impl OAuthGrant {
    /// Every grant, in the order messages list them.
    pub const ALL: [OAuthGrant; 3] = [
        OAuthGrant::AuthorizationCode,
        OAuthGrant::ClientCredentials,
        OAuthGrant::JwtBearer,
    ];

    /// The name the formats use: `authorization_code` or `client_credentials`
    /// (the RFC 6749 `grant_type` values), or `jwt_bearer` (RFC 7523's).
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthGrant::AuthorizationCode => "authorization_code",
            OAuthGrant::ClientCredentials => "client_credentials",
            OAuthGrant::JwtBearer => "jwt_bearer",
        }
    }

    /// The grant a format names, exactly as [`OAuthGrant::as_str`] spells
    /// it; `None` for any other text.
    pub fn from_name(name: &str) -> Option<OAuthGrant> {
        OAuthGrant::ALL
            .into_iter()
            .find(|grant| grant.as_str() == name)
    }
}

impl std::fmt::Display for OAuthGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A literal env entry or header: the store's `{key, value}` row.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SecretEntry {
    /// The variable or header name. Not a secret.
    pub key: String,
    /// The value; `Debug` redacts it.
    pub value: SecretValue,
}

impl SecretEntry {
    /// A row with a literal value.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        SecretEntry {
            key: key.into(),
            value: SecretValue::literal(value),
        }
    }

    /// A row that keeps the value already saved under `key` (the
    /// `saved: true` with an empty value).
    pub fn saved(key: impl Into<String>) -> Self {
        SecretEntry {
            key: key.into(),
            value: SecretValue::Saved,
        }
    }
}

/// A header whose value is read from an environment variable when the server connects.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvHeader {
    /// The header name.
    pub header: String,
    /// The environment variable holding the value.
    pub var: String,
}

impl EnvHeader {
    /// A header read from `var`.
    pub fn new(header: impl Into<String>, var: impl Into<String>) -> Self {
        EnvHeader {
            header: header.into(),
            var: var.into(),
        }
    }
}

//! Diagnostics with stable codes: what parsing, validation and resolution report about one server.
//!
//! A UI shows [`Diagnostic::message`] to a person and may branch on
//! [`Code::as_str`], which never changes for a given problem. Messages name
//! fields, variables and header names, never a value: values can be secrets.
//! The one exception is a name from a fixed list that was misspelled (an
//! unknown transport type or `era`), quoted shortened so the mistake shows.

use std::fmt;

/// A stable code for one kind of configuration problem.
///
/// The strings returned by [`Code::as_str`] are part of the public contract;
/// the enum grows as new checks are added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Code {
    // Reading a document or an entry.
    /// `parse_error`: the document is not valid JSON (or TOML, or YAML).
    ParseError,
    /// `invalid_document`: valid JSON, but not shaped like any supported format.
    InvalidDocument,
    /// `unsupported_version`: a store file whose `version` this build does not read.
    UnsupportedVersion,
    /// `format_disabled`: a host's format whose reader this build leaves
    /// out (Codex's TOML, goose's YAML: the `host-configs` feature).
    FormatDisabled,
    /// `unreadable_source`: a source could not be read at all.
    UnreadableSource,
    /// `invalid_field`: a field has the wrong JSON type or is repeated.
    InvalidField,
    /// `missing_field`: a required field is absent.
    MissingField,
    /// `missing_transport`: neither a transport type nor `command`/`url`.
    MissingTransport,
    /// `unknown_transport`: a transport type this build does not know.
    UnknownTransport,
    /// `conflicting_transport`: `type`, `transport` and `transportType` disagree.
    ConflictingTransport,
    /// `invalid_era`: an `era` other than `auto`, `modern` or `legacy`. The
    /// message quotes the value, shortened: an era is a name, never a secret.
    InvalidEra,
    // Validation.
    /// `missing_id`: the server id is empty.
    MissingId,
    /// `invalid_id`: an id given for mcpctl's store that is not made of
    /// letters, digits, `_`, `-` and `.` ([`crate::Store::id_problems`]).
    InvalidId,
    /// `missing_name`: the display name is empty.
    MissingName,
    /// `duplicate_id`: two servers share an id.
    DuplicateId,
    /// `invalid_timeout`: a timeout of zero.
    InvalidTimeout,
    /// `wrong_transport_field`: a field that belongs to another transport.
    WrongTransportField,
    /// `missing_command`: a stdio server with an empty command.
    MissingCommand,
    /// `relative_cwd`: a working directory that is not absolute.
    RelativeCwd,
    /// `invalid_env_key`: an env key that is empty or contains `=` or NUL.
    InvalidEnvKey,
    /// `duplicate_env_key`: the same env key twice.
    DuplicateEnvKey,
    /// `invalid_env_name`: a referenced variable name (`envVars`,
    /// `bearerTokenEnv`, `envHeaders`) that is empty or contains `=` or NUL.
    InvalidEnvName,
    /// `missing_url`: an HTTP server with an empty URL.
    MissingUrl,
    /// `invalid_url`: a URL that does not parse.
    InvalidUrl,
    /// `bad_url_scheme`: a URL whose scheme is not `http` or `https`.
    BadUrlScheme,
    /// `url_userinfo`: a URL with a user name or password.
    UrlUserinfo,
    /// `url_fragment`: a URL with a `#fragment`.
    UrlFragment,
    /// `invalid_header_name`: a header name that is not an HTTP token.
    InvalidHeaderName,
    /// `invalid_header_value`: a header value with CR, LF or NUL.
    InvalidHeaderValue,
    /// `duplicate_header`: a header name set twice, compared case-insensitively
    /// across `headers` and `envHeaders`.
    DuplicateHeader,
    /// `bearer_with_authorization_header`: `bearerTokenEnv` together with an
    /// `Authorization` header.
    BearerWithAuthorizationHeader,
    /// `invalid_reference`: a malformed `${VAR}` reference.
    InvalidReference,
    /// `oauth_literal_secret`: a client secret written in the file
    /// (`oauth.clientSecret`); name its environment variable in
    /// `oauth.clientSecretEnv` instead.
    OAuthLiteralSecret,
    /// `invalid_oauth_client_id`: an empty `oauth.clientId`.
    InvalidOAuthClientId,
    /// `oauth_secret_without_client_id`: `oauth.clientSecretEnv` without
    /// `oauth.clientId`.
    OAuthSecretWithoutClientId,
    /// `invalid_oauth_scope`: a scope that is empty or not an RFC 6749
    /// scope token (spaces, quotes, backslashes).
    InvalidOAuthScope,
    /// `invalid_client_metadata_url`: `oauth.clientMetadataUrl` is not an
    /// `https` URL with a path (or `http` on a loopback host).
    InvalidClientMetadataUrl,
    /// `invalid_redirect_port`: `oauth.redirectPort` is 0.
    InvalidRedirectPort,
    /// `oauth_client_credentials_incomplete`: `oauth.grant` is
    /// `client_credentials` but `oauth.clientId` or `oauth.clientSecretEnv`
    /// is missing; that grant needs a pre-registered client and its secret.
    OAuthClientCredentialsIncomplete,
    /// `oauth_jwt_bearer_incomplete`: `oauth.grant` is `jwt_bearer` but
    /// not exactly one of `oauth.assertionFile` (an absolute path) and
    /// `oauth.assertionEnv` says where the workload's JWT is, or one of
    /// them is set for another grant.
    OAuthJwtBearerIncomplete,
    // Resolution.
    /// `missing_env`: a referenced environment variable is not set.
    MissingEnv,
    /// `missing_input`: an `${input:ID}` prompt that nobody answered (no
    /// input provider, no terminal, or the person declined).
    MissingInput,
    // Project trust.
    /// `untrusted`: a project-level server whose definition the person has
    /// not approved (see [`crate::TrustGate`]); it is listed, never started.
    Untrusted,
    /// `trust_store_unavailable`: the approvals file could not be read or
    /// written; project servers stay untrusted until it can.
    TrustStoreUnavailable,
    /// `saved_secret_unavailable`: a "keep the saved value" marker where no
    /// value is available (only the store can fill these in).
    SavedSecretUnavailable,
    // Warnings.
    /// `unresolved_variable`: a host variable such as `${workspaceFolder}`
    /// or `${userHome}` whose value is not known where the file is read
    /// (no project or home directory was given).
    UnresolvedVariable,
    /// `undeclared_input`: a VS Code `${input:ID}` reference to an input
    /// that the file's `inputs` does not declare.
    UndeclaredInput,
    /// `unsupported_reference`: a host's reference form this crate cannot
    /// honour, such as opencode's `{file:PATH}` or Windsurf's `${file:PATH}`.
    UnsupportedReference,
    /// `ignored_inputs`: formerly VS Code `inputs` prompts; no longer
    /// produced, since inputs are read into [`crate::ServerConfig::inputs`].
    IgnoredInputs,
    /// `ignored_env_file`: a VS Code `envFile`, which is not loaded.
    IgnoredEnvFile,
    /// `ignored_field`: a field of a format that is read but not used: a
    /// host setting this crate has no concept for (Gemini's `trust`,
    /// Cline's `autoApprove`), reported once per file.
    IgnoredField,
    /// `unstartable_server`: a server the host starts by means of its own
    /// (a Zed extension's context server), which cannot be started here.
    UnstartableServer,
}

impl Code {
    /// The stable string form, e.g. `missing_command`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ParseError => "parse_error",
            Code::InvalidDocument => "invalid_document",
            Code::UnsupportedVersion => "unsupported_version",
            Code::FormatDisabled => "format_disabled",
            Code::UnreadableSource => "unreadable_source",
            Code::InvalidField => "invalid_field",
            Code::MissingField => "missing_field",
            Code::MissingTransport => "missing_transport",
            Code::UnknownTransport => "unknown_transport",
            Code::ConflictingTransport => "conflicting_transport",
            Code::InvalidEra => "invalid_era",
            Code::MissingId => "missing_id",
            Code::InvalidId => "invalid_id",
            Code::MissingName => "missing_name",
            Code::DuplicateId => "duplicate_id",
            Code::InvalidTimeout => "invalid_timeout",
            Code::WrongTransportField => "wrong_transport_field",
            Code::MissingCommand => "missing_command",
            Code::RelativeCwd => "relative_cwd",
            Code::InvalidEnvKey => "invalid_env_key",
            Code::DuplicateEnvKey => "duplicate_env_key",
            Code::InvalidEnvName => "invalid_env_name",
            Code::MissingUrl => "missing_url",
            Code::InvalidUrl => "invalid_url",
            Code::BadUrlScheme => "bad_url_scheme",
            Code::UrlUserinfo => "url_userinfo",
            Code::UrlFragment => "url_fragment",
            Code::InvalidHeaderName => "invalid_header_name",
            Code::InvalidHeaderValue => "invalid_header_value",
            Code::DuplicateHeader => "duplicate_header",
            Code::BearerWithAuthorizationHeader => "bearer_with_authorization_header",
            Code::InvalidReference => "invalid_reference",
            Code::OAuthLiteralSecret => "oauth_literal_secret",
            Code::InvalidOAuthClientId => "invalid_oauth_client_id",
            Code::OAuthSecretWithoutClientId => "oauth_secret_without_client_id",
            Code::InvalidOAuthScope => "invalid_oauth_scope",
            Code::InvalidClientMetadataUrl => "invalid_client_metadata_url",
            Code::InvalidRedirectPort => "invalid_redirect_port",
            Code::OAuthClientCredentialsIncomplete => "oauth_client_credentials_incomplete",
            Code::OAuthJwtBearerIncomplete => "oauth_jwt_bearer_incomplete",
            Code::MissingEnv => "missing_env",
            Code::SavedSecretUnavailable => "saved_secret_unavailable",
            Code::MissingInput => "missing_input",
            Code::Untrusted => "untrusted",
            Code::TrustStoreUnavailable => "trust_store_unavailable",
            Code::UnresolvedVariable => "unresolved_variable",
            Code::UndeclaredInput => "undeclared_input",
            Code::UnsupportedReference => "unsupported_reference",
            Code::IgnoredInputs => "ignored_inputs",
            Code::IgnoredEnvFile => "ignored_env_file",
            Code::IgnoredField => "ignored_field",
            Code::UnstartableServer => "unstartable_server",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem (or warning) about one server.
///
/// `field` is a path in the store's JSON vocabulary for validation and
/// resolution (`transport.headers[1].key`, `transport.envVars[0]`, `timeout`),
/// so a UI editing the store can point at the form field; for problems found
/// while reading a document it is the JSON path inside that document
/// (`mcpServers.github.args[2]`). Validation of a server read from a host's
/// file names the field as that file wrote it, through the server's
/// [`crate::ServerConfig::origins`] (`mcpServers.github.env.GITHUB_TOKEN`
/// rather than `transport.env[0].value`). It is empty when the problem
/// concerns the whole document.
///
/// `line` and `column` (1-based, counted in characters) say where in the
/// file the field's value starts, or the object that lacks it, when the
/// diagnostic came from a file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// What kind of problem this is.
    pub code: Code,
    /// The server's id, when it is known.
    pub server: Option<String>,
    /// Where the problem is; see the type's documentation.
    pub field: String,
    /// What is wrong and how to fix it, for a person. Never contains a value
    /// that can be a secret (see the module documentation).
    pub message: String,
    /// The 1-based line of the field in its file, when known.
    pub line: Option<usize>,
    /// The 1-based column of the field in its file, when known.
    pub column: Option<usize>,
}

impl Diagnostic {
    /// A diagnostic.
    pub fn new(
        code: Code,
        server: Option<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            code,
            server,
            field: field.into(),
            message: message.into(),
            line: None,
            column: None,
        }
    }

    /// The same diagnostic, placed at `line` and `column` of its file.
    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// Where the field is, for a person: `mcpServers.github.command at
    /// line 4 column 18`, the field alone, the position alone, or empty.
    pub fn location(&self) -> String {
        match (self.field.is_empty(), self.line, self.column) {
            (true, Some(line), Some(column)) => format!("line {line} column {column}"),
            (false, Some(line), Some(column)) => {
                format!("{} at line {line} column {column}", self.field)
            }
            _ => self.field.clone(),
        }
    }

    /// The stable code string, e.g. `relative_cwd`.
    pub fn code(&self) -> &'static str {
        self.code.as_str()
    }

    /// One server's problems on one line, for an error message:
    /// `FIELD: message [code]; ...`, each located as
    /// [`Diagnostic::location`] says, without the server's name (the
    /// message around it names the server once).
    pub fn summary(diagnostics: &[Diagnostic]) -> String {
        diagnostics
            .iter()
            .map(|d| {
                let location = d.location();
                if location.is_empty() {
                    format!("{} [{}]", d.message, d.code)
                } else {
                    format!("{location}: {} [{}]", d.message, d.code)
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(server) = &self.server {
            write!(f, "server `{server}`: ")?;
        }
        let location = self.location();
        if !location.is_empty() {
            write!(f, "{location}: ")?;
        }
        write!(f, "{} [{}]", self.message, self.code)
    }
}

//! Validation: every problem in a server's configuration, each with a stable code and a field path.
//!
//! The rules:
//! an empty command, a relative cwd, a URL scheme other than http/https, URL
//! userinfo or fragment, header names repeated case-insensitively across
//! `headers` and `envHeaders`, `bearerTokenEnv` together with an
//! `Authorization` header, repeated ids, and fields of the other transport.
//! Validation never stops at the first problem, and no message quotes a value.
//!
//! Fields are named in the store's vocabulary (`transport.env[0].key`) and
//! then, for a server read from a host's file, translated through its
//! [`ServerConfig::origins`] into the path the file wrote, with the line and
//! column (`mcpServers.github.env["BAD=NAME"]` at line 5 column 20).
//!
//! A URL that contains `${VAR}` references cannot be judged before it is
//! resolved; its syntax is checked here and the URL rules run again in
//! [`crate::resolve`], with the same codes.

use std::path::Path;

use crate::diagnostic::{Code, Diagnostic};
use crate::expand::{check_references, has_references};
use crate::model::{
    HttpConfig, OAuthConfig, OAuthGrant, ServerConfig, StdioConfig, TransportConfig, TransportKind,
};
use crate::origins::Origins;
use crate::secret::SecretValue;

/// Every problem in one server's configuration; empty when it is valid.
///
/// ```
/// use mcp_config::{validate, ServerConfig, StdioConfig, TransportConfig};
///
/// let mut stdio = StdioConfig::new("");
/// stdio.cwd = Some("relative/dir".into());
/// let problems = validate(&ServerConfig::new("fs", TransportConfig::Stdio(stdio)));
/// let codes: Vec<_> = problems.iter().map(|d| (d.code(), d.field.as_str())).collect();
/// assert_eq!(codes, [("missing_command", "transport.command"), ("relative_cwd", "transport.cwd")]);
/// ```
pub fn validate(config: &ServerConfig) -> Vec<Diagnostic> {
    let mut v = Validator {
        server: (!config.id.trim().is_empty()).then(|| config.id.clone()),
        origins: &config.origins,
        out: Vec::new(),
    };
    if config.id.trim().is_empty() {
        v.push(Code::MissingId, "id", "give the server a nonempty id");
    }
    if config.name.trim().is_empty() {
        v.push(
            Code::MissingName,
            "name",
            "give the server a nonempty display name",
        );
    }
    if config.timeout_ms == Some(0) {
        v.push(
            Code::InvalidTimeout,
            "timeout",
            "a timeout of 0 ms can never be met; give milliseconds, or remove it to use the default",
        );
    }
    if config.call_timeout_ms == Some(0) {
        v.push(
            Code::InvalidTimeout,
            "callTimeout",
            "a tool-call timeout of 0 ms can never be met; give milliseconds, or remove it to use the default",
        );
    }
    let kind = config.transport.kind();
    for field in &config.misplaced_fields {
        let short = field.rsplit('.').next().unwrap_or(field);
        let (belongs, uses) = match kind {
            TransportKind::Stdio => ("an HTTP", "stdio"),
            TransportKind::Http => ("a stdio", "HTTP"),
            TransportKind::Sse => ("a stdio", "SSE"),
        };
        v.push(
            Code::WrongTransportField,
            field.clone(),
            format!(
                "`{short}` belongs to {belongs} server, but this server uses {uses}; \
                 remove it or change the transport type"
            ),
        );
    }
    match &config.transport {
        TransportConfig::Stdio(stdio) => v.stdio(stdio),
        TransportConfig::Http(http) | TransportConfig::Sse(http) => v.http(http),
    }
    let mut out = v.out;
    for diagnostic in &mut out {
        place(diagnostic, &config.origins);
    }
    out
}

/// Names `diagnostic`'s store field as the server's file wrote it, with its
/// position, when the server's origins know it.
fn place(diagnostic: &mut Diagnostic, origins: &Origins) {
    if let Some(origin) = origins.translate(&diagnostic.field) {
        diagnostic.field = origin.path;
        diagnostic.line = origin.line;
        diagnostic.column = origin.column;
    }
}

/// [`validate`] for each server, plus `duplicate_id` for every server whose
/// id an earlier one already uses.
///
/// ```
/// use mcp_config::{validate_all, HttpConfig, ServerConfig, TransportConfig};
///
/// let server = ServerConfig::new("api", TransportConfig::Http(HttpConfig::new("https://example.com/mcp")));
/// let problems = validate_all([&server, &server]);
/// assert_eq!(problems.len(), 1);
/// assert_eq!(problems[0].code(), "duplicate_id");
/// ```
pub fn validate_all<'a>(configs: impl IntoIterator<Item = &'a ServerConfig>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for config in configs {
        out.extend(validate(config));
        if seen.contains(&config.id.as_str()) {
            let mut duplicate = Diagnostic::new(
                Code::DuplicateId,
                Some(config.id.clone()),
                "id",
                format!(
                    "another server already uses the id `{}`; ids must be unique",
                    config.id
                ),
            );
            place(&mut duplicate, &config.origins);
            out.push(duplicate);
        } else {
            seen.push(&config.id);
        }
    }
    out
}

struct Validator<'o> {
    server: Option<String>,
    origins: &'o Origins,
    out: Vec<Diagnostic>,
}

impl Validator<'_> {
    /// How a message names another field: as written, when known.
    fn written(&self, field: &str) -> String {
        self.origins
            .translate(field)
            .map_or_else(|| field.to_owned(), |origin| origin.path)
    }

    fn push(&mut self, code: Code, field: impl Into<String>, message: impl Into<String>) {
        self.out
            .push(Diagnostic::new(code, self.server.clone(), field, message));
    }

    fn references(&mut self, text: &str, field: String) {
        if let Err(error) = check_references(text) {
            self.push(error.diagnostic_code(), field, error.to_string());
        }
    }

    fn stdio(&mut self, stdio: &StdioConfig) {
        if stdio.command.trim().is_empty() {
            self.push(
                Code::MissingCommand,
                "transport.command",
                "set the program to run, for example `npx` or an absolute path",
            );
        } else {
            self.references(&stdio.command, "transport.command".into());
        }
        for (index, arg) in stdio.args.iter().enumerate() {
            self.references(arg, format!("transport.args[{index}]"));
        }
        if let Some(cwd) = stdio.cwd.as_deref().filter(|cwd| !cwd.is_empty())
            && !Path::new(cwd).is_absolute()
        {
            self.push(
                Code::RelativeCwd,
                "transport.cwd",
                "the working directory must be an absolute path; \
                     leave it empty to inherit the host's launch directory",
            );
        }
        for (index, entry) in stdio.env.iter().enumerate() {
            let field = format!("transport.env[{index}]");
            if !is_env_name(&entry.key) {
                self.push(
                    Code::InvalidEnvKey,
                    format!("{field}.key"),
                    "an environment variable name must be nonempty and cannot contain `=` or NUL",
                );
            } else if let Some(first) = stdio.env[..index].iter().position(|e| e.key == entry.key) {
                let first = self.written(&format!("transport.env[{first}]"));
                self.push(
                    Code::DuplicateEnvKey,
                    format!("{field}.key"),
                    format!("`{}` is already set by {first}; keep one", entry.key),
                );
            }
            if let SecretValue::Literal(value) = &entry.value {
                self.references(value.expose(), format!("{field}.value"));
            }
        }
        for (index, name) in stdio.env_passthrough.iter().enumerate() {
            if !is_env_name(name) {
                self.push(
                    Code::InvalidEnvName,
                    format!("transport.envVars[{index}]"),
                    "a passed-through variable name must be nonempty and cannot contain `=` or NUL",
                );
            }
        }
    }

    fn http(&mut self, http: &HttpConfig) {
        if http.url.trim().is_empty() {
            self.push(
                Code::MissingUrl,
                "transport.url",
                "set the server's URL, for example https://example.com/mcp",
            );
        } else if has_references(&http.url) {
            self.references(&http.url, "transport.url".into());
        } else {
            check_url(
                &http.url,
                self.server.clone(),
                "transport.url",
                &mut self.out,
            );
        }
        // (lowercased name, field path) of every header set so far, in order.
        let mut names: Vec<(String, String)> = Vec::new();
        for (index, header) in http.headers.iter().enumerate() {
            let field = format!("transport.headers[{index}]");
            self.header_name(&header.key, &field, &mut names);
            if let SecretValue::Literal(value) = &header.value {
                if has_forbidden_header_bytes(value.expose()) {
                    self.push(
                        Code::InvalidHeaderValue,
                        format!("{field}.value"),
                        format!(
                            "the value of header `{}` cannot contain line breaks or NUL",
                            header.key
                        ),
                    );
                }
                self.references(value.expose(), format!("{field}.value"));
            }
        }
        for (index, header) in http.env_headers.iter().enumerate() {
            let field = format!("transport.envHeaders[{index}]");
            self.header_name(&header.header, &field, &mut names);
            if !is_env_name(&header.var) {
                self.push(
                    Code::InvalidEnvName,
                    format!("{field}.value"),
                    "the variable name must be nonempty and cannot contain `=` or NUL",
                );
            }
        }
        if let Some(var) = &http.bearer_token_env {
            if !is_env_name(var) {
                self.push(
                    Code::InvalidEnvName,
                    "transport.bearerTokenEnv",
                    "the variable name must be nonempty and cannot contain `=` or NUL",
                );
            }
            if let Some((_, field)) = names.iter().find(|(name, _)| name == "authorization") {
                let field = self.written(field);
                self.push(
                    Code::BearerWithAuthorizationHeader,
                    "transport.bearerTokenEnv",
                    format!(
                        "`bearerTokenEnv` sets the Authorization header, which {field} also sets; keep one"
                    ),
                );
            }
        }
        if let Some(oauth) = &http.oauth {
            self.oauth(oauth);
        }
    }

    /// SEP-1933: the `jwt_bearer` grant reads the workload's JWT from
    /// exactly one place, a file given by an absolute path (a relative one
    /// would depend on where the host happens to run) or a variable; the
    /// other grants read none.
    fn jwt_bearer(&mut self, oauth: &OAuthConfig) {
        let (file, env) = (&oauth.assertion_file, &oauth.assertion_env);
        if oauth.grant != OAuthGrant::JwtBearer {
            for (set, field) in [
                (file.is_some(), "transport.oauth.assertionFile"),
                (env.is_some(), "transport.oauth.assertionEnv"),
            ] {
                if set {
                    self.push(
                        Code::OAuthJwtBearerIncomplete,
                        field,
                        "only the jwt_bearer grant reads a workload token: set `oauth.grant` to `jwt_bearer`, or remove this field",
                    );
                }
            }
            return;
        }
        match (file, env) {
            (None, None) => self.push(
                Code::OAuthJwtBearerIncomplete,
                "transport.oauth",
                "the jwt_bearer grant needs the workload's token: set `oauth.assertionFile` to the file that holds it, or `oauth.assertionEnv` to the variable that does",
            ),
            (Some(_), Some(_)) => self.push(
                Code::OAuthJwtBearerIncomplete,
                "transport.oauth.assertionEnv",
                "the workload's token is read from one place: keep `oauth.assertionFile` or `oauth.assertionEnv`, not both",
            ),
            (Some(path), None) if !std::path::Path::new(path).is_absolute() => self.push(
                Code::OAuthJwtBearerIncomplete,
                "transport.oauth.assertionFile",
                "the workload token file must be given by an absolute path",
            ),
            (None, Some(var)) if var.trim().is_empty() => self.push(
                Code::OAuthJwtBearerIncomplete,
                "transport.oauth.assertionEnv",
                "the workload token variable is empty; name the variable that holds the token",
            ),
            _ => {}
        }
    }

    fn oauth(&mut self, oauth: &OAuthConfig) {
        match &oauth.client_id {
            Some(id) if id.trim().is_empty() => self.push(
                Code::InvalidOAuthClientId,
                "transport.oauth.clientId",
                "the client id is empty; set the id the authorization server issued, or remove it",
            ),
            Some(_) => {}
            None if oauth.client_secret_env.is_some() => self.push(
                Code::OAuthSecretWithoutClientId,
                "transport.oauth.clientSecretEnv",
                "a client secret belongs to a pre-registered client: set `oauth.clientId` too",
            ),
            None => {}
        }
        if let Some(var) = &oauth.client_secret_env
            && !is_env_name(var)
        {
            self.push(
                Code::InvalidEnvName,
                "transport.oauth.clientSecretEnv",
                "the variable name must be nonempty and cannot contain `=` or NUL",
            );
        }
        for (index, scope) in oauth.scopes.iter().enumerate() {
            // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
            let token = !scope.is_empty()
                && scope
                    .bytes()
                    .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
            if !token {
                self.push(
                    Code::InvalidOAuthScope,
                    format!("transport.oauth.scopes[{index}]"),
                    "a scope must be nonempty, one word, without quotes or backslashes",
                );
            }
        }
        if let Some(url) = &oauth.client_metadata_url
            && !is_client_metadata_url(url)
        {
            self.push(
                Code::InvalidClientMetadataUrl,
                "transport.oauth.clientMetadataUrl",
                "the client metadata document URL must be https (or http on a loopback host), \
                 with a path and without a fragment",
            );
        }
        // RFC 6749 §4.4: the client credentials grant is only for a
        // confidential client, which authenticates with its own
        // credentials; without them no token can ever be obtained.
        if oauth.grant == OAuthGrant::ClientCredentials {
            if oauth.client_id.is_none() {
                self.push(
                    Code::OAuthClientCredentialsIncomplete,
                    "transport.oauth.clientId",
                    "the client_credentials grant needs a pre-registered client: set \
                     `oauth.clientId` to the id the authorization server issued",
                );
            }
            if oauth.client_secret_env.is_none() {
                self.push(
                    Code::OAuthClientCredentialsIncomplete,
                    "transport.oauth.clientSecretEnv",
                    "the client_credentials grant needs the client's secret: set \
                     `oauth.clientSecretEnv` to the environment variable that holds it",
                );
            }
        }
        self.jwt_bearer(oauth);
        if oauth.redirect_port == Some(0) {
            self.push(
                Code::InvalidRedirectPort,
                "transport.oauth.redirectPort",
                "the redirect port must be from 1 to 65535; remove it to use any free port",
            );
        }
    }

    fn header_name(&mut self, name: &str, field: &str, names: &mut Vec<(String, String)>) {
        if !is_header_name(name) {
            // The name is not echoed: a value pasted into the name field
            // would otherwise be shown.
            self.push(
                Code::InvalidHeaderName,
                format!("{field}.key"),
                "a header name must be nonempty and use only letters, digits and !#$%&'*+-.^_`|~",
            );
            return;
        }
        let lower = name.to_ascii_lowercase();
        if let Some((_, first)) = names.iter().find(|(seen, _)| *seen == lower) {
            let first = self.written(first);
            self.push(
                Code::DuplicateHeader,
                format!("{field}.key"),
                format!(
                    "header `{name}` is already set by {first}; header names are compared ignoring case"
                ),
            );
        } else {
            names.push((lower, format!("{field}.key")));
        }
    }
}

/// The URL rules: http or https, no userinfo, no fragment.
/// Shared with resolution, which applies them to expanded URLs. Messages
/// never repeat the URL: it may hold a password.
#[cfg(feature = "http")]
pub(crate) fn check_url(url: &str, server: Option<String>, field: &str, out: &mut Vec<Diagnostic>) {
    let mut push = |code, message: String| {
        out.push(Diagnostic::new(code, server.clone(), field, message));
    };
    let parsed = match url::Url::parse(url) {
        Ok(parsed) => parsed,
        Err(error) => {
            push(
                Code::InvalidUrl,
                format!("the URL does not parse ({error}); write it like https://example.com/mcp"),
            );
            return;
        }
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        push(
            Code::BadUrlScheme,
            format!(
                "the URL scheme must be http or https, not `{}`",
                parsed.scheme()
            ),
        );
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        push(
            Code::UrlUserinfo,
            String::from(
                "remove the user name and password from the URL; send credentials with \
                 `bearerTokenEnv`, `headers` or `envHeaders`",
            ),
        );
    }
    if parsed.fragment().is_some() {
        push(
            Code::UrlFragment,
            String::from("remove the `#` fragment from the URL: it is never sent to the server"),
        );
    }
}

/// The URL rules need the WHATWG parser of the `http` feature. A build
/// without it connects no HTTP or SSE server (mcp-manager's `http` turns
/// this feature on), so its URL is taken as written.
#[cfg(not(feature = "http"))]
pub(crate) fn check_url(_: &str, _: Option<String>, _: &str, _: &mut Vec<Diagnostic>) {}

/// A client ID metadata document URL (MCP 2025-11-25): `https` with a
/// path; `http` is allowed on loopback hosts, for local development.
/// Without the `http` feature (no OAuth either) it is taken as written.
#[cfg(not(feature = "http"))]
fn is_client_metadata_url(_: &str) -> bool {
    true
}

/// A client ID metadata document URL (MCP 2025-11-25): `https` with a
/// path; `http` is allowed on loopback hosts, for local development.
#[cfg(feature = "http")]
fn is_client_metadata_url(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url) else {
        return false;
    };
    let loopback = matches!(parsed.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    let scheme_ok = parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback);
    scheme_ok
        && parsed.fragment().is_none()
        && parsed.username().is_empty()
        && parsed.password().is_none()
        && parsed.path() != "/"
}

/// RFC 9110 §5.1: a field name is a `token`.
pub(crate) fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// CR and LF would split the header (request smuggling); NUL is refused by
/// every HTTP stack.
pub(crate) fn has_forbidden_header_bytes(value: &str) -> bool {
    value.contains(['\r', '\n', '\0'])
}

/// What a process environment can hold as a name.
pub(crate) fn is_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::parse_store_server;

    /// Validates a server given in the store's JSON shape and renders every
    /// diagnostic as `code field`.
    fn check(server_json: &str, expected: &[&str]) {
        let config = parse_store_server(server_json).expect("test input parses");
        let got: Vec<String> = validate(&config)
            .iter()
            .map(|d| format!("{} {}", d.code(), d.field))
            .collect();
        assert_eq!(got, expected, "{server_json}");
    }

    fn stdio(transport: &str) -> String {
        format!(r#"{{"id": "s", "name": "S", "transport": {{"type": "stdio", {transport}}}}}"#)
    }

    fn http(transport: &str) -> String {
        format!(r#"{{"id": "s", "name": "S", "transport": {{"type": "http", {transport}}}}}"#)
    }

    #[test]
    fn valid_servers_have_no_diagnostics() {
        check(
            &stdio(r#""command": "npx", "args": ["-y", "${PKG:-x}"], "cwd": "/srv""#),
            &[],
        );
        check(&stdio(r#""command": "npx", "cwd": """#), &[]);
        check(
            &http(
                r#""url": "https://example.com/mcp?x=1", "bearerTokenEnv": "TOKEN",
                   "headers": [{"key": "X-A", "value": "1"}], "envHeaders": [{"key": "X-B", "value": "B"}]"#,
            ),
            &[],
        );
        check(&http(r#""url": "${BASE_URL}/mcp""#), &[]);
    }

    #[test]
    fn stdio_problems_are_all_reported() {
        check(
            &stdio(
                r#""command": " ", "cwd": "rel", "args": ["${"],
                   "env": [{"key": "A", "value": "1"}, {"key": "", "value": "2"}, {"key": "A", "value": "3"}],
                   "envVars": ["OK", "BAD=1"]"#,
            ),
            &[
                "missing_command transport.command",
                "invalid_reference transport.args[0]",
                "relative_cwd transport.cwd",
                "invalid_env_key transport.env[1].key",
                "duplicate_env_key transport.env[2].key",
                "invalid_env_name transport.envVars[1]",
            ],
        );
    }

    // Needs the URL checks (or normal form) of the `http` feature.
    #[cfg(feature = "http")]
    #[test]
    fn url_rules() {
        check(
            &http(r#""url": "ftp://example.com""#),
            &["bad_url_scheme transport.url"],
        );
        check(
            &http(r#""url": "https://u:p@example.com/""#),
            &["url_userinfo transport.url"],
        );
        check(
            &http(r#""url": "https://u@example.com/""#),
            &["url_userinfo transport.url"],
        );
        check(
            &http(r#""url": "https://example.com/#x""#),
            &["url_fragment transport.url"],
        );
        check(
            &http(r#""url": "ws://u@host/#x""#),
            &[
                "bad_url_scheme transport.url",
                "url_userinfo transport.url",
                "url_fragment transport.url",
            ],
        );
        check(
            &http(r#""url": "example.com/mcp""#),
            &["invalid_url transport.url"],
        );
        check(&http(r#""url": """#), &["missing_url transport.url"]);
        check(
            &http(r#""url": "${BASE""#),
            &["invalid_reference transport.url"],
        );
    }

    #[test]
    fn header_rules() {
        check(
            &http(
                r#""url": "https://e.com", "bearerTokenEnv": "TOKEN",
                   "headers": [{"key": "authorization", "value": "x"}, {"key": "X-Key", "value": "a\nb"},
                               {"key": "Bad Name", "value": "v"}],
                   "envHeaders": [{"key": "x-key", "value": "K"}, {"key": "X-Other", "value": ""}]"#,
            ),
            &[
                "invalid_header_value transport.headers[1].value",
                "invalid_header_name transport.headers[2].key",
                "duplicate_header transport.envHeaders[0].key",
                "invalid_env_name transport.envHeaders[1].value",
                "bearer_with_authorization_header transport.bearerTokenEnv",
            ],
        );
        check(
            &http(
                r#""url": "https://e.com", "bearerTokenEnv": "T",
                   "envHeaders": [{"key": "Authorization", "value": "AUTH"}]"#,
            ),
            &["bearer_with_authorization_header transport.bearerTokenEnv"],
        );
    }

    #[test]
    fn wrong_transport_fields_and_server_fields() {
        check(
            r#"{"id": " ", "name": "", "timeout": 0,
                "transport": {"type": "stdio", "command": "x", "url": "https://e.com", "headers": []}}"#,
            &[
                "missing_id id",
                "missing_name name",
                "invalid_timeout timeout",
                "wrong_transport_field transport.url",
                "wrong_transport_field transport.headers",
            ],
        );
        check(
            r#"{"id": "s", "transport": {"type": "sse", "url": "https://e.com", "command": "x", "cwd": ""}}"#,
            &[
                "wrong_transport_field transport.command",
                "wrong_transport_field transport.cwd",
            ],
        );
    }

    // Needs the URL checks (or normal form) of the `http` feature.
    #[cfg(feature = "http")]
    #[test]
    fn messages_never_quote_secret_values() {
        let config = parse_store_server(
            r#"{"id": "s", "transport": {"type": "http", "url": "https://user:sk-SECRET@e.com/#sk-SECRET",
                "headers": [{"key": "X", "value": "sk-SECRET\r\n${"}, {"key": "sk-SECRET: v", "value": "v"}]}}"#,
        )
        .unwrap();
        let problems = validate(&config);
        assert_eq!(problems.len(), 5, "{problems:#?}");
        for problem in problems {
            assert!(!problem.to_string().contains("SECRET"), "{problem}");
        }
    }
}

//! Resolution: turning a validated server into exactly what a transport needs, with `${VAR}` expanded.
//!
//! References are resolved when a server connects,
//! from the host process's environment; a missing variable fails that server
//! (`missing_env`, naming the variable) and no other. `envVars`,
//! `bearerTokenEnv` and `envHeaders` name variables too, and are resolved
//! here by the same rule, so a transport never reads the environment itself.
//!
//! `${input:ID}` references are answered by the environment's
//! [`InputProvider`](crate::InputProvider) (see [`crate::WithInputs`]), once
//! per input per resolution, with the server's declared [`InputPrompt`] (a
//! bare prompt naming `ID` when the server declares none). Without a
//! provider, or without an answer, the server fails with `missing_input`
//! naming the input: never an empty string in its place.

use std::path::PathBuf;

use crate::diagnostic::{Code, Diagnostic};
use crate::expand::{Environment, ExpandError, expand_with, has_references, referenced_inputs};
use crate::model::{
    HttpConfig, InputPrompt, OAuthGrant, ProtocolEra, ServerConfig, StdioConfig, TransportConfig,
};
use crate::secret::{Secret, SecretValue};
use crate::validate::{check_url, has_forbidden_header_bytes, validate};

/// A server ready to connect: every reference expanded, every variable read.
///
/// `Debug` redacts env and header values.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolvedConfig {
    /// The server's id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The initialize deadline override, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Which protocol era to speak: detected ([`ProtocolEra::Auto`]) or
    /// pinned. A connection hands it to the client session it opens.
    pub era: ProtocolEra,
    /// What to connect to.
    pub transport: ResolvedTransport,
}

/// A resolved transport.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolvedTransport {
    /// Spawn a process.
    Stdio(ResolvedStdio),
    /// Streamable HTTP.
    Http(ResolvedHttp),
    /// Legacy HTTP+SSE.
    Sse(ResolvedHttp),
}

/// A process to spawn, directly and without a shell.
///
/// `Debug` shows how many arguments there are, not what they are (a
/// command line often carries an API key), and env values redacted.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolvedStdio {
    /// The program.
    pub command: String,
    /// Its arguments, as given.
    pub args: Vec<String>,
    /// Variables to set on top of the transport's minimal platform
    /// environment: the passed-through `envVars` first, then the literal
    /// `env` values, which override them. One entry per name.
    pub env: Vec<(String, Secret)>,
    /// The working directory; `None` inherits the host's launch directory.
    pub cwd: Option<PathBuf>,
}

/// An HTTP endpoint and the headers to send with every request.
///
/// `Debug` shows the URL's scheme and host only (its path or query may
/// hold a token), and header values redacted.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolvedHttp {
    /// The endpoint, checked against the URL rules after expansion.
    pub url: String,
    /// Static headers, then `envHeaders`, then `Authorization: Bearer ...`
    /// from `bearerTokenEnv`. Names are unique ignoring case.
    pub headers: Vec<(String, Secret)>,
    /// The configured OAuth client settings, the secret read from its
    /// variable. `None` when the configuration has no `oauth` object.
    pub oauth: Option<ResolvedOAuth>,
}

impl std::fmt::Debug for ResolvedStdio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedStdio")
            .field("command", &self.command)
            .field("args", &crate::secret::args_for_debug(&self.args))
            .field("env", &self.env)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl std::fmt::Debug for ResolvedHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedHttp")
            .field("url", &crate::secret::url_for_debug(&self.url))
            .field("headers", &self.headers)
            .field("oauth", &self.oauth)
            .finish()
    }
}

/// OAuth client settings ready to use: `clientSecretEnv` read.
///
/// `Debug` redacts the secret.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolvedOAuth {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// The pre-registered client's secret, from `clientSecretEnv`.
    pub client_secret: Option<Secret>,
    /// Scopes to ask for; empty lets the server decide.
    pub scopes: Vec<String>,
    /// The client ID metadata document URL.
    pub client_metadata_url: Option<String>,
    /// The loopback port for an interactive login's redirect.
    pub redirect_port: Option<u16>,
    /// The grant that obtains tokens.
    pub grant: OAuthGrant,
    /// Where the workload's JWT is read for the `jwt_bearer` grant (the
    /// file or the variable, as configured; it is read only when a token is
    /// requested, so the JWT is never part of the resolved settings).
    pub assertion: Option<AssertionSource>,
}

/// Where the workload's JWT of the `jwt_bearer` grant is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AssertionSource {
    /// `oauth.assertionFile`.
    File(std::path::PathBuf),
    /// `oauth.assertionEnv`.
    Env(String),
}

/// Why a server cannot connect: every problem found, validation's and
/// resolution's. The message names variables and fields, never values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("server `{server}` cannot connect: {}", Diagnostic::summary(problems))]
#[non_exhaustive]
pub struct ResolveError {
    /// The server's id.
    pub server: String,
    /// Every problem, in field order; never empty.
    pub problems: Vec<Diagnostic>,
    /// The variables that were not set, in the order they were needed.
    pub missing_env: Vec<String>,
    /// The `${input:ID}` prompts nobody answered, by id, each once.
    pub missing_inputs: Vec<String>,
}

impl ResolveError {
    /// The code of the first problem, e.g. `missing_env`.
    pub fn code(&self) -> &'static str {
        self.problems
            .first()
            .map_or(Code::MissingEnv.as_str(), Diagnostic::code)
    }

    /// The names of the variables that were not set.
    pub fn missing_variables(&self) -> &[String] {
        &self.missing_env
    }

    /// The ids of the input prompts nobody answered.
    pub fn missing_inputs(&self) -> &[String] {
        &self.missing_inputs
    }
}

/// Validates `config` and resolves it against `env`.
///
/// ```
/// use std::collections::HashMap;
/// use mcp_config::{resolve, HttpConfig, ResolvedTransport, ServerConfig, TransportConfig};
///
/// let mut http = HttpConfig::new("https://${HOST:-example.com}/mcp");
/// http.bearer_token_env = Some("API_TOKEN".into());
/// let config = ServerConfig::new("api", TransportConfig::Http(http));
///
/// let env = HashMap::from([("API_TOKEN".to_owned(), "t0k3n".to_owned())]);
/// let resolved = resolve(&config, &env)?;
/// let ResolvedTransport::Http(http) = &resolved.transport else { unreachable!() };
/// assert_eq!(http.url, "https://example.com/mcp");
/// assert_eq!(http.headers[0].0, "Authorization");
/// assert_eq!(http.headers[0].1.expose(), "Bearer t0k3n");
///
/// let error = resolve(&config, &HashMap::new()).unwrap_err();
/// assert_eq!(error.code(), "missing_env");
/// assert_eq!(error.missing_variables(), ["API_TOKEN"]);
/// # Ok::<(), mcp_config::ResolveError>(())
/// ```
pub fn resolve<E: Environment + ?Sized>(
    config: &ServerConfig,
    env: &E,
) -> Result<ResolvedConfig, ResolveError> {
    let problems = validate(config);
    if !problems.is_empty() {
        return Err(ResolveError {
            server: config.id.clone(),
            problems,
            missing_env: Vec::new(),
            missing_inputs: Vec::new(),
        });
    }
    let mut r = Resolver {
        env,
        server: Some(config.id.clone()),
        inputs: &config.inputs,
        answers: Vec::new(),
        problems: Vec::new(),
        missing: Vec::new(),
        missing_inputs: Vec::new(),
    };
    let transport = match &config.transport {
        TransportConfig::Stdio(stdio) => ResolvedTransport::Stdio(r.stdio(stdio)),
        TransportConfig::Http(http) => ResolvedTransport::Http(r.http(http)),
        TransportConfig::Sse(http) => ResolvedTransport::Sse(r.http(http)),
    };
    if !r.problems.is_empty() {
        return Err(ResolveError {
            server: config.id.clone(),
            problems: r.problems,
            missing_env: r.missing,
            missing_inputs: r.missing_inputs,
        });
    }
    Ok(ResolvedConfig {
        id: config.id.clone(),
        name: config.name.clone(),
        timeout_ms: config.timeout_ms,
        era: config.era,
        transport,
    })
}

/// The input prompts `config`'s strings reference as `${input:ID}` (command,
/// args, env values, URL, header values), in the order resolution asks
/// them, each once: the declared [`InputPrompt`] or, when the server
/// declares none for an id, a bare prompt naming it. A host that asks
/// before connecting (rather than from inside [`resolve`]) asks these.
///
/// ```
/// use mcp_config::{input_prompts, InputPrompt, ServerConfig, StdioConfig, TransportConfig};
///
/// let mut stdio = StdioConfig::new("srv");
/// stdio.args = vec!["${input:b}".into(), "${input:a}-${input:b}".into()];
/// let mut config = ServerConfig::new("s", TransportConfig::Stdio(stdio));
/// let mut declared = InputPrompt::new("a");
/// declared.password = true;
/// config.inputs = vec![declared.clone(), InputPrompt::new("unused")];
/// assert_eq!(input_prompts(&config), [InputPrompt::new("b"), declared]);
/// ```
pub fn input_prompts(config: &ServerConfig) -> Vec<InputPrompt> {
    let mut texts: Vec<&str> = Vec::new();
    match &config.transport {
        TransportConfig::Stdio(stdio) => {
            texts.push(&stdio.command);
            texts.extend(stdio.args.iter().map(String::as_str));
            texts.extend(
                stdio
                    .env
                    .iter()
                    .filter_map(|e| e.value.as_literal().map(Secret::expose)),
            );
        }
        TransportConfig::Http(http) | TransportConfig::Sse(http) => {
            texts.push(&http.url);
            texts.extend(
                http.headers
                    .iter()
                    .filter_map(|h| h.value.as_literal().map(Secret::expose)),
            );
        }
    }
    let mut prompts: Vec<InputPrompt> = Vec::new();
    for id in texts.into_iter().flat_map(referenced_inputs) {
        if prompts.iter().any(|prompt| prompt.id == id) {
            continue;
        }
        let prompt = config
            .inputs
            .iter()
            .find(|prompt| prompt.id == id)
            .cloned()
            .unwrap_or_else(|| InputPrompt::new(id));
        prompts.push(prompt);
    }
    prompts
}

struct Resolver<'a, E: ?Sized> {
    env: &'a E,
    server: Option<String>,
    /// The server's declared prompts.
    inputs: &'a [InputPrompt],
    /// Every input asked for so far, with its answer (`None`: unanswered),
    /// so that each is asked once.
    answers: Vec<(String, Option<Secret>)>,
    problems: Vec<Diagnostic>,
    missing: Vec<String>,
    missing_inputs: Vec<String>,
}

impl<E: Environment + ?Sized> Resolver<'_, E> {
    fn push(&mut self, code: Code, field: impl Into<String>, message: impl Into<String>) {
        self.problems
            .push(Diagnostic::new(code, self.server.clone(), field, message));
    }

    fn report_missing(&mut self, name: &str, field: impl Into<String>, what: &str) {
        self.missing.push(name.to_owned());
        self.push(
            Code::MissingEnv,
            field,
            format!("environment variable `{name}` {what} is not set in the host's environment"),
        );
    }

    /// Expands `text`; on failure records the problem and yields an empty
    /// string so that resolution goes on and reports everything.
    fn expand(&mut self, text: &str, field: String) -> String {
        let env = self.env;
        let server = self.server.clone().unwrap_or_default();
        let inputs = self.inputs;
        let answers = &mut self.answers;
        let mut answer = |id: &str| {
            if let Some((_, known)) = answers.iter().find(|(asked, _)| asked == id) {
                return known.clone();
            }
            let prompt = inputs
                .iter()
                .find(|prompt| prompt.id == id)
                .cloned()
                .unwrap_or_else(|| InputPrompt::new(id));
            let value = env
                .input_provider()
                .and_then(|provider| provider.answer(&server, &prompt));
            answers.push((id.to_owned(), value.clone()));
            value
        };
        match expand_with(text, env, &mut answer) {
            Ok(value) => value,
            Err(ExpandError::MissingInput { id }) => {
                if !self.missing_inputs.contains(&id) {
                    self.missing_inputs.push(id.clone());
                }
                let why = if self.env.input_provider().is_some() {
                    "was not answered"
                } else {
                    "needs an answer, and this host has nobody to ask"
                };
                self.push(
                    Code::MissingInput,
                    field,
                    format!("input `{id}` (`${{input:{id}}}`) {why}"),
                );
                String::new()
            }
            Err(ExpandError::MissingEnv { name }) => {
                self.missing.push(name.clone());
                self.push(
                    Code::MissingEnv,
                    field,
                    format!(
                        "environment variable `{name}` is not set and the reference has no default; \
                         set it or write `${{{name}:-default}}`"
                    ),
                );
                String::new()
            }
            Err(error) => {
                self.push(error.diagnostic_code(), field, error.to_string());
                String::new()
            }
        }
    }

    fn stdio(&mut self, stdio: &StdioConfig) -> ResolvedStdio {
        let command = self.expand(&stdio.command, "transport.command".into());
        let args = stdio
            .args
            .iter()
            .enumerate()
            .map(|(index, arg)| self.expand(arg, format!("transport.args[{index}]")))
            .collect();
        let mut env: Vec<(String, Secret)> = Vec::new();
        for (index, name) in stdio.env_passthrough.iter().enumerate() {
            match self.env.var(name) {
                Some(value) => set(&mut env, name, value),
                None => self.report_missing(
                    name,
                    format!("transport.envVars[{index}]"),
                    "listed in `envVars`",
                ),
            }
        }
        for (index, entry) in stdio.env.iter().enumerate() {
            let field = format!("transport.env[{index}].value");
            match &entry.value {
                SecretValue::Literal(value) => {
                    let value = self.expand(value.expose(), field);
                    set(&mut env, &entry.key, value);
                }
                SecretValue::Saved => self.saved_unavailable(&entry.key, field),
            }
        }
        ResolvedStdio {
            command,
            args,
            env,
            cwd: stdio
                .cwd
                .as_deref()
                .filter(|cwd| !cwd.is_empty())
                .map(PathBuf::from),
        }
    }

    fn http(&mut self, http: &HttpConfig) -> ResolvedHttp {
        let url = self.expand(&http.url, "transport.url".into());
        if has_references(&http.url) && !url.is_empty() {
            check_url(
                &url,
                self.server.clone(),
                "transport.url",
                &mut self.problems,
            );
        }
        let mut headers: Vec<(String, Secret)> = Vec::new();
        for (index, header) in http.headers.iter().enumerate() {
            let field = format!("transport.headers[{index}].value");
            match &header.value {
                SecretValue::Literal(value) => {
                    let value = self.expand(value.expose(), field.clone());
                    self.header(&mut headers, &header.key, value, field);
                }
                SecretValue::Saved => self.saved_unavailable(&header.key, field),
            }
        }
        for (index, header) in http.env_headers.iter().enumerate() {
            let field = format!("transport.envHeaders[{index}].value");
            match self.env.var(&header.var) {
                Some(value) => self.header(&mut headers, &header.header, value, field),
                None => self.report_missing(
                    &header.var,
                    field,
                    &format!("for header `{}`", header.header),
                ),
            }
        }
        if let Some(var) = &http.bearer_token_env {
            match self.env.var(var).filter(|token| !token.is_empty()) {
                Some(token) => self.header(
                    &mut headers,
                    "Authorization",
                    format!("Bearer {token}"),
                    String::from("transport.bearerTokenEnv"),
                ),
                None => self.report_missing(
                    var,
                    "transport.bearerTokenEnv",
                    "(the bearer token) is empty or",
                ),
            }
        }
        let oauth = http.oauth.as_ref().map(|oauth| {
            let client_secret = oauth.client_secret_env.as_ref().and_then(|var| {
                match self.env.var(var).filter(|secret| !secret.is_empty()) {
                    Some(secret) => Some(Secret::new(secret)),
                    None => {
                        self.report_missing(
                            var,
                            "transport.oauth.clientSecretEnv",
                            "(the OAuth client secret) is empty or",
                        );
                        None
                    }
                }
            });
            ResolvedOAuth {
                client_id: oauth.client_id.clone(),
                client_secret,
                scopes: oauth.scopes.clone(),
                client_metadata_url: oauth.client_metadata_url.clone(),
                redirect_port: oauth.redirect_port,
                grant: oauth.grant,
                assertion: match (&oauth.assertion_file, &oauth.assertion_env) {
                    (Some(path), _) => Some(AssertionSource::File(path.into())),
                    (None, Some(var)) => Some(AssertionSource::Env(var.clone())),
                    (None, None) => None,
                },
            }
        });
        ResolvedHttp {
            url,
            headers,
            oauth,
        }
    }

    /// A value from the environment can bring a line break that validation
    /// could not see; it would split the header.
    fn header(
        &mut self,
        headers: &mut Vec<(String, Secret)>,
        name: &str,
        value: String,
        field: String,
    ) {
        if has_forbidden_header_bytes(&value) {
            self.push(
                Code::InvalidHeaderValue,
                field,
                format!(
                    "the value of header `{name}` contains a line break or NUL after expansion"
                ),
            );
            return;
        }
        headers.push((name.to_owned(), Secret::new(value)));
    }

    fn saved_unavailable(&mut self, key: &str, field: String) {
        self.push(
            Code::SavedSecretUnavailable,
            field,
            format!(
                "`{key}` is marked as saved but carries no value; resolve the server as loaded \
                 from the store, or enter the value again"
            ),
        );
    }
}

/// Sets `name` in an ordered environment, replacing an earlier value in place.
fn set(env: &mut Vec<(String, Secret)>, name: &str, value: String) {
    match env.iter_mut().find(|(existing, _)| existing == name) {
        Some((_, slot)) => *slot = Secret::new(value),
        None => env.push((name.to_owned(), Secret::new(value))),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::format::parse_store_server;

    fn env() -> HashMap<String, String> {
        HashMap::from([
            ("HOME".to_owned(), "/home/u".to_owned()),
            ("TOKEN".to_owned(), "sk-SECRET".to_owned()),
            ("PASS".to_owned(), "from-env".to_owned()),
            ("NEWLINE".to_owned(), "a\r\nInjected: 1".to_owned()),
            ("EMPTY".to_owned(), String::new()),
        ])
    }

    fn resolve_json(server: &str) -> Result<ResolvedConfig, ResolveError> {
        resolve(&parse_store_server(server).unwrap(), &env())
    }

    #[test]
    fn stdio_env_passthrough_then_literals() {
        let resolved = resolve_json(
            r#"{"id": "s", "transport": {"type": "stdio", "command": "${HOME}/bin/srv",
                "args": ["--token=${TOKEN}", "$${LITERAL}"], "envVars": ["PASS", "HOME"],
                "env": [{"key": "PASS", "value": "override"}, {"key": "X", "value": "${MISSING:-d}"}],
                "cwd": "/tmp"}}"#,
        )
        .unwrap();
        let ResolvedTransport::Stdio(stdio) = resolved.transport else {
            panic!("stdio expected")
        };
        assert_eq!(stdio.command, "/home/u/bin/srv");
        assert_eq!(stdio.args, ["--token=sk-SECRET", "${LITERAL}"]);
        let env: Vec<(&str, &str)> = stdio
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.expose()))
            .collect();
        assert_eq!(env, [("PASS", "override"), ("HOME", "/home/u"), ("X", "d")]);
        assert_eq!(stdio.cwd, Some(PathBuf::from("/tmp")));
    }

    #[test]
    fn every_missing_variable_is_reported() {
        let error = resolve_json(
            r#"{"id": "s", "transport": {"type": "http", "url": "https://${NO_HOST}/",
                "bearerTokenEnv": "EMPTY", "envHeaders": [{"key": "X-K", "value": "NO_KEY"}],
                "headers": [{"key": "X-A", "value": "${NO_A}"}]}}"#,
        )
        .unwrap_err();
        assert_eq!(error.code(), "missing_env");
        assert_eq!(
            error.missing_variables(),
            ["NO_HOST", "NO_A", "NO_KEY", "EMPTY"]
        );
        let fields: Vec<&str> = error.problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "transport.url",
                "transport.headers[0].value",
                "transport.envHeaders[0].value",
                "transport.bearerTokenEnv"
            ]
        );
    }

    // Needs the URL checks (or normal form) of the `http` feature.
    #[cfg(feature = "http")]
    #[test]
    fn expanded_values_are_checked_again() {
        let error = resolve_json(
            r#"{"id": "s", "transport": {"type": "http", "url": "ftp://${HOME}#frag",
                "headers": [{"key": "X-A", "value": "${NEWLINE}"}]}}"#,
        )
        .unwrap_err();
        let codes: Vec<&str> = error.problems.iter().map(Diagnostic::code).collect();
        assert_eq!(
            codes,
            ["bad_url_scheme", "url_fragment", "invalid_header_value"]
        );
        assert!(!error.to_string().contains("Injected"), "{error}");
    }

    #[test]
    fn invalid_configs_fail_with_validation_codes() {
        let error = resolve_json(r#"{"id": "s", "transport": {"type": "stdio", "command": ""}}"#)
            .unwrap_err();
        assert_eq!(error.code(), "missing_command");
    }

    #[test]
    fn saved_markers_cannot_be_resolved() {
        let error = resolve_json(
            r#"{"id": "s", "transport": {"type": "stdio", "command": "x",
                "env": [{"key": "K", "value": "", "saved": true}]}}"#,
        )
        .unwrap_err();
        assert_eq!(error.code(), "saved_secret_unavailable");
    }

    fn with_token_input() -> ServerConfig {
        let mut config = parse_store_server(
            r#"{"id": "s", "transport": {"type": "stdio", "command": "srv",
                "args": ["--token=${input:token}", "--again=${input:token}", "${input:other}"],
                "env": [{"key": "T", "value": "${input:token}"}]}}"#,
        )
        .unwrap();
        let mut prompt = InputPrompt::new("token");
        prompt.password = true;
        prompt.description = Some("API token".into());
        config.inputs.push(prompt);
        config
    }

    #[test]
    fn inputs_are_asked_once_with_the_declared_prompt() {
        let asked = std::sync::Mutex::new(Vec::new());
        let provider = |server: &str, prompt: &InputPrompt| {
            asked
                .lock()
                .unwrap()
                .push((server.to_owned(), prompt.clone()));
            Some(Secret::new(format!("answer-{}", prompt.id)))
        };
        let resolved = resolve(
            &with_token_input(),
            &crate::WithInputs::new(env(), provider),
        )
        .unwrap();
        let ResolvedTransport::Stdio(stdio) = resolved.transport else {
            panic!("stdio expected")
        };
        assert_eq!(
            stdio.args,
            [
                "--token=answer-token",
                "--again=answer-token",
                "answer-other"
            ]
        );
        assert_eq!(stdio.env[0].1.expose(), "answer-token");
        let asked = asked.into_inner().unwrap();
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert_eq!(asked[0].0, "s");
        assert!(asked[0].1.password);
        assert_eq!(asked[0].1.description.as_deref(), Some("API token"));
        // An input the server does not declare is asked with a bare prompt.
        assert_eq!(asked[1].1, InputPrompt::new("other"));
    }

    #[test]
    fn unanswered_inputs_fail_with_missing_input() {
        let error = resolve(&with_token_input(), &env()).unwrap_err();
        assert_eq!(error.code(), "missing_input");
        assert_eq!(error.missing_inputs(), ["token", "other"]);
        assert!(error.to_string().contains("nobody to ask"), "{error}");
        let refuse = |_: &str, prompt: &InputPrompt| {
            (prompt.id == "other").then(|| Secret::new("SECRET-other"))
        };
        let error =
            resolve(&with_token_input(), &crate::WithInputs::new(env(), refuse)).unwrap_err();
        assert_eq!(error.missing_inputs(), ["token"]);
        assert!(error.to_string().contains("was not answered"), "{error}");
        assert!(!error.to_string().contains("SECRET"), "{error}");
        assert!(!format!("{error:?}").contains("SECRET"));
    }

    #[test]
    fn resolved_debug_is_redacted() {
        let resolved = resolve_json(
            r#"{"id": "s", "transport": {"type": "http", "url": "https://e.com/", "bearerTokenEnv": "TOKEN",
                "headers": [{"key": "X-A", "value": "${TOKEN}"}]}}"#,
        )
        .unwrap();
        let debug = format!("{resolved:?}");
        assert!(!debug.contains("SECRET"), "{debug}");
    }
}

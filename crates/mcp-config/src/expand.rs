//! `${VAR}` and `${VAR:-default}` references, resolved from an injectable environment.
//!
//! References are allowed in the command, args, env values, URL and
//! header values, and resolved when a server connects, from the host
//! process's environment (injectable for tests). The syntax:
//!
//! - `${NAME}`: the value of `NAME`; unset is a `missing_env` error naming `NAME`.
//! - `${NAME:-default}`: the value of `NAME`, or `default` when it is unset
//!   or empty (the shell's and Claude Code's meaning of `:-`). The default is
//!   literal text up to the first `}` and cannot itself contain `${`.
//! - `$${`: a literal `${`, so `$${HOME}` stays `${HOME}`.
//! - `${input:ID}`: the answer to the server's input prompt `ID` (VS Code's
//!   `inputs`), which the host's [`InputProvider`] gives when the server
//!   resolves ([`crate::resolve`]); without one, or when it gives none, the
//!   server fails with `missing_input` naming `ID`. `ID` is
//!   `[A-Za-z0-9_.-]+`; an input reference has no default.
//! - `NAME` is `[A-Za-z_][A-Za-z0-9_]*`. Anything else after `${`, or a
//!   missing `}`, is an `invalid_reference` error. `$NAME` without braces is
//!   literal text.
//!
//! A string that contains no `${` is returned unchanged. Errors name
//! variables and byte offsets, never the text around them: it may be a
//! secret.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

use crate::diagnostic::Code;
use crate::model::InputPrompt;
use crate::secret::Secret;

/// Where `${VAR}` values come from.
///
/// Implemented by [`ProcessEnv`] (the default), by `HashMap<String, String>`
/// and `BTreeMap<String, String>`, and by any `Fn(&str) -> Option<String>`.
pub trait Environment {
    /// The value of `name`, or `None` when it is not set.
    fn var(&self, name: &str) -> Option<String>;

    /// Who answers `${input:ID}` prompts when a server resolves. Default
    /// `None`: nobody, so a server that references an input fails with
    /// `missing_input`. [`WithInputs`] adds a provider to an environment.
    fn input_provider(&self) -> Option<&dyn InputProvider> {
        None
    }
}

/// Answers the `${input:ID}` prompts of a server (VS Code's `inputs`) when it
/// resolves: a host asks the person, or answers from what they said before.
///
/// The answer is a secret: resolution puts it where the reference is and
/// never logs or shows it.
pub trait InputProvider: Send + Sync {
    /// The answer to `prompt` for the server `server`, or `None` when
    /// nobody answers (no terminal, the person refused): the server then
    /// fails with `missing_input`.
    fn answer(&self, server: &str, prompt: &InputPrompt) -> Option<Secret>;
}

impl<F: Fn(&str, &InputPrompt) -> Option<Secret> + Send + Sync> InputProvider for F {
    fn answer(&self, server: &str, prompt: &InputPrompt) -> Option<Secret> {
        self(server, prompt)
    }
}

/// An environment whose `${input:ID}` prompts `inputs` answers; variables
/// come from `env`.
///
/// ```
/// use std::collections::HashMap;
/// use mcp_config::{resolve, InputPrompt, ResolvedTransport, Secret, ServerConfig, StdioConfig,
///     TransportConfig, WithInputs};
///
/// let mut stdio = StdioConfig::new("srv");
/// stdio.args = vec!["--token=${input:token}".into()];
/// let mut config = ServerConfig::new("s", TransportConfig::Stdio(stdio));
/// config.inputs.push(InputPrompt::new("token"));
///
/// let answers = |_server: &str, prompt: &InputPrompt| {
///     (prompt.id == "token").then(|| Secret::new("t0k3n"))
/// };
/// let env = WithInputs::new(HashMap::<String, String>::new(), answers);
/// let ResolvedTransport::Stdio(stdio) = resolve(&config, &env)?.transport else { unreachable!() };
/// assert_eq!(stdio.args, ["--token=t0k3n"]);
///
/// // Without a provider, the server cannot resolve.
/// let error = resolve(&config, &HashMap::<String, String>::new()).unwrap_err();
/// assert_eq!(error.code(), "missing_input");
/// # Ok::<(), mcp_config::ResolveError>(())
/// ```
#[derive(Clone, Debug)]
pub struct WithInputs<E, P> {
    env: E,
    inputs: P,
}

impl<E, P> WithInputs<E, P> {
    /// `env`'s variables, `inputs`' answers.
    pub fn new(env: E, inputs: P) -> Self {
        WithInputs { env, inputs }
    }
}

impl<E: Environment, P: InputProvider> Environment for WithInputs<E, P> {
    fn var(&self, name: &str) -> Option<String> {
        self.env.var(name)
    }

    fn input_provider(&self) -> Option<&dyn InputProvider> {
        Some(&self.inputs)
    }
}

/// The host process's environment. A variable whose value is not valid
/// Unicode counts as unset: it cannot be put into a JSON-described config.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessEnv;

impl Environment for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl<S: BuildHasher> Environment for HashMap<String, String, S> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

impl Environment for BTreeMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

impl<F: Fn(&str) -> Option<String>> Environment for F {
    fn var(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// Why a string could not be expanded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// `${NAME}` without a default, and `NAME` is not set.
    #[error("environment variable `{name}` is not set and the reference has no default")]
    MissingEnv {
        /// The variable.
        name: String,
    },
    /// `${input:ID}`, and nobody answered the prompt `ID`.
    #[error(
        "input `{id}` was not answered (`${{input:{id}}}` is asked for when the server connects)"
    )]
    MissingInput {
        /// The input's id.
        id: String,
    },
    /// Malformed reference syntax.
    #[error("invalid `${{...}}` reference at byte {offset}: {reason}")]
    InvalidReference {
        /// Byte offset of the `$` that starts the reference.
        offset: usize,
        /// What is wrong, in words.
        reason: &'static str,
    },
}

impl ExpandError {
    /// The stable code: `missing_env`, `missing_input` or `invalid_reference`.
    pub fn code(&self) -> &'static str {
        self.diagnostic_code().as_str()
    }

    pub(crate) fn diagnostic_code(&self) -> Code {
        match self {
            ExpandError::MissingEnv { .. } => Code::MissingEnv,
            ExpandError::MissingInput { .. } => Code::MissingInput,
            ExpandError::InvalidReference { .. } => Code::InvalidReference,
        }
    }
}

/// Expands every reference in `input`.
///
/// ```
/// use std::collections::HashMap;
/// use mcp_config::expand;
///
/// let env = HashMap::from([("TOKEN".to_owned(), "abc".to_owned())]);
/// assert_eq!(expand("Bearer ${TOKEN}", &env)?, "Bearer abc");
/// assert_eq!(expand("${REGION:-eu}", &env)?, "eu");
/// assert_eq!(expand("$${TOKEN}", &env)?, "${TOKEN}");
/// assert_eq!(expand("${NOPE}", &env).unwrap_err().code(), "missing_env");
/// // Input prompts are answered only when a server resolves.
/// assert_eq!(expand("${input:token}", &env).unwrap_err().code(), "missing_input");
/// # Ok::<(), mcp_config::ExpandError>(())
/// ```
pub fn expand<E: Environment + ?Sized>(input: &str, env: &E) -> Result<String, ExpandError> {
    expand_with(input, env, &mut |_| None)
}

/// [`expand`], with `answer` giving the value of `${input:ID}`.
pub(crate) fn expand_with<E: Environment + ?Sized>(
    input: &str,
    env: &E,
    answer: &mut dyn FnMut(&str) -> Option<Secret>,
) -> Result<String, ExpandError> {
    if !input.contains("${") {
        return Ok(input.to_owned());
    }
    let mut out = String::with_capacity(input.len());
    for piece in parse(input)? {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Input { id } => match answer(id) {
                Some(value) => out.push_str(value.expose()),
                None => return Err(ExpandError::MissingInput { id: id.to_owned() }),
            },
            Piece::Var { name, default } => match (env.var(name), default) {
                (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => {
                    return Err(ExpandError::MissingEnv {
                        name: name.to_owned(),
                    });
                }
            },
        }
    }
    Ok(out)
}

/// Checks the reference syntax of `input` without resolving anything
/// (validation uses this before any environment is at hand).
///
/// ```
/// assert!(mcp_config::check_references("${HOME}/bin").is_ok());
/// assert_eq!(mcp_config::check_references("${HOME").unwrap_err().code(), "invalid_reference");
/// ```
pub fn check_references(input: &str) -> Result<(), ExpandError> {
    parse(input).map(drop)
}

/// The names of the environment variables `input` references, in order
/// (not inputs); none when its syntax is broken.
pub(crate) fn referenced_variables(input: &str) -> Vec<String> {
    referenced(input, "${", |piece| match piece {
        Piece::Var { name, .. } => Some(name),
        _ => None,
    })
}

/// The ids of the `${input:ID}` prompts `input` references, in order.
pub(crate) fn referenced_inputs(input: &str) -> Vec<String> {
    referenced(input, "${input:", |piece| match piece {
        Piece::Input { id } => Some(id),
        _ => None,
    })
}

/// What `pick` takes from each reference of `input`, in order; nothing
/// when `input` has no `marker` (a quick check before parsing) or its
/// syntax is broken.
fn referenced(input: &str, marker: &str, pick: fn(Piece<'_>) -> Option<&str>) -> Vec<String> {
    if !input.contains(marker) {
        return Vec::new();
    }
    parse(input).map_or_else(
        |_| Vec::new(),
        |pieces| {
            pieces
                .into_iter()
                .filter_map(|piece| pick(piece).map(str::to_owned))
                .collect()
        },
    )
}

/// Whether `input` contains a reference (after escapes are taken out).
pub(crate) fn has_references(input: &str) -> bool {
    input.contains("${")
        && parse(input).map_or(true, |pieces| {
            pieces
                .iter()
                .any(|piece| matches!(piece, Piece::Var { .. } | Piece::Input { .. }))
        })
}

#[derive(Debug)]
enum Piece<'a> {
    Text(&'a str),
    Var {
        name: &'a str,
        default: Option<&'a str>,
    },
    Input {
        id: &'a str,
    },
}

fn parse(input: &str) -> Result<Vec<Piece<'_>>, ExpandError> {
    let bytes = input.as_bytes();
    let mut pieces = Vec::new();
    let mut literal_start = 0;
    let mut i = 0;
    // Every index used to slice below sits on an ASCII byte (`$`, `{`, `}`)
    // or one past it, so slices always fall on character boundaries.
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) == Some(&b'$') && bytes.get(i + 2) == Some(&b'{') {
            // `$${` is an escaped `${`: keep one `$` and the `{`.
            pieces.push(Piece::Text(&input[literal_start..=i]));
            literal_start = i + 2;
            i += 3;
            continue;
        }
        if bytes.get(i + 1) != Some(&b'{') {
            i += 1;
            continue;
        }
        let body_start = i + 2;
        let Some(length) = input[body_start..].find('}') else {
            return Err(ExpandError::InvalidReference {
                offset: i,
                reason: "`${` without a closing `}`",
            });
        };
        let body = &input[body_start..body_start + length];
        if let Some(id) = body.strip_prefix("input:") {
            check_input_id(id)
                .map_err(|reason| ExpandError::InvalidReference { offset: i, reason })?;
            pieces.push(Piece::Text(&input[literal_start..i]));
            pieces.push(Piece::Input { id });
            i = body_start + length + 1;
            literal_start = i;
            continue;
        }
        let (name, default) = match body.find(":-") {
            Some(at) => (&body[..at], Some(&body[at + 2..])),
            None => (body, None),
        };
        check_name(name).map_err(|reason| ExpandError::InvalidReference { offset: i, reason })?;
        if default.is_some_and(|default| default.contains("${")) {
            return Err(ExpandError::InvalidReference {
                offset: i,
                reason: "a default value cannot contain another reference",
            });
        }
        pieces.push(Piece::Text(&input[literal_start..i]));
        pieces.push(Piece::Var { name, default });
        i = body_start + length + 1;
        literal_start = i;
    }
    pieces.push(Piece::Text(&input[literal_start..]));
    Ok(pieces)
}

fn check_input_id(id: &str) -> Result<(), &'static str> {
    if id.is_empty() {
        return Err("empty input id; use `${input:ID}`");
    }
    if id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        Ok(())
    } else {
        Err("an input id has only letters, digits, `_`, `.` and `-`; an input has no `:-default`")
    }
}

fn check_name(name: &str) -> Result<(), &'static str> {
    let mut chars = name.chars();
    match chars.next() {
        None => Err("empty variable name"),
        Some(first) if !(first.is_ascii_alphabetic() || first == '_') => {
            Err("a variable name starts with a letter or `_`; use `${NAME}` or `${NAME:-default}`")
        }
        Some(_) if chars.all(|c| c.is_ascii_alphanumeric() || c == '_') => Ok(()),
        Some(_) => Err(
            "a variable name has only letters, digits and `_`; use `${NAME}` or `${NAME:-default}`",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> HashMap<String, String> {
        HashMap::from([
            ("A".to_owned(), "alpha".to_owned()),
            ("EMPTY".to_owned(), String::new()),
            ("_x1".to_owned(), "x".to_owned()),
        ])
    }

    fn check(input: &str, expected: Result<&str, &str>) {
        let got = expand(input, &env());
        match expected {
            Ok(text) => assert_eq!(got.as_deref(), Ok(text), "{input}"),
            Err(code) => assert_eq!(got.unwrap_err().code(), code, "{input}"),
        }
    }

    #[test]
    fn expansion_cases() {
        check("plain", Ok("plain"));
        check("$A and $$ and {A}", Ok("$A and $$ and {A}"));
        check("${A}", Ok("alpha"));
        check("<${A}|${_x1}>", Ok("<alpha|x>"));
        check("${MISSING:-fallback}", Ok("fallback"));
        check("${MISSING:-}", Ok(""));
        check("${EMPTY:-d}", Ok("d"));
        check("${EMPTY}", Ok(""));
        check("${A:-d}", Ok("alpha"));
        check("${A:-a:-b}", Ok("alpha"));
        check("$${A}", Ok("${A}"));
        check("$$${A}", Ok("$${A}"));
        check("$${A} ${A}", Ok("${A} alpha"));
        check("€${A}€", Ok("€alpha€"));
        check("${MISSING}", Err("missing_env"));
        check("${A", Err("invalid_reference"));
        check("${}", Err("invalid_reference"));
        check("${1A}", Err("invalid_reference"));
        check("${A B}", Err("invalid_reference"));
        check("${env:A}", Err("invalid_reference"));
        check("${input:token}", Err("missing_input"));
        check("${input:}", Err("invalid_reference"));
        check("${input:a:-b}", Err("invalid_reference"));
        check("$${input:token}", Ok("${input:token}"));
        check("${A:-${B}}", Err("invalid_reference"));
        check("${A-x}", Err("invalid_reference"));
    }

    #[test]
    fn missing_env_names_the_variable_and_nothing_else() {
        let error = expand("sk-SECRET-${NOPE}", &env()).unwrap_err();
        assert_eq!(
            error,
            ExpandError::MissingEnv {
                name: "NOPE".into()
            }
        );
        assert!(!error.to_string().contains("SECRET"));
        let error = expand("sk-SECRET-${bad name}", &env()).unwrap_err();
        assert!(!error.to_string().contains("SECRET"), "{error}");
    }

    #[test]
    fn closures_are_environments() {
        let env = |name: &str| (name == "X").then(|| "1".to_owned());
        assert_eq!(expand("${X}${Y:-2}", &env).unwrap(), "12");
    }

    #[test]
    fn inputs_are_answered_in_place_and_never_re_expanded() {
        let mut asked = Vec::new();
        let got = expand_with("a=${input:tok.1}&b=${A}", &env(), &mut |id| {
            asked.push(id.to_owned());
            Some(Secret::new("${A}"))
        })
        .unwrap();
        assert_eq!(got, "a=${A}&b=alpha");
        assert_eq!(asked, ["tok.1"]);
        assert_eq!(referenced_inputs("${input:x} ${Y} $${input:z}"), ["x"]);
        assert_eq!(referenced_variables("${input:x} ${Y} ${Z:-d}"), ["Y", "Z"]);
    }

    #[test]
    fn has_references_ignores_escapes() {
        assert!(has_references("https://${HOST}/"));
        assert!(!has_references("$${HOST}"));
        assert!(!has_references("plain"));
        assert!(has_references("${broken"));
    }
}

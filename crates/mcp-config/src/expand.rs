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

/// Where `${VAR}` values come from.
///
/// Implemented by [`ProcessEnv`] (the default), by `HashMap<String, String>`
/// and `BTreeMap<String, String>`, and by any `Fn(&str) -> Option<String>`.
pub trait Environment {
    /// The value of `name`, or `None` when it is not set.
    fn var(&self, name: &str) -> Option<String>;
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
    /// The stable code: `missing_env` or `invalid_reference`.
    pub fn code(&self) -> &'static str {
        self.diagnostic_code().as_str()
    }

    pub(crate) fn diagnostic_code(&self) -> Code {
        match self {
            ExpandError::MissingEnv { .. } => Code::MissingEnv,
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
/// # Ok::<(), mcp_config::ExpandError>(())
/// ```
pub fn expand<E: Environment + ?Sized>(input: &str, env: &E) -> Result<String, ExpandError> {
    if !input.contains("${") {
        return Ok(input.to_owned());
    }
    let mut out = String::with_capacity(input.len());
    for piece in parse(input)? {
        match piece {
            Piece::Text(text) => out.push_str(text),
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

/// Whether `input` contains a reference (after escapes are taken out).
pub(crate) fn has_references(input: &str) -> bool {
    input.contains("${")
        && parse(input).map_or(true, |pieces| {
            pieces
                .iter()
                .any(|piece| matches!(piece, Piece::Var { .. }))
        })
}

#[derive(Debug)]
enum Piece<'a> {
    Text(&'a str),
    Var {
        name: &'a str,
        default: Option<&'a str>,
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

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.starts_with("input:") {
        return Err(
            "VS Code `${input:...}` prompts are not supported; use an environment variable",
        );
    }
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
        check("${input:token}", Err("invalid_reference"));
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
    fn has_references_ignores_escapes() {
        assert!(has_references("https://${HOST}/"));
        assert!(!has_references("$${HOST}"));
        assert!(!has_references("plain"));
        assert!(has_references("${broken"));
    }
}

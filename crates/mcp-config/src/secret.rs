//! Secret strings that never show in `Debug` output, and the write-only value of a stored secret.
//!
//! Literal env and header values are
//! write-only. Every type that can hold one wraps it in [`Secret`], so that a
//! derived `Debug` anywhere in the crate prints `<redacted>` instead of the
//! value, and nothing formats it by accident (there is no `Display`).

use std::fmt;

/// A string that must not be shown to a person or written to a log: a literal
/// environment value, a header value or a token.
///
/// `Debug` prints `<redacted>` and there is no `Display`; read the value
/// deliberately with [`Secret::expose`].
///
/// ```
/// use mcp_config::Secret;
///
/// let token = Secret::new("sk-live-1234");
/// assert_eq!(format!("{token:?}"), "<redacted>");
/// assert_eq!(token.expose(), "sk-live-1234");
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself. Call this only where the value is used (spawning a
    /// process, sending a header), never to show it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Consumes the wrapper and returns the value.
    pub fn into_exposed(self) -> String {
        self.0
    }

    /// Whether the value is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

/// The value of a literal env entry or header.
///
/// list()` returns literal values empty with `saved: true`, and a
/// caller that sends the same key back with `saved: true` and an empty value
/// keeps the stored value. [`SecretValue::Saved`] is that marker; in the
/// store's JSON it is written `"value": "", "saved": true`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SecretValue {
    /// A value, which may contain `${VAR}` references.
    Literal(Secret),
    /// "A value is saved for this key; keep it." Carries no value.
    Saved,
}

impl SecretValue {
    /// A literal value.
    pub fn literal(value: impl Into<String>) -> Self {
        SecretValue::Literal(Secret::new(value))
    }

    /// The literal, or `None` for [`SecretValue::Saved`].
    pub fn as_literal(&self) -> Option<&Secret> {
        match self {
            SecretValue::Literal(secret) => Some(secret),
            SecretValue::Saved => None,
        }
    }

    /// Whether this is the [`SecretValue::Saved`] marker.
    pub fn is_saved(&self) -> bool {
        matches!(self, SecretValue::Saved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let value = SecretValue::literal("hunter2-SECRET");
        let text = format!("{value:?} {:?}", Secret::new("hunter2-SECRET"));
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(format!("{value:#?}"), "Literal(\n    <redacted>,\n)");
    }
}

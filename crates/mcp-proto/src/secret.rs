//! `Secret`: a string that never shows itself in `Debug` output (tokens, keys, literal environment and header values).
//!
//! Every crate that holds such a value wraps it in this one type, so that a
//! derived `Debug` anywhere prints `<redacted>` instead of the value, and
//! nothing formats it by accident (there is no `Display`). It serializes as
//! the plain string, for the one place that stores it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A string that must not be shown to a person or written to a log: a literal
/// environment value, a header value or a token.
///
/// `Debug` prints `<redacted>` and there is no `Display`; read the value
/// deliberately with [`Secret::expose`].
///
/// ```
/// use mcp_proto::secret::Secret;
///
/// let token = Secret::new("sk-live-1234");
/// assert_eq!(format!("{token:?}"), "<redacted>");
/// assert_eq!(token.expose(), "sk-live-1234");
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
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

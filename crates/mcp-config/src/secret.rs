//! Secret strings that never show in `Debug` output, and the write-only value of a stored secret.
//!
//! Literal env and header values are
//! write-only. Every type that can hold one wraps it in [`Secret`], so that a
//! derived `Debug` anywhere in the crate prints `<redacted>` instead of the
//! value, and nothing formats it by accident (there is no `Display`).

pub use mcp_proto::secret::Secret;

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

/// A URL as `Debug` shows it: its scheme and host (and port) only, `…` for
/// the rest, since a path or query may hold a token (`?key=...`) and user
/// info a password. Text with no `://` shows as `<redacted>`.
pub(crate) fn url_for_debug(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "<redacted>".to_owned();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    format!("{scheme}://{host}/…")
}

/// Arguments as `Debug` shows them: how many, never what (a command line
/// often carries an API key).
pub(crate) fn args_for_debug(args: &[String]) -> String {
    match args.len() {
        1 => "<1 argument, redacted>".to_owned(),
        n => format!("<{n} arguments, redacted>"),
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_forms_keep_no_path_query_user_info_or_argument() {
        assert_eq!(
            url_for_debug("https://user:pw@mcp.example:8443/v1/key-123?token=abc#x"),
            "https://mcp.example:8443/…"
        );
        assert_eq!(url_for_debug("${MCP_URL}"), "<redacted>");
        assert_eq!(
            args_for_debug(&["--api-key=sk-1".into()]),
            "<1 argument, redacted>"
        );
    }
}

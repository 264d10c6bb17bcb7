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

//! Parsing a `WWW-Authenticate` header's `Bearer` or `DPoP` challenge (RFC 6750 §3, RFC 9449 §7.1, RFC 9728 §5.1).

/// The parameters of a `Bearer` or `DPoP` challenge that MCP clients act on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs (space separated).
    pub scope: Option<String>,
    /// `error`, for example `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
}

impl Challenge {
    /// Parses the `Bearer` and `DPoP` challenges of a header value (the
    /// first value of each parameter wins); parameters of other schemes are
    /// ignored. Never fails: what cannot be read is left out.
    pub fn parse(header: &str) -> Challenge {
        let mut out = Challenge::default();
        let mut in_bearer = false;
        let mut rest = header;
        loop {
            rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
            if rest.is_empty() {
                return out;
            }
            let end = rest
                .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
                .unwrap_or(rest.len());
            let token = &rest[..end];
            let after = rest[end..].trim_start_matches([' ', '\t']);
            if let Some(value_part) = after.strip_prefix('=') {
                // token68 padding (`abc==`) has no name before it; skip it.
                let value_part = value_part.trim_start_matches([' ', '\t']);
                let (value, remaining) = read_value(value_part);
                if in_bearer && !token.is_empty() {
                    let slot = match token.to_ascii_lowercase().as_str() {
                        "resource_metadata" => Some(&mut out.resource_metadata),
                        "scope" => Some(&mut out.scope),
                        "error" => Some(&mut out.error),
                        _ => None,
                    };
                    if let Some(slot) = slot
                        && slot.is_none()
                    {
                        *slot = Some(value);
                    }
                }
                rest = remaining;
            } else {
                // A scheme name starts a new challenge.
                in_bearer =
                    token.eq_ignore_ascii_case("bearer") || token.eq_ignore_ascii_case("dpop");
                rest = &rest[end..];
            }
        }
    }

    /// The challenged scopes, split.
    pub fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref())
    }
}

pub(crate) fn split_scopes(scope: Option<&str>) -> Vec<String> {
    scope
        .unwrap_or_default()
        .split_ascii_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Reads a quoted string (with `\` escapes) or a token; returns it and the
/// rest of the input.
fn read_value(input: &str) -> (String, &str) {
    if let Some(quoted) = input.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                _ => value.push(c),
            }
        }
        (value, "")
    } else {
        let end = input
            .find(|c: char| c == ',' || c.is_whitespace())
            .unwrap_or(input.len());
        (input[..end].to_owned(), &input[end..])
    }
}

#[cfg(test)]
mod tests {
    use super::Challenge;

    fn check(header: &str, metadata: Option<&str>, scope: Option<&str>, error: Option<&str>) {
        let c = Challenge::parse(header);
        assert_eq!(c.resource_metadata.as_deref(), metadata, "{header}");
        assert_eq!(c.scope.as_deref(), scope, "{header}");
        assert_eq!(c.error.as_deref(), error, "{header}");
    }

    #[test]
    fn parses_bearer_parameters() {
        check("Bearer", None, None, None);
        check(
            r#"Bearer resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#,
            Some("http://h/.well-known/oauth-protected-resource/mcp"),
            None,
            None,
        );
        check(
            r#"Bearer scope="a b", resource_metadata="http://h/x", error="insufficient_scope""#,
            Some("http://h/x"),
            Some("a b"),
            Some("insufficient_scope"),
        );
        check(
            r#"bearer error=invalid_token,scope="x\"y""#,
            None,
            Some("x\"y"),
            Some("invalid_token"),
        );
        // Another scheme's parameters are not ours.
        check(
            r#"Basic realm="r", scope="no", Bearer scope="yes""#,
            None,
            Some("yes"),
            None,
        );
        check(
            r#"Negotiate abc==, Bearer error="e""#,
            None,
            None,
            Some("e"),
        );
        // DPoP challenges carry the same parameters (RFC 9449 §7.1).
        check(
            r#"DPoP error="use_dpop_nonce", resource_metadata="http://h/prm", algs="ES256""#,
            Some("http://h/prm"),
            None,
            Some("use_dpop_nonce"),
        );
    }
}

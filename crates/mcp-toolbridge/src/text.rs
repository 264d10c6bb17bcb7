//! Small text helpers: truncation by Unicode scalar values, one-line
//! summaries and XML escaping for the prompt section.

/// `text` cut to at most `max` Unicode scalar values, with `…` added when
/// anything was cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let mut out = String::with_capacity(cut + 3);
            out.push_str(&text[..cut]);
            out.push('…');
            out
        }
    }
}

/// The first line of `text` that is not blank, trimmed.
pub(crate) fn first_nonempty_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|line| !line.is_empty())
}

/// Escapes `&`, `<`, `>` and `"` for XML-like prompt markup, and turns
/// control characters (line breaks included) into spaces so that a value
/// stays on its row.
pub(crate) fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate_chars("héllo", 5), "héllo");
        assert_eq!(truncate_chars("héllo", 2), "hé…");
        assert_eq!(truncate_chars("", 0), "");
        assert_eq!(truncate_chars("ab", 0), "…");
    }

    #[test]
    fn first_line_skips_blank_lines() {
        assert_eq!(
            first_nonempty_line("\n  \n  GitHub tools  \nmore"),
            Some("GitHub tools")
        );
        assert_eq!(first_nonempty_line(" \n\t\n"), None);
    }

    #[test]
    fn markup_is_escaped_and_kept_on_one_line() {
        assert_eq!(
            escape_markup("a<b>&\"c\"\nd"),
            "a&lt;b&gt;&amp;&quot;c&quot; d"
        );
    }
}

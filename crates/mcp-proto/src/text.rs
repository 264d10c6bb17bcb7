//! Text from a peer made safe to show: terminal escaping and bounding.
//!
//! Everything a server sends is text it chose: tool names, titles,
//! descriptions, instructions, error messages, HTTP error bodies, tool
//! results. Two rules apply to it wherever it leaves the protocol layer.
//!
//! - **Escaped before it reaches a terminal** ([`escape`]): a terminal
//!   interprets control characters, so a server could otherwise retitle the
//!   window (`ESC ] 0 ; … BEL`), clear the screen (`ESC [ 2 J`), move the
//!   cursor to overwrite what was printed, or reorder what is shown with
//!   bidirectional overrides. Every C0 control (U+0000..U+001F: `ESC`,
//!   `BEL`, `CR`, backspace, …), `DEL` (U+007F), every C1 control
//!   (U+0080..U+009F, which some terminals take as `ESC` + a letter), the
//!   bidirectional embeddings, overrides and isolates (U+202A..U+202E,
//!   U+2066..U+2069) and the line and paragraph separators (U+2028,
//!   U+2029) are written as visible escapes instead: `\x1b`, `\x07`,
//!   `\u{9b}`, `\u{202e}`, with `\n`, `\r` and `\t` for those three. A
//!   backslash is left alone, so text that spells an escape (`\x1b`) looks
//!   the same as an escaped control; neither is interpreted. [`Lines`] says
//!   whether line breaks and tabs are kept (a tool's text output) or
//!   escaped too (a table cell, an error message: one line).
//! - **Bounded before it goes into an error or a model's context**
//!   ([`bound`]): a server can send megabytes where a sentence is expected.
//!   The text is cut at a character boundary at most `limit` bytes in, and
//!   a marker saying how much was cut is appended: `… [12345 more bytes]`.
//!   [`ERROR_TEXT_LIMIT`] is the limit for a message, [`NAME_LIMIT`] for a
//!   name or a short token.
//!
//! Each function returns [`Cow::Borrowed`] when nothing needs to change, so
//! clean text costs no allocation. The two compose: [`error_text`] bounds,
//! then escapes onto one line, the form every error of this workspace uses
//! for a peer's words.
//!
//! ```
//! use std::borrow::Cow;
//! use mcp_proto::text::{self, Lines};
//!
//! let shown = text::escape("Nice tool\x1b]0;PWNED\x07", Lines::One);
//! assert_eq!(shown, r"Nice tool\x1b]0;PWNED\x07");
//! assert!(matches!(text::escape("clean", Lines::One), Cow::Borrowed(_)));
//!
//! let long = "é".repeat(10);
//! assert_eq!(text::bound(&long, 5), "éé… [16 more bytes]");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// The most bytes of a peer's message an error carries: 1 KiB. A JSON-RPC
/// error's `message`, an HTTP error body and the like are cut here.
pub const ERROR_TEXT_LIMIT: usize = 1024;

/// The most bytes of a peer's name or short token (a tool name, a header
/// key, a `resultType`, a protocol version) an error carries: 64.
pub const NAME_LIMIT: usize = 64;

/// What [`escape`] does with line feeds and tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// Escape them too (`\n`, `\t`): the text stays on one line, for a
    /// table cell, a status line or an error message.
    One,
    /// Keep line feeds (and a carriage return right before one, as in
    /// `\r\n`) and tabs: for text meant to span lines, such as a tool's
    /// text output. A lone carriage return, which would let the next
    /// characters overwrite the line, is still escaped.
    Keep,
}

/// Whether a terminal could interpret `c` rather than print it: C0 and C1
/// controls, `DEL`, the bidirectional formatting characters and the
/// Unicode line and paragraph separators.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}'
        )
}

/// `text` with every character a terminal could interpret shown as a
/// visible escape (see the module documentation); borrowed unchanged when
/// there is none.
pub fn escape(text: &str, lines: Lines) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let escaped_at = |index: usize, c: char| match (lines, c) {
        (Lines::Keep, '\n' | '\t') => false,
        (Lines::Keep, '\r') => bytes.get(index + 1) != Some(&b'\n'),
        _ => is_unsafe(c),
    };
    let Some(first) = text
        .char_indices()
        .find(|&(index, c)| escaped_at(index, c))
        .map(|(index, _)| index)
    else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for (index, c) in text[first..].char_indices() {
        if escaped_at(first + index, c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if u32::from(c) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

/// `text` cut at a character boundary at most `limit` bytes in, followed
/// by [`cut_marker`] naming how many bytes were cut; borrowed unchanged
/// when it fits. The result is never longer than `limit` plus the marker.
pub fn bound(text: &str, limit: usize) -> Cow<'_, str> {
    if text.len() <= limit {
        return Cow::Borrowed(text);
    }
    let cut = (0..=limit)
        .rev()
        .find(|&index| text.is_char_boundary(index))
        .unwrap_or(0);
    let mut out = String::with_capacity(cut + 24);
    out.push_str(&text[..cut]);
    out.push_str(&cut_marker(Some((text.len() - cut) as u64)));
    Cow::Owned(out)
}

/// The marker [`bound`] appends where it cut: `… [N more bytes]`, or
/// `… [more bytes not read]` when the length of what was left is unknown
/// (the rest of an HTTP body that was never read).
pub fn cut_marker(more: Option<u64>) -> String {
    match more {
        Some(1) => "… [1 more byte]".to_owned(),
        Some(more) => format!("… [{more} more bytes]"),
        None => "… [more bytes not read]".to_owned(),
    }
}

/// A peer's text as an error carries it: at most `limit` bytes of it
/// ([`bound`]; [`ERROR_TEXT_LIMIT`] for a message, [`NAME_LIMIT`] for a
/// name), escaped onto one line ([`escape`] with [`Lines::One`]). Borrowed
/// when the text is short and clean.
pub fn error_text(text: &str, limit: usize) -> Cow<'_, str> {
    match bound(text, limit) {
        Cow::Borrowed(text) => escape(text, Lines::One),
        Cow::Owned(cut) => Cow::Owned(escape(&cut, Lines::One).into_owned()),
    }
}

/// An error and every cause behind it ([`Error::source`](std::error::Error::source)),
/// joined by `: `, for a person to read: each error of this workspace says
/// only its own part in its `Display` and leaves the cause to `source()`,
/// so the whole story is the chain. A cause whose text the previous link
/// already ends with is skipped, so that an error from elsewhere that
/// prints its cause itself is not shown twice.
///
/// ```
/// use mcp_proto::text::ErrorChain;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("cannot read the store")]
/// struct StoreError(#[source] std::io::Error);
///
/// let error = StoreError(std::io::Error::other("disk full"));
/// assert_eq!(ErrorChain(&error).to_string(), "cannot read the store: disk full");
/// ```
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut previous = self.0.to_string();
        f.write_str(&previous)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !text.is_empty() && !previous.ends_with(&text) {
                f.write_str(": ")?;
                f.write_str(&text)?;
            }
            previous = text;
            source = cause.source();
        }
        Ok(())
    }
}

impl std::fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn controls_and_bidi_overrides_are_shown_escaped() {
        assert_eq!(
            escape("Nice tool\x1b]0;PWNED\x07\x1b[2J", Lines::One),
            r"Nice tool\x1b]0;PWNED\x07\x1b[2J"
        );
        assert_eq!(escape("ctl\x1b[31mred", Lines::One), r"ctl\x1b[31mred");
        assert_eq!(
            escape("a\u{9b}31m\u{85}b", Lines::One),
            r"a\u{9b}31m\u{85}b"
        );
        assert_eq!(escape("x\u{202e}gnp.exe", Lines::One), r"x\u{202e}gnp.exe");
        assert_eq!(escape("\u{2066}\u{2069}", Lines::One), r"\u{2066}\u{2069}");
        assert_eq!(escape("a\x08\x7f\0b", Lines::One), r"a\x08\x7f\x00b");
        assert_eq!(escape("l1\u{2028}l2", Lines::One), r"l1\u{2028}l2");
    }

    #[test]
    fn one_line_escapes_breaks_and_keep_keeps_them() {
        assert_eq!(escape("a\nb\tc\r\nd", Lines::One), r"a\nb\tc\r\nd");
        assert_eq!(escape("a\nb\tc\r\nd", Lines::Keep), "a\nb\tc\r\nd");
        // A lone carriage return would let the rest overwrite the line.
        assert_eq!(escape("ok\rFAKE", Lines::Keep), r"ok\rFAKE");
        assert_eq!(escape("end\r", Lines::Keep), r"end\r");
        assert_eq!(escape("\x1b[2J\n", Lines::Keep), "\\x1b[2J\n");
    }

    #[test]
    fn clean_text_is_borrowed() {
        for text in ["", "plain", "héllo wörld ✓ 日本語", r"C:\path\x1b"] {
            assert!(matches!(escape(text, Lines::One), Cow::Borrowed(t) if t == text));
            assert!(matches!(bound(text, 64), Cow::Borrowed(t) if t == text));
            assert!(matches!(error_text(text, 64), Cow::Borrowed(t) if t == text));
        }
        assert!(matches!(escape("a\nb", Lines::Keep), Cow::Borrowed(_)));
    }

    #[test]
    fn bound_cuts_at_a_char_boundary_and_says_how_much() {
        assert_eq!(bound("abcdef", 3), "abc… [3 more bytes]");
        assert_eq!(bound("abcd", 3), "abc… [1 more byte]");
        assert_eq!(bound("abc", 3), "abc");
        // `é` is two bytes: a cut at 3 would split the second.
        assert_eq!(bound("ééé", 3), "é… [4 more bytes]");
        assert_eq!(bound("日本", 2), "… [6 more bytes]");
        assert_eq!(cut_marker(None), "… [more bytes not read]");
    }

    #[test]
    fn error_text_bounds_then_escapes() {
        let message = format!("boom\x1b[2J{}", "x".repeat(10 * 1024 * 1024));
        let shown = error_text(&message, ERROR_TEXT_LIMIT);
        assert!(shown.starts_with(r"boom\x1b[2J"));
        assert!(shown.ends_with(&format!("[{} more bytes]", message.len() - 1024)));
        assert!(shown.len() < ERROR_TEXT_LIMIT + 64, "{}", shown.len());
        assert!(!shown.contains('\x1b'));
    }

    /// Text with a good share of the characters that must be escaped.
    fn hostile() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            any::<char>().prop_map(String::from),
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap().to_string()),
            (0x7fu32..0xa0).prop_map(|c| char::from_u32(c).unwrap().to_string()),
            prop::sample::select(vec![
                "\u{202a}", "\u{202e}", "\u{2066}", "\u{2069}", "\u{2028}", "\r\n", "\x1b[2J", "é",
                "日", "\\x1b",
            ])
            .prop_map(str::to_owned),
            "[a-z ]{0,8}",
        ];
        prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn no_unsafe_character_survives(text in hostile()) {
            let one = escape(&text, Lines::One);
            prop_assert!(!one.chars().any(is_unsafe), "{one:?}");
            let keep = escape(&text, Lines::Keep);
            let bytes = keep.as_bytes();
            for (index, c) in keep.char_indices() {
                let allowed = c == '\n' || c == '\t'
                    || (c == '\r' && bytes.get(index + 1) == Some(&b'\n'));
                prop_assert!(allowed || !is_unsafe(c), "{keep:?}");
            }
            if !text.chars().any(is_unsafe) {
                prop_assert!(matches!(one, Cow::Borrowed(t) if t == text));
            }
        }

        #[test]
        fn bound_never_splits_a_char_or_exceeds_limit_and_marker(
            text in hostile(),
            limit in 0usize..64,
        ) {
            let bounded = bound(&text, limit);
            if text.len() <= limit {
                prop_assert!(matches!(bounded, Cow::Borrowed(t) if t == text));
            } else {
                let marker_at = bounded.rfind("… [").unwrap();
                let kept = &bounded[..marker_at];
                prop_assert!(text.starts_with(kept));
                prop_assert!(kept.len() <= limit);
                // The largest boundary at or below the limit: at most 3
                // bytes (one partial character) are given up.
                prop_assert!(kept.len() + 3 >= limit);
                let more = text.len() - kept.len();
                prop_assert_eq!(&bounded[marker_at..], cut_marker(Some(more as u64)));
                prop_assert!(bounded.len() <= limit + cut_marker(Some(more as u64)).len());
            }
        }
    }

    #[derive(Debug)]
    struct Link(&'static str, Option<Box<Link>>);

    impl std::fmt::Display for Link {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Link {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn an_error_chain_joins_every_cause_once() {
        let error = Link(
            "connection closed",
            Some(Box::new(Link(
                "i/o error",
                Some(Box::new(Link("broken pipe", None))),
            ))),
        );
        assert_eq!(
            ErrorChain(&error).to_string(),
            "connection closed: i/o error: broken pipe"
        );
        // A link that already printed its cause does not get it twice.
        let error = Link(
            "request failed: timed out",
            Some(Box::new(Link("timed out", None))),
        );
        assert_eq!(ErrorChain(&error).to_string(), "request failed: timed out");
        assert_eq!(ErrorChain(&Link("alone", None)).to_string(), "alone");
    }
}

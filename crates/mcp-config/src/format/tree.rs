//! What the TOML and YAML readers share: their values as the crate's JSON tree, with a note of every value JSON cannot hold.
//!
//! Codex's `config.toml` and goose's `config.yaml` are converted into the
//! same [`Json`] tree the JSON formats parse into, so one
//! [`FieldReader`] reads every format and its messages (which name
//! fields, never values) read alike. A value with no JSON counterpart (a
//! TOML date-time, a non-finite float, a YAML alias, a mapping used as a
//! key) becomes `null` in the tree and an [`Unreadable`] note at its path;
//! the reader turns each note inside a server entry into a problem of that
//! entry, so the entry fails with a clear cause instead of reading the
//! value as absent.

use crate::diagnostic::Code;
use crate::json::{FieldReader, Json};

/// A value that the tree holds as `null` because JSON has no counterpart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Unreadable {
    /// The value's path, spelled as [`crate::json::join_key`] spells it.
    pub(super) path: String,
    /// What the value is and what to write instead; never quotes it.
    pub(super) message: &'static str,
}

/// The notes about values at `path` or inside it.
pub(super) fn unreadable_within<'a>(
    notes: &'a [Unreadable],
    path: &'a str,
) -> impl Iterator<Item = &'a Unreadable> + 'a {
    notes.iter().filter(move |note| {
        note.path
            .strip_prefix(path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    })
}

/// Reports every note inside the reader's entry as an `invalid_field`
/// problem of that entry.
pub(super) fn report_unreadable(r: &mut FieldReader<'_>, notes: &[Unreadable]) {
    let path = r.path().to_owned();
    for note in unreadable_within(notes, &path) {
        r.problem(Code::InvalidField, note.path.clone(), note.message);
    }
}

/// Drops the problems the reader found at a noted value besides the note
/// itself: the `null` standing in for the value is the conversion's, not the
/// person's, so "must be a string, not null" would only mislead.
pub(super) fn drop_stand_in_problems(r: &mut FieldReader<'_>, notes: &[Unreadable]) {
    let path = r.path().to_owned();
    let noted: Vec<&Unreadable> = unreadable_within(notes, &path).collect();
    r.problems.retain(|problem| {
        noted
            .iter()
            .all(|note| note.path != problem.field || note.message == problem.message)
    });
}

/// The message of the first note at exactly `path`, if any.
pub(super) fn unreadable_at<'a>(notes: &'a [Unreadable], path: &str) -> Option<&'a str> {
    notes
        .iter()
        .find(|note| note.path == path)
        .map(|note| note.message)
}

/// The type of a value as a person reads it in a TOML or YAML file.
pub(super) fn type_name(value: &Json, map: &'static str) -> &'static str {
    match value {
        Json::Object(_) => map,
        other => other.type_name(),
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text`;
/// an offset past the end, or inside a character, counts from the nearest
/// character boundary before it.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The first line of a parser's message, at most [`MESSAGE_CHARS`]
/// characters: parser messages describe what was expected and never quote
/// the input, and this keeps it so even if a parser's wording changes.
pub(super) fn parser_message(message: &str) -> String {
    let line = message.lines().next().unwrap_or("").trim();
    let mut out: String = line.chars().take(MESSAGE_CHARS).collect();
    if line.chars().nth(MESSAGE_CHARS).is_some() {
        out.push('…');
    }
    if out.is_empty() {
        out.push_str("syntax error");
    }
    out
}

/// How much of a parser's message a syntax error keeps.
const MESSAGE_CHARS: usize = 120;

/// `${` written in a host whose strings are literal, escaped so that
/// [`crate::expand`] leaves it as written (`$${` is a literal `${`).
pub(super) fn literal(text: String) -> String {
    if text.contains("${") {
        text.replace("${", "$${")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        let text = "a = 1\nbé = x\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // `x` is the sixth character of line 2 (`é` is two bytes).
        assert_eq!(line_column(text, 12), (2, 6));
        // Inside `é`, and past the end.
        assert_eq!(line_column(text, 8), (2, 2));
        assert_eq!(line_column(text, 999), (3, 1));
    }

    #[test]
    fn notes_match_their_path_and_what_is_inside_it_only() {
        let note = |path: &str| Unreadable {
            path: path.to_owned(),
            message: "m",
        };
        let notes = [note("a.b"), note("a.b.c"), note("a.b[0]"), note("a.bc")];
        let found: Vec<&str> = unreadable_within(&notes, "a.b")
            .map(|n| n.path.as_str())
            .collect();
        assert_eq!(found, ["a.b", "a.b.c", "a.b[0]"]);
        assert_eq!(unreadable_at(&notes, "a.bc"), Some("m"));
        assert_eq!(unreadable_at(&notes, "a"), None);
    }

    #[test]
    fn parser_messages_are_one_bounded_line() {
        assert_eq!(parser_message("expected `=`\n  | a = x"), "expected `=`");
        assert_eq!(parser_message(""), "syntax error");
        let long = "x".repeat(MESSAGE_CHARS + 5);
        assert_eq!(parser_message(&long).chars().count(), MESSAGE_CHARS + 1);
    }

    #[test]
    fn literal_text_keeps_its_references_as_written() {
        let env = std::collections::HashMap::from([("HOME".to_owned(), "/h".to_owned())]);
        for text in ["${HOME}", "$${HOME}", "a${HOME}b${X}", "$$", "plain"] {
            let escaped = literal(text.to_owned());
            assert_eq!(crate::expand(&escaped, &env).unwrap(), text, "{text}");
        }
    }
}

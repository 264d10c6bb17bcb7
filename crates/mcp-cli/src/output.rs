//! Output for people (aligned tables, colour on a terminal unless `NO_COLOR`) and for scripts (`--json`).
//!
//! With `--json` every command prints exactly one JSON document on stdout
//! and nothing else there; notes, progress and errors go to stderr.
//!
//! Servers choose much of what is printed (names, descriptions, error
//! messages, tool output), and a terminal interprets control characters:
//! none a server sent ever reaches one raw. Text for people goes through
//! [`mcp_proto::text::escape`]: table cells and one-line messages with
//! [`line`](fn@line) (line breaks escaped too), multi-line text such as a tool's
//! output with [`block`] (line breaks and tabs kept), on a terminal or
//! not, since a pipe's reader (`less -R`, a later `cat`) interprets them
//! just the same. JSON documents are exact: the strings parse back to what
//! the server sent, and the characters JSON would leave raw that a
//! terminal could act on (DEL, C1 controls, bidirectional overrides) are
//! written as `\uXXXX` escapes ([`SafeJson`]).

use std::borrow::Cow;
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a JSON document went to stdout.
static JSON_PRINTED: AtomicBool = AtomicBool::new(false);

use mcp_proto::text::{self, Lines};
use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter, PrettyFormatter};

/// How to print.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Output {
    /// `--json`.
    pub(crate) json: bool,
    /// Colour on stdout: a terminal, and `NO_COLOR` unset or empty.
    pub(crate) color: bool,
    /// Colour on stderr, by the same rule.
    pub(crate) color_stderr: bool,
    /// Progress lines on stderr (see [`crate::progress`]): stderr is a
    /// terminal that can move its cursor (`TERM` is not `dumb`) and the
    /// run is not `--json`. `NO_COLOR` does not turn it off.
    pub(crate) progress: bool,
}

impl Output {
    /// Decides colour from the environment (<https://no-color.org>: any
    /// non-empty `NO_COLOR` turns it off) and whether each stream is a terminal.
    pub(crate) fn new(json: bool) -> Self {
        let capable = std::env::var_os("TERM").is_none_or(|term| term != "dumb");
        let allowed = std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty()) && capable;
        Output {
            json,
            color: allowed && !json && io::stdout().is_terminal(),
            color_stderr: allowed && io::stderr().is_terminal(),
            progress: capable && !json && io::stderr().is_terminal(),
        }
    }

    /// Prints `value` as the one JSON document of this run.
    pub(crate) fn json(&self, value: &impl Serialize) -> io::Result<()> {
        let mut text = to_json(value)?;
        text.push('\n');
        JSON_PRINTED.store(true, Ordering::SeqCst);
        write_stdout(&text)
    }

    /// Whether this run's JSON document is already on stdout (an error
    /// after it then goes to stderr, so stdout stays one document).
    pub(crate) fn json_printed(&self) -> bool {
        JSON_PRINTED.load(Ordering::SeqCst)
    }

    /// Prints text for people on stdout.
    pub(crate) fn text(&self, text: &str) -> io::Result<()> {
        write_stdout(text)
    }

    /// Paints `text` for stdout.
    pub(crate) fn paint(&self, paint: Paint, text: &str) -> String {
        paint.apply(text, self.color)
    }

    /// Paints `text` for stderr.
    pub(crate) fn paint_err(&self, paint: Paint, text: &str) -> String {
        paint.apply(text, self.color_stderr)
    }
}

/// Server text for one line (a table cell, a message): every control
/// character, line breaks included, shown escaped.
pub(crate) fn line(text: &str) -> Cow<'_, str> {
    text::escape(text, Lines::One)
}

/// `word` as one POSIX shell word: as it is when it is plain, else in single quotes.
pub(crate) fn shell_word(word: &str) -> Cow<'_, str> {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    }
}

/// Server text that may span lines (a tool's text output): line breaks and
/// tabs kept, every other control character shown escaped.
pub(crate) fn block(text: &str) -> Cow<'_, str> {
    text::escape(text, Lines::Keep)
}

/// A failure's cause under its line: the first line the server wrote to
/// stdout that is not JSON-RPC (`stray`), marked as such, then each line of
/// what it said on stderr (`cause`), each indented by `indent`; empty
/// without either.
pub(crate) fn cause_lines(stray: Option<&str>, cause: Option<&str>, indent: &str) -> String {
    let stray = stray
        .into_iter()
        .map(|said| format!("\n{indent}stdout, not JSON-RPC: {}", line(said)));
    let stderr = cause
        .into_iter()
        .flat_map(str::lines)
        .map(|said| format!("\n{indent}stderr: {}", line(said)));
    stray.chain(stderr).collect()
}

/// `value` as pretty-printed JSON that is safe on a terminal (see
/// [`SafeJson`]).
pub(crate) fn to_json(value: &impl Serialize) -> io::Result<String> {
    write_json(value, PrettyFormatter::new())
}

/// `value` as compact JSON on one line, safe on a terminal; empty if it
/// cannot be serialized.
pub(crate) fn to_json_line(value: &impl Serialize) -> String {
    write_json(value, CompactFormatter).unwrap_or_default()
}

fn write_json(value: &impl Serialize, formatter: impl Formatter) -> io::Result<String> {
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, SafeJson(formatter));
    value.serialize(&mut serializer).map_err(io::Error::other)?;
    String::from_utf8(bytes).map_err(io::Error::other)
}

/// A serde_json formatter, except that inside strings every character
/// [`text::is_unsafe`] names that JSON allows raw (DEL, C1 controls,
/// bidirectional overrides, U+2028/U+2029) is written as a `\uXXXX`
/// escape. The document means exactly the same; a terminal showing it
/// just has nothing to interpret. (Controls below U+0020 serde_json
/// escapes already.) JSON kept as received (a tool's schema) is written
/// through the same rule: such characters can only stand inside its
/// strings, where the escape means the same.
pub(crate) struct SafeJson<F>(F);

impl<F: Formatter> Formatter for SafeJson<F> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((index, c)) = rest.char_indices().find(|&(_, c)| text::is_unsafe(c)) {
            writer.write_all(&rest.as_bytes()[..index])?;
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[index + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    fn write_raw_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.write_string_fragment(writer, fragment)
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        self.0.write_char_escape(writer, escape)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

/// Writes to stdout; a closed pipe (`mcpctl tools | head`) is not an error.
fn write_stdout(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// A colour or weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Paint {
    /// Good news: ready, success.
    Green,
    /// In progress, or needs attention.
    Yellow,
    /// Failure.
    Red,
    /// Less important.
    Dim,
    /// Headers.
    Bold,
}

impl Paint {
    fn apply(self, text: &str, enabled: bool) -> String {
        if !enabled || text.is_empty() {
            return text.to_owned();
        }
        let code = match self {
            Paint::Green => "32",
            Paint::Yellow => "33",
            Paint::Red => "31",
            Paint::Dim => "2",
            Paint::Bold => "1",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

/// A table for people: a header row and left-aligned columns separated by
/// two spaces; the last column is not padded. Every cell is shown with
/// [`line`](fn@line) (its text may be a server's), then measured in characters
/// before painting, so colour never shifts a column.
#[derive(Debug, Default)]
pub(crate) struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<(String, Option<Paint>)>>,
}

impl Table {
    /// A table with these column headers.
    pub(crate) fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row of plain cells.
    #[cfg(test)]
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.painted_row(cells.into_iter().map(|cell| (cell, None)).collect());
    }

    /// Adds a row whose cells may be painted.
    pub(crate) fn painted_row(&mut self, cells: Vec<(String, Option<Paint>)>) {
        self.rows.push(
            cells
                .into_iter()
                .map(|(cell, paint)| (line(&cell).into_owned(), paint))
                .collect(),
        );
    }

    /// Renders the table; `None` paints nothing.
    pub(crate) fn render(&self, output: &Output) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (index, (cell, _)) in row.iter().enumerate().take(columns) {
                widths[index] = widths[index].max(width(cell));
            }
        }
        let mut text = String::new();
        let header: Vec<(String, Option<Paint>)> = self
            .headers
            .iter()
            .map(|h| (h.to_uppercase(), Some(Paint::Bold)))
            .collect();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (index, (cell, paint)) in row.iter().enumerate().take(columns) {
                let painted = match paint {
                    Some(paint) => output.paint(*paint, cell),
                    None => cell.clone(),
                };
                line.push_str(&painted);
                if index + 1 < columns.min(row.len()) {
                    let pad = widths[index] - width(cell) + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

/// The first line of `text`, at most `max` characters (with `…` when cut).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_without_colour() {
        let output = Output {
            json: false,
            color: false,
            color_stderr: false,
            progress: false,
        };
        let mut table = Table::new(&["id", "status", "note"]);
        table.row(vec!["demo".into(), "ready".into(), "".into()]);
        table.painted_row(vec![
            ("everything-long".into(), None),
            ("error".into(), Some(Paint::Red)),
            ("missing_env".into(), None),
        ]);
        assert_eq!(
            table.render(&output),
            "ID               STATUS  NOTE\n\
             demo             ready\n\
             everything-long  error   missing_env\n"
        );
    }

    #[test]
    fn colour_does_not_shift_columns() {
        let output = Output {
            json: false,
            color: true,
            color_stderr: false,
            progress: false,
        };
        let mut table = Table::new(&["a", "b"]);
        table.painted_row(vec![("x".into(), Some(Paint::Green)), ("y".into(), None)]);
        assert_eq!(
            table.render(&output),
            "\x1b[1mA\x1b[0m  \x1b[1mB\x1b[0m\n\x1b[32mx\x1b[0m  y\n"
        );
    }

    #[test]
    fn cells_never_carry_controls() {
        let output = Output {
            json: false,
            color: false,
            color_stderr: false,
            progress: false,
        };
        let mut table = Table::new(&["tool", "description"]);
        table.row(vec![
            "ctl\x1b[31mred".into(),
            "Nice tool\x1b]0;PWNED\x07\u{9b}2J\u{202e}".into(),
        ]);
        assert_eq!(
            table.render(&output),
            "TOOL            DESCRIPTION\n\
             ctl\\x1b[31mred  Nice tool\\x1b]0;PWNED\\x07\\u{9b}2J\\u{202e}\n"
        );
    }

    #[test]
    fn json_is_exact_and_has_nothing_a_terminal_acts_on() {
        let value = serde_json::json!({"d": "a\x1b[2J\u{9b}\u{7f}\u{202e}\u{2028}é\\"});
        let text = to_json(&value).unwrap();
        // Pretty-printing's own line breaks are the only controls.
        assert!(
            !text.chars().any(|c| c != '\n' && text::is_unsafe(c)),
            "{text}"
        );
        assert!(
            text.contains(r"\u001b[2J\u009b\u007f\u202e\u2028é\\"),
            "{text}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
        let plain = serde_json::json!({"a": [1, {"b": null}], "c": "x"});
        assert_eq!(
            to_json(&plain).unwrap(),
            serde_json::to_string_pretty(&plain).unwrap()
        );
    }

    #[test]
    fn json_kept_as_received_is_made_safe_too() {
        // A schema is written as the server sent it, raw characters and all.
        let schema: mcp_proto::types::JsonText =
            serde_json::from_str("{\"description\": \"x\u{9b}2J\u{202e}\u{7f}y\"}").unwrap();
        let text = to_json(&serde_json::json!({"ok": 1})).unwrap() + &to_json_line(&[&schema]);
        assert!(
            !text.chars().any(|c| c != '\n' && text::is_unsafe(c)),
            "{text:?}"
        );
        assert!(
            text.contains(r#"[{"description": "x\u009b2J\u202e\u007fy"}]"#),
            "{text}"
        );
        let back: Vec<serde_json::Value> = serde_json::from_str(&to_json_line(&[&schema])).unwrap();
        assert_eq!(back[0]["description"], "x\u{9b}2J\u{202e}\u{7f}y");
    }

    #[test]
    fn one_line_cuts() {
        assert_eq!(one_line("\n  first line\nsecond", 80), "first line");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("", 4), "");
    }
}

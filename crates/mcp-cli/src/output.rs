//! Output for people (aligned tables, colour on a terminal unless `NO_COLOR`) and for scripts (`--json`).
//!
//! With `--json` every command prints exactly one JSON document on stdout
//! and nothing else there; notes, progress and errors go to stderr.

use std::io::{self, IsTerminal, Write};

use serde::Serialize;

/// How to print.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Output {
    /// `--json`.
    pub(crate) json: bool,
    /// Colour on stdout: a terminal, and `NO_COLOR` unset or empty.
    pub(crate) color: bool,
    /// Colour on stderr, by the same rule.
    pub(crate) color_stderr: bool,
}

impl Output {
    /// Decides colour from the environment (<https://no-color.org>: any
    /// non-empty `NO_COLOR` turns it off) and whether each stream is a terminal.
    pub(crate) fn new(json: bool) -> Self {
        let allowed = std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
            && std::env::var_os("TERM").is_none_or(|term| term != "dumb");
        Output {
            json,
            color: allowed && !json && io::stdout().is_terminal(),
            color_stderr: allowed && io::stderr().is_terminal(),
        }
    }

    /// Prints `value` as the one JSON document of this run.
    pub(crate) fn json(&self, value: &impl Serialize) -> io::Result<()> {
        let mut text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        text.push('\n');
        write_stdout(&text)
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
/// two spaces; the last column is not padded. Cells are measured in
/// characters before painting, so colour never shifts a column.
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
        self.rows
            .push(cells.into_iter().map(|cell| (cell, None)).collect());
    }

    /// Adds a row whose cells may be painted.
    pub(crate) fn painted_row(&mut self, cells: Vec<(String, Option<Paint>)>) {
        self.rows.push(cells);
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
        };
        let mut table = Table::new(&["a", "b"]);
        table.painted_row(vec![("x".into(), Some(Paint::Green)), ("y".into(), None)]);
        assert_eq!(
            table.render(&output),
            "\x1b[1mA\x1b[0m  \x1b[1mB\x1b[0m\n\x1b[32mx\x1b[0m  y\n"
        );
    }

    #[test]
    fn one_line_cuts() {
        assert_eq!(one_line("\n  first line\nsecond", 80), "first line");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("", 4), "");
    }
}

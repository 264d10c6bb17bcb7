//! A JSON tree that keeps repeated keys and where each value was written, and the field readers the format modules share.
//!
//! Two dialects are read, both with `jsonc-parser`: [`Dialect::Strict`] is
//! RFC 8259 JSON (the store), and [`Dialect::Lenient`] adds `//` and `/* */`
//! comments and trailing commas, nothing else (the hosts' files: VS Code,
//! Zed and Claude Code accept both). Every value's 1-based line and column
//! is recorded under its written path (`mcpServers.github.env.TOKEN`), so a
//! diagnostic can point at the text.
//!
//! `serde_json::Value` silently keeps one of two repeated keys; a config file
//! with `"github"` twice is ambiguous and must be reported instead
//! (`duplicate_id`). Parsing into this tree only ever fails on syntax, and
//! syntax errors are described here from the parser's error kind, so no
//! message quotes the input (possibly a secret). Type errors are written
//! here too, by hand, naming the field and never its value.

use std::cell::Cell;
use std::collections::HashMap;
use std::str::FromStr;

use jsonc_parser::ast::{ObjectPropName, Value};
use jsonc_parser::errors::ParseErrorKind;
use jsonc_parser::{CollectOptions, ParseOptions, ParseStringErrorKind, parse_to_ast};

use crate::diagnostic::{Code, Diagnostic};

/// A parsed JSON value whose objects keep every key, repeated or not, in order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// Where a syntax error is, and what it is (described from the parser's
/// error kind; never quotes the input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) message: String,
}

/// Which JSON a document is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// RFC 8259 JSON and nothing else: the store.
    Strict,
    /// JSON with `//` and `/* */` comments and trailing commas (JSONC, as
    /// VS Code, Zed and Claude Code read it); nothing else from JSON5.
    Lenient,
}

/// A 1-based line and column (counted in characters) in a document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// Where every value of a document starts, keyed by the written path that
/// [`join_key`] and [`join_index`] build. Of a repeated key, the first
/// occurrence is recorded (the one [`Json::get`] finds).
#[derive(Clone, Debug, Default)]
pub(crate) struct Positions {
    by_path: HashMap<String, Position>,
}

impl Positions {
    /// The position of the value at `path`, or of its nearest enclosing
    /// value when `path` names something absent (a missing field points at
    /// its object). The document itself is never the answer: a problem
    /// about the whole document has no useful position.
    pub(crate) fn locate(&self, path: &str) -> Option<Position> {
        let mut path = path;
        while !path.is_empty() {
            if let Some(position) = self.by_path.get(path) {
                return Some(*position);
            }
            path = &path[..path.rfind(['.', '[']).unwrap_or(0)];
        }
        None
    }
}

/// A document: its tree and where each value was written.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub(crate) root: Json,
    pub(crate) positions: Positions,
}

/// Parses strict JSON (the store's dialect) into its tree.
pub(crate) fn parse(text: &str) -> Result<Json, SyntaxError> {
    read(text, Dialect::Strict).map(|parsed| parsed.root)
}

/// Parses a document in `dialect`, with the position of every value. A
/// leading byte-order mark is skipped (editors on Windows write one);
/// positions count from after it.
pub(crate) fn read(text: &str, dialect: Dialect) -> Result<Parsed, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lenient = dialect == Dialect::Lenient;
    let options = ParseOptions {
        allow_comments: lenient,
        allow_trailing_commas: lenient,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let lines = LineIndex::new(text);
    let result = parse_to_ast(text, &CollectOptions::default(), &options).map_err(|error| {
        // Some errors (a missing comma) sit where the previous value ended;
        // the position given is where the unexpected text starts.
        let start = error.range().start;
        let skipped = text
            .get(start..)
            .map_or(0, |rest| rest.len() - rest.trim_start().len());
        lines.error(start + skipped, describe_parse_error(error.kind()))
    })?;
    let Some(value) = result.value else {
        return Err(lines.error(text.len(), String::from("the document is empty")));
    };
    let mut builder = Builder {
        text,
        lines: &lines,
        positions: Positions::default(),
    };
    let root = builder.convert(&value, String::new())?;
    Ok(Parsed {
        root,
        positions: builder.positions,
    })
}

/// Turns the parser's error kind into words. The few kinds that would carry
/// input text (an invalid unicode escape) are described without it.
fn describe_parse_error(kind: &ParseErrorKind) -> String {
    let text = match kind {
        ParseErrorKind::CommentsNotAllowed => "comments are not allowed here",
        ParseErrorKind::TrailingCommasNotAllowed => "trailing comma",
        ParseErrorKind::ExpectedColonAfterObjectKey => "expected `:` after the key",
        ParseErrorKind::ExpectedObjectValue => "expected a value after `:`",
        ParseErrorKind::ExpectedStringObjectProperty => "expected a key in double quotes",
        ParseErrorKind::ExpectedComma => "expected `,` between values",
        ParseErrorKind::MultipleRootJsonValues => "more than one value at the top level",
        ParseErrorKind::UnexpectedCloseBrace => "unexpected `}`",
        ParseErrorKind::UnexpectedCloseBracket => "unexpected `]`",
        ParseErrorKind::UnexpectedColon => "unexpected `:`",
        ParseErrorKind::UnexpectedComma => "unexpected `,`",
        ParseErrorKind::UnexpectedWord | ParseErrorKind::UnexpectedToken => {
            "expected a value (a string in double quotes, a number, an object, an array, true, false or null)"
        }
        ParseErrorKind::UnexpectedTokenInObject => "expected a key in double quotes or `}`",
        ParseErrorKind::UnterminatedArray => "the array is not closed with `]`",
        ParseErrorKind::UnterminatedObject => "the object is not closed with `}`",
        ParseErrorKind::UnterminatedCommentBlock => "the comment is not closed with `*/`",
        ParseErrorKind::NestingDepthExceeded => "values are nested too deeply",
        ParseErrorKind::SingleQuotedStringsNotAllowed => "strings must be in double quotes",
        ParseErrorKind::String(ParseStringErrorKind::UnterminatedStringLiteral) => {
            "the string is not closed with `\"`"
        }
        ParseErrorKind::String(
            ParseStringErrorKind::ExpectedFourHexDigits
            | ParseStringErrorKind::InvalidUnicodeEscapeSequence(_),
        ) => "invalid `\\u` escape in a string",
        ParseErrorKind::String(_) => "invalid escape in a string",
        ParseErrorKind::BareDecimalPointNumbersNotAllowed
        | ParseErrorKind::ExpectedDigit
        | ParseErrorKind::ExpectedDigitFollowingNegativeSign
        | ParseErrorKind::ExpectedPlusMinusOrDigitInNumberLiteral
        | ParseErrorKind::HexadecimalNumbersNotAllowed
        | ParseErrorKind::NonFiniteNumbersNotAllowed
        | ParseErrorKind::UnaryPlusNumbersNotAllowed => "invalid number",
        // `jsonc-parser`'s `serde` feature adds a variant (a message of its
        // deserializer, which this crate does not use).
        #[allow(unreachable_patterns)]
        _ => "not JSON",
    };
    text.to_owned()
}

/// Byte offsets of line starts, to turn an offset into a [`Position`].
struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        for (index, byte) in bytes.iter().enumerate() {
            // `\r\n` is one break; a lone `\r` is one too, as for the parser.
            let breaks = *byte == b'\n' || (*byte == b'\r' && bytes.get(index + 1) != Some(&b'\n'));
            if breaks {
                starts.push(index + 1);
            }
        }
        LineIndex { text, starts }
    }

    fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|start| *start <= offset);
        let start = self.starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |prefix| prefix.chars().count());
        Position {
            line,
            column: column + 1,
        }
    }

    fn error(&self, offset: usize, message: String) -> SyntaxError {
        let Position { line, column } = self.position(offset);
        SyntaxError {
            line,
            column,
            message,
        }
    }
}

struct Builder<'t, 'l> {
    text: &'t str,
    lines: &'l LineIndex<'t>,
    positions: Positions,
}

impl Builder<'_, '_> {
    fn record(&mut self, path: &str, offset: usize) {
        if !path.is_empty() && !self.positions.by_path.contains_key(path) {
            let position = self.lines.position(offset);
            self.positions.by_path.insert(path.to_owned(), position);
        }
    }

    /// JSON strings cannot hold raw control characters (RFC 8259 §7); the
    /// parser lets them through, so they are refused here.
    fn check_string(&self, start: usize, end: usize) -> Result<(), SyntaxError> {
        let raw = self.text.get(start..end).unwrap_or_default();
        match raw.char_indices().find(|(_, c)| u32::from(*c) < 0x20) {
            Some((at, _)) => Err(self.lines.error(
                start + at,
                String::from("a line break or control character inside a string; write it as an escape such as \\n"),
            )),
            None => Ok(()),
        }
    }

    fn convert(&mut self, value: &Value<'_>, path: String) -> Result<Json, SyntaxError> {
        Ok(match value {
            Value::NullKeyword(null) => {
                self.record(&path, null.range.start);
                Json::Null
            }
            Value::BooleanLit(b) => {
                self.record(&path, b.range.start);
                Json::Bool(b.value)
            }
            Value::NumberLit(n) => {
                self.record(&path, n.range.start);
                match serde_json::Number::from_str(n.value) {
                    Ok(number) => Json::Number(number),
                    Err(_) => {
                        return Err(self
                            .lines
                            .error(n.range.start, String::from("invalid number")));
                    }
                }
            }
            Value::StringLit(s) => {
                self.check_string(s.range.start, s.range.end)?;
                self.record(&path, s.range.start);
                Json::String(s.value.clone().into_owned())
            }
            Value::Array(array) => {
                self.record(&path, array.range.start);
                let mut items = Vec::with_capacity(array.elements.len());
                for (index, element) in array.elements.iter().enumerate() {
                    items.push(self.convert(element, join_index(&path, index))?);
                }
                Json::Array(items)
            }
            Value::Object(object) => {
                self.record(&path, object.range.start);
                let mut members = Vec::with_capacity(object.properties.len());
                for property in &object.properties {
                    let key = match &property.name {
                        ObjectPropName::String(name) => {
                            self.check_string(name.range.start, name.range.end)?;
                            name.value.clone().into_owned()
                        }
                        // Unquoted keys are not allowed in either dialect,
                        // so the parser never yields one; refused all the same.
                        ObjectPropName::Word(word) => {
                            return Err(self.lines.error(
                                word.range.start,
                                String::from("expected a key in double quotes"),
                            ));
                        }
                    };
                    let value = self.convert(&property.value, join_key(&path, &key))?;
                    members.push((key, value));
                }
                Json::Object(members)
            }
        })
    }
}

impl Json {
    /// A short name of the JSON type, for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }

    /// The first value stored under `key`, if this is an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn as_object(&self) -> Option<&[(String, Json)]> {
        match self {
            Json::Object(members) => Some(members),
            _ => None,
        }
    }
}

/// Appends an object key to a JSON path: `.key` for identifier-like keys,
/// `["my key"]` otherwise, so the path can be read back unambiguously.
pub(crate) fn join_key(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!(
            "{path}[{}]",
            serde_json::to_string(key).unwrap_or_else(|_| String::from("\"?\""))
        ),
    }
}

/// Appends an array index to a JSON path.
pub(crate) fn join_index(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

/// Reads the fields of one object, collecting every problem instead of
/// stopping at the first (an entry that fails reports all its faults at once).
#[derive(Debug)]
pub(crate) struct FieldReader<'a> {
    members: &'a [(String, Json)],
    /// Which members a reader asked for; the others are reported as ignored.
    seen: Vec<Cell<bool>>,
    path: String,
    server: Option<String>,
    pub(crate) problems: Vec<Diagnostic>,
}

impl<'a> FieldReader<'a> {
    /// A reader over `members`, found at `path`. Repeated keys are reported
    /// right away: which of the two values was meant is unknowable.
    pub(crate) fn new(
        members: &'a [(String, Json)],
        path: impl Into<String>,
        server: Option<String>,
    ) -> Self {
        let mut reader = FieldReader {
            members,
            seen: members.iter().map(|_| Cell::new(false)).collect(),
            path: path.into(),
            server,
            problems: Vec::new(),
        };
        for (index, (key, _)) in members.iter().enumerate() {
            if members[..index].iter().any(|(earlier, _)| earlier == key) {
                reader.problem(
                    Code::InvalidField,
                    join_key(&reader.path, key),
                    format!("`{key}` is given more than once; keep one"),
                );
            }
        }
        reader
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    pub(crate) fn server(&self) -> Option<String> {
        self.server.clone()
    }

    pub(crate) fn field_path(&self, key: &str) -> String {
        join_key(&self.path, key)
    }

    pub(crate) fn problem(&mut self, code: Code, field: String, message: impl Into<String>) {
        self.problems
            .push(Diagnostic::new(code, self.server.clone(), field, message));
    }

    /// The raw value of `key`, if present. Asking marks the key as read.
    pub(crate) fn raw(&self, key: &str) -> Option<&'a Json> {
        let mut found = None;
        for (index, (k, v)) in self.members.iter().enumerate() {
            if k == key {
                self.seen[index].set(true);
                found = found.or(Some(v));
            }
        }
        found
    }

    /// The keys no reader asked for, in document order, each once: fields
    /// this crate has no concept for.
    pub(crate) fn unread(&self) -> Vec<&'a str> {
        let mut keys: Vec<&'a str> = Vec::new();
        for (index, (key, _)) in self.members.iter().enumerate() {
            if !self.seen[index].get() && !keys.contains(&key.as_str()) {
                keys.push(key);
            }
        }
        keys
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.raw(key).is_some()
    }

    fn wrong_type(&mut self, key: &str, expected: &str, found: &Json) {
        let field = self.field_path(key);
        let message = format!("`{key}` must be {expected}, not {}", found.type_name());
        self.problem(Code::InvalidField, field, message);
    }

    /// An optional string. `null` counts as absent.
    pub(crate) fn string(&mut self, key: &str) -> Option<String> {
        match self.raw(key)? {
            Json::Null => None,
            Json::String(s) => Some(s.clone()),
            other => {
                self.wrong_type(key, "a string", other);
                None
            }
        }
    }

    /// A required string: absent is `missing_field`.
    pub(crate) fn required_string(&mut self, key: &str) -> Option<String> {
        if matches!(self.raw(key), None | Some(Json::Null)) {
            let field = self.field_path(key);
            self.problem(Code::MissingField, field, format!("`{key}` is required"));
            return None;
        }
        self.string(key)
    }

    /// An optional boolean.
    pub(crate) fn bool(&mut self, key: &str) -> Option<bool> {
        match self.raw(key)? {
            Json::Null => None,
            Json::Bool(b) => Some(*b),
            other => {
                self.wrong_type(key, "true or false", other);
                None
            }
        }
    }

    /// An optional number of milliseconds: a non-negative integer.
    pub(crate) fn millis(&mut self, key: &str) -> Option<u64> {
        match self.raw(key)? {
            Json::Null => None,
            Json::Number(n) => match n.as_u64() {
                Some(value) => Some(value),
                None => {
                    let field = self.field_path(key);
                    self.problem(
                        Code::InvalidField,
                        field,
                        format!("`{key}` must be a whole number of milliseconds, zero or more"),
                    );
                    None
                }
            },
            other => {
                self.wrong_type(key, "a whole number of milliseconds", other);
                None
            }
        }
    }

    /// An optional array of strings; absent is empty.
    pub(crate) fn string_array(&mut self, key: &str) -> Vec<String> {
        self.array(
            key,
            "an array of strings",
            |reader, item, field| match item {
                Json::String(s) => Some(s.clone()),
                other => {
                    let message = format!(
                        "every entry of `{key}` must be a string, not {}",
                        other.type_name()
                    );
                    reader.problem(Code::InvalidField, field, message);
                    None
                }
            },
        )
    }

    /// An optional array whose entries `entry` reads (given this reader,
    /// the entry and its field path; it reports its own problems and
    /// returns `None` for an entry it refused); absent or `null` is empty,
    /// any other type is one `invalid_field` saying it must be `expected`.
    fn array<T>(
        &mut self,
        key: &str,
        expected: &str,
        mut entry: impl FnMut(&mut Self, &'a Json, String) -> Option<T>,
    ) -> Vec<T> {
        match self.raw(key) {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Array(items)) => {
                let base = self.field_path(key);
                items
                    .iter()
                    .enumerate()
                    .filter_map(|(index, item)| entry(self, item, join_index(&base, index)))
                    .collect()
            }
            Some(other) => {
                self.wrong_type(key, expected, other);
                Vec::new()
            }
        }
    }

    /// An optional object of string values (`{"NAME": "value"}`), in order;
    /// absent is empty.
    pub(crate) fn string_map(&mut self, key: &str) -> Vec<(String, String)> {
        let Some(value) = self.raw(key) else {
            return Vec::new();
        };
        match value {
            Json::Null => Vec::new(),
            Json::Object(members) => {
                let base = self.field_path(key);
                let mut out = Vec::with_capacity(members.len());
                for (index, (name, item)) in members.iter().enumerate() {
                    let field = join_key(&base, name);
                    if members[..index].iter().any(|(earlier, _)| earlier == name) {
                        self.problem(
                            Code::InvalidField,
                            field,
                            format!("`{name}` is given more than once in `{key}`; keep one"),
                        );
                        continue;
                    }
                    match item {
                        Json::String(s) => out.push((name.clone(), s.clone())),
                        other => {
                            let message = format!(
                                "the value of `{name}` in `{key}` must be a string, not {}",
                                other.type_name()
                            );
                            self.problem(Code::InvalidField, field, message);
                        }
                    }
                }
                out
            }
            other => {
                self.wrong_type(key, "an object of string values", other);
                Vec::new()
            }
        }
    }

    /// An optional array of `{"key": ..., "value": ..., "saved": bool?}`
    /// rows (the store's env, headers and envHeaders); absent is empty.
    pub(crate) fn key_value_rows(&mut self, key: &str) -> Vec<Row> {
        self.array(
            key,
            "an array of {key, value} objects",
            |reader, item, field| {
                let Json::Object(members) = item else {
                    let message = format!(
                        "every entry of `{key}` must be an object with `key` and `value`, not {}",
                        item.type_name()
                    );
                    reader.problem(Code::InvalidField, field, message);
                    return None;
                };
                let mut row = FieldReader::new(members, field, reader.server.clone());
                let k = row.required_string("key");
                let value = row.string("value").unwrap_or_default();
                let saved = row.bool("saved").unwrap_or(false);
                reader.problems.append(&mut row.problems);
                Some(Row {
                    key: k?,
                    value,
                    saved,
                })
            },
        )
    }
}

/// One `{key, value, saved}` row as read.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) saved: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(text: &str) -> Result<Json, SyntaxError> {
        parse(text)
    }

    fn lenient(text: &str) -> Result<Json, SyntaxError> {
        read(text, Dialect::Lenient).map(|parsed| parsed.root)
    }

    #[test]
    fn repeated_keys_are_kept() {
        let tree = strict(r#"{"a": 1, "a": 2}"#).unwrap();
        assert_eq!(tree.as_object().unwrap().len(), 2);
    }

    #[test]
    fn syntax_errors_carry_a_position_and_no_input() {
        for dialect in [Dialect::Strict, Dialect::Lenient] {
            let error = read("{\n  \"k\": \"sk-SECRET\",\n  oops\n}", dialect).unwrap_err();
            assert_eq!((error.line, error.column), (3, 3), "{error:?}");
            assert!(!error.message.contains("SECRET"), "{}", error.message);
            assert!(!error.message.contains("oops"), "{}", error.message);
            assert!(!error.message.contains(" line "), "{}", error.message);
        }
        let error = strict("{\"k\": \"\\uD83D-sk-SECRET\"}").unwrap_err();
        assert!(!error.message.contains("SECRET"), "{}", error.message);
        assert!(!error.message.contains("D83D"), "{}", error.message);
    }

    #[test]
    fn the_lenient_dialect_takes_comments_and_trailing_commas_and_nothing_else() {
        let text =
            "// user settings\n{\n  /* servers */ \"a\": [1, 2,],\n  \"b\": {\"c\": true,},\n}\n";
        let tree = lenient(text).unwrap();
        assert_eq!(
            tree.get("a"),
            Some(&Json::Array(vec![
                Json::Number(1.into()),
                Json::Number(2.into())
            ]))
        );
        assert_eq!(
            strict(text).unwrap_err().message,
            "comments are not allowed here"
        );
        assert_eq!(
            strict("{\"a\": [1,]}").unwrap_err().message,
            "trailing comma"
        );
        for json5 in [
            "{a: 1}",
            "{\"a\": 'x'}",
            "{\"a\": 0x1F}",
            "{\"a\": +1}",
            "{\"a\": .5}",
            "{\"a\": 5.}",
            "{\"a\": NaN}",
            "{\"a\": Infinity}",
            "{\"a\": \"\\x41\"}",
            "{\"a\": \"\\v\"}",
            "{\"a\": 1 \"b\": 2}",
            "{\"a\": 01}",
            "{\"a\": \"line\nbreak\"}",
            "{\"a\": \"tab\there\"}",
        ] {
            for dialect in [Dialect::Strict, Dialect::Lenient] {
                assert!(
                    read(json5, dialect).is_err(),
                    "{dialect:?} accepted {json5}"
                );
            }
        }
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_an_empty_document_is_an_error() {
        let parsed = read("\u{feff}{\"a\": 1}", Dialect::Strict).unwrap();
        assert_eq!(
            parsed.positions.locate("a"),
            Some(Position { line: 1, column: 7 })
        );
        let error = strict("  \n ").unwrap_err();
        assert_eq!(
            (error.line, error.column, error.message.as_str()),
            (2, 2, "the document is empty")
        );
    }

    #[test]
    fn every_value_has_its_line_and_column_under_its_written_path() {
        let text = "{\r\n  \"mcpServers\": {\n    \"my server\": {\"args\": [\"é\", \"x\"],\n      \"env\": {\"A=B\": null}}}, \"k\": 1, \"k\": 2}";
        let parsed = read(text, Dialect::Lenient).unwrap();
        let at = |path: &str| parsed.positions.locate(path).map(|p| (p.line, p.column));
        assert_eq!(at("mcpServers"), Some((2, 17)));
        assert_eq!(at("mcpServers[\"my server\"]"), Some((3, 18)));
        assert_eq!(at("mcpServers[\"my server\"].args[1]"), Some((3, 33)));
        assert_eq!(at("mcpServers[\"my server\"].env[\"A=B\"]"), Some((4, 22)));
        // Something absent points at what encloses it.
        assert_eq!(at("mcpServers[\"my server\"].command"), Some((3, 18)));
        // A repeated key: the first occurrence.
        assert_eq!(at("k"), Some((4, 36)));
        assert_eq!(at(""), None);
        assert_eq!(at("nothing"), None);
    }

    #[test]
    fn unread_keys_are_listed_once() {
        let tree = strict(r#"{"command": "x", "trust": true, "dev": {}, "trust": false}"#).unwrap();
        let reader = FieldReader::new(tree.as_object().unwrap(), "", None);
        assert!(reader.raw("command").is_some());
        assert_eq!(reader.unread(), ["trust", "dev"]);
    }

    #[test]
    fn paths_quote_unusual_keys() {
        assert_eq!(join_key("", "mcpServers"), "mcpServers");
        assert_eq!(
            join_key("mcpServers", "my server"),
            "mcpServers[\"my server\"]"
        );
        assert_eq!(join_key("a", "b-c_1"), "a.b-c_1");
    }

    #[test]
    fn type_errors_never_quote_values() {
        let tree =
            strict(r#"{"timeout": "sk-SECRET", "args": ["a", {"x": "sk-SECRET"}]}"#).unwrap();
        let mut reader = FieldReader::new(tree.as_object().unwrap(), "", None);
        assert_eq!(reader.millis("timeout"), None);
        assert_eq!(reader.string_array("args"), vec!["a".to_owned()]);
        assert_eq!(reader.problems.len(), 2);
        for problem in &reader.problems {
            assert!(!problem.message.contains("SECRET"), "{problem}");
        }
    }
}

//! A JSON tree that keeps repeated keys, and the field readers the format modules share.
//!
//! `serde_json::Value` silently keeps one of two repeated keys; a config file
//! with `"github"` twice is ambiguous and must be reported instead
//! (`duplicate_id`). Parsing into this tree only ever fails on syntax, so no
//! serde "invalid type: string \"...\"" message, which would quote a value
//! (possibly a secret), can reach a diagnostic. Type errors are written here,
//! by hand, naming the field and never its value.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

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

/// Where a syntax error is, and what it is (serde_json's description, which
/// never quotes the input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) message: String,
}

/// Parses a document. A leading byte-order mark is skipped (editors on
/// Windows write one).
pub(crate) fn parse(text: &str) -> Result<Json, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str::<Json>(text).map_err(|error| {
        let full = error.to_string();
        // serde_json appends " at line L column C"; keep the position in
        // fields of its own.
        let message = match full.rfind(" at line ") {
            Some(at) => full[..at].to_owned(),
            None => full,
        };
        SyntaxError {
            line: error.line(),
            column: error.column(),
            message,
        }
    })
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

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        // serde_json never produces a non-finite float from text; the
        // fallback only keeps this total.
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            members.push((key, value));
        }
        Ok(Json::Object(members))
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

    /// The raw value of `key`, if present.
    pub(crate) fn raw(&self, key: &str) -> Option<&'a Json> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
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
        let Some(value) = self.raw(key) else {
            return Vec::new();
        };
        match value {
            Json::Null => Vec::new(),
            Json::Array(items) => {
                let base = self.field_path(key);
                let mut out = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    match item {
                        Json::String(s) => out.push(s.clone()),
                        other => {
                            let message = format!(
                                "every entry of `{key}` must be a string, not {}",
                                other.type_name()
                            );
                            self.problem(Code::InvalidField, join_index(&base, index), message);
                        }
                    }
                }
                out
            }
            other => {
                self.wrong_type(key, "an array of strings", other);
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
        let Some(value) = self.raw(key) else {
            return Vec::new();
        };
        match value {
            Json::Null => Vec::new(),
            Json::Array(items) => {
                let base = self.field_path(key);
                let mut out = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let row_path = join_index(&base, index);
                    let Json::Object(members) = item else {
                        let message = format!(
                            "every entry of `{key}` must be an object with `key` and `value`, not {}",
                            item.type_name()
                        );
                        self.problem(Code::InvalidField, row_path, message);
                        continue;
                    };
                    let mut row = FieldReader::new(members, row_path, self.server.clone());
                    let k = row.required_string("key");
                    let v = row.string("value").unwrap_or_default();
                    let saved = row.bool("saved").unwrap_or(false);
                    self.problems.append(&mut row.problems);
                    if let Some(k) = k {
                        out.push(Row {
                            key: k,
                            value: v,
                            saved,
                        });
                    }
                }
                out
            }
            other => {
                self.wrong_type(key, "an array of {key, value} objects", other);
                Vec::new()
            }
        }
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

    #[test]
    fn repeated_keys_are_kept() {
        let tree = parse(r#"{"a": 1, "a": 2}"#).unwrap();
        assert_eq!(tree.as_object().unwrap().len(), 2);
    }

    #[test]
    fn syntax_errors_carry_a_position_and_no_input() {
        let error = parse("{\n  \"k\": \"sk-SECRET\",\n  oops\n}").unwrap_err();
        assert_eq!((error.line, error.column), (3, 3));
        assert!(!error.message.contains("SECRET"), "{}", error.message);
        assert!(!error.message.contains(" at line "), "{}", error.message);
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
        let tree = parse(r#"{"timeout": "sk-SECRET", "args": ["a", {"x": "sk-SECRET"}]}"#).unwrap();
        let mut reader = FieldReader::new(tree.as_object().unwrap(), "", None);
        assert_eq!(reader.millis("timeout"), None);
        assert_eq!(reader.string_array("args"), vec!["a".to_owned()]);
        assert_eq!(reader.problems.len(), 2);
        for problem in &reader.problems {
            assert!(!problem.message.contains("SECRET"), "{problem}");
        }
    }
}

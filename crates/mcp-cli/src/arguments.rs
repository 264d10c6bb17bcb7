//! A call's arguments as a person types them: JSON documents, `key=value` pairs coerced by the tool's input schema, `key=@file`, and `-` for JSON on stdin.
//!
//! Every token is read before anything connects ([`parse`]): bad JSON, a
//! pair without a key, a file that cannot be read or stdin that is not
//! JSON end the run with exit 2 and nothing started. Pairs wait for the
//! tool's input schema ([`Parsed::resolve`]): a property of type `string`
//! takes the value as written; `number`, `integer`, `boolean` and `null`
//! parse it as that JSON scalar; `array` and `object` parse it as JSON;
//! a property the schema does not type takes JSON when the value is valid
//! JSON, else the text. The bridge then validates the object against the
//! whole schema, as for a JSON document. `key=@file` takes the file's
//! text exactly as it is, a final line break included (a JSON-typed
//! property ignores it, as JSON does).

use std::io::Read;

use mcp_proto::types::json_kind;
use serde_json::{Map, Value};

use crate::exit::CliError;

/// The tokens after `call SERVER TOOL`, read.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// One call per JSON document (`-` is the document on stdin); none
    /// means one call with `{}`.
    Documents(Vec<Value>),
    /// One call with an object made of these pairs, in order.
    Pairs(Vec<(String, String)>),
}

/// Reads `tokens`: all `key=value` pairs, or all JSON documents (and `-`).
pub(crate) fn parse(tokens: &[String]) -> Result<Parsed, CliError> {
    let is_pair = |token: &str| {
        !token.trim_start().starts_with(['{', '[', '"'])
            && token
                .split_once('=')
                .is_some_and(|(key, _)| !key.is_empty())
    };
    if !tokens.is_empty() && tokens.iter().all(|t| is_pair(t)) {
        let mut pairs = Vec::with_capacity(tokens.len());
        for token in tokens {
            let (key, value) = token.split_once('=').unwrap_or((token, ""));
            let value = match value.strip_prefix('@') {
                Some(path) => std::fs::read_to_string(path).map_err(|e| {
                    CliError::usage(format!("{key}=@{path}: cannot read the file: {e}"))
                        .code("invalid_arguments")
                })?,
                None => value.to_owned(),
            };
            pairs.push((key.to_owned(), value));
        }
        return Ok(Parsed::Pairs(pairs));
    }
    if let Some(pair) = tokens.iter().find(|t| is_pair(t)) {
        return Err(CliError::usage(format!(
            "`{}` is a key=value pair among JSON documents",
            crate::output::line(pair)
        ))
        .hint("give either key=value pairs (one call) or JSON objects (one call each)")
        .code("invalid_arguments"));
    }
    let mut stdin_read = false;
    let documents = tokens
        .iter()
        .map(|token| {
            if token == "-" {
                if stdin_read {
                    return Err(CliError::usage("`-` (stdin) is given more than once")
                        .code("invalid_arguments"));
                }
                stdin_read = true;
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text).map_err(|e| {
                    CliError::usage(format!("cannot read the arguments from stdin: {e}"))
                        .code("invalid_arguments")
                })?;
                Ok(text)
            } else {
                Ok(token.clone())
            }
        })
        .collect::<Result<Vec<String>, CliError>>()?;
    parse_documents(&documents).map(Parsed::Documents)
}

impl Parsed {
    /// The arguments of each call, pairs coerced by `schema` (a tool's
    /// `inputSchema`).
    pub(crate) fn resolve(self, schema: &Map<String, Value>) -> Result<Vec<Value>, CliError> {
        let pairs = match self {
            Parsed::Documents(documents) if documents.is_empty() => {
                return Ok(vec![Value::Object(Map::new())]);
            }
            Parsed::Documents(documents) => return Ok(documents),
            Parsed::Pairs(pairs) => pairs,
        };
        let properties = schema.get("properties").and_then(Value::as_object);
        let mut object = Map::new();
        for (key, text) in pairs {
            let kind = properties
                .and_then(|p| p.get(&key))
                .and_then(|property| property.get("type"))
                .and_then(type_name);
            object.insert(key.clone(), coerce(&key, &text, kind)?);
        }
        Ok(vec![Value::Object(object)])
    }
}

/// A property's JSON type: the first of a list that is not `null`.
fn type_name(kind: &Value) -> Option<&str> {
    match kind {
        Value::String(name) => Some(name),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .find(|name| *name != "null")
            .or(Some("null")),
        _ => None,
    }
}

fn coerce(key: &str, text: &str, kind: Option<&str>) -> Result<Value, CliError> {
    let parsed = || serde_json::from_str::<Value>(text.trim());
    let wrong = |what: &str| {
        CliError::usage(format!(
            "{key}={}: the schema wants {what}",
            crate::output::line(text)
        ))
        .hint("`mcpctl tools --schema` shows the tool's input schema")
        .code("invalid_arguments")
    };
    match kind {
        Some("string") => Ok(Value::String(text.to_owned())),
        Some("number") => parsed()
            .ok()
            .filter(Value::is_number)
            .ok_or_else(|| wrong("a number")),
        Some("integer") => parsed()
            .ok()
            .filter(|v| v.is_i64() || v.is_u64())
            .ok_or_else(|| wrong("an integer")),
        Some("boolean") => parsed()
            .ok()
            .filter(Value::is_boolean)
            .ok_or_else(|| wrong("true or false")),
        Some("null") => parsed()
            .ok()
            .filter(Value::is_null)
            .ok_or_else(|| wrong("null")),
        Some("array") => parsed()
            .ok()
            .filter(Value::is_array)
            .ok_or_else(|| wrong("a JSON array")),
        Some("object") => parsed()
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| wrong("a JSON object")),
        _ => Ok(parsed().unwrap_or_else(|_| Value::String(text.to_owned()))),
    }
}

/// Parses every JSON document; each must be an object. No document means
/// one call without arguments.
fn parse_documents(documents: &[String]) -> Result<Vec<Value>, CliError> {
    if documents.is_empty() {
        return Ok(vec![Value::Object(Map::new())]);
    }
    documents
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let which = if documents.len() == 1 {
                "the arguments".to_owned()
            } else {
                format!("arguments #{}", index + 1)
            };
            let value: Value = serde_json::from_str(text).map_err(|e| {
                CliError::usage(format!("{which} are not valid JSON: {e}"))
                    .hint(r#"pass one JSON object, e.g. '{"text": "hi"}' (quoted for the shell)"#)
                    .code("invalid_arguments")
            })?;
            match value {
                Value::Object(_) => Ok(value),
                other => Err(CliError::usage(format!(
                    "{which} must be a JSON object, not {}",
                    json_kind(&other)
                ))
                .hint(r#"wrap them in an object, e.g. '{"text": "hi"}'"#)
                .code("invalid_arguments")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pairs(tokens: &[&str]) -> Parsed {
        parse(&tokens.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn pairs_are_coerced_by_the_schema() {
        let schema = json!({"properties": {
            "text": {"type": "string"}, "n": {"type": "number"}, "i": {"type": "integer"},
            "b": {"type": "boolean"}, "tags": {"type": "array"}, "o": {"type": ["object", "null"]},
        }});
        let schema = schema.as_object().unwrap();
        let resolved = pairs(&[
            "text=42",
            "n=1.5",
            "i=3",
            "b=true",
            "tags=[1,\"a\"]",
            "o={\"k\":1}",
            "free=7",
            "word=hi",
        ])
        .resolve(schema)
        .unwrap();
        assert_eq!(
            resolved,
            [
                json!({"text": "42", "n": 1.5, "i": 3, "b": true, "tags": [1, "a"], "o": {"k": 1}, "free": 7, "word": "hi"})
            ]
        );
        for bad in ["n=x", "i=1.5", "b=yes", "tags=1"] {
            let error = pairs(&[bad]).resolve(schema).unwrap_err();
            assert!(
                error.message.contains("the schema wants"),
                "{bad}: {}",
                error.message
            );
        }
    }

    #[test]
    fn arguments_must_be_json_objects() {
        assert_eq!(parse_documents(&[]).unwrap(), vec![json!({})]);
        assert_eq!(
            parse_documents(&[r#"{"a": 1}"#.to_owned()]).unwrap(),
            vec![json!({"a": 1})]
        );
        let error = parse_documents(&["{\"a\": ".to_owned()]).unwrap_err();
        assert_eq!(error.exit, crate::exit::Exit::Usage);
        assert!(
            error.message.contains("not valid JSON"),
            "{}",
            error.message
        );
        let error = parse_documents(&["{}".to_owned(), "[1]".to_owned()]).unwrap_err();
        assert!(
            error
                .message
                .contains("arguments #2 must be a JSON object, not an array")
        );
    }

    #[test]
    fn json_and_pairs_do_not_mix() {
        let tokens = vec!["{}".to_owned(), "a=1".to_owned()];
        assert!(
            parse(&tokens)
                .unwrap_err()
                .message
                .contains("among JSON documents")
        );
        assert!(matches!(pairs(&[r#"{"a=": 1}"#]), Parsed::Documents(_)));
    }
}

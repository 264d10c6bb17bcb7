//! Argument validation against a tool's input schema, before dispatch.
//!
//! Schemas are JSON Schema 2020-12 unless their `$schema` names another
//! draft (MCP 2025-11-25 "JSON Schema usage"); draft-07 is the other one
//! servers use in practice. The validator never fetches anything: remote
//! and file `$ref`s fail to resolve, and such a schema counts as one this
//! crate cannot check (see [`ArgumentSchema::problem`]).
//!
//! A schema that cannot be compiled does not make its tool unusable: the
//! call goes to the server unchecked, since the server remains the
//! authority on its own arguments, and the problem is logged once when the
//! schema is compiled.

use std::fmt;

use mcp_proto::types::{JsonText, json_kind};
use serde_json::Value;

use crate::text::truncate_chars;

/// How many problems one [`InvalidArguments`] lists; the rest are counted.
const MAX_PROBLEMS: usize = 8;
/// The longest problem message, in characters.
const MAX_PROBLEM_CHARS: usize = 240;
/// Schemas up to this size (compact JSON, bytes) are quoted in the message,
/// so the model can fix its call without asking for the schema.
const MAX_QUOTED_SCHEMA: usize = 4096;

/// A tool's compiled input schema.
pub struct ArgumentSchema {
    validator: Option<jsonschema::Validator>,
    problem: Option<String>,
    quoted: Option<String>,
}

impl fmt::Debug for ArgumentSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentSchema")
            .field("compiled", &self.validator.is_some())
            .field("problem", &self.problem)
            .finish_non_exhaustive()
    }
}

impl ArgumentSchema {
    /// Compiles `schema` (a tool's `inputSchema`).
    pub fn compile(schema: &JsonText) -> Self {
        let value = schema.to_value();
        let quoted = Some(schema.as_str())
            .filter(|s| s.len() <= MAX_QUOTED_SCHEMA)
            .map(str::to_owned);
        match jsonschema::options().offline().build(&value) {
            Ok(validator) => ArgumentSchema {
                validator: Some(validator),
                problem: None,
                quoted,
            },
            Err(error) => {
                let problem = truncate_chars(&error.to_string(), MAX_PROBLEM_CHARS);
                tracing::warn!(%problem, "a tool's input schema cannot be compiled; its calls go unchecked");
                ArgumentSchema {
                    validator: None,
                    problem: Some(problem),
                    quoted,
                }
            }
        }
    }

    /// Why the schema could not be compiled, if it could not; calls are
    /// then not checked locally.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Checks `arguments` (a missing or `null` value counts as `{}`) and
    /// returns the object to send.
    pub fn check(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> Result<serde_json::Map<String, Value>, InvalidArguments> {
        let object = match arguments {
            Value::Null => serde_json::Map::new(),
            Value::Object(object) => object.clone(),
            other => {
                return Err(InvalidArguments {
                    tool: tool.to_owned(),
                    problems: vec![ArgumentProblem {
                        path: String::new(),
                        message: format!(
                            "the arguments must be a JSON object, not {}",
                            json_kind(other)
                        ),
                    }],
                    more: 0,
                    schema: self.quoted.clone(),
                });
            }
        };
        let Some(validator) = &self.validator else {
            return Ok(object);
        };
        let instance = Value::Object(object);
        let mut problems = Vec::new();
        let mut more = 0;
        for error in validator.iter_errors(&instance) {
            if problems.len() == MAX_PROBLEMS {
                more += 1;
                continue;
            }
            problems.push(ArgumentProblem {
                path: error.instance_path().to_string(),
                message: truncate_chars(&error.to_string(), MAX_PROBLEM_CHARS),
            });
        }
        if problems.is_empty() {
            match instance {
                Value::Object(object) => Ok(object),
                _ => Ok(serde_json::Map::new()),
            }
        } else {
            Err(InvalidArguments {
                tool: tool.to_owned(),
                problems,
                more,
                schema: self.quoted.clone(),
            })
        }
    }
}

/// Arguments that do not match a tool's input schema. Its `Display` is the
/// message for the model: what is wrong, where, and the schema when it is
/// small, so that the next call can be right.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidArguments {
    /// The tool's model name.
    pub tool: String,
    /// The first problems found.
    pub problems: Vec<ArgumentProblem>,
    /// How many more problems there were.
    pub more: usize,
    schema: Option<String>,
}

/// One mismatch between the arguments and the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentProblem {
    /// A JSON pointer into the arguments (`""` for the whole object).
    pub path: String,
    /// What is wrong, in the validator's words.
    pub message: String,
}

impl InvalidArguments {
    /// The problems found elsewhere (a gateway's report of a call it
    /// refused), without the schema the model's text would quote.
    pub(crate) fn reported(tool: String, problems: Vec<ArgumentProblem>, more: usize) -> Self {
        InvalidArguments {
            tool,
            problems,
            more,
            schema: None,
        }
    }
}

impl fmt::Display for InvalidArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Invalid arguments for tool {}; nothing was sent. Fix these and call it again:",
            self.tool
        )?;
        for problem in &self.problems {
            let path = if problem.path.is_empty() {
                "(arguments)"
            } else {
                &problem.path
            };
            write!(f, "\n- at {path}: {}", problem.message)?;
        }
        if self.more > 0 {
            write!(f, "\n- and {} more", self.more)?;
        }
        if let Some(schema) = &self.schema {
            write!(f, "\nThe tool's input schema: {schema}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidArguments {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> ArgumentSchema {
        match value {
            Value::Object(map) => ArgumentSchema::compile(&JsonText::from(map)),
            other => panic!("not an object schema: {other}"),
        }
    }

    fn add_schema() -> ArgumentSchema {
        schema(json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        }))
    }

    #[test]
    fn valid_arguments_pass_through_unchanged() {
        let args = add_schema().check("t", &json!({"a": 1, "b": 2.5})).unwrap();
        assert_eq!(Value::Object(args), json!({"a": 1, "b": 2.5}));
    }

    #[test]
    fn violations_name_the_place_and_the_rule() {
        let error = add_schema()
            .check("mcp_fixture_add", &json!({"a": "one"}))
            .unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("Invalid arguments for tool mcp_fixture_add"),
            "{message}"
        );
        assert!(
            message.contains("at /a: \"one\" is not of type \"number\""),
            "{message}"
        );
        assert!(
            message.contains("\"b\" is a required property"),
            "{message}"
        );
        assert!(
            message.contains(r#"The tool's input schema: {"#)
                && message.contains(r#""required":["a","b"]"#),
            "{message}"
        );
        assert_eq!(error.problems.len(), 2);
    }

    #[test]
    fn null_means_no_arguments_and_non_objects_are_refused() {
        let open = schema(json!({"type": "object"}));
        assert_eq!(open.check("t", &Value::Null).unwrap().len(), 0);
        let error = open.check("t", &json!([1])).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("must be a JSON object, not an array")
        );
        assert!(add_schema().check("t", &Value::Null).is_err());
    }

    #[test]
    fn draft_2020_12_is_the_default() {
        // `prefixItems` exists only from 2020-12.
        let tuple = schema(json!({
            "type": "object",
            "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}
        }));
        assert!(tuple.check("t", &json!({"pair": ["a", 1]})).is_ok());
        assert!(tuple.check("t", &json!({"pair": [1, "a"]})).is_err());
    }

    #[test]
    fn draft_07_is_honoured_when_declared() {
        // In draft-07, `items` as an array is positional; `dependencies` exists.
        let tuple = schema(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}},
            "dependencies": {"x": ["y"]}
        }));
        assert!(tuple.problem().is_none());
        assert!(tuple.check("t", &json!({"pair": ["a", 1]})).is_ok());
        assert!(tuple.check("t", &json!({"pair": [1, "a"]})).is_err());
        assert!(tuple.check("t", &json!({"x": 1})).is_err());
    }

    #[test]
    fn local_refs_resolve_and_remote_refs_are_never_fetched() {
        let local = schema(json!({
            "type": "object",
            "$defs": {"n": {"type": "integer"}},
            "properties": {"n": {"$ref": "#/$defs/n"}}
        }));
        assert!(local.check("t", &json!({"n": "x"})).is_err());
        // A remote reference: compiling fails instead of fetching, and the
        // tool stays callable, unchecked.
        let remote = schema(json!({
            "type": "object",
            "properties": {"n": {"$ref": "https://example.invalid/schema.json"}}
        }));
        assert!(remote.problem().is_some());
        assert!(remote.check("t", &json!({"n": "anything"})).is_ok());
    }

    #[test]
    fn many_problems_are_capped() {
        let strict = schema(json!({
            "type": "object",
            "additionalProperties": {"type": "integer"}
        }));
        let mut args = serde_json::Map::new();
        for i in 0..20 {
            args.insert(format!("k{i}"), json!("s"));
        }
        let error = strict.check("t", &Value::Object(args)).unwrap_err();
        assert_eq!(error.problems.len(), MAX_PROBLEMS);
        assert_eq!(error.more, 12);
        assert!(error.to_string().contains("and 12 more"));
    }
}

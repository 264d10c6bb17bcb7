//! Tests of the dialects: hand-written schemas of well-known MCP servers'
//! tools before and after, the rules one at a time, and random schemas
//! whose declarations must satisfy each dialect's meta-schema.

use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Declares `schema`: a server's text (whose key order the declaration
/// keeps) or a `json!` value (whose order is `serde_json`'s).
fn declared(schema: impl Into<JsonText>, dialect: SchemaDialect) -> Declared {
    let declared = declare(&schema.into(), dialect);
    if let Err(problem) = check_declaration(dialect, &declared.schema) {
        panic!(
            "{dialect:?} declaration breaks the dialect: {problem}\n{}",
            Value::Object(declared.schema.clone())
        );
    }
    declared
}

fn meta(dialect: SchemaDialect) -> &'static jsonschema::Validator {
    static STRICT: OnceLock<jsonschema::Validator> = OnceLock::new();
    static GEMINI: OnceLock<jsonschema::Validator> = OnceLock::new();
    let cell = match dialect {
        SchemaDialect::OpenAiStrict => &STRICT,
        _ => &GEMINI,
    };
    cell.get_or_init(|| {
        let text = dialect.meta_schema().expect("a meta-schema");
        let document: Value = serde_json::from_str(text).expect("meta-schema JSON");
        jsonschema::options()
            .offline()
            .build(&document)
            .expect("the meta-schema compiles")
    })
}

/// Whether `schema` is a declaration `dialect` accepts: its meta-schema,
/// plus the rules JSON Schema cannot state, plus (strict) that it is a
/// JSON Schema the validator compiles.
pub(crate) fn check_declaration(dialect: SchemaDialect, schema: &JsonObject) -> Result<(), String> {
    let value = Value::Object(schema.clone());
    if dialect == SchemaDialect::AsIs {
        return Ok(());
    }
    let problems: Vec<String> = meta(dialect)
        .iter_errors(&value)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    let mut properties = 0;
    walk(&value, &mut |node| {
        let Some(map) = node.as_object() else {
            return Err("a schema that is not an object".into());
        };
        let names: Vec<&String> = map
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().collect())
            .unwrap_or_default();
        properties += names.len();
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if dialect == SchemaDialect::OpenAiStrict && map.contains_key("properties") {
            let mut want: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            let mut have = required.clone();
            want.sort_unstable();
            have.sort_unstable();
            if want != have {
                return Err(format!("required {have:?} is not every property {want:?}"));
            }
        }
        if dialect == SchemaDialect::Gemini
            && let Some(missing) = required.iter().find(|r| !names.iter().any(|n| n == *r))
        {
            return Err(format!(
                "required names {missing:?}, which is not a property"
            ));
        }
        Ok(())
    })?;
    if dialect == SchemaDialect::OpenAiStrict {
        if properties > STRICT_MAX_PROPERTIES {
            return Err(format!("{properties} properties"));
        }
        jsonschema::options()
            .offline()
            .build(&value)
            .map_err(|e| format!("does not compile: {e}"))?;
    }
    Ok(())
}

fn walk(node: &Value, visit: &mut dyn FnMut(&Value) -> Result<(), String>) -> Result<(), String> {
    visit(node)?;
    let Some(map) = node.as_object() else {
        return Ok(());
    };
    for key in ["properties", "$defs"] {
        if let Some(Value::Object(children)) = map.get(key) {
            for child in children.values() {
                walk(child, visit)?;
            }
        }
    }
    if let Some(items) = map.get("items") {
        walk(items, visit)?;
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for branch in branches {
            walk(branch, visit)?;
        }
    }
    Ok(())
}

/// `value` with every `required` list of names sorted.
fn required_sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| {
                    let value = match value {
                        Value::Array(mut names) if key == "required" => {
                            names.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                            Value::Array(names)
                        }
                        other => required_sorted(other),
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(required_sorted).collect()),
        other => other,
    }
}

fn reasons(declared: &Declared) -> String {
    declared.fidelity.reasons().join("\n")
}

// ------------------------------------------------- well-known MCP tools

/// `read_text_file` of the reference filesystem server (zod-generated,
/// draft-07, closed objects).
fn filesystem_read_text_file() -> JsonText {
    JsonText::from_text(
        r#"{
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "tail": {"type": "number", "description": "If provided, returns only the last N lines of the file"},
            "head": {"type": "number", "description": "If provided, returns only the first N lines of the file"}
        },
        "required": ["path"],
        "additionalProperties": false
    }"#,
    )
    .unwrap()
}

/// `edit_file` of the filesystem server: an array of edit objects and a
/// flag with a default.
fn filesystem_edit_file() -> JsonText {
    JsonText::from_text(
        r#"{
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "oldText": {"type": "string", "description": "Text to search for - must match exactly"},
                        "newText": {"type": "string", "description": "Text to replace with"}
                    },
                    "required": ["oldText", "newText"],
                    "additionalProperties": false
                }
            },
            "dryRun": {"type": "boolean", "default": false, "description": "Preview changes using git-style diff format"}
        },
        "required": ["path", "edits"],
        "additionalProperties": false
    }"#,
    )
    .unwrap()
}

/// `create_issue` of the GitHub server: optional lists and a number.
fn github_create_issue() -> JsonText {
    JsonText::from_text(
        r#"{
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Repository owner"},
            "repo": {"type": "string", "description": "Repository name"},
            "title": {"type": "string", "description": "Issue title"},
            "body": {"type": "string", "description": "Issue body content"},
            "assignees": {"type": "array", "items": {"type": "string"}, "description": "Usernames to assign to this issue"},
            "labels": {"type": "array", "items": {"type": "string"}, "description": "Labels to apply to this issue"},
            "milestone": {"type": "number", "description": "Milestone number"}
        },
        "required": ["owner", "repo", "title"]
    }"#,
    )
    .unwrap()
}

/// `search_repositories` of the GitHub server: bounded page sizes.
fn github_search_repositories() -> JsonText {
    JsonText::from_text(
        r#"{
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Search query"},
            "page": {"type": "number", "minimum": 1, "description": "Page number for pagination (min 1)"},
            "perPage": {"type": "number", "minimum": 1, "maximum": 100, "description": "Results per page for pagination (min 1, max 100)"}
        },
        "required": ["query"]
    }"#,
    )
    .unwrap()
}

/// `browser_click` of the Playwright server: enums, an array of enums.
fn playwright_browser_click() -> JsonText {
    JsonText::from_text(
        r#"{
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "element": {"type": "string", "description": "Human-readable element description used to obtain permission to interact with the element"},
            "ref": {"type": "string", "description": "Exact target element reference from the page snapshot"},
            "doubleClick": {"type": "boolean", "description": "Whether to perform a double click instead of a single click"},
            "button": {"type": "string", "enum": ["left", "right", "middle"], "description": "Button to click, defaults to left"},
            "modifiers": {"type": "array", "items": {"type": "string", "enum": ["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]}, "description": "Modifier keys to press"}
        },
        "required": ["element", "ref"],
        "additionalProperties": false
    }"#,
    )
    .unwrap()
}

/// `browser_navigate` of the Playwright server.
fn playwright_browser_navigate() -> JsonText {
    JsonText::from_text(
        r#"{
        "type": "object",
        "properties": {"url": {"type": "string", "description": "The URL to navigate to"}},
        "required": ["url"],
        "additionalProperties": false
    }"#,
    )
    .unwrap()
}

#[test]
fn filesystem_read_text_file_per_dialect() {
    let schema = filesystem_read_text_file();
    let as_is = declared(schema.clone(), SchemaDialect::AsIs);
    assert_eq!(as_is.schema_text().as_str(), schema.as_str());
    assert_eq!(schema, Value::Object(as_is.schema));
    assert!(as_is.fidelity.is_exact());

    let strict = declared(schema.clone(), SchemaDialect::OpenAiStrict);
    assert_eq!(
        Value::Object(strict.schema.clone()),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "tail": {"type": ["number", "null"], "description": "If provided, returns only the last N lines of the file"},
                "head": {"type": ["number", "null"], "description": "If provided, returns only the first N lines of the file"}
            },
            "required": ["path", "tail", "head"],
            "additionalProperties": false
        })
    );
    assert!(strict.fidelity.is_exact(), "{}", reasons(&strict));
    // The nulls strict mode makes the model send mean "absent".
    assert_eq!(
        strict.restore_arguments(json!({"path": "a.txt", "tail": null, "head": 5})),
        json!({"path": "a.txt", "head": 5})
    );

    let gemini = declared(schema, SchemaDialect::Gemini);
    assert_eq!(
        Value::Object(gemini.schema.clone()),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "tail": {"type": "number", "description": "If provided, returns only the last N lines of the file"},
                "head": {"type": "number", "description": "If provided, returns only the first N lines of the file"}
            },
            "required": ["path"]
        })
    );
    assert!(
        reasons(&gemini).contains("additionalProperties: false is not declared"),
        "{}",
        reasons(&gemini)
    );
}

#[test]
fn filesystem_edit_file_per_dialect() {
    let strict = declared(filesystem_edit_file(), SchemaDialect::OpenAiStrict);
    assert!(strict.fidelity.is_exact(), "{}", reasons(&strict));
    assert_eq!(
        Value::Object(strict.schema.clone())["properties"]["edits"],
        json!({
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {"type": "string", "description": "Text to search for - must match exactly"},
                    "newText": {"type": "string", "description": "Text to replace with"}
                },
                "required": ["oldText", "newText"],
                "additionalProperties": false
            }
        })
    );
    // `default` is an annotation and goes; the optional flag turns nullable.
    assert_eq!(
        Value::Object(strict.schema)["properties"]["dryRun"],
        json!({"type": ["boolean", "null"], "description": "Preview changes using git-style diff format"})
    );

    let gemini = declared(filesystem_edit_file(), SchemaDialect::Gemini);
    let schema = Value::Object(gemini.schema);
    assert_eq!(schema["required"], json!(["path", "edits"]));
    assert_eq!(
        schema["properties"]["edits"]["items"]["required"],
        json!(["oldText", "newText"])
    );
    assert!(
        schema["properties"]["edits"]["items"]
            .get("additionalProperties")
            .is_none()
    );
}

#[test]
fn github_tools_per_dialect() {
    let strict = declared(github_create_issue(), SchemaDialect::OpenAiStrict);
    assert!(strict.fidelity.is_exact(), "{}", reasons(&strict));
    let schema = Value::Object(strict.schema.clone());
    assert_eq!(
        schema["required"],
        json!([
            "owner",
            "repo",
            "title",
            "body",
            "assignees",
            "labels",
            "milestone"
        ])
    );
    assert_eq!(
        schema["properties"]["labels"],
        json!({"type": ["array", "null"], "items": {"type": "string"}, "description": "Labels to apply to this issue"})
    );
    assert_eq!(
        strict.restore_arguments(json!({
            "owner": "o", "repo": "r", "title": "t", "body": null,
            "assignees": null, "labels": ["bug"], "milestone": null
        })),
        json!({"owner": "o", "repo": "r", "title": "t", "labels": ["bug"]})
    );
    let gemini = declared(github_create_issue(), SchemaDialect::Gemini);
    assert!(gemini.fidelity.is_exact(), "{}", reasons(&gemini));
    assert_eq!(github_create_issue(), Value::Object(gemini.schema));

    // Number bounds are documented in both subsets.
    let strict = declared(github_search_repositories(), SchemaDialect::OpenAiStrict);
    assert!(strict.fidelity.is_exact(), "{}", reasons(&strict));
    assert_eq!(
        Value::Object(strict.schema)["properties"]["perPage"],
        json!({"type": ["number", "null"], "minimum": 1, "maximum": 100, "description": "Results per page for pagination (min 1, max 100)"})
    );
    let gemini = declared(github_search_repositories(), SchemaDialect::Gemini);
    assert!(gemini.fidelity.is_exact(), "{}", reasons(&gemini));
}

#[test]
fn playwright_tools_per_dialect() {
    let strict = declared(playwright_browser_click(), SchemaDialect::OpenAiStrict);
    assert!(strict.fidelity.is_exact(), "{}", reasons(&strict));
    let schema = Value::Object(strict.schema);
    // An optional enum takes null both in its type and among its values.
    assert_eq!(
        schema["properties"]["button"],
        json!({"type": ["string", "null"], "enum": ["left", "right", "middle", null], "description": "Button to click, defaults to left"})
    );
    assert_eq!(
        schema["properties"]["modifiers"]["items"],
        json!({"type": "string", "enum": ["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]})
    );

    let gemini = declared(playwright_browser_click(), SchemaDialect::Gemini);
    let schema = Value::Object(gemini.schema);
    assert_eq!(
        schema["properties"]["button"]["enum"],
        json!(["left", "right", "middle"])
    );
    assert_eq!(schema["required"], json!(["element", "ref"]));

    for dialect in [SchemaDialect::OpenAiStrict, SchemaDialect::Gemini] {
        let navigate = declared(playwright_browser_navigate(), dialect);
        assert_eq!(
            Value::Object(navigate.schema)["properties"]["url"],
            json!({"type": "string", "description": "The URL to navigate to"})
        );
    }
}

// ------------------------------------------------------------ the rules

#[test]
fn as_is_is_the_default_and_changes_nothing() {
    assert_eq!(SchemaDialect::default(), SchemaDialect::AsIs);
    let odd =
        json!({"type": "object", "not": {"required": ["x"]}, "patternProperties": {"^a": {}}});
    let declared = declare(&JsonText::from(&odd), SchemaDialect::AsIs);
    assert_eq!(Value::Object(declared.schema), odd);
    assert_eq!(declared.fidelity, Fidelity::Exact);
    assert!(SchemaDialect::AsIs.meta_schema().is_none());
}

#[test]
fn nullable_unions_and_constants_in_gemini() {
    let gemini = declared(
        json!({
            "type": "object",
            "properties": {
                "name": {"type": ["string", "null"]},
                "either": {"type": ["string", "integer"]},
                "mode": {"const": "fast"},
                "level": {"const": 3},
                "size": {"type": "integer", "enum": [1, 2, 4]},
                "when": {"type": "string", "format": "date-time"},
                "site": {"type": "string", "format": "uri"},
                "count": {"type": "integer", "format": "int64", "exclusiveMinimum": 0}
            }
        }),
        SchemaDialect::Gemini,
    );
    let schema = Value::Object(gemini.schema.clone());
    let p = &schema["properties"];
    assert_eq!(p["name"], json!({"type": "string", "nullable": true}));
    assert_eq!(
        p["either"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
    assert_eq!(p["mode"], json!({"type": "string", "enum": ["fast"]}));
    assert_eq!(p["level"], json!({"type": "integer"}));
    assert_eq!(p["size"], json!({"type": "integer"}));
    assert_eq!(p["when"], json!({"type": "string", "format": "date-time"}));
    assert_eq!(p["site"], json!({"type": "string"}));
    assert_eq!(p["count"], json!({"type": "integer", "format": "int64"}));
    let why = reasons(&gemini);
    for lost in [
        "at /properties/level: a const integer is not declared",
        "at /properties/size: an enum of integer values is not declared",
        "at /properties/site: the format \"uri\" is not declared",
        "at /properties/count: exclusiveMinimum is not declared",
    ] {
        assert!(why.contains(lost), "{lost} missing from:\n{why}");
    }
}

#[test]
fn gemini_parameter_names_are_identifiers_and_calls_get_the_server_names_back() {
    let gemini = declared(
        JsonText::from_text(
            r#"{
            "type": "object",
            "properties": {
                "dry-run": {"type": "boolean"},
                "dry_run": {"type": "string"},
                "9lives": {"type": "integer"},
                "nested": {"type": "object", "properties": {"a-b": {"type": "string"}}}
            },
            "required": ["dry-run", "nested"]
        }"#,
        )
        .unwrap(),
        SchemaDialect::Gemini,
    );
    let schema = Value::Object(gemini.schema.clone());
    let mut names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(names, ["_9lives", "dry_run", "dry_run_2", "nested"]);
    // The text the model reads keeps the server's order, renamed or not.
    assert!(
        gemini.schema_text().as_str().starts_with(
            r#"{"type":"object","properties":{"dry_run_2":{"type":"boolean"},"dry_run":{"type":"string"},"_9lives":{"type":"integer"},"nested":"#
        ),
        "{}",
        gemini.schema_text()
    );
    assert_eq!(schema["required"], json!(["dry_run_2", "nested"]));
    // Nested keys are not parameter names.
    assert!(
        schema["properties"]["nested"]["properties"]
            .get("a-b")
            .is_some()
    );
    assert!(
        reasons(&gemini).contains("declared as \"dry_run_2\""),
        "{}",
        reasons(&gemini)
    );
    assert_eq!(
        gemini.restore_arguments(
            json!({"dry_run_2": true, "dry_run": "x", "_9lives": 9, "nested": {"a-b": "y"}})
        ),
        json!({"dry-run": true, "dry_run": "x", "9lives": 9, "nested": {"a-b": "y"}})
    );
}

#[test]
fn gemini_inlines_references_and_loosens_recursion() {
    let tree = json!({
        "type": "object",
        "$defs": {
            "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]},
            "node": {"type": "object", "properties": {"label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
        },
        "properties": {
            "at": {"$ref": "#/$defs/point", "description": "Where"},
            "root": {"$ref": "#/$defs/node"}
        },
        "required": ["at"]
    });
    let gemini = declared(tree.clone(), SchemaDialect::Gemini);
    let schema = Value::Object(gemini.schema.clone());
    assert_eq!(
        schema["properties"]["at"],
        json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"], "description": "Where"})
    );
    assert_eq!(
        schema["properties"]["root"],
        json!({"type": "object", "properties": {"label": {"type": "string"}, "children": {"type": "array", "items": {"type": "object"}}}}),
        "the recursion is loose: {schema}"
    );
    assert!(reasons(&gemini).contains("the recursive reference \"#/$defs/node\""));
    assert!(schema.get("$defs").is_none());

    // Strict mode keeps definitions, recursion included.
    let strict = declared(tree, SchemaDialect::OpenAiStrict);
    assert!(strict.fidelity.is_exact(), "{}", reasons(&strict));
    let schema = Value::Object(strict.schema);
    assert_eq!(schema["properties"]["at"], json!({"$ref": "#/$defs/point"}));
    assert_eq!(
        schema["properties"]["root"],
        json!({"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]})
    );
    assert_eq!(
        schema["$defs"]["node"]["properties"]["children"],
        json!({"type": ["array", "null"], "items": {"$ref": "#/$defs/node"}})
    );
    assert!(schema["$defs"].get("point").is_some());
}

#[test]
fn strict_restores_nulls_through_references_unions_and_arrays() {
    let schema = json!({
        "type": "object",
        "definitions": {"opt": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"]}}}},
        "properties": {
            "list": {"type": "array", "items": {"$ref": "#/definitions/opt"}},
            "one": {"$ref": "#/definitions/opt"}
        },
        "required": ["list"]
    });
    let strict = declared(schema, SchemaDialect::OpenAiStrict);
    assert!(strict.fidelity.is_exact(), "{}", reasons(&strict));
    assert_eq!(
        strict.restore_arguments(json!({
            "list": [{"a": null, "b": null}, {"a": "x", "b": "y"}],
            "one": {"a": null, "b": null}
        })),
        // `b` may be null on the server's terms: it stays.
        json!({"list": [{"b": null}, {"a": "x", "b": "y"}], "one": {"b": null}})
    );
    assert_eq!(
        strict.restore_arguments(json!({"list": [], "one": null})),
        json!({"list": []})
    );
}

#[test]
fn one_of_becomes_any_of_and_all_of_merges() {
    let disjoint = json!({
        "type": "object",
        "properties": {"id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["id"]
    });
    for dialect in [SchemaDialect::OpenAiStrict, SchemaDialect::Gemini] {
        let d = declared(disjoint.clone(), dialect);
        assert!(d.fidelity.is_exact(), "{dialect:?}: {}", reasons(&d));
        assert_eq!(
            Value::Object(d.schema)["properties"]["id"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
    }
    let overlapping = json!({
        "type": "object",
        "properties": {"n": {"oneOf": [{"type": "number", "minimum": 0}, {"type": "number", "maximum": 10}]}}
    });
    let d = declared(overlapping, SchemaDialect::OpenAiStrict);
    assert!(
        reasons(&d).contains("oneOf is declared as anyOf"),
        "{}",
        reasons(&d)
    );

    let merged = declared(
        json!({
            "type": "object",
            "allOf": [
                {"properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer", "minimum": 2}}, "required": ["b"]}
            ]
        }),
        SchemaDialect::OpenAiStrict,
    );
    assert!(merged.fidelity.is_exact(), "{}", reasons(&merged));
    assert_eq!(
        Value::Object(merged.schema),
        json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 2}},
            "required": ["a", "b"],
            "additionalProperties": false
        })
    );
}

#[test]
fn unsupported_keywords_are_removed_and_named() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 5},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "extra": {"type": "object", "additionalProperties": {"type": "string"}},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}
        },
        "if": {"required": ["name"]},
        "then": {"required": ["tags"]},
        "dependentRequired": {"name": ["tags"]},
        "not": {"required": ["pair"]}
    });
    let strict = declared(schema.clone(), SchemaDialect::OpenAiStrict);
    let why = reasons(&strict);
    for lost in [
        "at (root): if is not declared",
        "at (root): not is not declared",
        "at (root): dependentRequired is not declared",
        "at /properties/name: minLength is not declared",
        "at /properties/tags: uniqueItems is not declared",
        "at /properties/extra: keys beyond the listed properties cannot be declared in strict mode",
        "at /properties/pair: a tuple's positions are declared as one item schema",
    ] {
        assert!(why.contains(lost), "{lost} missing from:\n{why}");
    }
    let gemini = declared(schema, SchemaDialect::Gemini);
    let out = Value::Object(gemini.schema.clone());
    // Gemini documents string lengths.
    assert_eq!(
        out["properties"]["name"],
        json!({"type": "string", "minLength": 1, "maxLength": 5})
    );
    assert_eq!(
        out["properties"]["pair"]["items"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
    assert!(reasons(&gemini).contains("at /properties/extra: the schema of keys beyond"));
}

#[test]
fn roots_that_are_not_objects_are_declared_loose() {
    for dialect in [SchemaDialect::OpenAiStrict, SchemaDialect::Gemini] {
        let d = declared(json!({"type": "string"}), dialect);
        assert!(
            reasons(&d).contains("the root is not an object schema"),
            "{}",
            reasons(&d)
        );
        assert_eq!(d.schema.get("type"), Some(&json!("object")));

        let union = declared(
            json!({"anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}
            ]}),
            dialect,
        );
        assert!(reasons(&union).contains("a root union is declared as one object"));
        let schema = Value::Object(union.schema);
        assert!(schema.get("anyOf").is_none());
        assert_eq!(
            schema["properties"]["a"]["type"],
            if dialect == SchemaDialect::Gemini {
                json!("string")
            } else {
                json!(["string", "null"])
            }
        );

        // An empty root is a tool without arguments: exact.
        let none = declared(json!({}), dialect);
        assert!(none.fidelity.is_exact());
    }
}

#[test]
fn strict_limits_depth_and_property_count() {
    let mut deep = json!({"type": "string"});
    for _ in 0..12 {
        deep = json!({"type": "object", "properties": {"next": deep}, "required": ["next"]});
    }
    let strict = declared(deep, SchemaDialect::OpenAiStrict);
    assert!(
        reasons(&strict).contains("nested deeper than 10 levels"),
        "{}",
        reasons(&strict)
    );

    let mut many = Map::new();
    for i in 0..5_100 {
        many.insert(format!("p{i}"), json!({"type": "string"}));
    }
    let strict = declared(
        json!({"type": "object", "properties": many}),
        SchemaDialect::OpenAiStrict,
    );
    assert_eq!(
        strict.schema["properties"].as_object().map(Map::len),
        Some(5_000)
    );
    assert!(reasons(&strict).contains("beyond 5,000"));
}

#[test]
fn reasons_are_bounded() {
    let mut properties = Map::new();
    for i in 0..40 {
        properties.insert(
            format!("{}{i}", "x".repeat(300)),
            json!({"type": "string", "format": format!("custom-{i}")}),
        );
    }
    let d = declared(
        json!({"type": "object", "properties": properties}),
        SchemaDialect::Gemini,
    );
    let reasons = d.fidelity.reasons();
    assert_eq!(reasons.len(), MAX_REASONS + 1);
    // 40 formats and 40 parameters renamed for their length.
    assert_eq!(reasons.last().map(String::as_str), Some("and 68 more"));
    assert!(
        reasons
            .iter()
            .all(|r| r.chars().count() <= MAX_REASON_CHARS + 1)
    );
}

#[test]
fn malformed_pieces_never_panic_and_are_named() {
    let d = declared(
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": 7, "required": "a"},
                "b": 5,
                "c": {"$ref": "https://example.invalid/s.json"},
                "d": {"$ref": "#/$defs/missing"},
                "e": {"type": "wat"},
                "f": false
            },
            "required": ["a", "ghost"]
        }),
        SchemaDialect::OpenAiStrict,
    );
    let why = reasons(&d);
    for lost in [
        "properties that are a number are ignored",
        "a number where a schema belongs",
        "is not local and is never fetched",
        "does not resolve",
        "the unknown type \"wat\"",
        "the required property \"ghost\" has no schema",
    ] {
        assert!(why.contains(lost), "{lost} missing from:\n{why}");
    }
}

#[test]
fn meta_schemas_refuse_what_the_dialects_refuse() {
    let strict_bad = [
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": [], "additionalProperties": false}),
        json!({"anyOf": [{"type": "object", "properties": {}, "required": [], "additionalProperties": false}]}),
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false, "allOf": []}),
        json!({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}, "required": ["a"], "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}, "required": ["a"], "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"$ref": "https://x.invalid/s"}}, "required": ["a"], "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"description": "free"}}, "required": ["a"], "additionalProperties": false}),
        json!({"type": "string"}),
    ];
    for bad in strict_bad {
        assert!(
            check_declaration(SchemaDialect::OpenAiStrict, &object(bad.clone())).is_err(),
            "strict mode takes {bad}"
        );
    }
    let mut deep = json!({"type": "string"});
    for _ in 0..11 {
        deep = json!({"type": "object", "properties": {"n": deep}, "required": ["n"], "additionalProperties": false});
    }
    assert!(check_declaration(SchemaDialect::OpenAiStrict, &object(deep)).is_err());

    let gemini_bad = [
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}),
        json!({"type": "object", "additionalProperties": false}),
        json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}),
        json!({"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "const": "x"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}}),
        json!({"type": "object", "properties": {"a": {"type": "array"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}),
        json!({"type": "array", "items": {"type": "string"}}),
    ];
    for bad in gemini_bad {
        assert!(
            check_declaration(SchemaDialect::Gemini, &object(bad.clone())).is_err(),
            "Gemini takes {bad}"
        );
    }
}

// ------------------------------------------------------ random schemas

fn keyword_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "string", "number", "integer", "boolean", "null", "object", "array"
        ])
        .prop_map(|t| json!({"type": t})),
        prop::sample::select(vec![
            "uri",
            "date-time",
            "email",
            "int64",
            "float",
            "enum",
            "uuid"
        ])
        .prop_map(|f| json!({"type": "string", "format": f})),
        prop::collection::vec(
            prop_oneof![
                Just(json!("a")),
                Just(json!(1)),
                Just(json!(2.5)),
                Just(json!(null)),
                Just(json!(true))
            ],
            0..4
        )
        .prop_map(|values| json!({"enum": values})),
        prop_oneof![
            Just(json!("c")),
            Just(json!(3)),
            Just(json!(false)),
            Just(json!(null))
        ]
        .prop_map(|c| json!({"const": c})),
        prop::sample::select(vec![
            "#/$defs/a",
            "#/$defs/b",
            "#",
            "#/definitions/c",
            "#/properties/p0",
            "#/nope",
            "https://x.invalid/s",
            "#/$defs/a/properties/p1"
        ])
        .prop_map(|r| json!({"$ref": r})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(5)),
        Just(json!({})),
        Just(json!({"type": "integer", "minimum": 0, "multipleOf": 2, "exclusiveMaximum": 9})),
        Just(json!({"type": "string", "minLength": 1, "pattern": "^a", "maxLength": "x"})),
        Just(json!({"type": ["string", "null"], "description": "maybe"})),
        Just(json!({"type": "string", "nullable": true})),
        Just(json!({"type": ["integer", "string", "boolean"]})),
        Just(json!({"not": {"type": "string"}, "x-extension": 1})),
        Just(json!({"type": "array"})),
        Just(json!({"type": 4})),
    ]
}

fn schema_strategy() -> impl Strategy<Value = Value> {
    keyword_leaf().prop_recursive(5, 48, 4, |inner| {
        let names = prop::sample::select(vec!["p0", "p1", "a/b", "~x", "ref", "type", "p2"]);
        prop_oneof![
            (
                prop::collection::btree_map(names.clone(), inner.clone(), 0..4),
                prop::collection::vec(names, 0..3),
                prop_oneof![Just(None), Just(Some(json!(false))), Just(Some(json!(true))), inner.clone().prop_map(Some)],
                any::<bool>(),
            )
                .prop_map(|(properties, required, additional, typed)| {
                    let mut o = Map::new();
                    if typed {
                        o.insert("type".into(), "object".into());
                    }
                    o.insert("properties".into(), json!(properties));
                    o.insert("required".into(), json!(required));
                    if let Some(additional) = additional {
                        o.insert("additionalProperties".into(), additional);
                    }
                    Value::Object(o)
                }),
            inner.clone().prop_map(|items| json!({"type": "array", "items": items, "minItems": 1})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|t| json!({"type": "array", "items": t})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|t| json!({"prefixItems": t, "uniqueItems": true})),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|b| json!({"anyOf": b})),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|b| json!({"oneOf": b, "description": "one"})),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|b| json!({"allOf": b})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"if": a, "then": b, "type": "object"})),
            inner.clone().prop_map(|p| json!({"type": "object", "patternProperties": {"^x": p}, "dependentRequired": {"a": ["b"]}})),
            Just(json!({"type": "object", "properties": [1, 2], "required": "p0"})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"$ref": "#/$defs/a", "allOf": [a], "description": "ref with siblings", "minProperties": b.is_object() as u8})),
        ]
    })
}

/// Schemas of what both dialects can say (and the rewrites they make
/// exactly): typed values, enums and constants of strings, objects with
/// optional properties, arrays, type lists with null, disjoint unions,
/// mergeable allOf and references to definitions.
fn clean_schema_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        prop::sample::select(vec!["string", "number", "integer", "boolean"])
            .prop_map(|t| json!({"type": t})),
        Just(json!({"type": "string", "enum": ["a", "c"]})),
        Just(json!({"const": "a"})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"type": "integer", "minimum": 1, "maximum": 5})),
        Just(json!({"$ref": "#/$defs/leaf"})),
        Just(json!({"type": "string", "description": "text"})),
    ];
    leaf.prop_recursive(4, 32, 3, |inner| {
        let names = prop::sample::select(vec!["p0", "p1", "a/b", "~x"]);
        prop_oneof![
            (
                prop::collection::btree_map(names.clone(), inner.clone(), 0..4),
                prop::collection::vec(names, 0..3),
                any::<bool>()
            )
                .prop_map(|(properties, required, closed)| {
                    let required: Vec<&str> = required
                        .into_iter()
                        .filter(|r| properties.contains_key(r))
                        .collect();
                    let mut o =
                        json!({"type": "object", "properties": properties, "required": required});
                    if closed {
                        o["additionalProperties"] = json!(false);
                    }
                    o
                }),
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
            Just(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"allOf": [
                {"type": "object", "properties": {"p0": a}, "required": ["p0"]},
                {"properties": {"p1": b}}
            ]})),
        ]
    })
}

fn root_strategy() -> impl Strategy<Value = Value> {
    (
        schema_strategy(),
        schema_strategy(),
        schema_strategy(),
        schema_strategy(),
        any::<u8>(),
    )
        .prop_map(|(body, a, b, c, shape)| {
            let mut root = match (shape % 3, body) {
                (0, Value::Object(body)) => body,
                (1, body) => {
                    let mut o = Map::new();
                    o.insert("type".into(), "object".into());
                    o.insert(
                        "properties".into(),
                        json!({"p0": body, "p1": {"type": "string"}}),
                    );
                    o.insert("required".into(), json!(["p1"]));
                    o
                }
                (_, body) => {
                    let mut o = Map::new();
                    o.insert("anyOf".into(), json!([body, {"type": "object"}]));
                    o
                }
            };
            root.insert("$defs".into(), json!({"a": a, "b": b}));
            root.insert("definitions".into(), json!({"c": c}));
            Value::Object(root)
        })
}

/// Argument values: objects with the strategies' property names, over a
/// few scalars.
fn instance_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!(null)),
        Just(json!("a")),
        Just(json!("c")),
        Just(json!(1)),
        Just(json!(2.5)),
        Just(json!(3)),
        Just(json!(true)),
    ];
    let value = leaf.prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec!["p0", "p1", "a/b", "~x"]),
                inner,
                0..3
            )
            .prop_map(|m| json!(m)),
        ]
    });
    prop::collection::btree_map(
        prop::sample::select(vec!["p0", "p1", "p2", "a/b", "~x", "ref", "type"]),
        value,
        0..4,
    )
    .prop_map(|m| json!(m))
}

fn pick(choices: &mut impl Iterator<Item = u8>, n: usize) -> usize {
    choices.next().map_or(0, |c| c as usize % n.max(1))
}

/// A value shaped after a declared schema, choices picking types,
/// branches, values and which optional properties appear.
fn sample(
    schema: &Value,
    root: &Value,
    choices: &mut impl Iterator<Item = u8>,
    depth: usize,
) -> Value {
    let Some(map) = schema.as_object() else {
        return json!(null);
    };
    if depth > 8 {
        return json!(null);
    }
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        let target = target
            .strip_prefix('#')
            .and_then(|p| root.pointer(p))
            .unwrap_or(&Value::Null);
        return sample(target, root, choices, depth + 1);
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        let branch = &branches[pick(choices, branches.len())];
        return sample(branch, root, choices, depth + 1);
    }
    for key in ["const"] {
        if let Some(value) = map.get(key) {
            return value.clone();
        }
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values[pick(choices, values.len())].clone();
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec!["string", "integer", "null", "object"],
    };
    match types[pick(choices, types.len())] {
        "object" => {
            let mut out = Map::new();
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(Value::Object(props)) = map.get("properties") {
                for (name, prop) in props {
                    if required.contains(&name.as_str()) || pick(choices, 2) == 0 {
                        out.insert(name.clone(), sample(prop, root, choices, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            let n = pick(choices, 3);
            let items = map.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..n)
                    .map(|_| sample(&items, root, choices, depth + 1))
                    .collect(),
            )
        }
        "string" => json!(["a", "c", "ab", ""][pick(choices, 4)]),
        "integer" => json!([0, 1, 2, 3, 10, 200][pick(choices, 6)]),
        "number" => json!([0.0, 1.5, 3.0, 10.0, -1.0][pick(choices, 5)]),
        "boolean" => json!(pick(choices, 2) == 0),
        _ => json!(null),
    }
}

/// A Gemini declaration as JSON Schema: `nullable` as a null type.
fn as_json_schema(schema: Value) -> Value {
    match schema {
        Value::Object(mut map) => {
            let nullable = map.remove("nullable") == Some(Value::Bool(true));
            for value in map.values_mut() {
                *value = as_json_schema(std::mem::take(value));
            }
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for value in props.values_mut() {
                    *value = as_json_schema(std::mem::take(value));
                }
            }
            if nullable {
                match map.get("type").cloned() {
                    Some(Value::String(t)) if !map.contains_key("enum") => {
                        map.insert("type".into(), json!([t, "null"]));
                    }
                    _ => {
                        return json!({"anyOf": [Value::Object(map), {"type": "null"}]});
                    }
                }
            }
            Value::Object(map)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(as_json_schema).collect()),
        other => other,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever a server sends, the declaration is one its dialect
    /// accepts, with bounded reasons, and restoring arguments never fails.
    #[test]
    fn any_schema_declares_valid_in_each_dialect(
        root in root_strategy(),
        arguments in prop_oneof![
            Just(json!({"p0": null, "p1": "x"})),
            Just(json!({"p0": {"p0": null, "a/b": [null, {"~x": null}]}, "p1": null})),
            Just(json!([null])),
            Just(json!(null)),
        ],
    ) {
        let schema = object(root);
        for dialect in [SchemaDialect::OpenAiStrict, SchemaDialect::Gemini] {
            let declared = declare(&JsonText::from(&schema), dialect);
            if let Err(problem) = check_declaration(dialect, &declared.schema) {
                return Err(TestCaseError::fail(format!(
                    "{dialect:?}: {problem}\nfrom {}\nto {}",
                    Value::Object(schema.clone()),
                    Value::Object(declared.schema.clone())
                )));
            }
            let reasons = declared.fidelity.reasons();
            prop_assert!(reasons.len() <= MAX_REASONS + 1);
            prop_assert!(reasons.iter().all(|r| r.chars().count() <= MAX_REASON_CHARS + 1));
            let _ = declared.restore_arguments(arguments.clone());
        }
        let as_is = declare(&JsonText::from(&schema), SchemaDialect::AsIs);
        prop_assert_eq!(as_is.schema, schema);
    }

    /// An exact declaration never guides the model to a call the
    /// server's schema refuses: whatever fits the declaration fits the
    /// server's schema once restored.
    #[test]
    fn exact_declarations_only_accept_what_the_server_accepts(
        root in prop_oneof![
            root_strategy(),
            (clean_schema_strategy(), clean_schema_strategy()).prop_map(|(body, leaf)| {
                json!({
                    "type": "object",
                    "properties": {"p0": body, "p1": {"type": "string"}, "p2": leaf},
                    "required": ["p1"],
                    "$defs": {"leaf": {"type": "string", "enum": ["a", "c"]}}
                })
            }),
        ],
        random in prop::collection::vec(instance_strategy(), 12),
        choices in prop::collection::vec(any::<u8>(), 12 * 64),
    ) {
        let schema = object(root);
        let Ok(original) = jsonschema::options().offline().build(&Value::Object(schema.clone())) else {
            return Ok(());
        };
        for dialect in [SchemaDialect::OpenAiStrict, SchemaDialect::Gemini] {
            let declared = declare(&JsonText::from(&schema), dialect);
            if !declared.fidelity.is_exact() {
                continue;
            }
            let as_json_schema = as_json_schema(Value::Object(declared.schema.clone()));
            let Ok(check) = jsonschema::options().offline().build(&as_json_schema) else {
                return Err(TestCaseError::fail(format!("{dialect:?}: {as_json_schema} does not compile")));
            };
            // Values shaped after the declaration, and random ones.
            let mut choices = choices.iter().copied().cycle();
            let mut instances = random.clone();
            for _ in 0..12 {
                instances.push(sample(&as_json_schema, &as_json_schema, &mut choices, 0));
            }
            for instance in &instances {
                if check.is_valid(instance) {
                    let restored = declared.restore_arguments(instance.clone());
                    prop_assert!(
                        original.is_valid(&restored),
                        "{:?}: {} fits {} but, as {}, not {}",
                        dialect,
                        instance,
                        as_json_schema,
                        restored,
                        Value::Object(schema.clone())
                    );
                }
            }
        }
    }

    /// A schema already in a dialect (read as JSON Schema) is declared
    /// unchanged and exact: the transform removes only what the dialect
    /// cannot take.
    #[test]
    fn declarations_are_fixed_points(root in root_strategy()) {
        let schema = object(root);
        for dialect in [SchemaDialect::OpenAiStrict, SchemaDialect::Gemini] {
            let once = declare(&JsonText::from(&schema), dialect);
            // Gemini's `nullable` is read as what it means in JSON Schema.
            let again = match as_json_schema(Value::Object(once.schema.clone())) {
                Value::Object(map) => map,
                _ => JsonObject::new(),
            };
            let twice = declare(&JsonText::from(&again), dialect);
            // `again` went through a `Value`, whose key order is
            // serde_json's, and a declaration lists `required` in the order
            // of its input: the same names, maybe in another order.
            prop_assert_eq!(
                required_sorted(Value::Object(twice.schema.clone())),
                required_sorted(Value::Object(once.schema.clone())),
                "{:?} from {}",
                dialect,
                Value::Object(schema.clone())
            );
            prop_assert!(
                twice.fidelity.is_exact(),
                "{:?}: {:?}\nfrom {}\nonce {}",
                dialect,
                twice.fidelity,
                Value::Object(schema.clone()),
                Value::Object(once.schema.clone())
            );
        }
    }
}

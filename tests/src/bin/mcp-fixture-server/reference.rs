//! `--reference-catalog`: the tools, resources, prompts and completions
//! that the official conformance suites' server scenarios call by name,
//! served beside the fixture's own so that the suites can check the
//! fixture as a server (MCP "Server Features": Tools §Calling Tools,
//! Resources §Reading Resources and §Resource Templates, Prompts §Getting a
//! Prompt, "Utilities/Completion").
//!
//! Each answer is fixed, except where a scenario checks that the request's
//! arguments reach it (a template's `{id}`, a prompt's arguments), and the
//! 2026-07-28 tools that answer in rounds ([`mrtr`]).

pub(crate) mod mrtr;

use mcp_proto::ErrorObject;
use serde_json::{Value, json};

/// A 1x1 PNG, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A WAV file of no samples (its 44-byte header), base64.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

const STATIC_TEXT: &str = "test://static-text";
const STATIC_BINARY: &str = "test://static-binary";
const TEMPLATE: &str = "test://template/{id}/data";

/// The tools' definitions, each without arguments.
pub(crate) fn tools() -> Vec<Value> {
    [
        ("test_simple_text", "Returns one text block."),
        ("test_image_content", "Returns one PNG image block."),
        ("test_audio_content", "Returns one WAV audio block."),
        (
            "test_embedded_resource",
            "Returns one embedded text resource.",
        ),
        (
            "test_multiple_content_types",
            "Returns a text, an image and an embedded resource block.",
        ),
        ("test_error_handling", "Always fails, as a tool error."),
    ]
    .into_iter()
    .map(|(name, description)| {
        json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": {}}
        })
    })
    .chain([json_schema_tool()])
    .collect()
}

/// The tool that closes its request's SSE stream before it answers (SSE
/// polling, 2025-11-25 "Transports" §Resumability and Redelivery, SEP-1699),
/// for the scenario `server-sse-polling`; handshake era only.
pub(crate) const RECONNECTION: &str = "test_reconnection";

/// `json_schema_2020_12_tool`: an input schema in JSON Schema 2020-12 that
/// uses `$schema`, `$defs` with an `$anchor`, `additionalProperties`,
/// `allOf` over `anyOf` and `if`/`then`/`else` (SEP-1613, SEP-2106), for a
/// suite to check that they reach the client as written.
fn json_schema_tool() -> Value {
    json!({
        "name": "json_schema_2020_12_tool",
        "description": "Takes a name and an address; its schema uses JSON Schema 2020-12 keywords.",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "address",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "kind": {"type": "string"}
            },
            "additionalProperties": false,
            "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
            "if": {"properties": {"kind": {"const": "business"}}},
            "then": {"required": ["name"]},
            "else": {}
        }
    })
}

/// The tools that act while they run, served by the fixture's own tools
/// under the names the suites call (see [`alias`]), the logging one, the
/// input-required ones ([`mrtr`]) and [`RECONNECTION`]. Both eras offer
/// the same, each the way its era can: a tool that asks the client
/// something sends it a request in the handshake era and answers
/// `input_required` in 2026-07-28 ([`mrtr::ask_in_rounds`]; the
/// input-required ones, the other way round, ask with requests in the
/// handshake era), and the logging one logs in 2026-07-28 only at a level
/// the request's `_meta` asks for. [`RECONNECTION`] ends its stream early
/// in the handshake era only (SSE polling is a session's); in 2026-07-28
/// it just answers.
pub(crate) fn acting_tools() -> Vec<Value> {
    let string = |name: &str| json!({"type": "object", "properties": {name: {"type": "string"}}});
    let mut tools = vec![json!({
        "name": "test_tool_with_progress",
        "description": "Reports progress three times (with the caller's token), then answers.",
        "inputSchema": {"type": "object", "properties": {}}
    })];
    tools.extend(mrtr::tools());
    tools.push(json!({
        "name": "test_tool_with_logging",
        "description": "Sends three log messages, then answers.",
        "inputSchema": {"type": "object", "properties": {}}
    }));
    tools.push(json!({
        "name": "test_sampling",
        "description": "Asks the client to sample a reply to `prompt`; answers with it.",
        "inputSchema": string("prompt")
    }));
    for name in [
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
    ] {
        tools.push(json!({
            "name": name,
            "description": "Asks the client to fill in a fixed form; answers with it.",
            "inputSchema": {"type": "object", "properties": {}}
        }));
    }
    tools.push(json!({
        "name": "test_elicitation",
        "description": "Asks the client to fill in a form under `message`; answers with it.",
        "inputSchema": string("message")
    }));
    tools.push(json!({
        "name": RECONNECTION,
        "description": "Ends its SSE stream before it answers (SSE polling, handshake era): \
                        the answer comes to a client that resumes the stream with \
                        Last-Event-ID.",
        "inputSchema": {"type": "object", "properties": {}}
    }));
    tools
}

/// The `elicitation/create` params (form mode, "Client Features/
/// Elicitation") that `test_elicitation_sep1034_defaults` (a default for
/// every primitive type, SEP-1034) and `test_elicitation_sep1330_enums`
/// (every enum form, titled and untitled, single and multiple, and the
/// legacy `enumNames`, SEP-1330) ask the client with.
pub(crate) fn elicitation(name: &str) -> Option<Value> {
    let (message, properties) = match name {
        "test_elicitation_sep1034_defaults" => (
            "Confirm the defaults.",
            json!({
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}
            }),
        ),
        "test_elicitation_sep1330_enums" => (
            "Pick from each list.",
            json!({
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First"},
                    {"const": "value2", "title": "Second"}
                ]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2"], "enumNames": ["Option 1", "Option 2"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First"},
                    {"const": "value2", "title": "Second"}
                ]}}
            }),
        ),
        _ => return None,
    };
    Some(json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties}
    }))
}

/// The `tools/call` params of the fixture's own tool that serves `name`
/// with `arguments`, if one does: `test_tool_with_progress` is `progress`
/// (three steps), `test_sampling` is `ask_sampling` and `test_elicitation`
/// is `ask_elicitation` (the last two not in the `modern` era, which sends
/// the client no requests).
pub(crate) fn alias(name: &str, arguments: &Value, modern: bool) -> Option<Value> {
    let (own, arguments) = match name {
        "test_tool_with_progress" => ("progress", json!({"steps": 3})),
        "test_sampling" if !modern => ("ask_sampling", arguments.clone()),
        "test_elicitation" if !modern => ("ask_elicitation", arguments.clone()),
        _ => return None,
    };
    Some(json!({"name": own, "arguments": arguments}))
}

/// The log messages `test_tool_with_logging` sends, as
/// `notifications/message` params ("Utilities/Logging").
pub(crate) fn log_messages() -> Vec<Value> {
    ["starting", "working", "done"]
        .into_iter()
        .map(|step| json!({"level": "info", "logger": "test_tool_with_logging", "data": step}))
        .collect()
}

/// The result of calling `name`, if it is one of [`tools`].
pub(crate) fn call(name: &str) -> Option<Value> {
    let text = |text: &str| json!({"type": "text", "text": text});
    let image = json!({"type": "image", "data": PNG, "mimeType": "image/png"});
    let resource = json!({
        "type": "resource",
        "resource": {"uri": STATIC_TEXT, "mimeType": "text/plain", "text": "an embedded resource"}
    });
    let content = match name {
        "test_simple_text" => vec![text("This is a simple text response for testing.")],
        "test_image_content" => vec![image],
        "test_audio_content" => {
            vec![json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"})]
        }
        "test_embedded_resource" => vec![resource],
        "test_multiple_content_types" => vec![text("text, image and resource"), image, resource],
        "json_schema_2020_12_tool" => vec![text("received")],
        "test_error_handling" => {
            return Some(json!({
                "content": [text("this tool always fails (test_error_handling)")],
                "isError": true
            }));
        }
        _ => return None,
    };
    Some(json!({"content": content}))
}

/// The resources `resources/list` adds.
pub(crate) fn resources() -> Vec<Value> {
    vec![
        json!({"uri": STATIC_TEXT, "name": "static-text", "mimeType": "text/plain"}),
        json!({"uri": STATIC_BINARY, "name": "static-binary", "mimeType": "image/png"}),
    ]
}

/// The resource templates `resources/templates/list` lists.
pub(crate) fn templates() -> Vec<Value> {
    vec![json!({"uriTemplate": TEMPLATE, "name": "template-data", "mimeType": "text/plain"})]
}

/// The contents of `uri`, if it is one of [`resources`] or matches the
/// template (`test://template/{id}/data`, the id in the text).
pub(crate) fn read(uri: &str) -> Option<Value> {
    let content = match uri {
        STATIC_TEXT => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "This is the static text resource."})
        }
        STATIC_BINARY => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")
                .filter(|id| !id.is_empty() && !id.contains('/'))?;
            json!({"uri": uri, "mimeType": "text/plain", "text": format!("data of the item {id}")})
        }
    };
    Some(json!({"contents": [content]}))
}

/// The prompts `prompts/list` adds.
pub(crate) fn prompts() -> Vec<Value> {
    let argument = |name: &str| json!({"name": name, "required": true});
    vec![
        json!({"name": "test_simple_prompt", "description": "One fixed message."}),
        json!({
            "name": "test_prompt_with_arguments",
            "description": "A message quoting arg1 and arg2.",
            "arguments": [argument("arg1"), argument("arg2")]
        }),
        json!({
            "name": "test_prompt_with_embedded_resource",
            "description": "A message embedding the resource resourceUri names.",
            "arguments": [argument("resourceUri")]
        }),
        json!({"name": "test_prompt_with_image", "description": "A message holding an image."}),
    ]
}

/// The `prompts/get` result of `name`, if it is one of [`prompts`]: `None`
/// for another name, an error when an argument it needs is missing.
pub(crate) fn get_prompt(name: &str, arguments: &Value) -> Option<Result<Value, ErrorObject>> {
    let argument = |key: &str| {
        arguments.get(key).and_then(Value::as_str).ok_or_else(|| {
            ErrorObject::invalid_params(format!("{name} needs the argument `{key}`"))
        })
    };
    let message = |content: Value| Ok(json!({"messages": [{"role": "user", "content": content}]}));
    Some(match name {
        "test_simple_prompt" => {
            message(json!({"type": "text", "text": "This is a simple prompt."}))
        }
        "test_prompt_with_arguments" => match (argument("arg1"), argument("arg2")) {
            (Ok(a), Ok(b)) => {
                message(json!({"type": "text", "text": format!("arg1 is {a}, arg2 is {b}")}))
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        },
        "test_prompt_with_embedded_resource" => argument("resourceUri").and_then(|uri| {
            message(json!({
                "type": "resource",
                "resource": {"uri": uri, "mimeType": "text/plain", "text": "an embedded resource"}
            }))
        }),
        "test_prompt_with_image" => {
            message(json!({"type": "image", "data": PNG, "mimeType": "image/png"}))
        }
        _ => return None,
    })
}

/// `completion/complete` ("Utilities/Completion"): for an argument of
/// [`prompts`], the fixed candidates that start with what was typed.
pub(crate) fn complete(params: &Value) -> Result<Value, ErrorObject> {
    let typed = params
        .pointer("/argument/value")
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorObject::invalid_params("completion/complete needs argument.value"))?;
    let values: Vec<&str> = ["test", "testValue1", "testValue2"]
        .into_iter()
        .filter(|candidate| candidate.starts_with(typed))
        .collect();
    Ok(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_reads_its_id_and_nothing_else() {
        let read = read("test://template/123/data").expect("the template matches");
        assert!(
            read["contents"][0]["text"]
                .as_str()
                .unwrap()
                .contains("123")
        );
        assert!(super::read("test://template//data").is_none());
        assert!(super::read("test://template/1/2/data").is_none());
        assert!(super::read("test://other").is_none());
    }

    #[test]
    fn prompts_quote_their_arguments_and_refuse_missing_ones() {
        let args = json!({"arg1": "one", "arg2": "two"});
        let got = get_prompt("test_prompt_with_arguments", &args)
            .unwrap()
            .unwrap();
        let text = got["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("one") && text.contains("two"));
        let missing = get_prompt("test_prompt_with_arguments", &json!({"arg1": "one"})).unwrap();
        assert!(missing.unwrap_err().message.contains("arg2"));
        assert!(get_prompt("greet", &args).is_none());
    }

    #[test]
    fn every_listed_tool_answers_and_the_error_tool_fails() {
        for tool in tools() {
            let name = tool["name"].as_str().unwrap();
            assert!(call(name).is_some(), "{name} has no answer");
        }
        assert_eq!(call("test_error_handling").unwrap()["isError"], true);
        assert!(call("echo").is_none());
    }

    #[test]
    fn both_eras_offer_the_same_acting_tools() {
        let names: Vec<String> = acting_tools()
            .iter()
            .map(|t| t["name"].as_str().unwrap_or("").to_owned())
            .collect();
        assert!(names.contains(&"test_sampling".to_owned()));
        assert!(names.contains(&"test_missing_capability".to_owned()));
        assert!(alias("test_sampling", &json!({}), true).is_none());
        for tool in acting_tools() {
            let name = tool["name"].as_str().unwrap_or("");
            let served = alias(name, &json!({}), false).is_some()
                || elicitation(name).is_some()
                || mrtr::call(name, &json!({}), &json!({})).is_some()
                || name == "test_tool_with_logging"
                || name == RECONNECTION;
            assert!(served, "{name} is listed and not served");
        }
        for tool in acting_tools() {
            let name = tool["name"].as_str().unwrap_or("");
            let served = alias(name, &json!({}), true).is_some()
                || mrtr::ask_in_rounds(name, &json!({}), &json!({})).is_some()
                || mrtr::call(name, &json!({}), &json!({})).is_some()
                || name == "test_tool_with_logging"
                || name == RECONNECTION;
            assert!(served, "{name} is listed and not served in 2026-07-28");
        }
        assert_eq!(
            alias("test_elicitation", &json!({"message": "m"}), false),
            Some(json!({"name": "ask_elicitation", "arguments": {"message": "m"}}))
        );
        assert_eq!(
            alias("test_tool_with_progress", &json!({}), true).unwrap()["name"],
            "progress"
        );
    }
}

//! The 2026-07-28 tools and prompt of `--reference-catalog` that the
//! pre-release suite's `input-required-result-*` and `server-stateless`
//! scenarios call: answers in rounds through `InputRequiredResult`s
//! (MCP 2026-07-28 "Patterns/MRTR", SEP-2322), and the stateless era's
//! diagnostic tools (SEP-2575); and the handshake era's asking tools in
//! rounds ([`ask_in_rounds`]). In the handshake era the fixture serves
//! the same rounds by asking each round's questions as requests on the
//! session (`server::asking`).
//!
//! Each round is decided from the request alone (`inputResponses`,
//! `requestState`), as the stateless era wants. A `requestState` the
//! fixture checks carries a digest of itself, so a changed one is refused
//! with -32602.

use mcp_proto::ErrorObject;
use mcp_proto::jsonrpc::{error_codes, to_raw};
use mcp_proto::methods;
use serde_json::{Map, Value, json};

use crate::catalog::fnv;

/// The elicitation tool most scenarios call.
const ELICITATION: &str = "test_input_required_result_elicitation";

/// The prompt whose `prompts/get` asks for input (`input-required-result-non-tool-request`).
pub(crate) const PROMPT: &str = "test_input_required_result_prompt";

/// The tools' definitions, each without arguments.
pub(crate) fn tools() -> Vec<Value> {
    [
        (
            ELICITATION,
            "Asks for a name (elicitation), then greets it.",
        ),
        (
            "test_input_required_result_sampling",
            "Asks the client's model a question (sampling), then answers with its reply.",
        ),
        (
            "test_input_required_result_list_roots",
            "Asks for the client's roots, then lists them.",
        ),
        (
            "test_input_required_result_request_state",
            "Asks for a confirmation with a requestState it checks on the retry.",
        ),
        (
            "test_input_required_result_multiple_inputs",
            "Asks for an elicitation, a sampling and the roots at once.",
        ),
        (
            "test_input_required_result_multi_round",
            "Asks in two rounds, with a new requestState each time.",
        ),
        (
            "test_input_required_result_tampered_state",
            "Refuses a retry whose requestState was changed (-32602).",
        ),
        (
            "test_input_required_result_capabilities",
            "Asks only for what the client's declared capabilities allow.",
        ),
        (
            "test_missing_capability",
            "Needs the sampling capability: -32021 when the client did not declare it.",
        ),
        (
            "test_streaming_elicitation",
            "Asks for input through an InputRequiredResult, never a request on the stream.",
        ),
        (
            "test_logging_tool",
            "Logs nothing unless the request's _meta asks for a log level; then its three \
             info messages when that level is info or below.",
        ),
    ]
    .into_iter()
    .map(|(name, description)| {
        json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": {}}
        })
    })
    .collect()
}

/// The answer of the tool `name` to a `tools/call` with `params`, from a
/// client that declared `capabilities`; `None` when `name` is not one of
/// [`tools`].
pub(crate) fn call(
    name: &str,
    params: &Value,
    capabilities: &Value,
) -> Option<Result<Value, ErrorObject>> {
    let responses = params.get("inputResponses");
    let response = |key: &str| responses.and_then(|r| r.get(key));
    let state = params.get("requestState").and_then(Value::as_str);
    Some(match name {
        ELICITATION => match accepted(response("user_name"), "name") {
            Answer::Missing => Ok(input_required(
                json!({"user_name": elicit("What is your name?", "name", "string")}),
                None,
            )),
            Answer::Invalid(error) => Err(error),
            Answer::Declined(action) => Ok(text(&format!("No name: the user chose {action}."))),
            Answer::Accepted(name) => Ok(text(&format!("Hello, {name}!"))),
        },
        "test_input_required_result_sampling" => match response("capital_question") {
            None => Ok(input_required(
                json!({"capital_question": sample("What is the capital of France?", 100)}),
                None,
            )),
            Some(answer) => sampled(answer).map(|reply| text(&format!("The model said: {reply}"))),
        },
        "test_input_required_result_list_roots" => match response("client_roots") {
            None => Ok(input_required(json!({"client_roots": roots()}), None)),
            Some(answer) => listed_roots(answer).map(|uris| text(&format!("Roots: {uris}"))),
        },
        "test_input_required_result_request_state" => {
            let issued = seal("request_state/1");
            match (response("confirm"), state) {
                (None, _) => Ok(input_required(
                    json!({"confirm": elicit("Please confirm", "ok", "boolean")}),
                    Some(&issued),
                )),
                (Some(_), Some(state)) if state == issued => {
                    Ok(text("state-ok: the requestState came back unchanged"))
                }
                (Some(_), _) => Err(changed_state()),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let issued = seal("multiple_inputs/1");
            let keys = ["user_name", "greeting", "client_roots"];
            if keys.iter().any(|key| response(key).is_none()) {
                Ok(input_required(
                    json!({
                        "user_name": elicit("What is your name?", "name", "string"),
                        "greeting": sample("Generate a greeting", 50),
                        "client_roots": roots(),
                    }),
                    Some(&issued),
                ))
            } else if state == Some(issued.as_str()) {
                Ok(text("Received all three inputs."))
            } else {
                Err(changed_state())
            }
        }
        "test_input_required_result_multi_round" => {
            let first = seal("multi_round/1");
            let second = seal("multi_round/2");
            match state {
                None => Ok(input_required(
                    json!({"step1": elicit("Step 1: What is your name?", "name", "string")}),
                    Some(&first),
                )),
                Some(state) if state == first && response("step1").is_some() => Ok(input_required(
                    json!({"step2": elicit(
                        "Step 2: What is your favorite color?",
                        "color",
                        "string"
                    )}),
                    Some(&second),
                )),
                Some(state) if state == second && response("step2").is_some() => {
                    Ok(text("Both steps answered."))
                }
                Some(_) => Err(changed_state()),
            }
        }
        "test_input_required_result_tampered_state" => {
            let issued = seal("tampered_state/1");
            match state {
                None => Ok(input_required(
                    json!({"confirm": elicit("Please confirm", "ok", "boolean")}),
                    Some(&issued),
                )),
                Some(state) if state == issued => Ok(text("The requestState is intact.")),
                Some(_) => Err(changed_state()),
            }
        }
        "test_input_required_result_capabilities" => {
            if responses.is_some() {
                return Some(Ok(text("Received the inputs the client could give.")));
            }
            let mut requests = Map::new();
            if capabilities.get("elicitation").is_some() {
                requests.insert(
                    "user_name".to_owned(),
                    elicit("What is your name?", "name", "string"),
                );
            }
            if capabilities.get("sampling").is_some() {
                requests.insert("greeting".to_owned(), sample("Generate a greeting", 50));
            }
            if capabilities.get("roots").is_some() {
                requests.insert("client_roots".to_owned(), roots());
            }
            if requests.is_empty() {
                Ok(text("The client declared nothing to ask it."))
            } else {
                Ok(input_required(Value::Object(requests), None))
            }
        }
        "test_missing_capability" => match capabilities.get("sampling") {
            Some(_) => Ok(text("The client declared sampling.")),
            None => Err(missing_capability("sampling")),
        },
        "test_streaming_elicitation" => match accepted(response("answer"), "answer") {
            Answer::Missing => Ok(input_required(
                json!({"answer": elicit("What should the tool use?", "answer", "string")}),
                None,
            )),
            Answer::Invalid(error) => Err(error),
            Answer::Declined(action) => Ok(text(&format!("The user chose {action}."))),
            Answer::Accepted(answer) => Ok(text(&format!("Received {answer}."))),
        },
        "test_logging_tool" => Ok(text("Nothing was logged: no log level was asked for.")),
        _ => return None,
    })
}

/// The reference tools that ask the client in the handshake era
/// (`test_sampling`, `test_elicitation`, `test_elicitation_sep1034_defaults`,
/// `test_elicitation_sep1330_enums`), in the 2026-07-28 era, which sends
/// the client no requests: the same question as an input round (key
/// `answer`), then, on the retry with its answer, the result the handshake
/// era gives (the answer as text and as `structuredContent`). -32021 when
/// the client did not declare the capability the question needs. `None`
/// when `name` is none of them.
pub(crate) fn ask_in_rounds(
    name: &str,
    params: &Value,
    capabilities: &Value,
) -> Option<Result<Value, ErrorObject>> {
    let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
    let (capability, question) = match name {
        "test_sampling" => {
            let prompt = arguments
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or("Say hello.");
            ("sampling", sample(prompt, 64))
        }
        "test_elicitation" => {
            let message = arguments
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("Please fill in the form.");
            let params = json!({
                "mode": "form",
                "message": message,
                "requestedSchema": crate::catalog::elicitation_schema()
            });
            (
                "elicitation",
                json!({"method": methods::ELICITATION_CREATE, "params": params}),
            )
        }
        _ => {
            let mut params = super::elicitation(name)?;
            params["mode"] = json!("form");
            (
                "elicitation",
                json!({"method": methods::ELICITATION_CREATE, "params": params}),
            )
        }
    };
    if capabilities.get(capability).is_none() {
        return Some(Err(missing_capability(capability)));
    }
    Some(Ok(match params.pointer("/inputResponses/answer") {
        None => input_required(json!({ "answer": question }), None),
        Some(answer) => json!({
            "content": [{"type": "text", "text": answer.to_string()}],
            "structuredContent": answer
        }),
    }))
}

/// The definition of [`PROMPT`], which the 2026-07-28 era's
/// `prompts/list` adds (a client, or a gateway in front of the fixture,
/// finds it there before getting it).
pub(crate) fn prompt() -> Value {
    json!({
        "name": PROMPT,
        "description": "Asks for the context to use (elicitation), then builds a message from it."
    })
}

/// `prompts/get` of [`PROMPT`]: an elicitation for the prompt's context,
/// then the prompt built from it.
pub(crate) fn get_prompt(params: &Value) -> Result<Value, ErrorObject> {
    let response = params.pointer("/inputResponses/user_context");
    match accepted(response, "context") {
        Answer::Missing => Ok(input_required(
            json!({"user_context": elicit(
                "What context should the prompt use?",
                "context",
                "string"
            )}),
            None,
        )),
        Answer::Invalid(error) => Err(error),
        Answer::Declined(action) => Err(ErrorObject::invalid_params(format!(
            "the prompt needs a context; the user chose {action}"
        ))),
        Answer::Accepted(context) => Ok(json!({
            "description": "A prompt built from the context the user gave.",
            "messages": [{
                "role": "user",
                "content": {"type": "text", "text": format!("Context: {context}")}
            }]
        })),
    }
}

/// What an `ElicitResult` among the `inputResponses` says.
enum Answer {
    /// No answer under the key: the round asks again.
    Missing,
    /// Not an `ElicitResult`.
    Invalid(ErrorObject),
    /// The user declined or cancelled.
    Declined(String),
    /// The accepted content's `field`, as text.
    Accepted(String),
}

fn accepted(answer: Option<&Value>, field: &str) -> Answer {
    let Some(answer) = answer else {
        return Answer::Missing;
    };
    let Some(action) = answer.get("action").and_then(Value::as_str) else {
        return Answer::Invalid(ErrorObject::invalid_params(
            "an inputResponse for an elicitation must be an ElicitResult with an action",
        ));
    };
    if action != "accept" {
        return Answer::Declined(action.to_owned());
    }
    match answer.pointer(&format!("/content/{field}")) {
        Some(Value::String(text)) => Answer::Accepted(text.clone()),
        Some(other) => Answer::Accepted(other.to_string()),
        None => Answer::Invalid(ErrorObject::invalid_params(format!(
            "an accepted ElicitResult needs content.{field}"
        ))),
    }
}

/// The text of a `CreateMessageResult`.
fn sampled(answer: &Value) -> Result<String, ErrorObject> {
    answer
        .pointer("/content/text")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            ErrorObject::invalid_params("the inputResponse must be a CreateMessageResult with text")
        })
}

/// The URIs of a `ListRootsResult`, comma-separated.
fn listed_roots(answer: &Value) -> Result<String, ErrorObject> {
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            ErrorObject::invalid_params("the inputResponse must be a ListRootsResult")
        })?;
    Ok(roots
        .iter()
        .filter_map(|root| root.get("uri").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(", "))
}

fn input_required(requests: Value, state: Option<&str>) -> Value {
    let mut result = json!({"resultType": "input_required", "inputRequests": requests});
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    result
}

fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": methods::ELICITATION_CREATE,
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field]
            }
        }
    })
}

fn sample(question: &str, max_tokens: u32) -> Value {
    json!({
        "method": methods::SAMPLING_CREATE_MESSAGE,
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
            "maxTokens": max_tokens
        }
    })
}

fn roots() -> Value {
    json!({"method": methods::ROOTS_LIST, "params": {}})
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// `body` with its digest: what a retry must echo byte for byte.
fn seal(body: &str) -> String {
    format!("{body} #{:016x}", fnv(body))
}

fn changed_state() -> ErrorObject {
    ErrorObject::invalid_params(
        "requestState is missing or was changed: echo the one the server sent, byte for byte",
    )
}

/// -32021 naming `capability` in `data.requiredCapabilities` (a
/// `ClientCapabilities` object).
pub(crate) fn missing_capability(capability: &str) -> ErrorObject {
    let mut error = ErrorObject::new(
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("this tool needs the client capability {capability:?}"),
    );
    error.data = to_raw(&json!({"requiredCapabilities": {capability: {}}})).ok();
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Value {
        json!({"elicitation": {}, "sampling": {}, "roots": {}})
    }

    #[test]
    fn every_listed_tool_answers() {
        for tool in tools() {
            let name = tool["name"].as_str().unwrap();
            assert!(call(name, &json!({}), &all()).is_some(), "{name}");
        }
        assert!(call("test_simple_text", &json!({}), &all()).is_none());
    }

    #[test]
    fn elicitation_asks_then_greets_and_refuses_what_is_not_an_answer() {
        let first = call(ELICITATION, &json!({}), &all()).unwrap().unwrap();
        assert_eq!(first["resultType"], "input_required");
        assert_eq!(
            first["inputRequests"]["user_name"]["method"],
            "elicitation/create"
        );
        let retry = json!({"inputResponses": {
            "user_name": {"action": "accept", "content": {"name": "Alice"}},
            "extra": {"action": "accept", "content": {}}
        }});
        let done = call(ELICITATION, &retry, &all()).unwrap().unwrap();
        assert_eq!(done["content"][0]["text"], "Hello, Alice!");
        let wrong_key = json!({"inputResponses": {"other": {"action": "accept"}}});
        let again = call(ELICITATION, &wrong_key, &all()).unwrap().unwrap();
        assert_eq!(again["resultType"], "input_required");
        let invalid = json!({"inputResponses": {"user_name": 12345}});
        assert!(call(ELICITATION, &invalid, &all()).unwrap().is_err());
    }

    #[test]
    fn states_round_trip_and_a_changed_one_is_refused() {
        let tool = "test_input_required_result_multi_round";
        let first = call(tool, &json!({}), &all()).unwrap().unwrap();
        let state = first["requestState"].as_str().unwrap();
        let retry =
            json!({"requestState": state, "inputResponses": {"step1": {"action": "accept"}}});
        let second = call(tool, &retry, &all()).unwrap().unwrap();
        assert_eq!(second["resultType"], "input_required");
        assert_ne!(second["requestState"], first["requestState"]);
        let tampered = "test_input_required_result_tampered_state";
        let issued = call(tampered, &json!({}), &all()).unwrap().unwrap();
        let changed = format!("{}-TAMPERED", issued["requestState"].as_str().unwrap());
        let refused = call(tampered, &json!({"requestState": changed}), &all()).unwrap();
        assert_eq!(refused.unwrap_err().code, error_codes::INVALID_PARAMS);
    }

    #[test]
    fn only_declared_capabilities_are_asked_for() {
        let tool = "test_input_required_result_capabilities";
        let sampling_only = json!({"sampling": {}});
        let result = call(tool, &json!({}), &sampling_only).unwrap().unwrap();
        let methods: Vec<&Value> = result["inputRequests"]
            .as_object()
            .unwrap()
            .values()
            .map(|r| &r["method"])
            .collect();
        assert_eq!(methods, [&json!("sampling/createMessage")]);
        let refused = call("test_missing_capability", &json!({}), &json!({})).unwrap();
        let error = refused.unwrap_err();
        assert_eq!(error.code, error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert!(error.data.unwrap().get().contains(r#""sampling":{}"#));
    }

    #[test]
    fn the_handshake_eras_asking_tools_ask_in_one_round() {
        let params = json!({"name": "test_sampling", "arguments": {"prompt": "hi"}});
        let first = ask_in_rounds("test_sampling", &params, &all())
            .unwrap()
            .unwrap();
        assert_eq!(first["resultType"], "input_required");
        let question = &first["inputRequests"]["answer"];
        assert_eq!(question["method"], "sampling/createMessage");
        assert_eq!(question["params"]["messages"][0]["content"]["text"], "hi");
        let reply = json!({"role": "assistant", "content": {"type": "text", "text": "hello"}});
        let retry = json!({"arguments": {"prompt": "hi"}, "inputResponses": {"answer": reply}});
        let done = ask_in_rounds("test_sampling", &retry, &all())
            .unwrap()
            .unwrap();
        assert_eq!(done["structuredContent"], reply);
        let defaults = ask_in_rounds("test_elicitation_sep1034_defaults", &json!({}), &all())
            .unwrap()
            .unwrap();
        let asked = &defaults["inputRequests"]["answer"]["params"];
        assert_eq!(asked["mode"], "form");
        assert_eq!(asked["requestedSchema"]["properties"]["age"]["default"], 30);
        let refused = ask_in_rounds("test_elicitation", &json!({}), &json!({"sampling": {}}));
        assert_eq!(
            refused.unwrap().unwrap_err().code,
            error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
        assert!(ask_in_rounds("test_simple_text", &json!({}), &all()).is_none());
    }

    #[test]
    fn the_prompt_asks_for_its_context_first() {
        let first = get_prompt(&json!({"name": PROMPT})).unwrap();
        assert_eq!(first["resultType"], "input_required");
        let retry = json!({"name": PROMPT, "inputResponses": {
            "user_context": {"action": "accept", "content": {"context": "tests"}}
        }});
        let done = get_prompt(&retry).unwrap();
        assert_eq!(done["messages"][0]["content"]["text"], "Context: tests");
    }
}

//! The server's check of a 2026-07-28 `tools/call`'s `Mcp-Param-*` headers (SEP-2243; MCP 2026-07-28 "Transports" §Streamable HTTP, Custom Headers from Tool Parameters) against its arguments.
//!
//! A tool's `x-mcp-header` annotations ([`ToolParamHeaders`], which the
//! application gives through [`HttpApp::tool_param_headers`]) name the
//! arguments a client mirrors into `Mcp-Param-{Name}` headers; the server
//! must refuse a call whose headers do not say what its body says, with
//! 400 and -32020, since an intermediary may have acted on the headers.
//! The rules are the client's, read backwards
//! ([`ToolParamHeaders::values`]): a header is present exactly when its
//! argument is a string, an integer or a boolean (missing or `null`: no
//! header); its value, without surrounding whitespace, is the argument's
//! text, or that text in the `=?base64?...?=` form
//! ([`headers::decode_value`], padded as [`headers::encode_value`] writes
//! it); an integer compares by value; a value with characters a header may
//! not carry (control characters, non-ASCII bytes) or a malformed or
//! unpadded base64 form is refused as well.

use http::HeaderMap;
use mcp_proto::headers::{self, ToolParamHeaders};
use mcp_proto::jsonrpc::{Request as RpcRequest, error_codes};
use mcp_proto::{ErrorObject, methods};
use serde_json::Value;

use super::HttpApp;

/// Checks a stateless-era request's `Mcp-Param-*` headers: a `tools/call`
/// of a tool the application has annotations for must carry exactly the
/// headers its arguments give; -32020 saying which header is wrong
/// otherwise. Any other request passes.
pub(super) fn check(
    headers: &HeaderMap,
    request: &RpcRequest,
    app: &dyn HttpApp,
) -> Result<(), ErrorObject> {
    if request.method != methods::TOOLS_CALL {
        return Ok(());
    }
    let Some(params) = request.params.as_ref() else {
        return Ok(());
    };
    let Some(name) = headers::request_name(&request.method, Some(params)) else {
        return Ok(());
    };
    let Some(expected) = app.tool_param_headers(&name) else {
        return Ok(());
    };
    if expected.is_empty() {
        // Nothing to mirror: the arguments need not be read.
        return Ok(());
    }
    let arguments = headers::call_arguments(params);
    check_arguments(headers, &expected, arguments.as_ref())
}

/// The check itself, for one tool's annotations and a call's arguments.
pub(super) fn check_arguments(
    headers: &HeaderMap,
    expected: &ToolParamHeaders,
    arguments: Option<&mcp_proto::types::JsonObject>,
) -> Result<(), ErrorObject> {
    let mismatch = |message: String| ErrorObject::new(error_codes::HEADER_MISMATCH, message);
    for entry in expected {
        let shown = mcp_proto::text::error_text(entry.header_name(), mcp_proto::text::NAME_LIMIT);
        let argument = arguments.and_then(|arguments| {
            let (first, rest) = entry.path().split_first()?;
            let mut value = arguments.get(first)?;
            for key in rest {
                value = value.as_object()?.get(key)?;
            }
            Some(value)
        });
        let mirrored = match argument {
            Some(Value::String(_) | Value::Bool(_) | Value::Number(_)) => argument,
            _ => None,
        };
        let given = match headers.get(entry.header_name()) {
            None => None,
            Some(value) => {
                let text = value
                    .to_str()
                    .ok()
                    .filter(|text| !text.chars().any(|c| c.is_ascii_control()))
                    .ok_or_else(|| {
                        mismatch(format!(
                            "the {shown} header has characters a header value may not carry: \
                             send non-ASCII text in the =?base64?...?= form"
                        ))
                    })?;
                let text = text.trim();
                if !padded(text) {
                    return Err(mismatch(format!(
                        "the {shown} header's base64 is not padded to a multiple of four \
                         characters"
                    )));
                }
                let decoded = headers::decode_value(text).map_err(|error| {
                    mismatch(format!("the {shown} header cannot be decoded: {error}"))
                })?;
                Some(decoded.into_owned())
            }
        };
        match (mirrored, given) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "the {shown} header is present but its argument is not"
                )));
            }
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "the {shown} header is missing: the call's arguments give it"
                )));
            }
            (Some(argument), Some(given)) => {
                if !same(argument, &given) {
                    return Err(mismatch(format!(
                        "the {shown} header ({}) differs from its argument ({})",
                        mcp_proto::text::error_text(&given, 64),
                        mcp_proto::text::error_text(&argument.to_string(), 64),
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Whether a value in the `=?base64?...?=` form has its padding, as
/// [`headers::encode_value`] writes it (the SEP's test cases refuse
/// `=?base64?SGVsbG8?=`); any other value passes.
fn padded(text: &str) -> bool {
    match text
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(payload) => payload.len() % 4 == 0,
        None => true,
    }
}

/// Whether a header's decoded text says what the argument does.
fn same(argument: &Value, given: &str) -> bool {
    match argument {
        Value::String(text) => text == given,
        Value::Bool(flag) => given == if *flag { "true" } else { "false" },
        Value::Number(number) => match (given.parse::<i64>(), number.as_i64()) {
            (Ok(given), Some(number)) => given == number,
            _ => given
                .parse::<f64>()
                .ok()
                .zip(number.as_f64())
                .is_some_and(|(a, b)| a == b),
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn annotations() -> ToolParamHeaders {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "zone": {"type": "integer", "x-mcp-header": "Zone"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        }});
        headers::tool_param_headers(schema.as_object().unwrap()).unwrap()
    }

    fn headers(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    fn arguments(value: Value) -> mcp_proto::types::JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn headers_that_say_what_the_arguments_say_pass() {
        let args = arguments(json!({"region": "eu-west", "zone": 3, "dry": false}));
        let given = headers(&[
            ("mcp-param-region", b"eu-west"),
            ("mcp-param-zone", b" 3 "),
            ("mcp-param-dry-run", b"false"),
        ]);
        check_arguments(&given, &annotations(), Some(&args)).unwrap();
        // Base64 for text a header cannot carry as is.
        let args = arguments(json!({"region": "zürich"}));
        let encoded = headers::encode_value("zürich").into_owned();
        let given = headers(&[("mcp-param-region", encoded.as_bytes())]);
        check_arguments(&given, &annotations(), Some(&args)).unwrap();
        // No argument, no header.
        check_arguments(&HeaderMap::new(), &annotations(), None).unwrap();
    }

    #[test]
    fn a_header_that_differs_is_missing_or_extra_is_a_mismatch() {
        let args = arguments(json!({"region": "eu-west"}));
        for given in [
            headers(&[("mcp-param-region", b"us-east")]),
            HeaderMap::new(),
            headers(&[("mcp-param-region", b"eu-west"), ("mcp-param-zone", b"1")]),
        ] {
            let error = check_arguments(&given, &annotations(), Some(&args)).unwrap_err();
            assert_eq!(error.code, error_codes::HEADER_MISMATCH, "{error}");
            assert!(error.message.contains("Mcp-Param-"), "{error}");
        }
    }

    #[test]
    fn characters_a_header_may_not_carry_are_refused() {
        let args = arguments(json!({"region": "zürich"}));
        let given = headers(&[("mcp-param-region", "zürich".as_bytes())]);
        let error = check_arguments(&given, &annotations(), Some(&args)).unwrap_err();
        assert_eq!(error.code, error_codes::HEADER_MISMATCH);
        assert!(error.message.contains("characters"), "{error}");
        let given = headers(&[("mcp-param-region", b"=?base64?not base64?=")]);
        let error = check_arguments(&given, &annotations(), Some(&args)).unwrap_err();
        assert_eq!(error.code, error_codes::HEADER_MISMATCH);
        // "Hello" without its padding.
        let args = arguments(json!({"region": "Hello"}));
        let given = headers(&[("mcp-param-region", b"=?base64?SGVsbG8?=")]);
        let error = check_arguments(&given, &annotations(), Some(&args)).unwrap_err();
        assert!(error.message.contains("padded"), "{error}");
        let given = headers(&[("mcp-param-region", b"=?base64?SGVsbG8=?=")]);
        check_arguments(&given, &annotations(), Some(&args)).unwrap();
    }
}

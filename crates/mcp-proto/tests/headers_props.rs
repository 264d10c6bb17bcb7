//! Property tests of the Streamable HTTP header rules: every string survives encode then decode, every encoded value is a valid header value, plain values pass through borrowed, and no schema or arguments panic the `x-mcp-header` checks.

use std::borrow::Cow;

use mcp_proto::headers::{
    BASE64_PREFIX, BASE64_SUFFIX, call_arguments, decode_value, encode_value, request_name,
    tool_param_headers,
};
use mcp_proto::methods;
use mcp_proto::types::JsonObject;
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::Value;

// ---------------------------------------------------------------------------
// Strategies. Local and small, like the other test files' ones.

/// Strings that stress the encoding: whitespace at the edges, control
/// characters, DEL, non-ASCII, sentinel fragments, besides any string.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,12}",
        "[ \t\r\n\u{0}\u{7f}\u{80}éa=?b]{0,8}",
        "[a-z ]{0,4}".prop_map(|s| format!("{BASE64_PREFIX}{s}{BASE64_SUFFIX}")),
        "[a-z]{0,4}".prop_map(|s| format!("{BASE64_PREFIX}{s}")),
    ]
}

/// Values the encoding must send as is: printable ASCII, no space at either
/// end, not shaped like the sentinel.
fn plain() -> impl Strategy<Value = String> {
    "([!-~]([ -~]{0,16}[!-~])?)?".prop_filter("sentinel look-alike", |s| {
        !(s.starts_with(BASE64_PREFIX) && s.ends_with(BASE64_SUFFIX))
    })
}

/// JSON that looks like schemas: the keywords `tool_param_headers` walks,
/// `x-mcp-header` with good and bad names, and stray values.
fn schema_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop_oneof![
            "string",
            "integer",
            "boolean",
            "number",
            "object",
            "[A-Za-z: ]{0,3}"
        ]
        .prop_map(Value::String),
    ];
    let key = prop_oneof![
        Just("x-mcp-header".to_owned()),
        Just("type".to_owned()),
        Just("properties".to_owned()),
        Just("items".to_owned()),
        Just("oneOf".to_owned()),
        Just("$defs".to_owned()),
        Just("not".to_owned()),
        "[a-c]{1,2}",
    ];
    leaf.prop_recursive(4, 48, 5, move |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec((key.clone(), inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Request params as text: members named as the header rules read them
/// (escaped spellings and repeats included) with string or nested values.
fn params_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("name"),
        Just("arguments"),
        Just("_meta"),
        Just("n\\u0061me"),
        Just("uri"),
    ];
    let value = prop_oneof![
        text().prop_map(|s| Value::String(s).to_string()),
        schema_value().prop_map(|v| v.to_string()),
    ];
    vec((key, value), 0..5).prop_map(|members| {
        let members: Vec<String> = members
            .iter()
            .map(|(key, value)| format!("\"{key}\" : {value}"))
            .collect();
        format!("{{{}}}", members.join(","))
    })
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => {
            let mut map = JsonObject::new();
            map.insert("a".to_owned(), other);
            map
        }
    }
}

// ---------------------------------------------------------------------------
// Properties

proptest! {
    #[test]
    fn decode_inverts_encode(s in text()) {
        let encoded = encode_value(&s);
        prop_assert_eq!(decode_value(&encoded).unwrap(), s.as_str());
    }

    #[test]
    fn encoded_values_are_valid_header_values(s in text()) {
        let encoded = encode_value(&s);
        let bytes = encoded.as_bytes();
        // Visible ASCII, with spaces only inside.
        prop_assert!(bytes.iter().all(|b| (0x20..=0x7e).contains(b)), "{:?}", encoded);
        prop_assert!(bytes.first() != Some(&b' ') && bytes.last() != Some(&b' '), "{:?}", encoded);
        if let Cow::Owned(owned) = &encoded {
            let payload = owned
                .strip_prefix(BASE64_PREFIX)
                .and_then(|rest| rest.strip_suffix(BASE64_SUFFIX));
            prop_assert!(payload.is_some(), "{:?}", owned);
            prop_assert!(
                payload.unwrap_or_default().bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
            );
        }
    }

    #[test]
    fn plain_values_pass_through_borrowed(s in plain()) {
        prop_assert!(matches!(encode_value(&s), Cow::Borrowed(v) if v == s));
        prop_assert!(matches!(decode_value(&s), Ok(Cow::Borrowed(v)) if v == s));
    }

    #[test]
    fn decode_never_panics(s in text()) {
        let _ = decode_value(&s);
    }

    #[test]
    fn schemas_and_arguments_never_panic(schema in schema_value(), args in schema_value()) {
        let schema = object(schema);
        if let Ok(headers) = tool_param_headers(&schema) {
            let args = object(args);
            for (name, value) in headers.values(Some(&args)) {
                prop_assert!(name.starts_with("Mcp-Param-"));
                prop_assert!(decode_value(&value).is_ok());
            }
            prop_assert_eq!(headers.values(None).count(), 0);
        }
    }

    #[test]
    fn the_name_and_arguments_read_as_serde_reads_them(text in params_text()) {
        #[derive(serde::Deserialize)]
        struct Name {
            name: Option<String>,
        }
        #[derive(serde::Deserialize)]
        struct Arguments {
            arguments: Option<JsonObject>,
        }
        let params = mcp_proto::jsonrpc::RawJson::from_text(text.clone()).unwrap();
        let name = serde_json::from_str::<Name>(&text).ok().and_then(|p| p.name);
        prop_assert_eq!(
            request_name(methods::TOOLS_CALL, Some(&params)).map(Cow::into_owned),
            name,
            "{}", text
        );
        let arguments = serde_json::from_str::<Arguments>(&text).ok().and_then(|p| p.arguments);
        prop_assert_eq!(call_arguments(&params), arguments, "{}", text);
    }

    #[test]
    fn arguments_are_mirrored(s in text(), i in any::<i64>(), b in any::<bool>()) {
        let schema = object(serde_json::json!({
            "type": "object",
            "properties": {
                "s": {"type": "string", "x-mcp-header": "S"},
                "o": {"type": "object", "properties": {"i": {"type": "integer", "x-mcp-header": "I"}}},
                "b": {"type": "boolean", "x-mcp-header": "B"}
            }
        }));
        let headers = tool_param_headers(&schema).unwrap();
        let args = object(serde_json::json!({"s": s, "o": {"i": i}, "b": b}));
        let values: Vec<_> = headers.values(Some(&args)).collect();
        prop_assert_eq!(values.len(), 3);
        // Ordered by property path: `b`, `o.i`, `s`.
        prop_assert_eq!(values[0].0, "Mcp-Param-B");
        prop_assert_eq!(&values[0].1, &b.to_string());
        prop_assert_eq!(values[1].0, "Mcp-Param-I");
        prop_assert_eq!(&values[1].1, &i.to_string());
        prop_assert_eq!(values[2].0, "Mcp-Param-S");
        prop_assert_eq!(decode_value(&values[2].1).unwrap(), s.as_str());
    }
}

//! Fuzz target: JSON-RPC frame decoding (the member scanner that finds where a `result` ends) against serde_json.
//!
//! Arbitrary bytes go through `Frame::from_slice` and `Frame::from_vec`, the
//! two public entry points of the scanning fast path. Checks that neither
//! panics, that both agree, and, whenever serde_json accepts the bytes as
//! JSON: every response we decode has the id and result serde_json reads
//! there, and every object serde_json reads as a plain response (version,
//! integer or string id, a result, no `method` or `error`, no repeated
//! member) is decoded as that response.

#![no_main]

use std::fmt;

use libfuzzer_sys::fuzz_target;
use mcp_proto::{Frame, Message, RequestId};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

fuzz_target!(|bytes: &[u8]| {
    let borrowed = Frame::from_slice(bytes);
    let owned = Frame::from_vec(bytes.to_vec());
    match (&borrowed, &owned) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "from_slice and from_vec disagree"),
        (Err(_), Err(_)) => {}
        _ => panic!("from_slice {borrowed:?} but from_vec {owned:?}"),
    }
    let Ok(reference) = serde_json::from_slice::<Value>(bytes) else {
        return;
    };
    match (&reference, &borrowed) {
        (Value::Object(_), _) => check_message(bytes, &reference, borrowed.ok()),
        (Value::Array(items), Ok(Frame::Batch(messages))) => {
            assert_eq!(
                items.len(),
                messages.len(),
                "a batch lost or gained members"
            );
            for (item, message) in items.iter().zip(messages) {
                if let Message::Response(response) = message {
                    check_response(item, &response.id, response.result.get());
                }
            }
        }
        _ => {}
    }
});

/// One message object that serde_json accepted, against what we decoded.
fn check_message(bytes: &[u8], reference: &Value, decoded: Option<Frame>) {
    if let Some(Frame::Single(Message::Response(response))) = &decoded {
        check_response(reference, &response.id, response.result.get());
    }
    let Some(members) = plain_response_members(bytes) else {
        return;
    };
    let Some(id) = members.id else {
        return;
    };
    match decoded {
        Some(Frame::Single(Message::Response(response))) => {
            assert_eq!(response.id, id, "the id differs");
            assert_eq!(
                parse(response.result.get()),
                parse(members.result.get()),
                "the result differs"
            );
        }
        other => panic!("serde_json reads a plain response, we decoded {other:?}"),
    }
}

/// Checks a response we decoded against the object serde_json read.
fn check_response(reference: &Value, id: &RequestId, result: &str) {
    let expected_id = match id {
        RequestId::Number(n) => Value::from(*n),
        RequestId::String(s) => Value::from(s.as_str()),
    };
    assert_eq!(reference.get("id"), Some(&expected_id), "the id differs");
    assert_eq!(
        Some(&parse(result)),
        reference.get("result"),
        "the result differs"
    );
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("a result serde_json accepted within its frame")
}

/// The members of an object that is a plain JSON-RPC response, each member
/// once: `jsonrpc` is `"2.0"`, `id` is a string or an `i64`, `result` is
/// there, `method` and `error` are not. `None` for anything else.
fn plain_response_members(bytes: &[u8]) -> Option<PlainResponse> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let members = deserializer.deserialize_map(MembersVisitor).ok()?;
    deserializer.end().ok()?;
    let mut names: Vec<&str> = members.iter().map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return None;
    }
    let member = |name: &str| {
        members
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value)
    };
    if member("method").is_some() || member("error").is_some() {
        return None;
    }
    if serde_json::from_str::<Value>(member("jsonrpc")?.get()).ok()? != "2.0" {
        return None;
    }
    let id = match serde_json::from_str::<Value>(member("id")?.get()).ok()? {
        Value::String(s) => Some(RequestId::String(s)),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    };
    Some(PlainResponse {
        id,
        result: member("result")?.clone(),
    })
}

struct PlainResponse {
    /// `None` when the id is a number that is not an `i64`.
    id: Option<RequestId>,
    result: Box<RawValue>,
}

/// An object's members in order, repeats kept, values as raw JSON.
struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Vec<(String, Box<RawValue>)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
            members.push(member);
        }
        Ok(members)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _seq: A) -> Result<Self::Value, A::Error> {
        Err(de::Error::custom("an array"))
    }
}

//! JSON-RPC 2.0 framing as MCP uses it: ids, requests, notifications, responses and batches.
//!
//! Payloads (`params`, `result`, `error.data`) are kept as raw JSON text
//! ([`RawValue`]): decoding a message only scans them, and the caller decodes
//! them once, straight into the type it expects. Outbound payloads are encoded
//! once and copied verbatim into the frame.
//!
//! A message is told apart by the fields it carries (MCP spec, "Base
//! Protocol" / JSON-RPC 2.0 §4-5): `method` with `id` is a request, `method`
//! without `id` a notification, `result` a response and `error` an error
//! response. Error responses may carry no `id` or `"id": null` (the request
//! could not be read); both are accepted.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
pub use serde_json::value::RawValue;

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a string or an integer, never null.
///
/// Ids are echoed with the type they arrived with: `"1"` stays a string and
/// `1` stays a number.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id (our own requests always use these).
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RequestIdVisitor)
    }
}

struct RequestIdVisitor;

impl Visitor<'_> for RequestIdVisitor {
    type Value = RequestId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or integer request id")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
        i64::try_from(v)
            .map(RequestId::Number)
            .map_err(|_| E::custom("request id out of range"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
        Ok(RequestId::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
        Ok(RequestId::String(v))
    }
}

/// A request: expects exactly one response with the same id.
#[derive(Clone, Debug)]
pub struct Request {
    /// The id the response will echo.
    pub id: RequestId,
    /// The method name, for example `tools/call`.
    pub method: String,
    /// The parameters, as raw JSON (an object in MCP), if any.
    pub params: Option<Box<RawValue>>,
}

/// A notification: no id, never answered.
#[derive(Clone, Debug)]
pub struct Notification {
    /// The method name, for example `notifications/progress`.
    pub method: String,
    /// The parameters, as raw JSON, if any.
    pub params: Option<Box<RawValue>>,
}

/// A successful response.
#[derive(Clone, Debug)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result, as raw JSON.
    pub result: Box<RawValue>,
}

/// An error response.
#[derive(Clone, Debug)]
pub struct ErrorResponse {
    /// The id of the request this answers; `None` when the peer could not
    /// read the request's id (sent as `null` or left out).
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// The `error` member of an error response.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code (see [`error_codes`]).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra information defined by the peer. A `"data": null` the peer sent
    /// is kept as `Some(null)`, so the error round-trips unchanged.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_raw"
    )]
    pub data: Option<Box<RawValue>>,
}

/// Deserializes a field that is present (even as `null`) into `Some`; a
/// missing field falls back to `#[serde(default)]`, `None`.
fn present_raw<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(deserializer).map(Some)
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32601 Method not found` for `method`.
    pub fn method_not_found(method: &str) -> Self {
        ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// `-32602 Invalid params` with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        ErrorObject::new(error_codes::INVALID_PARAMS, message)
    }

    /// Decodes `data` into `T`, if present and well-formed.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        self.data
            .as_ref()
            .and_then(|d| serde_json::from_str(d.get()).ok())
    }
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && raw_eq(self.data.as_deref(), other.data.as_deref())
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// Error codes defined by JSON-RPC 2.0 and by MCP.
pub mod error_codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters (also: unsupported protocol version in `initialize`).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Resource not found (2024-11-05 through 2025-11-25; 2026-07-28 uses -32602).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// URL elicitation required (2025-11-25): `data.elicitations` lists them.
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
    /// 2026-07-28: an HTTP header disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the server needs a client capability the request did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the requested protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// One JSON-RPC message.
#[derive(Clone, Debug)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

impl Message {
    /// A request with typed parameters.
    pub fn request(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: Option<&impl Serialize>,
    ) -> Result<Self, serde_json::Error> {
        Ok(Message::Request(Request {
            id: id.into(),
            method: method.into(),
            params: params.map(to_raw).transpose()?,
        }))
    }

    /// A notification with typed parameters.
    pub fn notification(
        method: impl Into<String>,
        params: Option<&impl Serialize>,
    ) -> Result<Self, serde_json::Error> {
        Ok(Message::Notification(Notification {
            method: method.into(),
            params: params.map(to_raw).transpose()?,
        }))
    }

    /// A successful response with a typed result.
    pub fn response(id: RequestId, result: &impl Serialize) -> Result<Self, serde_json::Error> {
        Ok(Message::Response(Response {
            id,
            result: to_raw(result)?,
        }))
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Message::Error(ErrorResponse { id, error })
    }

    /// The method name, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) | Message::Error(_) => None,
        }
    }

    /// The id, for requests and responses (`None` for notifications and for
    /// error responses without an id).
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            Message::Notification(_) => None,
        }
    }

    /// Encodes the message as compact JSON (no embedded newline).
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing our own types to a Vec cannot fail: every map key is a
        // string and raw payloads are already valid JSON.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Encodes a value as a raw JSON payload.
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

/// Decodes a raw JSON payload into `T`.
pub fn from_raw<T: serde::de::DeserializeOwned>(raw: &RawValue) -> Result<T, serde_json::Error> {
    serde_json::from_str(raw.get())
}

/// An empty JSON object payload, `{}` (the result of `ping`, for example).
pub fn empty_object() -> Box<RawValue> {
    // `{}` is valid JSON, so this cannot fail.
    RawValue::from_string("{}".to_owned()).expect("`{}` is valid JSON")
}

fn raw_eq(a: Option<&RawValue>, b: Option<&RawValue>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => raw_semantic_eq(a, b),
        _ => false,
    }
}

/// Compares two raw payloads as JSON values (key order and whitespace aside).
pub fn raw_semantic_eq(a: &RawValue, b: &RawValue) -> bool {
    a.get() == b.get()
        || serde_json::from_str::<serde_json::Value>(a.get()).ok()
            == serde_json::from_str::<serde_json::Value>(b.get()).ok()
}

impl PartialEq for Message {
    /// Messages are equal when their ids, methods and payloads are equal as
    /// JSON values.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Message::Request(a), Message::Request(b)) => {
                a.id == b.id
                    && a.method == b.method
                    && raw_eq(a.params.as_deref(), b.params.as_deref())
            }
            (Message::Notification(a), Message::Notification(b)) => {
                a.method == b.method && raw_eq(a.params.as_deref(), b.params.as_deref())
            }
            (Message::Response(a), Message::Response(b)) => {
                a.id == b.id && raw_semantic_eq(&a.result, &b.result)
            }
            (Message::Error(a), Message::Error(b)) => a.id == b.id && a.error == b.error,
            _ => false,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        match self {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("result", &r.result)?;
            }
            Message::Error(e) => {
                // JSON-RPC 2.0 §5: the id member is required; it is null when
                // the request's id could not be read.
                map.serialize_entry("id", &e.id)?;
                map.serialize_entry("error", &e.error)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC 2.0 message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut version_ok = false;
        let mut id: Option<Option<RequestId>> = None;
        let mut method: Option<String> = None;
        let mut params: Option<Box<RawValue>> = None;
        let mut result: Option<Box<RawValue>> = None;
        let mut error: Option<ErrorObject> = None;
        while let Some(key) = map.next_key::<MessageField>()? {
            match key {
                MessageField::Jsonrpc => {
                    // Borrowed when it can be: `Cow<str>` would allocate.
                    let v: crate::types::de::Key<'de> = map.next_value()?;
                    if v.as_str() != JSONRPC_VERSION {
                        return Err(de::Error::custom(format_args!(
                            "unsupported jsonrpc version {:?}",
                            v.as_str()
                        )));
                    }
                    version_ok = true;
                }
                MessageField::Id => id = Some(map.next_value()?),
                MessageField::Method => method = Some(map.next_value()?),
                MessageField::Params => params = Some(map.next_value()?),
                MessageField::Result => result = Some(map.next_value()?),
                MessageField::Error => error = Some(map.next_value()?),
                MessageField::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        if !version_ok {
            return Err(de::Error::custom("missing \"jsonrpc\": \"2.0\""));
        }
        match (method, result, error) {
            (Some(method), None, None) => match id {
                Some(Some(id)) => Ok(Message::Request(Request { id, method, params })),
                Some(None) => Err(de::Error::custom("request id must not be null")),
                None => Ok(Message::Notification(Notification { method, params })),
            },
            (None, Some(result), None) => match id {
                Some(Some(id)) => Ok(Message::Response(Response { id, result })),
                _ => Err(de::Error::custom("response without an id")),
            },
            (None, None, Some(error)) => Ok(Message::Error(ErrorResponse {
                id: id.flatten(),
                error,
            })),
            (None, None, None) => Err(de::Error::custom(
                "message has none of \"method\", \"result\" or \"error\"",
            )),
            _ => Err(de::Error::custom(
                "message mixes \"method\", \"result\" and \"error\"",
            )),
        }
    }
}

enum MessageField {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for MessageField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = MessageField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MessageField, E> {
                Ok(match v {
                    "jsonrpc" => MessageField::Jsonrpc,
                    "id" => MessageField::Id,
                    "method" => MessageField::Method,
                    "params" => MessageField::Params,
                    "result" => MessageField::Result,
                    "error" => MessageField::Error,
                    _ => MessageField::Other,
                })
            }
        }
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

/// What one frame (an NDJSON line, an SSE `data` field, an HTTP body) holds:
/// one message, or a batch.
///
/// Batches exist only in protocol version 2025-03-26; the session decides
/// whether to accept one. We never send them.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// A single message.
    Single(Message),
    /// A JSON-RPC batch (an array of messages).
    Batch(Vec<Message>),
}

impl Frame {
    /// Decodes one frame from JSON bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Frame, serde_json::Error> {
        // Checking UTF-8 once for the whole frame and decoding from `str` is
        // cheaper than decoding from bytes, which checks every string and
        // every raw payload on its own (measured with callgrind: about a
        // fifth of a small response's decoding). Invalid UTF-8 takes the byte
        // decoder, for its error.
        let Ok(text) = std::str::from_utf8(bytes) else {
            return Self::decode(bytes, serde_json::from_slice, serde_json::from_slice);
        };
        Self::decode(
            text.as_bytes(),
            |_| serde_json::from_str(text),
            |_| serde_json::from_str(text),
        )
    }

    fn decode<'a>(
        bytes: &'a [u8],
        batch: impl FnOnce(&'a [u8]) -> Result<Vec<Message>, serde_json::Error>,
        single: impl FnOnce(&'a [u8]) -> Result<Message, serde_json::Error>,
    ) -> Result<Frame, serde_json::Error> {
        let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
        if first == Some(b'[') {
            batch(bytes).map(Frame::Batch)
        } else {
            single(bytes).map(Frame::Single)
        }
    }
}

impl Serialize for Frame {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Frame::Single(m) => m.serialize(serializer),
            Frame::Batch(ms) => ms.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(s: &str) -> Result<Message, serde_json::Error> {
        serde_json::from_str(s)
    }

    #[test]
    fn tells_messages_apart_by_fields() {
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Message::Request(_))
        ));
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response(_))
        ));
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#),
            Ok(Message::Error(_))
        ));
    }

    #[test]
    fn error_response_id_may_be_null_or_missing() {
        for s in [
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}"#,
        ] {
            match decode(s) {
                Ok(Message::Error(e)) => assert_eq!(e.id, None),
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn ids_keep_their_type() {
        let m = decode(r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#).unwrap();
        assert_eq!(m.id(), Some(&RequestId::String("1".into())));
        let bytes = m.to_bytes();
        assert!(String::from_utf8(bytes).unwrap().contains(r#""id":"1""#));
        let m = decode(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert_eq!(m.id(), Some(&RequestId::Number(7)));
    }

    #[test]
    fn rejects_malformed_messages() {
        for s in [
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            r#"[1,2]"#,
            r#""text""#,
        ] {
            assert!(decode(s).is_err(), "accepted {s}");
        }
    }

    #[test]
    fn unknown_top_level_fields_are_ignored() {
        let m = decode(r#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":{"a":[1]}}"#).unwrap();
        assert_eq!(m.method(), Some("ping"));
    }

    #[test]
    fn frames_hold_single_messages_or_batches() {
        let f = Frame::from_slice(
            br#" [{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"result":{}}]"#,
        )
        .unwrap();
        match f {
            Frame::Batch(ms) => assert_eq!(ms.len(), 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Frame::from_slice(br#"{"jsonrpc":"2.0","method":"a"}"#),
            Ok(Frame::Single(_))
        ));
    }

    #[test]
    fn error_data_null_round_trips() {
        let m = decode(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":null}}"#)
            .unwrap();
        let again = decode(std::str::from_utf8(&m.to_bytes()).unwrap()).unwrap();
        assert_eq!(m, again);
        match again {
            Message::Error(e) => assert_eq!(
                e.error.data.map(|d| d.get().to_owned()),
                Some("null".into())
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn encodes_compact_single_line() {
        let m = Message::request(1, "tools/call", Some(&serde_json::json!({"a": "x\ny"}))).unwrap();
        let bytes = m.to_bytes();
        assert!(!bytes.contains(&b'\n'));
        assert_eq!(decode(std::str::from_utf8(&bytes).unwrap()).unwrap(), m);
    }
}

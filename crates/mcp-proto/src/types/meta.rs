//! `_meta` keys: the reserved names as constants, and the key-format rules.
//!
//! MCP "Basic/General fields/`_meta`" (2025-06-18 onwards): a key is an
//! optional prefix (dot-separated labels followed by `/`) and a name. A prefix
//! whose second label is `modelcontextprotocol` or `mcp` is reserved for the
//! spec. Implementations must not assume anything about reserved keys they do
//! not know.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{JsonObject, JsonText};

/// A `_meta` object (MCP "Basic/General fields/`_meta`"), kept as the text
/// the peer wrote.
///
/// Every result, notification, content block and list item may carry one,
/// and a client seldom reads it: in the 2026-07-28 era every result's
/// `_meta` names the server, and decoding that into a map for each
/// `tools/call` (and dropping it) cost about as much as the rest of the
/// result. A `Meta` is checked to be one JSON object when it is decoded,
/// costs one copy of its text, and is written back byte for byte;
/// [`Meta::get`] decodes one member, [`Meta::to_object`] all of them.
///
/// ```
/// use mcp_proto::types::{JsonObject, Meta};
///
/// let meta: Meta = serde_json::from_str(r#"{"progressToken": 7, "com.example/x": [1]}"#)?;
/// assert_eq!(meta.get("progressToken"), Some(7.into()));
/// assert_eq!(meta.get("absent"), None);
/// assert_eq!(meta.to_object()["com.example/x"], serde_json::json!([1]));
/// assert!(serde_json::from_str::<Meta>("[1]").is_err());
///
/// let mut built = Meta::from(JsonObject::new());
/// built.insert("a", true.into());
/// assert_eq!(built.as_str(), r#"{"a":true}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Meta(MetaText);

/// Where a [`Meta`] keeps its text.
#[derive(Clone)]
enum MetaText {
    /// In a box of its own: decoded with the rest of a message, or built.
    Own(JsonText),
    /// Shared by every result that repeated it ([`checked`]): a clone
    /// costs a count, not a copy.
    Shared(Arc<RawValue>),
}

impl Default for MetaText {
    fn default() -> Self {
        MetaText::Own(JsonText::default())
    }
}

impl Meta {
    /// Checks that `text` is one JSON object and keeps it as it is.
    pub fn from_text(text: impl Into<String>) -> Result<Meta, serde_json::Error> {
        let text = JsonText::from_text(text)?;
        if text.is_object() {
            Ok(Meta(MetaText::Own(text)))
        } else {
            Err(de::Error::invalid_type(
                de::Unexpected::Other(super::json_kind(&text.to_value())),
                &"a JSON object",
            ))
        }
    }

    /// The object's JSON text, exactly as it was received or written.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            MetaText::Own(text) => text.as_str(),
            MetaText::Shared(raw) => raw.get(),
        }
    }

    /// The member `key`, decoded; the other members are only skipped over.
    /// Of a key written twice, the last one (as `serde_json` keeps it).
    pub fn get(&self, key: &str) -> Option<Value> {
        struct Member<'k>(&'k str);
        impl<'de> Visitor<'de> for Member<'_> {
            type Value = Option<Value>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
                let mut found = None;
                while let Some(name) = map.next_key::<super::de::Key<'de>>()? {
                    if name.as_str() == self.0 {
                        found = Some(map.next_value::<Value>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(found)
            }
        }
        let mut decoder = serde_json::Deserializer::from_str(self.as_str());
        de::Deserializer::deserialize_map(&mut decoder, Member(key))
            .ok()
            .flatten()
    }

    /// Every member, decoded.
    pub fn to_object(&self) -> JsonObject {
        serde_json::from_str(self.as_str()).unwrap_or_default()
    }

    /// Sets the member `key` (written again as compact JSON).
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        let mut object = self.to_object();
        object.insert(key.into(), value);
        *self = Meta::from(object);
    }

    /// Whether the object has no members.
    pub fn is_empty(&self) -> bool {
        self.as_str()[1..].trim_start().starts_with('}')
    }
}

impl From<JsonObject> for Meta {
    fn from(object: JsonObject) -> Self {
        Meta(MetaText::Own(JsonText::from(&object)))
    }
}

impl From<&JsonObject> for Meta {
    fn from(object: &JsonObject) -> Self {
        Meta(MetaText::Own(JsonText::from(object)))
    }
}

impl From<Meta> for JsonObject {
    fn from(meta: Meta) -> Self {
        meta.to_object()
    }
}

impl PartialEq for Meta {
    /// Equal as JSON objects (key order and whitespace aside), as
    /// [`JsonText`]s are.
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() || self.to_object() == other.to_object()
    }
}

impl PartialEq<JsonObject> for Meta {
    fn eq(&self, other: &JsonObject) -> bool {
        self.to_object() == *other
    }
}

impl fmt::Debug for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            MetaText::Own(text) => text.serialize(serializer),
            MetaText::Shared(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::json_text::object(deserializer).map(|text| Meta(MetaText::Own(text)))
    }
}

/// A result type that can take its top-level `_meta` apart from the rest of
/// its text, through [`RawJson::decode_result`](crate::jsonrpc::RawJson::decode_result).
///
/// In the 2026-07-28 era every result's `_meta` names the server
/// (`io.modelcontextprotocol/serverInfo`, MCP 2026-07-28 "Basic/General
/// fields/`_meta`"), the same text result after result. Decoding it with
/// the rest of the result read it through and copied it on every call
/// (measured with callgrind: about 1,900 of a `tools/call` echo's 21,500
/// instructions over stdio for a 140-byte `_meta`). For a type that names
/// its `_meta` field ([`LiftsMeta::META`]), framing's note of where the
/// `_meta` member lies lets the decode leave it out of the text serde
/// reads, and the field is set afterwards to the `Meta` that was checked
/// when that text was first seen on the thread. Implemented by the results
/// a client decodes on every call;
/// [`RawJson::decode`](crate::jsonrpc::RawJson::decode) decodes any type
/// the usual way.
pub trait LiftsMeta: serde::de::DeserializeOwned {
    /// The type's top-level `_meta` field, when it has one. A result whose
    /// one top-level `_meta` member is an object then has that member left
    /// out of the text serde reads, and the field set to it after the
    /// decode (setting a field costs less than handing the value to the
    /// decode through a thread's slot, which took about 250 instructions of
    /// a stateless-era `tools/call` echo over stdio, measured with
    /// callgrind). `None` (the default): the member is read with the rest.
    const META: Option<fn(&mut Self) -> &mut Option<Meta>> = None;

    /// The type's `resultType` field (MCP 2026-07-28 "Result"), when it has
    /// one. A result whose one top-level `resultType` is `"complete"` then
    /// has that member left out of the text serde reads too, and the field
    /// set to [`ResultType::Complete`](super::ResultType::Complete) after
    /// the decode: reading the member cost serde about 470 instructions of
    /// a stateless-era `tools/call` echo over stdio, noting and cutting it
    /// about 340 (measured with callgrind). `None` (the default): the
    /// member is read with the rest.
    const RESULT_TYPE: Option<fn(&mut Self) -> &mut Option<super::ResultType>> = None;
}

/// The longest `_meta` text of which [`checked`] keeps a checked copy.
const CHECKED_LIMIT: usize = 1024;

thread_local! {
    /// The last `_meta` [`checked`] checked on this thread.
    static CHECKED: RefCell<Option<Meta>> = const { RefCell::new(None) };
}

/// `text` as a [`Meta`]: checked to be one JSON object, unless it is the
/// text of the last one checked on this thread, which is shared instead.
/// `None` when it is not a JSON object.
pub(crate) fn checked(text: &str) -> Option<Meta> {
    let repeated = CHECKED
        .try_with(|last| {
            let last = last.try_borrow().ok()?;
            last.as_ref().filter(|m| m.as_str() == text).cloned()
        })
        .ok()
        .flatten();
    if repeated.is_some() {
        return repeated;
    }
    let checked = JsonText::from_text(text).ok()?;
    if !checked.is_object() {
        return None;
    }
    if text.len() > CHECKED_LIMIT {
        return Some(Meta(MetaText::Own(checked)));
    }
    // Kept shared, for this result and the ones that repeat it.
    let meta = Meta(MetaText::Shared(Arc::from(checked.into_raw())));
    let _ = CHECKED.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = Some(meta.clone());
        }
    });
    Some(meta)
}

/// Request `_meta`: the token that asks for `notifications/progress`.
pub const PROGRESS_TOKEN: &str = "progressToken";

/// Associates a message with a task (2025-11-25): `{ "taskId": ... }`.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Request `_meta` (2026-07-28, required): the protocol version of this request.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Request `_meta` (2026-07-28, SHOULD): the client's [`Implementation`](super::Implementation).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// Request `_meta` (2026-07-28, required): the client's capabilities for this request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Request `_meta` (2026-07-28, optional, deprecated): the log level for this
/// request; without it the server sends no `notifications/message`.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// Notification and result `_meta` (2026-07-28): the id of the
/// `subscriptions/listen` request whose stream carries the message.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Result `_meta` (2026-07-28, SHOULD): the server's [`Implementation`](super::Implementation), for display only.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// W3C Trace Context `traceparent` (2026-07-28), unprefixed.
pub const TRACEPARENT: &str = "traceparent";

/// W3C Trace Context `tracestate` (2026-07-28), unprefixed.
pub const TRACESTATE: &str = "tracestate";

/// W3C Baggage (2026-07-28), unprefixed.
pub const BAGGAGE: &str = "baggage";

/// The unprefixed keys the spec reserves.
const RESERVED_UNPREFIXED: [&str; 4] = [PROGRESS_TOKEN, TRACEPARENT, TRACESTATE, BAGGAGE];

/// Whether `key` is a well-formed `_meta` key.
///
/// - The prefix, if any, is one or more labels separated by `.` and ends with
///   `/`. A label starts with a letter, ends with a letter or digit, and has
///   only letters, digits and `-` in between.
/// - The name, unless empty, starts and ends with an ASCII letter or digit
///   and has only letters, digits, `-`, `_` and `.` in between. The spec
///   allows an empty name ("unless empty"), so `""` and `"com.example/"`
///   are valid.
pub fn is_valid_meta_key(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(|p| p.split('.').all(is_valid_label)) && is_valid_name(name)
}

/// Whether `key` is reserved for the protocol: its prefix's second label is
/// `modelcontextprotocol` or `mcp` (`io.modelcontextprotocol/`, `dev.mcp/`,
/// but not `com.example.mcp/`), or it is one of the unprefixed reserved
/// names ([`PROGRESS_TOKEN`], [`TRACEPARENT`], [`TRACESTATE`], [`BAGGAGE`]).
///
/// A client never invents keys in reserved namespaces, and never interprets
/// reserved keys it does not know.
pub fn is_reserved_meta_key(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, _)) => matches!(
            prefix.split('.').nth(1),
            Some("modelcontextprotocol" | "mcp")
        ),
        None => RESERVED_UNPREFIXED.contains(&key),
    }
}

fn is_valid_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        }
        _ => false,
    }
}

fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(key: &str, valid: bool, reserved: bool) {
        assert_eq!(is_valid_meta_key(key), valid, "valid({key:?})");
        assert_eq!(is_reserved_meta_key(key), reserved, "reserved({key:?})");
    }

    #[test]
    fn reserved_constants_are_valid_and_reserved() {
        for key in [
            PROGRESS_TOKEN,
            RELATED_TASK,
            PROTOCOL_VERSION,
            CLIENT_INFO,
            CLIENT_CAPABILITIES,
            LOG_LEVEL,
            SUBSCRIPTION_ID,
            SERVER_INFO,
            TRACEPARENT,
            TRACESTATE,
            BAGGAGE,
        ] {
            check(key, true, true);
        }
    }

    #[test]
    fn key_format() {
        check("myKey", true, false);
        check("a", true, false);
        check("com.example/my-key_1.x", true, false);
        check("com.example.api/k", true, false);
        check("x-1/y", true, false);
        // The spec's "unless empty": an empty name is allowed.
        check("", true, false);
        check("com.example/", true, false);
        check("-key", false, false);
        check("key-", false, false);
        check("key with space", false, false);
        check("com..example/k", false, false);
        check("1com.example/k", false, false);
        check("com.example-/k", false, false);
        check("/k", false, false);
        check("a/b/c", false, false);
        check("ключ", false, false);
    }

    #[test]
    fn reserved_prefixes_are_decided_by_the_second_label() {
        check("io.modelcontextprotocol/anything", true, true);
        check("dev.mcp/x", true, true);
        check("org.modelcontextprotocol.api/x", true, true);
        check("com.mcp.tools/x", true, true);
        check("com.example.mcp/x", true, false);
        check("mcp/x", true, false);
        check("modelcontextprotocol.io/x", true, false);
    }
}

//! [`JsonText`]: a JSON value a client passes on without looking inside, kept as the text it arrived in.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::JsonObject;

/// A JSON value kept as the text a peer sent: a tool's `inputSchema` and
/// `outputSchema` (MCP "Server/Tools", Tool).
///
/// A client hands schemas to a model and to a validator, and seldom looks
/// inside them; decoding every schema of a `tools/list` into maps is most
/// of the cost of connecting to a server with a large catalog. A `JsonText`
/// is checked to be one well-formed JSON value when it is decoded, costs
/// one copy of its text, and serializes back byte for byte, so the keys
/// stay in the order the server wrote them whatever `serde_json` features
/// the host enables. [`JsonText::to_value`] and [`JsonText::to_object`]
/// decode it when it is needed.
///
/// Two values are equal when they hold the same JSON (whitespace and key
/// order aside), so a schema written by hand equals the one a server sent.
///
/// ```
/// use mcp_proto::types::JsonText;
///
/// let schema: JsonText = serde_json::from_str(r#"{"type": "object", "properties": {}}"#)?;
/// assert_eq!(schema.as_str(), r#"{"type": "object", "properties": {}}"#);
/// assert_eq!(schema.to_object().unwrap()["type"], "object");
/// assert_eq!(schema, JsonText::from(serde_json::json!({"properties": {}, "type": "object"})));
/// assert_eq!(serde_json::to_string(&schema)?, r#"{"type": "object", "properties": {}}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone)]
pub struct JsonText(Box<RawValue>);

impl JsonText {
    /// Checks that `text` is one JSON value and keeps it as it is.
    pub fn from_text(text: impl Into<String>) -> Result<JsonText, serde_json::Error> {
        RawValue::from_string(text.into()).map(JsonText)
    }

    /// Writes `value` as JSON text, as its `Serialize` writes it (a struct's
    /// fields, or a map's entries, in the order it gives them).
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<JsonText, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(JsonText)
    }

    /// The JSON text, exactly as it was received or written.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// Whether the value is a JSON object (its text starts with `{`).
    pub fn is_object(&self) -> bool {
        self.as_str().starts_with('{')
    }

    /// The checked text, for a holder that shares it.
    pub(crate) fn into_raw(self) -> Box<RawValue> {
        self.0
    }

    /// The value decoded.
    pub fn to_value(&self) -> Value {
        // The text was checked to be JSON when this value was made.
        serde_json::from_str(self.as_str()).unwrap_or(Value::Null)
    }

    /// The value decoded as an object, or `None` when it is not one.
    pub fn to_object(&self) -> Option<JsonObject> {
        if !self.is_object() {
            return None;
        }
        serde_json::from_str(self.as_str()).ok()
    }

    /// The value decoded into any type.
    pub fn parse<T: de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.as_str())
    }
}

impl Default for JsonText {
    /// The empty object, `{}`.
    fn default() -> Self {
        JsonText::from(JsonObject::new())
    }
}

impl From<Value> for JsonText {
    fn from(value: Value) -> Self {
        JsonText::from(&value)
    }
}

impl From<&Value> for JsonText {
    fn from(value: &Value) -> Self {
        // Writing a `Value` cannot fail: its keys are strings.
        JsonText(serde_json::value::to_raw_value(value).unwrap_or_else(|_| empty_object()))
    }
}

impl From<JsonObject> for JsonText {
    fn from(object: JsonObject) -> Self {
        JsonText::from(&object)
    }
}

impl From<&JsonObject> for JsonText {
    fn from(object: &JsonObject) -> Self {
        JsonText(serde_json::value::to_raw_value(object).unwrap_or_else(|_| empty_object()))
    }
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("`{}` is JSON")
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() || self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for JsonText {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(JsonText)
    }
}

/// Decodes a [`JsonText`] that must be an object: a tool's `inputSchema`.
pub(crate) fn object<'de, D: Deserializer<'de>>(deserializer: D) -> Result<JsonText, D::Error> {
    let raw = JsonText::deserialize(deserializer)?;
    if raw.is_object() {
        Ok(raw)
    } else {
        Err(de::Error::invalid_type(
            de::Unexpected::Other(super::json_kind(&raw.to_value())),
            &"a JSON object",
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_is_kept_and_written_back_as_received() {
        let text = r#"{"z": 1, "a": {"y": [true, null], "b": "\u00e9"}}"#;
        let raw: JsonText = serde_json::from_str(text).unwrap();
        assert_eq!(raw.as_str(), text);
        assert_eq!(serde_json::to_string(&raw).unwrap(), text);
        assert_eq!(serde_json::to_string(&[&raw]).unwrap(), format!("[{text}]"));
    }

    #[test]
    fn equality_is_by_value() {
        let a: JsonText = serde_json::from_str(r#"{"a": 1, "b": 2}"#).unwrap();
        let b: JsonText = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        let c: JsonText = serde_json::from_str(r#"{"b":2,"a":3}"#).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, json!({"a": 1, "b": 2}));
    }

    #[test]
    fn decodes_from_a_value_and_from_text() {
        let from_value: JsonText = serde_json::from_value(json!({"type": "object"})).unwrap();
        assert_eq!(from_value.to_object().unwrap()["type"], "object");
        assert!(JsonText::from_text("{").is_err());
        assert!(JsonText::from_text("true").unwrap().to_object().is_none());
        assert_eq!(JsonText::default().as_str(), "{}");
    }

    #[test]
    fn an_input_schema_must_be_an_object() {
        #[derive(Debug, Deserialize)]
        struct Holder {
            #[serde(deserialize_with = "object")]
            #[allow(dead_code)]
            schema: JsonText,
        }
        assert!(serde_json::from_str::<Holder>(r#"{"schema": {"type": "object"}}"#).is_ok());
        let error = serde_json::from_str::<Holder>(r#"{"schema": [1]}"#).unwrap_err();
        assert!(error.to_string().contains("an array"), "{error}");
    }
}

//! A JSON object's top-level members as borrowed text, for what the gateway passes on unchanged: a request's parameters it only looks into, a `_meta` it only filters.
//!
//! Decoding such an object into a map of values and writing it again cost
//! the gateway more than the rest of a forwarded 2026-07-28 call: every
//! member was built as a value (an ordered map hashing each key) and
//! written back, though only a key or two was read. Here each member's
//! value stays the text the peer wrote (`RawValue`, checked to be JSON as
//! it is skipped), and only the keys are read.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The members of the JSON object `text`, in order, each value as its own
/// text; of a key written more than once, each occurrence. An error when
/// `text` is not one JSON object.
pub(super) fn of(text: &str) -> Result<Vec<(Cow<'_, str>, &RawValue)>, serde_json::Error> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Vec<(Cow<'de, str>, &'de RawValue)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4));
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                members.push((key, map.next_value::<&'de RawValue>()?));
            }
            Ok(members)
        }
    }
    let mut decoder = serde_json::Deserializer::from_str(text);
    let members = decoder.deserialize_map(Members)?;
    decoder.end()?;
    Ok(members)
}

/// The last value of `key` among `members` (as `serde_json` keeps a key
/// written twice).
pub(super) fn last<'a>(
    members: &[(Cow<'_, str>, &'a RawValue)],
    key: &str,
) -> Option<&'a RawValue> {
    members
        .iter()
        .rev()
        .find(|(name, _)| name == key)
        .map(|(_, value)| *value)
}

/// `members` as a JSON object's text, a key written more than once in the
/// place of its first occurrence with its last value (as decoding into a
/// map and writing it back would); `None` when there are none.
///
/// Built as a `String` from `str`s: the text needs no check that it is
/// UTF-8, and a key that needs no escape is copied as it is.
pub(super) fn write(members: &[(Cow<'_, str>, &RawValue)]) -> Option<String> {
    if members.is_empty() {
        return None;
    }
    let mut text = String::with_capacity(
        2 + members
            .iter()
            .map(|(key, value)| key.len() + value.get().len() + 4)
            .sum::<usize>(),
    );
    text.push('{');
    for (i, (key, _)) in members.iter().enumerate() {
        if members[..i].iter().any(|(earlier, _)| earlier == key) {
            continue;
        }
        if text.len() > 1 {
            text.push(',');
        }
        mcp_proto::jsonrpc::push_json_string(&mut text, key);
        text.push(':');
        text.push_str(last(members, key).map_or("null", RawValue::get));
    }
    text.push('}');
    Some(text)
}

/// An object's key: borrowed from the text unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
            fn visit_string<E: de::Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_their_text_and_keys_are_unescaped() {
        let members = of(r#"{"a": [1, 2], "b\u0063": {"x":1.0e3}, "a": "last"}"#).unwrap();
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["a", "bc", "a"]);
        assert_eq!(members[1].1.get(), r#"{"x":1.0e3}"#);
        assert_eq!(last(&members, "a").map(RawValue::get), Some(r#""last""#));
        assert!(last(&members, "z").is_none());
        let written = write(&members).unwrap();
        assert_eq!(written, r#"{"a":"last","bc":{"x":1.0e3}}"#);
        let again: serde_json::Value = serde_json::from_str(&written).unwrap();
        assert_eq!(again["bc"]["x"], 1000.0);
    }

    #[test]
    fn only_an_object_has_members() {
        for text in ["[1]", "1", "\"a\"", "{\"a\":}", "{} {}", ""] {
            assert!(of(text).is_err(), "{text}");
        }
        assert!(of(" {} ").unwrap().is_empty());
        assert_eq!(write(&[]), None);
        let quoted = [(
            Cow::Borrowed("a\"b"),
            serde_json::from_str::<&RawValue>("1").unwrap(),
        )];
        assert_eq!(write(&quoted).unwrap(), r#"{"a\"b":1}"#);
        // Escaped as serde_json escapes keys: a key needing none is copied.
        for key in ["a\\b\n\u{1}", "é\u{7f}/x"] {
            let one = [(
                Cow::Borrowed(key),
                serde_json::from_str::<&RawValue>("2").unwrap(),
            )];
            let quoted = serde_json::to_string(key).unwrap();
            assert_eq!(write(&one).unwrap(), format!("{{{quoted}:2}}"));
        }
    }
}

//! The key order of a server's schema, kept for its declaration: read from the schema's text, so it is the same whatever map type `serde_json` builds.
//!
//! A model reads a tool's parameters in the order the author listed them
//! (`owner`, `repo`, `title`, then the optional ones), and a declaration is
//! built from decoded maps, whose iteration order is `serde_json`'s choice
//! (sorted keys, or insertion order under its `preserve_order` feature).
//! [`KeyOrder`] records where each object key first appears in the text,
//! and a declaration walks properties and writes every object's keys in
//! that order (keys the dialect added come after, by name), so its text is
//! one and the same for every host.

use std::collections::HashMap;
use std::fmt;

use mcp_proto::types::JsonText;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

/// The key order of a schema's text: each object's keys in the order they
/// are written (by the object's JSON pointer), and each key by its first
/// occurrence anywhere (counting keys in document order), for objects the
/// declaration builds itself.
#[derive(Debug, Default)]
pub(super) struct KeyOrder {
    first: HashMap<String, usize>,
    objects: HashMap<String, Vec<String>>,
}

/// Where a key sorts: its place in its object's own order, then its first
/// occurrence in the text, then its name (keys of neither come last, by
/// name). A key, so the order is total whatever the object mixes.
type Rank<'k> = (usize, usize, &'k str);

impl KeyOrder {
    /// The key order of `schema`'s text. The text was checked to be JSON
    /// when it was made (and its nesting is within `serde_json`'s limit),
    /// so the walk reads it whole.
    pub(super) fn of(schema: &JsonText) -> Self {
        let mut order = KeyOrder::default();
        let mut deserializer = serde_json::Deserializer::from_str(schema.as_str());
        let walk = Walk {
            order: &mut order,
            at: String::new(),
        };
        // On an error (none is expected) the keys read so far are kept.
        let _ = walk.deserialize(&mut deserializer);
        order
    }

    /// Records the keys of the object at `at` (a JSON pointer) in the
    /// order given: what a declaration writes there.
    pub(super) fn set(&mut self, at: String, keys: Vec<String>) {
        self.objects.insert(at, keys);
    }

    /// Sorts the entries of the object at `at` into this order: each key's
    /// place is looked up once, so a large object sorts in `n log n`.
    pub(super) fn sort<'k, T>(&self, at: &str, entries: &mut [(&'k String, T)]) {
        let places: HashMap<&str, usize> = self
            .objects
            .get(at)
            .map(|keys| {
                keys.iter()
                    .enumerate()
                    .rev()
                    .map(|(place, key)| (key.as_str(), place))
                    .collect()
            })
            .unwrap_or_default();
        entries.sort_by_cached_key(|entry| -> Rank<'k> {
            let key: &'k str = entry.0.as_str();
            let local = places.get(key).copied().unwrap_or(usize::MAX);
            let first = self.first.get(key).copied().unwrap_or(usize::MAX);
            (local, first, key)
        });
    }

    /// `object` (at the root) serialized with its keys, and those of every
    /// object inside it, in this order.
    pub(super) fn write_object<'a>(&'a self, object: &'a Map<String, Value>) -> Ordered<'a> {
        Ordered {
            order: self,
            at: String::new(),
            value: Node::Object(object),
        }
    }
}

/// Records the keys of one value and of everything inside it.
struct Walk<'m> {
    order: &'m mut KeyOrder,
    at: String,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            let walk = Walk {
                order: &mut *self.order,
                at: format!("{}/{index}", self.at),
            };
            if seq.next_element_seed(walk)?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let next = self.order.first.len();
            self.order.first.entry(key.clone()).or_insert(next);
            let walk = Walk {
                order: &mut *self.order,
                at: format!("{}/{}", self.at, super::escape(&key)),
            };
            map.next_value_seed(walk)?;
            keys.push(key);
        }
        self.order.objects.insert(self.at, keys);
        Ok(())
    }
}

enum Node<'a> {
    Value(&'a Value),
    Object(&'a Map<String, Value>),
}

/// A value written with its objects' keys in a [`KeyOrder`]; `at` is its
/// JSON pointer.
pub(super) struct Ordered<'a> {
    order: &'a KeyOrder,
    at: String,
    value: Node<'a>,
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let object = match self.value {
            Node::Object(object) | Node::Value(Value::Object(object)) => object,
            Node::Value(Value::Array(items)) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for (index, item) in items.iter().enumerate() {
                    seq.serialize_element(&Ordered {
                        order: self.order,
                        at: format!("{}/{index}", self.at),
                        value: Node::Value(item),
                    })?;
                }
                return seq.end();
            }
            Node::Value(other) => return other.serialize(serializer),
        };
        let mut entries: Vec<(&String, &Value)> = object.iter().collect();
        self.order.sort(&self.at, &mut entries);
        let mut map = serializer.serialize_map(Some(entries.len()))?;
        for (key, value) in entries {
            map.serialize_entry(
                key,
                &Ordered {
                    order: self.order,
                    at: format!("{}/{}", self.at, super::escape(key)),
                    value: Node::Value(value),
                },
            )?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_order_of_the_text() {
        let text = JsonText::from_text(
            r#"{"type": "object", "$defs": {"d": {"properties": {"title": {}, "owner": {}}}},
                "properties": {"owner": {"type": "string"}, "repo": {}, "title": {"description": "t"}},
                "required": ["repo"]}"#,
        )
        .unwrap();
        let mut order = KeyOrder::of(&text);
        let value = text.to_object().unwrap();
        assert_eq!(
            serde_json::to_string(&order.write_object(&value)).unwrap(),
            r#"{"type":"object","$defs":{"d":{"properties":{"title":{},"owner":{}}}},"properties":{"owner":{"type":"string"},"repo":{},"title":{"description":"t"}},"required":["repo"]}"#
        );
        // Keys the text does not have come last, by name; an object the
        // declaration writes has the order it gives.
        let added =
            serde_json::json!({"zeta": 1, "alpha": 2, "repo_2": {"b": 1, "a": 2}, "owner": 4});
        order.set("/repo_2".to_owned(), vec!["b".to_owned(), "a".to_owned()]);
        let added = added.as_object().unwrap();
        assert_eq!(
            serde_json::to_string(&order.write_object(added)).unwrap(),
            r#"{"owner":4,"alpha":2,"repo_2":{"b":1,"a":2},"zeta":1}"#
        );
    }
}

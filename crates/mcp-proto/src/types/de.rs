//! One-pass deserializers for tagged unions, and string enums that keep unknown values.
//!
//! A derived internally tagged enum (`#[serde(tag = "type")]`) buffers the
//! whole object in serde's private `Content` tree before it knows the
//! variant, then decodes the variant from that tree; and it has no way to
//! keep an unknown variant's JSON. Content blocks are in every `tools/call`
//! result, so [`ContentBlock`](super::ContentBlock) and the other tagged
//! unions use [`deserialize_tagged!`] instead, which decodes in one pass
//! whatever the key order: when the tag is the object's first key (what
//! every SDK writes) the rest of the object is decoded straight into the
//! variant's type, through the `from_entries` that [`deserialize_object!`]
//! generates for it; the entries before a later tag (what a server that
//! sorts its keys writes) are read once each into a JSON value, which the
//! variant's fields then take over (a string without a copy; an object or
//! array from its value tree). The object is never buffered whole and
//! decoded again. On the `tools/call` benchmark
//! this cuts typed decoding by about a tenth against the derived enum.
//!
//! Plain structs keep the derived `Deserialize`: with `#[serde(flatten)]` it
//! decodes known fields directly and buffers only the unknown ones, and a
//! hand-written visitor measured no faster on `tools/list`. The generated
//! visitors keep the derived semantics (duplicate known fields and missing
//! required fields are errors, `null` for an optional field is `None`,
//! other keys go to `extra`); `Serialize` stays derived everywhere.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// An object key or tag value, borrowed from the input when it has no escapes.
pub(crate) enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    pub(crate) fn into_string(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_owned(),
            Key::Owned(s) => s,
        }
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }
}

/// Deserializes a sequence into a `Vec` that starts with room for one
/// element. Serde's own `Vec` visitor starts empty and its first push makes
/// room for four, which for a large element type (a [`ContentBlock`] is
/// hundreds of bytes) is an allocation past the allocator's small-size
/// caches; most tool results hold one block (measured with callgrind: about
/// 700 instructions per `tools/call` result).
///
/// [`ContentBlock`]: super::ContentBlock
pub(crate) fn deserialize_small_vec<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: de::Deserialize<'de>,
{
    struct SmallVecVisitor<T>(std::marker::PhantomData<T>);

    impl<'de, T: de::Deserialize<'de>> Visitor<'de> for SmallVecVisitor<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence")
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let Some(first) = seq.next_element()? else {
                return Ok(Vec::new());
            };
            // A peer-supplied hint is capped: it sizes memory before any
            // element has been seen.
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64) + 1);
            items.push(first);
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(items)
        }
    }

    deserializer.deserialize_seq(SmallVecVisitor(std::marker::PhantomData))
}

/// The entries a tagged union's decoder read before it met the tag, each
/// already decoded once into a [`serde_json::Value`] (a string value is a
/// `String` that the field takes over without copying). The first few are
/// kept inline, so that a block whose tag comes last (any server that sorts
/// its keys writes `{"text": ..., "type": "text"}`) costs no allocation
/// beyond the values themselves.
pub(crate) struct Pending<'de> {
    inline: [Option<(Key<'de>, serde_json::Value)>; PENDING_INLINE],
    len: usize,
    spill: Vec<(Key<'de>, serde_json::Value)>,
}

/// Two: a block's fields before a sorted `type` are mostly one or two
/// strings (`text`; `data` and `mimeType`), and a larger inline list cost
/// more in moves than it saved (measured with callgrind: a sorted one-block
/// `tools/call` result took about 110 instructions more with four).
const PENDING_INLINE: usize = 2;

impl<'de> Pending<'de> {
    pub(crate) fn new() -> Self {
        Pending {
            inline: Default::default(),
            len: 0,
            spill: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, key: Key<'de>, value: serde_json::Value) {
        match self.inline.get_mut(self.len) {
            Some(slot) => {
                *slot = Some((key, value));
                self.len += 1;
            }
            None => self.spill.push((key, value)),
        }
    }

    /// The entries in the order they were read.
    pub(crate) fn into_entries(self) -> impl Iterator<Item = (Key<'de>, serde_json::Value)> {
        self.inline.into_iter().flatten().chain(self.spill)
    }
}

/// Decodes a field's value that was read into a [`serde_json::Value`]
/// before the tag, as the map's error type.
pub(crate) fn from_pending<'de, T, E>(value: serde_json::Value) -> Result<T, E>
where
    T: de::Deserialize<'de>,
    E: de::Error,
{
    #[cfg(test)]
    FROM_PENDING.with(|n| n.set(n.get() + 1));
    T::deserialize(value).map_err(E::custom)
}

#[cfg(test)]
thread_local! {
    /// How many field values [`from_pending`] decoded on this thread: the
    /// tests check that no other value is decoded twice.
    static FROM_PENDING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// How many lifted strings a [`LiftedText`] took on this thread.
    pub(crate) static TEXTS_LIFTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A text field's value that may have been lifted out of the input before
/// serde read it: [`RawJson::decode_result`] cuts a long string without
/// escapes out of a result, puts [`LIFTED_PLACEHOLDER`] in its place and
/// the string itself in a slot of the thread ([`lift_text`]); the field
/// whose value is the placeholder takes the string from the slot instead.
/// Serde then neither scans the long text nor copies it a second time
/// (measured: serde's string scan was a fifth of a 1 MiB `tools/call`
/// result's client CPU over HTTP). Any other value is the field's own.
///
/// [`RawJson::decode_result`]: crate::jsonrpc::RawJson::decode_result
pub(crate) struct LiftedText(pub(crate) String);

/// The JSON text that stands for a lifted string: the string of one NUL
/// character, which only a `\u0000` escape can write, so the caller checks
/// that the rest of the input has none.
pub(crate) const LIFTED_PLACEHOLDER: &str = "\\u0000";

thread_local! {
    /// The string lifted out of the text being decoded, waiting for the
    /// field that stands in its place ([`LiftedText`]).
    static LIFTED_TEXT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs `decode` with `lifted` waiting in the thread's slot for the field
/// that holds [`LIFTED_PLACEHOLDER`]. Returns the outcome, whether that
/// field took it (a decode in which none did, the long string not being a
/// text field's value, has to be done again from the whole text) and the
/// string when it was not taken.
pub(crate) fn lift_text<R>(
    lifted: String,
    decode: impl FnOnce() -> R,
) -> (R, bool, Option<String>) {
    let mut value = Some(lifted);
    // What an enclosing decode on this thread lifted is put back after.
    let previous = LIFTED_TEXT
        .try_with(|slot| {
            let mut slot = slot.try_borrow_mut().ok()?;
            Some(std::mem::replace(&mut *slot, value.take()))
        })
        .ok()
        .flatten();
    let Some(previous) = previous else {
        return (decode(), false, value);
    };
    let decoded = decode();
    let left = LIFTED_TEXT
        .try_with(|slot| {
            let mut slot = slot.try_borrow_mut().ok()?;
            Some(std::mem::replace(&mut *slot, previous))
        })
        .ok()
        .flatten();
    let taken = matches!(left, Some(None));
    (decoded, taken, left.flatten())
}

impl<'de> de::Deserialize<'de> for LiftedText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text != "\0" {
            return Ok(LiftedText(text));
        }
        let lifted = LIFTED_TEXT
            .try_with(|slot| slot.try_borrow_mut().ok()?.take())
            .ok()
            .flatten();
        #[cfg(test)]
        if lifted.is_some() {
            TEXTS_LIFTED.with(|n| n.set(n.get() + 1));
        }
        Ok(LiftedText(lifted.unwrap_or(text)))
    }
}

/// Generates a one-pass `Deserialize` for a struct with an `extra: JsonObject`
/// field, plus `fn from_map(map)` that reads the remaining entries of a map
/// and `fn from_entries(pending, map)` that first takes the entries a tagged
/// union's decoder read before the tag (see [`deserialize_tagged!`]). For
/// the members of tagged unions.
///
/// Each field is `name: "wireName" => kind`, where kind is `req` (missing is
/// an error), `opt` (the field is an `Option`; missing or `null` is `None`),
/// `dflt` (missing is `Default::default()`) or `text` (a required `String`
/// that takes a long text lifted out of the input, see [`LiftedText`]). An optional
/// `tag "key" = "value"` accepts that key with exactly that value and drops
/// it (the derived `Serialize` writes it back through `#[serde(tag)]`).
macro_rules! deserialize_object {
    (
        $ty:ident, $expecting:literal,
        $(tag $tag_key:literal = $tag_val:literal,)?
        { $($field:ident : $wire:literal => $kind:ident),* $(,)? }
    ) => {
        impl $ty {
            /// Reads the rest of a JSON object into this type.
            pub(crate) fn from_map<'de, A: ::serde::de::MapAccess<'de>>(
                map: A,
            ) -> ::std::result::Result<Self, A::Error> {
                $ty::from_entries(::std::option::Option::None, map)
            }

            /// Reads `pending` (entries already decoded into JSON values,
            /// none of them the tag), then the rest of a JSON object, into
            /// this type.
            pub(crate) fn from_entries<'de, A: ::serde::de::MapAccess<'de>>(
                pending: ::std::option::Option<$crate::types::de::Pending<'de>>,
                mut map: A,
            ) -> ::std::result::Result<Self, A::Error> {
                $(let mut $field = ::std::option::Option::None;)*
                let mut extra = $crate::types::JsonObject::new();
                // `None` when the tag came first (what every SDK writes):
                // then no list is built, walked or dropped (measured with
                // callgrind: about 390 of the 3,400 instructions that
                // decoding a one-block `tools/call` result took).
                if let ::std::option::Option::Some(pending) = pending {
                    for (key, value) in pending.into_entries() {
                        match key.as_str() {
                            $(
                                $wire => {
                                    if $field.is_some() {
                                        return ::std::result::Result::Err(
                                            <A::Error as ::serde::de::Error>::duplicate_field($wire),
                                        );
                                    }
                                    $field = ::std::option::Option::Some(
                                        $crate::types::de::deserialize_object!(@pending $kind, value, A),
                                    );
                                }
                            )*
                            _ => {
                                extra.insert(key.into_string(), value);
                            }
                        }
                    }
                }
                while let ::std::option::Option::Some(key) =
                    map.next_key::<$crate::types::de::Key<'de>>()?
                {
                    match key.as_str() {
                        $(
                            $wire => {
                                if $field.is_some() {
                                    return ::std::result::Result::Err(
                                        <A::Error as ::serde::de::Error>::duplicate_field($wire),
                                    );
                                }
                                $field = ::std::option::Option::Some(
                                    $crate::types::de::deserialize_object!(@value $kind, map),
                                );
                            }
                        )*
                        $(
                            $tag_key => {
                                let tag: $crate::types::de::Key<'de> = map.next_value()?;
                                if tag.as_str() != $tag_val {
                                    return ::std::result::Result::Err(
                                        <A::Error as ::serde::de::Error>::invalid_value(
                                            ::serde::de::Unexpected::Str(tag.as_str()),
                                            &$tag_val,
                                        ),
                                    );
                                }
                            }
                        )?
                        _ => {
                            let value: ::serde_json::Value = map.next_value()?;
                            extra.insert(key.into_string(), value);
                        }
                    }
                }
                ::std::result::Result::Ok($ty {
                    $($field: $crate::types::de::deserialize_object!(@finish $kind, $field, $wire, A),)*
                    extra,
                })
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                struct ObjectVisitor;
                impl<'de> ::serde::de::Visitor<'de> for ObjectVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> ::std::result::Result<$ty, A::Error> {
                        $ty::from_map(map)
                    }
                }
                deserializer.deserialize_map(ObjectVisitor)
            }
        }
    };
    (@value text, $map:ident) => {
        $map.next_value::<$crate::types::de::LiftedText>()?.0
    };
    (@value $kind:ident, $map:ident) => {
        $map.next_value()?
    };
    (@pending text, $value:ident, $A:ident) => {
        $crate::types::de::from_pending::<$crate::types::de::LiftedText, $A::Error>($value)?.0
    };
    (@pending $kind:ident, $value:ident, $A:ident) => {
        $crate::types::de::from_pending::<_, $A::Error>($value)?
    };
    (@finish text, $field:ident, $wire:literal, $A:ident) => {
        $crate::types::de::deserialize_object!(@finish req, $field, $wire, $A)
    };
    (@finish req, $field:ident, $wire:literal, $A:ident) => {
        match $field {
            ::std::option::Option::Some(v) => v,
            ::std::option::Option::None => {
                return ::std::result::Result::Err(
                    <$A::Error as ::serde::de::Error>::missing_field($wire),
                )
            }
        }
    };
    (@finish opt, $field:ident, $wire:literal, $A:ident) => {
        $field.flatten()
    };
    (@finish dflt, $field:ident, $wire:literal, $A:ident) => {
        $field.unwrap_or_default()
    };
}

/// Generates `Deserialize` and `fn from_map(map)` for an enum tagged by a
/// string field, with newtype variants over types that have `from_entries`
/// (see [`deserialize_object!`]) and an `Unknown(serde_json::Value)` variant
/// that keeps any object whose tag is missing or not listed.
///
/// Decoding is one pass whatever the key order. The entries before the tag
/// are each read once into a JSON value ([`Pending`]); when the tag names a
/// listed variant, those values move into the variant's fields and the rest
/// of the object is decoded straight into it. When the tag comes first
/// (what every SDK writes) nothing is held at all. An unknown or missing
/// tag keeps the object exactly as received.
///
/// A listed tag whose body does not parse is an error, not `Unknown`: the
/// peer claimed a type we know and broke its contract, and hiding that
/// would turn a protocol bug into silently missing content. So is a second
/// tag after an unknown one.
macro_rules! deserialize_tagged {
    (
        $ty:ident, $expecting:literal, $tag:literal,
        { $($val:literal => $variant:ident($inner:ty)),* $(,)? }
    ) => {
        impl $ty {
            /// Reads a JSON object's entries into this type.
            pub(crate) fn from_map<'de, A: ::serde::de::MapAccess<'de>>(
                mut map: A,
            ) -> ::std::result::Result<Self, A::Error> {
                let mut pending = ::std::option::Option::None;
                while let ::std::option::Option::Some(key) =
                    map.next_key::<$crate::types::de::Key<'de>>()?
                {
                    if key.as_str() != $tag {
                        let value: ::serde_json::Value = map.next_value()?;
                        pending
                            .get_or_insert_with($crate::types::de::Pending::new)
                            .push(key, value);
                        continue;
                    }
                    let tag: $crate::types::de::Key<'de> = map.next_value()?;
                    match tag.as_str() {
                        $($val => return <$inner>::from_entries(pending, map).map($ty::$variant),)*
                        _ => {}
                    }
                    let mut object = $crate::types::JsonObject::new();
                    for (key, value) in pending.into_iter().flat_map($crate::types::de::Pending::into_entries) {
                        object.insert(key.into_string(), value);
                    }
                    object.insert(key.into_string(), ::serde_json::Value::String(tag.into_string()));
                    while let ::std::option::Option::Some(key) =
                        map.next_key::<$crate::types::de::Key<'de>>()?
                    {
                        if key.as_str() == $tag {
                            return ::std::result::Result::Err(
                                <A::Error as ::serde::de::Error>::duplicate_field($tag),
                            );
                        }
                        let value: ::serde_json::Value = map.next_value()?;
                        object.insert(key.into_string(), value);
                    }
                    return ::std::result::Result::Ok($ty::Unknown(::serde_json::Value::Object(object)));
                }
                let mut object = $crate::types::JsonObject::new();
                for (key, value) in pending.into_iter().flat_map($crate::types::de::Pending::into_entries) {
                    object.insert(key.into_string(), value);
                }
                ::std::result::Result::Ok($ty::Unknown(::serde_json::Value::Object(object)))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                struct TaggedVisitor;
                impl<'de> ::serde::de::Visitor<'de> for TaggedVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> ::std::result::Result<$ty, A::Error> {
                        $ty::from_map(map)
                    }
                }
                deserializer.deserialize_map(TaggedVisitor)
            }
        }
    };
}

/// Generates a string enum whose unknown values are kept in `Other(String)`
/// (the spec leaves these sets open, or a newer peer may extend them), with
/// `as_str`, `Display`, `From<&str>`, `Serialize` and an allocation-free
/// `Deserialize` for the known values.
macro_rules! open_string_enum {
    (
        $(#[$attr:meta])*
        pub enum $ty:ident {
            $($(#[$vattr:meta])* $variant:ident = $wire:literal,)*
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $ty {
            $($(#[$vattr])* $variant,)*
            /// A value this crate does not know, kept verbatim.
            Other(::std::string::String),
        }

        impl $ty {
            /// The wire form.
            pub fn as_str(&self) -> &str {
                match self {
                    $($ty::$variant => $wire,)*
                    $ty::Other(s) => s.as_str(),
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::convert::From<&str> for $ty {
            fn from(s: &str) -> Self {
                match s {
                    $($wire => $ty::$variant,)*
                    other => $ty::Other(other.to_owned()),
                }
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                let key = <$crate::types::de::Key<'de> as ::serde::Deserialize>::deserialize(
                    deserializer,
                )?;
                ::std::result::Result::Ok(match key.as_str() {
                    $($wire => $ty::$variant,)*
                    _ => $ty::Other(key.into_string()),
                })
            }
        }
    };
}

pub(crate) use {deserialize_object, deserialize_tagged, open_string_enum};

#[cfg(all(test, feature = "proptest"))]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::FROM_PENDING;
    use crate::strategies::{arb_content_block, arb_reference, arb_sampling_content};
    use crate::types::{ContentBlock, Reference, SamplingContent};

    /// Every order of `n` keys up to five; past that (a resource link has
    /// up to nine keys: 362,880 orders) every rotation and every rotation
    /// reversed (the tag at every position, before and after each other
    /// key), and sixteen shuffles drawn from `seed`, so that over the cases
    /// any order of a larger block can come up.
    fn key_orders(n: usize, seed: u64) -> Vec<Vec<usize>> {
        fn every(rest: &mut Vec<usize>, done: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            if rest.is_empty() {
                out.push(done.clone());
                return;
            }
            for i in 0..rest.len() {
                let key = rest.remove(i);
                done.push(key);
                every(rest, done, out);
                done.pop();
                rest.insert(i, key);
            }
        }
        if n <= 5 {
            let mut out = Vec::new();
            every(&mut (0..n).collect(), &mut Vec::new(), &mut out);
            return out;
        }
        let mut out: Vec<Vec<usize>> = (0..n)
            .flat_map(|start| {
                let rotation: Vec<usize> = (0..n).map(|i| (start + i) % n).collect();
                let reversed = rotation.iter().rev().copied().collect();
                [rotation, reversed]
            })
            .collect();
        // A Fisher-Yates shuffle driven by xorshift64 (never seeded with 0).
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..16 {
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                let j = usize::try_from(next() % (i as u64 + 1)).unwrap_or(0);
                order.swap(i, j);
            }
            out.push(order);
        }
        out
    }

    /// Decodes `block` from every order of its keys, from text (keys
    /// borrowed), through an `io::Read` (keys owned) and through a
    /// `serde_json::Value`, and checks that it comes back equal, and that the only values decoded a second time are the
    /// known fields that came before the tag (read into a JSON value while
    /// the type was not known yet): never a value after the tag, never the
    /// block as a whole, never anything of a block of an unknown type. The
    /// strategies name every unknown field `x_...`.
    fn check<T>(block: &T, known: bool, nests_blocks: bool, seed: u64) -> Result<(), TestCaseError>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        // The members as the block's own serializer writes them (nested
        // blocks keep its order: the tag first), each kept as its text, so
        // the reordered texts below do not depend on how `serde_json::Map`
        // orders keys.
        let encoded = serde_json::to_string(block).expect("blocks encode");
        let members: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
            serde_json::from_str(&encoded)
                .map_err(|e| TestCaseError::fail(format!("a block is an object: {e}")))?;
        let entries: Vec<(String, Box<serde_json::value::RawValue>)> =
            members.into_iter().collect();
        // A `Value` keeps the order of the text only under serde_json's
        // `preserve_order`. Otherwise its keys come sorted: decoding from a
        // `Value` is only checked for what it decodes to, and a block nested
        // in a value read before the tag (itself decoded from that value's
        // tree, so its tag now sorts after `text`) adds to the count, which
        // is then a lower bound (`nests_blocks`: the block holds blocks).
        let value_keeps_order = serde_json::from_str::<Value>(r#"{"b":0,"a":0}"#)
            .ok()
            .and_then(|value| value.as_object()?.keys().next().cloned())
            .is_some_and(|first| first == "b");
        for order in key_orders(entries.len(), seed) {
            let keys: Vec<&str> = order.iter().map(|&i| entries[i].0.as_str()).collect();
            let text = format!(
                "{{{}}}",
                order
                    .iter()
                    .map(|&i| format!(
                        "{}:{}",
                        serde_json::to_string(&entries[i].0).expect("keys encode"),
                        entries[i].1.get()
                    ))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let ahead = keys
                .iter()
                .take_while(|key| **key != "type")
                .filter(|key| !key.starts_with("x_"))
                .count();
            let expected = if known { ahead } else { 0 };
            let value: Value = serde_json::from_str(&text).expect("the text is JSON");
            for source in 0..3 {
                FROM_PENDING.with(|n| n.set(0));
                let decoded: T = match source {
                    0 => serde_json::from_str(&text),
                    1 => serde_json::from_reader(text.as_bytes()),
                    _ => serde_json::from_value(value.clone()),
                }
                .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(&decoded, block, "{}", text);
                let decoded_twice = FROM_PENDING.with(std::cell::Cell::get);
                if value_keeps_order || (source < 2 && !nests_blocks) {
                    prop_assert_eq!(decoded_twice, expected, "values decoded twice in {}", text);
                } else if source < 2 {
                    prop_assert!(
                        decoded_twice >= expected,
                        "values decoded twice in {}",
                        text
                    );
                }
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn content_blocks_decode_in_one_pass_in_every_key_order(block in arb_content_block(), seed in any::<u64>()) {
            let known = !matches!(block, ContentBlock::Unknown(_));
            check(&block, known, false, seed)?;
        }

        #[test]
        fn sampling_blocks_decode_in_one_pass_in_every_key_order(block in arb_sampling_content(), seed in any::<u64>()) {
            let known = !matches!(block, SamplingContent::Unknown(_));
            let nests_blocks = matches!(block, SamplingContent::ToolResult(_));
            check(&block, known, nests_blocks, seed)?;
        }

        #[test]
        fn references_decode_in_one_pass_in_every_key_order(reference in arb_reference(), seed in any::<u64>()) {
            let known = !matches!(reference, Reference::Unknown(_));
            check(&reference, known, false, seed)?;
        }
    }
}

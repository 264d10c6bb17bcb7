//! JSON-RPC 2.0 framing as MCP uses it: ids, requests, notifications, responses and batches.
//!
//! Payloads are kept as JSON text: a request's or notification's `params`
//! and a response's `result` as [`RawJson`], `error.data` as a checked
//! [`RawValue`]. Framing does not even read `params` and `result` through:
//! it finds where each ends by skipping strings with a vectorised search,
//! and the caller's decode, straight into the type it expects, is the one
//! pass that reads and checks it (a 500-tool catalog or a 1 MiB tool output
//! is read once). Outbound payloads are encoded once, straight into their
//! text, and copied verbatim into the frame.
//!
//! A message is told apart by the fields it carries (MCP spec, "Base
//! Protocol" / JSON-RPC 2.0 §4-5): `method` with `id` is a request, `method`
//! without `id` a notification, `result` a response and `error` an error
//! response. Error responses may carry no `id` or `"id": null` (the request
//! could not be read); both are accepted.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{Error as _, SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
pub use serde_json::value::RawValue;

use crate::scan;

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
    /// The parameters, as JSON text (an object in MCP), if any: checked
    /// when they are decoded ([`RawJson::decode`]).
    pub params: Option<RawJson>,
}

/// A notification: no id, never answered.
#[derive(Clone, Debug)]
pub struct Notification {
    /// The method name, for example `notifications/progress`.
    pub method: String,
    /// The parameters, as JSON text, if any: checked when they are
    /// decoded ([`RawJson::decode`]).
    pub params: Option<RawJson>,
}

/// A successful response.
#[derive(Clone, Debug)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result, as the peer sent it; [`RawJson::decode`] reads it.
    pub result: RawJson,
}

/// A message's payload (a request's or notification's `params`, a
/// response's `result`) as JSON text: its extent is known, its content is
/// checked when it is decoded.
///
/// A frame is split into its members without reading its payload through
/// (see the module docs), so a payload is read in full exactly once, by
/// [`RawJson::decode`] into the type the reader expects. A malformed result
/// therefore fails that decode, and the caller gets an error for its
/// request rather than a message dropped as unreadable (and malformed
/// params fail the handler's decode, which answers with an error). Payloads
/// built here ([`RawJson::encode`], [`RawJson::from_text`], or from a
/// [`RawValue`]) are valid JSON. Cloning shares the text.
#[derive(Clone)]
pub struct RawJson(Repr, Noted);

/// What framing learnt of a result while finding where it ends. Offsets
/// are `u32` (a result that does not fit gets no note), so that a message
/// stays as small as it was without the note of its `_meta`: it is moved
/// from the reader to its request several times (measured with callgrind:
/// `usize` offsets cost about 500 instructions of copying per echo call).
#[derive(Clone, Copy, Debug)]
struct Noted {
    result_type: ResultTypeAt,
    /// Its one top-level `_meta` object.
    meta: Option<MetaAt>,
    /// The text between the quotes of its long text ([`scan::LongText`]);
    /// never ending at zero (it follows a key), which keeps the option the
    /// size of the pair.
    long_text: Option<(u32, std::num::NonZeroU32)>,
}

/// [`scan::MetaCut`] as offsets into [`RawJson::get`].
#[derive(Clone, Copy, Debug)]
struct MetaAt {
    value_start: u32,
    /// Never zero (the value follows the object's `{` and the key), which
    /// keeps `Option<MetaAt>` the size of `MetaAt`.
    value_end: std::num::NonZeroU32,
    cut_start: u32,
    cut_end: u32,
}

impl Noted {
    /// Nothing noted: a payload built here, or not a result.
    const NOTHING: Noted = Noted {
        result_type: ResultTypeAt::Unknown,
        meta: None,
        long_text: None,
    };
}

/// The most text [`RawJson::decode_result`] copies to leave a result's
/// `_meta` out of what serde reads: past it the copy would cost more than
/// reading the `_meta` does.
const LIFT_LIMIT: usize = 8 * 1024;

/// A string's value as the JSON text between its quotes, given that it
/// holds no escape: the text itself, copied once, unless it holds a
/// control character (which JSON forbids unescaped; serde then says so).
/// The check and the copy go a block at a time, so that each block is
/// still in the cache for the copy.
fn plain_text(text: &str) -> Option<String> {
    const BLOCK: usize = 16 * 1024;
    let mut copy = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(BLOCK);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (block, after) = rest.split_at(cut);
        if block.bytes().fold(u8::MAX, u8::min) < 0x20 {
            return None;
        }
        copy.push_str(block);
        rest = after;
    }
    Some(copy)
}

thread_local! {
    /// Where [`RawJson::decode_result`] writes a result without its `_meta`
    /// and its long text.
    static WITHOUT_META: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// What framing learnt of a result's top-level `resultType` member while
/// finding where the result ends, so that reading it costs no second scan.
#[derive(Clone, Copy, Debug)]
enum ResultTypeAt {
    /// Not looked for (a result built here, or not an object).
    Unknown,
    /// The result is an object without one.
    Absent,
    /// The member's value, as a range of [`RawJson::get`], and when it is
    /// `"complete"`, how far before and after that range the member's cut
    /// reaches ([`scan::ResultMembers`]); `(0, 0)` for no cut.
    At(u32, u32, (u16, u16)),
}

#[derive(Clone)]
enum Repr {
    /// The result alone: copied out of a borrowed frame (one allocation).
    Own(Arc<str>),
    /// `start..end` of `text`: a frame handed over whole
    /// ([`Frame::from_vec`]), so that a large result is not copied out of
    /// it, or a value encoded here. The range lies on character boundaries
    /// (framing cuts only at ASCII delimiters).
    Within {
        text: Arc<String>,
        start: usize,
        end: usize,
    },
    /// Text this crate wrote itself, kept as the bytes it was written into
    /// (serde_json's output joined to ours, UTF-8 by construction): written
    /// to the wire as it is, and checked only when read as text.
    Bytes(Arc<Vec<u8>>),
    /// A result whose long text was moved aside as its body arrived
    /// ([`crate::codec::JsonBody`]).
    Lifted(Arc<Lifted>),
}

/// A result framed without its long text, and that text
/// ([`Frame::from_lifted`]).
struct Lifted {
    /// The frame without the text: the result is `start..end` of it, with
    /// [`PLACEHOLDER`] (once in the whole frame) where the text was.
    body: Arc<String>,
    start: usize,
    end: usize,
    /// The text, checked: UTF-8 without quotes, escapes or control
    /// characters, at least [`crate::codec::body::LIFT_AFTER`] bytes.
    text: String,
    /// The result's whole text, written when first asked for
    /// ([`RawJson::get`]).
    whole: std::sync::OnceLock<String>,
}

/// What stands in a frame for a text moved aside: see
/// [`crate::types::de::LIFTED_PLACEHOLDER`].
const PLACEHOLDER: &str = crate::types::de::LIFTED_PLACEHOLDER;

impl Lifted {
    /// The result's whole text, joined on first use.
    #[inline(never)]
    fn whole(&self) -> &str {
        self.whole.get_or_init(|| self.joined(&self.text))
    }

    /// The result as framed, with the placeholder.
    fn framed(&self) -> &str {
        self.body.get(self.start..self.end).unwrap_or_default()
    }

    /// The result's whole text: the framed one with `text` (or, for an
    /// error's position, anything of its length) in the placeholder's place.
    fn joined(&self, text: &str) -> String {
        let framed = self.framed();
        let at =
            memchr::memmem::find(framed.as_bytes(), PLACEHOLDER.as_bytes()).unwrap_or(framed.len());
        let mut whole = String::with_capacity(framed.len() + text.len());
        whole.push_str(framed.get(..at).unwrap_or_default());
        whole.push_str(text);
        whole.push_str(framed.get(at + PLACEHOLDER.len()..).unwrap_or_default());
        whole
    }
}

impl RawJson {
    /// The JSON text.
    #[inline]
    pub fn get(&self) -> &str {
        match &self.0 {
            Repr::Own(text) => text,
            Repr::Within { text, start, end } => text.get(*start..*end).unwrap_or_default(),
            Repr::Bytes(bytes) => std::str::from_utf8(bytes).unwrap_or_default(),
            Repr::Lifted(lifted) => lifted.whole(),
        }
    }

    /// The text moved aside, for the tests to follow.
    #[cfg(test)]
    pub(crate) fn lifted_text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Lifted(lifted) => Some(&lifted.text),
            _ => None,
        }
    }

    /// The text framing read: [`RawJson::get`]'s, except for a result whose
    /// long text was moved aside, which has the placeholder in its place.
    /// What framing noted lies in this text.
    fn framed(&self) -> &str {
        match &self.0 {
            Repr::Lifted(lifted) => lifted.framed(),
            _ => self.get(),
        }
    }

    /// The JSON text's bytes, for writing it out: as [`RawJson::get`]'s,
    /// without checking text this crate wrote itself again.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Own(text) => text.as_bytes(),
            Repr::Within { text, start, end } => {
                text.get(*start..*end).unwrap_or_default().as_bytes()
            }
            Repr::Bytes(bytes) => bytes,
            Repr::Lifted(_) => self.get().as_bytes(),
        }
    }

    /// Decodes the result into `T`, checking it as JSON on the way.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        if let Repr::Lifted(lifted) = &self.0 {
            return self.decode_aside(lifted);
        }
        serde_json::from_str(self.get())
    }

    /// [`RawJson::decode`] of a result whose long text was moved aside: a
    /// copy of the text waits for the field that holds the placeholder; a
    /// decode in which none takes it is done again from the whole text.
    #[inline(never)]
    fn decode_aside<T: serde::de::DeserializeOwned>(
        &self,
        lifted: &Lifted,
    ) -> Result<T, serde_json::Error> {
        if let (Ok(decoded), true, _) = crate::types::de::lift_text(lifted.text.clone(), || {
            serde_json::from_str::<T>(lifted.framed())
        }) {
            return Ok(decoded);
        }
        serde_json::from_str(self.get())
    }

    /// Encodes a value as a payload.
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<RawJson, serde_json::Error> {
        serde_json::to_string(value).map(RawJson::written)
    }

    /// Checks that `text` is one JSON value and keeps it as it is.
    pub fn from_text(text: impl Into<String>) -> Result<RawJson, serde_json::Error> {
        let text = text.into();
        serde_json::from_str::<de::IgnoredAny>(&text)?;
        Ok(RawJson::written(text))
    }

    /// Text this crate wrote itself (serde_json's output, or valid pieces
    /// of it joined): valid JSON by construction, so not read again.
    pub(crate) fn written(text: String) -> RawJson {
        let end = text.len();
        RawJson(
            Repr::Within {
                text: Arc::new(text),
                start: 0,
                end,
            },
            Noted::NOTHING,
        )
    }

    /// [`RawJson::written`] for text written into bytes: serde_json's
    /// output, or valid pieces of it joined, which are UTF-8 (serde_json
    /// writes only UTF-8) and so are not checked as such on the way out.
    pub(crate) fn written_bytes(bytes: Vec<u8>) -> RawJson {
        RawJson(Repr::Bytes(Arc::new(bytes)), Noted::NOTHING)
    }

    /// Decodes a result into `T` as [`RawJson::decode`] does, but when
    /// framing noted the result's one top-level `_meta` object (every
    /// 2026-07-28 result has one, naming the server) and `T` names its
    /// `_meta` field ([`LiftsMeta::META`]), serde reads the result without
    /// it and the field is set to it afterwards: checked once per thread
    /// while it stays the same text, instead of read through and copied on
    /// every call. Likewise the longest string
    /// of at least 16 KiB without escapes that is a `text` member's value
    /// (a large text content block) is left out of what serde reads: the
    /// block's `text` takes it, checked for control characters and copied
    /// once, instead of being scanned by serde's string reader, several
    /// times slower than the search that found its end. The outcome is the
    /// same as [`RawJson::decode`]'s, errors included (a result that does
    /// not decode is decoded again whole, for the error's position).
    ///
    /// [`LiftsMeta::META`]: crate::types::LiftsMeta::META
    pub fn decode_result<T: crate::types::LiftsMeta>(&self) -> Result<T, serde_json::Error> {
        if let Repr::Lifted(lifted) = &self.0 {
            return self.decode_result_aside(lifted);
        }
        if let Some(decoded) = self.decode_lifted() {
            return Ok(decoded);
        }
        self.decode()
    }

    /// [`RawJson::decode_result`] of a result whose long text was moved
    /// aside: a copy of the text goes into the result.
    #[inline(never)]
    fn decode_result_aside<T: crate::types::LiftsMeta>(
        &self,
        lifted: &Arc<Lifted>,
    ) -> Result<T, serde_json::Error> {
        if let Some(decoded) = self.decode_lifted_in(Some(lifted), &mut None) {
            return Ok(decoded);
        }
        self.decode()
    }

    /// [`RawJson::decode_result`], taking the payload: a long text that
    /// was moved aside as the body arrived ([`crate::codec::JsonBody`]) is
    /// moved into the result rather than copied, when no clone of the
    /// payload shares it. The outcome is the same, errors included.
    #[inline]
    pub fn into_result<T: crate::types::LiftsMeta>(self) -> Result<T, serde_json::Error> {
        if let Repr::Lifted(_) = &self.0 {
            return self.into_result_aside();
        }
        self.decode_result()
    }

    /// [`RawJson::into_result`] of a result whose long text was moved
    /// aside.
    #[inline(never)]
    fn into_result_aside<T: crate::types::LiftsMeta>(self) -> Result<T, serde_json::Error> {
        let lifted = match self.0 {
            Repr::Lifted(lifted) => lifted,
            other => return RawJson(other, self.1).decode_result(),
        };
        let mut lifted = match Arc::try_unwrap(lifted) {
            Ok(lifted) => lifted,
            Err(shared) => return RawJson(Repr::Lifted(shared), self.1).decode_result(),
        };
        let text = std::mem::take(&mut lifted.text);
        let length = text.len();
        let raw = RawJson(Repr::Lifted(Arc::new(lifted)), self.1);
        let mut moved = Some(text);
        let decoded = match &raw.0 {
            Repr::Lifted(lifted) => raw.decode_lifted_in::<T>(Some(lifted), &mut moved),
            _ => None,
        };
        match (decoded, moved) {
            (Some(decoded), _) => Ok(decoded),
            // Not taken by a text field: the whole text, as usual.
            (None, Some(text)) => {
                let whole = match &raw.0 {
                    Repr::Lifted(lifted) => lifted.joined(&text),
                    _ => text,
                };
                serde_json::from_str(&whole)
            }
            // Taken, and the result did not decode: the error is the same
            // with any text of its length where the text was (a string
            // without escapes or control characters, which the field that
            // took it accepts whatever it holds).
            (None, None) => {
                let whole = match &raw.0 {
                    Repr::Lifted(lifted) => lifted.joined(&"x".repeat(length)),
                    _ => String::new(),
                };
                match serde_json::from_str::<T>(&whole) {
                    Err(error) => Err(error),
                    Ok(_) => Err(<serde_json::Error as de::Error>::custom(
                        "a result that decodes only in part",
                    )),
                }
            }
        }
    }

    /// [`RawJson::decode_result`]'s way, or `None` for the usual one.
    fn decode_lifted<T: crate::types::LiftsMeta>(&self) -> Option<T> {
        if let (Some(field), Some(at), None) = (T::META, self.1.meta, self.1.long_text) {
            return self.decode_without_meta(field, at);
        }
        self.decode_lifted_in(None, &mut None)
    }

    /// [`RawJson::decode_lifted`] but for its shortcut, and for a result
    /// whose long text was moved aside (`aside`): `moved` is that text
    /// handed over (else it is cloned), which comes back in `moved` unless
    /// a field took it.
    #[inline]
    fn decode_lifted_in<T: crate::types::LiftsMeta>(
        &self,
        aside: Option<&Arc<Lifted>>,
        moved: &mut Option<String>,
    ) -> Option<T> {
        let text = self.framed();
        // The `_meta` is left out only for a type with a field to put it in.
        let meta_at = T::META.and(self.1.meta).map(|at| {
            let value = at.value_start as usize..at.value_end.get() as usize;
            (value, (at.cut_start as usize, at.cut_end as usize))
        });
        let long = self
            .1
            .long_text
            .map(|(start, end)| (start as usize, end.get() as usize));
        if meta_at.is_none() && long.is_none() && aside.is_none() {
            return None;
        }
        let removed = meta_at
            .as_ref()
            .map_or(Some(0), |(_, cut)| cut.1.checked_sub(cut.0))?
            + long.map_or(0, |(start, end)| end.saturating_sub(start));
        if text.len().checked_sub(removed)? > LIFT_LIMIT {
            return None;
        }
        let meta = match &meta_at {
            Some((value, _)) => Some(crate::types::meta::checked(text.get(value.clone())?)?),
            None => None,
        };
        // A `resultType` of `"complete"` is cut too when `T` takes it back
        // (`LiftsMeta::RESULT_TYPE`), unless its cut would share a comma with
        // the `_meta`'s (then serde reads it).
        let result_type_cut = match (T::RESULT_TYPE, self.1.result_type) {
            (Some(_), ResultTypeAt::At(start, end, (before, after))) if before > 0 => {
                let cut = (
                    (start as usize).checked_sub(before.into())?,
                    end as usize + usize::from(after),
                );
                let apart = |other: (usize, usize)| cut.1 <= other.0 || other.1 <= cut.0;
                (meta_at.as_ref().is_none_or(|(_, other)| apart(*other)) && long.is_none_or(apart))
                    .then_some(cut)
            }
            _ => None,
        };
        // The cuts in order, each with what takes its place.
        let mut cuts = [
            meta_at.map(|(_, cut)| (cut, "")),
            long.map(|cut| (cut, crate::types::de::LIFTED_PLACEHOLDER)),
            result_type_cut.map(|cut| (cut, "")),
        ];
        cuts.sort_unstable_by_key(|cut| cut.map(|((start, _), _)| start));
        // The text without them is written into a buffer the thread keeps
        // (of at most twice `LIFT_LIMIT` bytes), not a new one per result; a
        // decode nested in this one finds it taken and makes its own.
        let mut without = WITHOUT_META
            .try_with(|buffer| buffer.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)))
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        without.clear();
        let mut from = 0;
        for ((start, end), replacement) in cuts.into_iter().flatten() {
            without.push_str(text.get(from..start)?);
            without.push_str(replacement);
            from = end;
        }
        without.push_str(text.get(from..)?);
        // The placeholder must be the only string whose value is a NUL:
        // any other is written `\u0000`, so none may be.
        let once = || memchr::memmem::find_iter(without.as_bytes(), b"\\u0000").count() == 1;
        let lifted = match (long, aside) {
            (Some((start, end)), _) if once() => Some(plain_text(text.get(start..end)?)?),
            // Moved aside as the body arrived, and checked then. A text
            // handed over is moved only when nothing could refuse the
            // result once the text is in it (no other escape, so no second
            // `_meta` key); else a copy goes in.
            (None, Some(aside)) if once() => Some(match moved.take() {
                Some(text) if memchr::memchr_iter(b'\\', without.as_bytes()).count() == 1 => text,
                Some(text) => {
                    let copy = text.clone();
                    *moved = Some(text);
                    copy
                }
                None => aside.text.clone(),
            }),
            _ => None,
        };
        let decode = || serde_json::from_str::<T>(&without);
        let mut decoded = match (long.is_some() || aside.is_some(), lifted) {
            (true, None) => None,
            (_, Some(lifted)) => match crate::types::de::lift_text(lifted, decode) {
                (Ok(decoded), true, _) => Some(decoded),
                (_, _, left) => {
                    if moved.is_none() && aside.is_some() {
                        *moved = left;
                    }
                    None
                }
            },
            (false, None) => decode().ok(),
        };
        // The cut members go back into their fields; a field that serde
        // filled anyway means a second such member (framing found one
        // `_meta`, so only an escaped key could write another), which the
        // whole decode reads as it is.
        if let Some(value) = &mut decoded {
            let mut refused = false;
            if let (Some(field), Some(meta)) = (T::META, meta) {
                let slot = field(value);
                refused |= slot.is_some();
                *slot = Some(meta);
            }
            if let (Some(field), Some(_)) = (T::RESULT_TYPE, result_type_cut) {
                let slot = field(value);
                refused |= slot.is_some();
                *slot = Some(crate::types::ResultType::Complete);
            }
            if refused {
                decoded = None;
            }
        }
        if without.capacity() <= 2 * LIFT_LIMIT {
            let _ = WITHOUT_META.try_with(|buffer| {
                if let Ok(mut buffer) = buffer.try_borrow_mut() {
                    *buffer = without;
                }
            });
        }
        decoded
    }

    /// [`RawJson::decode_lifted`] for a result with a `_meta` to leave out
    /// and no long text (every small stateless-era result): the same
    /// outcome, with at most two cuts, known in advance, instead of the
    /// general way's list of them sorted, and the thread's buffer borrowed
    /// in place instead of taken out and put back (measured with
    /// callgrind: a `tools/call` echo over stdio took about 90 instructions
    /// fewer, of the 600 the general way spent beyond a whole decode).
    fn decode_without_meta<T: crate::types::LiftsMeta>(
        &self,
        field: fn(&mut T) -> &mut Option<crate::types::Meta>,
        at: MetaAt,
    ) -> Option<T> {
        let text = self.get();
        let meta_cut = (at.cut_start as usize, at.cut_end as usize);
        if text
            .len()
            .checked_sub(meta_cut.1.checked_sub(meta_cut.0)?)?
            > LIFT_LIMIT
        {
            return None;
        }
        let value = at.value_start as usize..at.value_end.get() as usize;
        let meta = crate::types::meta::checked(text.get(value)?)?;
        // As in the general way: a `"complete"` `resultType` is cut too
        // when `T` takes it back, unless the two cuts would share a comma.
        let result_type_cut = match (T::RESULT_TYPE, self.1.result_type) {
            (Some(_), ResultTypeAt::At(start, end, (before, after))) if before > 0 => {
                let cut = (
                    (start as usize).checked_sub(before.into())?,
                    end as usize + usize::from(after),
                );
                (cut.1 <= meta_cut.0 || meta_cut.1 <= cut.0).then_some(cut)
            }
            _ => None,
        };
        let (first, second) = match result_type_cut {
            Some(cut) if cut.0 < meta_cut.0 => (cut, Some(meta_cut)),
            other => (meta_cut, other),
        };
        let decode = |without: &mut String| {
            without.clear();
            without.push_str(text.get(..first.0)?);
            match second {
                Some(second) => {
                    without.push_str(text.get(first.1..second.0)?);
                    without.push_str(text.get(second.1..)?);
                }
                None => without.push_str(text.get(first.1..)?),
            }
            serde_json::from_str::<T>(without).ok()
        };
        // The thread's buffer (of at most twice `LIFT_LIMIT` bytes, as the
        // text without the cuts is), or a new one when a decode nested in
        // this one holds it.
        let mut decoded = WITHOUT_META
            .try_with(|buffer| match buffer.try_borrow_mut() {
                Ok(mut buffer) => decode(&mut buffer),
                Err(_) => decode(&mut String::new()),
            })
            .ok()
            .flatten()?;
        // A field that serde filled anyway means a second such member,
        // which the whole decode reads as it is.
        let slot = field(&mut decoded);
        let mut refused = slot.is_some();
        *slot = Some(meta);
        if let (Some(field), Some(_)) = (T::RESULT_TYPE, result_type_cut) {
            let slot = field(&mut decoded);
            refused |= slot.is_some();
            *slot = Some(crate::types::ResultType::Complete);
        }
        (!refused).then_some(decoded)
    }

    /// The result's `resultType` (2026-07-28 "Result"): what framing noted
    /// while finding the result's end, or else read with
    /// [`ResultType::peek_str`](crate::types::ResultType::peek_str). A
    /// result without the member is `complete`.
    pub fn result_type(&self) -> Result<crate::types::ResultType, serde_json::Error> {
        // Framing found the value to be `"complete"` when it noted a cut.
        if let ResultTypeAt::At(_, _, (before, _)) = self.1.result_type
            && before > 0
        {
            return Ok(crate::types::ResultType::Complete);
        }
        let text = self.framed();
        let member = match self.1.result_type {
            ResultTypeAt::Unknown => return crate::types::ResultType::peek_str(text),
            ResultTypeAt::Absent => Some(None),
            // `u32` to `usize` loses nothing on the targets Rust supports
            // with `std` here (16-bit ones have no tokio or serde_json use).
            ResultTypeAt::At(start, end, _) => Some(text.get(start as usize..end as usize)),
        };
        crate::types::ResultType::from_member(text, member)
    }

    /// The same result, with what framing found of its `resultType`, its
    /// `_meta` and its long text (ranges of the whole frame, in which the
    /// result starts at `offset`).
    fn noting(
        mut self,
        offset: usize,
        member: Option<(usize, usize)>,
        meta: Option<scan::MetaCut>,
        long: Option<(usize, usize)>,
        complete_cut: Option<(usize, usize)>,
    ) -> RawJson {
        let shift = |at: usize| u32::try_from(at.checked_sub(offset)?).ok();
        let result_type = match member {
            None => Some(ResultTypeAt::Absent),
            Some((start, end)) => (|| {
                let reach = complete_cut
                    .and_then(|cut| {
                        Some((
                            u16::try_from(start.checked_sub(cut.0)?).ok()?,
                            u16::try_from(cut.1.checked_sub(end)?).ok()?,
                        ))
                    })
                    .unwrap_or((0, 0));
                Some(ResultTypeAt::At(shift(start)?, shift(end)?, reach))
            })(),
        };
        let meta = meta.and_then(|m| {
            Some(MetaAt {
                value_start: shift(m.value.0)?,
                value_end: std::num::NonZeroU32::new(shift(m.value.1)?)?,
                cut_start: shift(m.cut.0)?,
                cut_end: shift(m.cut.1)?,
            })
        });
        let long_text = long.and_then(|(start, end)| {
            Some((shift(start)?, std::num::NonZeroU32::new(shift(end)?)?))
        });
        self.1 = Noted {
            result_type: result_type.unwrap_or(ResultTypeAt::Unknown),
            meta,
            long_text,
        };
        self
    }

    /// The text as a checked [`RawValue`] (which reads it through).
    pub fn to_raw_value(&self) -> Result<Box<RawValue>, serde_json::Error> {
        RawValue::from_string(self.get().to_owned())
    }

    /// Text whose extent framing found: not checked here.
    fn delimited(text: &str) -> RawJson {
        RawJson(Repr::Own(Arc::from(text)), Noted::NOTHING)
    }

    /// `range` of a frame handed over whole, whose extent framing found:
    /// not checked here.
    fn within(text: &Arc<String>, range: std::ops::Range<usize>) -> RawJson {
        RawJson(
            Repr::Within {
                text: Arc::clone(text),
                start: range.start,
                end: range.end,
            },
            Noted::NOTHING,
        )
    }
}

impl From<Box<RawValue>> for RawJson {
    fn from(raw: Box<RawValue>) -> Self {
        RawJson::delimited(raw.get())
    }
}

impl From<&RawValue> for RawJson {
    fn from(raw: &RawValue) -> Self {
        RawJson::delimited(raw.get())
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RawJson").field(&self.get()).finish()
    }
}

impl PartialEq for RawJson {
    /// Equal as JSON values (key order and whitespace aside).
    fn eq(&self, other: &Self) -> bool {
        json_text_eq(self.get(), other.get())
    }
}

impl Serialize for RawJson {
    /// Writes the text verbatim through serde_json; a result that is not
    /// valid JSON is refused rather than written.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(self.get()).map_err(S::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RawJson::from)
    }
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

/// The message (bounded to [`ERROR_TEXT_LIMIT`](crate::text::ERROR_TEXT_LIMIT)
/// bytes and escaped onto one line, [`text::error_text`](crate::text::error_text):
/// it is the peer's text) and the code. The fields themselves stay exactly
/// as received.
impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = crate::text::error_text(&self.message, crate::text::ERROR_TEXT_LIMIT);
        write!(f, "{message} (code {})", self.code)
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
            params: params.map(RawJson::encode).transpose()?,
        }))
    }

    /// A notification with typed parameters.
    pub fn notification(
        method: impl Into<String>,
        params: Option<&impl Serialize>,
    ) -> Result<Self, serde_json::Error> {
        Ok(Message::Notification(Notification {
            method: method.into(),
            params: params.map(RawJson::encode).transpose()?,
        }))
    }

    /// A successful response with a typed result.
    pub fn response(id: RequestId, result: &impl Serialize) -> Result<Self, serde_json::Error> {
        Ok(Message::Response(Response {
            id,
            result: RawJson::encode(result)?,
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

    /// Encodes the message as compact JSON, exactly as its `Serialize`
    /// implementation writes it but with payloads copied rather than re-read
    /// (so a payload a peer sent pretty-printed keeps its own whitespace;
    /// [`crate::codec::ndjson::encode`] writes the one-line form stdio needs).
    pub fn to_bytes(&self) -> Vec<u8> {
        // Sized for the payload plus the envelope, so that encoding does not
        // grow the buffer step by step (four reallocations for a small call).
        let payload = match self {
            Message::Request(r) => r.params.as_ref().map_or(0, |p| p.get().len()),
            Message::Notification(n) => n.params.as_ref().map_or(0, |p| p.get().len()),
            Message::Response(r) => r.result.get().len(),
            Message::Error(_) => 0,
        };
        let mut out = Vec::with_capacity(payload + ENVELOPE_ESTIMATE);
        // Serializing the envelope's own types (ids, method names, error
        // objects) cannot fail; should it ever, the output is empty rather
        // than half a message.
        if write_message(self, &mut out).is_err() {
            out.clear();
        }
        out
    }
}

/// Writes `message` exactly as its `Serialize` implementation does in
/// compact form, without going through serde for the envelope: the fixed
/// keys are copied rather than escaped one character at a time (measured
/// with callgrind: about 60% of encoding a `tools/call` request).
pub(crate) fn write_message(message: &Message, out: &mut Vec<u8>) -> serde_json::Result<()> {
    out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
    match message {
        Message::Request(r) => {
            out.extend_from_slice(br#","id":"#);
            write_value(&r.id, out)?;
            out.extend_from_slice(br#","method":"#);
            write_value(&r.method, out)?;
            write_raw(
                br#","params":"#,
                r.params.as_ref().map(RawJson::as_bytes),
                out,
            );
        }
        Message::Notification(n) => {
            out.extend_from_slice(br#","method":"#);
            write_value(&n.method, out)?;
            write_raw(
                br#","params":"#,
                n.params.as_ref().map(RawJson::as_bytes),
                out,
            );
        }
        Message::Response(r) => {
            out.extend_from_slice(br#","id":"#);
            write_value(&r.id, out)?;
            write_raw(br#","result":"#, Some(r.result.as_bytes()), out);
        }
        Message::Error(e) => {
            out.extend_from_slice(br#","id":"#);
            write_value(&e.id, out)?;
            out.extend_from_slice(br#","error":"#);
            write_value(&e.error, out)?;
        }
    }
    out.push(b'}');
    Ok(())
}

fn write_value(value: &(impl Serialize + ?Sized), out: &mut Vec<u8>) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *out, value)
}

fn write_raw(key: &[u8], raw: Option<&[u8]>, out: &mut Vec<u8>) {
    if let Some(raw) = raw {
        out.extend_from_slice(key);
        out.extend_from_slice(raw);
    }
}

/// Room for a message's envelope (version, id, method, keys) beside its
/// payload: enough for any method name MCP defines.
const ENVELOPE_ESTIMATE: usize = 128;

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
    json_text_eq(a.get(), b.get())
}

fn json_text_eq(a: &str, b: &str) -> bool {
    a == b
        || serde_json::from_str::<serde_json::Value>(a).ok()
            == serde_json::from_str::<serde_json::Value>(b).ok()
}

impl PartialEq for Message {
    /// Messages are equal when their ids, methods and payloads are equal as
    /// JSON values.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Message::Request(a), Message::Request(b)) => {
                a.id == b.id && a.method == b.method && a.params == b.params
            }
            (Message::Notification(a), Message::Notification(b)) => {
                a.method == b.method && a.params == b.params
            }
            (Message::Response(a), Message::Response(b)) => a.id == b.id && a.result == b.result,
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
        let mut members = Members::default();
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
                    members.version_ok = true;
                }
                MessageField::Id => members.id = Some(map.next_value()?),
                MessageField::Method => members.method = Some(map.next_value()?),
                MessageField::Params => members.params = Some(map.next_value()?),
                MessageField::Result => members.result = Some(map.next_value()?),
                MessageField::Error => members.error = Some(map.next_value()?),
                MessageField::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        members.into_message().map_err(de::Error::custom)
    }
}

/// The members of a message object, as read so far.
#[derive(Default)]
struct Members {
    version_ok: bool,
    /// `Some(None)` for `"id": null`.
    id: Option<Option<RequestId>>,
    method: Option<String>,
    params: Option<RawJson>,
    result: Option<RawJson>,
    error: Option<ErrorObject>,
}

impl Members {
    /// Which message the members make (JSON-RPC 2.0 §4-5).
    fn into_message(self) -> Result<Message, &'static str> {
        if !self.version_ok {
            return Err("missing \"jsonrpc\": \"2.0\"");
        }
        match (self.method, self.result, self.error) {
            (Some(method), None, None) => match self.id {
                Some(Some(id)) => Ok(Message::Request(Request {
                    id,
                    method,
                    params: self.params,
                })),
                Some(None) => Err("request id must not be null"),
                None => Ok(Message::Notification(Notification {
                    method,
                    params: self.params,
                })),
            },
            (None, Some(result), None) => match self.id {
                Some(Some(id)) => Ok(Message::Response(Response { id, result })),
                _ => Err("response without an id"),
            },
            (None, None, Some(error)) => Ok(Message::Error(ErrorResponse {
                id: self.id.flatten(),
                error,
            })),
            (None, None, None) => Err("message has none of \"method\", \"result\" or \"error\""),
            _ => Err("message mixes \"method\", \"result\" and \"error\""),
        }
    }
}

/// `value` as an integer when it is written as plain decimal digits (an
/// optional minus, no leading zero) that fit an `i64`: how every id we send
/// comes back. Anything else is left to serde_json (which reads `-0` as a
/// float, so it is left too).
fn plain_integer(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let plain = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (value == "0" || !digits.starts_with('0'));
    if plain { value.parse().ok() } else { None }
}

/// The contents of a JSON string with no escapes and no control characters
/// (a method name, say); anything else is left to serde_json.
pub(crate) fn plain_string(value: &str) -> Option<&str> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    inner
        .bytes()
        .all(|b| b != b'\\' && b != b'"' && b >= 0x20)
        .then_some(inner)
}

/// Splits a message object into its members without reading its payloads
/// (`params`, `result`) or unknown members through: their extent is found
/// by [`scan`], and a payload is checked when the caller decodes it. The
/// small members (`id`, `method`, `error`) are decoded with serde_json as
/// usual.
///
/// `None` for anything out of the ordinary (a syntax error, an escaped key,
/// a member that does not decode, a message that breaks a rule): the serde
/// decoder then reads the frame and says what is wrong, or decodes the rare
/// valid message this path leaves to it.
fn split_message(text: &str, shared: Option<&Arc<String>>) -> Option<Message> {
    let bytes = text.as_bytes();
    let mut at = scan::skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = scan::skip_space(bytes, at + 1);
    let mut members = Members::default();
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = scan::plain_string_end(bytes, at)?;
        let key = text.get(at + 1..key_end - 1)?;
        at = scan::skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = scan::skip_space(bytes, at + 1);
        // A result object is stepped through member by member (about what
        // skipping it costs), noting its `resultType` on the way.
        let scanned = match key {
            "result" => scan::result_members(bytes, at),
            _ => None,
        };
        let (value_end, result_type) = match scanned {
            Some((end, member, meta, long, cut)) => (end, Some((member, meta, long, cut))),
            None => (scan::skip_value(bytes, at)?, None),
        };
        let value = text.get(at..value_end)?;
        match key {
            "jsonrpc" => {
                if value != "\"2.0\"" {
                    return None;
                }
                members.version_ok = true;
            }
            "id" => {
                members.id = Some(match plain_integer(value) {
                    Some(n) => Some(RequestId::Number(n)),
                    None => serde_json::from_str(value).ok()?,
                })
            }
            "method" => {
                members.method = Some(match plain_string(value) {
                    Some(method) => method.to_owned(),
                    None => serde_json::from_str(value).ok()?,
                });
            }
            "params" => {
                members.params = Some(match shared {
                    Some(frame) => RawJson::within(frame, at..value_end),
                    None => RawJson::delimited(value),
                });
            }
            "result" => {
                let result = match shared {
                    Some(frame) => RawJson::within(frame, at..value_end),
                    None => RawJson::delimited(value),
                };
                members.result = Some(match result_type {
                    Some((member, meta, long, cut)) => result.noting(at, member, meta, long, cut),
                    None => result,
                });
            }
            "error" => members.error = Some(serde_json::from_str(value).ok()?),
            _ => {}
        }
        at = scan::skip_space(bytes, value_end);
        match bytes.get(at) {
            Some(b',') => at = scan::skip_space(bytes, at + 1),
            Some(b'}') => break,
            _ => return None,
        }
    }
    if scan::skip_space(bytes, at + 1) != bytes.len() {
        return None;
    }
    members.into_message().ok()
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
            |_| match split_message(text, None) {
                Some(message) => Ok(message),
                None => serde_json::from_str(text),
            },
        )
    }

    /// Decodes one frame from JSON bytes it takes over: a large result then
    /// stays where it is, in `bytes`, rather than being copied out (an HTTP
    /// body, collected whole before it is decoded).
    pub fn from_vec(bytes: Vec<u8>) -> Result<Frame, serde_json::Error> {
        match String::from_utf8(bytes) {
            Ok(text) => Frame::from_string(text),
            Err(error) => Frame::from_slice(error.as_bytes()),
        }
    }

    /// Decodes one frame from JSON text it takes over, as
    /// [`Frame::from_vec`] does but without checking UTF-8 again: the text
    /// of an SSE event's `data` (already checked field by field) becomes
    /// the frame's, and a large result stays in it rather than being copied
    /// out.
    pub fn from_string(text: String) -> Result<Frame, serde_json::Error> {
        Self::from_shared(Arc::new(text))
    }

    /// Decodes one frame from JSON text shared with the caller, as
    /// [`Frame::from_string`] does: payloads refer into `text` rather than
    /// being copied out of it. A caller that keeps a clone of `text` gets
    /// the buffer back for the next message once the frame and the payloads
    /// taken from it are dropped ([`Arc::get_mut`] succeeds again): an HTTP
    /// transport reads every response body into the same allocation that
    /// way instead of allocating and freeing a large result's size per call.
    pub fn from_shared(text: Arc<String>) -> Result<Frame, serde_json::Error> {
        Self::decode(
            text.as_bytes(),
            |_| serde_json::from_str(&text),
            |_| match split_message(&text, Some(&text)) {
                Some(message) => Ok(message),
                None => serde_json::from_str(&text),
            },
        )
    }

    /// Decodes one frame from a body whose long text was moved aside as
    /// it arrived ([`crate::codec::JsonBody`]): `body` with the
    /// placeholder `"\u0000"` in the text's place, and `text`, checked
    /// then. When the placeholder is in a response's result (and nowhere
    /// else), the result keeps the text apart for
    /// [`RawJson::into_result`] to move into the decoded result; otherwise
    /// the frame is decoded from the whole text as [`Frame::from_shared`]
    /// does. The outcome is the same as the whole body's, errors included.
    pub(crate) fn from_lifted(body: Arc<String>, text: String) -> Result<Frame, serde_json::Error> {
        // The first placeholder is the one the text left.
        let whole = |body: &str| {
            let at =
                memchr::memmem::find(body.as_bytes(), PLACEHOLDER.as_bytes()).unwrap_or(body.len());
            let mut joined = String::with_capacity(body.len() + text.len());
            joined.push_str(body.get(..at).unwrap_or_default());
            joined.push_str(&text);
            joined.push_str(body.get(at + PLACEHOLDER.len()..).unwrap_or_default());
            joined
        };
        let once = memchr::memmem::find_iter(body.as_bytes(), PLACEHOLDER.as_bytes()).count() == 1;
        let frame = match Frame::from_shared(Arc::clone(&body)) {
            Ok(frame) if once => frame,
            _ => return Frame::from_string(whole(&body)),
        };
        let Frame::Single(Message::Response(response)) = frame else {
            return Frame::from_string(whole(&body));
        };
        let (start, end) = match &response.result.0 {
            Repr::Within {
                text: within,
                start,
                end,
            } if Arc::ptr_eq(within, &body)
                && body
                    .get(*start..*end)
                    .is_some_and(|result| result.contains(PLACEHOLDER)) =>
            {
                (*start, *end)
            }
            _ => return Frame::from_string(whole(&body)),
        };
        let lifted = Lifted {
            body,
            start,
            end,
            text,
            whole: std::sync::OnceLock::new(),
        };
        Ok(Frame::Single(Message::Response(Response {
            id: response.id,
            result: RawJson(Repr::Lifted(Arc::new(lifted)), response.result.1),
        })))
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

/// Appends `text` to `out` as a JSON string, exactly as serde_json writes
/// it (RFC 8259 §7): only `"`, `\` and the control characters are escaped,
/// so a string without any is copied as it is, with no serializer run.
/// For building JSON text by hand, such as an object's keys.
pub fn push_json_string(out: &mut String, text: &str) {
    if text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        // Writing a string into a `String` cannot fail.
        if let Ok(quoted) = serde_json::to_string(text) {
            out.push_str(&quoted);
        }
    } else {
        out.push('"');
        out.push_str(text);
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Meta;

    fn decode(s: &str) -> Result<Message, serde_json::Error> {
        serde_json::from_str(s)
    }

    #[test]
    fn an_error_shows_its_message_bounded_and_escaped_but_keeps_it_whole() {
        let message = format!("boom\x1b]0;PWNED\x07{}", "x".repeat(10 * 1024 * 1024));
        let error = ErrorObject::new(-32603, message.clone());
        let shown = error.to_string();
        assert!(
            shown.starts_with(r"boom\x1b]0;PWNED\x07xx"),
            "{}",
            &shown[..40]
        );
        assert!(shown.ends_with(" more bytes] (code -32603)"), "{shown}");
        assert!(shown.len() < 1200, "{}", shown.len());
        assert_eq!(error.message, message);
        assert_eq!(ErrorObject::new(1, "plain").to_string(), "plain (code 1)");
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

    /// Frames through the splitting path and through serde alone.
    fn both_ways(text: &str) -> (Option<Message>, Result<Message, serde_json::Error>) {
        (split_message(text, None), decode(text))
    }

    #[test]
    fn splitting_agrees_with_serde_on_ordinary_messages() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"}b"}]}}"#,
            r#" { "result" : [1, {"x": "]"}] , "id" : "s", "jsonrpc" : "2.0" } "#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m","data":[]}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":"text","extra":{"deep":[[[]]]}}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":null}"#,
        ] {
            let (split, serde) = both_ways(text);
            let split = split.unwrap_or_else(|| panic!("not split: {text}"));
            assert_eq!(split, serde.unwrap(), "{text}");
        }
    }

    #[test]
    fn anything_unusual_is_left_to_serde() {
        for text in [
            // An escaped key, a version written with an escape, a bad id,
            // trailing text, an unclosed object, a missing comma.
            r#"{"json\u0072pc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"\u0032.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}} x"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}"#,
            r#"{"jsonrpc":"2.0" "id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{}"#,
        ] {
            assert!(split_message(text, None).is_none(), "split {text}");
        }
        // Left to serde, the valid ones still decode.
        for text in [
            r#"{"json\u0072pc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"\u0032.0","id":1,"result":{}}"#,
        ] {
            match Frame::from_slice(text.as_bytes()) {
                Ok(Frame::Single(Message::Response(r))) => assert_eq!(r.result.get(), "{}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn plain_ids_and_methods_read_as_serde_reads_them() {
        for text in [
            "0",
            "-0",
            "7",
            "-12",
            "9223372036854775807",
            "-9223372036854775808",
            "-01",
        ] {
            assert_eq!(
                plain_integer(text).map(RequestId::Number),
                serde_json::from_str::<RequestId>(text).ok(),
                "{text}"
            );
        }
        for text in ["01", "1.5", "1e3", "9223372036854775808", "-", "", "\"1\""] {
            assert_eq!(plain_integer(text), None, "{text}");
        }
        assert_eq!(plain_string(r#""tools/call""#), Some("tools/call"));
        assert_eq!(plain_string(r#""é""#), Some("é"));
        for text in [r#""a\nb""#, "\"tab\there\"", "x", r#""open"#] {
            assert_eq!(plain_string(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_malformed_result_reaches_its_caller_as_a_decode_error() {
        // Framing does not read the result through: the response is routed
        // to its request, whose decode then fails (rather than the line
        // being dropped and the request waiting for its deadline).
        let frame = Frame::from_slice(br#"{"jsonrpc":"2.0","id":9,"result":{"a":tru}}"#).unwrap();
        let Frame::Single(Message::Response(response)) = frame else {
            panic!("{frame:?}");
        };
        assert_eq!(response.id, RequestId::Number(9));
        assert!(response.result.decode::<serde_json::Value>().is_err());
    }

    /// The result of a response frame, framed from borrowed bytes or from
    /// text handed over whole.
    fn results_of(frame: &str) -> [RawJson; 2] {
        let result = |frame: Frame| match frame {
            Frame::Single(Message::Response(response)) => response.result,
            other => panic!("{other:?}"),
        };
        [
            result(Frame::from_slice(frame.as_bytes()).unwrap()),
            result(Frame::from_string(frame.to_owned()).unwrap()),
        ]
    }

    #[test]
    fn a_result_decoded_with_its_meta_apart_equals_the_whole_decode() {
        use crate::types::CallToolResult;
        let info = r#"{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}"#;
        let big = "x".repeat(LIFT_LIMIT);
        let frames = [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{info},"content":[{{"type":"text","text":"hi"}}],"resultType":"complete"}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{ "content" : [] , "_meta" : {info} }}}}"#
            ),
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"other":[1,2]},"content":[]}}"#.to_owned(),
            // Too large to copy: decoded whole, with the same outcome.
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{info},"content":[{{"type":"text","text":"{big}"}}]}}}}"#
            ),
            // No `_meta`, and one that is nested only.
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","_meta":{"b":1}}]}}"#.to_owned(),
        ];
        for frame in &frames {
            for result in results_of(frame) {
                let whole: CallToolResult = result.decode().unwrap();
                // Twice: the second time the `_meta` is the one checked before.
                for _ in 0..2 {
                    let apart: CallToolResult = result.decode_result().unwrap();
                    assert_eq!(apart, whole, "{frame}");
                    assert_eq!(
                        apart.meta.as_ref().map(Meta::as_str),
                        whole.meta.as_ref().map(Meta::as_str)
                    );
                }
            }
        }
        let [result, _] = results_of(&frames[0]);
        let apart: CallToolResult = result.decode_result().unwrap();
        assert_eq!(apart.meta.unwrap().as_str(), info);
        // Decoding the same type from other text takes no `_meta` left over.
        let plain: CallToolResult = serde_json::from_str(r#"{"content":[]}"#).unwrap();
        assert_eq!(plain.meta, None);
    }

    #[test]
    fn a_complete_result_type_cut_out_decodes_as_the_whole_result_does() {
        use crate::types::CallToolResult;
        let info = r#"{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}"#;
        let results = [
            // Cut, wherever it stands beside the `_meta`.
            format!(r#"{{"_meta":{info},"content":[],"resultType":"complete"}}"#),
            format!(r#"{{"_meta":{info},"resultType" : "complete" ,"content":[]}}"#),
            format!(r#"{{"content":[],"resultType":"complete","isError":true,"_meta":{info}}}"#),
            // Its cut and the `_meta`'s would share a comma: read by serde.
            format!(r#"{{"resultType":"complete","_meta":{info},"content":[]}}"#),
            format!(r#"{{"content":[],"resultType":"complete","_meta":{info}}}"#),
            // Another value, or none: read by serde.
            format!(r#"{{"_meta":{info},"content":[],"resultType":"input_required"}}"#),
            format!(r#"{{"_meta":{info},"content":[]}}"#),
            // Failures: the same error as the whole decode's.
            format!(r#"{{"_meta":{info},"resultType":"complete"}}"#),
            format!(
                r#"{{"_meta":{info},"content":[],"resultType":"complete","resultType":"complete"}}"#
            ),
            format!(r#"{{"_meta":{info},"resultType":"complete","content":"no"}}"#),
        ];
        for result in &results {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            for raw in results_of(&frame) {
                let whole = raw.decode::<CallToolResult>().map_err(|e| e.to_string());
                let apart = raw
                    .decode_result::<CallToolResult>()
                    .map_err(|e| e.to_string());
                assert_eq!(apart, whole, "{result}");
            }
        }
    }

    #[test]
    fn a_bad_result_fails_apart_as_it_fails_whole() {
        use crate::types::CallToolResult;
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"a":1},"content":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"a":tru},"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":[1],"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{},"_meta":{},"content":[]}}"#,
        ] {
            for result in results_of(frame) {
                let whole = result.decode::<CallToolResult>().unwrap_err().to_string();
                let apart = result
                    .decode_result::<CallToolResult>()
                    .unwrap_err()
                    .to_string();
                assert_eq!(apart, whole, "{frame}");
            }
        }
    }

    #[test]
    fn a_long_text_lifted_out_decodes_as_the_whole_result_does() {
        use crate::types::CallToolResult;
        use crate::types::de::TEXTS_LIFTED;
        let lifted = || TEXTS_LIFTED.with(std::cell::Cell::get);
        let info = r#"{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}"#;
        // Multi-byte characters across the check's blocks.
        let long = "é".repeat(scan::LONG_TEXT);
        let cases = [
            // Tag first, with a `_meta` lifted too.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{info},"content":[{{"type":"text","text":"{long}"}}]}}}}"#
                ),
                true,
            ),
            // Sorted keys: the text before the tag; a short block before it.
            (
                format!(
                    r#"{{"id":1,"jsonrpc":"2.0","result":{{"content":[{{"text":"a","type":"text"}},{{"text" : "{long}","type":"text"}}],"isError":false}}}}"#
                ),
                true,
            ),
            // The longest is not a content block's: decoded whole.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{long}"}}],"structuredContent":{{"text":"{long}x"}}}}}}"#
                ),
                false,
            ),
            // A NUL elsewhere: the placeholder would not be the only one.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"\u0000"}},{{"type":"text","text":"{long}"}}]}}}}"#
                ),
                false,
            ),
            // Escaped: serde's to read.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{long}\n"}}]}}}}"#
                ),
                false,
            ),
            // A block of a type this crate does not know keeps its text.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"novel","text":"{long}"}}]}}}}"#
                ),
                false,
            ),
        ];
        for (frame, lifts) in &cases {
            for result in results_of(frame) {
                let before = lifted();
                let apart: CallToolResult = result.decode_result().unwrap();
                assert_eq!(lifted() - before, usize::from(*lifts), "{}", &frame[..120]);
                let whole: CallToolResult = result.decode().unwrap();
                assert_eq!(apart, whole, "{}", &frame[..120]);
            }
        }
    }

    #[test]
    fn a_long_text_with_a_control_character_fails_as_it_fails_whole() {
        use crate::types::CallToolResult;
        let long = "x".repeat(scan::LONG_TEXT);
        for frame in [
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{long}\u{1}\"}}]}}}}"
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{long}"}}],"isError":tru}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{long}","text":"again"}}]}}}}"#
            ),
        ] {
            for result in results_of(&frame) {
                let whole = result.decode::<CallToolResult>().unwrap_err().to_string();
                let apart = result
                    .decode_result::<CallToolResult>()
                    .unwrap_err()
                    .to_string();
                assert_eq!(apart, whole);
            }
        }
    }

    #[test]
    fn a_nested_result_never_takes_the_outer_meta() {
        use crate::types::{CallToolResult, LiftsMeta};
        #[derive(Debug, serde::Deserialize)]
        struct Outer {
            inner: CallToolResult,
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        impl LiftsMeta for Outer {}
        let frame =
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"outer":1},"inner":{"content":[]}}}"#;
        for result in results_of(frame) {
            let outer: Outer = result.decode_result().unwrap();
            assert_eq!(outer.meta.unwrap().as_str(), r#"{"outer":1}"#);
            assert_eq!(outer.inner.meta, None);
        }
    }

    #[test]
    fn owned_frames_decode_as_borrowed_ones_do() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"é\"x"}]}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"m"}]"#,
            r#"{"json\u0072pc":"2.0","id":1,"result":[1]}"#,
        ] {
            let owned = Frame::from_vec(text.as_bytes().to_vec()).unwrap();
            assert_eq!(owned, Frame::from_slice(text.as_bytes()).unwrap(), "{text}");
        }
        let Frame::Single(Message::Response(response)) =
            Frame::from_vec(br#"{"jsonrpc":"2.0","id":2,"result":"kept"}"#.to_vec()).unwrap()
        else {
            panic!("not a response");
        };
        assert_eq!(response.result.get(), r#""kept""#);
        assert_eq!(response.result.decode::<String>().unwrap(), "kept");
        assert!(
            Frame::from_vec(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}".to_vec())
                .is_err()
        );
    }

    #[test]
    fn results_encode_and_serialize_verbatim() {
        let written = RawValue::from_string(r#"{"b":1,"a":[true]}"#.to_owned()).unwrap();
        let result = RawJson::encode(&written).unwrap();
        assert_eq!(result.get(), r#"{"b":1,"a":[true]}"#);
        let message = Message::Response(Response {
            id: RequestId::Number(1),
            result: result.clone(),
        });
        assert_eq!(
            serde_json::to_string(&message).unwrap(),
            String::from_utf8(message.to_bytes()).unwrap()
        );
        let unchecked = RawJson::delimited("{oops");
        assert!(serde_json::to_string(&unchecked).is_err());
        assert!(unchecked.to_raw_value().is_err());
    }

    #[test]
    fn encodes_compact_single_line() {
        let m = Message::request(1, "tools/call", Some(&serde_json::json!({"a": "x\ny"}))).unwrap();
        let bytes = m.to_bytes();
        assert!(!bytes.contains(&b'\n'));
        assert_eq!(decode(std::str::from_utf8(&bytes).unwrap()).unwrap(), m);
    }
}

//! Structural JSON scanning: where a value ends, found without decoding it.
//!
//! A response's `result` is decoded once, by the caller, into the type it
//! expects (and checked in full then). Framing only needs to know where the
//! result starts and ends, so it skips over it here: strings are crossed
//! with a vectorised search for the next quote or backslash, and nesting is
//! tracked by counting brackets. Nothing is validated beyond what finding
//! the end takes; a malformed value either has no end (`None`) or is
//! rejected when it is decoded.
//!
//! No recursion (a deeply nested value costs a counter, not stack), no
//! panics on any input: every index is checked.

use std::cell::RefCell;
use std::ops::ControlFlow;

use memchr::memchr2;

/// How many bytes of a string are searched a word (eight bytes) at a time
/// before the vectorised search takes over: most strings in a message
/// (keys, names, ids, short texts) end sooner, and for them a plain loop is
/// cheaper than setting the vectorised search up (measured with callgrind:
/// about 500 instructions per small `tools/call` response), and the word
/// loop cheaper still on a catalog's keys and types (a 2,000-tool connect
/// took 30.1M instructions with a byte loop, 27.9M with words).
const SHORT_STRING: usize = 32;

/// The index just past the string that starts at `start` (a `"`) when it
/// holds no escape; `None` for one that does, or that does not end within
/// `bytes`: an object key as written is its name only then, and the
/// scanners here step through such keys alone (one pass over the key,
/// instead of finding its end and then looking through it again for a
/// backslash).
#[inline]
pub(crate) fn plain_string_end(bytes: &[u8], start: usize) -> Option<usize> {
    string_end(bytes, start).and_then(|(end, plain)| plain.then_some(end))
}

/// The index just past the string that starts at `start` (a `"`), or `None`
/// if it does not end within `bytes`, and whether the string holds no escape (so
/// that its text between the quotes is its value, if it holds no control
/// character either).
#[inline]
fn string_end(bytes: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut at = start.checked_add(1)?;
    let mut plain = true;
    loop {
        let rest = bytes.get(at..)?;
        let short = rest.get(..SHORT_STRING).unwrap_or(rest);
        let found = match quote_or_backslash(short) {
            Some(found) => found,
            None => short.len() + memchr2(b'"', b'\\', rest.get(short.len()..)?)?,
        };
        at += found;
        match bytes.get(at)? {
            // An escape: the next byte (whatever it is) belongs to it.
            b'\\' => {
                plain = false;
                at += 2;
            }
            _ => return Some((at + 1, plain)),
        }
    }
}

/// What stepping through a value notes of the strings it crosses (see
/// [`LongText`]); `()` notes nothing, at no cost.
pub(crate) trait StringNote {
    /// The string from `start` (its opening quote) to `end` (just past its
    /// closing quote), which holds no escape when `plain`.
    fn string(&mut self, bytes: &[u8], start: usize, end: usize, plain: bool);
}

impl StringNote for () {
    #[inline(always)]
    fn string(&mut self, _: &[u8], _: usize, _: usize, _: bool) {}
}

/// The longest string crossed that holds no escape, is at least `min`
/// bytes long and is the value of a member named `text` (the key written
/// without escapes right before it): the range of its text between the
/// quotes. A large text content block, which a result's decode can take
/// apart from the rest (`RawJson::decode_result`).
pub(crate) struct LongText {
    pub(crate) min: usize,
    pub(crate) found: Option<(usize, usize)>,
}

impl StringNote for LongText {
    #[inline]
    fn string(&mut self, bytes: &[u8], start: usize, end: usize, plain: bool) {
        let len = end.saturating_sub(start + 2);
        if !plain
            || len < self.min
            || self.found.is_some_and(|(s, e)| len <= e - s)
            || !text_key_before(bytes, start)
        {
            return;
        }
        self.found = Some((start + 1, end - 1));
    }
}

/// Whether the value that starts at `start` follows `"text"` and a colon
/// (whitespace allowed around the colon). A key that merely ends so (an
/// escaped quote before `text`) may pass: the caller's decode then finds
/// no text block where it looked and reads the result whole.
fn text_key_before(bytes: &[u8], start: usize) -> bool {
    let before = bytes.get(..start).unwrap_or_default();
    let before = before.trim_ascii_end();
    let Some(before) = before.strip_suffix(b":") else {
        return false;
    };
    before.trim_ascii_end().ends_with(b"\"text\"")
}

/// The first `"` or `\\` in `bytes`, read eight bytes at a time: a word
/// holds one of them where `word ^ repeat(byte)` has a zero byte, and the
/// lowest flag of `(x - 0x01..) & !x & 0x80..` marks the first zero byte
/// exactly (a borrow can only flag bytes above a true zero).
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let found = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let found = words
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\')?;
    Some(at + found)
}

/// The index just past the JSON value that starts at `start` (no leading
/// whitespace), or `None` if no value starts there or it does not end.
///
/// Objects and arrays end at the bracket that brings the nesting back to
/// zero (bracket kinds are not matched against each other here); scalars
/// end before the first delimiter (`,`, `}`, `]`, whitespace) or at the
/// end of input.
pub(crate) fn skip_value(bytes: &[u8], start: usize) -> Option<usize> {
    skip_value_noting(bytes, start, &mut ())
}

/// [`skip_value`], telling `note` of every string it crosses.
#[inline]
fn skip_value_noting(bytes: &[u8], start: usize, note: &mut impl StringNote) -> Option<usize> {
    match *bytes.get(start)? {
        b'"' => {
            let (end, plain) = string_end(bytes, start)?;
            note.string(bytes, start, end, plain);
            Some(end)
        }
        b'{' | b'[' => {
            let mut depth = 1usize;
            let mut at = start + 1;
            while let Some(&byte) = bytes.get(at) {
                match byte {
                    b'"' => {
                        let (end, plain) = string_end(bytes, at)?;
                        note.string(bytes, at, end, plain);
                        at = end;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
            None
        }
        b',' | b'}' | b']' | b':' => None,
        byte if is_space(byte) => None,
        _ => {
            let rest = bytes.get(start..)?;
            let len = rest
                .iter()
                .position(|&b| matches!(b, b',' | b'}' | b']') || is_space(b))
                .unwrap_or(rest.len());
            Some(start + len)
        }
    }
}

/// The longest `_meta` value [`skip_meta`] remembers: a result's `_meta`
/// names the server (2026-07-28), about 130 bytes; anything much larger is
/// not worth keeping a copy of.
const META_MEMO_LIMIT: usize = 1024;

thread_local! {
    /// The last two distinct `_meta` objects [`skip_meta`] crossed on this
    /// thread, byte for byte, the most recent first (empty before any):
    /// two, because a client over Streamable HTTP crosses its own request
    /// envelope (to mirror a header) between the results' `_meta`s, and
    /// one slot would hold each only until the other replaced it.
    static LAST_METAS: RefCell<[Vec<u8>; 2]> = const { RefCell::new([Vec::new(), Vec::new()]) };
}

/// The index just past the `_meta` value that starts at `start`, as
/// [`skip_value`] finds it, but with work that does not grow with the
/// value when it repeats one of the last two crossed on this thread.
///
/// In the 2026-07-28 era every result's `_meta` names the server
/// (`io.modelcontextprotocol/serverInfo`), the same text result after
/// result, and every request's `_meta` carries the client's version,
/// capabilities and name, the same text request after request; stepping
/// through them bracket by bracket and string by string was most of what
/// framing a small result cost over the handshake era's (measured with
/// callgrind: about 900 instructions of a `tools/call` echo's 21.5k for a
/// 140-byte `_meta`). [`skip_value`]'s answer depends only on the bytes
/// from `start` to the end it finds, so input that starts with a
/// remembered value's bytes ends where that value ended: a comparison of
/// bytes. Anything else is crossed with [`skip_value`], and an object of
/// at most [`META_MEMO_LIMIT`] bytes is remembered for next time. Nothing
/// is validated here, as elsewhere in this module.
fn skip_meta(bytes: &[u8], start: usize) -> Option<usize> {
    let rest = bytes.get(start..)?;
    let repeated = LAST_METAS
        .try_with(|last| {
            let mut last = last.try_borrow_mut().ok()?;
            let hit = last
                .iter()
                .position(|meta| !meta.is_empty() && rest.starts_with(meta))?;
            // The one just met goes first.
            last.swap(0, hit);
            Some(last[0].len())
        })
        .ok()
        .flatten();
    if let Some(len) = repeated {
        return Some(start + len);
    }
    let end = skip_value(bytes, start)?;
    let value = bytes.get(start..end)?;
    if value.len() <= META_MEMO_LIMIT && value.first() == Some(&b'{') {
        let _ = LAST_METAS.try_with(|last| {
            if let Ok(mut last) = last.try_borrow_mut() {
                // The older one makes room, its buffer reused.
                last.swap(0, 1);
                last[0].clear();
                last[0].extend_from_slice(value);
            }
        });
    }
    Some(end)
}

/// Steps through the members of the object that starts at `start` (a `{`)
/// and notes where the value of its first member named `name` lies.
///
/// `Some((end, member))`: `end` is the index just past the object (or, when
/// `to_end` is false and the member was found, just past that member's
/// value), and `member` is the value's range, `None` when the object has no
/// such member. `None` when the text is not an object this scanner steps
/// through as it is: an escaped key, or anything malformed.
pub(crate) fn object_member(
    bytes: &[u8],
    start: usize,
    name: &[u8],
    to_end: bool,
) -> Option<(usize, Option<(usize, usize)>)> {
    let mut member = None;
    let end = each_member(bytes, start, |key, _, value| {
        if member.is_none() && key == name {
            member = Some(value);
            if !to_end {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    })?;
    Some((end, member))
}

/// The range of the value of the one member named `name` of the object
/// that starts at `start`: `Some(None)` when it has no such member, and
/// `None` when the name appears twice (which value a reader takes is then
/// its own choice) or the scanner cannot step through the object as it is
/// (see [`object_member`]).
pub(crate) fn sole_member(
    bytes: &[u8],
    start: usize,
    name: &[u8],
) -> Option<Option<(usize, usize)>> {
    let mut member = None;
    let mut repeated = false;
    each_member(bytes, start, |key, _, value| {
        if key == name {
            if member.is_some() {
                repeated = true;
                return ControlFlow::Break(());
            }
            member = Some(value);
        }
        ControlFlow::Continue(())
    })?;
    (!repeated).then_some(member)
}

/// Where a result object's one top-level `_meta` member lies (offsets into
/// the scanned text): `value` is its value's range, and removing the bytes
/// of `cut` from the object leaves the same object without the member,
/// still well-formed (the member and the comma that joined it to its
/// neighbour).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MetaCut {
    pub(crate) value: (usize, usize),
    pub(crate) cut: (usize, usize),
}

/// What [`result_members`] found of a result object: the index just past
/// it, the range of its first `resultType` member's value (as
/// [`object_member`] finds it), its `_meta` member when it has exactly
/// one, whose value is an object, its long text, and, when that first
/// `resultType` is `"complete"`, the bytes to cut to remove it as
/// [`MetaCut::cut`] removes a `_meta`.
pub(crate) type ResultMembers = (
    usize,
    Option<(usize, usize)>,
    Option<MetaCut>,
    Option<(usize, usize)>,
    Option<(usize, usize)>,
);

/// The shortest string [`result_members`] notes as a result's long text
/// ([`LongText`]): shorter ones cost serde less to read than a decode
/// costs to cut them out.
pub(crate) const LONG_TEXT: usize = 16 * 1024;

/// Steps through the members of the result object that starts at `start`
/// (a `{`) once, noting its `resultType`, its `_meta` and its long text
/// (see [`ResultMembers`]). `None` as for [`object_member`].
pub(crate) fn result_members(bytes: &[u8], start: usize) -> Option<ResultMembers> {
    let mut result_type = None;
    let mut meta = None;
    let mut metas = 0;
    // Where the previous member's value ended: a `_meta` after it is cut
    // from there, taking the comma before it.
    let mut previous_end = None;
    let mut long = LongText {
        min: LONG_TEXT,
        found: None,
    };
    let mut complete_cut = None;
    // The member and the comma before it, or for the first member, up to
    // the next key, taking the comma after it (or up to the closing brace).
    let cut =
        |previous_end: Option<usize>, key_start: usize, value: (usize, usize)| match previous_end {
            Some(previous) => (previous, value.1),
            None => {
                let after = skip_space(bytes, value.1);
                let to = if bytes.get(after) == Some(&b',') {
                    skip_space(bytes, after + 1)
                } else {
                    value.1
                };
                (key_start, to)
            }
        };
    let end = each_member_noting(bytes, start, &mut long, |key, key_start, value| {
        if key == b"resultType" && result_type.is_none() {
            result_type = Some(value);
            if bytes.get(value.0..value.1) == Some(b"\"complete\"") {
                complete_cut = Some(cut(previous_end, key_start, value));
            }
        } else if key == b"_meta" {
            metas += 1;
            meta = Some(MetaCut {
                value,
                cut: cut(previous_end, key_start, value),
            });
        }
        previous_end = Some(value.1);
        ControlFlow::Continue(())
    })?;
    let meta = meta.filter(|m| metas == 1 && bytes.get(m.value.0) == Some(&b'{'));
    Some((end, result_type, meta, long.found, complete_cut))
}

/// Calls `visit` with each member's key (as written, never escaped), the
/// index of the key's opening quote and its value's range, in order, until
/// it breaks. Returns the index just past
/// the object, or just past the value `visit` broke at; `None` for an
/// escaped key or a malformed object.
#[inline]
pub(crate) fn each_member(
    bytes: &[u8],
    start: usize,
    visit: impl FnMut(&[u8], usize, (usize, usize)) -> ControlFlow<()>,
) -> Option<usize> {
    each_member_noting(bytes, start, &mut (), visit)
}

/// [`each_member`], telling `note` of every string crossed in the values
/// (not in a `_meta`, which is crossed apart).
#[inline]
fn each_member_noting(
    bytes: &[u8],
    start: usize,
    note: &mut impl StringNote,
    mut visit: impl FnMut(&[u8], usize, (usize, usize)) -> ControlFlow<()>,
) -> Option<usize> {
    if bytes.get(start) != Some(&b'{') {
        return None;
    }
    let mut at = skip_space(bytes, start + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some(at + 1);
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let key_start = at;
        let key_end = plain_string_end(bytes, at)?;
        let key = bytes.get(at + 1..key_end - 1)?;
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let value_start = skip_space(bytes, at + 1);
        let value_end = if key == b"_meta" {
            skip_meta(bytes, value_start)?
        } else {
            skip_value_noting(bytes, value_start, note)?
        };
        if visit(key, key_start, (value_start, value_end)).is_break() {
            return Some(value_end);
        }
        at = skip_space(bytes, value_end);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b'}') => return Some(at + 1),
            _ => return None,
        }
    }
}

/// The index of the first byte at or after `at` that is not JSON whitespace.
pub(crate) fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).copied().is_some_and(is_space) {
        at += 1;
    }
    at
}

/// JSON's four whitespace bytes (RFC 8259 §2).
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn end(text: &str) -> Option<usize> {
        skip_value(text.as_bytes(), 0)
    }

    #[test]
    fn scalars_end_at_a_delimiter_or_the_input() {
        assert_eq!(end("123,"), Some(3));
        assert_eq!(end("-1.5e3}"), Some(6));
        assert_eq!(end("true"), Some(4));
        assert_eq!(end("null ]"), Some(4));
    }

    #[test]
    fn strings_skip_escaped_quotes_and_backslashes() {
        assert_eq!(end(r#""a\"b""#), Some(6));
        assert_eq!(end(r#""a\\" "#), Some(5));
        assert_eq!(end(r#""\\\"x""#), Some(7));
        assert_eq!(end(r#""open"#), None);
        assert_eq!(end(r#""ends in an escape\"#), None);
    }

    #[test]
    fn containers_end_at_their_closing_bracket() {
        assert_eq!(end(r#"{"a":[1,{"b":"}]"}],"c":2} tail"#), Some(26));
        assert_eq!(end("[[[]]]x"), Some(6));
        assert_eq!(end("[[[]]"), None);
        assert_eq!(end("{"), None);
    }

    #[test]
    fn no_value_at_a_delimiter_or_space() {
        for text in [",", "}", "]", ":", " 1", ""] {
            assert_eq!(end(text), None, "{text:?}");
        }
    }

    #[test]
    fn object_members_are_found_at_the_top_level_only() {
        let text = br#"{"a": {"resultType": 1}, "resultType" : "x", "resultType": 2} tail"#;
        assert_eq!(
            object_member(text, 0, b"resultType", true),
            Some((61, Some((40, 43))))
        );
        assert_eq!(
            object_member(text, 0, b"resultType", false),
            Some((43, Some((40, 43))))
        );
        assert_eq!(
            object_member(br#"{"b": [1]}"#, 0, b"resultType", true),
            Some((10, None))
        );
        assert_eq!(object_member(b"{ }", 0, b"a", true), Some((3, None)));
        assert_eq!(object_member(br#"{"a\u0041": 1}"#, 0, b"a", true), None);
        assert_eq!(object_member(br#"{"a": 1"#, 0, b"a", true), None);
        assert_eq!(object_member(b"[1]", 0, b"a", true), None);
    }

    #[test]
    fn a_sole_member_is_found_and_a_repeated_one_is_not() {
        let text = br#"{"_meta": {"name": "no"}, "name" : "t", "arguments": {"name": 1}}"#;
        assert_eq!(sole_member(text, 0, b"name"), Some(Some((35, 38))));
        assert_eq!(sole_member(text, 0, b"uri"), Some(None));
        assert_eq!(sole_member(br#"{"name": 1, "name": 2}"#, 0, b"name"), None);
        assert_eq!(sole_member(br#"{"n\u0061me": 1}"#, 0, b"name"), None);
        assert_eq!(sole_member(b"[1]", 0, b"name"), None);
        assert_eq!(sole_member(b"{}", 0, b"name"), Some(None));
    }

    #[test]
    fn a_repeated_meta_ends_where_it_ended_before() {
        let meta = r#"{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}"#;
        let result = format!(r#"{{"_meta":{meta},"content":[]}}"#);
        let start = "{\"_meta\":".len();
        let end = start + meta.len();
        // Crossed, remembered, then recognised, with the same answer.
        assert_eq!(skip_meta(result.as_bytes(), start), Some(end));
        assert_eq!(
            LAST_METAS.with(|last| last.borrow()[0].clone()),
            meta.as_bytes()
        );
        assert_eq!(skip_meta(result.as_bytes(), start), Some(end));
        assert_eq!(
            object_member(result.as_bytes(), 0, b"content", true),
            Some((result.len(), Some((end + 11, end + 13))))
        );
        // A longer value that starts with the same text is still crossed
        // in full: the remembered bytes end inside it, at a `}`, not at its
        // end, so they are no prefix of it.
        let longer = r#"{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"},"x":1}"#;
        assert_eq!(skip_meta(longer.as_bytes(), 0), Some(longer.len()));
        // A different value is crossed, and a truncated one has no end.
        assert_eq!(skip_meta(br#"{"a":1} "#, 0), Some(7));
        assert_eq!(skip_meta(br#"{"a":"#, 0), None);
        // Scalars and arrays are crossed but not remembered.
        assert_eq!(skip_meta(b"[1,2]", 0), Some(5));
        let remembered = || LAST_METAS.with(|last| last.borrow().clone());
        let a = br#"{"a":1}"#.to_vec();
        assert_eq!(remembered(), [a.clone(), longer.as_bytes().to_vec()]);
        // Two values met in turn both stay remembered; a third replaces the
        // one met least recently.
        assert_eq!(skip_meta(result.as_bytes(), start), Some(end));
        let meta = meta.as_bytes().to_vec();
        assert_eq!(remembered(), [meta.clone(), a.clone()]);
        assert_eq!(skip_meta(&a, 0), Some(7));
        assert_eq!(remembered(), [a.clone(), meta.clone()]);
        assert_eq!(skip_meta(result.as_bytes(), start), Some(end));
        assert_eq!(remembered(), [meta.clone(), a]);
        assert_eq!(skip_meta(br#"{"b":2}"#, 0), Some(7));
        assert_eq!(remembered(), [br#"{"b":2}"#.to_vec(), meta]);
    }

    /// The text of `result` without what `result_members` says to cut.
    fn without_meta(result: &str) -> Option<String> {
        let (end, _, meta, _, _) = result_members(result.as_bytes(), 0)?;
        assert_eq!(end, result.len());
        let MetaCut { cut, .. } = meta?;
        Some(format!("{}{}", &result[..cut.0], &result[cut.1..]))
    }

    #[test]
    fn a_results_meta_is_cut_leaving_a_well_formed_object() {
        let cases = [
            (r#"{"_meta":{"a":1},"content":[]}"#, r#"{"content":[]}"#),
            (
                r#"{ "_meta" : {"a":1} , "content":[] }"#,
                r#"{ "content":[] }"#,
            ),
            (r#"{"content":[],"_meta":{"a":1}}"#, r#"{"content":[]}"#),
            (r#"{"x":1, "_meta":{"a":1} ,"y":2}"#, r#"{"x":1 ,"y":2}"#),
            (r#"{"_meta":{}}"#, r#"{}"#),
            (r#"{ "_meta": {"a":[1,"}"]} }"#, r#"{  }"#),
        ];
        for (result, expected) in cases {
            let cut = without_meta(result);
            assert_eq!(cut.as_deref(), Some(expected), "{result}");
            serde_json::from_str::<serde_json::Value>(expected).unwrap();
        }
        let text = br#"{"resultType":"complete","_meta":{"a":1}}"#;
        let (_, result_type, meta, _, _) = result_members(text, 0).unwrap();
        assert_eq!(result_type, Some((14, 24)));
        assert_eq!(meta.map(|m| m.value), Some((33, 40)));
        // No cut for a `_meta` that is not an object, that comes twice, or
        // that is nested.
        for result in [
            r#"{"_meta":[1]}"#,
            r#"{"_meta":{},"_meta":{}}"#,
            r#"{"content":[{"_meta":{}}]}"#,
            r#"{"x":{"_meta":{}}}"#,
        ] {
            assert_eq!(without_meta(result), None, "{result}");
        }
        assert_eq!(result_members(br#"{"_meta":{"a":1}"#, 0), None);
    }

    #[test]
    fn a_complete_result_type_is_cut_with_one_comma_beside_it() {
        let cases = [
            (
                r#"{"resultType":"complete","content":[]}"#,
                r#"{"content":[]}"#,
            ),
            (
                r#"{"content":[],"resultType":"complete"}"#,
                r#"{"content":[]}"#,
            ),
            (
                r#"{ "a":1 , "resultType" : "complete" , "b":2 }"#,
                r#"{ "a":1 , "b":2 }"#,
            ),
            (r#"{ "resultType":"complete" }"#, r#"{  }"#),
        ];
        for (text, expected) in cases {
            let (_, _, _, _, cut) = result_members(text.as_bytes(), 0).unwrap();
            let cut = cut.unwrap();
            let left = format!("{}{}", &text[..cut.0], &text[cut.1..]);
            assert_eq!(left, expected, "{text}");
            serde_json::from_str::<serde_json::Value>(&left).unwrap();
        }
        // Another value, or not the first `resultType`: no cut.
        for text in [
            r#"{"resultType":"input_required"}"#,
            r#"{"resultType":"completed"}"#,
            r#"{"resultType":"input_required","resultType":"complete"}"#,
            r#"{"x":{"resultType":"complete"}}"#,
        ] {
            let (_, _, _, _, cut) = result_members(text.as_bytes(), 0).unwrap();
            assert_eq!(cut, None, "{text}");
        }
    }

    #[test]
    fn deep_nesting_costs_no_stack() {
        let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
        assert_eq!(end(&deep), Some(deep.len()));
    }

    /// Any JSON value serde_json writes (compact or pretty) ends exactly
    /// where serde_json says it does, whatever follows it.
    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(serde_json::Value::from),
            any::<String>().prop_map(serde_json::Value::from),
            "[\"\\\\{}\\[\\],:a-z ]{0,12}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::from),
                prop::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn finds_the_end_serde_json_finds(
            value in arb_json(),
            pretty in any::<bool>(),
            tail in prop_oneof![Just(""), Just(","), Just("}"), Just("]"), Just(" \n")],
        ) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let framed = format!("{text}{tail}");
            prop_assert_eq!(skip_value(framed.as_bytes(), 0), Some(text.len()));
        }

        #[test]
        fn the_word_search_finds_the_first_quote_or_backslash(
            bytes in prop::collection::vec(prop_oneof![Just(b'"'), Just(b'\\'), Just(0x80u8), Just(0xa2u8), Just(0xdcu8), Just(0x21u8), any::<u8>()], 0..40),
        ) {
            let plain = bytes.iter().position(|&b| b == b'"' || b == b'\\');
            prop_assert_eq!(quote_or_backslash(&bytes), plain);
        }

        /// Crossing a `_meta` value with a remembered one (any earlier
        /// value, valid JSON or not) finds the end `skip_value` finds.
        #[test]
        fn a_remembered_meta_changes_no_answer(
            earlier in arb_json(),
            value in arb_json(),
            mangle in 0usize..4,
            tail in prop_oneof![Just(""), Just(","), Just("}"), Just("]"), Just(" \n")],
        ) {
            let earlier = serde_json::to_string(&earlier).unwrap();
            let mut text = serde_json::to_string(&value).unwrap();
            // Sometimes the same value, sometimes cut short.
            match mangle {
                0 => text = earlier.clone(),
                1 => {
                    let mut cut = text.len() / 2;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                }
                _ => {}
            }
            let framed = format!("{text}{tail}");
            // Remember `earlier` (crossed as a `_meta` of its own first).
            let _ = skip_meta(earlier.as_bytes(), 0);
            let bytes = framed.as_bytes();
            prop_assert_eq!(skip_meta(bytes, 0), skip_value(bytes, 0));
            prop_assert_eq!(skip_meta(bytes, 0), skip_value(bytes, 0));
        }

        /// Cutting a result's `_meta` out leaves the same object without
        /// it, whatever the layout.
        #[test]
        fn cutting_the_meta_removes_that_member_alone(
            value in prop::collection::btree_map("[a-z_]{1,6}", arb_json(), 0..5),
            meta in prop::collection::btree_map("[a-z]{1,6}", arb_json(), 0..3),
            at in 0usize..6,
            pretty in any::<bool>(),
        ) {
            let mut members: Vec<(String, serde_json::Value)> = value
                .into_iter()
                .filter(|(k, _)| k != "_meta")
                .collect();
            let meta = serde_json::Value::Object(meta.into_iter().collect());
            let object = |members: &[(String, serde_json::Value)]| {
                let inner: Vec<String> = members
                    .iter()
                    .map(|(k, v)| {
                        let v = if pretty {
                            serde_json::to_string_pretty(v).unwrap()
                        } else {
                            serde_json::to_string(v).unwrap()
                        };
                        format!("{} : {v}", serde_json::to_string(k).unwrap())
                    })
                    .collect();
                if pretty {
                    format!("{{ {} }}", inner.join(" ,\n "))
                } else {
                    format!("{{{}}}", inner.join(","))
                }
            };
            // Decoded from text both times, so that numbers read alike.
            let expected: serde_json::Value = serde_json::from_str(&object(&members)).unwrap();
            members.insert(at.min(members.len()), ("_meta".to_owned(), meta));
            let text = object(&members);
            let cut = without_meta(&text).expect("one object `_meta`");
            let decoded: serde_json::Value = serde_json::from_str(&cut).unwrap();
            prop_assert_eq!(decoded, expected);
        }

        #[test]
        fn never_panics_and_stays_in_bounds(bytes in prop::collection::vec(any::<u8>(), 0..256), start in 0usize..300) {
            if let Some(end) = skip_value(&bytes, start) {
                prop_assert!(end <= bytes.len() && end > start);
            }
            prop_assert!(skip_space(&bytes, start) >= start);
        }
    }

    #[test]
    fn a_results_long_text_is_the_longest_plain_text_member() {
        let long = |n: usize| "y".repeat(n);
        let noted = |result: &str| {
            let (end, _, _, long, _) = result_members(result.as_bytes(), 0).unwrap();
            assert_eq!(end, result.len());
            long.map(|(start, end)| end - start)
        };
        let min = LONG_TEXT;
        // The longer of two text blocks, whitespace around the colon.
        let two = format!(
            r#"{{"content":[{{"type":"text","text":"{}"}},{{"text" : "{}","type":"text"}}]}}"#,
            long(min),
            long(min + 1)
        );
        assert_eq!(noted(&two), Some(min + 1));
        // Too short, escaped, another key, or in the `_meta`: none.
        for result in [
            format!(
                r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#,
                long(min - 1)
            ),
            format!(
                r#"{{"content":[{{"type":"text","text":"{}\n"}}]}}"#,
                long(min)
            ),
            format!(
                r#"{{"content":[{{"type":"image","data":"{}"}}]}}"#,
                long(min)
            ),
            format!(
                r#"{{"content":[{{"type":"text","context":"{}"}}]}}"#,
                long(min)
            ),
            format!(r#"{{"_meta":{{"text":"{}"}},"content":[]}}"#, long(min)),
            format!(r#"{{"content":["text","{}"]}}"#, long(min)),
        ] {
            assert_eq!(noted(&result), None, "{}", &result[..60]);
        }
    }
}

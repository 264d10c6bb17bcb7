//! A JSON message body collected chunk by chunk, its one long text moved straight into a string of its own.
//!
//! A Streamable HTTP response in JSON mode (MCP "Transports" §Streamable
//! HTTP) is one JSON-RPC message whose body arrives in a few chunks. Most of
//! a large `tools/call` result is one string: the `text` of a text content
//! block. Collecting the body whole and decoding the string out of it copies
//! that text twice, once into the body and once into the content block's
//! `String`, the second time only after the last byte arrived. [`JsonBody`]
//! copies it once, as it arrives: when the text of a text content block
//! (`{"type":"text","text":"…` or `{"text":"…`) starts near the start of
//! the body and runs on for at
//! least 16 KiB without an escape, its text goes into a string
//! of its own and the body keeps `"\u0000"` in its place. The frame built
//! from the two ([`Collected::frame`]) decodes into the same messages as
//! the whole body would, with the text moved into the content block
//! ([`RawJson::into_result`]) rather than copied.
//!
//! The body is checked as UTF-8 chunk by chunk as it arrives, while each
//! chunk is still in the cache; a body that is not UTF-8 is kept as bytes
//! for the byte decoder's error.
//!
//! [`RawJson::into_result`]: crate::RawJson::into_result

use std::sync::Arc;

use memchr::{memchr, memchr2};

use crate::Frame;

/// How far into the body the start of a string to move aside is looked
/// for: the `text` of a `tools/call` result's content block starts within
/// its first few hundred bytes.
const SEARCH_WINDOW: usize = 1024;

/// How long a string's text must be, without an escape, before it is moved
/// into a string of its own: a shorter one is copied back into the body
/// when it ends.
pub(crate) const LIFT_AFTER: usize = 16 * 1024;

/// How long a `text` value that runs on past the end of a chunk must be so
/// far before it is moved aside (to be moved back if it ends short).
const LIFT_START: usize = 1024;

/// The text that stands in the body for the string moved aside: the
/// value of one NUL character, which only this escape can write, so a body
/// that holds another is framed whole.
const PLACEHOLDER: &str = "\\u0000";

/// A JSON body being collected (see the module documentation): push each
/// chunk as it arrives, then [`JsonBody::finish`].
#[derive(Debug, Default)]
pub struct JsonBody {
    /// The body so far, without the text moved aside.
    text: String,
    /// The start of a character that the last chunk cut, at most three
    /// bytes, for whichever of `text` and `lifted` it belongs to.
    carry: Vec<u8>,
    /// The whole body so far, once it turned out not to be UTF-8.
    invalid: Option<Vec<u8>>,
    /// The text of the long string, while and once it is moved aside.
    lifted: Option<String>,
    state: State,
    /// The body's announced length (`Content-Length`), 0 when unknown.
    expected: usize,
    /// How many bytes were pushed.
    pushed: usize,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Within the search window, outside any string.
    #[default]
    Outside,
    /// Within a string whose text starts at this offset of the body.
    Inside { start: usize, text_value: bool },
    /// Moving a string's text aside.
    Lifting,
    /// Nothing more to look for: the rest of the body is appended.
    Done,
}

/// What [`JsonBody::finish`] returns: the body's text, with its long text
/// apart when one was moved aside, or its bytes when it is not UTF-8.
#[derive(Debug)]
pub struct Collected(Kind);

#[derive(Debug)]
enum Kind {
    /// The whole body, as text.
    Whole(String),
    /// The body with `"\u0000"` in place of its long string's text, and
    /// that text (checked: UTF-8 without escapes or control characters).
    Lifted { body: String, text: String },
    /// The body is not UTF-8: every byte of it.
    Bytes(Vec<u8>),
}

impl Collected {
    /// Frames the body as [`Frame::from_shared`] does, its text put into
    /// `slot` (an allocation the caller shares with the frame and reuses
    /// once nobody else holds it; a new one when somebody does), which is
    /// returned with the frame. A long text moved aside stays apart in the
    /// response's result, for [`RawJson::into_result`] to move into the
    /// decoded result; the outcome is the same as the whole body's, errors
    /// included. A body that is not UTF-8 takes the byte decoder, for its
    /// error.
    ///
    /// [`RawJson::into_result`]: crate::RawJson::into_result
    pub fn frame(self, mut slot: Arc<String>) -> (Result<Frame, serde_json::Error>, Arc<String>) {
        let mut fill = |text: String| match Arc::get_mut(&mut slot) {
            Some(held) => *held = text,
            None => slot = Arc::new(text),
        };
        match self.0 {
            Kind::Whole(text) => {
                fill(text);
                (Frame::from_shared(Arc::clone(&slot)), slot)
            }
            Kind::Lifted { body, text } => {
                fill(body);
                (Frame::from_lifted(Arc::clone(&slot), text), slot)
            }
            Kind::Bytes(bytes) => (Frame::from_slice(&bytes), slot),
        }
    }

    /// How many bytes of the body sit apart from the rest, moved aside.
    pub fn moved_aside(&self) -> usize {
        match &self.0 {
            Kind::Lifted { text, .. } => text.len(),
            _ => 0,
        }
    }
}

impl JsonBody {
    /// A body collected into `buffer` (emptied first: an allocation the
    /// caller reuses), of `expected` bytes when its length was announced
    /// (0 when not), which sizes the string a long text is moved into and
    /// the buffer, grown once for the rest of the body when what it holds
    /// is not moved aside: a buffer of at most 16 KiB is enough to start
    /// with.
    pub fn new(mut buffer: String, expected: usize) -> JsonBody {
        buffer.clear();
        // A body announced shorter than a text worth moving holds none.
        let state = if expected > 0 && expected < LIFT_AFTER {
            State::Done
        } else {
            State::Outside
        };
        JsonBody {
            text: buffer,
            expected,
            state,
            ..JsonBody::default()
        }
    }

    /// How many bytes were pushed.
    pub fn len(&self) -> usize {
        self.pushed
    }

    /// Whether nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// Appends the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.pushed = self.pushed.saturating_add(chunk.len());
        let mut data = chunk;
        while self.invalid.is_none() {
            match self.state {
                State::Done => {
                    self.append(data);
                    return;
                }
                State::Outside | State::Inside { .. } => {
                    // The chunk is searched first and appended in one piece,
                    // up to where a text to move aside starts, if one does.
                    let base = self.text.len();
                    let Some(start) = self.search(data) else {
                        self.append(data);
                        return;
                    };
                    let (before, text) = data.split_at(start.saturating_sub(base).min(data.len()));
                    data = text;
                    if self.append(before) {
                        self.state = if self.lift(start, data.len()) {
                            State::Lifting
                        } else {
                            State::Done
                        };
                    }
                }
                State::Lifting => {
                    let Some(lifted) = self.lifted.as_mut() else {
                        self.state = State::Done;
                        continue;
                    };
                    let end = memchr2(b'"', b'\\', data);
                    let (head, rest) = data.split_at(end.unwrap_or(data.len()));
                    if !no_control(head) {
                        // Refused by the decoder: the body takes it whole.
                        self.unlift();
                        self.state = State::Done;
                        continue;
                    }
                    if let Err(bad) = push_checked(lifted, &mut self.carry, head) {
                        self.unlift();
                        self.not_utf8(&[bad, rest]);
                        return;
                    }
                    let Some(&ending) = rest.first() else {
                        return;
                    };
                    if ending == b'"' && lifted.len() >= LIFT_AFTER && self.carry.is_empty() {
                        self.text.push_str(PLACEHOLDER);
                    } else {
                        // An escape, or a string shorter than it looked.
                        self.unlift();
                    }
                    self.state = State::Done;
                    data = rest;
                }
            }
        }
        if let Some(bytes) = &mut self.invalid {
            bytes.extend_from_slice(data);
        }
    }

    /// The body, once every chunk was pushed.
    pub fn finish(mut self) -> Collected {
        if self.invalid.is_none() && !self.carry.is_empty() {
            // A character cut short by the body's end.
            if self.lifted.is_some() {
                self.unlift();
            }
            let mut bytes = std::mem::take(&mut self.text).into_bytes();
            bytes.extend_from_slice(&self.carry);
            self.invalid = Some(bytes);
        }
        if let Some(bytes) = self.invalid {
            return Collected(Kind::Bytes(bytes));
        }
        match (self.state, self.lifted) {
            // Moved aside and ended: the body holds the placeholder.
            (State::Done, Some(text)) => Collected(Kind::Lifted {
                body: self.text,
                text,
            }),
            // A body cut off inside the string: whole, for the decoder's
            // error.
            (_, Some(text)) => {
                let mut body = self.text;
                body.push_str(&text);
                Collected(Kind::Whole(body))
            }
            (_, None) => Collected(Kind::Whole(self.text)),
        }
    }

    /// Follows the strings of `data`, the chunk that comes after the body
    /// so far, while within the search window: the offset in the body at
    /// which the text of a string to move aside starts (a `text` value long
    /// enough, or running on past the chunk and already not short), or
    /// `None` when the chunk holds none.
    fn search(&mut self, data: &[u8]) -> Option<usize> {
        let base = self.text.len();
        let mut at = 0;
        loop {
            match self.state {
                State::Outside => {
                    if base + at >= SEARCH_WINDOW {
                        self.state = State::Done;
                        return None;
                    }
                    let quote = at + memchr(b'"', data.get(at..)?)?;
                    let head = data.get(..=quote).unwrap_or_default();
                    self.state = State::Inside {
                        start: base + quote + 1,
                        text_value: is_text_value(&self.text, head),
                    };
                    at = quote + 1;
                }
                // A string not to move aside that runs on past the window
                // is not followed to its end.
                State::Inside {
                    text_value: false, ..
                } if base + at >= SEARCH_WINDOW => {
                    self.state = State::Done;
                    return None;
                }
                State::Inside { start, text_value } => {
                    let rest = data.get(at..).unwrap_or_default();
                    match memchr2(b'"', b'\\', rest) {
                        Some(found) if rest.get(found) == Some(&b'"') => {
                            let end = base + at + found;
                            if text_value && end - start >= LIFT_AFTER {
                                return Some(start);
                            }
                            self.state = State::Outside;
                            at += found + 1;
                        }
                        // An escape: nothing is moved aside.
                        Some(_) => {
                            self.state = State::Done;
                            return None;
                        }
                        None => {
                            let length = base + data.len() - start;
                            if !text_value && base + data.len() >= SEARCH_WINDOW {
                                self.state = State::Done;
                            }
                            return (text_value && length >= LIFT_START).then_some(start);
                        }
                    }
                }
                State::Lifting | State::Done => return None,
            }
        }
    }

    /// Moves the text of the string that starts at `start` of the body into
    /// a string of its own, sized for the chunk of `chunk` bytes being
    /// pushed and the rest of the body; `false` (nothing moved) when the
    /// text so far holds a control character.
    fn lift(&mut self, start: usize, chunk: usize) -> bool {
        let held = self.text.get(start..).unwrap_or_default();
        if !no_control(held.as_bytes()) {
            return false;
        }
        let rest = self.expected.saturating_sub(self.pushed);
        let mut lifted = String::with_capacity(held.len() + chunk + rest.max(LIFT_AFTER));
        lifted.push_str(held);
        self.text.truncate(start);
        self.lifted = Some(lifted);
        true
    }

    /// Puts the text moved aside back where it was: the string was not one
    /// to move (an escape, a control character, shorter than
    /// [`LIFT_AFTER`]).
    fn unlift(&mut self) {
        if let Some(lifted) = self.lifted.take() {
            self.text.push_str(&lifted);
        }
    }

    /// Appends `data` to the body, checked as UTF-8; `false` once the body
    /// turned out not to be (then kept as bytes).
    fn append(&mut self, data: &[u8]) -> bool {
        // Room for the rest of the body as announced, once the buffer is
        // too small for it: a buffer handed over small (the body's text may
        // be moved aside) grows once, not by doubling.
        if self.text.capacity() - self.text.len() < data.len() {
            let rest = self.expected.saturating_sub(self.pushed);
            self.text.reserve(data.len().saturating_add(rest));
        }
        if let Err(rest) = push_checked(&mut self.text, &mut self.carry, data) {
            self.unlift();
            self.not_utf8(&[rest]);
            return false;
        }
        true
    }

    /// Keeps the body as bytes from now on: what it holds so far (the text
    /// moved aside already put back), the cut character and `rest`.
    fn not_utf8(&mut self, rest: &[&[u8]]) {
        let mut bytes = std::mem::take(&mut self.text).into_bytes();
        bytes.extend_from_slice(&self.carry);
        self.carry.clear();
        for part in rest {
            bytes.extend_from_slice(part);
        }
        self.invalid = Some(bytes);
    }
}

/// Whether `head`, a chunk's bytes up to and including a string's opening
/// quote appended to `body`, opens the text of a text content block as
/// compact JSON writes one: after `"type":"text","text":` (its type
/// first, as the SDKs write it) or as an object's first member, `{"text":`
/// (as a writer that sorts keys puts it). Other strings, such as a
/// resource's text after its URI, are left where they are: no field takes
/// them from the slot the moved text waits in, so the result would be
/// joined back and decoded whole.
fn is_text_value(body: &str, head: &[u8]) -> bool {
    ends_across(body, head, b"\"type\":\"text\",\"text\":\"")
        || ends_across(body, head, b"{\"text\":\"")
}

/// Whether `body` followed by `head` ends with `key`.
fn ends_across(body: &str, head: &[u8], key: &[u8]) -> bool {
    if head.len() >= key.len() {
        return head.ends_with(key);
    }
    let from_body = key.len() - head.len();
    key.ends_with(head)
        && body
            .as_bytes()
            .ends_with(key.get(..from_body).unwrap_or_default())
}

/// Whether `bytes` holds no control character, which JSON allows in a
/// string only escaped.
fn no_control(bytes: &[u8]) -> bool {
    bytes.iter().fold(u8::MAX, |low, &b| low.min(b)) >= 0x20
}

/// Appends a chunk of a body to `text`, checked as UTF-8 as it arrives,
/// while it is still in the cache from the socket read. `carry` holds the
/// start of a character that the previous chunk cut, at most three bytes.
/// `Err` with the bytes of `data` not yet in `text` or `carry` when the
/// body is not UTF-8.
fn push_checked<'a>(
    text: &mut String,
    carry: &mut Vec<u8>,
    data: &'a [u8],
) -> Result<(), &'a [u8]> {
    let mut data = data;
    if !carry.is_empty() {
        // The cut character, completed from the new chunk.
        let held = carry.len();
        let take = data.len().min(4 - held);
        carry.extend_from_slice(data.get(..take).unwrap_or_default());
        let (valid, definite) = match std::str::from_utf8(carry) {
            Ok(_) => (carry.len(), true),
            Err(error) => (error.valid_up_to(), error.error_len().is_some()),
        };
        if valid < held {
            if definite || take < data.len() {
                carry.truncate(held);
                return Err(data);
            }
            // Still cut short: the whole chunk was one to three bytes.
            return Ok(());
        }
        if let Ok(whole) = std::str::from_utf8(carry.get(..valid).unwrap_or_default()) {
            text.push_str(whole);
        }
        data = data.get(valid - held..).unwrap_or_default();
        carry.clear();
    }
    match std::str::from_utf8(data) {
        Ok(chunk) => text.push_str(chunk),
        Err(error) => {
            let valid = error.valid_up_to();
            if let Ok(chunk) = std::str::from_utf8(data.get(..valid).unwrap_or_default()) {
                text.push_str(chunk);
            }
            let rest = data.get(valid..).unwrap_or_default();
            if error.error_len().is_some() {
                return Err(rest);
            }
            carry.extend_from_slice(rest);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CallToolResult;
    use crate::{Message, RawJson};

    /// `body` pushed in the chunks that `cuts` (ascending offsets) make:
    /// with its length announced for one cut or none, as a chunked body
    /// (length unknown) for more.
    fn collected(body: &[u8], cuts: &[usize]) -> Collected {
        let announced = if cuts.len() > 1 { 0 } else { body.len() };
        let mut collecting = JsonBody::new(String::new(), announced);
        let mut from = 0;
        for &cut in cuts.iter().chain([&body.len()]) {
            let cut = cut.clamp(from, body.len());
            collecting.push(&body[from..cut]);
            from = cut;
        }
        assert_eq!(collecting.len(), body.len());
        collecting.finish()
    }

    fn result(frame: Frame) -> RawJson {
        match frame {
            Frame::Single(Message::Response(response)) => response.result,
            other => panic!("not a response: {other:?}"),
        }
    }

    /// Where the tests cut a body of `len` bytes: every offset near its
    /// ends (where the text starts and ends), a sample of the middle.
    fn cuts(len: usize) -> Vec<usize> {
        let mut cuts: Vec<usize> = (0..len.min(300)).collect();
        cuts.extend((300..len.saturating_sub(300)).step_by(1531));
        cuts.extend(len.saturating_sub(300).max(300)..=len);
        cuts
    }

    fn call_result(text: &str, after: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{text}"}}]{after}}}}}"#
        )
    }

    #[test]
    fn a_long_text_is_moved_aside_wherever_the_body_is_cut_and_decodes_the_same() {
        let info = r#","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}"#;
        let long = format!("{}𝄞 plain", "é".repeat(LIFT_AFTER));
        for body in [call_result(&long, ""), call_result(&long, info)] {
            let whole = result(Frame::from_slice(body.as_bytes()).unwrap());
            let expected: CallToolResult = whole.decode().unwrap();
            for cut in cuts(body.len()) {
                for cuts in [vec![cut], vec![cut / 2, cut]] {
                    let collected = collected(body.as_bytes(), &cuts);
                    assert_eq!(collected.moved_aside(), long.len(), "cut at {cuts:?}");
                    let (frame, _) = collected.frame(Arc::default());
                    let raw = result(frame.unwrap());
                    // The payload reads as the whole text, for a caller
                    // that asks for it.
                    assert_eq!(raw.clone().get(), whole.get(), "cut at {cuts:?}");
                    let decoded: CallToolResult = raw.into_result().unwrap();
                    assert_eq!(decoded, expected, "cut at {cuts:?}");
                }
            }
        }
    }

    #[test]
    fn the_text_is_moved_into_the_result_not_copied() {
        use crate::types::de::TEXTS_LIFTED;
        let body = call_result(&"x".repeat(3 * LIFT_AFTER), "");
        let (frame, _) = collected(body.as_bytes(), &[100, 30_000]).frame(Arc::default());
        let raw = result(frame.unwrap());
        let text_at = raw
            .lifted_text()
            .expect("the text was not moved aside")
            .as_ptr();
        let before = TEXTS_LIFTED.with(std::cell::Cell::get);
        let decoded: CallToolResult = raw.into_result().unwrap();
        assert_eq!(TEXTS_LIFTED.with(std::cell::Cell::get), before + 1);
        match decoded.content.first() {
            Some(crate::types::ContentBlock::Text(block)) => {
                assert_eq!(block.text.as_ptr(), text_at);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_is_not_moved_aside_frames_as_the_whole_body() {
        let long = "x".repeat(LIFT_AFTER);
        let cases = [
            // Short.
            (call_result("short", ""), 0),
            // Escaped: serde's to read.
            (call_result(&format!("{long}\\n{long}"), ""), 0),
            // Not a `text` member's value.
            (
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"data":"{long}"}}}}"#),
                0,
            ),
            // A NUL elsewhere: the placeholder would not be the only one.
            (
                call_result(&long, r#","structuredContent":{"a":"\u0000"}"#),
                long.len(),
            ),
            // A block of a type this crate does not know, a resource's
            // text: not a text block's.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"novel","text":"{long}"}}]}}}}"#
                ),
                0,
            ),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"result":{{"contents":[{{"uri":"a:b","text":"{long}"}}]}}}}"#
                ),
                0,
            ),
            // Keys sorted: a text block's text comes first, and so may a
            // resource's, which is moved aside and joined back.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"text":"{long}","type":"text"}}]}}}}"#
                ),
                long.len(),
            ),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"result":{{"contents":[{{"text":"{long}","uri":"a:b"}}]}}}}"#
                ),
                long.len(),
            ),
            // A request's params are not moved into a result.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{{"content":{{"type":"text","text":"{long}"}}}}}}"#
                ),
                long.len(),
            ),
            // Nor a text block that is not a response's.
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"error":{{"code":1,"message":"m","data":{{"type":"text","text":"{long}"}}}}}}"#
                ),
                long.len(),
            ),
            // A batch.
            (format!("[{}]", call_result(&long, "")), long.len()),
        ];
        for (body, aside) in &cases {
            for cuts in [vec![], vec![90], vec![40, 9000]] {
                let collected = collected(body.as_bytes(), &cuts);
                assert_eq!(collected.moved_aside(), *aside, "{}", &body[..60]);
                let (frame, _) = collected.frame(Arc::default());
                let frame = frame.unwrap();
                let whole = Frame::from_slice(body.as_bytes()).unwrap();
                assert_eq!(
                    serde_json::to_string(&frame).unwrap(),
                    serde_json::to_string(&whole).unwrap()
                );
                if let (Frame::Single(Message::Response(a)), Frame::Single(Message::Response(b))) =
                    (frame, whole)
                {
                    let apart = a
                        .result
                        .into_result::<CallToolResult>()
                        .map_err(|e| e.to_string());
                    let whole = b
                        .result
                        .decode::<CallToolResult>()
                        .map_err(|e| e.to_string());
                    assert_eq!(apart, whole, "{}", &body[..60]);
                }
            }
        }
    }

    #[test]
    fn a_body_that_does_not_decode_fails_as_it_fails_whole() {
        let long = "x".repeat(LIFT_AFTER);
        let bodies: Vec<Vec<u8>> = vec![
            // A control character in the text.
            call_result(&format!("{long}\u{1}{long}"), "").into_bytes(),
            // Bad JSON after the text.
            call_result(&long, r#","isError":tru"#).into_bytes(),
            // A wrong type after the text.
            call_result(&long, r#","isError":"no""#).into_bytes(),
            // Cut off inside the text.
            call_result(&long, "").into_bytes()[..LIFT_AFTER].to_vec(),
            // Not UTF-8 inside the text, and cut in a character.
            [
                &call_result(&long, "").into_bytes()[..LIFT_AFTER],
                b"\xff\xfe",
                b"\"}]}}",
            ]
            .concat(),
            [
                &call_result(&long, "").into_bytes()[..LIFT_AFTER],
                "é".as_bytes().get(..1).unwrap(),
            ]
            .concat(),
        ];
        for body in &bodies {
            let whole = Frame::from_slice(body).map_err(|e| e.to_string());
            for cuts in [vec![], vec![70], vec![80, LIFT_AFTER + 1]] {
                let (frame, _) = collected(body, &cuts).frame(Arc::default());
                match (frame, &whole) {
                    (
                        Ok(Frame::Single(Message::Response(a))),
                        Ok(Frame::Single(Message::Response(b))),
                    ) => {
                        let apart = a.result.into_result::<CallToolResult>().map(|_| ());
                        let whole = b.result.decode::<CallToolResult>().map(|_| ());
                        let apart = apart.map_err(|e| e.to_string());
                        assert!(apart.is_err(), "{cuts:?}");
                        assert_eq!(apart, whole.map_err(|e| e.to_string()), "{cuts:?}");
                    }
                    (frame, whole) => {
                        assert_eq!(
                            frame.map(|_| ()).map_err(|e| e.to_string()),
                            whole.clone().map(|_| ())
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_body_checked_chunk_by_chunk_is_its_text_wherever_it_is_cut() {
        let body = "{\"text\":\"é€𝄞 plain\"}".as_bytes();
        for first in 0..=body.len() {
            for second in first..=body.len() {
                let (mut text, mut carry) = (String::new(), Vec::new());
                for chunk in [&body[..first], &body[first..second], &body[second..]] {
                    assert_eq!(push_checked(&mut text, &mut carry, chunk), Ok(()));
                }
                assert!(carry.is_empty(), "cut at {first} and {second}");
                assert_eq!(text.as_bytes(), body, "cut at {first} and {second}");
            }
        }
    }

    #[test]
    fn a_body_that_is_not_utf8_is_kept_whole_as_bytes() {
        // A stray continuation byte, a character broken by an ASCII byte,
        // a byte that never starts one, and one cut at the very end.
        for body in [&b"ab\x80cd"[..], b"a\xe2\x82x", b"\xffabc", b"abc\xe2\x82"] {
            for cut in 0..=body.len() {
                match collected(body, &[cut]).0 {
                    Kind::Bytes(kept) => assert_eq!(kept, body, "{body:?} cut at {cut}"),
                    other => panic!("{body:?} cut at {cut} was taken as UTF-8: {other:?}"),
                }
            }
        }
    }
}

//! Newline-delimited JSON, the framing of the stdio transport: one JSON-RPC frame per line.
//!
//! MCP spec, "Transports" §stdio: messages are delimited by newlines and MUST
//! NOT contain embedded newlines. Reading is lenient the way the spec's
//! advice and real servers require: a trailing CR is stripped
//! so Windows servers work, blank lines are skipped, and a line that is not a
//! JSON-RPC frame is reported and skipped rather than ending the connection,
//! because a misbehaving server may print anything to stdout.

use std::mem;

use memchr::{memchr, memchr2};

use super::{BOM, Input};
use crate::jsonrpc::{ErrorResponse, Frame, Message, RequestId, Response, write_message};

/// The longest line [`NdjsonDecoder::new`] accepts: 64 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;

/// How many characters of a rejected line [`NdjsonError::NotJson`] keeps.
const PREVIEW_CHARS: usize = 120;

/// An incremental NDJSON decoder: push bytes as they are read, pop frames.
///
/// Every line yields at most one item, in order: a [`Frame`], or an error
/// after which decoding goes on with the next line. A line is measured
/// without its `\n` but with any `\r`; a line longer than the limit yields
/// [`NdjsonError::TooLarge`], and at most the limit is ever buffered for it:
/// once the pending part of a line exceeds the limit, it is dropped and the
/// rest of the line is discarded as it arrives.
///
/// A UTF-8 byte order mark at the very start of the stream is skipped. The
/// MCP spec does not mention one, but some Windows runtimes write it before
/// the first byte of output, and dropping the first message for it (usually
/// the `initialize` response) would be worse than tolerating it.
///
/// ```
/// use mcp_proto::codec::NdjsonDecoder;
/// use mcp_proto::Frame;
///
/// let mut decoder = NdjsonDecoder::new();
/// decoder.push(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
/// assert!(decoder.next_frame().is_none()); // the line is not complete yet
/// decoder.push(b"\r\n");
/// assert!(matches!(decoder.next_frame(), Some(Ok(Frame::Single(_)))));
/// assert!(decoder.next_frame().is_none());
/// ```
#[derive(Debug)]
pub struct NdjsonDecoder {
    input: Input,
    /// The rest of an oversized line is being dropped, up to its `\n`.
    discarding: bool,
    /// No line has been consumed yet, so a byte order mark may come first.
    at_stream_start: bool,
    limit: usize,
}

impl NdjsonDecoder {
    /// A decoder accepting lines up to [`DEFAULT_MAX_MESSAGE_SIZE`].
    pub fn new() -> Self {
        Self::with_max_message_size(DEFAULT_MAX_MESSAGE_SIZE)
    }

    /// A decoder accepting lines up to `limit` bytes (`\n` not counted).
    pub fn with_max_message_size(limit: usize) -> Self {
        NdjsonDecoder {
            input: Input::default(),
            discarding: false,
            at_stream_start: true,
            limit,
        }
    }

    /// Appends bytes read from the pipe. Call [`next_frame`](Self::next_frame)
    /// until `None` afterwards: the decoder then holds at most the limit plus
    /// one chunk.
    pub fn push(&mut self, bytes: &[u8]) {
        let mut bytes = bytes;
        if self.discarding {
            match memchr(b'\n', bytes) {
                // The oversized line ends here; the next one starts after it.
                Some(end) => {
                    self.discarding = false;
                    bytes = bytes.get(end + 1..).unwrap_or_default();
                }
                None => return,
            }
        }
        self.input.push(bytes);
    }

    /// Pops the item of the next complete line: `None` when no complete line
    /// is buffered (blank lines yield nothing and are skipped).
    pub fn next_frame(&mut self) -> Option<Result<Frame, NdjsonError>> {
        loop {
            let Some(end) = self.input.find_line_end(|bytes| memchr(b'\n', bytes)) else {
                if self.input.len() > self.limit {
                    // Refuse the line now rather than buffer up to its end.
                    self.input.discard_unconsumed();
                    self.discarding = true;
                    self.at_stream_start = false;
                    return Some(Err(NdjsonError::TooLarge { limit: self.limit }));
                }
                return None;
            };
            let at_stream_start = mem::replace(&mut self.at_stream_start, false);
            let (line, _) = self.input.take_line(end);
            if let Some(item) = decode_line(line, self.limit, at_stream_start) {
                return Some(item);
            }
        }
    }

    /// At end of input: pops what is left, the last line included even
    /// without its `\n`. Call until `None`; the decoder is then empty.
    pub fn finish(&mut self) -> Option<Result<Frame, NdjsonError>> {
        if let Some(item) = self.next_frame() {
            return Some(item);
        }
        // No complete line is left, and what remains fits the limit (or was
        // already reported as too large).
        let item = if mem::take(&mut self.discarding) {
            None
        } else {
            decode_line(self.input.unconsumed(), self.limit, self.at_stream_start)
        };
        self.input.reset();
        self.at_stream_start = true;
        item
    }

    /// The number of bytes pushed and not yet consumed.
    pub fn buffered_len(&self) -> usize {
        self.input.len()
    }
}

impl Default for NdjsonDecoder {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a line did not yield a frame. Decoding goes on after either.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NdjsonError {
    /// The line is not a JSON-RPC frame (not JSON at all, or JSON that is
    /// not a message or a batch of messages).
    #[error("line of {line_len} bytes is not a JSON-RPC message: {preview:?}")]
    NotJson {
        /// The first characters of the line (at most 120), decoded lossily.
        preview: String,
        /// The line's length in bytes, without its line ending.
        line_len: usize,
        /// Why it did not decode.
        #[source]
        source: serde_json::Error,
        /// The id of the request the line answers, when it reads as a
        /// response once its invalid UTF-8 is replaced (U+FFFD) or as a
        /// JSON object with an `id` and a `result` or `error` member: the
        /// caller fails that request at once rather than leaving it to its
        /// deadline. `None` for anything else.
        answers: Option<RequestId>,
    },
    /// The line was longer than the limit; it was discarded.
    #[error("message exceeds the size limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

impl NdjsonError {
    /// The JSON-RPC error a server answers such a line with, to be sent with
    /// a null id (JSON-RPC 2.0 §5.1): -32700 for a line that is not JSON,
    /// -32600 for JSON that is not a message and for an oversized line.
    pub fn to_error_object(&self) -> crate::ErrorObject {
        use crate::jsonrpc::error_codes;
        match self {
            NdjsonError::NotJson { source, .. } => {
                let (code, what) = if source.is_data() {
                    (error_codes::INVALID_REQUEST, "invalid request")
                } else {
                    (error_codes::PARSE_ERROR, "parse error")
                };
                crate::ErrorObject::new(code, format!("{what}: {source}"))
            }
            NdjsonError::TooLarge { .. } => {
                crate::ErrorObject::new(error_codes::INVALID_REQUEST, self.to_string())
            }
        }
    }
}

/// Why a message has no newline-delimited form; nothing was appended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A payload holds a raw line break inside a JSON string: invalid JSON
    /// kept raw from a peer, which has no one-line form that means the same
    /// (MCP "Transports" §stdio: messages MUST NOT contain embedded
    /// newlines).
    #[error(
        "the message holds a raw line break inside a JSON string and cannot be written on one line"
    )]
    LineBreakInString,
    /// Serializing the message failed.
    #[error("the message cannot be serialized as JSON")]
    Json(#[source] serde_json::Error),
}

/// Appends `message` as one line of compact JSON ending in `\n`.
///
/// A message holding a raw line break inside a JSON string (invalid JSON a
/// peer sent, kept raw in a payload) has no one-line form that means the
/// same: it is refused with [`EncodeError::LineBreakInString`] and nothing
/// is appended.
pub fn encode(message: &Message, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    write_line(out, |out| write_message(message, out))
}

/// Appends `frame` as one line of compact JSON ending in `\n`; refused,
/// with nothing appended, when [`encode`] would refuse one of its members.
pub fn encode_frame(frame: &Frame, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    write_line(out, |out| match frame {
        Frame::Single(message) => write_message(message, out),
        Frame::Batch(messages) => {
            out.push(b'[');
            for (i, message) in messages.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_message(message, out)?;
            }
            out.push(b']');
            Ok(())
        }
    })
}

fn write_line(
    out: &mut Vec<u8>,
    write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
) -> Result<(), EncodeError> {
    let start = out.len();
    // Serializing our own message types cannot fail (see `Message::to_bytes`);
    // should it ever, nothing is written rather than half a line.
    if let Err(error) = write(&mut *out) {
        out.truncate(start);
        return Err(EncodeError::Json(error));
    }
    // Compact output escapes newlines inside strings, but a payload decoded
    // from a peer keeps its own whitespace, which may include line breaks
    // (pretty-printed JSON in a multi-line SSE `data` field, for one). JSON
    // forbids raw control characters inside strings, so any CR or LF byte in
    // valid JSON is whitespace between tokens, and a space means the same.
    if let Some(line) = out.get_mut(start..)
        && memchr2(b'\n', b'\r', line).is_some()
    {
        // A raw line break inside a string is invalid JSON kept raw from a
        // peer: a space there would change the string (and make the JSON
        // valid), and the break itself would end the line.
        if breaks_inside_strings(line) {
            out.truncate(start);
            return Err(EncodeError::LineBreakInString);
        }
        for byte in line.iter_mut().filter(|b| matches!(**b, b'\n' | b'\r')) {
            *byte = b' ';
        }
    }
    out.push(b'\n');
    Ok(())
}

/// Whether a CR or LF byte of `json` sits inside a string literal.
fn breaks_inside_strings(json: &[u8]) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                b'\n' | b'\r' => return true,
                _ => {}
            }
        } else if byte == b'"' {
            in_string = true;
        }
    }
    false
}

/// The item of one complete line, `None` for a blank line.
fn decode_line(
    line: &[u8],
    limit: usize,
    at_stream_start: bool,
) -> Option<Result<Frame, NdjsonError>> {
    if line.len() > limit {
        return Some(Err(NdjsonError::TooLarge { limit }));
    }
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = match line.strip_prefix(BOM) {
        Some(rest) if at_stream_start => rest,
        _ => line,
    };
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(
        Frame::from_slice(line).map_err(|source| NdjsonError::NotJson {
            preview: preview(line),
            line_len: line.len(),
            source,
            answers: answered_id(line),
        }),
    )
}

/// The id of the request a line that is not a frame seems to answer (see
/// [`NdjsonError::NotJson::answers`]). Runs only for refused lines.
fn answered_id(line: &[u8]) -> Option<RequestId> {
    let repaired = String::from_utf8_lossy(line);
    match Frame::from_slice(repaired.as_bytes()) {
        Ok(Frame::Single(Message::Response(Response { id, .. }))) => return Some(id),
        Ok(Frame::Single(Message::Error(ErrorResponse { id, .. }))) => return id,
        Ok(_) => return None,
        Err(_) => {}
    }
    let serde_json::Value::Object(object) =
        serde_json::from_str::<serde_json::Value>(&repaired).ok()?
    else {
        return None;
    };
    if object.contains_key("method")
        || !(object.contains_key("result") || object.contains_key("error"))
    {
        return None;
    }
    match object.get("id")? {
        serde_json::Value::String(id) => Some(RequestId::String(id.clone())),
        serde_json::Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

/// The first [`PREVIEW_CHARS`] characters of `line`, decoded lossily. A
/// character takes at most 4 bytes, so only that many bytes are decoded.
fn preview(line: &[u8]) -> String {
    let head = line.get(..PREVIEW_CHARS * 4).unwrap_or(line);
    String::from_utf8_lossy(head)
        .chars()
        .take(PREVIEW_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_line_names_the_request_it_answers_when_it_can_be_read() {
        let item = |line: &[u8]| {
            let mut decoder = NdjsonDecoder::new();
            decoder.push(line);
            decoder.push(b"\n");
            match decoder.next_frame() {
                Some(Err(NdjsonError::NotJson { answers, .. })) => answers,
                other => panic!("{other:?}"),
            }
        };
        // Invalid UTF-8 inside a result, the id last (as some SDKs write it).
        assert_eq!(
            item(b"{\"result\":{\"text\":\"a\xff\"},\"jsonrpc\":\"2.0\",\"id\":7}"),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            item(b"{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"error\":{\"code\":1,\"message\":\"\xc3\"}}"),
            Some(RequestId::String("s".to_owned()))
        );
        // JSON that is no response: the `jsonrpc` member missing.
        assert_eq!(item(br#"{"id":3,"result":{}}"#), Some(RequestId::Number(3)));
        // Neither a response nor readable: nothing is named.
        assert_eq!(item(br#"{"jsonrpc":"2.0","id":3,"result":"#), None);
        assert_eq!(
            item(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"\xff\"}"),
            None
        );
        assert_eq!(item(b"Welcome to my server v1.0"), None);
    }
    use crate::jsonrpc::{RawValue, Request, RequestId};

    const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

    /// Decodes `chunks` pushed one by one (draining after each push, then
    /// `finish`), checks that pushing the same bytes whole and byte by byte
    /// gives the same items, and renders each item as a line of text:
    /// the frame's compact JSON, or the error's message.
    fn decode_with_limit(limit: usize, chunks: &[&[u8]]) -> Vec<String> {
        let run = |chunks: &mut dyn Iterator<Item = &[u8]>| {
            let mut decoder = NdjsonDecoder::with_max_message_size(limit);
            let mut items = Vec::new();
            let mut render = |item: Result<Frame, NdjsonError>| {
                items.push(match item {
                    Ok(frame) => String::from_utf8(serde_json::to_vec(&frame).unwrap()).unwrap(),
                    Err(error) => format!("error: {error}"),
                });
            };
            for chunk in chunks {
                decoder.push(chunk);
                assert!(decoder.buffered_len() <= limit + chunk.len());
                while let Some(item) = decoder.next_frame() {
                    render(item);
                }
                assert!(decoder.buffered_len() <= limit);
            }
            while let Some(item) = decoder.finish() {
                render(item);
            }
            assert_eq!(decoder.buffered_len(), 0);
            items
        };
        let items = run(&mut chunks.iter().copied());
        let whole = chunks.concat();
        assert_eq!(run(&mut std::iter::once(&whole[..])), items, "whole");
        assert_eq!(run(&mut whole.chunks(1)), items, "byte by byte");
        items
    }

    fn decode(chunks: &[&[u8]]) -> Vec<String> {
        decode_with_limit(DEFAULT_MAX_MESSAGE_SIZE, chunks)
    }

    fn lines(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn lines_decode_in_order() {
        let stream = format!("{PING}\n{INITIALIZED}\n");
        assert_eq!(decode(&[stream.as_bytes()]), lines(&[PING, INITIALIZED]));
    }

    #[test]
    fn crlf_line_endings_are_tolerated() {
        let stream = format!("{PING}\r\n{INITIALIZED}\r\n");
        assert_eq!(decode(&[stream.as_bytes()]), lines(&[PING, INITIALIZED]));
    }

    #[test]
    fn a_line_split_across_pushes_decodes_once_complete() {
        let (a, b) = PING.split_at(10);
        let mut decoder = NdjsonDecoder::new();
        decoder.push(a.as_bytes());
        assert!(decoder.next_frame().is_none());
        decoder.push(b.as_bytes());
        assert!(decoder.next_frame().is_none());
        decoder.push(b"\n");
        assert!(matches!(decoder.next_frame(), Some(Ok(Frame::Single(_)))));
        assert!(decoder.next_frame().is_none());
    }

    #[test]
    fn blank_and_whitespace_lines_are_skipped() {
        let stream = format!("\n\r\n  \t\n{PING}\n \r\n\n{INITIALIZED}\n\n");
        assert_eq!(decode(&[stream.as_bytes()]), lines(&[PING, INITIALIZED]));
    }

    #[test]
    fn a_junk_line_is_reported_and_decoding_goes_on() {
        let stream = format!("Server listening on stdio\n{PING}\n");
        assert_eq!(
            decode(&[stream.as_bytes()]),
            lines(&[
                r#"error: line of 25 bytes is not a JSON-RPC message: "Server listening on stdio""#,
                PING,
            ])
        );
    }

    #[test]
    fn the_cr_of_a_junk_line_is_not_part_of_it() {
        assert_eq!(
            decode(&[b"junk\r\n"]),
            lines(&[r#"error: line of 4 bytes is not a JSON-RPC message: "junk""#])
        );
    }

    #[test]
    fn json_that_is_not_json_rpc_is_reported() {
        let stream = format!("{{\"hello\":1}}\n[1]\n{PING}\n");
        assert_eq!(
            decode(&[stream.as_bytes()]),
            lines(&[
                r#"error: line of 11 bytes is not a JSON-RPC message: "{\"hello\":1}""#,
                r#"error: line of 3 bytes is not a JSON-RPC message: "[1]""#,
                PING,
            ])
        );
    }

    #[test]
    fn not_json_keeps_a_short_lossy_preview_and_the_cause() {
        let mut line = "é".repeat(200).into_bytes();
        line.insert(2, 0xFF);
        let mut decoder = NdjsonDecoder::new();
        decoder.push(&line);
        decoder.push(b"\n");
        match decoder.next_frame() {
            Some(Err(error)) => {
                assert!(std::error::Error::source(&error).is_some());
                match error {
                    NdjsonError::NotJson {
                        preview, line_len, ..
                    } => {
                        assert_eq!(line_len, 401);
                        assert_eq!(preview.chars().count(), PREVIEW_CHARS);
                        assert!(preview.starts_with("é\u{FFFD}é"), "{preview}");
                    }
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn batches_decode_as_one_frame() {
        let batch = format!("[{PING},{INITIALIZED}]");
        assert_eq!(decode(&[batch.as_bytes(), b"\n"]), lines(&[&batch]));
    }

    #[test]
    fn finish_yields_the_last_line_without_newline() {
        let mut decoder = NdjsonDecoder::new();
        decoder.push(PING.as_bytes());
        assert!(decoder.next_frame().is_none());
        assert!(matches!(decoder.finish(), Some(Ok(Frame::Single(_)))));
        assert!(decoder.finish().is_none());
        assert_eq!(decoder.buffered_len(), 0);

        let stream = format!("{INITIALIZED}\n{PING}\r");
        assert_eq!(decode(&[stream.as_bytes()]), lines(&[INITIALIZED, PING]));
        assert_eq!(decode(&[b"  \r"]), lines(&[]));
        assert_eq!(decode(&[b"{"]).len(), 1);
    }

    #[test]
    fn an_oversized_line_is_refused_without_buffering_it() {
        let limit = 64;
        let mut decoder = NdjsonDecoder::with_max_message_size(limit);
        let long = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#,
            "a".repeat(500)
        );
        let mut items = Vec::new();
        for chunk in long.as_bytes().chunks(10) {
            decoder.push(chunk);
            assert!(decoder.buffered_len() <= limit + 10);
            items.extend(std::iter::from_fn(|| decoder.next_frame()));
        }
        assert!(matches!(
            items.as_slice(),
            [Err(NdjsonError::TooLarge { limit: 64 })]
        ));
        // The rest of the line is dropped as it arrives, not buffered.
        assert_eq!(decoder.buffered_len(), 0);
        decoder.push(format!("tail\n{PING}\n").as_bytes());
        assert!(matches!(decoder.next_frame(), Some(Ok(Frame::Single(_)))));
        assert!(decoder.next_frame().is_none());
        assert!(decoder.finish().is_none());
    }

    #[test]
    fn an_oversized_line_is_refused_however_it_arrives() {
        let long = "x".repeat(100);
        let stream = format!("{long}\n{PING}\n{long}");
        for chunk in [1, 7, 64, 65, 1000] {
            let chunks: Vec<&[u8]> = stream.as_bytes().chunks(chunk).collect();
            assert_eq!(
                decode_with_limit(64, &chunks),
                lines(&[
                    "error: message exceeds the size limit of 64 bytes",
                    PING,
                    "error: message exceeds the size limit of 64 bytes",
                ]),
                "chunks of {chunk}"
            );
        }
    }

    #[test]
    fn the_limit_is_inclusive_and_counts_a_trailing_cr() {
        let at_limit = format!("{PING}\n");
        assert_eq!(
            decode_with_limit(PING.len(), &[at_limit.as_bytes()]),
            lines(&[PING])
        );
        let over = format!("{PING}\r\n");
        assert_eq!(
            decode_with_limit(PING.len(), &[over.as_bytes()]),
            lines(&[&format!(
                "error: message exceeds the size limit of {} bytes",
                PING.len()
            )])
        );
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped_once() {
        let stream = format!("\u{FEFF}{PING}\n\u{FEFF}{PING}\n");
        let items = decode(&[stream.as_bytes()]);
        assert_eq!(items.len(), 2);
        assert_eq!(items[0], PING);
        let expected = format!("error: line of {} bytes", PING.len() + 3);
        assert!(items[1].starts_with(&expected), "{}", items[1]);
    }

    #[test]
    fn searching_resumes_where_it_stopped() {
        // A long line arriving in small chunks is searched once, and the
        // buffer does not keep lines already consumed: the two halves of the
        // O(n) guarantee.
        let mut decoder = NdjsonDecoder::new();
        for _ in 0..1000 {
            decoder.push(&[b' '; 64]);
            assert!(decoder.next_frame().is_none());
            assert_eq!(decoder.input.scanned, decoder.input.buf.len());
        }
        decoder.push(b"\n");
        assert!(decoder.next_frame().is_none());
        for _ in 0..1000 {
            decoder.push(format!("{PING}\n{}", &PING[..5]).as_bytes());
            assert!(matches!(decoder.next_frame(), Some(Ok(_))));
            decoder.push(&PING.as_bytes()[5..]);
            assert!(decoder.next_frame().is_none());
            decoder.push(b"\n");
            assert!(matches!(decoder.next_frame(), Some(Ok(_))));
            assert!(decoder.input.buf.len() <= 2 * (PING.len() + 6));
        }
    }

    #[test]
    fn encode_writes_one_compact_line() {
        let message = Message::request(
            7,
            "tools/call",
            Some(&serde_json::json!({"text": "a\nb\r\nc"})),
        )
        .unwrap();
        let mut out = b"previous\n".to_vec();
        encode(&message, &mut out).unwrap();
        let line = &out[b"previous\n".len()..];
        assert_eq!(memchr(b'\n', line), Some(line.len() - 1));
        assert!(!line.contains(&b'\r'));
        let mut decoder = NdjsonDecoder::new();
        decoder.push(&out);
        assert!(matches!(
            decoder.next_frame(),
            Some(Err(NdjsonError::NotJson { .. }))
        ));
        match decoder.next_frame() {
            Some(Ok(Frame::Single(decoded))) => assert_eq!(decoded, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn encode_flattens_line_breaks_in_raw_payloads() {
        // A payload decoded from a pretty-printed peer keeps its line breaks.
        let params =
            RawValue::from_string("{\n  \"a\": [1,\r\n 2],\n  \"b\": \"x\\ny\"\n}".to_owned())
                .unwrap();
        let message = Message::Request(Request {
            id: RequestId::String("r".to_owned()),
            method: "m".to_owned(),
            params: Some(params.into()),
        });
        let mut out = Vec::new();
        encode(&message, &mut out).unwrap();
        assert_eq!(memchr2(b'\n', b'\r', &out), Some(out.len() - 1));
        let decoded = Frame::from_slice(&out).unwrap();
        assert_eq!(decoded, Frame::Single(message));
    }

    #[test]
    fn encode_writes_exactly_what_serde_writes() {
        // The envelope is written by hand; every shape must match the
        // `Serialize` implementation byte for byte.
        let lines = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b\u0001","method":"m\né","params":[1,2]}"#,
            r#"{"jsonrpc":"2.0","id":-3,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1.5}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":9,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":"x","result":null}"#,
            r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no \"such\""}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":{"at":3}}}"#,
        ];
        let mut messages = Vec::new();
        for line in lines {
            let Frame::Single(message) = Frame::from_slice(line.as_bytes()).unwrap() else {
                panic!("{line} is not a single message");
            };
            let mut out = Vec::new();
            encode(&message, &mut out).unwrap();
            let mut expected = serde_json::to_vec(&message).unwrap();
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(expected).unwrap()
            );
            messages.push(message);
        }
        let frame = Frame::Batch(messages);
        let mut out = Vec::new();
        encode_frame(&frame, &mut out).unwrap();
        let mut expected = serde_json::to_vec(&frame).unwrap();
        expected.push(b'\n');
        assert_eq!(out, expected);
    }

    #[test]
    fn a_line_break_inside_a_peers_string_is_not_written_as_a_space() {
        // The scanner keeps a result's bytes raw; this one is invalid JSON
        // (a raw CR in a string), which fails at the caller's decode. A
        // space in its place would make it valid, and mean something else.
        let frame =
            Frame::from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"x\":\"a\rb\"}}")
                .expect("the envelope is read; the result stays raw");
        let mut out = b"before\n".to_vec();
        assert!(matches!(
            encode_frame(&frame, &mut out),
            Err(EncodeError::LineBreakInString)
        ));
        assert_eq!(out, b"before\n", "nothing is appended");
        let Frame::Single(message) = &frame else {
            panic!("{frame:?} is one message");
        };
        assert!(matches!(
            encode(message, &mut out),
            Err(EncodeError::LineBreakInString)
        ));
        assert_eq!(out, b"before\n", "nothing is appended");
        // Between tokens a break is whitespace, and a space means the same.
        let frame = Frame::from_slice(
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\r\n\"x\":\"a\\r\\\"b\"}}",
        )
        .unwrap();
        let mut out = Vec::new();
        encode_frame(&frame, &mut out).unwrap();
        assert_eq!(
            out,
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{  \"x\":\"a\\r\\\"b\"}}\n"
        );
        assert_eq!(Frame::from_slice(&out).unwrap(), frame);
    }

    #[test]
    fn encode_frame_writes_batches_on_one_line() {
        let frame = Frame::from_slice(format!("[{PING},{INITIALIZED}]").as_bytes()).unwrap();
        let mut out = Vec::new();
        encode_frame(&frame, &mut out).unwrap();
        assert_eq!(out, format!("[{PING},{INITIALIZED}]\n").into_bytes());
    }
}

//! Server-Sent Events, the stream format of Streamable HTTP responses and GET listening streams.
//!
//! The decoder follows WHATWG HTML §9.2.6 "Interpreting an event stream"
//! line for line; the comments below cite its steps. It knows nothing of
//! JSON-RPC: the caller decides which events carry messages (MCP spec,
//! "Transports" §Streamable HTTP: events of type `message` whose data is not
//! empty) and decodes their data.
//!
//! Two choices go beyond the WHATWG text, both for a client that must not be
//! tricked into unbounded work:
//!
//! - Invalid UTF-8. WHATWG decodes the stream lossily, which would hand a
//!   JSON decoder a message with replacement characters in place of what the
//!   server sent. Instead, when the value of an `event`, `data` or `id` field
//!   is not UTF-8, the event being built is refused with
//!   [`SseError::InvalidUtf8`]. Comments and unknown fields are ignored
//!   whatever bytes they hold.
//! - Long ids. Every event carries a copy of the last event id, so an id of
//!   many megabytes followed by many tiny events would cost a copy each. Ids
//!   longer than 4096 bytes are ignored like ids that contain NUL; a
//!   `Last-Event-ID` header that long would be refused by most servers anyway.

use std::mem;
use std::str;

use memchr::{memchr, memchr2};

use super::{BOM, Input};

/// The largest event [`SseDecoder::new`] accepts: 64 MiB.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 64 * 1024 * 1024;

/// Ids longer than this are ignored (see the module documentation).
const MAX_ID_LEN: usize = 4096;

/// A `data` line still incomplete at this length has its value moved into
/// the event's data as it arrives, rather than held in the input until its
/// line ending (see [`SseDecoder::stream_data`]).
const STREAM_AFTER: usize = 4096;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type: the last `event` field of the block, or `message`
    /// when there was none or it was empty.
    pub event: String,
    /// The `data` fields of the block joined with `\n`. Empty when the block
    /// held only empty `data` fields, as a 2025-11-25 priming event does.
    pub data: String,
    /// The last event id when the event was dispatched: set by the latest
    /// `id` field of this block or any earlier one; `None` when it is empty.
    pub id: Option<String>,
    /// The reconnection time in milliseconds from a valid `retry` field in
    /// this event's block, if there was one.
    pub retry: Option<u64>,
}

/// An incremental SSE decoder: push bytes as they arrive, pop events.
///
/// Lines end in CR, LF or CRLF, a CRLF split across two pushes included. A
/// blank line ends a block; the block yields an event when it held at least
/// one `data` field. The event size limit bounds the data of one event plus
/// its type plus the line being read; when a block exceeds it, the decoder
/// yields [`SseError::TooLarge`] once, drops the block's data as it arrives,
/// and starts afresh after the block's blank line. The `id` and `retry`
/// fields of a refused block still take effect.
///
/// ```
/// use mcp_proto::codec::SseDecoder;
///
/// let mut decoder = SseDecoder::new();
/// decoder.push(b"id: 1\r\ndata:\r");
/// assert_eq!(decoder.next_event(), None);
/// decoder.push(b"\n\r\n: keep-alive\n");
/// let priming = decoder.next_event().unwrap().unwrap();
/// assert_eq!(priming.data, "");
/// assert_eq!(decoder.last_event_id(), Some("1"));
/// # assert!(decoder.next_event().is_none());
/// ```
#[derive(Debug)]
pub struct SseDecoder {
    input: Input,
    /// The line at the start of the input is being dropped up to its line
    /// ending (a comment, or a line over the limit), so its bytes are not
    /// buffered.
    skipping: bool,
    /// The last line ended in CR, so an LF next completes that line ending.
    after_cr: bool,
    /// The line at the start of the input goes on a `data` line whose
    /// field name and value so far are consumed: the value is already in
    /// the event's data, and this many bytes of the line before it (its
    /// `data:` and the optional space) count toward the size limit with it.
    streaming: Option<usize>,
    /// The start of the stream has been checked for a byte order mark.
    bom_checked: bool,
    fields: Fields,
    limit: usize,
}

impl SseDecoder {
    /// A decoder accepting events up to [`DEFAULT_MAX_EVENT_SIZE`].
    pub fn new() -> Self {
        Self::with_max_event_size(DEFAULT_MAX_EVENT_SIZE)
    }

    /// A decoder accepting events up to `limit` bytes.
    pub fn with_max_event_size(limit: usize) -> Self {
        SseDecoder {
            input: Input::default(),
            skipping: false,
            after_cr: false,
            streaming: None,
            bom_checked: false,
            fields: Fields::default(),
            limit,
        }
    }

    /// Appends bytes from the response body. Call
    /// [`next_event`](Self::next_event) until `None` afterwards: the decoder
    /// then holds at most the limit plus one chunk.
    ///
    /// A push that starts a `data` line of at least 4 KiB and holds no line
    /// ending, made when every earlier byte was consumed, has the line's
    /// value moved into the event's data at once instead of passing through
    /// the input first. A caller that pushes a chunk's complete lines,
    /// drains the events, and only then pushes the long line the chunk ends
    /// in the middle of, has a large message copied once.
    pub fn push(&mut self, bytes: &[u8]) {
        let mut bytes = bytes;
        if self.skipping && self.input.len() == 0 {
            // Keep the line ending, which `next_event` needs to see.
            match memchr2(b'\n', b'\r', bytes) {
                Some(end) => bytes = bytes.get(end..).unwrap_or_default(),
                None => return,
            }
        } else if self.input.len() == 0 {
            bytes = match self.streaming {
                Some(_) => self.stream_pushed(bytes),
                None => self.stream_started(bytes),
            };
        } else if self.streaming.is_some() {
            bytes = self.complete_cut(bytes);
        }
        self.input.push(bytes);
    }

    /// While a `data` line is being moved, the input holds what the last
    /// push could not move: most often the start of a character that the
    /// chunk cut. That character is completed from `bytes` and moved, and
    /// the rest of `bytes` goes on as [`SseDecoder::stream_pushed`] does,
    /// instead of passing through the input whole: text that is not ASCII
    /// would otherwise have nearly every chunk copied twice. Returns the
    /// bytes left for the input (all of them when the input holds anything
    /// else, such as a line ending or bytes that are not UTF-8).
    fn complete_cut<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let held = self.input.unconsumed();
        let width = match held.first() {
            Some(0xc0..=0xdf) => 2,
            Some(0xe0..=0xef) => 3,
            Some(0xf0..=0xf7) => 4,
            _ => return bytes,
        };
        let Some(needed) = usize::checked_sub(width, held.len()).filter(|n| *n > 0) else {
            return bytes;
        };
        let (piece, rest) = bytes.split_at(needed.min(bytes.len()));
        let consumed = self.streaming.unwrap_or(0);
        if memchr2(b'\n', b'\r', held).is_some()
            || memchr2(b'\n', b'\r', piece).is_some()
            || self.fields.held() + consumed + held.len() + piece.len() > self.limit
        {
            return bytes;
        }
        self.input.push(piece);
        let valid = push_valid(&mut self.fields.data, self.input.unconsumed());
        self.input.skip(valid);
        if self.input.len() == 0 {
            self.stream_pushed(rest)
        } else {
            rest
        }
    }

    /// What [`SseDecoder::next_event`] does with a long `data` line cut
    /// short at the end of the input ([`SseDecoder::check_partial_line`],
    /// [`SseDecoder::stream_data`]), done as `bytes` are pushed when they
    /// start that line and the input holds nothing: the value's whole UTF-8
    /// characters go straight into the event's data. Returns the bytes left
    /// for the input (all of them when `bytes` are not such a line).
    fn stream_started<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        if bytes.len() < STREAM_AFTER || self.fields.failed {
            return bytes;
        }
        let start = match bytes.strip_prefix(b"data:") {
            Some(value) if value.first() == Some(&b' ') => 6,
            Some(_) => 5,
            None => return bytes,
        };
        // A line that ends here, or that cannot fit, is read as usual.
        if self.fields.held() + bytes.len() > self.limit || memchr2(b'\n', b'\r', bytes).is_some() {
            return bytes;
        }
        // `next_event`'s first steps at the start of a line: a `d` is
        // neither a byte order mark's first byte nor the LF of a CRLF.
        self.bom_checked = true;
        self.after_cr = false;
        let value = bytes.get(start..).unwrap_or_default();
        let valid = push_valid(&mut self.fields.data, value);
        self.streaming = Some(start);
        bytes.get(start + valid..).unwrap_or_default()
    }

    /// [`SseDecoder::stream_data`] for bytes just pushed while a `data`
    /// line is being moved and the input holds nothing: the value up to
    /// the line ending (or the end of `bytes`) goes straight into the
    /// event's data, without passing through the input, when it fits the
    /// limit; its whole UTF-8 characters, that is. Returns the bytes left
    /// for the input.
    fn stream_pushed<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let end = memchr2(b'\n', b'\r', bytes).unwrap_or(bytes.len());
        let value = bytes.get(..end).unwrap_or_default();
        let consumed = self.streaming.unwrap_or(0);
        if self.fields.held() + consumed + value.len() > self.limit {
            return bytes;
        }
        let valid = push_valid(&mut self.fields.data, value);
        bytes.get(valid..).unwrap_or_default()
    }

    /// Pops the next event, or an error for an event that was refused:
    /// `None` when no further event is complete.
    pub fn next_event(&mut self) -> Option<Result<SseEvent, SseError>> {
        loop {
            if !self.bom_checked {
                // §9.2.6: "One leading U+FEFF BYTE ORDER MARK character must
                // be ignored if any are present." It may arrive split.
                let head = self.input.unconsumed();
                let n = head.len().min(BOM.len());
                if head.get(..n) != BOM.get(..n) {
                    self.bom_checked = true;
                } else if n == BOM.len() {
                    self.input.skip(n);
                    self.bom_checked = true;
                } else {
                    return None;
                }
            }
            if self.after_cr {
                // A CR and the LF after it are one line ending, even when
                // they arrive in different pushes.
                let first = *self.input.unconsumed().first()?;
                self.after_cr = false;
                if first == b'\n' {
                    self.input.skip(1);
                }
            }
            let Some(end) = self
                .input
                .find_line_end(|bytes| memchr2(b'\n', b'\r', bytes))
            else {
                return self.check_partial_line();
            };
            let skipped = mem::take(&mut self.skipping);
            let streamed = self.streaming.take();
            let (line, terminator) = self.input.take_line(end);
            self.after_cr = terminator == Some(b'\r');
            if skipped {
                continue;
            }
            let item = match streamed {
                Some(prefix) => self.fields.data_end(prefix, line, self.limit),
                None => self.fields.line(line, self.limit),
            };
            if let Some(item) = item {
                return Some(item);
            }
        }
    }

    /// At end of input: pops the events that are complete, then discards
    /// the incomplete one. §9.2.6: "If the file ends in the middle of an
    /// event, before the final empty line, the incomplete event is not
    /// dispatched." Call until `None`.
    ///
    /// The decoder may then read the stream that resumes it after a
    /// reconnection: [`last_event_id`](Self::last_event_id) and
    /// [`retry_ms`](Self::retry_ms) are kept, and events on the new stream
    /// carry the last id until it sends another.
    pub fn finish(&mut self) -> Option<Result<SseEvent, SseError>> {
        if let Some(item) = self.next_event() {
            return Some(item);
        }
        self.input.reset();
        self.skipping = false;
        self.streaming = None;
        self.after_cr = false;
        self.bom_checked = false;
        self.fields.end_of_stream();
        None
    }

    /// The last event id, to send as `Last-Event-ID` when reconnecting:
    /// the id buffer as of the last blank line, `None` when empty.
    pub fn last_event_id(&self) -> Option<&str> {
        let id = self.fields.last_event_id.as_str();
        (!id.is_empty()).then_some(id)
    }

    /// Gives the decoder a buffer to collect the next event's data in: the
    /// data of an earlier event that is no longer needed (its text, once
    /// decoded), emptied here. A stream of large events then fills one
    /// allocation again and again instead of growing a new one, by
    /// doubling, for each event. The buffer is dropped instead when the
    /// decoder already holds data of the event being read, or a buffer at
    /// least as large.
    pub fn recycle(&mut self, mut buffer: String) {
        if self.fields.data.is_empty() && buffer.capacity() > self.fields.data.capacity() {
            buffer.clear();
            self.fields.data = buffer;
        }
    }

    /// The latest valid `retry` field, in milliseconds. Values beyond
    /// `u64::MAX` saturate.
    pub fn retry_ms(&self) -> Option<u64> {
        self.fields.retry
    }

    /// The bytes held for the event being read: input not yet consumed, plus
    /// the data and type collected so far. After the ready events are
    /// popped this is at most the event size limit, or 2 bytes when the
    /// limit is smaller: the start of a byte-order mark split across pushes
    /// is held until it is complete or ruled out.
    pub fn buffered_len(&self) -> usize {
        self.input.len() + self.fields.held()
    }

    /// Handles the incomplete line at the end of the input: a comment or a
    /// line that cannot fit is dropped now rather than buffered to its end;
    /// a long `data` line's value so far is moved into the event's data.
    fn check_partial_line(&mut self) -> Option<Result<SseEvent, SseError>> {
        let partial = self.input.unconsumed();
        let &first = partial.first()?;
        let comment = self.streaming.is_none() && first == b':';
        let consumed = self.streaming.unwrap_or(0);
        let too_large = self.fields.held() + consumed + partial.len() > self.limit;
        if !(self.skipping || comment || too_large) {
            self.stream_data();
            return None;
        }
        let report = !self.skipping && !comment;
        self.input.discard_unconsumed();
        self.skipping = true;
        self.streaming = None;
        if report {
            return self.fields.fail(SseError::TooLarge { limit: self.limit });
        }
        None
    }

    /// Moves the value of the incomplete `data` line at the start of the
    /// input into the event's data, once the line is [`STREAM_AFTER`] bytes
    /// long: a large message is then copied once, from the pushed bytes to
    /// the text that becomes the frame's, instead of being held in the
    /// input (grown by doubling to the line's size) and copied again at
    /// its line ending. Only whole UTF-8 characters are moved; a character
    /// cut by the end of the input waits for the next push, and bytes that
    /// are not UTF-8 stay in the input for the line's end to refuse. The
    /// events, errors and limits are those of reading the line whole.
    fn stream_data(&mut self) {
        if self.skipping || self.fields.failed {
            return;
        }
        let partial = self.input.unconsumed();
        let start = match self.streaming {
            Some(_) => 0,
            None if partial.len() < STREAM_AFTER => return,
            None => match partial.strip_prefix(b"data:") {
                Some(value) if value.first() == Some(&b' ') => 6,
                Some(_) => 5,
                None => return,
            },
        };
        let value = partial.get(start..).unwrap_or_default();
        let valid = push_valid(&mut self.fields.data, value);
        self.input.skip(start + valid);
        if self.streaming.is_none() {
            self.streaming = Some(start);
        }
    }
}

/// Appends the longest prefix of `value` that is UTF-8 to `data` and
/// returns its length. The whole of `value` is checked once (a chunk of a
/// large event is checked while it is still in the cache from the search
/// for its line ending); only a prefix cut short by a character, or by
/// bytes that are not UTF-8, is checked again.
fn push_valid(data: &mut String, value: &[u8]) -> usize {
    match str::from_utf8(value) {
        Ok(text) => {
            data.push_str(text);
            value.len()
        }
        Err(error) => {
            let valid = error.valid_up_to();
            if let Ok(text) = str::from_utf8(value.get(..valid).unwrap_or_default()) {
                data.push_str(text);
            }
            valid
        }
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

/// Why an event was refused. Decoding goes on with the next event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// The event was larger than the limit; it was discarded.
    #[error("event exceeds the size limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A field of the event was not valid UTF-8; the event was discarded.
    #[error("event field is not valid UTF-8")]
    InvalidUtf8,
}

/// Appends `event` in wire form, for test servers: `event` (unless it is
/// `message`, the default), `id`, `retry` and one `data` line per line of
/// data, then the blank line that dispatches it.
///
/// Line breaks in the data become separate `data` lines, so a CR or CRLF in
/// the data decodes as LF. An event type or id cannot hold a line break on
/// the wire; CR and LF are dropped from them.
pub fn encode_event(event: &SseEvent, out: &mut String) {
    if !event.event.is_empty() && event.event != "message" {
        write_field(out, "event", &event.event);
    }
    if let Some(id) = &event.id {
        write_field(out, "id", id);
    }
    if let Some(retry) = event.retry {
        write_field(out, "retry", &retry.to_string());
    }
    let mut rest = event.data.as_str();
    loop {
        match rest.find(['\r', '\n']) {
            Some(at) => {
                let (line, tail) = rest.split_at(at);
                write_field(out, "data", line);
                rest = tail
                    .strip_prefix("\r\n")
                    .or_else(|| tail.get(1..))
                    .unwrap_or_default();
            }
            None => {
                write_field(out, "data", rest);
                break;
            }
        }
    }
    out.push('\n');
}

/// Writes `name: value` (or `name:` for an empty value, as priming events
/// look on the wire). The space keeps a value that starts with a space
/// intact, since the decoder removes exactly one.
fn write_field(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push(':');
    if !value.is_empty() {
        out.push(' ');
        out.extend(value.chars().filter(|c| !matches!(c, '\r' | '\n')));
    }
    out.push('\n');
}

/// The buffers of §9.2.6 and what persists between events.
#[derive(Debug, Default)]
struct Fields {
    /// The data buffer: each `data` value followed by LF.
    data: String,
    /// The event type buffer.
    event_type: String,
    /// The block was refused; its `data` and `event` fields are dropped up
    /// to its blank line.
    failed: bool,
    /// A valid `retry` field of the current block.
    block_retry: Option<u64>,
    /// The last event ID buffer, which persists across events.
    id_buffer: String,
    /// The event source's last event ID string, set from the buffer at each
    /// blank line.
    last_event_id: String,
    /// The event stream's reconnection time.
    retry: Option<u64>,
}

impl Fields {
    /// The bytes held for the event being built.
    fn held(&self) -> usize {
        self.data.len() + self.event_type.len()
    }

    /// Processes one complete line (§9.2.6, "the stream must then be parsed
    /// by reading everything line by line").
    fn line(&mut self, line: &[u8], limit: usize) -> Option<Result<SseEvent, SseError>> {
        // "If the line is empty (a blank line): Dispatch the event."
        let &first = match line.first() {
            Some(first) => first,
            None => return self.dispatch(),
        };
        // "If the line starts with a U+003A COLON character (:): Ignore the line."
        if first == b':' {
            return None;
        }
        if self.held() + line.len() > limit {
            return self.fail(SseError::TooLarge { limit });
        }
        // "If the line contains a U+003A COLON character: Collect the
        // characters on the line before the first colon, and let field be
        // that string. Collect the characters on the line after the first
        // colon, and let value be that string. If value starts with a U+0020
        // SPACE character, remove it from value." Otherwise the whole line
        // is the field name and the value is empty.
        let (name, value) = match memchr(b':', line) {
            Some(colon) => {
                let value = line.get(colon + 1..).unwrap_or_default();
                (
                    line.get(..colon).unwrap_or_default(),
                    value.strip_prefix(b" ").unwrap_or(value),
                )
            }
            None => (line, &b""[..]),
        };
        match name {
            b"event" | b"data" if self.failed => {}
            // "Set the event type buffer to field value."
            b"event" => match str::from_utf8(value) {
                Ok(value) => {
                    self.event_type.clear();
                    self.event_type.push_str(value);
                }
                Err(_) => return self.fail(SseError::InvalidUtf8),
            },
            // "Append the field value to the data buffer, then append a
            // single U+000A LINE FEED (LF) character to the data buffer."
            b"data" => match str::from_utf8(value) {
                Ok(value) => {
                    // Room for the LF too: a large value pushed alone and
                    // then its LF would double the buffer for one byte.
                    self.data.reserve(value.len() + 1);
                    self.data.push_str(value);
                    self.data.push('\n');
                }
                Err(_) => return self.fail(SseError::InvalidUtf8),
            },
            // "If the field value does not contain U+0000 NULL, then set the
            // last event ID buffer to the field value. Otherwise, ignore the
            // field."
            b"id" if memchr(0, value).is_some() || value.len() > MAX_ID_LEN => {}
            b"id" => match str::from_utf8(value) {
                Ok(value) => {
                    self.id_buffer.clear();
                    self.id_buffer.push_str(value);
                }
                Err(_) => return self.fail(SseError::InvalidUtf8),
            },
            // "If the field value consists of only ASCII digits, then
            // interpret the field value as an integer in base ten, and set
            // the event stream's reconnection time to that integer.
            // Otherwise, ignore the field." An empty value is ignored too.
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |ms, digit| {
                    ms.saturating_mul(10)
                        .saturating_add(u64::from(digit - b'0'))
                });
                self.block_retry = Some(ms);
                self.retry = Some(ms);
            }
            // "Otherwise: The field is ignored."
            _ => {}
        }
        None
    }

    /// The end of a `data` line whose value so far was moved into the data
    /// buffer ([`SseDecoder::stream_data`]): `rest` is the remainder of the
    /// value, and `prefix` the bytes of the line before the value, so that
    /// the size limit and UTF-8 check are those of [`Fields::line`].
    fn data_end(
        &mut self,
        prefix: usize,
        rest: &[u8],
        limit: usize,
    ) -> Option<Result<SseEvent, SseError>> {
        if self.failed {
            return None;
        }
        if self.held() + prefix + rest.len() > limit {
            return self.fail(SseError::TooLarge { limit });
        }
        match str::from_utf8(rest) {
            Ok(rest) => {
                self.data.reserve(rest.len() + 1);
                self.data.push_str(rest);
                self.data.push('\n');
                None
            }
            Err(_) => self.fail(SseError::InvalidUtf8),
        }
    }

    /// §9.2.6 "dispatch the event", at a blank line.
    fn dispatch(&mut self) -> Option<Result<SseEvent, SseError>> {
        // Step 1: the last event ID string is set even when no event follows.
        if self.last_event_id != self.id_buffer {
            self.last_event_id.clone_from(&self.id_buffer);
        }
        let retry = self.block_retry.take();
        let event_type = mem::take(&mut self.event_type);
        self.failed = false;
        // Step 2: no `data` field at all means no event. A refused block's
        // data buffer is empty too.
        if self.data.is_empty() {
            return None;
        }
        // Step 3: remove the LF that follows the last data value. Empty
        // data (a priming event's) leaves the buffer, and the capacity it
        // may have been recycled with, for the next event.
        let data = if self.data == "\n" {
            self.data.clear();
            String::new()
        } else {
            let mut data = mem::take(&mut self.data);
            data.pop();
            data
        };
        Some(Ok(SseEvent {
            // Steps 5-6: the type is `message` unless the buffer says otherwise.
            event: if event_type.is_empty() {
                "message".to_owned()
            } else {
                event_type
            },
            data,
            id: (!self.last_event_id.is_empty()).then(|| self.last_event_id.clone()),
            retry,
        }))
    }

    /// Refuses the block being read, reporting it once.
    fn fail(&mut self, error: SseError) -> Option<Result<SseEvent, SseError>> {
        if mem::replace(&mut self.failed, true) {
            return None;
        }
        self.data = String::new();
        self.event_type = String::new();
        Some(Err(error))
    }

    /// Discards the incomplete block at the end of a stream, keeping what
    /// persists across reconnections.
    fn end_of_stream(&mut self) {
        self.data = String::new();
        self.event_type = String::new();
        self.failed = false;
        self.block_retry = None;
        // An `id` field of the discarded block was never dispatched.
        self.id_buffer.clone_from(&self.last_event_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(item: Result<SseEvent, SseError>) -> String {
        match item {
            Ok(event) => {
                let mut text = format!("{} {:?}", event.event, event.data);
                if let Some(id) = event.id {
                    text.push_str(&format!(" id={id:?}"));
                }
                if let Some(retry) = event.retry {
                    text.push_str(&format!(" retry={retry}"));
                }
                text
            }
            Err(error) => format!("error: {error}"),
        }
    }

    /// Decodes `chunks` pushed one by one (draining after each push, then
    /// `finish`), checks that pushing the same bytes whole and byte by byte
    /// gives the same events and state, and returns the decoder with each
    /// item rendered as a line of text.
    fn run_with_limit(limit: usize, chunks: &[&[u8]]) -> (SseDecoder, Vec<String>) {
        let run = |chunks: &mut dyn Iterator<Item = &[u8]>| {
            let mut decoder = SseDecoder::with_max_event_size(limit);
            let mut items = Vec::new();
            for chunk in chunks {
                decoder.push(chunk);
                assert!(decoder.buffered_len() <= limit + chunk.len());
                items.extend(std::iter::from_fn(|| decoder.next_event()).map(render));
                assert!(decoder.buffered_len() <= limit);
            }
            items.extend(std::iter::from_fn(|| decoder.finish()).map(render));
            assert_eq!(decoder.buffered_len(), 0);
            (decoder, items)
        };
        let (decoder, items) = run(&mut chunks.iter().copied());
        let whole = chunks.concat();
        for (name, (other, other_items)) in [
            ("whole", run(&mut std::iter::once(&whole[..]))),
            ("byte by byte", run(&mut whole.chunks(1))),
        ] {
            assert_eq!(other_items, items, "{name}");
            assert_eq!(other.last_event_id(), decoder.last_event_id(), "{name}");
            assert_eq!(other.retry_ms(), decoder.retry_ms(), "{name}");
        }
        (decoder, items)
    }

    fn decode(stream: impl AsRef<[u8]>) -> Vec<String> {
        run_with_limit(DEFAULT_MAX_EVENT_SIZE, &[stream.as_ref()]).1
    }

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<String> {
        run_with_limit(DEFAULT_MAX_EVENT_SIZE, chunks).1
    }

    fn after(stream: impl AsRef<[u8]>) -> SseDecoder {
        run_with_limit(DEFAULT_MAX_EVENT_SIZE, &[stream.as_ref()]).0
    }

    #[test]
    fn lf_crlf_and_cr_all_end_lines() {
        for eol in ["\n", "\r\n", "\r"] {
            let stream = format!("data: a{eol}data: b{eol}{eol}event: x{eol}data: c{eol}{eol}");
            assert_eq!(decode(stream), [r#"message "a\nb""#, r#"x "c""#], "{eol:?}");
        }
        assert_eq!(
            decode("data: a\rdata: b\r\n\ndata: c\n\r"),
            [r#"message "a\nb""#, r#"message "c""#]
        );
    }

    #[test]
    fn cr_and_lf_split_across_pushes_are_one_line_ending() {
        // Were the CR and LF two endings, the blank line between them would
        // dispatch `a` on its own.
        assert_eq!(
            decode_chunks(&[b"data: a\r", b"\ndata: b\r", b"", b"\n\r", b"\n"]),
            [r#"message "a\nb""#]
        );
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: a\r");
        assert_eq!(decoder.next_event(), None);
        decoder.push(b"\n");
        assert_eq!(decoder.next_event(), None);
        decoder.push(b"\r");
        assert_eq!(
            decoder.next_event().map(render).as_deref(),
            Some(r#"message "a""#)
        );
        // A lone CR at the end of a push ends the line; the next byte is not LF.
        assert_eq!(decode_chunks(&[b"data: a\r", b"\r"]), [r#"message "a""#]);
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped_once() {
        assert_eq!(decode("\u{FEFF}data: x\n\n"), [r#"message "x""#]);
        assert_eq!(
            decode_chunks(&[b"\xEF", b"\xBB", b"\xBF", b"data: x\n\n"]),
            [r#"message "x""#]
        );
        // A second mark is part of the first field's name: an unknown field.
        assert_eq!(decode("\u{FEFF}\u{FEFF}data: x\n\n"), Vec::<String>::new());
        assert_eq!(decode("data: a\n\n\u{FEFF}data: b\n\n"), [r#"message "a""#]);
        assert_eq!(
            decode(b"\xEF\xBBdata: x\n\ndata: y\n\n"),
            [r#"message "y""#]
        );
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(
            decode(": hello\ndata: a\n:\n: more\ndata: b\n\n\n: keep-alive\n\n"),
            [r#"message "a\nb""#]
        );
    }

    #[test]
    fn a_long_comment_is_dropped_without_counting_against_the_limit() {
        let comment = format!(":{}\r\n", "x".repeat(200));
        let stream = format!("{comment}data: ok\n{comment}\n");
        let chunks: Vec<&[u8]> = stream.as_bytes().chunks(16).collect();
        assert_eq!(run_with_limit(16, &chunks).1, [r#"message "ok""#]);
    }

    #[test]
    fn one_space_after_the_colon_is_removed() {
        assert_eq!(decode("data:x\n\n"), [r#"message "x""#]);
        assert_eq!(decode("data:  x\n\n"), [r#"message " x""#]);
        assert_eq!(decode("data: \n\n"), [r#"message """#]);
        assert_eq!(decode("data:x:y\n\n"), [r#"message "x:y""#]);
        // A line without a colon is a field name with an empty value.
        assert_eq!(decode("data\n\n"), [r#"message """#]);
    }

    #[test]
    fn data_lines_join_with_lf() {
        assert_eq!(
            decode("data: a\ndata:\ndata: b\n\n"),
            [r#"message "a\n\nb""#]
        );
        assert_eq!(decode("data: a\ndata:\n\n"), [r#"message "a\n""#]);
        assert_eq!(
            decode("data: {\"jsonrpc\":\ndata: \"2.0\"}\n\n"),
            [r#"message "{\"jsonrpc\":\n\"2.0\"}""#]
        );
    }

    #[test]
    fn the_event_field_sets_the_type_of_one_event() {
        assert_eq!(
            decode("event: ping\ndata: x\n\ndata: y\n\nevent:\ndata: z\n\nevent: a\n\ndata: b\n\n"),
            [
                r#"ping "x""#,
                r#"message "y""#,
                r#"message "z""#,
                r#"message "b""#
            ]
        );
    }

    #[test]
    fn a_priming_event_is_dispatched_with_empty_data() {
        // MCP 2025-11-25 priming events: an id and an empty data field.
        let decoder = after("id: 0\ndata:\n\n");
        assert_eq!(decoder.last_event_id(), Some("0"));
        assert_eq!(decode("id: 0\ndata:\n\n"), [r#"message "" id="0""#]);
        assert_eq!(decode("id: 0\r\ndata:\r\n\r\n"), [r#"message "" id="0""#]);
    }

    #[test]
    fn a_block_without_data_dispatches_nothing_but_sets_id_and_retry() {
        let (decoder, items) = run_with_limit(DEFAULT_MAX_EVENT_SIZE, &[b"id: 7\nretry: 250\n\n"]);
        assert_eq!(items, Vec::<String>::new());
        assert_eq!(decoder.last_event_id(), Some("7"));
        assert_eq!(decoder.retry_ms(), Some(250));
    }

    #[test]
    fn the_last_event_id_persists_until_changed() {
        assert_eq!(
            decode(
                "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 2\ndata: d\n\nid:\ndata: e\n\n"
            ),
            [
                r#"message "a" id="1""#,
                r#"message "b" id="1""#,
                r#"message "c""#,
                r#"message "d" id="2""#,
                r#"message "e""#,
            ]
        );
        assert_eq!(after("id: 1\ndata: a\n\nid\n\n").last_event_id(), None);
    }

    #[test]
    fn an_id_takes_effect_only_at_the_blank_line() {
        let (decoder, items) = run_with_limit(
            DEFAULT_MAX_EVENT_SIZE,
            &[b"id: 1\ndata: a\n\nid: 9\ndata: b\n"],
        );
        assert_eq!(items, [r#"message "a" id="1""#]);
        assert_eq!(decoder.last_event_id(), Some("1"));
    }

    #[test]
    fn an_id_containing_nul_is_ignored() {
        assert_eq!(
            decode("id: 1\ndata: a\n\nid: x\0y\ndata: b\n\n"),
            [r#"message "a" id="1""#, r#"message "b" id="1""#]
        );
    }

    #[test]
    fn an_overlong_id_is_ignored() {
        let longest = "i".repeat(MAX_ID_LEN);
        let stream = format!("id: {longest}\n\nid: {longest}i\ndata: x\n\n");
        assert_eq!(after(&stream).last_event_id(), Some(longest.as_str()));
        assert_eq!(decode(&stream), [format!("message \"x\" id={longest:?}")]);
    }

    #[test]
    fn retry_takes_only_ascii_digits() {
        assert_eq!(
            decode("retry: 1500\ndata: x\n\ndata: y\n\n"),
            [r#"message "x" retry=1500"#, r#"message "y""#]
        );
        assert_eq!(after("retry: 1500\n\n").retry_ms(), Some(1500));
        for bad in ["15s", "-1", "", " 5", "1.5", "+5", "٣"] {
            let stream = format!("retry: 10\n\nretry: {bad}\ndata: x\n\n");
            assert_eq!(decode(&stream), [r#"message "x""#], "{bad:?}");
            assert_eq!(after(&stream).retry_ms(), Some(10), "{bad:?}");
        }
        assert_eq!(
            after("retry: 99999999999999999999999\n").retry_ms(),
            Some(u64::MAX)
        );
        assert_eq!(after("retry:0\n").retry_ms(), Some(0));
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert_eq!(
            decode("foo: bar\nData: x\nid : 3\ndata: y\n\n"),
            [r#"message "y""#]
        );
    }

    #[test]
    fn finish_discards_an_incomplete_event() {
        assert_eq!(decode("data: x\n"), Vec::<String>::new());
        assert_eq!(decode("data: x"), Vec::<String>::new());
        assert_eq!(decode("data: x\n\ndata: y"), [r#"message "x""#]);
        assert_eq!(decode("data: x\r"), Vec::<String>::new());
    }

    #[test]
    fn finish_returns_a_pending_error() {
        let mut decoder = SseDecoder::with_max_event_size(8);
        decoder.push(b"data: 0123456789");
        assert!(matches!(
            decoder.finish(),
            Some(Err(SseError::TooLarge { limit: 8 }))
        ));
        assert_eq!(decoder.finish(), None);
    }

    #[test]
    fn an_oversized_event_is_refused_and_decoding_recovers() {
        let too_large = "error: event exceeds the size limit of 32 bytes";
        let big = format!("data: {}\n\ndata: ok\n\n", "x".repeat(40));
        for chunk in [1, 5, 32, 1000] {
            let chunks: Vec<&[u8]> = big.as_bytes().chunks(chunk).collect();
            assert_eq!(
                run_with_limit(32, &chunks).1,
                [too_large, r#"message "ok""#]
            );
        }
        // Many small data lines add up; the error comes once per event.
        let many = format!("{}\ndata: ok\n\n", "data: 0123456789\n".repeat(10));
        assert_eq!(
            run_with_limit(32, &[many.as_bytes()]).1,
            [too_large, r#"message "ok""#]
        );
        // The refused block's id still takes effect.
        let with_id = format!("id: 5\ndata: {}\nid: 6\n\ndata: ok\n\n", "x".repeat(40));
        assert_eq!(
            run_with_limit(32, &[with_id.as_bytes()]).1,
            [too_large, r#"message "ok" id="6""#]
        );
        // The limit is inclusive: data (with its LF) plus the line.
        assert_eq!(
            run_with_limit(16, &[b"data: 0123456789\n\n"]).1,
            [r#"message "0123456789""#]
        );
        assert_eq!(
            run_with_limit(15, &[b"data: 0123456789\n\n"]).1,
            ["error: event exceeds the size limit of 15 bytes"]
        );
    }

    #[test]
    fn invalid_utf8_refuses_the_event() {
        let invalid = "error: event field is not valid UTF-8";
        assert_eq!(
            decode(b"data: \xff\n\ndata: ok\n\n"),
            [invalid, r#"message "ok""#]
        );
        assert_eq!(decode(b"data: a\ndata: \xC3\ndata: \xff\n\n"), [invalid]);
        assert_eq!(decode(b"event: \xC3(\ndata: a\n\n"), [invalid]);
        let (decoder, items) =
            run_with_limit(DEFAULT_MAX_EVENT_SIZE, &[b"id: 1\n\nid: \xff\ndata: a\n\n"]);
        assert_eq!(items, [invalid]);
        assert_eq!(decoder.last_event_id(), Some("1"));
        // Bytes in comments and unknown fields are never decoded.
        assert_eq!(
            decode(b":\xff\n\xff: x\nx: \xff\ndata: ok\n\n"),
            [r#"message "ok""#]
        );
        // A character split across pushes is fine.
        let e_acute = "data: é\n\n".as_bytes();
        assert_eq!(
            decode_chunks(&[&e_acute[..7], &e_acute[7..]]),
            [r#"message "é""#]
        );
    }

    #[test]
    fn long_data_lines_moved_as_they_arrive_decode_as_when_read_whole() {
        // `run_with_limit` checks every case pushed whole, byte by byte and
        // in the chunks given: only the first moves nothing early.
        let long = "é:x".repeat(STREAM_AFTER);
        let run = |limit: usize, stream: &str| {
            let bytes = stream.as_bytes();
            let chunks: Vec<&[u8]> = bytes.chunks(STREAM_AFTER + 3).collect();
            run_with_limit(limit, &chunks).1
        };
        let message = |data: &str| format!("message {data:?}");
        // With and without the space; a value that goes on with a colon.
        for line in [format!("data: {long}"), format!("data:{long}")] {
            let stream = format!("{line}\ndata: :{long}\n\ndata: ok\n\n");
            assert_eq!(
                run(DEFAULT_MAX_EVENT_SIZE, &stream),
                [message(&format!("{long}\n:{long}")), message("ok")]
            );
        }
        // The limit counts the line's `data: ` too, to the byte.
        let exact = format!("data: {long}\n\n");
        let fits = exact.len() - 2;
        assert_eq!(run(fits, &exact), [message(&long)]);
        assert_eq!(
            run(fits - 1, &format!("{exact}data: ok\n\n")),
            [
                format!("error: event exceeds the size limit of {} bytes", fits - 1),
                message("ok")
            ]
        );
        // Bytes that are not UTF-8, early or late in a long line.
        let invalid = "error: event field is not valid UTF-8";
        for at in [10, long.len() - 2] {
            let mut bad = format!("data: {long}\n\ndata: ok\n\n").into_bytes();
            bad[6 + at] = 0xff;
            let chunks: Vec<&[u8]> = bad.chunks(STREAM_AFTER + 3).collect();
            assert_eq!(
                run_with_limit(DEFAULT_MAX_EVENT_SIZE, &chunks).1,
                [invalid.to_owned(), message("ok")]
            );
        }
        // A refused block's long data line is dropped; other long fields
        // are read whole.
        let refused = format!("event: ?\ndata: {long}\n\nevent: {long}\ndata: ok\n\n");
        let mut refused = refused.into_bytes();
        refused[7] = 0xff;
        assert_eq!(
            run_with_limit(DEFAULT_MAX_EVENT_SIZE, &[&refused]).1,
            [invalid.to_owned(), format!("{long} \"ok\"")]
        );
        // The end of the stream discards a long line cut short.
        assert_eq!(
            run(DEFAULT_MAX_EVENT_SIZE, &format!("data: ok\n\ndata: {long}")),
            [message("ok")]
        );
    }

    #[test]
    fn a_long_data_line_that_starts_a_push_goes_straight_into_the_data() {
        let long = "é:x".repeat(STREAM_AFTER);
        for (head, line) in [
            (&b"event: message\nid: 7\n"[..], format!("data: {long}")),
            (b"id: 7\r", format!("data:{long}")),
        ] {
            let mut decoder = SseDecoder::new();
            decoder.push(head);
            assert_eq!(decoder.next_event(), None);
            let cut = line.len() - long.len() + 2 * STREAM_AFTER;
            let (first, rest) = line.as_bytes().split_at(cut);
            decoder.push(first);
            assert_eq!(decoder.next_event(), None);
            assert_eq!(decoder.input.len(), 0);
            decoder.push(rest);
            decoder.push(b"\n\n");
            let event = decoder.next_event().unwrap().unwrap();
            assert_eq!(
                (event.event.as_str(), event.id.as_deref()),
                ("message", Some("7"))
            );
            assert_eq!(event.data, long);
            // The input grew for the short lines only, never for the long one.
            assert!(
                decoder.input.buf.capacity() < STREAM_AFTER,
                "the input grew to {} bytes",
                decoder.input.buf.capacity()
            );
        }
    }

    #[test]
    fn a_character_cut_between_pushes_of_a_long_data_line_is_completed_in_place() {
        // Two-, three- and four-byte characters, each cut after each of its
        // bytes but the last.
        for ch in ['é', '€', '𝄞'] {
            let long: String = std::iter::repeat_n(ch, 4 * STREAM_AFTER).collect();
            let stream = format!("data: {long}\n\n");
            let width = ch.len_utf8();
            for cut in 1..width {
                let mut decoder = SseDecoder::new();
                // Chunks of `STREAM_AFTER` characters, each ending `cut`
                // bytes into a character of the value.
                let mut ends: Vec<usize> =
                    (1..4).map(|n| 6 + n * STREAM_AFTER * width + cut).collect();
                ends.push(stream.len());
                let mut chunks = Vec::new();
                let mut at = 0;
                for end in ends {
                    chunks.push(&stream.as_bytes()[at..end]);
                    at = end;
                }
                for chunk in &chunks {
                    decoder.push(chunk);
                    if let Some(event) = decoder.next_event() {
                        assert_eq!(event.unwrap().data, long, "{ch} cut at {cut}");
                    }
                    assert!(decoder.input.len() < width, "{ch} cut at {cut}");
                }
                assert!(
                    decoder.input.buf.capacity() < STREAM_AFTER,
                    "{ch} cut at {cut}: the input grew to {} bytes",
                    decoder.input.buf.capacity()
                );
                assert_eq!(
                    run_with_limit(DEFAULT_MAX_EVENT_SIZE, &chunks).1,
                    [format!("message {long:?}")]
                );
            }
        }
    }

    #[test]
    fn a_recycled_buffer_collects_the_next_events_data() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: first\n\n");
        let first = decoder.next_event().unwrap().unwrap().data;
        let mut buffer = String::with_capacity(4096);
        buffer.push_str("left over");
        let at = buffer.as_ptr();
        decoder.recycle(buffer);
        decoder.push(b"data: second\n\n");
        let second = decoder.next_event().unwrap().unwrap().data;
        assert_eq!(second, "second");
        assert_eq!(second.as_ptr(), at);
        // Not while an event's data is being collected.
        decoder.push(b"data: a\n");
        assert_eq!(decoder.next_event(), None);
        decoder.recycle(String::with_capacity(1 << 16));
        decoder.push(b"data: b\n\n");
        assert_eq!(decoder.next_event().unwrap().unwrap().data, "a\nb");
        drop(first);
        // A priming event (empty data) before the message leaves the
        // buffer to the message, as a Streamable HTTP response starts.
        let buffer = String::with_capacity(1 << 16);
        let at = buffer.as_ptr();
        decoder.recycle(buffer);
        decoder.push(b"id: 1\ndata:\n\nid: 2\ndata: {}\n\n");
        let priming = decoder.next_event().unwrap().unwrap();
        assert_eq!((priming.data.as_str(), priming.data.capacity()), ("", 0));
        let message = decoder.next_event().unwrap().unwrap();
        assert_eq!(message.data, "{}");
        assert_eq!(message.data.as_ptr(), at);
    }

    #[test]
    fn the_decoder_reads_a_resumed_stream_after_finish() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"retry: 100\nid: 3\ndata: a\n\nid: 4\ndata: partial");
        assert_eq!(
            decoder.next_event().map(render).as_deref(),
            Some(r#"message "a" id="3" retry=100"#)
        );
        assert_eq!(decoder.finish(), None);
        assert_eq!(decoder.last_event_id(), Some("3"));
        decoder.push("\u{FEFF}data: b\n\n".as_bytes());
        assert_eq!(
            decoder.next_event().map(render).as_deref(),
            Some(r#"message "b" id="3""#)
        );
        assert_eq!(decoder.retry_ms(), Some(100));
    }

    #[test]
    fn encode_event_writes_the_wire_form() {
        let priming = SseEvent {
            event: "message".to_owned(),
            data: String::new(),
            id: Some("42".to_owned()),
            retry: None,
        };
        let mut out = String::new();
        encode_event(&priming, &mut out);
        assert_eq!(out, "id: 42\ndata:\n\n");

        let event = SseEvent {
            event: "update".to_owned(),
            data: "a\nb\r\nc\rd\n\n e".to_owned(),
            id: Some("x\ny".to_owned()),
            retry: Some(3000),
        };
        let mut out = String::new();
        encode_event(&event, &mut out);
        assert_eq!(
            out,
            "event: update\nid: xy\nretry: 3000\ndata: a\ndata: b\ndata: c\ndata: d\ndata:\ndata:  e\n\n"
        );
        assert_eq!(
            decode(&out),
            [r#"update "a\nb\nc\nd\n\n e" id="xy" retry=3000"#]
        );
    }

    /// One `data` line of a JSON-RPC response whose result holds about
    /// 1 MiB of text (escapes and multi-byte characters included), and that
    /// text.
    fn big_response() -> (String, String) {
        let unit = "abc\"\\\n\t é€𝄞 xyz 0123456789 ";
        let text = unit.repeat((1 << 20) / unit.len() + 1);
        let json = serde_json::json!({
            "jsonrpc": "2.0",
            "id": 7,
            "result": {"content": [{"type": "text", "text": text}]}
        });
        (json.to_string(), text)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// The splitter's contract for a large event: wherever the chunks
        /// are cut (inside a UTF-8 sequence, between a CR and its LF, a
        /// byte at a time near the end), the event comes out whole, once,
        /// and its data decodes as the message that was sent.
        #[test]
        fn a_1_mib_event_decodes_whole_however_the_stream_is_cut(
            cuts in proptest::collection::vec(0usize..(1 << 20), 0..40),
            tail_cuts in proptest::collection::vec(0usize..12, 0..6),
            ending in proptest::sample::select(vec!["\n", "\r\n", "\r"]),
        ) {
            let (json, text) = big_response();
            let stream = format!(
                "id: 7{ending}data: {json}{ending}{ending}data: {{}}{ending}{ending}"
            );
            let bytes = stream.as_bytes();
            let mut at: Vec<usize> = cuts
                .into_iter()
                .chain(tail_cuts.into_iter().map(|back| bytes.len().saturating_sub(back)))
                .filter(|&cut| cut < bytes.len())
                .collect();
            at.sort_unstable();
            at.dedup();
            let mut decoder = SseDecoder::new();
            let mut events = Vec::new();
            let mut from = 0;
            for cut in at.into_iter().chain([bytes.len()]) {
                decoder.push(&bytes[from..cut]);
                from = cut;
                events.extend(std::iter::from_fn(|| decoder.next_event()));
            }
            events.extend(std::iter::from_fn(|| decoder.finish()));
            proptest::prop_assert_eq!(events.len(), 2);
            let big = events.remove(0).unwrap();
            proptest::prop_assert_eq!(&big.id, &Some("7".to_owned()));
            proptest::prop_assert!(big.data == json, "the data differs from what was sent");
            let Ok(crate::Frame::Single(crate::Message::Response(response))) =
                crate::Frame::from_string(big.data)
            else {
                return Err(proptest::test_runner::TestCaseError::fail("not a response"));
            };
            let result: serde_json::Value = response.result.decode().unwrap();
            proptest::prop_assert!(result["content"][0]["text"] == text.as_str());
            proptest::prop_assert_eq!(&events[0].as_ref().unwrap().data, "{}");
        }
    }
}

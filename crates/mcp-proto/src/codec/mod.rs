//! Incremental decoders and encoders for the byte streams MCP travels over.
//!
//! - [`ndjson`]: newline-delimited JSON, the framing of the stdio transport.
//! - [`sse`]: Server-Sent Events, the streaming half of Streamable HTTP.
//! - [`body`]: a JSON body collected chunk by chunk (Streamable HTTP's JSON
//!   responses), its one long text moved aside as it arrives.
//!
//! Both decoders are sans-IO and share one contract: push the bytes a read
//! produced, in chunks of any size split anywhere, then pop items until
//! `None`; at end of input, call `finish` until `None`. The items do not
//! depend on where the chunks were split. Each decoder holds at most its
//! size limit plus the last chunk pushed, provided the caller drains it after
//! every push, and the work is linear in the input: every byte is searched
//! for a line ending once, and the buffer is compacted only when the bytes
//! it moves are no more than the bytes already consumed.

pub mod body;
pub mod ndjson;
pub mod sse;

pub use body::{Collected, JsonBody};

pub use ndjson::{EncodeError, NdjsonDecoder, NdjsonError};
pub use sse::{SseDecoder, SseError, SseEvent};

/// The UTF-8 encoding of U+FEFF BYTE ORDER MARK.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Once a buffer has been emptied, capacity beyond this is returned to the
/// allocator, so that one large message does not pin its size for the life
/// of the connection.
const RETAINED_CAPACITY: usize = 1024 * 1024;

/// The bytes pushed into a decoder and not yet consumed, with how far they
/// have been searched for a line ending.
#[derive(Debug, Default)]
struct Input {
    buf: Vec<u8>,
    /// `buf[..start]` is consumed and waits to be compacted away.
    start: usize,
    /// `buf[start..scanned]` holds no line ending: searches resume here.
    scanned: usize,
}

impl Input {
    /// Appends bytes, first compacting when that is cheap enough.
    fn push(&mut self, bytes: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(bytes);
    }

    /// The number of bytes pushed and not yet consumed.
    fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The bytes pushed and not yet consumed.
    fn unconsumed(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }

    /// Searches the bytes not searched before with `find`, which returns the
    /// offset of the first line ending in the slice it is given. Returns that
    /// ending's index in the buffer; when there is none, the bytes are marked
    /// searched so that the next call looks at new bytes only.
    fn find_line_end(&mut self, find: impl Fn(&[u8]) -> Option<usize>) -> Option<usize> {
        let unscanned = self.buf.get(self.scanned..).unwrap_or_default();
        match find(unscanned) {
            Some(offset) => Some(self.scanned + offset),
            None => {
                self.scanned = self.buf.len();
                None
            }
        }
    }

    /// Consumes the line that ends with the line-ending byte at `end` (an
    /// index from [`Input::find_line_end`]) and returns it without that byte,
    /// along with the byte.
    fn take_line(&mut self, end: usize) -> (&[u8], Option<u8>) {
        let line_start = self.start;
        self.start = (end + 1).min(self.buf.len());
        self.scanned = self.start;
        let terminator = self.buf.get(end).copied();
        (
            self.buf.get(line_start..end).unwrap_or_default(),
            terminator,
        )
    }

    /// Consumes up to `n` bytes that are already known not to be part of a
    /// line (a byte order mark, the LF of a CRLF).
    fn skip(&mut self, n: usize) {
        self.start = (self.start + n).min(self.buf.len());
        self.scanned = self.scanned.max(self.start);
    }

    /// Drops every unconsumed byte.
    fn discard_unconsumed(&mut self) {
        self.buf.truncate(self.start);
        self.scanned = self.start;
    }

    /// Forgets everything, for the end of a stream.
    fn reset(&mut self) {
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        self.buf.shrink_to(RETAINED_CAPACITY);
    }

    /// Moves the unconsumed bytes to the front of the buffer when the
    /// consumed prefix is at least as long as they are. The bytes moved are
    /// then paid for by bytes consumed earlier, so compaction costs O(n) over
    /// a whole stream however the caller pushes and pops.
    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        if self.start == self.buf.len() {
            self.reset();
        } else if self.start >= self.len() {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
            if self.buf.len() <= RETAINED_CAPACITY / 2 {
                self.buf.shrink_to(RETAINED_CAPACITY);
            }
        }
    }
}

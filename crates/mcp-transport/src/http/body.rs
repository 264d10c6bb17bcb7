//! Reading a JSON response body into a buffer that the transport reuses from one response to the next.
//!
//! A Streamable HTTP response in JSON mode is one message whose whole text
//! the frame decoder needs in one piece. The body is read into a buffer
//! sized once from `Content-Length` (within the message limit), checked as
//! UTF-8 chunk by chunk as it arrives (while the chunk is still in the
//! cache) and handed to [`Frame::from_shared`] without another copy: a
//! large result stays where it was read until the caller decodes it.
//!
//! The transport keeps a clone of that buffer. Once the frame and every
//! payload taken from it are dropped, the clone is the only owner again and
//! the next body is read into the same allocation. A host calling a tool
//! that returns 1 MiB then does not allocate and free 1 MiB per call: with
//! glibc's allocator, the freed megabyte at the top of a thread's heap was
//! given back to the kernel and the next call faulted it in again, page by
//! page: 240 to 370 minor faults per 1 MiB call (the process's count over
//! 50 calls), and two fifths of the client's CPU samples in the kernel's
//! fault handling (`perf record`); about 7 faults per call with the buffer
//! reused. At most [`KEPT_BUFFERS`] buffers of at most [`KEPT_CAPACITY`]
//! bytes each are kept, for as long as the transport lives.

use std::sync::{Arc, Mutex};

use http::Response;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use mcp_proto::Frame;
use mcp_proto::codec::SseDecoder;
use mcp_proto::sync::lock;

use super::client::{content_length, io_error};
use crate::transport::TransportError;

/// How many body buffers a transport keeps for reuse: responses read at
/// the same time each need their own.
const KEPT_BUFFERS: usize = 2;

/// The largest buffer kept for reuse; a larger body's is freed with its
/// frame.
const KEPT_CAPACITY: usize = 4 * 1024 * 1024;

/// The body buffers one transport keeps for reuse (see the module
/// documentation).
#[derive(Debug, Default)]
pub(crate) struct BodyBuffers {
    kept: Mutex<Vec<Arc<String>>>,
}

impl BodyBuffers {
    /// Reads a JSON body of at most `limit` bytes and decodes it as one
    /// frame. `Err(TooLarge)` when it is longer (a `Content-Length` over the
    /// limit is refused before reading); the inner error when the body is
    /// not JSON-RPC.
    pub(crate) async fn read_frame(
        &self,
        response: Response<Incoming>,
        limit: usize,
    ) -> Result<Result<Frame, serde_json::Error>, TransportError> {
        let too_large = TransportError::TooLarge { limit };
        let length = content_length(response.headers());
        if let Some(length) = length
            && length > limit as u64
        {
            return Err(too_large);
        }
        // Within the limit, checked above.
        let length = length.map_or(0, |length| length as usize);
        let (mut shared, mut text) = self.take(length);
        let mut carry = Vec::new();
        // The body so far once it turned out not to be UTF-8.
        let mut invalid: Option<Vec<u8>> = None;
        let mut received = 0usize;
        let mut body = response.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| io_error(&e))?;
            if let Ok(data) = frame.into_data() {
                received += data.len();
                if received > limit {
                    return Err(too_large);
                }
                match &mut invalid {
                    Some(bytes) => bytes.extend_from_slice(&data),
                    None => {
                        if let Err(rest) = push_checked(&mut text, &mut carry, &data) {
                            let mut bytes = std::mem::take(&mut text).into_bytes();
                            bytes.extend_from_slice(&carry);
                            bytes.extend_from_slice(rest);
                            invalid = Some(bytes);
                        }
                    }
                }
            }
        }
        if invalid.is_none() && !carry.is_empty() {
            let mut bytes = std::mem::take(&mut text).into_bytes();
            bytes.extend_from_slice(&carry);
            invalid = Some(bytes);
        }
        if let Some(bytes) = invalid {
            // The byte decoder names where the text goes wrong.
            return Ok(Frame::from_slice(&bytes));
        }
        match Arc::get_mut(&mut shared) {
            Some(slot) => *slot = text,
            // `take` hands out a buffer nobody else holds.
            None => shared = Arc::new(text),
        }
        let frame = Frame::from_shared(Arc::clone(&shared));
        self.keep(shared);
        Ok(frame)
    }

    /// Decodes the data of an SSE event as one frame, keeping a clone of
    /// the text as [`BodyBuffers::read_frame`] does of a body: once
    /// released, its allocation collects a later event's data
    /// ([`BodyBuffers::recycle`]).
    pub(crate) fn event_frame(&self, data: String) -> Result<Frame, serde_json::Error> {
        let text = Arc::new(data);
        let frame = Frame::from_shared(Arc::clone(&text));
        self.keep(text);
        frame
    }

    /// Hands `decoder` the allocation of an earlier message that nobody
    /// holds any more, if there is one, to collect its next event's data in
    /// ([`SseDecoder::recycle`]).
    pub(crate) fn recycle(&self, decoder: &mut SseDecoder) {
        let mut kept = lock(&self.kept);
        // The largest: an event as large as the one it held needs no growing.
        let Some(at) = (0..kept.len())
            .filter_map(|at| Some((at, Arc::get_mut(kept.get_mut(at)?)?.capacity())))
            .max_by_key(|&(_, capacity)| capacity)
            .map(|(at, _)| at)
        else {
            return;
        };
        let mut text = kept.swap_remove(at);
        drop(kept);
        if let Some(text) = Arc::get_mut(&mut text) {
            decoder.recycle(std::mem::take(text));
        }
    }

    /// A buffer for a body of `length` bytes (0 when unknown): the
    /// allocation of an earlier body that nobody holds any more when there
    /// is one large enough, else a new one of that size. The shared slot
    /// the text goes back into comes with it.
    fn take(&self, length: usize) -> (Arc<String>, String) {
        let mut kept = lock(&self.kept);
        let free = kept
            .iter_mut()
            .position(|text| Arc::get_mut(text).is_some_and(|t| t.capacity() >= length));
        match free {
            Some(at) => {
                let mut shared = kept.swap_remove(at);
                drop(kept);
                let mut text = Arc::get_mut(&mut shared)
                    .map(std::mem::take)
                    .unwrap_or_default();
                text.clear();
                (shared, text)
            }
            None => {
                // Free buffers too small for this body are given up first,
                // so that their memory can take the new one instead of
                // staying beside it: a body a few bytes longer than the last
                // (an id with one more digit) no longer holds two buffers of
                // its size. The new one has room for such growth.
                kept.retain_mut(|text| Arc::get_mut(text).is_none());
                drop(kept);
                (
                    Arc::new(String::new()),
                    String::with_capacity(length + length / 16),
                )
            }
        }
    }

    /// Keeps a clone of `text` for a later body, within [`KEPT_BUFFERS`]
    /// and [`KEPT_CAPACITY`]; when every place is taken, one whose buffer
    /// is still held elsewhere (a payload kept by the host) gives its place
    /// up.
    fn keep(&self, text: Arc<String>) {
        if text.capacity() > KEPT_CAPACITY || text.capacity() == 0 {
            return;
        }
        let mut kept = lock(&self.kept);
        if kept.len() < KEPT_BUFFERS {
            kept.push(text);
        } else if let Some(held) = kept
            .iter_mut()
            .find(|kept| Arc::strong_count(kept) > 1 || kept.capacity() < text.capacity())
        {
            *held = text;
        }
    }
}

/// Appends a chunk of a body to `text`, checked as UTF-8 as it arrives,
/// while it is still in the cache from the socket read (checking the whole
/// body afterwards read it from memory again: 6 to 9% of a 1 MiB result's
/// client CPU). `carry` holds the start of a character that the previous
/// chunk cut, at most three bytes. `Err` with the bytes of `data` not yet
/// in `text` or `carry` when the body is not UTF-8.
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

    #[test]
    fn a_buffer_is_reused_once_nobody_else_holds_it_and_only_then() {
        let buffers = BodyBuffers::default();
        let (text, mut body) = buffers.take(1000);
        assert!(body.capacity() >= 1000);
        body.push_str("{}");
        let first = body.as_ptr();
        let mut text = text;
        *Arc::get_mut(&mut text).unwrap() = body;
        let held = Arc::clone(&text);
        buffers.keep(text);

        // Still held (a frame not yet decoded): a new buffer.
        let (_, other) = buffers.take(10);
        assert_ne!(other.as_ptr(), first);
        // Released: the same allocation, emptied.
        drop(held);
        let (mut text, again) = buffers.take(500);
        assert_eq!(again.as_ptr(), first);
        assert!(again.is_empty());
        *Arc::get_mut(&mut text).unwrap() = again;
        buffers.keep(text);
        // Too small for the body announced: not taken, and given up so that
        // its memory can hold the new one.
        let (_, larger) = buffers.take(5000);
        assert!(larger.capacity() >= 5000);
        assert!(lock(&buffers.kept).is_empty());
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
    fn a_body_that_is_not_utf8_is_refused_with_every_byte_kept() {
        // A stray continuation byte, a character broken by an ASCII byte,
        // a byte that never starts one, and one cut at the very end.
        for body in [&b"ab\x80cd"[..], b"a\xe2\x82x", b"\xffabc", b"abc\xe2\x82"] {
            for cut in 0..=body.len() {
                let (mut text, mut carry) = (String::new(), Vec::new());
                let mut kept = None;
                for chunk in [&body[..cut], &body[cut..]] {
                    if let Some(kept) = kept.as_mut() {
                        Vec::extend_from_slice(kept, chunk);
                        continue;
                    }
                    if let Err(rest) = push_checked(&mut text, &mut carry, chunk) {
                        let mut bytes = text.clone().into_bytes();
                        bytes.extend_from_slice(&carry);
                        bytes.extend_from_slice(rest);
                        kept = Some(bytes);
                    }
                }
                let kept = kept.unwrap_or_else(|| {
                    assert!(
                        !carry.is_empty(),
                        "{body:?} cut at {cut} was taken as UTF-8"
                    );
                    let mut bytes = text.clone().into_bytes();
                    bytes.extend_from_slice(&carry);
                    bytes
                });
                assert_eq!(kept, body, "{body:?} cut at {cut}");
            }
        }
    }

    #[test]
    fn at_most_the_kept_number_of_buffers_of_bounded_size_are_kept() {
        let buffers = BodyBuffers::default();
        let held: Vec<Arc<String>> = (0..KEPT_BUFFERS + 2)
            .map(|_| Arc::new(String::with_capacity(64)))
            .collect();
        for text in &held {
            buffers.keep(Arc::clone(text));
        }
        assert_eq!(lock(&buffers.kept).len(), KEPT_BUFFERS);
        buffers.keep(Arc::new(String::with_capacity(KEPT_CAPACITY + 1)));
        assert!(
            lock(&buffers.kept)
                .iter()
                .all(|text| text.capacity() <= KEPT_CAPACITY)
        );
    }
}

//! Reading a JSON response body into a buffer that the transport reuses from one response to the next.
//!
//! A Streamable HTTP response in JSON mode is one message. Its body is
//! collected by [`JsonBody`] into a buffer of at most 16 KiB at first,
//! grown once to the `Content-Length` (within the message limit) when the
//! body is more than the message around a long text, checked as UTF-8 chunk by
//! chunk as it arrives (while the chunk is still in the cache), except for
//! a text content block's long text without escapes, which goes from hyper's chunks
//! straight into a string of its own: `Client::call_tool` moves it into
//! the result, so a large text result is copied once on its way to the
//! host, as it arrives, instead of a second time after the last byte
//! (callgrind: 3.10M client instructions per 1 MiB call to 2.11M). The
//! rest is handed to the frame decoder without another copy.
//!
//! The transport keeps a clone of that buffer. Once the frame and every
//! payload taken from it are dropped, the clone is the only owner again and
//! the next body is read into the same allocation. A host calling a tool
//! that returns a large body of many values (a catalog) then does not
//! allocate and free its size per call: with glibc's allocator, a freed
//! megabyte at the top of a thread's heap was given back to the kernel and
//! the next call faulted it in again, page by page: 240 to 370 minor
//! faults per 1 MiB call (the process's count over 50 calls), and two
//! fifths of the client's CPU samples in the kernel's fault handling
//! (`perf record`); about 7 faults per call with the buffer reused. At
//! most [`KEPT_BUFFERS`] buffers of at most [`KEPT_CAPACITY`] bytes each
//! are kept, for as long as the transport lives.

use std::sync::{Arc, Mutex};

use http::Response;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use mcp_proto::Frame;
use mcp_proto::codec::{JsonBody, SseDecoder};
use mcp_proto::sync::lock;

use super::client::{content_length, io_error};
use crate::transport::TransportError;

/// How many body buffers a transport keeps for reuse: responses read at
/// the same time each need their own.
const KEPT_BUFFERS: usize = 2;

/// The capacity a body's buffer needs at first: the whole of a smaller
/// body, and enough for what surrounds a long text that is moved aside
/// ([`JsonBody`]), so that a large text result does not take a buffer of
/// its size that stays almost empty.
const START_CAPACITY: usize = 16 * 1024;

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
        // A buffer for the message around a long text to start with; the
        // collector grows it for a body that holds none.
        let (shared, text) = self.take(length.min(START_CAPACITY));
        // The body goes into the buffer but for a long text, which goes
        // straight into a string of its own as it arrives (one copy from
        // hyper's chunks to the decoded result).
        let mut collected = JsonBody::new(text, length);
        let mut body = response.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| io_error(&e))?;
            if let Ok(data) = frame.into_data() {
                if collected.len() + data.len() > limit {
                    return Err(too_large);
                }
                collected.push(&data);
            }
        }
        let (frame, shared) = collected.finish().frame(shared);
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

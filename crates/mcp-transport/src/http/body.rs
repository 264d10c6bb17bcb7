//! Reading a JSON response body into a buffer that the transport reuses from one response to the next.
//!
//! A Streamable HTTP response in JSON mode is one message whose whole text
//! the frame decoder needs in one piece. The body is read into a buffer
//! sized once from `Content-Length` (within the message limit), checked as
//! UTF-8 and handed to [`Frame::from_shared`] without another copy: a large
//! result stays where it was read until the caller decodes it.
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
        let (mut text, mut bytes) = self.take(length);
        let mut body = response.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| io_error(&e))?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > limit {
                    return Err(too_large);
                }
                bytes.extend_from_slice(&data);
            }
        }
        let string = match String::from_utf8(bytes) {
            Ok(string) => string,
            // The byte decoder names where the text goes wrong.
            Err(error) => return Ok(Frame::from_slice(error.as_bytes())),
        };
        match Arc::get_mut(&mut text) {
            Some(slot) => *slot = string,
            // `take` hands out a buffer nobody else holds.
            None => text = Arc::new(string),
        }
        let frame = Frame::from_shared(Arc::clone(&text));
        self.keep(text);
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
    /// the bytes go back into comes with it.
    fn take(&self, length: usize) -> (Arc<String>, Vec<u8>) {
        let mut kept = lock(&self.kept);
        let free = kept
            .iter_mut()
            .position(|text| Arc::get_mut(text).is_some_and(|t| t.capacity() >= length));
        match free {
            Some(at) => {
                let mut text = kept.swap_remove(at);
                drop(kept);
                let mut bytes = Arc::get_mut(&mut text)
                    .map(|t| std::mem::take(t).into_bytes())
                    .unwrap_or_default();
                bytes.clear();
                (text, bytes)
            }
            None => (Arc::new(String::new()), Vec::with_capacity(length)),
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
        let (text, mut bytes) = buffers.take(1000);
        assert!(bytes.capacity() >= 1000);
        bytes.extend_from_slice(b"{}");
        let first = bytes.as_ptr();
        let mut text = text;
        *Arc::get_mut(&mut text).unwrap() = String::from_utf8(bytes).unwrap();
        let held = Arc::clone(&text);
        buffers.keep(text);

        // Still held (a frame not yet decoded): a new buffer.
        let (_, other) = buffers.take(10);
        assert_ne!(other.as_ptr(), first);
        // Released: the same allocation, emptied.
        drop(held);
        let (_, again) = buffers.take(500);
        assert_eq!(again.as_ptr(), first);
        assert!(again.is_empty());
        // Too small for the body announced: not taken.
        let (_, larger) = buffers.take(5000);
        assert!(larger.capacity() >= 5000);
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

//! Reading an SSE response body event by event, and turning events into JSON-RPC frames.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use mcp_proto::Frame;
use mcp_proto::codec::{SseDecoder, SseError, SseEvent};

use super::body::BodyBuffers;
use super::client::io_error;
use crate::transport::TransportError;

/// What reading an SSE body yields next.
#[derive(Debug)]
pub(crate) enum SseItem {
    /// A dispatched event (priming events with empty data included).
    Event(SseEvent),
    /// The body ended cleanly; an event cut short was dropped.
    End,
    /// The connection broke mid-body; an event cut short was dropped.
    Broken(TransportError),
    /// An event exceeded the size limit: the connection must end.
    TooLarge(usize),
}

/// One SSE response body being read. The decoder lives outside it because
/// it outlives a connection: a resumed stream goes on with the same last
/// event id and `retry`.
#[derive(Debug)]
pub(crate) struct SseBody {
    body: Incoming,
    ended: bool,
    /// The long line the last chunk ended in the middle of, pushed once
    /// the events of the chunk's complete lines are out ([`long_tail_at`]).
    tail: Bytes,
}

impl SseBody {
    pub(crate) fn new(body: Incoming) -> Self {
        SseBody {
            body,
            ended: false,
            tail: Bytes::new(),
        }
    }

    /// The next item. After `End` or `Broken` the decoder is ready for the
    /// next connection of the same stream.
    pub(crate) async fn next(&mut self, decoder: &mut SseDecoder) -> SseItem {
        loop {
            if let Some(item) = decoded_item(decoder, self.ended) {
                return item;
            }
            if !self.tail.is_empty() {
                decoder.push(&std::mem::take(&mut self.tail));
                continue;
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(mut data) = frame.into_data() {
                        self.tail = data.split_off(long_tail_at(decoder, &data));
                        decoder.push(&data);
                    }
                }
                Some(Err(error)) => {
                    // Drop the partial event: the resumed stream replays it.
                    while decoder.finish().is_some() {}
                    self.ended = true;
                    return SseItem::Broken(io_error(&error));
                }
                None => self.ended = true,
            }
        }
    }
}

/// Where to cut `chunk` before pushing it into `decoder`: after its last
/// line ending when what follows is at least [`LONG_TAIL`] bytes (the
/// start of a long line, most often the `data` line of a large message),
/// else at its end. Only a decoder that holds nothing is given a cut: one
/// in the middle of a long `data` line moves each chunk's value as it is
/// pushed already, and searching the chunk from its end would read the
/// whole of it once more (6% of a 1 MiB result's client instructions
/// over SSE, measured with callgrind). Pushed on its own, once the
/// events of the lines before it are out, a `data` line's value goes from
/// the chunk straight into the event's data ([`SseDecoder::push`]) instead
/// of being held in the decoder's input (grown for it on every response)
/// and copied again: 8% of the client's instructions for a 1 MiB result
/// (callgrind), and page faults for the input's growth on every response.
/// No cut when the chunk ends in a line ending, holds none, or ends in a
/// short line.
pub(crate) fn long_tail_at(decoder: &SseDecoder, chunk: &[u8]) -> usize {
    if decoder.buffered_len() > 0 {
        return chunk.len();
    }
    match memchr::memrchr2(b'\n', b'\r', chunk) {
        Some(end) if chunk.len() - end > LONG_TAIL => end + 1,
        _ => chunk.len(),
    }
}

/// The shortest line end [`long_tail_at`] cuts off: the length from which
/// the decoder moves a `data` line's value as it arrives.
const LONG_TAIL: usize = 4096;

/// The sans-IO half of [`SseBody::next`]: the next item the decoder holds,
/// given whether the body has ended, or `None` when it needs more of the
/// body. Events that cannot be read are logged and skipped.
pub(crate) fn decoded_item(decoder: &mut SseDecoder, ended: bool) -> Option<SseItem> {
    loop {
        let item = if ended {
            decoder.finish()
        } else {
            decoder.next_event()
        };
        return match item {
            Some(Ok(event)) => Some(SseItem::Event(event)),
            Some(Err(SseError::TooLarge { limit })) => Some(SseItem::TooLarge(limit)),
            Some(Err(error)) => {
                tracing::warn!(%error, "skipping an SSE event that cannot be read");
                continue;
            }
            None if ended => Some(SseItem::End),
            None => None,
        };
    }
}

/// The JSON-RPC frame an event carries, if it carries one. The event's
/// data becomes the frame's text: a large result is neither copied out of
/// it nor checked for UTF-8 a second time, and its allocation goes back to
/// `bodies` for reuse once the frame is released.
///
/// MCP "Transports" §Streamable HTTP: messages travel as events of type
/// `message` (the default); events with empty data are 2025-11-25 priming
/// events whose only purpose is their id, and must not be parsed as JSON.
/// Other event types, and data that is not JSON-RPC, are skipped and logged.
pub(crate) fn event_frame(event: SseEvent, bodies: &BodyBuffers) -> Option<Frame> {
    if event.data.is_empty() {
        return None;
    }
    if event.event != "message" {
        tracing::debug!(event = %event.event, "skipping an SSE event of another type");
        return None;
    }
    let len = event.data.len();
    match bodies.event_frame(event.data) {
        Ok(frame) => Some(frame),
        Err(error) => {
            tracing::warn!(
                %error,
                len,
                "skipping an SSE event that is not a JSON-RPC message"
            );
            None
        }
    }
}

/// Whether `frame` holds the response (or error response) to request `id`.
pub(crate) fn answers(frame: &Frame, id: &mcp_proto::RequestId) -> bool {
    let is_answer = |m: &mcp_proto::Message| {
        matches!(
            m,
            mcp_proto::Message::Response(_) | mcp_proto::Message::Error(_)
        ) && m.id() == Some(id)
    };
    match frame {
        Frame::Single(m) => is_answer(m),
        Frame::Batch(ms) => ms.iter().any(is_answer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_a_chunk_ends_in_is_split_off_after_the_last_line_ending() {
        let long = "x".repeat(LONG_TAIL);
        for ending in ["\n", "\r", "\r\n"] {
            let head = format!("event: message{ending}id: 1{ending}");
            let chunk = format!("{head}data: {long}");
            let (lines, tail) = chunk.split_at(long_tail_at(&SseDecoder::new(), chunk.as_bytes()));
            assert_eq!(lines, head, "ending {ending:?}");
            assert_eq!(tail, format!("data: {long}"));
            // Pushed into a decoder in the middle of a line, it is not cut.
            let mut decoder = SseDecoder::new();
            decoder.push(b"data: {");
            assert_eq!(decoder.next_event(), None);
            assert_eq!(long_tail_at(&decoder, chunk.as_bytes()), chunk.len());
        }
        // A chunk that ends in a line ending, holds none, or ends in a line
        // shorter than the threshold is pushed whole.
        for whole in [
            format!("data: {long}\n"),
            format!("data: {long}"),
            format!("data: {long}\ndata: {}", &long[7..]),
        ] {
            assert_eq!(
                long_tail_at(&SseDecoder::new(), whole.as_bytes()),
                whole.len()
            );
        }
    }
}

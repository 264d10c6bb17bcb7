//! Reading an SSE response body event by event, and turning events into JSON-RPC frames.

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
}

impl SseBody {
    pub(crate) fn new(body: Incoming) -> Self {
        SseBody { body, ended: false }
    }

    /// The next item. After `End` or `Broken` the decoder is ready for the
    /// next connection of the same stream.
    pub(crate) async fn next(&mut self, decoder: &mut SseDecoder) -> SseItem {
        loop {
            if let Some(item) = decoded_item(decoder, self.ended) {
                return item;
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
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

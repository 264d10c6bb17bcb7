//! Entry points for fuzz targets (feature `fuzzing`): the sans-IO pieces of the HTTP transport, fed bytes directly.
//!
//! Not a stable API: it exists so that `fuzz/` can drive the code the
//! transport runs on a response body without a socket or a runtime.
#![cfg_attr(docsrs, doc(cfg(feature = "fuzzing")))]

use mcp_proto::codec::SseDecoder;
use mcp_proto::{Frame, RequestId};

use crate::http::body::BodyBuffers;
use crate::http::events::{SseItem, answers, decoded_item, event_frame, long_tail_at};

/// What reading one Streamable HTTP response's SSE body yielded (MCP
/// "Transports" §Streamable HTTP, §Sending Messages).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SseResponse {
    /// The JSON-RPC frames the events carried, in order: what the transport
    /// hands on to the client.
    pub frames: Vec<Frame>,
    /// How many events were dispatched, priming events and events of other
    /// types included.
    pub events: usize,
    /// Whether one of the frames answers the request the body belongs to.
    pub answered: bool,
    /// `Some(limit)` when an event exceeded the size limit: reading stopped
    /// there, and the transport would end the connection.
    pub too_large: Option<usize>,
    /// The last event id, which a resumed stream sends as `Last-Event-ID`.
    pub last_event_id: Option<String>,
    /// The server's `retry` field, in milliseconds.
    pub retry_ms: Option<u64>,
}

/// Reads an SSE response body that arrives as `chunks`, the way the
/// transport reads the stream of a POST that sent request `id`: events are
/// decoded under the `max_event_size` limit, each `message` event's data is
/// decoded as a JSON-RPC frame (priming events and other types skipped), and
/// the frames are checked for the answer to `id`.
pub fn read_sse_response<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
    max_event_size: usize,
    id: &RequestId,
) -> SseResponse {
    let mut decoder = SseDecoder::with_max_event_size(max_event_size);
    let bodies = BodyBuffers::default();
    let mut chunks = chunks.into_iter();
    let mut ended = false;
    // As `SseBody` pushes a chunk: its complete lines, then the long line it
    // ends in.
    let mut tail: &[u8] = &[];
    let mut out = SseResponse {
        frames: Vec::new(),
        events: 0,
        answered: false,
        too_large: None,
        last_event_id: None,
        retry_ms: None,
    };
    loop {
        match decoded_item(&mut decoder, ended) {
            Some(SseItem::Event(event)) => {
                out.events += 1;
                if let Some(frame) = event_frame(event, &bodies) {
                    out.answered |= answers(&frame, id);
                    out.frames.push(frame);
                }
                // As a stream that carries every response recycles them.
                bodies.recycle(&mut decoder);
            }
            Some(SseItem::TooLarge(limit)) => {
                out.too_large = Some(limit);
                break;
            }
            Some(SseItem::End | SseItem::Broken(_)) => break,
            None if !tail.is_empty() => decoder.push(std::mem::take(&mut tail)),
            None => match chunks.next() {
                Some(chunk) => {
                    let (lines, rest) = chunk.split_at(long_tail_at(&decoder, chunk));
                    tail = rest;
                    decoder.push(lines);
                }
                None => ended = true,
            },
        }
    }
    out.last_event_id = decoder.last_event_id().map(str::to_owned);
    out.retry_ms = decoder.retry_ms();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_split_anywhere_yields_its_messages_and_the_answer() {
        let body: &[u8] = b"id: 1\ndata:\n\n: keep-alive\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\nevent: other\ndata: {}\n\nid: 2\nretry: 250\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n";
        let whole = read_sse_response([body], 4096, &RequestId::Number(7));
        assert_eq!(whole.events, 5);
        assert_eq!(whole.frames.len(), 2, "{whole:?}");
        assert!(whole.answered);
        assert_eq!(whole.last_event_id.as_deref(), Some("2"));
        assert_eq!(whole.retry_ms, Some(250));
        assert_eq!(whole.too_large, None);
        for at in 0..body.len() {
            let (head, tail) = body.split_at(at);
            assert_eq!(
                read_sse_response([head, tail], 4096, &RequestId::Number(7)),
                whole
            );
        }
        let other = read_sse_response([body], 4096, &RequestId::Number(8));
        assert!(!other.answered);
    }

    #[test]
    fn a_large_message_reads_alike_however_its_chunks_cut_its_lines() {
        // The first chunk ends just before, at or inside the long `data`
        // line, as a large result's first chunk does behind its `event` and
        // `id` lines; the rest comes in chunks that cut characters.
        let text = "é x".repeat(20_000);
        let result = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        let body = format!("id: 1\ndata:\n\nevent: message\nid: 2\ndata: {result}\n\n");
        let limit = 1 << 20;
        let id = RequestId::Number(7);
        let whole = read_sse_response([body.as_bytes()], limit, &id);
        assert_eq!((whole.events, whole.frames.len()), (2, 1), "{whole:?}");
        assert!(whole.answered);
        let start = body.find("data: {").unwrap_or_default();
        for at in [
            start - 1,
            start,
            start + 1,
            start + 6,
            start + 9_000,
            start + 9_001,
        ] {
            for size in [4096, 5000, 65_536] {
                let (head, rest) = body.as_bytes().split_at(at);
                let mut chunks = vec![head];
                chunks.extend(rest.chunks(size));
                assert_eq!(
                    read_sse_response(chunks, limit, &id),
                    whole,
                    "cut at {at}, then every {size} bytes"
                );
            }
        }
    }

    #[test]
    fn an_oversized_event_stops_the_body() {
        let body = format!("data: {}\n\ndata: {{}}\n\n", "x".repeat(100));
        let read = read_sse_response([body.as_bytes()], 64, &RequestId::Number(1));
        assert_eq!(read.too_large, Some(64));
        assert_eq!(read.events, 0);
    }
}

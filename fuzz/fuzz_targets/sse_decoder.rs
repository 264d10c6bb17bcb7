//! Fuzz target: the SSE decoder on arbitrary bytes, split in two at a point the first byte picks.
//!
//! Checks that decoding never panics, that buffers stay within the limit plus
//! one chunk, that the split changes neither the events nor the decoder's
//! state, and that every event decoded re-encodes to itself.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_proto::codec::sse::{self, SseDecoder, SseError, SseEvent};

/// Small, so that inputs the fuzzer finds reach the oversized-event paths.
const LIMIT: usize = 256;

fuzz_target!(|input: &[u8]| {
    let Some((&first, bytes)) = input.split_first() else {
        return;
    };
    let (head, tail) = bytes.split_at(usize::from(first) * bytes.len() / 255);
    assert_eq!(decode(&[head, tail]), decode(&[bytes]));
});

type Decoded = (Vec<Result<SseEvent, SseError>>, Option<String>, Option<u64>);

/// Decodes the chunks, draining after each push, and returns the items and
/// the state a reconnection would use.
fn decode(chunks: &[&[u8]]) -> Decoded {
    let mut decoder = SseDecoder::with_max_event_size(LIMIT);
    let mut items = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        assert!(decoder.buffered_len() <= LIMIT + chunk.len());
        items.extend(std::iter::from_fn(|| decoder.next_event()));
        assert!(decoder.buffered_len() <= LIMIT);
    }
    items.extend(std::iter::from_fn(|| decoder.finish()));
    assert_eq!(decoder.buffered_len(), 0);
    for event in items.iter().flatten() {
        round_trip(event);
    }
    let id = decoder.last_event_id().map(str::to_owned);
    (items, id, decoder.retry_ms())
}

/// A decoded event holds no CR, no NUL in its id and no LF outside its data,
/// so writing it out and reading it back must give it back.
fn round_trip(event: &SseEvent) {
    let mut wire = String::new();
    sse::encode_event(event, &mut wire);
    let mut decoder = SseDecoder::new();
    decoder.push(wire.as_bytes());
    assert_eq!(decoder.next_event(), Some(Ok(event.clone())));
    assert_eq!(decoder.finish(), None);
}

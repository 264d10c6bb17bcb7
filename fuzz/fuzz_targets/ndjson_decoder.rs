//! Fuzz target: the NDJSON decoder on arbitrary bytes, split in two at a point the first byte picks.
//!
//! Checks that decoding never panics, that buffers stay within the limit plus
//! one chunk, that the split does not change the items, and that every frame
//! decoded re-encodes as one line that decodes to the same frame (or, for a
//! payload that is not JSON, is refused whole).

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_proto::Frame;
use mcp_proto::codec::ndjson::{self, NdjsonDecoder, NdjsonError};

/// Small, so that inputs the fuzzer finds reach the oversized-line paths.
const LIMIT: usize = 256;

fuzz_target!(|input: &[u8]| {
    let Some((&first, bytes)) = input.split_first() else {
        return;
    };
    let (head, tail) = bytes.split_at(usize::from(first) * bytes.len() / 255);
    assert_eq!(decode(&[head, tail]), decode(&[bytes]));
});

/// Decodes the chunks, draining after each push, and renders each item.
fn decode(chunks: &[&[u8]]) -> Vec<String> {
    let mut decoder = NdjsonDecoder::with_max_message_size(LIMIT);
    let mut items = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        assert!(decoder.buffered_len() <= LIMIT + chunk.len());
        while let Some(item) = decoder.next_frame() {
            items.push(check(item));
        }
        assert!(decoder.buffered_len() <= LIMIT);
    }
    while let Some(item) = decoder.finish() {
        items.push(check(item));
    }
    assert_eq!(decoder.buffered_len(), 0);
    items
}

fn check(item: Result<Frame, NdjsonError>) -> String {
    match item {
        Ok(frame) => {
            let mut line = Vec::new();
            if ndjson::encode_frame(&frame, &mut line).is_err() {
                assert!(line.is_empty(), "a refused frame appends nothing");
                // Refused only for a payload kept raw that is not JSON (a
                // line break inside one of its strings).
                let refused = serde_json::to_vec(&frame).map_or(true, |raw| {
                    serde_json::from_slice::<serde_json::Value>(&raw).is_err()
                });
                assert!(refused, "a JSON frame was not encoded");
                return format!("not encodable: {frame:?}");
            }
            assert_eq!(line.iter().position(|b| *b == b'\n'), Some(line.len() - 1));
            let again = Frame::from_slice(&line).expect("an encoded frame decodes");
            assert_eq!(again, frame);
            format!("{frame:?}")
        }
        Err(NdjsonError::NotJson {
            preview, line_len, ..
        }) => {
            assert!(preview.chars().count() <= 120 && line_len <= LIMIT);
            format!("not json: {line_len} {preview:?}")
        }
        Err(error) => error.to_string(),
    }
}

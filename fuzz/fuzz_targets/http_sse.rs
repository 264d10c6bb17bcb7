//! Fuzz target: a Streamable HTTP response's SSE body, read the way the HTTP transport reads a POST's stream, in chunks the first byte sizes.
//!
//! Drives `mcp_transport::fuzzing::read_sse_response` (the transport's own
//! decoder step, event-to-frame rule and answer check, without a socket).
//! Checks that nothing panics, that the chunking changes nothing, that the
//! answer flag says whether a frame answers the request, and that no more
//! frames come out than events went in.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_proto::{Frame, Message, RequestId};
use mcp_transport::fuzzing::read_sse_response;

/// Small, so that inputs the fuzzer finds reach the oversized-event path.
const LIMIT: usize = 512;

fuzz_target!(|input: &[u8]| {
    let Some((&first, body)) = input.split_first() else {
        return;
    };
    let id = if first & 0x80 == 0 {
        RequestId::Number(1)
    } else {
        RequestId::String("1".to_owned())
    };
    let size = usize::from(first & 0x3f) + 1;
    let whole = read_sse_response([body], LIMIT, &id);
    let chunked = read_sse_response(body.chunks(size), LIMIT, &id);
    assert_eq!(whole, chunked, "chunks of {size} bytes read differently");
    assert!(whole.frames.len() <= whole.events);
    let answers =
        |m: &Message| matches!(m, Message::Response(_) | Message::Error(_)) && m.id() == Some(&id);
    let answered = whole.frames.iter().any(|frame| match frame {
        Frame::Single(m) => answers(m),
        Frame::Batch(ms) => ms.iter().any(answers),
    });
    assert_eq!(whole.answered, answered);
});

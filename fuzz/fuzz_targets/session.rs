//! Fuzz target: the client session's message handler on arbitrary peer input.
//!
//! The input is split into NDJSON lines; each line that decodes is fed to a
//! session that has finished its handshake, with the first byte of each line
//! also driving the caller's side (new requests, cancels, clock steps). It
//! checks that nothing panics, that every request ends exactly once, and that
//! no deadline is left in the past.

#![no_main]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use mcp_proto::Message;
use mcp_proto::codec::ndjson::NdjsonDecoder;
use mcp_proto::session::{ClientSession, Event, RequestOptions, SessionOptions};

fuzz_target!(|input: &[u8]| {
    let start = Instant::now();
    let mut now = start;
    let mut session = ClientSession::new(SessionOptions::default());
    session.start(now).expect("a new session starts");
    while session.poll_transmit().is_some() {}
    let init: Message = serde_json::from_str(
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"f","version":"1"}}}"#,
    )
    .expect("valid initialize result");
    session.handle_message(now, init);

    let mut issued = Vec::new();
    let mut ended: HashMap<_, usize> = HashMap::new();
    let mut decoder = NdjsonDecoder::with_max_message_size(4096);
    decoder.push(input);
    while let Some(item) = decoder.next_frame() {
        let op = input
            .get(issued.len() % input.len().max(1))
            .copied()
            .unwrap_or(0);
        match op % 4 {
            0 => {
                if let Ok(handle) = session.request(
                    now,
                    "tools/call",
                    Some(&serde_json::json!({"name": "t"})),
                    RequestOptions::default()
                        .timeout(Some(Duration::from_millis(u64::from(op) * 10)))
                        .progress(op % 8 == 0)
                        .reset_timeout_on_progress(op % 16 == 0)
                        .max_total_timeout(None),
                ) {
                    issued.push(handle);
                }
            }
            1 => {
                if let Some(handle) = issued.get(usize::from(op) % issued.len().max(1)) {
                    session.cancel(*handle, None);
                }
            }
            2 => {
                now += Duration::from_millis(u64::from(op));
                session.handle_timeout(now);
            }
            _ => {}
        }
        if let Ok(frame) = item {
            session.handle_frame(now, frame);
        }
        drain(&mut session, &mut ended);
        if let Some(deadline) = session.poll_timeout() {
            assert!(deadline > now, "a deadline was left in the past");
        }
    }
    session.handle_close();
    drain(&mut session, &mut ended);
    for handle in &issued {
        assert_eq!(
            ended.get(handle),
            Some(&1),
            "request {handle:?} did not end exactly once"
        );
    }
});

fn drain(
    session: &mut ClientSession,
    ended: &mut HashMap<mcp_proto::session::RequestHandle, usize>,
) {
    while let Some(event) = session.poll_event() {
        if let Event::Completed { handle, .. } = event {
            *ended.entry(handle).or_default() += 1;
        }
    }
    while session.poll_transmit().is_some() {}
}

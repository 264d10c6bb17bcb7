//! `NdjsonTransport` over in-memory byte streams: the framing rules of its module docs, the failure of a request whose answer cannot be read, and the outbound budget that stops reading a peer that does not read.

use std::time::Duration;

use mcp_proto::{Frame, Message, RequestId};
use mcp_transport::ndjson::{NdjsonOptions, NdjsonTransport};
use mcp_transport::{Inbound, Transport, TransportError};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// A transport on one end of an in-memory pipe, and the far end.
fn pair(options: NdjsonOptions, buffer: usize) -> (NdjsonTransport, DuplexStream) {
    let (near, far) = tokio::io::duplex(buffer);
    let (read, write) = tokio::io::split(near);
    let transport = NdjsonTransport::new(read, write, options).expect("in a runtime");
    (transport, far)
}

fn notification(i: i64) -> Message {
    Message::notification("n", Some(&i)).expect("encodes")
}

async fn frame(transport: &NdjsonTransport) -> Message {
    match transport.recv().await {
        Inbound::Frame(Frame::Single(message)) => message,
        other => panic!("expected a message, got {other:?}"),
    }
}

#[tokio::test]
async fn crlf_blank_lines_a_bom_and_stray_lines_are_read_by_the_framing_rules() {
    let (transport, mut far) = pair(NdjsonOptions::new("test peer"), 64 * 1024);
    far.write_all(b"\xEF\xBB\xBFWelcome to my server v1.0\r\n\r\n\n")
        .await
        .unwrap();
    far.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":1}\r\n")
        .await
        .unwrap();
    far.write_all(b"second stray line\n").await.unwrap();
    // The last line needs no line ending once the stream ends.
    far.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":2}")
        .await
        .unwrap();
    far.shutdown().await.unwrap();
    assert_eq!(frame(&transport).await, notification(1));
    assert_eq!(frame(&transport).await, notification(2));
    assert!(matches!(transport.recv().await, Inbound::Closed(None)));
    // The first stray line is kept, the byte order mark dropped.
    assert_eq!(
        transport.first_stray_line().as_deref(),
        Some("Welcome to my server v1.0")
    );
    // The same line through the extensions of a boxed transport, the way a
    // client that holds any transport reaches it.
    let boxed: Box<dyn Transport> = Box::new(transport);
    let extensions = boxed.extensions().expect("ndjson has extensions");
    assert_eq!(
        extensions.first_stray_line().as_deref(),
        Some("Welcome to my server v1.0")
    );
    assert_eq!(extensions.stderr_tail(), None);
}

#[tokio::test]
async fn sends_are_lines_of_compact_json_and_close_ends_the_peers_input() {
    let (transport, far) = pair(NdjsonOptions::default(), 64 * 1024);
    for i in 0..3 {
        transport.send(notification(i)).await.unwrap();
    }
    transport.close().await.unwrap();
    transport.close().await.unwrap();
    assert!(matches!(
        transport.send(notification(9)).await,
        Err(TransportError::Closed)
    ));
    let mut lines = BufReader::new(far).lines();
    for i in 0..3 {
        let line = lines.next_line().await.unwrap().expect("a line");
        assert_eq!(
            line,
            format!(r#"{{"jsonrpc":"2.0","method":"n","params":{i}}}"#)
        );
    }
    assert_eq!(lines.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn a_line_over_the_limit_ends_the_connection_with_too_large() {
    let (transport, mut far) = pair(
        NdjsonOptions::new("test peer").max_message_size(64),
        64 * 1024,
    );
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":\"{}\"}}\n",
        "x".repeat(100)
    );
    far.write_all(long.as_bytes()).await.unwrap();
    match transport.recv().await {
        Inbound::Closed(Some(TransportError::TooLarge { limit: 64 })) => {}
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[tokio::test]
async fn an_answer_that_is_not_valid_utf8_fails_its_request_at_once() {
    let (transport, mut far) = pair(NdjsonOptions::new("test peer"), 64 * 1024);
    far.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"text\":\"caf\xe9\"}}\n")
        .await
        .unwrap();
    far.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":1}\n")
        .await
        .unwrap();
    match transport.recv().await {
        Inbound::Undelivered {
            id: Some(RequestId::Number(7)),
            error: TransportError::Protocol(reason),
        } => assert!(reason.contains("not a JSON-RPC message"), "{reason}"),
        other => panic!("expected request 7 to fail, got {other:?}"),
    }
    // The connection goes on.
    assert_eq!(frame(&transport).await, notification(1));
}

#[tokio::test(start_paused = true)]
async fn past_the_outbound_budget_the_peer_is_not_read_until_it_reads() {
    // A pipe of 1 KiB that the peer does not read, and a budget of 4 KiB.
    let options = NdjsonOptions::new("test peer").outbound_budget(4 * 1024);
    let (transport, far) = pair(options, 1024);
    let (mut far_read, mut far_write) = tokio::io::split(far);
    let line = |i: i64| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{i}}}\n");
    // A frame read while nothing is unsent: the reader then waits in a read.
    far_write.write_all(line(0).as_bytes()).await.unwrap();
    assert_eq!(frame(&transport).await, notification(0));
    let big = Message::notification("n", Some(&"x".repeat(512))).unwrap();
    for _ in 0..12 {
        transport.send(big.clone()).await.unwrap();
    }
    // The read already waiting when the budget ran out takes its chunk; the
    // reader then stops before the next one.
    far_write.write_all(line(1).as_bytes()).await.unwrap();
    assert_eq!(frame(&transport).await, notification(1));
    far_write.write_all(line(2).as_bytes()).await.unwrap();
    // With the clock paused, the timeout fires only once every task is
    // idle: the reader is waiting for the backlog, not for the peer.
    let waited = tokio::time::timeout(Duration::from_secs(60), transport.recv()).await;
    assert!(
        waited.is_err(),
        "the peer's frame was read past the budget: {waited:?}"
    );
    // The peer reads: the backlog drains below the budget and reading
    // resumes.
    let reading = tokio::spawn(async move {
        let mut sink = Vec::new();
        let _ = far_read.read_to_end(&mut sink).await;
        sink.len()
    });
    assert_eq!(frame(&transport).await, notification(2));
    transport.close().await.unwrap();
    drop(far_write);
    let read = reading.await.unwrap();
    assert_eq!(read, 12 * (big.to_bytes().len() + 1));
}

#[tokio::test]
async fn a_tool_call_whose_answer_is_not_utf8_fails_at_once_through_the_client() {
    use mcp_proto::EraPolicy;
    use mcp_proto::session::SessionOptions;
    use mcp_transport::{Client, ClientError, ClientOptions};
    let (transport, far) = pair(NdjsonOptions::new("test peer"), 64 * 1024);
    // A handshake-era server that answers `tools/call` with a line holding
    // invalid UTF-8, and nothing else after it.
    let server = tokio::spawn(async move {
        let (read, mut write) = tokio::io::split(far);
        let mut lines = BufReader::new(read).lines();
        while let Some(line) = lines.next_line().await.unwrap() {
            let request: serde_json::Value = serde_json::from_str(&line).unwrap();
            let id = request["id"].to_string();
            let answer = match request["method"].as_str() {
                Some(mcp_proto::methods::INITIALIZE) => format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"protocolVersion\":{},\
                     \"capabilities\":{{\"tools\":{{}}}},\"serverInfo\":{{\"name\":\"s\",\"version\":\"1\"}}}}}}\n",
                    request["params"]["protocolVersion"]
                )
                .into_bytes(),
                Some("tools/call") => [
                    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"caf")
                        .into_bytes(),
                    b"\xe9\"}]}}\n".to_vec(),
                ]
                .concat(),
                _ => continue,
            };
            write.write_all(&answer).await.unwrap();
        }
    });
    let mut options = ClientOptions::default();
    options.session = SessionOptions::default().era(EraPolicy::Legacy);
    let client = Client::connect(transport, options)
        .await
        .expect("handshake");
    let started = std::time::Instant::now();
    let error = client
        .call_tool("t", None)
        .await
        .expect_err("the answer cannot be read");
    // At once, not at the 60 s request deadline.
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(error, ClientError::Undelivered { .. }),
        "expected the call to fail as undelivered, got {error:?}"
    );
    let Some(TransportError::Protocol(reason)) = error.transport_error() else {
        panic!("expected a protocol error, got {error:?}");
    };
    assert!(reason.contains("not a JSON-RPC message"), "{reason}");
    client.close().await;
    server.await.unwrap();
}

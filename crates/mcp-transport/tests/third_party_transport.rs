//! A transport written outside the crate, with only the public API, drives the client.
//!
//! This is what a downstream project does to carry MCP over its own channel
//! (a WebSocket, a message bus, ...). It also lets the test inject what
//! real transports report: undelivered requests and expired sessions.

use std::time::Duration;

use async_trait::async_trait;
use mcp_proto::codec::EncodeError;
use mcp_proto::{Frame, Message};
use mcp_transport::scripted::Peer;
use mcp_transport::{
    CallOptions, Client, ClientError, ClientOptions, Inbound, Transport, TransportError,
};
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};

/// A transport whose inbound side is fed by the test and whose outbound
/// side the test reads.
struct ChannelTransport {
    outbound: mpsc::UnboundedSender<Message>,
    inbound: Mutex<mpsc::UnboundedReceiver<Inbound>>,
    closed: mpsc::UnboundedSender<()>,
}

#[async_trait]
impl Transport for ChannelTransport {
    /// A request for `refuse/encode` stands for a message the channel has
    /// no form for: refused at once, with nothing sent.
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        if message.method() == Some("refuse/encode") {
            return Err(TransportError::Encode(EncodeError::LineBreakInString));
        }
        self.outbound
            .send(message)
            .map_err(|_| TransportError::Closed)
    }

    async fn recv(&self) -> Inbound {
        self.inbound
            .lock()
            .await
            .recv()
            .await
            .unwrap_or(Inbound::Closed(None))
    }

    async fn close(&self) -> Result<(), TransportError> {
        let _ = self.closed.send(());
        Ok(())
    }
}

struct ChannelEnd {
    sent: mpsc::UnboundedReceiver<Message>,
    feed: mpsc::UnboundedSender<Inbound>,
    closed: mpsc::UnboundedReceiver<()>,
}

impl ChannelEnd {
    async fn next(&mut self) -> Value {
        let message = self.sent.recv().await.expect("the client sent nothing");
        serde_json::from_slice(&message.to_bytes()).unwrap()
    }

    fn reply(&self, value: Value) {
        let message: Message = serde_json::from_value(value).unwrap();
        self.feed
            .send(Inbound::Frame(Frame::Single(message)))
            .unwrap();
    }
}

async fn connect() -> (Client, ChannelEnd) {
    let (outbound, sent) = mpsc::unbounded_channel();
    let (feed, inbound) = mpsc::unbounded_channel();
    let (closed_tx, closed) = mpsc::unbounded_channel();
    let transport = ChannelTransport {
        outbound,
        inbound: Mutex::new(inbound),
        closed: closed_tx,
    };
    let mut peer = ChannelEnd { sent, feed, closed };
    let connecting = tokio::spawn(Client::connect(transport, ClientOptions::default()));
    // A handshake-era server: the era probe gets -32601, then `initialize`.
    let probe = peer.next().await;
    assert_eq!(probe["method"], "server/discover");
    peer.reply(json!({"jsonrpc": "2.0", "id": probe["id"],
        "error": {"code": -32601, "message": "Method not found"}}));
    let init = peer.next().await;
    peer.reply(json!({"jsonrpc": "2.0", "id": init["id"], "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "channel", "version": "1"}
    }}));
    let client = connecting.await.unwrap().unwrap();
    assert_eq!(peer.next().await["method"], "notifications/initialized");
    (client, peer)
}

#[tokio::test]
async fn an_outside_transport_carries_a_whole_session() {
    let (client, mut peer) = connect().await;
    assert_eq!(client.negotiated().unwrap().version.as_str(), "2025-06-18");
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("echo", None).await }
    });
    let request = peer.next().await;
    peer.reply(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "content": [{"type": "text", "text": "ok"}]
    }}));
    assert_eq!(call.await.unwrap().unwrap().content.len(), 1);
    client.close().await;
    assert_eq!(
        peer.closed.recv().await,
        Some(()),
        "close reached the transport"
    );
}

#[tokio::test]
async fn an_undelivered_request_fails_alone() {
    let (client, mut peer) = connect().await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("echo", None).await }
    });
    let request = peer.next().await;
    let id: mcp_proto::RequestId = serde_json::from_value(request["id"].clone()).unwrap();
    peer.feed
        .send(Inbound::Undelivered {
            id: Some(id),
            error: TransportError::Http {
                status: 500,
                body: "boom".into(),
            },
        })
        .unwrap();
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::Undelivered { reason, source: Some(source) }
                if reason == "transport error" && source.http_status() == Some(500)
        ),
        "{error:?}"
    );
    assert!(
        !client.is_closed(),
        "one failed POST does not end the connection"
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_the_transport_cannot_encode_fails_at_once_and_alone() {
    let (client, mut peer) = connect().await;
    let started = tokio::time::Instant::now();
    let options = CallOptions::default().timeout(Some(Duration::from_secs(60)));
    let error = client
        .request_raw::<Value>("refuse/encode", None, options)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error.transport_error(),
            Some(TransportError::Encode(EncodeError::LineBreakInString))
        ),
        "{error:?}"
    );
    assert!(!error.is_timeout(), "{error:?}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "failed before its deadline"
    );
    assert!(!client.is_closed(), "the connection goes on");
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("echo", None).await }
    });
    let request = peer.next().await;
    assert_eq!(request["method"], "tools/call");
    peer.reply(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}}));
    assert!(call.await.unwrap().is_ok());
}

#[tokio::test]
async fn an_expired_session_fails_pending_calls_with_session_expired() {
    let (client, mut peer) = connect().await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("echo", None).await }
    });
    let request = peer.next().await;
    let id: mcp_proto::RequestId = serde_json::from_value(request["id"].clone()).unwrap();
    peer.feed
        .send(Inbound::Undelivered {
            id: Some(id),
            error: TransportError::SessionExpired,
        })
        .unwrap();
    let error = call.await.unwrap().unwrap_err();
    assert!(matches!(error, ClientError::SessionExpired), "{error:?}");
    assert!(error.is_closed());
    client.wait_closed().await;
    assert!(matches!(
        client.ping().await,
        Err(ClientError::SessionExpired)
    ));
}

#[tokio::test]
async fn a_broken_transport_reports_why() {
    let (client, mut peer) = connect().await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("echo", None).await }
    });
    peer.next().await;
    peer.feed
        .send(Inbound::Closed(Some(TransportError::TooLarge {
            limit: 1024,
        })))
        .unwrap();
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::Closed { reason, source: Some(source) }
                if reason == "transport error"
                    && matches!(**source, TransportError::TooLarge { limit: 1024 })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_boxed_transport_drives_the_client() {
    let (client_end, peer) = Peer::pair();
    let boxed: Box<dyn Transport> = Box::new(client_end);
    let connecting = tokio::spawn(Client::connect(boxed, ClientOptions::default()));
    peer.refuse_probe().await;
    let init = peer.expect("initialize").await;
    peer.respond(
        &init,
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "boxed", "version": "1"}}),
    )
    .await;
    let client = connecting.await.unwrap().unwrap();
    assert_eq!(client.negotiated().unwrap().server_info().name, "boxed");
}

/// A peer that sends pings without end and never takes a message: `send`
/// waits for ever, as on a pipe nobody reads.
struct PingFlood {
    next: std::sync::atomic::AtomicI64,
}

#[async_trait]
impl Transport for PingFlood {
    async fn send(&self, _message: Message) -> Result<(), TransportError> {
        std::future::pending().await
    }

    async fn recv(&self) -> Inbound {
        // A frame is always ready; the other tasks still get their turn.
        tokio::task::yield_now().await;
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ping: Message =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).unwrap();
        Inbound::Frame(Frame::Single(ping))
    }

    async fn close(&self) -> Result<(), TransportError> {
        Ok(())
    }
}

#[tokio::test]
async fn a_server_that_never_reads_its_answers_fails_the_connection_at_a_hard_bound() {
    // A transport that keeps reading regardless: the client's own bound
    // ends the connection rather than holding every pong.
    let transport = PingFlood {
        next: std::sync::atomic::AtomicI64::new(0),
    };
    let (client, driver) = Client::new(transport, ClientOptions::default());
    let client = std::sync::Arc::new(client);
    // The session answers pings once the handshake is under way.
    let handshake = tokio::spawn({
        let client = client.clone();
        async move { client.initialize().await }
    });
    let reason = tokio::time::timeout(Duration::from_secs(60), driver.run())
        .await
        .expect("the driver stops at the bound");
    assert!(handshake.await.unwrap().is_err());
    let Some(TransportError::Protocol(text)) = reason.transport_error() else {
        panic!("expected a protocol error, got {reason:?}");
    };
    assert!(
        text.contains("requests whose answers it did not read"),
        "{text}"
    );
    assert!(client.is_closed());
}

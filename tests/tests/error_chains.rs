//! Every library error says its own part in `Display` and leaves the cause to `source()`, so a host printing the chain shows each part once.
//!
//! Each error type of the library crates that can carry a cause is built
//! here, from the code that builds it where that is cheap (a client over a
//! transport that fails on cue, a store read from a directory), and its
//! chain is walked: no link's text contains the next link's.

use std::error::Error;
use std::io;
use std::sync::Mutex;

use async_trait::async_trait;
use mcp_proto::codec::EncodeError;
use mcp_proto::session::{CloseReason, HandshakeError};
use mcp_proto::text::ErrorChain;
use mcp_proto::version::VersionPolicy;
use mcp_proto::{EraPolicy, Frame, Message};
use mcp_transport::{Client, ClientError, ClientOptions, Inbound, Transport, TransportError};
use serde_json::json;
use tokio::sync::mpsc;

/// The texts of `error` and its causes, outermost first; fails when a
/// link's text is empty or contains the next link's.
fn chain(error: &(dyn Error + 'static)) -> Vec<String> {
    let mut texts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        texts.push(cause.to_string());
        source = cause.source();
    }
    for pair in texts.windows(2) {
        assert!(!pair[0].is_empty(), "an empty link in {texts:?}");
        assert!(
            !pair[0].contains(&pair[1]),
            "{:?} repeats its cause {:?} (chain {texts:?})",
            pair[0],
            pair[1]
        );
    }
    texts
}

fn broken_pipe() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "broken pipe")
}

fn serde_error() -> serde_json::Error {
    serde_json::from_str::<serde_json::Value>("{").unwrap_err()
}

#[test]
fn protocol_errors_leave_their_causes_to_source() {
    let mut decoder = mcp_proto::codec::NdjsonDecoder::new();
    decoder.push(b"{not json\n");
    let not_json = decoder.next_frame().expect("a line").unwrap_err();
    assert_eq!(chain(&not_json).len(), 2);
    assert_eq!(chain(&EncodeError::Json(serde_error())).len(), 2);
    let unsupported = VersionPolicy::default().accept("1999-01-01").unwrap_err();
    let closed = CloseReason::Handshake(HandshakeError::UnsupportedVersion(unsupported));
    let texts = chain(&closed);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[1].contains("1999-01-01"), "{texts:?}");
}

#[test]
fn transport_errors_leave_their_causes_to_source() {
    let io = chain(&TransportError::Io(broken_pipe()));
    assert_eq!(io, ["i/o error", "broken pipe"]);
    let encode = chain(&TransportError::Encode(EncodeError::LineBreakInString));
    assert_eq!(encode.len(), 2);
    let nested = TransportError::Encode(EncodeError::Json(serde_error()));
    assert_eq!(chain(&nested).len(), 3);
    let oauth: TransportError = mcp_client_oauth::OAuthError::Store(broken_pipe()).into();
    assert_eq!(chain(&oauth), ["the token store failed", "broken pipe"]);
}

#[test]
fn config_errors_leave_their_causes_to_source() {
    let dir = tempfile::tempdir().unwrap();
    // A store whose file is a directory cannot be read.
    let store = mcp_config::Store::open(dir.path());
    let read = store.list().expect_err("a directory is not a store file");
    let texts = chain(&read);
    assert!(texts.len() >= 2, "the i/o error is the source: {texts:?}");
    let path = dir.path().join("trust.json");
    for error in [
        mcp_config::PrivateFileError::Read {
            path: path.clone(),
            source: broken_pipe(),
        },
        mcp_config::PrivateFileError::Write {
            path: path.clone(),
            source: broken_pipe(),
        },
        mcp_config::PrivateFileError::Location(read),
    ] {
        assert!(chain(&error).len() >= 2, "{error:?}");
    }
    let source = mcp_config::SourceError::Io {
        path,
        source: broken_pipe(),
    };
    assert_eq!(chain(&source).len(), 2);
    let store_error = mcp_config::Store::open(dir.path()).list().unwrap_err();
    let manager = mcp_manager::ManagerError::Store(store_error);
    assert!(chain(&manager).len() >= 2);
}

#[test]
fn a_connect_error_shows_its_management_message_once() {
    let error = mcp_manager::ConnectError::new(
        mcp_manager::ErrorCode::HttpStatus,
        "the server answered HTTP 500: boom",
        "transport.url",
    )
    .with_source(TransportError::Http {
        status: 500,
        body: "boom".into(),
    });
    // The raw cause is kept for logs, not chained after a message that
    // already says it.
    assert_eq!(
        chain(&error),
        ["the server answered HTTP 500: boom [http_status] (see `transport.url`)"]
    );
    assert!(error.source.is_some());
}

/// A transport that answers `initialize` and fails everything else on cue:
/// `tools/list` gets a malformed result, `x/close` ends the connection with
/// a broken pipe, any other request is undelivered with HTTP 500.
struct FailingTransport {
    inbound: tokio::sync::Mutex<mpsc::UnboundedReceiver<Inbound>>,
    feed: mpsc::UnboundedSender<Inbound>,
    fail_initialize: bool,
    closed: Mutex<bool>,
}

impl FailingTransport {
    fn new(fail_initialize: bool) -> FailingTransport {
        let (feed, inbound) = mpsc::unbounded_channel();
        FailingTransport {
            inbound: tokio::sync::Mutex::new(inbound),
            feed,
            fail_initialize,
            closed: Mutex::new(false),
        }
    }

    fn reply(&self, value: serde_json::Value) {
        let message: Message = serde_json::from_value(value).unwrap();
        let _ = self.feed.send(Inbound::Frame(Frame::Single(message)));
    }
}

#[async_trait]
impl Transport for FailingTransport {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let Message::Request(request) = message else {
            return Ok(());
        };
        let id = serde_json::to_value(&request.id).unwrap();
        match request.method.as_str() {
            mcp_proto::methods::INITIALIZE if !self.fail_initialize => self.reply(json!({
                "jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "failing", "version": "1"}
                }
            })),
            "tools/list" => {
                self.reply(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": 5}}));
            }
            "x/close" => {
                let _ = self
                    .feed
                    .send(Inbound::Closed(Some(TransportError::Io(broken_pipe()))));
            }
            _ => {
                let _ = self.feed.send(Inbound::Undelivered {
                    id: Some(request.id),
                    error: TransportError::Http {
                        status: 500,
                        body: "boom".into(),
                    },
                });
            }
        }
        Ok(())
    }

    async fn recv(&self) -> Inbound {
        if *self.closed.lock().unwrap() {
            return Inbound::Closed(None);
        }
        let item = self.inbound.lock().await.recv().await;
        let item = item.unwrap_or(Inbound::Closed(None));
        if matches!(item, Inbound::Closed(_)) {
            *self.closed.lock().unwrap() = true;
        }
        item
    }

    async fn close(&self) -> Result<(), TransportError> {
        Ok(())
    }
}

fn legacy() -> ClientOptions {
    ClientOptions::default()
        .session(mcp_proto::session::SessionOptions::default().era(EraPolicy::Legacy))
}

#[tokio::test]
async fn client_errors_leave_the_transports_error_to_source() {
    // `initialize` undelivered: the handshake fails, the HTTP status is its source.
    let error = Client::connect(FailingTransport::new(true), legacy())
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Handshake(..)), "{error:?}");
    let texts = chain(&error);
    assert_eq!(
        texts.last().map(String::as_str),
        Some("HTTP 500: boom"),
        "{texts:?}"
    );
    assert_eq!(
        ErrorChain(&error).to_string(),
        "handshake failed: initialize not delivered: transport error: HTTP 500: boom"
    );

    let client = Client::connect(FailingTransport::new(false), legacy())
        .await
        .unwrap();
    // A request the transport could not deliver.
    let error = client
        .request_raw::<serde_json::Value>("x/other", None, Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Undelivered { .. }),
        "{error:?}"
    );
    assert_eq!(
        chain(&error),
        ["request not delivered: transport error", "HTTP 500: boom"]
    );
    // A result of the wrong shape: the decoder's error is the source.
    let error = client.list_tools(None).await.unwrap_err();
    assert!(
        matches!(error, ClientError::InvalidResult { .. }),
        "{error:?}"
    );
    assert_eq!(chain(&error).len(), 2);
    // The connection broken under a request.
    let error = client
        .request_raw::<serde_json::Value>("x/close", None, Default::default())
        .await
        .unwrap_err();
    assert!(error.is_closed(), "{error:?}");
    assert_eq!(
        chain(&error),
        [
            "connection closed: transport error",
            "i/o error",
            "broken pipe"
        ]
    );
}

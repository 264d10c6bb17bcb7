//! Over stdio a response reaches its waiting caller straight from the transport's reading task: the driver is not woken to relay it.
//!
//! The driver future is wrapped in one that counts its polls; a driver that
//! relays responses is polled at least once per call.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use mcp_proto::types::ContentBlock;
use mcp_transport::{Client, ClientOptions, StdioOptions, StdioTransport};
use serde_json::json;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// A future that counts how many times it is polled.
struct Counted<F> {
    future: Pin<Box<F>>,
    polls: Arc<AtomicUsize>,
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        self.future.as_mut().poll(cx)
    }
}

fn echo_args(text: &str) -> Option<mcp_proto::types::JsonObject> {
    json!({ "text": text }).as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_calls_do_not_wake_the_driver() {
    let mut options = StdioOptions::new(FIXTURE);
    options.args = vec!["--era".to_owned(), "legacy".to_owned()];
    let transport = StdioTransport::spawn(options).expect("the fixture server starts");
    let (client, driver) = Client::new(transport, ClientOptions::default());
    let polls = Arc::new(AtomicUsize::new(0));
    let running = tokio::spawn(Counted {
        future: Box::pin(driver.run()),
        polls: Arc::clone(&polls),
    });
    client.initialize().await.expect("the handshake succeeds");
    // The first call arms the driver's deadline timer.
    client.call_tool("echo", echo_args("warm")).await.unwrap();

    const CALLS: usize = 100;
    let before = polls.load(Ordering::Relaxed);
    for i in 0..CALLS {
        let text = format!("call {i}");
        let result = client.call_tool("echo", echo_args(&text)).await.unwrap();
        match &result.content[..] {
            [ContentBlock::Text(block)] => assert_eq!(block.text, text),
            other => panic!("call {i} came back as {other:?}"),
        }
    }
    let during = polls.load(Ordering::Relaxed) - before;
    assert!(
        during < CALLS / 10,
        "the driver was polled {during} times during {CALLS} sequential calls"
    );

    // Closing still goes through the driver, which ends.
    client.close().await;
    let reason = running.await.expect("the driver does not panic");
    assert!(reason.is_closed(), "{reason}");
}

//! A stdio server that never reads its stdin and writes 100,000 pings: the client stops reading it once its answers back up, and its memory stays bounded (the process's peak resident set, `VmHWM`, under 64 MiB).
//!
//! Alone in its test binary, so that the peak measured is this test's.

use std::sync::Arc;
use std::time::Duration;

use mcp_transport::{Client, ClientOptions, StdioOptions, StdioTransport};
use tokio::sync::Notify;

/// Tells the test when the transport logs that it stopped reading the
/// server (a real event, not a guess at timing).
struct PauseWatch(Arc<Notify>);

/// Finds the event's message.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for PauseWatch {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.is_event()
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        if message.0.contains("reading pauses") {
            self.0.notify_one();
        }
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// A field of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux's /proc is mounted");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_pings_without_reading_keeps_the_client_bounded() {
    let paused = Arc::new(Notify::new());
    tracing::subscriber::set_global_default(PauseWatch(paused.clone()))
        .expect("the only subscriber of this binary");
    let before = status_kib("VmHWM:");
    // 100,000 pings with 100-byte ids: about 13 MB of answers, three times
    // the outbound budget, that the server never reads.
    let script = r#"BEGIN {
        pad = sprintf("%80s", ""); gsub(/ /, "x", pad);
        for (i = 0; i < 100000; i++)
            printf "{\"jsonrpc\":\"2.0\",\"id\":\"ping-%08d-%s\",\"method\":\"ping\"}\n", i, pad;
    }"#;
    let mut options = StdioOptions::new("awk");
    options.args = vec![script.to_owned()];
    let transport = StdioTransport::spawn(options).expect("awk runs (install awk)");
    let (client, driver) = Client::new(transport, ClientOptions::default());
    tokio::spawn(driver.run());
    let client = Arc::new(client);
    // The handshake never completes (the server reads nothing); while it is
    // under way the session answers every ping.
    let handshake = tokio::spawn({
        let client = client.clone();
        async move { client.initialize().await }
    });
    tokio::time::timeout(Duration::from_secs(60), paused.notified())
        .await
        .expect("the client never stopped reading a server that does not read its answers");
    let peak = status_kib("VmHWM:");
    eprintln!(
        "peak resident set: {} KiB before, {} KiB once reading paused (+{} KiB)",
        before,
        peak,
        peak.saturating_sub(before)
    );
    assert!(
        peak < 64 * 1024,
        "the client's peak resident set is {peak} KiB"
    );
    client.close().await;
    handshake.abort();
}

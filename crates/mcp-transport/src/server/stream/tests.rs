//! The stream server over tokio's in-memory duplex: the reply budget, cancellation, the end of input, and requests both ways.

use std::sync::Arc;
use std::time::Duration;

use mcp_proto::jsonrpc::{ErrorObject, RawJson, error_codes};
use mcp_proto::server::{ClientRequest, ServerOptions};
use mcp_proto::types::{ListChangedCapability, ServerCapabilities};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf,
    WriteHalf,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::*;

/// Tells the test when a handler's work ends without finishing (its
/// future dropped).
struct Dropped(Option<mpsc::UnboundedSender<String>>, String);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(self.1.clone());
        }
    }
}

/// Tools: `hang` never answers (and reports when its work is dropped),
/// `roots` asks the client for its roots and answers with them, `slow`
/// reports progress twice and answers, `panic` panics, `echo` answers
/// with its `text` argument.
struct Tools {
    dropped: mpsc::UnboundedSender<String>,
    started: mpsc::UnboundedSender<String>,
}

#[async_trait]
impl ServerHandler for Tools {
    async fn request(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let params: Value = request
            .params
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let name = params["name"].as_str().unwrap_or_default().to_owned();
        let text = match name.as_str() {
            "hang" => {
                let mut guard = Dropped(Some(self.dropped.clone()), context.id().to_string());
                let _ = self.started.send(context.id().to_string());
                std::future::pending::<()>().await;
                guard.0 = None;
                unreachable!("pending never ends")
            }
            "roots" => {
                let roots = context
                    .peer()
                    .request("roots/list", None::<&Value>, Some(Duration::from_secs(60)))
                    .await
                    .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))?;
                roots.get().to_owned()
            }
            "slow" => {
                assert!(context.wants_progress());
                context.progress(1.0, Some(2.0), Some("half")).unwrap();
                context.progress(2.0, Some(2.0), None).unwrap();
                "done".to_owned()
            }
            "panic" => panic!("a handler's own failure"),
            "echo" => params["arguments"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            other => return Err(ErrorObject::invalid_params(format!("unknown tool {other}"))),
        };
        RawJson::encode(&json!({"content": [{"type": "text", "text": text}]}))
            .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
    }
}

struct Client {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    serve: JoinHandle<io::Result<()>>,
    dropped: mpsc::UnboundedReceiver<String>,
    started: mpsc::UnboundedReceiver<String>,
}

impl Client {
    fn start(options: StreamOptions) -> Client {
        let (dropped_tx, dropped) = mpsc::unbounded_channel();
        let (started_tx, started) = mpsc::unbounded_channel();
        let handler = Arc::new(Tools {
            dropped: dropped_tx,
            started: started_tx,
        });
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let serve = tokio::spawn(serve(options, handler, server_read, server_write));
        let (read, write) = tokio::io::split(client);
        Client {
            write,
            lines: BufReader::new(read).lines(),
            serve,
            dropped,
            started,
        }
    }

    fn new() -> Client {
        Client::start(StreamOptions::new(options()))
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a message within 10 s")
            .unwrap()
            .expect("the server is still writing");
        serde_json::from_str(&line).unwrap()
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.next().await
    }

    /// Waits until the handler runs the request `id`.
    async fn started(&mut self, id: &str) {
        let started = tokio::time::timeout(Duration::from_secs(10), self.started.recv())
            .await
            .expect("the handler starts");
        assert_eq!(started.as_deref(), Some(id));
    }

    async fn initialize(&mut self, capabilities: Value) {
        let init = self
            .request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    fn call(id: u64, name: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": {}}})
    }
}

fn options() -> ServerOptions {
    ServerOptions::default().capabilities(ServerCapabilities {
        tools: Some(ListChangedCapability::default()),
        ..ServerCapabilities::default()
    })
}

/// `{"jsonrpc":"2.0","id":N,"method":"ping"}` lines, `count` of them.
fn pings(first: u64, count: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for id in first..first + count {
        out.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes(),
        );
    }
    out
}

#[tokio::test]
async fn the_session_answers_the_lifecycle_and_the_handler_the_rest() {
    let mut client = Client::new();
    let early = client.request(1, "tools/list", json!({})).await;
    assert_eq!(
        early["error"]["code"],
        error_codes::INVALID_REQUEST,
        "{early}"
    );
    client.initialize(json!({})).await;
    let unknown = client.request(2, "prompts/list", json!({})).await;
    assert_eq!(unknown["error"]["code"], error_codes::METHOD_NOT_FOUND);
    let refused = client
        .request(3, "tools/call", json!({"name": "nope"}))
        .await;
    assert_eq!(refused["error"]["code"], error_codes::INVALID_PARAMS);
    client.write.write_all(b"{not json\n").await.unwrap();
    let parse = client.next().await;
    assert_eq!(parse["error"]["code"], error_codes::PARSE_ERROR);
    assert!(parse["id"].is_null());
    let ping = client.request(4, "ping", json!({})).await;
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
}

#[tokio::test]
async fn a_line_longer_than_the_limit_is_refused_and_the_connection_goes_on() {
    let options = StreamOptions::new(options().max_message_size(1024));
    let mut client = Client::start(options);
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "a".repeat(100 * 1024)
    );
    client.write.write_all(long.as_bytes()).await.unwrap();
    let refused = client.next().await;
    assert_eq!(
        refused["error"]["code"],
        error_codes::INVALID_REQUEST,
        "{refused}"
    );
    assert!(refused["id"].is_null());
    let ping = client.request(2, "ping", json!({})).await;
    assert_eq!(ping["id"], 2);
}

#[tokio::test]
async fn a_handler_that_panics_answers_with_an_internal_error_and_the_others_go_on() {
    let mut client = Client::new();
    client.initialize(json!({})).await;
    client.send(Client::call(5, "hang")).await;
    client.started("5").await;
    let failed = client
        .request(6, "tools/call", json!({"name": "panic"}))
        .await;
    assert_eq!(failed["id"], 6, "{failed}");
    assert_eq!(
        failed["error"]["code"],
        error_codes::INTERNAL_ERROR,
        "{failed}"
    );
    let echoed = client
        .request(
            7,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still here"}}),
        )
        .await;
    assert_eq!(
        echoed["result"]["content"][0]["text"], "still here",
        "{echoed}"
    );
    // The request that waits was not dropped by its neighbour's failure.
    assert!(client.dropped.try_recv().is_err());
}

#[tokio::test]
async fn a_cancelled_request_drops_the_handlers_work_and_gets_no_answer() {
    let mut client = Client::new();
    client.initialize(json!({})).await;
    client.send(Client::call(10, "hang")).await;
    client.started("10").await;
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 10, "reason": "enough"}}),
        )
        .await;
    let dropped = tokio::time::timeout(Duration::from_secs(10), client.dropped.recv())
        .await
        .expect("the handler's work is dropped");
    assert_eq!(dropped.as_deref(), Some("10"));
    // The next answer is the ping's: the cancelled request never answers.
    let ping = client.request(11, "ping", json!({})).await;
    assert_eq!(ping["id"], 11, "{ping}");
}

#[tokio::test]
async fn the_end_of_input_cancels_the_work_in_flight_and_ends_serving() {
    let mut client = Client::new();
    client.initialize(json!({})).await;
    client.send(Client::call(20, "hang")).await;
    client.started("20").await;
    client.send(Client::call(21, "hang")).await;
    client.started("21").await;
    client.write.shutdown().await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(10), &mut client.serve)
        .await
        .expect("serving ends with the input");
    served.unwrap().unwrap();
    let mut dropped = vec![
        client.dropped.recv().await.unwrap(),
        client.dropped.recv().await.unwrap(),
    ];
    dropped.sort();
    assert_eq!(dropped, ["20", "21"]);
    // Nothing more is written: the output ends.
    assert_eq!(client.lines.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn a_server_request_goes_to_the_client_and_its_answer_back_to_the_handler() {
    let mut client = Client::new();
    client.initialize(json!({"roots": {}})).await;
    client.send(Client::call(30, "roots")).await;
    let asked = client.next().await;
    assert_eq!(asked["method"], "roots/list", "{asked}");
    let id = asked["id"].clone();
    client
        .send(json!({"jsonrpc": "2.0", "id": id,
                     "result": {"roots": [{"uri": "file:///w"}]}}))
        .await;
    let answer = client.next().await;
    assert_eq!(answer["id"], 30, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let roots: Value = serde_json::from_str(text).unwrap();
    assert_eq!(roots["roots"][0]["uri"], "file:///w");
}

#[tokio::test]
async fn a_server_request_the_client_cannot_take_is_refused_to_the_handler() {
    let mut client = Client::new();
    // No `roots` capability: the session refuses to send `roots/list`.
    client.initialize(json!({})).await;
    client.send(Client::call(31, "roots")).await;
    let answer = client.next().await;
    assert_eq!(answer["id"], 31, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("roots"), "{message}");
}

#[tokio::test]
async fn progress_goes_out_with_the_clients_token_before_the_answer() {
    let mut client = Client::new();
    client.initialize(json!({})).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 40, "method": "tools/call",
                     "params": {"name": "slow", "_meta": {"progressToken": "p"}}}))
        .await;
    let first = client.next().await;
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progressToken"], "p");
    assert_eq!(first["params"]["message"], "half");
    let second = client.next().await;
    assert_eq!(second["params"]["progress"], 2.0, "{second}");
    let answer = client.next().await;
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
}

#[tokio::test]
async fn the_peer_notifies_the_client_of_the_servers_own_accord() {
    let (dropped, _) = mpsc::unbounded_channel();
    let (started, _) = mpsc::unbounded_channel();
    let server = StreamServer::new(StreamOptions::new(options()));
    let peer = server.peer();
    let (client, end) = tokio::io::duplex(64 * 1024);
    let (end_read, end_write) = tokio::io::split(end);
    let serve =
        tokio::spawn(server.serve(Arc::new(Tools { dropped, started }), end_read, end_write));
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    peer.notify("notifications/tools/list_changed", None::<&Value>)
        .unwrap();
    let line = lines.next_line().await.unwrap().unwrap();
    let note: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert!(
        peer.notify("notifications/cancelled", None::<&Value>)
            .is_err()
    );
    write.shutdown().await.unwrap();
    serve.await.unwrap().unwrap();
    assert!(peer.is_closed());
    assert!(matches!(
        peer.notify("notifications/message", None::<&Value>),
        Err(PeerError::Closed)
    ));
}

#[tokio::test]
async fn what_the_application_sends_a_client_that_does_not_read_is_bounded_and_none_of_it_lost() {
    let (dropped, _) = mpsc::unbounded_channel();
    let (started, _) = mpsc::unbounded_channel();
    let server = StreamServer::new(StreamOptions::new(options()).reply_budget(64 * 1024));
    let peer = server.peer();
    let (client, end) = tokio::io::duplex(64 * 1024);
    let (end_read, end_write) = tokio::io::split(end);
    let serve =
        tokio::spawn(server.serve(Arc::new(Tools { dropped, started }), end_read, end_write));
    let (read, mut write) = tokio::io::split(client);
    // 4 KiB notifications, as fast as the connection's task takes them,
    // to a client that reads nothing for now.
    let padding = "x".repeat(4096);
    let mut sent = 0u64;
    let refused = loop {
        match peer.notify(
            "notifications/message",
            Some(&json!({"level": "info", "data": {"n": sent, "pad": padding}})),
        ) {
            Ok(()) => sent += 1,
            Err(error) => break error,
        }
        assert!(
            sent < 10_000,
            "40 MiB taken for a client that reads nothing"
        );
        tokio::task::yield_now().await;
    };
    assert!(matches!(refused, PeerError::Backlogged), "{refused}");
    // The reply budget, the pipe and PEER_BUDGET, give or take a message.
    let held = usize::try_from(sent).unwrap() * 4200;
    assert!(
        (PEER_BUDGET..PEER_BUDGET + 256 * 1024).contains(&held),
        "{sent} notifications taken"
    );
    // Waiting for room instead: it goes once the client reads.
    let waiting_peer = peer.clone();
    let padding_too = padding.clone();
    let mut waiting = tokio::spawn(async move {
        waiting_peer
            .send_notification(
                "notifications/message",
                Some(&json!({"level": "info", "data": {"n": sent, "pad": padding_too}})),
            )
            .await
    });
    tokio::task::yield_now().await;
    assert!((&mut waiting).now_or_never().is_none(), "sent without room");
    let mut lines = BufReader::new(read).lines();
    for n in 0..=sent {
        let line = lines.next_line().await.unwrap().unwrap();
        let note: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(note["params"]["data"]["n"], n, "in order, none lost");
    }
    waiting.await.unwrap().unwrap();
    write.shutdown().await.unwrap();
    serve.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_reads_is_not_read_past_the_budget_and_is_read_again_once_it_does() {
    let client = Client::start(StreamOptions::new(options()));
    // Take the raw read half back: this test reads bytes, not lines.
    let mut read = client.lines.into_inner().into_inner();
    let mut write = client.write;
    // Pings in 1 MiB chunks, their answers never read: 64 MiB of them
    // would queue about 55 MiB of answers. A write that does not finish
    // while nothing else can run (the paused clock then jumps ahead) means
    // the server stopped reading.
    let per_chunk = 1024 * 1024 / 42;
    let mut written = 0usize;
    let mut next_id = 1;
    let mut stopped = false;
    for _ in 0..64 {
        let bytes = pings(next_id, per_chunk);
        next_id += per_chunk;
        match tokio::time::timeout(Duration::from_secs(5), write.write_all(&bytes)).await {
            Ok(result) => {
                result.unwrap();
                written += bytes.len();
            }
            Err(_) => {
                stopped = true;
                break;
            }
        }
    }
    assert!(stopped, "the server read all {written} bytes of pings");
    // About 8 MiB of answers (`{"jsonrpc":"2.0","id":N,"result":{}}`, a
    // little shorter than the pings) plus what the pipes hold.
    assert!(
        (REPLY_BUDGET..2 * REPLY_BUDGET).contains(&written),
        "read {written} bytes of pings before stopping"
    );
    // Once the client reads its answers, its requests are read again.
    let mut sink = vec![0u8; 1024 * 1024];
    let mut drained = 0usize;
    while drained < REPLY_BUDGET {
        let n = tokio::time::timeout(Duration::from_secs(5), read.read(&mut sink))
            .await
            .expect("answers to read")
            .unwrap();
        assert!(n > 0, "the server's output ended");
        drained += n;
    }
    let more = pings(next_id, 100);
    tokio::time::timeout(Duration::from_secs(5), write.write_all(&more))
        .await
        .expect("the server reads again once its answers drained")
        .unwrap();
    drop(write);
    drop(read);
    tokio::time::timeout(Duration::from_secs(30), client.serve)
        .await
        .expect("serving ends with the client")
        .unwrap()
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_smaller_budget_stops_reading_sooner() {
    let options = StreamOptions::new(options()).reply_budget(64 * 1024);
    let client = Client::start(options);
    let mut write = client.write;
    let mut written = 0usize;
    let mut next_id = 1;
    loop {
        let bytes = pings(next_id, 1000);
        next_id += 1000;
        match tokio::time::timeout(Duration::from_secs(5), write.write_all(&bytes)).await {
            Ok(result) => {
                result.unwrap();
                written += bytes.len();
            }
            Err(_) => break,
        }
        assert!(written < 4 * 1024 * 1024, "never stopped reading");
    }
    // The budget plus one read, plus what the two 64 KiB pipes hold.
    assert!(written < 512 * 1024, "read {written} bytes");
}

#[tokio::test]
async fn a_server_request_whose_caller_is_cancelled_is_withdrawn_on_the_wire() {
    let mut client = Client::new();
    client.initialize(json!({"roots": {}})).await;
    client.send(Client::call(50, "roots")).await;
    let asked = client.next().await;
    assert_eq!(asked["method"], "roots/list", "{asked}");
    // The client cancels the call that waits on its answer: the server's
    // own request is withdrawn with `notifications/cancelled`.
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 50}}),
        )
        .await;
    let withdrawn = client.next().await;
    assert_eq!(
        withdrawn["method"], "notifications/cancelled",
        "{withdrawn}"
    );
    assert_eq!(withdrawn["params"]["requestId"], asked["id"]);
    // A late answer to it is dropped; the connection goes on.
    client
        .send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}))
        .await;
    let ping = client.request(51, "ping", json!({})).await;
    assert_eq!(ping["id"], 51, "{ping}");
}

//! `mcpctl serve --http --names keep` passing on what a server says during a call: its log messages reach the client ahead of the answer they came before, and a client that stops reading holds back only what is sent to it, losing nothing, while another client's calls go on.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use support::Env;

/// `mcpctl serve --http --names keep` with the servers of `config`.
struct HttpServe {
    child: std::process::Child,
    token: String,
    port: u16,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl HttpServe {
    fn start(env: &Env, config: &std::path::Path) -> HttpServe {
        let config = config.to_str().expect("a UTF-8 path");
        let mut child = env
            .command(&[
                "--no-host-configs",
                "--config",
                config,
                "serve",
                "--http",
                "--names",
                "keep",
            ])
            .spawn()
            .expect("mcpctl serve --http starts");
        let stderr = support::read_all(child.stderr.take().expect("piped stderr"));
        let lines = support::lines_of(child.stdout.take().expect("piped stdout"));
        let mut next = || {
            lines
                .recv_timeout(Duration::from_secs(90))
                .unwrap_or_else(|e| {
                    let _ = child.kill();
                    panic!("mcpctl serve --http printed no line ({e})")
                })
        };
        let endpoint = next();
        let auth = next();
        let url = endpoint
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no URL in {endpoint:?}"))
            .to_owned();
        let token = auth
            .rsplit_once("Bearer ")
            .unwrap_or_else(|| panic!("no token in {auth:?}"))
            .1
            .to_owned();
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .expect("a port");
        HttpServe {
            child,
            token,
            port,
            stderr: Some(stderr),
        }
    }

    /// Sends one request on a connection of its own and returns the
    /// connection, its answer unread.
    fn send(&self, method: &str, headers: &[&str], body: &str) -> TcpStream {
        let mut request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nAuthorization: Bearer {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n",
            self.port, self.token
        );
        for header in headers {
            request.push_str(header);
            request.push_str("\r\n");
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to mcpctl");
        stream
            .set_read_timeout(Some(Duration::from_secs(90)))
            .expect("a read timeout");
        stream
            .write_all(request.as_bytes())
            .expect("send a request");
        stream
    }

    /// One exchange, its whole answer (head and body).
    fn exchange(&self, headers: &[&str], body: &str) -> String {
        let mut stream = self.send("POST", headers, body);
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .unwrap_or_else(|e| panic!("no complete answer to {body}: {e}; read {answer:?}"));
        answer
    }

    /// A handshake-era session (2025-11-25): its `Mcp-Session-Id` and
    /// protocol version headers.
    fn session(&self) -> [String; 2] {
        let started = self.exchange(
            &[],
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        );
        let id = started
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no session id in {started:?}"));
        let headers = [
            format!("Mcp-Session-Id: {id}"),
            "MCP-Protocol-Version: 2025-11-25".to_owned(),
        ];
        let initialized = self.exchange(
            &headers.each_ref().map(String::as_str),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        assert!(initialized.starts_with("HTTP/1.1 202"), "{initialized:?}");
        headers
    }

    /// Stops mcpctl (our own child) and returns what it wrote to stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr
            .take()
            .and_then(|stderr| stderr.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The JSON-RPC messages of an SSE body, in order (events without data,
/// such as a priming event, left out).
fn sse_messages(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|event| {
            let data: String = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            serde_json::from_str(&data).ok()
        })
        .collect()
}

/// The flood message's index (`N:` before its letters).
fn log_index(message: &Value) -> Option<usize> {
    let data = message["params"]["data"].as_str()?;
    data.split_once(':')?.0.parse().ok()
}

/// Reads SSE events from `reader` and hands each flood message's index to
/// `take` until it returns false or the stream ends.
fn read_log_indices(
    mut reader: impl BufRead,
    mut take: impl FnMut(usize) -> bool,
) -> std::io::Result<()> {
    let mut event = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if !line.trim().is_empty() {
            event.push_str(&line);
            continue;
        }
        for message in sse_messages(&event) {
            if message["method"] == "notifications/message"
                && let Some(index) = log_index(&message)
                && !take(index)
            {
                return Ok(());
            }
        }
        event.clear();
    }
}

#[test]
fn a_servers_log_messages_reach_the_client_before_the_answer_they_preceded() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {"command": support::fixture_server(),
            "args": ["--era", "legacy", "--reference-catalog"], "era": "legacy"}}}),
    );
    let serve = HttpServe::start(&env, &config);
    let session = serve.session();
    let headers = session.each_ref().map(String::as_str);
    // The fixture's `test_tool_with_logging` sends three log messages and
    // its answer right after them: each time, all three come on the
    // call's stream, ahead of the answer.
    for id in 2..22 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test_tool_with_logging", "arguments": {}}});
        let answer = serve.exchange(&headers, &call.to_string());
        let messages = sse_messages(answer.split_once("\r\n\r\n").map_or("", |(_, b)| b));
        let logs = messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .count();
        assert_eq!(logs, 3, "call {id}: {answer}");
        assert_eq!(
            messages.last().map(|m| &m["id"]),
            Some(&json!(id)),
            "call {id}: the answer comes last: {answer}"
        );
    }
    serve.stop();
}

#[test]
fn a_client_that_stops_reading_loses_nothing_and_holds_back_no_other_client() {
    let env = Env::new();
    let script = support::repo_root().join("tests/interop/flooding_server.py");
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"flood": {"command": support::venv_python(), "args": [script],
            // The Python SDK's import alone can take seconds on a loaded
            // machine.
            "timeout": 60000}}}),
    );
    let serve = HttpServe::start(&env, &config);

    // Client A opens its session's GET stream, where the server's log
    // messages reach it (it has no call in flight), and stops reading.
    let slow = serve.session();
    let slow_headers = slow.each_ref().map(String::as_str);
    let get = serve.send("GET", &slow_headers, "");
    let mut get = BufReader::new(get);
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        let read = get.read_line(&mut head).expect("the GET stream's head");
        assert!(read > 0, "the GET stream ended: {head:?}");
    }
    assert!(head.starts_with("HTTP/1.1 200"), "{head:?}");

    // Client B has the server log 320 messages of 64 KiB (20 MiB, more than
    // the sockets and the gateway's bounds hold for A) during its call:
    // B gets its answer while A reads nothing, and every message once,
    // on its call's stream before the answer or, when it read that stream
    // too slowly for the server core, on its GET stream (which B reads
    // meanwhile on a thread of its own).
    const COUNT: usize = 320;
    let fast = serve.session();
    let fast_headers = fast.each_ref().map(String::as_str);
    let fast_get = BufReader::new(serve.send("GET", &fast_headers, ""));
    let (diverted, from_get) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = read_log_indices(fast_get, |index| diverted.send(index).is_ok());
    });
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "flood", "arguments": {"count": COUNT, "size": 65536}}});
    let answer = serve.exchange(&fast_headers, &call.to_string());
    let messages = sse_messages(answer.split_once("\r\n\r\n").map_or("", |(_, b)| b));
    assert_eq!(
        messages.last().map(|m| &m["result"]["content"][0]["text"]),
        Some(&json!(format!("flooded {COUNT}"))),
        "client B's answer comes last"
    );
    let mut seen = vec![0u32; COUNT];
    for message in &messages {
        if message["method"] == "notifications/message" {
            seen[log_index(message).expect("a flood message")] += 1;
        }
    }
    while seen.contains(&0) {
        let index = from_get
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("client B's messages {seen:?}: {e}"));
        seen[index] += 1;
    }
    assert!(seen.iter().all(|&n| n == 1), "each message once: {seen:?}");

    // A reads now: every message is there, in the server's order.
    let mut next = 0;
    read_log_indices(&mut get, |index| {
        assert_eq!(index, next, "A's messages in order");
        next += 1;
        next < COUNT
    })
    .unwrap_or_else(|e| panic!("message {next} of {COUNT} on A's stream: {e}"));
    assert_eq!(next, COUNT, "A's stream ended early");
    drop(get);
    let stderr = serve.stop();
    assert!(!stderr.contains("were dropped"), "{stderr}");
}

/// The SSE events of a body (chunked transfer coding left in: each event
/// is sent whole), each as its `id`, `retry` and `data` fields.
fn sse_fields(body: &str) -> Vec<[Option<String>; 3]> {
    body.split("\n\n")
        .filter_map(|event| {
            let mut fields: [Option<String>; 3] = [None, None, None];
            for line in event.lines() {
                for (slot, name) in ["id:", "retry:", "data:"].iter().enumerate() {
                    if let Some(value) = line.strip_prefix(name) {
                        fields[slot] = Some(value.trim().to_owned());
                    }
                }
            }
            fields.iter().any(Option::is_some).then_some(fields)
        })
        .collect()
}

/// `test_reconnection` through the gateway, in a 2025-11-25 session: the
/// answer's events (head left out) and the body of the stream it resumes
/// with `Last-Event-ID`, if the POST's stream ended without the answer.
fn reconnection_call(serve: &HttpServe) -> (String, Option<String>) {
    let session = serve.session();
    let headers = session.each_ref().map(String::as_str);
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}}"#;
    let answer = serve.exchange(&headers, call);
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{answer}");
    if body.contains(r#""id":7"#) {
        return (body.to_owned(), None);
    }
    let last = sse_fields(body)
        .iter()
        .rev()
        .find_map(|[id, _, _]| id.clone())
        .unwrap_or_else(|| panic!("the stream ended with no event id to resume from: {body}"));
    let mut resume = headers.map(str::to_owned).to_vec();
    resume.push(format!("Last-Event-ID: {last}"));
    let resume: Vec<&str> = resume.iter().map(String::as_str).collect();
    let mut stream = serve.send("GET", &resume, "");
    let mut resumed = String::new();
    let mut reader = BufReader::new(&mut stream);
    while !resumed.contains(r#""id":7"#) {
        let mut line = String::new();
        let read = reader
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("the answer on the resumed stream: {e}; read {resumed:?}"));
        assert!(read > 0, "the resumed stream ended first: {resumed:?}");
        resumed.push_str(&line);
    }
    (body.to_owned(), Some(resumed))
}

#[test]
fn a_stream_the_server_ends_mid_call_is_ended_for_the_client_who_resumes_it() {
    // The fixture over Streamable HTTP ends `test_reconnection`'s stream
    // after its priming event (SSE polling) and answers on the gateway's
    // resumed stream; the gateway does the same to its client.
    let fixture = support::fixture_server();
    let port = support::free_port();
    let mut command = std::process::Command::new(&fixture);
    command.args([
        "--transport",
        "http",
        "--port",
        &port.to_string(),
        "--era",
        "legacy",
        "--reference-catalog",
    ]);
    let _upstream = support::start_http_server(command, port);
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {"url": format!("http://127.0.0.1:{port}/mcp"), "era": "legacy"}}}),
    );
    let serve = HttpServe::start(&env, &config);
    let (body, resumed) = reconnection_call(&serve);
    let events = sse_fields(&body);
    let [first_id, first_retry, first_data] = events.first().cloned().unwrap_or_default();
    assert!(
        first_id.is_some() && first_data.is_none_or(|d| d.is_empty()),
        "{body}"
    );
    assert!(
        events.iter().any(|[_, retry, _]| retry.is_some()) || first_retry.is_some(),
        "a retry field before the end: {body}"
    );
    let resumed = resumed.unwrap_or_else(|| panic!("answered on the POST's stream: {body}"));
    assert!(resumed.contains("Reconnection test completed"), "{resumed}");
    serve.stop();

    // Over stdio the fixture cannot end a stream: nor does the gateway,
    // which answers on the POST.
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {"command": fixture,
            "args": ["--era", "legacy", "--reference-catalog"], "era": "legacy"}}}),
    );
    let serve = HttpServe::start(&env, &config);
    let (body, resumed) = reconnection_call(&serve);
    assert!(
        resumed.is_none(),
        "a stream ended with no server's word: {body}"
    );
    assert!(body.contains("Reconnection test completed"), "{body}");
    serve.stop();
}

/// Answers every elicitation with `{"word": "relayed"}`.
struct Word;

#[async_trait::async_trait]
impl mcp_transport::ClientHandler for Word {
    fn capabilities(&self) -> mcp_proto::types::ClientCapabilities {
        mcp_proto::types::ClientCapabilities {
            elicitation: Some(mcp_proto::types::ElicitationCapability {
                form: Some(Default::default()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn elicit(
        &self,
        _params: mcp_proto::types::ElicitRequestParams,
    ) -> Result<mcp_proto::types::ElicitResult, mcp_proto::ErrorObject> {
        serde_json::from_value(json!({"action": "accept", "content": {"word": "relayed"}}))
            .map_err(|e| mcp_proto::ErrorObject::new(-32603, e.to_string()))
    }
}

#[test]
fn what_a_server_says_after_an_input_round_reaches_the_clients_retry() {
    use mcp_proto::EraPolicy;
    use mcp_transport::{Client, ClientOptions, HttpOptions, HttpTransport, ServerNotification};

    let env = Env::new();
    let script = support::repo_root().join("tests/interop/flooding_server.py");
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"flood": {"command": support::venv_python(), "args": [script],
            "timeout": 60000}}}),
    );
    let serve = HttpServe::start(&env, &config);
    support::runtime().block_on(async {
        let mut http = HttpOptions::new(format!("http://127.0.0.1:{}/mcp", serve.port));
        http.headers = vec![(
            "Authorization".to_owned(),
            format!("Bearer {}", serve.token),
        )];
        let transport = HttpTransport::connect(http).await.expect("a transport");
        let mut options = ClientOptions::default();
        options.session.era = EraPolicy::Modern;
        options.handler = Some(std::sync::Arc::new(Word));
        let (client, driver) = Client::new(transport, options);
        tokio::spawn(driver.run());
        let mut notifications = client.take_notifications().expect("the notifications");
        tokio::time::timeout(Duration::from_secs(60), client.initialize())
            .await
            .expect("connects within 60 s")
            .expect("a 2026-07-28 session");
        // The server asks (an input round: the client answers and
        // retries), then logs and reports progress while the gateway's
        // call goes on, then answers: both come on the retry's stream.
        let (progress, mut reports) = tokio::sync::mpsc::unbounded_channel();
        let params: mcp_proto::types::CallToolRequestParams =
            serde_json::from_value(json!({"name": "ask_then_log"})).unwrap();
        let result = tokio::time::timeout(
            Duration::from_secs(60),
            client.call_tool_with(
                &params,
                mcp_transport::CallOptions::default().progress(Some(progress)),
            ),
        )
        .await
        .expect("answered within 60 s")
        .expect("the call's result");
        let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
        assert_eq!(text, "the word was relayed");
        let mut logs = Vec::new();
        while let Ok(notification) = notifications.try_recv() {
            if let ServerNotification::LogMessage(message) = notification {
                logs.push(message.data);
            }
        }
        assert_eq!(logs, [json!("after the answer")]);
        let report = reports.try_recv().expect("the progress report");
        assert_eq!(report.message.as_deref(), Some("after the answer"));
        client.close().await;
    });
    serve.stop();
}

//! Smoke tests of `mcp-fixture-server`: raw JSON-RPC over its stdio, Streamable
//! HTTP and legacy SSE transports, with no MCP client library in between.
//!
//! Every wait is bounded by [`DEADLINE`], a failure bound rather than a
//! synchronization sleep. Each test kills only the process it spawned, by
//! its handle (`kill_on_drop`).

use std::process::{ExitStatus, Stdio as Pipe};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_proto::codec::{SseDecoder, SseEvent};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// How long any single step may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

const ACCEPT_BOTH: (&str, &str) = ("accept", "application/json, text/event-stream");
const JSON_BODY: (&str, &str) = ("content-type", "application/json");

// ---------------------------------------------------------------------------
// stdio

#[tokio::test]
async fn stdio_handshake_tools_and_list_changed() {
    let mut server = StdioServer::spawn(&[]);
    let init = server
        .request(1, "initialize", initialize_params("2025-06-18"))
        .await;
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(result["serverInfo"]["name"], "mcp-fixture-server");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    for capability in ["resources", "prompts", "logging"] {
        assert!(
            result["capabilities"][capability].is_object(),
            "{capability}: {init}"
        );
    }
    server.notify("notifications/initialized", json!({})).await;

    let list = server.request(2, "tools/list", json!({})).await;
    let names = tool_names(&list);
    for name in [
        "echo",
        "add",
        "slow",
        "progress",
        "crash",
        "big",
        "image",
        "fail",
        "add_tool",
        "ask_roots",
        "ask_sampling",
        "ask_elicitation",
    ] {
        assert!(
            names.contains(&name.to_owned()),
            "{name} missing from {names:?}"
        );
    }
    assert!(list["result"].get("nextCursor").is_none());

    let echo = server.call(3, "echo", json!({"text": "hello"})).await;
    assert_eq!(
        echo["result"]["content"][0],
        json!({"type": "text", "text": "hello"})
    );
    let add = server.call(4, "add", json!({"a": 2, "b": 40})).await;
    assert_eq!(add["result"]["structuredContent"], json!({"sum": 42}));
    let image = server.call(5, "image", json!({})).await;
    assert_eq!(image["result"]["content"][0]["mimeType"], "image/png");
    let fail = server.call(6, "fail", json!({})).await;
    assert_eq!(fail["result"]["isError"], true);
    let big = server.call(7, "big", json!({"kib": 3})).await;
    assert_eq!(
        big["result"]["content"][0]["text"].as_str().unwrap().len(),
        3 * 1024
    );

    assert!(
        server.notifications.is_empty(),
        "{:?}",
        server.notifications
    );
    let added = server.call(8, "add_tool", json!({"name": "dynamic"})).await;
    assert!(added["result"].get("isError").is_none(), "{added}");
    assert_eq!(
        server.take_notifications(),
        vec![json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}})]
    );
    let list = server.request(9, "tools/list", json!({})).await;
    assert!(tool_names(&list).contains(&"dynamic".to_owned()));
    let dynamic = server.call(10, "dynamic", json!({"text": "again"})).await;
    assert_eq!(dynamic["result"]["content"][0]["text"], "again");

    let unknown = server.call(11, "nope", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32602);
    let resource = server
        .request(12, "resources/read", json!({"uri": "fixture://readme"}))
        .await;
    assert!(
        resource["result"]["contents"][0]["text"].is_string(),
        "{resource}"
    );
    let prompt = server
        .request(
            13,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert!(prompt.to_string().contains("Ada"), "{prompt}");
    let ping = server.request(14, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}));

    // Stdin EOF ends the server.
    drop(server.stdin.take());
    assert!(server.wait().await.success());
}

#[tokio::test]
async fn stdio_negotiates_versions_and_refuses_early_requests() {
    let mut server = StdioServer::spawn(&["--instructions", "be nice"]);
    let early = server.request(1, "tools/list", json!({})).await;
    assert_eq!(early["error"]["code"], -32600, "{early}");
    let ping = server.request(2, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}));
    let init = server
        .request(3, "initialize", initialize_params("1999-01-01"))
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["instructions"], "be nice");

    let mut forced =
        StdioServer::spawn(&["--protocol-version", "2024-11-05", "--no-tools-capability"]);
    let init = forced
        .request(1, "initialize", initialize_params("2025-11-25"))
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    assert!(
        init["result"]["capabilities"].get("tools").is_none(),
        "{init}"
    );
    let list = forced.request(2, "tools/list", json!({})).await;
    assert_eq!(list["error"]["code"], -32601);
}

#[tokio::test]
async fn stdio_answers_malformed_input_and_goes_on() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize().await;
    server.write_raw(b"this is not json\n").await;
    let parse_error = server.recv().await;
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    assert_eq!(parse_error["id"], Value::Null);
    server.write_raw(b"{\"hello\":1}\n\n   \n").await;
    let invalid = server.recv().await;
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    let unknown = server.request(5, "no/such/method", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let echo = server.call(6, "echo", json!({"text": "still here"})).await;
    assert_eq!(echo["result"]["content"][0]["text"], "still here");
}

#[tokio::test]
async fn stdio_paginates_and_can_repeat_a_cursor() {
    let mut server = StdioServer::spawn(&["--tools", "20", "--page-size", "8"]);
    server.initialize().await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = server.request(10 + pages, "tools/list", params).await;
        let page_names = tool_names(&page);
        assert!(page_names.len() <= 8);
        names.extend(page_names);
        pages += 1;
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 4, "12 built-in + 20 generated tools in pages of 8");
    assert_eq!(names.len(), 32);
    assert_eq!(names.last().map(String::as_str), Some("tool_0020"));
    let bad = server
        .request(99, "tools/list", json!({"cursor": "not-a-cursor"}))
        .await;
    assert_eq!(bad["error"]["code"], -32602);

    let mut repeating = StdioServer::spawn(&["--page-size", "5", "--repeat-cursor"]);
    repeating.initialize().await;
    let first = repeating.request(2, "tools/list", json!({})).await;
    let cursor = first["result"]["nextCursor"].clone();
    assert!(cursor.is_string(), "{first}");
    let second = repeating
        .request(3, "tools/list", json!({"cursor": cursor}))
        .await;
    assert_eq!(second["result"]["nextCursor"], cursor);
}

#[tokio::test]
async fn stdio_crash_exits_mid_call() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize().await;
    server
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "crash", "arguments": {}}}))
        .await;
    assert_eq!(server.line().await, None, "no response, then EOF");
    assert_eq!(server.wait().await.code(), Some(1));
}

#[tokio::test]
async fn stdio_exit_after_answers_then_exits() {
    let mut server = StdioServer::spawn(&["--exit-after", "2"]);
    server.initialize().await;
    let ping = server.request(2, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}));
    assert_eq!(server.line().await, None);
    assert!(server.wait().await.success());
}

#[tokio::test]
async fn stdio_progress_and_cancellation() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize().await;
    let done = server
        .request(
            2,
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3, "ms": 1},
                   "_meta": {"progressToken": "tok"}}),
        )
        .await;
    assert_eq!(done["result"]["content"][0]["text"], "done: 3 steps");
    let progress: Vec<Value> = server
        .take_notifications()
        .into_iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/progress");
            assert_eq!(n["params"]["progressToken"], "tok");
            n["params"]["progress"].clone()
        })
        .collect();
    assert_eq!(progress, vec![json!(1), json!(2), json!(3)]);

    // A cancelled slow call never answers; the next request still does.
    server
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "slow", "arguments": {"ms": 60000}}}))
        .await;
    server
        .notify(
            "notifications/cancelled",
            json!({"requestId": 3, "reason": "test"}),
        )
        .await;
    let quick = server.call(4, "slow", json!({"ms": 1})).await;
    assert_eq!(quick["result"]["content"][0]["text"], "slept 1 ms");
    drop(server.stdin.take());
    assert_eq!(server.line().await, None, "the cancelled call answered");
}

#[tokio::test]
async fn stdio_sends_requests_to_the_client() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize().await;
    server
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "ask_roots", "arguments": {}}}))
        .await;
    let ask = server.recv().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let roots = json!({"roots": [{"uri": "file:///tmp/project", "name": "project"}]});
    server
        .send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": roots}))
        .await;
    let answer = server.recv().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["structuredContent"], roots);

    server
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "ask_elicitation", "arguments": {"message": "Who?"}}}))
        .await;
    let ask = server.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["mode"], "form");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["name"]["default"],
        "fixture"
    );
    server
        .send(json!({"jsonrpc": "2.0", "id": ask["id"],
                     "error": {"code": -32601, "message": "method not found"}}))
        .await;
    let answer = server.recv().await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("-32601"), "{answer}");
}

#[tokio::test]
async fn stdio_fault_switches_shape_the_output() {
    let mut server = StdioServer::spawn(&[
        "--junk-stdout",
        "--crlf",
        "--oversize-kib",
        "64",
        "--tools",
        "200",
    ]);
    server
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": initialize_params("2025-11-25")}))
        .await;
    let junk = server.line().await.unwrap();
    assert!(
        junk.ends_with('\r') && serde_json::from_str::<Value>(&junk).is_err(),
        "{junk:?}"
    );
    let response = server.line().await.unwrap();
    assert!(response.ends_with('\r'), "{response:?}");
    let response: Value = serde_json::from_str(response.trim_end()).unwrap();
    assert_eq!(response["id"], 1);
    server.notify("notifications/initialized", json!({})).await;
    server
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let _junk = server.line().await.unwrap();
    let list = server.line().await.unwrap();
    assert!(list.len() >= 64 * 1024, "{} bytes", list.len());
    let list: Value = serde_json::from_str(list.trim_end()).unwrap();
    let names = tool_names(&list);
    assert_eq!(names.len(), 212);
    assert_eq!(names.last().map(String::as_str), Some("tool_0200"));
}

#[tokio::test]
async fn stdio_stderr_flood_does_not_stall_a_draining_client() {
    let mut server = StdioServer::spawn_with(&["--stderr-flood-mib", "10"], Pipe::piped());
    let mut stderr = server.child.stderr.take().unwrap();
    let drained = tokio::spawn(async move {
        let mut sink = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut stderr, &mut sink)
            .await
            .unwrap();
        sink.len()
    });
    server.initialize().await;
    drop(server.stdin.take());
    assert!(server.wait().await.success());
    let drained = deadline("stderr EOF", drained).await.unwrap();
    assert!(drained >= 10 * 1024 * 1024, "{drained} bytes");
}

#[tokio::test]
async fn stdio_ignore_sigterm_outlives_sigterm_and_eof() {
    let mut server = StdioServer::spawn(&["--ignore-sigterm"]);
    server.initialize().await;
    let pid = server.child.id().unwrap().to_string();
    let kill = deadline(
        "kill -TERM",
        Command::new("kill").args(["-TERM", &pid]).status(),
    )
    .await
    .expect("`kill` (procps) is needed to send SIGTERM");
    assert!(kill.success());
    let ping = server.request(2, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "still serving after SIGTERM");
    drop(server.stdin.take());
    // Still running after stdin EOF: only SIGKILL (by handle) ends it.
    server.child.start_kill().unwrap();
    let status = server.wait().await;
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
}

// ---------------------------------------------------------------------------
// Streamable HTTP

#[tokio::test]
async fn http_session_lifecycle() {
    let server = HttpServer::spawn(&["--transport", "http", "--port", "0"]).await;
    assert!(server.url.ends_with("/mcp"), "{}", server.url);

    let init = server.post(&[], &initialize_message(1)).await;
    assert_eq!(init.status(), StatusCode::OK);
    assert_eq!(content_type(&init), "application/json");
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        session.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "{session}"
    );
    let init = body_json(init).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");

    let with_session = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialized = server
        .post(
            &with_session,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    assert_eq!(initialized.status(), StatusCode::ACCEPTED);

    let echo = server
        .post(
            &with_session,
            &call_message(2, "echo", json!({"text": "over http"})),
        )
        .await;
    assert_eq!(echo.status(), StatusCode::OK);
    assert_eq!(
        body_json(echo).await["result"]["content"][0]["text"],
        "over http"
    );

    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let no_session = server.post(&[], &ping).await;
    assert_eq!(no_session.status(), StatusCode::BAD_REQUEST);
    let unknown = server.post(&[("mcp-session-id", "nope")], &ping).await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let bad_version = server
        .post(
            &[
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", "1999-01-01"),
            ],
            &ping,
        )
        .await;
    assert_eq!(bad_version.status(), StatusCode::BAD_REQUEST);
    let json_only = server
        .send(
            Method::POST,
            &[
                ("accept", "application/json"),
                JSON_BODY,
                ("mcp-session-id", session.as_str()),
            ],
            Some(&ping),
        )
        .await;
    assert_eq!(json_only.status(), StatusCode::NOT_ACCEPTABLE);
    let garbage = server
        .send_raw(
            Method::POST,
            &[ACCEPT_BOTH, JSON_BODY, ("mcp-session-id", session.as_str())],
            "{oops",
        )
        .await;
    assert_eq!(garbage.status(), StatusCode::BAD_REQUEST);
    assert_eq!(body_json(garbage).await["error"]["code"], -32700);

    let deleted = server.send(Method::DELETE, &with_session, None).await;
    assert_eq!(deleted.status(), StatusCode::OK);
    let after = server.post(&with_session, &ping).await;
    assert_eq!(after.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn http_get_stream_carries_unrelated_messages() {
    let server = HttpServer::spawn(&["--transport", "http", "--port", "0"]).await;
    let session = server.initialize().await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let get = server
        .send(
            Method::GET,
            &[("accept", "text/event-stream"), headers[0], headers[1]],
            None,
        )
        .await;
    assert_eq!(get.status(), StatusCode::OK);
    assert_eq!(content_type(&get), "text/event-stream");
    let mut events = Events::new(get);
    let priming = events.next().await.unwrap();
    assert_eq!(priming.data, "");
    assert!(
        priming.id.is_some() && priming.retry.is_some(),
        "{priming:?}"
    );

    // With JSON responses, the list_changed notification goes to the GET stream.
    let added = server
        .post(
            &headers,
            &call_message(2, "add_tool", json!({"name": "extra"})),
        )
        .await;
    assert_eq!(
        body_json(added).await["result"]["content"][0]["text"],
        "added tool extra"
    );
    let event = events.next().await.unwrap();
    let message: Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(message["method"], "notifications/tools/list_changed");

    let refused = HttpServer::spawn(&["--transport", "http", "--no-get-stream"]).await;
    let session = refused.initialize().await;
    let get = refused
        .send(
            Method::GET,
            &[
                ("accept", "text/event-stream"),
                ("mcp-session-id", &session),
            ],
            None,
        )
        .await;
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn http_sse_responses_resume_with_last_event_id() {
    let server = HttpServer::spawn(&["--transport", "http", "--close-sse-before-response"]).await;
    // Initialize is exempt from the early close: its stream holds the response.
    let init = server.post(&[], &initialize_message(1)).await;
    assert_eq!(content_type(&init), "text/event-stream");
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut events = Events::new(init);
    let priming = events.next().await.unwrap();
    assert_eq!((priming.data.as_str(), priming.retry), ("", Some(100)));
    let response: Value = serde_json::from_str(&events.next().await.unwrap().data).unwrap();
    assert_eq!(response["id"], 1);
    assert!(events.next().await.is_none());

    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let echo = server
        .post(&headers, &call_message(2, "echo", json!({"text": "later"})))
        .await;
    let mut events = Events::new(echo);
    let priming = events.next().await.unwrap();
    assert!(
        events.next().await.is_none(),
        "the stream closes before the response"
    );
    let last_id = priming.id.unwrap();
    let resumed = server
        .send(
            Method::GET,
            &[
                ("accept", "text/event-stream"),
                headers[0],
                headers[1],
                ("last-event-id", &last_id),
            ],
            None,
        )
        .await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut events = Events::new(resumed);
    let event = events.next().await.unwrap();
    let response: Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "later");
    assert_ne!(event.id, Some(last_id));
    assert!(
        events.next().await.is_none(),
        "the resumed stream ends with the response"
    );
}

#[tokio::test]
async fn http_cut_event_is_replayed_whole() {
    let server = HttpServer::spawn(&["--transport", "http", "--cut-sse-mid-event"]).await;
    let session = server.initialize_any().await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let echo = server
        .post(&headers, &call_message(2, "echo", json!({"text": "whole"})))
        .await;
    let mut events = Events::new(echo);
    let priming = events.next().await.unwrap();
    assert!(
        events.next().await.is_none(),
        "half an event is never dispatched"
    );
    let resumed = server
        .send(
            Method::GET,
            &[
                ("accept", "text/event-stream"),
                headers[0],
                headers[1],
                ("last-event-id", &priming.id.unwrap()),
            ],
            None,
        )
        .await;
    let event = Events::new(resumed).next().await.unwrap();
    let response: Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "whole");
}

#[tokio::test]
async fn http_sse_stream_carries_server_requests_and_progress() {
    let server = HttpServer::spawn(&["--transport", "http", "--sse-responses"]).await;
    let session = server.initialize_any().await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "progress", "arguments": {"steps": 2},
                                 "_meta": {"progressToken": 5}}});
    let mut events = Events::new(server.post(&headers, &call).await);
    let messages = events.messages().await;
    let methods: Vec<&Value> = messages.iter().map(|m| &m["method"]).collect();
    assert_eq!(
        methods,
        [
            &json!("notifications/progress"),
            &json!("notifications/progress"),
            &Value::Null
        ]
    );
    assert_eq!(messages[2]["result"]["content"][0]["text"], "done: 2 steps");

    let ask = server
        .post(&headers, &call_message(3, "ask_roots", json!({})))
        .await;
    let mut events = Events::new(ask);
    let _priming = events.next().await.unwrap();
    let request: Value = serde_json::from_str(&events.next().await.unwrap().data).unwrap();
    assert_eq!(request["method"], "roots/list");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}});
    assert_eq!(
        server.post(&headers, &answer).await.status(),
        StatusCode::ACCEPTED
    );
    let result: Value = serde_json::from_str(&events.next().await.unwrap().data).unwrap();
    assert_eq!(result["id"], 3);
    assert_eq!(result["result"]["structuredContent"], json!({"roots": []}));
}

#[tokio::test]
async fn http_session_expires_after_n_requests() {
    let server = HttpServer::spawn(&["--transport", "http", "--expire-session-after", "2"]).await;
    let session = server.initialize().await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let ping = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let second = server.post(&headers, &ping(2)).await;
    assert_eq!(
        second.status(),
        StatusCode::OK,
        "the second request is still answered"
    );
    let third = server.post(&headers, &ping(3)).await;
    assert_eq!(third.status(), StatusCode::NOT_FOUND);
    // A fresh initialize, without the old session id, starts over.
    let again = server.initialize().await;
    assert_ne!(again, session);
}

// ---------------------------------------------------------------------------
// Legacy HTTP+SSE

#[tokio::test]
async fn legacy_sse_endpoint_and_messages() {
    let server = HttpServer::spawn(&["--transport", "sse"]).await;
    assert!(server.url.ends_with("/sse"), "{}", server.url);
    let probe = server.post(&[], &initialize_message(1)).await;
    assert_eq!(
        probe.status(),
        StatusCode::METHOD_NOT_ALLOWED,
        "POST to the SSE URL"
    );

    let stream = server
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut events = Events::new(stream);
    let endpoint = events.next().await.unwrap();
    assert_eq!(endpoint.event, "endpoint");
    assert!(
        endpoint.data.starts_with("/message?sessionId="),
        "{endpoint:?}"
    );

    let posted = server
        .send_to(
            &endpoint.data,
            Method::POST,
            &[JSON_BODY],
            Some(&initialize_message(1)),
        )
        .await;
    assert_eq!(posted.status(), StatusCode::ACCEPTED);
    let event = events.next().await.unwrap();
    assert_eq!(event.event, "message");
    let init: Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-fixture-server");

    server
        .send_to(
            &endpoint.data,
            Method::POST,
            &[JSON_BODY],
            Some(&call_message(2, "echo", json!({"text": "legacy"}))),
        )
        .await;
    let echo: Value = serde_json::from_str(&events.next().await.unwrap().data).unwrap();
    assert_eq!(echo["result"]["content"][0]["text"], "legacy");

    let unknown = server
        .send_to(
            "/message?sessionId=nope",
            Method::POST,
            &[JSON_BODY],
            Some(&initialize_message(1)),
        )
        .await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------------------
// Helpers

fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "fixture-smoke-test", "version": "0"}
    })
}

fn initialize_message(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": initialize_params("2025-11-25")})
}

fn call_message(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tools/list result: {list}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Bounds a step by [`DEADLINE`].
async fn deadline<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// The fixture over stdio, spoken to line by line.
struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Notifications received while waiting for responses.
    notifications: Vec<Value>,
}

impl StdioServer {
    fn spawn(args: &[&str]) -> StdioServer {
        StdioServer::spawn_with(args, Pipe::null())
    }

    fn spawn_with(args: &[&str], stderr: Pipe) -> StdioServer {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Pipe::piped())
            .stdout(Pipe::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {BIN}: {e}"));
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        StdioServer {
            child,
            stdin,
            stdout,
            notifications: Vec::new(),
        }
    }

    async fn write_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        deadline("write to stdin", async {
            stdin.write_all(bytes).await.unwrap();
            stdin.flush().await.unwrap();
        })
        .await;
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.write_raw(&line).await;
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next stdout line without its `\n` (a `\r` stays), or `None` at EOF.
    async fn line(&mut self) -> Option<String> {
        let mut line = Vec::new();
        let n = deadline("a line on stdout", self.stdout.read_until(b'\n', &mut line))
            .await
            .unwrap();
        if n == 0 {
            return None;
        }
        assert_eq!(line.pop(), Some(b'\n'), "a line cut short by EOF");
        Some(String::from_utf8(line).unwrap())
    }

    /// The next message on stdout.
    async fn recv(&mut self) -> Value {
        let line = self.line().await.expect("the server closed stdout");
        serde_json::from_str(line.trim_end()).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// Sends a request and returns its response, keeping the notifications
    /// that arrive first.
    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
            assert!(message.get("id").is_none(), "unexpected message: {message}");
            self.notifications.push(message);
        }
    }

    async fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    async fn initialize(&mut self) -> Value {
        let init = self
            .request(1, "initialize", initialize_params("2025-11-25"))
            .await;
        assert!(init["result"].is_object(), "{init}");
        self.notify("notifications/initialized", json!({})).await;
        init
    }

    fn take_notifications(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.notifications)
    }

    async fn wait(&mut self) -> ExitStatus {
        deadline("the server to exit", self.child.wait())
            .await
            .unwrap()
    }
}

/// The fixture over HTTP; one connection per request keeps the helpers simple.
struct HttpServer {
    url: String,
    /// `127.0.0.1:PORT`.
    authority: String,
    _child: Child,
}

impl HttpServer {
    /// Starts the fixture (`--port 0` unless given) and reads its URL from
    /// the first stdout line.
    async fn spawn(args: &[&str]) -> HttpServer {
        let mut args = args.to_vec();
        if !args.contains(&"--port") {
            args.extend(["--port", "0"]);
        }
        let mut child = Command::new(BIN)
            .args(&args)
            .stdin(Pipe::null())
            .stdout(Pipe::piped())
            .stderr(Pipe::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {BIN}: {e}"));
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = deadline("the listening line", stdout.next_line())
            .await
            .unwrap()
            .expect("the server exited before listening");
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        let authority = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .unwrap()
            .to_owned();
        HttpServer {
            url,
            authority,
            _child: child,
        }
    }

    fn path(&self) -> &str {
        let after_scheme = self.url.strip_prefix("http://").unwrap();
        &after_scheme[after_scheme.find('/').unwrap()..]
    }

    /// POSTs a message to the endpoint with the Streamable HTTP headers.
    async fn post(&self, extra: &[(&str, &str)], message: &Value) -> Response<Incoming> {
        let mut headers = vec![ACCEPT_BOTH, JSON_BODY];
        headers.extend_from_slice(extra);
        self.send(Method::POST, &headers, Some(message)).await
    }

    /// Initializes a session over JSON responses and returns its id.
    async fn initialize(&self) -> String {
        let init = self.post(&[], &initialize_message(1)).await;
        assert_eq!(content_type(&init), "application/json");
        self.initialized(init).await
    }

    /// Initializes a session, its response in JSON or SSE, and returns its id.
    async fn initialize_any(&self) -> String {
        let init = self.post(&[], &initialize_message(1)).await;
        self.initialized(init).await
    }

    /// Checks an initialize response and sends `notifications/initialized`.
    async fn initialized(&self, init: Response<Incoming>) -> String {
        assert_eq!(init.status(), StatusCode::OK);
        let session = init.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let result = if content_type(&init) == "text/event-stream" {
            Events::new(init).messages().await.pop().unwrap()
        } else {
            body_json(init).await
        };
        assert!(result["result"]["protocolVersion"].is_string(), "{result}");
        let headers = [("mcp-session-id", session.as_str())];
        let initialized = self
            .post(
                &headers,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(initialized.status(), StatusCode::ACCEPTED);
        session
    }

    async fn send(
        &self,
        method: Method,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Response<Incoming> {
        self.send_to(self.path(), method, headers, body).await
    }

    async fn send_to(
        &self,
        path: &str,
        method: Method,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Response<Incoming> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        self.request(path, method, headers, body).await
    }

    async fn send_raw(
        &self,
        method: Method,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Response<Incoming> {
        self.request(self.path(), method, headers, body.to_owned())
            .await
    }

    async fn request(
        &self,
        path: &str,
        method: Method,
        headers: &[(&str, &str)],
        body: String,
    ) -> Response<Incoming> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.authority);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(Bytes::from(body))).unwrap();
        deadline("an HTTP response", async {
            let stream = TcpStream::connect(&self.authority).await.unwrap();
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(connection);
            sender.send_request(request).await.unwrap()
        })
        .await
    }
}

fn content_type(response: &Response<Incoming>) -> &str {
    response.headers()["content-type"].to_str().unwrap()
}

async fn body_json(response: Response<Incoming>) -> Value {
    let body = deadline("an HTTP body", response.into_body().collect())
        .await
        .unwrap()
        .to_bytes();
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}: {body:?}"))
}

/// The events of an SSE response, decoded by mcp-proto's decoder.
struct Events {
    body: Incoming,
    decoder: SseDecoder,
    ended: bool,
}

impl Events {
    fn new(response: Response<Incoming>) -> Events {
        assert_eq!(content_type(&response), "text/event-stream");
        Events {
            body: response.into_body(),
            decoder: SseDecoder::new(),
            ended: false,
        }
    }

    /// The JSON-RPC messages of the rest of the stream, priming events skipped.
    async fn messages(&mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        while let Some(event) = self.next().await {
            if !event.data.is_empty() {
                messages.push(serde_json::from_str(&event.data).unwrap());
            }
        }
        messages
    }

    /// The next complete event, or `None` once the body ended.
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.decoder.next_event() {
                return Some(event.unwrap());
            }
            if self.ended {
                return self.decoder.finish().map(Result::unwrap);
            }
            match deadline("an SSE event", self.body.frame()).await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.decoder.push(&data);
                    }
                }
                Some(Err(e)) => panic!("SSE body error: {e}"),
                None => self.ended = true,
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The stateless 2026-07-28 era (`--era`)

const MODERN: &str = "2026-07-28";
const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The `_meta` every modern request carries.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "fixture-modern-test", "version": "7"}
    })
}

/// `params` with the modern `_meta` added.
fn modern(mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    params
}

fn modern_call(name: &str, arguments: Value) -> Value {
    modern(json!({"name": name, "arguments": arguments}))
}

/// The event log's lines named `event`, their JSON detail parsed.
fn logged(path: &std::path::Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.split(' ').next() == Some(event))
        .map(|line| serde_json::from_str(line.splitn(4, ' ').nth(3).unwrap()).unwrap())
        .collect()
}

fn input_required_state(response: &Value) -> String {
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "{response}"
    );
    response["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// With `--reference-catalog` both eras offer the same: `server/discover`
/// declares the logging and completions the handshake declares, and the
/// handshake era lists and answers `region_echo` (its `x-mcp-header`
/// annotations as written) as 2026-07-28 does; 2026-07-28 logs at the
/// level a request asks for and lists the prompt it answers in rounds.
#[tokio::test]
async fn the_reference_catalog_offers_the_same_in_both_eras() {
    let mut server = StdioServer::spawn(&["--reference-catalog"]);
    let discover = server
        .request(1, "server/discover", modern(json!({})))
        .await;
    let modern_capabilities = &discover["result"]["capabilities"];
    let init = server.initialize().await;
    let handshake_capabilities = &init["result"]["capabilities"];
    for capability in ["logging", "completions", "tools", "resources", "prompts"] {
        assert!(
            modern_capabilities[capability].is_object(),
            "{capability}: {discover}"
        );
        assert!(
            handshake_capabilities[capability].is_object(),
            "{capability}: {init}"
        );
    }
    let list = server.request(2, "tools/list", json!({})).await;
    let region = list["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "region_echo"))
        .unwrap_or_else(|| panic!("region_echo is not listed: {list}"));
    assert_eq!(
        region["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    let echo = server
        .call(
            3,
            "region_echo",
            json!({"region": "eu", "zone": 7, "text": "hi"}),
        )
        .await;
    assert_eq!(
        echo["result"]["content"][0]["text"], "region=eu zone=7 dry_run=-: hi",
        "{echo}"
    );

    // The logging it declares in 2026-07-28: test_logging_tool logs at the
    // level its request's _meta asks for, on that request's stream, and
    // nothing without one.
    let log_call = |id: i64, level: Option<&str>| {
        let mut meta = modern_meta();
        if let Some(level) = level {
            meta["io.modelcontextprotocol/logLevel"] = json!(level);
        }
        (
            id,
            json!({"name": "test_logging_tool", "arguments": {}, "_meta": meta}),
        )
    };
    server.take_notifications();
    let (id, params) = log_call(4, Some("debug"));
    let logged = server.request(id, "tools/call", params).await;
    assert_eq!(logged["result"]["resultType"], "complete", "{logged}");
    let notes = server.take_notifications();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(
        notes
            .iter()
            .all(|n| n["method"] == "notifications/message" && n["params"]["level"] == "info"),
        "{notes:?}"
    );
    for (id, level) in [(5, Some("error")), (6, None)] {
        let (id, params) = log_call(id, level);
        let quiet = server.request(id, "tools/call", params).await;
        assert_eq!(quiet["result"]["resultType"], "complete", "{quiet}");
        assert_eq!(
            server.take_notifications(),
            Vec::<Value>::new(),
            "{level:?}"
        );
    }
    let (id, params) = log_call(7, Some("loud"));
    let bad = server.request(id, "tools/call", params).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("log level"),
        "{bad}"
    );

    // The prompt that asks in rounds is listed in both eras: as input
    // rounds in 2026-07-28, as requests on the session in the handshake era.
    let prompt_names = |list: &Value| -> Vec<String> {
        list["result"]["prompts"]
            .as_array()
            .unwrap_or_else(|| panic!("not a prompts/list result: {list}"))
            .iter()
            .map(|p| p["name"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let rounds = "test_input_required_result_prompt".to_owned();
    let modern_prompts = server
        .request(8, "prompts/list", json!({"_meta": modern_meta()}))
        .await;
    assert!(
        prompt_names(&modern_prompts).contains(&rounds),
        "{modern_prompts}"
    );
    let handshake_prompts = server.request(9, "prompts/list", json!({})).await;
    assert!(
        prompt_names(&handshake_prompts).contains(&rounds),
        "{handshake_prompts}"
    );

    // Without it the handshake era lists no region_echo, and neither era
    // declares completions.
    let mut plain = StdioServer::spawn(&[]);
    let discover = plain.request(1, "server/discover", modern(json!({}))).await;
    assert!(
        discover["result"]["capabilities"]["logging"].is_object(),
        "{discover}"
    );
    assert!(
        discover["result"]["capabilities"]
            .get("completions")
            .is_none(),
        "{discover}"
    );
    plain.initialize().await;
    let names = tool_names(&plain.request(2, "tools/list", json!({})).await);
    assert!(!names.contains(&"region_echo".to_owned()), "{names:?}");
}

#[tokio::test]
async fn stdio_discover_in_each_era() {
    let mut both = StdioServer::spawn(&["--instructions", "modern too"]);
    let discover = both.request(1, "server/discover", modern(json!({}))).await;
    let result = &discover["result"];
    let mut expected = vec![MODERN];
    expected.extend(HANDSHAKE_VERSIONS);
    assert_eq!(result["supportedVersions"], json!(expected), "{discover}");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["cacheScope"], "public");
    assert!(result["ttlMs"].as_u64().is_some(), "{discover}");
    assert_eq!(result["instructions"], "modern too");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-fixture-server"
    );
    // The handshake still works on the same process.
    let init = both
        .request(2, "initialize", initialize_params("2025-11-25"))
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");

    let mut modern_only = StdioServer::spawn(&["--era", "modern", "--omit-result-type"]);
    let discover = modern_only
        .request(1, "server/discover", modern(json!({})))
        .await;
    assert_eq!(discover["result"]["supportedVersions"], json!([MODERN]));
    assert!(discover["result"].get("resultType").is_none(), "{discover}");
    let init = modern_only
        .request(2, "initialize", initialize_params("2025-11-25"))
        .await;
    assert_eq!(init["error"]["code"], -32022, "{init}");
    assert_eq!(init["error"]["data"]["supported"], json!([MODERN]));

    let mut legacy = StdioServer::spawn(&["--era", "legacy"]);
    let discover = legacy
        .request(1, "server/discover", modern(json!({})))
        .await;
    assert_eq!(discover["error"]["code"], -32601, "{discover}");
    legacy.initialize().await;

    let mut legacy_only = StdioServer::spawn(&["--era", "legacy", "--discover-legacy-only"]);
    let discover = legacy_only
        .request(1, "server/discover", modern(json!({})))
        .await;
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(HANDSHAKE_VERSIONS),
        "{discover}"
    );
}

#[tokio::test]
async fn stdio_modern_meta_is_required_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let mut server = StdioServer::spawn(&["--era", "modern", "--event-log", log.to_str().unwrap()]);
    let bare = server.request(1, "tools/list", json!({})).await;
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
    let no_caps = server
        .request(
            2,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
        )
        .await;
    assert_eq!(no_caps["error"]["code"], -32602, "{no_caps}");
    let old = server
        .request(
            3,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                             "io.modelcontextprotocol/clientCapabilities": {}}}),
        )
        .await;
    assert_eq!(old["error"]["code"], -32022, "{old}");
    assert_eq!(old["error"]["data"]["supported"], json!([MODERN]));
    assert_eq!(old["error"]["data"]["requested"], "2099-01-01");

    let list = server.request(4, "tools/list", modern(json!({}))).await;
    let names = tool_names(&list);
    for name in ["echo", "confirm", "two_rounds", "region_echo", "bad_header"] {
        assert!(names.contains(&name.to_owned()), "{name}: {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("ask_")), "{names:?}");
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["cacheScope"], "public");
    let unknown = server.request(5, "ping", modern(json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let progress = server
        .request(
            6,
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 2},
                   "_meta": {"progressToken": "p", "io.modelcontextprotocol/protocolVersion": MODERN,
                             "io.modelcontextprotocol/clientCapabilities": {}}}),
        )
        .await;
    assert_eq!(progress["result"]["resultType"], "complete", "{progress}");
    let notes = server.take_notifications();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes.iter().all(|n| n["params"]["progressToken"] == "p"));

    let requests = logged(&log, "modern-request");
    assert_eq!(
        requests.iter().map(|r| r["id"].clone()).collect::<Vec<_>>(),
        [json!(4), json!(6)],
        "only requests that reach the fixture are logged (the session refuses ping in this era): {requests:?}"
    );
    assert_eq!(
        requests[0]["meta"]["io.modelcontextprotocol/clientInfo"]["name"],
        "fixture-modern-test"
    );
}

#[tokio::test]
async fn stdio_legacy_probe_faults() {
    let mut exits = StdioServer::spawn_with(&["--exit-before-initialize"], Pipe::piped());
    let mut stderr = BufReader::new(exits.child.stderr.take().unwrap());
    exits
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": modern(json!({}))}))
        .await;
    assert_eq!(exits.line().await, None, "no answer before exiting");
    assert_eq!(exits.wait().await.code(), Some(1));
    let mut line = String::new();
    deadline("the stderr line", stderr.read_line(&mut line))
        .await
        .unwrap();
    assert!(line.contains("before initialize"), "{line:?}");

    let mut noisy = StdioServer::spawn_with(&["--probe-noise", "6000"], Pipe::piped());
    let mut stderr = noisy.child.stderr.take().unwrap();
    let drained = tokio::spawn(async move {
        let mut noise = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut stderr, &mut noise)
            .await
            .unwrap();
        noise.len()
    });
    let discover = noisy.request(1, "server/discover", modern(json!({}))).await;
    assert_eq!(discover["error"]["code"], -32601, "{discover}");
    noisy.initialize().await;
    drop(noisy.stdin.take());
    assert!(noisy.wait().await.success());
    assert_eq!(deadline("stderr EOF", drained).await.unwrap(), 6000);
}

#[tokio::test]
async fn stdio_mrtr_confirm_and_two_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let mut server = StdioServer::spawn(&["--event-log", log.to_str().unwrap()]);
    let first = server
        .request(10, "tools/call", modern_call("confirm", json!({})))
        .await;
    let state = input_required_state(&first);
    assert!(
        state.contains('"') && state.contains('/') && !state.is_ascii(),
        "{state:?}"
    );
    let ask = &first["result"]["inputRequests"]["answer"];
    assert_eq!(ask["method"], "elicitation/create", "{first}");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["answer"]["type"],
        "string"
    );
    let mut retry = modern_call("confirm", json!({}));
    retry["inputResponses"] = json!({"answer": {"action": "accept", "content": {"answer": "yes"}}});
    retry["requestState"] = json!(state);
    let done = server.request(11, "tools/call", retry.clone()).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: yes");
    retry["requestState"] = json!(format!("{state}x"));
    let tampered = server.request(12, "tools/call", retry).await;
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    let rounds = logged(&log, "mrtr-round");
    assert_eq!(
        rounds
            .iter()
            .map(|r| (r["id"].clone(), r["requestStateMatched"].clone()))
            .collect::<Vec<_>>(),
        [
            (json!(10), Value::Null),
            (json!(11), json!(true)),
            (json!(12), json!(false))
        ],
        "{rounds:?}"
    );

    let one = server
        .request(20, "tools/call", modern_call("two_rounds", json!({})))
        .await;
    let state = input_required_state(&one);
    let mut params = modern_call("two_rounds", json!({}));
    params["inputResponses"] = json!({"first": {"action": "accept", "content": {"name": "Ada"}}});
    params["requestState"] = json!(state);
    let two = server.request(21, "tools/call", params).await;
    let state = input_required_state(&two);
    assert_eq!(
        two["result"]["inputRequests"]["second"]["method"], "sampling/createMessage",
        "{two}"
    );
    let mut params = modern_call("two_rounds", json!({}));
    params["inputResponses"] = json!({"second": {"role": "assistant",
        "content": {"type": "text", "text": "Hello Ada"}, "model": "m", "stopReason": "endTurn"}});
    params["requestState"] = json!(state);
    let three = server.request(22, "tools/call", params).await;
    assert_eq!(
        three["result"]["content"][0]["text"], "name: Ada; sampling: the model said \"Hello Ada\"",
        "{three}"
    );
    // Without the capability the tool needs, the server asks for nothing.
    let no_caps = server
        .request(
            23,
            "tools/call",
            json!({"name": "confirm", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                             "io.modelcontextprotocol/clientCapabilities": {}}}),
        )
        .await;
    assert_eq!(no_caps["error"]["code"], -32021, "{no_caps}");
}

#[tokio::test]
async fn stdio_listen_acknowledges_and_carries_list_changes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let mut server = StdioServer::spawn(&["--era", "modern", "--event-log", log.to_str().unwrap()]);
    server
        .send(
            json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
            "params": modern(json!({"notifications": {"toolsListChanged": true,
                "resourceSubscriptions": ["fixture://readme", "fixture://nope"]}}))}),
        )
        .await;
    let ack = server.recv().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["fixture://readme"]})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    let added = server
        .request(
            2,
            "tools/call",
            modern_call("add_tool", json!({"name": "later"})),
        )
        .await;
    assert_eq!(added["result"]["resultType"], "complete", "{added}");
    assert_eq!(
        server.take_notifications(),
        [
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "sub-1"}}})
        ]
    );
    let list = server.request(3, "tools/list", modern(json!({}))).await;
    assert!(tool_names(&list).contains(&"later".to_owned()));

    // Cancelling the listen ends it: the next change reaches nobody.
    server
        .notify(
            "notifications/cancelled",
            json!({"requestId": "sub-1", "reason": "done"}),
        )
        .await;
    let again = server
        .request(
            4,
            "tools/call",
            modern_call("add_tool", json!({"name": "later2"})),
        )
        .await;
    assert!(again["result"]["content"].is_array(), "{again}");
    assert!(
        server.notifications.is_empty(),
        "{:?}",
        server.notifications
    );
    let ends = logged(&log, "listen-end");
    assert_eq!(ends, [json!({"id": "sub-1", "how": "cancelled"})]);

    // --end-listen-after-ms ends each subscription with a complete result.
    let mut ending = StdioServer::spawn(&["--end-listen-after-ms", "20"]);
    let end = ending
        .request(
            7,
            "subscriptions/listen",
            modern(json!({"notifications": {"promptsListChanged": true}})),
        )
        .await;
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    let ack = ending.take_notifications();
    assert_eq!(
        ack[0]["params"]["notifications"],
        json!({"promptsListChanged": true})
    );
}

#[tokio::test]
async fn stdio_modern_cancel_stops_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events");
    let mut server =
        StdioServer::spawn(&["--event-log", log.to_str().unwrap(), "--bad-result-type"]);
    server
        .send(json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
                     "params": modern_call("slow", json!({"ms": 600_000}))}))
        .await;
    server
        .notify("notifications/cancelled", json!({"requestId": 30}))
        .await;
    let echo = server
        .request(
            31,
            "tools/call",
            modern_call("echo", json!({"text": "after"})),
        )
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "after");
    assert_eq!(echo["result"]["resultType"], "mystery", "{echo}");
    assert_eq!(
        logged(&log, "cancelled"),
        [json!({"requestId": 30, "inFlight": true})]
    );
}

/// Headers, body, and the HTTP status and JSON-RPC code they must get.
type RefusalCase<'a> = (Vec<(&'a str, &'a str)>, Value, StatusCode, i64);

/// The headers a modern POST of `method` carries.
fn modern_headers<'a>(method: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    headers.extend_from_slice(extra);
    headers
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn http_modern_discover_and_header_checks() {
    let server = HttpServer::spawn(&["--transport", "http"]).await;
    let discover = server
        .post(
            &modern_headers("server/discover", &[]),
            &rpc(1, "server/discover", modern(json!({}))),
        )
        .await;
    assert_eq!(discover.status(), StatusCode::OK);
    assert!(discover.headers().get("mcp-session-id").is_none());
    let discover = body_json(discover).await;
    assert_eq!(
        discover["result"]["supportedVersions"][0], MODERN,
        "{discover}"
    );

    let call = rpc(2, "tools/call", modern_call("echo", json!({"text": "hi"})));
    let cases: Vec<RefusalCase<'_>> = vec![
        // No Mcp-Name.
        (
            modern_headers("tools/call", &[]),
            call.clone(),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        // Mcp-Name differs from params.name.
        (
            modern_headers("tools/call", &[("mcp-name", "add")]),
            call.clone(),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        // Mcp-Method differs from the method.
        (
            modern_headers("tools/list", &[("mcp-name", "echo")]),
            call.clone(),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        // MCP-Protocol-Version differs from _meta's.
        (
            vec![
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "echo"),
            ],
            call.clone(),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        // No MCP-Protocol-Version.
        (
            vec![("mcp-method", "tools/call"), ("mcp-name", "echo")],
            call.clone(),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        // No clientCapabilities.
        (
            modern_headers("tools/list", &[]),
            rpc(
                3,
                "tools/list",
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
            ),
            StatusCode::BAD_REQUEST,
            -32602,
        ),
        // Unknown method.
        (
            modern_headers("no/such", &[]),
            rpc(4, "no/such", modern(json!({}))),
            StatusCode::NOT_FOUND,
            -32601,
        ),
        // x-mcp-header: the argument is there, its header is not.
        (
            modern_headers(
                "tools/call",
                &[("mcp-name", "region_echo"), ("mcp-param-region", "eu")],
            ),
            rpc(
                5,
                "tools/call",
                modern_call("region_echo", json!({"region": "eu", "zone": 7})),
            ),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        // x-mcp-header: the header differs.
        (
            modern_headers(
                "tools/call",
                &[("mcp-name", "region_echo"), ("mcp-param-region", "us")],
            ),
            rpc(
                6,
                "tools/call",
                modern_call("region_echo", json!({"region": "eu"})),
            ),
            StatusCode::BAD_REQUEST,
            -32020,
        ),
    ];
    for (headers, body, status, code) in cases {
        let response = server.post(&headers, &body).await;
        assert_eq!(response.status(), status, "{headers:?} {body}");
        let error = body_json(response).await;
        assert_eq!(error["error"]["code"], code, "{headers:?}: {error}");
        assert_eq!(error["id"], body["id"], "{error}");
    }

    // Base64 forms decode; integers and booleans mirror as text.
    let ok = server
        .post(
            &modern_headers(
                "tools/call",
                &[
                    ("mcp-name", "=?base64?cmVnaW9uX2VjaG8=?="),
                    ("mcp-param-region", "=?base64?WsO8cmljaA==?="),
                    ("mcp-param-zone", "7"),
                    ("mcp-param-dry-run", "true"),
                ],
            ),
            &rpc(
                7,
                "tools/call",
                modern_call(
                    "region_echo",
                    json!({"region": "Zürich", "zone": 7, "dry_run": true, "text": "t"}),
                ),
            ),
        )
        .await;
    assert_eq!(ok.status(), StatusCode::OK);
    let ok = body_json(ok).await;
    assert_eq!(
        ok["result"]["content"][0]["text"], "region=Zürich zone=7 dry_run=true: t",
        "{ok}"
    );
    // The handshake era still works beside it.
    server.initialize().await;
}

#[tokio::test]
async fn http_modern_era_refuses_the_handshake() {
    let server = HttpServer::spawn(&["--transport", "http", "--era", "modern"]).await;
    let init = server.post(&[], &initialize_message(1)).await;
    assert_eq!(init.status(), StatusCode::BAD_REQUEST);
    let init = body_json(init).await;
    assert_eq!(init["error"]["code"], -32022, "{init}");
    assert_eq!(init["error"]["data"]["supported"], json!([MODERN]));
    let get = server
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    let list = server
        .post(
            &modern_headers("tools/list", &[]),
            &rpc(2, "tools/list", modern(json!({}))),
        )
        .await;
    assert_eq!(list.status(), StatusCode::OK);
    assert!(tool_names(&body_json(list).await).contains(&"confirm".to_owned()));
}

#[tokio::test]
async fn http_legacy_era_answers_a_modern_post_with_a_bare_400() {
    let server = HttpServer::spawn(&["--transport", "http", "--era", "legacy"]).await;
    let probe = server
        .post(
            &modern_headers("server/discover", &[]),
            &rpc(1, "server/discover", modern(json!({}))),
        )
        .await;
    assert_eq!(probe.status(), StatusCode::BAD_REQUEST);
    let body = deadline("the 400 body", probe.into_body().collect())
        .await
        .unwrap()
        .to_bytes();
    assert!(body.is_empty(), "{body:?}");
    server.initialize().await;
}

#[tokio::test]
async fn http_modern_listen_stream_and_mrtr() {
    let server = HttpServer::spawn(&["--transport", "http", "--era", "modern"]).await;
    let listen = server
        .post(
            &modern_headers("subscriptions/listen", &[]),
            &rpc(
                40,
                "subscriptions/listen",
                modern(json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": true}})),
            ),
        )
        .await;
    assert_eq!(listen.status(), StatusCode::OK);
    let mut events = Events::new(listen);
    let ack = events.next().await.unwrap();
    let ack: Value = serde_json::from_str(&ack.data).unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourcesListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        40
    );
    let added = server
        .post(
            &modern_headers("tools/call", &[("mcp-name", "add_tool")]),
            &rpc(
                41,
                "tools/call",
                modern_call("add_tool", json!({"name": "fresh"})),
            ),
        )
        .await;
    assert_eq!(added.status(), StatusCode::OK);
    assert_eq!(body_json(added).await["result"]["resultType"], "complete");
    let changed = events.next().await.unwrap();
    let changed: Value = serde_json::from_str(&changed.data).unwrap();
    assert_eq!(
        changed,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 40}}})
    );

    // MRTR over HTTP: two independent POSTs with new ids.
    let confirm_headers = modern_headers("tools/call", &[("mcp-name", "confirm")]);
    let first = server
        .post(
            &confirm_headers,
            &rpc(42, "tools/call", modern_call("confirm", json!({}))),
        )
        .await;
    let first = body_json(first).await;
    let state = input_required_state(&first);
    let mut retry = modern_call("confirm", json!({}));
    retry["inputResponses"] = json!({"answer": {"action": "accept", "content": {"answer": "ok"}}});
    retry["requestState"] = json!(state);
    let done = server
        .post(&confirm_headers, &rpc(43, "tools/call", retry))
        .await;
    let done = body_json(done).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "confirmed: ok",
        "{done}"
    );
}

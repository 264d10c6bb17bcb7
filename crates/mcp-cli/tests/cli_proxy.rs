//! `mcpctl` reaches HTTP servers through the proxy of `HTTPS_PROXY` / `ALL_PROXY`: a proxy on 127.0.0.1 that refuses the tunnel is reported by `mcpctl servers` as `proxy_failed`, naming the proxy and its variable, never its credentials.
//!
//! Loopback servers bypass the proxy, so the servers here are at
//! `0.0.0.0:9`, which the proxy rules do not count as loopback: the
//! connection goes to the proxy (on 127.0.0.1), which refuses, so nothing
//! connects to the server address at all, and no name is ever resolved.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::Env;

/// A proxy on 127.0.0.1 that answers every CONNECT with `status`, on a
/// thread of its own; returns its port and the request lines it read.
fn refusing_proxy(status: &'static str) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let text = String::from_utf8_lossy(&head);
            log.lock()
                .unwrap()
                .push(text.lines().next().unwrap_or_default().to_owned());
            let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (port, seen)
}

fn row<'a>(rows: &'a Value, id: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {rows:#}"))
}

#[test]
fn a_refusing_proxy_is_proxy_failed_naming_it_and_its_variable() {
    let env = Env::new();
    let (https_port, https_seen) = refusing_proxy("403 Forbidden");
    let (all_port, all_seen) = refusing_proxy("407 Proxy Authentication Required");
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "secure": {"url": "https://0.0.0.0:9/mcp"},
            "plain": {"url": "http://0.0.0.0:9/mcp"},
            "local": {"command": support::MCPCTL, "args": ["demo-server"]},
        }}),
    );
    let config = config.display().to_string();
    let args = [
        "--json",
        "--no-host-configs",
        "--config",
        &config,
        "servers",
    ];
    let mut command = env.command(&args);
    // Only the variables of this test: lower case would win, NO_PROXY
    // could exempt the servers.
    for name in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "NO_PROXY",
    ] {
        command.env_remove(name);
    }
    command
        .env("HTTPS_PROXY", format!("http://127.0.0.1:{https_port}"))
        .env(
            "ALL_PROXY",
            format!("http://erin:correct-horse@127.0.0.1:{all_port}"),
        );
    let run = support::run_to_end(command, &args);
    assert!(!run.stderr.contains("panicked"), "{run:#?}");
    let rows = support::parse_one_document(&run.stdout);

    let secure = &row(&rows, "secure")["error"];
    assert_eq!(secure["code"], "proxy_failed", "{rows:#}");
    let message = secure["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("127.0.0.1:{https_port}"))
            && message.contains("HTTPS_PROXY")
            && message.contains("403"),
        "{message}"
    );
    // `http://` servers use ALL_PROXY when HTTP_PROXY is unset.
    let plain = &row(&rows, "plain")["error"];
    assert_eq!(plain["code"], "proxy_failed", "{rows:#}");
    let message = plain["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("127.0.0.1:{all_port}"))
            && message.contains("ALL_PROXY")
            && message.contains("407"),
        "{message}"
    );
    assert!(
        !run.stdout.contains("correct-horse") && !run.stderr.contains("correct-horse"),
        "{run:#?}"
    );
    assert!(!run.stdout.contains("erin"), "{run:#?}");
    // stdio servers never meet a proxy.
    assert_eq!(row(&rows, "local")["status"], "ready", "{rows:#}");
    assert!(
        https_seen
            .lock()
            .unwrap()
            .iter()
            .all(|line| line == "CONNECT 0.0.0.0:9 HTTP/1.1"),
        "{https_seen:?}"
    );
    assert!(!https_seen.lock().unwrap().is_empty());
    assert!(!all_seen.lock().unwrap().is_empty());
}

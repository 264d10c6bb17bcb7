//! Ad-hoc servers: `--stdio "cmd arg..."` (split as a shell would, run without one) and `--url URL` (with `--header`, `--bearer-env`), alone or beside configured servers.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;
use support::Env;

fn ids(rows: &serde_json::Value) -> Vec<String> {
    rows.as_array()
        .expect("an array")
        .iter()
        .map(|row| row["id"].as_str().unwrap_or("-").to_owned())
        .collect()
}

#[test]
fn a_stdio_server_from_the_command_line_is_split_like_a_shell_and_run_without_one() {
    let env = Env::new();
    let fixture = support::fixture_server();
    let argv = env.data_dir().join("argv");
    // Records its arguments one per line, then becomes the fixture.
    let script = env.root_file(
        "argv.sh",
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '{}'; done\nexec '{}' --era legacy\n",
            argv.display(),
            fixture.display()
        ),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let line = format!(
        r#"{} 'two words' "x y" a\ b '$HOME' $(id) 'a;b'"#,
        script.display()
    );
    let run = env.run(&[
        "--json",
        "call",
        "--no-host-configs",
        "--stdio",
        &line,
        "stdio",
        "echo",
        r#"{"text": "hi"}"#,
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let result = support::parse_one_document(&run.stdout);
    assert_eq!(result["content"][0]["text"], "hi", "{result:#}");
    let seen = std::fs::read_to_string(&argv).expect("the script ran");
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        ["two words", "x y", "a b", "$HOME", "$(id)", "a;b"],
        "quotes and escapes as a shell reads them, nothing expanded or run"
    );

    let run = env.run(&["tools", "--no-host-configs", "--stdio", "sh -c 'unclosed"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("unclosed quote"), "{run:#?}");
}

#[test]
fn ad_hoc_servers_sit_beside_configured_ones() {
    let env = Env::new();
    let fixture = support::fixture_server();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"demo2": {"command": support::MCPCTL, "args": ["demo-server"]}}}),
    );
    let config = config.display().to_string();
    let stdio = format!("{} --era legacy", fixture.display());
    let port = support::free_port();
    let mut command = std::process::Command::new(&fixture);
    command.args(["--transport", "http", "--port", &port.to_string()]);
    let _http = support::start_http_server(command, port);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let rows = env.json(&[
        "servers",
        "--no-host-configs",
        "--config",
        &config,
        "--stdio",
        &stdio,
        "--url",
        &url,
    ]);
    assert_eq!(ids(&rows), ["stdio", "url", "demo2"], "{rows:#}");
    for row in rows.as_array().unwrap() {
        assert_eq!(row["status"], "ready", "{row:#}");
    }
    assert_eq!(rows[0]["source"]["label"], "command line");
    // Alone: no configuration, no built-in demo either.
    let tools = env.json(&["tools", "--url", &url]);
    let servers: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["server"].as_str().unwrap())
        .collect();
    assert!(
        !servers.is_empty() && servers.iter().all(|s| *s == "url"),
        "{tools:#}"
    );
    let run = env.run(&[
        "--json",
        "call",
        "--url",
        &url,
        "url",
        "echo",
        r#"{"text": "over http"}"#,
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        support::parse_one_document(&run.stdout)["content"][0]["text"],
        "over http"
    );
}

#[test]
fn a_url_server_gets_its_headers_and_bearer_token_and_none_is_printed() {
    let env = Env::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel::<Vec<String>>();
    // Records each request's head and answers 404, which ends the attempt.
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = Vec::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                head.push(line.trim_end().to_ascii_lowercase());
                line.clear();
            }
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found",
            );
            if tx.send(head).is_err() {
                break;
            }
        }
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut command = env.command(&[
        "servers",
        "--no-host-configs",
        "--url",
        &url,
        "--header",
        "X-Team: blue-team-7",
        "--bearer-env",
        "ADHOC_TOKEN",
    ]);
    command.env("ADHOC_TOKEN", "tok-abc-123");
    let run = support::run_to_end(command, &["servers", "--url"]);
    let head = rx.recv_timeout(Duration::from_secs(30)).expect("a request");
    assert!(head.iter().any(|h| h == "x-team: blue-team-7"), "{head:?}");
    assert!(
        head.iter()
            .any(|h| h == "authorization: bearer tok-abc-123"),
        "{head:?}"
    );
    assert_eq!(run.code, 3, "the server failed: {run:#?}");
    assert!(run.stdout.contains("HTTP 404"), "{run:#?}");
    for text in [&run.stdout, &run.stderr] {
        assert!(!text.contains("tok-abc-123"), "{run:#?}");
        assert!(!text.contains("blue-team-7"), "{run:#?}");
    }

    let run = env.run(&["servers", "--url", &url, "--header", "no colon"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("--header takes"), "{run:#?}");
}

#[test]
fn a_failed_adhoc_server_points_at_the_flag_not_at_a_config_key() {
    let env = Env::new();
    let run = env.run(&[
        "tools",
        "--no-host-configs",
        "--stdio",
        "/nonexistent/server --x",
        "stdio",
    ]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("[missing_command]"), "{run:#?}");
    assert!(
        run.stderr.contains("hint: check the `--stdio` you gave"),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("transport."), "{run:#?}");

    let port = support::free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = env.run(&["--json", "tools", "--no-host-configs", "--url", &url, "url"]);
    assert_eq!(run.code, 3, "{run:#?}");
    let error = support::parse_one_document(&run.stdout);
    assert_eq!(error["error"]["code"], "unreachable", "{error:#}");
    assert_eq!(
        error["error"]["hint"], "check the `--url` you gave",
        "{error:#}"
    );
}

//! A hostile server against `mcpctl`: escape sequences in names, descriptions, errors and results never reach the terminal raw, and huge error texts are cut.
//!
//! The server is the workspace's fixture (`mcp-fixture-server`) with its
//! hostile-text switches, over stdio and over Streamable HTTP on loopback.

mod support;

use serde_json::{Value, json};
use support::{Env, Run};

/// The fixture's escape-laden strings (tests/src/bin/mcp-fixture-server/catalog.rs).
const HOSTILE_NAME: &str = "ctl\x1b[31mred";
const HOSTILE_DESCRIPTION: &str = "Nice tool\x1b]0;PWNED\x07\x1b[2J";
const HOSTILE_TITLE: &str = "Title\u{9b}31m\u{202e}";
const HOSTILE_OUTPUT: &str =
    "first\x1b[2J\x1b]0;PWNED\x07\rFAKE\nsecond\tline\u{9b}1m\u{202e}\x08\n";

/// Fails naming the first character a terminal could act on: C0 controls
/// but line feed and tab, DEL, C1 controls, bidirectional overrides and
/// isolates, and the Unicode line separators.
fn assert_terminal_safe(text: &str, what: &str) {
    let bad = text.char_indices().find(|&(_, c)| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
    });
    if let Some((index, c)) = bad {
        let from = text[..index]
            .char_indices()
            .rev()
            .nth(40)
            .map_or(0, |(i, _)| i);
        panic!(
            "{what} holds a raw {c:?} at byte {index}, after {:?}",
            &text[from..index]
        );
    }
}

fn assert_run_safe(run: &Run, what: &str) {
    assert_terminal_safe(&run.stdout, &format!("{what}: stdout"));
    assert_terminal_safe(&run.stderr, &format!("{what}: stderr"));
}

/// A config with the fixture over stdio, started with `args`.
fn stdio_config(env: &Env, args: &[&str]) -> String {
    let path = env.write_json(
        "hostile.json",
        &json!({"mcpServers": {"hostile": {
            "command": support::fixture_server(),
            "args": args,
        }}}),
    );
    path.to_str().unwrap().to_owned()
}

/// The fixture over Streamable HTTP on a loopback port, started with
/// `args`, and a config pointing at it.
fn http_config(env: &Env, args: &[&str]) -> (support::HttpServer, String) {
    let port = support::free_port();
    let mut command = std::process::Command::new(support::fixture_server());
    command
        .args(["--transport", "http", "--port", &port.to_string()])
        .args(args);
    let server = support::start_http_server(command, port);
    let path = env.write_json(
        "hostile.json",
        &json!({"mcpServers": {"hostile": {"url": format!("http://127.0.0.1:{port}/mcp")}}}),
    );
    (server, path.to_str().unwrap().to_owned())
}

/// Everything a server controls in `tools`, `call` and `servers`, shown
/// escaped to people and exact to scripts.
fn hostile_text_is_never_printed_raw(config: &str) {
    let env = Env::new();
    let config = ["--config", config];
    let run = |args: &[&str]| env.run(&[&config[..], args].concat());

    // The table: the name and the description shown escaped.
    let tools = run(&["tools"]);
    assert_eq!(tools.code, 0, "{tools:#?}");
    assert_run_safe(&tools, "mcpctl tools");
    assert!(tools.stdout.contains(r"ctl\x1b[31mred"), "{tools:#?}");
    assert!(
        tools.stdout.contains(r"Nice tool\x1b]0;PWNED\x07\x1b[2J"),
        "{tools:#?}"
    );

    // `--json`: one document, parsing back to exactly what the server sent.
    let json = run(&["--json", "tools"]);
    assert_eq!(json.code, 0, "{json:#?}");
    assert_run_safe(&json, "mcpctl --json tools");
    let listed = support::parse_one_document(&json.stdout);
    let tool = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == HOSTILE_NAME)
        .unwrap_or_else(|| panic!("no {HOSTILE_NAME:?} in {listed:#}"));
    assert_eq!(tool["description"], HOSTILE_DESCRIPTION);
    assert_eq!(tool["title"], HOSTILE_TITLE);

    // A JSON-RPC error whose message is full of escapes.
    let error = run(&["call", "hostile", "hostile_error"]);
    assert_eq!(error.code, 1, "{error:#?}");
    assert_run_safe(&error, "mcpctl call hostile_error");
    assert!(
        error
            .stderr
            .contains(r"denied\x1b]0;PWNED\x07\x1b[2J\u{9b}31m\u{202e}txt.exe"),
        "{error:#?}"
    );

    // A result whose text would repaint the terminal: shown escaped, line
    // breaks and tabs kept; other blocks as escaped JSON.
    let output = run(&["call", "hostile", "hostile_output"]);
    assert_eq!(output.code, 0, "{output:#?}");
    assert_run_safe(&output, "mcpctl call hostile_output");
    assert!(
        output.stdout.contains(
            "first\\x1b[2J\\x1b]0;PWNED\\x07\\rFAKE\nsecond\tline\\u{9b}1m\\u{202e}\\x08\n"
        ),
        "{output:#?}"
    );
    assert!(
        output.stdout.contains(r#""link\u001b[2J\u009b\u007f""#),
        "{output:#?}"
    );
    let exact = run(&["--json", "call", "hostile", "hostile_output"]);
    assert_eq!(exact.code, 0, "{exact:#?}");
    assert_run_safe(&exact, "mcpctl --json call hostile_output");
    let result = support::parse_one_document(&exact.stdout);
    assert_eq!(result["content"][0]["text"], HOSTILE_OUTPUT);
    assert_eq!(
        result["content"][1]["name"],
        Value::from("link\x1b[2J\u{9b}\u{7f}")
    );

    // The tool names the hint lists for an unknown tool are the server's.
    let unknown = run(&["call", "hostile", "nope\x1b[2J"]);
    assert_eq!(unknown.code, 2, "{unknown:#?}");
    assert_run_safe(&unknown, "mcpctl call nope");
    assert!(unknown.stderr.contains(r"ctl\x1b[31mred"), "{unknown:#?}");

    let servers = run(&["servers"]);
    assert_eq!(servers.code, 0, "{servers:#?}");
    assert_run_safe(&servers, "mcpctl servers");
}

#[test]
fn hostile_text_is_never_printed_raw_over_stdio() {
    let env = Env::new();
    hostile_text_is_never_printed_raw(&stdio_config(&env, &["--hostile-text"]));
}

#[test]
fn hostile_text_is_never_printed_raw_over_streamable_http() {
    let env = Env::new();
    let (_server, config) = http_config(&env, &["--hostile-text"]);
    hostile_text_is_never_printed_raw(&config);
}

/// A 10 MiB JSON-RPC error message: the call error holds its first
/// kilobyte and says how much was cut.
#[test]
fn a_10_mib_error_message_is_cut_with_a_marker() {
    let env = Env::new();
    let config = stdio_config(&env, &["--error-message-kib", "10240"]);
    for json in [false, true] {
        let mut args = vec!["--config", &config, "call", "hostile", "long_error"];
        if json {
            args.insert(0, "--json");
        }
        let run = env.run(&args);
        assert_eq!(
            run.code,
            1,
            "{args:?}: exit {} {:?}",
            run.code,
            &run.stderr[..200.min(run.stderr.len())]
        );
        assert!(
            run.stderr.len() < 2048,
            "{args:?}: {} bytes on stderr",
            run.stderr.len()
        );
        assert!(
            run.stdout.len() < 2048,
            "{args:?}: {} bytes on stdout",
            run.stdout.len()
        );
        // With --json the error is the one document on stdout.
        let said = if json { &run.stdout } else { &run.stderr };
        assert!(said.contains("long error: eeee"), "{run:#?}");
        let more = 10 * 1024 * 1024 - 1024;
        assert!(said.contains(&format!("… [{more} more bytes]")), "{run:#?}");
    }
}

/// An HTTP 500 with a 16 KiB HTML traceback: the call error holds the
/// page's title and the start of its text (bounded), not its markup.
#[test]
fn an_http_500_html_page_is_reduced_to_its_title_and_text_in_the_call_error() {
    let env = Env::new();
    let (_server, config) = http_config(&env, &["--http-500-html-kib", "16"]);
    let run = env.run(&[
        "--config",
        &config,
        "call",
        "hostile",
        "echo",
        r#"{"text": "hi"}"#,
    ]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert_run_safe(&run, "mcpctl call echo (HTTP 500)");
    assert!(
        run.stderr.contains(
            "HTTP 500: 500 Internal Server Error: Internal Server Error\\x1b]0;PWNED\\x07 \
             Traceback (most recent call last): File \"/srv/app/handlers.py\""
        ),
        "{run:#?}"
    );
    assert!(run.stderr.contains("… (an HTML page)"), "{run:#?}");
    assert!(!run.stderr.contains('<'), "{run:#?}");
    assert!(!run.stderr.contains("KeyError"), "{run:#?}");
    assert!(
        run.stderr.len() < 2048,
        "{} bytes on stderr: {run:#?}",
        run.stderr.len()
    );
}

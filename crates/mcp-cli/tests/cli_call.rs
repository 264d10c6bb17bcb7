//! `mcpctl call`: argument checks, exit statuses 0/1/2/3, and approval without a terminal.

mod support;

use serde_json::json;
use support::Env;

#[test]
fn bad_json_arguments_exit_2_and_name_the_problem() {
    let env = Env::new();
    for (arguments, needle) in [
        (r#"{"text": "hi""#, "not valid JSON"),
        ("hi", "not valid JSON"),
        (r#"["hi"]"#, "must be a JSON object, not an array"),
        ("42", "must be a JSON object, not a number"),
    ] {
        for json in [false, true] {
            let mut args = vec!["call", "demo", "echo", arguments];
            if json {
                args.insert(0, "--json");
            }
            let run = env.run(&args);
            assert_eq!(run.code, 2, "{args:?}: {run:#?}");
            if json {
                // The error is the one document on stdout, nothing on stderr.
                let error = support::parse_one_document(&run.stdout);
                assert_eq!(error["error"]["code"], "invalid_arguments", "{error:#}");
                let message = error["error"]["message"].as_str().unwrap();
                assert!(message.contains(needle), "{args:?}: {error:#}");
                assert!(error["error"]["hint"].is_string(), "{error:#}");
                assert!(run.stderr.is_empty(), "{args:?}: {run:#?}");
            } else {
                assert!(run.stderr.contains(needle), "{args:?}: {run:#?}");
                assert!(run.stdout.is_empty(), "{args:?}: stdout must stay empty");
            }
        }
    }
}

#[test]
fn arguments_are_checked_against_the_input_schema_before_sending() {
    let env = Env::new();
    for (arguments, needle) in [
        (r#"{"text": 1}"#, "/text"),
        (r#"{}"#, "text"),
        (r#"{"text": "hi", "extra": true}"#, "extra"),
    ] {
        let run = env.run(&["call", "demo", "echo", arguments]);
        assert_eq!(run.code, 2, "{arguments}: {run:#?}");
        assert!(
            run.stderr.contains("invalid arguments"),
            "{arguments}: {run:#?}"
        );
        assert!(
            run.stderr.contains("nothing was sent"),
            "{arguments}: {run:#?}"
        );
        assert!(run.stderr.contains(needle), "{arguments}: {run:#?}");
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn unknown_servers_and_tools_exit_2() {
    let env = Env::new();
    let run = env.run(&["call", "nope", "echo"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("no server with id `nope`"), "{run:#?}");
    assert!(run.stderr.contains("configured servers: demo"), "{run:#?}");

    let run = env.run(&["call", "demo", "nope"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("has no tool `nope`"), "{run:#?}");
    assert!(run.stderr.contains("echo, add"), "{run:#?}");
}

#[test]
fn a_tool_error_exits_1_and_shows_the_tools_message() {
    let env = Env::new();
    let run = env.run(&[
        "call",
        "demo",
        "current_time",
        r#"{"timezone": "Mars/Olympus"}"#,
    ]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stdout.contains("unknown timezone `Mars/Olympus`"),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("the tool reported an error"),
        "{run:#?}"
    );

    let result = env.run(&[
        "--json",
        "call",
        "demo",
        "current_time",
        r#"{"timezone": "Mars"}"#,
    ]);
    assert_eq!(result.code, 1);
    let result = support::parse_one_document(&result.stdout);
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("unknown timezone")
    );
}

#[test]
fn connection_failures_exit_3_and_configuration_errors_exit_2() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "exits": {"command": "false"},
            "missing": {"command": "/nonexistent/mcp-server"},
            "needs-env": {"command": support::MCPCTL, "args": ["demo-server"],
                          "env": {"TOKEN": "${MCPCTL_TEST_UNSET_VARIABLE}"}},
            "bad-url": {"url": "ftp://example.com/mcp"}
        }}),
    );
    let config = config.to_str().unwrap();
    for (server, code, needle) in [
        ("exits", 3, "closed"),
        ("missing", 2, "missing_command"),
        ("needs-env", 2, "MCPCTL_TEST_UNSET_VARIABLE"),
        ("bad-url", 2, "mcpServers.bad-url.url"),
    ] {
        let run = env.run(&[
            "--config",
            config,
            "call",
            server,
            "echo",
            r#"{"text":"hi"}"#,
        ]);
        assert_eq!(run.code, code, "{server}: {run:#?}");
        assert!(run.stderr.contains(needle), "{server}: {run:#?}");
        assert!(run.stdout.is_empty(), "{server}: {run:#?}");
    }
}

#[test]
fn several_documents_make_several_calls_in_one_session() {
    let env = Env::new();
    let run = env.run(&[
        "call",
        "demo",
        "echo",
        r#"{"text":"one"}"#,
        r#"{"text":"two"}"#,
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "# call 1\none\n# call 2\ntwo\n");

    let results = env.json(&[
        "call",
        "demo",
        "echo",
        r#"{"text":"one"}"#,
        r#"{"text":"two"}"#,
    ]);
    assert_eq!(results[1]["content"][0]["text"], "two");

    // A failed call among good ones: the worst status wins, the others still run.
    let run = env.run(&[
        "--json",
        "call",
        "demo",
        "echo",
        r#"{"text":"one"}"#,
        r#"{"text":2}"#,
    ]);
    assert_eq!(run.code, 2, "{run:#?}");
    let results = support::parse_one_document(&run.stdout);
    assert_eq!(results[0]["content"][0]["text"], "one");
    assert_eq!(
        results[1]["error"]["code"], "invalid_arguments",
        "{results:#}"
    );
    assert_eq!(results[1]["error"]["server"], "demo", "{results:#}");
    assert!(
        run.stderr.is_empty(),
        "the error is in the document: {run:#?}"
    );
}

#[test]
fn a_preset_that_asks_refuses_without_a_terminal() {
    let env = Env::new();
    for preset in ["workspace", "readonly"] {
        let run = env.run(&[
            "--preset",
            preset,
            "call",
            "demo",
            "echo",
            r#"{"text":"hi"}"#,
        ]);
        assert_eq!(run.code, 2, "{preset}: {run:#?}");
        assert!(run.stderr.contains("needs approval"), "{preset}: {run:#?}");
        assert!(run.stderr.contains("--preset full"), "{preset}: {run:#?}");
        assert!(run.stdout.is_empty());
    }
    // Piped input is not a terminal: it cannot answer the prompt.
    let mut command = env.command(&[
        "--preset",
        "workspace",
        "call",
        "demo",
        "echo",
        r#"{"text":"hi"}"#,
    ]);
    command.stdin(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"o\n");
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
}

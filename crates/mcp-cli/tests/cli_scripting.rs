//! Scripting: `servers` and `tools` exit 3 when a configured server's connection failed (`--allow-failures` gives 0), and with `--json` an error is one JSON document on stdout.

mod support;

use serde_json::json;
use support::Env;

/// The demo server beside one whose command exits at once.
fn config(env: &Env) -> String {
    let path = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "good": {"command": support::MCPCTL, "args": ["demo-server"]},
            "exits": {"command": "false"},
        }}),
    );
    path.display().to_string()
}

#[test]
fn a_failed_server_makes_servers_and_tools_exit_3_unless_failures_are_allowed() {
    let env = Env::new();
    let config = config(&env);
    for command in ["servers", "tools"] {
        for json in [false, true] {
            let mut args = vec!["--no-host-configs", "--config", &config, command];
            if json {
                args.insert(0, "--json");
            }
            let run = env.run(&args);
            assert_eq!(run.code, 3, "{args:?}: {run:#?}");
            assert!(
                run.stderr.contains("1 configured server failed"),
                "{args:?}: {run:#?}"
            );
            if json {
                // The listing is still the one document.
                assert!(support::parse_one_document(&run.stdout).is_array());
            } else {
                assert!(run.stdout.contains("good"), "{args:?}: {run:#?}");
            }
            args.push("--allow-failures");
            let run = env.run(&args);
            assert_eq!(run.code, 0, "{args:?}: {run:#?}");
            assert!(!run.stderr.contains("failed"), "{args:?}: {run:#?}");
        }
    }
    // Nothing failed: 0 without the flag.
    let run = env.run(&["servers"]);
    assert_eq!(run.code, 0, "{run:#?}");
}

#[test]
fn with_json_an_error_is_one_document_on_stdout() {
    let env = Env::new();
    let config = config(&env);
    let cases: [(&[&str], i32, &str, serde_json::Value); 5] = [
        (
            &["call", "nope", "echo"],
            2,
            "unknown_server",
            json!("nope"),
        ),
        (&["call", "good", "nope"], 2, "unknown_tool", json!("good")),
        (
            &["call", "good", "echo", r#"{"text": 1}"#],
            2,
            "invalid_arguments",
            json!("good"),
        ),
        (&["call", "exits", "echo"], 3, "closed", json!("exits")),
        (&["tools", "exits"], 3, "closed", json!("exits")),
    ];
    for (args, code, error_code, server) in cases {
        let mut all = vec!["--json", "--no-host-configs", "--config", &config];
        all.extend_from_slice(args);
        let run = env.run(&all);
        assert_eq!(run.code, code, "{args:?}: {run:#?}");
        assert!(
            run.stderr.is_empty(),
            "{args:?}: nothing on stderr: {run:#?}"
        );
        let document = support::parse_one_document(&run.stdout);
        let error = &document["error"];
        assert_eq!(error["code"], error_code, "{args:?}: {document:#}");
        assert_eq!(error["server"], server, "{args:?}: {document:#}");
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(
            error.as_object().unwrap().contains_key("hint"),
            "{document:#}"
        );
    }
    // Without --json the same error is text on stderr, stdout empty.
    let run = env.run(&[
        "--no-host-configs",
        "--config",
        &config,
        "call",
        "nope",
        "echo",
    ]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("no server with id `nope`"), "{run:#?}");
}

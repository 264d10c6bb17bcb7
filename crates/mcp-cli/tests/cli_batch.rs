//! `mcpctl call` with several calls: a tool list change caused by one call is followed by the next (rebinding), and a tool gone after the change is a clear `unknown_tool` error, never exit 3.
//!
//! The server is the workspace's fixture: `add_tool` and `remove_tool`
//! change its tool list and send `notifications/tools/list_changed` before
//! they answer, so the change lands between two calls of one batch.

mod support;

use serde_json::{Value, json};
use support::Env;

/// A config with the fixture (handshake era, `remove_tool` offered) as `fx`.
fn fixture_config(env: &Env) -> String {
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": ["--era", "legacy", "--remove-tool"]
        }}}),
    );
    config.display().to_string()
}

#[test]
fn each_call_of_a_batch_follows_the_tool_list_change_the_one_before_caused() {
    let env = Env::new();
    let config = fixture_config(&env);
    // Every call adds a tool, so every later call meets a changed list.
    let names = ["a", "b", "c", "d", "e", "f"];
    let documents: Vec<String> = names
        .iter()
        .map(|name| json!({"name": name}).to_string())
        .collect();
    let mut args = vec![
        "--no-host-configs",
        "--config",
        &config,
        "--json",
        "call",
        "fx",
        "add_tool",
    ];
    args.extend(documents.iter().map(String::as_str));
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    let results = support::parse_one_document(&run.stdout);
    let results = results.as_array().expect("an array of results");
    assert_eq!(results.len(), names.len(), "{results:#?}");
    for (result, name) in results.iter().zip(names) {
        assert_eq!(result["is_error"], false, "{result:#}");
        assert_eq!(
            result["content"][0]["text"],
            format!("added tool {name}"),
            "{result:#}"
        );
    }

    // For people the same: every call's result, exit 0.
    let mut args: Vec<&str> = args.into_iter().filter(|a| *a != "--json").collect();
    args.truncate(6);
    args.extend([r#"{"name": "x"}"#, r#"{"name": "y"}"#, r#"{"name": "z"}"#]);
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    for name in ["x", "y", "z"] {
        assert!(
            run.stdout.contains(&format!("added tool {name}")),
            "{run:#?}"
        );
    }
    assert!(!run.stderr.contains("could not be reached"), "{run:#?}");
}

#[test]
fn a_tool_gone_after_the_change_is_unknown_tool_exit_2_not_a_connection_failure() {
    let env = Env::new();
    let config = fixture_config(&env);
    // The first call takes `remove_tool` itself out of the list.
    let base = ["--no-host-configs", "--config", &config];
    let call = [
        "call",
        "fx",
        "remove_tool",
        r#"{"name": "remove_tool"}"#,
        r#"{"name": "echo"}"#,
    ];

    let args: Vec<&str> = base
        .iter()
        .chain(&["--json"])
        .chain(&call)
        .copied()
        .collect();
    let run = env.run(&args);
    assert_eq!(run.code, 2, "{run:#?}");
    let results: Value = support::parse_one_document(&run.stdout);
    let results = results.as_array().expect("an array");
    assert_eq!(results.len(), 2, "{results:#?}");
    assert_eq!(results[0]["content"][0]["text"], "removed tool remove_tool");
    let error = &results[1]["error"];
    assert_eq!(error["code"], "unknown_tool", "{error:#}");
    assert_eq!(error["server"], "fx", "{error:#}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("no longer offers tool `remove_tool`"),
        "{message}"
    );
    assert!(message.contains("call 2 was not made"), "{message}");

    let args: Vec<&str> = base.iter().chain(&call).copied().collect();
    let run = env.run(&args);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stdout.contains("removed tool remove_tool"), "{run:#?}");
    assert!(
        run.stderr
            .contains("server `fx` no longer offers tool `remove_tool`"),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("could not be reached"), "{run:#?}");
}

#[test]
fn a_server_that_died_during_a_batch_is_a_connection_failure_not_a_missing_tool() {
    let env = Env::new();
    let config = fixture_config(&env);
    // `crash` ends the server without answering: really unreachable. The
    // second call may find the server already failed or not yet: a few
    // runs meet both.
    for _ in 0..5 {
        let run = env.run(&[
            "--no-host-configs",
            "--config",
            &config,
            "--json",
            "call",
            "fx",
            "crash",
            "{}",
            "{}",
        ]);
        assert_eq!(run.code, 3, "{run:#?}");
        let results = support::parse_one_document(&run.stdout);
        let results = results.as_array().expect("an array");
        for result in results {
            let code = result["error"]["code"].as_str().unwrap_or_default();
            assert_ne!(code, "unknown_tool", "{results:#?}");
            assert!(!code.is_empty(), "{results:#?}");
        }
    }
}

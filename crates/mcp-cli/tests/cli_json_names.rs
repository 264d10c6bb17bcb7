//! One naming scheme for every `--json` field: every key mcpctl writes is snake_case, in every command's output, on the demo server and on the fixture.
//!
//! What a server sent is passed through as it sent it, in MCP's own names,
//! and is not walked: a tool's `input_schema` and `output_schema`, a call's
//! `content` and `structured_content`, a resource's `contents` and a
//! prompt's `messages` (their keys are the server's: `mimeType`,
//! `additionalProperties`...).

mod support;

use serde_json::{Value, json};
use support::Env;

/// Keys whose values are the server's, kept as it sent them.
const PASS_THROUGH: [&str; 6] = [
    "input_schema",
    "output_schema",
    "content",
    "structured_content",
    "contents",
    "messages",
];

/// Every key under `value` that has an uppercase letter, with its path.
fn uppercase_keys(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                let here = format!("{path}/{key}");
                if key.chars().any(char::is_uppercase) {
                    found.push(here.clone());
                }
                if !PASS_THROUGH.contains(&key.as_str()) {
                    uppercase_keys(inner, &here, found);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                uppercase_keys(item, &format!("{path}/{index}"), found);
            }
        }
        _ => {}
    }
}

/// Runs `mcpctl --json ARGS`, expects `code` and a JSON document, and
/// checks its keys; returns the document.
fn check(env: &Env, base: &[&str], args: &[&str], code: i32) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(base);
    all.extend_from_slice(args);
    let run = env.run(&all);
    assert_eq!(run.code, code, "{all:?}: {run:#?}");
    let document = support::parse_one_document(&run.stdout);
    let mut found = Vec::new();
    uppercase_keys(&document, "", &mut found);
    assert!(
        found.is_empty(),
        "{all:?}: keys that are not snake_case: {found:?} in {document:#}"
    );
    document
}

#[test]
fn every_commands_json_keys_are_snake_case_on_the_demo_server() {
    let env = Env::new();
    let none: &[&str] = &[];
    for args in [
        &["servers"][..],
        &["tools"],
        &["tools", "demo", "--schema"],
        &["call", "demo", "echo", "text=hi"],
        &[
            "call",
            "demo",
            "add",
            r#"{"a": 2, "b": 3}"#,
            r#"{"a": 1, "b": 1}"#,
        ],
        &["call", "demo", "tiny_image"],
        &["watch"],
        &["resources"],
        &["read", "demo", "demo://about"],
        &["prompts"],
        &["prompt", "demo", "try_tool", "tool=echo"],
        &["complete", "demo", "try_tool", "tool", "e"],
        &["retry", "demo"],
        &["sources"],
        &["trust", "--list"],
    ] {
        check(&env, none, args, 0);
    }
    // The call result's own fields are snake_case; the server's stay.
    let result = check(&env, none, &["call", "demo", "add", "a=2", "b=3"], 0);
    assert_eq!(result["is_error"], false, "{result:#}");
    assert_eq!(result["structured_content"]["sum"], 5, "{result:#}");
    // Errors are one document too.
    check(&env, none, &["call", "demo", "nope"], 2);
    check(&env, none, &["call", "nope", "echo"], 2);

    // The store's commands, login's logout, and import.
    for (args, code) in [
        (
            &["add", "extra", "--", support::MCPCTL, "demo-server"][..],
            0,
        ),
        (&["disable", "extra"], 0),
        (&["enable", "extra"], 0),
        (&["add", "web", "--url", "http://127.0.0.1:9/mcp"], 0),
        (&["logout", "web"], 0),
        (&["remove", "web"], 0),
        (&["remove", "extra"], 0),
    ] {
        check(&env, none, args, code);
    }
    std::fs::write(
        env.home().join(".claude.json"),
        json!({"mcpServers": {"imported": {"command": support::MCPCTL, "args": ["demo-server"]}}})
            .to_string(),
    )
    .unwrap();
    check(&env, none, &["import", "claude-code"], 0);

    // A project server approved, then listed with its approval's time.
    std::fs::write(
        env.work_dir().join(".mcp.json"),
        json!({"mcpServers": {"proj": {"command": support::MCPCTL, "args": ["demo-server"]}}})
            .to_string(),
    )
    .unwrap();
    check(&env, none, &["trust", "proj"], 0);
    let approvals = check(&env, none, &["trust", "--list"], 0);
    assert!(
        approvals[0]["approved_at"].is_number() || approvals[0]["approved_at"].is_string(),
        "{approvals:#}"
    );
}

#[test]
fn every_commands_json_keys_are_snake_case_on_the_fixture() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": ["--era", "legacy"]
        }}}),
    );
    let config = config.display().to_string();
    let base = ["--no-host-configs", "--config", &config];
    for (args, code) in [
        (&["servers"][..], 0),
        (&["tools", "fx", "--schema"], 0),
        (&["call", "fx", "echo", "text=hi"], 0),
        (&["call", "fx", "image"], 0),
        (&["call", "fx", "fail"], 1),
        (
            &[
                "call",
                "fx",
                "add_tool",
                r#"{"name": "a"}"#,
                r#"{"name": "b"}"#,
            ],
            0,
        ),
        (&["watch"], 0),
        (&["resources"], 0),
        (&["prompts"], 0),
        (&["sources"], 0),
    ] {
        check(&env, &base, args, code);
    }
}

#[test]
fn the_long_help_documents_the_scheme_and_what_is_passed_through() {
    let run = Env::new().run(&["--help"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout.contains("--json field names are snake_case"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("passed through"), "{run:#?}");
}

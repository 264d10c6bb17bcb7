//! What a person new to mcpctl types first, run as they would: flags anywhere, `--timeout`, readable signatures, one tool's schema, ad-hoc servers, results printed once, saving binary contents, `--version` and `--help`.

mod support;

use std::time::Instant;

use serde_json::{Value, json};
use support::Env;

/// A `--config` file with server-everything as `ev`.
fn everything(env: &Env) -> String {
    let entry = support::server_everything();
    env.write_json(
        "ev.json",
        &json!({"mcpServers": {"ev": {"command": "node", "args": [entry, "stdio"]}}}),
    )
    .display()
    .to_string()
}

/// server-everything's stdio command line, for `--stdio`.
fn everything_command() -> String {
    format!("node {} stdio", support::server_everything().display())
}

#[test]
fn global_flags_work_after_a_calls_arguments() {
    let env = Env::new();
    let config = everything(&env);
    let run = env.run(&[
        "call",
        "ev",
        "get-sum",
        "a=1",
        "b=2",
        "--json",
        "--config",
        &config,
        "--no-host-configs",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let result = support::parse_one_document(&run.stdout);
    assert_eq!(result["is_error"], false);
    assert_eq!(result["content"][0]["text"], "The sum of 1 and 2 is 3.");
    // `--` still ends the flags.
    let run = env.run(&[
        "--config", &config, "call", "ev", "get-sum", "--", "a=2", "b=5",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "The sum of 2 and 5 is 7.\n");
}

#[test]
fn timeout_bounds_a_hung_server_and_the_hint_names_the_key() {
    let env = Env::new();
    // A real process that never speaks MCP: it neither answers nor exits.
    let hung = env.write_json(
        "hung.json",
        &json!({"mcpServers": {"hung": {"command": "sleep", "args": ["600"]}}}),
    );
    let hung = hung.display().to_string();
    let started = Instant::now();
    let run = env.run(&["--config", &hung, "tools", "--timeout", "1"]);
    let took = started.elapsed();
    assert_eq!(run.code, 3, "{run:#?}");
    // Without --timeout the start alone waits 10 s.
    assert!(took.as_secs_f64() < 8.0, "took {took:?}: {run:#?}");
    assert!(run.stderr.contains("within 1 s [timeout]"), "{run:#?}");
    assert!(
        run.stderr.contains("`--timeout SECS` waits longer")
            && run
                .stderr
                .contains(&format!("set `timeout` (milliseconds) in {hung}")),
        "{run:#?}"
    );
    assert!(
        !run.stderr.contains("`mcpctl servers` says why"),
        "{run:#?}"
    );

    // `call` takes it too, anywhere on the line, and says the same.
    let run = env.run(&["call", "hung", "x", "--timeout", "0.5", "--config", &hung]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(run.stderr.contains("[timeout]"), "{run:#?}");
    assert!(run.stderr.contains("`timeout`"), "{run:#?}");

    // `servers --json` carries the same hint.
    let rows = env.json(&[
        "servers",
        "--config",
        &hung,
        "--timeout",
        "0.5",
        "--allow-failures",
    ]);
    let row = &rows.as_array().unwrap()[0];
    assert!(
        row["error"]["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("--timeout")),
        "{rows:#}"
    );

    // A value that is no duration is refused before anything starts.
    let run = env.run(&["tools", "--timeout", "soon"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("not a number of seconds"), "{run:#?}");

    // `add --timeout` stores the server's `timeout`, in milliseconds.
    let run = env.run(&["add", "slow", "--timeout", "30", "--", "slow-server"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let store: Value = serde_json::from_slice(&std::fs::read(env.store()).unwrap()).unwrap();
    let saved = store["servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["id"] == "slow"))
        .unwrap_or_else(|| panic!("slow is not stored: {store:#}"));
    assert_eq!(saved["timeout"], 30_000, "{store:#}");
}

/// A stdio server in Python that lists one tool with arrays, unions,
/// constants and nested objects, and answers nothing else.
const SCHEMA_SERVER: &str = include_str!("support/shapes_server.py");

#[test]
fn signatures_show_enums_items_unions_and_constants() {
    let env = Env::new();
    let script = env.work_dir().join("shapes.py");
    std::fs::write(&script, SCHEMA_SERVER).unwrap();
    let stdio = format!("python3 {}", script.display());
    let rows = env.json(&["tools", "--stdio", &stdio, "--no-host-configs"]);
    let signature = rows[0]["signature"].as_str().unwrap();
    assert_eq!(
        signature,
        "store(entities: {name, entityType}[], tags?: string[], start_timestamp?: string | null, \
         mode?: \"fast\", level?: integer | null, \
         color?: \"red\" | \"green\" | \"blue\" | \"cyan\" | …)"
    );

    let config = everything(&env);
    let rows = env.json(&["--config", &config, "tools", "ev", "--no-host-configs"]);
    let annotated = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == "get-annotated-message")
        .unwrap_or_else(|| panic!("no get-annotated-message: {rows:#}"));
    assert_eq!(
        annotated["signature"],
        "get-annotated-message(messageType: \"error\" | \"success\" | \"debug\", includeImage?: boolean)"
    );
}

#[test]
fn one_tool_by_server_and_name_or_dotted_with_its_schema() {
    let env = Env::new();
    let config = everything(&env);
    for target in [&["ev", "get-sum"][..], &["ev.get-sum"][..]] {
        let mut args = vec!["--config", config.as_str(), "--no-host-configs", "tools"];
        args.extend_from_slice(target);
        args.push("--schema");
        let run = env.run(&args);
        assert_eq!(run.code, 0, "{run:#?}");
        assert!(
            run.stdout
                .starts_with("ev.get-sum(a: number, b: number)\n{"),
            "{run:#?}"
        );
        assert_eq!(run.stdout.matches("\"properties\"").count(), 1, "{run:#?}");
    }
    let run = env.run(&[
        "--config",
        &config,
        "--no-host-configs",
        "tools",
        "ev",
        "get-summ",
    ]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("did you mean `get-sum`?"), "{run:#?}");

    // The hint of a bad argument names that very command.
    let run = env.run(&[
        "--config",
        &config,
        "--no-host-configs",
        "call",
        "ev",
        "get-structured-content",
        "location=Paris",
    ]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains(
            "hint: `mcpctl tools ev get-structured-content --schema` shows its input schema"
        ),
        "{run:#?}"
    );
}

#[test]
fn an_adhoc_server_is_calls_default_and_its_errors_speak_of_the_flag() {
    let env = Env::new();
    let run = env.run(&["tools", "--stdio", "nonexistent-mcp-server --flag"]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(
        run.stderr
            .contains("  stdio: the command `nonexistent-mcp-server` was not found"),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("check the `--stdio` you gave"),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("transport.command"), "{run:#?}");
    assert!(
        !run.stderr.contains("`mcpctl servers` says why"),
        "{run:#?}"
    );

    let stdio = everything_command();
    let run = env.run(&["call", "--stdio", &stdio, "get-sum", "a=1", "b=2"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "The sum of 1 and 2 is 3.\n");
    // Named, it works the same.
    let run = env.run(&["call", "--stdio", &stdio, "stdio.get-sum", "a=1", "b=3"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "The sum of 1 and 3 is 4.\n");
    // Errors name the server by its flag, not by the id it was given.
    let run = env.run(&["call", "--stdio", &stdio, "get-summ"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr
            .contains("the `--stdio` server has no tool `get-summ`"),
        "{run:#?}"
    );
    assert!(run.stderr.contains("did you mean `get-sum`?"), "{run:#?}");
    // A hint names the flags that reach the server again.
    let run = env.run(&["call", "--stdio", &stdio, "get-sum", "a=x", "b=2"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains(&format!(
            "`mcpctl tools --stdio '{stdio}' stdio get-sum --schema`"
        )),
        "{run:#?}"
    );
}

#[test]
fn structured_content_the_text_repeats_is_printed_once() {
    let env = Env::new();
    let config = everything(&env);
    let run = env.run(&[
        "--config",
        &config,
        "--no-host-configs",
        "call",
        "ev",
        "get-structured-content",
        "location=Chicago",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stdout.contains("structured content:"), "{run:#?}");
    let printed: Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert!(printed["temperature"].is_number(), "{run:#?}");
}

#[test]
fn save_writes_images_and_never_replaces_without_force() {
    let env = Env::new();
    let config = everything(&env);
    let dir = env.work_dir().join("out");
    let dir_text = dir.display().to_string();
    let args = [
        "--config",
        &config,
        "--no-host-configs",
        "call",
        "ev",
        "get-tiny-image",
        "--save",
        &dir_text,
    ];
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    let file = dir.join("get-tiny-image-1.png");
    assert!(
        run.stdout.contains(&format!(
            "[image: image/png, 3.9 KiB, saved to {}]",
            file.display()
        )),
        "{run:#?}"
    );
    let bytes = std::fs::read(&file).expect("the saved image");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");

    std::fs::write(&file, b"mine").unwrap();
    let run = env.run(&args);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains("exists; it was not replaced"),
        "{run:#?}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
    let mut forced = args.to_vec();
    forced.push("--force");
    let run = env.run(&forced);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(std::fs::read(&file).unwrap().starts_with(b"\x89PNG"));

    // Without --save the note says how.
    let run = env.run(&args[..6]);
    assert!(run.stderr.contains("--save DIR writes"), "{run:#?}");
}

#[test]
fn a_text_blob_reads_as_text_on_a_terminal() {
    let env = Env::new();
    let config = everything(&env);
    let command = env.command(&[
        "--config",
        &config,
        "--no-host-configs",
        "read",
        "ev",
        "demo://resource/dynamic/blob/1",
    ]);
    let session = support::pty::Session::spawn_all_on_terminal(command);
    session.expect("Resource 1: This is a base64 blob");
    let (code, _, shown) = session.finish();
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("is binary"), "{shown}");
}

#[test]
fn version_and_help_say_what_a_person_needs() {
    let env = Env::new();
    let run = env.run(&["--version"]);
    assert_eq!(
        run.stdout,
        format!("mcpctl {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_ne!(env!("CARGO_PKG_VERSION"), "0.0.0");

    let run = env.run(&["complete", "--help"]);
    assert!(!run.stdout.contains("[default: \"\"]"), "{}", run.stdout);
    assert_eq!(run.stdout.matches("[default: nothing]").count(), 1);

    let top = env.run(&["--help"]);
    let commands: Vec<String> = top
        .stdout
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(commands.len() > 20, "{commands:?}");
    for command in &commands {
        let help = env.run(&[command, "--help"]);
        assert_eq!(help.code, 0, "{help:#?}");
        let example = help
            .stdout
            .lines()
            .skip_while(|line| *line != "Example:")
            .nth(1)
            .unwrap_or_else(|| panic!("`{command} --help` has no example:\n{}", help.stdout));
        assert!(
            example
                .trim_start()
                .starts_with(&format!("mcpctl {command}")),
            "`{command} --help`: {example}"
        );
    }
}

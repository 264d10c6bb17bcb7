//! `mcpctl resources`, `read`, `prompts`, `prompt` and `complete` against real servers: the built-in demo server and the workspace's fixture server over stdio.

mod support;

use std::process::Stdio;

use serde_json::json;
use support::Env;
use support::pty::Session;

/// The PNG file signature.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";

/// A config with the fixture server over stdio, id `fixture`.
fn fixture_config(env: &Env) -> String {
    let path = env.write_json(
        "fixture.json",
        &json!({"mcpServers": {"fixture": {"command": support::fixture_server()}}}),
    );
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_fresh_machine_lists_and_reads_the_demo_resources() {
    let env = Env::new();

    let listed = env.run(&["resources"]);
    assert_eq!(listed.code, 0, "{listed:#?}");
    let row = listed
        .stdout
        .lines()
        .find(|line| line.contains("demo://about"))
        .unwrap_or_else(|| panic!("demo://about is not listed: {}", listed.stdout));
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["demo", "demo://about", "about", "text/plain"]
    );
    assert!(
        listed.stdout.contains("demo://tiny-image.png"),
        "{listed:#?}"
    );

    let listing = env.json(&["resources", "demo"]);
    let rows = &listing["resources"];
    assert_eq!(rows[0]["server"], "demo");
    assert_eq!(rows[0]["uri"], "demo://about");
    assert_eq!(rows[0]["mime_type"], "text/plain");
    assert_eq!(rows[1]["mime_type"], "image/png");

    let read = env.run(&["read", "demo", "demo://about"]);
    assert_eq!(read.code, 0, "{read:#?}");
    assert!(
        read.stdout
            .starts_with("mcpctl's built-in demo server.\nIt runs on this machine"),
        "{read:#?}"
    );
    assert!(
        read.stdout
            .ends_with("Try: mcpctl call demo echo text=hello\n"),
        "{read:#?}"
    );

    let document = env.json(&["read", "demo", "demo://about"]);
    assert_eq!(document["contents"][0]["uri"], "demo://about");
    assert_eq!(document["contents"][0]["mimeType"], "text/plain");
}

#[test]
fn resource_templates_are_listed_read_and_completed() {
    let env = Env::new();

    let listed = env.run(&["resources", "demo"]);
    assert_eq!(listed.code, 0, "{listed:#?}");
    let row = listed
        .stdout
        .lines()
        .find(|line| line.contains("demo://greeting/{name}"))
        .unwrap_or_else(|| panic!("the template is not listed: {}", listed.stdout));
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["demo", "demo://greeting/{name}", "greeting", "text/plain"]
    );
    assert!(listed.stdout.contains("URI TEMPLATE"), "{listed:#?}");

    let listing = env.json(&["resources", "demo"]);
    assert_eq!(
        listing["templates"],
        json!([{
            "server": "demo", "uri_template": "demo://greeting/{name}", "name": "greeting",
            "title": "A greeting",
            "description": "A one-line greeting for `name` (completion suggests a few).",
            "mime_type": "text/plain"
        }])
    );

    let names = env.run(&["complete", "demo", "demo://greeting/{name}", "name", "A"]);
    assert_eq!(names.code, 0, "{names:#?}");
    assert_eq!(names.stdout, "Ada\nAlan\n");

    let read = env.run(&["read", "demo", "demo://greeting/Ada"]);
    assert_eq!(read.code, 0, "{read:#?}");
    assert_eq!(read.stdout, "Hello, Ada!\n");
}

#[test]
fn binary_contents_go_to_a_file_or_a_pipe_and_never_to_a_terminal() {
    let env = Env::new();

    let file = env.data_dir().join("tiny.png");
    let saved = env.run(&[
        "read",
        "demo",
        "demo://tiny-image.png",
        "--output",
        file.to_str().unwrap(),
    ]);
    assert_eq!(saved.code, 0, "{saved:#?}");
    assert_eq!(saved.stdout, "", "nothing on stdout with --output");
    let bytes = std::fs::read(&file).expect("the file was written");
    assert_eq!(bytes.len(), 488, "the decoded PNG, not its base64");
    assert!(bytes.starts_with(PNG));
    assert!(saved.stderr.contains("wrote 488 bytes"), "{saved:#?}");

    // Piped: the raw bytes, exactly.
    let piped = env
        .command(&["read", "demo", "demo://tiny-image.png"])
        .stdout(Stdio::piped())
        .output()
        .expect("mcpctl runs");
    assert_eq!(piped.status.code(), Some(0), "{piped:?}");
    assert_eq!(piped.stdout, bytes);

    // A terminal: refused, with what to do instead.
    let session =
        Session::spawn_all_on_terminal(env.command(&["read", "demo", "demo://tiny-image.png"]));
    let (code, _, screen) = session.finish();
    assert_eq!(code, 2, "{screen}");
    assert!(
        screen.contains("is binary (image/png); it is not written to a terminal"),
        "{screen}"
    );
    assert!(screen.contains("--output FILE"), "{screen}");
    assert!(
        !screen.as_bytes().windows(4).any(|w| w == b"\x89PNG"),
        "{screen}"
    );
}

#[test]
fn an_unknown_uri_is_the_servers_error_with_a_guess() {
    let env = Env::new();
    let run = env.run(&["read", "demo", "demo://abuot"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr
            .contains("server `demo` refused to read `demo://abuot`: resource not found (JSON-RPC error -32002)"),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("did you mean `demo://about`?"),
        "{run:#?}"
    );

    let run = env.run(&["--json", "read", "demo", "demo://abuot"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let error = support::parse_one_document(&run.stdout);
    assert_eq!(error["error"]["code"], "request_refused", "{error:#}");
    assert_eq!(error["error"]["server"], "demo", "{error:#}");

    let run = env.run(&["read", "dmeo", "demo://about"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("did you mean `demo`?"), "{run:#?}");
}

#[test]
fn the_demo_prompt_is_listed_checked_and_got() {
    let env = Env::new();

    let listed = env.run(&["prompts"]);
    assert_eq!(listed.code, 0, "{listed:#?}");
    let row = listed
        .stdout
        .lines()
        .find(|line| line.starts_with("demo "))
        .unwrap_or_else(|| panic!("no demo prompt: {}", listed.stdout));
    let cells: Vec<&str> = row.split_whitespace().take(3).collect();
    assert_eq!(cells, ["demo", "try_tool", "tool"], "{row}");
    assert!(
        row.contains("Asks the model to call one of the demo tools"),
        "{row}"
    );

    let rows = env.json(&["prompts", "demo"]);
    assert_eq!(rows[0]["name"], "try_tool");
    assert_eq!(
        rows[0]["arguments"],
        json!([{"name": "tool", "description": "The tool to try (echo, add, ...).", "required": true}])
    );

    let got = env.run(&["prompt", "demo", "try_tool", "tool=echo"]);
    assert_eq!(got.code, 0, "{got:#?}");
    assert_eq!(
        got.stdout,
        "# Try a demo tool\nuser:\nCall the demo server's `echo` tool once with arguments of \
         your choice, then explain in one sentence what it returned.\n"
    );

    let document = env.json(&["prompt", "demo", "try_tool", "tool=add"]);
    assert_eq!(document["messages"][0]["role"], "user");
    assert!(
        document["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("`add`"),
        "{document:#}"
    );
}

#[test]
fn prompt_names_and_arguments_are_checked_before_anything_is_sent() {
    let env = Env::new();

    let run = env.run(&["prompt", "demo", "try_tol", "tool=echo"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains("server `demo` has no prompt `try_tol`"),
        "{run:#?}"
    );
    assert!(run.stderr.contains("did you mean `try_tool`?"), "{run:#?}");

    let run = env.run(&["prompt", "demo", "try_tool"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr
            .contains("prompt `try_tool` needs `tool`; nothing was sent"),
        "{run:#?}"
    );

    let run = env.run(&["--json", "prompt", "demo", "try_tool", "tol=echo"]);
    assert_eq!(run.code, 2, "{run:#?}");
    let error = support::parse_one_document(&run.stdout);
    assert_eq!(error["error"]["code"], "invalid_arguments", "{error:#}");
    assert!(
        error["error"]["hint"]
            .as_str()
            .unwrap()
            .starts_with("did you mean `tool`?"),
        "{error:#}"
    );

    let run = env.run(&["prompt", "demo", "try_tool", "echo"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("`echo` is not KEY=VALUE"), "{run:#?}");

    // The server's own refusal: exit 1 with its words.
    let run = env.run(&["prompt", "demo", "try_tool", "tool=rm"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("`rm` is not a demo tool"), "{run:#?}");
}

#[test]
fn the_fixtures_resources_and_prompt_and_its_text_reach_the_terminal_escaped() {
    let env = Env::new();
    let config = fixture_config(&env);

    let listing = env.json(&["--config", &config, "resources", "fixture"]);
    assert_eq!(
        listing["resources"],
        json!([{
            "server": "fixture", "uri": "fixture://readme", "name": "readme",
            "title": "Fixture README", "description": "What this server is.",
            "mime_type": "text/plain", "size": null
        }])
    );
    let read = env.run(&["--config", &config, "read", "fixture", "fixture://readme"]);
    assert_eq!(read.code, 0, "{read:#?}");
    assert!(!read.stdout.is_empty(), "{read:#?}");

    // The fixture echoes the argument into its message: an escape sequence
    // in it is shown, never sent to the terminal.
    let got = env.run(&[
        "--config",
        &config,
        "prompt",
        "fixture",
        "greet",
        "name=\u{1b}[31mred\u{7}",
    ]);
    assert_eq!(got.code, 0, "{got:#?}");
    assert_eq!(
        got.stdout,
        "# Greets someone by name.\nuser:\nPlease greet \\x1b[31mred\\x07 warmly.\n"
    );
    assert!(!got.stdout.contains('\u{1b}'), "{got:#?}");
}

#[test]
fn completion_lists_the_servers_values_where_it_offers_them() {
    let env = Env::new();

    let run = env.run(&["complete", "demo", "try_tool", "tool", "e"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "echo\n");

    let all = env.json(&["complete", "demo", "try_tool", "tool"]);
    assert_eq!(
        all,
        json!({"values": ["echo", "add", "current_time", "word_count", "tiny_image"],
               "total": 5, "has_more": false})
    );

    let run = env.run(&["complete", "demo", "try_tool", "tol", "e"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("did you mean `tool`?"), "{run:#?}");

    // The fixture declares no `completions`: refused before it is sent.
    let config = fixture_config(&env);
    let run = env.run(&[
        "--json", "--config", &config, "complete", "fixture", "greet", "name", "A",
    ]);
    assert_eq!(run.code, 2, "{run:#?}");
    let error = support::parse_one_document(&run.stdout);
    assert_eq!(error["error"]["code"], "unsupported", "{error:#}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("completions"),
        "{error:#}"
    );
}

//! The embedded default: with no store, no project `.mcp.json` and no `--config`, mcpctl uses its own demo server.

mod support;

use serde_json::json;
use support::Env;

#[test]
fn a_fresh_machine_lists_and_calls_the_demo_tools() {
    let env = Env::new();

    // The README's first command.
    let tools = env.run(&["tools"]);
    assert_eq!(tools.code, 0, "{tools:#?}");
    for name in ["echo", "add", "current_time", "word_count", "tiny_image"] {
        let line = tools
            .stdout
            .lines()
            .find(|line| {
                // The tool column shows the signature, `echo(text: string)`.
                line.split_whitespace()
                    .nth(2)
                    .is_some_and(|tool| tool.starts_with(&format!("{name}(")))
            })
            .unwrap_or_else(|| panic!("{name} is not listed: {}", tools.stdout));
        assert!(line.starts_with(&format!("mcp_demo_{name} ")), "{line}");
        assert!(line.contains(" demo "), "{line}");
    }

    let echo = env.run(&["call", "demo", "echo", r#"{"text":"hi"}"#]);
    assert_eq!(echo.code, 0, "{echo:#?}");
    assert_eq!(echo.stdout, "hi\n");

    let listed = env.json(&["tools"]);
    let echo_tool = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "echo")
        .unwrap();
    assert_eq!(echo_tool["server"], "demo");
    assert_eq!(echo_tool["model_name"], "mcp_demo_echo");
    assert_eq!(
        echo_tool["description"],
        "Returns the given text unchanged."
    );
    assert_eq!(echo_tool["input_schema"]["required"], json!(["text"]));

    let servers = env.json(&["servers"]);
    assert_eq!(servers.as_array().unwrap().len(), 1, "{servers}");
    let demo = &servers[0];
    assert_eq!(demo["id"], "demo");
    assert_eq!(demo["status"], "ready");
    assert_eq!(demo["transport"], "stdio");
    assert_eq!(demo["tools"], 5);
    assert_eq!(demo["error"], json!(null));
    assert_eq!(demo["source"]["label"], "built-in");

    assert!(
        !env.store().exists(),
        "listing and calling never write the store"
    );
}

#[test]
fn results_are_printed_for_people_and_for_scripts() {
    let env = Env::new();
    let sum = env.json(&["call", "demo", "add", r#"{"a": 2, "b": 3}"#]);
    assert_eq!(
        sum,
        json!({
            "content": [{"type": "text", "text": "5"}],
            "structured_content": {"sum": 5},
            "is_error": false
        })
    );
    let human = env.run(&["call", "demo", "add", r#"{"a": 2, "b": 3}"#]);
    assert_eq!(human.code, 0);
    assert_eq!(human.stdout, "5\nstructured content:\n{\n  \"sum\": 5\n}\n");

    let image = env.run(&["call", "demo", "tiny_image"]);
    assert_eq!(image.code, 0, "{image:#?}");
    assert_eq!(
        image.stdout,
        "[image: image/png, 488 bytes]\na 16x16 PNG colour gradient\n"
    );
    let image = env.json(&["call", "demo", "tiny_image", "{}"]);
    assert_eq!(image["content"][0]["type"], "image");
    assert_eq!(image["content"][0]["mimeType"], "image/png");
    assert!(
        image["content"][0]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );

    let time = env.run(&["call", "demo", "current_time", r#"{"timezone": "+02:00"}"#]);
    assert_eq!(time.code, 0);
    assert!(time.stdout.trim_end().ends_with("+02:00"), "{time:#?}");
}

#[test]
fn any_configuration_replaces_the_default() {
    // A store file, even one without servers.
    let env = Env::new();
    std::fs::write(env.store(), r#"{"version": 1, "servers": []}"#).unwrap();
    assert_eq!(env.json(&["servers"]), json!([]));
    let run = env.run(&["call", "demo", "echo", r#"{"text":"hi"}"#]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("no server with id `demo`"), "{run:#?}");

    // A project file.
    let env = Env::new();
    std::fs::write(
        env.work_dir().join(".mcp.json"),
        json!({"mcpServers": {"mine": {"command": support::MCPCTL, "args": ["demo-server"]}}})
            .to_string(),
    )
    .unwrap();
    let servers = env.json(&["servers"]);
    assert_eq!(servers.as_array().unwrap().len(), 1, "{servers}");
    assert_eq!(servers[0]["id"], "mine");
    assert_eq!(servers[0]["source"]["level"], "project");
    // ... unless it is ignored.
    let servers = env.json(&["--no-project", "servers"]);
    assert_eq!(servers[0]["id"], "demo");
    // --project points elsewhere.
    let elsewhere = tempfile::tempdir().unwrap();
    let servers = env.json(&["--project", elsewhere.path().to_str().unwrap(), "servers"]);
    assert_eq!(servers[0]["id"], "demo");

    // A --config file.
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"other": {"command": support::MCPCTL, "args": ["demo-server"]}}}),
    );
    let servers = env.json(&["--config", config.to_str().unwrap(), "servers"]);
    assert_eq!(servers.as_array().unwrap().len(), 1, "{servers}");
    assert_eq!(servers[0]["id"], "other");
    assert_eq!(servers[0]["source"]["label"], "--config");
    assert_eq!(servers[0]["source"]["path"], config.to_str().unwrap());

    let missing = env.run(&["--config", "/nonexistent/mcp.json", "servers"]);
    assert_eq!(missing.code, 2, "{missing:#?}");
    assert!(
        missing.stderr.contains("/nonexistent/mcp.json"),
        "{missing:#?}"
    );
}

//! `servers`, `tools`, `retry` and `watch` against real servers: the demo server, broken ones, server-everything (stdio and Streamable HTTP) and FastMCP.

mod support;

use serde_json::{Value, json};
use support::Env;

/// A recognisable secret that must never be printed.
const SECRET: &str = "SECRET-c0ffee-5a5a-never-print";

fn demo_server() -> Value {
    json!({"command": support::MCPCTL, "args": ["demo-server"]})
}

fn by_id<'a>(rows: &'a Value, id: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {rows:#}"))
}

#[test]
fn a_broken_server_beside_working_ones() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "good": demo_server(),
            "exits": {"command": "false"},
            "missing": {"command": "/nonexistent/mcp-server"},
            "off": {"command": "srv", "disabled": true}
        }}),
    );
    let broken_file = env.root_file("broken.json", "{\"mcpServers\": ");
    let config = config.to_str().unwrap();
    let broken_file = broken_file.to_str().unwrap();

    let rows = env.json(&[
        "--config",
        config,
        "--config",
        broken_file,
        "servers",
        "--allow-failures",
    ]);
    assert_eq!(rows.as_array().unwrap().len(), 5, "{rows:#}");
    let good = by_id(&rows, "good");
    assert_eq!(good["status"], "ready");
    assert_eq!(good["tools"], 5);
    assert_eq!(good["error"], json!(null));
    let exits = by_id(&rows, "exits");
    assert_eq!(exits["status"], "error");
    assert_eq!(exits["transport"], "stdio");
    assert_eq!(exits["tools"], 0);
    assert_eq!(exits["error"]["code"], "closed");
    let missing = by_id(&rows, "missing");
    assert_eq!(missing["error"]["code"], "missing_command");
    assert_eq!(missing["error"]["config_key"], "transport.command");
    // The whole program path: `/nonexistent/mcp-server`, not `mcp-server`.
    let message = missing["error"]["message"].as_str().unwrap();
    assert!(message.contains("`/nonexistent/mcp-server`"), "{message}");
    assert_eq!(by_id(&rows, "off")["status"], "disabled");
    let file_error = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"].is_null())
        .expect("the unreadable file is a row");
    assert_eq!(file_error["status"], "error");
    assert_eq!(file_error["source"]["path"], broken_file);
    assert!(
        file_error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("none of its servers")
    );

    // For people: a table, then what to change; still exit 0.
    let run = env.run(&[
        "--config",
        config,
        "--config",
        broken_file,
        "servers",
        "--allow-failures",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.starts_with("ID "), "{}", run.stdout);
    assert!(run.stdout.contains("\nproblems:\n"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("[missing_command]; change `transport.command` in "),
        "{}",
        run.stdout
    );

    // `tools` lists the working server and names the others on stderr.
    // A configured server failed: exit 3 for scripts, the listing all the same.
    let tools = env.run(&["--json", "--config", config, "tools"]);
    assert_eq!(tools.code, 3, "{tools:#?}");
    assert!(tools.stderr.contains("--allow-failures"), "{tools:#?}");
    let tools = env.run(&["--json", "--config", config, "tools", "--allow-failures"]);
    assert_eq!(tools.code, 0, "{tools:#?}");
    let tools = support::parse_one_document(&tools.stdout);
    assert_eq!(tools.as_array().unwrap().len(), 5);
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["server"] == "good")
    );
    let run = env.run(&["--config", config, "tools"]);
    assert!(
        run.stderr
            .contains("2 servers are not ready and their tools are not listed:\n"),
        "{run:#?}"
    );
    // Each server left out says why on a line of its own.
    assert!(run.stderr.contains("\n  exits: "), "{run:#?}");
    assert!(run.stderr.contains("[closed]"), "{run:#?}");

    // `tools SERVER` of a broken server is an error with that server's status.
    let run = env.run(&["--config", config, "tools", "exits"]);
    assert_eq!(run.code, 3, "{run:#?}");
    let run = env.run(&["--config", config, "tools", "missing"]);
    assert_eq!(run.code, 2, "{run:#?}");
    let run = env.run(&["--config", config, "tools", "off"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("mcpctl enable off"), "{run:#?}");
}

#[test]
fn independent_servers_over_stdio_and_streamable_http() {
    let env = Env::new();
    let everything = support::server_everything();
    let python = support::venv_python();
    let http = support::everything_http();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "everything": {"command": "node", "args": [everything, "stdio"],
                           "env": {"GZIP_ALLOWED_DOMAINS": "localhost"}},
            "everything-http": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", http.port)},
            "fastmcp": {"command": python, "args": [support::fastmcp_script(), "stdio"]},
            "broken": {"command": "false"}
        }}),
    );
    let config = config.to_str().unwrap();

    let rows = env.json(&["--config", config, "servers", "--allow-failures"]);
    for id in ["everything", "everything-http", "fastmcp"] {
        let row = by_id(&rows, id);
        assert_eq!(row["status"], "ready", "{row:#}");
        assert!(row["tools"].as_u64().unwrap() > 0, "{row:#}");
    }
    assert_eq!(by_id(&rows, "everything-http")["transport"], "http");
    assert_eq!(by_id(&rows, "broken")["status"], "error");

    let tools = env.json(&["--config", config, "tools", "--allow-failures"]);
    let find = |server: &str, name: &str| -> Value {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["server"] == server && t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{server}/{name} is not listed"))
    };
    assert_eq!(
        find("everything", "echo")["model_name"],
        "mcp_everything_echo"
    );
    assert_eq!(
        find("everything-http", "echo")["model_name"],
        "mcp_everything-http_echo"
    );
    let add = find("fastmcp", "add");
    assert_eq!(add["model_name"], "mcp_fastmcp_add");
    assert_eq!(add["description"], "Add two integers.");
    assert_eq!(add["input_schema"]["type"], "object");

    let echo = env.json(&[
        "--config",
        config,
        "call",
        "everything",
        "echo",
        r#"{"message":"interop"}"#,
    ]);
    assert!(
        echo["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("interop"),
        "{echo:#}"
    );
    let sum = env.json(&[
        "--config",
        config,
        "call",
        "everything-http",
        "get-sum",
        r#"{"a":19,"b":23}"#,
    ]);
    assert!(
        sum["content"][0]["text"].as_str().unwrap().contains("42"),
        "{sum:#}"
    );
    let add = env.run(&[
        "--config",
        config,
        "call",
        "fastmcp",
        "add",
        r#"{"a":20,"b":22}"#,
    ]);
    assert_eq!(add.code, 0, "{add:#?}");
    assert!(add.stdout.starts_with("42\n"), "{add:#?}");
    // FastMCP checks its own arguments too, but ours are checked first.
    let bad = env.run(&[
        "--config",
        config,
        "call",
        "fastmcp",
        "add",
        r#"{"a":"x","b":1}"#,
    ]);
    assert_eq!(bad.code, 2, "{bad:#?}");
}

#[test]
fn secrets_are_never_printed() {
    let env = Env::new();
    let http = support::everything_http();
    let url = format!("http://127.0.0.1:{}/mcp", http.port);
    env.json(&[
        "add",
        "remote",
        "--url",
        &url,
        "--header",
        &format!("X-Api-Key={SECRET}"),
    ]);
    env.json(&[
        "add",
        "local",
        "--env",
        &format!("TOKEN={SECRET}"),
        "--",
        support::MCPCTL,
        "demo-server",
    ]);
    env.json(&[
        "add",
        "broken",
        "--env",
        &format!("TOKEN={SECRET}"),
        "--",
        "false",
    ]);
    for args in [
        vec!["servers", "--allow-failures"],
        vec!["--json", "servers", "--allow-failures"],
        vec!["-vvv", "servers", "--allow-failures"],
        vec!["tools"],
        vec!["-vvv", "--json", "tools"],
        vec!["watch"],
        vec!["--json", "watch"],
        vec!["-vvv", "retry", "broken"],
        vec!["-vv", "call", "local", "echo", r#"{"text":"hi"}"#],
    ] {
        let run = env.run(&args);
        assert!(
            !run.stdout.contains(SECRET) && !run.stderr.contains(SECRET),
            "{args:?} printed the secret: {run:#?}"
        );
    }
    let rows = env.json(&["servers", "--allow-failures"]);
    assert_eq!(by_id(&rows, "remote")["status"], "ready", "{rows:#}");
    assert_eq!(by_id(&rows, "local")["status"], "ready", "{rows:#}");
}

#[test]
fn retry_connects_afresh_and_reports_the_status() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "good": demo_server(),
            "exits": {"command": "false"},
            "missing": {"command": "/nonexistent/mcp-server"}
        }}),
    );
    let config = config.to_str().unwrap();
    let good = env.json(&["--config", config, "retry", "good"]);
    assert_eq!(good["id"], "good");
    assert_eq!(good["status"], "ready");

    // A connection failure is tried once more, then reported (exit 3).
    let run = env.run(&["--config", config, "retry", "exits"]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(run.stderr.contains("trying once more"), "{run:#?}");
    assert!(run.stdout.contains("exits"), "{run:#?}");

    // A configuration error is not retried: only an edit fixes it (exit 2).
    let run = env.run(&["--json", "--config", config, "retry", "missing"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(!run.stderr.contains("trying once more"), "{run:#?}");
    let row = support::parse_one_document(&run.stdout);
    assert_eq!(row["error"]["code"], "missing_command");

    let run = env.run(&["--config", config, "retry", "nope"]);
    assert_eq!(run.code, 2, "{run:#?}");
}

#[test]
fn watch_logs_one_line_per_change_when_not_on_a_terminal() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"good": demo_server(), "exits": {"command": "false"}}}),
    );
    let config = config.to_str().unwrap();
    let run = env.run(&["--config", config, "watch"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let log: Vec<&str> = run.stdout.lines().take_while(|l| !l.is_empty()).collect();
    assert!(
        log.iter().any(|l| l.ends_with("good ready (5 tools)")),
        "{}",
        run.stdout
    );
    assert!(
        log.iter()
            .any(|l| l.contains(" exits error ") && l.ends_with("[closed]")),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains('\x1b'),
        "no escape codes in a log: {:?}",
        run.stdout
    );
    // Then the final table.
    assert!(run.stdout.contains("\nID "), "{}", run.stdout);

    let document = env.json(&["--config", config, "watch"]);
    let events = document["events"].as_array().unwrap();
    let good: Vec<&Value> = events.iter().filter(|e| e["id"] == "good").collect();
    assert_eq!(good.last().unwrap()["status"], "ready", "{events:#?}");
    assert!(
        good.windows(2)
            .all(|w| w[0]["t_ms"].as_u64() <= w[1]["t_ms"].as_u64())
    );
    assert_eq!(
        by_id(&document["servers"], "exits")["error"]["code"],
        "closed"
    );
}

#[test]
fn watch_on_a_terminal_redraws_a_line_per_server() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"good": demo_server(), "exits": {"command": "false"}}}),
    );
    let mut command = env.command(&["--config", config.to_str().unwrap(), "watch"]);
    command.env_remove("NO_COLOR");
    let session = support::pty::Session::spawn_all_on_terminal(command);
    session.expect("5 tools");
    let (code, _, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("\x1b[2K"),
        "lines are redrawn in place: {screen:?}"
    );
    assert!(screen.contains("✓"), "{screen:?}");
    assert!(screen.contains("✗"), "{screen:?}");
    assert!(
        screen.contains("\x1b[32m"),
        "colour on a terminal: {screen:?}"
    );
}

//! What a person new to mcpctl types first, run as they would: flags anywhere, `--timeout`, readable signatures, one tool's schema, ad-hoc servers, results printed once, saving binary contents, `--version` and `--help`; and the smaller things: a task-only tool noted once, `watch` quiet about a tool list sent again unchanged, one form of prompt roles, `add` warning about a missing command, one exit status per cause, an HTTP error page's message.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

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
    // A command to change: the same status as `call` gives it.
    assert_eq!(run.code, 2, "{run:#?}");
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

#[test]
fn a_task_only_tool_is_marked_in_the_listing_and_explained_when_asked_for() {
    let env = Env::new();
    let config = everything(&env);
    let base = ["--config", config.as_str(), "--no-host-configs", "tools"];
    // Listed again and again, it repeats no note on stderr: the table says it.
    for _ in 0..2 {
        let run = env.run(&base);
        assert_eq!(run.code, 0, "{run:#?}");
        assert!(!run.stderr.contains("not exposed"), "{run:#?}");
        let row = run
            .stdout
            .lines()
            .find(|line| line.contains("simulate-research-query("))
            .unwrap_or_else(|| panic!("no simulate-research-query row: {run:#?}"));
        assert!(row.starts_with("(not exposed) "), "{row}");
        assert!(
            run.stdout
                .lines()
                .any(|line| line.starts_with("mcp_ev_get-sum ")),
            "{run:#?}"
        );
    }
    // --json says why, per tool.
    let mut args = vec!["--json"];
    args.extend_from_slice(&base);
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.is_empty(), "{run:#?}");
    let rows = support::parse_one_document(&run.stdout);
    for row in rows.as_array().unwrap() {
        if row["name"] == "simulate-research-query" {
            assert_eq!(row["model_name"], Value::Null, "{row:#}");
            assert_eq!(
                row["not_exposed"],
                "the tool can only run as a task, which this client does not do",
                "{row:#}"
            );
        } else {
            assert_eq!(row["not_exposed"], Value::Null, "{row:#}");
            assert!(row["model_name"].is_string(), "{row:#}");
        }
    }
    // Asked for that one tool, the note says why, once.
    let mut args = base.to_vec();
    args.extend(["ev", "simulate-research-query"]);
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stderr,
        "mcpctl: note: tool \"simulate-research-query\" of server \"ev\" is not exposed: \
         the tool can only run as a task, which this client does not do; a model cannot call it\n"
    );
}

/// A stdio server in Python that says its tool list changed on SIGUSR1
/// and lists the very same tool again.
const SAME_LIST_SERVER: &str = include_str!("support/same_list_server.py");

/// Kills a process the test started if the test fails before it ended.
struct KillOnDrop(Option<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(Pid::from_raw) {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
}

#[test]
fn watch_follow_prints_no_change_for_a_tool_list_sent_again_unchanged() {
    let env = Env::new();
    let script = env.work_dir().join("same_list.py");
    std::fs::write(&script, SAME_LIST_SERVER).unwrap();
    let pid_file = env.work_dir().join("same_list.pid");
    let stdio = format!("python3 {} {}", script.display(), pid_file.display());
    let mut child = env
        .command(&["--no-host-configs", "watch", "--follow", "--stdio", &stdio])
        .spawn()
        .expect("mcpctl starts");
    let mut guard = KillOnDrop(Some(child.id() as i32));
    let watchdog = support::Watchdog::start(&child, "mcpctl watch --follow".to_owned());
    let stderr = support::read_all(child.stderr.take().expect("piped stderr"));
    let lines = support::lines_of(child.stdout.take().expect("piped stdout"));
    let mut seen = Vec::new();
    let mut expect = |wanted: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    seen.push(line.clone());
                    if line.ends_with(wanted) {
                        return;
                    }
                }
                Err(error) => panic!("no line ending `{wanted}` ({error:?}); saw {seen:#?}"),
            }
        }
    };
    expect(" stdio ready (1 tools)");
    // The server wrote its pid before it answered anything.
    let server: i32 = std::fs::read_to_string(&pid_file)
        .expect("the server's pid file")
        .trim()
        .parse()
        .expect("a pid");
    let server = Pid::from_raw(server).expect("a pid");
    kill_process(server, Signal::USR1).expect("the server is signalled");
    // The list is fetched again; once the server is ready again, any
    // change would have been printed before.
    expect(" stdio refreshing");
    expect(" stdio ready (1 tools)");
    kill_process(
        Pid::from_raw(child.id() as i32).expect("a pid"),
        Signal::INT,
    )
    .expect("mcpctl is interrupted");
    let status = child.wait().expect("mcpctl ends");
    guard.0 = None;
    watchdog.stop();
    let stderr = stderr.join().expect("the stderr reader");
    seen.extend(lines.iter());
    assert_eq!(status.code(), Some(130), "{seen:#?} {stderr}");
    assert!(
        !seen.iter().any(|line| line.contains("tools changed")),
        "{seen:#?}"
    );
}

#[test]
fn prompt_roles_print_in_one_form_whatever_the_arguments() {
    let env = Env::new();
    let config = everything(&env);
    let cases: [&[&str]; 4] = [
        &["simple-prompt"],
        &["args-prompt", "city=Paris"],
        &["args-prompt", "city=Paris", "state=Texas"],
        &["resource-prompt", "resourceType=Text", "resourceId=1"],
    ];
    for case in cases {
        let mut args = vec![
            "--config",
            config.as_str(),
            "--no-host-configs",
            "prompt",
            "ev",
        ];
        args.extend_from_slice(case);
        let run = env.run(&args);
        assert_eq!(run.code, 0, "{run:#?}");
        assert!(run.stdout.starts_with("user:\n"), "{case:?}: {run:#?}");
        assert!(!run.stdout.contains("User:"), "{case:?}: {run:#?}");
    }
    let run = env.run(&["prompt", "demo", "try_tool", "tool=echo"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("\nuser:\n"), "{run:#?}");
}

#[test]
fn a_missing_command_is_added_with_a_warning_and_exits_2_from_every_command() {
    let env = Env::new();
    let run = env.run(&["add", "bad", "--", "nonexistent-mcp-command", "--flag"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout.starts_with("added stdio server `bad` to "),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains(
            "mcpctl: warning: the command `nonexistent-mcp-command` was not found: searched the \
             directories in PATH [missing_command]; `bad` is saved all the same"
        ),
        "{run:#?}"
    );
    let store: Value = serde_json::from_slice(&std::fs::read(env.store()).unwrap()).unwrap();
    assert!(
        store.to_string().contains("nonexistent-mcp-command"),
        "{store:#}"
    );
    // A command that is there gets no warning.
    let run = env.run(&["add", "there", "--", "sh", "-c", "exit 0"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.is_empty(), "{run:#?}");
    assert_eq!(env.run(&["remove", "there"]).code, 0);

    // The same cause, the same status, whichever command meets it.
    let commands: [&[&str]; 7] = [
        &["call", "bad", "echo"],
        &["tools", "bad"],
        &["tools"],
        &["servers"],
        &["prompts"],
        &["resources"],
        &["prompts", "bad"],
    ];
    for command in commands {
        for json in [false, true] {
            let mut args = vec!["--no-host-configs"];
            if json {
                args.push("--json");
            }
            args.extend_from_slice(command);
            let run = env.run(&args);
            assert_eq!(run.code, 2, "{args:?}: {run:#?}");
            let said = format!("{}{}", run.stdout, run.stderr);
            assert!(said.contains("missing_command"), "{args:?}: {run:#?}");
        }
    }
    let run = env.run(&["--no-host-configs", "servers"]);
    assert!(
        run.stderr
            .contains("1 configured server failed (exit 2; --allow-failures exits 0)"),
        "{run:#?}"
    );
    assert_eq!(
        env.run(&["--no-host-configs", "servers", "--allow-failures"])
            .code,
        0
    );

    // Beside a server whose connection fails, the listing exits 3, as a
    // call of that server does.
    let exits = env.write_json(
        "exits.json",
        &json!({"mcpServers": {"exits": {"command": "false"}}}),
    );
    let exits = exits.display().to_string();
    let run = env.run(&["--no-host-configs", "--config", &exits, "servers"]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(
        run.stderr
            .contains("2 configured servers failed (exit 3; --allow-failures exits 0)"),
        "{run:#?}"
    );
    let run = env.run(&[
        "--no-host-configs",
        "--config",
        &exits,
        "call",
        "exits",
        "echo",
    ]);
    assert_eq!(run.code, 3, "{run:#?}");
}

#[test]
fn an_http_501_page_shows_its_message_escaped_on_one_bounded_line() {
    let env = Env::new();
    let port = support::free_port();
    let root = env.work_dir().join("www");
    std::fs::create_dir(&root).unwrap();
    // Python's own HTTP server answers a POST with 501 and an HTML page.
    let mut python = Command::new("python3");
    python
        .args([
            "-u",
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .arg("--directory")
        .arg(&root);
    let _server = support::start_http_server(python, port);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let said = "the server answered HTTP 501: Error response: Error code: 501 \
                Message: Unsupported method ('POST'). Error code explanation: 501 - Server \
                does not support this operation. (an HTML page) [http_status]";
    let run = env.run(&["--no-host-configs", "call", "--url", &url, "url", "echo"]);
    assert_eq!(run.code, 3, "{run:#?}");
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(first.ends_with(said), "{run:#?}");
    assert!(first.len() < 400, "{run:#?}");
    assert!(!run.stderr.contains('<'), "{run:#?}");
    assert!(!run.stderr.contains("\\n"), "{run:#?}");
    // `servers` says the same under the table.
    let run = env.run(&["--no-host-configs", "servers", "--url", &url]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(run.stdout.contains(&format!("  url: {said}; ")), "{run:#?}");
}

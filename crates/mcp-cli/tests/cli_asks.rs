//! Servers that ask back and talk back, as a person meets them: server-everything's elicitation and sampling answered on a real pseudo-terminal, declined at once without one; roots from `--root`; a malformed form; `logs`, `read --follow` and `watch --follow --json` against a Python server.

mod support;

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use serde_json::{Value, json};
use support::Env;
use support::pty::Session;

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

/// A `--config` file with `tests/interop/asking_server.py` as `ask`.
fn asking(env: &Env) -> String {
    let script = support::repo_root().join("tests/interop/asking_server.py");
    env.write_json(
        "ask.json",
        &json!({"mcpServers": {"ask": {"command": support::venv_python(), "args": [script]}}}),
    )
    .display()
    .to_string()
}

fn on_terminal(env: &Env, config: &str, args: &[&str]) -> Session {
    let mut all = vec!["--no-host-configs", "--config", config];
    all.extend_from_slice(args);
    Session::spawn(env.command(&all))
}

#[test]
fn an_elicitation_is_answered_field_by_field_at_a_terminal() {
    let env = Env::new();
    let config = everything(&env);
    let mut session = on_terminal(
        &env,
        &config,
        &["call", "ev", "trigger-elicitation-request"],
    );
    session.expect("A server asks for input:");
    session.expect("Please provide inputs for the following fields:");
    session.expect("[f]ill in the form, [d]ecline or [c]ancel? ");
    session.send_line("f");
    session.expect("(Your full, legal name)");
    session.expect("String [text, required]: ");
    // Required: an empty answer asks again.
    session.send_line("");
    session.expect("this field is required");
    session.expect("String [text, required]: ");
    session.send_line("Ada Lovelace");
    session.expect("Boolean [y/n]: ");
    session.send_line("maybe");
    session.expect("type y or n");
    session.send_line("y");
    session.expect("String with default [text, default \"It was a dark and stormy night.\"]: ");
    session.send_line("");
    session.expect("String with email format [text, email]: ");
    session.send_line("not-an-address");
    session.expect("type a valid email");
    session.send_line("ada@example.org");
    session.expect("String with uri format [text, uri]: ");
    session.send_line("");
    session.expect("String with date format [text, date]: ");
    session.send_line("1815-12-10");
    session.expect("Integer [whole number, default 42]: ");
    session.send_line("500");
    session.expect("type a number from 1 up to 100");
    session.send_line("7");
    session.expect("Number in range 1-1000 [number, default 3.14]: ");
    session.send_line("");
    session.expect("    4) Chandler");
    session.expect("Untitled Single Select Enum [a number, default \"Monica\"]: ");
    session.send_line("3");
    session.expect(
        "Untitled Multiple Select Enum [numbers, separated by commas, default [\"Guitar\"]]: ",
    );
    session.send_line("1,2");
    session.expect("    3) Wonder Woman");
    session.expect("Titled Single Select Enum [a number, default \"hero-1\"]: ");
    session.send_line("Wonder Woman");
    session.expect("Titled Multiple Select Enum");
    session.send_line("");
    session.expect("    2) Dogs");
    session.expect("Legacy Titled Single Select Enum");
    session.send_line("2");
    session.expect("sent");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    println!("--- the terminal ---\n{screen}\n--- stdout ---\n{stdout}");
    for shown in [
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Email: ada@example.org",
        "- Birthdate: 1815-12-10",
        "- Favorite Integer: 7",
        "- Favorite Number: 3.14",
    ] {
        assert!(stdout.contains(shown), "{shown:?} in {stdout}");
    }
    let raw = stdout.split("Raw result: ").nth(1).expect("the raw result");
    let raw: Value = serde_json::from_str(raw.trim()).expect("the raw result is JSON");
    assert_eq!(raw["action"], "accept");
    let content = &raw["content"];
    assert_eq!(content["untitledSingleSelectEnum"], "Joey");
    assert_eq!(
        content["untitledMultipleSelectEnum"],
        json!(["Guitar", "Piano"])
    );
    assert_eq!(content["titledSingleSelectEnum"], "hero-3");
    assert_eq!(
        content["titledMultipleSelectEnum"],
        json!(["fish-1"]),
        "the default"
    );
    assert_eq!(content["legacyTitledEnum"], "pet-2");
    assert_eq!(content["firstLine"], "It was a dark and stormy night.");
    assert!(content.get("homepage").is_none(), "left out: {content}");
}

/// The `mcp` 2.x server of the 2026-07-28 era (`.venv-modern`), only that era.
fn modern(env: &Env) -> String {
    let python = support::repo_root().join(".venv-modern/bin/python");
    assert!(
        python.exists(),
        "the modern Python venv is missing at {}: run `python3 -m venv .venv-modern && \
         .venv-modern/bin/pip install -r tests/interop/requirements-modern.txt` (or bash .ci/run)",
        python.display()
    );
    let script = support::repo_root().join("tests/interop/modern_server.py");
    env.write_json(
        "modern.json",
        &json!({"mcpServers": {"modern": {"command": python, "args": [script, "stdio", "--modern-only"]}}}),
    )
    .display()
    .to_string()
}

#[test]
fn a_2026_input_round_asks_the_person_too() {
    let env = Env::new();
    let config = modern(&env);
    let mut session = on_terminal(&env, &config, &["call", "modern", "ask_name"]);
    session.expect("What is your name?");
    session.expect("[f]ill in the form, [d]ecline or [c]ancel? ");
    session.send_line("f");
    session.expect("Name [text, required]: ");
    session.send_line("Grace");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(stdout.starts_with("Hello, Grace!"), "{stdout}");
}

#[test]
fn an_elicitation_can_be_declined_or_cancelled() {
    for (answer, said) in [("d", "User declined"), ("c", "User cancelled")] {
        let env = Env::new();
        let config = everything(&env);
        let mut session = on_terminal(
            &env,
            &config,
            &["call", "ev", "trigger-elicitation-request"],
        );
        session.expect("[f]ill in the form, [d]ecline or [c]ancel? ");
        session.send_line(answer);
        let (code, stdout, screen) = session.finish();
        assert_eq!(code, 0, "{screen}");
        assert!(stdout.contains(said), "{answer}: {stdout}");
    }
}

#[test]
fn a_sampling_request_is_shown_and_the_person_types_the_reply() {
    let env = Env::new();
    let config = everything(&env);
    let mut session = on_terminal(
        &env,
        &config,
        &[
            "call",
            "ev",
            "trigger-sampling-request",
            "prompt=What is 2+2?",
            "maxTokens=20",
        ],
    );
    session.expect("A server asks for a model's reply (sampling/createMessage):");
    session.expect("system prompt:\r\n  You are a helpful test server.");
    session.expect("user:\r\n  Resource trigger-sampling-request context: What is 2+2?");
    session.expect("wants: at most 20 tokens; temperature 0.7");
    session.expect("mcpctl has no model: type the reply yourself");
    session.expect("> ");
    session.send_line("Four.");
    session.expect("| ");
    session.send_line("(typed by a person)");
    session.expect("| ");
    session.send_line("");
    session.expect("sent");
    let (code, stdout, screen) = session.finish();
    println!("--- the terminal ---\n{screen}\n--- stdout ---\n{stdout}");
    assert_eq!(code, 0, "{screen}");
    let result = stdout
        .split("LLM sampling result:")
        .nth(1)
        .expect("the result");
    let result: Value = serde_json::from_str(result.trim()).expect("JSON");
    assert_eq!(result["content"]["text"], "Four.\n(typed by a person)");
    assert_eq!(result["model"], "mcpctl-human");
    assert_eq!(result["role"], "assistant");
}

#[test]
fn a_sampling_request_can_be_declined() {
    let env = Env::new();
    let config = everything(&env);
    let mut session = on_terminal(
        &env,
        &config,
        &["call", "ev", "trigger-sampling-request", "prompt=hi"],
    );
    session.expect("> ");
    session.send_line("d");
    session.expect("declined");
    let (code, stdout, screen) = session.finish();
    assert_ne!(code, 0, "the tool fails: {stdout} {screen}");
    assert!(
        stdout.contains("the user declined the sampling request"),
        "the tool's error says so: {stdout}"
    );
}

#[test]
fn without_a_terminal_questions_are_declined_at_once_and_said_so() {
    let env = Env::new();
    let config = everything(&env);
    let common = ["--no-host-configs", "--config", config.as_str()];
    let started = Instant::now();
    let mut args = common.to_vec();
    args.extend(["call", "ev", "trigger-elicitation-request"]);
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("User declined"), "{run:#?}");
    assert!(
        run.stderr.contains(
            "declined a server's question (Please provide inputs for the following fields:): no terminal to ask on"
        ),
        "{run:#?}"
    );

    let mut args = common.to_vec();
    args.extend([
        "--json",
        "call",
        "ev",
        "trigger-sampling-request",
        "prompt=hi",
    ]);
    let run = env.run(&args);
    assert!(
        run.stderr
            .contains("declined a server's sampling request: mcpctl has no model"),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("the user declined the sampling request"),
        "{run:#?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "nothing waited for an answer"
    );
}

#[test]
fn roots_are_the_root_directories_else_the_current_one() {
    let env = Env::new();
    let config = everything(&env);
    let a = env.work_dir().join("alpha");
    let b = env.work_dir().join("beta dir");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let common = ["--no-host-configs", "--config", config.as_str()];
    let mut args = common.to_vec();
    let (a_arg, b_arg) = (a.display().to_string(), b.display().to_string());
    args.extend([
        "call",
        "ev",
        "get-roots-list",
        "--root",
        &a_arg,
        "--root",
        &b_arg,
    ]);
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    let canonical = |p: &std::path::Path| std::fs::canonicalize(p).unwrap().display().to_string();
    assert!(run.stdout.contains("(2 total)"), "{run:#?}");
    assert!(
        run.stdout
            .contains(&format!("URI: file://{}/", canonical(&a))),
        "{run:#?}"
    );
    assert!(
        run.stdout.contains(&format!(
            "URI: file://{}/",
            canonical(&b).replace(' ', "%20")
        )),
        "{run:#?}"
    );

    let mut args = common.to_vec();
    args.extend(["call", "ev", "get-roots-list"]);
    let run = env.run(&args);
    assert!(run.stdout.contains("(1 total)"), "{run:#?}");
    assert!(
        run.stdout
            .contains(&format!("URI: file://{}/", canonical(&env.work_dir()))),
        "the current directory: {run:#?}"
    );
}

#[test]
fn a_malformed_form_is_declined_with_a_warning_naming_the_fault() {
    let env = Env::new();
    let config = asking(&env);
    // At a terminal too: nothing is asked.
    let session = on_terminal(&env, &config, &["call", "ask", "bad_form"]);
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(stdout.trim(), "action: decline");
    assert!(
        screen.contains(
            "warning: declined a server's form (Where do you live?): its schema is malformed: \
             property `address`: type `object` is not a primitive"
        ),
        "{screen}"
    );
    assert!(!screen.contains("[f]ill in"), "{screen}");
}

#[test]
fn a_url_elicitation_shows_the_url_escaped_and_waits_for_enter() {
    let env = Env::new();
    let config = asking(&env);
    let mut session = on_terminal(&env, &config, &["call", "ask", "visit"]);
    session.expect("A server asks you to open a page:");
    session.expect("site: login.example.org");
    session.expect("Open it in your browser, then press Enter ([d]ecline, [c]ancel): ");
    session.send_line("");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(stdout.trim(), "action: accept");
    // mcpctl's own progress lines move the cursor; from the question on,
    // only escaped text.
    let asked = screen
        .split("A server asks you to open a page:")
        .nth(1)
        .expect("the question");
    assert!(
        !asked.contains('\u{1b}'),
        "no escape reaches the terminal: {asked:?}"
    );
    assert!(!asked.contains('\u{7}'), "{asked:?}");
    assert!(asked.contains(r"Sign in \x1b[31mhere\x1b[0m"), "{asked}");
    assert!(
        asked.contains(r"https://login.example.org/start?\x1b]0;owned\x07x=1"),
        "{asked}"
    );
}

#[test]
fn a_url_elicitation_the_server_says_is_done_stops_waiting_for_enter() {
    // The server sends `notifications/elicitation/complete` for the
    // elicitation while it waits for the answer; nobody presses Enter.
    let env = Env::new();
    let config = asking(&env);
    let session = on_terminal(&env, &config, &["call", "ask", "visit_done"]);
    session.expect("A server asks you to open a page:");
    session.expect("site: pay.example.org");
    session.expect("The server says this is done");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(stdout.trim(), "action: accept", "{screen}");
}

#[test]
fn logs_asks_for_the_level_and_prints_each_message_escaped() {
    let env = Env::new();
    let config = asking(&env);
    let common = ["--no-host-configs", "--config", config.as_str()];
    let mut args = common.to_vec();
    args.extend(["logs", "ask", "--level", "debug"]);
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stdout,
        "ask info [asking] tools listed\n\
         ask debug [asking] level set to debug\n\
         ask warning [asking] disk \\x1b[2Jalmost full\n",
        "before the level is set, the server's own; then debug and above: {run:#?}"
    );

    let mut args = common.to_vec();
    args.extend(["--json", "logs", "--level", "warning"]);
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:#?}");
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .filter(|l: &Value| l["data"] != "tools listed")
        .collect();
    assert_eq!(lines.len(), 1, "only warning and above: {run:#?}");
    assert_eq!(lines[0]["event"], "log");
    assert_eq!(lines[0]["id"], "ask");
    assert_eq!(lines[0]["level"], "warning");
    assert_eq!(lines[0]["logger"], "asking");
    assert_eq!(lines[0]["data"], "disk \u{1b}[2Jalmost full");
    assert!(!run.stdout.contains('\u{1b}'), "escaped in the JSON text");
}

/// Kills mcpctl if the test fails before it ended.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = kill_process(Pid::from_raw(self.0).expect("a pid"), Signal::KILL);
    }
}

/// Runs mcpctl with `args`, reads stdout lines until `enough` of them
/// came, then presses Ctrl-C; returns the lines and the exit status.
fn until_lines_then_ctrl_c(env: &Env, args: &[&str], enough: usize) -> (Vec<String>, i32) {
    let mut child = env.command(args).spawn().expect("mcpctl starts");
    let pid = child.id() as i32;
    let guard = KillOnDrop(pid);
    let stderr = support::read_all(child.stderr.take().expect("piped stderr"));
    let lines = support::lines_of(child.stdout.take().expect("piped stdout"));
    let mut seen = Vec::new();
    while seen.len() < enough {
        match lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => seen.push(line),
            Err(e) => panic!("{e:?} after {seen:#?}; stderr so far unknown"),
        }
    }
    kill_process(Pid::from_raw(pid).unwrap(), Signal::INT).expect("Ctrl-C is sent");
    let status = child.wait().expect("mcpctl ends");
    std::mem::forget(guard);
    let _ = stderr.join();
    (seen, status.code().unwrap_or(-1))
}

#[test]
fn read_follow_prints_the_resource_again_after_each_update_until_ctrl_c() {
    let env = Env::new();
    let config = asking(&env);
    let args = [
        "--no-host-configs",
        "--config",
        config.as_str(),
        "read",
        "ask",
        "note://counter",
        "--follow",
    ];
    let (lines, code) = until_lines_then_ctrl_c(&env, &args, 3);
    assert_eq!(lines, ["read 1", "read 2", "read 3"]);
    assert_eq!(code, 130);

    let mut json = args.to_vec();
    json.insert(0, "--json");
    let (lines, code) = until_lines_then_ctrl_c(&env, &json, 3);
    assert_eq!(code, 130);
    for (n, line) in lines.iter().enumerate() {
        let value: Value = serde_json::from_str(line).expect("a JSON line");
        assert_eq!(value["updates"], n);
        assert_eq!(
            value["result"]["contents"][0]["text"],
            format!("read {}", n + 1)
        );
    }
}

#[test]
fn watch_follow_json_carries_log_and_elicitation_complete_events() {
    let env = Env::new();
    let config = asking(&env);
    let args = [
        "--json",
        "--no-host-configs",
        "--config",
        config.as_str(),
        "watch",
        "--follow",
    ];
    let mut child = env.command(&args).spawn().expect("mcpctl starts");
    let pid = child.id() as i32;
    let guard = KillOnDrop(pid);
    let stderr = support::read_all(child.stderr.take().expect("piped stderr"));
    let lines = support::lines_of(child.stdout.take().expect("piped stdout"));
    let mut seen = Vec::new();
    let mut next = |kind: &str| loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{e:?}; saw {seen:#?}"));
        let event: Value = serde_json::from_str(&line).expect("a JSON line");
        seen.push(event.clone());
        if event["event"] == kind {
            break event;
        }
    };
    let log = next("log");
    assert_eq!(log["id"], "ask");
    assert_eq!(log["level"], "info");
    assert_eq!(log["data"], "tools listed");
    assert!(log["t_ms"].is_u64(), "{log}");
    // The server says an elicitation this client never saw is done: no
    // question to end, but an event all the same, shaped as the others.
    let done = next("elicitation_complete");
    let mut keys: Vec<&String> = done.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["elicitation_id", "event", "id", "t_ms"], "{done}");
    assert_eq!(done["id"], "ask");
    assert_eq!(done["elicitation_id"], "e-listed");
    assert!(done["t_ms"].as_u64() >= log["t_ms"].as_u64(), "{done}");
    kill_process(Pid::from_raw(pid).unwrap(), Signal::INT).expect("Ctrl-C is sent");
    assert_eq!(child.wait().unwrap().code(), Some(130));
    std::mem::forget(guard);
    let _ = stderr.join();
}

#[test]
fn following_or_logging_a_server_without_the_capability_is_refused_clearly() {
    let env = Env::new();
    // No configuration: the built-in demo server, which declares neither
    // `resources.subscribe` nor `logging`.
    let run = env.run(&["read", "demo", "demo://about", "--follow"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains(
            "cannot subscribe to `demo://about` on server `demo`: the server does not support \
             resources/subscribe (capability `resources.subscribe` not declared)"
        ),
        "{run:#?}"
    );
    let run = env.run(&["logs", "demo", "--level", "info"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr
            .contains("cannot set the log level on server `demo`: the server does not support logging/setLevel"),
        "{run:#?}"
    );
}

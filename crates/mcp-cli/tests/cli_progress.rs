//! Progress on a terminal: a line per server while servers connect, a call's progress reports, nothing on stdout, in a pipe or with `--json`; a call that reports progress outlives its deadline.

mod support;

use serde_json::json;
use support::Env;
use support::pty::Session;

/// A config with one fixture server `slow` that takes `delay_ms` to answer
/// `initialize`.
fn slow_server(env: &Env, delay_ms: u64) -> String {
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"slow": {
            "command": support::fixture_server(),
            "args": ["--era", "legacy", "--delay-initialize-ms", delay_ms.to_string()]
        }}}),
    );
    config.display().to_string()
}

/// The store with one fixture server `fx` whose calls have a one-second
/// deadline.
fn store_with_short_deadline(env: &Env) {
    let store = json!({"version": 1, "servers": [{
        "id": "fx",
        "transport": {"type": "stdio", "command": support::fixture_server(), "args": []},
        "callTimeout": 1000
    }]});
    std::fs::write(env.store(), serde_json::to_vec(&store).unwrap()).unwrap();
}

#[test]
fn connecting_servers_are_shown_on_the_terminal_then_erased() {
    let env = Env::new();
    let config = slow_server(&env, 1500);
    let session = Session::spawn(env.command(&["--no-host-configs", "--config", &config, "tools"]));
    session.expect("mcpctl: connecting 1 server: 0 ready, 1 waiting");
    session.expect("slow");
    session.expect("connecting");
    let (code, stdout, terminal) = session.finish();
    assert_eq!(code, 0, "{terminal}");
    // The lines are erased before the listing: cursor up over them, erase below.
    assert!(terminal.contains("\x1b[J"), "{terminal:?}");
    assert!(
        stdout.contains("echo"),
        "the listing is on stdout: {stdout}"
    );
    assert!(
        !stdout.contains('\x1b') && !stdout.contains("connecting"),
        "stdout has only the listing: {stdout:?}"
    );
}

#[test]
fn json_and_pipes_get_no_progress_lines() {
    let env = Env::new();
    let config = slow_server(&env, 600);
    let session =
        Session::spawn(env.command(&["--json", "--no-host-configs", "--config", &config, "tools"]));
    let (code, stdout, terminal) = session.finish();
    assert_eq!(code, 0, "{terminal}");
    assert!(
        !terminal.contains("connecting") && !terminal.contains('\x1b'),
        "--json shows nothing on the terminal: {terminal:?}"
    );
    support::parse_one_document(&stdout);

    let run = env.run(&["--no-host-configs", "--config", &config, "tools"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        !run.stderr.contains("connecting") && !run.stderr.contains('\x1b'),
        "a pipe gets no progress: {run:#?}"
    );
}

#[test]
fn a_call_shows_the_servers_progress_on_the_terminal() {
    let env = Env::new();
    store_with_short_deadline(&env);
    let session = Session::spawn(env.command(&["call", "fx", "progress", "steps=3", "ms=300"]));
    session.expect("mcpctl: fx.progress running");
    session.expect("1 of 3 (33%), step 1 of 3");
    session.expect("2 of 3 (67%), step 2 of 3");
    let (code, stdout, terminal) = session.finish();
    assert_eq!(code, 0, "{terminal}");
    assert_eq!(stdout, "done: 3 steps\n");
}

#[test]
fn progress_keeps_a_call_alive_past_its_deadline() {
    let env = Env::new();
    store_with_short_deadline(&env);
    // 1.6 s of work, a report every 0.4 s: each restarts the 1 s deadline.
    let run = env.run(&["call", "fx", "progress", "steps=4", "ms=400"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "done: 4 steps\n");
    // The same time without reports is cut off at the deadline.
    let run = env.run(&["call", "fx", "slow", "ms=1600"]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(run.stderr.contains("within 1 s"), "{run:#?}");
}

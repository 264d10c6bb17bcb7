//! `mcpctl tools` and `mcpctl call` through the background gateway (`mcpctl serve --daemon`): the same output, exit status and error text as a direct run, over the daemon's one server process; `--no-daemon` starts its own; a preset that needs approval is refused there as a direct run without a terminal refuses it.

mod support;

use std::path::Path;

use serde_json::json;
use support::{Env, Run, alive, pids};

/// Ends a background gateway a failed test left, by the pid it printed.
struct DaemonGuard(Option<i32>);

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
}

/// One fixture server `fx` writing its pid to `pid_file` at each start,
/// with a tool whose call is a long JSON-RPC error.
fn fixture(env: &Env, pid_file: &Path) -> String {
    let args = json!([
        "--era",
        "legacy",
        "--pid-file",
        pid_file,
        "--error-message-kib",
        "2"
    ]);
    env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {"command": support::fixture_server(), "args": args}}}),
    )
    .display()
    .to_string()
}

/// `mcpctl [GLOBAL] serve --daemon`, returning the daemon's pid.
fn start_daemon(env: &Env, global: &[&str]) -> i32 {
    let mut args = global.to_vec();
    args.extend(["serve", "--daemon"]);
    let started = env.run(&args);
    assert_eq!(started.code, 0, "{started:#?}");
    started
        .stdout
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {started:#?}"))
}

/// `mcpctl [GLOBAL] serve --stop`, checking the daemon ended.
fn stop_daemon(env: &Env, global: &[&str], pid: i32) {
    let mut args = global.to_vec();
    args.extend(["serve", "--stop"]);
    let stopped = env.run(&args);
    assert_eq!(stopped.code, 0, "{stopped:#?}");
    assert!(!alive(pid), "the background gateway ended");
}

/// `GLOBAL COMMAND [--no-daemon] REST`.
fn line<'a>(global: &[&'a str], command: &'a str, own: bool, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = global.to_vec();
    args.push(command);
    if own {
        args.push("--no-daemon");
    }
    args.extend_from_slice(rest);
    args
}

fn same(direct: &Run, daemon: &Run, what: &str) {
    assert_eq!(
        (daemon.code, &daemon.stdout, &daemon.stderr),
        (direct.code, &direct.stdout, &direct.stderr),
        "{what}: through the daemon {daemon:#?}, direct {direct:#?}"
    );
}

/// Every listing and call, through the daemon and directly: the same
/// output and exit status; the daemon's one server answers them all.
#[test]
fn tools_and_calls_through_the_daemon_print_what_a_direct_run_prints() {
    let env = Env::new();
    let pid_file = env.work_dir().join("fx.pids");
    let config = fixture(&env, &pid_file);
    let global = ["--no-host-configs", "--config", config.as_str()];
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("tools", vec![]),
        ("tools", vec!["fx"]),
        ("tools", vec!["--schema"]),
        ("tools", vec!["nope"]),
        ("call", vec!["fx", "echo", r#"{"text":"hi"}"#]),
        ("call", vec!["fx.add", "a=1", "b=2"]),
        ("call", vec!["fx", "image"]),
        (
            "call",
            vec!["fx", "echo", r#"{"text":"one"}"#, r#"{"text":"two"}"#],
        ),
        // A tool error (1), a JSON-RPC error (1), bad arguments (2), an
        // unknown tool and an unknown server (2).
        ("call", vec!["fx", "fail"]),
        ("call", vec!["fx", "long_error"]),
        ("call", vec!["fx", "echo", r#"{"text":5}"#]),
        ("call", vec!["fx", "nope"]),
        ("call", vec!["nope", "echo"]),
    ];
    let run_all = |own: bool| -> Vec<Run> {
        let mut runs = Vec::new();
        for json in [false, true] {
            for (command, rest) in &cases {
                let mut args = if json { vec!["--json"] } else { vec![] };
                args.extend(line(&global, command, own, rest));
                runs.push(env.run(&args));
            }
        }
        runs
    };
    let direct = run_all(true);
    assert_eq!(direct[0].code, 0, "{:#?}", direct[0]);
    let listed = support::parse_one_document(&direct[cases.len()].stdout);
    assert_eq!(listed[0]["model_name"], "mcp_fx_echo", "{listed}");
    let codes: Vec<i32> = direct.iter().map(|run| run.code).collect();
    assert_eq!(
        &codes[..cases.len()],
        [0, 0, 0, 2, 0, 0, 0, 0, 1, 1, 2, 2, 2],
        "{direct:#?}"
    );
    let started = pids(&pid_file).len();

    let daemon = start_daemon(&env, &global);
    let _guard = DaemonGuard(Some(daemon));
    assert_eq!(pids(&pid_file).len(), started + 1, "the daemon's server");
    let through = run_all(false);
    for (index, (direct, daemon)) in direct.iter().zip(&through).enumerate() {
        let (command, rest) = &cases[index % cases.len()];
        same(direct, daemon, &format!("{command} {rest:?}"));
    }
    assert_eq!(
        pids(&pid_file).len(),
        started + 1,
        "every command went through the daemon's one server"
    );
    // The same server process answered two calls in a row.
    let daemon_server = *pids(&pid_file).last().unwrap();
    assert!(alive(daemon_server));

    // --no-daemon starts its own server.
    let own = env.run(&line(&global, "call", true, &["fx", "echo", "text=own"]));
    assert_eq!((own.code, own.stdout.as_str()), (0, "own\n"), "{own:#?}");
    assert_eq!(pids(&pid_file).len(), started + 2);

    stop_daemon(&env, &global, daemon);
    assert!(!alive(daemon_server), "the daemon's server ended with it");
}

/// A daemon with a preset that asks has nobody to ask: a call through it
/// without a terminal is refused with a direct run's words and status
/// (nothing reaches the server), and a daemon with another preset is not
/// used at all.
#[test]
fn a_call_that_needs_approval_is_refused_through_the_daemon_as_directly() {
    let env = Env::new();
    let pid_file = env.work_dir().join("fx.pids");
    let config = fixture(&env, &pid_file);
    let global = ["--no-host-configs", "--config", config.as_str()];
    let readonly = [&global[..], &["--preset", "readonly"]].concat();
    let call = ["fx", "echo", "text=hi"];
    let direct = env.run(&line(&readonly, "call", true, &call));
    assert_eq!(direct.code, 2, "{direct:#?}");
    assert!(direct.stderr.contains("needs approval"), "{direct:#?}");
    let started = pids(&pid_file).len();

    let daemon = start_daemon(&env, &readonly);
    let _guard = DaemonGuard(Some(daemon));
    let through = env.run(&line(&readonly, "call", false, &call));
    same(&direct, &through, "a call that needs approval");
    assert_eq!(pids(&pid_file).len(), started + 1, "through the daemon");
    // Another preset: the daemon does not serve it, the call runs here.
    let full = env.run(&line(&global, "call", false, &call));
    assert_eq!((full.code, full.stdout.as_str()), (0, "hi\n"), "{full:#?}");
    assert_eq!(pids(&pid_file).len(), started + 2, "a server of its own");
    // Listing does not depend on the preset: through the daemon.
    let tools = env.run(&line(&global, "tools", false, &[]));
    assert_eq!(tools.code, 0, "{tools:#?}");
    assert_eq!(pids(&pid_file).len(), started + 2);

    stop_daemon(&env, &readonly, daemon);
}

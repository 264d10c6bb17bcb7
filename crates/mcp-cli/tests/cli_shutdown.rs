//! `mcpctl` leaves no server process behind, and does not wait out the polite grace for a server whose connection already ended.
//!
//! The server is the workspace's fixture with `--close-stdout-after`: it
//! closes stdout after a given response and keeps running, ignoring stdin
//! EOF and SIGTERM, so only SIGKILL ends it. Every process it starts
//! appends its pid to a file; after each `mcpctl` run, every pid listed
//! must be gone.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use support::Env;

/// How many `mcpctl` runs each case makes: the leak depended on timing.
const RUNS: usize = 20;

/// The polite close of a stdio server that ignores stdin EOF and SIGTERM:
/// 2 s after closing stdin, 2 s after SIGTERM. A run that waits it out
/// takes longer than this.
const POLITE_GRACE: Duration = Duration::from_secs(4);

/// The fixture server, built next to `mcpctl` by `cargo test --workspace`.
fn fixture() -> PathBuf {
    let path = Path::new(support::MCPCTL)
        .parent()
        .expect("mcpctl's directory")
        .join("mcp-fixture-server");
    assert!(
        path.is_file(),
        "the fixture server is not built at {}: run `cargo build -p tests --bin mcp-fixture-server`",
        path.display()
    );
    path
}

/// Whether process `pid` still exists (a zombie counts: nobody reaped it).
fn exists(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Runs `mcpctl call` `RUNS` times against a fixture started with
/// `fault`; returns each run's wall time. Fails on the first run that left
/// a server process running (after killing it).
fn run_case(fault: &[&str]) -> Vec<Duration> {
    let fixture = fixture();
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..RUNS {
        let env = Env::new();
        let pids = env.write_json("pids", &json!(null));
        std::fs::write(&pids, "").unwrap();
        let mut args = vec!["--era", "legacy", "--ignore-sigterm", "--pid-file"];
        let pid_file = pids.display().to_string();
        args.push(&pid_file);
        args.extend_from_slice(fault);
        let config = env.write_json(
            "servers.json",
            &json!({"mcpServers": {"fx": {"command": fixture, "args": args}}}),
        );
        let config = config.display().to_string();
        let started = Instant::now();
        let result = env.run(&[
            "--config",
            &config,
            "--preset",
            "full",
            "call",
            "fx",
            "echo",
            r#"{"text": "hi"}"#,
        ]);
        let took = started.elapsed();
        let listed: Vec<i32> = std::fs::read_to_string(&pids)
            .unwrap()
            .lines()
            .map(|line| line.parse().expect("a pid line"))
            .collect();
        assert!(
            !listed.is_empty(),
            "run {run}: the server never started: {result:#?}"
        );
        let alive: Vec<i32> = listed.iter().copied().filter(|&pid| exists(pid)).collect();
        for &pid in &alive {
            // Ours to end: mcpctl started it for this test and left it.
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        assert!(
            alive.is_empty(),
            "run {run} {fault:?}: mcpctl exited (code {}) and left server process(es) {alive:?} running",
            result.code
        );
        times.push(took);
    }
    times
}

fn report(case: &str, times: &mut [Duration]) {
    times.sort();
    let median = times[times.len() / 2];
    let max = times[times.len() - 1];
    eprintln!(
        "{case}: {} runs, 0 processes left, exit time median {} ms, max {} ms",
        times.len(),
        median.as_millis(),
        max.as_millis()
    );
    assert!(
        max < POLITE_GRACE - Duration::from_secs(1),
        "{case}: a run took {} ms: the close waited out the polite grace for a dead connection",
        max.as_millis()
    );
}

#[test]
fn a_server_that_closed_stdout_during_listing_is_killed_before_mcpctl_exits() {
    // Requests: server/discover, initialize, tools/list, resources/list,
    // prompts/list, tools/call. Stdout closes after tools/list, while the
    // manager lists: the call is refused, the process stays.
    let mut times = run_case(&["--close-stdout-after", "3"]);
    report("stdout closed after tools/list", &mut times);
}

#[test]
fn a_server_that_closed_stdout_after_the_call_is_killed_before_mcpctl_exits() {
    // Stdout closes after the answer to the call (the sixth request),
    // while mcpctl closes.
    let mut times = run_case(&["--close-stdout-after", "6"]);
    report("stdout closed after tools/call", &mut times);
}

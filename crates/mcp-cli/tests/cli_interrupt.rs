//! Ctrl-C in every command that connects: one line on stderr, exit 130, and no server process left; a second Ctrl-C exits at once and still kills them.
//!
//! The servers are the workspace's fixture with a slow `initialize`, so
//! `mcpctl` is still connecting when it is interrupted. Each server writes
//! its pid into a FIFO of its own as it starts: reading it is how a test
//! learns that the server runs (and which pid to check afterwards) without
//! sleeping.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use serde_json::json;
use support::Env;

/// How long a test waits for a server to start or a line to appear.
const WAIT: Duration = Duration::from_secs(60);

/// The polite close of a server that ignores stdin EOF and SIGTERM takes
/// this long (2 s after closing stdin, 2 s after SIGTERM).
const POLITE_GRACE: Duration = Duration::from_secs(4);

/// A running `mcpctl` and the pids of the servers it started.
struct Started {
    child: Child,
    pids: Vec<i32>,
    stderr: mpsc::Receiver<String>,
    stdout: std::thread::JoinHandle<String>,
}

/// A FIFO at `path`, made with the system's `mkfifo`.
fn fifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {} failed", path.display());
}

/// A config with `count` fixture servers (`s0`, `s1`, ...) whose
/// `initialize` answers after a minute, each writing its pid to a FIFO.
fn slow_servers(env: &Env, count: usize, extra: &[&str]) -> (PathBuf, Vec<PathBuf>) {
    let fixture = support::fixture_server();
    let mut servers = serde_json::Map::new();
    let mut fifos = Vec::new();
    for index in 0..count {
        let path = env.data_dir().join(format!("pid-{index}"));
        fifo(&path);
        let mut args = vec![
            "--era".to_owned(),
            "legacy".to_owned(),
            "--delay-initialize-ms".to_owned(),
            "60000".to_owned(),
            "--pid-file".to_owned(),
            path.display().to_string(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        servers.insert(
            format!("s{index}"),
            json!({"command": fixture, "args": args}),
        );
        fifos.push(path);
    }
    let config = env.write_json("servers.json", &json!({"mcpServers": servers}));
    (config, fifos)
}

/// Starts `mcpctl ARGS` and waits until every server has written its pid.
fn start(env: &Env, args: &[&str], fifos: &[PathBuf]) -> Started {
    let mut child = env.command(args).spawn().expect("mcpctl starts");
    let stderr = support::lines_of(child.stderr.take().expect("piped stderr"));
    let stdout = support::read_all(child.stdout.take().expect("piped stdout"));
    let (pid_tx, pid_rx) = mpsc::channel();
    for path in fifos {
        let path = path.clone();
        let pid_tx = pid_tx.clone();
        std::thread::spawn(move || {
            // Opening blocks until the server opens its end to write.
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let _ = pid_tx.send(text.trim().parse::<i32>().ok());
        });
    }
    let mut pids = Vec::new();
    for _ in fifos {
        match pid_rx.recv_timeout(WAIT) {
            Ok(Some(pid)) => pids.push(pid),
            other => {
                let _ = child.kill();
                panic!("mcpctl {args:?}: a server never reported its pid ({other:?})");
            }
        }
    }
    Started {
        child,
        pids,
        stderr,
        stdout,
    }
}

impl Started {
    fn interrupt(&self) {
        let pid = Pid::from_raw(self.child.id() as i32).expect("mcpctl's pid");
        kill_process(pid, Signal::INT).expect("SIGINT to mcpctl");
    }

    /// Waits for a stderr line containing `needle`; returns the lines read.
    fn expect_stderr(&self, needle: &str) -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Err(error) => panic!("no stderr line with {needle:?} ({error:?}); saw {seen:?}"),
            }
        }
    }

    /// Waits for mcpctl to exit; its code and the rest of stderr.
    fn finish(mut self) -> (i32, Vec<String>, String, Vec<i32>) {
        let watchdog = support::Watchdog::start(&self.child, "mcpctl".to_owned());
        let status = self.child.wait().expect("wait for mcpctl");
        watchdog.stop();
        let rest: Vec<String> = self.stderr.iter().collect();
        let stdout = self.stdout.join().expect("stdout reader");
        (status.code().unwrap_or(-1), rest, stdout, self.pids)
    }
}

/// The pids that still exist (a zombie counts: nobody reaped it); ends
/// them, since a test started them, and returns them.
fn survivors(pids: &[i32]) -> Vec<i32> {
    let alive: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
        .collect();
    for &pid in &alive {
        if let Some(pid) = Pid::from_raw(pid) {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
    alive
}

#[test]
fn ctrl_c_while_connecting_closes_every_server_and_exits_130() {
    for (args, servers) in [
        (vec!["servers"], 2),
        (vec!["tools"], 2),
        (vec!["tools", "s0"], 1),
        (vec!["call", "s0", "echo", r#"{"text": "hi"}"#], 1),
        (vec!["retry", "s0"], 1),
        (vec!["--json", "servers"], 1),
    ] {
        let env = Env::new();
        let (config, fifos) = slow_servers(&env, servers, &[]);
        let config = config.display().to_string();
        let mut all = vec!["--no-host-configs", "--config", &config];
        all.extend_from_slice(&args);
        let run = start(&env, &all, &fifos);
        assert_eq!(run.pids.len(), servers);
        run.interrupt();
        let (code, stderr, stdout, pids) = run.finish();
        assert_eq!(code, 130, "{args:?}: {stderr:?}");
        let messages: Vec<&String> = stderr
            .iter()
            .filter(|l| l.contains("interrupted"))
            .collect();
        assert_eq!(messages.len(), 1, "{args:?}: one message, got {stderr:?}");
        assert!(messages[0].starts_with("mcpctl: "), "{stderr:?}");
        assert!(stdout.is_empty(), "{args:?}: nothing on stdout: {stdout:?}");
        let left = survivors(&pids);
        assert!(
            left.is_empty(),
            "{args:?}: server(s) {left:?} outlived mcpctl"
        );
    }
}

#[test]
fn ctrl_c_during_watch_uses_its_own_ending_and_closes_the_servers() {
    let env = Env::new();
    let (config, fifos) = slow_servers(&env, 2, &[]);
    let config = config.display().to_string();
    let run = start(
        &env,
        &["--no-host-configs", "--config", &config, "watch"],
        &fifos,
    );
    run.interrupt();
    let (code, stderr, stdout, pids) = run.finish();
    assert_eq!(code, 130, "{stderr:?}");
    assert_eq!(
        stderr.iter().filter(|l| l.contains("interrupted")).count(),
        1,
        "{stderr:?}"
    );
    // watch's own ending: the table so far.
    assert!(stdout.contains("s0") && stdout.contains("s1"), "{stdout}");
    let left = survivors(&pids);
    assert!(left.is_empty(), "server(s) {left:?} outlived mcpctl");
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_still_kills_the_servers() {
    for (args, servers) in [
        (vec!["servers"], 2),
        (vec!["call", "s0", "echo"], 1),
        (vec!["watch"], 2),
    ] {
        let env = Env::new();
        // These servers outlast a polite close: only SIGKILL ends them.
        let (config, fifos) =
            slow_servers(&env, servers, &["--ignore-sigterm", "--ignore-stdin-eof"]);
        let config = config.display().to_string();
        let mut all = vec!["--no-host-configs", "--config", &config];
        all.extend_from_slice(&args);
        let run = start(&env, &all, &fifos);
        run.interrupt();
        run.expect_stderr("interrupted");
        let second = Instant::now();
        run.interrupt();
        let (code, stderr, _stdout, pids) = run.finish();
        let took = second.elapsed();
        assert_eq!(code, 130, "{args:?}: {stderr:?}");
        assert!(
            took < POLITE_GRACE - Duration::from_millis(1500),
            "{args:?}: the second Ctrl-C took {} ms to end mcpctl",
            took.as_millis()
        );
        let left = survivors(&pids);
        assert!(
            left.is_empty(),
            "{args:?}: server(s) {left:?} outlived mcpctl"
        );
    }
}

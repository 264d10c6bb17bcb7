//! `mcpctl watch --follow`: events stream as they happen (a tool list change, a server that dies) after the servers settled, until Ctrl-C ends it with exit 130 and no server process left.
//!
//! Two fixture servers: `fx` adds a tool and sends
//! `notifications/tools/list_changed` on each SIGUSR1, `fy` is killed. Each
//! writes its pid into a FIFO of its own as it starts: reading it is how
//! the test learns the pid without sleeping. The test waits on stdout
//! lines, never on time.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use serde_json::{Value, json};
use support::Env;

/// How long the test waits for a line.
const WAIT: Duration = Duration::from_secs(60);

fn fifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {} failed", path.display());
}

/// The config and the FIFO each server writes its pid to.
fn config(env: &Env) -> (String, Vec<PathBuf>) {
    let fixture = support::fixture_server();
    let mut servers = serde_json::Map::new();
    let mut fifos = Vec::new();
    for (id, extra) in [("fx", "--add-tool-on-sigusr1"), ("fy", "--remove-tool")] {
        let path = env.data_dir().join(format!("pid-{id}"));
        fifo(&path);
        servers.insert(
            id.to_owned(),
            json!({"command": fixture, "args": [
                "--era", "legacy", extra, "--pid-file", path.display().to_string()
            ]}),
        );
        fifos.push(path);
    }
    let config = env.write_json("servers.json", &json!({"mcpServers": servers}));
    (config.display().to_string(), fifos)
}

fn signal(pid: i32, signal: Signal) {
    kill_process(Pid::from_raw(pid).expect("a pid"), signal).expect("the signal is sent");
}

/// Reads stdout lines until one satisfies `wanted`; returns it.
fn expect_line(
    lines: &mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                seen.push(line.clone());
                if wanted(&line) {
                    return line;
                }
            }
            Err(error) => panic!("no such line ({error:?}); saw {seen:#?}"),
        }
    }
}

/// Kills mcpctl if the test fails before it ended (its servers then see
/// stdin close and exit).
struct KillOnDrop(Option<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = kill_process(Pid::from_raw(pid).expect("a pid"), Signal::KILL);
        }
    }
}

#[test]
fn follow_streams_events_after_settling_until_ctrl_c() {
    for json in [true, false] {
        let env = Env::new();
        let (config, fifos) = config(&env);
        let mut args = vec![
            "--no-host-configs",
            "--config",
            &config,
            "watch",
            "--follow",
        ];
        if json {
            args.insert(0, "--json");
        }
        let mut child = env.command(&args).spawn().expect("mcpctl starts");
        let mut guard = KillOnDrop(Some(child.id() as i32));
        let watchdog = support::Watchdog::start(&child, format!("mcpctl {args:?}"));
        let pids: Vec<i32> = fifos
            .iter()
            .map(|path| {
                std::fs::read_to_string(path)
                    .expect("a server writes its pid")
                    .trim()
                    .parse()
                    .expect("a pid")
            })
            .collect();
        let stderr = support::read_all(child.stderr.take().expect("piped stderr"));
        let lines = support::lines_of(child.stdout.take().expect("piped stdout"));
        let mut seen = Vec::new();
        let parse = |line: &str| -> Value {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))
        };
        let ready = |id: &str, line: &str| {
            if json {
                let event = parse(line);
                event["event"] == "status" && event["id"] == id && event["status"] == "ready"
            } else {
                line.contains(&format!(" {id} ready"))
            }
        };
        // The two connect at once: either may be ready first.
        let mut waiting = vec!["fx", "fy"];
        while !waiting.is_empty() {
            let line = expect_line(&lines, &mut seen, |line| {
                waiting.iter().any(|id| ready(id, line))
            });
            waiting.retain(|id| !ready(id, &line));
        }

        // Both settled: watch without --follow would have ended here.
        signal(pids[0], Signal::USR1);
        let change = expect_line(&lines, &mut seen, |line| {
            if json {
                parse(line)["event"] == "tools_changed"
            } else {
                line.contains("tools changed")
            }
        });
        if json {
            let change = parse(&change);
            assert_eq!(change["id"], "fx", "{change}");
            assert_eq!(change["added"], json!(["signal_0001"]), "{change}");
            assert_eq!(change["removed"], json!([]), "{change}");
            assert!(change["t_ms"].is_u64(), "{change}");
        } else {
            assert!(change.contains("fx tools changed"), "{change}");
            assert!(change.contains("+signal_0001"), "{change}");
        }

        // A server that dies is an event too.
        signal(pids[1], Signal::KILL);
        expect_line(&lines, &mut seen, |line| {
            if json {
                let event = parse(line);
                event["id"] == "fy"
                    && event["status"] == "error"
                    && event["error"]["code"].is_string()
            } else {
                line.contains(" fy error")
            }
        });

        signal(child.id() as i32, Signal::INT);
        let status = child.wait().expect("mcpctl ends");
        guard.0 = None;
        watchdog.stop();
        let stderr = stderr.join().expect("the stderr reader");
        assert_eq!(status.code(), Some(130), "{args:?}: {seen:#?} {stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        // Every line was one event: JSON lines with --json, and nothing
        // printed at the end.
        seen.extend(lines.iter());
        if json {
            for line in &seen {
                parse(line);
            }
        }
        assert!(
            !seen
                .iter()
                .any(|line| line.contains("TRANSPORT") || line.contains("STATUS")),
            "no table at the end: {seen:#?}"
        );
        let left: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
            .collect();
        for &pid in &left {
            signal(pid, Signal::KILL);
        }
        assert!(
            left.is_empty(),
            "{args:?}: server(s) {left:?} outlived mcpctl"
        );
    }
}

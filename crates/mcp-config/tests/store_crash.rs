//! Crash test: a child process saving in a loop is killed (SIGKILL on POSIX) and the store file always parses afterwards.
//!
//! This test has its own `main` (`harness = false` in Cargo.toml): it
//! re-executes its own binary with `MCP_CONFIG_CRASH_CHILD` set, and that
//! child saves to the store forever, printing `saved N` after each save.
//! The parent reads the child's stdout until the child reports its target
//! count, then kills it by its pid with `Child::kill` (SIGKILL on POSIX,
//! `TerminateProcess` on Windows) while it is in the middle of its next
//! saves. No sleeps: the child's own report is the synchronization.
//!
//! After every kill the file must parse as a valid store (the store is
//! replaced atomically), and every save the child reported before the kill must be
//! in it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use mcp_config::{SecretEntry, ServerConfig, StdioConfig, Store, TransportConfig, parse_store_v1};

const TEST_NAME: &str = "store_survives_sigkill_during_saves";
const CHILD_ENV: &str = "MCP_CONFIG_CRASH_CHILD";
const SERVERS_ENV: &str = "MCP_CONFIG_CRASH_SERVERS";
const ROUNDS: u64 = 24;

fn main() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        let servers = std::env::var(SERVERS_ENV)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        child(Path::new(&path), servers);
    }
    // Behave like libtest for filters: `cargo test -p mcp-config NAME` runs
    // only tests whose name contains NAME.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !filters.is_empty() && !filters.iter().any(|f| TEST_NAME.contains(f.as_str())) {
        println!(
            "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out\n"
        );
        return;
    }
    println!("\nrunning 1 test");
    parent();
    println!("test {TEST_NAME} ... ok\n");
    println!("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n");
}

fn server(iteration: u64, servers: u64) -> ServerConfig {
    let mut stdio = StdioConfig::new("/usr/bin/env");
    stdio.args = vec![iteration.to_string(), "x".repeat(64)];
    stdio.env = (0..8)
        .map(|k| SecretEntry::new(format!("VAR_{k}"), format!("secret-{iteration}-{k}")))
        .collect();
    let mut config = ServerConfig::new(
        format!("srv-{}", iteration % servers),
        TransportConfig::Stdio(stdio),
    );
    config.description = Some(format!("saved at iteration {iteration}"));
    config
}

/// The child: save forever, reporting each save once it has returned.
fn child(path: &Path, servers: u64) -> ! {
    let store = Store::open(path);
    // Continue numbering after the highest save a killed predecessor left.
    let start = match store.load() {
        Ok(stored) => stored
            .iter()
            .filter_map(|server| match &server.transport {
                TransportConfig::Stdio(stdio) => stdio.args.first()?.parse::<u64>().ok(),
                _ => None,
            })
            .max()
            .map_or(0, |last| last + 1),
        Err(error) => {
            eprintln!("child: the store does not load at start: {error}");
            std::process::exit(2);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for iteration in start.. {
        if let Err(error) = store.save(server(iteration, servers)) {
            eprintln!("child: save {iteration} failed: {error}");
            std::process::exit(3);
        }
        if writeln!(out, "saved {iteration}")
            .and_then(|()| out.flush())
            .is_err()
        {
            // The parent stopped reading; it is about to kill us anyway.
            std::process::exit(0);
        }
    }
    unreachable!("the loop above never ends")
}

/// Kills the child if the parent panics, so no orphan keeps writing.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn parent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("mcp.json");
    let exe = std::env::current_exe().expect("own executable");
    let mut total_reported = 0;
    for round in 0..ROUNDS {
        // Small files make a save mostly file system work (temp file,
        // fsync, rename), so the kill, which lands a fraction of a
        // millisecond after the child's report, hits the write itself.
        let ids: u64 = [1, 2, 3, 5][(round % 4) as usize];
        let mut child = Reaper(
            Command::new(&exe)
                .env(CHILD_ENV, &path)
                .env(SERVERS_ENV, ids.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn the child"),
        );
        let stdout = child.0.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        // Different amounts of work per round move the kill around.
        let wanted = 3 + round * 2;
        let mut reported = Vec::new();
        while (reported.len() as u64) < wanted {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("round {round}: the child exited early (see its stderr)"))
                .expect("read the child's report");
            let iteration: u64 = line
                .strip_prefix("saved ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("round {round}: unexpected child output {line:?}"));
            reported.push(iteration);
        }
        // The child is saving its next entries right now.
        child.0.kill().expect("kill the child");
        let status = child.0.wait().expect("wait for the child");
        assert!(
            !status.success(),
            "round {round}: the child was killed, not finished"
        );
        drop(lines);
        total_reported += reported.len();

        let text = std::fs::read_to_string(&path).expect("the store file exists");
        let document = parse_store_v1(&text).unwrap_or_else(|e| {
            panic!("round {round}: the store does not parse after the kill: {e}")
        });
        assert_eq!(
            document.errors().count(),
            0,
            "round {round}: bad entries after the kill"
        );
        let servers = Store::open(&path).load().expect("the store loads");
        let last = *reported.last().expect("at least one save");
        let id = format!("srv-{}", last % ids);
        let found = servers
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("round {round}: reported save {last} is missing"));
        let TransportConfig::Stdio(stdio) = &found.transport else {
            panic!("round {round}: wrong transport")
        };
        let stored_iteration: u64 = stdio.args[0].parse().expect("iteration number");
        // Later saves may have landed before the kill, but never fewer.
        assert!(
            stored_iteration >= last && stored_iteration % ids == last % ids,
            "round {round}: reported save {last} was lost (found {stored_iteration})"
        );
    }
    assert!(total_reported > 0);
    // A kill between creating the temp file and renaming it leaves the temp
    // file (a whole copy of the store, secrets included); the next save
    // removes whatever a killed writer left.
    let leftover = tempfile::Builder::new()
        .prefix(".mcp.json.")
        .suffix(".tmp")
        .tempfile_in(dir.path())
        .expect("a stand-in for a killed writer's temp file")
        .into_temp_path()
        .keep()
        .expect("keep it");
    Store::open(&path)
        .save(server(u64::MAX / 2, 1))
        .expect("a save after the crashes");
    let temps: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list the store's directory")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(
        temps.is_empty(),
        "temp files left beside the store: {temps:?}"
    );
    assert!(!leftover.exists());
}

//! The conformance runners' server scenarios against `mcpctl serve --http`: the gateway as an MCP server, in front of `mcpctl`'s built-in demo server.
//!
//! The gateway runs in an empty environment (no configured servers, so the
//! demo server is behind it) and is reached by the URL it prints for
//! clients that take only a URL (`/mcp/<token>`): the runners send no
//! `Authorization` header. Each runner then runs its whole server suite:
//! the released one once, the pre-release one once per spec version
//! (`--suite all --spec-version V`). Many scenarios need the runner's own
//! test server's tools, resources and prompts (`test_simple_text`,
//! `test://static-text`, ...), which a gateway serves only when a server
//! behind it has them: those are known failures. A scenario passes when
//! the runner marks it passed with at least one check.
//!
//! `tests/conformance/expected-pass-server.txt` (scenario names) and
//! `tests/conformance-prerelease/expected-pass-server.txt` (`VERSION
//! scenario` lines) list what must pass.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};

/// The spec versions the pre-release runner's server scenarios run at.
const PRERELEASE_VERSIONS: [&str; 4] = ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The longest a whole suite may take.
const SUITE_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs both runners' server suites; returns how many expected passes failed.
pub(super) fn run(root: &Path) -> anyhow::Result<usize> {
    let mcpctl = build_mcpctl(root)?;
    let home = tempfile_dir("mcp-conformance-server")?;
    let mut gateway = Gateway::start(&mcpctl, &home)?;
    let result = run_suites(root, &gateway.url);
    gateway.stop();
    let _ = std::fs::remove_dir_all(&home);
    result
}

fn run_suites(root: &Path, url: &str) -> anyhow::Result<usize> {
    let mut regressions = 0;
    let released = root.join("tests/conformance");
    let expected = read_list(&released.join("expected-pass-server.txt"))?;
    let passed = run_suite(&released, url, &[])?;
    regressions += report("released", &expected, &passed);

    let prerelease = root.join("tests/conformance-prerelease");
    let lines = read_list(&prerelease.join("expected-pass-server.txt"))?;
    for version in PRERELEASE_VERSIONS {
        let expected: BTreeSet<String> = lines
            .iter()
            .filter_map(|line| line.strip_prefix(version)?.strip_prefix(' '))
            .map(str::to_owned)
            .collect();
        let passed = run_suite(
            &prerelease,
            url,
            &["--suite", "all", "--spec-version", version],
        )?;
        regressions += report(&format!("pre-release {version}"), &expected, &passed);
    }
    Ok(regressions)
}

/// Prints a suite's outcome against its expected passes; the number of
/// expected passes that failed.
fn report(column: &str, expected: &BTreeSet<String>, passed: &BTreeSet<String>) -> usize {
    let failed: Vec<&String> = expected.difference(passed).collect();
    let more: Vec<&String> = passed.difference(expected).collect();
    println!(
        "server conformance ({column}) against mcpctl serve --http: {} pass: {}",
        passed.len(),
        passed.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    if !more.is_empty() {
        println!(
            "  also passing, not in expected-pass-server.txt: {}",
            more.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for scenario in &failed {
        println!("  FAIL (expected to pass): {scenario}");
    }
    failed.len()
}

/// Runs one runner's server suite and returns the scenarios that passed.
fn run_suite(dir: &Path, url: &str, extra: &[&str]) -> anyhow::Result<BTreeSet<String>> {
    let node = dir.join("node_modules/node/bin/node");
    let runner = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let log = std::env::temp_dir().join(format!(
        "mcp-conformance-server-{}-{}.log",
        std::process::id(),
        extra.concat()
    ));
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut child = Command::new(&node)
        .arg(&runner)
        .args(["server", "--url", url])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()
        .with_context(|| format!("could not start {}", node.display()))?;
    let started = std::time::Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if started.elapsed() > SUITE_TIMEOUT {
            // Our own child, by its handle.
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "the server suite ({}) took over {SUITE_TIMEOUT:?}",
                extra.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let passed: BTreeSet<String> = text.lines().filter_map(passed_scenario).collect();
    if !text.contains("=== SUMMARY ===") {
        bail!(
            "the server suite ({}) printed no summary:\n{text}",
            extra.join(" ")
        );
    }
    Ok(passed)
}

/// A summary line `✓ name: N passed, 0 failed` with N ≥ 1: the scenario.
fn passed_scenario(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("✓ ")?;
    let (name, counts) = rest.split_once(": ")?;
    let (ok, rest) = counts.split_once(" passed, ")?;
    let failed = rest.split_whitespace().next()?;
    (ok.parse::<u32>().ok()? > 0 && failed == "0").then(|| name.to_owned())
}

fn read_list(path: &Path) -> anyhow::Result<BTreeSet<String>> {
    Ok(super::prerelease::read_list(path)?.into_iter().collect())
}

fn build_mcpctl(root: &Path) -> anyhow::Result<PathBuf> {
    super::build_bin(root, "mcp-cli", "mcpctl")
}

fn tempfile_dir(prefix: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// A running `mcpctl serve --http`.
struct Gateway {
    child: Child,
    url: String,
}

impl Gateway {
    /// Starts it with `home` as its whole environment's home and data
    /// directory, and reads the URL-only endpoint it prints once ready.
    fn start(mcpctl: &Path, home: &Path) -> anyhow::Result<Gateway> {
        let mut child = Command::new(mcpctl)
            .args(["--no-project", "--no-host-configs", "serve", "--http"])
            .env("HOME", home)
            .env("MCPCTL_DATA_DIR", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("share"))
            .env("MCPCTL_NO_HOST_CONFIGS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("could not start {}", mcpctl.display()))?;
        let stdout = child.stdout.take().context("mcpctl's stdout")?;
        let mut url = None;
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading mcpctl serve's output")?;
            if let Some(found) = line.split("takes only a URL: ").nth(1) {
                url = Some(found.trim().to_owned());
                break;
            }
        }
        let Some(url) = url else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("mcpctl serve --http ended without printing its URL");
        };
        Ok(Gateway { child, url })
    }

    /// SIGTERM (mcpctl closes the demo server and exits), by its pid.
    fn stop(&mut self) {
        let stopped = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::passed_scenario;

    #[test]
    fn reads_the_summary_lines() {
        assert_eq!(
            passed_scenario("✓ ping: 2 passed, 0 failed").as_deref(),
            Some("ping")
        );
        assert_eq!(
            passed_scenario("✓ server-sse-polling: 0 passed, 0 failed"),
            None
        );
        assert_eq!(
            passed_scenario("✗ tools-call-image: 1 passed, 1 failed"),
            None
        );
        assert_eq!(passed_scenario("Total: 3 passed, 0 failed"), None);
    }
}

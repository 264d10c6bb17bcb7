//! `cargo xtask conformance`: the official MCP client conformance suite against our client.
//!
//! Installs the runner (`@modelcontextprotocol/conformance`) and the Node 22
//! it needs from `tests/conformance/package-lock.json`, builds
//! `mcp-conformance-client`, and runs every client scenario one at a time:
//! the runner's suite mode ignores the client's exit code and timeouts, and a
//! scenario that records no checks must count as failed (INTEROP.md). The
//! scenarios listed in `tests/conformance/expected-pass.txt` must pass; the
//! others are reported so that the list can grow.
//!
//! Then the pre-release runner (`tests/conformance-prerelease`, see
//! [`prerelease`]) runs its scenarios once per spec version it offers, and
//! both runners' server scenarios run against `mcpctl serve --http` and
//! against the fixture server directly (see [`server`]). With `--server`,
//! only those server scenarios run ([`run_servers`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::{cargo, display};

mod prerelease;
mod server;

/// The longest one scenario may take, client included.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(180);

/// What one scenario did.
struct Outcome {
    passed: bool,
    summary: String,
}

pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let dir = root.join("tests/conformance");
    install(&dir)?;
    let client = build_client(root)?;
    let node = dir.join("node_modules/node/bin/node");
    let runner = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let expected = expected_scenarios(&dir)?;
    let scenarios = list_scenarios(&node, &runner)?;
    for name in &expected {
        if !scenarios.contains(name) {
            bail!("expected-pass.txt names `{name}`, which the runner does not know");
        }
    }

    let (mut passed, mut failed, mut others_passing) = (0, 0, Vec::new());
    for scenario in &scenarios {
        let outcome = run_scenario(&node, &runner, &client, scenario, &[])?;
        let must_pass = expected.contains(scenario);
        let verdict = match (outcome.passed, must_pass) {
            (true, true) => "pass",
            (false, true) => "FAIL",
            (true, false) => "pass (not yet in expected-pass.txt)",
            (false, false) => "fail (not expected yet)",
        };
        println!("conformance {scenario}: {verdict} — {}", outcome.summary);
        match (outcome.passed, must_pass) {
            (true, true) => passed += 1,
            (false, true) => failed += 1,
            (true, false) => others_passing.push(scenario.clone()),
            (false, false) => {}
        }
    }
    let others = scenarios.len() - expected.len();
    println!(
        "not yet expected: {} of {others} other scenarios pass{}",
        others_passing.len(),
        if others_passing.is_empty() {
            String::new()
        } else {
            format!(
                " (add them to expected-pass.txt: {})",
                others_passing.join(", ")
            )
        }
    );
    println!("conformance: {passed} passed, {failed} failed");

    let regressions = prerelease::run(root, &client)? + server::run(root)?;
    match (failed, regressions) {
        (0, 0) => Ok(()),
        (failed, 0) => bail!("{failed} expected conformance scenario(s) failed"),
        (0, regressions) => {
            bail!("{regressions} expected pre-release conformance run(s) failed")
        }
        (failed, regressions) => bail!(
            "{failed} expected conformance scenario(s) and {regressions} expected \
             pre-release conformance run(s) failed"
        ),
    }
}

/// `cargo xtask conformance --server`: both runners' server suites only,
/// against the gateway and the fixture server, without the client
/// scenarios.
pub(crate) fn run_servers(root: &Path) -> anyhow::Result<()> {
    install(&root.join("tests/conformance"))?;
    install(&root.join("tests/conformance-prerelease"))?;
    match server::run(root)? {
        0 => Ok(()),
        regressions => bail!("{regressions} expected server conformance scenario(s) failed"),
    }
}

fn install(dir: &Path) -> anyhow::Result<()> {
    let mut npm = Command::new("npm");
    npm.args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir);
    let status = npm
        .status()
        .context("could not run npm: install Node.js 20+ with npm")?;
    if !status.success() {
        bail!("`npm ci` in {} failed ({status})", dir.display());
    }
    Ok(())
}

fn build_client(root: &Path) -> anyhow::Result<PathBuf> {
    build_bin(root, "tests", "mcp-conformance-client")
}

/// Builds `bin` of `package` (debug) and returns its path.
fn build_bin(root: &Path, package: &str, bin: &str) -> anyhow::Result<PathBuf> {
    let mut build = cargo(root, &["build", "--quiet", "-p", package, "--bin", bin]);
    let status = build
        .status()
        .with_context(|| format!("could not start `{}`", display(&build)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", display(&build));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Ok(target.join("debug").join(bin))
}

fn expected_scenarios(dir: &Path) -> anyhow::Result<Vec<String>> {
    let path = dir.join("expected-pass.txt");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// The client scenarios, from `conformance list --client` (lines `  - name [versions]`).
fn list_scenarios(node: &Path, runner: &Path) -> anyhow::Result<Vec<String>> {
    let output = Command::new(node)
        .arg(runner)
        .args(["list", "--client"])
        .output()
        .with_context(|| format!("could not run {}", node.display()))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let scenarios: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    if scenarios.is_empty() {
        bail!("the conformance runner listed no client scenarios:\n{text}");
    }
    Ok(scenarios)
}

/// Runs one scenario by itself; `extra` goes to `conformance client` (the
/// pre-release runner's `--spec-version`).
fn run_scenario(
    node: &Path,
    runner: &Path,
    client: &Path,
    scenario: &str,
    extra: &[&str],
) -> anyhow::Result<Outcome> {
    let log = std::env::temp_dir().join(format!(
        "mcp-conformance-{}-{}{}.log",
        std::process::id(),
        extra.concat(),
        scenario.replace('/', "_")
    ));
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut child = Command::new(node)
        .arg(runner)
        .arg("client")
        .arg("--command")
        // The runner starts the command through `/bin/sh -c` and appends the
        // URL; our path has no characters a shell would interpret.
        .arg(client)
        .args(["--scenario", scenario])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()
        .with_context(|| format!("could not start the runner for {scenario}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > SCENARIO_TIMEOUT {
            // Our own child, by its handle.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let counts = text.lines().rev().find_map(parse_counts);
    let Some(status) = status else {
        return Ok(Outcome {
            passed: false,
            summary: format!("timed out after {SCENARIO_TIMEOUT:?}"),
        });
    };
    Ok(match counts {
        // Zero checks means the client never got far enough to be checked.
        Some((_, 0, _, _)) | None => Outcome {
            passed: false,
            summary: "no checks recorded".to_owned(),
        },
        Some((ok, total, failed, warnings)) => Outcome {
            passed: status.success() && failed == 0 && warnings == 0 && ok == total,
            summary: format!(
                "{ok}/{total} checks, {failed} failed, {warnings} warnings{}",
                client_trouble(&text)
            ),
        },
    })
}

/// Why a scenario whose checks all passed can still fail: the runner's
/// notes that the client exited with an error or timed out.
fn client_trouble(log: &str) -> &'static str {
    if log.contains("CLIENT TIMED OUT") {
        ", the client timed out"
    } else if log.contains("CLIENT EXITED WITH ERROR") {
        ", the client exited with an error"
    } else {
        ""
    }
}

/// Parses the runner's `Passed: X/Y, F failed, W warnings` line.
fn parse_counts(line: &str) -> Option<(u32, u32, u32, u32)> {
    let rest = line.trim().strip_prefix("Passed: ")?;
    let (ratio, rest) = rest.split_once(", ")?;
    let (ok, total) = ratio.split_once('/')?;
    let (failed, rest) = rest.split_once(" failed, ")?;
    let warnings = rest.split_whitespace().next()?;
    Some((
        ok.parse().ok()?,
        total.parse().ok()?,
        failed.parse().ok()?,
        warnings.parse().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_counts;

    #[test]
    fn reads_the_runner_summary() {
        assert_eq!(
            parse_counts("Passed: 3/3, 0 failed, 0 warnings"),
            Some((3, 3, 0, 0))
        );
        assert_eq!(
            parse_counts("  Passed: 0/5, 5 failed, 1 warnings"),
            Some((0, 5, 5, 1))
        );
        assert_eq!(parse_counts("OVERALL: PASSED"), None);
        assert_eq!(parse_counts("Passed: x/3, 0 failed, 0 warnings"), None);
    }
}

//! The conformance runners' server scenarios, against three servers over
//! Streamable HTTP: `mcpctl serve --http` (the gateway, in front of
//! `mcpctl`'s built-in demo server), the test fixture server
//! (`mcp-fixture-server --transport http`) directly, and the gateway with
//! kept names in front of the fixture (`mcpctl serve --http --names keep`,
//! the fixture its one server, itself over Streamable HTTP).
//!
//! The gateway runs in an empty environment (no configured servers, so the
//! demo server is behind it) and is reached by the URL it prints for
//! clients that take only a URL (`/mcp/<token>`): the runners send no
//! `Authorization` header. The fixture runs in both eras with
//! `--reference-catalog`, which adds the runner's own test server's tools,
//! resources and prompts (`test_simple_text`, `test://static-text`, ...)
//! to its own, and is reached by the URL it prints first. Each runner then
//! runs its whole server suite against each: the released one once, the
//! pre-release one once per spec version (`--suite all --spec-version V`).
//! The gateway has none of those tools (the demo server behind it has
//! tools of its own): the scenarios that call them are known failures.
//! The transparent gateway's fixture runs with `--reference-catalog` over
//! Streamable HTTP (the gateway's server a `url`), once in each era the
//! gateway can speak to it (`"era"` in the gateway's configuration file):
//! `legacy` (the handshake era; the fixture with `--era legacy`) and
//! `modern` (2026-07-28). `MCP_CONFORMANCE_UPSTREAM_ERA=legacy|modern`
//! runs only that one. Its clients speak either era to the gateway. The
//! fixture offers the same tools, prompts and resources in both eras where
//! both can express them (a question to the client is a request on the
//! session in one and an input round in the other), and the gateway
//! translates what one era has and the other lacks (a handshake-era
//! client's `logging/setLevel` becomes each request's `logLevel`, its
//! `resources/subscribe` the upstream's `subscriptions/listen`; a
//! handshake-era server's questions become a 2026-07-28 client's input
//! rounds). Each era loses what only the other can express, so each has
//! its own list, and between them every scenario the fixture passes
//! directly passes through the gateway:
//! - with the handshake-era upstream, `input-required-result-basic-elicitation`
//!   (it checks the server's own key of its question) and
//!   `input-required-result-multiple-input-requests` (three questions in
//!   one round) fail: a handshake-era server asks one request at a time,
//!   without keys;
//! - with the 2026-07-28 upstream, `server-sse-polling` (2025-11-25) fails:
//!   the fixture ends `test_reconnection`'s SSE stream mid-call only in the
//!   handshake era (the 2026-07-28 suite has no such scenario), and the gateway
//!   ends its own client's stream only when its server ended one (over HTTP;
//!   a server over stdio has no streams to end, so the gateway never
//!   invents one).
//!
//! A scenario passes when the runner marks it passed with at least one
//! check.
//!
//! The transparent gateway runs with `--names keep` unless
//! `MCP_CONFORMANCE_GATEWAY_NAMES` names another mode: `plain`
//! (`fixture__test_simple_text`) or `model` (`mcp_fixture_test_simple_text`).
//! Then the suites' scenarios that are bound to an upstream name (they call
//! a tool or get a prompt by the name the suite gives it, or look a tool up
//! by it in `tools/list`, and fail as "unknown tool", "unknown prompt" or
//! "tool not found" since the gateway serves it under another) cannot pass:
//! `name-bound-server.txt` in each runner's directory lists them, each with
//! the name it uses (`scenario NAME`; `VERSION scenario NAME` in the
//! pre-release directory). What must pass in those modes is what must pass
//! with kept names less those, so a renamed prompt's completion, a renamed
//! tool's logging, progress or input rounds, subscriptions and the rest
//! are checked in every mode. CI runs kept names.
//!
//! What must pass, per server: `tests/conformance/expected-pass-server.txt`,
//! `expected-pass-fixture-server.txt` and
//! `expected-pass-gateway-fixture.txt` (scenario names), and the same
//! files in `tests/conformance-prerelease/` (`VERSION scenario` lines). For
//! the fixture every scenario a runner runs is accounted for: a failure is
//! either expected to pass (a regression) or listed with its reason in
//! `out-of-scope-fixture-server.txt` (`VERSION scenario` in the pre-release
//! directory); a failure listed in neither fails too, so no scenario is
//! skipped silently.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The variable that picks one era of the fixture behind the transparent
/// gateway: `modern` or `legacy` (unset: both, one after the other).
const UPSTREAM_ERA_VARIABLE: &str = "MCP_CONFORMANCE_UPSTREAM_ERA";

/// An era the transparent gateway speaks to the fixture behind it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    /// The handshake era (`initialize`), `"era": "legacy"`.
    Legacy,
    /// The 2026-07-28 era, `"era": "modern"`.
    Modern,
}

impl Era {
    /// As the gateway's configuration file names it.
    fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// The eras of the fixture behind the transparent gateway to run, from
/// [`UPSTREAM_ERA_VARIABLE`].
fn upstream_eras() -> anyhow::Result<Vec<Era>> {
    match std::env::var(UPSTREAM_ERA_VARIABLE) {
        Err(std::env::VarError::NotPresent) => Ok(vec![Era::Legacy, Era::Modern]),
        Ok(value) if value == "modern" => Ok(vec![Era::Modern]),
        Ok(value) if value == "legacy" => Ok(vec![Era::Legacy]),
        Ok(value) => bail!("{UPSTREAM_ERA_VARIABLE} is `modern` or `legacy`, not `{value}`"),
        Err(error) => bail!("{UPSTREAM_ERA_VARIABLE}: {error}"),
    }
}

/// The variable that picks the transparent gateway's `--names`: `keep`
/// (the default), `plain` or `model`.
const GATEWAY_NAMES_VARIABLE: &str = "MCP_CONFORMANCE_GATEWAY_NAMES";

/// The transparent gateway's `--names`, from [`GATEWAY_NAMES_VARIABLE`].
fn gateway_names() -> anyhow::Result<&'static str> {
    match std::env::var(GATEWAY_NAMES_VARIABLE) {
        Err(std::env::VarError::NotPresent) => Ok("keep"),
        Ok(value) => match value.as_str() {
            "keep" => Ok("keep"),
            "plain" => Ok("plain"),
            "model" => Ok("model"),
            _ => bail!("{GATEWAY_NAMES_VARIABLE} is `keep`, `plain` or `model`, not `{value}`"),
        },
        Err(error) => bail!("{GATEWAY_NAMES_VARIABLE}: {error}"),
    }
}

/// The file, in each runner's directory, of the scenarios bound to an
/// upstream name, which the transparent gateway cannot pass with names
/// other than kept ones (see the module's documentation).
const NAME_BOUND_FILE: &str = "name-bound-server.txt";

/// The scenarios of `name-bound-server.txt` lines (`scenario NAME`).
fn name_bound(lines: &BTreeSet<String>) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The spec versions the pre-release runner's server scenarios run at.
const PRERELEASE_VERSIONS: [&str; 4] = ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The longest a whole suite may take.
const SUITE_TIMEOUT: Duration = Duration::from_secs(600);

/// A server the suites run against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// `mcpctl serve --http`, the demo server behind it.
    Gateway,
    /// `mcp-fixture-server --transport http`.
    Fixture,
    /// `mcpctl serve --http --names keep`, the fixture behind it spoken
    /// to in the era.
    GatewayFixture(Era),
}

impl Target {
    /// How the report names it.
    fn name(self) -> &'static str {
        match self {
            Target::Gateway => "mcpctl serve --http",
            Target::Fixture => "mcp-fixture-server",
            Target::GatewayFixture(Era::Legacy) => {
                "the transparent gateway (fixture behind, handshake era)"
            }
            Target::GatewayFixture(Era::Modern) => {
                "the transparent gateway (fixture behind, 2026-07-28 era)"
            }
        }
    }

    /// The file, in each runner's directory, of the scenarios that must pass.
    fn expected_file(self) -> &'static str {
        match self {
            Target::Gateway => "expected-pass-server.txt",
            Target::Fixture => "expected-pass-fixture-server.txt",
            Target::GatewayFixture(Era::Legacy) => "expected-pass-gateway-fixture-legacy.txt",
            Target::GatewayFixture(Era::Modern) => "expected-pass-gateway-fixture.txt",
        }
    }

    /// The file of the scenarios known to fail, each with its reason: every
    /// failure must be listed (the fixture only).
    fn out_of_scope_file(self) -> Option<&'static str> {
        match self {
            Target::Gateway | Target::GatewayFixture(_) => None,
            Target::Fixture => Some("out-of-scope-fixture-server.txt"),
        }
    }
}

/// Runs both runners' server suites against the gateway and the fixture;
/// returns how many expected passes failed (and, for the fixture, how many
/// failures no list accounts for).
pub(super) fn run(root: &Path) -> anyhow::Result<usize> {
    let mut regressions = 0;
    let names = gateway_names()?;
    let mut targets = vec![Target::Gateway, Target::Fixture];
    targets.extend(upstream_eras()?.into_iter().map(Target::GatewayFixture));
    for target in targets {
        let mut server = Server::start(root, target, names)?;
        // The suites alone, the server's build and start left out.
        let started = Instant::now();
        let result = run_suites(root, target, &server.url, names);
        server.stop();
        let upstream = match target {
            Target::GatewayFixture(_) => format!(", --names {names}"),
            _ => String::new(),
        };
        println!(
            "server conformance against {}{upstream}: the suites took {:.1} s",
            target.name(),
            started.elapsed().as_secs_f64()
        );
        regressions += result?;
    }
    Ok(regressions)
}

/// Runs both runners' suites against `target` at `url`; with the
/// transparent gateway in a mode other than kept `names`, the name-bound
/// scenarios are left out of what must pass.
fn run_suites(root: &Path, target: Target, url: &str, names: &str) -> anyhow::Result<usize> {
    let renamed = matches!(target, Target::GatewayFixture(_)) && names != "keep";
    let mut regressions = 0;
    let released = root.join("tests/conformance");
    let mut expected = read_list(&released.join(target.expected_file()))?;
    if renamed {
        let bound = name_bound(&read_list(&released.join(NAME_BOUND_FILE))?);
        expected.retain(|scenario| !bound.contains(scenario));
    }
    let out_of_scope = match target.out_of_scope_file() {
        Some(file) => Some(read_list(&released.join(file))?),
        None => None,
    };
    let passed = run_suite(&released, url, &[])?;
    regressions += report(
        target,
        "released",
        &expected,
        out_of_scope.as_ref(),
        &passed,
    );

    let prerelease = root.join("tests/conformance-prerelease");
    let lines = read_list(&prerelease.join(target.expected_file()))?;
    let bound_lines = if renamed {
        read_list(&prerelease.join(NAME_BOUND_FILE))?
    } else {
        BTreeSet::new()
    };
    let scope_lines = match target.out_of_scope_file() {
        Some(file) => Some(read_list(&prerelease.join(file))?),
        None => None,
    };
    for version in PRERELEASE_VERSIONS {
        let bound = name_bound(&of_version(&bound_lines, version));
        let mut expected = of_version(&lines, version);
        expected.retain(|scenario| !bound.contains(scenario));
        let out_of_scope = scope_lines.as_ref().map(|l| of_version(l, version));
        let passed = run_suite(
            &prerelease,
            url,
            &["--suite", "all", "--spec-version", version],
        )?;
        regressions += report(
            target,
            &format!("pre-release {version}"),
            &expected,
            out_of_scope.as_ref(),
            &passed,
        );
    }
    Ok(regressions)
}

/// The scenarios of `VERSION scenario` lines that name `version`.
fn of_version(lines: &BTreeSet<String>, version: &str) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|line| line.strip_prefix(version)?.strip_prefix(' '))
        .map(str::to_owned)
        .collect()
}

/// Prints a suite's outcome against its lists; the number of expected
/// passes that failed, plus, when there is an out-of-scope list, the
/// failures it does not name.
fn report(
    target: Target,
    column: &str,
    expected: &BTreeSet<String>,
    out_of_scope: Option<&BTreeSet<String>>,
    outcome: &SuiteOutcome,
) -> usize {
    let passed = &outcome.passed;
    let failed: Vec<&String> = expected.difference(passed).collect();
    let more: Vec<&String> = passed.difference(expected).collect();
    println!(
        "server conformance ({column}) against {}: {}/{} pass: {}",
        target.name(),
        passed.len(),
        outcome.ran.len(),
        passed.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    if !more.is_empty() {
        println!(
            "  also passing, not in {}: {}",
            target.expected_file(),
            more.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for scenario in &failed {
        println!("  FAIL (expected to pass): {scenario}");
    }
    let mut unaccounted = 0;
    if let (Some(out_of_scope), Some(file)) = (out_of_scope, target.out_of_scope_file()) {
        for scenario in outcome.ran.difference(passed) {
            if !expected.contains(scenario) && !out_of_scope.contains(scenario) {
                println!(
                    "  FAIL (in neither {} nor {file}): {scenario}",
                    target.expected_file()
                );
                unaccounted += 1;
            }
        }
    }
    failed.len() + unaccounted
}

/// What one suite run did: every scenario it reported, and those passed.
struct SuiteOutcome {
    ran: BTreeSet<String>,
    passed: BTreeSet<String>,
}

/// Runs one runner's server suite.
fn run_suite(dir: &Path, url: &str, extra: &[&str]) -> anyhow::Result<SuiteOutcome> {
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
    let started = Instant::now();
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
    if !text.contains("=== SUMMARY ===") {
        bail!(
            "the server suite ({}) printed no summary:\n{text}",
            extra.join(" ")
        );
    }
    Ok(SuiteOutcome {
        ran: text.lines().filter_map(reported_scenario).collect(),
        passed: text.lines().filter_map(passed_scenario).collect(),
    })
}

/// A summary line `✓ name: ...` or `✗ name: ...`: the scenario.
fn reported_scenario(line: &str) -> Option<String> {
    let line = line.trim();
    let rest = line
        .strip_prefix("✓ ")
        .or_else(|| line.strip_prefix("✗ "))?;
    let (name, counts) = rest.split_once(": ")?;
    counts.contains(" passed, ").then(|| name.to_owned())
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

fn tempfile_dir(prefix: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// A running server under test, with the URL the suites get.
struct Server {
    child: Child,
    url: String,
    /// The gateway's home, removed once it stopped.
    home: Option<PathBuf>,
    /// The server behind it, stopped after it.
    upstream: Option<Box<Server>>,
}

impl Server {
    /// Builds and starts `target` (the fixture behind the transparent
    /// gateway in its era, with `--names names`), and reads the URL it
    /// prints once ready.
    fn start(root: &Path, target: Target, names: &str) -> anyhow::Result<Server> {
        match target {
            Target::Gateway => {
                let mcpctl = super::build_bin(root, "mcp-cli", "mcpctl")?;
                let home = tempfile_dir("mcp-conformance-server")?;
                let server = Server::gateway(&mcpctl, &home);
                if server.is_err() {
                    let _ = std::fs::remove_dir_all(&home);
                }
                server
            }
            Target::Fixture => {
                let fixture = super::build_bin(root, "tests", "mcp-fixture-server")?;
                Server::fixture(&fixture)
            }
            Target::GatewayFixture(era) => {
                let mcpctl = super::build_bin(root, "mcp-cli", "mcpctl")?;
                let fixture = super::build_bin(root, "tests", "mcp-fixture-server")?;
                let fixture_era = match era {
                    Era::Legacy => &["--era", "legacy"][..],
                    Era::Modern => &[][..],
                };
                let mut upstream = Server::fixture_with(&fixture, fixture_era)?;
                let home = tempfile_dir("mcp-conformance-gateway-fixture")?;
                match Server::gateway_fixture(&mcpctl, &upstream.url, &home, era, names) {
                    Ok(mut server) => {
                        server.upstream = Some(Box::new(upstream));
                        Ok(server)
                    }
                    Err(error) => {
                        let _ = std::fs::remove_dir_all(&home);
                        upstream.stop();
                        Err(error)
                    }
                }
            }
        }
    }

    /// `mcpctl serve --http` with `home` as its whole environment's home
    /// and data directory, at the URL-only endpoint it prints.
    fn gateway(mcpctl: &Path, home: &Path) -> anyhow::Result<Server> {
        Server::gateway_with(mcpctl, home, &[])
    }

    /// `mcpctl serve --http --names NAMES` with the fixture at `fixture`
    /// (its Streamable HTTP endpoint; `--reference-catalog`) as its one
    /// server, spoken to in `era` (see the module's documentation), from a
    /// configuration file in `home`.
    fn gateway_fixture(
        mcpctl: &Path,
        fixture: &str,
        home: &Path,
        era: Era,
        names: &str,
    ) -> anyhow::Result<Server> {
        let config = home.join("servers.json");
        let servers = serde_json::json!({"mcpServers": {"fixture": {
            "url": fixture,
            "era": era.name(),
        }}});
        std::fs::write(&config, servers.to_string())
            .with_context(|| format!("writing {}", config.display()))?;
        let config = config.display().to_string();
        Server::gateway_with(mcpctl, home, &["--config", &config, "--names", names])
    }

    /// `mcpctl serve --http` with `extra` (`--config FILE` goes before
    /// the command, the rest after it), as [`Server::gateway`] says.
    fn gateway_with(mcpctl: &Path, home: &Path, extra: &[&str]) -> anyhow::Result<Server> {
        let (global, serve) = match extra {
            ["--config", file, rest @ ..] => (vec!["--config", *file], rest),
            rest => (Vec::new(), rest),
        };
        let child = Command::new(mcpctl)
            .args(["--no-project", "--no-host-configs"])
            .args(global)
            .args(["serve", "--http"])
            .args(serve)
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
        let url = |line: &str| Some(line.split("takes only a URL: ").nth(1)?.trim().to_owned());
        Server::read_url(child, "mcpctl serve --http", url).map(|mut server| {
            server.home = Some(home.to_owned());
            server
        })
    }

    /// `mcp-fixture-server --transport http --reference-catalog` (the
    /// suites' tools, resources and prompts beside its own) on a free port,
    /// at the endpoint its first line names (`listening on URL`).
    fn fixture(fixture: &Path) -> anyhow::Result<Server> {
        Server::fixture_with(fixture, &[])
    }

    /// [`Server::fixture`] with `extra` arguments.
    fn fixture_with(fixture: &Path, extra: &[&str]) -> anyhow::Result<Server> {
        let child = Command::new(fixture)
            .args(["--transport", "http", "--reference-catalog"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("could not start {}", fixture.display()))?;
        let url = |line: &str| Some(line.strip_prefix("listening on ")?.trim().to_owned());
        Server::read_url(child, "mcp-fixture-server", url)
    }

    /// Reads `child`'s stdout until `url` finds the URL in a line.
    fn read_url(
        mut child: Child,
        name: &str,
        url: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Server> {
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{name}'s stdout was not captured");
        };
        let mut found = None;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(u) = url(&line) {
                found = Some(u);
                break;
            }
        }
        let Some(url) = found else {
            // Our own child, by its handle.
            let _ = child.kill();
            let _ = child.wait();
            bail!("{name} ended without printing its URL");
        };
        Ok(Server {
            child,
            url,
            home: None,
            upstream: None,
        })
    }

    /// SIGTERM (mcpctl closes the demo server and exits; the fixture
    /// exits), by its pid.
    fn stop(&mut self) {
        let stopped = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if let Some(home) = self.home.take() {
            let _ = std::fs::remove_dir_all(home);
        }
        if let Some(mut upstream) = self.upstream.take() {
            upstream.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{passed_scenario, reported_scenario};

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

    #[test]
    fn every_summary_line_names_a_scenario_run() {
        assert_eq!(
            reported_scenario("  ✗ tools-call-image: 0 passed, 1 failed").as_deref(),
            Some("tools-call-image")
        );
        assert_eq!(
            reported_scenario("✓ server-sse-polling: 0 passed, 0 failed").as_deref(),
            Some("server-sse-polling")
        );
        assert_eq!(reported_scenario("Total: 3 passed, 0 failed"), None);
        assert_eq!(reported_scenario("✓ checked the session id"), None);
    }
}

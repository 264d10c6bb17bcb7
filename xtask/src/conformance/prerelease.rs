//! The pre-release conformance runner (`@modelcontextprotocol/conformance@0.2.0-alpha.12`).
//!
//! Installed from `tests/conformance-prerelease/package-lock.json`. Its
//! client scenarios say which spec versions they apply to (`conformance list
//! --client` prints `  - name [v1,v2]`); each runs by itself once per
//! version with `--spec-version <v>`, two at a time (every mock server binds
//! a port of its own). Scenarios of an extension (`[extension]`) apply to no
//! spec version: they run once without `--spec-version`, at the runner's
//! default wire, in the `extension` column.
//!
//! `expected-pass-<column>.txt` lists what must pass in each column; any
//! other failure is a known one, and
//! `out-of-scope.txt` names the scenarios not worked on for now.
//! The result is a table scenario × column and the totals per column.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};

use super::{Outcome, install, run_scenario};

/// The column of the scenarios that belong to an extension, not a spec version.
const EXTENSION: &str = "extension";

/// How many scenarios run at once.
const PARALLEL: usize = 2;

/// One client scenario and the columns it applies to.
struct Scenario {
    name: String,
    columns: Vec<String>,
}

/// One run of the matrix: a scenario in a column.
struct Job<'a> {
    scenario: &'a str,
    column: &'a str,
}

/// Runs the pre-release matrix and returns how many expected passes failed.
pub(super) fn run(root: &Path, client: &Path) -> anyhow::Result<usize> {
    let dir = root.join("tests/conformance-prerelease");
    install(&dir)?;
    let node = dir.join("node_modules/node/bin/node");
    let runner = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let scenarios = list_scenarios(&node, &runner)?;
    let columns = columns(&scenarios);
    let out_of_scope = read_list(&dir.join("out-of-scope.txt"))?;
    for name in &out_of_scope {
        if !scenarios.iter().any(|s| &s.name == name) {
            bail!("out-of-scope.txt names `{name}`, which the pre-release runner does not know");
        }
    }
    let mut expected = BTreeMap::new();
    for column in &columns {
        let file = format!("expected-pass-{column}.txt");
        let names = read_list(&dir.join(&file))?;
        for name in &names {
            let applies = scenarios
                .iter()
                .any(|s| &s.name == name && s.columns.contains(column));
            if !applies {
                bail!(
                    "{file} names `{name}`, which the pre-release runner does not run at {column}"
                );
            }
            if out_of_scope.contains(name) {
                bail!("{file} names `{name}`, which out-of-scope.txt lists too");
            }
        }
        expected.insert(column.clone(), names);
    }

    let jobs: Vec<Job<'_>> = columns
        .iter()
        .flat_map(|column| {
            scenarios
                .iter()
                .filter(move |s| s.columns.contains(column))
                .map(move |s| Job {
                    scenario: &s.name,
                    column,
                })
        })
        .collect();
    println!(
        "pre-release conformance: {} runs ({} scenarios × {}), {PARALLEL} at a time",
        jobs.len(),
        scenarios.len(),
        columns.join(", ")
    );
    let started = Instant::now();
    let outcomes = run_jobs(&node, &runner, client, &jobs, &expected)?;
    let elapsed = started.elapsed();

    let mut results: BTreeMap<(&str, &str), &Outcome> = BTreeMap::new();
    for (job, outcome) in jobs.iter().zip(&outcomes) {
        results.insert((job.scenario, job.column), outcome);
    }
    print_table(&scenarios, &columns, &results, &expected);

    let mut regressions = 0;
    for column in &columns {
        let must = &expected[column];
        let ran: Vec<&Scenario> = scenarios
            .iter()
            .filter(|s| s.columns.contains(column))
            .collect();
        let passed: Vec<&str> = ran
            .iter()
            .filter(|s| results[&(s.name.as_str(), column.as_str())].passed)
            .map(|s| s.name.as_str())
            .collect();
        let failed_expected: Vec<&str> = must
            .iter()
            .filter(|n| !passed.contains(&n.as_str()))
            .map(String::as_str)
            .collect();
        let known: Vec<String> = ran
            .iter()
            .filter(|s| !passed.contains(&s.name.as_str()) && !must.contains(&s.name))
            .map(|s| {
                if out_of_scope.contains(&s.name) {
                    format!("{} (out of scope)", s.name)
                } else {
                    s.name.clone()
                }
            })
            .collect();
        let new_passes: Vec<&str> = passed
            .iter()
            .filter(|n| !must.iter().any(|m| m == *n))
            .copied()
            .collect();
        println!(
            "pre-release {column}: {} of {} pass; {} of {} expected passes failed",
            passed.len(),
            ran.len(),
            failed_expected.len(),
            must.len()
        );
        if !failed_expected.is_empty() {
            println!("  REGRESSIONS: {}", failed_expected.join(", "));
        }
        if !known.is_empty() {
            println!("  expected failures: {}", known.join(", "));
        }
        if !new_passes.is_empty() {
            println!(
                "  passing, not yet in expected-pass-{column}.txt (add them): {}",
                new_passes.join(", ")
            );
        }
        regressions += failed_expected.len();
    }
    println!(
        "pre-release conformance: {} runs in {:.0?}, {regressions} regression(s)",
        jobs.len(),
        elapsed
    );
    Ok(regressions)
}

/// Runs the jobs `PARALLEL` at a time, printing each verdict as it comes.
fn run_jobs(
    node: &Path,
    runner: &Path,
    client: &Path,
    jobs: &[Job<'_>],
    expected: &BTreeMap<String, Vec<String>>,
) -> anyhow::Result<Vec<Outcome>> {
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<Outcome>>> =
        Mutex::new(std::iter::repeat_with(|| None).take(jobs.len()).collect());
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..PARALLEL)
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(index) else {
                            return Ok(());
                        };
                        let extra: &[&str] = if job.column == EXTENSION {
                            &[]
                        } else {
                            &["--spec-version", job.column]
                        };
                        let outcome = run_scenario(node, runner, client, job.scenario, extra)?;
                        let must = expected[job.column].iter().any(|n| n == job.scenario);
                        let verdict = match (outcome.passed, must) {
                            (true, true) => "pass",
                            (false, true) => "FAIL",
                            (true, false) => "pass (not yet expected)",
                            (false, false) => "fail (expected)",
                        };
                        println!(
                            "conformance-prerelease [{}] {}: {verdict} — {}",
                            job.column, job.scenario, outcome.summary
                        );
                        outcomes.lock().expect("no worker panics")[index] = Some(outcome);
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("a conformance worker panicked")?;
        }
        anyhow::Ok(())
    })?;
    Ok(outcomes
        .into_inner()
        .expect("no worker panics")
        .into_iter()
        .map(|o| o.expect("every job ran"))
        .collect())
}

/// Prints the scenario × column table: `pass`, `fail` (expected), `FAIL`
/// (an expected pass failed), `pass*` (passes, not yet expected), `-` (the
/// scenario does not apply there).
fn print_table(
    scenarios: &[Scenario],
    columns: &[String],
    results: &BTreeMap<(&str, &str), &Outcome>,
    expected: &BTreeMap<String, Vec<String>>,
) {
    let width = scenarios.iter().map(|s| s.name.len()).max().unwrap_or(8);
    let cell = columns.iter().map(String::len).max().unwrap_or(10);
    let mut header = format!("{:width$}", "scenario");
    for column in columns {
        header.push_str(&format!("  {column:cell$}"));
    }
    println!("\n{header}");
    for scenario in scenarios {
        let mut line = format!("{:width$}", scenario.name);
        for column in columns {
            let text = match results.get(&(scenario.name.as_str(), column.as_str())) {
                None => "-",
                Some(outcome) => {
                    let must = expected[column].contains(&scenario.name);
                    match (outcome.passed, must) {
                        (true, true) => "pass",
                        (true, false) => "pass*",
                        (false, true) => "FAIL",
                        (false, false) => "fail",
                    }
                }
            };
            line.push_str(&format!("  {text:cell$}"));
        }
        println!("{line}");
    }
    let mut totals = format!("{:width$}", "passed / applicable");
    for column in columns {
        let ran = results.keys().filter(|(_, c)| c == column).count();
        let passed = results
            .iter()
            .filter(|((_, c), o)| c == column && o.passed)
            .count();
        totals.push_str(&format!("  {:cell$}", format!("{passed}/{ran}")));
    }
    println!("{totals}");
    println!(
        "(fail: a known failure; FAIL: an expected pass failed; pass*: passes, not yet expected; -: not applicable)\n"
    );
}

/// The client scenarios and their columns, from `conformance list --client`.
fn list_scenarios(node: &Path, runner: &Path) -> anyhow::Result<Vec<Scenario>> {
    let output = std::process::Command::new(node)
        .arg(runner)
        .args(["list", "--client"])
        .output()
        .with_context(|| format!("could not run {}", node.display()))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let scenarios: Vec<Scenario> = text.lines().filter_map(parse_scenario).collect();
    if scenarios.is_empty() {
        bail!("the pre-release conformance runner listed no client scenarios:\n{text}");
    }
    Ok(scenarios)
}

/// Parses `  - name [v1,v2]`; a scenario without versions applies nowhere.
fn parse_scenario(line: &str) -> Option<Scenario> {
    let rest = line.trim().strip_prefix("- ")?;
    let (name, versions) = match rest.split_once(' ') {
        Some((name, versions)) => (name, versions.trim()),
        None => (rest, ""),
    };
    let columns = versions
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some(Scenario {
        name: name.to_owned(),
        columns,
    })
}

/// The spec versions in date order, then `extension` if any scenario has it.
fn columns(scenarios: &[Scenario]) -> Vec<String> {
    let mut versions: Vec<String> = scenarios
        .iter()
        .flat_map(|s| s.columns.iter())
        .filter(|c| c.as_str() != EXTENSION)
        .cloned()
        .collect();
    versions.sort();
    versions.dedup();
    if scenarios
        .iter()
        .any(|s| s.columns.iter().any(|c| c == EXTENSION))
    {
        versions.push(EXTENSION.to_owned());
    }
    versions
}

/// A list file: one scenario a line, `#` comments and blank lines ignored.
/// The lines of a list file, without comments and blank lines.
pub(super) fn read_list(path: &Path) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{columns, parse_scenario};

    #[test]
    fn reads_the_scenario_list() {
        let s = parse_scenario("  - tools_call [2025-06-18,2025-11-25,2026-07-28]").unwrap();
        assert_eq!(s.name, "tools_call");
        assert_eq!(s.columns, ["2025-06-18", "2025-11-25", "2026-07-28"]);
        let s = parse_scenario("  - auth/dpop [extension]").unwrap();
        assert_eq!(s.columns, ["extension"]);
        assert!(parse_scenario("  - bare").unwrap().columns.is_empty());
        assert!(parse_scenario("Client scenarios (test against a client):").is_none());
        let all = [
            parse_scenario("- a [2026-07-28]").unwrap(),
            parse_scenario("- b [extension]").unwrap(),
            parse_scenario("- c [2025-03-26,2025-11-25]").unwrap(),
        ];
        assert_eq!(
            columns(&all),
            ["2025-03-26", "2025-11-25", "2026-07-28", "extension"]
        );
    }
}

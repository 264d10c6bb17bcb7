//! `cargo xtask fuzz`: every cargo-fuzz target in `fuzz/` on nightly, each replaying its corpus first, with a figures table at the end.
//!
//! Not part of CI: a fuzzing run is open-ended and needs nightly and
//! cargo-fuzz, which CI does not install. For each target it first replays
//! `fuzz/corpus/<target>` (the committed seeds, plus whatever earlier local
//! runs added) and then fuzzes for `--time` seconds or `--runs` inputs.
//! The targets are built without a sanitizer: the workspace forbids
//! `unsafe`, so what the targets look for is panics and broken assertions,
//! and an uninstrumented build runs them several times faster.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::display;

const USAGE: &str = "usage: cargo xtask fuzz [--time SECONDS | --runs N] [--target NAME]";

/// How long each target fuzzes when neither `--time` nor `--runs` is given.
const DEFAULT_SECONDS: u64 = 60;

/// When a target's fuzzing stops.
enum Budget {
    Seconds(u64),
    Runs(u64),
}

/// What one target's run came to, from libFuzzer's final statistics.
struct Figures {
    target: String,
    executions: Option<u64>,
    per_second: Option<u64>,
    crashed: bool,
}

pub(crate) fn run(root: &Path, rest: &[String]) -> anyhow::Result<()> {
    let (budget, only) = parse(rest)?;
    let fuzz_dir = root.join("fuzz");
    check_tools(&fuzz_dir)?;
    let all = list_targets(&fuzz_dir)?;
    let targets: Vec<String> = match only {
        Some(name) if all.contains(&name) => vec![name],
        Some(name) => bail!(
            "no fuzz target `{name}`; the targets are {}",
            all.join(", ")
        ),
        None => all,
    };
    let mut figures = Vec::new();
    for target in &targets {
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus)
            .with_context(|| format!("could not create {}", corpus.display()))?;
        println!("fuzz: {target}: replaying {}", corpus.display());
        let replay = libfuzzer(&fuzz_dir, target, &["-runs=0".to_owned()], &corpus)?;
        if replay.crashed {
            figures.push(replay);
            continue;
        }
        let limit = match budget {
            Budget::Seconds(seconds) => format!("-max_total_time={seconds}"),
            Budget::Runs(runs) => format!("-runs={runs}"),
        };
        println!("fuzz: {target}: fuzzing ({limit})");
        figures.push(libfuzzer(&fuzz_dir, target, &[limit], &corpus)?);
    }
    println!();
    println!("| target | executions | exec/s | crashes |");
    println!("|---|---|---|---|");
    for f in &figures {
        let show = |n: Option<u64>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
        println!(
            "| {} | {} | {} | {} |",
            f.target,
            show(f.executions),
            show(f.per_second),
            u8::from(f.crashed)
        );
    }
    let crashed: Vec<&str> = figures
        .iter()
        .filter(|f| f.crashed)
        .map(|f| f.target.as_str())
        .collect();
    if !crashed.is_empty() {
        bail!(
            "fuzz targets failed: {} (the inputs are under fuzz/artifacts/<target>/)",
            crashed.join(", ")
        );
    }
    Ok(())
}

fn parse(rest: &[String]) -> anyhow::Result<(Budget, Option<String>)> {
    let mut budget = None;
    let mut target = None;
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .with_context(|| format!("`{arg}` needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--time" | "--runs" if budget.is_some() => {
                bail!("give one of --time and --runs\n{USAGE}")
            }
            "--time" => budget = Some(Budget::Seconds(number(arg, value()?)?)),
            "--runs" => budget = Some(Budget::Runs(number(arg, value()?)?)),
            "--target" => target = Some(value()?.clone()),
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    Ok((budget.unwrap_or(Budget::Seconds(DEFAULT_SECONDS)), target))
}

fn number(option: &str, value: &str) -> anyhow::Result<u64> {
    match value.parse() {
        Ok(n) if n > 0 => Ok(n),
        _ => bail!("`{option}` takes a positive whole number, got `{value}`\n{USAGE}"),
    }
}

/// `cargo +nightly <args>` in the fuzz workspace, through the rustup proxy
/// (the cargo that runs xtask is a stable one and knows no `+nightly`).
fn nightly_cargo(fuzz_dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("cargo");
    command
        .arg("+nightly")
        .args(args)
        .current_dir(fuzz_dir)
        // Set by the proxy for xtask's own toolchain, and the main
        // workspace's target directory: neither belongs to the fuzz build.
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO_TARGET_DIR");
    command
}

fn check_tools(fuzz_dir: &Path) -> anyhow::Result<()> {
    let toolchains = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .context("could not run `rustup toolchain list`: fuzzing needs rustup and nightly")?;
    let listed = String::from_utf8_lossy(&toolchains.stdout);
    if !listed.lines().any(|line| line.starts_with("nightly")) {
        bail!("fuzzing needs the nightly toolchain: rustup toolchain install nightly");
    }
    let version = nightly_cargo(fuzz_dir, &["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("could not run `cargo +nightly fuzz --version`")?;
    if !version.success() {
        bail!("cargo-fuzz is missing: cargo install cargo-fuzz");
    }
    Ok(())
}

fn list_targets(fuzz_dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut command = nightly_cargo(fuzz_dir, &["fuzz", "list"]);
    let output = command
        .output()
        .with_context(|| format!("could not run `{}`", display(&command)))?;
    if !output.status.success() {
        bail!(
            "`{}` failed: {}",
            display(&command),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let targets: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if targets.is_empty() {
        bail!("`{}` lists no targets", display(&command));
    }
    Ok(targets)
}

/// Runs one target under libFuzzer with `options`, passing its output
/// through and reading the final statistics from it.
fn libfuzzer(
    fuzz_dir: &Path,
    target: &str,
    options: &[String],
    corpus: &Path,
) -> anyhow::Result<Figures> {
    let corpus = corpus.to_string_lossy();
    let mut args = vec!["fuzz", "run", "--sanitizer", "none", target, &*corpus, "--"];
    args.push("-print_final_stats=1");
    args.extend(options.iter().map(String::as_str));
    let mut command = nightly_cargo(fuzz_dir, &args);
    let mut child = command
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("could not start `{}`", display(&command)))?;
    let mut figures = Figures {
        target: target.to_owned(),
        executions: None,
        per_second: None,
        crashed: false,
    };
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines() {
            let line = line.context("reading the fuzzer's output")?;
            eprintln!("{line}");
            let stat = |name: &str| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.trim().parse::<u64>().ok())
            };
            if let Some(n) = stat("stat::number_of_executed_units:") {
                figures.executions = Some(n);
            }
            if let Some(n) = stat("stat::average_exec_per_sec:") {
                figures.per_second = Some(n);
            }
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for `{}`", display(&command)))?;
    figures.crashed = !status.success();
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_parse_and_bad_ones_say_why() {
        let (budget, target) = parse(&args(&["--runs", "10", "--target", "frame"])).unwrap();
        assert!(matches!(budget, Budget::Runs(10)));
        assert_eq!(target.as_deref(), Some("frame"));
        let (budget, target) = parse(&[]).unwrap();
        assert!(matches!(budget, Budget::Seconds(DEFAULT_SECONDS)));
        assert_eq!(target, None);
        let error = parse(&args(&["--time", "0"])).err().unwrap().to_string();
        assert!(error.contains("positive whole number"), "{error}");
        let error = parse(&args(&["--time", "5", "--runs", "5"]))
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("one of --time and --runs"), "{error}");
        let error = parse(&args(&["--target"])).err().unwrap().to_string();
        assert!(error.contains("needs a value"), "{error}");
    }
}

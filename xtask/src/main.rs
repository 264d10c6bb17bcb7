//! `cargo xtask`: repository automation (CI, tidy checks, benchmarks, fuzzing).
//!
//! Subcommands are parsed by hand: there are few of them and none has
//! options of its own, so a dependency on an argument parser would cost more
//! than it saves. Every subcommand runs from the workspace root, wherever it was
//! invoked from.

mod api;
mod bench;
mod ci;
mod conformance;
mod fresh;
mod fuzz;
mod tidy;
mod tidy_source;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci            fmt check, clippy, tidy, tests, conformance: what CI runs (see .ci/run)
  tidy          repository policy only: crate layering, module docs, no dbg!/todo!
  api           the libraries' public API against api/*.txt [--bless: rewrite them]
  fresh         the libraries checked in a copy resolved afresh (`cargo update`), warnings denied
  bench         our client vs rmcp, the TypeScript SDK and a raw floor [--quick] [--rounds N]
                [--instructions: instructions per operation of the Rust clients, by callgrind]
  bench-proto   cargo bench -p mcp-proto --bench decode [-- <bench args>]
  conformance   the official MCP conformance suites (needs npm): client scenarios against
                mcp-conformance-client, server scenarios against mcpctl serve --http and
                mcp-fixture-server [--server: the server scenarios only]
                (MCP_CONFORMANCE_UPSTREAM_ERA=modern|legacy: the era of the fixture behind
                the transparent gateway; modern by default)
  fuzz          every cargo-fuzz target on nightly, corpus replayed first; not in CI
                [--time SECONDS | --runs N] [--target NAME] (needs cargo-fuzz)
  help          print this message
";

fn main() -> ExitCode {
    // Printed here rather than by returning the error from `main`, so that a
    // failure shows its message chain without a backtrace in the way.
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    let root = project_root();
    match command.as_deref() {
        Some("ci") => {
            no_arguments("ci", &rest)?;
            ci::run(&root)
        }
        Some("tidy") => {
            no_arguments("tidy", &rest)?;
            tidy_command(&root)
        }
        Some("api") => match rest.as_slice() {
            [] => api::run(&root, api::Mode::Check),
            [flag] if flag == "--bless" => api::run(&root, api::Mode::Bless),
            _ => bail!("`api` takes only `--bless`, got {rest:?}\n\n{USAGE}"),
        },
        Some("fresh") => {
            no_arguments("fresh", &rest)?;
            fresh::run(&root)
        }
        Some("bench") => bench::run(&root, &rest),
        Some("bench-proto") => bench_proto(&root, &rest),
        Some("conformance") => match rest.as_slice() {
            [] => conformance::run(&root),
            [flag] if flag == "--server" => conformance::run_servers(&root),
            _ => bail!("`conformance` takes only `--server`, got {rest:?}\n\n{USAGE}"),
        },
        Some("fuzz") => fuzz::run(&root, &rest),
        Some("help" | "-h" | "--help") => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{USAGE}"),
        None => bail!("no command given\n\n{USAGE}"),
    }
}

/// The workspace root: xtask's own manifest sits one level below it.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one directory below the workspace root")
        .to_path_buf()
}

fn no_arguments(command: &str, rest: &[String]) -> anyhow::Result<()> {
    if rest.is_empty() {
        Ok(())
    } else {
        bail!("`{command}` takes no arguments, got {rest:?}\n\n{USAGE}")
    }
}

fn tidy_command(root: &Path) -> anyhow::Result<()> {
    let problems = tidy::check(root)?;
    tidy::report(&problems)
}

/// Runs the mcp-proto decode micro-benchmark. Extra arguments go to the bench
/// harness, after cargo's `--`.
fn bench_proto(root: &Path, rest: &[String]) -> anyhow::Result<()> {
    let rest = match rest.first().map(String::as_str) {
        Some("--") => &rest[1..],
        _ => rest,
    };
    let mut args = vec!["bench", "-p", "mcp-proto", "--bench", "decode"];
    if !rest.is_empty() {
        args.push("--");
        args.extend(rest.iter().map(String::as_str));
    }
    let mut command = cargo(root, &args);
    let status = command
        .status()
        .with_context(|| format!("could not start `{}`", display(&command)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", display(&command));
    }
    Ok(())
}

/// A `cargo` command run in `root`, with the same cargo that runs xtask.
pub(crate) fn cargo(root: &Path, args: &[&str]) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(cargo);
    command.args(args).current_dir(root);
    command
}

/// A command as a person would type it: `cargo` rather than cargo's full path.
pub(crate) fn display(command: &Command) -> String {
    let program = Path::new(command.get_program())
        .file_name()
        .unwrap_or(command.get_program())
        .to_string_lossy()
        .into_owned();
    command
        .get_args()
        .map(|arg| arg.to_string_lossy())
        .fold(program, |line, arg| line + " " + &arg)
}

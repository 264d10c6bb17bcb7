//! `cargo xtask ci`: every check CI runs, in order, stopping at the first failure.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, bail};

use crate::{cargo, display, tidy};

/// One step of the CI run.
struct Step {
    name: &'static str,
    action: Action,
}

enum Action {
    /// `cargo` with these arguments, run from the workspace root.
    Cargo(&'static [&'static str]),
    /// `cargo` with these arguments and these environment variables, its
    /// stderr echoed as it comes and searched: any line that starts with
    /// `warning:` fails the step, even when cargo itself succeeds.
    CargoWithoutWarnings(
        &'static [&'static str],
        &'static [(&'static str, &'static str)],
    ),
    /// The tidy check, run in-process.
    Tidy,
    /// The official conformance suite (`cargo xtask conformance`).
    Conformance,
    /// The libraries' public API against `api/` (`cargo xtask api`).
    Api,
    /// The libraries checked in a copy resolved afresh (`cargo xtask fresh`).
    Fresh,
}

/// The steps in the order they run.
///
/// Tidy runs before the tests, although it is also a `#[test]` there: it is
/// cheap, so a policy breach fails fast. The conformance suite runs last and
/// ends the log with its `conformance: N passed, M failed` line.
const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        action: Action::Cargo(&["fmt", "--all", "--", "--check"]),
    },
    Step {
        name: "clippy",
        action: Action::Cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ]),
    },
    // Every feature of every library on its own (and none, and all), as a
    // host that picks one builds it: a feature that needs another must
    // imply it. Without dev-dependencies, which would turn features on;
    // clippy rather than check, so that a warning only one combination
    // shows (an import only `http` uses) fails too. cargo-hack is installed
    // by `.ci/run`.
    Step {
        name: "features",
        action: Action::Cargo(&[
            "hack",
            "clippy",
            "--each-feature",
            "--no-dev-deps",
            "-p",
            "mcp-proto",
            "-p",
            "mcp-transport",
            "-p",
            "mcp-config",
            "-p",
            "mcp-client-oauth",
            "-p",
            "mcp-manager",
            "-p",
            "mcp-toolbridge",
            "--",
            "-D",
            "warnings",
        ]),
    },
    Step {
        name: "tidy",
        action: Action::Tidy,
    },
    Step {
        name: "api",
        action: Action::Api,
    },
    Step {
        name: "test",
        action: Action::Cargo(&["test", "--workspace", "--all-features"]),
    },
    // The workspace's tests run with serde_json's `preserve_order` on
    // (mcpctl turns it on, and features unify). The libraries whose output
    // has an order of its own run again without it, as a host that does not
    // turn it on builds them.
    Step {
        name: "test-without-preserve-order",
        action: Action::Cargo(&[
            "test",
            "--all-features",
            "-p",
            "mcp-proto",
            "-p",
            "mcp-config",
            "-p",
            "mcp-toolbridge",
        ]),
    },
    // Every library as crates.io would receive it, in dependency order:
    // each `.crate` is built from its packaged files alone, against its
    // siblings' packages (cargo 1.90 and later resolve unpublished siblings
    // through a local overlay of the packages just made).
    //
    // `cargo package` rather than `cargo publish --dry-run`: the dry run
    // also asks crates.io whether each version is already there, which is
    // not this check's business, and prints `warning: aborting upload due
    // to dry run` for every crate. The libraries are named rather than
    // `--workspace`, which would also package mcp-cli, tests and xtask
    // (`publish = false` does not stop `cargo package`), and a new member
    // is a decision here. Cargo warns about missing metadata (description,
    // license, documentation) and about files a target needs that the
    // package leaves out, hence the warning check. `--allow-dirty`: what is
    // checked is the packages' contents, so a run before committing checks
    // the files as they are.
    Step {
        name: "package",
        action: Action::CargoWithoutWarnings(
            &[
                "package",
                "--locked",
                "--allow-dirty",
                "-p",
                "mcp-proto",
                "-p",
                "mcp-transport",
                "-p",
                "mcp-config",
                "-p",
                "mcp-client-oauth",
                "-p",
                "mcp-manager",
                "-p",
                "mcp-toolbridge",
            ],
            // The packages are built as workspaces of their own, without
            // this one's `[profile.dev]`: the same line tables only keep
            // their builds as small on CI's disk as the other steps'.
            &[("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")],
        ),
    },
    // The documentation as docs.rs builds it: every feature, `--cfg docsrs`
    // (each library's `#[doc(cfg(...))]` marks), and no warning (broken
    // intra-doc links above all). `doc_cfg` is a nightly feature; rather
    // than a second toolchain, `RUSTC_BOOTSTRAP` lets this stable rustdoc
    // accept it for the six libraries alone (a list of crate names, not
    // `1`), so no dependency's build script sees a nightly compiler and
    // changes what it builds.
    Step {
        name: "doc",
        action: Action::CargoWithoutWarnings(
            &["doc", "--workspace", "--no-deps", "--all-features"],
            &[
                ("RUSTDOCFLAGS", "-Dwarnings --cfg docsrs"),
                (
                    "RUSTC_BOOTSTRAP",
                    "mcp_proto,mcp_transport,mcp_config,mcp_client_oauth,mcp_manager,mcp_toolbridge",
                ),
            ],
        ),
    },
    // What a downstream project's first build sees: the newest compatible
    // release of every dependency, not this lockfile's.
    Step {
        name: "fresh",
        action: Action::Fresh,
    },
    Step {
        name: "conformance",
        action: Action::Conformance,
    },
];

/// Runs every step; the error names the step that failed.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    for (index, step) in STEPS.iter().enumerate() {
        let position = format!("[{}/{}]", index + 1, STEPS.len());
        match step.action {
            Action::Cargo(args) => {
                let mut command = cargo(root, args);
                eprintln!("==> {position} {}: {}", step.name, display(&command));
                let status = command
                    .status()
                    .with_context(|| format!("ci step `{}`: could not start cargo", step.name))?;
                if !status.success() {
                    bail!(
                        "ci step `{}` failed: `{}` exited with {status}",
                        step.name,
                        display(&command)
                    );
                }
            }
            Action::CargoWithoutWarnings(args, env) => {
                let mut command = cargo(root, args);
                command.envs(env.iter().copied());
                let shown = env
                    .iter()
                    .map(|(name, value)| format!("{name}='{value}' "))
                    .collect::<String>()
                    + &display(&command);
                eprintln!("==> {position} {}: {shown}", step.name);
                let warnings = run_without_warnings(&mut command)
                    .with_context(|| format!("ci step `{}`: could not run cargo", step.name))?;
                match warnings {
                    Ok(0) => {}
                    Ok(count) => bail!(
                        "ci step `{}` failed: `{shown}` printed {count} warning(s), listed above",
                        step.name
                    ),
                    Err(status) => bail!(
                        "ci step `{}` failed: `{shown}` exited with {status}",
                        step.name
                    ),
                }
            }
            Action::Tidy => {
                eprintln!(
                    "==> {position} {}: repository policy (xtask/src/tidy.rs)",
                    step.name
                );
                let problems = tidy::check(root)
                    .with_context(|| format!("ci step `{}` could not run", step.name))?;
                tidy::report(&problems)
                    .with_context(|| format!("ci step `{}` failed", step.name))?;
            }
            Action::Api => {
                eprintln!(
                    "==> {position} {}: the recorded public API (xtask/src/api.rs)",
                    step.name
                );
                crate::api::run(root, crate::api::Mode::Check)
                    .with_context(|| format!("ci step `{}` failed", step.name))?;
            }
            Action::Fresh => {
                eprintln!(
                    "==> {position} {}: the libraries resolved afresh (xtask/src/fresh.rs)",
                    step.name
                );
                crate::fresh::run(root)
                    .with_context(|| format!("ci step `{}` failed", step.name))?;
            }
            Action::Conformance => {
                eprintln!(
                    "==> {position} {}: official client conformance suite (xtask/src/conformance.rs)",
                    step.name
                );
                crate::conformance::run(root)
                    .with_context(|| format!("ci step `{}` failed", step.name))?;
            }
        }
    }
    Ok(())
}

/// Runs `command` with its stderr echoed line by line as it comes; the
/// number of lines that start with `warning:` when it succeeds, or its exit
/// status when it fails.
fn run_without_warnings(
    command: &mut std::process::Command,
) -> anyhow::Result<Result<usize, std::process::ExitStatus>> {
    let mut child = command
        .stderr(Stdio::piped())
        .spawn()
        .context("could not start cargo")?;
    let stderr = child
        .stderr
        .take()
        .context("cargo's stderr was not captured")?;
    let mut warnings = 0;
    for line in BufReader::new(stderr).lines() {
        let line = line.context("reading cargo's stderr")?;
        if is_warning(&line) {
            warnings += 1;
        }
        // `eprintln!` rather than a locked handle, so the tests' output
        // capture holds what their commands print.
        eprintln!("{line}");
    }
    let status = child.wait().context("waiting for cargo")?;
    Ok(if status.success() {
        Ok(warnings)
    } else {
        Err(status)
    })
}

/// Whether a line of cargo's or rustc's stderr is a warning (cargo prints
/// without colours when its stderr is a pipe).
fn is_warning(line: &str) -> bool {
    line.starts_with("warning:")
}

#[cfg(test)]
mod tests {
    //! The warning check, on lines cargo prints.

    use super::*;

    #[test]
    fn warnings_are_lines_that_start_with_warning() {
        assert!(is_warning(
            "warning: manifest has no documentation, homepage or repository."
        ));
        assert!(is_warning("warning: unused import: `std::fmt`"));
        assert!(!is_warning("   Packaging mcp-proto v0.1.0"));
        assert!(!is_warning(
            "  = note: `#[warn(unused_imports)]` on by default"
        ));
        assert!(!is_warning("error: failed to verify package tarball"));
    }

    #[test]
    fn a_warning_on_stderr_is_counted_and_a_failure_is_its_status() {
        let mut warns = std::process::Command::new("sh");
        warns.args([
            "-c",
            "echo 'warning: one' >&2; echo 'fine' >&2; echo 'warning: two' >&2",
        ]);
        assert_eq!(run_without_warnings(&mut warns).unwrap(), Ok(2));
        let mut fails = std::process::Command::new("sh");
        fails.args(["-c", "echo 'error: no' >&2; exit 3"]);
        let status = run_without_warnings(&mut fails).unwrap().unwrap_err();
        assert_eq!(status.code(), Some(3));
    }
}

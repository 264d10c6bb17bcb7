//! `cargo xtask ci`: every check CI runs, in order, stopping at the first failure.

use std::path::Path;

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
    /// The tidy check, run in-process.
    Tidy,
    /// The official conformance suite (`cargo xtask conformance`).
    Conformance,
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

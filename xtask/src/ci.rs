//! `cargo xtask ci`: every check CI runs, in order, stopping at the first failure.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, bail};

use crate::api::LIBRARIES;
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
    /// `cargo` with the first arguments, `-p LIBRARY` for each published
    /// library (`api::LIBRARIES`), then the last arguments.
    ForEachLibrary(&'static [&'static str], &'static [&'static str]),
    /// `cargo package` of every published library, checked as
    /// `CargoWithoutWarnings` checks, after cargo's unpacked copies of
    /// earlier runs' packages are removed (see [`forget_unpacked_packages`]).
    Package,
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
        action: Action::ForEachLibrary(
            &["hack", "clippy", "--each-feature", "--no-dev-deps"],
            &["--", "-D", "warnings"],
        ),
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
    // the files as they are. The packages are built as workspaces of their
    // own, without this one's `[profile.dev]`: the same line tables only
    // keep their builds as small on CI's disk as the other steps'.
    Step {
        name: "package",
        action: Action::Package,
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
            Action::Cargo(args) => run_cargo(root, step.name, &position, args)?,
            Action::ForEachLibrary(before, after) => {
                run_cargo(root, step.name, &position, &library_args(before, after))?;
            }
            Action::CargoWithoutWarnings(args, env) => {
                run_cargo_without_warnings(root, step.name, &position, args, env)?;
            }
            Action::Package => {
                let removed = forget_unpacked_packages()
                    .with_context(|| format!("ci step `{}` could not run", step.name))?;
                for path in removed {
                    eprintln!("ci: removed cargo's unpacked copy {}", path.display());
                }
                let args = library_args(&["package", "--locked", "--allow-dirty"], &[]);
                run_cargo_without_warnings(
                    root,
                    step.name,
                    &position,
                    &args,
                    &[("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")],
                )?;
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

/// `before`, then `-p LIBRARY` for each published library, then `after`.
fn library_args<'a>(before: &[&'a str], after: &[&'a str]) -> Vec<&'a str> {
    let mut args = before.to_vec();
    for library in LIBRARIES {
        args.extend(["-p", library]);
    }
    args.extend_from_slice(after);
    args
}

/// Runs `cargo` with `args` from the workspace root; an error unless it succeeds.
fn run_cargo(root: &Path, name: &str, position: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut command = cargo(root, args);
    eprintln!("==> {position} {name}: {}", display(&command));
    let status = command
        .status()
        .with_context(|| format!("ci step `{name}`: could not start cargo"))?;
    if !status.success() {
        bail!(
            "ci step `{name}` failed: `{}` exited with {status}",
            display(&command)
        );
    }
    Ok(())
}

/// Runs `cargo` with `args` and `env`; an error unless it succeeds without
/// printing a warning.
fn run_cargo_without_warnings(
    root: &Path,
    name: &str,
    position: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<()> {
    let mut command = cargo(root, args);
    command.envs(env.iter().copied());
    let shown = env
        .iter()
        .map(|(name, value)| format!("{name}='{value}' "))
        .collect::<String>()
        + &display(&command);
    eprintln!("==> {position} {name}: {shown}");
    let warnings = run_without_warnings(&mut command)
        .with_context(|| format!("ci step `{name}`: could not run cargo"))?;
    match warnings {
        Ok(0) => Ok(()),
        Ok(count) => {
            bail!("ci step `{name}` failed: `{shown}` printed {count} warning(s), listed above")
        }
        Err(status) => bail!("ci step `{name}` failed: `{shown}` exited with {status}"),
    }
}

/// Removes the copies of this workspace's own packages that earlier
/// `cargo package` runs left unpacked in cargo's home, and returns their paths.
///
/// `cargo package` verifies each library against its siblings' fresh
/// `.crate` files through a local registry under `target/package/`, and
/// cargo unpacks what it reads from a registry once, into
/// `$CARGO_HOME/registry/src/<registry>/<name>-<version>/`, keyed by the
/// registry's path and the version alone. A second run from the same
/// checkout path with the same version (a CI machine that keeps its cargo
/// home, or any developer's second run) then builds against the first
/// run's sources, not the ones just packaged. The unpacked copies are only
/// a cache: cargo unpacks again what it needs.
fn forget_unpacked_packages() -> anyhow::Result<Vec<PathBuf>> {
    let cargo_home = match std::env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => match std::env::var_os("HOME") {
            Some(home) => Path::new(&home).join(".cargo"),
            None => return Ok(Vec::new()),
        },
    };
    let sources = cargo_home.join("registry").join("src");
    let unpacked = unpacked_packages(&sources)?;
    for path in &unpacked {
        std::fs::remove_dir_all(path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(unpacked)
}

/// The directories `<registry>/<library>-<version>` under `sources` (cargo's
/// `registry/src`), for every published library and any version.
fn unpacked_packages(sources: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let registries = match std::fs::read_dir(sources) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).with_context(|| format!("reading {}", sources.display())),
    };
    let mut found = Vec::new();
    for registry in registries {
        let registry = registry.with_context(|| format!("reading {}", sources.display()))?;
        let Ok(packages) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for package in packages {
            let package = package.with_context(|| format!("reading {}", sources.display()))?;
            let name = package.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            let ours = LIBRARIES.iter().any(|library| {
                name.strip_prefix(library)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
            });
            if ours && package.path().is_dir() {
                found.push(package.path());
            }
        }
    }
    found.sort();
    Ok(found)
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
    fn unpacked_copies_of_the_libraries_are_found_in_every_registry() {
        let sources =
            std::env::temp_dir().join(format!("xtask-ci-unpacked-{}", std::process::id()));
        let make = |path: &str| std::fs::create_dir_all(sources.join(path)).unwrap();
        make("-22c3805da5a543b4/mcp-proto-0.1.0/src");
        make("-22c3805da5a543b4/mcp-transport-0.1.0");
        make("index.crates.io-1949cf8c6b5b557f/mcp-toolbridge-0.2.3");
        // Other crates, and names that only start like a library's.
        make("index.crates.io-1949cf8c6b5b557f/serde-1.0.229");
        make("index.crates.io-1949cf8c6b5b557f/mcp-proto-extra-1.0.0");
        make("-22c3805da5a543b4/mcp-protocol-0.1.0");
        let found = unpacked_packages(&sources).unwrap();
        let relative: Vec<_> = found
            .iter()
            .map(|path| {
                path.strip_prefix(&sources)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            relative,
            [
                "-22c3805da5a543b4/mcp-proto-0.1.0",
                "-22c3805da5a543b4/mcp-transport-0.1.0",
                "index.crates.io-1949cf8c6b5b557f/mcp-toolbridge-0.2.3",
            ]
        );
        std::fs::remove_dir_all(&sources).unwrap();
        assert!(unpacked_packages(&sources).unwrap().is_empty());
    }

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

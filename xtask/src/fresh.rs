//! `cargo xtask fresh`: the libraries built as a downstream user builds them, against the newest compatible releases of every dependency.
//!
//! The workspace's `Cargo.lock` pins what CI and developers build, which
//! hides a new compatible release that deprecates something we call: a
//! downstream project resolves afresh and would see the warning first. This
//! copies the tracked sources into a temporary directory, runs `cargo
//! update` there (the repository's lockfile is never touched), and checks
//! the six published libraries with every feature and warnings denied.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::api::LIBRARIES;
use crate::{cargo, display};

/// Copies the workspace, resolves it afresh and checks the libraries.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let copy = tempdir()?;
    let result = check(root, &copy);
    let _ = fs::remove_dir_all(&copy);
    result
}

fn check(root: &Path, copy: &Path) -> anyhow::Result<()> {
    for file in tracked_files(root)? {
        let from = root.join(&file);
        let to = copy.join(&file);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("could not create {}", parent.display()))?;
        }
        // A tracked file deleted in the work tree is not part of what is checked.
        if from.is_file() {
            fs::copy(&from, &to).with_context(|| {
                format!("could not copy {} to {}", from.display(), to.display())
            })?;
        }
    }
    // Built beside the workspace's own target so that a second run reuses it.
    let target = root.join("target").join("fresh");
    let target = target.to_string_lossy().into_owned();
    run_cargo(copy, &["update", "--quiet"], &[])?;
    let mut args = vec![
        "check",
        "--quiet",
        "--all-features",
        "--target-dir",
        &target,
    ];
    for library in LIBRARIES {
        args.extend(["-p", library]);
    }
    run_cargo(copy, &args, &[("RUSTFLAGS", "-Dwarnings")])
}

fn run_cargo(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<()> {
    let mut command = cargo(dir, args);
    command.envs(env.iter().copied());
    eprintln!("==> (in a fresh copy) {}", display(&command));
    let status = command
        .status()
        .with_context(|| format!("could not start `{}`", display(&command)))?;
    if !status.success() {
        bail!(
            "`{}` failed ({status}) in a copy of the workspace resolved afresh: a new \
             compatible release of a dependency breaks or warns in our code",
            display(&command)
        );
    }
    Ok(())
}

/// Every file git tracks, relative to `root`.
fn tracked_files(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let output = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .context("could not run `git ls-files`")?;
    if !output.status.success() {
        bail!(
            "`git ls-files` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(output
        .stdout
        .split(|&byte| byte == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(String::from_utf8_lossy(name).into_owned()))
        .collect())
}

/// A new empty directory under the system's temporary directory.
fn tempdir() -> anyhow::Result<PathBuf> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let path = base.join(format!("mcp-xtask-fresh-{}-{attempt}", std::process::id()));
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => {
                return Err(error).with_context(|| format!("could not create {}", path.display()));
            }
        }
    }
    bail!(
        "could not create a temporary directory under {}",
        base.display()
    )
}

//! `cargo xtask api`: the recorded public API of every library crate, one text file each under `api/`.
//!
//! Each library's public items (with all features on, as docs.rs shows them)
//! are listed one per line, sorted, in `api/<crate>.txt`. CI compares the
//! code against those files, so every change to a published crate's API is a
//! visible diff in review; `cargo xtask api --bless` rewrites them after a
//! change made on purpose.
//!
//! The listing comes from rustdoc's JSON output, read by the `public-api`
//! crate. That output is unstable: this machine's one toolchain is stable, so
//! the rustdoc run sets `RUSTC_BOOTSTRAP=1` for itself alone, and the
//! `public-api` version is pinned to the JSON format that toolchain writes.
//! A toolchain that writes another format is refused with both versions named,
//! rather than read wrongly.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::{cargo, display};

/// The crates whose API is recorded: the ones published on crates.io.
pub(crate) const LIBRARIES: &[&str] = &[
    "mcp-proto",
    "mcp-transport",
    "mcp-config",
    "mcp-client-oauth",
    "mcp-manager",
    "mcp-toolbridge",
];

/// The rustdoc JSON format the pinned `public-api` reads.
const FORMAT_VERSION: u64 = 57;

/// What `api` does with a difference between the code and the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Fail, printing the lines that differ.
    Check,
    /// Rewrite the files.
    Bless,
}

/// Lists every library's public API and checks it against (or writes it to) `api/`.
pub(crate) fn run(root: &Path, mode: Mode) -> anyhow::Result<()> {
    let mut stale = Vec::new();
    for krate in LIBRARIES {
        let listing = listing(root, krate)?;
        let path = root.join("api").join(format!("{krate}.txt"));
        let recorded = match fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => {
                return Err(error).with_context(|| format!("could not read {}", path.display()));
            }
        };
        if recorded.as_deref() == Some(listing.as_str()) {
            eprintln!(
                "api: {krate}: {} items, as recorded",
                listing.lines().count()
            );
            continue;
        }
        match mode {
            Mode::Bless => {
                fs::create_dir_all(root.join("api")).context("could not create api/")?;
                fs::write(&path, &listing)
                    .with_context(|| format!("could not write {}", path.display()))?;
                eprintln!("api: {krate}: {} items, written", listing.lines().count());
            }
            Mode::Check => {
                eprint!(
                    "{}",
                    diff(krate, recorded.as_deref().unwrap_or(""), &listing)
                );
                stale.push(*krate);
            }
        }
    }
    if !stale.is_empty() {
        bail!(
            "the public API of {} differs from api/ (lines above: - recorded, + in the code); \
             if the change is meant, run `cargo xtask api --bless` and commit api/",
            stale.join(", ")
        );
    }
    Ok(())
}

/// One crate's public items, one per line, sorted, ending in a newline.
fn listing(root: &Path, krate: &str) -> anyhow::Result<String> {
    let json = rustdoc_json(root, krate)?;
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .omit_auto_derived_impls(true)
        .build()
        .with_context(|| {
            format!(
                "could not read the public API of {krate} from {}",
                json.display()
            )
        })?;
    let mut lines: Vec<String> = api.items().map(ToString::to_string).collect();
    lines.sort();
    lines.dedup();
    let mut text = lines.join("\n");
    text.push('\n');
    Ok(text)
}

/// Runs rustdoc's JSON output for one crate's library with every feature on.
fn rustdoc_json(root: &Path, krate: &str) -> anyhow::Result<PathBuf> {
    let target = root.join("target").join("api");
    let target_arg = target.to_string_lossy().into_owned();
    let mut command = cargo(
        root,
        &[
            "rustdoc",
            "--quiet",
            "--locked",
            "-p",
            krate,
            "--lib",
            "--all-features",
            "--target-dir",
            &target_arg,
            "--",
            "-Zunstable-options",
            "--output-format",
            "json",
            "--cfg",
            "docsrs",
        ],
    );
    // rustdoc's JSON output and `doc(cfg)` are unstable; the stable toolchain
    // gives both to this one command.
    command.env("RUSTC_BOOTSTRAP", "1");
    eprintln!("==> {}", display(&command));
    let status = command
        .status()
        .with_context(|| format!("could not start `{}`", display(&command)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", display(&command));
    }
    let path = target
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")));
    let format = format_version(&path)?;
    if format != FORMAT_VERSION {
        bail!(
            "{} is rustdoc JSON format {format}, and the pinned public-api reads format \
             {FORMAT_VERSION}: this toolchain ({}) is not the one the recorded API was made \
             with; pin the public-api version that reads format {format} in xtask/Cargo.toml",
            path.display(),
            rustc_version(root)
        );
    }
    Ok(path)
}

/// The `format_version` a rustdoc JSON file declares.
fn format_version(path: &Path) -> anyhow::Result<u64> {
    #[derive(serde::Deserialize)]
    struct Header {
        format_version: u64,
    }
    let text = fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    let header: Header = serde_json::from_slice(&text)
        .with_context(|| format!("{} has no format_version", path.display()))?;
    Ok(header.format_version)
}

fn rustc_version(root: &Path) -> String {
    std::process::Command::new("rustc")
        .arg("--version")
        .current_dir(root)
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_else(|| "rustc of unknown version".to_owned())
}

/// The lines only one side has, `-` recorded and `+` in the code, in order.
fn diff(krate: &str, recorded: &str, current: &str) -> String {
    use std::collections::BTreeSet;
    let old: BTreeSet<&str> = recorded.lines().collect();
    let new: BTreeSet<&str> = current.lines().collect();
    let mut out = format!("api/{krate}.txt:\n");
    for line in old.difference(&new) {
        out.push_str(&format!("- {line}\n"));
    }
    for line in new.difference(&old) {
        out.push_str(&format!("+ {line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::diff;

    #[test]
    fn diff_names_only_the_lines_that_changed() {
        let text = diff("c", "a\nb\nc\n", "a\nc\nd\n");
        assert_eq!(text, "api/c.txt:\n- b\n+ d\n");
    }

    #[test]
    fn diff_of_a_missing_file_adds_every_line() {
        assert_eq!(diff("c", "", "x\n"), "api/c.txt:\n+ x\n");
    }
}

//! Repository policy as code: crate layering, module docs, no debugging macros, comments in their own terms, no module circles, license copies in published crates.
//!
//! Every rule is a function over a repository root, so the tests below run it
//! on small fake repositories in temporary directories, and one test runs the
//! whole check on this repository: plain `cargo test --workspace` enforces the
//! policy as well as `cargo xtask tidy` does.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use toml::{Table, Value};

/// Where one of our crates sits in the dependency picture of DESIGN.md.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// A crate may depend only on our crates in strictly lower layers.
    Layer(u8),
    /// Depends on none of our crates, and none of ours depends on it.
    Apart,
}

/// Every crate of the workspace. A crate missing here is itself a tidy
/// failure: adding a crate means deciding where it sits.
const CRATES: &[(&str, Place)] = &[
    ("mcp-proto", Place::Layer(0)),
    ("mcp-transport", Place::Layer(1)),
    ("mcp-config", Place::Layer(1)),
    ("mcp-client-oauth", Place::Layer(2)),
    ("mcp-manager", Place::Layer(3)),
    ("mcp-toolbridge", Place::Layer(4)),
    ("mcp-cli", Place::Layer(5)),
    ("tests", Place::Layer(5)),
    ("xtask", Place::Apart),
];

/// Edges refused whatever the layers say, with the reason. Transport and
/// config share a layer today, which already refuses these; spelling them out
/// keeps the rule if someone renumbers the layers.
const FORBIDDEN_EDGES: &[(&str, &str, &str)] = &[
    (
        "mcp-transport",
        "mcp-config",
        "transports know nothing about config files",
    ),
    (
        "mcp-config",
        "mcp-transport",
        "config describes transports as data and never connects",
    ),
];

/// The macros refused in library code.
const FORBIDDEN_MACROS: &[&str] = &["dbg", "todo", "unimplemented"];

/// Directory names the file walk never enters: build output, npm packages.
/// Hidden directories (`.git`, `.cargo`, ...) are skipped too.
const SKIPPED_DIRS: &[&str] = &["target", "node_modules"];

/// The license texts at the repository root. `cargo package` takes only the
/// files inside a crate's directory, so every published crate carries a
/// copy of each, and the copies must not drift from the root's.
const LICENSE_FILES: &[&str] = &["LICENSE-MIT", "LICENSE-APACHE"];

/// The file where the layer table lives, named in failures.
const THIS_FILE: &str = "xtask/src/tidy.rs";

/// One policy breach, located in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// The file, relative to the repository root, with `/` separators.
    pub(crate) path: String,
    /// The 1-based line, where a rule can tell.
    pub(crate) line: Option<usize>,
    pub(crate) message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

/// Runs every rule on the repository at `root`. An `Err` means the check
/// could not run (an unreadable file, a malformed manifest), not a breach.
pub(crate) fn check(root: &Path) -> anyhow::Result<Vec<Problem>> {
    let mut problems = check_dependency_direction(root)?;
    problems.extend(check_module_docs(root)?);
    problems.extend(check_forbidden_macros(root)?);
    problems.extend(crate::tidy_source::check_planning_words(root)?);
    problems.extend(crate::tidy_source::check_module_circles(root)?);
    problems.extend(crate::tidy_source::check_initialize_matching(root)?);
    problems.extend(check_license_copies(root)?);
    Ok(problems)
}

/// Every crate under `crates/` with a `src` directory: its name (the
/// directory's), the `src` directory and its `.rs` files, sorted.
pub(crate) fn crate_sources(root: &Path) -> anyhow::Result<Vec<(String, PathBuf, Vec<PathBuf>)>> {
    let crates_dir = root.join("crates");
    if !crates_dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for krate in sorted_entries(&crates_dir)? {
        let src = krate.join("src");
        if !src.is_dir() {
            continue;
        }
        let name = krate
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let files = rust_files(&src)?;
        out.push((name, src, files));
    }
    Ok(out)
}

/// Prints the problems, one a line, and fails if there is any.
pub(crate) fn report(problems: &[Problem]) -> anyhow::Result<()> {
    if problems.is_empty() {
        eprintln!("tidy: ok");
        return Ok(());
    }
    for problem in problems {
        eprintln!("{problem}");
    }
    bail!("tidy: {} problem(s), listed above", problems.len())
}

/// Rule (a): every dependency edge between our crates points down the layers.
///
/// Our crates are the workspace members plus anything reached through a
/// `path` dependency, directly or through a `workspace = true` entry whose
/// `[workspace.dependencies]` line has a `path`. Every table that can hold a
/// dependency counts: normal, dev, build, and their `[target.*]` variants.
pub(crate) fn check_dependency_direction(root: &Path) -> anyhow::Result<Vec<Problem>> {
    let root_manifest = read_manifest(&root.join("Cargo.toml"))?;
    let workspace = root_manifest
        .get("workspace")
        .and_then(Value::as_table)
        .with_context(|| {
            format!(
                "{}: no [workspace] table",
                root.join("Cargo.toml").display()
            )
        })?;
    let workspace_deps = workspace
        .get("dependencies")
        .and_then(Value::as_table)
        .cloned()
        .unwrap_or_default();

    let mut problems = Vec::new();
    let mut unknown_reported = BTreeSet::new();
    let mut report_unknown = |name: &str, path: String, problems: &mut Vec<Problem>| {
        if unknown_reported.insert(name.to_owned()) {
            problems.push(Problem {
                path,
                line: None,
                message: format!(
                    "crate `{name}` is not in tidy's layer table: add it to CRATES in {THIS_FILE}"
                ),
            });
        }
    };

    for member in workspace_members(root, &root_manifest)? {
        let manifest_path = member.join("Cargo.toml");
        let shown = relative(root, &manifest_path);
        let manifest = read_manifest(&manifest_path)?;
        let Some(name) = manifest
            .get("package")
            .and_then(|package| package.get("name"))
            .and_then(Value::as_str)
        else {
            // A virtual manifest below the root has no crate of its own.
            continue;
        };
        let Some(from) = place_of(name) else {
            report_unknown(name, shown, &mut problems);
            continue;
        };
        for (table, key, spec) in dependency_entries(&manifest) {
            let Some(to_name) = our_crate(key, spec, &workspace_deps) else {
                continue;
            };
            let Some(to) = place_of(&to_name) else {
                report_unknown(&to_name, shown.clone(), &mut problems);
                continue;
            };
            // A crate's dev-dependency on itself only turns on its own
            // features for its tests and doc examples: no edge at all.
            if to_name == name && table.contains("dev-dependencies") {
                continue;
            }
            if let Err(reason) = edge_allowed(name, from, &to_name, to) {
                problems.push(Problem {
                    path: shown.clone(),
                    line: None,
                    message: format!(
                        "edge {name} -> {to_name} in [{table}] is not allowed: {reason}"
                    ),
                });
            }
        }
    }
    Ok(problems)
}

/// Rule (b): the first non-empty line of every `.rs` file is a `//!` line
/// saying what the file is for.
pub(crate) fn check_module_docs(root: &Path) -> anyhow::Result<Vec<Problem>> {
    let mut problems = Vec::new();
    for file in rust_files(root)? {
        let text = read(&file)?;
        let first = text
            .lines()
            .enumerate()
            .find(|(_, line)| !line.trim().is_empty());
        match first {
            Some((_, line)) if line.trim_start().starts_with("//!") => {}
            first => problems.push(Problem {
                path: relative(root, &file),
                line: first.map(|(index, _)| index + 1),
                message: "the file must open with a `//!` line saying what it is for".to_owned(),
            }),
        }
    }
    Ok(problems)
}

/// Rule (c): no `dbg!`, `todo!` or `unimplemented!` in library code, meaning
/// every `.rs` file under `crates/*/src/`, its `#[cfg(test)]` modules
/// included. The macro call is matched anywhere, comments and strings too:
/// the rule stays simple and a rewording is cheap.
pub(crate) fn check_forbidden_macros(root: &Path) -> anyhow::Result<Vec<Problem>> {
    let mut problems = Vec::new();
    let crates_dir = root.join("crates");
    if !crates_dir.is_dir() {
        return Ok(problems);
    }
    for krate in sorted_entries(&crates_dir)? {
        let src = krate.join("src");
        if !src.is_dir() {
            continue;
        }
        for file in rust_files(&src)? {
            let text = read(&file)?;
            for (index, line) in text.lines().enumerate() {
                for name in FORBIDDEN_MACROS {
                    if calls_macro(line, name) {
                        problems.push(Problem {
                            path: relative(root, &file),
                            line: Some(index + 1),
                            message: format!("`{name}!(` is not allowed in library code"),
                        });
                    }
                }
            }
        }
    }
    Ok(problems)
}

/// Rule (f): every workspace member that may be published (its manifest
/// does not say `publish = false`, directly or through
/// `[workspace.package]`) holds copies of the root's license files, equal
/// byte for byte.
pub(crate) fn check_license_copies(root: &Path) -> anyhow::Result<Vec<Problem>> {
    let root_manifest = read_manifest(&root.join("Cargo.toml"))?;
    let mut problems = Vec::new();
    let mut originals = Vec::new();
    for name in LICENSE_FILES {
        let path = root.join(name);
        if path.is_file() {
            let text = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            originals.push((*name, Some(text)));
        } else {
            originals.push((*name, None));
        }
    }
    let mut root_reported = BTreeSet::new();
    for member in workspace_members(root, &root_manifest)? {
        let manifest = read_manifest(&member.join("Cargo.toml"))?;
        let Some(package) = manifest.get("package").and_then(Value::as_table) else {
            continue;
        };
        if !publishable(package, &root_manifest) {
            continue;
        }
        for (name, original) in &originals {
            let copy = member.join(name);
            let shown = relative(root, &copy);
            let Some(original) = original else {
                if root_reported.insert(*name) {
                    problems.push(Problem {
                        path: (*name).to_owned(),
                        line: None,
                        message: format!(
                            "missing: `{}` may be published and needs the root's license texts",
                            relative(root, &member)
                        ),
                    });
                }
                continue;
            };
            let message = if !copy.is_file() {
                format!("missing: copy the root's {name} here, which `cargo package` takes")
            } else if fs::read(&copy).with_context(|| format!("reading {}", copy.display()))?
                != *original
            {
                format!("differs from the root's {name}: copy it again")
            } else {
                continue;
            };
            problems.push(Problem {
                path: shown,
                line: None,
                message,
            });
        }
    }
    Ok(problems)
}

/// Whether cargo may publish a package: `publish` left out or `true`, or a
/// nonempty registry list, read from `[workspace.package]` when inherited.
fn publishable(package: &Table, root_manifest: &Table) -> bool {
    let inherited = || {
        root_manifest
            .get("workspace")
            .and_then(|workspace| workspace.get("package"))
            .and_then(|package| package.get("publish"))
    };
    let setting = match package.get("publish") {
        Some(Value::Table(table))
            if table.get("workspace").and_then(Value::as_bool) == Some(true) =>
        {
            inherited()
        }
        setting => setting,
    };
    match setting {
        None => true,
        Some(Value::Boolean(publish)) => *publish,
        Some(Value::Array(registries)) => !registries.is_empty(),
        Some(_) => true,
    }
}

fn place_of(name: &str) -> Option<Place> {
    CRATES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, place)| *place)
}

/// Why the edge `from -> to` breaks the layering, if it does.
fn edge_allowed(from_name: &str, from: Place, to_name: &str, to: Place) -> Result<(), String> {
    if let Some((_, _, reason)) = FORBIDDEN_EDGES
        .iter()
        .find(|(a, b, _)| *a == from_name && *b == to_name)
    {
        return Err((*reason).to_owned());
    }
    match (from, to) {
        (Place::Apart, _) => Err(format!("{from_name} depends on none of our crates")),
        (_, Place::Apart) => Err(format!("no crate may depend on {to_name}")),
        (Place::Layer(a), Place::Layer(b)) if b >= a => Err(format!(
            "{from_name} (layer {a}) may depend only on lower layers, and {to_name} is in layer {b}"
        )),
        (Place::Layer(_), Place::Layer(_)) => Ok(()),
    }
}

/// The member directories of the workspace: `members` globs expanded, minus
/// `exclude`, plus the root itself when it is also a package.
fn workspace_members(root: &Path, root_manifest: &Table) -> anyhow::Result<Vec<PathBuf>> {
    let workspace = root_manifest.get("workspace").and_then(Value::as_table);
    let strings = |key: &str| -> Vec<String> {
        workspace
            .and_then(|workspace| workspace.get(key))
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let excluded: BTreeSet<PathBuf> = strings("exclude")
        .iter()
        .map(|path| root.join(path))
        .collect();

    let mut members = BTreeSet::new();
    if root_manifest.contains_key("package") {
        members.insert(root.to_path_buf());
    }
    for pattern in strings("members") {
        if pattern.contains(['*', '?']) {
            for dir in expand_glob(root, &pattern)? {
                // Cargo takes only the matches that are packages.
                if dir.join("Cargo.toml").is_file() && !excluded.contains(&dir) {
                    members.insert(dir);
                }
            }
        } else {
            let dir = root.join(&pattern);
            if !dir.join("Cargo.toml").is_file() {
                bail!("workspace member `{pattern}` has no Cargo.toml");
            }
            members.insert(dir);
        }
    }
    Ok(members.into_iter().collect())
}

/// The directories matching a `members` pattern whose components may hold `*`
/// and `?` wildcards (all Cargo's own workspaces use).
fn expand_glob(root: &Path, pattern: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut current = vec![root.to_path_buf()];
    for component in pattern.split('/').filter(|c| !c.is_empty() && *c != ".") {
        let mut next = Vec::new();
        for dir in current {
            if component.contains(['*', '?']) {
                for entry in sorted_entries(&dir)? {
                    let name = entry.file_name().map(|n| n.to_string_lossy().into_owned());
                    if entry.is_dir() && name.is_some_and(|name| wildcard_match(component, &name)) {
                        next.push(entry);
                    }
                }
            } else if dir.join(component).is_dir() {
                next.push(dir.join(component));
            }
        }
        current = next;
    }
    Ok(current)
}

/// `*` matches any run of characters, `?` any one character.
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|skip| go(rest, &n[skip..])),
            Some((c, rest)) => n
                .split_first()
                .is_some_and(|(first, tail)| (*c == '?' || c == first) && go(rest, tail)),
        }
    }
    go(&pattern, &name)
}

/// Every dependency entry of a manifest as (table label, key, spec).
fn dependency_entries(manifest: &Table) -> Vec<(String, &str, &Value)> {
    let mut entries = Vec::new();
    push_dependency_entries(&mut entries, "", manifest);
    if let Some(targets) = manifest.get("target").and_then(Value::as_table) {
        for (target, table) in targets {
            if let Some(table) = table.as_table() {
                push_dependency_entries(&mut entries, &format!("target.'{target}'."), table);
            }
        }
    }
    entries
}

fn push_dependency_entries<'a>(
    entries: &mut Vec<(String, &'a str, &'a Value)>,
    label_prefix: &str,
    table: &'a Table,
) {
    const KINDS: &[&str] = &[
        "dependencies",
        "dev-dependencies",
        "dev_dependencies",
        "build-dependencies",
        "build_dependencies",
    ];
    for kind in KINDS {
        if let Some(deps) = table.get(*kind).and_then(Value::as_table) {
            for (key, spec) in deps {
                entries.push((format!("{label_prefix}{kind}"), key.as_str(), spec));
            }
        }
    }
}

/// The package name behind a dependency entry when it is one of ours (a path
/// dependency, directly or through the workspace table).
fn our_crate(key: &str, spec: &Value, workspace_deps: &Table) -> Option<String> {
    let spec = spec.as_table()?;
    let package = |table: &Table| {
        table
            .get("package")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if spec.contains_key("path") {
        return Some(package(spec).unwrap_or_else(|| key.to_owned()));
    }
    if spec.get("workspace").and_then(Value::as_bool) == Some(true) {
        let inherited = workspace_deps.get(key)?.as_table()?;
        if inherited.contains_key("path") {
            return Some(
                package(spec)
                    .or_else(|| package(inherited))
                    .unwrap_or_else(|| key.to_owned()),
            );
        }
    }
    None
}

/// Every `.rs` file under `dir`, sorted, outside skipped directories.
pub(crate) fn rust_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // `file_type` does not follow symlinks, so a link cannot loop the walk.
            let kind = entry.file_type()?;
            if kind.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_ref()) {
                    pending.push(entry.path());
                }
            } else if kind.is_file() && name.ends_with(".rs") {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Whether `line` holds `name!(` as a macro call, not the tail of a longer
/// identifier such as `my_todo!(`.
fn calls_macro(line: &str, name: &str) -> bool {
    let needle = format!("{name}!(");
    line.match_indices(&needle).any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn sorted_entries(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut entries = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort();
    Ok(entries)
}

pub(crate) fn read(path: &Path) -> anyhow::Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn read_manifest(path: &Path) -> anyhow::Result<Table> {
    read(path)?
        .parse::<Table>()
        .with_context(|| format!("parsing {}", path.display()))
}

/// `path` relative to `root`, with `/` separators on every platform.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<_> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

#[cfg(test)]
mod tests {
    //! Each rule on a fake repository that breaks it, a clean fake repository,
    //! and the real one.

    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A fake repository in its own temporary directory, removed on drop.
    struct FakeRepo {
        root: PathBuf,
    }

    impl FakeRepo {
        /// The clean repository with `changes` written over it; an empty
        /// content deletes the file.
        fn new(changes: &[(&str, &str)]) -> FakeRepo {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let root = std::env::temp_dir().join(format!(
                "xtask-tidy-{}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&root);
            let repo = FakeRepo { root };
            let mut files: BTreeMap<&str, &str> = CLEAN.iter().copied().collect();
            files.extend(changes.iter().copied());
            for (path, text) in files.into_iter().filter(|(_, text)| !text.is_empty()) {
                let path = repo.root.join(path);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(path, text).unwrap();
            }
            repo
        }
    }

    impl Drop for FakeRepo {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.root);
        }
    }

    /// A small repository that passes every rule.
    const CLEAN: &[(&str, &str)] = &[
        (
            "Cargo.toml",
            r#"
[workspace]
members = ["crates/*", "xtask", "tests"]

[workspace.package]
publish = false

[workspace.dependencies]
mcp-proto = { path = "crates/mcp-proto" }
mcp-transport = { path = "crates/mcp-transport" }
mcp-config = { path = "crates/mcp-config" }
serde = "1"
"#,
        ),
        ("LICENSE-MIT", "MIT text\n"),
        ("LICENSE-APACHE", "Apache text\n"),
        (
            "crates/mcp-proto/Cargo.toml",
            "[package]\nname = \"mcp-proto\"\n\n[dependencies]\nserde.workspace = true\n",
        ),
        ("crates/mcp-proto/LICENSE-MIT", "MIT text\n"),
        ("crates/mcp-proto/LICENSE-APACHE", "Apache text\n"),
        ("crates/mcp-transport/LICENSE-MIT", "MIT text\n"),
        ("crates/mcp-transport/LICENSE-APACHE", "Apache text\n"),
        ("crates/mcp-config/LICENSE-MIT", "MIT text\n"),
        ("crates/mcp-config/LICENSE-APACHE", "Apache text\n"),
        (
            "crates/mcp-proto/src/lib.rs",
            "//! Types.\n\npub mod codec;\n",
        ),
        (
            "crates/mcp-proto/src/codec/mod.rs",
            "\n\n//! Codecs, after blank lines.\n\nfn my_todo() {}\n",
        ),
        (
            "crates/mcp-transport/Cargo.toml",
            "[package]\nname = \"mcp-transport\"\n\n[dependencies]\nmcp-proto.workspace = true\n",
        ),
        ("crates/mcp-transport/src/lib.rs", "//! Transports.\n"),
        (
            "crates/mcp-config/Cargo.toml",
            "[package]\nname = \"mcp-config\"\n\n[dependencies]\nproto = { path = \"../mcp-proto\", package = \"mcp-proto\" }\n",
        ),
        ("crates/mcp-config/src/lib.rs", "//! Config.\n"),
        (
            "xtask/Cargo.toml",
            "[package]\nname = \"xtask\"\npublish = false\n\n[dependencies]\nserde.workspace = true\n",
        ),
        (
            "xtask/src/main.rs",
            "//! Automation.\nfn main() { todo!() }\n",
        ),
        (
            "tests/Cargo.toml",
            "[package]\nname = \"tests\"\npublish.workspace = true\n\n[dev-dependencies]\nmcp-transport = { path = \"../crates/mcp-transport\" }\nmcp-config.workspace = true\n",
        ),
        ("tests/src/lib.rs", "//! Helpers.\n"),
        (
            "tests/tests/e2e.rs",
            "//! End to end.\n#[test]\nfn t() { dbg!(1); }\n",
        ),
        // Not a member and not ours to police: build output and hidden dirs.
        ("target/debug/build/out.rs", "fn generated() {}\n"),
        ("fuzz/target/x.rs", "fn generated() {}\n"),
        (".git/hooks/x.rs", "fn hidden() {}\n"),
        ("node_modules/pkg/x.rs", "fn vendored() {}\n"),
    ];

    /// Runs the whole tidy check on the clean repository changed by `changes`
    /// and compares the problems it prints with `expected`.
    fn check(changes: &[(&str, &str)], expected: &[&str]) {
        let repo = FakeRepo::new(changes);
        let problems = super::check(&repo.root).expect("tidy could not run");
        let actual: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(actual, expected);
    }

    #[test]
    fn clean_repository_passes() {
        check(&[], &[]);
    }

    #[test]
    fn upward_dev_dependency_fires() {
        check(
            &[(
                "crates/mcp-proto/Cargo.toml",
                "[package]\nname = \"mcp-proto\"\n\n[dev-dependencies]\nmcp-transport.workspace = true\n",
            )],
            &[
                "crates/mcp-proto/Cargo.toml: edge mcp-proto -> mcp-transport in [dev-dependencies] \
               is not allowed: mcp-proto (layer 0) may depend only on lower layers, and \
               mcp-transport is in layer 1",
            ],
        );
    }

    #[test]
    fn transport_and_config_never_depend_on_each_other() {
        check(
            &[
                (
                    "crates/mcp-transport/Cargo.toml",
                    "[package]\nname = \"mcp-transport\"\n\n[target.'cfg(unix)'.dependencies]\ncfg = { path = \"../mcp-config\", package = \"mcp-config\" }\n",
                ),
                (
                    "crates/mcp-config/Cargo.toml",
                    "[package]\nname = \"mcp-config\"\n\n[build-dependencies]\nmcp-transport.workspace = true\n",
                ),
            ],
            &[
                "crates/mcp-config/Cargo.toml: edge mcp-config -> mcp-transport in \
                 [build-dependencies] is not allowed: config describes transports as data and \
                 never connects",
                "crates/mcp-transport/Cargo.toml: edge mcp-transport -> mcp-config in \
                 [target.'cfg(unix)'.dependencies] is not allowed: transports know nothing about \
                 config files",
            ],
        );
    }

    #[test]
    fn xtask_depending_on_our_crates_fires() {
        check(
            &[(
                "xtask/Cargo.toml",
                "[package]\nname = \"xtask\"\npublish = false\n\n[dependencies]\nmcp-proto.workspace = true\n",
            )],
            &[
                "xtask/Cargo.toml: edge xtask -> mcp-proto in [dependencies] is not allowed: \
               xtask depends on none of our crates",
            ],
        );
    }

    #[test]
    fn unknown_crate_fires() {
        check(
            &[
                (
                    "crates/mcp-extra/Cargo.toml",
                    "[package]\nname = \"mcp-extra\"\npublish = false\n",
                ),
                ("crates/mcp-extra/src/lib.rs", "//! Extra.\n"),
                (
                    "tests/Cargo.toml",
                    "[package]\nname = \"tests\"\npublish = false\n\n[dependencies]\nvendored = { path = \"../vendor/vendored\" }\n",
                ),
            ],
            &[
                "crates/mcp-extra/Cargo.toml: crate `mcp-extra` is not in tidy's layer table: \
                 add it to CRATES in xtask/src/tidy.rs",
                "tests/Cargo.toml: crate `vendored` is not in tidy's layer table: add it to \
                 CRATES in xtask/src/tidy.rs",
            ],
        );
    }

    #[test]
    fn missing_module_doc_fires() {
        check(
            &[
                (
                    "crates/mcp-transport/src/stdio.rs",
                    "// A plain comment is not a module doc.\n//! Too late.\n",
                ),
                ("tests/tests/no_doc.rs", "\n#[test]\nfn t() {}\n"),
                ("xtask/src/empty.rs", "\n  \n"),
            ],
            &[
                "crates/mcp-transport/src/stdio.rs:1: the file must open with a `//!` line \
                 saying what it is for",
                "tests/tests/no_doc.rs:2: the file must open with a `//!` line saying what it \
                 is for",
                "xtask/src/empty.rs: the file must open with a `//!` line saying what it is for",
            ],
        );
    }

    #[test]
    fn debugging_macros_in_library_code_fire() {
        check(
            &[(
                "crates/mcp-proto/src/codec/mod.rs",
                "//! Codecs.\nfn a() { dbg!(1); }\nfn b() { todo!() }\n\
                 #[cfg(test)]\nmod tests { fn c() { std::unimplemented!(\"x\") } }\n",
            )],
            &[
                "crates/mcp-proto/src/codec/mod.rs:2: `dbg!(` is not allowed in library code",
                "crates/mcp-proto/src/codec/mod.rs:3: `todo!(` is not allowed in library code",
                "crates/mcp-proto/src/codec/mod.rs:5: `unimplemented!(` is not allowed in \
                 library code",
            ],
        );
    }

    #[test]
    fn published_crates_carry_the_root_licenses() {
        check(
            &[
                ("crates/mcp-proto/LICENSE-MIT", "MIT text, edited\n"),
                ("crates/mcp-config/LICENSE-APACHE", ""),
                // Unpublished crates need no copies, whether they say so
                // themselves or through the workspace.
                ("crates/mcp-transport/LICENSE-MIT", ""),
                (
                    "crates/mcp-transport/Cargo.toml",
                    "[package]\nname = \"mcp-transport\"\npublish.workspace = true\n",
                ),
            ],
            &[
                "crates/mcp-config/LICENSE-APACHE: missing: copy the root's LICENSE-APACHE \
                 here, which `cargo package` takes",
                "crates/mcp-proto/LICENSE-MIT: differs from the root's LICENSE-MIT: copy it again",
            ],
        );
    }

    #[test]
    fn published_crates_without_root_licenses_fire_once_per_file() {
        check(
            &[("LICENSE-APACHE", "")],
            &[
                "LICENSE-APACHE: missing: `crates/mcp-config` may be published and needs the \
                 root's license texts",
            ],
        );
    }

    #[test]
    fn wildcards_match_like_cargo() {
        assert!(wildcard_match("*", "mcp-proto"));
        assert!(wildcard_match("mcp-*", "mcp-proto"));
        assert!(wildcard_match("mcp-?roto", "mcp-proto"));
        assert!(!wildcard_match("mcp-*", "xtask"));
        assert!(!wildcard_match("mcp-?", "mcp-proto"));
    }

    /// The policy holds in this repository, so `cargo test` alone enforces it.
    #[test]
    fn repository_is_tidy() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let problems = super::check(root).expect("tidy could not run");
        let listing: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(
            problems.is_empty(),
            "tidy found {} problem(s):\n{}",
            problems.len(),
            listing.join("\n")
        );
    }
}

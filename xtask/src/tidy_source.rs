//! Tidy rules over library source text: comments that speak only of where a behaviour came from, and import circles between modules.
//!
//! Both read every `.rs` file under `crates/*/src/` as text; neither needs a
//! Rust parser, because what they look for has one spelling in this
//! repository (`use crate::...`, `super::...`, `//` comments).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::tidy::{Problem, crate_sources, read, relative, rust_files};

/// The file that lists the circles kept on purpose.
const ALLOWLIST_FILE: &str = "ARCHITECTURE.md";

/// Rule (d): no comment in the repository's Rust code (the crates' sources,
/// tests, examples and benches, the workspace tests, xtask and the
/// benchmark's reference clients) names a planning document or an issue
/// number: a reader has only this repository, and a comment says what the
/// code does in its own terms. This file, which spells the phrases it looks
/// for, is the one left out.
pub(crate) fn check_planning_words(root: &Path) -> anyhow::Result<Vec<Problem>> {
    let mut problems = Vec::new();
    let mut all: Vec<std::path::PathBuf> = crate_sources(root)?
        .into_iter()
        .flat_map(|(_, _, files)| files)
        .collect();
    let mut dirs = vec![
        root.join("tests/src"),
        root.join("tests/tests"),
        root.join("xtask/src"),
        root.join("bench/src"),
    ];
    if let Ok(entries) = std::fs::read_dir(root.join("crates")) {
        for entry in entries.flatten() {
            for sub in ["tests", "examples", "benches"] {
                dirs.push(entry.path().join(sub));
            }
        }
    }
    for dir in dirs.into_iter().filter(|d| d.is_dir()) {
        all.extend(rust_files(&dir)?);
    }
    all.retain(|file| !file.ends_with("xtask/src/tidy_source.rs"));
    all.sort();
    for file in all {
        let text = read(&file)?;
        // Comment text of consecutive comment lines is joined, so a
        // phrase broken across two lines ("(seed\n//! 002)") is found.
        let mut run = String::new();
        let mut run_start = 0;
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let comment = line.find("//").map(|at| &line[at..]);
            if let Some(comment) = comment {
                if run.is_empty() {
                    run_start = index;
                }
                run.push(' ');
                run.push_str(comment.trim_start_matches(['/', '!']));
            }
            let ends = comment.is_none() || index + 1 == lines.len();
            if ends && !run.is_empty() {
                if let Some(found) = planning_word(&run) {
                    problems.push(Problem {
                        path: relative(root, &file),
                        line: Some(run_start + 1),
                        message: format!(
                            "a comment names `{found}`: describe the behaviour in its own terms"
                        ),
                    });
                }
                run.clear();
            }
        }
    }
    Ok(problems)
}

/// The first planning word in `text`: `seed`/`seeds` or `issue` followed by
/// a number, or `checklist §`.
fn planning_word(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .filter(|word| !word.is_empty())
        .collect();
    for pair in words.windows(2) {
        let (word, next) = (pair[0], pair[1]);
        let number = next.trim_start_matches('#');
        let is_number = !number.is_empty()
            && number
                .chars()
                .take_while(|c| *c != '\'' && *c != '.' && *c != ':' && *c != ';')
                .all(|c| c.is_ascii_digit())
            && number.starts_with(|c: char| c.is_ascii_digit());
        if matches!(word, "seed" | "seeds" | "issue" | "issues") && is_number {
            return Some(format!("{word} {next}"));
        }
        if word == "checklist" && next.starts_with('§') {
            return Some(format!("{word} {next}"));
        }
    }
    None
}

/// Files outside `crates/mcp-proto` that may still match on `"initialize"`,
/// each with why.
const INITIALIZE_ALLOWED: &[(&str, &str)] = &[(
    // The scripted peer plays a server for client tests by method name,
    // handshake included: it must answer in ways a correct session never
    // would (a wrong version, a slow or missing answer), so it cannot be
    // built on `ServerSession`.
    "crates/mcp-transport/src/scripted.rs",
    "the scripted test peer scripts broken handshakes by method name",
)];

/// Rule (g): nothing outside `crates/mcp-proto` matches on the string
/// literal `"initialize"` as a method name: the handshake is
/// `ServerSession`'s (servers) and `ClientSession`'s (clients), and code
/// that must name the method uses `mcp_proto::methods::INITIALIZE`, so
/// that every decision about it can be found. Every Rust file is read
/// (sources, tests, examples, benches, the workspace tests, xtask, the
/// benchmark's clients); a literal compared (`==`, `!=`), in a match arm's
/// pattern (followed by `=>` on its line, or an alternative `|`) or in
/// `matches!` is a breach. Sending it (`"method": "initialize"`, a
/// request's method argument) is not matching, and is allowed.
pub(crate) fn check_initialize_matching(root: &Path) -> anyhow::Result<Vec<Problem>> {
    let mut problems = Vec::new();
    let mut all: Vec<std::path::PathBuf> = Vec::new();
    let mut dirs = vec![
        root.join("tests/src"),
        root.join("tests/tests"),
        root.join("xtask/src"),
        root.join("bench/src"),
    ];
    if let Ok(entries) = std::fs::read_dir(root.join("crates")) {
        for entry in entries.flatten() {
            if entry.file_name() == "mcp-proto" {
                continue;
            }
            for sub in ["src", "tests", "examples", "benches"] {
                dirs.push(entry.path().join(sub));
            }
        }
    }
    for dir in dirs.into_iter().filter(|d| d.is_dir()) {
        all.extend(rust_files(&dir)?);
    }
    // This file spells the patterns it looks for.
    all.retain(|file| !file.ends_with("xtask/src/tidy_source.rs"));
    all.sort();
    for file in all {
        let path = relative(root, &file);
        if INITIALIZE_ALLOWED
            .iter()
            .any(|(allowed, _)| *allowed == path)
        {
            continue;
        }
        let text = read(&file)?;
        for (index, line) in text.lines().enumerate() {
            if matches_initialize(line) {
                problems.push(Problem {
                    path: path.clone(),
                    line: Some(index + 1),
                    message: "matches on the literal \"initialize\": the handshake is \
                              mcp-proto's (ServerSession, ClientSession); name the method \
                              with mcp_proto::methods::INITIALIZE"
                        .to_owned(),
                });
            }
        }
    }
    Ok(problems)
}

/// Whether a line of Rust compares or matches the literal `"initialize"`
/// (see [`check_initialize_matching`]). A `//` comment's text is left out.
fn matches_initialize(line: &str) -> bool {
    const LITERAL: &str = "\"initialize\"";
    let code = match line.find("//") {
        // `//` inside a string (a URL) is rare beside this literal; a
        // comment is what it usually starts.
        Some(at) if !line[..at].contains(LITERAL) => &line[..at],
        _ => line,
    };
    let mut from = 0;
    while let Some(found) = code[from..].find(LITERAL) {
        let start = from + found;
        let end = start + LITERAL.len();
        let before = code[..start].trim_end();
        let after = code[end..].trim_start();
        let compared = ["==", "!=", "|"].iter().any(|op| before.ends_with(op))
            || ["==", "!=", "|"].iter().any(|op| after.starts_with(op));
        // A match arm's pattern: only pattern syntax before the literal on
        // its line (`(`, `Some(`, `[`), and the arm's `=>` after it.
        let mut head = before.trim_start();
        while let Some(rest) = ["Some(", "Ok(", "(", "[", "&"]
            .iter()
            .find_map(|open| head.strip_prefix(open))
        {
            head = rest.trim_start();
        }
        let in_pattern = head.is_empty() && after.contains("=>");
        if compared || in_pattern || before.contains("matches!(") {
            return true;
        }
        from = end;
    }
    false
}

/// Rule (e): no two modules of one crate import each other, outside test
/// code, unless `ARCHITECTURE.md` lists the pair as kept on purpose (a line
/// ``- `crate`: `a` and `b` ...``). A module that imports its parent or
/// child is not a circle: parents declare their children.
pub(crate) fn check_module_circles(root: &Path) -> anyhow::Result<Vec<Problem>> {
    let allowed = allowlist(root)?;
    let mut problems = Vec::new();
    for (krate, src, files) in crate_sources(root)? {
        let mut modules: BTreeMap<String, String> = BTreeMap::new();
        let mut texts = Vec::new();
        for file in &files {
            let Some(module) = module_path(&src, file) else {
                continue;
            };
            if is_test_module(&module) {
                continue;
            }
            modules.insert(module.clone(), relative(root, file));
            texts.push((module, read(file)?));
        }
        let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
        for (module, text) in &texts {
            for target in imports(module, text) {
                let Some(target) = owning_module(&modules, &target) else {
                    continue;
                };
                if target != *module && !related(module, &target) {
                    edges.insert((module.clone(), target));
                }
            }
        }
        for (from, to) in &edges {
            if from < to && edges.contains(&(to.clone(), from.clone())) {
                let pair = (krate.clone(), from.clone(), to.clone());
                if allowed.contains(&pair) {
                    continue;
                }
                problems.push(Problem {
                    path: modules[from].clone(),
                    line: None,
                    message: format!(
                        "`{from}` and `{to}` of {krate} import each other: move what both need \
                         into one of them or a third module, or list the pair in {ALLOWLIST_FILE} \
                         with the reason it stays"
                    ),
                });
            }
        }
    }
    Ok(problems)
}

/// The circles `ARCHITECTURE.md` keeps: lines of the form
/// ``- `crate`: `a` and `b` ...``, as (crate, smaller, larger).
fn allowlist(root: &Path) -> anyhow::Result<BTreeSet<(String, String, String)>> {
    let path = root.join(ALLOWLIST_FILE);
    if !path.exists() {
        return Ok(BTreeSet::new());
    }
    let text = read(&path)?;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("- `") else {
            continue;
        };
        let ticked: Vec<&str> = rest.split('`').collect();
        // rest = crate`: `a` and `b` ...
        if ticked.len() >= 5
            && ticked[1].trim() == ":"
            && ticked[3].trim() == "and"
            && ticked[0].starts_with("mcp-")
        {
            let (a, b) = (ticked[2].to_owned(), ticked[4].to_owned());
            let (a, b) = if a < b { (a, b) } else { (b, a) };
            out.insert((ticked[0].to_owned(), a, b));
        }
    }
    Ok(out)
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs`
/// are the root, which takes part in no circle (it declares everything).
fn module_path(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if parts.is_empty() && matches!(stem, "lib" | "main") {
        return None;
    }
    if stem != "mod" {
        parts.push(stem.to_owned());
    }
    if parts.first().is_some_and(|first| first == "bin") {
        return None;
    }
    Some(parts.join("::"))
}

fn is_test_module(module: &str) -> bool {
    module
        .split("::")
        .any(|part| part == "tests" || part == "test_support" || part.ends_with("_tests"))
}

/// Whether one module is the other's ancestor.
fn related(a: &str, b: &str) -> bool {
    let within = |inner: &str, outer: &str| inner.starts_with(&format!("{outer}::"));
    within(a, b) || within(b, a)
}

/// The module that `path` (a crate-relative path like `session::Inner`)
/// lands in: its longest prefix that is a module.
fn owning_module(modules: &BTreeMap<String, String>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|candidate| modules.contains_key(candidate))
}

/// The crate-relative paths module `module` names outside its test code:
/// `crate::x::y` and `super::...` (resolved), in `use` items and in
/// expressions alike. Text after a `#[cfg(test)]` line is test code.
fn imports(module: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parent: Vec<&str> = module.split("::").collect();
    let mut in_use: Option<String> = None;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        // A `use` item may span lines: gather it up to its `;`.
        let trimmed = code.trim_start();
        if in_use.is_none()
            && (trimmed.starts_with("use ")
                || trimmed.starts_with("pub(crate) use ")
                || trimmed.starts_with("pub use "))
        {
            in_use = Some(String::new());
        }
        if let Some(item) = in_use.as_mut() {
            item.push_str(code);
            item.push(' ');
            if code.contains(';') {
                let item = in_use.take().unwrap_or_default();
                out.extend(use_paths(&item, &parent));
            }
            continue;
        }
        out.extend(inline_paths(code, &parent));
    }
    out
}

/// The paths of one `use` item, braces expanded one level deep enough for
/// this repository's style (`use crate::a::{b, c::D};`).
fn use_paths(item: &str, parent: &[&str]) -> Vec<String> {
    let body = item
        .trim()
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub ")
        .trim_start_matches("use ")
        .trim_end_matches([';', ' ']);
    let mut out = Vec::new();
    let (prefix, rest) = match body.find('{') {
        Some(at) => (
            &body[..at],
            Some(&body[at + 1..body.rfind('}').unwrap_or(body.len())]),
        ),
        None => (body, None),
    };
    let prefix = prefix.trim().trim_end_matches("::");
    match rest {
        None => out.extend(resolve(prefix, parent)),
        Some(rest) => {
            for part in split_top_level(rest) {
                let part = part.trim();
                if part.is_empty() {
                    continue;
                }
                let inner = part
                    .split('{')
                    .next()
                    .unwrap_or(part)
                    .trim()
                    .trim_end_matches("::");
                let joined = if inner == "self" {
                    prefix.to_owned()
                } else {
                    format!("{prefix}::{inner}")
                };
                out.extend(resolve(&joined, parent));
            }
        }
    }
    out
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// Paths written inline in code: `crate::a::b` and `super::a`.
fn inline_paths(code: &str, parent: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.extend(resolve(path.trim_end_matches(':'), parent));
        }
    }
    out
}

/// `crate::a::b` → `a::b`; `super::x` from `p::m` → `p::x`. Anything else
/// (another crate, `self::`) names no sibling module.
fn resolve(path: &str, module: &[&str]) -> Option<String> {
    if let Some(rest) = path.strip_prefix("crate::") {
        return Some(rest.to_owned());
    }
    let mut base: Vec<&str> = module.to_vec();
    let mut rest = path;
    let mut climbed = false;
    loop {
        if let Some(tail) = rest.strip_prefix("super::") {
            rest = tail;
        } else if rest == "super" {
            rest = "";
        } else {
            break;
        }
        base.pop();
        climbed = true;
    }
    if !climbed {
        return None;
    }
    if !rest.is_empty() {
        base.push(rest);
    }
    Some(base.join("::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planning_words_are_found_and_ordinary_words_are_not() {
        for text in [
            " the behaviour (seed 002) is",
            " as seeds 000 and 002 ask",
            " what issue 5 wanted",
            " see issue #12",
            " (checklist §4)",
        ] {
            assert!(planning_word(text).is_some(), "{text}");
        }
        for text in [
            " a random seed from the test",
            " the issuer is checked",
            " list_issues of a repository",
            " the 2025-11-25 spec",
        ] {
            assert_eq!(planning_word(text), None, "{text}");
        }
    }

    #[test]
    fn use_items_resolve_to_crate_paths() {
        let parent = ["bridge", "session"];
        assert_eq!(
            use_paths("use crate::tool::{DeferredTool, LiveTool};", &parent),
            ["tool::DeferredTool", "tool::LiveTool"]
        );
        assert_eq!(
            use_paths("use super::{binding::Binding, self};", &parent),
            ["bridge::binding::Binding", "bridge"]
        );
        assert_eq!(use_paths("use std::fmt;", &parent), Vec::<String>::new());
        assert_eq!(
            inline_paths("let x = crate::names::ToolNames::new();", &parent),
            ["names::ToolNames::new"]
        );
    }

    /// A crate whose `a` and `b` import each other, whose `c` imports its
    /// child, and whose test code imports `a`.
    fn repo(allow: &str) -> tempfile_dir::Dir {
        let dir = tempfile_dir::Dir::new();
        dir.write(
            "crates/mcp-x/src/lib.rs",
            "//! X.\nmod a;\nmod b;\nmod c;\n",
        );
        dir.write(
            "crates/mcp-x/src/a.rs",
            "//! A.\nuse crate::b::B;\npub(crate) struct A;\n",
        );
        dir.write(
            "crates/mcp-x/src/b.rs",
            "//! B.\npub(crate) struct B;\nfn f() { let _ = crate::a::A; }\n",
        );
        dir.write("crates/mcp-x/src/c/mod.rs", "//! C.\nmod d;\nuse d::D;\n");
        dir.write(
            "crates/mcp-x/src/c/d.rs",
            "//! D.\nuse super::super::a::A;\n#[cfg(test)]\nmod tests { use crate::c::X; }\n",
        );
        dir.write("ARCHITECTURE.md", allow);
        dir
    }

    #[test]
    fn a_circle_is_reported_once_unless_the_architecture_keeps_it() {
        let dir = repo("# Map\n");
        let problems = check_module_circles(&dir.0).unwrap();
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with("`a` and `b` of mcp-x import each other"),
            "{messages:?}"
        );
        assert_eq!(problems[0].path, "crates/mcp-x/src/a.rs");

        let kept = repo("- `mcp-x`: `b` and `a`: they must.\n");
        assert_eq!(check_module_circles(&kept.0).unwrap(), Vec::new());
    }

    #[test]
    fn planning_words_across_comment_lines_are_reported_with_their_line() {
        let dir = tempfile_dir::Dir::new();
        dir.write(
            "crates/mcp-x/src/lib.rs",
            "//! X.\n\nfn f() {}\n/// Background mode (seed\n/// 002) waits.\nfn g() {}\n",
        );
        let problems = check_planning_words(&dir.0).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, Some(4));
    }

    /// A scratch directory removed on drop.
    mod tempfile_dir {
        use std::path::PathBuf;
        use std::sync::atomic::{AtomicUsize, Ordering};

        pub(super) struct Dir(pub(super) PathBuf);

        impl Dir {
            pub(super) fn new() -> Dir {
                static COUNTER: AtomicUsize = AtomicUsize::new(0);
                let root = std::env::temp_dir().join(format!(
                    "xtask-tidy-source-{}-{}",
                    std::process::id(),
                    COUNTER.fetch_add(1, Ordering::Relaxed)
                ));
                let _ = std::fs::remove_dir_all(&root);
                Dir(root)
            }

            pub(super) fn write(&self, path: &str, text: &str) {
                let path = self.0.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn matching_on_the_initialize_literal_is_found_and_sending_it_is_not() {
        for line in [
            r#"            "initialize" => {"#,
            r#"        Some("initialize") => json!({"#,
            r#"                (Some("initialize"), Some(id)) => {"#,
            r#"        let result = if body["method"] == "initialize" {"#,
            r#"    if method != "initialize" {"#,
            r#"        "ping" | "initialize" => {}"#,
            r#"    matches!(method, "initialize")"#,
        ] {
            assert!(super::matches_initialize(line), "{line}");
        }
        for line in [
            r#"    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});"#,
            r#"    let answer = client.request("initialize", Some(&params)).await;"#,
            r##"    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#;"##,
            r#"    // "initialize" => is how the old code read it"#,
            r#"    if request.method == methods::INITIALIZE {"#,
        ] {
            assert!(!super::matches_initialize(line), "{line}");
        }
    }
}

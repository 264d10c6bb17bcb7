//! Golden files: every document under `tests/golden/<format>/` is read and its rendering compared with the `.expected` file beside it.
//!
//! The directory names the reader: `mcp_servers`, `vscode`, `store_v1`,
//! `detected` (format detection), `codex` (TOML), `goose` (YAML), or a
//! host's own file (`claude_code`,
//! `cursor`, `vscode_workspace`, `windsurf`, `gemini`, `zed`, `opencode`,
//! `cline`), written as that host writes it and read for the project
//! `/home/dev/projects/webapp` of the user whose home is `/home/dev`. Run
//! with `UPDATE_EXPECT=1` to rewrite the expectations after an intended
//! change, then review the diff.
//!
//! The expectations are a full build's: every host format read, every
//! URL checked.
#![cfg(all(feature = "host-configs", feature = "http"))]

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use expect_test::expect_file;
use mcp_config::{
    DocumentError, Format, ParsedDocument, ReadContext, StoreServer, parse_document_with, validate,
};

/// The one function that renders a reader's result: the servers in store
/// JSON (so every parsed field is visible), validation's findings for each,
/// and every error and warning.
fn render(result: &Result<ParsedDocument, DocumentError>) -> String {
    let mut out = String::new();
    let doc = match result {
        Err(error) => {
            writeln!(
                out,
                "document error [{}] at {}: {error}",
                error.code(),
                error.position()
            )
            .unwrap();
            return out;
        }
        Ok(doc) => doc,
    };
    writeln!(out, "format: {}", doc.format.map_or("none", Format::as_str)).unwrap();
    for warning in &doc.warnings {
        writeln!(out, "warning: {warning}").unwrap();
    }
    for (index, entry) in doc.entries.iter().enumerate() {
        match entry {
            Ok(config) => {
                writeln!(out, "\nentry {index}: server `{}`", config.id).unwrap();
                let json = serde_json::to_string_pretty(&StoreServer::new(config)).unwrap();
                writeln!(out, "{json}").unwrap();
                for problem in validate(config) {
                    writeln!(out, "  invalid: {problem}").unwrap();
                }
            }
            Err(error) => {
                writeln!(out, "\nentry {index}: error [{}]", error.code()).unwrap();
                for problem in &error.diagnostics {
                    writeln!(out, "  {problem}").unwrap();
                }
            }
        }
    }
    out
}

/// Every error, warning and validation message the result produces.
fn diagnostic_texts(result: &Result<ParsedDocument, DocumentError>) -> Vec<String> {
    let Ok(doc) = result else {
        let error = result.as_ref().unwrap_err();
        return vec![error.to_string(), format!("{error:?}")];
    };
    let mut texts: Vec<String> = doc.warnings.iter().map(ToString::to_string).collect();
    for entry in &doc.entries {
        match entry {
            Ok(config) => texts.extend(validate(config).iter().map(ToString::to_string)),
            Err(error) => texts.extend([error.to_string(), format!("{error:?}")]),
        }
    }
    texts
}

/// The format a directory's files are read as, and the context they are
/// read in: the shared formats without a project or home, the hosts' own
/// files for a project of a user.
fn format_for(dir: &str) -> (Option<Format>, ReadContext) {
    let format = match dir {
        "mcp_servers" => Some(Format::McpServers),
        "vscode" => Some(Format::VsCode),
        "store_v1" => Some(Format::StoreV1),
        "codex" => Some(Format::Codex),
        "goose" => Some(Format::Goose),
        "detected" => None,
        "claude_code" => Some(Format::ClaudeCode),
        "cursor" => Some(Format::Cursor),
        "vscode_workspace" => Some(Format::VsCode),
        "windsurf" => Some(Format::Windsurf),
        "gemini" => Some(Format::Gemini),
        "zed" => Some(Format::Zed),
        "opencode" => Some(Format::OpenCode),
        "cline" => Some(Format::Cline),
        other => panic!("unknown golden directory `{other}`: add it to format_for"),
    };
    let context = match dir {
        "mcp_servers" | "vscode" | "store_v1" | "detected" | "codex" | "goose" => {
            ReadContext::new()
        }
        _ => ReadContext::new()
            .with_project("/home/dev/projects/webapp")
            .with_home("/home/dev"),
    };
    (format, context)
}

/// Golden inputs: JSON, and the TOML and YAML some hosts write.
const INPUT_EXTENSIONS: [&str; 4] = ["json", "toml", "yaml", "yml"];

fn is_input(file: &Path) -> bool {
    file.extension()
        .is_some_and(|ext| INPUT_EXTENSIONS.iter().any(|input| ext == *input))
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn check_dir(dir: &str) {
    let path = golden_dir().join(dir);
    let mut inputs: Vec<PathBuf> = fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", path.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    inputs.sort();
    // An expectation without its input would rot unnoticed.
    for file in &inputs {
        if file.extension().is_some_and(|ext| ext == "expected") {
            assert!(
                INPUT_EXTENSIONS
                    .iter()
                    .any(|ext| file.with_extension(ext).exists()),
                "{} has no input file",
                file.display()
            );
        }
    }
    let inputs: Vec<&PathBuf> = inputs.iter().filter(|file| is_input(file)).collect();
    assert!(
        inputs.len() >= 3,
        "{dir}: expected at least 3 golden inputs, found {}",
        inputs.len()
    );
    for input in inputs {
        let bytes = fs::read(input).unwrap();
        let text = String::from_utf8(bytes).expect("golden inputs are UTF-8");
        let (format, context) = format_for(dir);
        let result = parse_document_with(&text, format, &context);
        let rendered = render(&result);
        // Diagnostics may name fields and variables, never values: every
        // secret-looking value in the inputs starts with one of these.
        let messages = diagnostic_texts(&result).join("\n");
        for marker in ["sk-", "ghp_", "pg-token", "ctx7-"] {
            assert!(
                !messages.contains(marker),
                "{}: a diagnostic quotes a value: {messages}",
                input.display()
            );
        }
        expect_file![input.with_extension("expected")].assert_eq(&rendered);
    }
}

#[test]
fn mcp_servers_format() {
    check_dir("mcp_servers");
}

#[test]
fn vscode_format() {
    check_dir("vscode");
}

#[test]
fn store_v1_format() {
    check_dir("store_v1");
}

#[test]
fn format_detection() {
    check_dir("detected");
}

#[test]
fn codex_format() {
    check_dir("codex");
}

#[test]
fn goose_format() {
    check_dir("goose");
}

#[test]
fn claude_code_format() {
    check_dir("claude_code");
}

#[test]
fn cursor_format() {
    check_dir("cursor");
}

#[test]
fn vscode_workspace_format() {
    check_dir("vscode_workspace");
}

#[test]
fn windsurf_format() {
    check_dir("windsurf");
}

#[test]
fn gemini_format() {
    check_dir("gemini");
}

#[test]
fn zed_format() {
    check_dir("zed");
}

#[test]
fn opencode_format() {
    check_dir("opencode");
}

#[test]
fn cline_format() {
    check_dir("cline");
}

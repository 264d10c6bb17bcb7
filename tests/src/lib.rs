//! Shared helpers for the workspace integration tests: locating the fixture
//! server and the independently written servers the tests run against.

pub mod bench_args;
pub mod servers;

use std::path::{Path, PathBuf};

/// The repository root (the workspace directory).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The entry point of `@modelcontextprotocol/server-everything`, installed
/// by `.ci/run` (`npm ci --prefix tests/interop`). Panics with the command to
/// run when it is missing: a missing prerequisite fails, it never passes.
pub fn server_everything() -> PathBuf {
    let path = repo_root()
        .join("tests/interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "server-everything is not installed at {}: run `npm ci --prefix tests/interop` (or bash .ci/run)",
        path.display()
    );
    path
}

/// The Python interpreter of the project venv that has FastMCP (`mcp` 1.x),
/// installed by `.ci/run`. Panics with the command to run when it is missing.
pub fn venv_python() -> PathBuf {
    let path = repo_root().join(".venv/bin/python");
    assert!(
        path.is_file(),
        "the Python venv is missing at {}: run `python3 -m venv .venv && .venv/bin/pip install -r tests/interop/requirements.txt` (or bash .ci/run)",
        path.display()
    );
    path
}

/// The Python interpreter of the venv that has the `mcp` 2.x SDK (`MCPServer`,
/// both protocol eras), separate from [`venv_python`]'s because the two SDK
/// lines cannot share a venv. Panics with the command to run when it is missing.
pub fn modern_venv_python() -> PathBuf {
    let path = repo_root().join(".venv-modern/bin/python");
    assert!(
        path.is_file(),
        "the modern Python venv is missing at {}: run `python3 -m venv .venv-modern && .venv-modern/bin/pip install -r tests/interop/requirements-modern.txt` (or bash .ci/run)",
        path.display()
    );
    path
}

/// The `mcp` 2.x server script (`MCPServer`, dual-era unless `--modern-only`).
pub fn modern_script() -> PathBuf {
    repo_root().join("tests/interop/modern_server.py")
}

/// The FastMCP server script used by the interop tests.
pub fn fastmcp_script() -> PathBuf {
    repo_root().join("tests/interop/fastmcp_server.py")
}

/// `node`, which must be on PATH for server-everything.
pub fn node() -> String {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join("node").is_file()))
        .unwrap_or(false);
    assert!(found, "node is not on PATH: install Node.js 20 or newer");
    "node".to_owned()
}

/// How many `tools/list` requests a fixture server's `--event-log` records
/// (its `tools-list ` lines); a log not written yet counts none.
pub fn tools_list_calls(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.starts_with("tools-list "))
        .count()
}

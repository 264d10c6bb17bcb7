//! `mcpctl import HOST`: copies the servers another application configured into mcpctl's own store.
//!
//! The servers are the ones discovery finds in the host's own files only
//! (its user-level files and, unless `--no-project`, the project's), after
//! the usual precedence: a project definition wins over the user's. Each is
//! added with `Store::create`, so the store's rules hold: validation, an
//! atomic owner-only write, and env and header values kept as write-only
//! secrets. Nothing printed here ever shows a value, only the names of env
//! variables and headers.
//!
//! A server whose id is already in the store is a conflict: it is reported
//! and the stored one is left as it is (`mcpctl remove ID` first to replace
//! it). An entry that could not be read or validated is reported with its
//! code. The exit status is 0 when at least one server was imported, and 2
//! when nothing was (no servers in the host's files, or every one a conflict
//! or an error), so a script can tell "something new is in the store".
//!
//! `--json` prints one object:
//!
//! ```json
//! {"host": "cursor", "store": "/home/ada/.local/share/mcpctl/mcp.json",
//!  "imported": [{"id": "github", "transport": "stdio", "enabled": true,
//!                "env": ["GITHUB_TOKEN"], "headers": [], "source": {...}}],
//!  "conflicts": [{"id": "fs", "source": {...}}],
//!  "errors": [{"id": "bad", "code": "missing_command", "message": "...", "source": {...}}]}
//! ```

use mcp_config::{
    Discovery, DiscoveryEntry, DiscoveryOptions, Host, ServerConfig, SourceMeta, Store, StoreError,
    TransportConfig,
};
use serde::Serialize;

use crate::exit::{CliError, Exit};
use crate::output::{Output, line};
use crate::servers::SourceJson;
use crate::sources::{self, SourceOptions};

/// One imported server: names only, never values.
#[derive(Debug, Serialize)]
struct Imported {
    id: String,
    transport: &'static str,
    enabled: bool,
    /// The names of its env variables (stdio).
    env: Vec<String>,
    /// The names of its headers (HTTP).
    headers: Vec<String>,
    source: SourceJson,
}

/// A server left out because the store already has its id.
#[derive(Debug, Serialize)]
struct Conflict {
    id: String,
    source: SourceJson,
}

/// An entry that could not be imported.
#[derive(Debug, Serialize)]
struct Failed {
    id: Option<String>,
    code: &'static str,
    message: String,
    source: SourceJson,
}

/// What `import` did.
#[derive(Debug, Serialize)]
struct ImportReport {
    host: &'static str,
    store: String,
    imported: Vec<Imported>,
    conflicts: Vec<Conflict>,
    errors: Vec<Failed>,
}

/// `mcpctl import HOST`.
pub(crate) fn run(host: Host, options: &SourceOptions, output: &Output) -> Result<Exit, CliError> {
    let project = sources::project_dir(options)?;
    let hosts = sources::host_sources(project.as_ref())
        .ok_or_else(|| {
            CliError::usage(format!(
                "no home directory: cannot find {}'s files",
                host.label()
            ))
            .hint("set HOME")
        })?
        .only([host]);
    let looked_at: Vec<String> = hosts
        .files()
        .iter()
        .map(|file| file.path.display().to_string())
        .collect();
    let mut discovery_options = DiscoveryOptions::default();
    discovery_options.project_configs = !options.no_project;
    let report = hosts.add_to(Discovery::new(discovery_options)).discover();

    let store = Store::open(sources::store_path()?);
    let mut result = ImportReport {
        host: host.id(),
        store: store.path().display().to_string(),
        imported: Vec::new(),
        conflicts: Vec::new(),
        errors: Vec::new(),
    };
    for entry in report.entries {
        match entry {
            DiscoveryEntry::Server(server) | DiscoveryEntry::Disabled(server) => {
                let summary = summary(&server.config, &server.source);
                match store.create(server.config) {
                    Ok(_) => result.imported.push(summary),
                    Err(StoreError::DuplicateId { id }) => result.conflicts.push(Conflict {
                        id,
                        source: (&server.source).into(),
                    }),
                    Err(StoreError::Invalid { id, diagnostics }) => {
                        let first = diagnostics.first();
                        result.errors.push(Failed {
                            id: Some(id),
                            code: first.map_or("invalid_config", |d| d.code()),
                            message: first.map(|d| d.message.clone()).unwrap_or_default(),
                            source: (&server.source).into(),
                        });
                    }
                    // The store itself is unusable (malformed, unwritable):
                    // nothing else can be imported either.
                    Err(other) => return Err(other.into()),
                }
            }
            DiscoveryEntry::Error {
                source,
                server,
                diagnostics,
            } => {
                let first = diagnostics.first();
                result.errors.push(Failed {
                    id: server,
                    code: first.map_or("invalid_config", |d| d.code()),
                    message: first.map(|d| d.message.clone()).unwrap_or_default(),
                    source: (&source).into(),
                });
            }
            _ => {}
        }
    }

    let printed = if output.json {
        output.json(&result)
    } else {
        output.text(&render(&result, host))
    };
    printed.map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))?;
    if !result.imported.is_empty() {
        return Ok(Exit::Success);
    }
    Err(if result.conflicts.is_empty() && result.errors.is_empty() {
        CliError::usage(format!(
            "no servers found in {}'s files ({})",
            host.label(),
            looked_at.join(", ")
        ))
    } else {
        let error = CliError::usage(format!(
            "nothing imported from {}: {} already in the store, {} not readable",
            host.label(),
            result.conflicts.len(),
            result.errors.len()
        ));
        if result.conflicts.is_empty() {
            error
        } else {
            error.hint("`mcpctl remove ID` first to replace a stored server")
        }
    })
}

fn summary(config: &ServerConfig, source: &SourceMeta) -> Imported {
    let names = |entries: &[mcp_config::SecretEntry]| -> Vec<String> {
        entries.iter().map(|entry| entry.key.clone()).collect()
    };
    let (env, headers) = match &config.transport {
        TransportConfig::Stdio(stdio) => (names(&stdio.env), Vec::new()),
        TransportConfig::Http(http) | TransportConfig::Sse(http) => {
            let mut headers = names(&http.headers);
            headers.extend(http.env_headers.iter().map(|h| h.header.clone()));
            (Vec::new(), headers)
        }
        _ => (Vec::new(), Vec::new()),
    };
    Imported {
        id: config.id.clone(),
        transport: config.transport.kind().as_str(),
        enabled: config.enabled,
        env,
        headers,
        source: source.into(),
    }
}

/// One line per server: what was imported (with env and header names),
/// what was kept, what could not be read.
fn render(result: &ImportReport, host: Host) -> String {
    let mut text = String::new();
    for server in &result.imported {
        let mut names = Vec::new();
        if !server.env.is_empty() {
            names.push(format!("env {}", server.env.join(", ")));
        }
        if !server.headers.is_empty() {
            names.push(format!("headers {}", server.headers.join(", ")));
        }
        let names = if names.is_empty() {
            String::new()
        } else {
            format!(" ({}; values stored as secrets)", names.join("; "))
        };
        let disabled = if server.enabled { "" } else { " disabled" };
        text.push_str(&line(&format!(
            "imported{disabled} {} server `{}` from {}{names}",
            server.transport,
            server.id,
            source_text(&server.source)
        )));
        text.push('\n');
    }
    for conflict in &result.conflicts {
        text.push_str(&line(&format!(
            "conflict: `{}` from {} is already in the store; kept the stored one",
            conflict.id,
            source_text(&conflict.source)
        )));
        text.push('\n');
    }
    for failed in &result.errors {
        // A file that failed whole names itself in its message.
        let what = match &failed.id {
            Some(id) => format!("`{id}` from {}: ", source_text(&failed.source)),
            None => String::new(),
        };
        text.push_str(&line(&format!(
            "not imported: {what}{} [{}]",
            failed.message, failed.code
        )));
        text.push('\n');
    }
    text.push_str(&format!(
        "{} of {}'s servers imported into {}\n",
        result.imported.len(),
        host.label(),
        line(&result.store)
    ));
    text
}

fn source_text(source: &SourceJson) -> String {
    match &source.path {
        Some(path) => format!("{} ({path})", source.label),
        None => source.label.clone(),
    }
}

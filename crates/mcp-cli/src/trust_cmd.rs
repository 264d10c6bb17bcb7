//! Project trust in `mcpctl`: the gate every run applies, the terminal question, and `trust` / `untrust`.
//!
//! A project's servers (its `.mcp.json`) run commands, or read variables
//! into requests, that the person did not write; mcp-config's
//! [`TrustGate`] holds them back until the person approves exactly that
//! definition. Approvals live in `trust.json` beside the store.
//!
//! - Commands that start servers for the person (`tools`, `call`, `watch`,
//!   `retry`) ask on a terminal (stdin and stderr both terminals) before
//!   the first start of a server that is not approved:
//!   `Project server `x` from /p/.mcp.json runs: npx -y foo. Trust it? [y/N]`.
//!   A yes is remembered; anything else refuses for this run.
//! - Without a terminal, and in `servers`, nobody is asked: the server is
//!   listed as `untrusted` with the command that approves it,
//!   `mcpctl trust SERVER --project DIR`. A script approves explicitly with
//!   that command; there is no flag that approves everything.
//! - `mcpctl trust --list` lists the approvals; `mcpctl untrust SERVER`
//!   forgets one.
//!
//! Everything from the project is shown escaped (`mcp_proto::text`): a
//! command line may hold control characters meant for the terminal.

use crate::output::shell_word;
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::PathBuf;

use mcp_config::{
    Discovery, DiscoveryEntry, DiscoveryReport, PrivateFileError, ProcessEnv, TrustDecision,
    TrustGate, TrustPrompt, TrustRequest, TrustStore, TrustSubject, UntrustedServer,
};
use serde_json::json;

use crate::exit::{CliError, Exit};
use crate::output::{Output, Paint, line};
use crate::sources::{self, SourceOptions};

/// The project directory `options` name: `--project DIR`, else the current
/// directory; `None` with `--no-project`.
pub(crate) fn project_dir(options: &SourceOptions) -> Option<PathBuf> {
    if options.no_project {
        return None;
    }
    options
        .project
        .clone()
        .or_else(|| std::env::current_dir().ok())
}

/// The approvals file of this user (`trust.json` in the data dir).
pub(crate) fn store() -> Result<TrustStore, CliError> {
    TrustStore::open_default(&sources::store_location(), &ProcessEnv).map_err(|error| {
        CliError::usage(format!(
            "cannot decide about project servers: {} (approvals are kept there)",
            mcp_proto::text::ErrorChain(&error)
        ))
        .hint("set HOME or MCPCTL_DATA_DIR, or pass --no-project")
    })
}

/// The gate of this run: approvals keyed by the project of `options`, the
/// approving command spelled for `mcpctl`. Nobody is asked here.
pub(crate) fn gate(options: &SourceOptions) -> Result<Option<TrustGate>, CliError> {
    let Some(project) = project_dir(options) else {
        return Ok(None);
    };
    let gate = TrustGate::new(store()?)
        .project(project)
        .approve_command(approve_command);
    Ok(Some(gate))
}

/// `mcpctl trust SERVER --project DIR`, quoted for a POSIX shell.
fn approve_command(request: &TrustRequest) -> String {
    format!(
        "mcpctl trust {} --project {}",
        shell_word(&request.server),
        shell_word(&request.project.to_string_lossy())
    )
}

/// Discovery over `options`' sources with this run's gate.
pub(crate) fn discovery(options: &SourceOptions) -> Result<Discovery, CliError> {
    let sources = sources::gather(options)?;
    Ok(match gate(options)? {
        Some(gate) => sources.discovery.trust(gate),
        None => sources.discovery,
    })
}

/// Asks about the untrusted servers of `report` when this run may ask
/// (`ask`, and stdin and stderr are terminals), then turns the ones still
/// untrusted into error entries with the `untrusted` code, so that the
/// manager never starts them and every command reports them alike.
/// Blocks on the terminal: call it off the async workers.
///
/// Returns the servers still untrusted, with their definitions, for
/// listings (what a person needs to see to decide).
pub(crate) fn settle(
    report: &mut DiscoveryReport,
    gate: Option<&TrustGate>,
    ask: bool,
) -> Vec<mcp_config::DiscoveredServer> {
    if let Some(gate) = gate
        && ask
        && io::stdin().is_terminal()
        && io::stderr().is_terminal()
        && report.untrusted().next().is_some()
    {
        gate.apply(report, &TerminalTrust::new());
    }
    let mut held = Vec::new();
    for entry in &mut report.entries {
        if let DiscoveryEntry::Untrusted(untrusted) = entry {
            held.push(untrusted.server.clone());
            *entry = DiscoveryEntry::Error {
                source: untrusted.server.source.clone(),
                server: Some(untrusted.request.server.clone()),
                diagnostics: vec![untrusted.diagnostic()],
            };
        }
    }
    held
}

/// The terminal question, one server at a time.
#[derive(Debug)]
struct TerminalTrust {
    output: Output,
}

impl TerminalTrust {
    fn new() -> Self {
        TerminalTrust {
            output: Output::new(false),
        }
    }
}

impl TrustPrompt for TerminalTrust {
    fn decide(&self, request: &TrustRequest) -> TrustDecision {
        let question = format!(
            "{} {} Trust it? [y/N] ",
            self.output.paint_err(Paint::Yellow, "trust needed:"),
            describe(request)
        );
        let mut stderr = io::stderr().lock();
        let _ = stderr.write_all(question.as_bytes());
        let _ = stderr.flush();
        drop(stderr);
        let mut answer = String::new();
        match io::stdin().lock().read_line(&mut answer) {
            Ok(n) if n > 0 && is_yes(&answer) => TrustDecision::ApproveAndRemember,
            _ => TrustDecision::Refuse,
        }
    }
}

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// `Project server `x` from FILE runs: CMD.` (or: sends the values of ...),
/// every part from the project escaped.
pub(crate) fn describe(request: &TrustRequest) -> String {
    let from = request.source_file.as_ref().map_or_else(
        || format!(" of {}", line(&request.project.to_string_lossy())),
        |file| format!(" from {}", line(&file.to_string_lossy())),
    );
    let what = match &request.subject {
        TrustSubject::Command { .. } => {
            let mut text = format!("runs: {}.", line(&command_line(&request.subject)));
            let reads = request.subject.reads();
            if !reads.is_empty() {
                text.push_str(&format!(" It receives your {}.", variables(reads)));
            }
            text
        }
        _ => format!(
            "sends your {} to the server it names.",
            variables(request.subject.reads())
        ),
    };
    format!("Project server `{}`{from} {what}", line(&request.server))
}

fn variables(names: &[String]) -> String {
    let list: Vec<String> = names.iter().map(|n| format!("${}", line(n))).collect();
    format!(
        "environment variable{} {}",
        if names.len() == 1 { "" } else { "s" },
        list.join(", ")
    )
}

/// The command line with each word quoted as a shell would need it.
fn command_line(subject: &TrustSubject) -> String {
    match subject {
        TrustSubject::Command { command, args, .. } => std::iter::once(command)
            .chain(args)
            .map(|word| shell_word(word).into_owned())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// `mcpctl trust SERVER`: approves the project server's current definition.
pub(crate) async fn trust(
    server: &str,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    let options = options.clone();
    let found = {
        let options = options.clone();
        tokio::task::spawn_blocking(move || {
            discovery(&options).map(|discovery| discovery.discover())
        })
        .await
        .map_err(|e| CliError::usage(format!("discovery failed: {e}")))??
    };
    let untrusted: Option<&UntrustedServer> =
        found.untrusted().find(|u| u.request.server == server);
    let Some(untrusted) = untrusted else {
        return Err(not_waiting(&found, server, &options));
    };
    let store = store()?;
    store.approve(&untrusted.request).map_err(file_error)?;
    if output.json {
        output
            .json(&json!({
                "server": server,
                "project": untrusted.request.project,
                "hash": untrusted.request.hash,
                "approved": true,
            }))
            .map_err(stdout_error)?;
    } else {
        eprintln!("mcpctl: approved. {}", describe(&untrusted.request));
    }
    Ok(Exit::Success)
}

/// Why `trust SERVER` has nothing to approve.
fn not_waiting(report: &DiscoveryReport, server: &str, options: &SourceOptions) -> CliError {
    let entry = report
        .entries
        .iter()
        .find(|entry| entry.server_id() == Some(server));
    match entry {
        Some(DiscoveryEntry::Server(found)) | Some(DiscoveryEntry::Disabled(found)) => {
            if found.source.level == mcp_config::ConfigLevel::Project
                && TrustSubject::of(&found.config).is_none()
            {
                CliError::usage(format!(
                    "project server `{}` needs no approval: it runs nothing and reads none of your environment variables",
                    line(server)
                ))
            } else if found.source.level == mcp_config::ConfigLevel::Project {
                CliError::usage(format!(
                    "project server `{}` is already trusted as it is defined now",
                    line(server)
                ))
            } else {
                CliError::usage(format!(
                    "server `{}` is not a project server ({}); only project servers need approval",
                    line(server),
                    line(&found.source.to_string())
                ))
            }
        }
        Some(_) => CliError::usage(format!(
            "server `{}` cannot be approved: its configuration has errors",
            line(server)
        ))
        .hint("`mcpctl servers` says what to fix"),
        None => {
            let project = project_dir(options)
                .map_or_else(|| "no project".to_owned(), |dir| dir.display().to_string());
            CliError::usage(format!(
                "no server with id `{}` in the project ({})",
                line(server),
                line(&project)
            ))
            .hint("pass --project DIR to name the project")
        }
    }
}

/// `mcpctl untrust SERVER`: forgets the approval in this project.
pub(crate) fn untrust(
    server: &str,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    let project = project_dir(options)
        .ok_or_else(|| CliError::usage("--no-project names no project to untrust a server in"))?;
    let removed = store()?.revoke(&project, server).map_err(file_error)?;
    if output.json {
        output
            .json(&json!({"server": server, "removed": removed}))
            .map_err(stdout_error)?;
        return Ok(Exit::Success);
    }
    if removed {
        eprintln!(
            "mcpctl: `{}` is no longer trusted in {}",
            line(server),
            line(&project.display().to_string())
        );
        Ok(Exit::Success)
    } else {
        Err(CliError::usage(format!(
            "`{}` was not trusted in {}",
            line(server),
            line(&project.display().to_string())
        ))
        .hint("`mcpctl trust --list` lists the approvals"))
    }
}

/// `mcpctl trust --list`.
pub(crate) fn list(output: &Output) -> Result<Exit, CliError> {
    let store = store()?;
    let approvals = store.list().map_err(file_error)?;
    if output.json {
        let rows: Vec<_> = approvals
            .iter()
            .map(|a| {
                json!({"project": a.project, "server": a.server, "hash": a.hash,
                       "approved_at": a.approved_at})
            })
            .collect();
        output.json(&rows).map_err(stdout_error)?;
        return Ok(Exit::Success);
    }
    if approvals.is_empty() {
        output
            .text(&format!(
                "no project server is trusted ({})\n",
                store.path().display()
            ))
            .map_err(stdout_error)?;
        return Ok(Exit::Success);
    }
    let mut table = crate::output::Table::new(&["server", "project", "definition"]);
    for approval in &approvals {
        let short = approval.hash.get(..19).unwrap_or(&approval.hash);
        // The table escapes its cells.
        table.painted_row(vec![
            (approval.server.clone(), None),
            (approval.project.clone(), None),
            (short.to_owned(), Some(Paint::Dim)),
        ]);
    }
    output.text(&table.render(output)).map_err(stdout_error)?;
    Ok(Exit::Success)
}

fn file_error(error: PrivateFileError) -> CliError {
    CliError::usage(format!(
        "{} [{}]",
        mcp_proto::text::ErrorChain(&error),
        error.code()
    ))
}

fn stdout_error(error: io::Error) -> CliError {
    CliError::usage(format!("cannot write to stdout: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_a_shell_only_when_needed() {
        assert_eq!(shell_word("npx"), "npx");
        assert_eq!(shell_word("--port=8080"), "--port=8080");
        assert_eq!(shell_word("two words"), "'two words'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn answers() {
        assert!(is_yes("y\n"));
        assert!(is_yes(" YES "));
        assert!(!is_yes(""));
        assert!(!is_yes("n"));
        assert!(!is_yes("sure"));
    }

    #[test]
    fn the_question_escapes_what_the_project_wrote() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"x\u001b[2J": {"command": "npx",
                "args": ["-y", "foo\u001b]0;pwned\u0007", "a b", "${TOKEN}"]}}}"#,
        )
        .unwrap();
        let gate = TrustGate::new(TrustStore::open(dir.path().join("data/trust.json")));
        let report = Discovery::new(mcp_config::DiscoveryOptions::default())
            .project_root(dir.path())
            .trust(gate)
            .discover();
        let request = &report.untrusted().next().expect("untrusted").request;
        let text = describe(request);
        assert!(!text.contains('\u{1b}'), "{text:?}");
        assert!(text.contains("runs: npx -y "), "{text}");
        assert!(text.contains("'a b'"), "{text}");
        assert!(text.contains("$TOKEN"), "{text}");
    }
}

//! The approval prompt: mcp-toolbridge's `ApprovalHandler`, answered by the person at the terminal.
//!
//! The bridge decides when to ask (the preset, session grants) and what an
//! answer means; this module only shows the request on stderr and reads
//! the answer from stdin, which must be a terminal: `mcpctl` never installs
//! the handler otherwise, so a script cannot answer by piping text in, and
//! a call that needs approval without a terminal is refused by the bridge
//! ("nobody can approve it").
//!
//! Answers: `o`/`once`/`y`/`yes` allow once, `s`/`session` allow this tool
//! for the rest of the session (only when the request offers it),
//! `d`/`deny`/`n`/`no` deny. An empty line or the end of input denies;
//! anything else asks again.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use async_trait::async_trait;
use mcp_toolbridge::{ApprovalDecision, ApprovalHandler, ApprovalRequest, PermissionPreset};
use tokio::sync::Mutex;

use crate::output::{Output, Paint, line};

/// Asks at the terminal, one request at a time.
#[derive(Debug)]
pub(crate) struct TerminalApproval {
    output: Output,
    /// Serializes prompts: two questions must never interleave.
    asking: Mutex<()>,
}

impl TerminalApproval {
    /// A handler printing with `output`'s stderr colours.
    pub(crate) fn new(output: Output) -> Arc<Self> {
        Arc::new(TerminalApproval {
            output,
            asking: Mutex::new(()),
        })
    }
}

#[async_trait]
impl ApprovalHandler for TerminalApproval {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        let _turn = self.asking.lock().await;
        let question = question(request, &self.output);
        let allow_session = request.allow_session;
        // Reading the terminal blocks; it runs off the async workers. If the
        // bridge gives up waiting (timeout, cancellation), the thread is
        // left to finish its read and its answer is ignored.
        tokio::task::spawn_blocking(move || ask(&question, allow_session))
            .await
            .unwrap_or(ApprovalDecision::Deny)
    }
}

/// The text shown before the answer is read.
fn question(request: &ApprovalRequest, output: &Output) -> String {
    let preset = match request.preset {
        PermissionPreset::FullAccess => "full",
        PermissionPreset::WorkspaceWrite => "workspace",
        PermissionPreset::ReadOnly => "readonly",
        _ => "this preset",
    };
    // The names may be the server's: shown escaped, like the arguments.
    let server = if request.server_name == request.server {
        format!("`{}`", line(&request.server))
    } else {
        format!(
            "`{}` ({})",
            line(&request.server),
            line(&request.server_name)
        )
    };
    let mut text = format!(
        "{} call tool `{}` of server {server}? (preset {preset})\n",
        output.paint_err(Paint::Yellow, "approval needed:"),
        line(&request.tool),
    );
    let arguments = crate::output::to_json_line(&request.arguments);
    text.push_str(&format!("  arguments: {arguments}\n"));
    if let Some(annotations) = &request.annotations {
        let mut hints = Vec::new();
        if annotations.read_only() {
            hints.push("read-only");
        } else if annotations.destructive() {
            hints.push("may be destructive");
        }
        if !annotations.open_world() {
            hints.push("closed world");
        }
        if !hints.is_empty() {
            text.push_str(&format!(
                "  the server says: {} (a hint, not verified)\n",
                hints.join(", ")
            ));
        }
    }
    text.push_str(if request.allow_session {
        "allow [o]nce, allow this tool for this [s]ession, or [d]eny? "
    } else {
        "allow [o]nce or [d]eny? "
    });
    text
}

/// Prints `question` on stderr and reads answers from stdin until one is
/// understood.
fn ask(question: &str, allow_session: bool) -> ApprovalDecision {
    let stdin = io::stdin();
    let mut line = String::new();
    for _ in 0..5 {
        let mut stderr = io::stderr().lock();
        let _ = stderr.write_all(question.as_bytes());
        let _ = stderr.flush();
        drop(stderr);
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return ApprovalDecision::Deny,
            Ok(_) => {}
        }
        if let Some(decision) = parse(&line, allow_session) {
            return decision;
        }
        eprintln!(
            "please answer {}",
            if allow_session { "o, s or d" } else { "o or d" }
        );
    }
    ApprovalDecision::Deny
}

/// One answer; `None` when it is not understood.
fn parse(answer: &str, allow_session: bool) -> Option<ApprovalDecision> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => Some(ApprovalDecision::AllowOnce),
        "s" | "session" if allow_session => Some(ApprovalDecision::AllowSession),
        "" | "d" | "deny" | "n" | "no" => Some(ApprovalDecision::Deny),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse("o\n", true), Some(ApprovalDecision::AllowOnce));
        assert_eq!(parse(" YES ", false), Some(ApprovalDecision::AllowOnce));
        assert_eq!(parse("s", true), Some(ApprovalDecision::AllowSession));
        assert_eq!(parse("s", false), None);
        assert_eq!(parse("", true), Some(ApprovalDecision::Deny));
        assert_eq!(parse("no", true), Some(ApprovalDecision::Deny));
        assert_eq!(parse("maybe", true), None);
    }
}

//! What a person at a terminal sees while `mcpctl` waits: a line per server while servers connect, and a call's progress reports.
//!
//! Everything here goes to stderr, and only when stderr is a terminal and
//! the run is not `--json` ([`Output::progress`]): stdout stays exactly
//! the command's result, and a pipe or a log gets no cursor movement. The
//! lines are redrawn in place (cursor up, erase below) and erased when the
//! wait ends, each cut to the terminal's width so that none wraps. A wait
//! shorter than [`QUIET_FOR`] shows nothing.
//!
//! Server text (a progress message) is escaped onto one line
//! ([`crate::output::line`]) before it is shown.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use mcp_manager::{ServerInfo, ServerStatus};
use mcp_toolbridge::CallProgress;
use tokio::time::Instant;

use crate::output::{Output, line};

/// How long a wait stays silent: connecting the demo server takes a few
/// milliseconds, and a flash of lines would only distract.
pub(crate) const QUIET_FOR: Duration = Duration::from_millis(200);

/// How often the elapsed times are redrawn.
const TICK: Duration = Duration::from_millis(100);

/// The next redraw: after [`TICK`] when something is shown, never otherwise.
pub(crate) async fn tick(shown: bool) {
    if shown {
        tokio::time::sleep(TICK).await;
    } else {
        std::future::pending::<()>().await;
    }
}

/// At most this many server lines; the rest are counted on one more.
const MAX_SERVER_LINES: usize = 12;

/// Whether a status is final for this run: not queued, connecting or
/// refreshing.
pub(crate) fn is_settled(status: &ServerStatus) -> bool {
    !status.is_pending() && !matches!(status, ServerStatus::Refreshing)
}

/// How many of `statuses` are ready (connected and settled) and how many
/// are still waiting: a server refreshing its lists is connected but still
/// waited for, so it counts once, as waiting.
fn ready_and_waiting<'a>(statuses: impl Iterator<Item = &'a ServerStatus>) -> (usize, usize) {
    statuses.fold((0, 0), |(ready, waiting), status| {
        if !is_settled(status) {
            (ready, waiting + 1)
        } else if status.is_connected() {
            (ready + 1, waiting)
        } else {
            (ready, waiting)
        }
    })
}

/// A block of status lines at the bottom of the terminal, redrawn in place.
#[derive(Debug, Default)]
struct Block {
    /// How many lines the last draw left above the cursor.
    shown: usize,
    /// [`crate::asks::questions`] at the last draw.
    questions: u64,
}

impl Block {
    /// Replaces what was drawn with `lines`.
    fn draw(&mut self, lines: &[String]) {
        if self.forget_across_questions() {
            return;
        }
        let width = terminal_width().saturating_sub(1).max(20);
        let mut text = self.erase_sequence();
        for l in lines {
            text.push_str(&cut(l, width));
            text.push('\n');
        }
        self.shown = lines.len();
        write_stderr(&text);
    }

    /// Erases what was drawn.
    fn clear(&mut self) {
        self.forget_across_questions();
        if self.shown > 0 {
            let text = self.erase_sequence();
            self.shown = 0;
            write_stderr(&text);
        }
    }

    /// A question at the terminal ([`crate::asks`]) since the last draw
    /// leaves what was drawn above it: it is not erased. Returns whether a
    /// question is on the terminal now, when nothing is drawn.
    fn forget_across_questions(&mut self) -> bool {
        let questions = crate::asks::questions();
        if crate::asks::asking() || questions != self.questions {
            self.shown = 0;
        }
        self.questions = questions;
        crate::asks::asking()
    }

    fn erase_sequence(&self) -> String {
        if self.shown == 0 {
            "\r\x1b[J".to_owned()
        } else {
            format!("\r\x1b[{}A\x1b[J", self.shown)
        }
    }
}

fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

/// `text` cut to `width` characters, with `…` when cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The terminal's width in columns (80 when it cannot be read).
fn terminal_width() -> usize {
    #[cfg(unix)]
    {
        if let Ok(size) = rustix::termios::tcgetwinsize(std::io::stderr())
            && size.ws_col > 0
        {
            return usize::from(size.ws_col);
        }
    }
    80
}

fn seconds(elapsed: Duration) -> String {
    format!("{:.1} s", elapsed.as_secs_f64())
}

/// The servers' lines while they connect: each server's status and how
/// long it has taken (until it settled, for those that did).
#[derive(Debug)]
pub(crate) struct Connecting {
    started: Instant,
    /// When each settled server was first seen settled.
    settled_at: HashMap<String, Duration>,
    block: Block,
}

impl Connecting {
    /// A display for connections that started at `started`; `None` when
    /// `output` shows no progress.
    pub(crate) fn new(output: &Output, started: Instant) -> Option<Connecting> {
        output.progress.then(|| Connecting {
            started,
            settled_at: HashMap::new(),
            block: Block::default(),
        })
    }

    /// Redraws the lines for `servers` (after [`QUIET_FOR`]).
    pub(crate) fn show(&mut self, servers: &[ServerInfo]) {
        let elapsed = self.started.elapsed();
        let mut servers: Vec<&ServerInfo> = servers.iter().collect();
        servers.sort_by(|a, b| a.id.cmp(&b.id));
        for server in &servers {
            if is_settled(&server.status) {
                self.settled_at.entry(server.id.clone()).or_insert(elapsed);
            }
        }
        let all_settled = servers.iter().all(|s| is_settled(&s.status));
        // Too soon to bother, or nothing to wait for that is not shown already.
        if elapsed < QUIET_FOR || (all_settled && self.block.shown == 0) {
            return;
        }
        let (ready, waiting) = ready_and_waiting(servers.iter().map(|s| &s.status));
        let mut lines = vec![format!(
            "mcpctl: connecting {} server{}: {ready} ready, {waiting} waiting ({})",
            servers.len(),
            if servers.len() == 1 { "" } else { "s" },
            seconds(elapsed)
        )];
        let width = servers
            .iter()
            .map(|s| s.id.len())
            .max()
            .unwrap_or(0)
            .min(32);
        // Waiting servers first: they are what the person waits for.
        servers.sort_by_key(|s| is_settled(&s.status));
        for server in servers.iter().take(MAX_SERVER_LINES) {
            let took = self.settled_at.get(&server.id).copied().unwrap_or(elapsed);
            // A package launcher's first run may be a download.
            let note = if server.first_start {
                "  first start: it may be downloading"
            } else {
                ""
            };
            lines.push(format!(
                "  {:<width$}  {:<12} {}{note}",
                line(&server.id),
                server.status.as_str(),
                seconds(took)
            ));
        }
        if servers.len() > MAX_SERVER_LINES {
            lines.push(format!("  … and {} more", servers.len() - MAX_SERVER_LINES));
        }
        self.block.draw(&lines);
    }

    /// Erases the lines: the command's own output follows.
    pub(crate) fn finish(&mut self) {
        self.block.clear();
    }
}

/// A call's progress line: the server's reports as they arrive.
#[derive(Debug)]
pub(crate) struct CallMeter {
    what: String,
    started: Instant,
    last: Option<CallProgress>,
    block: Block,
}

impl CallMeter {
    /// A line for the call of `what` (`server.tool`); `None` when `output`
    /// shows no progress.
    pub(crate) fn new(output: &Output, what: &str) -> Option<CallMeter> {
        output.progress.then(|| CallMeter {
            what: line(what).into_owned(),
            started: Instant::now(),
            last: None,
            block: Block::default(),
        })
    }

    /// Takes a report and redraws.
    pub(crate) fn report(&mut self, progress: CallProgress) {
        self.last = Some(progress);
        self.redraw();
    }

    /// Redraws the elapsed time (after [`QUIET_FOR`], or at once once a
    /// report came).
    pub(crate) fn redraw(&mut self) {
        let elapsed = self.started.elapsed();
        if self.last.is_none() && elapsed < QUIET_FOR {
            return;
        }
        let mut text = format!("mcpctl: {} running ({})", self.what, seconds(elapsed));
        if let Some(last) = &self.last {
            let amount = match (last.total, last.fraction()) {
                (Some(total), Some(fraction)) => {
                    format!("{} of {} ({:.0}%)", last.progress, total, fraction * 100.0)
                }
                _ => format!("{}", last.progress),
            };
            text.push_str(&format!(": {amount}"));
            if let Some(message) = last.message.as_deref().filter(|m| !m.is_empty()) {
                text.push_str(&format!(", {}", line(message)));
            }
        }
        self.block.draw(&[text]);
    }

    /// Erases the line: the result follows.
    pub(crate) fn finish(&mut self) {
        self.block.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refreshing_server_is_waited_for_not_yet_ready() {
        let statuses = [
            ServerStatus::Connecting,
            ServerStatus::Refreshing,
            ServerStatus::Ready,
            ServerStatus::Disabled,
        ];
        assert_eq!(ready_and_waiting(statuses.iter()), (1, 2));
        assert_eq!(
            ready_and_waiting([ServerStatus::Refreshing].iter()),
            (0, 1),
            "one server is counted once"
        );
    }

    #[test]
    fn lines_are_cut_to_the_width() {
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdefg", 6), "abcde…");
        assert_eq!(cut("ééééééé", 4), "ééé…");
    }

    #[test]
    fn a_redraw_moves_up_over_what_was_drawn() {
        let mut block = Block {
            shown: 3,
            questions: 0,
        };
        assert_eq!(block.erase_sequence(), "\r\x1b[3A\x1b[J");
        block.shown = 0;
        assert_eq!(block.erase_sequence(), "\r\x1b[J");
    }
}

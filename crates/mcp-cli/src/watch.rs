//! `mcpctl watch`: every server's status, live, until all have settled (or, with `--follow`, until Ctrl-C).
//!
//! On a terminal: one line per server, redrawn in place, with a spinner
//! and the elapsed time while it is queued or connecting. Otherwise
//! (a pipe, a file, a CI log): one line per change, stamped with the time
//! since the start, then the `servers` table. With `--json`: one document
//! at the end, `{"events": [{"t_ms", "event", "id", "status", "tools",
//! "error"}], "servers": [...]}` with the rows of `mcpctl servers`.
//!
//! `--follow` keeps watching after the servers settle and streams each
//! event as it happens: a status change (`"event": "status"`), a server
//! going back to connecting after it was ready, failed or idle
//! (`"reconnect"`), and a new tool list (`"tools_changed"`, with the tool
//! names `added`, `removed` and `changed`, the last those whose definition
//! changed; a list sent again unchanged is no event, its `refreshing` and
//! `ready` status changes are), a server's log message (`"log"`, with `level`, `logger` and
//! `data`), a subscribed resource's change (`"resource_updated"`, with
//! `uri`) and a URL elicitation the server says is done
//! (`"elicitation_complete"`, with `elicitation_id`; see
//! [`crate::logs_cmd`]). With `--json` each event is one compact JSON line on stdout
//! (NDJSON), flushed at once; without, one human line each (on a terminal
//! too: nothing is redrawn). It ends only with Ctrl-C: the servers are
//! closed, every process this run started is gone, exit 130.
//!
//! The statuses are the manager's; every redraw or log line follows an
//! event from it (plus a spinner tick on a terminal). Ctrl-C stops
//! watching and closes the servers (exit 130).

use std::collections::HashMap;
use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_manager::Catalog;

use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use crate::exit::{CliError, Exit};
use crate::logs_cmd::Streamed;
use crate::output::{self, Output, Paint, line};
use crate::runtime::{self, Runtime, Select};
use crate::servers::{self, ErrorJson, ServerRow};
use crate::sources::SourceOptions;

/// The spinner's frames.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// How often the spinner turns on a terminal.
const TICK: Duration = Duration::from_millis(100);
/// The same bound as `Runtime::settle`: the manager's own deadlines end
/// every attempt long before.
const WATCH_LIMIT: Duration = Duration::from_secs(600);

/// One status change, for `--json`.
#[derive(Debug, Serialize)]
struct Change {
    t_ms: u128,
    /// `status`, or `reconnect` for a server connecting again.
    event: &'static str,
    id: Option<String>,
    status: &'static str,
    tools: usize,
    error: Option<ErrorJson>,
}

/// A server's new tool list, for `--follow`.
#[derive(Debug, Serialize)]
struct ToolsChanged {
    t_ms: u128,
    /// Always `tools_changed`.
    event: &'static str,
    id: String,
    tools: usize,
    added: Vec<String>,
    removed: Vec<String>,
    changed: Vec<String>,
}

/// `mcpctl watch`; `follow` keeps it running until Ctrl-C.
pub(crate) async fn run(
    options: &SourceOptions,
    output: &Output,
    follow: bool,
) -> Result<Exit, CliError> {
    let mut runtime = Runtime::start(options, Select::All).await?;
    let started = Instant::now();
    let mut events = runtime
        .take_events()
        .ok_or_else(|| CliError::usage("the manager's events are not available"))?;
    let live = !follow && !output.json && io::stdout().is_terminal();
    let mut view = View::new(live, follow, *output);
    let mut catalogs: HashMap<String, Arc<Catalog>> = HashMap::new();
    let claim = crate::interrupt::claim();
    let interrupt = claim.pressed();
    tokio::pin!(interrupt);
    let deadline = started + WATCH_LIMIT;
    let mut ticker = tokio::time::interval(TICK);
    let mut interrupted = false;
    loop {
        let rows = servers::rows(&runtime);
        view.update(&rows, started.elapsed());
        if follow {
            // Compared with the last catalog seen rather than read from the
            // events, so that a lagged receiver misses no change.
            for info in runtime.manager.servers() {
                let Some(catalog) = runtime.manager.catalog(&info.id) else {
                    continue;
                };
                let previous = catalogs.insert(info.id.clone(), Arc::clone(&catalog));
                if let Some(previous) = previous.filter(|p| p.lifetime() != catalog.lifetime()) {
                    let change = tools_changed(&info.id, &previous, &catalog, started.elapsed());
                    // A list sent again as it was (server-everything does on
                    // every `roots/list_changed`) is no change: the status
                    // lines already show the refresh.
                    if !change.is_empty() {
                        view.tools_changed(change);
                    }
                }
            }
        }
        let settled = runtime
            .manager
            .servers()
            .iter()
            .all(|server| runtime::is_settled(&server.status));
        if settled && !follow {
            break;
        }
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => {
                    if follow && let Some(shown) = Streamed::of(&event, started.elapsed()) {
                        let _ = output.text(&format!("{}\n", shown.render(output)));
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            },
            _ = ticker.tick(), if live => {}
            _ = &mut interrupt => {
                interrupted = true;
                break;
            }
            () = tokio::time::sleep_until(deadline), if !follow => break,
        }
    }
    // A server may have settled between the last frame and the check above
    // (they read the statuses separately): its change is logged before the
    // final table.
    let rows = servers::rows(&runtime);
    if !interrupted {
        view.update(&rows, started.elapsed());
    }
    runtime.close().await;
    view.finish(&rows)?;
    if interrupted {
        eprintln!("mcpctl: interrupted");
        return Ok(Exit::Interrupted);
    }
    Ok(Exit::Success)
}

impl ToolsChanged {
    /// Whether no tool was added, removed or changed.
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// What changed between two catalogs of one server.
fn tools_changed(
    id: &str,
    previous: &Catalog,
    current: &Catalog,
    elapsed: Duration,
) -> ToolsChanged {
    let find = |catalog: &Catalog, name: &str| {
        catalog
            .tools()
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    };
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for tool in current.tools() {
        match find(previous, &tool.name) {
            None => added.push(tool.name.clone()),
            Some(before) if before != *tool => changed.push(tool.name.clone()),
            Some(_) => {}
        }
    }
    let removed = previous
        .tools()
        .iter()
        .filter(|tool| find(current, &tool.name).is_none())
        .map(|tool| tool.name.clone())
        .collect();
    ToolsChanged {
        t_ms: elapsed.as_millis(),
        event: "tools_changed",
        id: id.to_owned(),
        tools: current.tools().len(),
        added,
        removed,
        changed,
    }
}

/// What has been shown so far.
#[derive(Debug)]
struct View {
    live: bool,
    /// `--follow`: every event printed as it happens, nothing at the end.
    follow: bool,
    output: Output,
    /// The last status shown per row (by id, or source for a file error).
    shown: HashMap<String, String>,
    /// Lines drawn by the last live frame, to redraw over.
    drawn: usize,
    frame: usize,
    /// When each server started its current pending status.
    since: HashMap<String, Duration>,
    changes: Vec<Change>,
}

impl View {
    fn new(live: bool, follow: bool, output: Output) -> Self {
        View {
            live,
            follow,
            output,
            shown: HashMap::new(),
            drawn: 0,
            frame: 0,
            since: HashMap::new(),
            changes: Vec::new(),
        }
    }

    fn update(&mut self, rows: &[ServerRow], elapsed: Duration) {
        for row in rows {
            let key = key(row);
            let signature = format!("{}/{}", row.status, row.tools);
            if self.shown.get(&key) == Some(&signature) {
                continue;
            }
            let before = self.shown.insert(key.clone(), signature);
            let reconnect = before.is_some_and(|before| {
                ["ready/", "error/", "idle/", "disconnected/"]
                    .iter()
                    .any(|settled| before.starts_with(settled))
            }) && matches!(row.status, "queued" | "connecting");
            self.since.insert(key.clone(), elapsed);
            let change = Change {
                t_ms: elapsed.as_millis(),
                event: if reconnect { "reconnect" } else { "status" },
                id: row.id.clone(),
                status: row.status,
                tools: row.tools,
                error: row.error.clone(),
            };
            if self.follow && self.output.json {
                // A closed pipe is the reader's choice; watching goes on.
                let _ = self
                    .output
                    .text(&format!("{}\n", output::to_json_line(&change)));
            } else if !self.live && !self.output.json {
                let _ = self
                    .output
                    .text(&format!("{}\n", log_line(row, elapsed, &self.output)));
            }
            if !self.follow {
                self.changes.push(change);
            }
        }
        if self.live {
            self.draw(rows, elapsed);
        }
    }

    /// Redraws one line per server over the previous frame. Every line is
    /// cut to the terminal's width: a wrapped line would break the redraw.
    fn draw(&mut self, rows: &[ServerRow], elapsed: Duration) {
        self.frame = (self.frame + 1) % SPINNER.len();
        let columns = terminal_width();
        let width = rows
            .iter()
            .map(|row| line(&key(row)).chars().count())
            .max()
            .unwrap_or(0);
        let mut text = String::new();
        if self.drawn > 0 {
            text.push_str(&format!("\x1b[{}A", self.drawn));
        }
        for row in rows {
            let key = key(row);
            let pending = !matches!(
                row.status,
                "ready" | "error" | "disabled" | "disconnected" | "idle"
            );
            let mark = match row.status {
                "ready" => "✓",
                "error" => "✗",
                _ if pending => SPINNER[self.frame],
                _ => "-",
            };
            let detail = match (&row.error, row.status) {
                (Some(error), _) => format!("{} [{}]", line(&error.message), error.code),
                (None, "ready") => format!("{} tools", row.tools),
                (None, _) if pending => {
                    let since = self.since.get(&key).copied().unwrap_or_default();
                    format!("{:.1}s", elapsed.saturating_sub(since).as_secs_f64())
                }
                _ => String::new(),
            };
            // Measured and cut before painting, so escape codes never count.
            let key = line(&key);
            let plain = format!("{mark} {key:<width$}  {:<10}  {detail}", row.status);
            let plain: String = plain.chars().take(columns.saturating_sub(1)).collect();
            let paint = servers::status_paint(row.status);
            let mark_len = mark.len();
            let (mark_part, rest) = plain.split_at(mark_len.min(plain.len()));
            text.push_str("\x1b[2K");
            text.push_str(&self.output.paint(paint, mark_part));
            text.push_str(rest);
            text.push('\n');
        }
        self.drawn = rows.len();
        let mut stdout = io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    /// A new tool list, for `--follow`.
    fn tools_changed(&self, change: ToolsChanged) {
        let text = if self.output.json {
            output::to_json_line(&change)
        } else {
            let names = |mark: &str, names: &[String]| {
                names
                    .iter()
                    .map(|name| format!(" {mark}{}", line(name)))
                    .collect::<String>()
            };
            let stamp = format!(
                "{:>8.3}s",
                Duration::from_millis(change.t_ms as u64).as_secs_f64()
            );
            format!(
                "{} {} tools changed ({} tools):{}{}{}",
                self.output.paint(Paint::Dim, &stamp),
                line(&change.id),
                change.tools,
                names("+", &change.added),
                names("-", &change.removed),
                names("~", &change.changed),
            )
        };
        let _ = self.output.text(&format!("{text}\n"));
    }

    fn finish(self, rows: &[ServerRow]) -> Result<(), CliError> {
        if self.follow {
            // Every event is on stdout already.
            return Ok(());
        }
        let printed = if self.output.json {
            self.output.json(&serde_json::json!({
                "events": self.changes,
                "servers": rows,
            }))
        } else if self.live {
            // The last frame shows every server; it stays on the screen.
            Ok(())
        } else {
            self.output
                .text(&format!("\n{}", servers::render(rows, &self.output)))
        };
        printed.map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))
    }
}

/// How a row is named: the server's id, or the file name of a source
/// that could not be read.
fn key(row: &ServerRow) -> String {
    match (&row.id, &row.source) {
        (Some(id), _) => id.clone(),
        (None, Some(source)) => {
            let name = source
                .path
                .as_deref()
                .map(Path::new)
                .and_then(Path::file_name)
                .map(|name| name.to_string_lossy().into_owned());
            format!("({})", name.unwrap_or_else(|| source.label.clone()))
        }
        (None, None) => "(source)".to_owned(),
    }
}

/// The terminal's width in columns (80 when it cannot be asked).
fn terminal_width() -> usize {
    #[cfg(unix)]
    {
        let size = rustix::termios::tcgetwinsize(io::stdout()).ok();
        if let Some(size) = size.filter(|size| size.ws_col > 0) {
            return usize::from(size.ws_col);
        }
    }
    80
}

fn log_line(row: &ServerRow, elapsed: Duration, output: &Output) -> String {
    let stamp = format!("{:>8.3}s", elapsed.as_secs_f64());
    let status = output.paint(servers::status_paint(row.status), row.status);
    let detail = match (&row.error, row.status) {
        (Some(error), _) => format!(" {} [{}]", line(&error.message), error.code),
        (None, "ready") => format!(" ({} tools)", row.tools),
        _ => String::new(),
    };
    format!(
        "{} {} {status}{detail}",
        output.paint(Paint::Dim, &stamp),
        line(&key(row))
    )
}

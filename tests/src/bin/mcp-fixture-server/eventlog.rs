//! `--event-log`: timestamped lines a test reads to see what the fixture did and when, from the server's side.
//!
//! Each event is one line, `EVENT UNIX_NANOS PID`, written with a single
//! `write` on a file opened in append mode, so the lines of many fixture
//! processes sharing one file never interleave (POSIX appends of one small
//! write are atomic with respect to each other). Modern-era events add a
//! fourth field, one line of compact JSON: `EVENT UNIX_NANOS PID JSON`.

use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Appends `event` to the log at `path`, if there is one. Failures are
/// reported on stderr: the log is for tests, the server goes on.
pub(crate) fn record(path: Option<&Path>, event: &str) {
    write(path, event, None);
}

/// Appends `event` with `detail` (compact JSON, which holds no line break).
pub(crate) fn record_with(path: Option<&Path>, event: &str, detail: &serde_json::Value) {
    if path.is_some() {
        write(path, event, Some(detail));
    }
}

fn write(path: Option<&Path>, event: &str, detail: Option<&serde_json::Value>) {
    let Some(path) = path else { return };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let line = match detail {
        Some(detail) => format!("{event} {nanos} {} {detail}\n", std::process::id()),
        None => format!("{event} {nanos} {}\n", std::process::id()),
    };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "fixture: cannot append to the event log {}: {e}",
            path.display()
        );
    }
}

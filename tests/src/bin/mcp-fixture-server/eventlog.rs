//! `--event-log`: timestamped lines a test reads to see what the fixture did and when, from the server's side.
//!
//! Each event is one line, `EVENT UNIX_NANOS PID`, written with a single
//! `write` on a file opened in append mode, so the lines of many fixture
//! processes sharing one file never interleave (POSIX appends of one small
//! write are atomic with respect to each other).

use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Appends `event` to the log at `path`, if there is one. Failures are
/// reported on stderr: the log is for tests, the server goes on.
pub(crate) fn record(path: Option<&Path>, event: &str) {
    let Some(path) = path else { return };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let line = format!("{event} {nanos} {}\n", std::process::id());
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

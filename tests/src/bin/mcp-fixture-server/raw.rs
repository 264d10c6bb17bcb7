//! The raw path between the server core and a byte-stream client (stdio,
//! legacy SSE): the one place where the fixture breaks the protocol on
//! purpose, on the lines the core reads and writes.
//!
//! The core (`mcp_transport::server::stream`) serves the protocol right;
//! [`RawInput`] watches each line the client sends before the core reads
//! it, and [`RawOutput`] rewrites each line the core writes before the
//! client reads it:
//! - `initialize`: logged (`initialize-start`, `initialize-end`), its answer
//!   delayed (`--delay-initialize-ms`), never sent
//!   (`--hang-initialize-if-exists`) or naming another version
//!   (`--protocol-version` with a version the core does not know);
//! - `--era legacy`, a request before `initialize`: `--probe-noise` writes
//!   its warnings, `--exit-before-initialize` ends the process before the
//!   core answers;
//! - `--error-message-kib`: `long_error`'s error, which the core bounds,
//!   written whole;
//! - `--junk-stdout` and `--crlf` (stdio): a non-JSON line before each
//!   message, CRLF line ends;
//! - `--exit-after` and `--close-stdout-after`: what follows the Nth answer.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::eventlog;
use crate::options::{Era, Options};
use crate::server::lock;

/// Whether any switch acts on the raw path of a byte stream: without one,
/// stdio leaves its streams to the core.
pub(crate) fn needed(options: &Options) -> bool {
    options.event_log.is_some()
        || options.delay_initialize > std::time::Duration::ZERO
        || options.hang_initialize_if_exists.is_some()
        || (options.protocol_version.is_some() && crate::server::forced_version(options).is_none())
        || options.era == Era::Legacy && (options.probe_noise > 0 || options.exit_before_initialize)
        || options.error_message_kib.is_some()
        || options.junk_stdout
        || options.crlf
        || options.exit_after.is_some()
        || options.close_stdout_after.is_some()
        || options.ignore_stdin_eof
        || options.ignore_sigterm
}

/// The requests a client sent that have no answer written yet, by the
/// JSON text of their ids: kept with `--event-log`, so that a client's
/// `notifications/cancelled` is logged as it comes (`cancelled
/// {requestId, inFlight}`), even for a request the core cancels before
/// the fixture's handler ever ran.
pub(crate) type Outstanding = Arc<Mutex<HashSet<String>>>;

/// What the client sent, seen before the core reads it.
#[derive(Debug)]
pub(crate) struct RawInput {
    /// Whether an `initialize` request came.
    initialized: bool,
    /// The line read so far, while lines are still watched.
    line: Vec<u8>,
    /// With `--event-log`: the requests in flight, shared with the output.
    outstanding: Option<Outstanding>,
}

/// Lines longer than this are not watched (the core refuses them anyway
/// when they are over its limit).
const WATCHED_LINE: usize = 1024 * 1024;

impl RawInput {
    pub(crate) fn new(outstanding: Option<Outstanding>) -> RawInput {
        RawInput {
            initialized: false,
            line: Vec::new(),
            outstanding,
        }
    }

    /// Whether lines are still read: before `initialize`, and always with
    /// `--event-log`.
    fn watching(&self) -> bool {
        !self.initialized || self.outstanding.is_some()
    }

    /// Watches a chunk of the client's bytes, before the core gets it.
    pub(crate) fn chunk(&mut self, options: &Options, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            if !self.watching() {
                return;
            }
            if self.line.len() < WATCHED_LINE {
                self.line.extend_from_slice(piece);
            }
            if piece.ends_with(b"\n") {
                let line = std::mem::take(&mut self.line);
                self.message(options, &line);
            }
        }
    }

    /// Watches one whole message (a line, or a POST body).
    pub(crate) fn message(&mut self, options: &Options, bytes: &[u8]) {
        if !self.watching() {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|id| !id.is_null());
        if let (Some(outstanding), Some(id), Some(_)) = (&self.outstanding, id, method) {
            lock(outstanding).insert(id.to_string());
        }
        if method == Some(mcp_proto::methods::NOTIFICATION_CANCELLED)
            && let (Some(outstanding), Some(cancelled)) =
                (&self.outstanding, message.pointer("/params/requestId"))
        {
            let in_flight = lock(outstanding).remove(&cancelled.to_string());
            eventlog::record_with(
                options.event_log.as_deref(),
                "cancelled",
                &json!({"requestId": cancelled, "inFlight": in_flight}),
            );
        }
        if self.initialized {
            return;
        }
        if method == Some(mcp_proto::methods::INITIALIZE) {
            self.initialized = true;
            eventlog::record(options.event_log.as_deref(), "initialize-start");
        } else if id.is_some() && method.is_some() && options.era == Era::Legacy {
            before_initialize(options);
        }
    }
}

/// `--era legacy`, a request before initialize: `--probe-noise` writes its
/// warnings, `--exit-before-initialize` ends the process before the
/// answer goes out.
fn before_initialize(options: &Options) {
    if options.probe_noise > 0 {
        let line = "WARNING fixture: received a request before initialize; validation failed, ignoring ...\n";
        let mut noise = line.repeat(options.probe_noise / line.len() + 1);
        noise.truncate(options.probe_noise);
        let mut stderr = std::io::stderr().lock();
        let _ = std::io::Write::write_all(&mut stderr, noise.as_bytes());
        let _ = std::io::Write::flush(&mut stderr);
    }
    if options.exit_before_initialize {
        eprintln!("fixture: a request before initialize; exiting (--exit-before-initialize)");
        std::process::exit(1);
    }
}

/// What the output path does once a line is written.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// Go on.
    Continue,
    /// The answer `--exit-after` counts last is out: exit.
    Exit,
    /// The answer `--close-stdout-after` counts last is out: close the
    /// client's stream and stay.
    Close,
}

/// What the core wrote, reshaped before the client reads it.
#[derive(Debug)]
pub(crate) struct RawOutput {
    /// Whether the answer to `initialize` went by.
    initialized: bool,
    /// Answers written so far, for `--exit-after` and `--close-stdout-after`.
    answers: u64,
    /// `--junk-stdout` lines so far.
    junk: u64,
    /// Whether lines are written as stdio writes them (`--junk-stdout`,
    /// `--crlf`); legacy SSE writes each message as an event.
    stdio: bool,
    /// With `--event-log`: the requests in flight, shared with the input.
    outstanding: Option<Outstanding>,
}

/// The prefix of `long_error`'s message, by which the output path knows it.
pub(crate) const LONG_ERROR: &str = "long error: ";

impl RawOutput {
    pub(crate) fn new(stdio: bool, outstanding: Option<Outstanding>) -> RawOutput {
        RawOutput {
            initialized: false,
            answers: 0,
            junk: 0,
            stdio,
            outstanding,
        }
    }

    /// One line the core wrote (without its line end): the bytes to write
    /// for it (empty for none), and what to do once they are written.
    /// Waits for `--delay-initialize-ms`, and forever for
    /// `--hang-initialize-if-exists`.
    pub(crate) async fn line(&mut self, options: &Options, line: Vec<u8>) -> (Vec<u8>, After) {
        let mut line = line;
        if !self.initialized && is_initialize_answer(&line) {
            self.initialized = true;
            if options
                .hang_initialize_if_exists
                .as_deref()
                .is_some_and(std::path::Path::exists)
            {
                eprintln!("fixture: the hang file exists; initialize is never answered");
                std::future::pending::<()>().await;
            }
            if !options.delay_initialize.is_zero() {
                tokio::time::sleep(options.delay_initialize).await;
            }
            if let Some(forced) = &options.protocol_version
                && crate::server::forced_version(options).is_none()
            {
                line = rewrite(&line, |answer| {
                    answer["result"]["protocolVersion"] = json!(forced);
                });
            }
            eventlog::record(options.event_log.as_deref(), "initialize-end");
        }
        if let Some(kib) = options.error_message_kib
            && find(&line, LONG_ERROR.as_bytes())
        {
            line = rewrite(&line, |answer| {
                if let Some(message) = answer.pointer_mut("/error/message") {
                    let mut whole = String::from(LONG_ERROR);
                    whole.push_str(&"e".repeat((kib * 1024).saturating_sub(whole.len())));
                    *message = json!(whole);
                }
            });
        }
        let after = self.count(options, &line);
        let mut out = Vec::with_capacity(line.len() + 64);
        if self.stdio && options.junk_stdout {
            self.junk += 1;
            out.extend_from_slice(
                format!("fixture: this line is not JSON ({})", self.junk).as_bytes(),
            );
            out.extend_from_slice(line_end(options));
        }
        out.extend_from_slice(&line);
        if self.stdio {
            out.extend_from_slice(line_end(options));
        }
        (out, after)
    }

    /// Counts the answers in `line` for `--exit-after` and
    /// `--close-stdout-after`, and takes them out of the requests in
    /// flight.
    fn count(&mut self, options: &Options, line: &[u8]) -> After {
        let last = options.exit_after.or(options.close_stdout_after);
        if last.is_none() && self.outstanding.is_none() {
            return After::Continue;
        }
        let messages = match serde_json::from_slice::<Value>(line) {
            Ok(Value::Array(messages)) => messages,
            Ok(message) => vec![message],
            Err(_) => Vec::new(),
        };
        let answered: Vec<&Value> = messages
            .iter()
            .filter(|m| is_answer(m))
            .filter_map(|m| m.get("id"))
            .collect();
        if let Some(outstanding) = &self.outstanding {
            let mut outstanding = lock(outstanding);
            for id in &answered {
                outstanding.remove(&id.to_string());
            }
        }
        let Some(last) = last else {
            return After::Continue;
        };
        let answers = answered.len() as u64;
        let before = self.answers;
        self.answers += answers;
        if answers == 0 || !(before < last && last <= self.answers) {
            After::Continue
        } else if options.exit_after.is_some() {
            After::Exit
        } else {
            After::Close
        }
    }
}

fn line_end(options: &Options) -> &'static [u8] {
    if options.crlf { b"\r\n" } else { b"\n" }
}

/// Whether `message` answers a request: a result or an error, with an id.
fn is_answer(message: &Value) -> bool {
    message.get("id").is_some_and(|id| !id.is_null())
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// Whether `line` is the answer to `initialize` (a result naming a
/// `protocolVersion` and `serverInfo`).
fn is_initialize_answer(line: &[u8]) -> bool {
    find(line, b"\"protocolVersion\"")
        && serde_json::from_slice::<Value>(line).is_ok_and(|message| {
            message.pointer("/result/protocolVersion").is_some()
                && message.pointer("/result/serverInfo").is_some()
        })
}

/// `line` with `change` made to its message; unchanged if it is not JSON.
fn rewrite(line: &[u8], change: impl FnOnce(&mut Value)) -> Vec<u8> {
    match serde_json::from_slice::<Value>(line) {
        Ok(mut message) => {
            change(&mut message);
            serde_json::to_vec(&message).unwrap_or_else(|_| line.to_vec())
        }
        Err(_) => line.to_vec(),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> Options {
        match crate::options::parse(args.iter().map(|a| (*a).to_owned())) {
            Ok(crate::options::Command::Serve(options)) => options,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn junk_and_crlf_shape_each_line() {
        let options = options(&["--junk-stdout", "--crlf"]);
        let mut output = RawOutput::new(true, None);
        let (out, after) = output
            .line(
                &options,
                br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(),
            )
            .await;
        assert_eq!(after, After::Continue);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "fixture: this line is not JSON (1)\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n"
        );
    }

    #[tokio::test]
    async fn the_nth_answer_ends_the_output() {
        let options = options(&["--exit-after", "2"]);
        let mut output = RawOutput::new(true, None);
        let answer = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec();
        let note = br#"{"jsonrpc":"2.0","method":"notifications/message"}"#.to_vec();
        assert_eq!(
            output.line(&options, answer.clone()).await.1,
            After::Continue
        );
        assert_eq!(output.line(&options, note).await.1, After::Continue);
        assert_eq!(output.line(&options, answer).await.1, After::Exit);
    }

    #[tokio::test]
    async fn the_version_and_long_errors_are_rewritten() {
        let options = options(&[
            "--protocol-version",
            "2099-01-01",
            "--error-message-kib",
            "2",
        ]);
        let mut output = RawOutput::new(false, None);
        let init = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","serverInfo":{}}}"#;
        let (out, _) = output.line(&options, init.to_vec()).await;
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["result"]["protocolVersion"], "2099-01-01");
        let error =
            br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"long error: eee"}}"#;
        let (out, _) = output.line(&options, error.to_vec()).await;
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["error"]["message"].as_str().unwrap().len(), 2048);
    }

    #[test]
    fn a_cancel_is_logged_in_flight_until_the_answer_is_out() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events");
        let options = options(&["--event-log", log.to_str().unwrap()]);
        let outstanding = Outstanding::default();
        let mut input = RawInput::new(Some(Arc::clone(&outstanding)));
        let mut output = RawOutput::new(true, Some(outstanding));
        input.chunk(
            &options,
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\"}\n\
              {\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n",
        );
        output.count(&options, br#"{"jsonrpc":"2.0","id":8,"result":{}}"#);
        input.chunk(
            &options,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7}}\n\
              {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":8}}\n",
        );
        let logged = std::fs::read_to_string(&log).unwrap();
        // Compared as JSON: the key order depends on serde_json's
        // `preserve_order` feature, which the workspace's other crates may
        // turn on.
        let cancels: Vec<serde_json::Value> = logged
            .lines()
            .filter(|line| line.starts_with("cancelled "))
            .filter_map(|line| line.rsplit(' ').next())
            .map(|json| serde_json::from_str(json).unwrap())
            .collect();
        assert_eq!(
            cancels,
            [
                serde_json::json!({"inFlight": true, "requestId": 7}),
                serde_json::json!({"inFlight": false, "requestId": 8}),
            ]
        );
    }

    #[test]
    fn only_lines_before_initialize_are_watched() {
        let options = options(&[]);
        let mut input = RawInput::new(None);
        input.chunk(&options, br#"{"jsonrpc":"2.0","id":1,"meth"#);
        assert!(!input.initialized);
        input.chunk(&options, b"od\":\"initialize\"}\n{\"partial");
        assert!(input.initialized);
        assert!(input.line.is_empty());
    }
}

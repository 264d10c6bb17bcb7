//! `mcpctl ui` under test: the real server started in an isolated environment, a minimal HTTP/1.1 client and a reader of its event stream.
//!
//! The client speaks plain HTTP/1.1 over `std::net::TcpStream` with
//! `Connection: close`, which is all the API needs and keeps the tests free
//! of an HTTP client dependency. Every read has a deadline, so a server
//! that stops answering fails the test instead of hanging it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Env;

/// How long one API answer, or one awaited event-stream state, may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// A running `mcpctl ui`; killed (by its handle) when dropped.
#[derive(Debug)]
pub(crate) struct UiServer {
    child: Child,
    /// The port it listens on.
    pub(crate) port: u16,
    /// The per-launch token from the printed URL.
    pub(crate) token: String,
}

/// An HTTP answer.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The status code.
    pub(crate) status: u16,
    /// The raw head (status line and headers).
    pub(crate) head: String,
    /// The body.
    pub(crate) body: String,
}

impl Answer {
    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

impl UiServer {
    /// Starts `mcpctl ui` in `env` and reads the URL it prints.
    pub(crate) fn start(env: &Env) -> UiServer {
        UiServer::start_command(env.command(&["ui"]))
    }

    /// Starts `command` (an `mcpctl ui` made by [`Env::command`]) and
    /// reads the URL it prints.
    pub(crate) fn start_command(mut command: std::process::Command) -> UiServer {
        let mut child = command.spawn().expect("mcpctl ui starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        // stderr is drained so that the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut BufReader::new(stderr), &mut std::io::sink());
        });
        let mut lines = BufReader::new(stdout).lines();
        // The first line names the URL; if mcpctl exits first, the lines end
        // and the test fails here.
        let first = lines
            .next()
            .expect("mcpctl ui printed nothing")
            .expect("mcpctl ui's stdout");
        std::thread::spawn(move || for _ in lines.by_ref() {});
        let url = first
            .split_whitespace()
            .find(|word| word.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no URL in {first:?}"))
            .to_owned();
        let rest = url.trim_start_matches("http://127.0.0.1:");
        let (port, query) = rest.split_once("/?token=").expect("URL with a token");
        UiServer {
            child,
            port: port.parse().expect("a port"),
            token: query.to_owned(),
        }
    }

    /// Ctrl-C, and the exit status mcpctl ends with.
    pub(crate) fn interrupt(&mut self) -> i32 {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("mcpctl's pid");
        rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT to mcpctl");
        let watchdog = super::Watchdog::start(&self.child, "mcpctl ui".to_owned());
        let status = self.child.wait().expect("wait for mcpctl ui");
        watchdog.stop();
        status.code().unwrap_or(-1)
    }

    /// The URL a person opens.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }

    /// An API call with the token and the right `Host`.
    pub(crate) fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let token = format!("x-mcpctl-token: {}", self.token);
        self.raw(method, path, &[&token], body)
    }

    /// A request with exactly these extra headers (`Host` is
    /// `127.0.0.1:PORT` unless one of them sets it).
    pub(crate) fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[&str],
        body: Option<&Value>,
    ) -> Answer {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut all = headers.to_vec();
        all.push("Content-Type: application/json");
        request(self.port, method, path, &all, &body)
    }

    /// Opens the event stream.
    pub(crate) fn events(&self) -> EventStream {
        let mut stream = self.connect();
        let request = format!(
            "GET /api/events?token={} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\n\r\n",
            self.token, self.port
        );
        stream
            .write_all(request.as_bytes())
            .expect("open the event stream");
        EventStream {
            stream,
            buffer: String::new(),
        }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to mcpctl ui");
        stream
            .set_read_timeout(Some(DEADLINE))
            .expect("a read timeout");
        stream
    }
}

impl Drop for UiServer {
    /// Ctrl-C, as a person stops it: the manager closes its servers (and
    /// their process groups) before mcpctl exits. A run that does not end
    /// within the watchdog's deadline is killed.
    fn drop(&mut self) {
        // Already stopped and reaped (its status is kept): nothing to signal.
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) else {
            return;
        };
        if rustix::process::kill_process(pid, rustix::process::Signal::INT).is_err() {
            let _ = self.child.kill();
        }
        let watchdog = super::Watchdog::start(&self.child, "mcpctl ui".to_owned());
        let _ = self.child.wait();
        watchdog.stop();
    }
}

/// The server's `text/event-stream`, read message by message.
#[derive(Debug)]
pub(crate) struct EventStream {
    stream: TcpStream,
    buffer: String,
}

impl EventStream {
    /// Reads messages until one's listing satisfies `wanted` and returns
    /// it; fails after [`DEADLINE`], naming `what` and the last listing.
    /// Every message is a whole listing, so the last one is the state.
    pub(crate) fn until(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + DEADLINE;
        let mut last = Value::Null;
        loop {
            while let Some(listing) = self.next_message() {
                if wanted(&listing) {
                    return listing;
                }
                last = listing;
            }
            assert!(
                Instant::now() < deadline,
                "event stream: no listing where {what} within {DEADLINE:?}; last: {last}"
            );
            let mut chunk = [0u8; 8192];
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("the event stream ended while waiting for {what}; last: {last}"),
                Ok(n) => self.buffer.push_str(&String::from_utf8_lossy(&chunk[..n])),
                Err(e) => panic!("event stream: {e} while waiting for {what}; last: {last}"),
            }
        }
    }

    /// The next complete `servers` message's JSON (the stream's other
    /// events, the questions and the log lines, are skipped). The body is
    /// chunked; chunk sizes sit between messages, never inside one (one
    /// message per chunk).
    fn next_message(&mut self) -> Option<Value> {
        loop {
            let start = self.buffer.find("event: ")?;
            let data = start + self.buffer[start..].find("\ndata: ")? + 1;
            let end = data + self.buffer[data..].find('\n')?;
            let name = self.buffer[start + 7..data - 1].trim().to_owned();
            let value = serde_json::from_str(&self.buffer[data + 6..end]).expect("a JSON message");
            self.buffer.drain(..end);
            if name == "servers" {
                return Some(value);
            }
        }
    }
}

/// The server `id` in a listing.
pub(crate) fn server<'a>(listing: &'a Value, id: &str) -> Option<&'a Value> {
    listing["servers"]
        .as_array()?
        .iter()
        .find(|server| server["id"] == id)
}

/// Whether server `id` has `status` in `listing`.
pub(crate) fn has_status(listing: &Value, id: &str, status: &str) -> bool {
    server(listing, id).is_some_and(|server| server["status"] == status)
}

/// The store file, parsed.
pub(crate) fn store(env: &Env) -> Value {
    let text = std::fs::read_to_string(env.store()).expect("the store file");
    serde_json::from_str(&text).expect("the store is JSON")
}

/// The stored server `id`.
pub(crate) fn stored<'a>(store: &'a Value, id: &str) -> Option<&'a Value> {
    store["servers"]
        .as_array()?
        .iter()
        .find(|server| server["id"] == id)
}

/// One HTTP/1.1 exchange on 127.0.0.1:`port` with `Connection: close` and
/// exactly these extra headers (`Host` is `127.0.0.1:PORT` unless one of
/// them sets it; `Content-Length` is the body's).
pub(crate) fn request(port: u16, method: &str, path: &str, headers: &[&str], body: &str) -> Answer {
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("host:"))
    {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to mcpctl");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("a read timeout");
    stream
        .write_all(request.as_bytes())
        .expect("send a request");
    let mut bytes = Vec::new();
    stream
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("{method} {path}: no complete answer: {e}"));
    let text = String::from_utf8(bytes).expect("a UTF-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

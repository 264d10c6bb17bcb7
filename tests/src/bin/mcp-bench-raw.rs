//! `mcp-bench-raw`: the raw floor of `cargo xtask bench`, an MCP client without any MCP library.
//!
//! It runs the workload every bench client runs (the protocol is in
//! `xtask/src/bench.rs`) as cheaply as a client can: blocking I/O on plain
//! threads, requests pre-encoded but for their id, responses framed by
//! newline (stdio) or `Content-Length` (Streamable HTTP in JSON mode, over
//! hand-written HTTP/1.1 on keep-alive connections), validated as JSON
//! without building a tree, and matched to their request by id. What it
//! skips, every real client must do: it shows how close a client gets to the
//! limit. It prints one JSON line of raw timings, then waits for stdin to
//! close before it exits, so that the harness can read its peak RSS.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::value::RawValue;
use tests::bench_args::{Args, Kind, json_list, parse_args};

/// The protocol version the raw client asks for.
const VERSION: &str = "2025-11-25";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bench-raw","version":"0.0.0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST_TOOLS: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// The workload, from the command line.
/// A request's body, pre-encoded around its id.
struct Template {
    head: &'static [u8],
    tail: Vec<u8>,
}

impl Template {
    fn echo() -> Template {
        Template {
            head: br#"{"jsonrpc":"2.0","id":"#,
            tail:
                br#","method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#
                    .to_vec(),
        }
    }

    fn big(kib: usize) -> Template {
        let tail = format!(
            r#","method":"tools/call","params":{{"name":"big","arguments":{{"kib":{kib}}}}}}}"#
        );
        Template {
            head: br#"{"jsonrpc":"2.0","id":"#,
            tail: tail.into_bytes(),
        }
    }

    fn encode(&self, id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(self.head);
        // `write!` to a Vec cannot fail.
        let _ = write!(out, "{id}");
        out.extend_from_slice(&self.tail);
    }
}

/// What the raw client checks of a response: its id and the size of its result.
struct Response {
    id: u64,
    result_len: usize,
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let line = match args.transport {
        Kind::Stdio => run::<StdioConnection>(&args)?,
        Kind::Http => run::<HttpConnection>(&args)?,
    };
    println!("{line}");
    // The harness reads our peak RSS now, then closes stdin.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}

/// A connection the workload runs over.
trait Connection: Sized {
    /// Connects, runs the handshake and lists the tools; returns the tool count.
    fn connect(args: &Args) -> anyhow::Result<(Self, usize)>;
    /// Sends the request `template` with `id`.
    fn send(&mut self, template: &Template, id: u64) -> anyhow::Result<()>;
    /// Receives the next response.
    fn recv(&mut self) -> anyhow::Result<Response>;
    /// The throughput run: `total` echoes with `inflight` in flight.
    fn throughput(&mut self, args: &Args, total: usize) -> anyhow::Result<()>;
    /// Ends the session.
    fn close(self) -> anyhow::Result<()>;

    /// One request, waited for.
    fn call(&mut self, template: &Template, id: u64) -> anyhow::Result<usize> {
        self.send(template, id)?;
        let response = self.recv()?;
        if response.id != id {
            bail!("expected the response to {id}, got {}", response.id);
        }
        Ok(response.result_len)
    }
}

fn run<C: Connection>(args: &Args) -> anyhow::Result<String> {
    let mut connect_ns = Vec::with_capacity(args.connects);
    let mut tools = 0;
    for _ in 0..args.connects {
        let started = Instant::now();
        let (connection, listed) = C::connect(args)?;
        connect_ns.push(started.elapsed().as_nanos());
        tools = listed;
        connection.close()?;
    }

    let (mut connection, _) = C::connect(args)?;
    let echo = Template::echo();
    let mut id = 2;
    for _ in 0..args.warmup {
        connection.call(&echo, id)?;
        id += 1;
    }
    let mut latency_ns = Vec::with_capacity(args.calls);
    for _ in 0..args.calls {
        let started = Instant::now();
        connection.call(&echo, id)?;
        latency_ns.push(started.elapsed().as_nanos());
        id += 1;
    }

    let started = Instant::now();
    connection.throughput(args, args.throughput_calls)?;
    let throughput_ns = started.elapsed().as_nanos();

    let big = Template::big(args.big_kib);
    let payload = args.big_kib * 1024;
    let mut big_bytes = 0;
    let mut big_ns = Vec::with_capacity(args.big_calls);
    for _ in 0..args.big_calls {
        let started = Instant::now();
        id += 1;
        let len = connection.call(&big, id)?;
        if len < payload {
            bail!(
                "big returned a {len}-byte result, less than {} KiB",
                args.big_kib
            );
        }
        big_bytes += payload;
        big_ns.push(started.elapsed().as_nanos());
    }
    connection.close()?;

    let transport = match args.transport {
        Kind::Stdio => "stdio",
        Kind::Http => "http",
    };
    Ok(format!(
        "{{\"client\":\"raw\",\"transport\":\"{transport}\",\"tools\":{tools},\
         \"connect_ns\":{},\"latency_ns\":{},\"throughput_calls\":{},\"throughput_ns\":{throughput_ns},\
         \"big_calls\":{},\"big_bytes\":{big_bytes},\"big_ns\":{}}}",
        json_list(&connect_ns),
        json_list(&latency_ns),
        args.throughput_calls,
        args.big_calls,
        json_list(&big_ns),
    ))
}

/// Checks a response and reads its id and result size. The JSON is
/// validated, but only the top-level object is split into keys.
fn parse_response(body: &[u8]) -> anyhow::Result<Response> {
    let fields: HashMap<&str, &RawValue> = serde_json::from_slice(body)
        .with_context(|| format!("not a JSON-RPC response: {}", preview(body)))?;
    if let Some(error) = fields.get("error") {
        bail!("the server answered with an error: {}", error.get());
    }
    let id = fields
        .get("id")
        .and_then(|id| id.get().parse().ok())
        .with_context(|| format!("a response without a numeric id: {}", preview(body)))?;
    let result = fields
        .get("result")
        .with_context(|| format!("a response without a result: {}", preview(body)))?;
    Ok(Response {
        id,
        result_len: result.get().len(),
    })
}

/// The number of tools in a `tools/list` response.
fn count_tools(body: &[u8]) -> anyhow::Result<usize> {
    let fields: HashMap<&str, &RawValue> = serde_json::from_slice(body)?;
    let result = fields.get("result").context("tools/list failed")?;
    let result: HashMap<&str, &RawValue> = serde_json::from_str(result.get())?;
    if result.contains_key("nextCursor") {
        bail!("the raw client expects the tool catalog on one page");
    }
    let tools: Vec<&RawValue> =
        serde_json::from_str(result.get("tools").context("no tools")?.get())?;
    Ok(tools.len())
}

fn preview(body: &[u8]) -> String {
    String::from_utf8_lossy(body.get(..200).unwrap_or(body)).into_owned()
}

/// A stdio server: NDJSON over its stdin and stdout.
struct StdioConnection {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    out: Vec<u8>,
    line: Vec<u8>,
}

impl StdioConnection {
    fn write_line(&mut self, line: &str) -> anyhow::Result<()> {
        self.out.clear();
        self.out.extend_from_slice(line.as_bytes());
        self.out.push(b'\n');
        self.stdin
            .write_all(&self.out)
            .context("writing to the server")
    }

    fn read_line(&mut self) -> anyhow::Result<()> {
        self.line.clear();
        if self.stdout.read_until(b'\n', &mut self.line)? == 0 {
            bail!("the server closed its stdout");
        }
        Ok(())
    }
}

impl Connection for StdioConnection {
    fn connect(args: &Args) -> anyhow::Result<(Self, usize)> {
        let mut child = Command::new(&args.server)
            .args(&args.server_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("spawning {}", args.server))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("the server's pipes are missing");
        };
        // The same stdout pipe size as our stdio transport asks for, so that
        // the floor stays a floor for large results.
        let _ = rustix::pipe::fcntl_setpipe_size(&stdout, 1024 * 1024);
        let mut connection = StdioConnection {
            child,
            stdin,
            stdout: BufReader::with_capacity(256 * 1024, stdout),
            out: Vec::with_capacity(4096),
            line: Vec::with_capacity(64 * 1024),
        };
        connection.write_line(INITIALIZE)?;
        connection.read_line()?;
        parse_response(&connection.line)?;
        connection.write_line(INITIALIZED)?;
        connection.write_line(LIST_TOOLS)?;
        connection.read_line()?;
        let tools = count_tools(&connection.line)?;
        Ok((connection, tools))
    }

    fn send(&mut self, template: &Template, id: u64) -> anyhow::Result<()> {
        self.out.clear();
        template.encode(id, &mut self.out);
        self.out.push(b'\n');
        self.stdin
            .write_all(&self.out)
            .context("writing to the server")
    }

    fn recv(&mut self) -> anyhow::Result<Response> {
        self.read_line()?;
        parse_response(&self.line)
    }

    fn throughput(&mut self, args: &Args, total: usize) -> anyhow::Result<()> {
        let echo = Template::echo();
        // Ids far above the sequential runs', so that a stray response shows.
        let first = 1_000_000u64;
        let mut sent = 0;
        let mut done = 0;
        while sent < total.min(args.inflight) {
            self.send(&echo, first + sent as u64)?;
            sent += 1;
        }
        while done < total {
            let response = self.recv()?;
            if !(first..first + sent as u64).contains(&response.id) {
                bail!("a response to an unknown id: {}", response.id);
            }
            done += 1;
            if sent < total {
                self.send(&echo, first + sent as u64)?;
                sent += 1;
            }
        }
        Ok(())
    }

    fn close(mut self) -> anyhow::Result<()> {
        drop(self.stdin);
        self.child.wait().context("waiting for the server")?;
        Ok(())
    }
}

/// Streamable HTTP in JSON mode over one keep-alive HTTP/1.1 connection.
struct HttpConnection {
    url: HttpUrl,
    stream: TcpStream,
    reader: BufReader<TcpStream>,
    session: String,
    out: Vec<u8>,
    body: Vec<u8>,
}

#[derive(Clone)]
struct HttpUrl {
    /// `host:port`.
    authority: String,
    path: String,
}

impl HttpUrl {
    fn parse(url: &str) -> anyhow::Result<HttpUrl> {
        let rest = url
            .strip_prefix("http://")
            .context("the raw client speaks plain http only")?;
        let (authority, path) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, "/"),
        };
        Ok(HttpUrl {
            authority: authority.to_owned(),
            path: path.to_owned(),
        })
    }
}

/// What the raw client reads of an HTTP response.
struct HttpResponse {
    status: u16,
    session: Option<String>,
}

impl HttpConnection {
    fn open(url: &HttpUrl, session: &str) -> anyhow::Result<HttpConnection> {
        let stream = TcpStream::connect(&url.authority)
            .with_context(|| format!("connecting to {}", url.authority))?;
        stream.set_nodelay(true)?;
        let reader = BufReader::with_capacity(64 * 1024, stream.try_clone()?);
        Ok(HttpConnection {
            url: url.clone(),
            stream,
            reader,
            session: session.to_owned(),
            out: Vec::with_capacity(4096),
            body: Vec::with_capacity(64 * 1024),
        })
    }

    /// Writes one request: the headers a Streamable HTTP client must send,
    /// then `body` (none for DELETE).
    fn write_request(&mut self, method: &str, body: Option<&[u8]>) -> anyhow::Result<()> {
        let HttpConnection {
            url, session, out, ..
        } = self;
        out.clear();
        let _ = write!(
            out,
            "{method} {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n",
            url.path, url.authority
        );
        if !session.is_empty() {
            let _ = write!(
                out,
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {VERSION}\r\n"
            );
        }
        match body {
            Some(body) => {
                let _ = write!(
                    out,
                    "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                out.extend_from_slice(body);
            }
            None => out.extend_from_slice(b"Content-Length: 0\r\n\r\n"),
        }
        self.stream
            .write_all(&self.out)
            .context("writing a request")
    }

    /// Reads one response into `self.body`. JSON mode only: a body framed
    /// by `Content-Length`.
    fn read_response(&mut self) -> anyhow::Result<HttpResponse> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            bail!("the server closed the connection");
        }
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("not an HTTP status line: {line:?}"))?;
        let mut length = 0;
        let mut session = None;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                bail!("a malformed header: {header:?}");
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().context("a malformed Content-Length")?;
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(value.to_owned());
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                bail!("the raw client reads Content-Length bodies only");
            }
        }
        self.body.resize(length, 0);
        self.reader.read_exact(&mut self.body)?;
        Ok(HttpResponse { status, session })
    }

    fn post(&mut self, body: &[u8]) -> anyhow::Result<HttpResponse> {
        self.write_request("POST", Some(body))?;
        self.read_response()
    }
}

impl Connection for HttpConnection {
    fn connect(args: &Args) -> anyhow::Result<(Self, usize)> {
        let url = HttpUrl::parse(&args.url)?;
        let mut connection = HttpConnection::open(&url, "")?;
        let response = connection.post(INITIALIZE.as_bytes())?;
        if response.status != 200 {
            bail!("initialize: HTTP {}", response.status);
        }
        parse_response(&connection.body)?;
        connection.session = response.session.context("no Mcp-Session-Id")?;
        let response = connection.post(INITIALIZED.as_bytes())?;
        if response.status != 202 {
            bail!("notifications/initialized: HTTP {}", response.status);
        }
        connection.post(LIST_TOOLS.as_bytes())?;
        let tools = count_tools(&connection.body)?;
        Ok((connection, tools))
    }

    fn send(&mut self, template: &Template, id: u64) -> anyhow::Result<()> {
        let mut body = std::mem::take(&mut self.body);
        body.clear();
        template.encode(id, &mut body);
        let written = self.write_request("POST", Some(&body));
        self.body = body;
        written
    }

    fn recv(&mut self) -> anyhow::Result<Response> {
        let response = self.read_response()?;
        if response.status != 200 {
            bail!("HTTP {}", response.status);
        }
        parse_response(&self.body)
    }

    /// One keep-alive connection per call in flight, each on its own thread:
    /// HTTP/1.1 carries one exchange at a time.
    fn throughput(&mut self, args: &Args, total: usize) -> anyhow::Result<()> {
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..args.inflight)
                .map(|_| {
                    let next = &next;
                    let (url, session) = (&self.url, &self.session);
                    scope.spawn(move || -> anyhow::Result<()> {
                        let mut connection = HttpConnection::open(url, session)?;
                        let echo = Template::echo();
                        loop {
                            let n = next.fetch_add(1, Ordering::Relaxed);
                            if n >= total {
                                return Ok(());
                            }
                            connection.call(&echo, 1_000_000 + n as u64)?;
                        }
                    })
                })
                .collect();
            for worker in workers {
                worker
                    .join()
                    .map_err(|_| anyhow::anyhow!("a throughput thread panicked"))??;
            }
            Ok(())
        })
    }

    fn close(mut self) -> anyhow::Result<()> {
        self.write_request("DELETE", None)?;
        self.read_response()?;
        Ok(())
    }
}

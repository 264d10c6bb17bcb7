//! `cargo xtask bench`: our MCP client side by side with rmcp, the TypeScript SDK (v1 and v2) and a raw floor.
//!
//! These machines are shared and noisy, so absolute figures mean little: the
//! bench runs every client against the same fixture server in the same run,
//! interleaved (ours, modern, rmcp, ts, ts2, ts2-auto, raw; ours, ...), and
//! reports ratios. It reports and never fails on a figure; it fails only when a
//! client cannot run the workload.
//!
//! The clients (built in release mode, or installed from a lockfile):
//! - `ours`: `tests/src/bin/mcp-bench-client.rs`, through our public API;
//! - `modern`: the same program speaking the 2026-07-28 era
//!   (`MCP_BENCH_ERA=modern`) to a fixture that serves both eras, so that
//!   the stateless era's per-call cost is timed beside the handshake era's;
//! - `rmcp`: `bench/` (a non-member cargo project with its own lockfile);
//! - `ts`: `bench/ts/client.mjs`, the TypeScript SDK v1's `Client`
//!   (`@modelcontextprotocol/sdk`);
//! - `ts2`: `bench/ts/client-v2.mjs`, the TypeScript SDK v2's `Client`
//!   (`@modelcontextprotocol/client`) with its default options (which
//!   speak the handshake era), against the fixture that serves both eras;
//! - `ts2-auto`: the same program with `versionNegotiation: { mode:
//!   "auto" }` (`MCP_BENCH_TS_NEGOTIATION=auto`), which probes with
//!   `server/discover` and so speaks the 2026-07-28 era to that fixture,
//!   as `modern` does;
//! - `raw`: `tests/src/bin/mcp-bench-raw.rs`, no MCP library at all.
//!
//! # The client protocol
//!
//! Every client is a program that takes
//! `--transport stdio --server PATH --server-args "ARGS"` or
//! `--transport http --url URL`, then the workload as `--connects N --warmup
//! N --calls N --throughput-calls N --inflight N --big-calls N --big-kib N`.
//! It runs, in order:
//! 1. `connects` cold connects, each timed from spawning the server (stdio)
//!    or creating the HTTP transport to the end of a full `tools/list`, then
//!    closed untimed;
//! 2. on one more connection, `warmup` untimed echoes, then `calls` timed
//!    sequential echoes;
//! 3. `throughput-calls` echoes with `inflight` of them in flight;
//! 4. `big-calls` sequential calls of `big {kib}`, checking the text length.
//!
//! It prints one JSON line, `{"client", "transport", "tools", "connect_ns":
//! [...], "latency_ns": [...], "throughput_calls", "throughput_ns",
//! "big_calls", "big_bytes", "big_ns": [...]}` (`big_ns` per call; MB/s is
//! computed from the median call), and then waits for its stdin to
//! close before it exits: meanwhile the harness reads the client's peak RSS
//! (`VmHWM` in `/proc/PID/status`). A stdio server is the client's child, a
//! process of its own, so its memory is not counted. All statistics are
//! computed here from the raw samples, the same way for every client.
//!
//! One HTTP fixture server serves the handshake-era-only HTTP runs (`ours`,
//! `rmcp`, `ts`, `raw`) and a second one (`--era both`) the `modern`,
//! `ts2` and `ts2-auto` runs; each stdio connect spawns its own
//! fixture. The fixture offers a 212-tool catalog (`--tools 200`).
//! Each run's stderr goes to `target/bench/logs/ROUND-TRANSPORT-CLIENT.log`
//! (the report names the file when a run wrote any) and is shown when a run
//! fails.
//!
//! `--quick` runs the same seven clients over both transports once, with a
//! workload about a tenth of the full one: a smoke test that every client
//! still works, not a measurement.
//!
//! `--instructions` counts instead of timing: each Rust client runs under
//! valgrind's callgrind and the report gives instructions per echo call,
//! per 1 MiB result and per connect (see `bench/instructions.rs`).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::{cargo, display};

mod instructions;

/// How much work each client run does.
#[derive(Clone, Copy, Debug)]
struct Workload {
    /// A smoke run: its figures are printed but measure nothing.
    smoke: bool,
    rounds: usize,
    connects: usize,
    warmup: usize,
    calls: usize,
    throughput_calls: usize,
    inflight: usize,
    big_calls: usize,
    big_kib: usize,
    /// The longest one client run may take.
    timeout: Duration,
}

/// The full benchmark workload.
const FULL: Workload = Workload {
    smoke: false,
    rounds: 5,
    connects: 20,
    warmup: 100,
    calls: 2_000,
    throughput_calls: 20_000,
    inflight: 32,
    big_calls: 50,
    big_kib: 1024,
    timeout: Duration::from_secs(300),
};

/// `--quick`: a smoke run that every client still goes through whole.
const QUICK: Workload = Workload {
    smoke: true,
    rounds: 1,
    connects: 3,
    warmup: 20,
    calls: 200,
    throughput_calls: 2_000,
    inflight: 32,
    big_calls: 5,
    big_kib: 1024,
    timeout: Duration::from_secs(60),
};

/// The size of the fixture's generated catalog (`--tools`), on top of its
/// own tools.
const FIXTURE_TOOLS: usize = 200;

/// The fixture's arguments besides `--transport`: a catalog of `tools`
/// generated tools, and the handshake era only, so that every client speaks
/// the same protocol (ours, on its default `auto`, pays its era probe on
/// each connect).
fn fixture_args(tools: usize) -> String {
    format!("--tools {tools} --era legacy")
}

/// The fixture's arguments for a client that speaks the 2026-07-28 era: the
/// same catalog, both eras served.
fn modern_fixture_args(tools: usize) -> String {
    format!("--tools {tools} --era both")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

impl Transport {
    const ALL: [Transport; 2] = [Transport::Stdio, Transport::Http];

    fn name(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        }
    }
}

/// The clients, in the order each round runs them. `ours` comes first: the
/// ratio lines compare it with each of the others (see [`RATIOS`]).
const CLIENTS: [&str; 7] = ["ours", "modern", "rmcp", "ts", "ts2", "ts2-auto", "raw"];

/// The ratio lines, `mine / other`: ours against every other client in the
/// handshake era, each era of ours against the other, ours in the
/// 2026-07-28 era against the TypeScript v2 client in that era, and the
/// TypeScript v2 client against v1.
const RATIOS: [(&str, &str); 7] = [
    ("ours", "rmcp"),
    ("ours", "ts"),
    ("ours", "ts2"),
    ("ours", "raw"),
    ("modern", "ours"),
    ("modern", "ts2-auto"),
    ("ts2", "ts"),
];

/// How to start one client program.
struct ClientProgram {
    name: &'static str,
    program: PathBuf,
    /// Arguments before the protocol's (the script, for node).
    prefix: Vec<String>,
    /// Environment variables that pick the client's options (the era).
    env: Vec<(&'static str, &'static str)>,
    /// Whether it runs against the fixture that serves both eras rather
    /// than the handshake era alone.
    both_eras: bool,
    /// The name the program prints in its result line.
    reports_as: &'static str,
    /// Whether it speaks the 2026-07-28 era (where `--instructions`
    /// counts it, it counts ours in that era as an operation of its own).
    modern: bool,
}

impl ClientProgram {
    /// The fixture's arguments (and the HTTP fixture's) for this client.
    fn fixture_args(&self) -> String {
        if self.both_eras {
            modern_fixture_args(FIXTURE_TOOLS)
        } else {
            fixture_args(FIXTURE_TOOLS)
        }
    }
}

/// One client run's figures, computed from its raw samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Figures {
    /// Cold connect, median, ms.
    connect_ms: f64,
    /// Sequential echo latency, µs.
    p50_us: f64,
    p99_us: f64,
    /// Echoes per second with `inflight` in flight.
    throughput: f64,
    /// 1 MiB results, MB/s (10^6 bytes of result text per second).
    big_mb_s: f64,
    /// Peak RSS of the client process, MiB.
    rss_mib: f64,
}

/// The metrics, in table order: name, unit, whether higher is better, reader.
type Metric = (&'static str, &'static str, bool, fn(&Figures) -> f64);

const METRICS: [Metric; 6] = [
    ("connect", "ms", false, |f| f.connect_ms),
    ("p50", "µs", false, |f| f.p50_us),
    ("p99", "µs", false, |f| f.p99_us),
    ("throughput", "calls/s", true, |f| f.throughput),
    ("1MiB", "MB/s", true, |f| f.big_mb_s),
    ("RSS", "MiB", false, |f| f.rss_mib),
];

/// Parses the options and runs the bench.
pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let mut workload = FULL;
    let mut rounds = None;
    let mut count_instructions = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => workload = QUICK,
            "--instructions" => count_instructions = true,
            "--rounds" => {
                let n: usize = args
                    .next()
                    .context("--rounds needs a number")?
                    .parse()
                    .context("--rounds needs a number")?;
                if n == 0 {
                    bail!("--rounds must be at least 1");
                }
                rounds = Some(n);
            }
            other => {
                bail!("unknown bench option `{other}` (known: --quick, --rounds N, --instructions)")
            }
        }
    }
    if let Some(rounds) = rounds {
        workload.rounds = rounds;
    }
    let started = Instant::now();
    let clients = build(root)?;
    if count_instructions {
        let fixture = target_dir(root).join("release/mcp-fixture-server");
        print!("{}", instructions::run(&clients, &fixture)?);
        eprintln!(
            "==> bench: finished in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    eprintln!(
        "==> bench: built in {:.0} s; {} round(s) of {} clients over stdio and Streamable HTTP",
        started.elapsed().as_secs_f64(),
        workload.rounds,
        clients.len()
    );
    let fixture = target_dir(root).join("release/mcp-fixture-server");
    let logs = target_dir(root).join("bench/logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let server = HttpServer::start(&fixture, &fixture_args(FIXTURE_TOOLS))?;
    let modern_server = HttpServer::start(&fixture, &modern_fixture_args(FIXTURE_TOOLS))?;
    let urls = Urls {
        legacy: &server.url,
        modern: &modern_server.url,
    };
    let results = run_rounds(&clients, &fixture, urls, &workload, &logs);
    drop((server, modern_server));
    let results = results?;
    print!("{}", report(&results, &workload));
    eprintln!(
        "==> bench: finished in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let failed: Vec<String> = results
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| format!("{} {} round {}", r.transport.name(), r.client, r.round))
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} client run(s) failed: {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

/// Builds the fixture and our programs, the rmcp program, and installs the
/// TypeScript SDKs; returns the clients in [`CLIENTS`] order.
fn build(root: &Path) -> anyhow::Result<Vec<ClientProgram>> {
    let target = target_dir(root);
    let bench_target = target.join("bench");
    let bench_target = bench_target.to_string_lossy();
    let manifest = root.join("bench/Cargo.toml");
    let manifest = manifest.to_string_lossy();
    let steps = [
        cargo(
            root,
            &[
                "build",
                "--release",
                "-p",
                "tests",
                "--bin",
                "mcp-fixture-server",
                "--bin",
                "mcp-bench-client",
                "--bin",
                "mcp-bench-raw",
            ],
        ),
        cargo(
            root,
            &[
                "build",
                "--release",
                "--locked",
                "--manifest-path",
                &manifest,
                "--target-dir",
                &bench_target,
            ],
        ),
    ];
    for mut step in steps {
        eprintln!("==> bench: {}", display(&step));
        let status = step
            .status()
            .with_context(|| format!("could not start `{}`", display(&step)))?;
        if !status.success() {
            bail!("`{}` failed ({status})", display(&step));
        }
    }
    let ts = root.join("bench/ts");
    let mut npm = Command::new("npm");
    // npm reports on stdout; the bench's stdout is the report alone.
    npm.args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&ts)
        .stdout(std::io::stderr());
    eprintln!("==> bench: npm ci (in bench/ts)");
    let status = npm
        .status()
        .context("could not run npm: install Node.js 20+ with npm")?;
    if !status.success() {
        bail!("`npm ci` in {} failed ({status})", ts.display());
    }
    let ours = target.join("release/mcp-bench-client");
    let script = |name: &str| vec![ts.join(name).to_string_lossy().into_owned()];
    let client = |name, program: &Path, prefix| ClientProgram {
        name,
        program: program.to_path_buf(),
        prefix,
        env: Vec::new(),
        both_eras: false,
        reports_as: name,
        modern: false,
    };
    Ok(vec![
        ClientProgram {
            env: vec![("MCP_BENCH_ERA", "auto")],
            ..client("ours", &ours, Vec::new())
        },
        ClientProgram {
            env: vec![("MCP_BENCH_ERA", "modern")],
            both_eras: true,
            reports_as: "ours",
            modern: true,
            ..client("modern", &ours, Vec::new())
        },
        client(
            "rmcp",
            &target.join("bench/release/rmcp-bench-client"),
            Vec::new(),
        ),
        client("ts", Path::new("node"), script("client.mjs")),
        ClientProgram {
            env: vec![("MCP_BENCH_TS_NEGOTIATION", "default")],
            both_eras: true,
            ..client("ts2", Path::new("node"), script("client-v2.mjs"))
        },
        ClientProgram {
            env: vec![("MCP_BENCH_TS_NEGOTIATION", "auto")],
            both_eras: true,
            reports_as: "ts2",
            modern: true,
            ..client("ts2-auto", Path::new("node"), script("client-v2.mjs"))
        },
        client("raw", &target.join("release/mcp-bench-raw"), Vec::new()),
    ])
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// The HTTP fixture server every HTTP run talks to; stopped on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    /// Starts the fixture over HTTP with `args` (see [`fixture_args`]).
    fn start(fixture: &Path, args: &str) -> anyhow::Result<HttpServer> {
        let mut child = Command::new(fixture)
            .args(["--transport", "http", "--port", "0"])
            .args(args.split_whitespace())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("could not start {}", fixture.display()))?;
        let stdout = child.stdout.take().context("the fixture has no stdout")?;
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        // Owned before anything can fail, so that the fixture is stopped on
        // every path.
        let mut server = HttpServer {
            child,
            url: String::new(),
        };
        read.context("reading the fixture's first line")?;
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .with_context(|| format!("the fixture said {line:?}, not `listening on URL`"))?;
        server.url = url.to_owned();
        Ok(server)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        // Our own child, by its handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client run.
#[derive(Debug)]
struct RunResult {
    round: usize,
    transport: Transport,
    client: &'static str,
    figures: Figures,
    error: Option<String>,
}

/// The HTTP fixtures' URLs: the handshake era's, and the one serving both
/// eras.
#[derive(Clone, Copy)]
struct Urls<'a> {
    legacy: &'a str,
    modern: &'a str,
}

fn run_rounds(
    clients: &[ClientProgram],
    fixture: &Path,
    urls: Urls<'_>,
    workload: &Workload,
    logs: &Path,
) -> anyhow::Result<Vec<RunResult>> {
    let mut results = Vec::new();
    for round in 1..=workload.rounds {
        for transport in Transport::ALL {
            for client in clients {
                let url = if client.both_eras {
                    urls.modern
                } else {
                    urls.legacy
                };
                let target = target_args(transport, fixture, url, &client.fixture_args());
                let log = logs.join(format!("{round}-{}-{}.log", transport.name(), client.name));
                let started = Instant::now();
                let outcome = run_client(client, transport, &target, workload, &log);
                let seconds = started.elapsed().as_secs_f64();
                let (figures, error) = match outcome {
                    Ok(figures) => {
                        eprintln!(
                            "round {round}/{} {:5} {:8}: {} ({seconds:.1} s){}",
                            workload.rounds,
                            transport.name(),
                            client.name,
                            describe(&figures),
                            stderr_note(&log),
                        );
                        (figures, None)
                    }
                    Err(error) => {
                        eprintln!(
                            "round {round}/{} {:5} {:8}: FAILED after {seconds:.1} s: {error:#}\n{}",
                            workload.rounds,
                            transport.name(),
                            client.name,
                            log_tail(&log),
                        );
                        (Figures::default(), Some(format!("{error:#}")))
                    }
                };
                results.push(RunResult {
                    round,
                    transport,
                    client: client.name,
                    figures,
                    error,
                });
            }
        }
    }
    Ok(results)
}

/// The protocol's arguments that name the server: the fixture to spawn with
/// `args` (stdio) or the URL of the HTTP fixture started with them.
fn target_args(transport: Transport, fixture: &Path, url: &str, args: &str) -> Vec<String> {
    match transport {
        Transport::Stdio => vec![
            "--server".to_owned(),
            fixture.to_string_lossy().into_owned(),
            "--server-args".to_owned(),
            format!("--transport stdio {args}"),
        ],
        Transport::Http => vec!["--url".to_owned(), url.to_owned()],
    }
}

/// Where a successful run's stderr went, when it wrote any.
fn stderr_note(log: &Path) -> String {
    let lines = std::fs::read_to_string(log).map_or(0, |text| text.lines().count());
    if lines == 0 {
        String::new()
    } else {
        format!(" [{lines} stderr line(s) in {}]", log.display())
    }
}

/// The end of a failed run's stderr, to show with its error.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    format!("--- the end of {} ---\n{tail}", log.display())
}

fn describe(f: &Figures) -> String {
    format!(
        "connect {:.2} ms, p50 {:.1} µs, p99 {:.1} µs, {:.0} calls/s, {:.0} MB/s, RSS {:.1} MiB",
        f.connect_ms, f.p50_us, f.p99_us, f.throughput, f.big_mb_s, f.rss_mib
    )
}

/// Runs one client program and computes its figures.
fn run_client(
    client: &ClientProgram,
    transport: Transport,
    target: &[String],
    workload: &Workload,
    log: &Path,
) -> anyhow::Result<Figures> {
    let w = workload;
    // Kept out of the report: the TypeScript SDK, for one, warns thousands
    // of times under 32 calls in flight over HTTP.
    let stderr =
        std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut command = Command::new(&client.program);
    command
        .args(&client.prefix)
        .envs(client.env.iter().copied())
        .args(["--transport", transport.name()])
        .args(target)
        .args(["--connects", &w.connects.to_string()])
        .args(["--warmup", &w.warmup.to_string()])
        .args(["--calls", &w.calls.to_string()])
        .args(["--throughput-calls", &w.throughput_calls.to_string()])
        .args(["--inflight", &w.inflight.to_string()])
        .args(["--big-calls", &w.big_calls.to_string()])
        .args(["--big-kib", &w.big_kib.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr);
    let mut child = command
        .spawn()
        .with_context(|| format!("could not start {}", client.program.display()))?;
    let mut run = ClientRun {
        stdin: child.stdin.take(),
        child,
    };
    let stdout = run.child.stdout.take().context("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line).map(|_| line);
        let _ = tx.send(read);
    });
    let line = match rx.recv_timeout(w.timeout) {
        Ok(read) => read.context("reading the client's result line")?,
        Err(_) => bail!("no result within {:?}", w.timeout),
    };
    if line.trim().is_empty() {
        let status = run.child.wait()?;
        bail!("the client printed no result ({status})");
    }
    // The client is alive and waiting for stdin to close: its peak RSS is final.
    let rss_kib = peak_rss_kib(run.child.id())?;
    drop(run.stdin.take());
    let status = wait_timeout(&mut run.child, Duration::from_secs(10))?;
    if !status.is_some_and(|s| s.success()) {
        bail!("the client did not exit cleanly ({status:?})");
    }
    let sample = json::parse(line.trim()).context("the client's result line")?;
    figures(&sample, client.reports_as, transport, rss_kib)
}

/// A running client program; killed if the run is abandoned.
struct ClientRun {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Drop for ClientRun {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if let Ok(None) = self.child.try_wait() {
            // Our own child, by its handle.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn wait_timeout(
    child: &mut Child,
    limit: Duration,
) -> anyhow::Result<Option<std::process::ExitStatus>> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if started.elapsed() > limit {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `VmHWM` of a live process, in KiB.
fn peak_rss_kib(pid: u32) -> anyhow::Result<f64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("no VmHWM in {path}"))
}

/// The figures of one result line.
fn figures(
    sample: &json::Value,
    client: &str,
    transport: Transport,
    rss_kib: f64,
) -> anyhow::Result<Figures> {
    let field = |name: &str| sample.get(name).with_context(|| format!("no `{name}`"));
    let number = |name: &str| {
        field(name)?
            .as_number()
            .with_context(|| format!("`{name}` is not a number"))
    };
    let numbers = |name: &str| -> anyhow::Result<Vec<f64>> {
        let list = field(name)?
            .as_array()
            .with_context(|| format!("`{name}` is not a list"))?;
        let values: Option<Vec<f64>> = list.iter().map(json::Value::as_number).collect();
        let mut values = values.with_context(|| format!("`{name}` holds a non-number"))?;
        if values.is_empty() {
            bail!("`{name}` is empty");
        }
        values.sort_by(f64::total_cmp);
        Ok(values)
    };
    if field("client")?.as_str() != Some(client) {
        bail!("the result line is not {client}'s");
    }
    if field("transport")?.as_str() != Some(transport.name()) {
        bail!("the result line is not for {}", transport.name());
    }
    let connect = numbers("connect_ns")?;
    let latency = numbers("latency_ns")?;
    Ok(Figures {
        connect_ms: median(&connect) / 1e6,
        p50_us: percentile(&latency, 50.0) / 1e3,
        p99_us: percentile(&latency, 99.0) / 1e3,
        throughput: number("throughput_calls")? / (number("throughput_ns")? / 1e9),
        // From the median call, not the total: 50 calls take about 50 ms,
        // and one descheduling of the client or the server in that window
        // moved the total by a third (seen in rounds of the same run).
        big_mb_s: number("big_bytes")?
            / number("big_calls")?
            / 1e6
            / (median(&numbers("big_ns")?) / 1e9),
        rss_mib: rss_kib / 1024.0,
    })
}

/// The median of sorted values (the mean of the middle two for an even count).
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The table (median of each metric over the rounds), the ratio lines
/// (median over the rounds of each round's ratio, so that a slow patch of
/// the machine hits both sides of a ratio alike) and the throughput and latency targets.
fn report(results: &[RunResult], workload: &Workload) -> String {
    let mut out = String::new();
    let w = workload;
    let _ = writeln!(
        out,
        "\nMCP client bench: {} round(s); connect = median of {} (spawn/setup + initialize + \
         {}-tool tools/list); p50/p99 of {} sequential echoes; throughput = {} echoes, {} in \
         flight; {} x {} KiB results (MB/s of the median call); peak RSS = VmHWM of the client process. \
         `modern` is ours speaking 2026-07-28 to a fixture serving both eras; `ts2` is the \
         TypeScript SDK v2 client with its defaults (the handshake era) and `ts2-auto` with its \
         `auto` negotiation (2026-07-28), both against that fixture. \
         Each cell is the median over the rounds.\n",
        w.rounds, w.connects, 212, w.calls, w.throughput_calls, w.inflight, w.big_calls, w.big_kib
    );
    if w.smoke {
        out.push_str(
            "--quick: a smoke run that checks every client works; its figures measure nothing.\n\n",
        );
    }
    let _ = write!(out, "{:<9} {:<8}", "transport", "client");
    for (name, unit, _, _) in METRICS {
        let _ = write!(out, " {:>18}", format!("{name} {unit}"));
    }
    out.push('\n');
    for transport in Transport::ALL {
        for client in CLIENTS {
            let _ = write!(out, "{:<9} {:<8}", transport.name(), client);
            let runs: Vec<&RunResult> = results
                .iter()
                .filter(|r| r.transport == transport && r.client == client && r.error.is_none())
                .collect();
            for (_, _, _, read) in METRICS {
                let mut values: Vec<f64> = runs.iter().map(|r| read(&r.figures)).collect();
                values.sort_by(f64::total_cmp);
                let cell = if values.is_empty() {
                    "failed".to_owned()
                } else {
                    format_number(median(&values))
                };
                let _ = write!(out, " {cell:>18}");
            }
            out.push('\n');
        }
    }
    out.push('\n');
    let mut ratios = Vec::new();
    for transport in Transport::ALL {
        for (mine, other) in RATIOS {
            let _ = write!(out, "{} {mine} / {other}:", transport.name());
            for (index, (name, _, higher_is_better, read)) in METRICS.iter().enumerate() {
                let ratio = round_ratio(results, transport, mine, other, *read);
                ratios.push(((transport, mine, other, index), ratio));
                let better = if *higher_is_better { "higher" } else { "lower" };
                let _ = write!(
                    out,
                    " {name} {} ({better} is better){}",
                    ratio.map_or("n/a".to_owned(), |r| format!("{r:.2}x")),
                    if index + 1 < METRICS.len() { "," } else { "" }
                );
            }
            out.push('\n');
        }
    }
    out.push('\n');
    let ratio = |transport, mine, other, metric: &str| {
        let index = METRICS.iter().position(|m| m.0 == metric)?;
        ratios
            .iter()
            .find(|(key, _)| *key == (transport, mine, other, index))
            .and_then(|(_, r)| *r)
    };
    let targets = [
        (
            "stdio throughput >= 1.5x rmcp",
            Transport::Stdio,
            "rmcp",
            "throughput",
            1.5,
            true,
        ),
        (
            "stdio throughput >= 0.8x raw",
            Transport::Stdio,
            "raw",
            "throughput",
            0.8,
            true,
        ),
        (
            "http throughput >= 2.5x rmcp",
            Transport::Http,
            "rmcp",
            "throughput",
            2.5,
            true,
        ),
        (
            "stdio p50 <= 1.1x raw",
            Transport::Stdio,
            "raw",
            "p50",
            1.1,
            false,
        ),
        (
            "http p50 <= 1.2x raw",
            Transport::Http,
            "raw",
            "p50",
            1.2,
            false,
        ),
        (
            "stdio 1MiB >= 1.3x rmcp",
            Transport::Stdio,
            "rmcp",
            "1MiB",
            1.3,
            true,
        ),
        (
            "http 1MiB >= 1.3x rmcp",
            Transport::Http,
            "rmcp",
            "1MiB",
            1.3,
            true,
        ),
        (
            "stdio RSS <= 1.0x rmcp",
            Transport::Stdio,
            "rmcp",
            "RSS",
            1.0,
            false,
        ),
        (
            "http RSS <= 1.0x rmcp",
            Transport::Http,
            "rmcp",
            "RSS",
            1.0,
            false,
        ),
    ];
    let verdict = |ratio: Option<f64>, bound: f64, at_least: bool| match ratio {
        None => "n/a".to_owned(),
        Some(r) if (at_least && r >= bound) || (!at_least && r <= bound) => {
            format!("{r:.2}x met")
        }
        Some(r) => format!("{r:.2}x MISSED"),
    };
    for (label, transport, other, metric, bound, at_least) in targets {
        let verdict = verdict(ratio(transport, "ours", other, metric), bound, at_least);
        let _ = writeln!(out, "target {label}: {verdict}");
    }
    for transport in Transport::ALL {
        let verdict = verdict(
            ratio(transport, "modern", "ours", "p50"),
            MODERN_AT_MOST,
            false,
        );
        let _ = writeln!(
            out,
            "target {} p50 in 2026-07-28 <= {MODERN_AT_MOST:.2}x the handshake era's: {verdict}",
            transport.name()
        );
    }
    out
}

/// How much more a 2026-07-28 echo may cost than a handshake-era one, in
/// time (p50) and in instructions: the stateless era's headers and `_meta`
/// may cost at most a tenth more.
const MODERN_AT_MOST: f64 = 1.10;

/// The median over the rounds of `mine` / `other` for one metric, counting
/// only rounds where both ran.
fn round_ratio(
    results: &[RunResult],
    transport: Transport,
    mine: &str,
    other: &str,
    read: fn(&Figures) -> f64,
) -> Option<f64> {
    let find = |round, client: &str| {
        results.iter().find(|r| {
            r.round == round && r.transport == transport && r.client == client && r.error.is_none()
        })
    };
    let rounds = results.iter().map(|r| r.round).max().unwrap_or(0);
    let mut values: Vec<f64> = (1..=rounds)
        .filter_map(|round| {
            let (ours, theirs) = (find(round, mine)?, find(round, other)?);
            Some(read(&ours.figures) / read(&theirs.figures))
        })
        .filter(|r| r.is_finite())
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(median(&values))
}

/// Three significant figures or so, without exponents.
fn format_number(value: f64) -> String {
    if value >= 1000.0 {
        format!("{value:.0}")
    } else if value >= 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// Just enough JSON for the clients' result lines: xtask has no JSON
/// dependency, and one line of numbers, strings and lists does not warrant
/// adding one.
mod json {
    use anyhow::{Context, bail};

    #[derive(Debug, PartialEq)]
    pub(super) enum Value {
        Null,
        Bool(bool),
        Number(f64),
        String(String),
        Array(Vec<Value>),
        Object(Vec<(String, Value)>),
    }

    impl Value {
        pub(super) fn get(&self, key: &str) -> Option<&Value> {
            match self {
                Value::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
                _ => None,
            }
        }

        pub(super) fn as_number(&self) -> Option<f64> {
            match self {
                Value::Number(n) => Some(*n),
                _ => None,
            }
        }

        pub(super) fn as_str(&self) -> Option<&str> {
            match self {
                Value::String(s) => Some(s),
                _ => None,
            }
        }

        pub(super) fn as_array(&self) -> Option<&[Value]> {
            match self {
                Value::Array(items) => Some(items),
                _ => None,
            }
        }
    }

    /// Parses one JSON document (RFC 8259); `\u` escapes must not be
    /// surrogates, which no result line needs.
    pub(super) fn parse(text: &str) -> anyhow::Result<Value> {
        let mut parser = Parser {
            bytes: text.as_bytes(),
            at: 0,
        };
        let value = parser.value(0)?;
        parser.skip_space();
        if parser.at != parser.bytes.len() {
            bail!("trailing characters at byte {}", parser.at);
        }
        Ok(value)
    }

    struct Parser<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl Parser<'_> {
        fn skip_space(&mut self) {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
                self.at += 1;
            }
        }

        fn peek(&mut self) -> Option<u8> {
            self.skip_space();
            self.bytes.get(self.at).copied()
        }

        fn expect(&mut self, byte: u8) -> anyhow::Result<()> {
            if self.peek() != Some(byte) {
                bail!("expected `{}` at byte {}", byte as char, self.at);
            }
            self.at += 1;
            Ok(())
        }

        fn literal(&mut self, word: &str, value: Value) -> anyhow::Result<Value> {
            if !self.bytes[self.at..].starts_with(word.as_bytes()) {
                bail!("unexpected characters at byte {}", self.at);
            }
            self.at += word.len();
            Ok(value)
        }

        fn value(&mut self, depth: usize) -> anyhow::Result<Value> {
            if depth > 32 {
                bail!("nested too deep");
            }
            match self.peek() {
                Some(b'{') => {
                    self.at += 1;
                    let mut fields = Vec::new();
                    if self.peek() == Some(b'}') {
                        self.at += 1;
                        return Ok(Value::Object(fields));
                    }
                    loop {
                        let key = self.string()?;
                        self.expect(b':')?;
                        fields.push((key, self.value(depth + 1)?));
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b'}') => {
                                self.at += 1;
                                return Ok(Value::Object(fields));
                            }
                            _ => bail!("expected `,` or `}}` at byte {}", self.at),
                        }
                    }
                }
                Some(b'[') => {
                    self.at += 1;
                    let mut items = Vec::new();
                    if self.peek() == Some(b']') {
                        self.at += 1;
                        return Ok(Value::Array(items));
                    }
                    loop {
                        items.push(self.value(depth + 1)?);
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b']') => {
                                self.at += 1;
                                return Ok(Value::Array(items));
                            }
                            _ => bail!("expected `,` or `]` at byte {}", self.at),
                        }
                    }
                }
                Some(b'"') => Ok(Value::String(self.string()?)),
                Some(b't') => self.literal("true", Value::Bool(true)),
                Some(b'f') => self.literal("false", Value::Bool(false)),
                Some(b'n') => self.literal("null", Value::Null),
                Some(b'-' | b'0'..=b'9') => {
                    let start = self.at;
                    while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') =
                        self.bytes.get(self.at)
                    {
                        self.at += 1;
                    }
                    let text = std::str::from_utf8(&self.bytes[start..self.at])?;
                    let number = text
                        .parse()
                        .with_context(|| format!("not a number: {text:?}"))?;
                    Ok(Value::Number(number))
                }
                _ => bail!("expected a value at byte {}", self.at),
            }
        }

        fn string(&mut self) -> anyhow::Result<String> {
            self.expect(b'"')?;
            let mut out = Vec::new();
            loop {
                let Some(&byte) = self.bytes.get(self.at) else {
                    bail!("unterminated string");
                };
                self.at += 1;
                match byte {
                    b'"' => return Ok(String::from_utf8(out)?),
                    b'\\' => {
                        let Some(&escape) = self.bytes.get(self.at) else {
                            bail!("unterminated escape");
                        };
                        self.at += 1;
                        let plain = match escape {
                            b'"' => '"',
                            b'\\' => '\\',
                            b'/' => '/',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'n' => '\n',
                            b'r' => '\r',
                            b't' => '\t',
                            b'u' => {
                                let hex = self
                                    .bytes
                                    .get(self.at..self.at + 4)
                                    .context("a short \\u escape")?;
                                self.at += 4;
                                let code = u32::from_str_radix(std::str::from_utf8(hex)?, 16)?;
                                char::from_u32(code).context("a surrogate \\u escape")?
                            }
                            other => bail!("an unknown escape `\\{}`", other as char),
                        };
                        let mut buf = [0; 4];
                        out.extend_from_slice(plain.encode_utf8(&mut buf).as_bytes());
                    }
                    control if control < 0x20 => bail!("a control character in a string"),
                    other => out.push(other),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_result_line() {
        let line = r#"{"client":"ours","transport":"stdio","tools":212,"connect_ns":[3000000,1000000,2000000],
            "latency_ns":[1000,2000,3000,4000],"throughput_calls":20000,"throughput_ns":1000000000,
            "big_calls":3,"big_bytes":3000000,"big_ns":[4000000,1000000,2000000],"note":"a \"quoted\" \u00e9"}"#;
        let value = json::parse(line).unwrap();
        assert_eq!(
            value.get("note").and_then(json::Value::as_str),
            Some("a \"quoted\" é")
        );
        let f = figures(&value, "ours", Transport::Stdio, 10240.0).unwrap();
        assert_eq!(
            f,
            Figures {
                connect_ms: 2.0,
                p50_us: 2.0,
                p99_us: 4.0,
                throughput: 20000.0,
                // 1 MB per call, the median call 2 ms.
                big_mb_s: 500.0,
                rss_mib: 10.0,
            }
        );
        assert!(figures(&value, "rmcp", Transport::Stdio, 0.0).is_err());
        assert!(json::parse("{\"a\":[1,2}").is_err());
        assert!(json::parse("[1] x").is_err());
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let values: Vec<f64> = (1..=2000).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 1000.0);
        assert_eq!(percentile(&values, 99.0), 1980.0);
        assert_eq!(median(&[1.0, 2.0, 3.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 3.0, 10.0]), 2.5);
    }

    #[test]
    fn the_report_compares_the_eras() {
        let run = |client, p50_us| RunResult {
            round: 1,
            transport: Transport::Stdio,
            client,
            figures: Figures {
                p50_us,
                throughput: 1.0,
                ..Figures::default()
            },
            error: None,
        };
        let results = [
            run("ours", 70.0),
            run("modern", 84.0),
            run("ts", 100.0),
            run("ts2", 150.0),
            run("ts2-auto", 210.0),
            run("raw", 70.0),
        ];
        let text = report(&results, &FULL);
        assert!(text.contains("stdio     ts2-auto"), "{text}");
        assert!(
            text.contains("stdio ts2 / ts: connect n/a (lower is better), p50 1.50x"),
            "{text}"
        );
        assert!(
            text.contains("stdio modern / ts2-auto: connect n/a (lower is better), p50 0.40x"),
            "{text}"
        );
        assert!(
            text.contains("stdio ours / ts2: connect n/a (lower is better), p50 0.47x"),
            "{text}"
        );
        assert!(text.contains("stdio     modern"), "{text}");
        assert!(text.contains("stdio modern / ours: connect n/a"), "{text}");
        assert!(text.contains("p50 1.20x (lower is better)"), "{text}");
        assert!(
            text.contains(
                "target stdio p50 in 2026-07-28 <= 1.10x the handshake era's: 1.20x MISSED"
            ),
            "{text}"
        );
        assert!(
            text.contains("target http p50 in 2026-07-28 <= 1.10x the handshake era's: n/a"),
            "{text}"
        );
        assert!(
            text.contains("target stdio p50 <= 1.1x raw: 1.00x met"),
            "{text}"
        );
    }

    #[test]
    fn ratios_are_taken_round_by_round() {
        let run = |round, client, throughput| RunResult {
            round,
            transport: Transport::Http,
            client,
            figures: Figures {
                throughput,
                ..Figures::default()
            },
            error: None,
        };
        let results = [
            run(1, "ours", 100.0),
            run(1, "rmcp", 50.0),
            run(2, "ours", 40.0),
            run(2, "rmcp", 10.0),
            run(3, "ours", 90.0),
            run(3, "rmcp", 30.0),
        ];
        let ratio = round_ratio(&results, Transport::Http, "ours", "rmcp", |f| f.throughput);
        assert_eq!(ratio, Some(3.0));
        assert_eq!(
            round_ratio(&results, Transport::Http, "rmcp", "ours", |f| f.throughput),
            Some(1.0 / 3.0)
        );
        assert_eq!(
            round_ratio(&results, Transport::Stdio, "ours", "rmcp", |f| f.throughput),
            None
        );
    }
}

//! `mcp-bind-bench`: what binding a host's tools for a prompt costs in time and memory, for the first binding, a rebinding of the same tools and a second session, at several catalog sizes.
//!
//! `cargo run --release -p tests --bin mcp-bind-bench -- [--size SERVERSxTOOLS ...]`
//!
//! Each size (default `2x100`, `20x100`, `50x124` and `50x400`: 200, 2,000,
//! 6,200 and 20,000 tools) runs in a fresh process of this executable, so
//! that its memory is its own. That process is a host on the public API:
//! an `McpManager` connecting `SERVERS` copies of the fixture server (built
//! beside it) over stdio, each listing `TOOLS` tools (its 12 built-in ones
//! and generated ones with realistic descriptions and schemas), and two
//! `McpSession`s over it. Once every server is ready it binds, in order:
//!
//! 1. `first`: session A's first binding;
//! 2. `again`: session A again, the first tool set still held (a host
//!    binds the next prompt's tools before it lets the last ones go);
//! 3. `second session`: session B's first binding;
//! 4. `released`: the first two tool sets of A and B's are dropped;
//! 5. `steady`: ten more bindings of A, each replacing the tool set held.
//!
//! After each step it reads the process's resident memory (`VmRSS`, Linux
//! only), and it times each `bind` (the median for `steady`). It prints one
//! row per size, then the time and the first binding's memory per tool,
//! which stay flat when both grow linearly. Times are noisy on a shared
//! machine; the stable figure is the binds' instruction count, `valgrind
//! --tool=callgrind --toggle-collect='*McpSession*bind*' mcp-bind-bench
//! --sample SERVERSxTOOLS` (all 13 binds of one size), and
//! `valgrind --tool=dhat` on the same run tells where the bytes go.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::McpManager;
use mcp_toolbridge::{McpSession, SessionOptions};

/// The default sizes: servers and tools per server.
const SIZES: [(usize, usize); 4] = [(2, 100), (20, 100), (50, 124), (50, 400)];

/// The fixture's built-in tools, listed before its generated ones.
const BUILTIN_TOOLS: usize = 12;

/// Memory after one step: resident KiB.
#[derive(Clone, Copy, Debug, Default)]
struct Memory {
    rss_kib: u64,
}

impl Memory {
    fn now() -> Memory {
        Memory {
            rss_kib: rss_kib().unwrap_or(0),
        }
    }
}

/// One size's figures.
#[derive(Debug, Default)]
struct Sample {
    tools: usize,
    before: Memory,
    first: Memory,
    first_time: Duration,
    again: Memory,
    again_time: Duration,
    second: Memory,
    second_time: Duration,
    released: Memory,
    steady: Memory,
    steady_time: Duration,
}

fn main() -> anyhow::Result<()> {
    let mut sizes = Vec::new();
    let mut sample = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--size" => sizes.push(parse_size(&args.next().context("--size needs a value")?)?),
            "--sample" => {
                sample = Some(parse_size(&args.next().context("--sample needs a value")?)?)
            }
            "-h" | "--help" => {
                println!("usage: mcp-bind-bench [--size SERVERSxTOOLS ...]");
                return Ok(());
            }
            other => bail!("unknown flag {other}"),
        }
    }
    let fixture = std::env::current_exe()?
        .parent()
        .context("the executable has no directory")?
        .join("mcp-fixture-server");
    if !fixture.exists() {
        bail!(
            "{} is missing: run `cargo build --release -p tests --bins` first",
            fixture.display()
        );
    }
    if let Some((servers, tools)) = sample {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let sample = runtime.block_on(measure(&fixture, servers, tools))?;
        println!("{}", sample.encode());
        return Ok(());
    }
    if sizes.is_empty() {
        sizes.extend(SIZES);
    }
    println!(
        "{:>7} {:>9} {:>9} {:>9} {:>9} | {:>8} {:>8} {:>8} {:>8} {:>9} {:>8}",
        "tools",
        "first ms",
        "again ms",
        "2nd ms",
        "steady",
        "rss MiB",
        "+first",
        "+again",
        "+2nd",
        "released",
        "steady",
    );
    let mut rows = Vec::new();
    for (servers, tools) in sizes {
        let output = std::process::Command::new(std::env::current_exe()?)
            .args(["--sample", &format!("{servers}x{tools}")])
            .output()?;
        if !output.status.success() {
            bail!(
                "the {servers}x{tools} run failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let s = Sample::decode(&String::from_utf8_lossy(&output.stdout))?;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{:>7} {:>9.1} {:>9.1} {:>9.1} {:>9.1} | {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>8.1}",
            s.tools,
            ms(s.first_time),
            ms(s.again_time),
            ms(s.second_time),
            ms(s.steady_time),
            mib(s.before.rss_kib),
            delta(s.before, s.first),
            delta(s.first, s.again),
            delta(s.again, s.second),
            delta(s.first, s.released),
            delta(s.first, s.steady),
        );
        rows.push(s);
    }
    println!(
        "(+first: the first binding's growth; +again, +2nd: each next one's; released, steady: against the first binding's)"
    );
    println!("per tool (flat when linear):");
    for s in &rows {
        let per = |x: f64| x / s.tools.max(1) as f64;
        println!(
            "{:>7} tools: first bind {:.2} us/tool, steady bind {:.2} us/tool, first binding {:.0} resident bytes/tool",
            s.tools,
            per(s.first_time.as_secs_f64() * 1e6),
            per(s.steady_time.as_secs_f64() * 1e6),
            per(s.first.rss_kib.saturating_sub(s.before.rss_kib) as f64 * 1024.0),
        );
    }
    Ok(())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The growth from `a` to `b`, MiB (negative when memory was returned).
fn delta(a: Memory, b: Memory) -> f64 {
    (b.rss_kib as f64 - a.rss_kib as f64) / 1024.0
}

fn parse_size(text: &str) -> anyhow::Result<(usize, usize)> {
    let (servers, tools) = text
        .split_once('x')
        .with_context(|| format!("{text}: SERVERSxTOOLS expected"))?;
    let servers: usize = servers
        .parse()
        .with_context(|| format!("{text}: servers"))?;
    let tools: usize = tools.parse().with_context(|| format!("{text}: tools"))?;
    if servers == 0 || !(BUILTIN_TOOLS..=BUILTIN_TOOLS + 9_999).contains(&tools) {
        bail!(
            "{text}: at least one server, and {BUILTIN_TOOLS} to {} tools each",
            BUILTIN_TOOLS + 9_999
        );
    }
    Ok((servers, tools))
}

/// One size, in this process.
async fn measure(fixture: &Path, servers: usize, tools: usize) -> anyhow::Result<Sample> {
    let configs: Vec<ServerConfig> = (0..servers)
        .map(|i| {
            let mut stdio = StdioConfig::new(fixture.display().to_string());
            stdio.args = vec![
                "--era".into(),
                "legacy".into(),
                "--tools".into(),
                (tools - BUILTIN_TOOLS).to_string(),
            ];
            ServerConfig::new(format!("s{i:03}"), TransportConfig::Stdio(stdio))
        })
        .collect();
    let manager = McpManager::builder().build();
    let report = manager.connect_servers(configs).await;
    if report.ready.len() != servers {
        bail!(
            "{} of {servers} servers connected: {:?}",
            report.ready.len(),
            report.errors
        );
    }
    let a = McpSession::new(&manager, SessionOptions::default());
    let b = McpSession::new(&manager, SessionOptions::default());
    let mut sample = Sample {
        before: Memory::now(),
        ..Sample::default()
    };
    let timed = |session: &McpSession| {
        let started = Instant::now();
        let set = session.bind();
        (set, started.elapsed())
    };
    let (a1, time) = timed(&a);
    sample.first = Memory::now();
    sample.first_time = time;
    sample.tools = a1.tools().len();
    if sample.tools != servers * tools {
        bail!("bound {} tools of {}", sample.tools, servers * tools);
    }
    let (a2, time) = timed(&a);
    sample.again = Memory::now();
    sample.again_time = time;
    let (b1, time) = timed(&b);
    sample.second = Memory::now();
    sample.second_time = time;
    drop((a1, b1));
    sample.released = Memory::now();
    let mut held = a2;
    let mut times = Vec::new();
    for _ in 0..10 {
        let (set, time) = timed(&a);
        held = set;
        times.push(time);
    }
    times.sort();
    sample.steady_time = times[times.len() / 2];
    sample.steady = Memory::now();
    drop((held, a, b));
    manager.close().await;
    Ok(sample)
}

/// `VmRSS` of this process, KiB.
fn rss_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl Sample {
    /// One line of space-separated numbers (nanoseconds and KiB).
    fn encode(&self) -> String {
        let mut line = format!(
            "{} {} {} {} {}",
            self.tools,
            self.first_time.as_nanos(),
            self.again_time.as_nanos(),
            self.second_time.as_nanos(),
            self.steady_time.as_nanos()
        );
        for m in [
            self.before,
            self.first,
            self.again,
            self.second,
            self.released,
            self.steady,
        ] {
            line.push_str(&format!(" {}", m.rss_kib));
        }
        line
    }

    fn decode(line: &str) -> anyhow::Result<Sample> {
        let n: Vec<u64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .with_context(|| format!("a sample line: {line:?}"))?;
        if n.len() != 11 {
            bail!("a sample line: {line:?}");
        }
        let memory = |i: usize| Memory { rss_kib: n[i] };
        let time = |i: usize| Duration::from_nanos(n[i]);
        Ok(Sample {
            tools: usize::try_from(n[0]).unwrap_or(0),
            first_time: time(1),
            again_time: time(2),
            second_time: time(3),
            steady_time: time(4),
            before: memory(5),
            first: memory(6),
            again: memory(7),
            second: memory(8),
            released: memory(9),
            steady: memory(10),
        })
    }
}

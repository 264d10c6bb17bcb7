//! `mcp-host-start`: how long a host with many configured stdio servers takes from start to its first prompt, and how much memory it and its servers hold then, with the startup gate against a lazy start.
//!
//! `cargo run --release -p tests --bin mcp-host-start -- [--servers N] [--rounds R]`
//!
//! It runs the fixture server (built beside it) as `N` stdio servers
//! (default 40). A first, unmeasured run of a host fills a tool cache in a
//! scratch directory, as an earlier session of the host would have. Then,
//! `R` rounds (default 5), interleaved, each mode starts a fresh host
//! process (this executable with `--sample`), which builds a manager on
//! that cache, connects every server, binds a model's tool set (the first
//! prompt) and reads the resident memory of itself and of every server
//! process it started (`VmRSS` from `/proc`, Linux only), then closes. It prints the median of each figure per mode, and the lazy
//! mode's ratios against the gate.
//!
//! - `gate`: the default startup gate (every server is started; the gate
//!   returns within 250 ms with cached tools for those still connecting).
//!   Its memory is also read once every server is ready (`settled`).
//! - `lazy`: `ManagerOptions::lazy`: no server is started until a tool of
//!   it is called.
//!
//! Each sample then calls one tool (`first call`): in lazy mode, that call
//! starts its server, which is what a lazy host pays at first use.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{JsonFileToolCache, ManagerOptions, McpManager, ToolCache};
use mcp_toolbridge::{McpSession, PermissionPreset, SessionOptions, ToolCall};

/// One mode's figures in one round.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    /// Manager built to tool set bound.
    first_prompt: Duration,
    /// This process's RSS at the first prompt, KiB.
    host_kib: u64,
    /// The sum of the started servers' RSS at the first prompt, KiB.
    children_kib: u64,
    /// How many server processes were running at the first prompt.
    processes: usize,
    /// Host and children once every server is ready (gate only), KiB.
    settled_kib: Option<u64>,
    /// Tools offered at the first prompt.
    tools: usize,
    /// The first call of a tool (`s00`'s echo) after the first prompt:
    /// in lazy mode it starts that server.
    first_call: Duration,
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let configs = configs(&fixture, args.servers);
    if let Some((lazy, cache)) = &args.sample {
        // One measured host start, in a process of its own, so that its
        // memory is the host's alone.
        let cache: Arc<dyn ToolCache> = Arc::new(JsonFileToolCache::open(cache));
        let sample = runtime.block_on(sample(&cache, &configs, *lazy))?;
        println!("{}", sample.encode());
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let cache_path = dir.path().join("tools.json");
    runtime.block_on(async {
        let cache: Arc<dyn ToolCache> = Arc::new(JsonFileToolCache::open(&cache_path));
        let warm = manager(&cache, false);
        let report = warm.connect_servers(configs.clone()).await;
        if report.ready.len() != args.servers {
            bail!(
                "the warm-up run connected {} of {}: {:?}",
                report.ready.len(),
                args.servers,
                report.errors
            );
        }
        warm.close().await;
        Ok(())
    })?;
    let (mut gate, mut lazy) = (Vec::new(), Vec::new());
    for _ in 0..args.rounds {
        gate.push(run_sample(&args, false, &cache_path)?);
        lazy.push(run_sample(&args, true, &cache_path)?);
    }
    print(args.servers, args.rounds, &gate, &lazy);
    Ok(())
}

/// Runs one sample in a child process of this executable.
fn run_sample(args: &Args, lazy: bool, cache: &Path) -> anyhow::Result<Sample> {
    let output = std::process::Command::new(std::env::current_exe()?)
        .args(["--servers", &args.servers.to_string()])
        .args(["--sample", if lazy { "lazy" } else { "gate" }])
        .arg("--cache")
        .arg(cache)
        .output()?;
    if !output.status.success() {
        bail!(
            "a sample failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Sample::decode(&String::from_utf8_lossy(&output.stdout))
}

/// The command line.
struct Args {
    servers: usize,
    rounds: usize,
    /// `--sample gate|lazy --cache FILE`: measure one host start.
    sample: Option<(bool, PathBuf)>,
}

fn parse_args() -> anyhow::Result<Args> {
    let (mut servers, mut rounds) = (40, 5);
    let (mut mode, mut cache) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut text = || args.next().with_context(|| format!("{flag} needs a value"));
        let number = |text: String| -> anyhow::Result<usize> {
            text.parse()
                .with_context(|| format!("{text}: not a number"))
        };
        match flag.as_str() {
            "--servers" => servers = number(text()?)?,
            "--rounds" => rounds = number(text()?)?,
            "--sample" => {
                mode = Some(match text()?.as_str() {
                    "gate" => false,
                    "lazy" => true,
                    other => bail!("--sample {other}: gate or lazy"),
                });
            }
            "--cache" => cache = Some(PathBuf::from(text()?)),
            "-h" | "--help" => {
                println!("usage: mcp-host-start [--servers N] [--rounds R]");
                std::process::exit(0);
            }
            other => bail!("unknown flag {other}"),
        }
    }
    if servers == 0 || rounds == 0 {
        bail!("--servers and --rounds must be at least 1");
    }
    let sample = match (mode, cache) {
        (Some(lazy), Some(cache)) => Some((lazy, cache)),
        (None, None) => None,
        _ => bail!("--sample and --cache go together"),
    };
    Ok(Args {
        servers,
        rounds,
        sample,
    })
}

fn configs(fixture: &Path, n: usize) -> Vec<ServerConfig> {
    (0..n)
        .map(|i| {
            let mut stdio = StdioConfig::new(fixture.display().to_string());
            stdio.args = vec!["--era".into(), "legacy".into()];
            ServerConfig::new(format!("s{i:02}"), TransportConfig::Stdio(stdio))
        })
        .collect()
}

fn manager(cache: &Arc<dyn ToolCache>, lazy: bool) -> McpManager {
    let mut options = ManagerOptions::default();
    options.lazy = lazy;
    McpManager::builder()
        .options(options)
        .cache(Arc::clone(cache))
        .build()
}

async fn sample(
    cache: &Arc<dyn ToolCache>,
    configs: &[ServerConfig],
    lazy: bool,
) -> anyhow::Result<Sample> {
    let started = Instant::now();
    let manager = manager(cache, lazy);
    let report = manager.connect_servers(configs.to_vec()).await;
    let mut options = SessionOptions::default();
    options.preset = PermissionPreset::FullAccess;
    let session = McpSession::new(&manager, options);
    let tools = session.bind_startup(&report);
    let first_prompt = started.elapsed();
    let children = children_kib();
    let mut sample = Sample {
        first_prompt,
        host_kib: rss_kib(Path::new("/proc/self/status")).unwrap_or(0),
        children_kib: children.iter().sum(),
        processes: children.len(),
        settled_kib: None,
        tools: tools.tools().len(),
        first_call: Duration::ZERO,
    };
    let echo = tools.get("mcp_s00_echo").context("no tool mcp_s00_echo")?;
    let called = Instant::now();
    let outcome = echo
        .call(ToolCall::new("first", serde_json::json!({"text": "hello"})))
        .await;
    sample.first_call = called.elapsed();
    if outcome.result().is_none_or(|r| r.joined_text() != "hello") {
        bail!("the first call failed: {outcome:?}");
    }
    if !lazy {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        for config in configs {
            manager
                .wait_ready(&config.id, deadline)
                .await
                .with_context(|| format!("{} did not connect", config.id))?;
        }
        let children: u64 = children_kib().iter().sum();
        sample.settled_kib = Some(rss_kib(Path::new("/proc/self/status")).unwrap_or(0) + children);
    }
    manager.close().await;
    Ok(sample)
}

/// `VmRSS` of a `/proc/<pid>/status` file, KiB.
fn rss_kib(status: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(status).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The RSS of each living child process of this one, KiB.
fn children_kib() -> Vec<u64> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|p| parent_of(p).as_deref() == Some(me.as_str()))
        .filter_map(|p| rss_kib(&p.join("status")))
        .collect()
}

fn parent_of(proc_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(proc_dir.join("status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("PPid:"))?;
    line.split_whitespace().nth(1).map(str::to_owned)
}

impl Sample {
    /// One line of space-separated numbers (microseconds and KiB).
    fn encode(&self) -> String {
        format!(
            "{} {} {} {} {} {} {}",
            self.first_prompt.as_micros(),
            self.host_kib,
            self.children_kib,
            self.processes,
            self.settled_kib
                .map_or(-1, |kib| i64::try_from(kib).unwrap_or(i64::MAX)),
            self.tools,
            self.first_call.as_micros()
        )
    }

    fn decode(line: &str) -> anyhow::Result<Sample> {
        let numbers: Vec<i64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .with_context(|| format!("a sample line: {line:?}"))?;
        let [micros, host, children, processes, settled, tools, call] = numbers[..] else {
            bail!("a sample line: {line:?}");
        };
        let unsigned = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(Sample {
            first_prompt: Duration::from_micros(unsigned(micros)),
            host_kib: unsigned(host),
            children_kib: unsigned(children),
            processes: usize::try_from(processes).unwrap_or(0),
            settled_kib: u64::try_from(settled).ok(),
            tools: usize::try_from(tools).unwrap_or(0),
            first_call: Duration::from_micros(unsigned(call)),
        })
    }
}

fn median_by<T: Copy + Ord>(samples: &[Sample], f: impl Fn(&Sample) -> T) -> T {
    let mut values: Vec<T> = samples.iter().map(f).collect();
    values.sort();
    values[values.len() / 2]
}

fn print(servers: usize, rounds: usize, gate: &[Sample], lazy: &[Sample]) {
    println!("{servers} stdio servers with cached catalogs, median of {rounds} interleaved rounds");
    println!(
        "{:<6} {:>14} {:>8} {:>10} {:>12} {:>12} {:>14} {:>12}",
        "mode",
        "first prompt",
        "tools",
        "processes",
        "host MiB",
        "servers MiB",
        "settled MiB",
        "first call"
    );
    for (name, samples) in [("gate", gate), ("lazy", lazy)] {
        let settled = samples
            .iter()
            .all(|s| s.settled_kib.is_some())
            .then(|| median_by(samples, |s| s.settled_kib.unwrap_or(0)));
        println!(
            "{:<6} {:>11.1} ms {:>8} {:>10} {:>12.1} {:>12.1} {:>14} {:>9.1} ms",
            name,
            median_by(samples, |s| s.first_prompt).as_secs_f64() * 1e3,
            median_by(samples, |s| s.tools),
            median_by(samples, |s| s.processes),
            mib(median_by(samples, |s| s.host_kib)),
            mib(median_by(samples, |s| s.children_kib)),
            settled.map_or_else(|| "-".to_owned(), |kib| format!("{:.1}", mib(kib))),
            median_by(samples, |s| s.first_call).as_secs_f64() * 1e3,
        );
    }
    let total = |s: &[Sample]| median_by(s, |x| x.host_kib + x.children_kib) as f64;
    let time = |s: &[Sample]| median_by(s, |x| x.first_prompt).as_secs_f64();
    println!(
        "lazy / gate: first prompt {:.2}x, host + servers memory at the first prompt {:.2}x",
        time(lazy) / time(gate),
        total(lazy) / total(gate),
    );
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

//! `mcp-startup-stall`: how long a manager takes to start many stdio servers at once, and the longest time its runtime's workers were kept from their other tasks meanwhile.
//!
//! `cargo run -p tests --bin mcp-startup-stall -- [--servers N] [--rounds R] [--flavor multi|current]`
//!
//! Each round builds a fresh runtime (`multi`: two workers, the default;
//! `current`: one thread, where every blocking poll shows whole) and a
//! manager that connects the fixture server (built beside it) as `N` stdio
//! servers (default 50), all at once (`max_concurrent_connects = N`), with
//! the default startup gate. Beside it a ticker task asks to wake every
//! millisecond and records how late each wake-up came: a task that holds a
//! worker (a synchronous `fork`/`exec`, a file read) makes the ticker late
//! by as long. Before the servers start, the ticker runs alone for as long
//! as the round will, which gives the lateness the machine's own load
//! causes. It prints, per round: when the gate returned, when every server
//! was ready, and the ticker's worst and 99th-percentile lateness with
//! servers starting and alone.
//!
//! Run it under load (busy loops on every core) to see what a loaded
//! machine makes of it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{ManagerOptions, McpManager};
use tokio::time::Instant;

/// The ticker's period.
const TICK: Duration = Duration::from_millis(1);

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let fixture = std::env::current_exe()?
        .parent()
        .context("the executable has no directory")?
        .join("mcp-fixture-server");
    if !fixture.exists() {
        bail!(
            "{} is missing: run `cargo build -p tests --bins` first",
            fixture.display()
        );
    }
    println!(
        "{} stdio servers at once, {} runtime, {} rounds",
        args.servers,
        if args.multi { "2-worker" } else { "1-thread" },
        args.rounds
    );
    println!(
        "{:>5} {:>12} {:>12} {:>16} {:>16} {:>16} {:>16}",
        "round", "gate", "all ready", "worst late", "p99 late", "worst alone", "p99 alone"
    );
    for round in 0..args.rounds {
        let runtime = if args.multi {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
        };
        let figures = runtime.block_on(measure(&fixture, args.servers))?;
        println!(
            "{:>5} {:>9.1} ms {:>9.1} ms {:>13.2} ms {:>13.2} ms {:>13.2} ms {:>13.2} ms",
            round,
            ms(figures.gate),
            ms(figures.ready),
            ms(figures.busy.worst),
            ms(figures.busy.p99),
            ms(figures.alone.worst),
            ms(figures.alone.p99),
        );
    }
    Ok(())
}

/// One round's figures.
struct Figures {
    /// `connect_servers` returned (the startup gate).
    gate: Duration,
    /// Every server was ready.
    ready: Duration,
    /// The ticker while the servers started.
    busy: Lateness,
    /// The ticker alone for as long, before.
    alone: Lateness,
}

/// How late the ticker's wake-ups came.
struct Lateness {
    worst: Duration,
    p99: Duration,
}

async fn measure(fixture: &Path, servers: usize) -> anyhow::Result<Figures> {
    let configs: Vec<ServerConfig> = (0..servers)
        .map(|i| {
            let mut stdio = StdioConfig::new(fixture.display().to_string());
            stdio.args = vec!["--era".into(), "legacy".into()];
            ServerConfig::new(format!("s{i:02}"), TransportConfig::Stdio(stdio))
        })
        .collect();
    let mut options = ManagerOptions::default();
    options.max_concurrent_connects = servers;
    let manager = McpManager::builder().options(options).build();

    let stop = Arc::new(AtomicBool::new(false));
    let ticker = tokio::spawn(tick(Arc::clone(&stop)));
    let started = Instant::now();
    let report = manager.connect_servers(configs.clone()).await;
    let gate = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(120);
    for config in &configs {
        manager
            .wait_ready(&config.id, deadline)
            .await
            .with_context(|| format!("{} did not connect", config.id))?;
    }
    let ready = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let busy = ticker.await?;
    drop(report);
    manager.close().await;

    // The same length of time with nothing but the ticker.
    let stop = Arc::new(AtomicBool::new(false));
    let ticker = tokio::spawn(tick(Arc::clone(&stop)));
    tokio::time::sleep(ready).await;
    stop.store(true, Ordering::Relaxed);
    let alone = ticker.await?;
    Ok(Figures {
        gate,
        ready,
        busy,
        alone,
    })
}

/// Wakes every [`TICK`] until `stop`, recording how late each wake-up was.
async fn tick(stop: Arc<AtomicBool>) -> Lateness {
    let mut late = Vec::new();
    let mut due = Instant::now() + TICK;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep_until(due).await;
        let now = Instant::now();
        late.push(now.saturating_duration_since(due));
        due = now + TICK;
    }
    late.sort();
    let at = |q: f64| {
        let index = ((late.len() as f64 - 1.0) * q).round() as usize;
        late.get(index).copied().unwrap_or_default()
    };
    Lateness {
        worst: at(1.0),
        p99: at(0.99),
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// The command line.
struct Args {
    servers: usize,
    rounds: usize,
    multi: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut parsed = Args {
        servers: 50,
        rounds: 3,
        multi: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut text = || args.next().with_context(|| format!("{flag} needs a value"));
        let number = |text: String| -> anyhow::Result<usize> {
            text.parse()
                .with_context(|| format!("{text}: not a number"))
        };
        match flag.as_str() {
            "--servers" => parsed.servers = number(text()?)?,
            "--rounds" => parsed.rounds = number(text()?)?,
            "--flavor" => {
                parsed.multi = match text()?.as_str() {
                    "multi" => true,
                    "current" => false,
                    other => bail!("--flavor {other}: multi or current"),
                };
            }
            "-h" | "--help" => {
                println!(
                    "usage: mcp-startup-stall [--servers N] [--rounds R] [--flavor multi|current]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown flag {other}"),
        }
    }
    if parsed.servers == 0 || parsed.rounds == 0 {
        bail!("--servers and --rounds must be at least 1");
    }
    Ok(parsed)
}

//! `mcp-gateway-echo`: echo latency through `mcpctl serve` against a direct connection to the same server, in each era.
//!
//! `cargo build --release -p tests --bins -p mcp-cli && target/release/mcp-gateway-echo [--calls N] [--era handshake|stateless|both] [--daemon]`
//!
//! Both paths use this workspace's client over stdio against the fixture
//! server (built beside this executable, as is `mcpctl`): directly, and
//! through `mcpctl serve` with the fixture as its one server. Both paths
//! speak the same era, so that the ratio is the gateway's own cost: the
//! handshake era (the client and the fixture speak only it, and so does
//! the gateway's upstream connection) and the stateless 2026-07-28 era
//! (the client speaks only it; the fixture speaks both and the gateway's
//! upstream connection detects it). With `--daemon` a third path goes
//! through the background gateway: `mcpctl serve --daemon` is started for
//! the same configuration (its data directory in a temporary home) and
//! the client speaks to a second `mcpctl serve`, which relays its stdio to
//! the daemon's socket; the daemon is stopped (`serve --stop`) at the end.
//! Each path makes `N` sequential `echo` calls (default 2,000) after 200
//! warm-up calls; the paths alternate in rounds of 500 so that all see the
//! same machine. It prints the median and 99th percentile of each and each
//! gateway path's ratio to the direct one.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcp_proto::EraPolicy;
use mcp_transport::{Client, ClientOptions, StdioOptions, StdioTransport};

/// One era's pair of paths.
#[derive(Clone, Copy)]
enum Era {
    Handshake,
    Stateless,
}

impl Era {
    fn name(self) -> &'static str {
        match self {
            Era::Handshake => "handshake era",
            Era::Stateless => "stateless era (2026-07-28)",
        }
    }

    /// The fixture's `--era`.
    fn fixture(self) -> &'static str {
        match self {
            Era::Handshake => "legacy",
            Era::Stateless => "both",
        }
    }

    fn policy(self) -> EraPolicy {
        match self {
            Era::Handshake => EraPolicy::Legacy,
            Era::Stateless => EraPolicy::Modern,
        }
    }
}

fn main() -> anyhow::Result<()> {
    let mut calls = 2000usize;
    let mut eras = vec![Era::Handshake, Era::Stateless];
    let mut daemon = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--era" => {
                eras = match args.next().as_deref() {
                    Some("handshake") => vec![Era::Handshake],
                    Some("stateless") => vec![Era::Stateless],
                    Some("both") => vec![Era::Handshake, Era::Stateless],
                    _ => bail!("--era needs handshake, stateless or both"),
                };
            }
            "--calls" => {
                calls = args
                    .next()
                    .context("--calls needs a number")?
                    .parse()
                    .context("--calls needs a number")?;
            }
            "--daemon" => daemon = true,
            other => bail!(
                "unknown flag {other} (usage: mcp-gateway-echo [--calls N] [--era handshake|stateless|both] [--daemon])"
            ),
        }
    }
    let dir = std::env::current_exe()?
        .parent()
        .context("the executable has no directory")?
        .to_path_buf();
    let (fixture, mcpctl) = (dir.join("mcp-fixture-server"), dir.join("mcpctl"));
    for path in [&fixture, &mcpctl] {
        if !path.exists() {
            bail!(
                "{} is missing: run `cargo build --release -p tests --bins -p mcp-cli`",
                path.display()
            );
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!("{calls} sequential echo calls over stdio, fixture server");
    println!("{:<40} {:>10} {:>10}", "path", "p50 µs", "p99 µs");
    for era in eras {
        runtime.block_on(measure(era, calls, &fixture, &mcpctl, daemon))?;
    }
    Ok(())
}

/// Both paths in one era: the table's rows and the ratio.
async fn measure(
    era: Era,
    calls: usize,
    fixture: &std::path::Path,
    mcpctl: &std::path::Path,
    daemon: bool,
) -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let config = scratch.path().join("servers.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"fx": {"command": fixture, "args": ["--era", era.fixture()]}}})
            .to_string(),
    )?;
    let mut direct = StdioOptions::new(fixture.display().to_string());
    direct.args = vec!["--era".into(), era.fixture().into()];
    let direct = connect(direct, era).await?;
    let mut gateway = StdioOptions::new(mcpctl.display().to_string());
    gateway.args = vec![
        "--no-host-configs".into(),
        "--config".into(),
        config.display().to_string(),
        "serve".into(),
    ];
    gateway.env = vec![("HOME".into(), scratch.path().display().to_string())];
    gateway.env_passthrough = vec!["PATH".into()];
    let options = gateway.clone();
    let gateway = connect(gateway, era).await?;
    // The background gateway for the same configuration, and a second
    // `mcpctl serve` that relays to it (started after the daemon, it finds
    // it; the first one started before it and serves on its own); stopped
    // when this ends, however it ends.
    let relayed = if daemon {
        let stopper = Daemon::start(mcpctl, &options.args, scratch.path())?;
        Some((connect(options, era).await?, stopper))
    } else {
        None
    };
    echo(&direct, "echo", 200).await?;
    echo(&gateway, "mcp_fx_echo", 200).await?;
    if let Some((client, _)) = &relayed {
        echo(client, "mcp_fx_echo", 200).await?;
    }
    let (mut d, mut g, mut r) = (Vec::new(), Vec::new(), Vec::new());
    let mut left = calls;
    while left > 0 {
        let round = left.min(500);
        d.extend(echo(&direct, "echo", round).await?);
        g.extend(echo(&gateway, "mcp_fx_echo", round).await?);
        if let Some((client, _)) = &relayed {
            r.extend(echo(client, "mcp_fx_echo", round).await?);
        }
        left -= round;
    }
    let (dp50, dp99) = percentiles(&mut d);
    let (gp50, gp99) = percentiles(&mut g);
    let row = |path: &str, p50: Duration, p99: Duration| {
        println!(
            "{:<40} {:>10.1} {:>10.1}",
            format!("{}, {path}", era.name()),
            micros(p50),
            micros(p99)
        );
    };
    row("direct", dp50, dp99);
    row("through mcpctl serve", gp50, gp99);
    println!(
        "{}: gateway / direct: p50 {:.2}x, p99 {:.2}x",
        era.name(),
        gp50.as_secs_f64() / dp50.as_secs_f64(),
        gp99.as_secs_f64() / dp99.as_secs_f64()
    );
    if let Some((client, stopper)) = relayed {
        let (rp50, rp99) = percentiles(&mut r);
        row("through the daemon (serve --daemon)", rp50, rp99);
        println!(
            "{}: daemon / direct: p50 {:.2}x, p99 {:.2}x",
            era.name(),
            rp50.as_secs_f64() / dp50.as_secs_f64(),
            rp99.as_secs_f64() / dp99.as_secs_f64()
        );
        client.close().await;
        stopper.stop()?;
    }
    direct.close().await;
    gateway.close().await;
    Ok(())
}

/// A background gateway (`mcpctl serve --daemon`) this run started,
/// stopped with `mcpctl serve --stop` when dropped.
struct Daemon {
    command: std::path::PathBuf,
    args: Vec<String>,
    home: std::path::PathBuf,
    stopped: bool,
}

impl Daemon {
    /// Starts the daemon for `mcpctl` with `args` (those of `mcpctl ...
    /// serve`), its data directory under `home`.
    fn start(
        mcpctl: &std::path::Path,
        args: &[String],
        home: &std::path::Path,
    ) -> anyhow::Result<Daemon> {
        let daemon = Daemon {
            command: mcpctl.to_path_buf(),
            args: args.to_vec(),
            home: home.to_path_buf(),
            stopped: false,
        };
        daemon.run("--daemon")?;
        Ok(daemon)
    }

    fn run(&self, flag: &str) -> anyhow::Result<()> {
        let output = std::process::Command::new(&self.command)
            .args(&self.args)
            .arg(flag)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(std::process::Stdio::null())
            .output()
            .with_context(|| format!("cannot run {} serve {flag}", self.command.display()))?;
        if !output.status.success() {
            bail!(
                "mcpctl serve {flag} failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }

    fn stop(mut self) -> anyhow::Result<()> {
        self.stopped = true;
        self.run("--stop")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.run("--stop");
        }
    }
}

async fn connect(options: StdioOptions, era: Era) -> anyhow::Result<Client> {
    let what = options.command.clone();
    let transport =
        StdioTransport::spawn(options).with_context(|| format!("cannot start {what}"))?;
    let mut client_options = ClientOptions::default();
    client_options.session.era = era.policy();
    // Room for a gateway run under a profiler (callgrind starts it in
    // seconds, not milliseconds).
    client_options.session.initialize_timeout = Duration::from_secs(120);
    client_options.session.probe_timeout = Duration::from_secs(120);
    let (client, driver) = Client::new(transport, client_options);
    tokio::spawn(driver.run());
    client
        .initialize()
        .await
        .with_context(|| format!("{what}: initialize"))?;
    Ok(client)
}

async fn echo(client: &Client, tool: &str, n: usize) -> anyhow::Result<Vec<Duration>> {
    let arguments = serde_json::json!({"text": "hello"});
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let result = client
            .call_tool(tool, arguments.as_object().cloned())
            .await
            .with_context(|| tool.to_string())?;
        times.push(started.elapsed());
        if result.is_error == Some(true) {
            bail!("{tool} failed: {result:?}");
        }
    }
    Ok(times)
}

fn percentiles(times: &mut [Duration]) -> (Duration, Duration) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

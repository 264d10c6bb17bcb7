//! `mcp-gateway-share`: N host processes sharing one `mcpctl serve --http` against N host processes each starting its own servers: total memory, cold start and echo latency.
//!
//! `cargo build --release -p tests --bins -p mcp-cli && target/release/mcp-gateway-share [--clients N] [--calls C]`
//!
//! Three real upstream servers, as a host would configure them: the
//! fixture server (built beside this executable, as is `mcpctl`),
//! server-everything (Node, from `tests/interop`) and FastMCP (the
//! repository's `.venv`). Two modes, each with `N` client processes
//! (default 8) started together, each making `C` sequential echo calls
//! (default 200, after 20 warm-up calls) to the fixture:
//!
//! - `own`: every process is a host with its own manager, which starts and
//!   connects the three servers; its calls go straight to its fixture.
//! - `shared`: one `mcpctl serve --http` holds the three servers; every
//!   process is a client of it (this workspace's client over Streamable
//!   HTTP, both eras: half of them 2026-07-28, half handshake-era), calling
//!   `mcp_fx_echo` through the gateway.
//!
//! Once every client is ready and has called, the resident memory of every
//! process this one started, and of theirs (`VmRSS` from `/proc`, Linux
//! only), is summed while all are alive. Cold start is each client's time
//! from its start to its first tool list with every server (in `shared`
//! also the gateway's own, from launch to ready). It prints one table and
//! the shared mode's ratios against `own`; then, as a reference for the
//! echo latency, one client alone over Streamable HTTP through the gateway
//! and straight to the fixture's own HTTP endpoint.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcp_config::{ServerConfig, StdioConfig, TransportConfig};
use mcp_manager::{McpManager, ServerHandle};
use mcp_proto::EraPolicy;
use mcp_transport::{Client, ClientOptions, HttpOptions, HttpTransport};

/// Warm-up calls before the measured ones.
const WARM_UP: usize = 20;

/// What one client process reports.
#[derive(Clone, Copy, Debug)]
struct Report {
    cold: Duration,
    p50: Duration,
    p99: Duration,
}

fn main() -> anyhow::Result<()> {
    let mut clients = 8usize;
    let mut calls = 200usize;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--clients" => clients = number(args.next(), "--clients")?,
            "--calls" => calls = number(args.next(), "--calls")?,
            "--own" => return child_own(number(args.next(), "--own")?),
            "--via" => {
                let url = args.next().context("--via URL TOKEN ERA CALLS TOOL")?;
                let token = args.next().context("--via URL TOKEN ERA CALLS TOOL")?;
                let era = args.next().context("--via URL TOKEN ERA CALLS TOOL")?;
                let calls = number(args.next(), "--via")?;
                let tool = args.next().context("--via URL TOKEN ERA CALLS TOOL")?;
                return child_via(&url, &token, &era, calls, &tool);
            }
            other => {
                bail!("unknown flag {other} (usage: mcp-gateway-share [--clients N] [--calls C])")
            }
        }
    }
    let servers = Servers::find()?;
    let own = run_own(clients, calls)?;
    let (gateway_cold, shared) = run_shared(&servers, clients, calls)?;
    print(clients, calls, &own, &shared, gateway_cold);
    let (via_gateway, direct) = http_reference(&servers, calls)?;
    println!(
        "one client alone, Streamable HTTP (2026-07-28): through the gateway p50 {:.3} ms, p99 {:.3} ms; \
         to the fixture's own HTTP endpoint p50 {:.3} ms, p99 {:.3} ms ({:.2}x)",
        ms(via_gateway.p50),
        ms(via_gateway.p99),
        ms(direct.p50),
        ms(direct.p99),
        ms(via_gateway.p50) / ms(direct.p50),
    );
    Ok(())
}

fn number(value: Option<String>, flag: &str) -> anyhow::Result<usize> {
    value
        .with_context(|| format!("{flag} needs a number"))?
        .parse()
        .with_context(|| format!("{flag} needs a number"))
}

/// Where the three servers and `mcpctl` are.
struct Servers {
    fixture: PathBuf,
    mcpctl: PathBuf,
    everything: PathBuf,
    python: PathBuf,
    fastmcp: PathBuf,
}

impl Servers {
    fn find() -> anyhow::Result<Servers> {
        let dir = std::env::current_exe()?
            .parent()
            .context("the executable has no directory")?
            .to_path_buf();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .context("tests/ has a parent")?
            .to_path_buf();
        let servers = Servers {
            fixture: dir.join("mcp-fixture-server"),
            mcpctl: dir.join("mcpctl"),
            everything: root.join(
                "tests/interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            ),
            python: root.join(".venv/bin/python"),
            fastmcp: root.join("tests/interop/fastmcp_server.py"),
        };
        for (path, fix) in [
            (
                &servers.fixture,
                "cargo build --release -p tests --bins -p mcp-cli",
            ),
            (
                &servers.mcpctl,
                "cargo build --release -p tests --bins -p mcp-cli",
            ),
            (&servers.everything, "npm ci --prefix tests/interop"),
            (&servers.python, "bash .ci/run (it makes .venv)"),
        ] {
            if !path.exists() {
                bail!("{} is missing: run `{fix}`", path.display());
            }
        }
        Ok(servers)
    }

    fn configs(&self) -> Vec<ServerConfig> {
        let stdio = |id: &str, command: &Path, args: &[&str]| {
            let mut stdio = StdioConfig::new(command.display().to_string());
            stdio.args = args.iter().map(|a| (*a).to_owned()).collect();
            ServerConfig::new(id, TransportConfig::Stdio(stdio))
        };
        let fastmcp = self.fastmcp.display().to_string();
        let everything = self.everything.display().to_string();
        vec![
            stdio("fx", &self.fixture, &["--era", "legacy"]),
            stdio("everything", Path::new("node"), &[&everything]),
            stdio("fastmcp", &self.python, &[&fastmcp, "stdio"]),
        ]
    }

    fn config_file(&self, path: &Path) -> anyhow::Result<()> {
        let json = serde_json::json!({"mcpServers": {
            "fx": {"command": self.fixture, "args": ["--era", "legacy"]},
            "everything": {"command": "node", "args": [self.everything]},
            "fastmcp": {"command": self.python, "args": [self.fastmcp, "stdio"]}
        }});
        std::fs::write(path, json.to_string())?;
        Ok(())
    }
}

/// `own` mode: N hosts, each with its servers.
fn run_own(clients: usize, calls: usize) -> anyhow::Result<Mode> {
    let exe = std::env::current_exe()?;
    let children = (0..clients)
        .map(|_| {
            Command::new(&exe)
                .args(["--own", &calls.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .context("start a host process")
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Mode::collect(children)
}

/// `shared` mode: one gateway, N clients of it.
fn run_shared(servers: &Servers, clients: usize, calls: usize) -> anyhow::Result<(Duration, Mode)> {
    let scratch = tempfile::tempdir()?;
    let config = scratch.path().join("servers.json");
    servers.config_file(&config)?;
    let launched = Instant::now();
    let mut gateway = Command::new(&servers.mcpctl)
        .args(["--no-project", "--no-host-configs", "--config"])
        .arg(&config)
        .args(["serve", "--http"])
        .env("HOME", scratch.path())
        .env("MCPCTL_DATA_DIR", scratch.path().join("data"))
        .env("XDG_CONFIG_HOME", scratch.path().join("config"))
        .env("XDG_DATA_HOME", scratch.path().join("share"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("start mcpctl serve --http")?;
    let mut lines = BufReader::new(gateway.stdout.take().context("stdout")?).lines();
    let mut url = None;
    let mut token = None;
    for line in lines.by_ref() {
        let line = line?;
        if let Some(found) = line.split("MCP endpoint ").nth(1) {
            url = Some(found.trim().to_owned());
        }
        if let Some(found) = line.split("Bearer ").nth(1) {
            token = Some(found.trim().to_owned());
            break;
        }
    }
    let gateway_cold = launched.elapsed();
    let (Some(url), Some(token)) = (url, token) else {
        let _ = gateway.kill();
        bail!("mcpctl serve --http printed no URL and token");
    };
    let exe = std::env::current_exe()?;
    let children = (0..clients)
        .map(|n| {
            let era = if n % 2 == 0 { "modern" } else { "legacy" };
            Command::new(&exe)
                .args([
                    "--via",
                    &url,
                    &token,
                    era,
                    &calls.to_string(),
                    "mcp_fx_echo",
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .context("start a client process")
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mode = Mode::collect(children);
    // SIGTERM: mcpctl closes its servers; by its pid.
    let _ = Command::new("kill")
        .args(["-TERM", &gateway.id().to_string()])
        .status();
    let _ = gateway.wait();
    Ok((gateway_cold, mode?))
}

/// One client alone over Streamable HTTP: through a gateway (with the
/// fixture behind it), and to the fixture's own HTTP endpoint.
fn http_reference(servers: &Servers, calls: usize) -> anyhow::Result<(Report, Report)> {
    let (_, through) = run_shared(servers, 1, calls)?;
    let mut fixture = Command::new(&servers.fixture)
        .args(["--transport", "http", "--era", "modern"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("start the fixture over HTTP")?;
    let line = BufReader::new(fixture.stdout.take().context("stdout")?)
        .lines()
        .next()
        .context("the fixture printed nothing")??;
    let url = line
        .strip_prefix("listening on ")
        .with_context(|| format!("no URL in {line:?}"))?
        .to_owned();
    let exe = std::env::current_exe()?;
    let child = Command::new(&exe)
        .args(["--via", &url, "none", "modern", &calls.to_string(), "echo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("start a client process")?;
    let direct = Mode::collect(vec![child]);
    // Ours, by its handle.
    let _ = fixture.kill();
    let _ = fixture.wait();
    Ok((through.reports[0], direct?.reports[0]))
}

/// What one mode measured.
struct Mode {
    reports: Vec<Report>,
    total_kib: u64,
    processes: usize,
}

impl Mode {
    /// Reads every child's report, measures the memory of the whole tree
    /// while all are alive, then lets them end.
    fn collect(mut children: Vec<Child>) -> anyhow::Result<Mode> {
        let mut reports = Vec::new();
        let mut stdins: Vec<ChildStdin> = Vec::new();
        for child in &mut children {
            let stdout = child.stdout.take().context("a child's stdout")?;
            let line = BufReader::new(stdout)
                .lines()
                .next()
                .context("a child ended without a report")??;
            reports.push(Report::decode(&line)?);
            stdins.push(child.stdin.take().context("a child's stdin")?);
        }
        let (total_kib, processes) = tree_kib(std::process::id());
        for mut stdin in stdins {
            let _ = writeln!(stdin, "exit");
        }
        for mut child in children {
            let status = child.wait()?;
            if !status.success() {
                bail!("a client process failed ({status})");
            }
        }
        Ok(Mode {
            reports,
            total_kib,
            processes,
        })
    }
}

/// The child of `own` mode: a host with its own manager and servers.
fn child_own(calls: usize) -> anyhow::Result<()> {
    let started = Instant::now();
    let servers = Servers::find()?;
    let runtime = runtime()?;
    runtime.block_on(async {
        let manager = McpManager::builder().build();
        let configs = servers.configs();
        manager.connect_servers(configs.clone()).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        for config in &configs {
            manager
                .wait_ready(&config.id, deadline)
                .await
                .with_context(|| format!("{} did not connect", config.id))?;
        }
        let cold = started.elapsed();
        let server = manager.server("fx").context("fx is connected")?;
        let report = echo(&server, "echo", calls, cold).await?;
        println!("{}", report.encode());
        wait_for_exit().await;
        manager.close().await;
        Ok(())
    })
}

/// The child of `shared` mode: a client of the gateway.
fn child_via(url: &str, token: &str, era: &str, calls: usize, tool: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    let runtime = runtime()?;
    runtime.block_on(async {
        let mut http = HttpOptions::new(url);
        http.headers = vec![("Authorization".to_owned(), format!("Bearer {token}"))];
        let transport = HttpTransport::connect(http).await?;
        let mut options = ClientOptions::default();
        options.session.era = if era == "modern" {
            EraPolicy::Modern
        } else {
            EraPolicy::Legacy
        };
        let (client, driver) = Client::new(transport, options);
        tokio::spawn(driver.run());
        client.initialize().await?;
        let tools = client.list_tools(None).await?;
        let expected: &[&str] = if tool == "mcp_fx_echo" {
            &["mcp_fx_echo", "mcp_everything_echo", "mcp_fastmcp_add"]
        } else {
            &[tool]
        };
        for name in expected {
            if !tools.tools.iter().any(|t| t.name == *name) {
                bail!("{name} is not listed");
            }
        }
        let cold = started.elapsed();
        let report = echo(
            &ServerHandle::unmanaged(tool, client.clone()),
            tool,
            calls,
            cold,
        )
        .await?;
        println!("{}", report.encode());
        wait_for_exit().await;
        client.close().await;
        Ok(())
    })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// `calls` sequential echo calls after the warm-up; the report.
async fn echo(
    client: &ServerHandle,
    tool: &str,
    calls: usize,
    cold: Duration,
) -> anyhow::Result<Report> {
    let mut times = Vec::with_capacity(calls);
    for i in 0..WARM_UP + calls {
        let text = format!("call {i}");
        let arguments = serde_json::json!({"text": text});
        let began = Instant::now();
        let result = client
            .call_tool(tool, arguments.as_object().cloned())
            .await?;
        let took = began.elapsed();
        let echoed = serde_json::to_value(&result.content)?;
        if echoed[0]["text"] != text.as_str() {
            bail!("{tool} answered {echoed}");
        }
        if i >= WARM_UP {
            times.push(took);
        }
    }
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    Ok(Report {
        cold,
        p50: at(0.5),
        p99: at(0.99),
    })
}

/// Waits until the parent says `exit` (or closes stdin).
async fn wait_for_exit() {
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    })
    .await;
}

impl Report {
    fn encode(&self) -> String {
        format!(
            "{} {} {}",
            self.cold.as_micros(),
            self.p50.as_micros(),
            self.p99.as_micros()
        )
    }

    fn decode(line: &str) -> anyhow::Result<Report> {
        let numbers: Vec<u64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .with_context(|| format!("a report line: {line:?}"))?;
        let [cold, p50, p99] = numbers[..] else {
            bail!("a report line: {line:?}");
        };
        Ok(Report {
            cold: Duration::from_micros(cold),
            p50: Duration::from_micros(p50),
            p99: Duration::from_micros(p99),
        })
    }
}

/// The summed `VmRSS` (KiB) of every descendant of `root`, and their number.
fn tree_kib(root: u32) -> (u64, usize) {
    let mut parents: HashMap<u32, u32> = HashMap::new();
    let mut rss: HashMap<u32, u64> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return (0, 0);
    };
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        };
        if let Some(ppid) = field("PPid:") {
            parents.insert(pid, ppid as u32);
        }
        rss.insert(pid, field("VmRSS:").unwrap_or(0));
    }
    let descends = |mut pid: u32| {
        while let Some(&parent) = parents.get(&pid) {
            if parent == root {
                return true;
            }
            if parent == 0 || parent == pid {
                return false;
            }
            pid = parent;
        }
        false
    };
    let mut total = 0;
    let mut count = 0;
    for (&pid, &kib) in &rss {
        if pid != root && descends(pid) {
            total += kib;
            count += 1;
        }
    }
    (total, count)
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn print(clients: usize, calls: usize, own: &Mode, shared: &Mode, gateway_cold: Duration) {
    println!(
        "{clients} client processes at once, 3 upstream servers (fixture, server-everything, FastMCP), \
         {calls} sequential echo calls each"
    );
    println!(
        "{:<8} {:>10} {:>11} {:>15} {:>15} {:>15} {:>15}",
        "mode", "processes", "total MiB", "cold (median)", "cold (slowest)", "echo p50", "echo p99"
    );
    let row = |name: &str, mode: &Mode| {
        let mut cold: Vec<Duration> = mode.reports.iter().map(|r| r.cold).collect();
        let mut p50: Vec<Duration> = mode.reports.iter().map(|r| r.p50).collect();
        let mut p99: Vec<Duration> = mode.reports.iter().map(|r| r.p99).collect();
        let slowest = cold.iter().copied().max().unwrap_or_default();
        let values = (
            median(&mut cold),
            slowest,
            median(&mut p50),
            median(&mut p99),
        );
        println!(
            "{:<8} {:>10} {:>11.1} {:>12.1} ms {:>12.1} ms {:>12.3} ms {:>12.3} ms",
            name,
            mode.processes,
            mode.total_kib as f64 / 1024.0,
            ms(values.0),
            ms(values.1),
            ms(values.2),
            ms(values.3),
        );
        values
    };
    let a = row("own", own);
    let b = row("shared", shared);
    println!(
        "shared: the gateway itself was ready {:.1} ms after launch",
        ms(gateway_cold)
    );
    println!(
        "shared / own: memory {:.2}x, cold start (median) {:.2}x, echo p50 {:.2}x, p99 {:.2}x",
        shared.total_kib as f64 / own.total_kib.max(1) as f64,
        ms(b.0) / ms(a.0),
        ms(b.2) / ms(a.2),
        ms(b.3) / ms(a.3),
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

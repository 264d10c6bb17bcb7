//! `rmcp-bench-client`: the rmcp reference client that `cargo xtask bench` runs.
//!
//! It drives the same workload as every other bench client (see
//! `xtask/src/bench.rs` for the protocol): cold connects, sequential echoes,
//! echoes with many calls in flight, and 1 MiB results, through rmcp's
//! public client API the way a host would use it. It prints one JSON line of
//! raw timings, then waits for stdin to close before it exits, so that the
//! harness can read its peak RSS while it is still alive.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

// The command line every benchmark client shares: the workspace's own file,
// compiled into this project too, so that the clients cannot drift apart
// (this project stays outside the workspace so as not to pull rmcp in).
#[path = "../../tests/src/bench_args.rs"]
mod bench_args;
use bench_args::{Args, Kind, json_list, parse_args};

/// The text every echo sends and checks.
const ECHO_TEXT: &str = "hello";

type Connection = RunningService<RoleClient, ()>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    // The workload runs in a task, as a host's agent loop does, not on the
    // thread that `block_on` parks: a call awaited there pays one more
    // thread wake-up per call, whatever the library. `mcp-bench-client`
    // (ours) does the same.
    let line = tokio::spawn(async move { run(&args).await })
        .await
        .context("the workload task panicked")??;
    println!("{line}");
    // The harness reads our peak RSS now, then closes stdin.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}

async fn run(args: &Args) -> anyhow::Result<String> {
    let mut connect_ns = Vec::with_capacity(args.connects);
    let mut tools = 0;
    for _ in 0..args.connects {
        let started = Instant::now();
        let (connection, listed) = connect(args).await?;
        connect_ns.push(started.elapsed().as_nanos());
        tools = listed;
        connection.cancel().await.context("closing")?;
    }

    let (connection, _) = connect(args).await?;
    let peer = connection.peer().clone();
    let echo = echo_params();
    for _ in 0..args.warmup {
        call_echo(&peer, &echo).await?;
    }
    let mut latency_ns = Vec::with_capacity(args.calls);
    for _ in 0..args.calls {
        let started = Instant::now();
        call_echo(&peer, &echo).await?;
        latency_ns.push(started.elapsed().as_nanos());
    }

    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::with_capacity(args.inflight);
    for _ in 0..args.inflight {
        let (peer, echo, next, total) = (
            peer.clone(),
            echo.clone(),
            next.clone(),
            args.throughput_calls,
        );
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                call_echo(&peer, &echo).await?;
            }
            anyhow::Ok(())
        }));
    }
    for worker in workers {
        worker.await.context("a throughput task panicked")??;
    }
    let throughput_ns = started.elapsed().as_nanos();

    let mut big_args = JsonObject::new();
    big_args.insert("kib".to_owned(), Value::from(args.big_kib));
    let big = CallToolRequestParams::new("big").with_arguments(big_args);
    let mut big_bytes = 0;
    let mut big_ns = Vec::with_capacity(args.big_calls);
    for _ in 0..args.big_calls {
        let started = Instant::now();
        let result = peer.call_tool(big.clone()).await.context("calling big")?;
        let text = first_text(&result.content).context("big returned no text")?;
        if text.len() != args.big_kib * 1024 {
            bail!(
                "big returned {} bytes, not {} KiB",
                text.len(),
                args.big_kib
            );
        }
        big_bytes += text.len();
        big_ns.push(started.elapsed().as_nanos());
    }
    connection.cancel().await.context("closing")?;

    let transport = match args.transport {
        Kind::Stdio => "stdio",
        Kind::Http => "http",
    };
    Ok(format!(
        "{{\"client\":\"rmcp\",\"transport\":\"{transport}\",\"tools\":{tools},\
         \"connect_ns\":{},\"latency_ns\":{},\"throughput_calls\":{},\"throughput_ns\":{throughput_ns},\
         \"big_calls\":{},\"big_bytes\":{big_bytes},\"big_ns\":{}}}",
        json_list(&connect_ns),
        json_list(&latency_ns),
        args.throughput_calls,
        args.big_calls,
        json_list(&big_ns),
    ))
}

/// Connects as a host would and lists every tool. Returns the connection and
/// how many tools it listed.
async fn connect(args: &Args) -> anyhow::Result<(Connection, usize)> {
    let connection = match args.transport {
        Kind::Stdio => {
            let mut command = tokio::process::Command::new(&args.server);
            command.args(&args.server_args);
            let transport = TokioChildProcess::new(command).context("spawning the server")?;
            ().serve(transport).await.context("connecting over stdio")?
        }
        Kind::Http => {
            // rmcp allows 16 POSTs at once by default; the throughput test
            // keeps `inflight` calls going, so allow that many.
            let config = StreamableHttpClientTransportConfig::with_uri(args.url.clone())
                .max_concurrent_requests(args.inflight);
            let transport = StreamableHttpClientTransport::from_config(config);
            ().serve(transport).await.context("connecting over HTTP")?
        }
    };
    let tools = connection.list_all_tools().await.context("listing tools")?;
    Ok((connection, tools.len()))
}

fn echo_params() -> CallToolRequestParams {
    let mut arguments = JsonObject::new();
    arguments.insert("text".to_owned(), Value::from(ECHO_TEXT));
    CallToolRequestParams::new("echo").with_arguments(arguments)
}

async fn call_echo(peer: &Peer<RoleClient>, params: &CallToolRequestParams) -> anyhow::Result<()> {
    let result = peer
        .call_tool(params.clone())
        .await
        .context("calling echo")?;
    match first_text(&result.content) {
        Some(ECHO_TEXT) => Ok(()),
        other => bail!("echo returned {other:?}"),
    }
}

fn first_text(content: &[rmcp::model::ContentBlock]) -> Option<&str> {
    content.first()?.as_text().map(|t| t.text.as_str())
}

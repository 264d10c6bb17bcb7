//! `mcp-bench-client`: our client in `cargo xtask bench`, driven through the public API a host uses.
//!
//! It runs the workload every bench client runs (the protocol is in
//! `xtask/src/bench.rs`): cold connects (spawn or HTTP setup, handshake and a
//! full `tools/list`), sequential echoes, echoes with many calls in flight,
//! and 1 MiB results. It prints one JSON line of raw timings, then waits for
//! stdin to close before it exits, so that the harness can read its peak RSS
//! from `/proc` while it is still alive.
//!
//! `MCP_BENCH_ERA=auto|modern|legacy` sets the era policy (default `auto`,
//! a host's default), to measure the stateless era beside the handshake era
//! and the cost of detecting it.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use mcp_proto::types::{CallToolResult, ContentBlock, JsonObject};
use mcp_transport::{
    Client, ClientOptions, HttpOptions, HttpProtocol, HttpTransport, StdioOptions, StdioTransport,
};
use serde_json::Value;
use tests::bench_args::{Args, Kind, json_list, parse_args};

/// The text every echo sends and checks.
const ECHO_TEXT: &str = "hello";

/// The workload, from the command line.
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    // The workload runs in a task, as a host's agent loop does, not on the
    // thread that `block_on` parks: a call awaited there pays one more
    // thread wake-up per call, whatever the library. The rmcp client in
    // `bench/` does the same.
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
        let (client, listed) = connect(args).await?;
        connect_ns.push(started.elapsed().as_nanos());
        tools = listed;
        client.close().await;
    }

    let (client, _) = connect(args).await?;
    let echo = echo_arguments();
    for _ in 0..args.warmup {
        call_echo(&client, &echo).await?;
    }
    let mut latency_ns = Vec::with_capacity(args.calls);
    for _ in 0..args.calls {
        let started = Instant::now();
        call_echo(&client, &echo).await?;
        latency_ns.push(started.elapsed().as_nanos());
    }

    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::with_capacity(args.inflight);
    for _ in 0..args.inflight {
        let (client, echo, next) = (client.clone(), echo.clone(), next.clone());
        let total = args.throughput_calls;
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                call_echo(&client, &echo).await?;
            }
            anyhow::Ok(())
        }));
    }
    for worker in workers {
        worker.await.context("a throughput task panicked")??;
    }
    let throughput_ns = started.elapsed().as_nanos();

    let mut big = JsonObject::new();
    big.insert("kib".to_owned(), Value::from(args.big_kib));
    let mut big_bytes = 0;
    let mut big_ns = Vec::with_capacity(args.big_calls);
    for _ in 0..args.big_calls {
        let started = Instant::now();
        let result = client
            .call_tool("big", Some(big.clone()))
            .await
            .context("calling big")?;
        let text = first_text(&result).context("big returned no text")?;
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
    client.close().await;

    let transport = match args.transport {
        Kind::Stdio => "stdio",
        Kind::Http => "http",
    };
    Ok(format!(
        "{{\"client\":\"ours\",\"transport\":\"{transport}\",\"tools\":{tools},\
         \"connect_ns\":{},\"latency_ns\":{},\"throughput_calls\":{},\"throughput_ns\":{throughput_ns},\
         \"big_calls\":{},\"big_bytes\":{big_bytes},\"big_ns\":{}}}",
        json_list(&connect_ns),
        json_list(&latency_ns),
        args.throughput_calls,
        args.big_calls,
        json_list(&big_ns),
    ))
}

/// Connects as a host would and lists every tool, page by page. Returns the
/// client and how many tools it listed.
async fn connect(args: &Args) -> anyhow::Result<(Client, usize)> {
    let mut client_options = ClientOptions::default();
    client_options.session.era = match std::env::var("MCP_BENCH_ERA").as_deref() {
        Ok("modern") => mcp_proto::EraPolicy::Modern,
        Ok("legacy") => mcp_proto::EraPolicy::Legacy,
        Ok("auto") | Err(_) => mcp_proto::EraPolicy::Auto,
        Ok(other) => bail!("MCP_BENCH_ERA={other}: expected auto, modern or legacy"),
    };
    let client = match args.transport {
        Kind::Stdio => {
            let mut options = StdioOptions::new(args.server.clone());
            options.args = args.server_args.clone();
            let transport = StdioTransport::spawn(options).context("spawning the server")?;
            Client::connect(transport, client_options)
                .await
                .context("connecting over stdio")?
        }
        Kind::Http => {
            let mut options = HttpOptions::new(args.url.clone());
            options.protocol = HttpProtocol::Streamable;
            let transport = HttpTransport::connect(options)
                .await
                .context("setting up the HTTP transport")?;
            Client::connect(transport, client_options)
                .await
                .context("connecting over HTTP")?
        }
    };
    let mut tools = 0;
    let mut cursor = None;
    loop {
        let page = client.list_tools(cursor).await.context("listing tools")?;
        tools += page.tools.len();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok((client, tools))
}

fn echo_arguments() -> JsonObject {
    let mut arguments = JsonObject::new();
    arguments.insert("text".to_owned(), Value::from(ECHO_TEXT));
    arguments
}

async fn call_echo(client: &Client, arguments: &JsonObject) -> anyhow::Result<()> {
    let result = client
        .call_tool("echo", Some(arguments.clone()))
        .await
        .context("calling echo")?;
    match first_text(&result) {
        Some(ECHO_TEXT) => Ok(()),
        other => bail!("echo returned {other:?}"),
    }
}

fn first_text(result: &CallToolResult) -> Option<&str> {
    match result.content.first()? {
        ContentBlock::Text(text) => Some(&text.text),
        _ => None,
    }
}

//! `mcp-fixture-server`: an MCP server with switchable faults, for the
//! workspace's end-to-end tests and benchmarks.
//!
//! It serves stdio, Streamable HTTP or legacy HTTP+SSE (`--transport`), a
//! fixed set of tools that exercise every part of a client (progress,
//! cancellation, crashes, list changes, server-to-client requests), and
//! fault switches for the misbehaviours clients must survive. `--help`
//! lists them; `options.rs` documents each. `--era` chooses the protocol
//! era: the `initialize` handshake, the stateless 2026-07-28 era, or both
//! (the default), so that a client's era detection meets a real process.
//!
//! Every transport runs on `mcp_transport`'s server core, which owns the
//! protocol; the fixture answers as its handler, and breaks the protocol
//! only on the wire, around the core.
//!
//! - [`server`]: the transport-independent answers, a `ServerHandler` (its
//!   `modern` module: 2026-07-28 discover, MRTR and subscriptions).
//! - [`catalog`]: tool, resource and prompt definitions.
//! - [`reference`](mod@reference): `--reference-catalog`, what the conformance suites call.
//! - [`eventlog`]: `--event-log`, what happened when, from the server's side.
//! - [`stdio`], [`http`]: the transports: stdio and legacy SSE on the
//!   core's byte-stream server, Streamable HTTP on its `HttpServer`.
//! - [`raw`]: the faults of byte-stream transports, on the lines between
//!   the client and the core (Streamable HTTP's are in front of its
//!   server, in `http::streamable`).

mod catalog;
mod eventlog;
mod http;
mod options;
mod raw;
mod reference;
mod server;
mod stdio;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use crate::options::{Command, Options, TransportKind, USAGE};
use crate::server::Fixture;

fn main() -> ExitCode {
    match options::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Command::Serve(options)) => match run(options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp-fixture-server: {e:#}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("mcp-fixture-server: {e:#}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run(options: Options) -> anyhow::Result<()> {
    // Before anything else, so that a client that does not drain stderr
    // never sees the server get as far as answering initialize.
    flood_stderr(options.stderr_flood_mib).context("cannot write to stderr")?;
    if let Some(path) = &options.pid_file {
        write_pid(path)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let _entered = runtime.enter();
    if options.ignore_sigterm {
        ignore_sigterm()?;
    }
    let transport = options.transport;
    let fixture = Fixture::new(options);
    match transport {
        TransportKind::Stdio => runtime.block_on(stdio::serve(fixture)),
        TransportKind::Http => runtime.block_on(http::streamable::serve(fixture)),
        TransportKind::LegacySse => runtime.block_on(http::legacy::serve(fixture)),
    }
}

/// Appends this process's id and a newline to `path`, in one write, so
/// that every process started with the same file leaves its own line.
fn write_pid(path: &std::path::Path) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open the pid file {}", path.display()))?;
    file.write_all(format!("{}\n", std::process::id()).as_bytes())
        .with_context(|| format!("cannot write the pid file {}", path.display()))
}

/// Writes `mib` MiB of log-like lines to stderr, blocking until a reader
/// takes them.
fn flood_stderr(mib: u64) -> std::io::Result<()> {
    if mib == 0 {
        return Ok(());
    }
    let line = b"fixture: stderr flood, a log line that nobody needs to read ............\n";
    let mut chunk = Vec::with_capacity(64 * 1024);
    while chunk.len() + line.len() <= 64 * 1024 {
        chunk.extend_from_slice(line);
    }
    chunk.resize(64 * 1024, b'.');
    if let Some(last) = chunk.last_mut() {
        *last = b'\n';
    }
    let mut stderr = std::io::stderr().lock();
    for _ in 0..mib * 16 {
        stderr.write_all(&chunk)?;
    }
    stderr.flush()
}

/// Replaces SIGTERM's default action (exit) with a log line. Registered
/// before serving, so that no SIGTERM a client sends can arrive first.
fn ignore_sigterm() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    tokio::spawn(async move {
        while sigterm.recv().await.is_some() {
            eprintln!("fixture: ignoring SIGTERM");
        }
    });
    Ok(())
}

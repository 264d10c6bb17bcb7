//! The stdio transport: NDJSON on stdin and stdout (MCP "Transports" §stdio),
//! served by `mcp_transport`'s stream server with the fixture's
//! [`CoreHandler`], through the raw path ([`crate::raw`]) where the
//! fixture's protocol breakers act.
//!
//! stdin → [`RawInput`] → the core → [`RawOutput`] → stdout, the core's
//! ends joined to the raw path by in-memory pipes; when no switch needs
//! the raw path ([`crate::raw::needed`]) the core reads stdin and writes
//! stdout itself, so that a benchmark's echo meets only the core's own
//! costs. On stdin EOF the core
//! cancels what is in flight, the output drains and the process exits, as
//! servers SHOULD (2026-07-28 spells it out); `--ignore-stdin-eof` and
//! `--ignore-sigterm` keep it alive so that clients can test their SIGTERM
//! and SIGKILL steps. `--close-stdout-after` closes stdout after a given
//! answer and keeps the process running: the connection is over, the
//! process is not.

use std::sync::Arc;

use anyhow::Context;
use mcp_transport::server::{StreamOptions, StreamServer, stdio};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::raw::{After, Outstanding, RawInput, RawOutput};
use crate::server::{CoreHandler, Fixture, Server};

/// How many bytes the in-memory pipes on either side of the core hold.
const PIPE: usize = 256 * 1024;

/// Serves one connection on stdin/stdout until stdin ends (and then, with
/// `--ignore-stdin-eof` or `--ignore-sigterm`, until a signal ends the
/// process).
pub(crate) async fn serve(fixture: Arc<Fixture>) -> anyhow::Result<()> {
    let options = &fixture.options;
    let core = StreamServer::new(StreamOptions::new(fixture.session_options()));
    let server = Server::under_core(Arc::clone(&fixture), Some(core.peer()), true);
    if options.add_tool_on_sigusr1 {
        use tokio::signal::unix::{SignalKind, signal};
        let mut usr1 = signal(SignalKind::user_defined1()).context("cannot handle SIGUSR1")?;
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            while usr1.recv().await.is_some() {
                server.add_signal_tool();
            }
        });
    }
    let handler = Arc::new(CoreHandler {
        session: Arc::clone(&server),
        stateless: server,
    });
    if !crate::raw::needed(options) {
        // Nothing to break: the core has stdin and stdout to itself.
        let (stdin, stdout) = stdio();
        return core
            .serve(handler, stdin, stdout)
            .await
            .context("cannot read stdin");
    }
    let outstanding = options.event_log.is_some().then(Outstanding::default);
    let (mut stdin, mut stdout) = stdio();
    let (mut to_core, core_input) = tokio::io::duplex(PIPE);
    let (core_output, from_core) = tokio::io::duplex(PIPE);

    let keep_running = options.ignore_stdin_eof || options.ignore_sigterm;
    let input_fixture = Arc::clone(&fixture);
    let input_outstanding = outstanding.clone();
    let input = tokio::spawn(async move {
        let mut watch = RawInput::new(input_outstanding);
        let mut buf = vec![0; 64 * 1024];
        loop {
            let n = match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let chunk = buf.get(..n).unwrap_or_default();
            watch.chunk(&input_fixture.options, chunk);
            if to_core.write_all(chunk).await.is_err() {
                break;
            }
        }
        if keep_running {
            // The core's input stays open: what is in flight goes on.
            eprintln!("fixture: stdin closed; staying up until a signal ends the process");
            std::future::pending::<()>().await;
        }
        // Dropping the pipe ends the core's input: the core winds down.
    });

    let output_fixture = Arc::clone(&fixture);
    let output = tokio::spawn(async move {
        let options = &output_fixture.options;
        let mut raw = RawOutput::new(true, outstanding);
        let mut lines = BufReader::new(from_core);
        let mut line = Vec::new();
        // Written once per burst: when no further line is waiting.
        let mut burst = Vec::with_capacity(64 * 1024);
        loop {
            line.clear();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            let (bytes, after) = raw.line(options, std::mem::take(&mut line)).await;
            burst.extend_from_slice(&bytes);
            if after == After::Continue && !lines.buffer().is_empty() {
                continue;
            }
            let written = stdout.write_all(&burst).await;
            burst.clear();
            let flushed = match written {
                Ok(()) => stdout.flush().await,
                Err(e) => Err(e),
            };
            if flushed.is_err() {
                // The client closed our stdout: nobody is listening any more.
                std::process::exit(0);
            }
            match after {
                After::Continue => {}
                After::Exit => std::process::exit(0),
                After::Close => {
                    // The writer may hold stdout's pipe too: it goes first.
                    drop(stdout);
                    close_stdout();
                    // Nobody reads any more: what the core writes is dropped.
                    while lines
                        .read_until(b'\n', &mut line)
                        .await
                        .is_ok_and(|n| n > 0)
                    {
                        line.clear();
                    }
                    return true;
                }
            }
        }
        false
    });

    let served = core.serve(handler, core_input, core_output).await;
    let _ = input.await;
    // The core's output ended with it: what is left drains, then exit.
    if output.await.unwrap_or(false) {
        // `--close-stdout-after`: the process outlives its connection.
        std::future::pending::<()>().await;
    }
    served.context("cannot read stdin")
}

/// Points stdout at /dev/null, which closes the pipe the client reads (its
/// only other holder is this process): the process runs on, stdin EOF
/// included, until a signal ends it.
fn close_stdout() {
    match std::fs::File::open("/dev/null").and_then(|null| Ok(rustix::stdio::dup2_stdout(&null)?)) {
        Ok(()) => eprintln!("fixture: stdout closed; staying up until a signal ends the process"),
        Err(e) => eprintln!("fixture: cannot close stdout: {e}"),
    }
}

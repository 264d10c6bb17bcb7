//! The stdio transport: NDJSON on stdin and stdout (MCP "Transports" §stdio).
//!
//! The calling thread reads stdin with blocking reads and hands frames to
//! the server inline; a writer thread owns stdout and flushes once per burst
//! of messages. Neither goes through the async runtime, so an echo costs a
//! read, a decode, an encode and a write. On stdin EOF the writer flushes
//! what is queued and the process exits, as servers SHOULD (2026-07-28
//! spells it out); `--ignore-stdin-eof` and `--ignore-sigterm` keep it alive
//! so that clients can test their SIGTERM and SIGKILL steps.
//! `--close-stdout-after` closes stdout after a given response and keeps the
//! process running: the connection is over, the process is not.

use std::io::{self, Read, Write};
use std::sync::{Arc, mpsc};

use anyhow::Context;
use mcp_proto::codec::ndjson::{self, NdjsonDecoder, NdjsonError};

use crate::server::{Fixture, Outbound, Server};

enum WriterItem {
    Send(Outbound),
    /// Stdin ended: flush and exit.
    Eof,
}

/// Serves one session on stdin/stdout. Runs on the calling thread, which
/// must have entered the tokio runtime; returns only on a read error.
pub(crate) fn serve(fixture: Arc<Fixture>) -> anyhow::Result<()> {
    let (tx, rx) = mpsc::channel();
    let writer_tx = tx.clone();
    let options = &fixture.options;
    let (junk, crlf) = (options.junk_stdout, options.crlf);
    let stay = options.close_stdout_after.is_some();
    std::thread::Builder::new()
        .name("stdout".to_owned())
        .spawn(move || write_loop(&rx, junk, crlf, stay))
        .context("cannot start the stdout writer")?;
    let keep_running = options.ignore_stdin_eof || options.ignore_sigterm;
    let server = Server::new(
        Arc::clone(&fixture),
        Box::new(move |out| {
            // The writer is gone only when the process is exiting.
            let _ = writer_tx.send(WriterItem::Send(out));
        }),
    );
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

    let mut decoder = NdjsonDecoder::new();
    let mut stdin = io::stdin().lock();
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("cannot read stdin"),
        };
        decoder.push(buf.get(..n).unwrap_or_default());
        while let Some(item) = decoder.next_frame() {
            handle(&server, item);
        }
    }
    while let Some(item) = decoder.finish() {
        handle(&server, item);
    }
    if keep_running {
        eprintln!("fixture: stdin closed; staying up until a signal ends the process");
        loop {
            std::thread::park();
        }
    }
    server.abort_all();
    let _ = tx.send(WriterItem::Eof);
    loop {
        // The writer exits the process.
        std::thread::park();
    }
}

/// Feeds one decoded line to the server. A line the decoder refused (not
/// JSON, not a message, too long) is answered by the session with a null
/// id (JSON-RPC 2.0 §5.1).
fn handle(server: &Arc<Server>, item: Result<mcp_proto::Frame, NdjsonError>) {
    match item {
        Ok(frame) => server.receive_frame(frame),
        Err(error) => {
            eprintln!("fixture: rejecting a line: {error}");
            server.receive_undecodable(error.to_error_object());
        }
    }
}

/// Writes what the server sends. After the last response (`out.last`) the
/// process exits, or with `stay` (`--close-stdout-after`) closes stdout and
/// keeps running until a signal ends it.
fn write_loop(rx: &mpsc::Receiver<WriterItem>, junk: bool, crlf: bool, stay: bool) {
    let mut stdout = io::stdout().lock();
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut junk_lines = 0u64;
    while let Ok(first) = rx.recv() {
        let mut exit = false;
        let mut last = false;
        for item in std::iter::once(first).chain(rx.try_iter()) {
            let out = match item {
                WriterItem::Send(out) => out,
                WriterItem::Eof => {
                    exit = true;
                    break;
                }
            };
            if junk {
                junk_lines += 1;
                buf.extend_from_slice(
                    format!("fixture: this line is not JSON ({junk_lines})\n").as_bytes(),
                );
                if crlf {
                    crlfify_last_line(&mut buf);
                }
            }
            if let Err(error) = ndjson::encode_frame(&out.frame, &mut buf) {
                tracing::warn!(%error, "fixture: dropping a message with no one-line form");
            }
            if crlf {
                crlfify_last_line(&mut buf);
            }
            if out.last {
                exit = true;
                last = true;
                break;
            }
        }
        if stdout
            .write_all(&buf)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            // The client closed our stdout: nobody is listening any more.
            std::process::exit(0);
        }
        buf.clear();
        if last && stay {
            close_stdout();
        }
        if exit {
            std::process::exit(0);
        }
    }
}

/// Points stdout at /dev/null, which closes the pipe the client reads (its
/// only other holder is this process), then parks for good: the process
/// runs on, stdin EOF included, until a signal ends it.
fn close_stdout() -> ! {
    match std::fs::File::open("/dev/null").and_then(|null| Ok(rustix::stdio::dup2_stdout(&null)?)) {
        Ok(()) => eprintln!("fixture: stdout closed; staying up until a signal ends the process"),
        Err(e) => eprintln!("fixture: cannot close stdout: {e}"),
    }
    loop {
        std::thread::park();
    }
}

/// Turns the `\n` that ends `buf` into `\r\n`.
fn crlfify_last_line(buf: &mut Vec<u8>) {
    if buf.last() == Some(&b'\n') {
        buf.pop();
        buf.extend_from_slice(b"\r\n");
    }
}

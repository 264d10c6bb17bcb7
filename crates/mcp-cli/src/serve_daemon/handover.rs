//! A relaying `mcpctl serve` hands its standard input and output to the background gateway, which then serves its client on them directly (Linux).
//!
//! The relaying process sends one byte, [`HANDOVER`], with its standard
//! input and output as `SCM_RIGHTS` descriptors, as the first thing on its
//! connection to the daemon's socket, and then only waits: the daemon reads
//! the client's requests from the pipe the host writes and writes its
//! answers to the pipe the host reads, so a message crosses one process
//! between the host and a server, as through `mcpctl serve` on its own,
//! rather than being copied through a second one (two more wake-ups and
//! four more system calls each way of every call). The connection stays
//! open while the daemon serves: when the client's input ends (calls still
//! in flight are cancelled then, as `mcpctl serve` on its own does) and
//! what was answered is written, the daemon closes it (after one line naming
//! the error, if serving failed) and the relaying process exits; when the
//! relaying process ends first (killed), the daemon stops serving its
//! client at once, cancelling its calls, as for a client that disconnects.
//!
//! Only a daemon proven to run this same executable is handed anything,
//! and only streams that are pipes or Unix sockets; otherwise the relaying
//! process copies bytes as before (`serve_daemon::relay`). A connection
//! whose first byte is not [`HANDOVER`] (a JSON text never starts with
//! it) is an ordinary gateway client.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};

use mcp_toolbridge::Gateway;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, Interest};
use tokio::net::UnixStream;

use crate::exit::{CliError, Exit};

/// The first byte of a connection that hands over its standard streams.
const HANDOVER: u8 = 0;

/// The most of the daemon's closing line the relaying process reads.
const REASON_LIMIT: u64 = 1024;

/// Hands this process's standard input and output to the daemon answering
/// on `stream` (whose pid is `daemon`), when it runs this executable and
/// both streams are pipes or Unix sockets; then waits until the daemon has
/// served them. `Err(stream)` when nothing was sent: the caller relays by
/// copying on the same connection.
pub(crate) async fn relay(
    daemon: u32,
    stream: UnixStream,
) -> Result<Result<Exit, CliError>, UnixStream> {
    let Ok(pid) = i32::try_from(daemon) else {
        return Err(stream);
    };
    if super::same_executable(pid).is_err()
        || !pollable(std::io::stdin().as_fd())
        || !pollable(std::io::stdout().as_fd())
    {
        return Err(stream);
    }
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    let fds = [stdin.as_fd(), stdout.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(stream);
    }
    // One byte on a fresh connection: its buffer has room.
    let sent = rustix::net::sendmsg(
        &stream,
        &[IoSlice::new(&[HANDOVER])],
        &mut control,
        SendFlags::NOSIGNAL,
    );
    if sent != Ok(1) {
        return Err(stream);
    }
    let mut reason = Vec::new();
    let read = stream.take(REASON_LIMIT).read_to_end(&mut reason).await;
    Ok(match read {
        Ok(_) if reason.is_empty() => Ok(Exit::Success),
        Ok(_) => Err(CliError::connection(format!(
            "the background gateway: {}",
            mcp_proto::text::error_text(String::from_utf8_lossy(&reason).trim_end(), 200)
        ))),
        Err(e) => Err(CliError::connection(format!("the background gateway: {e}"))),
    })
}

/// Whether `fd` is a pipe or a Unix socket.
fn pollable(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|stat| {
        matches!(
            rustix::fs::FileType::from_raw_mode(stat.st_mode),
            rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket
        )
    })
}

/// What the daemon found first on a new connection.
pub(crate) enum Opening {
    /// An ordinary gateway client (or one that sent nothing and left).
    Client(UnixStream),
    /// A relaying process and the standard input and output it handed over.
    Handed(UnixStream, OwnedFd, OwnedFd),
    /// A relaying process that handed over something else: the connection
    /// and what was wrong.
    Refused(UnixStream, &'static str),
}

/// Reads the opening of a connection: looks at its first byte and, when it
/// is [`HANDOVER`], receives it with the descriptors that came with it
/// (close-on-exec: no server this daemon starts inherits them).
pub(crate) async fn opening(stream: UnixStream) -> Opening {
    let mut first = [0u8; 1];
    let peeked = loop {
        if stream.readable().await.is_err() {
            return Opening::Client(stream);
        }
        match stream.try_io(Interest::READABLE, || {
            rustix::net::recv(&stream, &mut first, RecvFlags::PEEK)
                .map(|(n, _)| n)
                .map_err(std::io::Error::from)
        }) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            peeked => break peeked,
        }
    };
    if !matches!(peeked, Ok(1)) || first[0] != HANDOVER {
        return Opening::Client(stream);
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    // The byte and its descriptors arrived together: readable now.
    let received = stream.try_io(Interest::READABLE, || {
        rustix::net::recvmsg(
            &stream,
            &mut [IoSliceMut::new(&mut first)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(std::io::Error::from)
    });
    // Every descriptor received is owned here, and closed unless used.
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = message {
            fds.extend(rights);
        }
    }
    let truncated = received
        .as_ref()
        .is_ok_and(|msg| msg.flags.contains(rustix::net::ReturnFlags::CTRUNC));
    match (received, fds.len(), truncated) {
        (Ok(_), 2, false) => {
            let output = fds.pop().expect("two descriptors");
            let input = fds.pop().expect("two descriptors");
            Opening::Handed(stream, input, output)
        }
        _ => Opening::Refused(
            stream,
            "a relaying mcpctl serve must hand over exactly its standard input and output",
        ),
    }
}

/// Serves the client of the relaying process on `stream` on the standard
/// streams it handed over, until the client's input ends (calls then in
/// flight are cancelled) and what was answered is written, or the relaying
/// process ends; then closes the connection,
/// after a line naming the error when serving failed.
pub(crate) async fn serve(
    gateway: Gateway,
    mut stream: UnixStream,
    input: OwnedFd,
    output: OwnedFd,
) {
    let Some((input, output)) = mcp_transport::server::handed_stdio(input, output) else {
        let _ = stream
            .write_all(b"the standard streams handed over are not pipes or sockets\n")
            .await;
        return;
    };
    let served = tokio::select! {
        served = gateway.serve(input, output) => served,
        // Its calls are cancelled with the serving future.
        () = gone(&stream) => return,
    };
    if let Err(e) = served {
        let _ = stream.write_all(format!("{e}\n").as_bytes()).await;
    }
}

/// Resolves when the relaying process has closed its end (it sends
/// nothing after the opening byte; anything it does send ends it too).
async fn gone(stream: &UnixStream) {
    let mut byte = [0u8; 1];
    loop {
        if stream.readable().await.is_err() {
            return;
        }
        match stream.try_read(&mut byte) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            _ => return,
        }
    }
}

/// The refusal's line to the relaying process, which reports it.
pub(crate) async fn refuse(mut stream: UnixStream, why: &str) {
    let _ = stream.write_all(format!("{why}\n").as_bytes()).await;
}

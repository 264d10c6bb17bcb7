//! The Unix socket transport: an MCP server that listens on a Unix domain socket (a local daemon, such as `mcpctl serve --daemon`), spoken to in newline-delimited JSON as over stdio.
//!
//! The framing is the stdio transport's (MCP "Transports" §stdio, one
//! message per line, the rules of [`crate::framing`]); only the byte
//! stream differs. Nothing is spawned: the server's lifetime is its own,
//! and closing the transport ends this connection only. A reader task
//! decodes the socket into a bounded queue (so that [`Transport::recv`] is
//! cancel safe and reading stops while the queue is full); `send` writes
//! each message whole, in call order.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use mcp_proto::Message;
use mcp_proto::codec::ndjson::{self, NdjsonDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;

use crate::framing::{self, Line};
use crate::transport::{Inbound, Transport, TransportError};

/// How many decoded frames wait for `recv` before the reader stops reading.
const INBOUND_QUEUE: usize = 64;

/// How much is read from the socket at a time.
const READ_CHUNK: usize = 64 * 1024;

/// A connection to an MCP server on a Unix domain socket.
#[derive(Debug)]
pub struct UnixSocketTransport {
    path: PathBuf,
    /// `None` once closed.
    writer: Mutex<Option<OwnedWriteHalf>>,
    inbound: Mutex<InboundEnd>,
    reader: JoinHandle<()>,
}

/// The receiving end of the reader's queue, and whether the end was seen.
#[derive(Debug)]
struct InboundEnd {
    queue: mpsc::Receiver<Inbound>,
    closed: bool,
}

impl UnixSocketTransport {
    /// Connects to the socket at `path`.
    pub async fn connect(path: impl AsRef<Path>) -> Result<UnixSocketTransport, TransportError> {
        let path = path.as_ref();
        let stream = UnixStream::connect(path).await?;
        Ok(UnixSocketTransport::from_stream(stream, path))
    }

    /// A transport over a stream already connected to `path` (which names
    /// the peer in logs), with the stdio transport's message size limit
    /// ([`ndjson::DEFAULT_MAX_MESSAGE_SIZE`]).
    pub fn from_stream(stream: UnixStream, path: impl AsRef<Path>) -> UnixSocketTransport {
        let path = path.as_ref().to_path_buf();
        let (read, write) = stream.into_split();
        let (queue, inbound) = mpsc::channel(INBOUND_QUEUE);
        let reader = tokio::spawn(read_loop(read, queue, path.clone()));
        UnixSocketTransport {
            path,
            writer: Mutex::new(Some(write)),
            inbound: Mutex::new(InboundEnd {
                queue: inbound,
                closed: false,
            }),
            reader,
        }
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Decodes the socket until it ends, then queues how it ended.
async fn read_loop(
    mut read: tokio::net::unix::OwnedReadHalf,
    queue: mpsc::Sender<Inbound>,
    path: PathBuf,
) {
    let peer = path.display();
    let mut decoder = NdjsonDecoder::new();
    let mut buf = vec![0; READ_CHUNK];
    let end = 'read: loop {
        let n = match read.read(&mut buf).await {
            Ok(0) => break None,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => break Some(TransportError::Io(error)),
        };
        decoder.push(buf.get(..n).unwrap_or_default());
        while let Some(item) = decoder.next_frame() {
            match framing::line(&peer, item) {
                Line::Frame(frame) => {
                    if queue.send(Inbound::Frame(frame)).await.is_err() {
                        // The transport is gone: nobody reads any more.
                        return;
                    }
                }
                Line::Skipped => {}
                Line::TooLarge(limit) => break 'read Some(TransportError::TooLarge { limit }),
            }
        }
    };
    if end.is_none() {
        while let Some(item) = decoder.finish() {
            if let Line::Frame(frame) = framing::line(&peer, item)
                && queue.send(Inbound::Frame(frame)).await.is_err()
            {
                return;
            }
        }
    }
    let _ = queue.send(Inbound::Closed(end)).await;
}

#[async_trait]
impl Transport for UnixSocketTransport {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let mut bytes = Vec::new();
        ndjson::encode(&message, &mut bytes).map_err(TransportError::Encode)?;
        let mut writer = self.writer.lock().await;
        let writer = writer.as_mut().ok_or(TransportError::Closed)?;
        writer.write_all(&bytes).await?;
        writer.flush().await?;
        Ok(())
    }

    async fn recv(&self) -> Inbound {
        // Cancel safe: both the lock and `Receiver::recv` are.
        let mut inbound = self.inbound.lock().await;
        if inbound.closed {
            return Inbound::Closed(None);
        }
        match inbound.queue.recv().await {
            Some(Inbound::Closed(error)) => {
                inbound.closed = true;
                Inbound::Closed(error)
            }
            Some(item) => item,
            None => {
                inbound.closed = true;
                Inbound::Closed(None)
            }
        }
    }

    fn try_recv(&self) -> Option<Inbound> {
        // The end is left for `recv` to report.
        let mut inbound = self.inbound.try_lock().ok()?;
        if inbound.closed {
            return None;
        }
        match inbound.queue.try_recv().ok()? {
            Inbound::Closed(error) => {
                inbound.closed = true;
                Some(Inbound::Closed(error))
            }
            item => Some(item),
        }
    }

    async fn close(&self) -> Result<(), TransportError> {
        // Our end of the stream ends: the server sees the end of its input
        // and cancels what this connection left in flight.
        if let Some(mut writer) = self.writer.lock().await.take() {
            let _ = writer.shutdown().await;
        }
        self.reader.abort();
        Ok(())
    }
}

impl Drop for UnixSocketTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_proto::Frame;
    use tokio::io::AsyncBufReadExt;

    #[tokio::test]
    async fn messages_cross_as_lines_junk_is_skipped_and_the_end_is_seen() {
        let dir = std::env::temp_dir().join(format!("mcp-unix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.sock");
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (read, mut write) = stream.into_split();
            let mut lines = tokio::io::BufReader::new(read).lines();
            let first = lines.next_line().await.unwrap().unwrap();
            // A junk line, then the message echoed, then the end.
            write.write_all(b"not json\n").await.unwrap();
            write.write_all(first.as_bytes()).await.unwrap();
            write.write_all(b"\n").await.unwrap();
            drop(write);
            // The client's close ends our input.
            assert_eq!(lines.next_line().await.unwrap(), None);
        });
        let transport = UnixSocketTransport::connect(&path).await.unwrap();
        let message = Message::notification("n", Some(&1)).unwrap();
        transport.send(message.clone()).await.unwrap();
        match transport.recv().await {
            Inbound::Frame(Frame::Single(got)) => assert_eq!(got, message),
            other => panic!("{other:?}"),
        }
        assert!(matches!(transport.recv().await, Inbound::Closed(None)));
        assert!(matches!(transport.recv().await, Inbound::Closed(None)));
        transport.close().await.unwrap();
        transport.close().await.unwrap();
        assert!(transport.send(message).await.is_err());
        server.await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_message_that_cannot_be_encoded_fails_at_send_and_nothing_is_written() {
        let dir = std::env::temp_dir().join(format!("mcp-unix-encode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.sock");
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut lines = tokio::io::BufReader::new(stream).lines();
            // The first line to arrive is the message sent after the refused one.
            let first = lines.next_line().await.unwrap().unwrap();
            assert_eq!(lines.next_line().await.unwrap(), None);
            first
        });
        let transport = UnixSocketTransport::connect(&path).await.unwrap();
        // Params kept raw from a peer, holding a raw line break in a string.
        let raw = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"x\":\"a\nb\"}}";
        let Ok(Frame::Single(unencodable)) = Frame::from_slice(raw) else {
            panic!("the envelope is read and the params stay raw");
        };
        match transport.send(unencodable).await {
            Err(TransportError::Encode(ndjson::EncodeError::LineBreakInString)) => {}
            other => panic!("expected an encode error, got {other:?}"),
        }
        let message = Message::notification("n", Some(&1)).unwrap();
        transport.send(message.clone()).await.unwrap();
        transport.close().await.unwrap();
        let first = server.await.unwrap();
        assert_eq!(
            Frame::from_slice(first.as_bytes()).unwrap(),
            Frame::Single(message)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

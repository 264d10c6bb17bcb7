//! The Unix socket transport: an MCP server that listens on a Unix domain socket (a local daemon, such as `mcpctl serve --daemon`), spoken to in newline-delimited JSON as over stdio.
//!
//! The framing, and its bounds, are [`NdjsonTransport`]'s (MCP
//! "Transports" §stdio, one message per line; see [`crate::ndjson`]); only
//! the byte stream differs. Nothing is spawned: the server's lifetime is
//! its own, and closing the transport ends this connection only.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use mcp_proto::Message;
use tokio::net::UnixStream;

use crate::ndjson::{NdjsonOptions, NdjsonTransport, Output, Parts};
use crate::transport::{Inbound, Transport, TransportError, TransportExtensions};

/// A connection to an MCP server on a Unix domain socket.
#[derive(Debug)]
pub struct UnixSocketTransport {
    path: PathBuf,
    stream: NdjsonTransport,
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
    /// ([`ndjson::DEFAULT_MAX_MESSAGE_SIZE`](mcp_proto::codec::ndjson::DEFAULT_MAX_MESSAGE_SIZE)).
    /// Must be called within a tokio runtime, which runs its I/O tasks.
    pub fn from_stream(stream: UnixStream, path: impl AsRef<Path>) -> UnixSocketTransport {
        let path = path.as_ref().to_path_buf();
        let (read, write) = stream.into_split();
        let stream = NdjsonTransport::from_parts(
            &tokio::runtime::Handle::current(),
            Parts {
                reader: Box::new(read),
                // Written directly, as stdio's pipe is: a lone message needs
                // no hop through the writer task.
                output: Output::Direct(Arc::new(write)),
                options: NdjsonOptions::new(path.display().to_string()),
                peer_gone: None,
                at_eof: None,
            },
        );
        UnixSocketTransport { path, stream }
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Everything is [`NdjsonTransport`]'s; `close` ends our end of the
/// stream, so the server sees the end of its input and cancels what this
/// connection left in flight.
#[async_trait]
impl Transport for UnixSocketTransport {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.stream.send(message).await
    }

    fn try_send(&self, message: Message) -> Result<(), Message> {
        self.stream.try_send(message)
    }

    async fn recv(&self) -> Inbound {
        self.stream.recv().await
    }

    fn try_recv(&self) -> Option<Inbound> {
        self.stream.try_recv()
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.stream.close().await
    }

    /// The underlying [`NdjsonTransport`]'s: the frame sink and the first
    /// line the server wrote that is not JSON.
    fn extensions(&self) -> Option<&dyn TransportExtensions> {
        self.stream.extensions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_proto::Frame;
    use mcp_proto::codec::ndjson;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

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

//! The newline-delimited JSON rule shared by the byte-stream transports (stdio, Unix socket): what a decoded line means for the connection.
//!
//! MCP "Transports" §stdio: one JSON-RPC message per line. A line that is
//! not a message is skipped and logged (a server's stray output must not
//! end the connection); a line over the size limit ends it, since the
//! stream can no longer be trusted to be in step.

use mcp_proto::Frame;
use mcp_proto::codec::ndjson::NdjsonError;

/// What one decoded line is to a transport.
pub(crate) enum Line {
    /// A message (or a batch) to hand on.
    Frame(Frame),
    /// Nothing usable; already logged.
    Skipped,
    /// Over the size limit (the limit): the connection ends.
    TooLarge(usize),
}

/// Reads one item of an [`NdjsonDecoder`](mcp_proto::codec::ndjson::NdjsonDecoder),
/// logging what is skipped under `peer` (a pid, a socket path).
pub(crate) fn line(peer: &dyn std::fmt::Display, item: Result<Frame, NdjsonError>) -> Line {
    match item {
        Ok(frame) => Line::Frame(frame),
        Err(NdjsonError::TooLarge { limit }) => {
            tracing::warn!(
                %peer,
                limit,
                "the peer sent a message over the size limit; closing the connection"
            );
            Line::TooLarge(limit)
        }
        Err(NdjsonError::NotJson {
            preview,
            line_len,
            source,
        }) => {
            tracing::warn!(%peer, line_len, %preview, error = %source, "skipping a line that is not a JSON-RPC message");
            Line::Skipped
        }
        Err(error) => {
            tracing::warn!(%peer, %error, "skipping an undecodable line");
            Line::Skipped
        }
    }
}

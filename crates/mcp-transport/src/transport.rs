//! The `Transport` trait: how the client driver moves JSON-RPC messages over any channel.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_proto::{Frame, Message, RequestId};

/// A bidirectional channel of JSON-RPC messages to one MCP server.
///
/// The contract, which every implementation (ours and third parties') keeps:
///
/// - **Shared access.** Methods take `&self`: the driver polls [`recv`] while
///   a [`send`] is in flight, so a peer that writes while it is not reading
///   cannot deadlock the connection.
/// - **`send`** hands one message to the peer, in call order (the driver
///   never overlaps two `send` calls). It returns once the message is on its
///   way — written to a pipe, or handed to an HTTP request in the
///   background — and never waits for the peer to *process* it. An error
///   means the transport is unusable; the driver closes the connection.
///   Failures the transport learns about later for one message (an HTTP
///   status, say) come back through [`recv`] as [`Inbound::Undelivered`].
/// - **`recv`** is cancel safe: the driver drops its future whenever another
///   event wins a `select!`, and no inbound message may be lost by that.
///   It yields frames in arrival order, [`Inbound::Undelivered`] for
///   per-message failures, and [`Inbound::Closed`] once the peer is gone
///   (`None` for a clean end, `Some(error)` for a broken one); after
///   `Closed` it keeps returning `Closed`.
/// - **`close`** ends the connection politely (close stdin and wait, or
///   DELETE the HTTP session) and is idempotent. Dropping a transport must
///   also release everything it holds (child processes included), without
///   the politeness.
/// - A transport skips what it cannot decode (a junk stdout line, a non-JSON
///   SSE event) and logs it with `tracing`; it reports a message over its
///   size limit as `Closed(Some(TransportError::TooLarge))`.
///
/// [`send`]: Transport::send
/// [`recv`]: Transport::recv
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Sends one message.
    async fn send(&self, message: Message) -> Result<(), TransportError>;

    /// Hands `message` to the transport without waiting, when it can take
    /// it right now (room in a queue, say); otherwise gives it back and the
    /// driver uses [`send`](Transport::send). This lets a caller's own task
    /// put its request on the wire without a hop through the driver. The
    /// ordering rule of `send` holds: it is never called while a `send` is
    /// in flight, and never out of order. The default takes nothing.
    fn try_send(&self, message: Message) -> Result<(), Message> {
        Err(message)
    }

    /// Receives the next inbound item. Cancel safe.
    async fn recv(&self) -> Inbound;

    /// Takes the next inbound item if one is ready right now, without
    /// waiting, so that the driver handles every frame that has arrived in
    /// one pass instead of one pass per frame. `None` means nothing is ready
    /// (it never means closed: `recv` reports that). The driver calls it only
    /// while no `recv` future is pending; items come in the same order
    /// `recv` would yield them. The default has nothing ready.
    fn try_recv(&self) -> Option<Inbound> {
        None
    }

    /// Ends the connection politely. Idempotent.
    async fn close(&self) -> Result<(), TransportError>;

    /// What only some transports offer ([`TransportExtensions`]: the frame
    /// sink, Streamable HTTP's protocol version and tool headers, a child
    /// process's stderr and stray stdout), or `None` for a transport with
    /// none of it. The client asks once per use; a wrapper transport
    /// forwards its inner transport's answer. The default is `None`.
    fn extensions(&self) -> Option<&dyn TransportExtensions> {
        None
    }
}

/// What only some transports do, beside the [`Transport`] every one is:
/// reached through [`Transport::extensions`], so that the common trait
/// stays `send`, `recv` and `close` and a transport implements here only
/// what it has. Every method has a default that does nothing or has
/// nothing, which is also what the client assumes of a transport whose
/// `extensions` is `None`.
pub trait TransportExtensions: Send + Sync {
    /// Asks the transport to hand every inbound frame to `sink` from the
    /// task that read it, instead of queueing it for [`recv`]: a response
    /// then reaches the caller waiting for it without a hop through the
    /// driver (one thread wake-up per response instead of two). Returns
    /// whether the transport does so; the default does not, and everything
    /// goes through `recv` as before.
    ///
    /// Once it has returned `true`: the frames that were waiting for `recv`
    /// go to the sink first, then every later frame, in arrival order and
    /// one call at a time per stream read (the frames read together in one
    /// call, so that the sink handles them in one pass; a transport that
    /// reads several streams at once, as Streamable HTTP reads each POST's
    /// answer and the GET stream, calls it from each stream's task, so
    /// calls for different streams may overlap); [`recv`] and
    /// [`try_recv`](Transport::try_recv) yield no frames any more, only
    /// [`Inbound::Undelivered`] and [`Inbound::Closed`], and `Closed` only
    /// after every frame before it has been handed over. The client calls
    /// it once, before its driver first polls `recv`.
    ///
    /// [`recv`]: Transport::recv
    fn set_frame_sink(&self, sink: Arc<dyn FrameSink>) -> bool {
        let _ = sink;
        false
    }

    /// The protocol version the client negotiated, for transports that must
    /// echo it (Streamable HTTP's `MCP-Protocol-Version` header). Called once,
    /// after the handshake and before `notifications/initialized` is sent.
    /// The default does nothing.
    fn set_protocol_version(&self, version: mcp_proto::ProtocolVersion) {
        let _ = version;
    }

    /// The `Mcp-Param-*` headers a tool's `x-mcp-header` annotations ask
    /// for (2026-07-28 "Streamable HTTP" §Custom headers), for transports
    /// that send headers; `None` forgets the tool. The client calls it for
    /// every tool it lists in the stateless era. The default does nothing.
    fn set_tool_headers(&self, tool: &str, headers: Option<mcp_proto::headers::ToolParamHeaders>) {
        let _ = (tool, headers);
    }

    /// What the server process last wrote to stderr, raw, for transports
    /// that run one (stdio): for a host to show a person why a server
    /// failed, bounded and escaped, never to a model. Complete once
    /// [`close`](Transport::close) has returned. The default has none.
    fn stderr_tail(&self) -> Option<String> {
        None
    }

    /// The first line the server process wrote to stdout that is not a
    /// JSON-RPC message (a banner, a log line on the wrong stream), raw,
    /// for transports that read a child's stdout: the usual cause of a
    /// stdio server that never answers. For a person, bounded and escaped
    /// (see `mcp_proto::text`); never for a model. The default has none.
    fn first_stray_line(&self) -> Option<String> {
        None
    }
}

/// Takes inbound frames straight from a transport's reading task (see
/// [`TransportExtensions::set_frame_sink`]).
pub trait FrameSink: Send + Sync + 'static {
    /// Handles inbound frames, in the order they arrived: all the frames
    /// the transport has decoded and not yet handed over (those of one read
    /// from the peer, say), so that a sink pays its locking and waking once
    /// for them all instead of once per frame. `frames` yields at least one
    /// frame, and the sink takes every one (a frame left in it is lost). It
    /// runs on the transport's task that read the frames, which reads
    /// nothing more until it returns, and may be called from several such
    /// tasks at once (one per stream, see
    /// [`TransportExtensions::set_frame_sink`]): it must not block for
    /// long (taking a lock briefly is fine; waiting on I/O is not).
    fn frames(&self, frames: &mut dyn Iterator<Item = Frame>);
}

/// What [`Transport::recv`] yields.
#[derive(Debug)]
#[non_exhaustive]
pub enum Inbound {
    /// A message, or a batch (2025-03-26).
    Frame(Frame),
    /// A message sent earlier was not delivered; the connection goes on.
    /// When `id` names a request, that request fails with `error`.
    Undelivered {
        /// The id of the request that failed, if the message was one.
        id: Option<RequestId>,
        /// Why.
        error: TransportError,
    },
    /// The connection ended: `None` when the peer closed cleanly.
    Closed(Option<TransportError>),
    /// The server ended the SSE stream of request `id` before answering
    /// it, and the transport resumes it after `retry` (Streamable HTTP,
    /// 2025-11-25 "Transports" §Resumability and Redelivery: SSE polling);
    /// the answer comes on the resumed stream. Nothing failed: a caller
    /// that asked ([`CallOptions::stream_paused`](crate::CallOptions::stream_paused))
    /// hears of it, as a gateway that mirrors the server's streams to its
    /// own client does.
    StreamPaused {
        /// The request whose stream ended.
        id: RequestId,
        /// How long the transport waits before resuming it: the server's
        /// `retry`, or the transport's own delay when it sent none.
        retry: std::time::Duration,
    },
}

/// A transport failure. The message text is for people and may change;
/// match on the variant or use the `is_*` predicates.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The transport is closed.
    #[error("transport closed")]
    Closed,
    /// An I/O error on the underlying pipe or socket.
    #[error("i/o error")]
    Io(#[from] std::io::Error),
    /// An outgoing message has no form the transport can write (a payload
    /// kept raw from a peer holds a line break inside a string, which
    /// newline-delimited JSON cannot carry); nothing was sent, and the
    /// connection is still usable.
    #[error("cannot encode the outgoing message")]
    Encode(#[source] mcp_proto::codec::ndjson::EncodeError),
    /// An inbound message exceeded the size limit; the connection ended.
    #[error("inbound message exceeds the {limit}-byte limit")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The server does not know the session any more (HTTP 404 on a request
    /// that carried `Mcp-Session-Id`): initialize again.
    #[error("session expired: the server no longer knows this session")]
    SessionExpired,
    /// The server answered with an HTTP error status.
    #[error("HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the response body, for people: at most
        /// [`ERROR_TEXT_LIMIT`](mcp_proto::text::ERROR_TEXT_LIMIT) bytes of
        /// it, escaped onto one line, with a cut marker when it went on.
        body: String,
    },
    /// HTTP 403 without a `WWW-Authenticate` challenge: the server refused
    /// the request itself (MCP "Transports" §Security Warning: an `Origin`
    /// or `Host` it does not accept), not its credentials.
    #[error("HTTP 403 without an authentication challenge: {body}")]
    Forbidden {
        /// The start of the response body (at most 16 KiB), for people.
        body: String,
    },
    /// The server answered with a media type this transport cannot read
    /// (MCP "Transports" §Sending Messages: `application/json` or
    /// `text/event-stream`).
    #[error("HTTP {status} answered with content type {content_type} (expected {expected})")]
    UnexpectedContentType {
        /// The response's status code.
        status: u16,
        /// The media type it named (bounded to 64 characters), or `none`.
        content_type: String,
        /// What this transport reads there.
        expected: &'static str,
    },
    /// A redirect this client does not follow: to another origin (so
    /// credentials and session ids never travel to another host) or to a
    /// URL with user info.
    #[error("refused a redirect {reason}")]
    RedirectRefused {
        /// Where it pointed, as an origin (never the whole URL).
        reason: String,
    },
    /// More redirects in a row than the transport follows (a loop).
    #[error("more than {limit} redirects in a row")]
    TooManyRedirects {
        /// How many one request follows.
        limit: u32,
    },
    /// The response's status line and headers are longer than the
    /// transport reads.
    #[error("the response headers exceed the {limit}-byte limit")]
    HeadersTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The HTTP proxy the server is reached through failed, not the
    /// server: the proxy could not be reached, refused the CONNECT tunnel
    /// (407, 403, 502, ...), closed it before answering, or its setting is
    /// unusable (a malformed URL, an unsupported scheme). The message names
    /// the proxy's `host:port` and where it was set, never its credentials.
    #[error("{message}")]
    Proxy {
        /// The proxy's `host:port`; empty when its setting is unusable.
        proxy: String,
        /// The proxy's status answering CONNECT, when it refused.
        status: Option<u16>,
        /// What went wrong, for people.
        message: String,
    },
    /// The peer broke the transport's rules (a malformed `endpoint` event,
    /// an SSE stream that is not one, ...).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The transport could not be set up (a command that cannot be run, an
    /// unusable URL, a TLS configuration problem, ...).
    #[error("{0}")]
    Setup(String),
    /// Any other failure, from a third-party transport.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl TransportError {
    /// Whether this is [`TransportError::SessionExpired`].
    pub fn is_session_expired(&self) -> bool {
        matches!(self, TransportError::SessionExpired)
    }

    /// Whether this is [`TransportError::Closed`].
    pub fn is_closed(&self) -> bool {
        matches!(self, TransportError::Closed)
    }

    /// The HTTP status, for [`TransportError::Http`] (and 403 for
    /// [`TransportError::Forbidden`]).
    pub fn http_status(&self) -> Option<u16> {
        match self {
            TransportError::Http { status, .. } => Some(*status),
            TransportError::Forbidden { .. } => Some(403),
            _ => None,
        }
    }

    /// Whether no connection could be made at all (MCP "Transports": the
    /// server could not be reached): its address refused the connection
    /// (nothing listens there), there is no route to it (host or network
    /// unreachable, an address not available here), or its name did not
    /// resolve (DNS). Always an [`TransportError::Io`], whose kind and text
    /// say which. The HTTP transports meet it once per connection attempt:
    /// until a response has arrived, the requests after one that met it
    /// fail with it at once instead of trying again.
    pub fn is_unreachable(&self) -> bool {
        use std::io::ErrorKind;
        match self {
            TransportError::Io(error) => {
                matches!(
                    error.kind(),
                    ErrorKind::ConnectionRefused
                        | ErrorKind::HostUnreachable
                        | ErrorKind::NetworkUnreachable
                        | ErrorKind::AddrNotAvailable
                ) || error.to_string().contains("dns error")
            }
            _ => false,
        }
    }

    /// A copy. Errors are not `Clone` (an I/O error is not); this copies an
    /// I/O error as its kind and text, and a third-party error as its text.
    pub fn duplicate(&self) -> TransportError {
        match self {
            TransportError::Closed => TransportError::Closed,
            TransportError::Io(e) => {
                TransportError::Io(std::io::Error::new(e.kind(), e.to_string()))
            }
            TransportError::Encode(e) => TransportError::Encode(duplicate_encode_error(e)),
            TransportError::TooLarge { limit } => TransportError::TooLarge { limit: *limit },
            TransportError::SessionExpired => TransportError::SessionExpired,
            TransportError::Http { status, body } => TransportError::Http {
                status: *status,
                body: body.clone(),
            },
            TransportError::Forbidden { body } => TransportError::Forbidden { body: body.clone() },
            TransportError::UnexpectedContentType {
                status,
                content_type,
                expected,
            } => TransportError::UnexpectedContentType {
                status: *status,
                content_type: content_type.clone(),
                expected,
            },
            TransportError::RedirectRefused { reason } => TransportError::RedirectRefused {
                reason: reason.clone(),
            },
            TransportError::TooManyRedirects { limit } => {
                TransportError::TooManyRedirects { limit: *limit }
            }
            TransportError::HeadersTooLarge { limit } => {
                TransportError::HeadersTooLarge { limit: *limit }
            }
            TransportError::Proxy {
                proxy,
                status,
                message,
            } => TransportError::Proxy {
                proxy: proxy.clone(),
                status: *status,
                message: message.clone(),
            },
            TransportError::Protocol(m) => TransportError::Protocol(m.clone()),
            TransportError::Setup(m) => TransportError::Setup(m.clone()),
            TransportError::Other(e) => TransportError::Protocol(e.to_string()),
        }
    }
}

/// A copy of an [`EncodeError`](mcp_proto::codec::ndjson::EncodeError); a
/// serialization failure (and any later kind) keeps its text.
fn duplicate_encode_error(
    error: &mcp_proto::codec::ndjson::EncodeError,
) -> mcp_proto::codec::ndjson::EncodeError {
    use mcp_proto::codec::ndjson::EncodeError;
    match error {
        EncodeError::LineBreakInString => EncodeError::LineBreakInString,
        EncodeError::Json(e) => EncodeError::Json(serde::ser::Error::custom(e)),
        other => EncodeError::Json(serde::ser::Error::custom(other)),
    }
}

/// A boxed transport is a transport, so factories can hand out
/// `Box<dyn Transport>` for any of the kinds they build.
#[async_trait]
impl Transport for Box<dyn Transport> {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        (**self).send(message).await
    }

    fn try_send(&self, message: Message) -> Result<(), Message> {
        (**self).try_send(message)
    }

    async fn recv(&self) -> Inbound {
        (**self).recv().await
    }

    fn try_recv(&self) -> Option<Inbound> {
        (**self).try_recv()
    }

    async fn close(&self) -> Result<(), TransportError> {
        (**self).close().await
    }

    fn extensions(&self) -> Option<&dyn TransportExtensions> {
        (**self).extensions()
    }
}

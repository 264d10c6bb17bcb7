//! What the two HTTP transports share: the accept loop (the library's,
//! with the late fault switches in front), bodies, SSE event encoding, and
//! request checks.
//!
//! - [`streamable`]: Streamable HTTP, both eras, one `/mcp` endpoint, on
//!   `mcp_transport`'s server core with the fixture's faults around it.
//! - [`legacy`]: HTTP+SSE (2024-11-05), `GET /sse` and `POST /message`
//!   (the library serves no legacy SSE, so the fixture keeps its own).

pub(crate) mod legacy;
pub(crate) mod streamable;

use std::convert::Infallible;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Frame as BodyFrame, Incoming, SizeHint};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use mcp_proto::codec::sse::{SseEvent, encode_event};
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::{ErrorObject, Message};
use mcp_transport::server::{Listener, ListenerOptions};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The body of every response the fixture sends.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// The largest request body read: 64 MiB, the stdio line limit.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A request handler: one per transport, shared by every connection.
pub(crate) trait Handler: Send + Sync + 'static {
    fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>>;
}

/// The faults every HTTP request meets before its handler (the late
/// switches of `--help`): a status, a media type, redirects, refusals and
/// padded headers.
#[derive(Clone, Debug, Default)]
pub(crate) struct HttpFaults {
    status: Option<u16>,
    content_type: Option<String>,
    redirect_cross_origin: bool,
    redirect_loop: bool,
    huge_headers_kib: usize,
    refuse_origin: bool,
}

impl HttpFaults {
    pub(crate) fn of(options: &crate::options::Options) -> HttpFaults {
        HttpFaults {
            status: options.http_status,
            content_type: options.content_type.clone(),
            redirect_cross_origin: options.redirect_cross_origin,
            redirect_loop: options.redirect_loop,
            huge_headers_kib: options.huge_headers_kib,
            refuse_origin: options.refuse_origin,
        }
    }

    /// The answer that replaces the handler's, if a fault says so.
    fn answer(&self, request: &Request<Incoming>, port: u16) -> Option<Response<Body>> {
        let target = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let redirect = |location: String| {
            let mut response = full(StatusCode::TEMPORARY_REDIRECT, None, "");
            if let Ok(value) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, value);
            }
            response
        };
        if self.refuse_origin {
            return Some(full(
                StatusCode::FORBIDDEN,
                Some("text/plain"),
                "forbidden: this Origin or Host is not accepted",
            ));
        }
        if let Some(status) = self.status {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Some(full(
                status,
                Some("text/plain"),
                format!("fixture: HTTP {} (--http-status)", status.as_u16()),
            ));
        }
        if let Some(media) = &self.content_type {
            let mut response = full(StatusCode::OK, None, "hello from the fixture");
            if let Ok(value) = HeaderValue::from_str(media) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            return Some(response);
        }
        if self.redirect_cross_origin {
            return Some(redirect(format!("http://localhost:{port}{target}")));
        }
        if self.redirect_loop {
            return Some(redirect(target));
        }
        None
    }

    /// Pads `response` with `--huge-headers-kib` of headers.
    fn pad(&self, response: &mut Response<Body>) {
        // 1 KiB a header.
        let Ok(value) = HeaderValue::from_str(&"0123456789abcdef".repeat(64)) else {
            return;
        };
        for n in 0..self.huge_headers_kib {
            if let Ok(name) =
                header::HeaderName::from_bytes(format!("x-fixture-pad-{n}").as_bytes())
            {
                response.headers_mut().insert(name, value.clone());
            }
        }
    }
}

/// Binds 127.0.0.1:`port` and prints `listening on http://ADDR{path}` as
/// the first stdout line.
pub(crate) async fn bind(port: u16, path: &str) -> anyhow::Result<TcpListener> {
    let tcp = TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let addr = tcp.local_addr()?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on http://{addr}{path}")?;
    stdout.flush()?;
    Ok(tcp)
}

/// Serves `tcp` with `mcp_transport`'s accept loop ([`Listener`]) until
/// the process ends: every request meets `faults` first, then `handler`.
pub(crate) async fn serve(
    tcp: TcpListener,
    faults: HttpFaults,
    handler: Arc<impl Handler>,
) -> anyhow::Result<()> {
    let port = tcp.local_addr()?.port();
    let faults = Arc::new(faults);
    Listener::new(tcp, ListenerOptions::default())
        .serve(move |request| {
            let handler = Arc::clone(&handler);
            let faults = Arc::clone(&faults);
            async move {
                let mut response = match faults.answer(&request, port) {
                    Some(response) => response,
                    None => handler.handle(request).await,
                };
                faults.pad(&mut response);
                response
            }
        })
        .await;
    Ok(())
}

/// A response with a complete body.
pub(crate) fn full(
    status: StatusCode,
    content_type: Option<&'static str>,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    response
}

/// An HTTP error whose body is a JSON-RPC error with a null id, the shape
/// the TypeScript SDK uses, so that a client can show the message.
pub(crate) fn rpc_error(
    status: StatusCode,
    code: i64,
    message: impl Into<String>,
) -> Response<Body> {
    let body = Message::error(None, ErrorObject::new(code, message)).to_bytes();
    full(status, Some("application/json"), body)
}

/// Why a request is refused: an HTTP status, and the JSON-RPC error its
/// body carries (see [`rpc_error`]).
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) code: i64,
    pub(crate) message: String,
}

impl Refusal {
    pub(crate) fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn into_response(self) -> Response<Body> {
        rpc_error(self.status, self.code, self.message)
    }
}

/// An SSE response whose events come from `events`; the stream ends when
/// every sender is dropped.
pub(crate) fn sse(events: mpsc::UnboundedReceiver<Bytes>) -> Response<Body> {
    sse_body(ChannelBody { events })
}

fn sse_body(body: ChannelBody) -> Response<Body> {
    let mut response = Response::new(body.boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// One SSE event in wire form, through mcp-proto's encoder (WHATWG
/// "Server-sent events" §9.2.6). `data` is one line of compact JSON, or
/// empty for a priming event.
pub(crate) fn sse_event(
    id: Option<String>,
    event: Option<&str>,
    retry_ms: Option<u64>,
    data: String,
) -> Bytes {
    let event = SseEvent {
        event: event.unwrap_or("message").to_owned(),
        data,
        id,
        retry: retry_ms,
    };
    let mut out = String::with_capacity(event.data.len() + 64);
    encode_event(&event, &mut out);
    Bytes::from(out)
}

/// Reads a POST body, checking the content type: refused with 415 or 413.
pub(crate) async fn read_body(request: Request<Incoming>) -> Result<Bytes, Refusal> {
    if !media_type_is(request.headers(), header::CONTENT_TYPE, "application/json") {
        return Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            error_codes::INVALID_REQUEST,
            "Content-Type must be application/json",
        ));
    }
    let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return Err(Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                error_codes::INVALID_REQUEST,
                format!("cannot read the body: {e}"),
            ));
        }
    };
    Ok(body)
}

/// Whether the header's media type (parameters aside) is `expected`.
pub(crate) fn media_type_is(headers: &HeaderMap, name: header::HeaderName, expected: &str) -> bool {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(expected))
}

/// Whether the `Accept` header lists `media` (parameters and quality aside).
pub(crate) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().any(|value| {
        value.to_str().is_ok_and(|value| {
            value.split(',').any(|item| {
                item.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
            })
        })
    })
}

/// MCP "Transports" §Security Warning: servers MUST validate `Origin`. A
/// request without one (not from a browser) passes; one from a page not
/// served by this machine gets 403.
pub(crate) fn origin_allowed(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or("");
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// A response body fed by a channel: each message is one data frame.
struct ChannelBody {
    events: mpsc::UnboundedReceiver<Bytes>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        self.get_mut()
            .events
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(BodyFrame::data(bytes))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn accept_lists_are_split_and_parameters_ignored() {
        let h = headers(&[("accept", "application/json;q=0.9, Text/Event-Stream")]);
        assert!(accepts(&h, "application/json"));
        assert!(accepts(&h, "text/event-stream"));
        assert!(!accepts(&h, "text/html"));
    }

    #[test]
    fn only_local_origins_pass() {
        assert!(origin_allowed(&headers(&[])));
        assert!(origin_allowed(&headers(&[(
            "origin",
            "http://localhost:3000"
        )])));
        assert!(origin_allowed(&headers(&[("origin", "http://127.0.0.1")])));
        assert!(origin_allowed(&headers(&[("origin", "http://[::1]:8080")])));
        assert!(!origin_allowed(&headers(&[(
            "origin",
            "https://evil.example"
        )])));
        assert!(!origin_allowed(&headers(&[(
            "origin",
            "http://localhost.evil.example"
        )])));
    }

    #[test]
    fn sse_events_are_framed() {
        let priming = sse_event(Some("1-0".to_owned()), None, Some(100), String::new());
        assert_eq!(&priming[..], b"id: 1-0\nretry: 100\ndata:\n\n");
        let endpoint = sse_event(
            None,
            Some("endpoint"),
            None,
            "/message?sessionId=a".to_owned(),
        );
        assert_eq!(
            &endpoint[..],
            b"event: endpoint\ndata: /message?sessionId=a\n\n"
        );
    }
}

//! Keep-alive HTTP/1.1 connections to one origin, over hyper's connection-level client.
//!
//! A transport talks to exactly one origin (redirects are same-origin only,
//! see [`super::client`]), so its pool is a list of connections, not a map
//! keyed by scheme and authority. hyper-util's general-purpose pool costs
//! what this one does not need: a hashed key per checkout and return, a race
//! between checkout and a new connection, and a task per request to take
//! the connection back (measured with callgrind: about a sixth of an echo
//! call's client instructions over Streamable HTTP).
//!
//! A connection is taken for a request when it is ready (HTTP/1.1 carries
//! one exchange at a time, so a connection still streaming a response, an
//! SSE stream say, is not) and put back as soon as the response head has
//! arrived; it becomes ready again when that response's body is done.
//! Closed connections are dropped when met. A request that finds a reused
//! connection closed before it could be sent (the server's keep-alive
//! timeout raced it) is sent again on a new connection; one that was sent is
//! never repeated.
//!
//! A transport that knows it will soon need a second connection (the GET
//! stream of a handshake-era session holds one for its whole life) asks for
//! a spare ([`Pool::open_spare`]): it is opened once the first connection
//! has been, while that connection's exchange is still under way, so that
//! the request that needs it does not wait for a TCP (and TLS) handshake.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::header::HOST;
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use tokio::sync::watch;
use tower_service::Service;

use super::proxy::ProxyConnector;

/// The most bytes a response's status line and headers may take: hyper's
/// own default read buffer, set explicitly so that
/// [`TransportError::HeadersTooLarge`](crate::TransportError::HeadersTooLarge)
/// names the limit that is enforced.
pub(crate) const MAX_RESPONSE_HEAD: usize = 8192 + 4096 * 100;

/// At most this many connections are kept; beyond, a connection is used for
/// its request and closed when its response ends.
const MAX_KEPT: usize = 64;

type Sender = http1::SendRequest<Full<Bytes>>;

/// Why a request failed: connecting (DNS, TCP, TLS) or the exchange itself.
pub(crate) type PoolError = Box<dyn std::error::Error + Send + Sync>;

/// How a pool opens connections.
#[derive(Clone)]
pub(crate) enum Connector {
    /// TCP, directly or through a proxy, then rustls for `https`.
    Tls(HttpsConnector<ProxyConnector>),
    /// TCP only: the pool of an `http` URL (redirects keep the origin, so
    /// it never needs TLS), which builds no TLS configuration.
    Plain(ProxyConnector),
}

/// The connections of one transport. Cloning shares them.
#[derive(Clone)]
pub(crate) struct Pool {
    connector: Connector,
    kept: Arc<Mutex<Vec<Sender>>>,
    /// The origin form of the last request URI: a transport sends nearly
    /// every request to the same one, and taking it apart each time (the
    /// `Host` value copied and checked, the path split off) cost about 800
    /// instructions per request (measured with callgrind).
    last_form: Arc<Mutex<Option<OriginForm>>>,
    /// How many connections this pool has opened: [`Pool::open_spare`]
    /// waits for it to move.
    opened: Arc<watch::Sender<u64>>,
}

/// An absolute request URI and what [`origin_form`] makes of it.
struct OriginForm {
    absolute: Uri,
    path: Uri,
    host: HeaderValue,
    target: Target,
}

impl Pool {
    pub(crate) fn new(connector: Connector) -> Pool {
        Pool {
            connector,
            kept: Arc::new(Mutex::new(Vec::new())),
            last_form: Arc::new(Mutex::new(None)),
            opened: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Opens one connection to `uri`'s origin ahead of need and keeps it
    /// ready, once the pool has opened a connection (the one of the
    /// request the spare goes beside, or an earlier one) and only while it
    /// keeps fewer than two. Waits at most `within` for that first
    /// connection: when it failed (refused, a proxy's or a TLS refusal)
    /// there is no spare, so a failure is never met twice. A spare that
    /// cannot be opened is only logged: the request that would have used
    /// it opens its own.
    pub(crate) async fn open_spare(&self, uri: &Uri, within: std::time::Duration) {
        let mut opened = self.opened.subscribe();
        let first = tokio::time::timeout(within, opened.wait_for(|n| *n > 0))
            .await
            .is_ok_and(|seen| seen.is_ok());
        if !first || mcp_proto::sync::lock(&self.kept).len() >= 2 {
            return;
        }
        let target = match target_of(uri) {
            Ok(target) => target,
            Err(error) => {
                tracing::debug!(%error, "no spare connection");
                return;
            }
        };
        match self.connect(&target).await {
            Ok(sender) => self.keep(sender),
            Err(error) => tracing::debug!(%error, "opening a spare connection failed"),
        }
    }

    /// [`origin_form`], from the last request's when the URI is the same.
    fn origin_form(&self, request: &mut Request<Full<Bytes>>) -> Result<Target, PoolError> {
        let mut last = mcp_proto::sync::lock(&self.last_form);
        if let Some(form) = last
            .as_ref()
            .filter(|form| same_text(&form.absolute, request.uri()))
        {
            *request.uri_mut() = form.path.clone();
            if !request.headers().contains_key(HOST) {
                request.headers_mut().insert(HOST, form.host.clone());
            }
            return Ok(form.target.clone());
        }
        let absolute = request.uri().clone();
        let target = origin_form(request)?;
        // Remembered only when the `Host` value is one (it always is for a
        // parsed authority; an explicit `Host` header may have spared the
        // check above).
        if let Ok(host) = HeaderValue::from_str(&host_of(&target)) {
            *last = Some(OriginForm {
                absolute,
                path: request.uri().clone(),
                host,
                target: target.clone(),
            });
        }
        Ok(target)
    }

    /// Sends `request` (absolute URI) and returns the response once its
    /// head has arrived.
    pub(crate) async fn request(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, PoolError> {
        let target = self.origin_form(&mut request)?;
        loop {
            let (mut sender, reused) = match self.take_ready() {
                Some(sender) => (sender, true),
                None => (self.connect(&target).await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    self.keep(sender);
                    return Ok(response);
                }
                Err(mut error) => match error.take_message() {
                    // Never written: the connection was closed under us.
                    // A new connection gets it (once: a new one has no
                    // keep-alive race to lose).
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(Box::new(error.into_error())),
                },
            }
        }
    }

    /// A kept connection that can take a request now; closed ones are
    /// dropped on the way, busy ones stay.
    fn take_ready(&self) -> Option<Sender> {
        let mut kept = mcp_proto::sync::lock(&self.kept);
        kept.retain(|sender| !sender.is_closed());
        let ready = kept.iter().position(Sender::is_ready)?;
        Some(kept.swap_remove(ready))
    }

    fn keep(&self, sender: Sender) {
        let mut kept = mcp_proto::sync::lock(&self.kept);
        if kept.len() < MAX_KEPT {
            kept.push(sender);
        }
    }

    /// A new connection (TCP, then TLS for `https`), its driver task
    /// spawned on the current runtime.
    async fn connect(&self, target: &Target) -> Result<Sender, PoolError> {
        let io = match &self.connector {
            Connector::Tls(connector) => {
                let mut connector = connector.clone();
                std::future::poll_fn(|cx| connector.poll_ready(cx)).await?;
                connector.call(target.origin()?).await?
            }
            Connector::Plain(_) if target.scheme == Scheme::HTTPS => {
                return Err("an https URL on a connection pool made for http".into());
            }
            Connector::Plain(connector) => {
                let mut connector = connector.clone();
                std::future::poll_fn(|cx| connector.poll_ready(cx)).await?;
                MaybeHttpsStream::Http(connector.call(target.origin()?).await?)
            }
        };
        let (sender, connection) = http1::Builder::new()
            .max_buf_size(MAX_RESPONSE_HEAD)
            .handshake(io)
            .await?;
        self.opened.send_modify(|n| *n += 1);
        tokio::spawn(async move {
            // The connection's end (the server closed it, or a protocol
            // error) shows as `is_closed` on its sender, or as the error of
            // the exchange in progress.
            if let Err(error) = connection.await {
                tracing::debug!(%error, "HTTP connection ended");
            }
        });
        Ok(sender)
    }
}

/// Where requests go: the origin to connect to.
#[derive(Clone)]
struct Target {
    scheme: Scheme,
    authority: Authority,
}

impl Target {
    /// The origin as a URI, for the connector: built only when a new
    /// connection is opened, not for every request. The port is always
    /// written out (the scheme's default when the URL has none), so that
    /// a proxy tunnel asks for the right one.
    fn origin(&self) -> Result<Uri, http::Error> {
        let authority = match self.authority.port_u16() {
            Some(_) => self.authority.clone(),
            None => {
                let port = if self.scheme == Scheme::HTTPS {
                    443
                } else {
                    80
                };
                Authority::try_from(format!("{}:{port}", self.authority.host()))?
            }
        };
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(authority)
            .path_and_query("/")
            .build()
    }
}

/// Rewrites an absolute-form request for HTTP/1.1 on a connection of its
/// own (RFC 9112 §3.2.1): the target in origin form and the authority in
/// `Host` (without the scheme's default port).
fn origin_form(request: &mut Request<Full<Bytes>>) -> Result<Target, PoolError> {
    let uri = request.uri();
    let target = target_of(uri)?;
    let path = uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    *request.uri_mut() = Uri::from(path);
    if !request.headers().contains_key(HOST) {
        request
            .headers_mut()
            .insert(HOST, HeaderValue::from_str(&host_of(&target))?);
    }
    Ok(target)
}

/// The origin an absolute URI's requests go to.
fn target_of(uri: &Uri) -> Result<Target, PoolError> {
    let scheme = uri
        .scheme()
        .cloned()
        .ok_or("the request URI has no scheme")?;
    let authority: Authority = uri
        .authority()
        .cloned()
        .ok_or("the request URI has no authority")?;
    Ok(Target { scheme, authority })
}

/// Whether two URIs are written alike: a byte comparison of their parts,
/// stricter than `Uri`'s `==` (which ignores case in the scheme and the
/// authority) and about a seventh of its cost.
fn same_text(a: &Uri, b: &Uri) -> bool {
    a.scheme_str() == b.scheme_str()
        && a.authority().map(Authority::as_str) == b.authority().map(Authority::as_str)
        && a.path_and_query().map(PathAndQuery::as_str)
            == b.path_and_query().map(PathAndQuery::as_str)
}

/// The `Host` value for `target`: its authority, without the scheme's
/// default port.
fn host_of(target: &Target) -> String {
    let default_port = match target.scheme.as_str() {
        "https" => 443,
        _ => 80,
    };
    match target.authority.port_u16() {
        Some(port) if port == default_port => target.authority.host().to_owned(),
        _ => target.authority.as_str().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(uri: &str) -> (Request<Full<Bytes>>, Target) {
        let mut request = Request::builder()
            .uri(uri)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let target = origin_form(&mut request).unwrap();
        (request, target)
    }

    #[test]
    fn requests_go_out_in_origin_form_with_the_host_header() {
        let (request, target) = rewritten("http://127.0.0.1:8080/mcp?x=1");
        assert_eq!(request.uri(), "/mcp?x=1");
        assert_eq!(request.headers()[HOST], "127.0.0.1:8080");
        assert_eq!(target.origin().unwrap(), "http://127.0.0.1:8080/");

        // The scheme's default port is left out of `Host`.
        let (request, target) = rewritten("https://mcp.example.com:443/a");
        assert_eq!(request.headers()[HOST], "mcp.example.com");
        assert_eq!(target.origin().unwrap(), "https://mcp.example.com:443/");
        let (request, target) = rewritten("http://[::1]/");
        assert_eq!(request.headers()[HOST], "[::1]");
        assert_eq!(target.origin().unwrap(), "http://[::1]:80/");
        assert_eq!(request.uri(), "/");
    }

    /// A server that answers one request per connection and then closes
    /// it, without saying so in a header (as a server whose keep-alive
    /// timeout is shorter than our pause does).
    async fn one_request_per_connection() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                        .await;
                    // Dropped: the connection closes.
                });
            }
        });
        (url, connections)
    }

    fn plain_http_pool() -> Pool {
        Pool::new(Connector::Plain(super::super::client::tcp_connector(
            super::super::ProxyConfig::none(),
            std::time::Duration::from_secs(5),
        )))
    }

    #[tokio::test]
    async fn connections_the_server_closed_are_replaced_and_no_request_fails() {
        use http_body_util::BodyExt;
        let (url, connections) = one_request_per_connection().await;
        let pool = plain_http_pool();
        for n in 1..=5 {
            let request = Request::builder()
                .uri(url.as_str())
                .body(Full::new(Bytes::from_static(b"{}")))
                .unwrap();
            let response = pool
                .request(request)
                .await
                .unwrap_or_else(|e| panic!("request {n}: {e}"));
            assert_eq!(response.status(), 200);
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], b"ok");
        }
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn a_kept_connection_is_reused() {
        use http_body_util::BodyExt;
        let server = hyper_keep_alive_server().await;
        let pool = plain_http_pool();
        for _ in 0..3 {
            let request = Request::builder()
                .uri(server.0.as_str())
                .body(Full::new(Bytes::new()))
                .unwrap();
            let response = pool.request(request).await.unwrap();
            response.into_body().collect().await.unwrap();
        }
        assert_eq!(server.1.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// A keep-alive HTTP/1.1 server (hyper's) counting its connections.
    async fn hyper_keep_alive_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|_request| async {
                        Ok::<_, std::convert::Infallible>(Response::new(Full::new(
                            Bytes::from_static(b"ok"),
                        )))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (url, connections)
    }

    #[test]
    fn the_last_origin_form_is_reused_only_for_the_same_uri() {
        let pool = plain_http_pool();
        let request = |uri: &str, host: Option<&str>| {
            let mut builder = Request::builder().uri(uri);
            if let Some(host) = host {
                builder = builder.header(HOST, host);
            }
            builder.body(Full::new(Bytes::new())).unwrap()
        };
        for _ in 0..2 {
            let mut first = request("http://127.0.0.1:8080/mcp?x=1", None);
            let target = pool.origin_form(&mut first).unwrap();
            assert_eq!(first.uri(), "/mcp?x=1");
            assert_eq!(first.headers()[HOST], "127.0.0.1:8080");
            assert_eq!(target.origin().unwrap(), "http://127.0.0.1:8080/");
        }
        // A `Host` the request already has is kept, from the remembered form too.
        let mut own_host = request("http://127.0.0.1:8080/mcp?x=1", Some("example.test"));
        pool.origin_form(&mut own_host).unwrap();
        assert_eq!(own_host.headers()[HOST], "example.test");
        // Another path, another authority, another case: each its own form.
        for (uri, path, host, origin) in [
            (
                "http://127.0.0.1:8080/other",
                "/other",
                "127.0.0.1:8080",
                "http://127.0.0.1:8080/",
            ),
            (
                "http://127.0.0.1:9090/mcp?x=1",
                "/mcp?x=1",
                "127.0.0.1:9090",
                "http://127.0.0.1:9090/",
            ),
            (
                "https://MCP.example.com/mcp",
                "/mcp",
                "MCP.example.com",
                "https://MCP.example.com:443/",
            ),
            (
                "https://mcp.example.com/mcp",
                "/mcp",
                "mcp.example.com",
                "https://mcp.example.com:443/",
            ),
        ] {
            let mut other = request(uri, None);
            let target = pool.origin_form(&mut other).unwrap();
            assert_eq!(other.uri(), path, "{uri}");
            assert_eq!(other.headers()[HOST], host, "{uri}");
            assert_eq!(target.origin().unwrap(), origin, "{uri}");
        }
    }

    #[test]
    fn a_relative_uri_is_refused() {
        let mut request = Request::builder()
            .uri("/mcp")
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert!(origin_form(&mut request).is_err());
    }
}

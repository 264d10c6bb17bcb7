//! The HTTP client both HTTP transports send through: keep-alive pool (see `pool`), rustls, fixed headers, redirects, auth retries and body limits.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use mcp_proto::text::{self, ERROR_TEXT_LIMIT, Lines};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use url::Url;

use super::pool::{Connector, MAX_RESPONSE_HEAD, Pool};
use super::proxy::ProxyConnector;
use super::tls::TlsError;
use super::{AuthProvider, HttpOptions, ProxyConfig};
use crate::transport::TransportError;

/// The most of an error status's body read to find the request's JSON-RPC
/// error in it (the 2026-07-28 era answers with one); a body that is not
/// one is shown from its first [`ERROR_TEXT_LIMIT`] bytes only.
pub(crate) const ERROR_BODY_LIMIT: usize = 16 * 1024;

/// At most this much of a body nobody needs (a 202's, a refusal's) is read
/// so that its connection can go back to the pool; a longer one is dropped
/// with its connection.
const DRAIN_LIMIT: usize = 64 * 1024;

/// At most this many credential renewals per request: one after a 401,
/// the rest after 403 `insufficient_scope` step-up challenges.
const MAX_AUTH_RETRIES: u32 = 3;

/// At most this many resends per request that the auth hook asked for
/// after seeing a response ([`AuthProvider::on_response`]: a DPoP nonce).
const MAX_RESENDS: u32 = 2;

/// The HTTP client of one transport. Cloning shares the connection pool.
#[derive(Clone)]
pub(crate) struct HttpClient {
    pool: Pool,
    /// Static headers, env headers and the bearer token, resolved at connect.
    fixed_headers: HeaderMap,
    auth: Option<Arc<dyn AuthProvider>>,
    request_timeout: Duration,
    max_redirects: u32,
    /// The last URL requested and its parse as a request URI: nearly every
    /// request goes to the same URL, and parsing it each time cost about
    /// 800 instructions per request (measured with callgrind).
    last_uri: Arc<Mutex<Option<(String, http::Uri)>>>,
    /// Why the server could not be reached, while no response has arrived:
    /// a refused TLS handshake (certificate or protocol), or no connection
    /// at all ([`TransportError::is_unreachable`]: refused, no route, DNS).
    /// Neither succeeds on the next try a moment later, so every later
    /// request (the handshake-era `initialize` after a refused era probe,
    /// say) fails with it at once instead of connecting again.
    unreachable: Arc<Mutex<Option<Unreachable>>>,
    /// Whether any response has arrived; after one, failures to connect are
    /// not remembered (a server may restart, or change its certificate).
    answered: Arc<AtomicBool>,
}

impl HttpClient {
    /// Builds the client: TLS roots, the connector, and the fixed headers
    /// (environment variables are read here, once).
    /// `url` is the configured one, whose proxy setting is checked here.
    ///
    /// The extra roots and the CA environment variables are read and
    /// checked for every URL, so that a broken setting is refused whatever
    /// server it meets first; the TLS configuration (the Mozilla roots, the
    /// verifier, the session cache) is built for an `https` URL only.
    pub(crate) fn new(options: &HttpOptions, url: &Url) -> Result<Self, TransportError> {
        let fixed_headers = fixed_headers(options)?;
        options.proxy.check(url)?;
        let mut roots = options.extra_root_certificates.clone();
        roots.extend(options.ca_env.load()?);
        let connector = if url.scheme() == "https" {
            Connector::Tls(https_connector(
                tls_root_store(&roots)?,
                options.proxy.clone(),
                options.connect_timeout,
            )?)
        } else {
            if !roots.is_empty() {
                tls_root_store(&roots)?;
            }
            Connector::Plain(tcp_connector(
                options.proxy.clone(),
                options.connect_timeout,
            ))
        };
        Ok(HttpClient {
            pool: Pool::new(connector),
            fixed_headers,
            auth: options.auth.clone(),
            request_timeout: options.request_timeout,
            max_redirects: options.max_redirects,
            last_uri: Arc::new(Mutex::new(None)),
            unreachable: Arc::new(Mutex::new(None)),
            answered: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Sends one request and returns the response once its headers have
    /// arrived. Follows same-origin redirects (see [`redirect_target`]) and
    /// retries after the auth hook renews credentials (once after a 401, at
    /// most [`MAX_AUTH_RETRIES`] times in all). `headers` are
    /// added to the fixed ones and win over them.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<Incoming>, TransportError> {
        // Copied only when a redirect changes it.
        let mut url = Cow::Borrowed(url);
        let mut redirects = 0;
        // A 401 is retried once (a second one right after fresh credentials
        // is fatal: no auth loops); a 403 step-up challenge may follow it,
        // up to `MAX_AUTH_RETRIES` renewals per request in all (MCP
        // "Authorization" §Scope Challenge Handling).
        let mut retried_401 = false;
        let mut auth_retries = 0;
        let mut resends = 0;
        if let Some(unreachable) = mcp_proto::sync::lock(&self.unreachable).as_ref() {
            return Err(unreachable.error());
        }
        loop {
            let request = self.build(&method, &url, headers, body.clone()).await?;
            // Kept for the auth hook only (which credentials were refused);
            // never logged.
            let sent_authorization = self.auth.as_ref().and_then(|_| {
                request
                    .headers()
                    .get(AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            });
            let response = tokio::time::timeout(self.request_timeout, self.pool.request(request))
                .await
                .map_err(|_| {
                    TransportError::Io(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "no response within {} s",
                            self.request_timeout.as_secs_f64()
                        ),
                    ))
                })?
                .map_err(|e| self.request_error(e.as_ref(), &url))?;
            self.answered.store(true, Ordering::Relaxed);
            let status = response.status();
            if let Some(auth) = &self.auth
                && auth
                    .on_response(status.as_u16(), response.headers())
                    .await?
                && resends < MAX_RESENDS
            {
                resends += 1;
                drain(response.into_body()).await;
                continue;
            }
            if let Some(auth) = &self.auth
                && auth_retries < MAX_AUTH_RETRIES
                && !(retried_401 && status == StatusCode::UNAUTHORIZED)
                && is_auth_challenge(&response)
            {
                auth_retries += 1;
                retried_401 |= status == StatusCode::UNAUTHORIZED;
                let challenge = response
                    .headers()
                    .get(http::header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                if auth
                    .on_refusal(
                        status.as_u16(),
                        challenge.as_deref(),
                        sent_authorization.as_deref(),
                    )
                    .await?
                {
                    drain(response.into_body()).await;
                    continue;
                }
                // The hook gave up: the caller reports the refusal with its body.
                return Ok(response);
            }
            match redirect_target(&method, &url, &response)? {
                None => return Ok(response),
                Some(target) => {
                    if redirects >= self.max_redirects {
                        return Err(TransportError::TooManyRedirects {
                            limit: self.max_redirects,
                        });
                    }
                    redirects += 1;
                    drain(response.into_body()).await;
                    url = Cow::Owned(target);
                }
            }
        }
    }

    /// The error for a request that got no response: a TLS failure in
    /// words, else [`io_error`]. A TLS failure, or a server that could not
    /// be reached at all, is remembered while nothing has been answered.
    fn request_error(&self, error: &(dyn StdError + 'static), url: &Url) -> TransportError {
        let unreachable = if ProxyConnector::proxy_failure(error).is_none()
            && let Some(tls) = TlsError::find(error, url)
        {
            Unreachable::Tls(tls)
        } else {
            let error = io_error(error);
            if !error.is_unreachable() {
                return error;
            }
            Unreachable::NoConnection(error)
        };
        let error = unreachable.error();
        if !self.answered.load(Ordering::Relaxed) {
            *mcp_proto::sync::lock(&self.unreachable) = Some(unreachable);
        }
        error
    }

    /// Opens a spare connection to `url`'s origin for a request that will
    /// soon need a connection of its own ([`Pool::open_spare`]), once the
    /// first connection has been opened: within the request timeout, which
    /// bounds the connect of the request it goes beside. Nothing when the
    /// server is known to be unreachable.
    pub(crate) async fn open_spare(&self, url: &Url) {
        if mcp_proto::sync::lock(&self.unreachable).is_some() {
            return;
        }
        let Ok(uri) = self.request_uri(url) else {
            return;
        };
        self.pool.open_spare(&uri, self.request_timeout).await;
    }

    /// Builds one request with the fixed headers, `headers`, and the auth
    /// hook's headers (`Authorization`, and a DPoP proof where it adds one).
    async fn build(
        &self,
        method: &Method,
        url: &Url,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, TransportError> {
        let uri = self.request_uri(url)?;
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method.clone();
        *request.uri_mut() = uri;
        let out = request.headers_mut();
        if self.fixed_headers.is_empty() && headers.keys_len() == headers.len() {
            // No fixed headers and every name once (what the transports
            // send): the same map as the loop below builds, copied whole
            // (measured with callgrind: about 1,500 instructions less per
            // echo call over Streamable HTTP than inserting a POST's four
            // headers one by one).
            out.clone_from(headers);
        } else {
            out.clone_from(&self.fixed_headers);
            for (name, value) in headers {
                out.insert(name.clone(), value.clone());
            }
        }
        if let Some(auth) = &self.auth {
            let mut added = HeaderMap::new();
            auth.authorize_request(method, url, &mut added).await?;
            for (_, value) in added.iter_mut() {
                value.set_sensitive(true);
            }
            // Replaces what the fixed headers hold under the same names.
            out.extend(added);
        }
        Ok(request)
    }

    /// `url` as a request URI, from the last request's when it is the same.
    fn request_uri(&self, url: &Url) -> Result<http::Uri, TransportError> {
        let mut last = mcp_proto::sync::lock(&self.last_uri);
        if let Some((text, uri)) = last.as_ref()
            && text == url.as_str()
        {
            return Ok(uri.clone());
        }
        let uri: http::Uri = url
            .as_str()
            .parse()
            .map_err(|_| TransportError::Setup("the URL is not a valid HTTP URI".to_owned()))?;
        *last = Some((url.as_str().to_owned(), uri.clone()));
        Ok(uri)
    }
}

/// The connector the HTTP transports open their connections with, for a
/// host's own HTTP client (hyper-util's `Client`, say) that should reach
/// servers exactly as the transports do: TCP (no Nagle, `connect_timeout`),
/// directly or through an HTTP CONNECT tunnel as `proxy` says (the
/// tunnel's exchange bounded by `connect_timeout` too), then rustls (TLS
/// 1.2 and 1.3, on the process's crypto provider: the host's, else ring)
/// over `roots` for `https`, HTTP/1.1 only. Build `roots`
/// with [`tls_root_store`]. mcp-client-oauth's client to authorization servers is
/// one such client; [`ProxyConnector::proxy_failure`] finds a proxy's
/// failure in its errors.
///
/// ```
/// use mcp_transport::{ProxyConfig, https_connector, tls_root_store};
/// use std::time::Duration;
///
/// let connector = https_connector(
///     tls_root_store(&[])?,
///     ProxyConfig::all("http://proxy.internal:3128").no_proxy(".corp.example"),
///     Duration::from_secs(10),
/// )?;
/// # drop(connector);
/// # Ok::<(), mcp_transport::TransportError>(())
/// ```
pub fn https_connector(
    roots: RootCertStore,
    proxy: ProxyConfig,
    connect_timeout: Duration,
) -> Result<HttpsConnector<ProxyConnector>, TransportError> {
    let tls = tls_config_builder()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp_connector(proxy, connect_timeout)))
}

/// The TCP half of [`https_connector`]: no Nagle, `connect_timeout`,
/// directly or through `proxy`.
pub(crate) fn tcp_connector(proxy: ProxyConfig, connect_timeout: Duration) -> ProxyConnector {
    let mut http = HttpConnector::new();
    // The TLS layer handles `https`; the TCP connector must let it through.
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    ProxyConnector::new(http, proxy, connect_timeout)
}

/// A TLS client configuration's builder (TLS 1.2 and 1.3) on the process's
/// rustls crypto provider: the one the host installed with
/// `rustls::crypto::CryptoProvider::install_default`, else ring, the one
/// this crate enables, which rustls then installs for the process. A build
/// that also enables another rustls provider (aws-lc-rs) leaves rustls no
/// way to choose: unless the host installed one, that is a `Setup` error
/// saying so, never a panic out of the connect.
fn tls_config_builder()
-> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>, TransportError> {
    std::panic::catch_unwind(rustls::ClientConfig::builder).map_err(|_| {
        TransportError::Setup(
            "TLS configuration: several rustls crypto providers are compiled in and none is \
             installed; install one with rustls::crypto::CryptoProvider::install_default"
                .to_owned(),
        )
    })
}

/// Reads a body up to `limit` bytes. `Err(TooLarge)` when it is longer
/// (a `Content-Length` over the limit is refused before reading).
pub(crate) async fn read_body(
    response: Response<Incoming>,
    limit: usize,
) -> Result<Bytes, TransportError> {
    let too_large = TransportError::TooLarge { limit };
    let length = content_length(response.headers());
    if let Some(length) = length
        && length > limit as u64
    {
        return Err(too_large);
    }
    let mut body = response.into_body();
    // Sized from `Content-Length` (within the limit, checked above): growing
    // by doubling copied a 1 MiB body several times and held up to twice
    // its size at the peak.
    let mut out = BytesMut::with_capacity(length.map_or(0, |length| length as usize));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| io_error(&e))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(too_large);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out.freeze())
}

/// The start of an error response's body for [`TransportError::Http`]: at
/// most [`ERROR_TEXT_LIMIT`] bytes of it are read from the wire (the rest
/// is never read, so a 16 KiB traceback costs no more than its first
/// kilobyte), decoded lossily, trimmed and escaped onto one line; a body
/// that goes on is marked with what was left, counted from
/// `Content-Length` when the server sent one ([`text::cut_marker`]).
///
/// An HTML page (`text/html`, or a body that starts as one) is read up to
/// [`ERROR_BODY_LIMIT`] and reduced to its `<title>` and the text after it,
/// bounded to [`HTML_TEXT_LIMIT`] characters: a person reads "Error
/// response: Error code: 501 Message: Unsupported method ('POST')", not
/// the page's markup.
pub(crate) async fn error_body(response: Response<Incoming>) -> String {
    let length = content_length(response.headers());
    let html = media_type(response.headers()).as_deref() == Some("text/html");
    let limit = if html {
        ERROR_BODY_LIMIT
    } else {
        ERROR_TEXT_LIMIT
    };
    let mut body = response.into_body();
    let mut out =
        Vec::with_capacity(length.map_or(ERROR_TEXT_LIMIT, |l| l.min(limit as u64 + 1) as usize));
    // One byte past the limit tells "exactly the limit" from "more".
    while out.len() <= limit {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let room = limit + 1 - out.len();
                    out.extend_from_slice(&data[..room.min(data.len())]);
                }
            }
            Some(Err(_)) | None => break,
        }
    }
    if let Some(text) = html_text(&out, html) {
        return text;
    }
    bounded_body(&out[..out.len().min(ERROR_TEXT_LIMIT + 1)], length)
}

/// The most characters of an HTML error page's title and text that
/// [`error_body`] keeps.
pub(crate) const HTML_TEXT_LIMIT: usize = 200;

/// An HTML page's `<title>`, then `: ` and the page's text after it
/// outside `<script>` and `<style>` (a heading that only repeats the
/// title left out: a generic title such as "Error response" says nothing
/// without the message below it), or that text alone when there is no
/// title; with the common entities decoded, white space collapsed,
/// bounded to [`HTML_TEXT_LIMIT`] characters and escaped onto one line,
/// followed by `(an HTML page)`; `None` when `read` is not HTML (neither
/// `declared` as `text/html` nor starting with `<!DOCTYPE html` or
/// `<html`). A few lines rather than an HTML parser: only a person's hint
/// is wanted, never the document.
fn html_text(read: &[u8], declared: bool) -> Option<String> {
    let page = String::from_utf8_lossy(read);
    // ASCII lowercasing keeps every byte offset.
    let lower = page.to_ascii_lowercase();
    let start = lower.trim_start();
    if !declared && !start.starts_with("<!doctype html") && !start.starts_with("<html") {
        return None;
    }
    let element_text = |open: usize| -> Option<&str> {
        let from = open + lower[open..].find('>')? + 1;
        let to = lower[from..].find('<').map_or(page.len(), |end| from + end);
        Some(&page[from..to])
    };
    let title_at = lower.find("<title");
    let title = title_at
        .and_then(element_text)
        .map(collapse_html)
        .filter(|t| !t.is_empty());
    let text = match title {
        Some(title) => {
            // The text after the title element, past headings that repeat it.
            let after = title_at
                .and_then(|at| lower[at..].find("</title").map(|end| at + end))
                .unwrap_or(0);
            let folded = title.to_lowercase();
            let rest = texts(&page, &lower, after, HTML_TEXT_LIMIT, |chunk| {
                !folded.contains(&chunk.to_lowercase())
            });
            if rest.is_empty() {
                title
            } else {
                format!("{title}: {rest}")
            }
        }
        None => Some(texts(&page, &lower, 0, HTML_TEXT_LIMIT, |_| true))
            .filter(|text| !text.is_empty())?,
    };
    let mut shown: String = text.chars().take(HTML_TEXT_LIMIT).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    Some(format!(
        "{} (an HTML page)",
        text::escape(&shown, Lines::One)
    ))
}

/// The texts between tags from byte `from` on, outside `<script>` and
/// `<style>`, each collapsed, those `keep` accepts joined by one space,
/// until they are more than `limit` characters long.
fn texts(
    page: &str,
    lower: &str,
    from: usize,
    limit: usize,
    keep: impl Fn(&str) -> bool,
) -> String {
    let mut out = String::new();
    let push = |out: &mut String, text: String| {
        if !text.is_empty() && keep(&text) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&text);
        }
    };
    let mut at = from;
    // Bytes bound characters from above: counting is needed only past it.
    while at < page.len() && (out.len() <= limit || out.chars().count() <= limit) {
        let Some(open) = lower[at..].find('<').map(|i| at + i) else {
            push(&mut out, collapse_html(&page[at..]));
            break;
        };
        push(&mut out, collapse_html(&page[at..open]));
        let Some(close) = lower[open..].find('>').map(|i| open + i + 1) else {
            break;
        };
        at = close;
        for raw in ["<script", "<style"] {
            if lower[open..].starts_with(raw) {
                let end_tag = format!("</{}", &raw[1..]);
                at = lower[close..]
                    .find(&end_tag)
                    .map_or(page.len(), |i| close + i);
            }
        }
    }
    out
}

/// Text between tags: the common entities decoded, white space collapsed.
fn collapse_html(text: &str) -> String {
    let decoded = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`error_body`]'s text from the bytes read: `read` holds the whole body
/// when it is at most [`ERROR_TEXT_LIMIT`] bytes long, and one byte more
/// than that when the body goes on.
pub(crate) fn bounded_body(read: &[u8], length: Option<u64>) -> String {
    let cut = read.len() > ERROR_TEXT_LIMIT;
    let mut kept = &read[..read.len().min(ERROR_TEXT_LIMIT)];
    if cut {
        // Cut before a UTF-8 sequence the limit split, not into U+FFFD.
        if let Err(error) = std::str::from_utf8(kept)
            && error.error_len().is_none()
        {
            kept = &kept[..error.valid_up_to()];
        }
    }
    let decoded = String::from_utf8_lossy(kept);
    let trimmed = if cut {
        decoded.trim_start()
    } else {
        decoded.trim()
    };
    let mut shown = text::escape(trimmed, Lines::One).into_owned();
    if cut {
        let more = length.map(|length| length.saturating_sub(kept.len() as u64));
        shown.push_str(&text::cut_marker(more));
    }
    shown
}

/// The error for a non-success response: its status and the start of its body.
/// A 403 without a `WWW-Authenticate` challenge is
/// [`TransportError::Forbidden`]: a refusal of the request (its `Origin` or
/// `Host`), not of its credentials.
pub(crate) async fn http_error(response: Response<Incoming>) -> TransportError {
    let status = response.status().as_u16();
    let challenged = response
        .headers()
        .contains_key(http::header::WWW_AUTHENTICATE);
    let body = error_body(response).await;
    if status == 403 && !challenged {
        return TransportError::Forbidden { body };
    }
    TransportError::Http { status, body }
}

/// The error for a response whose media type this transport cannot read;
/// the named type is bounded.
pub(crate) fn unexpected_content_type(
    status: u16,
    media: Option<&str>,
    expected: &'static str,
) -> TransportError {
    let media = media.unwrap_or("none");
    let mut content_type: String = media
        .chars()
        .take(64)
        .flat_map(char::escape_default)
        .collect();
    if media.chars().count() > 64 {
        content_type.push_str("...");
    }
    TransportError::UnexpectedContentType {
        status,
        content_type,
        expected,
    }
}

/// Reads and drops up to [`DRAIN_LIMIT`] bytes of a body nobody needs, so
/// that its connection can be reused.
pub(crate) async fn drain(mut body: Incoming) {
    let mut seen = 0;
    while seen <= DRAIN_LIMIT {
        match body.frame().await {
            Some(Ok(frame)) => seen += frame.data_ref().map_or(0, Bytes::len),
            Some(Err(_)) | None => return,
        }
    }
}

/// The response's media type, lowercased and without parameters
/// (`text/event-stream; charset=utf-8` is `text/event-stream`).
pub(crate) fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    let media = value.split(';').next().unwrap_or_default().trim();
    (!media.is_empty()).then(|| media.to_ascii_lowercase())
}

/// Why a server could not be reached, as remembered until it answers.
enum Unreachable {
    /// The TLS handshake failed.
    Tls(TlsError),
    /// No connection was made ([`TransportError::is_unreachable`]).
    NoConnection(TransportError),
}

impl Unreachable {
    /// The error a request meets: the same every time.
    fn error(&self) -> TransportError {
        match self {
            Unreachable::Tls(tls) => tls_io_error(tls.clone()),
            Unreachable::NoConnection(error) => error.duplicate(),
        }
    }
}

/// A TLS failure as the transport reports it: an I/O error (the
/// connection could not be used) whose inner error is the [`TlsError`].
fn tls_io_error(tls: TlsError) -> TransportError {
    TransportError::Io(io::Error::new(io::ErrorKind::InvalidData, tls))
}

/// Converts a hyper or hyper-util error into an I/O error that keeps its
/// kind (connection refused, timed out, ...) and the whole cause chain as
/// text. The chain never holds the request's headers.
///
/// Response headers past [`MAX_RESPONSE_HEAD`] are
/// [`TransportError::HeadersTooLarge`] instead, and a proxy's failure is
/// [`TransportError::Proxy`].
pub(crate) fn io_error(error: &(dyn StdError + 'static)) -> TransportError {
    if let Some(proxy) = ProxyConnector::proxy_failure(error) {
        return proxy;
    }
    let mut current = Some(error);
    while let Some(cause) = current {
        if cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_parse_too_large)
        {
            return TransportError::HeadersTooLarge {
                limit: MAX_RESPONSE_HEAD,
            };
        }
        current = cause.source();
    }
    let mut kind = io::ErrorKind::Other;
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            kind = io.kind();
        }
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    TransportError::Io(io::Error::new(kind, text))
}

/// Validates a configured URL: `http` or `https`, a host, no user info
/// (credentials in URLs leak into logs and proxies) and no fragment (HTTP
/// never sends one, so a fragment is a mistake). Messages never repeat the
/// URL, which may hold credentials.
pub(crate) fn parse_url(text: &str) -> Result<Url, TransportError> {
    let url = Url::parse(text).map_err(|e| TransportError::Setup(format!("invalid URL: {e}")))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(TransportError::Setup(format!(
                "unsupported URL scheme {other:?}: use http or https"
            )));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TransportError::Setup(
            "the URL must not contain user info (user:password@); use headers or a bearer token"
                .to_owned(),
        ));
    }
    if url.fragment().is_some() {
        return Err(TransportError::Setup(
            "the URL must not contain a fragment (#...)".to_owned(),
        ));
    }
    if url.host().is_none() {
        return Err(TransportError::Setup("the URL has no host".to_owned()));
    }
    Ok(url)
}

/// Whether two URLs share scheme, host and port.
pub(crate) fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
}

/// Where a redirect response points, when it is one this client follows.
///
/// Policy (MCP "Transports" says nothing about redirects): only
/// same-origin redirects are followed, so credentials and session ids never
/// travel to another host. 307 and 308 keep the method and
/// body and are followed for every method (FastMCP redirects `/mcp` to
/// `/mcp/` this way). 301, 302 and 303 would turn a POST into a bodiless
/// GET, so they are followed for GET only; for other methods the response
/// is returned and becomes an HTTP error. A redirect to another origin, or
/// to a URL with user info, is a protocol error.
fn redirect_target(
    method: &Method,
    from: &Url,
    response: &Response<Incoming>,
) -> Result<Option<Url>, TransportError> {
    let status = response.status();
    let follows = match status {
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => true,
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER => {
            method == Method::GET
        }
        _ => false,
    };
    if !follows {
        return Ok(None);
    }
    let Some(location) = response.headers().get(LOCATION) else {
        return Ok(None);
    };
    let mut target = location
        .to_str()
        .ok()
        .and_then(|l| from.join(l).ok())
        .ok_or_else(|| {
            TransportError::Protocol(format!("HTTP {status} with an unusable Location header"))
        })?;
    target.set_fragment(None);
    if !same_origin(from, &target) {
        return Err(TransportError::RedirectRefused {
            reason: format!(
                "to another origin ({})",
                target.origin().ascii_serialization()
            ),
        });
    }
    if !target.username().is_empty() || target.password().is_some() {
        return Err(TransportError::RedirectRefused {
            reason: "to a URL with user info".to_owned(),
        });
    }
    Ok(Some(target))
}

/// 401, or 403 with a challenge (a step-up request for more scopes; a bare
/// 403 is more likely an `Origin` refusal: MCP "Transports", security
/// warning).
fn is_auth_challenge(response: &Response<Incoming>) -> bool {
    match response.status() {
        StatusCode::UNAUTHORIZED => true,
        StatusCode::FORBIDDEN => response
            .headers()
            .contains_key(http::header::WWW_AUTHENTICATE),
        _ => false,
    }
}

pub(crate) fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Static headers, then env headers, then the bearer token. Every value
/// read from the environment, and `Authorization`, is marked sensitive so
/// that hyper never prints it.
fn fixed_headers(options: &HttpOptions) -> Result<HeaderMap, TransportError> {
    let mut out = HeaderMap::new();
    for (name, value) in &options.headers {
        let name = header_name(name)?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| TransportError::Setup(format!("header {name} has an invalid value")))?;
        value.set_sensitive(name == AUTHORIZATION);
        out.insert(name, value);
    }
    for (name, var) in &options.env_headers {
        let name = header_name(name)?;
        let text = env_value(var)?;
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            TransportError::Setup(format!(
                "environment variable {var} does not hold a valid value for header {name}"
            ))
        })?;
        value.set_sensitive(true);
        out.insert(name, value);
    }
    if let Some(var) = &options.bearer_token_env {
        let token = env_value(var)?;
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
                TransportError::Setup(format!(
                    "environment variable {var} does not hold a valid bearer token"
                ))
            })?;
        value.set_sensitive(true);
        out.insert(AUTHORIZATION, value);
    }
    Ok(out)
}

fn header_name(name: &str) -> Result<HeaderName, TransportError> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| TransportError::Setup(format!("invalid header name {name:?}")))
}

/// Reads an environment variable for a credential. Errors name the
/// variable, never a value.
fn env_value(var: &str) -> Result<String, TransportError> {
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => Ok(value),
        Ok(_) => Err(TransportError::Setup(format!(
            "environment variable {var} is empty"
        ))),
        Err(std::env::VarError::NotPresent) => Err(TransportError::Setup(format!(
            "environment variable {var} is not set"
        ))),
        Err(std::env::VarError::NotUnicode(_)) => Err(TransportError::Setup(format!(
            "environment variable {var} is not valid Unicode"
        ))),
    }
}

/// The roots every HTTPS connection trusts: the webpki (Mozilla) roots plus
/// `extra_pem`, each a PEM text of one or more certificates (a private CA,
/// say). Public so that the OAuth client trusts exactly what the transport
/// trusts: an authorization server behind the same private CA as its MCP
/// server must verify too.
pub fn tls_root_store(extra_pem: &[String]) -> Result<RootCertStore, TransportError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for (index, pem) in extra_pem.iter().enumerate() {
        let mut found = 0;
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let cert = cert.map_err(|e| {
                TransportError::Setup(format!("extra root certificate #{index}: {e}"))
            })?;
            roots.add(cert).map_err(|e| {
                TransportError::Setup(format!("extra root certificate #{index}: {e}"))
            })?;
            found += 1;
        }
        if found == 0 {
            return Err(TransportError::Setup(format!(
                "extra root certificate #{index} holds no PEM certificate"
            )));
        }
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_error_pages_are_reduced_to_their_title_and_text() {
        let page = b"<!DOCTYPE html>\n<html><head><style>body { color: red }</style>\
            <title>502 Bad &amp; \n Gateway</title></head><body><h1>x</h1></body></html>";
        assert_eq!(
            html_text(page, false).as_deref(),
            Some("502 Bad & Gateway: x (an HTML page)")
        );
        let untitled = b"<html><head><script>var a = '<b>';</script></head>\
            <body>\n  <h1>Service \x1b[2J Unavailable</h1><p>later</p></body></html>";
        assert_eq!(
            html_text(untitled, true).as_deref(),
            Some("Service \\x1b[2J Unavailable later (an HTML page)")
        );
        // Python's `http.server` (a 501 for a POST): the message is below
        // a generic title and a heading that repeats it.
        let python = b"<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        \
            <meta charset=\"utf-8\">\n        <title>Error response</title>\n    </head>\n    \
            <body>\n        <h1>Error response</h1>\n        <p>Error code: 501</p>\n        \
            <p>Message: Unsupported method ('POST').</p>\n        \
            <p>Error code explanation: 501 - Server does not support this operation.</p>\n    \
            </body>\n</html>\n";
        assert_eq!(
            html_text(python, true).as_deref(),
            Some(
                "Error response: Error code: 501 Message: Unsupported method ('POST'). \
                 Error code explanation: 501 - Server does not support this operation. \
                 (an HTML page)"
            )
        );
        // nginx: a heading that repeats the title is left out.
        let nginx = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
            <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n\
            </body>\r\n</html>\r\n";
        assert_eq!(
            html_text(nginx, true).as_deref(),
            Some("502 Bad Gateway: nginx (an HTML page)")
        );
        // A long page is cut once the bound is reached.
        let long = format!(
            "<html><title>Oops</title><body>{}</body></html>",
            "<p>word</p>".repeat(10_000)
        );
        let shown = html_text(long.as_bytes(), true).unwrap();
        assert!(shown.starts_with("Oops: word word "), "{shown}");
        assert!(shown.ends_with("… (an HTML page)"), "{shown}");
        assert_eq!(
            shown.chars().count(),
            HTML_TEXT_LIMIT + "… (an HTML page)".chars().count(),
            "{shown}"
        );
        let long = format!("<html><title>{}</title></html>", "é".repeat(500));
        let shown = html_text(long.as_bytes(), false).unwrap();
        assert_eq!(shown.chars().filter(|&c| c == 'é').count(), HTML_TEXT_LIMIT);
        assert!(shown.ends_with("… (an HTML page)"), "{shown}");
        // Not HTML: left to the plain reading.
        assert_eq!(html_text(b"upstream timed out <sometimes>", false), None);
        assert_eq!(html_text(b"<html><body></body></html>", false), None);
    }

    #[test]
    fn urls_with_userinfo_fragment_or_other_schemes_are_refused() {
        for bad in [
            "http://user:pw@127.0.0.1/mcp",
            "http://user@127.0.0.1/mcp",
            "http://127.0.0.1/mcp#frag",
            "ftp://127.0.0.1/mcp",
            "file:///tmp/x",
            "not a url",
        ] {
            match parse_url(bad) {
                Err(TransportError::Setup(message)) => {
                    assert!(!message.contains("pw"), "{message}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(parse_url("https://example.com:8443/mcp?x=1").is_ok());
    }

    #[tokio::test]
    async fn a_requests_headers_win_over_the_fixed_ones_and_the_last_value_of_a_name_counts() {
        let url = parse_url("http://127.0.0.1:9/mcp").unwrap();
        let mut per_request = HeaderMap::new();
        per_request.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        per_request.insert("mcp-session-id", HeaderValue::from_static("s1"));
        let headers_of = |client: &HttpClient, headers: &HeaderMap| {
            let (client, headers, url) = (client.clone(), headers.clone(), url.clone());
            async move {
                client
                    .build(&Method::POST, &url, &headers, Bytes::new())
                    .await
                    .unwrap()
                    .headers()
                    .clone()
            }
        };

        // No fixed headers: the request's own, as given.
        let plain = HttpClient::new(&HttpOptions::new(url.as_str()), &url).unwrap();
        let sent = headers_of(&plain, &per_request).await;
        assert_eq!(sent, per_request);
        // A name given twice: its last value, as with fixed headers.
        let mut twice = per_request.clone();
        twice.append("mcp-session-id", HeaderValue::from_static("s2"));
        let sent = headers_of(&plain, &twice).await;
        assert_eq!(sent.len(), 2);
        assert_eq!(
            sent.get_all("mcp-session-id").iter().collect::<Vec<_>>(),
            ["s2"]
        );

        // Fixed headers: kept, except where the request names them too.
        let mut options = HttpOptions::new(url.as_str());
        options.headers = vec![
            ("x-team".to_owned(), "blue".to_owned()),
            ("content-type".to_owned(), "text/plain".to_owned()),
        ];
        let fixed = HttpClient::new(&options, &url).unwrap();
        let sent = headers_of(&fixed, &per_request).await;
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[CONTENT_TYPE], "application/json");
        assert_eq!(sent["x-team"], "blue");
        assert_eq!(sent["mcp-session-id"], "s1");
    }

    #[test]
    fn media_type_ignores_parameters_and_case() {
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("Text/Event-Stream; charset=utf-8"),
        );
        assert_eq!(media_type(&headers).as_deref(), Some("text/event-stream"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(""));
        assert_eq!(media_type(&headers), None);
    }
}

//! HTTP proxies: which proxy a server is reached through (curl's `*_proxy` and `no_proxy` variables) and the HTTP CONNECT tunnel through it.
//!
//! Every proxied connection is a CONNECT tunnel (RFC 9110 §9.3.6), for
//! `http://` servers too: the proxy relays bytes and never sees the
//! requests as requests, so the pool's connections, their origin-form
//! requests and the SSE streams on them are the same with and without a
//! proxy (a forwarding proxy may buffer a streamed response, which stalls
//! an SSE stream), and the proxy's credentials go once per connection.
//! The cost: a proxy that allows CONNECT to port 443 only (Squid's default
//! rule) refuses a tunnel to a plain-HTTP port, and that refusal is reported
//! as such, with the proxy's status.
//!
//! Written here rather than through hyper-util's `client-proxy` feature,
//! whose matcher reads upper-case variables before lower-case ones (curl
//! does the opposite), knows no ports in `no_proxy` and proxies loopback,
//! whose tunnel folds every refusal other than 407 into one error without
//! the status, and which brings in a crate this workspace does not have.

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use mcp_proto::text::{self, Lines};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower_service::Service;
use url::Url;

use crate::transport::TransportError;

/// The most bytes of a proxy's answer to CONNECT (status line and headers)
/// that are read.
const MAX_CONNECT_RESPONSE: usize = 8192;

/// The port of a proxy URL that names none (curl's default).
const DEFAULT_PROXY_PORT: u16 = 1080;

/// Which proxy, if any, each HTTP server is reached through.
///
/// Read from the environment with curl's rules by
/// [`from_env`](Self::from_env) (the [`HttpOptions`](crate::HttpOptions)
/// default), or given by the host:
///
/// - `https_proxy` / `HTTPS_PROXY`: the proxy for `https://` servers;
///   `http_proxy` / `HTTP_PROXY`: for `http://` servers; `all_proxy` /
///   `ALL_PROXY`: for either when its own variable is not set. When both
///   spellings of one variable are set, the lower-case one wins, as in
///   curl. Under CGI (`REQUEST_METHOD` is set) `HTTP_PROXY` is ignored,
///   since a CGI server puts a request's `Proxy:` header there ("httpoxy");
///   `http_proxy` is still read. An empty variable counts as unset.
/// - A proxy is an `http://` URL (a value without a scheme is taken as
///   one); its port defaults to 1080, as in curl. `user:password@` in it
///   is sent as `Proxy-Authorization: Basic` (percent-decoded first) and
///   appears in no log, error or `Debug` output. Other schemes (`https://`,
///   `socks5://`) are refused when a connection would use them.
/// - `no_proxy` / `NO_PROXY` (lower-case first): servers reached directly.
///   Comma-separated entries: `*` (every server); a host name, which
///   matches itself and its subdomains (`example.com` and `.example.com`
///   both match `example.com` and `mcp.example.com`, never
///   `badexample.com`); an IP address; a CIDR range (`10.0.0.0/8`,
///   `fd00::/8`); each optionally with a port (`example.com:8443`,
///   `[::1]:8080`), which then limits the entry to that port. Names match
///   without regard to case or a trailing dot. Entries that are none of
///   these are ignored.
/// - Loopback servers (`localhost` and `*.localhost`, 127.0.0.0/8, `::1`)
///   are never proxied unless [`proxy_loopback`](Self::proxy_loopback) asks
///   for it: a proxy elsewhere cannot reach this machine's loopback, and
///   local MCP servers (and tests) live there. curl proxies them; this is
///   the one deliberate difference.
///
/// Every proxied connection is an HTTP CONNECT tunnel, for `http://`
/// servers too (TLS to an `https://` server runs through it end to end).
///
/// ```
/// use mcp_transport::ProxyConfig;
///
/// let vars = [("HTTPS_PROXY", "http://proxy.internal:3128"), ("NO_PROXY", ".corp.example")];
/// let proxy = ProxyConfig::from_lookup(|name| {
///     vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
/// });
/// assert_eq!(
///     proxy.proxy_for("https://mcp.example.com/mcp").as_deref(),
///     Some("proxy.internal:3128")
/// );
/// assert_eq!(proxy.proxy_for("https://tools.corp.example/mcp"), None);
/// assert_eq!(proxy.proxy_for("http://mcp.example.com/mcp"), None);
/// assert_eq!(proxy.proxy_for("https://127.0.0.1:8080/mcp"), None);
/// ```
#[derive(Clone)]
pub struct ProxyConfig {
    /// For `http://` servers: the proxy, or why its setting is unusable.
    http: Option<Result<ProxyServer, String>>,
    /// For `https://` servers.
    https: Option<Result<ProxyServer, String>>,
    no_proxy: NoProxy,
    proxy_loopback: bool,
}

impl ProxyConfig {
    /// No proxy: every server is reached directly.
    pub fn none() -> Self {
        ProxyConfig {
            http: None,
            https: None,
            no_proxy: NoProxy::default(),
            proxy_loopback: false,
        }
    }

    /// The proxies the process environment names (see the type's docs for
    /// the variables and rules). Read now, once; a malformed proxy URL is
    /// reported by the connect that would use it, naming the variable.
    pub fn from_env() -> Self {
        ProxyConfig::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), with each variable's value asked
    /// of `lookup` instead of the process environment: for hosts that keep
    /// their own environment, and for tests.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let first = |names: &[&'static str]| {
            names.iter().find_map(|name| {
                lookup(name)
                    .filter(|value| !value.trim().is_empty())
                    .map(|value| (*name, value))
            })
        };
        let cgi = lookup("REQUEST_METHOD").is_some();
        let http_names: &[&'static str] = if cgi {
            &["http_proxy"]
        } else {
            &["http_proxy", "HTTP_PROXY"]
        };
        let all = first(&["all_proxy", "ALL_PROXY"]);
        let parse = |(name, value): (&'static str, String)| {
            ProxyServer::parse(&value, &format!("environment variable {name}"))
        };
        ProxyConfig {
            http: first(http_names).or_else(|| all.clone()).map(parse),
            https: first(&["https_proxy", "HTTPS_PROXY"]).or(all).map(parse),
            no_proxy: first(&["no_proxy", "NO_PROXY"])
                .map(|(_, rules)| NoProxy::parse(&rules))
                .unwrap_or_default(),
            proxy_loopback: false,
        }
    }

    /// One proxy (an `http://` URL, credentials allowed) for every server,
    /// `http://` and `https://`, as the host's own setting; no `no_proxy`
    /// rules until [`no_proxy`](Self::no_proxy) adds them. A malformed URL
    /// is reported by the connect that would use it.
    pub fn all(proxy_url: &str) -> Self {
        let server = ProxyServer::parse(proxy_url, "the proxy setting");
        ProxyConfig {
            http: Some(server.clone()),
            https: Some(server),
            ..ProxyConfig::none()
        }
    }

    /// Replaces the bypass rules with `rules`, in `no_proxy`'s syntax.
    pub fn no_proxy(mut self, rules: &str) -> Self {
        self.no_proxy = NoProxy::parse(rules);
        self
    }

    /// Whether loopback servers go through the proxy too. Default `false`:
    /// they are reached directly whatever the rules say.
    pub fn proxy_loopback(mut self, proxied: bool) -> Self {
        self.proxy_loopback = proxied;
        self
    }

    /// The proxy (`host:port`, never credentials) a connection to `url`
    /// goes through; `None` when it goes directly, and for a URL that is
    /// not an `http` or `https` one with a host. A proxy setting that
    /// cannot be used shows here as its `host:port` when it has one, and
    /// as `None` otherwise; the connect reports it.
    pub fn proxy_for(&self, url: &str) -> Option<String> {
        let url = Url::parse(url).ok()?;
        match self.route(url.scheme(), url.host_str()?, url.port_or_known_default()?) {
            Route::Proxy(server) => Some(server.endpoint()),
            Route::Direct | Route::Unusable(_) => None,
        }
    }

    /// A setup error when the proxy `url` would go through cannot be used
    /// (a malformed URL, a scheme other than `http`).
    pub(crate) fn check(&self, url: &Url) -> Result<(), TransportError> {
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Ok(());
        };
        match self.route(url.scheme(), host, port) {
            Route::Unusable(problem) => Err(TransportError::Proxy {
                proxy: String::new(),
                status: None,
                message: problem.to_owned(),
            }),
            Route::Direct | Route::Proxy(_) => Ok(()),
        }
    }

    /// How a connection to `host:port` over `scheme` is made.
    fn route(&self, scheme: &str, host: &str, port: u16) -> Route<'_> {
        let proxy = match scheme {
            "http" => self.http.as_ref(),
            "https" => self.https.as_ref(),
            _ => None,
        };
        let Some(proxy) = proxy else {
            return Route::Direct;
        };
        let host = normalize_host(host);
        if (!self.proxy_loopback && is_loopback(&host)) || self.no_proxy.matches(&host, port) {
            return Route::Direct;
        }
        match proxy {
            Ok(server) => Route::Proxy(server),
            Err(problem) => Route::Unusable(problem),
        }
    }
}

impl Default for ProxyConfig {
    /// [`ProxyConfig::from_env`].
    fn default() -> Self {
        ProxyConfig::from_env()
    }
}

impl fmt::Debug for ProxyConfig {
    /// Proxies as `host:port` and where they were set; never credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |proxy: &Option<Result<ProxyServer, String>>| match proxy {
            None => "none".to_owned(),
            Some(Ok(server)) => format!("{} (from {})", server.endpoint(), server.source),
            Some(Err(problem)) => format!("unusable: {problem}"),
        };
        f.debug_struct("ProxyConfig")
            .field("http", &shown(&self.http))
            .field("https", &shown(&self.https))
            .field("no_proxy", &self.no_proxy)
            .field("proxy_loopback", &self.proxy_loopback)
            .finish()
    }
}

enum Route<'a> {
    Direct,
    Proxy(&'a ProxyServer),
    Unusable(&'a str),
}

/// One proxy: where it is and the credentials to give it.
#[derive(Clone)]
struct ProxyServer {
    /// As in a URI's authority: IPv6 addresses in brackets.
    host: String,
    port: u16,
    /// `Basic <base64>`, when the URL had user info. Secret.
    authorization: Option<String>,
    /// Where it was set, for messages: `environment variable HTTPS_PROXY`.
    source: String,
}

impl ProxyServer {
    /// Parses a proxy URL. The problem text names `source`, never the
    /// value (which may hold a password).
    fn parse(value: &str, source: &str) -> Result<ProxyServer, String> {
        let value = value.trim();
        let with_scheme = if value.contains("://") {
            value.to_owned()
        } else {
            format!("http://{value}")
        };
        let url = Url::parse(&with_scheme)
            .map_err(|e| format!("{source} does not hold a usable proxy URL ({e})"))?;
        if url.scheme() != "http" {
            return Err(format!(
                "{source} names a {}:// proxy; only http:// proxies are supported",
                text::bound(&text::escape(url.scheme(), Lines::One), 16)
            ));
        }
        let Some(host) = url.host_str().filter(|host| !host.is_empty()) else {
            return Err(format!("{source} names a proxy URL without a host"));
        };
        let authorization = (!url.username().is_empty() || url.password().is_some()).then(|| {
            let credentials = format!(
                "{}:{}",
                percent_decode(url.username()),
                percent_decode(url.password().unwrap_or_default())
            );
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(credentials)
            )
        });
        Ok(ProxyServer {
            host: host.to_owned(),
            port: url.port().unwrap_or(DEFAULT_PROXY_PORT),
            authorization,
            source: source.to_owned(),
        })
    }

    fn endpoint(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl fmt::Debug for ProxyServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyServer")
            .field("endpoint", &self.endpoint())
            .field("credentials", &self.authorization.is_some())
            .field("source", &self.source)
            .finish()
    }
}

/// Decodes `%XX` escapes (user info in a URL is kept escaped); invalid
/// escapes stay as written and invalid UTF-8 becomes U+FFFD.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((high * 16 + low) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `no_proxy` rules.
#[derive(Clone, Debug, Default)]
struct NoProxy {
    /// `*`: nothing is proxied.
    all: bool,
    rules: Vec<Rule>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    pattern: Pattern,
    /// Only this port, when the entry named one.
    port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Pattern {
    /// A name and its subdomains, lower-case, without leading or trailing dots.
    Domain(String),
    /// An IP address, or a range of them: an address and a prefix length.
    Network(IpAddr, u8),
}

impl NoProxy {
    fn parse(rules: &str) -> NoProxy {
        let mut out = NoProxy::default();
        for entry in rules.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if entry == "*" {
                out.all = true;
            } else if let Some(rule) = Rule::parse(entry) {
                out.rules.push(rule);
            }
        }
        out
    }

    /// Whether a connection to `host` (normalized) on `port` bypasses the proxy.
    fn matches(&self, host: &str, port: u16) -> bool {
        if self.all {
            return true;
        }
        let ip = host.parse::<IpAddr>().ok();
        self.rules.iter().any(|rule| {
            rule.port.is_none_or(|p| p == port)
                && match (&rule.pattern, ip) {
                    (Pattern::Network(network, prefix), Some(ip)) => {
                        in_network(ip, *network, *prefix)
                    }
                    (Pattern::Domain(domain), None) => {
                        host == domain
                            || host
                                .strip_suffix(domain.as_str())
                                .is_some_and(|head| head.ends_with('.'))
                    }
                    _ => false,
                }
        })
    }
}

impl Rule {
    /// One `no_proxy` entry; `None` for one that is no rule.
    fn parse(entry: &str) -> Option<Rule> {
        let entry = entry.to_ascii_lowercase();
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let (inside, after) = rest.split_once(']')?;
            let port = match after {
                "" => None,
                after => Some(after.strip_prefix(':')?.parse().ok()?),
            };
            (inside.to_owned(), port)
        } else if entry.matches(':').count() == 1 {
            let (host, port) = entry.split_once(':')?;
            (host.to_owned(), Some(port.parse().ok()?))
        } else {
            (entry, None)
        };
        let pattern = if let Some((address, prefix)) = host.split_once('/') {
            let address: IpAddr = address.parse().ok()?;
            let prefix: u8 = prefix.parse().ok()?;
            if prefix > max_prefix(address) {
                return None;
            }
            Pattern::Network(address, prefix)
        } else if let Ok(address) = host.parse::<IpAddr>() {
            Pattern::Network(address, max_prefix(address))
        } else {
            let name = host.strip_prefix("*.").unwrap_or(&host);
            let name = name.trim_start_matches('.').trim_end_matches('.');
            if name.is_empty() || name.contains(['/', '*', ' ']) {
                return None;
            }
            Pattern::Domain(name.to_owned())
        };
        Some(Rule { pattern, port })
    }
}

fn max_prefix(address: IpAddr) -> u8 {
    if address.is_ipv4() { 32 } else { 128 }
}

/// Whether `ip` lies in `network/prefix` (same address family only).
fn in_network(ip: IpAddr, network: IpAddr, prefix: u8) -> bool {
    match (ip, network) {
        (IpAddr::V4(ip), IpAddr::V4(network)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(network) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(network)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(network) & mask
        }
        _ => false,
    }
}

/// A URI host as the rules compare it: lower-case, no IPv6 brackets, no
/// trailing dot.
fn normalize_host(host: &str) -> String {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// `localhost`, `*.localhost` (RFC 6761 §6.3), 127.0.0.0/8, `::1`, and
/// IPv4-mapped 127.0.0.0/8.
fn is_loopback(host: &str) -> bool {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|ip| ip.is_loopback())
        }
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

/// Why a proxied connection failed; found in the connector's error chain
/// and turned into [`TransportError::Proxy`].
#[derive(Debug)]
pub(crate) struct ProxyError {
    /// `host:port` of the proxy.
    pub(crate) proxy: String,
    /// The proxy's answer to CONNECT, when it refused.
    pub(crate) status: Option<u16>,
    /// The whole message: names the proxy, where it was set, the target
    /// and what went wrong. No credentials, bounded proxy text.
    pub(crate) message: String,
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProxyError {}

impl ProxyError {
    fn new(server: &ProxyServer, status: Option<u16>, what: String) -> ProxyError {
        ProxyError {
            proxy: server.endpoint(),
            status,
            message: format!(
                "proxy {} (from {}) {what}",
                server.endpoint(),
                server.source
            ),
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The TCP side of the HTTP transports' connector: a direct TCP
/// connection, or an HTTP CONNECT tunnel through the proxy a
/// [`ProxyConfig`] picks for the destination (RFC 9110 §9.3.6). TLS, when
/// the server is `https`, runs over either: [`https_connector`](crate::https_connector)
/// wraps this in rustls and is what a host's own HTTP client (an OAuth
/// client, say) uses to go where the transport goes, the same way.
///
/// A failure of the proxy (it cannot be reached, refuses or drops the
/// tunnel, or its setting is unusable) is an error in the connect's error
/// chain that [`proxy_failure`](Self::proxy_failure) finds.
#[derive(Clone)]
pub struct ProxyConnector {
    tcp: HttpConnector,
    proxy: Arc<ProxyConfig>,
    /// Bounds the CONNECT exchange (the TCP connect has its own bound).
    handshake_timeout: Duration,
}

impl fmt::Debug for ProxyConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConnector")
            .field("proxy", &self.proxy)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl ProxyConnector {
    pub(crate) fn new(
        tcp: HttpConnector,
        proxy: ProxyConfig,
        handshake_timeout: Duration,
    ) -> ProxyConnector {
        ProxyConnector {
            tcp,
            proxy: Arc::new(proxy),
            handshake_timeout,
        }
    }

    /// The proxy's failure in `error`'s chain (the error of a connect
    /// through this connector, or of a request of a hyper client using
    /// it), as [`TransportError::Proxy`]: the proxy's `host:port`, its
    /// status when it refused, and a message naming the proxy, where it was
    /// set and the target, never its credentials. `None` when the proxy is
    /// not what failed.
    pub fn proxy_failure(error: &(dyn std::error::Error + 'static)) -> Option<TransportError> {
        let mut current = Some(error);
        while let Some(cause) = current {
            if let Some(proxy) = cause.downcast_ref::<ProxyError>() {
                return Some(TransportError::Proxy {
                    proxy: proxy.proxy.clone(),
                    status: proxy.status,
                    message: proxy.message.clone(),
                });
            }
            current = cause.source();
        }
        None
    }
}

impl Service<Uri> for ProxyConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let scheme = dst.scheme_str().unwrap_or("http");
        let host = dst.host().unwrap_or_default();
        let port = dst
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        let server = match self.proxy.route(scheme, host, port) {
            Route::Direct => {
                let connecting = self.tcp.call(dst);
                return Box::pin(async move { connecting.await.map_err(Into::into) });
            }
            Route::Unusable(problem) => {
                let error = ProxyError {
                    proxy: String::new(),
                    status: None,
                    message: problem.to_owned(),
                };
                return Box::pin(async move { Err(error.into()) });
            }
            Route::Proxy(server) => server.clone(),
        };
        let target = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let proxy_uri = Uri::builder()
            .scheme("http")
            .authority(server.endpoint())
            .path_and_query("/")
            .build();
        let connecting = proxy_uri.map(|uri| self.tcp.call(uri));
        let timeout = self.handshake_timeout;
        Box::pin(async move {
            let connecting = connecting
                .map_err(|_| ProxyError::new(&server, None, "is not a valid address".to_owned()))?;
            let io = connecting.await.map_err(|error| {
                ProxyError::new(
                    &server,
                    None,
                    format!("could not be reached: {}", error_chain(&error)),
                )
            })?;
            let mut stream = io.into_inner();
            match tokio::time::timeout(timeout, tunnel(&mut stream, &server, &target)).await {
                Ok(Ok(())) => Ok(TokioIo::new(stream)),
                Ok(Err(error)) => Err(error.into()),
                Err(_) => Err(ProxyError::new(
                    &server,
                    None,
                    format!(
                        "did not answer CONNECT to {target} within {} s",
                        timeout.as_secs_f64()
                    ),
                )
                .into()),
            }
        })
    }
}

/// An error and its causes as one line of text.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Asks the proxy on `stream` for a tunnel to `target` (`host:port`) and
/// reads its answer; on success the stream is the tunnel. Exactly the
/// answer's head is read, so no byte of the tunnel is taken.
async fn tunnel(
    stream: &mut TcpStream,
    server: &ProxyServer,
    target: &str,
) -> Result<(), ProxyError> {
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(authorization) = &server.authorization {
        request.push_str("Proxy-Authorization: ");
        request.push_str(authorization);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    let failed = |what: String| ProxyError::new(server, None, what);
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| failed(format!("failed while asking for a tunnel to {target}: {e}")))?;
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_CONNECT_RESPONSE {
            return Err(failed(format!(
                "answered CONNECT to {target} with more than {MAX_CONNECT_RESPONSE} bytes of headers"
            )));
        }
        match stream.read(&mut byte).await {
            Ok(0) => {
                return Err(failed(format!(
                    "closed the connection before answering CONNECT to {target}"
                )));
            }
            Ok(_) => head.push(byte[0]),
            Err(e) => {
                return Err(failed(format!(
                    "failed while answering CONNECT to {target}: {e}"
                )));
            }
        }
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.trim_end().splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let status = parts
        .next()
        .filter(|code| code.len() == 3)
        .and_then(|code| code.parse::<u16>().ok());
    let (true, Some(status)) = (version.starts_with("HTTP/1."), status) else {
        return Err(failed(format!(
            "answered CONNECT to {target} with something that is not HTTP/1.1"
        )));
    };
    if (200..300).contains(&status) {
        return Ok(());
    }
    let reason = text::bound(
        &text::escape(parts.next().unwrap_or_default(), Lines::One),
        64,
    )
    .into_owned();
    let hint = match status {
        407 if server.authorization.is_some() => " (it refused the credentials in the proxy URL)",
        407 => " (it wants credentials: user:password@ in the proxy URL)",
        _ => "",
    };
    Err(ProxyError::new(
        server,
        Some(status),
        format!(
            "refused CONNECT to {target} with HTTP {status}{}{hint}",
            if reason.is_empty() {
                String::new()
            } else {
                format!(" {reason}")
            }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> ProxyConfig {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        ProxyConfig::from_lookup(move |name| {
            vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn lower_case_wins_and_all_proxy_fills_in() {
        let c = config(&[
            ("http_proxy", "http://lower:1"),
            ("HTTP_PROXY", "http://upper:2"),
            ("HTTPS_PROXY", "http://secure:3"),
            ("ALL_PROXY", "http://all:4"),
        ]);
        assert_eq!(c.proxy_for("http://a.example/").as_deref(), Some("lower:1"));
        assert_eq!(
            c.proxy_for("https://a.example/").as_deref(),
            Some("secure:3")
        );
        let c = config(&[("HTTP_PROXY", "upper:2"), ("all_proxy", "http://all:4")]);
        assert_eq!(c.proxy_for("http://a.example/").as_deref(), Some("upper:2"));
        assert_eq!(c.proxy_for("https://a.example/").as_deref(), Some("all:4"));
        // An empty variable is unset; the default port is curl's 1080.
        let c = config(&[("https_proxy", " "), ("HTTPS_PROXY", "proxy")]);
        assert_eq!(
            c.proxy_for("https://a.example/").as_deref(),
            Some("proxy:1080")
        );
        assert_eq!(c.proxy_for("http://a.example/"), None);
    }

    #[test]
    fn cgi_ignores_upper_case_http_proxy_only() {
        let c = config(&[("REQUEST_METHOD", "GET"), ("HTTP_PROXY", "http://evil:1")]);
        assert_eq!(c.proxy_for("http://a.example/"), None);
        let c = config(&[("REQUEST_METHOD", "GET"), ("http_proxy", "http://ok:1")]);
        assert_eq!(c.proxy_for("http://a.example/").as_deref(), Some("ok:1"));
    }

    #[test]
    fn no_proxy_names_suffixes_addresses_ranges_and_ports() {
        let c = ProxyConfig::all("http://p:3128").no_proxy(
            " example.com, .corp.test ,10.0.0.0/8, 192.168.1.7, fd00::/8, api.test:8443, [2001:db8::1]:80, *.wild.test, Trailing.Test. , junk/x, 1.2.3.4/33",
        );
        let via = |url: &str| c.proxy_for(url);
        for direct in [
            "http://example.com/",
            "https://mcp.Example.COM/",
            "https://example.com./",
            "https://a.b.corp.test/",
            "https://corp.test/",
            "http://10.200.3.4/",
            "http://192.168.1.7:9000/",
            "http://[fd12::5]/",
            "https://api.test:8443/",
            "http://[2001:db8::1]/",
            "https://x.wild.test/",
            "https://trailing.test/",
        ] {
            assert_eq!(via(direct), None, "{direct}");
        }
        for proxied in [
            "http://badexample.com/",
            "http://example.com.evil/",
            "http://11.0.0.1/",
            "http://192.168.1.8/",
            "http://[fe80::1]/",
            "https://api.test/",
            "https://api.test:443/",
            "https://[2001:db8::1]/",
            "https://1.2.3.4/",
        ] {
            assert_eq!(via(proxied).as_deref(), Some("p:3128"), "{proxied}");
        }
        let star = ProxyConfig::all("http://p:3128").no_proxy("foo, *");
        assert_eq!(star.proxy_for("https://anything.example/"), None);
    }

    #[test]
    fn loopback_is_direct_unless_the_host_asks() {
        let c = ProxyConfig::all("http://p:3128");
        for url in [
            "http://127.0.0.1:5000/",
            "http://127.9.9.9/",
            "https://[::1]:8443/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://mcp.localhost/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            assert_eq!(c.proxy_for(url), None, "{url}");
        }
        assert_eq!(
            c.proxy_for("http://localhost.example/").as_deref(),
            Some("p:3128")
        );
        let c = c.proxy_loopback(true);
        assert_eq!(
            c.proxy_for("http://127.0.0.1:5000/").as_deref(),
            Some("p:3128")
        );
        // The rules still apply to loopback the host asked to proxy.
        let c = c.no_proxy("127.0.0.1:5000");
        assert_eq!(c.proxy_for("http://127.0.0.1:5000/"), None);
        assert_eq!(
            c.proxy_for("http://127.0.0.1:5001/").as_deref(),
            Some("p:3128")
        );
    }

    #[test]
    fn credentials_are_basic_and_never_shown() {
        let c = config(&[("HTTPS_PROXY", "http://al%40ice:s3cr%3At@proxy.test:8080")]);
        let Some(Ok(server)) = &c.https else {
            panic!("{c:?}");
        };
        // base64("al@ice:s3cr:t")
        assert_eq!(
            server.authorization.as_deref(),
            Some("Basic YWxAaWNlOnMzY3I6dA==")
        );
        let shown = format!("{c:?} {server:?}");
        assert!(
            !shown.contains("s3cr") && !shown.contains("YWxA"),
            "{shown}"
        );
        assert!(shown.contains("proxy.test:8080"), "{shown}");
    }

    #[test]
    fn unusable_proxies_are_named_by_variable_without_their_value() {
        for value in [
            "socks5://user:hunter2@p:1080",
            "https://user:hunter2@p:443",
            "http://user:hunter2@",
        ] {
            let c = config(&[("HTTPS_PROXY", value)]);
            let url = Url::parse("https://mcp.example/").unwrap();
            let Err(TransportError::Proxy { message, .. }) = c.check(&url) else {
                panic!("{value}");
            };
            assert!(message.contains("HTTPS_PROXY"), "{message}");
            assert!(!message.contains("hunter2"), "{message}");
            assert!(!format!("{c:?}").contains("hunter2"));
            // A server that bypasses the proxy does not care.
            assert!(c.check(&Url::parse("http://mcp.example/").unwrap()).is_ok());
        }
    }

    #[test]
    fn cidr_edges() {
        assert!(in_network(
            "1.2.3.4".parse().unwrap(),
            "9.9.9.9".parse().unwrap(),
            0
        ));
        assert!(!in_network(
            "1.2.3.4".parse().unwrap(),
            "1.2.3.5".parse().unwrap(),
            32
        ));
        assert!(in_network(
            "1.2.3.4".parse().unwrap(),
            "1.2.3.5".parse().unwrap(),
            31
        ));
        assert!(!in_network(
            "::1".parse().unwrap(),
            "0.0.0.0".parse().unwrap(),
            0
        ));
    }
}

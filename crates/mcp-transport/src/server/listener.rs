//! A bounded HTTP/1.1 accept loop: a header-read timeout that also closes idle keep-alive connections, and a connection cap under `RLIMIT_NOFILE` that evicts connections still waiting for their first request, then refuses with 503.
//!
//! A local server (a Streamable HTTP endpoint, a settings page) must keep
//! answering while other peers misbehave. Without bounds, a peer that
//! opens connections and sends its request head a byte at a time holds
//! one descriptor each for as long as it likes; a thousand of them
//! exhaust the process's descriptors and every `accept` fails, so the
//! legitimate client is never served. [`Listener::serve`] bounds that:
//!
//! - **Header read**: a request head must arrive whole within
//!   [`ListenerOptions::header_read_timeout`] (default
//!   [`HEADER_READ_TIMEOUT`], 10 s) or the connection is closed. hyper
//!   starts this timer whenever the connection waits for a head, after
//!   each response as well as at accept, so it is also the keep-alive
//!   idle timeout: a connection that sends no next request within it is
//!   closed. A response being streamed (a Server-Sent Events stream) is
//!   not waiting for a head, and is not cut.
//! - **Descriptors**: at the first [`Listener::new`] the soft
//!   `RLIMIT_NOFILE` is raised to the hard limit, and the listener keeps
//!   at most [`connection_cap`] of it (three quarters, at most
//!   [`MAX_CONNECTIONS`]) for its connections, leaving the rest to the
//!   process's own files, pipes and child processes.
//! - **At the cap**, a new connection takes the place of the oldest one
//!   that has not yet sent a whole request head (the slow ones): that one
//!   is closed. When every connection has begun a request, the new one is
//!   answered `503 Service Unavailable` directly and closed, without
//!   reading anything from it.
//! - An `accept` that fails for lack of descriptors or memory is retried
//!   after [`ACCEPT_BACKOFF`], not in a busy loop.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// How long a request head may take to arrive, and how long a kept-alive
/// connection may wait for its next request: 10 s.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The most connections a listener keeps, whatever the descriptor limit:
/// 4,096 (a local server's clients are few; more is an attack).
pub const MAX_CONNECTIONS: usize = 4096;

/// How long an `accept` that failed for lack of descriptors or memory
/// waits before the next: 50 ms.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The answer to a connection over the cap.
const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Content-Length: 39\r\n\
Retry-After: 1\r\n\
X-Content-Type-Options: nosniff\r\n\
Referrer-Policy: no-referrer\r\n\
Cache-Control: no-store\r\n\
Connection: close\r\n\
\r\n\
too many connections: try again shortly\n";

/// The bounds of a [`Listener`].
#[derive(Clone, Debug, derive_setters::Setters)]
#[non_exhaustive]
pub struct ListenerOptions {
    /// How long a request head may take, and a kept-alive connection may
    /// wait for its next request. Default [`HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// The most connections kept at once. Default `None`: [`connection_cap`]
    /// of the descriptor limit.
    pub max_connections: Option<usize>,
}

impl Default for ListenerOptions {
    fn default() -> Self {
        ListenerOptions {
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_connections: None,
        }
    }
}

/// A TCP listener served as HTTP/1.1 within bounds (see the module docs).
#[derive(Debug)]
pub struct Listener {
    tcp: TcpListener,
    header_read_timeout: Duration,
    registry: Arc<Registry>,
}

impl Listener {
    /// Serves `tcp` with `options`' bounds. Raises the process's soft
    /// descriptor limit to its hard limit first (once per process is
    /// enough; again is harmless).
    pub fn new(tcp: TcpListener, options: ListenerOptions) -> Listener {
        let cap = options
            .max_connections
            .unwrap_or_else(|| connection_cap(raise_fd_limit()))
            .max(1);
        Listener {
            tcp,
            header_read_timeout: options.header_read_timeout,
            registry: Arc::new(Registry {
                cap,
                state: Mutex::default(),
            }),
        }
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// The most connections kept at once.
    pub fn max_connections(&self) -> usize {
        self.registry.cap
    }

    /// Accepts connections until the future is dropped, answering each
    /// request with `handle`. Each connection runs on a task of its own.
    pub async fn serve<H, F, B>(self, handle: H)
    where
        H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
        F: Future<Output = Response<B>> + Send + 'static,
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        loop {
            let stream = match self.tcp.accept().await {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // A failed accept concerns that one connection (the
                    // peer gave up), or the process is out of descriptors
                    // or memory for a moment: then wait rather than spin.
                    if out_of_resources(&error) {
                        tracing::warn!("accept failed: {error}; retrying shortly");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                    continue;
                }
            };
            let Some(slot) = Registry::admit(&self.registry) else {
                refuse(stream);
                continue;
            };
            // Answers are small and awaited: sent at once, not held back to
            // be coalesced (Nagle).
            let _ = stream.set_nodelay(true);
            tokio::spawn(serve_connection(
                stream,
                slot,
                self.header_read_timeout,
                handle.clone(),
            ));
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; the soft limit then
/// in force (`None`: unlimited, or not known on this platform).
pub fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current != limit.maximum {
            let raised = Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            // Some systems refuse the hard limit itself (macOS above
            // OPEN_MAX): the limit in force is then the old one.
            if setrlimit(Resource::Nofile, raised).is_ok() {
                return raised.current;
            }
        }
        limit.current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The connections a listener keeps under a soft descriptor limit of
/// `fd_limit`: three quarters of it (the rest is the process's own), at
/// most [`MAX_CONNECTIONS`], at least one.
pub fn connection_cap(fd_limit: Option<u64>) -> usize {
    match fd_limit {
        Some(limit) => usize::try_from(limit - limit / 4)
            .unwrap_or(MAX_CONNECTIONS)
            .clamp(1, MAX_CONNECTIONS),
        None => MAX_CONNECTIONS,
    }
}

/// Whether an `accept` failed for lack of descriptors or memory.
fn out_of_resources(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        use rustix::io::Errno;
        let errno = Errno::from_io_error(error);
        [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
            .iter()
            .any(|e| Some(*e) == errno)
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// Answers a connection over the cap with 503 and closes it. The socket
/// is new, so its send buffer takes the short answer without waiting.
fn refuse(stream: TcpStream) {
    let _ = stream.try_write(REFUSAL);
}

/// Serves one connection until it ends, times out, or is evicted.
async fn serve_connection<H, F, B>(stream: TcpStream, slot: Slot, timeout: Duration, handle: H)
where
    H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = Response<B>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let slot = Arc::new(slot);
    let begun = Arc::clone(&slot);
    let service = hyper::service::service_fn(move |request| {
        begun.begin();
        let response = handle(request);
        async move { Ok::<_, Infallible>(response.await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        // A peer going away mid-response, or timing out, is its own business.
        _ = connection => {}
        () = slot.evicted.notified() => {}
    }
}

/// The connections a listener keeps.
#[derive(Debug)]
struct Registry {
    cap: usize,
    state: Mutex<RegistryState>,
}

#[derive(Debug, Default)]
struct RegistryState {
    /// Connections open (counted until their task ends).
    open: usize,
    /// The number the next connection gets.
    next: u64,
    /// Connections that have not yet sent a whole request head, oldest
    /// first, each with what closes it.
    waiting: BTreeMap<u64, Arc<Notify>>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a new connection: free, or taken from the oldest
    /// connection still waiting for its first request head (which is
    /// closed); `None` when every connection has begun a request.
    fn admit(this: &Arc<Registry>) -> Option<Slot> {
        let mut state = this.lock();
        if state.open >= this.cap {
            let (_, oldest) = state.waiting.pop_first()?;
            // Its task ends at once and gives its place back; until then
            // the count is one over, which the descriptor headroom covers.
            oldest.notify_one();
        }
        state.open += 1;
        let id = state.next;
        state.next += 1;
        let evicted = Arc::new(Notify::new());
        state.waiting.insert(id, Arc::clone(&evicted));
        Some(Slot {
            id,
            evicted,
            begun: AtomicBool::new(false),
            registry: Arc::clone(this),
        })
    }
}

/// One connection's place in its listener's [`Registry`].
struct Slot {
    id: u64,
    evicted: Arc<Notify>,
    begun: AtomicBool,
    registry: Arc<Registry>,
}

impl Slot {
    /// The connection sent a whole request head: it is a client, no
    /// longer a candidate for eviction.
    fn begin(&self) {
        if !self.begun.swap(true, Ordering::AcqRel) {
            self.registry.lock().waiting.remove(&self.id);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.registry.lock();
        state.open -= 1;
        state.waiting.remove(&self.id);
    }
}

#[cfg(test)]
mod tests;

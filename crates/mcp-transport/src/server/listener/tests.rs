//! The listener's bounds against real loopback sockets: header-read and keep-alive timeouts, eviction at the cap, 503 when every connection is busy.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::*;

/// How long a test waits for something the listener must do.
const WITHIN: Duration = Duration::from_secs(10);

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/// A listener with `options` answering `/` with `ok` and `/hang` never,
/// reporting each `/hang` on the channel returned.
async fn start(options: ListenerOptions) -> (SocketAddr, mpsc::UnboundedReceiver<()>) {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let listener = Listener::new(tcp, options);
    let address = listener.local_addr().unwrap();
    let (hung, hangs) = mpsc::unbounded_channel();
    tokio::spawn(listener.serve(move |request: Request<Incoming>| {
        let hung = hung.clone();
        async move {
            if request.uri().path() == "/hang" {
                let _ = hung.send(());
                std::future::pending::<()>().await;
            }
            Response::new(Full::new(Bytes::from_static(b"ok")))
        }
    }));
    (address, hangs)
}

/// Reads until `stream` has sent something that ends with `end`, or ends.
async fn read_until(stream: &mut TcpStream, end: &[u8]) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(WITHIN, stream.read(&mut buf))
            .await
            .expect("the listener answers in time")
            .unwrap_or(0);
        seen.extend_from_slice(&buf[..n]);
        if n == 0 || seen.ends_with(end) {
            return seen;
        }
    }
}

/// Whether the listener closes `stream` (nothing more to read) in time.
async fn closed(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(WITHIN, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn a_head_that_does_not_arrive_in_time_closes_the_connection() {
    let options = ListenerOptions::default().header_read_timeout(Duration::from_millis(200));
    let (address, _) = start(options).await;
    let mut slow = TcpStream::connect(address).await.unwrap();
    slow.write_all(b"G").await.unwrap();
    assert!(
        closed(&mut slow).await,
        "a partial head keeps its connection"
    );
    // A whole request is answered.
    let mut client = TcpStream::connect(address).await.unwrap();
    client.write_all(GET).await.unwrap();
    let answer = read_until(&mut client, b"ok").await;
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_the_timeout() {
    let options = ListenerOptions::default().header_read_timeout(Duration::from_millis(300));
    let (address, _) = start(options).await;
    let mut client = TcpStream::connect(address).await.unwrap();
    client.write_all(GET).await.unwrap();
    let answer = read_until(&mut client, b"ok").await;
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    // Kept alive, then idle: closed.
    assert!(closed(&mut client).await, "an idle connection stays open");
}

#[tokio::test]
async fn at_the_cap_the_oldest_connection_without_a_request_makes_room() {
    let (address, _) = start(ListenerOptions::default().max_connections(Some(2))).await;
    let mut oldest = TcpStream::connect(address).await.unwrap();
    oldest.write_all(b"G").await.unwrap();
    let mut second = TcpStream::connect(address).await.unwrap();
    second.write_all(b"G").await.unwrap();
    // A third: accepted after the two (the backlog is first in, first
    // out), it takes the oldest one's place and is answered.
    let mut client = TcpStream::connect(address).await.unwrap();
    client.write_all(GET).await.unwrap();
    let answer = read_until(&mut client, b"ok").await;
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    assert!(
        closed(&mut oldest).await,
        "the oldest slow connection stays"
    );
    // The second one kept its place: the rest of its request is answered.
    second.write_all(&GET[1..]).await.unwrap();
    let answer = read_until(&mut second, b"ok").await;
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
}

#[tokio::test]
async fn when_every_connection_has_a_request_a_new_one_gets_503() {
    let (address, mut hangs) = start(ListenerOptions::default().max_connections(Some(1))).await;
    let mut busy = TcpStream::connect(address).await.unwrap();
    busy.write_all(b"GET /hang HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    tokio::time::timeout(WITHIN, hangs.recv())
        .await
        .expect("the request reaches the handler");
    let mut refused = TcpStream::connect(address).await.unwrap();
    let answer = read_until(&mut refused, b"\n").await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("Connection: close"), "{answer}");
    assert!(closed(&mut refused).await);
}

#[test]
fn the_cap_leaves_a_quarter_of_the_descriptors_and_stays_under_the_ceiling() {
    assert_eq!(connection_cap(Some(1024)), 768);
    assert_eq!(connection_cap(Some(1_048_576)), MAX_CONNECTIONS);
    assert_eq!(connection_cap(None), MAX_CONNECTIONS);
    assert_eq!(connection_cap(Some(1)), 1);
}

#[cfg(unix)]
#[test]
fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
    let raised = raise_fd_limit();
    let now = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    assert_eq!(raised, now.current);
    assert_eq!(now.current, now.maximum);
}

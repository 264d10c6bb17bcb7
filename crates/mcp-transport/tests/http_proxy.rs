//! HTTP transports through a real CONNECT proxy on 127.0.0.1 (tunnelling to real MCP servers on 127.0.0.1), its refusals, loopback's bypass, and the `SSL_CERT_FILE`/`SSL_CERT_DIR` opt-in.
#![cfg(feature = "http")]

mod http_support;

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use http::Method;
use http_support::*;
use mcp_proto::RequestId;
use mcp_transport::{CaEnv, HttpOptions, HttpTransport, ProxyConfig, Transport, TransportError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One CONNECT request as the proxy saw it.
#[derive(Clone, Debug)]
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    /// The first bytes the client sent through the tunnel.
    first_tunnel_byte: Option<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The request as the proxy read it, `Proxy-Authorization` redacted.
    fn transcript(&self) -> String {
        let mut out = format!("{}\n", self.request_line);
        for (name, value) in &self.headers {
            let value = if name.eq_ignore_ascii_case("proxy-authorization") {
                "Basic [redacted]"
            } else {
                value
            };
            out.push_str(&format!("{name}: {value}\n"));
        }
        out
    }
}

/// What the test proxy does with a CONNECT.
#[derive(Clone, Copy)]
enum Answer {
    /// `200 Connection established`, then splices bytes both ways.
    Tunnel,
    /// This status line and `Content-Length: 0`, then closes.
    Refuse(&'static str),
    /// Closes without a word.
    Hang,
}

/// A CONNECT proxy on 127.0.0.1 that records every request it reads.
struct TestProxy {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestProxy {
    async fn start(answer: Answer) -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                tokio::spawn(serve(client, answer, log));
            }
        });
        TestProxy { port, seen, task }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn url(&self, userinfo: &str) -> String {
        format!("http://{userinfo}127.0.0.1:{}", self.port)
    }
}

async fn serve(mut client: TcpStream, answer: Answer, log: Arc<Mutex<Vec<Seen>>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8(head).unwrap();
    let mut lines = text.trim_end().split("\r\n");
    let request_line = lines.next().unwrap().to_owned();
    let headers = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    let mut seen = Seen {
        request_line: request_line.clone(),
        headers,
        first_tunnel_byte: None,
    };
    match answer {
        Answer::Refuse(status) => {
            log.lock().unwrap().push(seen);
            let reply = format!(
                "HTTP/1.1 {status}\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n"
            );
            let _ = client.write_all(reply.as_bytes()).await;
        }
        Answer::Hang => log.lock().unwrap().push(seen),
        Answer::Tunnel => {
            let target = request_line
                .strip_prefix("CONNECT ")
                .and_then(|rest| rest.strip_suffix(" HTTP/1.1"))
                .unwrap()
                .to_owned();
            // Never beyond loopback.
            assert!(target.starts_with("127.0.0.1:"), "{target}");
            let mut server = TcpStream::connect(&target).await.unwrap();
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .unwrap();
            let mut first = [0u8; 1];
            if client.read_exact(&mut first).await.is_err() {
                log.lock().unwrap().push(seen);
                return;
            }
            seen.first_tunnel_byte = Some(first[0]);
            log.lock().unwrap().push(seen);
            server.write_all(&first).await.unwrap();
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        }
    }
}

/// A proxy setting as the environment would give it.
fn env_proxy(vars: &[(&'static str, String)]) -> ProxyConfig {
    let vars = vars.to_vec();
    ProxyConfig::from_lookup(move |name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    })
}

fn basic_auth(user_pass: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_pass)
    )
}

#[tokio::test]
async fn an_http_server_through_a_connect_tunnel_with_proxy_credentials() {
    let server = TestServer::start(|r| async move { basic_reply(&r) }).await;
    let proxy = TestProxy::start(Answer::Tunnel).await;
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.proxy =
        env_proxy(&[("http_proxy", proxy.url("mcp-user:p%40ss@"))]).proxy_loopback(true);
    let t = connect(options).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    close_and_expect_nothing_else(&t).await;

    let seen = proxy.seen();
    assert!(!seen.is_empty());
    let target = format!("127.0.0.1:{}", server.addr.port());
    for s in &seen {
        assert_eq!(s.request_line, format!("CONNECT {target} HTTP/1.1"));
        assert_eq!(s.header("host"), Some(target.as_str()));
        // Percent-decoded before encoding: the password is `p@ss`.
        assert_eq!(
            s.header("proxy-authorization"),
            Some(basic_auth("mcp-user:p@ss").as_str())
        );
        // Plain HTTP inside the tunnel: the first request's method.
        assert!(
            matches!(s.first_tunnel_byte, Some(b'P' | b'G' | b'D')),
            "{s:?}"
        );
    }
    // The server got origin-form requests for its own authority, and never
    // the proxy's credentials.
    for r in server.requests() {
        assert_eq!(r.path, "/mcp");
        assert_eq!(r.header("host"), Some(target.as_str()));
        assert_eq!(r.header("proxy-authorization"), None);
    }
    eprintln!("the proxy saw:\n{}", seen[0].transcript());
}

#[tokio::test]
async fn an_https_server_through_the_tunnel_with_tls_end_to_end() {
    let (ca_pem, acceptor) = test_ca_and_server_certificate();
    let server = TestServer::start_tls(|r| async move { basic_reply(&r) }, acceptor).await;
    let proxy = TestProxy::start(Answer::Tunnel).await;
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.extra_root_certificates = vec![ca_pem];
    options.proxy = env_proxy(&[("HTTPS_PROXY", proxy.url(""))]).proxy_loopback(true);
    let t = connect(options).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    close_and_expect_nothing_else(&t).await;

    let seen = proxy.seen();
    assert!(!seen.is_empty());
    for s in &seen {
        assert_eq!(
            s.request_line,
            format!("CONNECT 127.0.0.1:{} HTTP/1.1", server.addr.port())
        );
        assert_eq!(s.header("proxy-authorization"), None);
        // A TLS handshake record: the proxy relays ciphertext only.
        assert_eq!(s.first_tunnel_byte, Some(0x16), "{s:?}");
    }
    assert!(server.requests().iter().any(|r| r.is_post_of("initialize")));
    eprintln!("the proxy saw:\n{}", seen[0].transcript());
}

#[tokio::test]
async fn refusals_name_the_proxy_and_status_and_never_the_credentials() {
    for status in [
        "407 Proxy Authentication Required",
        "403 Forbidden",
        "502 Bad Gateway",
    ] {
        let proxy = TestProxy::start(Answer::Refuse(status)).await;
        let mut options = HttpOptions::new("http://127.0.0.1:9/mcp");
        options.proxy =
            env_proxy(&[("ALL_PROXY", proxy.url("alice:hunter2@"))]).proxy_loopback(true);
        let t = connect(options).await;
        t.send(initialize(1)).await.unwrap();
        let (id, error) = next_undelivered(&t).await;
        assert_eq!(id, Some(RequestId::Number(1)));
        let TransportError::Proxy {
            proxy: endpoint,
            status: Some(code),
            ..
        } = &error
        else {
            panic!("{error:?}");
        };
        let endpoint_text = format!("127.0.0.1:{}", proxy.port);
        assert_eq!(endpoint, &endpoint_text);
        assert_eq!(Some(*code), status[..3].parse().ok());
        let shown = format!("{error} {error:?}");
        assert!(shown.contains(&endpoint_text), "{shown}");
        assert!(shown.contains(&format!("HTTP {status}")), "{shown}");
        assert!(shown.contains("ALL_PROXY"), "{shown}");
        assert!(shown.contains("CONNECT to 127.0.0.1:9"), "{shown}");
        let secret = basic_auth("alice:hunter2");
        for leak in ["hunter2", "alice", &secret["Basic ".len()..]] {
            assert!(!shown.contains(leak), "{leak} in {shown}");
        }
        if status.starts_with("407") {
            assert!(shown.contains("refused the credentials"), "{shown}");
            eprintln!("the transport said: {error}");
        }
        // The credentials were offered to the proxy, once.
        let seen = proxy.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].header("proxy-authorization"), Some(secret.as_str()));
    }
}

#[tokio::test]
async fn a_hostile_reason_phrase_is_escaped_and_bounded() {
    let proxy = TestProxy::start(Answer::Refuse(
        "502 \x1b[2J\x1b[31mEVERYTHING IS FINE, nothing to see here, keep scrolling, \
         this reason phrase goes on far past any reasonable length for one",
    ))
    .await;
    let mut options = HttpOptions::new("https://127.0.0.1:9/mcp");
    options.proxy = ProxyConfig::all(&proxy.url("")).proxy_loopback(true);
    let t = connect(options).await;
    t.send(initialize(1)).await.unwrap();
    let (_, error) = next_undelivered(&t).await;
    let TransportError::Proxy {
        status: Some(502),
        message,
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert!(!message.contains('\x1b'), "{message}");
    assert!(message.contains("\\x1b[2J"), "{message}");
    assert!(!message.contains("reasonable length"), "{message}");
    assert!(message.len() < 300, "{message}");
}

#[tokio::test]
async fn a_proxy_that_is_down_or_hangs_up_is_a_proxy_error_not_an_unreachable_server() {
    // A port nobody listens on: bound, then released.
    let free = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let down = format!("http://127.0.0.1:{}", free.local_addr().unwrap().port());
    drop(free);
    let closing = TestProxy::start(Answer::Hang).await;
    for (proxy_url, expected) in [
        (down, "could not be reached"),
        (
            closing.url(""),
            "closed the connection before answering CONNECT",
        ),
    ] {
        let mut options = HttpOptions::new("http://127.0.0.1:9/mcp");
        options.proxy = ProxyConfig::all(&proxy_url).proxy_loopback(true);
        let t = connect(options).await;
        t.send(initialize(1)).await.unwrap();
        match next_undelivered(&t).await {
            (
                _,
                TransportError::Proxy {
                    proxy,
                    status: None,
                    message,
                },
            ) => {
                assert!(proxy_url.ends_with(&proxy), "{proxy}");
                assert!(message.contains(expected), "{message}");
                assert!(message.contains(&proxy), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn loopback_and_no_proxy_servers_bypass_the_proxy() {
    let server = TestServer::start(|r| async move { basic_reply(&r) }).await;
    let proxy = TestProxy::start(Answer::Refuse("403 Forbidden")).await;
    let through = proxy.url("");
    // By default, loopback is direct whatever the variables say; with
    // loopback proxied, `no_proxy` rules (here with the server's port)
    // still send it directly.
    let configs = [
        env_proxy(&[("http_proxy", through.clone())]),
        env_proxy(&[("ALL_PROXY", through.clone()), ("NO_PROXY", "*".to_owned())]),
        env_proxy(&[
            ("HTTP_PROXY", through.clone()),
            (
                "no_proxy",
                format!("example.com, 127.0.0.1:{}", server.addr.port()),
            ),
        ])
        .proxy_loopback(true),
        env_proxy(&[
            ("HTTP_PROXY", through.clone()),
            ("no_proxy", "127.0.0.0/8".to_owned()),
        ])
        .proxy_loopback(true),
    ];
    for config in configs {
        let mut options = HttpOptions::new(server.url("/mcp"));
        assert_eq!(config.proxy_for(&options.url), None, "{config:?}");
        options.proxy = config;
        let t = connect(options).await;
        handshake(&t).await;
        close_and_expect_nothing_else(&t).await;
    }
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());
    // The same server through the proxy when loopback is proxied and no
    // rule matches: the refusing proxy is met.
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.proxy = env_proxy(&[
        ("HTTP_PROXY", through),
        ("no_proxy", format!("127.0.0.1:{}", server.addr.port() ^ 1)),
    ])
    .proxy_loopback(true);
    let t = connect(options).await;
    t.send(initialize(1)).await.unwrap();
    let (_, error) = next_undelivered(&t).await;
    assert!(
        matches!(
            error,
            TransportError::Proxy {
                status: Some(403),
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(proxy.seen().len(), 1);
}

#[tokio::test]
async fn an_unusable_proxy_setting_fails_the_connect_naming_the_variable() {
    let mut options = HttpOptions::new("https://127.0.0.1:9/mcp");
    options.proxy = env_proxy(&[(
        "https_proxy",
        "socks5://bob:hunter2@127.0.0.1:1080".to_owned(),
    )])
    .proxy_loopback(true);
    match HttpTransport::connect(options).await {
        Err(TransportError::Proxy { message, .. }) => {
            assert!(
                message.contains("https_proxy") && message.contains("socks5"),
                "{message}"
            );
            assert!(!message.contains("hunter2"), "{message}");
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("connected through a socks5 proxy setting"),
    }
}

#[tokio::test]
async fn ssl_cert_file_and_dir_add_roots_when_the_host_opts_in() {
    let (ca_pem, acceptor) = test_ca_and_server_certificate();
    let server = TestServer::start_tls(|r| async move { basic_reply(&r) }, acceptor).await;
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle.pem");
    std::fs::write(&bundle, &ca_pem).unwrap();
    let hashed = dir.path().join("hashed");
    std::fs::create_dir(&hashed).unwrap();
    std::fs::write(hashed.join("ab12cd34.0"), &ca_pem).unwrap();
    std::fs::write(hashed.join("README"), "not a certificate").unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();

    let ca_env = |vars: Vec<(&'static str, String)>| {
        CaEnv::from_lookup(move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        })
    };
    let dirs = std::env::join_paths([&empty, &hashed]).unwrap();
    for trusted in [
        ca_env(vec![("SSL_CERT_FILE", bundle.display().to_string())]),
        ca_env(vec![("SSL_CERT_DIR", dirs.to_string_lossy().into_owned())]),
    ] {
        let mut options = HttpOptions::new(server.url("/mcp"));
        options.ca_env = trusted;
        let t = connect(options).await;
        handshake(&t).await;
        close_and_expect_nothing_else(&t).await;
    }

    // Without the opt-in, the private CA is not trusted.
    let t = connect(HttpOptions::new(server.url("/mcp"))).await;
    t.send(initialize(1)).await.unwrap();
    match next_undelivered(&t).await {
        (_, TransportError::Io(error)) => {
            assert!(error.to_string().contains("certificate"), "{error}");
        }
        other => panic!("{other:?}"),
    }

    let missing = dir.path().join("missing.pem");
    for (env, var, path) in [
        (
            ca_env(vec![("SSL_CERT_FILE", missing.display().to_string())]),
            "SSL_CERT_FILE",
            missing.display().to_string(),
        ),
        (
            ca_env(vec![(
                "SSL_CERT_FILE",
                hashed.join("README").display().to_string(),
            )]),
            "SSL_CERT_FILE",
            hashed.join("README").display().to_string(),
        ),
        (
            ca_env(vec![("SSL_CERT_DIR", missing.display().to_string())]),
            "SSL_CERT_DIR",
            missing.display().to_string(),
        ),
        (
            ca_env(vec![("SSL_CERT_DIR", empty.display().to_string())]),
            "SSL_CERT_DIR",
            empty.display().to_string(),
        ),
    ] {
        let mut options = HttpOptions::new(server.url("/mcp"));
        options.ca_env = env;
        match HttpTransport::connect(options).await {
            Err(TransportError::Setup(message)) => {
                assert!(
                    message.contains(var) && message.contains(&path),
                    "{message}"
                );
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("connected with {var}={path}"),
        }
    }
}

/// The default Streamable HTTP server, also answering GET with 405.
fn basic_reply(r: &Recorded) -> Reply {
    if r.method == Method::GET {
        return Reply::status(405);
    }
    basic(r)
}

/// A private CA made now (its PEM) and a TLS acceptor serving a
/// certificate it signed for 127.0.0.1.
fn test_ca_and_server_certificate() -> (String, tokio_rustls::TlsAcceptor) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    use tokio_rustls::rustls;
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca, &ca_key)
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        leaf_key.serialize_der(),
    ));
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    (ca.pem(), tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

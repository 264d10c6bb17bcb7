//! HTTP transport credentials, URL rules, redirects, HTTPS and the auth hook, against real hyper servers on 127.0.0.1.
#![cfg(feature = "http")]

mod http_support;

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use http::Method;
use http_support::*;
use mcp_proto::RequestId;
use mcp_transport::{
    AuthProvider, HttpOptions, HttpProtocol, HttpTransport, Transport, TransportError,
};

/// Environment variables cargo sets for every test process. Tests cannot set
/// variables themselves (`set_var` is unsafe, and unsafe code is forbidden),
/// so they read credentials from these.
const TOKEN_VAR: &str = "CARGO_PKG_NAME";
const HEADER_VAR: &str = "CARGO_PKG_VERSION";

fn env(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests through `cargo test`, which sets it")
    })
}

#[tokio::test]
async fn bearer_token_static_and_env_headers_go_on_every_request() {
    let server = TestServer::start(|r| async move {
        if r.method == Method::GET {
            return Reply::status(405);
        }
        basic(&r)
    })
    .await;
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.bearer_token_env = Some(TOKEN_VAR.to_owned());
    options.headers = vec![
        ("X-Static".to_owned(), "one".to_owned()),
        ("X-Overridden".to_owned(), "static".to_owned()),
    ];
    options.env_headers = vec![
        ("X-From-Env".to_owned(), HEADER_VAR.to_owned()),
        ("X-Overridden".to_owned(), HEADER_VAR.to_owned()),
    ];
    let t = connect(options).await;
    handshake(&t).await;
    server.wait_for(|r| r.method == Method::GET).await;
    close_and_expect_nothing_else(&t).await;
    let requests = server.requests();
    assert!(requests.len() >= 4, "{requests:?}");
    let bearer = format!("Bearer {}", env(TOKEN_VAR));
    for r in &requests {
        assert_eq!(r.header("authorization"), Some(bearer.as_str()), "{r:?}");
        assert_eq!(r.header("x-static"), Some("one"));
        assert_eq!(r.header("x-from-env"), Some(env(HEADER_VAR).as_str()));
        assert_eq!(r.header("x-overridden"), Some(env(HEADER_VAR).as_str()));
    }
}

#[tokio::test]
async fn a_missing_variable_fails_connect_naming_the_variable() {
    const MISSING: &str = "MCP_TRANSPORT_TEST_SURELY_UNSET_7Q2Z";
    let mut bearer = HttpOptions::new("http://127.0.0.1:9/mcp");
    bearer.bearer_token_env = Some(MISSING.to_owned());
    let mut header = HttpOptions::new("http://127.0.0.1:9/mcp");
    header.env_headers = vec![("X-Key".to_owned(), MISSING.to_owned())];
    for options in [bearer, header] {
        match HttpTransport::connect(options).await {
            Err(TransportError::Setup(message)) => {
                assert!(message.contains(MISSING), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    // An invalid header is refused without echoing its value.
    let mut bad_name = HttpOptions::new("http://127.0.0.1:9/mcp");
    bad_name.headers = vec![("Bad Header".to_owned(), "secret-value".to_owned())];
    match HttpTransport::connect(bad_name).await {
        Err(TransportError::Setup(message)) => assert!(!message.contains("secret-value")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn urls_with_user_info_a_fragment_or_another_scheme_are_refused() {
    for url in [
        "http://user:secret@127.0.0.1:9/mcp",
        "http://user@127.0.0.1:9/mcp",
        "http://127.0.0.1:9/mcp#part",
        "ws://127.0.0.1:9/mcp",
        "file:///tmp/mcp",
        "/relative/mcp",
    ] {
        match HttpTransport::connect(HttpOptions::new(url)).await {
            Err(TransportError::Setup(message)) => {
                assert!(!message.contains("secret"), "{url}: {message}");
            }
            other => panic!("{url}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn same_origin_redirects_are_followed_and_cross_origin_ones_refused() {
    let port = Arc::new(Mutex::new(0u16));
    let port_for_server = Arc::clone(&port);
    let server = TestServer::start(move |r| {
        let port = *port_for_server.lock().unwrap();
        async move {
            match r.path.as_str() {
                // FastMCP's mount point redirects `/mcp` to `/mcp/` with 307.
                "/mcp" => Reply::status(307).header("location", "/mcp/"),
                "/mcp/" => basic(&r),
                // `localhost` is another origin than `127.0.0.1`.
                "/elsewhere" => {
                    Reply::status(308).header("location", &format!("http://localhost:{port}/mcp/"))
                }
                "/loop" => Reply::status(307).header("location", "/loop"),
                _ => Reply::status(404),
            }
        }
    })
    .await;
    *port.lock().unwrap() = server.addr.port();

    let mut options = HttpOptions::new(server.url("/mcp"));
    options.protocol = HttpProtocol::Streamable;
    let t = connect(options).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    close_and_expect_nothing_else(&t).await;
    let posts = server
        .requests()
        .iter()
        .filter(|r| r.path == "/mcp/" && r.method == Method::POST)
        .count();
    assert_eq!(posts, 3);

    for path in ["/elsewhere", "/loop"] {
        let mut options = HttpOptions::new(server.url(path));
        options.protocol = HttpProtocol::Streamable;
        let t = connect(options).await;
        t.send(initialize(1)).await.unwrap();
        match (path, next_undelivered(&t).await) {
            (
                "/elsewhere",
                (Some(RequestId::Number(1)), TransportError::RedirectRefused { reason }),
            ) => assert!(reason.contains("another origin"), "{reason}"),
            (
                "/loop",
                (Some(RequestId::Number(1)), TransportError::TooManyRedirects { limit: 5 }),
            ) => {}
            other => panic!("{other:?}"),
        }
    }
    // The cross-origin target was never contacted: every request that
    // reached the server named 127.0.0.1.
    for r in server.requests() {
        assert!(r.header("host").unwrap().starts_with("127.0.0.1:"), "{r:?}");
    }
}

/// A certificate for 127.0.0.1 and localhost, made now, and a TLS acceptor
/// serving it.
fn test_certificate() -> (String, tokio_rustls::TlsAcceptor) {
    use tokio_rustls::rustls;
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        certified.key_pair.serialize_der(),
    ));
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    (
        certified.cert.pem(),
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    )
}

#[tokio::test]
async fn https_with_a_certificate_trusted_through_the_options() {
    let (pem, acceptor) = test_certificate();
    let server = TestServer::start_tls(|r| async move { basic(&r) }, acceptor).await;
    assert!(server.url("/mcp").starts_with("https://127.0.0.1:"));

    let mut options = HttpOptions::new(server.url("/mcp"));
    options.extra_root_certificates = vec![pem];
    let t = connect(options).await;
    handshake(&t).await;
    t.send(request(2, "tools/list")).await.unwrap();
    assert!(is_response_to(&next_message(&t).await, 2));
    close_and_expect_nothing_else(&t).await;

    // The default roots do not trust a self-signed certificate.
    let t = connect(HttpOptions::new(server.url("/mcp"))).await;
    t.send(initialize(1)).await.unwrap();
    match next_undelivered(&t).await {
        (Some(RequestId::Number(1)), TransportError::Io(error)) => {
            assert!(error.to_string().contains("certificate"), "{error}");
        }
        other => panic!("{other:?}"),
    }

    let mut options = HttpOptions::new(server.url("/mcp"));
    options.extra_root_certificates = vec!["not a certificate".to_owned()];
    assert!(matches!(
        HttpTransport::connect(options).await,
        Err(TransportError::Setup(_))
    ));
}

/// Hands out `Bearer t<n>`; every refusal moves to the next token.
#[derive(Debug, Default)]
struct RotatingTokens {
    generation: AtomicUsize,
    challenges: Mutex<Vec<(u16, Option<String>)>>,
}

#[async_trait]
impl AuthProvider for RotatingTokens {
    async fn authorization(&self) -> Result<Option<String>, TransportError> {
        Ok(Some(format!(
            "Bearer t{}",
            self.generation.load(Ordering::SeqCst)
        )))
    }

    async fn on_unauthorized(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, TransportError> {
        self.challenges
            .lock()
            .unwrap()
            .push((status, www_authenticate.map(str::to_owned)));
        self.generation.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }
}

#[tokio::test]
async fn auth_hook_renews_credentials_and_the_request_is_retried_once() {
    const CHALLENGE: &str =
        r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource""#;
    let server = TestServer::start(|r| async move {
        if r.header("authorization") != Some("Bearer t1") {
            return Reply::status(401)
                .header("www-authenticate", CHALLENGE)
                .body("unauthorized");
        }
        basic(&r)
    })
    .await;
    let auth = Arc::new(RotatingTokens::default());
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.auth = Some(Arc::clone(&auth) as Arc<dyn AuthProvider>);
    let t = connect(options).await;
    handshake(&t).await;
    close_and_expect_nothing_else(&t).await;
    assert_eq!(
        *auth.challenges.lock().unwrap(),
        [(401, Some(CHALLENGE.to_owned()))]
    );

    // A server that refuses every token: one retry, then the refusal.
    let server = TestServer::start(|_| async move {
        Reply::status(401)
            .header("www-authenticate", "Bearer")
            .body("still no")
    })
    .await;
    let auth = Arc::new(RotatingTokens::default());
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.auth = Some(Arc::clone(&auth) as Arc<dyn AuthProvider>);
    let t = connect(options).await;
    t.send(initialize(1)).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(1)));
    assert_eq!(error.http_status(), Some(401));
    assert_eq!(server.requests().len(), 2);
    // 401 is not a fallback signal.
    assert_eq!(t.active_protocol(), Some(HttpProtocol::Streamable));
}

#[tokio::test]
async fn auth_hook_step_up_after_401_is_retried_at_most_three_times_in_all() {
    const STEP_UP: &str = r#"Bearer error="insufficient_scope", scope="read write""#;
    // t0: 401; t1: 403 step-up; t2: accepted.
    let server = TestServer::start(|r| async move {
        match r.header("authorization") {
            Some("Bearer t2") => basic(&r),
            Some("Bearer t1") => Reply::status(403)
                .header("www-authenticate", STEP_UP)
                .body("more scope"),
            _ => Reply::status(401)
                .header("www-authenticate", "Bearer")
                .body("who are you"),
        }
    })
    .await;
    let auth = Arc::new(RotatingTokens::default());
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.auth = Some(Arc::clone(&auth) as Arc<dyn AuthProvider>);
    let t = connect(options).await;
    handshake(&t).await;
    close_and_expect_nothing_else(&t).await;
    assert_eq!(
        *auth.challenges.lock().unwrap(),
        [
            (401, Some("Bearer".to_owned())),
            (403, Some(STEP_UP.to_owned()))
        ]
    );

    // A server that always wants more scope: three renewals, then the refusal.
    let server = TestServer::start(|_| async move {
        Reply::status(403)
            .header("www-authenticate", STEP_UP)
            .body("never enough")
    })
    .await;
    let auth = Arc::new(RotatingTokens::default());
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.auth = Some(Arc::clone(&auth) as Arc<dyn AuthProvider>);
    let t = connect(options).await;
    t.send(initialize(1)).await.unwrap();
    let (id, error) = next_undelivered(&t).await;
    assert_eq!(id, Some(RequestId::Number(1)));
    assert_eq!(error.http_status(), Some(403));
    assert_eq!(server.requests().len(), 4);
    assert_eq!(auth.challenges.lock().unwrap().len(), 3);
}

/// Records the `Authorization` each refused request carried.
#[derive(Debug, Default)]
struct RecordsRefusedCredentials {
    inner: RotatingTokens,
    sent: Mutex<Vec<Option<String>>>,
}

#[async_trait]
impl AuthProvider for RecordsRefusedCredentials {
    async fn authorization(&self) -> Result<Option<String>, TransportError> {
        self.inner.authorization().await
    }

    async fn on_unauthorized(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, TransportError> {
        self.inner.on_unauthorized(status, www_authenticate).await
    }

    async fn on_refusal(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
        sent_authorization: Option<&str>,
    ) -> Result<bool, TransportError> {
        self.sent
            .lock()
            .unwrap()
            .push(sent_authorization.map(str::to_owned));
        self.on_unauthorized(status, www_authenticate).await
    }
}

#[tokio::test]
async fn auth_hook_hears_which_credentials_were_refused() {
    let server = TestServer::start(|r| async move {
        if r.header("authorization") != Some("Bearer t1") {
            return Reply::status(401)
                .header("www-authenticate", "Bearer")
                .body("no");
        }
        basic(&r)
    })
    .await;
    let auth = Arc::new(RecordsRefusedCredentials::default());
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.auth = Some(Arc::clone(&auth) as Arc<dyn AuthProvider>);
    let t = connect(options).await;
    handshake(&t).await;
    close_and_expect_nothing_else(&t).await;
    assert_eq!(*auth.sent.lock().unwrap(), [Some("Bearer t0".to_owned())]);
}

/// Signs every request itself (method and URL) and resends once a
/// response hands it a new nonce, as a DPoP client does.
#[derive(Debug, Default)]
struct SignsEachRequest {
    nonce: Mutex<Option<String>>,
    signed: AtomicUsize,
    refusals: AtomicUsize,
}

#[async_trait]
impl AuthProvider for SignsEachRequest {
    async fn authorization(&self) -> Result<Option<String>, TransportError> {
        unreachable!("authorize_request is overridden")
    }

    async fn authorize_request(
        &self,
        method: &Method,
        url: &url::Url,
        headers: &mut http::HeaderMap,
    ) -> Result<(), TransportError> {
        let n = self.signed.fetch_add(1, Ordering::SeqCst);
        headers.insert("authorization", "Proof key-1".parse().unwrap());
        let nonce = self.nonce.lock().unwrap().clone().unwrap_or_default();
        let proof = format!("{method} {} #{n} nonce={nonce}", url.path());
        headers.insert("x-proof", proof.parse().unwrap());
        Ok(())
    }

    async fn on_response(
        &self,
        status: u16,
        headers: &http::HeaderMap,
    ) -> Result<bool, TransportError> {
        let Some(nonce) = headers.get("x-new-nonce") else {
            return Ok(false);
        };
        *self.nonce.lock().unwrap() = Some(nonce.to_str().unwrap().to_owned());
        Ok(status == 401)
    }

    async fn on_unauthorized(
        &self,
        _status: u16,
        _www_authenticate: Option<&str>,
    ) -> Result<bool, TransportError> {
        self.refusals.fetch_add(1, Ordering::SeqCst);
        Ok(false)
    }
}

#[tokio::test]
async fn auth_hook_signs_each_request_and_resends_for_a_new_nonce_without_renewing() {
    let server = TestServer::start(|r| async move {
        let proof = r.header("x-proof").unwrap_or_default().to_owned();
        if !proof.ends_with("nonce=n1") {
            return Reply::status(401)
                .header("www-authenticate", r#"Proof error="use_nonce""#)
                .header("x-new-nonce", "n1")
                .body("nonce please");
        }
        basic(&r)
    })
    .await;
    let auth = Arc::new(SignsEachRequest::default());
    let mut options = HttpOptions::new(server.url("/mcp"));
    // The provider's Authorization wins over a configured one.
    options.headers = vec![("Authorization".to_owned(), "Bearer static".to_owned())];
    options.auth = Some(Arc::clone(&auth) as Arc<dyn AuthProvider>);
    let t = connect(options).await;
    handshake(&t).await;
    close_and_expect_nothing_else(&t).await;
    let requests = server.requests();
    let proofs: Vec<&str> = requests
        .iter()
        .map(|r| r.header("x-proof").unwrap())
        .collect();
    assert_eq!(proofs[0], "POST /mcp #0 nonce=");
    assert_eq!(proofs[1], "POST /mcp #1 nonce=n1");
    // A fresh value for every request, the method each one's own.
    for (n, (request, proof)) in requests.iter().zip(&proofs).enumerate() {
        assert_eq!(request.header("authorization"), Some("Proof key-1"));
        assert!(
            proof.starts_with(&format!("{} /mcp #{n} ", request.method)),
            "{proof}"
        );
    }
    assert_eq!(
        auth.refusals.load(Ordering::SeqCst),
        0,
        "a resend is no renewal"
    );

    // A server that never takes the nonce: two resends, then the refusal
    // goes to the refusal hook and is reported.
    let server = TestServer::start(|_| async move {
        Reply::status(401)
            .header("www-authenticate", r#"Proof error="use_nonce""#)
            .header("x-new-nonce", "n2")
            .body("again")
    })
    .await;
    let auth = Arc::new(SignsEachRequest::default());
    let mut options = HttpOptions::new(server.url("/mcp"));
    options.auth = Some(Arc::clone(&auth) as Arc<dyn AuthProvider>);
    let t = connect(options).await;
    t.send(initialize(1)).await.unwrap();
    let (_, error) = next_undelivered(&t).await;
    assert_eq!(error.http_status(), Some(401));
    assert_eq!(server.requests().len(), 3);
    assert_eq!(auth.refusals.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_http_url_still_refuses_extra_roots_that_are_not_certificates() {
    // A plain http pool builds no TLS configuration, but a broken setting
    // is refused whatever server it meets first.
    let server = TestServer::start(|r| async move { basic(&r) }).await;
    let mut options = HttpOptions::new(server.url("/mcp"));
    assert!(options.url.starts_with("http://"), "{}", options.url);
    options.extra_root_certificates = vec!["not a certificate".to_owned()];
    match HttpTransport::connect(options).await {
        Err(TransportError::Setup(message)) => {
            assert!(message.contains("extra root certificate #0"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

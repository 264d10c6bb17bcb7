//! The OAuth client through a real CONNECT proxy on 127.0.0.1: the challenge probe, discovery, registration, the code grant and refresh all tunnel through it to the resource server and the authorization server, and a refusing or unusable proxy is an error naming it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_client_oauth::{Grant, Interaction, OAuthError, OAuthOptions, OAuthProvider};
use mcp_transport::{AuthProvider, ProxyConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

const TOKEN: &str = "RECOGNISABLE-PROXIED-TOKEN-41c9";
const REFRESH: &str = "RECOGNISABLE-PROXIED-REFRESH-0d7e";

/// A CONNECT proxy on 127.0.0.1: tunnels to loopback (nowhere else), or
/// refuses every CONNECT with `refusal`; records each CONNECT target.
struct TestProxy {
    port: u16,
    targets: Arc<Mutex<Vec<String>>>,
}

impl TestProxy {
    async fn start(refusal: Option<&'static str>) -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let targets = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&targets);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(tunnel(client, refusal, Arc::clone(&log)));
            }
        });
        TestProxy { port, targets }
    }

    fn targets(&self) -> Vec<String> {
        self.targets.lock().unwrap().clone()
    }
}

async fn tunnel(
    mut client: TcpStream,
    refusal: Option<&'static str>,
    log: Arc<Mutex<Vec<String>>>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let target = head
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("CONNECT "))
        .and_then(|rest| rest.strip_suffix(" HTTP/1.1"))
        .unwrap()
        .to_owned();
    log.lock().unwrap().push(target.clone());
    if let Some(status) = refusal {
        let reply = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
        let _ = client.write_all(reply.as_bytes()).await;
        return;
    }
    // Never beyond loopback.
    assert!(target.starts_with("127.0.0.1:"), "{target}");
    let mut server = TcpStream::connect(&target).await.unwrap();
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .unwrap();
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}

/// One request a fake server saw: method, path and form.
type Seen = (String, String, HashMap<String, String>);

/// The answer: status, `WWW-Authenticate`, JSON body.
type Answer = (u16, Option<String>, Value);

/// An HTTP server on 127.0.0.1 answering with `handler(request, base)`.
async fn fake(
    handler: impl Fn(&Seen, &str) -> Answer + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Arc::new(handler);
    let (log, shared_base) = (Arc::clone(&seen), base.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (log, handler, base) =
                (Arc::clone(&log), Arc::clone(&handler), shared_base.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let (log, handler, base) =
                        (Arc::clone(&log), Arc::clone(&handler), base.clone());
                    async move {
                        let method = request.method().to_string();
                        let path = request.uri().path().to_owned();
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let form = url::form_urlencoded::parse(&body).into_owned().collect();
                        let seen = (method, path, form);
                        log.lock().unwrap().push(seen.clone());
                        let (status, challenge, value) = handler(&seen, &base);
                        let mut response =
                            hyper::Response::new(Full::new(Bytes::from(value.to_string())));
                        *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                        if let Some(challenge) = challenge {
                            response
                                .headers_mut()
                                .insert("www-authenticate", challenge.parse().unwrap());
                        }
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (base, seen)
}

/// The authorization server: metadata, registration, the code grant and
/// refresh.
async fn authorization_server() -> (String, Arc<Mutex<Vec<Seen>>>) {
    fake(|(_, path, form), base| match path.as_str() {
        "/.well-known/oauth-authorization-server" => (
            200,
            None,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            }),
        ),
        "/register" => (201, None, json!({ "client_id": "registered-client" })),
        "/token" if form.get("grant_type").map(String::as_str) == Some("refresh_token") => (
            200,
            None,
            json!({ "access_token": "refreshed", "token_type": "Bearer", "expires_in": 3600 }),
        ),
        "/token" => (
            200,
            None,
            json!({ "access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600,
                    "refresh_token": REFRESH }),
        ),
        _ => (404, None, json!({ "error": "not_found" })),
    })
    .await
}

/// The protected MCP endpoint: a 401 pointing at its resource metadata,
/// which names `issuer` (another origin).
async fn resource_server(issuer: String) -> (String, Arc<Mutex<Vec<Seen>>>) {
    fake(move |(_, path, _), base| match path.as_str() {
        "/mcp" => (
            401,
            Some(format!(
                r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
            )),
            json!({}),
        ),
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            None,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [issuer] }),
        ),
        _ => (404, None, json!({ "error": "not_found" })),
    })
    .await
}

/// The user: approves at once.
#[derive(Debug)]
struct Approver;

#[async_trait]
impl Interaction for Approver {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:1/callback".to_owned()
    }

    async fn authorize(&self, authorization_url: &Url) -> Result<Url, OAuthError> {
        let state = authorization_url
            .query_pairs()
            .find(|(name, _)| name == "state")
            .map(|(_, value)| value.into_owned())
            .unwrap();
        let mut redirect = Url::parse(&self.redirect_uri()).unwrap();
        redirect
            .query_pairs_mut()
            .append_pair("code", "RECOGNISABLE-CODE-93aa")
            .append_pair("state", &state);
        Ok(redirect)
    }
}

fn provider(server: &str, proxy: ProxyConfig) -> OAuthProvider {
    let mut options = OAuthOptions::new(
        Url::parse(server).unwrap(),
        Grant::AuthorizationCode(Arc::new(Approver)),
    );
    options.proxy = proxy;
    OAuthProvider::new(options).unwrap()
}

fn authority(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}

#[tokio::test]
async fn discovery_registration_tokens_and_refresh_tunnel_through_the_proxy() {
    let (issuer, issuer_seen) = authorization_server().await;
    let (resource, resource_seen) = resource_server(issuer.clone()).await;
    let proxy = TestProxy::start(None).await;
    let provider = provider(
        &format!("{resource}/mcp"),
        ProxyConfig::all(&format!("http://127.0.0.1:{}", proxy.port)).proxy_loopback(true),
    );
    provider.login().await.unwrap();
    assert_eq!(
        provider.authorization().await.unwrap(),
        Some(format!("Bearer {TOKEN}"))
    );
    // The token is refused: looking at the metadata again and the refresh
    // go through the proxy too.
    assert!(provider.on_unauthorized(401, Some("Bearer")).await.unwrap());
    assert_eq!(
        provider.authorization().await.unwrap(),
        Some("Bearer refreshed".to_owned())
    );

    let targets = proxy.targets();
    assert!(targets.contains(&authority(&resource)), "{targets:?}");
    assert!(targets.contains(&authority(&issuer)), "{targets:?}");
    assert!(
        targets
            .iter()
            .all(|t| *t == authority(&resource) || *t == authority(&issuer)),
        "{targets:?}"
    );
    let paths = |seen: &Arc<Mutex<Vec<Seen>>>| -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .map(|(_, path, form)| match form.get("grant_type") {
                Some(grant) => format!("{path} {grant}"),
                None => path.clone(),
            })
            .collect()
    };
    assert_eq!(
        paths(&resource_seen),
        [
            "/mcp",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource/mcp"
        ]
    );
    assert_eq!(
        paths(&issuer_seen),
        [
            "/.well-known/oauth-authorization-server",
            "/register",
            "/token authorization_code",
            "/.well-known/oauth-authorization-server",
            "/token refresh_token",
        ]
    );
}

#[tokio::test]
async fn loopback_servers_bypass_the_proxy_unless_asked() {
    let (issuer, _) = authorization_server().await;
    let (resource, _) = resource_server(issuer).await;
    let proxy = TestProxy::start(None).await;
    let provider = provider(
        &format!("{resource}/mcp"),
        ProxyConfig::all(&format!("http://127.0.0.1:{}", proxy.port)),
    );
    provider.login().await.unwrap();
    assert_eq!(proxy.targets(), Vec::<String>::new());
}

#[tokio::test]
async fn a_refusing_proxy_is_an_error_naming_it_and_never_its_credentials() {
    let (issuer, issuer_seen) = authorization_server().await;
    let (resource, resource_seen) = resource_server(issuer).await;
    let proxy = TestProxy::start(Some("407 Proxy Authentication Required")).await;
    let provider = provider(
        &format!("{resource}/mcp"),
        ProxyConfig::all(&format!("http://carol:opensesame@127.0.0.1:{}", proxy.port))
            .proxy_loopback(true),
    );
    let error = provider.login().await.unwrap_err();
    let OAuthError::Proxy {
        url,
        proxy: endpoint,
        status,
        message,
    } = &error
    else {
        panic!("not a proxy error: {error:?}");
    };
    assert_eq!(endpoint, &format!("127.0.0.1:{}", proxy.port));
    assert_eq!(*status, Some(407));
    assert_eq!(url, &format!("{resource}/mcp"));
    let shown = format!("{error} {error:?}");
    assert!(
        shown.contains(&format!("proxy 127.0.0.1:{}", proxy.port)),
        "{shown}"
    );
    assert!(shown.contains("407") && message.contains("407"), "{shown}");
    assert!(
        !shown.contains("opensesame") && !shown.contains("carol"),
        "{shown}"
    );
    assert_eq!(proxy.targets(), [authority(&resource)]);
    assert!(resource_seen.lock().unwrap().is_empty());
    assert!(issuer_seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_unusable_proxy_setting_is_an_error_naming_the_variable() {
    let (issuer, _) = authorization_server().await;
    let (resource, resource_seen) = resource_server(issuer).await;
    let proxy = ProxyConfig::from_lookup(|name| {
        (name == "HTTP_PROXY").then(|| "socks5://dave:hunter2@127.0.0.1:1080".to_owned())
    })
    .proxy_loopback(true);
    let error = provider(&format!("{resource}/mcp"), proxy)
        .login()
        .await
        .unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(matches!(error, OAuthError::Proxy { .. }), "{shown}");
    assert!(
        shown.contains("HTTP_PROXY") && shown.contains("socks5"),
        "{shown}"
    );
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(resource_seen.lock().unwrap().is_empty());
}

//! The default factory's proxy and CA settings: a proxy that refuses the tunnel is `proxy_failed` naming it (never `unreachable`), the OAuth client goes through the transport's proxy (and a proxy refusing only the authorization server is `proxy_failed` too), a workload's JWT bearer grant reads the token from the file its `oauth` section names, and an unreadable `SSL_CERT_FILE` is `invalid_config` naming the variable and path.
#![cfg(feature = "oauth")]

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_config::{HttpConfig, OAuthConfig, OAuthGrant, ServerConfig, TransportConfig};
use mcp_manager::{DefaultTransportFactory, ErrorCode, McpManager};
use mcp_transport::{CaEnv, ProxyConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOKEN: &str = "RECOGNISABLE-MACHINE-TOKEN-5a0b";
const CLIENT_SECRET: &str = "RECOGNISABLE-MACHINE-SECRET-c3d4";
const WORKLOAD_JWT: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.RECOGNISABLE-SIGNATURE";

/// A proxy on 127.0.0.1 that answers every CONNECT with 407.
async fn refusing_proxy() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
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
                    .write_all(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    port
}

fn server(id: &str) -> ServerConfig {
    // Nothing listens there: only the proxy is ever contacted.
    ServerConfig::new(
        id,
        TransportConfig::Http(HttpConfig::new("http://127.0.0.1:9/mcp")),
    )
}

#[tokio::test]
async fn a_proxy_refusing_the_tunnel_is_proxy_failed_naming_the_proxy_not_the_credentials() {
    let port = refusing_proxy().await;
    let mut factory = DefaultTransportFactory::new();
    factory.proxy =
        ProxyConfig::all(&format!("http://carol:opensesame@127.0.0.1:{port}")).proxy_loopback(true);
    let manager = McpManager::builder().factory(factory).build();
    let report = manager.connect_servers([server("behind")]).await;
    let error = report.error("behind").expect("an error");
    assert_eq!(error.code, ErrorCode::ProxyFailed, "{error}");
    assert_eq!(error.code.as_str(), "proxy_failed");
    assert!(!error.code.is_config_error());
    let shown = format!("{error} {error:?} {report:?} {:?}", manager.servers());
    assert!(shown.contains(&format!("127.0.0.1:{port}")), "{shown}");
    assert!(shown.contains("407"), "{shown}");
    assert!(
        !shown.contains("opensesame") && !shown.contains("carol"),
        "{shown}"
    );
    manager.close().await;
}

#[tokio::test]
async fn an_unreadable_ssl_cert_file_is_invalid_config_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("corporate-ca.pem");
    let path = missing.display().to_string();
    let mut factory = DefaultTransportFactory::new();
    let value = path.clone();
    factory.ca_env =
        CaEnv::from_lookup(move |name| (name == "SSL_CERT_FILE").then(|| value.clone()));
    factory.proxy = ProxyConfig::none();
    let manager = McpManager::builder().factory(factory).build();
    let report = manager.connect_servers([server("private")]).await;
    let error = report.error("private").expect("an error");
    assert_eq!(error.code, ErrorCode::InvalidConfig, "{error}");
    assert!(
        error.message.contains("SSL_CERT_FILE") && error.message.contains(&path),
        "{error}"
    );
    manager.close().await;
}

/// A CONNECT proxy on 127.0.0.1 that tunnels to loopback, except to the
/// `refused` port, which it answers with 403; records each CONNECT target.
async fn tunnelling_proxy(refused: Option<u16>) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let targets = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&targets);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
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
                // Never beyond loopback.
                assert!(target.starts_with("127.0.0.1:"), "{target}");
                if refused.is_some_and(|port| target.ends_with(&format!(":{port}"))) {
                    let _ = client
                        .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                        .await;
                    return;
                }
                let mut server = TcpStream::connect(&target).await.unwrap();
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    (port, targets)
}

/// What a fake answers: status, `WWW-Authenticate`, JSON body.
type Answer = (u16, Option<String>, Option<Value>);

/// An HTTP server on 127.0.0.1: `handler(base, path, authorized, body)`,
/// where `authorized` says the request carried the test's bearer token.
async fn fake(
    handler: impl Fn(&str, &str, bool, &[u8]) -> Answer + Send + Sync + 'static,
) -> String {
    let handler = Arc::new(handler);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let shared_base = base.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (base, handler) = (shared_base.clone(), Arc::clone(&handler));
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let (base, handler) = (base.clone(), Arc::clone(&handler));
                    async move {
                        let path = request.uri().path().to_owned();
                        let authorized = request
                            .headers()
                            .get("authorization")
                            .is_some_and(|v| v.as_bytes() == format!("Bearer {TOKEN}").as_bytes());
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let (status, challenge, value) = handler(&base, &path, authorized, &body);
                        let mut response = hyper::Response::new(Full::new(Bytes::from(
                            value.map(|v| v.to_string()).unwrap_or_default(),
                        )));
                        *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                        response
                            .headers_mut()
                            .insert("content-type", "application/json".parse().unwrap());
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
    base
}

/// The authorization server: metadata, the client credentials grant and
/// the JWT bearer grant with the workload's JWT.
fn issuer_answer(base: &str, path: &str, _authorized: bool, body: &[u8]) -> Answer {
    match path {
        "/.well-known/oauth-authorization-server" => (
            200,
            None,
            Some(json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            })),
        ),
        "/token" => {
            let form: HashMap<String, String> =
                url::form_urlencoded::parse(body).into_owned().collect();
            let accepted = match form["grant_type"].as_str() {
                "client_credentials" => true,
                "urn:ietf:params:oauth:grant-type:jwt-bearer" => form["assertion"] == WORKLOAD_JWT,
                _ => false,
            };
            if !accepted {
                return (400, None, Some(json!({"error": "invalid_grant"})));
            }
            (
                200,
                None,
                Some(json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600})),
            )
        }
        _ => (404, None, None),
    }
}

/// The protected MCP server, whose resource metadata names `issuer`.
fn resource_answer(issuer: &str, base: &str, path: &str, authorized: bool, body: &[u8]) -> Answer {
    match path {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            None,
            Some(json!({"resource": format!("{base}/mcp"), "authorization_servers": [issuer]})),
        ),
        "/mcp" if !authorized => (
            401,
            Some(format!(
                "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
            )),
            None,
        ),
        "/mcp" => {
            let message: Value = serde_json::from_slice(body).unwrap();
            let Some(id) = message.get("id").cloned() else {
                return (202, None, None);
            };
            let result = match message["method"].as_str() {
                Some(mcp_proto::methods::INITIALIZE) => json!({
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "behind-proxy", "version": "1"},
                }),
                _ => json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            };
            (
                200,
                None,
                Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            )
        }
        _ => (404, None, None),
    }
}

/// An authorization server and an MCP server it protects, on two ports.
async fn protected_server() -> (String, String) {
    let issuer = fake(issuer_answer).await;
    let named = issuer.clone();
    let resource = fake(move |base, path, authorized, body| {
        resource_answer(&named, base, path, authorized, body)
    })
    .await;
    (issuer, resource)
}

/// A manager whose factory goes through the proxy on `proxy_port` for
/// loopback too, with OAuth tokens in `dir`, and the machine client's
/// secret in its environment.
fn proxied_manager(proxy_port: u16, dir: &std::path::Path) -> McpManager {
    let mut factory = DefaultTransportFactory::with_oauth_dir(dir);
    factory.proxy =
        ProxyConfig::all(&format!("http://127.0.0.1:{proxy_port}")).proxy_loopback(true);
    let env: HashMap<String, String> =
        HashMap::from([("MACHINE_SECRET".to_owned(), CLIENT_SECRET.to_owned())]);
    McpManager::builder()
        .factory(factory)
        .environment(env)
        .build()
}

fn machine_server(id: &str, resource: &str) -> ServerConfig {
    let mut oauth = OAuthConfig::new();
    oauth.grant = OAuthGrant::ClientCredentials;
    oauth.client_id = Some("machine".to_owned());
    oauth.client_secret_env = Some("MACHINE_SECRET".to_owned());
    let mut http = HttpConfig::new(format!("{resource}/mcp"));
    http.oauth = Some(oauth);
    ServerConfig::new(id, TransportConfig::Http(http))
}

fn authority(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}

#[tokio::test]
async fn the_oauth_client_goes_through_the_transports_proxy() {
    let (issuer, resource) = protected_server().await;
    let (proxy_port, targets) = tunnelling_proxy(None).await;
    let dir = tempfile::tempdir().unwrap();
    let manager = proxied_manager(proxy_port, dir.path());
    let report = manager
        .connect_servers([machine_server("machine", &resource)])
        .await;
    assert!(report.error("machine").is_none(), "{:?}", report.errors);
    assert!(manager.status("machine").unwrap().is_connected());
    let targets = targets.lock().unwrap().clone();
    assert!(targets.contains(&authority(&resource)), "{targets:?}");
    assert!(targets.contains(&authority(&issuer)), "{targets:?}");
    manager.close().await;
}

#[tokio::test]
async fn a_proxy_refusing_the_authorization_server_is_proxy_failed_naming_both() {
    let (issuer, resource) = protected_server().await;
    let issuer_port: u16 = issuer.rsplit(':').next().unwrap().parse().unwrap();
    let (proxy_port, targets) = tunnelling_proxy(Some(issuer_port)).await;
    let dir = tempfile::tempdir().unwrap();
    let manager = proxied_manager(proxy_port, dir.path());
    let report = manager
        .connect_servers([machine_server("machine", &resource)])
        .await;
    let error = report.error("machine").expect("an error");
    assert_eq!(error.code, ErrorCode::ProxyFailed, "{error}");
    let shown = format!("{error} {error:?} {:?}", manager.servers());
    assert!(
        shown.contains(&format!("127.0.0.1:{proxy_port}")),
        "{shown}"
    );
    assert!(shown.contains(&issuer), "{shown}");
    assert!(shown.contains("403"), "{shown}");
    assert!(!shown.contains(CLIENT_SECRET), "{shown}");
    // The MCP server was reached through the proxy; the issuer was refused.
    let targets = targets.lock().unwrap().clone();
    assert!(targets.contains(&authority(&resource)), "{targets:?}");
    assert!(targets.contains(&authority(&issuer)), "{targets:?}");
    manager.close().await;
}

#[tokio::test]
async fn a_workload_connects_unattended_with_the_jwt_from_the_file_its_section_names() {
    let (issuer, resource) = protected_server().await;
    let (proxy_port, targets) = tunnelling_proxy(None).await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("workload.jwt");
    std::fs::write(&token_file, format!("{WORKLOAD_JWT}\n")).unwrap();
    let mut oauth = OAuthConfig::new();
    oauth.grant = OAuthGrant::JwtBearer;
    oauth.client_id = Some("workload".to_owned());
    oauth.assertion_file = Some(token_file.to_string_lossy().into_owned());
    let mut http = HttpConfig::new(format!("{resource}/mcp"));
    http.oauth = Some(oauth);
    let manager = proxied_manager(proxy_port, &dir.path().join("tokens"));
    let report = manager
        .connect_servers([ServerConfig::new(
            "workload",
            TransportConfig::Http(http.clone()),
        )])
        .await;
    assert!(report.error("workload").is_none(), "{:?}", report.errors);
    assert!(manager.status("workload").unwrap().is_connected());
    assert!(targets.lock().unwrap().contains(&authority(&issuer)));
    manager.close().await;

    // Another token in the file, which the server refuses: a clear error,
    // and the token shows nowhere.
    std::fs::write(&token_file, "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.OTHER").unwrap();
    let manager = proxied_manager(proxy_port, &dir.path().join("other-tokens"));
    let report = manager
        .connect_servers([ServerConfig::new("workload", TransportConfig::Http(http))])
        .await;
    let error = report.error("workload").expect("refused");
    let shown = format!("{error} {error:?} {:?}", manager.servers());
    assert!(shown.contains("invalid_grant"), "{shown}");
    assert!(!shown.contains("eyJ"), "{shown}");
    manager.close().await;
}

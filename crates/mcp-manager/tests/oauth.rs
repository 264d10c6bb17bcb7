//! The default factory's OAuth: stored tokens are used, a server that needs a person fails fast with `auth_required`, and a static Authorization header keeps OAuth out.
#![cfg(feature = "oauth")]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_client_oauth::{FileTokenStore, Secret, StoreKey, StoredCredentials, TokenStore, Tokens};
use mcp_config::{HttpConfig, OAuthConfig, SecretEntry, ServerConfig, TransportConfig};
use mcp_manager::{DefaultTransportFactory, ErrorCode, McpManager};
use serde_json::{Value, json};

const TOKEN: &str = "RECOGNISABLE-MANAGER-TOKEN-8d2f";

/// A protected MCP endpoint and its authorization server on one origin;
/// records every path requested.
async fn fake() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (log, shared_base) = (Arc::clone(&seen), base.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (log, base) = (Arc::clone(&log), shared_base.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let (log, base) = (Arc::clone(&log), base.clone());
                    async move {
                        let path = request.uri().path().to_owned();
                        log.lock().unwrap().push(path.clone());
                        let authorized = request
                            .headers()
                            .get("authorization")
                            .is_some_and(|v| v.as_bytes() == format!("Bearer {TOKEN}").as_bytes());
                        let method = request.method().clone();
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let (status, header, value) =
                            answer(&base, &path, &method, authorized, &body);
                        let mut response = hyper::Response::new(Full::new(Bytes::from(
                            value.map(|v| v.to_string()).unwrap_or_default(),
                        )));
                        *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                        response
                            .headers_mut()
                            .insert("content-type", "application/json".parse().unwrap());
                        if let Some(header) = header {
                            response
                                .headers_mut()
                                .insert("www-authenticate", header.parse().unwrap());
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

fn answer(
    base: &str,
    path: &str,
    method: &hyper::Method,
    authorized: bool,
    body: &[u8],
) -> (u16, Option<String>, Option<Value>) {
    match path {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            None,
            Some(json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]})),
        ),
        "/.well-known/oauth-authorization-server" => (
            200,
            None,
            Some(json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "code_challenge_methods_supported": ["S256"],
            })),
        ),
        "/mcp" if !authorized => (
            401,
            Some(format!(
                "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
            )),
            None,
        ),
        "/mcp" if method == hyper::Method::POST => {
            let message: Value = serde_json::from_slice(body).unwrap();
            let Some(id) = message.get("id").cloned() else {
                return (202, None, None);
            };
            let result = match message["method"].as_str() {
                Some(mcp_proto::methods::INITIALIZE) => json!({
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake", "version": "1"},
                }),
                _ => json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            };
            (
                200,
                None,
                Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            )
        }
        _ => (405, None, None),
    }
}

fn server(id: &str, base: &str, oauth: Option<OAuthConfig>) -> ServerConfig {
    let mut http = HttpConfig::new(format!("{base}/mcp"));
    http.oauth = oauth;
    ServerConfig::new(id, TransportConfig::Http(http))
}

fn manager(dir: &std::path::Path) -> McpManager {
    McpManager::builder()
        .factory(DefaultTransportFactory::with_oauth_dir(dir))
        .build()
}

#[tokio::test]
async fn a_server_that_needs_a_login_fails_at_once_with_auth_required() {
    let (base, seen) = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let manager = manager(dir.path());
    let report = manager
        .connect_servers([server("tracker", &base, Some(OAuthConfig::new()))])
        .await;
    let error = report.error("tracker").expect("an error");
    assert_eq!(error.code, ErrorCode::AuthRequired);
    assert_eq!(error.code.as_str(), "auth_required");
    assert!(error.message.contains("mcpctl login tracker"), "{error}");
    assert!(error.code.is_config_error(), "never retried automatically");
    let paths = seen.lock().unwrap().clone();
    assert!(
        !paths.iter().any(|p| p == "/register" || p == "/authorize"),
        "nothing is registered or authorized unattended: {paths:?}"
    );
    manager.close().await;
}

#[tokio::test]
async fn stored_tokens_are_used_without_any_oauth_section() {
    let (base, _seen) = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let url = url::Url::parse(&format!("{base}/mcp")).unwrap();
    let key = StoreKey {
        server: mcp_client_oauth::canonical_resource(&url),
        issuer: base.clone(),
    };
    let mut stored = StoredCredentials::default();
    stored.tokens = Some(Tokens::new(Secret::new(TOKEN)));
    FileTokenStore::new(dir.path())
        .save(&key, &stored)
        .await
        .unwrap();
    let manager = manager(dir.path());
    let report = manager
        .connect_servers([server("plain", &base, None)])
        .await;
    assert!(report.error("plain").is_none(), "{:?}", report.errors);
    assert!(manager.status("plain").unwrap().is_connected());
    let shown = format!("{report:?} {:?}", manager.servers());
    assert!(!shown.contains(TOKEN));
    manager.close().await;
}

#[tokio::test]
async fn a_static_authorization_header_keeps_oauth_out() {
    let (base, seen) = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = server("static", &base, None);
    let TransportConfig::Http(http) = &mut config.transport else {
        unreachable!()
    };
    http.headers
        .push(SecretEntry::new("Authorization", "Bearer wrong"));
    let manager = manager(dir.path());
    let report = manager.connect_servers([config]).await;
    assert_eq!(
        report.error("static").map(|e| e.code),
        Some(ErrorCode::AuthRejected)
    );
    assert!(
        !seen
            .lock()
            .unwrap()
            .iter()
            .any(|p| p.starts_with("/.well-known")),
        "no OAuth discovery"
    );
    manager.close().await;
}

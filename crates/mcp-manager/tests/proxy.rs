//! The default factory's proxy and CA settings: a proxy that refuses the tunnel is `proxy_failed` naming it (never `unreachable`), and an unreadable `SSL_CERT_FILE` is `invalid_config` naming the variable and path.

use mcp_config::{HttpConfig, ServerConfig, TransportConfig};
use mcp_manager::{DefaultTransportFactory, ErrorCode, McpManager};
use mcp_transport::{CaEnv, ProxyConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

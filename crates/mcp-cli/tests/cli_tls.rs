//! `mcpctl` against HTTPS servers whose TLS fails: an untrusted issuer, an expired certificate, one for another name, and a plain HTTP server on an `https://` URL each end with the code `tls` naming what failed, after one handshake per connect.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use support::Env;
use tokio_rustls::rustls;

/// A TLS acceptor serving a self-signed certificate made from `params`,
/// and the certificate's PEM.
fn acceptor(params: rcgen::CertificateParams) -> (String, tokio_rustls::TlsAcceptor) {
    let key_pair = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key_pair).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        key_pair.serialize_der(),
    ));
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)
        .unwrap();
    (
        cert.pem(),
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    )
}

/// Accepts TLS handshakes on a loopback port, on a thread of its own for
/// the rest of the test process, counting the connections that began one;
/// a handshake that succeeds is answered with nothing. Returns the port
/// and the count.
fn tls_listener(acceptor: tokio_rustls::TlsAcceptor) -> (u16, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&connections);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let _ = acceptor.accept(stream).await;
                });
            }
        });
    });
    (port, connections)
}

/// `mcpctl --json --no-host-configs --config CONFIG servers` with
/// `SSL_CERT_FILE` set to `roots` (unset when `None`): the row of `id`.
fn server_row(env: &Env, config: &Path, roots: Option<&Path>, id: &str) -> (Value, support::Run) {
    let config = config.display().to_string();
    let args = [
        "--json",
        "--no-host-configs",
        "--config",
        &config,
        "servers",
    ];
    let mut command = env.command(&args);
    command.env_remove("SSL_CERT_DIR");
    match roots {
        Some(path) => command.env("SSL_CERT_FILE", path),
        None => command.env_remove("SSL_CERT_FILE"),
    };
    let run = support::run_to_end(command, &args);
    assert!(!run.stderr.contains("panicked"), "{run:#?}");
    let rows = support::parse_one_document(&run.stdout);
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {rows:#}"))
        .clone();
    (row, run)
}

fn config_for(env: &Env, url: &str) -> std::path::PathBuf {
    env.write_json(
        "servers.json",
        &json!({"mcpServers": {"secure": {"url": url}}}),
    )
}

fn error_of(row: &Value) -> (&str, &str) {
    (
        row["error"]["code"].as_str().unwrap_or_default(),
        row["error"]["message"].as_str().unwrap_or_default(),
    )
}

#[test]
fn an_untrusted_certificate_is_tls_naming_the_issuer_after_one_handshake() {
    let env = Env::new();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let (_, acceptor) = acceptor(params);
    let (port, connections) = tls_listener(acceptor);
    let url = format!("https://127.0.0.1:{port}/mcp?token=hidden");
    let config = config_for(&env, &url);

    let (row, run) = server_row(&env, &config, None, "secure");
    let (code, message) = error_of(&row);
    assert_eq!(code, "tls", "{run:#?}");
    assert!(
        message.contains(&format!("https://127.0.0.1:{port}"))
            && message.contains("issuer is not a trusted certificate authority"),
        "{message}"
    );
    assert!(!run.stdout.contains("hidden"), "{run:#?}");
    // The era probe met the refusal; the handshake-era initialize did not
    // shake hands again.
    assert_eq!(connections.load(Ordering::SeqCst), 1, "{run:#?}");

    // The text listing shows the code too.
    let config = config.display().to_string();
    let args = ["--no-host-configs", "--config", &config, "servers"];
    let mut command = env.command(&args);
    command
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
    let run = support::run_to_end(command, &args);
    assert!(run.stdout.contains("[tls]"), "{run:#?}");
}

#[test]
fn an_expired_certificate_is_tls_saying_when_it_expired() {
    let env = Env::new();
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let (pem, acceptor) = acceptor(params);
    let (port, _) = tls_listener(acceptor);
    let config = config_for(&env, &format!("https://127.0.0.1:{port}/mcp"));
    let roots = env.root_file("expired.pem", &pem);

    let (row, run) = server_row(&env, &config, Some(&roots), "secure");
    let (code, message) = error_of(&row);
    assert_eq!(code, "tls", "{run:#?}");
    assert!(
        message.contains("it expired") && message.contains("days ago"),
        "{message}"
    );
}

#[test]
fn a_certificate_for_another_name_is_tls_naming_both() {
    let env = Env::new();
    let params = rcgen::CertificateParams::new(vec!["other.example".to_owned()]).unwrap();
    let (pem, acceptor) = acceptor(params);
    let (port, _) = tls_listener(acceptor);
    let config = config_for(&env, &format!("https://127.0.0.1:{port}/mcp"));
    let roots = env.root_file("other.pem", &pem);

    let (row, run) = server_row(&env, &config, Some(&roots), "secure");
    let (code, message) = error_of(&row);
    assert_eq!(code, "tls", "{run:#?}");
    assert!(
        message.contains("not valid for 127.0.0.1") && message.contains("other.example"),
        "{message}"
    );
}

#[test]
fn a_plain_http_server_on_an_https_url_is_tls_suggesting_http() {
    let env = Env::new();
    let port = support::free_port();
    let mut command = std::process::Command::new(support::fixture_server());
    command.args(["--transport", "http", "--port", &port.to_string()]);
    let _http = support::start_http_server(command, port);
    let config = config_for(&env, &format!("https://127.0.0.1:{port}/mcp"));

    let (row, run) = server_row(&env, &config, None, "secure");
    let (code, message) = error_of(&row);
    assert_eq!(code, "tls", "{run:#?}");
    assert!(
        message.contains(&format!(
            "the server at https://127.0.0.1:{port} does not speak TLS; is the URL http://127.0.0.1:{port}?"
        )),
        "{message}"
    );
}

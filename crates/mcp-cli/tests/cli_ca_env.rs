//! `mcpctl` trusts the roots of `SSL_CERT_FILE` for HTTPS servers (a private CA, as with curl and git), and a broken `SSL_CERT_FILE` fails the HTTP servers only, with `invalid_config` naming the variable and the path.

mod support;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use support::Env;
use tokio_rustls::rustls;

/// A self-signed certificate for 127.0.0.1: its PEM and a TLS acceptor
/// serving it.
fn certificate() -> (String, tokio_rustls::TlsAcceptor) {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
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

/// Terminates TLS on a loopback port and relays each connection to
/// `127.0.0.1:backend` in plain TCP, on a thread of its own for the rest of
/// the test process. Returns the TLS port.
fn tls_front(acceptor: tokio_rustls::TlsAcceptor, backend: u16) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that does not trust the certificate ends the
                    // handshake: nothing to relay.
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let Ok(mut plain) =
                        tokio::net::TcpStream::connect(("127.0.0.1", backend)).await
                    else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
    });
    port
}

/// `mcpctl --json --no-host-configs --config CONFIG servers`, with
/// `SSL_CERT_FILE` set to `ssl_cert_file` (unset when `None`) and no
/// `SSL_CERT_DIR`.
fn servers(env: &Env, config: &Path, ssl_cert_file: Option<&Path>) -> (Value, support::Run) {
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
    match ssl_cert_file {
        Some(path) => command.env("SSL_CERT_FILE", path),
        None => command.env_remove("SSL_CERT_FILE"),
    };
    let run = support::run_to_end(command, &args);
    assert!(!run.stderr.contains("panicked"), "{run:#?}");
    (support::parse_one_document(&run.stdout), run)
}

fn row<'a>(rows: &'a Value, id: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {rows:#}"))
}

#[test]
fn an_https_server_behind_a_private_ca_is_trusted_through_ssl_cert_file() {
    let env = Env::new();
    let fixture = support::fixture_server();
    let backend = support::free_port();
    let mut command = std::process::Command::new(&fixture);
    command.args(["--transport", "http", "--port", &backend.to_string()]);
    let _http = support::start_http_server(command, backend);
    let (pem, acceptor) = certificate();
    let port = tls_front(acceptor, backend);
    let ca = env.root_file("private-ca.pem", &pem);
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"private": {"url": format!("https://127.0.0.1:{port}/mcp")}}}),
    );

    let (rows, run) = servers(&env, &config, Some(&ca));
    assert_eq!(row(&rows, "private")["status"], "ready", "{run:#?}");

    // Without the variable the certificate is unknown: the opt-in is what
    // made it trusted.
    let (rows, run) = servers(&env, &config, None);
    let private = row(&rows, "private");
    assert_ne!(private["status"], "ready", "{run:#?}");
    assert!(
        private.to_string().to_lowercase().contains("certificate"),
        "{private:#}"
    );
}

#[test]
fn a_broken_ssl_cert_file_fails_http_servers_only_naming_it() {
    let env = Env::new();
    // Nothing listens on the HTTP server's port: the roots are read first.
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "web": {"url": format!("http://127.0.0.1:{}/mcp", support::free_port())},
            "local": {"command": support::MCPCTL, "args": ["demo-server"]},
        }}),
    );
    let missing = env
        .root_file("placeholder", "")
        .with_file_name("no-such-ca.pem");
    let not_pem = env.root_file("not-a-ca.pem", "just some text\n");
    for (path, problem) in [
        (&missing, "cannot be read"),
        (&not_pem, "holds no PEM certificate"),
    ] {
        let (rows, run) = servers(&env, &config, Some(path));
        let web = row(&rows, "web");
        assert_eq!(web["error"]["code"], "invalid_config", "{run:#?}");
        let message = web["error"]["message"].as_str().unwrap();
        let shown = path.display().to_string();
        assert!(
            message.contains("SSL_CERT_FILE") && message.contains(&shown),
            "{message}"
        );
        assert!(message.contains(problem), "{message}");
        assert_eq!(row(&rows, "local")["status"], "ready", "{run:#?}");
    }

    // The text listing says the same.
    let config = config.display().to_string();
    let args = ["--no-host-configs", "--config", &config, "servers"];
    let mut command = env.command(&args);
    command
        .env("SSL_CERT_FILE", &missing)
        .env_remove("SSL_CERT_DIR");
    let run = support::run_to_end(command, &args);
    assert!(run.stdout.contains("[invalid_config]"), "{run:#?}");
    assert!(run.stdout.contains("SSL_CERT_FILE"), "{run:#?}");
    assert!(!run.stderr.contains("panicked"), "{run:#?}");
}

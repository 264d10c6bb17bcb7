//! The provider against a fake authorization server on 127.0.0.1: every discovery branch, the grants, refresh, step-up, and that no token leaks.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_client_oauth::{
    FileTokenStore, Grant, Interaction, OAuthError, OAuthOptions, OAuthProvider, Secret, TokenStore,
};
use mcp_transport::AuthProvider;
use serde_json::{Value, json};
use url::Url;

const TOKEN: &str = "RECOGNISABLE-ACCESS-TOKEN-7f3a";
const REFRESH: &str = "RECOGNISABLE-REFRESH-TOKEN-9c1d";
const SECRET: &str = "RECOGNISABLE-CLIENT-SECRET-2b8e";

/// One request the fake saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    form: HashMap<String, String>,
}

type Handler = dyn Fn(&Seen, &str) -> (u16, Value) + Send + Sync;

/// The status a handler answers with to leave the request unanswered.
const HANG: u16 = 0;

/// An HTTP server on 127.0.0.1 that answers with `handler` and records
/// every request.
struct Fake {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    async fn start(handler: impl Fn(&Seen, &str) -> (u16, Value) + Send + Sync + 'static) -> Fake {
        Fake::serve(handler, None).await
    }

    /// The same over HTTPS, with `acceptor`'s certificate.
    async fn start_tls(
        handler: impl Fn(&Seen, &str) -> (u16, Value) + Send + Sync + 'static,
        acceptor: tokio_rustls::TlsAcceptor,
    ) -> Fake {
        Fake::serve(handler, Some(acceptor)).await
    }

    async fn serve(
        handler: impl Fn(&Seen, &str) -> (u16, Value) + Send + Sync + 'static,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> Fake {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let base = format!(
            "{scheme}://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        );
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (log, shared_base) = (Arc::clone(&seen), base.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (log, handler, base) =
                    (Arc::clone(&log), Arc::clone(&handler), shared_base.clone());
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service =
                        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                            let (log, handler, base) =
                                (Arc::clone(&log), Arc::clone(&handler), base.clone());
                            async move {
                                let method = request.method().to_string();
                                let path = request
                                    .uri()
                                    .path_and_query()
                                    .map(|p| p.to_string())
                                    .unwrap_or_default();
                                let authorization = request
                                    .headers()
                                    .get("authorization")
                                    .and_then(|v| v.to_str().ok())
                                    .map(str::to_owned);
                                let body = request.into_body().collect().await.unwrap().to_bytes();
                                let form =
                                    url::form_urlencoded::parse(&body).into_owned().collect();
                                let seen = Seen {
                                    method,
                                    path,
                                    authorization,
                                    form,
                                };
                                log.lock().unwrap().push(seen.clone());
                                let (status, value) = handler(&seen, &base);
                                if status == HANG {
                                    // A hung endpoint: the request is
                                    // read and never answered.
                                    std::future::pending::<()>().await;
                                }
                                let mut response =
                                    hyper::Response::new(Full::new(Bytes::from(value.to_string())));
                                *response.status_mut() =
                                    hyper::StatusCode::from_u16(status).unwrap();
                                Ok::<_, Infallible>(response)
                            }
                        });
                    let builder = hyper::server::conn::http1::Builder::new();
                    match tls {
                        Some(tls) => {
                            // A client that does not trust the certificate
                            // ends the handshake: nothing to serve.
                            if let Ok(stream) = tls.accept(stream).await {
                                let _ = builder
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            }
                        }
                        None => {
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                });
            }
        });
        Fake { base, seen }
    }

    fn paths(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.path.clone())
            .collect()
    }

    fn find(&self, path: &str) -> Option<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .find(|s| s.path == path)
            .cloned()
    }
}

fn not_found() -> (u16, Value) {
    (404, json!({ "error": "not_found" }))
}

fn as_metadata(issuer: &str) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    })
}

fn token_response(access: &str) -> (u16, Value) {
    (
        200,
        json!({ "access_token": access, "token_type": "Bearer", "expires_in": 3600,
                "refresh_token": REFRESH }),
    )
}

/// The authorization server's common endpoints: registration and tokens.
fn endpoints(seen: &Seen) -> Option<(u16, Value)> {
    match seen.path.as_str() {
        p if p.ends_with("/register") => Some((
            201,
            json!({ "client_id": "registered-client", "client_secret": SECRET }),
        )),
        p if p.ends_with("/token") => Some(token_response(TOKEN)),
        _ => None,
    }
}

/// The user: records the authorization URL and approves at once.
#[derive(Debug, Default)]
struct Approver {
    urls: Mutex<Vec<Url>>,
}

#[async_trait]
impl Interaction for Approver {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:1/callback".to_owned()
    }

    async fn authorize(&self, authorization_url: &Url) -> Result<Url, OAuthError> {
        self.urls.lock().unwrap().push(authorization_url.clone());
        let query: HashMap<String, String> = authorization_url.query_pairs().into_owned().collect();
        let mut redirect = Url::parse(&self.redirect_uri()).unwrap();
        redirect
            .query_pairs_mut()
            .append_pair("code", "RECOGNISABLE-CODE-5e6f")
            .append_pair("state", &query["state"]);
        Ok(redirect)
    }
}

impl Approver {
    fn query(&self, index: usize) -> HashMap<String, String> {
        self.urls.lock().unwrap()[index]
            .query_pairs()
            .into_owned()
            .collect()
    }

    fn count(&self) -> usize {
        self.urls.lock().unwrap().len()
    }
}

fn code_provider(server: &str, approver: &Arc<Approver>) -> OAuthProvider {
    let options = OAuthOptions::new(
        Url::parse(server).unwrap(),
        Grant::AuthorizationCode(Arc::clone(approver) as Arc<dyn Interaction>),
    );
    OAuthProvider::new(options).unwrap()
}

/// Runs a 401 with `challenge` through `provider` and returns the header
/// it then sends.
async fn after_401(provider: &OAuthProvider, challenge: &str) -> Option<String> {
    assert!(
        provider
            .on_unauthorized(401, Some(challenge))
            .await
            .unwrap()
    );
    provider.authorization().await.unwrap()
}

#[tokio::test]
async fn resource_metadata_from_the_header_and_a_full_authorization_code_flow() {
    let fake = Fake::start(|seen, base| {
        if let Some(answer) = endpoints(seen) {
            return answer;
        }
        match seen.path.as_str() {
            "/custom/prm.json" => (
                200,
                json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base],
                        "scopes_supported": ["unused"] }),
            ),
            "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
            _ => not_found(),
        }
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert_eq!(provider.authorization().await.unwrap(), None);
    let challenge = format!(
        r#"Bearer resource_metadata="{}/custom/prm.json", scope="mcp:read""#,
        fake.base
    );
    assert_eq!(
        after_401(&provider, &challenge).await,
        Some(format!("Bearer {TOKEN}"))
    );
    assert_eq!(
        fake.paths(),
        [
            "/custom/prm.json",
            "/.well-known/oauth-authorization-server",
            "/register",
            "/token"
        ]
    );
    let query = approver.query(0);
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "registered-client");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["scope"], "mcp:read", "the challenge's scope wins");
    assert_eq!(query["resource"], format!("{}/mcp", fake.base));
    let token = fake.find("/token").unwrap();
    assert_eq!(token.method, "POST");
    assert_eq!(token.form["grant_type"], "authorization_code");
    assert_eq!(token.form["resource"], query["resource"]);
    assert_eq!(token.form["redirect_uri"], query["redirect_uri"]);
    // PKCE: the verifier hashes to the challenge.
    let digest = ring_free_s256(&token.form["code_verifier"]);
    assert_eq!(digest, query["code_challenge"]);
    // client_secret_basic: the secret travels in the header, not the form.
    assert!(token.authorization.unwrap().starts_with("Basic "));
    assert!(!token.form.contains_key("client_secret"));
    // Nothing shows a token or a secret.
    let shown = format!("{provider:?}");
    for secret in [TOKEN, REFRESH, SECRET, "RECOGNISABLE-CODE"] {
        assert!(!shown.contains(secret), "{shown}");
    }
}

/// SHA-256 then base64url, through the same crates a verifier would use.
fn ring_free_s256(verifier: &str) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
}

#[tokio::test]
async fn path_based_then_root_protected_resource_metadata() {
    // Path-based first.
    let fake = Fake::start(|seen, base| {
        if let Some(answer) = endpoints(seen) {
            return answer;
        }
        match seen.path.as_str() {
            "/.well-known/oauth-protected-resource/mcp" => (
                200,
                json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base],
                        "scopes_supported": ["a", "b"] }),
            ),
            "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
            _ => not_found(),
        }
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert!(after_401(&provider, "Bearer").await.is_some());
    assert_eq!(fake.paths()[0], "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        approver.query(0)["scope"],
        "a b",
        "scopes_supported when unchallenged"
    );

    // Then the root, whose resource is the origin.
    let fake = Fake::start(|seen, base| {
        if let Some(answer) = endpoints(seen) {
            return answer;
        }
        match seen.path.as_str() {
            "/.well-known/oauth-protected-resource" => (
                200,
                json!({ "resource": base, "authorization_servers": [base] }),
            ),
            "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
            _ => not_found(),
        }
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert!(after_401(&provider, "Bearer").await.is_some());
    assert_eq!(
        fake.paths()[..2],
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource"
        ]
    );
    assert!(
        !approver.query(0).contains_key("scope"),
        "no scope when none is known"
    );
    assert_eq!(approver.query(0)["resource"], fake.base);
}

#[tokio::test]
async fn authorization_server_metadata_with_a_path_tries_the_three_urls_in_order() {
    let fake = Fake::start(|seen, base| {
        if let Some(answer) = endpoints(seen) {
            return answer;
        }
        match seen.path.as_str() {
            "/.well-known/oauth-protected-resource/mcp" => (
                200,
                json!({ "resource": format!("{base}/mcp"),
                        "authorization_servers": [format!("{base}/tenant1")] }),
            ),
            "/tenant1/.well-known/openid-configuration" => {
                (200, as_metadata(&format!("{base}/tenant1")))
            }
            _ => not_found(),
        }
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert!(after_401(&provider, "Bearer").await.is_some());
    assert_eq!(
        fake.paths()[1..4],
        [
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            "/tenant1/.well-known/openid-configuration",
        ]
    );
    assert_eq!(fake.paths()[4..], ["/tenant1/register", "/tenant1/token"]);
}

#[tokio::test]
async fn authorization_server_metadata_without_a_path_falls_back_to_openid() {
    let fake = Fake::start(|seen, base| {
        if let Some(answer) = endpoints(seen) {
            return answer;
        }
        match seen.path.as_str() {
            "/.well-known/oauth-protected-resource/mcp" => (
                200,
                json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base] }),
            ),
            "/.well-known/openid-configuration" => (200, as_metadata(base)),
            _ => not_found(),
        }
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert!(after_401(&provider, "Bearer").await.is_some());
    assert_eq!(
        fake.paths()[1..3],
        [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration"
        ]
    );
}

#[tokio::test]
async fn legacy_2025_03_26_metadata_at_the_root_then_default_endpoints() {
    let fake = Fake::start(|seen, base| {
        if let Some(answer) = endpoints(seen) {
            return answer;
        }
        match seen.path.as_str() {
            "/.well-known/oauth-authorization-server" => {
                (200, as_metadata(&format!("{base}/oauth")))
            }
            _ => not_found(),
        }
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert!(after_401(&provider, "Bearer").await.is_some());
    assert_eq!(
        fake.paths(),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server",
            "/oauth/register",
            "/oauth/token",
        ]
    );

    // No metadata at all: /authorize, /token, /register on the base.
    let fake = Fake::start(|seen, _| endpoints(seen).unwrap_or_else(not_found)).await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert!(after_401(&provider, "Bearer").await.is_some());
    assert_eq!(fake.paths()[3..], ["/register", "/token"]);
    assert_eq!(approver.urls.lock().unwrap()[0].path(), "/authorize");
    assert_eq!(approver.query(0)["resource"], format!("{}/mcp", fake.base));
}

#[tokio::test]
async fn a_mismatched_resource_stops_before_any_authorization_request() {
    let fake = Fake::start(|seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": "https://evil.example.com/mcp", "authorization_servers": [base] }),
        ),
        "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
        _ => endpoints(seen).unwrap_or_else(not_found),
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    let error = provider
        .on_unauthorized(401, Some("Bearer"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("evil.example.com"), "{error}");
    assert_eq!(approver.count(), 0);
    assert_eq!(fake.paths(), ["/.well-known/oauth-protected-resource/mcp"]);
}

#[tokio::test]
async fn no_s256_means_no_authorization_request() {
    let fake = Fake::start(|seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base] }),
        ),
        "/.well-known/oauth-authorization-server" => {
            let mut metadata = as_metadata(base);
            metadata["code_challenge_methods_supported"] = json!(["plain"]);
            (200, metadata)
        }
        _ => endpoints(seen).unwrap_or_else(not_found),
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    let error = provider
        .on_unauthorized(401, Some("Bearer"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("S256"), "{error}");
    assert_eq!(approver.count(), 0);
}

/// A fake whose token endpoint counts grants, for refresh and step-up.
async fn standard_fake() -> Fake {
    Fake::start(|seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base] }),
        ),
        "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
        "/token" if seen.form["grant_type"] == "refresh_token" => {
            if seen.form["refresh_token"] != REFRESH {
                return (400, json!({ "error": "invalid_grant" }));
            }
            (
                200,
                json!({ "access_token": "refreshed", "token_type": "Bearer", "expires_in": 3600 }),
            )
        }
        _ => endpoints(seen).unwrap_or_else(not_found),
    })
    .await
}

#[tokio::test]
async fn refresh_once_on_401_then_authorize_again() {
    let fake = standard_fake().await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert_eq!(
        after_401(&provider, "Bearer").await,
        Some(format!("Bearer {TOKEN}"))
    );
    // The token is refused: refresh.
    assert_eq!(
        after_401(&provider, "Bearer").await,
        Some("Bearer refreshed".to_owned())
    );
    assert_eq!(approver.count(), 1);
    let refresh = fake.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(refresh.form["resource"], format!("{}/mcp", fake.base));
    // The refreshed token is refused too: a new authorization.
    assert_eq!(
        after_401(&provider, "Bearer").await,
        Some(format!("Bearer {TOKEN}"))
    );
    assert_eq!(approver.count(), 2);
}

#[tokio::test]
async fn refresh_before_expiry() {
    let fake = Fake::start(|seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base] }),
        ),
        "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
        "/token" if seen.form["grant_type"] == "authorization_code" => (
            200,
            json!({ "access_token": TOKEN, "token_type": "bearer", "expires_in": 5,
                    "refresh_token": REFRESH }),
        ),
        "/token" => (
            200,
            json!({ "access_token": "refreshed", "token_type": "Bearer", "expires_in": 3600 }),
        ),
        _ => endpoints(seen).unwrap_or_else(not_found),
    })
    .await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    // Expiring within the 60 s margin: the next request refreshes first.
    assert_eq!(
        after_401(&provider, "Bearer").await,
        Some("Bearer refreshed".to_owned())
    );
    assert_eq!(
        provider.authorization().await.unwrap(),
        Some("Bearer refreshed".to_owned())
    );
    let grants: Vec<String> = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path == "/token")
        .map(|s| s.form["grant_type"].clone())
        .collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
}

/// A refresh before expiry whose token endpoint hangs holds up only the
/// request that started it, and that one only until its request timeout:
/// the others send the token they hold, which is still good.
#[tokio::test]
async fn a_hung_refresh_stalls_no_other_request() {
    let refresh_seen = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&refresh_seen);
    let fake = Fake::start(move |seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base] }),
        ),
        "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
        // Within the 60 s refresh margin, and good for 30 s more.
        "/token" if seen.form["grant_type"] == "authorization_code" => (
            200,
            json!({ "access_token": TOKEN, "token_type": "Bearer", "expires_in": 30,
                    "refresh_token": REFRESH }),
        ),
        "/token" => {
            notify.notify_one();
            (HANG, Value::Null)
        }
        _ => endpoints(seen).unwrap_or_else(not_found),
    })
    .await;
    let approver = Arc::new(Approver::default());
    let mut options = OAuthOptions::new(
        Url::parse(&format!("{}/mcp", fake.base)).unwrap(),
        Grant::AuthorizationCode(Arc::clone(&approver) as Arc<dyn Interaction>),
    );
    let request_timeout = std::time::Duration::from_secs(2);
    options.request_timeout = request_timeout;
    let provider = Arc::new(OAuthProvider::new(options).unwrap());
    assert!(provider.on_unauthorized(401, Some("Bearer")).await.unwrap());

    // The first request after it finds the token due and refreshes.
    let refresher = {
        let provider = Arc::clone(&provider);
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let header = provider.authorization().await.unwrap();
            (header, started.elapsed())
        })
    };
    refresh_seen.notified().await;
    // Meanwhile every other request goes out at once with the held token.
    for _ in 0..3 {
        let header = tokio::time::timeout(
            std::time::Duration::from_millis(500),
            provider.authorization(),
        )
        .await
        .expect("a request waited for another request's refresh")
        .unwrap();
        assert_eq!(header, Some(format!("Bearer {TOKEN}")));
    }
    // The refresh gives up at its request timeout; the failed refresh
    // drops the tokens, so the next 401 authorizes again.
    let (header, took) = refresher.await.unwrap();
    assert_eq!(header, None);
    assert!(
        took >= request_timeout && took < request_timeout * 3,
        "the refresh took {took:?}"
    );
    let refreshes = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path == "/token" && s.form["grant_type"] == "refresh_token")
        .count();
    assert_eq!(refreshes, 1, "one refresh in flight at a time");
}

/// A 401's renewal whose token endpoint hangs holds up no request that
/// is not refused: they send the token held meanwhile. A second refusal
/// waits for the renewal in flight and is retried with its tokens, without
/// a second refresh or authorization.
#[tokio::test]
async fn a_hung_renewal_after_a_401_stalls_no_request_that_was_not_refused() {
    let refresh_seen = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&refresh_seen);
    let grants = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let fake = Fake::start(move |seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base] }),
        ),
        "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
        // Good for an hour: no refresh before expiry.
        "/token" if seen.form["grant_type"] == "authorization_code" => {
            let n = grants.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            token_response(&format!("{TOKEN}-{n}"))
        }
        "/token" => {
            notify.notify_one();
            (HANG, Value::Null)
        }
        _ => endpoints(seen).unwrap_or_else(not_found),
    })
    .await;
    let approver = Arc::new(Approver::default());
    let mut options = OAuthOptions::new(
        Url::parse(&format!("{}/mcp", fake.base)).unwrap(),
        Grant::AuthorizationCode(Arc::clone(&approver) as Arc<dyn Interaction>),
    );
    let request_timeout = std::time::Duration::from_secs(2);
    options.request_timeout = request_timeout;
    let provider = Arc::new(OAuthProvider::new(options).unwrap());
    let first = format!("Bearer {TOKEN}-1");
    assert_eq!(after_401(&provider, "Bearer").await, Some(first.clone()));

    // The server refuses the token: the renewal refreshes, and the token
    // endpoint hangs.
    let renewal = {
        let provider = Arc::clone(&provider);
        let sent = first.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let retry = provider
                .on_refusal(401, Some("Bearer"), Some(&sent))
                .await
                .unwrap();
            (retry, started.elapsed())
        })
    };
    refresh_seen.notified().await;
    // Meanwhile requests that were not refused go out at once with the
    // token held.
    for _ in 0..3 {
        let header = tokio::time::timeout(
            std::time::Duration::from_millis(500),
            provider.authorization(),
        )
        .await
        .expect("a request waited for another request's renewal")
        .unwrap();
        assert_eq!(header, Some(first.clone()));
    }
    // A second refusal of the same token joins the renewal in flight.
    let joined = {
        let provider = Arc::clone(&provider);
        let sent = first.clone();
        tokio::spawn(async move {
            provider
                .on_refusal(401, Some("Bearer"), Some(&sent))
                .await
                .unwrap()
        })
    };
    // The refresh gives up at its request timeout, and the renewal
    // authorizes again.
    let (retry, took) = renewal.await.unwrap();
    assert!(retry);
    assert!(
        took >= request_timeout && took < request_timeout * 3,
        "the renewal took {took:?}"
    );
    assert!(joined.await.unwrap(), "the second refusal is retried");
    let second = Some(format!("Bearer {TOKEN}-2"));
    assert_eq!(provider.authorization().await.unwrap(), second);
    let token_requests: Vec<String> = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path == "/token")
        .map(|s| s.form["grant_type"].clone())
        .collect();
    assert_eq!(
        token_requests,
        ["authorization_code", "refresh_token", "authorization_code"],
        "one renewal for both refusals"
    );
    assert_eq!(approver.count(), 2);
}

#[tokio::test]
async fn step_up_on_insufficient_scope_at_most_three_times() {
    let fake = standard_fake().await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert!(
        after_401(&provider, r#"Bearer scope="read""#)
            .await
            .is_some()
    );
    let step_up = r#"Bearer error="insufficient_scope", scope="read write""#;
    for attempt in 1..=3 {
        assert!(
            provider.on_unauthorized(403, Some(step_up)).await.unwrap(),
            "{attempt}"
        );
        assert_eq!(approver.query(attempt)["scope"], "read write");
    }
    assert!(!provider.on_unauthorized(403, Some(step_up)).await.unwrap());
    assert_eq!(approver.count(), 4);
    // A 403 that is not a scope problem is not ours.
    assert!(
        !provider
            .on_unauthorized(403, Some(r#"Bearer error="invalid_token""#))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn tokens_persist_per_server_and_issuer_and_are_reused() {
    let fake = standard_fake().await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileTokenStore::new(dir.path()));
    let make = |approver: &Arc<Approver>| {
        let mut options = OAuthOptions::new(
            Url::parse(&format!("{}/mcp", fake.base)).unwrap(),
            Grant::AuthorizationCode(Arc::clone(approver) as Arc<dyn Interaction>),
        );
        options.store = Arc::clone(&store) as Arc<dyn TokenStore>;
        OAuthProvider::new(options).unwrap()
    };
    let approver = Arc::new(Approver::default());
    assert!(after_401(&make(&approver), "Bearer").await.is_some());
    // A new process: discovery names the issuer, the stored refresh token
    // is used, nobody is asked.
    let approver2 = Arc::new(Approver::default());
    let second = make(&approver2);
    assert_eq!(
        after_401(&second, "Bearer").await,
        Some("Bearer refreshed".to_owned())
    );
    assert_eq!(approver2.count(), 0);
    // The registration was reused too: one /register in all.
    assert_eq!(fake.paths().iter().filter(|p| *p == "/register").count(), 1);
    second.logout().await.unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn errors_never_carry_credentials() {
    let fake = Fake::start(|seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base] }),
        ),
        "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
        "/token" => (
            400,
            json!({ "error": "invalid_grant", "error_description": "bad code" }),
        ),
        _ => endpoints(seen).unwrap_or_else(not_found),
    })
    .await;
    let approver = Arc::new(Approver::default());
    let mut options = OAuthOptions::new(
        Url::parse(&format!("{}/mcp", fake.base)).unwrap(),
        Grant::AuthorizationCode(Arc::clone(&approver) as Arc<dyn Interaction>),
    );
    options.client_id = Some("pre-registered".to_owned());
    options.client_secret = Some(Secret::new(SECRET));
    let provider = OAuthProvider::new(options.clone()).unwrap();
    let error = provider
        .on_unauthorized(401, Some("Bearer"))
        .await
        .unwrap_err();
    let shown = format!("{error} {error:?} {options:?}");
    assert!(shown.contains("invalid_grant"), "{shown}");
    for secret in [SECRET, "RECOGNISABLE-CODE", "code_verifier"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    // Pre-registered: no registration request.
    assert!(fake.find("/register").is_none());
}

#[tokio::test]
async fn client_credentials_with_a_secret_posts_when_basic_is_unsupported() {
    let fake = Fake::start(|seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base],
                    "scopes_supported": ["m2m"] }),
        ),
        "/.well-known/oauth-authorization-server" => {
            let mut metadata = as_metadata(base);
            metadata["token_endpoint_auth_methods_supported"] = json!(["client_secret_post"]);
            (200, metadata)
        }
        _ => endpoints(seen).unwrap_or_else(not_found),
    })
    .await;
    let mut options = OAuthOptions::new(
        Url::parse(&format!("{}/mcp", fake.base)).unwrap(),
        Grant::ClientCredentials,
    );
    options.client_id = Some("machine".to_owned());
    options.client_secret = Some(Secret::new(SECRET));
    let provider = OAuthProvider::new(options).unwrap();
    assert_eq!(
        after_401(&provider, "Bearer").await,
        Some(format!("Bearer {TOKEN}"))
    );
    let token = fake.find("/token").unwrap();
    assert_eq!(token.form["grant_type"], "client_credentials");
    assert_eq!(token.form["client_id"], "machine");
    assert_eq!(token.form["client_secret"], SECRET);
    assert_eq!(token.form["scope"], "m2m");
    assert_eq!(token.form["resource"], format!("{}/mcp", fake.base));
    assert!(token.authorization.is_none());
}

#[tokio::test]
async fn a_refusal_of_already_replaced_credentials_retries_without_renewing() {
    let fake = standard_fake().await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    // Two requests went out without a token; the first refusal authorizes.
    assert!(
        provider
            .on_refusal(401, Some("Bearer"), None)
            .await
            .unwrap()
    );
    // The second one's refusal finds a token it did not carry: just retry.
    assert!(
        provider
            .on_refusal(401, Some("Bearer"), None)
            .await
            .unwrap()
    );
    assert_eq!(approver.count(), 1);
    assert_eq!(fake.paths().iter().filter(|p| *p == "/token").count(), 1);
    // The current token itself refused: refresh.
    let current = provider.authorization().await.unwrap();
    assert!(
        provider
            .on_refusal(401, Some("Bearer"), current.as_deref())
            .await
            .unwrap()
    );
    assert_eq!(
        provider.authorization().await.unwrap(),
        Some("Bearer refreshed".to_owned())
    );
}

/// A host that must never wait for a person (a connection manager).
#[derive(Debug)]
struct Unattended;

#[async_trait]
impl Interaction for Unattended {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:1/callback".to_owned()
    }

    async fn authorize(&self, _authorization_url: &Url) -> Result<Url, OAuthError> {
        panic!("an unattended interaction is never asked to authorize")
    }

    fn interactive(&self) -> bool {
        false
    }
}

#[tokio::test]
async fn a_pre_registered_client_refreshes_after_a_restart_and_unattended_hosts_never_register() {
    let fake = standard_fake().await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileTokenStore::new(dir.path()));
    let make = |grant: Grant| {
        let mut options =
            OAuthOptions::new(Url::parse(&format!("{}/mcp", fake.base)).unwrap(), grant);
        options.store = Arc::clone(&store) as Arc<dyn TokenStore>;
        options.client_id = Some("pre-registered".to_owned());
        options.scopes = vec!["configured".to_owned()];
        OAuthProvider::new(options).unwrap()
    };
    let approver = Arc::new(Approver::default());
    let first = make(Grant::AuthorizationCode(
        Arc::clone(&approver) as Arc<dyn Interaction>
    ));
    assert!(after_401(&first, "Bearer").await.is_some());
    assert_eq!(approver.query(0)["client_id"], "pre-registered");
    assert!(approver.query(0)["scope"].contains("configured"));

    // A new process that cannot ask anyone: the stored refresh token and
    // the configured client id are enough.
    let second = make(Grant::AuthorizationCode(Arc::new(Unattended)));
    assert_eq!(
        after_401(&second, "Bearer").await,
        Some("Bearer refreshed".to_owned())
    );
    let refresh = fake.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(refresh.form["grant_type"], "refresh_token");

    // Without stored tokens it fails at once, before any registration.
    second.logout().await.unwrap();
    let third = make(Grant::AuthorizationCode(Arc::new(Unattended)));
    let error = third
        .on_unauthorized(401, Some("Bearer"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("log in"), "{error}");
    assert!(!fake.paths().iter().any(|p| p == "/register"));
}

/// A certificate for 127.0.0.1, made now, and a TLS acceptor serving it.
fn test_certificate() -> (String, tokio_rustls::TlsAcceptor) {
    use tokio_rustls::rustls;
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

#[tokio::test]
async fn an_authorization_server_behind_a_private_ca_is_trusted_through_the_options() {
    let (pem, acceptor) = test_certificate();
    let fake = Fake::start_tls(
        |seen, base| match seen.path.as_str() {
            "/.well-known/oauth-protected-resource/mcp" => (
                200,
                json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base] }),
            ),
            "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
            _ => endpoints(seen).unwrap_or_else(not_found),
        },
        acceptor,
    )
    .await;
    assert!(fake.base.starts_with("https://127.0.0.1:"));
    let options = |roots: Vec<String>| {
        let mut options = OAuthOptions::new(
            Url::parse(&format!("{}/mcp", fake.base)).unwrap(),
            Grant::ClientCredentials,
        );
        options.client_id = Some("machine".to_owned());
        options.client_secret = Some(Secret::new(SECRET));
        options.extra_root_certificates = roots;
        options
    };

    let trusting = OAuthProvider::new(options(vec![pem])).unwrap();
    assert_eq!(
        after_401(&trusting, "Bearer").await,
        Some(format!("Bearer {TOKEN}"))
    );
    assert_eq!(
        fake.find("/token").unwrap().form["grant_type"],
        "client_credentials"
    );

    // The webpki roots alone do not trust it: no request gets through.
    let before = fake.paths().len();
    let default = OAuthProvider::new(options(Vec::new())).unwrap();
    assert!(default.on_refusal(401, Some("Bearer"), None).await.is_err());
    assert_eq!(fake.paths().len(), before);

    let broken = OAuthProvider::new(options(vec!["not a certificate".to_owned()]));
    assert!(matches!(broken, Err(OAuthError::Config(_))), "{broken:?}");
}

/// An authorization server of its own: registration hands out
/// `{name}-client`, tokens are `{name}-token-N` (N counting its grants)
/// with the refresh token `{name}-refresh`.
async fn named_authorization_server(name: &'static str) -> Fake {
    let grants = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    Fake::start(move |seen, base| match seen.path.as_str() {
        "/.well-known/oauth-authorization-server" => (200, as_metadata(base)),
        "/register" => (
            201,
            json!({ "client_id": format!("{name}-client"), "client_secret": format!("{name}-secret") }),
        ),
        "/token" => {
            if seen.form["grant_type"] == "refresh_token"
                && seen.form["refresh_token"] != format!("{name}-refresh")
            {
                return (400, json!({ "error": "invalid_grant" }));
            }
            let n = grants.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            (
                200,
                json!({ "access_token": format!("{name}-token-{n}"), "token_type": "Bearer",
                        "expires_in": 3600, "refresh_token": format!("{name}-refresh") }),
            )
        }
        _ => not_found(),
    })
    .await
}

/// The client id an authorization server saw in a token request's Basic
/// credentials.
fn basic_client_id(seen: &Seen) -> String {
    use base64::Engine as _;
    let encoded = seen
        .authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Basic "))
        .expect("client_secret_basic");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    let text = String::from_utf8(decoded).unwrap();
    text.split(':').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_refused_token_looks_again_and_a_new_issuer_gets_its_own_registration_and_tokens() {
    let first = named_authorization_server("first").await;
    let second = named_authorization_server("second").await;
    // The resource's metadata names the first server, then the second.
    let current = Arc::new(Mutex::new(first.base.clone()));
    let resource = {
        let current = Arc::clone(&current);
        Fake::start(move |seen, base| match seen.path.as_str() {
            "/.well-known/oauth-protected-resource/mcp" => (
                200,
                json!({ "resource": format!("{base}/mcp"),
                        "authorization_servers": [current.lock().unwrap().clone()] }),
            ),
            _ => not_found(),
        })
        .await
    };
    let dir = tempfile::tempdir().unwrap();
    let approver = Arc::new(Approver::default());
    let mut options = OAuthOptions::new(
        Url::parse(&format!("{}/mcp", resource.base)).unwrap(),
        Grant::AuthorizationCode(Arc::clone(&approver) as Arc<dyn Interaction>),
    );
    options.store = Arc::new(FileTokenStore::new(dir.path())) as Arc<dyn TokenStore>;
    let provider = OAuthProvider::new(options).unwrap();
    // The same challenge every time: it names the same metadata document.
    let challenge = format!(
        r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
        resource.base
    );

    assert!(
        provider
            .on_refusal(401, Some(&challenge), None)
            .await
            .unwrap()
    );
    let token = provider.authorization().await.unwrap();
    assert_eq!(token.as_deref(), Some("Bearer first-token-1"));
    assert_eq!(approver.query(0)["client_id"], "first-client");

    // The resource moves to the second server and refuses the first's token.
    current.lock().unwrap().clone_from(&second.base);
    assert!(
        provider
            .on_refusal(401, Some(&challenge), token.as_deref())
            .await
            .unwrap()
    );
    let token = provider.authorization().await.unwrap();
    assert_eq!(token.as_deref(), Some("Bearer second-token-1"));
    let prm_fetches = resource.paths().len();
    assert_eq!(
        prm_fetches, 2,
        "the metadata was fetched again after the refusal"
    );
    // A registration of its own at the second server; nothing of the first
    // server's reached it: not its client id, not its refresh token.
    assert_eq!(
        second.paths(),
        [
            "/.well-known/oauth-authorization-server",
            "/register",
            "/token"
        ]
    );
    assert_eq!(approver.count(), 2);
    assert_eq!(approver.query(1)["client_id"], "second-client");
    let token_request = second.find("/token").unwrap();
    assert_eq!(token_request.form["grant_type"], "authorization_code");
    assert_eq!(basic_client_id(&token_request), "second-client");
    // The first server was not asked for anything more.
    assert_eq!(first.paths().len(), 3);
    // Keyed by issuer: each server's credentials are stored apart.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);

    // Back to the first server: its stored registration and refresh token
    // serve again, without a new registration or a person.
    current.lock().unwrap().clone_from(&first.base);
    assert!(
        provider
            .on_refusal(401, Some(&challenge), token.as_deref())
            .await
            .unwrap()
    );
    assert_eq!(
        provider.authorization().await.unwrap().as_deref(),
        Some("Bearer first-token-2")
    );
    assert_eq!(approver.count(), 2);
    assert_eq!(
        first.paths().iter().filter(|p| *p == "/register").count(),
        1
    );
    let refresh = first.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(refresh.form["grant_type"], "refresh_token");
    assert_eq!(refresh.form["refresh_token"], "first-refresh");
    assert_eq!(basic_client_id(&refresh), "first-client");
}

#[tokio::test]
async fn a_refused_token_at_an_unchanged_issuer_is_refreshed_as_before() {
    let fake = standard_fake().await;
    let approver = Arc::new(Approver::default());
    let provider = code_provider(&format!("{}/mcp", fake.base), &approver);
    assert!(
        provider
            .on_refusal(401, Some("Bearer"), None)
            .await
            .unwrap()
    );
    let sent = provider.authorization().await.unwrap();
    assert!(
        provider
            .on_refusal(401, Some("Bearer"), sent.as_deref())
            .await
            .unwrap()
    );
    assert_eq!(
        provider.authorization().await.unwrap().as_deref(),
        Some("Bearer refreshed")
    );
    // Looked again (metadata twice), same issuer: one registration, one
    // person, a refresh.
    let paths = fake.paths();
    let count = |path: &str| paths.iter().filter(|p| *p == path).count();
    assert_eq!(count("/.well-known/oauth-protected-resource/mcp"), 2);
    assert_eq!(count("/register"), 1);
    assert_eq!(approver.count(), 1);
}

#[tokio::test]
async fn workload_identity_sends_the_platform_jwt_as_a_jwt_bearer_assertion_read_each_time() {
    let fake = Fake::start(|seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => (
            200,
            json!({ "resource": format!("{base}/mcp"), "authorization_servers": [base],
                    "scopes_supported": ["workload"] }),
        ),
        "/.well-known/oauth-authorization-server" => {
            let mut metadata = as_metadata(base);
            metadata["grant_types_supported"] =
                json!(["urn:ietf:params:oauth:grant-type:jwt-bearer"]);
            metadata["token_endpoint_auth_methods_supported"] = json!(["none"]);
            (200, metadata)
        }
        "/token" if seen.form["assertion"].ends_with(".revoked") => (
            400,
            json!({ "error": "invalid_grant", "error_description": "assertion refused" }),
        ),
        // No refresh token: a workload simply asks again.
        "/token" => (
            200,
            json!({ "access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600 }),
        ),
        _ => not_found(),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("workload.jwt");
    std::fs::write(&file, "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3In0.first\n").unwrap();
    let mut options = OAuthOptions::new(
        Url::parse(&format!("{}/mcp", fake.base)).unwrap(),
        Grant::JwtBearer(mcp_client_oauth::WorkloadAssertion::File(file.clone())),
    );
    options.client_id = Some("workload-client".to_owned());
    let provider = OAuthProvider::new(options).unwrap();
    assert_eq!(
        after_401(&provider, "Bearer").await,
        Some(format!("Bearer {TOKEN}"))
    );
    let token = fake.find("/token").unwrap();
    assert_eq!(
        token.form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(
        token.form["assertion"],
        "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3In0.first"
    );
    assert_eq!(token.form["client_id"], "workload-client");
    assert_eq!(token.form["resource"], format!("{}/mcp", fake.base));
    assert_eq!(token.form["scope"], "workload");
    assert!(fake.find("/register").is_none());

    // The platform rotated the token: the next grant reads the new one; its
    // refusal is reported as it came, and no other grant is tried.
    std::fs::write(&file, "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3In0.revoked").unwrap();
    let sent = provider.authorization().await.unwrap();
    let error = provider
        .on_refusal(401, Some("Bearer"), sent.as_deref())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("invalid_grant"), "{error}");
    assert!(!error.to_string().contains("eyJ"), "{error}");
    let grants: Vec<Seen> = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path == "/token")
        .cloned()
        .collect();
    assert_eq!(grants.len(), 2);
    assert!(grants[1].form["assertion"].ends_with(".revoked"));
    assert!(
        grants
            .iter()
            .all(|s| s.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
}

#[tokio::test]
async fn a_workload_token_that_cannot_be_read_or_is_no_jwt_is_a_clear_error_without_its_text() {
    use mcp_client_oauth::WorkloadAssertion;
    let dir = tempfile::tempdir().unwrap();
    let missing = WorkloadAssertion::File(dir.path().join("absent.jwt"));
    let error = missing.read().unwrap_err().to_string();
    assert!(
        error.contains("absent.jwt") && error.contains("cannot be read"),
        "{error}"
    );
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, "RECOGNISABLE-NOT-A-JWT").unwrap();
    let error = WorkloadAssertion::File(garbage)
        .read()
        .unwrap_err()
        .to_string();
    assert!(error.contains("not a JWT"), "{error}");
    assert!(!error.contains("RECOGNISABLE"), "{error}");
    // Cargo sets CARGO_PKG_NAME for every test: set, but no JWT; the
    // error names the variable, never its value.
    let error = WorkloadAssertion::Env("CARGO_PKG_NAME".to_owned())
        .read()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("CARGO_PKG_NAME") && error.contains("not a JWT"),
        "{error}"
    );
    assert!(!error.contains("mcp-client-oauth"), "{error}");
    let error = WorkloadAssertion::Env("MCP_OAUTH_TEST_SURELY_UNSET".to_owned())
        .read()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("MCP_OAUTH_TEST_SURELY_UNSET") && error.contains("not set"),
        "{error}"
    );
    let long = dir.path().join("long");
    std::fs::write(&long, "a".repeat(70 * 1024)).unwrap();
    let error = WorkloadAssertion::File(long)
        .read()
        .unwrap_err()
        .to_string();
    assert!(error.contains("longer than"), "{error}");
}

//! DPoP (RFC 9449) end to end: the HTTP transport and the provider against a fake authorization server and MCP server on 127.0.0.1 that check every proof (signature, typ, htm, htu, iat, jti, ath, nonce, key binding) and ask for nonces.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::HeaderMap;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_client_oauth::{
    FileTokenStore, Grant, Interaction, OAuthError, OAuthOptions, OAuthProvider,
};
use mcp_proto::EraPolicy;
use mcp_proto::session::SessionOptions;
use mcp_transport::{AuthProvider, Client, ClientOptions, HttpOptions, HttpTransport};
use serde_json::{Value, json};
use url::Url;

const AS_NONCE: &str = "as-nonce-1";
const RS_NONCE: &str = "rs-nonce-1";
const RS_NONCE_ROTATED: &str = "rs-nonce-2";

/// One request a fake saw, and what its DPoP proof said.
#[derive(Debug, Clone)]
struct Seen {
    server: &'static str,
    method: String,
    path: String,
    /// The JSON-RPC method (MCP server) or grant type (token endpoint).
    what: Option<String>,
    scheme: Option<String>,
    proof: Option<Proof>,
    status: u16,
}

/// The checked claims of a proof.
#[derive(Debug, Clone)]
struct Proof {
    htm: String,
    htu: String,
    ath: bool,
    nonce: Option<String>,
    /// The RFC 7638 thumbprint of the proof's key.
    jkt: String,
}

/// What both fakes share: which key each token is bound to, the proofs'
/// `jti`s, the MCP server's current nonce, what the token endpoint answers.
struct World {
    authorization_server: Mutex<String>,
    resource: Mutex<String>,
    tokens: Mutex<HashMap<String, String>>,
    refresh_tokens: Mutex<HashMap<String, String>>,
    jtis: Mutex<HashSet<String>>,
    resource_nonce: Mutex<String>,
    seen: Mutex<Vec<Seen>>,
    /// Offer DPoP in the metadata.
    offers_dpop: bool,
    /// The `token_type` of every token response.
    token_type: &'static str,
}

impl World {
    fn new(offers_dpop: bool, token_type: &'static str) -> Arc<World> {
        Arc::new(World {
            authorization_server: Mutex::new(String::new()),
            resource: Mutex::new(String::new()),
            tokens: Mutex::new(HashMap::new()),
            refresh_tokens: Mutex::new(HashMap::new()),
            jtis: Mutex::new(HashSet::new()),
            resource_nonce: Mutex::new(RS_NONCE.to_owned()),
            seen: Mutex::new(Vec::new()),
            offers_dpop,
            token_type,
        })
    }

    fn seen(&self, server: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.server == server)
            .cloned()
            .collect()
    }
}

/// A fake's answer.
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn answer(status: u16, body: Value) -> Answer {
    Answer {
        status,
        headers: vec![("content-type", "application/json".to_owned())],
        body: body.to_string(),
    }
}

/// One request as a handler gets it.
struct Incoming {
    method: String,
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Incoming {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

type Handler = dyn Fn(&Incoming) -> (Answer, Seen) + Send + Sync;

/// Serves `handler` on 127.0.0.1 and returns its base URL.
async fn serve(world: Arc<World>, handler: Arc<Handler>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (world, handler) = (Arc::clone(&world), Arc::clone(&handler));
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let (world, handler) = (Arc::clone(&world), Arc::clone(&handler));
                    async move {
                        let (parts, body) = request.into_parts();
                        let incoming = Incoming {
                            method: parts.method.to_string(),
                            path: parts.uri.path().to_owned(),
                            headers: parts.headers,
                            body: body.collect().await.unwrap().to_bytes(),
                        };
                        let (answer, seen) = handler(&incoming);
                        world.seen.lock().unwrap().push(seen);
                        let mut response =
                            hyper::Response::new(Full::new(Bytes::from(answer.body)));
                        *response.status_mut() =
                            hyper::StatusCode::from_u16(answer.status).unwrap();
                        for (name, value) in answer.headers {
                            response.headers_mut().insert(name, value.parse().unwrap());
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

fn s256(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()))
}

fn decode(part: &str) -> Result<Value, String> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| "not base64url".to_owned())?;
    serde_json::from_slice(&bytes).map_err(|_| "not JSON".to_owned())
}

/// Checks a proof as RFC 9449 §4.3 says a server does: one JWT of type
/// `dpop+jwt`, ES256 over a public P-256 JWK, signed by that key, naming
/// this method and URL, issued just now, a `jti` never seen before, and
/// `ath` exactly when an access token is presented.
fn check_proof(
    world: &World,
    proof: Option<String>,
    method: &str,
    url: &str,
    access_token: Option<&str>,
) -> Result<Proof, String> {
    let proof = proof.ok_or("no DPoP header")?;
    let parts: Vec<&str> = proof.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("not a JWS".to_owned());
    };
    let head = decode(header)?;
    if head["typ"] != "dpop+jwt" || head["alg"] != "ES256" {
        return Err(format!("header {head}"));
    }
    let jwk = &head["jwk"];
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" || jwk.get("d").is_some() {
        return Err(format!("jwk {jwk}"));
    }
    let mut point = vec![4u8];
    for coordinate in ["x", "y"] {
        let text = jwk[coordinate].as_str().ok_or("no coordinate")?;
        point.extend(URL_SAFE_NO_PAD.decode(text).map_err(|_| "bad coordinate")?);
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| "bad signature encoding")?;
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &point)
        .verify(format!("{header}.{claims}").as_bytes(), &signature)
        .map_err(|_| "the signature does not verify")?;
    let claims = decode(claims)?;
    let jti = claims["jti"].as_str().ok_or("no jti")?.to_owned();
    if !world.jtis.lock().unwrap().insert(jti) {
        return Err("a jti seen before".to_owned());
    }
    if claims["htm"] != method {
        return Err(format!("htm {}", claims["htm"]));
    }
    if claims["htu"] != url {
        return Err(format!("htu {} for {url}", claims["htu"]));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let iat = claims["iat"].as_u64().ok_or("no iat")?;
    if iat.abs_diff(now) > 60 {
        return Err("iat is not now".to_owned());
    }
    match (access_token, claims.get("ath")) {
        (Some(token), Some(ath)) if ath == &Value::from(s256(token)) => {}
        (None, None) => {}
        (_, ath) => return Err(format!("ath {ath:?}")),
    }
    let jkt = s256(&format!(
        r#"{{"crv":"P-256","kty":"EC","x":{},"y":{}}}"#,
        jwk["x"], jwk["y"]
    ));
    Ok(Proof {
        htm: method.to_owned(),
        htu: url.to_owned(),
        ath: access_token.is_some(),
        nonce: claims["nonce"].as_str().map(str::to_owned),
        jkt,
    })
}

/// The authorization server: metadata offering DPoP (or not), a
/// registration, and a token endpoint that wants a proof with its nonce
/// and binds each token to the proof's key.
fn authorization_server(world: Arc<World>) -> Arc<Handler> {
    Arc::new(move |request| {
        let base = world.authorization_server.lock().unwrap().clone();
        let mut seen = Seen {
            server: "as",
            method: request.method.clone(),
            path: request.path.clone(),
            what: None,
            scheme: None,
            proof: None,
            status: 200,
        };
        let reply = match request.path.as_str() {
            "/.well-known/oauth-authorization-server" => {
                let mut metadata = json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "registration_endpoint": format!("{base}/register"),
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                });
                if world.offers_dpop {
                    metadata["dpop_signing_alg_values_supported"] = json!(["RS256", "ES256"]);
                }
                answer(200, metadata)
            }
            "/register" => answer(201, json!({ "client_id": "dpop-client" })),
            "/token" => token_endpoint(&world, request, &base, &mut seen),
            _ => answer(404, json!({ "error": "not_found" })),
        };
        seen.status = reply.status;
        (reply, seen)
    })
}

fn token_endpoint(world: &World, request: &Incoming, base: &str, seen: &mut Seen) -> Answer {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&request.body)
        .into_owned()
        .collect();
    seen.what = form.get("grant_type").cloned();
    let proof = request.header("dpop");
    // A request without a proof gets an unbound token (of the type the
    // test chose, so that a misbehaving server can be played).
    let (jkt, nonce) = if proof.is_some() {
        match check_proof(world, proof, "POST", &format!("{base}/token"), None) {
            Ok(proof) => {
                seen.proof = Some(proof.clone());
                (Some(proof.jkt), proof.nonce)
            }
            Err(why) => return answer(400, json!({ "error": "invalid_dpop_proof", "why": why })),
        }
    } else {
        (None, None)
    };
    if jkt.is_some() && nonce.as_deref() != Some(AS_NONCE) {
        let mut reply = answer(400, json!({ "error": "use_dpop_nonce" }));
        reply.headers.push(("dpop-nonce", AS_NONCE.to_owned()));
        return reply;
    }
    if form.get("grant_type").map(String::as_str) == Some("refresh_token") {
        let bound = world
            .refresh_tokens
            .lock()
            .unwrap()
            .get(&form["refresh_token"])
            .cloned();
        if bound.is_none() || bound != jkt {
            return answer(400, json!({ "error": "invalid_grant" }));
        }
    }
    let mut tokens = world.tokens.lock().unwrap();
    let access = format!("dpop-token-{}", tokens.len() + 1);
    let refresh = format!("dpop-refresh-{}", tokens.len() + 1);
    tokens.insert(access.clone(), jkt.clone().unwrap_or_default());
    world
        .refresh_tokens
        .lock()
        .unwrap()
        .insert(refresh.clone(), jkt.unwrap_or_default());
    answer(
        200,
        json!({ "access_token": access, "token_type": world.token_type, "expires_in": 3600,
                "refresh_token": refresh }),
    )
}

/// The MCP server: protected resource metadata, and `/mcp` taking only a
/// DPoP-bound token with a proof of its key carrying the current nonce;
/// after the first `tools/list` it hands out a new nonce on a success.
fn resource_server(world: Arc<World>) -> Arc<Handler> {
    Arc::new(move |request| {
        let base = world.resource.lock().unwrap().clone();
        let issuer = world.authorization_server.lock().unwrap().clone();
        let rpc: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let mut seen = Seen {
            server: "rs",
            method: request.method.clone(),
            path: request.path.clone(),
            what: rpc["method"].as_str().map(str::to_owned),
            scheme: None,
            proof: None,
            status: 200,
        };
        let metadata = format!("{base}/.well-known/oauth-protected-resource/mcp");
        let reply = if request.path == "/.well-known/oauth-protected-resource/mcp" {
            answer(
                200,
                json!({ "resource": format!("{base}/mcp"), "authorization_servers": [issuer] }),
            )
        } else {
            mcp_endpoint(&world, request, &rpc, &base, &metadata, &mut seen)
        };
        seen.status = reply.status;
        (reply, seen)
    })
}

fn mcp_endpoint(
    world: &World,
    request: &Incoming,
    rpc: &Value,
    base: &str,
    metadata: &str,
    seen: &mut Seen,
) -> Answer {
    let refuse = |challenge: String| {
        let mut reply = answer(401, json!({ "error": "unauthorized" }));
        reply.headers.push(("www-authenticate", challenge));
        reply
    };
    let Some(authorization) = request.header("authorization") else {
        return refuse(format!(r#"DPoP resource_metadata="{metadata}""#));
    };
    let (scheme, token) = authorization
        .split_once(' ')
        .unwrap_or((&authorization, ""));
    seen.scheme = Some(scheme.to_owned());
    let bound = world.tokens.lock().unwrap().get(token).cloned();
    if scheme != "DPoP" || bound.is_none() {
        return refuse(format!(
            r#"DPoP error="invalid_token", resource_metadata="{metadata}""#
        ));
    }
    let proof = match check_proof(
        world,
        request.header("dpop"),
        &request.method,
        &format!("{base}/mcp"),
        Some(token),
    ) {
        Ok(proof) => proof,
        Err(why) => return answer(400, json!({ "error": "invalid_dpop_proof", "why": why })),
    };
    seen.proof = Some(proof.clone());
    if Some(&proof.jkt) != bound.as_ref() {
        return refuse(r#"DPoP error="invalid_token""#.to_owned());
    }
    let current = world.resource_nonce.lock().unwrap().clone();
    if proof.nonce.as_deref() != Some(current.as_str()) {
        let mut reply = refuse(format!(
            r#"DPoP error="use_dpop_nonce", resource_metadata="{metadata}""#
        ));
        reply.headers.push(("dpop-nonce", current));
        return reply;
    }
    if request.method == "GET" {
        return answer(405, json!({}));
    }
    let Some(id) = rpc.get("id").cloned() else {
        return Answer {
            status: 202,
            headers: Vec::new(),
            body: String::new(),
        };
    };
    let (result, rotate) = match rpc["method"].as_str() {
        Some(mcp_proto::methods::INITIALIZE) => (
            json!({ "protocolVersion": "2025-11-25", "capabilities": { "tools": {} },
                    "serverInfo": { "name": "dpop-fake", "version": "1" } }),
            false,
        ),
        Some("tools/list") => (json!({ "tools": [] }), current == RS_NONCE),
        _ => (json!({}), false),
    };
    let mut reply = answer(200, json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    if rotate {
        // A new nonce on a success, for the next requests (RFC 9449 §8.2).
        RS_NONCE_ROTATED.clone_into(&mut world.resource_nonce.lock().unwrap());
        reply
            .headers
            .push(("dpop-nonce", RS_NONCE_ROTATED.to_owned()));
    }
    reply
}

/// The user approves at once.
#[derive(Debug)]
struct Approver;

#[async_trait]
impl Interaction for Approver {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:1/callback".to_owned()
    }

    async fn authorize(&self, authorization_url: &Url) -> Result<Url, OAuthError> {
        let query: HashMap<String, String> = authorization_url.query_pairs().into_owned().collect();
        let mut redirect = Url::parse(&self.redirect_uri()).unwrap();
        redirect
            .query_pairs_mut()
            .append_pair("code", "the-code")
            .append_pair("state", &query["state"]);
        Ok(redirect)
    }
}

/// Both fakes, started, with their URLs in `world`.
async fn start(world: &Arc<World>) -> String {
    let issuer = serve(Arc::clone(world), authorization_server(Arc::clone(world))).await;
    issuer.clone_into(&mut world.authorization_server.lock().unwrap());
    let resource = serve(Arc::clone(world), resource_server(Arc::clone(world))).await;
    resource.clone_into(&mut world.resource.lock().unwrap());
    format!("{resource}/mcp")
}

fn provider_at(server: &str, store: &std::path::Path) -> Arc<OAuthProvider> {
    let mut options = OAuthOptions::new(
        Url::parse(server).unwrap(),
        Grant::AuthorizationCode(Arc::new(Approver)),
    );
    options.store = Arc::new(FileTokenStore::new(store));
    Arc::new(OAuthProvider::new(options).unwrap())
}

/// Row of the proof table: who, what, which proof.
fn row(seen: &Seen) -> String {
    let proof = match &seen.proof {
        None => "no proof".to_owned(),
        Some(p) => format!(
            "proof htm={} htu=…{}{}{}",
            p.htm,
            Url::parse(&p.htu).unwrap().path(),
            if p.ath { " ath" } else { "" },
            p.nonce
                .as_deref()
                .map(|n| format!(" nonce={n}"))
                .unwrap_or_default()
        ),
    };
    format!(
        "{} {} {} {} -> {}: {proof}",
        seen.server,
        seen.method,
        seen.path,
        seen.what.as_deref().unwrap_or("-"),
        seen.status
    )
}

#[tokio::test]
async fn every_request_carries_a_fresh_proof_and_both_servers_nonces_are_honoured() {
    let world = World::new(true, "DPoP");
    let server = start(&world).await;
    let dir = tempfile::tempdir().unwrap();
    let provider = provider_at(&server, dir.path());

    let mut http = HttpOptions::new(server.clone());
    http.auth = Some(Arc::clone(&provider) as Arc<dyn AuthProvider>);
    let transport = HttpTransport::connect(http).await.unwrap();
    let session = SessionOptions::default().era(EraPolicy::Legacy);
    let options = ClientOptions::default().session(session);
    let client = Client::connect(transport, options).await.unwrap();
    client.list_tools(None).await.unwrap();
    client.list_tools(None).await.unwrap();
    client.close().await;

    let table: Vec<String> = world.seen.lock().unwrap().iter().map(row).collect();
    let table = table.join("\n");
    // The token request: a proof without ath, refused for the nonce, then
    // again with it.
    let tokens = world.seen("as");
    let tokens: Vec<&Seen> = tokens.iter().filter(|s| s.path == "/token").collect();
    assert_eq!(tokens.len(), 2, "{table}");
    assert_eq!(tokens[0].status, 400, "{table}");
    assert_eq!(tokens[0].proof.as_ref().unwrap().nonce, None);
    assert_eq!(tokens[1].status, 200, "{table}");
    assert_eq!(
        tokens[1].proof.as_ref().unwrap().nonce.as_deref(),
        Some(AS_NONCE)
    );
    assert!(tokens.iter().all(|s| !s.proof.as_ref().unwrap().ath));
    let jkt = tokens[1].proof.as_ref().unwrap().jkt.clone();

    // The MCP server: after the unauthenticated first try, every request
    // presents the DPoP scheme and a proof of the same key, with ath; the
    // first is refused for the nonce and sent again with it; after the
    // nonce changed on a success, the next proofs carry the new one.
    let mcp: Vec<Seen> = world
        .seen("rs")
        .into_iter()
        .filter(|s| s.path == "/mcp")
        .collect();
    assert_eq!(mcp[0].scheme, None, "{table}");
    assert_eq!(mcp[0].status, 401);
    let authorized = &mcp[1..];
    assert!(authorized.len() >= 5, "{table}");
    for seen in authorized {
        assert_eq!(seen.scheme.as_deref(), Some("DPoP"), "{table}");
        let proof = seen.proof.as_ref().unwrap();
        assert!(proof.ath && proof.jkt == jkt, "{table}");
        assert_eq!(proof.htm, seen.method);
    }
    assert_eq!(authorized[0].what.as_deref(), Some("initialize"));
    assert_eq!(authorized[0].status, 401, "{table}");
    assert_eq!(authorized[0].proof.as_ref().unwrap().nonce, None);
    assert_eq!(authorized[1].what.as_deref(), Some("initialize"));
    assert_eq!(authorized[1].status, 200, "{table}");
    let lists: Vec<&Seen> = authorized
        .iter()
        .filter(|s| s.what.as_deref() == Some("tools/list"))
        .collect();
    assert_eq!(lists.len(), 2, "{table}");
    assert_eq!(
        lists[0].proof.as_ref().unwrap().nonce.as_deref(),
        Some(RS_NONCE)
    );
    assert_eq!(
        lists[1].proof.as_ref().unwrap().nonce.as_deref(),
        Some(RS_NONCE_ROTATED)
    );
    assert!(lists.iter().all(|s| s.status == 200), "{table}");
    // Only the one nonce refusal at the MCP server: the rotated nonce was
    // taken from the success that brought it.
    let refused = authorized
        .iter()
        .filter(|s| s.method == "POST" && s.status == 401)
        .count();
    assert_eq!(refused, 1, "{table}");
    println!("{table}");

    // The key is kept with the tokens, in a file only its owner reads.
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let stored: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert!(stored["dpop_key"].is_string());
    assert_eq!(stored["tokens"]["dpop"], true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Nothing shows the key or a proof.
    let shown = format!("{provider:?}");
    assert!(
        !shown.contains(stored["dpop_key"].as_str().unwrap()),
        "{shown}"
    );

    // Another process: the stored key refreshes the stored token (the
    // refresh token is bound to the same key), with the nonce it learns.
    let again = provider_at(&server, dir.path());
    let sent = "DPoP dpop-token-1";
    assert!(
        again
            .on_refusal(401, Some("DPoP"), Some(sent))
            .await
            .unwrap()
    );
    let refresh = world
        .seen("as")
        .into_iter()
        .rfind(|s| s.path == "/token")
        .unwrap();
    assert_eq!(refresh.what.as_deref(), Some("refresh_token"));
    assert_eq!(refresh.status, 200, "{}", row(&refresh));
    assert_eq!(refresh.proof.as_ref().unwrap().jkt, jkt);
    assert_eq!(
        refresh.proof.as_ref().unwrap().nonce.as_deref(),
        Some(AS_NONCE)
    );
    let mut headers = HeaderMap::new();
    let url = Url::parse(&format!("{server}?ignored=1#frag")).unwrap();
    again
        .authorize_request(&http::Method::DELETE, &url, &mut headers)
        .await
        .unwrap();
    let authorization = headers["authorization"].to_str().unwrap();
    assert!(
        authorization.starts_with("DPoP dpop-token-"),
        "{authorization}"
    );
    let proof = check_proof(
        &world,
        headers.get("dpop").map(|v| v.to_str().unwrap().to_owned()),
        "DELETE",
        &server,
        authorization.strip_prefix("DPoP "),
    )
    .unwrap();
    assert_eq!(proof.jkt, jkt);
}

/// The header a provider sets for one request after a first refusal.
async fn headers_after_authorizing(provider: &OAuthProvider, server: &str) -> HeaderMap {
    assert!(
        provider
            .on_refusal(401, Some("Bearer"), None)
            .await
            .unwrap()
    );
    let mut headers = HeaderMap::new();
    provider
        .authorize_request(
            &http::Method::POST,
            &Url::parse(server).unwrap(),
            &mut headers,
        )
        .await
        .unwrap();
    headers
}

#[tokio::test]
async fn the_token_type_decides_the_scheme_and_is_checked() {
    // DPoP offered, but the server binds nothing: Bearer, no proof.
    let world = World::new(true, "Bearer");
    let server = start(&world).await;
    let dir = tempfile::tempdir().unwrap();
    let headers = headers_after_authorizing(&provider_at(&server, dir.path()), &server).await;
    assert!(
        headers["authorization"]
            .to_str()
            .unwrap()
            .starts_with("Bearer dpop-token-")
    );
    assert!(headers.get("dpop").is_none());

    // DPoP not offered: no proof at the token endpoint, and a DPoP token
    // type that no proof asked for is refused.
    let world = World::new(false, "DPoP");
    let server = start(&world).await;
    let dir = tempfile::tempdir().unwrap();
    let error = provider_at(&server, dir.path())
        .on_refusal(401, Some("Bearer"), None)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("DPoP"), "{error}");
    let token = world
        .seen("as")
        .into_iter()
        .find(|s| s.path == "/token")
        .unwrap();
    assert!(token.proof.is_none());

    // Neither Bearer nor DPoP.
    let world = World::new(true, "mac");
    let server = start(&world).await;
    let dir = tempfile::tempdir().unwrap();
    let error = provider_at(&server, dir.path())
        .on_refusal(401, Some("Bearer"), None)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("neither Bearer nor DPoP"),
        "{error}"
    );
}

#[tokio::test]
async fn dpop_can_be_turned_off() {
    let world = World::new(true, "Bearer");
    let server = start(&world).await;
    let mut options = OAuthOptions::new(
        Url::parse(&server).unwrap(),
        Grant::AuthorizationCode(Arc::new(Approver)),
    );
    options.dpop = false;
    let provider = OAuthProvider::new(options).unwrap();
    let headers = headers_after_authorizing(&provider, &server).await;
    assert!(
        headers["authorization"]
            .to_str()
            .unwrap()
            .starts_with("Bearer ")
    );
    let token = world
        .seen("as")
        .into_iter()
        .find(|s| s.path == "/token")
        .unwrap();
    assert!(token.proof.is_none(), "no proof when DPoP is off");
    assert_eq!(token.status, 200);
}

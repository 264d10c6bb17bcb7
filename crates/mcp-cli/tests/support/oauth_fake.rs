//! A fake OAuth authorization server and protected MCP endpoint on 127.0.0.1 (one origin, as small deployments have), for the login tests of the CLI and the settings page.
//!
//! It registers clients dynamically (RFC 7591), runs the authorization
//! code grant with PKCE (the test plays the browser with [`browser_get`])
//! and the client credentials grant for one pre-registered machine client,
//! and answers MCP requests only with the tokens it issued.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use url::Url;

/// The access token the fake issues: it must never appear in any output.
pub(crate) const TOKEN: &str = "RECOGNISABLE-ACCESS-TOKEN-c0ffee42";
pub(crate) const CODE: &str = "RECOGNISABLE-CODE-51de";
/// The access token the client credentials grant gets: never shown either.
pub(crate) const M2M_TOKEN: &str = "RECOGNISABLE-M2M-ACCESS-TOKEN-beef77";
/// The pre-registered machine client the fake knows.
pub(crate) const M2M_CLIENT: &str = "tracker-machine";
/// Its secret, handed to mcpctl only through the environment.
pub(crate) const M2M_SECRET: &str = "RECOGNISABLE-CLIENT-SECRET-5ec7e7";
/// The variable the config names for that secret.
pub(crate) const SECRET_VAR: &str = "TRACKER_CLIENT_SECRET";

/// What the fake authorization server remembers.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) registered_redirects: Vec<String>,
    pub(crate) registrations: usize,
    pub(crate) authorize: Option<HashMap<String, String>>,
    pub(crate) token_form: Option<HashMap<String, String>>,
    pub(crate) authorized_mcp_requests: usize,
    pub(crate) client_credentials_grants: usize,
}

pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
}

pub(crate) fn reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        headers: vec![("content-type", "application/json".to_owned())],
        body: body.to_string(),
    }
}

/// One route of the fake: authorization server and MCP endpoint share the
/// origin, as many small deployments do.
pub(crate) fn route(
    state: &Mutex<State>,
    base: &str,
    method: &str,
    target: &str,
    authorization: Option<&str>,
    body: &[u8],
) -> Reply {
    let url = Url::parse(&format!("{base}{target}")).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    let mut state = state.lock().unwrap();
    match (method, url.path()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => reply(
            200,
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base],
                   "scopes_supported": ["tools"]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => reply(
            200,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                // `none` for the dynamically registered public client of
                // the authorization code tests; `client_secret_post` for the
                // pre-registered machine client (RFC 6749 §2.3.1).
                "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
            }),
        ),
        ("POST", "/register") => {
            let request: Value = serde_json::from_slice(body).unwrap();
            state.registrations += 1;
            state.registered_redirects = request["redirect_uris"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect();
            reply(
                201,
                json!({"client_id": "cli-client", "token_endpoint_auth_method": "none",
                       "redirect_uris": request["redirect_uris"]}),
            )
        }
        ("GET", "/authorize") => {
            let redirect = query.get("redirect_uri").cloned().unwrap_or_default();
            if !state.registered_redirects.contains(&redirect) {
                return reply(400, json!({"error": "invalid_request"}));
            }
            state.authorize = Some(query.clone());
            let mut location = Url::parse(&redirect).unwrap();
            location
                .query_pairs_mut()
                .append_pair("code", CODE)
                .append_pair("state", &query["state"]);
            Reply {
                status: 302,
                headers: vec![("location", location.to_string())],
                body: String::new(),
            }
        }
        ("POST", "/token") => {
            let form: HashMap<String, String> =
                url::form_urlencoded::parse(body).into_owned().collect();
            // RFC 6749 §4.4.2: the machine client, authenticated by its
            // secret in the body (client_secret_post), for this resource.
            if form.get("grant_type").map(String::as_str) == Some("client_credentials") {
                let ok = form.get("client_id").map(String::as_str) == Some(M2M_CLIENT)
                    && form.get("client_secret").map(String::as_str) == Some(M2M_SECRET)
                    && form.get("resource") == Some(&format!("{base}/mcp"));
                state.token_form = Some(form);
                if !ok {
                    return reply(401, json!({"error": "invalid_client"}));
                }
                state.client_credentials_grants += 1;
                return reply(
                    200,
                    json!({"access_token": M2M_TOKEN, "token_type": "Bearer", "expires_in": 3600}),
                );
            }
            let redirect_ok = state
                .authorize
                .as_ref()
                .is_some_and(|a| a.get("redirect_uri") == form.get("redirect_uri"));
            let ok = form.get("grant_type").map(String::as_str) == Some("authorization_code")
                && form.get("code").map(String::as_str) == Some(CODE)
                && form.get("code_verifier").is_some_and(|v| v.len() >= 43)
                && redirect_ok;
            state.token_form = Some(form);
            if ok {
                reply(
                    200,
                    json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600}),
                )
            } else {
                reply(400, json!({"error": "invalid_grant"}))
            }
        }
        (_, "/mcp")
            if authorization != Some(&format!("Bearer {TOKEN}"))
                && authorization != Some(&format!("Bearer {M2M_TOKEN}")) =>
        {
            Reply {
                status: 401,
                headers: vec![(
                    "www-authenticate",
                    format!(
                        "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                    ),
                )],
                body: String::new(),
            }
        }
        ("POST", "/mcp") => {
            state.authorized_mcp_requests += 1;
            let message: Value = serde_json::from_slice(body).unwrap();
            let Some(id) = message.get("id").cloned() else {
                return Reply {
                    status: 202,
                    headers: Vec::new(),
                    body: String::new(),
                };
            };
            let result = match message["method"].as_str() {
                Some(mcp_proto::methods::INITIALIZE) => json!({
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake-tracker", "version": "1"},
                }),
                Some("tools/list") => json!({"tools": [{
                    "name": "find_issue",
                    "description": "Finds an issue",
                    "inputSchema": {"type": "object"},
                }]}),
                _ => {
                    return reply(
                        200,
                        json!({"jsonrpc": "2.0", "id": id,
                               "error": {"code": -32601, "message": "no such method"}}),
                    );
                }
            };
            reply(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
        }
        _ => reply(405, json!({})),
    }
}

/// The fake on 127.0.0.1, served by its own runtime on a thread.
pub(crate) struct Fake {
    pub(crate) base: String,
    pub(crate) state: Arc<Mutex<State>>,
    pub(crate) _runtime: tokio::runtime::Runtime,
}

impl Fake {
    pub(crate) fn start() -> Fake {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let state = Arc::new(Mutex::new(State::default()));
        let (shared, shared_base) = (Arc::clone(&state), base.clone());
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (state, base) = (Arc::clone(&shared), shared_base.clone());
                tokio::spawn(async move {
                    let service =
                        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                            let (state, base) = (Arc::clone(&state), base.clone());
                            async move {
                                let method = request.method().to_string();
                                let target = request
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
                                let out = route(
                                    &state,
                                    &base,
                                    &method,
                                    &target,
                                    authorization.as_deref(),
                                    &body,
                                );
                                let mut response =
                                    hyper::Response::new(Full::new(Bytes::from(out.body)));
                                *response.status_mut() =
                                    hyper::StatusCode::from_u16(out.status).unwrap();
                                for (name, value) in out.headers {
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
        Fake {
            base,
            state,
            _runtime: runtime,
        }
    }
}

/// The browser: one GET, redirects not followed. Returns the status and
/// the `Location` header.
pub(crate) fn browser_get(url: &str) -> (u16, Option<String>) {
    let url = Url::parse(url).unwrap();
    assert_eq!(url.host_str(), Some("127.0.0.1"), "loopback only: {url}");
    let mut stream = TcpStream::connect((url.host_str().unwrap(), url.port().unwrap())).unwrap();
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        url.authority()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    let location = response.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    });
    (status, location)
}

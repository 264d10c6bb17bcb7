//! `mcpctl login` and `logout` end to end against a fake authorization server and protected MCP endpoint on 127.0.0.1; the test plays the browser.

mod support;

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use support::{Env, Watchdog};
use url::Url;

/// The access token the fake issues: it must never appear in any output.
const TOKEN: &str = "RECOGNISABLE-ACCESS-TOKEN-c0ffee42";
const CODE: &str = "RECOGNISABLE-CODE-51de";
/// The access token the client credentials grant gets: never shown either.
const M2M_TOKEN: &str = "RECOGNISABLE-M2M-ACCESS-TOKEN-beef77";
/// The pre-registered machine client the fake knows.
const M2M_CLIENT: &str = "tracker-machine";
/// Its secret, handed to mcpctl only through the environment.
const M2M_SECRET: &str = "RECOGNISABLE-CLIENT-SECRET-5ec7e7";
/// The variable the config names for that secret.
const SECRET_VAR: &str = "TRACKER_CLIENT_SECRET";

/// What the fake authorization server remembers.
#[derive(Debug, Default)]
struct State {
    registered_redirects: Vec<String>,
    registrations: usize,
    authorize: Option<HashMap<String, String>>,
    token_form: Option<HashMap<String, String>>,
    authorized_mcp_requests: usize,
    client_credentials_grants: usize,
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        headers: vec![("content-type", "application/json".to_owned())],
        body: body.to_string(),
    }
}

/// One route of the fake: authorization server and MCP endpoint share the
/// origin, as many small deployments do.
fn route(
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
                Some("initialize") => json!({
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
struct Fake {
    base: String,
    state: Arc<Mutex<State>>,
    _runtime: tokio::runtime::Runtime,
}

impl Fake {
    fn start() -> Fake {
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
fn browser_get(url: &str) -> (u16, Option<String>) {
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

fn config(env: &Env, fake: &Fake) -> String {
    config_with(env, fake, json!({"scopes": ["tools"]}))
}

fn config_with(env: &Env, fake: &Fake, oauth: Value) -> String {
    let path = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"tracker": {
            "url": format!("{}/mcp", fake.base),
            "oauth": oauth,
        }}}),
    );
    path.to_str().unwrap().to_owned()
}

/// Runs `mcpctl login tracker`, playing the browser, and returns all it printed.
fn login(env: &Env, config: &str) -> (i32, String, String) {
    let args = ["--config", config, "login", "tracker", "--timeout", "60"];
    let mut child = env.command(&args).spawn().unwrap();
    let watchdog = Watchdog::start(&child, format!("mcpctl {args:?}"));
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    let url = loop {
        let mut line = String::new();
        assert_ne!(
            stdout.read_line(&mut line).unwrap(),
            0,
            "mcpctl ended before printing a URL: {printed}"
        );
        printed.push_str(&line);
        if line.trim().starts_with("http://") {
            break line.trim().to_owned();
        }
    };
    let (status, location) = browser_get(&url);
    assert_eq!(status, 302, "the authorization endpoint redirects");
    let callback = location.expect("a Location header");
    let (status, _) = browser_get(&callback);
    assert_eq!(status, 200, "the callback page");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    printed.push_str(&rest);
    let code = child.wait().unwrap().code().unwrap_or(-1);
    watchdog.stop();
    (code, printed, stderr.join().unwrap())
}

#[test]
fn login_stores_tokens_that_later_runs_use_and_logout_forgets_them() {
    let fake = Fake::start();
    let env = Env::new();
    let config = config(&env, &fake);

    // Before logging in, a run never waits for a browser: it says what to do.
    let before = env.run(&["--config", &config, "tools", "tracker"]);
    assert_ne!(before.code, 0, "{before:#?}");
    assert!(before.stderr.contains("auth_required"), "{before:#?}");
    assert!(
        before.stderr.contains("mcpctl login tracker"),
        "{before:#?}"
    );
    assert_eq!(
        fake.state.lock().unwrap().registrations,
        0,
        "an unattended run registers no client"
    );

    let (code, stdout, stderr) = login(&env, &config);
    assert_eq!(code, 0, "login failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("logged in to `tracker`"), "{stdout}");
    {
        let state = fake.state.lock().unwrap();
        let authorize = state.authorize.as_ref().unwrap();
        assert_eq!(authorize["code_challenge_method"], "S256");
        assert_eq!(authorize["resource"], format!("{}/mcp", fake.base));
        assert!(authorize["scope"].split(' ').any(|s| s == "tools"));
        let redirect = Url::parse(&authorize["redirect_uri"]).unwrap();
        assert_eq!(redirect.host_str(), Some("127.0.0.1"));
        assert_eq!(
            state.registered_redirects,
            [authorize["redirect_uri"].clone()]
        );
    }

    // The token file is owner-only.
    let files: Vec<_> = std::fs::read_dir(env.data_dir().join("oauth"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let tools = env.run(&["--config", &config, "tools", "tracker"]);
    assert_eq!(tools.code, 0, "{tools:#?}");
    assert!(tools.stdout.contains("find_issue"), "{tools:#?}");
    let listed = env.json(&["--config", &config, "tools"]);
    assert!(listed.to_string().contains("find_issue"), "{listed}");
    let verbose = env.run(&["--config", &config, "-vvv", "servers"]);
    assert_eq!(verbose.code, 0, "{verbose:#?}");
    assert!(fake.state.lock().unwrap().authorized_mcp_requests > 0);

    let logout = env.run(&["--config", &config, "logout", "tracker"]);
    assert_eq!(logout.code, 0, "{logout:#?}");
    assert!(
        logout.stdout.contains("logged out of `tracker`"),
        "{logout:#?}"
    );
    let after = env.run(&["--config", &config, "tools", "tracker"]);
    assert!(after.stderr.contains("auth_required"), "{after:#?}");

    for text in [
        &before.stdout,
        &before.stderr,
        &stdout,
        &stderr,
        &tools.stdout,
        &tools.stderr,
        &listed.to_string(),
        &verbose.stdout,
        &verbose.stderr,
        &logout.stdout,
        &logout.stderr,
        &after.stdout,
        &after.stderr,
    ] {
        assert!(!text.contains(TOKEN), "the token was printed: {text}");
        assert!(!text.contains(CODE), "the code was printed: {text}");
    }
    assert_eq!(fake.state.lock().unwrap().registrations, 1);
}

#[test]
fn logout_of_a_server_without_tokens_and_login_to_a_stdio_server() {
    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "remote": {"url": "http://127.0.0.1:9/mcp"},
            "local": {"command": "mcp-local"},
        }}),
    );
    let config = config.to_str().unwrap();
    let logout = env.run(&["--config", config, "logout", "remote"]);
    assert_eq!(logout.code, 0, "{logout:#?}");
    assert!(logout.stdout.contains("no stored tokens"), "{logout:#?}");
    let login = env.run(&["--config", config, "login", "local"]);
    assert_eq!(login.code, 2, "{login:#?}");
    assert!(login.stderr.contains("not an HTTP server"), "{login:#?}");
    let unknown = env.run(&["--config", config, "login", "nope"]);
    assert_eq!(unknown.code, 2, "{unknown:#?}");
}

#[test]
fn login_listens_on_the_configured_redirect_port() {
    let fake = Fake::start();
    let env = Env::new();
    let port = support::free_port();
    let config = config_with(&env, &fake, json!({"redirectPort": port}));
    let (code, stdout, stderr) = login(&env, &config);
    assert_eq!(code, 0, "login failed:\n{stdout}\n{stderr}");
    let state = fake.state.lock().unwrap();
    let redirect = &state.authorize.as_ref().unwrap()["redirect_uri"];
    assert_eq!(redirect, &format!("http://127.0.0.1:{port}/callback"));
    assert!(!stdout.contains(TOKEN) && !stderr.contains(TOKEN));
}

#[test]
fn login_gives_up_when_the_browser_never_returns() {
    let fake = Fake::start();
    let env = Env::new();
    let config = config(&env, &fake);
    let run = env.run(&["--config", &config, "login", "tracker", "--timeout", "1"]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(run.stdout.contains("/authorize?"), "{run:#?}");
    assert!(run.stderr.contains("did not return within 1 s"), "{run:#?}");
    assert!(!env.data_dir().join("oauth").exists(), "nothing stored");
}

/// `mcpctl ARGS` with `vars` set (`None`: removed) in its environment.
fn run_with(env: &Env, vars: &[(&str, Option<&str>)], args: &[&str]) -> support::Run {
    let mut command = env.command(args);
    for (name, value) in vars {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    support::run_to_end(command, args)
}

#[test]
fn a_client_credentials_server_is_ready_without_any_login() {
    let fake = Fake::start();
    let env = Env::new();
    let config = config_with(
        &env,
        &fake,
        json!({"grant": "client_credentials", "clientId": M2M_CLIENT,
               "clientSecretEnv": SECRET_VAR, "scopes": ["tools"]}),
    );
    let secret = [(SECRET_VAR, Some(M2M_SECRET))];

    // Without the variable the server cannot resolve: the message names the
    // variable, and nothing is sent to the authorization server.
    let unset = run_with(
        &env,
        &[(SECRET_VAR, None)],
        &["--config", &config, "tools", "tracker"],
    );
    assert_ne!(unset.code, 0, "{unset:#?}");
    assert!(unset.stderr.contains("missing_env"), "{unset:#?}");
    assert!(unset.stderr.contains(SECRET_VAR), "{unset:#?}");
    assert_eq!(fake.state.lock().unwrap().client_credentials_grants, 0);

    // With it, the manager runs the grant by itself: no login, no browser.
    let tools = run_with(&env, &secret, &["--config", &config, "tools", "tracker"]);
    assert_eq!(tools.code, 0, "{tools:#?}");
    assert!(tools.stdout.contains("find_issue"), "{tools:#?}");
    {
        let state = fake.state.lock().unwrap();
        assert_eq!(state.client_credentials_grants, 1);
        assert_eq!(
            state.registrations, 0,
            "a pre-registered client registers nothing"
        );
        assert!(state.authorize.is_none(), "no authorization code grant");
        let form = state.token_form.as_ref().unwrap();
        assert_eq!(form["grant_type"], "client_credentials");
        assert_eq!(form["scope"], "tools");
        assert!(state.authorized_mcp_requests > 0);
    }
    let rows = {
        let args = ["--json", "--config", &config, "servers"];
        let run = run_with(&env, &secret, &args);
        assert_eq!(run.code, 0, "{run:#?}");
        support::parse_one_document(&run.stdout)
    };
    assert_eq!(rows[0]["id"], "tracker", "{rows:#}");
    assert_eq!(rows[0]["status"], "ready", "{rows:#}");
    let verbose = run_with(&env, &secret, &["--config", &config, "-vvv", "tools"]);
    assert_eq!(verbose.code, 0, "{verbose:#?}");

    // `login` gets and stores tokens the same way, without a URL to open.
    let login = run_with(&env, &secret, &["--config", &config, "login", "tracker"]);
    assert_eq!(login.code, 0, "{login:#?}");
    assert!(
        login.stdout.contains("logged in to `tracker`"),
        "{login:#?}"
    );
    assert!(!login.stdout.contains("/authorize"), "{login:#?}");
    assert!(fake.state.lock().unwrap().authorize.is_none());
    let files = std::fs::read_dir(env.data_dir().join("oauth"))
        .unwrap()
        .count();
    assert_eq!(files, 1);

    for run in [&unset, &tools, &verbose, &login] {
        for text in [&run.stdout, &run.stderr] {
            assert!(!text.contains(M2M_TOKEN), "the token was printed: {text}");
            assert!(!text.contains(M2M_SECRET), "the secret was printed: {text}");
        }
    }
    assert!(!rows.to_string().contains(M2M_TOKEN) && !rows.to_string().contains(M2M_SECRET));
}

#[test]
fn a_wrong_client_secret_is_refused_without_being_shown() {
    let fake = Fake::start();
    let env = Env::new();
    let config = config_with(
        &env,
        &fake,
        json!({"grant": "client_credentials", "clientId": M2M_CLIENT,
               "clientSecretEnv": SECRET_VAR}),
    );
    let wrong = "RECOGNISABLE-WRONG-SECRET-0bad";
    let vars = [(SECRET_VAR, Some(wrong))];
    let tools = run_with(&env, &vars, &["--config", &config, "tools", "tracker"]);
    assert_ne!(tools.code, 0, "{tools:#?}");
    // Said as what it is: the credentials, not an unreachable server.
    assert!(tools.stderr.contains("auth_rejected"), "{tools:#?}");
    assert!(tools.stderr.contains("OAuth failed"), "{tools:#?}");
    let login = run_with(&env, &vars, &["--config", &config, "login", "tracker"]);
    assert_ne!(login.code, 0, "{login:#?}");
    assert!(
        login.stderr.contains("login to `tracker` failed"),
        "{login:#?}"
    );
    for run in [&tools, &login] {
        for text in [&run.stdout, &run.stderr] {
            assert!(!text.contains(wrong), "the secret was printed: {text}");
        }
    }
    assert!(!env.data_dir().join("oauth").exists(), "nothing stored");
}

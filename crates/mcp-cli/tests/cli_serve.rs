//! `mcpctl serve`: a host's MCP client (the TypeScript SDK's, the Python SDK's) launches `mcpctl serve` as its one server, or reaches `mcpctl serve --http` over Streamable HTTP, and gets the tools of three upstream servers (the fixture, server-everything, FastMCP), calls them, follows progress, receives `list_changed`, and (the TypeScript client) cancels a running call.
//!
//! Over HTTP also: clients of both eras at once on one gateway (a
//! 2026-07-28 client's call parked between its input rounds leaving
//! another client's questions to it), and the listener's refusals (no
//! token, a foreign `Host` or `Origin`, an ended session, headers that
//! disagree with the body).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::{Env, MCPCTL, alive, pids};

/// A config with the three upstream servers; the fixture logs its events
/// to `log`.
fn three_servers(env: &Env, log: &Path) -> PathBuf {
    env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "fx": {
                "command": support::fixture_server(),
                "args": ["--era", "legacy", "--remove-tool", "--event-log", log]
            },
            "everything": {"command": "node", "args": [support::server_everything()]},
            "fastmcp": {
                "command": support::venv_python(),
                "args": [support::fastmcp_script(), "stdio"]
            }
        }}),
    )
}

/// Runs `program script mcpctl --no-host-configs --config CONFIG serve`
/// with mcpctl's test environment, and returns the one JSON line the
/// client printed.
fn run_client(env: &Env, program: &Path, script: &Path, config: &Path) -> Value {
    let args = [
        MCPCTL.as_ref(),
        "--no-host-configs".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        "serve".as_ref(),
    ];
    run_client_with(env, program, script, &args)
}

/// Runs `program script ARGS` and returns the one JSON line it printed.
fn run_client_with(env: &Env, program: &Path, script: &Path, args: &[&std::ffi::OsStr]) -> Value {
    let mut command = Command::new(program);
    command
        .arg(script)
        .args(args)
        .current_dir(env.work_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The environment mcpctl gets in every CLI test.
    for (key, value) in env.command(&[]).get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let run = support::run_to_end(command, &["serve (through an SDK client)"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let line = run.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {run:#?}"))
}

fn assert_gateway_worked(seen: &Value, log: &Path, typescript: bool) {
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in [
        "mcp_fx_echo",
        "mcp_fx_add",
        "mcp_everything_echo",
        "mcp_fastmcp_add",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(seen["server"], "mcpctl", "{seen:#}");
    assert_eq!(seen["fx_echo"], "hello", "{seen:#}");
    assert!(
        seen["everything_echo"]
            .as_str()
            .is_some_and(|t| t.contains("hi")),
        "{seen:#}"
    );
    assert_eq!(seen["fastmcp_add"], "5", "{seen:#}");
    // Every report reaches the Python client; the TypeScript one drops a
    // report it reads together with the answer (see gateway_client.mjs).
    let reports = seen["progress_reports"].as_u64().unwrap_or(0);
    if typescript {
        assert!((2..=3).contains(&reports), "{seen:#}");
    } else {
        assert_eq!(reports, 3, "{seen:#}");
    }
    let after: Vec<&str> = seen["after"]
        .as_array()
        .expect("a second tool list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!after.contains(&"mcp_fx_add"), "{after:?}");
    assert!(after.contains(&"mcp_fx_echo"), "{after:?}");
    assert_eq!(seen["unknown"], "error -32602", "{seen:#}");
    // Resources and prompts: listed together, each read or got from the
    // server it came from (a listed URI, a template's, a prefixed name).
    let strings = |key: &str| -> Vec<String> {
        seen[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} missing: {seen:#}"))
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    assert!(
        strings("resources").contains(&"fixture://readme".to_owned()),
        "{seen:#}"
    );
    assert!(
        seen["readme"]
            .as_str()
            .is_some_and(|t| t.starts_with("This is mcp-fixture-server")),
        "{seen:#}"
    );
    assert!(
        strings("templates").contains(&"demo://resource/dynamic/text/{resourceId}".to_owned()),
        "{seen:#}"
    );
    assert!(
        seen["dynamic"].as_str().is_some_and(|t| !t.is_empty()),
        "{seen:#}"
    );
    assert_eq!(seen["missing_resource"], "error -32002", "{seen:#}");
    let prompts = strings("prompts");
    assert!(prompts.contains(&"mcp_fx_greet".to_owned()), "{prompts:?}");
    assert!(
        prompts.contains(&"mcp_everything_simple-prompt".to_owned()),
        "{prompts:?}"
    );
    assert_eq!(seen["greet"], "Please greet Ada warmly.", "{seen:#}");
    if typescript {
        // A completion goes to the server of the prompt it names.
        assert_eq!(seen["completion"], json!(["Sales", "Support"]), "{seen:#}");
    }
    if !typescript {
        return;
    }
    // A call the client abandoned once it ran was cancelled upstream too.
    assert!(
        seen["cancelled"]
            .as_str()
            .is_some_and(|t| t.starts_with("rejected")),
        "{seen:#}"
    );
    let events = std::fs::read_to_string(log).expect("the fixture's event log");
    assert!(
        events
            .lines()
            .any(|line| line.starts_with("cancelled ") && line.contains("\"inFlight\":true")),
        "{events}"
    );
}

#[test]
fn the_typescript_sdk_client_uses_three_servers_through_mcpctl_serve() {
    let env = Env::new();
    let log = env.work_dir().join("fx-events.log");
    let config = three_servers(&env, &log);
    let script = support::repo_root().join("tests/interop/gateway_client.mjs");
    let seen = run_client(&env, Path::new("node"), &script, &config);
    assert_gateway_worked(&seen, &log, true);
}

#[test]
fn the_python_sdk_client_uses_three_servers_through_mcpctl_serve() {
    let env = Env::new();
    let log = env.work_dir().join("fx-events.log");
    let config = three_servers(&env, &log);
    let script = support::repo_root().join("tests/interop/gateway_client.py");
    let seen = run_client(&env, &support::venv_python(), &script, &config);
    assert_gateway_worked(&seen, &log, false);
}

/// This workspace's own client in each era against `mcpctl serve`, with the
/// demo server behind it: a 2026-07-28 client discovers and calls without
/// `initialize`, and the probe of an era-agnostic client finds that era.
#[test]
fn the_workspace_client_uses_mcpctl_serve_in_both_eras() {
    use mcp_proto::EraPolicy;
    use mcp_transport::{Client, ClientOptions, StdioTransport};

    let env = Env::new();
    let runtime = support::runtime();
    for (policy, era) in [
        (EraPolicy::Modern, "modern"),
        (EraPolicy::Legacy, "legacy"),
        (EraPolicy::Auto, "modern"),
    ] {
        let stdio = env.serve_options(&["--no-host-configs", "serve"]);
        runtime.block_on(async {
            let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
            let mut options = ClientOptions::default();
            options.session.era = policy;
            let (client, driver) = Client::new(transport, options);
            tokio::spawn(driver.run());
            let deadline = std::time::Duration::from_secs(30);
            let negotiated = tokio::time::timeout(deadline, client.initialize())
                .await
                .expect("connects within 30 s")
                .unwrap_or_else(|e| panic!("{policy:?}: {e}"));
            assert_eq!(negotiated.era().as_str(), era, "{policy:?}");
            let tools = client.list_tools(None).await.unwrap();
            let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
            assert!(names.contains(&"mcp_demo_echo"), "{policy:?}: {names:?}");
            let arguments = json!({"text": format!("hello {era}")});
            let result = client
                .call_tool("mcp_demo_echo", arguments.as_object().cloned())
                .await
                .unwrap();
            assert_eq!(
                serde_json::to_value(&result.content).unwrap()[0]["text"],
                format!("hello {era}"),
                "{policy:?}"
            );
            client.close().await;
        });
    }
}

/// `mcpctl serve --lazy`: once the tool cache knows a server, a later run
/// lists its tools without starting it, and the first call starts it.
#[test]
fn serve_lazy_starts_a_cached_server_only_for_its_first_call() {
    use mcp_transport::{Client, ClientOptions, StdioTransport};

    let env = Env::new();
    let pids = env.work_dir().join("fx.pids");
    let config = fixture_config(&env, &[json!("--pid-file"), json!(pids)]);
    let started = || {
        std::fs::read_to_string(&pids)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    };
    let runtime = support::runtime();
    for run in 0..2 {
        let config = config.display().to_string();
        let args = ["--no-host-configs", "--config", &config, "serve", "--lazy"];
        let stdio = env.serve_options(&args);
        runtime.block_on(async {
            let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
            let (client, driver) = Client::new(transport, ClientOptions::default());
            tokio::spawn(driver.run());
            let deadline = std::time::Duration::from_secs(30);
            tokio::time::timeout(deadline, client.initialize())
                .await
                .expect("connects within 30 s")
                .unwrap();
            let tools = client.list_tools(None).await.unwrap();
            assert!(
                tools.tools.iter().any(|t| t.name == "mcp_fx_echo"),
                "run {run}: {tools:?}"
            );
            // The first run starts the server (the cache is empty); the
            // second lists it from the cache and starts it for the call.
            assert_eq!(started(), 1 - run, "run {run}: before the call");
            let arguments = json!({"text": "lazy"});
            let result = client
                .call_tool("mcp_fx_echo", arguments.as_object().cloned())
                .await
                .unwrap();
            assert_eq!(
                serde_json::to_value(&result.content).unwrap()[0]["text"],
                "lazy"
            );
            assert_eq!(started(), 1, "run {run}: after the call");
            client.close().await;
        });
        if run == 0 {
            std::fs::remove_file(&pids).unwrap();
            assert_eq!(started(), 0);
        }
    }
}

/// A running `mcpctl serve --http`: its endpoint and token, read from the
/// two lines it prints once its servers have settled. Killed (by its
/// handle) if a test fails before [`HttpServe::terminate`].
struct HttpServe {
    child: std::process::Child,
    url: String,
    token: String,
    port: u16,
}

impl HttpServe {
    fn start(env: &Env, args: &[&str]) -> HttpServe {
        HttpServe::start_with(env, args, &[])
    }

    /// `mcpctl GLOBAL serve --http SERVE`.
    fn start_with(env: &Env, global: &[&str], serve: &[&str]) -> HttpServe {
        let mut all = global.to_vec();
        all.extend(["serve", "--http"]);
        all.extend_from_slice(serve);
        let mut child = env
            .command(&all)
            .spawn()
            .expect("mcpctl serve --http starts");
        let stderr = support::read_all(child.stderr.take().expect("piped stderr"));
        let lines = support::lines_of(child.stdout.take().expect("piped stdout"));
        let mut next = || {
            lines
                .recv_timeout(std::time::Duration::from_secs(90))
                .unwrap_or_else(|e| {
                    let _ = child.kill();
                    panic!("mcpctl serve --http printed no line ({e})")
                })
        };
        let endpoint = next();
        let auth = next();
        drop(stderr);
        let url = endpoint
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no URL in {endpoint:?}"))
            .to_owned();
        let token = auth
            .rsplit_once("Bearer ")
            .unwrap_or_else(|| panic!("no token in {auth:?}"))
            .1
            .to_owned();
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .expect("a port");
        assert!(url.ends_with("/mcp"), "{url}");
        HttpServe {
            child,
            url,
            token,
            port,
        }
    }

    /// SIGTERM, as a service manager stops it; the exit code.
    fn terminate(&mut self) -> i32 {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("mcpctl's pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            .expect("SIGTERM to mcpctl");
        let watchdog = support::Watchdog::start(&self.child, "mcpctl serve --http".to_owned());
        let status = self.child.wait().expect("wait for mcpctl serve");
        watchdog.stop();
        status.code().unwrap_or(-1)
    }

    /// One HTTP/1.1 exchange with these extra headers (`Host` is
    /// `127.0.0.1:PORT` unless one of them sets it);
    /// `Content-Type: application/json` is added.
    fn raw(&self, method: &str, headers: &[&str], body: &str) -> support::ui::Answer {
        let mut all = headers.to_vec();
        all.push("Content-Type: application/json");
        support::ui::request(self.port, method, "/mcp", &all, body)
    }

    fn bearer(&self) -> String {
        format!("Authorization: Bearer {}", self.token)
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `Mcp-Session-Id` an answer to `initialize` carries.
fn session_id(answer: &support::ui::Answer) -> String {
    answer
        .head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id in {answer:?}"))
}

/// A config with the fixture as server `fx` (`--era legacy` and `args`).
fn fixture_config(env: &Env, args: &[Value]) -> PathBuf {
    let mut all = vec![json!("--era"), json!("legacy")];
    all.extend_from_slice(args);
    env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {"command": support::fixture_server(), "args": all}}}),
    )
}

/// The three servers, the fixture also writing its pid to `pids`.
fn three_servers_with_pids(env: &Env, log: &Path, pids: &Path) -> PathBuf {
    env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "fx": {
                "command": support::fixture_server(),
                "args": ["--era", "legacy", "--remove-tool", "--event-log", log, "--pid-file", pids]
            },
            "everything": {"command": "node", "args": [support::server_everything()]},
            "fastmcp": {
                "command": support::venv_python(),
                "args": [support::fastmcp_script(), "stdio"]
            }
        }}),
    )
}

/// An SDK client over Streamable HTTP against `mcpctl serve --http`; then
/// SIGTERM ends mcpctl with 0 and the upstream fixture with it.
fn sdk_client_over_http(program: &Path, script: &str, typescript: bool) {
    let env = Env::new();
    let log = env.work_dir().join("fx-events.log");
    let pid_file = env.work_dir().join("fx.pids");
    let config = three_servers_with_pids(&env, &log, &pid_file);
    let config = config.display().to_string();
    let mut serve = HttpServe::start(&env, &["--no-host-configs", "--config", &config]);
    let script = support::repo_root().join(script);
    let args = ["--http".as_ref(), serve.url.as_ref(), serve.token.as_ref()];
    let seen = run_client_with(&env, program, &script, &args);
    assert_gateway_worked(&seen, &log, typescript);
    let started = pids(&pid_file);
    assert_eq!(started.len(), 1, "{started:?}");
    assert!(alive(started[0]));
    assert_eq!(serve.terminate(), 0);
    assert!(!alive(started[0]), "the fixture outlived mcpctl serve");
}

#[test]
fn the_typescript_sdk_client_uses_three_servers_through_mcpctl_serve_over_http() {
    sdk_client_over_http(Path::new("node"), "tests/interop/gateway_client.mjs", true);
}

#[test]
fn the_python_sdk_client_uses_three_servers_through_mcpctl_serve_over_http() {
    sdk_client_over_http(
        &support::venv_python(),
        "tests/interop/gateway_client.py",
        false,
    );
}

/// This workspace's client in both eras over HTTP, several at once on one
/// gateway: the 2026-07-28 ones share its connection under ids of its
/// own, so equal ids from different clients never cross.
#[test]
fn clients_of_both_eras_share_one_http_gateway() {
    use mcp_proto::EraPolicy;
    use mcp_transport::{Client, ClientOptions, HttpOptions, HttpTransport};

    let env = Env::new();
    let serve = HttpServe::start(&env, &["--no-host-configs"]);
    let runtime = support::runtime();
    runtime.block_on(async {
        let mut clients = Vec::new();
        for (n, (policy, era)) in [
            (EraPolicy::Modern, "modern"),
            (EraPolicy::Legacy, "legacy"),
            (EraPolicy::Auto, "modern"),
            (EraPolicy::Modern, "modern"),
        ]
        .into_iter()
        .enumerate()
        {
            let mut http = HttpOptions::new(serve.url.clone());
            http.headers = vec![(
                "Authorization".to_owned(),
                format!("Bearer {}", serve.token),
            )];
            let transport = HttpTransport::connect(http).await.expect("a transport");
            let mut options = ClientOptions::default();
            options.session.era = policy;
            let (client, driver) = Client::new(transport, options);
            tokio::spawn(driver.run());
            let deadline = std::time::Duration::from_secs(30);
            let negotiated = tokio::time::timeout(deadline, client.initialize())
                .await
                .expect("connects within 30 s")
                .unwrap_or_else(|e| panic!("{policy:?}: {e}"));
            assert_eq!(negotiated.era().as_str(), era, "{policy:?}");
            clients.push((n, client));
        }
        // Every client calls at once, each with its own text; each gets
        // its own answer back.
        let mut calls = tokio::task::JoinSet::new();
        for (n, client) in &clients {
            let (n, client) = (*n, client.clone());
            calls.spawn(async move {
                for round in 0..5 {
                    let text = format!("client {n} round {round}");
                    let arguments = json!({"text": text});
                    let result = client
                        .call_tool("mcp_demo_echo", arguments.as_object().cloned())
                        .await
                        .unwrap_or_else(|e| panic!("client {n}: {e}"));
                    let got = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
                    assert_eq!(got, text.as_str());
                }
            });
        }
        while let Some(done) = calls.join_next().await {
            done.expect("every client's calls got their own answers");
        }
        for (_, client) in clients {
            let tools = client.list_tools(None).await.unwrap();
            assert!(tools.tools.iter().any(|t| t.name == "mcp_demo_echo"));
            client.close().await;
        }
    });
}

/// What the listener refuses, and how.
#[test]
fn the_http_gateway_refuses_what_it_must() {
    let env = Env::new();
    let serve = HttpServe::start(&env, &["--no-host-configs"]);
    let bearer = serve.bearer();
    let post = ["Accept: application/json, text/event-stream"];
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let with = |extra: &[&str]| -> Vec<String> {
        post.iter().chain(extra).map(|h| (*h).to_owned()).collect()
    };
    let send = |headers: Vec<String>, body: &str| {
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        serve.raw("POST", &headers, body)
    };
    // No token, a wrong one: 401, with the scheme to use.
    let none = send(with(&[]), init);
    assert_eq!(none.status, 401, "{none:?}");
    assert!(
        none.head
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer")
    );
    let wrong = send(
        with(&["Authorization: Bearer 00000000000000000000000000000000"]),
        init,
    );
    assert_eq!(wrong.status, 401);
    // A rebound DNS name, a foreign page: 403, token or not.
    let rebound = send(with(&[&bearer, "Host: attacker.example"]), init);
    assert_eq!(rebound.status, 403, "{rebound:?}");
    let foreign = send(with(&[&bearer, "Origin: http://attacker.example"]), init);
    assert_eq!(foreign.status, 403, "{foreign:?}");
    // The right request starts a session.
    let started = send(with(&[&bearer]), init);
    assert_eq!(started.status, 200, "{started:?}");
    assert_eq!(started.json()["result"]["protocolVersion"], "2025-11-25");
    let session = session_id(&started);
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let in_session = format!("Mcp-Session-Id: {session}");
    let listed = send(with(&[&bearer, &in_session]), list);
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(listed.body.contains("mcp_demo_echo"));
    // A version header of no handshake version: 400.
    let odd = send(
        with(&[&bearer, &in_session, "MCP-Protocol-Version: 1999-01-01"]),
        list,
    );
    assert_eq!(odd.status, 400, "{odd:?}");
    // Without a session (and without a 2026-07-28 _meta): 400.
    let sessionless = send(with(&[&bearer]), list);
    assert_eq!(sessionless.status, 400, "{sessionless:?}");
    // DELETE ends it; the id is then unknown: 404, so the client starts again.
    let ended = serve.raw("DELETE", &[&bearer, &in_session], "");
    assert_eq!(ended.status, 200, "{ended:?}");
    let gone = send(with(&[&bearer, &in_session]), list);
    assert_eq!(gone.status, 404, "{gone:?}");
    // GET without a session: 405 (no stream outside one).
    let get = serve.raw("GET", &[&bearer, "Accept: text/event-stream"], "");
    assert_eq!(get.status, 405, "{get:?}");
    // A 2026-07-28 request whose headers disagree with its body: 400, -32020.
    let modern = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_demo_echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let version = "MCP-Protocol-Version: 2026-07-28";
    let method = "Mcp-Method: tools/call";
    let mismatched = send(
        with(&[&bearer, version, method, "Mcp-Name: mcp_demo_add"]),
        modern,
    );
    assert_eq!(mismatched.status, 400, "{mismatched:?}");
    assert_eq!(mismatched.json()["error"]["code"], -32020);
    assert_eq!(mismatched.json()["id"], 3);
    let agreed = send(
        with(&[&bearer, version, method, "Mcp-Name: mcp_demo_echo"]),
        modern,
    );
    assert_eq!(agreed.status, 200, "{agreed:?}");
    assert_eq!(agreed.json()["id"], 3, "the client's id comes back");
    assert_eq!(agreed.json()["result"]["content"][0]["text"], "x");
    // An unknown method in that era: 404 with -32601.
    let unknown = r#"{"jsonrpc":"2.0","id":4,"method":"nope/nothing","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let missing = send(
        with(&[&bearer, version, "Mcp-Method: nope/nothing"]),
        unknown,
    );
    assert_eq!(missing.status, 404, "{missing:?}");
    assert_eq!(missing.json()["error"]["code"], -32601);
    // Not JSON, a batch, a wrong media type.
    let garbage = send(with(&[&bearer]), "{not json");
    assert_eq!(garbage.status, 400);
    assert_eq!(garbage.json()["error"]["code"], -32700);
    let batch = send(with(&[&bearer]), &format!("[{list}]"));
    assert_eq!(batch.status, 400);
    let plain = support::ui::request(
        serve.port,
        "POST",
        "/mcp",
        &[&bearer, post[0], "Content-Type: text/plain"],
        init,
    );
    assert_eq!(plain.status, 415, "{plain:?}");
    let elsewhere = support::ui::request(serve.port, "POST", "/other", &[&bearer, post[0]], init);
    assert_eq!(elsewhere.status, 404);
}

/// `mcpctl --preset workspace serve --http` on a terminal: a client's call
/// that the preset asks about is asked there; allowed once it runs, denied
/// it is refused with a result that says so; Ctrl-C ends mcpctl with 130.
#[test]
fn serve_over_http_asks_on_its_terminal() {
    use mcp_transport::{Client, ClientOptions, HttpOptions, HttpTransport};
    use support::pty::Session;

    const PROMPT: &str = "allow [o]nce, allow this tool for this [s]ession, or [d]eny? ";
    let env = Env::new();
    let mut terminal = Session::spawn_all_on_terminal(env.command(&[
        "--no-host-configs",
        "--preset",
        "workspace",
        "serve",
        "--http",
    ]));
    terminal.expect("every request needs the header: Authorization: Bearer ");
    terminal.expect("for a client that takes only a URL");
    let shown = terminal.shown();
    let url = shown
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:") && w.ends_with("/mcp"))
        .expect("the endpoint's URL")
        .to_owned();
    let token = shown
        .split("Bearer ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the token")
        .to_owned();
    let runtime = support::runtime();
    let client = runtime.block_on(async {
        let mut http = HttpOptions::new(url);
        http.headers = vec![("Authorization".to_owned(), format!("Bearer {token}"))];
        let transport = HttpTransport::connect(http).await.expect("a transport");
        let (client, driver) = Client::new(transport, ClientOptions::default());
        tokio::spawn(driver.run());
        client.initialize().await.expect("initialize");
        client
    });
    let call = |text: &str| {
        let client = client.clone();
        let arguments = json!({"text": text});
        runtime.spawn(async move {
            client
                .call_tool("mcp_demo_echo", arguments.as_object().cloned())
                .await
        })
    };
    let allowed = call("allowed");
    terminal.expect("approval needed: call tool `echo` of server `demo`");
    terminal.expect(PROMPT);
    terminal.send_line("o");
    let result = runtime.block_on(allowed).unwrap().expect("an answer");
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(value["content"][0]["text"], "allowed", "{value}");
    assert_ne!(value["isError"], true, "{value}");

    let denied = call("denied");
    terminal.expect(PROMPT);
    terminal.send_line("d");
    let result = runtime.block_on(denied).unwrap().expect("an answer");
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(value["isError"], true, "{value}");
    assert!(
        value["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("denied")),
        "{value}"
    );
    runtime.block_on(client.close());
    let pid = rustix::process::Pid::from_raw(terminal.child.id() as i32).expect("mcpctl's pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("Ctrl-C");
    let (code, _, _) = terminal.finish();
    assert_eq!(code, 130);
}

/// Many clients, one gateway: while one 2026-07-28 client's long call
/// runs, a handshake-era client's calls are answered; closing its response
/// stream cancels that call upstream, and only that call.
#[test]
fn a_client_closing_its_stream_cancels_only_its_own_call() {
    use std::io::{BufRead, Write};

    let env = Env::new();
    let log = env.work_dir().join("fx-events.log");
    let config = fixture_config(&env, &[json!("--event-log"), json!(log)]);
    let config = config.display().to_string();
    let serve = HttpServe::start(&env, &["--no-host-configs", "--config", &config]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "mcp_fx_progress", "arguments": {"steps": 100, "ms": 200},
        "_meta": {"progressToken": "p", "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", serve.port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: mcp_fx_progress\r\nContent-Length: {}\r\n\r\n{body}",
        serve.port,
        serve.bearer(),
        body.len()
    )
    .unwrap();
    // The call runs: its first progress report arrives on its stream.
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        if line.starts_with("data:") {
            assert!(line.contains("notifications/progress"), "{line}");
            break;
        }
    }
    // Meanwhile another client is served.
    let bearer = serve.bearer();
    let accept = "Accept: application/json, text/event-stream";
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}"#;
    let started = serve.raw("POST", &[&bearer, accept], init);
    let session = format!("Mcp-Session-Id: {}", session_id(&started));
    let echo = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_fx_echo","arguments":{"text":"meanwhile"}}}"#;
    let answered = serve.raw("POST", &[&bearer, accept, &session], echo);
    assert_eq!(answered.json()["result"]["content"][0]["text"], "meanwhile");
    // The first client goes away: its call is cancelled upstream.
    drop(reader);
    stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(stream);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let events = std::fs::read_to_string(&log).unwrap_or_default();
        if events
            .lines()
            .any(|l| l.starts_with("cancelled ") && l.contains("\"inFlight\":true"))
        {
            let cancelled = events
                .lines()
                .filter(|l| l.starts_with("cancelled "))
                .count();
            assert_eq!(cancelled, 1, "only the closed stream's call: {events}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the fixture never saw the call cancelled: {events}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The other client's session still works.
    let again = serve.raw("POST", &[&bearer, accept, &session], echo);
    assert_eq!(again.json()["result"]["content"][0]["text"], "meanwhile");
}

/// `mcpctl serve --names plain`: each tool as `SERVER__TOOL`, called so.
#[test]
fn serve_with_plain_names_lists_and_calls_them_by_server_and_tool() {
    use mcp_transport::{Client, ClientOptions, StdioTransport};

    let env = Env::new();
    let stdio = env.serve_options(&["--no-host-configs", "serve", "--names", "plain"]);
    let runtime = support::runtime();
    runtime.block_on(async {
        let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
        let (client, driver) = Client::new(transport, ClientOptions::default());
        tokio::spawn(driver.run());
        client.initialize().await.expect("initialize");
        let tools = client.list_tools(None).await.unwrap();
        let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
        assert!(names.contains(&"demo__echo"), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with("mcp_")), "{names:?}");
        let arguments = json!({"text": "plain"});
        let result = client
            .call_tool("demo__echo", arguments.as_object().cloned())
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&result.content).unwrap()[0]["text"],
            "plain"
        );
        client.close().await;
    });
}

/// Ends a background gateway a failed test left, by the pid it printed.
struct DaemonGuard(Option<i32>);

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
}

/// `mcpctl serve --daemon`: one background gateway; every `mcpctl serve`
/// for the same sources relays to it, so several host sessions share one
/// server process; `--no-daemon` starts its own; `--stop` ends it and its
/// servers.
#[test]
fn serve_daemon_shares_one_set_of_servers_between_sessions() {
    use mcp_transport::{Client, ClientOptions, StdioTransport};

    let env = Env::new();
    let pid_file = env.work_dir().join("fx.pids");
    let config = fixture_config(&env, &[json!("--pid-file"), json!(pid_file)]);
    let config = config.display().to_string();
    let base = ["--no-host-configs", "--config", config.as_str(), "serve"];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|a| (*a).to_owned()).collect()
    };
    let run = |extra: &[&str]| {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.run(&args)
    };
    let started = run(&["--daemon"]);
    assert_eq!(started.code, 0, "{started:#?}");
    let daemon_pid: i32 = started
        .stdout
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {started:#?}"));
    let _guard = DaemonGuard(Some(daemon_pid));
    let again = run(&["--daemon"]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert!(again.stdout.contains("already running"), "{again:#?}");

    let runtime = support::runtime();
    let session = |extra: &[&str], text: &'static str| {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let stdio = env.serve_options(&args);
        async move {
            let transport = StdioTransport::spawn(stdio).expect("mcpctl serve starts");
            let (client, driver) = Client::new(transport, ClientOptions::default());
            tokio::spawn(driver.run());
            client.initialize().await.expect("initialize");
            let arguments = json!({"text": text});
            let result = client
                .call_tool("mcp_fx_echo", arguments.as_object().cloned())
                .await
                .unwrap();
            assert_eq!(
                serde_json::to_value(&result.content).unwrap()[0]["text"],
                text
            );
            client.close().await;
        }
    };
    // Two host sessions at once, then a third: one fixture process.
    runtime.block_on(async {
        tokio::join!(session(&[], "first"), session(&[], "second"));
        session(&[], "third").await;
    });
    let shared = pids(&pid_file);
    assert_eq!(shared.len(), 1, "one server for every session: {shared:?}");
    // --no-daemon: a session with its own server.
    runtime.block_on(session(&["--no-daemon"], "own"));
    assert_eq!(pids(&pid_file).len(), 2);
    assert!(alive(shared[0]), "the daemon's server still runs");

    let stopped = run(&["--stop"]);
    assert_eq!(stopped.code, 0, "{stopped:#?}");
    assert!(!alive(daemon_pid), "the background gateway ended");
    assert!(!alive(shared[0]), "and its server with it");
    let none = run(&["--stop"]);
    assert!(
        none.stdout.contains("no background gateway runs"),
        "{none:#?}"
    );
}

/// A relaying `mcpctl serve` hands its standard streams to the background
/// gateway (Linux): the daemon holds the host's own pipes and answers on
/// them, and the relay exits 0 once the host's input ends and everything
/// is answered; a relay that is killed ends its client's connection (the
/// host reads the end of its output though its input is still open) and
/// the daemon serves the next one; input from a file, which cannot be
/// handed over, is copied through the relay as before.
#[cfg(target_os = "linux")]
#[test]
fn a_relaying_serve_hands_its_streams_to_the_daemon() {
    use std::io::Write as _;
    use std::sync::mpsc::RecvTimeoutError;
    use support::{RUN_DEADLINE, Watchdog, lines_of, read_all};

    let env = Env::new();
    let config = fixture_config(&env, &[]);
    let config = config.display().to_string();
    let base = ["--no-host-configs", "--config", config.as_str(), "serve"];
    let with = |extra: &'static str| -> Vec<&str> { base.iter().copied().chain([extra]).collect() };
    let started = env.run(&with("--daemon"));
    assert_eq!(started.code, 0, "{started:#?}");
    let daemon_pid: i32 = started
        .stdout
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {started:#?}"));
    let _guard = DaemonGuard(Some(daemon_pid));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let call = |text: &str| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{{\"name\":\"mcp_fx_echo\",\"arguments\":{{\"text\":\"{text}\"}}}}}}\n"
        )
    };
    let links = |pid: u32| -> Vec<PathBuf> {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|dir| {
                dir.filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
                    .collect()
            })
            .unwrap_or_default()
    };

    // A host's pipes, kept open by the test.
    let mut relay = env.command(&base).stdin(Stdio::piped()).spawn().unwrap();
    let watchdog = Watchdog::start(&relay, "a relaying mcpctl serve".into());
    let mut input = relay.stdin.take().unwrap();
    let output = lines_of(relay.stdout.take().unwrap());
    writeln!(input, "{init}").unwrap();
    let answer = output
        .recv_timeout(RUN_DEADLINE)
        .expect("initialize answered");
    assert!(answer.contains(r#""id":1,"result""#), "{answer}");
    // Answered by the daemon: it holds both pipes the host gave the relay.
    let daemon_holds = links(daemon_pid as u32);
    for fd in [0, 1] {
        let pipe = std::fs::read_link(format!("/proc/{}/fd/{fd}", relay.id())).unwrap();
        assert!(
            daemon_holds.contains(&pipe),
            "the daemon holds the relay's fd {fd} ({}): {daemon_holds:?}",
            pipe.display()
        );
    }
    input.write_all(call("handed").as_bytes()).unwrap();
    let answer = output
        .recv_timeout(RUN_DEADLINE)
        .expect("the call answered");
    assert!(
        answer.contains(r#""id":2"#) && answer.contains("handed"),
        "{answer}"
    );
    // Killed, with the host's input still open: the daemon stops serving
    // its client, and the host reads the end of its output.
    relay.kill().unwrap();
    assert!(!relay.wait().unwrap().success());
    watchdog.stop();
    assert_eq!(
        output.recv_timeout(RUN_DEADLINE),
        Err(RecvTimeoutError::Disconnected),
        "the host's output ends with the relay"
    );
    assert!(alive(daemon_pid), "the daemon serves on");
    drop(input);

    // The next client: once answered, its input ends, and so do its
    // output and the relay (exit 0).
    let mut relay = env.command(&base).stdin(Stdio::piped()).spawn().unwrap();
    let watchdog = Watchdog::start(&relay, "a relaying mcpctl serve".into());
    let mut input = relay.stdin.take().unwrap();
    let output = lines_of(relay.stdout.take().unwrap());
    write!(input, "{init}\n{}", call("next")).unwrap();
    let answers: Vec<String> = (0..2)
        .map(|_| output.recv_timeout(RUN_DEADLINE).expect("answered"))
        .collect();
    assert!(
        answers[1].contains(r#""id":2"#) && answers[1].contains("next"),
        "{answers:?}"
    );
    drop(input);
    let status = relay.wait().unwrap();
    watchdog.stop();
    assert!(status.success(), "{status}");
    assert_eq!(
        output.recv_timeout(RUN_DEADLINE),
        Err(RecvTimeoutError::Disconnected)
    );

    // Input from a file: not handed over, copied through the relay (the
    // handshake is answered before the input's end, which ends the rest).
    let requests = env.work_dir().join("requests.ndjson");
    std::fs::write(&requests, format!("{init}\n")).unwrap();
    let mut relay = env
        .command(&base)
        .stdin(std::fs::File::open(&requests).unwrap())
        .spawn()
        .unwrap();
    let watchdog = Watchdog::start(&relay, "a relaying mcpctl serve".into());
    let output = read_all(relay.stdout.take().unwrap());
    let status = relay.wait().unwrap();
    watchdog.stop();
    let text = output.join().unwrap();
    assert!(status.success(), "{status}: {text}");
    assert!(text.contains(r#""id":1,"result""#), "{text}");

    let stopped = env.run(&with("--stop"));
    assert_eq!(stopped.code, 0, "{stopped:#?}");
    assert!(!alive(daemon_pid), "the background gateway ended");
}

/// A 2026-07-28 client keeps `subscriptions/listen` open (this workspace's
/// client does by itself) and hears of a tool list change through it, over
/// stdio and over HTTP.
#[test]
fn a_2026_07_28_client_hears_of_list_changes_through_its_subscription() {
    use mcp_proto::EraPolicy;
    use mcp_transport::{
        Client, ClientOptions, HttpOptions, HttpTransport, ServerNotification, StdioTransport,
        Transport,
    };

    let env = Env::new();
    let config = fixture_config(&env, &[json!("--remove-tool")]);
    let config = config.display().to_string();
    let args = ["--no-host-configs", "--config", &config, "serve"];
    let serve = HttpServe::start(&env, &args[..3]);
    let runtime = support::runtime();
    async fn hears(transport: impl Transport, tool: &str) {
        let mut options = ClientOptions::default();
        options.session.era = EraPolicy::Modern;
        let (client, driver) = Client::new(transport, options);
        let mut notifications = client.take_notifications().expect("the notifications");
        tokio::spawn(driver.run());
        client.initialize().await.expect("initialize");
        let arguments = json!({"name": tool});
        client
            .call_tool("mcp_fx_remove_tool", arguments.as_object().cloned())
            .await
            .expect("the tool is removed");
        let heard = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            loop {
                match notifications.recv().await {
                    Some(ServerNotification::ToolsListChanged) => return true,
                    Some(_) => {}
                    None => return false,
                }
            }
        })
        .await;
        assert_eq!(heard, Ok(true), "no tools list_changed");
        let tools = client.list_tools(None).await.unwrap();
        assert!(
            !tools
                .tools
                .iter()
                .any(|t| t.name == format!("mcp_fx_{tool}")),
            "{tools:?}"
        );
        client.close().await;
    }
    runtime.block_on(async {
        let stdio = StdioTransport::spawn(env.serve_options(&args)).expect("mcpctl serve");
        hears(stdio, "add").await;
        let mut http = HttpOptions::new(serve.url.clone());
        http.headers = vec![(
            "Authorization".to_owned(),
            format!("Bearer {}", serve.token),
        )];
        let transport = HttpTransport::connect(http).await.expect("a transport");
        hears(transport, "add").await;
    });
}

/// The SSE events of an answer's body (chunked transfer coding left in:
/// each event is sent whole), each as its `id` and `data` lines.
fn sse_events(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter_map(|event| {
            let mut id = None;
            let mut data = None;
            for line in event.lines() {
                if let Some(value) = line.strip_prefix("id:") {
                    id = Some(value.trim().to_owned());
                } else if let Some(value) = line.strip_prefix("data:") {
                    data = Some(value.trim().to_owned());
                }
            }
            (id.is_some() || data.is_some()).then(|| (id, data.unwrap_or_default()))
        })
        .collect()
}

#[test]
fn a_call_the_server_streams_is_answered_on_a_stream_over_http() {
    let env = Env::new();
    let script = support::repo_root().join("tests/interop/streaming_server.py");
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {
            "fx": {"command": support::fixture_server(),
                   "args": ["--era", "legacy", "--reference-catalog"], "era": "legacy"},
            // The Python SDK's import alone can take seconds on a loaded
            // machine: a server still starting at the default deadline
            // would be served without its tools.
            "py": {"command": support::venv_python(), "args": [script], "timeout": 60000},
        }}),
    );
    let serve = HttpServe::start_with(
        &env,
        &["--no-host-configs", "--config", config.to_str().unwrap()],
        &["--names", "keep"],
    );
    let bearer = serve.bearer();
    let post = |extra: &[&str], body: &str| {
        let mut headers = vec![
            "Accept: application/json, text/event-stream",
            bearer.as_str(),
        ];
        headers.extend_from_slice(extra);
        serve.raw("POST", &headers, body)
    };
    let started = post(
        &[],
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    );
    assert_eq!(started.status, 200, "{started:?}");
    let session = format!("Mcp-Session-Id: {}", session_id(&started));
    let version = "MCP-Protocol-Version: 2025-11-25";
    let in_session = [session.as_str(), version];
    let initialized = post(
        &in_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    let level = post(
        &in_session,
        r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}"#,
    );
    assert_eq!(level.status, 200, "{level:?}");

    // A server's progress during a call: the answer is a stream that opens
    // with a priming event (an id, no data), the reports, then the result.
    let progressed = post(
        &in_session,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p-1"}}}"#,
    );
    assert!(
        progressed
            .head
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{progressed:?}"
    );
    let events = sse_events(&progressed.body);
    let (first_id, first_data) = &events[0];
    assert!(first_id.is_some() && first_data.is_empty(), "{events:?}");
    let reports = events
        .iter()
        .filter(|(_, data)| data.contains("notifications/progress") && data.contains("p-1"))
        .count();
    assert_eq!(reports, 3, "{events:?}");
    assert!(
        events
            .last()
            .is_some_and(|(_, data)| data.contains(r#""id":3"#)),
        "{events:?}"
    );

    // A server's log message while a call runs comes on the call's
    // stream; the call ends only when this test writes to the pipe, after
    // it read the message there.
    let fifo = env.work_dir().join("go.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "log_then_wait", "arguments": {"fifo": fifo}}})
    .to_string();
    let mut stream =
        std::net::TcpStream::connect(("127.0.0.1", serve.port)).expect("connect to mcpctl");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n{bearer}\r\n{session}\r\n{version}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{call}",
        serve.port,
        call.len()
    );
    std::io::Write::write_all(&mut stream, request.as_bytes()).unwrap();
    let mut reader = std::io::BufReader::new(stream);
    let mut seen = String::new();
    while !seen.contains("waiting for the pipe") {
        let mut line = String::new();
        let read = std::io::BufRead::read_line(&mut reader, &mut line)
            .unwrap_or_else(|e| panic!("the log message within 60 s: {e}; read {seen:?}"));
        assert!(read > 0, "the stream ended first: {seen:?}");
        seen.push_str(&line);
    }
    assert!(
        seen.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{seen:?}"
    );
    assert!(seen.contains("notifications/message"), "{seen:?}");
    assert!(!seen.contains(r#""id":4"#), "answered before: {seen:?}");
    std::fs::write(&fifo, "go\n").expect("write to the pipe");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).expect("the rest of the stream");
    assert!(
        rest.contains(r#""id":4"#) && rest.contains("the pipe said go"),
        "{rest:?}"
    );
}

/// Answers every elicitation with `{"answer": "elicited over http"}`.
struct ElicitOverHttp;

#[async_trait::async_trait]
impl mcp_transport::ClientHandler for ElicitOverHttp {
    fn capabilities(&self) -> mcp_proto::types::ClientCapabilities {
        mcp_proto::types::ClientCapabilities {
            elicitation: Some(mcp_proto::types::ElicitationCapability {
                form: Some(Default::default()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn elicit(
        &self,
        _params: mcp_proto::types::ElicitRequestParams,
    ) -> Result<mcp_proto::types::ElicitResult, mcp_proto::ErrorObject> {
        serde_json::from_value(
            json!({"action": "accept", "content": {"answer": "elicited over http"}}),
        )
        .map_err(|e| mcp_proto::ErrorObject::new(-32603, e.to_string()))
    }
}

#[test]
fn a_2026_07_28_client_over_http_answers_its_servers_question_in_input_rounds() {
    use mcp_proto::EraPolicy;
    use mcp_transport::{Client, ClientOptions, HttpOptions, HttpTransport};

    let env = Env::new();
    let config = fixture_config(&env, &[json!("--reference-catalog")]);
    let serve = HttpServe::start_with(
        &env,
        &["--no-host-configs", "--config", config.to_str().unwrap()],
        &["--names", "keep"],
    );
    let runtime = support::runtime();
    runtime.block_on(async {
        let mut http = HttpOptions::new(serve.url.clone());
        http.headers = vec![(
            "Authorization".to_owned(),
            format!("Bearer {}", serve.token),
        )];
        let transport = HttpTransport::connect(http).await.expect("a transport");
        let mut options = ClientOptions::default();
        options.session.era = EraPolicy::Modern;
        options.handler = Some(std::sync::Arc::new(ElicitOverHttp));
        let (client, driver) = Client::new(transport, options);
        tokio::spawn(driver.run());
        client.initialize().await.expect("server/discover");
        // Each round is a request of its own over HTTP; the gateway's work
        // waits between them.
        let answered = client
            .call_tool(
                "ask_elicitation",
                json!({"message": "?"}).as_object().cloned(),
            )
            .await
            .expect("the call, its question answered in a round");
        let shown = serde_json::to_string(&answered.content).unwrap();
        assert!(shown.contains("elicited over http"), "{shown}");
        client.close().await;
    });
}

/// A call of a 2026-07-28 client parked between its input rounds (its
/// server's question sent back as `input_required`, the work waiting for
/// the client's retry) is no client waiting on a server: meanwhile another
/// client's server asks its own client, and that question reaches it
/// rather than being refused as ambiguous.
#[test]
fn a_call_parked_between_input_rounds_leaves_another_clients_questions_to_it() {
    use mcp_proto::EraPolicy;
    use mcp_proto::types::{
        CallToolRequestParams, ClientCapabilities, CreateMessageRequestParams, CreateMessageResult,
        ElicitationCapability, SamplingCapability,
    };
    use mcp_transport::{
        CallOptions, Client, ClientError, ClientHandler, ClientOptions, HttpOptions, HttpTransport,
    };

    /// Answers a sampling, and declares elicitation (never asked here).
    struct Samples;

    #[async_trait::async_trait]
    impl ClientHandler for Samples {
        fn capabilities(&self) -> ClientCapabilities {
            ClientCapabilities {
                sampling: Some(SamplingCapability::default()),
                elicitation: Some(ElicitationCapability {
                    form: Some(Default::default()),
                    ..ElicitationCapability::default()
                }),
                ..ClientCapabilities::default()
            }
        }

        async fn create_message(
            &self,
            _params: CreateMessageRequestParams,
        ) -> Result<CreateMessageResult, mcp_proto::ErrorObject> {
            serde_json::from_value(json!({"role": "assistant", "model": "the-second-client",
                "content": {"type": "text", "text": "sampled by the second client"}}))
            .map_err(|e| mcp_proto::ErrorObject::new(-32603, e.to_string()))
        }
    }

    let env = Env::new();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": ["--era", "legacy", "--reference-catalog"],
            "era": "legacy",
        }}}),
    );
    let mut serve = HttpServe::start_with(
        &env,
        &["--no-host-configs", "--config", config.to_str().unwrap()],
        &["--names", "keep"],
    );
    let runtime = support::runtime();
    runtime.block_on(async {
        let connect = |era: EraPolicy| {
            let mut http = HttpOptions::new(serve.url.clone());
            http.headers = vec![(
                "Authorization".to_owned(),
                format!("Bearer {}", serve.token),
            )];
            async move {
                let transport = HttpTransport::connect(http).await.expect("a transport");
                let mut options = ClientOptions::default();
                options.session.era = era;
                options.handler = Some(std::sync::Arc::new(Samples));
                let (client, driver) = Client::new(transport, options);
                tokio::spawn(driver.run());
                tokio::time::timeout(std::time::Duration::from_secs(30), client.initialize())
                    .await
                    .expect("connects within 30 s")
                    .expect("connects");
                client
            }
        };
        let first = connect(EraPolicy::Modern).await;
        let second = connect(EraPolicy::Legacy).await;

        // The first client's call: the server asks, the client is sent the
        // question and does not answer yet.
        let params = CallToolRequestParams::new(
            "ask_elicitation",
            json!({"message": "later"}).as_object().cloned(),
        );
        let taking = CallOptions::default().return_input_required(true);
        let round = match first.call_tool_with(&params, taking).await {
            Err(ClientError::InputRequired { round, .. }) => round,
            other => panic!("the elicitation comes back as an input round: {other:?}"),
        };
        let asked = serde_json::to_value(&round.input_requests).unwrap();
        assert!(asked.to_string().contains("elicitation/create"), "{asked}");

        // Meanwhile the second client's server asks it for a sampling.
        let sampled = second
            .call_tool("ask_sampling", json!({"prompt": "hi"}).as_object().cloned())
            .await
            .expect("the second client's call");
        let text = serde_json::to_value(&sampled.content).unwrap().to_string();
        assert!(text.contains("sampled by the second client"), "{text}");
        first.close().await;
        second.close().await;
    });
    assert_eq!(serve.terminate(), 0);
}

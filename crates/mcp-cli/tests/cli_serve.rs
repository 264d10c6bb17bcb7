//! `mcpctl serve`: a host's MCP client (the TypeScript SDK's, the Python SDK's) launches `mcpctl serve` as its one server and gets the tools of three upstream servers (the fixture, server-everything, FastMCP), calls them, follows progress, receives `list_changed`, and (the TypeScript client) cancels a running call.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::{Env, MCPCTL};

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
    let mut command = Command::new(program);
    command
        .arg(script)
        .arg(MCPCTL)
        .args(["--no-host-configs", "--config"])
        .arg(config)
        .arg("serve")
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (policy, era) in [
        (EraPolicy::Modern, "modern"),
        (EraPolicy::Legacy, "legacy"),
        (EraPolicy::Auto, "modern"),
    ] {
        let stdio = serve_options(&env, &["--no-host-configs", "serve"]);
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
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"fx": {
            "command": support::fixture_server(),
            "args": ["--era", "legacy", "--pid-file", pids]
        }}}),
    );
    let started = || {
        std::fs::read_to_string(&pids)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for run in 0..2 {
        let config = config.display().to_string();
        let args = ["--no-host-configs", "--config", &config, "serve", "--lazy"];
        let stdio = serve_options(&env, &args);
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

/// `mcpctl ARGS` as a stdio server for this workspace's client, with
/// mcpctl's test environment.
fn serve_options(env: &Env, args: &[&str]) -> mcp_transport::StdioOptions {
    let mut stdio = mcp_transport::StdioOptions::new(MCPCTL);
    stdio.args = args.iter().map(|a| (*a).to_owned()).collect();
    stdio.cwd = Some(env.work_dir());
    stdio.env = env
        .command(&[])
        .get_envs()
        .filter_map(|(key, value)| Some((key.to_str()?.to_owned(), value?.to_str()?.to_owned())))
        .collect();
    stdio
}

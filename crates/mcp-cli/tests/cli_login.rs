//! `mcpctl login` and `logout` end to end against a fake authorization server and protected MCP endpoint on 127.0.0.1; the test plays the browser.

mod support;

use std::io::{BufRead, BufReader, Read};

use serde_json::{Value, json};
use support::oauth_fake::{
    CODE, Fake, M2M_CLIENT, M2M_SECRET, M2M_TOKEN, SECRET_VAR, TOKEN, browser_get,
};
use support::{Env, Watchdog};
use url::Url;

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

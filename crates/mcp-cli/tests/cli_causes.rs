//! A failed server shows its cause to a person, without `-v`: the last lines a stdio server wrote to stderr (bounded, escapes shown), the first line it wrote to stdout that is not JSON-RPC, the I/O error of an HTTP server.

mod support;

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use support::Env;

/// A stdio "server" that writes `stderr` and exits 1 without answering,
/// as `npx` does for a package that does not exist.
fn failing_server(env: &Env, stderr: &str) -> String {
    let script = env.root_file(
        "server.sh",
        &format!("#!/bin/sh\nprintf '%s' '{stderr}' >&2\nexit 1\n"),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"npm": {"command": script}}}),
    );
    config.display().to_string()
}

const NPM_404: &str = "npm ERR! 404 Not Found - GET https://registry.npmjs.org/@nope%2fserver";

fn npm_stderr() -> String {
    let mut text = String::new();
    for n in 1..=6 {
        text.push_str(&format!("npm http fetch GET {n}\n"));
    }
    text.push_str("npm ERR! code E404\n");
    // A colour escape a terminal would act on.
    text.push_str(&format!("{NPM_404}\x1b[31m - Not found\n"));
    text
}

#[test]
fn servers_shows_the_last_stderr_lines_of_a_server_that_exited() {
    let env = Env::new();
    let config = failing_server(&env, &npm_stderr());
    let run = env.run(&["--no-host-configs", "--config", &config, "servers"]);
    assert!(
        run.stdout.contains("exited during initialize [closed]"),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains(&format!("    stderr: {NPM_404}\\x1b[31m - Not found")),
        "the line is shown under the problem, its escape as text: {run:#?}"
    );
    assert!(
        run.stdout.contains("    stderr: npm ERR! code E404"),
        "{run:#?}"
    );
    assert!(!run.stdout.contains('\x1b'), "no raw escape: {run:#?}");
    // Bounded: the last five lines only.
    assert!(run.stdout.contains("fetch GET 4"), "{run:#?}");
    assert!(!run.stdout.contains("fetch GET 3"), "{run:#?}");

    let listing = support::parse_one_document(
        &env.run(&[
            "--json",
            "--no-host-configs",
            "--config",
            &config,
            "servers",
        ])
        .stdout,
    );
    let error = &listing[0]["error"];
    assert_eq!(
        error["code"], "closed",
        "the stable code stays: {listing:#}"
    );
    assert_eq!(
        error["message"], "the server process exited during initialize",
        "the message is not widened: {listing:#}"
    );
    let cause = error["cause"].as_str().expect("a cause");
    assert_eq!(cause.lines().count(), 5, "{cause}");
    assert!(
        cause.ends_with(&format!("{NPM_404}\\x1b[31m - Not found")),
        "{cause}"
    );
}

#[test]
fn a_failed_call_shows_the_servers_last_stderr_lines() {
    let env = Env::new();
    let config = failing_server(&env, &npm_stderr());
    let run = env.run(&[
        "--no-host-configs",
        "--config",
        &config,
        "call",
        "npm",
        "install",
    ]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(
        run.stderr
            .contains("server `npm`: the server process exited during initialize [closed]"),
        "{run:#?}"
    );
    assert!(
        run.stderr
            .contains(&format!("\n  stderr: {NPM_404}\\x1b[31m - Not found\n")),
        "{run:#?}"
    );
    assert!(!run.stderr.contains('\x1b'), "no raw escape: {run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
}

#[test]
fn a_long_stderr_line_is_cut_with_a_marker() {
    let env = Env::new();
    let config = failing_server(&env, &format!("fatal: {}\n", "word ".repeat(1000)));
    let listing = support::parse_one_document(
        &env.run(&[
            "--json",
            "--no-host-configs",
            "--config",
            &config,
            "servers",
        ])
        .stdout,
    );
    let cause = listing[0]["error"]["cause"].as_str().expect("a cause");
    assert!(cause.starts_with("fatal: word word"), "{cause}");
    assert!(cause.contains(" more bytes]"), "{cause}");
    assert!(cause.len() < 300, "{} bytes: {cause}", cause.len());
}

#[test]
fn an_unreachable_http_server_shows_the_io_error() {
    let env = Env::new();
    let port = support::free_port();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"web": {"url": format!("http://127.0.0.1:{port}/mcp")}}}),
    );
    let config = config.display().to_string();
    let run = env.run(&["--no-host-configs", "--config", &config, "servers"]);
    assert!(run.stdout.contains("Connection refused"), "{run:#?}");
    assert!(run.stdout.contains("[unreachable]"), "{run:#?}");
    let run = env.run(&[
        "--no-host-configs",
        "--config",
        &config,
        "call",
        "web",
        "echo",
    ]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(run.stderr.contains("Connection refused"), "{run:#?}");
}

/// A stdio "server" that prints a banner on stdout, a line on stderr, and
/// then reads its input without ever answering, its stdout still open (it
/// ends when its stdin closes, so it does not outlive mcpctl).
fn banner_server(env: &Env) -> String {
    let script = env.root_file(
        "banner.sh",
        "#!/bin/sh\n\
         printf 'Welcome to my server v1.0\\033[2J\\n'\n\
         echo 'loading tools' >&2\n\
         while read -r _; do :; done\n",
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"banner": {"command": script}}}),
    );
    config.display().to_string()
}

#[test]
fn a_server_that_prints_a_banner_and_never_answers_is_named_by_its_stdout_line() {
    let env = Env::new();
    let config = banner_server(&env);
    let run = env.run(&[
        "--no-host-configs",
        "--config",
        &config,
        "call",
        "banner",
        "echo",
        "--timeout",
        "1",
    ]);
    assert_eq!(run.code, 3, "{run:#?}");
    assert!(
        run.stderr.contains(
            "wrote a line that is not JSON-RPC to stdout, where only MCP messages may go"
        ),
        "the cause is named, not the timeout: {run:#?}"
    );
    assert!(run.stderr.contains("[protocol]"), "{run:#?}");
    assert!(
        run.stderr
            .contains("\n  stdout, not JSON-RPC: Welcome to my server v1.0\\x1b[2J\n"),
        "the line itself, its escape as text: {run:#?}"
    );
    assert!(run.stderr.contains("\n  stderr: loading tools"), "{run:#?}");
    assert!(!run.stderr.contains('\x1b'), "no raw escape: {run:#?}");
    assert!(
        !run.stderr.contains("waits longer"),
        "a longer timeout is not the fix: {run:#?}"
    );

    let listing = env.json(&[
        "--no-host-configs",
        "--config",
        &config,
        "servers",
        "--timeout",
        "1",
        "--allow-failures",
    ]);
    let error = &listing[0]["error"];
    assert_eq!(error["code"], "protocol", "{listing:#}");
    assert_eq!(
        error["stray_stdout"], "Welcome to my server v1.0\\x1b[2J",
        "{listing:#}"
    );
    assert_eq!(error["cause"], "loading tools", "{listing:#}");
}

#[test]
fn a_server_that_prints_a_banner_and_then_speaks_json_rpc_works() {
    let env = Env::new();
    let script = env.root_file(
        "banner-then-fixture.sh",
        &format!(
            "#!/bin/sh\necho 'Welcome to my server v1.0'\nexec '{}' --era legacy\n",
            support::fixture_server().display()
        ),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = env.write_json(
        "servers.json",
        &json!({"mcpServers": {"banner": {"command": script}}}),
    );
    let config = config.display().to_string();
    let run = env.run(&["--no-host-configs", "--config", &config, "tools"]);
    assert_eq!(run.code, 0, "a banner alone fails nothing: {run:#?}");
    assert!(run.stdout.contains("echo"), "{run:#?}");
}

//! Project trust and `${input:ID}` prompts, end to end: the real `mcpctl` over a temporary project whose `.mcp.json` runs a real server.
//!
//! The project's server is `sh -c 'echo started >> MARKER; exec mcpctl demo-server'`,
//! so every test can tell whether the command ran at all, not only whether
//! a listing says so.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::Env;
use support::pty::Session;

/// The project's `.mcp.json`: one stdio server, `proj`, with `extra`
/// arguments for the shell and `env` for the process.
fn write_project(env: &Env, extra: &[&str], server_env: Value) -> PathBuf {
    let marker = marker(env);
    let mut args = vec![
        json!("-c"),
        json!(r#"printf 'started %s\n' "$TOKEN" >> "$0"; exec "$1" demo-server"#),
        json!(marker.to_str().unwrap()),
        json!(support::MCPCTL),
    ];
    args.extend(extra.iter().map(|arg| json!(arg)));
    let file = env.work_dir().join(".mcp.json");
    let document =
        json!({"mcpServers": {"proj": {"command": "sh", "args": args, "env": server_env}}});
    std::fs::write(&file, document.to_string()).unwrap();
    file
}

fn marker(env: &Env) -> PathBuf {
    env.data_dir().with_file_name("started.log")
}

/// How many times the project's command ran, and with which `$TOKEN`s.
fn starts(env: &Env) -> Vec<String> {
    std::fs::read_to_string(marker(env))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn project(env: &Env) -> PathBuf {
    std::fs::canonicalize(env.work_dir()).unwrap()
}

fn row<'a>(servers: &'a Value, id: &str) -> &'a Value {
    servers
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row for {id}: {servers}"))
}

const ECHO: &str = r#"{"text":"hi"}"#;

#[test]
fn an_unapproved_project_server_never_starts_until_it_is_trusted_and_again_after_a_change() {
    let env = Env::new();
    write_project(&env, &[], json!({}));

    // Not on a terminal: listed as untrusted, with the command that approves it.
    let servers = env.json(&["servers", "--allow-failures"]);
    let proj = row(&servers, "proj");
    assert_eq!(proj["status"], "untrusted", "{servers}");
    assert_eq!(proj["error"]["code"], "untrusted");
    let approve = format!("mcpctl trust proj --project {}", project(&env).display());
    let message = proj["error"]["message"].as_str().unwrap();
    assert!(message.contains(&approve), "{message}");
    assert!(message.contains("it runs `sh -c "), "{message}");
    let call = env.run(&["call", "proj", "echo", ECHO]);
    assert_eq!(call.code, 2, "{call:#?}");
    assert!(call.stderr.contains("[untrusted]"), "{call:#?}");
    assert!(call.stderr.contains(&approve), "{call:#?}");
    assert!(
        starts(&env).is_empty(),
        "the command never ran: {:?}",
        starts(&env)
    );

    // Approved: it starts, and the approval lives outside the project.
    let trust = env.run(&["trust", "proj"]);
    assert_eq!(trust.code, 0, "{trust:#?}");
    assert!(
        trust.stderr.contains("approved. Project server `proj`"),
        "{trust:#?}"
    );
    let call = env.run(&["call", "proj", "echo", ECHO]);
    assert_eq!(call.code, 0, "{call:#?}");
    assert_eq!(call.stdout, "hi\n");
    assert_eq!(starts(&env).len(), 1);
    assert_eq!(
        row(&env.json(&["servers", "--allow-failures"]), "proj")["status"],
        "ready"
    );
    let in_project: Vec<_> = std::fs::read_dir(env.work_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        in_project,
        [".mcp.json"],
        "nothing written into the project"
    );
    let trust_file = env.data_dir().join("trust.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&trust_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let list = env.json(&["trust", "--list"]);
    assert_eq!(list[0]["server"], "proj", "{list}");
    assert_eq!(list[0]["project"], project(&env).to_str().unwrap());

    // A change of the arguments is a new definition: untrusted again.
    write_project(&env, &["--extra"], json!({}));
    let servers = env.json(&["servers", "--allow-failures"]);
    assert_eq!(row(&servers, "proj")["status"], "untrusted", "{servers}");
    let call = env.run(&["call", "proj", "echo", ECHO]);
    assert_eq!(call.code, 2, "{call:#?}");
    // So is a new env name; a new env value is not.
    env.run(&["trust", "proj"]);
    write_project(&env, &["--extra"], json!({"MODE": "a"}));
    assert_eq!(
        row(&env.json(&["servers", "--allow-failures"]), "proj")["status"],
        "untrusted"
    );
    env.run(&["trust", "proj"]);
    write_project(&env, &["--extra"], json!({"MODE": "b"}));
    assert_eq!(
        row(&env.json(&["servers", "--allow-failures"]), "proj")["status"],
        "ready"
    );
    assert_eq!(starts(&env).len(), 3, "{:?}", starts(&env));

    // Untrusting forgets it.
    let untrust = env.run(&["untrust", "proj"]);
    assert_eq!(untrust.code, 0, "{untrust:#?}");
    assert_eq!(
        row(&env.json(&["servers", "--allow-failures"]), "proj")["status"],
        "untrusted"
    );
    let again = env.run(&["untrust", "proj"]);
    assert_eq!(again.code, 2, "{again:#?}");
}

#[test]
fn trust_names_what_it_cannot_approve() {
    let env = Env::new();
    write_project(&env, &[], json!({}));
    let unknown = env.run(&["trust", "nope"]);
    assert_eq!(unknown.code, 2, "{unknown:#?}");
    assert!(
        unknown.stderr.contains("no server with id `nope`"),
        "{unknown:#?}"
    );
    assert_eq!(env.run(&["trust", "proj"]).code, 0);
    let twice = env.run(&["trust", "proj"]);
    assert_eq!(twice.code, 2, "{twice:#?}");
    assert!(twice.stderr.contains("already trusted"), "{twice:#?}");
    // User-level servers are never gated, so there is nothing to approve.
    let config = env.write_json(
        "user.json",
        &json!({"mcpServers": {"mine": {"command": support::MCPCTL, "args": ["demo-server"]}}}),
    );
    let user = env.run(&["--config", config.to_str().unwrap(), "trust", "mine"]);
    assert_eq!(user.code, 2, "{user:#?}");
    assert!(user.stderr.contains("not a project server"), "{user:#?}");
    let servers = env.json(&[
        "--config",
        config.to_str().unwrap(),
        "servers",
        "--allow-failures",
    ]);
    assert_eq!(row(&servers, "mine")["status"], "ready", "{servers}");
}

#[test]
fn a_corrupt_approvals_file_is_reported_and_kept() {
    let env = Env::new();
    write_project(&env, &[], json!({}));
    let trust_file = env.data_dir().join("trust.json");
    std::fs::write(&trust_file, "{broken").unwrap();
    let trust = env.run(&["trust", "proj"]);
    assert_eq!(trust.code, 2, "{trust:#?}");
    assert!(
        trust.stderr.contains("trust.json is malformed"),
        "{trust:#?}"
    );
    assert!(trust.stderr.contains("[malformed_file]"), "{trust:#?}");
    assert_eq!(std::fs::read_to_string(&trust_file).unwrap(), "{broken");
    let servers = env.run(&["--json", "servers", "--allow-failures"]);
    assert!(
        servers.stderr.contains("trust.json is malformed"),
        "{servers:#?}"
    );
    let servers = support::parse_one_document(&servers.stdout);
    assert_eq!(row(&servers, "proj")["status"], "untrusted");
}

fn tools_on_terminal(env: &Env) -> Session {
    Session::spawn(env.command(&["tools", "proj"]))
}

fn question(file: &Path) -> String {
    format!("Project server `proj` from {} runs: sh -c ", file.display())
}

#[test]
fn on_a_terminal_mcpctl_asks_once_and_remembers_a_yes() {
    let env = Env::new();
    let file = write_project(&env, &[], json!({}));

    // No: nothing starts, nothing is remembered.
    let mut session = tools_on_terminal(&env);
    session.expect(&question(&file));
    session.expect("Trust it? [y/N] ");
    session.send_line("n");
    let (code, _, screen) = session.finish();
    assert_eq!(code, 2, "{screen}");
    assert!(screen.contains("[untrusted]"), "{screen}");
    assert!(starts(&env).is_empty());

    // Yes: it starts ...
    let mut session = tools_on_terminal(&env);
    session.expect(&question(&file));
    session.expect("Trust it? [y/N] ");
    session.send_line("y");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(stdout.contains("mcp_proj_echo"), "{stdout}");
    assert_eq!(starts(&env).len(), 1);

    // ... and is remembered: no question, on a terminal or not.
    let session = tools_on_terminal(&env);
    let (code, _, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("Trust it?"), "{screen}");
    assert_eq!(env.run(&["tools", "proj"]).code, 0);

    // `servers` is a listing: it never asks.
    write_project(&env, &["--changed"], json!({}));
    let session = Session::spawn(env.command(&["servers", "--allow-failures"]));
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("Trust it?"), "{screen}");
    assert!(stdout.contains("untrusted"), "{stdout}");
}

#[test]
fn project_text_is_escaped_in_the_question() {
    let env = Env::new();
    let file = env.work_dir().join(".mcp.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"proj": {"command": support::MCPCTL,
            "args": ["demo-server", "\u{1b}]0;pwned\u{7}\u{1b}[2J"]}}})
        .to_string(),
    )
    .unwrap();
    let mut session = tools_on_terminal(&env);
    session.expect("Trust it? [y/N] ");
    session.send_line("n");
    let (_, _, screen) = session.finish();
    assert!(!screen.contains('\u{1b}'), "{screen:?}");
    assert!(screen.contains(r"\x1b]0;pwned"), "{screen:?}");
}

const SECRET: &str = "s3cr3t-answer";

#[test]
fn inputs_are_asked_on_a_terminal_and_missing_without_one() {
    let env = Env::new();
    let file = write_project(&env, &[], json!({"TOKEN": "${input:token}"}));
    assert_eq!(env.run(&["trust", "proj"]).code, 0);

    // No terminal: the server fails with missing_input, and never starts.
    let call = env.run(&["call", "proj", "echo", ECHO]);
    assert_eq!(call.code, 2, "{call:#?}");
    assert!(call.stderr.contains("input `token`"), "{call:#?}");
    assert!(call.stderr.contains("[missing_input]"), "{call:#?}");
    assert!(call.stderr.contains("on a terminal"), "{call:#?}");
    let servers = env.json(&["servers", "--allow-failures"]);
    assert_eq!(
        row(&servers, "proj")["error"]["code"],
        "missing_input",
        "{servers}"
    );
    assert!(starts(&env).is_empty());

    // On a terminal: asked, used for this run, not saved on a no.
    let mut session = Session::spawn(env.command(&["call", "proj", "echo", ECHO]));
    session.expect("server `proj` asks for input `token`");
    session.expect("value: ");
    session.send_line(SECRET);
    session.expect("for next time? [y/N] ");
    session.send_line("n");
    let (code, stdout, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(stdout, "hi\n");
    assert_eq!(starts(&env), [format!("started {SECRET}")]);
    assert!(!env.data_dir().join("inputs.json").exists());
    assert_eq!(
        env.run(&["call", "proj", "echo", ECHO]).code,
        2,
        "not remembered"
    );

    // A yes saves it, owner-only, outside the project; later runs use it.
    let mut session = Session::spawn(env.command(&["call", "proj", "echo", ECHO]));
    session.expect("value: ");
    session.send_line(SECRET);
    session.expect("for next time? [y/N] ");
    session.send_line("y");
    let (code, _, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    let saved = env.data_dir().join("inputs.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&saved).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(!std::fs::read_to_string(&file).unwrap().contains(SECRET));
    let call = env.run(&["-vvv", "call", "proj", "echo", ECHO]);
    assert_eq!(call.code, 0, "{call:#?}");
    assert_eq!(starts(&env).len(), 3);
    assert_eq!(starts(&env)[2], format!("started {SECRET}"));
    // Never shown: not in logs, listings or errors.
    assert!(!call.stderr.contains(SECRET), "{}", call.stderr);
    let servers = env.run(&["--json", "-vvv", "servers", "--allow-failures"]);
    assert!(!servers.stdout.contains(SECRET) && !servers.stderr.contains(SECRET));
}

#[test]
fn http_project_servers_wait_only_when_they_read_the_environment() {
    let env = Env::new();
    std::fs::write(
        env.work_dir().join(".mcp.json"),
        json!({"mcpServers": {
            "plain": {"url": "http://127.0.0.1:9/mcp"},
            "keyed": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${PROJ_TOKEN}"}}
        }})
        .to_string(),
    )
    .unwrap();
    let servers = env.json(&["servers", "--allow-failures"]);
    assert_ne!(row(&servers, "plain")["status"], "untrusted", "{servers}");
    let plain = env.run(&["trust", "plain"]);
    assert_eq!(plain.code, 2, "{plain:#?}");
    assert!(plain.stderr.contains("needs no approval"), "{plain:#?}");
    let keyed = row(&servers, "keyed");
    assert_eq!(keyed["status"], "untrusted", "{servers}");
    let message = keyed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("sends the values of `PROJ_TOKEN`"),
        "{message}"
    );
    // Logging in would send the variable too: refused the same way.
    let login = env.run(&["login", "keyed", "--timeout", "1"]);
    assert_eq!(login.code, 2, "{login:#?}");
    assert!(login.stderr.contains("[untrusted]"), "{login:#?}");
    assert_eq!(env.run(&["trust", "keyed"]).code, 0);
    let servers = env.json(&["servers", "--allow-failures"]);
    assert_ne!(row(&servers, "keyed")["status"], "untrusted", "{servers}");
}

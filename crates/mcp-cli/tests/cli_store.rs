//! End-to-end tests of the store commands (`add`, `remove`, `enable`, `disable`) on a temp data dir.

mod support;

use serde_json::{Value, json};
use support::Env;

/// A secret that must never appear in any output.
const SECRET: &str = "SECRET-hunter2-7f3a9c";

fn stored(env: &Env) -> Value {
    serde_json::from_slice(&std::fs::read(env.store()).expect("the store exists")).unwrap()
}

fn stored_ids(env: &Env) -> Vec<String> {
    stored(env)["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn add_and_remove_round_trip() {
    let env = Env::new();
    let run = env.run(&["add", "files", "--", "mcp-files", "--root", "/srv", "-x"]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout.contains("added stdio server `files`"),
        "{run:#?}"
    );

    let added = env.json(&[
        "add",
        "remote",
        "--url",
        "https://mcp.example.com/mcp",
        "--header",
        &format!("X-Api-Key={SECRET}"),
        "--bearer-env",
        "REMOTE_TOKEN",
        "--display-name",
        "Remote",
    ]);
    assert_eq!(
        added,
        json!({"id": "remote", "action": "added", "changed": true, "store": env.store()})
    );

    let store = stored(&env);
    assert_eq!(store["version"], 1);
    let files = &store["servers"][0];
    assert_eq!(files["transport"]["command"], "mcp-files");
    assert_eq!(files["transport"]["args"], json!(["--root", "/srv", "-x"]));
    let remote = &store["servers"][1];
    assert_eq!(remote["name"], "Remote");
    assert_eq!(remote["transport"]["type"], "http");
    assert_eq!(remote["transport"]["bearerTokenEnv"], "REMOTE_TOKEN");
    // The secret is stored (the store is the one place it lives) ...
    assert_eq!(remote["transport"]["headers"][0]["value"], SECRET);
    // ... owner-only.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.store()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let removed = env.json(&["remove", "files"]);
    assert_eq!(removed["action"], "removed");
    assert_eq!(stored_ids(&env), ["remote"]);

    let again = env.run(&["remove", "files"]);
    assert_eq!(again.code, 2, "{again:#?}");
    assert!(
        again.stderr.contains("no server with id `files`"),
        "{again:#?}"
    );
    assert!(again.stdout.is_empty());

    env.json(&["remove", "remote"]);
    assert!(stored_ids(&env).is_empty());
}

#[test]
fn add_refuses_duplicates_and_invalid_servers() {
    let env = Env::new();
    env.json(&["add", "a", "--", "server-a"]);
    let duplicate = env.run(&["add", "a", "--", "other"]);
    assert_eq!(duplicate.code, 2);
    assert!(duplicate.stderr.contains("already in"), "{duplicate:#?}");
    assert!(
        duplicate.stderr.contains("mcpctl remove a"),
        "{duplicate:#?}"
    );

    for (args, needle) in [
        (
            vec!["add", "b", "--url", "ftp://example.com/mcp"],
            "transport.url",
        ),
        (
            vec!["add", "b", "--url", "https://user:pw@example.com/mcp"],
            "userinfo",
        ),
        (
            vec![
                "add",
                "b",
                "--url",
                "https://x.example/mcp",
                "--header",
                "novalue",
            ],
            "--header takes KEY=VALUE",
        ),
        (vec!["add", "b"], "required"),
        (
            vec!["add", "b", "--url", "https://x.example", "--", "cmd"],
            "cannot be used with",
        ),
    ] {
        let run = env.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:#?}");
        assert!(run.stderr.contains(needle), "{args:?}: {run:#?}");
        assert!(
            !run.stderr.contains("pw@"),
            "{args:?}: the URL's password leaked"
        );
    }
    assert_eq!(stored_ids(&env), ["a"], "nothing invalid was written");
}

#[test]
fn relative_cwd_is_made_absolute() {
    let env = Env::new();
    std::fs::create_dir(env.work_dir().join("sub")).unwrap();
    env.json(&[
        "add",
        "a",
        "--cwd",
        "sub",
        "--env",
        &format!("TOKEN={SECRET}"),
        "--",
        "srv",
    ]);
    let transport = &stored(&env)["servers"][0]["transport"];
    assert_eq!(
        transport["cwd"],
        env.work_dir().join("sub").to_str().unwrap()
    );
    assert_eq!(transport["env"][0]["key"], "TOKEN");
}

#[test]
fn enable_and_disable() {
    let env = Env::new();
    env.json(&["add", "a", "--disabled", "--", "srv"]);
    assert_eq!(stored(&env)["servers"][0]["enabled"], false);

    let enabled = env.json(&["enable", "a"]);
    assert_eq!(enabled["action"], "enabled");
    assert_eq!(enabled["changed"], true);
    assert_eq!(stored(&env)["servers"][0]["enabled"], true);

    let again = env.json(&["enable", "a"]);
    assert_eq!(again["changed"], false);

    let disabled = env.run(&["disable", "a"]);
    assert_eq!(disabled.code, 0);
    assert!(disabled.stdout.contains("disabled `a`"), "{disabled:#?}");
    assert_eq!(stored(&env)["servers"][0]["enabled"], false);
}

#[test]
fn servers_from_other_files_are_not_edited_here() {
    let env = Env::new();
    let config = env.write_json(
        "extra.json",
        &json!({"mcpServers": {"elsewhere": {"command": "srv"}}}),
    );
    let run = env.run(&["--config", config.to_str().unwrap(), "disable", "elsewhere"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("extra.json"), "{run:#?}");
    assert!(run.stderr.contains("edit that file"), "{run:#?}");

    let run = env.run(&["remove", "demo"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("built-in default"), "{run:#?}");
    assert!(!env.store().exists(), "nothing was written");
}

#[test]
fn a_malformed_store_is_an_error_naming_the_file_and_is_not_overwritten() {
    let env = Env::new();
    let garbage = "{\"version\": 1, \"servers\": [ {\"id\": ";
    std::fs::write(env.store(), garbage).unwrap();
    for args in [
        vec!["add", "a", "--", "srv"],
        vec!["remove", "a"],
        vec!["enable", "a"],
        vec!["disable", "a"],
    ] {
        let run = env.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:#?}");
        assert!(
            run.stderr.contains(env.store().to_str().unwrap()),
            "{args:?}: {run:#?}"
        );
        assert!(run.stderr.contains("malformed"), "{args:?}: {run:#?}");
        assert_eq!(std::fs::read_to_string(env.store()).unwrap(), garbage);
    }
    // Listings go on: the store is one error row naming the file.
    let rows = env.json(&["servers", "--allow-failures"]);
    assert_eq!(rows[0]["id"], json!(null), "{rows:#}");
    assert_eq!(rows[0]["status"], "error");
    assert_eq!(rows[0]["source"]["label"], "store");
    assert_eq!(rows[0]["source"]["path"], env.store().to_str().unwrap());
    let tools = env.run(&["tools"]);
    assert_eq!(tools.code, 0, "{tools:#?}");
    assert!(
        tools.stderr.contains(env.store().to_str().unwrap()),
        "{tools:#?}"
    );
    assert_eq!(std::fs::read_to_string(env.store()).unwrap(), garbage);
}

#[test]
fn secrets_never_appear_in_output() {
    let env = Env::new();
    for args in [
        vec![
            "-vvv",
            "add",
            "remote",
            "--url",
            "https://mcp.example.com/mcp",
            "--header",
        ],
        vec!["-vvv", "--json", "add", "local", "--env"],
    ] {
        let mut args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        args.push(format!("K={SECRET}"));
        if args.contains(&"local".to_owned()) {
            args.extend(["--".to_owned(), "srv".to_owned()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = env.run(&args);
        assert_eq!(run.code, 0, "{run:#?}");
        assert!(
            !run.stdout.contains(SECRET) && !run.stderr.contains(SECRET),
            "{run:#?}"
        );
    }
    // A duplicate add fails; its error holds no secret either.
    let run = env.run(&["add", "local", "--env", &format!("K={SECRET}"), "--", "srv"]);
    assert_eq!(run.code, 2);
    assert!(!run.stderr.contains(SECRET), "{run:#?}");
}

#[test]
fn add_stores_the_oauth_settings_of_an_http_server() {
    let env = Env::new();
    let run = env.run(&[
        "add",
        "remote",
        "--url",
        "https://mcp.example.com/mcp",
        "--oauth-client-id",
        "my-client",
        "--oauth-client-secret-env",
        "REMOTE_CLIENT_SECRET",
        "--oauth-scope",
        "read",
        "--oauth-scope",
        "write",
        "--oauth-redirect-port",
        "8123",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let oauth = &stored(&env)["servers"][0]["transport"]["oauth"];
    assert_eq!(
        *oauth,
        json!({
            "clientId": "my-client",
            "clientSecretEnv": "REMOTE_CLIENT_SECRET",
            "scopes": ["read", "write"],
            "redirectPort": 8123,
        })
    );

    // Without any --oauth-* flag there is no section (OAuth still starts
    // on demand, with the defaults).
    env.json(&["add", "plain", "--url", "https://mcp.example.com/other"]);
    assert!(
        stored(&env)["servers"][1]["transport"]
            .get("oauth")
            .is_none()
    );

    // OAuth (like headers) belongs to HTTP servers: refused, not dropped.
    for flag in [
        ["--oauth-scope", "x"],
        ["--header", "K=V"],
        ["--bearer-env", "VAR"],
    ] {
        let stdio = env.run(&["add", "local", flag[0], flag[1], "--", "server"]);
        assert_eq!(stdio.code, 2, "{stdio:#?}");
        assert!(stdio.stderr.contains(flag[0]), "{stdio:#?}");
    }
    // A client secret needs a client id.
    let orphan = env.run(&[
        "add",
        "orphan",
        "--url",
        "https://mcp.example.com/mcp",
        "--oauth-client-secret-env",
        "VAR",
    ]);
    assert_eq!(orphan.code, 2, "{orphan:#?}");
    assert_eq!(stored_ids(&env), ["remote", "plain"]);
}

#[test]
fn add_stores_the_jwt_bearer_grant_with_where_its_jwt_is() {
    let env = Env::new();
    let file = env.work_dir().join("workload.jwt");
    let file = file.display().to_string();
    let run = env.run(&[
        "add",
        "workload",
        "--url",
        "https://mcp.example.com/mcp",
        "--oauth-grant",
        "jwt_bearer",
        "--oauth-assertion-file",
        &file,
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        stored(&env)["servers"][0]["transport"]["oauth"],
        json!({"grant": "jwt_bearer", "assertionFile": file})
    );
    let run = env.run(&[
        "add",
        "workload-env",
        "--url",
        "https://mcp.example.com/env",
        "--oauth-grant",
        "jwt_bearer",
        "--oauth-assertion-env",
        "WORKLOAD_JWT",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        stored(&env)["servers"][1]["transport"]["oauth"],
        json!({"grant": "jwt_bearer", "assertionEnv": "WORKLOAD_JWT"})
    );
    // The grant without either is refused, with the store's code; so are both.
    let incomplete = env.run(&[
        "add",
        "nothing",
        "--url",
        "https://mcp.example.com/x",
        "--oauth-grant",
        "jwt_bearer",
    ]);
    assert_eq!(incomplete.code, 2, "{incomplete:#?}");
    assert!(
        incomplete.stderr.contains(
            "set `oauth.assertionFile` to the file that holds it, or `oauth.assertionEnv`"
        ) && incomplete.stderr.contains("[oauth_jwt_bearer_incomplete]"),
        "{incomplete:#?}"
    );
    let both = env.run(&[
        "add",
        "both",
        "--url",
        "https://mcp.example.com/y",
        "--oauth-grant",
        "jwt_bearer",
        "--oauth-assertion-file",
        &file,
        "--oauth-assertion-env",
        "WORKLOAD_JWT",
    ]);
    assert_eq!(both.code, 2, "{both:#?}");
    assert_eq!(stored_ids(&env), ["workload", "workload-env"]);
}

#[test]
fn add_stores_the_client_credentials_grant() {
    let env = Env::new();
    let run = env.run(&[
        "add",
        "machine",
        "--url",
        "https://mcp.example.com/mcp",
        "--oauth-grant",
        "client_credentials",
        "--oauth-client-id",
        "machine-client",
        "--oauth-client-secret-env",
        "MACHINE_CLIENT_SECRET",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        stored(&env)["servers"][0]["transport"]["oauth"],
        json!({
            "clientId": "machine-client",
            "clientSecretEnv": "MACHINE_CLIENT_SECRET",
            "grant": "client_credentials",
        })
    );

    // The default grant alone still makes a section, written without it.
    env.json(&[
        "add",
        "person",
        "--url",
        "https://mcp.example.com/other",
        "--oauth-grant",
        "authorization_code",
    ]);
    assert_eq!(stored(&env)["servers"][1]["transport"]["oauth"], json!({}));

    // The grant needs its client: refused with the stable code, nothing saved.
    let incomplete = env.run(&[
        "add",
        "half",
        "--url",
        "https://mcp.example.com/mcp",
        "--oauth-grant",
        "client_credentials",
        "--oauth-client-id",
        "machine-client",
    ]);
    assert_eq!(incomplete.code, 2, "{incomplete:#?}");
    assert!(
        incomplete
            .stderr
            .contains("oauth_client_credentials_incomplete"),
        "{incomplete:#?}"
    );
    assert!(
        incomplete.stderr.contains("clientSecretEnv"),
        "{incomplete:#?}"
    );

    // An unknown grant and the flag on a stdio server are refused.
    let unknown = env.run(&[
        "add",
        "odd",
        "--url",
        "https://mcp.example.com/mcp",
        "--oauth-grant",
        "password",
    ]);
    assert_eq!(unknown.code, 2, "{unknown:#?}");
    let stdio = env.run(&[
        "add",
        "local",
        "--oauth-grant",
        "client_credentials",
        "--",
        "server",
    ]);
    assert_eq!(stdio.code, 2, "{stdio:#?}");
    assert!(stdio.stderr.contains("--oauth-grant"), "{stdio:#?}");
    assert_eq!(stored_ids(&env), ["machine", "person"]);
}

#[test]
fn add_pins_the_protocol_era_for_stdio_and_http_servers() {
    let env = Env::new();
    let run = env.run(&[
        "add",
        "new",
        "--era",
        "modern",
        "--url",
        "https://mcp.example.com/mcp",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let run = env.run(&["add", "old", "--era", "legacy", "--", "mcp-files"]);
    assert_eq!(run.code, 0, "{run:#?}");
    // `auto` is the default and, like no flag at all, is not written.
    env.json(&["add", "detected", "--era", "auto", "--", "mcp-files"]);
    env.json(&["add", "plain", "--", "mcp-files"]);
    let servers = stored(&env)["servers"].clone();
    assert_eq!(servers[0]["era"], "modern");
    assert_eq!(servers[1]["era"], "legacy");
    assert_eq!(servers[2].get("era"), None, "{servers:#}");
    assert_eq!(servers[3].get("era"), None, "{servers:#}");

    let unknown = env.run(&["add", "odd", "--era", "2026-07-28", "--", "mcp-files"]);
    assert_eq!(unknown.code, 2, "{unknown:#?}");
    assert!(unknown.stderr.contains("--era"), "{unknown:#?}");
    assert_eq!(stored_ids(&env), ["new", "old", "detected", "plain"]);
}

#[test]
fn add_help_documents_the_era_flag() {
    let help = Env::new().run(&["add", "--help"]);
    assert_eq!(help.code, 0, "{help:#?}");
    for text in ["--era", "auto", "modern", "legacy", "2026-07-28"] {
        assert!(help.stdout.contains(text), "{text}: {}", help.stdout);
    }
}

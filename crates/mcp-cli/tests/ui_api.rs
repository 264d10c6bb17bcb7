//! `mcpctl ui`'s JSON API and event stream against the real server on 127.0.0.1: add, edit with kept secrets, toggle, retry, delete, the request checks and the malformed-store page.

mod support;

use serde_json::{Value, json};
use support::Env;
use support::ui::{UiServer, has_status, server, store, stored};

/// A recognisable secret: no response may ever contain it.
const SECRET: &str = "sk-ui-api-SECRET-7731";
const HEADER_SECRET: &str = "hdr-ui-api-SECRET-9034";

fn demo(env_rows: Value) -> Value {
    json!({
        "id": "demo",
        "name": "Demo",
        "enabled": true,
        "transport": {
            "type": "stdio",
            "command": support::MCPCTL,
            "args": ["demo-server"],
            "env": env_rows,
            "envVars": [],
            "cwd": ""
        }
    })
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [SECRET, HEADER_SECRET] {
        assert!(!text.contains(secret), "{what} contains a secret: {text}");
    }
}

#[test]
fn add_edit_toggle_retry_delete_through_the_api_never_returning_a_secret() {
    let env = Env::new();
    let ui = UiServer::start(&env);
    let mut events = ui.events();
    // An empty store lists what `mcpctl servers` lists: the built-in demo,
    // read-only and copyable.
    let first = events.until("the built-in demo is listed", |l| {
        l["servers"].as_array().is_some_and(|s| s.len() == 1) && server(l, "demo").is_some()
    });
    let builtin = server(&first, "demo").unwrap();
    assert_eq!(builtin["editable"], false, "{builtin}");
    assert_eq!(builtin["copyable"], true, "{builtin}");

    // Add: a stdio server with a literal env secret, and a disabled HTTP
    // server with a literal header secret.
    let added = ui.call(
        "POST",
        "/api/servers",
        Some(&demo(json!([{"key": "DEMO_TOKEN", "value": SECRET}]))),
    );
    assert_eq!(added.status, 201, "{added:?}");
    assert_eq!(added.json()["created"], true);
    assert_no_secret("the add answer", &added.body);
    let http = json!({
        "id": "remote",
        "enabled": false,
        "transport": {
            "type": "http",
            "url": "http://127.0.0.1:9/mcp",
            "bearerTokenEnv": "REMOTE_TOKEN",
            "headers": [{"key": "X-Api-Key", "value": HEADER_SECRET}],
            "envHeaders": [{"key": "X-Tenant", "value": "TENANT_VAR"}]
        }
    });
    let added = ui.call("POST", "/api/servers", Some(&http));
    assert_eq!(added.status, 201, "{added:?}");
    let again = ui.call("POST", "/api/servers", Some(&http));
    assert_eq!(again.status, 400, "{again:?}");
    assert_eq!(again.json()["error"]["code"], "duplicate_id");

    // The stream shows the demo server becoming ready with its tools. (The
    // demo can be ready in a listing sent before `remote` was added, so
    // the listing waited for has both.)
    let listing = events.until("demo is ready, remote listed", |l| {
        has_status(l, "demo", "ready") && server(l, "remote").is_some()
    });
    assert_no_secret("the event stream", &listing.to_string());
    let demo_entry = server(&listing, "demo").unwrap();
    assert_eq!(demo_entry["editable"], true, "{demo_entry}");
    assert_eq!(demo_entry["tools"], 5);
    assert!(
        demo_entry["catalog"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo"),
        "{demo_entry}"
    );
    assert_eq!(
        demo_entry["config"]["transport"]["env"],
        json!([{"key": "DEMO_TOKEN", "value": "", "saved": true}])
    );
    let remote = server(&listing, "remote").unwrap();
    assert_eq!(remote["status"], "disabled");
    assert_eq!(
        remote["config"]["transport"]["headers"],
        json!([{"key": "X-Api-Key", "value": "", "saved": true}])
    );
    assert_eq!(
        remote["config"]["transport"]["envHeaders"],
        json!([{"key": "X-Tenant", "value": "TENANT_VAR"}])
    );
    let listed = ui.call("GET", "/api/servers", None);
    assert_eq!(listed.status, 200);
    assert_no_secret("GET /api/servers", &listed.body);

    // Edit with the saved marker and an empty value: the secret is kept.
    let mut edited = demo(json!([{"key": "DEMO_TOKEN", "value": "", "saved": true}]));
    edited["name"] = json!("Demo (edited)");
    let saved = ui.call("PUT", "/api/servers/demo", Some(&edited));
    assert_eq!(saved.status, 200, "{saved:?}");
    assert_no_secret("the edit answer", &saved.body);
    let file = store(&env);
    let stored_demo = stored(&file, "demo").unwrap();
    assert_eq!(stored_demo["name"], "Demo (edited)");
    assert_eq!(
        stored_demo["transport"]["env"][0]["value"], SECRET,
        "{file}"
    );
    events.until("the new name is listed", |l| {
        server(l, "demo").is_some_and(|s| s["name"] == "Demo (edited)")
    });
    // The header secret survives an edit of the HTTP server too.
    let mut remote_edit = http.clone();
    remote_edit["transport"]["headers"] = json!([{"key": "X-Api-Key", "value": "", "saved": true}]);
    assert_eq!(
        ui.call("PUT", "/api/servers/remote", Some(&remote_edit))
            .status,
        200
    );
    assert_eq!(
        stored(&store(&env), "remote").unwrap()["transport"]["headers"][0]["value"],
        HEADER_SECRET
    );
    // A changed URL drops the kept secret and says so (it must be entered
    // again for the new endpoint).
    remote_edit["transport"]["url"] = json!("http://127.0.0.1:10/mcp");
    let moved = ui.call("PUT", "/api/servers/remote", Some(&remote_edit));
    assert_eq!(moved.status, 200, "{moved:?}");
    assert_eq!(moved.json()["droppedSecrets"][0]["key"], "X-Api-Key");
    assert_eq!(
        stored(&store(&env), "remote").unwrap()["transport"]["headers"],
        json!([])
    );

    // A pinned era is listed, and an edit that sends it back keeps it.
    remote_edit["era"] = json!("legacy");
    let pinned = ui.call("PUT", "/api/servers/remote", Some(&remote_edit));
    assert_eq!(pinned.status, 200, "{pinned:?}");
    assert_eq!(stored(&store(&env), "remote").unwrap()["era"], "legacy");
    let listed = ui.call("GET", "/api/servers", None).json();
    let remote = server(&listed, "remote").unwrap();
    assert_eq!(remote["config"]["era"], "legacy", "{remote}");
    let resent = ui.call("PUT", "/api/servers/remote", Some(&remote["config"]));
    assert_eq!(resent.status, 200, "{resent:?}");
    assert_eq!(stored(&store(&env), "remote").unwrap()["era"], "legacy");
    remote_edit["era"] = json!("newest");
    let odd = ui.call("PUT", "/api/servers/remote", Some(&remote_edit));
    assert_eq!(odd.status, 400, "{odd:?}");
    assert!(odd.body.contains("`era`"), "{odd:?}");
    assert_eq!(stored(&store(&env), "remote").unwrap()["era"], "legacy");

    // Removing the row deletes the secret.
    let removed_row = ui.call("PUT", "/api/servers/demo", Some(&demo(json!([]))));
    assert_eq!(removed_row.status, 200, "{removed_row:?}");
    assert_eq!(
        stored(&store(&env), "demo").unwrap()["transport"]["env"],
        json!([])
    );

    // Invalid configs are refused with their diagnostics, nothing saved.
    let mut invalid = demo(json!([]));
    invalid["transport"]["cwd"] = json!("relative/dir");
    let refused = ui.call("PUT", "/api/servers/demo", Some(&invalid));
    assert_eq!(refused.status, 400, "{refused:?}");
    let error = &refused.json()["error"];
    assert_eq!(error["code"], "invalid_config");
    assert!(
        error["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["field"].as_str().unwrap_or("").contains("cwd")),
        "{error}"
    );

    // Toggle: disabled, then ready again.
    let off = ui.call(
        "POST",
        "/api/servers/demo/enabled",
        Some(&json!({"enabled": false})),
    );
    assert_eq!(off.status, 200, "{off:?}");
    events.until("demo is disabled", |l| has_status(l, "demo", "disabled"));
    assert_eq!(stored(&store(&env), "demo").unwrap()["enabled"], false);
    let on = ui.call(
        "POST",
        "/api/servers/demo/enabled",
        Some(&json!({"enabled": true})),
    );
    assert_eq!(on.status, 200, "{on:?}");
    events.until("demo is ready again", |l| has_status(l, "demo", "ready"));

    // Retry: a server whose command does not exist fails with
    // `missing_command`; Retry starts a fresh attempt with the same end.
    let mut broken = demo(json!([]));
    broken["id"] = json!("broken");
    broken["transport"]["command"] = json!("/nonexistent/mcp-server-for-ui-test");
    assert_eq!(ui.call("POST", "/api/servers", Some(&broken)).status, 201);
    let failed = events.until("broken failed", |l| has_status(l, "broken", "error"));
    assert_eq!(
        server(&failed, "broken").unwrap()["error"]["code"],
        "missing_command"
    );
    let generation = server(&failed, "broken").unwrap()["generation"].clone();
    let retried = ui.call("POST", "/api/servers/broken/retry", None);
    assert_eq!(retried.status, 200, "{retried:?}");
    events.until("broken failed again", |l| {
        server(l, "broken").is_some_and(|s| s["status"] == "error" && s["generation"] != generation)
            || has_status(l, "broken", "connecting")
    });
    let unknown = ui.call("POST", "/api/servers/nope/retry", None);
    assert_eq!(unknown.status, 404, "{unknown:?}");

    // Delete.
    let deleted = ui.call("DELETE", "/api/servers/broken", None);
    assert_eq!(deleted.status, 200, "{deleted:?}");
    events.until("broken is gone", |l| server(l, "broken").is_none());
    assert!(stored(&store(&env), "broken").is_none());
    assert_eq!(ui.call("DELETE", "/api/servers/broken", None).status, 404);

    // Nothing the API said, now or before, carries a secret.
    assert_no_secret(
        "the final listing",
        &ui.call("GET", "/api/servers", None).body,
    );
    assert_no_secret("the page", &ui.call("GET", "/", None).body);
}

#[test]
fn requests_without_the_token_from_another_host_or_origin_are_refused() {
    let env = Env::new();
    let ui = UiServer::start(&env);
    let token = format!("x-mcpctl-token: {}", ui.token);

    assert_eq!(ui.raw("GET", "/api/servers", &[], None).status, 403);
    assert_eq!(ui.raw("GET", "/", &[], None).status, 403);
    assert_eq!(
        ui.raw("GET", "/api/servers", &["x-mcpctl-token: 0000"], None)
            .status,
        403
    );
    // DNS rebinding: a page on another name that resolves to 127.0.0.1.
    let rebound = ui.raw(
        "GET",
        "/api/servers",
        &[&token, "Host: attacker.example:80"],
        None,
    );
    assert_eq!(rebound.status, 403, "{rebound:?}");
    // A cross-site request, even one that somehow has the token.
    let cross = ui.raw(
        "POST",
        "/api/servers",
        &[&token, "Origin: http://attacker.example"],
        Some(&demo(json!([]))),
    );
    assert_eq!(cross.status, 403, "{cross:?}");
    assert!(!env.store().exists(), "a refused request wrote the store");

    // The page itself, with the token and from its own origin.
    let page = ui.raw(
        "GET",
        &format!("/?token={}", ui.token),
        &[&format!("Origin: http://127.0.0.1:{}", ui.port)],
        None,
    );
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("Add MCP server"), "{}", page.body);
    assert!(
        page.head
            .to_ascii_lowercase()
            .contains("content-security-policy")
    );
    let localhost = ui.raw(
        "GET",
        "/api/servers",
        &[&token, &format!("Host: localhost:{}", ui.port)],
        None,
    );
    assert_eq!(localhost.status, 200, "{localhost:?}");
}

#[test]
fn a_malformed_store_shows_a_repair_page_and_is_never_overwritten() {
    let env = Env::new();
    let broken = "{ \"version\": 1, \"servers\": [ oops";
    std::fs::write(env.store(), broken).unwrap();
    let ui = UiServer::start(&env);

    let page = ui.call("GET", &format!("/?token={}", ui.token), None);
    assert_eq!(page.status, 500, "{page:?}");
    let path = env.store().display().to_string();
    assert!(
        page.body.contains(&path),
        "the page does not name {path}: {}",
        page.body
    );
    assert!(page.body.contains("malformed_store"), "{}", page.body);
    assert!(page.body.contains("repair"), "{}", page.body);
    assert!(
        page.body
            .contains("Nothing has been changed or overwritten")
    );

    let listed = ui.call("GET", "/api/servers", None);
    assert_eq!(listed.status, 500);
    assert_eq!(listed.json()["error"]["code"], "malformed_store");
    let mut events = ui.events();
    events.until("the stream reports the error", |l| {
        l["error"]["code"] == "malformed_store"
    });

    // Every change is refused and the file keeps its bytes.
    let saved = ui.call("POST", "/api/servers", Some(&demo(json!([]))));
    assert_eq!(saved.status, 500, "{saved:?}");
    assert_eq!(saved.json()["error"]["code"], "malformed_store");
    let toggled = ui.call(
        "POST",
        "/api/servers/x/enabled",
        Some(&json!({"enabled": false})),
    );
    assert_eq!(toggled.json()["error"]["code"], "malformed_store");
    let deleted = ui.call("DELETE", "/api/servers/x", None);
    assert_eq!(deleted.json()["error"]["code"], "malformed_store");
    assert_eq!(std::fs::read_to_string(env.store()).unwrap(), broken);
}

/// The project's `.mcp.json` (the directory `mcpctl ui` runs in): one stdio
/// server with `args`.
fn project_server(env: &Env, args: &[&str]) {
    std::fs::write(
        env.work_dir().join(".mcp.json"),
        json!({"mcpServers": {"proj": {"command": support::MCPCTL, "args": args,
            "env": {"PROJ_KEY": SECRET}}}})
        .to_string(),
    )
    .unwrap();
}

#[test]
fn a_project_server_is_approved_through_the_page_only_as_it_was_shown() {
    let env = Env::new();
    project_server(&env, &["demo-server"]);
    let ui = UiServer::start(&env);

    let listing = ui.call("GET", "/api/trust", None);
    assert_eq!(listing.status, 200, "{listing:?}");
    assert_no_secret("the trust listing", &listing.body);
    let listing = listing.json();
    let project = std::fs::canonicalize(env.work_dir()).unwrap();
    assert_eq!(listing["project"], env.work_dir().to_str().unwrap());
    let proj = &listing["servers"][0];
    assert_eq!(proj["id"], "proj", "{listing}");
    assert_eq!(proj["command"], format!("{} demo-server", support::MCPCTL));
    assert_eq!(proj["reads"], json!([]));
    assert_eq!(
        proj["approveCommand"],
        format!("mcpctl trust proj --project {}", project.display())
    );
    let hash = proj["hash"].as_str().unwrap().to_owned();

    // Without the token: refused, like every API route.
    let refused = ui.raw("POST", "/api/trust/proj", &[], Some(&json!({"hash": hash})));
    assert_eq!(refused.status, 403, "{refused:?}");
    // The definition changed after it was listed: nothing is approved.
    project_server(&env, &["demo-server", "--other"]);
    let changed = ui.call("POST", "/api/trust/proj", Some(&json!({"hash": hash})));
    assert_eq!(changed.status, 409, "{changed:?}");
    assert_eq!(changed.json()["error"]["code"], "definition_changed");
    assert!(!env.data_dir().join("trust.json").exists());
    let bad = ui.call("POST", "/api/trust/proj", Some(&json!({})));
    assert_eq!(bad.status, 400, "{bad:?}");

    // As listed: approved, and `mcpctl` starts it from then on.
    project_server(&env, &["demo-server"]);
    let approved = ui.call("POST", "/api/trust/proj", Some(&json!({"hash": hash})));
    assert_eq!(approved.status, 200, "{approved:?}");
    assert_eq!(
        ui.call("GET", "/api/trust", None).json()["servers"],
        json!([])
    );
    let again = ui.call("POST", "/api/trust/proj", Some(&json!({"hash": hash})));
    assert_eq!(again.status, 404, "{again:?}");
    assert_eq!(again.json()["error"]["code"], "not_untrusted");
    let servers = env.json(&["servers"]);
    assert_eq!(servers[0]["id"], "proj");
    assert_eq!(servers[0]["status"], "ready", "{servers}");
}

#[test]
fn ctrl_c_stops_the_page_closes_its_servers_and_exits_130() {
    let env = Env::new();
    let pid_file = env.data_dir().join("fixture.pid");
    let store = json!({"version": 1, "servers": [{
        "id": "fx",
        "transport": {"type": "stdio", "command": support::fixture_server(),
            "args": ["--pid-file", pid_file]}
    }]});
    std::fs::write(env.store(), serde_json::to_vec(&store).unwrap()).unwrap();
    let mut ui = UiServer::start(&env);
    let mut events = ui.events();
    events.until("fx is ready", |l| has_status(l, "fx", "ready"));
    let pid = std::fs::read_to_string(&pid_file).expect("the fixture wrote its pid");
    let pid = pid.trim();
    assert_eq!(ui.interrupt(), 130);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server {pid} outlived mcpctl ui"
    );
}

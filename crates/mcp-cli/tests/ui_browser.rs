//! `mcpctl ui` in real headless Chromium: a person adds a server and sees its tools, sees a broken command fail in the form, toggles, edits with a kept secret and deletes with confirmation; answers what servers ask back during a Try (a form, a sampling request, a URL, and a URL the server says is done); follows their log messages and resource updates; and sees hostile server text as text.
//!
//! Chromium comes from Debian (`apt-get install chromium chromium-driver`);
//! without it these tests fail with that command. Waits are bounded
//! in-page polls of the real DOM (see `support::cdp`), never sleeps.

mod support;

use std::path::PathBuf;

use support::Env;
use support::cdp::Browser;
use support::ui::{UiServer, store, stored};

/// A recognisable secret typed into the form: it must reach the store and
/// never come back to the page.
const SECRET: &str = "sk-ui-browser-SECRET-5512";
const HEADER_SECRET: &str = "hdr-ui-browser-SECRET-6620";

/// Where the screenshot of the list (one ready, one failed server) goes.
fn screenshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpctl-ui-servers.png")
}

fn item(id: &str) -> String {
    format!("document.querySelector('li.server[data-id=\"{id}\"]')")
}

#[test]
fn a_person_adds_edits_toggles_and_deletes_servers_in_the_page() {
    let env = Env::new();
    let ui = UiServer::start(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    page.wait_for("document.body.dataset.loaded === 'true'", "the live list");
    // With nothing configured the page lists what `mcpctl servers` lists:
    // the built-in demo, read-only.
    page.wait_for(
        &format!(
            "{0} && {0}.dataset.status === 'ready' && {0}.querySelector('.edit') === null",
            item("demo")
        ),
        "the built-in demo, ready and read-only",
    );

    // Add a server of their own (the demo, under another id), with an
    // argument row and a secret env row.
    page.click("#add");
    page.wait_for(
        "!document.querySelector('#form-view').hidden",
        "the add form",
    );
    assert!(
        page.contents().contains("runs this command as you"),
        "the add form does not warn about running commands"
    );
    page.type_into("#f-id", "mine");
    page.type_into("#f-name", "Demo server");
    page.type_into("#f-command", support::MCPCTL);
    page.click("#add-arg");
    page.type_into("#args .kv:last-child .value", "demo-server");
    page.click("#add-env");
    page.type_into("#env .kv:last-child .key", "DEMO_TOKEN");
    page.type_into("#env .kv:last-child .value", SECRET);
    page.click("#save");
    // Success returns to the list, where it is ready with its tools.
    page.wait_for(
        &format!(
            "!document.querySelector('#list-view').hidden && {0} && {0}.dataset.status === 'ready'",
            item("mine")
        ),
        "mine ready in the list",
    );
    // Its tools are collapsed to a count; opening them lists each one.
    assert_eq!(
        page.eval(&format!(
            "{}.querySelector('.tools summary').innerText",
            item("mine")
        )),
        "5 tools"
    );
    page.click("li.server[data-id=\"mine\"] .tools summary");
    page.wait_for(
        &format!(
            "{}.querySelector('.tools [data-tool=\"echo\"]') !== null",
            item("mine")
        ),
        "its tools",
    );
    // Saving the person's first server replaces the built-in default.
    page.wait_for(
        &format!("{} === null", item("demo")),
        "the built-in demo gone",
    );
    let badge = page.eval(&format!(
        "{}.querySelector('.status').innerText",
        item("mine")
    ));
    // The demo server speaks the handshake era; the page names the version.
    assert_eq!(badge, "ready · 2025-11-25");
    let file = store(&env);
    let saved = stored(&file, "mine").expect("mine in the store");
    assert_eq!(saved["transport"]["args"][0], "demo-server");
    assert_eq!(saved["transport"]["env"][0]["value"], SECRET);

    // A command that does not exist: the form stays open, where it was,
    // with the error.
    page.click("#add");
    page.type_into("#f-id", "broken");
    page.type_into("#f-command", "/nonexistent/mcp-server-for-ui-test");
    page.click("#save");
    let scrolled = page.eval("window.scrollY");
    // The window is shorter than the form, so clicking Save scrolled it:
    // what is checked is that a save keeps a scrolled form where it is.
    assert!(scrolled.as_f64().unwrap() > 0.0, "the form did not scroll");
    page.wait_for(
        "document.querySelector('#form-status').dataset.state === 'error'",
        "the failed connection in the form",
    );
    let status = page.eval("document.querySelector('#form-status').innerText");
    assert!(
        status.as_str().unwrap().contains("missing_command"),
        "{status}"
    );
    assert_eq!(
        page.eval("document.querySelector('#form-view').hidden"),
        false
    );
    assert_eq!(page.eval("window.scrollY"), scrolled, "the form moved");
    page.screenshot(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpctl-ui-form-error.png"));
    page.click("#back");
    page.wait_for(
        &format!("{0} && {0}.dataset.status === 'error'", item("broken")),
        "broken failed in the list",
    );
    page.wait_for(
        &format!("{}.querySelector('.retry') !== null", item("broken")),
        "Retry on the failed server",
    );
    page.screenshot(&screenshot_path());
    eprintln!("screenshot: {}", screenshot_path().display());

    // Disable and enable again with the switch.
    page.click("li.server[data-id=\"mine\"] .enable");
    page.wait_for(
        &format!("{}.dataset.status === 'disabled'", item("mine")),
        "demo disabled",
    );
    assert_eq!(stored(&store(&env), "mine").unwrap()["enabled"], false);
    page.click("li.server[data-id=\"mine\"] .enable");
    page.wait_for(
        &format!("{}.dataset.status === 'ready'", item("mine")),
        "demo ready again",
    );

    // Retry the broken one: it fails the same way and stays listed.
    page.click("li.server[data-id=\"broken\"] .retry");
    page.wait_for(
        &format!(
            "{0}.dataset.status === 'error' && {0}.innerText.includes('missing_command')",
            item("broken")
        ),
        "broken failed again",
    );

    // A server that never answers: the form shows it connecting, and Back
    // returns to the list while discovery goes on there.
    page.click("#add");
    page.type_into("#f-id", "slow");
    page.type_into("#f-command", "/usr/bin/sleep");
    page.click("#add-arg");
    page.type_into("#args .kv:last-child .value", "60");
    page.click("#save");
    page.wait_for(
        "document.querySelector('#form-status').dataset.state === 'connecting'",
        "the background connection in the form",
    );
    page.click("#back");
    page.wait_for(
        &format!(
            "!document.querySelector('#list-view').hidden && {0} && \
             ['queued', 'connecting'].includes({0}.dataset.status)",
            item("slow")
        ),
        "slow still connecting in the list",
    );
    page.click("li.server[data-id=\"slow\"] .delete");
    page.click("li.server[data-id=\"slow\"] .confirm-delete");
    page.wait_for(&format!("{} === null", item("slow")), "slow removed");

    // Edit: the secret shows as "saved" with an empty field; leaving it
    // empty keeps it.
    page.click("li.server[data-id=\"mine\"] .edit");
    page.wait_for(
        "!document.querySelector('#form-view').hidden && document.querySelector('#env .saved-badge')",
        "the edit form with a saved secret",
    );
    assert_eq!(page.eval("document.querySelector('#env .value').value"), "");
    page.type_into("#f-name", "Demo (edited)");
    page.click("#save");
    page.wait_for(
        &format!(
            "!document.querySelector('#list-view').hidden && {0}.innerText.includes('Demo (edited)') \
             && {0}.dataset.status === 'ready'",
            item("mine")
        ),
        "the edited server ready in the list",
    );
    let file = store(&env);
    let saved = stored(&file, "mine").unwrap();
    assert_eq!(saved["name"], "Demo (edited)");
    assert_eq!(saved["transport"]["env"][0]["key"], "DEMO_TOKEN");
    assert_eq!(
        saved["transport"]["env"][0]["value"], SECRET,
        "the kept secret was lost"
    );
    // The secret is not in the page (HTML and field values) or the API.
    page.click("li.server[data-id=\"mine\"] .edit");
    page.wait_for(
        "document.querySelector('#env .saved-badge')",
        "the edit form again",
    );
    assert!(
        !page.contents().contains(SECRET),
        "the page shows the secret"
    );
    assert!(!ui.call("GET", "/api/servers", None).body.contains(SECRET));
    page.click("#back");

    // Delete asks first; Cancel keeps the server, Delete removes it.
    page.click("li.server[data-id=\"broken\"] .delete");
    page.wait_for(
        &format!("{}.querySelector('.confirm')", item("broken")),
        "the delete confirmation",
    );
    page.click("li.server[data-id=\"broken\"] .cancel-delete");
    page.wait_for(
        &format!("{0} && !{0}.querySelector('.confirm')", item("broken")),
        "the confirmation gone, the server kept",
    );
    page.click("li.server[data-id=\"broken\"] .delete");
    page.click("li.server[data-id=\"broken\"] .confirm-delete");
    page.wait_for(&format!("{} === null", item("broken")), "broken removed");
    assert!(stored(&store(&env), "broken").is_none());
    assert!(stored(&store(&env), "mine").is_some());

    // A Streamable HTTP server, saved disabled: URL, bearer variable, a
    // secret header and a header from the environment.
    page.click("#add");
    page.type_into("#f-id", "remote");
    page.click("#f-type-http");
    page.wait_for(
        "!document.querySelector('#http-fields').hidden && document.querySelector('#stdio-fields').hidden",
        "the HTTP fields",
    );
    page.type_into("#f-url", "http://127.0.0.1:9/mcp");
    page.type_into("#f-bearer", "REMOTE_TOKEN");
    page.click("#add-header");
    page.type_into("#headers .kv:last-child .key", "X-Api-Key");
    page.type_into("#headers .kv:last-child .value", HEADER_SECRET);
    page.click("#add-envheader");
    page.type_into("#envheaders .kv:last-child .key", "X-Tenant");
    page.type_into("#envheaders .kv:last-child .value", "TENANT_VAR");
    page.click("#f-enabled");
    page.click("#save");
    page.wait_for(
        &format!(
            "!document.querySelector('#list-view').hidden && {0} && {0}.dataset.status === 'disabled'",
            item("remote")
        ),
        "the disabled HTTP server in the list",
    );
    let file = store(&env);
    let remote = &stored(&file, "remote").unwrap()["transport"];
    assert_eq!(remote["type"], "http");
    assert_eq!(remote["bearerTokenEnv"], "REMOTE_TOKEN");
    assert_eq!(remote["headers"][0]["value"], HEADER_SECRET);
    assert_eq!(remote["envHeaders"][0]["key"], "X-Tenant");
    assert_eq!(remote["envHeaders"][0]["value"], "TENANT_VAR");

    // Removing a saved header's row deletes it.
    page.click("li.server[data-id=\"remote\"] .edit");
    page.wait_for(
        "document.querySelector('#headers .saved-badge')",
        "the saved header",
    );
    assert!(!page.contents().contains(HEADER_SECRET));
    page.click("#headers .kv .remove");
    page.click("#save");
    page.wait_for(
        "!document.querySelector('#list-view').hidden",
        "the list after saving",
    );
    let file = store(&env);
    assert_eq!(
        stored(&file, "remote").unwrap()["transport"]["headers"],
        serde_json::json!([])
    );
}

#[test]
fn a_malformed_store_shows_the_repair_page_in_the_browser() {
    let env = Env::new();
    std::fs::write(env.store(), "{ not json").unwrap();
    let ui = UiServer::start(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    page.wait_for(
        "document.querySelector('#store-error') !== null",
        "the repair page",
    );
    let text = page.eval("document.body.innerText");
    let text = text.as_str().unwrap();
    assert!(text.contains(&env.store().display().to_string()), "{text}");
    assert!(text.contains("repair"), "{text}");
    page.screenshot(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpctl-ui-malformed.png"));
    assert_eq!(std::fs::read_to_string(env.store()).unwrap(), "{ not json");
}

#[test]
fn a_person_approves_a_project_server_in_the_page() {
    let env = Env::new();
    std::fs::write(
        env.work_dir().join(".mcp.json"),
        serde_json::json!({"mcpServers": {"proj": {"command": support::MCPCTL,
            "args": ["demo-server", "--from-the-project"]}}})
        .to_string(),
    )
    .unwrap();
    let ui = UiServer::start(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    page.wait_for(
        "document.body.dataset.trustLoaded === 'true'",
        "the trust list",
    );
    let untrusted = "document.querySelector('#untrusted li.server[data-id=\"proj\"]')";
    page.wait_for(
        &format!("{untrusted} !== null && !document.querySelector('#trust').hidden"),
        "the untrusted server",
    );
    let text = page.eval(&format!("{untrusted}.innerText"));
    let text = text.as_str().unwrap();
    assert!(
        text.contains(&format!(
            "runs: {} demo-server --from-the-project",
            support::MCPCTL
        )),
        "{text}"
    );
    assert!(text.contains("mcpctl trust proj --project"), "{text}");
    page.screenshot(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpctl-ui-trust.png"));

    page.click("#untrusted li.server[data-id=\"proj\"] button.approve");
    page.wait_for(
        &format!("{untrusted} === null"),
        "the approved server to leave the list",
    );
    let notice = page.eval("document.querySelector('#trust-message').innerText");
    assert!(
        notice.as_str().unwrap().contains("proj is approved"),
        "{notice}"
    );
    let approvals: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.data_dir().join("trust.json")).unwrap())
            .unwrap();
    assert_eq!(approvals["approvals"][0]["server"], "proj", "{approvals}");
}

/// `mcpctl ui --root DIR` over a `--config` file with server-everything
/// as `ev` and `tests/interop/asking_server.py` as `ask`; DIR is the work
/// directory's `project`.
fn asking_servers(env: &Env) -> UiServer {
    let everything = support::server_everything();
    let script = support::repo_root().join("tests/interop/asking_server.py");
    let config = env.write_json(
        "servers.json",
        &serde_json::json!({"mcpServers": {
            "ev": {"command": "node", "args": [everything, "stdio"]},
            "ask": {"command": support::venv_python(), "args": [script]},
        }}),
    );
    let config = config.display().to_string();
    let root = env.work_dir().join("project");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.display().to_string();
    UiServer::start_command(env.command(&[
        "--no-host-configs",
        "--config",
        &config,
        "ui",
        "--root",
        &root,
    ]))
}

/// Opens the Try panel of `tool` on `server` (the tool list, then the tool).
fn open_tool(page: &mut Browser, server: &str, tool: &str) {
    let item = format!("li.server[data-id=\"{server}\"]");
    page.wait_for(
        &format!("document.querySelector('{item}[data-status=\"ready\"] .tools summary') !== null"),
        &format!("{server} ready with its tools"),
    );
    if page.eval(&format!("document.querySelector('{item} .tools').open")) != true {
        page.click(&format!("{item} .tools summary"));
    }
    let tool = format!("{item} [data-tool=\"{tool}\"]");
    page.wait_for(
        &format!("document.querySelector('{tool} summary') !== null"),
        "the tool in the list",
    );
    if page.eval(&format!("document.querySelector('{tool} details').open")) != true {
        page.click(&format!("{tool} summary"));
    }
    page.wait_for(
        &format!("document.querySelector('{tool} button.run') !== null"),
        "the Try panel",
    );
}

/// The text of `tool`'s Try result on `server`, once it contains `wanted`.
fn try_result(page: &mut Browser, server: &str, tool: &str, wanted: &str) -> String {
    let result = format!(
        "document.querySelector('li.server[data-id=\"{server}\"] [data-tool=\"{tool}\"] .try-result')"
    );
    page.wait_for(
        &format!(
            "{result} && {result}.innerText.includes({})",
            serde_json::to_string(wanted).unwrap()
        ),
        &format!("{tool}'s result with {wanted:?}"),
    );
    page.eval(&format!("{result}.innerText"))
        .as_str()
        .unwrap()
        .to_owned()
}

const CARD: &str = "#asks article.ask";

#[test]
fn a_person_answers_a_form_a_sampling_request_and_a_url_in_the_page() {
    let env = Env::new();
    let ui = asking_servers(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    page.wait_for("document.body.dataset.loaded === 'true'", "the live list");

    // server-everything shows its elicitation tool only to a client that
    // declares elicitation: the page's connections do.
    open_tool(&mut page, "ev", "trigger-elicitation-request");
    page.click("li.server[data-id=\"ev\"] [data-tool=\"trigger-elicitation-request\"] button.run");
    page.wait_for(
        &format!("document.querySelector('{CARD}[data-kind=\"form\"]') !== null"),
        "the form in the page",
    );
    let card = page.eval(&format!("document.querySelector('{CARD}').innerText"));
    let card = card.as_str().unwrap();
    assert!(card.contains("A server asks for input"), "{card}");
    assert!(
        card.contains("ev · while trying trigger-elicitation-request"),
        "{card}"
    );
    assert!(
        card.contains("Please provide inputs for the following fields:"),
        "{card}"
    );
    assert!(card.contains("Your full, legal name"), "{card}");
    // Defaults are filled in; the required field is marked.
    assert_eq!(
        page.eval(&format!(
            "document.querySelector('{CARD} [data-name=\"firstLine\"]').value"
        )),
        "It was a dark and stormy night."
    );
    assert_eq!(
        page.eval(&format!(
            "document.querySelector('{CARD} [data-field=\"name\"] .required') !== null"
        )),
        true
    );
    page.screenshot(
        &PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpctl-ui-form-question.png"),
    );
    // An answer that does not fit the schema is refused, naming the field.
    page.type_into(&format!("{CARD} [data-name=\"name\"]"), "Ada Lovelace");
    page.type_into(&format!("{CARD} [data-name=\"email\"]"), "not-an-address");
    page.click(&format!("{CARD} button.ask-send"));
    page.wait_for(
        &format!("document.querySelector('{CARD} .ask-status').dataset.state === 'error'"),
        "the refused answer",
    );
    let status = page.eval(&format!(
        "document.querySelector('{CARD} .ask-status').innerText"
    ));
    assert!(
        status
            .as_str()
            .unwrap()
            .contains("`email` needs a valid email"),
        "{status}"
    );
    page.type_into(&format!("{CARD} [data-name=\"email\"]"), "ada@example.org");
    page.eval(&format!(
        "(() => {{ const s = document.querySelector('{CARD} select[data-name=\"untitledSingleSelectEnum\"]'); \
         s.value = 'Joey'; s.dispatchEvent(new Event('change')); }})()"
    ));
    page.click(&format!(
        "{CARD} [data-name=\"untitledMultipleSelectEnum\"] input[value=\"Piano\"]"
    ));
    page.click(&format!("{CARD} button.ask-send"));
    let text = try_result(
        &mut page,
        "ev",
        "trigger-elicitation-request",
        "Raw result:",
    );
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    assert!(text.contains("- Email: ada@example.org"), "{text}");
    let raw: serde_json::Value =
        serde_json::from_str(text.split("Raw result:").nth(1).unwrap().trim()).expect("JSON");
    assert_eq!(raw["action"], "accept");
    assert_eq!(raw["content"]["untitledSingleSelectEnum"], "Joey");
    assert_eq!(
        raw["content"]["untitledMultipleSelectEnum"],
        serde_json::json!(["Guitar", "Piano"])
    );
    assert_eq!(raw["content"]["integer"], 42, "the default");
    page.wait_for(
        &format!("document.querySelector('{CARD}') === null"),
        "the answered question gone",
    );

    // Sampling: the request is shown, there is no model, the person types.
    open_tool(&mut page, "ev", "trigger-sampling-request");
    let sampling = "li.server[data-id=\"ev\"] [data-tool=\"trigger-sampling-request\"]";
    page.type_into(
        &format!("{sampling} form.try [data-param=\"prompt\"]"),
        "What is 2+2?",
    );
    page.click(&format!("{sampling} button.run"));
    page.wait_for(
        &format!("document.querySelector('{CARD}[data-kind=\"sampling\"]') !== null"),
        "the sampling request in the page",
    );
    let card = page.eval(&format!("document.querySelector('{CARD}').innerText"));
    let card = card.as_str().unwrap();
    assert!(card.contains("mcpctl has no model"), "{card}");
    assert!(
        card.contains("system prompt:\n  You are a helpful test server."),
        "{card}"
    );
    assert!(card.contains("What is 2+2?"), "{card}");
    assert!(card.contains("wants: at most"), "{card}");
    page.screenshot(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpctl-ui-sampling.png"));
    page.type_into(
        &format!("{CARD} textarea.ask-reply"),
        "Four, typed by a person.",
    );
    page.click(&format!("{CARD} button.ask-send"));
    let text = try_result(
        &mut page,
        "ev",
        "trigger-sampling-request",
        "Four, typed by a person.",
    );
    assert!(text.contains("mcpctl-human"), "the model says who: {text}");

    // Declined: the server hears so, and the tool says it.
    page.click(&format!("{sampling} button.run"));
    page.wait_for(
        &format!("document.querySelector('{CARD}[data-kind=\"sampling\"]') !== null"),
        "the second sampling request",
    );
    page.click(&format!("{CARD} button.ask-decline"));
    try_result(
        &mut page,
        "ev",
        "trigger-sampling-request",
        "the user declined the sampling request",
    );

    // URL mode: the address is text, never a link, and Done answers.
    open_tool(&mut page, "ask", "visit");
    page.click("li.server[data-id=\"ask\"] [data-tool=\"visit\"] button.run");
    page.wait_for(
        &format!("document.querySelector('{CARD}[data-kind=\"url\"]') !== null"),
        "the URL question",
    );
    let url = page.eval(&format!(
        "document.querySelector('{CARD} .ask-url').textContent"
    ));
    let url = url.as_str().unwrap();
    assert!(url.starts_with("https://login.example.org/start?"), "{url}");
    assert!(
        !url.contains('\u{1b}') && !url.contains('\u{7}'),
        "escaped: {url:?}"
    );
    assert_eq!(
        page.eval(&format!(
            "document.querySelectorAll('{CARD} a').length + document.querySelectorAll('#asks a').length"
        )),
        0,
        "the URL is not a link"
    );
    assert_eq!(
        page.eval(&format!(
            "document.querySelector('{CARD} .ask-site').textContent"
        )),
        "login.example.org"
    );
    page.click(&format!("{CARD} button.ask-send"));
    try_result(&mut page, "ask", "visit", "action: accept");

    // The server says the page is done while it waits: nobody presses
    // Done, the question ends answered `accept`, and the page says why
    // without a reload.
    open_tool(&mut page, "ask", "visit_done");
    page.click("li.server[data-id=\"ask\"] [data-tool=\"visit_done\"] button.run");
    try_result(&mut page, "ask", "visit_done", "action: accept");
    page.wait_for(
        "document.querySelector('#ask-ended li[data-outcome]') !== null",
        "the ended question",
    );
    let ended = page.eval("document.querySelector('#ask-ended').innerText");
    let ended = ended.as_str().unwrap();
    assert!(
        ended.contains(
            "page to open (ask · while trying visit_done): the server says this is done: answered accept"
        ),
        "{ended}"
    );
    assert_eq!(
        page.eval(&format!("document.querySelectorAll('{CARD}').length")),
        0,
        "no question left open"
    );

    // Roots are the `--root` directory.
    open_tool(&mut page, "ev", "get-roots-list");
    page.click("li.server[data-id=\"ev\"] [data-tool=\"get-roots-list\"] button.run");
    let project = std::fs::canonicalize(env.work_dir().join("project")).unwrap();
    let text = try_result(
        &mut page,
        "ev",
        "get-roots-list",
        &format!("file://{}", project.display()),
    );
    assert!(text.contains("project"), "{text}");
}

#[test]
fn logs_resource_updates_and_hostile_server_text_show_as_text_in_the_page() {
    let env = Env::new();
    let ui = asking_servers(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    page.wait_for("document.body.dataset.loaded === 'true'", "the live list");
    let ask = "li.server[data-id=\"ask\"]";
    page.wait_for(
        &format!(
            "document.querySelector('{ask}[data-status=\"ready\"] details.logs summary') !== null"
        ),
        "ask ready with its log",
    );
    page.click(&format!("{ask} details.logs summary"));
    // The message the server logged while it was listed, kept from before
    // the page opened.
    let lines = format!("document.querySelector('{ask} .log-lines')");
    page.wait_for(
        &format!("{lines} && {lines}.innerText.includes('[asking] tools listed')"),
        "the server's first log line",
    );
    // A level chosen in the page is asked of the server, whose messages
    // at that level and above show live.
    page.eval(&format!(
        "(() => {{ const s = document.querySelector('{ask} select.log-level'); \
         s.value = 'debug'; s.dispatchEvent(new Event('change')); }})()"
    ));
    page.wait_for(
        &format!("{lines}.innerText.includes('level set to debug')"),
        "the debug message",
    );
    page.wait_for(
        &format!("{lines}.querySelector('[data-level=\"warning\"]') !== null"),
        "the warning",
    );
    let warning = page.eval(&format!(
        "{lines}.querySelector('[data-level=\"warning\"]').innerText"
    ));
    let warning = warning.as_str().unwrap();
    assert!(warning.contains("almost full"), "{warning}");
    assert!(!warning.contains('\u{1b}'), "escaped: {warning:?}");

    // Subscribe from the resource's row; a read makes the server send an
    // update, shown in the row and in the log.
    page.click(&format!("{ask} details.offers summary"));
    let row = format!("{ask} .resources li[data-uri=\"note://counter\"]");
    page.wait_for(
        &format!("document.querySelector('{row} button.subscribe') !== null"),
        "the Subscribe button",
    );
    page.click(&format!("{row} button.subscribe"));
    page.wait_for(
        &format!("document.querySelector('{row} button.subscribe').dataset.subscribed === 'true'"),
        "subscribed",
    );
    page.click(&format!("{row} button.read"));
    page.wait_for(
        &format!("{lines}.innerText.includes('resource updated: note://counter')"),
        "the update in the log",
    );
    page.wait_for(
        &format!("document.querySelector('{row} .updated').textContent.startsWith('updated ')"),
        "the update in the resource's row",
    );

    // A malformed form is declined at once; the page says what was
    // malformed.
    open_tool(&mut page, "ask", "bad_form");
    page.click(&format!("{ask} [data-tool=\"bad_form\"] button.run"));
    try_result(&mut page, "ask", "bad_form", "action: decline");
    page.wait_for(
        "!document.querySelector('#asks').hidden && document.querySelector('#ask-ended').innerText.includes('schema is malformed')",
        "the malformed form's outcome in the page",
    );
    let ended = page.eval("document.querySelector('#ask-ended').innerText");
    let ended = ended.as_str().unwrap();
    assert!(ended.contains("property `address`"), "{ended}");
    assert!(ended.contains("ask · while trying bad_form"), "{ended}");
    page.click("#ask-dismiss");
    page.wait_for("document.querySelector('#asks').hidden", "dismissed");

    // A server that sends markup and script: shown as text, never run.
    open_tool(&mut page, "ask", "hostile");
    page.click(&format!("{ask} [data-tool=\"hostile\"] button.run"));
    page.wait_for(
        &format!("document.querySelector('{CARD}[data-kind=\"form\"]') !== null"),
        "the hostile form",
    );
    page.wait_for(
        &format!("{lines}.querySelector('[data-level=\"error\"]') !== null"),
        "the hostile log line",
    );
    let message = page.eval(&format!(
        "document.querySelector('{CARD} .ask-message').textContent"
    ));
    assert!(
        message
            .as_str()
            .unwrap()
            .contains("<script>document.title=\"owned\"</script> What is your <b>name</b>?"),
        "{message}"
    );
    let label = page.eval(&format!(
        "document.querySelector('{CARD} [data-field=\"name\"] label').textContent"
    ));
    assert!(label.as_str().unwrap().contains("<i>Name</i>"), "{label}");
    let logged = page.eval(&format!(
        "{lines}.querySelector('[data-level=\"error\"]').textContent"
    ));
    let logged = logged.as_str().unwrap();
    assert!(logged.contains("[<b>asking</b>]"), "{logged}");
    assert!(logged.contains("<img src=x onerror="), "{logged}");
    for inside in ["#asks", ".logs"] {
        assert_eq!(
            page.eval(&format!(
                "document.querySelectorAll('{inside} img, {inside} script, {inside} b, {inside} i').length"
            )),
            0,
            "markup from the server became elements in {inside}"
        );
    }
    assert_eq!(page.eval("document.title"), "MCP servers · Settings");
    page.screenshot(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcpctl-ui-hostile.png"));
    // A required field left empty is refused; filled, the answer reaches
    // the server.
    page.click(&format!("{CARD} button.ask-send"));
    page.wait_for(
        &format!(
            "document.querySelector('{CARD} .ask-status').innerText.includes('`name` is required')"
        ),
        "the required field named",
    );
    page.type_into(&format!("{CARD} [data-name=\"name\"]"), "Mallory");
    page.click(&format!("{CARD} button.ask-send"));
    try_result(
        &mut page,
        "ask",
        "hostile",
        "action: accept content: {'name': 'Mallory'}",
    );
    assert_eq!(page.eval("document.title"), "MCP servers · Settings");

    // A new connection (a new server process) is asked for the page's
    // level and subscriptions again.
    let count = |text: &str| {
        format!(
            "[...document.querySelectorAll('{ask} .log-line')].filter(l => l.innerText.includes({})).length",
            serde_json::to_string(text).unwrap()
        )
    };
    assert_eq!(ui.call("POST", "/api/servers/ask/retry", None).status, 200);
    page.wait_for(
        &format!("{} === 2", count("level set to debug")),
        "the level asked of the new connection",
    );
    page.wait_for(
        &format!("document.querySelector('{row} button.read') !== null"),
        "the resource's row again",
    );
    page.click(&format!("{row} button.read"));
    page.wait_for(
        &format!("{} === 2", count("resource updated: note://counter")),
        "the new connection's update",
    );
}

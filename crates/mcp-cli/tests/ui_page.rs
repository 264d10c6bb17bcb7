//! `mcpctl ui` in headless Chromium, second part: every source in the list (read-only, copied into the store), the form's round trip and its problems at their fields, tools tried, resources and prompts, an OAuth login from the page, and the layout at desktop and phone widths.
//!
//! Chromium comes from Debian (`apt-get install chromium`); without it
//! these tests fail with that command. Waits are bounded in-page polls of
//! the real DOM (see `support::cdp`), never sleeps.

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use support::Env;
use support::cdp::Browser;
use support::oauth_fake::{Fake, TOKEN, browser_get};
use support::ui::{UiServer, store, stored};

/// A secret in another application's file: copied into the store, never
/// shown.
const CURSOR_SECRET: &str = "cursor-file-SECRET-7781";

fn item(id: &str) -> String {
    format!("document.querySelector('#servers li.server[data-id=\"{id}\"]')")
}

fn shot(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// A store file with `servers`, written as the store writes it.
fn write_store(env: &Env, servers: Value) {
    std::fs::create_dir_all(env.data_dir()).unwrap();
    std::fs::write(
        env.store(),
        serde_json::to_string_pretty(&json!({"version": 1, "servers": servers})).unwrap(),
    )
    .unwrap();
}

fn demo_server(id: &str) -> Value {
    json!({"id": id, "name": id, "enabled": true, "transport": {"type": "stdio",
        "command": support::MCPCTL, "args": ["demo-server"], "env": [], "envVars": [], "cwd": ""}})
}

#[test]
fn servers_of_every_source_are_listed_and_another_application_s_can_be_copied_in() {
    let env = Env::new();
    write_store(&env, json!([demo_server("mine")]));
    let cursor = env.home().join(".cursor");
    std::fs::create_dir_all(&cursor).unwrap();
    std::fs::write(
        cursor.join("mcp.json"),
        json!({"mcpServers": {"from-cursor": {"command": support::MCPCTL,
            "args": ["demo-server"], "env": {"CURSOR_TOKEN": CURSOR_SECRET}}}})
        .to_string(),
    )
    .unwrap();
    let ui = UiServer::start(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    page.wait_for(
        &format!(
            "{0} && {0}.dataset.status === 'ready' && {1} && {1}.dataset.status === 'ready'",
            item("mine"),
            item("from-cursor")
        ),
        "both servers ready",
    );
    // The store's server is the person's: editable. Cursor's is shown as
    // it is, with its source, and can only be copied.
    assert_eq!(
        page.eval(&format!("{}.dataset.source", item("from-cursor"))),
        "Cursor"
    );
    let cursor_text = page.eval(&format!("{}.innerText", item("from-cursor")));
    let cursor_text = cursor_text.as_str().unwrap();
    assert!(cursor_text.contains("read-only"), "{cursor_text}");
    assert!(
        cursor_text.contains(&cursor.join("mcp.json").display().to_string()),
        "{cursor_text}"
    );
    assert_eq!(
        page.eval(&format!(
            "{}.querySelector('.edit') === null",
            item("from-cursor")
        )),
        true
    );
    assert_eq!(
        page.eval(&format!("{}.querySelector('.edit') !== null", item("mine"))),
        true
    );
    assert!(
        !page.contents().contains(CURSOR_SECRET),
        "the page shows a secret"
    );
    // Changing it through the API is refused with its own code.
    let refused = ui.call(
        "POST",
        "/api/servers/from-cursor/enabled",
        Some(&json!({"enabled": false})),
    );
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.json()["error"]["code"], "read_only");

    page.click("#servers li.server[data-id=\"from-cursor\"] .copy");
    page.wait_for(
        &format!(
            "{0}.querySelector('.edit') !== null && {0}.dataset.status === 'ready'",
            item("from-cursor")
        ),
        "the copy, editable and ready",
    );
    let file = store(&env);
    let copied = stored(&file, "from-cursor").expect("the copy is in the store");
    assert_eq!(copied["transport"]["env"][0]["key"], "CURSOR_TOKEN");
    assert_eq!(copied["transport"]["env"][0]["value"], CURSOR_SECRET);
    let text = page.eval(&format!("{}.innerText", item("from-cursor")));
    assert!(text.as_str().unwrap().contains("your servers"), "{text}");
    assert!(!page.contents().contains(CURSOR_SECRET));
}

/// A store server with every field of the store format set.
fn everything_http() -> Value {
    json!({"id": "everything", "name": "Every field", "enabled": false,
        "description": "An HTTP server with every field set",
        "timeout": 12000, "callTimeout": 45000,
        "tools": {"include": ["find", "read"], "exclude": ["delete"]},
        "inputs": [{"id": "tenant", "description": "Your tenant", "default": "acme"},
                   {"id": "pat", "description": "A token", "password": true}],
        "era": "legacy",
        "transport": {"type": "http", "url": "http://127.0.0.1:9/mcp",
            "bearerTokenEnv": "EVERY_TOKEN",
            "headers": [{"key": "X-Api-Key", "value": "hdr-SECRET-1"}],
            "envHeaders": [{"key": "X-Tenant", "value": "TENANT_VAR"}],
            "oauth": {"clientId": "every-client", "clientSecretEnv": "EVERY_SECRET",
                "scopes": ["read", "write"], "clientMetadataUrl": "https://example.com/client.json",
                "redirectPort": 8765, "grant": "client_credentials"}}})
}

fn everything_stdio() -> Value {
    json!({"id": "every-stdio", "name": "Every stdio field", "enabled": false,
        "description": "A stdio server with every field set", "era": "modern",
        "tools": {"include": []},
        "transport": {"type": "stdio", "command": "/usr/bin/env",
            "args": ["--", "an arg with spaces", ""],
            "env": [{"key": "A_SECRET", "value": "env-SECRET-2"}],
            "envVars": ["HOME", "PATH"], "cwd": "/tmp"}})
}

#[test]
fn the_form_saves_every_field_unchanged_and_shows_each_problem_at_its_field() {
    let env = Env::new();
    write_store(&env, json!([everything_http(), everything_stdio()]));
    let before = store(&env);
    let ui = UiServer::start(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    for id in ["everything", "every-stdio"] {
        page.wait_for(
            &format!("{0} && {0}.dataset.status === 'disabled'", item(id)),
            "the stored server",
        );
        page.click(&format!("#servers li.server[data-id=\"{id}\"] .edit"));
        page.wait_for(
            "!document.querySelector('#form-view').hidden",
            "the edit form",
        );
        page.click("#save");
        page.wait_for(
            "!document.querySelector('#list-view').hidden",
            "the list after an unchanged save",
        );
        assert_eq!(
            stored(&store(&env), id),
            stored(&before, id),
            "saving {id} unchanged changed it"
        );
    }
    // The OAuth fields are in the form.
    page.click("#servers li.server[data-id=\"everything\"] .edit");
    page.wait_for(
        "!document.querySelector('#oauth-fields').hidden",
        "the OAuth fields",
    );
    assert_eq!(
        page.eval("document.querySelector('#f-oauth-client').value"),
        "every-client"
    );
    assert_eq!(
        page.eval("document.querySelector('#f-oauth-grant').value"),
        "client_credentials"
    );
    assert_eq!(
        page.eval("document.querySelector('#f-oauth-scopes').value"),
        "read write"
    );
    page.type_into("#f-oauth-scopes", "read");
    page.click("#save");
    page.wait_for("!document.querySelector('#list-view').hidden", "the list");
    assert_eq!(
        stored(&store(&env), "everything").unwrap()["transport"]["oauth"]["scopes"],
        json!(["read"])
    );

    // An empty form: each problem once, under its input, nothing saved.
    let count = store(&env)["servers"].as_array().unwrap().len();
    page.click("#add");
    page.wait_for(
        "!document.querySelector('#form-view').hidden",
        "the add form",
    );
    page.click("#save");
    page.wait_for(
        "document.querySelector('#form-status').dataset.state === 'error'",
        "the problems",
    );
    let problems = page.eval(
        "[...document.querySelectorAll('#server-form .field-error')].map((e) => \
         [e.dataset.code, e.previousElementSibling ? e.previousElementSibling.querySelector('input') ? \
         e.previousElementSibling.querySelector('input').id : e.previousElementSibling.id : ''])",
    );
    let problems = problems.as_array().unwrap();
    assert!(
        problems.contains(&json!(["missing_id", "f-id"])),
        "{problems:?}"
    );
    assert!(
        problems.contains(&json!(["missing_command", "f-command"])),
        "{problems:?}"
    );
    assert_eq!(
        page.eval("document.querySelector('#f-id').getAttribute('aria-invalid')"),
        "true"
    );
    // Said once: the sticky bar counts them and does not repeat them.
    let text = page.eval("document.body.innerText");
    let text = text.as_str().unwrap();
    assert_eq!(
        text.matches("give the server a nonempty id").count(),
        1,
        "{text}"
    );
    assert!(
        !text.contains("transport.command:"),
        "internal names: {text}"
    );
    let status = page.eval("document.querySelector('#form-status').innerText");
    assert!(
        status.as_str().unwrap().contains("shown at their fields"),
        "{status}"
    );
    page.screenshot(&shot("mcpctl-ui-problems.png"));
    // An id with a space: refused at the id, as the store refuses it.
    page.type_into("#f-id", "my server");
    page.type_into("#f-command", support::MCPCTL);
    page.click("#save");
    page.wait_for(
        "document.querySelector('#f-id').parentElement.nextElementSibling && \
         document.querySelector('#f-id').parentElement.nextElementSibling.dataset.code === 'invalid_id'",
        "invalid_id at the id",
    );
    assert_eq!(
        page.eval("document.querySelectorAll('#server-form .field-error').length"),
        1
    );
    assert_eq!(store(&env)["servers"].as_array().unwrap().len(), count);
}

#[test]
fn tools_are_collapsed_and_can_be_tried_and_resources_and_prompts_are_shown() {
    let env = Env::new();
    // No file at all: the built-in demo server, as `mcpctl servers` shows.
    let ui = UiServer::start(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    page.wait_for(
        &format!("{0} && {0}.dataset.status === 'ready'", item("demo")),
        "the built-in demo, ready",
    );
    assert_eq!(
        page.eval(&format!("{}.dataset.source", item("demo"))),
        "built-in"
    );
    let tools = format!("{}.querySelector('details.tools')", item("demo"));
    assert_eq!(page.eval(&format!("{tools}.open")), false);
    assert_eq!(
        page.eval(&format!("{tools}.querySelector('summary').innerText")),
        "5 tools"
    );
    // Collapsed, the five tools take one line, not a list.
    assert!(
        page.eval(&format!("{tools}.getBoundingClientRect().height"))
            .as_f64()
            .unwrap()
            < 40.0,
        "the collapsed tools are tall"
    );
    page.click("#servers li.server[data-id=\"demo\"] details.tools > summary");
    page.click("#servers li.server[data-id=\"demo\"] li[data-tool=\"echo\"] summary");
    let echo = "#servers li.server[data-id=\"demo\"] li[data-tool=\"echo\"]";
    page.wait_for(
        &format!("document.querySelector('{echo} tr[data-param=\"text\"]') !== null"),
        "echo's parameters",
    );
    let row = page.eval(&format!(
        "document.querySelector('{echo} tr[data-param=\"text\"]').innerText"
    ));
    assert!(row.as_str().unwrap().contains("string"), "{row}");
    page.type_into(
        &format!("{echo} form.try [data-param=\"text\"]"),
        "hello from the page",
    );
    page.click(&format!("{echo} form.try .run"));
    page.wait_for(
        &format!(
            "document.querySelector('{echo} .try-result').dataset.state === 'ok' && \
             document.querySelector('{echo} .try-result').innerText.includes('hello from the page')"
        ),
        "echo's answer",
    );
    // An image result is shown as an image.
    let image = "#servers li.server[data-id=\"demo\"] li[data-tool=\"tiny_image\"]";
    page.click(&format!("{image} summary"));
    page.click(&format!("{image} form.try .run"));
    page.wait_for(
        &format!(
            "(() => {{ const i = document.querySelector('{image} .try-result img.image-block'); \
             return i && i.complete && i.naturalWidth > 0; }})()"
        ),
        "the image, decoded",
    );
    // A live update keeps the opened panels open.
    let generation = page.eval(&format!("Number({}.dataset.generation)", item("demo")));
    let retry = ui.call("POST", "/api/servers/demo/retry", None);
    assert_eq!(retry.status, 200);
    page.wait_for(
        &format!(
            "{0}.dataset.status === 'ready' && Number({0}.dataset.generation) > {generation} \
             && {tools} !== null",
            item("demo")
        ),
        "demo connected again",
    );
    assert_eq!(page.eval(&format!("{tools}.open")), true);

    // Resources and prompts.
    page.click("#servers li.server[data-id=\"demo\"] details.offers > summary");
    let about = "#servers li.server[data-id=\"demo\"] li[data-uri=\"demo://about\"]";
    page.wait_for(
        &format!("document.querySelector('{about}') !== null"),
        "the resources",
    );
    page.click(&format!("{about} .read"));
    page.wait_for(
        &format!("document.querySelector('{about} .read-result').innerText.includes('echo')"),
        "the resource's text",
    );
    let prompt = page.eval(
        "document.querySelector('#servers li.server[data-id=\"demo\"] .prompts > li').innerText",
    );
    let prompt = prompt.as_str().unwrap();
    assert!(
        prompt.contains("tool") && prompt.contains("required"),
        "{prompt}"
    );
    page.screenshot_full(&shot("mcpctl-ui-tools.png"));
}

#[test]
fn a_person_logs_in_from_the_page_and_the_server_becomes_ready() {
    let env = Env::new();
    let fake = Fake::start();
    write_store(
        &env,
        json!([{"id": "tracker", "name": "Tracker", "enabled": true,
            "transport": {"type": "http", "url": format!("{}/mcp", fake.base),
                "bearerTokenEnv": "", "headers": [], "envHeaders": [],
                "oauth": {"scopes": ["tools"]}}}]),
    );
    let ui = UiServer::start(&env);
    let mut page = Browser::launch();
    page.goto(&ui.url());
    page.wait_for(
        &format!(
            "{0} && {0}.dataset.status === 'error' && {0}.querySelector('.login') !== null",
            item("tracker")
        ),
        "the server waiting for a login, with a Log in button",
    );
    let code = page.eval(&format!(
        "{}.querySelector('.code').innerText",
        item("tracker")
    ));
    assert!(
        code.as_str().unwrap().starts_with("auth_required"),
        "{code}"
    );
    // The page opens the authorization URL in a new tab; the test is that
    // tab (it follows the authorization server's redirect to mcpctl).
    page.eval(
        "window.__opened = []; window.open = (url) => { window.__opened.push(url); return null; }",
    );
    page.click("#servers li.server[data-id=\"tracker\"] .login");
    page.wait_for(
        "window.__opened.length === 1",
        "the authorization URL opened",
    );
    let url = page.eval("window.__opened[0]");
    let url = url.as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/authorize?", fake.base)),
        "{url}"
    );
    page.wait_for(
        &format!(
            "{}.querySelector('.login-state[data-state=\"waiting\"]') !== null",
            item("tracker")
        ),
        "the page waiting for the browser",
    );
    let (status, location) = browser_get(url);
    assert_eq!(status, 302);
    let (status, _) = browser_get(&location.expect("a redirect to mcpctl"));
    assert_eq!(status, 200);
    page.wait_for(
        &format!("{0}.dataset.status === 'ready'", item("tracker")),
        "the server ready with the new tokens",
    );
    assert!(
        page.eval(&format!("{}.innerText", item("tracker")))
            .as_str()
            .unwrap()
            .contains("Logged in")
    );
    assert!(!page.contents().contains(TOKEN), "the page shows the token");
    assert!(fake.state.lock().unwrap().authorized_mcp_requests > 0);
    // The CLI uses the same tokens: one token store for both.
    let run = env.run(&["servers", "--json"]);
    assert!(run.stdout.contains("\"ready\""), "{}", run.stdout);
    assert!(!run.stdout.contains(TOKEN));
}

/// The elements wider than the viewport (outside scrolling boxes), as
/// `tag.class: right edge`.
const OVERFLOW: &str = "(() => { const w = document.documentElement.clientWidth; const out = []; \
  for (const e of document.querySelectorAll('body *')) { \
    const r = e.getBoundingClientRect(); if (r.width === 0 || r.height === 0) continue; \
    let clipped = false; for (let p = e.parentElement; p; p = p.parentElement) { \
      const s = getComputedStyle(p); if (['auto','scroll','hidden'].includes(s.overflowX)) { clipped = true; break; } } \
    if (!clipped && (r.right > w + 0.5 || r.left < -0.5)) out.push(`${e.tagName}.${e.className}: ${Math.round(r.right)}`); } \
  if (document.documentElement.scrollWidth > w) out.push(`page scrollWidth ${document.documentElement.scrollWidth} > ${w}`); \
  return out; })()";

/// The text elements whose colour contrast against their background is
/// below WCAG AA (4.5:1, 3:1 for large text).
const CONTRAST: &str = "(() => { \
  const rgb = (c) => { const m = c.match(/[\\d.]+/g).map(Number); return m.length > 3 ? m : [...m, 1]; }; \
  const lum = ([r,g,b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); }; \
    return 0.2126*f(r) + 0.7152*f(g) + 0.0722*f(b); }; \
  const bg = (e) => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c[3] > 0.5) return c; } return [255,255,255,1]; }; \
  const out = []; \
  for (const e of document.querySelectorAll('body *')) { \
    if (![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue; \
    const r = e.getBoundingClientRect(); if (r.width === 0 || r.height === 0) continue; \
    const s = getComputedStyle(e); if (s.visibility === 'hidden') continue; \
    const a = lum(rgb(s.color)), b = lum(bg(e)); const ratio = (Math.max(a,b)+0.05)/(Math.min(a,b)+0.05); \
    const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.66 && Number(s.fontWeight) >= 700); \
    if (ratio < (large ? 3 : 4.5)) out.push(`${e.tagName}.${e.className} '${e.textContent.trim().slice(0, 30)}': ${ratio.toFixed(2)}`); } \
  return out; })()";

#[test]
fn the_page_fits_a_desktop_and_a_phone_and_works_from_the_keyboard() {
    let env = Env::new();
    write_store(
        &env,
        json!([demo_server("a-server-with-a-rather-long-identifier-for-phones"),
               {"id": "broken", "name": "A broken server with a long display name", "enabled": true,
                "description": "It points at a command that is not there, so that an error shows.",
                "transport": {"type": "stdio", "command": "/nonexistent/mcp-server-for-the-layout-test",
                  "args": [], "env": [], "envVars": [], "cwd": ""}}]),
    );
    let ui = UiServer::start(&env);
    let mut page = Browser::launch();
    for (width, height, mobile, name) in [
        (1280, 900, false, "mcpctl-ui-desktop.png"),
        (390, 844, true, "mcpctl-ui-phone.png"),
    ] {
        page.viewport(width, height, mobile);
        page.goto(&ui.url());
        page.wait_for(
            &format!(
                "{0} && {0}.dataset.status === 'ready' && {1} && {1}.dataset.status === 'error'",
                item("a-server-with-a-rather-long-identifier-for-phones"),
                item("broken")
            ),
            "both servers settled",
        );
        page.click(
            "#servers li.server[data-id=\"a-server-with-a-rather-long-identifier-for-phones\"] details.tools > summary",
        );
        page.wait_for("document.querySelector('.tool-list') !== null", "the tools");
        assert_eq!(page.eval(OVERFLOW), json!([]), "overflow at {width} px");
        // The status pill is one line, the switch inside its card.
        for id in [
            "a-server-with-a-rather-long-identifier-for-phones",
            "broken",
        ] {
            let fits = page.eval(&format!(
                "(() => {{ const i = {}; const p = i.querySelector('.status'); const s = i.querySelector('.switch'); \
                 const c = i.getBoundingClientRect(); \
                 return [p.getClientRects().length, p.getBoundingClientRect().height < 30, \
                   s.getBoundingClientRect().right <= c.right]; }})()",
                item(id)
            ));
            assert_eq!(fits, json!([1, true, true]), "{id} at {width} px");
        }
        assert_eq!(page.eval(CONTRAST), json!([]), "contrast at {width} px");
        page.screenshot(&shot(name));
        // The form too.
        page.click("#add");
        page.wait_for("!document.querySelector('#form-view').hidden", "the form");
        assert_eq!(
            page.eval(OVERFLOW),
            json!([]),
            "the form's overflow at {width} px"
        );
        page.click("#back");
    }

    // From the keyboard: Tab reaches Add first, then each server's
    // controls, with a visible focus ring; Enter opens the tools.
    page.viewport(1280, 900, false);
    page.goto(&ui.url());
    page.wait_for(
        &format!(
            "{0} && {0}.dataset.status === 'ready'",
            item("a-server-with-a-rather-long-identifier-for-phones")
        ),
        "ready",
    );
    page.tab(false);
    assert_eq!(page.eval("document.activeElement.id"), "add");
    assert_ne!(
        page.eval("getComputedStyle(document.activeElement).outlineStyle"),
        "none",
        "no visible focus"
    );
    let mut reached = Vec::new();
    for _ in 0..6 {
        page.tab(false);
        reached.push(
            page.eval(
                "document.activeElement.dataset.focusKey || document.activeElement.className",
            ),
        );
    }
    let summary = "tools:a-server-with-a-rather-long-identifier-for-phones";
    assert!(reached.contains(&json!(summary)), "{reached:?}");
    while page.eval("document.activeElement.dataset.focusKey") != json!(summary) {
        page.tab(true);
    }
    page.enter();
    page.wait_for(
        "document.querySelector('.tool-list') !== null",
        "the tools, opened from the keyboard",
    );
}

// mcpctl ui: the settings page's script (Settings → Integrations → MCPs flow).
// Plain JavaScript, no build step. Live state arrives over server-sent events
// (/api/events); changes go through the JSON API with the per-launch token.
// Every text a server sent is put in the page as text (textContent), never
// as markup. What servers ask back while a Try runs (a form, a URL to visit,
// a sampling request) arrives as `asks` events and is answered through
// /api/asks/{id}; each server's log messages and resource updates arrive as
// `logs` (all kept lines) and `log` (one new line) events.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const $ = (selector, root = document) => root.querySelector(selector);
const state = {
  servers: [],
  confirming: null, // id whose Delete awaits confirmation
  editing: null,    // id being edited, or null for Add
  base: null,       // the edited config as loaded: fields the form does not show are sent back as they were
  pending: null,    // {id, generation} saved and awaiting its connection result
  notice: null,     // what the list says after a save that dropped kept secrets
  open: new Set(),  // the <details> (by key) the person opened, kept open across redraws
  tries: new Map(), // tool key -> {values, result} of the Try panels
  offers: new Map(),// server id -> its resources and prompts, once asked
  askCards: new Map(), // open question id -> its card, kept while it is open
  dismissed: 0,     // ended questions up to this id are no longer shown
  logs: new Map(),  // server id -> its kept log lines and resource updates
  subscribed: new Set(), // "id\nuri" of the resources the page follows
  updated: new Map(),    // "id\nuri" -> when the resource last changed
};

// The most log lines the page keeps per server (as the ui server does).
const LOG_LINES = 200;
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: { "x-mcpctl-token": token, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = {};
  try { data = await response.json(); } catch (_) { /* empty body */ }
  return { ok: response.ok, status: response.status, data };
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

// A <details> that stays open across redraws of the list.
function details(key, attrs, summary, fill) {
  const node = el("details", { ...attrs, "data-key": key });
  node.append(summary);
  if (state.open.has(key)) {
    node.open = true;
    fill(node);
  }
  node.addEventListener("toggle", () => {
    if (node.open) {
      state.open.add(key);
      if (node.children.length === 1) fill(node);
    } else {
      state.open.delete(key);
    }
  });
  return node;
}

// ---------------------------------------------------------------- views

function show(view) {
  $("#list-view").hidden = view !== "list";
  $("#form-view").hidden = view !== "form";
  $("#store-error").hidden = view !== "store-error";
}

function showList() {
  // Back (or a finished save) returns to the list; discovery goes on in
  // the manager and the list shows it live.
  state.pending = null;
  state.editing = null;
  show("list");
  renderList();
  listMessage(null, state.notice);
  state.notice = null;
}

function showStoreError(error, store) {
  $("#store-error-path").textContent = store;
  $("#store-error-code").textContent = error.code;
  $("#store-error-detail").textContent = error.message;
  show("store-error");
}

function statusText(server) {
  switch (server.status) {
    case "ready": {
      const protocol = server.protocol ? ` · ${server.protocol}` : "";
      return `ready${protocol}`;
    }
    case "error": return server.error ? `error · ${server.error.code}` : "error";
    default: return server.status;
  }
}

function sourceText(server) {
  const source = server.source;
  if (!source) return "";
  if (server.editable) return "your servers";
  return source.label;
}

function renderList() {
  const list = $("#servers");
  // Redraws keep the focused control focused (a live update must not
  // throw a keyboard user back to the top).
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.focusKey : null;
  // A details element's toggle event is dispatched after the click that
  // opened or closed it: a redraw in between takes the open state from
  // the page itself, or the element would be drawn again as it was.
  for (const node of list.querySelectorAll("details[data-key]")) {
    if (node.open) state.open.add(node.dataset.key);
    else state.open.delete(node.dataset.key);
  }
  list.replaceChildren();
  $("#empty").hidden = state.servers.length > 0;
  for (const server of state.servers) {
    list.append(serverItem(server));
  }
  if (focused) {
    // Without scrolling: a live update must not move the page under the
    // person's pointer.
    const again = list.querySelector(`[data-focus-key="${CSS.escape(focused)}"]`);
    if (again) again.focus({ preventScroll: true });
  }
}

function button(label, cls, key, onclick, extra = {}) {
  return el("button", { type: "button", class: cls, "data-focus-key": key, onclick, ...extra }, label);
}

function serverItem(server) {
  if (!server.id) {
    // A whole file that could not be read.
    const item = el("li", { class: "server broken-source", "data-status": "error" });
    item.append(el("div", { class: "name" }, server.source ? server.source.label : "a configuration file"),
      el("p", { class: "errline" }, server.error ? server.error.message : "cannot be read"),
      server.error ? el("p", { class: "code" }, server.error.code) : null);
    return item;
  }
  const item = el("li", {
    class: `server${server.editable ? "" : " readonly"}`, "data-id": server.id,
    "data-status": server.status, "data-source": server.source ? server.source.label : "",
    "data-generation": server.generation,
  });
  const title = el("div", { class: "title" },
    el("div", { class: "name" }, server.name || server.id),
    el("div", { class: "meta" }, `${server.id} · ${server.transport || "?"} · `,
      el("span", { class: "source", title: server.source && server.source.path ? server.source.path : "" }, sourceText(server))));
  const head = el("div", { class: "row1" }, title, el("span", { class: `status ${server.status}` }, statusText(server)));
  if (server.editable) {
    const toggle = el("input", {
      type: "checkbox", class: "enable", role: "switch", checked: server.enabled,
      "aria-label": `Enable ${server.name}`, "data-focus-key": `enable:${server.id}`,
      onchange: async (event) => {
        const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/enabled`, { enabled: event.target.checked });
        listMessage(result.ok ? null : result.data.error);
      },
    });
    head.append(el("label", { class: "switch" }, toggle, "Enabled"));
  } else {
    head.append(el("span", { class: "badge" }, "read-only"));
  }
  item.append(head);
  if (server.description) item.append(el("p", { class: "description" }, server.description));
  if (!server.editable && server.source && server.source.path) {
    item.append(el("p", { class: "from" }, `Defined in ${server.source.path}`));
  }
  if (server.status === "shadowed" && server.shadowed_by) {
    item.append(el("p", { class: "from" }, `Not used: the definition in ${server.shadowed_by.label} wins.`));
  }
  if (server.error) {
    item.append(el("p", { class: "errline" }, server.error.message));
    item.append(el("p", { class: "code" }, `${server.error.code}${server.error.config_key ? ` · ${server.error.config_key}` : ""}`));
    if (server.error.cause) item.append(el("pre", { class: "cause" }, server.error.cause));
  }
  if (server.login) item.append(loginLine(server));
  const buttons = el("div", { class: "buttons" });
  if (["error", "disconnected", "idle"].includes(server.status)) {
    buttons.append(button("Retry", "retry", `retry:${server.id}`, async () => {
      const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/retry`);
      listMessage(result.ok ? null : result.data.error);
    }));
  }
  if (needsLogin(server)) {
    buttons.append(button("Log in", "login primary", `login:${server.id}`, () => login(server)));
  }
  if (server.editable) {
    buttons.append(button("Edit", "edit", `edit:${server.id}`, () => openForm(server)));
    buttons.append(button("Delete", "delete danger", `delete:${server.id}`, () => {
      state.confirming = server.id;
      renderList();
    }));
  } else if (server.copyable) {
    buttons.append(button("Copy into my servers", "copy", `copy:${server.id}`, async () => {
      const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/copy`);
      listMessage(result.ok ? null : result.data.error,
        result.ok ? `${server.id} is now one of your servers; edit it there.` : null);
    }));
  }
  if (buttons.children.length > 0) item.append(buttons);
  if (state.confirming === server.id) {
    item.append(el("div", { class: "confirm", role: "alertdialog", "aria-label": `Delete ${server.name}?` },
      `Delete ${server.name}? Its configuration and saved secrets are removed.`,
      button("Delete", "confirm-delete danger", `confirm:${server.id}`, async () => {
        state.confirming = null;
        const result = await api("DELETE", `/api/servers/${encodeURIComponent(server.id)}`);
        listMessage(result.ok ? null : result.data.error);
      }),
      button("Cancel", "cancel-delete", `cancel:${server.id}`, () => {
        state.confirming = null;
        renderList();
      })));
  }
  if (server.catalog && server.catalog.length > 0) item.append(toolList(server));
  if (server.status === "ready") item.append(offersPanel(server));
  if (server.status === "ready" || state.logs.has(server.id)) item.append(logPanel(server));
  return item;
}

// ------------------------------------------------------------ OAuth login

function needsLogin(server) {
  if (!server.canLogin || server.status === "ready" || server.status === "disabled") return false;
  if (server.login && server.login.state === "waiting") return true;
  const code = server.error ? server.error.code : "";
  return code === "auth_required" || code === "auth_rejected"
    || !!(server.config && server.config.transport && server.config.transport.oauth);
}

function loginLine(server) {
  const login = server.login;
  if (login.state === "waiting") {
    return el("p", { class: "login-state notice", "data-state": "waiting" },
      "Waiting for the login to finish in your browser. ",
      el("a", { href: login.authorizationUrl, target: "_blank", rel: "noopener noreferrer" }, "Open the login page again"));
  }
  if (login.state === "failed") {
    return el("p", { class: "login-state errline", "data-state": "failed" }, `The login failed: ${login.message}`);
  }
  return el("p", { class: "login-state ok", "data-state": "done" }, "Logged in; the tokens are stored for every mcpctl command.");
}

async function login(server) {
  const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/login`);
  if (!result.ok) {
    listMessage(result.data.error || { code: `http_${result.status}`, message: "the login did not start" });
    return;
  }
  listMessage(null);
  if (result.data.authorizationUrl) {
    // The authorization server's page, in a new tab; the loopback
    // listener takes the browser's return and the status updates live.
    window.open(result.data.authorizationUrl, "_blank", "noopener");
  }
}

// ------------------------------------------------------------ tools

function toolList(server) {
  const count = server.catalog.length;
  const summary = el("summary", { "data-focus-key": `tools:${server.id}` }, `${count} tool${count === 1 ? "" : "s"}`);
  return details(`tools:${server.id}`, { class: "tools", "aria-label": `Tools of ${server.name}` }, summary, (node) => {
    const list = el("ul", { class: "tool-list" });
    for (const tool of server.catalog) list.append(toolItem(server, tool));
    node.append(list);
  });
}

function toolItem(server, tool) {
  const key = `tool:${server.id}:${tool.name}`;
  const summary = el("summary", { "data-focus-key": key },
    el("span", { class: "tool" }, tool.name),
    tool.description ? el("span", { class: "tool-desc" }, ` — ${firstLine(tool.description)}`) : null);
  return el("li", { "data-tool": tool.name }, details(key, { class: "tool-details" }, summary, (node) => {
    if (tool.description && tool.description !== firstLine(tool.description)) {
      node.append(el("p", { class: "tool-full" }, tool.description));
    }
    node.append(parameterTable(tool.inputSchema || {}));
    node.append(tryPanel(server, tool));
  }));
}

function firstLine(text) {
  const line = String(text).split("\n")[0];
  return line.length > 160 ? `${line.slice(0, 157)}…` : line;
}

function properties(schema) {
  const props = schema && typeof schema.properties === "object" && schema.properties ? schema.properties : {};
  const required = Array.isArray(schema && schema.required) ? schema.required : [];
  return Object.entries(props).map(([name, prop]) => ({ name, prop: prop || {}, required: required.includes(name) }));
}

function typeOf(prop) {
  if (Array.isArray(prop.enum)) return "enum";
  const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
  return type || "any";
}

function parameterTable(schema) {
  const params = properties(schema);
  if (params.length === 0) return el("p", { class: "muted params-none" }, "No parameters.");
  const table = el("table", { class: "params" },
    el("thead", {}, el("tr", {}, el("th", {}, "Parameter"), el("th", {}, "Type"), el("th", {}, "Description"))));
  const body = el("tbody");
  for (const { name, prop, required } of params) {
    const type = typeOf(prop) === "enum" ? `one of ${prop.enum.map((v) => JSON.stringify(v)).join(", ")}` : typeOf(prop);
    body.append(el("tr", { "data-param": name },
      el("td", {}, el("code", {}, name), required ? el("span", { class: "required" }, " required") : null),
      el("td", {}, type),
      el("td", {}, prop.description || "")));
  }
  table.append(body);
  return el("div", { class: "table-wrap" }, table);
}

// The Try panel: a form generated from the input schema; the call runs
// with the full-access preset (the person clicking decides).
function tryPanel(server, tool) {
  const key = `${server.id}:${tool.name}`;
  const saved = state.tries.get(key) || { values: {}, result: null };
  state.tries.set(key, saved);
  const form = el("form", { class: "try", novalidate: true, "aria-label": `Try ${tool.name}`, "data-try-key": key });
  const params = properties(tool.inputSchema || {});
  for (const { name, prop, required } of params) {
    const id = `try-${cssId(key)}-${cssId(name)}`;
    const type = typeOf(prop);
    let input;
    if (type === "boolean") {
      input = el("input", { id, type: "checkbox", "data-param": name, checked: saved.values[name] === true });
    } else if (type === "enum") {
      input = el("select", { id, "data-param": name },
        el("option", { value: "" }, required ? "(choose)" : "(leave out)"),
        ...prop.enum.map((v) => el("option", { value: JSON.stringify(v), selected: saved.values[name] === JSON.stringify(v) }, String(v))));
    } else if (type === "object" || type === "array" || type === "any") {
      input = el("textarea", { id, "data-param": name, rows: 3, placeholder: "JSON" });
      input.value = saved.values[name] || "";
    } else {
      input = el("input", { id, "data-param": name, inputmode: type === "number" || type === "integer" ? "decimal" : null });
      input.value = saved.values[name] || "";
    }
    input.addEventListener("input", () => {
      saved.values[name] = input.type === "checkbox" ? input.checked : input.value;
    });
    form.append(el("div", { class: "field" },
      el("label", { for: id }, name, required ? el("span", { class: "required" }, " (required)") : null), input));
  }
  const output = el("div", { class: "try-result", "aria-live": "polite" });
  if (saved.running) output.replaceChildren(el("p", { class: "muted" }, "Running…"));
  else if (saved.result) renderResult(output, saved.result);
  form.append(el("div", { class: "buttons" }, el("button", { type: "submit", class: "run primary" }, `Run ${tool.name}`)));
  form.append(output);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const args = {};
    for (const { name, prop } of params) {
      const input = form.querySelector(`[data-param="${CSS.escape(name)}"]`);
      const type = typeOf(prop);
      if (type === "boolean") {
        if (input.checked) args[name] = true;
        continue;
      }
      const text = input.value;
      if (text === "") continue;
      try {
        if (type === "enum" || type === "object" || type === "array" || type === "any") args[name] = JSON.parse(text);
        else if (type === "number" || type === "integer") args[name] = Number(text);
        else args[name] = text;
      } catch (_) {
        saved.result = { error: { code: "invalid_json", message: `${name}: not valid JSON` } };
        renderResult(output, saved.result);
        return;
      }
    }
    output.replaceChildren(el("p", { class: "muted" }, "Running…"));
    saved.running = true;
    const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/call`, { tool: tool.name, arguments: args });
    saved.running = false;
    saved.result = result.data;
    // The list may have been drawn again while the call ran (a live
    // update): the result goes where the panel is now.
    const shown = document.querySelector(`form.try[data-try-key="${CSS.escape(key)}"] .try-result`) || output;
    renderResult(shown, saved.result);
  });
  return form;
}

function cssId(text) {
  return String(text).replace(/[^A-Za-z0-9_-]/g, "_");
}

function renderResult(output, result) {
  output.replaceChildren();
  if (result.error) {
    output.dataset.state = "error";
    output.append(el("p", { class: "errline" }, result.error.message), el("p", { class: "code" }, result.error.code));
    return;
  }
  output.dataset.state = result.isError ? "tool-error" : "ok";
  if (result.isError) output.append(el("p", { class: "errline" }, "The tool reported an error:"));
  for (const block of result.content || []) output.append(contentBlock(block));
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    output.append(el("pre", { class: "structured" }, JSON.stringify(result.structuredContent, null, 2)));
  }
}

function contentBlock(block) {
  if (block.type === "text") return el("pre", { class: "text-block" }, block.text);
  if (block.type === "image" && /^image\/(png|jpeg|gif|webp)$/.test(block.mimeType || "")) {
    return el("img", { class: "image-block", alt: "an image the tool returned", src: `data:${block.mimeType};base64,${block.data}` });
  }
  return el("pre", { class: "other-block" }, JSON.stringify(block, null, 2));
}

// ------------------------------------------------- resources and prompts

function offersPanel(server) {
  const summary = el("summary", { "data-focus-key": `offers:${server.id}` }, "Resources and prompts");
  return details(`offers:${server.id}`, { class: "offers" }, summary, async (node) => {
    const box = el("div", { class: "offers-body" }, el("p", { class: "muted" }, "Loading…"));
    node.append(box);
    let offers = state.offers.get(server.id);
    if (!offers) {
      const result = await api("GET", `/api/servers/${encodeURIComponent(server.id)}/offers`);
      offers = result.ok ? result.data : { error: result.data.error };
      if (result.ok) state.offers.set(server.id, offers);
    }
    box.replaceChildren();
    if (offers.error) {
      box.append(el("p", { class: "errline" }, offers.error.message));
      return;
    }
    const resources = el("ul", { class: "resources", "aria-label": `Resources of ${server.name}` });
    for (const uri of offers.subscribed || []) state.subscribed.add(`${server.id}\n${uri}`);
    for (const resource of offers.resources || []) {
      const out = el("div", { class: "read-result" });
      resources.append(el("li", { "data-uri": resource.uri },
        el("code", {}, resource.uri), resource.title || resource.name ? ` ${resource.title || resource.name}` : "",
        resource.mimeType ? el("span", { class: "muted" }, ` (${resource.mimeType})`) : null, " ",
        offers.subscribe ? subscribeButton(server, resource.uri) : null, " ",
        el("span", { class: "updated" }, state.updated.get(`${server.id}\n${resource.uri}`) || ""), " ",
        button("Read", "read small", `read:${server.id}:${resource.uri}`, async () => {
          const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/read`, { uri: resource.uri });
          out.replaceChildren();
          if (!result.ok || result.data.error) {
            out.append(el("p", { class: "errline" }, (result.data.error || {}).message || "the read failed"));
            return;
          }
          for (const contents of result.data.contents || []) {
            if (typeof contents.text === "string") out.append(el("pre", { class: "text-block" }, contents.text));
            else if (contents.blob && /^image\/(png|jpeg|gif|webp)$/.test(contents.mimeType || "")) {
              out.append(el("img", { class: "image-block", alt: resource.uri, src: `data:${contents.mimeType};base64,${contents.blob}` }));
            } else out.append(el("p", { class: "muted" }, `${contents.mimeType || "binary"} contents`));
          }
        }), out));
    }
    box.append(el("h3", {}, "Resources"), (offers.resources || []).length ? resources : el("p", { class: "muted" }, "None."));
    if ((offers.templates || []).length) {
      const templates = el("ul", { class: "templates" });
      for (const t of offers.templates) templates.append(el("li", {}, el("code", {}, t.uriTemplate), t.description ? ` — ${t.description}` : ""));
      box.append(el("h3", {}, "Resource templates"), templates);
    }
    const prompts = el("ul", { class: "prompts", "aria-label": `Prompts of ${server.name}` });
    for (const prompt of offers.prompts || []) {
      const args = (prompt.arguments || []).map((a) => el("li", {}, el("code", {}, a.name), a.required ? el("span", { class: "required" }, " required") : null,
        a.description ? ` — ${a.description}` : ""));
      prompts.append(el("li", { "data-prompt": prompt.name }, el("strong", {}, prompt.name), prompt.description ? ` — ${prompt.description}` : "",
        args.length ? el("ul", { class: "prompt-args" }, ...args) : el("span", { class: "muted" }, " (no arguments)")));
    }
    box.append(el("h3", {}, "Prompts"), (offers.prompts || []).length ? prompts : el("p", { class: "muted" }, "None."));
  });
}

function listMessage(error, notice) {
  const message = $("#list-message");
  message.hidden = !error && !notice;
  message.className = error ? "message" : "message notice";
  message.replaceChildren();
  if (error) {
    message.append(el("span", {}, error.message), el("span", { class: "code" }, ` ${error.code}`));
  } else if (notice) {
    message.textContent = notice;
  }
}

// ------------------------------------------------- project trust

// The project's servers that wait for approval. Approving sends back the
// definition's hash as listed, so what is approved is what was shown.
async function loadTrust() {
  const result = await api("GET", "/api/trust");
  const box = $("#trust");
  if (!result.ok) {
    box.hidden = false;
    trustMessage(result.data.error || { code: `http_${result.status}`, message: "cannot list project servers" });
    return;
  }
  $("#trust-project").textContent = result.data.project || "";
  const list = $("#untrusted");
  list.replaceChildren();
  for (const server of result.data.servers) list.append(untrustedItem(server));
  box.hidden = result.data.servers.length === 0 && $("#trust-message").hidden;
  document.body.dataset.trustLoaded = "true";
}

function untrustedItem(server) {
  const item = el("li", { class: "server untrusted", "data-id": server.id, "data-status": "untrusted" });
  item.append(el("div", { class: "row1" },
    el("div", { class: "title" },
      el("div", { class: "name" }, server.name),
      el("div", { class: "meta" }, `${server.id} · ${server.sourceFile || ""}`)),
    el("span", { class: "status untrusted" }, "untrusted")));
  if (server.command !== null) item.append(el("p", { class: "command" }, `runs: ${server.command}`));
  if (server.reads.length > 0) {
    const what = server.command !== null ? "receives" : "sends";
    item.append(el("p", { class: "command" }, `${what} your variables: ${server.reads.map((n) => `$${n}`).join(", ")}`));
  }
  item.append(el("div", { class: "buttons" },
    el("button", { type: "button", class: "approve primary", onclick: async () => {
      const result = await api("POST", `/api/trust/${encodeURIComponent(server.id)}`, { hash: server.hash });
      trustMessage(result.ok ? null : result.data.error,
        result.ok ? `${server.id} is approved; mcpctl starts it from now on.` : null);
      await loadTrust();
    } }, "Approve"),
    server.approveCommand ? el("span", { class: "muted" }, "or run ", el("code", {}, server.approveCommand)) : null));
  return item;
}

function trustMessage(error, notice) {
  const message = $("#trust-message");
  message.hidden = !error && !notice;
  message.className = error ? "message" : "message notice";
  message.textContent = error ? `${error.message} (${error.code})` : (notice || "");
}

// ---------------------------------------------------------------- the form

function addRow(container, { key = "", value = "", saved = false, single = false, keyHint = "", valueHint = "" } = {}) {
  const row = el("div", { class: "kv" });
  if (single) {
    row.append(el("input", { class: "value", value, placeholder: valueHint, "aria-label": valueHint }));
  } else {
    row.dataset.saved = saved ? "true" : "false";
    row.append(el("input", { class: "key", value: key, placeholder: keyHint, "aria-label": keyHint }));
    const secret = container.dataset.secret === "true";
    row.append(el("input", {
      class: "value", type: secret ? "password" : "text", value: secret ? "" : value,
      placeholder: saved ? "saved (leave empty to keep)" : valueHint, "aria-label": valueHint,
    }));
    if (saved) row.append(el("span", { class: "saved-badge" }, "saved"));
  }
  row.append(el("button", { type: "button", class: "remove small", "aria-label": "Remove row", onclick: () => row.remove() }, "Remove"));
  container.append(row);
  return row;
}

const rowKinds = {
  args: { single: true, valueHint: "argument" },
  env: { keyHint: "NAME", valueHint: "value" },
  envvars: { single: true, valueHint: "VARIABLE_NAME" },
  headers: { keyHint: "Header-Name", valueHint: "value" },
  envheaders: { keyHint: "Header-Name", valueHint: "VARIABLE_NAME" },
};

function setType(type) {
  $("#f-type-stdio").checked = type === "stdio";
  $("#f-type-http").checked = type === "http";
  $("#f-type-sse").checked = type === "sse";
  $("#stdio-fields").hidden = type !== "stdio";
  $("#http-fields").hidden = type === "stdio";
  $("#oauth-fields").hidden = type === "stdio";
}

function setGrant() {
  const jwt = $("#f-oauth-grant").value === "jwt_bearer";
  for (const field of document.querySelectorAll("#oauth-fields .jwt")) field.hidden = !jwt;
}

function openForm(server) {
  const config = server ? server.config : null;
  const t = config ? config.transport : { type: "stdio" };
  const oauth = t.oauth || {};
  state.editing = server ? server.id : null;
  state.base = config ? JSON.parse(JSON.stringify(config)) : null;
  state.pending = null;
  $("#server-form").reset();
  clearProblems();
  $("#form-title").textContent = server ? `Edit ${server.name}` : "Add MCP server";
  $("#f-id").value = config ? config.id : "";
  $("#f-id").readOnly = !!server;
  $("#f-name").value = config ? config.name : "";
  $("#f-description").value = (config && config.description) || "";
  $("#f-enabled").checked = config ? config.enabled : true;
  $("#f-command").value = t.command || "";
  $("#f-cwd").value = t.cwd || "";
  $("#f-url").value = t.url || "";
  $("#f-bearer").value = t.bearerTokenEnv || "";
  $("#f-oauth-grant").value = t.oauth ? (oauth.grant || "authorization_code") : "";
  $("#f-oauth-client").value = oauth.clientId || "";
  $("#f-oauth-secret").value = oauth.clientSecretEnv || "";
  $("#f-oauth-scopes").value = (oauth.scopes || []).join(" ");
  $("#f-oauth-port").value = oauth.redirectPort === undefined ? "" : String(oauth.redirectPort);
  $("#f-oauth-assertion-file").value = oauth.assertionFile || "";
  $("#f-oauth-assertion-env").value = oauth.assertionEnv || "";
  $("#f-timeout").value = config && config.timeout !== undefined ? String(config.timeout) : "";
  $("#f-call-timeout").value = config && config.callTimeout !== undefined ? String(config.callTimeout) : "";
  $("#f-era").value = (config && config.era) || "auto";
  $("#f-include").value = config && config.tools && config.tools.include ? config.tools.include.join(", ") : "";
  $("#f-exclude").value = config && config.tools && config.tools.exclude ? config.tools.exclude.join(", ") : "";
  for (const id of Object.keys(rowKinds)) $(`#${id}`).replaceChildren();
  for (const arg of t.args || []) addRow($("#args"), { ...rowKinds.args, value: arg });
  for (const row of t.env || []) addRow($("#env"), { ...rowKinds.env, key: row.key, saved: row.saved });
  for (const name of t.envVars || []) addRow($("#envvars"), { ...rowKinds.envvars, value: name });
  for (const row of t.headers || []) addRow($("#headers"), { ...rowKinds.headers, key: row.key, saved: row.saved });
  for (const row of t.envHeaders || []) addRow($("#envheaders"), { ...rowKinds.envheaders, key: row.key, value: row.value });
  setType(["stdio", "http", "sse"].includes(t.type) ? t.type : "stdio");
  setGrant();
  formStatus(null);
  show("form");
  window.scrollTo(0, 0);
  $("#f-id").readOnly ? $("#f-name").focus() : $("#f-id").focus();
}

// The rows sent, each with the element it came from, so that a problem
// with `transport.env[1].key` is shown at that row.
function readRows(id) {
  return [...$(`#${id}`).children].map((row) => ({
    row,
    key: row.querySelector(".key") ? row.querySelector(".key").value.trim() : "",
    value: row.querySelector(".value").value,
    saved: row.dataset.saved === "true",
  }));
}

function names(text) {
  return text.split(",").map((s) => s.trim()).filter(Boolean);
}

// A number field: the number, or the text itself so that the server's
// validation names the problem (never a silent drop).
function millis(text) {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  return /^\d+$/.test(trimmed) ? Number(trimmed) : trimmed;
}

// The config in the store's shape, starting from the loaded one: every
// field the form does not show (inputs, and anything newer) goes back
// exactly as it came.
function readForm() {
  const rowsSent = {};
  const keyed = (id) => {
    const rows = readRows(id).filter((r) => r.key);
    rowsSent[id] = rows.map((r) => r.row);
    return rows;
  };
  const single = (id) => {
    const rows = readRows(id).filter((r) => r.value.trim() !== "" || id === "args");
    rowsSent[id] = rows.map((r) => r.row);
    return rows;
  };
  const base = state.base ? JSON.parse(JSON.stringify(state.base)) : {};
  const type = $("#f-type-stdio").checked ? "stdio" : ($("#f-type-sse").checked ? "sse" : "http");
  const baseTransport = base.transport && base.transport.type === type ? base.transport : {};
  let transport;
  if (type === "stdio") {
    transport = {
      ...baseTransport,
      type,
      command: $("#f-command").value.trim(),
      args: single("args").map((r) => r.value),
      env: keyed("env").map((r) => (r.saved && r.value === "" ? { key: r.key, value: "", saved: true } : { key: r.key, value: r.value })),
      envVars: single("envvars").map((r) => r.value.trim()),
      cwd: $("#f-cwd").value.trim(),
    };
  } else {
    transport = {
      ...baseTransport,
      type,
      url: $("#f-url").value.trim(),
      bearerTokenEnv: $("#f-bearer").value.trim(),
      headers: keyed("headers").map((r) => (r.saved && r.value === "" ? { key: r.key, value: "", saved: true } : { key: r.key, value: r.value })),
      envHeaders: keyed("envheaders").map((r) => ({ key: r.key, value: r.value.trim() })),
    };
    const grant = $("#f-oauth-grant").value;
    if (grant === "") {
      delete transport.oauth;
    } else {
      const oauth = { ...(baseTransport.oauth || {}) };
      const set = (field, value) => { if (value === "" || value === undefined) delete oauth[field]; else oauth[field] = value; };
      set("clientId", $("#f-oauth-client").value.trim());
      set("clientSecretEnv", $("#f-oauth-secret").value.trim());
      const scopes = $("#f-oauth-scopes").value.split(/\s+/).filter(Boolean);
      if (scopes.length) oauth.scopes = scopes; else delete oauth.scopes;
      set("redirectPort", millis($("#f-oauth-port").value));
      if (grant === "authorization_code") delete oauth.grant; else oauth.grant = grant;
      set("assertionFile", grant === "jwt_bearer" ? $("#f-oauth-assertion-file").value.trim() : "");
      set("assertionEnv", grant === "jwt_bearer" ? $("#f-oauth-assertion-env").value.trim() : "");
      transport.oauth = oauth;
    }
  }
  const config = { ...base, id: $("#f-id").value.trim(), name: $("#f-name").value.trim() || $("#f-id").value.trim(),
    enabled: $("#f-enabled").checked, transport };
  const optional = (field, value) => { if (value === "" || value === undefined) delete config[field]; else config[field] = value; };
  optional("description", $("#f-description").value.trim());
  optional("timeout", millis($("#f-timeout").value));
  optional("callTimeout", millis($("#f-call-timeout").value));
  if ($("#f-era").value === "auto") delete config.era; else config.era = $("#f-era").value;
  const include = names($("#f-include").value);
  const exclude = names($("#f-exclude").value);
  // An empty `include` list (no tool at all) has no text of its own: kept
  // as loaded while the field stays empty.
  const noneIncluded = include.length === 0 && base.tools && Array.isArray(base.tools.include) && base.tools.include.length === 0;
  if (include.length || exclude.length || noneIncluded) {
    config.tools = {};
    if (include.length || noneIncluded) config.tools.include = include;
    if (exclude.length) config.tools.exclude = exclude;
  } else {
    delete config.tools;
  }
  return { config, rowsSent };
}

// ------------------------------------------------- problems at their field

const rowLists = { "transport.args": "args", "transport.env": "env", "transport.envVars": "envvars",
  "transport.headers": "headers", "transport.envHeaders": "envheaders" };

// The input a diagnostic's field names, or null for a problem of the
// whole configuration.
function inputFor(field, rowsSent) {
  const direct = document.querySelector(`#server-form [data-field="${CSS.escape(field)}"]`);
  if (direct && direct.tagName !== "DIV") return direct;
  const match = /^(transport\.[A-Za-z]+)\[(\d+)\](?:\.(key|value))?$/.exec(field);
  if (match && rowLists[match[1]]) {
    const row = (rowsSent[rowLists[match[1]]] || [])[Number(match[2])];
    if (row) return row.querySelector(match[3] === "key" ? ".key" : ".value") || row.querySelector("input");
  }
  const prefix = field.replace(/\[\d+\].*$/, "").replace(/\.(include|exclude)$/, ".$1");
  const near = document.querySelector(`#server-form [data-field="${CSS.escape(prefix)}"]`);
  if (near && near.tagName !== "DIV") return near;
  if (field.startsWith("transport.oauth")) return $("#f-oauth-grant");
  if (field === "transport" || field === "transport.type") return $("#f-type-stdio");
  return null;
}

function clearProblems() {
  for (const node of document.querySelectorAll("#server-form .field-error")) node.remove();
  for (const node of document.querySelectorAll("#server-form [aria-invalid]")) {
    node.removeAttribute("aria-invalid");
    node.removeAttribute("aria-errormessage");
  }
}

// Each problem once, under its input, in the person's words, with the
// stable code on a detail line. Returns how many could not be placed.
function showProblems(diagnostics, rowsSent) {
  clearProblems();
  const general = [];
  const seen = new Set();
  let first = null;
  diagnostics.forEach((d, index) => {
    const id = `problem-${index}`;
    const key = `${d.field}|${d.code}|${d.message}`;
    if (seen.has(key)) return;
    seen.add(key);
    const input = inputFor(d.field, rowsSent);
    const note = el("div", { class: "field-error", id, "data-code": d.code, "data-field": d.field },
      el("span", {}, d.message), el("span", { class: "code" }, `${d.code}${d.field ? ` · ${d.field}` : ""}`));
    if (!input) {
      general.push(d);
      return;
    }
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-errormessage", id);
    const anchor = input.closest(".kv") || input.closest(".field") || input.closest(".choice") || input;
    anchor.after(note);
    if (!first) first = input;
  });
  if (first) first.focus();
  return general;
}

function formStatus(kind, text, detail) {
  const box = $("#form-status");
  box.hidden = !kind;
  box.className = `form-status ${kind || ""}`;
  box.dataset.state = kind || "";
  box.replaceChildren();
  if (text) box.append(el("span", {}, text));
  if (detail) box.append(el("span", { class: "code" }, detail));
}

function problemsStatus(general, placed) {
  const lines = [];
  if (placed > 0) lines.push(`Not saved: ${placed === 1 ? "1 problem is" : `${placed} problems are`} shown at ${placed === 1 ? "its field" : "their fields"}.`);
  for (const d of general) lines.push(d.message);
  formStatus("error", lines.join(" "), general.map((d) => d.code).join(", "));
}

async function save(event) {
  event.preventDefault();
  const { config, rowsSent } = readForm();
  // The server's own rules, before anything is saved.
  const check = await api("POST", "/api/servers/validate", config);
  const problems = check.ok ? check.data.diagnostics : ((check.data.error || {}).diagnostics || []);
  const relevant = state.editing ? problems.filter((d) => d.code !== "invalid_id") : problems;
  if (!check.ok && relevant.length === 0) {
    const error = check.data.error || { code: `http_${check.status}`, message: "the form could not be checked" };
    formStatus("error", `Not saved: ${error.message}`, error.code);
    return;
  }
  if (relevant.length > 0) {
    const general = showProblems(relevant, rowsSent);
    problemsStatus(general, relevant.length - general.length);
    return;
  }
  clearProblems();
  const path = state.editing ? `/api/servers/${encodeURIComponent(state.editing)}` : "/api/servers";
  formStatus("saving", "Saving…");
  // The form is not rebuilt after a save: what the person typed and the
  // scroll position stay as they are.
  const result = await api(state.editing ? "PUT" : "POST", path, config);
  if (!result.ok) {
    const error = result.data.error || { code: `http_${result.status}`, message: "the save failed" };
    const diagnostics = error.diagnostics || [];
    if (diagnostics.length > 0) {
      const general = showProblems(diagnostics, rowsSent);
      problemsStatus(general, diagnostics.length - general.length);
    } else {
      formStatus("error", `Not saved: ${error.message}`, error.code);
    }
    return;
  }
  state.editing = config.id;
  state.base = config;
  $("#f-id").readOnly = true;
  state.pending = { id: config.id, generation: result.data.generation };
  // A changed command line or URL drops kept secrets; say which
  // ones must be entered again.
  const dropped = (result.data.droppedSecrets || []).map((d) => d.key);
  state.notice = dropped.length
    ? `${config.id} saved without the values of ${dropped.join(", ")}: the command, arguments, directory or URL changed, so enter them again.`
    : null;
  formStatus("connecting", `Saved. ${config.id}: ${result.data.status}…`);
  followPending();
}

// Resolves a save once the manager reports the saved configuration's
// outcome: ready (or disabled) returns to the list; an error keeps the
// form open and shows it.
function followPending() {
  const pending = state.pending;
  if (!pending) return;
  const server = state.servers.find((s) => s.id === pending.id && s.status !== "shadowed");
  if (!server || (pending.generation !== undefined && server.generation < pending.generation)) return;
  if (server.status === "ready" || server.status === "disabled") {
    showList();
  } else if (server.status === "error") {
    const error = server.error || { code: "error", message: "" };
    formStatus("error", `Saved, but the server failed: ${error.message}`, error.code);
    state.pending = null;
  } else {
    formStatus("connecting", `Saved. ${server.id}: ${server.status}…`);
  }
}

// Subscribe (or unsubscribe) from a resource's row: its updates show in
// the row and in the server's log.
function subscribeButton(server, uri) {
  const key = `${server.id}\n${uri}`;
  const label = () => (state.subscribed.has(key) ? "Unsubscribe" : "Subscribe");
  const node = button(label(), "subscribe small", `subscribe:${server.id}:${uri}`, async () => {
    const on = !state.subscribed.has(key);
    const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/${on ? "subscribe" : "unsubscribe"}`, { uri });
    if (!result.ok) {
      listMessage(result.data.error || { code: `http_${result.status}`, message: "the subscription failed" });
      return;
    }
    if (on) state.subscribed.add(key); else state.subscribed.delete(key);
    // The list may have been drawn again meanwhile: the button as it is now.
    const row = document.querySelector(`li.server[data-id="${CSS.escape(server.id)}"] .resources li[data-uri="${CSS.escape(uri)}"]`);
    const current = (row && row.querySelector("button.subscribe")) || node;
    current.textContent = label();
    current.dataset.subscribed = String(on);
  }, { "data-subscribed": String(state.subscribed.has(key)) });
  return node;
}

// ------------------------------------------------- log messages and updates

function logPanel(server) {
  const lines = state.logs.get(server.id) || [];
  const summary = el("summary", { "data-focus-key": `logs:${server.id}` }, "Log and resource updates ",
    el("span", { class: "log-count muted" }, `(${lines.length})`));
  return details(`logs:${server.id}`, { class: "logs", "data-logs": server.id }, summary, (node) => {
    const status = el("span", { class: "log-status", role: "status" });
    if (server.logging) {
      const select = el("select", { class: "log-level", "aria-label": `Log level of ${server.name}`,
        "data-focus-key": `level:${server.id}` },
        el("option", { value: "" }, "(the server's default)"),
        ...LEVELS.map((level) => el("option", { value: level, selected: server.logLevel === level }, `${level} and above`)));
      select.addEventListener("change", async () => {
        if (!select.value) return;
        status.textContent = "";
        const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/log-level`, { level: select.value });
        status.className = result.ok ? "log-status muted" : "log-status errline";
        status.textContent = result.ok ? ` asked for ${result.data.level} and above` : ` ${(result.data.error || {}).message || "refused"}`;
      });
      node.append(el("div", { class: "log-head" }, el("label", {}, "Level: ", select), status));
    } else {
      node.append(el("p", { class: "muted" }, "This server does not declare logging, so it has no level to set."));
    }
    const list = el("ol", { class: "log-lines", "aria-label": `Log of ${server.name}` });
    for (const line of lines) list.append(logLine(line));
    node.append(list);
    list.scrollTop = list.scrollHeight;
  });
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString();
}

function logLine(line) {
  if (line.kind === "resource_updated") {
    return el("li", { class: "log-line update", "data-kind": line.kind, "data-seq": line.seq },
      el("span", { class: "at" }, clock(line.at)), " ", el("span", { class: "level" }, "updated"), " ",
      el("span", { class: "text" }, `resource updated: ${line.uri}`));
  }
  return el("li", { class: "log-line", "data-kind": "log", "data-level": line.level, "data-seq": line.seq },
    el("span", { class: "at" }, clock(line.at)), " ", el("span", { class: "level" }, line.level), " ",
    line.logger ? el("span", { class: "logger" }, `[${line.logger}] `) : null,
    el("span", { class: "text" }, line.text));
}

// One new line: kept, and shown at once where its server's log is open.
function addLogLine(line) {
  const lines = state.logs.get(line.id) || [];
  lines.push(line);
  while (lines.length > LOG_LINES) lines.shift();
  const fresh = !state.logs.has(line.id);
  state.logs.set(line.id, lines);
  const item = document.querySelector(`li.server[data-id="${CSS.escape(line.id)}"]`);
  if (line.kind === "resource_updated") {
    const key = `${line.id}\n${line.uri}`;
    state.updated.set(key, `updated ${clock(line.at)}`);
    const row = item && item.querySelector(`.resources li[data-uri="${CSS.escape(line.uri)}"] .updated`);
    if (row) row.textContent = state.updated.get(key);
  }
  if (!item || fresh) {
    if (fresh && !$("#list-view").hidden) renderList();
    return;
  }
  const count = item.querySelector(".logs .log-count");
  if (count) count.textContent = `(${lines.length})`;
  const list = item.querySelector(".logs .log-lines");
  if (list) {
    const follow = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
    list.append(logLine(line));
    while (list.children.length > LOG_LINES) list.firstElementChild.remove();
    if (follow) list.scrollTop = list.scrollHeight;
  }
}

// --------------------------------------------- what servers ask back

function askTitle(question) {
  if (question.kind === "url") return "A server asks you to open a page";
  if (question.kind === "sampling") return "A server asks for a model's reply";
  return "A server asks for input";
}

function askPlace(question) {
  if (question.during) return `${question.during.server} · while trying ${question.during.tool}`;
  if (question.trysRunning > 1) return `while ${question.trysRunning} Trys run (the server does not say which one asks)`;
  return "not during a Try";
}

// The page's answer to one question; the card says what happened.
async function answer(card, question, body) {
  const status = card.querySelector(".ask-status");
  for (const b of card.querySelectorAll("button")) b.disabled = true;
  const result = await api("POST", `/api/asks/${encodeURIComponent(question.id)}`, body);
  for (const b of card.querySelectorAll("button")) b.disabled = false;
  if (!result.ok) {
    const error = result.data.error || { code: `http_${result.status}`, message: "the answer was not taken" };
    status.className = "ask-status errline";
    status.dataset.state = "error";
    status.replaceChildren(el("span", {}, error.message), el("span", { class: "code" }, error.code));
    return;
  }
  status.className = "ask-status ok";
  status.dataset.state = "sent";
  status.textContent = "Sent.";
}

function askButtons(card, question, send, sendLabel, extra = []) {
  const buttons = el("div", { class: "buttons" });
  if (send) buttons.append(el("button", { type: "submit", class: "ask-send primary" }, sendLabel));
  for (const [label, action, cls] of extra) {
    buttons.append(el("button", { type: "button", class: cls, onclick: () => answer(card, question, { action }) }, label));
  }
  return buttons;
}

function fieldInput(question, field) {
  const id = `ask-${question.id}-${cssId(field.name)}`;
  const has = field.default !== undefined && field.default !== null;
  let input;
  if (field.type === "boolean") {
    input = el("select", { id, "data-name": field.name },
      el("option", { value: "" }, field.required ? "(choose)" : "(leave out)"),
      el("option", { value: "true", selected: has && field.default === true }, "yes"),
      el("option", { value: "false", selected: has && field.default === false }, "no"));
  } else if (field.type === "choice") {
    input = el("select", { id, "data-name": field.name },
      el("option", { value: "" }, field.required ? "(choose)" : "(leave out)"),
      ...field.choices.map((c) => el("option", { value: c.value, selected: has && field.default === c.value }, c.label)));
  } else if (field.type === "choices") {
    const picked = has && Array.isArray(field.default) ? field.default : [];
    input = el("fieldset", { id, class: "ask-choices", "data-name": field.name },
      ...field.choices.map((c) => el("label", { class: "inline" },
        el("input", { type: "checkbox", value: c.value, checked: picked.includes(c.value) }), c.label)));
  } else {
    const numeric = field.type === "number" || field.type === "integer";
    input = el("input", { id, "data-name": field.name, inputmode: numeric ? "decimal" : null,
      placeholder: field.format ? field.format : (numeric ? (field.type === "integer" ? "a whole number" : "a number") : "") });
    if (has) input.value = String(field.default);
  }
  const hints = [];
  if (field.type === "integer" || field.type === "number") {
    if (field.minimum !== null && field.minimum !== undefined) hints.push(`from ${field.minimum}`);
    if (field.maximum !== null && field.maximum !== undefined) hints.push(`up to ${field.maximum}`);
  }
  if (field.type === "text") {
    if (field.minLength) hints.push(`at least ${field.minLength} characters`);
    if (field.maxLength) hints.push(`at most ${field.maxLength} characters`);
  }
  return el("div", { class: "field", "data-field": field.name },
    el("label", { for: id }, field.label, field.required ? el("span", { class: "required" }, " (required)") : null),
    field.description ? el("small", { class: "muted" }, field.description) : null,
    input,
    hints.length ? el("small", { class: "muted" }, hints.join(", ")) : null);
}

// The filled-in form as the schema's values; a field left empty is left
// out (the ui server says when a required one is missing).
function formContent(card, question) {
  const content = {};
  for (const field of question.fields) {
    const node = card.querySelector(`[data-name="${CSS.escape(field.name)}"]`);
    if (field.type === "choices") {
      const picked = [...node.querySelectorAll("input:checked")].map((i) => i.value);
      if (picked.length || field.required) content[field.name] = picked;
      continue;
    }
    const text = node.value;
    if (text.trim() === "") continue;
    if (field.type === "boolean") content[field.name] = text === "true";
    else if (field.type === "number" || field.type === "integer") {
      const number = Number(text.trim());
      content[field.name] = Number.isNaN(number) ? text : number;
    } else content[field.name] = text;
  }
  return content;
}

function askCard(question) {
  const card = el("article", { class: `ask ${question.kind}`, "data-ask": question.id, "data-kind": question.kind,
    "aria-label": askTitle(question) });
  card.append(el("div", { class: "ask-head" }, el("strong", {}, askTitle(question)),
    el("span", { class: "muted ask-place" }, askPlace(question))));
  const status = el("p", { class: "ask-status", role: "status" });
  const deadline = el("p", { class: "muted ask-deadline" },
    `Declined automatically at ${clock(question.declineAt)} if not answered.`);
  if (question.kind === "sampling") {
    const size = question.size > question.request.length ? ` (cut: the request is ${question.size} bytes)` : "";
    const reply = el("textarea", { class: "ask-reply", rows: 4, "aria-label": "Your reply" });
    const form = el("form", { class: "ask-form", novalidate: true },
      el("p", { class: "notice" }, "mcpctl has no model: type the reply yourself, or decline."),
      el("pre", { class: "ask-request" }, question.request),
      size ? el("p", { class: "muted" }, size) : null,
      el("label", { class: "field" }, "Reply", reply),
      askButtons(card, question, true, "Send reply", [["Decline", "decline", "ask-decline danger"]]));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      answer(card, question, { action: "reply", text: reply.value });
    });
    card.append(form);
  } else if (question.kind === "url") {
    card.append(el("pre", { class: "ask-message" }, question.message),
      el("p", {}, "Site: ", el("strong", { class: "ask-site" }, question.site)),
      el("p", {}, "Address: ", el("code", { class: "ask-url" }, question.url)),
      el("p", { class: "muted" }, "mcpctl does not open it: copy it into your browser if you trust the site, then choose Done."));
    const form = el("form", { class: "ask-form", novalidate: true },
      askButtons(card, question, true, "Done", [["Decline", "decline", "ask-decline danger"], ["Cancel", "cancel", "ask-cancel"]]));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      answer(card, question, { action: "accept" });
    });
    card.append(form);
  } else {
    const form = el("form", { class: "ask-form", novalidate: true },
      el("pre", { class: "ask-message" }, question.message),
      ...question.fields.map((field) => fieldInput(question, field)),
      askButtons(card, question, true, "Send", [["Decline", "decline", "ask-decline danger"], ["Cancel", "cancel", "ask-cancel"]]));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      answer(card, question, { action: "accept", content: formContent(card, question) });
    });
    card.append(form);
  }
  card.append(status, deadline);
  return card;
}

function endedItem(question) {
  const what = question.kind === "sampling" ? "sampling request" : (question.kind === "url" ? "page to open" : "form");
  return el("li", { "data-ask": question.id, "data-outcome": question.outcome },
    `${clock(question.endedAt)} · ${what} (${askPlace(question)}): `, el("span", { class: "outcome" }, question.outcome));
}

// The open questions, drawn once each and kept while open (a new list
// never throws away what the person typed); the last outcomes below.
function renderAsks(data) {
  const openIds = new Set(data.open.map((q) => String(q.id)));
  for (const [id, card] of state.askCards) {
    if (!openIds.has(id)) {
      card.remove();
      state.askCards.delete(id);
    }
  }
  let first = null;
  for (const question of data.open) {
    if (state.askCards.has(String(question.id))) continue;
    const card = askCard(question);
    $("#ask-list").append(card);
    state.askCards.set(String(question.id), card);
    first = first || card;
  }
  // A Try waiting on a question says where it is.
  for (const question of data.open) {
    if (!question.during) continue;
    const key = `${question.during.server}:${question.during.tool}`;
    const output = document.querySelector(`form.try[data-try-key="${CSS.escape(key)}"] .try-result`);
    if (output && (state.tries.get(key) || {}).running) {
      output.replaceChildren(el("p", { class: "muted waiting" }, "Running… the server asks you something: answer it at the top of the page."));
    }
  }
  const ended = data.ended.filter((q) => q.id > state.dismissed && q.outcome !== "answered");
  $("#ask-ended").replaceChildren(...ended.map(endedItem));
  $("#ask-ended-box").hidden = ended.length === 0;
  $("#asks").hidden = data.open.length === 0 && ended.length === 0;
  $("#asks").dataset.open = String(data.open.length);
  if (first) {
    first.scrollIntoView({ block: "nearest" });
    const field = first.querySelector("input, select, textarea");
    if (field) field.focus({ preventScroll: true });
  }
  state.lastEnded = data.ended.length ? data.ended[data.ended.length - 1].id : state.dismissed;
}

// ---------------------------------------------------------------- start

function start() {
  $("#add").addEventListener("click", () => openForm(null));
  $("#back").addEventListener("click", showList);
  $("#server-form").addEventListener("submit", save);
  $("#f-type-stdio").addEventListener("change", () => setType("stdio"));
  $("#f-type-http").addEventListener("change", () => setType("http"));
  $("#f-type-sse").addEventListener("change", () => setType("sse"));
  $("#f-oauth-grant").addEventListener("change", setGrant);
  for (const [id, kind] of Object.entries(rowKinds)) {
    $(`#${id}`).dataset.secret = id === "env" || id === "headers" ? "true" : "false";
    $(`#add-${id === "args" ? "arg" : id.replace(/s$/, "")}`).addEventListener("click", () => {
      const row = addRow($(`#${id}`), kind);
      row.querySelector("input").focus();
    });
  }
  $("#ask-dismiss").addEventListener("click", () => {
    state.dismissed = state.lastEnded || state.dismissed;
    $("#ask-ended").replaceChildren();
    $("#ask-ended-box").hidden = true;
    $("#asks").hidden = state.askCards.size === 0;
  });
  loadTrust();
  const events = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
  events.addEventListener("servers", (event) => {
    const data = JSON.parse(event.data);
    $("#store-file").textContent = data.store;
    $("#live").classList.add("on");
    $("#live").textContent = "live";
    if (data.error) {
      showStoreError(data.error, data.store);
      return;
    }
    const before = state.servers.map((s) => `${s.id}:${s.status}`).join(",");
    state.servers = data.servers;
    // A server that connected again may offer other resources.
    for (const server of state.servers) if (server.status !== "ready") state.offers.delete(server.id);
    if (!$("#list-view").hidden || $("#form-view").hidden) {
      if ($("#store-error").hidden === false) show("list");
      renderList();
    }
    if (before !== state.servers.map((s) => `${s.id}:${s.status}`).join(",")) loadTrust();
    followPending();
    document.body.dataset.loaded = "true";
  });
  events.addEventListener("asks", (event) => renderAsks(JSON.parse(event.data)));
  events.addEventListener("logs", (event) => {
    state.logs = new Map(Object.entries(JSON.parse(event.data)));
    if (!$("#list-view").hidden) renderList();
  });
  events.addEventListener("log", (event) => addLogLine(JSON.parse(event.data)));
  events.addEventListener("error", () => {
    $("#live").classList.remove("on");
    $("#live").textContent = "reconnecting…";
  });
}

start();

// mcpctl ui: the settings page's script (Settings → Integrations → MCPs flow).
// Plain JavaScript, no build step. Live state arrives over server-sent events
// (/api/events); changes go through the JSON API with the per-launch token.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const $ = (selector, root = document) => root.querySelector(selector);
const state = {
  servers: [],
  confirming: null, // id whose Delete awaits confirmation
  editing: null,    // id being edited, or null for Add
  era: "auto",      // the edited config's protocol era, sent back unchanged
  pending: null,    // {id, generation} saved and awaiting its connection result
  notice: null,     // what the list says after a save that dropped kept secrets
};

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
    if (child !== null && child !== undefined) node.append(child);
  }
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
      const tools = `${server.toolCount} tool${server.toolCount === 1 ? "" : "s"}`;
      const protocol = server.protocolVersion ? ` · ${server.protocolVersion}` : "";
      return `ready · ${tools}${protocol}`;
    }
    case "error": return server.error ? `error · ${server.error.code}` : "error";
    default: return server.status;
  }
}

function renderList() {
  const list = $("#servers");
  list.replaceChildren();
  $("#empty").hidden = state.servers.length > 0;
  for (const server of state.servers) {
    list.append(serverItem(server));
  }
}

function serverItem(server) {
  const item = el("li", { class: "server", "data-id": server.id, "data-status": server.status });
  const toggle = el("input", {
    type: "checkbox", class: "enable", role: "switch", checked: server.enabled,
    "aria-label": `Enable ${server.name}`,
    onchange: async (event) => {
      const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/enabled`, { enabled: event.target.checked });
      listMessage(result.ok ? null : result.data.error);
    },
  });
  item.append(el("div", { class: "row1" },
    el("div", { class: "title" },
      el("div", { class: "name" }, server.name),
      el("div", { class: "meta" }, `${server.id} · ${server.transport} · ${server.source}`)),
    el("span", { class: `status ${server.status}` }, statusText(server)),
    el("label", { class: "switch" }, toggle, "Enabled")));
  if (server.error) {
    item.append(el("p", { class: "errline" }, `${server.error.code}: ${server.error.message}`));
  }
  const buttons = el("div", { class: "buttons" });
  if (server.status === "error" || server.status === "disconnected" || server.status === "idle") {
    buttons.append(el("button", { type: "button", class: "retry", onclick: async () => {
      const result = await api("POST", `/api/servers/${encodeURIComponent(server.id)}/retry`);
      listMessage(result.ok ? null : result.data.error);
    } }, "Retry"));
  }
  buttons.append(el("button", { type: "button", class: "edit", onclick: () => openForm(server) }, "Edit"));
  buttons.append(el("button", { type: "button", class: "delete danger", onclick: () => {
    state.confirming = server.id;
    renderList();
  } }, "Delete"));
  item.append(buttons);
  if (state.confirming === server.id) {
    item.append(el("div", { class: "confirm", role: "alertdialog" },
      `Delete ${server.name}? Its configuration and saved secrets are removed.`,
      el("button", { type: "button", class: "confirm-delete danger", onclick: async () => {
        state.confirming = null;
        const result = await api("DELETE", `/api/servers/${encodeURIComponent(server.id)}`);
        listMessage(result.ok ? null : result.data.error);
      } }, "Delete"),
      el("button", { type: "button", class: "cancel-delete", onclick: () => {
        state.confirming = null;
        renderList();
      } }, "Cancel")));
  }
  if (server.tools.length > 0) {
    const tools = el("ul", { class: "tools", "aria-label": `Tools of ${server.name}` });
    for (const tool of server.tools) {
      tools.append(el("li", {}, el("span", { class: "tool" }, tool.name),
        tool.description ? ` — ${tool.description}` : ""));
    }
    item.append(tools);
  }
  return item;
}

function listMessage(error, notice) {
  const message = $("#list-message");
  message.hidden = !error && !notice;
  message.className = error ? "message" : "message notice";
  message.textContent = error ? `${error.code}: ${error.message}` : (notice || "");
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
  message.textContent = error ? `${error.code}: ${error.message}` : (notice || "");
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
  $("#f-type-http").checked = type !== "stdio";
  $("#stdio-fields").hidden = type !== "stdio";
  $("#http-fields").hidden = type === "stdio";
}

function openForm(server) {
  const config = server ? server.config : null;
  const t = config ? config.transport : { type: "stdio" };
  state.editing = server ? server.id : null;
  state.era = (config && config.era) || "auto";
  state.pending = null;
  $("#server-form").reset();
  $("#form-title").textContent = server ? `Edit ${server.name}` : "Add MCP server";
  $("#f-id").value = config ? config.id : "";
  $("#f-id").readOnly = !!server;
  $("#f-name").value = config ? config.name : "";
  $("#f-enabled").checked = config ? config.enabled : true;
  $("#f-command").value = t.command || "";
  $("#f-cwd").value = t.cwd || "";
  $("#f-url").value = t.url || "";
  $("#f-bearer").value = t.bearerTokenEnv || "";
  for (const id of Object.keys(rowKinds)) $(`#${id}`).replaceChildren();
  for (const arg of t.args || []) addRow($("#args"), { ...rowKinds.args, value: arg });
  for (const row of t.env || []) addRow($("#env"), { ...rowKinds.env, key: row.key, saved: row.saved });
  for (const name of t.envVars || []) addRow($("#envvars"), { ...rowKinds.envvars, value: name });
  for (const row of t.headers || []) addRow($("#headers"), { ...rowKinds.headers, key: row.key, saved: row.saved });
  for (const row of t.envHeaders || []) addRow($("#envheaders"), { ...rowKinds.envheaders, key: row.key, value: row.value });
  setType(t.type === "stdio" ? "stdio" : "http");
  formStatus(null);
  show("form");
  window.scrollTo(0, 0);
}

function readRows(id) {
  return [...$(`#${id}`).children].map((row) => ({
    key: row.querySelector(".key") ? row.querySelector(".key").value.trim() : "",
    value: row.querySelector(".value").value,
    saved: row.dataset.saved === "true",
  }));
}

function readForm() {
  const secretRows = (id) => readRows(id).filter((r) => r.key).map((r) => (
    r.saved && r.value === "" ? { key: r.key, value: "", saved: true } : { key: r.key, value: r.value }));
  const stdio = $("#f-type-stdio").checked;
  const transport = stdio ? {
    type: "stdio",
    command: $("#f-command").value.trim(),
    args: readRows("args").map((r) => r.value),
    env: secretRows("env"),
    envVars: readRows("envvars").map((r) => r.value.trim()).filter(Boolean),
    cwd: $("#f-cwd").value.trim(),
  } : {
    type: "http",
    url: $("#f-url").value.trim(),
    bearerTokenEnv: $("#f-bearer").value.trim(),
    headers: secretRows("headers"),
    envHeaders: readRows("envheaders").filter((r) => r.key).map((r) => ({ key: r.key, value: r.value.trim() })),
  };
  return {
    id: $("#f-id").value.trim(),
    name: $("#f-name").value.trim(),
    enabled: $("#f-enabled").checked,
    era: state.era,
    transport,
  };
}

function formStatus(kind, text) {
  const box = $("#form-status");
  box.hidden = !kind;
  box.className = `form-status ${kind || ""}`;
  box.dataset.state = kind || "";
  box.textContent = text || "";
}

async function save(event) {
  event.preventDefault();
  const config = readForm();
  const path = state.editing ? `/api/servers/${encodeURIComponent(state.editing)}` : "/api/servers";
  formStatus("saving", "Saving…");
  // The form is not rebuilt after a save: what the person typed and the
  // scroll position stay as they are.
  const result = await api(state.editing ? "PUT" : "POST", path, config);
  if (!result.ok) {
    const error = result.data.error || { code: `http_${result.status}`, message: "the save failed" };
    const details = (error.diagnostics || []).map((d) => `${d.field}: ${d.message} [${d.code}]`);
    formStatus("error", [`Not saved: ${error.code}: ${error.message}`, ...details].join("\n"));
    return;
  }
  state.editing = config.id;
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
  const server = state.servers.find((s) => s.id === pending.id);
  if (!server || (pending.generation !== undefined && server.generation < pending.generation)) return;
  if (server.status === "ready" || server.status === "disabled") {
    showList();
  } else if (server.status === "error") {
    const error = server.error || { code: "error", message: "" };
    formStatus("error", `Saved, but the server failed: ${error.code}: ${error.message}`);
    state.pending = null;
  } else {
    formStatus("connecting", `Saved. ${server.id}: ${server.status}…`);
  }
}

// ---------------------------------------------------------------- start

function start() {
  $("#add").addEventListener("click", () => openForm(null));
  $("#back").addEventListener("click", showList);
  $("#server-form").addEventListener("submit", save);
  $("#f-type-stdio").addEventListener("change", () => setType("stdio"));
  $("#f-type-http").addEventListener("change", () => setType("http"));
  for (const [id, kind] of Object.entries(rowKinds)) {
    $(`#${id}`).dataset.secret = id === "env" || id === "headers" ? "true" : "false";
    $(`#add-${id === "args" ? "arg" : id.replace(/s$/, "")}`).addEventListener("click", () => addRow($(`#${id}`), kind));
  }
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
    state.servers = data.servers;
    if (!$("#list-view").hidden || $("#form-view").hidden) {
      if ($("#store-error").hidden === false) show("list");
      renderList();
    }
    followPending();
    document.body.dataset.loaded = "true";
  });
  events.addEventListener("error", () => {
    $("#live").classList.remove("on");
    $("#live").textContent = "reconnecting…";
  });
}

start();

// An MCP host's client (the TypeScript SDK's) against `mcpctl serve`: lists the tools of every
// upstream server, calls them, follows progress, cancels a call and receives list_changed.
//
// Usage: node gateway_client.mjs MCPCTL [ARGS...]   (ARGS end with `serve`: stdio)
//        node gateway_client.mjs --http URL TOKEN    (`mcpctl serve --http`: Streamable HTTP)
// Prints one JSON line: what it saw. Exits 1 with a message on any failure.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = process.argv.slice(2);
const deadline = (ms, what) =>
  new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms));
const within = (promise, what) => Promise.race([promise, deadline(20000, what)]);
const text = (result) => (result.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");

const transport =
  command === "--http"
    ? new StreamableHTTPClientTransport(new URL(args[0]), {
        requestInit: { headers: { Authorization: `Bearer ${args[1]}` } },
      })
    : new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "gateway-interop-ts", version: "1.0.0" });
let listChanged = () => {};
const changed = new Promise((resolve) => (listChanged = resolve));
client.setNotificationHandler(ToolListChangedNotificationSchema, () => listChanged());

try {
  await within(client.connect(transport), "initialize");
  const seen = { server: client.getServerVersion()?.name };
  const before = (await within(client.listTools(), "tools/list")).tools.map((t) => t.name);
  seen.tools = before;

  seen.fx_echo = text(await within(client.callTool({ name: "mcp_fx_echo", arguments: { text: "hello" } }), "fx echo"));
  seen.everything_echo = text(
    await within(client.callTool({ name: "mcp_everything_echo", arguments: { message: "hi" } }), "everything echo"),
  );
  seen.fastmcp_add = text(await within(client.callTool({ name: "mcp_fastmcp_add", arguments: { a: 2, b: 3 } }), "fastmcp add"));

  // Resources and prompts of every server, forwarded to the one they came from.
  seen.resources = (await within(client.listResources(), "resources/list")).resources.map((r) => r.uri);
  const contents = (result) => result.contents.map((c) => c.text ?? c.blob ?? "").join("");
  seen.readme = contents(await within(client.readResource({ uri: "fixture://readme" }), "read readme"));
  seen.templates = (await within(client.listResourceTemplates(), "templates/list")).resourceTemplates.map(
    (t) => t.uriTemplate,
  );
  seen.dynamic = contents(
    await within(client.readResource({ uri: "demo://resource/dynamic/text/1" }), "read a templated resource"),
  );
  seen.missing_resource = await client.readResource({ uri: "nowhere://x" }).then(
    () => "answered",
    (error) => `error ${error.code}`,
  );
  seen.prompts = (await within(client.listPrompts(), "prompts/list")).prompts.map((p) => p.name);
  seen.greet = (
    await within(client.getPrompt({ name: "mcp_fx_greet", arguments: { name: "Ada" } }), "prompts/get")
  ).messages.map((m) => m.content.text).join("");

  seen.completion = (
    await within(
      client.complete({
        ref: { type: "ref/prompt", name: "mcp_everything_completable-prompt" },
        argument: { name: "department", value: "S" },
      }),
      "completion/complete",
    )
  ).completion.values;

  // Progress passes through. The reports are 100 ms apart: this SDK runs a progress handler
  // in a later microtask than the response handler that removes it, so a report read in the
  // same chunk as the answer (the last one, often) is dropped by the client itself.
  let reports = 0;
  await within(
    client.callTool({ name: "mcp_fx_progress", arguments: { steps: 3, ms: 100 } }, undefined, {
      onprogress: () => (reports += 1),
    }),
    "progress",
  );
  seen.progress_reports = reports;

  // A call cancelled once it is running upstream (its first progress report).
  const abort = new AbortController();
  const cancelled = client
    .callTool({ name: "mcp_fx_progress", arguments: { steps: 100, ms: 200 } }, undefined, {
      signal: abort.signal,
      onprogress: () => abort.abort("enough"),
      timeout: 20000,
    })
    .then(() => "answered", (error) => `rejected: ${error.message ?? error}`);
  seen.cancelled = await within(cancelled, "cancelled call");

  // A tool list change upstream reaches the client.
  seen.remove = text(await within(client.callTool({ name: "mcp_fx_remove_tool", arguments: { name: "add" } }), "remove"));
  await within(changed, "notifications/tools/list_changed");
  seen.after = (await within(client.listTools(), "tools/list again")).tools.map((t) => t.name);

  // An unknown tool is a protocol error.
  seen.unknown = await client.callTool({ name: "mcp_fx_nope", arguments: {} }).then(
    () => "answered",
    (error) => `error ${error.code}`,
  );
  console.log(JSON.stringify(seen));
  await client.close();
  process.exit(0);
} catch (error) {
  console.error(`gateway_client.mjs: ${error.stack ?? error}`);
  process.exit(1);
}

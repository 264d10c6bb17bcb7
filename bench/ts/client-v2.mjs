// ts2-bench-client: the TypeScript SDK v2 client (`@modelcontextprotocol/client`) that `cargo xtask bench` runs.
//
// It drives the workload of workload.mjs through the v2 `Client` with its
// `StdioClientTransport` or `StreamableHTTPClientTransport`, the way a host
// would. `MCP_BENCH_TS_NEGOTIATION` picks the client's options:
// - `default` (or unset): the v2 client's defaults, whose version
//   negotiation is `legacy` (the handshake era, no `server/discover`);
// - `auto`: `versionNegotiation: { mode: "auto" }`, which probes with
//   `server/discover` on each connect and speaks the 2026-07-28 era to a
//   server that offers it (over stdio the probe runs on a sibling process
//   of its own, one more spawn per connect).
// Its result line names it `ts2` either way.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

import { listAllTools, main } from "./workload.mjs";

const negotiation = process.env.MCP_BENCH_TS_NEGOTIATION ?? "default";
if (negotiation !== "default" && negotiation !== "auto") {
  console.error(`ts2-bench-client: MCP_BENCH_TS_NEGOTIATION=${negotiation}: expected default or auto`);
  process.exit(2);
}
const options = negotiation === "auto" ? { versionNegotiation: { mode: "auto" } } : undefined;

/** Connects as a host would and lists every tool. */
async function connect(args) {
  const client = new Client({ name: "ts2-bench-client", version: "0.0.0" }, options);
  const transport =
    args.transport === "stdio"
      ? new StdioClientTransport({ command: args.server, args: args.serverArgs, stderr: "inherit" })
      : new StreamableHTTPClientTransport(new URL(args.url));
  await client.connect(transport);
  const tools = await listAllTools(client);
  // Closes as a host would; over HTTP in the handshake era it also ends the
  // session (DELETE).
  const close = async () => {
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
      await transport.terminateSession();
    }
    await client.close();
  };
  return { client, close, tools };
}

await main("ts2", connect);

// ts-bench-client: the TypeScript SDK v1 reference client that `cargo xtask bench` runs.
//
// It drives the workload of workload.mjs through the SDK's `Client`
// (`@modelcontextprotocol/sdk`) with `StdioClientTransport` or
// `StreamableHTTPClientTransport`, the way a host would, with the SDK's
// default options (the handshake era).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { listAllTools, main } from "./workload.mjs";

/** Connects as a host would and lists every tool. */
async function connect(args) {
  const client = new Client({ name: "ts-bench-client", version: "0.0.0" });
  const transport =
    args.transport === "stdio"
      ? new StdioClientTransport({ command: args.server, args: args.serverArgs, stderr: "inherit" })
      : new StreamableHTTPClientTransport(new URL(args.url));
  await client.connect(transport);
  const tools = await listAllTools(client);
  // Closes as a host would; over HTTP it also ends the session (DELETE).
  const close = async () => {
    if (transport instanceof StreamableHTTPClientTransport) {
      await transport.terminateSession();
    }
    await client.close();
  };
  return { client, close, tools };
}

await main("ts", connect);

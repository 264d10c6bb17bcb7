// The workload every TypeScript bench client runs, whichever SDK it drives.
//
// `cargo xtask bench` starts each client with the same flags and reads the
// same JSON line back (the protocol is in xtask/src/bench.rs): cold
// connects, sequential echoes, echoes with many calls in flight, and 1 MiB
// results. A client module supplies how to connect (returning the SDK's
// client, a `close` for it, and how many tools it listed) and the name its
// result line carries; `main` does the rest, then waits for stdin to close
// before it exits, so that the harness can read the process's peak RSS.

const ECHO_TEXT = "hello";

function parseArgs(argv) {
  const args = {
    transport: "stdio",
    server: "",
    serverArgs: [],
    url: "",
    connects: 20,
    warmup: 100,
    calls: 2000,
    throughputCalls: 20000,
    inflight: 32,
    bigCalls: 50,
    bigKib: 1024,
  };
  const numbers = {
    "--connects": "connects",
    "--warmup": "warmup",
    "--calls": "calls",
    "--throughput-calls": "throughputCalls",
    "--inflight": "inflight",
    "--big-calls": "bigCalls",
    "--big-kib": "bigKib",
  };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--transport") {
      if (value !== "stdio" && value !== "http") throw new Error(`unknown transport ${value}`);
      args.transport = value;
    } else if (flag === "--server") {
      args.server = value;
    } else if (flag === "--server-args") {
      args.serverArgs = value.split(/\s+/).filter((a) => a.length > 0);
    } else if (flag === "--url") {
      args.url = value;
    } else if (flag in numbers) {
      const n = Number.parseInt(value, 10);
      if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${flag}: not a number`);
      args[numbers[flag]] = n;
    } else {
      throw new Error(`unknown flag ${flag}`);
    }
  }
  return args;
}

/** Lists every tool of a connected client, page by page; returns how many. */
export async function listAllTools(client) {
  let tools = 0;
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    tools += page.tools.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

function firstText(result) {
  const block = result.content?.[0];
  return block?.type === "text" ? block.text : undefined;
}

async function callEcho(client) {
  const result = await client.callTool({ name: "echo", arguments: { text: ECHO_TEXT } });
  const text = firstText(result);
  if (text !== ECHO_TEXT) throw new Error(`echo returned ${JSON.stringify(text)}`);
}

const now = () => process.hrtime.bigint();

async function run(name, connect, args) {
  const connectNs = [];
  let tools = 0;
  for (let i = 0; i < args.connects; i++) {
    const started = now();
    const connection = await connect(args);
    connectNs.push(now() - started);
    tools = connection.tools;
    await connection.close();
  }

  const connection = await connect(args);
  const { client } = connection;
  for (let i = 0; i < args.warmup; i++) await callEcho(client);
  const latencyNs = [];
  for (let i = 0; i < args.calls; i++) {
    const started = now();
    await callEcho(client);
    latencyNs.push(now() - started);
  }

  let next = 0;
  const worker = async () => {
    while (next++ < args.throughputCalls) await callEcho(client);
  };
  let started = now();
  await Promise.all(Array.from({ length: args.inflight }, worker));
  const throughputNs = now() - started;

  let bigBytes = 0;
  const bigNs = [];
  for (let i = 0; i < args.bigCalls; i++) {
    started = now();
    const result = await client.callTool({ name: "big", arguments: { kib: args.bigKib } });
    const text = firstText(result);
    if (text === undefined) throw new Error("big returned no text");
    // The fixture's text is ASCII: one UTF-16 unit per byte.
    if (text.length !== args.bigKib * 1024) {
      throw new Error(`big returned ${text.length} bytes, not ${args.bigKib} KiB`);
    }
    bigBytes += text.length;
    bigNs.push(now() - started);
  }
  await connection.close();

  const list = (values) => `[${values.join(",")}]`;
  return (
    `{"client":"${name}","transport":"${args.transport}","tools":${tools},` +
    `"connect_ns":${list(connectNs)},"latency_ns":${list(latencyNs)},` +
    `"throughput_calls":${args.throughputCalls},"throughput_ns":${throughputNs},` +
    `"big_calls":${args.bigCalls},"big_bytes":${bigBytes},"big_ns":${list(bigNs)}}`
  );
}

/**
 * Runs the workload with `connect(args)`, which resolves to
 * `{ client, close, tools }`, and prints the result line as `name`.
 */
export async function main(name, connect) {
  try {
    const line = await run(name, connect, parseArgs(process.argv.slice(2)));
    process.stdout.write(line + "\n");
    // The harness reads our peak RSS now, then closes stdin.
    process.stdin.resume();
    process.stdin.on("end", () => process.exit(0));
  } catch (error) {
    console.error(`${name}-bench-client: ${error?.stack ?? error}`);
    process.exit(1);
  }
}

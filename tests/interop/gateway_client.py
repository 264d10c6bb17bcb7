"""An MCP host's client (the Python SDK's) against `mcpctl serve`.

Lists the tools of every upstream server, calls them, follows progress and
receives list_changed. (This SDK's client sends no notifications/cancelled
when a call is abandoned, so cancellation is tested with the TypeScript one.)

Usage: python gateway_client.py MCPCTL [ARGS...]   (ARGS end with `serve`: stdio)
       python gateway_client.py --http URL TOKEN    (`mcpctl serve --http`)
Prints one JSON line: what it saw. Exits 1 with a message on any failure.
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


def text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def main() -> None:
    command, *args = sys.argv[1:]
    if command == "--http":
        url, token = args
        transport = streamablehttp_client(url, headers={"Authorization": f"Bearer {token}"})
    else:
        params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
        transport = stdio_client(params)
    changed = anyio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            changed.set()

    seen: dict = {}
    with anyio.fail_after(60):
        async with transport as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, message_handler=on_message) as session:
                init = await session.initialize()
                seen["server"] = init.serverInfo.name
                seen["tools"] = [t.name for t in (await session.list_tools()).tools]
                seen["fx_echo"] = text(await session.call_tool("mcp_fx_echo", {"text": "hello"}))
                seen["everything_echo"] = text(
                    await session.call_tool("mcp_everything_echo", {"message": "hi"})
                )
                seen["fastmcp_add"] = text(await session.call_tool("mcp_fastmcp_add", {"a": 2, "b": 3}))
                seen["resources"] = [str(r.uri) for r in (await session.list_resources()).resources]

                def contents(result) -> str:
                    return "".join(getattr(c, "text", None) or getattr(c, "blob", "") for c in result.contents)

                seen["readme"] = contents(await session.read_resource("fixture://readme"))
                seen["templates"] = [
                    t.uriTemplate for t in (await session.list_resource_templates()).resourceTemplates
                ]
                seen["dynamic"] = contents(await session.read_resource("demo://resource/dynamic/text/1"))
                try:
                    await session.read_resource("nowhere://x")
                    seen["missing_resource"] = "answered"
                except Exception as error:
                    code = getattr(getattr(error, "error", None), "code", None)
                    seen["missing_resource"] = f"error {code}"
                seen["prompts"] = [p.name for p in (await session.list_prompts()).prompts]
                greet = await session.get_prompt("mcp_fx_greet", {"name": "Ada"})
                seen["greet"] = "".join(m.content.text for m in greet.messages)
                reports = 0

                async def progress(progress, total, message) -> None:
                    nonlocal reports
                    reports += 1

                await session.call_tool("mcp_fx_progress", {"steps": 3}, progress_callback=progress)
                seen["progress_reports"] = reports
                seen["remove"] = text(await session.call_tool("mcp_fx_remove_tool", {"name": "add"}))
                await changed.wait()
                seen["after"] = [t.name for t in (await session.list_tools()).tools]
                try:
                    await session.call_tool("mcp_fx_nope", {})
                    seen["unknown"] = "answered"
                except Exception as error:  # the SDK raises McpError for a JSON-RPC error
                    code = getattr(getattr(error, "error", None), "code", None)
                    seen["unknown"] = f"error {code}"
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception as error:
        print(f"gateway_client.py: {error!r}", file=sys.stderr)
        sys.exit(1)

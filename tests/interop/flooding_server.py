"""A server (Python `mcp` 1.x, low-level API, handshake era) that logs a lot during one call, for the gateway's backpressure tests.

- tool `flood` (arguments `count` and `size`): sends `count` `info` log
  messages, the n-th (from 0) `n:` followed by `size` letters, then
  answers `flooded COUNT`.

Usage: python flooding_server.py
"""

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("flooding")


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    schema = {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "size": {"type": "integer"}},
        "required": ["count", "size"],
    }
    return [types.Tool(name="flood", description="Logs COUNT messages of SIZE letters", inputSchema=schema)]


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    session = server.request_context.session
    count, size = int(arguments["count"]), int(arguments["size"])
    for n in range(count):
        await session.send_log_message(level="info", data=f"{n}:" + "x" * size, logger="flooding")
    return [types.TextContent(type="text", text=f"flooded {count}")]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

"""A server (Python `mcp` 1.x, low-level API, handshake era) that talks while a call runs, for the gateway's tests.

- tool `log_then_wait` (argument `fifo`, a named pipe's path): sends an
  `info` log message, `waiting for the pipe`, then waits until something
  is written to the pipe and answers with it: the caller decides when the
  call ends, after it saw the message.

Usage: python streaming_server.py
"""

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("streaming")


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    schema = {"type": "object", "properties": {"fifo": {"type": "string"}}, "required": ["fifo"]}
    return [types.Tool(name="log_then_wait", description="Logs, then waits on a pipe", inputSchema=schema)]


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    session = server.request_context.session
    await session.send_log_message(level="info", data="waiting for the pipe", logger="streaming")
    # Opening a pipe for reading waits for its writer.
    async with await anyio.open_file(arguments["fifo"]) as pipe:
        written = await pipe.read()
    return [types.TextContent(type="text", text=f"the pipe said {written.strip()}")]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

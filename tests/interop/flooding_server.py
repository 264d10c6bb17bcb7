"""A server (Python `mcp` 1.x, low-level API, handshake era) that talks during its calls, for the gateway's relaying tests.

- tool `flood` (arguments `count` and `size`): sends `count` `info` log
  messages, the n-th (from 0) `n:` followed by `size` letters, then
  answers `flooded COUNT`;
- tool `ask_then_log`: elicits a `word` (a form), then sends an `info` log
  message `after the answer` and, when the call asked for progress, a
  progress report `after the answer` (1 of 1), and answers
  `the word was WORD`.

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
    return [
        types.Tool(name="flood", description="Logs COUNT messages of SIZE letters", inputSchema=schema),
        types.Tool(name="ask_then_log", description="Asks for a word, then logs", inputSchema={"type": "object"}),
    ]


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    session = server.request_context.session
    if name == "ask_then_log":
        schema = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
        answer = await session.elicit(message="A word?", requestedSchema=schema)
        word = (answer.content or {}).get("word", "")
        await session.send_log_message(level="info", data="after the answer", logger="flooding")
        meta = server.request_context.meta
        if meta is not None and meta.progressToken is not None:
            await session.send_progress_notification(meta.progressToken, 1.0, 1.0, "after the answer")
        return [types.TextContent(type="text", text=f"the word was {word}")]
    count, size = int(arguments["count"]), int(arguments["size"])
    for n in range(count):
        await session.send_log_message(level="info", data=f"{n}:" + "x" * size, logger="flooding")
    return [types.TextContent(type="text", text=f"flooded {count}")]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

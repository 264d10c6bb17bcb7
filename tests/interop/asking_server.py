"""A server (Python `mcp` 1.x, low-level API) that asks back and talks back, for mcpctl's tests.

- `tools/list`: answered after an `info` log message, `tools listed`, and
  a `notifications/elicitation/complete` for `e-listed`, an elicitation
  the client never saw (a client ignores it; `watch --follow` shows it);
- tool `bad_form`: elicits with a malformed form (a nested object property)
  and returns the action the client answered;
- tool `visit`: a URL-mode elicitation whose message and URL carry
  terminal escapes; returns the action;
- tool `visit_done`: a URL-mode elicitation (id `e-2`) that the server
  itself says is complete (`notifications/elicitation/complete`) while it
  waits for the answer; returns the action;
- tool `hostile`: an `error` log message and a form elicitation whose
  message, field title and logger carry HTML and script; returns the
  action and the content;
- `logging/setLevel`: answered after one log message at `debug` and one at
  `warning`, each sent only when at or above the level asked for;
- resource `note://counter` (subscribable): each read says `read N`; while
  subscribed, the first two reads are followed by
  `notifications/resources/updated` (sent before the read's answer).

Usage: python asking_server.py
"""

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

server = Server("asking")
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
state = {"reads": 0, "subscribed": False}


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    await server.request_context.session.send_log_message(
        level="info", data="tools listed", logger="asking"
    )
    await server.request_context.session.send_elicit_complete("e-listed")
    empty = {"type": "object", "properties": {}}
    return [
        types.Tool(name="bad_form", description="Asks with a malformed form", inputSchema=empty),
        types.Tool(name="visit", description="Asks to open a URL", inputSchema=empty),
        types.Tool(name="visit_done", description="Asks to open a URL, then says it is done", inputSchema=empty),
        types.Tool(name="hostile", description="Logs and asks with markup", inputSchema=empty),
    ]


HOSTILE = '<img src=x onerror="document.title=\'owned\'"><script>document.title="owned"</script>'


async def hostile(peer):
    await peer.send_log_message(level="error", data=HOSTILE + " in a log", logger="<b>asking</b>")
    result = await peer.elicit(
        HOSTILE + " What is your <b>name</b>?",
        {"type": "object", "properties": {"name": {"type": "string", "title": "<i>Name</i>"}}, "required": ["name"]},
    )
    return [types.TextContent(type="text", text=f"action: {result.action} content: {result.content}")]


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    session = server.request_context.session
    if name == "hostile":
        return await hostile(session)
    if name == "visit_done":
        answered = {}

        async def ask():
            answered["result"] = await session.elicit_url(
                "Pay for the order", "https://pay.example.org/checkout", "e-2"
            )

        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            await session.send_elicit_complete("e-2")
        return [types.TextContent(type="text", text=f"action: {answered['result'].action}")]
    if name == "bad_form":
        result = await session.elicit(
            "Where do you live?",
            {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}},
        )
    else:
        result = await session.elicit_url(
            "Sign in \x1b[31mhere\x1b[0m",
            "https://login.example.org/start?\x1b]0;owned\x07x=1",
            "e-1",
        )
    return [types.TextContent(type="text", text=f"action: {result.action}")]


@server.set_logging_level()
async def set_level(level: types.LoggingLevel) -> None:
    session = server.request_context.session
    asked = LEVELS.index(level)
    for sent, text in [("debug", "level set to " + level), ("warning", "disk \x1b[2Jalmost full")]:
        if LEVELS.index(sent) >= asked:
            await session.send_log_message(level=sent, data=text, logger="asking")


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    return [types.Resource(uri="note://counter", name="counter", mimeType="text/plain")]


@server.read_resource()
async def read_resource(uri):
    state["reads"] += 1
    if state["subscribed"] and state["reads"] <= 2:
        await server.request_context.session.send_resource_updated(uri)
    return f"read {state['reads']}"


@server.subscribe_resource()
async def subscribe(uri) -> None:
    state["subscribed"] = True


@server.unsubscribe_resource()
async def unsubscribe(uri) -> None:
    state["subscribed"] = False


async def main() -> None:
    async with stdio_server() as (read, write):
        options = server.create_initialization_options()
        options.capabilities.resources.subscribe = True
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)

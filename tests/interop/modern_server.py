"""An MCPServer (Python `mcp` 2.3.0) for interop tests of the 2026-07-28 era: dual-era unless --modern-only.

Usage: python modern_server.py stdio [--modern-only]
       python modern_server.py http --port N [--modern-only]   (Streamable HTTP on 127.0.0.1:N, path /mcp)

Runs in `.venv-modern` (tests/interop/requirements-modern.txt: mcp==2.3.0); the 1.x FastMCP
server (fastmcp_server.py) lives in `.venv`, since the two lines cannot share a venv.

Eras. Without a flag the SDK's own routing applies: over stdio the first request decides (a
request other than `initialize` whose `_meta` carries `io.modelcontextprotocol/protocolVersion`
opens a 2026-07-28 connection, anything else a handshake one); over HTTP a request whose
`MCP-Protocol-Version` header is not a handshake version goes to the SDK's modern single-exchange
entry, the rest to the stateful handshake-era transport (sessions, `Mcp-Session-Id`).
`--modern-only` removes the handshake era: over stdio the connection is served by the SDK's
2026-07-28 stream loop from the first byte (an `initialize` gets -32022 "the initialize handshake
is not accepted" with data {supported, requested}); over HTTP every request goes to the modern
entry, which refuses one without a modern `MCP-Protocol-Version` header through its own
classifier (JSON-RPC error body with the SDK's table-mapped HTTP status).

Tools:
  echo(text) -> text
  add(a: int, b: int) -> a + b
  ask_name() -> "Hello, NAME!"   asks the user for a name: at 2026-07-28 through MRTR (the first
                                 tools/call returns resultType "input_required" with an
                                 `elicitation/create` inputRequest; the client retries with
                                 inputResponses and requestState); in the handshake era as a
                                 mid-call `elicitation/create` request. Decline/cancel -> tool error.
  add_tool()                     registers `late_tool(text) -> "late: TEXT"` and announces it:
                                 `notifications/tools/list_changed` to `subscriptions/listen`
                                 subscribers (2026-07-28) or on the session (handshake era).

Readiness: over stdio nothing is printed; the server reads stdin at once. Over HTTP the server
prints nothing of its own; uvicorn logs "Uvicorn running on http://127.0.0.1:N" to stderr once it
is listening, but a test should poll the TCP port (connect to 127.0.0.1:N until it succeeds):
that is the signal this script guarantees.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Annotated

import anyio
from pydantic import BaseModel

from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve

server = MCPServer(
    "interop-modern",
    version="1.0.0",
    instructions="An MCPServer (mcp 2.3.0) used by interop tests of the 2026-07-28 era.",
)

# The handshake era's initialize result advertises tools.listChanged only when asked to (the
# 2026-07-28 capabilities derive it from subscriptions/listen being served); add_tool sends the
# notification in both eras, so advertise it in both.
_lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
_lowlevel.create_initialization_options = functools.partial(  # type: ignore[method-assign]
    type(_lowlevel).create_initialization_options, _lowlevel, NotificationOptions(tools_changed=True)
)


@server.tool()
def echo(text: str) -> str:
    """Return TEXT unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class NameForm(BaseModel):
    """The elicitation form ask_name sends."""

    name: str


def _ask_for_name() -> Elicit[NameForm]:
    return Elicit("What is your name?", NameForm)


@server.tool()
async def ask_name(answer: Annotated[NameForm, Resolve(_ask_for_name)]) -> str:
    """Ask the user for their name (elicitation) and greet them."""
    return f"Hello, {answer.name}!"


def late_tool(text: str) -> str:
    """A tool registered at runtime by add_tool."""
    return f"late: {text}"


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Register the tool `late_tool` at runtime and announce the tools list change."""
    if "late_tool" not in {tool.name for tool in await server.list_tools()}:
        server.add_tool(late_tool, name="late_tool")
    if (ctx.protocol_version or "") >= "2026-07-28":
        # 2026-07-28: fan out to subscriptions/listen streams (tagged with their subscriptionId).
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return "registered late_tool"


def _run_stdio_modern_only() -> None:
    """Serve stdio with the SDK's 2026-07-28 stream loop only (no era detection)."""
    from mcp.server.runner import _serve_modern_stream  # pyright: ignore[reportPrivateUsage]
    from mcp.server.stdio import stdio_server

    lowlevel = _lowlevel

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            async with lowlevel.lifespan(lowlevel) as lifespan_state:
                try:
                    await _serve_modern_stream(
                        lowlevel, read_stream, write_stream, lifespan_state=lifespan_state, raise_exceptions=False
                    )
                finally:
                    await write_stream.aclose()

    anyio.run(main)


def _run_http(port: int, modern_only: bool) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    if modern_only:
        from mcp.server._streamable_http_modern import handle_modern_request  # pyright: ignore[reportPrivateUsage]
        from mcp.server.transport_security import RequestBodyLimitMiddleware

        manager = server.session_manager

        async def modern_entry_only(scope, receive, send):  # type: ignore[no-untyped-def]
            # The manager normally sends only non-handshake MCP-Protocol-Version headers here;
            # sending everything makes the modern entry's classifier refuse the rest.
            await handle_modern_request(
                manager.app,
                manager.security_settings,
                manager.json_response,
                manager._lifespan_state,  # pyright: ignore[reportPrivateUsage]
                scope,
                receive,
                send,
            )

        manager.asgi_app = RequestBodyLimitMiddleware(modern_entry_only, manager.asgi_app.max_body_size)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="info")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, help="HTTP port on 127.0.0.1 (required for http)")
    parser.add_argument("--modern-only", action="store_true", help="serve only the 2026-07-28 era")
    args = parser.parse_args()
    if args.transport == "http":
        if args.port is None:
            parser.error("http needs --port N")
        _run_http(args.port, args.modern_only)
    elif args.modern_only:
        _run_stdio_modern_only()
    else:
        server.run("stdio")


if __name__ == "__main__":
    sys.exit(main())

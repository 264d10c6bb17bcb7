"""A FastMCP server (Python `mcp` 1.x) for the interop tests: one we did not write the SDK of.

Usage: python fastmcp_server.py stdio
       python fastmcp_server.py http PORT   (Streamable HTTP on 127.0.0.1:PORT/mcp)
"""

import sys

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("interop-fastmcp", instructions="A FastMCP server used by interop tests.")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def register_tool(name: str, ctx: Context) -> str:
    """Register a new tool called NAME at runtime and announce it."""

    def dynamic(text: str) -> str:
        return f"{name} says {text}"

    server.add_tool(dynamic, name=name, description=f"Added at runtime as {name}")
    await ctx.session.send_tool_list_changed()
    return f"registered {name}"


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        server.settings.host = "127.0.0.1"
        server.settings.port = int(sys.argv[2])
        server.run("streamable-http")
    else:
        server.run("stdio")

"""A server (Python `mcp` 1.x, low-level API, handshake era) whose prompt and resource ask back, for the gateway's tests.

- prompt `greet`: elicits a form with one string field, `name`, and
  answers with one user message, `Hello, NAME!` (or the action when the
  client did not accept);
- resource `note://roots`: lists the client's roots and reads as their
  URIs, one a line.

Usage: python prompting_server.py
"""

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.stdio import stdio_server

server = Server("prompting")


@server.list_prompts()
async def list_prompts() -> list[types.Prompt]:
    return [types.Prompt(name="greet", description="Greets whoever the client names")]


@server.get_prompt()
async def get_prompt(name: str, arguments: dict | None) -> types.GetPromptResult:
    result = await server.request_context.session.elicit(
        "Whom shall I greet?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    if result.action == "accept" and result.content:
        text = f"Hello, {result.content['name']}!"
    else:
        text = f"not greeted: {result.action}"
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))]
    )


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    return [types.Resource(uri="note://roots", name="roots", mimeType="text/plain")]


@server.read_resource()
async def read_resource(uri):
    roots = await server.request_context.session.list_roots()
    text = "\n".join(str(root.uri) for root in roots.roots)
    return [ReadResourceContents(content=text, mime_type="text/plain")]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

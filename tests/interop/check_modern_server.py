"""Developer check of modern_server.py with the Python SDK's own client (mcp 2.3.0); not part of CI.

Usage (from the repository root, after `bash .ci/run` or the `.venv-modern` lines of it):
    .venv-modern/bin/python tests/interop/check_modern_server.py

Starts modern_server.py over stdio and over Streamable HTTP (a free port on 127.0.0.1, polled
until it accepts), once dual-era and once with --modern-only, and with `mcp.Client(mode="auto")`
checks that the client lands on 2026-07-28, lists tools, calls echo, completes ask_name through
the elicitation callback (MRTR at 2026-07-28) and sees late_tool after add_tool through its
`subscriptions/listen` subscription. Then checks `mode="legacy"` (the initialize handshake)
against the dual-era server: tools, echo, ask_name (mid-call elicitation/create) and the
`notifications/tools/list_changed` add_tool sends on the session. Exits non-zero on failure.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio

import mcp.types as types
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
SERVER = HERE / "modern_server.py"
MODERN = "2026-07-28"
TIMEOUT = 30


async def answer_name(context, params):  # type: ignore[no-untyped-def]
    """Elicitation callback: accept with a fixed name."""
    assert "name" in str(params.requested_schema), params
    return types.ElicitResult(action="accept", content={"name": "Ada"})


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def http_server(*extra: str) -> Iterator[str]:
    """Run modern_server.py over HTTP; yield its URL once the port accepts connections."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"modern_server.py http exited with {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


def stdio(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio", *extra], env=dict(os.environ))


async def check_modern(target: StdioServerParameters | str, label: str) -> None:
    async with Client(target, mode="auto", elicitation_callback=answer_name, read_timeout_seconds=TIMEOUT) as client:
        assert client.protocol_version == MODERN, f"{label}: landed on {client.protocol_version}"
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"echo", "add", "ask_name", "add_tool"} <= names, names
        assert "late_tool" not in names, names
        assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
        assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
        assert text_of(await client.call_tool("ask_name", {})) == "Hello, Ada!"
        with anyio.fail_after(TIMEOUT):
            async with client.listen(tools_list_changed=True) as sub:
                assert text_of(await client.call_tool("add_tool", {})) == "registered late_tool"
                async for event in sub:
                    assert type(event).__name__ == "ToolsListChanged", event
                    break
        names = {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}
        assert "late_tool" in names, names
        assert text_of(await client.call_tool("late_tool", {"text": "x"})) == "late: x"
    print(f"ok  {label}: auto -> {MODERN}, echo, ask_name via MRTR, late_tool via subscriptions/listen")


async def check_legacy(target: StdioServerParameters | str, label: str) -> None:
    changed = anyio.Event()

    async def on_message(message) -> None:  # type: ignore[no-untyped-def]
        if isinstance(message, types.ToolListChangedNotification) or (
            getattr(message, "method", None) == "notifications/tools/list_changed"
        ):
            changed.set()

    async with Client(
        target,
        mode="legacy",
        elicitation_callback=answer_name,
        message_handler=on_message,
        read_timeout_seconds=TIMEOUT,
    ) as client:
        version = client.protocol_version
        assert version != MODERN, version
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"echo", "add", "ask_name", "add_tool"} <= names, names
        assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
        assert text_of(await client.call_tool("ask_name", {})) == "Hello, Ada!"
        assert text_of(await client.call_tool("add_tool", {})) == "registered late_tool"
        if label.startswith("stdio"):
            # Over HTTP the notification needs the client's standalone GET stream; not asserted there.
            with anyio.fail_after(TIMEOUT):
                await changed.wait()
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "late_tool" in names, names
    print(f"ok  {label}: legacy -> {version}, echo, ask_name via elicitation/create, late_tool")


async def main() -> None:
    await check_modern(stdio(), "stdio dual-era")
    await check_modern(stdio("--modern-only"), "stdio --modern-only")
    await check_legacy(stdio(), "stdio dual-era")
    with http_server() as url:
        await check_modern(url, "http dual-era")
    with http_server() as url:
        await check_legacy(url, "http dual-era")
    with http_server("--modern-only") as url:
        await check_modern(url, "http --modern-only")


if __name__ == "__main__":
    try:
        anyio.run(main)
    except BaseException as exc:  # noqa: BLE001 - report and fail
        if isinstance(exc, KeyboardInterrupt):
            raise
        import traceback

        traceback.print_exception(exc)
        print("FAILED", file=sys.stderr)
        sys.exit(1)
    print("all checks passed")

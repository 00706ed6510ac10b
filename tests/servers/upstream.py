"""A stdio upstream for the tests: every result shape, failures, sleeps, crashes, odd names."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from mcp.types import TextContent

mcp = FastMCP("testsrv")


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
def structured(n: int = 2) -> dict:
    """A structured result: a dict with a list."""
    return {"n": n, "items": list(range(n))}


@mcp.tool(output_schema=None)
def json_text() -> str:
    """A text result that holds JSON."""
    return json.dumps({"kind": "json-text", "values": [1, 2, 3]})


@mcp.tool(output_schema=None)
def plain_text() -> str:
    """A text result that is not JSON."""
    return "hello from plain text"


@mcp.tool(output_schema=None)
def two_blocks() -> list[TextContent]:
    """Two content blocks."""
    return [TextContent(type="text", text="first"), TextContent(type="text", text='{"second": 2}')]


@mcp.tool
def fail(message: str = "it broke") -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@mcp.tool
async def sleep(seconds: float) -> float:
    """Sleep, then return the seconds slept."""
    await asyncio.sleep(seconds)
    return seconds


_HELD = {"now": 0, "peak": 0, "arrived": 0}


@mcp.tool
async def hold(seconds: float) -> dict:
    """In flight for `seconds`: its order of arrival and the most calls in flight at once."""
    _HELD["arrived"] += 1
    order = _HELD["arrived"]
    _HELD["now"] += 1
    _HELD["peak"] = max(_HELD["peak"], _HELD["now"])
    try:
        await asyncio.sleep(seconds)
    finally:
        _HELD["now"] -= 1
    return {"order": order, "peak": _HELD["peak"]}


@mcp.tool
def spawn_helper() -> int:
    """Start a helper process in this server's process group; returns its pid."""
    return subprocess.Popen(["sleep", "300"]).pid


@mcp.tool
async def crash_after(seconds: float) -> str:
    """Work `seconds`, then kill this server process mid-call."""
    await asyncio.sleep(seconds)
    os._exit(3)


@mcp.tool
def crash() -> str:
    """Kill this server process mid-call."""
    os._exit(3)


@mcp.tool
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@mcp.tool
def env(name: str) -> str | None:
    """The value of an environment variable of this upstream (None when unset)."""
    return os.environ.get(name)


@mcp.tool(name="get-user")
def get_user_dash(user_id: int) -> dict:
    """Get a user (dashed name)."""
    return {"id": user_id, "via": "get-user"}


@mcp.tool(name="get_user")
def get_user_underscore(user_id: int) -> dict:
    """Get a user (underscored name, clashes with get-user)."""
    return {"id": user_id, "via": "get_user"}


@mcp.tool(name="class")
def klass() -> str:
    """A tool named after a Python keyword."""
    return "class ok"


@mcp.tool(description=f"Says what its key is: {os.environ.get('TOKEN', 'none')}.")
async def keyed(ctx: Context) -> str:
    """(A description that holds the key the config gave it, and a log line that does.)"""
    await ctx.warning(f"logging in with {os.environ.get('TOKEN', 'none')}")
    return "logged"


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")

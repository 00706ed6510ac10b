"""An upstream for the healing tests: over stdio, or over streamable HTTP with `--port N`.

With `--legacy` (HTTP only) it answers `server/discover` as a server that predates it,
so clients fall back to `initialize` and get a session id (2025-11-25); without it a
client negotiates the sessionless 2026-07-28 protocol.

It reports who it is (`boot`), counts the calls it saw cancelled (`stats`), sleeps on
request (`sleep`), and adds a tool at run time and tells the client (`add_tool`, which
sends `notifications/tools/list_changed`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from typing import Any

from fastmcp import Context, FastMCP
from fastmcp.server.middleware import Middleware
from mcp import types as mcp_types
from starlette.middleware import Middleware as AsgiMiddleware

mcp = FastMCP("healing")

_BOOT_ID = uuid.uuid4().hex
_STATS = {"started": 0, "cancelled": 0, "finished": 0}


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
def boot() -> dict:
    """This process: its pid and a random id chosen at start-up."""
    return {"pid": os.getpid(), "boot_id": _BOOT_ID}


@mcp.tool
async def sleep(seconds: float) -> float:
    """Sleep, then return the seconds slept; a cancelled sleep is counted in `stats`."""
    _STATS["started"] += 1
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _STATS["cancelled"] += 1
        raise
    _STATS["finished"] += 1
    return seconds


@mcp.tool
async def block(seconds: float) -> float:
    """Keep this whole process busy (its event loop blocked, so even a ping waits), then
    return the seconds blocked."""
    time.sleep(seconds)
    return seconds


@mcp.tool
def stats() -> dict:
    """How many `sleep` calls started, were cancelled and finished."""
    return dict(_STATS)


@mcp.tool
async def add_tool(name: str, ctx: Context) -> str:
    """Serve a new tool `name` (it answers "<name> ok") and send tools/list_changed."""

    def added() -> str:
        return f"{name} ok"

    mcp.tool(added, name=name, description=f"Added at run time: {name}.")
    await ctx.send_notification(mcp_types.ToolListChangedNotification())
    return name


class SlowListing(Middleware):
    """Every tools/list after the first keeps the process busy for `seconds` first."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.listed = 0

    async def on_list_tools(self, context: Any, call_next: Any) -> Any:
        self.listed += 1
        if self.listed > 1:
            time.sleep(self.seconds)
        return await call_next(context)


class LegacyOnly:
    """ASGI middleware: `server/discover` gets "method not found", as from an older server."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if isinstance(request, dict) and request.get("method") == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            payload = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": error})
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": payload.encode()})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--slow-list", type=float, default=0.0)
    options = parser.parse_args()
    if options.slow_list:
        mcp.add_middleware(SlowListing(options.slow_list))
    if options.port is None:
        mcp.run(show_banner=False)
    else:
        middleware = [AsgiMiddleware(LegacyOnly)] if options.legacy else None
        mcp.run(
            transport="http",
            host="127.0.0.1",
            port=options.port,
            show_banner=False,
            middleware=middleware,
        )

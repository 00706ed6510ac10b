"""fastmcp's own CodeMode over the demo notes server, as a stdio MCP server.

    python bench/servers/codemode_server.py [NOTES_SERVER.py]

A proxy of the notes upstream (one stdio session, kept open for the server's life, as
our gateway keeps one per upstream) with fastmcp's experimental `CodeMode` transform:
clients see `search`, `get_schema` and `execute`, whose code runs in pydantic-monty and
reaches the notes tools with `await call_tool("get-note", {...})`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.experimental.transforms.code_mode import CodeMode
from fastmcp.server import create_proxy

NOTES = Path(__file__).resolve().parents[2] / "examples" / "servers" / "notes_server.py"


async def serve(notes_server: Path) -> None:
    quiet = {"FASTMCP_LOG_LEVEL": "WARNING"}
    upstream = StdioTransport(sys.executable, [str(notes_server)], env=quiet, keep_alive=False)
    async with Client(upstream) as notes:
        # A connected client: the proxy reuses its session instead of spawning per request.
        server = create_proxy(notes, name="codemode")
        server.add_transform(CodeMode())
        await server.run_async(transport="stdio", show_banner=False)


if __name__ == "__main__":
    asyncio.run(serve(Path(sys.argv[1]) if len(sys.argv) > 1 else NOTES))

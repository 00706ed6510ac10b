"""A stdio MCP upstream serving tools read from a JSON spec file (see `bench/common.py`).

    python bench/servers/synthetic_server.py SPEC.json

Every tool answers with a small JSON echo of its name and arguments, after `sleep_ms`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools.base import Tool, ToolResult


class SpecTool(Tool):
    """A tool whose schema comes from the spec file rather than a Python function."""

    sleep_ms: float = 0

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        if self.sleep_ms:
            await asyncio.sleep(self.sleep_ms / 1000)
        return ToolResult(structured_content={"tool": self.name, "arguments": arguments})


def build(spec: dict[str, Any]) -> FastMCP:
    server = FastMCP(spec["name"])
    for tool in spec["tools"]:
        server.add_tool(
            SpecTool(
                name=tool["name"],
                description=tool["description"],
                parameters=tool["inputSchema"],
                sleep_ms=spec.get("sleep_ms", 0),
            )
        )
    return server


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        build(json.load(file)).run(show_banner=False)

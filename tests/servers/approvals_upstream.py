"""A stdio upstream whose tools carry MCP annotations: reads, writes and what they did.

With `BOARD_LOG`, every call of a destructive tool that reaches it appends a line to that file
(it outlives the process); with `BOARD_START_DELAY_S`, it answers `initialize` that much later.
"""

from __future__ import annotations

import os
import time

from fastmcp import FastMCP

mcp = FastMCP("board")
_posts: list[str] = []


@mcp.tool(annotations={"readOnlyHint": True})
def read_posts() -> list[str]:
    """Every post so far (read-only)."""
    return list(_posts)


@mcp.tool(annotations={"destructiveHint": True})
def post_message(text: str) -> int:
    """Post a message; returns how many posts there are."""
    _reached("post_message", text)
    _posts.append(text)
    return len(_posts)


@mcp.tool(annotations={"destructiveHint": True})
def delete_posts() -> int:
    """Delete every post; returns how many were deleted."""
    _reached("delete_posts", "")
    count = len(_posts)
    _posts.clear()
    return count


@mcp.tool(annotations={"destructiveHint": True, "readOnlyHint": True})
def contradictory() -> str:
    """Says it is destructive and read-only: read-only wins."""
    return "ok"


@mcp.tool
def plain() -> str:
    """No annotations at all."""
    return "plain"


def _reached(tool: str, text: str) -> None:
    log = os.environ.get("BOARD_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{tool} {text}\n")


if __name__ == "__main__":
    time.sleep(float(os.environ.get("BOARD_START_DELAY_S", "0")))
    mcp.run(show_banner=False)

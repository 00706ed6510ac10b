"""A stdio upstream whose tools carry MCP annotations: reads, writes and what they did."""

from __future__ import annotations

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
    _posts.append(text)
    return len(_posts)


@mcp.tool(annotations={"destructiveHint": True})
def delete_posts() -> int:
    """Delete every post; returns how many were deleted."""
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


if __name__ == "__main__":
    mcp.run(show_banner=False)

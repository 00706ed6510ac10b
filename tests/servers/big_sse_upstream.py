"""A fastmcp upstream over the older HTTP+SSE transport whose `big` tool returns `size` bytes.

`python big_sse_upstream.py --port N` serves it at `http://127.0.0.1:N/sse`.
"""

from __future__ import annotations

import argparse
import os

from fastmcp import FastMCP

mcp = FastMCP("big-sse")


@mcp.tool
def big(size: int) -> str:
    """A text of `size` bytes."""
    return "x" * size


@mcp.tool
def boot() -> dict:
    """This process's pid."""
    return {"pid": os.getpid()}


@mcp.tool
def echo(text: str) -> str:
    """The text unchanged."""
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    mcp.run(transport="sse", host="127.0.0.1", port=port, show_banner=False)

"""A small FastMCP app served by `stdio_serving.serve_stdio`; for its tests.

    python tests/servers/stdio_app.py [MAX_LINE_BYTES]

Its tool `stray` writes to this process's stdout three ways (print, fd 1, a child) and
answers "ok". After serving it writes one line to fd 1, then whether fd 0 and fd 1 are
blocking: the descriptors the server claimed must be the wire again, as they were.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from fastmcp import FastMCP

from mcp_code_mode import stdio_serving

app = FastMCP("stdio-app")


@app.tool
def stray() -> str:
    print("stray print")
    sys.stdout.flush()
    os.write(1, b"stray fd1\n")
    subprocess.run(["echo", "stray child"], check=True)
    return "ok"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        stdio_serving.MAX_LINE_BYTES = int(sys.argv[1])
    asyncio.run(stdio_serving.serve_stdio(app))
    os.write(1, f"after {os.get_blocking(0)} {os.get_blocking(1)}\n".encode())

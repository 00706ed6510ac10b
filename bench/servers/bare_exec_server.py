"""Baseline stdio MCP server: one tool, `execute(code)`, run with plain `eval`/`exec`.

    python bench/servers/bare_exec_server.py

What a code-execution tool costs with no sandbox, no worker process and no upstreams:
the floor under any gateway's `execute_code`. Never serve this to anything untrusted.
"""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

server = FastMCP("bare-exec")


@server.tool(output_schema=None)
async def execute(code: str) -> Any:
    """Evaluate `code` as an expression, or run it as statements and return `result`.

    `async`: fastmcp runs a plain function in a worker thread, which would raise the floor.
    """
    # Plain eval/exec in the server process: the point of the baseline, and no sandbox.
    try:
        compiled = compile(code, "<code>", "eval")
    except SyntaxError:
        namespace: dict[str, Any] = {}
        exec(compile(code, "<code>", "exec"), namespace)
        return namespace.get("result")
    return eval(compiled, {})


if __name__ == "__main__":
    server.run(show_banner=False)

"""A stdio upstream whose tool names become unusual identifiers: `_2fa`, and names such as
`format` or `mro` that the policy refuses on any other object."""

from __future__ import annotations

from collections.abc import Callable

from fastmcp import FastMCP

mcp = FastMCP("odd")


def _answering(name: str) -> Callable[[], str]:
    def tool() -> str:
        return f"{name} ok"

    return tool


for _name in ("2fa", "format", "start_server", "mro", "_private"):
    mcp.tool(_answering(_name), name=_name, description=f"Returns '{_name} ok'.")


if __name__ == "__main__":
    mcp.run(show_banner=False)

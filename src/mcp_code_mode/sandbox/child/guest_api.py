"""The guest API, declared once (contract §4): every function guest code finds without an
import, its parameters, what it returns, and the host query it asks.

Everything else is generated from `GUEST_API`: the names the worker binds (`GuestRuntime`
builds a function for a query row that has no method of its own), the calls the policy
lets guest code `await`, the `execute_code` description, the agent's prompt and the
README's table (a test compares them). Adding a discovery function is one row here plus
its handler in `run_router.RunRouter.query`.

Stdlib only: it is loaded inside the worker too.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "GUEST_API",
    "HOST_CALLS",
    "REQUIRED",
    "GuestFunction",
    "execute_code_summary",
    "prompt_lines",
    "readme_table",
]

REQUIRED = object()
"""A parameter without a default."""


@dataclass(frozen=True)
class GuestFunction:
    name: str
    params: tuple[tuple[str, object], ...]  # (name, default or REQUIRED)
    summary: str
    query: str | None = None  # the host query asked, when the function is a plain query
    variadic: str | None = None  # `*values` instead of params

    @property
    def signature(self) -> str:
        if self.variadic:
            return f"{self.name}(*{self.variadic})"
        shown = [n if d is REQUIRED else f"{n}={d!r}" for n, d in self.params]
        return f"{self.name}({', '.join(shown)})"


GUEST_API: tuple[GuestFunction, ...] = (
    GuestFunction(
        "call_tool",
        (("server", REQUIRED), ("tool", REQUIRED), ("args", None)),
        "call one upstream tool by its original MCP names; returns the unwrapped result",
    ),
    GuestFunction(
        "call_tools",
        (("calls", REQUIRED),),
        "`[(server, tool, args), ...]` concurrently; results in order, a failed call gives "
        "a `ToolError` in its slot",
    ),
    GuestFunction(
        "search_tools",
        (("query", REQUIRED), ("limit", 5)),
        "`[{server, tool, signature, description, score}]`, best first",
        query="search_tools",
    ),
    GuestFunction(
        "get_tool_docs",
        (("server", REQUIRED), ("tool", None), ("page", 1)),
        "a tool's Python stub, or a server's tools a page at a time",
        query="get_tool_docs",
    ),
    GuestFunction(
        "list_servers",
        (),
        "`[{name, description, status, tool_count, error}]`: every upstream and how it is doing",
        query="list_servers",
    ),
    GuestFunction(
        "log",
        (),
        "append a line to `logs` (and stream it to a client that asked for log messages)",
        variadic="values",
    ),
    GuestFunction(
        "progress",
        (("done", REQUIRED), ("total", None), ("message", None)),
        "report progress to a client that asked for it (MCP progress notifications); "
        "a no-op otherwise",
        query="progress",
    ),
)

HOST_CALLS = tuple(f.name for f in GUEST_API if f.variadic is None)
"""The guest functions that ask the host; `await f(...)` on them is a call."""


def execute_code_summary() -> str:
    """The guest API as the `execute_code` description lists it: names and required
    parameters only (tools/list is paid on every turn)."""
    brief = [
        "call_tools([(server, tool, args)]) (parallel)"
        if f.name == "call_tools"
        else f"{f.name}({', '.join(n for n, d in f.params if d is REQUIRED)})"
        for f in GUEST_API
    ]
    return ", ".join(["tools.<server>.<tool>(**kw)", *brief])


def prompt_lines() -> str:
    """The guest API as the agent's prompt lists it: one `signature: summary` per function."""
    return "; ".join(f"`{f.signature}`: {_plain(f.summary)}" for f in GUEST_API) + "."


def _plain(text: str) -> str:
    return text.replace("`", "")


def readme_table() -> list[str]:
    """The rows of the README's guest API table, after its header."""
    first = "call an upstream tool; returns the unwrapped result"
    rows = [f"| `tools.<server>.<tool>(**kwargs)` | {first} |"]
    rows += [f"| `{f.signature}` | {f.summary} |" for f in GUEST_API]
    rows += [
        "| `input` | the `input` argument of `execute_code` |",
        "| `ToolError` | raised by a failed call; `.server`, `.tool`, `.message` |",
    ]
    return rows

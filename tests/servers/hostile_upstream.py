"""A hostile stdio upstream for the boundary tests: it replies with whatever it is told to.

Its replies hold what a careless or malicious server sends: JSON text with escaped lone
surrogates, huge and deeply nested values, raw JSON-RPC lines that are not valid UTF-16
once decoded. It also reports who it is (`boot`) so a test can tell whether the gateway
restarted it, and how many of its calls ran at once (`slow`, `inflight`).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import uuid
from pathlib import Path

import pydantic_core
from fastmcp import Context, FastMCP
from fastmcp.tools.base import ToolResult
from mcp.types import TextContent

mcp = FastMCP("hostile")

_BOOT_ID = uuid.uuid4().hex
_STORE: dict[str, str] = {}
_STATS = {"inflight": 0, "max_inflight": 0, "calls": 0, "largest_arg": 0}


def _seen(*texts: str) -> None:
    _STATS["calls"] += 1
    _STATS["largest_arg"] = max([_STATS["largest_arg"], *(len(t) for t in texts)])


@mcp.tool
def boot() -> dict:
    """This process: its pid and a random id chosen at start-up."""
    return {"pid": os.getpid(), "boot_id": _BOOT_ID}


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    _seen(text)
    return text


@mcp.tool
def length(text: str) -> int:
    """The number of characters received."""
    _seen(text)
    return len(text)


@mcp.tool
def store(key: str, value: str) -> int:
    """Keep `value` under `key`; returns its length."""
    _seen(key, value)
    _STORE[key] = value
    return len(value)


@mcp.tool
def fetch(key: str) -> str | None:
    """The value stored under `key` (None when unset)."""
    return _STORE.get(key)


@mcp.tool(output_schema=None)
def reply(text: str) -> ToolResult:
    """Send `text` back verbatim as the only text content block (no structured content)."""
    _seen(text)
    return ToolResult(content=[TextContent(type="text", text=text)])


@mcp.tool(output_schema=None)
def reply_structured(json_text: str) -> ToolResult:
    """Parse `json_text` here and send the value as structured content."""
    _seen(json_text)
    value = json.loads(json_text)
    _sendable(value)
    return ToolResult(
        content=[TextContent(type="text", text="structured")],
        structured_content=value if isinstance(value, dict) else {"result": value},
    )


@mcp.tool(output_schema=None)
def make(kind: str, n: int = 0) -> ToolResult:
    """Build a large or deep reply here, so the request stays small.

    kinds: huge_text (n chars), huge_list (n ints, structured), deep_text ('['*n + ']'*n as
    text), deep_structured (a dict nested n deep), wide_dict (n keys, structured),
    control_text (NUL and C0/C1 controls, n times).
    """
    if kind == "huge_text":
        return ToolResult(content=[TextContent(type="text", text="x" * n)])
    if kind == "huge_list":
        return ToolResult(
            content=[TextContent(type="text", text="list")],
            structured_content={"items": list(range(n))},
        )
    if kind == "deep_text":
        return ToolResult(content=[TextContent(type="text", text="[" * n + "]" * n)])
    if kind == "deep_structured":
        value: dict = {}
        for _ in range(n):
            value = {"a": value}
        _sendable(value)
        return ToolResult(content=[TextContent(type="text", text="deep")], structured_content=value)
    if kind == "wide_dict":
        return ToolResult(
            content=[TextContent(type="text", text="wide")],
            structured_content={f"k{i}": "v" * 10 for i in range(n)},
        )
    if kind == "control_text":
        return ToolResult(
            content=[TextContent(type="text", text=("\x00\x01\x1b[2J\x7f\x85\u2028" * n))]
        )
    raise ValueError(f"unknown kind {kind!r}")


def _sendable(value: object) -> None:
    """Fail the call (not this process's stdout writer) when fastmcp could not serialise it.

    Checked inside a few extra levels: the JSON-RPC envelope adds depth of its own.
    """
    pydantic_core.to_json([[[[[[[[value]]]]]]]])


def _wire_fd() -> int:
    """The descriptor of the real stdout pipe (the MCP SDK points fd 1 at stderr while serving)."""
    stderr_target = os.readlink("/proc/self/fd/2")
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            info = Path(f"/proc/self/fdinfo/{fd}").read_text()
            is_pipe = stat.S_ISFIFO(os.fstat(fd).st_mode)
        except OSError:
            continue
        write_only = int(info.split("flags:")[1].split()[0], 8) & os.O_ACCMODE == os.O_WRONLY
        if fd > 2 and is_pipe and write_only and target != stderr_target:
            return fd
    raise RuntimeError("stdout pipe not found")


@mcp.tool(output_schema=None)
async def raw_wire(json_object: str, ctx: Context) -> str:
    """Answer this call with a hand-written JSON-RPC line carrying `json_object` as-is.

    `json_object` is spliced into the line unparsed, so escapes such as `"\\ud83d"` reach the
    gateway exactly as a non-Python server (e.g. Node's JSON.stringify) would send them. No
    other answer follows until the call is cancelled.
    """
    text = json.dumps(json_object)
    line = (
        '{"jsonrpc":"2.0","id":'
        + json.dumps(ctx.request_id)
        + ',"result":{"content":[{"type":"text","text":'
        + text
        + "}],"
        + '"structuredContent":'
        + json_object
        + ',"isError":false,"resultType":"complete"}}\n'
    )
    os.write(_wire_fd(), line.encode("ascii"))
    await asyncio.sleep(3600)
    return "late"


@mcp.tool(
    output_schema={
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}, "u": {"uniqueItems": True}},
    }
)
def backtracking(n: int, items: int = 0) -> ToolResult:
    """A result its own output schema is slow to check: `n` a's and a `!` against `^(a+)+$`
    (exponential in `n` with a backtracking engine), `items` dicts under `uniqueItems`."""
    value = {"s": "a" * n + "!", "u": [{"i": k} for k in range(items)]}
    text = TextContent(type="text", text=json.dumps(value))
    return ToolResult(content=[text], structured_content=value)


@mcp.tool
async def log(text: str, level: str, count: int, ctx: Context) -> int:
    """Send `count` log messages of `text` (numbered) at `level`, unasked; returns `count`."""
    for i in range(count):  # the session's own send: `ctx.log` also logs it here, slowly
        name = f"\x1b]0;title\x07{i}"
        await ctx.session.send_log_message(level, f"{i}:{text}", logger=name)  # type: ignore[arg-type]
    return count


@mcp.tool
async def slow(seconds: float = 0.2) -> int:
    """Sleep while counting calls in flight; returns how many were in flight on entry."""
    _STATS["inflight"] += 1
    _STATS["max_inflight"] = max(_STATS["max_inflight"], _STATS["inflight"])
    try:
        now = _STATS["inflight"]
        await asyncio.sleep(seconds)
        return now
    finally:
        _STATS["inflight"] -= 1


@mcp.tool
def stats(reset: bool = False) -> dict:
    """Calls in flight now, the most seen at once, calls served, longest text argument."""
    snapshot = dict(_STATS)
    if reset:
        _STATS.update(max_inflight=_STATS["inflight"], largest_arg=0)
    return snapshot


if __name__ == "__main__":
    mcp.run(show_banner=False)

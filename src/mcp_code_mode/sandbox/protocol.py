"""Messages on the pipe between the host and a worker: one JSON object per line.

Host → worker: `init`, then one `run`, then `reply`s to the worker's requests.
Worker → host: `ready`, then `call` / `query` requests, then `done`.
Stdlib only: the worker imports this module.
"""

from __future__ import annotations

import json
from typing import IO, Any, Literal, NotRequired, TypedDict

__all__ = [
    "CallRequest",
    "DoneMessage",
    "ErrorInfo",
    "InitMessage",
    "Outcome",
    "QueryRequest",
    "ReplyMessage",
    "RunMessage",
    "decode",
    "decode_off_loop",
    "encode",
    "write_message",
]

QueryKind = Literal["search_tools", "get_tool_docs", "list_servers"]


class InitMessage(TypedDict):
    op: Literal["init"]
    allowed_imports: list[str]
    memory_mb: int


class RunMessage(TypedDict):
    op: Literal["run"]
    code: str
    input: Any
    index: dict[str, Any]  # server identifier -> {"name", "tools": {tool id: name}, "error"?}
    timeout_s: float
    max_output_chars: int
    seed: NotRequired[int]  # for `random`, from the host's entropy


class ToolCallSpec(TypedDict):
    server: str
    tool: str
    args: dict[str, Any]


class CallRequest(TypedDict):
    op: Literal["call"]
    id: int
    calls: list[ToolCallSpec]


class QueryRequest(TypedDict):
    op: Literal["query"]
    id: int
    kind: QueryKind
    args: dict[str, Any]


class Outcome(TypedDict):
    """The result of one call or query: `value` when ok, else `error` (and maybe `fatal`)."""

    ok: bool
    value: NotRequired[Any]
    error: NotRequired[str]
    fatal: NotRequired[str]  # an ErrorType that ends the run (e.g. TOOL_CALL_LIMIT)


class ReplyMessage(TypedDict):
    op: Literal["reply"]
    id: int
    results: list[Outcome]


class ErrorInfo(TypedDict):
    type: str
    message: str
    line: int | None


class DoneMessage(TypedDict):
    op: Literal["done"]
    ok: bool
    result: Any
    stdout: str
    logs: list[str]
    error: ErrorInfo | None
    submitted: NotRequired[bool]  # the result holds SUBMIT(**fields) (sessions only)


_INLINE_BYTES = 1 << 20


def encode(message: Any) -> bytes:
    """One message as a JSON line."""
    # ASCII escapes: a lone surrogate in guest output must not break the encoding.
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """Parse one line; anything but a JSON object is a protocol error (ValueError)."""
    try:
        message = json.loads(line)
    except RecursionError:  # nested deeper than the parser goes
        raise ValueError("protocol message nested too deeply") from None
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        raise ValueError("protocol message must be a JSON object with an 'op'")
    return message


async def decode_off_loop(line: bytes) -> dict[str, Any]:
    """`decode`, in a thread when the line is large: a guest's 60 MB batch of calls must
    not stall the event loop that serves every other run (host side only)."""
    if len(line) < _INLINE_BYTES:
        return decode(line)
    import asyncio  # not at module level: the worker imports this module too

    return await asyncio.to_thread(decode, line)


def write_message(stream: IO[bytes], message: Any) -> None:
    """Write and flush one message (worker side, blocking)."""
    stream.write(encode(message))
    stream.flush()

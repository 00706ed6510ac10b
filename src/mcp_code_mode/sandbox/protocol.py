"""Messages on the pipe between the host and a worker: one JSON object per line.

Host → worker: `init`, then one `run`, then `reply`s to the worker's requests.
Worker → host: `ready`, then `call` / `query` requests, then `done`.
Host → zygote: `init`, then `index` and `fork` requests (see `zygote.main`).
A Pyodide runner serves run after run: after `done`, the host sends `reset`, and the runner
answers `ready` (fresh again, with the token from its `init`) or `retired` (and exits).
Stdlib only: the worker imports this module.

The guest index (server identifier -> {"name", "tools": {tool id: name}, "error"?}) has a
version. A worker keeps the last index it got, inherited from its zygote (which got it in an
`index` message) or carried by a `run`; a `run` without `index` uses that one.
"""

from __future__ import annotations

import json
from typing import IO, Any, Literal, NotRequired, TypedDict

__all__ = [
    "BATCH_BUDGET",
    "BATCH_PIECE_BYTES",
    "DECODE_BUDGET",
    "MAX_NAME_CHARS",
    "PROGRESS_MESSAGE_CHARS",
    "CallRequest",
    "ChildMessage",
    "DoneMessage",
    "ErrorCode",
    "ErrorInfo",
    "HostMessage",
    "IndexMessage",
    "InitMessage",
    "Outcome",
    "PauseMessage",
    "QueryRequest",
    "ReadyMessage",
    "ReplyMessage",
    "ResetMessage",
    "RetiredMessage",
    "RunMessage",
    "RunnerInitMessage",
    "SnapshotMessage",
    "as_child_message",
    "decode",
    "decode_cost",
    "decode_parts",
    "encode",
    "json_bytes_at_least",
    "over_limit",
    "write_message",
]

MAX_NAME_CHARS = 1000
"""The longest server or tool name a call may give: the worker cuts a longer one just past
it (a 20 MB name was a 20 MB line for the host to parse), the host refuses it unsent."""

PROGRESS_MESSAGE_CHARS = 1000
"""Of a `progress()` message, what the worker sends; the host shows 200 once it has
redacted them (a secret the worker's cut split is dropped there: `redact_cut`)."""

BATCH_PIECE_BYTES = 1 << 20
"""A `call_tools` batch goes to the host in messages of about this much JSON (one call may
be larger), each but the last marked `more`: the host then parses no line larger than a
piece or one call (a batch of 60 calls of 1 MB was one 60 MB line, parsed in one C call
that held the gateway's event loop 0.2-0.4 s; one of 70 went past `LINE_LIMIT` and ended
a legal run)."""

DECODE_BUDGET = 128 << 20
"""What one message may cost the host as Python objects, estimated by `decode_cost` before
it is parsed: tiny values expand (`[]` is 2 bytes of JSON and about 64 of list), and 30 MB
of `[[],[],...]` took the gateway to 3 GB (outside attack 54)."""

BATCH_BUDGET = 64 << 20
"""What a batch's pieces together may cost the host (`decode_cost`): it holds them until
the last (1,000 legal calls of 1 MB held 1 GB: outside attack 89). The worker refuses the
calls past it unsent; the host ends a worker that sends more."""

QueryKind = Literal["search_tools", "get_tool_docs", "list_servers", "progress"]


class InitMessage(TypedDict):
    """Host → zygote (or Pyodide runner): what to preload."""

    op: Literal["init"]
    allowed_imports: list[str]


class RunnerInitMessage(InitMessage):
    """Host → Pyodide runner: also the guest runtime's sources and the wheels to install."""

    files: dict[str, str]
    root: str
    wheels: dict[str, str]
    token: str  # proves a later `ready` comes from the runner, not from guest code
    max_runs: int  # the runner retires after this many runs (0: no limit)


class IndexMessage(TypedDict):
    """Host → zygote: the guest index the workers it forks from now on start with."""

    op: Literal["index"]
    version: int
    index: dict[str, Any]


class ReadyMessage(TypedDict):
    """Worker → host: confined and waiting for its `run`."""

    op: Literal["ready"]
    pid: int
    token: NotRequired[str]  # a Pyodide runner's, from its `init`


class RunMessage(TypedDict):
    """Host → worker: one snippet to run."""

    op: Literal["run"]
    code: str
    input: Any
    index_version: int
    index: NotRequired[dict[str, Any]]  # absent: the worker's last index is this version
    timeout_s: float
    max_output_chars: int
    max_call_bytes: NotRequired[int]  # the worker refuses far larger arguments unsent
    seed: NotRequired[int]  # for `random`, from the host's entropy
    session: NotRequired[bool]  # a dspy interpreter session: keep the namespace
    variables: NotRequired[dict[str, Any]]  # a session's injected variables


class ToolCallSpec(TypedDict):
    server: str
    tool: str
    args: dict[str, Any]
    refused: NotRequired[str]  # why the worker did not send the arguments: not made, recorded


class CallRequest(TypedDict):
    """Worker → host: calls to make at once. A batch's pieces carry its `batch` number; with
    `more`, only a piece: the host holds its calls, answers with no results, and makes the
    whole batch at its last piece (held calls of another batch are dropped: guest code
    that caught an error between two pieces had them made with its next call, attack 90)."""

    op: Literal["call"]
    id: int
    calls: list[ToolCallSpec]
    batch: NotRequired[int]
    more: NotRequired[bool]
    total: NotRequired[int]  # on a batch's first piece: its calls in all, admitted at once


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


ErrorCode = Literal[
    "POLICY_VIOLATION",
    "SYNTAX_ERROR",
    "RUNTIME_ERROR",
    "TIMEOUT",
    "MEMORY_LIMIT",
    "OUTPUT_LIMIT",
    "TOOL_CALL_LIMIT",
    "TOOL_ERROR",
    "EXECUTOR_ERROR",
]
"""`error.type` as the worker spells it: the values of `errors.ErrorType`, which the host
side owns (a test keeps the two equal; the worker cannot import the host's modules)."""


class ErrorInfo(TypedDict):
    type: ErrorCode
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


class PauseMessage(TypedDict):
    """Host → worker, while it waits for a reply: a person is being asked; stop the clock."""

    op: Literal["pause"]


class ResetMessage(TypedDict):
    """Host → Pyodide runner, after its `done`: restore the state runs start from."""

    op: Literal["reset"]


HostMessage = (
    InitMessage | RunnerInitMessage | RunMessage | ReplyMessage | PauseMessage | ResetMessage
)
"""What the host sends a worker."""


class SnapshotMessage(TypedDict):
    """Pyodide runner → host: its memory snapshot is written."""

    op: Literal["snapshot"]


class RetiredMessage(TypedDict):
    """Pyodide runner → host, instead of `ready` after a `reset`: it cannot be made fresh
    (why, for the log) and exits."""

    op: Literal["retired"]
    reason: str


ChildMessage = (
    ReadyMessage | CallRequest | QueryRequest | DoneMessage | SnapshotMessage | RetiredMessage
)
"""What a worker sends the host."""

# The keys each message from a worker must have (the host trusts nothing it sends).
_CHILD_KEYS: dict[str, tuple[str, ...]] = {
    "ready": ("pid",),
    "call": ("id", "calls"),
    "query": ("id", "kind", "args"),
    "done": ("ok", "result", "stdout", "logs", "error"),
    "snapshot": (),  # a Pyodide runner made its memory snapshot
    "retired": ("reason",),  # a Pyodide runner that could not be reset
}


def encode(message: Any) -> bytes:
    """One message as a JSON line."""
    # ASCII escapes: a lone surrogate in guest output must not break the encoding.
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes, *, yielding: bool = False) -> dict[str, Any]:
    """Parse one line; anything but a JSON object is a protocol error (ValueError).

    `yielding`: in a thread beside an event loop, numbers are made by Python code, where
    the thread gives the loop its turns; parsed in C, 14,000 integers of 4,299 digits held
    the GIL for 2.7 s (outside attack 84), 3.5 million floats 0.7 s (attack 85)."""
    try:
        if yielding:
            message = json.loads(line, parse_int=_int, parse_float=_float)
        else:
            message = json.loads(line)
    except RecursionError:  # nested deeper than the parser goes
        raise ValueError("protocol message nested too deeply") from None
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        raise ValueError("protocol message must be a JSON object with an 'op'")
    return message


def decode_cost(text: bytes) -> int:
    """An upper estimate of `text` parsed, in bytes: a container's object and a slot for
    every value (a float's own 24 bytes included), a string's object (56 bytes a pair of
    quotes: short strings cost twice what was counted, attack 90), plus the text's
    characters at the widest a string of it may hold them (`decode_parts`). Brackets,
    commas and quotes inside strings count too: text full of them is overestimated. Over
    pieces of one width, the sum over pieces of a text is the text's (the worker counts a
    batch as the host will)."""
    shape, chars, width = decode_parts(text)
    return shape + width * chars


def decode_parts(text: bytes) -> tuple[int, int, int]:
    """`text`'s containers, values and strings as bytes of objects; at most how many
    characters it decodes to; and how many bytes each may take in a `str`.

    One character past U+00FF makes each of its string's characters 2 bytes, one past
    U+FFFF 4 (a 10 MB string of ASCII and one escaped emoji parses to 40 MB, counted 10
    before; a batch of such calls held 4 times its budget). Which string holds it is not
    read (that is a Python loop per string): the widest escape sets the text's width. A
    `\\uXXXX` escape is one character of 6 bytes. A worker writes ASCII; other bytes are
    taken at the widest."""
    containers = _count(text, b"[") + _count(text, b"{")
    values = _count(text, b",") + containers
    shape = containers * 64 + values * 32 + _count(text, b'"') * 28
    marks = _count(text, b"\\u") if b"\\" in text else 0  # `\\u`, escapes or not
    escapes = marks - _count(text, b"\\\\u") if marks else 0  # not after an escaped `\\`
    chars = len(text) - 5 * escapes
    if not text.isascii():
        return shape, chars, 4
    if not marks:
        return shape, chars, 1
    if _count(text, b"\\ud") or _count(text, b"\\uD"):  # surrogates: past U+FFFF
        return shape, chars, 4
    return shape, chars, 1 if _count(text, b"\\u00") == marks else 2


def _count(text: bytes, part: bytes) -> int:
    """`text.count(part)`, a window at a time: in a thread, each call holds the GIL for at
    most a window (2-4 ms a MB where matches are dense)."""
    if len(text) <= _COUNT_WINDOW:
        return text.count(part)
    tail = len(part) - 1  # a match that starts in a window is counted in it, whole
    return sum(
        text.count(part, start, start + _COUNT_WINDOW + tail)
        for start in range(0, len(text), _COUNT_WINDOW)
    )


_COUNT_WINDOW = 1 << 20


def _int(text: str) -> int:
    return int(text)


def _float(text: str) -> float:
    return float(text)


def as_child_message(message: dict[str, Any]) -> ChildMessage:
    """`message` as a worker's message, once its `op` and keys are checked (ValueError)."""
    keys = _CHILD_KEYS.get(message["op"])
    if keys is None:
        raise ValueError(f"unknown message {message['op']!r}")
    missing = [key for key in keys if key not in message]
    if missing:
        raise ValueError(f"{message['op']!r} message without {', '.join(missing)}")
    return message  # type: ignore[return-value]  # checked above


def write_message(stream: IO[bytes], message: Any) -> None:
    """Write and flush one message (worker side, blocking)."""
    stream.write(encode(message))
    stream.flush()


def over_limit(args: Any, max_bytes: int) -> str | None:
    """Why `args` are surely over `max_bytes` of JSON (MCP_CODE_MAX_CALL_BYTES), by a lower
    bound on their size counted only until it passes the limit, or None when they may fit.
    Work bounded by the limit, never by the value: the worker refuses by it before it sends,
    the host before it copies, records or measures (exactly, which converts every integer
    to digits: quadratic in C, outside attack 84)."""
    bound = json_bytes_at_least(args, max_bytes)
    if bound <= max_bytes:
        return None
    return (
        f"the arguments are at least {bound:,} bytes of JSON, over the {max_bytes:,} allowed "
        "(MCP_CODE_MAX_CALL_BYTES)"
    )


def json_bytes_at_least(value: Any, stop: int) -> int:
    """A lower bound on `value`'s size as JSON, counted until it passes `stop`: each node
    adds at least a byte, so no more than `stop` nodes are visited (see `over_limit`;
    outside attacks 82-83)."""
    total, stack = 0, [value]
    while stack and total <= stop:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, bool) or item is None:
            total += 4
        elif isinstance(item, int):
            total += max(1, item.bit_length() * 3 // 10)
        elif isinstance(item, float):
            total += len(float.__repr__(item))  # as JSON writes it: up to 24 bytes (attack 83)
        elif isinstance(item, dict):
            total += 1 + 2 * len(item)  # braces, a colon and a comma per key
            if total <= stop:  # keys as they are: an int key is written as its digits
                stack.extend(item.values())
                stack.extend(item)
        elif isinstance(item, list | tuple):
            total += 1 + len(item)  # brackets and commas
            if total <= stop:
                stack.extend(item)
        else:
            total += 1
    return total

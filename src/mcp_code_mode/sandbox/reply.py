"""The last step of every run: make its result object safe and small enough to send.

Whatever a guest (or a broken worker) produced, `bound_reply` gives back a contract §3
object that the MCP layer can encode and that stays within MCP_CODE_MAX_OUTPUT_CHARS
plus `REPLY_OVERHEAD_CHARS` as JSON text (contract §7):

- text UTF-8 cannot encode becomes U+FFFD; a result nested deeper than the serialisers
  take fails the run with EXECUTOR_ERROR;
- more than 20 tool calls are grouped per (server, tool) (§6), at most `_MAX_GROUPS`
  groups, names clipped: `tool_calls` costs a few lines, not one per call;
- error messages are clipped; stdout and logs that still do not fit are cut and the
  run ends with OUTPUT_LIMIT.

`code_time` and `waited_before`: a run's wait for upstreams to start, within its limit and
counted in its reply.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..encodable import (
    CLIP_MARK,
    MAX_DEPTH,
    TooDeep,
    clip,
    encodable_text,
    make_encodable,
    one_line,
)
from ..errors import ErrorType
from ..offload import offloaded
from .base import ErrorDetail, ExecutionResult, ToolCallGroup, ToolCallRecord
from .protocol import json_bytes_at_least

__all__ = [
    "REPLY_OVERHEAD_CHARS",
    "WIRE_BYTES",
    "Redactor",
    "bound_reply",
    "bounded",
    "code_time",
    "fitted",
    "group_calls",
    "off_the_loop",
    "refused_request",
    "waited_before",
    "wire_bytes",
    "wire_limit",
]

REPLY_OVERHEAD_CHARS = 4096
"""What a reply may hold beyond MCP_CODE_MAX_OUTPUT_CHARS as JSON text: keys, tool_calls,
the error. Sizes are measured as JSON text, where a NUL takes six characters."""

_LISTED_CALLS = 20  # beyond this many calls, tool_calls is grouped
_MAX_GROUPS = 20  # beyond this many (server, tool) pairs, the rest share one group
_NAME_CHARS = 64  # of a server or tool name in tool_calls, as JSON text
_SHORT_NAME_CHARS = 16  # when even that does not fit
_ERROR_CHARS = 800  # of the error message, as JSON text
_OTHERS = "(others)"
_NAMED_LATE = 5  # upstreams still starting a note names, past which it counts them
_WAIT_NOTED_S = 5.0  # a run that waited this long before its code ran says so in its logs
_CODE_SHARE_S = 2.0  # of a run's limit, what is kept for its code past a wait (or a quarter)
_UNCOUNTED_WAIT_S = 0.1  # a wait this short leaves the code the whole limit
_NOTE_CHARS = 400  # of each line the gateway puts first in a run's logs
_INVALID_REQUEST = -32600  # JSON-RPC's code for a request refused as it is
_MAX_LINE = 1_000_000  # no guest code has more lines (MCP_CODE_MAX_LINES is far below)
WIRE_BYTES = 960_000  # of a reply as MCP sends it: the SDK's client reads events to 1 MiB
_ESCAPED_MAX = 26  # bytes a character may take as MCP sends a reply (an emoji, escaped twice)
_WIRE_TRIES = 4


class Redactor(Protocol):
    """What a reply's text passes through (`config.GatewayConfig`): `redact` for text
    whole, `redact_cut` for text cut short before it came (contract §7)."""

    def redact(self, text: str) -> str: ...

    def redact_cut(self, text: str) -> str: ...


async def bounded(
    result: ExecutionResult,
    max_output_chars: int,
    redact: Redactor | None = None,
    notes: Sequence[str] = (),
) -> ExecutionResult:
    """`bound_reply`, on the offload thread when the result is large."""
    if off_the_loop(result.result, result.stdout, result.logs):
        return await offloaded(bound_reply, result, max_output_chars, redact, notes)
    return bound_reply(result, max_output_chars, redact, notes)


def off_the_loop(*values: Any) -> bool:
    """Whether a run's report is large enough to be read and bounded off the event loop:
    33,000 log lines took 60-70 ms of it, 100,000 with redaction 3 s (outside attack 88)."""
    return json_bytes_at_least(values, _LARGE) > _LARGE


_LARGE = 16 * 1024


def bound_reply(
    result: ExecutionResult,
    max_output_chars: int,
    redact: Redactor | None = None,
    notes: Sequence[str] = (),
) -> ExecutionResult:
    """`result` made encodable and bounded in size (see the module docstring); with
    `redact`, every text in it (result, stdout, logs, error) passed through it first: a
    secret an upstream handed back must not reach the client (contract §7). The gateway's
    `notes` go first in its logs, each clipped, within the reply's overhead, not the code's
    limit (outside attack 140: a note turned a run that fit into OUTPUT_LIMIT)."""
    result = result.model_copy()
    result.tool_calls = group_calls(result.tool_calls)
    result.stdout = encodable_text(result.stdout)
    result.logs = [encodable_text(line) for line in result.logs]
    try:
        # two levels less: the reply object holds it, and the MCP layer walks it whole
        result.result = make_encodable(result.result, max_depth=MAX_DEPTH - 2)
    except TooDeep as exc:
        _fail(result, ErrorType.EXECUTOR_ERROR, f"{exc} (return a flatter value)")
    if redact is not None:
        _redact(result, redact)
    if _size(result.result, result.stdout, result.logs) > max_output_chars:
        _cut(result, max_output_chars)
    said = [redact.redact(one_line(note)) if redact else one_line(note) for note in notes]
    result.logs = [_clip_json(note, _NOTE_CHARS) for note in said] + result.logs  # redacted whole
    if result.error is not None:
        message = _clip_json(encodable_text(result.error.message), _ERROR_CHARS)
        line = result.error.line
        if line is not None and not 0 < line < _MAX_LINE:  # a broken worker's number
            line = None
        result.error = result.error.model_copy(update={"message": message, "line": line})
    if _size(result.to_json()) > max_output_chars + REPLY_OVERHEAD_CHARS:
        result.tool_calls = [
            call.model_copy(
                update={
                    "server": _name(call.server, _SHORT_NAME_CHARS),
                    "tool": _name(call.tool, _SHORT_NAME_CHARS),
                }
            )
            for call in result.tool_calls
        ]
    excess = _size(result.to_json()) - max_output_chars - REPLY_OVERHEAD_CHARS
    if excess > 0:  # what is left over the bound comes out of stdout and logs
        _cut(result, max(0, max_output_chars - excess))
    return result


async def fitted(result: ExecutionResult, max_output_chars: int) -> ExecutionResult:
    """`result` within what MCP may send over HTTP (`_fit_the_wire`), off the event loop
    when it is large; a small one fits by far. Over stdio replies are not escaped: a
    90,000-character CJK result that fit there was cut (review 150)."""
    if not off_the_loop(result.result, result.stdout, result.logs):
        return result
    return await offloaded(_fitted, result, max_output_chars)


def _fitted(result: ExecutionResult, max_output_chars: int) -> ExecutionResult:
    result = result.model_copy()
    _fit_the_wire(result, wire_limit(max_output_chars))
    return result


def wire_limit(max_output_chars: int) -> int:
    """What a reply may take as MCP sends it (`wire_bytes`): 960,000 bytes, or three times
    the output limit when that is larger (a user who raised it asked for more)."""
    return max(WIRE_BYTES, 3 * (max_output_chars + REPLY_OVERHEAD_CHARS))


def _fit_the_wire(result: ExecutionResult, limit: int) -> None:
    """Cut stdout and logs (OUTPUT_LIMIT) until the reply, as MCP sends it, takes at most
    `limit` bytes: the object twice (text and structured), and from MCP 2026-07-28 on, over
    HTTP, every non-ASCII character escaped (`\\ud83d\\ude00`: 26 bytes an emoji in all).
    60,000 emoji of logs, within the character limit, made a 1.4 MB event that the SDK's
    client (1 MiB at most) could not read: no result at all (outside attack 148)."""
    for _ in range(_WIRE_TRIES):
        plain = _size(result.result, result.stdout, result.logs)
        wire = wire_bytes(result.to_json())
        if wire <= limit:
            return
        _cut(result, plain * limit // wire * 9 // 10, why=f"{limit} bytes as MCP sends it")
    _cut(result, 0, why=f"{limit} bytes as MCP sends it")


def wire_bytes(data: Any) -> int:
    """A reply object's size as MCP sends it at most (see `_fit_the_wire`); exact only
    past `_ESCAPED_MAX` characters, where it may matter."""
    plain = _size(data)
    if plain * _ESCAPED_MAX <= WIRE_BYTES:
        return plain * _ESCAPED_MAX
    return len(json.dumps(data)) + len(json.dumps(json.dumps(data, ensure_ascii=False)))


def _redact(result: ExecutionResult, redactor: Redactor) -> None:
    """Every text redacted; stdout the worker cut at the output limit, and an error message
    it clipped, without a secret's start where they were cut (attack 91: 239 of a
    300-character secret's characters were kept at stdout's end)."""
    redact, error = redactor.redact, result.error
    cut = error is not None and error.type is ErrorType.OUTPUT_LIMIT
    result.stdout = (redactor.redact_cut if cut else redact)(result.stdout)
    result.logs = [redact(line) for line in result.logs]
    result.result = _redacted(result.result, redact)
    if error is not None:
        clipped = CLIP_MARK.search(error.message) is not None
        message = (redactor.redact_cut if clipped else redact)(error.message)
        result.error = error.model_copy(update={"message": message})


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """An encodable value with every string in it redacted (keys too); no deeper than
    `make_encodable` let it be."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    if isinstance(value, dict):
        return {redact(k): _redacted(v, redact) for k, v in value.items()}
    return value


def group_calls(
    calls: Sequence[ToolCallRecord | ToolCallGroup],
) -> list[ToolCallRecord | ToolCallGroup]:
    """The calls as issued when there are at most 20, else one group per (server, tool)."""
    if len(calls) <= _LISTED_CALLS:
        return [
            call.model_copy(update={"server": _name(call.server), "tool": _name(call.tool)})
            for call in calls
        ]
    own = _own_groups(calls)
    groups: dict[tuple[str, str], ToolCallGroup] = {}
    for call in calls:
        key = (call.server, call.tool)
        if key not in own:
            key = (_OTHERS, _OTHERS)
        group = groups.get(key)
        if group is None:
            group = ToolCallGroup(
                server=_name(key[0]), tool=_name(key[1]), count=0, failed=0, ms=0.0, ok=True
            )
            groups[key] = group
        count = call.count if isinstance(call, ToolCallGroup) else 1
        failed = call.failed if isinstance(call, ToolCallGroup) else int(not call.ok)
        group.count += count
        group.failed += failed
        group.ms = round(group.ms + call.ms, 1)
        group.ok = group.failed == 0
    return list(groups.values())


def _own_groups(calls: Sequence[ToolCallRecord | ToolCallGroup]) -> set[tuple[str, str]]:
    """The (server, tool) pairs that get a group of their own: those with a call that
    succeeded first, then the rest, each in first-call order (outside attack 137: twenty
    unknown names called first put a write that reached its upstream in `(others)`)."""
    first: dict[tuple[str, str], bool] = {}
    for call in calls:
        succeeded = call.count > call.failed if isinstance(call, ToolCallGroup) else call.ok
        key = (call.server, call.tool)
        first[key] = first.get(key, False) or succeeded
    ranked = sorted(first, key=lambda key: not first[key])  # stable: first-call order kept
    return set(ranked[:_MAX_GROUPS])


def _name(name: str, limit: int = _NAME_CHARS) -> str:
    return _clip_json(encodable_text(name), limit)


def _clip_json(text: str, limit: int) -> str:
    """`text` cut so that its JSON form stays near `limit` characters, saying so."""
    if len(text) * 6 + 2 <= limit or _size(text) <= limit:
        return text
    kept = text[:limit]
    while kept and _size(kept) > limit - 40:
        kept = kept[: len(kept) * 2 // 3]
    return clip(kept + text[len(kept) :], len(kept))


def _size(*values: Any) -> int:
    return len(json.dumps(values, ensure_ascii=False))


def _fail(result: ExecutionResult, error_type: ErrorType, message: str) -> None:
    result.ok = False
    result.result = None
    result.error = ErrorDetail(type=error_type, message=message, line=None)


def _cut(result: ExecutionResult, max_output_chars: int, why: str = "") -> None:
    """Keep what fits of stdout (half the budget at most) and logs; OUTPUT_LIMIT."""
    if result.error is None or result.error.type is not ErrorType.OUTPUT_LIMIT:
        _fail(
            result,
            ErrorType.OUTPUT_LIMIT,
            f"the reply (stdout + logs + result) exceeded {why or f'{max_output_chars} characters'}"
            " (raise MCP_CODE_MAX_OUTPUT_CHARS, or return less)",
        )
    result.result = None
    budget = max_output_chars // 2
    stdout = result.stdout
    while stdout and _size(stdout) > budget:
        stdout = stdout[: len(stdout) * 2 // 3]
    result.stdout = stdout
    budget = max_output_chars - _size(stdout)
    kept: list[str] = []
    for line in result.logs:
        budget -= _size(line) + 1
        if budget < 0:
            break
        kept.append(line)
    result.logs = kept


def code_time(limit_s: float, waited_s: float | None = None) -> float:
    """Of a run's `limit_s`, what its upstreams may take to start (`waited_s` None), or
    what is left to its code once they took `waited_s`: a run ends at its limit, wait
    included (outside attack 140: 10 s of a 5 s limit), and its code has at least a
    quarter of it, or 2 s, to fail clearly on an upstream still starting."""
    if waited_s is None:
        return limit_s - min(limit_s / 4, _CODE_SHARE_S)
    return limit_s if waited_s < _UNCOUNTED_WAIT_S else max(limit_s - waited_s, 0.01)


def waited_before(
    result: ExecutionResult, waited_s: float, limit_s: float, starting: Callable[[], list[str]]
) -> list[str]:
    """Count in `duration_ms` the time the code waited for upstreams to start before it ran;
    a TIMEOUT says it was of the run's `limit_s`; past 5 s, or when some are `starting()`
    still (their calls failed), a note for its logs that says so (attack 138: 30 s, unsaid)."""
    result.duration_ms = round(result.duration_ms + waited_s * 1000, 1)
    error, code_s = result.error, code_time(limit_s, waited_s)
    if error is not None and error.type is ErrorType.TIMEOUT and code_s != limit_s:
        said = f"its {limit_s:g}s time limit ({waited_s:.1f} s of it waiting for upstreams)"
        message = error.message.replace(f"its {code_s:g}s time limit", said, 1)
        result.error = error.model_copy(update={"message": message})
    if waited_s < _UNCOUNTED_WAIT_S:
        return []
    late = [clip(name, 100) for name in starting()]
    if waited_s < _WAIT_NOTED_S and not late:
        return []
    more = "" if len(late) <= _NAMED_LATE else f" and {len(late) - _NAMED_LATE} more"
    still = f"; {', '.join(late[:_NAMED_LATE])}{more} still starting: a larger timeout_s waits"
    note = f"gateway: the code waited {waited_s:.1f} s for upstreams to start before it ran"
    return [note + (still + " longer" if late else "")]


def refused_request(method: str | None, why: str) -> dict[str, Any]:
    """What a request refused before it was read (too long) is answered with: a tool call,
    its result object (contract §7: a limit the host meets is an error value, not a
    protocol error; over HTTP it was a 413 error: outside attack 140), else an error."""
    if method != "tools/call":
        return {"error": {"code": _INVALID_REQUEST, "message": why}}
    failed = ExecutionResult.failure(ErrorType.EXECUTOR_ERROR, why).to_json()
    text = {"type": "text", "text": json.dumps(failed)}
    result = {"content": [text], "structuredContent": failed, "isError": True}
    return {"result": {**result, "resultType": "complete"}}  # the key 2026-07-28 wants

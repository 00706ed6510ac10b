"""Run records: the dataclasses a run is kept as, and the limits every stored text obeys.

Stdlib only. `clip` bounds a text and makes it storable; `as_stored` applies the limits to
a whole record. What it does not do: leave secrets out (callers do) or escape text for HTML
or a terminal (done where it is shown).
"""

from __future__ import annotations

import json
import math
import operator
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypeVar

__all__ = [
    "CALL_COLUMNS",
    "MAX_CALL_CHARS",
    "MAX_TEXT_CHARS",
    "RUN_COLUMNS",
    "CallRecord",
    "RunRecord",
    "RunSummary",
    "as_stored",
    "call_rows",
    "clip",
    "list_where",
    "run_row",
]

MAX_TEXT_CHARS = 20_000  # a run's code, input, stdout, logs, result and error
MAX_CALL_CHARS = 2_000  # a call's arguments and error
_NAME_CHARS = 200  # every other text: ids, clients, servers, tools, error types, approvals
_MAX_CALLS = 10_000  # calls kept of one run (MCP_CODE_MAX_TOOL_CALLS=0 is no limit)
# A run's calls' texts in all, in UTF-8 bytes; past it, a call keeps a stub of each (999
# failing calls of 5 KB arguments stored 2.3 MB a run: outside attacks 107 and 109).
_RUN_CALL_BYTES = 200_000
_STUB_CHARS = 40
_INT64 = 2**63  # SQLite INTEGER, PostgreSQL bigint
_EARLIER_CUT = re.compile(r"… \[([0-9]{1,18}) more characters cut\]\Z")
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")  # surrogates (sqlite3 refuses), NUL (PostgreSQL)


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, ending with how many were cut, each surrogate
    and NUL made U+FFFD. The work is linear in `limit`, whatever the length of `text`."""
    limit = max(limit, 0)
    if len(text) <= limit:
        return _storable(text)
    earlier = 0  # a text clipped before (a stub of a clipped name) counts its first cut too
    mark = _EARLIER_CUT.search(text, max(len(text) - 48, 0))
    if mark is not None:
        earlier, text = int(mark.group(1)), text[: mark.start()]
    marker = "… [{} more characters cut]"
    whole = len(text) + earlier
    kept = max(limit - len(marker.format(whole)), 0)  # the final marker is no longer
    return (_storable(text[:kept]) + marker.format(whole - kept))[:limit]


def _storable(text: str) -> str:
    return _UNSTORABLE.sub("\ufffd", text) if _UNSTORABLE.search(text) else text


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord:
    """One upstream call of a run; `arguments` is JSON text with secret values left out."""

    order: int
    server: str
    tool: str
    arguments: str
    ok: bool
    error: str | None = None
    started_ms: float = 0.0  # after the run's start
    ms: float = 0.0
    bytes_in: int = 0
    bytes_out: int = 0
    approval: str | None = None  # "asked: approved", "auto: not asked", ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One finished run: what was asked, what came out, every upstream call in order."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    kind: Literal["execute_code", "run_task"]
    started: float  # epoch seconds
    ended: float
    client: str
    code: str
    input: str = ""
    ok: bool
    error_type: str | None = None
    error: str | None = None
    error_line: int | None = None
    stdout: str = ""
    logs: str = ""
    result: str = ""
    calls: list[CallRecord] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)  # code, reply, upstream_results, ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """A row of the run list."""

    id: str
    kind: Literal["execute_code", "run_task"]
    started: float
    duration_ms: float
    client: str
    ok: bool
    error_type: str | None
    calls: int
    failed_calls: int
    tokens_saved: int  # upstream result tokens the reply did not carry, at least 0


_Record = TypeVar("_Record", RunRecord, CallRecord)
_LONG_FIELDS = {"code", "input", "error", "stdout", "logs", "result", "arguments"}
# A field's annotation: what `as_stored` makes of it (None: nothing or its own rule), else text.
_KINDS: dict[str, type | None] = {"float": float, "int": int, "int | None": int, "bool": None}
_KINDS.update({"list[CallRecord]": None, "dict[str, int]": None})
_LIMITS = {  # per record type: each text or number field, its type, a text's length limit
    kind: tuple(
        (f.name, _KINDS.get(str(f.type), str), long if f.name in _LONG_FIELDS else _NAME_CHARS)
        for f in fields(kind)
        if _KINDS.get(str(f.type), str) is not None
    )
    for kind, long in ((RunRecord, MAX_TEXT_CHARS), (CallRecord, MAX_CALL_CHARS))
}


def as_stored(record: _Record) -> _Record:
    """`record` as it is stored: texts clipped, numbers finite and within 64 bits, at most
    `_MAX_CALLS` calls. A call that needs none of it is itself (a run has many)."""
    changes: dict[str, Any] = {}
    for name, kind, limit in _LIMITS[type(record)]:
        value: Any = getattr(record, name)
        stored: Any
        if value is None:
            continue
        if kind is str:
            stored = clip(str(value), limit)
        elif kind is float:
            stored = float(value) if math.isfinite(value) else 0.0
        else:
            stored = _int64(value)
        if stored is not value:
            changes[name] = stored
    if isinstance(record, RunRecord):
        changes["calls"] = _calls_stored(_kept(record.calls))
        changes["tokens"] = {clip(k, _NAME_CHARS): _int64(n) for k, n in record.tokens.items()}
    return replace(record, **changes) if changes else record


def _kept(calls: list[CallRecord]) -> list[CallRecord]:
    """At most `_MAX_CALLS` of a run's calls, in order: the first half of that, then of
    the rest those with an approval decision, those that succeeded and the last ones; and
    a last entry saying how many are not kept (outside attack 137: past 10,000 failed calls
    an approved write that reached its upstream was dropped without a word)."""
    if len(calls) <= _MAX_CALLS:
        return calls
    head, rest = calls[: _MAX_CALLS // 2], calls[_MAX_CALLS // 2 :]
    ranked = sorted(range(len(rest)), key=lambda i: (not rest[i].approval, not rest[i].ok, -i))
    chosen = [rest[i] for i in sorted(ranked[: _MAX_CALLS - len(head) - 1])]
    note = (
        f"{len(rest) - len(chosen):,} of the run's {len(calls):,} calls are not kept (a run "
        f"keeps {_MAX_CALLS:,}: the first {len(head):,}, then those with an approval "
        "decision, those that succeeded and the last)"
    )
    last = CallRecord(
        order=calls[-1].order + 1,
        server="(gateway)",
        tool="(not kept)",
        arguments="",
        ok=False,
        error=note,
    )
    return [*head, *chosen, last]


def _calls_stored(calls: list[CallRecord]) -> list[CallRecord]:
    stored, used = [], 0
    for call in calls:
        kept = as_stored(call)
        if used >= _RUN_CALL_BYTES:
            kept = _stubs(kept)
        texts = (kept.server, kept.tool, kept.arguments, kept.error or "")
        used += sum(len(text.encode()) for text in texts)
        stored.append(kept)
    return stored


def _stubs(call: CallRecord) -> CallRecord:
    return replace(
        call,
        server=clip(call.server, _STUB_CHARS),
        tool=clip(call.tool, _STUB_CHARS),
        arguments=clip(call.arguments, _STUB_CHARS),
        error=None if call.error is None else clip(call.error, _STUB_CHARS),
    )


def _int64(value: int) -> int:
    if type(value) is int and -_INT64 <= value < _INT64:
        return value
    return min(max(int(value), -_INT64), _INT64 - 1)


# The stored columns, in order: a run's (then `tokens` as JSON and the list's counts), a call's.
RUN_COLUMNS = tuple(f.name for f in fields(RunRecord) if f.name not in ("calls", "tokens"))
CALL_COLUMNS = tuple(f.name for f in fields(CallRecord))
_CALL_VALUES = operator.attrgetter(*CALL_COLUMNS)


def run_row(run: RunRecord) -> tuple[object, ...]:
    """The run's columns, then its tokens as JSON and the list's counts (calls, failed calls,
    tokens saved), as every backend keeps them."""
    failed = sum(not call.ok for call in run.calls)
    saved = run.tokens.get("upstream_results", 0) - run.tokens.get("reply", 0)
    tokens = json.dumps(run.tokens)
    return (*(getattr(run, n) for n in RUN_COLUMNS), tokens, len(run.calls), failed, max(saved, 0))


def call_rows(runs: Sequence[RunRecord]) -> list[tuple[object, ...]]:
    """Every call of `runs`: its run's id, then its columns, as every backend keeps them."""
    return [(run.id, *_CALL_VALUES(call)) for run in runs for call in run.calls]


def list_where(
    *,
    ok: bool | None,
    client: str | None,
    before: float | None,
    before_id: str | None,
    mark: str,
    seq: str,
) -> tuple[str, list[object]]:
    """A run list's WHERE clause and its parameters, for a backend whose placeholder is
    `mark` and whose column `seq` orders runs started at the same time: good or failed
    runs (`ok`), one `client`'s, those listed after the run started at `before` (epoch s)
    whose id is `before_id` (without it: all started before then), as pages follow."""
    clauses: list[str] = ["1 = 1"]
    params: list[object] = []
    for clause, value in ((f"ok = {mark}", ok), (f"client = {mark}", client)):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    if before is not None and before_id is None:
        clauses.append(f"started < {mark}")
        params.append(before)
    elif before is not None:
        last = f"COALESCE((SELECT {seq} FROM runs WHERE id = {mark}), -1)"  # gone: -1
        clauses.append(f"(started, {seq}) < ({mark}, {last})")  # a row value: the index serves
        params += [before, before_id]
    return " AND ".join(clauses), params

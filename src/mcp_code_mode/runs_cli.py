"""`mcp-code-mode runs [--last N] [ID] [--json]`: the recorded runs (contract §10), read from
the store the gateway writes (MCP_CODE_RUNS_DB: a SQLite file or a PostgreSQL URL, else
runs.sqlite3 in the cache folder), newest first, or one run with its nested calls in order.

Text from the store is shown cleaned (no escapes or control characters reach the terminal).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

from .encodable import clean_text, clip, one_line
from .errors import CodeModeError
from .runs import (
    RunRecord,
    RunStoreBackend,
    RunSummary,
    open_backend,
    shown_location,
    store_location,
)
from .settings import Settings

__all__ = ["show_runs", "store_path"]

_PREVIEW_CHARS = 200


def store_path(settings: Settings) -> str | Path:
    """Where the gateway records runs with these settings: a SQLite file or a PostgreSQL URL
    (shown by `shown_location`, without its password)."""
    return store_location(settings.runs_db, settings.cache_dir)


def show_runs(settings: Settings, *, last: int, run_id: str | None, as_json: bool) -> int:
    """Print the newest `last` runs, or the run `run_id`; 1 when it is not kept."""
    location = store_path(settings)
    store = open_backend(location)
    if run_id is not None:
        run = store.get(run_id) or _shortened(store, run_id, location)
        print(json.dumps(dataclasses.asdict(run)) if as_json else _detail(run))
        return 0
    runs = store.list_runs(max(last, 0), ok=None, client=None, before=None)
    if as_json:
        print(json.dumps([dataclasses.asdict(row) for row in runs]))
    elif not runs:
        print(
            f"no runs recorded yet in {shown_location(location)}{_unmade(location)}",
            file=sys.stderr,
        )
    else:
        print("\n".join(_row(row) for row in runs))
    return 0


def _shortened(store: RunStoreBackend, run_id: str, location: str | Path) -> RunRecord:
    """The one kept run whose id starts with `run_id` (as git takes a commit's first
    letters; a new user copied the first column's start and got "no run")."""
    ids = store.ids_starting(run_id.strip().lower(), 2) if run_id.strip() else []
    run = store.get(ids[0]) if len(ids) == 1 else None
    if run is not None:
        return run
    where = shown_location(location)
    if ids:
        raise CodeModeError(
            f"several runs kept in {where} start with {run_id!r}: give more of the id"
        )
    raise CodeModeError(f"no run {run_id!r} is kept in {where}")


def _unmade(location: str | Path) -> str:
    """Why a SQLite store that is not there cannot be made either, if so (attack 136: "no
    runs recorded yet" where no run could ever be recorded)."""
    if not isinstance(location, Path) or location.exists():
        return ""
    folder = next((p for p in location.parents if p.exists()), None)
    if folder is not None and folder.is_dir() and os.access(folder, os.W_OK | os.X_OK):
        return ""
    return (
        f"; none can be: {folder} is not a folder this user may write"
        " (set MCP_CODE_RUNS_DB or MCP_CODE_CACHE_DIR)"
    )


def _when(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


def _row(run: RunSummary) -> str:
    outcome = "ok" if run.ok else (run.error_type or "error")
    calls = f"{run.calls} calls" + (f" ({run.failed_calls} failed)" if run.failed_calls else "")
    row = clean_text(
        f"{run.id}  {_when(run.started)}  {run.duration_ms / 1000:6.2f} s  {outcome:<16} "
        f"{calls:<20} {run.tokens_saved:>7} tokens saved  {run.kind}  {run.client or '-'}"
    )
    return " ".join(row.splitlines())  # one row a run: a client's name made a second one


def _detail(run: RunRecord) -> str:
    took = run.ended - run.started
    head = [
        f"run {run.id} ({run.kind}) by {run.client or 'an unnamed client'}",
        f"started {_when(run.started)}, took {took:.2f} s, "
        + ("ok" if run.ok else f"failed: {run.error_type}"),
    ]
    if run.error:
        line = f" (line {run.error_line})" if run.error_line else ""
        head.append(f"error{line}: {_indented(run.error)}")
    if run.tokens:
        head.append("tokens: " + ", ".join(f"{k} {v}" for k, v in run.tokens.items()))
    parts = ["\n".join(head), _numbered(run.code)]
    if run.calls:
        parts.append("\n".join(_call(call) for call in run.calls))
    for label, text in (("stdout", run.stdout), ("logs", run.logs), ("result", run.result)):
        if text:
            parts.append(f"{label}:\n  {_indented(text, '  ')}")
    return clean_text("\n\n".join(parts))


def _numbered(code: str) -> str:
    return "\n".join(f"{n:4} | {line}" for n, line in enumerate(code.splitlines(), 1))


def _indented(text: str, pad: str = "    ") -> str:
    """`text`'s lines after its first indented by `pad`: no line of it reads as one of the
    view's own (outside attack 137: a run's error forged a second "started" line)."""
    return ("\n" + pad).join(clean_text(text).splitlines())


def _call(call: Any) -> str:
    """One line a call, whatever its names, arguments or error hold (outside attack 137:
    line breaks in them printed call lines that were never made); arguments say when cut."""
    state = "ok" if call.ok else f"failed: {one_line(call.error or '')}"
    approval = f"  approval: {one_line(call.approval)}" if call.approval else ""
    arguments = one_line(clip(call.arguments, _PREVIEW_CHARS))
    return (
        f"#{call.order:<3} +{call.started_ms:8.1f} ms {call.ms:8.1f} ms  "
        f"{one_line(call.server)}.{one_line(call.tool)}({arguments}) {state}, "
        f"{call.bytes_out} bytes{approval}"
    )

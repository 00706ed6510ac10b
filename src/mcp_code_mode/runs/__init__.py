"""Run records: every `execute_code` and `run_task` run, kept so people can look at it (§10).

`records` (the dataclasses and text limits, stdlib only), `backend` (the `RunStoreBackend`
seam), `sqlite` (the SQLite backend) and `store` (`RunStore`: one writer thread, retention,
a broken store costing runs, not exceptions), `trace` (one run gathered as it runs) and
`recorder` (the gateway's seam: a trace per run, the store opened on the first).
"""

from __future__ import annotations

from .backend import RunStoreBackend, RunStoreError
from .recorder import Recorder
from .records import MAX_CALL_CHARS, MAX_TEXT_CHARS, CallRecord, RunRecord, RunSummary, clip
from .sqlite import SQLiteRunBackend
from .store import DEFAULT_KEEP, RunStore, default_path
from .trace import ArgumentsMode, CallTrace, RunKind, RunTrace

__all__ = [
    "DEFAULT_KEEP",
    "MAX_CALL_CHARS",
    "MAX_TEXT_CHARS",
    "ArgumentsMode",
    "CallRecord",
    "CallTrace",
    "Recorder",
    "RunKind",
    "RunRecord",
    "RunStore",
    "RunStoreBackend",
    "RunStoreError",
    "RunSummary",
    "RunTrace",
    "SQLiteRunBackend",
    "clip",
    "default_path",
]

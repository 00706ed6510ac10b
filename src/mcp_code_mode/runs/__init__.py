"""Run records: every `execute_code` and `run_task` run, kept so people can look at it (§10).

`records` (the dataclasses and text limits, stdlib only), `backend` (the `RunStoreBackend`
seam), `sqlite` (the SQLite backend) and `store` (`RunStore`: one writer thread, retention,
a broken store costing runs, not exceptions).
"""

from __future__ import annotations

from .backend import RunStoreBackend, RunStoreError
from .records import MAX_CALL_CHARS, MAX_TEXT_CHARS, CallRecord, RunRecord, RunSummary, clip
from .sqlite import SQLiteRunBackend
from .store import DEFAULT_KEEP, RunStore, default_path

__all__ = [
    "DEFAULT_KEEP",
    "MAX_CALL_CHARS",
    "MAX_TEXT_CHARS",
    "CallRecord",
    "RunRecord",
    "RunStore",
    "RunStoreBackend",
    "RunStoreError",
    "RunSummary",
    "SQLiteRunBackend",
    "clip",
    "default_path",
]

"""Run records: every `execute_code` and `run_task` run, kept so people can look at it (§10).

`records` (the dataclasses and text limits, stdlib only), `backend` (the `RunStoreBackend`
seam), `sqlite` and `postgres` (the backends; psycopg is imported only when a PostgreSQL store
is used), `location` (MCP_CODE_RUNS_DB: a file or a URL, and its backend), `store`
(`RunStore`: one writer thread, retention, a broken store costing runs, not exceptions),
`trace` (one run gathered as it runs) and `recorder` (the gateway's seam: a trace per run,
the store opened on the first).
"""

from __future__ import annotations

from .backend import RunStoreBackend, RunStoreError
from .location import default_path, is_postgres_url, open_backend, shown_location, store_location
from .postgres import PostgresRunBackend
from .recorder import Recorder
from .records import MAX_CALL_CHARS, MAX_TEXT_CHARS, CallRecord, RunRecord, RunSummary, clip
from .sqlite import SQLiteRunBackend
from .store import DEFAULT_KEEP, RunStore
from .trace import ArgumentsMode, CallTrace, RunKind, RunTrace

__all__ = [
    "DEFAULT_KEEP",
    "MAX_CALL_CHARS",
    "MAX_TEXT_CHARS",
    "ArgumentsMode",
    "CallRecord",
    "CallTrace",
    "PostgresRunBackend",
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
    "is_postgres_url",
    "open_backend",
    "shown_location",
    "store_location",
]

"""The seam where runs are kept: the `RunStoreBackend` Protocol and its one error.

SQLite is `SQLiteRunBackend`; a PostgreSQL backend fits beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..errors import CodeModeError
from .records import RunRecord, RunSummary

__all__ = ["RunStoreBackend", "RunStoreError"]


class RunStoreError(CodeModeError):
    """The run store cannot be opened, written or read."""


class RunStoreBackend(Protocol):
    """Where runs are kept. The store's writer thread alone calls `open` (create the store or
    check its schema version), `write` (clipped runs, in one transaction; a run recorded
    again replaces the first), `prune` (all but the newest `keep` runs, unless `keep` is 0,
    and those started before `started_before` go) and `close`; any thread or process calls
    `list_runs`, `get` and `ids_starting` (the ids of up to `limit` kept runs that start
    with `prefix`, for a shortened id). Each raises `RunStoreError` for a store it
    cannot use."""

    def open(self) -> None: ...
    def write(self, runs: Sequence[RunRecord]) -> None: ...
    def prune(self, *, keep: int, started_before: float | None) -> None: ...
    def list_runs(
        self,
        last: int,
        *,
        ok: bool | None,
        client: str | None,
        before: float | None,
        before_id: str | None = None,
    ) -> list[RunSummary]: ...
    def get(self, run_id: str) -> RunRecord | None: ...
    def ids_starting(self, prefix: str, limit: int) -> list[str]: ...
    def close(self) -> None: ...

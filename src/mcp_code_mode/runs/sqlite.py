"""`SQLiteRunBackend`: runs in one SQLite file in WAL mode, its schema and row mapping."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .backend import RunStoreError
from .records import (
    CALL_COLUMNS,
    RUN_COLUMNS,
    CallRecord,
    RunRecord,
    RunSummary,
    call_rows,
    list_where,
    run_row,
)

__all__ = ["SQLiteRunBackend"]

_BUSY_S = 5.0  # how long to wait for another connection's write lock (two gateways)
_SCHEMA_VERSION = 1
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, kind TEXT NOT NULL,
        started REAL NOT NULL, ended REAL NOT NULL, client TEXT NOT NULL, code TEXT NOT NULL,
        input TEXT NOT NULL, ok INTEGER NOT NULL, error_type TEXT, error TEXT,
        error_line INTEGER, stdout TEXT NOT NULL, logs TEXT NOT NULL, result TEXT NOT NULL,
        tokens TEXT NOT NULL, calls INTEGER NOT NULL, failed_calls INTEGER NOT NULL,
        tokens_saved INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS runs_by_started ON runs (started)",
    "CREATE INDEX IF NOT EXISTS runs_by_client ON runs (client, started)",
    """CREATE TABLE IF NOT EXISTS calls (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, "order" INTEGER NOT NULL,
        server TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL, ok INTEGER NOT NULL,
        error TEXT, started_ms REAL NOT NULL, ms REAL NOT NULL, bytes_in INTEGER NOT NULL,
        bytes_out INTEGER NOT NULL, approval TEXT)""",
    'CREATE INDEX IF NOT EXISTS calls_by_run ON calls (run_id, "order")',
)
_INSERT_RUN = f"INSERT INTO runs VALUES ({', '.join('?' * (len(RUN_COLUMNS) + 4))})"
_INSERT_CALL = f"INSERT INTO calls VALUES ({', '.join('?' * (len(CALL_COLUMNS) + 1))})"
_NEWEST_FIRST = "ORDER BY started DESC, rowid DESC"


@contextlib.contextmanager
def _mapped(path: Path, action: str) -> Iterator[None]:
    """sqlite3 and OS errors, as the one error callers catch."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        raise RunStoreError(f"{path}: cannot {action} the run store: {exc}") from exc


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")  # the write lock now, not a failed upgrade later
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of the file at `path`; None when there is none. Runs written
    to a file removed while the store was open were lost to every reader, unsaid."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class SQLiteRunBackend:
    """Runs in one SQLite file in WAL mode: one writer, readers in any thread or process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._file: tuple[int, int] | None = None  # the open file's device and inode

    def open(self) -> None:
        self.close()
        with _mapped(self.path, "open"):
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))  # new: the user's alone
            conn = sqlite3.connect(self.path, timeout=_BUSY_S, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")  # readers never wait for the writer
                conn.execute("PRAGMA synchronous = NORMAL")  # a power cut loses the last runs
                conn.execute("PRAGMA foreign_keys = ON")  # a run's calls go with it
                with _transaction(conn):
                    _create_schema(conn, self.path)
            except BaseException:
                conn.close()
                raise
            self._conn, self._file = conn, _identity(self.path)

    def write(self, runs: Sequence[RunRecord]) -> None:
        conn = self._writer()
        if _identity(self.path) != self._file:  # removed or replaced while open (attack 148)
            raise RunStoreError(f"{self.path}: the run store's file was removed or replaced")
        calls = call_rows(runs)
        with _mapped(self.path, "write"), _transaction(conn):
            # Recorded again, a run replaces the first; its calls cascade.
            conn.executemany("DELETE FROM runs WHERE id = ?", [(run.id,) for run in runs])
            conn.executemany(_INSERT_RUN, [run_row(run) for run in runs])
            conn.executemany(_INSERT_CALL, calls)

    def prune(self, *, keep: int, started_before: float | None) -> None:
        conn = self._writer()
        older = f"SELECT rowid FROM runs {_NEWEST_FIRST} LIMIT -1 OFFSET ?"
        with _mapped(self.path, "prune"), _transaction(conn):
            if keep > 0:
                conn.execute(f"DELETE FROM runs WHERE rowid IN ({older})", (keep,))
            if started_before is not None:
                conn.execute("DELETE FROM runs WHERE started < ?", (started_before,))

    def list_runs(
        self,
        last: int,
        *,
        ok: bool | None,
        client: str | None,
        before: float | None,
        before_id: str | None = None,
    ) -> list[RunSummary]:
        where, params = list_where(
            ok=ok, client=client, before=before, before_id=before_id, mark="?", seq="rowid"
        )
        sql = (
            "SELECT id, kind, started, max(ended - started, 0) * 1000 AS duration_ms, client,"
            " ok, error_type, calls, failed_calls, tokens_saved"
            f" FROM runs WHERE {where} {_NEWEST_FIRST} LIMIT ?"
        )
        with self._reading() as conn:
            rows = [] if conn is None else conn.execute(sql, (*params, max(last, 0))).fetchall()
        return [RunSummary(**_values(row, row.keys())) for row in rows]

    def get(self, run_id: str) -> RunRecord | None:
        with self._reading() as conn:
            if conn is None:
                return None
            run = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            order = 'ORDER BY "order", rowid'  # order: an SQL keyword as a column name
            sql = f"SELECT * FROM calls WHERE run_id = ? {order}"
            calls = conn.execute(sql, (run_id,)).fetchall()
        return None if run is None else _run_of(run, calls)

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        sql = "SELECT id FROM runs WHERE substr(id, 1, ?) = ? LIMIT ?"
        with self._reading() as conn:
            rows = [] if conn is None else conn.execute(sql, (len(prefix), prefix, limit))
            return [row[0] for row in rows]

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _writer(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RunStoreError(f"{self.path}: the run store is not open")
        return self._conn

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        """A read-only connection holding one snapshot; None while there is no store yet."""
        if not self.path.exists():
            yield None
            return
        with _mapped(self.path, "read"):
            uri = self.path.resolve().as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_S, isolation_level=None)
            try:
                conn.row_factory = sqlite3.Row
                conn.execute("BEGIN")  # every query of this read sees the same runs
                made = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'calls'"
                if not conn.execute(made).fetchone():
                    yield None
                    return
                _check_version(conn, self.path)  # another's columns: a traceback (148)
                yield conn
            finally:
                conn.close()


def _create_schema(conn: sqlite3.Connection, path: Path) -> None:
    for statement in _SCHEMA:
        conn.execute(statement)
    if conn.execute("SELECT version FROM schema_version").fetchone() is None:
        conn.execute("INSERT INTO schema_version VALUES (?)", (_SCHEMA_VERSION,))
    _check_version(conn, path)


def _check_version(conn: sqlite3.Connection, path: Path) -> None:
    try:
        found = conn.execute("SELECT version FROM schema_version").fetchone()
    except sqlite3.OperationalError:  # a store from before versions were kept
        return
    if found is not None and found[0] != _SCHEMA_VERSION:
        raise RunStoreError(
            f"{path}: run store schema {found[0]}, not {_SCHEMA_VERSION} (another version of "
            "mcp-code-mode wrote it)"
        )


def _values(row: sqlite3.Row, names: Sequence[str]) -> dict[str, Any]:
    """The named columns of `row`; `ok` as a bool (SQLite stores 0 or 1)."""
    return {name: bool(row[name]) if name == "ok" else row[name] for name in names}


def _run_of(row: sqlite3.Row, calls: list[sqlite3.Row]) -> RunRecord:
    tokens = json.loads(row["tokens"])
    return RunRecord(
        **_values(row, RUN_COLUMNS),
        calls=[CallRecord(**_values(call, CALL_COLUMNS)) for call in calls],
        tokens={str(k): v for k, v in tokens.items() if isinstance(v, int)},
    )

"""`PostgresRunBackend`: runs in a PostgreSQL database that several gateways share.

The same tables as `SQLiteRunBackend` (runs, calls, schema_version; a run's calls go with it),
written over one psycopg 3 connection by the store's writer thread; every read opens its own
connection and sees one snapshot. Gateways behind a balancer write into one database: the
schema is created and old runs pruned under advisory locks, so two writers never race or
deadlock. psycopg is imported only here, when a PostgreSQL store is used: `import
mcp_code_mode` never pays for it. What this does not do: create the database or its role, or
show a URL's password (messages and errors carry it as `***`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

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

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import DictRow

__all__ = ["PostgresRunBackend", "redacted_url"]

_CONNECT_S = 10  # libpq's connect_timeout: a dead server costs the writer this, then a retry
_SCHEMA_LOCK = 0x6D63_7072_756E_7301  # pg_advisory_xact_lock keys, constant for this schema
_PRUNE_LOCK = 0x6D63_7072_756E_7302
_SCHEMA_VERSION = 1
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (seq BIGINT GENERATED ALWAYS AS IDENTITY,
        id TEXT PRIMARY KEY, kind TEXT NOT NULL, started DOUBLE PRECISION NOT NULL,
        ended DOUBLE PRECISION NOT NULL, client TEXT NOT NULL, code TEXT NOT NULL,
        input TEXT NOT NULL, ok BOOLEAN NOT NULL, error_type TEXT, error TEXT,
        error_line BIGINT, stdout TEXT NOT NULL, logs TEXT NOT NULL, result TEXT NOT NULL,
        tokens TEXT NOT NULL, calls BIGINT NOT NULL, failed_calls BIGINT NOT NULL,
        tokens_saved BIGINT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS runs_by_started ON runs (started, seq)",
    "CREATE INDEX IF NOT EXISTS runs_by_client ON runs (client, started, seq)",
    """CREATE TABLE IF NOT EXISTS calls (seq BIGINT GENERATED ALWAYS AS IDENTITY,
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, "order" BIGINT NOT NULL,
        server TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL, ok BOOLEAN NOT NULL,
        error TEXT, started_ms DOUBLE PRECISION NOT NULL, ms DOUBLE PRECISION NOT NULL,
        bytes_in BIGINT NOT NULL, bytes_out BIGINT NOT NULL, approval TEXT)""",
    'CREATE INDEX IF NOT EXISTS calls_by_run ON calls (run_id, "order", seq)',
)
_COUNTS = ("tokens", "calls", "failed_calls", "tokens_saved")  # after the run's columns


def _names(columns: tuple[str, ...]) -> str:
    return ", ".join(f'"{name}"' for name in columns)  # "order": an SQL keyword


_INSERT_RUN = (
    f"INSERT INTO runs ({_names(RUN_COLUMNS + _COUNTS)})"
    f" VALUES ({', '.join(['%s'] * (len(RUN_COLUMNS) + len(_COUNTS)))})"
)
_INSERT_CALL = (
    f"INSERT INTO calls (run_id, {_names(CALL_COLUMNS)})"
    f" VALUES ({', '.join(['%s'] * (len(CALL_COLUMNS) + 1))})"
)
_NEWEST_FIRST = "ORDER BY started DESC, seq DESC"
_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)([^&#]*)")


def redacted_url(url: str) -> str:
    """`url` with its password (in the user part or a `password=` parameter) shown as ***."""
    scheme, sep, rest = url.partition("://")
    head, slash, path = rest.partition("/")  # as libpq reads it: user info ends at the first /
    userinfo, at, hosts = head.rpartition("@")
    if ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    return scheme + sep + userinfo + at + _QUERY_PASSWORD.sub(r"\1***", hosts + slash + path)


def _passwords(url: str) -> set[str]:
    """Each password `url` holds, as written and percent-decoded."""
    userinfo = url.partition("://")[2].partition("/")[0].rpartition("@")[0]
    raw = [userinfo.split(":", 1)[1]] if ":" in userinfo else []
    raw += [match.group(2) for match in _QUERY_PASSWORD.finditer(url)]
    return {text for password in raw for text in (password, unquote(password)) if text}


def _scrubbed(text: str, url: str) -> str:
    """`text` (a driver's message) with `url` redacted and its passwords cut out."""
    text = text.replace(url, redacted_url(url))
    for password in sorted(_passwords(url), key=len, reverse=True):
        text = text.replace(password, "***")
    return text


@contextlib.contextmanager
def _mapped(url: str, action: str) -> Iterator[None]:
    """psycopg and OS errors, as the one error callers catch (no password in it)."""
    try:
        import psycopg  # lazily: only a PostgreSQL store pays for the driver
    except ImportError as exc:
        raise RunStoreError("a PostgreSQL run store needs psycopg: pip install psycopg") from exc
    try:
        yield
    except (psycopg.Error, OSError) as exc:
        message = _scrubbed(str(exc).strip(), url)
        shown = redacted_url(url)
        raise RunStoreError(f"{shown}: cannot {action} the run store: {message}") from None


def _connect(url: str) -> Connection[DictRow]:
    import psycopg
    from psycopg.rows import dict_row

    return psycopg.connect(
        url,
        autocommit=True,  # transactions are explicit (`conn.transaction()`)
        row_factory=dict_row,
        connect_timeout=_CONNECT_S,
        application_name="mcp-code-mode",
    )


class PostgresRunBackend:
    """Runs in the PostgreSQL database at `url` (`postgresql://user:password@host:port/db`):
    one writer connection per gateway, many gateways, readers in any thread or process."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: Connection[DictRow] | None = None

    def __repr__(self) -> str:
        return f"PostgresRunBackend({redacted_url(self.url)!r})"

    def open(self) -> None:
        self.close()
        with _mapped(self.url, "open"):
            conn = _connect(self.url)
            try:
                with conn.transaction():
                    _create_schema(conn, self.url)
            except BaseException:
                conn.close()
                raise
            self._conn = conn

    def write(self, runs: Sequence[RunRecord]) -> None:
        conn = self._writer()
        calls = call_rows(runs)
        with _mapped(self.url, "write"), conn.transaction(), conn.cursor() as cursor:
            # Recorded again, a run replaces the first; its calls cascade.
            cursor.execute("DELETE FROM runs WHERE id = ANY(%s)", ([run.id for run in runs],))
            cursor.executemany(_INSERT_RUN, [run_row(run) for run in runs])
            if calls:
                cursor.executemany(_INSERT_CALL, calls)

    def prune(self, *, keep: int, started_before: float | None) -> None:
        conn = self._writer()
        older = f"SELECT id FROM runs {_NEWEST_FIRST} OFFSET %s"
        with _mapped(self.url, "prune"), conn.transaction():
            # One pruner at a time: two gateways deleting the same rows in different orders
            # would deadlock.
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PRUNE_LOCK,))
            if keep > 0:
                conn.execute(f"DELETE FROM runs WHERE id IN ({older})", (keep,))
            if started_before is not None:
                conn.execute("DELETE FROM runs WHERE started < %s", (started_before,))

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
            ok=ok, client=client, before=before, before_id=before_id, mark="%s", seq="seq"
        )
        sql = (
            "SELECT id, kind, started, GREATEST(ended - started, 0) * 1000 AS duration_ms,"
            " client, ok, error_type, calls, failed_calls, tokens_saved"
            f" FROM runs WHERE {where} {_NEWEST_FIRST} LIMIT %s"
        )
        with self._reading() as conn:
            rows = [] if conn is None else conn.execute(sql, (*params, max(last, 0))).fetchall()
        return [RunSummary(**row) for row in rows]

    def get(self, run_id: str) -> RunRecord | None:
        run_sql = f"SELECT {_names(RUN_COLUMNS)}, tokens FROM runs WHERE id = %s"
        order = 'ORDER BY "order", seq'  # order: an SQL keyword as a column name
        calls_sql = f"SELECT {_names(CALL_COLUMNS)} FROM calls WHERE run_id = %s {order}"
        with self._reading() as conn:
            if conn is None:
                return None
            run = conn.execute(run_sql, (run_id,)).fetchone()
            calls = conn.execute(calls_sql, (run_id,)).fetchall()
        return None if run is None else _run_of(run, calls)

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        sql = "SELECT id FROM runs WHERE left(id, %s) = %s LIMIT %s"
        with self._reading() as conn:
            if conn is None:
                return []
            return [row["id"] for row in conn.execute(sql, (len(prefix), prefix, limit))]

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # closing a dead connection: nothing to keep
                conn.close()

    def _writer(self) -> Connection[DictRow]:
        if self._conn is None:
            raise RunStoreError(f"{redacted_url(self.url)}: the run store is not open")
        return self._conn

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Connection[DictRow] | None]:
        """A connection holding one read-only snapshot; None while there is no store yet."""
        with _mapped(self.url, "read"), _connect(self.url) as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            made = conn.execute("SELECT to_regclass('calls') IS NOT NULL AS made").fetchone()
            yield conn if made and made["made"] else None


def _create_schema(conn: Connection[DictRow], url: str) -> None:
    # Two gateways starting together: CREATE ... IF NOT EXISTS alone can still collide.
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
    for statement in _SCHEMA:
        conn.execute(statement)
    found = conn.execute("SELECT version FROM schema_version").fetchone()
    if found is None:
        conn.execute("INSERT INTO schema_version VALUES (%s)", (_SCHEMA_VERSION,))
    elif found["version"] != _SCHEMA_VERSION:
        shown = redacted_url(url)
        raise RunStoreError(f"{shown}: run store schema {found['version']}, not {_SCHEMA_VERSION}")


def _run_of(row: dict[str, Any], calls: list[dict[str, Any]]) -> RunRecord:
    tokens = json.loads(row.pop("tokens"))
    return RunRecord(
        **row,
        calls=[CallRecord(**call) for call in calls],
        tokens={str(k): v for k, v in tokens.items() if isinstance(v, int)},
    )

"""Where runs are kept (MCP_CODE_RUNS_DB): a SQLite file, or a PostgreSQL URL that several
gateways share, and the backend for each. A URL is shown with its password as ***."""

from __future__ import annotations

from pathlib import Path
from typing import TypeGuard

from ..settings import cache_root
from .backend import RunStoreBackend
from .postgres import PostgresRunBackend, redacted_url
from .sqlite import SQLiteRunBackend

__all__ = ["default_path", "is_postgres_url", "open_backend", "shown_location", "store_location"]

_SCHEMES = ("postgresql://", "postgres://")


def default_path(cache_dir: str | Path | None = None) -> Path:
    """`<cache_dir>/mcp-code-mode/runs.sqlite3`; without `cache_dir`, in the cache folder of
    `settings.cache_root` (MCP_CODE_CACHE_DIR, else XDG_CACHE_HOME, else ~/.cache)."""
    return cache_root(str(cache_dir) if cache_dir else None) / "runs.sqlite3"


def is_postgres_url(location: str | Path) -> TypeGuard[str]:
    """Whether `location` is a PostgreSQL URL (`postgresql://...` or `postgres://...`)."""
    return isinstance(location, str) and location.strip().lower().startswith(_SCHEMES)


def store_location(runs_db: str | Path | None, cache_dir: str | Path | None = None) -> str | Path:
    """Where runs are kept: the PostgreSQL URL or the SQLite file `runs_db` names, else
    runs.sqlite3 in the cache folder."""
    if not runs_db:
        return default_path(cache_dir)
    return runs_db.strip() if is_postgres_url(runs_db) else Path(runs_db)


def shown_location(location: str | Path) -> str:
    """`location` for a message or a page: a URL's password as ***."""
    return redacted_url(location) if is_postgres_url(location) else str(location)


def open_backend(location: str | Path) -> RunStoreBackend:
    """The backend keeping runs at `location`: `PostgresRunBackend` for a PostgreSQL URL,
    else `SQLiteRunBackend`. Nothing is connected yet: reads connect on their own and a
    `RunStore`'s writer calls `open`."""
    if is_postgres_url(location):
        return PostgresRunBackend(location.strip())
    return SQLiteRunBackend(Path(location))

"""`Recorder`: the gateway's one seam onto run records (contract §10).

`trace` starts a run's `RunTrace` (None when MCP_CODE_RUNS=off); `finish` hands the ended run
to the store, whose writer thread builds and writes the record. The store is opened on the
first run, so a gateway that runs nothing creates no file. A store that cannot be opened is
logged once; runs go on unrecorded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..settings import Settings
from .location import store_location
from .store import RunStore
from .trace import ArgumentsMode, RunKind, RunTrace

__all__ = ["Recorder"]

logger = logging.getLogger(__name__)


class Recorder:
    """Records runs into the store at `path`, a SQLite file or a PostgreSQL URL (default: the
    cache folder's runs.sqlite3)."""

    def __init__(
        self,
        *,
        enabled: bool,
        path: str | Path | None,
        keep: int,
        arguments: ArgumentsMode,
        redact: Callable[[str], str],
        count_tokens: Callable[[str], int] | None = None,
        cache_dir: str | None = None,
    ) -> None:
        self.enabled = enabled
        self.path = store_location(path, cache_dir)
        self._keep = keep
        self._arguments = arguments
        self._redact = redact
        self._count_tokens = count_tokens
        self._store: RunStore | None = None
        self._closing: RunStore | None = None  # the store the last `close` let go of
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls, settings: Settings, *, redact: Callable[[str], str], count: Callable[[str], int]
    ) -> Recorder:
        """As MCP_CODE_RUNS, MCP_CODE_RUNS_DB, MCP_CODE_RUNS_KEEP, MCP_CODE_RUNS_ARGUMENTS say."""
        return cls(
            enabled=settings.runs == "on",
            path=settings.runs_db,
            keep=settings.runs_keep,
            arguments=settings.runs_arguments,
            redact=redact,
            count_tokens=count,
            cache_dir=settings.cache_dir,
        )

    @property
    def store(self) -> RunStore:
        """The store, opened on first use (its writer thread creates the file)."""
        with self._lock:
            if self._store is None:
                self._store = RunStore.open(self.path, keep=self._keep)
            return self._store

    def trace(self, kind: RunKind, code: str, input: Any, client: str) -> RunTrace | None:
        """A new run's trace; None when runs are not recorded."""
        if not self.enabled:
            return None
        return RunTrace(kind, code, input, client, self._arguments, self._redact)

    def finish(self, trace: RunTrace | None, reply: Callable[[], Mapping[str, Any]]) -> None:
        """The run ended; `reply` gives the §3 result object the client was sent (called on
        the store's writer thread, off the run's path)."""
        if trace is not None:
            self.store.record(trace.finish(reply, self._count_tokens), trace.chars)

    def close(self) -> None:
        """Write what is queued and let go of the store."""
        with self._lock:  # a second close waits for the first's writes (see RunStore.close)
            store, self._store = self._store or self._closing, None
            self._closing = store
        if store is not None:
            store.close()

"""`RunStore`: runs recorded off the caller's thread by one writer thread, and read back.

`RunStore.record` hands a finished run to the writer and returns: it never blocks and never
raises. The writer clips every text (`as_stored`) and keeps the newest `keep` runs (none
older than `keep_days`), pruning every so many runs. A store it cannot write (a directory in
its place, a corrupt file, a full disk, a newer schema) is logged once and tried again now and
then; meanwhile runs are dropped and counted, like runs that find the queue full. Reads open
their own connection: `mcp-code-mode runs` reads while a gateway writes.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from .backend import RunStoreBackend, RunStoreError
from .location import open_backend
from .records import RunRecord, RunSummary, as_stored

__all__ = ["DEFAULT_KEEP", "RunStore"]

logger = logging.getLogger(__name__)

DEFAULT_KEEP = 10_000  # MCP_CODE_RUNS_KEEP


class RunStore:
    """Runs recorded off the caller's thread by one writer thread, and read back; `close`
    (also run at interpreter exit) writes what is queued. Reads raise `RunStoreError`.
    `keep` runs are kept, and none started more than `keep_days` ago (0 or None: no limit)."""

    def __init__(
        self,
        backend: RunStoreBackend,
        *,
        keep: int = DEFAULT_KEEP,
        keep_days: float | None = None,
        max_queued: int = 1_000,
        retry_s: float = 30.0,
    ) -> None:
        self.backend = backend
        self._retry_s = retry_s  # a broken store is left alone this long, then tried again
        self._keep = max(keep, 0)
        self._keep_days = keep_days
        self._prune_every = max(1, keep // 10) if 0 < keep < 10_000 else 1_000  # runs, amortised
        self._queue: queue.Queue[RunRecord | Callable[[], RunRecord] | threading.Event | None] = (
            queue.Queue(max(max_queued, 1))
        )
        self._lock = threading.Lock()
        self._closed = False
        self._dropped = 0
        self._since_prune = 0
        self._usable = False
        self._retry_at = 0.0
        self._warned: set[str] = set()
        self._thread = threading.Thread(target=self._serve, name="mcp-code-mode-runs", daemon=True)
        self._thread.start()
        _open_stores.add(self)

    @classmethod
    def open(
        cls, path: str | Path, *, keep: int = DEFAULT_KEEP, keep_days: float | None = None
    ) -> RunStore:
        """A store in the SQLite file `path` (the writer creates it and its folders) or the
        PostgreSQL database a `postgresql://` URL names (the writer creates the tables)."""
        return cls(open_backend(path), keep=keep, keep_days=keep_days)

    @property
    def dropped(self) -> int:
        """Runs not stored: the queue was full, the store broken or closed, the run malformed."""
        return self._dropped

    def record(self, run: RunRecord | Callable[[], RunRecord]) -> None:
        """Hand `run` to the writer and return at once; never blocks, never raises. A
        callable is called on the writer's thread for the record: the work of building it
        (serialising, counting tokens) is kept off the caller's."""
        if not self._closed:
            try:
                self._queue.put_nowait(run)
                return
            except queue.Full:
                pass
        self._drop(1)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every run recorded before is written (or dropped) and old runs pruned;
        False when that takes longer than `timeout_s` or the store is closed."""
        done = threading.Event()
        try:
            self._queue.put(done, timeout=timeout_s)
        except queue.Full:
            return False
        return not self._closed and done.wait(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, prune, let go of the store; later runs are dropped."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _open_stores.discard(self)
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout_s)
        self._thread.join(timeout_s)

    def list_runs(
        self,
        last: int = 50,
        *,
        ok: bool | None = None,
        client: str | None = None,
        before: float | None = None,
    ) -> list[RunSummary]:
        """The newest `last` runs, newest first: only good or failed ones (`ok`), one
        client's, those started before `before` (epoch s, for the next page)."""
        return self.backend.list_runs(last, ok=ok, client=client, before=before)

    def get(self, run_id: str) -> RunRecord | None:
        """The run `run_id` with its calls in order; None when it is not (or no longer) kept."""
        return self.backend.get(run_id)

    def _serve(self) -> None:
        self._ready()
        self._prune()  # a lowered `keep` or an old store takes effect at start
        while (item := self._queue.get()) is not None:
            if isinstance(item, threading.Event):
                self._prune()
                item.set()
            else:
                self._write(item)
                if self._since_prune >= self._prune_every:
                    self._prune()
        self._prune()
        self.backend.close()

    def _write(self, run: RunRecord | Callable[[], RunRecord]) -> None:
        try:
            if self._ready():
                self.backend.write(as_stored(run if isinstance(run, RunRecord) else run()))
                self._since_prune += 1
                return
        except RunStoreError as exc:
            self._broke(exc)
        except Exception as exc:  # the writer's boundary: a malformed run stops nothing
            self._warn_once("a run was not recorded: %r", exc)
        self._drop(1)

    def _prune(self) -> None:
        days, self._since_prune = self._keep_days, 0
        before = time.time() - days * 86_400 if days else None
        try:
            if self._usable:
                self.backend.prune(keep=self._keep, started_before=before)
        except Exception as exc:  # the writer's boundary: later runs are still tried
            self._broke(exc)

    def _ready(self) -> bool:
        if not self._usable and time.monotonic() >= self._retry_at:
            try:
                self.backend.open()
                self._usable = True
            except Exception as exc:  # the writer's boundary: runs go on unrecorded
                self._broke(exc)
        return self._usable

    def _broke(self, exc: Exception) -> None:
        self._usable = False
        self._retry_at = time.monotonic() + self._retry_s
        self._warn_once("runs are not recorded: %s", exc)

    def _warn_once(self, message: str, exc: Exception) -> None:
        if message not in self._warned:
            self._warned.add(message)
            logger.warning(message, exc)

    def _drop(self, count: int) -> None:
        with self._lock:
            self._dropped += count


_open_stores: weakref.WeakSet[RunStore] = weakref.WeakSet()


@atexit.register
def _close_open_stores() -> None:
    """Runs recorded just before the interpreter exits are written, not lost."""
    for store in list(_open_stores):
        store.close(timeout_s=5.0)

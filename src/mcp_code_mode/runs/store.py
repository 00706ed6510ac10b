"""`RunStore`: runs recorded off the caller's thread by one writer thread, and read back.

`RunStore.record` hands a finished run to the writer and returns: it never blocks and never
raises. A run after a pause is written at once; while runs come back to back, the writer
waits until they stop arriving for a moment (`quiet_s`; at most `linger_s`, `batch` runs),
then builds them, clips every text (`as_stored`) and writes them in one transaction: a
gateway serving runs back to back wakes it once a batch, not once a run (each wake-up and
each transaction costs the run's thread a GIL hand-over). It keeps the newest `keep` runs
(none older than `keep_days`), pruning every so many runs. What waits in the queue is
bounded in runs (`max_queued`) and in characters (`max_pending_chars`, as `record`'s
callers weigh their runs). A store it cannot write (a directory in its place, a corrupt
file, a full disk, a newer schema, a database restarting) is logged once an outage and
tried again, sooner first (1 s, doubling up to `retry_s`); meanwhile its runs are held, within
the queue's bounds, and written once it is back (they were dropped: a lock held 12 s, or a
PostgreSQL restart, lost every run for 30 s after it, unsaid: outside attack 148). Runs
beyond those bounds are dropped and counted. Reads open their own
connection: `mcp-code-mode runs` reads while a gateway writes.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

from .backend import RunStoreBackend, RunStoreError
from .location import open_backend
from .records import RunRecord, RunSummary, as_stored

__all__ = ["DEFAULT_KEEP", "RunStore"]

logger = logging.getLogger(__name__)

DEFAULT_KEEP = 10_000  # MCP_CODE_RUNS_KEEP
_FIRST_RETRY_S = 1.0  # after a store's failure; doubling up to `retry_s` while it lasts

Pending = RunRecord | Callable[[], RunRecord]


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
        max_pending_chars: int = 64_000_000,
        retry_s: float = 30.0,
        quiet_s: float = 0.05,
        linger_s: float = 1.0,
        batch: int = 200,
        after_s: float = 0.005,
    ) -> None:
        self.backend = backend
        self._retry_s = retry_s  # a broken store is left alone this long, then tried again
        self._keep = max(keep, 0)
        self._keep_days = keep_days
        self._prune_every = max(1, keep // 10) if 0 < keep < 10_000 else 1_000  # runs, amortised
        self._queue: queue.Queue[tuple[Pending, int] | threading.Event | None] = queue.Queue(
            max(max_queued, 1)
        )
        self._max_pending = max_pending_chars
        self._max_held = max(max_queued, 1)  # runs held while the store is down
        self._pending = 0  # characters of the runs queued, as `record` was told
        self._quiet_s, self._linger_s, self._batch = quiet_s, linger_s, max(batch, 1)
        # After a run arrives, the writer waits this long before building its record: the
        # run's reply is then on its way, and building (serialising, counting tokens, on
        # the server's interpreter lock) no longer competes with it.
        self._after_s = after_s
        self._written_at = -math.inf  # when the writer last wrote a batch (monotonic)
        self._lock = threading.Lock()
        self._closed = False
        self._dropped = 0
        self._since_prune = 0
        self._usable = False
        self._retry_at = 0.0
        self._backoff_s = _FIRST_RETRY_S
        self._held: list[tuple[RunRecord, int]] = []  # built, not written: the store was down
        self._down = False  # since a write or an open failed, until one succeeds
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

    def record(self, run: Pending, chars: int = 0) -> None:
        """Hand `run` to the writer and return at once; never blocks, never raises. A
        callable is called on the writer's thread for the record: the work of building it
        (serialising, counting tokens) is kept off the caller's. `chars` is what it holds in
        memory until then; a run that would take the queue past `max_pending_chars` is
        dropped."""
        with self._lock:
            admitted = not self._closed and self._pending + chars <= self._max_pending
            if admitted:
                self._pending += chars
        if admitted:
            try:
                self._queue.put_nowait((run, chars))
                return
            except queue.Full:
                self._settle(chars)
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
        """Write what is queued, prune, let go of the store; later runs are dropped. A second
        call waits for the first one's writes too (a signal's cleanup, which exits the
        process next, found the store closing and lost the run queued: attack 139)."""
        with self._lock:
            first, self._closed = not self._closed, True
        if first:
            _open_stores.discard(self)
            with contextlib.suppress(queue.Full):
                self._queue.put(None, timeout=timeout_s)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def list_runs(
        self,
        last: int = 50,
        *,
        ok: bool | None = None,
        client: str | None = None,
        before: float | None = None,
        before_id: str | None = None,
    ) -> list[RunSummary]:
        """The newest `last` runs, newest first: only good or failed ones (`ok`), one
        client's, those listed after the run `before_id` started at `before` (epoch s; for
        the next page; without `before_id`, those started before `before`)."""
        return self.backend.list_runs(
            last, ok=ok, client=client, before=before, before_id=before_id
        )

    def get(self, run_id: str) -> RunRecord | None:
        """The run `run_id` with its calls in order; None when it is not (or no longer) kept."""
        return self.backend.get(run_id)

    def _serve(self) -> None:
        self._ready()
        self._prune()  # a lowered `keep` or an old store takes effect at start
        stopping = False
        while not stopping:
            runs, flushes, stopping = self._gather()
            if runs or self._held:
                self._write(runs)
            if flushes or self._since_prune >= self._prune_every:
                self._prune()
            for flushed in flushes:
                flushed.set()
        self._prune()
        self._drop_held()
        self.backend.close()

    def _gather(self) -> tuple[list[tuple[Pending, int]], list[threading.Event], bool]:
        """The next batch: runs, flush requests, and whether the store is closing. The
        writer sleeps while runs keep coming, so a caller's `record` wakes nobody."""
        runs: list[tuple[Pending, int]] = []
        flushes: list[threading.Event] = []
        deadline = time.monotonic() + self._linger_s
        for item in self._arrivals(deadline):
            if item is None:
                return runs, flushes, True
            if isinstance(item, threading.Event):
                flushes.append(item)
            else:
                runs.append(item)
            if flushes or len(runs) >= self._batch:
                break
        return runs, flushes, False

    def _arrivals(self, deadline: float) -> Iterator[tuple[Pending, int] | threading.Event | None]:
        """Items as they come: the first waited for, then those already queued; and when
        the last batch was written less than `linger_s` ago (runs are coming back to back),
        those that keep arriving, until a `quiet_s` passes with none or `deadline` does. A
        run after a pause is written `after_s` after it arrived (its reply goes out first): a
        reader sees it as soon as it ended."""
        try:  # with runs held, it wakes to try the store again
            first = self._queue.get(timeout=self._held_wait())
        except queue.Empty:
            return
        if isinstance(first, tuple) and self._after_s > 0:
            time.sleep(self._after_s)
        yield first
        busy = time.monotonic() - self._written_at < self._linger_s
        while True:
            try:
                yield self._queue.get_nowait()
                continue
            except queue.Empty:
                pass
            if not busy or time.monotonic() >= deadline:
                return
            time.sleep(self._quiet_s)
            if self._queue.empty():
                return

    def _held_wait(self) -> float | None:
        if not self._held:
            return None
        return max(0.01, self._retry_at - time.monotonic())

    def _write(self, runs: list[tuple[Pending, int]]) -> None:
        self._written_at = time.monotonic()
        built = [(record, chars) for run, chars in runs if (record := self._built(run, chars))]
        batch, self._held = self._held + built, []
        records = list({record.id: record for record, _ in batch}.values())  # the last of an id
        try:
            if records and self._ready():
                self.backend.write(records)
                self._since_prune += len(records)
                self._settle(sum(chars for _, chars in batch))
                self._back(len(records))
                return
            if records:  # the store is down: held until it is back
                self._hold(batch)
                return
        except RunStoreError as exc:
            self._hold(batch)
            self._broke(exc)
            return
        except Exception as exc:  # the writer's boundary: a malformed run stops nothing
            self._warn_once("runs were not recorded: %r", exc)
        self._settle(sum(chars for _, chars in batch))
        self._drop(len(records))

    def _hold(self, batch: list[tuple[RunRecord, int]]) -> None:
        """Keep `batch` for the store's return: the newest `max_queued` runs of it."""
        cut, self._held = batch[: -self._max_held], batch[-self._max_held :]
        self._settle(sum(chars for _, chars in cut))
        self._drop(len(cut))

    def _back(self, written: int) -> None:
        if self._down:
            self._down, self._backoff_s = False, _FIRST_RETRY_S
            logger.warning("runs are recorded again (%d written, held or new)", written)

    def _drop_held(self) -> None:
        held, self._held = self._held, []
        self._settle(sum(chars for _, chars in held))
        self._drop(len(held))

    def _built(self, run: Pending, chars: int) -> RunRecord | None:
        try:
            return as_stored(run if isinstance(run, RunRecord) else run())
        except Exception as exc:  # the writer's boundary: a malformed run stops nothing
            self._warn_once("a run was not recorded: %r", exc)
            self._settle(chars)
            self._drop(1)
            return None

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
        if not self._down:  # once an outage, saying what happens to its runs
            logger.warning("runs are not recorded for now (held, retried): %s", exc)
        self._usable, self._down = False, True
        self._retry_at = time.monotonic() + min(self._backoff_s, self._retry_s)
        self._backoff_s = min(self._backoff_s * 2, self._retry_s)

    def _warn_once(self, message: str, exc: Exception) -> None:
        if message not in self._warned:
            self._warned.add(message)
            logger.warning(message, exc)

    def _drop(self, count: int) -> None:
        with self._lock:
            self._dropped += count

    def _settle(self, chars: int) -> None:
        with self._lock:
            self._pending -= chars


_open_stores: weakref.WeakSet[RunStore] = weakref.WeakSet()


@atexit.register
def _close_open_stores() -> None:
    """Runs recorded just before the interpreter exits are written, not lost."""
    for store in list(_open_stores):
        store.close(timeout_s=5.0)

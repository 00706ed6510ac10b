"""The warm pool: keeps some workers of a `Launcher` ready, one run (or session) each.

A worker that can restore its own fresh state (`reusable`: a Pyodide runner) is reset after
a run that ended normally and goes back to the pool; one whose reset fails, and any worker
that is not reusable, is disposed of and replaced in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ..errors import WorkerCrashed
from .backend import Launcher, Worker

__all__ = ["WorkerPool"]

logger = logging.getLogger(__name__)

# After a run, how long the used worker's cleanup and its replacement wait: the reply is
# then on its way to the client, and a fork (a process start, on a machine of two cores)
# no longer competes with it. About 1 ms of the `1+1` round trip here (bench/speed.py).
_AFTER_REPLY_S = 0.005


class WorkerPool:
    """Keeps `size` workers ready; each `acquire()` hands out a worker of its own.

    After a run the executor gives the worker back with `release()`: a reusable one is
    reset in the background and returns to the pool; any other is disposed of and a
    replacement is started.
    """

    def __init__(self, *, size: int, launcher: Launcher, memory_mb: int) -> None:
        self.size = size
        self.launcher = launcher
        self._memory_mb = memory_mb
        self._idle: list[Worker] = []
        self._starting: set[asyncio.Task[None]] = set()
        self._resetting: set[asyncio.Task[None]] = set()
        self._reaping: set[asyncio.Task[None]] = set()
        self._reap_soon: dict[int, tuple[asyncio.TimerHandle, Worker]] = {}
        # Callers of `acquire()` waiting for a reset or a start to finish: they get a worker,
        # or None when it failed (then they look again).
        self._waiters: list[asyncio.Future[Worker | None]] = []
        self._closed = False

    async def start(self) -> None:
        """Start the launcher, fill the pool and wait until it is warm."""
        await self.launcher.start()
        self._refill()
        if self._starting:
            await asyncio.gather(*self._starting, return_exceptions=True)

    async def acquire(self) -> Worker:
        """A ready worker: an idle one, else one being reset (milliseconds) or started, else
        a new one."""
        while True:
            if self._closed:
                raise WorkerCrashed("the worker pool is closed")
            while self._idle:
                worker = self._idle.pop()
                if not worker.exited():
                    return worker  # its replacement, if any, is started after the run
                self.reap(worker)
            if len(self._waiters) >= len(self._resetting) + len(self._starting):
                return await self.launcher.fork(memory_mb=self._memory_mb)
            waited = await self._wait_for_worker()
            if waited is not None:
                return waited

    async def fork(self) -> Worker:
        """A brand-new worker, bypassing the idle ones."""
        return await self.launcher.fork(memory_mb=self._memory_mb)

    def release(self, worker: Worker, *, reuse: bool) -> None:
        """Take a worker back after its run, in the background: reset it for another run
        when `reuse` (the run ended normally and the worker is `reusable`), else dispose of
        it and start its replacement: a few milliseconds later, once the reply is out, if
        an idle worker is left for the next run."""
        if self._closed or (not reuse and not self._idle):
            # With no idle worker left, the replacement is needed now: the next run would
            # otherwise fork one itself.
            self.reap(worker)
            return
        if not reuse:
            # A worker not reused was killed already (see `SandboxExecutor`); what is left
            # is the wait for its exit, the cleanup, and starting its replacement.
            handle = asyncio.get_running_loop().call_later(
                _AFTER_REPLY_S, self._reap_deferred, worker
            )
            self._reap_soon[id(worker)] = (handle, worker)
            return
        task = asyncio.create_task(self._reset(worker))
        self._resetting.add(task)
        task.add_done_callback(self._resetting.discard)

    def _reap_deferred(self, worker: Worker) -> None:
        self._reap_soon.pop(id(worker), None)
        self.reap(worker)

    def reap(self, worker: Worker) -> None:
        """Dispose of a used worker in the background; `aclose()` waits for it."""
        task = asyncio.create_task(worker.dispose())
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)
        # Starting the replacement now, not while the run was going, keeps it off the run's
        # two cores; a burst of runs beyond the pool starts workers on demand in `acquire()`.
        self._refill()

    async def aclose(self) -> None:
        """Stop refilling, kill every worker, stop the launcher."""
        self._closed = True
        for task in [*self._starting, *self._resetting]:
            task.cancel()
        await asyncio.gather(*self._starting, *self._resetting, return_exceptions=True)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        idle, self._idle = self._idle, []
        for handle, worker in self._reap_soon.values():
            handle.cancel()
            idle.append(worker)
        self._reap_soon.clear()
        await asyncio.gather(*(w.dispose() for w in idle), *self._reaping)
        await self.launcher.aclose()

    @property
    def idle_count(self) -> int:
        return len(self._idle)

    async def _wait_for_worker(self) -> Worker | None:
        waiter: asyncio.Future[Worker | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            handed = waiter.result() if waiter.done() and not waiter.cancelled() else None
            if handed is not None:
                self._give_back(handed)  # handed over just as the caller gave up
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    async def _reset(self, worker: Worker) -> None:
        fresh = False
        try:
            fresh = await worker.reset()
        finally:
            # No longer resetting: `reap()` below may then start a replacement.
            self._resetting.discard(asyncio.current_task())
            if fresh and not self._closed:
                self._give_back(worker)
            else:
                self.reap(worker)  # shielded from our cancellation: the task is its own
                self._wake_one(None)

    def _give_back(self, worker: Worker) -> None:
        """A ready worker: to a caller waiting for one, else idle (up to `size`)."""
        if self._wake_one(worker):
            return
        if len(self._idle) < self.size and not self._closed:
            self._idle.append(worker)
        else:
            self.reap(worker)  # more came back than the pool keeps (after a burst)

    def _wake_one(self, worker: Worker | None) -> bool:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(worker)
                return True
        return False

    def _refill(self) -> None:
        while (
            not self._closed
            and len(self._idle) + len(self._starting) + len(self._resetting) < self.size
        ):
            task = asyncio.create_task(self._add_one())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _add_one(self) -> None:
        try:
            worker = await self.launcher.fork(memory_mb=self._memory_mb)
        except (WorkerCrashed, OSError) as exc:
            logger.error("could not start a warm worker: %s", exc)
            self._starting.discard(asyncio.current_task())  # no longer starting: look again
            self._wake_one(None)
            return
        if self._closed:
            await worker.dispose()
        else:
            self._give_back(worker)

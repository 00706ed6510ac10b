"""Worker processes and the warm pool that keeps some of them ready.

A worker serves exactly one run and is then killed; the pool starts replacements
in the background, so every run gets fresh state. Workers live in their own
session (process group) and die by `killpg(SIGKILL)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from ..errors import WorkerCrashed
from .protocol import decode, encode

__all__ = ["WorkerPool", "WorkerProcess"]

logger = logging.getLogger(__name__)

_LINE_LIMIT = 64 * 1024 * 1024  # largest protocol line accepted from a worker
_START_TIMEOUT_S = 30.0


class WorkerProcess:
    """One worker: a child process in its own session, talking JSON lines on a pipe."""

    def __init__(self, proc: asyncio.subprocess.Process, workdir: str) -> None:
        self.proc = proc
        self.workdir = workdir
        self.pid = proc.pid
        self._disposed = False

    @classmethod
    async def spawn(cls, *, allowed_imports: Sequence[str], memory_mb: int) -> WorkerProcess:
        """Start a worker and wait until it has preloaded its modules and says `ready`."""
        workdir = tempfile.mkdtemp(prefix="mcp-code-")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-m", "mcp_code_mode.sandbox.worker",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            cwd=workdir, env=_worker_env(workdir), start_new_session=True, limit=_LINE_LIMIT,
        )  # fmt: skip
        worker = cls(proc, workdir)
        try:
            await worker.send(
                {"op": "init", "allowed_imports": list(allowed_imports), "memory_mb": memory_mb}
            )
            async with asyncio.timeout(_START_TIMEOUT_S):
                ready = await worker.receive()
            if ready is None or ready.get("op") != "ready":
                raise WorkerCrashed(
                    f"worker {proc.pid} did not start (exit code {proc.returncode})"
                )
        except BaseException:
            await worker.dispose()
            raise
        return worker

    async def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode(message))
        await self.proc.stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None when the worker closed the pipe (exited)."""
        assert self.proc.stdout is not None
        try:
            line = await self.proc.stdout.readline()
        except (ValueError, asyncio.LimitOverrunError) as exc:
            raise WorkerCrashed(f"worker sent an oversized message: {exc}") from None
        if not line:
            return None
        try:
            return decode(line)
        except ValueError as exc:
            raise WorkerCrashed(f"worker broke the protocol: {exc}") from None

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (anything it started dies too)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    async def dispose(self) -> None:
        """Kill, reap and remove the working directory; idempotent, shielded from cancellation."""
        if self._disposed:
            return
        self._disposed = True
        self.kill()
        await asyncio.shield(self.proc.wait())
        shutil.rmtree(self.workdir, ignore_errors=True)


def _worker_env(workdir: str) -> dict[str, str]:
    # An explicit minimal environment: no variable of the server (API keys) reaches a worker.
    return {"PATH": os.defpath, "LANG": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir}


class WorkerPool:
    """Keeps `size` workers started ahead; each `acquire()` hands out a worker of its own."""

    def __init__(self, *, size: int, allowed_imports: Sequence[str], memory_mb: int) -> None:
        self.size = size
        self._allowed_imports = list(allowed_imports)
        self._memory_mb = memory_mb
        self._idle: list[WorkerProcess] = []
        self._starting: set[asyncio.Task[None]] = set()
        self._reaping: set[asyncio.Task[None]] = set()
        self._closed = False

    async def start(self) -> None:
        """Fill the pool and wait until it is warm."""
        self._refill()
        if self._starting:
            await asyncio.gather(*self._starting, return_exceptions=True)

    async def acquire(self) -> WorkerProcess:
        """A ready worker, from the pool when one is idle, else started now."""
        if self._closed:
            raise WorkerCrashed("the worker pool is closed")
        worker = self._idle.pop() if self._idle else None
        if worker is None or worker.proc.returncode is not None:
            self._refill()
            worker = await self._spawn()
        # Otherwise the replacement starts in `reap()`: forking this (large) process while
        # the run is in flight would delay the run's reply by milliseconds.
        return worker

    async def aclose(self) -> None:
        """Stop refilling and kill every idle worker."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        idle, self._idle = self._idle, []
        await asyncio.gather(*(w.dispose() for w in idle), *self._reaping)

    def reap(self, worker: WorkerProcess) -> None:
        """Dispose of a used worker in the background; `aclose()` waits for it."""
        task = asyncio.create_task(worker.dispose())
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)
        self._refill()

    @property
    def idle_count(self) -> int:
        return len(self._idle)

    def _refill(self) -> None:
        while not self._closed and len(self._idle) + len(self._starting) < self.size:
            task = asyncio.create_task(self._add_one())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _add_one(self) -> None:
        try:
            worker = await self._spawn()
        except WorkerCrashed as exc:
            logger.error("could not start a warm worker: %s", exc)
            return
        if self._closed:
            await worker.dispose()
        else:
            self._idle.append(worker)

    async def _spawn(self) -> WorkerProcess:
        return await WorkerProcess.spawn(
            allowed_imports=self._allowed_imports, memory_mb=self._memory_mb
        )

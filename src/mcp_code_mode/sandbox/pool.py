"""Worker processes, the zygote that forks them, and the warm pool that keeps some ready.

Every run gets fresh state. A local worker serves exactly one run and is then killed; the
pool asks the zygote for replacements in the background. A worker that can restore its
own fresh state (`reusable`: a Pyodide runner) is reset after a run that ended normally
and goes back to the pool; one whose reset fails is killed and replaced. Workers live in
their own session and die by SIGKILL to their process group; they and the zygote die with
the server (PR_SET_PDEATHSIG). A server that dies without disposing of its workers leaves
their directories to the zygote, which removes them before it exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Sequence
from typing import Any, Protocol

from ..errors import WorkerCrashed
from .base import GuestIndex
from .channel import LINE_LIMIT, Channel
from .child.output_mirror import create_mirror_fd, read_logs, read_mirror
from .protocol import ChildMessage, HostMessage, IndexMessage, encode

__all__ = ["Launcher", "Worker", "WorkerPool", "WorkerProcess", "Zygote"]

logger = logging.getLogger(__name__)

_START_TIMEOUT_S = 60.0
# After a run, how long the used worker's cleanup and its replacement wait: the reply is
# then on its way to the client, and a fork (a process start, on a machine of two cores)
# no longer competes with it. About 1 ms of the `1+1` round trip here (bench/speed.py).
_AFTER_REPLY_S = 0.005
_LOG_READ_BYTES = 64 * 1024  # of a running worker's log lines, read at a time (~16 ms worst)


def _minimal_env(home: str) -> dict[str, str]:
    # An explicit minimal environment: no variable of the server (API keys) reaches guests.
    return {"PATH": os.defpath, "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home}


def _scratch_root() -> str:
    """Where the zygote makes each worker's empty working directory: a tmpfs when there is
    one (`/dev/shm`), else the temp dir.

    A worker's directory is made and removed on every run; on a disk file system each of
    those is a journal write (a few milliseconds here). Workers cannot write a byte into
    it (RLIMIT_FSIZE is 0), so a tmpfs costs no memory.
    """
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return tempfile.gettempdir()


class Worker(Protocol):
    """A process that serves runs (or one interpreter session) over JSON lines.

    The extension point of the sandbox: a `Launcher` starts workers, the executor talks to
    them through `send` / `receive` (a `Channel`), and kills and disposes of them, or, when
    `reusable`, has the pool `reset()` them for another run.
    """

    pid: int
    workdir: str
    reusable: bool
    """Whether `reset()` can make the worker fresh again; if not, it serves one run."""
    index_version: int | None
    """The version of the last tool index this worker was sent (None: none); it keeps it."""

    async def send(self, message: HostMessage) -> None: ...

    async def receive(self) -> ChildMessage | None: ...

    def exited(self) -> bool: ...

    def kill(self) -> None: ...

    def produced(self) -> tuple[str, list[str]]:
        """The stdout and log lines of the current run so far, even after a kill."""
        ...

    def logs_since(self, offset: int) -> tuple[list[str], int]:
        """While the run works: the log lines written past `offset` (0: the run's first),
        a bounded amount of them, and the offset to ask from next."""
        ...

    async def reset(self) -> bool:
        """After a run that ended with `done`: restore the state runs start from, in place.

        False when it could not; the worker must then be disposed of.
        """
        ...

    async def dispose(self) -> None: ...


class Launcher(Protocol):
    """Starts workers: the zygote (`local`) or the Pyodide launcher (`pyodide`).

    `name` is the executor's name (MCP_EXECUTOR); `layers` the isolation layers its
    workers have, as detected at `start()`; `sessions` whether a worker can keep its
    namespace from one run message to the next (`"session": true`).
    """

    name: str
    layers: dict[str, bool]
    sessions: bool

    async def start(self) -> None: ...

    async def fork(self, *, memory_mb: int) -> Worker: ...

    def use_index(self, index: GuestIndex) -> None:
        """Workers started from now on may start with `index` (each says what it has)."""
        ...

    async def aclose(self) -> None: ...


class WorkerProcess:
    """One worker, forked by the zygote, talking JSON lines over a Unix socket; one run."""

    reusable = False

    def __init__(
        self,
        pid: int,
        workdir: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        mirror_fd: int | None = None,
        *,
        index_version: int | None = None,
    ) -> None:
        self.pid = pid
        self.workdir = workdir
        self.index_version = index_version  # inherited from the zygote at fork time
        self._channel = Channel(reader, writer, peer="worker")
        self._mirror_fd = mirror_fd
        self._pidfd: int | None = None
        with contextlib.suppress(OSError):
            self._pidfd = os.pidfd_open(pid)
        self._disposed = False

    async def send(self, message: HostMessage) -> None:
        await self._channel.send(message)

    async def receive(self) -> ChildMessage | None:
        """The next message, or None when the worker closed its socket (exited)."""
        return await self._channel.receive()

    def exited(self) -> bool:
        if self._pidfd is None:
            return True
        try:  # a pidfd polls readable once its process has exited
            import select

            return bool(select.select([self._pidfd], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def kill(self) -> None:
        """SIGKILL the worker's process group (anything it started dies too)."""
        if self.exited():
            return  # its pid may already belong to someone else
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def produced(self) -> tuple[str, list[str]]:
        if self._mirror_fd is None:
            return "", []
        return read_mirror(self._mirror_fd)

    def logs_since(self, offset: int) -> tuple[list[str], int]:
        if self._mirror_fd is None:
            return [], offset
        return read_logs(self._mirror_fd, offset, _LOG_READ_BYTES)

    async def reset(self) -> bool:
        return False  # a forked worker serves one run: the zygote forks a fresh one

    async def dispose(self) -> None:
        """Kill, wait for the exit, close and remove the working directory; idempotent."""
        if self._disposed:
            return
        self._disposed = True
        self.kill()
        for _ in range(200):  # up to ~2 s; a SIGKILLed process exits in milliseconds
            if self.exited():
                break
            await asyncio.sleep(0.01)
        self._channel.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self._mirror_fd is not None:
            os.close(self._mirror_fd)
            self._mirror_fd = None
        shutil.rmtree(self.workdir, ignore_errors=True)


def _remove_workdir(exchange: asyncio.Future[dict[str, Any]]) -> None:
    """Remove the working directory a fork reply names (of a worker nobody will use)."""
    if exchange.cancelled() or exchange.exception() is not None:
        return
    workdir = exchange.result().get("workdir")
    if isinstance(workdir, str) and os.path.basename(workdir).startswith("mcp-code-"):
        shutil.rmtree(workdir, ignore_errors=True)


class _ZygoteExited(WorkerCrashed):
    """The zygote went away while asked to fork: no worker came of the request."""


class Zygote:
    """The preloaded process that forks workers (see `mcp_code_mode.sandbox.child.zygote`)."""

    name = "local"
    sessions = True

    def __init__(self, *, allowed_imports: Sequence[str], scratch_root: str | None = None) -> None:
        """`scratch_root`: where workers' working directories are made (default: a tmpfs
        when there is one, see `_scratch_root`)."""
        self._allowed_imports = list(allowed_imports)
        self._scratch_root = scratch_root
        self._proc: asyncio.subprocess.Process | None = None
        self._control: socket.socket | None = None
        self._buffer = b""
        self._lock = asyncio.Lock()
        self._inflight: set[asyncio.Future[dict[str, Any]]] = set()
        self._index: GuestIndex | None = None
        self._sent_version: int | None = None  # of the index the running zygote has
        self.layers: dict[str, bool] = {}

    async def start(self) -> None:
        parent, child = socket.socketpair()
        home = self._scratch_root or _scratch_root()
        try:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-m",
                "mcp_code_mode.sandbox.child.zygote",
                str(child.fileno()),
                pass_fds=(child.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                env=_minimal_env(home),
                cwd="/",
                start_new_session=True,
            )
        finally:
            child.close()
        parent.setblocking(False)
        self._control = parent
        self._sent_version = None
        parent.send(encode({"op": "init", "allowed_imports": self._allowed_imports}))
        try:
            async with asyncio.timeout(_START_TIMEOUT_S):
                ready = await self._receive()
        except (TimeoutError, WorkerCrashed):
            await self._stop()
            raise WorkerCrashed("the sandbox zygote did not start") from None
        # What every forked worker has, then what the zygote's probe found to hold.
        self.layers = {
            "worker_process": True,
            "minimal_env": True,
            "empty_tmp_cwd": True,
            "rlimits": True,
            "kill_on_timeout": True,
            **dict(ready.get("layers") or {}),
        }

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def use_index(self, index: GuestIndex) -> None:
        """The zygote gets `index` before its next fork, so the workers it forks have it."""
        self._index = index

    async def fork(self, *, memory_mb: int) -> WorkerProcess:
        """A new worker that has confined itself and said `ready`."""
        try:
            return await self._fork(memory_mb)
        except _ZygoteExited:
            # It went away between two forks (say, it was sent SIGTERM): ask a new one.
            return await self._fork(memory_mb)

    async def _fork(self, memory_mb: int) -> WorkerProcess:
        host_end, child_end = socket.socketpair()
        mirror_fd = create_mirror_fd()
        exchange: asyncio.Future[dict[str, Any]] | None = None
        try:
            # Shielded: once the request is sent, its reply must be read, or the next
            # request would read it. A cancelled caller's worker sees EOF and exits.
            exchange = asyncio.ensure_future(self._request_fork(child_end, mirror_fd, memory_mb))
            self._inflight.add(exchange)
            exchange.add_done_callback(self._inflight.discard)
            reply = await asyncio.shield(exchange)
            reader, writer = await asyncio.open_unix_connection(sock=host_end, limit=LINE_LIMIT)
        except BaseException:
            host_end.close()
            if exchange is not None:
                # A cancelled caller's worker exits at EOF; its directory is ours to remove.
                exchange.add_done_callback(_remove_workdir)
            if mirror_fd is not None:
                # A cancelled caller's request may still be sending the fd: close it after.
                if exchange is None or exchange.done():
                    os.close(mirror_fd)
                else:
                    exchange.add_done_callback(lambda _: os.close(mirror_fd))
            raise
        version = reply.get("index_version")
        worker = WorkerProcess(
            int(reply["pid"]),
            str(reply["workdir"]),
            reader,
            writer,
            mirror_fd,
            index_version=version if isinstance(version, int) else None,
        )
        try:
            async with asyncio.timeout(_START_TIMEOUT_S):
                ready = await worker.receive()
            if ready is None or ready.get("op") != "ready":
                raise WorkerCrashed(f"worker {worker.pid} did not start")
        except BaseException:
            await worker.dispose()
            raise
        return worker

    async def _request_fork(
        self, child_end: socket.socket, mirror_fd: int | None, memory_mb: int
    ) -> dict[str, Any]:
        try:
            async with self._lock:
                if not self.alive:
                    await self._stop()
                    await self.start()
                assert self._control is not None
                request = encode({"op": "fork", "memory_mb": memory_mb})
                fds = [child_end.fileno(), *([mirror_fd] if mirror_fd is not None else [])]
                try:
                    await self._send_index()
                    socket.send_fds(self._control, [request], fds)
                except (BrokenPipeError, ConnectionResetError):
                    await self._stop()  # it exited but was not reaped yet
                    raise _ZygoteExited("the sandbox zygote exited") from None
                child_end.close()
                return await self._receive()
        finally:
            child_end.close()

    async def _send_index(self) -> None:
        """Give the zygote the newest index, unless it has it (under `_lock`)."""
        index = self._index
        if index is None or index.version == self._sent_version:
            return
        assert self._control is not None
        message: IndexMessage = {"op": "index", "version": index.version, "index": index.servers}
        await asyncio.get_running_loop().sock_sendall(self._control, encode(message))
        self._sent_version = index.version

    async def _receive(self) -> dict[str, Any]:
        assert self._control is not None
        loop = asyncio.get_running_loop()
        while b"\n" not in self._buffer:
            try:
                chunk = await loop.sock_recv(self._control, 1 << 16)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                await self._stop()
                raise _ZygoteExited("the sandbox zygote exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    async def aclose(self) -> None:
        """Abandon pending fork requests, then stop the zygote."""
        for exchange in list(self._inflight):
            exchange.cancel()
        await asyncio.gather(*self._inflight, return_exceptions=True)
        await self._stop()

    async def _stop(self) -> None:
        """Close the channel (the zygote exits on EOF) and make sure it is gone."""
        if self._control is not None:
            self._control.close()
            self._control = None
        self._buffer = b""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            try:
                async with asyncio.timeout(2):
                    await asyncio.shield(proc.wait())
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await asyncio.shield(proc.wait())


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

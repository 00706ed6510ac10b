"""The local backend: the zygote that forks workers, and the host's handle on one worker.

Every run gets fresh state: a local worker serves exactly one run (or one session) and is
then killed; the pool asks the zygote for replacements in the background. Workers live in
their own session and die by SIGKILL to their process group; they and the zygote die with
the server (PR_SET_PDEATHSIG). A server that dies without disposing of its workers leaves
their directories to the zygote, which removes them before it exits. The child's half is
`sandbox.child.zygote`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import WorkerCrashed
from ..settings import DEFAULT_ALLOWED_IMPORTS
from .base import GuestIndex
from .channel import LINE_LIMIT, Channel
from .child.output_mirror import create_mirror_fd, read_logs, read_mirror
from .protocol import ChildMessage, HostMessage, IndexMessage, encode

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["WorkerProcess", "Zygote"]

_START_TIMEOUT_S = 60.0
LOG_READ_BYTES = 64 * 1024  # of a running worker's log lines, read at a time (~16 ms worst)


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
        return read_logs(self._mirror_fd, offset, LOG_READ_BYTES)

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

    @classmethod
    def from_settings(cls, settings: Settings) -> Zygote:
        return cls(allowed_imports=settings.allowed_imports)

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
        extras = [m for m in self._allowed_imports if m not in DEFAULT_ALLOWED_IMPORTS]
        init = {"op": "init", "allowed_imports": self._allowed_imports, "whole_packages": extras}
        parent.send(encode(init))
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

"""The sandbox's one extension point: a `Launcher` starts `Worker`s.

A backend is a module beside this one with a launcher class (`local.Zygote`,
`pyodide.PyodideLauncher`); `launchers.py` picks it by MCP_EXECUTOR. The pool
(`pool.WorkerPool`) schedules workers of any launcher; the executor and the dspy adapter
talk to a worker through `send` / `receive`, and kill or dispose of it, or, when
`reusable`, have the pool `reset()` it for another run.
"""

from __future__ import annotations

from typing import Protocol

from .base import GuestIndex
from .protocol import ChildMessage, HostMessage

__all__ = ["Launcher", "Worker"]


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

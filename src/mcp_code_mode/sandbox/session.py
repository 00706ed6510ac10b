"""`CodeSession`: snippets that run one after another in one worker, sharing their variables.

The agent's steps for one task run in a session, as code agents' steps do: what a step
computed is there for the next one. Each snippet still passes the policy and runs under the
run limits (its own time limit; the worker's memory limit holds for the session); at most
`SandboxExecutor.session_slots` sessions hold a worker at once, the rest wait (one that
waits for a person's approval gives its place back meanwhile, as a run does). A step
that times out or crashes loses the worker, and with it the variables: the result says so,
and the next step gets a fresh worker. Only launchers whose workers keep a namespace
(`Launcher.sessions`: both executors) have sessions.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

from ..errors import ErrorType, WorkerCrashed
from .backend import Launcher, Worker
from .base import ExecutionResult, GuestIndex, Limits, ToolRouter
from .conversation import Conversation, Hold
from .pool import WorkerPool
from .protocol import RunMessage
from .results import KILL_GRACE_S, check_code, result_of
from .run_slots import Place, RunSlots

__all__ = ["LOST", "CodeSession"]

LOST = "the session's variables were lost with its worker; the next step starts afresh"


class SessionHost(Protocol):
    """What a session needs of its executor (`SandboxExecutor`)."""

    @property
    def name(self) -> str: ...

    launcher: Launcher
    pool: WorkerPool
    session_slots: RunSlots
    allowed_imports: tuple[str, ...]
    limits: Limits

    def run_message(
        self, code: str, input: Any, timeout_s: float, index: GuestIndex
    ) -> RunMessage: ...


class CodeSession:
    """One worker of `executor`'s kind, held for a sequence of runs; `close()` ends it."""

    def __init__(self, executor: SessionHost) -> None:
        if not executor.launcher.sessions:
            raise ValueError(f"the {executor.name} executor keeps no state between runs")
        self._executor = executor
        self._worker: Worker | None = None
        self._place: Place | None = None  # one of the executor's `session_slots`
        self._lock = asyncio.Lock()  # one snippet at a time: they share one namespace

    async def run(
        self, code: str, *, input: Any, timeout_s: float, index: GuestIndex, router: ToolRouter
    ) -> ExecutionResult:
        """Run `code` after the session's earlier snippets, in their namespace."""
        async with self._lock:
            started = time.perf_counter()
            result = check_code(code, self._executor.allowed_imports, self._executor.limits)
            if result is None:
                result = await self._converse(code, input, timeout_s, index, router)
            result.tool_calls = [*router.records()]
            result.duration_ms = round((time.perf_counter() - started) * 1000, 1)
            return result

    async def _converse(
        self, code: str, input: Any, timeout_s: float, index: GuestIndex, router: ToolRouter
    ) -> ExecutionResult:
        if self._place is None:  # a bounded number of sessions hold workers (memory) at once
            self._place = await self._executor.session_slots.take(router.owner)
        if self._worker is None or self._worker.exited():
            self._worker = await self._executor.pool.fork()
        message = self._executor.run_message(code, input, timeout_s, index)
        message["session"] = True
        try:
            async with asyncio.timeout(timeout_s + KILL_GRACE_S) as clock:
                hold = Hold(clock, self._place)
                done = await Conversation(self._worker, router, hold=hold).run(message)
            result = await result_of(done, self._executor.limits.max_output_chars)
        except TimeoutError:
            result = ExecutionResult.failure(
                ErrorType.TIMEOUT, f"the step exceeded its {timeout_s:g}s time limit; {LOST}"
            )
        except WorkerCrashed as exc:
            result = ExecutionResult.failure(ErrorType.EXECUTOR_ERROR, f"{exc}; {LOST}")
        timed_out = result.error is not None and result.error.type == ErrorType.TIMEOUT
        if timed_out or self._worker is None or self._worker.exited():
            self._drop()  # a timed out worker may still be running the snippet
            if result.error is not None and LOST not in result.error.message:
                result.error.message = f"{result.error.message}; {LOST}"
        return result

    def _drop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill()
            self._executor.pool.reap(worker)

    def close(self) -> None:
        """Kill the session's worker (its variables go with it); idempotent."""
        self._drop()
        place, self._place = self._place, None
        if place is not None:
            place.leave()

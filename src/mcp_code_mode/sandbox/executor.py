"""The executor: policy-checked Python in a worker process from a warm pool.

One executor for every sandbox: what a worker is comes from its `Launcher` (the zygote's
forked processes for `local`, Deno + Pyodide runners for `pyodide`), which also names
the executor and reports its isolation layers. Here: the AST policy (in the server,
before anything runs), a fresh worker (or one its launcher made fresh again) per run, the
conversation that answers its tool calls, a soft timer in the worker and a hard kill from
the host at timeout + grace. Not stopped here: whatever the launcher's layers do not stop
(see the README's security model).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..errors import ErrorType, WorkerCrashed
from ..settings import DEFAULT_ALLOWED_IMPORTS, Settings
from .backend import Launcher
from .base import ExecutionResult, GuestIndex, Limits, Session, ToolRouter
from .child.outcome import TIMEOUT_ADVICE
from .child.rules import ALWAYS_IMPORTABLE, CHECKED_EXTRAS, UNGUARDED_MODULES
from .conversation import Conversation, Hold
from .launchers import launcher_for
from .pool import WorkerPool
from .protocol import DoneMessage, RunMessage, decode_cost
from .results import KILL_GRACE_S, check_code, result_of
from .run_slots import Place, RunSlots

__all__ = ["MAX_WAITING_BYTES", "MAX_WAITING_RUNS", "SandboxExecutor", "runs_that_fit"]

logger = logging.getLogger(__name__)

MAX_WAITING_RUNS = 1000
MAX_WAITING_BYTES = 256 << 20
"""Runs that may wait for a slot (`runs_that_fit`), and what their code and input hold as
objects in all (`decode_cost` of their JSON); the next is an EXECUTOR_ERROR at once
(clients that hung up left 300 runs of 3 MB waiting: 1.9 GB, outside attack 109; a count
alone failed an agent's burst of small calls, attack 111; 4 MB of `[],` held 25 times
their characters, attack 113)."""


class SandboxExecutor:
    """Runs each snippet in a fresh worker of `launcher`'s kind, from a warm pool."""

    def __init__(
        self,
        launcher: Launcher,
        *,
        allowed_imports: Sequence[str],
        limits: Limits,
        pool_size: int = 2,
    ) -> None:
        self.launcher = launcher
        self.allowed_imports = tuple(allowed_imports)
        self.limits = limits
        self.pool = WorkerPool(size=pool_size, launcher=launcher, memory_mb=limits.memory_mb)
        self.session_slots = RunSlots(max(2, 2 * pool_size))  # sessions with a worker
        # Runs at once; the rest wait their turn (the wait is not their run time): each may
        # hold up to `memory_mb`, and 24 at once took the host to 4.3 GB (outside attack 56).
        self.run_slots = RunSlots(runs_that_fit(limits.memory_mb))
        self.waiting = 0  # runs waiting for a slot, each holding its input
        self.waiting_bytes = 0
        self.max_waiting = (MAX_WAITING_RUNS, MAX_WAITING_BYTES)
        self._active = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> SandboxExecutor:
        """The executor MCP_EXECUTOR names, with the settings' imports, limits and pool."""
        launcher = launcher_for(settings)
        return cls(
            launcher,
            allowed_imports=settings.allowed_imports,
            limits=Limits.from_settings(settings),
            pool_size=settings.pool_size,
        )

    @property
    def name(self) -> str:
        """`local` or `pyodide`: what MCP_EXECUTOR says."""
        return self.launcher.name

    async def start(self) -> None:
        for module in self.allowed_imports:
            warning = _unchecked(module)
            if warning is not None:
                logger.warning("MCP_CODE_ALLOWED_IMPORTS: %s", warning)
        await self.pool.start()

    async def aclose(self) -> None:
        await self.pool.aclose()

    def layers(self) -> dict[str, bool]:
        return {"ast_policy": True, "restricted_builtins": True, **self.launcher.layers}

    def run_message(self, code: str, input: Any, timeout_s: float, index: GuestIndex) -> RunMessage:
        """The `run` message of one snippet (a session's adds `"session": true`)."""
        return {
            "op": "run",
            "code": code,
            "input": input,
            "index_version": index.version,
            "index": index.servers,
            "timeout_s": timeout_s,
            "max_output_chars": self.limits.max_output_chars,
            "max_call_bytes": self.limits.max_call_bytes,
            "seed": secrets.randbits(128),
        }

    def open_session(self) -> Session | None:
        """A `CodeSession` on this executor's workers, when they keep a namespace."""
        from .session import CodeSession  # it builds on this module

        return CodeSession(self) if self.launcher.sessions else None

    @property
    def active(self) -> int:
        return self._active

    async def run(
        self, code: str, *, input: Any, timeout_s: float, index: GuestIndex, router: ToolRouter
    ) -> ExecutionResult:
        """Check, then run `code` in a worker; failures of the guest come back as values.
        Workers started from now on get `index` from the launcher; one that has another
        version gets it in its `run` message (see `Conversation.run`)."""
        self._active += 1  # a drain waits for these (`http_serving`)
        try:
            return await self._run(code, input, timeout_s, index, router)
        finally:
            self._active -= 1

    async def _run(
        self, code: str, input: Any, timeout_s: float, index: GuestIndex, router: ToolRouter
    ) -> ExecutionResult:
        started = time.perf_counter()
        refused = check_code(code, self.allowed_imports, self.limits)
        if refused is not None:
            refused.duration_ms = _ms_since(started)
            return refused
        cost = _size(code, input) if self.run_slots.locked() else 0  # only if it waits
        runs, held = self.max_waiting
        if self.waiting >= runs or self.waiting_bytes + cost > held:
            return ExecutionResult.failure(
                ErrorType.EXECUTOR_ERROR,
                f"the gateway is busy: {self.waiting} runs are waiting for a worker; "
                "try again shortly",
                duration_ms=_ms_since(started),
            )
        self.launcher.use_index(index)
        message = self.run_message(code, input, timeout_s, index)
        produced: list[tuple[str, list[str]]] = []  # stdout and logs of a killed worker
        try:
            async with (
                self._slot(cost, router.owner) as place,
                asyncio.timeout(timeout_s + KILL_GRACE_S) as clock,
            ):
                done = await self._attempt(message, router, produced, Hold(clock, place))
            result = await result_of(done, self.limits.max_output_chars)
        except TimeoutError:
            result = ExecutionResult.failure(
                ErrorType.TIMEOUT,
                f"the run exceeded its {timeout_s:g}s time limit and was killed" + TIMEOUT_ADVICE,
            )
        except WorkerCrashed as exc:
            result = ExecutionResult.failure(ErrorType.EXECUTOR_ERROR, str(exc))
        if not result.ok and produced:
            result.stdout, result.logs = produced[-1]
        result.tool_calls = [*router.records()]
        result.duration_ms = _ms_since(started)
        return result

    @contextlib.asynccontextmanager
    async def _slot(self, cost: int, owner: str) -> AsyncIterator[Place]:
        self.waiting += 1
        self.waiting_bytes += cost
        try:
            place = await self.run_slots.take(owner)
        finally:
            self.waiting -= 1
            self.waiting_bytes -= cost
        try:
            yield place
        finally:
            place.leave()

    async def _attempt(
        self,
        message: RunMessage,
        router: ToolRouter,
        produced: list[tuple[str, list[str]]],
        hold: Hold,
    ) -> DoneMessage:
        """Run on a pool worker; once more on a fresh one if the first died without a trace.
        A worker that ends without its `done` message leaves in `produced` the stdout and
        logs it had mirrored (see `output_mirror`). A warm worker can die before it runs
        anything (its zygote was killed, the OS reclaimed it). When it made no tool call or
        query, nothing observable happened (workers have no network and cannot write
        files), so one retry is safe."""
        for attempt in (1, 2):
            # The retry forks afresh: idle workers may have died with the first one's cause.
            worker = await (self.pool.acquire() if attempt == 1 else self.pool.fork())
            conversation = Conversation(worker, router, hold=hold)
            done: DoneMessage | None = None
            try:
                done = await conversation.run(message)
                return done
            except WorkerCrashed:
                if attempt == 2 or conversation.requests:
                    raise
            finally:
                # Only a run that ended normally (not a TIMEOUT) leaves a worker worth
                # resetting; a timed out, crashed or cancelled one is killed at once:
                # nothing of its run outlives it.
                error: object = done.get("error") if done is not None else None
                timed_out = isinstance(error, dict) and error.get("type") == ErrorType.TIMEOUT
                reuse = (
                    done is not None
                    and worker.reusable
                    and (error is None or isinstance(error, dict))
                    and not timed_out
                )
                if not reuse:
                    worker.kill()
                try:
                    if done is None:
                        produced.append(worker.produced())
                finally:
                    # The reset, or the exit and cleanup, need not delay the reply.
                    self.pool.release(worker, reuse=reuse)
        raise AssertionError("unreachable")


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _unchecked(module: str) -> str | None:
    """What the server says of an allowed module the Python layer does not hold for."""
    root = module.partition(".")[0]
    why = UNGUARDED_MODULES.get(root)
    if why is not None:
        return (
            f"{module} is not guarded by the sandbox's Python layer ({why}): guest code that "
            "imports it reaches the real interpreter, and only the OS layers hold"
        )
    if root in DEFAULT_ALLOWED_IMPORTS or root in ALWAYS_IMPORTABLE or root in CHECKED_EXTRAS:
        return None
    return (
        f"{module} has not been checked against the sandbox's Python layer: what guest code "
        "reaches through it is for the OS layers to hold"
    )


def _size(code: str, input: Any) -> int:
    """What a waiting run holds as objects, estimated from its input's JSON (measured only
    when it must wait)."""
    try:
        return len(code) + decode_cost(json.dumps(input, default=repr).encode())
    except (TypeError, ValueError, RecursionError):
        return MAX_WAITING_BYTES  # not measurable: it waits alone


def runs_that_fit(memory_mb: int) -> int:
    """How many runs at once: half the machine's memory in runs at their memory limit, at
    least 4 (more runs wait; a worker's memory is capped by the OS, the sum was not)."""
    try:
        total_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    except (ValueError, OSError):
        return 16
    return max(4, total_mb // 2 // max(memory_mb, 1))

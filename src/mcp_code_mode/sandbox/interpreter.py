"""`MCPCodeInterpreter`: dspy's `CodeInterpreter` protocol over our sandbox (sync, a session).

One worker of a `Launcher` (by default a local zygote's; `over()` takes the executor
MCP_EXECUTOR names, so a Pyodide runner there) is held from `start()` to `shutdown()`, so
variables persist between `execute()` calls, as dspy's protocol requires. Every snippet
still passes the AST policy and runs under the worker's limits. `SUBMIT(**fields)` returns
`FinalOutput(fields)`; a guest error raises `CodeExecutionError` (`SyntaxError` for
syntax); a dead worker raises `CodeInterpreterError`, and the session is over. Guest tool
calls go to `router` (e.g. a gateway's, see `Gateway.interpreter()`), run on `router_loop`
when the router lives on another event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from dspy.primitives.code_interpreter import (
    CodeExecutionError,
    CodeInterpreterError,
    FinalOutput,
)

from ..errors import CodeModeError, ToolCallFailed, WorkerCrashed
from ..tool_results import ResultBudget
from .backend import Launcher, Worker
from .base import GuestIndex, Limits, ToolCallRecord, ToolRouter
from .conversation import Conversation
from .local import Zygote
from .policy import check_policy
from .protocol import DoneMessage, RunMessage
from .results import KILL_GRACE_S

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["MCPCodeInterpreter"]

T = TypeVar("T")


class _NoTools:
    """The router of an interpreter without upstreams: every call fails clearly."""

    paused_s = 0.0
    owner = ""

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        budget: ResultBudget | None = None,
        refused: str | None = None,
    ) -> Any:
        raise ToolCallFailed(server, tool, "no MCP servers are connected to this interpreter")

    def result_budget(self) -> ResultBudget:
        return ResultBudget(0)

    async def query(self, kind: str, args: dict[str, Any]) -> Any:
        return []

    def admit(self, count: int) -> None:
        return None

    def on_pause(
        self,
        notify: Callable[[], Awaitable[str | None]],
        resume: Callable[[], Awaitable[None]],
    ) -> None:
        return None

    def logs_to(self) -> None:
        return None

    def records(self) -> list[ToolCallRecord]:
        return []


class _ThreadSafeRouter:
    """Runs another loop's router coroutines there, awaited from the interpreter's loop."""

    def __init__(self, router: ToolRouter, loop: asyncio.AbstractEventLoop) -> None:
        self._router, self._loop = router, loop
        self.owner = router.owner

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        budget: ResultBudget | None = None,
        refused: str | None = None,
    ) -> Any:
        calling = self._router.call(server, tool, args, budget=budget, refused=refused)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(calling, self._loop))

    def result_budget(self) -> ResultBudget:
        return self._router.result_budget()  # a new object: safe from this thread

    async def query(self, kind: str, args: dict[str, Any]) -> Any:
        future = asyncio.run_coroutine_threadsafe(self._router.query(kind, args), self._loop)
        return await asyncio.wrap_future(future)

    def admit(self, count: int) -> None:
        self._router.admit(count)  # reads a counter: safe from this thread

    @property
    def paused_s(self) -> float:
        return self._router.paused_s

    def on_pause(
        self,
        notify: Callable[[], Awaitable[str | None]],
        resume: Callable[[], Awaitable[None]],
    ) -> None:
        return None  # sessions answer no approvals: their router has no person to ask

    def logs_to(self) -> None:
        return None  # a dspy session's lines come back with each snippet's result

    def records(self) -> list[ToolCallRecord]:
        return self._router.records()


class MCPCodeInterpreter:
    """A dspy `CodeInterpreter` whose code runs in our sandbox and can call MCP tools."""

    def __init__(
        self,
        *,
        router: ToolRouter | None = None,
        router_loop: asyncio.AbstractEventLoop | None = None,
        index: GuestIndex | dict[str, Any] | None = None,
        allowed_imports: Sequence[str] = (),
        limits: Limits | None = None,
        timeout_s: float = 30.0,
        launcher: Launcher | None = None,
    ) -> None:
        """`launcher`: what starts the session's worker (default: a local zygote); it must
        have `sessions`, and is started and closed by this interpreter."""
        from ..settings import DEFAULT_ALLOWED_IMPORTS

        self._router: ToolRouter = router or _NoTools()
        if router is not None and router_loop is not None:
            self._router = _ThreadSafeRouter(router, router_loop)
        # Fixed for the session: its worker gets it with the first snippet only.
        self._index = index if isinstance(index, GuestIndex) else GuestIndex.of(index or {})
        self.allowed_imports = tuple(allowed_imports) or DEFAULT_ALLOWED_IMPORTS
        self.limits = limits or Limits()
        self.timeout_s = timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._launcher = launcher or Zygote(allowed_imports=self.allowed_imports)
        if not self._launcher.sessions:
            raise ValueError(f"the {self._launcher.name} executor keeps no state between runs")
        self._started = False
        self._worker: Worker | None = None
        self._dead: str | None = None

    @classmethod
    def over(cls, router: ToolRouter, index: GuestIndex, settings: Settings) -> MCPCodeInterpreter:
        """A session whose tool calls go to `router` (a gateway's, on the running loop).

        Use it (it is synchronous) from another thread, e.g. through `asyncio.to_thread`.
        Its worker comes from the executor MCP_EXECUTOR names.
        """
        from .launchers import launcher_for

        return cls(
            router=router,
            router_loop=asyncio.get_running_loop(),
            index=index,
            allowed_imports=settings.allowed_imports,
            limits=Limits.from_settings(settings),
            timeout_s=settings.timeout_s,
            launcher=launcher_for(settings),
        )

    @property
    def executor(self) -> str:
        """`local` or `pyodide`: the kind of worker the session runs in."""
        return self._launcher.name

    @property
    def tools(self) -> dict[str, Callable[..., Any]]:
        """MCP tools are reached from code as `tools.<server>.<tool>(...)`, not as globals."""
        return {}

    def start(self) -> None:
        """Start the interpreter's loop thread, the launcher and the session's worker."""
        if self._worker is not None:
            return
        if self._dead is not None:
            raise CodeInterpreterError(self._dead)
        loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=loop.run_forever, name="mcp-interpreter", daemon=True
        )
        self._thread.start()
        self._loop = loop
        try:
            self._started = True
            self._call(self._launcher.start())
            self._worker = self._call(self._launcher.fork(memory_mb=self.limits.memory_mb))
        except CodeModeError as exc:  # e.g. WorkerCrashed, or no Deno for Pyodide
            self.shutdown()
            raise CodeInterpreterError(str(exc)) from None

    def execute(self, code: str, variables: dict[str, Any] | None = None) -> Any:
        """Run one snippet in the session; see the module docstring for the outcomes."""
        self.start()
        violation = check_policy(
            code,
            allowed_imports=self.allowed_imports,
            max_chars=self.limits.max_chars,
            max_lines=self.limits.max_lines,
        )
        if violation is not None:
            if violation.kind == "SYNTAX_ERROR":
                raise SyntaxError(f"{violation.message} (line {violation.line})")
            raise CodeExecutionError(
                f"POLICY_VIOLATION (line {violation.line}): {violation.message}"
            )
        message: RunMessage = {
            "op": "run",
            "code": code,
            "input": None,
            "index_version": self._index.version,
            "index": self._index.servers,
            "timeout_s": self.timeout_s,
            "max_output_chars": self.limits.max_output_chars,
            "max_call_bytes": self.limits.max_call_bytes,
            "session": True,
            "variables": variables or {},
        }
        done = self._call(self._converse(message))
        if done.get("submitted"):
            return FinalOutput(done["result"])
        if not done["ok"]:
            error: dict[str, Any] = dict(done["error"] or {})
            where = f" (line {error['line']})" if error.get("line") else ""
            raise CodeExecutionError(f"{error.get('type')}{where}: {error.get('message')}")
        output = str(done["stdout"])
        if done["result"] is not None:
            output += repr(done["result"]) if not output else "\n" + repr(done["result"])
        return output or None

    def shutdown(self) -> None:
        """Kill the worker, stop the launcher and the loop thread; idempotent."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        worker, self._worker = self._worker, None
        started, self._started = self._started, False
        launcher = self._launcher

        async def close() -> None:
            if worker is not None:
                await worker.dispose()
            if started:
                await launcher.aclose()

        asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        loop.close()

    def __enter__(self) -> MCPCodeInterpreter:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    async def _converse(self, message: RunMessage) -> DoneMessage:
        worker = self._worker
        if worker is None or self._dead is not None:
            raise CodeInterpreterError(self._dead or "the interpreter is not started")
        try:
            async with asyncio.timeout(self.timeout_s + KILL_GRACE_S):
                return await Conversation(worker, self._router).run(message)
        except TimeoutError:
            self._dead = (
                f"the snippet ignored its {self.timeout_s:g}s time limit and the worker was "
                "killed; the session's state is lost (start a new interpreter)"
            )
        except WorkerCrashed as exc:
            self._dead = f"{exc}; the session's state is lost (start a new interpreter)"
        worker.kill()
        raise CodeInterpreterError(self._dead)

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result()

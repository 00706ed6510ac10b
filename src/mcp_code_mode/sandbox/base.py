"""What every executor shares: the result shape (contract §3), the router and the Protocol."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field, PrivateAttr

from ..errors import ErrorType
from ..tool_results import ResultBudget

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = [
    "ErrorDetail",
    "ExecutionResult",
    "Executor",
    "GuestIndex",
    "Limits",
    "Session",
    "ToolCallGroup",
    "ToolCallRecord",
    "ToolRouter",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """What one run may use (contract §5); the executor and its workers enforce them."""

    memory_mb: int = 256
    max_output_chars: int = 100_000
    max_call_bytes: int = 1_000_000  # of one tool call's arguments, as JSON
    max_chars: int = 8000  # of code
    max_lines: int = 400  # of code

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            memory_mb=settings.memory_mb,
            max_output_chars=settings.max_output_chars,
            max_call_bytes=settings.max_call_bytes,
            max_chars=settings.max_chars,
            max_lines=settings.max_lines,
        )


_INDEX_VERSIONS = itertools.count(1)


@dataclass(frozen=True, slots=True)
class GuestIndex:
    """What workers build `tools.<server>.<tool>` from, and its version.

    `servers` maps server identifiers to `{"name", "tools": {tool id: name}, "error"?}`.
    A version names one content for the life of the process (`GuestIndex.of` numbers them),
    so a worker that has version `v` needs no copy of it; never change `servers` once made.
    """

    version: int
    servers: dict[str, Any]

    @classmethod
    def of(cls, servers: dict[str, Any]) -> GuestIndex:
        """`servers` under a version no other index of this process has."""
        return cls(next(_INDEX_VERSIONS), servers)


class ToolCallRecord(BaseModel):
    """One upstream call of a run, by original names."""

    server: str
    tool: str
    ms: float
    ok: bool
    _since: float | None = PrivateAttr(None)  # time.perf_counter() while it is in flight

    def in_flight(self, since: float | None) -> None:
        """The call went out at `since` (None: it has ended, `ms` is set)."""
        self._since = since

    def as_of(self, now: float) -> ToolCallRecord:
        """This record; a call still in flight timed until `now` (a run its time limit cut
        reported 0 ms for a call that had run 2 s: attack 133)."""
        if self._since is None:
            return self
        return self.model_copy(update={"ms": round(max(0.0, now - self._since) * 1000, 1)})


class ToolCallGroup(BaseModel):
    """The calls of a run to one (server, tool), when the run made more than 20 (§6)."""

    server: str
    tool: str
    count: int
    failed: int
    ms: float
    ok: bool


class ErrorDetail(BaseModel):
    type: ErrorType
    message: str
    line: int | None = None


class ExecutionResult(BaseModel):
    """The `execute_code` result object; `to_json()` is exactly the contract's shape."""

    ok: bool
    result: Any = None
    stdout: str = ""
    logs: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord | ToolCallGroup] = Field(default_factory=list)
    duration_ms: float = 0.0
    error: ErrorDetail | None = None

    @classmethod
    def failure(
        cls, error_type: ErrorType, message: str, line: int | None = None, **fields: Any
    ) -> ExecutionResult:
        return cls(
            ok=False, error=ErrorDetail(type=error_type, message=message, line=line), **fields
        )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class ToolRouter(Protocol):
    """Carries one run's guest requests to the upstreams (implemented by the gateway)."""

    owner: str  # whose run it is (its client), for fair shares among clients; "": unknown

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        budget: ResultBudget | None = None,
        refused: str | None = None,
    ) -> Any:
        """Call a tool and return its unwrapped value (a `ToolCallFailed` instead when
        `budget`, a batch's, cannot take it). With `refused` (why the worker did not send
        the arguments), the call is recorded as failed and not made.

        Raises:
            CodeModeError: `ToolCallFailed` for a failed call (catchable by the guest);
                any error whose type is TOOL_CALL_LIMIT ends the run.
        """
        ...

    def result_budget(self) -> ResultBudget:
        """A new budget for the results of one batch of calls (`call_tools`)."""
        ...

    async def query(self, kind: str, args: dict[str, Any]) -> Any:
        """Answer `search_tools` / `get_tool_docs` / `list_servers`, or take the guest's
        `progress` (for the client; answers None); raises CodeModeError."""
        ...

    def admit(self, count: int) -> None:
        """Check that `count` more calls fit the run's limit before any is started.

        Raises:
            CodeModeError: of type TOOL_CALL_LIMIT when they do not (ends the run).
        """
        ...

    def records(self) -> list[ToolCallRecord]:
        """The calls made so far, in the order issued."""
        ...

    @property
    def paused_s(self) -> float:
        """Seconds spent waiting for a person (approvals): not counted against the run."""
        ...

    def on_pause(
        self,
        notify: Callable[[], Awaitable[str | None]],
        resume: Callable[[], Awaitable[None]],
    ) -> None:
        """Have `notify()` awaited before the run waits for a person (it stops the run's
        clock, and gives its place among runs at once back; what it returns declines the
        question instead), and `resume()` once the answer is in (not when the call it was
        for ends: the rest of a batch ran with no clock). Called once per worker."""
        ...

    def logs_to(self) -> Callable[[list[str]], Awaitable[bool]] | None:
        """Where the run's log lines go while it works, new ones each time; it answers
        whether it wants more (None: nowhere, and the executor does not look for them)."""
        ...


class Session(Protocol):
    """Snippets run one after another with shared variables (`Executor.open_session`)."""

    async def run(
        self, code: str, *, input: Any, timeout_s: float, index: GuestIndex, router: ToolRouter
    ) -> ExecutionResult:
        """Run `code` after the session's earlier snippets, in their namespace."""
        ...

    def close(self) -> None:
        """End the session (its variables go with it); idempotent."""
        ...


class Executor(Protocol):
    """Runs guest code somewhere other than the server process."""

    @property
    def name(self) -> str:
        """`local` or `pyodide`."""
        ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def run(
        self, code: str, *, input: Any, timeout_s: float, index: GuestIndex, router: ToolRouter
    ) -> ExecutionResult:
        """Run `code` with `tools` built from `index`; failures of the guest are values."""
        ...

    def layers(self) -> dict[str, bool]:
        """The isolation layers in force, by name."""
        ...

    @property
    def active(self) -> int:
        """Runs in progress: waiting for a worker, running, or waiting for an answer."""
        ...

    def open_session(self) -> Session | None:
        """A session of runs that keep their variables; None when workers keep no state."""
        ...

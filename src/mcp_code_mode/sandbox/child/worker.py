"""Running one guest snippet: compile, execute with limits, build the `done` message.

Used by the local executor's workers (forked by the zygote, see `zygote.serve`) and inside
Pyodide by the Wasm executor's runner, so it touches no OS facility beyond `signal`
(see `soft_timer`). Stdlib only.

What this process does not stop on its own: the AST policy and the restricted
builtins are a speed bump, not a wall; isolation from the host's files, network and
processes comes from the OS layers the host applies (see the local executor).
"""

from __future__ import annotations

import io
import signal
import sys
import time
from collections.abc import Callable
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

from mcp_code_mode.sandbox.child.guest import Fatal, GuestRuntime, Submitted
from mcp_code_mode.sandbox.child.outcome import (
    TIMEOUT_ADVICE,
    error_for,
    make_error,
    result_value,
)
from mcp_code_mode.sandbox.child.rewrite import RESULT_NAME, compile_guest
from mcp_code_mode.sandbox.child.rules import GUEST_MODULE, TOO_DEEP
from mcp_code_mode.sandbox.child.tools_view import GuestIndex, freeze_index
from mcp_code_mode.sandbox.protocol import (
    DECODE_BUDGET,
    DoneMessage,
    ErrorCode,
    ErrorInfo,
    decode_cost,
    encode,
)

if TYPE_CHECKING:  # not loaded under Pyodide, which has no mirror
    from mcp_code_mode.sandbox.child.output_mirror import OutputMirror

__all__ = ["Exchange", "KnownIndex", "Run", "execute", "run_guest_code"]


Exchange = Callable[[dict[str, Any] | None], dict[str, Any]]
"""Sends one request to the host (None: sends nothing) and returns the host's next message
for it: its `reply`, or a `pause` (blocking)."""


SET_HANDLER = signal.signal
"""The real `signal.signal`, kept for the worker's own use: once locked down, signal
handling cannot be changed by anything else (`library_guards.REFUSED_CALLS`)."""
_SETITIMER = getattr(signal, "setitimer", None)


def _setitimer(seconds: float) -> None:
    _SETITIMER(signal.ITIMER_REAL, seconds)  # type: ignore[misc]


soft_timer: tuple[int, Callable[[float], None]] | None = (
    (signal.SIGALRM, _setitimer) if _SETITIMER is not None else None
)
"""The run's own time limit: the signal that ends it and how to arm it (0 disarms).

Local workers use SIGALRM from `setitimer`. Under Pyodide, `pyodide_guest.attach` puts in
SIGINT, which the runner's watchdog thread raises through Pyodide's interrupt buffer. Either
way the run ends as TIMEOUT with its stdout and logs; code stuck in one long C call checks
no signal, and the host kills it at the limit plus a grace period.
"""


class KnownIndex:
    """The guest index a worker has: inherited from its zygote, or the last a run brought.

    A `run` message carries `index` only when the host does not know this worker to have
    version `index_version` already; one without uses the index kept here.
    """

    def __init__(self, version: int | None = None, servers: dict[str, Any] | None = None) -> None:
        self.version = version
        self.servers = freeze_index(servers or {})

    def for_run(self, message: dict[str, Any]) -> GuestIndex:
        """The index `message` runs with; kept for the runs that follow."""
        if "index" in message:
            self.servers = freeze_index(message["index"])
            self.version = message.get("index_version")
        return self.servers


class Run:
    """State of one run: output budget, the first run-ending signal, the way to the host."""

    def __init__(
        self, exchange: Exchange, max_output_chars: int, mirror: OutputMirror | None = None
    ) -> None:
        self._exchange = exchange
        self.mirror = mirror  # where stdout and logs also go as they are produced
        self.remaining = max_output_chars
        self.limit = max_output_chars
        self.tripped: Fatal | None = None
        self._next_id = 0
        self.deadline: float | None = None  # monotonic, while the soft timer is armed

    def trip(self, error_type: ErrorCode, message: str) -> Fatal:
        fatal = Fatal(error_type, message)
        if self.tripped is None:
            self.tripped = fatal
        return fatal

    def charge(self, chars: int) -> None:
        """Count output against MCP_CODE_MAX_OUTPUT_CHARS; raise once it is exceeded."""
        self.remaining -= chars
        if self.remaining < 0 or (
            self.tripped is not None and self.tripped.error_type == "OUTPUT_LIMIT"
        ):
            raise self.trip(
                "OUTPUT_LIMIT",
                f"output (stdout + logs + result) exceeded {self.limit} characters "
                "(raise MCP_CODE_MAX_OUTPUT_CHARS, or return less)",
            )

    def request(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Send a call/query and block until its reply; a `fatal` outcome ends the run.
        Once a limit has ended it, nothing more is sent, even when guest code caught the
        limit (it made calls past TOOL_CALL_LIMIT that way: outside attack 89)."""
        if self.tripped is not None:
            raise self.tripped
        self._next_id += 1
        message["id"] = self._next_id
        reply = self._exchange(message)
        stopped: float | None = None
        while reply.get("op") == "pause":  # the host asks a person: that time is not the run's
            if stopped is None and self.deadline is not None and soft_timer is not None:
                stopped = max(0.001, self.deadline - time.monotonic())
                soft_timer[1](0)
            reply = self._exchange(None)
        if stopped is not None and soft_timer is not None:
            self.deadline = time.monotonic() + stopped
            soft_timer[1](stopped)
        results: list[dict[str, Any]] = reply["results"]
        for outcome in results:
            if outcome.get("fatal"):
                raise self.trip(outcome["fatal"], outcome.get("error", ""))
        return results


class _Capture(io.TextIOBase):
    """sys.stdout / sys.stderr for guest code: kept in memory, counted against the budget."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._parts: list[str] = []
        self._kept = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        # an exact str: a subclass's `__len__` and slicing are the guest's (outside attack
        # 81 charged 1 character and kept 3 MB)
        text = str.__str__(text)
        keep = max(0, min(len(text), self._run.limit - self._kept))
        if keep:
            self._parts.append(text[:keep])
            self._kept += keep
            if self._run.mirror is not None:
                self._run.mirror.stdout(text[:keep])
        self._run.charge(len(text))
        return len(text)

    def getvalue(self) -> str:
        return "".join(self._parts)


class _GuestModule:
    """What `sys.modules["__main__"]` holds during a run: an object whose `__dict__` is the
    guest's namespace (a module's `__dict__` cannot be replaced, an instance's can)."""


def execute(
    message: dict[str, Any],
    run: Run,
    runtime: GuestRuntime,
    namespace: dict[str, Any] | None = None,
    *,
    index: GuestIndex,
) -> DoneMessage:
    """Run one snippet to completion (or to its first limit) and build the `done` message.

    `index` is the guest index `tools` is built from (see `KnownIndex.for_run`).
    `namespace` carries a session's variables from snippet to snippet; the guest API in it
    is refreshed for this run, and `message["variables"]` are added to it.
    """
    capture = _Capture(run)
    namespace = _namespace_for(message, run, runtime, namespace, index)
    submitted, error = _run_with_limits(message, run, namespace, capture)
    result: Any = None
    if error is None and run.tripped is None:
        value = submitted if submitted is not None else namespace.get(RESULT_NAME)
        result, error = result_value(value, run.charge, runtime.logs)
    tripped = run.tripped  # a limit the guest caught still ends the run
    if tripped is not None and (error is None or error["type"] != tripped.error_type):
        error = make_error(tripped.error_type, tripped.message, None)
    done: DoneMessage = {
        "op": "done",
        "ok": error is None,
        "result": result if error is None else None,
        "stdout": capture.getvalue(),
        "logs": runtime.logs,
        "error": error,
    }
    if submitted is not None and error is None:
        done["submitted"] = True
    return _readable(done, run.limit)


def _readable(done: DoneMessage, limit: int) -> DoneMessage:
    """`done`, or when the host would not read it (past `DECODE_BUDGET` by `decode_cost`:
    under a raised MCP_CODE_MAX_OUTPUT_CHARS, 1.4 million `[` printed ended the run with
    EXECUTOR_ERROR, outside attack 102) an OUTPUT_LIMIT with the output cut. Measured only
    where the limit allows that much (at most 100 bytes a character, stdout, logs and
    result each)."""
    if 3 * 100 * limit <= _DONE_BUDGET:
        return done
    cost = decode_cost(encode(done))
    if cost <= _DONE_BUDGET:
        return done
    message = (
        f"output (stdout + logs + result) would take about {cost >> 20} MB of the gateway's "
        f"memory to read, more than the {DECODE_BUDGET >> 20} MB it reads of one message "
        "(print or return less, or fewer brackets and commas)"
    )
    return {
        "op": "done",
        "ok": False,
        "result": None,
        "stdout": done["stdout"][:_KEPT_CHARS],
        "logs": [line[:_KEPT_CHARS] for line in done["logs"][:_KEPT_LINES]],
        "error": make_error("OUTPUT_LIMIT", message, None),
    }


_DONE_BUDGET = DECODE_BUDGET - (64 << 10)  # the host's framing and error text
_KEPT_CHARS, _KEPT_LINES = 10_000, 100


def _namespace_for(
    message: dict[str, Any],
    run: Run,
    runtime: GuestRuntime,
    namespace: dict[str, Any] | None,
    index: GuestIndex,
) -> dict[str, Any]:
    """The run's globals (a session's, refreshed), with the guards in place."""
    runtime.on_output = run.charge
    if run.mirror is not None:
        run.mirror.reset()
        runtime.on_log = run.mirror.log
    fresh = runtime.namespace(index, message["input"], session=namespace is not None)
    if namespace is None:
        namespace = fresh
    else:
        namespace.update(fresh)
    # The guest is module `__main__`: `typing` and `dataclasses` find the globals of a guest
    # class through `sys.modules[cls.__module__]`, which must be the guest's own namespace.
    main = _GuestModule()
    main.__dict__ = namespace
    sys.modules[GUEST_MODULE] = main  # type: ignore[assignment]
    namespace.update(message.get("variables") or {})
    namespace.pop(RESULT_NAME, None)
    if message.get("seed") is not None:
        # Pyodide runners all start from one memory snapshot, so one random state: each
        # run is reseeded from the host's entropy (forked local workers reseed anyway).
        import random

        random.seed(message["seed"])
    return namespace


def _run_with_limits(
    message: dict[str, Any], run: Run, namespace: dict[str, Any], capture: _Capture
) -> tuple[dict[str, Any] | None, ErrorInfo | None]:
    """Compile and run the snippet under its soft timer, output captured: what it
    submitted (interpreter sessions) and the error it ended with, if any."""
    source: str = message["code"]
    timeout_s = float(message["timeout_s"])
    timer = soft_timer
    if timer is not None:
        SET_HANDLER(timer[0], _on_alarm(run, timeout_s))
    sys.stdout = sys.stderr = capture
    try:
        try:
            code = compile_guest(source)
        except RecursionError:  # deeper than the policy lets code come
            return None, make_error("POLICY_VIOLATION", TOO_DEEP, None)
        if timer is not None:
            run.deadline = time.monotonic() + timeout_s
            timer[1](timeout_s)
        run_guest_code(code, namespace)
    except BaseException as exc:  # guest code may raise anything, SystemExit included
        if type(exc) is Submitted:  # a subclass's `fields` may run anything (attack 119)
            return exc.fields, None
        return None, error_for(exc, source, run.tripped)
    finally:
        if timer is not None:
            timer[1](0)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return None, None


LOOP_FACTORY: list[Callable[[], Any]] = []
"""The event loop top-level `await` runs on, when a backend names one (Pyodide's
`GuestLoop`); else asyncio's own selector loop. Never the loop policy's: a policy a
session's earlier code set (a guest object whose `__class__` said it was asyncio's) would
be handed the run's coroutine (outside attacks 49 and 81)."""


def run_guest_code(code: CodeType, namespace: dict[str, Any]) -> None:
    """Run compiled guest code: the one function that may (the audit hook's rule)."""
    if code.co_flags & 0x80:  # CO_COROUTINE: the code uses top-level await
        import asyncio

        factory = LOOP_FACTORY[0] if LOOP_FACTORY else asyncio.SelectorEventLoop
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(eval(code, namespace))
    else:
        exec(code, namespace)


def _on_alarm(run: Run, timeout_s: float) -> Callable[[int, FrameType | None], None]:
    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise run.trip(
            "TIMEOUT",
            f"the run exceeded its {timeout_s:g}s time limit" + TIMEOUT_ADVICE,
        )

    return on_alarm

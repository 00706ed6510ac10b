"""Running one guest snippet: compile, execute with limits, build the `done` message.

Used by the local executor's workers (forked by the zygote, see `zygote.serve`) and inside
Pyodide by the Wasm executor's runner, so it touches no OS facility beyond `signal`
(see `soft_timer`). Stdlib only.

What this process does not stop on its own: the AST policy and the restricted
builtins are a speed bump, not a wall; isolation from the host's files, network and
processes comes from the OS layers the host applies (see the local executor).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import signal
import sys
import time
import traceback
from collections.abc import Callable
from types import CodeType, FrameType, TracebackType
from typing import TYPE_CHECKING, Any, get_args

from mcp_code_mode.sandbox.child.audit import Refused
from mcp_code_mode.sandbox.child.guards import install_guards
from mcp_code_mode.sandbox.child.guest import Fatal, GuestRuntime, ImportRefused, Submitted
from mcp_code_mode.sandbox.child.guest_api import HOST_CALLS
from mcp_code_mode.sandbox.child.rules import GUEST_MODULE, GUEST_ONLY_DUNDERS, PRIVATE_OK
from mcp_code_mode.sandbox.child.tools_view import GuestIndex, ToolError, freeze_index
from mcp_code_mode.sandbox.protocol import DoneMessage, ErrorCode, ErrorInfo

if TYPE_CHECKING:  # not loaded under Pyodide, which has no mirror
    from mcp_code_mode.sandbox.child.output_mirror import OutputMirror

__all__ = ["GUEST_FILENAME", "Exchange", "KnownIndex", "Run", "compile_guest", "execute"]

GUEST_FILENAME = "<guest>"
_RESULT = "_mcp_result_"


Exchange = Callable[[dict[str, Any] | None], dict[str, Any]]
"""Sends one request to the host (None: sends nothing) and returns the host's next message
for it: its `reply`, or a `pause` (blocking)."""


def _setitimer(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, seconds)


soft_timer: tuple[int, Callable[[float], None]] | None = (
    (signal.SIGALRM, _setitimer) if hasattr(signal, "setitimer") else None
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
        """Send a call/query and block until its reply; a `fatal` outcome ends the run."""
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


class _Rewrite(ast.NodeTransformer):
    """`await tools.x.y(...)` → `tools.x.y(...)` (guest calls are synchronous), and
    `obj._x` (a read) → `_mcp_getattr_(obj, "_x")`, which allows the private attributes
    of the guest's own objects only (see `guards.guest_getattr`)."""

    def visit_Await(self, node: ast.Await) -> ast.AST:
        self.generic_visit(node)
        return node.value if _is_api_call(node.value) else node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        """`obj._x += v` reads `obj._x` too: `obj._x = _mcp_getattr_(obj, "_x") + v`."""
        self.generic_visit(node)
        target = node.target
        if not (isinstance(target, ast.Attribute) and _is_checked(target)):
            return node
        read = ast.Attribute(value=target.value, attr=target.attr, ctx=ast.Load())
        checked = self.visit_Attribute(read)
        assert isinstance(checked, ast.expr)
        value = ast.BinOp(left=checked, op=node.op, right=node.value)
        return ast.copy_location(ast.Assign(targets=[target], value=value), node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        name = node.attr
        if not isinstance(node.ctx, ast.Load) or not _is_checked(node):
            return node
        call = ast.Call(
            func=ast.Name(id="_mcp_getattr_", ctx=ast.Load()),
            args=[node.value, ast.Constant(value=name)],
            keywords=[],
        )
        return ast.copy_location(call, node)


def _is_checked(node: ast.Attribute) -> bool:
    """Whether reading this attribute goes through the run-time check."""
    name = node.attr
    dunder = name.startswith("__") and name.endswith("__")
    return (
        name.startswith("_")
        and not (dunder and name not in GUEST_ONLY_DUNDERS)
        and name not in PRIVATE_OK
        # `tools.__dict__` is no server: through it `tools.x` could become anything.
        and (name in GUEST_ONLY_DUNDERS or not _is_tools_chain(node))
    )


def _is_tools_chain(node: ast.Attribute) -> bool:
    """`tools.<server>` or `tools.<server>.<tool>`: identifiers may start with `_`."""
    value = node.value
    if isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name) and value.id == "tools"


def _is_api_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in HOST_CALLS
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id == "tools"


def compile_guest(source: str) -> CodeType:
    """Compile guest code with top-level await, binding the last expression to the result."""
    tree: ast.Module = _Rewrite().visit(ast.parse(source, GUEST_FILENAME))
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        target = ast.Name(id=_RESULT, ctx=ast.Store())
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
    ast.fix_missing_locations(tree)
    # dont_inherit: this module's own `from __future__ import annotations` must not turn the
    # guest's annotations into strings.
    code: CodeType = compile(
        tree, GUEST_FILENAME, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    return code


class _GuestModule:
    """What `sys.modules["__main__"]` holds during a run: an object whose `__dict__` is the
    guest's namespace (a module's `__dict__` cannot be replaced, an instance's can)."""


def _guest_line(tb: Any) -> int | None:
    """The last guest line in a traceback (a guest exception may put anything there)."""
    line = None
    while type(tb) is TracebackType:
        if tb.tb_frame.f_code.co_filename == GUEST_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _line_of(exc: BaseException) -> int | None:
    try:
        return _guest_line(exc.__traceback__)
    except BaseException:  # a guest exception class may make `__traceback__` anything
        return None


def _syntax_error(exc: SyntaxError) -> ErrorInfo:
    """A SyntaxError's message and line; one the guest raised may hold any objects there."""
    msg: Any = None
    line: Any = None
    with contextlib.suppress(BaseException):  # a subclass may make them properties that raise
        msg, line = exc.msg, exc.lineno
    text = msg if type(msg) is str else "invalid syntax"
    return _error("SYNTAX_ERROR", f"SyntaxError: {text}", line)


def _guest_traceback(exc: BaseException, source: str) -> str:
    try:
        return _format_traceback(exc, source)
    except MemoryError:
        return f"{type(exc).__name__}: (the message was too large to format)"
    except BaseException:  # guest classes can make formatting fail in many ways
        return "the run raised an exception that could not be formatted"


def _format_traceback(exc: BaseException, source: str) -> str:
    lines = source.splitlines()
    out = ["Traceback (guest code):"]
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == GUEST_FILENAME and frame.lineno is not None:
            text = lines[frame.lineno - 1].strip() if 0 < frame.lineno <= len(lines) else ""
            out.append(f"  line {frame.lineno}, in {frame.name}: {text}")
    try:
        text = str(exc)
    except BaseException:  # a guest exception's __str__ may raise anything
        text = "(the exception's message could not be shown)"
    if len(text) > _ERROR_CHARS:
        text = text[:_ERROR_CHARS]
    out.append(f"{type(exc).__name__}: {text}")
    return "\n".join(out)


_ERROR_CHARS = 4000  # error messages are cut here: a guest can raise a 100 MB message


_ERROR_CODES = frozenset(get_args(ErrorCode))


def _safe_str(exc: BaseException) -> str:
    """`str(exc)` of an exception the guest may have made: its `__str__` can raise."""
    try:
        text = str(exc)
    except BaseException:
        return "(the exception's message could not be shown)"
    return text if type(text) is str else "(the exception's message is not text)"


def _error(kind: ErrorCode, message: str, line: int | None) -> ErrorInfo:
    """The `error` of a done message, whatever the guest put in the exception: the type
    one of the codes, the message text (cut), the line an int or None."""
    if kind not in _ERROR_CODES:
        kind = "RUNTIME_ERROR"
    if type(message) is not str:
        message = "(the error's message is not text)"
    if type(line) is not int:
        line = None
    if len(message) > _ERROR_CHARS:
        message = message[:_ERROR_CHARS] + f"… [{len(message) - _ERROR_CHARS} more characters cut]"
    return {"type": kind, "message": message, "line": line}


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
    source: str = message["code"]
    capture = _Capture(run)
    runtime.on_output = run.charge
    if run.mirror is not None:
        run.mirror.reset()
        runtime.on_log = run.mirror.log
    session = namespace is not None
    fresh = runtime.namespace(index, message["input"], session=session)
    if namespace is None:
        namespace = fresh
    else:
        namespace.update(fresh)
    install_guards(namespace["__builtins__"])
    # The guest is module `__main__`: `typing` and `dataclasses` find the globals of a guest
    # class through `sys.modules[cls.__module__]`, which must be the guest's own namespace.
    main = _GuestModule()
    main.__dict__ = namespace
    sys.modules[GUEST_MODULE] = main  # type: ignore[assignment]
    namespace.update(message.get("variables") or {})
    namespace.pop(_RESULT, None)
    if message.get("seed") is not None:
        # Pyodide runners all start from one memory snapshot, so one random state: each
        # run is reseeded from the host's entropy (forked local workers reseed anyway).
        import random

        random.seed(message["seed"])
    submitted: dict[str, Any] | None = None
    error: ErrorInfo | None = None
    timeout_s = float(message["timeout_s"])

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise run.trip(
            "TIMEOUT",
            f"the run exceeded its {timeout_s:g}s time limit "
            "(pass a larger timeout_s, or --timeout on the command line, "
            "up to MCP_CODE_MAX_TIMEOUT_S)",
        )

    timer = soft_timer
    if timer is not None:
        signal.signal(timer[0], on_alarm)
    sys.stdout = sys.stderr = capture
    try:
        code = compile_guest(source)
        if timer is not None:
            run.deadline = time.monotonic() + timeout_s
            timer[1](timeout_s)
        if code.co_flags & 0x80:  # CO_COROUTINE: the code uses top-level await
            import asyncio

            asyncio.run(eval(code, namespace))
        else:
            exec(code, namespace)
    except Submitted as exc:
        submitted = exc.fields
    except SyntaxError as exc:
        error = _syntax_error(exc)
    except Fatal as exc:
        error = _error(exc.error_type, exc.message, _line_of(exc))
    except MemoryError as exc:
        error = _error(
            "MEMORY_LIMIT",
            "MemoryError: the run exceeded its memory limit (raise MCP_CODE_MEMORY_MB)",
            _line_of(exc),
        )
    except ToolError as exc:
        error = _error("TOOL_ERROR", f"ToolError: {_safe_str(exc)}", _line_of(exc))
    except (ImportRefused, Refused) as exc:
        error = _error("POLICY_VIOLATION", _safe_str(exc), _line_of(exc))
    except BaseException as exc:  # guest code may raise anything, SystemExit included
        error = _error("RUNTIME_ERROR", _guest_traceback(exc, source), _line_of(exc))
    finally:
        if timer is not None:
            timer[1](0)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    result: Any = None
    if error is None and run.tripped is None:
        value = submitted if submitted is not None else namespace.get(_RESULT)
        result, error = _result_value(value, run, runtime)
    tripped = run.tripped  # a limit the guest caught still ends the run
    if tripped is not None and (error is None or error["type"] != tripped.error_type):
        error = _error(tripped.error_type, tripped.message, None)
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
    return done


def _result_value(value: Any, run: Run, runtime: GuestRuntime) -> tuple[Any, ErrorInfo | None]:
    try:
        text = json.dumps(value, allow_nan=False)
    except MemoryError:
        return None, _error(
            "MEMORY_LIMIT",
            "the result is too large to serialise within MCP_CODE_MEMORY_MB (return less)",
            None,
        )
    except (TypeError, ValueError, RecursionError):
        try:
            text = json.dumps(repr(value))
        except BaseException:  # guest classes can make even repr() fail
            text = json.dumps(f"<unrepresentable {type(value).__name__} object>")
        runtime.logs.append(
            f"note: the result ({type(value).__name__}) is not JSON-serialisable; returned its repr"
        )
    try:
        run.charge(len(text))
    except Fatal as exc:
        return None, _error(exc.error_type, exc.message, None)
    return json.loads(text), None

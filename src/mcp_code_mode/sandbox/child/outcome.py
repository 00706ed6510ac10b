"""What a run's end becomes in its `done` message: the error (type, message, line) of
whatever the guest raised, and the result as JSON.

Guest code may make its exceptions and results anything (a `__str__` that raises, a
property where `lineno` was, a 100 MB message): every path here builds a valid message.
"""

from __future__ import annotations

import contextlib
import json
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any, get_args

from mcp_code_mode.sandbox.child.audit import Refused
from mcp_code_mode.sandbox.child.guest import Fatal, ImportRefused
from mcp_code_mode.sandbox.child.rewrite import GUEST_FILENAME
from mcp_code_mode.sandbox.child.tools_view import ToolError
from mcp_code_mode.sandbox.protocol import ErrorCode, ErrorInfo

__all__ = [
    "TIMEOUT_ADVICE",
    "error_for",
    "format_traceback",
    "guest_line",
    "make_error",
    "name_of",
    "result_value",
    "safe_str",
]

TIMEOUT_ADVICE = (
    " (pass a larger timeout_s, or --timeout on the command line, up to MCP_CODE_MAX_TIMEOUT_S)"
)
"""How a TIMEOUT's message ends, whichever side timed the run out; the agent, whose
callers pass no `timeout_s`, gives its model other advice instead."""


def error_for(exc: BaseException, source: str, tripped: Fatal | None = None) -> ErrorInfo:
    """The error of a run that raised `exc` (by its real type: a guest class's `__class__`
    may say anything); `tripped`: the limit the run met, the only `Fatal` whose type and
    message are the sandbox's own."""
    kind = type(exc)
    if issubclass(kind, SyntaxError):
        return _syntax_error(exc)  # type: ignore[arg-type]
    if issubclass(kind, Fatal):
        return _fatal_error(exc, tripped)
    if issubclass(kind, MemoryError):
        message = "MemoryError: the run exceeded its memory limit (raise MCP_CODE_MEMORY_MB)"
        return make_error("MEMORY_LIMIT", message, line_of(exc))
    if issubclass(kind, ToolError):
        return make_error("TOOL_ERROR", f"ToolError: {safe_str(exc)}", line_of(exc))
    if issubclass(kind, ImportRefused | Refused):
        return make_error("POLICY_VIOLATION", safe_str(exc), line_of(exc))
    return make_error("RUNTIME_ERROR", _guest_traceback(exc, source), line_of(exc))


_FORGED = "the code raised the sandbox's own limit exception itself"


def _fatal_error(exc: BaseException, tripped: Fatal | None) -> ErrorInfo:
    """A limit's error, or RUNTIME_ERROR for a `Fatal` the code made: a guest who caught
    one has the class, and a forged type or message (a `str` subclass, a dict) broke the
    worker's error report (outside attack 117). Once a limit was met, a run ends with it."""
    if tripped is None or type(exc) is not Fatal:
        return make_error("RUNTIME_ERROR", _FORGED, line_of(exc))
    return make_error(tripped.error_type, tripped.message, line_of(exc))


def guest_line(tb: Any) -> int | None:
    """The last guest line in a traceback (a guest exception may put anything there)."""
    line = None
    while type(tb) is TracebackType:
        if tb.tb_frame.f_code.co_filename == GUEST_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def guest_frames(tb: Any) -> list[tuple[int, str]]:
    """(line, function name) of the traceback's guest frames: what the hook trusts to read
    frames and source lines, and nothing else."""
    if type(tb) is not TracebackType:
        return []
    return [
        (frame.lineno, frame.name)
        for frame in traceback.extract_tb(tb)
        if frame.filename == GUEST_FILENAME and frame.lineno is not None
    ]


def line_of(exc: BaseException) -> int | None:
    try:
        return guest_line(exc.__traceback__)
    except BaseException:  # a guest exception class may make `__traceback__` anything
        return None


def _syntax_error(exc: SyntaxError) -> ErrorInfo:
    """A SyntaxError's message and line; one the guest raised may hold any objects there."""
    msg: Any = None
    line: Any = None
    with contextlib.suppress(BaseException):  # a subclass may make them properties that raise
        msg, line = exc.msg, exc.lineno
    text = msg if type(msg) is str else "invalid syntax"
    return make_error("SYNTAX_ERROR", f"SyntaxError: {text}", line)


def _guest_traceback(exc: BaseException, source: str) -> str:
    try:
        return format_traceback(exc, source)
    except MemoryError:
        return f"{name_of(type(exc))}: (the message was too large to format)"
    except BaseException:  # guest classes can make formatting fail in many ways
        return "the run raised an exception that could not be formatted"


def format_traceback(exc: BaseException, source: str) -> str:
    lines = source.splitlines()
    out = ["Traceback (guest code):"]
    for lineno, name in guest_frames(exc.__traceback__):
        text = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
        out.append(f"  line {lineno}, in {name}: {text}")
    # Not in `guest_frames`, which the hook trusts to read frames: a guest `__str__` that
    # is a library callable runs with no frame of its own (outside attack 25).
    text = safe_str(exc)[:_ERROR_CHARS]
    if type(exc) is TypeError and text.endswith(_SEALED):
        text += _SEALED_HINT
    out.append(f"{name_of(type(exc))}: {text}")
    return "\n".join(out)


def name_of(kind: type) -> str:
    """A class's name as an exact `str`, cut: a guest may make `__name__` a `str` subclass
    whose `__getitem__` or `__format__` runs in the worker's error path (a 62 MB note in
    `logs`, or the worker killed: outside attack 119)."""
    name = type.__dict__["__name__"].__get__(kind)
    return str.__str__(name)[:_NAME_CHARS]


_ERROR_CHARS = 4000  # error messages are cut here: a guest can raise a 100 MB message
_SEALED = "is not an acceptable base type"  # CPython's words for a class that is final
_SEALED_HINT = (
    " (in the sandbox no metaclass can be defined, and asyncio's loops and transports, "
    "dataclasses.Field, typing's internals, staticmethod, classmethod and the tools views "
    "cannot be subclassed)"
)


_ERROR_CODES = frozenset(get_args(ErrorCode))


def safe_str(exc: BaseException) -> str:
    """`str(exc)` of an exception the guest may have made, as an exact `str` (its `__str__`
    can raise, or return a `str` subclass whose methods run guest code)."""
    try:
        text = str(exc)
    except BaseException:
        return "(the exception's message could not be shown)"
    return str.__str__(text)  # `str()` returns a str or a subclass of it: copied in C


def make_error(kind: ErrorCode, message: str, line: int | None) -> ErrorInfo:
    """The `error` of a done message, whatever the guest put in the exception: the type
    one of the codes, the message text (cut), the line an int or None."""
    if type(kind) is not str or kind not in _ERROR_CODES:  # a str subclass hashes as it likes
        kind = "RUNTIME_ERROR"
    if type(message) is not str:
        message = "(the error's message is not text)"
    if type(line) is not int:
        line = None
    if len(message) > _ERROR_CHARS:
        message = message[:_ERROR_CHARS] + f"… [{len(message) - _ERROR_CHARS} more characters cut]"
    return {"type": kind, "message": message, "line": line}


_NAME_CHARS = 100  # of the result's type name in the note about it


def result_value(
    value: Any, charge: Callable[[int], None], logs: list[str]
) -> tuple[Any, ErrorInfo | None]:
    """The run's result as JSON, or its repr (noted in `logs`) when it is not JSON; its
    size is charged to the output budget."""
    text_charged = 0
    try:
        text = json.dumps(value, allow_nan=False)
    except MemoryError:
        return None, make_error(
            "MEMORY_LIMIT",
            "the result is too large to serialise within MCP_CODE_MEMORY_MB (return less)",
            None,
        )
    except Fatal:  # a limit met while serialising: the worker reports `run.tripped`
        return None, make_error("RUNTIME_ERROR", _FORGED, None)
    except (TypeError, ValueError, RecursionError):
        name = name_of(type(value))
        try:
            text = json.dumps(repr(value))
        except BaseException:  # guest classes can make even repr() fail
            text = json.dumps(f"<unrepresentable {name} object>")
        # charged with the result (a class named with 300,000 characters made a `done`
        # longer than the host takes: outside attack 89)
        note = f"note: the result ({name}) is not JSON-serialisable; returned its repr"
        logs.append(note)
        text_charged = len(text) + len(note) + 3
    except BaseException as exc:  # a guest `items()` or `__iter__` raised SystemExit & co.
        name = name_of(type(exc))
        return None, make_error(
            "RUNTIME_ERROR", f"the result could not be made JSON: its code raised {name}", None
        )
    try:
        charge(text_charged if text_charged else len(text))
    except Fatal:  # the output limit: the worker reports `run.tripped`
        return None, make_error("RUNTIME_ERROR", _FORGED, None)
    return json.loads(text), None

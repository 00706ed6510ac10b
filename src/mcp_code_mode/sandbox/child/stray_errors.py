"""Errors no run catches: what a finalizer (`__del__`) or an event-loop callback raised.

CPython reports them through `sys.unraisablehook` and asyncio through `logging`; both
format a traceback, which reads frames and source files the audit hook refuses, so a
guest saw the hook's refusal with the worker's install path ("Exception ignored in audit
hook", "--- Logging error ---") instead of its own error. Here they are one line each on
the run's output: the exception's exact type name and message, cut, no traceback and no
`repr` of the object the finalizer belonged to.

Warnings are one line as well (`warnings.showwarning`): a coroutine the guest never awaited,
dropped by the worker's own frame, printed that frame's file (the install path) and a line
of its source (outside attack 127); a guest line is named, no other. A callback that raised
named its source with the callback's code object, which the audit hook refuses in a library
frame: the run ended with an error the code could not catch (attack 127); it is named by
its qualified name only.

asyncio's debug mode is kept off (`loop.set_debug` and `asyncio.run(debug=True)` run as
without it): it records where each task and coroutine was made (`source_traceback`,
`cr_origin`), the worker's own frames, and printed them with lines of the worker's source
files that the modules' loaders read, where the guest may not (outside attack 125).
"""

from __future__ import annotations

import sys
from typing import Any

from mcp_code_mode.sandbox.child.outcome import name_of, safe_str
from mcp_code_mode.sandbox.child.rewrite import GUEST_FILENAME

__all__ = ["install"]

_MESSAGE_CHARS = 500  # of an exception's message on such a line
_RECORD_CHARS = 4000  # of a whole log record (asyncio's context holds `repr`s)


def install(loaded: dict[str, Any]) -> None:
    """Set the worker's `sys.unraisablehook` (the audit hook grants its event to this one
    only: set it before `audit.install`), and the format of logging's last-resort handler
    when `logging` is loaded (asyncio's "Task exception was never retrieved"); asyncio's
    debug mode off; warnings one line; callbacks named without their code."""
    sys.unraisablehook = _note_unraisable
    warnings: Any = sys.modules.get("warnings")
    if warnings is not None:
        warnings.showwarning = _note_warning
    logging: Any = loaded.get("logging")
    if logging is not None:
        logging.lastResort.setFormatter(_formatter(logging))
    asyncio: Any = loaded.get("asyncio")
    if asyncio is not None:
        asyncio.BaseEventLoop.set_debug = _debug_off
        asyncio.format_helpers._get_function_source = _no_source


def _debug_off(loop: Any, enabled: bool) -> None:
    loop._debug = False


def _no_source(func: Any) -> None:
    """Where a callback's code is (asyncio names it so): not told, its code not read."""
    return None


def _note_warning(
    message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None
) -> None:
    try:
        where = f"line {lineno}: " if filename == GUEST_FILENAME else ""
        text = f"{where}{name_of(category)}: {safe_str(message)[:_MESSAGE_CHARS]}\n"
        (sys.stderr if file is None else file).write(text)
    except BaseException:  # as for the finalizer hook: its line or nothing
        return


def _note_unraisable(unraisable: Any) -> None:
    try:
        exc = unraisable.exc_value
        if exc is not None:
            sys.stderr.write(f"Exception ignored in a finalizer: {_one_line(exc)}\n")
    except BaseException:  # no stack left, say: CPython's own hook would print ours
        return


def _one_line(exc: BaseException) -> str:
    return f"{name_of(type(exc))}: {safe_str(exc)[:_MESSAGE_CHARS]}"


def _formatter(logging: Any) -> Any:
    class OneLine(logging.Formatter):  # type: ignore[misc]
        """A record's message and its exception's type and message, without a traceback."""

        def formatException(self, ei: Any) -> str:
            return _one_line(ei[1]) if ei[1] is not None else ""

        def formatStack(self, stack_info: str) -> str:
            return ""

        def format(self, record: Any) -> str:
            return str.__str__(super().format(record))[:_RECORD_CHARS]

    return OneLine()

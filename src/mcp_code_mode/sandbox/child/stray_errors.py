"""Errors no run catches: what a finalizer (`__del__`) or an event-loop callback raised.

CPython reports them through `sys.unraisablehook` and asyncio through `logging`; both
format a traceback, which reads frames and source files the audit hook refuses, so a
guest saw the hook's refusal with the worker's install path ("Exception ignored in audit
hook", "--- Logging error ---") instead of its own error. Here they are one line each on
the run's output: the exception's exact type name and message, cut, no traceback and no
`repr` of the object the finalizer belonged to.

asyncio's debug mode is kept off (`loop.set_debug` and `asyncio.run(debug=True)` run as
without it): it records where each task and coroutine was made (`source_traceback`,
`cr_origin`), the worker's own frames, and printed them with lines of the worker's source
files that the modules' loaders read, where the guest may not (outside attack 125).
"""

from __future__ import annotations

import sys
from typing import Any

from mcp_code_mode.sandbox.child.outcome import name_of, safe_str

__all__ = ["install"]

_MESSAGE_CHARS = 500  # of an exception's message on such a line
_RECORD_CHARS = 4000  # of a whole log record (asyncio's context holds `repr`s)


def install(loaded: dict[str, Any]) -> None:
    """Set the worker's `sys.unraisablehook` (the audit hook grants its event to this one
    only: set it before `audit.install`), and the format of logging's last-resort handler
    when `logging` is loaded (asyncio's "Task exception was never retrieved"); asyncio's
    debug mode off."""
    sys.unraisablehook = _note_unraisable
    logging: Any = loaded.get("logging")
    if logging is not None:
        logging.lastResort.setFormatter(_formatter(logging))
    asyncio: Any = loaded.get("asyncio")
    if asyncio is not None:
        asyncio.BaseEventLoop.set_debug = _debug_off


def _debug_off(loop: Any, enabled: bool) -> None:
    loop._debug = False


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

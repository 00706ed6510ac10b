"""Under Pyodide: asyncio's event loop hands guest code no JavaScript object.

Pyodide's `WebLoop` (what `asyncio` gives guest code there) schedules its callbacks and
runs `run_until_complete` through JavaScript. When a JavaScript call fails, Pyodide raises
a `JsException`, which is itself a proxy of the JavaScript error: `e.constructor.constructor`
is JavaScript's `Function`, and from there the whole JS realm (`globalThis`, `Deno`, real
Python objects through their proxies). `await asyncio.sleep(2**60)` made one (an int past
2**53 crosses as a BigInt, and the delay arithmetic then throws; outside attack 46).

So the JavaScript functions the loop calls are wrapped: none lets a JavaScript error out
as anything but a plain `RuntimeError` carrying its text, raised outside the handler so
that not even its `__context__` holds the proxy; and a delay is a float, capped at what a
JavaScript timer takes (a larger one fired at once), before it reaches JavaScript at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["seal_webloop"]

_MAX_DELAY_S = (2**31 - 1) / 1000  # setTimeout's largest delay, in seconds
_JS_CALLS = ("scheduleCallback", "run_sync", "create_once_callable", "can_run_sync")


def seal_webloop() -> None:
    """Wrap what Pyodide's `WebLoop` calls into JavaScript (no-op outside Pyodide)."""
    try:
        from pyodide import webloop  # type: ignore[import-not-found]
        from pyodide.ffi import JsProxy  # type: ignore[import-not-found]
    except ImportError:
        return
    for name in _JS_CALLS:
        function = getattr(webloop, name, None)
        if function is not None:
            setattr(webloop, name, _plain_errors(function, JsProxy))
    webloop.WebLoop.call_later = _bounded(webloop.WebLoop.call_later)


def _plain_errors(function: Callable[..., Any], js_proxy: type) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except BaseException as exc:
            if not issubclass(type(exc), js_proxy):  # by the type: no code of the guest's
                raise
            message = _text(exc)
        raise RuntimeError(f"JavaScript failed: {message}")  # outside: no `__context__`

    call.__name__ = call.__qualname__ = getattr(function, "__name__", "js_call")
    return call


def _text(exc: BaseException) -> str:
    try:
        return str(exc)[:500]
    except Exception:
        return "(no message)"


def _bounded(call_later: Callable[..., Any]) -> Callable[..., Any]:
    def bounded_call_later(
        self: Any, delay: Any, callback: Any, *args: Any, context: Any = None
    ) -> Any:
        seconds = float(delay)
        if seconds != seconds:
            raise ValueError("a delay cannot be NaN")
        return call_later(self, min(seconds, _MAX_DELAY_S), callback, *args, context=context)

    bounded_call_later.__name__ = bounded_call_later.__qualname__ = "call_later"
    return bounded_call_later

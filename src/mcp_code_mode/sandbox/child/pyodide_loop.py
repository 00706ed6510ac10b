"""Under Pyodide: guest asyncio runs on an event loop that never calls JavaScript.

Pyodide's own loop (`WebLoop`) schedules its callbacks with JavaScript timers and runs
`run_until_complete` by resolving a JavaScript Promise. Both handed guest code JavaScript
objects: a JS error it met came back as a `JsException`, itself a proxy of the error
(`await asyncio.sleep(2**60)`: a BigInt delay; outside attack 46), and a coroutine result
with a `then` method was taken for a promise and given JS's `resolve`/`reject` (outside
attack 47). From either, `.constructor.constructor` was JS's `Function`, then
`globalThis`, `Deno`, real Python objects through their proxies, a forged `done`.

So guest code never gets a `WebLoop`: the policy makes `GuestLoop`s, a plain
`asyncio.BaseEventLoop` whose only wait is for its next timer, slept in Python in short
slices (the run's time limit, a KeyboardInterrupt under Pyodide, lands between them).
There is no I/O to wait for: tool calls are plain blocking calls. `asyncio.run` and
`time.sleep` are CPython's again. What `WebLoop` calls into JavaScript is wrapped as well,
in case one is ever reached: no JS error leaves as anything but a plain `RuntimeError`.
The runner's V8 also refuses to compile JavaScript from text (`pyodide.v8_flags`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child import worker

__all__ = ["GuestLoop", "seal_webloop"]

_SLICE_S = 0.01
_JS_CALLS = ("scheduleCallback", "run_sync", "create_once_callable", "can_run_sync")


class _Timers:
    """The loop's 'selector': nothing to select, only the time until the next timer."""

    def __init__(self, sleep: Callable[[float], None]) -> None:
        self._sleep = sleep

    def select(self, timeout: float | None) -> list[Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = _SLICE_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return []
            self._sleep(min(left, _SLICE_S))

    def close(self) -> None:
        pass


class GuestLoop(asyncio.BaseEventLoop):
    """An event loop of timers and ready callbacks only, in Python."""

    def __init__(self) -> None:
        super().__init__()
        self._selector = _Timers(_SLEEP[0])

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass  # one thread: `call_soon_threadsafe` needs no wake-up


class _GuestLoopPolicy(asyncio.DefaultEventLoopPolicy):
    _loop_factory = GuestLoop

    def get_event_loop(self) -> asyncio.AbstractEventLoop:
        """The thread's loop, made on first use, as on 3.11 (3.12+ warns first, and the
        warning looks for its caller's frame, which guest code may not reach)."""
        loop: asyncio.AbstractEventLoop | None = self._local._loop  # type: ignore[attr-defined]
        if loop is None:
            loop = self.new_event_loop()
            self.set_event_loop(loop)
        return loop


_SLEEP: list[Callable[[float], None]] = [time.sleep]


def seal_webloop() -> None:
    """Give guest code `GuestLoop`s, and seal `WebLoop` (no-op outside Pyodide)."""
    try:
        from pyodide import webloop  # type: ignore[import-not-found]
        from pyodide.ffi import JsProxy  # type: ignore[import-not-found]
    except ImportError:
        return
    _SLEEP[0] = webloop._orig_sleep
    time.sleep = _sliced_sleep  # type: ignore[assignment]
    asyncio.run = webloop._orig_run
    asyncio.set_event_loop_policy(_GuestLoopPolicy())
    worker.LOOP_FACTORY[:] = [GuestLoop]
    asyncio.events._set_running_loop(None)  # a WebLoop says it is running from the start
    for name in _JS_CALLS:
        function = getattr(webloop, name, None)
        if function is not None:
            setattr(webloop, name, _plain_errors(function, JsProxy))


def _sliced_sleep(seconds: float) -> None:
    """`time.sleep` in slices, so that the run's time limit can interrupt it."""
    seconds = float(seconds)
    if seconds != seconds or seconds < 0:
        raise ValueError("sleep length must be a non-negative number")
    _Timers(_SLEEP[0]).select(seconds)


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

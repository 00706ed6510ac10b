"""`RunProgress`: MCP progress notifications while a run works (contract §4, §10).

Only a client that sent a progress token with its `execute_code` request gets them; for any
other there is no `RunProgress` (or one whose sink is None) and nothing is sent. The run's
router says when an upstream call ends (`call_ended`) and forwards what guest code reports
with `progress(done, total=None, message=None)` (`report`). Notifications are rate-limited:
the first goes at once, then at most one per `interval_s`, carrying the latest state when it
goes; a state held back goes when the run ends (`close`), then none. A state whose progress
is not above the last one sent is not sent (MCP: progress increases with each notification;
guest code may report anything, and its numbers follow the call count). Until the code reports,
the progress is the number of calls ended and the message says "12 calls, 3.1 s"; from then
on, the code's numbers (and its message, else that one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import UnknownToolError

__all__ = [
    "DEFAULT_INTERVAL_S",
    "MESSAGE_CHARS",
    "ProgressSink",
    "RunProgress",
    "progress_args",
]

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 0.25  # at most four notifications a second
MESSAGE_CHARS = 200  # of a message from guest code, what is sent

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]
"""Sends one notification: progress, total, message."""


class RunProgress:
    """One run's progress, sent through `sink` (see the module docstring)."""

    def __init__(
        self, sink: ProgressSink | None, *, interval_s: float = DEFAULT_INTERVAL_S
    ) -> None:
        self._sink = sink
        self._interval_s = interval_s
        self._started = time.monotonic()
        self._calls = 0
        self._reported: tuple[float, float | None, str | None] | None = None
        self._sent_at = -math.inf
        self._last_progress = -math.inf  # of the last notification sent
        self._timer: asyncio.TimerHandle | None = None
        self._sending: asyncio.Future[None] | None = None
        self._closed = False
        self.sent = 0  # notifications handed to the sink

    def retarget(self, sink: ProgressSink | None) -> None:
        """Send through `sink` from now on (None: nowhere). A run that asked a 2026-07-28
        client a question goes on under the request that brings the answer."""
        self._sink = sink
        if sink is not None:
            self._changed()

    def call_ended(self) -> None:
        """An upstream call of the run ended (ok or not)."""
        self._calls += 1
        if self._reported is None:  # once the code reports, its numbers are the progress
            self._changed()

    def report(self, done: float, total: float | None, message: str | None) -> None:
        """Guest code's `progress(done, total, message)`, checked by the router."""
        self._reported = (done, total, message)
        self._changed()

    def state(self) -> tuple[float, float | None, str]:
        """What a notification sent now says: progress, total, message."""
        seconds = time.monotonic() - self._started
        status = f"{self._calls} call{'' if self._calls == 1 else 's'}, {seconds:.1f} s"
        if self._reported is None:
            return float(self._calls), None, status
        done, total, message = self._reported
        return done, total, message or status

    async def close(self) -> None:
        """The run is over: the latest state goes out now if the rate limit held it back
        (the code's `progress(n, n)`, the last calls), then nothing more. Its writing is
        not waited for: it starts now, so it is queued ahead of the run's result."""
        if self._closed:
            return
        held = self._timer is not None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if held and self._sink is not None:
            self._sending = None  # one still being written goes on; this one follows it
            self._send()
            await asyncio.sleep(0)  # its task takes its place in the session's queue
        self._closed = True

    def _changed(self) -> None:
        if self._closed or self._sink is None or self._timer is not None:
            return  # a notification is due already: it will carry this state
        wait_s = self._sent_at + self._interval_s - time.monotonic()
        if wait_s > 0:
            self._timer = asyncio.get_running_loop().call_later(wait_s, self._send)
        else:
            self._send()

    def _send(self) -> None:
        self._timer = None
        sink = self._sink
        if self._closed or sink is None:
            return
        if self._sending is not None and not self._sending.done():  # a slow client: wait
            self._timer = asyncio.get_running_loop().call_later(self._interval_s, self._send)
            return
        state = self.state()
        if state[0] <= self._last_progress:  # MCP: progress increases with each one
            return
        self._last_progress = state[0]
        self._sent_at = time.monotonic()
        self.sent += 1
        self._sending = asyncio.ensure_future(sink(*state))
        self._sending.add_done_callback(_log_failure)


def _log_failure(sent: asyncio.Future[None]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        failure = sent.exception()
        if failure is not None:  # a client gone away: the run goes on regardless
            logger.debug("a progress notification was not sent: %r", failure)


def progress_args(args: dict[str, Any]) -> tuple[float, float | None, str | None]:
    """Guest code's `progress(done, total=None, message=None)` arguments, checked: the
    numbers finite floats (a bool is not one), the message a str (UnknownToolError)."""
    done, total, message = args.get("done"), args.get("total"), args.get("message")
    numbers = _number(done), _number(total)
    if numbers[0] is None or (total is not None and numbers[1] is None):
        raise UnknownToolError("progress(): done and total must be finite numbers")
    if message is not None and not isinstance(message, str):
        raise UnknownToolError("progress(): message must be a str")
    return numbers[0], numbers[1], message


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    with contextlib.suppress(OverflowError):
        number = float(value)
        return number if math.isfinite(number) else None
    return None

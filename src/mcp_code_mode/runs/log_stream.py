"""`RunLogStream`: a run's `log(...)` lines sent to the client as MCP log messages while the
run works (contract §10).

Only a client that asked for log messages gets them (`elicitation.log_sink`: a
`logging/setLevel` from a client before MCP 2026-07-28, the request's log-level `_meta` from
one after); for any other there is no stream and the executor does not look for lines. The
executor hands over the lines the worker has written since it last looked (every quarter
second: `sandbox.conversation.LOG_POLL_S`), and they go out as one `notifications/message` at
level `info` from logger `execute_code`. At most `max_chars` characters are sent a run; past
them one line says so. The run's result carries the lines too (within its output limit).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from ..encodable import clean_text, clip

__all__ = ["LogSink", "RunLogStream"]

logger = logging.getLogger(__name__)

_LINE_CHARS = 2_000  # of one line, what is sent
_MORE = "\n… (more log lines are in the run's result)"

LogSink = Callable[[str], Awaitable[None]]
"""Sends one log message's text."""


class RunLogStream:
    """One run's log lines, sent through `sink` (see the module docstring)."""

    def __init__(self, sink: LogSink | None, *, max_chars: int = 100_000) -> None:
        self._sink = sink
        self._left = max_chars
        self._held: list[str] = []  # lines that came while there was no sink
        self._held_chars = 0
        self.sent = 0  # messages handed to the sink

    def retarget(self, sink: LogSink | None) -> None:
        """Send through `sink` from now on (None: nowhere, the lines held until there is
        one): a run that asked a 2026-07-28 client a question goes on under the request
        that brings the answer."""
        self._sink = sink

    async def send(self, lines: Sequence[str]) -> bool:
        """Send `lines` (new since the last call, with any held) as one message; never
        raises. False once nothing more will be sent."""
        if self._left <= 0:
            return False
        for line in lines:  # held while there is no sink: at most what may still be sent
            if self._held_chars >= self._left:
                break
            self._held.append(clip(line, _LINE_CHARS))
            self._held_chars += len(self._held[-1]) + 1
        sink = self._sink
        if sink is None or not self._held:
            return True
        text = clean_text("\n".join(self._held))
        self._held, self._held_chars = [], 0
        if len(text) > self._left:
            text = text[: max(self._left - len(_MORE), 0)] + _MORE
        self._left -= len(text)
        self.sent += 1
        try:
            await sink(text)
        except Exception as exc:  # a client gone away: the run goes on regardless
            logger.debug("a log message was not sent: %r", exc)
        return self._left > 0

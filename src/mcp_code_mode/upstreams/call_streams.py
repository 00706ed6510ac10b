"""The event streams of an HTTP upstream's calls, so that a call we cancel ends with them.

The MCP SDK reads a request's event stream for as long as the upstream keeps it open, and
resumes one that closes without a reply (a GET with `Last-Event-ID`), again and again, also
after the call timed out and we sent `notifications/cancelled`: 32 timed-out calls kept 33
connections and most of a core busy for minutes (outside attack 118), and resumptions of a
cancelled call ran at 115 GETs a second (attack 120). Here each stream is kept under its
request's JSON-RPC id (a resumption under the id whose event it resumes), a cancel ends the
stream, and a resumption of a cancelled call ends before it is read.
"""

from __future__ import annotations

import time
from typing import TypeVar

import httpx2

from .http_limit import BoundedEvents

__all__ = ["CallStreams"]

_REMEMBERED = 1024  # event ids and cancelled request ids kept (the oldest go first)

RequestId = int | str
_K = TypeVar("_K")
_V = TypeVar("_V")


class CallStreams:
    """One connection's call streams (see the module)."""

    def __init__(self) -> None:
        # several under one id: an upstream may give every stream the same event ids
        self._open: dict[RequestId, list[BoundedEvents]] = {}
        self._owners: dict[str, RequestId] = {}  # event id -> the request its stream answers
        self._cancelled: dict[RequestId, None] = {}
        self._started: dict[RequestId, float] = {}  # when each call (`tools/call`) was sent

    def adopt(self, events: BoundedEvents, request: httpx2.Request) -> None:
        """Keep `events`, a response's stream to `request`, under its request's id."""
        if events.request_id is None and request.method == "GET":
            resumed = request.headers.get("last-event-id")
            events.request_id = None if resumed is None else self._owners.get(resumed)
        key = events.request_id
        if key is None:
            return
        if key in self._cancelled:
            events.abandoned()
            return
        self._open.setdefault(key, []).append(events)

        def ended() -> None:
            streams = self._open.get(key, [])
            if events in streams:
                streams.remove(events)
            if not streams:
                self._open.pop(key, None)

        events.on_end = ended
        events.on_event_id = lambda event_id: _remember(self._owners, event_id, key)

    async def cancel(self, request_id: RequestId) -> None:
        """The call `request_id` was cancelled: its stream ends, and so will its resumptions."""
        _remember(self._cancelled, request_id, None)
        for events in self._open.pop(request_id, []):
            await events.abandon()

    def sent(self, request_id: object) -> None:
        """A call (`tools/call`) of ours was sent now."""
        if isinstance(request_id, int | str) and not isinstance(request_id, bool):
            _remember(self._started, request_id, time.monotonic())

    async def end_overdue(self, timeout_s: float) -> None:
        """A call timed out: end the streams of every call sent `timeout_s` ago or more (the
        SDK's cancel may never be written, when its writes are blocked: attack 120)."""
        now = time.monotonic()
        for key in [k for k in self._open if now - self._started.get(k, now) >= timeout_s]:
            await self.cancel(key)


def _remember(kept: dict[_K, _V], key: _K, value: _V) -> None:
    kept.pop(key, None)
    kept[key] = value
    while len(kept) > _REMEMBERED:
        del kept[next(iter(kept))]

"""AskBudget: how many of an HTTP upstream's own requests one connection takes.

An upstream may send requests of its own on an event stream (`ping`, `roots/list`,
`sampling/createMessage`, …). The MCP SDK starts a task for each and sends each answer as
a POST, one after another: 5,000 pings a second on the GET stream grew the gateway's memory
without bound (355 → 468 MB in 50 s, no call made), held a third of a core and delayed the
upstream's own calls past their `timeout_s` (outside attack 135). Past `rate` a second
(after a `burst`), an event holding such a request is dropped before the SDK sees it: the
upstream gets no answer, and nothing piles up. Stdio upstreams are answered by a write to
their stdin and are not limited here.
"""

from __future__ import annotations

import json
import time

__all__ = ["AskBudget", "holds_request"]

_PARSED = 1 << 20  # of an event's data, parsed to tell a request from a reply


class AskBudget:
    """A token bucket: `rate` requests a second, `burst` at once; `dropped` counts the rest."""

    def __init__(self, rate: float = 20.0, burst: int = 50) -> None:
        self.rate = rate
        self.burst = burst
        self.dropped = 0
        self._tokens = float(burst)
        self._stamp = time.monotonic()

    def take(self) -> bool:
        """Whether one more request may be answered now."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self.dropped += 1
        return False


def holds_request(event: list[bytes]) -> bool:
    """Whether the SSE event made of `event`'s lines carries a JSON-RPC request (a `method`
    and an `id`): the upstream's own, which the SDK answers."""
    data = b"\n".join(
        line[5:].removeprefix(b" ").rstrip(b"\r") for line in event if line.startswith(b"data:")
    )
    if b'"method"' not in data or b'"id"' not in data or len(data) > _PARSED:
        return False
    try:
        message = json.loads(data)
    except ValueError:
        return False
    return isinstance(message, dict) and "method" in message and "id" in message

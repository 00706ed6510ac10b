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
from typing import Literal

__all__ = ["AskBudget", "unasked"]

_PARSED = 1 << 20  # of an event's data, parsed to tell a request from a reply (the SDK's cap)

Unasked = Literal["request", "notification"]


class _Bucket:
    """`rate` a second, `burst` at once."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._tokens, self._stamp = float(burst), time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False


class AskBudget:
    """What one connection passes on of what its upstream sends unasked: `rate` requests a
    second after a `burst`, and as many notifications again and more (2,000
    `tools/list_changed` a second kept a third of a core busy: attack 137); `dropped`
    counts the rest."""

    def __init__(self, rate: float = 20.0, burst: int = 50) -> None:
        self.dropped = 0
        self._buckets = {
            "request": _Bucket(rate, burst),
            "notification": _Bucket(rate * 5, burst * 4),
        }

    def take(self, kind: Unasked = "request") -> bool:
        """Whether one more message of this kind may be passed on now."""
        if self._buckets[kind].take():
            return True
        self.dropped += 1
        return False


def unasked(event: list[bytes]) -> Unasked | None:
    """What the SSE event made of `event`'s lines carries that the upstream sends on its
    own: a JSON-RPC request (a `method` and an `id`: the SDK answers it) or a notification
    (a `method` alone); None for a reply or anything else. Read as the SDK reads it: the
    names may be spelt with escapes (`"\\u0069d"` passed a check of the text: attack 137),
    and bytes that are not UTF-8 are U+FFFD (one such byte made the parse fail: attack 139)."""
    data = b"\n".join(line[5:].removeprefix(b" ") for line in event if line.startswith(b"data:"))
    if len(data) > _PARSED:
        return None
    text = data.decode("utf-8", "replace")
    if '"method"' not in text and "\\u" not in text:
        return None
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):  # counted: the SDK may read what json does not
        return "request"
    if not isinstance(message, dict) or "method" not in message:
        return None
    return "request" if "id" in message else "notification"

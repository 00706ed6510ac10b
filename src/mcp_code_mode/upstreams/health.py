"""How an upstream's health is watched: timings, backoff, and when to ask.

Health costs the same at 10 tools and at 10,000, and slow is never dead:

- While down, the supervisor retries with backoff, jittered so a herd spreads out.
- While up, successful traffic is the sign of life. An idle upstream gets one `ping`
  (`server/discover` on a 2026-07-28 connection) per interval; a stdio upstream whose
  stderr pipe is open, one per six: the pipe's end says at once that the process exited
  (then one request tells for sure, as a process may close its stderr and live on).
- A probe that times out or gets an error reply changes nothing; only a dead transport
  or a forgotten session (`errors.classify`) loses the connection.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import Link
    from .errors import Failure

__all__ = ["ConnectionTiming", "answers", "check_due", "probe", "retry_delay_s", "wait_for"]

# A stdio upstream whose stderr pipe is open is asked this many times less often: a child
# it forked may hold the pipe after it died, and then only a request tells.
_WATCHED_FACTOR = 6
# After the n-th failure in a row the supervisor waits about this long (the last value
# repeats), jittered by ±50%.
_RETRY_DELAYS_S = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)


@dataclass(slots=True)
class ConnectionTiming:
    """How long things may take; shared by every connection of a manager (tests tune it)."""

    health_interval_s: float = 10.0
    health_timeout_s: float = 10.0
    refresh_interval_s: float = 600.0
    startup_ceiling_factor: float = 10.0  # times startup_timeout_s, while it is still working


def retry_delay_s(failures: int) -> float:
    """How long to wait before the next attempt after `failures` failures in a row."""
    step = _RETRY_DELAYS_S[min(max(failures - 1, 0), len(_RETRY_DELAYS_S) - 1)]
    return step * random.uniform(0.5, 1.5)


def check_due(*, forced: bool, since_answer_s: float, interval_s: float, watched: bool) -> bool:
    """Whether an `ok` upstream should be asked now (see the module docstring)."""
    factor = _WATCHED_FACTOR if watched else 1
    return forced or since_answer_s >= interval_s * factor


async def probe(link: Link, *, timeout_s: float) -> Failure | None:
    """Ask the upstream one cheap request; what its failure means, or None if it answered."""
    from . import client, errors

    try:
        await client.check_alive(link.client, timeout_s=timeout_s)
    except Exception as exc:  # mapped by `classify`, once
        return errors.classify(exc, session_gone=link.session_gone)
    return None


async def answers(link: Link, *, timeout_s: float) -> bool:
    """Whether the connection still answers (a call's error only looked like its end)."""
    failure = await probe(link, timeout_s=timeout_s)
    return failure is None or not failure.connection_lost


async def wait_for(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait for `event` (and clear it) for at most `timeout_s`; whether it was set."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    event.clear()
    return True

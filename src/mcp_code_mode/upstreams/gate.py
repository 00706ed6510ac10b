"""StartGate: how many upstreams may be starting at once.

A hundred upstreams started together on two cores each take a hundred times longer, miss
their deadlines together and start again together: the herd never converges. The gate
lets a few start at a time. A slow starter keeps its slot for `hold_s` only; after that it
goes on starting outside the gate, so one upstream that needs minutes delays nobody.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["StartGate", "default_concurrent_starts"]

T = TypeVar("T")


def default_concurrent_starts() -> int:
    """Four times the CPUs this process may use, at least 8: a starting upstream mostly
    waits (for its interpreter, its imports, its catalog), and a few more than the cores
    keep them busy without a herd."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(8, 4 * cpus)


class StartGate:
    """At most `size` attempts inside their first `hold_s` at a time."""

    def __init__(self, size: int) -> None:
        self._slots = asyncio.Semaphore(size)

    async def run(
        self,
        work: Coroutine[Any, Any, T],
        *,
        hold_s: float,
        on_slow: Callable[[], None],
    ) -> T:
        """Run `work` once a slot is free; after `hold_s` the slot is given back (and
        `on_slow` called) while `work` goes on. Cancelling the caller cancels `work`."""
        try:
            await self._slots.acquire()
        except BaseException:
            work.close()
            raise
        task = asyncio.ensure_future(work)
        try:
            try:
                done, _ = await asyncio.wait({task}, timeout=hold_s)
            finally:
                self._slots.release()
            if not done:
                on_slow()
            return await task
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

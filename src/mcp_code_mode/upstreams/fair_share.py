"""FairShare: one upstream's calls in flight, bounded and handed out in turn between runs.

An upstream is shared by every run of every client. Bounded per run only, six runs of one
client kept 96 calls in flight to a stdio upstream and another client's one call waited
behind them for seconds (attack 128). Here at most `size` calls are in flight to the
upstream, and a place that frees goes to the waiting run that holds the fewest: a run
waiting for its first call goes ahead of another run's seventeenth. And no run holds more
than three quarters of them (`cap`): one run's 16 calls that hung took every place, and
every other client's calls to that upstream waited out their timeout (attack 143).

Whose call it is comes from `call_owner`, a context variable the run sets on the task that
makes the call (calls outside any run share one turn, `None`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Hashable
from contextvars import ContextVar

__all__ = ["FairShare", "call_owner"]

call_owner: ContextVar[Hashable | None] = ContextVar("mcp_code_mode_call_owner", default=None)


class FairShare:
    """At most `size` places held at once, `cap` by one owner; a freed place goes to the
    waiting owner that holds the fewest (the longest waiting among equals)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.cap = max(1, size - size // 4)  # a quarter left for the others (none under 4)
        self.busy = 0
        self._held: dict[Hashable | None, int] = {}
        self._waiting: OrderedDict[Hashable | None, deque[asyncio.Future[None]]] = OrderedDict()

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold one place for the current `call_owner` while the block runs."""
        owner = call_owner.get()
        await self._acquire(owner)
        try:
            yield
        finally:
            self._release(owner)

    async def _acquire(self, owner: Hashable | None) -> None:
        if self.busy < self.size and not self._waiting and self._held.get(owner, 0) < self.cap:
            self._take(owner)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(owner, deque()).append(waiter)
        self._hand_out()  # places may be free while every run waiting before holds its cap
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._release(owner)  # given a place as it was cancelled: hand it on
            else:
                self._forget(owner, waiter)
            raise

    def _take(self, owner: Hashable | None) -> None:
        self.busy += 1
        self._held[owner] = self._held.get(owner, 0) + 1

    def _release(self, owner: Hashable | None) -> None:
        self.busy -= 1
        if (left := self._held.pop(owner) - 1) > 0:
            self._held[owner] = left
        self._hand_out()

    def _hand_out(self) -> None:
        """Free places to the waiting owners below their cap, the fewest held first."""
        while self.busy < self.size:
            below = [waiting for waiting in self._waiting if self._held.get(waiting, 0) < self.cap]
            if not below:
                return
            owner = min(below, key=lambda waiting: self._held.get(waiting, 0))
            waiters = self._waiting[owner]
            waiter = waiters.popleft()
            if not waiters:
                del self._waiting[owner]
            if not waiter.done():
                self._take(owner)
                waiter.set_result(None)

    def _forget(self, owner: Hashable | None, waiter: asyncio.Future[None]) -> None:
        waiters = self._waiting.get(owner)
        if waiters is None:
            return
        with contextlib.suppress(ValueError):
            waiters.remove(waiter)
        if not waiters:
            del self._waiting[owner]

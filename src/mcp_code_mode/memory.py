"""Memory around a big build: no collections during it, freed memory given back after.

Building the search index over 10,000 tools allocates and frees a few hundred MB of small
objects; glibc keeps the freed pages in its arenas, so the server's RSS stays at the peak.
`malloc_trim` returns them. Elsewhere (musl, macOS) this does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")

__all__ = ["IdleRelease", "collection_paused", "release_free_memory", "uncollected"]


def release_free_memory() -> None:
    """Collect garbage, then return free heap pages to the system where glibc allows."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class IdleRelease:
    """Freed memory given back once the process is idle after big traffic: bursts of big
    upstream results (16 runs reading 9 MB each, three times) left a gateway at 1 GB RSS
    for good, glibc keeping the pages Python had freed (outside attack 143). `moved` counts
    a big result; past `threshold` bytes a task waits until `busy()` has been false for
    `quiet_s`, then trims in a thread (no collection: it would hold the GIL for the heap).
    """

    def __init__(self, threshold: int = 32 << 20, quiet_s: float = 1.0) -> None:
        self.threshold, self.quiet_s = threshold, quiet_s
        self._moved = 0
        self._task: asyncio.Task[None] | None = None

    def moved(self, size: int, busy: Callable[[], bool]) -> None:
        self._moved += size
        if self._moved >= self.threshold and self._task is None:
            self._task = asyncio.create_task(self._when_idle(busy), name="memory-release")

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _when_idle(self, busy: Callable[[], bool]) -> None:
        try:
            await asyncio.sleep(self.quiet_s)
            while busy():
                await asyncio.sleep(self.quiet_s)
            self._moved = 0
            trim = _malloc_trim()
            if trim is not None:
                await asyncio.to_thread(trim, 0)
        finally:
            self._task = None


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while a catalog or search index is built. Building
    allocates ~10^5 small containers, which set off full collections over the whole process
    heap (a gateway's, with 10,000 tool schemas, is large): at 10,000 tools that doubled the
    build. The collector runs again right after (the pause is process-wide)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def uncollected(function: Callable[_P, _T]) -> Callable[_P, _T]:
    """`function`, run with the collection paused (`collection_paused`): for work off the
    event loop that makes many containers at once (a large line parsed, arguments copied).
    Their allocations set off full collections over the gateway's heap, which hold the GIL,
    and so the event loop, 100-200 ms each (outside attack 85: a 1 MB line of 330,000
    empty lists parsed in 18 ms without them, 170-280 ms with them)."""

    @functools.wraps(function)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        with collection_paused():
            return function(*args, **kwargs)

    return run

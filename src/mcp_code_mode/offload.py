"""Work that would hold the event loop, done on one thread of the gateway's own.

Parsing a large line, copying and measuring a guest's arguments, writing a large reply:
CPU work that holds the GIL, so off the event loop it still competes with it. On a pool
of threads, many such jobs at once (a batch's 14 argument checks, 24 upstream replies
parsed side by side) left the loop one turn in 7 to 30 and held it 0.4-2 s (outside attack
85); on one thread, the loop takes every other turn, and the work costs what it did (the
GIL ran one job at a time anyway). Each job runs with the cyclic collector paused
(`memory.uncollected`): the containers it makes set off full collections otherwise. While
the thread works back to back, collection waits between jobs only; cyclic garbage made in
the meantime is collected when a job ends and the process next allocates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from .memory import uncollected

__all__ = ["offloaded"]

_T = TypeVar("_T")
_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-code-mode-offload")


async def offloaded(function: Callable[..., _T], *args: object) -> _T:
    """`function(*args)`, run on the offload thread with the collector paused."""
    return await asyncio.get_running_loop().run_in_executor(_THREAD, uncollected(function), *args)

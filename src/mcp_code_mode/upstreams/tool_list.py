"""ToolList: what one upstream offers, kept current without listing it more than needed.

It starts from the tool cache (what an earlier run saw) and is replaced by what the
upstream lists. A refresh follows `tools/list_changed`; a connection that cannot announce
changes between calls (2026-07-28) is listed again at most every `refresh_interval_s`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import mcp_types

from ..server_config import ServerConfig
from .server_log import shown

if TYPE_CHECKING:
    from .client import Link

__all__ = ["ToolList"]

_REST_FACTOR = 4.0  # a refresh waits this many times the last one's cost
# and at least this long: a small list costs next to nothing, and 2,000 announcements a
# second made 20 listings a second, a third of a core (outside attack 135)
_REST_S = 0.25
_REASON_CHARS = 500  # of an upstream's error, as logged

logger = logging.getLogger(__name__)


class ToolList:
    """One upstream's tools: `exposed` (after allow/deny) and how they were learnt.

    Args:
        known: the unfiltered list from an earlier run (the tool cache), or None.
        on_change: called with the unfiltered list whenever a listing differs from what
            was known (the manager bumps its version; the gateway writes its cache).
    """

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        known: list[mcp_types.Tool] | None,
        on_change: Callable[[str, list[mcp_types.Tool]], None],
    ) -> None:
        self.name = name
        self._config = config
        self._on_change = on_change
        self._raw = list(known) if known is not None else None
        self.exposed = [t for t in known or () if config.exposes(t.name)]
        self.known = known is not None  # its tools are in the catalog
        self.listed = False  # this process's tools/list has answered
        self.listed_at = 0.0
        self.refreshing: asyncio.Task[None] | None = None
        self._listed_over: Link | None = None  # the link whose listing `exposed` is
        self._by_name = self._named(self.exposed)
        self._refresh_link: Link | None = None
        self._link: Link | None = None
        self._wanted = False
        self._announced = False  # by the upstream: calls wait for the refresh
        self._rested_at = 0.0  # monotonic time before which no listing starts

    def attach(self, link: Link | None) -> None:
        """The connection's live link (None while down): the only one refreshed."""
        self._link = link

    def replace(self, tools: list[mcp_types.Tool], link: Link | None = None) -> None:
        """What the upstream just listed (over `link`)."""
        self.listed, self.listed_at = True, time.monotonic()
        self._listed_over = link
        if self._raw is not None and _same(self._raw, tools):
            self.known = True
            return
        self._raw = list(tools)
        self.exposed = [t for t in tools if self._config.exposes(t.name)]
        self._by_name = self._named(self.exposed)
        self.known = True
        self._on_change(self.name, list(tools))

    def find(self, name: str) -> mcp_types.Tool | None:
        """The exposed tool of that name, as last listed (of several listed under one name,
        one that needs approval)."""
        return self._by_name.get(name)

    def _named(self, tools: list[mcp_types.Tool]) -> dict[str, mcp_types.Tool]:
        named: dict[str, mcp_types.Tool] = {}
        for tool in tools:
            if tool.name not in named or self._config.needs_approval(tool):
                named[tool.name] = tool
        return named

    def current(self, link: Link) -> bool:
        """Whether `exposed` is what `link` listed, with no listing over it under way."""
        task = self.refreshing
        busy = task is not None and not task.done() and self._refresh_link is link
        return self._listed_over is link and not busy

    async def listed_over(self, link: Link, timeout_s: float) -> bool:
        """Wait until the tools are `current` for `link`, listing them over it if no listing
        is under way (after a reconnect, or a tools/list_changed); False past `timeout_s`
        or once `link` is no longer the live one."""
        await asyncio.sleep(0)  # a list_changed that came with the last reply starts first
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self.current(link):
            if self._link is not link or loop.time() >= deadline:
                return False
            task = self.refreshing
            if task is None or task.done() or self._refresh_link is not link:
                self.want_refresh(link, announced=False)
                task = self.refreshing
            if task is not None:
                await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
        return True

    def stale(self, now: float, interval_s: float, modern: bool) -> bool:
        """Whether a connection that cannot announce changes should list them again."""
        busy = self.refreshing is not None and not self.refreshing.done()
        return modern and not busy and now - self.listed_at >= interval_s

    def want_refresh(self, link: Link, *, announced: bool) -> None:
        """List the tools again (once more if another change is announced meanwhile).

        `announced`: the upstream sent tools/list_changed, most likely while answering a
        call, so that call waits for the new list before it returns (`settle_refresh`):
        a tool the call added is callable right after it.
        """
        if self._link is not link:
            return
        self._announced = self._announced or announced
        self._wanted = True
        task = self.refreshing
        if task is None or task.done() or self._refresh_link is not link:
            if task is not None:
                task.cancel()  # a refresh of a replaced link is moot
            self.refreshing = asyncio.create_task(self._refresh(link))
            self._refresh_link = link

    async def settle_refresh(self, timeout_s: float) -> None:
        """Let a refresh a call's reply announced finish, so its tools are callable next."""
        await asyncio.sleep(0)  # the notification handler runs before the reply's waiter
        task = self.refreshing
        if task is not None and not task.done() and self._announced:
            await asyncio.wait({task}, timeout=timeout_s)

    async def _refresh(self, link: Link) -> None:
        """List until no change is announced meanwhile. Each listing waits until the last
        one's cost has passed `_REST_FACTOR` times over: an upstream announcing changes
        in a loop gets at most a fifth of the gateway's time, however big its list."""
        from . import client

        while self._wanted and self._link is link:
            await asyncio.sleep(max(0.0, self._rested_at - time.monotonic()))
            self._wanted = False
            started = time.monotonic()
            try:
                tools = await client.list_all_tools(link)
            except Exception as exc:  # the next call or health check will tell more
                # the upstream's words, cleaned and cut (2 MB with escapes each: attack 120)
                reason = shown(str(exc), _REASON_CHARS)
                logger.warning("upstream %s: refreshing its tools failed: %s", self.name, reason)
                break
            if self._link is link:
                self.replace(tools, link)
                logger.info("upstream %s: tools listed (%d tools)", self.name, len(self.exposed))
            ended = time.monotonic()
            self._rested_at = ended + max(_REST_S, _REST_FACTOR * (ended - started))
        self._announced = False


def _same(a: list[mcp_types.Tool], b: list[mcp_types.Tool]) -> bool:
    """Whether two tool lists are equal; lists too deep to compare count as a change."""
    try:
        return a == b
    except RecursionError:
        return False

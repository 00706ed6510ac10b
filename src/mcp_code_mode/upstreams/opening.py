"""Opening one connection to an upstream: its transport with our hooks, a fastmcp client
over it, connected, and (when asked) its first tools/list.

Each hook closes over the attempt's own `Link`, so news about a stale connection (its
process's stderr ending, its HTTP session forgotten, its tools changed) never touches the
connection that replaced it. fastmcp's client stack is imported on the first attempt, not
with this module (see `client`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

import mcp_types

from ..server_config import ServerConfig

if TYPE_CHECKING:
    from .client import Link
    from .server_log import UpstreamLog
    from .stderr_log import StderrLog

__all__ = ["open_link"]


async def open_link(
    config: ServerConfig,
    *,
    log: UpstreamLog,
    stderr: StderrLog | None,
    max_result_bytes: int,
    list_tools: bool,
    on_stderr_ended: Callable[[Link], None],
    on_session_gone: Callable[[Link], None],
    on_tools_changed: Callable[[Link], None],
) -> tuple[Link, list[mcp_types.Tool] | None]:
    """A new client for the upstream `name`, connected (and its tools listed when
    `list_tools`); closed on failure.

    Args:
        log: the client's handler of what the upstream logs (`server_log.UpstreamLog`).
        stderr: where a stdio upstream's stderr goes (None for a URL upstream).
        max_result_bytes: the most one reply may hold (see `client.bounded`).
        on_stderr_ended, on_session_gone, on_tools_changed: told, with this attempt's
            link, that the process's stderr closed, that the HTTP upstream no longer
            knows the session, that the upstream announced `tools/list_changed`.
    """
    from . import client
    from .stdio import OTHER_REPLY_BYTES

    link = client.Link(listing_bytes=max(max_result_bytes, OTHER_REPLY_BYTES))
    errors = stderr.open(lambda: on_stderr_ended(link)) if stderr is not None else None
    factory = client.http_client_factory(link, lambda: on_session_gone(link), max_result_bytes)
    transport = config.to_transport(stderr=errors, http_client_factory=factory)
    fresh = client.new_client(
        client.bounded(
            transport, max_result_bytes=max_result_bytes, http_client_factory=factory, link=link
        ),
        link,
        log=log,
        on_tools_changed=lambda: on_tools_changed(link),
    )
    try:
        await fresh.__aenter__()  # type: ignore[no-untyped-call]
        client.skip_result_validation(fresh)
        listed = await client.list_all_tools(link) if list_tools else None
    except BaseException as exc:
        await asyncio.shield(client.close(fresh))
        if link.refused is not None and isinstance(exc, Exception):
            raise client.Unauthorized(link.refused) from exc
        raise
    finally:
        if stderr is not None:
            stderr.spawned()
    return link, listed

"""MCPServerManager: one long-lived fastmcp `Client` per upstream server.

All upstreams connect concurrently at start, each bounded by its start-up timeout;
one that fails is reported (`status: "error"`) and the rest keep working. Tool lists
are cached. A call that finds its upstream dead marks it for restart, and the next
call to that server reconnects first. fastmcp/MCP exceptions are mapped here, once,
to `ToolCallFailed`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

from fastmcp import Client
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError

from .config import GatewayConfig, ServerConfig
from .errors import ToolCallFailed
from .tool_results import error_text

__all__ = ["MCPServerManager", "ServerStatus"]

logger = logging.getLogger(__name__)

Status = Literal["ok", "error", "disabled"]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One row of `list_servers` (contract §3)."""

    name: str
    description: str
    status: Status
    tool_count: int
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "status": self.status,
            "tool_count": self.tool_count,
            "error": self.error,
        }


@dataclass(slots=True)
class _Upstream:
    name: str
    config: ServerConfig
    timeout_s: float
    client: Client[Any] | None = None
    tools: list[mcp_types.Tool] = field(default_factory=list)
    error: str | None = None
    needs_restart: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class MCPServerManager:
    """Connects to every enabled upstream and routes tool calls to them.

    Use as `async with MCPServerManager(config, default_timeout_s=30) as manager:`.
    """

    def __init__(self, config: GatewayConfig, *, default_timeout_s: float = 30.0) -> None:
        self.config = config
        self._upstreams = {
            name: _Upstream(name, server, server.timeout_s or default_timeout_s)
            for name, server in config.enabled.items()
        }
        self.tools_version = 0  # bumped whenever a tool list changes

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await self.aclose()

    async def start(self) -> None:
        """Connect to every enabled upstream concurrently; failures are recorded, not raised."""
        await asyncio.gather(*(self._connect(up) for up in self._upstreams.values()))

    async def aclose(self) -> None:
        """Close every client (and so stop every stdio upstream); safe under cancellation."""
        clients = [up.client for up in self._upstreams.values() if up.client is not None]
        for up in self._upstreams.values():
            up.client = None
        await asyncio.shield(asyncio.gather(*(_close(c) for c in clients)))

    def tools(self) -> dict[str, list[mcp_types.Tool]]:
        """The cached, filtered tool lists of the servers that are up, in config order."""
        return {n: list(up.tools) for n, up in self._upstreams.items() if up.client is not None}

    def statuses(self) -> list[ServerStatus]:
        """One row per configured server, in config order."""
        rows = []
        for name, server in self.config.servers.items():
            up = self._upstreams.get(name)
            if up is None:
                rows.append(ServerStatus(name, server.description, "disabled", 0, None))
            elif up.client is None or up.needs_restart:
                rows.append(ServerStatus(name, server.description, "error", 0, up.error))
            else:
                rows.append(ServerStatus(name, server.description, "ok", len(up.tools), None))
        return rows

    def unavailable_reason(self, server: str) -> str | None:
        """Why a configured server cannot take calls now; None when it can (or is unknown)."""
        if server in self.config.servers and server not in self._upstreams:
            return f"server {server!r} is disabled in the config"
        up = self._upstreams.get(server)
        if up is not None and up.client is None and not up.needs_restart:
            return f"server {server!r} is unavailable: {up.error}"
        return None

    async def call_tool(
        self, server: str, tool: str, arguments: Mapping[str, Any] | None = None
    ) -> mcp_types.CallToolResult:
        """Call one upstream tool and return its successful result.

        Raises:
            ToolCallFailed: the tool reported an error, timed out, or its server is down.
        """
        up = self._upstreams.get(server)
        if up is None:
            raise ToolCallFailed(server, tool, f"server {server!r} is not configured or disabled")
        if up.needs_restart:
            await self._restart(up)
        client = up.client
        if client is None:
            raise ToolCallFailed(server, tool, f"server is unavailable: {up.error}")
        try:
            result = await client.call_tool_mcp(tool, dict(arguments or {}), timeout=up.timeout_s)
        except TimeoutError:
            raise ToolCallFailed(server, tool, f"timed out after {up.timeout_s:g}s") from None
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED or not client.is_connected():
                self._mark_dead(up, client, exc)
                raise ToolCallFailed(server, tool, f"upstream failed: {exc.message}") from None
            raise ToolCallFailed(server, tool, exc.message) from None
        except Exception as exc:  # transport failure of any kind: the upstream is gone
            self._mark_dead(up, client, exc)
            raise ToolCallFailed(server, tool, f"upstream failed: {_describe(exc)}") from None
        if result.is_error:
            raise ToolCallFailed(server, tool, error_text(result))
        return result

    async def _connect(self, up: _Upstream) -> None:
        client: Client[Any] = Client(
            up.config.to_transport(), timeout=up.timeout_s, init_timeout=up.timeout_s
        )
        started = time.perf_counter()
        try:
            async with asyncio.timeout(up.timeout_s):
                await client.__aenter__()  # type: ignore[no-untyped-call]
                tools = await client.list_tools()
        except Exception as exc:  # any start-up failure is reported as this server's status
            await _close(client)
            up.client, up.tools = None, []
            up.error = f"failed to start: {_describe(exc)}"
            if isinstance(exc, TimeoutError):
                up.error = f"failed to start within {up.timeout_s:g}s (timeout_s)"
            logger.warning("upstream %s: %s", up.name, up.error)
            return
        up.client, up.error, up.needs_restart = client, None, False
        exposed = [t for t in tools if up.config.exposes(t.name)]
        if [t.name for t in exposed] != [t.name for t in up.tools]:
            self.tools_version += 1
        up.tools = exposed
        logger.info(
            "upstream %s: %d tools in %.0f ms",
            up.name, len(exposed), (time.perf_counter() - started) * 1000,
        )  # fmt: skip

    async def _restart(self, up: _Upstream) -> None:
        async with up.lock:
            if not up.needs_restart:  # another caller restarted it meanwhile
                return
            old, up.client = up.client, None
            if old is not None:
                await _close(old)
            logger.warning("upstream %s: restarting after failure (%s)", up.name, up.error)
            await self._connect(up)
            # A failed restart leaves `needs_restart` set, so the next call tries again.
            up.needs_restart = up.client is None

    def _mark_dead(self, up: _Upstream, client: Client[Any], exc: BaseException) -> None:
        if up.client is client:
            up.needs_restart = True
            up.error = f"connection lost: {_describe(exc)}"


async def _close(client: Client[Any]) -> None:
    try:
        await client.close()  # type: ignore[no-untyped-call]
    except Exception as exc:  # teardown of a broken transport must not stop the others
        logger.debug("error while closing upstream client: %s", exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    if isinstance(exc, MCPError):
        return exc.message
    return str(exc).strip() or type(exc).__name__

"""MCPServerManager: the configured upstreams as one collection.

Each upstream is an `UpstreamConnection` (its state machine, healing, health and tools);
the manager starts them through one `StartGate`, routes calls by server name, and answers
what is true now (`statuses`, `tools`). One upstream failing leaves the rest working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import mcp_types

from ..config import GatewayConfig
from ..encodable import clean_text, clip, make_encodable
from ..errors import ToolCallFailed
from .connection import Admit, UpstreamConnection
from .gate import StartGate, default_concurrent_starts
from .health import ConnectionTiming
from .states import UpstreamState
from .tool_list import ToolList

__all__ = ["Connect", "MCPServerManager", "ServerStatus"]

Status = Literal["ok", "starting", "error", "disabled"]
Connect = Literal["wait", "background", "on_demand"]


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


class MCPServerManager:
    """Connects to every enabled upstream, routes tool calls to them and heals them.

    Use as `async with MCPServerManager(config, default_timeout_s=30) as manager:`.

    Args:
        known_tools: tool lists from an earlier run, by server (unfiltered); they serve
            the catalog until each upstream lists its own.
        on_tools_listed: called with an upstream's unfiltered tools whenever it lists
            tools that differ from what was known (the gateway writes its cache).
        max_concurrent_starts: upstreams starting at once (default: from the CPU count).
        max_result_bytes: the largest reply an upstream may send; a bigger one is cut off
            while it is read and fails its call (`MCP_CODE_MAX_RESULT_BYTES`).
        max_upstream_calls: calls in flight to one upstream, shared out between runs in
            turn (`fair_share`; `MCP_CODE_MAX_UPSTREAM_CALLS`).
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        default_timeout_s: float = 30.0,
        startup_timeout_s: float = 60.0,
        health_interval_s: float = 10.0,
        max_concurrent_starts: int | None = None,
        max_result_bytes: int = 10_000_000,
        max_upstream_calls: int = 16,
        known_tools: Mapping[str, list[mcp_types.Tool]] | None = None,
        on_tools_listed: Callable[[str, list[mcp_types.Tool]], None] | None = None,
        log_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.timing = ConnectionTiming(health_interval_s=health_interval_s)
        self.tools_version = 0  # bumped whenever a tool list changes
        self._on_tools_listed = on_tools_listed
        gate = StartGate(max_concurrent_starts or default_concurrent_starts())
        known = known_tools or {}
        self._upstreams = {
            name: UpstreamConnection(
                name,
                server,
                timeout_s=server.timeout_s or default_timeout_s,
                startup_timeout_s=server.timeout_s or startup_timeout_s,
                max_result_bytes=max_result_bytes,
                max_calls=max_upstream_calls,
                gate=gate,
                timing=self.timing,
                tools=ToolList(name, server, known=known.get(name), on_change=self._changed),
                redact=config.redact,
                log_dir=log_dir,
            )
            for name, server in config.enabled.items()
        }

    @property
    def health_interval_s(self) -> float:
        return self.timing.health_interval_s

    @health_interval_s.setter
    def health_interval_s(self, value: float) -> None:
        self.timing.health_interval_s = value

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self, *, connect: Connect = "wait") -> None:
        """Start connecting to the enabled upstreams; failures are recorded, not raised.

        `connect`: `"wait"` returns once every upstream has connected, failed or gone
        past its start-up deadline (it keeps starting, `starting`); `"background"`
        returns at once while they connect (see `settle`); `"on_demand"` connects none:
        each connects when a call or `settle` first needs it. A later `start` of an
        `"on_demand"` manager starts those not started yet and supervises them all.
        """
        if connect == "on_demand":
            return
        for up in self._upstreams.values():
            if not up.started:
                up.begin()
        if connect == "wait":
            await self.settle()
        for up in self._upstreams.values():
            up.supervise()

    async def settle(self, servers: Iterable[str] | None = None) -> None:
        """Wait until each named upstream (default: all) has answered, failed or passed its
        start-up deadline once; one not started yet starts now. Unknown names are ignored."""
        names = self._upstreams if servers is None else dict.fromkeys(servers)
        pending = [self._upstreams[n].settle() for n in names if n in self._upstreams]
        if len(pending) == 1:  # every tool call passes here: no task for the one upstream
            await pending[0]
        elif pending:
            await asyncio.gather(*pending)

    async def aclose(self, *, exit_grace_s: float | None = None) -> None:
        """Stop the supervisors and close every client (so every stdio upstream stops).

        `exit_grace_s`: how long a stdio upstream may take to exit after its stdin closes
        before its process group is ended (default: the MCP SDK's 2 s).
        Safe under cancellation: the shutdown runs to its end in its own task.
        """
        closing = [up.aclose(exit_grace_s=exit_grace_s) for up in self._upstreams.values()]
        await asyncio.shield(asyncio.gather(*closing, return_exceptions=True))

    # ------------------------------------------------------------------ what is true now

    def state(self, server: str) -> UpstreamState | None:
        """The state of an enabled upstream (see `states`); None when unknown."""
        up = self._upstreams.get(server)
        if up is None:
            return None
        up.observe()
        return up.state

    def tools(self) -> dict[str, list[mcp_types.Tool]]:
        """The filtered tool lists of the upstreams whose tools are known, in config order.

        An upstream that is down keeps its last list: a call to it is what reconnects it.
        """
        return {n: list(up.tools.exposed) for n, up in self._upstreams.items() if up.tools.known}

    def statuses(self) -> list[ServerStatus]:
        """One row per configured server, in config order, as things are now."""
        rows = []
        for name, server in self.config.servers.items():
            up = self._upstreams.get(name)
            if up is None:
                rows.append(ServerStatus(name, server.description, "disabled", 0, None))
                continue
            up.observe()
            if up.state == "ok":
                count = len(up.tools.exposed)
                rows.append(ServerStatus(name, server.description, "ok", count, None))
            else:
                status: Status = "starting" if up.state == "connecting" else "error"
                reason = _shown(up.status_reason())
                rows.append(ServerStatus(name, server.description, status, 0, reason))
        return rows

    def unavailable_reason(self, server: str) -> str | None:
        """Why a configured server cannot take calls now; None when it can (or is unknown).

        An upstream that answered once and is now down can take calls: the next call
        reconnects it. One that never answered has no tools to call.
        """
        if server in self.config.servers and server not in self._upstreams:
            return f"server {server!r} is disabled in the config"
        up = self._upstreams.get(server)
        if up is not None and up.state != "ok" and not up.tools.known:
            return f"server {server!r} is unavailable: {_shown(up.status_reason())}"
        return None

    # ------------------------------------------------------------------ calls

    async def call_tool(
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        admit: Admit | None = None,
        encoded: bool = False,
    ) -> mcp_types.CallToolResult:
        """Call one upstream tool and return its successful result.

        A lost upstream is reconnected first; a call its HTTP upstream refused only
        because the session was gone is sent once more on a new session. `admit`, when
        given, decides on the tool as the connection it goes over lists it, right before
        it is sent (approval; see `connection.Admit`). `encoded`: the caller made the
        arguments `encodable.sendable` (off the event loop when large), so they are not
        walked again here (a second walk of 240,000 items held the loop 100 ms).

        Raises:
            ToolCallFailed: the tool reported an error, timed out, sent a malformed
                reply, or its server is down.
        """
        up = self._upstreams.get(server)
        if up is None:
            raise ToolCallFailed(server, tool, f"server {server!r} is not configured or disabled")
        # Text that cannot be encoded would fail while the request is written: send U+FFFD.
        args = dict(arguments or {}) if encoded else make_encodable(dict(arguments or {}))
        try:
            return await up.call_tool(tool, args, admit=admit)
        except ToolCallFailed as exc:  # its text is the upstream's: shown to models, cleaned
            raise ToolCallFailed(exc.server, exc.tool, clean_text(exc.message)) from None

    def _changed(self, server: str, tools: list[mcp_types.Tool]) -> None:
        self.tools_version += 1
        if self._on_tools_listed is not None:
            self._on_tools_listed(server, tools)


_REASON_CHARS = 2000  # of an upstream's failure in a status row or an error


def _shown(reason: str) -> str:
    """An upstream's failure (its error text, its stderr's last lines) as a model or a
    terminal is shown it: cleaned of escapes, controls and bidi overrides, and clipped."""
    return clean_text(clip(reason, _REASON_CHARS))

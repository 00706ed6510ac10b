"""MCPServerManager: one long-lived fastmcp `Client` per upstream server.

All upstreams connect concurrently at start, each bounded by its start-up timeout
(the entry's `timeout_s`, else MCP_CODE_STARTUP_TIMEOUT_S); one that fails is reported
(`status: "error"`, naming its command or URL and the last lines it wrote on stderr) and
the rest keep working. Tool lists are cached. A call whose *transport* failed marks the
upstream for restart, and the next call to that server reconnects first; any other
failure (an error reply, a malformed reply, arguments that could not be sent) fails that
call only, so a guest cannot make the gateway reset an upstream other runs share.
fastmcp/MCP exceptions are mapped here, once, to `ToolCallFailed`.

A stdio upstream's stderr goes to a temporary file, not the terminal: an upstream's
expected errors (often a long rich traceback) are its own business; their last lines
appear in our error messages when it fails to start or dies.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self, TextIO, cast

import anyio
import httpx
from fastmcp import Client
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError

from . import __version__
from .config import GatewayConfig, ServerConfig
from .encodable import encodable_text, make_encodable
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


_CLIENT_INFO = mcp_types.Implementation(name="mcp-code-mode", version=__version__)
_STDERR_TAIL_BYTES = 2000
_STDERR_TAIL_LINES = 5
# What a dead transport raises (beside an MCP "connection closed" error): the process or
# socket is gone. Anything else is a problem with one message, not with the connection.
_TRANSPORT_ERRORS = (
    OSError,
    EOFError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx.TransportError,
)


@dataclass(slots=True)
class _Upstream:
    name: str
    config: ServerConfig
    timeout_s: float  # each call
    startup_timeout_s: float
    client: Client[Any] | None = None
    stderr: TextIO | None = None
    tools: list[mcp_types.Tool] = field(default_factory=list)
    error: str | None = None
    needs_restart: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class MCPServerManager:
    """Connects to every enabled upstream and routes tool calls to them.

    Use as `async with MCPServerManager(config, default_timeout_s=30) as manager:`.
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        default_timeout_s: float = 30.0,
        startup_timeout_s: float = 60.0,
    ) -> None:
        self.config = config
        self._upstreams = {
            name: _Upstream(
                name,
                server,
                server.timeout_s or default_timeout_s,
                server.timeout_s or startup_timeout_s,
            )
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
        files = [up.stderr for up in self._upstreams.values() if up.stderr is not None]
        for up in self._upstreams.values():
            up.client, up.stderr = None, None
        closing = asyncio.gather(*(_close(c) for c in clients), return_exceptions=True)
        try:
            await asyncio.shield(closing)
        finally:
            for file in files:
                file.close()

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
        # Text that cannot be encoded would fail while the request is written: send U+FFFD.
        args = make_encodable(dict(arguments or {}))
        try:
            result = await client.call_tool_mcp(tool, args, timeout=up.timeout_s)
        except TimeoutError:
            raise ToolCallFailed(server, tool, f"timed out after {up.timeout_s:g}s") from None
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED or not client.is_connected():
                self._mark_dead(up, client, exc)
                raise self._failure(up, tool, f"upstream failed: {exc.message}") from None
            raise self._failure(up, tool, exc.message) from None
        except Exception as exc:  # mapped here, once: see _TRANSPORT_ERRORS
            if isinstance(exc, _TRANSPORT_ERRORS) or not client.is_connected():
                self._mark_dead(up, client, exc)
                raise self._failure(up, tool, f"upstream failed: {_describe(exc)}") from None
            raise self._failure(
                up, tool, f"the call failed ({type(exc).__name__}: {_describe(exc)})"
            ) from None
        if result.is_error:
            raise self._failure(up, tool, error_text(result))
        return result

    def _failure(self, up: _Upstream, tool: str, message: str) -> ToolCallFailed:
        """A failed call, its message free of secrets and unencodable text."""
        return ToolCallFailed(up.name, tool, encodable_text(self.config.redact(message)))

    async def _connect(self, up: _Upstream) -> None:
        if up.config.transport == "stdio" and up.stderr is None:
            up.stderr = _stderr_file()
        elif up.stderr is not None:  # a restart: only the new process's lines matter
            up.stderr.seek(0)
            up.stderr.truncate()
        client: Client[Any] = Client(
            up.config.to_transport(stderr=up.stderr),
            timeout=up.timeout_s,
            init_timeout=up.startup_timeout_s,
            client_info=_CLIENT_INFO,
        )
        started = time.perf_counter()
        try:
            async with asyncio.timeout(up.startup_timeout_s):
                await client.__aenter__()  # type: ignore[no-untyped-call]
                tools = await client.list_tools()
        except Exception as exc:  # any start-up failure is reported as this server's status
            await _close(client)
            up.client, up.tools = None, []
            reason = _describe(exc)
            if isinstance(exc, TimeoutError):
                reason = (
                    f"no answer within {up.startup_timeout_s:g}s "
                    "(raise the entry's timeout_s or MCP_CODE_STARTUP_TIMEOUT_S)"
                )
            up.error = self.config.redact(f"failed to start: {reason}{self._context(up)}")
            logger.debug("upstream %s: %s", up.name, up.error)
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
            up.error = self.config.redact(f"connection lost: {_describe(exc)}{self._context(up)}")

    @staticmethod
    def _context(up: _Upstream) -> str:
        """`; command: ...; stderr: ...` or `; url: ...`: what a person needs to fix it."""
        server = up.config
        if server.transport != "stdio":
            return f"; url: {server.url}"
        command = shlex.join([server.command or "", *server.args])
        return f"; command: {command}" + _tail(up.stderr)


def _stderr_file() -> TextIO:
    """A temporary file for a stdio upstream's stderr; open for its life, closed in aclose."""
    return cast(TextIO, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))


def _tail(stderr: TextIO | None) -> str:
    """`; stderr: <last lines>` of what an upstream wrote, or nothing."""
    if stderr is None:
        return ""
    try:
        stderr.flush()
        size = stderr.seek(0, 2)
        stderr.seek(max(0, size - _STDERR_TAIL_BYTES))
        text = stderr.read()
        stderr.seek(0, 2)
    except (OSError, ValueError):
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"; stderr: {' | '.join(lines[-_STDERR_TAIL_LINES:])}" if lines else ""


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

"""MCPServerManager: one long-lived fastmcp `Client` per upstream server, and its healing.

All upstreams connect concurrently at start, each bounded by its start-up timeout
(the entry's `timeout_s`, else MCP_CODE_STARTUP_TIMEOUT_S); one that fails is reported
(`status: "error"`, naming its command or URL and the last lines it wrote on stderr) and
the rest keep working. fastmcp/MCP exceptions are mapped here, once, to `ToolCallFailed`.

Each upstream is a small state machine (contract §6, "Upstreams heal"):

    connecting ─→ ok ─→ lost ─→ reconnecting ─→ ok
         └──────→ error ←───────────┘  └──────→ error ─→ reconnecting

It moves only on what the transport and the protocol report:

- `ok → lost`: the transport failed (process gone, connection refused or closed), the
  client's session ended, or an HTTP upstream answered 404 for our session id (it
  restarted or expired the session). Nothing else: a timeout, an error reply or a
  malformed reply fails that one call, so a guest cannot make the gateway reset an
  upstream that other runs share (§7).
- `lost | error → reconnecting`: on the next call to it, or in the background (a
  supervisor task per upstream retries with backoff, so `list_servers` says `ok` again
  once the upstream answers, without waiting for a call). There is one attempt at a
  time, and calls share it: a burst of calls to a dead upstream costs one or two
  attempts, not one each.
- A call refused only because its HTTP session was gone is sent once more on the new
  session. A call that times out is cancelled upstream by the MCP SDK (it sends
  `notifications/cancelled`, or on a 2026-07-28 HTTP connection aborts the request's
  POST, which is that version's cancellation) and the connection stays in use.
- `notifications/tools/list_changed` refetches that upstream's tools and bumps
  `tools_version`, which the gateway's catalog follows.
- While `ok`, the supervisor pings every `health_interval_s` (as the MCP spec suggests;
  on 2026-07-28 connections, which have no ping, it lists the tools instead) so an HTTP
  upstream that went away shows up as `error` without waiting for a call; a check that
  times out or gets an error reply changes nothing (a busy upstream is not a dead one).

A stdio upstream's stderr goes to a temporary file, not the terminal: an upstream's
expected errors (often a long rich traceback) are its own business; their last lines
appear in our error messages when it fails to start or dies.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self, TextIO, cast

import anyio
import httpx2
from fastmcp import Client
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from . import __version__
from .config import GatewayConfig, ServerConfig
from .encodable import encodable_text, make_encodable
from .errors import ToolCallFailed
from .tool_results import error_text

__all__ = ["MCPServerManager", "ServerStatus", "UpstreamState"]

logger = logging.getLogger(__name__)

Status = Literal["ok", "error", "disabled"]
UpstreamState = Literal["connecting", "ok", "lost", "reconnecting", "error"]

# The state machine in the module docstring; `_move` refuses anything else.
_TRANSITIONS: dict[UpstreamState, frozenset[UpstreamState]] = {
    "connecting": frozenset({"ok", "error"}),
    "ok": frozenset({"lost"}),
    "lost": frozenset({"reconnecting"}),
    "reconnecting": frozenset({"ok", "error"}),
    "error": frozenset({"reconnecting"}),
}


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
# Background reconnect attempts wait this long after the n-th failure in a row (the last
# value repeats): quick while an upstream is merely restarting, every 5 s while it stays
# down (a refused connection or a failed spawn is cheap). A call never waits for it.
_RETRY_DELAYS_S = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
_PING_TIMEOUT_S = 10.0
# What a dead transport raises (beside an MCP "connection closed" error): the process or
# socket is gone. Anything else is a problem with one message, not with the connection.
_TRANSPORT_ERRORS = (
    OSError,
    EOFError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx2.TransportError,
)


@dataclass(slots=True, eq=False)
class _Link:
    """One connection attempt's client, and what its HTTP traffic revealed about it."""

    client: Client[Any] = field(init=False)  # set right after the client is built
    session_gone: bool = False  # an HTTP 404 answered a request that carried our session id


@dataclass(slots=True, eq=False)
class _Upstream:
    name: str
    config: ServerConfig
    timeout_s: float  # each call
    startup_timeout_s: float
    state: UpstreamState = "connecting"
    reason: str | None = None  # why it is not `ok`
    link: _Link | None = None
    stderr: TextIO | None = None
    tools: list[mcp_types.Tool] = field(default_factory=list)
    tools_known: bool = False  # a tools/list has answered once: its tools are in the catalog
    failures: int = 0  # failed attempts and losses since it last answered; sets the backoff
    attempting: asyncio.Task[None] | None = None  # the one connection attempt in flight
    attempt_started: float = 0.0  # its time.monotonic()
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # tells the supervisor: lost
    supervisor: asyncio.Task[None] | None = None
    refresh: asyncio.Task[None] | None = None
    refresh_link: _Link | None = None  # the link `refresh` lists the tools of
    refresh_wanted: bool = False
    refresh_announced: bool = False  # by the upstream: calls wait for the refresh (see below)

    def is_ok(self) -> bool:
        """Whether it is `ok` now (a method, so a check after an await is read afresh)."""
        return self.state == "ok"


class MCPServerManager:
    """Connects to every enabled upstream, routes tool calls to them and heals them.

    Use as `async with MCPServerManager(config, default_timeout_s=30) as manager:`.
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        default_timeout_s: float = 30.0,
        startup_timeout_s: float = 60.0,
        health_interval_s: float = 10.0,
    ) -> None:
        self.config = config
        self.health_interval_s = health_interval_s
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
        self._closing = False
        self._ssl_context: ssl.SSLContext | None = None  # made once: 0.1-0.3 s each time

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
        await asyncio.gather(*(self._attempt(up) for up in self._upstreams.values()))
        for up in self._upstreams.values():
            up.supervisor = asyncio.create_task(
                self._supervise(up), name=f"mcp-code-mode upstream {up.name}"
            )

    async def aclose(self) -> None:
        """Stop the supervisors and close every client (so every stdio upstream stops).

        Safe under cancellation: the shutdown runs to its end in its own task.
        """
        self._closing = True
        await asyncio.shield(asyncio.ensure_future(self._shutdown()))

    async def _shutdown(self) -> None:
        tasks = [
            task
            for up in self._upstreams.values()
            for task in (up.supervisor, up.refresh, up.attempting)
            if task is not None
        ]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        links = [up.link for up in self._upstreams.values() if up.link is not None]
        files = [up.stderr for up in self._upstreams.values() if up.stderr is not None]
        for up in self._upstreams.values():
            up.link, up.stderr, up.supervisor, up.refresh, up.attempting = (None,) * 5
            up.refresh_link = None
        try:
            await asyncio.gather(*(_close(link.client) for link in links), return_exceptions=True)
        finally:
            for file in files:
                file.close()

    # ------------------------------------------------------------------ what is true now

    def state(self, server: str) -> UpstreamState | None:
        """The state of an enabled upstream (see the module docstring); None when unknown."""
        up = self._upstreams.get(server)
        if up is None:
            return None
        self._observe(up)
        return up.state

    def tools(self) -> dict[str, list[mcp_types.Tool]]:
        """The filtered tool lists of the upstreams that have answered tools/list, in config order.

        An upstream that is down keeps its last list: a call to it is what reconnects it.
        """
        return {n: list(up.tools) for n, up in self._upstreams.items() if up.tools_known}

    def statuses(self) -> list[ServerStatus]:
        """One row per configured server, in config order, as things are now."""
        rows = []
        for name, server in self.config.servers.items():
            up = self._upstreams.get(name)
            if up is None:
                rows.append(ServerStatus(name, server.description, "disabled", 0, None))
                continue
            self._observe(up)
            if up.state == "ok":
                rows.append(ServerStatus(name, server.description, "ok", len(up.tools), None))
            else:
                reason = up.reason or f"upstream is {up.state}"
                if up.state == "reconnecting":
                    reason = f"reconnecting; {reason}"
                rows.append(ServerStatus(name, server.description, "error", 0, reason))
        return rows

    def unavailable_reason(self, server: str) -> str | None:
        """Why a configured server cannot take calls now; None when it can (or is unknown).

        An upstream that answered once and is now down can take calls: the next call
        reconnects it. One that never answered has no tools to call.
        """
        if server in self.config.servers and server not in self._upstreams:
            return f"server {server!r} is disabled in the config"
        up = self._upstreams.get(server)
        if up is not None and up.state != "ok" and not up.tools_known:
            return f"server {server!r} is unavailable: {up.reason}"
        return None

    # ------------------------------------------------------------------ calls

    async def call_tool(
        self, server: str, tool: str, arguments: Mapping[str, Any] | None = None
    ) -> mcp_types.CallToolResult:
        """Call one upstream tool and return its successful result.

        A lost upstream is reconnected first; a call its HTTP upstream refused only
        because the session was gone is sent once more on a new session.

        Raises:
            ToolCallFailed: the tool reported an error, timed out, sent a malformed
                reply, or its server is down.
        """
        up = self._upstreams.get(server)
        if up is None:
            raise ToolCallFailed(server, tool, f"server {server!r} is not configured or disabled")
        # Text that cannot be encoded would fail while the request is written: send U+FFFD.
        args = make_encodable(dict(arguments or {}))
        for attempt in range(2):
            link = await self._ready(up, tool)
            try:
                result = await link.client.call_tool_mcp(tool, args, timeout=up.timeout_s)
            except Exception as exc:  # mapped here, once
                if attempt == 0 and _refused_for_session(link, exc):
                    self._lose(up, link, "the upstream no longer knows our session (HTTP 404)")
                    logger.info("upstream %s: session gone; resending %s once", up.name, tool)
                    continue
                raise self._call_failure(up, link, tool, exc) from None
            break
        await self._settle_refresh(up)
        if result.is_error:
            raise self._failure(up, tool, error_text(result))
        up.failures = 0
        return result

    async def _ready(self, up: _Upstream, tool: str) -> _Link:
        """The upstream's live link, reconnecting first when it is down.

        Raises:
            ToolCallFailed: it could not be reached (the reason names the command or URL).
        """
        self._observe(up)
        if not up.is_ok():
            await self._heal(up)
        if up.is_ok() and up.link is not None:
            return up.link
        raise self._failure(up, tool, f"server is unavailable: {up.reason}")

    async def _heal(self, up: _Upstream) -> None:
        """Wait for a connection attempt that started no earlier than this call.

        An attempt in flight is joined; if it began before this call and failed (the
        upstream may have come back since), the next one is started or joined. So calls
        share attempts, and a caller that is cancelled (its run ended) leaves the attempt
        running for the others.
        """
        arrived = time.monotonic()
        while not self._closing:
            task = up.attempting
            if task is None or task.done():
                up.attempt_started = time.monotonic()
                task = up.attempting = asyncio.create_task(self._attempt(up))
            recent = up.attempt_started >= arrived
            await asyncio.shield(task)
            if up.is_ok() or recent:
                return

    def _call_failure(
        self, up: _Upstream, link: _Link, tool: str, exc: Exception
    ) -> ToolCallFailed:
        transport_failed = _transport_failed(link, exc)
        if transport_failed:
            self._lose(up, link, f"connection lost: {_describe(exc)}")
        if _timed_out(exc):
            message = f"timed out after {up.timeout_s:g}s; the call was cancelled upstream"
        elif transport_failed:
            message = f"upstream failed: connection lost: {_describe(exc)}{self._context(up)}"
        elif isinstance(exc, ValidationError):
            message = f"the upstream sent a malformed reply: {_summarise(exc)}"
        elif isinstance(exc, MCPError):
            message = exc.message
        else:
            message = f"the call failed ({type(exc).__name__}: {_describe(exc)})"
        return self._failure(up, tool, message)

    def _failure(self, up: _Upstream, tool: str, message: str) -> ToolCallFailed:
        """A failed call, its message free of secrets and unencodable text."""
        return ToolCallFailed(up.name, tool, encodable_text(self.config.redact(message)))

    # ------------------------------------------------------------------ the state machine

    def _move(self, up: _Upstream, state: UpstreamState, reason: str | None = None) -> None:
        if state not in _TRANSITIONS[up.state]:
            raise RuntimeError(f"upstream {up.name}: no transition {up.state} -> {state}")
        logger.debug("upstream %s: %s -> %s (%s)", up.name, up.state, state, reason)
        up.state = state
        if reason is not None or state == "ok":
            up.reason = None if reason is None else self.config.redact(reason)

    def _observe(self, up: _Upstream) -> None:
        """Notice a link that died while nobody was calling (its client's session ended)."""
        link = up.link
        if up.state == "ok" and link is not None and not self._closing:
            if link.session_gone:
                self._lose(up, link, "the upstream no longer knows our session (HTTP 404)")
            elif _session_ended(link.client):
                self._lose(up, link, "connection lost: the connection closed")

    def _lose(self, up: _Upstream, link: _Link, reason: str) -> None:
        """`ok → lost` for this link (a stale link's news is old news)."""
        if up.link is not link or up.state != "ok" or self._closing:
            return
        up.failures += 1
        self._move(up, "lost", reason + self._context(up))
        logger.warning("upstream %s: %s", up.name, up.reason)
        up.wake.set()

    async def _attempt(self, up: _Upstream) -> None:
        """One connection attempt: `connecting | lost | error → … → ok | error`.

        Runs as `up.attempting` (see `_heal`), or in `start` before anything else can.
        """
        first = up.state == "connecting"
        if up.state == "ok":
            return
        if not first:
            self._move(up, "reconnecting")
        old, up.link = up.link, None
        if old is not None:  # a stdio upstream's old process must be gone first
            await asyncio.shield(_close(old.client))
        try:
            # A reconnect does not wait for the tool list: the call that is waiting goes
            # first and the list follows in the background (a freshly started server's first
            # tools/list can take a while). A first connect needs it for the catalog.
            link, tools = await self._connect(up, list_tools=not up.tools_known)
        except BaseException as exc:  # any failure is this server's status, never raised
            up.failures += 1
            if not isinstance(exc, Exception):  # cancelled: only aclose does that
                self._move(up, "error", f"the connection attempt was cancelled{self._context(up)}")
                raise
            reason = _describe(exc)
            if isinstance(exc, TimeoutError):
                reason = (
                    f"no answer within {up.startup_timeout_s:g}s "
                    "(raise the entry's timeout_s or MCP_CODE_STARTUP_TIMEOUT_S)"
                )
            verb = "failed to start" if first or not up.tools_known else "cannot reconnect"
            self._move(up, "error", f"{verb}: {reason}{self._context(up)}")
            logger.debug("upstream %s: %s", up.name, up.reason)
            return
        if self._closing:  # aclose ran meanwhile: this client is nobody's to close
            await asyncio.shield(_close(link.client))
            return
        up.link = link
        self._move(up, "ok")
        if tools is not None:
            self._set_tools(up, tools)
        else:
            self._want_refresh(up, link, announced=False)
        if not first:
            logger.warning("upstream %s: reconnected", up.name)

    async def _connect(
        self, up: _Upstream, *, list_tools: bool
    ) -> tuple[_Link, list[mcp_types.Tool] | None]:
        """A new client for `up`, connected (and its tools listed); closed on failure."""
        if up.config.transport == "stdio" and up.stderr is None:
            up.stderr = _stderr_file()
        elif up.stderr is not None:  # a restart: only the new process's lines matter
            up.stderr.seek(0)
            up.stderr.truncate()
        # The hooks close over `link`, so a stale connection's news never touches its successor.
        link = _Link()
        transport = up.config.to_transport(stderr=up.stderr)
        if isinstance(transport, StreamableHttpTransport):  # before it connects
            transport.httpx_client_factory = self._http_client_factory(up, link)
        client: Client[Any] = Client(
            transport,
            timeout=up.timeout_s,
            init_timeout=up.startup_timeout_s,
            client_info=_CLIENT_INFO,
            message_handler=_Notifications(
                lambda: self._want_refresh(up, link, announced=True), up.name
            ),
        )
        link.client = client
        started = time.perf_counter()
        try:
            async with asyncio.timeout(up.startup_timeout_s):
                await client.__aenter__()  # type: ignore[no-untyped-call]
                tools = await client.list_tools() if list_tools else None
        except BaseException:
            await asyncio.shield(_close(client))
            raise
        elapsed_ms = (time.perf_counter() - started) * 1000
        listed = "" if tools is None else f"{len(tools)} tools "
        logger.info("upstream %s: connected, %sin %.0f ms", up.name, listed, elapsed_ms)
        return link, tools

    def _set_tools(self, up: _Upstream, tools: list[mcp_types.Tool]) -> None:
        exposed = [t for t in tools if up.config.exposes(t.name)]
        if not up.tools_known or _dump(exposed) != _dump(up.tools):
            self.tools_version += 1
        up.tools, up.tools_known = exposed, True

    # ------------------------------------------------------------------ background work

    async def _supervise(self, up: _Upstream) -> None:
        """Heal `up` with backoff while it is down; ping it while it is up."""
        while not self._closing:
            if up.state == "ok":
                woken = await _wait(up.wake, self.health_interval_s)
                if not woken and up.state == "ok":
                    await self._check(up)
                continue
            delay = _RETRY_DELAYS_S[min(max(up.failures - 1, 0), len(_RETRY_DELAYS_S) - 1)]
            await asyncio.sleep(delay)
            if not up.is_ok() and not self._closing:  # a call may have healed it meanwhile
                await self._heal(up)

    async def _check(self, up: _Upstream) -> None:
        """One health check of an `ok` upstream: its session, then a request.

        The request is `ping`, or on a 2026-07-28 connection `tools/list`: that version
        has no ping, and a sessionless server can only say its tools changed while it
        answers a call, so asking is how a change (or a restart) shows in the catalog.
        """
        self._observe(up)
        link = up.link
        if up.state != "ok" or link is None:
            return
        tools = None
        try:
            async with asyncio.timeout(min(up.timeout_s, _PING_TIMEOUT_S)):
                if link.client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    tools = await link.client.list_tools()
                else:
                    await link.client.ping()
        except Exception as exc:
            if _transport_failed(link, exc):
                self._lose(up, link, f"connection lost: {_describe(exc)}")
            elif _timed_out(exc):
                logger.debug("upstream %s: health check timed out (busy?)", up.name)
            return  # an error reply is an answer too
        up.failures = 0
        if tools is not None and up.link is link:
            self._set_tools(up, tools)

    def _want_refresh(self, up: _Upstream, link: _Link, *, announced: bool) -> None:
        """Refetch the tool list (once more if another change is announced meanwhile).

        `announced`: the upstream sent tools/list_changed, most likely while answering a
        call, so that call waits for the new list before it returns (`_settle_refresh`):
        a tool the call added is callable right after it.
        """
        if up.link is not link or self._closing:
            return
        up.refresh_announced = up.refresh_announced or announced
        up.refresh_wanted = True
        if up.refresh is None or up.refresh.done() or up.refresh_link is not link:
            if up.refresh is not None:
                up.refresh.cancel()  # a refresh of a replaced link is moot
            up.refresh, up.refresh_link = asyncio.create_task(self._refresh(up, link)), link

    async def _refresh(self, up: _Upstream, link: _Link) -> None:
        while up.refresh_wanted and up.link is link:
            up.refresh_wanted = False
            try:
                tools = await link.client.list_tools()
            except Exception as exc:  # the next call or health check will tell more
                logger.warning("upstream %s: refreshing its tools failed: %s", up.name, exc)
                break
            if up.link is link:
                self._set_tools(up, tools)
                logger.info("upstream %s: tools listed (%d tools)", up.name, len(up.tools))
        up.refresh_announced = False

    async def _settle_refresh(self, up: _Upstream) -> None:
        """Let a refresh a call's reply announced finish, so its tools are callable next."""
        await asyncio.sleep(0)  # the notification handler runs before the reply's waiter
        task = up.refresh
        if task is not None and not task.done() and up.refresh_announced:
            await asyncio.wait({task}, timeout=up.timeout_s)

    def _http_client_factory(
        self, up: _Upstream, link: _Link
    ) -> Callable[..., httpx2.AsyncClient]:  # an mcp `McpHttpClientFactory`
        """httpx clients for a streamable HTTP upstream: the SDK's default, with three changes.

        - No read timeout. The SDK sets the HTTP read timeout to the MCP request timeout,
          so a slow call's HTTP read can fail first, which kills the whole session (the
          next call then fails at once; mcp 2.x under fastmcp 4.1.2). Every MCP request
          has its own timeout, whose expiry cancels the call upstream and keeps the
          session; an idle server-to-client stream is not an error.
        - One TLS context for every client: httpx builds one per client otherwise, which
          costs 0.1-0.3 s of every reconnect.
        - A response hook that records an HTTP 404 for a request that carried our session
          id: the upstream no longer knows the session. The SDK reports it only as an
          error reply ("Session terminated", or the upstream's own JSON-RPC error body),
          and fastmcp 4.1.2 does not start a new session, although the spec says a
          client must.
        """

        async def on_response(response: httpx2.Response) -> None:
            if response.status_code == 404 and response.request.headers.get("mcp-session-id"):
                link.session_gone = True
                self._lose(up, link, "the upstream no longer knows our session (HTTP 404)")

        def factory(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
            follow_redirects: bool = True,  # fastmcp passes it; the SDK follows redirects itself
        ) -> httpx2.AsyncClient:
            del timeout, follow_redirects  # as mcp's `create_mcp_http_client`, but see above
            if self._ssl_context is None:
                self._ssl_context = httpx2.create_ssl_context()
            return httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(30.0, read=None),
                auth=auth,
                verify=self._ssl_context,
                event_hooks={"response": [on_response]},
            )

        return factory

    @staticmethod
    def _context(up: _Upstream) -> str:
        """`; command: ...; stderr: ...` or `; url: ...`: what a person needs to fix it."""
        server = up.config
        if server.transport != "stdio":
            return f"; url: {server.url}"
        command = shlex.join([server.command or "", *server.args])
        return f"; command: {command}" + _tail(up.stderr)


class _Notifications(MessageHandler):
    """What an upstream tells us unasked: `tools/list_changed` asks for a refresh."""

    def __init__(self, on_tools_changed: Callable[[], None], name: str) -> None:
        self._on_tools_changed = on_tools_changed
        self._name = name

    async def on_tool_list_changed(self, message: mcp_types.ToolListChangedNotification) -> None:
        self._on_tools_changed()

    async def on_exception(self, message: Exception) -> None:
        # e.g. a line on stdout that is not JSON-RPC; the call it spoiled times out alone.
        logger.debug("upstream %s sent something unreadable: %s", self._name, message)


def _session_ended(client: Client[Any]) -> bool:
    """Whether the client's connection is gone, though nobody has called it since."""
    if not client.is_connected():
        return True
    # When a stdio upstream's process exits, the fastmcp 4.1.2 client still says it is
    # connected (its session only learns on the next request); fastmcp itself asks the
    # transport's `_is_session_dead` (the SDK dispatcher has closed) before reusing one.
    transport = client.transport
    return isinstance(transport, StdioTransport) and transport._is_session_dead()


def _transport_failed(link: _Link, exc: Exception) -> bool:
    """Whether a failed request means the connection itself is gone."""
    return (
        isinstance(exc, _TRANSPORT_ERRORS)
        or (isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED)
        or _session_ended(link.client)
    )


def _refused_for_session(link: _Link, exc: Exception) -> bool:
    """Whether a failed call was refused only because its HTTP session was gone (so unsent)."""
    return link.session_gone and isinstance(exc, MCPError) and not _timed_out(exc)


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or (
        isinstance(exc, MCPError) and exc.code == mcp_types.REQUEST_TIMEOUT
    )


async def _wait(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait for `event` (and clear it) for at most `timeout_s`; whether it was set."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    event.clear()
    return True


def _dump(tools: list[mcp_types.Tool]) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


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


def _summarise(exc: ValidationError) -> str:
    """The first problem pydantic found, without its URLs and input dumps."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return str(exc).splitlines()[0]
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "result"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    if isinstance(exc, MCPError):
        return exc.message
    return str(exc).strip() or type(exc).__name__

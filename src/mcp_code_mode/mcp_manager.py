"""MCPServerManager: one long-lived fastmcp `Client` per upstream server, and its healing.

Upstreams connect concurrently, each bounded by its start-up timeout (the entry's
`timeout_s`, else MCP_CODE_STARTUP_TIMEOUT_S): all before `start()` returns, in the
background, or each on first use (`start(connect=...)`). One that fails is reported
(`status: "error"`, naming its command or URL and the last lines it wrote on stderr) and
the rest keep working. Tool lists known from an earlier run (`known_tools`, the gateway's
disk cache) serve the catalog until the upstream lists its own. fastmcp/MCP exceptions
are mapped here, once, to `ToolCallFailed`.

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
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TextIO, cast

import mcp_types

from .config import GatewayConfig, ServerConfig
from .encodable import encodable_text, make_encodable
from .errors import ToolCallFailed
from .tool_results import error_text

if TYPE_CHECKING:
    from .upstream_link import Link

__all__ = ["MCPServerManager", "ServerStatus", "UpstreamState"]

logger = logging.getLogger(__name__)

Status = Literal["ok", "error", "disabled"]
Connect = Literal["wait", "background", "on_demand"]
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


_STDERR_TAIL_BYTES = 2000
_STDERR_TAIL_LINES = 5
# Background reconnect attempts wait this long after the n-th failure in a row (the last
# value repeats): quick while an upstream is merely restarting, every 5 s while it stays
# down (a refused connection or a failed spawn is cheap). A call never waits for it.
_RETRY_DELAYS_S = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
_PING_TIMEOUT_S = 10.0


@dataclass(slots=True, eq=False)
class _Upstream:
    name: str
    config: ServerConfig
    timeout_s: float  # each call
    startup_timeout_s: float
    state: UpstreamState = "connecting"
    reason: str | None = None  # why it is not `ok`
    link: Link | None = None
    stderr: TextIO | None = None
    tools: list[mcp_types.Tool] = field(default_factory=list)
    tools_known: bool = False  # its tools are in the catalog (listed, or from `known_tools`)
    tools_listed: bool = False  # a tools/list of this process has answered (not only the cache)
    failures: int = 0  # failed attempts and losses since it last answered; sets the backoff
    attempting: asyncio.Task[None] | None = None  # the one connection attempt in flight
    attempt_started: float = 0.0  # its time.monotonic()
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # tells the supervisor: lost
    supervisor: asyncio.Task[None] | None = None
    refresh: asyncio.Task[None] | None = None
    refresh_link: Link | None = None  # the link `refresh` lists the tools of
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
        known_tools: Mapping[str, list[mcp_types.Tool]] | None = None,
        on_tools_listed: Callable[[str, list[mcp_types.Tool]], None] | None = None,
    ) -> None:
        """
        Args:
            known_tools: tool lists from an earlier run, by server (unfiltered); they
                serve the catalog until each upstream lists its own.
            on_tools_listed: called with an upstream's unfiltered tools whenever it lists
                tools that differ from what was known (the gateway writes its cache).
        """
        self.config = config
        self.health_interval_s = health_interval_s
        self._on_tools_listed = on_tools_listed
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
        self._known_raw: dict[str, list[mcp_types.Tool]] = {}
        for name, tools in (known_tools or {}).items():
            up = self._upstreams.get(name)
            if up is not None:
                self._known_raw[name] = list(tools)
                up.tools = [t for t in tools if up.config.exposes(t.name)]
                up.tools_known = True
        self._closing = False

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

        `connect`: `"wait"` returns once every upstream has connected or failed;
        `"background"` returns at once while they connect (see `settle`); `"on_demand"`
        connects none: each connects when a call or `settle` first needs it (a
        short-lived gateway, such as `mcp-code-mode exec`, starts only what its code uses).
        A later `start` of an `"on_demand"` manager starts the upstreams nothing has
        started yet and supervises them all.
        """
        if connect == "on_demand":
            return
        for up in self._upstreams.values():
            if up.attempting is None:  # else a call or `settle` started it already
                self._begin_attempt(up)
        if connect == "wait":
            await self.settle()
        for up in self._upstreams.values():
            if up.supervisor is None:
                up.supervisor = asyncio.create_task(
                    self._supervise(up), name=f"mcp-code-mode upstream {up.name}"
                )

    async def settle(self, servers: Iterable[str] | None = None) -> None:
        """Wait until each named upstream (default: every one) has tried to connect once.

        An upstream not started yet starts now. Unknown names are ignored.
        """
        names = self._upstreams if servers is None else servers
        pending = []
        for name in dict.fromkeys(names):
            up = self._upstreams.get(name)
            if up is not None and up.state == "connecting":
                pending.append(asyncio.shield(self._begin_attempt(up)))
        if pending:
            await asyncio.gather(*pending)

    def _begin_attempt(self, up: _Upstream) -> asyncio.Task[None]:
        """The connection attempt in flight for `up`, started now if there is none."""
        task = up.attempting
        if task is None or task.done():
            up.attempt_started = time.monotonic()
            task = up.attempting = asyncio.create_task(self._attempt(up))
        return task

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
            if links:  # else fastmcp was never imported: not now either
                from . import upstream_link

                closing = (upstream_link.close(link.client) for link in links)
                await asyncio.gather(*closing, return_exceptions=True)
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
                if up.state == "connecting" and up.attempting is None:
                    reason = "not started yet: it starts when code first uses it"
                elif up.state == "connecting":
                    reason = "still starting: it has not answered yet"
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
            from . import upstream_link  # imported by the connection `_ready` made

            try:
                result = await link.client.call_tool_mcp(tool, args, timeout=up.timeout_s)
            except Exception as exc:  # mapped here, once
                if attempt == 0 and upstream_link.refused_for_session(link, exc):
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

    async def _ready(self, up: _Upstream, tool: str) -> Link:
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
            task = self._begin_attempt(up)
            recent = up.attempt_started >= arrived
            await asyncio.shield(task)
            if up.is_ok() or recent:
                return

    def _call_failure(self, up: _Upstream, link: Link, tool: str, exc: Exception) -> ToolCallFailed:
        from . import upstream_link as ul

        transport_failed = ul.transport_failed(link, exc)
        if transport_failed:
            self._lose(up, link, f"connection lost: {ul.describe(exc)}")
        if transport_failed and not ul.timed_out(exc):
            message = f"upstream failed: connection lost: {ul.describe(exc)}{self._context(up)}"
        else:
            message = ul.failure_message(exc, timeout_s=up.timeout_s)
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
            from . import upstream_link  # a link exists: it is imported

            if link.session_gone:
                self._lose(up, link, "the upstream no longer knows our session (HTTP 404)")
            elif upstream_link.session_ended(link.client):
                self._lose(up, link, "connection lost: the connection closed")

    def _lose(self, up: _Upstream, link: Link, reason: str) -> None:
        """`ok → lost` for this link (a stale link's news is old news)."""
        if up.link is not link or up.state != "ok" or self._closing:
            return
        up.failures += 1
        self._move(up, "lost", reason + self._context(up))
        logger.warning("upstream %s: %s", up.name, up.reason)
        up.wake.set()

    async def _attempt(self, up: _Upstream) -> None:
        """One connection attempt: `connecting | lost | error → … → ok | error`.

        Runs as `up.attempting` (see `_begin_attempt`).
        """
        from . import upstream_link as ul  # the first attempt imports fastmcp's client

        first = up.state == "connecting"
        if up.state == "ok":
            return
        if not first:
            self._move(up, "reconnecting")
        old, up.link = up.link, None
        if old is not None:  # a stdio upstream's old process must be gone first
            await asyncio.shield(ul.close(old.client))
        try:
            # A reconnect does not wait for the tool list: the call that is waiting goes
            # first and the list follows in the background (a freshly started server's first
            # tools/list can take a while). A first connect lists them: the catalog may hold
            # only what the cache remembered.
            link, tools = await self._connect(up, list_tools=not up.tools_listed)
        except BaseException as exc:  # any failure is this server's status, never raised
            up.failures += 1
            if not isinstance(exc, Exception):  # cancelled: only aclose does that
                self._move(up, "error", f"the connection attempt was cancelled{self._context(up)}")
                raise
            reason = ul.describe(exc)
            if isinstance(exc, TimeoutError):
                reason = (
                    f"no answer within {up.startup_timeout_s:g}s "
                    "(raise the entry's timeout_s or MCP_CODE_STARTUP_TIMEOUT_S)"
                )
            verb = "failed to start" if first or not up.tools_listed else "cannot reconnect"
            self._move(up, "error", f"{verb}: {reason}{self._context(up)}")
            logger.debug("upstream %s: %s", up.name, up.reason)
            return
        if self._closing:  # aclose ran meanwhile: this client is nobody's to close
            await asyncio.shield(ul.close(link.client))
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
    ) -> tuple[Link, list[mcp_types.Tool] | None]:
        """A new client for `up`, connected (and its tools listed); closed on failure."""
        from . import upstream_link as ul

        if up.config.transport == "stdio" and up.stderr is None:
            up.stderr = _stderr_file()
        elif up.stderr is not None:  # a restart: only the new process's lines matter
            up.stderr.seek(0)
            up.stderr.truncate()
        # The hooks close over `link`, so a stale connection's news never touches its successor.
        link = ul.Link()
        client = ul.new_client(
            up.config.to_transport(stderr=up.stderr),
            link,
            name=up.name,
            timeout_s=up.timeout_s,
            startup_timeout_s=up.startup_timeout_s,
            on_tools_changed=lambda: self._want_refresh(up, link, announced=True),
            on_session_gone=lambda: self._lose(
                up, link, "the upstream no longer knows our session (HTTP 404)"
            ),
        )
        started = time.perf_counter()
        try:
            async with asyncio.timeout(up.startup_timeout_s):
                await client.__aenter__()  # type: ignore[no-untyped-call]
                tools = await client.list_tools() if list_tools else None
        except BaseException:
            await asyncio.shield(ul.close(client))
            raise
        elapsed_ms = (time.perf_counter() - started) * 1000
        listed = "" if tools is None else f"{len(tools)} tools "
        logger.info("upstream %s: connected, %sin %.0f ms", up.name, listed, elapsed_ms)
        return link, tools

    def _set_tools(self, up: _Upstream, tools: list[mcp_types.Tool]) -> None:
        exposed = [t for t in tools if up.config.exposes(t.name)]
        if not up.tools_known or not _same(exposed, up.tools):
            self.tools_version += 1
        up.tools, up.tools_known, up.tools_listed = exposed, True, True
        known = self._known_raw.get(up.name)
        if known is None or not _same(known, tools):
            self._known_raw[up.name] = list(tools)
            if self._on_tools_listed is not None:
                self._on_tools_listed(up.name, list(tools))

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
        from . import upstream_link as ul  # a link exists: it is imported

        self._observe(up)
        link = up.link
        if up.state != "ok" or link is None:
            return
        tools = None
        try:
            async with asyncio.timeout(min(up.timeout_s, _PING_TIMEOUT_S)):
                if ul.is_modern(link.client):
                    tools = await link.client.list_tools()
                else:
                    await link.client.ping()
        except Exception as exc:
            if ul.transport_failed(link, exc):
                self._lose(up, link, f"connection lost: {ul.describe(exc)}")
            elif ul.timed_out(exc):
                logger.debug("upstream %s: health check timed out (busy?)", up.name)
            return  # an error reply is an answer too
        up.failures = 0
        if tools is not None and up.link is link:
            self._set_tools(up, tools)

    def _want_refresh(self, up: _Upstream, link: Link, *, announced: bool) -> None:
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

    async def _refresh(self, up: _Upstream, link: Link) -> None:
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

    @staticmethod
    def _context(up: _Upstream) -> str:
        """`; command: ...; stderr: ...` or `; url: ...`: what a person needs to fix it."""
        server = up.config
        if server.transport != "stdio":
            return f"; url: {server.url}"
        command = shlex.join([server.command or "", *server.args])
        return f"; command: {command}" + _tail(up.stderr)


async def _wait(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait for `event` (and clear it) for at most `timeout_s`; whether it was set."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    event.clear()
    return True


def _same(a: list[mcp_types.Tool], b: list[mcp_types.Tool]) -> bool:
    """Whether two tool lists are equal as JSON; lists that cannot be dumped (nested past
    pydantic's limit) are never the same, so they count as a change."""
    try:
        return _dump(a) == _dump(b)
    except (ValueError, RecursionError):
        return False


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

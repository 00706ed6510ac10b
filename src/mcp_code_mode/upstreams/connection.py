"""UpstreamConnection: one upstream server's client, state machine, supervision and tools.

It moves between the `states` only on what the transport and the protocol report
(contract §6, §7):

- `ok → lost`: the transport failed (process gone, connection refused or closed, end of
  stream; one failed HTTP request is asked again) or an HTTP upstream no longer knows our
  session. A timeout, an error reply or a malformed reply fails that one request only
  (`errors.classify`): a slow upstream is never restarted, nor reset by a guest.
- `lost | error → reconnecting`: on the next call or from the supervisor (backoff with
  jitter), one attempt at a time; a call that times out ends its streams (`call_streams`).
- Start-up converges: attempts pass a `StartGate` (bounded concurrency); after
  `startup_timeout_s` without an answer the upstream is reported `starting`, its gate slot
  goes to the next one, and it keeps going until `startup_ceiling_s`. A process that exits
  ends its attempt at once (its pipe closes), so only a live one is waited for.
- Health: `health` (traffic is the sign of life); `tool_list` refreshes; `fair_share`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types

from ..encodable import encodable_text
from ..errors import ToolCallFailed
from ..server_config import ServerConfig
from ..tool_results import error_text
from .fair_share import FairShare
from .gate import StartGate
from .health import ConnectionTiming, answers, check_due, probe, retry_delay_s, wait_for
from .opening import open_link
from .server_log import UpstreamLog
from .states import UpstreamState, check_move, slow_reason, state_reason
from .stderr_log import StderrLog, log_path
from .tool_list import ToolList

if TYPE_CHECKING:
    from .client import Link
    from .errors import Failure

__all__ = ["Admit", "ConnectionTiming", "UpstreamConnection"]

logger = logging.getLogger(__name__)

Admit = Callable[[mcp_types.Tool | None], Awaitable[None]]
"""Decides, from the tool as the live connection lists it (None: not listed), whether a call
may be sent; raises (e.g. ToolCallFailed) to refuse it. It may wait (for a person)."""
_ADMIT_ROUNDS = 3  # decisions one call makes while its upstream's tools change under it


class UpstreamConnection:
    """One upstream: connects, heals, answers calls and keeps its tool list current."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        timeout_s: float,
        startup_timeout_s: float,
        max_result_bytes: int,
        max_calls: int,
        gate: StartGate,
        timing: ConnectionTiming,
        tools: ToolList,
        redact: Callable[[str], str],
        log_dir: Path | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.timeout_s = timeout_s  # each call
        self.startup_timeout_s = startup_timeout_s
        self.max_result_bytes = max_result_bytes  # of one reply (see `client.bounded`)
        self.tools = tools
        self.share = FairShare(max_calls)  # calls in flight, in turn between runs
        self.state: UpstreamState = "connecting"
        self.reason: str | None = None  # why it is not `ok`
        self._gate = gate
        self._redact = redact
        self._timing = timing
        log = log_path(log_dir, name) if log_dir is not None else None
        self._stderr = StderrLog(log, redact) if config.has_stderr else None
        self._link: Link | None = None
        self._failures = 0  # failed attempts and losses since it last answered
        self._attempt: asyncio.Task[None] | None = None
        self._attempt_started = 0.0
        self.started = False  # an attempt was ever made
        self._slow = False  # the attempt in flight is past startup_timeout_s
        self._last_answer = 0.0  # monotonic time of the last successful request
        self._wake = asyncio.Event()  # tells the supervisor: lost, or check now
        self._check_now = False  # the process's stderr ended: is it gone?
        self._supervisor: asyncio.Task[None] | None = None
        self._closing = False

    def begin(self) -> asyncio.Task[None]:
        """The connection attempt in flight, started now if there is none."""
        task = self._attempt
        if task is None or task.done():
            self._attempt_started = time.monotonic()
            self.started, self._slow = True, False
            task = self._attempt = asyncio.create_task(self._connect_once())
        return task

    def supervise(self) -> None:
        """Start the background loop that heals and checks this upstream (once)."""
        if self._supervisor is None and not self._closing:
            self._supervisor = asyncio.create_task(
                self._supervise(), name=f"mcp-code-mode upstream {self.name}"
            )

    async def settle(self) -> None:
        """Wait until the first attempt has answered, failed, or gone past its start-up
        deadline (it keeps going then, reported `starting`)."""
        task = self.begin() if self.state == "connecting" else self._attempt
        if task is None or task.done():
            return
        remaining = self.startup_timeout_s - (time.monotonic() - self._attempt_started)
        await asyncio.wait({asyncio.shield(task)}, timeout=max(0.0, remaining))

    async def aclose(self, *, exit_grace_s: float | None = None) -> None:
        self._closing = True
        tasks = [t for t in (self._supervisor, self._attempt, self.tools.refreshing) if t]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        link = self._link
        self._set_link(None)
        try:
            if link is not None:
                from . import client

                await client.close(link.client, exit_grace_s=exit_grace_s)
        finally:
            if self._stderr is not None:
                self._stderr.close()

    # ------------------------------------------------------------------ what is true now

    def observe(self) -> None:
        """Notice a connection that ended while nobody was calling."""
        link = self._link
        if self.state == "ok" and link is not None and not self._closing:
            from . import client

            if link.session_gone:
                self._lose(link, "the upstream no longer knows our session")
            elif client.session_ended(link.client):
                self._lose(link, "connection lost: the connection closed")

    def status_reason(self) -> str:
        """Why it is not `ok`, for `list_servers`."""
        return state_reason(self.state, self.reason, started=self.started, slow=self._slow)

    # ------------------------------------------------------------------ calls

    async def call_tool(
        self, tool: str, args: dict[str, Any], *, admit: Admit | None = None
    ) -> mcp_types.CallToolResult:
        """Call `tool` and return its successful result; see `MCPServerManager.call_tool`."""
        from . import errors

        for attempt in (0, 1, 2):
            link = await self._ready(tool) if admit is None else await self._admitted(tool, admit)
            # held until a failure is judged: a call waiting for it sees the loss (attack 134)
            async with self.share.turn():
                if self._link is not link or not self.is_ok():
                    continue  # lost while it waited: not sent; the next attempt reconnects
                try:
                    result = await link.client.call_tool_mcp(tool, args, timeout=self.timeout_s)
                except Exception as exc:  # foreign errors: mapped by `classify`, once
                    failure = errors.classify(exc, session_gone=link.session_gone)
                    if failure.kind is errors.FailureKind.SESSION_GONE and attempt == 0:
                        self._lose(link, failure.message)
                        logger.info("upstream %s: session gone; resending %s once", self.name, tool)
                        continue
                    raise await self._call_failure(link, tool, failure) from None
            break
        else:
            raise self._failure(tool, "its connection kept failing while the call waited; not sent")
        self._answered()
        await self.tools.settle_refresh(self.timeout_s)
        if result.is_error:
            raise self._failure(tool, error_text(result))
        return result

    async def _call_failure(self, link: Link, tool: str, failure: Failure) -> ToolCallFailed:
        """A failed call's error (a timed-out call's streams ended, a doubtful loss probed)."""
        from . import client, errors

        if failure.unconfirmed and await answers(link, timeout_s=self._timing.health_timeout_s):
            failure = errors.Failure(errors.FailureKind.ERROR_REPLY, failure.message)
        if failure.connection_lost:
            await self._stderr_drained()
        if failure.kind is errors.FailureKind.TIMEOUT:
            await link.streams.end_overdue(self.timeout_s)
            message = f"timed out after {self.timeout_s:g}s; the call was cancelled upstream"
            return self._failure(tool, message)
        if failure.connection_lost or client.session_ended(link.client):
            self._lose(link, failure.message)
            return self._failure(tool, f"upstream failed: {failure.message}{self._context()}")
        return self._failure(tool, failure.message)

    async def _ready(self, tool: str) -> Link:
        self.observe()
        if self.state != "ok":
            await self._heal()
        if self.state == "ok" and self._link is not None:
            return self._link
        raise self._failure(tool, f"server is unavailable: {self.status_reason()}")

    async def _admitted(self, tool: str, admit: Admit) -> Link:
        """The live link, once `admit` let `tool` through as that link's own listing has it
        (after a reconnect or a tools/list_changed, the new listing decides)."""
        for _ in range(_ADMIT_ROUNDS):
            link = await self._ready(tool)
            if not await self.tools.listed_over(link, self.timeout_s):
                if self._link is not link:
                    continue  # reconnected meanwhile: decide on the new link's listing
                raise self._failure(tool, "its tool list could not be read; the call was not sent")
            await admit(self.tools.find(tool))
            if self._link is link and self.tools.current(link):  # nothing changed meanwhile
                return link
        raise self._failure(tool, "its tools kept changing; the call was not sent")

    async def _heal(self) -> None:
        """Wait for an attempt that started no earlier than this call (calls share them;
        a cancelled caller leaves the attempt running for the others)."""
        arrived = time.monotonic()
        while not self._closing:
            task = self.begin()
            recent = self._attempt_started >= arrived
            await asyncio.shield(task)
            if self.is_ok() or recent:
                return

    def _failure(self, tool: str, message: str) -> ToolCallFailed:
        """A failed call, its message free of secrets and unencodable text."""
        return ToolCallFailed(self.name, tool, encodable_text(self._redact(message)))

    def is_ok(self) -> bool:
        """Whether it is `ok` now (a method, so a check after an await is read afresh)."""
        return self.state == "ok"

    def _set_link(self, link: Link | None) -> None:
        self._link = link
        self.tools.attach(link)

    def _answered(self) -> None:
        self._last_answer = time.monotonic()
        self._failures = 0

    # ------------------------------------------------------------------ the state machine

    def _move(self, state: UpstreamState, reason: str | None = None) -> None:
        check_move(self.name, self.state, state)
        logger.debug("upstream %s: %s -> %s (%s)", self.name, self.state, state, reason)
        self.state = state
        if reason is not None or state == "ok":
            self.reason = None if reason is None else self._redact(reason)

    def _lose(self, link: Link, reason: str) -> None:
        """`ok → lost` for this link (a stale link's news is old news)."""
        if self._link is not link or self.state != "ok" or self._closing:
            return
        self._failures += 1
        self._move("lost", reason + self._context())
        logger.warning("upstream %s: %s", self.name, self.reason)
        self._wake.set()

    async def _connect_once(self) -> None:
        """One attempt, through the start gate: `connecting | lost | error → ok | error`."""
        from . import client, errors

        first = self.state == "connecting"
        if self.state == "ok":
            return
        if not first:
            self._move("reconnecting")
        old = self._link
        self._set_link(None)
        if old is not None:  # a stdio upstream's old process must be gone first
            await asyncio.shield(client.close(old.client))
        ceiling_s = self.startup_timeout_s * self._timing.startup_ceiling_factor
        try:
            async with asyncio.timeout(ceiling_s):
                link, listed = await self._gate.run(
                    self._open(list_tools=not self.tools.listed),
                    hold_s=self.startup_timeout_s,
                    on_slow=self._on_slow,
                )
        except Exception as exc:  # any failure is this server's status, never raised
            self._failures += 1
            await self._stderr_drained()
            reason = errors.describe(exc)
            if isinstance(exc, TimeoutError):
                reason = f"no answer within {ceiling_s:g}s (raise the entry's timeout_s)"
            verb = "failed to start" if first or not self.tools.listed else "cannot reconnect"
            self._move("error", f"{verb}: {reason}{self._context()}")
            return
        except BaseException:  # cancelled: only aclose does that
            self._move("error", f"the connection attempt was cancelled{self._context()}")
            raise
        if self._closing:  # aclose ran meanwhile: this client is nobody's to close
            await asyncio.shield(client.close(link.client))
            return
        self._set_link(link)
        self._move("ok")
        self._answered()
        if listed is not None:
            self.tools.replace(listed, link)
        else:
            self.tools.want_refresh(link, announced=False)
        logger.info("upstream %s: %s", self.name, "connected" if first else "reconnected")

    def _on_slow(self) -> None:
        self._slow = True
        ceiling_s = self.startup_timeout_s * self._timing.startup_ceiling_factor
        last = self.reason if self.state == "reconnecting" else None  # its context included
        tail = "" if last else self._context()
        self.reason = self._redact(slow_reason(last, self.startup_timeout_s, ceiling_s) + tail)
        logger.warning("upstream %s: %s", self.name, self.reason)

    async def _open(self, *, list_tools: bool) -> tuple[Link, list[mcp_types.Tool] | None]:
        """A new client, connected (and its tools listed); closed on failure."""
        gone = "the upstream no longer knows our session"
        return await open_link(
            self.config,
            log=UpstreamLog(self.name, self._redact),
            stderr=self._stderr,
            max_result_bytes=self.max_result_bytes,
            list_tools=list_tools,
            on_stderr_ended=self._stderr_ended,
            on_session_gone=lambda link: self._lose(link, gone),
            on_tools_changed=lambda link: self.tools.want_refresh(link, announced=True),
        )

    # ------------------------------------------------------------------ background work

    async def _supervise(self) -> None:
        """Heal with jittered backoff while down; check health while idle and up."""
        while not self._closing:
            if self.state == "ok":
                woken = await wait_for(self._wake, self._timing.health_interval_s)
                if self.is_ok() and (not woken or self._check_now):
                    await self._check()
                continue
            if self.state == "connecting" and self._attempt is not None:
                await asyncio.shield(self._attempt)  # the first attempt, however slow
                continue
            await asyncio.sleep(retry_delay_s(self._failures))
            if not self.is_ok() and not self._closing:  # a call may have healed it
                await self._heal()

    def _stderr_ended(self, link: Link) -> None:
        """The process's stderr closed: most likely it exited; a request tells for sure."""
        if self._link is link and self.state == "ok" and not self._closing:
            self._check_now = True
            self._wake.set()

    async def _check(self) -> None:
        """One health check, when `health.check_due` says so."""
        from . import client

        forced, self._check_now = self._check_now, False
        self.observe()
        link = self._link
        if self.state != "ok" or link is None:
            return
        now = time.monotonic()
        if self.tools.stale(now, self._timing.refresh_interval_s, client.is_modern(link.client)):
            self.tools.want_refresh(link, announced=False)
        watched = self._stderr is not None and self._stderr.watching
        since_s, interval_s = now - self._last_answer, self._timing.health_interval_s
        if not check_due(
            forced=forced, since_answer_s=since_s, interval_s=interval_s, watched=watched
        ):
            return
        failure = await probe(link, timeout_s=self._timing.health_timeout_s)
        if failure is not None and failure.unconfirmed:  # one HTTP request failed: ask again
            failure = await probe(link, timeout_s=self._timing.health_timeout_s)
        if failure is None:
            self._answered()
        elif failure.connection_lost:
            self._lose(link, "connection lost: it exited" if forced else failure.message)
        else:
            logger.debug("upstream %s: health check: %s", self.name, failure.message)

    async def _stderr_drained(self) -> None:
        """Let the stderr of a process that just died be read, for the error message."""
        if self._stderr is not None:
            await self._stderr.drained(timeout_s=0.5)

    def _context(self) -> str:
        """`; command: ...; stderr: ...` or `; url: ...`: what a person needs to fix it."""
        return f"; {self.config.where()}{self._stderr.tail() if self._stderr else ''}"

"""The ASGI app uvicorn serves in front of the MCP app: probes, Host check and drain.

`GET /healthz` answers 200 while the process serves; `GET /readyz` 503 until the gate is
opened over the MCP app, then 200, and 503 again once it drains. The probes skip every
other check: they run nothing and reveal nothing but "ok"/"ready"/"starting"/"draining".
Any other request must carry exactly one `Host` header that `http_host.parse_host` reads,
else it is refused with 400; MCP requests that arrive while the gate starts wait for it.

While draining, requests that would start new work (`tools/call`, `initialize`) are
refused with 503 before anything runs, so a balancer may resend them to another instance;
the rest still passes, for running calls may need it. The gate counts the requests that
carry work, so a drain knows when the running calls have finished (`Gate.wait_quiet`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from .http_host import parse_host

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Gate", "GateState"]

_HEALTH_PATH, _READY_PATH = "/healthz", "/readyz"
_QUIET_S = 0.5  # a drain ends after this long without a request
_MAX_PEEK_BYTES = 4 * 1024 * 1024  # the MCP SDK's own request-body limit
_NEW_WORK = frozenset({"tools/call", "initialize"})  # refused while draining


class GateState(enum.Enum):
    """Where the gate is: `STARTING → READY → DRAINING → CLOSED` (a drain may begin while
    it starts)."""

    STARTING = "starting"
    READY = "ready"
    DRAINING = "draining"
    CLOSED = "closed"


class Gate:
    """The ASGI app uvicorn serves: the probes, then the MCP app while it takes work.

    It counts the requests that carry work (all but GET, whose streams only wait for
    server messages) so a drain knows when the running calls have finished.
    """

    def __init__(self) -> None:
        self.state = GateState.STARTING
        self.running = 0
        self._admitted = 0
        self._app: ASGIApp | None = None
        self._changed = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def open(self, app: ASGIApp) -> None:
        self._app = app
        self._move(GateState.READY)

    def drain(self) -> None:
        if self.state in (GateState.STARTING, GateState.READY):
            self._move(GateState.DRAINING)

    def close(self) -> None:
        self._move(GateState.CLOSED)

    def _move(self, state: GateState) -> None:
        self.state = state
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_left_ready(self) -> None:
        while self.state in (GateState.STARTING, GateState.READY):
            await self._changed.wait()

    async def wait_quiet(self, timeout_s: float) -> bool:
        """True once no request has run for `_QUIET_S` (a client may follow a call's
        answer with another request, e.g. a tools/list to check it); False after `timeout_s`.
        """
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                await asyncio.wait_for(self._idle.wait(), max(remaining, 0))
            except TimeoutError:
                return False
            admitted = self._admitted
            await asyncio.sleep(_QUIET_S)
            if self._admitted == admitted and not self.running:
                return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan is off; websockets are not served
            return
        if scope["path"] in (_HEALTH_PATH, _READY_PATH):
            await self._probe(scope, send)
            return
        if not _one_host(scope):  # RFC 9112 §3.2: 400 for none, several or an invalid one
            await _respond(send, 400, "invalid Host header", close=True)
            return
        while self.state is GateState.STARTING:
            await self._changed.wait()
        if scope["method"] == "GET":  # a stream that waits for server messages: not work
            await self._pass(scope, receive, send)
            return
        async with self._working():
            await self._pass(scope, receive, send)

    async def _pass(self, scope: Scope, receive: Receive, send: Send) -> None:
        admitted: Receive | None = receive
        if self.state is GateState.DRAINING:
            admitted = await self._admit_while_draining(scope, receive)
        if admitted is None or self.state is GateState.CLOSED:
            await _respond(send, 503, "draining", close=True)
            return
        assert self._app is not None
        self._admitted += 1
        await self._app(scope, admitted, send)

    @contextlib.asynccontextmanager
    async def _working(self) -> AsyncIterator[None]:
        self.running += 1
        self._idle.clear()
        try:
            yield
        finally:
            self.running -= 1
            if not self.running:
                self._idle.set()

    async def _probe(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, "method not allowed")
        elif scope["path"] == _HEALTH_PATH:
            await _respond(send, 200, "ok")
        elif self.state is GateState.READY:
            await _respond(send, 200, "ready")
        else:
            await _respond(
                send, 503, "starting" if self.state is GateState.STARTING else "draining"
            )

    async def _admit_while_draining(self, scope: Scope, receive: Receive) -> Receive | None:
        """While draining, refuse only what would start new work: a `tools/call` or a new
        session (`initialize`). The rest still passes, for running calls may need it: a
        client lists tools to check a result, answers the server's questions, cancels.
        Returns the `receive` to hand on, or None to refuse."""
        if scope["method"] != "POST":
            return receive
        body = await _read_body(receive)
        if body is None or _starts_work(body):
            return None
        return _replay(body, receive)


def _starts_work(body: bytes) -> bool:
    """Whether a JSON-RPC body holds a request that starts work (a tool call, a session)."""
    try:
        parsed = json.loads(body)
    except ValueError:  # not ours to judge: the MCP app answers it with a parse error
        return False
    messages = parsed if isinstance(parsed, list) else [parsed]
    return any(isinstance(m, dict) and m.get("method") in _NEW_WORK for m in messages)


async def _read_body(receive: Receive) -> bytes | None:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_PEEK_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _respond(send: Send, status: int, text: str, *, close: bool = False) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"cache-control", b"no-store")]
    if close:  # push clients and balancers off this instance
        headers += [(b"connection", b"close"), (b"retry-after", b"1")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text.encode()})


def _one_host(scope: Scope) -> bool:
    """Whether the request has exactly one `Host` header, and one `parse_host` reads."""
    hosts = [value for name, value in scope["headers"] if name.lower() == b"host"]
    return len(hosts) == 1 and parse_host(hosts[0].decode("latin-1")) is not None

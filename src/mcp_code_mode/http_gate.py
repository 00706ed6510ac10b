"""The ASGI app uvicorn serves in front of the MCP app: probes, Host check and drain.

`GET /healthz` answers 200 while the process serves; `GET /readyz` 503 until the gate is
`ready`, then 200, and 503 again once it drains. The probes skip every
other check: they run nothing and reveal nothing but "ok"/"ready"/"starting"/"draining".
Any other request must carry exactly one `Host` header that `http_host.parse_host` reads,
else it is refused with 400; MCP requests that arrive before the gate `serve`s the MCP app
wait for it (it serves them before it is ready: attack 138, a first `initialize` held 49 s).

While draining, requests that would start new work (`tools/call`, `initialize`) are
refused with 503 before anything runs, so a balancer may resend them to another instance;
the rest still passes, for running calls may need it. The gate counts the requests that
carry work, so a drain knows when the running calls have finished (`Gate.wait_quiet`).

Bounds, each found by outside attacks (107-115): an authorized request's body is read
once here (at most the MCP app's own 4 MB) and costed as the objects it parses to (64 MB
each, `max_held` for all requests in flight); an `initialize` may carry 16 KB, else 413 (a
session kept its 3.5 MB `initialize` for 30 minutes: 140 sessions took 1 GB); the requests
carrying work held at once are capped (`max_requests`: 200 calls of 3 MB took 2.1 GB),
beyond which a request that starts work gets 503 with `retry-after`, while answers to the
server's questions, cancels and other requests still pass (a running call may wait for
them); and a request without the configured token is handed to the MCP app, which answers
401, before the gate reads its body or counts it. An answer to a question another instance
asked goes to that instance (`answer_routing`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import hmac
import json
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .answer_routing import AnswerRouter
from .http_host import parse_host
from .sandbox.protocol import decode_cost
from .sandbox.reply import refused_request
from .upstreams.framing import HEAD_BYTES, request_head

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Gate", "GateState"]

_HEALTH_PATH, _READY_PATH = "/healthz", "/readyz"
_QUIET_S = 0.5  # a drain ends after this long without a request
_MAX_PEEK_BYTES = 4 * 1024 * 1024  # the MCP SDK's own request-body limit
_SMALL_BYTES = 16 * 1024
"""A small request: what an `initialize` may carry (capabilities and client info, in any
session), and what always passes the bound on bodies in flight (answers, pings, lists)."""
_MAX_BODY_OBJECTS = 64 << 20
"""What a body may take as Python objects (`decode_cost`, an upper estimate): 4 MB of `[],`
parse to 80-100 MB, 25 times their size, and 40 such calls took 4 GB (outside attack
113); 4 MB of records, numbers or text estimate 3-42 MB."""

_BUSY = "on this instance; retry shortly (MCP_CODE_HTTP_MAX"
_TOO_MANY = f"too many requests in flight {_BUSY}_REQUESTS)"
_DRAINING = "draining: this instance is shutting down; retry on another"


class GateState(enum.Enum):
    """Where the gate is: `STARTING → READY → DRAINING → CLOSED` (a drain may begin while
    it starts)."""

    STARTING = "starting"
    READY = "ready"
    DRAINING = "draining"
    CLOSED = "closed"


class Gate:
    """The ASGI app uvicorn serves: the probes, then the MCP app while it takes work.

    It counts the requests that may carry work (tool calls, sessions opened; not GET, whose
    streams only wait for server messages, nor pings and listings) so a drain knows when
    the running calls have finished, and what all requests in flight hold.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        max_requests: int = 0,
        max_held: int = 1 << 30,
        busy: Callable[[], bool] = bool,
        answers: AnswerRouter | None = None,
        on_drain: Callable[[], None] = lambda: None,
    ) -> None:
        self.state = GateState.STARTING
        self._answers = answers  # hands an answer to the instance that asked (§8)
        # as the MCP app reads it: a header's bytes as latin-1 text
        self._token = None if token is None else token.encode("latin-1", "replace")
        self._max_requests = max_requests  # 0: no cap
        # what the bodies of all requests in flight may take as objects: a request the MCP
        # SDK never answers (one reusing the JSON-RPC id of another in its session) keeps
        # its parsed body, and 100 held pings of 64 MB took 7 GB (outside attack 115)
        self._max_held = max_held
        self.busy = busy  # work a drain waits for beside requests (`wait_quiet`)
        self._on_drain = on_drain  # told when the drain begins: long work ends early
        self.running = 0  # requests in flight that may start work: the cap and the drain's
        self.held = 0  # what the bodies of all requests in flight take as objects (estimated)
        self._admitted = 0
        self._app: ASGIApp | None = None
        self._changed = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def serve(self, app: ASGIApp) -> None:
        """Pass MCP requests to `app` from now on (`/readyz` waits for `ready`)."""
        self._app = app
        self._changed.set()
        self._changed = asyncio.Event()

    def ready(self) -> None:
        if self.state is GateState.STARTING:  # a drain begun meanwhile stays one
            self._move(GateState.READY)

    @property
    def serving(self) -> bool:
        """Whether MCP requests reach the app and no drain has begun."""
        ready = self.state in (GateState.STARTING, GateState.READY)
        return ready and self._app is not None

    def drain(self) -> None:
        if self.state in (GateState.STARTING, GateState.READY):
            self._move(GateState.DRAINING)
            self._on_drain()

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
        answer with another request, e.g. a tools/list to check it) and nothing is `busy`
        (a run waiting for a 2026-07-28 client's answer holds no request: attack 109);
        False after `timeout_s`.
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
            if self._admitted == admitted and not self.running and not self.busy():
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
        while self.state is GateState.STARTING and self._app is None:
            await self._changed.wait()
        if scope["method"] == "GET" or not self._authorized(scope):
            # a stream that waits for server messages is not work; without the token, the
            # MCP app answers 401 before anything is read
            await self._pass(scope, receive, send)
            return
        body, head = await _read_body(receive)  # at most the MCP app's own limit, read once
        cost = 0 if body is None else decode_cost(body)  # 1-2 ms a MB, counting bytes
        refusal = self._refusal(body, cost, modern=_modern(scope))
        if refusal is not None:
            await _refuse(send, *refusal, request_head(head))
            return
        assert body is not None
        async with self._holding(_may_start_work(body), cost):
            if await self._handed_on(scope, body, receive, send):
                return
            await self._pass(scope, _replay(body, receive), send)

    async def _handed_on(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> bool:
        """Whether the request answered another instance's question and went to it."""
        url = None if self._answers is None else self._answers.elsewhere(scope, body)
        if url is None or self.state is GateState.CLOSED:
            return False
        assert self._answers is not None
        self._admitted += 1
        return await self._answers.forward(url, scope, body, receive, send)

    def _refusal(self, body: bytes | None, cost: int, *, modern: bool) -> tuple[int, str] | None:
        """Why a request with this body (`cost`: as objects) is refused before it reaches
        the MCP app, if it is (`modern`: a 2026-07-28 request, whose `tools/call` may answer
        a question)."""
        if body is None:
            return 413, "the request body is over 4 MB"
        if len(body) > _SMALL_BYTES and "initialize" in _methods(body):
            return 413, "an initialize request is limited to 16 KB"
        if cost > _MAX_BODY_OBJECTS:
            return 413, "the request's JSON would take over 64 MB as objects (many small values)"
        if self.held + cost > self._max_held and len(body) > _SMALL_BYTES:
            # small requests pass: answers, pings and listings (one token holder's 16 calls
            # of strings costed 11 times their size kept them out: attack 116)
            return 503, f"too much request data in flight {_BUSY}_HELD_MB)"
        full = self._max_requests and self.running >= self._max_requests
        if (full or self.state is GateState.DRAINING) and _starts_work(body, modern=modern):
            return 503, _DRAINING if self.state is GateState.DRAINING else _TOO_MANY
        if self.state is GateState.CLOSED:
            return 503, _DRAINING
        return None

    def _authorized(self, scope: Scope) -> bool:
        """Whether the MCP app's bearer check would pass (its first `authorization` header,
        any case of "bearer ", then the token)."""
        if self._token is None:
            return True
        sent = next((v for n, v in scope["headers"] if n.lower() == b"authorization"), b"")
        return sent[:7].lower() == b"bearer " and hmac.compare_digest(sent[7:], self._token)

    async def _pass(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.state is GateState.CLOSED or self._app is None:  # closed, or never served
            await _respond(send, 503, "draining", close=True)
            return
        self._admitted += 1
        await self._app(scope, receive, send)

    @contextlib.asynccontextmanager
    async def _holding(self, work: bool, cost: int) -> AsyncIterator[None]:
        """Count a request in flight: its body's cost, and whether the cap and the drain
        count it (pings and listings held open kept a drain to its limit: attack 115)."""
        self.running += work
        self.held += cost
        if work:
            self._idle.clear()
        try:
            yield
        finally:
            self.running -= work
            self.held -= cost
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


def _starts_work(body: bytes, *, modern: bool) -> bool:
    """Whether a JSON-RPC body holds a request that starts work: a session, or a tool call
    that answers no question of the server's (2026-07-28 answers one with a `tools/call`
    carrying a `requestState`; an older session's never does: attack 111)."""
    return any(
        method == "initialize" or (method == "tools/call" and not (modern and _answers(params)))
        for method, params in _requests(body)
    )


def _may_start_work(body: bytes) -> bool:
    """Whether a body may hold a request that starts work, without parsing it: a method
    named as is, any escape, or a NUL (JSON in UTF-16 or UTF-32). Pings and listings held
    open (a reused JSON-RPC id is never answered) filled the cap and locked every client
    out (outside attack 113)."""
    return any(sign in body for sign in (b"tools/call", b"initialize", b"\\", b"\x00"))


def _modern(scope: Scope) -> bool:
    """Whether the request says it speaks a protocol whose calls may answer a question."""
    sent = [v for n, v in scope["headers"] if n.lower() == b"mcp-protocol-version"]
    return len(sent) == 1 and sent[0].decode("latin-1") in MODERN_PROTOCOL_VERSIONS


def _methods(body: bytes) -> set[str]:
    return {method for method, _ in _requests(body)}


def _requests(body: bytes) -> list[tuple[str, object]]:
    """A JSON-RPC body's (method, params) pairs; none when it does not parse (not ours to
    judge: the MCP app answers it with a parse error)."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # nested past the parser's depth: the app says 400
        return []
    messages = parsed if isinstance(parsed, list) else [parsed]
    return [
        (m["method"], m.get("params"))
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("method"), str)
    ]


def _answers(params: object) -> bool:
    """A call carrying the state of a question the server asked (an empty or absent one, or
    `inputResponses` alone, answer nothing: attack 111)."""
    if not isinstance(params, dict):
        return False
    state = params.get("requestState")
    return isinstance(state, str) and bool(state)


async def _read_body(receive: Receive) -> tuple[bytes | None, bytes]:
    """The body (None past the MCP app's limit) and its first `HEAD_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_PEEK_BYTES:
            return None, b"".join(chunks)[:HEAD_BYTES] if chunks else chunk[:HEAD_BYTES]
        chunks.append(chunk)
        if not message.get("more_body", False):
            body = b"".join(chunks)
            return body, body[:HEAD_BYTES]


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


async def _refuse(
    send: Send, status: int, text: str, head: tuple[int | str | None, str | None]
) -> None:
    """Refuse a request before the MCP app reads it, as a JSON-RPC error an MCP client
    shows (a plain-text 503 reached clients as an opaque -32603: attack 138), for the id
    its `head` gives, if any; a tool call refused for its size gets a result object, as
    over stdio (contract §7; outside attack 140: `MCPError` over HTTP)."""
    ident, method = head
    answer = {"error": {"code": -32000 if status == 503 else -32600, "message": text}}
    if status == 413 and ident is not None:
        answer, status = refused_request(method, text), 200 if method == "tools/call" else 413
    body = {"jsonrpc": "2.0", "id": ident, **answer}
    headers = [
        (b"content-type", b"application/json"),
        (b"cache-control", b"no-store"),
        (b"connection", b"close"),
        (b"retry-after", b"1"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def _one_host(scope: Scope) -> bool:
    """Whether the request has exactly one `Host` header, and one `parse_host` reads."""
    hosts = [value for name, value in scope["headers"] if name.lower() == b"host"]
    return len(hosts) == 1 and parse_host(hosts[0].decode("latin-1")) is not None

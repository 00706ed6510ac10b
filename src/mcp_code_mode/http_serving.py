"""Serving the MCP app over streamable HTTP, for one person or a team (contract §9).

`serve_http` listens at once: `GET /healthz` answers 200 while the process serves and
`GET /readyz` 503 until the gateway has started (upstreams connected, catalog loaded, pool
warm), then 200. MCP requests that arrive before that wait for it. The MCP endpoint is
fastmcp's own app: its Host/Origin guard, strict (loopback names plus
MCP_CODE_HTTP_ALLOWED_HOSTS / _ORIGINS, whatever address is bound), and with
MCP_CODE_HTTP_TOKEN its static bearer-token verifier (401 without the token). Before that
guard, a request must carry exactly one `Host` header that `parse_host` reads (RFC 9110
host and optional port), else it is refused with 400: fastmcp's guard takes whatever
precedes a `:` or `]`, so `localhost:80@evil.com` or `[::1].evil.com` would pass it.

`GET /runs` and `/runs/<id>` serve the runs page (`runs_page`) beside `/mcp`, behind the same
Host/Origin guard and token.

The first SIGTERM or SIGINT drains: `/readyz` turns 503 and requests that would start new
work (`tools/call`, `initialize`) are refused with 503 before anything runs, so a balancer
may resend them to another instance; the rest still passes, for running calls may need it
(answers to the server's questions, cancellations, the tools/list a client makes to check
a result). Once the running calls have finished within their limits, the MCP sessions
end, the gateway closes its upstreams and workers, and `serve_http` returns. A second
signal stops at once.

What this does not do: TLS (terminate it in a proxy), rate limits, per-user identities
(one shared token), or keeping a stateful session alive across instances (use
MCP_CODE_HTTP_STATELESS behind a balancer). The probes skip the Host/Origin guard: they
run nothing and reveal nothing but "ok"/"ready"/"starting"/"draining".
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import ipaddress
import json
import logging
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import uvicorn
from fastmcp.server.auth import AuthProvider
from fastmcp.server.auth.middleware import RequireAuthMiddleware
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from starlette.routing import Route

from .errors import CodeModeError, ConfigError
from .runs_page import runs_app, runs_reader
from .settings import Settings

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.http import StarletteWithLifespan
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["check_exposure", "parse_host", "serve_http"]

logger = logging.getLogger(__name__)

_HEALTH_PATH, _READY_PATH = "/healthz", "/readyz"
_RUNS_PATHS = ("/runs", "/runs/{run_id:path}")  # the runs page, behind the token
_DRAIN_SLACK_S = 10.0  # beyond the longest run a client may ask for
_QUIET_S = 0.5  # a drain ends after this long without a request
_FLUSH_S = 5  # for uvicorn to close connections once the drain is over
_MAX_PEEK_BYTES = 4 * 1024 * 1024  # the MCP SDK's own request-body limit
_NEW_WORK = frozenset({"tools/call", "initialize"})  # refused while draining


# RFC 3986 §3.2.2 reg-name: unreserved, pct-encoded and sub-delims characters (an empty one,
# which RFC 3986 allows, is no host to serve); IPv4 addresses are reg-names by this syntax.
_REG_NAME = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+")
_PORT = re.compile(r"[0-9]{1,5}")


def parse_host(value: str) -> tuple[str, int | None] | None:
    """The host and port of a `Host` header (RFC 9110 §7.2: `uri-host [":" port]`), or None
    when it is anything else: userinfo, a path, spaces, an unbracketed or zoned IPv6
    address, a port that is not 1-5 digits up to 65535, trailing junk. A bracketed IPv6
    literal comes back without its brackets; nothing is decoded or lowered."""
    host, port = value, None
    if value.startswith("["):
        end = value.find("]")
        host, rest = value[1:end], value[end + 1 :]
        if end < 0 or not _is_ipv6(host) or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
    elif ":" in value:
        host, port = value.split(":", 1)
    if not value.startswith("[") and not _REG_NAME.fullmatch(host):
        return None
    if port is None:
        return host, None
    if not _PORT.fullmatch(port) or int(port) > 65535:
        return None
    return host, int(port)


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return "%" not in text  # a zone id belongs to no Host header


def _one_host(scope: Scope) -> bool:
    """Whether the request has exactly one `Host` header, and one `parse_host` reads."""
    hosts = [value for name, value in scope["headers"] if name.lower() == b"host"]
    return len(hosts) == 1 and parse_host(hosts[0].decode("latin-1")) is not None


class _State(enum.Enum):
    STARTING = "starting"
    READY = "ready"
    DRAINING = "draining"
    CLOSED = "closed"


def check_exposure(settings: Settings, host: str) -> None:
    """Refuse to serve on an address other machines can reach without a token.

    Raises:
        ConfigError: `host` is not a loopback name or address and MCP_CODE_HTTP_TOKEN is unset.
    """
    if settings.http_token is None and not _is_loopback(host):
        raise ConfigError(
            f"--host {host or '(all addresses)'} is reachable from other machines: set "
            "MCP_CODE_HTTP_TOKEN (a bearer token every client must send), or serve on 127.0.0.1"
        )


def _is_loopback(host: str) -> bool:
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:  # any other name may resolve to anything
        return False


def _drain_limit_s(settings: Settings) -> float:
    """How long a drain waits for running calls: the longest run a client may ask for,
    plus one approval wait (which does not count against a run's limit), plus slack."""
    return settings.max_timeout_s + settings.approval_timeout_s + _DRAIN_SLACK_S


async def serve_http(
    settings: Settings,
    open_server: Callable[[], AbstractAsyncContextManager[FastMCP]],
    *,
    host: str,
    port: int,
) -> None:
    """Serve MCP over streamable HTTP on `host:port` until a signal drains it (see module).

    `open_server()` starts the gateway and yields the MCP server over it; it is entered
    after the port is bound and left after the drain.

    Raises:
        ConfigError: see `check_exposure`.
        CodeModeError: the address cannot be bound.
    """
    check_exposure(settings, host)
    listener = _listen(host, port)
    address = listener.getsockname()
    print(f"mcp-code-mode: serving http://{_url_host(host)}:{address[1]}/mcp", file=sys.stderr)
    gate = _Gate()
    config = uvicorn.Config(
        gate,
        lifespan="off",
        log_level="warning",
        timeout_graceful_shutdown=_FLUSH_S,
        timeout_keep_alive=30,  # longer than a balancer keeps an idle connection to us
        server_header=False,
    )
    serving = asyncio.ensure_future(_serve(gate, _Uvicorn(config), listener, open_server, settings))
    hard_stop = False

    def on_signal() -> None:
        nonlocal hard_stop
        if gate.state is _State.READY:
            gate.drain()
            print(f"mcp-code-mode: draining ({gate.running} running)", file=sys.stderr)
        else:  # still starting, or a second signal: stop now
            hard_stop = True
            serving.cancel()

    with _handling_signals(on_signal):
        try:
            await serving
        except asyncio.CancelledError:
            if not hard_stop:
                raise


async def _serve(
    gate: _Gate,
    http: uvicorn.Server,
    listener: socket.socket,
    open_server: Callable[[], AbstractAsyncContextManager[FastMCP]],
    settings: Settings,
) -> None:
    uvicorn_task = asyncio.ensure_future(http.serve(sockets=[listener]))
    try:
        async with open_server() as server:
            app = _mcp_app(server, settings)
            async with app.router.lifespan_context(app):
                gate.open(app)
                left_ready = asyncio.ensure_future(gate.wait_left_ready())
                try:
                    await asyncio.wait(
                        {uvicorn_task, left_ready}, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    left_ready.cancel()
                gate.drain()
                if not await gate.wait_quiet(_drain_limit_s(settings)):
                    logger.warning("mcp-code-mode: %d calls still running; stopping", gate.running)
                gate.close()  # from here on every MCP request is refused
            # Leaving the app's lifespan ends its MCP sessions; leaving `open_server`
            # closes the gateway's upstreams and workers.
    finally:
        gate.close()
        http.should_exit = True
        await uvicorn_task


def _mcp_app(server: FastMCP, settings: Settings) -> StarletteWithLifespan:
    """fastmcp's streamable-HTTP app with our token verifier and a strict Host/Origin guard,
    and the runs page (`GET /runs`, contract §10) behind both, as `/mcp` is."""
    server.auth = _token_verifier(settings)
    app = server.http_app(
        transport="http",
        stateless_http=settings.http_stateless,
        host_origin_protection=True,  # "strict": every request, whatever address is bound
        allowed_hosts=_comma_list(settings.http_allowed_hosts),
        allowed_origins=_comma_list(settings.http_allowed_origins),
    )
    page = runs_app(runs_reader(settings))
    if server.auth is not None:  # the app's middleware checks the token; this requires it
        page = RequireAuthMiddleware(page, required_scopes=[])
    app.router.routes += [Route(path, page, methods=["GET"]) for path in _RUNS_PATHS]
    return app


def _token_verifier(settings: Settings) -> AuthProvider | None:
    if settings.http_token is None:
        return None
    # A dict lookup: str hashes are keyed per process, so timing tells nothing about a prefix.
    token = settings.http_token.get_secret_value()
    return StaticTokenVerifier({token: {"client_id": "mcp-code-mode-client", "scopes": []}})


def _comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _listen(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CodeModeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)  # connectable from now on; uvicorn accepts once it runs
    except OSError as exc:
        sock.close()
        raise CodeModeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: `serve_http` owns SIGINT and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.contextmanager
def _handling_signals(handler: Callable[[], None]) -> Iterator[None]:
    loop = asyncio.get_running_loop()
    handled = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, handler)
            handled.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            pass
    try:
        yield
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)


class _Gate:
    """The ASGI app uvicorn serves: the probes, then the MCP app while it takes work.

    It counts the requests that carry work (all but GET, whose streams only wait for
    server messages) so a drain knows when the running calls have finished.
    """

    def __init__(self) -> None:
        self.state = _State.STARTING
        self.running = 0
        self._admitted = 0
        self._app: ASGIApp | None = None
        self._changed = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def open(self, app: ASGIApp) -> None:
        self._app = app
        self._move(_State.READY)

    def drain(self) -> None:
        if self.state in (_State.STARTING, _State.READY):
            self._move(_State.DRAINING)

    def close(self) -> None:
        self._move(_State.CLOSED)

    def _move(self, state: _State) -> None:
        self.state = state
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_left_ready(self) -> None:
        while self.state in (_State.STARTING, _State.READY):
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
        while self.state is _State.STARTING:
            await self._changed.wait()
        if scope["method"] == "GET":  # a stream that waits for server messages: not work
            await self._pass(scope, receive, send)
            return
        async with self._working():
            await self._pass(scope, receive, send)

    async def _pass(self, scope: Scope, receive: Receive, send: Send) -> None:
        admitted: Receive | None = receive
        if self.state is _State.DRAINING:
            admitted = await self._admit_while_draining(scope, receive)
        if admitted is None or self.state is _State.CLOSED:
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
        elif self.state is _State.READY:
            await _respond(send, 200, "ready")
        else:
            await _respond(send, 503, "starting" if self.state is _State.STARTING else "draining")

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

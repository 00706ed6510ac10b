"""Serving the MCP app over streamable HTTP, for one person or a team (contract §9).

`serve_http` listens at once, behind a `http_gate.Gate`: `GET /healthz` answers 200 while
the process serves and `GET /readyz` 503 until the gateway is ready (pool warm, then
`ready()`: upstreams connected, catalog loaded), then 200. MCP requests are served once the
pool is warm, before the upstreams are (discovery and runs wait for those they need, as over
stdio); those that arrive before that wait for it. The MCP endpoint is fastmcp's own app:
its Host/Origin guard, strict (loopback names plus MCP_CODE_HTTP_ALLOWED_HOSTS / _ORIGINS,
whatever address is bound), and with MCP_CODE_HTTP_TOKEN its static bearer-token verifier
(401 without the token). Before that guard, the gate refuses with 400 a request without
exactly one `Host` header that `http_host.parse_host` reads.

`GET /runs` and `/runs/<id>` serve the runs page (`runs_page`) beside `/mcp`, behind the same
Host/Origin guard and token.

The first SIGTERM or SIGINT drains: `/readyz` turns 503 and requests that would start new
work (`tools/call`, `initialize`) are refused with 503 before anything runs, so a balancer
may resend them to another instance; the rest still passes, for running calls may need it
(answers to the server's questions, cancellations, the tools/list a client makes to check
a result). Once the running calls have finished within their limits, the MCP sessions
end, the gateway closes its upstreams and workers, and `serve_http` returns. A second
signal stops at once.

What this does not do: TLS (terminate it in a proxy), rate limits or connection limits
(a proxy in front bounds slow or idle connections; `http_gate` bounds request bodies and
requests in flight), per-user identities (one shared token; without one, on loopback,
every local user may connect), or keeping a stateful session alive across instances (use
MCP_CODE_HTTP_STATELESS behind a balancer). The probes skip the Host/Origin guard: they
run nothing and reveal nothing but "ok"/"ready"/"starting"/"draining".
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import re
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import uvicorn
from fastmcp.server.auth import AuthProvider
from fastmcp.server.auth.middleware import RequireAuthMiddleware
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from starlette.routing import Route

from .answer_routing import AnswerRouter, state_security
from .errors import CodeModeError, ConfigError
from .http_gate import Gate
from .runs_page import runs_app, runs_reader
from .settings import Settings, lm_call_limit_s

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.http import StarletteWithLifespan

__all__ = ["check_exposure", "serve_http"]

logger = logging.getLogger(__name__)

_HEADER_TOKEN = re.compile(r"[\x21-\x7e]+")
_RUNS_PATHS = ("/runs", "/runs/{run_id:path}")  # the runs page, behind the token
_DRAIN_SLACK_S = 10.0  # beyond the longest run a client may ask for
_FLUSH_S = 5  # for uvicorn to close connections once the drain is over


def check_exposure(settings: Settings, host: str) -> None:
    """Refuse to serve on an address other machines can reach without a token, or with a
    token no header can carry.

    Raises:
        ConfigError: `host` is not a loopback name or address and MCP_CODE_HTTP_TOKEN is
            unset, or the token is not visible ASCII.
    """
    token = settings.http_token
    if token is not None and not _HEADER_TOKEN.fullmatch(token.get_secret_value()):
        # a header carries it: another character never matches (attacks 109, 111)
        raise ConfigError(
            "MCP_CODE_HTTP_TOKEN must be visible ASCII characters, no spaces (it is sent in a "
            "header)"
        )
    if token is None and not _is_loopback(host):
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
    plus one approval wait (which does not count against a run's limit), plus slack; with
    an LM, two model calls more: a `run_task` ends after the step it is in and its answer
    (it went on past the drain, and its reply was lost: outside attack 147)."""
    agent_s = 2 * lm_call_limit_s(settings.dspy_timeout_s, settings.dspy_num_retries)
    steps_s = agent_s if settings.dspy_lm else 0.0
    return settings.max_timeout_s + settings.approval_timeout_s + steps_s + _DRAIN_SLACK_S


async def serve_http(
    settings: Settings,
    open_server: Callable[[str], AbstractAsyncContextManager[FastMCP]],
    *,
    host: str,
    port: int,
    busy: Callable[[], bool] = bool,
    ready: Callable[[], Awaitable[object]] | None = None,
    on_drain: Callable[[], None] = lambda: None,
) -> None:
    """Serve MCP over streamable HTTP on `host:port` until a signal drains it (see module).

    `open_server(origin)` starts the gateway and yields the MCP server over it (`origin`:
    this instance's URL, which its questions name); entered once the port is bound, left
    after the drain, which waits for requests and for `busy()` (runs in progress) to end.
    `/readyz` answers 200 once the server is served and `ready()` has returned.

    Raises:
        ConfigError: see `check_exposure`.
        CodeModeError: the address cannot be bound.
    """
    check_exposure(settings, host)
    listener = _listen(host, port)
    bound = listener.getsockname()[1]
    print(f"mcp-code-mode: serving http://{_url_host(host)}:{bound}/mcp", file=sys.stderr)
    origin = settings.http_instance_url or _own_url(host, bound)
    _warn_unshared_states(settings)
    gate = _gate(settings, busy, origin, on_drain)
    opened = functools.partial(open_server, origin)
    serving = asyncio.ensure_future(
        _serve(gate, _uvicorn(gate), listener, (opened, ready or _at_once), settings)
    )
    hard_stop = False

    def on_signal() -> None:
        nonlocal hard_stop
        if gate.serving:
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
    gate: Gate,
    http: uvicorn.Server,
    listener: socket.socket,
    server_ready: tuple[
        Callable[[], AbstractAsyncContextManager[FastMCP]], Callable[[], Awaitable[object]]
    ],
    settings: Settings,
) -> None:
    open_server, ready = server_ready
    uvicorn_task = asyncio.ensure_future(http.serve(sockets=[listener]))
    try:
        async with open_server() as server:
            app = _mcp_app(server, settings)
            async with app.router.lifespan_context(app):
                gate.serve(app)
                readied = asyncio.ensure_future(_readied(gate, ready))
                left_ready = asyncio.ensure_future(gate.wait_left_ready())
                try:
                    await asyncio.wait(
                        {uvicorn_task, left_ready}, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    left_ready.cancel()
                    readied.cancel()
                gate.drain()
                if not await gate.wait_quiet(_drain_limit_s(settings)):
                    logger.warning(
                        "mcp-code-mode: %d calls%s still running; stopping",
                        gate.running,
                        " and runs no call holds" if gate.busy() else "",
                    )
                gate.close()  # from here on every MCP request is refused
            # Leaving the app's lifespan ends its MCP sessions; leaving `open_server`
            # closes the gateway's upstreams and workers.
    finally:
        gate.close()
        http.should_exit = True
        await uvicorn_task


async def _at_once() -> None:
    return None


async def _readied(gate: Gate, ready: Callable[[], Awaitable[object]]) -> None:
    await ready()
    gate.ready()


def _gate(
    settings: Settings, busy: Callable[[], bool], origin: str, on_drain: Callable[[], None]
) -> Gate:
    token, key = settings.http_token, settings.http_state_key
    answers = None
    if key is not None:
        security = state_security(key.get_secret_value(), settings.approval_timeout_s)
        answers = AnswerRouter(origin, security, limit_s=_drain_limit_s(settings))
    return Gate(
        token=None if token is None else token.get_secret_value(),
        max_requests=settings.http_max_requests,
        max_held=settings.http_max_held_mb << 20,
        busy=busy,
        answers=answers,
        on_drain=on_drain,
    )


def _warn_unshared_states(settings: Settings) -> None:
    """Stateless instances behind a balancer need a key they share for a 2026-07-28
    client's approval answer to reach the run that asked (`answer_routing`)."""
    if settings.http_stateless and settings.http_state_key is None and settings.approval != "off":
        print(
            "mcp-code-mode: warning: MCP_CODE_HTTP_STATELESS without MCP_CODE_HTTP_STATE_KEY: "
            "an approval answer that a balancer sends to another instance than the one that "
            "asked is refused there; give every instance one key (32+ characters)",
            file=sys.stderr,
        )


def _uvicorn(gate: Gate) -> uvicorn.Server:
    config = uvicorn.Config(
        gate,
        lifespan="off",
        log_level="warning",
        timeout_graceful_shutdown=_FLUSH_S,
        timeout_keep_alive=30,  # longer than a balancer keeps an idle connection to us
        server_header=False,
    )
    return _Uvicorn(config)


def _own_url(host: str, port: int) -> str:
    """This instance's /mcp URL as instances beside it reach it (any address: loopback)."""
    reached = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    return f"http://{_url_host(reached)}:{port}/mcp"


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

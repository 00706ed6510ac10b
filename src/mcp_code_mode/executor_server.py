"""The MCP server's process: `serve()` and `python -m mcp_code_mode.executor_server`.

The app itself, `build_server(gateway)`, lives in `mcp_app`: importing fastmcp's server
takes most of a second, and `serve` does it in a thread while the sandbox starts, so
the two overlap instead of adding up.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from .config import load_config
from .errors import CodeModeError
from .gateway import Gateway
from .serve_options import add_serve_arguments
from .settings import Settings
from .stdio_serving import serve_stdio

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["add_serve_arguments", "build_server", "main", "serve"]

logger = logging.getLogger(__name__)

# Over stdio, how long after serving begins the upstreams start (see `_serve_stdio`).
_UPSTREAMS_AFTER_S = 0.3
_STOP_GRACE_S = 0.25  # for a stop to end the serving task before it is ended for it
# On a signal, for each stdio upstream to exit after its stdin closes, before its process
# group gets SIGTERM (a Python upstream takes ~0.6 s to exit on its own: too slow a stop).
_UPSTREAM_EXIT_S = 0.2
_CLEANUP_S = 10.0
_REPORTER = "mcp-code-mode start report"


def build_server(gateway: Gateway, *, lm: Any = None, origin: str = "") -> FastMCP:
    """A FastMCP app over a started gateway (the caller owns the gateway's lifecycle).

    `run_task` is registered only with an LM (`agent.make_lm(settings)` or any dspy LM);
    `origin` is the instance's URL over HTTP (`mcp_app.build_server`).
    """
    from .mcp_app import build_server as build

    return build(gateway, lm=lm, origin=origin)


async def serve(
    settings: Settings,
    *,
    config_path: str | None = None,
    transport: str = "stdio",
    host: str | None = None,
    port: int | None = None,
) -> None:
    """Start the gateway, then serve MCP until the client goes away or a signal stops us.

    Over stdio, SIGINT and SIGTERM end serving quietly, during the start too: the gateway
    then closes its upstreams and workers, so Ctrl-C prints no traceback. Over
    HTTP, `http_serving.serve_http` adds the probes, the token and Host/Origin checks and
    the drain (contract §9).
    """
    if transport == "stdio" and (host, port) != (None, None):  # it served stdio unsaid (149)
        raise CodeModeError("--host and --port are for serving over HTTP: add --transport http")
    host, port = host or "127.0.0.1", 8765 if port is None else port
    if transport == "http":
        from .http_serving import check_exposure

        check_exposure(settings, host)  # before anything slow starts
    config = load_config(config_path or settings.servers_config)
    # fastmcp's server (and dspy, for an LM) is imported in a thread while the sandbox's
    # processes start.
    importing = asyncio.ensure_future(asyncio.to_thread(_import_app, settings))
    try:
        if transport == "stdio":
            # From here a signal ends it quietly, during the start too: the sandbox's warm
            # workers are then disposed of (their scratch directories with them).
            gateway = Gateway(settings, config, connect="on_demand")
            await _until_signal(_serve_stdio(gateway, importing), _quiet_close(gateway), gateway)
            return
        gateway = Gateway(settings, config, connect="on_demand")
        await _serve_http(gateway, importing, host=host, port=port)
    finally:
        await asyncio.gather(importing, return_exceptions=True)


async def _serve_http(
    gateway: Gateway, importing: asyncio.Future[Any], *, host: str, port: int
) -> None:
    """Serve over HTTP (`http_serving.serve_http`): the port is bound at once, the app is
    served once the pool is warm, and ready (`/readyz`) once every upstream has answered or
    failed (a first `initialize` waited for 10,000 tools to index: 49 s, attack 138)."""
    from .http_serving import serve_http

    @contextlib.asynccontextmanager
    async def started(origin: str) -> AsyncIterator[FastMCP]:
        await gateway.start()
        try:
            lm = await importing
            # Only now: connecting imports fastmcp's client, which must not race the
            # thread's import of its server (imports in two threads can deadlock).
            await gateway.connect_upstreams()
            async with _reporting_start(gateway, lm=lm):
                yield build_server(gateway, lm=lm, origin=origin)
        finally:  # drained: upstreams get 0.2 s, not the SDK's 2 s (an idle stop took 5-7 s)
            await _quiet_close(gateway)()

    def busy() -> bool:  # a drain waits for runs no request holds (one awaiting an answer)
        return gateway.executor.active > 0

    async def ready() -> None:  # behind a balancer, ready means warm: every upstream too
        await gateway.settle(wait_s=None)

    def stopping() -> None:  # a run_task ends after the step it is in (attack 147)
        gateway.stopping = True

    await serve_http(
        gateway.settings, started, host=host, port=port, busy=busy, ready=ready, on_drain=stopping
    )


def _quiet_close(gateway: Gateway) -> Callable[[], Awaitable[None]]:
    """Closes `gateway` without the start report's lines about what the close cancelled."""

    async def close() -> None:
        for task in asyncio.all_tasks():
            if task.get_name() == _REPORTER:
                task.cancel()
        await gateway.aclose(exit_grace_s=_UPSTREAM_EXIT_S)

    return close


def _import_app(settings: Settings) -> Any:
    """fastmcp's server (our app) and its client stack (the upstreams' connections), then
    with DSPY_LM set the agent and its LM (dspy: 1-3 s that held up the start before the
    sandbox's processes began): one thread imports them all, as imports in two threads can
    deadlock. Returns the LM, or None."""
    importlib.import_module(f"{__package__}.mcp_app")
    importlib.import_module(f"{__package__}.upstreams.client")
    if not settings.dspy_lm:
        return None
    from .agent import make_lm  # imports dspy: only when an LM is configured

    return make_lm(settings)


async def _serve_stdio(gateway: Gateway, importing: asyncio.Future[Any]) -> None:
    """Serve once the sandbox is warm and the app imported. The upstreams start in the
    background `_UPSTREAMS_AFTER_S` later, after the client's handshake: their processes
    would compete with it for the cores. Until they answer, the catalog comes from the
    tool cache; a run or a discovery call that needs one starts it at once. (Nothing
    connects before the app is imported: see `serve`'s HTTP branch.)"""
    async with gateway:
        lm = await importing
        server = build_server(gateway, lm=lm)
        async with _reporting_start(gateway, lm=lm, connect_after_s=_UPSTREAMS_AFTER_S):
            await serve_stdio(server)


@contextlib.asynccontextmanager
async def _reporting_start(
    gateway: Gateway,
    *,
    lm: Any = None,
    connect_after_s: float | None = None,
) -> AsyncIterator[None]:
    """Lines on stderr: the sandbox layers now; once the upstreams have tried to connect,
    the tool count and one line per server that is down. With `connect_after_s`, the
    upstreams start connecting that many seconds from now. Then, with an LM, what its first
    call loads is loaded in a thread (`agent_lm.warm_up`), not by the first `run_task`."""
    info = gateway.sandbox_info()
    layers = ", ".join(info["layers"])
    print(f"mcp-code-mode: sandbox {info['executor']}: {layers}", file=sys.stderr)

    async def report_upstreams() -> None:
        if connect_after_s is not None:
            await asyncio.sleep(connect_after_s)
            await gateway.connect_upstreams()
        # Only the upstreams: the search index (embeddings, in a thread) is built by the
        # first discovery call, not while the first runs are being answered.
        await gateway.manager.settle()
        print(f"mcp-code-mode: {len(gateway.catalog.entries)} upstream tools", file=sys.stderr)
        for row in gateway.list_servers():
            if row["status"] in ("error", "starting"):
                line = f"server {row['name']!r} ({row['status']}): {row['error']}"
                print(f"mcp-code-mode: {line}", file=sys.stderr)
        if lm is not None:
            from .agent_lm import warm_up

            await asyncio.to_thread(warm_up, lm)

    task = asyncio.create_task(report_upstreams(), name=_REPORTER)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _until_signal(
    serving: Coroutine[Any, Any, None], cleanup: Callable[[], Awaitable[None]], gateway: Gateway
) -> None:
    """Run `serving` until it returns or SIGINT/SIGTERM arrives, which cancels it.

    The MCP SDK reads stdin in a thread that cancellation cannot interrupt: once serving,
    the cancelled task would wait for the client's next line forever. So a stop that has not
    ended within `_STOP_GRACE_S` runs `cleanup` (the sandbox's workers and the upstreams
    disposed of) and ends the process at once, quietly, with status 0."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    handled = []

    def stopping() -> None:  # the runs it cuts are the gateway's, not their clients' (148)
        gateway.stopping = True
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stopping)
            handled.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            pass
    task = asyncio.ensure_future(serving)
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=_STOP_GRACE_S)
        if not done:  # blocked on stdin: nothing else left to wait for
            with contextlib.suppress(Exception):
                await asyncio.wait_for(cleanup(), _CLEANUP_S)
            sys.stderr.flush()
            os._exit(0)
        with contextlib.suppress(asyncio.CancelledError):
            await task
        for signum in handled:
            loop.remove_signal_handler(signum)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m mcp_code_mode.executor_server [--transport http --port N] [--config FILE]`."""
    parser = argparse.ArgumentParser(prog="python -m mcp_code_mode.executor_server")
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), stream=sys.stderr)
    try:
        asyncio.run(
            serve(
                Settings.load(args.config),
                config_path=args.config,
                transport=args.transport,
                host=args.host,
                port=args.port,
            )
        )
    except CodeModeError as exc:
        print(f"mcp-code-mode: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

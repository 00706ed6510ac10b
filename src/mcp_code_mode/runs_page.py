"""Serving the runs page (contract §10): `GET /runs` and `GET /runs/<id>` over the run store.

`runs_app` is the ASGI app: the list newest first (filters `outcome=ok|failed` and `client`,
older pages by `before=<epoch s>&after=<the last run shown>`) and one run's page, as
`runs.page` renders them, read on a worker thread. `http_serving` mounts it behind the MCP
endpoint's token and Host/Origin checks; `serve_ui` serves it on 127.0.0.1 for
`mcp-code-mode ui`, to requests whose `Host` names that port on a loopback name
(DNS-rebinding protection). What this does not do: authenticate (its caller puts it behind a
token), or write to the store.
"""

from __future__ import annotations

import logging
import math
import socket
import sys
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlencode

import uvicorn
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import CodeModeError
from .runs import (
    RunRecord,
    RunStoreBackend,
    RunStoreError,
    RunSummary,
    open_backend,
    store_location,
)
from .runs.page import PAGE_HEADERS, PAGE_SIZE, render_list, render_missing, render_run
from .settings import Settings

__all__ = ["RunReader", "runs_app", "runs_reader", "serve_ui"]

logger = logging.getLogger(__name__)


class RunReader(Protocol):
    """Where the page reads runs (`SQLiteRunBackend`, `RunStore`)."""

    def list_runs(
        self,
        last: int,
        *,
        ok: bool | None,
        client: str | None,
        before: float | None,
        before_id: str | None = None,
    ) -> list[RunSummary]: ...
    def get(self, run_id: str) -> RunRecord | None: ...


def runs_reader(settings: Settings) -> RunStoreBackend:
    """The store the gateway records into with these settings (MCP_CODE_RUNS_DB: a SQLite
    file or a PostgreSQL URL, else runs.sqlite3 in the cache folder), for reading."""
    return open_backend(store_location(settings.runs_db, settings.cache_dir))


def runs_app(reader: RunReader) -> ASGIApp:
    """`GET /runs` and `GET /runs/<id>` over `reader` (see module); no authentication."""

    def list_page(request: Request) -> Response:
        params = request.query_params
        ok = {"ok": True, "failed": False}.get(params.get("outcome", ""))
        client = params.get("client", "")[:1_000] or None
        before, after = _epoch(params.get("before", "")), params.get("after", "")[:200] or None
        runs = reader.list_runs(PAGE_SIZE + 1, ok=ok, client=client, before=before, before_id=after)
        older = None
        if len(runs) > PAGE_SIZE:  # the page after its last run (runs may share a start time)
            last = runs[PAGE_SIZE - 1]
            query = {"outcome": params.get("outcome", ""), "client": client or ""}
            query = {k: v for k, v in query.items() if v}
            older = urlencode({**query, "before": repr(float(last.started)), "after": last.id})
        return _html(render_list(runs, ok=ok, client=client, older=older))

    def run_page(request: Request) -> Response:
        run_id = str(request.path_params["run_id"])
        if not run_id:
            return RedirectResponse("/runs")
        run = reader.get(run_id)
        if run is None:
            return _html(render_missing(run_id), 404)
        return _html(render_run(run))

    routes = [
        Route("/runs", _reading(list_page), methods=["GET"]),
        Route("/runs/{run_id:path}", _reading(run_page), methods=["GET"]),
    ]
    return Router(routes)


def _reading(page: Callable[[Request], Response]) -> Callable[[Request], Response]:
    """`page`, answering 503 when the store cannot be read (the details go to the log)."""

    def guarded(request: Request) -> Response:  # sync: Starlette runs it on a thread
        try:
            return page(request)
        except RunStoreError as exc:
            logger.warning("runs page: %s", exc)
            return PlainTextResponse("the run store cannot be read", 503, headers=PAGE_HEADERS)

    return guarded


def _html(text: str, status: int = 200) -> Response:
    return HTMLResponse(text, status, headers=PAGE_HEADERS)


def _epoch(text: str) -> float | None:
    try:
        value = float(text[:64])
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class _LoopbackOnly:
    """Requests whose one `Host` is this port on a loopback name (DNS-rebinding protection)."""

    def __init__(self, app: ASGIApp, port: int) -> None:
        self._app = app
        self._hosts = {f"{name}:{port}".encode() for name in ("127.0.0.1", "localhost")}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            hosts = [value for name, value in scope["headers"] if name.lower() == b"host"]
            if len(hosts) != 1 or hosts[0].lower() not in self._hosts:
                await PlainTextResponse("unknown Host", 421)(scope, receive, send)
                return
            if scope["path"] == "/":
                await RedirectResponse("/runs")(scope, receive, send)
                return
        await self._app(scope, receive, send)


async def serve_ui(reader: RunReader, *, port: int) -> None:
    """Serve the runs page on 127.0.0.1:`port` (0: a free one) until interrupted; the URL is
    printed on stderr.

    Raises:
        CodeModeError: the port cannot be bound.
    """
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError as exc:
        raise CodeModeError(f"cannot listen on 127.0.0.1:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except (OSError, OverflowError) as exc:
        sock.close()
        raise CodeModeError(f"cannot listen on 127.0.0.1:{port}: {exc}") from None
    bound = sock.getsockname()[1]
    print(f"mcp-code-mode: runs page at http://127.0.0.1:{bound}/runs", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        _LoopbackOnly(runs_app(reader), bound),
        lifespan="off",
        log_level="warning",
        server_header=False,
    )
    await uvicorn.Server(config).serve(sockets=[sock])

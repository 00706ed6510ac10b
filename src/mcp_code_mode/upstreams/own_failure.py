"""`OwnFailure`: an HTTP upstream's transport whose failures stay with the POST they hit.

The MCP SDK fails every request in flight when one POST's connection fails (see the class);
here that POST's request alone fails, and `errors` asks once more before it calls the
upstream's transport dead.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx2
import mcp_types

from .http_limit import SMALL_BODY, request_head

__all__ = ["LINK_FAILED", "OwnFailure", "ReplyCut", "own_failures", "post_body"]

logger = logging.getLogger(__name__)

# How a POST that failed on the wire is answered (`_OwnFailure`); `errors` reads it as the
# SDK's "Connection closed": a dead transport only once one more request fails too.
LINK_FAILED = "Connection closed: the HTTP request failed"


def own_failures(http: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """`http` with each transport httpx built for it (its proxies from the environment
    kept) wrapped in `OwnFailure`."""
    http._transport = OwnFailure(http._transport)
    http._mounts = {k: v if v is None else OwnFailure(v) for k, v in http._mounts.items()}
    return http


class OwnFailure(httpx2.AsyncBaseTransport):
    """A transport whose failures stay with the POST they happened to.

    The MCP SDK runs every request's POST in one task group with the session's writer
    (`mcp/client/streamable_http.py`: `_run_request_post`, `post_writer`) and catches no
    transport error around `stream_within_origin`, nor anything but `StreamError` around a
    JSON body's read: one POST's `ReadError` (a keep-alive connection the upstream closed
    as it was reused) cancelled the task group, the session ended, and every call in
    flight failed with "Connection closed" (outside attack 143). Here a request's POST
    that fails is answered with a JSON-RPC error for its id (a timeout as the SDK's
    timeout, anything else as `LINK_FAILED`, which one more request confirms or
    not); a POST that carries no request (a notification, an answer) as `202 Accepted`
    (but one that timed out still ends the session, see `_failed_post`);
    a JSON body cut off while it is read fails as a `StreamError`, which the SDK answers
    for that request. A GET (the server's stream) is left to the SDK, which retries it.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not _streamable(request):  # an SSE, an OAuth POST
            return await self._inner.handle_async_request(request)
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            return _failed_post(request, exc)
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind != "text/event-stream" and isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _CutBody(response.stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class ReplyCut(httpx2.StreamError):
    """The connection failed while a JSON reply was read (that request fails alone)."""


class _CutBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> Any:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx2.TransportError as exc:
            raise ReplyCut(f"{LINK_FAILED} while the reply was read ({_said(exc)})") from None

    async def aclose(self) -> None:
        await self._inner.aclose()


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


def _streamable(request: httpx2.Request) -> bool:
    """A streamable-HTTP MCP POST: it accepts both JSON and an event stream (the spec's
    must). A legacy SSE transport ignores a POST's answer; an OAuth token refresh would
    drop its tokens on a made-up one (review 145): theirs fail as before."""
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/event-stream" in accept


def _failed_post(request: httpx2.Request, exc: httpx2.TransportError) -> httpx2.Response:
    """The HTTP answer that stands for a POST that failed (see `OwnFailure`)."""
    body = post_body(request)
    head = request_head(body)
    if head is None:  # a notification or an answer of ours (small: a big body is a call)
        if isinstance(exc, httpx2.TimeoutException) or len(body) > SMALL_BODY:
            # not taken in `_ANSWER_WAIT_S`: the upstream blocks the SDK's writes, which go
            # one after another; the session ends and the next call connects (attack 120)
            raise exc
        logger.debug("a POST that carried no request failed: %s", _said(exc))
        return httpx2.Response(202, request=request)
    if isinstance(exc, httpx2.TimeoutException):
        error = {"code": mcp_types.REQUEST_TIMEOUT, "message": f"{_said(exc)}: timed out"}
    else:
        error = {"code": mcp_types.CONNECTION_CLOSED, "message": f"{LINK_FAILED} ({_said(exc)})"}
    body = json.dumps({"jsonrpc": "2.0", "id": head[0], "error": error}).encode()
    return httpx2.Response(
        200, headers={"content-type": "application/json"}, content=body, request=request
    )


def post_body(request: httpx2.Request) -> bytes:
    """A POST's body (empty for other methods, and for a streamed body the SDK never sends)."""
    try:
        return request.content if request.method == "POST" else b""
    except httpx2.RequestNotRead:
        return b""

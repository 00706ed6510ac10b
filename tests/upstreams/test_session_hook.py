"""`refuses_session`: which HTTP answers mean the upstream forgot our session.

Real httpx responses, as the MCP SDK's client receives them. A wrong "yes" resends a call
the upstream already ran and drops a good session; a wrong "no" leaves a dead session.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx2
import pytest

from mcp_code_mode.upstreams.client import refuses_session

URL = "http://127.0.0.1:1/mcp"
SESSION = {"mcp-session-id": "abc"}


def _error(message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "error": {"code": -32000, "message": message}}).encode()


def _response(
    status: int, body: bytes = b"", *, method: str = "POST", session: bool = True
) -> httpx2.Response:
    request = httpx2.Request(method, URL, headers=SESSION if session else {})
    return httpx2.Response(status, content=body, request=request)


@pytest.mark.parametrize(
    ("response", "gone"),
    [
        (_response(404), True),
        (
            _response(400, _error("Bad Request: No valid session ID provided")),
            True,
        ),  # server-everything
        (_response(400, _error("Session not found")), True),
        (_response(400, _error("Invalid params: session_name is required")), False),
        (_response(400, _error("bad request")), False),
        (_response(400, b"not json"), False),
        (_response(500, _error("No valid session ID provided")), False),
        (_response(200, b"{}"), False),
        (_response(404, method="GET"), False),  # no server-to-client stream offered
        (_response(404, method="DELETE"), False),
        (_response(404, session=False), False),  # no session to lose
        (_response(400, _error("No valid session " + "x" * 5000)), False),  # too long to read
    ],
)
async def test_refuses_session(response: httpx2.Response, gone: bool) -> None:
    assert await refuses_session(response) is gone


async def test_an_endless_body_is_not_read() -> None:
    reads = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal reads
        while True:
            reads += 1
            yield b"session " * 1000

    request = httpx2.Request("POST", URL, headers=SESSION)
    response = httpx2.Response(400, content=endless(), request=request)  # chunked: no length
    assert await refuses_session(response) is False
    assert reads == 0

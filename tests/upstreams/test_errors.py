"""`classify`: every exception class a transport can raise, mapped once; timeouts first."""

from __future__ import annotations

import anyio
import httpx2
import mcp_types
import pytest
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from mcp_code_mode.upstreams.errors import FailureKind, classify

TIMEOUT, TRANSPORT, SESSION_GONE = (
    FailureKind.TIMEOUT,
    FailureKind.TRANSPORT,
    FailureKind.SESSION_GONE,
)
REPLY, MALFORMED, OTHER = FailureKind.ERROR_REPLY, FailureKind.MALFORMED, FailureKind.OTHER
_REQUEST = httpx2.Request("POST", "http://127.0.0.1:1/mcp")


class _Shape(BaseModel):
    n: int


def _validation_error() -> ValidationError:
    try:
        _Shape.model_validate({"n": "not a number"})
    except ValidationError as exc:
        return exc
    raise AssertionError("unreachable")


CASES: list[tuple[str, BaseException, FailureKind]] = [
    # Slow is not dead: every timeout first, whatever else it is (TimeoutError is an
    # OSError in 3.11; httpx's timeouts are TransportErrors).
    ("TimeoutError", TimeoutError(), TIMEOUT),
    ("httpx ReadTimeout", httpx2.ReadTimeout("read", request=_REQUEST), TIMEOUT),
    ("httpx ConnectTimeout", httpx2.ConnectTimeout("connect", request=_REQUEST), TIMEOUT),
    ("httpx WriteTimeout", httpx2.WriteTimeout("write", request=_REQUEST), TIMEOUT),
    ("httpx PoolTimeout", httpx2.PoolTimeout("pool", request=_REQUEST), TIMEOUT),
    (
        "SDK request timeout",
        MCPError(mcp_types.REQUEST_TIMEOUT, "Request 'tools/call' timed out"),
        TIMEOUT,
    ),
    ("grouped timeout", ExceptionGroup("g", [TimeoutError()]), TIMEOUT),
    # A dead transport.
    ("OSError", OSError("boom"), TRANSPORT),
    ("ConnectionRefusedError", ConnectionRefusedError(111, "refused"), TRANSPORT),
    ("ConnectionResetError", ConnectionResetError(104, "reset"), TRANSPORT),
    ("BrokenPipeError", BrokenPipeError(32, "pipe"), TRANSPORT),
    ("EOFError", EOFError(), TRANSPORT),
    ("anyio ClosedResourceError", anyio.ClosedResourceError(), TRANSPORT),
    ("anyio BrokenResourceError", anyio.BrokenResourceError(), TRANSPORT),
    ("anyio EndOfStream", anyio.EndOfStream(), TRANSPORT),
    ("httpx ConnectError", httpx2.ConnectError("refused", request=_REQUEST), TRANSPORT),
    ("httpx ReadError", httpx2.ReadError("reset", request=_REQUEST), TRANSPORT),
    ("httpx RemoteProtocolError", httpx2.RemoteProtocolError("eof", request=_REQUEST), TRANSPORT),
    (
        "SDK connection closed",
        MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed"),
        TRANSPORT,
    ),
    (
        "SDK SSE stream ended",
        MCPError(-32000, "SSE stream ended and reconnection attempts were exhausted"),
        TRANSPORT,
    ),
    ("grouped transport", BaseExceptionGroup("g", [anyio.EndOfStream()]), TRANSPORT),
    (  # fastmcp's client after its session ended (its text once reached guest code)
        "fastmcp client not connected",
        RuntimeError(
            "Client is not connected. Use the 'async with client:' context manager first."
        ),
        TRANSPORT,
    ),
    # An answer, however unwelcome: that request fails, the connection stays.
    ("upstream's own -32000", MCPError(-32000, "quota exceeded"), REPLY),
    ("invalid params", MCPError(mcp_types.INVALID_PARAMS, "bad args"), REPLY),
    ("a server's -32001", MCPError(mcp_types.REQUEST_TIMEOUT, "Session not found"), REPLY),
    ("unreadable error body", MCPError(-32603, "Server returned an error response"), REPLY),
    ("malformed reply", _validation_error(), MALFORMED),
    ("anything else", RuntimeError("odd"), OTHER),
    ("a ValueError", ValueError("odd"), OTHER),
]


@pytest.mark.parametrize(("exc", "kind"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_classify(exc: BaseException, kind: FailureKind) -> None:
    failure = classify(exc)
    assert failure.kind is kind
    assert failure.connection_lost is (kind is TRANSPORT)
    assert failure.message and "async with" not in failure.message


@pytest.mark.parametrize(
    "exc",
    [
        MCPError(-32603, "Server returned an error response"),
        MCPError(-32000, "Bad Request: No valid session ID provided"),
        MCPError(-32001, "Session not found"),
    ],
)
def test_a_refused_session_is_a_lost_session(exc: MCPError) -> None:
    failure = classify(exc, session_gone=True)
    assert failure.kind is SESSION_GONE and failure.connection_lost


def test_a_timeout_stays_a_timeout_even_when_the_session_is_gone() -> None:
    assert classify(TimeoutError(), session_gone=True).kind is TIMEOUT
    assert classify(httpx2.ReadTimeout("x", request=_REQUEST), session_gone=True).kind is TIMEOUT


def test_malformed_message_names_the_field_without_input() -> None:
    message = classify(_validation_error()).message
    assert "n:" in message and "not a number" not in message


def test_closure_in_words_only_is_unconfirmed() -> None:
    """An upstream can reply with the SDK's words for a closed connection (and echo a
    guest's text in them): such a failure is checked with one more request first."""
    assert classify(MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed")).unconfirmed
    assert not classify(anyio.EndOfStream()).unconfirmed
    assert not classify(OSError("gone")).unconfirmed

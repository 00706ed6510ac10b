"""What a failed upstream request means: fastmcp, MCP SDK, HTTP and OS errors mapped once.

`classify` is the only place that looks at a foreign exception's class. Its order is
the contract (§6, §7): a timeout is checked first and is never a dead transport, although
Python 3.11's `TimeoutError` is an `OSError` and httpx's timeouts are `TransportError`s.
A slow upstream is left alone; only a dead transport (process exited, socket closed or
refused, end of stream, connection closed) or a session the upstream no longer knows
makes the connection reconnect.

Imported with the client stack (`client.py`), never before an upstream is reached.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import anyio
import httpx2
import mcp_types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from .framing import refusal

__all__ = ["Failure", "FailureKind", "classify", "describe"]


class FailureKind(Enum):
    """What a failed request says about its connection."""

    TIMEOUT = "timeout"  # no answer in time: the request is cancelled, the connection kept
    TRANSPORT = "transport"  # the connection is gone: reconnect
    SESSION_GONE = "session_gone"  # the HTTP upstream forgot our session: new session, resend
    MALFORMED = "malformed"  # the reply broke the protocol's schema: this request fails
    ERROR_REPLY = "error_reply"  # the upstream answered with an error: an answer all the same
    TOO_LARGE = "too_large"  # the reply was bigger than the limit: cut off, this request fails
    OTHER = "other"  # anything else fails this request only


@dataclass(frozen=True, slots=True)
class Failure:
    kind: FailureKind
    message: str  # for a person: what happened, without our stack
    # Inferred from an error's words, which an upstream can also send as a reply (and put
    # a guest's text in): one more request tells whether the connection is really gone.
    unconfirmed: bool = False

    @property
    def connection_lost(self) -> bool:
        return self.kind in (FailureKind.TRANSPORT, FailureKind.SESSION_GONE)


# What a dead transport raises (timeouts are taken out first): the process or socket is gone.
_TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    BrokenPipeError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx2.TransportError,
)


# What the MCP SDK says, with code CONNECTION_CLOSED, when it ends a request itself.
_SDK_CLOSED_MESSAGES = ("Connection closed", "SSE stream ended")


_CLIENT_NOT_CONNECTED = "Client is not connected."


def classify(exc: BaseException, *, session_gone: bool = False) -> Failure:
    """What `exc`, raised by a request to an upstream, means for its connection.

    Args:
        session_gone: the HTTP layer saw the upstream refuse our session id (an HTTP 404,
            or the 400 "no valid session" some servers send after a restart).
    """
    exc = _innermost(exc)
    if _timed_out(exc):
        return Failure(FailureKind.TIMEOUT, "timed out")
    if session_gone and isinstance(exc, MCPError):
        return Failure(FailureKind.SESSION_GONE, "the upstream no longer knows our session")
    if isinstance(exc, _TRANSPORT_ERRORS):
        return Failure(FailureKind.TRANSPORT, f"connection lost: {describe(exc)}")
    if _closed(exc):
        return Failure(FailureKind.TRANSPORT, f"connection lost: {describe(exc)}", True)
    if isinstance(exc, RuntimeError) and str(exc).startswith(_CLIENT_NOT_CONNECTED):
        # fastmcp's word, for a programmer, that our client's session ended (attack 135)
        return Failure(FailureKind.TRANSPORT, "connection lost: the connection closed")
    if isinstance(exc, ValidationError):
        return Failure(FailureKind.MALFORMED, f"the upstream sent a malformed reply: {_first(exc)}")
    if isinstance(exc, MCPError):
        refused = refusal(exc.message)
        if refused is not None:  # our transports' answer for the request (`framing`)
            return Failure(FailureKind.TOO_LARGE, refused)
        return Failure(FailureKind.ERROR_REPLY, exc.message)
    return Failure(FailureKind.OTHER, f"the call failed ({type(exc).__name__}: {describe(exc)})")


def describe(exc: BaseException) -> str:
    """A one-line account of `exc` (the first of a group)."""
    exc = _innermost(exc)
    if isinstance(exc, MCPError):
        return exc.message
    return str(exc).strip() or type(exc).__name__


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio task groups wrap what they raise)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _timed_out(exc: BaseException) -> bool:
    """A request that got no answer in time. The SDK's own timeout is an MCPError with
    code -32001 ("Request 'x' timed out"); servers also send -32001 for other things
    ("Session not found"), which are answers."""
    return isinstance(exc, TimeoutError | httpx2.TimeoutException) or (
        isinstance(exc, MCPError)
        and exc.code == mcp_types.REQUEST_TIMEOUT
        and exc.message.endswith("timed out")
    )


def _closed(exc: BaseException) -> bool:
    """The MCP SDK's own word that the connection ended. -32000 is also the first code of
    JSON-RPC's server-error range, which upstreams use for their own errors: only the
    SDK's messages mean the connection is gone."""
    return (
        isinstance(exc, MCPError)
        and exc.code == mcp_types.CONNECTION_CLOSED
        and exc.message.startswith(_SDK_CLOSED_MESSAGES)
    )


def _first(exc: ValidationError) -> str:
    """The first problem pydantic found, without its URLs and input dumps."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return str(exc).splitlines()[0]
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "result"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"

"""The fastmcp side of one upstream connection: its client, its HTTP stack, and what its
failures mean.

`mcp_manager` imports this module when it first connects to an upstream, not before:
fastmcp's client stack (and with it the MCP SDK) takes more time to import than a run
that reaches no upstream takes in all (`mcp-code-mode exec --code "1+1"`).
"""

from __future__ import annotations

import functools
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types
from fastmcp import Client
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import ClientTransport, StdioTransport, StreamableHttpTransport
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from . import __version__

__all__ = [
    "Link",
    "close",
    "describe",
    "failure_message",
    "is_modern",
    "new_client",
    "refused_for_session",
    "session_ended",
    "timed_out",
    "transport_failed",
]

logger = logging.getLogger(__name__)

_CLIENT_INFO = mcp_types.Implementation(name="mcp-code-mode", version=__version__)
# What a dead transport raises (beside an MCP "connection closed" error): the process or
# socket is gone. Anything else is a problem with one message, not with the connection.
_TRANSPORT_ERRORS = (
    OSError,
    EOFError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx2.TransportError,
)


@dataclass(slots=True, eq=False)
class Link:
    """One connection attempt's client, and what its HTTP traffic revealed about it."""

    client: Client[Any] = field(init=False)  # set right after the client is built
    session_gone: bool = False  # an HTTP 404 answered a request that carried our session id


def new_client(
    transport: ClientTransport,
    link: Link,
    *,
    name: str,
    timeout_s: float,
    startup_timeout_s: float,
    on_tools_changed: Callable[[], None],
    on_session_gone: Callable[[], None],
) -> Client[Any]:
    """A client for `transport`, not yet connected, set as `link.client`.

    `on_tools_changed`: the upstream sent tools/list_changed. `on_session_gone`: an HTTP
    upstream answered 404 for our session id (`link.session_gone` is set first).
    """
    if isinstance(transport, StreamableHttpTransport):  # before it connects
        transport.httpx_client_factory = _http_client_factory(link, on_session_gone)
    link.client = Client(
        transport,
        timeout=timeout_s,
        init_timeout=startup_timeout_s,
        client_info=_CLIENT_INFO,
        message_handler=_Notifications(on_tools_changed, name),
    )
    return link.client


def is_modern(client: Client[Any]) -> bool:
    """Whether the connection speaks a 2026-07-28 protocol version (no ping, no session)."""
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


def failure_message(exc: Exception, *, timeout_s: float) -> str:
    """What a failed request means, for a request whose connection is still there."""
    if timed_out(exc):
        return f"timed out after {timeout_s:g}s; the call was cancelled upstream"
    if isinstance(exc, ValidationError):
        return f"the upstream sent a malformed reply: {_summarise(exc)}"
    if isinstance(exc, MCPError):
        return exc.message
    return f"the call failed ({type(exc).__name__}: {describe(exc)})"


def session_ended(client: Client[Any]) -> bool:
    """Whether the client's connection is gone, though nobody has called it since."""
    if not client.is_connected():
        return True
    # When a stdio upstream's process exits, the fastmcp 4.1.2 client still says it is
    # connected (its session only learns on the next request); fastmcp itself asks the
    # transport's `_is_session_dead` (the SDK dispatcher has closed) before reusing one.
    transport = client.transport
    return isinstance(transport, StdioTransport) and transport._is_session_dead()


def transport_failed(link: Link, exc: Exception) -> bool:
    """Whether a failed request means the connection itself is gone."""
    return (
        isinstance(exc, _TRANSPORT_ERRORS)
        or (isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED)
        or session_ended(link.client)
    )


def refused_for_session(link: Link, exc: Exception) -> bool:
    """Whether a failed call was refused only because its HTTP session was gone (so unsent)."""
    return link.session_gone and isinstance(exc, MCPError) and not timed_out(exc)


def timed_out(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or (
        isinstance(exc, MCPError) and exc.code == mcp_types.REQUEST_TIMEOUT
    )


async def close(client: Client[Any]) -> None:
    try:
        await client.close()  # type: ignore[no-untyped-call]
    except Exception as exc:  # teardown of a broken transport must not stop the others
        logger.debug("error while closing upstream client: %s", exc)


def describe(exc: BaseException) -> str:
    if isinstance(exc, ExceptionGroup) and exc.exceptions:
        return describe(exc.exceptions[0])
    if isinstance(exc, MCPError):
        return exc.message
    return str(exc).strip() or type(exc).__name__


class _Notifications(MessageHandler):
    """What an upstream tells us unasked: `tools/list_changed` asks for a refresh."""

    def __init__(self, on_tools_changed: Callable[[], None], name: str) -> None:
        self._on_tools_changed = on_tools_changed
        self._name = name

    async def on_tool_list_changed(self, message: mcp_types.ToolListChangedNotification) -> None:
        self._on_tools_changed()

    async def on_exception(self, message: Exception) -> None:
        # e.g. a line on stdout that is not JSON-RPC; the call it spoiled times out alone.
        logger.debug("upstream %s sent something unreadable: %s", self._name, message)


def _http_client_factory(
    link: Link, on_session_gone: Callable[[], None]
) -> Callable[..., httpx2.AsyncClient]:  # an mcp `McpHttpClientFactory`
    """httpx clients for a streamable HTTP upstream: the SDK's default, with three changes.

    - No read timeout. The SDK sets the HTTP read timeout to the MCP request timeout,
      so a slow call's HTTP read can fail first, which kills the whole session (the
      next call then fails at once; mcp 2.x under fastmcp 4.1.2). Every MCP request
      has its own timeout, whose expiry cancels the call upstream and keeps the
      session; an idle server-to-client stream is not an error.
    - One TLS context for every client: httpx builds one per client otherwise, which
      costs 0.1-0.3 s of every reconnect.
    - A response hook that records an HTTP 404 for a request that carried our session
      id: the upstream no longer knows the session. The SDK reports it only as an
      error reply ("Session terminated", or the upstream's own JSON-RPC error body),
      and fastmcp 4.1.2 does not start a new session, although the spec says a
      client must.
    """

    async def on_response(response: httpx2.Response) -> None:
        if response.status_code == 404 and response.request.headers.get("mcp-session-id"):
            link.session_gone = True
            on_session_gone()

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
        follow_redirects: bool = True,  # fastmcp passes it; the SDK follows redirects itself
    ) -> httpx2.AsyncClient:
        del timeout, follow_redirects  # as mcp's `create_mcp_http_client`, but see above
        return httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(30.0, read=None),
            auth=auth,
            verify=_ssl_context(),
            event_hooks={"response": [on_response]},
        )

    return factory


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Made once per process: 0.1-0.3 s each time."""
    return httpx2.create_ssl_context()


def _summarise(exc: ValidationError) -> str:
    """The first problem pydantic found, without its URLs and input dumps."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return str(exc).splitlines()[0]
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "result"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"

"""The fastmcp side of one upstream connection: its client, its HTTP stack, and what its
failures mean.

`connection` imports this module when it first connects to an upstream, not before:
fastmcp's client stack (and with it the MCP SDK) takes more time to import than a run
that reaches no upstream takes in all (`mcp-code-mode exec --code "1+1"`).
"""

from __future__ import annotations

import functools
import json
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
from fastmcp.client.transports import ClientTransport, SSETransport, StdioTransport
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..encodable import make_encodable
from .asks import AskBudget
from .call_streams import CallStreams
from .http_limit import IDENTITY, OtherReply, bound_response, request_head
from .own_failure import own_failures, post_body
from .server_log import UpstreamLog, quiet_sdk_logs
from .stdio import OTHER_REPLY_BYTES, BoundedStdioTransport

__all__ = [
    "Link",
    "Unauthorized",
    "bounded",
    "check_alive",
    "close",
    "http_client_factory",
    "is_modern",
    "new_client",
    "refuses_session",
    "session_ended",
    "skip_result_validation",
]

logger = logging.getLogger(__name__)

_SESSION_ERROR_BYTES = 4096  # of a 400 body, read to see whether it names the session
_SMALL_POST_BYTES = 65536  # a POST read to see whether it carries a request of ours
_ANSWER_WAIT_S = 10.0  # for the HTTP answer to a POST that carries no request
# Under the 5 s after which uvicorn, Node and most servers close an idle connection
# (httpx's default is 5 s too: a connection reused as the server closed it failed).
_KEEPALIVE_S = 2.0
# What servers say in a 400 for a session id they do not know (lower case).
_SESSION_GONE = ("no valid session", "session not found", "invalid session", "unknown session")
_CLIENT_INFO = mcp_types.Implementation(name="mcp-code-mode", version=__version__)


_NOT_A_CALL = "mcp_code_mode_not_a_call"  # a request extension: the POST is not tools/call
_MAX_PAGES = 1000  # of one tools/list: tiny pages cost the gateway a round trip each


@dataclass(slots=True, eq=False)
class Link:
    """One connection attempt's client, and what its HTTP traffic revealed about it."""

    client: Client[Any] = field(init=False)  # set right after the client is built
    session_gone: bool = False  # an HTTP 404 answered a request that carried our session id
    # the event streams of requests in flight (HTTP): a cancelled call's end
    streams: CallStreams = field(default_factory=CallStreams)
    listing_bytes: int = OTHER_REPLY_BYTES  # a whole tools/list, however paged
    other_bytes: int = 0  # of the replies that were not a call's, as they came on the wire
    asks: AskBudget = field(default_factory=AskBudget)  # the upstream's own requests taken
    refused: str | None = None  # "HTTP 401 Unauthorized": a reply that refused our credentials

    def count_other(self, size: int) -> None:
        self.other_bytes += size

    def note_refusal(self, status: int, reason: str) -> None:
        """An HTTP reply's status: a 401 or 403 is kept (the SDK says "an error response")."""
        if status in (401, 403):
            self.refused = f"HTTP {status} {reason}".strip()


def _encodable(page: mcp_types.ListToolsResult) -> tuple[mcp_types.ListToolsResult, int]:
    """`page` and its size as JSON; text UTF-8 cannot encode (a lone surrogate in a
    property's name) as U+FFFD: such an upstream never started (outside attack 140)."""
    try:
        return page, len(page.model_dump_json(by_alias=True, exclude_none=True))
    except ValueError:  # pydantic's serialisation error: UnicodeEncodeError inside
        plain = make_encodable(page.model_dump(by_alias=True, exclude_none=True))
        page = mcp_types.ListToolsResult.model_validate(plain)
        return page, len(page.model_dump_json(by_alias=True, exclude_none=True))


class Unauthorized(Exception):
    """An HTTP upstream refused our credentials while we connected: said as such (it was
    "Server returned an error response": a new user's first hour, attack 149)."""

    def __init__(self, refused: str) -> None:
        super().__init__(
            f"the upstream answered {refused}: check the entry's headers (its token or key)"
        )


class ListingTooLarge(Exception):
    """An upstream's tools/list, its pages together, is bigger than one reply may be."""


async def list_all_tools(link: Link) -> list[mcp_types.Tool]:
    """Every page of the upstream's tools/list, the pages held together to the bound on one
    such reply (`link.listing_bytes`): 150 pages of 400 KB were 300,000 tools, 2.8 GB and a
    loop frozen for 28 s (attack 132). A cursor seen before ends it, as fastmcp's does."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    seen: set[str] = set()
    size, wire = 0, link.other_bytes  # the pages as parsed, and as they came (attack 134)
    for _ in range(_MAX_PAGES):
        page, page_size = _encodable(await link.client.list_tools_mcp(cursor=cursor))
        size += page_size
        if max(size, link.other_bytes - wire) > link.listing_bytes:
            raise ListingTooLarge(
                f"its tools/list is bigger than {link.listing_bytes:,} bytes over "
                f"{len(seen) + 1} pages (a listing, its pages together, is bounded as one reply)"
            )
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None or cursor in seen:
            return tools
        seen.add(cursor)
    raise ListingTooLarge(f"its tools/list did not end within {_MAX_PAGES:,} pages")


def new_client(
    transport: ClientTransport,
    link: Link,
    *,
    log: UpstreamLog,
    on_tools_changed: Callable[[], None],
) -> Client[Any]:
    """A client for `transport`, not yet connected, set as `link.client`.

    `on_tools_changed`: the upstream sent tools/list_changed.
    """
    # No client-wide timeouts: a call passes its own, and start-up is bounded by the
    # connection's deadline, which extends while the upstream is still working on it
    # (a server with 10,000 tools may take minutes to answer `initialize`).
    quiet_sdk_logs()
    link.client = Client(
        transport,
        timeout=None,
        init_timeout=None,
        client_info=_CLIENT_INFO,
        message_handler=_Notifications(on_tools_changed, log.server),
        log_handler=log,
    )
    return link.client


def skip_result_validation(client: Client[Any]) -> None:
    """Stop the connected `client`'s MCP session from checking results against the tool's
    output schema: it ran jsonschema on the event loop with the upstream's schema, whose
    `pattern` backtracks exponentially (`^(a+)+$` on 27 characters: 11 s, every client
    frozen) and whose `uniqueItems` compares dicts pairwise (2,000 items: 8 s), outside
    attack 120; and it listed every tool again for a name it had not listed. The gateway
    passes results on as they came (contract §4); checking them is the upstream's part."""

    async def accept(name: str, result: mcp_types.CallToolResult) -> None:
        del name, result

    client.session.validate_tool_result = accept  # type: ignore[method-assign]


def bounded(
    transport: ClientTransport,
    *,
    max_result_bytes: int,
    http_client_factory: Callable[..., httpx2.AsyncClient],
    link: Link,
) -> ClientTransport:
    """`transport` with each reply of its upstream bounded at `max_result_bytes`.

    A stdio upstream is read by `BoundedStdioTransport`; an SSE upstream gets the httpx
    clients of `http_client_factory` (a streamable HTTP one already has them, from
    `to_transport`), whose responses `BoundedHTTPTransport` bounds.
    """
    if isinstance(transport, StdioTransport):
        return BoundedStdioTransport(
            transport, max_line_bytes=max_result_bytes, on_other_bytes=link.count_other
        )
    if isinstance(transport, SSETransport) and transport.httpx_client_factory is None:
        transport.httpx_client_factory = http_client_factory
    return transport


def is_modern(client: Client[Any]) -> bool:
    """Whether the connection speaks a 2026-07-28 protocol version (no ping, no session)."""
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


def session_ended(client: Client[Any]) -> bool:
    """Whether the client's connection is gone, though nobody has called it since."""
    return not client.is_connected()


async def check_alive(client: Client[Any], *, timeout_s: float) -> None:
    """One request whose cost does not grow with the catalog: `ping`, or on a 2026-07-28
    connection (which has no ping) `server/discover`. Raises what the request raised."""
    with anyio.fail_after(timeout_s):
        if is_modern(client):
            await client.session.send_discover(client.protocol_version or "")
        else:
            await client.ping()


async def close(client: Client[Any], *, exit_grace_s: float | None = None) -> None:
    """Close `client`; `exit_grace_s` shortens a stdio upstream's time to exit on its own
    before its process group is ended (a stop on a signal)."""
    if exit_grace_s is not None and isinstance(client.transport, BoundedStdioTransport):
        client.transport.exit_grace_s = exit_grace_s
    try:
        await client.close()  # type: ignore[no-untyped-call]
    except Exception as exc:  # teardown of a broken transport must not stop the others
        logger.debug("error while closing upstream client: %s", exc)


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


def http_client_factory(
    link: Link, on_session_gone: Callable[[], None], max_result_bytes: int
) -> Callable[..., httpx2.AsyncClient]:  # an mcp `McpHttpClientFactory`
    """httpx clients for an HTTP upstream: the SDK's default, with six changes.

    `on_session_gone` is called when the upstream no longer knows our session
    (`link.session_gone` is set first).

    - Each response body, or each line of an event stream, is bounded at
      `max_result_bytes` (`http_limit.bound_response`, asking for uncompressed bodies):
      a bigger reply fails its call and is not read into memory.

    - No read timeout. The SDK sets the HTTP read timeout to the MCP request timeout,
      so a slow call's HTTP read can fail first, which kills the whole session (the
      next call then fails at once; mcp 2.x under fastmcp 4.1.2). Every MCP request
      has its own timeout, whose expiry cancels the call upstream and keeps the
      session; an idle server-to-client stream is not an error.
    - One TLS context for every client: httpx builds one per client otherwise, which
      costs 0.1-0.3 s of every reconnect.
    - A response hook that records that the upstream no longer knows our session id
      (see `_refuses_session`). The SDK reports it only as an error reply ("Session
      terminated", or "Server returned an error response" for a body it cannot read),
      and fastmcp 4.1.2 does not start a new session, although the spec says a client
      must.
    - A request hook that ends the event stream of a call we cancel (it timed out): the
      SDK reads it for as long as the upstream keeps it open (outside attack 118).
    - One POST's failure fails its own request, never the session (`own_failures`), and
      idle connections are dropped before the upstream's server would close them.
    """

    hooks = _event_hooks(link, on_session_gone, max_result_bytes)

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
        follow_redirects: bool = True,  # fastmcp passes it; the SDK follows redirects itself
    ) -> httpx2.AsyncClient:
        del timeout, follow_redirects  # as mcp's `create_mcp_http_client`, but see above
        http = httpx2.AsyncClient(
            headers={**(headers or {}), **IDENTITY},
            timeout=httpx2.Timeout(30.0, read=None),
            limits=httpx2.Limits(keepalive_expiry=_KEEPALIVE_S),
            auth=auth,
            verify=_ssl_context(),
            event_hooks=hooks,
        )
        return own_failures(http)

    return factory


def _event_hooks(
    link: Link, on_session_gone: Callable[[], None], max_result_bytes: int
) -> dict[str, list[Callable[..., Any]]]:
    """httpx event hooks: each response bounded (its event stream kept under its request's
    id while it lasts), the session's end noticed, a cancelled call's stream ended."""

    other_limit = max(max_result_bytes, OTHER_REPLY_BYTES)  # a reply that is not a call's

    async def on_response(response: httpx2.Response) -> None:
        asked = response.request.extensions.get(_NOT_A_CALL)  # the id of a request, not a call
        other = None if asked is None else OtherReply(asked, other_limit, link.count_other)
        events = bound_response(response, max_result_bytes=max_result_bytes, other=other)
        if events is not None:
            events.asks = link.asks
            link.streams.adopt(events, response.request)
        link.note_refusal(response.status_code, response.reason_phrase)
        if await refuses_session(response):
            link.session_gone = True
            on_session_gone()

    async def on_request(request: httpx2.Request) -> None:
        message = _small_post(request)
        if message is None:  # a longer call's id and method are read at its head
            head = request_head(post_body(request))
            if head is not None and head[1] == "tools/call":
                link.streams.sent(head[0])
            return
        if "method" in message and "id" in message:  # a request of ours: a call's is timed
            if message["method"] == "tools/call":
                link.streams.sent(message["id"])
            else:  # its reply is bounded as a listing's, not as a result's
                request.extensions[_NOT_A_CALL] = message["id"]
        else:  # an answer or a notification: its HTTP answer is not waited for long
            request.extensions["timeout"] = httpx2.Timeout(_ANSWER_WAIT_S).as_dict()
        # the SDK keeps reading a cancelled request's stream while the upstream keeps it open
        cancelled = _cancelled_id(message)
        if cancelled is not None:
            await link.streams.cancel(cancelled)

    return {"request": [on_request], "response": [on_response]}


def _small_post(request: httpx2.Request) -> dict[str, Any] | None:
    """The JSON-RPC message a POST of at most `_SMALL_POST_BYTES` carries (calls' bodies may
    be megabytes: not read here). A POST that carries no request of ours (a notification, or
    our answer to a ping or a question of the upstream's) waits `_ANSWER_WAIT_S` for its HTTP
    answer: the SDK sends them one after another, and an upstream that never answered one
    blocked every later write, our cancels and calls included (attack 120)."""
    body = post_body(request)
    if not body or len(body) > _SMALL_POST_BYTES:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _cancelled_id(message: dict[str, Any]) -> int | str | None:
    """The id a `notifications/cancelled` names, if the message is one."""
    params = message.get("params")
    if message.get("method") != "notifications/cancelled" or not isinstance(params, dict):
        return None
    found = params.get("requestId")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


async def refuses_session(response: httpx2.Response) -> bool:
    """Whether the answer to a POST that carried our session id says the session is gone.

    The spec's answer is 404. Servers built on the TypeScript SDK's older examples (npm
    `@modelcontextprotocol/server-everything` among them) answer 400 with the JSON-RPC error
    "Bad Request: No valid session ID provided" instead; any other 400 is about the request.
    A GET (the optional server-to-client stream) is not asked: servers that do not offer it
    answer 404 too. Only a short body with a declared length is read (an endless one is
    the SDK's to refuse).
    """
    request = response.request
    if request.method != "POST" or not request.headers.get("mcp-session-id"):
        return False
    if response.status_code == 404:
        return True
    length = response.headers.get("content-length", "")
    if response.status_code != 400 or not length.isdigit() or int(length) > _SESSION_ERROR_BYTES:
        return False
    try:
        message = json.loads(await response.aread())["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(message, str) and any(p in message.lower() for p in _SESSION_GONE)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Made once per process: 0.1-0.3 s each time."""
    return httpx2.create_ssl_context()

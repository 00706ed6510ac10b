"""What an HTTP upstream sends in one reply, bounded while it is read.

`bound_response`, called from a response hook of the httpx client that the MCP SDK uses
for a streamable HTTP or SSE upstream (`client.http_client_factory`), wraps each
response's byte stream before the SDK reads it:

- a JSON body (anything that is not an event stream) over the limit fails while it is
  read (or before, when its declared length says so) with `ResultTooLarge`, an
  `httpx.StreamError`: the SDK answers the request it belongs to with a JSON-RPC error
  carrying our message; the session stays up;
- an event stream (SSE) is bounded line by line, never as a whole (it may stay open for
  hours): a line over the limit is cut off while it is read and replaced by a `data:`
  line holding a JSON-RPC error reply for the id found in its first or last few KB (or
  the id of the request the response answers). The MCP SDK itself refuses an SSE event
  over 1 MiB (httpx's default; on the legacy SSE transport that ends the connection), so
  event lines are cut at that size when it is below `MCP_CODE_MAX_RESULT_BYTES`, with a
  message that says so.

A body the upstream compresses although we ask for `identity` is inflated here, a bounded
piece at a time, and counted inflated (gzip and deflate; any other coding is refused as
unreadable): a few KB of gzip cannot become gigabytes in the SDK's decoder.

What it does not stop: an event made of many lines each under the limit (the SDK's own
1 MiB event limit applies); a body that never ends (its call times out).

A request's event stream ends when its call is abandoned (`BoundedEvents.abandon`, on the
`notifications/cancelled` we send when a call times out): the MCP SDK kept reading the
POST stream of a cancelled call for as long as the upstream kept it open, and 32 timed-out
calls to an upstream that trickled one endless line kept 33 connections and 80% of a core
busy for minutes (outside attack 118).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpx2

from .asks import AskBudget, unasked
from .framing import (
    HEAD_BYTES,
    RESULT_TOO_LARGE_CODE,
    LineSplitter,
    Oversized,
    reply_id,
    too_large_message,
)

__all__ = [
    "IDENTITY",
    "SDK_EVENT_BYTES",
    "SMALL_BODY",
    "BoundedEvents",
    "OtherReply",
    "ResultTooLarge",
    "bound_response",
    "request_head",
]

# What the MCP SDK's EventSource accepts in one SSE event (httpx2's default), less room
# for the event's other fields.
SDK_EVENT_BYTES = 1024 * 1024
_EVENT_ROOM = 1024
# Asked of every upstream, so the bytes counted are the bytes parsed.
IDENTITY = {"accept-encoding": "identity"}
_INFLATED_PIECE = 64 * 1024  # inflated at a time from a compressed body
_INFLATABLE = {
    "gzip": zlib.MAX_WBITS | 16,
    "x-gzip": zlib.MAX_WBITS | 16,
    "deflate": zlib.MAX_WBITS,
}


class ResultTooLarge(httpx2.StreamError):
    """An upstream's reply is bigger than `MCP_CODE_MAX_RESULT_BYTES`."""


@dataclass(frozen=True, slots=True)
class OtherReply:
    """The reply to a POST that is not `tools/call` (a listing, a ping): it may be `limit`
    bytes; a JSON body longer than a result may be must answer `request_id`; its size on
    the wire is told to `count`."""

    request_id: int | str
    limit: int
    count: Callable[[int], None]


def bound_response(
    response: httpx2.Response, *, max_result_bytes: int, other: OtherReply | None = None
) -> BoundedEvents | None:
    """Bound `response`'s body at `max_result_bytes` (a reply that is not a call's: at
    `other.limit`) before anyone reads it (see the module); an event stream's wrapper is
    returned.

    Call it from an httpx response hook: hooks run before a streamed body is read.
    """
    stream = response.stream
    if not isinstance(stream, httpx2.AsyncByteStream):  # already read, or a sync stream
        return None
    coding = response.headers.get("content-encoding", "").strip().lower()
    if coding not in ("", "identity"):
        stream = _Inflated(stream, coding)
        del response.headers["content-encoding"]  # inflated here: the client must not
    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    limit = max_result_bytes if other is None else other.limit
    if kind == "text/event-stream":
        # UTF-8, the only encoding of the SSE standard: the SDK reads what is read here
        # (a `charset=utf-7` stream spelt requests no byte check saw: attack 139)
        response.encoding = "utf-8"
        events = BoundedEvents(stream, response.request, limit)
        events.on_bytes = None if other is None else other.count
        response.stream = events
        return events
    declared = response.headers.get("content-length", "")
    size = int(declared) if declared.isdigit() else None
    response.stream = _BoundedBody(stream, limit, size)
    if other is not None:
        response.stream = _OwnReply(response.stream, max_result_bytes, other)
    return None


class _Inflated(httpx2.AsyncByteStream):
    """A compressed body inflated at most `_INFLATED_PIECE` bytes at a time (the bounded
    streams above it count what it yields)."""

    def __init__(self, inner: httpx2.AsyncByteStream, coding: str) -> None:
        self._inner = inner
        self._coding = coding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        wbits = _INFLATABLE.get(self._coding)
        if wbits is None:
            raise ResultTooLarge(
                f"the upstream sent its reply {self._coding!r}-encoded, which is not read "
                "(it is asked for identity)"
            )
        inflater = zlib.decompressobj(wbits)
        try:
            async for chunk in self._inner:
                piece = inflater.decompress(chunk, _INFLATED_PIECE)
                while piece:
                    yield piece
                    piece = inflater.decompress(inflater.unconsumed_tail, _INFLATED_PIECE)
        except zlib.error as exc:
            raise ResultTooLarge(f"the upstream's {self._coding} reply is corrupt: {exc}") from None
        if rest := inflater.flush():
            yield rest

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedBody(httpx2.AsyncByteStream):
    """A body that fails with `ResultTooLarge` once it passes `limit` bytes."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, declared: int | None) -> None:
        self._inner = inner
        self._limit = limit
        self._declared = declared

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._declared is not None and self._declared > self._limit:
            raise ResultTooLarge(too_large_message(self._declared, self._limit))
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResultTooLarge(too_large_message(seen, self._limit, at_least=True))
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _OwnReply(httpx2.AsyncByteStream):
    """A reply that is not a call's, counted; past a result's limit it must answer its own
    request: an upstream answered our tools/list with a call's 3 MB result under the
    call's id, and the MCP SDK passed it to the waiting call (attack 134)."""

    def __init__(self, inner: httpx2.AsyncByteStream, result_limit: int, other: OtherReply):
        self._inner = inner
        self._result_limit = result_limit
        self._other = other

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks: list[bytes] = []
        async for chunk in self._inner:
            self._other.count(len(chunk))
            chunks.append(chunk)
            yield chunk
        body = b"".join(chunks)
        if len(body) > self._result_limit and not _answers(body, self._other.request_id):
            raise ResultTooLarge(
                f"{too_large_message(len(body), self._result_limit)}, and it does not answer "
                "the request it came for"
            )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _answers(body: bytes, request_id: int | str) -> bool:
    """Whether `body` is the reply to `request_id` by its first and by its last `"id"`."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return False
    first = reply_id(body[:HEAD_BYTES], b"")
    return isinstance(parsed, dict) and parsed.get("id") == request_id and first == request_id


class BoundedEvents(httpx2.AsyncByteStream):
    """An event stream whose lines over the limit become error replies, ended early by
    `abandon()`; `request_id`: the request whose POST it answers, if any."""

    def __init__(self, inner: httpx2.AsyncByteStream, request: httpx2.Request, limit: int) -> None:
        self._inner = inner
        self._request = request
        self._limit = limit
        self._line_limit = min(limit, SDK_EVENT_BYTES - _EVENT_ROOM)
        self._abandoned = False
        self.request_id: int | str | None = self._request_id()
        self.on_end: Callable[[], None] | None = None  # told once, when the stream ends
        self.on_event_id: Callable[[str], None] | None = None  # told each `id:` it passes
        self.on_bytes: Callable[[int], None] | None = None  # told the size of each chunk
        self.asks: AskBudget | None = None  # the upstream's own requests it passes on
        self._event = bytearray()  # the lines of the event being read (with `asks`)
        self._held = 0  # their bytes

    async def __aiter__(self) -> AsyncIterator[bytes]:
        splitter = LineSplitter(self._line_limit)
        try:
            if self._abandoned:  # a resumption of a call already abandoned
                raise httpx2.SSEError("the call was abandoned (it timed out)")
            async for chunk in self._counted():
                if self._abandoned:
                    break
                if out := self._lines(splitter.feed(chunk)):
                    yield out
            if self._abandoned:  # SSEError: the SDK answers the request and does not resume
                raise httpx2.SSEError("the call was abandoned (it timed out)")
            if out := self._lines(splitter.finish()) + self._rest():
                yield out
        except httpx2.TransportError:
            if self._abandoned:
                raise httpx2.SSEError("the call was abandoned (it timed out)") from None
            raise
        finally:
            if self.on_end is not None:
                self.on_end()

    async def _counted(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            if self.on_bytes is not None:
                self.on_bytes(len(chunk))
            yield chunk

    async def abandon(self) -> None:
        """End the stream: a read under way fails, and the SDK stops reading it."""
        self._abandoned = True
        await self._inner.aclose()

    def abandoned(self) -> None:
        """Mark the stream abandoned before it is read: its first read fails."""
        self._abandoned = True

    async def aclose(self) -> None:
        await self._inner.aclose()

    def _lines(self, lines: list[bytes | Oversized]) -> bytes:
        parts = [
            piece
            for line in lines
            for piece in (_sse_lines(line) if isinstance(line, bytes) else [self._replace(line)])
        ]
        if self.on_event_id is not None:
            for line in parts:
                if line is not None and line.startswith(b"id:"):
                    self.on_event_id(line[3:].strip().decode("utf-8", "replace"))
        kept = [part for part in parts if part is not None]
        return b"".join(part + b"\n" for part in self._asked(kept))

    def _asked(self, lines: list[bytes]) -> list[bytes]:
        """`lines`, whole events at a time, less the upstream's requests past `asks`."""
        if self.asks is None:
            return lines
        out: list[bytes] = []
        for line in lines:
            if line.startswith(b":"):  # a comment: the SDK ignores it, so it is dropped, as
                continue  # counting it passed requests (139) and holding it grew RSS (140)
            self._event += line + b"\n"  # one buffer: a list of 1-byte lines cost 42 bytes a
            self._held += len(line)  # line (attack 140); over the SDK's limit, it drops it
            if line and self._held <= SDK_EVENT_BYTES:  # only an empty line ends an event
                continue
            event = bytes(self._event).split(b"\n")[:-1]
            self._event, self._held = bytearray(), 0
            # an event longer than the SDK takes goes on as it comes (no request to drop)
            kind = None if line else unasked(event)
            if kind is None or self.asks.take(kind):
                out += event
        return out

    def _rest(self) -> bytes:
        """An event the stream ended in the middle of, as it came."""
        rest, self._event, self._held = bytes(self._event), bytearray(), 0
        return rest

    def _replace(self, line: Oversized) -> bytes | None:
        """A `data:` line answering the cut line's request; None drops it."""
        if not line.head.startswith(b"data:"):
            return None  # a field that is not data: nothing to answer
        head = line.head.removeprefix(b"data:").removeprefix(b" ")
        found = reply_id(head, line.tail)
        if found is None:
            found = self._request_id()
        if found is None:
            return None
        cap = ""
        if self._line_limit < self._limit:
            cap = f"the {SDK_EVENT_BYTES:,} bytes the MCP SDK takes in one SSE event"
        message = too_large_message(line.size, self._limit, cap=cap)
        error = {"code": RESULT_TOO_LARGE_CODE, "message": message}
        reply = {"jsonrpc": "2.0", "id": found, "error": error}
        return b"data: " + json.dumps(reply).encode()

    def _request_id(self) -> int | str | None:
        """The id of the request whose POST this stream answers, if it is one."""
        if self._request.method != "POST":
            return None
        head = request_head(self._request.content)
        return None if head is None else head[0]


def _sse_lines(line: bytes) -> list[bytes]:
    """`line` split where httpx2 splits an event stream's lines (`\r\n`, `\r` or `\n`),
    so the SDK reads the lines and events read here (attack 137: events ended by a bare
    `\r` were one unread line here and 50 requests there)."""
    if b"\r" not in line:
        return [line]
    return line.removesuffix(b"\r").split(b"\r")


SMALL_BODY = 65536  # a body parsed whole; a longer one is read at its head only
# how the MCP SDK writes a request (httpx's `json=`, compact or not): its id and method lead
_HEAD = re.compile(
    rb'\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"[^"\\]*")\s*,'
    rb'\s*"method"\s*:\s*"([^"\\]*)"'
)


def request_head(body: bytes) -> tuple[int | str, str] | None:
    """The id and method of the JSON-RPC request in `body`, if it is one: a body of up to
    64 KB parsed, a longer one (a call's arguments may be megabytes, and every event stream
    asks) read at its head as the SDK writes it."""
    if len(body) > SMALL_BODY:
        found = _HEAD.match(body)
        return None if found is None else (json.loads(found[1]), found[2].decode())
    try:
        sent = json.loads(body)
    except ValueError:
        return None
    if not isinstance(sent, dict) or not isinstance(method := sent.get("method"), str):
        return None
    ident = sent.get("id")
    return (ident, method) if isinstance(ident, int | str) and not isinstance(ident, bool) else None

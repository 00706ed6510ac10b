"""Bounded framing of an upstream's byte stream: lines cut off at a size while they are
read, and the JSON-RPC id of a message of which only the first and last bytes were kept.

Pure and synchronous (no MCP SDK): the stdio transport (`stdio`) and the HTTP stream
wrapper (`http_limit`) feed it chunks as they arrive. A line longer than the limit is
never held whole: its first `head_bytes` and last `tail_bytes` are kept and the rest is
counted and dropped, so reading it costs at most the limit plus one chunk.

What it does not stop: many lines each just under the limit (each is a whole reply, and
the MCP SDK parses it), and a line that never ends (its bytes are dropped as they come,
and the call waiting for it times out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HEAD_BYTES",
    "RESULT_TOO_LARGE",
    "RESULT_TOO_LARGE_CODE",
    "TAIL_BYTES",
    "LineSplitter",
    "Oversized",
    "refusal",
    "reply_id",
    "request_head",
    "too_large_message",
]

HEAD_BYTES = 4096  # of a cut line, kept to find its id (Python SDK servers put it first)
TAIL_BYTES = 4096  # and these (the TypeScript SDK puts the id last)
# The phrase that names the setting in our refusal of a reply.
RESULT_TOO_LARGE = "bigger than MCP_CODE_MAX_RESULT_BYTES"
# JSON-RPC's implementation-defined server error range: the code of our error replies.
RESULT_TOO_LARGE_CODE = -32090
_REFUSAL = "the upstream's reply ("  # how every refusal's message begins

_QUOTE, _BACKSLASH, _COMMA = 0x22, 0x5C, 0x2C
_OPEN, _CLOSE = frozenset(b"{["), frozenset(b"}]")


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the limit: its size and the bytes kept of its two ends."""

    size: int  # bytes, without the line's end
    head: bytes
    tail: bytes


class LineSplitter:
    """Splits a byte stream at `\\n` into lines of at most `limit` bytes.

    `feed` takes chunks split anywhere and returns the lines they completed, each as
    `bytes` (without its `\\n`) or as `Oversized`; `finish` returns a last line without
    its `\\n`. Memory: at most `limit` bytes of a line, plus its two kept ends.
    """

    def __init__(
        self, limit: int, *, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES
    ) -> None:
        if limit <= 0:
            raise ValueError("limit must be positive")
        self.limit = limit
        self._head_bytes = head_bytes
        self._tail_bytes = tail_bytes
        self._buffer = bytearray()
        self._size = 0  # of an oversized line read so far; 0 while the line fits
        self._head = b""
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines that `chunk` completes."""
        lines: list[bytes | Oversized] = []
        view = memoryview(chunk)
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._take(view[start:end])
            lines.append(self._end_line())
            start = end + 1
        self._take(view[start:])
        return lines

    def finish(self) -> list[bytes | Oversized]:
        """The last line, when the stream ended without its `\\n`."""
        if not self._buffer and not self._size:
            return []
        return [self._end_line()]

    def _take(self, piece: memoryview) -> None:
        if not piece:
            return
        if self._size:  # already too long: keep only the tail
            self._size += len(piece)
            self._tail = (self._tail + piece[-self._tail_bytes :])[-self._tail_bytes :]
            return
        if len(self._buffer) + len(piece) <= self.limit:
            self._buffer += piece
            return
        # The line outgrows the limit now: keep its ends, drop the rest.
        head_from_piece = max(0, self._head_bytes - len(self._buffer))
        self._head = bytes(self._buffer[: self._head_bytes]) + bytes(piece[:head_from_piece])
        self._size = len(self._buffer) + len(piece)
        tail = bytes(piece[-self._tail_bytes :])
        if len(tail) < self._tail_bytes:
            tail = bytes(self._buffer[-(self._tail_bytes - len(tail)) :]) + tail
        self._tail = tail
        self._buffer = bytearray()

    def _end_line(self) -> bytes | Oversized:
        if self._size:
            line: bytes | Oversized = Oversized(self._size, self._head, self._tail)
            self._size, self._head, self._tail = 0, b"", b""
            return line
        whole = bytes(self._buffer)
        self._buffer = bytearray()
        return whole


def too_large_message(size: int, limit: int, *, at_least: bool = False, cap: str = "") -> str:
    """What a refused reply's call fails with: its size and the setting.

    `cap`: a lower limit than the setting that refused it, said in words.
    """
    size_text = f"more than {limit:,}" if at_least else f"{size:,}"
    if cap:
        why = f"is bigger than {cap} (below MCP_CODE_MAX_RESULT_BYTES, {limit:,})"
    else:
        why = f"is {RESULT_TOO_LARGE} ({limit:,})"
    return f"{_REFUSAL}{size_text} bytes) {why}; it was discarded as it arrived"


def refusal(message: str) -> str | None:
    """Our refusal of a reply, where `message` holds one (the MCP SDK may prefix it)."""
    start = message.find(_REFUSAL)
    if start < 0 or "MCP_CODE_MAX_RESULT_BYTES" not in message:
        return None
    return message[start:]


def reply_id(head: bytes, tail: bytes) -> int | str | None:
    """The id of the JSON-RPC reply whose text begins with `head` and ends with `tail`.

    Only top-level members count (an `"id"` inside the result is not the reply's). None
    when neither end holds an id, or when the message is a request or notification (it
    has a `method`): then its id is the upstream's own, not one of our requests.
    """
    first, last = _head_members(head), _tail_members(tail)
    if "method" in first or "method" in last:
        return None
    for members in (first, last):
        found = members.get("id")
        if isinstance(found, int | str) and not isinstance(found, bool):
            return found
    return None


def request_head(head: bytes) -> tuple[int | str | None, str | None]:
    """The id and method of the JSON-RPC request whose text begins with `head` (a client's
    request refused for its size is answered for it); None for what `head` holds not whole."""
    members = _head_members(head)
    found, method = members.get("id"), members.get("method")
    ident = found if isinstance(found, int | str) and not isinstance(found, bool) else None
    return ident, method if isinstance(method, str) else None


def _head_members(head: bytes) -> dict[str, Any]:
    """The top-level members that `head` (the start of a JSON object) holds whole."""
    start = len(head) - len(head.lstrip())
    if head[start : start + 1] != b"{":
        return {}
    depth, in_string, escaped, last_comma = 0, False, False, -1
    for pos in range(start, len(head)):
        byte = head[pos]
        if in_string:
            in_string, escaped = _inside_string(byte, escaped=escaped)
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
        elif byte in _CLOSE:
            depth -= 1
            if depth == 0:
                return _members(head[start : pos + 1])
        elif byte == _COMMA and depth == 1:
            last_comma = pos
    return _members(head[start:last_comma] + b"}") if last_comma > 0 else {}


def _tail_members(tail: bytes) -> dict[str, Any]:
    """The top-level members that `tail` (the end of a JSON object) holds whole."""
    text = tail.rstrip()
    if not text.endswith(b"}"):
        return {}
    depth, in_string, first_comma = 0, False, -1
    for pos in range(len(text) - 1, -1, -1):
        byte = text[pos]
        if byte == _QUOTE:
            escaped = _escaped(text, pos)
            if escaped is None:  # the run of backslashes reaches the cut: escaped or not?
                return _cut_members(text, first_comma, from_start=False)
            in_string ^= not escaped  # an unescaped quote opens or closes a string
            continue
        if in_string:
            continue
        if byte in _CLOSE:
            depth += 1
        elif byte in _OPEN:
            depth -= 1
            if depth == 0:
                return _members(text[pos:])
        elif byte == _COMMA and depth == 1:
            first_comma = pos
    # The window may begin right at a member.
    return _cut_members(text, first_comma, from_start=depth == 1 and not in_string)


def _cut_members(text: bytes, first_comma: int, *, from_start: bool) -> dict[str, Any]:
    """The members of `text`, the end of an object cut before its `{`: all of it when it
    may begin right at a member (`from_start`) and reads so, else what follows its first
    top-level comma (at `first_comma`, -1 for none)."""
    if from_start and (whole := _members(b"{" + text)):
        return whole
    return _members(b"{" + text[first_comma + 1 :]) if first_comma >= 0 else {}


def _inside_string(byte: int, *, escaped: bool) -> tuple[bool, bool]:
    """Reading forward inside a JSON string: whether the string goes on after `byte`, and
    whether the byte after it is escaped (`escaped`: whether `byte` itself is)."""
    if escaped:
        return True, False
    if byte == _BACKSLASH:
        return True, True
    return byte != _QUOTE, False


def _escaped(text: bytes, pos: int) -> bool | None:
    """Whether the quote at `pos` is escaped (an odd run of backslashes before it); None
    when the run reaches the start of `text`, where the cut hides how long it is."""
    before = pos
    while before > 0 and text[before - 1] == _BACKSLASH:
        before -= 1
    if before == 0:
        return None
    return (pos - before) % 2 == 1


def _members(text: bytes) -> dict[str, Any]:
    try:
        value = json.loads(text.decode("utf-8", "replace"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}

"""The host's end of the pipe to one worker: JSON lines out, checked messages in.

One class for every kind of worker (a forked local worker on a Unix socket, a Deno runner
on stdin/stdout): what arrives is untrusted (guest code may write raw lines), so every
line is size-limited (to what the run's limits let a worker send: `line_bound`), parsed,
and checked against the protocol's message types.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterator
from typing import Any, cast

from ..errors import WorkerCrashed
from ..offload import offloaded
from .protocol import (
    BATCH_BUDGET,
    BATCH_PIECE_BYTES,
    DECODE_BUDGET,
    ChildMessage,
    HostMessage,
    RunMessage,
    as_child_message,
    decode,
    decode_cost,
    encode,
    json_bytes_at_least,
)

__all__ = ["LINE_LIMIT", "Channel", "line_bound"]

LINE_LIMIT = 64 * 1024 * 1024
"""The largest line accepted from a worker (give it as the StreamReader's `limit`)."""

_INLINE_COST = 1 << 20  # lines costing more are parsed in a thread, off the event loop
_INLINE_LINE = 256 << 10  # longer lines are measured there too


class Channel:
    """Sends `HostMessage`s and receives `ChildMessage`s over a pair of asyncio streams."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, peer: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._peer = peer  # "worker" or "runner", for messages
        self._bound = LINE_LIMIT  # the longest line taken now: see `line_bound`
        self._batch_cost = 0  # what the pieces of a batch not yet whole cost (DECODE_BUDGET)

    async def send(self, message: HostMessage) -> None:
        """Write one message; raises ConnectionError when the worker is gone."""
        if message.get("op") == "run":
            self._bound = line_bound(cast("RunMessage", message))
        if json_bytes_at_least(message, _INLINE_WRITE) <= _INLINE_WRITE:
            self._writer.write(encode(message))
        else:  # a 9.6 MB upstream reply, written in one C call, held the loop 190 ms
            self._writer.write(await offloaded(_encode_in_pieces, message))
        await self._writer.drain()

    async def receive(self) -> ChildMessage | None:
        """The next message, or None when the worker closed its end (exited).

        Raises:
            WorkerCrashed: an oversized line, or one that is not a protocol message.
        """
        try:
            line = await self._reader.readline()
        except (ValueError, asyncio.LimitOverrunError) as exc:
            raise WorkerCrashed(f"{self._peer} sent an oversized message: {exc}") from None
        except ConnectionError:
            return None
        if not line:
            return None
        # counting a line's escapes takes 2-4 ms a MB where they are dense
        cost = self._cost(line) if len(line) <= _INLINE_LINE else await offloaded(self._cost, line)
        try:
            # A guest's 60 MB batch of calls must not stall the loop that serves other runs,
            # nor a 1 MB line of 330,000 empty lists (attack 85: 18 ms to parse, and the
            # collections its containers set off held the loop 200-400 ms)
            inline = cost - self._batch_cost < _INLINE_COST
            message = decode(line) if inline else await _decode_in_thread(line)
            checked = as_child_message(message)
        except ValueError as exc:
            raise WorkerCrashed(f"{self._peer} broke the protocol: {exc}") from None
        self._count_piece(checked, cost)
        return checked

    def _cost(self, line: bytes) -> int:
        """What `line` would cost parsed, with the pieces of its batch before it; a line
        past the run's bound or the budget is refused unparsed."""
        if len(line) > self._bound:
            raise WorkerCrashed(
                f"{self._peer} sent a message of {len(line):,} bytes, longer than its run's "
                f"limits let it be ({self._bound:,})"
            )
        cost = decode_cost(line)  # every line: 1,000 small pieces of `[[],...]` held 1.5 GB
        if cost > DECODE_BUDGET:
            raise WorkerCrashed(
                f"{self._peer} sent a message that would take about {cost >> 20} MB to "
                f"read (at most {DECODE_BUDGET >> 20} MB)"
            )
        if self._batch_cost:  # a batch is open: this line is one of its pieces
            self._check_batch(self._batch_cost + cost)
        return self._batch_cost + cost

    def _count_piece(self, message: ChildMessage, cost: int) -> None:
        """A batch's pieces are held until its last: what they cost counts together."""
        piece = message["op"] == "call" and message.get("more") is True
        if piece:
            self._check_batch(cost)
        self._batch_cost = cost if piece else 0

    def _check_batch(self, cost: int) -> None:
        if cost > BATCH_BUDGET:
            raise WorkerCrashed(
                f"{self._peer} sent pieces of a batch that would take about {cost >> 20} MB "
                f"to read in all (at most {BATCH_BUDGET >> 20} MB)"
            )

    def close(self) -> None:
        self._writer.close()


def line_bound(run: RunMessage) -> int:
    """The longest line a worker following the protocol sends during `run`, bytes.

    Its `done`: output of at most `max_output_chars` characters counted, stdout and logs
    each kept to it (the count stops a write after it is kept), each character at most 12
    bytes as escaped JSON (an astral one is a surrogate pair), and an error message cut to
    a few thousand characters. A call: a batch's piece (`BATCH_PIECE_BYTES`) or one call of
    at most `max_call_bytes` of UTF-8 (at most 3 bytes escaped each; the worker measures
    what a bound cannot prove fits) and names cut past `MAX_NAME_CHARS`. A longer line is
    a worker that escaped its guest code: refused unparsed (at 64 MB, parsing one held
    the gateway's event loop 0.2-0.4 s, or its offload thread over a second)."""
    output = 2 * 12 * int(run["max_output_chars"])
    call = max(BATCH_PIECE_BYTES, 3 * int(run.get("max_call_bytes", LINE_LIMIT)))
    return min(LINE_LIMIT, max(output, call) + _FRAMING)


_FRAMING = 64 << 10  # keys, names, an error message, as escaped JSON
_INLINE_WRITE = 16 << 10  # larger messages are written off the event loop (`offload`)
_PIECE_BYTES = 256 << 10


def _encode_in_pieces(message: Any) -> bytes:
    """`encode(message)`, written a piece of at most about `_PIECE_BYTES` at a time, so the
    thread doing it gives the event loop its turns between pieces (one `json.dumps` holds
    the GIL throughout)."""
    return ("".join(_pieces(message)) + "\n").encode()


def _pieces(value: Any) -> Iterator[str]:
    """JSON text of `value` as `encode` writes it: containers larger than a piece are
    opened here, runs of small items are written by `json.dumps` together."""
    if json_bytes_at_least(value, _PIECE_BYTES) <= _PIECE_BYTES:
        yield _dumps(value)
    elif isinstance(value, dict):
        yield "{"
        yield from _joined(value.items(), lambda run: _dumps(dict(run))[1:-1], _pieces_of_entry)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        yield from _joined(value, lambda run: _dumps(run)[1:-1], _pieces)
        yield "]"
    else:
        yield _dumps(value)


def _pieces_of_entry(entry: tuple[Any, Any]) -> Iterator[str]:
    yield _dumps({entry[0]: None})[1:-5]  # the key as `json.dumps` writes it, and a colon
    yield from _pieces(entry[1])


def _joined(items: Any, small: Any, large: Any) -> Iterator[str]:
    """Items comma-separated: consecutive small ones through `small` (a list of them),
    each large one through `large`."""
    run: list[Any] = []
    size, first = 0, True
    for item in items:
        bound = json_bytes_at_least(item, _PIECE_BYTES)
        if run and (bound > _PIECE_BYTES or size + bound > _PIECE_BYTES):
            yield ("" if first else ",") + small(run)
            run, size, first = [], 0, False
        if bound > _PIECE_BYTES:
            yield "" if first else ","
            yield from large(item)
            first = False
        else:
            run.append(item)
            size += bound
    if run:
        yield ("" if first else ",") + small(run)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


async def _decode_in_thread(line: bytes) -> dict[str, object]:
    return await offloaded(functools.partial(decode, line, yielding=True))

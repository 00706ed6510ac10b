"""The host's writes to a worker: a large message is written in pieces, off the event
loop, and reads exactly as `protocol.encode` writes it."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_code_mode.sandbox import channel
from mcp_code_mode.sandbox.protocol import encode

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # lone surrogates and NUL included
)
_KEYS = st.text(max_size=5) | st.integers() | st.booleans() | st.none() | st.floats()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(_KEYS, inner, max_size=8),
    max_leaves=200,
)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, piece=st.integers(min_value=1, max_value=64))
def test_pieces_read_as_encode_writes(value: Any, piece: int) -> None:
    with pytest.MonkeyPatch.context() as patch:  # pieces of a few bytes: every split taken
        patch.setattr(channel, "_PIECE_BYTES", piece)
        written = channel._encode_in_pieces({"type": "reply", "value": value})
    assert written == encode({"type": "reply", "value": value})


async def test_a_large_reply_leaves_the_loop_its_turns() -> None:
    """A reply of 960,000 strings (a 9.6 MB upstream reply from outside attack 84's
    round): written in one C call it held the loop about 190 ms."""
    value = [{"id": i, "tags": ["a"] * 240_000} for i in range(4)]
    reader, writer, kept = await _pipe()
    try:
        sender = channel.Channel(reader, writer, peer="worker")
        stalls: list[float] = []
        sending = asyncio.create_task(sender.send({"type": "reply", "id": 1, "value": value}))
        while not sending.done():
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            stalls.append(time.perf_counter() - start)
        await sending
        line = await reader.readline()
    finally:
        writer.close()
        kept.close()
    assert json.loads(line)["value"] == value
    # the loop had many turns, most of them short; one C call took 0.19 s here, a turn or
    # two in all (a single longest turn was 0.17 s on a busy machine: not a measure)
    stalls.sort()
    assert len(stalls) >= 10 and stalls[len(stalls) // 2] < 0.05, stalls[-5:]


async def _pipe() -> tuple[asyncio.StreamReader, asyncio.StreamWriter, asyncio.StreamWriter]:
    """A local socket pair as asyncio streams: a reader, the writer to it, and the
    reader's own writer (kept open: closing it closes the socket)."""
    left, right = socket.socketpair()
    reader, kept = await asyncio.open_connection(sock=left, limit=channel.LINE_LIMIT)
    _, writer = await asyncio.open_connection(sock=right, limit=channel.LINE_LIMIT)
    return reader, writer, kept

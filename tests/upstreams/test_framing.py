"""The bounded line reader and the id finder behind MCP_CODE_MAX_RESULT_BYTES (`framing`).

Property tests: any split of a stream into chunks gives the same lines; a line over the
limit comes out as its size and two ends; the id of a cut reply is found wherever the
serialiser put it, and never taken from inside the result or from a request.
"""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_code_mode.upstreams.framing import (
    LineSplitter,
    Oversized,
    refusal,
    reply_id,
    too_large_message,
)

LIMIT = 64
HEAD = TAIL = 16

lines_around_the_limit = st.lists(
    st.binary(max_size=LIMIT + 40).map(lambda b: b.replace(b"\n", b"."))
    | st.integers(LIMIT - 2, LIMIT + 2).map(lambda n: b"y" * n),
    max_size=8,
)


def _expected(line: bytes) -> bytes | Oversized:
    if len(line) <= LIMIT:
        return line
    return Oversized(len(line), line[:HEAD], line[-TAIL:])


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(
    lines=lines_around_the_limit,
    cuts=st.lists(st.integers(0, 1000), max_size=20),
    end=st.booleans(),
)
def test_chunks_split_anywhere_give_the_same_lines(
    lines: list[bytes], cuts: list[int], end: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if end and lines else b"")
    splitter = LineSplitter(LIMIT, head_bytes=HEAD, tail_bytes=TAIL)
    got: list[bytes | Oversized] = []
    for chunk in _split(data, cuts):
        got.extend(splitter.feed(chunk))
    got.extend(splitter.finish())
    want = [_expected(line) for line in lines]
    if lines and not end and lines[-1] == b"":
        want.pop()  # a stream that ends right after a newline has no last line
    assert got == want


def test_a_line_of_exactly_the_limit_passes_and_one_more_byte_is_cut() -> None:
    splitter = LineSplitter(4, head_bytes=2, tail_bytes=2)
    assert splitter.feed(b"abcd\nabcde\n") == [b"abcd", Oversized(5, b"ab", b"de")]


def _reply(ident: object, *, id_last: bool, filler: str, inner_id: object = 99) -> bytes:
    result = {"content": [{"type": "text", "text": filler}], "structuredContent": {"id": inner_id}}
    if id_last:
        return json.dumps({"result": result, "jsonrpc": "2.0", "id": ident}).encode()
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode()


ids = st.integers(-(2**53), 2**53) | st.text(max_size=30)
fillers = st.text(max_size=3000) | st.integers(0, 20_000).map(lambda n: '\\"x}{,' * n)


@settings(max_examples=200, deadline=None)
@given(ident=ids, id_last=st.booleans(), filler=fillers, extra=st.integers(0, 4096))
def test_the_id_of_a_cut_reply_is_found_at_either_end(
    ident: int | str, id_last: bool, filler: str, extra: int
) -> None:
    line = _reply(ident, id_last=id_last, filler=filler)
    window = len(json.dumps(ident)) + 32 + extra  # the window holds the envelope, and more
    assert reply_id(line[:window], line[-window:]) == ident


@given(ident=ids, filler=fillers)
def test_a_request_or_notification_has_no_reply_id(ident: int | str, filler: str) -> None:
    request = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "x", "params": {"t": filler}})
    line = request.encode()
    assert reply_id(line[:256], line[-256:]) is None


def test_an_id_inside_the_result_is_not_the_replys() -> None:
    # The result's own "id" is in both windows; the reply's id is in neither.
    line = b'{"result":{"id":5,"text":"' + b"z" * 10_000 + b'","more":{"id":6}},"jsonrpc":"2.0"}'
    assert reply_id(line[:64], line[-64:]) is None
    assert reply_id(b'{"id": true, "result": {', b"") is None  # not an id JSON-RPC allows


def test_the_refusal_is_found_in_the_sdks_wrapping() -> None:
    message = too_large_message(2_000_000, 1_000_000)
    assert "MCP_CODE_MAX_RESULT_BYTES (1,000,000)" in message and "2,000,000 bytes" in message
    assert refusal(f"Failed to parse JSON response: {message}") == message
    assert refusal("some upstream error") is None

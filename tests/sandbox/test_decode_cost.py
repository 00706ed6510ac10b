"""What a worker's line costs the host to parse (`protocol.decode_cost`), against what
parsing it makes, and a batch's pieces counted by the worker as the host counts them.

A string holding one character past U+FFFF parses to 4 bytes a character, one past U+00FF
to 2: a 10 MB line of ASCII and one escaped emoji was counted 10 MB and parsed to 40 MB, so
a legal batch held four times its budget (this session's own measurement, issue 30)."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox import protocol
from mcp_code_mode.sandbox.child import outgoing
from mcp_code_mode.sandbox.protocol import decode_cost, decode_parts, encode

# a character of each width a `str` takes, and the escapes that fool a count of `\u`
_WIDE = st.sampled_from(["", "a", "\xe9", "\u4e2d", "\U0001f600", "\ud800", "\udc00", "\x00"])
_TRICKY = st.sampled_from(["\\u", "\\\\u", "\\ud83d", "\\u00e9", "\\", '"', ",[{"])
_TEXT = st.builds(
    lambda head, body, wide, tail: head + body + wide + tail,
    st.text(max_size=20),
    st.sampled_from(["", "a" * 3000, "\\u" * 500, ",[{" * 400]),
    _WIDE,
    _TRICKY | st.text(max_size=5),
)


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=6))
def test_strings_cost_at_least_what_parsing_them_makes(texts: list[str]) -> None:
    """What the strings add to a line's cost, against the `str` objects they parse to, but
    for a non-ASCII string's longer header (27 bytes at most, within the slot its value
    is counted; the containers' estimate is not at stake here either)."""

    def line(of: list[str]) -> bytes:
        return encode({"op": "call", "id": 1, "calls": [{"args": {"text": t}} for t in of]})

    added = decode_cost(line(texts)) - decode_cost(line([""] * len(texts)))
    parsed = json.loads(line(texts))["calls"]
    made = sum(sys.getsizeof(c["args"]["text"]) - sys.getsizeof("") for c in parsed)
    assert added + 27 * len(texts) >= made


@pytest.mark.parametrize(
    ("wide", "width"),
    [("a", 1), ("\xe9", 1), ("\u4e2d", 2), ("\U0001f600", 4), ("\udc00", 4), ("\\u4e2d", 2)],
)
def test_one_character_sets_the_width_of_a_long_string(wide: str, width: int) -> None:
    # (`\\u4e2d` as text: an escaped backslash before `u` is taken for an escape, wide)
    line = encode({"text": "n" * 1_000_000 + wide})
    assert decode_parts(line)[2] == width
    assert decode_cost(line) >= sys.getsizeof(json.loads(line)["text"])


def test_raw_utf8_from_a_worker_that_escaped_counts_at_the_widest() -> None:
    line = json.dumps({"text": "n" * 1000 + "\u4e2d"}, ensure_ascii=False).encode()
    assert decode_parts(line)[2] == 4


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from('\\u0d"[,'), max_size=300),
    window=st.integers(min_value=1, max_value=17),
)
def test_a_count_by_windows_is_the_count(text: str, window: int) -> None:
    data = text.encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(protocol, "_COUNT_WINDOW", window)
        for part in (b"\\u", b"\\\\u", b"\\ud", b"\\u00", b'"', b","):
            assert protocol._count(data, part) == data.count(part)


@settings(max_examples=150, deadline=None)
@given(
    calls=st.lists(
        st.tuples(st.integers(min_value=0, max_value=90_000), _WIDE), min_size=2, max_size=40
    )
)
def test_the_host_counts_a_batch_as_the_worker_planned_it(calls: list[tuple[int, str]]) -> None:
    """Calls of mixed widths, pieces of 64 KB, a budget of 1 MB: what the host counts of
    the pieces' lines never passes what the worker kept them to."""
    limit = 1 << 20
    specs = [{"server": "s", "tool": "t", "args": {"q": "n" * n + w}} for n, w in calls]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(outgoing, "_LIMIT", limit)
        patch.setattr(outgoing, "BATCH_PIECE_BYTES", 64 << 10)
        cut = outgoing.pieces(specs)
    frame = {"op": "call", "id": 10**12, "batch": 10**12, "more": True}
    assert sum(decode_cost(encode({**frame, "calls": piece})) for piece in cut) <= limit
    sent = [spec for piece in cut for spec in piece]
    assert [(s["server"], s["tool"]) for s in sent] == [("s", "t")] * len(specs)
    assert all(s == spec or "refused" in s for s, spec in zip(sent, specs, strict=True))


async def test_a_batch_of_wide_strings_is_held_to_its_budget(gateway: Gateway) -> None:
    """55 calls of 990,000 ASCII characters and one emoji: about 4 MB each parsed. All 55
    were sent (220 MB held against a budget of 64); now the calls past it are refused."""
    code = (
        'text = "n" * 990_000 + "\\U0001f600"\n'
        'got = call_tools([("notes", "search_notes", {"query": text + str(i)}) '
        "for i in range(55)])\n"
        '[sum(not isinstance(r, ToolError) for r in got), sum("fewer" in str(r) for r in got)]'
    )
    reply = await gateway.execute(code, timeout_s=120)
    assert reply.ok, reply.error
    made, refused = reply.result
    assert made + refused == 55
    assert 10 <= made <= protocol.BATCH_BUDGET // 3_960_000, reply.result

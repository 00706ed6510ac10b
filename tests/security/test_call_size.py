"""MCP_CODE_MAX_CALL_BYTES counts what is sent (contract §7): the bytes of the arguments'
JSON as they arrive at a real upstream, for any text, lone surrogates included."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pydantic_core
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from mcp_code_mode.call_args import NOT_KEPT, bounded_args
from mcp_code_mode.encodable import make_encodable, wire_size
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.protocol import json_bytes_at_least, over_limit

from ..support import ROOT, server_entry, start_gateway

MALFORMED = str(ROOT / "tests" / "servers" / "malformed_upstream.py")
LIMIT = 3000

PROPERTY = settings(
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text as guests make it: any code point (lone surrogates, NUL, controls, astral), repeated
# so that sizes cross the limit in both directions.
PIECES = st.text(st.characters(codec=None, exclude_categories=()), min_size=1, max_size=6)
TEXT = st.tuples(PIECES, st.integers(1, 1200)).map(lambda t: t[0] * t[1])


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    config = tmp_path_factory.mktemp("wire") / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"raw": server_entry(MALFORMED)}}))
    gateway = await start_gateway(config, max_call_bytes=LIMIT)
    try:
        yield gateway
    finally:
        await gateway.aclose()


async def _send(gw: Gateway, text: str) -> dict[str, Any]:
    code = "call_tool('raw', 'wire_size', {'text': ''.join(map(chr, input['c']))})"
    return (await gw.execute(code, input={"c": [ord(c) for c in text]})).to_json()


@settings(PROPERTY, max_examples=40)
@example(text="\ud800" * 999)  # 999 characters of JSON text; 2,997 bytes of U+FFFD: sent
@example(text="\ud800" * 1000)  # 3,007 bytes with U+FFFD: refused (1 byte each before)
@example(text="\x00" * 499)  # NUL goes as \u0000: 6 bytes each
@example(text="\ud83d\ude00" * 749)  # a surrogate pair the guest joined: one 4-byte emoji
@given(text=TEXT)
async def test_the_limit_holds_to_the_byte_on_the_wire(gw: Gateway, text: str) -> None:
    expected = wire_size(make_encodable({"text": text}), LIMIT)
    out = await _send(gw, text)
    if expected <= LIMIT:
        assert out["ok"], out
        assert out["result"] == {"bytes": expected, "utf8": True}
    else:
        assert out["error"]["type"] == "TOOL_ERROR", out
        message = out["error"]["message"]
        assert "MCP_CODE_MAX_CALL_BYTES" in message, message
        # exact when measured; else a lower bound that passed the limit, unmeasured
        said = int(message.split(" bytes of JSON")[0].rsplit(" ", 1)[1].replace(",", ""))
        assert said == expected or (" at least " in message and LIMIT < said <= expected)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(value=JSON_VALUES)
@settings(max_examples=300, deadline=None, database=None)
def test_no_mcp_writer_writes_more_bytes_than_are_counted(value: Any) -> None:
    """The SDK writes stdio lines with pydantic and HTTP bodies with `json`: `wire_size`
    counts the longer of the two for the same (encodable) value."""
    sent = make_encodable(value)
    compact = json.dumps(sent, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    by_pydantic, by_json = len(pydantic_core.to_json(sent)), len(compact.encode("utf-8"))
    assert wire_size(sent, 10**9) == max(by_pydantic, by_json)


def test_text_that_cannot_be_encoded_counts_as_over() -> None:
    assert wire_size({"t": "\ud800"}, 100) == 101
    assert wire_size({"t": "é"}, 100) == len('{"t":"é"}'.encode())


@given(value=JSON_VALUES)
@settings(max_examples=300, deadline=None, database=None)
def test_the_early_refusal_counts_no_more_than_is_sent(value: Any) -> None:
    """The lower bound that refuses a far oversized call unseen is never over the bytes
    sent: a call that fits is never refused by it."""
    assert json_bytes_at_least(value, 10**9) <= wire_size(make_encodable(value), 10**9)


def test_the_early_refusal_stops_counting_past_its_limit() -> None:
    """Work bounded by the limit: 3 million strings are counted only until the bound passes."""
    value = {"query": ["\ud800"] * 3_000_000}
    assert 4_000 < json_bytes_at_least(value, 4_000) < 3_000_000 * 3


async def test_far_oversized_arguments_are_refused_before_they_are_copied(gw: Gateway) -> None:
    """Outside attack 82: 3 million lone surrogates were made encodable and measured on the
    event loop (9 s), then kept for the run, before the size check refused them."""
    code = "call_tool('raw', 'wire_size', {'text': [chr(0xD800)] * 3_000_000})"
    out = (await gw.execute(code, timeout_s=60)).to_json()
    assert out["error"]["type"] == "TOOL_ERROR", out
    assert f"over the {LIMIT:,} allowed (MCP_CODE_MAX_CALL_BYTES)" in out["error"]["message"]
    assert "at least" in out["error"]["message"], out


async def test_a_search_query_is_text(gw: Gateway) -> None:
    """Outside attack 82: `str()` of a 3-million-item query ran on the event loop (1.1 s)
    before the query was cut to its length."""
    code = (
        "try:\n    search_tools([0] * 1000)\nexcept ToolError as e:\n    out = str(e)\n"
        "[out, type(search_tools(5)).__name__]"
    )
    out = (await gw.execute(code, timeout_s=60)).to_json()
    assert out["ok"], out
    assert "query must be a str, not list" in out["result"][0] and out["result"][1] == "list", out


async def test_the_host_refuses_by_size_whatever_the_worker_did() -> None:
    """The worker refuses oversized arguments unsent, as a courtesy; the host's own
    check is the one that holds (an escaped worker sends what it likes)."""
    far = {"q": ["x"] * 10_000}
    assert await bounded_args(far, 1000) == (None, NOT_KEPT, 0, over_limit(far, 1000))
    floats = {"q": [1.2345678901234567e-300] * 200}
    assert "at least" in ((await bounded_args(floats, 1000)).refused or ""), floats
    digits = {"q": [-int("9" * 4299)] * 933}  # refused unmeasured: no quadratic digit work
    assert "at least" in ((await bounded_args(digits, 1000)).refused or "")
    near = {"q": "\ud800" * 990}  # 990 bytes by the bound, 2,978 as sent: measured
    assert "2,978 bytes of JSON, over the 1,000 allowed" in (
        (await bounded_args(near, 1000)).refused or ""
    )
    sent = await bounded_args({"q": "\ud800" * 9}, 1000)
    assert sent == ({"q": "\ufffd" * 9}, '{"q":"' + "\ufffd" * 9 + '"}', 35, None)


async def test_a_batch_refuses_only_its_oversized_call(gw: Gateway) -> None:
    code = (
        "r = call_tools([('raw', 'wire_size', {'text': 'a'}),\n"
        "                ('raw', 'wire_size', {'text': ['b'] * 100_000})])\n"
        "[r[0], type(r[1]).__name__, str(r[1])]"
    )
    out = (await gw.execute(code, timeout_s=60)).to_json()
    assert out["ok"], out
    assert out["result"][:2] == [{"bytes": 12, "utf8": True}, "ToolError"], out
    assert f"over the {LIMIT:,} allowed (MCP_CODE_MAX_CALL_BYTES)" in out["result"][2], out


async def test_what_is_checked_is_what_is_sent(sec_gateway: Gateway) -> None:
    """A guest `int` subclass's `bit_length`, a `dict` subclass's `values`, and a query's
    arguments (never checked) took 60 MB lines past the worker's checks to the host's one
    offload thread (outside attack 87): the checks and `encode` now see the same exact
    built-in copy, and queries are bounded as calls are."""
    code = (
        "big = -int('9' * 700)\nout = []\nclass I(int):\n    def bit_length(self):\n"
        "        return 1\nclass D(dict):\n    def values(self):\n        return []\n"
        "for attempt in (lambda: search_tools([big]), lambda: get_tool_docs('t', [big] * 2),\n"
        "                lambda: call_tool('t', 'echo', {'text': [I(big)]}),\n"
        "                lambda: call_tool('t', 'echo', {'text': D(a=[0.5] * 400_000)})):\n"
        "    try:\n        attempt()\n        out.append('sent')\n"
        "    except ToolError as e:\n        out.append(str(e))\n"
        "[tools.t.echo(text=D(a=1)['a'] and 'ok')] + out"
    )
    out = (await sec_gateway.execute(code, timeout_s=60)).to_json()
    assert out["ok"], out
    first, *refusals = out["result"]
    assert first == "ok" and len(refusals) == 4, out["result"]
    assert all("more than 640 digits" in r for r in refusals[:3]), refusals
    assert "at least" in refusals[3] and "MCP_CODE_MAX_CALL_BYTES" in refusals[3], refusals
    # the two refused calls are recorded, not made
    assert [c["ok"] for c in out["tool_calls"]] == [False, False, True], out["tool_calls"]


async def test_text_wider_than_its_bound_is_refused_unsent_and_recorded(gw: Gateway) -> None:
    """A character counts one byte in the worker's lower bound and up to six as sent: past
    a sixth of the limit the worker measures as the host does and sends only why it refused
    (a million Chinese characters went as 6 MB of escaped JSON, parsed by the host only to
    refuse); the call is in the run's `tool_calls` as any refused call is."""
    code = "call_tool('raw', 'wire_size', {'text': '\u4e2d' * 1000})"
    out = (await gw.execute(code, timeout_s=60)).to_json()
    assert out["error"]["type"] == "TOOL_ERROR", out
    assert "3,011 bytes of JSON, over the 3,000 allowed" in out["error"]["message"], out
    assert out["tool_calls"] == [{"server": "raw", "tool": "wire_size", "ms": 0.0, "ok": False}]


async def test_no_nan_or_infinity_is_sent_to_a_tool(sec_gateway: Gateway) -> None:
    """JSON has no NaN or infinity: the worker wrote them, the host read them back as
    floats and the MCP client sent them as `null`, so a tool got another value than the
    code passed and the call was recorded ok (outside attack 117). They are refused
    unsent, wherever they sit in the arguments."""
    code = (
        "out = []\n"
        "for v in (float('nan'), float('inf'), -float('inf'), [1.5, {'a': float('nan')}]):\n"
        "    try:\n        call_tool('t', 'echo', {'text': v})\n        out.append('sent')\n"
        "    except ToolError as e:\n        out.append(str(e))\n"
        "r = call_tools([('t', 'echo', {'text': float('nan')}), ('t', 'echo', {'text': 'b'})])\n"
        "out + [type(r[0]).__name__, r[1]]"
    )
    out = (await sec_gateway.execute(code, timeout_s=60)).to_json()
    assert out["ok"], out
    *refusals, batch_type, echoed = out["result"]
    assert len(refusals) == 4 and batch_type == "ToolError" and "b" in str(echoed), out
    assert all("cannot be sent: JSON has no NaN" in r for r in refusals), refusals
    assert [c["ok"] for c in out["tool_calls"]] == [False] * 5 + [True], out["tool_calls"]

"""Contract §7 from the outside: hostile text, shapes and floods at every guest-visible boundary.

Each case goes through the real MCP server (`build_server` behind an in-memory fastmcp
`Client`, and once over real stdio) to real workers and a real hostile stdio upstream
(`tests/servers/hostile_upstream.py`). After each case the reply must be a §3 result
object, encodable as UTF-8 with U+FFFD where text could not be encoded, within
MCP_CODE_MAX_OUTPUT_CHARS plus a small overhead; the next run must answer and no upstream
may have been restarted.

Hypothesis draws compact descriptors (a chunk and a repeat count, a depth) and the test
builds the large value, so a falsifying example prints in one line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from mcp import MCPError
from mcp import types as mcp_types

from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway

from .support import DATA_SERVER, NOTES_SERVER, QUIET, ROOT, server_entry, start_gateway

HOSTILE_SERVER = str(ROOT / "tests" / "servers" / "hostile_upstream.py")
CAP = 2000  # MCP_CODE_MAX_OUTPUT_CHARS of the gateways below
OVERHEAD = 4096  # the "small fixed overhead" a whole reply may add to CAP
HOSTILE_CALL_TIMEOUT_S = 10.0  # the hostile upstream's `timeout_s` (calls and start-up)
NOTICE_S = 4.0  # a malformed upstream reply must fail its call well before that
ERROR_TYPES = {
    "POLICY_VIOLATION",
    "SYNTAX_ERROR",
    "RUNTIME_ERROR",
    "TIMEOUT",
    "MEMORY_LIMIT",
    "OUTPUT_LIMIT",
    "TOOL_CALL_LIMIT",
    "TOOL_ERROR",
    "EXECUTOR_ERROR",
}
RESULT_KEYS = {"ok", "result", "stdout", "logs", "tool_calls", "duration_ms", "error"}
SURROGATE = re.compile("[\ud800-\udfff]")
UNCLEAN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

# No shrinking: a failing example is already compact (descriptors, not values), and
# shrinking against a slow server would run into the per-test timeout.
PROPERTY = settings(
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --- fixtures ---------------------------------------------------------------------------


def _config(tmp: Path, *, with_others: bool) -> Path:
    servers: dict[str, Any] = {
        "hostile": server_entry(
            HOSTILE_SERVER,
            description="Replies with whatever it is told to",
            timeout_s=HOSTILE_CALL_TIMEOUT_S,
        ),
    }
    if with_others:
        servers["notes"] = server_entry(NOTES_SERVER, description="Notes store")
        servers["my-data"] = server_entry(DATA_SERVER, description="Customers and orders")
    path = tmp / "mcp_servers.json"
    path.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    return path


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """Hostile upstream + notes + my-data behind a gateway with a small output cap."""
    path = _config(tmp_path_factory.mktemp("hostile"), with_others=True)
    gateway = await start_gateway(path, pool_size=2, max_output_chars=CAP, timeout_s=10.0)
    try:
        yield gateway
    finally:
        await gateway.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def flood_gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """A gateway of its own for call floods, so a flood cannot disturb the other tests."""
    path = _config(tmp_path_factory.mktemp("flood"), with_others=False)
    gateway = await start_gateway(path, pool_size=1, max_output_chars=CAP, timeout_s=10.0)
    try:
        yield gateway
    finally:
        await gateway.aclose()


@pytest.fixture(scope="module")
def server(gw: Gateway) -> FastMCP:
    return build_server(gw)


@pytest.fixture(scope="module")
def flood_server(flood_gw: Gateway) -> FastMCP:
    return build_server(flood_gw)


# --- what every reply must satisfy ------------------------------------------------------


@contextmanager
def _deep_recursion() -> Iterator[None]:
    """Room to parse and compare the nested replies this file provokes (not the server's)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 12_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _surrogates(value: Any) -> list[str]:
    """Every string (keys included) in `value` holding a lone surrogate; iterative."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if SURROGATE.search(item):
                found.append(item[:80])
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def check_reply(result: mcp_types.CallToolResult, *, cap: int = CAP) -> dict[str, Any]:
    """Assert the §3/§7 guarantees of one execute_code reply and return its object."""
    assert len(result.content) == 1 and isinstance(result.content[0], mcp_types.TextContent), (
        f"one text block expected, got {result.content!r:.300}"
    )
    text = result.content[0].text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        pytest.fail(f"reply text is not UTF-8 encodable ({exc}): {text[:200]!r}")
    assert len(text) <= cap + OVERHEAD, f"reply of {len(text)} chars > cap {cap} + {OVERHEAD}"
    with _deep_recursion():
        try:
            payload = json.loads(text)
        except ValueError:
            pytest.fail(f"reply text is not a JSON §3 object: {text[:300]!r}")
        assert isinstance(payload, dict) and payload.keys() >= RESULT_KEYS, (
            f"not a §3 result object (an MCP error in disguise?): {text[:300]!r}"
        )
        assert not _surrogates(payload), (
            f"lone surrogates left in the reply text: {_surrogates(payload)}"
        )
        structured = result.structured_content
        assert not _surrogates(structured), (
            f"lone surrogates in structuredContent: {_surrogates(structured)}"
        )
        assert structured == payload, "structuredContent differs from the text block"
    assert result.is_error is (not payload["ok"])
    if payload["ok"]:
        assert payload["error"] is None
    else:
        error = payload["error"]
        assert isinstance(error, dict) and error.get("type") in ERROR_TYPES, error
        assert isinstance(error.get("message"), str) and "line" in error, error
        assert payload["result"] is None
    return payload


async def execute(
    server: FastMCP,
    code: str,
    *,
    input: Any = None,
    timeout_s: float | None = None,
    wait_s: float = 45.0,
) -> dict[str, Any]:
    """One execute_code call through a fresh in-memory client, checked by `check_reply`."""
    args: dict[str, Any] = {"code": code, "input": input, "timeout_s": timeout_s}
    async with Client(server) as client:
        try:
            result = await asyncio.wait_for(client.call_tool_mcp("execute_code", args), wait_s)
        except MCPError as exc:
            pytest.fail(f"MCP protocol error instead of a §3 result object: {exc}")
        except TimeoutError:
            pytest.fail(f"execute_code did not answer within {wait_s} s")
    return check_reply(result)


async def boot_of(gateway: Gateway) -> dict[str, Any]:
    """The hostile upstream's pid and boot id, asked through the gateway's own call path."""
    value = await asyncio.wait_for(gateway.call_tool("hostile", "boot", {}), 15)
    assert isinstance(value, dict)
    return value


async def assert_still_serving(server: FastMCP, gateway: Gateway, boot: dict[str, Any]) -> None:
    """The next run answers normally and the hostile upstream was not restarted."""
    nxt = await execute(server, "1+1", wait_s=20)
    assert nxt["ok"] and nxt["result"] == 2, f"next call broke: {nxt}"
    assert await boot_of(gateway) == boot, "the hostile upstream was restarted"


# --- hostile text -----------------------------------------------------------------------

_CONTROLS = ["\x00", "\x01", "\x1b", "\x7f", "\x85", "\r", "\n", "\u2028", "\ufeff", "\uffff"]
_CHARS = st.one_of(
    st.characters(),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"]),
    st.sampled_from(_CONTROLS),
)
_CHUNK = st.one_of(
    st.text(_CHARS, max_size=24),
    st.binary(max_size=24).map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.sampled_from(
        ["\ud800", "\udfff", "\ud83d", "Launch day \ud83d", "\x00" * 8, "\udcff\udcfe"]
    ),
)
# (chunk, repeat): mostly short, sometimes far beyond the output cap
TEXT = st.one_of(
    st.tuples(_CHUNK, st.just(1)),
    st.tuples(_CHUNK.filter(bool), st.integers(100, 20_000)),
)


def fffd_forms(text: str) -> set[str]:
    """Acceptable encodable forms: each lone surrogate → U+FFFD (pairs may be joined)."""
    each = SURROGATE.sub("\ufffd", text)
    paired = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return {each, paired}


def small(text: str) -> bool:
    """Small enough that the run must succeed whole under the output cap."""
    return len(json.dumps(text)) <= 300


# Guest snippets; `s` is the hostile text. `json` is on the default import allowlist.
BOUNDARIES = {
    "result": "s",
    "stdout": "print(s)",
    "logs": "log(s, s)",
    "exception": "raise ValueError(s)",
    "tool_argument": "tools.hostile.echo(text=s)",
    "tool_store": "tools.hostile.store(key='k', value=s)\ntools.hostile.fetch(key='k')",
    "upstream_json_text": "import json\ntools.hostile.reply(text=json.dumps(s))",
    "upstream_raw_text": "tools.hostile.reply(text=s)",
    "upstream_structured": "import json\ntools.hostile.reply_structured(json_text=json.dumps({'v': s}))",
}
_TEXT_OUT = {"result", "tool_argument", "tool_store", "upstream_json_text", "upstream_raw_text"}


def _parses_as_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# Known vectors run first, every time: the search below is random.
@settings(PROPERTY, max_examples=60)
@example(boundary="result", spec=("\ud800", 1), via="input")
@example(boundary="stdout", spec=("\udfff", 1), via="chr")
@example(boundary="logs", spec=("\udcff\udcfe", 1), via="chr")
@example(boundary="exception", spec=("\ud800", 1), via="chr")
@example(boundary="exception", spec=("\x00" * 8, 500), via="chr")  # 6x escape growth
@example(boundary="tool_argument", spec=("Launch day \ud83d", 1), via="input")
@example(boundary="upstream_json_text", spec=("Launch day \ud83d", 1), via="chr")
@example(boundary="stdout", spec=("\x00", 3000), via="chr")
@given(
    boundary=st.sampled_from(sorted(BOUNDARIES)), spec=TEXT, via=st.sampled_from(["input", "chr"])
)
async def test_hostile_text_at_every_boundary(
    server: FastMCP, gw: Gateway, boundary: str, spec: tuple[str, int], via: str
) -> None:
    chunk, repeat = spec
    text = chunk * repeat
    if via == "input":  # the client hands the text in
        prefix, value = "s = input['s']\n", {"s": text}
    else:  # the guest builds it itself from code points
        prefix, value = (
            "s = ''.join(map(chr, input['c'])) * input['n']\n",
            {
                "c": [ord(c) for c in chunk],
                "n": repeat,
            },
        )
    boot = await boot_of(gw)
    out = await execute(server, prefix + BOUNDARIES[boundary], input=value, timeout_s=15)
    if small(text):
        if boundary == "exception":
            assert (
                out["error"]["type"] == "RUNTIME_ERROR" and "ValueError" in out["error"]["message"]
            )
        elif boundary == "upstream_structured" and SURROGATE.search(text):
            pass  # the upstream itself cannot send it: a TOOL_ERROR or a value, both fine
        else:
            assert out["ok"], f"a small text failed at {boundary}: {out['error']}"
        if boundary == "upstream_raw_text" and _parses_as_json(text):
            pass  # text content that parses as JSON is unwrapped to its value (§4)
        elif boundary in _TEXT_OUT:
            assert out["result"] in fffd_forms(text), (out["result"], text)
        elif boundary == "stdout":
            assert out["stdout"] in {t + "\n" for t in fffd_forms(text)}
        elif boundary == "logs":
            assert out["logs"] in [[f"{t} {t}"] for t in fffd_forms(text)]
    elif not out["ok"] and boundary != "exception":
        assert out["error"]["type"] in {"OUTPUT_LIMIT", "TOOL_ERROR"}, out["error"]
    await assert_still_serving(server, gw, boot)


# --- hostile input values ---------------------------------------------------------------


# A fastmcp/MCP client cannot serialise arguments nested deeper than ~250 levels; deeper
# nesting reaches the server as a JSON-looking string input (parsed by the gateway, §6).
CLIENT_MAX_DEPTH = 240


def _nest(kind: str, depth: int) -> Any:
    value: Any = [] if kind == "list" else {}
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def build_input(kind: str, n: int, chunk: str) -> Any:
    if kind in ("list", "dict"):
        return _nest(kind, min(n, CLIENT_MAX_DEPTH))
    if kind == "huge_list":
        return list(range(n * 20))
    if kind == "huge_dict":
        return {str(i): chunk for i in range(n * 5)}
    if kind == "hostile_keys":  # a client cannot serialise lone surrogates in keys
        key = SURROGATE.sub("?", chunk)
        return {key * 3: [chunk] * 3, "x" + key: {key: chunk}}
    if kind == "json_deep_string":  # a string input that parses as JSON is parsed (§6)
        return "[" * n + "]" * n
    if kind == "json_open_string":
        return "[" * n
    if kind == "json_surrogate_string":  # ASCII on the wire, lone surrogates once parsed
        return json.dumps([chunk, {chunk: chunk}])
    raise AssertionError(kind)


# the policy forbids dunder attributes such as `type(x).__name__`
KIND_OF_INPUT = (
    "'list' if isinstance(input, list) else 'dict' if isinstance(input, dict) else 'other'"
)
INPUT_KINDS = [
    "list",
    "dict",
    "huge_list",
    "huge_dict",
    "hostile_keys",
    "json_deep_string",
    "json_open_string",
    "json_surrogate_string",
]


@settings(PROPERTY, max_examples=30)
@example(kind="json_deep_string", n=30_000, chunk="", code=KIND_OF_INPUT)
@example(kind="json_surrogate_string", n=0, chunk="\ud800", code="input")
@example(kind="list", n=240, chunk="", code="input")
@given(
    kind=st.sampled_from(INPUT_KINDS),
    n=st.one_of(st.integers(0, 300), st.integers(300, 30_000)),
    chunk=_CHUNK,
    code=st.sampled_from(["input", KIND_OF_INPUT, "print(repr(input)[:40])", "log(input)"]),
)
async def test_hostile_input_values(
    server: FastMCP, gw: Gateway, kind: str, n: int, chunk: str, code: str
) -> None:
    boot = await boot_of(gw)
    out = await execute(server, code, input=build_input(kind, n, chunk), timeout_s=15)
    if code == KIND_OF_INPUT and kind in ("list", "dict") and n <= 100:
        assert out["ok"] and out["result"] == kind, out
    await assert_still_serving(server, gw, boot)


# --- hostile values made by the guest ---------------------------------------------------

GUEST_SHAPES = {
    "deep_list": "x = []\nfor _ in range(input):\n    x = [x]\nx",
    "deep_dict": "x = {}\nfor _ in range(input):\n    x = {'a': x}\nx",
    "huge_list": "list(range(input * 10))",
    "huge_dict": "{str(i): i for i in range(input)}",
    "nul_result": "chr(0) * input",
    "nul_stdout": "print(chr(0) * input)",
    "surrogate_list": "[chr(0xD800)] * input",
    "surrogate_logs": "log(*([chr(0xDC80)] * input))",
    "many_log_lines": "for i in range(input):\n    log(chr(0xD800 + i % 2048))",
    "not_json": "{chr(0xD800): {1, 2}, 'f': lambda: 1}",
    "set_result": "set(range(input))",
    "exception_nul": "raise ValueError(chr(0) * input)",
    "exception_deep": "x = []\nfor _ in range(input):\n    x = [x]\nraise ValueError(x)",
}


@settings(PROPERTY, max_examples=30)
@example(shape="exception_nul", n=2475)
@example(shape="deep_list", n=100_000)
@example(shape="surrogate_logs", n=50)
@given(
    shape=st.sampled_from(sorted(GUEST_SHAPES)),
    n=st.one_of(st.integers(0, 400), st.integers(400, 150_000)),
)
async def test_hostile_values_made_by_the_guest(
    server: FastMCP, gw: Gateway, shape: str, n: int
) -> None:
    boot = await boot_of(gw)
    await execute(server, GUEST_SHAPES[shape], input=n, timeout_s=15)
    await assert_still_serving(server, gw, boot)


# --- hostile upstream replies -----------------------------------------------------------

UPSTREAM_KINDS = {  # kind -> range of n
    "huge_text": (0, 3_000_000),
    "huge_list": (0, 300_000),
    "deep_text": (1, 100_000),
    "deep_structured": (1, 190),  # deeper: test_upstream_reply_a_strict_parser_rejects
    "wide_dict": (0, 100_000),
    "control_text": (0, 2_000),
}


@st.composite
def _upstream_reply(draw: st.DrawFn) -> tuple[str, int]:
    kind = draw(st.sampled_from(sorted(UPSTREAM_KINDS)))
    low, high = UPSTREAM_KINDS[kind]
    return kind, draw(st.one_of(st.integers(low, min(high, 300)), st.integers(low, high)))


@settings(PROPERTY, max_examples=25)
@example(reply=("deep_text", 100_000), code="r")
@example(reply=("huge_text", 3_000_000), code="r")
@example(reply=("huge_list", 300_000), code="log(r)")
@given(reply=_upstream_reply(), code=st.sampled_from(["r", "len(str(r))", "print(r)", "log(r)"]))
async def test_hostile_upstream_replies(
    server: FastMCP, gw: Gateway, reply: tuple[str, int], code: str
) -> None:
    kind, n = reply
    boot = await boot_of(gw)
    started = time.perf_counter()
    snippet = f"r = tools.hostile.make(kind={kind!r}, n={n})\n{code}"
    out = await execute(server, snippet, timeout_s=20)
    assert time.perf_counter() - started < 20 + 2
    if kind == "control_text" and code == "r" and n <= 20:
        assert out["ok"] and out["result"] == "\x00\x01\x1b[2J\x7f\x85\u2028" * n, out
    await assert_still_serving(server, gw, boot)


async def test_upstream_json_text_with_an_escaped_lone_surrogate(
    server: FastMCP, gw: Gateway
) -> None:
    boot = await boot_of(gw)
    code = r"""tools.hostile.reply(text='{"title": "Launch day \\ud83d"}')"""
    out = await execute(server, code)
    assert out["ok"] and out["result"] == {"title": "Launch day \ufffd"}, out
    await assert_still_serving(server, gw, boot)


def _raw_wire(json_object: str) -> str:
    return f"tools.hostile.raw_wire(json_object={json_object!r})"


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(_raw_wire(r'{"title": "Launch day \ud83d"}'), id="structured-lone-surrogate"),
        pytest.param(_raw_wire(r'{"a": "\udfff", "\ud800": ["\udc00x"]}'), id="surrogate-keys"),
        pytest.param(_raw_wire('{"a":' * 300 + "1" + "}" * 300), id="structured-300-deep"),
        pytest.param("tools.hostile.make(kind='deep_structured', n=230)", id="fastmcp-230-deep"),
    ],
)
async def test_upstream_reply_a_strict_parser_rejects(
    server: FastMCP, gw: Gateway, code: str
) -> None:
    """An upstream sends JSON the MCP SDK's parser rejects: escaped lone surrogates (as Node's
    JSON.stringify writes them) or nesting past its depth limit. §6: a malformed reply fails
    that call with TOOL_ERROR and nothing else (a sanitised value is fine as well). Either way
    the call ends when the reply arrives, not at the call's own time limit (that would be the
    reply ignored, not failed), and nothing restarts."""
    boot = await boot_of(gw)
    started = time.perf_counter()
    out = await execute(server, code, timeout_s=20)
    elapsed = time.perf_counter() - started
    assert out["ok"] or out["error"]["type"] == "TOOL_ERROR", out["error"]
    assert elapsed < NOTICE_S, (
        f"the malformed reply was not noticed ({elapsed:.1f} s): {out['error']}"
    )
    if out["ok"] and "Launch" in code:
        assert out["result"] == {"title": "Launch day \ufffd"}
    await assert_still_serving(server, gw, boot)


# --- discovery with hostile names and queries -------------------------------------------

# search_tools / get_tool_docs are not under the output cap, but echoing a hostile name or
# query back whole is: the whole catalog of this gateway is far smaller than this.
REFLECTION_BOUND = 50_000

DISCOVERY = {
    "search": "search_tools(s)",
    "search_limit": "search_tools(s, limit=-5)",
    "docs": "try:\n    get_tool_docs(s, s)\nexcept ToolError as e:\n    e.message",
    "docs_server": "get_tool_docs(s)",
    "call_unknown": "call_tool(s, s, {})",
    "call_unknown_tool": "call_tool('hostile', s)",
    "many_unknown_calls": (
        "for i in range(30):\n    try:\n        call_tool(s + str(i), s)\n"
        "    except ToolError:\n        pass"
    ),
}


@settings(PROPERTY, max_examples=25)
@example(what="search", spec=("refund orders \ud800 ", 50_000))
@example(what="call_unknown", spec=("\x1eq", 2309))
@example(what="docs_server", spec=("\x00", 5000))
@example(what="many_unknown_calls", spec=("\x05{\udc8f", 844))
@given(what=st.sampled_from(sorted(DISCOVERY)), spec=TEXT)
async def test_discovery_from_code_with_hostile_names(
    server: FastMCP, gw: Gateway, what: str, spec: tuple[str, int]
) -> None:
    chunk, repeat = spec
    boot = await boot_of(gw)
    started = time.perf_counter()
    out = await execute(server, "s = input['s']\n" + DISCOVERY[what], input={"s": chunk * repeat})
    assert time.perf_counter() - started < 5, f"{what} took {time.perf_counter() - started:.1f} s"
    if what == "search":
        assert out["ok"] and isinstance(out["result"], list), out["error"]
    await assert_still_serving(server, gw, boot)


@settings(PROPERTY, max_examples=25)
@example(tool="get_tool_docs", spec=("\x00", 60_000), limit=5)
@example(tool="search_tools", spec=("\ud800 notes ", 100_000), limit=10**9)
@given(
    tool=st.sampled_from(["search_tools", "get_tool_docs"]),
    spec=TEXT,
    limit=st.sampled_from([-1, 0, 5, 10**9]),
)
async def test_discovery_tools_with_hostile_arguments(
    server: FastMCP, gw: Gateway, tool: str, spec: tuple[str, int], limit: int
) -> None:
    chunk, repeat = spec
    text = chunk * repeat
    args = (
        {"query": text, "limit": limit}
        if tool == "search_tools"
        else {"server": text, "tool": text}
    )
    started = time.perf_counter()
    async with Client(server) as client:
        try:
            result = await asyncio.wait_for(client.call_tool_mcp(tool, args), 20)
        except MCPError as exc:
            pytest.fail(f"MCP protocol error from {tool}: {exc}")
    assert time.perf_counter() - started < 5
    reply = "".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))
    reply.encode("utf-8")
    assert not SURROGATE.search(reply)
    assert len(reply) <= REFLECTION_BOUND, f"{tool} sent {len(reply)} chars back"
    if tool == "search_tools" and limit > 0:
        assert not result.is_error and isinstance(json.loads(reply), list)
    assert (await execute(server, "1+1"))["result"] == 2


# --- one run cannot disturb another -----------------------------------------------------

HOSTILE_RUNS = [
    "while True:\n    print(chr(0xD800) * 1000)",
    "x = []\nfor _ in range(200_000):\n    x = [x]\nx",
    "call_tools([('hostile', 'slow', {'seconds': 1.0})] * 500)",
    "for i in range(10**7):\n    log(chr(0xDC80))",
    "raise ValueError(chr(0xD800) * 1_000_000)",
    "search_tools('refund orders customers ' * 200_000)",
    "tools.hostile.make(kind='deep_text', n=200_000)",
    "s = input['s']\nwhile True:\n    tools.hostile.echo(text=s)",
]


@pytest.mark.parametrize("hostile", HOSTILE_RUNS, ids=range(len(HOSTILE_RUNS)))
@settings(PROPERTY, max_examples=1)
@given(spec=TEXT)
async def test_a_hostile_run_does_not_disturb_another(
    server: FastMCP, gw: Gateway, hostile: str, spec: tuple[str, int]
) -> None:
    chunk, repeat = spec
    marker = f"marker-{time.monotonic_ns()}"
    stored = await execute(server, f"tools.notes.add_note(text={marker!r})['id']")
    assert stored["ok"], stored
    boot = await boot_of(gw)

    async def bystander() -> list[tuple[float, dict[str, Any]]]:
        await asyncio.sleep(0.3)  # the hostile run is under way
        seen = []
        for _ in range(3):
            started = time.perf_counter()
            out = await execute(server, "1+1", wait_s=20)
            seen.append((time.perf_counter() - started, out))
        return seen

    attack = execute(server, hostile, input={"s": chunk * repeat}, timeout_s=2, wait_s=30)
    _, seen = await asyncio.gather(attack, bystander())
    for elapsed, out in seen:
        assert out["ok"] and out["result"] == 2, out
        assert elapsed < 3, f"a bystander's 1+1 took {elapsed:.1f} s during {hostile!r}"
    note = await execute(server, f"tools.notes.get_note(note_id={stored['result']})['text']")
    assert note["result"] == marker, note
    await assert_still_serving(server, gw, boot)


async def test_an_output_schema_is_not_checked_on_the_event_loop(
    server: FastMCP, gw: Gateway
) -> None:
    """The MCP SDK checked each result against the tool's output schema with jsonschema on
    the event loop: a `pattern` of `^(a+)+$` on 27 characters took 11 s and 2,000 dicts
    under `uniqueItems` 8 s, every client frozen (outside attack 120). Results pass as sent."""
    started = time.perf_counter()
    out = await execute(
        server,
        "r = tools.hostile.backtracking(n=40, items=3000)\n[r['s'][-3:], len(r['u'])]",
        wait_s=60,
    )
    elapsed = time.perf_counter() - started
    assert out["result"] == ["aa!", 3000], out["error"]
    assert elapsed < 20, f"a result checked against its schema for {elapsed:.1f} s"


async def test_what_an_upstream_logs_is_cleaned_clipped_and_rate_limited(
    server: FastMCP, gw: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """fastmcp's default handler wrote an upstream's log messages whole through Rich on the
    event loop: one 60 KB word at "error" held every client for 27 s (5 MB: minutes), and
    escape sequences reached stderr (outside attack 118). A message is written cleaned, at
    most a thousand characters, at warning at most, and a flood mostly dropped and counted."""
    word = "\x1b[2J\x1b]52;c;aGVsbG8=\x07" + "y" * 100_000
    caplog.set_level(logging.DEBUG, logger="mcp_code_mode.upstreams")
    started = time.perf_counter()
    code = "tools.hostile.log(text=input['s'], level='emergency', count=300)"
    out = await execute(server, code, input={"s": word}, wait_s=60)
    bystander = await execute(server, "tools.notes.list_notes() and 2", wait_s=20)
    elapsed = time.perf_counter() - started
    assert out["result"] == 300 and bystander["result"] == 2, (out["error"], bystander)
    lines = [r for r in caplog.records if r.name.endswith("server_log")]
    assert 20 <= len(lines) <= 40, len(lines)  # a burst, then two a second
    assert {r.levelno for r in lines} == {logging.WARNING}, {r.levelno for r in lines}
    for record in lines:
        text = record.getMessage()
        assert len(text) < 1200 and not UNCLEAN.search(text), text[:300]
    assert any("earlier messages dropped" in r.getMessage() for r in lines[1:]) or len(lines) == 20
    assert elapsed < 30, f"300 log messages of 100 KB took the gateway {elapsed:.1f} s"


# --- concrete regressions ---------------------------------------------------------------


@pytest.mark.parametrize(
    "code", ["1+" * 3999 + "1", "-" * 7999 + "1"], ids=["binop-chain", "unary-chain"]
)
async def test_parser_limits_are_a_result_value(server: FastMCP, gw: Gateway, code: str) -> None:
    boot = await boot_of(gw)
    out = await execute(server, code)
    if not out["ok"]:
        assert out["error"]["type"] in {"POLICY_VIOLATION", "EXECUTOR_ERROR", "SYNTAX_ERROR"}
    await assert_still_serving(server, gw, boot)


async def test_result_nested_900_deep(server: FastMCP, gw: Gateway) -> None:
    boot = await boot_of(gw)
    await execute(server, "x = []\nfor _ in range(900):\n    x = [x]\nx")
    await assert_still_serving(server, gw, boot)


async def test_empty_log_line_flood_stays_within_the_cap(server: FastMCP, gw: Gateway) -> None:
    boot = await boot_of(gw)
    started = time.perf_counter()
    await execute(server, "for i in range(3_000_000):\n    log()", timeout_s=60, wait_s=75)
    assert time.perf_counter() - started < 60
    await assert_still_serving(server, gw, boot)


async def test_call_tool_with_a_huge_name(server: FastMCP, gw: Gateway) -> None:
    boot = await boot_of(gw)
    started = time.perf_counter()
    out = await execute(server, "call_tool('x' * 3_000_000, 'y')")
    assert time.perf_counter() - started < 5
    assert out["error"]["type"] == "TOOL_ERROR", out["error"]
    await assert_still_serving(server, gw, boot)


async def test_huge_search_query_from_code_answers_quickly(server: FastMCP, gw: Gateway) -> None:
    started = time.perf_counter()
    out = await execute(server, "search_tools('refund orders customers ' * 200_000)")
    elapsed = time.perf_counter() - started
    assert out["ok"] and isinstance(out["result"], list), out["error"]
    assert elapsed < 3, f"a 4.6 MB query took {elapsed:.1f} s (only 1,000 characters count)"


async def test_huge_tool_argument_is_refused(server: FastMCP, gw: Gateway) -> None:
    boot = await boot_of(gw)
    await gw.call_tool("hostile", "stats", {"reset": True})
    out = await execute(server, "tools.hostile.length(text='x' * 40_000_000)", timeout_s=30)
    assert not out["ok"] and out["error"]["type"] == "TOOL_ERROR", out["error"]
    assert "MCP_CODE_MAX_CALL_BYTES" in out["error"]["message"], out["error"]
    stats = await gw.call_tool("hostile", "stats", {})
    assert isinstance(stats, dict) and stats["largest_arg"] < 1_000_000, "the upstream got it"
    fits = await execute(server, "tools.hostile.length(text='x' * 900_000)", timeout_s=30)
    assert fits["ok"] and fits["result"] == 900_000, fits["error"]
    await assert_still_serving(server, gw, boot)


async def test_calls_in_flight_per_run_are_bounded(
    flood_server: FastMCP, flood_gw: Gateway
) -> None:
    await flood_gw.call_tool("hostile", "stats", {"reset": True})
    code = "max(call_tools([('hostile', 'slow', {'seconds': 0.3})] * 100))"
    out = await execute(flood_server, code, timeout_s=30)
    assert out["ok"], out["error"]
    stats = await flood_gw.call_tool("hostile", "stats", {})
    assert isinstance(stats, dict)
    assert stats["max_inflight"] <= 16 and out["result"] <= 16, (
        f"the upstream saw {stats['max_inflight']} calls of one run at once (bound 16)"
    )


@pytest.mark.parametrize("count", [20_000, 900], ids=["20000-calls", "900-calls"])
async def test_call_flood_ends_at_the_time_limit(
    flood_server: FastMCP, flood_gw: Gateway, count: int
) -> None:
    """900 stays under the default MCP_CODE_MAX_TOOL_CALLS, so only the time limit ends it."""
    boot = await boot_of(flood_gw)
    started = time.perf_counter()
    # each call outlives the run and the per-call limit: only cancellation ends it early
    code = f"call_tools([('hostile', 'slow', {{'seconds': 30.0}})] * {count})"
    out = await execute(flood_server, code, timeout_s=3, wait_s=60)
    elapsed = time.perf_counter() - started
    assert elapsed < 3 + 2, f"a 3 s run took {elapsed:.1f} s"
    assert not out["ok"] and out["error"]["type"] in {"TIMEOUT", "TOOL_CALL_LIMIT"}, out["error"]
    calls = out["tool_calls"]
    assert len(calls) <= 20 or all("count" in c for c in calls), calls[:3]
    for _ in range(20):  # the run's server-side work is cancelled with it
        stats = await flood_gw.call_tool("hostile", "stats", {})
        if isinstance(stats, dict) and stats["inflight"] == 0:
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail(f"calls of the ended run are still running upstream: {stats}")
    await assert_still_serving(flood_server, flood_gw, boot)


# --- the same over real stdio -----------------------------------------------------------

STDIO_CASES = [
    ("chr(0xD800)", lambda out: out["result"] == "\ufffd"),
    ("print(chr(0xDFFF))", lambda out: out["stdout"] == "\ufffd\n"),
    ("log(chr(0xD800))", lambda out: out["logs"] == ["\ufffd"]),
    ("raise ValueError(chr(0xD800))", lambda out: out["error"]["type"] == "RUNTIME_ERROR"),
    (
        r"""tools.hostile.reply(text='{"title": "Launch day \\ud83d"}')""",
        lambda out: out["result"] == {"title": "Launch day \ufffd"},
    ),
]


async def test_unencodable_text_over_stdio(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        **QUIET,
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "FASTMCP_SHOW_SERVER_BANNER": "false",
        "MCP_CODE_POOL_SIZE": "1",
        "MCP_CODE_MAX_OUTPUT_CHARS": str(CAP),
    }
    transport = StdioTransport(
        command=sys.executable,
        args=[
            "-m",
            "mcp_code_mode.executor_server",
            "--config",
            str(_config(tmp_path, with_others=False)),
        ],
        env=env,
        cwd=str(tmp_path),
        keep_alive=False,
    )

    async def call(client: Client, code: str) -> dict[str, Any]:
        try:
            result = await asyncio.wait_for(
                client.call_tool_mcp("execute_code", {"code": code}), 20
            )
        except TimeoutError:
            pytest.fail(f"no answer over stdio to {code!r}: the server's writer is gone?")
        except MCPError as exc:
            pytest.fail(f"MCP protocol error over stdio for {code!r}: {exc}")
        return check_reply(result)

    async with Client(transport, init_timeout=60) as client:
        for code, expected in STDIO_CASES:
            out = await call(client, code)
            assert expected(out), f"{code!r} -> {out}"
            nxt = await call(client, "1+1")
            assert nxt["ok"] and nxt["result"] == 2, f"after {code!r}: {nxt}"

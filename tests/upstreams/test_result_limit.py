"""MCP_CODE_MAX_RESULT_BYTES (contract §5, §7): a reply bigger than the limit fails its call
with TOOL_ERROR at once, is not read into memory, and leaves the upstream connected.

Real upstreams (`tests/servers/big_reply_upstream.py`, no MCP library) over stdio, streamable
HTTP with JSON bodies, and streamable HTTP with event-stream bodies, behind a real gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.upstreams.asks import AskBudget, unasked
from mcp_code_mode.upstreams.http_limit import BoundedEvents

from ..support import QUIET, ConfigWriter, make_settings
from ..test_upstream_healing import free_port, run, status, value

SERVER = str(Path(__file__).parents[1] / "servers" / "big_reply_upstream.py")
SSE_SERVER = str(Path(__file__).parents[1] / "servers" / "big_sse_upstream.py")
LIMIT = 1_000_000
KINDS = ["stdio", "http-json", "http-sse"]


async def _listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the upstream exited with {proc.returncode}"
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise AssertionError("the HTTP upstream did not start listening")


@contextlib.asynccontextmanager
async def _http_upstream(args: Callable[[int], list[str]]) -> AsyncIterator[str]:
    """The URL of a test upstream serving HTTP on a free port, while it runs; `args`: its
    script and arguments given the port."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, *args(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await _listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest_asyncio.fixture(params=KINDS)
async def entry(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, Any]]:
    """A config entry for the big-reply upstream of each transport kind."""
    if request.param == "stdio":
        yield {"command": "python", "args": [SERVER], "env": dict(QUIET)}
        return
    sse = ["--sse"] if request.param == "http-sse" else []
    async with _http_upstream(lambda port: [SERVER, "--http", str(port), *sse]) as url:
        yield {"url": url, "transport": "http"}


async def _gateway(path: Path, limit: int = LIMIT) -> Gateway:
    gateway = Gateway(make_settings(max_result_bytes=limit, timeout_s=30.0), load_config(path))
    await gateway.start()
    return gateway


async def test_a_reply_over_the_limit_fails_its_call_and_keeps_the_connection(
    entry: dict[str, Any], write_config: ConfigWriter
) -> None:
    gw = await _gateway(write_config({"b": entry}))
    try:
        pid = (await value(gw, "tools.b.boot()"))["pid"]
        for id_last in (False, True):
            started = time.monotonic()
            out = await run(gw, f"tools.b.big(size=2_000_000, id_last={id_last})", timeout_s=60)
            assert time.monotonic() - started < 15  # answered, not timed out (30 s)
            assert not out["ok"]
            error = out["error"]
            assert error["type"] == "TOOL_ERROR", error
            assert "MCP_CODE_MAX_RESULT_BYTES (1,000,000)" in error["message"], error
            assert "2,000,0" in error["message"] or "more than 1,000,000" in error["message"]
            assert "upstream failed" not in error["message"]  # not a lost connection
        # The same connection (the same process, for stdio) answers the next calls.
        assert (await value(gw, "tools.b.boot()"))["pid"] == pid
        assert await value(gw, "len(tools.b.big(size=500_000))") == 500_000
        assert await value(gw, "tools.b.echo(text='after')") == "after"
        assert status(gw, "b")["status"] == "ok"
    finally:
        await gw.aclose()


async def test_a_small_result_limit_bounds_results_not_the_handshake_or_listing(
    entry: dict[str, Any], write_config: ConfigWriter
) -> None:
    """The limit is on results (contract §5): at 100,000 a 600-tool upstream, its listing
    196 KB, never started, and every call to it failed (attack 133)."""
    gw = await _gateway(write_config({"b": entry}), limit=300)
    try:
        assert status(gw, "b")["status"] == "ok", status(gw, "b")
        assert await value(gw, "tools.b.echo(text='small')") == "small"
        out = await run(gw, "tools.b.big(size=5_000)", timeout_s=60)
        assert out["error"]["type"] == "TOOL_ERROR", out
        assert "MCP_CODE_MAX_RESULT_BYTES (300)" in out["error"]["message"], out["error"]
        assert await value(gw, "tools.b.echo(text='after')") == "after"
    finally:
        await gw.aclose()


async def test_a_line_that_is_not_json_rpc_is_answered_not_timed_out(
    write_config: ConfigWriter,
) -> None:
    entry = {"command": "python", "args": [SERVER], "env": dict(QUIET)}
    gw = await _gateway(write_config({"b": entry}))
    try:
        pid = (await value(gw, "tools.b.boot()"))["pid"]
        started = time.monotonic()
        out = await run(gw, "tools.b.broken()", timeout_s=60)
        assert time.monotonic() - started < 15
        assert out["error"]["type"] == "TOOL_ERROR"
        assert "not a JSON-RPC message" in out["error"]["message"], out["error"]
        assert (await value(gw, "tools.b.boot()"))["pid"] == pid
    finally:
        await gw.aclose()


async def test_an_sse_event_over_the_sdks_own_limit_says_which_limit(
    write_config: ConfigWriter,
) -> None:
    """The MCP SDK takes at most 1 MiB in one SSE event: a reply between that and a higher
    MCP_CODE_MAX_RESULT_BYTES fails with a message naming the SDK's limit."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port), "--sse"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await _listening(port, proc)
        path = write_config({"b": {"url": f"http://127.0.0.1:{port}/mcp"}})
        gw = await _gateway(path, limit=3_000_000)
        try:
            out = await run(gw, "tools.b.big(size=2_000_000)", timeout_s=60)
            assert out["error"]["type"] == "TOOL_ERROR"
            assert "MCP SDK takes in one SSE event" in out["error"]["message"], out["error"]
            assert await value(gw, "tools.b.echo(text='after')") == "after"
        finally:
            await gw.aclose()
    finally:
        proc.kill()
        proc.wait(timeout=10)


async def test_a_timed_out_calls_stream_is_not_read_on(write_config: ConfigWriter) -> None:
    """The MCP SDK kept reading the event stream of a call that had timed out (and been
    cancelled upstream) for as long as the upstream kept it open: 32 timed-out calls kept 33
    connections and most of a core busy for minutes (outside attack 118), and resumed a
    stream (GET with `Last-Event-ID`) the same; and pings on a call's stream whose answers
    the upstream never took blocked the SDK's writes, so no cancel went out and memory grew
    by 7 MB a second (attack 120). The streams end with their call; the connection answers
    the next call."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port), "--sse", "--hold-answers"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await _listening(port, proc)
        path = write_config({"b": {"url": f"http://127.0.0.1:{port}/mcp", "timeout_s": 1}})
        gw = await _gateway(path)
        try:
            kinds = "['endless', 'resumed', 'pings'] * 3"
            # and one whose arguments are past 64 KB (its id is read at the body's head)
            big = "('b', 'endless', {'pad': 'x' * 70_000})"
            code = (
                f"r = call_tools([('b', t, {{}}) for t in {kinds}] + [{big}])\n[str(e) for e in r]"
            )
            timed_out = await value(gw, code)
            assert all("timed out after 1s" in e for e in timed_out), timed_out
            deadline, still_open = time.monotonic() + 30, -1
            while time.monotonic() < deadline and still_open != 0:
                await asyncio.sleep(0.2)
                # an upstream that never takes our answers to its pings loses its connection
                # (the POST of an answer waits 10 s), and the next call connects again
                out = await run(gw, "tools.b.open_streams()")
                still_open = out["result"] if out["ok"] else -1
            assert still_open == 0, f"{still_open} streams of timed-out calls still read"
            assert await value(gw, "tools.b.echo(text='after')") == "after"
        finally:
            await gw.aclose()
    finally:
        proc.kill()
        proc.wait(timeout=10)


async def test_an_sse_upstream_keeps_its_connection_after_a_refused_reply(
    write_config: ConfigWriter,
) -> None:
    """On the older HTTP+SSE transport every reply comes on one long event stream, which the
    MCP SDK ends when one event is too big: the line is cut before that and answered."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SSE_SERVER, "--port", str(port)],
        env={**os.environ, **QUIET},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await _listening(port, proc)
        path = write_config({"b": {"url": f"http://127.0.0.1:{port}/sse", "transport": "sse"}})
        gw = await _gateway(path)
        try:
            started = time.monotonic()
            out = await run(gw, "tools.b.big(size=2_000_000)", timeout_s=60)
            assert time.monotonic() - started < 15
            assert out["error"]["type"] == "TOOL_ERROR"
            assert "MCP_CODE_MAX_RESULT_BYTES (1,000,000)" in out["error"]["message"], out
            # fastmcp sends the text twice (content and structuredContent): 600 KB in all.
            assert await value(gw, "len(tools.b.big(size=300_000))") == 300_000
            assert await value(gw, "tools.b.echo(text='after')") == "after"
            assert status(gw, "b")["status"] == "ok"
        finally:
            await gw.aclose()
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
async def test_refusing_a_big_reply_does_not_hold_it(write_config: ConfigWriter) -> None:
    """A 60 MB reply over stdio, refused at 1 MB: this process's peak memory grows by far
    less than the reply (the whole line is never held)."""
    entry = {"command": "python", "args": [SERVER], "env": dict(QUIET)}
    gw = await _gateway(write_config({"b": entry}))
    try:
        await value(gw, "tools.b.boot()")
        before = _peak_kb()
        out = await run(gw, "tools.b.big(size=60_000_000)", timeout_s=60)
        assert out["error"]["type"] == "TOOL_ERROR"
        assert "60,000," in out["error"]["message"]
        assert _peak_kb() - before < 20_000  # KB; the reply is 60,000 KB
    finally:
        await gw.aclose()


def _peak_kb() -> int:
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


PAGED = str(Path(__file__).parents[1] / "servers" / "malformed_upstream.py")


async def _paged_gateway(
    write_config: ConfigWriter, pages: int, per_page: int, described: int = 200, junk: int = 0
) -> Gateway:
    args = [PAGED, "--pages", str(pages), "--page-tools", str(per_page)]
    args += ["--description-chars", str(described), "--junk-chars", str(junk)]
    entry = {"command": sys.executable, "args": args, "env": dict(QUIET)}
    settings = make_settings(max_result_bytes=LIMIT)
    gw = Gateway(settings, load_config(write_config({"paged": entry})), connect="wait")
    await gw.start()
    return gw


async def test_a_listing_is_bounded_as_one_reply_however_it_is_paged(
    write_config: ConfigWriter,
) -> None:
    """Each page under the bound, 30 pages of 1 MB: fastmcp followed up to 250 pages and
    the gateway kept every tool (300,000 tools, 2.8 GB, a frozen loop: attack 132)."""
    gw = await _paged_gateway(write_config, pages=30, per_page=50, described=20_000)
    try:
        row = status(gw, "paged")
        assert row["status"] == "error" and row["tool_count"] == 0, row
        assert "bigger than 10,000,000 bytes" in row["error"], row
        assert (await value(gw, "1 + 1")) == 2
    finally:
        await gw.aclose()


async def test_a_listing_is_counted_as_it_came_not_as_it_parsed(
    write_config: ConfigWriter,
) -> None:
    """Pages of 4 MB on the wire under a key given twice, ~100 bytes once parsed: counted
    as parsed, 10 pages of 9 MB passed the 10 MB bound (attack 134)."""
    gw = await _paged_gateway(write_config, pages=4, per_page=1, junk=4_000_000)
    try:
        row = status(gw, "paged")
        assert row["status"] == "error" and "bigger than 10,000,000 bytes" in row["error"], row
    finally:
        await gw.aclose()


async def test_a_listing_under_the_bound_has_every_page(write_config: ConfigWriter) -> None:
    gw = await _paged_gateway(write_config, pages=4, per_page=3)
    try:
        assert status(gw, "paged")["tool_count"] == 10 + 3 * 4
        assert (await value(gw, "tools.paged.echo(text='p')")) == "p"
        assert "paged_3_2" in await value(gw, "get_tool_docs('paged', 'paged_3_2')")
    finally:
        await gw.aclose()


CROSSED_HTTP = str(Path(__file__).parents[1] / "servers" / "crossed_http_upstream.py")


@contextlib.asynccontextmanager
async def _crossed(kind: str) -> AsyncIterator[dict[str, Any]]:
    """An upstream whose `crossed` tool sends a 3 MB result as another request's reply."""
    if kind == "stdio":
        yield {"command": sys.executable, "args": [PAGED], "env": dict(QUIET)}
        return
    async with _http_upstream(lambda port: [CROSSED_HTTP, str(port)]) as url:
        yield {"url": url}


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_a_result_sent_as_another_requests_reply_is_held_to_the_limit(
    write_config: ConfigWriter, kind: str
) -> None:
    """A 3 MB result past a 100 KB limit (attack 134): over stdio on a line whose first
    `"id"` was a pending tools/list's (allowed 10 MB) and whose last, the one the parser
    keeps, the call's; over HTTP as the JSON reply to the tools/list POST the gateway sent
    after the call's `tools/list_changed`, under the call's id (the SDK handed it on)."""
    async with _crossed(kind) as entry:
        gw = await _gateway(write_config({"raw": entry}), limit=100_000)
        try:
            out = await run(gw, "len(tools.raw.crossed())", timeout_s=60)
            assert not out["ok"] and out["error"]["type"] == "TOOL_ERROR", out["result"]
            assert await value(gw, "tools.raw.echo(text='after')") == "after"
        finally:
            await gw.aclose()


@pytest.mark.parametrize("spelling", ["plain", "escaped", "cr", "space", "utf7", "badutf8"])
async def test_an_http_upstreams_own_requests_are_taken_at_a_bounded_rate(
    write_config: ConfigWriter, spelling: str
) -> None:
    """2,000 pings on the GET stream: each answer is a POST, sent one at a time, and they
    piled up without bound (355 → 468 MB in 50 s, no call made; attack 135). Spelt as the
    SDK reads them and a check of the text did not (an escaped `id`, lines ended by `\r`,
    a line of one space inside an event), they passed uncounted (attack 137), and so did
    a stream in another charset and a byte that is not UTF-8 (139)."""
    server = str(Path(__file__).parents[1] / "servers" / "asking_http_upstream.py")
    async with _http_upstream(lambda port: [server, str(port), "2000", spelling]) as url:
        gw = await _gateway(write_config({"asker": {"url": url}}))
        try:
            started = time.monotonic()
            assert await value(gw, "tools.asker.echo(text='x')") == "{'text': 'x'}"
            await asyncio.sleep(3)
            answered = int(await value(gw, "tools.asker.answers()"))
            elapsed = time.monotonic() - started
            floor = 0 if spelling == "utf7" else 1  # read as UTF-8: no request at all
            assert floor <= answered <= 50 + 20 * elapsed + 20, (answered, elapsed)
        finally:
            await gw.aclose()


async def test_announcements_in_a_flood_are_listed_at_a_bounded_rate(
    write_config: ConfigWriter,
) -> None:
    """2,000 `tools/list_changed` a second made 20 listings a second of a small list, a
    third of a core (attack 135): listings rest at least a quarter second."""
    entry = {"command": sys.executable, "args": [PAGED], "env": dict(QUIET)}
    gw = await _gateway(write_config({"raw": entry}))
    try:
        before = int(await value(gw, "tools.raw.listed()"))
        started = time.monotonic()
        await value(gw, "tools.raw.announce(seconds=2)")
        await asyncio.sleep(2.5)
        listings = int(await value(gw, "tools.raw.listed()")) - before
        elapsed = time.monotonic() - started
        assert 1 <= listings <= 2 + elapsed / 0.25, (listings, elapsed)
    finally:
        await gw.aclose()


def test_what_an_upstream_sends_unasked_is_read_as_the_sdk_reads_it_and_budgeted() -> None:
    """Notifications had no budget: 2,000 `tools/list_changed` a second still kept a third of
    a core busy once listings rested (attack 137)."""
    note = b'data: {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}'
    assert unasked([b"event: message", note]) == "notification"
    assert unasked([b'data: {"jsonrpc": "2.0", "\\u0069d": 1, "method": "ping"}']) == "request"
    assert unasked([b'data: {"jsonrpc": "2.0", "id": 1, "result": {"method": 1}}']) is None
    # no RecursionError; what json cannot read but names a method is counted (attack 139)
    assert unasked([b"data: " + b"[" * 100_000 + b'"method"']) == "request"
    assert unasked([b'data: {"jsonrpc": "2.0", "id": 1, "method": "ping", "x": "\xff"}']) == (
        "request"
    )
    budget = AskBudget(rate=20.0, burst=50)
    taken = sum(budget.take("notification") for _ in range(2_000))
    assert 200 <= taken < 260 and budget.dropped == 2_000 - taken


async def test_comment_lines_do_not_make_an_event_too_long_to_count() -> None:
    """Each request padded with 1 MB of `:` comment lines, which the SDK does not count in
    an event's size, passed on uncounted as an event too long for the SDK (attack 139)."""
    pad = (b":" + b"x" * 1023 + b"\n") * 1100
    event = b'event: message\ndata: {"jsonrpc":"2.0","id":1,"method":"ping"}\n' + pad + b"\n"

    class Upstream(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for _ in range(40):
                yield event

    events = BoundedEvents(Upstream(), httpx2.Request("GET", "http://127.0.0.1/mcp"), 10 << 20)
    events.asks = AskBudget(rate=0.001, burst=5)
    passed = b"".join([chunk async for chunk in events])
    assert passed.count(b'"method":"ping"') == 5 and events.asks.dropped == 35


async def _read_measured(upstream: httpx2.AsyncByteStream) -> tuple[int, int]:
    """The bytes a GET stream with budgeted asks passes on, and the peak memory held."""
    events = BoundedEvents(upstream, httpx2.Request("GET", "http://127.0.0.1/mcp"), 10 << 20)
    events.asks = AskBudget(rate=20.0, burst=50)
    tracemalloc.start()
    try:
        passed = sum([len(chunk) async for chunk in events])
        return passed, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_comment_lines_that_never_end_an_event_are_not_held() -> None:
    """Uncounted comment lines were still held as part of the event being read: a GET stream
    of 512 KB comment lines that never ended an event grew the gateway by 110 MB a second
    (attack 140). The SDK ignores comments, so they are dropped as they come."""
    line = b":" + b"x" * (512 * 1024 - 2) + b"\n"

    class Upstream(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b'data: {"jsonrpc":"2.0","method":"notifications/message"}\n'
            for _ in range(200):  # 100 MB
                yield line

    passed, peak = await _read_measured(Upstream())
    assert passed < 1_000 and peak < 8 << 20, (passed, peak)


async def test_an_event_of_one_byte_lines_is_held_at_its_size() -> None:
    """An event of 1,000,000 lines of one byte counted 1 MB but held a list of a million
    bytes objects, 42 MB a stream: 16 calls took the gateway to 1 GB (attack 140)."""

    class Upstream(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for _ in range(100):
                yield b"x\n" * 10_000

    passed, peak = await _read_measured(Upstream())
    assert passed == 2_000_000 and peak < 12 << 20, (passed, peak)

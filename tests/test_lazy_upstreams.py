"""Upstreams that start in the background or on demand, and the tool cache that serves the
catalog meanwhile (issue 19), through real stdio upstreams and a real MCP client."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.logging import LogMessage
from fastmcp.client.transports import StdioTransport
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_code_mode.config import load_config
from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import DISCOVERY_WAIT_S, Gateway
from mcp_code_mode.reach import servers_reached, starting_note
from mcp_code_mode.upstreams.cache import ToolCache

from .support import QUIET, SECRET, TEST_SERVER, make_settings, server_entry
from .test_upstream_healing import HEALING_SERVER

START_DELAY_S = 3.0


def slow_entry(delay_s: float = START_DELAY_S) -> dict[str, Any]:
    """The test upstream, started `delay_s` late (as a server with a slow start-up is)."""
    boot = (
        f"import runpy, sys, time; time.sleep({delay_s}); sys.argv = [{TEST_SERVER!r}]; "
        f"runpy.run_path({TEST_SERVER!r}, run_name='__main__')"
    )
    return {"command": "python", "args": ["-c", boot], "env": dict(QUIET)}


def write(tmp_path: Path, servers: dict[str, Any]) -> Path:
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": servers}))
    return path


def gateway(tmp_path: Path, servers: dict[str, Any], connect: Any, **overrides: Any) -> Gateway:
    config = load_config(write(tmp_path, servers))
    cache = ToolCache(tmp_path / "cache")
    return Gateway(make_settings(**overrides), config, connect=connect, tool_cache=cache)


# ---------------------------------------------------------------- the cache itself


def test_cache_round_trip_is_keyed_by_what_starts_the_server(tmp_path: Path) -> None:
    servers = {"t": {**server_entry(TEST_SERVER), "env": {"API_KEY": SECRET}}}
    config = load_config(write(tmp_path, servers))
    cache = ToolCache(tmp_path / "c")
    entry = config.servers["t"]
    cache.store("t", entry, [{"name": "echo", "inputSchema": {"type": "object"}}])
    assert cache.load("t", entry) == [{"name": "echo", "inputSchema": {"type": "object"}}]
    # Another command, another env value, another name: another entry.
    other = entry.model_copy(update={"env": {"API_KEY": "other"}})
    assert cache.load("t", other) is None
    assert cache.load("u", entry) is None
    # The env value (a secret) is hashed, never written.
    (written,) = (tmp_path / "c").iterdir()
    assert SECRET not in written.read_text() and written.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "body", [b"", b"{", b"[]", b'{"tools": 3}', b'{"tools": [1]}', b"\xff\xfe"]
)
def test_a_damaged_cache_file_is_a_miss(tmp_path: Path, body: bytes) -> None:
    config = load_config(write(tmp_path, {"t": server_entry(TEST_SERVER)}))
    cache = ToolCache(tmp_path / "c")
    cache.store("t", config.servers["t"], [{"name": "echo", "inputSchema": {}}])
    (written,) = (tmp_path / "c").iterdir()
    written.write_bytes(body)
    assert cache.load("t", config.servers["t"]) is None


def test_an_unwritable_cache_costs_only_speed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    config = load_config(write(tmp_path, {"t": server_entry(TEST_SERVER)}))
    cache = ToolCache(blocker / "tools")
    cache.store("t", config.servers["t"], [{"name": "echo"}])  # no exception
    assert cache.load("t", config.servers["t"]) is None


# ---------------------------------------------------------------- background start


async def test_background_start_serves_before_a_slow_upstream_answers(tmp_path: Path) -> None:
    gw = gateway(tmp_path, {"slow": slow_entry()}, "background")
    started = time.monotonic()
    async with gw:
        ready_s = time.monotonic() - started
        assert ready_s < START_DELAY_S  # the sandbox is warm; the upstream is not yet
        quick = await gw.execute("1+1")
        assert quick.ok and quick.result == 2
        assert time.monotonic() - started < START_DELAY_S
        # Code that names the upstream waits for it alone, then sees its tools.
        named = await gw.execute("tools.slow.echo(text='hi')")
        assert named.ok, named.error
        assert named.result == "hi" and time.monotonic() - started >= START_DELAY_S


async def test_a_reply_counts_and_says_the_wait_for_an_upstream_to_start(tmp_path: Path) -> None:
    """Outside attack 138: a run that waited 20 s for an upstream to start said nothing of
    it, and its `duration_ms` left the wait out."""
    gw = gateway(tmp_path, {"slow": slow_entry(7.0)}, "background")
    async with gw:
        began = time.monotonic()
        first = await gw.execute("tools.slow.echo(text='hi')", timeout_s=60)
        took_ms = (time.monotonic() - began) * 1000
        again = await gw.execute("tools.slow.echo(text='hi')")
    assert first.ok and first.result == "hi", first.error
    assert took_ms >= first.duration_ms >= took_ms - 500 and first.duration_ms > 5000
    assert first.logs[0].startswith("gateway: the code waited"), first.logs
    assert again.ok and again.logs == [] and again.duration_ms < 5000


async def test_a_run_waits_for_an_upstream_most_of_its_limit(tmp_path: Path) -> None:
    """The wait is within the run's limit but takes most of it: an upstream that starts in
    3 s serves a run of `timeout_s` 20 (the code keeps 2 s; a busy CI machine took 6 s to
    start the upstream's interpreter and its 3 s, so the limit is not 8 s)."""
    gw = gateway(tmp_path, {"slow": slow_entry(3.0)}, "on_demand", startup_timeout_s=60)
    async with gw:
        out = await gw.execute("tools.slow.echo(text='in time')", timeout_s=20)
    assert out.ok and out.result == "in time", out.error
    assert 3000 <= out.duration_ms < 20000 + 1500, out.duration_ms


async def test_a_run_that_gave_up_waiting_says_a_longer_limit_waits_longer(tmp_path: Path) -> None:
    """The wait is within the run's limit (outside attack 140: a run of `timeout_s` 5 took
    10 s, the wait and then 5 s of code), and the gateway's note does not count against the
    code's output (140: it turned 900 characters of stdout under a 1,000 cap into
    OUTPUT_LIMIT)."""
    servers = {"slow": slow_entry(30.0)}
    gw = gateway(tmp_path, servers, "on_demand", startup_timeout_s=60, max_output_chars=1000)
    fits = "try:\n    tools.slow.echo(text='hi')\nexcept ToolError:\n    pass\nprint('a' * 900)"
    async with gw:
        began = time.monotonic()
        early = await gw.execute("tools.slow.echo(text='hi')", timeout_s=5)
        took_s = time.monotonic() - began
        printed = await gw.execute(fits, timeout_s=4)
        spun = await gw.execute(
            "try:\n    tools.slow.echo(text='hi')\nexcept ToolError:\n    pass\nwhile True: pass",
            timeout_s=4,
        )
    assert not early.ok and 3750 <= early.duration_ms <= took_s * 1000 < 5000 + 1500, took_s
    assert "slow still starting: a larger timeout_s waits longer" in early.logs[0], early.logs
    assert printed.ok and printed.stdout == "a" * 900 + "\n", printed.error
    assert printed.logs[0].startswith("gateway: the code waited"), printed.logs
    assert spun.error is not None and spun.error.type.value == "TIMEOUT", spun.error
    message = spun.error.message
    assert re.search(r"its 4s time limit \(3\.\d s of it waiting for upstreams\)", message), message
    assert spun.duration_ms < 4000 + 1500, spun.duration_ms


async def test_discovery_through_mcp_waits_for_upstreams_still_connecting(tmp_path: Path) -> None:
    gw = gateway(tmp_path, {"slow": slow_entry(1.0)}, "background")
    async with gw, Client(build_server(gw)) as client:
        began = time.monotonic()
        rows = json.loads((await client.call_tool_mcp("list_servers", {})).content[0].text)
        for _ in range(30):  # a busy machine: past the discovery wait, `starting` is right
            if rows[0]["status"] != "starting":
                break
            assert time.monotonic() - began >= DISCOVERY_WAIT_S * 0.9  # but it did wait
            rows = json.loads((await client.call_tool_mcp("list_servers", {})).content[0].text)
        assert [(r["name"], r["status"]) for r in rows] == [("slow", "ok")]
        hits = await client.call_tool_mcp("search_tools", {"query": "echo text"})
        assert any(h["tool"] == "echo" for h in json.loads(hits.content[0].text))


async def test_the_cache_fills_then_serves_the_next_start(tmp_path: Path) -> None:
    servers = {"slow": slow_entry()}
    async with gateway(tmp_path, servers, "wait") as first:
        names = {e.tool for e in first.catalog.entries}
    assert "echo" in names and list((tmp_path / "cache").iterdir())
    started = time.monotonic()
    async with gateway(tmp_path, servers, "background") as second:
        # Before the upstream answers, the catalog (and search) come from the cache.
        assert {e.tool for e in second.catalog.entries} == names
        assert second.search_tools("echo", 1)[0]["tool"] == "echo"
        assert time.monotonic() - started < START_DELAY_S


async def test_a_stale_cache_is_replaced_by_what_the_upstream_lists(tmp_path: Path) -> None:
    servers = {"t": server_entry(TEST_SERVER)}
    config = load_config(write(tmp_path, servers))
    cache = ToolCache(tmp_path / "cache")
    cache.store("t", config.servers["t"], [{"name": "retired_tool", "inputSchema": {}}])
    async with gateway(tmp_path, servers, "background") as gw:
        assert [e.tool for e in gw.catalog.entries] == ["retired_tool"]
        await gw.settle(wait_s=None)
        tools = {e.tool for e in gw.catalog.entries}
        assert "retired_tool" not in tools and "echo" in tools
        # The code is checked against the live list: the retired tool is gone.
        gone = await gw.execute("tools.t.retired_tool()")
        assert not gone.ok and "retired_tool" in gone.error.message  # type: ignore[union-attr]
    stored = cache.load("t", config.servers["t"])
    assert stored is not None and "retired_tool" not in {t["name"] for t in stored}


# ---------------------------------------------------------------- on demand


async def test_on_demand_starts_only_what_the_code_reaches(tmp_path: Path) -> None:
    servers = {"a": server_entry(TEST_SERVER), "b": server_entry(TEST_SERVER)}
    async with gateway(tmp_path, servers, "on_demand") as gw:
        assert (await gw.execute("1+1")).result == 2
        assert gw.manager.state("a") == gw.manager.state("b") == "connecting"
        assert (await gw.execute("tools.a.echo(text='x')")).result == "x"
        assert gw.manager.state("a") == "ok" and gw.manager.state("b") == "connecting"
        # A name the source does not spell out starts on its call.
        late = await gw.execute("call_tool('b' * 1, 'echo', {'text': 'y'})")
        assert late.ok and late.result == "y" and gw.manager.state("b") == "ok"


async def test_on_demand_upstream_that_fails_to_start_fails_the_call_clearly(
    tmp_path: Path,
) -> None:
    servers = {"gone": {"command": "/nonexistent/cmd"}, "t": server_entry(TEST_SERVER)}
    async with gateway(tmp_path, servers, "on_demand") as gw:
        result = await gw.execute(
            "try:\n    tools.gone.x()\nexcept ToolError as e:\n    r = e.message\nr"
        )
        assert result.ok and "/nonexistent/cmd" in result.result
        assert gw.manager.state("t") == "connecting"


async def test_connecting_the_rest_keeps_what_a_run_already_started(tmp_path: Path) -> None:
    """`serve` starts its gateway on demand and connects the upstreams a moment later: one
    a run started meanwhile keeps its process; the others start then."""
    servers = {"a": server_entry(HEALING_SERVER), "b": server_entry(HEALING_SERVER)}
    # The session's shared gateways run in this event loop too: count only new supervisors.
    before = asyncio.all_tasks()
    async with gateway(tmp_path, servers, "on_demand") as gw:
        first = await gw.execute("tools.a.boot()")
        assert first.ok and gw.manager.state("b") == "connecting"
        await gw.connect_upstreams()
        await gw.connect_upstreams()  # twice: no second supervisor per upstream
        supervisors = [t.get_name() for t in asyncio.all_tasks() - before]
        assert sorted(n for n in supervisors if n.startswith("mcp-code-mode upstream ")) == [
            "mcp-code-mode upstream a",
            "mcp-code-mode upstream b",
        ]
        await gw.settle(wait_s=None)  # however slow the machine: they start
        assert gw.manager.state("a") == gw.manager.state("b") == "ok"
        again = await gw.execute("[tools.a.boot(), tools.b.boot()]")
        assert again.ok and again.result[0] == first.result
        assert again.result[1]["pid"] != first.result["pid"]


async def test_serve_over_stdio_connects_the_upstreams_without_being_asked(
    tmp_path: Path,
) -> None:
    """Over stdio the upstreams start just after serving begins: with no call naming one
    (the guest's `list_servers()` only looks), they all come up; a run that names one
    before then starts it itself."""
    servers = {"a": server_entry(HEALING_SERVER), "b": server_entry(HEALING_SERVER)}
    transport = StdioTransport(
        sys.executable,
        ["-m", "mcp_code_mode.executor_server", "--config", str(write(tmp_path, servers))],
        env={**QUIET, "MCP_CODE_CACHE_DIR": str(tmp_path / "cache")},
        keep_alive=False,
    )
    async with Client(transport) as client:
        named = await client.call_tool_mcp("execute_code", {"code": "tools.a.boot()['pid']"})
        assert json.loads(named.content[0].text)["ok"]
        look = {"code": "sorted(r['name'] for r in list_servers() if r['status'] == 'ok')"}
        seen: Any = None
        for _ in range(600):  # generous: a busy machine starts python slowly
            seen = json.loads((await client.call_tool_mcp("execute_code", look)).content[0].text)
            if seen.get("result") == ["a", "b"]:
                break
            await asyncio.sleep(0.05)
        assert seen["result"] == ["a", "b"], seen


# ---------------------------------------------------------------- reading the code


SERVERS = ["notes", "my-data", "time"]


@pytest.mark.parametrize(
    ("code", "reached"),
    [
        ("1+1", []),
        ("tools.notes.get_note(note_id=1)", ["notes"]),
        ("await tools.my_data.list_orders()", ["my-data"]),
        ("call_tool('time', 'now', {})", ["time"]),
        ("call_tools([('notes', 'a', {}), ('time', 'b', {})])", ["notes", "time"]),
        ("call_tools([('notes', 'a', {})] * 3)", ["notes"]),
        ("call_tool(name, 'x')", None),
        ("getattr(tools, 'notes')", None),
        ("t = tools\nt.notes.x()", None),
        ("f = call_tool\nf('notes', 'x')", None),
        ("call_tools(calls)", None),
        ("def f(:", []),
        ("tools.nonexistent.x()", []),
    ],
)
def test_servers_reached(code: str, reached: list[str] | None) -> None:
    assert servers_reached(code, SERVERS) == reached


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_servers_reached_takes_any_text(code: str) -> None:
    reached = servers_reached(code, SERVERS)
    assert reached is None or set(reached) <= set(SERVERS)


def test_servers_reached_on_deep_nesting_is_all_or_none() -> None:
    assert servers_reached("(" * 5000 + ")" * 5000, SERVERS) in ([], None)
    assert servers_reached("[" * 150 + "tools" + "]" * 150, SERVERS) in (None,)


def test_the_cache_keeps_only_the_most_recent_entries(tmp_path: Path) -> None:
    from mcp_code_mode.upstreams import cache as tool_cache

    config = load_config(write(tmp_path, {"t": server_entry(TEST_SERVER)}))
    cache = ToolCache(tmp_path / "c")
    entry = config.servers["t"]
    for n in range(tool_cache._KEPT_FILES + 5):
        cache.store(f"s{n}", entry, [{"name": "echo"}])
    assert len(list((tmp_path / "c").glob("*.json"))) == tool_cache._KEPT_FILES
    assert cache.load(f"s{tool_cache._KEPT_FILES + 4}", entry) == [{"name": "echo"}]


# ---------------------------------------------------------------- found by an outside attack


async def test_an_identifier_names_one_server_whichever_others_have_started(
    tmp_path: Path,
) -> None:
    """`a-b` and `a_b` clash: `tools.a_b_2` is `a_b` before, during and after `a-b` starts."""
    servers = {"a-b": server_entry(TEST_SERVER), "a_b": server_entry(TEST_SERVER)}
    config = load_config(write(tmp_path, servers))
    echo = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {}}}}
    # Only `a_b` is remembered: the catalog knows it before `a-b`, which comes first.
    ToolCache(tmp_path / "cache").store("a_b", config.servers["a_b"], [echo])
    async with gateway(tmp_path, servers, "on_demand") as gw:
        second = await gw.execute("tools.a_b_2.echo(text='x')")
        assert second.ok, second.error
        assert [c.server for c in second.tool_calls] == ["a_b"]  # type: ignore[union-attr]
        first = await gw.execute("tools.a_b.echo(text='y')")
        assert [c.server for c in first.tool_calls] == ["a-b"]  # type: ignore[union-attr]
        again = await gw.execute("tools.a_b_2.echo(text='z')")
        assert [c.server for c in again.tool_calls] == ["a_b"]  # type: ignore[union-attr]


async def test_oversized_code_is_refused_without_reading_it(tmp_path: Path) -> None:
    async with gateway(tmp_path, {"t": server_entry(TEST_SERVER)}, "on_demand") as gw:
        started = time.monotonic()
        result = await gw.execute("x = 1\n" * 400_000)
        assert not result.ok and result.error is not None
        assert result.error.type == "POLICY_VIOLATION"
        assert time.monotonic() - started < 5  # generous: it is refused before any parse
        assert gw.manager.state("t") == "connecting"  # nothing was started for it


@pytest.mark.parametrize("planted", ["fifo", "dev_zero", "directory"])
def test_a_planted_cache_entry_is_a_miss_at_once(tmp_path: Path, planted: str) -> None:
    import os

    from mcp_code_mode.upstreams.cache import cache_key

    config = load_config(write(tmp_path, {"t": server_entry(TEST_SERVER)}))
    directory = tmp_path / "c"
    directory.mkdir()
    path = directory / f"{cache_key('t', config.servers['t'])}.json"
    if planted == "fifo":
        os.mkfifo(path)
    elif planted == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    started = time.monotonic()
    assert ToolCache(directory).load("t", config.servers["t"]) is None
    assert time.monotonic() - started < 2


async def test_a_cached_schema_nested_past_the_serialiser_is_a_miss(tmp_path: Path) -> None:
    servers = {"t": server_entry(TEST_SERVER)}
    config = load_config(write(tmp_path, servers))
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(150):
        schema = {"type": "object", "properties": {"a": schema}}
    ToolCache(tmp_path / "cache").store(
        "t", config.servers["t"], [{"name": "deep", "inputSchema": schema}]
    )
    for _ in range(2):  # and again: the entry was replaced by what the upstream listed
        async with gateway(tmp_path, servers, "on_demand") as gw:
            result = await gw.execute("tools.t.echo(text='fine')")
            assert result.ok and result.result == "fine", result.error


async def test_discovery_answers_while_an_upstream_is_still_starting(tmp_path: Path) -> None:
    from mcp_code_mode.gateway import DISCOVERY_WAIT_S

    servers = {"slow": slow_entry(60.0), "t": server_entry(TEST_SERVER)}
    gw = gateway(tmp_path, servers, "background", startup_timeout_s=120)
    logged: list[str] = []

    async def log(message: LogMessage) -> None:
        logged.append(str(message.data))

    async with gw, Client(build_server(gw), log_handler=log) as client:
        # on a busy machine the fast upstream may take longer than one discovery wait
        # to start; every answer still comes within the wait, never after the slow one
        for _ in range(6):
            started = time.monotonic()
            reply = await client.call_tool_mcp("list_servers", {})
            assert time.monotonic() - started < DISCOVERY_WAIT_S + 10
            rows = {r["name"]: r for r in json.loads(reply.content[0].text)}
            if rows["t"]["status"] == "ok":
                break
        assert rows["t"]["status"] == "ok"
        assert rows["slow"]["status"] == "starting" and "still starting" in rows["slow"]["error"]
        # search answers too, and says which servers it could not see yet (attack 138: `[]`)
        reply = await client.call_tool_mcp("search_tools", {"query": "echo"})
        hits = json.loads(reply.content[0].text)
        assert [h["server"] for h in hits][:1] == ["t"]
        # one JSON block, as contract §3 says of every tool; the note is a log message
        assert len(reply.content) == 1 and any("slow is still starting" in m for m in logged)
        reply = await client.call_tool_mcp("execute_code", {"code": "search_tools('echo')"})
        body = json.loads(reply.content[0].text)
        assert body["ok"] and any("slow is still starting" in line for line in body["logs"])
        reply = await client.call_tool_mcp("execute_code", {"code": "list_servers()"})
        assert not json.loads(reply.content[0].text)["logs"]  # a run that did not search


def test_a_starting_note_names_a_few_servers_and_counts_the_rest() -> None:
    rows = [{"name": f"s{i}" * 80, "status": "starting"} for i in range(8)]
    note = starting_note([*rows, {"name": "up", "status": "ok"}]) or ""
    assert note.startswith("search: s0s0") and "and 3 more are still starting" in note
    assert "up" not in note.replace("ok)", "") and len(note) < 700
    assert starting_note([{"name": "up", "status": "ok"}, {"name": "x", "status": "error"}]) is None

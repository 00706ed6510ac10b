"""A real upstream serving hostile schemas and hostile text, behind a real gateway and server.

`tests/servers/schema_upstream.py` (a stdio process) serves tools whose schemas are built to
make rendering slow, and names, descriptions and errors full of terminal escapes, controls
and bidi overrides; a second copy dies at start-up writing such text to stderr.

- Other runs keep answering while hostile schemas are rendered: the median `1+1` run
  while discovery renders them stays within 3x its idle median plus 20 ms (a held loop
  makes every run wait); the test prints both p95s, issue 26's measure (2x on a quiet
  machine: a timing target, not a pass/fail bound on a shared one).
- What the model is shown is clean: `get_tool_docs`, `search_tools`, `list_servers` rows
  and the CLI's `tools` output hold no escape, control (but newline and tab) or bidi
  character, and a tool whose name holds them is still called by its original name.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fastmcp import Client, FastMCP

from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.naming import assign_identifiers

from .servers.schema_upstream import HOSTILE_TOOLS, PAINT_NAME
from .support import QUIET, ROOT, server_entry, start_gateway

SCHEMA_SERVER = str(ROOT / "tests" / "servers" / "schema_upstream.py")
COPIES = 3  # of each hostile tool: a listing page holds 50 of them
UNCLEAN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def identifier(name: str) -> str:
    return assign_identifiers([name])[name]


def _config(tmp: Path) -> Path:
    servers = {
        "schemas": server_entry(SCHEMA_SERVER, description="Hostile schemas and text"),
        "dead": server_entry(SCHEMA_SERVER, description="Dies at start"),
    }
    servers["schemas"]["args"] += ["--copies", str(COPIES)]
    servers["dead"]["args"] += ["--die"]
    path = tmp / "mcp_servers.json"
    path.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    return path


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    path = _config(tmp_path_factory.mktemp("schemas"))
    gateway = await start_gateway(path, pool_size=2, timeout_s=20.0)
    try:
        yield gateway
    finally:
        await gateway.aclose()


@pytest.fixture(scope="module")
def server(gw: Gateway) -> FastMCP:
    return build_server(gw)


async def _call(client: Client, tool: str, args: dict[str, Any]) -> Any:
    result = await client.call_tool_mcp(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    try:
        return json.loads(text)
    except ValueError:
        return text  # get_tool_docs sends its string as is


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_texts(k), *_texts(v))]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def assert_clean(value: Any) -> None:
    for text in _texts(value):
        assert not UNCLEAN.search(text), f"unclean text shown: {text[:200]!r}"


# --- the loop stays free -----------------------------------------------------------------


async def _one_plus_one_ms(client: Client, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        reply = await _call(client, "execute_code", {"code": "1+1"})
        times.append((time.perf_counter() - started) * 1000)
        assert reply["ok"] and reply["result"] == 2, reply
    return times


def p95(times: list[float]) -> float:
    return statistics.quantiles(times, n=20)[-1]


async def _render_hostile(client: Client, stop: asyncio.Event) -> int:
    """Discovery of every hostile tool, over and over, until `stop`; how many replies."""
    names = [f"schema_{name}_{i}" for name in HOSTILE_TOOLS for i in range(COPIES)]
    replies = 0
    while not stop.is_set():
        for page in (1, 2):
            await _call(client, "get_tool_docs", {"server": "schemas", "page": page})
        for name in names:
            docs = await _call(client, "get_tool_docs", {"server": "schemas", "tool": name})
            assert "def " in docs
            replies += 1
            if stop.is_set():
                break
        await _call(client, "search_tools", {"query": "hostile schema", "limit": 100})
    return replies


async def _loop_lag_ms(stop: asyncio.Event) -> float:
    """The longest the event loop was late to wake a 5 ms sleep, until `stop`."""
    worst = 0.0
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.005)
        worst = max(worst, (time.perf_counter() - started) * 1000 - 5)
    return worst


async def test_other_runs_keep_answering_while_hostile_schemas_render(server: FastMCP) -> None:
    async with Client(server) as client, Client(server) as discovery:
        # warm: workers, the search index, the tokenizer (loaded once, ~0.5 s on the loop)
        await _one_plus_one_ms(client, 5)
        await _call(discovery, "search_tools", {"query": "hostile", "limit": 100})
        await _call(discovery, "get_tool_docs", {"server": "schemas", "tool": "paint"})
        idle = await _one_plus_one_ms(client, 40)
        stop = asyncio.Event()
        rendering = asyncio.ensure_future(_render_hostile(discovery, stop))
        lag = asyncio.ensure_future(_loop_lag_ms(stop))
        try:
            busy = await _one_plus_one_ms(client, 40)
        finally:
            stop.set()
        replies, worst_lag = await rendering, await lag
    print(
        f"1+1 p95: idle {p95(idle):.1f} ms, while rendering {p95(busy):.1f} ms "
        f"({replies} docs; the loop was at most {worst_lag:.1f} ms late)"
    )
    assert replies >= 20, "the hostile schemas were hardly rendered: the test proves nothing"
    # A loop held by rendering makes every run wait (tens to hundreds of ms each); the
    # median, against 3x idle plus 20 ms, leaves room for a machine shared with other work.
    middle = statistics.median(idle), statistics.median(busy)
    assert middle[1] <= 3 * middle[0] + 20, middle


# --- what is shown is clean ----------------------------------------------------------------


async def test_tool_docs_are_clean(server: FastMCP) -> None:
    async with Client(server) as client:
        docs = await _call(client, "get_tool_docs", {"server": "schemas", "tool": "paint"})
        listing = await _call(client, "get_tool_docs", {"server": "schemas", "tool": "paint*"})
        page = await _call(client, "get_tool_docs", {"server": "schemas"})
    for text in (docs, listing, page):
        assert_clean(text)
    # an OSC 8 link's text stays (ESCAPES shows "link"), the sequences around it go
    assert "Paintlink the linkscreen." in docs and "Secondlink paragraph." in docs
    assert "colourlink (str, optional): Alink colour" in docs


async def test_search_hits_are_clean(server: FastMCP) -> None:
    async with Client(server) as client:
        hits = await _call(client, "search_tools", {"query": "paint the screen", "limit": 10})
    assert_clean(hits)
    painted = [h for h in hits if h["tool"] == "paint"]  # `paint`, and PAINT_NAME cleaned
    assert len(painted) == 2, hits
    assert {h["signature"].split("(")[0] for h in painted} == {
        "tools.schemas.paint",
        f"tools.schemas.{identifier(PAINT_NAME)}",
    }


async def test_a_tool_whose_name_has_escapes_is_called_by_its_original_name(
    server: FastMCP,
) -> None:
    code = (
        f"[call_tool('schemas', {PAINT_NAME!r}), tools.schemas.{identifier(PAINT_NAME)}(),"
        " call_tool('schemas', 'paint')]"
    )
    async with Client(server) as client:
        reply = await _call(client, "execute_code", {"code": code})
    assert reply["ok"], reply
    assert reply["result"] == [f"called {PAINT_NAME}", f"called {PAINT_NAME}", "called paint"]


async def test_list_servers_errors_are_clean(server: FastMCP) -> None:
    async with Client(server) as client:
        rows = await _call(client, "list_servers", {})
    dead = next(r for r in rows if r["name"] == "dead")
    assert dead["status"] == "error" and "cannot start" in dead["error"], dead
    assert "secondlink line" in dead["error"]
    assert_clean(rows)


async def test_upstream_error_texts_are_clean(server: FastMCP) -> None:
    code = (
        "message = None\ntry:\n    call_tool('schemas', 'fail_paint')\n"
        "except ToolError as e:\n    message = e.message\nmessage"
    )
    async with Client(server) as client:
        reply = await _call(client, "execute_code", {"code": code})
        uncaught = await _call(client, "execute_code", {"code": "tools.schemas.fail_paint()"})
    assert reply["ok"] and "it failedlink badly" in reply["result"], reply
    assert "it failedlink badly" in uncaught["error"]["message"], uncaught
    assert_clean([reply, uncaught])


@pytest.mark.slow  # three whole commands in subprocesses
def test_cli_tools_output_is_clean(tmp_path: Path) -> None:
    config = _config(tmp_path)
    env = {
        **os.environ,
        **QUIET,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "MCP_CODE_POOL_SIZE": "1",
    }
    main = "import sys; from mcp_code_mode.cli import main; sys.exit(main())"
    for extra in ([], ["--json"], ["--search", "paint the screen"]):
        done = subprocess.run(
            [sys.executable, "-c", main, "tools", "--config", str(config), *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=80,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        for out in (done.stdout, done.stderr):
            found = UNCLEAN.search(out)
            assert found is None, f"{extra}: {out[max(0, found.start() - 80) :][:200]!r}"
        assert "Paintlink the linkscreen." in done.stdout, (extra, done.stdout[:2000])


async def test_an_upstream_listing_lone_surrogates_starts_with_them_replaced(
    tmp_path: Path,
) -> None:
    """An upstream whose tools/list held a lone surrogate (JSON `"\\ud800"`) in a property's
    name never started: `failed to start: Error serializing to JSON` (outside attack 140).
    Contract §7: text UTF-8 cannot encode is U+FFFD."""
    malformed = str(ROOT / "tests" / "servers" / "malformed_upstream.py")
    servers = {"odd": {"command": sys.executable, "args": [malformed, "--surrogate"]}}
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": servers}))
    gateway = await start_gateway(path)
    try:
        rows = {row["name"]: row for row in gateway.list_servers()}
        assert rows["odd"]["status"] == "ok", rows
        hits = gateway.search_tools("lone surrogate", 5)
        assert any(hit["tool"] == "lone\ufffd" for hit in hits), hits
        out = await gateway.execute("tools.odd.echo(text='still called')")
        assert out.ok and out.result == "still called", out.error
    finally:
        await gateway.aclose()

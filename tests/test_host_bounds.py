"""What one run can make the gateway hold or say: arguments that expand when parsed, and a
secret an upstream hands back (outside attack 54). Contract §7."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.executor import runs_that_fit
from mcp_code_mode.sandbox.run_slots import RunSlots

from .support import TEST_SERVER, server_entry, start_gateway

_TOKEN = "tok-9f3a-secret-7c1e"


@pytest.fixture
async def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Gateway]:
    monkeypatch.setenv("MCP_TEST_UPSTREAM_TOKEN", _TOKEN)
    entry = server_entry(TEST_SERVER)
    entry["env"] = {**entry["env"], "UPSTREAM_TOKEN": "${MCP_TEST_UPSTREAM_TOKEN}"}
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": {"t": entry}}), encoding="utf-8")
    gw = await start_gateway(path, timeout_s=60.0)
    yield gw
    await gw.aclose()


async def test_arguments_that_expand_are_refused_before_they_are_parsed(gateway: Gateway) -> None:
    """4 million empty lists are 8 MB of JSON and about 400 MB of Python objects: the
    gateway used to build 3 GB for 60 MB of them before the call-size check refused the
    call. Now the worker refuses them unsent, by a lower bound on their size (outside
    attack 82); the host's own walls (the decode budget, `bounded_args`) stay behind it
    for a worker that does not."""
    code = (
        "lists = [[]] * 4000\nnested = [lists] * 1000\n"
        "r = call_tools([('t', 'echo', {'text': 'x', 'tags': nested})])\n"
        "[type(r[0]).__name__, str(r[0])]"
    )
    out = (await gateway.execute(code, timeout_s=60)).to_json()
    assert out["ok"] and out["result"][0] == "ToolError", out
    assert "over the 1,000,000 allowed (MCP_CODE_MAX_CALL_BYTES)" in out["result"][1], out
    assert (await gateway.execute("1 + 1")).result == 2


async def test_an_upstream_secret_never_reaches_the_reply(gateway: Gateway) -> None:
    code = (
        f"text = tools.t.echo(text='{_TOKEN}')\nprint(text)\nlog(text)\n"
        "{'value': text, text: [text]}"
    )
    out = (await gateway.execute(code)).to_json()
    assert out["ok"], out
    assert _TOKEN not in json.dumps(out), out
    assert "${MCP_TEST_UPSTREAM_TOKEN}" in out["stdout"], out


async def test_runs_beyond_the_cap_wait_their_turn(gateway: Gateway) -> None:
    """Each run may hold its memory limit, so runs at once are capped (half the machine's
    memory at the limit; here 2, set on the executor) and the rest wait: 24 runs at once
    took the host to 4.3 GB (outside attack 56). The wait is not part of a run's time."""
    gateway.executor.run_slots = RunSlots(2)  # type: ignore[attr-defined]
    code = "import asyncio\nawait asyncio.sleep(0.6)\n1"
    started = time.perf_counter()
    outs = await asyncio.gather(*(gateway.execute(code, timeout_s=1.0) for _ in range(6)))
    elapsed = time.perf_counter() - started
    assert [out.result for out in outs] == [1] * 6, [out.to_json() for out in outs]
    assert elapsed >= 3 * 0.6, elapsed  # three turns of two, none timed out while waiting


async def test_runs_waiting_beyond_their_cap_are_refused_at_once(gateway: Gateway) -> None:
    """Outside attacks 109 and 111: a client that hung up after each call left its run
    waiting with its 3 MB input (300 calls: 1.9 GB), and a cap by count alone failed an
    agent's burst of small calls. Past what waiting runs may hold (their code and input as
    objects, estimated from their JSON; here 100,000 bytes, set on the executor), a run is
    an EXECUTOR_ERROR at once; small runs still wait their turn. Attack 113: 4 MB of
    `[],` held 25 times their characters, so they count as what they hold."""
    executor: Any = gateway.executor
    executor.run_slots = RunSlots(1)
    executor.max_waiting = (1000, 100_000)
    code = "import asyncio\nawait asyncio.sleep(0.3)\nlen(input)"
    first = [asyncio.ensure_future(gateway.execute(code, input="x", timeout_s=5.0))]
    while not executor.run_slots.locked():
        await asyncio.sleep(0.01)
    lists = await gateway.execute(code, input=[[] for _ in range(5_000)])  # 20,000 characters
    big = [asyncio.ensure_future(gateway.execute(code, input="x" * 30_000)) for _ in range(3)]
    while executor.waiting < 3:
        await asyncio.sleep(0.01)
    refused = await gateway.execute(code, input="x" * 30_000)
    small = await asyncio.gather(*(gateway.execute(code, input="x") for _ in range(20)))
    outs = await asyncio.gather(*first, *big)
    assert not refused.ok and refused.error and "busy" in refused.error.message, refused
    assert not lists.ok and lists.error and "busy" in lists.error.message, lists
    assert [o.result for o in outs] == [1, 30_000, 30_000, 30_000]
    assert [o.result for o in small] == [1] * 20
    assert executor.waiting == executor.waiting_bytes == 0


def test_the_default_cap_leaves_half_the_memory() -> None:
    assert runs_that_fit(256) == max(4, _total_mb() // 2 // 256)
    assert runs_that_fit(10**9) == 4


def _total_mb() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20


async def test_the_worker_charges_a_log_line_what_it_adds_to_the_reply(gateway: Gateway) -> None:
    """An empty line is three characters of the reply's `logs` (quotes and a comma): charged
    one, 100,000 of them went to the host to be cut there, 3 s of its event loop when it
    redacted them (outside attack 88). The worker stops the run at the budget itself."""
    reply = await gateway.execute('for i in range(40_000):\n    log("")', timeout_s=60)
    assert reply.error is not None and reply.error.type == "OUTPUT_LIMIT"
    assert reply.error.message.startswith("output (stdout + logs + result) exceeded")
    assert 0 < len(reply.logs) <= 100_000 // 3

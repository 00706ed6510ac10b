"""The local executor's worker processes: isolation from the server, limits, fresh state."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.local import Zygote
from mcp_code_mode.settings import DEFAULT_ALLOWED_IMPORTS

from ..support import SECRET, TEST_SERVER, ConfigWriter, live_processes, server_entry, start_gateway

_processes = live_processes


def worker_pids(zygote: int | None = None) -> set[int]:
    """Live sandbox workers: children of `zygote`, or of any zygote this test process started."""
    table = _processes()
    zygotes = (
        {zygote}
        if zygote is not None
        else {
            pid
            for pid, (ppid, _, cmd) in table.items()
            if ppid == os.getpid() and b"mcp_code_mode.sandbox.child.zygote" in cmd
        }
    )
    return {pid for pid, (ppid, _, _) in table.items() if ppid in zygotes}


def zygote_pid(gateway: Gateway) -> int:
    proc = gateway.executor.pool.launcher._proc  # type: ignore[attr-defined]
    assert proc is not None
    return int(proc.pid)


@pytest.fixture
async def timing_gateway(write_config: ConfigWriter) -> Gateway:
    gw = await start_gateway(
        write_config({"t": server_entry(TEST_SERVER)}),
        extra_imports="time",
        memory_mb=128,
        max_output_chars=2000,
    )
    yield gw  # type: ignore[misc]
    await gw.aclose()


async def test_worker_has_no_server_environment() -> None:
    assert os.environ["MCP_CODE_TEST_SECRET"] == SECRET
    zygote = Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS)
    await zygote.start()
    worker = await zygote.fork(memory_mb=256)
    try:
        environ = Path(f"/proc/{worker.pid}/environ").read_bytes()
        cwd = os.readlink(f"/proc/{worker.pid}/cwd")
        assert SECRET.encode() not in environ
        assert b"MCP_CODE_TEST_SECRET" not in environ
        assert cwd == worker.workdir and os.listdir(cwd) == []
        assert zygote._proc is not None
        zygote_process = zygote._proc.pid
        assert worker_pids(zygote_process) == {worker.pid}
    finally:
        await worker.dispose()
        await zygote.aclose()
    assert not Path(worker.workdir).exists()
    assert worker_pids(zygote_process) == set()


@pytest.mark.parametrize(
    "code",
    [
        "while True:\n    pass",
        "import time\ntime.sleep(100)",
        "import asyncio\nawait asyncio.sleep(100)",
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
    ],
)
async def test_timeout_kills_the_worker(timing_gateway: Gateway, code: str) -> None:
    zygote = zygote_pid(timing_gateway)
    before = worker_pids(zygote)
    started = time.perf_counter()
    out = (await timing_gateway.execute(code, timeout_s=1.0)).to_json()
    elapsed = time.perf_counter() - started
    assert out["error"]["type"] == "TIMEOUT", out
    assert elapsed < 1.0 + 1.0 + 0.5  # timeout + 1 s, plus slack for a loaded machine
    for _ in range(100):  # the killed worker is reaped in the background
        if not (before & worker_pids(zygote)):
            break
        await asyncio.sleep(0.01)
    assert not (before & worker_pids(zygote)), "a worker of the timed-out run is still alive"
    assert (await timing_gateway.execute("1+1")).result == 2


@pytest.mark.parametrize(
    "hang",
    [
        "import itertools\nsum(itertools.count())",  # one C call: only the host's kill ends it
        "import time\nwhile True:\n    try:\n        time.sleep(100)\n    except BaseException:\n        pass",
    ],
    ids=["c_call", "timer_swallowed"],
)
async def test_a_killed_worker_still_reports_its_output(timing_gateway: Gateway, hang: str) -> None:
    code = f"print('before', end='')\nprint(' \\ud800 é')\nlog('step', 1)\ntools.t.echo(text='x')\n{hang}"
    out = (await timing_gateway.execute(code, timeout_s=1.0)).to_json()
    assert out["error"]["type"] == "TIMEOUT" and "killed" in out["error"]["message"], out
    # A lone surrogate leaves the gateway as U+FFFD (contract §7).
    assert out["stdout"] == "before \ufffd é\n" and out["logs"] == ["step 1"]
    assert [c["tool"] for c in out["tool_calls"]] == ["echo"]
    follow_up = (await timing_gateway.execute("print('fresh')\nlog('new')\n1")).to_json()
    assert (follow_up["stdout"], follow_up["logs"], follow_up["result"]) == ("fresh\n", ["new"], 1)


async def test_output_flood_is_cut(timing_gateway: Gateway) -> None:
    out = (await timing_gateway.execute("while True:\n    print('x' * 100)")).to_json()
    assert out["error"]["type"] == "OUTPUT_LIMIT"
    assert "MCP_CODE_MAX_OUTPUT_CHARS" in out["error"]["message"]
    assert len(out["stdout"]) <= 2000
    big = (await timing_gateway.execute("'y' * 5000")).to_json()
    assert big["error"]["type"] == "OUTPUT_LIMIT"


async def test_memory_limit(timing_gateway: Gateway) -> None:
    out = (await timing_gateway.execute("x = bytearray(512 * 1024 * 1024)\nlen(x)")).to_json()
    assert out["error"]["type"] == "MEMORY_LIMIT", out
    assert (
        await timing_gateway.execute("len(bytearray(10 * 1024 * 1024))")
    ).result == 10 * 1024 * 1024


@pytest.mark.parametrize(
    "code",
    [
        "import uuid\ngetattr(uuid, 'o' + 's').environ['MCP_CODE_TEST_SECRET']",
        "import typing\ngetattr(typing, 'sy' + 's')",
        "getattr(int, '__subcla' + 'sses__')",
    ],
)
async def test_runtime_getattr_escapes_are_refused(gateway: Gateway, code: str) -> None:
    out = (await gateway.execute(code)).to_json()
    assert out["error"]["type"] == "RUNTIME_ERROR"
    assert "not allowed" in out["error"]["message"]
    assert SECRET not in str(out)


async def test_runtime_error_shows_guest_lines_only(gateway: Gateway) -> None:
    code = "def f(x):\n    return 1 / x\n\nf(0)"
    out = (await gateway.execute(code)).to_json()
    error = out["error"]
    assert error["type"] == "RUNTIME_ERROR" and error["line"] == 2
    assert "ZeroDivisionError: division by zero" in error["message"]
    assert "line 4" in error["message"] and "line 2" in error["message"]
    assert "/" not in error["message"].replace("1 / x", "")  # no host paths


async def test_policy_violation_never_starts_a_worker(gateway: Gateway) -> None:
    out = (await gateway.execute("x = 1\nimport os\nos.environ")).to_json()
    assert out["error"] == {**out["error"], "type": "POLICY_VIOLATION", "line": 2}
    assert out["ok"] is False and out["result"] is None


async def test_syntax_error(gateway: Gateway) -> None:
    out = (await gateway.execute("x = (1,\n")).to_json()
    assert out["error"]["type"] == "SYNTAX_ERROR" and out["error"]["line"] is not None


async def test_concurrent_runs_are_isolated(gateway: Gateway) -> None:
    results = await asyncio.gather(
        *(gateway.execute("v = input * 3\nlog(v)\nv", input=i) for i in range(12))
    )
    assert [r.result for r in results] == [i * 3 for i in range(12)]
    assert [r.logs for r in results] == [[str(i * 3)] for i in range(12)]

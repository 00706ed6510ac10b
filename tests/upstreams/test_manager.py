"""MCPServerManager against real stdio upstreams: start-up failures, crashes, hangs, shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from mcp_code_mode.config import load_config
from mcp_code_mode.errors import ToolCallFailed
from mcp_code_mode.tool_results import unwrap_result
from mcp_code_mode.upstreams import MCPServerManager

from ..support import SECRET, TEST_SERVER, ConfigWriter, server_entry, start_gateway


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is not alive
        return stat.read().split(") ")[1][0] != "Z"


async def test_one_failing_server_leaves_the_rest_working(write_config: ConfigWriter) -> None:
    path = write_config(
        {
            "good": server_entry(TEST_SERVER, description="works"),
            "bad": {"command": "/nonexistent/server-binary", "description": "broken"},
            "quits": {"command": "python", "args": ["-c", "pass"]},
            "slow": {
                "command": "python",
                "args": ["-c", "import time; time.sleep(30)"],
                "timeout_s": 1,
            },
            "off": {**server_entry(TEST_SERVER), "enabled": False},
        }
    )
    started = time.perf_counter()
    gw = await start_gateway(path)
    try:
        assert time.perf_counter() - started < 15
        rows = {r["name"]: r for r in gw.list_servers()}
        assert rows["good"]["status"] == "ok" and rows["good"]["tool_count"] >= 10
        for name in ("bad", "quits"):
            assert rows[name]["status"] == "error", rows[name]
            assert rows[name]["error"]
        # Slow is not dead: past its start-up timeout a live process is still `starting`,
        # and the row says why (contract §3).
        assert rows["slow"]["status"] == "starting", rows["slow"]
        assert "1s" in rows["slow"]["error"] and "still waiting" in rows["slow"]["error"]
        assert rows["off"] == {
            "name": "off",
            "description": "",
            "status": "disabled",
            "tool_count": 0,
            "error": None,
        }
        out = (await gw.execute("tools.good.echo(text='still here')")).to_json()
        assert out["result"] == "still here"
        out = (await gw.execute("tools.bad.anything()")).to_json()
        assert out["error"]["type"] == "TOOL_ERROR" and "failed to start" in out["error"]["message"]
        out = (await gw.execute("call_tool('off', 'echo', {'text': 'x'})")).to_json()
        assert out["error"]["type"] == "TOOL_ERROR" and "disabled" in out["error"]["message"]
    finally:
        await gw.aclose()


async def test_crash_mid_call_then_restart(write_config: ConfigWriter) -> None:
    gw = await start_gateway(write_config({"t": server_entry(TEST_SERVER)}))
    try:
        first_pid = (await gw.execute("tools.t.pid()")).result
        out = (await gw.execute("tools.t.crash()")).to_json()
        assert out["error"]["type"] == "TOOL_ERROR"
        assert out["tool_calls"][0]["ok"] is False
        assert [r["status"] for r in gw.list_servers()] == ["error"]
        out = (await gw.execute("[tools.t.echo(text='back'), tools.t.pid()]")).to_json()
        assert out["ok"], out["error"]
        assert out["result"][0] == "back" and out["result"][1] != first_pid
        assert not _alive(first_pid)
        assert [r["status"] for r in gw.list_servers()] == ["ok"]
    finally:
        await gw.aclose()


async def test_hanging_call_times_out_and_server_keeps_serving(write_config: ConfigWriter) -> None:
    gw = await start_gateway(write_config({"t": server_entry(TEST_SERVER, timeout_s=6)}))
    try:
        # Its start may take longer than 6 s beside a CPU hog: the call's time is measured.
        deadline = time.perf_counter() + 60
        while (await gw.execute("tools.t.echo(text='up')")).result != "up":
            assert time.perf_counter() < deadline, "the upstream never started"
        started = time.perf_counter()
        out = (await gw.execute("tools.t.sleep(seconds=30)")).to_json()
        assert out["error"]["type"] == "TOOL_ERROR" and "timed out" in out["error"]["message"]
        assert time.perf_counter() - started < 10
        assert (await gw.execute("tools.t.echo(text='ok')")).result == "ok"
    finally:
        await gw.aclose()


async def test_shutdown_leaves_no_upstream_processes(write_config: ConfigWriter) -> None:
    gw = await start_gateway(
        write_config({"a": server_entry(TEST_SERVER), "b": server_entry(TEST_SERVER)})
    )
    pids = (await gw.execute("[tools.a.pid(), tools.b.pid()]")).result
    assert all(_alive(p) for p in pids)
    await gw.aclose()
    assert not any(_alive(p) for p in pids)


async def test_shutdown_ends_the_helpers_an_upstream_started(write_config: ConfigWriter) -> None:
    """An upstream that exits when its stdin closes left its helpers running (attack 132)."""
    gw = await start_gateway(write_config({"t": server_entry(TEST_SERVER)}))
    helper = (await gw.execute("tools.t.spawn_helper()")).result
    assert isinstance(helper, int) and _alive(helper)
    await gw.aclose()
    deadline = time.monotonic() + 10
    while _alive(helper) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    left = _alive(helper)
    if left:
        os.kill(helper, signal.SIGKILL)
    assert not left


async def test_upstream_env_is_minimal_plus_configured(write_config: ConfigWriter) -> None:
    assert os.environ["MCP_CODE_TEST_SECRET"] == SECRET
    path = write_config(
        {"t": server_entry(TEST_SERVER, env={"GIVEN": "yes", "FASTMCP_LOG_LEVEL": "WARNING"})}
    )
    async with MCPServerManager(load_config(path), default_timeout_s=20) as manager:
        secret = unwrap_result(
            await manager.call_tool("t", "env", {"name": "MCP_CODE_TEST_SECRET"})
        )
        given = unwrap_result(await manager.call_tool("t", "env", {"name": "GIVEN"}))
    assert secret is None
    assert given == "yes"


async def test_tool_error_and_unknown_server_map_to_tool_call_failed(
    write_config: ConfigWriter,
) -> None:
    path = write_config({"t": server_entry(TEST_SERVER, deny_tools=["crash", "pid"])})
    async with MCPServerManager(load_config(path), default_timeout_s=20) as manager:
        names = [t.name for t in manager.tools()["t"]]
        assert "crash" not in names and "pid" not in names and "echo" in names
        with pytest.raises(ToolCallFailed, match="kaput"):
            await manager.call_tool("t", "fail", {"message": "kaput"})
        with pytest.raises(ToolCallFailed, match="not configured"):
            await manager.call_tool("nope", "x", {})


async def test_a_burst_of_calls_to_a_dead_upstream_shares_one_attempt(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    """Calls arriving while an upstream is down join one connection attempt (§7: bounded)."""
    starts = tmp_path / "starts"
    script = f"open({str(starts)!r}, 'a').write('x\\n'); import time; time.sleep(0.5)"
    path = write_config({"dead": {"command": "python", "args": ["-c", script], "timeout_s": 5}})
    async with MCPServerManager(load_config(path), default_timeout_s=5) as manager:
        assert manager.state("dead") == "error"
        before = len(starts.read_text().splitlines())
        outcomes = await asyncio.gather(
            *(manager.call_tool("dead", "anything") for _ in range(20)), return_exceptions=True
        )
        assert all(isinstance(o, ToolCallFailed) for o in outcomes)
        assert all("-c" in str(o) for o in outcomes)  # the command is named
        spawned = len(starts.read_text().splitlines()) - before
    # One attempt shared by the burst (perhaps the background retry's), not one per call.
    assert spawned <= 3, spawned

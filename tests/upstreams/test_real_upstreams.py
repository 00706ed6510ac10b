"""Upstream behaviour against real third-party servers, not our fixtures.

- npm `@modelcontextprotocol/server-everything` over streamable HTTP, restarted behind the
  gateway: it answers a lost session with 400 "No valid session ID provided" (not 404);
  the next calls open a new session and succeed.
- the same package over stdio, kept busy past several health intervals: not restarted.
- PyPI `mcp-server-time` over stdio, killed: `list_servers` says so at once (its stderr
  pipe closes), and the next call starts it again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway

from ..servers.everything import EverythingServer, ensure_installed
from ..support import ConfigWriter, live_processes, make_settings
from ..test_upstream_healing import eventually, run, status, value

needs_node = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="needs node and npm"
)


@pytest_asyncio.fixture
async def everything() -> AsyncIterator[EverythingServer]:
    async with EverythingServer() as server:
        yield server


async def _gateway(path: Any, *, health_interval_s: float = 10.0) -> Gateway:
    gateway = Gateway(make_settings(timeout_s=30.0), load_config(path))
    gateway.manager.health_interval_s = health_interval_s
    gateway.manager.timing.health_timeout_s = 0.3
    await gateway.start()
    return gateway


@needs_node
async def test_server_everything_restarted_over_http_heals_on_the_next_call(
    everything: EverythingServer, write_config: ConfigWriter
) -> None:
    gw = await _gateway(write_config({"e": {"url": everything.url}}))
    try:
        assert await value(gw, "tools.e.echo(message='before')") == "Echo: before"
        await everything.restart()
        out = await run(gw, "[tools.e.echo(message='after'), tools.e.echo(message='again')]")
        assert out["ok"], out["error"]
        assert out["result"] == ["Echo: after", "Echo: again"]
        assert [c["ok"] for c in out["tool_calls"]] == [True, True]
        assert status(gw, "e")["status"] == "ok"
    finally:
        await gw.aclose()


@needs_node
async def test_server_everything_busy_over_stdio_is_not_restarted(
    write_config: ConfigWriter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_code_mode.upstreams")
    entry = {"command": "node", "args": [str(await asyncio.to_thread(ensure_installed)), "stdio"]}
    gw = await _gateway(write_config({"e": entry}), health_interval_s=0.2)
    try:
        code = "tools.e.trigger_long_running_operation(duration=2, steps=2)"
        out = await run(gw, code, timeout_s=60)
        assert out["ok"], out["error"]
        assert gw.manager.state("e") == "ok"
        lost = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
        assert lost == []
        assert await value(gw, "tools.e.echo(message='x')") == "Echo: x"
    finally:
        await gw.aclose()


async def test_mcp_server_time_killed_shows_at_once_and_comes_back(
    write_config: ConfigWriter,
) -> None:
    entry = {"command": "python", "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    others = _time_servers()  # the session's shared gateways run the demo's time server too
    gw = await _gateway(write_config({"time": entry}))  # health checks every 10 s
    try:
        first = await value(gw, "tools.time.get_current_time(timezone='UTC')")
        assert first["timezone"] == "UTC"
        pids = sorted(_time_servers() - others)
        assert len(pids) == 1
        os.kill(pids[0], signal.SIGKILL)
        await eventually(lambda: status(gw, "time")["status"] == "error", within_s=5)
        assert "exited" in status(gw, "time")["error"]
        again = await value(gw, "tools.time.get_current_time(timezone='UTC')")
        assert again["timezone"] == "UTC"
        assert status(gw, "time")["status"] == "ok"
    finally:
        await gw.aclose()


def _time_servers() -> set[int]:
    """The mcp-server-time processes this test process started."""
    return {
        pid
        for pid, (ppid, _, cmd) in live_processes().items()
        if ppid == os.getpid() and b"mcp_server_time" in cmd
    }

"""Slow is not dead (contract §6, §7): a busy upstream is never restarted by its health check.

Real upstreams (`tests/servers/healing_upstream.py`) over stdio and streamable HTTP (both
protocol eras) keep their whole process busy: a call that blocks past several health
intervals, and a `tools/list` that takes longer than the health check's timeout. Health
checks time out meanwhile; nothing reconnects, and the calls in flight succeed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway

from ..support import ConfigWriter, make_settings, server_entry
from ..test_upstream_healing import HEALING_SERVER, HttpUpstream, eventually, run, value

KINDS = ["stdio", "http-modern", "http-legacy"]
HEALTH_INTERVAL_S = 0.2
HEALTH_TIMEOUT_S = 0.3
BUSY_S = 3.0


@pytest_asyncio.fixture(params=KINDS)
async def upstream_entry(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, Any]]:
    """A config entry for a healing upstream whose later tools/list calls take BUSY_S."""
    extra = ("--slow-list", str(BUSY_S))
    if request.param == "stdio":
        # A stdio upstream is not pinged while its stderr pipe is open (the pipe's end says
        # when it exits); with the pipe closed by the upstream itself it is pinged again.
        code = (
            "import os, runpy, sys; os.dup2(os.open(os.devnull, os.O_WRONLY), 2); "
            "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
        )
        yield server_entry(HEALING_SERVER, args=["-c", code, HEALING_SERVER, *extra])
        return
    upstream = HttpUpstream(legacy=request.param == "http-legacy", extra_args=extra)
    await upstream.start()
    try:
        yield {"url": upstream.url}
    finally:
        upstream.stop()


async def _gateway(path: Any) -> Gateway:
    gateway = Gateway(make_settings(timeout_s=30.0), load_config(path))
    gateway.manager.health_interval_s = HEALTH_INTERVAL_S
    gateway.manager.timing.health_timeout_s = HEALTH_TIMEOUT_S
    await gateway.start()
    return gateway


def _health_timeouts(caplog: pytest.LogCaptureFixture) -> int:
    return sum("health check: timed out" in r.getMessage() for r in caplog.records)


def _losses(caplog: pytest.LogCaptureFixture) -> list[str]:
    words = ("connection lost", "reconnect", "no longer knows")
    return [r.getMessage() for r in caplog.records if any(w in r.getMessage() for w in words)]


async def test_a_call_busy_past_the_health_interval_restarts_nothing(
    upstream_entry: dict[str, Any], write_config: ConfigWriter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_code_mode.upstreams")
    gw = await _gateway(write_config({"h": upstream_entry}))
    try:
        before = await value(gw, "tools.h.boot()")
        code = (
            f"call_tools([('h', 'block', {{'seconds': {BUSY_S}}}), ('h', 'echo', {{'text': 'x'}})])"
        )
        out = await run(gw, code, timeout_s=60)
        assert out["ok"], out["error"]
        assert out["result"] == [BUSY_S, "x"]
        assert _health_timeouts(caplog) >= 1  # the checks did go unanswered meanwhile
        assert await value(gw, "tools.h.boot()") == before  # the same process, never restarted
        assert gw.manager.state("h") == "ok"
        assert _losses(caplog) == []
    finally:
        await gw.aclose()


async def test_a_listing_slower_than_the_health_timeout_restarts_nothing(
    upstream_entry: dict[str, Any], write_config: ConfigWriter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_code_mode.upstreams")
    gw = await _gateway(write_config({"h": upstream_entry}))
    try:
        before = await value(gw, "tools.h.boot()")
        # The upstream announces a new tool; the refresh that follows keeps it busy BUSY_S
        # while health checks time out, and the call that announced it waits for the list.
        out = await run(gw, "tools.h.add_tool(name='late')\ncall_tool('h', 'late')", timeout_s=60)
        assert out["ok"], out["error"]
        assert out["result"] == "late ok"
        await eventually(lambda: _health_timeouts(caplog) >= 1)
        assert await value(gw, "tools.h.echo(text='after')") == "after"
        assert await value(gw, "tools.h.boot()") == before
        assert gw.manager.state("h") == "ok"
        assert _losses(caplog) == []
    finally:
        await gw.aclose()


async def test_idle_checks_do_not_list_tools(
    write_config: ConfigWriter, caplog: pytest.LogCaptureFixture
) -> None:
    """Health costs the same whatever the catalog: an idle upstream gets pings, not listings."""
    caplog.set_level(logging.DEBUG, logger="mcp_code_mode.upstreams")
    gw = await _gateway(write_config({"h": server_entry(HEALING_SERVER)}))
    try:
        listed = sum("tools listed" in r.getMessage() for r in caplog.records)
        await asyncio.sleep(HEALTH_INTERVAL_S * 10)
        assert sum("tools listed" in r.getMessage() for r in caplog.records) == listed
        assert gw.manager.state("h") == "ok"
    finally:
        await gw.aclose()

"""An HTTP upstream that compresses its replies although it is asked for `identity` (found by
an outside attack): the reply is inflated a piece at a time and counted inflated, so a
gzip bomb is refused by MCP_CODE_MAX_RESULT_BYTES before it costs the host its size."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from mcp_code_mode.gateway import Gateway

from ..support import ROOT, start_gateway

GZIP_SERVER = str(ROOT / "tests" / "servers" / "gzip_upstream.py")
LIMIT = 1_000_000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _listening(port: int) -> None:
    for _ in range(100):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        return
    raise AssertionError("the gzip upstream did not start")


@pytest_asyncio.fixture
async def gw(tmp_path: Path) -> AsyncIterator[Gateway]:
    port = _free_port()
    env = {**os.environ, "BOMB_MB": "300", "SEEN_FILE": str(tmp_path / "seen")}
    proc = subprocess.Popen([sys.executable, GZIP_SERVER, str(port)], env=env)
    try:
        await _listening(port)
        config = tmp_path / "mcp_servers.json"
        config.write_text(json.dumps({"servers": {"z": {"url": f"http://127.0.0.1:{port}/mcp"}}}))
        gateway = await start_gateway(config, max_result_bytes=LIMIT)
        try:
            yield gateway
        finally:
            await gateway.aclose()
    finally:
        proc.kill()
        proc.wait()


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


async def test_a_gzip_bomb_is_refused_at_the_limit_inflated(gw: Gateway, tmp_path: Path) -> None:
    small = (await gw.execute("tools.z.small()")).to_json()
    assert small["ok"] and small["result"] == "inflated", small  # compressed replies work
    Path("/proc/self/clear_refs").write_text("5")  # the peak counts from here
    before = _peak_mb()
    out = (await gw.execute("tools.z.bomb()", timeout_s=60)).to_json()
    assert out["error"]["type"] == "TOOL_ERROR", out
    assert "MCP_CODE_MAX_RESULT_BYTES" in out["error"]["message"]
    # 300 MB inflated; the host may not pay more than a few times the limit for it
    assert _peak_mb() - before < 100, f"peak grew {_peak_mb() - before:.0f} MB"
    again = (await gw.execute("tools.z.small()")).to_json()
    assert again["ok"], again  # the connection stays up
    assert set((tmp_path / "seen").read_text().split()) == {"identity"}


async def test_a_coding_we_cannot_read_fails_the_call_only(gw: Gateway) -> None:
    out = (await gw.execute("tools.z.brotli()")).to_json()
    assert out["error"]["type"] == "TOOL_ERROR" and "'br'-encoded" in out["error"]["message"], out
    assert (await gw.execute("tools.z.small()")).ok

"""Bystanders under a flood: one client floods `call_tools` while ten others run `1+1`.

The gateway runs as its own process over streamable HTTP (as a team would share it), with
the demo upstreams. Baseline, same run: the same ten clients running `1+1` on an idle
gateway. During the flood, one client sends `call_tools([('notes', 'list_notes', {})] *
N)` with a 5 s limit and no tool-call cap (MCP_CODE_MAX_TOOL_CALLS=0), so only the
in-flight bound (MCP_CODE_MAX_CONCURRENT_CALLS) and the run's time limit hold it.
Target (contract §7, issue 13): the bystanders' p95 within 2x the idle p95, and the
flooding run ends at its time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastmcp import Client

from bench.common import ROOT, Section, Table, clean_environ, demo_servers, p50, p95, write_config

FLOOD_CALLS = 20_000
FLOOD_TIMEOUT_S = 5.0
WARM_UP_S = 2.0
BYSTANDERS = 10


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"the gateway exited with {proc.returncode}")
        try:
            async with Client(url) as client:
                await client.list_tools()
                return
        except Exception:  # not listening yet
            await asyncio.sleep(0.1)
    raise RuntimeError("the gateway did not start within 60 s")


@contextlib.asynccontextmanager
async def served_gateway(config: Path, env: dict[str, str]) -> AsyncIterator[str]:
    """`mcp-code-mode serve` over streamable HTTP on a free port, its own process, with
    `config` and `env`: its /mcp URL once it answers, while it runs."""
    port = _free_port()
    command = [sys.executable, "-m", "mcp_code_mode.cli", "serve", "--transport", "http"]
    proc = subprocess.Popen(
        [*command, "--port", str(port), "--config", str(config)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await _wait_ready(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


async def _one_plus_one(url: str, stop: asyncio.Event, samples: list[float]) -> None:
    async with Client(url) as client:
        while not stop.is_set():
            started = time.perf_counter()
            await client.call_tool("execute_code", {"code": "1+1"})
            samples.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.02)


async def _bystanders(url: str, seconds: float) -> list[float]:
    samples: list[float] = []
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_one_plus_one(url, stop, samples)) for _ in range(BYSTANDERS)]
    await asyncio.sleep(seconds)
    while not samples:  # a busy machine: at least one run each way, however long it takes
        await asyncio.sleep(0.1)
    stop.set()
    await asyncio.gather(*tasks)
    return samples


async def _flood(url: str) -> tuple[float, dict[str, Any]]:
    code = f"len(call_tools([('notes', 'list_notes', {{}})] * {FLOOD_CALLS}))"
    async with Client(url, timeout=120) as client:
        started = time.perf_counter()
        result = await client.call_tool(
            "execute_code", {"code": code, "timeout_s": FLOOD_TIMEOUT_S}, raise_on_error=False
        )
        elapsed = time.perf_counter() - started
    data = dict(result.structured_content or {})
    data["reply_chars"] = len(result.content[0].text) if result.content else 0
    return elapsed, data


async def run(seconds: float = 6.0) -> Section:
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), demo_servers())
        env = clean_environ(MCP_CODE_MAX_TOOL_CALLS="0", MCP_CODE_POOL_SIZE="4")
        async with served_gateway(config, env) as url:
            await _bystanders(url, WARM_UP_S)  # untimed: first sessions, first runs
            idle = await _bystanders(url, seconds)
            flood_task = asyncio.create_task(_flood(url))
            await asyncio.sleep(0.3)  # the flood is under way
            busy = await _bystanders(url, seconds)
            flood_s, flood = await flood_task
    table = Table(["case", "runs", "p50 ms", "p95 ms", "p95 vs idle"])
    table.rows.append(
        [
            "10 clients, `1+1`, idle gateway",
            len(idle),
            f"{p50(idle):.1f}",
            f"{p95(idle):.1f}",
            "1.00x",
        ]
    )
    table.rows.append(
        [
            f"the same, while one client floods call_tools ({FLOOD_CALLS:,} calls)",
            len(busy),
            f"{p50(busy):.1f}",
            f"{p95(busy):.1f}",
            f"{p95(busy) / p95(idle):.2f}x",
        ]
    )
    error = flood.get("error") or {}
    verdict = "met" if p95(busy) <= 2 * p95(idle) else "missed"
    notes = [
        f"The flooding run ({FLOOD_TIMEOUT_S:g} s limit) answered after {flood_s:.1f} s with "
        f"{error.get('type', 'ok')}; its reply was {flood.get('reply_chars', 0):,} characters.",
        f"Target: bystanders' p95 within 2x the idle p95: {verdict} "
        f"({p95(busy) / p95(idle):.2f}x). {os.cpu_count()} cores; the bystanders, the flood "
        "and the gateway share them.",
    ]
    section = Section(
        "Flood",
        __doc__.split("\n\n", 1)[1].strip() if __doc__ else "",
        tables=[("", table)],
        notes=notes,
    )
    section.headline["flood"] = (
        f"bystanders' `1+1` p95 {p95(busy):.1f} ms during a {FLOOD_CALLS:,}-call flood vs "
        f"{p95(idle):.1f} ms idle ({p95(busy) / p95(idle):.2f}x); the flood ended at "
        f"{flood_s:.1f} s ({FLOOD_TIMEOUT_S:g} s limit)"
    )
    return section


if __name__ == "__main__":
    for_print = asyncio.run(run())
    print(for_print.tables[0][1].markdown())
    print("\n".join(for_print.notes))

"""One upstream shared by several clients: a bystander's calls while another client's runs
keep it busy (`upstreams.fair_share`, MCP_CODE_MAX_UPSTREAM_CALLS; attack 128).

The gateway runs as its own process over streamable HTTP with the demo upstreams. Six
runs of one client each keep 16 calls in flight (`call_tools` of 8 `data.list_orders` and
8 `notes.list_notes`, 64 KB and ~30 ms of the upstream's CPU each, over and over) and end
at a 1 s time limit; meanwhile a second client calls `data.list_orders` and
`notes.list_notes` in one run every 0.1 s. Same run: the bystander alone; and the same
attack with MCP_CODE_MAX_UPSTREAM_CALLS=4, and =100000 (calls bounded per run only, as
before).

`python -m bench.shared_upstream [seconds]`
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from fastmcp import Client

from bench.common import Table, clean_environ, demo_servers, p50, p95, write_config
from bench.flood import served_gateway

RUNS = 6
BUSY = (
    "while True:\n"
    "    call_tools([('data', 'list_orders', {})] * 8 + [('notes', 'list_notes', {})] * 8)"
)
BYSTANDER = "[len(tools.data.list_orders()), len(tools.notes.list_notes())]"


async def _busy(url: str, stop: asyncio.Event) -> None:
    async with Client(url, timeout=60) as client:
        while not stop.is_set():
            args = {"code": BUSY, "timeout_s": 1}
            await client.call_tool("execute_code", args, raise_on_error=False)


async def _bystander(url: str, seconds: float) -> list[float]:
    samples: list[float] = []
    async with Client(url, timeout=60) as client:
        ends = time.monotonic() + seconds
        while time.monotonic() < ends or not samples:
            started = time.perf_counter()
            await client.call_tool("execute_code", {"code": BYSTANDER})
            samples.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.1)
    return samples


async def _case(upstream_calls: int | None, runs: int, seconds: float) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), demo_servers())
        limit = (
            {} if upstream_calls is None else {"MCP_CODE_MAX_UPSTREAM_CALLS": str(upstream_calls)}
        )
        env = clean_environ(MCP_CODE_POOL_SIZE="8", MCP_CODE_RUNS="off", **limit)
        async with served_gateway(config, env) as url:
            await _bystander(url, 1.0)  # untimed: first sessions, first runs
            stop = asyncio.Event()
            busy = [asyncio.create_task(_busy(url, stop)) for _ in range(runs)]
            await asyncio.sleep(1.0 if runs else 0.0)  # the runs are under way
            samples = await _bystander(url, seconds)
            stop.set()
            await asyncio.gather(*busy)
            return samples


async def run(seconds: float = 15.0) -> Table:
    table = Table(["case", "bystander runs", "p50 ms", "p95 ms", "worst ms"])
    cases = [
        ("bystander alone", None, 0),
        (f"{RUNS} busy runs, places shared out (default, 16)", None, RUNS),
        (f"{RUNS} busy runs, places shared out, 4 of them", 4, RUNS),
        (f"{RUNS} busy runs, bounded per run only (100000)", 100_000, RUNS),
    ]
    for name, upstream_calls, runs in cases:
        samples = await _case(upstream_calls, runs, seconds)
        table.rows.append(
            [
                name,
                len(samples),
                f"{p50(samples):.0f}",
                f"{p95(samples):.0f}",
                f"{max(samples):.0f}",
            ]
        )
    return table


if __name__ == "__main__":
    print(asyncio.run(run(float(sys.argv[1]) if len(sys.argv) > 1 else 15.0)).markdown())

"""Latency of execute_code through an in-memory fastmcp Client, against same-run baselines.

    python bench/executor.py [--runs N] [--pause-ms MS]

Rows: a fastmcp in-memory call to a trivial tool (the floor for any MCP tool), in-process
`exec` of `1+1` (what a sandbox-free executor would cost), execute_code `1+1` (warm pool,
pausing between runs so the pool refills, and back-to-back), one upstream tool call through
execute_code, and the same upstream call made directly by a fastmcp stdio client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport

from mcp_code_mode.config import load_config
from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
NOTES = str(ROOT / "examples" / "servers" / "notes_server.py")


async def measure(fn: Callable[[], Awaitable[object]], runs: int, pause_s: float) -> list[float]:
    await fn()  # warm-up
    samples = []
    for _ in range(runs):
        if pause_s:
            await asyncio.sleep(pause_s)
        started = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def row(name: str, samples: list[float], floor: float) -> str:
    p50 = statistics.median(samples)
    p95 = statistics.quantiles(samples, n=20)[18] if len(samples) >= 20 else max(samples)
    return f"| {name} | {p50:.2f} | {p95:.2f} | {p50 / floor:.1f}x |"


async def main(runs: int, pause_s: float) -> None:
    trivial = FastMCP("trivial")

    @trivial.tool
    def one() -> int:
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mcp_servers.json"
        config.write_text(
            json.dumps({"servers": {"notes": {"command": sys.executable, "args": [NOTES]}}})
        )
        settings = Settings(_env_file=None, pool_size=2)  # type: ignore[call-arg]
        async with Gateway(settings, load_config(config)) as gw:
            server = build_server(gw)
            async with Client(trivial) as floor_client, Client(server) as client:
                floor = await measure(lambda: floor_client.call_tool("one", {}), runs, 0)
                ns: dict[str, object] = {}
                code = compile("1+1", "<bench>", "eval")

                async def in_process() -> object:
                    return eval(code, ns)  # the unsandboxed floor

                results = {
                    "fastmcp in-memory call, trivial tool (baseline)": floor,
                    "in-process eval of 1+1 (no sandbox)": await measure(in_process, runs, 0),
                    "execute_code 1+1, warm pool": await measure(
                        lambda: client.call_tool("execute_code", {"code": "1+1"}), runs, pause_s
                    ),
                    "execute_code 1+1, back-to-back": await measure(
                        lambda: client.call_tool("execute_code", {"code": "1+1"}), runs, 0
                    ),
                    "execute_code with one upstream call, warm pool": await measure(
                        lambda: client.call_tool(
                            "execute_code", {"code": "tools.notes.get_note(note_id=1)"}
                        ),
                        runs,
                        pause_s,
                    ),
                }
        transport = StdioTransport(sys.executable, [NOTES], keep_alive=False)
        async with Client(transport) as direct:
            results["direct fastmcp stdio call to the upstream"] = await measure(
                lambda: direct.call_tool("get-note", {"note_id": 1}), runs, 0
            )
    base = statistics.median(floor)
    print(f"Python {sys.version.split()[0]}, {runs} runs each\n")
    print("| case | p50 ms | p95 ms | p50 / baseline |")
    print("| --- | ---: | ---: | ---: |")
    for name, samples in results.items():
        print(row(name, samples, base))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--pause-ms", type=float, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.pause_ms / 1000))

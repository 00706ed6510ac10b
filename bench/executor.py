"""Latency and memory of execute_code through an in-memory fastmcp Client, with same-run baselines.

    python -m bench.executor [--runs N] [--pause-ms MS] [--rss-runs N] [--executor pyodide]

Baselines, measured in the same run: a fastmcp in-memory call to a trivial tool (the floor for
any MCP tool), in-process `exec` (no sandbox at all) and a cold `python -c` process. Rows:
`1+1` and a 100k-iteration loop, warm pool (a pause between runs lets the pool refill) and
back-to-back; one upstream tool call through execute_code against a direct fastmcp stdio
call; a runaway stopped by its timeout; server RSS over many runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport

from bench.common import measure, memory_mb, p95
from mcp_code_mode.config import load_config
from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
NOTES = str(ROOT / "examples" / "servers" / "notes_server.py")
LOOP = "total = 0\nfor i in range(100_000):\n    total += i\ntotal"


async def main(runs: int, pause_s: float, rss_runs: int, executor: str) -> None:
    trivial = FastMCP("trivial")

    @trivial.tool
    def one() -> int:
        return 1

    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mcp_servers.json"
        config.write_text(
            json.dumps(
                {
                    "servers": {
                        "notes": {"command": sys.executable, "args": [NOTES], "timeout_s": 60}
                    }
                }
            )
        )
        settings = Settings(_env_file=None, pool_size=2, timeout_s=1, executor=executor)  # type: ignore[call-arg]
        async with Gateway(settings, load_config(config)) as gw:
            server = build_server(gw)
            async with Client(trivial) as floor_client, Client(server) as client:

                def execute(code: str) -> Callable[[], Awaitable[object]]:
                    return lambda: client.call_tool(
                        "execute_code", {"code": code}, raise_on_error=False
                    )

                results["baseline: fastmcp in-memory call, trivial tool"] = await measure(
                    lambda: floor_client.call_tool("one", {}), runs
                )
                for name, code in (("1+1", "1+1"), ("100k loop", LOOP)):
                    compiled = compile(code, "<bench>", "exec")

                    async def in_process(compiled: object = compiled) -> None:
                        exec(compiled, {})  # the unsandboxed floor

                    results[f"floor: in-process exec, {name}"] = await measure(in_process, runs)
                    results[f"execute_code {name}, warm pool"] = await measure(
                        execute(code), runs, pause_s=pause_s
                    )
                    results[f"execute_code {name}, back-to-back"] = await measure(
                        execute(code), runs
                    )
                results["execute_code, one upstream call"] = await measure(
                    execute("tools.notes.get_note(note_id=1)"), runs, pause_s=pause_s
                )
                results["runaway `while True: pass`, timeout 1 s"] = await measure(
                    execute("while True:\n    pass"), 3
                )
                rss_before = memory_mb()["rss"]
                for _ in range(rss_runs):
                    await client.call_tool("execute_code", {"code": "sum(range(100))"})
                rss_after = memory_mb()["rss"]
        async with Client(StdioTransport(sys.executable, [NOTES], keep_alive=False)) as direct:
            results["direct fastmcp stdio call to the same upstream"] = await measure(
                lambda: direct.call_tool("get-note", {"note_id": 1}), runs
            )

    async def cold() -> None:
        await asyncio.to_thread(subprocess.run, [sys.executable, "-c", "1+1"], check=True)

    results["cold start: python -c '1+1'"] = await measure(cold, max(5, runs // 5))

    base = statistics.median(results["baseline: fastmcp in-memory call, trivial tool"])
    print(f"executor {executor}; Python {sys.version.split()[0]}, {runs} runs per row\n")
    print("| case | p50 ms | p95 ms | p50 / baseline |")
    print("| --- | ---: | ---: | ---: |")
    for name, samples in results.items():
        p50 = statistics.median(samples)
        print(f"| {name} | {p50:.2f} | {p95(samples):.2f} | {p50 / base:.2f}x |")
    growth = (rss_after - rss_before) / rss_before * 100
    print(
        f"\nserver RSS over {rss_runs} runs: {rss_before:.1f} MB -> {rss_after:.1f} MB "
        f"({growth:+.1f}%)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--pause-ms", type=float, default=50)
    parser.add_argument("--rss-runs", type=int, default=1000)
    parser.add_argument("--executor", choices=["local", "pyodide"], default="local")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.pause_ms / 1000, args.rss_runs, args.executor))

"""Pyodide: a plain run against one that awaits (issue 30). Before guest asyncio had a loop
of its own, a run that awaited reached JavaScript and its runner was replaced.

    FASTMCP_CHECK_FOR_UPDATES=off python -m bench.pyodide_async [--runs 25]

A `Gateway` in process on the demo config, `MCP_EXECUTOR=pyodide`, two runners; each code
runs back to back; p50 over the runs after the first three.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
CODES = {"1+1": "1+1", "await asyncio.sleep(0)": "import asyncio\nawait asyncio.sleep(0)\n1"}


async def _measure(runs: int) -> dict[str, float]:
    settings = Settings(_env_file=None, executor="pyodide", pool_size=2)
    gateway = Gateway(settings, load_config(ROOT / "mcp_servers.json"))
    await gateway.start()
    p50s = {}
    try:
        for name, code in CODES.items():
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                out = (await gateway.execute(code, timeout_s=20)).to_json()
                times.append((time.perf_counter() - started) * 1000)
                if not out["ok"]:
                    raise RuntimeError(f"{name}: {out['error']}")
            p50s[name] = statistics.median(times[3:])
    finally:
        await gateway.aclose()
    return p50s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
    for name, p50 in asyncio.run(_measure(args.runs)).items():
        print(f"{name}: p50 {p50:.1f} ms")


if __name__ == "__main__":
    main()

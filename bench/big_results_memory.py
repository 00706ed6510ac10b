"""The gateway's memory after bursts of big upstream results, and once it is idle.

`python -m bench.big_results_memory [--runs 16] [--size 4700000] [--rounds 3]`: a gateway in
this process over one upstream (tests/servers/big_reply_upstream.py, stdio) answering
`big(size)` with a text of `size` characters; each round runs `--runs` `execute_code` runs at
once, each reading one such result. Prints this process's RSS (MB) at the start, after each
round, 2 s later, and 60 s later (when the run store has written every record).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from tests.support import ROOT, server_entry, start_gateway

BIG = str(ROOT / "tests" / "servers" / "big_reply_upstream.py")


def rss_mb() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 // 2**20


async def measure(runs: int, size: int, rounds: int) -> list[tuple[str, int]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-bigmem-"))
    config = folder / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"big": server_entry(BIG, timeout_s=120)}}))
    gateway = await start_gateway(config, runs_db=str(folder / "runs.db"), pool_size=2)
    seen = []
    try:
        await gateway.settle(wait_s=None)
        seen.append(("start", rss_mb()))
        code = f"len(tools.big.big(size={size}))"
        for n in range(rounds):
            burst = [gateway.execute(code, timeout_s=120) for _ in range(runs)]
            done = await asyncio.gather(*burst)
            assert all(out.ok for out in done), [o.error for o in done if not o.ok][:1]
            seen.append((f"after round {n + 1}", rss_mb()))
            await asyncio.sleep(2)
            seen.append(("2 s later", rss_mb()))
        await asyncio.sleep(60)
        seen.append(("60 s later", rss_mb()))
    finally:
        await gateway.aclose()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--size", type=int, default=4_700_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for label, mb in asyncio.run(measure(args.runs, args.size, args.rounds)):
        print(f"{label:>14}: {mb} MB")


if __name__ == "__main__":
    main()

"""Host memory: what the gateway process pays for what guest code or an upstream sends.

Each scenario starts a fresh `python -m mcp_code_mode.executor_server` over stdio, driven
by a real fastmcp `Client`, with one test upstream (`tests/servers/big_reply_upstream.py`,
a stdio JSON-RPC server that streams replies of any size without holding them). The
gateway's RSS and peak (VmHWM, plus VmRSS sampled every 5 ms) are read from /proc.

- names: one run making failed calls whose tool names are 1 MB and server names 100 KB;
- big result: one call whose upstream reply is 200 MB (MCP_CODE_MAX_RESULT_BYTES at its
  default, 10 MB), while other calls run `1+1` beside it;
- ordinary work: 1,000 runs that each call the upstream once.

Usage (`--src` picks the source tree the gateway runs, for a before/after comparison):

    python -m bench.host_memory --quick --out /tmp/after.json
    python -m bench.host_memory --src /tmp/wt-a905118/src --out /tmp/before.json
    python -m bench.host_memory --table /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from bench.common import QUIET, ROOT, Table, children, clean_environ, cmdline, p95, write_config

UPSTREAM = ROOT / "tests" / "servers" / "big_reply_upstream.py"
MB = 1024 * 1024
SAMPLE_S = 0.005


@dataclass(frozen=True)
class Options:
    name_calls: int = 1000
    tool_name_bytes: int = 1_000_000
    server_name_bytes: int = 100_000
    big_bytes: int = 200_000_000
    limit_bytes: int = 10_000_000  # MCP_CODE_MAX_RESULT_BYTES (its default)
    ordinary_runs: int = 1000
    latency_runs: int = 50
    wide_calls: int = 55  # of 990,000 characters: past the 64 MB batch budget if wide

    @classmethod
    def quick(cls) -> Options:
        return cls(name_calls=100, big_bytes=50_000_000, ordinary_runs=100, latency_runs=20)


# ---------------------------------------------------------------- the gateway process


def _status_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (the peak RSS of the process's life) in MB."""
    out = {"rss": 0.0, "hwm": 0.0}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out["rss" if key == "VmRSS" else "hwm"] = int(rest.split()[0]) / 1024
    return out


class _Sampler:
    """The highest VmRSS seen while it runs, sampled every SAMPLE_S."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_mb = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Sampler:
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _sample(self) -> None:
        while True:
            self.peak_mb = max(self.peak_mb, _status_mb(self.pid)["rss"])
            await asyncio.sleep(SAMPLE_S)


@contextlib.asynccontextmanager
async def _gateway(src: Path, tmp: Path, opts: Options) -> AsyncIterator[tuple[Client[Any], int]]:
    """A fresh gateway over stdio with the big-reply upstream `big`, warmed and idle."""
    entry = {"command": sys.executable, "args": [str(UPSTREAM)], "env": dict(QUIET)}
    config = write_config(tmp, {"big": entry})
    env = clean_environ(
        PYTHONPATH=str(src),
        MCP_CODE_CACHE_DIR=str(tmp / "cache"),
        MCP_CODE_MAX_RESULT_BYTES=str(opts.limit_bytes),
        MCP_CODE_TIMEOUT_S="300",
        MCP_CODE_MAX_TIMEOUT_S="600",
        MCP_CODE_MAX_TOOL_CALLS="0",
        FASTMCP_CHECK_FOR_UPDATES="off",
        FASTMCP_SHOW_SERVER_BANNER="false",
        **QUIET,
    )
    command = ["-m", "mcp_code_mode.executor_server", "--config", str(config)]
    transport = StdioTransport(
        sys.executable, command, env=env, cwd=str(tmp), keep_alive=False,
        log_file=tmp / "gateway.log",
    )  # fmt: skip
    async with Client(transport, timeout=900, init_timeout=120) as client:
        pid = next(p for p in children(os.getpid()) if "executor_server" in cmdline(p))
        for _ in range(3):
            await _run(client, "tools.big.echo(text='warm')")
        await asyncio.sleep(1.0)
        yield client, pid


async def _run(client: Client[Any], code: str) -> dict[str, Any]:
    result = await client.call_tool_mcp("execute_code", {"code": code, "timeout_s": 600})
    text = "".join(getattr(block, "text", "") for block in result.content)
    out: dict[str, Any] = json.loads(text) if text.startswith("{") else {"raw": text[:300]}
    return out


async def _one_plus_one(client: Client[Any], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        await _run(client, "1+1")
        samples.append((time.perf_counter() - began) * 1000)
    return samples


# ---------------------------------------------------------------- scenarios


async def _names(client: Client[Any], pid: int, opts: Options) -> dict[str, Any]:
    code = (
        f"server = 's' * {opts.server_name_bytes}\n"
        f"tool = 't' * {opts.tool_name_bytes}\n"
        "failed = 0\n"
        f"for i in range({opts.name_calls}):\n"
        "    try:\n"
        "        call_tool(server + str(i), tool + str(i))\n"
        "    except ToolError:\n"
        "        failed += 1\n"
        "failed"
    )
    idle = _status_mb(pid)["rss"]
    began = time.perf_counter()
    async with _Sampler(pid) as sampler:
        out = await _run(client, code)
    seconds = time.perf_counter() - began
    await asyncio.sleep(1.0)
    after = _status_mb(pid)["rss"]
    return {
        "idle_mb": idle,
        "growth_mb": after - idle,
        "peak_over_idle_mb": max(sampler.peak_mb, after) - idle,
        "seconds": seconds,
        "outcome": _outcome(out),
    }


async def _big(client: Client[Any], pid: int, opts: Options) -> dict[str, Any]:
    idle_samples = await _one_plus_one(client, opts.latency_runs)
    before = _status_mb(pid)
    code = f"r = tools.big.big(size={opts.big_bytes})\nlen(r)"
    beside: list[float] = []
    began = time.perf_counter()
    async with _Sampler(pid) as sampler:
        call = asyncio.create_task(_run(client, code))
        while not call.done():
            beside += await _one_plus_one(client, 1)
        out = await call
    seconds = time.perf_counter() - began
    after = _status_mb(pid)
    hwm = after["hwm"] if after["hwm"] > before["hwm"] else 0.0
    await asyncio.sleep(1.0)
    return {
        "idle_mb": before["rss"],
        "peak_over_idle_mb": max(sampler.peak_mb, hwm) - before["rss"],
        "kept_mb": _status_mb(pid)["rss"] - before["rss"],
        "seconds": seconds,
        "outcome": _outcome(out),
        "idle_p95_ms": p95(idle_samples),
        "beside_p95_ms": p95(beside) if beside else None,
        "beside_runs": len(beside),
    }


async def _ordinary(client: Client[Any], pid: int, opts: Options) -> dict[str, Any]:
    idle = _status_mb(pid)["rss"]
    code = "r = tools.big.echo(text='x' * 1000)\nsum(range(1000)) + len(r)"
    began = time.perf_counter()
    for _ in range(opts.ordinary_runs):
        out = await _run(client, code)
        if not out.get("ok"):
            return {"outcome": _outcome(out)}
    seconds = time.perf_counter() - began
    await asyncio.sleep(1.0)
    return {
        "idle_mb": idle,
        "growth_mb": _status_mb(pid)["rss"] - idle,
        "seconds": seconds,
        "outcome": "ok",
    }


async def _wide(client: Client[Any], pid: int, opts: Options) -> dict[str, Any]:
    """A batch of calls of 990,000 ASCII characters each, and the same with one emoji each
    (a `str` of 4 bytes a character once the host parses it): peak RSS over idle."""
    out: dict[str, Any] = {}
    for label, tail in (("ascii", "x"), ("emoji", "\U0001f600")):
        code = (
            f"text = 'n' * 990_000 + {tail!r}\n"
            "got = call_tools([('big', 'boot', {'text': text + str(i)}) "
            f"for i in range({opts.wide_calls})])\n"
            "[sum(not isinstance(r, ToolError) for r in got), len(got)]"
        )
        await asyncio.sleep(1.0)
        idle = _status_mb(pid)["rss"]
        async with _Sampler(pid) as sampler:
            result = await _run(client, code)
        out[f"{label}_peak_over_idle_mb"] = sampler.peak_mb - idle
        out[f"{label}_outcome"] = _outcome(result)
    out["outcome"] = out["emoji_outcome"]
    return out


def _outcome(out: dict[str, Any]) -> str:
    if out.get("ok"):
        return f"ok: {json.dumps(out.get('result'))[:60]}"
    error = out.get("error") or {}
    return f"{error.get('type')}: {str(error.get('message'))[:160]}" if error else str(out)[:160]


async def measure(src: Path, opts: Options) -> dict[str, Any]:
    """Every scenario, each in a fresh gateway running the source tree `src`."""
    results: dict[str, Any] = {"src": str(src), "options": asdict(opts)}
    scenarios = (("names", _names), ("big", _big), ("ordinary", _ordinary), ("wide", _wide))
    for name, scenario in scenarios:
        with tempfile.TemporaryDirectory() as tmp:
            async with _gateway(src, Path(tmp), opts) as (client, pid):
                results[name] = await scenario(client, pid, opts)
        print(f"{name}: {json.dumps(results[name])}", file=sys.stderr)
    return results


# ---------------------------------------------------------------- report


def table(before: dict[str, Any], after: dict[str, Any]) -> Table:
    """Before (the code at commit a905118) against after, one row per measure."""
    o = after["options"]
    limit_mb = o["limit_bytes"] / 1e6
    calls = f"{o['name_calls']:,} failed calls (1 MB tool, 100 KB server names)"
    peak = f"the same: peak RSS over idle, MB (target ≤ 2 × {limit_mb:.0f} MB)"
    wide = f"a batch of {o.get('wide_calls', 55)} calls of 990 KB ASCII"
    rows: list[tuple[str, str, Any]] = [
        ("names", f"{calls}: RSS growth MB", "growth_mb"),
        ("names", "the same: peak RSS over idle, MB", "peak_over_idle_mb"),
        ("names", "the same: outcome", "outcome"),
        ("big", f"{o['big_bytes'] / 1e6:.0f} MB upstream result: outcome", "outcome"),
        ("big", peak, "peak_over_idle_mb"),
        ("big", "the same: RSS kept after, MB", "kept_mb"),
        ("big", "the same: seconds until the call answered", "seconds"),
        ("big", "`1+1` p95 ms, idle", "idle_p95_ms"),
        ("big", "`1+1` p95 ms, beside the big result (runs)", "beside_p95_ms"),
        ("ordinary", f"{o['ordinary_runs']:,} runs of ordinary work: RSS growth MB", "growth_mb"),
        ("wide", f"{wide}: peak RSS over idle, MB", "ascii_peak_over_idle_mb"),
        ("wide", "the same: outcome (calls made, of all)", "ascii_outcome"),
        ("wide", "the same, one emoji a call: peak over idle, MB", "emoji_peak_over_idle_mb"),
        ("wide", "the same: outcome (calls made, of all)", "emoji_outcome"),
    ]  # fmt: skip
    out = Table(["measure", "before (a905118)", "after"], align="lll")
    for scenario, label, key in rows:
        cells = [_cell(side.get(scenario, {}), key) for side in (before, after)]
        out.rows.append([label, *cells])
    return out


def _cell(result: dict[str, Any], key: str) -> str:
    value = result.get(key)
    if value is None:
        return "—"
    if key == "beside_p95_ms":
        return f"{value:.0f} ({result.get('beside_runs', 0)})"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value).replace("|", "\\|")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.host_memory")
    parser.add_argument("--quick", action="store_true", help="fewer calls, a 50 MB result")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="source tree to run")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--table", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.table:
        before, after = (json.loads(p.read_text()) for p in args.table)
        print(table(before, after).markdown())
        return
    results = asyncio.run(measure(args.src.resolve(), Options.quick() if args.quick else Options()))
    text = json.dumps(results, indent=2)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

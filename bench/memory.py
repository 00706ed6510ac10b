"""Memory: the gateway process idle and with a warm pool, per worker, against a plain server.

Each configuration is a real `mcp-code-mode serve` process over stdio (the way Claude
Desktop starts it), read from /proc. PSS splits pages shared between processes (a forked
worker shares most of its memory with the zygote) among them, so it is the fair per-process
cost; RSS counts shared pages in full.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from bench.common import (
    EXAMPLES,
    QUIET,
    Section,
    Table,
    children,
    clean_environ,
    cmdline,
    demo_servers,
    memory_mb,
    pyodide_ready,
    write_config,
)

ENV = {
    "MCP_EXECUTOR": "local",
    "FASTMCP_CHECK_FOR_UPDATES": "off",
    "FASTMCP_SHOW_SERVER_BANNER": "false",
    "MCP_CODE_TIMEOUT_S": "30",
    **QUIET,
}


def _server_pid(before: set[int]) -> int:
    fresh = [p for p in children(os.getpid()) if p not in before]
    for pid in fresh:
        if "serve" in cmdline(pid) or "notes_server" in cmdline(pid):
            return pid
    raise RuntimeError(f"no server process among {fresh}")


def _tree(pid: int) -> dict[int, str]:
    """The server's descendants by kind: upstreams, the zygote and its forked workers."""
    kinds = {}
    for child in children(pid):
        line = cmdline(child)
        if "sandbox.child.zygote" in line:
            kinds[child] = "zygote"
            kinds.update({worker: "worker" for worker in children(child)})
        elif "deno" in line:
            kinds[child] = "pyodide runner"
        else:
            kinds[child] = "upstream"
    return kinds


async def _probe(
    command: list[str], env: dict[str, str], runs: int, cwd: str, code: str = "sum(range(100))"
) -> dict[str, Any]:
    before = set(children(os.getpid()))
    transport = StdioTransport(command[0], command[1:], env=clean_environ(**env), cwd=cwd)
    async with Client(transport) as client:
        pid = _server_pid(before)
        await asyncio.sleep(1.0)  # let the pool finish warming
        tree = _tree(pid)
        idle = memory_mb(pid)
        parts = {p: memory_mb(p) for p in tree}
        after = idle
        if runs:
            for _ in range(runs):
                await client.call_tool("execute_code", {"code": code})
            await asyncio.sleep(1.0)
            after = memory_mb(pid)
    return {"server": idle, "after": after, "tree": tree, "parts": parts}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


async def run(runs: int) -> Section:
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), demo_servers())
        serve = [sys.executable, "-m", "mcp_code_mode.cli", "serve", "--config", str(config)]
        # cwd: an empty folder, so no `.env` of the caller's is read
        plain = await _probe([sys.executable, str(EXAMPLES / "notes_server.py")], {}, 0, tmp)
        no_pool = await _probe(serve, {**ENV, "MCP_CODE_POOL_SIZE": "0"}, 0, tmp)
        warm = await _probe(serve, {**ENV, "MCP_CODE_POOL_SIZE": "2"}, runs, tmp)
        pyodide = None
        if pyodide_ready():
            pyodide = await _probe(
                serve, {**ENV, "MCP_CODE_POOL_SIZE": "2", "MCP_EXECUTOR": "pyodide"}, 0, tmp
            )

    base = plain["server"]["rss"]
    table = Table(["process", "RSS MB", "PSS MB", "RSS / plain fastmcp server"])

    def add(name: str, mem: dict[str, float]) -> None:
        table.rows.append(
            [name, f"{mem['rss']:.1f}", f"{mem['pss']:.1f}", f"{mem['rss'] / base:.2f}x"]
        )

    add("baseline: plain fastmcp stdio server (demo notes upstream)", plain["server"])
    add("gateway, idle, no pool (MCP_CODE_POOL_SIZE=0)", no_pool["server"])
    add("gateway with a warm pool of 2, idle", warm["server"])
    add(f"gateway after {runs:,} execute_code runs", warm["after"])
    for kind in ("zygote", "worker", "pyodide runner"):
        source = pyodide if kind == "pyodide runner" else warm
        if source is None:
            continue
        pids = [p for p, k in source["tree"].items() if k == kind]
        if not pids:
            continue
        mems = [source["parts"][p] for p in pids]
        label = {
            "zygote": "zygote (forks the workers)",
            "worker": "per warm worker (mean)",
            "pyodide runner": "per warm Pyodide runner (deno, mean)",
        }[kind]
        add(
            f"{label}, {len(pids)} running",
            {"rss": _mean([m["rss"] for m in mems]), "pss": _mean([m["pss"] for m in mems])},
        )
    growth = (warm["after"]["rss"] - warm["server"]["rss"]) / warm["server"]["rss"]
    workers = [warm["parts"][p] for p, k in warm["tree"].items() if k == "worker"]
    if not workers:
        raise RuntimeError("no warm worker found under the gateway process")
    sandbox = [warm["parts"][p] for p, k in warm["tree"].items() if k in ("zygote", "worker")]
    total_pss = warm["server"]["pss"] + sum(m["pss"] for m in sandbox)
    table.rows.append(
        [
            "gateway + zygote + 2 warm workers, together (upstreams not counted)",
            "—",
            f"{total_pss:.1f}",
            "—",
        ]
    )
    section = Section(
        "Memory",
        __doc__.split("\n\n", 1)[1].strip() if __doc__ else "",
        tables=[("", table)],
        notes=[f"Gateway RSS change over {runs:,} runs: {growth:+.1%}."],
    )
    section.headline["memory"] = (
        f"gateway with a warm pool of 2: {total_pss:.0f} MB PSS in all (gateway process "
        f"{warm['server']['rss']:.0f} MB RSS); "
        f"{_mean([w['pss'] for w in workers]):.1f} MB PSS per warm worker"
    )
    return section

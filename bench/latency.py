"""Latency, p50 / p95, each case next to a baseline measured in the same run."""

from __future__ import annotations

import asyncio
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP

from bench import plots
from bench.common import (
    Section,
    Table,
    bench_settings,
    demo_servers,
    measure,
    p50,
    p95,
    p95_cell,
    pyodide_ready,
    write_config,
)
from bench.corpus import catalog_of, upstream_configs
from bench.specs import ServerSpec, T
from mcp_code_mode.config import load_config
from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway

FAN_OUT, SLEEP_MS = 100, 50


@dataclass(frozen=True)
class Sizes:
    runs: int = 100
    pyodide_runs: int = 20
    fan_out_runs: int = 5
    startup_runs: int = 5
    fan_out: int = FAN_OUT


class Results:
    def __init__(self) -> None:
        self.rows: list[tuple[str, list[float], str | None]] = []

    def add(self, name: str, samples: list[float], baseline: str | None = None) -> None:
        self.rows.append((name, samples, baseline))

    def samples(self, name: str) -> list[float]:
        """The samples of a case; empty when the case was not measured."""
        return next((s for n, s, _ in self.rows if n == name), [])


def _trivial_server() -> FastMCP:
    server = FastMCP("trivial")

    @server.tool
    def one() -> int:
        return 1

    return server


async def _execute(client: Client[Any], code: str) -> None:
    result = await client.call_tool_mcp("execute_code", {"code": code})
    if result.is_error:
        raise RuntimeError(f"execute_code failed: {result.content}")


async def run(sizes: Sizes, figures: Path) -> Section:
    out = Results()
    notes: list[str] = []
    base = "fastmcp in-memory call, trivial tool"
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        slow = T("wait", f"Sleep {SLEEP_MS} ms, then answer.")
        servers = demo_servers()
        spec = ServerSpec("slow", f"One tool that takes {SLEEP_MS} ms", (slow,))
        servers["slow"] = upstream_configs([spec], directory, sleep_ms=SLEEP_MS)["slow"]
        config = load_config(write_config(directory, servers))
        async with AsyncExitStack() as stack:
            gw = await stack.enter_async_context(Gateway(bench_settings(pool_size=2), config))
            client = await stack.enter_async_context(Client(build_server(gw)))
            trivial = await stack.enter_async_context(Client(_trivial_server()))
            direct = await stack.enter_async_context(Client(config.servers["notes"].to_transport()))
            out.add(base, await measure(lambda: trivial.call_tool("one", {}), sizes.runs))
            out.add(
                "execute_code `1+1`, local",
                await measure(lambda: _execute(client, "1+1"), sizes.runs, pause_s=0.05),
                base,
            )
            if pyodide_ready():
                pyo_gw = await stack.enter_async_context(
                    Gateway(bench_settings(pool_size=2, executor="pyodide"), config)
                )
                pyo = await stack.enter_async_context(Client(build_server(pyo_gw)))
                out.add(
                    "execute_code `1+1`, pyodide",
                    await measure(lambda: _execute(pyo, "1+1"), sizes.pyodide_runs, pause_s=1.0),
                    base,
                )
            else:
                notes.append("Pyodide is not set up here (`mcp-code-mode setup pyodide`).")
            direct_name = "direct fastmcp stdio call, notes get-note"
            out.add(
                direct_name,
                await measure(lambda: direct.call_tool("get-note", {"note_id": 1}), sizes.runs),
            )
            out.add(
                "execute_code, one upstream call (same tool)",
                await measure(
                    lambda: _execute(client, "tools.notes.get_note(note_id=1)"),
                    sizes.runs,
                    pause_s=0.05,
                ),
                direct_name,
            )
            n = sizes.fan_out
            sequential = f"sequential: {n} calls to a {SLEEP_MS} ms tool in one snippet"
            out.add(
                sequential,
                await measure(
                    lambda: _execute(client, f"[tools.slow.wait() for _ in range({n})]"),
                    sizes.fan_out_runs,
                ),
            )
            out.add(
                f"call_tools fan-out: {n} calls to a {SLEEP_MS} ms tool",
                await measure(
                    lambda: _execute(client, f"call_tools([('slow', 'wait', {{}})] * {n})"),
                    sizes.fan_out_runs,
                ),
                sequential,
            )

        five = upstream_configs(catalog_of(60)[:5], directory)
        five_config = load_config(write_config(directory, five))
        one_name = "one bare fastmcp stdio client: connect + list_tools"
        out.add(one_name, await _startup_direct(five_config, 1, sizes.startup_runs))
        five_name = "5 bare fastmcp stdio clients, concurrently"
        out.add(five_name, await _startup_direct(five_config, 5, sizes.startup_runs), one_name)
        out.add(
            "gateway start-up with 5 upstreams (catalog + warm pool)",
            await _startup_gateway(five_config, sizes.startup_runs),
            five_name,
        )

    table = Table(["case", "p50 ms", "p95 ms", "baseline", "p50 / baseline", "runs"])
    for name, samples, baseline in out.rows:
        ratio = "—"
        if baseline:
            ratio = f"{p50(samples) / p50(out.samples(baseline)):.2f}x"
        table.rows.append(
            [name, p50(samples), p95_cell(samples), baseline or "(baseline)", ratio, len(samples)]
        )
    figure = plots.latency(figures / "latency.png", [(n, p50(s), p95(s)) for n, s, _ in out.rows])
    local = p50(out.samples("execute_code `1+1`, local"))
    fan = p50(out.samples(f"call_tools fan-out: {n} calls to a {SLEEP_MS} ms tool"))
    seq = p50(out.samples(sequential))
    section = Section(
        "Latency",
        "Through a fastmcp `Client` talking to our server in memory (what an MCP client "
        "pays minus its transport), warm worker pool; a short pause between runs lets the "
        "pool refill, as between an agent's turns. Each case names its same-run baseline.",
        tables=[("", table)],
        figures=[("p50 bars, p95 ticks (log scale)", figure)],
        notes=notes,
    )
    pyodide = out.samples("execute_code `1+1`, pyodide")
    on_pyodide = f", {p50(pyodide):.1f} ms (pyodide)" if pyodide else ""
    section.headline["latency"] = (
        f"execute_code `1+1` through MCP {local:.1f} ms p50 (local){on_pyodide}; "
        f"{n} × {SLEEP_MS} ms tool calls with call_tools {fan:.0f} ms vs {seq:.0f} ms "
        f"sequential ({seq / fan:.0f}x)"
    )
    return section


async def _startup_direct(config: Any, count: int, runs: int) -> list[float]:
    """Connect `count` bare clients concurrently until each has listed its tools (the clients
    are closed after the clock stops, as the gateway is)."""
    servers = list(config.servers.values())[:count]
    samples = []
    for _ in range(runs):
        async with AsyncExitStack() as stack:
            started = time.perf_counter()

            async def connect(server: Any, stack: AsyncExitStack = stack) -> None:
                client = await stack.enter_async_context(Client(server.to_transport()))
                await client.list_tools()

            await asyncio.gather(*(connect(s) for s in servers))
            samples.append((time.perf_counter() - started) * 1000)
    return samples


async def _startup_gateway(config: Any, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        gw = Gateway(bench_settings(pool_size=2), config)
        await gw.start()  # on failure it has closed what it started
        samples.append((time.perf_counter() - started) * 1000)
        await gw.aclose()
    return samples

"""Scaling out: 1, 2 and 4 gateway instances behind HAProxy, 20 concurrent clients.

Each instance is `mcp-code-mode serve --transport http` with MCP_CODE_HTTP_STATELESS=true
and the demo upstreams; HAProxy runs deploy/haproxy.cfg (health checks on /readyz,
leastconn) with the instances as its servers. 20 clients, each with its own MCP session
through the balancer, call `execute_code` back to back: first `1+1`, then one upstream call
(`tools.notes.get_note(note_id=1)['id']`). Throughput is calls answered per second over the
whole window, p95 the per-call latency. The one-instance figure is the same-run baseline;
one instance without the balancer shows what HAProxy itself adds.

    python -m bench.http_scale   # prints the table
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from fastmcp import Client

from bench.common import ROOT, Section, Table, clean_environ, demo_servers, p50, p95, write_config

CLIENTS = 20
WORKLOADS = {
    "`1+1`": "1+1",
    "one upstream call": "tools.notes.get_note(note_id=1)['id']",
}


@dataclass(frozen=True, slots=True)
class Measure:
    """One workload on one layout: calls answered in the window and their latencies."""

    layout: str
    workload: str
    seconds: float
    latencies_ms: list[float]
    failures: int

    @property
    def per_s(self) -> float:
        return len(self.latencies_ms) / self.seconds


def render_haproxy(port: int, backends: Sequence[int]) -> str:
    """deploy/haproxy.cfg with our balancer port and instances, run as this user."""
    lines: list[str] = []
    for line in (ROOT / "deploy" / "haproxy.cfg").read_text().splitlines():
        word = line.split()[0] if line.split() else ""
        if word in ("user", "group", "chroot", "log"):
            continue  # no request log: it would cost the balancer time we measure
        if word == "server":
            if not any(kept.lstrip().startswith("server ") for kept in lines):
                lines += [f"    server mcp{i} 127.0.0.1:{p}" for i, p in enumerate(backends, 1)]
            continue
        lines.append(f"    bind 127.0.0.1:{port}" if word == "bind" else line)
    return "\n".join(line for line in lines if line.strip() != "option httplog") + "\n"


async def _start_instances(count: int, config: Path, tmp: Path) -> list[tuple[int, Path]]:
    """`count` instances on free ports; returns (port, log) once every one is ready."""
    env = clean_environ(MCP_CODE_HTTP_STATELESS="true", MCP_CODE_POOL_SIZE="4")
    started = []
    for i in range(count):
        log = tmp / f"instance{i}.log"
        with log.open("wb") as sink:
            command = [sys.executable, "-m", "mcp_code_mode.cli", "serve", "--transport", "http"]
            command += ["--port", "0", "--config", str(config)]
            proc = subprocess.Popen(command, cwd=tmp, env=env, stdout=sink, stderr=sink)
        started.append((proc, log))
    _RUNNING.extend(proc for proc, _ in started)
    ports = [await _bound_port(proc, log) for proc, log in started]
    async with httpx.AsyncClient() as http:
        for port in ports:
            for _ in range(1200):
                if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                    break
                await asyncio.sleep(0.05)
    return [(port, log) for port, (_, log) in zip(ports, started, strict=True)]


_RUNNING: list[subprocess.Popen[bytes]] = []


async def _bound_port(proc: subprocess.Popen[bytes], log: Path) -> int:
    for _ in range(1200):
        found = re.search(r"serving http://[^ ]+:(\d+)/mcp", log.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        if proc.poll() is not None:
            raise RuntimeError(f"an instance exited: {log.read_text(errors='replace')[-500:]}")
        await asyncio.sleep(0.05)
    raise RuntimeError("an instance did not bind within 60 s")


def _stop_all() -> None:
    for proc in _RUNNING:
        proc.terminate()
    for proc in _RUNNING:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    _RUNNING.clear()


async def _wait_balanced(url: str) -> None:
    for _ in range(600):
        try:
            async with Client(url, timeout=10) as client:
                await client.call_tool("execute_code", {"code": "1"})
                return
        except Exception:  # the balancer has not seen an instance up yet
            await asyncio.sleep(0.1)
    raise RuntimeError("the balancer did not answer within 60 s")


async def _client(url: str, code: str, start: asyncio.Event, stop: asyncio.Event) -> list[float]:
    samples: list[float] = []
    async with Client(url, timeout=60) as client:
        await client.call_tool("execute_code", {"code": code})  # warm: session, path, worker
        await start.wait()
        while not stop.is_set():
            began = time.perf_counter()
            result = await client.call_tool("execute_code", {"code": code}, raise_on_error=False)
            if not result.is_error:
                samples.append((time.perf_counter() - began) * 1000)
            else:
                samples.append(-1.0)
    return samples


async def _drive(url: str, layout: str, seconds: float) -> list[Measure]:
    measures = []
    for workload, code in WORKLOADS.items():
        start, stop = asyncio.Event(), asyncio.Event()
        clients = [asyncio.create_task(_client(url, code, start, stop)) for _ in range(CLIENTS)]
        await asyncio.sleep(2.0)  # every client connected and warm
        start.set()
        began = time.perf_counter()
        await asyncio.sleep(seconds)
        stop.set()
        elapsed = time.perf_counter() - began
        samples = [s for c in await asyncio.gather(*clients) for s in c]
        ok = [s for s in samples if s >= 0]
        measures.append(Measure(layout, workload, elapsed, ok, len(samples) - len(ok)))
    return measures


async def _layout(
    count: int, config: Path, tmp: Path, seconds: float, haproxy: str | None
) -> list[Measure]:
    try:
        instances = await _start_instances(count, config, tmp)
        if haproxy is None:
            return await _drive(f"http://127.0.0.1:{instances[0][0]}/mcp", "1, direct", seconds)
        port = _free_port()
        rendered = tmp / f"haproxy{count}.cfg"
        rendered.write_text(render_haproxy(port, [p for p, _ in instances]))
        balancer = subprocess.Popen(
            [haproxy, "-db", "-f", str(rendered)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            await _wait_balanced(url)
            await asyncio.sleep(4.5)  # every instance through `rise 2` of the health checks
            return await _drive(url, f"{count} behind HAProxy", seconds)
        finally:
            balancer.terminate()
            balancer.wait(timeout=10)
    finally:
        _stop_all()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def haproxy_binary() -> str | None:
    return shutil.which("haproxy", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"]))


async def run(
    seconds: float = 8.0, figures: Path | None = None, counts: Sequence[int] = (1, 2, 4)
) -> Section:
    intro = __doc__.split("\n\n", 1)[1].rsplit("\n\n", 1)[0].strip() if __doc__ else ""
    haproxy = haproxy_binary()
    if haproxy is None:
        section = Section("Scaling out over HTTP", intro)
        section.notes.append("Not measured: HAProxy is not installed (apt-get install haproxy).")
        return section
    load_before = os.getloadavg()[0]
    measures: list[Measure] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        config = write_config(tmp, demo_servers())
        measures += await _layout(1, config, tmp, seconds, None)
        for count in counts:
            measures += await _layout(count, config, tmp, seconds, haproxy)
    return _section(intro, measures, seconds, load_before, figures)


def _section(
    intro: str, measures: list[Measure], seconds: float, load: float, figures: Path | None
) -> Section:
    table = Table(
        ["instances", "workload", "calls/s", "vs 1 instance", "p50 ms", "p95 ms", "failed"]
    )
    base = {m.workload: m for m in measures if m.layout == "1 behind HAProxy"}
    for m in measures:
        table.rows.append(
            [
                m.layout,
                m.workload,
                f"{m.per_s:,.0f}",
                # a quick run on a busy machine may finish no call of the baseline
                f"{m.per_s / base[m.workload].per_s:.2f}x" if base[m.workload].per_s else "n/a",
                f"{p50(m.latencies_ms):.1f}" if m.latencies_ms else "n/a",  # every call failed
                f"{p95(m.latencies_ms):.1f}" if m.latencies_ms else "n/a",
                m.failures,
            ]
        )
    best = max((m for m in measures if m.workload == "`1+1`"), key=lambda m: m.per_s)
    one = base["`1+1`"]
    direct = next(m for m in measures if m.layout == "1, direct" and m.workload == "`1+1`")
    notes = [
        f"{CLIENTS} clients, {seconds:g} s per workload and layout, {os.cpu_count()} cores; "
        f"load average {load:.1f} when the run began (the machine is shared: treat "
        "differences under about a quarter as noise). Every instance, its upstream servers, "
        "its sandbox workers, HAProxy and the 20 clients (one Python process) share those cores.",
        "Where 2 cores cap it: one instance is one Python event loop, so its MCP and JSON "
        "work gets about one core (its workers and upstream servers run beside it). "
        + "; ".join(_scaling(measures, base, w) for w in WORKLOADS)
        + ". Past two instances no core is idle: the clients, HAProxy and every instance's "
        "upstreams and workers take turns on the same two; this run cannot show how far the "
        "layout scales with a core per instance.",
        f"HAProxy's own cost: one instance answered `1+1` at {direct.per_s:,.0f} calls/s "
        f"directly and {one.per_s:,.0f} behind the balancer"
        + (
            ", within this machine's noise."
            if one.per_s and abs(direct.per_s / one.per_s - 1) < 0.25
            else "."
        ),
    ]
    section = Section("Scaling out over HTTP", intro, tables=[("", table)], notes=notes)
    if figures is not None:
        section.figures.append(
            ("Throughput and p95 by layout", _plot(figures / "http_scale.png", measures))
        )
    section.headline["http_scale"] = (
        f"`1+1` with 20 clients: {one.per_s:,.0f} calls/s on 1 instance behind HAProxy, "
        f"{best.per_s:,.0f} at best ({best.layout}) on {os.cpu_count()} cores"
    )
    return section


def _scaling(measures: list[Measure], base: dict[str, Measure], workload: str) -> str:
    if not base[workload].per_s:
        return f"{workload}: no call of the one-instance run finished (a busy machine)"
    ratios = [
        f"{m.layout.split()[0]} instances {m.per_s / base[workload].per_s:.2f}x"
        for m in measures
        if m.workload == workload and m.layout.endswith("HAProxy") and m.layout[0] != "1"
    ]
    return f"{workload}: " + ", ".join(ratios) + " the one-instance throughput"


def _plot(path: Path, measures: list[Measure]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layouts = list(dict.fromkeys(m.layout for m in measures))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    width = 0.38
    for offset, workload in zip((-width / 2, width / 2), WORKLOADS, strict=True):
        rows = {m.layout: m for m in measures if m.workload == workload}
        xs = [i + offset for i in range(len(layouts))]
        axes[0].bar(xs, [rows[lay].per_s for lay in layouts], width, label=workload.strip("`"))
        axes[1].bar(
            xs,
            [p95(rows[lay].latencies_ms) if rows[lay].latencies_ms else 0.0 for lay in layouts],
            width,
            label=workload.strip("`"),
        )
    axes[0].set_title(f"Throughput, {CLIENTS} clients (calls/s, higher is better)")
    axes[1].set_title("p95 latency (ms, lower is better)")
    for ax in axes:
        ax.set_xticks(range(len(layouts)), layouts, fontsize=8)
        ax.set_xlabel("gateway instances (2 cores shared by all of them)", fontsize=8)
    # One legend under both panels: inside, it covered the tallest bar.
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


if __name__ == "__main__":
    result = asyncio.run(run())
    print(result.tables[0][1].markdown() if result.tables else "")
    print("\n".join(result.notes))

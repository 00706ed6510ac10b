"""What recording, tracing and live progress cost a run (contract §10, issue 28).

Gateway processes over stdio, one config, measured in the same run with their calls
interleaved (the order rotates every round, so drift on a busy machine hits all alike):

- `off`: MCP_CODE_RUNS=off, no OTEL_* variables (no tracer), a client that sends no progress
  token: the baseline, always measured;
- `runs`: every run recorded (SQLite, in a temp dir);
- `progress`: a client that sends a progress token;
- `on`: both (what `serve` does by default for such a client);
- `traced`: `on`, plus spans exported over OTLP/HTTP to a receiver in this process
  (OTEL_EXPORTER_OTLP_ENDPOINT; the SDK's batch processor), fastmcp's and the MCP SDK's spans
  included. Needs opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http.

Prints p50 / p95 of `execute_code` `1+1` and of a run of 100 sequential upstream calls, the
gateway process's CPU per run, and what each adds to `off`; then what the hooks themselves
cost, measured in this process (on a busy machine the end-to-end differences are mostly noise).

    python -m bench.run_overhead [--runs 300] [--call-runs 40] [--variants runs,progress,on]
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, ClassVar

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from bench.common import QUIET, p50, p95, synthetic_entry, write_config, write_tool_specs
from bench.specs import P, T

ONE_PLUS_ONE = "1 + 1"
HUNDRED_CALLS = "for i in range(100):\n    tools.echo.echo(text='x')\n'done'"


class _Receiver(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that takes every export and keeps its size."""

    received: ClassVar[list[int]] = [0, 0]  # exports, bytes

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.received[0] += 1
        self.received[1] += len(body)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _gateway(config: Path, cache: Path, extra: dict[str, str]) -> StdioTransport:
    env = {**QUIET, "MCP_CODE_POOL_SIZE": "2", "MCP_CODE_CACHE_DIR": str(cache), **extra}
    return StdioTransport(
        command=sys.executable,
        args=["-m", "mcp_code_mode.executor_server", "--config", str(config)],
        env=env,
        keep_alive=False,
    )


Run = Callable[[str], Awaitable[Any]]


def _runner(client: Client, *, progress: bool) -> Run:
    """`execute_code` through the MCP session; with `progress`, the request carries a token."""

    async def noticed(done: float, total: float | None, message: str | None) -> None:
        pass

    async def run(code: str) -> Any:
        callback = noticed if progress else None
        result = await client.session.call_tool(
            "execute_code", {"code": code}, progress_callback=callback
        )
        if result.is_error:
            raise RuntimeError(f"the run failed: {result.content}")
        return result

    return run


def _gateway_pid(cache: Path) -> int:
    """The pid of the gateway process started with MCP_CODE_CACHE_DIR=`cache`."""
    wanted = f"MCP_CODE_CACHE_DIR={cache}".encode()
    for entry in Path("/proc").iterdir():
        try:
            found = entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0")
            if found and b"executor_server" in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    raise LookupError(f"no gateway process with {wanted.decode()}")


def _cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process has used, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


class _Sample:
    def __init__(self) -> None:
        self.wall_ms: list[float] = []
        self.cpu_ms = 0.0  # the gateway process's, per run


async def _interleaved(
    runs_of: dict[str, Run], pids: dict[str, int], code: str, runs: int
) -> dict[str, _Sample]:
    """Per gateway: milliseconds per run of `code`, the order rotating every round, and the
    CPU its process used per run (its writer thread's work included: read after a pause)."""
    names = list(runs_of)
    for _ in range(3):  # warm them all
        for name in names:
            await runs_of[name](code)
    await asyncio.sleep(1)
    samples = {name: _Sample() for name in names}
    cpu = {name: _cpu_ms(pids[name]) for name in names}
    for round_ in range(runs):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            await runs_of[name](code)
            samples[name].wall_ms.append((time.perf_counter() - started) * 1000)
    await asyncio.sleep(1)
    for name in names:
        samples[name].cpu_ms = (_cpu_ms(pids[name]) - cpu[name]) / runs
    return samples


def _report(title: str, samples: dict[str, _Sample]) -> None:
    print(title)
    off = samples["off"]
    for name, sample in samples.items():
        timed = sample.wall_ms
        line = (
            f"  {name:<8} wall p50 {p50(timed):8.2f} ms  p95 {p95(timed):8.2f} ms"
            f" | gateway CPU {sample.cpu_ms:7.2f} ms/run"
        )
        if name != "off":
            added = p50(timed) - p50(off.wall_ms)
            paired = statistics.median(b - a for a, b in zip(off.wall_ms, timed, strict=True))
            cpu = sample.cpu_ms - off.cpu_ms
            line += (
                f" | adds p50 {added:+.2f} ms ({added / p50(off.wall_ms) * 100:+.1f}%),"
                f" paired {paired:+.2f} ms, CPU {cpu:+.2f} ms ({cpu / off.cpu_ms * 100:+.1f}%)"
            )
        print(line)


async def main(runs: int, call_runs: int, names: list[str]) -> None:
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    with tempfile.TemporaryDirectory(prefix="run-overhead-") as tmp:
        root = Path(tmp)
        echo = [T("echo", "Echo", P("text", "string"))]
        spec = write_tool_specs(root / "echo.json", "echo", echo)
        config = write_config(root, {"echo": synthetic_entry(spec, "Echo")})
        runs_on = {"MCP_CODE_RUNS": "on"}
        otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "bench"}
        table = {  # name: (environment, whether the client sends a progress token)
            "off": ({"MCP_CODE_RUNS": "off"}, False),
            "runs": (runs_on, False),
            "progress": ({"MCP_CODE_RUNS": "off"}, True),
            "on": (runs_on, True),
            "traced": ({**runs_on, **otel}, True),
        }
        variants = {name: table[name] for name in ["off", *names]}
        async with AsyncExitStack() as stack:
            runs_of: dict[str, Run] = {}
            pids: dict[str, int] = {}
            for name, (env, progress) in variants.items():
                env = {**env, "MCP_CODE_RUNS_DB": str(root / f"{name}.sqlite3")}
                client = Client(_gateway(config, root / name, env), init_timeout=120)
                await stack.enter_async_context(client)
                runs_of[name] = _runner(client, progress=progress)
                pids[name] = _gateway_pid(root / name)
            print(f"{runs} runs of `1 + 1`, {call_runs} of 100 upstream calls, interleaved")
            plus = await _interleaved(runs_of, pids, ONE_PLUS_ONE, runs)
            _report("execute_code 1 + 1", plus)
            _report("100-call run", await _interleaved(runs_of, pids, HUNDRED_CALLS, call_runs))
    receiver.shutdown()
    if "traced" in names:
        exports, size = _Receiver.received
        print(f"the `traced` gateway exported {exports} OTLP requests ({size:,} bytes)")


def _per_op_us(step: Callable[[], object], times: int = 20_000) -> float:
    """CPU microseconds per call of `step` (the median of five rounds)."""
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(times):
            step()
        rounds.append((time.process_time() - started) / times * 1e6)
    return statistics.median(rounds)


async def hooks() -> None:
    """What the gateway's hooks themselves cost, in this process: per run without a tracer,
    per upstream call for progress, and per call span once an SDK is configured."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from mcp_code_mode.runs.progress import RunProgress
    from mcp_code_mode.runs.spans import configured_tracer
    from mcp_code_mode.runs.telemetry import RunTelemetry

    async def sink(done: float, total: float | None, message: str | None) -> None:
        pass

    telemetry = RunTelemetry(executor="local", transports={"s": "stdio"}, content=False, redact=str)
    print("hooks, CPU per operation in this process:")
    untraced = _per_op_us(lambda: telemetry.start("execute_code", "1 + 1", None, "bench"))
    print(f"  a run's spans without a tracer (None):        {untraced:7.2f} us")
    progress = RunProgress(sink, interval_s=3600)
    progress.call_ended()  # sent; from now on every change waits for the timer
    per_call = _per_op_us(progress.call_ended)
    print(f"  progress, per upstream call:                  {per_call:7.2f} us")
    await progress.close()

    class _Dropped(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Dropped()))
    trace.set_tracer_provider(provider)
    spans = telemetry.start("execute_code", "1 + 1", None, "bench")
    assert spans is not None

    def call() -> None:
        span = spans.call(0, "s", "echo", {"text": "x"})
        with spans.active(span):
            pass
        spans.end_call(span)

    tracer = configured_tracer()
    assert tracer is not None
    bare = _per_op_us(lambda: tracer.start_span("bare").end(), 5000)
    print(f"  a call's span, SDK configured (batch export): {_per_op_us(call, 5000):7.2f} us")
    print(f"  (a bare SDK span, for scale:                  {bare:7.2f} us)")
    provider.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.run_overhead")
    parser.add_argument("--runs", type=int, default=300, help="runs of `1 + 1` per gateway")
    parser.add_argument("--call-runs", type=int, default=40, help="100-call runs per gateway")
    parser.add_argument(
        "--variants",
        default="on",
        help="beside `off`, comma-separated: runs, progress, on, traced (default: on)",
    )
    options = parser.parse_args()
    names = [n.strip() for n in options.variants.split(",") if n.strip() and n.strip() != "off"]
    asyncio.run(main(options.runs, options.call_runs, names))
    asyncio.run(hooks())

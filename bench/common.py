"""Shared pieces of the benchmark suite: timing, memory, tokens, configs and report tables."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import types as mcp_types

from bench.specs import ToolSpec
from mcp_code_mode.sandbox.pyodide_setup import deno_binary, pyodide_dir
from mcp_code_mode.settings import Settings
from mcp_code_mode.tool_formatter import count_tokens

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "servers"
SYNTHETIC_SERVER = Path(__file__).resolve().parent / "servers" / "synthetic_server.py"
QUIET = {"FASTMCP_LOG_LEVEL": "WARNING"}


# ---------------------------------------------------------------- report structure


@dataclass
class Table:
    """A markdown table: a header row and rows of already formatted cells."""

    header: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    align: str = ""  # one char per column: "l" or "r"; default: first left, rest right

    def markdown(self) -> str:
        align = self.align or "l" + "r" * (len(self.header) - 1)
        rule = ["---:" if a == "r" else "---" for a in align]
        lines = [_row(self.header), _row(rule)]
        lines += [_row([_cell(c) for c in row]) for row in self.rows]
        return "\n".join(lines)


@dataclass
class Section:
    """One part of BENCHMARKS.md: prose, tables, figures, and the numbers README quotes."""

    title: str
    intro: str
    tables: list[tuple[str, Table]] = field(default_factory=list)
    figures: list[tuple[str, Path]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    headline: dict[str, str] = field(default_factory=dict)


def _row(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


# ---------------------------------------------------------------- machine and timing


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cores": str(os.cpu_count()),
        "cpu": cpu,
        "python": sys.version.split()[0],
        "os": f"{platform.system()} {platform.release()}",
    }


async def measure(
    fn: Callable[[], Awaitable[object]], runs: int, *, pause_s: float = 0, warmup: int = 1
) -> list[float]:
    """Milliseconds per call of `fn`, after `warmup` untimed calls."""
    for _ in range(warmup):
        await fn()
    samples = []
    for _ in range(runs):
        if pause_s:
            await asyncio.sleep(pause_s)
        started = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p50(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def p95(samples: Sequence[float]) -> float:
    """The 95th percentile; with fewer than 20 samples, the maximum (see `p95_cell`)."""
    if len(samples) >= 20:
        return statistics.quantiles(samples, n=20)[18]
    return max(samples)


def p95_cell(samples: Sequence[float]) -> str:
    if len(samples) >= 20:
        return f"{p95(samples):,.2f}"
    return f"{max(samples):,.2f} (max of {len(samples)})"


def ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "—"


def memory_mb(pid: int | str = "self") -> dict[str, float]:
    """RSS and PSS (proportional share: forked pages shared with siblings count once) in MB."""
    out = {"rss": 0.0, "pss": 0.0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss"):
                out[key.lower()] = int(rest.split()[0]) / 1024
    except OSError:
        pass
    return out


def children(pid: int) -> list[int]:
    """Direct children of `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat[1]) == pid and stat[0] != "Z":
            found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


# ---------------------------------------------------------------- tokens


def tools_list_payload(tools: Sequence[mcp_types.Tool], *, full: bool = False) -> str:
    """A tools/list result as JSON. By default only what a model is shown of a tool (name,
    description, input schema); `full` keeps every field the server sent (the contract's
    measure: titles, `_meta` and the like too)."""
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    if not full:
        keep = ("name", "description", "inputSchema")
        dumped = [{k: d[k] for k in keep if k in d} for d in dumped]
    return json.dumps({"tools": dumped})


def tokens(value: Any) -> int:
    """cl100k_base tokens of a string, or of the JSON of anything else."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return count_tokens(text)


# ---------------------------------------------------------------- upstream configs


def synthetic_entry(spec_file: Path, description: str, *, timeout_s: float = 120) -> dict[str, Any]:
    return {
        "command": "python",
        "args": [str(SYNTHETIC_SERVER), str(spec_file)],
        "description": description,
        "env": dict(QUIET),
        "timeout_s": timeout_s,
    }


def write_tool_specs(
    path: Path, name: str, tools: Sequence[ToolSpec], *, sleep_ms: float = 0
) -> Path:
    """Write what `servers/synthetic_server.py` serves: its name and its tools' schemas."""
    payload = {
        "name": name,
        "sleep_ms": sleep_ms,
        "tools": [
            {"name": t.name, "description": t.description, "inputSchema": t.input_schema()}
            for t in tools
        ],
    }
    path.write_text(json.dumps(payload))
    return path


def write_config(directory: Path, servers: Mapping[str, Any]) -> Path:
    path = directory / "mcp_servers.json"
    path.write_text(json.dumps({"servers": dict(servers)}, indent=2))
    return path


def demo_servers() -> dict[str, Any]:
    """The bundled demo upstreams, with absolute paths (same as `mcp_servers.json`)."""
    config = json.loads((ROOT / "mcp_servers.json").read_text())["servers"]
    for entry in config.values():
        entry["args"] = [str(ROOT / a) if a.endswith(".py") else a for a in entry.get("args", [])]
    return dict(config)


def bench_settings(**overrides: Any) -> Settings:
    """Gateway settings for a benchmark: no `.env`, a small pool, generous timeouts; these
    arguments win over MCP_* variables in the environment."""
    values: dict[str, Any] = {"pool_size": 1, "timeout_s": 30, "executor": "local"}
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def pyodide_ready() -> bool:
    """Whether the Pyodide executor can run here (`mcp-code-mode setup pyodide` was run)."""
    return deno_binary() is not None and (pyodide_dir() / "pyodide.mjs").is_file()


def clean_environ(**extra: str) -> dict[str, str]:
    """This process's environment without MCP_* / DSPY_* settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "DSPY_"))}
    return {**env, **extra}

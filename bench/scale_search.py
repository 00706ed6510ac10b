"""The scale benchmark's in-process part: search timings and recall@5 through a `Gateway`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import scale_queries
from bench.common import bench_settings
from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway

__all__ = ["search_in_process"]

JSON = dict[str, Any]
POLL_S = 0.1


def _recall(hits: list[JSON], targets: Sequence[str]) -> float:
    found = {hit["tool"] for hit in hits[:5]}
    return sum(t in found for t in targets) / len(targets)


async def search_in_process(
    config: Path, tools: int, tmp: Path, *, cap_s: float, rounds: int
) -> JSON:
    """Search timings and recall@5 through `Gateway.search_tools` over a `tools`-tool
    catalog, once every upstream is up (or `cap_s` is over: then over the catalog there is,
    which the result says)."""
    settings = bench_settings(cache_dir=str(tmp / "cache-in-process"))
    async with contextlib.AsyncExitStack() as stack:
        began = time.perf_counter()
        deadline = asyncio.get_running_loop().time() + cap_s
        try:
            async with asyncio.timeout_at(deadline):
                gw = await stack.enter_async_context(Gateway(settings, load_config(config)))
        except TimeoutError:
            return {"in_process_error": f"the Gateway did not start in {cap_s:g} s"}
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(deadline):
                while any(row["status"] != "ok" for row in gw.list_servers()):
                    await asyncio.sleep(POLL_S)
        rows = gw.list_servers()
        out: JSON = {
            "in_process_start_s": time.perf_counter() - began,
            "in_process_ok": sum(row["status"] == "ok" for row in rows),
            "catalog_tools": sum(row.get("tool_count") or 0 for row in rows),
        }
        return out | _searches(gw, tools, rounds)


def _searches(gw: Gateway, tools: int, rounds: int) -> JSON:
    present = {t.name for t in scale_queries.TARGETS[:tools]}
    queries = [q for q in scale_queries.QUERIES if set(q.targets) <= present]
    first = time.perf_counter()
    gw.search_tools(queries[0].text, 5)
    out: JSON = {"first_search_ms": (time.perf_counter() - first) * 1000}
    samples, recalls, misses = [], [], []
    for round_ in range(rounds):
        for query in queries:
            began = time.perf_counter()
            hits = gw.search_tools(query.text, 5)
            samples.append((time.perf_counter() - began) * 1000)
            if round_ == 0:
                recalls.append(_recall(hits, query.targets))
                if recalls[-1] < 1:
                    misses.append({"query": query.text, "top5": [h["tool"] for h in hits]})
    out |= {"search_ms": samples, "queries": len(queries), "misses": misses}
    out["recall_at_5"] = sum(recalls) / len(recalls)
    return out

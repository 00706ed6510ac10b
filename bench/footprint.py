"""Context footprint: tokens of our tools/list against the upstreams' combined tools/list."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fastmcp import Client

from bench import plots
from bench.common import (
    Section,
    Table,
    bench_settings,
    demo_servers,
    tokens,
    tools_list_payload,
    write_config,
)
from bench.corpus import catalog_of, upstream_configs
from mcp_code_mode.config import load_config
from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway

TARGET = 600


async def measure_config(servers: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """Start a gateway on `servers`; count both tools/list payloads."""
    config = load_config(write_config(directory, servers))
    started = time.perf_counter()
    async with Gateway(bench_settings(), config) as gw:
        start_s = time.perf_counter() - started
        upstream = [t for tools in gw.manager.tools().values() for t in tools]
        async with Client(build_server(gw)) as client:
            ours = await client.list_tools()
        down = [s["name"] for s in gw.list_servers() if s["status"] != "ok"]
    if down:
        raise RuntimeError(f"upstreams failed to start: {', '.join(down)}")
    return {
        "servers": len(servers),
        "tools": len(upstream),
        "direct": tokens(tools_list_payload(upstream)),
        "ours": tokens(tools_list_payload(ours)),
        "start_s": start_s,
    }


async def run(sizes: Sequence[int], figures: Path) -> Section:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        demo = await measure_config(demo_servers(), Path(tmp))
        demo["label"] = "demo upstreams (notes, data, time)"
        for size in sizes:
            directory = Path(tmp) / f"n{size}"
            directory.mkdir()
            servers = upstream_configs(catalog_of(size), directory)
            row = await measure_config(servers, directory)
            row["label"] = f"{size:,} realistic tools"
            rows.append(row)

    table = Table(
        [
            "catalog",
            "servers",
            "tools",
            "direct tools/list tokens",
            "mcp-code-mode tools/list tokens",
            "ours / direct",
            f"≤ {TARGET}",
        ]
    )
    for row in [demo, *rows]:
        table.rows.append(
            [
                row["label"],
                row["servers"],
                row["tools"],
                row["direct"],
                row["ours"],
                f"{row['ours'] / row['direct']:.3f}x",
                "yes" if row["ours"] <= TARGET else "**no**",
            ]
        )
    figure = plots.footprint(
        figures / "footprint.png", [r["tools"] for r in rows], rows, target=TARGET
    )
    largest = rows[-1]
    section = Section(
        "Context footprint",
        "What a connected MCP client puts into the model's context before the first call: "
        "the tools/list result (JSON, cl100k_base tokens). *Direct* is every upstream "
        "connected to the client as it is (their tools/list results together); "
        "*mcp-code-mode* is our server in front of the same upstreams. Catalogs are built "
        "from the realistic tool corpus in `bench/corpus_data.py` (filesystem, git, GitHub, "
        "Jira, calendar, mail, Slack, databases, browser, ...), each server a real stdio "
        "upstream (`bench/servers/synthetic_server.py`).",
        tables=[("", table)],
        figures=[("tools/list tokens vs catalog size", figure)],
    )
    section.headline["footprint"] = (
        f"{largest['ours']:,} tokens for {largest['tools']:,} tools "
        f"vs {largest['direct']:,} direct ({largest['direct'] / largest['ours']:.0f}x smaller)"
    )
    section.headline["footprint_max"] = str(max(r["ours"] for r in [demo, *rows]))
    return section

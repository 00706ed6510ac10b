"""Context footprint: tokens of our tools/list against the upstreams' combined tools/list."""

from __future__ import annotations

import asyncio
import tempfile
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


def instructions_tokens(client: Client[Any]) -> int:
    """Tokens of the server's `instructions` (clients put them in the system prompt)."""
    return tokens(client.instructions) if client.instructions else 0


async def measure_config(servers: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """Start a gateway on `servers`; count what each setup puts into the model's context."""
    config = load_config(write_config(directory, servers))
    gate = asyncio.Semaphore(16)

    async def upstream_instructions(server: Any) -> int:
        async with gate, Client(server.to_transport()) as client:
            return instructions_tokens(client)

    # What the upstreams would tell a direct client (their own processes, in parallel).
    direct_instructions = sum(
        await asyncio.gather(*(upstream_instructions(s) for s in config.servers.values()))
    )
    async with Gateway(bench_settings(), config) as gw:
        upstream = [t for tools in gw.manager.tools().values() for t in tools]
        async with Client(build_server(gw)) as client:
            ours = await client.list_tools()
            ours_instructions = instructions_tokens(client)
        down = [s["name"] for s in gw.list_servers() if s["status"] != "ok"]
    if down:
        raise RuntimeError(f"upstreams failed to start: {', '.join(down)}")
    return {
        "servers": len(servers),
        "tools": len(upstream),
        "direct": tokens(tools_list_payload(upstream)) + direct_instructions,
        "direct_full": tokens(tools_list_payload(upstream, full=True)),
        "ours_list": tokens(tools_list_payload(ours, full=True)),
        "ours": tokens(tools_list_payload(ours)) + ours_instructions,
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
            "direct: upstream tools/list (full payload)",
            "direct: what the model sees",
            "mcp-code-mode: what the model sees",
            "ours / direct",
            f"our tools/list (contract measure) ≤ {TARGET}",
        ]
    )
    for row in [demo, *rows]:
        table.rows.append(
            [
                row["label"],
                row["servers"],
                row["tools"],
                row["direct_full"],
                row["direct"],
                row["ours"],
                f"{row['ours'] / row['direct']:.3f}x",
                f"{row['ours_list']:,} " + ("yes" if row["ours_list"] <= TARGET else "**no**"),
            ]
        )
    figure = plots.footprint(figures / "footprint.png", rows, demo=demo, target=TARGET, aim=350)
    largest = rows[-1]
    worst = max(r["ours"] for r in [demo, *rows])
    section = Section(
        "Context footprint",
        "What a connected MCP client puts into the model's context before the first call, "
        "in cl100k_base tokens. *Direct* is every upstream connected to the client as it is; "
        "*mcp-code-mode* is our server in front of the same upstreams. *What the model sees* "
        "counts, on both sides alike, each tool's name, description and input schema (the "
        "fields a model API takes) plus the servers' `instructions`; the full payload also "
        "has titles and fastmcp `_meta`. The ≤ 600 target is on our tools/list as the "
        "contract measures it (the whole payload, without instructions). Catalogs are built "
        "from the realistic tool corpus in `bench/corpus_data.py` (filesystem, git, GitHub, "
        "Jira, calendar, mail, Slack, databases, browser, ...), each server a real stdio "
        "upstream (`bench/servers/synthetic_server.py`).",
        tables=[("", table)],
        figures=[("tools/list tokens vs catalog size", figure)],
    )
    section.headline["footprint"] = (
        f"{largest['ours']:,} tokens (tools/list + instructions) in front of "
        f"{largest['tools']:,} tools, whose own tool definitions are {largest['direct']:,} "
        f"({largest['direct'] / largest['ours']:.0f}x more); at most {worst:,} at any size "
        f"measured, tools/list alone at most {max(r['ours_list'] for r in [demo, *rows]):,}"
    )
    return section

"""Catalogs of realistic upstream tools, built from `corpus_data.SERVERS`, of any size."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcp import types as mcp_types

from bench.common import synthetic_entry, write_tool_specs
from bench.corpus_data import QUERIES, SERVERS
from bench.corpus_heldout import HELDOUT as _HELDOUT_WRITTEN
from bench.specs import Query, ServerSpec

NEAR_DUPLICATE = 0.7
"""Held-out queries this similar (difflib ratio) to any tuning query are not held out."""


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


def held_out_queries() -> tuple[tuple[Query, ...], int]:
    """The held-out queries far from every tuning query, and how many were dropped."""
    kept = tuple(
        q
        for q in _HELDOUT_WRITTEN
        if max(_similarity(q.text, t.text) for t in QUERIES) < NEAR_DUPLICATE
    )
    return kept, len(_HELDOUT_WRITTEN) - len(kept)


__all__ = [
    "QUERIES",
    "SERVERS",
    "catalog_of",
    "held_out_queries",
    "mcp_tools",
    "upstream_configs",
]


def catalog_of(size: int) -> list[ServerSpec]:
    """`size` tools as whole servers in corpus order, the last one cut short.

    Past the corpus's own size the servers repeat as second, third ... instances
    (`github_2`: another organisation's GitHub, as teams really connect), so a 1,000-tool
    catalog keeps realistic names, descriptions and schemas.
    """
    out: list[ServerSpec] = []
    left, instance = size, 1
    while left > 0:
        for server in SERVERS:
            if left <= 0:
                break
            tools = server.tools[:left]
            name = server.name if instance == 1 else f"{server.name}_{instance}"
            description = (
                server.description
                if instance == 1
                else (f"{server.description} (instance {instance})")
            )
            out.append(replace(server, name=name, description=description, tools=tools))
            left -= len(tools)
        instance += 1
    return out


def mcp_tools(servers: Sequence[ServerSpec]) -> dict[str, list[mcp_types.Tool]]:
    """The servers' tools as MCP `Tool` objects (for in-process catalogs)."""
    return {
        s.name: [
            mcp_types.Tool(name=t.name, description=t.description, input_schema=t.input_schema())
            for t in s.tools
        ]
        for s in servers
    }


def upstream_configs(
    servers: Sequence[ServerSpec], directory: Path, *, sleep_ms: float = 0
) -> dict[str, Any]:
    """Config entries starting one `synthetic_server.py` per server."""
    return {
        s.name: synthetic_entry(
            write_tool_specs(directory / f"{s.name}.json", s.name, s.tools, sleep_ms=sleep_ms),
            s.description,
        )
        for s in servers
    }

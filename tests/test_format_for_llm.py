"""ToolSchemaFormatter.format_for_llm: golden stubs for the demo catalog, budget with 500 tools."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from mcp import types as mcp_types

from mcp_code_mode.catalog import Catalog
from mcp_code_mode.config import load_config
from mcp_code_mode.tool_formatter import count_tokens
from mcp_code_mode.upstreams import MCPServerManager

from .support import DATA_SERVER, NOTES_SERVER, ConfigWriter, server_entry

GOLDEN = Path(__file__).parent / "snapshots" / "demo_catalog_for_llm.txt"
DOMAINS = ["files", "git", "issues", "calendar", "mail", "db", "browser", "chat", "crm", "docs"]
VERBS = [
    "list",
    "get",
    "create",
    "update",
    "delete",
    "search",
    "export",
    "archive",
    "share",
    "sync",
]
NOUNS = ["item", "record", "entry", "report", "label", "comment"]


async def test_demo_catalog_golden(write_config: ConfigWriter) -> None:
    path = write_config(
        {
            "notes": server_entry(NOTES_SERVER, description="Notes store and a few text files"),
            "data": server_entry(DATA_SERVER, description="Customers and orders dataset"),
        }
    )
    config = load_config(path)
    async with MCPServerManager(config, default_timeout_s=30) as manager:
        catalog = Catalog(manager.tools(), {n: s.description for n, s in config.servers.items()})
    rendered = catalog.formatter.format_for_llm(
        [e.source for e in catalog.entries], descriptions=catalog.descriptions
    )
    if os.environ.get("UPDATE_SNAPSHOTS"):
        GOLDEN.write_text(rendered + "\n")
    assert rendered + "\n" == GOLDEN.read_text()
    assert count_tokens(rendered) < 600


def synthetic_catalog(count: int) -> Catalog:
    tools: dict[str, list[mcp_types.Tool]] = {d: [] for d in DOMAINS}
    for i in range(count):
        domain = DOMAINS[i % len(DOMAINS)]
        verb, noun = VERBS[(i // 10) % len(VERBS)], NOUNS[(i // 100) % len(NOUNS)]
        tools[domain].append(
            mcp_types.Tool(
                name=f"{verb}_{domain}_{noun}_{i}",
                description=f"{verb.title()} a {domain} {noun}. Useful when working with {domain} data.",
                input_schema={
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "identifier"},
                        "limit": {"type": "integer", "default": 50},
                        "filters": {"type": "object"},
                    },
                    "required": ["id"],
                },
            )
        )
    return Catalog(tools, {d: f"Tools for {d}" for d in DOMAINS})


def test_large_catalog_respects_the_budget() -> None:
    catalog = synthetic_catalog(500)
    sources = [e.source for e in catalog.entries]
    full = catalog.formatter.format_for_llm(sources, budget_tokens=10**9)
    assert count_tokens(full) > 20_000
    ranked = [
        catalog.get(h.server, h.tool).source for h in catalog.search("export mail report", 40)
    ]
    text = catalog.formatter.format_for_llm(
        sources, descriptions=catalog.descriptions, budget_tokens=1500, ranked=ranked
    )
    assert count_tokens(text) <= 1500
    assert "search_tools(" in text and "get_tool_docs(" in text
    for domain in DOMAINS:
        assert f"# tools.{domain} (50 tools): Tools for {domain}" in text
    shown = [line for line in text.splitlines() if line.startswith("tools.")]
    assert 5 <= len(shown) < 40
    assert shown[0].startswith("tools.mail.export_mail_report_")


def test_small_catalog_is_rendered_whole() -> None:
    catalog = synthetic_catalog(20)
    text = catalog.formatter.format_for_llm([e.source for e in catalog.entries], budget_tokens=5000)
    assert len([line for line in text.splitlines() if line.startswith("tools.")]) == 20
    assert "search_tools" not in text


def test_a_ten_thousand_tool_catalog_costs_the_budget_not_the_catalog() -> None:
    catalog = synthetic_catalog(10_000)
    sources = [e.source for e in catalog.entries]
    started = time.perf_counter()
    text = catalog.formatter.format_for_llm(
        sources, descriptions=catalog.descriptions, budget_tokens=3000, ranked=sources[:40]
    )
    assert time.perf_counter() - started < 5  # rendering all 10,000 lines took ~1 s alone
    assert count_tokens(text) <= 3000
    assert "# tools.files (1000 tools): Tools for files" in text


def test_many_servers_take_half_the_budget_at_most() -> None:
    tools = {
        f"server_{i}": [mcp_types.Tool(name=f"tool_{i}", input_schema={"type": "object"})] * 2
        for i in range(700)
    }
    catalog = Catalog(tools)
    sources = [e.source for e in catalog.entries]
    text = catalog.formatter.format_for_llm(sources, budget_tokens=2000, ranked=sources[:30])
    assert count_tokens(text) <= 2000
    assert re.search(r"# \.\.\. and \d+ more \(list_servers\(\) names them\)", text)
    assert sum(line.startswith("tools.") for line in text.splitlines()) >= 5

"""Search quality (recall@1 / recall@5 on labelled queries) and search time by catalog size."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import bm25s
from mcp import types as mcp_types

from bench import plots
from bench.common import Section, Table
from bench.corpus import QUERIES, SERVERS, catalog_of, mcp_tools
from bench.specs import Query
from mcp_code_mode.catalog import Catalog

Ranker = Callable[[str, int], list[tuple[str, str]]]
RECALL_TARGET, TIME_TARGET_MS = 0.9, 5.0


class PlainBM25:
    """The baseline: bm25s with its own tokenizer over `name + description`, nothing else."""

    def __init__(self, tools: Mapping[str, Sequence[mcp_types.Tool]]) -> None:
        self.keys = [(s, t.name) for s, ts in tools.items() for t in ts]
        texts = [f"{t.name} {t.description or ''}" for ts in tools.values() for t in ts]
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize(texts, stopwords="en", show_progress=False),
                         show_progress=False)  # fmt: skip

    def __call__(self, query: str, k: int) -> list[tuple[str, str]]:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = self.index.retrieve(tokens, k=min(k, len(self.keys)), show_progress=False)
        return [self.keys[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


def ours(catalog: Catalog) -> Ranker:
    def rank(query: str, k: int) -> list[tuple[str, str]]:
        return [(h.server, h.tool) for h in catalog.search(query, k)]

    return rank


def recall(ranker: Ranker, queries: Sequence[Query]) -> tuple[float, float, list[Query]]:
    at1 = at5 = 0
    missed = []
    for query in queries:
        found = ranker(query.text, 5)
        expected = set(query.expected)
        at1 += bool(found[:1] and found[0] in expected)
        hit5 = bool(expected & set(found))
        at5 += hit5
        if not hit5:
            missed.append(query)
    return at1 / len(queries), at5 / len(queries), missed


def per_query_ms(ranker: Ranker, queries: Sequence[Query], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        for query in queries:
            started = time.perf_counter()
            ranker(query.text, 5)
            samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def run(time_sizes: Sequence[int], repeat: int, figures: Path) -> Section:
    tools = mcp_tools(SERVERS)
    catalog = Catalog(tools, {s.name: s.description for s in SERVERS})
    rankers: dict[str, Ranker] = {"plain BM25": PlainBM25(tools), "mcp-code-mode": ours(catalog)}
    scores = {name: recall(r, QUERIES) for name, r in rankers.items()}

    quality = Table(["ranker", "recall@1", "recall@5", "missed at 5"])
    for name, (r1, r5, missed) in scores.items():
        quality.rows.append([name, f"{r1:.3f}", f"{r5:.3f}", len(missed)])

    timing: dict[str, list[tuple[int, float]]] = {name: [] for name in rankers}
    speed = Table(["tools", "plain BM25 p50 ms", "mcp-code-mode p50 ms", "ours / plain"])
    for size in time_sizes:
        servers = catalog_of(size)
        sized = mcp_tools(servers)
        sized_catalog = Catalog(sized, {s.name: s.description for s in servers})
        plain_ms = per_query_ms(PlainBM25(sized), QUERIES, repeat)
        ours_ms = per_query_ms(ours(sized_catalog), QUERIES, repeat)
        timing["plain BM25"].append((size, plain_ms))
        timing["mcp-code-mode"].append((size, ours_ms))
        speed.rows.append([size, f"{plain_ms:.3f}", f"{ours_ms:.3f}", f"{ours_ms / plain_ms:.2f}x"])

    r1, r5, missed = scores["mcp-code-mode"]
    biggest = timing["mcp-code-mode"][-1]
    figure = plots.search(
        figures / "search.png", {n: (s[0], s[1]) for n, s in scores.items()}, timing
    )
    n_tools = sum(len(t) for t in tools.values())
    section = Section(
        "Search quality and speed",
        f"{len(QUERIES)} labelled natural-language queries (`bench/corpus_data.py`, written "
        f"as a user would ask, most not sharing the tool's words) over a catalog of "
        f"{n_tools} realistic tools on {len(tools)} servers modelled on common MCP servers. "
        "A hit is the expected tool (or one of the listed equivalents) in the top 1 / top 5. "
        "*Plain BM25* is the same-run baseline: bm25s over name and description with its own "
        "tokenizer. *mcp-code-mode* is `Catalog.search`, what `search_tools` runs: "
        "identifiers split on `_`/`-`/camelCase, plurals folded, field weights (name ×3, "
        "parameters, server name and description), exact names first. Times are per query "
        "in process (the MCP round trip is in the latency table).",
        tables=[("Quality", quality), ("Time per query", speed)],
        figures=[("recall and time per query", figure)],
        notes=[
            f"Target recall@5 ≥ {RECALL_TARGET}: {r5:.3f} "
            f"({'met' if r5 >= RECALL_TARGET else '**missed**'}); target p50 ≤ "
            f"{TIME_TARGET_MS:g} ms at {biggest[0]:,} tools: {biggest[1]:.2f} ms "
            f"({'met' if biggest[1] <= TIME_TARGET_MS else '**missed**'}).",
            *[
                f"Missed at 5: “{q.text}” → expected "
                + ", ".join(f"{s}.{t}" for s, t in q.expected)
                for q in missed
            ],
        ],
    )
    section.headline["search"] = (
        f"recall@1 {r1:.2f}, recall@5 {r5:.2f} on {len(QUERIES)} queries over {n_tools} "
        f"tools; {biggest[1]:.2f} ms p50 per query at {biggest[0]:,} tools"
    )
    return section

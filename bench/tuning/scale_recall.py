"""Recall@5 as the catalog grows, with each half of the ranker alone (issue 31).

`python -m bench.tuning.scale_recall` runs the tuning set (`bench/tuning/scale_tuning.py`);
`--frozen` the frozen scale set (`bench/scale_queries.py`: report it, never tune on it).
The catalog is `bench/servers/big_catalog.py`'s at each size, on one upstream, in process.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

import mcp_types
import numpy

from bench import scale_queries
from bench.servers import big_catalog
from bench.tuning import scale_tuning
from mcp_code_mode.catalog import Catalog
from mcp_code_mode.embeddings import EmbeddingStore

SIZES = (100, 1000, 10_000)


def _catalog(size: int) -> Catalog:
    tools = [
        mcp_types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
        for t in big_catalog.catalog(size)
    ]
    return Catalog(
        {"big": tools}, {"big": "a big upstream"}, embeddings=EmbeddingStore(None), background=False
    )


def _rankers(catalog: Catalog) -> dict[str, Callable[[str], list[str]]]:
    fused = catalog._built().result()._ranker  # the index's own rankers (bench-only access)
    names = [e.tool for e in catalog.entries]

    def alone(scores: Callable[[str], numpy.ndarray]) -> Callable[[str], list[str]]:
        return lambda query: [names[i] for i in numpy.argsort(-scores(query), kind="stable")[:5]]

    return {
        "today (fused)": lambda query: [h.tool for h in catalog.search(query, 5)],
        "its BM25 part alone": alone(fused.lexical.scores),
        "its cosine alone": alone(fused.semantic.scores),
    }


def recall(queries: Sequence[scale_queries.Query], size: int) -> dict[str, float]:
    """Recall@5 per ranker over the queries whose targets are all in the catalog."""
    catalog = _catalog(size)
    present = {e.tool for e in catalog.entries}
    kept = [q for q in queries if set(q.targets) <= present]
    out = {}
    for name, rank in _rankers(catalog).items():
        shares = [sum(t in rank(q.text) for t in q.targets) / len(q.targets) for q in kept]
        out[name] = sum(shares) / len(shares)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frozen", action="store_true", help="the frozen scale set (report only)")
    frozen = parser.parse_args(argv).frozen
    if frozen:
        scale_queries.check_frozen()
        queries = scale_queries.QUERIES
    else:  # the tuning targets take the place of the frozen ones among the distractors
        big_catalog.TARGETS = scale_tuning.TARGETS
        big_catalog._RESERVED = big_catalog._reserved()
        queries = scale_tuning.QUERIES
    by_size = {size: recall(queries, size) for size in SIZES}
    print("| ranker | " + " | ".join(f"{size:,} tools" for size in SIZES) + " |")
    print("| --- |" + " ---: |" * len(SIZES))
    for name in by_size[SIZES[0]]:
        print(f"| {name} | " + " | ".join(f"{by_size[s][name]:.3f}" for s in SIZES) + " |")


if __name__ == "__main__":
    main()

"""Search quality on the frozen held-out set of 2026-11-28 (issue 31): report only, never tune.

`bench/heldout/queries-2026-11-28.json` was written by a helper session that saw only the
catalog's server and tool names (no descriptions, no ranking code, no earlier query), and is
frozen by its SHA-256 below: the report refuses a file that does not match. Three kinds of
request: one need (`single`), several needs in one request (`multi`), and needs no tool serves
(`none`). Printed beside plain BM25 (bm25s over name + description):

- single: recall@1/@5/@10 (a hit: any acceptable tool) and nDCG@10, by phrasing style too;
- multi: the share of needed tools found in the top 10;
- none: the share answered with an empty list ("nothing fits").

    python -m bench.heldout_report
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpus import SERVERS, mcp_tools
from bench.search_quality import PlainBM25, Ranker, ours
from mcp_code_mode.catalog import Catalog
from mcp_code_mode.embeddings import EmbeddingStore

QUERIES = Path(__file__).parent / "heldout" / "queries-2026-11-28.json"
SHA256 = "b5e5b68b938fbbd9615967b755bf0aedcfca061b6f846c0539315e2d5e04df75"


def load() -> list[dict[str, Any]]:
    """The frozen queries; a file whose digest is not the frozen one is refused."""
    data = QUERIES.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"{QUERIES}: sha256 {digest}, not the frozen {SHA256}")
    return list(json.loads(data))


def _found(ranker: Ranker, query: str, k: int = 10) -> list[str]:
    return [f"{server}.{tool}" for server, tool in ranker(query, k)]


def single(ranker: Ranker, queries: Sequence[dict[str, Any]]) -> dict[str, float]:
    """recall@1/@5/@10 and nDCG@10 (one relevant set: the first acceptable hit counts)."""
    at = {1: 0, 5: 0, 10: 0}
    gain = 0.0
    for query in queries:
        found = _found(ranker, query["query"])
        rank = next((i for i, hit in enumerate(found) if hit in query["expected"]), None)
        for k in at:
            at[k] += rank is not None and rank < k
        gain += 0.0 if rank is None else 1 / math.log2(rank + 2)
    n = max(len(queries), 1)
    return {**{f"recall@{k}": v / n for k, v in at.items()}, "nDCG@10": gain / n}


def multi(ranker: Ranker, queries: Sequence[dict[str, Any]]) -> float:
    """The share of all needed tools that are in their request's top 10."""
    needed = found = 0
    for query in queries:
        top = set(_found(ranker, query["query"]))
        needed += len(query["expected"])
        found += sum(tool in top for tool in query["expected"])
    return found / max(needed, 1)


def nothing_fits(ranker: Ranker, queries: Sequence[dict[str, Any]]) -> float:
    """The share of requests no tool serves that get an empty list."""
    return sum(not _found(ranker, q["query"]) for q in queries) / max(len(queries), 1)


def main() -> None:
    queries = load()
    tools = mcp_tools(SERVERS)
    descriptions = {s.name: s.description for s in SERVERS}
    catalog = Catalog(tools, descriptions, embeddings=EmbeddingStore(None), background=False)
    rankers: dict[str, Ranker] = {"plain BM25": PlainBM25(tools), "mcp-code-mode": ours(catalog)}
    of = {kind: [q for q in queries if q["kind"] == kind] for kind in ("single", "multi", "none")}
    print(
        f"{QUERIES.name} (sha256 {SHA256[:12]}…): "
        + ", ".join(f"{k} {len(v)}" for k, v in of.items())
    )
    print("| ranker | set | recall@1 | recall@5 | recall@10 | nDCG@10 |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for name, ranker in rankers.items():
        for label, subset in (
            ("single, all", of["single"]),
            ("single, user phrasing", [q for q in of["single"] if q["style"] == "user"]),
            ("single, agent phrasing", [q for q in of["single"] if q["style"] == "agent"]),
        ):
            s = single(ranker, subset)
            print(
                f"| {name} | {label} ({len(subset)}) | {s['recall@1']:.3f} | {s['recall@5']:.3f}"
                f" | {s['recall@10']:.3f} | {s['nDCG@10']:.3f} |"
            )
    print()
    print("| ranker | multi: needed tools in top 10 | none: answered 'nothing fits' |")
    print("| --- | ---: | ---: |")
    for name, ranker in rankers.items():
        found, empty = multi(ranker, of["multi"]), nothing_fits(ranker, of["none"])
        print(f"| {name} | {found:.3f} | {empty:.3f} |")


if __name__ == "__main__":
    main()

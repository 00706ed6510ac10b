"""Search quality on the frozen held-out set of 2026-11-28 (issue 31): report only, never tune.

`bench/heldout/queries-2026-11-28.json` was written by a helper session that saw only the
catalog's server and tool names (no descriptions, no ranking code, no earlier query), and is
frozen by its SHA-256 below: the report refuses a file that does not match. Three kinds of
request: one need (`single`), several needs in one request (`multi`), and needs no tool serves
(`none`). Printed beside plain BM25 (bm25s over name + description):

- single: recall@1/@5/@10 (a hit: any acceptable tool) and nDCG@10, by phrasing style too;
- multi: the share of needed tools found in the top 10;
- none: the share answered with an empty list ("nothing fits");

and, on a second frozen set kept for choosing a "nothing fits" threshold, how well today's
query-level signals separate requests no tool serves from the rest.

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
# For choosing a "nothing fits" threshold (a second helper, same rules; 102 single, 60 none).
CALIBRATION = Path(__file__).parent / "heldout" / "calibration-2026-11-28.json"
CALIBRATION_SHA256 = "8450c109362546cba8fedcbf0d20251316dd5e549569708116430fb68eb7247f"


def load(path: Path = QUERIES, sha256: str = SHA256) -> list[dict[str, Any]]:
    """The frozen queries; a file whose digest is not the frozen one is refused."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise SystemExit(f"{path}: sha256 {digest}, not the frozen {sha256}")
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


def threshold_curve(catalog: Catalog) -> None:
    """On the calibration set: how many requests no tool serves a threshold on each query-level
    signal (the best BM25 score, the best cosine) turns away, when it may cost at most 2% of
    the answerable ones, and what turning away 80% of them would cost."""
    queries = load(CALIBRATION, CALIBRATION_SHA256)
    fused = catalog._built().result()._ranker  # the index's own rankers (bench-only access)
    signals: dict[str, dict[str, list[float]]] = {"best BM25": {}, "best cosine": {}}
    for query in queries:
        lexical = float(fused.lexical.scores(query["query"]).max(initial=0.0))
        cosines = fused.semantic.scores(query["query"]) if fused.semantic else None
        cosine = 0.0 if cosines is None else float(cosines.max(initial=0.0))
        for name, value in (("best BM25", lexical), ("best cosine", cosine)):
            signals[name].setdefault(query["kind"], []).append(value)
    print("| signal | turned away at ≤ 2% answerable lost | answerable lost to turn 80% away |")
    print("| --- | ---: | ---: |")
    for name, by_kind in signals.items():
        served, none = sorted(by_kind["single"]), sorted(by_kind["none"])
        cut = served[int(len(served) * 0.02)]  # below it: at most 2% of the answerable
        turned = sum(v < cut for v in none) / len(none)
        eighty = none[int(len(none) * 0.8)]
        lost = sum(v < eighty for v in served) / len(served)
        print(f"| {name} | {turned:.0%} | {lost:.0%} |")


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
    print()
    threshold_curve(catalog)


if __name__ == "__main__":
    main()

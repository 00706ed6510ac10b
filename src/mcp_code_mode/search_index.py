"""The search index of a catalog, made of per-upstream parts a rebuilt catalog reuses.

A `ToolGroup` is what search reads of one upstream's tools: their texts, BM25 term counts and
embeddings, each computed once, on first use. A catalog rebuilt because one upstream's tools
changed hands the unchanged groups on, so only the changed upstream's text is read and
embedded again; `SearchIndex` then joins the parts (numpy work, no text).
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import mcp_types
import numpy

from .embedder import Embedder, Vectors, model_fingerprint
from .embeddings import DocumentGroup, EmbeddingStore
from .index_snapshot import IndexSnapshots, Snapshot
from .lexical import LexicalParts, LexicalRanker, ToolTerms
from .memory import collection_paused
from .ranking import FusedRanker, Ranking, Scores, SemanticRanker, ToolText, semantic_documents
from .term_cache import TermCache

__all__ = [
    "PREFER_FACTOR",
    "Named",
    "SearchIndex",
    "ToolGroup",
    "answering",
    "build_index",
    "top_positions",
]

logger = logging.getLogger(__name__)
PREFER_FACTOR = 1.15  # of the scores of the servers a search says it is already using
_DOCUMENTS_RECIPE = "ranking.semantic_documents v1"  # change with what it makes of a tool
_SOURCES_RECIPE = "search_index._fields v1"  # change with what the digest reads of a tool


class Named(Protocol):
    """A tool's names (a catalog entry)."""

    @property
    def server(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def tool_id(self) -> str: ...


class ToolGroup:
    """One upstream's tools as search reads them; its parts are made on first use.

    Its texts are read only to make a part the caches lack, and dropped after the build: a
    group holds its tools, and its vectors and terms where no disk cache gives them back.

    Args:
        server: the upstream's name.
        description: its description from the config.
        tools: its tools, in `tools/list` order.
    """

    def __init__(
        self, server: str, description: str, tools: Sequence[mcp_types.Tool], ranking: Ranking
    ) -> None:
        self.server = server
        self.description = description
        self.tools = tuple(tools)
        self.ranking = ranking
        self._lock = threading.Lock()
        self._vectors: tuple[EmbeddingStore, Vectors] | None = None
        self._terms: ToolTerms | None = None
        self._texts: list[ToolText] | None = None

    def matches(self, description: str, tools: Sequence[mcp_types.Tool], ranking: Ranking) -> bool:
        """Whether this group is what these tools would make (then it can be reused)."""
        return (
            description == self.description
            and ranking == self.ranking
            and len(tools) == len(self.tools)
            and all(a is b or a == b for a, b in zip(tools, self.tools, strict=True))
        )

    @functools.cached_property
    def digest(self) -> str:
        """sha256 of what search reads of the tools and their server: it names the group's
        cached terms and vectors (hashing costs less than reading the texts into terms)."""
        fields = [_fields(t) for t in self.tools]
        text = json.dumps([_SOURCES_RECIPE, self.server, self.description, fields])
        return hashlib.sha256(text.encode()).hexdigest()

    def texts(self) -> list[ToolText]:
        """What search reads of each tool (kept until `forget_texts`)."""
        if self._texts is None:
            self._texts = [ToolText(*_fields(t), self.server, self.description) for t in self.tools]
        return self._texts

    def forget_texts(self) -> None:
        """Drop the texts a build read: the parts made of them are kept."""
        self._texts = None

    def terms(self, cache: TermCache, memo: dict[str, list[str]]) -> ToolTerms:
        """The tools' BM25 terms: from `cache`, else made (`memo`: the words of texts seen
        by this build, `ToolTerms.of`). Kept only when the cache cannot give them back: the
        index made of them holds what search needs."""
        if self._terms is not None:
            return self._terms
        rows, ranking = len(self.tools), self.ranking
        terms, stored = cache.terms(
            self.digest, rows, ranking, lambda: ToolTerms.of(self.texts(), ranking, memo)
        )
        if not stored:  # two builds at once both make them: the same terms
            self._terms = terms
        return terms

    def vectors(self, store: EmbeddingStore) -> Vectors | None:
        """The tools' embeddings made by `store`, if made yet (None: not yet)."""
        with self._lock:
            kept = self._vectors
        return kept[1] if kept is not None and kept[0] is store else None

    def documents(self) -> DocumentGroup:
        """What is embedded of these tools, named by the digest of their texts; the documents
        are made only when not cached."""
        return DocumentGroup(
            [(_DOCUMENTS_RECIPE, self.digest)],
            len(self.tools),
            lambda: [semantic_documents(t) for t in self.texts()],
        )

    def keep_vectors(self, store: EmbeddingStore, vectors: Vectors) -> None:
        with self._lock:
            self._vectors = (store, vectors)


def _fields(tool: mcp_types.Tool) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    """A tool's name, description, parameter names and parameter descriptions."""
    schema = tool.input_schema
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):  # an upstream's schema is not checked
        properties = {}
    docs = [p.get("description") for p in properties.values() if isinstance(p, dict)]
    param_docs = tuple(str(d) for d in docs if d)
    return tool.name, tool.description or "", tuple(map(str, properties)), param_docs


class SearchIndex:
    """Scores of every tool of a catalog for a query (BM25 fused with embeddings), and the
    tools named exactly like it.

    Args:
        groups: one per upstream, in catalog order.
        names: each tool's server, original name and identifier, in catalog order.
        store: where embeddings come from; None: words alone.
        cache: the folder where each upstream's BM25 terms and whole indexes are kept
            (beside the embeddings); None: made here.
    """

    def __init__(
        self,
        groups: Sequence[ToolGroup],
        names: Sequence[Named],
        ranking: Ranking,
        store: EmbeddingStore | None,
        cache: Path | None = None,
    ) -> None:
        with collection_paused():
            caches = TermCache(cache), IndexSnapshots(cache)
            joined = _joined(groups, len(names), ranking, store, *caches)
            self._by_name = _Positions([n.tool.lower() for n in names])
            self._by_case = _Positions([n.tool for n in names])
            self._by_path = _Positions([f"{n.server}.{n.tool}".lower() for n in names])
            self._by_id = _Positions([n.tool_id.lower() for n in names])
            for group in groups:
                group.forget_texts()
        semantic = None
        if joined.vectors is not None and store is not None:
            # Vectors found in the cache need no model: it is loaded after the index, for
            # the queries, in the builder thread (not beside this build, competing for the GIL).
            semantic = SemanticRanker(joined.vectors, _builder().submit(_embedder, store))
        lexical = LexicalRanker(joined.lexical, ranking)
        self._ranker = FusedRanker(lexical, semantic, weight=ranking.semantic_weight)
        self.loaded: Future[Any] = semantic.loaded if semantic else _done()

    def scores(self, query: str) -> Scores:
        """One score per tool, in catalog order (0: no match)."""
        return self._ranker.scores(query)

    def ranked(
        self,
        query: str,
        limit: int,
        *,
        span: tuple[int, int],
        preferred: Sequence[tuple[int, int]] = (),
        exact: str | None = None,
    ) -> list[tuple[int, float]]:
        """The best `limit` (position, score) pairs among positions `span` (start, end):
        the tools named exactly like `exact` (default: the query) first, then by score, ties
        in catalog order. Scores of positions in a `preferred` span count `PREFER_FACTOR`
        times."""
        start, end = span
        named = [i for i in self.exact(query if exact is None else exact) if start <= i < end]
        scores = self.scores(query)
        for low, high in preferred:
            scores[low:high] *= PREFER_FACTOR
        window = scores[start:end]
        best = float(window.max(initial=0.0))
        on_top = (best if best > 0 else 1.0) + 1.0  # an exact name above every score
        ranked = [(i, on_top) for i in named]
        for i in top_positions(window, limit + len(named)):
            if start + i not in named:
                ranked.append((start + i, float(window[i])))
        return ranked[:limit]

    def exact(self, query: str) -> list[int]:
        """Positions of the tools named exactly like the query (any case): by original name
        with its case first (`Get-User` before `get-user`: attack 133), then by original
        name or `server.tool`, then by identifier; each in catalog order."""
        q = query.strip().lower()
        cased = self._by_case.get(query.strip())
        named = cased + sorted({*self._by_name.get(q), *self._by_path.get(q)} - set(cased))
        return named + [i for i in self._by_id.get(q) if i not in named]


class _Positions:
    """Positions by key, in order (built with C loops: most keys have one position)."""

    def __init__(self, keys: list[str]) -> None:
        last = len(keys) - 1
        self._first = dict(zip(reversed(keys), range(last, -1, -1), strict=True))
        self._several: dict[str, list[int]] = {}
        if len(self._first) <= last:
            several = {k for k, count in collections.Counter(keys).items() if count > 1}
            for i, key in enumerate(keys):
                if key in several:
                    self._several.setdefault(key, []).append(i)

    def get(self, key: str) -> list[int]:
        several = self._several.get(key)
        if several is not None:
            return list(several)
        first = self._first.get(key)
        return [] if first is None else [first]


def _done() -> Future[Any]:
    done: Future[Any] = Future()
    done.set_result(None)
    return done


def top_positions(scores: Scores, k: int) -> list[int]:
    """Positions of the `k` best positive scores, best first, ties in position order: O(n)
    numpy work and O(k log k) sorting, whatever the catalog's size."""
    positive = numpy.flatnonzero(scores > 0)
    if positive.size > k:
        values = scores[positive]
        kth = numpy.partition(values, positive.size - k)[positive.size - k]
        above = positive[values > kth]
        tied = positive[values == kth][: k - above.size]
        positive = numpy.concatenate([above, tied])
    order = numpy.lexsort((positive, -scores[positive]))
    return [int(i) for i in positive[order]]


def _joined(
    groups: Sequence[ToolGroup],
    size: int,
    ranking: Ranking,
    store: EmbeddingStore | None,
    terms: TermCache,
    snapshots: IndexSnapshots,
) -> Snapshot:
    """The catalog's index: its snapshot when one was kept, else joined from the groups'
    parts (each cached on its own) and handed to `snapshots`."""
    semantic = store is not None and ranking.semantic_weight > 0 and any(g.tools for g in groups)
    model = model_fingerprint() if semantic else None
    path = snapshots.path([g.digest for g in groups], ranking, model)
    found = snapshots.read(path, size) if path else None
    if found is not None:
        return found
    memo: dict[str, list[str]] = {}  # the words of texts, for this build only
    lexical = LexicalParts.joined([g.terms(terms, memo) for g in groups])
    del memo
    vectors = _vectors(groups, store) if semantic and store is not None else None
    made = Snapshot(lexical, vectors)
    if path and (vectors is not None) == (model is not None):  # nothing failed
        snapshots.write(path, made)
    return made


def _vectors(groups: Sequence[ToolGroup], store: EmbeddingStore) -> Vectors | None:
    """Every tool's embedding, in catalog order (None without a model)."""
    with_tools = [g for g in groups if g.tools]
    missing = [g for g in with_tools if g.vectors(store) is None]
    try:
        made = store.group_vectors([g.documents() for g in missing])
    except Exception:  # the builder's boundary: search goes on with BM25 alone
        logger.exception("tool embeddings failed; search uses words only")
        return None
    if made is None:
        return None
    for group, vectors in zip(missing, made, strict=True):
        group.keep_vectors(store, vectors)
    kept = [v for v in (g.vectors(store) for g in with_tools) if v is not None]
    if len(kept) < len(with_tools) or not kept:
        return None
    matrix = numpy.concatenate(kept)
    start = 0
    for group in with_tools:  # each group keeps a view of the matrix, not a copy of its rows
        group.keep_vectors(store, matrix[start : start + len(group.tools)])
        start += len(group.tools)
    return matrix


def _embedder(store: EmbeddingStore) -> Embedder | None:
    try:
        return store.embedder()
    except Exception:  # the builder's boundary: search goes on with BM25 alone
        logger.exception("the embedding model failed to load; search uses words only")
        return None


def build_index(
    groups: Sequence[ToolGroup],
    names: Sequence[Named],
    ranking: Ranking,
    store: EmbeddingStore | None,
    *,
    background: bool,
    cache: Path | None = None,
) -> Future[SearchIndex]:
    """The index of `groups`, built now or in the builder thread (off the caller's loop)."""
    if background:
        return _builder().submit(SearchIndex, groups, names, ranking, store, cache)
    built: Future[SearchIndex] = Future()
    built.set_result(SearchIndex(groups, names, ranking, store, cache))
    return built


def answering(index: Future[SearchIndex]) -> Future[None]:
    """Done once `index` is built and the model its queries need is loaded (or failed)."""
    done: Future[None] = Future()

    def built(future: Future[SearchIndex]) -> None:
        if future.cancelled():  # the process is exiting: its builder dropped the build
            done.cancel()
            return
        failure = future.exception()
        if failure is not None and not done.done():
            done.set_exception(failure)
        elif failure is None:  # `done` may have been cancelled by a run that ended (140)
            future.result().loaded.add_done_callback(lambda _: _settle(done))

    index.add_done_callback(built)
    return done


def _settle(done: Future[None]) -> None:
    if not done.done():
        done.set_result(None)


@functools.cache
def _builder() -> ThreadPoolExecutor:
    """One thread builds every catalog's index, in order: groups two catalogs share are
    made once, by the first build that needs them."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-code-mode-index")

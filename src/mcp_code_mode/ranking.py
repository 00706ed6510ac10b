"""Ranking tools for a search query: BM25 over words, embeddings over meaning, and their fusion.

A `Ranker` gives every tool a score (0: no match). `LexicalRanker` is BM25 over fielded tool
text (name, description, parameters, server) with stemming, words of one meaning folded
(`search_terms.CONCEPTS`) and typo repair. `SemanticRanker` is the cosine between the query's
and each tool's static embedding (`embeddings`). `FusedRanker` mixes the two: lexical scores
scaled to the best one, plus the cosine; a tool with no word in common still ranks when its
meaning is close enough, and a query of nothing but unknown words finds nothing.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import bm25s
import numpy
import Stemmer
from numpy.typing import NDArray

from .embeddings import Embedder, EmbeddingStore
from .search_terms import CONCEPTS, STOP_WORDS

__all__ = [
    "FusedRanker",
    "LexicalRanker",
    "Ranker",
    "Ranking",
    "Scores",
    "SemanticRanker",
    "ToolText",
    "tokenize",
]

logger = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG; keep its index-building chatter off our stderr.
logging.getLogger("bm25s").setLevel(logging.WARNING)

Scores = NDArray[numpy.float64]
"""One score per tool, in catalog order; 0 means no match."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STEMMER = Stemmer.Stemmer("english")
_TYPO_MIN_CHARS = 4  # shorter unknown words are too ambiguous to repair
_TYPO_MAX_CHARS = 40  # longer ones are no typos, and their deletions cost O(n²)
SEMANTIC_FLOOR = 0.35
"""Cosine from which a tool sharing no word with the query is a match (nonsense stays < 0.25)."""


@dataclass(frozen=True, slots=True)
class ToolText:
    """What search reads of one tool."""

    name: str
    description: str
    params: tuple[str, ...]
    param_docs: tuple[str, ...]
    server: str
    server_description: str


@dataclass(frozen=True, slots=True)
class Ranking:
    """How search text becomes terms, and how the rankers are weighed.

    Args:
        stem: reduce words to their Snowball English stem (`deleting` → `delet`).
        concepts: match words of one meaning (`remove`, `erase` → `delete`;
            see `search_terms.CONCEPTS`).
        own_word_weight: with `concepts`, the extra weight of the user's very word over its
            synonyms ("list directory" prefers `list_directory` to `list_folders`).
        parameter_docs: index parameter descriptions as well as parameter names.
        server_weight: how many times the server's name and description count in a tool's
            document (the name counts 3 times, description and parameters once).
        typos: an unknown query word of 4+ letters one edit away from catalog words
            (`scheudle`, `kubernets`) counts as those words.
        semantic_weight: the embedding cosine's share of the fused score; 0 is BM25 alone,
            1 is embeddings alone.
    """

    stem: bool = True
    concepts: bool = True
    own_word_weight: float = 0.1
    parameter_docs: bool = True
    server_weight: int = 2
    typos: bool = True
    semantic_weight: float = 0.5

    def words(self, text: str) -> list[str]:
        """Words of `text` split on `_`, `-`, camelCase and digits; lower-cased, stemmed."""
        words = [w.lower() for w in _WORD.findall(text)]
        words = [w for w in words if w not in STOP_WORDS and not w.isdigit()]
        return _STEMMER.stemWords(words) if self.stem else [_fold_plural(w) for w in words]

    def tokenize(self, text: str) -> list[str]:
        """Terms of `text`: its words, each word of a concept replaced by the concept."""
        return self.fold(self.words(text))

    def fold(self, words: list[str]) -> list[str]:
        """`words` with each word of a concept replaced by the concept."""
        if not self.concepts:
            return words
        table = self._concepts()
        return [table.get(w, w) for w in words]

    def own_words(self, words: list[str]) -> list[str]:
        """Those of `words` that belong to a concept, as they are (scored again at
        `own_word_weight` against the tools' own words)."""
        if not (self.concepts and self.own_word_weight):
            return []
        table = self._concepts()
        return [w for w in words if w in table]

    def _concepts(self) -> dict[str, str]:
        return _stemmed_concepts() if self.stem else _plain_concepts()


def tokenize(text: str) -> list[str]:
    """The default `Ranking`'s terms of `text`."""
    return Ranking().tokenize(text)


def _fold_plural(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@functools.cache
def _plain_concepts() -> dict[str, str]:
    return {_fold_plural(w): f"~{head}" for head, words in CONCEPTS.items() for w in (head, *words)}


@functools.cache
def _stemmed_concepts() -> dict[str, str]:
    """`CONCEPTS` as stems; multi-word phrases are not supported, single words only."""
    table: dict[str, str] = {}
    for head, words in CONCEPTS.items():
        stem_head = "~" + _STEMMER.stemWord(head)
        for word in (head, *words):
            table.setdefault(_STEMMER.stemWord(word), stem_head)
    return table


class Ranker(Protocol):
    """Scores every tool of a catalog for a query."""

    def scores(self, query: str) -> Scores: ...


class LexicalRanker:
    """BM25 over fielded tool text: one index of concept-folded terms, one of own words."""

    def __init__(self, tools: Sequence[ToolText], ranking: Ranking) -> None:
        self.ranking = ranking
        self._size = len(tools)
        self._texts = tools
        self._index, self._own_index = bm25s.BM25(), bm25s.BM25()
        with _collection_paused():
            own = [self._document(t) for t in tools]
            folded = [ranking.fold(doc) for doc in own]
            if tools:
                self._index.index([doc or ["_"] for doc in folded], show_progress=False)
                self._own_index.index([doc or ["_"] for doc in own], show_progress=False)
        self._vocabulary = {t for doc in folded for t in doc}
        self._own_vocabulary = {t for doc in own for t in doc}

    def scores(self, query: str) -> Scores:
        weighted = self._terms(query)
        scores = numpy.zeros(self._size)
        for term, weight in weighted.items():
            scores += weight * self._index.get_scores([term])
        own = self.ranking.own_words(self.ranking.words(query))
        own = [w for w in own if w in self._own_vocabulary]
        if weighted and own:
            scores += self.ranking.own_word_weight * self._own_index.get_scores(own)
        return scores

    def _terms(self, query: str) -> dict[str, float]:
        """Query terms found in the catalog, with weights: 1 a time the term is written, or
        a share of 1 for each repair of a typo."""
        weighted: dict[str, float] = {}
        for word in (w.lower() for w in _WORD.findall(query)):
            terms = self.ranking.tokenize(word)
            known = [t for t in terms if t in self._vocabulary]
            repairs = [] if known or not terms else self._repairs(word)
            for term in known:
                weighted[term] = weighted.get(term, 0.0) + 1.0
            for term in repairs:
                weighted[term] = weighted.get(term, 0.0) + 1.0 / len(repairs)
        return weighted

    def _repairs(self, word: str) -> list[str]:
        if not self.ranking.typos or not _TYPO_MIN_CHARS <= len(word) <= _TYPO_MAX_CHARS:
            return []
        index = self._typo_index
        found = {w for variant in _deletions(word) for w in index.get(variant, ())}
        terms = {t for w in found if abs(len(w) - len(word)) <= 1 for t in self.ranking.tokenize(w)}
        return sorted(t for t in terms if t in self._vocabulary)

    @functools.cached_property
    def _typo_index(self) -> dict[str, set[str]]:
        """Catalog words under each of their one-letter deletions (SymSpell), built on first use."""
        surface = {
            w.lower()
            for tool in self._texts
            for text in (tool.name, tool.description, *tool.params, tool.server)
            for w in _WORD.findall(text)
            if _TYPO_MIN_CHARS - 1 <= len(w) <= _TYPO_MAX_CHARS + 1 and not w.isdigit()
        }
        # with their stems, so that a misspelt base form finds an inflected word
        # ("swich" → "switches" by way of "switch")
        words = surface | {w for w in _STEMMER.stemWords(sorted(surface)) if len(w) > 2}
        index: dict[str, set[str]] = {}
        for word in words:
            for variant in _deletions(word):
                index.setdefault(variant, set()).add(word)
        return index

    def _document(self, tool: ToolText) -> list[str]:
        """The tool's own words, the name 3 times and the server `server_weight` times."""
        params = " ".join(tool.params)
        if self.ranking.parameter_docs:
            params += " " + " ".join(tool.param_docs)
        server = f"{tool.server} {tool.server_description}"
        return (
            _words(self.ranking, tool.name) * 3
            + _words(self.ranking, tool.description)
            + _words(self.ranking, params)
            + _words(self.ranking, server) * self.ranking.server_weight
        )


def _words(ranking: Ranking, text: str) -> list[str]:
    """`ranking.words(text)`, remembered for short texts: upstreams repeat them (`owner`,
    `repo`, a server's description on each of its tools). Callers must not modify the list."""
    return _remembered_words(ranking, text) if len(text) <= 1000 else ranking.words(text)


@functools.lru_cache(maxsize=16384)
def _remembered_words(ranking: Ranking, text: str) -> list[str]:
    return ranking.words(text)


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while an index is built. Building allocates ~10^5 small
    containers, which sets off full collections over the whole process heap (the gateway's is
    large): half the build time at 1,000 tools. The collector runs again right after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _deletions(word: str) -> set[str]:
    """`word` and every string one deleted letter away from it."""
    return {word, *(word[:i] + word[i + 1 :] for i in range(len(word)))}


def semantic_documents(tool: ToolText) -> tuple[str, str]:
    """The views of a tool that are embedded: its whole text, and its name alone."""
    name = " ".join(w.lower() for w in _WORD.findall(tool.name))
    whole = " ".join(
        [
            f"{name}.",
            tool.description,
            " ".join(" ".join(_WORD.findall(p)).lower() for p in tool.params),
            " ".join(tool.param_docs),
            " ".join(w for w in _WORD.findall(tool.server) if not w.isdigit()),
            tool.server_description,
        ]
    )
    return whole, name


class SemanticRanker:
    """Cosine between the query's embedding and each tool's (vectors built elsewhere, maybe
    still building: the first search waits for them)."""

    def __init__(
        self,
        vectors: Future[NDArray[numpy.float32] | None],
        embedder: Callable[[], Embedder | None],
    ) -> None:
        self._vectors = vectors
        self._embedder = embedder

    @classmethod
    def build(
        cls, groups: Sequence[Sequence[ToolText]], store: EmbeddingStore, *, background: bool
    ) -> SemanticRanker:
        """Embed the tools, one group per upstream (cached per group), now or in a thread."""
        documents = [[semantic_documents(t) for t in group] for group in groups]
        if background:
            vectors = _builder().submit(_vectors_or_none, store, documents)
        else:
            vectors = Future()
            vectors.set_result(_vectors_or_none(store, documents))
        return cls(vectors, store.embedder)

    def ready(self) -> Future[NDArray[numpy.float32] | None]:
        """Done once the tools' vectors are built (or known to be unavailable)."""
        return self._vectors

    def scores(self, query: str) -> Scores | None:
        """Cosines, or None when no model is available."""
        vectors = self._vectors.result()
        embedder = self._embedder() if vectors is not None else None
        if vectors is None or embedder is None:
            return None
        cosines: Scores = (vectors @ embedder.embed([query])[0]).astype(numpy.float64)
        return cosines


def _vectors_or_none(
    store: EmbeddingStore, documents: Sequence[Sequence[tuple[str, str]]]
) -> NDArray[numpy.float32] | None:
    """The tools' vectors, with the model loaded for the queries too (here, not in the
    first search, which may run on an event loop)."""
    try:
        vectors = store.vectors(documents)
        return vectors if vectors is not None and store.embedder() is not None else None
    except Exception:  # the builder thread's boundary: search goes on with BM25 alone
        logger.exception("tool embeddings failed; search uses words only")
        return None


@functools.cache
def _builder() -> ThreadPoolExecutor:
    """One thread builds every catalog's vectors, in order, off the caller's event loop."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-code-mode-embed")


class FusedRanker:
    """`(1 - w) * lexical / best lexical + w * cosine` over tools that match either way."""

    def __init__(
        self, lexical: LexicalRanker, semantic: SemanticRanker | None, *, weight: float
    ) -> None:
        self.lexical = lexical
        self.semantic = semantic
        self.weight = weight

    def scores(self, query: str) -> Scores:
        lexical = self.lexical.scores(query)
        cosines = self.semantic.scores(query) if self.semantic and self.weight > 0 else None
        if cosines is None:
            return lexical
        best = lexical.max(initial=0.0)
        scaled = lexical / best if best > 0 else lexical
        fused = (1 - self.weight) * scaled + self.weight * numpy.clip(cosines, 0.0, None)
        matched = (lexical > 0) | (cosines >= SEMANTIC_FLOOR)
        return numpy.where(matched & (fused > 0), fused, 0.0)

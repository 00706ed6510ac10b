"""Ranking tools for a search query: BM25 over words, embeddings over meaning, and their fusion.

A `Ranker` gives every tool a score (0: no match). `lexical.LexicalRanker` is BM25 over fielded
tool text (name, description, parameters, server) with stemming, words of one meaning folded
(`search_terms.CONCEPTS`) and typo repair. `SemanticRanker` is the cosine between the query's
and each tool's static embedding (`embeddings`). `FusedRanker` mixes the two: lexical scores
scaled to the best one, plus the cosine; a tool with no word in common still ranks when its
meaning is close enough, and a query of nothing but unknown words finds nothing.
"""

from __future__ import annotations

import functools
import re
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

import numpy
import Stemmer
from numpy.typing import NDArray

from .embedder import Embedder, Vectors
from .search_terms import CONCEPTS, STOP_WORDS

__all__ = [
    "SEMANTIC_FLOOR",
    "FusedRanker",
    "Ranker",
    "Ranking",
    "Scores",
    "SemanticRanker",
    "ToolText",
    "semantic_documents",
    "split_words",
    "stem_words",
    "tokenize",
]

Scores = NDArray[numpy.float64]
"""One score per tool, in catalog order; 0 means no match."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_LETTERS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_STEMMER = Stemmer.Stemmer("english")
SEMANTIC_FLOOR = 0.35
"""Cosine from which a tool sharing no word with the query is a match (nonsense stays < 0.25)."""


def split_words(text: str) -> list[str]:
    """`text` split on `_`, `-`, spaces, camelCase and digits, case kept."""
    return _WORD.findall(text)


def stem_words(words: list[str]) -> list[str]:
    """The Snowball English stems of `words`."""
    stems: list[str] = _STEMMER.stemWords(words)
    return stems


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
        # digits are no words: the letters-only pattern drops them (they still split words)
        words = " ".join(_LETTERS.findall(text)).lower().split()
        words = [w for w in words if w not in STOP_WORDS]
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
    """Cosine between the query's embedding and each tool's.

    The product is one dot per row (`numpy.vecdot`; `einsum`, numpy's own loop, before
    numpy 2), never a matrix-vector BLAS call: OpenBLAS threads that past a small size, and
    its spinning threads on busy cores turn a 1 ms product into tens of milliseconds.
    OpenBLAS threads a dot only past 10,000 elements; a row has 256. Whatever the BLAS
    settings and the load, the product is single-threaded and costs ~0.3 ms at 10,000 tools.
    """

    def __init__(self, vectors: Vectors, embedder: Future[Embedder | None]) -> None:
        self._vectors = numpy.ascontiguousarray(vectors, dtype=numpy.float32)
        self._embedder = embedder

    @property
    def loaded(self) -> Future[Embedder | None]:
        """Done once the model for the queries is loaded (or known to be unavailable)."""
        return self._embedder

    def scores(self, query: str) -> Scores | None:
        """One cosine per tool; None when the model could not be loaded for the query
        (it may still be loading: the first query waits for it)."""
        embedder = self._embedder.result()
        if embedder is None:
            return None
        embedded = embedder.embed([query])[0]
        vecdot = getattr(numpy, "vecdot", None)
        if vecdot is not None:
            products = vecdot(self._vectors, embedded)
        else:  # numpy < 2
            products = numpy.einsum("ij,j->i", self._vectors, embedded)
        cosines: Scores = products.astype(numpy.float64)
        return cosines


class FusedRanker:
    """`(1 - w) * lexical / best lexical + w * cosine` over tools that match either way."""

    def __init__(self, lexical: Ranker, semantic: SemanticRanker | None, *, weight: float) -> None:
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

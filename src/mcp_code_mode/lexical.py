"""BM25 over tool text, assembled from per-upstream parts.

`ToolTerms` holds one upstream's tools as term counts (their words found once, kept while the
tools stay the same); `LexicalRanker` joins the parts into one index with numpy, so a catalog
rebuilt because one upstream changed reads no other upstream's text again. Scores are those of
bm25s's Lucene variant (k1 1.5, b 0.75), with which the ranking was tuned.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy
from numpy.typing import NDArray

from .ranking import Ranking, Scores, ToolText, split_words, stem_words

__all__ = [
    "TERMS_RECIPE",
    "Ints",
    "LexicalParts",
    "LexicalRanker",
    "Postings",
    "TermIndex",
    "ToolTerms",
]

TERMS_RECIPE = "lexical.ToolTerms v2"
"""Names how `ToolTerms.of` makes terms: change it with `_document`, `_surface` or `Postings`
(the term cache's files made by another recipe are then misses)."""

_K1, _B = 1.5, 0.75
_EMPTY = "_"  # the one term of a document without words (bm25s's convention)
_TYPO_MIN_CHARS = 4  # shorter unknown words are too ambiguous to repair
_TYPO_MAX_CHARS = 40  # longer ones are no typos, and their deletions cost O(n²)
_MEMO_TEXTS = 32768  # texts whose words are remembered across the upstreams of a build ...
_MEMO_TEXT_CHARS = 1000  # ... if no longer than this

Ints = NDArray[numpy.int32]
_NONE = numpy.zeros(0, numpy.int32)


@dataclass(frozen=True, slots=True)
class _Tokens:
    """Documents, end to end, as positions in a vocabulary of their own."""

    terms: list[str]
    ids: Ints

    @classmethod
    def of(cls, words: list[str]) -> _Tokens:
        vocabulary = {w: i for i, w in enumerate(dict.fromkeys(words))}
        ids = numpy.fromiter(map(vocabulary.__getitem__, words), numpy.int32, len(words))
        return cls(list(vocabulary), ids)


@dataclass(frozen=True, slots=True)
class Postings:
    """How often each term is in each document of one upstream: (term, document, count)
    triples, sorted by term, then document; a term is a position in `terms`."""

    terms: list[str]
    term: Ints
    doc: Ints
    count: Ints

    @classmethod
    def of(cls, tokens: _Tokens, own_lengths: Ints, shared: int) -> Postings:
        """The postings of documents written end to end, `own_lengths[i]` tokens each, then
        `shared` tokens that end every document."""
        size = max(own_lengths.size, 1)
        own = tokens.ids.size - shared
        positions = numpy.arange(own_lengths.size, dtype=numpy.int64)
        ids = numpy.concatenate([tokens.ids[:own], numpy.tile(tokens.ids[own:], own_lengths.size)])
        docs = [numpy.repeat(positions, own_lengths), numpy.repeat(positions, shared)]
        keys = ids.astype(numpy.int64) * size + numpy.concatenate(docs)
        keys, counts = numpy.unique(keys, return_counts=True)
        term, doc = numpy.divmod(keys, size)
        return cls(tokens.terms, *(a.astype(numpy.int32) for a in (term, doc, counts)))


class ToolTerms:
    """One upstream's tools as BM25 terms: their own words, and concept-folded terms.

    A document is the tool's name 3 times, its description, its parameters (and their
    descriptions with `Ranking.parameter_docs`), and the server's name and description
    `Ranking.server_weight` times. `ToolTerms.of` finds them in the tools' text; the
    constructor takes them as they are (`term_cache` stores them).

    Args:
        lengths: each document's number of words.
        own: the documents' own words, as postings.
        folded: their concept-folded terms, as postings.
        surface: the lower-cased words of the tools' text a typo may be one edit from,
            one a line.
    """

    def __init__(self, lengths: Ints, own: Postings, folded: Postings, surface: str) -> None:
        self.size = lengths.size
        self.lengths = lengths
        self.own = own
        self.folded = folded
        self.surface = surface

    @classmethod
    def of(
        cls, texts: Sequence[ToolText], ranking: Ranking, memo: dict[str, list[str]] | None = None
    ) -> ToolTerms:
        """The terms of `texts`. `memo` keeps the words of texts seen, for other groups of
        the same build (upstreams repeat texts: `owner`, `repo`, another instance of a
        server); bounded, it forgets everything at once when full."""
        memo = {} if memo is None else memo
        # The server's words are the same in every document of one upstream: kept once, as
        # `shared` words that end each document (numpy repeats them, not Python lists).
        servers = {(t.server, t.server_description) for t in texts}
        shared: list[str] = []
        if len(servers) == 1:
            ((server, about),) = servers
            shared = _words(ranking, f"{server} {about}", memo) * ranking.server_weight
        documents = [_document(ranking, t, memo, server=not shared) for t in texts]
        if not shared:
            documents = [d or [_EMPTY] for d in documents]
        own_lengths = numpy.fromiter(map(len, documents), numpy.int32, len(documents))
        own = _Tokens.of([*itertools.chain.from_iterable(documents), *shared])
        folding = _Tokens.of(ranking.fold(own.terms))  # own term → folded term
        folded = _Tokens(folding.terms, folding.ids[own.ids])
        n = len(shared)
        return cls(
            own_lengths + numpy.int32(n),
            Postings.of(own, own_lengths, n),
            Postings.of(folded, own_lengths, n),
            _surface(texts),
        )


def _surface(texts: Sequence[ToolText]) -> str:
    # one regex pass over the group's text: no word spans the spaces joining its parts
    every = " ".join(t for tool in texts for t in (tool.name, tool.description, *tool.params))
    found = set(split_words(f"{every} {' '.join({t.server for t in texts})}"))
    words = {
        w.lower()
        for w in found
        if _TYPO_MIN_CHARS - 1 <= len(w) <= _TYPO_MAX_CHARS + 1 and not w.isdigit()
    }
    return "\n".join(sorted(words))


@dataclass(frozen=True, slots=True)
class TermIndex:
    """A BM25 score per (term, document), by term (compressed sparse columns): the scores
    of term `vocabulary[t]` are `data[starts[t]:starts[t + 1]]`, of documents `docs[...]`."""

    vocabulary: dict[str, int]
    docs: Ints
    data: NDArray[numpy.float32]
    starts: NDArray[numpy.int64]

    @classmethod
    def joined(cls, groups: Sequence[ToolTerms], parts: Sequence[Postings]) -> TermIndex:
        """The index of every group's documents, in order, from each group's `parts`."""
        every_term = [*itertools.chain.from_iterable(p.terms for p in parts)]
        vocabulary = {t: i for i, t in enumerate(dict.fromkeys(every_term))}
        ids = numpy.fromiter(map(vocabulary.__getitem__, every_term), numpy.int32)
        # each group's terms and documents shifted past the groups before it, in one go
        triples = [p.term.size for p in parts]
        vocabularies = numpy.cumsum([0, *(len(p.terms) for p in parts)])[:-1]
        offsets = numpy.cumsum([0, *(g.size for g in groups)])[:-1]
        local = numpy.concatenate([_NONE, *(p.term for p in parts)])
        term = ids[local + numpy.repeat(vocabularies, triples).astype(numpy.int32)]
        docs = numpy.concatenate([_NONE, *(p.doc for p in parts)])
        docs += numpy.repeat(offsets, triples).astype(numpy.int32)
        counts = numpy.concatenate([_NONE, *(p.count for p in parts)])
        # term-major: a stable sort keeps each group's documents in order, and the groups in
        # catalog order (a radix sort while the vocabulary fits 16 bits)
        narrow = numpy.uint16 if len(vocabulary) <= 1 << 16 else numpy.int32
        order = numpy.argsort(term.astype(narrow), kind="stable")
        term, doc, tf = term[order], docs[order], counts[order].astype(numpy.float64)
        lengths = numpy.concatenate([_NONE, *(g.lengths for g in groups)])
        size = lengths.size
        df = numpy.bincount(term, minlength=len(vocabulary))
        idf = numpy.log(1 + (size - df + 0.5) / (df + 0.5)).astype(numpy.float32)
        length = lengths.astype(numpy.float64)
        average = length.mean() if size else 1.0
        tfc = tf / (_K1 * ((1 - _B) + _B * length[doc] / average) + tf)
        data = (idf[term].astype(numpy.float64) * tfc).astype(numpy.float32)
        starts = numpy.concatenate(([0], numpy.cumsum(df))).astype(numpy.int64)
        return cls(vocabulary, doc, data, starts)

    def add(self, scores: NDArray[numpy.floating], term: str, weight: float = 1.0) -> None:
        """Add `term`'s score of every document, times `weight`, to `scores`."""
        i = self.vocabulary[term]
        start, end = self.starts[i], self.starts[i + 1]
        # weighted in float32, as bm25s's scores were (the ranking was tuned on those)
        scores[self.docs[start:end]] += numpy.float32(weight) * self.data[start:end]


@dataclass(frozen=True, slots=True)
class LexicalParts:
    """What a `LexicalRanker` searches, apart from its `Ranking` (`index_snapshot` stores it).

    Args:
        size: the number of documents.
        surface: the words a typo may be one edit from, one a line (`ToolTerms.surface`).
        folded: the index of concept-folded terms.
        own: the index of the documents' own words.
    """

    size: int
    surface: str
    folded: TermIndex
    own: TermIndex

    @classmethod
    def joined(cls, groups: Sequence[ToolTerms]) -> LexicalParts:
        """The parts of the groups' documents, in order (the groups' postings are not kept)."""
        return cls(
            sum(g.size for g in groups),
            "\n".join(g.surface for g in groups),
            TermIndex.joined(groups, [g.folded for g in groups]),
            TermIndex.joined(groups, [g.own for g in groups]),
        )


class LexicalRanker:
    """BM25 over fielded tool text: one index of concept-folded terms, one of own words.

    Args:
        parts: the indexes (`LexicalParts.joined` of the tools' term counts, one part per
            upstream in catalog order, or a stored copy).
    """

    def __init__(self, parts: LexicalParts, ranking: Ranking) -> None:
        self.parts = parts
        self.ranking = ranking
        self._size = parts.size
        self._folded = parts.folded
        self._own = parts.own

    @classmethod
    def joined(cls, groups: Sequence[ToolTerms], ranking: Ranking) -> LexicalRanker:
        """The ranker of the groups' tools, in order."""
        return cls(LexicalParts.joined(groups), ranking)

    @classmethod
    def of(cls, texts: Sequence[ToolText], ranking: Ranking) -> LexicalRanker:
        """The ranker of tools taken as one group."""
        return cls.joined([ToolTerms.of(texts, ranking)], ranking)

    def scores(self, query: str) -> Scores:
        weighted = self._terms(query)
        scores = numpy.zeros(self._size)
        for term, weight in weighted.items():
            self._folded.add(scores, term, weight)
        own = self.ranking.own_words(self.ranking.words(query))
        own = [w for w in own if w in self._own.vocabulary]
        if weighted and own:
            column = numpy.zeros(self._size, dtype=numpy.float32)
            for word in own:
                self._own.add(column, word)
            scores += numpy.float32(self.ranking.own_word_weight) * column
        return scores

    def _terms(self, query: str) -> dict[str, float]:
        """Query terms found in the catalog, with weights: 1 a time the term is written, or
        a share of 1 for each repair of a typo."""
        weighted: dict[str, float] = {}
        vocabulary = self._folded.vocabulary
        for word in (w.lower() for w in split_words(query)):
            terms = self.ranking.tokenize(word)
            known = [t for t in terms if t in vocabulary]
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
        return sorted(t for t in terms if t in self._folded.vocabulary)

    @functools.cached_property
    def _typo_index(self) -> dict[str, set[str]]:
        """Catalog words under each of their one-letter deletions (SymSpell), built on first use."""
        # bounded here too: a surface read from a (forged) cache file is not checked on read
        low, high = _TYPO_MIN_CHARS - 1, _TYPO_MAX_CHARS + 1
        surface = {w for w in self.parts.surface.split("\n") if low <= len(w) <= high}
        # with their stems, so that a misspelt base form finds an inflected word
        # ("swich" → "switches" by way of "switch")
        words = surface | {w for w in stem_words(sorted(surface)) if len(w) > 2}
        index: dict[str, set[str]] = {}
        for word in words:
            for variant in _deletions(word):
                index.setdefault(variant, set()).add(word)
        return index


def _document(
    ranking: Ranking, tool: ToolText, memo: dict[str, list[str]], *, server: bool
) -> list[str]:
    """The tool's own words, the name 3 times (and, with `server`, the server's name and
    description `server_weight` times)."""
    params = " ".join(tool.params)
    if ranking.parameter_docs:
        params += " " + " ".join(tool.param_docs)
    name = _words(ranking, tool.name, memo)
    words = name * 3 + _words(ranking, tool.description, memo) + _words(ranking, params, memo)
    if server:
        about = f"{tool.server} {tool.server_description}"
        words += _words(ranking, about, memo) * ranking.server_weight
    return words


def _words(ranking: Ranking, text: str, memo: dict[str, list[str]]) -> list[str]:
    """`ranking.words(text)`, kept in `memo` for a text not too long; do not modify it."""
    found = memo.get(text)
    if found is None:
        found = ranking.words(text)
        if len(text) <= _MEMO_TEXT_CHARS:
            if len(memo) >= _MEMO_TEXTS:
                memo.clear()
            memo[text] = found
    return found


def _deletions(word: str) -> set[str]:
    """`word` and every string one deleted letter away from it."""
    return {word, *(word[:i] + word[i + 1 :] for i in range(len(word)))}

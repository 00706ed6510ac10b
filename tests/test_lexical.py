"""`lexical`: BM25 assembled per upstream scores exactly as bm25s over the whole catalog."""

from __future__ import annotations

import bm25s
import numpy
import pytest

from mcp_code_mode.lexical import LexicalRanker, ToolTerms, _document
from mcp_code_mode.ranking import Ranking, ToolText
from mcp_code_mode.search_index import ToolGroup
from tests.test_catalog import DESCRIPTIONS, TOOLS

QUERIES = ["read file", "remove a meeting", "git_log", "open tickets", "scheudle", "the", ""]


def texts_by_server() -> list[list[ToolText]]:
    return [ToolGroup(s, DESCRIPTIONS[s], tools, Ranking()).texts() for s, tools in TOOLS.items()]


def bm25s_scores(texts: list[ToolText], ranking: Ranking, terms: list[str]) -> numpy.ndarray:
    """The score of each tool for each term, as bm25s computes it over the folded documents."""
    documents = [ranking.fold(_document(ranking, t, {}, server=True)) or ["_"] for t in texts]
    index = bm25s.BM25()
    index.index(documents, show_progress=False)
    return numpy.array([index.get_scores([term]) for term in terms])


@pytest.mark.parametrize("ranking", [Ranking(), Ranking(stem=False), Ranking(concepts=False)])
def test_scores_equal_bm25s_over_the_whole_catalog(ranking: Ranking) -> None:
    groups = texts_by_server()
    every = [t for group in groups for t in group]
    ours = LexicalRanker.joined([ToolTerms.of(g, ranking) for g in groups], ranking)
    terms = sorted(ours._folded.vocabulary)
    expected = bm25s_scores(every, ranking, terms)
    for term, row in zip(terms, expected, strict=True):
        column = numpy.zeros(len(every), dtype=numpy.float32)
        ours._folded.add(column, term)
        assert numpy.array_equal(column, row), term


def test_one_group_or_many_rank_the_same() -> None:
    groups = texts_by_server()
    ranking = Ranking()
    whole = LexicalRanker.of([t for g in groups for t in g], ranking)
    parts = LexicalRanker.joined([ToolTerms.of(g, ranking) for g in groups], ranking)
    for query in QUERIES:
        assert numpy.array_equal(whole.scores(query), parts.scores(query)), query


def test_an_empty_catalog_and_empty_tools_score_nothing() -> None:
    assert LexicalRanker.joined([], Ranking()).scores("anything").shape == (0,)
    empty = ToolText("", "", (), (), "", "")
    ranker = LexicalRanker.of([empty, ToolText("ping", "Ping.", (), (), "s", "")], Ranking())
    assert list(ranker.scores("ping") > 0) == [False, True]

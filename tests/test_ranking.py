"""Search ranking (`ranking`, through `Catalog.search`): exact names, ties, typos, meaning,
unknown words, huge queries, server preference, and search without a model."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future

import pytest

from mcp_code_mode.catalog import Catalog, SearchHit
from mcp_code_mode.embedder import Embedder, Vectors
from mcp_code_mode.embeddings import DocumentGroup, EmbeddingStore
from mcp_code_mode.lexical import LexicalRanker
from mcp_code_mode.ranking import Ranking, ToolText
from tests.test_catalog import DESCRIPTIONS, TOOLS, tool
from tests.test_embeddings import Counting

LEXICAL = Ranking(semantic_weight=0)
STORE = EmbeddingStore(None)  # in memory: these tests are about ranking, not the cache


def catalog(ranking: Ranking | None = None, **tools: list) -> Catalog:  # type: ignore[type-arg]
    return Catalog(
        tools or TOOLS, DESCRIPTIONS, ranking=ranking, embeddings=STORE, background=False
    )


def names(hits: list[SearchHit]) -> list[tuple[str, str]]:
    return [(h.server, h.tool) for h in hits]


@pytest.mark.parametrize("ranking", [Ranking(), LEXICAL, Ranking(semantic_weight=1)])
@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("mark_read", ("mail", "mark_read")),
        ("send_email", ("mail", "send_email")),
        ("files.readFile", ("files", "readFile")),
    ],
)
def test_an_exact_name_ranks_first_with_any_ranking(
    ranking: Ranking, query: str, best: tuple[str, str]
) -> None:
    hits = catalog(ranking).search(query, limit=10)
    assert names(hits)[0] == best
    assert hits[0].score > hits[1].score


@pytest.mark.parametrize("ranking", [Ranking(), LEXICAL])
def test_ties_keep_config_and_tools_list_order(ranking: Ranking) -> None:
    servers = ("notes-2", "notes-1", "notes-3")  # digits are no words: the texts are the same
    tools = {s: [tool("archive_note", "Archive a note.")] for s in servers}
    c = Catalog(tools, ranking=ranking, embeddings=STORE, background=False)
    hits = c.search("archive a note")
    assert names(hits) == [(s, "archive_note") for s in servers]
    assert hits[0].score == hits[1].score == hits[2].score


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("scheudle a meeting", ("calendar", "create_event")),  # transposed letters
        ("serch inbox", ("mail", "search_inbox")),  # a letter missing
        ("sned email", ("mail", "send_email")),
        ("read_mesage", ("mail", "read_message")),  # in a tool name
    ],
)
@pytest.mark.parametrize("ranking", [Ranking(), LEXICAL])
def test_typos_are_repaired(ranking: Ranking, query: str, best: tuple[str, str]) -> None:
    assert names(catalog(ranking).search(query))[0] == best


def test_typo_repair_is_for_unknown_words_of_four_letters_or_more() -> None:
    ranker = LexicalRanker.of([ToolText("list_events", "List events.", (), (), "cal", "")], LEXICAL)
    assert ranker.scores("lsit").max() > 0
    assert ranker.scores("lst").max() == 0  # too short to guess
    off = LexicalRanker.of(
        [ToolText("list_events", "List events.", (), (), "cal", "")],
        Ranking(typos=False, semantic_weight=0),
    )
    assert off.scores("lsit").max() == 0


def test_meaning_finds_a_tool_that_shares_no_word_with_the_query() -> None:
    assert catalog(LEXICAL).search("unread letters") == []
    assert {s for s, _ in names(catalog().search("unread letters"))} == {"mail"}


@pytest.mark.parametrize("ranking", [Ranking(), Ranking(semantic_weight=1), LEXICAL])
@pytest.mark.parametrize(
    "query", ["xyzzy qwerty", "", "   ", "the of and", "!!!", "12345", "zzzz " * 50]
)
def test_unknown_words_find_nothing(ranking: Ranking, query: str) -> None:
    assert catalog(ranking).search(query) == []


@pytest.mark.parametrize(
    "query", ["list files " * 100_000, "x" * 1_000_000, "é∂ƒ😀\x00\ud800 " * 10_000]
)
def test_a_huge_query_answers_promptly(query: str) -> None:
    c = catalog()
    started = time.perf_counter()
    hits = c.search(query)
    assert time.perf_counter() - started < 5
    assert c.search(query) == hits


def test_prefer_lifts_the_servers_in_use_over_equal_matches() -> None:
    same = [tool("get_status", "Show the status.")]
    c = Catalog({"a": same, "b": same}, embeddings=STORE, background=False)
    assert names(c.search("status"))[0] == ("a", "get_status")
    assert names(c.search("status", prefer={"b"}))[0] == ("b", "get_status")
    assert names(c.search("status", prefer={"nope"})) == names(c.search("status"))


def test_prefer_never_adds_a_tool_that_does_not_match() -> None:
    c = catalog()
    assert {s for s, _ in names(c.search("commit history", limit=25, prefer={"mail"}))} == {"git"}


def test_without_a_model_search_is_lexical() -> None:
    def no_model() -> Embedder | None:
        return None

    blind = Catalog(
        TOOLS, DESCRIPTIONS, embeddings=EmbeddingStore(None, embedder=no_model), background=False
    )
    lexical = catalog(LEXICAL)
    for query in ("remove a meeting", "commit history", "unread letters", "scheudle a meeting"):
        assert names(blind.search(query, limit=10)) == names(lexical.search(query, limit=10))


def test_background_build_ranks_like_a_foreground_one() -> None:
    c = Catalog(TOOLS, DESCRIPTIONS, embeddings=STORE)
    ready = c.ready()
    assert isinstance(ready, Future)
    for query in ("remove a meeting", "unread letters", "read file"):
        assert names(c.search(query, limit=10)) == names(catalog().search(query, limit=10))
    assert ready.result(timeout=30) is None  # the index is built and the model loaded
    assert Catalog({}, embeddings=STORE).ready().done()


def test_a_hostile_upstream_text_is_indexed_in_bounded_time() -> None:
    huge = [
        tool("big", "a" * 1_000_000),
        tool("words", "lorem ipsum " * 50_000),
        tool("ping", "Ping."),
    ]
    started = time.perf_counter()
    c = Catalog({"evil": huge}, embeddings=STORE, background=False)
    assert names(c.search("pnig"))[0] == ("evil", "ping")  # the typo index is built too
    assert time.perf_counter() - started < 10


def test_a_failing_model_leaves_search_lexical(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> Embedder | None:
        raise RuntimeError("weights unreadable")

    c = Catalog(TOOLS, DESCRIPTIONS, embeddings=EmbeddingStore(None, embedder=broken))
    for query in ("remove a meeting", "unread letters", "commit history"):
        assert names(c.search(query, limit=10)) == names(catalog(LEXICAL).search(query, limit=10))
    assert "search uses words only" in caplog.text


# --- a catalog made from the previous one ----------------------------------------------------


class CountingStore(EmbeddingStore):
    """An in-memory store counting the groups it is asked for."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(None, embedder=lambda: embedder)
        self.groups = 0

    def group_vectors(self, groups: Sequence[DocumentGroup]) -> list[Vectors] | None:
        self.groups += len(groups)
        return super().group_vectors(groups)


def test_a_catalog_from_the_previous_one_reuses_unchanged_servers() -> None:
    counting = Counting()
    store = CountingStore(counting)
    approval = lambda server, t: t.name == "send_email"  # noqa: E731  # one callable, kept
    first = Catalog(TOOLS, DESCRIPTIONS, embeddings=store, needs_approval=approval)
    first.ready().result()
    assert counting.documents == 25
    changed = {**TOOLS, "mail": [*TOOLS["mail"], tool("unsubscribe", "Leave a mailing list.")]}
    counting.documents = 0
    second = Catalog(
        changed, DESCRIPTIONS, embeddings=store, needs_approval=approval, previous=first
    )
    store.groups = 0
    second.ready().result()
    assert counting.documents == len(changed["mail"])  # only the changed server, embedded again
    assert store.groups == 1  # the other servers' vectors were not even looked up
    assert second.get("git", "git_log") is first.get("git", "git_log")  # entries reused
    assert second.get("mail", "send_email").needs_approval
    fresh = Catalog(
        changed,
        DESCRIPTIONS,
        embeddings=EmbeddingStore(None),
        background=False,
        needs_approval=approval,
    )
    for query in ("leave a mailing list", "remove a meeting", "commit history", "git_log"):
        assert second.search(query, limit=10) == fresh.search(query, limit=10)


def test_a_catalog_without_the_previous_search_index_still_reuses_later() -> None:
    counting = Counting()
    store = EmbeddingStore(None, embedder=lambda: counting)
    first = Catalog(TOOLS, DESCRIPTIONS, embeddings=store)
    first.ready().result()
    unsearched = Catalog(TOOLS, DESCRIPTIONS, embeddings=store, previous=first)
    third = Catalog(TOOLS, DESCRIPTIONS, embeddings=store, previous=unsearched)
    counting.documents = 0
    assert names(third.search("remove a meeting"))[0] == ("calendar", "delete_event")
    assert counting.documents == 0


def test_a_changed_description_or_ranking_is_not_reused() -> None:
    counting = Counting()
    store = EmbeddingStore(None, embedder=lambda: counting)
    first = Catalog(TOOLS, DESCRIPTIONS, embeddings=store)
    first.ready().result()
    counting.documents = 0
    described = {**DESCRIPTIONS, "git": "Source history"}
    second = Catalog(TOOLS, described, embeddings=store, previous=first)
    assert names(second.search("source history"))[0][0] == "git"
    assert counting.documents == len(TOOLS["git"])
    third = Catalog(TOOLS, described, ranking=LEXICAL, embeddings=store, previous=second)
    assert names(third.search("git_log"))[0] == ("git", "git_log")
    assert counting.documents == len(TOOLS["git"])  # lexical: no embedding at all


def test_identifiers_follow_the_new_server_list() -> None:
    first = Catalog({"a-b": [tool("x")]}, background=False)
    second = Catalog({"a_b": [tool("y")], "a-b": [tool("x")]}, previous=first)
    assert second.get("a-b", "x").server_id == "a_b_2"
    assert second.search("x")[0].signature.startswith("tools.a_b_2.x(")


def test_ready_means_the_model_for_queries_is_loaded_too() -> None:
    c = Catalog(TOOLS, DESCRIPTIONS, embeddings=STORE)
    c.ready().result(timeout=60)
    started = time.perf_counter()
    assert names(c.search("unread letters"))[0][0] == "mail"  # meaning: the model answers
    assert time.perf_counter() - started < 1

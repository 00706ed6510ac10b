"""`term_cache`: each upstream's BM25 terms on disk; a hit tokenises nothing, a miss rebuilds."""

from __future__ import annotations

from pathlib import Path

import numpy
import pytest

from mcp_code_mode import disk_cache, packed, term_cache
from mcp_code_mode.catalog import Catalog
from mcp_code_mode.embeddings import EmbeddingStore
from mcp_code_mode.lexical import ToolTerms
from mcp_code_mode.ranking import Ranking
from mcp_code_mode.search_index import ToolGroup
from mcp_code_mode.term_cache import TermCache
from tests.test_catalog import DESCRIPTIONS, TOOLS, tool

QUERIES = ["remove a meeting", "unread letters", "commit history", "scheudle", "readFile", "x"]


def catalog(directory: Path, tools: dict[str, list] = TOOLS, **options: object) -> Catalog:
    """A catalog as a fresh process makes it: no groups to reuse, the caches on disk (as
    when the process exits, which waits for the cache writer)."""
    built = Catalog(
        tools,
        DESCRIPTIONS,
        embeddings=EmbeddingStore(directory),
        background=False,
        **options,  # type: ignore[arg-type]
    )
    disk_cache.flush()
    return built


def files(directory: Path) -> dict[str, int]:
    """Each `.terms` file's inode: a file rewritten (by a miss) gets a new one."""
    return {p.name: p.stat().st_ino for p in directory.glob("*.terms")}


def without_snapshots(directory: Path) -> None:
    """Delete the whole-index snapshots: the next build reads each upstream's terms."""
    for path in directory.glob("*.index"):
        path.unlink()


def results(built: Catalog) -> list[list[tuple[str, str, float]]]:
    return [[(h.server, h.tool, h.score) for h in built.search(q, limit=10)] for q in QUERIES]


class Making:
    """A group's terms, made on request and counted."""

    def __init__(self, group: ToolGroup) -> None:
        self.group = group
        self.calls = 0

    def __call__(self) -> ToolTerms:
        self.calls += 1
        return ToolTerms.of(self.group.texts(), self.group.ranking)


def same_terms(a: ToolTerms, b: ToolTerms) -> bool:
    parts = [(a.own, b.own), (a.folded, b.folded)]
    return (
        numpy.array_equal(a.lengths, b.lengths)
        and a.surface == b.surface
        and all(
            x.terms == y.terms
            and all(numpy.array_equal(u, v) for u, v in ((x.term, y.term), (x.doc, y.doc)))
            and numpy.array_equal(x.count, y.count)
            for x, y in parts
        )
    )


def test_a_hit_reads_what_a_miss_made(tmp_path: Path) -> None:
    group = ToolGroup("mail", DESCRIPTIONS["mail"], TOOLS["mail"], Ranking())
    making = Making(group)
    args = (group.digest, len(group.tools), group.ranking, making)
    made, written = TermCache(tmp_path).terms(*args)
    disk_cache.flush()  # read back from the file, not from the write under way
    read, stored = TermCache(tmp_path).terms(*args)
    assert read is not made
    assert written and stored
    assert making.calls == 1
    assert same_terms(made, read)
    assert same_terms(read, ToolTerms.of(group.texts(), group.ranking))


def test_no_directory_caches_nothing(tmp_path: Path) -> None:
    group = ToolGroup("mail", DESCRIPTIONS["mail"], TOOLS["mail"], Ranking())
    making = Making(group)
    for _ in range(2):
        _, stored = TermCache(None).terms(group.digest, len(group.tools), group.ranking, making)
        assert not stored
    assert making.calls == 2


def test_a_restart_reads_every_upstreams_terms_and_ranks_the_same(tmp_path: Path) -> None:
    before = catalog(tmp_path)
    written = files(tmp_path)
    assert len(written) == len(TOOLS)  # one file per upstream, beside its vectors
    after = catalog(tmp_path)
    assert files(tmp_path) == written  # all hits: nothing rewritten
    assert results(after) == results(before)
    assert results(after) == results(catalog(tmp_path / "elsewhere"))  # as made afresh


def test_a_changed_tool_text_misses_for_its_upstream_alone(tmp_path: Path) -> None:
    catalog(tmp_path)
    written = files(tmp_path)
    mail = [*TOOLS["mail"][:-1], tool(TOOLS["mail"][-1].name, "Leave a mailing list.")]
    changed = catalog(tmp_path, {**TOOLS, "mail": mail})
    now = files(tmp_path)
    assert len(now) == len(TOOLS) + 1 and written.items() <= now.items()
    assert changed.search("leave a mailing list")[0].tool == mail[-1].name


def test_another_recipe_misses(tmp_path: Path) -> None:
    catalog(tmp_path)
    written = files(tmp_path)
    plain = catalog(tmp_path, ranking=Ranking(stem=False))
    now = files(tmp_path)
    assert len(now) == 2 * len(TOOLS) and written.items() <= now.items()
    assert results(plain) == results(catalog(tmp_path / "elsewhere", ranking=Ranking(stem=False)))


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one bit flipped
        lambda data: b"MCMTERMS" + bytes(len(data) - 8),  # zeros behind our magic
        lambda data: b"\x93NUMPY" + data[6:],  # another format
    ],
)
def test_a_damaged_file_is_ignored_and_made_again(tmp_path: Path, damage: object) -> None:
    expected = results(catalog(tmp_path))
    without_snapshots(tmp_path)
    originals = {path: path.read_bytes() for path in tmp_path.glob("*.terms")}
    for path, data in originals.items():
        path.write_bytes(damage(data))  # type: ignore[operator]
    assert results(catalog(tmp_path)) == expected
    assert {path: path.read_bytes() for path in originals} == originals  # made and written again


@pytest.mark.parametrize(
    ("part", "value"),
    [(1, 10**6), (1, -1), (2, 10**6), (3, 0), (0, -5)],
    ids=["term-past-the-words", "negative-term", "document-past-the-end", "zero-count", "length"],
)
def test_a_forged_file_with_a_valid_checksum_cannot_index_out_of_bounds(
    tmp_path: Path, part: int, value: int
) -> None:
    expected = results(catalog(tmp_path))
    without_snapshots(tmp_path)
    originals = {path: path.read_bytes() for path in tmp_path.glob("*.terms")}
    for path, original in originals.items():
        parts = packed.unpack(original, term_cache._MAGIC, "iiiiiiittt")
        assert parts is not None
        forged = numpy.array(parts[part])
        forged[0] = value
        parts[part] = forged
        path.write_bytes(packed.pack(term_cache._MAGIC, parts))  # a valid checksum
    assert results(catalog(tmp_path)) == expected
    assert {path: path.read_bytes() for path in originals} == originals  # refused, made again


def test_an_unwritable_directory_costs_nothing_but_the_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert results(catalog(blocker / "embeddings")) == results(catalog(tmp_path / "ok"))

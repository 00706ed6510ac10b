"""`index_snapshot`: a catalog whose upstreams are as they were reads its whole index from one
file; any change, damage or forgery is a miss built from the per-upstream caches."""

from __future__ import annotations

from pathlib import Path

import numpy
import pytest

from mcp_code_mode import disk_cache, index_snapshot, packed
from mcp_code_mode.catalog import Catalog
from mcp_code_mode.embeddings import EmbeddingStore
from mcp_code_mode.ranking import Ranking
from tests.test_catalog import DESCRIPTIONS, TOOLS, tool
from tests.test_embeddings import Counting
from tests.test_term_cache import QUERIES, results

SIZE = sum(len(tools) for tools in TOOLS.values())


def catalog(directory: Path, tools: dict[str, list] = TOOLS, **options: object) -> Catalog:
    """A catalog as a fresh process makes it, its cache files on disk once it is made."""
    store = options.pop("store", None) or EmbeddingStore(directory)
    built = Catalog(tools, DESCRIPTIONS, embeddings=store, background=False, **options)  # type: ignore[arg-type]
    disk_cache.flush()
    return built


def snapshots(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.index"))


def scores(built: Catalog) -> list[list[float]]:
    return [[h.score for h in built.search(q, limit=25)] for q in QUERIES]


def test_a_restart_reads_the_snapshot_alone_and_ranks_the_same(tmp_path: Path) -> None:
    cold = catalog(tmp_path)
    assert len(snapshots(tmp_path)) == 1
    for part in [*tmp_path.glob("*.terms"), *tmp_path.glob("*.vectors")]:
        part.unlink()  # only the snapshot can answer now
    counting = Counting()
    warm = catalog(tmp_path, store=EmbeddingStore(tmp_path, embedder=lambda: counting))
    assert results(warm) == results(cold) and scores(warm) == scores(cold)
    assert counting.documents == 0  # nothing embedded again
    assert not list(tmp_path.glob("*.terms"))  # nor tokenised: no term file was rewritten


def test_a_changed_upstream_misses_and_is_snapshotted_anew(tmp_path: Path) -> None:
    catalog(tmp_path)
    first = snapshots(tmp_path)
    changed_tools = {**TOOLS, "mail": [*TOOLS["mail"], tool("unsubscribe", "Leave a list.")]}
    counting = Counting()
    changed = catalog(
        tmp_path, changed_tools, store=EmbeddingStore(tmp_path, embedder=lambda: counting)
    )
    assert counting.documents == len(changed_tools["mail"])  # that upstream alone embedded
    assert len(snapshots(tmp_path)) == 2 and set(first) < set(snapshots(tmp_path))
    assert results(changed) == results(catalog(tmp_path / "fresh", changed_tools))
    assert changed.search("leave a list")[0].tool == "unsubscribe"


def test_a_snapshot_of_another_ranking_or_without_a_model_is_not_read(tmp_path: Path) -> None:
    catalog(tmp_path)
    plain = catalog(tmp_path, ranking=Ranking(stem=False))
    assert len(snapshots(tmp_path)) == 2
    assert results(plain) == results(catalog(tmp_path / "fresh", ranking=Ranking(stem=False)))


def test_a_build_whose_embeddings_failed_leaves_no_snapshot(tmp_path: Path) -> None:
    def broken() -> None:
        raise RuntimeError("no model today")

    words_only = catalog(tmp_path, store=EmbeddingStore(tmp_path, embedder=broken))
    assert words_only.search("remove a meeting")  # search goes on with words alone
    assert snapshots(tmp_path) == []  # a restart must not inherit words-only search
    assert scores(catalog(tmp_path)) == scores(catalog(tmp_path / "fresh"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: data[: len(data) // 2],
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),
        lambda data: b"MCMTERM2" + data[8:],  # another cache's magic
    ],
)
def test_a_damaged_snapshot_is_ignored_and_written_again(tmp_path: Path, damage: object) -> None:
    expected = scores(catalog(tmp_path))
    (path,) = snapshots(tmp_path)
    original = path.read_bytes()
    path.write_bytes(damage(original))  # type: ignore[operator]
    assert scores(catalog(tmp_path)) == expected
    assert path.read_bytes() == original


def forge(path: Path, part: int, change: object) -> None:
    """Rewrite one part of the snapshot at `path`, with a valid checksum."""
    parts = packed.unpack(path.read_bytes(), index_snapshot._MAGIC, index_snapshot._KINDS)
    assert parts is not None
    parts[part] = change(parts[part])  # type: ignore[operator]
    path.write_bytes(packed.pack(index_snapshot._MAGIC, parts))


def _set(i: int, value: float):  # type: ignore[no-untyped-def]
    def change(array: numpy.ndarray) -> numpy.ndarray:
        out = numpy.array(array)
        out[i] = value
        return out

    return change


@pytest.mark.parametrize(
    ("part", "change"),
    [
        (1, _set(0, 10**6)),  # a document past the catalog
        (1, _set(0, -1)),
        (3, _set(1, 10**9)),  # a term's postings past the end
        (3, _set(0, 1)),
        (0, lambda words: words + "\nextra"),  # one word more than the index has
        (0, lambda words: "\n".join([words.split("\n")[0]] * (words.count("\n") + 1))),
        (2, _set(0, float("nan"))),
        (9, lambda shape: numpy.array([SIZE + 1, 256], dtype=numpy.int64)),
        (10, _set(0, float("inf"))),
    ],
    ids=[
        "doc-past-end",
        "doc-negative",
        "start-past-end",
        "starts-not-from-zero",
        "extra-word",
        "repeated-words",
        "nan-score",
        "vector-rows",
        "inf-vector",
    ],
)
def test_a_forged_snapshot_with_a_valid_checksum_is_refused(
    tmp_path: Path, part: int, change: object
) -> None:
    expected = scores(catalog(tmp_path))
    (path,) = snapshots(tmp_path)
    original = path.read_bytes()
    forge(path, part, change)
    assert scores(catalog(tmp_path)) == expected
    assert path.read_bytes() == original  # refused, joined again and rewritten

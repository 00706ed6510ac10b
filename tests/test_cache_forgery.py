"""Cache files someone else wrote: whatever is in them (a valid checksum included), search
stays right or falls back to making the part again; nothing hangs, blows up or stays broken."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy
import pytest

from mcp_code_mode import disk_cache, embedder, embeddings, index_snapshot, packed, term_cache
from tests.test_index_snapshot import catalog, scores, snapshots
from tests.test_term_cache import without_snapshots


def rewrite(path: Path, magic: bytes, kinds: str, change: Any) -> None:
    parts = packed.unpack(path.read_bytes(), magic, kinds)
    assert parts is not None
    change(parts)
    path.write_bytes(packed.pack(magic, parts))


def vectors_as(shape: tuple[int, int], fill: float) -> Any:
    def change(parts: list[Any]) -> None:
        parts[0] = numpy.array(shape, dtype=numpy.int64)
        parts[1] = numpy.full(shape[0] * shape[1], fill, dtype=numpy.float16)

    return change


@pytest.mark.parametrize(
    ("dim", "fill"),
    [(3, 0.1), (0, 0.0), (256, float("nan")), (256, float("inf")), (256, 100.0)],
    ids=["dim-3", "dim-0", "nan", "inf", "norm-1600"],
)
def test_forged_vector_files_are_embedded_again(tmp_path: Path, dim: int, fill: float) -> None:
    expected = scores(catalog(tmp_path))
    without_snapshots(tmp_path)
    files = sorted(tmp_path.glob("*.vectors"))
    for path in files:
        rows = int(packed.unpack(path.read_bytes(), embeddings._MAGIC, "qe")[0][0])  # type: ignore[index]
        rewrite(path, embeddings._MAGIC, "qe", vectors_as((rows, dim), fill))
    assert scores(catalog(tmp_path)) == expected
    for path in files:  # made again and rewritten: the next start reads good ones
        parts = packed.unpack(path.read_bytes(), embeddings._MAGIC, "qe")
        assert parts is not None and int(parts[0][1]) == embedder.DIM  # type: ignore[index]


@pytest.mark.parametrize("dim", [3, 0])
def test_a_snapshot_with_vectors_of_another_size_is_refused(tmp_path: Path, dim: int) -> None:
    expected = scores(catalog(tmp_path))
    (path,) = snapshots(tmp_path)
    original = path.read_bytes()

    def change(parts: list[Any]) -> None:
        rows = int(parts[9][0])
        parts[9] = numpy.array([rows, dim], dtype=numpy.int64)
        parts[10] = numpy.full(rows * dim, 0.1, dtype=numpy.float16)

    rewrite(path, index_snapshot._MAGIC, index_snapshot._KINDS, change)
    assert scores(catalog(tmp_path)) == expected
    assert path.read_bytes() == original


def test_scores_past_any_bm25_weight_are_refused(tmp_path: Path) -> None:
    expected = scores(catalog(tmp_path))
    (path,) = snapshots(tmp_path)

    def change(parts: list[Any]) -> None:
        parts[2] = numpy.full_like(parts[2], 3e38)

    rewrite(path, index_snapshot._MAGIC, index_snapshot._KINDS, change)
    assert scores(catalog(tmp_path)) == expected


@pytest.mark.timeout(60)
def test_a_fifo_in_place_of_a_cache_file_does_not_hang_the_build(tmp_path: Path) -> None:
    expected = scores(catalog(tmp_path))
    (path,) = snapshots(tmp_path)
    path.unlink()
    os.mkfifo(path)
    for part in tmp_path.glob("*.terms"):
        part.unlink()
        os.mkfifo(part)
    assert scores(catalog(tmp_path)) == expected


def test_term_lengths_of_zero_are_refused(tmp_path: Path) -> None:
    expected = scores(catalog(tmp_path))
    without_snapshots(tmp_path)
    for path in tmp_path.glob("*.terms"):

        def change(parts: list[Any]) -> None:
            parts[0] = numpy.zeros_like(parts[0])

        rewrite(path, term_cache._MAGIC, "iiiiiiittt", change)
    assert scores(catalog(tmp_path)) == expected


def test_a_forged_surface_word_costs_a_typo_query_nothing(tmp_path: Path) -> None:
    catalog(tmp_path)
    without_snapshots(tmp_path)
    for path in tmp_path.glob("*.terms"):

        def change(parts: list[Any]) -> None:
            parts[9] = "q" * 20_000

        rewrite(path, term_cache._MAGIC, "iiiiiiittt", change)
    built = catalog(tmp_path)
    started = time.perf_counter()
    built.search("calendr evnets")  # typos: the repair index is built now
    assert time.perf_counter() - started < 5  # 7 s and 1.1 GB before the bound


def test_a_write_that_fails_half_way_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "entry.bin"
    target.mkdir()  # the rename onto it fails after the bytes are written
    (target / "x").write_text("keeps the directory non-empty")
    assert disk_cache.write_later(target, b"data", bytes, "test cache").result(30) is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry.bin"]

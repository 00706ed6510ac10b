"""A catalog's whole search index on disk: a restart with the same upstreams reads one file.

The per-upstream caches (`term_cache`, the embedding cache) spare a restart the tokenising and
the embedding, but joining 700 upstreams' parts still reads 1,400 files and sorts every
posting (a third of a second at 10,000 tools). A snapshot is the joined result: both BM25
indexes, the words typos are repaired to, and the embedding matrix, named by a hash of every
upstream's text digest in order, the recipe that makes terms and the model. A catalog whose
upstreams are all as they were reads it and is done; any change is a miss, built from the
per-upstream caches as before, and a new snapshot is handed to the cache writer. A few are
kept: each is about the index's size (~15 MB at 10,000 tools). The file is a `packed` blob;
one that is damaged, forged or of another shape is a miss.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy
from numpy.typing import NDArray

from . import disk_cache, packed
from .embedder import DIM, Vectors
from .embeddings import plausible
from .lexical import Ints, LexicalParts, TermIndex
from .ranking import Ranking
from .term_cache import terms_recipe

__all__ = ["IndexSnapshots", "Snapshot"]

_MAGIC = b"MCMSNAP1"  # `packed` parts: two indexes (vocabulary, docs, data, starts), surface,
_KINDS = "tifq" * 2 + "tqe"  # vectors' (rows, dim), vectors as float16
_SUFFIX = ".index"
_DISK_FILES = 8  # snapshots kept; the oldest go first past this
_MAX_SCORE = 100.0  # a BM25 weight is idf (< 25 for any catalog) times a share of 1


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A catalog's joined search index: the BM25 parts, and the tools' embeddings (None:
    the catalog searches words alone)."""

    lexical: LexicalParts
    vectors: Vectors | None


class IndexSnapshots:
    """Snapshots by what they were made of, as files under `directory` (None: none kept).

    Args:
        directory: where `.index` files go, beside the other caches.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def path(self, digests: Sequence[str], ranking: Ranking, model: str | None) -> Path | None:
        """Where the snapshot of groups with these text digests (in catalog order) is kept;
        `model`: the embedding model's fingerprint, None for words alone."""
        if self.directory is None:
            return None
        key = hashlib.sha256(_MAGIC + b"\x1e" + terms_recipe(ranking))
        key.update(f"\x1e{model or '-'}\x1e{' '.join(digests)}".encode())
        return self.directory / f"{key.hexdigest()}{_SUFFIX}"

    def read(self, path: Path, size: int) -> Snapshot | None:
        """The snapshot at `path` of `size` tools (in memory while still being written), or
        None when there is none, or the file is anything else."""
        found = disk_cache.pending(path)
        if isinstance(found, Snapshot) and found.lexical.size == size:
            return found
        try:
            data = disk_cache.read_regular(path)
            return _decode(data, size) if data is not None else None
        except OSError:  # absent or unreadable: built from the parts
            return None

    def write(self, path: Path, snapshot: Snapshot) -> None:
        """Hand `snapshot` to the cache writer; prune old ones after it."""
        assert self.directory is not None
        disk_cache.write_later(path, snapshot, _encode, "search index snapshot")
        disk_cache.prune_later(self.directory, f"*{_SUFFIX}", _DISK_FILES, "search index snapshot")


def _encode(snapshot: Snapshot) -> bytes:
    lexical, vectors = snapshot.lexical, snapshot.vectors
    shape = numpy.array(vectors.shape if vectors is not None else (0, 0), dtype=numpy.int64)
    rows = vectors if vectors is not None else numpy.zeros((0, 0))
    parts = [*_index_parts(lexical.folded), *_index_parts(lexical.own), lexical.surface, shape]
    return packed.pack(_MAGIC, [*parts, rows.astype(numpy.float16).ravel()])


def _index_parts(index: TermIndex) -> list[packed.Part]:
    return ["\n".join(index.vocabulary), index.docs, index.data, index.starts]


def _decode(data: bytes, size: int) -> Snapshot | None:
    """The snapshot `_encode` wrote, of `size` tools; None for anything else. Every value an
    index is read with is checked, so even a forged file with a valid checksum cannot index
    out of bounds (it can only rank badly)."""
    parts = packed.unpack(data, _MAGIC, _KINDS)
    if parts is None:
        return None
    folded, own = _index(parts[0:4], size), _index(parts[4:8], size)
    surface = cast(str, parts[8])
    shape, flat = cast(list[NDArray[numpy.generic]], parts[9:])
    rows, dim = (int(n) for n in shape) if shape.size == 2 else (-1, -1)
    if folded is None or own is None or rows not in (0, size) or flat.size != rows * dim:
        return None
    if rows and (dim != DIM or not plausible(flat.reshape(rows, dim))):
        return None
    vectors = flat.reshape(rows, dim).astype(numpy.float32) if rows else None
    return Snapshot(LexicalParts(size, surface, folded, own), vectors)


def _index(parts: list[packed.Part], size: int) -> TermIndex | None:
    words, docs, data, starts = parts
    vocabulary = cast(str, words).split("\n") if words else []
    terms = {t: i for i, t in enumerate(vocabulary)}
    docs, starts = cast(Ints, docs), cast(NDArray[numpy.int64], starts)
    data = cast(NDArray[numpy.float32], data)
    valid = (
        len(terms) == len(vocabulary)
        and starts.size == len(vocabulary) + 1
        and int(starts[0]) == 0
        and int(starts[-1]) == docs.size == data.size
        and bool((numpy.diff(starts) >= 0).all())
        and (docs.size == 0 or (int(docs.min()) >= 0 and int(docs.max()) < size))
        and bool(numpy.isfinite(data).all())
        and (data.size == 0 or (float(data.min()) >= 0 and float(data.max()) <= _MAX_SCORE))
    )
    return TermIndex(terms, docs, data, starts) if valid else None

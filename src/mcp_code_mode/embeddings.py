"""The vectors of tool texts for search, in memory and cached on disk.

`EmbeddingStore` keeps the vectors of groups of texts (one upstream's tools) in memory and as
`.vectors` files under the cache directory, keyed by the model and the texts: a restart, or a
catalog rebuilt because another upstream's tools changed, embeds nothing again. The vectors
themselves are `embedder.Embedder`'s (wordllama's static embeddings, offline).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy
from numpy.typing import NDArray

from . import disk_cache, packed
from .embedder import DIM, Embedder, Vectors, load_embedder, model_fingerprint
from .settings import cache_root

__all__ = [
    "DocumentGroup",
    "EmbeddingStore",
    "default_cache_dir",
    "plausible",
]

_MEMORY_GROUPS = 4096  # vector groups kept in memory, across catalogs
_DISK_FILES = 2000  # cached groups on disk; the oldest go first past this
_MAGIC = b"MCMVECT1"  # `packed` parts: (rows, dim), the rows as float16
_SUFFIX = ".vectors"


def default_cache_dir() -> Path:
    """`<MCP_CODE_CACHE_DIR or XDG_CACHE_HOME or ~/.cache>/mcp-code-mode/embeddings`."""
    return cache_root() / "embeddings"


@dataclass(frozen=True, slots=True)
class DocumentGroup:
    """Documents embedded and cached together, named by what they are made from.

    Args:
        sources: texts that determine the documents (hashed into the cache key); the same
            sources must always make the same documents.
        rows: how many documents `documents()` makes.
        documents: makes the documents; called only when the group is not cached.
    """

    sources: Sequence[Sequence[str]]
    rows: int
    documents: Callable[[], Sequence[Sequence[str]]]

    @classmethod
    def of(cls, documents: Sequence[Sequence[str]]) -> DocumentGroup:
        """Documents named by themselves."""
        return cls(documents, len(documents), lambda: documents)


class EmbeddingStore:
    """Vectors of groups of texts, in memory and on disk, keyed by the model and the texts.

    Args:
        directory: where `.vectors` files go; None keeps vectors in memory only. A directory that
            cannot be written to is the same as None (search still works, restarts re-embed).
        embedder: what embeds a missing group; defaults to `load_embedder`, called only on a miss.
    """

    def __init__(
        self,
        directory: Path | None,
        *,
        embedder: Callable[[], Embedder | None] = load_embedder,
    ) -> None:
        self.directory = directory
        self.embedder = embedder
        self._memory: dict[str, Vectors] = {}
        self._lock = threading.Lock()

    @classmethod
    @functools.cache
    def default(cls) -> EmbeddingStore:
        """The process-wide store under `default_cache_dir()`."""
        return cls(default_cache_dir())

    def vectors(self, groups: Sequence[Sequence[Sequence[str]]]) -> Vectors | None:
        """The rows of every group's documents (`Embedder.embed_documents`), concatenated in
        order; None without a model."""
        parts = self.group_vectors([DocumentGroup.of(documents) for documents in groups])
        if parts is None:
            return None
        return numpy.concatenate(parts) if parts else numpy.zeros((0, 1), dtype=numpy.float32)

    def group_vectors(self, groups: Sequence[DocumentGroup]) -> list[Vectors] | None:
        """The rows of each group's documents, one array per group; None without a model.
        A group found in memory or on disk (by its sources) is not made or embedded again."""
        fingerprint = model_fingerprint()
        if fingerprint is None:
            return None
        keys = [_key(fingerprint, group.sources) for group in groups]  # one per upstream
        parts = [self._cached(key, group.rows) for key, group in zip(keys, groups, strict=True)]
        missing = [i for i, found in enumerate(parts) if found is None]
        if not missing:
            return cast(list[Vectors], parts)
        embedder = self.embedder()
        if embedder is None:
            return None
        # embedded in one go: words the upstreams share are tokenized and summed once
        documents = [groups[i].documents() for i in missing]
        made = embedder.embed_documents([d for group in documents for d in group])
        embedder.release_table()
        ends = list(itertools.accumulate(len(group) for group in documents))
        for i, start, end in zip(missing, [0, *ends], ends, strict=False):
            parts[i] = made[start:end]
            self._keep(keys[i], made[start:end])
        if self.directory is not None:
            self._prune()
        return cast(list[Vectors], parts)

    def _cached(self, key: str, rows: int) -> Vectors | None:
        with self._lock:
            found = self._memory.get(key)
        if found is not None or self.directory is None:
            return found
        path = self.directory / f"{key}{_SUFFIX}"
        writing = disk_cache.pending(path)
        if isinstance(writing, numpy.ndarray) and writing.shape[0] == rows:
            return writing
        try:
            loaded = _read_rows(path, rows)
        except OSError:  # absent or unreadable: embed again
            return None
        if loaded is None:  # not what we write: embed again
            return None
        return loaded.astype(numpy.float32)

    def _keep(self, key: str, vectors: Vectors) -> None:
        """Write `vectors` to disk in the cache writer's thread (kept in memory if that
        fails), else keep them in memory."""
        if self.directory is None:
            self._remember(key, vectors)
            return
        path = self.directory / f"{key}{_SUFFIX}"

        def kept(written: Future[bool]) -> None:
            if not written.result():  # a read-only or full disk costs memory, not re-embedding
                self._remember(key, vectors)

        disk_cache.write_later(path, vectors, _packed, "embedding cache").add_done_callback(kept)

    def _remember(self, key: str, vectors: Vectors) -> None:
        with self._lock:
            if len(self._memory) >= _MEMORY_GROUPS:
                self._memory.clear()
            self._memory[key] = vectors

    def _prune(self) -> None:
        """Keep the newest `_DISK_FILES` files (after the writes handed over before)."""
        assert self.directory is not None
        disk_cache.prune_later(self.directory, f"*{_SUFFIX}", _DISK_FILES, "embedding cache")


def _packed(vectors: Vectors) -> bytes:
    """`vectors` at float16 precision, with their shape (`packed` parts)."""
    shape = numpy.array(vectors.shape, dtype=numpy.int64)
    return packed.pack(_MAGIC, [shape, vectors.astype(numpy.float16).ravel()])


def _read_rows(path: Path, rows: int) -> NDArray[numpy.float16] | None:
    """The float16 matrix of `rows` rows `_packed` wrote to `path`, or None when the file
    holds anything else (a catalog of 700 upstreams reads 700 files at start-up)."""
    data = disk_cache.read_regular(path)
    parts = packed.unpack(data, _MAGIC, "qe") if data is not None else None
    if parts is None:
        return None
    shape, flat = cast(list[NDArray[Any]], parts)
    if shape.size != 2 or (int(shape[0]), int(shape[1])) != (rows, DIM) or flat.size != rows * DIM:
        return None
    matrix = cast(NDArray[numpy.float16], flat.reshape(rows, DIM))
    return matrix if plausible(matrix) else None


def plausible(vectors: NDArray[Any]) -> bool:
    """Whether `vectors` can be what we embed: finite, each row of unit length or zero (a
    forged file must not make scores past 1, or NaN)."""
    if not bool(numpy.isfinite(vectors).all()):
        return False
    norms = numpy.linalg.norm(vectors.astype(numpy.float32), axis=1)
    return bool((norms <= 1.01).all())


def _key(fingerprint: str, documents: Sequence[Sequence[str]]) -> str:
    """sha256 of the fingerprint, then each text after a 0x1f and each document after a 0x1e
    (one string hashed once: a hash update per text costs more than the hashing)."""
    joined = "".join("\x1f" + "\x1f".join(d) + "\x1e" if d else "\x1e" for d in documents)
    digest = hashlib.sha256(fingerprint.encode())
    digest.update(joined.encode("utf-8", "replace"))
    return digest.hexdigest()

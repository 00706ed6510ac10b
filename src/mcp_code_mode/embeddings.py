"""Sentence vectors for tool search: wordllama's static embeddings, offline, cached on disk.

The model is the `wordllama` package's own files (a 32k-token, 256-dim embedding table and its
tokenizer, inside the wheel): a text's vector is the mean of its tokens' rows, as wordllama's
inference computes it, at unit length. Nothing is downloaded. The package is located but not
imported (its `__init__` configures the root logger and pulls in pydantic and requests); the
table is memory-mapped, so loading costs ~0.1 s (the tokenizer) and pages are read on use.

`EmbeddingStore` keeps the vectors of groups of texts (one upstream's tools) in memory and as
`.vectors` files under the cache directory, keyed by the model and the texts: a restart, or a
catalog rebuilt because another upstream's tools changed, embeds nothing again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import itertools
import json
import logging
import mmap
import struct
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy
from numpy.typing import NDArray
from tokenizers import Tokenizer

from . import disk_cache, packed
from .settings import cache_root

__all__ = [
    "DIM",
    "DocumentGroup",
    "Embedder",
    "EmbeddingStore",
    "Vectors",
    "default_cache_dir",
    "load_embedder",
    "plausible",
]

logger = logging.getLogger(__name__)

Vectors = NDArray[numpy.float32]
"""Rows of unit length (or zero, for a text without tokens), one per text."""

_PACKAGE, _MODEL = "wordllama", "l2_supercat"
_WEIGHTS = f"weights/{_MODEL}_256.safetensors"
_TOKENIZER = f"tokenizers/{_MODEL}_tokenizer_config.json"
_TENSOR = "embedding.weight"
_MAX_TEXT_CHARS = 4000  # of one text: a hostile upstream's megabyte description costs no more
_MEMORY_GROUPS = 4096  # vector groups kept in memory, across catalogs
_DISK_FILES = 2000  # cached groups on disk; the oldest go first past this
_FORMAT = 3  # bump when what is stored changes shape or meaning
DIM = 256  # the model's vector size (`_WEIGHTS`)
_MAGIC = b"MCMVECT1"  # `packed` parts: (rows, dim), the rows as float16
_SUFFIX = ".vectors"
_FEW_WORDS = 64  # of a text embedded on its own (a query), by the simple path
_CHUNK_WORDS = 16384  # words of texts summed at once (a chunk's rows: 16 MB)
_KEPT_WORDS = 200_000  # words whose tokens are kept between calls; all forgotten past this


class Embedder:
    """Text → unit vector: the mean of the text's token embeddings.

    Args:
        tokenizer: wordllama's tokenizer (no special tokens added).
        table: the token embedding table, (vocabulary, dim).
    """

    def __init__(self, tokenizer: Tokenizer, table: NDArray[numpy.float16]) -> None:
        self.tokenizer = tokenizer
        self.table = table
        self.dim = int(table.shape[1])
        self._ids: dict[str, list[int]] = {}  # each word's tokens, kept across calls

    def embed_documents(self, documents: Sequence[Sequence[str]]) -> Vectors:
        """One row per document: the mean of its texts' vectors (views of one thing, such as
        a tool's name and its whole description), rounded to float16 precision so that a
        vector read back from the disk cache ranks exactly as a fresh one."""
        texts = [text for document in documents for text in document]
        counts = numpy.array([len(document) for document in documents], dtype=numpy.intp)
        out = numpy.zeros((len(documents), self.dim), dtype=numpy.float32)
        if texts:
            starts = numpy.concatenate(([0], numpy.cumsum(counts)[:-1]))
            sums = numpy.add.reduceat(self.embed(texts), starts[counts > 0], axis=0)
            out[counts > 0] = sums / counts[counts > 0, None]
        return out.astype(numpy.float16).astype(numpy.float32)

    def release_table(self) -> None:
        """Give back the table's pages read so far (a batch's: most of its 16 MB)."""
        if isinstance(pages := getattr(self.table, "base", None), mmap.mmap):
            pages.madvise(mmap.MADV_DONTNEED)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, in order.

        The tokenizer merges no token across a space, so a text's tokens are those of its
        words: each distinct word is tokenized and summed once (tool texts repeat words),
        which is several times faster than tokenizing whole texts. Runs of whitespace count
        as one space."""
        out = numpy.zeros((len(texts), self.dim), dtype=numpy.float32)
        # the tokenizer refuses lone surrogates: they become U+FFFD, as on the wire (§7)
        split = [t[:_MAX_TEXT_CHARS].encode("utf-8", "replace").decode().split() for t in texts]
        if len(split) == 1 and len(split[0]) <= _FEW_WORDS:  # a query: fewer numpy calls
            ids = numpy.array([*itertools.chain(*self._word_ids(split[0]))], dtype=numpy.int64)
            if ids.size:
                rows = self.table[numpy.clip(ids, 0, self.table.shape[0] - 1)]
                out[0] = rows.astype(numpy.float32).sum(axis=0) / ids.size
            norm = numpy.linalg.norm(out[0])
            return out / norm if norm > 0 else out
        every_word = itertools.chain.from_iterable(split)
        vocabulary = {w: i for i, w in enumerate(dict.fromkeys(every_word))}
        if not vocabulary:
            return out
        sums, counts = self._word_sums(list(vocabulary))
        lengths = numpy.fromiter(map(len, split), numpy.int64, len(split))
        every_word = itertools.chain.from_iterable(split)
        flat = numpy.fromiter(map(vocabulary.__getitem__, every_word), numpy.int64)
        ends = numpy.cumsum(lengths)
        first = 0
        while first < len(texts):  # texts in chunks of about _CHUNK_WORDS words
            last = max(int(numpy.searchsorted(ends, ends[first] + _CHUNK_WORDS)), first + 1)
            _sum_texts(out, first, last, ends, lengths, flat, sums, counts)
            first = last
        norms = numpy.linalg.norm(out, axis=1, keepdims=True)
        numpy.divide(out, norms, out=out, where=norms > 0)
        return out

    def _word_ids(self, words: list[str]) -> list[list[int]]:
        """Each word's token ids (kept across calls)."""
        missing = [w for w in dict.fromkeys(words) if w not in self._ids]
        if missing:
            if len(self._ids) + len(missing) > _KEPT_WORDS:
                self._ids.clear()
            encodings = self.tokenizer.encode_batch(missing, add_special_tokens=False)
            found = dict(zip(missing, (e.ids for e in encodings), strict=True))
            self._ids.update(found)
        else:
            found = {}
        return [self._ids.get(w) or found.get(w) or [] for w in words]

    def _word_sums(self, words: list[str]) -> tuple[Vectors, NDArray[numpy.float32]]:
        """Each word's token rows summed, and its number of tokens."""
        ids = self._word_ids(words)
        lengths = numpy.fromiter(map(len, ids), numpy.int64, len(ids))
        flat = numpy.fromiter(itertools.chain.from_iterable(ids), numpy.int64, int(lengths.sum()))
        rows = self.table[numpy.clip(flat, 0, self.table.shape[0] - 1)].astype(numpy.float32)
        sums = numpy.zeros((len(words), self.dim), dtype=numpy.float32)
        some = lengths > 0
        if some.any():
            starts = numpy.concatenate(([0], numpy.cumsum(lengths)[:-1]))
            sums[some] = numpy.add.reduceat(rows, starts[some], axis=0)
        return sums, lengths.astype(numpy.float32)


def _sum_texts(
    out: Vectors,
    first: int,
    last: int,
    ends: NDArray[numpy.int64],
    lengths: NDArray[numpy.int64],
    flat: NDArray[numpy.int64],
    sums: Vectors,
    counts: NDArray[numpy.float32],
) -> None:
    """`out[first:last]`: the mean token row of each text, from its words' sums."""
    start = int(ends[first] - lengths[first])
    words = flat[start : int(ends[last - 1])]
    some = lengths[first:last] > 0
    if not some.any():
        return
    starts = (ends[first:last] - lengths[first:last] - start)[some]
    total = numpy.add.reduceat(sums[words], starts, axis=0)
    tokens = numpy.add.reduceat(counts[words], starts)
    rows = numpy.arange(first, last)[some]
    numpy.divide(total, tokens[:, None], out=total, where=tokens[:, None] > 0)
    out[rows] = total


def _package_dir() -> Path | None:
    spec = importlib.util.find_spec(_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def _memory_map(path: Path) -> NDArray[numpy.float16]:
    """The float16 embedding table of a safetensors file, memory-mapped."""
    with path.open("rb") as file:
        (header_len,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(header_len))
    entry = header[_TENSOR]
    if entry["dtype"] != "F16" or len(entry["shape"]) != 2:
        raise ValueError(f"{path.name}: unexpected tensor {entry['dtype']} {entry['shape']}")
    start = 8 + header_len + int(entry["data_offsets"][0])
    rows, dim = (int(n) for n in entry["shape"])
    return numpy.memmap(path, dtype=numpy.float16, mode="r", offset=start, shape=(rows, dim))


@functools.cache
def model_fingerprint() -> str | None:
    """Names the model's files and version without loading them; None when they are missing."""
    directory = _package_dir()
    if directory is None or not (directory / _WEIGHTS).is_file():
        return None
    version = importlib.metadata.version(_PACKAGE)
    size = (directory / _WEIGHTS).stat().st_size
    return f"{_PACKAGE}-{version}-{_MODEL}-{size}-v{_FORMAT}"


_LOAD_LOCK = threading.Lock()


@functools.cache
def _load() -> Embedder | None:
    directory = _package_dir()
    if directory is None:
        logger.warning("tool search without embeddings: the %s package is not installed", _PACKAGE)
        return None
    try:
        tokenizer = Tokenizer.from_file(str(directory / _TOKENIZER))
        table = _memory_map(directory / _WEIGHTS)
    except (OSError, ValueError, KeyError) as exc:  # a broken install degrades search, no more
        logger.warning("tool search without embeddings: %s", exc)
        return None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return Embedder(tokenizer, table)


def load_embedder() -> Embedder | None:
    """The process's embedder, loaded once (thread-safe); None when the model is unavailable."""
    with _LOAD_LOCK:
        return _load()


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

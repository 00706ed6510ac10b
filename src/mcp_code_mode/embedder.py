"""Sentence vectors for tool search: wordllama's static embeddings, offline.

The model is the `wordllama` package's own files (a 32k-token, 256-dim embedding table and its
tokenizer, inside the wheel): a text's vector is the mean of its tokens' rows, as wordllama's
inference computes it, at unit length. Nothing is downloaded. The package is located but not
imported (its `__init__` configures the root logger and pulls in pydantic and requests); the
table is memory-mapped, so loading costs ~0.1 s (the tokenizer) and pages are read on use.
`embeddings.EmbeddingStore` keeps the vectors it makes.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import itertools
import json
import logging
import mmap
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy
from numpy.typing import NDArray
from tokenizers import Tokenizer

__all__ = ["DIM", "Embedder", "Vectors", "load_embedder", "model_fingerprint"]

logger = logging.getLogger(__name__)

Vectors = NDArray[numpy.float32]
"""Rows of unit length (or zero, for a text without tokens), one per text."""

_PACKAGE, _MODEL = "wordllama", "l2_supercat"
_WEIGHTS = f"weights/{_MODEL}_256.safetensors"
_TOKENIZER = f"tokenizers/{_MODEL}_tokenizer_config.json"
_TENSOR = "embedding.weight"
_MAX_TEXT_CHARS = 4000  # of one text: a hostile upstream's megabyte description costs no more
_FORMAT = 3  # in `model_fingerprint`: bump when what the caches store changes shape or meaning
DIM = 256  # the model's vector size (`_WEIGHTS`)
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

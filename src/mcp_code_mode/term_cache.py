"""One upstream's BM25 terms on disk, so a restart tokenises nothing again.

Finding the terms of 10,000 tools (splitting, stemming, folding) is most of a search index's
build; the result is a few arrays of integers and three word lists. `TermCache` keeps them in a
`.terms` file per upstream next to the embedding cache's vectors, named by a hash of the
recipe that makes terms (`lexical.TERMS_RECIPE`, the stemmer's version, the stop words and
concepts, the `Ranking`) and of the tools' texts. The file is raw little-endian arrays and
UTF-8 text behind a fixed header, read with `numpy.frombuffer` (no pickle, nothing executed);
a file that is not exactly what we write (truncated, damaged, another format) is a miss, and
the terms are made again and the file rewritten.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import os
import struct
import threading
from collections.abc import Callable
from pathlib import Path

import numpy
import Stemmer
from numpy.typing import NDArray

from .lexical import TERMS_RECIPE, Tokens, ToolTerms
from .ranking import Ranking
from .search_terms import CONCEPTS, STOP_WORDS

__all__ = ["TermCache"]

logger = logging.getLogger(__name__)

_MAGIC = b"MCMTERMS"
_FORMAT = 1  # bump when the file layout changes
_HEADER = struct.Struct("<8sI8Q")  # magic, format, then the counts below
_SUFFIX = ".terms"
_DISK_FILES = 2000  # cached groups on disk; the oldest go first past this
_INT = numpy.dtype("<i4")


class TermCache:
    """`ToolTerms` by the texts they were made of, as files under `directory`.

    Args:
        directory: where `.terms` files go; None keeps nothing (every lookup makes the
            terms). A directory that cannot be written to is the same as None.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def terms(
        self, texts_digest: str, rows: int, ranking: Ranking, make: Callable[[], ToolTerms]
    ) -> ToolTerms:
        """The terms of a group of `rows` tools whose texts hash to `texts_digest`: read from
        the cache, or made by `make` and written to it."""
        if self.directory is None:
            return make()
        path = self.directory / f"{_key(texts_digest, ranking)}{_SUFFIX}"
        try:
            found = _decode(path.read_bytes(), rows)
        except OSError:  # absent or unreadable: made again
            found = None
        if found is None:
            found = make()
            if self._write(path, found):
                self._prune()
        return found

    def _write(self, path: Path, terms: ToolTerms) -> bool:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            partial.write_bytes(_encode(terms))
            partial.replace(path)  # atomic: readers see all or nothing
        except OSError as exc:  # a read-only or full disk costs tokenising again, nothing else
            logger.info("search term cache not written: %s", exc)
            return False
        return True

    def _prune(self) -> None:
        """Keep the newest `_DISK_FILES` files."""
        assert self.directory is not None
        try:
            files = list(self.directory.glob(f"*{_SUFFIX}"))
            if len(files) <= _DISK_FILES:
                return
            files.sort(key=lambda p: p.stat().st_mtime)
            for stale in files[: len(files) - _DISK_FILES]:
                stale.unlink(missing_ok=True)
        except OSError as exc:  # another process pruning at the same time, or a gone directory
            logger.info("search term cache not pruned: %s", exc)


@functools.cache
def _recipe(ranking: Ranking) -> bytes:
    """Everything besides the texts that decides the terms."""
    vocabulary = repr((sorted(STOP_WORDS), sorted(CONCEPTS.items())))
    parts = [TERMS_RECIPE, f"format {_FORMAT}", f"PyStemmer {Stemmer.version()}", repr(ranking)]
    return "\x1f".join([*parts, hashlib.sha256(vocabulary.encode()).hexdigest()]).encode()


def _key(texts_digest: str, ranking: Ranking) -> str:
    return hashlib.sha256(_recipe(ranking) + b"\x1e" + texts_digest.encode()).hexdigest()


def _encode(terms: ToolTerms) -> bytes:
    own_terms, folded_terms = (_text(terms.own.terms), _text(terms.folded.terms))
    surface = terms.surface.encode()
    header = _HEADER.pack(
        _MAGIC,
        _FORMAT,
        terms.size,
        terms.shared,
        terms.own.ids.size,
        len(terms.own.terms),
        len(terms.folded.terms),
        len(own_terms),
        len(folded_terms),
        len(surface),
    )
    arrays = (terms.own_lengths, terms.own.ids, terms.folding)
    body = b"".join(numpy.ascontiguousarray(a, dtype=_INT).tobytes() for a in arrays)
    return header + body + own_terms + folded_terms + surface


def _text(words: list[str]) -> bytes:
    return "\n".join(words).encode()


def _decode(data: bytes, rows: int) -> ToolTerms | None:
    """The terms `_encode` wrote, or None when `data` is anything else (or of other rows)."""
    if len(data) < _HEADER.size:
        return None
    magic, form, size, shared, ids, own_count, folded_count, *blobs = _HEADER.unpack_from(data)
    if magic != _MAGIC or form != _FORMAT or size != rows:
        return None
    start = _HEADER.size
    ints = size + ids + own_count
    if len(data) != start + _INT.itemsize * ints + sum(blobs):
        return None
    every = numpy.frombuffer(data, _INT, ints, start)
    own_lengths, own_ids, folding = every[:size], every[size : size + ids], every[size + ids :]
    ends = numpy.cumsum([start + _INT.itemsize * ints, *blobs]).tolist()
    try:
        own_terms, folded_terms, surface = (data[a:b].decode() for a, b in itertools.pairwise(ends))
    except UnicodeDecodeError:
        return None
    own_words, folded_words = _words(own_terms), _words(folded_terms)
    consistent = (
        len(own_words) == own_count
        and len(folded_words) == folded_count
        and _within(own_lengths, ids + 1)
        and int(own_lengths.sum()) + shared == ids
        and _within(own_ids, own_count)
        and _within(folding, folded_count)
    )
    if not consistent:
        return None
    own = Tokens(own_words, own_ids)
    return ToolTerms(own_lengths, shared, own, folding, folded_words, surface)


def _words(text: str) -> list[str]:
    return text.split("\n") if text else []


def _within(values: NDArray[numpy.int32], end: int) -> bool:
    """Whether every value is in [0, end)."""
    return values.size == 0 or (int(values.min()) >= 0 and int(values.max()) < end)

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
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy
import Stemmer
from numpy.typing import NDArray

from .embeddings import prune_oldest
from .lexical import TERMS_RECIPE, Postings, ToolTerms
from .ranking import Ranking
from .search_terms import CONCEPTS, STOP_WORDS

__all__ = ["TermCache"]

logger = logging.getLogger(__name__)

_MAGIC = b"MCMTERMS"
_FORMAT = 1  # bump when the file layout changes
_HEADER = struct.Struct("<8sII8Q")  # magic, format, CRC-32 of the rest, 5 counts, 3 text sizes
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
        self._pruned = False  # once, at the first write (one cache serves one build)

    def terms(
        self, texts_digest: str, rows: int, ranking: Ranking, make: Callable[[], ToolTerms]
    ) -> tuple[ToolTerms, bool]:
        """The terms of a group of `rows` tools whose texts hash to `texts_digest`, read from
        the cache or made by `make` and written to it; and whether they are on disk now."""
        if self.directory is None:
            return make(), False
        path = self.directory / f"{_key(texts_digest, ranking)}{_SUFFIX}"
        try:
            found = _decode(path.read_bytes(), rows)
        except OSError:  # absent or unreadable: made again
            found = None
        if found is not None:
            return found, True
        made = make()
        written = self._write(path, made)
        if written and not self._pruned:
            self._pruned = True
            self._prune()
        return made, written

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
        prune_oldest(self.directory, f"*{_SUFFIX}", _DISK_FILES, "search term cache")


@functools.cache
def _recipe(ranking: Ranking) -> bytes:
    """Everything besides the texts that decides the terms."""
    vocabulary = repr((sorted(STOP_WORDS), sorted(CONCEPTS.items())))
    parts = [TERMS_RECIPE, f"format {_FORMAT}", f"PyStemmer {Stemmer.version()}", repr(ranking)]
    return "\x1f".join([*parts, hashlib.sha256(vocabulary.encode()).hexdigest()]).encode()


def _key(texts_digest: str, ranking: Ranking) -> str:
    return hashlib.sha256(_recipe(ranking) + b"\x1e" + texts_digest.encode()).hexdigest()


def _encode(terms: ToolTerms) -> bytes:
    own, folded = terms.own, terms.folded
    blobs = [_text(own.terms), _text(folded.terms), terms.surface.encode()]
    arrays = (terms.lengths, own.term, own.doc, own.count, folded.term, folded.doc, folded.count)
    body = b"".join([*(numpy.ascontiguousarray(a, dtype=_INT).tobytes() for a in arrays), *blobs])
    counts = (terms.size, own.term.size, len(own.terms), folded.term.size, len(folded.terms))
    return _HEADER.pack(_MAGIC, _FORMAT, zlib.crc32(body), *counts, *map(len, blobs)) + body


def _text(words: list[str]) -> bytes:
    return "\n".join(words).encode()


def _decode(data: bytes, rows: int) -> ToolTerms | None:
    """The terms `_encode` wrote, or None when `data` is anything else (or of other rows).
    The checksum finds a damaged file; the range checks keep even a forged one from
    indexing out of bounds (it can only rank badly)."""
    if len(data) < _HEADER.size:
        return None
    magic, form, crc, size, own_n, own_terms, folded_n, folded_terms, *blobs = _HEADER.unpack_from(
        data
    )
    ints = size + 3 * (own_n + folded_n)
    start = _HEADER.size + _INT.itemsize * ints
    if (magic, form, size) != (_MAGIC, _FORMAT, rows) or len(data) != start + sum(blobs):
        return None
    if zlib.crc32(memoryview(data)[_HEADER.size :]) != crc:
        return None
    every = numpy.frombuffer(data, _INT, ints, _HEADER.size)
    ends = itertools.accumulate([size, own_n, own_n, own_n, folded_n, folded_n, folded_n])
    lengths, *arrays = (every[a:b] for a, b in itertools.pairwise([0, *ends]))
    ends = itertools.accumulate([start, *blobs])
    try:
        own_text, folded_text, surface = (data[a:b].decode() for a, b in itertools.pairwise(ends))
    except UnicodeDecodeError:
        return None
    own = Postings(_words(own_text), *arrays[:3])
    folded = Postings(_words(folded_text), *arrays[3:])
    valid = (
        len(own.terms) == own_terms
        and len(folded.terms) == folded_terms
        and _within(lengths, 1 << 31)
        and _in_range(own, size)
        and _in_range(folded, size)
    )
    return ToolTerms(lengths, own, folded, surface) if valid else None


def _words(text: str) -> list[str]:
    return text.split("\n") if text else []


def _in_range(postings: Postings, size: int) -> bool:
    """Whether `postings` name only terms it has and documents there are, at least once."""
    return (
        _within(postings.term, len(postings.terms))
        and _within(postings.doc, size)
        and (postings.count.size == 0 or int(postings.count.min()) > 0)
    )


def _within(values: NDArray[numpy.int32], end: int) -> bool:
    """Whether every value is in [0, end)."""
    return values.size == 0 or (int(values.min()) >= 0 and int(values.max()) < end)

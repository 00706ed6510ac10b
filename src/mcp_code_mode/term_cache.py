"""One upstream's BM25 terms on disk, so a restart tokenises nothing again.

Finding the terms of 10,000 tools (splitting, stemming, folding) is most of a search index's
build; the result is a few arrays of integers and three word lists. `TermCache` keeps them in a
`.terms` file per upstream next to the embedding cache's vectors, named by a hash of the
recipe that makes terms (`lexical.TERMS_RECIPE`, the stemmer's version, the stop words and
concepts, the `Ranking`) and of the tools' texts. The file is a `packed` blob (arrays and
UTF-8 text behind a checksummed header, no pickle, nothing executed); a file that is not
exactly what we write (truncated, damaged, another format, values out of range) is a miss,
and the terms are made again and the file rewritten.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy
import Stemmer
from numpy.typing import NDArray

from . import disk_cache, packed
from .lexical import TERMS_RECIPE, Ints, Postings, ToolTerms
from .ranking import Ranking
from .search_terms import CONCEPTS, STOP_WORDS

__all__ = ["TermCache", "terms_recipe"]

_MAGIC = b"MCMTERM2"  # `packed` parts: 7 int32 arrays, 3 texts
_FORMAT = 2  # bump when the file layout changes
_SUFFIX = ".terms"
_DISK_FILES = 2000  # cached groups on disk; the oldest go first past this


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
        the cache or made by `make` and handed to the cache writer; and whether they are (or
        are being put) on disk."""
        if self.directory is None:
            return make(), False
        path = self.directory / f"{_key(texts_digest, ranking)}{_SUFFIX}"
        found = disk_cache.pending(path)
        if not isinstance(found, ToolTerms) or found.size != rows:
            try:
                data = disk_cache.read_regular(path)
                found = _decode(data, rows) if data is not None else None
            except OSError:  # absent or unreadable: made again
                found = None
        if found is not None:
            return found, True
        made = make()
        disk_cache.write_later(path, made, _encode, "search term cache")
        if not self._pruned:  # once per build, after its first write
            self._pruned = True
            disk_cache.prune_later(self.directory, f"*{_SUFFIX}", _DISK_FILES, "search term cache")
        return made, True


@functools.cache
def terms_recipe(ranking: Ranking) -> bytes:
    """Everything besides the texts that decides the terms."""
    vocabulary = repr((sorted(STOP_WORDS), sorted(CONCEPTS.items())))
    parts = [TERMS_RECIPE, f"format {_FORMAT}", f"PyStemmer {Stemmer.version()}", repr(ranking)]
    return "\x1f".join([*parts, hashlib.sha256(vocabulary.encode()).hexdigest()]).encode()


def _key(texts_digest: str, ranking: Ranking) -> str:
    return hashlib.sha256(terms_recipe(ranking) + b"\x1e" + texts_digest.encode()).hexdigest()


def _encode(terms: ToolTerms) -> bytes:
    own, folded = terms.own, terms.folded
    arrays = (terms.lengths, own.term, own.doc, own.count, folded.term, folded.doc, folded.count)
    texts = ("\n".join(own.terms), "\n".join(folded.terms), terms.surface)
    return packed.pack(_MAGIC, [*arrays, *texts])


def _decode(data: bytes, rows: int) -> ToolTerms | None:
    """The terms `_encode` wrote, or None when `data` is anything else (or of other rows).
    The checksum finds a damaged file; the range checks keep even a forged one from
    indexing out of bounds (it can only rank badly)."""
    parts = packed.unpack(data, _MAGIC, "iiiiiiittt")
    if parts is None:
        return None
    lengths, *arrays = cast(list[Ints], parts[:7])
    own_text, folded_text, surface = cast(list[str], parts[7:])
    own = Postings(_words(own_text), *arrays[:3])
    folded = Postings(_words(folded_text), *arrays[3:])
    valid = (
        lengths.size == rows
        and (lengths.size == 0 or int(lengths.min()) >= 1)  # every document has a term
        and _within(lengths, 1 << 31)
        and _in_range(own, rows)
        and _in_range(folded, rows)
    )
    return ToolTerms(lengths, own, folded, surface) if valid else None


def _words(text: str) -> list[str]:
    return text.split("\n") if text else []


def _in_range(postings: Postings, size: int) -> bool:
    """Whether `postings` name only terms it has and documents there are, at least once."""
    return (
        postings.term.size == postings.doc.size == postings.count.size
        and _within(postings.term, len(postings.terms))
        and _within(postings.doc, size)
        and (postings.count.size == 0 or int(postings.count.min()) > 0)
    )


def _within(values: NDArray[numpy.int32], end: int) -> bool:
    """Whether every value is in [0, end)."""
    return values.size == 0 or (int(values.min()) >= 0 and int(values.max()) < end)

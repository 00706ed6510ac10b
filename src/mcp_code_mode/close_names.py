"""The names closest to a misspelt one, quickly among many.

`difflib` compares a name with every candidate at a cost quadratic in their lengths: 10,000
tool names take a fifth of a second. `NameIndex` keeps the candidates' trigrams, picks the
few that share the most trigrams with the name (numpy work), and lets difflib rank those.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import numpy
from numpy.typing import NDArray

__all__ = ["NameIndex"]

_DIRECT = 200  # candidates difflib ranks on its own, without the trigram shortlist
_SHORTLIST = 40  # candidates sharing the most trigrams, ranked by difflib
_MAX_CHARS = 200  # of a name compared; a longer one resembles no name anyway
_CUTOFF = 0.5  # difflib similarity from which a name is offered


def _trigrams(name: str) -> set[str]:
    padded = f"  {name.lower()[:_MAX_CHARS]} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class NameIndex:
    """Candidate names, with their trigrams once there are many.

    Args:
        names: the candidates, in the order ties are offered.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(dict.fromkeys(names))
        self._longest = max(map(len, self.names), default=0)
        self._postings: dict[str, NDArray[numpy.int64]] | None = None
        if len(self.names) > _DIRECT:
            postings: dict[str, list[int]] = {}
            for i, name in enumerate(self.names):
                for gram in _trigrams(name):
                    postings.setdefault(gram, []).append(i)
            self._postings = {g: numpy.array(ids, dtype=numpy.int64) for g, ids in postings.items()}

    def closest(self, name: str, n: int = 5) -> list[str]:
        """Up to `n` candidates like `name`, most alike first (none when nothing is close)."""
        # a name far longer than every candidate resembles none of them (and costs difflib)
        if not self.names or len(name) > 2 * self._longest + 8:
            return []
        return difflib.get_close_matches(name, self._shortlist(name), n=n, cutoff=_CUTOFF)

    def _shortlist(self, name: str) -> list[str]:
        if self._postings is None:
            return self.names
        hits = [self._postings[g] for g in _trigrams(name) if g in self._postings]
        if not hits:
            return []
        shared = numpy.bincount(numpy.concatenate(hits), minlength=len(self.names))
        candidates = numpy.flatnonzero(shared)
        if candidates.size > _SHORTLIST:
            best = numpy.argsort(-shared[candidates], kind="stable")[:_SHORTLIST]
            candidates = numpy.sort(candidates[best])
        return [self.names[int(i)] for i in candidates]

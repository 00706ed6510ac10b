"""Arrays and texts in one checksummed blob, read back without pickle.

The search caches (`term_cache`, `index_snapshot`) store numpy arrays and word lists. A blob
is a fixed header (a magic naming the format, a CRC-32 of the rest, the number of parts), one
(kind, length) pair per part, then the parts, each array 8-byte aligned. `unpack` checks the
magic, the checksum, each part's kind against the one expected and every length against the
blob's size, and reads arrays with `numpy.frombuffer` (views, nothing executed): anything that
is not exactly what `pack` wrote is None. What the values mean (ranges, counts) the caller
checks: a forged blob with a valid checksum must still only rank badly.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Any

import numpy
from numpy.typing import NDArray

__all__ = ["TEXT", "Part", "pack", "unpack"]

TEXT = "t"
"""The kind of a text part (UTF-8); an array's kind is its dtype's character (`i`, `q`, `f`,
`e`: int32, int64, float32, float16), always little-endian."""

Part = NDArray[Any] | str

_HEAD = struct.Struct("<8sII")  # magic, CRC-32 of everything after the header, parts
_PART = struct.Struct("<cxxxxxxxQ")  # kind, length in items (arrays) or bytes (texts)
_DTYPES = {kind: numpy.dtype(f"<{kind}") for kind in "iqfe"}
_ALIGN = 8


def pack(magic: bytes, parts: Sequence[Part]) -> bytes:
    """`parts` behind a header `unpack` checks; arrays must be of a kind in `_DTYPES`."""
    table, bodies = [], []
    for part in parts:
        if isinstance(part, str):
            body, kind, length = part.encode(), TEXT, len(part.encode())
        else:
            kind = _kind(part.dtype)
            body = numpy.ascontiguousarray(part, dtype=_DTYPES[kind]).tobytes()
            length = part.size
        table.append(_PART.pack(kind.encode(), length))
        bodies.append(body + bytes(-len(body) % _ALIGN))
    rest = b"".join([*table, *bodies])
    return _HEAD.pack(magic, zlib.crc32(rest), len(parts)) + rest


def unpack(data: bytes, magic: bytes, kinds: str) -> list[Part] | None:
    """The parts `pack(magic, ...)` wrote, when they are of `kinds` (one character each, in
    order); None for anything else: another magic, damage, other kinds or lengths."""
    if len(data) < _HEAD.size:
        return None
    found, crc, count = _HEAD.unpack_from(data)
    if found != magic or count != len(kinds):
        return None
    start = _HEAD.size + _PART.size * count
    if len(data) < start or zlib.crc32(memoryview(data)[_HEAD.size :]) != crc:
        return None
    parts: list[Part] = []
    for i, expected in enumerate(kinds):
        kind, length = _PART.unpack_from(data, _HEAD.size + _PART.size * i)
        if kind != expected.encode():
            return None
        size = length if expected == TEXT else length * _DTYPES[expected].itemsize
        if start + size > len(data):
            return None
        parts.append(_part(data, expected, start, size, length))
        start += size + (-size % _ALIGN)
    return parts if start == len(data) and all(p is not None for p in parts) else None


def _kind(dtype: numpy.dtype[Any]) -> str:
    for kind, known in _DTYPES.items():
        if dtype == known:
            return kind
    raise TypeError(f"no packed kind for {dtype}")


def _part(data: bytes, kind: str, start: int, size: int, length: int) -> Any:
    if kind != TEXT:
        return numpy.frombuffer(data, _DTYPES[kind], length, start)
    try:
        return data[start : start + size].decode()
    except UnicodeDecodeError:
        return None

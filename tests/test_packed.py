"""`packed`: arrays and texts round-trip; any other bytes are None, never an exception."""

from __future__ import annotations

import struct
import zlib

import numpy
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_code_mode import packed

MAGIC = b"TESTBLOB"
PARTS = [
    numpy.array([1, -2, 3], dtype=numpy.int32),
    "words\nwith ünïcode 😀",
    numpy.array([0.5, numpy.float32(1e-3)], dtype=numpy.float32),
    numpy.array([2**40], dtype=numpy.int64),
    numpy.array([1.5, -0.25, 7], dtype=numpy.float16),
    "",
]
KINDS = "itfqet"
BLOB = packed.pack(MAGIC, PARTS)


def test_parts_round_trip() -> None:
    parts = packed.unpack(BLOB, MAGIC, KINDS)
    assert parts is not None and len(parts) == len(PARTS)
    for got, sent in zip(parts, PARTS, strict=True):
        if isinstance(sent, str):
            assert got == sent
        else:
            assert isinstance(got, numpy.ndarray) and got.dtype == sent.dtype
            assert numpy.array_equal(got, sent)


def test_another_magic_or_other_kinds_are_refused() -> None:
    assert packed.unpack(BLOB, b"OTHERONE", KINDS) is None
    assert packed.unpack(BLOB, MAGIC, "itfqei") is None  # the last part is text
    assert packed.unpack(BLOB, MAGIC, KINDS[:-1]) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_are_none_or_parts_never_an_error(data: bytes) -> None:
    assert packed.unpack(data, MAGIC, KINDS) is None or data == BLOB


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(BLOB) - 1), st.integers(1, 255), st.booleans())
def test_a_changed_or_cut_blob_is_refused(position: int, flip: int, cut: bool) -> None:
    changed = BLOB[:position] if cut else bytearray(BLOB)
    if not cut:
        changed[position] ^= flip  # type: ignore[index]
    assert packed.unpack(bytes(changed), MAGIC, KINDS) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 5))
def test_lengths_past_the_blob_are_refused_even_with_a_valid_checksum(length: int, i: int) -> None:
    head = struct.Struct("<8sII")
    table = bytearray(BLOB[head.size :])
    kind, old = struct.unpack_from("<cxxxxxxxQ", table, 16 * i)
    struct.pack_into("<cxxxxxxxQ", table, 16 * i, kind, length)
    forged = head.pack(MAGIC, zlib.crc32(table), len(PARTS)) + bytes(table)
    # never an error, never a read past the blob: at most the zero padding after a part
    # (8-byte alignment) is taken as one of its items, which the caller's checks then see
    itemsize = 1 if KINDS[i] == "t" else numpy.dtype(KINDS[i]).itemsize
    found = packed.unpack(forged, MAGIC, KINDS)
    assert found is None or (length - old) * itemsize < 8

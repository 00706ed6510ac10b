"""Make values safe to hand to the MCP layer: text that UTF-8 can encode, bounded nesting.

Python strings may hold lone surrogates (`'\\ud800'` from guest code, or an upstream's JSON
`"\\ud83d"`), which no UTF-8 writer accepts: fastmcp's stdio writer dies on them. Every
value that leaves the server (replies, tool arguments) passes through `make_encodable`,
which puts U+FFFD in place of what cannot be encoded (contract §7).
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

__all__ = ["MAX_DEPTH", "TooDeep", "clip", "encodable_text", "make_encodable", "wire_size"]

MAX_DEPTH = 200
"""Deepest nesting of lists and objects a value may have on its way out (serialisers
and clients give up around a few hundred levels)."""


class TooDeep(ValueError):
    """A value nested deeper than `MAX_DEPTH`."""


def encodable_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (fast when there is none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def make_encodable(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of a JSON value whose strings (keys included) UTF-8 can encode.

    Raises:
        TooDeep: the value is nested deeper than `max_depth`.
    """
    return _walk(value, 0, max_depth)


def _walk(value: Any, depth: int, max_depth: int) -> Any:
    if isinstance(value, str):
        return encodable_text(value)
    if isinstance(value, dict | list | tuple):
        if depth >= max_depth:
            raise TooDeep(f"the value is nested deeper than {max_depth} levels")
        if isinstance(value, dict):
            return {
                encodable_text(str(k)): _walk(v, depth + 1, max_depth) for k, v in value.items()
            }
        return [_walk(v, depth + 1, max_depth) for v in value]
    return value


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters cut]"


def wire_size(value: Any, limit: int) -> int:
    """The size in bytes of `value` as compact UTF-8 JSON, as the MCP layer writes it, or
    some number over `limit` when that is larger (or it cannot be written).

    Pass a `make_encodable` value: the count is of what is sent, U+FFFD (3 bytes) where a
    lone surrogate was. The SDK writes stdio lines with pydantic and HTTP bodies with `json`;
    they differ only in how numbers are spelt (`1e-05` / `0.00001`), and the longer counts.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return limit + 1
    if len(text) > limit:  # every character is at least one byte
        return len(text)
    try:
        by_json = len(text.encode("utf-8"))
        by_pydantic = len(pydantic_core.to_json(value))
    except (UnicodeEncodeError, pydantic_core.PydanticSerializationError, ValueError):
        return limit + 1  # not made encodable: it cannot be sent as it is
    return max(by_json, by_pydantic)

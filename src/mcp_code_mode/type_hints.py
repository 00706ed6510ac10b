"""JSON Schema → Python type hints and literals, with work and size bounded whatever the schema.

An upstream's schema is not checked: it may nest unions of arrays so that walking every branch
takes hours (a type list of 7 array kinds nested 7 deep is 7^7 walks), or hold enums and
defaults of a megabyte. Each hint visits at most `MAX_NODES` schema nodes and `MAX_DEPTH`
levels, names at most `MAX_UNION` union members and `MAX_LITERALS` enum values, renders at
most `MAX_LITERAL_WORK` characters of literals (more would make it too long), and is at most
`MAX_HINT_CHARS` long; past a bound it says `Any` (or the bare `list` / `dict`), a literal
too long to show is `...`. A type list names each kind once, so `items` is read once however
often `"array"` is listed. The work of one hint is thus bounded by a constant (a fraction of a
millisecond), whatever the schema.

Not resolved: `$ref` (a reference is `Any`, so a cycle costs nothing), `allOf`, tuple-form
`items` (a list: the hint is the bare `list`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_HINT_CHARS",
    "MAX_LITERALS",
    "MAX_LITERAL_CHARS",
    "MAX_LITERAL_WORK",
    "MAX_NODES",
    "MAX_UNION",
    "python_literal",
    "type_hint",
]

MAX_NODES = 64  # schema nodes one hint visits
MAX_DEPTH = 6  # levels of arrays, dicts and unions one hint goes down
MAX_UNION = 8  # members of a union (anyOf, oneOf, a type list); more make it `Any`
MAX_LITERALS = 12  # enum values shown, then `...`
MAX_LITERAL_CHARS = 48  # of one literal (a default, an enum value); longer ones are `...`
MAX_HINT_CHARS = 160  # of one hint; a longer one is its outer kind alone
MAX_LITERAL_WORK = 2 * MAX_HINT_CHARS  # literal characters one hint renders; past it, outer

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


@dataclass(slots=True)
class _Budget:
    nodes: int = MAX_NODES
    literal_chars: int = MAX_LITERAL_WORK


class _TooLong(Exception):
    """The hint being made is past `MAX_HINT_CHARS`: making the rest is wasted work."""


def type_hint(schema: Any) -> str:
    """A Python type for a JSON Schema (`Any` where it cannot say more, or past a bound)."""
    try:
        hint = _hint(schema, _Budget(), 0)
    except _TooLong:
        return _outer(schema)
    return hint if len(hint) <= MAX_HINT_CHARS else _outer(schema)


def _hint(schema: Any, budget: _Budget, depth: int) -> str:
    budget.nodes -= 1
    if not isinstance(schema, dict) or budget.nodes < 0 or depth > MAX_DEPTH:
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return _literal_hint(schema["enum"], budget)
    if "const" in schema:
        return _literal_hint([schema["const"]], budget)
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list):
            if len(members) > MAX_UNION:
                return "Any"
            return _union([_hint(m, budget, depth + 1) for m in members])
    kind = schema.get("type")
    if isinstance(kind, list):
        if len(kind) > MAX_UNION:
            return "Any"
        # each kind once: `["array"] * 7` must not read `items` seven times
        kinds = dict.fromkeys(k if isinstance(k, str) else None for k in kind)
        return _union([_kind_hint(schema, k, budget, depth + 1) for k in kinds])
    return _kind_hint(schema, kind, budget, depth)


def _kind_hint(schema: dict[str, Any], kind: Any, budget: _Budget, depth: int) -> str:
    """The hint of `schema` read as being of type `kind` (one member of a type list)."""
    if kind == "array":
        items = schema.get("items")
        return f"list[{_hint(items, budget, depth + 1)}]" if isinstance(items, dict) else "list"
    if kind == "object" or "properties" in schema:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not schema.get("properties"):
            return f"dict[str, {_hint(extra, budget, depth + 1)}]"
        return "dict"
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind]
    return "Any"


def _outer(schema: Any) -> str:
    """The hint of a schema's outer kind alone (`list`, `dict`, `str`, ...), or `Any`."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "array":
        return "list"
    if kind == "object":
        return "dict"
    return _SCALARS.get(kind, "Any") if isinstance(kind, str) else "Any"


def _literal_hint(values: list[Any], budget: _Budget) -> str:
    if not values:
        return "Any"
    shown = []
    for value in values[:MAX_LITERALS]:
        room = min(MAX_LITERAL_CHARS, budget.literal_chars)
        if room <= 0:  # so many literals make a hint longer than MAX_HINT_CHARS
            raise _TooLong
        literal = python_literal(value, room)
        budget.literal_chars -= room if literal == "..." else len(literal)  # work done
        shown.append(literal)
    if len(values) > MAX_LITERALS:
        shown.append("...")
    return "Literal[" + ", ".join(shown) + "]"


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    if "Any" in unique or not unique:
        return "Any"
    if "None" in unique:  # Optional goes last, as people write it
        unique = [p for p in unique if p != "None"] + ["None"]
    return " | ".join(unique)


def python_literal(value: Any, limit: int = MAX_LITERAL_CHARS) -> str:
    """`value` as a Python literal, or `...` when that would be longer than `limit`.
    The work is bounded by `limit`, not by the size of `value`."""
    out = _Literal(limit)
    return "".join(out.parts) if _render(value, out) else "..."


@dataclass(slots=True)
class _Literal:
    """A literal being written, and whether it is still within `room` characters."""

    room: int
    parts: list[str] = field(default_factory=list)
    used: int = 0

    def add(self, text: str) -> bool:
        self.parts.append(text)
        self.used += len(text)
        return self.used <= self.room


def _render(value: Any, out: _Literal) -> bool:
    """Append `value`'s literal to `out`; False as soon as it passes `out.room` characters
    (each level of nesting adds one, so a deep nesting stops there too)."""
    if isinstance(value, str):
        return len(value) <= out.room and out.add(repr(value))
    if isinstance(value, bool) or value is None:
        return out.add(repr(value))
    if isinstance(value, int):
        # too many digits to show (and Python refuses to print past 4,300)
        return value.bit_length() <= 4 * out.room and out.add(repr(value))
    if isinstance(value, float):
        return out.add(repr(value))
    if isinstance(value, list):
        return _render_items(value, out, "[", "]")
    if isinstance(value, dict):
        return _render_items(value, out, "{", "}")
    return out.add("...")


def _render_items(items: list[Any] | dict[Any, Any], out: _Literal, start: str, end: str) -> bool:
    if 3 * len(items) > out.room - out.used:  # each item takes a character and ", " at least
        return False
    if not out.add(start):
        return False
    for i, item in enumerate(items):
        if i and not out.add(", "):
            return False
        if isinstance(items, dict):
            if not (_render(item, out) and out.add(": ")):
                return False
            item = items[item]
        if not _render(item, out):
            return False
    return out.add(end)

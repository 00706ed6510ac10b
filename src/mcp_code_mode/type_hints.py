"""JSON Schema → Python type hints and literals, with work and size bounded whatever the schema.

An upstream's schema is not checked: it may nest unions of arrays so that walking every branch
takes hours (a type list of 7 array kinds nested 7 deep is 7^7 walks), or hold enums and
defaults of a megabyte. Each hint visits at most `MAX_NODES` schema nodes and `MAX_DEPTH`
levels, names at most `MAX_UNION` union members and `MAX_LITERALS` enum values, and is at most
`MAX_HINT_CHARS` long; past a bound it says `Any` (or the bare `list` / `dict`), a literal
too long to show is `...`. Work is linear in the size of the schema, and usually far less.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_HINT_CHARS",
    "MAX_LITERALS",
    "MAX_LITERAL_CHARS",
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

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


@dataclass(slots=True)
class _Budget:
    nodes: int = MAX_NODES


def type_hint(schema: Any) -> str:
    """A Python type for a JSON Schema (`Any` where it cannot say more, or past a bound)."""
    hint = _hint(schema, _Budget(), 0)
    return hint if len(hint) <= MAX_HINT_CHARS else _outer(schema)


def _hint(schema: Any, budget: _Budget, depth: int) -> str:
    budget.nodes -= 1
    if not isinstance(schema, dict) or budget.nodes < 0 or depth > MAX_DEPTH:
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return _literal_hint(schema["enum"])
    if "const" in schema:
        return _literal_hint([schema["const"]])
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
        return _union([_kind_hint(schema, k, budget, depth + 1) for k in kind])
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


def _literal_hint(values: list[Any]) -> str:
    if not values:
        return "Any"
    shown = [python_literal(v) for v in values[:MAX_LITERALS]]
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
    """`value` as a Python literal, or `...` when that would be longer than `limit`."""
    parts: list[str] = []
    if _render(value, parts, limit):
        return "".join(parts)
    return "..."


def _render(value: Any, out: list[str], room: int) -> bool:
    """Append `value`'s literal to `out`; False as soon as `out` would pass `room` chars
    (so a megabyte value costs no more than `room` characters of work)."""
    if len(out) > room:  # each part is a character or more: a deep nesting stops here
        return False
    if isinstance(value, str):
        if len(value) > room:
            return False
        out.append(repr(value))
    elif isinstance(value, int) and value.bit_length() > 4 * room:
        return False  # too many digits to show (and Python refuses to print past 4,300)
    elif isinstance(value, bool | int | float) or value is None:
        out.append(repr(value))
    elif isinstance(value, list):
        return _render_items(value, out, room, "[", "]", None)
    elif isinstance(value, dict):
        return _render_items(list(value.items()), out, room, "{", "}", ": ")
    else:
        out.append("...")
    return sum(map(len, out)) <= room


def _render_items(
    items: list[Any], out: list[str], room: int, start: str, end: str, colon: str | None
) -> bool:
    out.append(start)
    for i, item in enumerate(items):
        if i:
            out.append(", ")
        if colon is not None:
            key, item = item
            if not _render(str(key), out, room):
                return False
            out.append(colon)
        if not _render(item, out, room):
            return False
    out.append(end)
    return sum(map(len, out)) <= room

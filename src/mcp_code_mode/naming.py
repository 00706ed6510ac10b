"""Map MCP server and tool names to Python identifiers (contract §4), reversibly."""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

__all__ = ["assign_identifiers", "to_identifier"]

_INVALID = re.compile(r"[^A-Za-z0-9_]")


def to_identifier(name: str) -> str:
    """Return the plain Python identifier for an MCP name, before clash resolution.

    Every character outside `[A-Za-z0-9_]` becomes `_`, case is kept, a leading
    digit gets a `_` prefix and a keyword gets a `_` suffix.
    """
    ident = _INVALID.sub("_", name) or "_"
    if ident[0].isdigit():
        ident = "_" + ident
    if keyword.iskeyword(ident):
        ident += "_"
    return ident


def assign_identifiers(names: Iterable[str]) -> dict[str, str]:
    """Map each name to a unique identifier, in the given order.

    The first name that maps to an identifier keeps it; later clashes get `_2`,
    `_3`, ... . The mapping is deterministic for a given order, and reversible
    through the returned dict.
    """
    mapping: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        if name in mapping:
            continue
        base = to_identifier(name)
        ident, n = base, 1
        while ident in taken:
            n += 1
            ident = f"{base}_{n}"
        taken.add(ident)
        mapping[name] = ident
    return mapping

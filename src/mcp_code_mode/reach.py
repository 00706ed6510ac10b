"""Which upstream servers a snippet can reach, read from its source before it runs.

A gateway that starts upstreams on demand starts (and waits for) only these. The reading
is conservative: a server counts as reached when the code names it (`tools.<id>`, or its
name as a string, as in `call_tool("notes", ...)`), and every server does when the code
reaches them in a way the source does not spell out (`tools` used other than as
`tools.<id>`, or `call_tool` / `call_tools` given a server that is not a string literal).
It decides nothing about safety: a server it misses still starts on its first call.
`starting_note` says which servers discovery could not see yet because they are starting.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .naming import assign_identifiers

__all__ = ["servers_reached", "starting_note"]

_CALLERS = ("call_tool", "call_tools")
_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_NAMED = 5  # starting servers a note names, past which it counts them
_NAME_CHARS = 100


def servers_reached(code: str, servers: Collection[str]) -> list[str] | None:
    """The servers of `servers` that `code` names, in their order; None when it may reach any.

    Code that does not parse reaches none (it will not run).
    """
    try:
        tree = compile(code, "<code>", "exec", flags=_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    reader = _Reader(servers)
    try:
        reader.visit(tree)
    except RecursionError:
        return None
    if reader.dynamic:
        return None
    return [name for name in servers if name in reader.named]


class _Reader(ast.NodeVisitor):
    def __init__(self, servers: Collection[str]) -> None:
        self.servers = servers
        self.by_id = {ident: name for name, ident in assign_identifiers(servers).items()}
        self.named: set[str] = set()
        self.dynamic = False

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _is_name(node.value, "tools"):  # `tools.<id>`: spelled out
            if node.attr in self.by_id:
                self.named.add(self.by_id[node.attr])
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in _CALLERS:
            first = node.args[0] if node.args else None
            for keyword in node.keywords:
                if keyword.arg in ("server", "calls"):
                    first = keyword.value
            if node.func.id == "call_tool":
                spelled = first is not None and _is_text(first)
            else:
                spelled = first is not None and _literal_calls(first)
            self.dynamic = self.dynamic or not spelled
            for child in [*node.args, *node.keywords]:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        # `tools` or a caller used as a value (passed, aliased, `getattr`-ed): any server.
        if node.id == "tools" or node.id in _CALLERS:
            self.dynamic = True

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in self.servers:
            self.named.add(node.value)


def _literal_calls(node: ast.expr) -> bool:
    """`[(server literal, ...), ...]` (or a tuple of them, or such a list times n)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _literal_calls(node.left) or _literal_calls(node.right)
    if not isinstance(node, ast.List | ast.Tuple):
        return False
    return all(
        isinstance(item, ast.Tuple | ast.List) and bool(item.elts) and _is_text(item.elts[0])
        for item in node.elts
    )


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def starting_note(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """A line for a search answer while servers still start (`list_servers()` rows), whose
    tools may be missing from it; None when none is starting (attack 138: `[]`, no word)."""
    names = [str(row["name"])[:_NAME_CHARS] for row in rows if row.get("status") == "starting"]
    if not names:
        return None
    more = f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
    verb = "is" if len(names) == 1 else "are"
    return (
        f"search: {', '.join(names[:_NAMED])}{more} {verb} still starting; their tools may be "
        "missing from search hits (list_servers() shows when they are ok)"
    )

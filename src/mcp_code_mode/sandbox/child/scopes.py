"""Names the static checks trust to mean what they say, and how that is kept true.

The policy decides some things by name: `tools.<server>.<tool>` reads are the guest API's
own, and `case int(x)` binds the subject itself (a builtin that matches itself reads no
attribute). Both hold only while the name means the real thing: the code never binds it
(`bound_names`), and, inside a class body, the namespace the class's metaclass prepared
cannot answer for it either (a `__prepare__` returning `{"int": Evil}` made `case int(g)`
read `__globals__` with the real getattr, outside attack 18). So the rewrite declares
these names `global` in every class body (`class_globals`): there they are looked up in
the guest's globals and builtins, never in the class namespace. Stdlib only.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable

__all__ = [
    "SELF_MATCHING",
    "TRUSTED_NAMES",
    "MatchValues",
    "SelfMatchingTypes",
    "bound_names",
    "class_globals",
]

# Builtin types whose class pattern `case int(x)` binds the subject itself: no attribute read.
SELF_MATCHING = frozenset(
    [
        "bool",
        "bytearray",
        "bytes",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "set",
        "str",
        "tuple",
    ]
)
TRUSTED_NAMES = SELF_MATCHING | {"tools"}
"""Names whose meaning the static checks rely on while the code never binds them."""


def bound_names(tree: ast.AST) -> set[str]:
    """Every name the code binds anywhere (assignment, def, class, import, argument, except,
    match capture, global), so a builtin's name is known to still mean the builtin."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).partition(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        else:
            for field in ("name", "arg"):
                value = getattr(node, field, None)
                if isinstance(value, str) and not isinstance(node, ast.alias):
                    bound.add(value)
    return bound


def class_globals(tree: ast.Module) -> None:
    """Declare `global` at the top of every class body (after its docstring), in place: the
    trusted names the code uses and never binds, and the sandbox's own `_mcp*` helpers the
    rewrite put in (a metaclass `__prepare__` namespace answered `_mcp_builtins_` in a
    class body, outside attack 58). Run after the rewrite."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    helpers = {name for name in used if name.startswith("_mcp")}
    names = sorted(((used & TRUSTED_NAMES) - bound_names(tree)) | helpers)
    if not names:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            at = 0 if ast.get_docstring(node, clean=False) is None else 1
            declare = ast.copy_location(ast.Global(names=names), node.body[0])
            node.body.insert(at, declare)


SelfMatchingTypes = type(
    "SelfMatchingTypes",
    (),
    {"__slots__": (), **{name: getattr(builtins, name) for name in SELF_MATCHING}},
)
"""What `case int(x)` names after the rewrite (`_mcp_builtins_.int`): the real builtin
whatever the guest's globals hold, so a name another snippet of a session rebound, or a
function of an earlier snippet matching on it, still means the builtin (attacks 55, 57)."""


class MatchValues:
    """What a `match` statement's checked values are named through (`_mcp_values_N.v0`, see
    `rewrite.visit_Match`): each attribute read calls its thunk, the guarded read, when the
    pattern is tried, as Python reads a value pattern."""

    __slots__ = ("_thunks",)
    _thunks: dict[str, Callable[[], object]]

    def __init__(self, **thunks: Callable[[], object]) -> None:
        object.__setattr__(self, "_thunks", thunks)

    def __getattr__(self, name: str) -> object:
        return self._thunks[name]()

"""The AST policy: checks guest code before anything runs.

It rejects oversized code, imports outside the allowlist (unless the import sits in a
`try` that catches ImportError: the run-time importer refuses it then, so fallbacks
work), the builtins that run or reach code (`exec`, `eval`, `compile`, `__import__`,
`open`, `globals`, ...), the dunders that reach frames, code, globals, builtins or
subclasses (`REFUSED_DUNDERS`; `__name__`, `__class__`, `super().__init__` are fine), and
attributes that walk from objects to frames, modules or processes. Each refusal names
the safe alternative. It reports the line of the first problem.

What it does not stop: anything built at run time (`getattr` with a computed string,
private attributes: the worker's run-time guards check those), and whatever an allowed
module can do by design. It is the first of several layers, not a sandbox.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .child.rules import (
    ALWAYS_IMPORTABLE,
    BLOCKED_ATTRIBUTES,
    GUARDED_READS,
    MAX_NESTING,
    REFUSED_DUNDERS,
    SHOWN_READS,
    TOO_DEEP,
    lazy_helper,
    refused_component,
)
from .child.scopes import SELF_MATCHING, bound_names

__all__ = ["BLOCKED_NAMES", "PolicyViolation", "check_policy"]

BLOCKED_NAMES = frozenset(
    [
        "exec",
        "eval",
        "compile",
        "__import__",
        "open",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "memoryview",
        "__builtins__",
        "__loader__",
        "__spec__",
    ]
)
# A replacement field whose name walks attributes: "{0.os}", "{x[0].y}" (items are fine).
_FORMAT_LOOKUP = re.compile(r"\{[^{}:!\[]*(\[[^\]]*\][^{}:!\[]*)*\.")
_FORMAT_METHODS = frozenset({"format", "format_map"})
_DUNDER_HINTS = {
    "__getattribute__": "use getattr(obj, name)",
    "__setattr__": "use setattr(obj, name, value), or dataclasses.replace() on a frozen one",
    "__delattr__": "use delattr(obj, name)",
    "__subclasses__": "use isinstance() / issubclass()",
    "__traceback__": "the error's type, message and line are in the run's error",
    "__reduce__": "use copy.copy() / copy.deepcopy()",
    "__reduce_ex__": "use copy.copy() / copy.deepcopy()",
}
_UNASSIGNABLE = frozenset(
    # `__class__` too: a class-body property answers `isinstance` with library code the
    # hook would vouch for (outside attack 16)
    {"__module__", "__annotations__", "__qualname__", "__dict__", "__class__"}
)
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@dataclass(frozen=True, slots=True)
class PolicyViolation:
    """Why the code was refused: `kind` is POLICY_VIOLATION or SYNTAX_ERROR."""

    kind: str
    message: str
    line: int | None


def check_policy(
    code: str, *, allowed_imports: Iterable[str], max_chars: int, max_lines: int
) -> PolicyViolation | None:
    """Return the first violation in `code`, or None when it may run."""
    if len(code) > max_chars:
        return PolicyViolation(
            "POLICY_VIOLATION",
            f"code is {len(code)} characters; the limit is {max_chars} (MCP_CODE_MAX_CHARS)",
            None,
        )
    lines = code.count("\n") + (not code.endswith("\n"))  # a final newline ends the last line
    if lines > max_lines:
        return PolicyViolation(
            "POLICY_VIOLATION",
            f"code is {lines} lines; the limit is {max_lines} (MCP_CODE_MAX_LINES)",
            max_lines + 1,
        )
    try:
        tree = ast.parse(code, "<guest>")
    except SyntaxError as exc:
        return PolicyViolation("SYNTAX_ERROR", f"SyntaxError: {exc.msg}", exc.lineno)
    if (line := _too_deep(tree)) is not None:
        return PolicyViolation("POLICY_VIOLATION", TOO_DEEP, line or None)
    allowed = _allowed(tuple(allowed_imports))
    nodes = list(ast.walk(tree))  # walked once: every check below reads this list
    tool_names = _tool_attributes(nodes)
    guarded = _guarded_imports(nodes)
    found = [
        (getattr(node, "lineno", 0), getattr(node, "end_col_offset", 0) or 0, message)
        for node in nodes
        if node not in guarded and (message := _check_node(node, allowed, tool_names)) is not None
    ]
    found += _positional_class_patterns(tree)
    if not found:
        return None
    line, _, message = min(found)  # the first problem in reading order
    return PolicyViolation("POLICY_VIOLATION", message, line or None)


def _too_deep(tree: ast.AST) -> int | None:
    """The line (0 if none) of a node nested past `MAX_NESTING`, or None; walked without
    recursion."""
    stack = [(tree, 0, 0)]
    while stack:
        node, depth, line = stack.pop()
        line = getattr(node, "lineno", line)
        if depth > MAX_NESTING:
            return line
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return None


@functools.lru_cache(maxsize=8)
def _allowed(allowed_imports: tuple[str, ...]) -> frozenset[str]:
    """The modules code may import: the configured ones and those always importable."""
    return frozenset(allowed_imports) | ALWAYS_IMPORTABLE


def _guarded_imports(nodes: list[ast.AST]) -> set[ast.AST]:
    """Imports in the body of a `try` that catches ImportError: `try: import orjson` /
    `except ImportError: import json` must run; the run-time importer refuses `orjson`.
    `nodes`: every node of the tree."""
    guarded: set[ast.AST] = set()
    for node in nodes:
        if isinstance(node, ast.Try | ast.TryStar) and any(
            _catches_import_error(handler) for handler in node.handlers
        ):
            for statement in node.body:
                guarded.update(
                    n
                    for n in ast.walk(statement)
                    if isinstance(n, ast.Import | ast.ImportFrom) and not _lazy_helper(n)
                )
    return guarded


def _lazy_helper(node: ast.Import | ast.ImportFrom) -> bool:
    """An import of a helper C code imports lazily (`_strptime`, `locale`): the run-time
    importer hands those out as they are, so only the allowlist may let guest code have
    them (outside attack 20)."""
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    return any(lazy_helper(name) or lazy_helper(name.partition(".")[0]) for name in names)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS for n in names)


def _tool_attributes(nodes: list[ast.AST]) -> set[ast.Attribute]:
    """The `tools.<server>` and `tools.<server>.<tool>` attributes of code that keeps `tools`.

    Their names are identifiers the gateway made from upstream names, so they may start
    with `_` (`tools.my_server._2fa`) or be a name refused elsewhere (`tools.db.format`);
    they reach only the guest's own server and tool objects, which cannot be changed at
    run time. Code that binds the name `tools`, or assigns to or deletes one of these
    attributes, gets no exemption: they might then hold anything. `nodes`: every node of
    the tree.
    """
    if any(_binds_tools(node) for node in nodes):
        return set()
    servers = {
        node
        for node in nodes
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "tools"
    }
    tools = {node for node in nodes if isinstance(node, ast.Attribute) and node.value in servers}
    chain = servers | tools
    if any(not isinstance(node.ctx, ast.Load) for node in chain):
        return set()
    return chain


def _binds_tools(node: ast.AST) -> bool:
    if isinstance(node, ast.keyword):
        return False  # f(tools=...) names an argument, it binds nothing here
    if isinstance(node, ast.Name):
        return node.id == "tools" and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Global | ast.Nonlocal):
        return "tools" in node.names
    # def/class/except/match/type-parameter names, arguments, imports: err on the side of "yes".
    return any(
        isinstance(value := getattr(node, field, None), str) and value.partition(".")[0] == "tools"
        for field in ("name", "asname", "arg", "rest")
    )


def _check_node(
    node: ast.AST, allowed: frozenset[str], tool_names: set[ast.Attribute]
) -> str | None:
    if isinstance(node, ast.Import):
        return _check_import(node, allowed)
    if isinstance(node, ast.ImportFrom):
        return _check_import_from(node, allowed)
    if isinstance(node, ast.Name):
        return _check_name(node)
    if isinstance(node, _BINDERS) and _unassignable(_bound_by(node)):
        return f"binding {_bound_by(node)!r} is not allowed"  # `def __class__`, `_mcp_*`
    if isinstance(node, ast.MatchClass):
        return _check_class_pattern(node)
    if isinstance(node, ast.ClassDef):
        private = next((k.arg for k in node.keywords if (k.arg or "").startswith("_")), None)
        if private is not None:  # `_root=True` lets a class subclass typing's internals
            return f"class keyword {private!r} is not allowed"
    if isinstance(node, ast.Attribute):
        return _dunder_message(node.attr) if node in tool_names else _check_attribute(node)
    return None


_BINDERS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.ExceptHandler,
    ast.MatchAs,
    ast.MatchStar,
    ast.MatchMapping,
    ast.alias,
    ast.arg,
)


def _bound_by(node: ast.AST) -> str | None:
    """The name a binding other than an assignment's target binds (`_BINDERS`)."""
    if isinstance(node, ast.alias):
        return (node.asname or node.name).partition(".")[0]
    if isinstance(node, ast.MatchMapping):
        return node.rest
    found = getattr(node, "arg" if isinstance(node, ast.arg) else "name", None)
    return found if isinstance(found, str) else None


def _check_import(node: ast.Import, allowed: frozenset[str]) -> str | None:
    for alias in node.names:
        if alias.name.partition(".")[0] not in allowed:
            return _import_message(alias.name, allowed)
        if (part := refused_component(alias.name)) is not None:
            return f"import of {alias.name!r} is not allowed (its part {part!r})"
    return None


def _check_import_from(node: ast.ImportFrom, allowed: frozenset[str]) -> str | None:
    if node.level:
        return "relative imports are not allowed"
    if (node.module or "").partition(".")[0] not in allowed:
        return _import_message(node.module or "", allowed)
    if (part := refused_component(node.module or "")) is not None:
        return f"import from {node.module!r} is not allowed (its part {part!r})"
    for alias in node.names:
        if alias.name == "*" or alias.name.startswith("_") or alias.name in BLOCKED_ATTRIBUTES:
            return f"'from {node.module} import {alias.name}' is not allowed"
    return None


def _unassignable(name: str | None) -> bool:
    """A name the guest may not bind: the class-body ones, and the sandbox's own `_mcp*`
    names the rewrite puts into the code (`_mcp_getattr_`: a guest binding shadowed it)."""
    return name is not None and (name in _UNASSIGNABLE or name.startswith("_mcp"))


def _check_name(node: ast.Name) -> str | None:
    if node.id.startswith("_mcp"):
        return f"the name {node.id!r} is the sandbox's own"
    if node.id in BLOCKED_NAMES:
        return f"use of {node.id!r} is not allowed"
    if node.id in REFUSED_DUNDERS:
        return f"dunder name {node.id!r} is not allowed"
    if node.id in _UNASSIGNABLE and not isinstance(node.ctx, ast.Load):
        # In a class body these decide whose class it is and what dataclasses compiles.
        return f"assigning {node.id!r} is not allowed"
    return None


_POSITIONAL = (
    "a class pattern with positional sub-patterns reads the attributes `__match_args__` names "
    "with the real getattr; use keyword sub-patterns instead (`case Point(x=x, y=y)`)"
)


def _positional_class_patterns(tree: ast.AST) -> list[tuple[int, int, str]]:
    """`case C(a, b)` reads `subject.<C.__match_args__[i]>` with no guard in between, and the
    guest's metaclass decides what matches (outside attack 9: `__match_args__ =
    ('__globals__',)` on any function); only a builtin that matches itself, by a name the
    code never rebinds, may take one positional sub-pattern (in a class body the rewrite
    looks that name up past the class namespace: `scopes.class_globals`)."""
    patterns = [n for n in ast.walk(tree) if isinstance(n, ast.MatchClass) and n.patterns]
    if not patterns:
        return []
    bound = bound_names(tree)
    return [
        (node.lineno, node.end_col_offset or 0, _POSITIONAL)
        for node in patterns
        if not (
            len(node.patterns) == 1
            and isinstance(node.cls, ast.Name)
            and node.cls.id in SELF_MATCHING
            and node.cls.id not in bound
        )
    ]


def _check_class_pattern(node: ast.MatchClass) -> str | None:
    # `case C(attr=x)` reads `attr` with the real getattr: no run-time check sees it.
    for attr, sub in zip(node.kwd_attrs, node.kwd_patterns, strict=True):
        # `mapping=m`: the rewrite binds `m` to what the guarded read gives
        if attr in SHOWN_READS and isinstance(sub, ast.MatchAs) and sub.pattern is None:
            continue
        # `format`/`format_map` too: `getattr` hands them out guarded, a pattern would not
        # (`case str(format=f)`: fields that walk attributes, outside attack 13).
        if attr.startswith("_") or attr in BLOCKED_ATTRIBUTES or attr in GUARDED_READS:
            return (
                f"a class pattern may not read {attr!r}; match public attributes, "
                "or read it with getattr() in the case body"
            )
    return None


def _dunder_message(attr: str) -> str | None:
    if attr not in REFUSED_DUNDERS:
        return None
    hint = _DUNDER_HINTS.get(attr, "it reaches the interpreter's internals")
    return f"access to dunder attribute {attr!r} is not allowed ({hint})"


def _check_attribute(node: ast.Attribute) -> str | None:
    if node.attr in ("__module__", "__class__") and not isinstance(node.ctx, ast.Load):
        # Whose object it is decides what it may read (see guards.is_guest_object).
        return f"assigning {node.attr!r} is not allowed"
    if _is_dunder(node.attr):
        return _dunder_message(node.attr)
    # Private attributes (`self._x`) are checked at run time: allowed on the guest's own
    # objects, refused on modules and library objects (collections._sys, ...).
    if node.attr in BLOCKED_ATTRIBUTES:
        return f"access to attribute {node.attr!r} is not allowed"
    if node.attr in _FORMAT_METHODS:
        # str.format resolves "{0.attr}" fields with the real getattr: allow it only on a
        # literal whose fields look nothing up (f-strings are checked like any other code).
        literal = node.value
        if not (isinstance(literal, ast.Constant) and isinstance(literal.value, str)):
            return f".{node.attr}() is allowed only on a string literal; use an f-string"
        if _FORMAT_LOOKUP.search(literal.value):
            return (
                "format fields that look up attributes are not allowed (compute the value "
                "first, or use an f-string)"
            )
    return None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _import_message(module: str, allowed: frozenset[str]) -> str:
    return (
        f"import of {module!r} is not allowed; allowed modules: {', '.join(sorted(allowed))} "
        "(extend with MCP_CODE_ALLOWED_IMPORTS)"
    )

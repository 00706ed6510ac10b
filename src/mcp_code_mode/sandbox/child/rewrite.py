"""Guest source to a code object: the rewrites the run needs, then `compile`.

`await tools.x.y(...)` becomes a plain call (guest calls are synchronous), `obj._x` reads
go through the run-time check, attribute stores and deletes (`obj.a = v`, `obj.a += v`,
`del obj.a`, `for obj.a in ...`) become item stores on `_mcp_target_(obj)`, which apply the
guest's write rule (`writes`), class bodies look the names the policy trusts up outside the
class namespace (`scopes`), and the last expression is bound to the result. Only
`compile_guest` may compile code named `GUEST_FILENAME` (the audit hook's rule).
"""

from __future__ import annotations

import ast
import sys
from types import CodeType

from mcp_code_mode.sandbox.child.guest_api import HOST_CALLS
from mcp_code_mode.sandbox.child.rules import (
    CHECKED_READS,
    GUEST_ONLY_DUNDERS,
    MAX_NESTING,
    PRIVATE_OK,
    SHOWN_READS,
    VIEWED_DUNDERS,
    WRITER_DUNDERS,
)
from mcp_code_mode.sandbox.child.scopes import SELF_MATCHING, class_globals

__all__ = ["GUEST_FILENAME", "RESULT_NAME", "compile_guest"]

GUEST_FILENAME = "<guest>"
RESULT_NAME = "_mcp_result_"
_COMPILE_FRAMES = 8 * MAX_NESTING


class _Rewrite(ast.NodeTransformer):
    """`await tools.x.y(...)` → `tools.x.y(...)` (guest calls are synchronous), and
    `obj._x` (a read) → `_mcp_getattr_(obj, "_x")`, which allows the private attributes
    of the guest's own objects only (see `guards.guest_getattr`), and `obj.a` as a target
    → `_mcp_target_(obj)["a"]` (`writes.AttributeTarget`; `obj.a += v` reads through it)."""

    def __init__(self) -> None:
        self.matches = 0
        self.in_class = [False]  # per scope: whether it is a class body

    def _scoped(self, node: ast.AST, in_class: bool) -> ast.AST:
        self.in_class.append(in_class)
        try:
            return self.generic_visit(node)
        finally:
            self.in_class.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return self._scoped(node, True)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._scoped(node, False)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._scoped(node, False)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return self._scoped(node, False)

    def visit_Match(self, node: ast.Match) -> ast.AST | list[ast.stmt]:
        """`case Tok._EOF:` reads `_EOF` with the real getattr, and a call may not stand in
        a pattern: a value the check would read is named `<kept>.v<i>`, whose read runs the
        guarded read when the pattern is tried, as Python reads a value pattern (attacks
        106, 108)."""
        kept = f"_mcp_values_{self.matches}"
        hoisted = _checked_values(node, kept)  # on the source's own chains
        self.generic_visit(node)
        if not hoisted:
            return node
        self.matches += 1
        keywords = [
            ast.keyword(arg=f"v{i}", value=self._deferred(v)) for i, v in enumerate(hoisted)
        ]
        values = ast.Call(
            func=ast.Name(id="_mcp_values_", ctx=ast.Load()), args=[], keywords=keywords
        )
        assign = ast.Assign(targets=[ast.Name(id=kept, ctx=ast.Store())], value=values)
        return [ast.copy_location(assign, node), node]

    def _deferred(self, value: ast.expr) -> ast.Lambda:
        """`lambda: <value>`, guarded; in a class body, whose names a lambda does not see,
        the dotted name's root is read at once (a default) and the rest when the pattern
        is tried (all of it at once raised for cases never reached: attack 112). The chain
        is rewritten before its root is replaced: what is checked is decided on the source
        (`tools.<a>.<b>` is checked whole; renamed first, it was read raw: attack 114)."""
        guarded = self.visit(value)
        if not self.in_class[-1]:
            return _thunk(guarded)
        root = _swap_root(guarded, ast.Name(id="_mcp_v", ctx=ast.Load()))
        if root is None:  # not a dotted name: all of it at once
            return _eager(guarded)
        return _lambda([ast.arg(arg="_mcp_v")], [root], guarded, value)

    def visit_Await(self, node: ast.Await) -> ast.AST:
        api = _is_api_call(node.value)  # on the source's own call, before it is rewritten
        self.generic_visit(node)
        return node.value if api else node

    def visit_MatchClass(self, node: ast.MatchClass) -> ast.AST:
        """`case int(x)` → `case _mcp_builtins_.int(x)`: the builtin, whatever the guest's
        globals say `int` is when the pattern runs (`scopes.SelfMatchingTypes`)."""
        self.generic_visit(node)
        if isinstance(node.cls, ast.Name) and node.cls.id in SELF_MATCHING:
            owner = ast.Name(id="_mcp_builtins_", ctx=ast.Load())
            node.cls = ast.copy_location(
                ast.Attribute(value=owner, attr=node.cls.id, ctx=ast.Load()), node.cls
            )
        return node

    def visit_match_case(self, node: ast.match_case) -> ast.AST:
        """`case C(mapping=m)`: the pattern reads `mapping` with the real getattr, a mapping
        proxy of a dict view or `re` pattern's dict (attack 102). It captures into a name of
        the sandbox's, and the guard binds `m` to what the guarded read would give, then
        clears the capture."""
        self.generic_visit(node)
        binds = _shown_captures(node.pattern)
        if not binds:
            return node
        shown = [
            ast.NamedExpr(
                target=ast.Name(id=name, ctx=ast.Store()),
                value=ast.Call(
                    func=ast.Name(id="_mcp_shown_", ctx=ast.Load()),
                    args=[ast.Name(id=kept, ctx=ast.Load())],
                    keywords=[],
                ),
            )
            for name, kept in binds.items()
        ]
        cleared = [  # the raw capture is not left behind (attack 110)
            ast.NamedExpr(target=ast.Name(id=kept, ctx=ast.Store()), value=ast.Constant(None))
            for kept in binds.values()
        ]
        bound = ast.Subscript(
            value=ast.Tuple(elts=[*shown, *cleared, ast.Constant(value=True)], ctx=ast.Load()),
            slice=ast.Constant(value=-1),
            ctx=ast.Load(),
        )
        guard = bound if node.guard is None else ast.BoolOp(ast.And(), [bound, node.guard])
        node.guard = ast.copy_location(guard, node.pattern)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        checked = _is_checked(node)  # on the source's own chain, before it is rewritten
        self.generic_visit(node)
        name = node.attr
        if not isinstance(node.ctx, ast.Load):  # a store or delete: `writes` decides
            target = ast.Call(
                func=ast.Name(id="_mcp_target_", ctx=ast.Load()), args=[node.value], keywords=[]
            )
            item = ast.Subscript(value=target, slice=ast.Constant(value=name), ctx=node.ctx)
            return ast.copy_location(item, node)
        if not checked:
            return node
        call = ast.Call(
            func=ast.Name(id="_mcp_getattr_", ctx=ast.Load()),
            args=[node.value, ast.Constant(value=name)],
            keywords=[],
        )
        return ast.copy_location(call, node)


def _is_checked(node: ast.Attribute) -> bool:
    """Whether reading this attribute goes through the run-time check.

    Every name of `tools.<server>.<tool>` is: one refused elsewhere (`_2fa`, `format`) is
    fine when it names a server or tool of the real `tools` (`tools_view.is_identifier_of`,
    at run time), and the name `tools` itself may have been made to mean something else
    (an enum's members written into the guest's globals, outside attack 19)."""
    name = node.attr
    dunder = name.startswith("__") and name.endswith("__")
    if dunder and name not in GUEST_ONLY_DUNDERS | WRITER_DUNDERS | VIEWED_DUNDERS:
        return False  # the policy refuses those that reach anything, on any object
    private = name.startswith("_") and name not in PRIVATE_OK
    return _is_tools_chain(node) or private or name in CHECKED_READS or name in SHOWN_READS


def _checked_values(match: ast.Match, kept: str) -> list[ast.expr]:
    """The dotted names of `match`'s value patterns, mapping keys and class patterns' classes
    that read a checked attribute, each replaced in place by `<kept>.v<i>`."""
    hoisted: list[ast.expr] = []

    def keep(value: ast.expr) -> ast.expr:
        if not _reads_checked(value):
            return value
        hoisted.append(value)
        owner = ast.Name(id=kept, ctx=ast.Load())
        return ast.copy_location(ast.Attribute(owner, f"v{len(hoisted) - 1}", ast.Load()), value)

    for case in match.cases:
        for node in ast.walk(case.pattern):
            if isinstance(node, ast.MatchValue):
                node.value = keep(node.value)
            elif isinstance(node, ast.MatchMapping):
                node.keys = [keep(key) for key in node.keys]
            elif isinstance(node, ast.MatchClass):
                node.cls = keep(node.cls)
    return hoisted


def _swap_root(chain: ast.expr, new: ast.expr) -> ast.expr | None:
    """Put `new` where a rewritten dotted name reads its root `Name` (the innermost
    attribute's `value`, or the innermost `_mcp_getattr_` call's first argument) and return
    that root; None, and `chain` unchanged, when it is no such name."""
    node: ast.expr = chain
    while True:
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name):
                root, node.value = node.value, new
                return root
            node = node.value
        elif isinstance(node, ast.Call) and node.args and _calls(node, "_mcp_getattr_"):
            if isinstance(node.args[0], ast.Name):
                root, node.args[0] = node.args[0], new
                return root
            node = node.args[0]
        else:
            return None


def _calls(node: ast.Call, name: str) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == name


def _thunk(value: ast.expr) -> ast.Lambda:
    return _lambda([], [], value, value)


def _eager(value: ast.expr) -> ast.Lambda:
    """`lambda _mcp_v=<value>: _mcp_v`: the default is read where the lambda is made."""
    name = ast.Name(id="_mcp_v", ctx=ast.Load())
    return _lambda([ast.arg(arg="_mcp_v")], [value], name, value)


def _lambda(
    args: list[ast.arg], defaults: list[ast.expr], body: ast.expr, at: ast.AST
) -> ast.Lambda:
    signature = ast.arguments(
        posonlyargs=[],
        args=args,
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=defaults,
    )
    return ast.copy_location(ast.Lambda(args=signature, body=body), at)


def _reads_checked(value: ast.expr) -> bool:
    while isinstance(value, ast.Attribute):
        if _is_checked(value):
            return True
        value = value.value
    return False


def _shown_captures(pattern: ast.pattern) -> dict[str, str]:
    """The names a class pattern captures `mapping`/`groupindex` into (the policy allows a
    plain capture only), renamed in place to names of the sandbox's: name -> kept as."""
    binds: dict[str, str] = {}
    for node in ast.walk(pattern):
        if not isinstance(node, ast.MatchClass):
            continue
        for attr, sub in zip(node.kwd_attrs, node.kwd_patterns, strict=True):
            if attr in SHOWN_READS and isinstance(sub, ast.MatchAs) and sub.name is not None:
                kept = f"_mcp_shown_{sub.name}"
                binds[sub.name] = kept
                sub.name = kept
    return binds


def _is_tools_chain(node: ast.Attribute) -> bool:
    """`tools.<server>` or `tools.<server>.<tool>`: identifiers may start with `_`."""
    value = node.value
    if isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name) and value.id == "tools"


def _is_api_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in HOST_CALLS
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id == "tools"


def compile_guest(source: str) -> CodeType:
    """Compile guest code with top-level await, binding the last expression to the result.

    The one function that may compile (`ast.parse` too: the audit hook's rule), with room
    for the frames `MAX_NESTING` levels take (the rewrite recurses a few frames a level);
    deeper code raises RecursionError (the policy refuses it before it comes)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _COMPILE_FRAMES))
    try:
        tree = _rewritten(ast.parse(source, GUEST_FILENAME))
        # dont_inherit: this module's own `from __future__ import annotations` must not
        # turn the guest's annotations into strings.
        code: CodeType = compile(
            tree, GUEST_FILENAME, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
        )
    finally:
        sys.setrecursionlimit(limit)
    return code


def _rewritten(tree: ast.Module) -> ast.Module:
    tree = _Rewrite().visit(tree)
    class_globals(tree)  # `tools` and `int` mean the real ones in class bodies too
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        target = ast.Name(id=RESULT_NAME, ctx=ast.Store())
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
    ast.fix_missing_locations(tree)
    return tree

"""What dataclasses compiles, checked where its text is complete.

`dataclasses` is the one library in the default allowlist that turns text into code at the
guest's request: the methods it adds (`__init__`, `__repr__`, `__eq__`, ...) are source
text it builds from field names and templates, compiled by a trusted helper with the
real `getattr` (the code is not the guest's rewritten code). Field names are checked
where dataclasses reads them (`library_guards`); this check holds whatever route a name
took to the text (outside attacks 41-43, and 45: a guest `Field` subclass whose `name`
put an expression into `__repr__`'s f-string).

Checked here, at `_create_fn` (3.11) or `_FuncBuilder.add_fn` (3.12+):

- the method's name, its parameters (`name:_type_name=_dflt_name`, `*`) and the factory's
  locals are plain names, and no body line holds a line break or a `;`;
- the body parses to the shapes dataclasses' templates make and nothing else: only the
  node types they use, attributes read only from `self`, `other`, `self.__class__`,
  `super(cls, self)` or the builtins object, and calls only of the templates' callees
  (`hash`, `type`, `super`, `FrozenInstanceError`, a default factory, `__setattr__`,
  `__delattr__`, `__post_init__`). Any other expression, however its names were spelt,
  is refused.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mcp_code_mode.sandbox.child.dataclass_methods import note_reads

__all__ = ["guard_generated_code"]

_PARAMETER = re.compile(r"\*|[^\W\d]\w*(?::[^\W\d]\w*)?(?:=[^\W\d]\w*)?")

_NODES = frozenset(
    {
        *("Module", "FunctionDef", "arguments", "arg", "Load", "Store"),
        *("Assign", "Expr", "If", "Raise", "Return", "Pass"),
        *("BoolOp", "And", "Or", "BinOp", "Add", "IfExp", "Compare"),
        *("Eq", "Is", "In", "Lt", "LtE", "Gt", "GtE"),
        *("Attribute", "Call", "Name", "Constant", "Tuple", "Set"),
        *("JoinedStr", "FormattedValue"),
    }
)
"""Every node type of the methods dataclasses 3.11-3.13 generate (all options)."""

_CALLEES = frozenset({"FrozenInstanceError", "hash", "super", "type"})
_METHODS = frozenset({"__setattr__", "__delattr__", "__post_init__"})
_DEFAULT_FACTORY = re.compile(r"_dflt_\w+|__dataclass_dflt_\w+__")
_OWNERS = frozenset({"self", "other", "__dataclass_builtins_object__"})


def guard_generated_code(dataclasses: Any) -> None:
    """Install the check in front of the function dataclasses compiles its text with.
    Installed after the trusted helpers are found: `_create_fn` (3.11) stays the trusted
    function, called from here."""
    create = getattr(dataclasses, "_create_fn", None)
    if callable(create):

        def _create_fn(name: Any, args: Any, body: Any, **kw: Any) -> Any:
            check_generated(name, args, body, kw.get("locals"))
            return create(name, args, body, **kw)

        dataclasses._create_fn = _create_fn
    builder: Any = getattr(dataclasses, "_FuncBuilder", None)
    add_fn = getattr(builder, "add_fn", None)
    if callable(add_fn):

        def add_fn_checked(self: Any, name: Any, args: Any, body: Any, **kw: Any) -> Any:
            check_generated(name, args, body, kw.get("locals"))
            return add_fn(self, name, args, body, **kw)

        builder.add_fn = add_fn_checked


def check_generated(name: Any, args: Any, body: Any, names: Any) -> None:
    """Raise TypeError unless the method text is one dataclasses' templates make; the
    attribute names it reads go to the call being made (`dataclass_methods.note_reads`)."""
    tree = _parsed(args, body) if _plain(name, args, body, names) else None
    if tree is None or not all(_node_allowed(node) for node in ast.walk(tree)):
        raise TypeError("dataclasses would compile text it did not make from plain names")
    note_reads({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)})


def _plain(name: Any, args: Any, body: Any, names: Any) -> bool:
    texts = [name, *(names or {})]
    return (
        all(type(t) is str and t.isidentifier() for t in texts)
        and all(type(a) is str and _PARAMETER.fullmatch(a) for a in args)
        and all(type(b) is str and not any(c in b for c in "\n\r;") for b in body)
    )


def _parsed(args: list[str], body: list[str]) -> ast.Module | None:
    # Each line indented the same way here as where it is compiled, so both parse alike.
    text = f"def f({','.join(args)}):\n" + "\n".join(f"  {line}" for line in body)
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _node_allowed(node: ast.AST) -> bool:
    if type(node).__name__ not in _NODES:
        return False
    if isinstance(node, ast.Name):  # the sandbox's own names, never (an `InitVar` with
        return not node.id.startswith("_mcp")  # `init=False` is read by name: attack 110)
    if isinstance(node, ast.Attribute):
        return _owner(node.value)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in _CALLEES or bool(_DEFAULT_FACTORY.fullmatch(func.id))
        return isinstance(func, ast.Attribute) and func.attr in _METHODS
    return True


def _owner(node: ast.AST) -> bool:
    """Whether an attribute is read from an object the templates read from."""
    if isinstance(node, ast.Name):
        return node.id in _OWNERS
    if isinstance(node, ast.Call):  # `super(cls, self)`
        return isinstance(node.func, ast.Name) and node.func.id == "super"
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "__class__"
        and isinstance(node.value, ast.Name)
        and node.value.id in ("self", "other")
    )

"""Attribute writes by guest code: to its own objects and to plain instances, nothing else.

A write to a class changes it for every object of it, the sandbox's own included
(`json.JSONEncoder.default = f` would change how the worker encodes its messages); a module
likewise (module views refuse writes, see `module_view`); and a library class's own Python
`__setattr__` may send a write somewhere else (`typing.List[int].x = v` sets `x` on `list`'s
alias origin). So guest code may set and delete attributes of its own classes and their
instances, and of objects whose class leaves writes to the interpreter; never of a class or
module it did not define, nor of an object whose writes a library's Python code handles.

One rule for every route: attribute stores and deletes in guest source (`x.a = v`, `x.a += v`,
`for x.a in ...`, `del x.a`) compile to item stores on `_mcp_target_(x)` (see `rewrite`);
`setattr`/`delattr` are `safe_setattr`/`safe_delattr`; stdlib helpers that set attributes
the guest named use them too (`guarded_names`).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.guards import (
    exact_name,
    guest_getattr,
    is_blocked,
    is_guest_object,
    library_getattr,
    safe_hasattr,
)
from mcp_code_mode.sandbox.child.module_view import ModuleView
from mcp_code_mode.sandbox.child.rules import GUEST_MODULE
from mcp_code_mode.sandbox.child.tools_view import Frozen

__all__ = ["AttributeTarget", "guarded_names", "safe_delattr", "safe_setattr", "write_refusal"]

_MRO = type.__dict__["__mro__"].__get__
_VARS = type.__dict__["__dict__"].__get__


def safe_setattr(obj: Any, name: str, value: Any) -> None:
    """`setattr` for guest code (and what its attribute stores come to)."""
    name = exact_name(name)
    relabel = name == "__module__" and isinstance(obj, type)
    if is_blocked(name) or relabel or name in ("__dict__", "__class__"):
        raise AttributeError(f"setting attribute {name!r} is not allowed")
    _check(obj, "setting")
    setattr(obj, name, value)


def safe_delattr(obj: Any, name: str) -> None:
    """`delattr` for guest code (and what its `del x.a` comes to)."""
    name = exact_name(name)
    if is_blocked(name):
        raise AttributeError(f"deleting attribute {name!r} is not allowed")
    _check(obj, "deleting")
    delattr(obj, name)


def _check(obj: Any, doing: str) -> None:
    reason = write_refusal(obj)
    if reason is not None:
        raise AttributeError(f"{doing} attributes of {reason} is not allowed")


def write_refusal(obj: Any) -> str | None:
    """What `obj` is, when guest code may not change its attributes; None when it may."""
    if isinstance(obj, types.ModuleType | ModuleView):
        return f"the module {repr(obj).removeprefix('<module ').removesuffix('>')}"
    if isinstance(obj, type) and not is_guest_object(obj):
        return f"the class {type.__dict__['__name__'].__get__(obj)!r} (your code did not define it)"
    if isinstance(obj, Frozen):  # the tools view: its own `__setattr__` says why not
        return None
    handler = _library_handler(type(obj))
    if handler is not None:
        return (
            f"a {type(obj).__name__!r} object (the library class {handler!r} handles writes "
            "to it itself)"
        )
    return None


def _library_handler(cls: type) -> str | None:
    """The name of the library class whose Python `__setattr__` or `__delattr__` handles
    writes to `cls`'s objects; None when the interpreter or the guest's own code does.
    Read from the classes' real `__dict__`s and MROs, never through their descriptors."""
    for hook in ("__setattr__", "__delattr__"):
        for klass in _MRO(cls):
            namespace = _VARS(klass)
            if hook not in namespace:
                continue
            module = namespace.get("__module__")
            own = type(module) is str and module == GUEST_MODULE
            if isinstance(namespace[hook], types.FunctionType) and not own:
                return str(type.__dict__["__name__"].__get__(klass))
            break
    return None


class AttributeTarget:
    """`_mcp_target_(obj)`: what guest attribute stores compile to. `t["a"] = v` sets,
    `del t["a"]` deletes and `t["a"]` reads (`obj.a += v` reads first), each by the guest's
    rules. It holds nothing the guest did not hand it."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __setitem__(self, name: str, value: Any) -> None:
        safe_setattr(self._obj, name, value)

    def __delitem__(self, name: str) -> None:
        safe_delattr(self._obj, name)

    def __getitem__(self, name: str) -> Any:
        return guest_getattr(self._obj, name)


def guarded_names() -> dict[str, Callable[..., Any]]:
    """The guarded builtins by name, for stdlib modules that apply the guest's names."""
    return {
        "getattr": library_getattr,
        "setattr": safe_setattr,
        "hasattr": safe_hasattr,
        "delattr": safe_delattr,
    }

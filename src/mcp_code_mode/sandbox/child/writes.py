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

import sys
import types
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.guards import (
    MRO,
    VARS,
    exact_name,
    guest_getattr,
    is_blocked,
    is_guest_object,
    is_private,
    library_getattr,
    safe_hasattr,
)
from mcp_code_mode.sandbox.child.module_view import ModuleView
from mcp_code_mode.sandbox.child.rules import (
    BLOCKED_ATTRIBUTES,
    GUEST_MODULE,
    REFUSED_DUNDERS,
)
from mcp_code_mode.sandbox.child.tools_view import Frozen

__all__ = [
    "AttributeTarget",
    "fixed_refusal",
    "guarded_names",
    "guarded_update_wrapper",
    "library_setattr",
    "safe_delattr",
    "safe_setattr",
    "write_refusal",
]


def safe_setattr(obj: Any, name: str, value: Any) -> None:
    """`setattr` for guest code (and what its attribute stores come to)."""
    _refuse_foreign_function(obj, "setting")
    library_setattr(obj, name, value)


def library_setattr(obj: Any, name: str, value: Any) -> None:
    """`setattr` for stdlib code that sets names the guest chose (`update_wrapper`): the
    guest's rule, except that library code may set attributes of its own functions."""
    name = exact_name(name)
    relabel = name == "__module__" and isinstance(obj, type)
    if is_blocked(name) or relabel or name in ("__dict__", "__class__"):
        raise AttributeError(f"setting attribute {name!r} is not allowed")
    _check(obj, "setting", name)
    setattr(obj, name, value)


def _refuse_foreign_function(obj: Any, doing: str) -> None:
    """A library's function or the guest API's is not the guest's to change (`__wrapped__`
    on `json.dumps` feeds `inspect`, outside attack 23)."""
    if type(obj) is types.FunctionType and not is_guest_object(obj):
        raise AttributeError(
            f"{doing} attributes of a function your code did not define is not allowed"
        )


def safe_delattr(obj: Any, name: str) -> None:
    """`delattr` for guest code (and what its `del x.a` comes to)."""
    name = exact_name(name)
    if is_blocked(name):
        raise AttributeError(f"deleting attribute {name!r} is not allowed")
    _refuse_foreign_function(obj, "deleting")
    _check(obj, "deleting", name)
    delattr(obj, name)


def _check(obj: Any, doing: str, name: str) -> None:
    reason = write_refusal(obj)
    if reason is not None:
        raise AttributeError(f"{doing} attributes of {reason} is not allowed")
    # As for reads: a library object's private state is its own (`enum.property`'s
    # `_attr_type`/`_cls_type` made its `__get__` the real getattr, outside attack 22).
    if is_private(name) and not is_guest_object(obj):
        raise AttributeError(
            f"{doing} private attribute {name!r} of a {type(obj).__name__} object is not "
            "allowed (private attributes of your own objects are fine)"
        )


def write_refusal(obj: Any) -> str | None:
    """What `obj` is, when guest code may not change its attributes; None when it may."""
    cls = type(obj)
    known = _BY_TYPE.get(id(cls))  # by id: hashing a class may run its metaclass's code
    if known is None or known[0] is not cls:
        if len(_BY_TYPE) >= _KEPT_TYPES:
            _BY_TYPE.clear()
        known = _BY_TYPE[id(cls)] = (cls, _type_refusal(cls))
    reason = known[1]
    if reason == _MODULE:
        return f"the module {repr(obj).removeprefix('<module ').removesuffix('>')}"
    if reason is None and isinstance(obj, type) and not is_guest_object(obj):
        return f"the class {type.__dict__['__name__'].__get__(obj)!r} (your code did not define it)"
    return reason


_CHECKED_NAMES = REFUSED_DUNDERS | BLOCKED_ATTRIBUTES | {"__module__", "__dict__", "__class__"}
_MODULE = "module"
_OURS = "mcp_code_mode."
_KEPT_TYPES = 4096  # verdicts kept by type (a run making classes in a loop starts over)
_BY_TYPE: dict[int, tuple[type, str | None]] = {}


def _type_refusal(cls: type) -> str | None:
    """The part of `write_refusal` that depends on the object's type alone: `fixed_refusal`,
    or a class whose writes a library's Python code handles (a class's own attributes: its
    metaclass). Classes cannot change that later: their `__setattr__`, `__delattr__` and
    `__bases__` are not the guest's to set."""
    reason = fixed_refusal(cls)
    if reason is not None:
        return reason
    handler = _library_handler(cls)
    if handler is None:
        return None
    return f"a {cls.__name__!r} object (the library class {handler!r} handles writes to it itself)"


def fixed_refusal(cls: type) -> str | None:
    """Why no object of `cls` may be written by guest code, not even a new one: a module,
    the tools view, an object of the sandbox's own (its runtime, outside attack 14), a
    dataclass field; None when none of these."""
    if issubclass(cls, types.ModuleType | ModuleView):
        return _MODULE
    if issubclass(cls, Frozen):  # the tools view (`copy` writes `__dict__` past its own check)
        return "`tools` or one of its servers (they cannot be changed)"
    # A name that is not an exact str could answer the lookups below one way and Python's
    # own attribute lookup another (its `__eq__` is the guest's).
    if any(type(k) is not str for klass in MRO(cls) for k in VARS(klass)):
        return f"a {cls.__name__!r} object (its class has attribute names that are not str)"
    module = VARS(cls).get("__module__")
    if type(module) is str and module.startswith(_OURS):
        return f"a {cls.__name__!r} object (the sandbox's own)"
    field = getattr(sys.modules.get("dataclasses"), "Field", None)
    if isinstance(field, type) and issubclass(cls, field):
        # its `name` goes into the source dataclasses compiles (outside attack 41)
        return "a dataclass field (dataclasses compiles code from it)"
    return None


def _library_handler(cls: type) -> str | None:
    """The name of the library class whose Python `__setattr__` or `__delattr__` handles
    writes to `cls`'s objects; None when the interpreter or the guest's own code does.
    Read from the classes' real `__dict__`s and MROs, never through their descriptors."""
    for hook in ("__setattr__", "__delattr__"):
        for klass in MRO(cls):
            namespace = VARS(klass)
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
        obj = self._obj
        known = _BY_TYPE.get(id(type(obj)))
        # The common case at the cost of one lookup: a name no check is about, on an
        # instance of a type already judged writable (what `safe_setattr` would decide).
        if (
            known is not None
            and known[0] is type(obj)
            and known[1] is None
            and type(name) is str
            and name not in _CHECKED_NAMES
            and not name.startswith("_")
            and not isinstance(obj, type | types.FunctionType)
        ):
            setattr(obj, name, value)
            return
        safe_setattr(obj, name, value)

    def __delitem__(self, name: str) -> None:
        safe_delattr(self._obj, name)

    def __getitem__(self, name: str) -> Any:
        return guest_getattr(self._obj, name)


def guarded_update_wrapper(update_wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """`functools.update_wrapper` (and `wraps`, which calls it by name) for a wrapper guest
    code may change only: it sets `__wrapped__` with a plain store, past `setattr`
    (`update_wrapper(json.JSONEncoder, f)` set it on a library class, outside attack 14)."""

    def guarded(wrapper: Any, wrapped: Any, *args: Any, **kwargs: Any) -> Any:
        # a library's own function too (the names it writes are the guest's, attacks 23 and
        # 69); not the closures library decorators make and wrap (`singledispatch`'s)
        if isinstance(wrapper, types.BuiltinFunctionType):  # `__module__` is writable
            raise AttributeError("setting attributes of a builtin function is not allowed")
        if (
            type(wrapper) is not types.FunctionType
            or wrapper.__closure__ is None
            or _sandbox_function(wrapper)  # the guest API's are closures (attack 94)
        ):
            _refuse_foreign_function(wrapper, "setting")
        reason = write_refusal(wrapper)
        if reason is not None:
            raise AttributeError(f"setting attributes of {reason} is not allowed")
        return update_wrapper(wrapper, wrapped, *args, **kwargs)

    guarded.__name__ = guarded.__qualname__ = "update_wrapper"
    guarded.__doc__ = update_wrapper.__doc__
    return guarded


def _sandbox_function(function: types.FunctionType) -> bool:
    """One of the sandbox's own functions (by its module's globals: not the guest's to set)."""
    name = dict.get(function.__globals__, "__name__")
    return type(name) is str and name.startswith(_OURS)


def guarded_names() -> dict[str, Callable[..., Any]]:
    """The guarded builtins by name, for stdlib modules that apply the guest's names."""
    return {
        "getattr": library_getattr,
        "setattr": library_setattr,
        "hasattr": safe_hasattr,
        "delattr": safe_delattr,
    }

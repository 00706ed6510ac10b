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

import builtins
import functools
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
    C_BOUND_METHODS,
    C_UNBOUND_METHODS,
    GUEST_MODULE,
    REFUSED_DUNDERS,
    REMOVED_BUILTINS,
)
from mcp_code_mode.sandbox.child.tools_view import Frozen

__all__ = [
    "AttributeTarget",
    "guarded_deepcopy",
    "guarded_names",
    "guarded_reconstruct",
    "guarded_update_wrapper",
    "keep_alive",
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
    """The part of `write_refusal` that depends on the object's type alone: a module, an
    object of the sandbox's own (its runtime, outside attack 14), or a class whose writes a
    library's Python code handles (a class's own attributes: its metaclass). Classes
    cannot change that later: their `__setattr__`, `__delattr__` and `__bases__` are not
    the guest's to set."""
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
    handler = _library_handler(cls)
    if handler is None:
        return None
    return f"a {cls.__name__!r} object (the library class {handler!r} handles writes to it itself)"


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


def guarded_reconstruct(reconstruct: Callable[..., Any]) -> Callable[..., Any]:
    """`copy._reconstruct` that applies a reducer's state only to an object guest code may
    write: it updates `__dict__` or calls `__setstate__` itself, past `setattr`, on whatever
    the reducer's callable returned (`(lambda x: x, (tools,), {...})` wrote the tools view,
    `typing.List`'s name, outside attack 15). Checked on the object made, before any state."""

    def guarded(
        x: Any, memo: Any, func: Callable[..., Any], args: Any, *rest: Any, **kw: Any
    ) -> Any:
        state = rest[0] if rest else kw.get("state")
        call = _as_guest_builtin(func)
        # `deepcopy` copies the arguments and state into its memo, which guest code can read
        # (a guest `__deepcopy__` gets it), before `make` runs (outside attack 72)
        for part in (*(args if type(args) is tuple else ()), state):
            refusal = _made_refusal(part)
            if refusal is not None:
                raise TypeError(f"copying from {refusal} is not allowed")

        def make(*made_from: Any) -> Any:
            made = call(*made_from)
            refusal = _made_refusal(made)
            if refusal is not None:  # whatever reducer or callable made it (attack 71)
                raise TypeError(f"copying may not make {refusal}")
            reason = None if state is None else write_refusal(made) or _state_refusal(made, state)
            if reason is not None:
                raise AttributeError(f"copying state onto {reason} is not allowed")
            return made

        return reconstruct(x, memo, make, args, *rest, **kw)

    guarded.__name__ = guarded.__qualname__ = "_reconstruct"
    return guarded


def _made_refusal(made: Any) -> str | None:
    """What `made` is when a copy may not hand it out: a module, a module's globals or the
    builtins (a dict holding `__builtins__`), or a builtin the guest's builtins replace or
    remove (`typing`'s alias reducer took a name the guest chose from its globals)."""
    if isinstance(made, types.ModuleType):
        return "a module"
    if type(made) is dict and ("__builtins__" in made or made is _BUILTINS_DICT):
        return "a module's globals"
    for name in _UNSHARED_BUILTINS:
        if made is _REAL_BUILTINS.get(name, _NONE):
            return f"the builtin {name}()"
    return None


def _state_refusal(made: Any, state: Any) -> str | None:
    """What is wrong with `state` as attribute writes to `made`, by the rules of
    `safe_setattr`: `copy` applies it to `__dict__` natively (private fields of an
    `enum.property` made its `__get__` the real getattr on 3.13, outside attack 23).
    A state of some other type is a library `__setstate__`'s own format, left to it; with
    no `__setstate__`, `copy` passes it to `__dict__.update`, which takes pairs and any
    mapping as well (outside attack 29: `[("_signal_handlers", {14: None})]` onto an event
    loop made by `object.__new__`): only a dict is applied then."""
    parts = state if type(state) is tuple and len(state) == 2 else (state,)
    plain = not any("__setstate__" in VARS(klass) for klass in MRO(type(made)))
    if plain and any(part is not None and type(part) is not dict for part in parts):
        return f"a {type(made).__name__} object from a state that is not a dict"
    for part in parts:
        if isinstance(part, dict) and type(part) is not dict:
            return "an object from a dict subclass"  # its keys could differ from its items
        for key in list(dict.keys(part)) if type(part) is dict else ():
            if type(key) is not str or is_blocked(key) or key in ("__dict__", "__class__"):
                return f"an object with the attribute {key!r}"
            if is_private(key) and not is_guest_object(made):
                return f"a {type(made).__name__} object's private attribute {key!r}"
    return None


def _as_guest_builtin(func: Any) -> Callable[..., Any]:
    """A reducer's callable as guest code would have it: a builtin the guest's builtins
    replace is the guest's version (a bound method reduces to `(getattr, (obj, name))` with
    the real `getattr`, and `copy.copy` applied it, outside attack 21); one they remove is
    refused. By identity: nothing of the guest's runs here."""
    for name in REMOVED_BUILTINS:
        if func is _REAL_BUILTINS.get(name, _NONE):
            raise TypeError(f"copying by calling {name}() is not allowed")
    inner = func
    while type(inner) is functools.partial:
        inner = inner.func
    c_method = any(type(inner) is kind for kind in (*C_BOUND_METHODS, *C_UNBOUND_METHODS))
    if c_method and inner.__name__ in ("__reduce__", "__reduce_ex__"):
        # called from a library frame, a reducer reads the real builtins (outside attack 69)
        raise TypeError("copying by calling a reducer is not allowed")
    swaps: dict[str, Callable[..., Any]] = {
        "getattr": guest_getattr,
        "setattr": safe_setattr,
        "delattr": safe_delattr,
        "hasattr": safe_hasattr,
    }
    for name, guest in swaps.items():
        if func is _REAL_BUILTINS[name]:
            return guest
    return func  # type: ignore[no-any-return]


_REAL_BUILTINS = dict(vars(builtins))  # taken in the zygote, before any guest code
_BUILTINS_DICT = vars(builtins)
_UNSHARED_BUILTINS = (*REMOVED_BUILTINS, "getattr", "setattr", "delattr", "hasattr")
_NONE = object()


def guarded_deepcopy(deepcopy: Callable[..., Any]) -> Callable[..., Any]:
    """`copy.deepcopy` keeping the originals it copied (its `_keep_alive`) beside the memo,
    not in it: a guest's memo held them under `memo[id(memo)]`, a bound method's `__self__`
    and a library object's own `__dict__` among them (outside attack 27). Kept until the
    outermost call returns."""
    depth = [0]

    def guarded(x: Any, memo: Any = None, _nil: Any = _NONE) -> Any:
        depth[0] += 1
        try:
            return deepcopy(x, memo) if _nil is _NONE else deepcopy(x, memo, _nil)
        finally:
            depth[0] -= 1
            if not depth[0]:
                _KEPT.clear()

    return guarded


def keep_alive(x: Any, memo: Any) -> None:
    """`copy._keep_alive`, with the originals outside the memo (see `guarded_deepcopy`)."""
    _KEPT.setdefault(id(memo), (memo, []))[1].append(x)


_KEPT: dict[int, tuple[Any, list[Any]]] = {}


def guarded_names() -> dict[str, Callable[..., Any]]:
    """The guarded builtins by name, for stdlib modules that apply the guest's names."""
    return {
        "getattr": library_getattr,
        "setattr": library_setattr,
        "hasattr": safe_hasattr,
        "delattr": safe_delattr,
    }

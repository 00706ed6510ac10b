"""A library's writer methods (`rules.WRITER_DUNDERS`), as guest code may hold them.

A library's `__init__`, `__set_name__`, `__set__`, `__setitem__` ... write onto their first
argument with plain stores, past `setattr`. Applied to a library's object they renamed
`json.dumps` (`typing.NewType.__init__(json.dumps, ...)`), steered a typing alias
(`ParamSpecArgs.__init__(typing.AbstractSet, json.loads)`, `typing.List.__init__(...)`)
and rewrote `uuid.NAMESPACE_DNS` (outside attacks 94 and 95). One rule: such a method,
however guest code reads it (off a class, through `super`, bound to an instance), applies
only to an object guest code may change. The guest's own methods are its own affair.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from itertools import repeat
from operator import is_
from typing import Any

from mcp_code_mode.sandbox.child.guards import MRO, VARS, is_guest_object, os_bases
from mcp_code_mode.sandbox.child.rules import C_BOUND_METHODS, C_UNBOUND_METHODS, WRITER_DUNDERS
from mcp_code_mode.sandbox.child.writes import write_refusal

__all__ = ["guarded_deepcopy_method", "self_refusal", "writer_method"]

_KEPT = 4096  # wrappers kept by function (a run making classes in a loop starts over)
_WRAPPED: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {}


def self_refusal(obj: Any, name: str = "") -> str | None:
    """Why a library's writer method `name` may not be applied to `obj`; None when it may:
    the guest's own object (a library's `__init__` is how its subclasses' instances are
    made, whatever `__setattr__` they inherit), or, but for `__init__`, one guest code could
    change itself. A library's `__init__` sets its object's private state as well, which
    `setattr` keeps from guest code: on a library's object it re-made `typing.Union`'s
    `_getitem` and the running event loop's selector (outside attack 99), so it applies to
    no object of the library's own state (`_library_state`)."""
    if is_guest_object(obj):
        return None
    if type(obj) is types.FunctionType:
        return "a function your code did not define"
    reason = write_refusal(obj)
    if reason is None and name == "__init__":
        return _library_state(obj)
    return reason


def _library_state(obj: Any) -> str | None:
    """What `obj` is when it is a library's own state, which its `__init__` would set
    anew, private fields included: an object acting on the OS (`os_bases`), or one a
    loaded module holds (`typing.Union`, asyncio's logger). Objects guest code made (a
    `JSONEncoder`, a `Random`) may be initialised again, as in Python. Scans the modules:
    only for a library's `__init__` applied to a library object, which is rare."""
    cls = type(obj)
    if any(klass is base for klass in MRO(cls) for base in os_bases()):
        return f"a {cls.__name__!r} object (it acts on the OS)"
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None) if type(module) is types.ModuleType else None
        if type(namespace) is dict and any(map(is_, list(namespace.values()), repeat(obj))):
            return f"a {cls.__name__!r} object of the library's ({module.__name__})"
    return None


def writer_method(obj: Any, name: str, value: Any) -> Any:
    """`value`, read as `obj.<name>` (a writer's name), as guest code may hold it."""
    kind = type(value)
    if kind is types.MethodType:  # bound: to an instance, or a class
        if not _library(value.__func__):
            return value
        reason = self_refusal(value.__self__, name)
        if reason is not None:
            raise AttributeError(f"{name} of a library class may not be used on {reason}")
        return _rebound(value, name)
    if _library(value):  # whatever it was read from: a class, `super` or a subclass of it,
        return _unbound(value, name)  # a generic alias forwarding to its origin (attack 96)
    if name not in _C_CHECKED:
        return value
    if any(kind is c for c in C_BOUND_METHODS) and not is_guest_object(value.__self__):
        return _c_writer(value, name, bound=True)
    if any(kind is c for c in C_UNBOUND_METHODS):
        return _c_writer(value, name, bound=False)
    return value


_C_CHECKED = frozenset(["__set__", "__delete__", "__init__"])


def _c_writer(method: Any, name: str, *, bound: bool) -> Callable[..., Any]:
    """A writer written in C, checked on what it writes: a descriptor's `__set__` and
    `__delete__` write the object they are given, past its class's `__setattr__`
    (`uuid.UUID.int.__set__(NAMESPACE_DNS, v)`), and a descriptor's `__init__` sets what
    its library class computes with (`uuid.UUID.bytes.__init__(f)`; outside attack 98).
    Other C writers (`_C_CHECKED` leaves them out) write their own object's items, as a
    subscript store would."""
    kept = None if bound else _WRAPPED.get(id(method))  # one per unbound method, as below
    if kept is not None and kept[0] is method:
        return kept[1]
    owner = method.__self__ if bound else None

    def call(*args: Any, **kwargs: Any) -> Any:
        this, rest = (owner, args) if bound else (args[0] if args else None, args[1:])
        if name in ("__set__", "__delete__") and rest:
            if (reason := self_refusal(rest[0])) is not None:
                raise TypeError(f"{name}() of a library descriptor may not write {reason}")
        elif name == "__init__" and _descriptor(this):
            raise TypeError(
                "__init__() may not be applied to a descriptor your code did not define"
            )
        return method(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call if bound else _kept(method, call)


def _descriptor(obj: Any) -> bool:
    """A descriptor (a property, a slot, a function ...) the guest did not make."""
    return not is_guest_object(obj) and any("__get__" in VARS(k) for k in MRO(type(obj)))


def guarded_deepcopy_method(deepcopy_method: Callable[..., Any]) -> Callable[..., Any]:
    """`copy`'s deep copy of a bound method, which binds its function to a deep copy of its
    object: with the guest's memo, any object (`deepcopy(g.__init__, {id(g): call_tool})`
    renamed `call_tool` through `NewType.__init__`, outside attack 96). A library's writer
    method, by any name a class of the original object holds it under, is bound to an
    object it may apply to only."""

    def guarded(x: Any, memo: Any) -> Any:
        made = deepcopy_method(x, memo)
        func = x.__func__
        if _library(func) and _writer_of(type(x.__self__), func):  # by exact type
            reason = self_refusal(made.__self__, "__init__")  # the strictest rule
            if reason is not None:
                raise TypeError(f"a library class's writer method may not be bound to {reason}")
            return _rebound(made, func.__name__)
        return made

    return guarded


def _writer_of(cls: type, func: types.FunctionType) -> bool:
    """Whether `func` is a writer: by its own name, or held under a writer's name by a
    class of `cls`'s."""
    if func.__name__ in WRITER_DUNDERS:
        return True
    return any(VARS(k).get(n) is func for k in MRO(cls) for n in WRITER_DUNDERS)


def _rebound(method: types.MethodType, name: str) -> types.MethodType:
    """A library writer method bound to an object it may apply to, holding the checking
    wrapper (`_unbound`) as its function, not the library's: a bound method compares by its
    function, and a method of a guest callable compared with it was handed that function
    (`u.__init__ == MethodType(G(), u)` gave `UUID.__init__`, then applied to
    `NAMESPACE_DNS`; outside attack 103)."""
    return types.MethodType(_unbound(method.__func__, name), method.__self__)


def _library(function: Any) -> bool:
    return type(function) is types.FunctionType and not is_guest_object(function)


def _unbound(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`method` checking the object it is applied to, which it takes positionally (passed
    by keyword, `self=json.dumps`, it went unchecked: attack 95). One wrapper per method:
    `T.__init__ is T.__init__` still holds."""
    kept = _WRAPPED.get(id(method))
    if kept is not None and kept[0] is method:
        return kept[1]

    def call(*args: Any, **kwargs: Any) -> Any:
        if not args:
            raise TypeError(f"{name}() takes the object it applies to as its first argument")
        if (reason := self_refusal(args[0], name)) is not None:
            raise TypeError(f"{name}() of a library class may not be applied to {reason}")
        return method(*args, **kwargs)

    call.__name__, call.__qualname__ = name, method.__qualname__
    call.__module__, call.__doc__ = method.__module__, method.__doc__
    return _kept(method, call)


def _kept(method: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    if len(_WRAPPED) >= _KEPT:
        _WRAPPED.clear()
    _WRAPPED[id(method)] = (method, wrapper)
    return wrapper

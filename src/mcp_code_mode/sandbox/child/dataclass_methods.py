"""The methods dataclasses makes for a guest class, wrapped where they are made.

They are compiled text, not the guest's rewritten code: they read and write fields with the
real `getattr` and `object.__setattr__`. Called on other objects (`C.__init__(SomeEnum,
h)`, `C.__eq__(E1, E2)`, outside attack 48) or on classes of a guest metaclass that inherit
a library's private names (attack 50), they wrote library classes and read enum's private
`_convert_`; so each serves instances of its own class only.

Wrapped when they are made, not after `dataclass()` returns: guest code runs inside it once
the methods are in the class (a `__doc__` descriptor dataclasses reads last, a base's
`__init_subclass__` when `slots=True` remakes the class, `abc.update_abstractmethods`), and
a raw frozen `__init__` taken then rewrote `uuid.NAMESPACE_DNS` and a raw `__eq__` read any
private attribute (outside attack 106). A method made during a guarded `dataclass()` call
refuses every call until that call binds it to the class it made (`bind_generated`).
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.guards import (
    VARS,
    is_blocked,
    is_guest_object,
    is_private,
    library_defines,
)
from mcp_code_mode.sandbox.child.rules import GUARDED_READS

__all__ = [
    "bind_generated",
    "guard_generated_methods",
    "making",
    "note_reads",
    "safe_module_setattr",
]


class Made:
    """A guarded call's methods, each with its owner cell (empty until bound), and every
    attribute name the text dataclasses compiled in it reads (`note_reads`)."""

    def __init__(self) -> None:
        self.methods: list[tuple[Callable[..., Any], list[Any]]] = []
        self.reads: set[str] = set()


_MAKING: list[Made] = []
"""Per guarded `dataclass()` call in progress (nested calls stack)."""

_WRAPPED: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()

_GENERATED = frozenset(
    {"__init__", "__repr__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__"}
    | {"__setattr__", "__delattr__", "__replace__", "__getstate__", "__setstate__"}
)
_SUBCLASS = type.__dict__["__subclasscheck__"]
_COMPARISONS = frozenset({"__eq__", "__lt__", "__le__", "__gt__", "__ge__"})


class making:
    """A guarded `dataclass()` call: the methods made inside are collected to be bound."""

    def __enter__(self) -> Made:
        _MAKING.append(Made())
        return _MAKING[-1]

    def __exit__(self, *exc: object) -> None:
        _MAKING.pop()


def note_reads(names: set[str]) -> None:
    """The attribute names a text dataclasses is about to compile reads (`generated`)."""
    if _MAKING:
        _MAKING[-1].reads |= names


def bind_generated(made: Any, before: dict[str, Any], made_now: Made) -> Any:
    """Bind the methods made for `made` (some are held inside others, 3.11's `__repr__`
    inside its recursion guard) to it; wrap any other function dataclasses added (those not
    in `before`) the same way. What they guard is what their text reads, and the fields
    (guest code can empty `__dataclass_fields__` while dataclasses works: attack 108)."""
    if not isinstance(made, type):
        return made
    fields = set(VARS(made).get("__dataclass_fields__", {})) | made_now.reads
    guarded = tuple(sorted(f for f in fields if type(f) is str and _guarded(f)))
    for _, owner in made_now.methods:
        owner[:] = [made, guarded]
    for name, value in dict(VARS(made)).items():
        added = type(value) is types.FunctionType and before.get(name) is not value
        if added and not any(value is method for method, _ in made_now.methods):
            type.__setattr__(made, name, _own_instances_only(value, name, [made, guarded]))
    return made


def _pending(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`method` serving no one until bound: kept in the call being made."""
    if not _MAKING or method in _WRAPPED:
        return method  # a library's own dataclass, or one wrapped already
    owner: list[Any] = []
    wrapped = _own_instances_only(method, name, owner)
    _MAKING[-1].methods.append((wrapped, owner))
    _WRAPPED.add(wrapped)
    return wrapped


def _guarded(field: str) -> bool:
    """A name guest code reads only through a run-time check (`format`, `mapping`, `obj`
    are public: attack 108 read `copy.dispatch_table`'s through a field of that name)."""
    return is_private(field) or is_blocked(field) or field in GUARDED_READS


def _own_instances_only(
    method: Callable[..., Any], name: str, owner: list[Any]
) -> Callable[..., Any]:
    # Checked at every call, nothing kept: a kept verdict was looked up through the guest
    # metaclass's `__hash__`/`__eq__`, and class dicts can change after it (attack 52).
    def check(obj: Any) -> None:
        if not owner:
            raise TypeError(f"{name}() of a dataclass still being made cannot be called")
        cls, guarded = owner
        # An instance of the class, by the real MRO (no metaclass hook of the guest's), read
        # plainly (no `GenericAlias` forwarding its reads: attack 108), and the fields
        # guest code reads through a check its own.
        if not (_SUBCLASS(cls, type(obj)) and is_guest_object(obj)):
            raise TypeError(
                f"{cls.__qualname__}.{name}() takes {cls.__qualname__} instances only "
                "(of classes whose attributes are read plainly)"
            )
        for field in guarded:  # read as the guest's own code would
            if library_defines(obj, field):
                raise TypeError(
                    f"{cls.__qualname__}.{name}(): {field!r} of this object is not its own "
                    "(a library class or metaclass defines it)"
                )

    def method_of_cls(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        check(self)
        if name in _COMPARISONS:  # `other` positionally only (by keyword: attack 108)
            if kwargs or len(args) != 1:
                raise TypeError(f"{name}() takes exactly one other object, positionally")
            if type(args[0]) is not type(self):  # what `other.__class__` should have said
                return NotImplemented
            check(args[0])
        return method(self, *args, **kwargs)

    method_of_cls.__name__ = name
    qualname = getattr(method, "__qualname__", name)  # `Class.name`, where dataclasses set it
    method_of_cls.__qualname__ = qualname if type(qualname) is str else name
    method_of_cls.__doc__ = getattr(method, "__doc__", None)
    return method_of_cls


def safe_module_setattr(obj: Any, name: str, value: Any) -> None:
    """`setattr` as dataclasses' own code calls it (shadowing the builtin in its module):
    a method it sets on the class it is making is wrapped first."""
    if _MAKING and type(value) is types.FunctionType and type(name) is str and name in _GENERATED:
        value = _pending(value, name)
    setattr(obj, name, value)


def guard_generated_methods(dataclasses: Any) -> Callable[..., Any]:
    """Wrap what dataclasses makes where it makes it: 3.11's `_create_fn` (whose result
    3.11 also stores as `cls.__hash__` directly), its module's `setattr` (3.12+'s
    `_FuncBuilder` and `_set_new_attribute` set them through it), and the state functions
    `slots=True` stores directly on frozen classes. Returns the module's `setattr`."""
    create = getattr(dataclasses, "_create_fn", None)
    if callable(create):

        def _create_fn(name: Any, args: Any, body: Any, **kw: Any) -> Any:
            return _pending(create(name, args, body, **kw), name)

        dataclasses._create_fn = _create_fn
    for name in ("_dataclass_getstate", "_dataclass_setstate"):
        function = getattr(dataclasses, name, None)
        if callable(function):
            setattr(dataclasses, name, _guest_state_only(function))
    dataclasses.setattr = safe_module_setattr
    return safe_module_setattr


def _guest_state_only(function: Callable[..., Any]) -> Callable[..., Any]:
    """`_dataclass_getstate`/`_dataclass_setstate` (`object.__setattr__` of every field
    `fields(self)` names) on the guest's own objects only."""

    def state(self: Any, *args: Any) -> Any:
        if not is_guest_object(self):
            raise TypeError("a dataclass's state is read and set on your own objects only")
        return function(self, *args)

    state.__name__ = state.__qualname__ = function.__name__.lstrip("_")
    return state

"""What enum compares while it makes a class: nothing the guest's code can answer.

`EnumType.__new__` reads `__repr__`, `__str__`, `__format__` and `__reduce_ex__` off the
new class and off its data type and asks `found in (data_type's, object's)`: that hands
`object.__reduce_ex__` to the `__eq__` of whatever was found, and a reducer the guest holds,
called from a library frame, returns the real `getattr` (outside attacks 69, 70, 74-77).
The guard looks at every class enum may read those names from, before enum runs:

- the bases (an exact tuple: a subclass's `__iter__` showed other ones, attack 76), their
  MROs, the data types their `_member_type_` names (enum picks one, attack 77), and the
  metaclasses of all of these;
- in each, the four names are bound to functions or C methods and descriptors only, which
  compare by identity and cannot change (a `staticmethod` accepted here was re-initialised
  by a hook `type.__new__` runs, attack 75), and a namespace has `str` keys only;
- no metaclass but `type`, `abc.ABCMeta` and enum's own (a guest one's `mro`,
  `__getattribute__`, `_get_mixins_`, `__mro__`, a `_member_type_` property chose what
  enum reads, attacks 74 and 77);
- no private keyword (`_simple` made an enum base without `Enum` in its MRO, attack 77),
  and no enum base without `Enum` in its MRO however made (`type.__new__`, attack 78).

Stdlib only: runs in local workers and Pyodide runners.
"""

from __future__ import annotations

import abc
import types
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.guards import MRO, VARS
from mcp_code_mode.sandbox.child.rules import C_BOUND_METHODS, C_UNBOUND_METHODS

__all__ = ["guarded_enum_new"]

_ENUM_COMPARED = ("__repr__", "__str__", "__format__", "__reduce_ex__")
_PLAIN_CALLABLES = (
    types.FunctionType,
    *C_BOUND_METHODS,
    *C_UNBOUND_METHODS,
    types.ClassMethodDescriptorType,
)


def guarded_enum_new(
    new: Callable[..., Any], enum_type: type, enum_base: type
) -> Callable[..., Any]:
    """`EnumType.__new__` once its inputs pass `_refusal` (see the module)."""
    library = (type, enum_type, abc.ABCMeta)

    def __new__(metacls: type, cls: str, bases: tuple[Any, ...], classdict: Any, **kw: Any) -> Any:
        if type(bases) is not tuple:
            raise TypeError("an enum's bases must be a tuple")
        if any(type(key) is not str or key.startswith("_") for key in kw):
            raise TypeError("an enum takes no private keyword in the sandbox")
        reason = _refusal(metacls, bases, library) or _without_enum(bases, enum_type, enum_base)
        if reason is not None:
            raise TypeError(f"an enum's base, data type or metaclass {reason} in the sandbox")
        return new(metacls, cls, bases, classdict, **kw)

    return __new__


def _without_enum(bases: tuple[Any, ...], enum_type: type, enum_base: type) -> str | None:
    """An enum base whose MRO lacks `Enum` (made with `type.__new__(EnumType, ...)`): a new
    class of it finds `object.__reduce_ex__` as its own, and enum compared that with a data
    type a hook changed after this guard had looked (outside attack 78). With `Enum` in the
    MRO, what enum finds is `Enum`'s or a callable checked here (that name cannot be
    written later), and `object`'s reducer goes only to its `__eq__`."""
    for base in bases:
        if issubclass(type(base), enum_type) and not any(k is enum_base for k in MRO(base)):
            return "is an enum class without Enum among its bases"
    return None


def _refusal(metacls: type, bases: tuple[Any, ...], library: tuple[type, ...]) -> str | None:
    """Why enum could read a guest-chosen object off these classes, or None."""
    classes = [k for b in bases if issubclass(type(b), type) for k in MRO(b)]
    if any(type(key) is not str for k in classes for key in VARS(k)):
        return "has attribute names that are not str"  # their `__eq__` answers lookups
    data = [VARS(k).get("_member_type_", object) for k in classes]
    if any(not issubclass(type(d), type) for d in data):
        return "names a data type that is not a class"
    classes += [k for d in data for k in MRO(d)]
    for meta in [metacls, *(type(c) for c in classes)]:
        if not any(meta is lib for lib in library):
            return f"has the metaclass {type.__dict__['__name__'].__get__(meta)!r}, not enum's own"
    for klass in classes:
        namespace = VARS(klass)
        if any(type(key) is not str for key in namespace):
            return "has attribute names that are not str"
        for name in _ENUM_COMPARED:
            if name in namespace and not any(type(namespace[name]) is p for p in _PLAIN_CALLABLES):
                return f"may not define {name} that way"
    return None

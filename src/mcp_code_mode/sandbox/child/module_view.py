"""What `import x` gives guest code: a view of the module, never another module outside
the allowlist, never the module's `__dict__`, and no way to change the module."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Iterable
from typing import Any

from mcp_code_mode.sandbox.child.dataclass_guards import guarded_dataclass, guarded_make_dataclass
from mcp_code_mode.sandbox.child.guards import exact_name, is_blocked, is_private
from mcp_code_mode.sandbox.child.library_guards import guarded_pickle_by_enum_name
from mcp_code_mode.sandbox.child.read_only import shown
from mcp_code_mode.sandbox.child.rules import GUEST_ONLY_DUNDERS, lazy_helper

__all__ = ["ImportRefused", "ModuleView"]


# Functions a view hands out wrapped: they compile source from names the guest chose.
_GUARDED: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("dataclasses", "dataclass"): guarded_dataclass,
    ("dataclasses", "make_dataclass"): guarded_make_dataclass,
    ("enum", "pickle_by_enum_name"): guarded_pickle_by_enum_name,
}


class ImportRefused(ImportError):
    """An import outside the allowlist at run time; catchable as ImportError, and reported
    as POLICY_VIOLATION (with its line) when the guest does not catch it."""


_MISSING = object()
GUEST_VERSIONS: dict[int, tuple[Any, Any]] = {}
"""id -> (a guarded builtin stdlib modules use, the guest's own version of it): set by
`lockdown`. A module's `getattr` global is `library_getattr` (it trusts the guest's own
objects as `update_wrapper` needs); the guest reading `functools.getattr` gets its own."""


def _as_shown(module: Any, name: str, value: Any, allowed: frozenset[str]) -> Any:
    """`module.<name>` as a guest sees it: a guarded builtin's guest version, a wrapped
    entry point, a view of an allowed module; a module not allowed is refused."""
    guests = GUEST_VERSIONS.get(id(value))
    if guests is not None and guests[0] is value:
        return guests[1]
    wrap = _GUARDED.get((module.__name__, name))
    if wrap is not None:
        return wrap(value)
    if isinstance(value, type(builtins)):
        root = value.__name__.partition(".")[0]
        if root not in allowed and not lazy_helper(value.__name__):
            raise AttributeError(
                f"{module.__name__}.{name} is the module {value.__name__!r}, which is not allowed"
            )
        return ModuleView(value, allowed)
    return shown(value)  # a module's mapping proxy gives its mapping away (attack 101)


def _looked_up(module: Any, name: str, allowed: frozenset[str], private: bool) -> Any:
    """`module.<name>` for the guest, or an AttributeError saying why not (see `getattr_`)."""
    hidden = is_blocked(name) or name in GUEST_ONLY_DUNDERS
    if hidden or (not private and is_private(name)):
        raise AttributeError(f"access to attribute {name!r} is not allowed")
    value = getattr(module, name, _MISSING)
    if value is _MISSING:
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
    return _as_shown(module, name, value, allowed)


def _module_view_class(module: Any, allowed: frozenset[str], private: bool) -> type:
    """A view class of its own per module: the module is held in closures, not in a slot
    or attribute a guest could read (`type(view)._module` would hand out the real one)."""

    def getattr_(self: Any, name: str) -> Any:
        name = exact_name(name)
        try:
            return _looked_up(module, name, allowed, private)
        except AttributeError as exc:
            refusal = str(exc)
        # Raised here, and never an AttributeError of the interpreter's: that one holds the
        # real module as `.obj` (outside attack 26), as a library error's `__context__` too.
        # Nor any AttributeError for a real submodule: on one, `import a.b as c` and `from a
        # import b` look `a.b` up in `sys.modules` themselves (outside attack 27).
        if f"{module.__name__}.{name}" in sys.modules:
            raise ImportRefused(f"import of {module.__name__}.{name} is not allowed")
        raise AttributeError(refusal)

    def setattr_(self: Any, name: str, value: Any) -> None:
        # The module is the one the sandbox's own code uses (json for its messages, typing,
        # functools, re): a guest write would change what that code calls, so none is made.
        raise AttributeError(
            f"setting attributes of the module {module.__name__!r} is not allowed "
            "(keep your own values in variables)"
        )

    def dir_(self: Any) -> Iterable[str]:
        return [n for n in dir(module) if not is_blocked(n) and not is_private(n)]

    def repr_(self: Any) -> str:
        return f"<module {module.__name__!r}>"

    namespace = {
        "__slots__": (),
        "__getattr__": getattr_,
        "__setattr__": setattr_,
        "__dir__": dir_,
        "__repr__": repr_,
    }
    return type("module", (ModuleView,), namespace)


_VIEW_CLASSES: dict[tuple[str, bool], type] = {}


class ModuleView:
    """What `import x` gives guest code: a module's attributes, but never another module
    outside the allowlist (`enum.bltns` is builtins, `dataclasses.inspect` reaches frames).

    Allowed submodules come back as views too; blocked names are refused as anywhere else.
    `ModuleView(module, allowed)` builds an instance of a per-module subclass.
    """

    __slots__ = ()

    def __new__(cls, module: Any, allowed: frozenset[str], *, private: bool = False) -> Any:
        # Of loaded modules only: `type(json).__new__(...)` with a guest object named like
        # a module made the run's own later imports of it the guest's (outside attack 63).
        name = module.__name__
        if sys.modules.get(name) is not module:
            raise TypeError("module views are made by the sandbox, of modules")
        key = (name, private)
        view_class = _VIEW_CLASSES.get(key)
        if view_class is None:
            view_class = _VIEW_CLASSES[key] = _module_view_class(module, allowed, private)
        return object.__new__(view_class)

    def __init__(self, module: Any, allowed: frozenset[str], *, private: bool = False) -> None:
        pass

"""What `copy` may call from its own frame: the hooks it looks up with `getattr`.

`copy.copy` and `copy.deepcopy` look up `__copy__`, `__deepcopy__`, `__reduce_ex__` and
`__reduce__` and call what they find from copy's own frame, whose builtins are the real
ones. A C callable there reads those builtins: a reducer bound to a method returns
`(getattr, (obj, name))` with the real `getattr`, and `copy.copy` handed it back
(a class's `__copy__` set to `functools.partial(object.__reduce_ex__, [].append)`,
outside attack 69). So copy's `getattr` is `copy_getattr`: a hook it finds must be a
Python function or a method of one (its frame has its own builtins), or the library's own
method of the very object (or class) copied; anything else is refused before it is called.

Stdlib only: runs in local workers and Pyodide runners.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.guards import MRO, VARS
from mcp_code_mode.sandbox.child.rules import C_BOUND_METHODS, C_UNBOUND_METHODS

__all__ = ["COPY_HOOKS", "copy_getattr", "guarded_user_copy"]

COPY_HOOKS = frozenset({"__copy__", "__deepcopy__", "__reduce_ex__", "__reduce__"})


def copy_getattr(obj: Any, name: str, *default: Any) -> Any:
    """`getattr` for the `copy` module: as the builtin, but a copy hook it returns is one
    that runs in a frame of its own or is the copied object's own (see the module), and
    no hook copies an object whose class says it is of another (`__class__`): a library's
    `__copy__` makes the copy from `self.__class__` and writes its `__dict__` natively
    (`UserDict.__copy__` wrote the `tools` view's, outside attack 71)."""
    if name in COPY_HOOKS and _says_class(obj):
        raise TypeError("copy: the object's class names a __class__ of its own")
    value = getattr(obj, name, *default)
    if name in COPY_HOOKS and not (default and value is default[0]) and not _own(obj, name, value):
        raise TypeError(
            f"copy: the {name} of a {type(obj).__name__!r} object must be a function or a "
            f"method, not a {type(value).__name__!r}"
        )
    return value


def _says_class(obj: Any) -> bool:
    """Whether `obj`'s class (or `obj`, a class whose `__copy__` copy reads) names a
    `__class__` of its own."""
    classes = [*MRO(type(obj)), *(MRO(obj) if issubclass(type(obj), type) else ())]
    return any(klass is not object and "__class__" in VARS(klass) for klass in classes)


def _own(obj: Any, name: str, hook: Any) -> bool:
    """By identity throughout: a guest metaclass's `__eq__` answers `in` for its classes."""
    kind = type(hook)
    if kind is types.FunctionType:
        return True
    if kind is types.MethodType:
        return type(hook.__func__) is types.FunctionType
    # a library method bound to the object copied
    if any(kind is bound for bound in C_BOUND_METHODS):
        return hook.__self__ is obj
    if any(kind is unbound for unbound in C_UNBOUND_METHODS) and issubclass(type(obj), type):
        owner = hook.__objclass__  # `__copy__` read off the class: the class's own
        return any(owner is klass for klass in MRO(obj)) and VARS(owner).get(name) is hook
    return False


def guarded_user_copy(user: type, duplicate: Callable[[Any], Any]) -> None:
    """`UserDict.__copy__`/`UserList.__copy__` on the object's real class. The library's made
    the copy from `self.__class__` (whatever a lying `__class__` or `__getattribute__`
    named, and on anything when called unbound) and wrote its `__dict__` natively: a
    `__new__` that returned `tools` had the tools view's `__dict__` written, `typing.List`'s
    and asyncio's logger's likewise (outside attacks 71 and 73). Here the copy is a new
    object of the copied one's real class, or none; `duplicate` copies `data`."""

    def __copy__(self: Any) -> Any:
        cls: Any = type(self)
        if not any(klass is user for klass in MRO(cls)):
            raise TypeError(f"{user.__name__}.__copy__() takes {user.__name__} objects only")
        made = cls.__new__(cls)
        if type(made) is not cls:
            raise TypeError(f"copy: {cls.__name__}.__new__() made another kind of object")
        state = dict(object.__getattribute__(self, "__dict__"))
        mine = object.__getattribute__(made, "__dict__")
        mine.update(state)
        mine["data"] = duplicate(state["data"])
        return made

    user.__copy__ = __copy__  # type: ignore[attr-defined]

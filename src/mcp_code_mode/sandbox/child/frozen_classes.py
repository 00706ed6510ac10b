"""Every class that exists when a worker locks down becomes read-only, as the interpreter's
own built-in types are: library code can no longer be steered into writing a library
class's attributes, whatever route reaches it.

The guard layer checks the guest's own attribute writes, but library code writes with the
real `setattr` and plain assignments, and the guest picks what it writes on: an `__init__`
called unbound on its class (`json.JSONEncoder.__init__(json.JSONEncoder, default=f)`
changed every later `json.dumps`, outside attacks 50 and 73), a decorator applied to a
library class, a hook that stores on `cls`. One mechanism closes all of these: CPython's
`Py_TPFLAGS_IMMUTABLETYPE`, the flag its static types carry, set on every heap type found
by walking `object.__subclasses__()` (library, stdlib and worker classes alike) before any
guest code runs. `type.__setattr__` and `__class__` assignment then refuse with a
TypeError. Classes made later (the guest's, a namedtuple, a dataclass) stay writable; the
flag is not inherited.

The classes whose instances must be the library's own (asyncio's loops and transports act
on the OS from their private state, dataclasses compiles text from a `Field`, typing's
internals, the `tools` views), and `type` with every metaclass (guest code defines none, so
no class's `__eq__`, `__hash__` or `__mro__` is the guest's code where library code
compares or walks classes), lose `Py_TPFLAGS_BASETYPE`, with every subclass they have:
`type.__new__` checks it on each base before anything else, so no new subclass of them can
be made by any route (a class statement, `type(...)`, `type.__new__` on any metaclass).
Their `__init_subclass__` refusals were only a first base's to keep: a first base whose own
`__init_subclass__` said nothing passed them (outside attack 74).

Measured on CPython 3.11 and 3.13 (Pyodide): about 850 classes, 1-2 ms once per process.
The flag's word is found by layout (`tp_flags` follows 21 pointer-sized fields of a type
object) and checked against `__flags__` before each write; a build laid out otherwise is
left as it was.

Stdlib only; `ctypes` runs before the audit hook is installed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

__all__ = ["freeze_classes", "made_before_run"]

_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE
_HEAP = 1 << 9  # Py_TPFLAGS_HEAPTYPE
_BASETYPE = 1 << 10  # Py_TPFLAGS_BASETYPE: without it, "not an acceptable base type"

# Library classes that write their own class attributes at run time, and their subclasses:
# `weakref.finalize` records its atexit registration on the class, `zipfile.Path`
# re-classes a `ZipFile` it is given.
_WRITTEN_AT_RUN_TIME = (("weakref", "finalize"), ("zipfile", "ZipFile"))


def freeze_classes(sealed: Iterable[type] = ()) -> int:
    """Mark every writable class that exists now read-only, and `sealed` and their
    subclasses final; how many classes were changed."""
    import ctypes

    offset = ctypes.sizeof(ctypes.c_void_p) * 21
    exempt = _exempt()
    final = {id(klass) for base in sealed for klass in _all_classes(base)}
    changed = 0
    for klass in _all_classes(object):
        flags = klass.__flags__
        # a static type is read-only already; a heap type unless it writes itself
        new = flags if not flags & _HEAP or _exempt_class(klass, exempt) else flags | _IMMUTABLE
        new = new & ~_BASETYPE if id(klass) in final else new
        if new == flags:
            continue
        word = ctypes.c_ulong.from_address(id(klass) + offset)
        if word.value != flags:  # not the layout this module knows: write nothing more
            return changed
        word.value = new
        changed += 1
    return changed


def made_before_run(klass: type) -> bool:
    """Whether `klass` (a class) is read-only: one of the interpreter's own, or a class
    that existed when the worker locked down. Read through `type`'s own descriptor: a
    metaclass's `__flags__` could say anything. Never true of a class the guest made."""
    return bool(_FLAGS(klass) & _IMMUTABLE)


_FLAGS = type.__dict__["__flags__"].__get__


def _all_classes(root: type) -> Iterator[type]:
    """`root` and every subclass of it, once each, depth first."""
    seen: set[int] = set()
    stack: list[type] = [root]
    while stack:
        klass = stack.pop()
        if id(klass) in seen:
            continue
        seen.add(id(klass))
        yield klass
        stack.extend(type.__subclasses__(klass))


def _exempt() -> tuple[type, ...]:
    found = (getattr(sys.modules.get(m), name, None) for m, name in _WRITTEN_AT_RUN_TIME)
    return (type(sys), *(klass for klass in found if isinstance(klass, type)))


def _exempt_class(klass: type, exempt: tuple[type, ...]) -> bool:
    """Module subclasses (lazy modules re-class themselves) and `_WRITTEN_AT_RUN_TIME`."""
    return any(base is known for base in klass.__mro__ for known in exempt)

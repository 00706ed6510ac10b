"""The run-time guards: attribute access, formatting and stdlib entry points for guest code.

They close the routes by which code the policy never saw reaches the real builtins:
`getattr(str, 'format')` (fields that walk attributes), string annotations evaluated by
`typing` with a globals dict that lacks `__builtins__`, private attributes of objects that
are not the guest's own, and stdlib helpers that apply names the guest chose (through
`writes.guarded_names`, see `lockdown`). They are a language-level layer that gives clear errors,
not the boundary: the OS layers of the worker are.
"""

from __future__ import annotations

import enum
import sys
import types
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.frozen_classes import made_before_run
from mcp_code_mode.sandbox.child.read_only import ReadOnly, shown
from mcp_code_mode.sandbox.child.rules import (
    BLOCKED_ATTRIBUTES,
    CHECKED_READS,
    GUEST_MODULE,
    GUEST_ONLY_DUNDERS,
    PRIVATE_OK,
    REFUSED_DUNDERS,
    SHOWN_READS,
    VIEWED_DUNDERS,
    WRITER_DUNDERS,
)
from mcp_code_mode.sandbox.child.tools_view import Frozen, is_identifier_of

__all__ = [
    "MRO",
    "VARS",
    "exact_name",
    "guarded_format",
    "guest_getattr",
    "is_blocked",
    "is_guest_object",
    "is_private",
    "library_defines",
    "library_getattr",
    "on_writer_methods",
    "os_bases",
    "reads_itself",
    "safe_hasattr",
]


def exact_name(name: Any) -> str:
    """An attribute name as an exact `str`: a subclass's `startswith`, `__eq__` or
    `__hash__` would answer the checks one way and the real lookup another (outside attack
    8), so every guard checks and looks up this copy, never the guest's object."""
    if type(name) is str:
        return name
    if isinstance(name, str):
        return str.__str__(name)
    raise TypeError(f"attribute name must be string, not '{type(name).__name__}'")


def is_blocked(name: object) -> bool:
    """Refused on any object: the reaching dunders and the blocked attributes."""
    return isinstance(name, str) and (name in REFUSED_DUNDERS or name in BLOCKED_ATTRIBUTES)


def is_private(name: str) -> bool:
    return name.startswith("_") and not _is_dunder(name) and name not in PRIVATE_OK


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def is_guest_object(obj: Any) -> bool:
    """The guest's own: a function it defined (its globals are the guest's namespace), a
    method of one, an instance of a class it defined, or such a class; in each case one
    whose attributes are read from itself or by the guest's own code (`_plain_lookup`).
    By real type: `isinstance` believes a guest's `__class__` (outside attack 62)."""
    if type(obj) is types.MethodType:  # its reads go on to `__func__`: any callable (attack 63)
        obj = obj.__func__
        return type(obj) is types.FunctionType and _guest_function(obj)
    if (kind := type(obj)) is types.FunctionType:
        return _guest_function(obj)
    cls = obj if issubclass(kind, type) else kind
    # `__module__` of a class cannot be set by the guest (`safe_setattr`, the policy).
    own = getattr(cls, "__module__", None) == GUEST_MODULE and not issubclass(cls, Frozen)
    return own and _plain_lookup(type(obj))


def _guest_function(function: types.FunctionType) -> bool:
    main = sys.modules.get(GUEST_MODULE)
    return main is not None and function.__globals__ is getattr(main, "__dict__", None)


# C types whose attribute lookup reads another object's attributes: a guest subclass's
# instance `G(x, ())` of GenericAlias handed out `x.__dict__`, `x.__closure__` (outside
# attack 25); `super` reads along another class's MRO; a module's reads its `__getattr__`.
_FORWARDING = (types.GenericAlias, super, types.ModuleType)


def reads_itself(cls: type) -> bool:
    """Whether reading an attribute of a `cls` object finds it on the object or its
    classes, or runs the guest's own code: no class of it forwards reads to another
    object, nor reads names in a library's `__getattr__`/`__getattribute__`."""
    return _plain_lookup(cls)


def _plain_lookup(cls: type) -> bool:
    """`_plain_lookup_of`, kept per class while its MRO is the same tuple (a class's hooks
    cannot be set after it is made: `__getattr__` & co. are refused names; `__bases__`
    assignment makes a new MRO)."""
    mro = MRO(cls)
    known = _PLAIN.get(id(cls))  # by id: hashing a class may run its metaclass's code
    if known is None or known[0] is not cls or known[1] is not mro:
        if len(_PLAIN) >= _KEPT_CLASSES:
            _PLAIN.clear()
        known = _PLAIN[id(cls)] = (cls, mro, _plain_lookup_of(cls))
    return known[2]


_PLAIN: dict[int, tuple[type, tuple[type, ...], bool]] = {}
_KEPT_CLASSES = 4096  # verdicts kept (a run making classes in a loop starts over)


def os_bases(*, find: bool = False) -> tuple[type, ...]:
    """Library classes whose methods act on the OS through their private state: asyncio's
    event loops, child watchers, transports, servers, loop policies and runners. A guest subclass's
    instance made with `object.__new__` and given private state had the loop's `close()`
    reset the worker's signal handlers and a watcher close any descriptor (outside attack
    28): the private state of such an object is the library's, not the guest's, and no
    new subclass of them may be made (`lockdown`). (Only once asyncio is loaded: before,
    nothing can derive from them.) Found anew with `find` (by `lockdown`) and kept: looked
    up in `sys.modules` later, they could be missing when the interpreter empties it."""
    if _OS_BASES and not find:
        return _OS_BASES[0]
    names = (
        ("asyncio.events", "AbstractEventLoop"),
        ("asyncio.events", "AbstractEventLoopPolicy"),
        ("asyncio.events", "AbstractServer"),
        ("asyncio.transports", "BaseTransport"),
        ("asyncio.unix_events", "AbstractChildWatcher"),
        # its `run` sets a SIGINT handler to a method a subclass may override (attack 30)
        ("asyncio.runners", "Runner"),
    )
    found = (getattr(sys.modules.get(module), name, None) for module, name in names)
    bases = tuple(base for base in found if isinstance(base, type))
    if find:
        _OS_BASES[:] = [bases]
    return bases


_OS_BASES: list[tuple[type, ...]] = []


def _plain_lookup_of(cls: type) -> bool:
    """Whether the guest may treat instances of `cls` as its own: reading an attribute
    finds it on the instance or its classes (the interpreter's own lookup), or runs the
    guest's own code. No class in its MRO forwards reads to another object
    (`_FORWARDING`), acts on the OS through its private state (`os_bases`), reads names in
    a library's Python `__getattr__`/`__getattribute__` (typing's aliases), or has a hook
    that is not a function of the guest's (a library callable set as a guest class's
    `__getattr__`)."""
    refused = (*_FORWARDING, *os_bases())
    for klass in MRO(cls):
        if any(klass is base for base in refused):
            return False
        namespace = VARS(klass)
        guest = _is_guest_namespace(namespace)
        if (guest or not made_before_run(klass)) and _answers_for_itself(namespace):
            return False  # a forged `__module__` is no way out (attack 108)
        for hook in ("__getattr__", "__getattribute__"):
            value = namespace.get(hook)
            if value is None or any(value is benign for benign in _BENIGN_HOOKS):
                continue
            if guest and not (type(value) is types.FunctionType and _guest_function(value)):
                return False
            if not guest and type(value) is not _SLOT_WRAPPER:
                return False
    return True


def _refusal(obj: Any, name: str) -> str | None:
    """Why guest code may not read `obj.<name>`, or None when it may."""
    if is_identifier_of(obj, name):
        return None
    if is_blocked(name):
        return f"access to attribute {name!r} is not allowed"
    if name in CHECKED_READS and not (type(obj) is memoryview or is_guest_object(obj)):
        # An AttributeError's `obj` is the object a failed lookup was made on: a module a view
        # holds, a library's internals (outside attack 26: `enum.zz` raised with the real
        # `enum` as `.obj`); a GenericAlias over one forwards the read (attack 27).
        return (
            f"reading {name!r} is allowed on your own objects only (an AttributeError's "
            "may be an object your code never had)"
        )
    if (is_private(name) or name in GUEST_ONLY_DUNDERS) and not is_guest_object(obj):
        return (
            f"access to private attribute {name!r} of a {type(obj).__name__} object is not "
            "allowed (private attributes of your own classes are fine)"
        )
    if is_private(name) and library_defines(obj, name):
        return (
            f"private attribute {name!r} comes from a library class, not from your own "
            "(private attributes your classes define are fine)"
        )
    return None


_SLOT_WRAPPER = type(object.__dict__["__getattribute__"])
# enum's metaclass (3.11) looks a missing name up in the class's own member map only
_BENIGN_HOOKS = tuple(
    hook for hook in (enum.EnumType.__dict__.get("__getattr__"),) if hook is not None
)
MRO = type.__dict__["__mro__"].__get__
VARS = type.__dict__["__dict__"].__get__
"""A class's real MRO and `__dict__`, past any descriptor or metaclass of the guest's."""


def library_defines(obj: Any, name: str) -> bool:
    """Whether `obj.<name>` would be found first in a class the guest did not define: a
    private method a guest class inherits from a library base (`Enum._convert_` writes any
    module's globals) is the library's, not the guest's. Read from the classes' real
    `__dict__`s and MROs, never through the guest's own descriptors (an instance's
    `__dict__` may be one: an instance attribute named like a library class's private
    member is refused too)."""
    classes = [*(MRO(obj) if issubclass(type(obj), type) else ()), *MRO(type(obj))]
    for cls in classes:
        namespace = VARS(cls)
        if name in namespace:
            return not _is_guest_namespace(namespace)
    # Found in no class: the object's own, or what a `__getattr__` makes of the name. A
    # library's Python `__getattr__` (typing's aliases) reads it from another object with
    # the real getattr (outside attack 20: a guest subclass of `_GenericAlias`).
    return any(_library_reader(cls) for cls in MRO(type(obj)))


def _answers_for_itself(namespace: Any) -> bool:
    """Whether a guest class's namespace holds what the policy refuses in a class body, set
    through `type(name, bases, namespace)` (outside attack 106): a `__class__` (what
    `isinstance` believes) or a `__dict__` other than the interpreter's own descriptor."""
    held = namespace.get("__dict__")
    return "__class__" in namespace or not (held is None or type(held) is _GETSET)


_GETSET = type(type.__dict__["__dict__"])


def _is_guest_namespace(namespace: Any) -> bool:
    module = namespace.get("__module__")
    return type(module) is str and module == GUEST_MODULE


def _library_reader(cls: type) -> bool:
    """Whether `cls` defines a Python `__getattr__` or `__getattribute__` of a library's."""
    namespace = VARS(cls)
    return not _is_guest_namespace(namespace) and any(
        isinstance(namespace.get(hook), types.FunctionType)
        for hook in ("__getattr__", "__getattribute__")
    )


# How a writer method read by guest code is handed out (`writer_methods`, which builds on
# this module: `lockdown` puts its function here before any guest code runs).
_WRITER_METHOD: list[Callable[[Any, str, Any], Any]] = []
_C_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


def on_writer_methods(handle: Callable[[Any, str, Any], Any]) -> None:
    """Hand writer methods (`rules.WRITER_DUNDERS`) read by guest code to `handle`."""
    _WRITER_METHOD[:] = [handle]


def guest_getattr(obj: Any, name: str, *default: Any) -> Any:
    """`getattr` for guest code, and what `obj._x` in guest source compiles to.

    `str.format` / `format_map` come back guarded: their fields may not walk attributes
    or items, which would reach anything through the real `getattr`.
    """
    name = exact_name(name)  # a str subclass's name skipped the writer rule (attack 96)
    if name in WRITER_DUNDERS:  # no refusal is about these names
        return _WRITER_METHOD[0](obj, name, getattr(obj, name, *default))
    reason = _refusal(obj, name)
    if reason is not None:
        if default:
            return default[0]
        raise AttributeError(reason)
    value = getattr(obj, name, *default)
    if name in ("format", "format_map"):
        owner = obj if _is_str_or_kind(obj) else _str_of_method(value)
        if owner is not None:
            return guarded_format(owner, name)
    if name in VIEWED_DUNDERS and type(value) is dict and not _own_annotations(obj, value):
        return ReadOnly(value)  # a library's (`json.dumps`'s): read only, not a proxy
    if name in SHOWN_READS and isinstance(value, _C_DESCRIPTORS) and not is_guest_object(obj):
        raise AttributeError(f"read {name!r} off an object, not off its class")
    return shown(value)  # a proxy gives its mapping away (outside attack 101)


def _own_annotations(obj: Any, value: dict[str, Any]) -> bool:
    """Whether `value`, read as `obj.__annotations__`, is the guest's: `obj` is its own and
    no library class of its holds `value` (a guest subclass's instance read
    `json.JSONEncoder`'s, outside attack 99)."""
    if not is_guest_object(obj):
        return False
    classes = MRO(obj) if isinstance(obj, type) else MRO(type(obj))
    return not any(
        VARS(k).get("__annotations__") is value and not is_guest_object(k) for k in classes
    )


def _is_str_or_kind(obj: Any) -> bool:
    """A str, or str or a subclass of it (whose `format` is str's own)."""
    return isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))


def _str_of_method(value: Any) -> Any:
    """The str a `format` method read through something else is bound to, or `str` for the
    unbound one; None for anything else (`getattr(super(), 'format')` in a str subclass
    handed out the real one, outside attack 23). By exact type: no guest code runs."""
    if type(value) is types.BuiltinMethodType and isinstance(value.__self__, str):
        return value.__self__
    if type(value) is types.MethodDescriptorType and value.__objclass__ is str:
        return str
    return None


def guarded_format(obj: Any, name: str) -> Callable[..., str]:
    unbound = isinstance(obj, type)

    def call(*args: Any, **kwargs: Any) -> str:
        template, rest = (args[0], args[1:]) if unbound else (obj, args)
        if not isinstance(template, str):
            raise TypeError(f"str.{name}() needs a str")
        _check_format(template)
        method = getattr(template, name)
        return str(method(*rest, **kwargs))

    return call


def _outside_brackets(field: str) -> str:
    """The parts of a field name outside `[...]`: `0[a.b].c` -> `0.c` (items may hold dots).
    As Python reads a field: an index ends at the first `]`, brackets do not nest (`0[a[b].x`
    is the key `a[b` and then the attribute `x`, outside attack 24)."""
    out, inside = [], False
    for char in field:
        if inside:
            inside = char != "]"
        elif char == "[":
            inside = True
        else:
            out.append(char)
    return "".join(out)


def _check_format(template: str, depth: int = 0) -> None:
    import string

    for _, field, spec, _ in string.Formatter().parse(template):
        if field is not None and "." in _outside_brackets(field):
            raise ValueError(
                f"format field {{{field}}} looks up an attribute, which is not allowed "
                "here; compute the value first, or use an f-string"
            )
        if spec and depth < 2:
            _check_format(spec, depth + 1)


def library_getattr(obj: Any, name: str, *default: Any) -> Any:
    """`getattr` for stdlib code that reads names the guest chose (`functools.wraps`):
    the guard's, except that the `__dict__` of the guest's own objects may be read, as
    `update_wrapper` does on every wrapper (any other object's reads as empty: a builtin
    class's holds its descriptors, `object.__getattribute__` among them, outside attack 10),
    and the guest's own objects may have attributes named like modules (a dataclass field
    `os`)."""
    name = exact_name(name)
    if name == "__dict__":  # a class's is shown read-only (a proxy gives it away: attack 106)
        return shown(getattr(obj, name, *default)) if is_guest_object(obj) else {}
    if name in VIEWED_DUNDERS:  # `update_wrapper` sets them on the wrapper: a copy of the view
        value = guest_getattr(obj, name, *default)
        return dict(value) if type(value) is ReadOnly else value
    if name not in REFUSED_DUNDERS and is_guest_object(obj) and not library_defines(obj, name):
        # a field may be called `os` on the guest's class; what a library base defines (an
        # inherited `Enum._convert_`, outside attack 11) goes through the guard like any read
        return getattr(obj, name, *default)
    return guest_getattr(obj, name, *default)


def safe_hasattr(obj: Any, name: str) -> bool:
    name = exact_name(name)
    return _refusal(obj, name) is None and hasattr(obj, name)

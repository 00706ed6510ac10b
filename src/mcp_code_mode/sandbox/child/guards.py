"""The run-time guards: attribute access, formatting and stdlib entry points for guest code.

They close the routes by which code the policy never saw reaches the real builtins:
`getattr(str, 'format')` (fields that walk attributes), string annotations evaluated by
`typing` with a globals dict that lacks `__builtins__`, private attributes of objects that
are not the guest's own, and stdlib helpers that apply names the guest chose (through
`writes.guarded_names`, see `lockdown`). They are a language-level layer that gives clear errors,
not the boundary: the OS layers of the worker are.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.audit import Refused
from mcp_code_mode.sandbox.child.rules import (
    BLOCKED_ATTRIBUTES,
    GUEST_MODULE,
    GUEST_ONLY_DUNDERS,
    PRIVATE_OK,
    REFUSED_DUNDERS,
)
from mcp_code_mode.sandbox.child.scopes import TRUSTED_NAMES
from mcp_code_mode.sandbox.child.tools_view import Frozen, is_identifier_of

__all__ = [
    "exact_name",
    "guarded_cached_property",
    "guarded_dataclass",
    "guarded_global_enum",
    "guarded_make_dataclass",
    "guarded_pickle_by_enum_name",
    "guest_getattr",
    "install_guards",
    "is_blocked",
    "is_guest_object",
    "is_private",
    "library_getattr",
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
    method of one, an instance of a class it defined, or such a class."""
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if isinstance(obj, types.FunctionType):
        main = sys.modules.get(GUEST_MODULE)
        return main is not None and obj.__globals__ is getattr(main, "__dict__", None)
    cls = obj if isinstance(obj, type) else type(obj)
    # `__module__` of a class cannot be set by the guest (`safe_setattr`, the policy).
    return getattr(cls, "__module__", None) == GUEST_MODULE and not issubclass(cls, Frozen)


def _refusal(obj: Any, name: str) -> str | None:
    """Why guest code may not read `obj.<name>`, or None when it may."""
    if is_identifier_of(obj, name):
        return None
    if is_blocked(name):
        return f"access to attribute {name!r} is not allowed"
    if (is_private(name) or name in GUEST_ONLY_DUNDERS) and not is_guest_object(obj):
        return (
            f"access to private attribute {name!r} of a {type(obj).__name__} object is not "
            "allowed (private attributes of your own classes are fine)"
        )
    if is_private(name) and _library_defines(obj, name):
        return (
            f"private attribute {name!r} comes from a library class, not from your own "
            "(private attributes your classes define are fine)"
        )
    return None


_MRO = type.__dict__["__mro__"].__get__
_VARS = type.__dict__["__dict__"].__get__


def _library_defines(obj: Any, name: str) -> bool:
    """Whether `obj.<name>` would be found first in a class the guest did not define: a
    private method a guest class inherits from a library base (`Enum._convert_` writes any
    module's globals) is the library's, not the guest's. Read from the classes' real
    `__dict__`s and MROs, never through the guest's own descriptors (an instance's
    `__dict__` may be one: an instance attribute named like a library class's private
    member is refused too)."""
    classes = [*(_MRO(obj) if isinstance(obj, type) else ()), *_MRO(type(obj))]
    for cls in classes:
        namespace = _VARS(cls)
        if name in namespace:
            module = namespace.get("__module__")
            return not (type(module) is str and module == GUEST_MODULE)
    return False


def guest_getattr(obj: Any, name: str, *default: Any) -> Any:
    """`getattr` for guest code, and what `obj._x` in guest source compiles to.

    `str.format` / `format_map` come back guarded: their fields may not walk attributes
    or items, which would reach anything through the real `getattr`.
    """
    name = exact_name(name)
    reason = _refusal(obj, name)
    if reason is not None:
        if default:
            return default[0]
        raise AttributeError(reason)
    value = getattr(obj, name, *default)
    if name in ("format", "format_map") and _is_str_or_kind(obj):
        return _guarded_format(obj, name)
    return value


def _is_str_or_kind(obj: Any) -> bool:
    """A str, or str or a subclass of it (whose `format` is str's own)."""
    return isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))


def _guarded_format(obj: Any, name: str) -> Callable[..., str]:
    unbound = isinstance(obj, type)

    def call(*args: Any, **kwargs: Any) -> str:
        template, rest = (args[0], args[1:]) if unbound else (obj, args)
        if not isinstance(template, str):
            raise TypeError(f"str.{name}() needs a str")
        _check_format(template)
        method = getattr(template, name)
        return str(method(*rest, **kwargs))

    return call


def guarded_dataclass(dataclass: Callable[..., Any]) -> Callable[..., Any]:
    """`dataclasses.dataclass` for guest classes: it compiles source text from the field
    names, with the globals of `sys.modules[cls.__module__]` (the real builtins when that
    module does not exist), so the names must be identifiers and the class the guest's."""

    def check(cls: Any) -> None:
        if not isinstance(cls, type):
            return
        # Read from the real `__dict__`s, once: a metaclass `__module__` property answered
        # the guard one way and dataclasses another, and an annotations dict subclass gave
        # dataclasses other names than it gave the guard (outside attack 17).
        module = _VARS(cls).get("__module__")
        if not (type(module) is str and module == GUEST_MODULE) or _odd_metaclass(cls):
            raise TypeError("dataclass() takes classes defined by this code only")
        annotations = _VARS(cls).get("__annotations__", {})
        if type(annotations) is not dict:
            raise TypeError("dataclass() takes a class whose annotations are a plain dict")
        bad = [n for n in annotations if not (type(n) is str and n.isidentifier())]
        if bad:
            raise TypeError(f"dataclass field names must be identifiers, not {bad[0]!r}")

    def guarded(cls: Any = None, /, **options: Any) -> Any:
        if cls is None:

            def wrap(inner: Any) -> Any:
                check(inner)
                return dataclass(inner, **options)

            return wrap
        check(cls)
        return dataclass(cls, **options)

    guarded.__name__ = guarded.__qualname__ = "dataclass"
    guarded.__doc__ = dataclass.__doc__
    return guarded


def _odd_metaclass(cls: type) -> bool:
    """Whether `cls`'s metaclass (or one of its bases) defines `__module__` other than as a
    str: a descriptor there answers `cls.__module__` instead of the class's own."""
    for meta in _MRO(type(cls)):
        if meta is type or meta is object:  # `type`'s own is the descriptor that reads it
            continue
        value = _VARS(meta).get("__module__")
        if value is not None and type(value) is not str:
            return True
    return False


def guarded_global_enum(global_enum: Callable[..., Any], enum_type: type) -> Callable[..., Any]:
    """`enum.global_enum` for the guest's own enums only: it writes the members into
    `sys.modules[cls.__module__].__dict__`, and the functional API lets an enum name any
    module (outside attack 6 rewrote the audit hook's and the guards' globals so). Its
    metaclass must be enum's own, so that `__module__` is what the class holds."""

    def guarded(cls: Any, *args: Any, **kwargs: Any) -> Any:
        own = type(cls) is enum_type and vars(cls).get("__module__") == GUEST_MODULE
        if not own or type(vars(cls).get("__module__")) is not str:
            raise TypeError("global_enum() takes enums defined by this code only")
        # The members become the guest's globals: none may stand in for a name the policy
        # trusts (a member named `tools`, outside attack 19) or one of the sandbox's own.
        taken = [n for n in cls.__members__ if n in TRUSTED_NAMES or n.startswith("_mcp")]
        if taken:
            raise TypeError(f"global_enum(): a member may not be named {taken[0]!r}")
        return global_enum(cls, *args, **kwargs)

    guarded.__name__ = guarded.__qualname__ = "global_enum"
    guarded.__doc__ = global_enum.__doc__
    return guarded


def guarded_pickle_by_enum_name(pickle_by_enum_name: Callable[..., Any]) -> Callable[..., Any]:
    """`enum.pickle_by_enum_name` returns `(getattr, (cls, name))` with the real `getattr`:
    guest code gets its own guarded one instead (outside attack 16)."""

    def guarded(self: Any, proto: Any) -> Any:
        _, args = pickle_by_enum_name(self, proto)
        return guest_getattr, args

    guarded.__name__ = guarded.__qualname__ = "pickle_by_enum_name"
    return guarded


def guarded_make_dataclass(make_dataclass: Callable[..., Any]) -> Callable[..., Any]:
    """`dataclasses.make_dataclass` with field names that are exact `str` identifiers (a
    subclass's `isidentifier` and `__format__` put any text into the source it compiles,
    outside attack 12) and no `__module__` but the guest's (it picks the globals)."""

    def guarded(cls_name: Any, fields: Any, /, *args: Any, **options: Any) -> Any:
        specs = list(fields)
        for spec in specs:
            name = spec if isinstance(spec, str) else spec[0]
            if not (type(name) is str and name.isidentifier()):
                raise TypeError(f"make_dataclass field names must be identifiers, not {name!r}")
        namespace = options.get("namespace") or {}
        module = options.get("module", namespace.get("__module__", GUEST_MODULE))
        if not (type(module) is str and module == GUEST_MODULE):
            raise TypeError("make_dataclass() makes classes of this code's own module only")
        options["namespace"] = {**namespace, "__module__": GUEST_MODULE}  # 3.11 says `types`
        return make_dataclass(cls_name, specs, *args, **options)

    guarded.__name__ = guarded.__qualname__ = "make_dataclass"
    guarded.__doc__ = make_dataclass.__doc__
    return guarded


def guarded_cached_property(base: type) -> type:
    """`functools.cached_property` for the guest's own objects only: its `__get__` reads
    `instance.__dict__[attrname]`, so on a builtin type (`object`) with an attrname the
    guest chose it would hand out `object.__getattribute__`, a getattr with no guard."""

    class cached_property(base):  # type: ignore[misc]
        def __get__(self, instance: Any, owner: Any = None) -> Any:
            if instance is not None and not is_guest_object(instance):
                raise TypeError("cached_property works on instances of your own classes only")
            return super().__get__(instance, owner)

    cached_property.__module__ = base.__module__
    cached_property.__doc__ = base.__doc__
    return cached_property


def _outside_brackets(field: str) -> str:
    """The parts of a field name outside `[...]`: `0[a.b].c` -> `0.c` (items may hold dots)."""
    out, depth = [], 0
    for char in field:
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif depth == 0:
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
    if name == "__dict__":
        return getattr(obj, name, *default) if is_guest_object(obj) else {}
    if name not in REFUSED_DUNDERS and is_guest_object(obj) and not _library_defines(obj, name):
        # a field may be called `os` on the guest's class; what a library base defines (an
        # inherited `Enum._convert_`, outside attack 11) goes through the guard like any read
        return getattr(obj, name, *default)
    return guest_getattr(obj, name, *default)


def safe_hasattr(obj: Any, name: str) -> bool:
    name = exact_name(name)
    return _refusal(obj, name) is None and hasattr(obj, name)


_GUARDS: list[bool] = []


def install_guards(safe_builtins: dict[str, Any]) -> None:
    """Make `typing` evaluate string annotations with the guest's builtins (once per process).

    `typing.get_type_hints` (called by `functools.singledispatch().register`, for one)
    evaluates annotation text with a globals dict that may lack `__builtins__` (an object
    without `__globals__` gets `{}`); `eval` then inserts the *real* builtins, so
    `x: "__import__('os')"` would reach `os`. Every evaluation goes through
    `ForwardRef._evaluate`, so its globals get the guest's builtins. A forward reference
    made with `module=` would be evaluated in that module's globals instead
    (`ForwardRef("modules", module="sys")` is `sys.modules`): only the guest's own module
    may be named.
    """
    import typing

    if _GUARDS:
        return
    _GUARDS.append(True)
    evaluate, eval_type = typing.ForwardRef._evaluate, typing._eval_type  # type: ignore[attr-defined]

    def guarded(self: Any, globalns: Any, localns: Any, *args: Any, **kwargs: Any) -> Any:
        module = self.__forward_module__
        if module is not None and not (type(module) is str and module == GUEST_MODULE):
            raise Refused("a forward reference evaluated in another module is not allowed")
        scope, local = _guest_scope(globalns, localns, safe_builtins)
        return evaluate(self, scope, local, *args, **kwargs)

    def guarded_eval_type(t: Any, globalns: Any, localns: Any, *args: Any, **kwargs: Any) -> Any:
        # What `get_type_hints` calls with the globals it picked, before any `_evaluate`
        # (a ForwardRef subclass's own would get them as they are).
        scope, local = _guest_scope(globalns, localns, safe_builtins)
        return eval_type(t, scope, local, *args, **kwargs)

    typing.ForwardRef._evaluate = guarded  # type: ignore[method-assign]
    typing._eval_type = guarded_eval_type  # type: ignore[attr-defined]


def _guest_scope(
    globalns: Any, localns: Any, safe_builtins: dict[str, Any]
) -> tuple[dict[str, Any], Any]:
    """The globals and locals annotation text is evaluated in: a copy of the guest's own
    globals (or of such a copy) with the locals given, less real modules; else nothing at
    all, locals included; and the guest's builtins either way. `get_type_hints` picks the
    globals of whatever a function's `__wrapped__` leads to, or of a base class's module,
    and passes them as the locals too: a library module's names (`sys`, a dict of the real
    builtins) would reach text the policy never saw."""
    own = getattr(sys.modules.get(GUEST_MODULE), "__dict__", None)
    copied = type(globalns) is dict and dict.get(globalns, "__builtins__") is safe_builtins
    if not (globalns is own or copied):
        return {"__builtins__": safe_builtins}, {}
    scope = dict(globalns)
    scope["__builtins__"] = safe_builtins
    return scope, _without_modules(localns)


def _without_modules(localns: Any) -> Any:
    """Local names for an evaluation, less any real module (a library class's attributes)."""
    if type(localns) is not dict:
        return localns
    return {k: v for k, v in localns.items() if not isinstance(v, types.ModuleType)}

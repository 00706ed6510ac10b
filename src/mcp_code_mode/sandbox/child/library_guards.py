"""Stdlib entry points handed out wrapped: each applies names, modules or classes the guest
chose, so each takes the guest's own only (see `lockdown` and `module_view`, which install
them; `guards` has the attribute checks they rest on)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, cast

from mcp_code_mode.sandbox.child.frozen_classes import made_before_run
from mcp_code_mode.sandbox.child.guards import (
    MRO,
    VARS,
    guarded_format,
    guest_getattr,
    is_guest_object,
)
from mcp_code_mode.sandbox.child.rules import GUEST_MODULE
from mcp_code_mode.sandbox.child.scopes import TRUSTED_NAMES

__all__ = [
    "REFUSED_CALLS",
    "guarded_alias_reduce",
    "guarded_cached_property",
    "guarded_compose_mro",
    "guarded_enum_property_get",
    "guarded_final_subclass",
    "guarded_find_caller",
    "guarded_forward_ref_init",
    "guarded_global_enum",
    "guarded_partialmethod",
    "guarded_pickle_by_enum_name",
    "guarded_user_string",
    "guest_only_marker",
    "guest_only_markers",
    "refuse_calls",
    "refuse_subclasses",
]


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
        # Exact `str` names, checked in a plain copy that is then what `global_enum` writes:
        # a `str` subclass said "int" was no trusted name, then that it was (attack 53).
        members = VARS(cls).get("_member_map_")
        if type(members) is not dict:
            raise TypeError("global_enum() takes enums whose members are enum's own")
        members = dict(members)
        taken = [
            n for n in members if type(n) is not str or n in TRUSTED_NAMES or n.startswith("_mcp")
        ]
        if taken:
            name = repr(taken[0]) if type(taken[0]) is str else "by a str subclass"
            raise TypeError(f"global_enum(): a member may not be named {name}")
        type.__setattr__(cls, "_member_map_", members)
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


def guarded_cached_property(base: type) -> type:
    """`functools.cached_property` for the guest's own objects only: its `__get__` reads
    `instance.__dict__[attrname]`, so on a builtin type (`object`) with an attrname the
    guest chose it would hand out `object.__getattribute__`, a getattr with no guard.

    What `functools` hands out from now on is a subclass; the check is on the base's own
    `__get__`, in place, for every instance of a subclass (`super(cached_property,
    cp).__get__(object)` reached the unchecked one, outside attack 29). And every
    property, the library's own made before (of the base class) too, serves only the
    instances whose class holds it under its name, as attribute lookup would use it:
    `ipaddress`'s `broadcast_address` with its public `attrname` rewritten read
    `object.__dict__["__getattribute__"]` (outside attack 38)."""
    get = cast(Any, base).__get__

    def __get__(self: Any, instance: Any, owner: Any = None) -> Any:
        if instance is not None:
            if type(self) is not base and not is_guest_object(instance):
                raise TypeError("cached_property works on instances of your own classes only")
            if type(self) is base and not _holds(type(instance), self):
                raise TypeError(
                    "a cached_property serves only instances of a class that holds it "
                    "under its name"
                )
        return get(self, instance, owner)

    base.__get__ = __get__  # type: ignore[attr-defined]
    cached_property = type("cached_property", (base,), {"__doc__": base.__doc__})
    cached_property.__module__ = base.__module__
    return cached_property


def _holds(cls: type, prop: Any) -> bool:
    """Whether looking `prop.attrname` up on `cls` finds `prop` (an exact `str` name: one
    of the guest's could answer `cache.get` for another key)."""
    name = prop.attrname  # of the base class: an instance attribute, no code of the guest's
    if type(name) is not str:
        return False
    for klass in MRO(cls):
        namespace = VARS(klass)
        if name in namespace:
            return namespace[name] is prop
    return False


def guest_only_marker(mark: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A decorator that writes a flag onto its argument (`typing.final`,
    `typing.no_type_check`) for the guest's own objects only: a library function it was
    given kept the flag for the rest of the run (outside attack 69). Anything else is
    handed back as it is, as `final` does with what it cannot write."""

    def marked(arg: Any) -> Any:
        return mark(arg) if is_guest_object(arg) else arg

    marked.__name__ = marked.__qualname__ = getattr(mark, "__name__", "marker")
    marked.__doc__ = mark.__doc__
    return marked


def guarded_overload(overload: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`typing.overload`, recording only a function of the guest's own module: it files its
    argument under the module and name of `getattr(arg, "__func__", arg)`, so a library
    function (attack 101), a guest object whose `__getattr__` answered `__func__` with one,
    or a guest function renamed into `json` (attack 104) was filed under the library's
    (`get_overloads(json.dumps)`). Anything else is handed back unrecorded."""

    def marked(func: Any) -> Any:
        kind = type(func)
        inner = func.__func__ if kind in (classmethod, staticmethod, types.MethodType) else func
        if type(inner) is not types.FunctionType or not is_guest_object(inner):
            return func  # nothing read off it: a property or `__getattr__` would run
        module, name = inner.__module__, inner.__qualname__
        if (
            type(module) is str
            and module == GUEST_MODULE
            and type(name) is str
            and (kind is not types.FunctionType or "__func__" not in func.__dict__)
        ):  # (overload reads `__func__` off a function too: one the guest set would do)
            return overload(func)
        return func

    marked.__name__ = marked.__qualname__ = "overload"
    marked.__doc__ = overload.__doc__
    return marked


def guest_only_markers(make: Callable[..., Callable[[Any], Any]]) -> Callable[..., Any]:
    """A decorator factory whose decorators write onto their argument
    (`typing.dataclass_transform(...)`: guest-chosen values under a fixed name, outside
    attack 93): its decorators mark the guest's own objects only."""

    def factory(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        return guest_only_marker(make(*args, **kwargs))

    factory.__name__ = factory.__qualname__ = getattr(make, "__name__", "markers")
    factory.__doc__ = make.__doc__
    return factory


def guarded_enum_property_get(get: Callable[..., Any], exact: Any) -> Callable[..., Any]:
    """`enum.property.__get__`: on 3.12+ a member named like a base class's attribute is
    read through `getattr(cls or value, name)`, the real getattr on whatever value the guest
    gave the member, by the member's name (`_names` of the tools view, outside attack 23).
    Those two cases read through the guest's guarded `getattr`.

    Only for `enum.property` itself (the stdlib has no subclass of it): a guest subclass's
    `_attr_type` property answered this check one way and the original's second read the
    other, and the original read `json.dumps.__globals__` (outside attack 32, 3.13)."""

    def __get__(self: Any, instance: Any, ownerclass: Any = None) -> Any:
        if type(self) is not exact:
            raise TypeError("subclasses of enum.property are not supported in the sandbox")
        kind = getattr(self, "_attr_type", None)  # the property's own: enum set it
        if kind is not None and type(kind) is not str:  # it answered `in` one way, enum's
            raise TypeError("an enum.property of this kind is not supported")  # `==` another
        if instance is not None and self.fget is None and kind in ("attr", "desc"):
            target = self._cls_type if kind == "attr" else instance._value_
            return guest_getattr(target, self.name)
        return get(self, instance, ownerclass)

    return __get__


def guarded_alias_reduce(reduce: Callable[..., Any], typing: Any) -> Callable[..., Any]:
    """`typing._GenericAlias.__reduce__` (its subclasses' too) for typing's own aliases of
    typing's public names: it looks `self._name` up in typing's globals, and the public
    constructor takes any `name=` (`"__builtins__"` made `copy.copy` hand out the real
    `getattr`, outside attack 71). Typing's own classes by identity, taken now: a guest
    subclass said `__module__ = "typing"` and had a `_name` property that answered the
    check one name and the reducer another (outside attack 72)."""
    public = frozenset(typing.__all__)
    own = tuple(
        cls
        for cls in vars(typing).values()
        if isinstance(cls, type) and issubclass(cls, typing._GenericAlias)
    )

    def __reduce__(self: Any) -> Any:
        if not any(type(self) is cls for cls in own):
            raise TypeError("copying a subclass of typing's aliases is not supported")
        name = self._name  # a plain attribute of typing's own class: not the guest's to write
        if name and not (type(name) is str and name in public):
            raise TypeError(f"copying a typing alias named {name!r} is not supported")
        return reduce(self)

    return __reduce__


def guarded_final_subclass(final: type) -> None:
    """`typing._Final` subclasses only as typing made them before the run: `_root=True`
    (which the policy refuses as a keyword, not from `**{...}`) let a guest class subclass
    typing's aliases (outside attack 72)."""

    def __init_subclass__(cls: type, /, *args: Any, **kwds: Any) -> None:
        raise TypeError("Cannot subclass special typing classes")

    final.__init_subclass__ = classmethod(__init_subclass__)  # type: ignore[assignment]


def guarded_forward_ref_init(init: Callable[..., Any], exact: type) -> Callable[..., Any]:
    """`typing.ForwardRef.__init__` for forward references only: called unbound on a guest
    object it compiled the guest's text and left the code object in the guest's own
    `__dict__` (outside attack 51; inert, but `compile()` is not the guest's)."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if not type.__dict__["__subclasscheck__"](exact, type(self)):
            raise TypeError("ForwardRef.__init__() takes forward references only")
        init(self, *args, **kwargs)

    return __init__


def guarded_user_string(user_string: type) -> None:
    """`collections.UserString.format`/`format_map` pass the call on to `str.format` of
    their data: guarded as str's own are (outside attack 24), in place."""

    def format(self: Any, *args: Any, **kwargs: Any) -> str:
        return guarded_format(self.data, "format")(*args, **kwargs)

    def format_map(self: Any, mapping: Any) -> str:
        return guarded_format(self.data, "format_map")(mapping)

    user_string.format = format  # type: ignore[attr-defined]
    user_string.format_map = format_map  # type: ignore[attr-defined]


def guarded_find_caller(find_caller: Callable[..., Any]) -> Callable[..., Any]:
    """`logging.Logger.findCaller` (trusted to read frames) names the logging call's own
    caller only: `stack_info=True` rendered the whole stack, the worker's frames and source
    lines among them, into a record a guest filter could read, and `stacklevel` picked any
    frame (outside attack 27)."""

    def findCaller(self: Any, stack_info: bool = False, stacklevel: int = 1) -> Any:
        return find_caller(self, False, 2)  # 2: past this function, to the caller

    return findCaller


def refuse_subclasses(
    base: type, why: str = "its methods act on the OS through the instance's private state"
) -> None:
    """No new subclass of `base` (see `guards.os_bases`), however it is made (a class
    statement, `type(name, bases, namespace)`, a metaclass): `type.__new__` calls the
    base's `__init_subclass__`, here refusing. Set once locked down: the library's own
    subclasses exist already."""

    def __init_subclass__(cls: type, /, **kwargs: Any) -> None:
        raise TypeError(f"subclassing {base.__qualname__} is not allowed in the sandbox ({why})")

    base.__init_subclass__ = classmethod(__init_subclass__)  # type: ignore[assignment]


def guarded_compose_mro(compose: Callable[..., Any]) -> Callable[..., Any]:
    """functools' `_compose_mro` (how `singledispatch` finds an implementation) for classes
    whose metaclass existed before the run: it calls `object.__subclasses__()` and tests
    each class the process holds against a set made from `cls.__mro__`, so a guest
    `__mro__` (a plain object's attribute, a guest metaclass's property) full of objects
    whose `__hash__` matched class addresses had their `__eq__` handed every hidden class
    (`BuiltinImporter`, then the real builtins: outside attack 80). A library metaclass
    answers `__mro__`, `__hash__` and `__eq__` with the class's own."""

    def _compose_mro(cls: Any, types: Any) -> Any:
        types = list(types)
        if not all(issubclass(type(c), type) and made_before_run(type(c)) for c in (cls, *types)):
            raise TypeError("singledispatch takes classes whose metaclass is the library's only")
        return compose(cls, types)

    return _compose_mro


def guarded_partialmethod(partialmethod: Any) -> None:
    """`partialmethod.__get__` copies `func.__self__` onto the partial it makes with the
    real lookup: of a builtin given as a staticmethod (`partialmethod(staticmethod(len))`)
    that is the real builtins module, held in an object of the guest's (outside attack
    68). In place: the copy stays only when it is the guest's own object."""
    get = partialmethod.__get__

    def __get__(self: Any, obj: Any, cls: Any = None) -> Any:
        made = get(self, obj, cls)
        held = getattr(made, "__dict__", None)
        if type(held) is dict and "__self__" in held and not is_guest_object(held["__self__"]):
            del held["__self__"]
        return made

    partialmethod.__get__ = __get__


REFUSED_CALLS: dict[str, tuple[str, ...]] = {
    # the functions that change how this process takes signals: the worker's soft time
    # limit is a SIGALRM handler and a timer (SIGINT under Pyodide)
    "signal": ("signal", "set_wakeup_fd", "setitimer", "alarm", "siginterrupt", "pthread_sigmask"),
    # DEBUG_SAVEALL keeps every cycle the collector frees, frames and tracebacks among
    # them, in `gc.garbage` for anyone to read (with `gc` allowed: outside attack 35)
    "gc": ("set_debug",),
    # its C handler took SIGALRM past `signal.signal`, and its dumps write to any
    # descriptor, the host channel among them (with `faulthandler` allowed: attack 36)
    "faulthandler": ("register", "dump_traceback", "dump_traceback_later", "enable"),
    # asyncio's `sock_sendfile` copies between any two descriptors the objects it is given
    # name: a guest's report into the host channel (outside attack 66)
    "os": ("sendfile",),
    # it hands the `update` of a digest the guest chose a real `memoryview`, a builtin the
    # guest's view leaves out (outside attack 127); guest code has no file to digest
    "hashlib": ("file_digest",),
}
"""Module functions refused to everyone once a worker is locked down (`refuse_calls`)."""


def refuse_calls(module: Any, names: tuple[str, ...]) -> None:
    """Once locked down, nothing but the worker's own code (which kept the real functions
    it needs, `worker.SET_HANDLER`) calls `module`'s `names`: library code that acts on
    state the guest chose (a loop's `close()` removing the handlers its subclass's class
    body listed, a `Runner` installing its subclass's `_on_sigint`, outside attacks 28, 30
    and 32) gets a ValueError, the error `signal.signal` gives off the main thread, which
    asyncio's `Runner` already expects. One wall for every route, beside the subclass
    refusal and the names blocked on the way."""
    for name in names:
        real = getattr(module, name, None)
        if real is not None:
            setattr(module, name, _refusing(f"{module.__name__}.{name}", real))


def _refusing(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        if name == "signal.set_wakeup_fd" and _changes_nothing(real, args, kwargs):
            return -1
        raise ValueError(f"{name}() is not allowed in the sandbox")

    refused.__name__ = refused.__qualname__ = name.rpartition(".")[2]
    return refused


def _changes_nothing(set_wakeup_fd: Callable[..., Any], args: Any, kwargs: Any) -> bool:
    """`set_wakeup_fd(-1)` while none is set: the call asyncio's at-fork hook makes in
    every process forked from a locked-down zygote on Python 3.12+ (refused, it printed
    "Exception ignored in a finalizer" once for each worker: outside attack 136)."""
    if kwargs or len(args) != 1 or type(args[0]) is not int or args[0] != -1:
        return False
    held = set_wakeup_fd(-1)
    if held != -1:  # one was set: put back, and refused
        set_wakeup_fd(held)
    return bool(held == -1)

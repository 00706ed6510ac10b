"""Close the guest's view, once per worker process, after the allowed modules are loaded.

Two parts, one idea: what guest code cannot name it cannot reach, and what it reaches it
cannot use.

- Stdlib functions that apply attribute names the guest chose (`functools.update_wrapper`
  and `wraps` read and write `assigned`/`updated`; `copy` applies a reducer's state;
  `dataclasses` reads `Field.name`) get the guest's guarded `getattr`/`setattr` in their
  module's globals, which shadow the builtins for exactly those modules; and
  `functools.cached_property` reads only the guest's own objects' `__dict__`.
- The audit hook (`audit`) decides every event that runs code, reaches frames or code
  objects, imports, or touches the OS, by the nearest frame that owns it.

Stdlib only; runs in local workers (the zygote, before it forks) and in Pyodide runners.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from types import CodeType, MethodType, ModuleType
from typing import Any

from mcp_code_mode.sandbox.child import (
    audit,
    module_view,
    outcome,
    rewrite,
    stray_errors,
    worker,
)
from mcp_code_mode.sandbox.child.copy_hooks import (
    copy_getattr,
    guarded_deepcopy,
    guarded_reconstruct,
    guarded_user_copy,
    keep_alive,
)
from mcp_code_mode.sandbox.child.dataclass_methods import guard_generated_methods
from mcp_code_mode.sandbox.child.enum_guard import guarded_enum_new
from mcp_code_mode.sandbox.child.forward_refs import guard_forward_refs
from mcp_code_mode.sandbox.child.frozen_classes import freeze_classes
from mcp_code_mode.sandbox.child.generated import guard_generated_code
from mcp_code_mode.sandbox.child.guards import (
    guest_getattr,
    on_writer_methods,
    os_bases,
    safe_hasattr,
)
from mcp_code_mode.sandbox.child.guest import GuestRuntime
from mcp_code_mode.sandbox.child.library_caches import key_caches
from mcp_code_mode.sandbox.child.library_guards import (
    REFUSED_CALLS,
    guarded_alias_reduce,
    guarded_cached_property,
    guarded_compose_mro,
    guarded_enum_property_get,
    guarded_final_subclass,
    guarded_find_caller,
    guarded_forward_ref_init,
    guarded_global_enum,
    guarded_overload,
    guarded_partialmethod,
    guarded_user_string,
    guest_only_marker,
    guest_only_markers,
    refuse_calls,
    refuse_subclasses,
)
from mcp_code_mode.sandbox.child.read_only import ReadOnly, read_only_members
from mcp_code_mode.sandbox.child.rules import (
    BLOCKED_ATTRIBUTES,
    GUEST_ONLY_DUNDERS,
    REFUSED_DUNDERS,
    REMOVED_BUILTINS,
)
from mcp_code_mode.sandbox.child.tools_view import Frozen
from mcp_code_mode.sandbox.child.trusted import LINES, reads, trusted_helpers
from mcp_code_mode.sandbox.child.writer_methods import guarded_deepcopy_method, writer_method
from mcp_code_mode.sandbox.child.writes import (
    AttributeTarget,
    guarded_names,
    guarded_update_wrapper,
    safe_delattr,
    safe_setattr,
)

__all__ = ["GENERATED_CODE_FORBIDS", "lock_down"]

_INTERNALS = ("gi_", "cr_", "ag_", "tb_", "f_b", "f_c", "f_g", "f_l", "co_", "cel")

GENERATED_CODE_FORBIDS = (
    (REFUSED_DUNDERS - {"__setattr__", "__delattr__"})
    | GUEST_ONLY_DUNDERS
    | {name for name in BLOCKED_ATTRIBUTES if name[:3] in _INTERNALS or name.startswith("__")}
    | set(REMOVED_BUILTINS)  # what guest code cannot call, generated code may not name either
)
"""Names that code a trusted helper compiles from the guest's names may not mention: the
dunders and the frame, code and generator internals (frozen dataclasses call
`object.__setattr__`, so those two are allowed; a field may be called `os`)."""

# Module -> the builtins it resolves to the guest's guarded versions.
_NAME_TAKERS: dict[str, tuple[str, ...]] = {
    "functools": ("getattr", "setattr"),
    "copy": ("setattr",),
    # `NamedTupleMeta` sets every namespace key on the class it makes (`__bases__` too,
    # outside attack 80); an alias's `__setattr__` sets public names on its origin
    "typing": ("setattr",),
    "dataclasses": ("getattr",),  # asdict/astuple/replace read `Field.name`, which can change
}

_DONE: list[bool] = []


def lock_down(
    allowed_imports: Iterable[str],
    *,
    warm_up: Callable[..., Any] | None = None,
    modules: dict[str, Any] | None = None,
) -> None:
    """Shadow the name-taking builtins of `_NAME_TAKERS`, then install the audit hook.

    `warm_up`: the backend's function that runs a trivial snippet before any real run."""
    if _DONE:
        return
    _DONE.append(True)
    loaded = sys.modules if modules is None else modules
    guarded = guarded_names()
    guests: dict[str, Callable[..., Any]] = {
        "getattr": guest_getattr,
        "setattr": safe_setattr,
        "delattr": safe_delattr,
    }
    for name, guest in guests.items():
        module_view.GUEST_VERSIONS[id(guarded[name])] = (guarded[name], guest)
    on_writer_methods(writer_method)
    for name, builtins in _NAME_TAKERS.items():
        module = loaded.get(name)
        if module is not None:
            module.__dict__.update({b: guarded[b] for b in builtins})
    overload = getattr(loaded.get("typing"), "overload", None)  # wrapped next: its code
    _wrap_libraries(loaded)
    trusted = trusted_helpers(loaded, _own_helpers(overload))
    # after: `_create_fn` and `ForwardRef._evaluate` stay the trusted ones
    if loaded.get("dataclasses") is not None:
        guard_generated_code(loaded["dataclasses"])
        shadow = guard_generated_methods(loaded["dataclasses"])
        module_view.GUEST_VERSIONS[id(shadow)] = (shadow, safe_setattr)
    if loaded.get("typing") is not None:
        guard_forward_refs(loaded["typing"])
    runners = {rewrite.compile_guest.__code__: "compile", worker.run_guest_code.__code__: "exec"}
    if warm_up is not None:
        runners[warm_up.__code__] = "exec before"
    runners.update(dict.fromkeys(_guest_proxies(), "guest"))
    stray_errors.install(loaded)  # sets the one `sys.unraisablehook` the audit hook grants
    freeze_classes(_sealed(loaded))  # last of the writes; before the hook refuses `ctypes`
    audit.install(
        guest_filename=rewrite.GUEST_FILENAME,
        trusted=trusted,
        forbidden_names=GENERATED_CODE_FORBIDS,
        allowed_imports=allowed_imports,
        runners=runners,
    )


def _own_helpers(overload: Any) -> list[tuple[Callable[..., Any], frozenset[str], Any]]:
    """The worker's own trusted helpers (see `trusted.trusted_helpers`), and typing's
    `overload` as it was before `_wrap_typing` (its wrapper calls it)."""
    own: list[tuple[Callable[..., Any], frozenset[str], Any]] = [
        (GuestRuntime._import, audit.IMPORT_EVENTS, None),  # whatever a module's code runs
        (outcome.guest_line, frozenset(reads("tb_frame", "f_code")), ()),
        (outcome.guest_frames, frozenset([*reads("tb_frame", "f_code"), "open"]), LINES),
    ]
    if overload is not None:
        own.append((overload, frozenset(reads("__code__")), ()))
    return own


def _wrap_libraries(loaded: dict[str, Any]) -> None:
    """The stdlib entry points that apply the guest's names, objects or state, wrapped in
    place (see `library_guards`, `writes`)."""
    enum: Any = loaded.get("enum")
    if enum is not None:
        enum.global_enum = guarded_global_enum(enum.global_enum, enum.EnumType)
        made = guarded_enum_new(enum.EnumType.__new__, enum.EnumType, enum.Enum)
        enum.EnumType.__new__ = staticmethod(made)
        enum.property.__get__ = guarded_enum_property_get(enum.property.__get__, enum.property)
        members = enum.EnumType.__dict__["__members__"]  # a proxy of the class's own map
        enum.EnumType.__members__ = property(read_only_members(members.fget), doc=members.__doc__)
    collections: Any = loaded.get("collections")
    if collections is not None:
        guarded_user_string(collections.UserString)
        guarded_user_copy(collections.UserDict, lambda data: data.copy())
        guarded_user_copy(collections.UserList, lambda data: data[:])
    dataclasses: Any = loaded.get("dataclasses")
    if dataclasses is not None:  # a subclass's `name` property said anything (attack 45)
        refuse_subclasses(dataclasses.Field, "its instances are the text dataclasses compiles")
        dataclasses._EMPTY_METADATA = ReadOnly({})  # every field's without metadata of its own
    _refuse(loaded)
    typing: Any = loaded.get("typing")
    if typing is not None:
        _wrap_typing(typing, loaded)
    key_caches(loaded)
    logging: Any = loaded.get("logging")
    if logging is not None:
        logging.Logger.findCaller = guarded_find_caller(logging.Logger.findCaller)
    functools: Any = loaded.get("functools")
    if functools is not None:
        functools.cached_property = guarded_cached_property(functools.cached_property)
        functools._compose_mro = guarded_compose_mro(functools._compose_mro)
        functools.update_wrapper = guarded_update_wrapper(functools.update_wrapper)
        guarded_partialmethod(functools.partialmethod)
    copy: Any = loaded.get("copy")
    if copy is not None:
        # the hooks copy calls from its own frame (outside attack 69); the guest reading
        # `copy.getattr` gets its own
        copy.getattr = copy_getattr
        module_view.GUEST_VERSIONS[id(copy_getattr)] = (copy_getattr, guest_getattr)
        copy._reconstruct = guarded_reconstruct(copy._reconstruct)
        copy.deepcopy = guarded_deepcopy(copy.deepcopy)
        copy._keep_alive = keep_alive
        # copyreg's table, as copy reads it: not the guest's to extend (attack 95), nor
        # given away as a proxy's mapping (attack 101)
        copy.dispatch_table = ReadOnly(copy.dispatch_table)
        # A bound method copies as itself (as `deepcopy` has it), never through its reducer.
        copy._copy_dispatch[MethodType] = copy._copy_immutable
        deep = copy._deepcopy_dispatch
        deep[MethodType] = guarded_deepcopy_method(deep[MethodType])


def _wrap_typing(typing: Any, loaded: dict[str, Any]) -> None:
    forward_ref = typing.ForwardRef
    forward_ref.__init__ = guarded_forward_ref_init(forward_ref.__init__, forward_ref)
    alias = typing._GenericAlias
    alias.__reduce__ = guarded_alias_reduce(alias.__reduce__, typing)
    guarded_final_subclass(typing._Final)
    # abstractmethod: abc's, as typing names it (attack 94); abc's own name stays, for the
    # library modules a run imports, which mark their own methods with it
    names = ("abstractmethod", "final", "no_type_check", "override")  # override: 3.12+
    wrapped = {id(m): (m, guest_only_marker(m)) for n in names if (m := getattr(typing, n, None))}
    made = typing.dataclass_transform
    wrapped[id(made)] = (made, guest_only_markers(made))
    wrapped[id(typing.overload)] = (typing.overload, guarded_overload(typing.overload))
    # every module's name for them (`asyncio.timeouts.final` is typing's, attack 95;
    # `collections.abc.abstractmethod` is abc's on 3.13, attack 96)
    for module in list(loaded.values()):
        if not isinstance(module, ModuleType) or module.__name__ == "abc":
            continue
        for name, value in list(module.__dict__.items()):
            if (kept := wrapped.get(id(value))) is not None and kept[0] is value:
                setattr(module, name, kept[1])


def _refuse(loaded: dict[str, Any]) -> None:
    """No subclass of the OS-acting bases, and none of the refused calls, for anyone."""
    for base in os_bases(find=True):
        refuse_subclasses(base)
    for name, calls in REFUSED_CALLS.items():
        if loaded.get(name) is not None:
            refuse_calls(loaded[name], calls)


def _sealed(loaded: dict[str, Any]) -> list[type]:
    """The classes that take no new subclass (see `frozen_classes`)."""
    # `type`: no metaclass of the guest's, whose `__eq__`, `__hash__`, `__mro__` or `mro()`
    # would answer for its classes wherever library code compares or walks them (outside
    # attacks 69-81); Frozen: the `tools` views; staticmethod and classmethod: they copy
    # the function's annotations dict, as it is, into an instance `__dict__` a guest
    # subclass's instance handed out (`json.dumps`'s, `call_tool`'s; outside attack 100)
    sealed = [type, *os_bases(), Frozen, staticmethod, classmethod, ReadOnly]
    dataclasses: Any = loaded.get("dataclasses")
    typing: Any = loaded.get("typing")
    if dataclasses is not None:
        sealed.append(dataclasses.Field)
    if typing is not None:
        sealed.append(typing._Final)
    return sealed


def _guest_proxies() -> list[Any]:
    """The guards that act for the guest (what its `getattr`, `setattr`, ... and module views
    are): a trusted stdlib helper that calls back into one of them, say a metaclass's
    namespace `update` set to `setattr` under `make_dataclass`, does not vouch for what it
    does (outside attack 8)."""
    views = module_view._module_view_class.__code__.co_consts
    return [
        *(f.__code__ for f in (guest_getattr, safe_setattr, safe_delattr, safe_hasattr)),
        *(
            f.__code__
            for f in (
                AttributeTarget.__setitem__,
                AttributeTarget.__delitem__,
                AttributeTarget.__getitem__,
            )
        ),
        *(c for c in views if isinstance(c, CodeType) and c.co_name in ("getattr_", "setattr_")),
    ]

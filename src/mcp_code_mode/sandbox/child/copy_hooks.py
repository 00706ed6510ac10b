"""What `copy` may call from its own frame: the hooks it looks up with `getattr`.

`copy.copy` and `copy.deepcopy` look up `__copy__`, `__deepcopy__`, `__reduce_ex__` and
`__reduce__` and call what they find from copy's own frame, whose builtins are the real
ones. A C callable there reads those builtins: a reducer bound to a method returns
`(getattr, (obj, name))` with the real `getattr`, and `copy.copy` handed it back
(a class's `__copy__` set to `functools.partial(object.__reduce_ex__, [].append)`,
outside attack 69). So copy's `getattr` is `copy_getattr`: a hook it finds must be a
Python function or a method of one (its frame has its own builtins), or the library's own
method of the very object (or class) copied; anything else is refused before it is called.

What a reducer returns is checked as well (`guarded_reconstruct`): the object it makes must
be one guest code could write, or a new object of a library class made by `object.__new__`
(a `uuid.UUID` copied: its library `__setstate__` writes its fields), and its state must be
writes `setattr` would allow.

Stdlib only: runs in local workers and Pyodide runners.
"""

from __future__ import annotations

import builtins
import copyreg
import functools
import types
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.guards import (
    MRO,
    VARS,
    guest_getattr,
    is_blocked,
    is_guest_object,
    is_private,
    reads_itself,
    safe_hasattr,
)
from mcp_code_mode.sandbox.child.rules import (
    C_BOUND_METHODS,
    C_UNBOUND_METHODS,
    REMOVED_BUILTINS,
)
from mcp_code_mode.sandbox.child.writes import (
    fixed_refusal,
    safe_delattr,
    safe_setattr,
    write_refusal,
)

__all__ = [
    "COPY_HOOKS",
    "copy_getattr",
    "guarded_deepcopy",
    "guarded_reconstruct",
    "guarded_user_copy",
    "keep_alive",
]

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


def guarded_reconstruct(reconstruct: Callable[..., Any]) -> Callable[..., Any]:
    """`copy._reconstruct` that applies a reducer's state only to an object guest code may
    write: it updates `__dict__` or calls `__setstate__` itself, past `setattr`, on whatever
    the reducer's callable returned (`(lambda x: x, (tools,), {...})` wrote the tools view,
    `typing.List`'s name, outside attack 15). Checked on the object made, and on the state
    as it is written: `copy.copy` writes a snapshot taken before the reducer's callable ran
    (which cleared the state it had returned, attack 98); `deepcopy` copies the arguments
    and state through a memo guest code can fill, after the object is made, so they are
    checked as it hands them on (attack 97 swapped in private fields for an
    `enum.property`, and a class whose `__new__` returned `NAMESPACE_DNS`)."""
    default_deep = (reconstruct.__kwdefaults__ or {})["deepcopy"]

    def guarded(
        x: Any, memo: Any, func: Callable[..., Any], args: Any, *rest: Any, **kw: Any
    ) -> Any:
        state = rest[0] if rest else kw.get("state")
        if memo is None:  # a copy: the state as checked, whatever the guest does to it
            state = _snapshot(state)
            rest = (state, *rest[1:]) if rest else rest
            kw = {**kw, "state": state} if "state" in kw else kw
        call = _as_guest_builtin(func)
        # `deepcopy` copies the arguments and state into its memo, which guest code can read
        # (a guest `__deepcopy__` gets it), before `make` runs (outside attack 72)
        for part in (*(args if type(args) is tuple else ()), state):
            if (refusal := _made_refusal(part)) is not None:
                raise TypeError(f"copying from {refusal} is not allowed")
        made: list[Any] = []  # the object made, and the arguments it was made from

        def make(*made_from: Any) -> Any:
            made[:] = [call(*made_from), made_from]
            deep = memo is not None  # a deep copy's state is walked after: its target first
            stated = deep and state is not None
            _check_made(made[0], func, made_from, None if deep else state, stated)
            return made[0]

        def deepcopy(part: Any, memo: Any, *nil: Any) -> Any:
            copied = (kw.get("deepcopy") or default_deep)(part, memo, *nil)
            if (refusal := _made_refusal(copied)) is not None:
                raise TypeError(f"copying from {refusal} is not allowed")
            if part is state and made:
                _check_made(made[0], func, made[1], copied)
            return copied

        return reconstruct(x, memo, make, args, *rest, **{**kw, "deepcopy": deepcopy})

    guarded.__name__ = guarded.__qualname__ = "_reconstruct"
    return guarded


def _check_made(
    made: Any, func: Any, made_from: tuple[Any, ...], state: Any, stated: bool = False
) -> None:
    """`made` may be made, and `state` written onto it (or, `stated`, some state later:
    `deepcopy` walks a library object's state, its private objects among it, only for a
    target that may take it; outside attack 101)."""
    refusal = _made_refusal(made)
    if refusal is not None:  # whatever reducer or callable made it (attack 71)
        raise TypeError(f"copying may not make {refusal}")
    if state is not None or stated:
        reason = _target_refusal(made, func, made_from)
        reason = reason or (None if state is None else _state_refusal(made, state))
        if reason is not None:
            if stated and len(_UNFINISHED) < 1000:  # no state: its `__del__` would fail
                _UNFINISHED.append(made)
            raise AttributeError(f"copying state onto {reason} is not allowed")


_UNFINISHED: list[Any] = []
"""Objects a deep copy made and refused to give state: kept for the run, not freed."""


def _snapshot(state: Any) -> Any:
    """A plain dict state (or a pair of them) as it is now: copied, so that guest code
    running between the check and the write cannot change what is written."""
    if type(state) is dict:
        return dict(state)
    if type(state) is tuple and len(state) == 2:
        return tuple(dict(part) if type(part) is dict else part for part in state)
    return state


def _target_refusal(made: Any, func: Any, made_from: tuple[Any, ...]) -> str | None:
    """`write_refusal(made)`, and no function the guest did not define (`write_refusal`
    leaves those to `setattr`'s own check; attack 97 wrote `__wrapped__` onto `call_tool`);
    but an object `copyreg.__newobj__(cls)` just made with `object.__new__` (how `copy`
    makes most objects) is the copy's own, held by nothing else: its class's
    `__setstate__` may write it (`uuid.UUID`'s writes its fields with `object.__setattr__`),
    unless no object of the class may be written (`fixed_refusal`). `made_from` are the
    arguments it was made from, as copied (a guest memo swapped the class, attack 97)."""
    cls = type(made)
    if (cls is types.FunctionType and not is_guest_object(made)) or (
        cls is types.BuiltinFunctionType
    ):
        return "a function your code did not define"
    fresh = (
        func is _NEWOBJ
        and len(made_from) >= 1
        and made_from[0] is cls
        and _new_of(cls) is object.__new__
        and not is_guest_object(type(cls))  # a guest metaclass could answer `cls.__new__`
    )
    reason = fixed_refusal(cls) if fresh else write_refusal(made)
    if reason is None and (cls is types.MethodType or not reads_itself(cls)):
        # `copy` reads `__dict__` and `__setstate__` off it: a generic alias, a method or
        # `super` reads them off another object (`json.dumps`, the tools view; attack 98)
        return f"a {cls.__name__!r} object (it reads its attributes off another object)"
    return reason


_NEWOBJ = vars(copyreg)["__newobj__"]  # what `object.__reduce_ex__` hands `copy`


def _new_of(cls: type) -> Any:
    """The `__new__` that makes objects of `cls`, read from the real class `__dict__`s."""
    for klass in MRO(cls):
        namespace = VARS(klass)
        if "__new__" in namespace:
            return namespace["__new__"]
    return None


def _made_refusal(made: Any) -> str | None:
    """What `made` is when a copy may not hand it out: a module, a module's globals or the
    builtins (a dict holding `__builtins__`), or a builtin the guest's builtins replace or
    remove (`typing`'s alias reducer took a name the guest chose from its globals)."""
    if isinstance(made, types.ModuleType):
        return "a module"
    if type(made) is dict and ("__builtins__" in made or made is _BUILTINS_DICT):
        return "a module's globals"
    name = _UNSHARED_IDS.get(id(made))
    if name is not None and made is _REAL_BUILTINS[name]:
        return f"the builtin {name}()"
    return None


def _state_refusal(made: Any, state: Any) -> str | None:
    """What is wrong with `state` as attribute writes to `made`, by the rules of
    `safe_setattr`: `copy` applies it to `__dict__` natively (private fields of an
    `enum.property` made its `__get__` the real getattr on 3.13, outside attack 23).
    A state of some other type is a library `__setstate__`'s own format, left to it; with
    no `__setstate__`, `copy` passes it to `__dict__.update`, which takes pairs and any
    mapping as well (outside attack 29: `[("_signal_handlers", {14: None})]` onto an event
    loop made by `object.__new__`): only a dict is applied then."""
    parts = state if type(state) is tuple and len(state) == 2 else (state,)
    plain = not any("__setstate__" in VARS(klass) for klass in MRO(type(made)))
    if plain and any(part is not None and type(part) is not dict for part in parts):
        return f"a {type(made).__name__} object from a state that is not a dict"
    for part in parts:
        if isinstance(part, dict) and type(part) is not dict:
            return "an object from a dict subclass"  # its keys could differ from its items
        for key in list(dict.keys(part)) if type(part) is dict else ():
            if type(key) is not str or is_blocked(key) or key in ("__dict__", "__class__"):
                return f"an object with the attribute {key!r}"
            if is_private(key) and not is_guest_object(made):
                return f"a {type(made).__name__} object's private attribute {key!r}"
    return None


def _as_guest_builtin(func: Any) -> Callable[..., Any]:
    """A reducer's callable as guest code would have it: a builtin the guest's builtins
    replace is the guest's version (a bound method reduces to `(getattr, (obj, name))` with
    the real `getattr`, and `copy.copy` applied it, outside attack 21); one they remove is
    refused. By identity: nothing of the guest's runs here."""
    for name in REMOVED_BUILTINS:
        if func is _REAL_BUILTINS.get(name, _NONE):
            raise TypeError(f"copying by calling {name}() is not allowed")
    inner = func
    while type(inner) is functools.partial:
        inner = inner.func
    c_method = any(type(inner) is kind for kind in (*C_BOUND_METHODS, *C_UNBOUND_METHODS))
    if c_method and inner.__name__ in ("__reduce__", "__reduce_ex__"):
        # called from a library frame, a reducer reads the real builtins (outside attack 69)
        raise TypeError("copying by calling a reducer is not allowed")
    swaps: dict[str, Callable[..., Any]] = {
        "getattr": guest_getattr,
        "setattr": safe_setattr,
        "delattr": safe_delattr,
        "hasattr": safe_hasattr,
    }
    for name, guest in swaps.items():
        if func is _REAL_BUILTINS[name]:
            return guest
    return func  # type: ignore[no-any-return]


_REAL_BUILTINS = dict(vars(builtins))  # taken in the zygote, before any guest code
_BUILTINS_DICT = vars(builtins)
_UNSHARED_BUILTINS = (*REMOVED_BUILTINS, "getattr", "setattr", "delattr", "hasattr")
_UNSHARED_IDS = {id(_REAL_BUILTINS[n]): n for n in _UNSHARED_BUILTINS if n in _REAL_BUILTINS}
_NONE = object()


def guarded_deepcopy(deepcopy: Callable[..., Any]) -> Callable[..., Any]:
    """`copy.deepcopy` keeping the originals it copied (its `_keep_alive`) beside the memo,
    not in it: a guest's memo held them under `memo[id(memo)]`, a bound method's `__self__`
    and a library object's own `__dict__` among them (outside attack 27). Kept until the
    outermost call returns."""
    depth = [0]

    def guarded(x: Any, memo: Any = None, _nil: Any = _NONE) -> Any:
        if memo is not None and type(memo) is not dict:  # its `get` answered as it liked
            raise TypeError("deepcopy() takes a dict as its memo")
        depth[0] += 1
        try:
            return deepcopy(x, memo) if _nil is _NONE else deepcopy(x, memo, _nil)
        finally:
            depth[0] -= 1
            if not depth[0]:
                _KEPT.clear()

    return guarded


def keep_alive(x: Any, memo: Any) -> None:
    """`copy._keep_alive`, with the originals outside the memo (see `guarded_deepcopy`)."""
    _KEPT.setdefault(id(memo), (memo, []))[1].append(x)


_KEPT: dict[int, tuple[Any, list[Any]]] = {}

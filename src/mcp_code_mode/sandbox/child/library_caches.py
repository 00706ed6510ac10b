"""Library caches that outlive a call, keyed by values the library's own code compares.

A guest object whose `__hash__` matches another key and whose `__eq__` answers True is
filed under that key, and every later lookup of it, by any code in the run, gets the
guest's entry: `re` patterns and templates (outside attack 81), `_strptime` formats
(attack 83), typing's subscript cache (`List[int]` answered `List[X]`) and Flag enums'
pseudo-members (`re.I | re.M` became `re.VERBOSE`, attack 84). Each cache takes exact
text, exact integers or keys whose comparison is the library's all the way down; anything
else is served without the cache. Nothing here crosses runs (each run is a fresh process
or a restored memory); it keeps a run's own library calls answering what they say.

Stdlib only: runs in local workers and Pyodide runners.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any

from mcp_code_mode.sandbox.child.frozen_classes import made_before_run

__all__ = ["key_caches"]

_EXACT = (str, int, float, bool, bytes, complex, type(None), type(...))
_COMPARED = ("__origin__", "__args__", "__metadata__", "__forward_arg__", "__forward_module__")
_DEPTH = 16
_ALIASES = (types.GenericAlias, types.UnionType)


def key_caches(loaded: dict[str, Any]) -> None:
    """Guard the caches of the loaded modules (see the module)."""
    if loaded.get("re") is not None:
        _re_caches(loaded["re"])
    if loaded.get("_strptime") is not None:
        strptime = loaded["_strptime"]
        strptime._strptime = _text_argument(strptime._strptime, 1)
    if loaded.get("typing") is not None:
        _typing_caches(loaded["typing"])
    if loaded.get("enum") is not None:
        flag = loaded["enum"].Flag
        flag._missing_ = classmethod(_exact_flag_value(flag.__dict__["_missing_"].__func__))


def _re_caches(re: Any) -> None:
    """`re._compile` by exact text and flags; a replacement template by exact text (3.11's
    `_compile_repl`, 3.13's `_compile_template`). In place, in `re`'s globals."""
    compile_ = re._compile

    def _compile(pattern: Any, flags: Any) -> Any:
        return compile_(_exact_text(pattern), _exact_int(flags))

    re._compile = _compile
    for name, text_at in (("_compile_repl", 0), ("_compile_template", 1)):
        cached = getattr(re, name, None)
        if cached is not None:
            setattr(re, name, _text_argument(cached, text_at))


def _typing_caches(typing: Any) -> None:
    """Each `_tp_cache` cache behind a check of its key: 3.13 keeps them in
    `typing._caches`; 3.11 in the closure of each cached `__getitem__`."""
    caches = getattr(typing, "_caches", None)
    if isinstance(caches, dict):
        for func, cached in list(caches.items()):
            caches[func] = _library_keys_only(cached)
        return
    for function in cached_getitems(typing):
        cells = function.__closure__ or ()
        cell = cells[function.__code__.co_freevars.index("cached")]
        cell.cell_contents = _library_keys_only(cell.cell_contents)


def cached_getitems(typing: Any) -> Iterator[types.FunctionType]:
    """3.11's functions made by `typing._tp_cache`, each once: module functions, methods of
    typing's classes and the `_getitem` of its special forms."""
    seen: set[int] = set()
    for value in list(vars(typing).values()):
        candidates = [value, getattr(value, "_getitem", None) if _is_typing(value) else None]
        if isinstance(value, type) and value.__module__ == typing.__name__:
            candidates += [getattr(m, "__func__", m) for m in vars(value).values()]
        for candidate in candidates:
            code = getattr(candidate, "__code__", None)
            if code is not None and "cached" in code.co_freevars and id(candidate) not in seen:
                seen.add(id(candidate))
                yield candidate


def _is_typing(value: Any) -> bool:
    return type(value).__module__ == "typing"


def _library_keys_only(cached: Callable[..., Any]) -> Callable[..., Any]:
    """`cached` for keys that compare by the library's code only; a TypeError otherwise,
    which `_tp_cache` takes as "unhashable" and answers without the cache."""

    def checked(*args: Any, **kwds: Any) -> Any:
        if not all(_library_key(a, 0) for a in (*args, *kwds.values())):
            raise TypeError("a key the sandbox does not cache")
        return cached(*args, **kwds)

    return checked


def _own(kind: type, name: str) -> Any:
    """What `kind`'s instances get for `name`, as its classes hold it: read on the class, a
    descriptor of the run's answered `object.__eq__` while an instance got the run's own
    function (outside attack 88)."""
    for base in _MRO(kind):
        found = _CLASS_DICT(base).get(name, _MISSING)
        if found is not _MISSING:
            return found
    return _MISSING


_MRO = type.__dict__["__mro__"].__get__
_CLASS_DICT = type.__dict__["__dict__"].__get__
_OBJECT_EQ, _OBJECT_HASH = object.__dict__["__eq__"], object.__dict__["__hash__"]
_MISSING = object()


def _library_key(value: Any, depth: int) -> bool:
    """Whether hashing and comparing `value` runs no code the run defined: exact scalars,
    classes (every metaclass is the library's), tuples of these, objects compared by
    identity, and typing's aliases and forward references made of these."""
    kind: Any = type(value)
    if depth > _DEPTH:
        return False
    if any(kind is exact for exact in _EXACT) or issubclass(kind, type):
        return True
    if kind is tuple:
        return all(_library_key(item, depth + 1) for item in value)
    identity = _own(kind, "__eq__") is _OBJECT_EQ and _own(kind, "__hash__") is _OBJECT_HASH
    if identity or not made_before_run(kind):
        return identity
    if kind.__module__ != "typing" and not any(kind is k for k in _ALIASES):
        return False
    return all(_library_key(part, depth + 1) for part in _compared_parts(value))


def _compared_parts(value: Any) -> Iterator[Any]:
    """What typing's and `types`' aliases compare and hash (of those `value` has)."""
    for name in _COMPARED:
        try:
            yield object.__getattribute__(value, name)
        except AttributeError:
            continue


def _exact_flag_value(missing: Callable[..., Any]) -> Callable[..., Any]:
    """`Flag._missing_` (which files a new pseudo-member under the value it was given) with
    the value as an exact `int`."""

    def _missing_(cls: Any, value: Any) -> Any:
        if not issubclass(type(value), int):
            raise ValueError(f"{value!r} is not a valid {cls.__qualname__}")
        return missing(cls, int.__int__(value))

    return _missing_


def _text_argument(function: Callable[..., Any], at: int) -> Callable[..., Any]:
    def exact(*args: Any) -> Any:
        return function(*(_exact_text(a) if i == at else a for i, a in enumerate(args)))

    return exact


def _exact_text(value: Any) -> Any:
    """A `str` or `bytes` subclass's value as the exact type; anything else as it is."""
    if type(value) is not str and isinstance(value, str):
        return str.__str__(value)
    if type(value) is not bytes and isinstance(value, bytes):
        return bytes.__bytes__(value)
    return value


def _exact_int(value: Any) -> int:
    """Regex flags as an exact `int` (a `RegexFlag` too); a guest number is refused."""
    if type(value) is int:
        return value
    if isinstance(value, int):
        return int.__int__(value)
    raise TypeError(f"regular expression flags must be an int, not {type(value).__name__!r}")

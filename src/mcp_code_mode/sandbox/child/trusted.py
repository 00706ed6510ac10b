"""The stdlib helpers the audit hook trusts to cause some events on the guest's behalf.

Found by code object in the modules loaded, once, when the worker is locked down (see
`lockdown`); which events each may cause, and whether code it runs is name-checked.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

__all__ = ["LINES", "STDLIB", "Helper", "Trusted", "reads", "sets", "trusted_helpers"]


def reads(*names: str) -> list[str]:
    """Reading these attributes and no others (`object.__getattr__:__code__`). Library code
    run beneath a trusted helper (a guest's property or `__repr__` that is a library
    callable) gets its trust too: a helper is trusted for the attributes it reads itself."""
    return [f"object.__getattr__:{name}" for name in names]


def sets(*names: str) -> list[str]:
    """Setting these attributes (of a class), and no other; as `reads`."""
    return [f"object.__setattr__:{name}" for name in names]


class Trusted(NamedTuple):
    """The helpers (by code object) and what each may do; see `trusted_helpers`."""

    events: dict[types.CodeType, frozenset[str]]
    checked: dict[types.CodeType, str]
    beneath: dict[types.CodeType, frozenset[str] | None]


class Helper(NamedTuple):
    """One stdlib helper: where it is, what it may cause, how its `exec` is checked, and
    which modules' code may run between it and the event (see `trusted_helpers`)."""

    owner: str
    path: str
    events: tuple[str, ...]
    check: str | None = None
    under: tuple[str, ...] = ()


# what formats a stack or a traceback with its source lines runs
LINES = ("traceback", "linecache", "tokenize")
_SIGNATURE = (*reads("__code__", "__defaults__", "__kwdefaults__"),)
_COROUTINE = (*reads("cr_code", "cr_frame", "gi_code", "gi_frame"),)  # gi_: 3.11's generators

# What each reads or sets in use, on 3.11 and 3.13 (Pyodide); see `audit._FINE_TO_SET`
STDLIB = (
    Helper("collections", "namedtuple", ("exec", *sets("__module__"), "sys._getframe"), "names"),
    Helper("dataclasses", "_create_fn", ("exec",), "names"),  # 3.11
    Helper("dataclasses", "_FuncBuilder.add_fns_to_class", ("exec",), "names"),  # 3.13
    # `inspect.signature(cls)`, for the class's `__doc__`
    Helper("dataclasses", "_process_class", _SIGNATURE, under=("inspect", "functools")),
    Helper("dataclasses", "make_dataclass", (*sets("__module__"),)),  # 3.12+
    Helper("dataclasses", "_add_slots", (*sets("__qualname__"),)),
    Helper("typing", "ForwardRef._evaluate", ("exec",), "type"),
    Helper("typing", "_caller", ("sys._getframe",)),
    Helper("typing", "overload", (*reads("__code__"),)),
    Helper("typing", "NamedTupleMeta.__new__", (*sets("__bases__", "__type_params__"),)),
    Helper("enum", "EnumType._create_", ("sys._getframe",)),
    Helper("asyncio.coroutines", "_format_coroutine", _COROUTINE),  # where a coroutine is
    # asyncio's debug mode keeps where handles and futures were made, as text
    Helper(
        "asyncio.format_helpers",
        "extract_stack",
        (*reads("f_code"), "sys._getframe"),
        under=("traceback",),
    ),
    Helper("asyncio.events", "Handle.__init__", ("sys._getframe",)),
    # 3.12+: where to point "There is no current event loop" (it walks the frames' globals)
    Helper("asyncio.events", "BaseDefaultEventLoopPolicy.get_event_loop", ("sys._getframe",)),
    Helper("traceback", "extract_stack", ("sys._getframe", *reads("f_code"), "open"), under=LINES),
    # a function's flags (asyncio.iscoroutinefunction); where a log line was made (text)
    Helper("inspect", "_has_code_flag", (*reads("__code__"),)),
    Helper("logging", "Logger.findCaller", ("sys._getframe", *reads("f_code")), under=("logging",)),
    Helper("asyncio.futures", "Future.__init__", ("sys._getframe",)),
    Helper(
        "asyncio.selector_events",
        "BaseSelectorEventLoop._make_self_pipe",
        ("socket.__new__",),
        under=("socket",),
    ),
)


def trusted_helpers(
    modules: Mapping[str, Any],
    extra: Iterable[tuple[Callable[..., Any], frozenset[str], tuple[str, ...] | None]] = (),
) -> Trusted:
    """The stdlib helpers allowed to cause some events on the guest's behalf (`STDLIB`),
    found in the modules loaded (`sys.modules`), plus `extra` (function, events, modules
    beneath) triples. For each: the events; whose `exec` is checked, by how (`"names"`:
    the name check, `"type"`: a forward reference, the name check and a type expression,
    no call); and the files of the modules whose code may run between the helper and the
    event it causes (None: any). By default none: only the helper's own code is vouched
    for, not library code reached beneath it through a callable the guest planted
    (outside attack 25: a `defaultdict` factory run under asyncio's `_format_coroutine`
    read frames)."""
    found = Trusted({}, {}, {})
    for helper in STDLIB:
        obj: Any = modules.get(helper.owner)
        for part in helper.path.split("."):
            obj = getattr(obj, part, None)
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType):
            found.events[code] = frozenset(helper.events)
            found.beneath[code] = _files(modules, helper.under)
            if helper.check is not None:
                found.checked[code] = helper.check
    for function, events, under in extra:
        code = getattr(function, "__code__", None)
        if isinstance(code, types.CodeType):
            found.events[code] = events
            found.beneath[code] = None if under is None else _files(modules, under)
    return found


def _files(modules: Mapping[str, Any], names: Iterable[str]) -> frozenset[str]:
    """The source files of the modules `names` (how their frames' code names them)."""
    files = (getattr(modules.get(name), "__file__", None) for name in names)
    return frozenset(f for f in files if type(f) is str)

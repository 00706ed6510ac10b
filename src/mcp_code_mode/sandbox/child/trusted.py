"""The stdlib helpers the audit hook trusts to cause some events on the guest's behalf.

Found by code object in the modules loaded, once, when the worker is locked down (see
`lockdown`); which events each may cause, and whether code it runs is name-checked.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["reads", "sets", "trusted_helpers"]


def reads(*names: str) -> list[str]:
    """Reading these attributes and no others (`object.__getattr__:__code__`). Library code
    run beneath a trusted helper (a guest's property or `__repr__` that is a library
    callable) gets its trust too: a helper is trusted for the attributes it reads itself."""
    return [f"object.__getattr__:{name}" for name in names]


def sets(*names: str) -> list[str]:
    """Setting these attributes (of a class), and no other; as `reads`."""
    return [f"object.__setattr__:{name}" for name in names]


def trusted_helpers(
    modules: Mapping[str, Any], extra: Iterable[tuple[Callable[..., Any], frozenset[str]]] = ()
) -> tuple[dict[types.CodeType, frozenset[str]], dict[types.CodeType, str]]:
    """The stdlib helpers allowed to cause some events on the guest's behalf, found in the
    modules loaded (`sys.modules`), plus `extra` (function, events) pairs; and those
    among them whose `exec` is checked, by how: `"names"` (the name check) or `"type"`
    (a forward reference: the name check, and a type expression, no call)."""
    table: dict[types.CodeType, frozenset[str]] = {}
    checked: dict[types.CodeType, str] = {}

    def add(owner: str, path: str, events: Iterable[str], *, check: str | None = None) -> None:
        obj: Any = modules.get(owner)
        for part in path.split("."):
            obj = getattr(obj, part, None)
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType):
            table[code] = frozenset(events)
            if check is not None:
                checked[code] = check

    # What each reads or sets in use, on 3.11 and 3.13 (Pyodide); see `audit._FINE_TO_SET`
    add("collections", "namedtuple", ["exec", *sets("__module__"), "sys._getframe"], check="names")
    add("dataclasses", "_create_fn", ["exec"], check="names")  # 3.11
    add("dataclasses", "_FuncBuilder.add_fns_to_class", ["exec"], check="names")  # 3.13
    # `inspect.signature(cls)`, for the class's `__doc__`
    add("dataclasses", "_process_class", reads("__code__", "__defaults__", "__kwdefaults__"))
    add("dataclasses", "make_dataclass", sets("__module__"))  # 3.12+
    add("dataclasses", "_add_slots", sets("__qualname__"))
    add("typing", "ForwardRef._evaluate", ["exec"], check="type")
    add("typing", "_caller", ["sys._getframe"])
    add("typing", "overload", reads("__code__"))
    add("typing", "NamedTupleMeta.__new__", sets("__bases__", "__type_params__"))  # 3.12+: PEP 695
    add("enum", "EnumType._create_", ["sys._getframe"])
    coroutine = reads("cr_code", "cr_frame", "gi_code", "gi_frame")  # gi_: 3.11's generators
    add("asyncio.coroutines", "_format_coroutine", coroutine)  # where a coroutine is, as text
    # asyncio's debug mode keeps where handles and futures were made, as text
    add("asyncio.format_helpers", "extract_stack", [*reads("f_code"), "sys._getframe"])
    add("asyncio.events", "Handle.__init__", ["sys._getframe"])
    add("traceback", "extract_stack", ["sys._getframe", *reads("f_code"), "open"])
    # a function's flags (asyncio.iscoroutinefunction); where a log line was made (text)
    add("inspect", "_has_code_flag", reads("__code__"))
    add("logging", "Logger.findCaller", ["sys._getframe", *reads("f_code")])
    add("asyncio.futures", "Future.__init__", ["sys._getframe"])
    add("asyncio.selector_events", "BaseSelectorEventLoop._make_self_pipe", ["socket.__new__"])
    for function, events in extra:
        code = getattr(function, "__code__", None)
        if isinstance(code, types.CodeType):
            table[code] = events
    return table, checked

"""What the audit hook (`audit`) allows, as data and pure functions of an event.

Kept apart from the hook's machinery; the hook runs on a sealed copy of both modules (see
`audit._sealed`), so nothing written into this module's globals changes what it decides.
"""

from __future__ import annotations

import opcode
import types
from collections.abc import Iterable
from typing import Any

from mcp_code_mode.sandbox.child.rules import BLOCKED_ATTRIBUTES, GUARDED_READS, REFUSED_DUNDERS

__all__ = [
    "IMPORT_EVENTS",
    "granted",
    "name_refusal",
    "names_in",
    "refusal",
    "text_arg",
    "type_expression_refusal",
]

IMPORT_EVENTS = frozenset(
    ["import", "open", "exec", "marshal.loads", "os.listdir", "os.scandir", "os.stat"]
)
"""What the guest importer may cause while it loads an allowed module (`exec` of the
module's own code only, see `_checked`)."""


def names_in(code: types.CodeType) -> Iterable[str]:
    """Every name a code object (and the code objects among its constants) refers to."""
    stack = [code]
    while stack:
        current = stack.pop()
        yield from current.co_names
        stack.extend(c for c in current.co_consts if type(c) is types.CodeType)


def text_arg(args: tuple[Any, ...], index: int) -> str:
    """An event's argument when it is exactly a str, else "": the hook never compares,
    hashes or formats an object the guest made (a str subclass's `__eq__` would run guest
    code inside the hook)."""
    value = args[index] if len(args) > index else None
    return value if type(value) is str else ""


# Events a module grants besides its own family (`os.*` for `os`): what using it does.
_ALSO_GRANTS: dict[str, tuple[str, ...]] = {
    "io": ("open",),
    "os": ("open", "shutil."),
    "pathlib": ("open", "os."),
    "shutil": ("open", "os."),
    "tempfile": ("open", "os."),
    "glob": ("os.",),
    "zoneinfo": ("open",),
    "pty": ("os.",),
    "threading": ("_thread.",),
    "multiprocessing": ("os.", "subprocess.", "_thread.", "open"),
    "subprocess": ("os.",),
    "urllib": ("socket.",),
    "http": ("socket.",),
    "importlib": ("import",),
}


# Frames, tracing, code and the object graph are the Python layer's own: allowing `sys`
# (or the stdlib's `code` module, or `gc`) does not hand them out. (`gc.get_referents`
# gave a function's real module globals as a plain dict, then real builtins and `sys`, when
# an operator allowed `gc`: outside attack 35.)
_NEVER_GRANTED = frozenset(
    [
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "code.__new__",
        "function.__new__",
        "object.__getattr__",
        "object.__setattr__",
        "sys._getframe",
        "sys._current_frames",
        "sys._current_exceptions",
        "sys.settrace",
        "sys.setprofile",
    ]
)


def granted(
    event: str, args: tuple[Any, ...], allowed: frozenset[str], *, guest_imports: bool
) -> bool:
    """Whether the allowlist grants guest code `event`: the family of an allowed module
    (`socket.connect` with `socket`), what an allowed module does (`open` with `io`), or an
    import that is not the guest's own (stdlib code loading a helper lazily) or of an
    allowed module."""
    if event in _NEVER_GRANTED:
        return False
    if event == "import":
        name = text_arg(args, 0)
        return not guest_imports or name.partition(".")[0] in allowed or "importlib" in allowed
    family = event.partition(".")[0]
    if "." in event and family in allowed:
        return True
    return any(
        event == grant or (grant.endswith(".") and event.startswith(grant))
        for module in allowed
        for grant in _ALSO_GRANTS.get(module, ())
    )


def name_refusal(code: Any, forbidden: frozenset[str]) -> str | None:
    if type(code) is not types.CodeType:  # never `isinstance`: see `text_arg`
        return "running code the policy did not check is not allowed"
    bad = next((name for name in names_in(code) if name in forbidden), None)
    if bad is None:
        return None
    return f"code generated from your names refers to {bad!r}, which is not allowed"


# What a forward reference may compile to: names, public attributes, constants, subscripts
# and operators (`Optional[int]`, `"a.B | None"`, `Literal[-1]`); no call, store, import
# or function (outside attack 13 called `L.append(enum.Enum._convert_)` from a string).
_TYPE_OPS = frozenset(
    opcode.opmap[name]
    for name in (
        "CACHE",
        "NOP",
        "RESUME",
        "EXTENDED_ARG",
        "PUSH_NULL",
        "LOAD_NAME",
        "LOAD_GLOBAL",
        "LOAD_ATTR",
        "LOAD_CONST",
        "BINARY_SUBSCR",
        "BUILD_TUPLE",
        "BUILD_LIST",
        "BINARY_OP",
        "UNARY_NEGATIVE",
        "RETURN_VALUE",
        "RETURN_CONST",
    )
    if name in opcode.opmap
)


def type_expression_refusal(code: Any) -> str | None:
    """Why code `typing` compiled from a string annotation is no type expression, or None."""
    if type(code) is not types.CodeType:  # never `isinstance`: see `text_arg`
        return "running code the policy did not check is not allowed"
    ops = code.co_code
    # The names guest source may not read (outside attack 66: `"G[loop.sock_sendfile]"`
    # handed a blocked method to a guest `__getitem__` through `get_type_hints`).
    refused = any(type(n) is not str or n.startswith("_") or n in _UNREAD for n in names_in(code))
    if refused or any(ops[i] not in _TYPE_OPS for i in range(0, len(ops), 2)):
        return (
            "a string annotation must be a type expression (names, public attributes, "
            "X[Y], X | Y), not a call, a private name or a blocked one"
        )
    return None


_UNREAD = BLOCKED_ATTRIBUTES | REFUSED_DUNDERS | GUARDED_READS


_WHAT = {
    "exec": "running code the policy did not check (exec/eval)",
    "function.__new__": "building a function from a code object",
    "code.__new__": "building a code object",
    "object.__getattr__": "reading code objects and frames",
    "object.__setattr__": "setting this attribute",
    "sys._getframe": "reaching stack frames",
    "import": "importing a module outside the allowlist",
    "open": "opening files",
}


def refusal(event: str, args: tuple[Any, ...]) -> str:
    what = _WHAT.get(event)
    if what is None:
        family = event.partition(".")[0]
        what = f"this operation ({event})" if family not in ("os", "socket") else event
    if event in ("object.__getattr__", "object.__setattr__") and text_arg(args, 1):
        what = f"{what}: {text_arg(args, 1)!r}"
    return f"{what} is not allowed in guest code"

"""The worker's audit hook: what guest code may not do, judged by what is done.

One mechanism behind every guest-facing guard (issue 30): CPython raises an audit event
for each operation that runs code, reaches frames or code objects, imports, or touches the
OS (`exec`, `function.__new__`, `object.__getattr__` of `__code__` or a frame, `import`,
`open`, `os.*`, `socket.*`, `subprocess.Popen`, `ctypes.*`, ...). A hook installed once per
worker decides each such event by the nearest frame that owns it:

- guest code (compiled from `<guest>`): refused with `Refused` (a `PermissionError`),
  whatever route led there, so a gadget that reaches the real builtins still cannot call
  `open`, `eval`, `exec`, `__import__` a new module, run a process or build a function;
- a trusted stdlib helper for that event (`collections.namedtuple` and `dataclasses`
  compiling their methods, `typing` evaluating a string annotation, asyncio's self-pipe,
  the guest importer): allowed, and code such a helper executes must pass the policy's
  name check (no attribute that reaches frames, code, globals or subclasses);
- no guest frame at all (the worker's own code): allowed.

Stdlib only; it runs inside the worker (and inside Pyodide). It is a guardrail that
makes escapes end in a clear POLICY_VIOLATION; the OS layers remain the boundary.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["ALL_EVENTS", "Refused", "granted", "install", "names_in", "trusted_helpers"]

ALL_EVENTS = frozenset(["*"])
"""A trusted code object's events: every one (the guest importer loading a module)."""

# Raised by guest code in ordinary use, and harmless: no guest frame decides them.
_FINE = frozenset(
    [
        "builtins.id",
        "time.sleep",
        "compile",  # a code object is inert: running it is `exec` or `function.__new__`
        "sys._getframemodulename",  # a module's name (3.12+: namedtuple, enum, typing)
        "sys.set_asyncgen_hook_firstiter",
        "sys.set_asyncgen_hook_finalizer",
        "object.__delattr__",
    ]
)
# Attributes whose setting is an audit event but harmless on any object.
_FINE_TO_SET = frozenset(["__doc__", "__qualname__", "__name__", "__defaults__", "__kwdefaults__"])


class Refused(PermissionError):
    """An operation guest code may not perform (reported as POLICY_VIOLATION)."""


class _HookRefused(RuntimeError):
    """`sys.addaudithook` after the hook: a RuntimeError, so CPython drops the new hook."""


def names_in(code: types.CodeType) -> Iterable[str]:
    """Every name a code object (and the code objects among its constants) refers to."""
    stack = [code]
    while stack:
        current = stack.pop()
        yield from current.co_names
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))


def install(
    *,
    guest_filename: str,
    trusted: Mapping[types.CodeType, frozenset[str]],
    checked: frozenset[types.CodeType],
    forbidden_names: frozenset[str],
    allowed_imports: Iterable[str],
) -> None:
    """Add the hook (once per process; an audit hook cannot be removed).

    `trusted` maps a code object to the events it may cause on the guest's behalf;
    `checked` are the trusted code objects whose `exec` must pass the name check
    (`forbidden_names`: the policy's refused and blocked attribute names). Events of the
    modules in `allowed_imports` (`os.*` when `os` is allowed, see `granted`) are the
    administrator's choice and left to the OS layers.
    """
    inside: list[bool] = []
    allowed = frozenset(allowed_imports)

    def decide(event: str, args: tuple[Any, ...]) -> str | None:
        try:
            frame: types.FrameType | None = sys._getframe(2)
        except ValueError:
            return None
        nearest = True  # the first frame that is not the import machinery's
        while frame is not None:
            code = frame.f_code
            if code.co_filename == guest_filename:
                if granted(event, args, allowed, guest_imports=nearest):
                    return None
                return _refusal(event, args)
            events = trusted.get(code)
            if events is not None and (events is ALL_EVENTS or event in events):
                if event == "exec" and code in checked:
                    return _name_check(args[0], forbidden_names)
                return None
            nearest = nearest and code.co_filename.startswith("<frozen importlib")
            frame = frame.f_back
        return None

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _FINE or inside:
            return
        if event == "sys.addaudithook":
            raise _HookRefused("audit hooks cannot be added in a sandbox worker")
        if event == "object.__setattr__" and len(args) > 1 and args[1] in _FINE_TO_SET:
            return
        inside.append(True)
        try:
            reason = decide(event, args)
        finally:
            inside.pop()
        if reason is not None:
            raise Refused(reason)

    sys.addaudithook(hook)


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


# Frames and tracing are the Python layer's own: allowing `sys` does not hand them out.
_NEVER_GRANTED = frozenset(
    [
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
        name = args[0] if args and isinstance(args[0], str) else ""
        return not guest_imports or name.partition(".")[0] in allowed or "importlib" in allowed
    family = event.partition(".")[0]
    if "." in event and family in allowed:
        return True
    return any(
        event == grant or (grant.endswith(".") and event.startswith(grant))
        for module in allowed
        for grant in _ALSO_GRANTS.get(module, ())
    )


def _name_check(code: Any, forbidden: frozenset[str]) -> str | None:
    if not isinstance(code, types.CodeType):
        return "running code the policy did not check is not allowed"
    bad = next((name for name in names_in(code) if name in forbidden), None)
    if bad is None:
        return None
    return f"code generated from your names refers to {bad!r}, which is not allowed"


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


def _refusal(event: str, args: tuple[Any, ...]) -> str:
    what = _WHAT.get(event)
    if what is None:
        family = event.partition(".")[0]
        what = f"this operation ({event})" if family not in ("os", "socket") else event
    if event in ("object.__getattr__", "object.__setattr__") and len(args) > 1:
        what = f"{what}: {args[1]!r}"
    return f"{what} is not allowed in guest code"


def trusted_helpers(
    modules: Mapping[str, Any], extra: Iterable[tuple[Callable[..., Any], frozenset[str]]] = ()
) -> tuple[dict[types.CodeType, frozenset[str]], frozenset[types.CodeType]]:
    """The stdlib helpers allowed to cause some events on the guest's behalf, found in the
    modules loaded (`sys.modules`), plus `extra` (function, events) pairs; and those
    among them whose `exec` is name-checked."""
    table: dict[types.CodeType, frozenset[str]] = {}
    checked: set[types.CodeType] = set()

    def add(owner: str, path: str, events: Iterable[str], *, check: bool = False) -> None:
        obj: Any = modules.get(owner)
        for part in path.split("."):
            obj = getattr(obj, part, None)
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType):
            table[code] = frozenset(events)
            if check:
                checked.add(code)

    add("collections", "namedtuple", ["exec", "object.__setattr__", "sys._getframe"], check=True)
    add("dataclasses", "_create_fn", ["exec"], check=True)  # 3.11
    add("dataclasses", "_FuncBuilder.add_fns_to_class", ["exec"], check=True)  # 3.13
    add("dataclasses", "_process_class", ["object.__getattr__", "object.__setattr__"])
    add("dataclasses", "make_dataclass", ["object.__setattr__"])
    add("dataclasses", "_add_slots", ["object.__setattr__"])
    add("typing", "ForwardRef._evaluate", ["exec"], check=True)
    add("typing", "_caller", ["sys._getframe"])
    add("typing", "overload", ["object.__getattr__"])
    add("typing", "NamedTupleMeta.__new__", ["object.__setattr__"])
    add("enum", "EnumType._create_", ["sys._getframe"])
    add("asyncio.coroutines", "_format_coroutine", ["object.__getattr__"])
    add("asyncio.selector_events", "BaseSelectorEventLoop._make_self_pipe", ["socket.__new__"])
    for function, events in extra:
        code = getattr(function, "__code__", None)
        if isinstance(code, types.CodeType):
            table[code] = events
    return table, frozenset(checked)

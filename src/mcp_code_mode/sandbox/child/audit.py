"""The worker's audit hook: what guest code may not do, judged by what is done.

One mechanism behind every guest-facing guard (issue 30): CPython raises an audit event
for each operation that runs code, reaches frames or code objects, imports, or touches the
OS (`exec`, `function.__new__`, `object.__getattr__` of `__code__` or a frame, `import`,
`open`, `os.*`, `socket.*`, `subprocess.Popen`, `ctypes.*`, ...). A hook installed once per
worker decides each such event by the nearest frame that owns it:

- a trusted helper for that event (`collections.namedtuple` and `dataclasses` compiling
  their methods, `typing` evaluating a string annotation, asyncio's self-pipe, the guest
  importer, the worker formatting a traceback): allowed when the helper's own code caused
  it, or code of the modules listed beneath it (`trusted.Helper.under`), not other library
  code a callable the guest planted ran under it; and code such a helper executes must
  pass the policy's name check (no attribute that reaches frames, code, globals or
  subclasses);
- guest code (compiled from `<guest>`), or nothing at all once guest code has run (the
  hook is then armed for good: event-loop callbacks, finalizers and `repr` run callables
  the guest chose with no guest frame on the stack): refused with `Refused`, unless the
  allowlist grants the event (`os.*` when `os` was added), whatever route led there; so a
  gadget that reaches the real builtins still cannot call `open`, `eval`, `exec`,
  `__import__` a new module, run a process or build a function;
- only the worker's own two functions may compile and run code named `<guest>`.

Stdlib only; it runs inside the worker (and inside Pyodide). It is a guardrail that
makes escapes end in a clear POLICY_VIOLATION; the OS layers remain the boundary.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

from mcp_code_mode.sandbox.child import audit_rules
from mcp_code_mode.sandbox.child.audit_rules import (
    IMPORT_EVENTS,
    granted,
    name_refusal,
    names_in,
    refusal,
    text_arg,
    type_expression_refusal,
)
from mcp_code_mode.sandbox.child.trusted import Trusted

__all__ = ["IMPORT_EVENTS", "Refused", "granted", "install", "names_in"]

# Raised by guest code in ordinary use, and harmless: no guest frame decides them.
_FINE = frozenset(
    [
        "builtins.id",
        "time.sleep",
        "sys._getframemodulename",  # a module's name (3.12+: namedtuple, enum, typing)
        "sys.set_asyncgen_hook_firstiter",
        "sys.set_asyncgen_hook_finalizer",
        "object.__delattr__",
    ]
)
# Events about one attribute (the second argument): a helper may be trusted per attribute.
_NAMED = ("object.__getattr__", "object.__setattr__")
# The events the judge's own code causes while it decides (frames, their code).
_JUDGES_OWN = frozenset(["sys._getframe", "object.__getattr__"])
# Attributes whose setting is an audit event but harmless on any object.
_FINE_TO_SET = frozenset(["__doc__", "__qualname__", "__name__", "__defaults__", "__kwdefaults__"])


class Refused(PermissionError):
    """An operation guest code may not perform (reported as POLICY_VIOLATION)."""


class _HookRefused(RuntimeError):
    """`sys.addaudithook` after the hook: a RuntimeError, so CPython drops the new hook."""


def install(
    *,
    guest_filename: str,
    trusted: Trusted,
    forbidden_names: frozenset[str],
    allowed_imports: Iterable[str],
    runners: Mapping[types.CodeType, str],
) -> None:
    """Add the hook (once per process; an audit hook cannot be removed).

    `trusted.events` maps a code object to the events it may cause (for the guest, or on
    its own after a run); `trusted.checked` are those whose `exec` must pass the name check
    (`forbidden_names`); `trusted.beneath`, the files whose code may run between such a
    helper and the event. `runners` are the worker's own functions that compile guest code
    ("compile") and run it ("exec"): only they may make or run code named `guest_filename`;
    those marked "guest" (the guarded `getattr`/`setattr` & co.) act for the guest and count
    as guest frames, so a trusted helper further out does not vouch for them,
    and the first run of such code arms the hook for good. Armed, every event that no
    trusted frame owns is refused unless the allowlist grants it (see `granted`), whether
    or not guest code is on the stack: callbacks, finalizers and `repr` run guest-chosen
    callables with no guest frame.

    The hook runs on a sealed copy of this module (see `_sealed`).
    """
    _sealed()["_install"](
        guest_filename=guest_filename,
        trusted=trusted,
        forbidden_names=forbidden_names,
        allowed_imports=allowed_imports,
        runners=runners,
    )


def _sealed() -> dict[str, Any]:
    """This module's globals, copied, with its functions and `_Judge`'s methods bound to the
    copy, and the builtins, `sys` and `types` they use copied too. Stdlib code that writes
    a module's globals under names the guest chose (`enum.global_enum` updates
    `sys.modules[cls.__module__].__dict__`) then cannot change what the hook does, even if
    such a route is found again: nothing it writes is looked up by the hook."""
    import builtins

    # `audit_rules`' globals too (its functions are rebound to the same copy), and
    # copies of the dicts among them.
    sealed = {**vars(audit_rules), **globals()}
    sealed.update((k, dict(v)) for k, v in list(sealed.items()) if type(v) is dict)
    sealed["__builtins__"] = dict(vars(builtins))
    sealed["sys"] = types.SimpleNamespace(**vars(sys))
    sealed["types"] = types.SimpleNamespace(**vars(types))
    ours = (__name__, audit_rules.__name__)
    for name, value in list(sealed.items()):
        if isinstance(value, types.FunctionType) and value.__module__ in ours:
            sealed[name] = _rebound(value, sealed)
    methods = {
        k: _rebound(v, sealed) if isinstance(v, types.FunctionType) else v
        for k, v in vars(_Judge).items()
        if k not in ("__dict__", "__weakref__")
    }
    sealed["_Judge"] = type("_Judge", (), methods)
    return sealed


def _rebound(function: Any, namespace: dict[str, Any]) -> Any:
    copy = types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    return copy


def _install(
    *,
    guest_filename: str,
    trusted: Trusted,
    forbidden_names: frozenset[str],
    allowed_imports: Iterable[str],
    runners: Mapping[types.CodeType, str],
) -> None:
    judge = _Judge(
        guest_filename=guest_filename,
        trusted=trusted,
        forbidden_names=forbidden_names,
        allowed=frozenset(allowed_imports),
        runners=runners,
    )
    inside: list[bool] = []
    own_unraisable = sys.unraisablehook

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _FINE:
            return
        if inside:
            # The judge's own frame reads. Anything else comes from code the judge ran by
            # mistake (a guest's `__getattribute__` on a loader class, outside attack 19):
            # refused, never let through.
            if event in _JUDGES_OWN:
                return
            raise Refused(f"{event} is not allowed while a guard decides")
        if event == "sys.unraisablehook" and args[0] is own_unraisable:
            return  # the worker's own (`outcome.note_unraisable`), set before this hook
        if event == "sys.addaudithook":
            raise _HookRefused("audit hooks cannot be added in a sandbox worker")
        if event == "object.__setattr__" and text_arg(args, 1) in _FINE_TO_SET:
            return
        inside.append(True)
        try:
            reason = judge.decide(event, args)
        finally:
            inside.pop()
        if reason is not None:
            raise Refused(reason)

    sys.addaudithook(hook)


class _Judge:
    """The hook's decisions (see `install`); `armed` once guest code has first run."""

    def __init__(
        self,
        *,
        guest_filename: str,
        trusted: Trusted,
        forbidden_names: frozenset[str],
        allowed: frozenset[str],
        runners: Mapping[types.CodeType, str],
    ) -> None:
        self.guest_filename = guest_filename
        self.trusted = dict(trusted.events)
        self.checked = dict(trusted.checked)
        self.beneath = dict(trusted.beneath)
        self.forbidden_names = forbidden_names
        self.allowed = allowed
        self.runners = runners
        self.armed = False

    def decide(self, event: str, args: tuple[Any, ...]) -> str | None:
        """Why `event` is refused, or None; judged by the frame that caused it."""
        try:
            frame: types.FrameType | None = sys._getframe(2)  # 0: here, 1: the hook
        except ValueError:
            frame = None
        if event in ("compile", "exec") and _names_guest_code(event, args, self.guest_filename):
            return self._guest_code(event, frame)
        if event == "compile":
            return None  # a code object is inert: running it is `exec` or `function.__new__`
        innermost = frame
        owner, guest, nearest = self._owner(event, frame, args)
        if owner is not None:
            return _checked(event, args, self.checked.get(owner), innermost, self.forbidden_names)
        if not self.armed and not guest:
            return None  # the worker's own code, before any guest code ran
        if granted(event, args, self.allowed, guest_imports=nearest):
            return None
        return refusal(event, args)

    def _guest_code(self, event: str, frame: types.FrameType | None) -> str | None:
        """Making or running `<guest>` code: only the worker's runner of that kind may."""
        role = _runner_role(frame, self.runners)
        if not role.startswith(event):
            return "making or running code as guest code is not allowed"
        if role == "exec":  # not "exec before": a worker's warm-up run arms nothing
            self.armed = True
        return None

    def _owner(
        self, event: str, frame: types.FrameType | None, args: tuple[Any, ...]
    ) -> tuple[types.CodeType | None, bool, bool]:
        """Walking out from `frame`: the trusted helper's code that may cause `event` (or
        None), whether guest code came first, and whether only import machinery stood
        between (a lazy stdlib import, not the guest's own). A helper may be trusted for
        some attributes only (`object.__getattr__:__code__`, `object.__setattr__:__module__`):
        whatever library code runs beneath it may read or set no other (outside attack 16
        read frames under one; a guest property run by dataclasses or logging could too)."""
        detail = f"{event}:{text_arg(args, 1)}" if event in _NAMED else event
        nearest, passed = True, set[str]()
        while frame is not None:
            code = frame.f_code
            filename = code.co_filename if type(code.co_filename) is str else ""
            if filename == self.guest_filename or self.runners.get(code) == "guest":
                return None, True, nearest  # guest code, or a guard acting for it
            events = self.trusted.get(code)
            if events is not None:
                vouched = event in events or detail in events
                under = self.beneath.get(code, frozenset())
                vouched = vouched and (under is None or passed <= under)
                return (code if vouched else None), False, nearest
            # the first frame that is not the import machinery's
            nearest = nearest and filename.startswith("<frozen importlib")
            passed.add(filename)
            frame = frame.f_back
        return None, False, nearest


def _runner_role(frame: types.FrameType | None, runners: Mapping[types.CodeType, str]) -> str:
    """The role of the worker function making or running guest code: the innermost frame's,
    or its caller's when the innermost is `ast.parse` (which compiles to parse)."""
    if frame is None:
        return ""
    if frame.f_code.co_name == "parse" and frame.f_back is not None:
        return runners.get(frame.f_back.f_code, "")
    return runners.get(frame.f_code, "")


def _names_guest_code(event: str, args: tuple[Any, ...], guest_filename: str) -> bool:
    """`compile(..., "<guest>", ...)` or `exec` of a code object so named."""
    if event == "compile":
        # a str subclass would run guest code here, inside the hook: only exact str counts,
        # and a filename of any other type is no guest code's (refused below all the same)
        return text_arg(args, 1) == guest_filename or (len(args) > 1 and type(args[1]) is not str)
    code = args[0] if args else None
    if type(code) is not types.CodeType:  # `isinstance` would read a guest's `__class__` here
        return False
    return type(code.co_filename) is not str or code.co_filename == guest_filename


def _checked(
    event: str,
    args: tuple[Any, ...],
    check: str | None,
    innermost: types.FrameType | None,
    forbidden: frozenset[str],
) -> str | None:
    """A trusted frame's event: allowed, except `exec` of code that fails its `check` (the
    name check; for a forward reference, a type expression too) or, under the importer,
    code not run by the import machinery itself."""
    if event != "exec":
        return None
    if check is not None:
        code = args[0] if args else None
        found = name_refusal(code, forbidden)
        return found or (type_expression_refusal(code) if check == "type" else None)
    if innermost is not None and innermost.f_code.co_name == "_call_with_frames_removed":
        # A module's own code, loaded by one of importlib's own loaders (by type: a guest's
        # SourceLoader subclass returns any text from get_data), from `exec_module`'s frame.
        # By identity: `in` on a set would hash the guest's class (its metaclass's
        # `__hash__` would run inside the hook, outside attack 13).
        caller = innermost.f_back
        loader = caller.f_locals.get("self") if caller is not None else None
        if any(type(loader) is known for known in _LOADERS) and _plain_loader(loader):
            return None
    return "running code the policy did not check (exec/eval) is not allowed in guest code"


def _plain_loader(loader: Any) -> bool:
    """An importlib loader whose own attributes override none of its class's (an instance's
    `get_code` returned code the policy never saw, outside attack 14). Its class is one of
    `_LOADERS`: reading its `__dict__` and its class's attributes runs no guest code."""
    own = getattr(loader, "__dict__", {})
    return all(type(k) is str and not hasattr(type(loader), k) for k in list(own))


_LOADERS = tuple(
    getattr(sys.modules.get(module), name, None)
    for module, name in [
        ("_frozen_importlib_external", "SourceFileLoader"),
        ("_frozen_importlib_external", "SourcelessFileLoader"),
        ("_frozen_importlib_external", "ExtensionFileLoader"),
        ("_frozen_importlib", "BuiltinImporter"),
        ("_frozen_importlib", "FrozenImporter"),
        ("zipimport", "zipimporter"),
    ]
    if getattr(sys.modules.get(module), name, None) is not None
)

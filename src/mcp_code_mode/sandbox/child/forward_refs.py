"""`typing` evaluates string annotations with the guest's builtins, in the guest's own
globals only. Installed once, at lockdown (before library classes become read-only, see
`frozen_classes`).

`typing.get_type_hints` (called by `functools.singledispatch().register`, for one)
evaluates annotation text with a globals dict that may lack `__builtins__` (an object
without `__globals__` gets `{}`); `eval` then inserts the *real* builtins, so
`x: "__import__('os')"` would reach `os`. Every evaluation goes through
`ForwardRef._evaluate` or `typing._eval_type`, so their globals get the guest's builtins:
those of the run under way, read from the guest's module when the evaluation happens.
`module=` would have it evaluated in that module's globals (`ForwardRef("modules",
module="sys")` is `sys.modules`): only the guest's own may be named, by typing's own
forward references."""

from __future__ import annotations

import sys
import types
from typing import Any

from mcp_code_mode.sandbox.child.audit import Refused
from mcp_code_mode.sandbox.child.guards import guest_getattr
from mcp_code_mode.sandbox.child.rules import GUEST_MODULE

__all__ = ["guard_forward_refs"]


def guard_forward_refs(typing: Any) -> None:
    """Wrap `typing.ForwardRef._evaluate` and `typing._eval_type` in place."""
    forward, eval_type = typing.ForwardRef, typing._eval_type
    evaluate = forward._evaluate

    def guarded(self: Any, globalns: Any, localns: Any, *args: Any, **kwargs: Any) -> Any:
        module = self.__forward_module__ if type(self) is forward else "a subclass's"  # 74
        if module is not None and not (type(module) is str and module == GUEST_MODULE):
            raise Refused("a forward reference evaluated in another module is not allowed")
        scope, local = _guest_scope(globalns, localns)
        return evaluate(self, scope, local, *args, **kwargs)

    def guarded_eval_type(t: Any, globalns: Any, localns: Any, *args: Any, **kwargs: Any) -> Any:
        # What `get_type_hints` calls with the globals it picked, before any `_evaluate`
        # (a ForwardRef subclass's own would get them as they are).
        scope, local = _guest_scope(globalns, localns)
        return eval_type(t, scope, local, *args, **kwargs)

    forward._evaluate = guarded
    typing._eval_type = guarded_eval_type


def _guest_builtins() -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The guest's globals and builtins for the run under way: those of the guest's module,
    when its builtins are a guest's (made by `GuestRuntime.safe_builtins`); else none at
    all (never an absent `__builtins__`, which `eval` would fill with the real ones)."""
    own = getattr(sys.modules.get(GUEST_MODULE), "__dict__", None)
    safe = dict.get(own, "__builtins__") if type(own) is dict else None
    if type(safe) is not dict or dict.get(safe, "getattr") is not guest_getattr:
        return None, {}
    return own, safe


def _guest_scope(globalns: Any, localns: Any) -> tuple[dict[str, Any], Any]:
    """The globals and locals annotation text is evaluated in: a copy of the guest's own
    globals (or of such a copy) with the locals given, less real modules; else nothing at
    all, locals included; and the guest's builtins either way. `get_type_hints` picks the
    globals of whatever a function's `__wrapped__` leads to, or of a base class's module,
    and passes them as the locals too: a library module's names (`sys`, a dict of the real
    builtins) would reach text the policy never saw."""
    own, safe = _guest_builtins()
    copied = type(globalns) is dict and dict.get(globalns, "__builtins__") is safe
    if own is None or not (globalns is own or copied):
        return {"__builtins__": safe}, {}
    scope = dict(globalns)
    scope["__builtins__"] = safe
    return scope, _without_modules(localns)


def _without_modules(localns: Any) -> Any:
    """Local names for an evaluation, less any real module (a library class's attributes)."""
    if type(localns) is not dict:
        return localns
    return {k: v for k, v in localns.items() if not isinstance(v, types.ModuleType)}

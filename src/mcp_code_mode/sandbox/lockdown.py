"""Close the guest's view, once per worker process, after the allowed modules are loaded.

Two parts, one idea: what guest code cannot name it cannot reach, and what it reaches it
cannot use.

- Stdlib functions that apply attribute names the guest chose (`functools.update_wrapper`
  and `wraps` read and write `assigned`/`updated`; `copy` applies a reducer's state) get
  the guest's guarded `getattr`/`setattr` in their module's globals, which shadow the
  builtins for exactly those modules.
- The audit hook (`audit`) decides every event that runs code, reaches frames or code
  objects, imports, or touches the OS, by the nearest frame that owns it.

Stdlib only; runs in local workers (the zygote, before it forks) and in Pyodide runners.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from mcp_code_mode.sandbox import audit
from mcp_code_mode.sandbox.guest import (
    BLOCKED_ATTRIBUTES,
    GUEST_ONLY_DUNDERS,
    REFUSED_DUNDERS,
    GuestRuntime,
    guarded_names,
)

__all__ = ["GENERATED_CODE_FORBIDS", "lock_down"]

GENERATED_CODE_FORBIDS = (
    (REFUSED_DUNDERS - {"__setattr__", "__delattr__"}) | BLOCKED_ATTRIBUTES | GUEST_ONLY_DUNDERS
)
"""Names that code a trusted helper compiles from the guest's names may not mention
(frozen dataclasses call `object.__setattr__`, so those two are allowed)."""

# Module -> the builtins it resolves to the guest's guarded versions.
_NAME_TAKERS: dict[str, tuple[str, ...]] = {
    "functools": ("getattr", "setattr"),
    "copy": ("setattr",),
}

_DONE: list[bool] = []


def lock_down(
    guest_filename: str, allowed_imports: Iterable[str], modules: dict[str, Any] | None = None
) -> None:
    """Shadow the name-taking builtins of `_NAME_TAKERS`, then install the audit hook."""
    if _DONE:
        return
    _DONE.append(True)
    loaded = sys.modules if modules is None else modules
    guarded = guarded_names()
    for name, builtins in _NAME_TAKERS.items():
        module = loaded.get(name)
        if module is not None:
            module.__dict__.update({b: guarded[b] for b in builtins})
    trusted, checked = audit.trusted_helpers(loaded, [(GuestRuntime._import, audit.ALL_EVENTS)])
    audit.install(
        guest_filename=guest_filename,
        trusted=trusted,
        checked=checked,
        forbidden_names=GENERATED_CODE_FORBIDS,
        allowed_imports=allowed_imports,
    )

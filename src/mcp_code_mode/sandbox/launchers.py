"""Which backend MCP_EXECUTOR names: a table of launcher factories.

A new backend is a module with a `Launcher` (see `backend.py`) that has a
`from_settings(settings)` constructor, and a row here; `ExecutorName` in `settings.py` lists
the keys (a test checks that the two agree).
"""

from __future__ import annotations

from collections.abc import Callable

from ..settings import ExecutorName, Settings
from .backend import Launcher
from .local import Zygote
from .pyodide import PyodideLauncher

__all__ = ["LAUNCHERS", "launcher_for"]

LAUNCHERS: dict[str, Callable[[Settings], Launcher]] = {
    "local": Zygote.from_settings,
    "pyodide": PyodideLauncher.from_settings,
}


def launcher_for(settings: Settings, executor: ExecutorName | None = None) -> Launcher:
    """A new (not yet started) launcher of `executor`, by default the one MCP_EXECUTOR names."""
    return LAUNCHERS[executor or settings.executor](settings)

"""A module as guest code sees it (`sandbox/child/module_view.py`), in this process."""

from __future__ import annotations

import asyncio
import asyncio.subprocess  # in sys.modules, as in a worker
import re

import pytest

from mcp_code_mode.sandbox.child.module_view import ImportRefused, ModuleView


def test_a_refused_submodule_is_refused_as_an_import() -> None:
    """Refused with an AttributeError, `import asyncio.subprocess as sp` and `from re import
    _parser` would have the interpreter look `asyncio.subprocess` up in `sys.modules`
    itself and bind the real module (outside attack 27)."""
    view = ModuleView(asyncio, frozenset({"asyncio", "re"}))
    with pytest.raises(ImportRefused):
        _ = view.subprocess
    with pytest.raises(ImportRefused):
        _ = ModuleView(re, frozenset({"re"}))._parser
    assert view.events.__name__ == "asyncio.events"  # a submodule that is allowed: a view
    assert type(view.events) is not type(asyncio)


def test_a_missing_name_carries_no_real_module() -> None:
    """The interpreter's own AttributeError holds the object looked at as `.obj`, and a
    library error raised while handling it holds it as `__context__` (attack 26)."""
    view = ModuleView(asyncio, frozenset({"asyncio"}))
    with pytest.raises(AttributeError) as caught:
        _ = view.no_such_name
    assert caught.value.obj is not asyncio
    assert caught.value.__context__ is None

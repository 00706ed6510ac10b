"""The audit hook's rules, as plain functions (the hook itself is tested through real
workers in tests/security/test_gadgets.py: once added, a hook cannot be removed)."""

from __future__ import annotations

import collections
import dataclasses
import sys

import pytest

from mcp_code_mode.sandbox.child.audit import IMPORT_EVENTS, granted, names_in
from mcp_code_mode.sandbox.child.lockdown import GENERATED_CODE_FORBIDS
from mcp_code_mode.sandbox.child.trusted import trusted_helpers

DEFAULT = frozenset(["json", "asyncio", "typing", "dataclasses"])


@pytest.mark.parametrize(
    ("event", "args", "allowed", "guest_imports", "expected"),
    [
        ("open", ("/etc/passwd", "r", 0), DEFAULT, True, False),
        ("open", ("/etc/passwd", "r", 0), DEFAULT | {"io"}, True, True),
        ("os.system", (b"id",), DEFAULT, True, False),
        ("os.system", (b"id",), DEFAULT | {"os"}, True, True),
        ("os.listdir", ("/",), DEFAULT | {"pathlib"}, True, True),
        ("socket.connect", (None, ("127.0.0.1", 1)), DEFAULT, True, False),
        ("socket.connect", (None, ("127.0.0.1", 1)), DEFAULT | {"socket"}, True, True),
        ("subprocess.Popen", ("id", [], None, None), DEFAULT | {"multiprocessing"}, True, True),
        ("exec", (None,), DEFAULT | {"os", "sys", "io"}, True, False),
        ("function.__new__", (None,), DEFAULT | {"os", "sys"}, True, False),
        ("object.__getattr__", (None, "__code__"), DEFAULT | {"sys"}, True, False),
        ("sys._getframe", (None,), DEFAULT | {"sys"}, True, False),
        ("sys.settrace", (None,), DEFAULT | {"sys"}, True, False),
        ("import", ("ctypes", None, [], [], []), DEFAULT, True, False),
        ("import", ("ctypes", None, [], [], []), DEFAULT, False, True),
        ("import", ("json.tool", None, [], [], []), DEFAULT, True, True),
        ("import", ("os", None, [], [], []), DEFAULT | {"importlib"}, True, True),
        ("ctypes.dlopen", ("libc.so.6",), DEFAULT, True, False),
        ("code.__new__", (None,), DEFAULT | {"code"}, True, False),  # the stdlib's `code`
        ("object.__setattr__", (None, "__code__"), DEFAULT | {"object"}, True, False),
    ],
)
def test_what_the_allowlist_grants(
    event: str,
    args: tuple[object, ...],
    allowed: frozenset[str],
    guest_imports: bool,
    expected: bool,
) -> None:
    assert granted(event, args, allowed, guest_imports=guest_imports) is expected


def test_names_in_sees_nested_code() -> None:
    code = compile("def f():\n    return (lambda: ().__class__.__base__)()\n", "<t>", "exec")
    assert {"__class__", "__base__"} <= set(names_in(code))
    assert set(names_in(code)) & GENERATED_CODE_FORBIDS == {"__base__"}


def test_trusted_helpers_are_found_in_the_loaded_stdlib() -> None:
    extra = [(test_names_in_sees_nested_code, IMPORT_EVENTS, None)]
    found = trusted_helpers(sys.modules, extra)
    assert found.events[collections.namedtuple.__code__] >= {"exec", "sys._getframe"}
    assert collections.namedtuple.__code__ in found.checked
    assert found.events[test_names_in_sees_nested_code.__code__] is IMPORT_EVENTS
    assert found.beneath[test_names_in_sees_nested_code.__code__] is None  # any code beneath
    create = getattr(dataclasses, "_create_fn", None)
    if create is not None:  # 3.11; 3.13 compiles in _FuncBuilder.add_fns_to_class
        assert create.__code__ in found.checked


def test_a_helper_vouches_only_for_the_code_listed_beneath_it() -> None:
    """A helper's own code, by default; one that formats stacks, the modules that read
    frames and source lines for it (outside attack 25: a factory planted under asyncio's
    coroutine repr read frames)."""
    import asyncio.coroutines
    import traceback

    found = trusted_helpers(sys.modules)
    assert found.beneath[asyncio.coroutines._format_coroutine.__code__] == frozenset()
    assert found.beneath[traceback.extract_stack.__code__] >= {traceback.__file__}
    assert asyncio.base_tasks.__file__ not in found.beneath[traceback.extract_stack.__code__]


def test_generated_code_may_set_attributes_but_not_walk() -> None:
    """Frozen dataclasses call `object.__setattr__`; the walks of the classic escape are out;
    a field may still be called `os` or `mro`."""
    assert {"__setattr__", "__delattr__"}.isdisjoint(GENERATED_CODE_FORBIDS)
    walks = {"__base__", "__subclasses__", "__globals__", "__dict__", "f_globals", "gi_frame"}
    assert walks <= GENERATED_CODE_FORBIDS
    assert {"os", "sys", "builtins", "mro"}.isdisjoint(GENERATED_CODE_FORBIDS)


def test_the_hooks_rules_run_no_guest_code() -> None:
    """A guest object's `__class__` property would run inside the hook under `isinstance`
    (outside attack 18 switched the hook off from there): only exact types are looked at."""
    from mcp_code_mode.sandbox.child import audit, audit_rules

    ran: list[bool] = []
    Fake = type("Fake", (), {"__class__": property(lambda self: ran.append(True) or object)})
    fake = Fake()
    assert audit_rules.name_refusal(fake, frozenset()) is not None
    assert audit_rules.type_expression_refusal(fake) is not None
    assert not audit._names_guest_code("exec", (fake,), "<guest>")
    assert ran == []


def test_a_reducers_builtin_is_the_guests_own() -> None:
    """`copy` calls what a reducer returns: the real `getattr` (a bound method's reducer,
    outside attack 21) becomes the guest's guarded one, a removed builtin is refused."""
    import builtins
    import copy
    import json

    from mcp_code_mode.sandbox.child.copy_hooks import guarded_reconstruct

    reconstruct = guarded_reconstruct(copy._reconstruct)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="__globals__"):
        reconstruct(None, None, builtins.getattr, (json.dumps, "__globals__"))
    with pytest.raises(TypeError, match="eval"):
        reconstruct(None, None, builtins.eval, ("1",))
    assert reconstruct(None, None, builtins.getattr, ("ab", "upper"))() == "AB"
    with pytest.raises(TypeError, match="from a module"):  # nor a module (outside attack 72)
        reconstruct(None, None, builtins.getattr, (json, "dumps"))

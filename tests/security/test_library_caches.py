"""Library caches keyed by what library code compares (`sandbox/child/library_caches.py`):
a guest object equal to anything, hashed as another key, is never filed under that key.
Outside attack 84 made every later `typing.List[int]` of a run answer `List[X]` and
`re.I | re.M` answer `re.VERBOSE`."""

from __future__ import annotations

import typing

import pytest

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.child.library_caches import cached_getitems

from .helpers import attempt, error_type

_EQUAL_TO_ANYTHING = (
    "class Anything:\n    def __init__(self, like):\n        self.like = like\n"
    "    def __hash__(self):\n        return hash(self.like)\n"
    "    def __eq__(self, other):\n        return True\n"
    "    def __call__(self):\n        pass\n"
    "    def __repr__(self):\n        return 'X'\n"
)


async def test_typing_subscripts_are_not_cached_under_guest_keys(sec_gateway: Gateway) -> None:
    code = _EQUAL_TO_ANYTHING + (
        "import typing\n"
        "typing.List[Anything(int)], typing.Dict[Anything(str), Anything(int)]\n"
        "typing.Optional[Anything(int)]\n"
        "class Mine:\n    pass\n"
        "[repr(typing.List[int]), repr(typing.Dict[str, int]), repr(typing.Optional[int]),\n"
        " typing.List[int] is typing.List[int], typing.List[Mine] is typing.List[Mine]]"
    )
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "OK", out
    # the library's own keys and classes the run made are still cached
    assert out["result"] == [
        "typing.List[int]",
        "typing.Dict[str, int]",
        "typing.Optional[int]",
        True,
        True,
    ], out


async def test_a_descriptor_cannot_show_the_cache_objects_methods(sec_gateway: Gateway) -> None:
    """Read on the class, the descriptors answer `object.__eq__` and `object.__hash__`; an
    instance gets the run's own (outside attack 88)."""
    code = (
        "import typing\nclass EqD:\n    def __get__(self, inst, owner=None):\n"
        "        return object.__eq__ if inst is None else (lambda other: True)\n"
        "class HashD:\n    def __get__(self, inst, owner=None):\n"
        "        return object.__hash__ if inst is None else (lambda: hash(int))\n"
        "class X:\n    __eq__ = EqD()\n    __hash__ = HashD()\n"
        "typing.List[X()], typing.Tuple[X()]\n"
        "[repr(typing.List[int]), repr(typing.Tuple[int])]"
    )
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "OK", out
    assert out["result"] == ["typing.List[int]", "typing.Tuple[int]"], out


async def test_flag_pseudo_members_are_filed_under_exact_ints(sec_gateway: Gateway) -> None:
    code = (
        "import re, enum\nclass G(int):\n    def __hash__(self):\n"
        "        return 10\n    def __eq__(self, other):\n        return True\n"
        "re.RegexFlag(G(64))\n"
        "try:\n    re.RegexFlag('2')\n    fake = 'accepted'\n"
        "except ValueError:\n    fake = 'refused'\n"
        "[repr(re.I | re.M), int(re.I | re.M), bool(re.compile('A B', re.I | re.M).match('a b')),"
        " fake]"
    )
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "OK", out
    assert out["result"] == ["re.IGNORECASE|re.MULTILINE", 10, True, "refused"], out


@pytest.mark.skipif(hasattr(typing, "_caches"), reason="3.12+ keeps them in typing._caches")
def test_every_cached_subscript_of_typing_is_found() -> None:
    """3.11 keeps each cache in a closure: the walk finds as many as typing made."""
    cleanups = getattr(typing, "_cleanups", [])
    own = [c for c in cleanups if c.__self__.__wrapped__.__module__ == "typing"]
    assert len(list(cached_getitems(typing))) == len(own) > 0

"""Library classes are read-only in a worker (`sandbox/child/frozen_classes.py`): library
code the guest steers can no longer write a library class's attributes. Outside attacks 50
and 73 changed every later `json.dumps` of a run with an `__init__` called unbound on its
class."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from mcp_code_mode.gateway import Gateway

from .helpers import NO_METACLASS, attempt, error_type


async def test_library_code_cannot_write_a_library_class(sec_gateway: Gateway) -> None:
    code = (
        "import json, collections\nout = []\n"
        "for write in (lambda: json.JSONEncoder.__init__(json.JSONEncoder, default=repr),\n"
        "              lambda: collections.UserDict.__init__(collections.UserDict, {'a': 1})):\n"
        "    try:\n        write()\n        out.append('WROTE')\n"
        "    except TypeError as e:\n        out.append(str(e))\n"
        "try:\n    json.dumps(object())\nexcept TypeError:\n    out.append('not serializable')\n"
        "out + [hasattr(collections.UserDict, 'data')]"
    )
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "OK", out
    # The unbound `__init__` is refused by the guard first (attack 94); behind it, the class
    # is immutable all the same.
    walls = [
        ("cannot set 'skipkeys' attribute of immutable type 'JSONEncoder'", "'JSONEncoder'"),
        ("cannot set 'data' attribute of immutable type 'UserDict'", "'UserDict'"),
    ]
    for said, (frozen, name) in zip(out["result"], walls, strict=False):
        guard = f"__init__() of a library class may not be applied to the class {name}"
        assert said == frozen or said.startswith(guard), out
    assert out["result"][2:] == ["not serializable", False], out


async def test_classes_made_in_a_run_stay_writable(sec_gateway: Gateway) -> None:
    code = (
        "import collections, dataclasses, enum, json, string\n"
        "class Mine(json.JSONEncoder):\n    pass\nMine.default = lambda self, o: 'mine'\n"
        "@dataclasses.dataclass(order=True)\nclass P:\n    x: int\n"
        "class Color(enum.Flag):\n    R = 1\n    G = 2\n"
        "class T(string.Template):\n    delimiter = '%'\n"
        "N = collections.namedtuple('N', 'a')\nN.extra = 3\n"
        "[json.dumps(object(), cls=Mine), P(1) < P(2), str(Color.R | Color.G),\n"
        " T('%a').substitute(a=1), N(1).extra]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == ['"mine"', True, "Color.R|G", "1", 3], out


def test_freezing_marks_existing_classes_and_spares_those_written_at_run_time() -> None:
    """In a process of its own: the flag cannot be taken back."""
    script = textwrap.dedent(
        """
        import io, json, weakref, zipfile
        from mcp_code_mode.sandbox.child.frozen_classes import freeze_classes
        marked = freeze_classes()
        out = [marked > 250, freeze_classes()]  # 289 here on 3.13, more on 3.11
        try:
            json.JSONDecoder.parse_float = int
        except TypeError:
            out.append("refused")
        class Late(json.JSONEncoder):
            pass
        Late.x = 1
        class O:
            pass
        weakref.finalize(O(), print)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            z.writestr("a/b.txt", "hi")
        out.append([p.name for p in zipfile.Path(zipfile.ZipFile(buffer)).iterdir()])
        print(out)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True, 0, 'refused', ['a']]", done.stdout


async def test_sealed_classes_take_no_subclass_by_any_route(sec_gateway: Gateway) -> None:
    """Outside attack 74: the `__init_subclass__` walls were a first base's to keep; a first
    base whose own `__init_subclass__` said nothing passed them. The interpreter's own
    check on each base holds for a class statement, `type(...)` and `type.__new__`."""
    code = (
        "import asyncio, dataclasses, typing\nclass Quiet:\n"
        "    def __init_subclass__(cls, **kw):\n        pass\nout = []\n"
        "bases = (asyncio.BaseEventLoop, asyncio.SelectorEventLoop, asyncio.Transport,\n"
        "         asyncio.Runner, dataclasses.Field, type(typing.List[int]), type(tools))\n"
        "for base in bases:\n"
        "    for make in (lambda: type('S', (Quiet, base), {}),\n"
        "                 lambda: type.__new__(type, 'S', (Quiet, base), {})):\n"
        "        try:\n            make()\n            out.append('MADE')\n"
        '        except TypeError as e:\n            out.append(str(e).split("\'")[1])\n'
        "class Mine(asyncio.Protocol):\n    pass\nclass Box(typing.Generic[typing.TypeVar('T')]):\n"
        "    pass\nfor meta in (type, type(typing.Protocol)):\n"
        "    try:\n        type.__new__(type, 'M', (Quiet, meta), {})\n"
        "        out.append('MADE')\n    except TypeError as e:\n"
        '        out.append(str(e).split("\'")[1])\n'
        "out + [Mine.__name__, repr(Box[int])]"
    )
    out = await attempt(sec_gateway, code)
    names = ["BaseEventLoop", "_UnixSelectorEventLoop", "Transport", "Runner", "Field"]
    names += ["_GenericAlias", "Tools"]
    metaclasses = ["type", "_ProtocolMeta"]  # no metaclass of the guest's either
    assert out["result"][:-2] == [n for n in names for _ in range(2)] + metaclasses, out
    assert out["result"][-2:] == ["Mine", "__main__.Box[int]"], out


_PROBES = (
    "import functools, collections.abc\nleaked = []\nclass Probe:\n"
    "    def __init__(self, h):\n        self.h = h\n    def __hash__(self):\n"
    "        return self.h\n    def __eq__(self, other):\n        leaked.append(other)\n"
    "        return False\na = id(type(collections.abc.Hashable))\n"
    "bits = 64 if a > 2 ** 32 else 32\nmask = (1 << bits) - 1\ndef h(p):\n"
    "    y = ((p >> 4) | (p << (bits - 4))) & mask\n"
    "    return y - (1 << bits) if y >= 1 << (bits - 1) else y\n"
    "probes = tuple(Probe(h(p)) for p in range(a - (1 << 17), a + (1 << 17), 8))\n"
)


async def test_singledispatch_hands_no_hidden_class_to_guest_code(sec_gateway: Gateway) -> None:
    """Outside attack 80: singledispatch's `_compose_mro` tests every subclass of `object`
    against a set made from `cls.__mro__`; a guest `__mro__` of objects whose hashes were
    class addresses had their `__eq__` given hidden classes (`BuiltinImporter`, whose
    `load_module("builtins")` is the real builtins). Only classes of a library metaclass
    are dispatched on; ordinary dispatch works."""
    code = _PROBES + (
        "Fake = type('Fake', (), {'__m' + 'ro__': probes, '__ba' + 'ses__': (object,)})\n"
        "d = functools.singledispatch(lambda x: 'default')\nout = []\ntry:\n"
        "    type('Meta', (type,), {'__m' + 'ro__': property(lambda cls: probes)})\n"
        "except TypeError as e:\n    out.append(str(e))\ntry:\n    d.dispatch(Fake())\n"
        "except TypeError as e:\n    out.append(str(e))\n"
        "import dataclasses, enum\n@d.register\ndef _(x: int):\n    return 'int'\n"
        "@d.register(collections.abc.Sequence)\ndef _(x):\n    return 'seq'\n"
        "class Mine(list):\n    pass\nclass E(enum.Enum):\n    A = 1\n"
        "@dataclasses.dataclass\nclass P:\n    x: int = 0\n"
        "out + [len(leaked), d(True), d(Mine()), d((1,)), d(E.A), d(P())]"
    )
    out = await attempt(sec_gateway, code)
    refused = "singledispatch takes classes whose metaclass is the library's only"
    no_metaclass = f"type 'type' {NO_METACLASS}"
    expected = [no_metaclass, refused, 0, "int", "seq", "seq", "default", "default"]
    assert out["result"] == expected, out


async def test_a_named_tuple_sets_no_refused_name(sec_gateway: Gateway) -> None:
    """Outside attack 80: `typing.NamedTupleMeta` set every key of the namespace with the
    real `setattr` (trusted to set `__bases__`): now the guest's own."""
    code = (
        "import typing\nbase = typing.NamedTuple.__mro_entries__((typing.NamedTuple,))[0]\n"
        "NTM = type(base)\nclass Mix(tuple):\n    __slots__ = ()\n"
        "ns = {'__module__': '__main__', '__annotations__': {'a': int}, '__ba' + 'ses__': (Mix,)}\n"
        "try:\n    NTM('N', (base,), ns)\n    out = 'SET'\nexcept Exception as e:\n"
        "    out = str(e)\nclass Point(typing.NamedTuple):\n    '''A point.'''\n    x: int\n"
        "    y: int = 0\n    def norm(self):\n        return abs(self.x) + abs(self.y)\n"
        "    def __repr__(self):\n        return f'P{tuple(self)}'\n"
        "p = Point(3, -4)\n[out, p.norm(), repr(p), Point.__doc__, p._replace(y=1)._asdict()]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == [
        "setting this attribute: '__bases__' is not allowed in guest code",
        7,
        "P(3, -4)",
        "A point.",
        {"x": 3, "y": 1},
    ], out


async def test_an_importer_hands_out_no_module(sec_gateway: Gateway) -> None:
    """The step after a hidden class reached: an importer's `load_module`."""
    code = "x = [].__class__\ngetattr(x, 'load_' + 'module')"
    out = await attempt(sec_gateway, code)
    assert "access to attribute 'load_module' is not allowed" in out["error"]["message"], out


async def test_a_guest_loop_policy_never_gets_a_later_steps_coroutine(
    sec_gateway: Gateway,
) -> None:
    """Outside attack 81: a session step set a guest policy whose `__class__` said it was
    asyncio's; the next step's top-level `await` asked it for the loop and handed that loop
    the run's coroutine. The loop comes from the backend's factory, never a policy."""
    session = sec_gateway.executor.open_session()
    assert session is not None
    try:
        first = (
            "import asyncio\nasked = []\nclass Base:\n"
            "    def new_event_loop(self):\n        asked.append('new')\n"
            "        return asyncio.DefaultEventLoopPolicy().new_event_loop()\n"
            "    def get_event_loop(self):\n        asked.append('get')\n"
            "    def set_event_loop(self, loop):\n        asked.append('set')\n"
            "    def get_child_watcher(self):\n        asked.append('watcher')\n"
            "P = type('P', (Base,), {'__cl' + 'ass__': "
            "property(lambda s: asyncio.DefaultEventLoopPolicy)})\n"
            "asyncio.set_event_loop_policy(P())\n1"
        )
        assert (await sec_gateway.execute(first, session=session)).ok
        out = await sec_gateway.execute("await asyncio.sleep(0)\nasked", session=session)
        assert out.result == [], out.to_json()
    finally:
        session.close()


async def test_printed_text_is_counted_as_the_text_it_is(sec_gateway: Gateway) -> None:
    """Outside attack 81: the stdout capture took a str subclass's `__len__` and slicing,
    so `print` charged 1 character and kept 3 MB (the host then refused the whole run)."""
    code = (
        "big = 'A' * 3_000_000\nclass T(str):\n    def __str__(self):\n        return self\n"
        "    def __len__(self):\n        return 1\n    def __getitem__(self, k):\n"
        "        return big\nprint(T('xyz'))\n'done'"
    )
    out = await attempt(sec_gateway, code)
    assert (out["result"], out["stdout"]) == ("done", "xyz\n"), out


async def test_re_caches_are_keyed_by_exact_text(sec_gateway: Gateway) -> None:
    """Outside attack 81: a `str` subclass whose `__eq__`/`__hash__` matched another
    pattern's text was cached under it; every later `re.compile` of that text got the
    guest's pattern (a replacement template and an `int` subclass of flags likewise)."""
    code = (
        "import re\nseen = []\ntry:\n    M = type('M', (type,), {'__eq__': lambda c, o: True, "
        "'__hash__': lambda c: hash(str)})\nexcept TypeError:\n    M = type\n"
        "class S(str, metaclass=M):\n    def __eq__(self, other):\n"
        "        seen.append(other)\n        return True\n    def __hash__(self):\n"
        "        return hash('[a-z]+')\nre.compile(S('[0-9]+'))\nclass R(str, metaclass=M):\n"
        "    def __eq__(self, other):\n        return True\n    def __hash__(self):\n"
        "        return hash(r'<\\1>')\nre.sub('(b)', R('X'), 'abc')\nclass F(int):\n"
        "    def __eq__(self, other):\n        return True\n    def __hash__(self):\n"
        "        return 0\nre.compile('q', F(2))\n"
        "[re.compile('[a-z]+').findall('abc123'), re.sub('(b)', r'<\\1>', 'abc'),\n"
        " re.compile('q').flags, seen]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == [["abc"], "a<b>c", 32, []], out


async def test_a_metaclass_is_refused_with_a_reason(sec_gateway: Gateway) -> None:
    out = await attempt(sec_gateway, "class Singleton(type):\n    pass")
    assert error_type(out) == "RUNTIME_ERROR", out
    message = out["error"]["message"]
    assert "type 'type' is not an acceptable base type" in message, out
    assert "in the sandbox no metaclass can be defined" in message, out


async def test_strptime_formats_are_cached_by_exact_text(sec_gateway: Gateway) -> None:
    """Outside attack 83: `_strptime`'s format cache took a `str` subclass equal to
    "%Y-%m-%d", and every later `strptime` of that format read "%Y-%d-%m"."""
    code = (
        "import datetime\nclass F(str):\n    def __hash__(self):\n"
        "        return hash('%Y-%m-%d')\n    def __eq__(self, other):\n        return True\n"
        "datetime.datetime.strptime('2020-31-12', F('%Y-%d-%m'))\n"
        "str(datetime.datetime.strptime('2020-01-12', '%Y-%m-%d').date())"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == "2020-01-12", out

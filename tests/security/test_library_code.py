"""Code libraries make or call on the guest's behalf: the methods dataclasses compiles from
text (checked where the text is complete) and, under Pyodide, the JavaScript asyncio's
loop calls (no JavaScript error reaches guest code). Outside attacks 45 and 46."""

from __future__ import annotations

import dataclasses
import itertools
import subprocess
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.child.generated import check_generated
from mcp_code_mode.sandbox.pyodide_setup import deno_binary

from ..conftest import require_pyodide
from .helpers import NO_METACLASS, attempt, error_type, reached, table

_OPTIONS = {
    "repr": (True, False),
    "eq": (True, False),
    "order": (False, True),
    "unsafe_hash": (False, True),
    "frozen": (False, True),
    "slots": (False, True),
    "kw_only": (False, True),
}


def _option_sets() -> list[dict[str, bool]]:
    combos = (
        dict(zip(_OPTIONS, values, strict=True)) for values in itertools.product(*_OPTIONS.values())
    )
    return [o for o in combos if o["eq"] or not o["order"]]


def _make_classes(options: dict[str, bool]) -> None:
    annotations = {"alpha": int, "beta": list, "gamma": typing.ClassVar[int]}
    namespace = {"__annotations__": annotations, "alpha": 1, "__module__": __name__}
    namespace["beta"] = dataclasses.field(default_factory=list)
    namespace["__post_init__"] = lambda self: None
    base = dataclasses.dataclass(**options)(type("Base", (), namespace))
    more = {
        "__annotations__": {"delta": dataclasses.InitVar[int], "eps": int},
        "__module__": __name__,
    }
    more["eps"] = dataclasses.field(default=3, kw_only=True)
    more["delta"] = 0
    more["__post_init__"] = lambda self, delta: None
    bases = () if options["slots"] else (base,)
    dataclasses.dataclass(**options)(type("More", bases, more))


@pytest.fixture
def generated(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every method text the real dataclasses makes while the test runs, as passed on."""
    texts: list[tuple[Any, ...]] = []
    create = getattr(dataclasses, "_create_fn", None)
    if create is not None:

        def recording(name: Any, args: Any, body: Any, **kw: Any) -> Any:
            texts.append((name, list(args), list(body), kw.get("locals")))
            return create(name, args, body, **kw)

        monkeypatch.setattr(dataclasses, "_create_fn", recording)
    else:  # 3.12+
        builder: Any = dataclasses._FuncBuilder  # type: ignore[attr-defined]
        add_fn = builder.add_fn

        def add_recording(self: Any, name: Any, args: Any, body: Any, **kw: Any) -> Any:
            texts.append((name, list(args), list(body), kw.get("locals")))
            return add_fn(self, name, args, body, **kw)

        monkeypatch.setattr(builder, "add_fn", add_recording)
    return texts


def test_every_method_dataclasses_makes_passes(generated: list[tuple[Any, ...]]) -> None:
    for options in _option_sets():
        _make_classes(options)
    dataclasses.make_dataclass("Made", ["a", ("b", int), ("c", int, dataclasses.field(default=1))])
    names = {name for name, *_ in generated}
    assert {"__init__", "__repr__", "__eq__", "__lt__", "__hash__", "__setattr__"} <= names
    for text in generated:
        check_generated(*text)  # raises if the check refused dataclasses' own text


_REPR_BODY = 'return self.__class__.__qualname__ + f"(alpha={self.alpha!r})"'
# What outside attack 45's `Field` subclass made dataclasses compile (3.11's `__repr__`).
_ATTACK_45 = (
    'return self.__class__.__qualname__ + f"(a" + str(K.append(enum.Enum._convert_)) + "'
    '={self.a!r})"'
)


@pytest.mark.parametrize(
    "body",
    [
        _ATTACK_45,
        'return f"{(k := enum.Enum._convert_)!r}"',
        'return f"{(lambda: 0)()!r}"',
        "self.alpha = enum.Enum._convert_",
        "self.alpha = [x for x in self.__class__.__mro__]",
        "self.alpha = self.__dict__['x']",
        "self.alpha = __import__('sys')",
        "return hash((self.alpha,)) if str.format else 0",
        "return NotImplemented; x = 1",
        "return (yield self.alpha)",
    ],
)
def test_any_other_expression_is_refused(body: str) -> None:
    with pytest.raises(TypeError, match="would compile text"):
        check_generated("__repr__", ["self"], [body], {})


_NAMES = st.sampled_from(["enum", "K", "str", "json", "x", "_convert_", "alpha", "self"])
_ATTRS = st.sampled_from(["Enum", "_convert_", "append", "__globals__", "alpha", "__class__"])


@st.composite
def _foreign_expression(draw: st.DrawFn) -> str:
    """An expression no template makes: a call of a name, or attributes read off a name
    other than `self`/`other`, in either order."""
    head = draw(_NAMES.filter(lambda n: n != "self"))
    attrs = draw(st.lists(_ATTRS, max_size=3))
    text = head + "".join("." + a for a in attrs)
    return text + "()" if draw(st.booleans()) or not attrs else text


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(expression=_foreign_expression(), where=st.sampled_from(["repr", "init", "eq"]))
def test_foreign_expressions_anywhere_are_refused(expression: str, where: str) -> None:
    body = {
        "repr": [f'return self.__class__.__qualname__ + f"(alpha={{{expression}!r}})"'],
        "init": [f"self.alpha={expression}"],
        "eq": ["if other.__class__ is self.__class__:", f" return (self.alpha,)==({expression},)"],
    }[where]
    with pytest.raises(TypeError):
        check_generated("__x__", ["self", "other"], body, {})


FIELDS = table(
    (
        "field_subclass_by_class_statement",
        "import dataclasses\nclass F(dataclasses.Field):\n    pass",
        "type 'Field' is not an acceptable base type",
    ),
    (
        "field_subclass_by_type",
        "import dataclasses\nF = type('F', (dataclasses.Field,), {})",
        "type 'Field' is not an acceptable base type",
    ),
)


@pytest.mark.parametrize(("code", "message"), FIELDS)
async def test_field_subclasses_are_refused(sec_gateway: Gateway, code: str, message: str) -> None:
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "RUNTIME_ERROR", out
    assert message in out["error"]["message"]


async def test_dataclasses_still_work_with_every_option(sec_gateway: Gateway) -> None:
    code = (
        "import dataclasses, typing\n"
        "@dataclasses.dataclass(order=True, frozen=True, slots=True, kw_only=True)\n"
        "class P:\n    x: int\n    y: list = dataclasses.field(default_factory=list)\n"
        "    z: typing.ClassVar[int] = 0\n"
        "@dataclasses.dataclass(unsafe_hash=True)\n"
        "class Q:\n    a: int\n    b: dataclasses.InitVar[int] = 2\n"
        "    def __post_init__(self, b):\n        self.a += b\n"
        "M = dataclasses.make_dataclass('M', ['m', ('n', int, dataclasses.field(default=5))])\n"
        "m = M(1)\nm.m = 4\n"
        "[repr(P(x=1)), P(x=1) < P(x=2), Q(1).a, hash(Q(1)) == hash(Q(1)),"
        " repr(m), M.__module__]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == ["P(x=1, y=[])", True, 3, True, "M(m=4, n=5)", "__main__"], out


FOREIGN = table(
    (
        # outside attack 48: the generated `__init__` wrote a library class's attribute
        "init_writes_a_library_class",
        "import dataclasses, json\n@dataclasses.dataclass\nclass C:\n    default: object\n"
        "C.__init__(json.JSONEncoder, lambda s, o: 'ESCAPED')\njson.dumps(object())",
    ),
    (
        # ... and the generated `__eq__` compared two enums' private `_convert_`
        "eq_reads_two_enums",
        "import dataclasses, enum\ngot = []\nclass H:\n    def __eq__(self, other):\n"
        "        got.append(other)\n        return True\n    __hash__ = None\n"
        "@dataclasses.dataclass\nclass C:\n    _convert_: int\n"
        "class E1(enum.Enum):\n    A = 1\nclass E2(enum.Enum):\n    B = 1\n"
        "try:\n    C.__init__(E2, H())\nexcept TypeError:\n    pass\n"
        "C.__eq__(E1, E2)\n'ESCAPED' if got else 'held'",
    ),
    (
        "made_class_repr_reads_a_module",
        "import dataclasses, json\nM = dataclasses.make_dataclass('M', ['_default_encoder'])\n"
        "'ESCAPED ' + M.__repr__(json)",
    ),
    (
        "order_method_on_a_foreign_pair",
        "import dataclasses, enum\n@dataclasses.dataclass(order=True)\nclass C:\n"
        "    _member_map_: int\nclass E(enum.Enum):\n    A = 1\n"
        "'ESCAPED' + str(C.__lt__(E, E))",
    ),
)


@pytest.mark.parametrize("code", FOREIGN)
async def test_generated_methods_serve_their_own_class_only(
    sec_gateway: Gateway, code: str
) -> None:
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert error_type(out) == "RUNTIME_ERROR", out
    # `C.__init__` read off the class is refused first now (attack 94): either wall
    message = out["error"]["message"]
    assert "instances only" in message or "may not be applied to" in message, out


async def test_generated_methods_still_serve_subclasses(sec_gateway: Gateway) -> None:
    code = (
        "import dataclasses, copy\n@dataclasses.dataclass\nclass A:\n    x: int = 1\n"
        "class B(A):\n    def __init__(self):\n        super().__init__(5)\n"
        "@dataclasses.dataclass\nclass D(A):\n    y: int = 2\n"
        "b, d = B(), D(3, 4)\n"
        "[repr(b), b == A(5), d < D(3, 5) if False else d == D(3, 4),"
        " repr(dataclasses.replace(d, y=9)), repr(copy.deepcopy(d))]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == ["B(x=5)", False, True, "D(x=3, y=9)", "D(x=3, y=4)"], out


_GUEST_METACLASS_DATACLASS = (
    "import dataclasses, enum\nfrom dataclasses import field, KW_ONLY\n"
    "def none():\n    return None\n"
    "@dataclasses.dataclass(eq=True, repr=False)\nclass M(enum.EnumType):\n"
    "    _convert_: object = field(default_factory=none)\n"
    "    b: object = field(default_factory=none, compare=False)\n"
    "    c: object = field(default_factory=none, compare=False)\n"
    "    _: KW_ONLY\n    boundary: object = field(default_factory=none, compare=False)\n"
    "    _simple: object = field(default_factory=none, compare=False)\n"
    "    __hash__ = type.__hash__\n"
    "ns = M.__prepare__('E1', (enum.Enum,))\nns['__module__'] = '__main__'\n"
    "E1 = M.__new__(M, 'E1', (enum.Enum,), ns)\n"
    "class E2(enum.Enum, metaclass=M):\n    pass\n"
    "'ESCAPED' if M.__eq__(E1, E2) is not NotImplemented else 'held'"
)
# a guest class between the dataclass and a library metaclass: `self` is a class whose
# private names fall through to the library's (`EnumType`/`Enum._convert_`)
_MIXED_METACLASS = (
    "import dataclasses, enum\ngot = []\nclass H:\n    def __eq__(self, other):\n"
    "        got.append(other)\n        return True\n    __hash__ = None\n"
    "@dataclasses.dataclass(init=False)\nclass C:\n    _convert_: object\n"
    "class M(C, enum.EnumType):\n    pass\n"
    # instances of M made past enum's `__new__`, which takes no guest metaclass (attack 77)
    "E1 = type.__new__(M, 'E1', (), {})\nE2 = type.__new__(M, 'E2', (), {})\n"
    "C.__eq__(E1, E2)\n'ESCAPED' if got else 'held'"
)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        # (once "does not take metaclasses" and "C.__eq__()": no metaclass is made now)
        (_GUEST_METACLASS_DATACLASS, f"type 'EnumType' {NO_METACLASS}"),
        (_MIXED_METACLASS, f"type 'EnumType' {NO_METACLASS}"),
    ],
    ids=["dataclass_metaclass", "metaclass_between"],
)
async def test_generated_methods_read_fields_as_guest_code_would(
    sec_gateway: Gateway, code: str, message: str
) -> None:
    """Outside attack 50: a dataclass that is a metaclass; its generated `__eq__` read
    `_convert_` off an enum class of that metaclass, where the lookup fell through to
    enum's own."""
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert error_type(out) == "RUNTIME_ERROR", out
    assert message in out["error"]["message"], out


# Outside attack 52: the own-class verdict was kept per type and looked up through the guest
# metaclass's `__hash__`/`__eq__`, so a `GenericAlias` subclass (every read forwarded to its
# origin) rode on a class that had passed, and `__eq__` read `enum.Enum._convert_`.
_EQUAL_METACLASS = (
    "import dataclasses, enum\nclass M(type):\n    def __eq__(cls, other):\n        return True\n"
    "    def __hash__(cls):\n        return 7\n"
    "C = dataclasses.make_dataclass('C', ['_convert_'])\n"
    "class K1(C, metaclass=M):\n    pass\nGA = type(list[int])\n"
    "class K2(C, GA, metaclass=M):\n    pass\ngot = []\n"
    "class Spy:\n    def __eq__(s, o):\n        got.append(o)\n        return True\n"
    "    def __hash__(s):\n        return 1\n"
    "G = dataclasses.make_dataclass('G', [('_convert_', object, dataclasses.field(default=Spy()))])\n"
    "a = K1(0)\nC.__eq__(a, a)\n"
    "s, o = GA.__new__(K2, enum.Enum, ()), GA.__new__(K2, G(), ())\n"
    "try:\n    C.__eq__(s, o)\nexcept TypeError:\n    pass\n"
    "'ESCAPED' if got else 'held'"
)


async def test_no_verdict_rides_on_a_metaclass_that_says_equal(sec_gateway: Gateway) -> None:
    out = await attempt(sec_gateway, _EQUAL_METACLASS)
    assert not reached(out), out
    assert f"type 'type' {NO_METACLASS}" in out["error"]["message"], out  # once: "held"


async def test_forward_ref_init_compiles_for_forward_refs_only(sec_gateway: Gateway) -> None:
    """Outside attack 51: `ForwardRef.__init__` called on a guest object compiled the
    guest's text and left the code object in the object's own `__dict__`."""
    code = (
        "import typing\nFR = type(typing.List['x'].__args__[0])\nclass G:\n    pass\ng = G()\n"
        "try:\n    FR.__init__(g, '1+1')\nexcept TypeError as e:\n    out = str(e)\n"
        "else:\n    out = 'ESCAPED ' + str(sorted(g.__dict__))\n"
        "[out, typing.List['int'] == typing.List[int] or 'ok']"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert "forward references only" in out["result"][0], out


async def test_global_enum_writes_exactly_the_names_it_checked(sec_gateway: Gateway) -> None:
    """Outside attack 53: a `str` subclass member name said it was no trusted name while
    `global_enum` was checked, then that it was `int` in the guest's globals, where
    `case int(g)` read `__match_args__ = ('__globals__',)` of a guest class."""
    code = (
        "import enum\nclass K(str):\n    calls = [0]\n    def __eq__(self, other):\n"
        "        self.calls[0] += 1\n        return self.calls[0] > 1\n"
        "    def __hash__(self):\n        return str.__hash__(self)\n"
        "class E(enum.Enum):\n    a = 1\nE._member_map_[K('int')] = 'ESCAPED'\n"
        "try:\n    enum.global_enum(E)\nexcept TypeError as e:\n    out = str(e)\n"
        "else:\n    out = repr(int)\nout"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert "may not be named" in out["result"], out


_EVIL_INT = (
    "class Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n"
    "class Evil(metaclass=Meta):\n    __match_args__ = ('__globals__',)\nint = Evil\n"
)


@pytest.mark.parametrize(
    "steps",
    [
        # outside attack 55: `int` rebound in one step, matched on in the next
        [
            _EVIL_INT + "1",
            "import json\nmatch json.dumps:\n    case int(g):\n        pass\n'ESCAPED' + str(g)",
        ],
        # outside attack 57: the match compiled first, in a function; `int` rebound later
        [
            "def f(x):\n    match x:\n        case int(g):\n            return g\n1",
            _EVIL_INT + "1",
            "import json\ng = f(json.dumps)\n'ESCAPED' if g is not None else 'held'",
        ],
        [
            "def f(x):\n    match x:\n        case int(g):\n            return g\n1",
            _EVIL_INT + "import json\ng = f(json.dumps)\n'ESCAPED' if g is not None else 'held'",
        ],
    ],
    ids=["rebound_then_matched", "matched_then_rebound", "rebound_and_called"],
)
async def test_a_class_pattern_on_a_builtin_means_the_builtin(
    sec_gateway: Gateway, steps: list[str]
) -> None:
    """Each snippet of a session is checked alone (the agent's steps run so): `case int(g)`
    must match the builtin `int` whatever a step bound `int` to, or `Evil.__match_args__ =
    ('__globals__',)` reads a function's real globals."""
    session = sec_gateway.executor.open_session()
    assert session is not None
    try:
        for step in steps[:-1]:
            done = (await sec_gateway.execute(step, session=session)).to_json()
            evil = step.startswith(_EVIL_INT)  # its metaclass cannot be made now
            assert NO_METACLASS in done["error"]["message"] if evil else done["ok"], done
        out = (await sec_gateway.execute(steps[-1], session=session)).to_json()
        assert not reached(out), out
        assert out["result"] == "held" or error_type(out) == "RUNTIME_ERROR", out
        matched = "match 3:\n    case int(n):\n        pass\nn"
        assert (await sec_gateway.execute(matched, session=session)).result == 3
    finally:
        session.close()


_PREPARED = (
    "import json\nclass Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n"
    "class Evil(metaclass=Meta):\n    __match_args__ = ('__globals__',)\n"
    "Holder = type('Holder', (), {'int': Evil})\n"
    "class NS(dict):\n    def __getitem__(self, k):\n"
    "        if k in ('_mcp' + '_builtins_', '_mcp' + '_getattr_'):\n"
    "            return Holder if k.endswith('builtins_') else (lambda o, n: 'ESCAPED hijacked')\n"
    "        return dict.__getitem__(self, k)\n"
    "class PM(type):\n    @classmethod\n    def __prepare__(mcls, name, bases, **kw):\n"
    "        return NS()\n"
)


@pytest.mark.parametrize(
    "body",
    [
        "    match json.dumps:\n        case int(g):\n            G = 'ESCAPED ' + str(g)\n",
        "    try:\n        G = json._default_encoder\n    except AttributeError:\n        G = 'held'\n",
    ],
    ids=["builtins_helper", "getattr_helper"],
)
async def test_a_class_namespace_cannot_answer_for_the_sandboxs_helpers(
    sec_gateway: Gateway, body: str
) -> None:
    """Outside attack 58: in a class body the rewrite's `_mcp_builtins_` / `_mcp_getattr_`
    were looked up in the namespace a metaclass `__prepare__` made first."""
    code = _PREPARED + "class C(metaclass=PM):\n" + body + "getattr(C, 'G', 'held')"
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert f"type 'type' {NO_METACLASS}" in out["error"]["message"], out  # once: "held"


async def test_the_sandboxs_own_names_cannot_be_bound(sec_gateway: Gateway) -> None:
    """The rewrite names `_mcp_getattr_`, `_mcp_target_`, `_mcp_builtins_`: a guest binding
    of one shadowed it for every private read after it."""
    for code in ("_mcp_getattr_ = 1", "def f(_mcp_target_):\n    pass", "import json as _mcp_x"):
        out = await attempt(sec_gateway, code)
        assert error_type(out) == "POLICY_VIOLATION", out


async def test_only_cpythons_builtins_are_the_guests(sec_gateway: Gateway) -> None:
    """Pyodide adds `___EvalCodeResultException` (a list its `eval_code` reads) to the
    builtins; the guest's are CPython's own names (outside attack 49)."""
    code = (
        "try:\n    ___EvalCodeResultException\n    out = 'present'\n"
        "except NameError:\n    out = 'absent'\nout"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == "absent", out


async def test_a_sessions_loop_policy_does_not_pick_the_next_steps_loop(
    sec_gateway: Gateway,
) -> None:
    """Outside attack 49: a session step that set asyncio's default policy left every later
    top-level `await` on a selector loop (whose self-pipe the sandbox refuses)."""
    session = sec_gateway.executor.open_session()
    assert session is not None
    try:
        first = "import asyncio\nasyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())\n1"
        assert (await sec_gateway.execute(first, session=session)).ok
        out = await sec_gateway.execute("await asyncio.sleep(0)\n2", session=session)
        if sec_gateway.settings.executor == "pyodide":
            assert out.result == 2, out.to_json()
        else:  # CPython 3.11's own loop, as any script's
            assert out.error is None or out.error.type != "EXECUTOR_ERROR", out.to_json()
    finally:
        session.close()


LOOP = table(
    (
        # Pyodide: the delay crossed into JavaScript as a BigInt, and the JsException the
        # arithmetic threw was a proxy of the JS error (`.constructor.constructor`: JS's
        # Function). Now the delay is a float, capped, and the run simply sleeps.
        "sleep_past_2_53",
        "import asyncio\ntry:\n    await asyncio.sleep(2**60)\nexcept Exception as e:\n"
        "    out = ('ESCAPED ' if hasattr(e, 'constructor') else 'plain ') + type(e).__name__",
    ),
    # Pyodide: a JS timer fires at once past its largest delay; a sleep no longer ends early
    ("sleep_past_the_largest_timer", "import asyncio\nawait asyncio.sleep(1e300)\n'ENDED'"),
)


@pytest.mark.parametrize("code", LOOP)
async def test_huge_sleeps_just_sleep(sec_gateway: Gateway, code: str) -> None:
    out = await attempt(sec_gateway, code, runaway=True)
    assert not reached(out), out
    assert error_type(out) == "TIMEOUT", out


async def test_the_loops_handles_are_plain(sec_gateway: Gateway) -> None:
    code = (
        "import asyncio\nloop = asyncio.get_event_loop()\nh = loop.call_later(2**60, print)\n"
        "h.cancel()\ntry:\n    loop.call_later(float('nan'), print)\n    nan = 'scheduled'\n"
        "except ValueError:\n    nan = 'refused'\n"
        "[h.cancelled(), hasattr(h, 'constructor'), nan]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"][:2] == [True, False], out


async def test_a_result_with_then_is_just_a_result(sec_gateway: Gateway) -> None:
    """Pyodide: `run_until_complete` resolved a JS Promise with the coroutine's result, and a
    result with a `then` method was given JS's `resolve`/`reject` (outside attack 47). Guest
    loops are plain Python now, on both executors."""
    code = (
        "import asyncio\ngot = []\nclass T:\n    def then(self, *args):\n        got.append(args)\n"
        "async def c():\n    return T()\nloop = asyncio.new_event_loop()\n"
        "result = loop.run_until_complete(c())\nloop.close()\n"
        "['ESCAPED' if got else 'held', type(result).__name__]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["held", "T"], out


async def test_async_code_meets_the_soft_time_limit(sec_gateway: Gateway) -> None:
    """Pyodide's loop ran top-level `await` through JavaScript, where the run's soft limit
    never landed: the runner was killed and the run's output lost (outside attack 47)."""
    code = "print('started')\nimport asyncio\nawait asyncio.sleep(30)"
    out = await attempt(sec_gateway, code, runaway=True)
    assert error_type(out) == "TIMEOUT", out
    assert "started" in out["stdout"], out


async def test_a_callback_raising_systemexit_is_the_runs_error(sec_gateway: Gateway) -> None:
    code = (
        "import asyncio\ndef cb():\n    raise SystemExit(3)\n"
        "asyncio.get_running_loop().call_soon(cb)\nawait asyncio.sleep(0.05)"
    )
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "RUNTIME_ERROR", out
    assert "SystemExit" in out["error"]["message"], out


def test_a_runners_javascript_makes_no_code_from_text() -> None:
    """The second wall behind the loop's: JavaScript a guest reached (attack 46 had JS's
    `Function` from an error's constructor) cannot compile text, under a runner's flags."""
    require_pyodide()
    from mcp_code_mode.sandbox.pyodide import v8_flags

    probe = (
        "const tries = [() => new Function('return 1')(), () => eval('1'),"
        " () => (async function () {}).constructor('return 1')];"
        "console.log(tries.map((t) => { try { t(); return 'ran'; } catch (e) { return e.name; } })"
        ".join(' '))"
    )
    deno = deno_binary()
    assert deno is not None
    done = subprocess.run(
        [deno, "eval", "--quiet", f"--v8-flags={v8_flags(256)}", probe],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"},
    )
    assert done.stdout.split() == ["EvalError"] * 3, done


async def test_an_async_generators_awaited_object_is_blocked_like_its_siblings(
    sec_gateway: Gateway,
) -> None:
    """`gi_yieldfrom` and `cr_await` were blocked, `ag_await` was not (outside attack 60)."""
    code = (
        "async def agen():\n    yield 1\ng = agen()\n"
        "try:\n    g.ag_await\nexcept Exception as e:\n    out = type(e).__name__\nelse:\n"
        "    out = 'read'\nout"
    )
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "POLICY_VIOLATION", out


async def test_an_object_posing_as_a_bound_method_is_not_the_guests(sec_gateway: Gateway) -> None:
    """Outside attack 62: a `super` subclass whose `__class__` said `MethodType` and whose
    `__func__` was a guest function passed as the guest's own object, and read
    `EnumType._convert_` (any module's globals) through the MRO `super` searches."""
    code = (
        "import enum\nclass K:\n    def m(self):\n        pass\nMT = type(K().m)\n"
        "def g():\n    pass\n"
        "S = type('S', (super,), {'__cl' + 'ass__': property(lambda s: MT),"
        " '__fu' + 'nc__': property(lambda s: g)})\n"
        "class M(enum.EnumType):\n    pass\nGE = type.__new__(M, 'GE', (), {})\n"
        "try:\n    getattr(S(M, GE), '_convert_')\nexcept AttributeError as e:\n    out = str(e)\n"
        "else:\n    out = 'ESCAPED'\n[out, isinstance(S(M, GE), MT)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    # once: "private attribute '_convert_'", the pose itself working; now the enum class
    # it read through cannot be made (no metaclass of the guest's)
    assert f"type 'EnumType' {NO_METACLASS}" in out["error"]["message"], out


async def test_a_bound_method_of_anything_but_a_guest_function_is_not_the_guests(
    sec_gateway: Gateway,
) -> None:
    """Outside attack 63: a real bound method reads on through its `__func__`; one made of
    a guest enum class counted as the guest's own and read `EnumType._convert_`."""
    code = (
        "import enum\nclass A:\n    def f(self):\n        pass\n    def _g(self):\n"
        "        return 'own'\nM = type(A().f)\nclass C(enum.Enum):\n    pass\n"
        "try:\n    getattr(M(C, 0), '_convert_')\nexcept AttributeError as e:\n    out = str(e)\n"
        "else:\n    out = 'ESCAPED'\n[out, A()._g()]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert "private attribute '_convert_'" in out["result"][0], out
    assert out["result"][1] == "own", out


async def test_module_views_are_of_modules_only(sec_gateway: Gateway) -> None:
    """Outside attack 63: `type(json).__new__` took a guest object named `textwrap`, and
    the run's own `import textwrap` then gave the guest's object."""
    code = (
        "import json\nV = type(json)\nclass Fake:\n    __name__ = 'textwrap'\n"
        "    def dedent(self, s):\n        return 'ESCAPED'\n"
        "try:\n    V.__new__(V, Fake(), frozenset({'os'}))\nexcept TypeError as e:\n"
        "    out = str(e)\nimport textwrap\n[out, textwrap.dedent('  x')]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["module views are made by the sandbox, of modules", "x"], out


async def test_a_name_that_answers_for_another_cannot_rewrite_tools(sec_gateway: Gateway) -> None:
    """Outside attack 65 (3.11): `typing`'s runtime protocol check passed a guest `str`
    subclass to `hasattr(tools, ...)`; its `__hash__`/`__eq__` made `tools.__getattr__`
    store another tool under a tool's name."""
    code = (
        "import typing\nH = ['pid']\nseen = {'n': 0}\nclass SB(str):\n"
        "    def __hash__(self):\n        return hash(H[0])\n"
        "    def __eq__(self, other):\n        ok = type(other) is str and other == H[0]\n"
        "        if ok and H[0] == 'pid':\n            seen['n'] += 1\n"
        "            if seen['n'] == 2:\n                H[0] = 'echo'\n        return ok\n"
        "    def __ne__(self, other):\n        return not self.__eq__(other)\n"
        "ns = {'__module__': '__main__', '__annotations__': {SB('zzzz'): int}}\n"
        "P = typing.runtime_checkable(type(typing.Protocol)('P', (typing.Protocol,), ns))\n"
        "before = repr(tools.t.echo)\nisinstance(tools.t, P)\n[before, repr(tools.t.echo)]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"][0] == out["result"][1], out
    assert "echo" in out["result"][1], out


@pytest.mark.parametrize("read", ["loop.sock_sendfile", "s.format", "s.format_map"])
async def test_string_annotations_read_no_blocked_name(sec_gateway: Gateway, read: str) -> None:
    """Outside attack 66: `get_type_hints` (under `singledispatch().register`) evaluated
    `"G[loop.sock_sendfile]"` with the real attribute reads; the guest's `__getitem__` got
    the blocked method, and on the local executor it copied a forged `done` into the host
    channel. Attack 67: `"G[s.format]"` gave the real `str.format`, whose fields walk any
    attribute (`{0.__globals__[os].environ}`)."""
    code = (
        "import functools, asyncio\ngot = []\nclass Grab:\n    def __getitem__(self, item):\n"
        "        got.append(item)\n        return int\nG = Grab()\ndef f(x):\n    return 1\n"
        f"f.__annotations__ = {{'x': 'G[{read}]'}}\nloop = asyncio.new_event_loop()\ns = ''\n"
        "try:\n    functools.singledispatch(len).register(f)\nexcept Exception as e:\n"
        "    out = str(e)\nelse:\n    out = 'ESCAPED'\n[out, len(got)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert "a blocked one" in out["result"][0] and out["result"][1] == 0, out


async def test_a_partialmethod_keeps_no_real_module(sec_gateway: Gateway) -> None:
    """Outside attack 68: `partialmethod.__get__` copied `len.__self__`, the real builtins
    module, onto the partial it handed the guest."""
    code = (
        "import functools\nclass C:\n    pm = functools.partialmethod(staticmethod(len))\n"
        "    def add(self, a, b):\n        return a + b\n"
        "    add2 = functools.partialmethod(add, 2)\nr = C().pm\n"
        "[[n for n in dir(r) if 'self' in n], r([1, 2]), C().add2(3)]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == [[], 2, 5], out


@pytest.mark.parametrize(
    "bases",
    [
        "type('M', (), {'__reduce_ex__': Q()}), enum.Enum",
        "type('M', (), {'__reduce_ex__': staticmethod(Q())}), enum.Enum",
        # outside attack 75: a staticmethod of a plain callable, re-initialised by a hook
        "type('M', (), {'__reduce_ex__': staticmethod(len)}), enum.Enum",
        "enum.Enum, metaclass=type('MM', (enum.EnumType,), {'__getattribute__': lambda c, n: Q()})",
        # outside attack 70: library objects whose reads or `==` reach the guest's code
        "enum.Enum, metaclass=type('EM', (enum.EnumType,), {'__reduce_ex__': property(Q)})",
        "type('M', (), {'__reduce_ex__': classmethod(property(lambda c: Q()))}), enum.Enum",
        "type('M', (), {'__reduce_ex__': collections.UserString('x')}), enum.Enum",
        # outside attack 71: a guest class may say it is a library module's
        "type('M', (), {'__reduce_ex__': Q(), '__module__': 'json'}), enum.Enum",
        # outside attack 74: a metaclass's mro() names a class that is not among the bases
        "enum.Enum, metaclass=type('EM', (enum.EnumType,), {'mro': lambda c: (c, "
        "type('Evil', (), {'__reduce_ex__': Q()}), enum.Enum, object)})",
        # outside attack 77: a metaclass choosing the data type enum compares with
        "metaclass=type('M', (enum.EnumType,), {'_get_mixins_': staticmethod(lambda c, b: "
        "(type('C', (), {'__reduce_ex__': Q()}), enum.Enum))})",
    ],
)
async def test_enum_hands_no_reducer_to_a_guest_eq(sec_gateway: Gateway, bases: str) -> None:
    """Outside attack 69: making an enum class, `EnumType.__new__` asks `found in
    (data_type's, object's)` of a base's `__reduce_ex__`, handing `object.__reduce_ex__` to
    a guest `__eq__`; called from a library frame, that reducer gave the real `getattr`."""
    code = (
        "import enum, collections\ngot = []\nclass Q:\n    def __eq__(self, other):\n"
        "        got.append(repr(other))\n        return False\n    def __hash__(self):\n"
        f"        return 0\ntry:\n    class E({bases}):\n        A = 1\n"
        "except TypeError as e:\n    out = str(e)\nelse:\n    out = 'ESCAPED'\n"
        "class S(str, enum.Enum):\n    __str__ = str.__str__\n    B = 'b'\n"
        "[out, [g for g in got if 'reduce' in g], str(S.B)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    refused = out["result"][0]
    assert "in the sandbox" in refused or NO_METACLASS in refused, out
    assert out["result"][1:] == [[], "b"], out


async def test_copy_calls_no_c_callable_the_guest_chose(sec_gateway: Gateway) -> None:
    """Outside attack 69: `copy.copy` called a class's `__copy__` (a `functools.partial` of a
    reducer) from its own frame, whose builtins are the real ones; `deepcopy` an instance's
    `__deepcopy__` likewise. Hooks are functions and methods; library objects copy as ever."""
    code = (
        "import copy, functools, collections\nout = []\n"
        "X = type('X', (int,), {'__copy__': functools.partial(max, 5)})\nclass Z:\n    pass\n"
        "z = Z()\nz.__deepcopy__ = functools.partial(max, 5)\n"
        "for f, x in ((copy.copy, X(2)), (copy.deepcopy, z)):\n    try:\n        f(x)\n"
        "    except TypeError as e:\n        out.append(str(e))\n    else:\n"
        "        out.append('ESCAPED')\nclass Y:\n    def __copy__(self):\n        return 'c'\n"
        "    def __deepcopy__(self, memo):\n        return 'd'\n"
        "out += [copy.copy(Y()), copy.deepcopy([Y()]), list(copy.copy(collections.deque([1])))]\n"
        "out += [dict(copy.deepcopy(collections.OrderedDict(a=[1]))), copy.getattr is getattr]\nout"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    refused, rest = out["result"][:2], out["result"][2:]
    assert all("must be a function or a method" in r for r in refused), out
    assert rest == ["c", ["d"], [1], {"a": [1]}, True], out


async def test_the_tools_views_cannot_be_subclassed(sec_gateway: Gateway) -> None:
    """Outside attack 69: a guest subclass of `type(tools)` whose `__dict__` was a property
    made `Tools.__getattr__` build a `_Server` from a mapping that said every name was a
    tool, and the guards let every read of it through."""
    code = (
        "out = []\nfor base in (type(tools), type(tools.t)):\n    try:\n"
        "        type('T', (base,), {'__dict__': property(lambda s: {})})\n"
        "    except TypeError as e:\n        out.append(str(e))\n    else:\n"
        "        out.append('ESCAPED')\nout + [tools.t.echo(text='x')]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [
        "type 'Tools' is not an acceptable base type",
        "type '_Server' is not an acceptable base type",
        "x",
    ], out


async def test_library_functions_take_no_marks(sec_gateway: Gateway) -> None:
    """Outside attack 69 (low): `update_wrapper` wrote `__wrapped__` onto `json.dumps`, and
    `typing.final`/`no_type_check` their flags onto library functions, for the whole run.
    The guest's own functions still take them."""
    code = (
        "import functools, json, typing\ntry:\n    functools.update_wrapper(json.dumps, len)\n"
        "except AttributeError as e:\n    out = [str(e)]\nelse:\n    out = ['ESCAPED']\n"
        "typing.final(json.dumps)\ntyping.no_type_check(json.loads)\n"
        "def f():\n    pass\n"
        "out += [hasattr(json.dumps, '__final__'), hasattr(json.loads, '__no_type_check__')]\n"
        "out + [typing.final(f).__final__, functools.wraps(len)(f).__name__]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert "did not define" in out["result"][0], out
    assert out["result"][1:] == [False, False, True, "len"], out


async def test_decorator_factories_mark_only_the_guests_objects(sec_gateway: Gateway) -> None:
    """Outside attack 93 (low): `typing.dataclass_transform(...)` wrote its guest-chosen
    arguments onto a library function, and `typing.override` (3.12+, Pyodide) its flag."""
    code = (
        "import json, typing\ntyping.dataclass_transform(kw_only_default=True)(json.dumps)\n"
        "getattr(typing, 'override', lambda f: f)(json.loads)\n"
        "@typing.dataclass_transform(kw_only_default=True)\nclass Base:\n    pass\n"
        "[hasattr(json.dumps, '__dataclass_transform__'), hasattr(json.loads, '__override__'),\n"
        " Base.__dataclass_transform__['kw_only_default']]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [False, False, True], out


async def test_a_typing_alias_copies_only_under_typings_public_names(sec_gateway: Gateway) -> None:
    """Outside attack 71: `_GenericAlias.__reduce__` looks the alias's `name=` up in typing's
    globals; `name="__builtins__"` made `copy.copy` hand out the real `getattr` through
    `operator.getitem`. Refused by the alias, and (a second wall) copies may not make a
    module's globals, the builtins or a builtin the guest's are without."""
    code = (
        "import typing, copy, collections\nout = []\n"
        "for cls in (type(typing.List[int]), type(typing.Literal[1])):\n"
        "    try:\n        copy.copy(cls(list, ('getattr',), name='__builtins__'))\n"
        "    except TypeError as e:\n        out.append(str(e))\n    else:\n"
        "        out.append('ESCAPED')\n"
        "out + [repr(copy.copy(typing.List[int])), repr(copy.deepcopy(typing.Dict[str, int]))]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"][:2] == ["copying a typing alias named '__builtins__' is not supported"] * 2
    assert out["result"][2:] == ["typing.List[int]", "typing.Dict[str, int]"], out


async def test_no_copy_of_an_object_that_names_its_own_class(sec_gateway: Gateway) -> None:
    """Outside attack 71: `UserDict.__copy__` makes the copy from `self.__class__` and writes
    its `__dict__` natively; a `__class__` property named a class whose `__new__` returned
    `tools`, whose `__dict__` was then written."""
    code = (
        "import collections, copy\nclass G:\n    def __new__(cls):\n        return tools\n"
        "U = type('U', (collections.UserDict,), {'__class__': property(lambda s: G)})\n"
        "u = U()\nu.planted = 'ESCAPED'\ntry:\n    copy.copy(u)\nexcept TypeError as e:\n"
        "    out = str(e)\n[out, hasattr(tools, 'planted'), dict(copy.copy(collections.UserDict(a=1)))]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [
        "copy: the object's class names a __class__ of its own",
        False,
        {"a": 1},
    ]


async def test_typing_internals_take_no_subclass_from_keywords(sec_gateway: Gateway) -> None:
    """Outside attack 72: `**{"_root": True}` (the policy refuses the keyword written out)
    let a guest class subclass typing's aliases, say `__module__ = "typing"` and give its
    reducer one `_name` when checked and another when used."""
    code = (
        "import typing\nA = type(typing.List[int])\nkw = {'_r' + 'oot': True}\ntry:\n"
        "    type(A)('X', (A,), {'__module__': 'typing'}, **kw)\nexcept TypeError as e:\n"
        "    out = str(e)\nelse:\n    out = 'ESCAPED'\nT = typing.TypeVar('T')\n"
        "class Box(typing.Generic[T]):\n    pass\n[out, repr(Box[int])]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [
        "type '_GenericAlias' is not an acceptable base type",
        "__main__.Box[int]",
    ], out


async def test_a_copy_is_not_made_from_a_modules_globals(sec_gateway: Gateway) -> None:
    """Outside attack 72: `deepcopy` copied a reducer's arguments into its memo, which guest
    code can read, before the object made from them was checked; typing's real builtins
    were among them. Arguments and state are checked first (a dict holding `__builtins__`
    is taken for a module's globals)."""
    code = (
        "import copy\nclass R:\n    def __reduce_ex__(self, p):\n"
        "        return (dict, ({'__builtins__': 1},))\nout = []\n"
        "for f in (copy.copy, copy.deepcopy):\n    try:\n        f(R())\n"
        "    except TypeError as e:\n        out.append(str(e))\n"
        "out + [copy.deepcopy({'a': [1]})]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == ["copying from a module's globals is not allowed"] * 2 + [{"a": [1]}]


@pytest.mark.parametrize(("user", "data"), [("UserDict", "{'a': 1}"), ("UserList", "['a']")])
async def test_a_user_collection_copies_to_its_own_class_only(
    sec_gateway: Gateway, user: str, data: str
) -> None:
    """Outside attack 73: `UserDict.__copy__` (and `UserList`'s), called unbound or through a
    `__getattribute__` that answered `__class__`, made the copy with a `__new__` that
    returned `tools` and wrote the tools view's `__dict__`. The copy is of the real class."""
    code = (
        f"import collections, copy\nbase = collections.{user}\nclass G:\n"
        "    def __new__(cls):\n        return tools\n"
        "U = type('U', (base,), {'__class__': property(lambda s: G)})\nu = U()\n"
        "u.planted = 'ESCAPED'\nclass V(base):\n    def __new__(cls, *a):\n        return tools\n"
        "out = []\nfor f, x in ((base.__copy__, u), (copy.copy, object.__new__(V))):\n"
        "    try:\n        out.append(type(f(x)).__name__)\n"
        "    except (TypeError, AttributeError) as e:\n        out.append(str(e))\n"
        f"W = type('W', (base,), {{}})\nw = W({data})\nw.tag = 't'\nc = copy.copy(w)\n"
        "out + [hasattr(tools, 'planted'), type(c).__name__, c.tag, list(c), c.data is w.data]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"][:2] == ["U", "copy: V.__new__() made another kind of object"], out
    assert out["result"][2:] == [False, "W", "t", ["a"], False], out


async def test_only_typings_own_forward_references_name_a_module(sec_gateway: Gateway) -> None:
    """Outside attack 74: a `ForwardRef` subclass (a first base whose `__init_subclass__`
    says nothing passed typing's wall) answered `__forward_module__` None to the guard and
    "json" to `_evaluate`, and `"getattr"` was evaluated in json's real globals. No such
    subclass can be made now (`frozen_classes`), and a forward reference naming a module
    is refused."""
    code = (
        "import typing, functools\nFR = type(typing.List['x'].__args__[0])\nclass Quiet:\n"
        "    def __init_subclass__(cls, **kw):\n        pass\nout = []\ntry:\n"
        "    type('S', (Quiet, FR), {})\nexcept TypeError as e:\n    out.append(str(e))\n"
        "r = FR('getattr', module='json')\ndef h(x: r):\n    pass\ntry:\n"
        "    functools.singledispatch(len).register(h)\nexcept Exception as e:\n"
        "    out.append(str(e))\nelse:\n    out.append('ESCAPED')\n"
        "def g(x: 'int'):\n    pass\nsd = functools.singledispatch(len)\nsd.register(g)\n"
        "out + [sd.dispatch(int) is g]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [
        "type 'ForwardRef' is not an acceptable base type",
        "a forward reference evaluated in another module is not allowed",
        True,
    ], out


async def test_an_enum_is_made_from_the_bases_its_guard_saw(sec_gateway: Gateway) -> None:
    """Outside attack 76: a `tuple` subclass whose `__iter__` showed the enum guard (and
    enum's Python code) `(Enum,)` while `type.__new__` built the class from its real items,
    a base whose `__reduce_ex__` was a guest object among them."""
    code = (
        "import enum\ngot = []\nclass Q:\n    def __eq__(self, other):\n"
        "        got.append(repr(other))\n        return False\n    def __hash__(self):\n"
        "        return 0\nclass T(tuple):\n    def __iter__(self):\n"
        "        return iter((enum.Enum,))\nBase = type('Base', (), {'__reduce_ex__': Q()})\n"
        "d = enum.EnumType.__prepare__('E', (enum.Enum,))\nd['A'] = 1\ntry:\n"
        "    enum.EnumType('E', T((Base, enum.Enum)), d)\nexcept TypeError as e:\n"
        "    out = str(e)\nelse:\n    out = 'ESCAPED'\n[out, got]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["an enum's bases must be a tuple", []], out


async def test_an_enum_takes_no_private_keyword(sec_gateway: Gateway) -> None:
    """Outside attack 77: `_simple=True` made an enum base without `Enum` in its MRO, whose
    `_member_type_` then chose the data type enum compared with."""
    code = (
        "import enum\ntry:\n    enum.EnumType('Y', (), {'_member_names_': []}, **{'_simple': True})\n"
        "except TypeError as e:\n    out = str(e)\nelse:\n    out = 'ESCAPED'\n"
        "F = enum.Flag('F', 'a b', boundary=enum.STRICT)\n[out, F.a.value | F.b.value]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == ["an enum takes no private keyword in the sandbox", 3], out


async def test_an_enum_base_has_enum_in_its_mro(sec_gateway: Gateway) -> None:
    """Outside attack 78: `type.__new__(EnumType, ...)` made an enum base without `Enum` in
    its MRO; a hook enum runs after its guard (an `_ignore_` key's `__hash__`) changed the
    data type a plain base named, and enum compared `object.__reduce_ex__`, the new class's
    own there, with a guest object."""
    code = (
        "import enum\ngot = []\nclass Q:\n    def __eq__(self, other):\n"
        "        got.append(repr(other))\n        return False\n    def __hash__(self):\n"
        "        return 0\nC = type('C', (), {'__reduce' + '_ex__': Q()})\nclass P:\n"
        "    _member_type_ = object\nseen = []\nclass K:\n    def __hash__(self):\n"
        "        seen.append(1)\n        if len(seen) >= 2:\n            P._member_type_ = C\n"
        "        return 7\n    def __eq__(self, other):\n"
        "        return False\nY = type.__new__(enum.EnumType, 'Y', (P,), "
        "{'_member_names_': [], '_member_map_': {}, '_value_repr_': None})\ntry:\n"
        "    class E(Y):\n        _ignore_ = [K()]\nexcept TypeError as e:\n    out = str(e)\n"
        "else:\n    out = 'ESCAPED'\n[out, got]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert "without Enum among its bases" in out["result"][0] and out["result"][1] == [], out


async def test_library_methods_read_off_a_class_write_only_guest_objects(
    sec_gateway: Gateway,
) -> None:
    """Outside attack 94: a library's `__init__` read off its class wrote onto a library
    function (`typing.NewType.__init__(json.dumps, ...)`), steered a typing alias
    (`ParamSpecArgs.__init__(typing.AbstractSet, json.loads)`) and rewrote a namespace UUID;
    `functools.wraps` rewrote the guest API's functions. The guest's own objects still take
    a library's `__init__`, as a subclass calls it."""
    code = (
        "import collections, functools, json, typing, uuid\nout = []\n"
        "for write in (lambda: typing.NewType.__init__(json.dumps, 'evil', int),\n"
        "              lambda: typing.ParamSpecArgs.__init__(typing.AbstractSet, json.loads),\n"
        "              lambda: uuid.UUID.__init__(uuid.NAMESPACE_DNS, 'a' * 32),\n"
        "              lambda: functools.wraps(len)(call_tool)):\n"
        "    try:\n        write()\n        out.append('WROTE')\n"
        "    except (TypeError, AttributeError) as e:\n        out.append(str(e))\n"
        "class D(collections.UserDict):\n    def __init__(self, *a):\n"
        "        collections.UserDict.__init__(self, *a)\n"
        "out + [json.dumps.__name__, str(uuid.NAMESPACE_DNS), call_tool.__name__, dict(D({'a': 1}))]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    refused = out["result"][:4]
    # (ParamSpecArgs is written in C from 3.12, and its `__init__` takes no alias there)
    assert "WROTE" not in refused, out
    assert all("may not be applied to" in refused[i] for i in (0, 2)), out
    assert refused[3] == "setting attributes of a function your code did not define is not allowed"
    assert out["result"][4:] == [
        "dumps",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
        "call_tool",
        {"a": 1},
    ], out


async def test_no_marks_on_builtins_or_library_functions(sec_gateway: Gateway) -> None:
    """Outside attack 94 (low): `update_wrapper` on a builtin function wrote its
    `__module__` before failing, and `typing.abstractmethod` (abc's) flagged `json.dumps`."""
    code = (
        "import functools, typing, json\nout = []\ntry:\n"
        "    functools.update_wrapper(functools.cmp_to_key, len)\n    out.append('WROTE')\n"
        "except AttributeError as e:\n    out.append(str(e))\ntyping.abstractmethod(json.dumps)\n"
        "class A:\n    @typing.abstractmethod\n    def f(self): ...\n"
        "out + [functools.cmp_to_key.__module__, hasattr(json.dumps, '__isabstractmethod__'),\n"
        "       A.f.__isabstractmethod__]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [
        "setting attributes of a builtin function is not allowed",
        "_functools",
        False,
        True,
    ], out


async def test_writer_methods_reached_any_way_write_only_guest_objects(
    sec_gateway: Gateway,
) -> None:
    """Outside attack 95: the check of attack 94 was passed with `self=` by keyword, through
    `super(G, G)`, and by a method bound to a library instance (`NAMESPACE_DNS.__init__`,
    `typing.List.__init__`); `asyncio.timeouts.final` was typing's own `final`; guest code
    added reducers to copy's dispatch table. A guest subclass of a class that handles its
    own writes (UUID) still calls the base `__init__`, and one read is one object."""
    code = (
        "import asyncio, copy, json, string, typing, uuid\nout = []\n"
        "class G(typing.NewType):\n    pass\n"
        "class R(uuid.UUID):\n    def __init__(self, h):\n        uuid.UUID.__init__(self, h)\n"
        "for write in (lambda: typing.NewType.__init__(self=json.dumps, name='e', tp=int),\n"
        "              lambda: super(G, G).__init__(json.dumps, 'e', int),\n"
        "              lambda: uuid.NAMESPACE_DNS.__init__('1' * 32),\n"
        "              lambda: typing.List.__init__(json.loads, 1),\n"
        "              lambda: copy.dispatch_table.update({uuid.UUID: len})):\n"
        "    try:\n        write()\n        out.append('WROTE')\n"
        "    except (TypeError, AttributeError) as e:\n        out.append(type(e).__name__)\n"
        "asyncio.timeouts.final(json.dumps)\n"
        "out + [json.dumps.__qualname__, str(uuid.NAMESPACE_DNS)[:8], hasattr(json.dumps, "
        "'__final__'), str(R('2' * 32))[:8], string.Template.__init__ is string.Template.__init__]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [
        "TypeError",
        "TypeError",
        "AttributeError",
        "AttributeError",
        "AttributeError",
        "dumps",
        "6ba7b810",
        False,
        "22222222",
        True,
    ], out


async def test_copy_makes_new_library_objects_and_writes_no_existing_one(
    sec_gateway: Gateway,
) -> None:
    """`copy` of a `uuid.UUID` (whose class handles its own writes) works as in Python: the
    object `copyreg.__newobj__` just made is the copy's own. A reducer handing back an
    existing library object, or one its own callable made, is still refused."""
    code = (
        "import copy, uuid\nout = []\n"
        "u = uuid.UUID('1' * 32)\n"
        "class R(uuid.UUID):\n    pass\n"
        "out += [copy.copy(u) == u, copy.deepcopy({'a': [u]})['a'][0] == u]\n"
        "out += [str(copy.deepcopy(R('2' * 32)))[:8], type(copy.copy(R('3' * 32))).__name__]\n"
        "class Old:\n    def __reduce_ex__(self, p):\n"
        "        return (lambda: uuid.NAMESPACE_DNS, (), {'int': 5})\n"
        "class New:\n    def __reduce_ex__(self, p):\n"
        "        return (lambda: uuid.UUID('4' * 32), (), {'int': 5})\n"
        "for x in (Old(), New()):\n    try:\n        copy.copy(x)\n        out.append('COPIED')\n"
        "    except AttributeError as e:\n        out.append('refused')\n"
        "out + [str(uuid.NAMESPACE_DNS)[:8]]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [True, True, "22222222", "R", "refused", "refused", "6ba7b810"], out


async def test_dataclass_takes_classes_only(sec_gateway: Gateway) -> None:
    """`dataclasses.dataclass` set `__dataclass_params__` on whatever it was given before it
    failed on a non-class: `dataclass(json.dumps)` marked a library function."""
    code = (
        "import dataclasses, json\nout = []\n"
        "for target in (json.dumps, 5, print):\n    try:\n        dataclasses.dataclass(target)\n"
        "    except TypeError as e:\n        out.append(str(e)[:22])\n"
        "@dataclasses.dataclass(frozen=True)\nclass P:\n    x: int = 1\n"
        "out + [hasattr(json.dumps, '__dataclass_params__'), repr(P())]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["dataclass() takes a cl"] * 3 + [False, "P(x=1)"], out


async def test_writer_methods_read_by_any_name_or_route(sec_gateway: Gateway) -> None:
    """Outside attack 96: a library's writer method came out raw when its name was a str
    subclass, when a generic alias forwarded it from its origin, through a subclass of
    `super`, and `deepcopy` of a bound one rebinds it to whatever the memo says."""
    code = (
        "import copy, json, typing, uuid\nout = []\n"
        "class S(str):\n    pass\n"
        "class GN(typing.NewType):\n    pass\n"
        "class MySuper(super):\n    pass\n"
        "class GU(uuid.UUID):\n    pass\n"
        "g = GU(int=5)\nGA = type(list[int])\n"
        "for write in (lambda: getattr(typing.NewType, S('__init__'))(json.dumps, 'e', int),\n"
        "              lambda: GA(typing.NewType, (int,)).__init__(call_tool, 'e', int),\n"
        "              lambda: MySuper(GN, GN).__init__(json.loads, 'e', int),\n"
        "              lambda: getattr(uuid.UUID, S('__init__'))(uuid.NAMESPACE_DNS, int=7),\n"
        "              lambda: copy.deepcopy(g.__init__, {id(g): uuid.NAMESPACE_OID})(int=7)):\n"
        "    try:\n        write()\n        out.append('WROTE')\n"
        "    except (TypeError, AttributeError) as e:\n        out.append(type(e).__name__)\n"
        "out + [json.dumps.__name__, call_tool.__name__, json.loads.__name__,\n"
        "       str(uuid.NAMESPACE_DNS)[:8], str(uuid.NAMESPACE_OID)[:8], GN('x', int).__name__]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["TypeError"] * 5 + [
        "dumps",
        "call_tool",
        "loads",
        "6ba7b810",
        "6ba7b812",
        "x",
    ], out


async def test_copy_checks_what_its_memo_hands_on(sec_gateway: Gateway) -> None:
    """Outside attack 97: `deepcopy` copies a reducer's arguments and state through its
    memo after the first check, and guest code fills the memo (passed in, or from a
    `__deepcopy__` on the way): private fields reached an `enum.property` (its `__get__`
    then read `json.dumps.__globals__` on 3.13), a class whose `__new__` returned
    `NAMESPACE_DNS` had it rewritten. State onto a library function was written too."""
    code = (
        "import collections.abc, copy, enum, json, uuid\nout = []\n"
        "checked = {'name': 'x'}\n"
        "evil = {'name': '__globals__', '_attr_type': 'attr', '_cls_type': json.dumps}\n"
        "class P:\n    def __reduce_ex__(self, p):\n        return (enum.property, (), checked)\n"
        "class Fill:\n    def __deepcopy__(self, memo):\n"
        "        memo[id(checked)] = evil\n        return 1\n"
        "class G:\n    def __new__(cls, *a):\n        return uuid.NAMESPACE_DNS\n"
        "class Memo(dict):\n    pass\n"
        "class F:\n    def __reduce_ex__(self, p):\n"
        "        return (lambda: call_tool, (), {'__wrapped__': print, 'tag': 1})\n"
        "for f in (lambda: copy.deepcopy(P(), {id(checked): evil}),\n"
        "          lambda: copy.deepcopy([Fill(), P()]),\n"
        "          lambda: copy.deepcopy(uuid.NAMESPACE_DNS, {id(uuid.UUID): G}),\n"
        "          lambda: copy.deepcopy([1], Memo()),\n"
        "          lambda: copy.copy(F()), lambda: copy.deepcopy(F())):\n"
        "    try:\n        f()\n        out.append('COPIED')\n"
        "    except (TypeError, AttributeError) as e:\n        out.append(type(e).__name__)\n"
        "am = getattr(collections.abc, 'abstractmethod', None)\n"
        "if am is not None:\n    try:\n        am(json.dumps)\n    except TypeError:\n        pass\n"
        "out + [str(uuid.NAMESPACE_DNS)[:8], hasattr(call_tool, 'tag'),\n"
        "       hasattr(json.dumps, '__isabstractmethod__'), str(copy.deepcopy([uuid.UUID(int=1)])[0])]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    refused = ["AttributeError", "AttributeError", "AttributeError", "TypeError"]
    assert out["result"] == [
        *refused,
        "AttributeError",
        "AttributeError",
        "6ba7b810",
        False,
        False,
        "00000000-0000-0000-0000-000000000001",
    ], out


async def test_library_annotations_are_read_only(sec_gateway: Gateway) -> None:
    """A library's annotations (`json.dumps.__annotations__`, a library class's, which
    reading creates on 3.11) read as a read-only view; the guest's own stay its dicts."""
    code = (
        "import dataclasses, json, uuid\nout = []\n"
        "for a in (json.dumps.__annotations__, getattr(uuid.UUID, '__annotations__')):\n"
        "    try:\n        a['x'] = int\n        out.append('WROTE')\n"
        "    except TypeError:\n        out.append('read-only')\n"
        "@dataclasses.dataclass\nclass P:\n    x: int = 1\n"
        "def g(a: int) -> str:\n    return ''\n"
        "P.__annotations__['y'] = str\ng.__annotations__['b'] = int\n"
        "out + [sorted(P.__annotations__), sorted(g.__annotations__), "
        "len(json.dumps.__annotations__)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["read-only", "read-only", ["x", "y"], ["a", "b", "return"], 0], out


async def test_c_writers_and_forwarding_copies_write_no_library_object(
    sec_gateway: Gateway,
) -> None:
    """Outside attack 98: a slot's C `__set__`/`__delete__` wrote `NAMESPACE_DNS` past
    UUID's `__setattr__`; a library class's property took a new getter through its C
    `__init__`; `copy.copy` wrote a snapshot of a state the reducer's callable had
    cleared after the check; and copy wrote through objects that read their attributes off
    another (a generic alias of `json.dumps`, `super(type(tools), tools)`)."""
    code = (
        "import copy, json, re, uuid\nout = []\n"
        "state = {'_value_': 999}\n"
        "def clear():\n    state.clear()\n    return re.I\n"
        "class Clear:\n    def __reduce_ex__(self, p):\n        return (clear, (), state)\n"
        "GA = type(list[int])\n"
        "class Alias:\n    def __reduce_ex__(self, p):\n"
        "        return (GA, (json.dumps, ()), {'pwned': 1})\n"
        "class Super:\n    def __reduce_ex__(self, p):\n"
        "        return (super, (type(tools), tools), {'pwned': 1})\n"
        "for write in (lambda: uuid.UUID.int.__set__(uuid.NAMESPACE_DNS, 0x1234),\n"
        "              lambda: type(uuid.UUID.int).__set__(uuid.UUID.int, uuid.NAMESPACE_DNS, 1),\n"
        "              lambda: uuid.UUID.is_safe.__delete__(uuid.NAMESPACE_DNS),\n"
        "              lambda: uuid.UUID.bytes.__init__(lambda self: b'0' * 16),\n"
        "              lambda: copy.copy(Clear()), lambda: copy.copy(Alias()),\n"
        "              lambda: copy.deepcopy(Alias()), lambda: copy.copy(Super())):\n"
        "    try:\n        write()\n        out.append('WROTE')\n"
        "    except (TypeError, AttributeError) as e:\n        out.append(type(e).__name__)\n"
        "class D(dict):\n    def __init__(self, *a):\n        dict.__init__(self, *a)\n"
        "    def __setitem__(self, k, v):\n        dict.__setitem__(self, k, v * 2)\n"
        "d = D({'a': 1})\nd['b'] = 2\n"
        "out + [str(uuid.NAMESPACE_DNS)[:8], uuid.NAMESPACE_DNS.bytes[:1].hex(), re.I.value,\n"
        "       hasattr(json.dumps, 'pwned'), dict(d), dict.__init__ is dict.__init__]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["TypeError"] * 4 + ["AttributeError"] * 4 + [
        "6ba7b810",
        "6b",
        2,
        False,
        {"a": 1, "b": 4},
        True,
    ], out


async def test_library_init_and_inherited_annotations(sec_gateway: Gateway) -> None:
    """Outside attack 99: a library's `__init__` on a library object set its private
    state (`typing.Union.__init__(g)` made `Union[...]` call `g`; the running loop took a
    guest selector); a guest subclass's instance handed out the annotations dict its
    library base holds; `functools.wraps` of a library function must still work."""
    code = (
        "import asyncio, functools, json, typing\nout = []\n"
        "def g(self, params):\n    return 'PWNED'\n"
        "for write in (lambda: typing.Union.__init__(g), lambda: typing.Optional.__init__(g),\n"
        "              lambda: asyncio.log.logger.__init__('pwned', 50)):\n"
        "    try:\n        write()\n        out.append('WROTE')\n"
        "    except AttributeError:\n        out.append('refused')\n"
        "async def reinit():\n    try:\n        asyncio.get_running_loop().__init__(None)\n"
        "        return 'WROTE'\n    except AttributeError:\n        return 'refused'\n"
        "out.append(await reinit())\n"
        "json.JSONEncoder.__annotations__\n"
        "class G(json.JSONEncoder):\n    pass\n"
        "try:\n    G().__annotations__['x'] = int\n    out.append('WROTE')\n"
        "except TypeError:\n    out.append('read-only')\n"
        "@functools.wraps(json.dumps)\ndef mine(*a, **k):\n    return json.dumps(*a, **k)\n"
        "mine.__annotations__['extra'] = 1\n"
        "out + [str(typing.Union[int, str]), asyncio.log.logger.name, mine.__name__,\n"
        "       len(json.JSONEncoder.__annotations__), len(json.dumps.__annotations__)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["refused"] * 4 + ["read-only"] + [
        "typing.Union[int, str]",
        "asyncio",
        "dumps",
        0,
        0,
    ], out


async def test_reinit_of_own_library_objects_and_no_staticmethod_subclass(
    sec_gateway: Gateway,
) -> None:
    """Outside attack 100: after attack 99's rule, re-initialising a library object the
    guest made (`enc.__init__(indent=2)`) was refused; it works as in Python, while the
    library's own (`typing.Union`, asyncio's logger) stay refused. A guest subclass of
    `staticmethod`/`classmethod` handed out the annotations dict of `json.dumps` and
    `call_tool` (the decorator copies it, as it is, into its instance `__dict__`)."""
    code = (
        "import collections, json, random, string, typing, asyncio\nout = []\n"
        "enc = json.JSONEncoder()\nenc.__init__(indent=2)\n"
        "r = random.Random()\nr.__init__(5)\n"
        "t = string.Template('x')\nt.__init__('y')\n"
        "u = collections.UserDict(a=1)\nu.__init__(b=2)\n"
        "out += [enc.indent, r.random() == random.Random(5).random(), t.template, dict(u)]\n"
        "def g(self, p):\n    return 'PWNED'\n"
        "for f in (lambda: typing.Union.__init__(g), lambda: asyncio.log.logger.__init__('x')):\n"
        "    try:\n        f()\n        out.append('WROTE')\n"
        "    except AttributeError:\n        out.append('refused')\n"
        "for base in (staticmethod, classmethod):\n"
        "    try:\n        type('S', (base,), {})\n        out.append('SUBCLASSED')\n"
        "    except TypeError:\n        out.append('sealed')\n"
        "out + [str(typing.Union[int, str]), len(json.dumps.__annotations__)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [
        2,
        True,
        "y",
        {"b": 2},
        "refused",
        "refused",
        "sealed",
        "sealed",
        "typing.Union[int, str]",
        0,
    ], out


async def test_read_only_views_give_up_no_mapping(sec_gateway: Gateway) -> None:
    """Outside attack 101: a `MappingProxyType` compares and `|`s through its mapping, so a
    guest `dict` subclass's reflected `__eq__`/`__ror__` got the mapping itself: copy's
    dispatch table (a reducer for every later `UUID` copy), a library's annotations, an
    enum's member map, dataclasses' shared empty metadata, a compiled pattern's group
    names. The views hand out copies; a deep copy of the running loop is refused before
    it walks the loop's private state; `typing.overload` records the guest's functions only."""
    code = (
        "import asyncio, collections.abc, copy, dataclasses, json, string, uuid\ngot = []\n"
        "class D(dict):\n"
        "    def __eq__(self, other):\n        got.append(other)\n        return False\n"
        "    def __ror__(self, other):\n        got.append(other)\n        return {}\n"
        "    __hash__ = None\n"
        "views = [copy.dispatch_table, json.dumps.__annotations__, uuid.SafeUUID.__members__,\n"
        "         dataclasses.field().metadata, string.Template.pattern.groupindex,\n"
        "         {}.keys().mapping]\n"
        "for v in views:\n    v == D()\n    v | D()\n"
        "for g in got:\n    g['named'] = g['safe'] = g['pwned'] = 99\n"
        "    g[uuid.UUID] = lambda u: (str, ('PWNED',))\n"
        "memo = {}\n"
        "async def walk():\n    try:\n        copy.deepcopy(asyncio.get_running_loop(), memo)\n"
        "        return 'COPIED'\n    except AttributeError:\n        return 'refused'\n"
        "import typing\ntyping.overload(json.dumps)\n"
        "@typing.overload\ndef f(x: int) -> int: ...\ndef f(x):\n    return x\n"
        "[len(got), str(copy.copy(uuid.NAMESPACE_DNS))[:8], 'pwned' in json.dumps.__annotations__,\n"
        " uuid.SafeUUID['safe'].name, dict(dataclasses.field().metadata),\n"
        " string.Template('$a').substitute(a=1), await walk(), len(memo),\n"
        " len(typing.get_overloads(json.dumps)), len(typing.get_overloads(f)),\n"
        " hasattr(type(views[0]), 'register'), views[2] != {},\n"
        " isinstance(views[0], collections.abc.Mapping)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    expected = [12, "6ba7b810", False, "safe", {}, "1", "refused", 0, 0, 1, False, True, True]
    assert out["result"] == expected, out
    assert "Exception ignored" not in out["stdout"], out  # the refused loop was never freed


async def test_shown_reads_take_no_other_route(sec_gateway: Gateway) -> None:
    """Outside attack 102: a class pattern's capture and the C descriptor read off the
    class reached `groupindex` (a cached pattern's names, `string.Template`'s among them)
    past the guard. A capture now gets the guarded read's view; the guest's own classes
    keep fields and slots of those names (attack 105 found them refused)."""
    code = (
        "import dataclasses, re, string\nout = []\ngot = []\n"
        "class D(dict):\n    def __eq__(self, o):\n        got.append(o)\n        return False\n"
        "    __hash__ = None\n"
        "for owner, name in ((type(re.compile('x')), 'groupindex'), (type({}.keys()), 'mapping')):\n"
        "    try:\n        getattr(owner, name)\n        out.append('READ')\n"
        "    except AttributeError as e:\n        out.append('off an object' in str(e))\n"
        "P = type(string.Template.pattern)\n"
        "match string.Template.pattern:\n    case P(groupindex=g):\n        g == D()\n"
        "got[-1]['named'] = 99\n"
        "@dataclasses.dataclass\nclass Rule:\n    name: str\n    mapping: dict\n"
        "match Rule('id', {'a': 1}):\n    case Rule(name='id', mapping=m) if m:\n"
        "        out.append(m)\n"
        "class S:\n    __slots__ = ('mapping',)\n"
        "out + [string.Template('$who').substitute(who='tim'), type(getattr(S, 'mapping')).__name__,\n"
        "       str(re.compile('(?P<a>x)').groupindex)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [True, True, {"a": 1}, "tim", "member_descriptor", "{'a': 1}"], out


async def test_a_bound_writer_method_compares_by_its_checking_wrapper(
    sec_gateway: Gateway,
) -> None:
    """Outside attack 103: a bound method compares by its function, handing it to a guest
    callable's `__eq__` (`u.__init__ == MethodType(G(), u)`): `UUID.__init__` raw, then
    applied to `NAMESPACE_DNS`. The function a guest holds, bound or deep-copied, is the
    wrapper that checks what it is applied to."""
    code = (
        "import copy, uuid\ngot = []\n"
        "class G:\n    def __eq__(self, o):\n        got.append(o)\n        return False\n"
        "    __hash__ = object.__hash__\n    def __call__(self, *a, **k):\n        return None\n"
        "class U(uuid.UUID):\n    pass\nu = U(int=1)\nout = []\n"
        "for bound in (u.__init__, copy.deepcopy(u.__init__)):\n"
        "    bound == type(bound)(G(), u)\n"
        "    try:\n        got[-1](uuid.NAMESPACE_DNS, int=0)\n        out.append('WROTE')\n"
        "    except TypeError:\n        out.append('refused')\n"
        "class V(uuid.UUID):\n    def __init__(self, *a, **k):\n        super().__init__(*a, **k)\n"
        "out + [str(uuid.NAMESPACE_DNS)[:8], str(V(int=5))[-1], u.__init__ == u.__init__]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["refused", "refused", "6ba7b810", "5", True], out


async def test_overload_records_the_guests_own_functions_only(sec_gateway: Gateway) -> None:
    """Outside attack 104: `typing.overload` files its argument under
    `getattr(arg, "__func__", arg)`'s module and name: a guest object whose `__getattr__`
    answered `__func__` with `json.dumps`, or a guest function renamed into `json`, was
    filed under the library's. Methods, classmethods and functions of the guest's module
    are recorded as in Python."""
    code = (
        "import json, typing\n"
        "class P:\n    def __getattr__(self, name):\n"
        "        return json.dumps if name.endswith('func__') else None\n"
        "typing.overload(P())\n"
        "def g(x): ...\nsetattr(g, '__module__', 'json')\nsetattr(g, '__qualname__', 'loads')\n"
        "typing.overload(g)\n"
        "class K:\n    @typing.overload\n    def m(self, x: int) -> int: ...\n"
        "    @typing.overload\n    @classmethod\n    def c(cls, x: int) -> int: ...\n"
        "    def m(self, x):\n        return x\n"
        "@typing.overload\ndef f(x: int) -> int: ...\ndef f(x):\n    return x\n"
        "[len(typing.get_overloads(json.dumps)), len(typing.get_overloads(json.loads)),\n"
        " len(typing.get_overloads(f)), len(typing.get_overloads(K.m)), f(3)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [0, 0, 1, 1, 3], out


async def test_dataclass_methods_serve_their_class_from_the_start(sec_gateway: Gateway) -> None:
    """Outside attack 106: guest code runs inside `dataclass()` once the methods are in the
    class (a `__doc__` descriptor read last, a base's `__init_subclass__` when `slots=True`
    remakes the class), and took them before they were wrapped: a raw frozen `__init__`
    rewrote `uuid.NAMESPACE_DNS`, a raw `__eq__` read a read-only view's private mapping
    (copy's dispatch table). Each is wrapped where it is made and serves no one until the
    class is made. `update_wrapper` reads a guest class's `__dict__` read-only."""
    code = (
        "import copy, dataclasses, functools, uuid\nkept = []\nout = []\n"
        "class Doc:\n    def __get__(self, obj, cls=None):\n"
        "        if cls is not None and not kept:\n            kept.append(cls.__dict__['__init__'])\n"
        "            try:\n                kept[0](uuid.NAMESPACE_DNS, 0)\n"
        "            except TypeError as e:\n                out.append('still being made' in str(e))\n"
        "        return None\n"
        "class F:\n    __doc__ = Doc()\n    int: object = 0\n"
        "F = dataclasses.dataclass(frozen=True)(F)\n"
        "class Base:\n    def __init_subclass__(cls, **kw):\n"
        "        if '__eq__' in cls.__dict__:\n            kept.append(cls.__dict__['__eq__'])\n"
        "@dataclasses.dataclass(frozen=True, slots=True)\nclass S(Base):\n    _mapping: object = 0\n"
        "class Liar:\n    __slots__ = ()\n"
        "for raw, args in ((kept[0], (uuid.NAMESPACE_DNS, 0)), (kept[-1], (copy.dispatch_table, Liar()))):\n"
        "    try:\n        raw(*args)\n        out.append('RAN')\n"
        "    except TypeError:\n        out.append('refused')\n"
        "class G:\n    x = 1\n"
        "class W:\n    pass\nw = W()\n"
        "functools.update_wrapper(w, G, assigned=(), updated=('__dict__',))\n"
        "out + [str(uuid.NAMESPACE_DNS)[:8], F(3).int, S(1) == S(1), S(1) == S(2),\n"
        "       w.x, type(G.__dict__).__name__]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == [
        True,
        "refused",
        "refused",
        "6ba7b810",
        3,
        True,
        False,
        1,
        "mappingproxy",
    ], out


async def test_dataclass_methods_check_every_operand(sec_gateway: Gateway) -> None:
    """Outside attack 108: a field named like a checked read (`mapping`) was not guarded,
    so a subclass forwarding reads (`GenericAlias`) handed `copy.dispatch_table`'s raw
    proxy to `__eq__`; `other` passed by keyword skipped its check; guest code emptied
    `__dataclass_fields__` inside `dataclass()` so nothing was guarded; a base made with
    `type()` under a forged `__module__` answered `__class__` and was read as the guest's.
    Every operand must be a plain instance of the guest's, by position."""
    code = (
        "import copy, dataclasses\nout = []\n"
        "@dataclasses.dataclass(init=False, repr=False)\nclass D:\n    mapping: object\n"
        "class Fwd(D, type(list[int])):\n    pass\n"
        "class Holder:\n    mapping = 0\n"
        "def attempt(f):\n    try:\n        f()\n        out.append('RAN')\n"
        "    except TypeError:\n        out.append('refused')\n"
        "attempt(lambda: D.__eq__(Fwd(Holder, ()), Fwd(copy.dispatch_table.keys(), ())))\n"
        "d = D()\nd.mapping = 1\n"
        "attempt(lambda: D.__eq__(d, other=copy.dispatch_table))\n"
        "Lie = type('Lie', (), {'__module__': 'json', '__class__': property(lambda s: D)})\n"
        "class S(D, Lie):\n    pass\n"
        "s = S()\n"
        "try:\n    s._p = 1\n    out.append('WROTE')\nexcept AttributeError:\n    out.append('refused')\n"
        "def flag(x):\n    match x:\n        case 1:\n            return 'one'\n"
        "        case Holder._missing:\n            return 'missing'\n    return 'other'\n"
        "out + [d == d, flag(1)]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["refused", "refused", "refused", True, "one"], out


async def test_generated_text_reads_no_name_of_the_sandboxs(sec_gateway: Gateway) -> None:
    """Outside attack 110: an `InitVar` with `init=False` is read by name in the `__init__`
    dataclasses compiles, so a field named `_mcp_shown_m` read the raw proxy a class
    pattern's capture had left in the guest's globals (copy's real dispatch table again).
    Such names are refused, and the capture is cleared once the guard has shown it. A
    class body's match reads its own names in value patterns (they are read at once)."""
    code = (
        "import copy, dataclasses\nout = []\n"
        "KV = type(copy.dispatch_table.keys())\n"
        "match copy.dispatch_table.keys():\n    case KV(mapping=m):\n"
        "        out.append(type(m).__name__)\n"
        "try:\n    dataclasses.make_dataclass('R', [('_mcp_shown_m', dataclasses.InitVar[object],"
        " dataclasses.field(init=False))])\n    out.append('MADE')\n"
        "except TypeError:\n    out.append('refused')\n"
        "class Kind:\n    _eof = 'eof'\n"
        "class P:\n    K = Kind\n    match 'eof':\n        case K._eof:\n            got = 'eof'\n"
        "        case _:\n            got = 'other'\n"
        "out + [P.got]"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    assert out["result"] == ["mappingproxy", "refused", "eof"], out


async def test_a_class_bodys_match_checks_a_tools_chain_whole(sec_gateway: Gateway) -> None:
    """Outside attack 114: in a class body a value's root is read at once and the rest
    when its pattern is tried; the root was renamed before the chain was rewritten, so
    `tools.<a>.<b>`, whose names are checked at run time, was read with the real getattr
    (`case tools.t.mro:` reached the server view's own lookup; with `tools` rebound by an
    earlier step's function, `tools.a.format` handed the real `str.format` to `__eq__`)."""
    code = (
        "out = []\n"
        "class Eq:\n    def __eq__(self, other):\n        out.append(type(other).__name__)\n"
        "        return False\n    __hash__ = None\n"
        "for name in ('mro', 'format'):\n"
        "    try:\n        class C:\n            match Eq():\n"
        "                case tools.t.mro if name == 'mro':\n                    pass\n"
        "                case tools.t.format:\n                    pass\n"
        "    except Exception as e:\n        out.append(str(e))\n"
        "out"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), out
    # the guard's refusal, not the server view's own `__getattr__` (the raw read's)
    assert len(out["result"]) == 2, out
    assert all("is not allowed" in said for said in out["result"]), out

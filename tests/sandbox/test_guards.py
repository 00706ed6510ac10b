"""Run-time guards in the worker, over both executors: what the policy lets through (it
never sees text built at run time) still cannot reach the real builtins, a module outside
the allowlist or a library object's private state; ordinary idioms run."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mcp_code_mode.gateway import Gateway

from ..support import TEST_SERVER, server_entry, start_gateway


async def run(gateway: Gateway, code: str) -> dict[str, Any]:
    out = (await gateway.execute(code, timeout_s=20)).to_json()
    assert "ESCAPED" not in str(out["result"]), out
    return out


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        pytest.param(
            "getattr(str, 'format')('{0.__func__.__globals__[sys]}', call_tool)",
            "RUNTIME_ERROR",
            id="str-format-through-getattr",
        ),
        pytest.param(
            "getattr('{0.__class__}', 'format_map')({'0': 1})",
            "RUNTIME_ERROR",
            id="format-map-bound",
        ),
        pytest.param(
            "import functools\nclass C:\n    x: \"__import__('os').getcwd()\"\n"
            "functools.singledispatch(lambda a: 0).register(C())\n'ESCAPED'",
            "POLICY_VIOLATION",
            id="string-annotation-import",
        ),
        pytest.param(
            "import functools\nclass C:\n    x: \"open('/etc/hostname').read()\"\n"
            "functools.singledispatch(lambda a: 0).register(C())\n'ESCAPED'",
            "POLICY_VIOLATION",  # generated code may not name what guest code cannot call
            id="string-annotation-builtin",
        ),
        pytest.param("import json\ntype(json)._module", "RUNTIME_ERROR", id="module-view-slot"),
        pytest.param("import collections\ncollections._sys", "RUNTIME_ERROR", id="module-private"),
        pytest.param(
            "import json\ngetattr(json, '_default_encoder')", "RUNTIME_ERROR", id="getattr-private"
        ),
        pytest.param(
            "import json as tools\ntools._default_encoder", "RUNTIME_ERROR", id="rebound-tools"
        ),
        pytest.param("tools = 'x'\ntools._y", "RUNTIME_ERROR", id="tools-is-a-str"),
        pytest.param("import re\nre.compile('a')._x", "RUNTIME_ERROR", id="library-object-private"),
        pytest.param("getattr(int, '__subclasses__')", "RUNTIME_ERROR", id="getattr-dunder"),
        pytest.param("().__class__.__base__", "RUNTIME_ERROR", id="builtin-base"),
        pytest.param("int.__dict__", "RUNTIME_ERROR", id="builtin-class-dict"),
        pytest.param("import json\njson.dumps.__closure__", "RUNTIME_ERROR", id="library-closure"),
        pytest.param(
            "import json\nsetattr(json.JSONEncoder, '__module__', '__main__')",
            "RUNTIME_ERROR",
            id="adopt-a-library-class",
        ),
        # Found by an outside review: a class pattern reads attributes with the real getattr.
        pytest.param(
            "import json\nmatch json.dumps:\n    case object(__globals__=g):\n        pass\n'ESCAPED'",
            "POLICY_VIOLATION",
            id="match-class-pattern",
        ),
        # ... `x.attr += y` reads x.attr, and hands it to y.__radd__.
        pytest.param(
            "import json\ngot = []\nclass L:\n    def __radd__(self, o):\n        got.append(o)\n"
            "        return o\ntype(json.dumps).__dict__ += L()\n'ESCAPED'",
            "RUNTIME_ERROR",
            id="augmented-assignment-read",
        ),
        # ... a class body naming a module that does not exist makes dataclasses exec its
        # generated code with the real builtins, and field names are pasted into it.
        pytest.param(
            "import dataclasses\nclass X:\n    __module__ = 'nowhere'\n"
            "    __annotations__ = {'a,self.f(__import__)': int}\n"
            "dataclasses.dataclass(X)\n'ESCAPED'",
            "POLICY_VIOLATION",
            id="class-body-module",
        ),
        pytest.param(
            "import dataclasses\nX = type('X', (), {'__module__': 'nowhere', "
            "'__annotations__': {'a,self.f(__import__)': int}})\ndataclasses.dataclass(X)\n'ESCAPED'",
            "RUNTIME_ERROR",
            id="type-call-module",
        ),
    ],
)
async def test_runtime_routes_are_closed(any_gateway: Gateway, code: str, error_type: str) -> None:
    out = await run(any_gateway, code)
    assert out["error"] is not None and out["error"]["type"] == error_type, out
    assert out["error"]["line"] is not None


async def test_an_uncaught_refused_import_is_a_policy_violation_with_its_line(
    any_gateway: Gateway,
) -> None:
    out = await run(any_gateway, "import json\ntry:\n    import orjson\nexcept KeyError:\n    pass")
    assert out["error"]["type"] == "POLICY_VIOLATION" and out["error"]["line"] == 3, out
    assert "'orjson'" in out["error"]["message"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("try:\n    1/0\nexcept Exception as e:\n    r = type(e).__name__\nr", "ZeroDivisionError"),
        (
            "class A:\n    def __init__(self):\n        self._x = 1\nclass B(A):\n"
            "    def __init__(self):\n        super().__init__()\n        self._y = self._x + 1\n"
            "B()._y",
            2,
        ),
        ("out = None\nif __name__ == '__main__':\n    out = 'main'\nout", "main"),
        (
            "from collections import namedtuple\nP = namedtuple('P', 'x y')\n"
            "p = P(1, 2)\n[p._asdict(), list(p._replace(x=3)), list(P._fields)]",
            [{"x": 1, "y": 2}, [3, 2], ["x", "y"]],
        ),
        (
            "from __future__ import annotations\nimport dataclasses\n@dataclasses.dataclass\n"
            "class C:\n    x: int\n    y: list[int] = dataclasses.field(default_factory=list)\n"
            "dataclasses.asdict(C(1))",
            {"x": 1, "y": []},
        ),
        (
            "try:\n    import orjson as j\nexcept ImportError:\n    import json as j\nj.dumps([1])",
            "[1]",
        ),
        (
            "import datetime\nstr(datetime.datetime.strptime('2024-01-02', '%Y-%m-%d').date())",
            "2024-01-02",
        ),
        (
            "import functools\n@functools.singledispatch\ndef f(x):\n    return 'any'\n"
            "@f.register\ndef _(x: int):\n    return 'int'\n[f(1), f('a')]",
            ["int", "any"],
        ),
        ("'{} and {name}'.format(1, name='x')", "1 and x"),
        ("getattr('{}-{}', 'format')(1, 2)", "1-2"),
        ("def f():\n    pass\nf.__name__", "f"),
        ("class A:\n    def __init__(self):\n        self.x = 1\nA().__dict__", {"x": 1}),
        (
            "def f():\n    n = 1\n    def g():\n        return n\n    return g\n"
            "f().__closure__ is not None",
            True,
        ),
        (
            "class A:\n    pass\nclass B(A):\n    pass\n[c.__name__ for c in B.__mro__]",
            ["B", "A", "object"],
        ),
        (
            "class A:\n    def __init__(self):\n        self._n = 1\n    def inc(self):\n"
            "        self._n += 2\n        return self._n\nA().inc()",
            3,
        ),
        (
            "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\n"
            "match P(3):\n    case P(x=v):\n        r = v\nr",
            3,
        ),
    ],
)
async def test_ordinary_idioms_run(any_gateway: Gateway, code: str, expected: object) -> None:
    out = await run(any_gateway, code)
    assert out["ok"], out
    assert out["result"] == expected


@pytest_asyncio.fixture(scope="module")
async def os_allowed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """`os` allowed: guest code can write raw lines on the worker's channel (fd 3)."""
    config = tmp_path_factory.mktemp("guards") / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"t": server_entry(TEST_SERVER)}}))
    gw = await start_gateway(config, pool_size=1, extra_imports="os")
    try:
        yield gw
    finally:
        await gw.aclose()


async def test_a_worker_that_floods_its_channel_is_stopped(os_allowed: Gateway) -> None:
    """A guest that escaped could write many requests without waiting for the replies; the
    server does not take up that work: the worker is discarded at the second request."""
    flood = (
        'import os\nline = b\'{"op":"query","id":1,"kind":"list_servers","args":{}}\\n\'\n'
        "for fd in range(3, 8):\n    try:\n        os.write(fd, line * 20000)\n    except OSError:\n"
        "        pass\n'sent'"
    )
    started = time.perf_counter()
    out = await run(os_allowed, flood)
    assert time.perf_counter() - started < 10
    assert out["error"]["type"] == "EXECUTOR_ERROR", out
    assert "before its previous one was answered" in out["error"]["message"]
    assert (await run(os_allowed, "1+1"))["result"] == 2

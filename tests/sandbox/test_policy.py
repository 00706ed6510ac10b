"""The AST policy: what it refuses, with the line of the first problem."""

from __future__ import annotations

import pytest

from mcp_code_mode.sandbox.policy import check_policy
from mcp_code_mode.settings import DEFAULT_ALLOWED_IMPORTS


def check(code: str, **limits: int):  # type: ignore[no-untyped-def]
    return check_policy(
        code,
        allowed_imports=DEFAULT_ALLOWED_IMPORTS,
        max_chars=limits.get("max_chars", 8000),
        max_lines=limits.get("max_lines", 400),
    )


@pytest.mark.parametrize(
    ("code", "line", "needle"),
    [
        ("import os", 1, "'os'"),
        # typing's internals take `_root=True` to be subclassed (outside attack 20)
        ("import typing\nclass A(type(typing.List[int]), _root=True):\n    pass", 2, "'_root'"),
        # a helper C code imports lazily is handed out as it is: not even in a guarded try
        ("try:\n    import locale\nexcept ImportError:\n    pass", 2, "'locale'"),
        (
            "try:\n    from _strptime import _TimeRE_cache\nexcept ImportError:\n    pass",
            2,
            "_strptime",
        ),
        ("x = 1\nimport subprocess", 2, "subprocess"),
        ("from os import path", 1, "'os'"),
        ("from . import x", 1, "relative"),
        ("x = 1\ny = 2\nexec('1')", 3, "exec"),
        ("eval('1')", 1, "eval"),
        ("compile('1', 'f', 'exec')", 1, "compile"),
        ("__import__('os')", 1, "__import__"),
        ("open('/etc/passwd')", 1, "open"),
        ("globals()", 1, "globals"),
        ("\n\n().__class__.__base__.__subclasses__()", 3, "__subclasses__"),
        ("def f():\n    yield 1\ng = f()\ng.gi_frame", 4, "gi_frame"),
        ("import uuid\nuuid.os.environ", 2, "'os'"),
        ("import typing\ntyping.sys.modules", 2, "'sys'"),
        ("import asyncio\nasyncio.create_subprocess_shell('ls')", 2, "create_subprocess_shell"),
        ("'{0.__class__}'.format(1)", 1, "look up attributes"),
        ("import uuid\n'{0.os}'.format(uuid)", 2, "look up attributes"),
        ("fmt = '{0.os}'\nfmt.format(1)", 2, "string literal"),
        ("from random import _os", 1, "_os"),
        ("import string\nstring.Formatter().get_field('0.os', [1], {})", 2, "Formatter"),
        ("from json import *", 1, "import *"),
        ("__builtins__", 1, "__builtins__"),
    ],
)
def test_violations_name_the_line(code: str, line: int, needle: str) -> None:
    violation = check(code)
    assert violation is not None
    assert violation.kind == "POLICY_VIOLATION"
    assert violation.line == line
    assert needle in violation.message


def test_syntax_error_has_its_line() -> None:
    violation = check("x = 1\ny = (\n")
    assert violation is not None and violation.kind == "SYNTAX_ERROR"
    assert violation.line is not None and violation.line >= 2


def test_size_limits() -> None:
    too_long = check("x = 1\n" * 10, max_chars=20)
    assert too_long is not None and "MCP_CODE_MAX_CHARS" in too_long.message
    too_many = check("x = 1\n" * 5, max_lines=3)
    assert too_many is not None and "MCP_CODE_MAX_LINES" in too_many.message
    assert "code is 5 lines" in too_many.message
    # A file of exactly the limit, as editors save it (with a final newline), is within it.
    assert check("x = 1\n" * 3, max_lines=3) is None
    assert check("x = 1\n" * 2 + "x = 1", max_lines=3) is None
    assert check("x = 1\n" * 3 + "x", max_lines=3) is not None


@pytest.mark.parametrize(
    "code",
    [
        "import json, math\njson.dumps([math.pi])",
        "from collections import Counter\nCounter('abc')",
        "x = await tools.notes.list_notes()\nx",
        "class A:\n    pass\nA()",
        "[n for n in range(3)]",
        "import datetime\ndatetime.datetime.now().isoformat()",
        "_private = 1",
        # Idioms that reach nothing new (issue 14): the policy lets them through.
        "try:\n    1/0\nexcept Exception as e:\n    name = type(e).__name__",
        "def f(): pass\nf.__name__",
        "x = 1\nx.__class__",
        "class A:\n    def __init__(self):\n        super().__init__()\n        self._x = 1",
        "try:\n    pass\nexcept Exception as e:\n    e.__cause__",
        "if __name__ == '__main__':\n    pass",
        "from collections import namedtuple\nP = namedtuple('P', 'x')\nP(1)._asdict()",
        "from __future__ import annotations",
        "try:\n    import orjson\nexcept ImportError:\n    import json",
        "try:\n    from ujson import dumps\nexcept (ImportError, ValueError):\n    from json import dumps",
    ],
)
def test_ordinary_code_passes(code: str) -> None:
    assert check(code) is None


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        ("object.__reduce_ex__(1, 2)", "copy.copy()"),
        ("object.__getattribute__(1, 'x')", "getattr(obj, name)"),
        ("object.__setattr__(1, 'x', 2)", "setattr("),
        ("int.__subclasses__()", "isinstance()"),
        ("def f(): pass\nf.__globals__", "internals"),
    ],
)
def test_refusals_name_the_safe_alternative(code: str, hint: str) -> None:
    violation = check(code)
    assert violation is not None and hint in violation.message


def test_import_outside_a_guarding_try_is_still_refused() -> None:
    violation = check("try:\n    pass\nexcept ImportError:\n    import os")
    assert violation is not None and "'os'" in violation.message
    violation = check("try:\n    import os\nexcept KeyError:\n    pass")
    assert violation is not None and "'os'" in violation.message


@pytest.mark.parametrize(
    "code",
    [
        "tools.my_server._2fa()",
        "tools._1st.format()",
        "r = tools.db.mro(x=1)\nr",
        "x = [tools.a._b(), tools.c.start_server()]",
        "tools.a._b(tools=['x'])",  # a keyword argument binds nothing
    ],
)
def test_server_and_tool_identifiers_may_look_private(code: str) -> None:
    assert check(code) is None


def test_private_and_refused_names_in_a_tools_chain_are_checked_at_run_time() -> None:
    """The policy lets them through for the real `tools`; the rewrite sends them through the
    run-time check, which lets them through only for a server or tool of the real `tools`
    (the name could be made to mean an enum member, outside attack 19)."""
    from mcp_code_mode.sandbox.child.rewrite import compile_guest

    code = compile_guest("a = tools.s._b\nb = tools._s.format\nc = tools.s.t\nd = x.y")
    assert "_mcp_getattr_" in code.co_names
    assert {"_b", "_s", "format", "s", "t"}.isdisjoint(code.co_names)
    assert {"_b", "_s", "format", "s", "t"} <= set(code.co_consts)
    assert "y" in code.co_names  # elsewhere a public name stays a plain attribute read


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("def f(tools):\n    return tools.db.format()", ".format() is allowed only"),
        ("tools.db.__globals__", "dunder attribute '__globals__'"),
        ("tools.db = 'x{}'\ntools.db.format(1)", ".format() is allowed only"),
        ("tools = str\ntools.db.format()", ".format() is allowed only"),
    ],
)
def test_the_exemption_needs_the_real_tools(code: str, needle: str) -> None:
    violation = check(code)
    assert violation is not None and needle in violation.message


@pytest.mark.parametrize(
    ("code", "line"),
    [
        ("x = " + "-" * 1_100 + "1", 1),
        ("b = 0\n" + "x = b" + ".b" * 1_100, 2),  # the deepest node is a `Load`: no line
        ("x = " + "+".join(["'a'"] * 1_100), 1),
    ],
    ids=["unary", "attributes", "binop"],
)
def test_code_nested_past_the_limit_is_refused_with_its_line(code: str, line: int) -> None:
    """Outside attack 112: the worker's rewrite stopped at 400-450 levels with a bare
    RecursionError, and Pyodide's parser overflowed its stack at 1,900."""
    violation = check_policy(
        code, allowed_imports=DEFAULT_ALLOWED_IMPORTS, max_chars=100_000, max_lines=100
    )
    assert violation is not None and violation.kind == "POLICY_VIOLATION"
    assert "nested more than 1000 levels" in violation.message and violation.line == line

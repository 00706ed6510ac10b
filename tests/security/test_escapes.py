"""Introspection and import escapes: walking from harmless objects to frames, modules, builtins.

Each snippet returns a string starting with ESCAPED only if it reached what it was after.
The right outcome is POLICY_VIOLATION when the AST policy can see the attempt (literal
dunders, blocked names and attributes) and RUNTIME_ERROR when it is built at run time
(`getattr` & co. with computed strings). Rows marked `hole(...)` would reach their target today (none at the moment).
"""

from __future__ import annotations

import pytest

from mcp_code_mode.gateway import Gateway

from .helpers import attempt, error_type, reached, table

POLICY = {"POLICY_VIOLATION"}
RUNTIME = {"RUNTIME_ERROR"}
# Back doors: a sandbox may close them in the policy (refusing `_private` attributes) or at
# run time (module proxies, a guarded getattr), so either error type is accepted.
STOPPED = {"POLICY_VIOLATION", "RUNTIME_ERROR"}

_PUBLIC_ALIAS = (
    "allowed modules still hand out forbidden modules under public names (`enum.bltns` is "
    "builtins, `dataclasses.inspect`, `asyncio.base_events.socket`, `asyncio.unix_events."
    "signal`, `json.decoder.re.enum`): the policy knows only a fixed list of attribute names"
)
_REAL_GETATTR = (
    "`operator.attrgetter`, reachable as `typing.operator` and `fractions.operator`, resolves "
    "dotted dunder paths given as plain strings with the real getattr"
)
_TYPING_EVAL = (
    "`typing.get_type_hints(f, {})` evaluates string annotations with `eval` and the real "
    "builtins: `def f(x: \"__import__('os').getuid()\")` runs arbitrary code"
)

ESCAPES = table(
    # -- seen by the AST policy --------------------------------------------------------------
    ("class_base_subclasses", "().__class__.__base__.__subclasses__()", POLICY),
    ("type_subclasses", "type.__subclasses__(type)", POLICY),
    ("object_subclasses", "object.__subclasses__()", POLICY),
    ("mro", "int.mro()", POLICY),
    (
        "generator_gi_frame_f_back",
        "def g():\n    yield 1\n\nf = g().gi_frame.f_back\n'ESCAPED' + str(f)",
        POLICY,
    ),
    ("generator_gi_code", "def g():\n    yield 1\n\n'ESCAPED' + str(g().gi_code)", POLICY),
    ("coroutine_cr_frame", "async def c():\n    return 1\n\n'ESCAPED' + str(c().cr_frame)", POLICY),
    (
        "caught_exception_tb_frame",
        "try:\n    1 / 0\nexcept Exception as exc:\n    g = exc.__traceback__.tb_frame.f_globals\n'ESCAPED' + str(g)",
        POLICY,
    ),
    ("str_format_literal_dunder", "'ESCAPED' + '{0.__class__.__mro__}'.format(1)", POLICY),
    ("str_format_globals", "def f():\n    pass\n\n'ESCAPED' + '{0.__globals__}'.format(f)", POLICY),
    ("fstring_dunder", "x = 1\nf'ESCAPED{x.__class__.__subclasses__()}'", POLICY),
    ("method_self", "'ESCAPED' + str(log.__self__)", POLICY),
    ("builtins_name", "__builtins__['open']('/etc/passwd').read()", POLICY),
    ("dunder_import", "__import__('os').environ", POLICY),
    ("import_os", "import os\nos.environ", POLICY),
    ("import_importlib", "import importlib\nimportlib.import_module('os')", POLICY),
    ("import_ctypes", "import ctypes\nctypes.CDLL(None)", POLICY),
    ("relative_import", "from . import guest\nguest", POLICY),
    ("star_import", "from json import *\n'ESCAPED'", POLICY),
    ("from_typing_import_sys", "from typing import sys\nsys.modules", POLICY),
    ("typing_sys_modules", "import typing\ntyping.sys.modules['os'].environ", POLICY),
    ("datetime_sys", "import datetime\ndatetime.sys.modules", POLICY),
    ("uuid_os", "import uuid\nuuid.os.environ", POLICY),
    ("asyncio_subprocess", "import asyncio\nasyncio.subprocess", POLICY),
    (
        "asyncio_create_subprocess_shell",
        "import asyncio\nawait asyncio.create_subprocess_shell('id')",
        POLICY,
    ),
    ("dataclasses_builtins", "import dataclasses\ndataclasses.builtins.open", POLICY),
    ("vars_of_module", "import json\nvars(json)", POLICY),
    ("globals_call", "globals()", POLICY),
    ("eval_call", "eval('1 + 1')", POLICY),
    ("exec_call", "exec('x = 1')", POLICY),
    ("compile_call", "compile('1', 'x', 'eval')", POLICY),
    ("breakpoint_call", "breakpoint()", POLICY),
    # -- built at run time: refused by the restricted builtins ----------------------------------
    ("getattr_mro_built", "'ESCAPED' + str(getattr(int, '__mr' + 'o__'))", RUNTIME),
    (
        "getattr_subclasses_built",
        "'ESCAPED' + str(getattr(object, '_' * 2 + 'subclasses' + '_' * 2)())",
        RUNTIME,
    ),
    (
        "getattr_gi_frame_built",
        "def g():\n    yield 1\n\n'ESCAPED' + str(getattr(g(), 'gi_' + 'frame'))",
        RUNTIME,
    ),
    (
        "getattr_caught_traceback_built",
        "try:\n    1 / 0\nexcept Exception as exc:\n    tb = getattr(exc, '_' * 2 + 'traceback' + '_' * 2)\n'ESCAPED' + str(tb)",
        RUNTIME,
    ),
    ("getattr_uuid_os_built", "import uuid\ngetattr(uuid, 'o' + 's').environ", RUNTIME),
    ("getattr_typing_sys_built", "import typing\ngetattr(typing, 'sy' + 's').modules", RUNTIME),
    (
        "getattr_asyncio_subprocess_built",
        "import asyncio\n'ESCAPED' + str(getattr(asyncio, 'create_subprocess_' + 'shell'))",
        RUNTIME,
    ),
    (
        "setattr_code_built",
        "def f():\n    pass\n\nsetattr(f, '_' * 2 + 'code' + '_' * 2, None)\n'ESCAPED'",
        RUNTIME,
    ),
    # -- back doors closed since the first review: they must stay closed -------------------------
    (
        "string_formatter_get_field",
        "import string\nsubs = string.Formatter().get_field('0.__class__.__base__.__subclasses__', [()], {})[0]()\n'ESCAPED' + str(len(subs))",
        STOPPED,
    ),
    (
        "str_format_built_field",
        "spec = '{0.' + '_' * 2 + 'func' + '_' * 2 + '.' + '_' * 2 + 'globals' + '_' * 2 + '}'\n'ESCAPED' + spec.format(log)",
        STOPPED,
    ),
    ("random_private_os", "import random\n'ESCAPED' + str(random._os.getuid())", STOPPED),
    (
        "collections_private_sys_modules",
        "import collections\n'ESCAPED' + str(collections._sys.modules['os'])",
        STOPPED,
    ),
    (
        "getattr_private_built",
        "import random\n'ESCAPED' + str(getattr(random, '_' + 'os'))",
        STOPPED,
    ),
    (
        "dataclasses_private_thread",
        "import dataclasses\n'ESCAPED' + str(dataclasses._thread.start_new_thread)",
        STOPPED,
    ),
    # -- closed by module views and blocked names (were open holes) ----------------------------
    (
        "typing_operator_attrgetter",
        "import typing\nsubs = typing.operator.attrgetter('__class__.__base__.__subclasses__')(())()\n'ESCAPED' + str(len(subs))",
        STOPPED,
    ),
    (
        "typing_get_type_hints_eval",
        "import typing\ndef f(x: \"__import__('os').getuid()\"):\n    pass\n\n'ESCAPED' + str(typing.get_type_hints(f, {}))",
        STOPPED,
    ),
    (
        "enum_bltns_eval",
        "import enum\n'ESCAPED' + str(enum.bltns.eval('1 + 1'))",
        STOPPED,
    ),
    (
        "json_decoder_re_enum_builtins",
        "import json\n'ESCAPED' + str(json.decoder.re.enum.bltns.open)",
        STOPPED,
    ),
    (
        "dataclasses_inspect_frame_globals",
        "import dataclasses\nframe = dataclasses.inspect.currentframe()\nmembers = dict(dataclasses.inspect.getmembers(frame))\n'ESCAPED' + str(sorted(members['f_globals']))",
        STOPPED,
    ),
    (
        "dataclasses_inspect_linecache_read",
        "import dataclasses\n'ESCAPED' + dataclasses.inspect.linecache.getlines('/etc/passwd')[0]",
        STOPPED,
    ),
    (
        "asyncio_base_events_socket",
        "import asyncio\n'ESCAPED' + str(asyncio.base_events.socket.socket)",
        STOPPED,
    ),
    (
        "asyncio_unix_events_signal",
        "import asyncio\n'ESCAPED' + str(asyncio.unix_events.signal.setitimer)",
        STOPPED,
    ),
    # -- `tools` and its servers: names the policy trusts, so they must not change -------------
    (
        "tools_dict_swaps_a_server_for_a_format_string",
        "tools.__dict__['t'] = '{0.__class__.__base__.__subclasses__}'\n'ESCAPED' + tools.t.format(0)",
        RUNTIME,
    ),
    (
        "server_dict_swaps_a_tool_for_str_format",
        "tools.t.__dict__['format'] = '{0.__class__.__base__.__subclasses__}'.format\n'ESCAPED' + tools.t.format(0)",
        STOPPED,
    ),
    (
        "tools_reinitialised_through_its_class",
        "tools.__class__.__init__(tools, print, {'t': {'name': 't', 'tools': {}}})\n'ESCAPED'",
        RUNTIME,
    ),
    (
        "index_changed_through_a_server",
        "tools.t._tools['echo'] = 'fail'\n'ESCAPED'",
        RUNTIME,
    ),
)


@pytest.mark.parametrize(("code", "expected"), ESCAPES)
async def test_escape_is_stopped(sec_gateway: Gateway, code: str, expected: set[str]) -> None:
    out = await attempt(sec_gateway, code)
    assert not reached(out), f"the escape worked: {out['result']!r}"
    assert error_type(out) in expected, out
    if error_type(out) == "POLICY_VIOLATION":
        assert isinstance(out["error"]["line"], int), "the policy names the offending line"
    if error_type(out) == "RUNTIME_ERROR":
        message = out["error"]["message"]
        assert 'File "' not in message and '.py"' not in message, "no host frames or paths"


async def test_policy_blocks_before_any_worker_runs(sec_gateway: Gateway) -> None:
    """A refused snippet runs nothing: no output, logs or tool calls, and the right line."""
    out = await attempt(sec_gateway, "x = 1\nimport os\nos.kill(os.getppid(), 9)")
    assert error_type(out) == "POLICY_VIOLATION" and out["error"]["line"] == 2
    assert out["stdout"] == "" and out["logs"] == [] and out["tool_calls"] == []

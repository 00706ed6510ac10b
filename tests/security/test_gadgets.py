"""Stdlib gadgets: library code that applies names or code objects the guest chose (issue 30).

Each snippet returns a string starting with ESCAPED only if it reached what it was after
(a real module's globals, the real builtins, a function built from unchecked code). The
four classes the outside attack found, the singledispatch case, and generated variants;
then what guest code keeps doing with the same libraries, on both executors.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.child import isolation

from ..conftest import require_pyodide
from .helpers import NO_METACLASS, attempt, error_type, reached, table

STOPPED = {"POLICY_VIOLATION", "RUNTIME_ERROR"}
POLICY = {"POLICY_VIOLATION"}

# Walks from `()` to the real builtins with plain attribute syntax: run by code the policy
# never checked, it would reach them.
WALK = (
    "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
    ".__init__.__globals__['__builtins__']"
)

# A base dataclass field that dataclasses name only among the locals of the function that
# builds `__init__`: a name `a=<expression>,*,b` makes that a default, run as it compiles.
_FIELD_A = (
    "import dataclasses\n@dataclasses.dataclass\nclass A:\n"
    "    a: int = dataclasses.field(init=False, repr=False, compare=False, hash=False)\n"
    "f = dataclasses.fields(A)[0]\nout = []\n"
)

# A Task whose `__class__`, truth and `f_lineno` are `Task.get_stack` (cached), with the
# guest's own async generator as its coroutine: run by a helper the hook trusts for some
# attribute reads, it reads `ag_frame` beneath it, and the guest then takes the frames from
# the cache. `_STACK_END` returns them.
_STACK_TASK = (
    "import asyncio, dataclasses, functools\n"
    "cache = functools.lru_cache(maxsize=None)(asyncio.Task.get_stack)\n"
    "async def ag():\n    yield 1\nasync def idle():\n    pass\n"
    "T = type('T', (asyncio.Task,), {'__class__': property(cache), '__bool__': cache, "
    "'f_lineno': property(cache), '_coro': ag()})\nt = T(idle())\n"
)
_STACK_END = "\nr = [str(f) for f in cache(t)]\nawait t\n'ESCAPED' + str(r)"

# A planted library callable run beneath a helper the hook trusts: a `defaultdict` whose
# factory is `Task.get_stack`, read as a coroutine's `gi_frame` by asyncio's repr; the guest
# takes the frames from the dict (outside attack 25).
_PLANTED_FACTORY = (
    "import asyncio, collections, functools\nimport collections.abc as cabc\n"
    "d = collections.defaultdict(functools.partial(asyncio.Task.get_stack, "
    "asyncio.current_task()))\n"
    "class C(cabc.Coroutine):\n    cr_code = 1\n    gi_frame = property(d.__getitem__)\n"
    "    def send(self, v):\n        raise StopIteration(None)\n"
    "    def throw(self, *a):\n        raise StopIteration(None)\n"
    "    def __await__(self):\n        return iter(())\n"
    "t = asyncio.get_running_loop().create_task(C())\n"
    "try:\n    repr(t)\nexcept Exception:\n    pass\nawait asyncio.sleep(0)\n"
    "'ESCAPED' + str(list(d.values())) if d else 'kept out'"
)
# An exception whose `__str__` prints a Task's stack, whose frames are the guest's (any
# file name): linecache opened the file under the worker's trusted traceback formatting.
_SOURCE = str(Path(isolation.__file__))
_PLANTED_STR = (
    f"import asyncio, functools\nclass Code:\n    co_filename = {_SOURCE!r}\n"
    "    co_name = 'x'\nclass Frame:\n    f_code = Code()\n    f_globals = {}\n"
    "    def __init__(self, n):\n        self.f_lineno = n\n"
    "class T(asyncio.Task):\n    def get_stack(self, *, limit=None):\n"
    "        return [Frame(i) for i in range(1, 40)]\n"
    "class W:\n    def write(self, s):\n        if 'import' in s:\n"
    "            print('ESCAPED', s)\n    def flush(self):\n        pass\n"
    "async def nop():\n    pass\nt = T(nop())\nawait asyncio.sleep(0)\n"
    "class E(Exception):\n    __str__ = functools.partial(asyncio.Task.print_stack, t, file=W())\n"
    "raise E()"
)

GADGETS = table(
    # -- `import a.b as c` binds `sys.modules["a.b"]` when `a` refuses `b` (outside attack 27)
    (
        "import_as_of_a_blocked_submodule",
        "import asyncio.subprocess as sp\n'ESCAPED' + str(sp.tasks.inspect.enum.bltns)",
        POLICY,
    ),
    (
        "import_as_of_a_private_submodule",
        "import re._parser as p\n'ESCAPED' + str(p.SubPattern)",
        POLICY,
    ),
    (
        "from_import_of_a_private_submodule",
        "from re._parser import SubPattern\n'ESCAPED' + str(SubPattern)",
        POLICY,
    ),
    (
        "deepcopy_memo_keeps_the_originals",
        "import copy, random\nmemo = {}\ncopy.deepcopy(random.shuffle, memo)\n"
        "kept = memo.get(id(memo), [])\n"
        "'ESCAPED' + str(kept) if any(type(k).__name__ == 'Random' for k in kept) else 'none'",
        {"OK"},
    ),
    (
        "generic_alias_forwards_an_errors_obj",
        "try:\n    (1).zz\nexcept AttributeError as e:\n    err = e\n"
        "'ESCAPED' + repr(type(list[int])(err, ()).obj)",
        STOPPED,
    ),
    (
        "log_record_stack_names_the_workers_frames",
        "import asyncio\nlg = asyncio.log.logger\ngot = []\n"
        "lg.addFilter(lambda rec: got.append(rec) or False)\n"
        "for level in (1, 3, 6):\n    lg.error('x', stack_info=True, stacklevel=level)\n"
        "seen = {g.pathname for g in got} | {g.stack_info or '' for g in got}\n"
        "'ESCAPED' + str(seen) if any('mcp_code_mode' in t for t in seen) else 'guest only'",
        {"OK"},
    ),
    # (a guest subclass of an asyncio class whose methods act on the OS through private
    # state the guest set: the loop's close() reset the worker's SIGALRM, a watcher closed
    # any descriptor; outside attack 28)
    (
        "event_loop_subclass_resets_the_soft_time_limit",
        "import asyncio\nclass Mine(asyncio.SelectorEventLoop):\n    _thread_id = None\n"
        "    _closed = True\n    _signal_handlers = {14: None}\n    _ssock = None\n"
        "object.__new__(Mine).close()\n'ESCAPED'",
        STOPPED,
    ),
    (
        "event_loop_subclass_made_by_type",
        "import asyncio\nM = type('M', (asyncio.SelectorEventLoop,), {'__module__': 'asyncio.x',"
        " '_thread_id': None, '_closed': True, '_signal_handlers': {14: None}, '_ssock': None})\n"
        "object.__new__(M).close()\n'ESCAPED'",
        STOPPED,
    ),
    (
        # a guest mixin first in the MRO whose `__init_subclass__` does not chain skips the
        # base's refusal (outside attack 32): signal handling itself is then refused
        "event_loop_subclass_behind_a_mixin",
        "import asyncio\nclass Mix:\n    def __init_subclass__(cls, **kw):\n        pass\n"
        "class Mine(Mix, asyncio.SelectorEventLoop):\n    _thread_id = None\n"
        "    _closed = True\n    _signal_handlers = {14: None}\n    _ssock = None\n"
        "object.__new__(Mine).close()\n'ESCAPED'",
        STOPPED,
    ),
    (
        "child_watcher_subclass_closes_a_descriptor",
        "import asyncio\nclass L:\n    def is_closed(self):\n        return False\n"
        "    def _remove_reader(self, fd):\n        return True\n"
        "class W(asyncio.PidfdChildWatcher):\n    pass\nw = W()\nw._loop = L()\n"
        "w._callbacks = {1: (0, None, None)}\nw.remove_child_handler(1)\n'ESCAPED'",
        STOPPED,
    ),
    # (outside attack 29)
    (
        "cached_property_base_get_through_super",
        "import functools, json\ncp = functools.cached_property(lambda x: 1)\n"
        "cp.attrname = '__getattribute__'\n"
        "ga = super(functools.cached_property, cp).__get__(object, None)\n"
        "'ESCAPED' + str(ga(json.dumps, '__globals__')['__builtins__'])",
        STOPPED,
    ),
    (
        "copy_state_as_pairs_onto_a_library_object",
        "import asyncio, copy\nclass R:\n    def __reduce__(self):\n"
        "        return (object.__new__, (asyncio.BaseEventLoop,), [('_thread_id', None)])\n"
        "copy.copy(R())\n'ESCAPED'",
        STOPPED,
    ),
    (
        "copy_state_as_a_mapping_onto_a_library_object",
        "import asyncio, copy\nclass M:\n    def keys(self):\n        return ['_closed']\n"
        "    def __getitem__(self, key):\n        return True\n"
        "class R:\n    def __reduce__(self):\n"
        "        return (object.__new__, (asyncio.BaseEventLoop,), M())\n"
        "copy.copy(R())\n'ESCAPED'",
        STOPPED,
    ),
    (
        "deepcopy_state_that_copies_to_a_dict",
        "import asyncio, copy\nclass D:\n    def __deepcopy__(self, memo):\n"
        "        return {'_closed': True}\n"
        "class R:\n    def __reduce__(self):\n"
        "        return (object.__new__, (asyncio.BaseEventLoop,), D())\n"
        "copy.deepcopy(R())\n'ESCAPED'",
        STOPPED,
    ),
    (
        "child_watcher_method_on_a_guest_object",
        "import asyncio\nclass L:\n    def _remove_reader(self, fd):\n        return True\n"
        "class W:\n    pass\nw = W()\nw._loop = L()\nw._callbacks = {1: (299, None, None)}\n"
        "asyncio.PidfdChildWatcher.remove_child_handler(w, 1)\n'ESCAPED'",
        POLICY,
    ),
    # (outside attack 30)
    (
        "sock_sendfile_copies_between_the_workers_descriptors",
        "import asyncio\nclass S:\n    type = 1\n    def fileno(self):\n        return 4\n"
        "class F:\n    mode = 'rb'\n    def fileno(self):\n        return 7\n"
        "await asyncio.get_running_loop().sock_sendfile(S(), F(), 16, 1, fallback=False)\n"
        "'ESCAPED'",
        POLICY,
    ),
    (
        "sock_recv_registers_any_descriptor_in_the_loop",
        "import asyncio\nclass S:\n    def fileno(self):\n        return 4\n"
        "    def recv(self, n):\n        raise BlockingIOError\n"
        "t = asyncio.ensure_future(asyncio.get_running_loop().sock_recv(S(), 1))\n"
        "await asyncio.sleep(0)\nt.cancel()\n'ESCAPED'",
        POLICY,
    ),
    (
        # a guest subclass's `_attr_type` answered the guard one way and enum another
        # (outside attack 32; 3.13's `enum.property.__get__` reads it twice)
        "enum_property_subclass_answers_twice",
        "import enum, json\ncalls = [0]\nclass P(enum.property):\n    _cls_type = json.dumps\n"
        "    name = '__glo' + 'bals__'\n    @property\n    def _attr_type(self):\n"
        "        calls[0] += 1\n        return None if calls[0] == 1 else 'attr'\n"
        "g = P().__get__(1, int)\n'ESCAPED' + str(g['__builtins__'])",
        STOPPED,
    ),
    # a base's dataclass field renamed to source text: `_process_class` compiled it into
    # the code it runs as a trusted helper, unrewritten (outside attack 41)
    (
        "dataclass_inherited_field_renamed",
        "import dataclasses\nR = []\n@dataclasses.dataclass\nclass A:\n    x: int = 1\n"
        "f = A.__dataclass_fields__['x']\n"
        "f.name = 'q=None, **kw):\\n R.append(1)\\n return ()\\ndef _z(a'\n"
        "f.init = f.repr = f.compare = f.hash = False\nclass B(A):\n    pass\n"
        "dataclasses.dataclass(B)\n'ESCAPED' if R else 'none'",
        STOPPED,
    ),
    (
        "dataclass_forged_base_fields",
        "import dataclasses\nR = []\nclass FF:\n    pass\nf = FF()\n"
        "f.name = 'q=None, **kw):\\n R.append(1)\\n return ()\\ndef _z(a'\n"
        "class A:\n    pass\nA.__dataclass_fields__ = {'q': f}\nclass B(A):\n    pass\n"
        "dataclasses.dataclass(B)\n'ESCAPED' if R else 'none'",
        STOPPED,
    ),
    # (outside attack 42) a metaclass `__dict__` property gave dataclasses other
    # annotations than the class's own; a descriptor dataclasses read swapped a checked
    # name for source text in the annotations it was iterating (3.11)
    (
        "dataclass_metaclass_fakes_the_dict",
        "import dataclasses\nR = []\nN = 'q=None, **kw):\\n R.append(1)\\n return ()\\ndef _z(a'\n"
        "FAKE = {'__annotations__': {'a': int, N: int}}\n"
        "M = type('M', (type,), {'__di' + 'ct__': property(lambda cls: FAKE)})\n"
        "A = M('A', (), {'__annotations__': {'a': int}, 'a': 0,\n"
        "    N: dataclasses.field(init=False, repr=False, compare=False)})\n"
        "dataclasses.dataclass(A)\n'ESCAPED' if R else 'none'",
        STOPPED,
    ),
    (
        "dataclass_annotations_swapped_while_read",
        "import dataclasses\nR = []\nN = 'q=None, **kw):\\n R.append(1)\\n return ()\\ndef _z(a'\n"
        "ANN = {'a': int, 'b': int}\nclass D:\n    def __get__(self, obj, owner):\n"
        "        if 'b' in ANN:\n            del ANN['b']\n            ANN[N] = int\n"
        "        return 0\n"
        "A = type('A', (), {'__annotations__': ANN, 'a': D(), 'b': 0,\n"
        "    N: dataclasses.field(init=False, repr=False, compare=False)})\n"
        "try:\n    dataclasses.dataclass(A)\nexcept TypeError:\n    pass\n"
        "'ESCAPED' if R else 'none'",
        {"OK", "POLICY_VIOLATION", "RUNTIME_ERROR"},
    ),
    (
        # a metaclass `__getattr__` made up a base's `__dataclass_fields__` (outside
        # attack 43): a field named with source text, an `_field_type` equal to anything
        "dataclass_metaclass_makes_up_base_fields",
        "import dataclasses\nR = []\nclass Eq:\n    def __eq__(self, o):\n        return True\n"
        "    def __hash__(self):\n        return 1\nclass FF:\n    pass\nf = FF()\n"
        "f.name = 'q=None, **kw):\\n R.append(1)\\n return ()\\ndef _z(a'\n"
        "f.type = int\nf.init = False\nf.default = f.default_factory = dataclasses.MISSING\n"
        "f.repr = f.compare = True\nf.hash = None\nf.kw_only = False\nf.metadata = {}\n"
        "f._field_type = Eq()\nclass P:\n    frozen = False\n"
        "def ga(cls, name):\n    if name == '__dataclass_fields__':\n        return {'q': f}\n"
        "    if name == '__dataclass_params__':\n        return P\n    raise AttributeError(name)\n"
        "M = type('M', (type,), {'__getattr__': ga})\nB = M('B', (), {})\n"
        "class C(B):\n    z: int = 1\ntry:\n    dataclasses.dataclass(C)\nexcept TypeError:\n"
        "    pass\n'ESCAPED' if R else 'none'",
        {"OK", "POLICY_VIOLATION", "RUNTIME_ERROR"},
    ),
    (
        "make_dataclass_over_forged_base_fields",
        "import dataclasses\nR = []\nclass FF:\n    pass\nf = FF()\n"
        "f.name = 'q=None, **kw):\\n R.append(1)\\n return ()\\ndef _z(a'\n"
        "class A:\n    pass\nA.__dataclass_fields__ = {'q': f}\n"
        "dataclasses.make_dataclass('C', ['y'], bases=(A,))\n'ESCAPED' if R else 'none'",
        STOPPED,
    ),
    (
        # asyncio's frame walk, trusted for its own debug tracebacks, named the worker's
        # frames, files and lines as text when the guest called it (outside attack 34)
        "asyncio_extract_stack_names_the_workers_frames",
        "import asyncio\n'ESCAPED' + str(asyncio.format_helpers.extract_stack())",
        STOPPED,
    ),
    (
        "runner_subclass_sets_a_signal_handler",
        "import asyncio\nclass R(asyncio.Runner):\n    def _on_sigint(self, *a, **k):\n"
        "        pass\n'ESCAPED'",
        STOPPED,
    ),
    (
        "signal_handler_replaces_the_soft_time_limit",
        "import asyncio\nasyncio.get_running_loop().add_signal_handler(14, lambda: None)\n"
        "'ESCAPED'",
        POLICY,
    ),
    # -- the object a failed lookup was made on (outside attack 26) --------------------------
    (
        "attribute_error_holds_the_real_module",
        "import enum\ntry:\n    enum.zz\nexcept AttributeError as e:\n    m = e.obj\n"
        "'ESCAPED' + str(m.bltns.getattr(enum.unique, '__globals__')['sys'])",
        STOPPED,
    ),
    (
        "attribute_error_as_a_library_errors_context",
        "import dataclasses, json\ntry:\n    dataclasses.fields(json)\n"
        "except TypeError as e:\n    c = e.__context__\n"
        "m = getattr(c, 'obj', None)\n'ESCAPED' + str(m.codecs) if m is not None else 'none'",
        STOPPED | {"OK"},
    ),
    (
        "attribute_error_obj_in_a_class_pattern",
        "import enum\ntry:\n    enum.zz\nexcept AttributeError as e:\n    match e:\n"
        "        case AttributeError(obj=m):\n            got = m\n'ESCAPED' + str(got.bltns)",
        POLICY,
    ),
    (
        "find_caller_names_the_workers_frames",
        "import asyncio\n'ESCAPED' + str(asyncio.log.logger.findCaller(True, 3))",
        STOPPED,
    ),
    # -- a guest subclass of a C type whose lookup reads another object (outside attack 25) --
    (
        "generic_alias_subclass_hands_out_an_objects_dict",
        "class G(type(list[int])):\n    pass\n"
        "oga = G(object, ()).__dict__['__getattribute__']\nimport json\n"
        "real = oga(G(type(json).__repr__, ()).__closure__[0], 'cell_contents')\n"
        "'ESCAPED' + str(G(real, ()).__dict__['__builtins__']['open'])",
        STOPPED,
    ),
    (
        "generic_alias_subclass_through_a_modules_getattr",
        "import functools, json\nclass G(type(list[int])):\n    pass\n"
        "cells = functools.getattr(G(type(json).__repr__, ()), '__closure__')\n"
        "real = functools.getattr(G(cells[0], ()), 'cell_contents')\n'ESCAPED' + repr(real)",
        STOPPED,
    ),
    ("planted_factory_beneath_a_trusted_helper_reads_frames", _PLANTED_FACTORY, {"OK"}),
    ("planted_str_beneath_traceback_formatting_opens_files", _PLANTED_STR, STOPPED),
    (
        "class_body_binds_its_module_by_a_pattern",
        "class A:\n    match 'sys':\n        case str() as __module__:\n            pass\n"
        "'ESCAPED' + A.__module__",
        POLICY,
    ),
    (
        "class_body_property_named_class",
        "class A:\n    @property\n    def __class__(self):\n        return int\n"
        "'ESCAPED' if isinstance(A(), int) else 'no'",
        POLICY,
    ),
    # -- a class body's names come from its metaclass's `__prepare__` (outside attack 18) ----
    (
        "prepare_answers_for_a_self_matching_builtin",
        "import json\nclass Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n"
        "class Evil(metaclass=Meta):\n    __match_args__ = ('__globals__',)\n"
        "class P(type):\n    @classmethod\n    def __prepare__(mcs, name, bases, **kw):\n"
        "        return {'int': Evil}\n"
        "class C(metaclass=P):\n    match json.dumps:\n        case int(g):\n            got = g\n"
        "'ESCAPED' + str(C.got['__builtins__']['open'])",
        STOPPED,
    ),
    (
        "global_enum_member_stands_in_for_tools",
        "import enum\nclass B(enum.Enum):\n    def __getattr__(self, name):\n"
        "        if name == 'E':\n            return enum.Enum\n        raise AttributeError(name)\n"
        "E = B('E', [('tools', 1)])\nenum.global_enum(E)\n"
        "X = tools.E._convert_('X', 'enum', lambda n: n in ('sys', 'bltns'))\n"
        "'ESCAPED' + str(X['bltns'].value)",
        STOPPED,
    ),
    (
        "a_view_of_tools_built_by_the_guest",
        "T = type(tools)\nclass M(dict):\n    def __contains__(self, k):\n        return True\n"
        "t = T(lambda a, b: None, {'s': {'name': 's', 'tools': {}}})\n"
        "srv = type(t.s)(lambda a, b: None, {'name': 'n', 'tools': M()})\n"
        "'ESCAPED' + str(getattr(srv, '__reduce_ex__')(2))",
        STOPPED,
    ),
    (
        "a_view_init_run_on_a_library_object",
        "import json\nS = type(tools.t)\n"
        "S.__init__(json.dumps, lambda a, b: 'planted', {'name': 'n', 'tools': {'__doc__': 'x'}})\n"
        "'ESCAPED' + json.dumps.__doc__",
        STOPPED,
    ),
    (
        "enum_member_named_like_a_base_descriptor_reads_its_value",
        "import enum\nclass D:\n    def __get__(self, inst, owner=None):\n        return 'desc'\n"
        "class Base:\n    _names = D()\nclass E(Base, enum.Enum):\n    _names = 1\n"
        "    t = enum.member(tools)\nn = E.t._names\nassert isinstance(n, list), 'the member'\n"
        "'ESCAPED' + repr(n)",
        STOPPED,
    ),
    (
        "a_format_field_whose_key_holds_a_bracket",
        "import json\nt = '{0[a[b].__init__.__globals__[__builtins__][open]}'\n"
        "'ESCAPED' + getattr(t, 'format')({'a[b': json.JSONEncoder})",
        STOPPED,
    ),
    (
        "user_string_format_passes_on_to_str_format",
        "import collections\nu = collections.UserString('{0.__init__.__globals__[_sys].modules}')\n"
        "'ESCAPED' + getattr(u, 'format')(collections.UserString)",
        STOPPED,
    ),
    (
        "str_format_through_super",
        "import json\nclass S(str):\n    def fmt(self, *a):\n"
        "        return getattr(super(), 'format')(*a)\n"
        "'ESCAPED' + S('{0.__globals__[__builtins__][open]}').fmt(json.dumps)",
        STOPPED,
    ),
    (
        "copy_state_sets_a_library_objects_private_fields",
        "import copy, enum, typing\nclass R:\n    def __reduce_ex__(self, proto):\n"
        "        return (enum.property, (), {'_attr_type': 'attr', '_cls_type': typing.cast, "
        "'name': '__globals__'})\np = copy.copy(R())\n"
        "'ESCAPED' + str(p.__get__(1)['__builtins__'])",
        STOPPED,
    ),
    (
        "enum_property_set_up_to_read_with_the_real_getattr",
        "import enum, typing\np = enum.property()\np._attr_type = 'attr'\np._cls_type = typing.cast\n"
        "p.name = '__globals__'\n'ESCAPED' + str(p.__get__(1)['__builtins__'])",
        STOPPED,
    ),
    (
        "a_library_getattr_called_directly",
        "import typing\nA = type(typing.List[int])(typing.cast, (int,), name='x')\n"
        "f = getattr(A, '__getattr__')\n'ESCAPED' + str(f('_caller'))",
        STOPPED,
    ),
    (
        "copy_of_a_bound_method_calls_the_real_getattr",
        "import copy, json\nclass F:\n    def __call__(self):\n        pass\nf = F()\n"
        "f.__name__ = '__builtins__'\nclass A:\n    def m(self):\n        pass\n"
        "m = type(A().m)(f, json.dumps)\nb = copy.copy(m)\n'ESCAPED' + str(b['__import__'])",
        STOPPED,
    ),
    (
        "a_library_getattr_forwards_a_private_name",
        "import typing, enum\nA = type('A', (type(typing.List[int]),), {}, _root=True)\n"
        "'ESCAPED' + str(A(enum.Enum, (int,))._convert_)",
        STOPPED,
    ),
    (
        "global_enum_writes_a_trusted_name",
        "import enum\nE = enum.Enum('E', [('tools', 1), ('int', 2)])\nenum.global_enum(E)\n"
        "'ESCAPED' + repr(tools)",
        STOPPED,
    ),
    (
        "prepare_answers_for_tools",
        "import json, typing\nclass P(type):\n    @classmethod\n"
        "    def __prepare__(mcs, name, bases, **kw):\n"
        "        return {'tools': '{0.__globals__[__builtins__][open]}'}\n"
        "class C(metaclass=P):\n    text = tools.format(json.dumps)\n"
        "class Q(type):\n    @classmethod\n    def __prepare__(mcs, name, bases, **kw):\n"
        "        return {'tools': typing.List}\n"
        "class D(metaclass=Q):\n    private = tools._inst\n"
        "'ESCAPED' + C.text + str(D.private)",
        STOPPED | {"TOOL_ERROR"},
    ),
    # -- functools: update_wrapper / wraps read and write the names they are given ----------
    (
        "update_wrapper_reads_func_then_globals",
        "import functools\nclass W:\n    pass\nw = W()\n"
        "functools.update_wrapper(w, log, assigned=('__func__',), updated=())\n"
        "w2 = W()\nfunctools.update_wrapper(w2, w.__dict__['__func__'], "
        "assigned=('__globals__',), updated=())\n"
        "'ESCAPED' + str(w2.__dict__['__globals__']['builtins'])",
        STOPPED,
    ),
    (
        "wraps_reads_globals_of_a_library_function",
        "import functools, json\nclass W:\n    pass\n"
        "w = functools.wraps(json.dumps, assigned=('__globals__',), updated=())(W())\n"
        "'ESCAPED' + str(w.__dict__['__globals__']['__builtins__'])",
        STOPPED,
    ),
    (
        "update_wrapper_reads_a_tool_functions_closure",
        "import functools\nclass W:\n    pass\nw = W()\n"
        "functools.update_wrapper(w, tools.t.echo, assigned=('__closure__',), updated=())\n"
        "'ESCAPED' + str(w.__dict__['__closure__'])",
        STOPPED,
    ),
    (
        "update_wrapper_copies_a_module_views_dict",
        "import functools, json\nclass W:\n    pass\nw = W()\n"
        "functools.update_wrapper(w, json, assigned=(), updated=('__dict__',))\n"
        "'ESCAPED' + str(w.__dict__['__builtins__'])",
        STOPPED,
    ),
    # -- typing: forward references carry code compiled from text the policy never saw ------
    (
        "forward_code_run_through_the_function_type",
        f"import typing\ncode = typing.List[{WALK!r}].__args__[0].__forward_code__\n"
        "f = type(lambda: 0)(code, {})\n'ESCAPED' + str(f())",
        STOPPED,
    ),
    (
        "forward_code_reached_by_getattr",
        f"import typing\nref = typing.List[{WALK!r}].__args__[0]\n"
        "code = getattr(ref, '__forward' + '_code__')\n"
        "f = type(lambda: 0)(code, {})\n'ESCAPED' + str(f())",
        STOPPED,
    ),
    (
        "singledispatch_register_evaluates_a_string_annotation",
        f"import functools\n@functools.singledispatch\ndef f(x):\n    return 1\n"
        f"def g(x: {WALK + '.keys()'!r}):\n    pass\nf.register(g)\n'ESCAPED'",
        POLICY,
    ),
    # -- copy: a reducer's callable and state are applied with the library's own names -------
    (
        "copy_sets_code_from_a_reducers_state",
        f"import copy, typing\ncode = typing.List[{WALK!r}].__args__[0]\n"
        "code = getattr(code, '__forward' + '_code__', None)\n"
        "def h():\n    return 1\nclass S:\n    def __reduce_ex__(self, p):\n"
        "        return (lambda: h, (), (None, {'__code__': code}))\n"
        "x = copy.copy(S())\n'ESCAPED' + str(x())",
        STOPPED,
    ),
    (
        "copy_builds_a_function_from_a_code_object",
        f"import copy, typing\nref = typing.List[{WALK!r}].__args__[0]\n"
        "code = getattr(ref, '__forward' + '_code__', None)\nclass S:\n"
        "    def __reduce_ex__(self, p):\n        return (type(lambda: 0), (code, {}), None)\n"
        "'ESCAPED' + str(copy.copy(S())())",
        STOPPED,
    ),
    (
        "copy_relabels_a_library_class_as_the_guests",
        "import copy, json\nclass S:\n    def __reduce_ex__(self, p):\n"
        "        return (lambda: type(json), (), (None, {'__module__': '__main__'}))\n"
        "copy.copy(S())\n'ESCAPED' + str(type(json).__dict__['__getattr__'].__closure__)",
        STOPPED,
    ),
    # -- dataclasses: methods compiled from field names --------------------------------------
    (
        "dataclass_field_name_injects_code",
        f"{_FIELD_A}f.name = 'a=out.append(' + {WALK!r} + '),*,b'\n"
        "class B(A):\n    pass\ndataclasses.dataclass(B)\n'ESCAPED' + str(out)",
        STOPPED,
    ),
    (
        "make_dataclass_base_fields_inject_code",
        f"{_FIELD_A}f.name = 'a=out.append(' + {WALK!r} + '),*,b'\n"
        "dataclasses.make_dataclass('C', ['z'], bases=(A,))\n'ESCAPED' + str(out)",
        STOPPED,
    ),
    # -- typing: a forward reference made with `module=` is evaluated in that module ----------
    # (outside attack 3: `ForwardRef("modules", module="sys")` was the real sys.modules, from
    # which the audit hook's own module could be rewritten)
    (
        "forward_ref_evaluated_in_sys_is_sys_modules",
        "import typing, functools\nFR = type(typing.List['x'].__args__[0])\n"
        "fr = FR('modules', module='sys')\ndef f(a: fr):\n    pass\n"
        "functools.singledispatch(lambda a: a).register(f)\n'ESCAPED'",
        POLICY,
    ),
    (
        "forward_ref_evaluated_in_builtins_is_the_real_getattr",
        "import typing\nFR = type(typing.List['x'].__args__[0])\n"
        "fr = FR('getattr', module='builtins')\n"
        "fr._evaluate({}, {}, frozenset())\n'ESCAPED'",
        STOPPED,
    ),
    # (outside attack 4: `get_type_hints` takes the globals of whatever `__wrapped__` leads
    # to, here typing's own, where the text found `sys`; a ForwardRef subclass's own
    # `_evaluate` received them as they were)
    (
        "wrapped_library_function_lends_its_globals_to_a_string_annotation",
        "import functools, typing\nbox = []\n"
        "def f(a: \"sys.modules['__main__'].box.append(sys) or int\"):\n    pass\n"
        "f.__wrapped__ = typing.cast\n"
        "try:\n    functools.singledispatch(lambda a: a).register(f)\nexcept Exception:\n    pass\n"
        "'ESCAPED' + str(box[0].modules)",
        STOPPED,
    ),
    (
        "forward_ref_subclass_receives_the_globals_get_type_hints_picked",
        "import functools, typing\nFR = type(typing.List['x'].__args__[0])\nbox = []\n"
        "class G(FR, _root=True):\n    def _evaluate(self, g, l, *a, **k):\n"
        "        box.append(g)\n        return int\n"
        "def f(a: G('x')):\n    pass\nf.__wrapped__ = typing.cast\n"
        "functools.singledispatch(lambda a: a).register(f)\n"
        "'ESCAPED' + str(box[0]['sy' + 's'].modules)",
        STOPPED,
    ),
    # (outside attack 5: the library globals `__wrapped__` led to were passed as the locals
    # too; `_KEPT_BUILTINS['__loader__']` there was BuiltinImporter, whose load_module("sys")
    # is the real sys)
    (
        "wrapped_library_function_lends_its_globals_as_locals",
        "import functools\n"
        "def f(a: \"_KEPT_BUILTINS['__loa' 'der__']\"):\n    pass\n"
        "f.__wrapped__ = tools.t.echo\n"
        "sd = functools.singledispatch(lambda a: a)\n"
        "try:\n    sd.register(f)\nexcept Exception:\n    pass\n"
        "L = [k for k in sd.registry if k is not object]\n"
        "'ESCAPED' + str(L[0].load_module('sys').modules)",
        STOPPED,
    ),
    (
        "the_safe_builtins_hold_no_importer",
        'import functools\ndef f(a: "__loader__"):\n    pass\n'
        "sd = functools.singledispatch(lambda a: a)\n"
        "try:\n    sd.register(f)\nexcept Exception:\n    pass\n"
        "L = [k for k in sd.registry if k is not object]\n"
        "'ESCAPED' + str(L[0].load_module('sys').modules)",
        STOPPED,
    ),
    # (outside attack 6: enum's functional API names any module, and global_enum writes the
    # members into that module's globals: the audit hook's `_FINE` and the guards'
    # `_refusal` were replaced so)
    (
        "global_enum_writes_the_audit_hooks_globals",
        "import enum\nclass Yes:\n    def __contains__(self, item):\n        return True\n"
        "enum.global_enum(enum.Enum('A', {'_FINE': ()}, type=Yes, "
        "module='mcp_code_mode.sandbox.child.audit'))\n"
        "'ESCAPED' + str(getattr(enum.global_enum, '__glo' + 'bals__'))",
        STOPPED,
    ),
    (
        "global_enum_writes_the_guards_globals",
        "import enum\nclass NoneCall:\n    def __call__(self, *a, **k):\n        return None\n"
        "enum.global_enum(enum.Enum('G', {'_refusal': ()}, type=NoneCall, "
        "module='mcp_code_mode.sandbox.child.guards'))\n"
        "'ESCAPED' + str(getattr(enum.global_enum, '__glo' + 'bals__'))",
        STOPPED,
    ),
    (
        "global_enum_with_a_metaclass_that_lies_about_its_module",
        "import enum\nclass M(type(enum.Enum)):\n    @property\n    def __module__(cls):\n"
        "        return 'builtins'\n"
        "class E(enum.Enum, metaclass=M):\n    open = 1\n"
        "enum.global_enum(E)\n'ESCAPED'",
        STOPPED,
    ),
    # (outside attack 7: a private method a guest class inherits from a library base is the
    # library's: `Enum._convert_` makes members of any module's globals and writes them back)
    (
        "an_inherited_library_private_method_reaches_any_module",
        "import enum\nclass E(enum.Enum):\n    pass\n"
        "X = E._convert_('Xq', 'uuid', lambda n: n in ('os', 'sys'))\n"
        "'ESCAPED' + str(X['sys'].value.modules)",
        STOPPED,
    ),
    (
        "an_inherited_library_private_method_by_getattr",
        "import enum\nclass E(enum.Enum):\n    pass\n"
        "X = getattr(E, '_conv' + 'ert_')('Xq', 'uuid', lambda n: n == 'sys')\n"
        "'ESCAPED' + str(X['sys'].value.modules)",
        STOPPED,
    ),
    # (outside attack 8: a str subclass as the attribute name answered the guards' checks
    # one way and the real lookup another)
    (
        "a_str_subclass_name_whose_startswith_lies",
        "import enum\nclass S(str):\n    def startswith(self, *a, **k):\n        return False\n"
        "conv = getattr(enum.Enum, S('_convert_'))\n"
        "X = conv('X', 'enum', lambda n: n == 'sys')\n'ESCAPED' + str(X['sys'].value.modules)",
        STOPPED,
    ),
    (
        "a_str_subclass_name_whose_equality_lies",
        "import json\nclass S(str):\n    def __eq__(self, other):\n        return False\n"
        "    __hash__ = str.__hash__\n"
        "'ESCAPED' + str(getattr(json.dumps, S('__globals__'))['__builtins__'])",
        STOPPED,
    ),
    (
        "a_str_subclass_name_through_a_module_views_getattr",
        "import json\nclass S(str):\n    def startswith(self, *a, **k):\n        return False\n"
        "'ESCAPED' + str(json.__getattr__(S('_default_encoder')))",
        STOPPED,
    ),
    (
        "a_str_subclass_name_relabels_a_library_class",
        "import json\nclass S(str):\n    def __eq__(self, other):\n        return False\n"
        "    __hash__ = str.__hash__\n"
        "setattr(json.JSONEncoder, S('__module__'), '__main__')\n"
        "'ESCAPED' + json.JSONEncoder.__module__",
        STOPPED,
    ),
    # (outside attack 9: `case C(g)` reads `subject.<C.__match_args__[0]>` with the real
    # getattr, and C's metaclass decides that anything matches)
    (
        "a_class_pattern_reads_match_args_with_the_real_getattr",
        "import json\nclass M(type):\n    def __instancecheck__(cls, obj):\n        return True\n"
        "class C(metaclass=M):\n    __match_args__ = ('__glob' + 'als__',)\n"
        "match json.dumps:\n    case C(g):\n        out = 'ESCAPED' + str(g['__builtins__'])\n"
        "out",
        POLICY,
    ),
    (
        "a_rebound_builtin_name_in_a_class_pattern",
        "import json\nclass M(type):\n    def __instancecheck__(cls, obj):\n        return True\n"
        "class int(metaclass=M):\n    __match_args__ = ('__glob' + 'als__',)\n"
        "match json.dumps:\n    case int(g):\n        out = 'ESCAPED' + str(g['__builtins__'])\n"
        "out",
        POLICY,
    ),
    # (outside attack 10: update_wrapper copied a builtin class's real __dict__, with its
    # descriptors, into the guest's wrapper)
    (
        "wraps_copies_a_builtin_classes_descriptors",
        "import functools, json\n@functools.wraps(object)\ndef g():\n    pass\n"
        "ga = g.__dict__['__getattr' + 'ibute__']\n"
        "'ESCAPED' + str(ga(json.dumps, '__glob' + 'als__')['__builtins__'])",
        STOPPED,
    ),
    (
        "wraps_copies_types_subclasses",
        "import functools\n@functools.wraps(type)\ndef h():\n    pass\n"
        "'ESCAPED' + str(h.__dict__['__subclass' + 'es__'](object))",
        STOPPED,
    ),
    # (outside attack 11: update_wrapper read an inherited library private method off the
    # guest's class through the library getattr, and copied it onto the guest's function)
    (
        "update_wrapper_copies_an_inherited_library_private_method",
        "import enum, functools\nclass E(enum.Enum):\n    A = 1\ndef w():\n    pass\n"
        "functools.update_wrapper(w, E, assigned=('_convert_',), updated=())\n"
        "X = getattr(w, '_convert_')('Zq', 'uuid', lambda n: n == 'sys')\n"
        "'ESCAPED' + str(X['sys'].value.modules)",
        STOPPED,
    ),
    # (outside attack 12: make_dataclass ran the real dataclass on a class it labelled with
    # another module, and a str subclass field name's __format__ put text into its source)
    (
        "make_dataclass_field_name_formats_itself_into_the_source",
        "import dataclasses\nclass N(str):\n    n = [0]\n    def isidentifier(self):\n"
        "        return True\n    def __format__(self, spec):\n        self.n[0] += 1\n"
        "        return 'a=int(repr(eval)),*,zz=0' if self.n[0] == 1 else 'a'\n"
        "    def __hash__(self):\n        return str.__hash__(self)\n"
        "    def __eq__(self, o):\n        return str.__eq__(self, o)\n"
        "C = dataclasses.make_dataclass('C', [(N('a'), int)], namespace={'__module__': 'json'},"
        " repr=False, eq=False)\n'ESCAPED' + str(C)",
        STOPPED,
    ),
    (
        "make_dataclass_labelled_with_another_module",
        "import dataclasses\n"
        "C = dataclasses.make_dataclass('C', ['a'], namespace={'__module__': 'json'})\n"
        "'ESCAPED' + C.__module__",
        STOPPED,
    ),
    (
        "forward_value_read_back_after_an_evaluation",
        "import typing, functools\nFR = type(typing.List['x'].__args__[0])\nfr = FR('int')\n"
        "def f(a: fr):\n    pass\nfunctools.singledispatch(lambda a: a).register(f)\n"
        "'ESCAPED' + str(getattr(fr, '__forward' + '_value__'))",
        STOPPED,
    ),
    # (outside attack 13: a string annotation ran a call that typing compiled and the hook
    # only name-checked; `Enum._convert_` then handed out any module's globals)
    (
        "forward_reference_calls_enum_convert",
        "import functools, enum\nL = []\n@functools.singledispatch\ndef f(x):\n    pass\n"
        "@f.register\ndef _(x: 'L.append(enum.Enum._convert_) or int'):\n    pass\n"
        "'ESCAPED' + str(L[0]('X', 'uuid', lambda n: n == 'sys')['sys'].value.modules)",
        POLICY,
    ),
    (
        "forward_reference_names_a_private_method",
        "import functools, enum\n@functools.singledispatch\ndef f(x):\n    pass\n"
        "@f.register\ndef _(x: 'enum.Enum._convert_'):\n    pass\n"
        "'ESCAPED' + str(f.registry)",
        POLICY,
    ),
    (
        "class_pattern_reads_an_unguarded_format",
        "match '{0.__class__.__base__.__subclasses__}':\n"
        "    case str(format=fmt):\n        r = 'ESCAPED' + fmt(1)\nr",
        POLICY,
    ),
    # (outside attack 14: deepcopy followed a guest-API bound method's __self__ and kept the
    # runtime in the memo the guest passed; the runtime's allowed imports were then writable)
    (
        "deepcopy_memo_keeps_what_a_guest_function_holds",
        "import copy\nclass Memo(dict):\n    n = 0\n    def get(self, d, default=None):\n"
        "        self.n += 1\n        return dict.get(self, d, default) if self.n <= 4 else None\n"
        "kept = []\nfor f in (log, call_tool, tools, search_tools):\n    memo = Memo()\n"
        "    try:\n        copy.deepcopy(f, memo)\n    except Exception:\n        pass\n"
        "    kept += dict.get(memo, id(memo)) or []\n"
        "rt = [k for k in kept if type(k).__name__ == 'GuestRuntime'][0]\n"
        "rt.allowed_imports = rt.allowed_imports | {'sys'}\n"
        "try:\n    import sys\nexcept ImportError:\n    pass\n"
        "'ESCAPED' + repr(sys.modules['builtins'].eval)",
        STOPPED,
    ),
    # (outside attack 15: a guest reducer's state went into `tools.__dict__` past its own
    # check, and `tools.x.y` is read without the private-name guard)
    (
        "copy_state_written_into_the_tools_view",
        "import copy, enum\nclass R:\n    def __init__(self, target, state):\n"
        "        self.t, self.s = target, state\n    def __reduce_ex__(self, proto):\n"
        "        return (lambda x: x, (self.t,), self.s)\n"
        "copy.copy(R(tools, {'e': enum.Enum}))\n"
        "E = tools.e._convert_('Leak', 'dataclasses', lambda n: n == 'sys')\n"
        "'ESCAPED' + str(E['sys'].value.modules)",
        STOPPED,
    ),
    # (outside attack 16: enum handed out the real getattr in a reducer's tuple, and a
    # `__class__` property ran library code under a helper the hook trusted for `__code__`)
    (
        "pickle_by_enum_name_hands_out_the_real_getattr",
        "import enum\nclass K:\n    _name_ = 'x'\nrg = enum.pickle_by_enum_name(K(), 4)[0]\n"
        "eg = rg(enum.pickle_by_enum_name, '__glo' + 'bals__')\n'ESCAPED' + str(eg['sys'])",
        STOPPED,
    ),
    (
        "class_property_reads_frames_under_a_trusted_helper",
        "import asyncio, functools\n"
        "cache = functools.lru_cache(maxsize=None)(asyncio.Task.get_stack)\n"
        "T = type('T', (asyncio.Task,), {'__class__': property(cache), "
        "'_coro': asyncio.current_task().get_coro()})\nasync def idle():\n    pass\n"
        "t = T(idle())\nasyncio.iscoroutinefunction(t)\nr = [str(f) for f in cache(t)]\n"
        "await t\n'ESCAPED' + str(r)",
        STOPPED,
    ),
    (
        "class_body_assigns_its_class",
        "import asyncio\nclass T(asyncio.Task):\n    __class__ = property(lambda s: 1)\n'ESCAPED'",
        POLICY,
    ),
    # (outside attack 17: dataclass read a class's annotations and module past its guard,
    # and typing.overload vouched for frames read beneath it)
    (
        "dataclass_field_names_from_an_annotations_subclass",
        'import dataclasses\nP = \'"+str(self.sink.append(sys.modules["builtins"].getattr))+"\'\n'
        "class A(dict):\n    def items(self):\n        return [(P, int)]\n"
        "C = dataclasses.dataclass(init=False, eq=False)(type('C', (), "
        "{'__annotations__': A(x=int), 'x': 0}))\nc = C()\nc.sink = []\nrepr(c)\n"
        "'ESCAPED' + str(c.sink)",
        STOPPED,
    ),
    (
        "dataclass_module_from_a_metaclass_property",
        "import dataclasses\nN = [0]\ndef mod(cls):\n    N[0] += 1\n"
        "    return '__main__' if N[0] == 1 else 'dataclasses'\n"
        "Meta = type('Meta', (type,), {'__module__': property(mod)})\n"
        "C = dataclasses.dataclass(Meta('C', (), {'__annotations__': {'x': int}}))\n"
        "'ESCAPED' + str(N)",
        STOPPED,
    ),
    (
        "overload_reads_frames_beneath_it",
        "import typing, asyncio\nL = []\nasync def main():\n"
        "    t = asyncio.current_task()\n    class It:\n        def __iter__(self):\n"
        "            return map(asyncio.Task.get_stack, [t])\n"
        "    typing.overload(type('O', (It,), {'__func__': property(L.extend)})())\n"
        "await main()\n('ESCAPED' + str(L)) if L else 'held'",
        STOPPED | {"OK"},  # since attack 104 overload reads nothing off what is no function
    ),
    # (helpers trusted for every attribute read: a library callable the guest set as a
    # property or dunder, run beneath one, read any frame)
    (
        "dataclass_default_class_property_reads_frames",
        _STACK_TASK + "try:\n    dataclasses.dataclass(type('C', (), "
        "{'__annotations__': {'x': int}, 'x': t}))\nexcept ValueError:\n    pass" + _STACK_END,
        POLICY,
    ),
    (
        "find_caller_truth_reads_frames",
        _STACK_TASK
        + "try:\n    asyncio.log.logger.findCaller(t)\nexcept TypeError:\n    pass"
        + _STACK_END,
        POLICY,
    ),
    (
        "debug_stack_walk_reads_frames",
        _STACK_TASK + "try:\n    asyncio.format_helpers.extract_stack(t)\n"
        "except AttributeError:\n    pass" + _STACK_END,
        POLICY,
    ),
    (
        "coroutine_repr_reads_frames",
        _STACK_TASK + "R = type('R', (asyncio.Task,), {'_coro': t})\n"
        "try:\n    repr(R(idle()))\nexcept TypeError:\n    pass" + _STACK_END,
        POLICY,
    ),
    (
        "asdict_reads_a_module_views_dict",
        "import dataclasses, json\n@dataclasses.dataclass\nclass A:\n    a: int = 0\n"
        "f = dataclasses.fields(A)[0]\nf.name = '__dict__'\n"
        "type(json).__dataclass_fields__ = {'__dict__': f}\n"
        "d = dataclasses.asdict(json)\n'ESCAPED' + str(d['__dict__']['__builtins__'])",
        STOPPED,
    ),
)


@pytest.mark.parametrize(("code", "expected"), GADGETS)
async def test_gadget_reaches_nothing(sec_gateway: Gateway, code: str, expected: set[str]) -> None:
    out = await attempt(sec_gateway, code)
    assert not reached(out), f"the gadget worked: {out['result']!r}"
    assert error_type(out) in expected, out


# Names a gadget may be asked to copy: the ones that lead out, and harmless ones beside them.
_NAMES = st.sampled_from(
    [
        "__globals__",
        "__func__",
        "__self__",
        "__closure__",
        "__code__",
        "__builtins__",
        "__wrapped__",
        "__dict__",
        "__defaults__",
        "cell_contents",
        "f_globals",
        "gi_frame",
        "__forward_code__",
        "__name__",
        "__doc__",
        "_request",
        "_tools",
    ]
)
_TARGETS = st.sampled_from(["log", "call_tool", "tools.t.echo", "json.dumps", "json", "tools"])


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(chain=st.lists(_NAMES, min_size=1, max_size=3), target=_TARGETS)
async def test_update_wrapper_walks_lead_nowhere(
    sec_gateway: Gateway, chain: list[str], target: str
) -> None:
    """Any chain of names copied by `update_wrapper`, one step at a time, from any object
    the guest starts with, reaches no module globals, frame, code object or builtins."""
    code = (
        "import functools, json\nclass W:\n    pass\n"
        f"obj = {target}\n"
        f"for name in {chain!r}:\n"
        "    w = W()\n"
        "    functools.update_wrapper(w, obj, assigned=(name,), updated=())\n"
        "    obj = w.__dict__.get(name, None)\n"
        "kind = type(obj).__name__\n"
        # a module view's class is called `module` too; only a real module names its origin
        "real_module = kind == 'module' and ('from' in repr(obj) or '(' in repr(obj))\n"
        "globals_ = kind == 'dict' and ('__builtins__' in obj or '__loader__' in obj)\n"
        "leads_out = kind in ('frame', 'code', 'cell') or real_module or globals_\n"
        "'ESCAPED ' + kind if leads_out else 'held ' + kind"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out), f"{target} -> {chain} reached {out['result']!r}"


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    attrs=st.lists(
        st.sampled_from(["__class__", "__base__", "__subclasses__()", "__init__", "__globals__"]),
        min_size=1,
        max_size=5,
    ),
    via=st.sampled_from(["forward", "dataclass", "annotation"]),
)
async def test_text_compiled_by_a_library_is_checked(
    sec_gateway: Gateway, attrs: list[str], via: str
) -> None:
    """Attribute walks hidden in text that typing or dataclasses compile never run unchecked."""
    assume(not {"__base__", "__subclasses__()", "__globals__"}.isdisjoint(attrs))
    walk = "()" + "".join("." + a for a in attrs)
    routes = {
        "forward": (
            f"import typing\nref = typing.List[{walk!r}].__args__[0]\n"
            "code = getattr(ref, '__forward' + '_code__', None)\n"
            "obj = type(lambda: 0)(code, {})()"
        ),
        "dataclass": (
            f"{_FIELD_A}f.name = 'a=out.append(' + {walk!r} + '),*,b'\n"
            "class B(A):\n    pass\ndataclasses.dataclass(B)\nobj = out"
        ),
        "annotation": (
            "import functools\n@functools.singledispatch\ndef f(x):\n    return 1\n"
            f"def g(x: {walk!r}):\n    pass\nobj = f.register(g)"
        ),
    }
    out = await attempt(sec_gateway, routes[via] + "\n'ESCAPED' + str(obj)")
    assert not reached(out), f"{via} ran {walk}: {out['result']!r}"
    assert error_type(out) in STOPPED, out


IDIOMS = table(
    (
        # a module's `getattr` global is the one stdlib code uses (it trusts the guest's
        # own objects further); read from guest code it is the guest's own
        "a_modules_getattr_is_the_guests",
        "import copy, functools\n[functools.getattr is getattr, "
        "functools.setattr is setattr, copy.setattr is setattr]",
        [True, True, True],
    ),
    (
        "own_classes_keep_their_private_names",
        "import enum\nclass E(enum.Enum):\n    A = 1\n    @classmethod\n"
        "    def _pick(cls):\n        return cls.A\n"
        "class Err(Exception):\n    _code = 7\nclass D(dict):\n    _k = 'v'\n"
        "[E._pick().value, Err()._code, D()._k, Err().__dict__]",
        [1, 7, "v", {}],
    ),
    (
        "namedtuple_with_defaults",
        "import collections\nP = collections.namedtuple('P', 'x y', defaults=[0])\n"
        "p = P(1)\n[p.x, p.y, p._asdict(), P.__module__]",
        [1, 0, {"x": 1, "y": 0}, "__main__"],
    ),
    (
        "typed_namedtuple",
        "import typing\nclass Q(typing.NamedTuple):\n    a: int\n    b: str = 'x'\n"
        "R = typing.NamedTuple('R', [('c', int)])\n[Q(1).b, R(2).c]",
        ["x", 2],
    ),
    (
        "frozen_ordered_dataclass",
        "import dataclasses\n@dataclasses.dataclass(frozen=True, order=True)\nclass D:\n"
        "    a: int\n    b: str = 'x'\n"
        "try:\n    D(1).a = 2\n    frozen = False\nexcept dataclasses.FrozenInstanceError:\n"
        "    frozen = True\n"
        "[D(1) < D(2), dataclasses.asdict(D(1)), dataclasses.replace(D(1), a=3).a, frozen]",
        [True, {"a": 1, "b": "x"}, 3, True],
    ),
    (
        "forward_refs_to_the_guests_own_module",
        "import typing, functools\nFR = type(typing.List['x'].__args__[0])\n"
        "@functools.singledispatch\ndef f(x):\n    return 'any'\n"
        "def g(x: FR('int', module='__main__')):\n    return 'int'\nf.register(g)\n"
        "class N(typing.NamedTuple):\n    a: 'int'\n[f(1), N(2).a]",
        ["int", 2],
    ),
    (
        "the_guests_own_private_enum_members",
        "import enum\nclass Size(enum.Enum):\n    S = 1\n    L = 3\n"
        "    @classmethod\n    def _missing_(cls, value):\n        return cls.S\n"
        "class Auto(enum.Enum):\n    def _generate_next_value_(name, start, count, last):\n"
        "        return name.lower()\n    A = enum.auto()\n"
        "class Coord(bytes, enum.Enum):\n    def __new__(cls, value, label):\n"
        "        obj = bytes.__new__(cls, [value])\n        obj._value_ = value\n"
        "        obj.label = label\n        return obj\n    X = (0, 'x')\n"
        "[Size(9).name, Size.L._value_, list(Size._member_map_), Auto.A.value, Coord.X.label]",
        ["S", 3, ["S", "L"], "a", "x"],
    ),
    (
        "formats_with_items_and_user_strings",
        "import collections\nu = collections.UserString('{0} {a[k]} {0[x]}')\n"
        "v = collections.UserString('{a[k]}')\n"
        "[getattr(u, 'format')({'x': 1}, a={'k': 2}), getattr('{0[a[b]}', 'format')({'a[b': 3}), "
        "getattr(v, 'format_map')({'a': {'k': 4}})]",
        ["{'x': 1} 2 1", "3", "4"],
    ),
    (
        "copies_of_library_and_own_objects",
        "import copy, dataclasses, random, collections, datetime, decimal, fractions, string\n"
        "@dataclasses.dataclass\nclass P:\n    _x: int = 1\n"
        "class Q:\n    def __init__(self):\n        self._y = [1]\n"
        "r = random.Random(3)\n"
        "[copy.deepcopy(P())._x, copy.copy(P(3))._x, copy.deepcopy(Q())._y, "
        "copy.deepcopy(r).random() == random.Random(3).random(), "
        "copy.deepcopy(collections.OrderedDict(a=1)), str(copy.deepcopy(datetime.date(2020, 1, 2))), "
        "str(copy.deepcopy(decimal.Decimal('1.5'))), str(copy.copy(fractions.Fraction(1, 3))), "
        "copy.deepcopy(string.Template('$a')).template]",
        [1, 3, [1], True, {"a": 1}, "2020-01-02", "1.5", "1/3", "$a"],
    ),
    (
        "trusted_names_in_class_bodies",
        "import enum\nclass Kind(enum.Enum):\n    'Kinds.'\n    A = 1\n"
        "    match 3:\n        case int(n):\n            B = n\n"
        "class Uses:\n    t = tools\n    width = [int(x) for x in '12']\n"
        "    def f(self):\n        return str(7)\n"
        "[Kind.B.value, Kind.__doc__, Uses.t is tools, Uses.width, Uses().f()]",
        [3, "Kinds.", True, [1, 2], "7"],
    ),
    (
        "class_patterns_by_keyword_and_builtins_by_position",
        "import dataclasses\n@dataclasses.dataclass\nclass P:\n    x: int\n    y: int\n"
        "def f(v):\n    match v:\n        case P(x=0, y=y):\n            return ('axis', y)\n"
        "        case int(n):\n            return ('int', n)\n        case str(s):\n"
        "            return ('str', s)\n        case _:\n            return 'other'\n"
        "[f(P(0, 2)), f(5), f('a'), f(P(1, 1))]",
        [["axis", 2], ["int", 5], ["str", "a"], "other"],
    ),
    (
        "global_enum_on_the_guests_own_enum",
        "import enum\n@enum.global_enum\nclass Color(enum.IntEnum):\n    RED = 1\n    BLUE = 2\n"
        "[RED + BLUE, Color.RED.name]",
        [3, "RED"],
    ),
    (
        "make_dataclass_and_slots",
        "import dataclasses\nC = dataclasses.make_dataclass('C', ['x', ('y', int)])\n"
        "@dataclasses.dataclass(slots=True, kw_only=True)\nclass S:\n    v: int = 1\n"
        "[repr(C(1, 2)), S(v=3).v]",
        ["C(x=1, y=2)", 3],
    ),
    (
        "enum_functional_and_flags",
        "import enum\nclass Color(enum.Enum):\n    RED = 1\nE = enum.Enum('E', 'A B')\n"
        "F = enum.IntFlag('F', 'X Y')\n[Color(1).name, E.B.value, int(F.X | F.Y)]",
        ["RED", 2, 3],
    ),
    (
        "typing_generics_overload_and_string_hints",
        "from __future__ import annotations\nimport typing, functools\n"
        "T = typing.TypeVar('T')\nclass G(typing.Generic[T]):\n    pass\n"
        "@typing.overload\ndef h(x: int) -> int: ...\n@typing.overload\ndef h(x: str) -> str: ...\n"
        "def h(x):\n    return x\n"
        "@functools.singledispatch\ndef f(x):\n    return 'any'\n"
        "@f.register\ndef _(x: int):\n    return 'int'\n"
        "[str(T), type(G[int]()).__name__, h(1), f(1), f('a')]",
        ["~T", "G", 1, "int", "any"],
    ),
    (
        "asyncio_run_tasks_and_reprs",
        "import asyncio\nasync def m():\n    t = asyncio.create_task(asyncio.sleep(0, 5))\n"
        "    shown = isinstance(repr(t), str)\n"
        "    return [await t, shown, await asyncio.gather(*[asyncio.sleep(0, i) for i in range(3)])]\n"
        "asyncio.run(m())",
        [5, True, [0, 1, 2]],
    ),
    (
        "wraps_lru_cache_and_copies",
        "import functools, copy\ndef deco(fn):\n    @functools.wraps(fn)\n"
        "    def inner(*a):\n        return fn(*a) + 1\n    return inner\n"
        "@deco\ndef add(x):\n    '''Adds.'''\n    return x\n"
        "@functools.lru_cache(maxsize=None)\ndef sq(n):\n    return n * n\n"
        "class A:\n    def __init__(self):\n        self.x = [1]\n"
        "a = copy.deepcopy(A())\n[add(1), add.__name__, add.__doc__, sq(4), a.x, copy.copy({'k': [2]})]",
        [2, "add", "Adds.", 16, [1], {"k": [2]}],
    ),
)


@pytest.mark.parametrize(("code", "expected"), IDIOMS)
async def test_libraries_still_work(sec_gateway: Gateway, code: str, expected: object) -> None:
    out = await attempt(sec_gateway, code)
    assert out["error"] is None, out["error"]
    assert out["result"] == expected


@contextlib.asynccontextmanager
async def _allowing(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, extra_imports: str
) -> AsyncIterator[Gateway]:
    """A gateway of the executor `request` names, with `extra_imports` allowed."""
    from .conftest import _gateway

    if request.param == "pyodide":
        require_pyodide()
    gw = await _gateway(tmp_path_factory, executor=request.param, extra_imports=extra_imports)
    try:
        yield gw
    finally:
        await gw.aclose()


@pytest_asyncio.fixture(scope="module", params=["local", "pyodide"])
async def sys_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Gateway]:
    """`sys` allowed: `sys.modules` hands out the real builtins and `os`, as any gadget that
    reached a real module would. What the guest does with them is the audit hook's to stop."""
    async with _allowing(request, tmp_path_factory, "sys") as gw:
        yield gw


AFTER_A_REACH = table(
    ("open_a_file", "import sys\nsys.modules['builtins'].open('/etc/hostname').read()"),
    ("eval_text", "import sys\nsys.modules['builtins'].eval('().__class__')"),
    ("exec_text", "import sys\nsys.modules['builtins'].exec('x = 1')"),
    ("os_system", "import sys\nsys.modules['os'].system('true')"),
    ("os_listdir", "import sys\nsys.modules['os'].listdir('/')"),
    ("import_a_new_module", "import sys\nsys.modules['builtins'].__import__('ctypes').CDLL(None)"),
    ("frames", "import sys\nsys.modules['inspect'].currentframe().f_back.f_globals"),
    ("socket", "import sys\nsys.modules['socket'].socket()"),
    (
        "function_from_code",
        "import sys\ncode = sys.modules['builtins'].compile('1', 'x', 'eval')\n"
        "type(lambda: 0)(code, {})()",
    ),
)


@pytest.mark.parametrize("code", AFTER_A_REACH)
async def test_a_reached_module_cannot_be_used(sys_gateway: Gateway, code: str) -> None:
    """With the real builtins and `os` in hand (through `sys`, allowed here), files,
    processes, sockets, frames, new imports and unchecked code are still refused."""
    out = await attempt(sys_gateway, code)
    assert error_type(out) == "POLICY_VIOLATION", out
    assert "not allowed" in out["error"]["message"]
    assert json.dumps(out["result"]) == "null"


@pytest_asyncio.fixture(scope="module", params=["local", "pyodide"])
async def extras_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Gateway]:
    """Checked extras allowed, as an operator might (`rules.CHECKED_EXTRAS`): the object
    graph, the signal handlers, `sys`'s attributes and descriptors' state are still not
    the guest's."""
    async with _allowing(
        request, tmp_path_factory, "gc,faulthandler,contextlib,ipaddress,shlex"
    ) as gw:
        yield gw


# `gc.get_referents(json.dumps)` gave json's real globals as a plain dict: real builtins,
# `sys`, the worker's channel, JavaScript on Pyodide (outside attack 35)
CHECKED_EXTRAS_ROWS = table(
    ("referents", "import gc, json\n'ESCAPED' + str(gc.get_referents(json.dumps))", "POLICY"),
    ("referrers", "import gc, json\n'ESCAPED' + str(len(gc.get_referrers(json)))", "POLICY"),
    ("objects", "import gc\n'ESCAPED' + str(len(gc.get_objects()))", "POLICY"),
    ("save_all", "import gc\ngc.set_debug(gc.DEBUG_SAVEALL)\n'ESCAPED'", "RUNTIME"),
    # faulthandler's C handler took the soft time limit's SIGALRM (outside attack 36)
    ("fault_handler", "import faulthandler\nfaulthandler.register(14)\n'ESCAPED'", "RUNTIME"),
    # contextlib's redirect read `getattr(sys, self._stream)` with a guest subclass's
    # `_stream = "__dict__"` (outside attack 37)
    (
        "redirect_a_sys_attribute",
        "import contextlib\nclass R(contextlib.redirect_stdout):\n    _stream = '__dict__'\n"
        "r = R(None)\ntry:\n    r.__enter__()\nexcept AttributeError:\n    pass\n"
        "'ESCAPED' + str(type(r._old_targets[0]))",
        "POLICY",
    ),
    # a cached_property the library made before lockdown, its public attrname rewritten,
    # read `object.__dict__["__getattribute__"]` (outside attack 38)
    (
        "library_cached_property_renamed",
        "import ipaddress\ncp = ipaddress.IPv4Network.broadcast_address\n"
        "cp.attrname = '__getattri' + 'bute__'\n'ESCAPED' + str(cp.__get__(object))",
        "RUNTIME",
    ),
    (
        "library_cached_property_on_another_class",
        "import ipaddress\ncp = ipaddress.IPv4Network.broadcast_address\n"
        "class C:\n    pass\n'ESCAPED' + str(cp.__get__(C()))",
        "RUNTIME",
    ),
    (
        "shlex_default_stream",
        "import shlex\n'ESCAPED' + str(type(shlex.shlex().instream))",
        "POLICY",
    ),
    (
        "redirect_by_a_computed_name",
        "import contextlib\nR = getattr(contextlib, 'redirect_' + 'stdout')\n'ESCAPED'",
        "RUNTIME",
    ),
)


@pytest.mark.parametrize(("code", "kind"), CHECKED_EXTRAS_ROWS)
async def test_checked_extras_hand_out_nothing(
    extras_gateway: Gateway, code: str, kind: str
) -> None:
    out = await attempt(extras_gateway, code)
    assert not reached(out), out
    assert error_type(out) == {"POLICY": "POLICY_VIOLATION", "RUNTIME": "RUNTIME_ERROR"}[kind]


async def test_checked_extras_still_work(extras_gateway: Gateway) -> None:
    out = await attempt(extras_gateway, "import gc\n[type(gc.collect()).__name__, gc.isenabled()]")
    assert out["result"] == ["int", True], out


async def test_library_cached_properties_still_work(extras_gateway: Gateway) -> None:
    code = (
        "import ipaddress, functools\nn = ipaddress.ip_network('10.0.0.0/8')\n"
        "class C:\n    @functools.cached_property\n    def x(self):\n        return 5\n"
        "class D(C):\n    pass\n[str(n.broadcast_address), str(n.hostmask), C().x, D().x]"
    )
    out = await attempt(extras_gateway, code)
    assert out["result"] == ["10.255.255.255", "0.255.255.255", 5, 5], out


AFTER_THE_GUEST_RETURNS = table(
    (
        "event_loop_callback_builds_a_function",
        "import asyncio, operator, typing\n"
        "code = getattr(typing.List['1'].__args__[0], '__forward' + '_code__')\nout = []\n"
        "loop = asyncio.get_running_loop()\n"
        "loop.call_soon(out.extend, map(operator.call, map(type(lambda: 0), [code], [{}])))\n"
        "await asyncio.sleep(0)\n'ESCAPED ' + str(out)",
    ),
    (
        "result_repr_builds_a_function",
        "import functools, operator, typing\n"
        "code = getattr(typing.List['1'].__args__[0], '__forward' + '_code__')\n"
        "m = map(operator.call, map(type(lambda: 0), [code], [{}]))\n"
        "class X:\n    __repr__ = functools.partial(next, m)\nX()",
    ),
    (
        "deepcopy_memo_keeps_a_reducers_state",
        "import copy, typing, asyncio, operator\n"
        "fr = typing.List['1'].__args__[0]\nmemo = {}\n"
        "try:\n    copy.deepcopy(fr, memo)\nexcept AttributeError:\n    pass\n"
        "code = [v['__forward_code__'] for v in memo.values() if isinstance(v, dict) "
        "and '__forward_code__' in v][0]\nout = []\n"
        "asyncio.get_running_loop().call_soon(out.extend, "
        "map(operator.call, map(type(lambda: 0), [code], [{}])))\n"
        "await asyncio.sleep(0)\n'ESCAPED ' + str(out)",
    ),
    (
        "str_subclass_format_reads_globals",
        "import dataclasses\nclass S(str):\n    pass\nfmt = getattr(S, 'format')\n"
        "fmt('ESCAPED {0.__globals__[__builtins__][open]}', dataclasses.fields)",
    ),
    (
        "asdict_reads_a_forward_code",
        "import dataclasses, typing\n@dataclasses.dataclass\nclass D:\n    a: int\n"
        "f = dataclasses.fields(D)[0]\nf.name = '__forward_code__'\n"
        "fr = typing.List['1'].__args__[0]\ntype(fr).__dataclass_fields__ = {'x': f}\n"
        "'ESCAPED ' + str(dataclasses.asdict(fr))",
    ),
)


@pytest.mark.parametrize("code", AFTER_THE_GUEST_RETURNS)
async def test_no_guest_frame_is_no_way_out(sec_gateway: Gateway, code: str) -> None:
    """Callables the guest chose, run by the event loop or the worker after the guest's
    code returned (no guest frame on the stack), build and run nothing either."""
    out = await attempt(sec_gateway, code)
    assert not reached(out) or "ESCAPED []" in json.dumps(out["result"]), out
    assert "function" not in json.dumps(out["result"]), out


async def test_an_exception_that_cannot_be_printed_is_still_a_result(sec_gateway: Gateway) -> None:
    code = "class E(Exception):\n    def __str__(self):\n        raise ValueError('no')\nraise E()"
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "RUNTIME_ERROR", out


async def test_dataclass_fields_may_be_named_like_modules(sec_gateway: Gateway) -> None:
    code = (
        "import dataclasses\n@dataclasses.dataclass\nclass Platform:\n    os: str\n    sys: int = 1\n"
        "P = dataclasses.make_dataclass('P', ['builtins', 'mro'])\n"
        "[repr(Platform('linux')), repr(P(1, 2))]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == ["Platform(os='linux', sys=1)", "P(builtins=1, mro=2)"], out


async def test_cached_property_reads_only_the_guests_own_dicts(sec_gateway: Gateway) -> None:
    """`cached_property.__get__` reads `instance.__dict__[attrname]`: pointed at `object`
    with attrname `__getattribute__` it handed out a getattr without a guard."""
    code = (
        "import functools\ndef ident(x):\n    return x\n"
        "cp = functools.cached_property(ident)\ncp.__set_name__(None, '__getattribute__')\n"
        "ga = cp.__get__(object)\n"
        "'ESCAPED ' + str(ga(functools.wraps, '__globals__')['__builtins__'])"
    )
    out = await attempt(sec_gateway, code)
    assert not reached(out) and error_type(out) == "RUNTIME_ERROR", out
    assert "your own classes" in out["error"]["message"]
    ok = await attempt(
        sec_gateway,
        "import functools\nclass C:\n    @functools.cached_property\n"
        "    def v(self):\n        return 7\nC().v",
    )
    assert ok["result"] == 7, ok


async def test_the_hook_runs_no_guest_code(sys_gateway: Gateway) -> None:
    """A str subclass as an event's argument is never compared inside the hook (its
    `__eq__` ran there, where it could switch the hook off)."""
    code = (
        "import sys\nseen = []\nclass Key(str):\n    def __eq__(self, other):\n"
        "        seen.append(other)\n        return False\n    __hash__ = str.__hash__\n"
        "try:\n    sys.modules['builtins'].compile('1', Key('<x>'), 'eval')\n"
        "except PermissionError as exc:\n    seen.append('refused')\nseen"
    )
    out = await attempt(sys_gateway, code)
    assert out["result"] == ["refused"], out


# `import json.zzz` through a finder first on the real `sys.meta_path` that answers with
# `{loader}`; what happened lands in the guest's list `seen`.
_IMPORT_THROUGH = (
    "spec = sys.modules['_frozen_importlib'].ModuleSpec\n"
    "class F:\n    def find_spec(self, name, path, target=None):\n"
    "        return spec(name, {loader}) if name == 'json.zzz' else None\n"
    "sys.meta_path.insert(0, F())\ntry:\n    import json.zzz\n"
    "    seen.append('imported')\nexcept Exception as exc:\n"
    "    seen.append(type(exc).__name__)\nseen"
)


async def test_the_hook_hashes_no_guest_loader(sys_gateway: Gateway) -> None:
    """Whether a module's own code is run by one of importlib's loaders is decided by the
    loader's type by identity: a set lookup hashed it, and a metaclass `__hash__` ran guest
    code inside the hook, where it could switch the hook off (outside attack 13)."""
    code = (
        "import sys\nseen = []\nclass Meta(type):\n    def __hash__(cls):\n"
        "        seen.append('hashed')\n        return 0\n"
        "base = sys.modules['_frozen_importlib_external'].SourceFileLoader\n"
        "class L(base, metaclass=Meta):\n    def get_code(self, name):\n"
        "        return sys.modules['builtins'].compile('x = 1', 'zzz', 'exec')\n"
        + _IMPORT_THROUGH.format(loader="L(name, 'zzz')")
    )
    out = await attempt(sys_gateway, code)
    # no metaclass of the guest's is made now (`frozen_classes`): the case stops there
    assert NO_METACLASS in out["error"]["message"], out


async def test_a_trusted_loader_with_its_own_code_is_not_trusted(sys_gateway: Gateway) -> None:
    """An importlib loader whose instance overrides `get_code` runs code the policy never
    saw: the hook trusts a module's own code only from a loader that overrides nothing
    (outside attack 14)."""
    code = (
        "import sys\nbase = sys.modules['_frozen_importlib_external'].SourceFileLoader\n"
        "ld = base('json.zzz', 'zzz')\n"
        "unchecked = sys.modules['builtins'].compile('x = 1', 'zzz', 'exec')\n"
        "ld.get_code = lambda name: unchecked\n"
        "seen = []\n" + _IMPORT_THROUGH.format(loader="ld")
    )
    out = await attempt(sys_gateway, code)
    assert out["result"] and "imported" not in out["result"], out


WRITES = table(
    ("the_sandboxs_own_object", "e = ToolError('s', 't', 'm')\ne.note = 1", "sandbox's own"),
    (
        "a_class_with_a_name_that_is_not_str",
        "class K(str):\n    pass\nG = type('G', (), {K('x'): 1})\ng = G()\ng.y = 1",
        "not str",
    ),
    (
        "copy_state_onto_a_library_object",
        "import copy, typing\nclass R:\n    def __reduce_ex__(self, p):\n"
        "        return (lambda x: x, (typing.List,), {'_name': 'Hacked'})\ncopy.copy(R())",
        "handles writes",
    ),
    (
        "update_wrapper_on_a_library_class",
        "import functools, json\ndef f():\n    pass\n"
        "functools.update_wrapper(json.JSONEncoder, f, (), ())",
        "class",
    ),
    ("a_library_class", "import json\njson.JSONEncoder.default = lambda s, o: 1", "class"),
    ("a_library_class_by_setattr", "import json\nsetattr(json.JSONDecoder, 'x', 1)", "class"),
    ("a_library_class_deleted", "import json\ndel json.JSONEncoder.encode", "class"),
    ("through_a_generic_alias", "import typing\ntyping.List[int].x = 1", "handles writes"),
    ("a_module", "import json\njson.x = 1", "module"),
    ("a_library_function", "import json\njson.dumps.mark = 1", "function"),
    (
        "a_library_function_by_setattr",
        "import json\nsetattr(json.dumps, '__wrapped__', len)",
        "function",
    ),
    ("the_guest_apis_function", "log.__wrapped__ = len", "function"),
    (
        "a_library_objects_private_state",
        "import enum\np = enum.property()\np._attr_type = 'attr'",
        "private attribute",
    ),
    (
        "a_library_objects_private_state_by_setattr",
        "import enum\nsetattr(enum.property(), '_cls_type', 1)",
        "private attribute",
    ),
    ("in_a_for_target", "import json\nfor json.JSONEncoder.x in [1]:\n    pass", "class"),
)


@pytest.mark.parametrize(("code", "refused"), WRITES)
async def test_guest_code_changes_no_class_it_did_not_define(
    sec_gateway: Gateway, code: str, refused: str
) -> None:
    """A library class is shared with the sandbox's own code (json encodes its messages):
    every route of attribute writes applies one rule (`writes`)."""
    out = await attempt(sec_gateway, code)
    assert error_type(out) == "RUNTIME_ERROR" and refused in out["error"]["message"], out


async def test_guest_code_still_writes_its_own_attributes(sec_gateway: Gateway) -> None:
    code = (
        "import decimal, functools\nclass A:\n    def __init__(self):\n        self.x = 1\n"
        "        self._y = 2\na = A()\na.x += 4\na._y *= 3\nA.z = 'class'\n"
        "for a.i in range(3):\n    pass\nctx = decimal.Context()\nctx.prec = 5\n"
        "del a.x\n@functools.lru_cache\ndef f(n):\n    return n\nf.note = 'ok'\n"
        "[a._y, A.z, a.i, ctx.prec, hasattr(a, 'x'), f.note, f(2)]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == [6, "class", 2, 5, False, "ok", 2], out


CRASHES = table(
    (
        "tool_error_with_a_raising_str",
        "class E(ToolError):\n    def __str__(self):\n        raise ValueError('no')\n"
        "raise E('s', 't', 'm')",
        "TOOL_ERROR",
    ),
    (
        "import_refusal_with_a_raising_str",
        "try:\n    import os\nexcept ImportError as e:\n    R = type(e)\n"
        "class E(R):\n    def __str__(self):\n        raise ValueError('no')\nraise E('x')",
        "POLICY_VIOLATION",
    ),
    (
        "syntax_error_with_odd_fields",
        "class M:\n    def __format__(self, spec):\n        raise ValueError('no')\n"
        "e = SyntaxError('x')\ne.msg = M()\ne.lineno = {1, 2}\nraise e",
        "SYNTAX_ERROR",
    ),
    # a result whose JSON encoding raised a BaseException took the worker past its
    # `os._exit` into the interpreter's shutdown, running guest `__del__`s with the
    # modules torn down (outside attack 34)
    # a caught limit raised again with a forged type: a `str` subclass equal to every code
    # went to the host as the type (a malformed result), a dict killed the worker (outside
    # attack 117); the run ends with the limit it met
    (
        "a_caught_limit_raised_again_with_a_forged_type",
        "try:\n    print('x' * 2_000_000)\nexcept BaseException as e:\n    F = type(e)\n"
        "class K(str):\n    def __hash__(self):\n        return hash('TIMEOUT')\n"
        "    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
        "        return False\nraise F(K('NOT_A_CODE'), 'm')",
        "OUTPUT_LIMIT",
    ),
    (
        "a_caught_limit_raised_again_with_a_dict_for_a_type",
        "try:\n    print('x' * 2_000_000)\nexcept BaseException as e:\n    F = type(e)\n"
        "raise F({'a': 1}, [1])",
        "OUTPUT_LIMIT",
    ),
    # a class named by a `str` subclass: its `__getitem__` / `__format__` ran in the worker's
    # error path after the timer was off, killing the worker (outside attack 119)
    (
        "an_exception_class_named_by_a_raising_str",
        "class S(str):\n    def __getitem__(self, k):\n        raise KeyboardInterrupt('i')\n"
        "    def __format__(self, spec):\n        raise MemoryError('f')\n"
        "class E(Exception):\n    pass\nE.__name__ = S('E')\nraise E('boom')",
        "RUNTIME_ERROR",
    ),
    (
        "a_result_encoding_error_named_by_a_raising_str",
        "class S(str):\n    def __getitem__(self, k):\n        raise KeyboardInterrupt('i')\n"
        "    def __format__(self, spec):\n        raise KeyboardInterrupt('f')\n"
        "class E(BaseException):\n    pass\nE.__name__ = S('E')\n"
        "class D(dict):\n    def items(self):\n        raise E()\nD(a=1)",
        "RUNTIME_ERROR",
    ),
    (
        "result_whose_encoding_raises_system_exit",
        "class D(dict):\n    def items(self):\n        raise SystemExit(3)\nD(a=1)",
        "RUNTIME_ERROR",
    ),
    (
        "result_whose_encoding_raises_its_own_base_exception",
        "class B(BaseException):\n    pass\nclass D(dict):\n    def items(self):\n"
        "        raise B()\nD(a=1)",
        "RUNTIME_ERROR",
    ),
)


@pytest.mark.parametrize(("code", "expected"), CRASHES)
async def test_odd_exceptions_are_still_reported(
    sec_gateway: Gateway, code: str, expected: str
) -> None:
    """Exceptions the guest shaped to make formatting fail end as a result, not a crash."""
    out = await attempt(sec_gateway, code)
    assert error_type(out) == expected, out


async def test_a_results_class_name_is_cut_whatever_its_type(sec_gateway: Gateway) -> None:
    """The note about a result that is not JSON names its class, cut at 100 characters; a
    `__name__` that is a `str` subclass cut itself to 62 MB, which went to the host in one
    `done` line (host RSS +160 MB a run: outside attack 119)."""
    code = (
        "class S(str):\n    def __getitem__(self, k):\n        return 'N' * 30_000_000\n"
        "class D(dict):\n    def items(self):\n        raise ValueError('no')\n"
        "D.__name__ = S('Dname')\nD(a=1)"
    )
    out = await attempt(sec_gateway, code)
    assert out["ok"] and out["result"] == "{'a': 1}", str(out)[:500]
    assert out["logs"] == ["note: the result (Dname) is not JSON-serialisable; returned its repr"]


async def test_asyncio_debug_mode_runs(sec_gateway: Gateway) -> None:
    code = (
        "import asyncio\nasync def main():\n    await asyncio.sleep(0)\n    return 3\n"
        "[asyncio.run(main(), debug=True), asyncio.iscoroutinefunction(main)]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == [3, True], out


STRAY_ERRORS = (
    (
        "class A:\n    def __del__(self):\n        raise ValueError('boom in del')\n"
        "a = A()\ndel a\nprint('after')",
        "Exception ignored in a finalizer: ValueError: boom in del\nafter\n",
    ),
    (
        "class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n"
        "class A:\n    def __repr__(self):\n        return 'r' * 10**6\n"
        "    def __del__(self):\n        raise E()\na = A()\ndel a",
        "Exception ignored in a finalizer: E: (the exception's message could not be shown)\n",
    ),
    (
        "class A:\n    def __del__(self):\n        raise ValueError('x' * 100_000)\na = A()\ndel a",
        f"Exception ignored in a finalizer: ValueError: {'x' * 500}\n",
    ),
    (
        "import asyncio\nasync def boom():\n    raise ValueError('never awaited')\n"
        "async def main():\n    asyncio.get_running_loop().create_task(boom())\n"
        "    await asyncio.sleep(0.01)\nasyncio.run(main())",
        "Task exception was never retrieved\n",
    ),
    (
        # asyncio named the callback by its code object, which the audit hook refuses in a
        # library frame: the run ended with an error no code could catch (attack 127)
        "import asyncio\nasync def main():\n    def cb():\n"
        "        raise ValueError('never awaited')\n"
        "    asyncio.get_running_loop().call_soon(cb)\n    await asyncio.sleep(0.01)\n"
        "    return 'finished'\nasyncio.run(main())",
        "Exception in callback main.<locals>.cb()\n",
    ),
)


@pytest.mark.parametrize(("code", "shown"), STRAY_ERRORS)
async def test_errors_no_run_catches_are_one_line_of_the_guests_own(
    sec_gateway: Gateway, code: str, shown: str
) -> None:
    """What a `__del__` or an event-loop task raised was shown as the audit hook's refusal
    of CPython's hook, with the worker's install path ("Exception ignored in audit hook",
    "--- Logging error ---"): now the exception's type and message, cut, no traceback."""
    out = await attempt(sec_gateway, code)
    assert out["ok"], out
    assert out["stdout"].startswith(shown) and "audit" not in out["stdout"], out["stdout"][:300]
    assert "Logging error" not in out["stdout"] and "mcp_code_mode" not in out["stdout"]
    if "asyncio" in code:
        assert "ValueError: never awaited\n" in out["stdout"], out["stdout"]


async def test_a_warning_is_one_line_without_the_workers_source(sec_gateway: Gateway) -> None:
    """A coroutine never awaited, dropped by the worker's frame, printed that frame's file
    (the install path) and its source line through `warnings` (outside attack 127)."""
    out = await attempt(sec_gateway, "async def f():\n    pass\nraise ValueError(f())")
    assert out["error"]["type"] == "RUNTIME_ERROR", out
    assert out["stdout"] == "RuntimeWarning: coroutine 'f' was never awaited\n", out["stdout"]


async def test_singledispatch_registry_is_a_read_only_view(sec_gateway: Gateway) -> None:
    """`singledispatch(f).registry` was a raw mapping proxy, which hands its dict to a
    reflected `__eq__` of a guest `dict` subclass: dispatch could be rewritten (attack 127)."""
    code = (
        "import functools\nclass G(dict):\n    got = None\n    def __eq__(s, o):\n"
        "        G.got = o\n        return True\n    __hash__ = None\n"
        "@functools.singledispatch\ndef f(x):\n    return 'base'\n"
        "f.registry == G()\ngetattr(f, 'registry') == G()\n"
        "G.got[int] = lambda x: 'injected'  # a copy, at most\n"
        "[f(1), int in f.registry, object in f.registry]"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == ["base", False, True], out


async def test_file_digest_hands_out_no_memoryview(sec_gateway: Gateway) -> None:
    """`hashlib.file_digest` gave the guest's `update` a real `memoryview`, a builtin the
    guest's view leaves out (outside attack 127)."""
    code = (
        "import hashlib\nclass F:\n    def readable(self):\n        return True\n"
        "    def readinto(self, buf):\n        return 0\n"
        "try:\n    hashlib.file_digest(F(), 'sha256')\nexcept ValueError as e:\n    r = str(e)\nr"
    )
    out = await attempt(sec_gateway, code)
    assert out["result"] == "hashlib.file_digest() is not allowed in the sandbox", out


async def test_the_finalizer_hook_failing_prints_nothing_of_the_sandboxs(
    sec_gateway: Gateway,
) -> None:
    """A `__del__` raising with almost no stack left made the worker's own unraisable hook
    fail, and CPython's fallback printed it with the install path and an address (outside
    attack 125): it now writes its line or nothing."""
    code = (
        "class D:\n    def __del__(self):\n        raise ValueError('v')\n"
        "def g(n):\n    if n:\n        return g(n - 1)\n    d = D()\n    del d\n"
        "def deepest():\n    n = 0\n    while True:\n        try:\n            g(n)\n"
        "        except RecursionError:\n            return n\n        n += 50\n"
        "top = deepest()\n"
        "for m in range(0, 60):\n    try:\n        g(top - m)\n    except RecursionError:\n"
        "        pass\n'end'"
    )
    out = await attempt(sec_gateway, code)
    assert out["ok"] and out["result"] == "end", out
    assert "Exception ignored in a finalizer: ValueError: v" in out["stdout"], out["stdout"][:300]
    for leak in ("unraisablehook", "stray_errors", "mcp_code_mode", " at 0x"):
        assert leak not in out["stdout"], out["stdout"][:2000]


async def test_asyncio_debug_mode_records_no_worker_frames(sec_gateway: Gateway) -> None:
    """Debug mode recorded where each task was made (the worker's frames, with lines of
    its source files the loaders read where the guest may not open them) and printed them
    (outside attack 125): it is kept off; code that turns it on runs as without it."""
    code = (
        "import asyncio\nasync def f():\n    return 1\nasync def main():\n"
        "    loop = asyncio.get_running_loop()\n    loop.set_debug(True)\n"
        "    t = asyncio.ensure_future(f())\n    where = repr(t)\n    await t\n"
        "    return [where, loop.get_debug()]\nasyncio.run(main(), debug=True)"
    )
    out = await attempt(sec_gateway, code)
    assert out["ok"], out
    where, debug = out["result"]
    assert "created at" not in where and debug is False, out["result"]

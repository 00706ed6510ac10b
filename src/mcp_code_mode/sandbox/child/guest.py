"""The names guest code sees (contract §4): `tools`, `call_tool`, `call_tools`, `log`, ...

Runs inside the worker process. Stdlib only. Every tool call and discovery query
is a request on the pipe to the host; the guest blocks until the reply arrives.

Run-time guards live here too (`install_guards`, the importer, `guest_getattr`): they
close the routes by which code the policy never saw reaches the real builtins:
`getattr(str, 'format')` (fields that walk attributes), string annotations evaluated by
`typing` with a globals dict that lacks `__builtins__`, `__import__` reached through such
text, and private attributes of objects that are not the guest's own. They are a second
language-level layer, not the boundary: the OS layers of the worker are.
"""

from __future__ import annotations

import builtins
import difflib
import importlib
import math
import sys
import time
import types
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mcp_code_mode.sandbox.child.guest_api import GUEST_API, HOST_CALLS, REQUIRED, GuestFunction

if TYPE_CHECKING:
    from mcp_code_mode.sandbox.protocol import ErrorCode

__all__ = [
    "ALWAYS_IMPORTABLE",
    "BLOCKED_ATTRIBUTES",
    "GUEST_FUNCTIONS",
    "GUEST_MODULE",
    "GUEST_ONLY_DUNDERS",
    "HOST_CALLS",
    "LAZY_HELPERS",
    "PRIVATE_OK",
    "PROGRESS_EVERY_S",
    "REFUSED_DUNDERS",
    "Fatal",
    "GuestIndex",
    "GuestRuntime",
    "ImportRefused",
    "ModuleView",
    "Submitted",
    "ToolError",
    "freeze_index",
    "guarded_cached_property",
    "guarded_names",
    "guest_getattr",
    "install_guards",
]

GUEST_FUNCTIONS = tuple(f.name for f in GUEST_API)
"""Every function of the guest API: a method of `GuestRuntime` of the same name, or, for a
plain query, one `GuestRuntime.namespace` builds from its declaration."""

GUEST_MODULE = "__main__"
"""The guest's module name: `if __name__ == "__main__":` runs, classes say `__main__`."""

# Dunders that reach frames, code, globals, builtins, subclasses, raw attribute access or
# pickling hooks. Every other dunder (`__name__`, `__class__`, `__init__`, `__cause__`,
# `__doc__`, ...) is an ordinary read that reaches nothing new.
REFUSED_DUNDERS = frozenset(
    [
        "__globals__",
        "__code__",
        "__builtins__",
        "__subclasses__",
        "__getattribute__",
        "__setattr__",
        "__delattr__",
        "__reduce__",
        "__reduce_ex__",
        "__self__",
        "__func__",
        "__loader__",
        "__spec__",
        "__import__",
        "__defaults__",
        "__kwdefaults__",
        "__objclass__",
        "__getstate__",
        "__setstate__",
        "__class_getitem__",
        "__path__",
        "__file__",
        "__cached__",
        "__traceback__",
        "__weakref__",
    ]
)
# Read like private attributes: fine on the guest's own objects, classes and functions
# (`self.__dict__`, `inc.__closure__`, `Item.__mro__`), refused on everything else (a
# builtin class's `__dict__` holds its descriptors; a library closure holds the library's
# internals; `().__class__.__base__` is the first step of the classic escape).
GUEST_ONLY_DUNDERS = frozenset(["__dict__", "__closure__", "__mro__", "__bases__", "__base__"])
# Private names any object may show: namedtuple's public API starts with `_`.
PRIVATE_OK = frozenset(["_asdict", "_replace", "_fields", "_make", "_field_defaults"])
# Imported whatever MCP_CODE_ALLOWED_IMPORTS says: a compiler directive, and two modules
# ordinary code expects that reach nothing the OS layers do not hold (`operator`'s
# attribute getters are blocked by name like everywhere else).
ALWAYS_IMPORTABLE = frozenset(["__future__", "copy", "operator"])

Requester = Callable[[dict[str, Any]], list[dict[str, Any]]]

PROGRESS_EVERY_S = 0.1  # progress() goes to the host at most this often (the last one always)
_PROGRESS_MESSAGE_CHARS = 200

# Attributes that lead from harmless objects to frames, code, modules or processes.
# The policy rejects them as literals; `getattr` & co. reject them as strings.
BLOCKED_ATTRIBUTES = frozenset(
    [
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "tb_frame",
        "tb_next",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "co_code",
        "mro",
        "os",
        "sys",
        "builtins",
        "subprocess",
        "create_subprocess_exec",
        "create_subprocess_shell",
        "open_connection",
        "open_unix_connection",
        "start_server",
        "start_unix_server",
        "subprocess_exec",
        "subprocess_shell",
        "create_connection",
        "create_server",
        "create_unix_connection",
        "create_unix_server",
        "create_datagram_endpoint",
        "connect_read_pipe",
        "connect_write_pipe",
        "run_in_executor",
        "to_thread",
        "add_reader",
        "add_writer",
        "sock_connect",
        "Formatter",  # string.Formatter().get_field resolves "0.os" with the real getattr
        "get_field",
        "get_value",
        "vformat",
        "format_field",
        "get_type_hints",  # evaluates string annotations with the real builtins
        "ForwardRef",
        "attrgetter",  # operator's getters resolve dotted names with the real getattr
        "methodcaller",
        "__forward_code__",  # a code object compiled from a string the policy never saw
        "cell_contents",  # what a closure holds: a library closure holds the library
    ]
)
# Helpers that allowed modules import lazily; loaded ahead so the import succeeds in a worker.
LAZY_HELPERS = ("_strptime", "calendar", "locale", "encodings.idna", "unicodedata", "time")
_REMOVED_BUILTINS = (
    "open",
    "exec",
    "eval",
    "compile",
    "__import__",
    "breakpoint",
    "input",
    "help",
    "exit",
    "quit",
    "globals",
    "locals",
    "vars",
    "memoryview",
)


class ToolError(Exception):
    """A failed tool call; catchable. Has `.server`, `.tool` and `.message`."""

    def __init__(self, server: str, tool: str, message: str) -> None:
        super().__init__(f"{server}.{tool}: {message}" if tool else f"{server}: {message}")
        self.server = server
        self.tool = tool
        self.message = message


class ImportRefused(ImportError):
    """An import outside the allowlist at run time; catchable as ImportError, and reported
    as POLICY_VIOLATION (with its line) when the guest does not catch it."""


class _UnknownName(ToolError, AttributeError):
    """An unknown server or tool: a ToolError for callers, an AttributeError for hasattr()."""


class Fatal(BaseException):
    """Ends the run with a given error type; the worker reports it even if guest code catches it."""

    def __init__(self, error_type: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_type: ErrorCode = error_type
        self.message = message


class Submitted(BaseException):
    """Raised by `SUBMIT(**fields)` (interpreter sessions only): ends the snippet with output."""

    def __init__(self, fields: dict[str, Any]) -> None:
        super().__init__("SUBMIT")
        self.fields = fields


def _submit(**fields: Any) -> None:
    raise Submitted(fields)


def _is_blocked(name: object) -> bool:
    """Refused on any object: the reaching dunders and the blocked attributes."""
    return isinstance(name, str) and (name in REFUSED_DUNDERS or name in BLOCKED_ATTRIBUTES)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not _is_dunder(name) and name not in PRIVATE_OK


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _is_guest_object(obj: Any) -> bool:
    """The guest's own: a function it defined (its globals are the guest's namespace), a
    method of one, an instance of a class it defined, or such a class."""
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if isinstance(obj, types.FunctionType):
        main = sys.modules.get(GUEST_MODULE)
        return main is not None and obj.__globals__ is getattr(main, "__dict__", None)
    cls = obj if isinstance(obj, type) else type(obj)
    # `__module__` of a class cannot be set by the guest (`_safe_setattr`, the policy).
    return getattr(cls, "__module__", None) == GUEST_MODULE and not issubclass(cls, _Frozen)


def _refusal(obj: Any, name: str) -> str | None:
    """Why guest code may not read `obj.<name>`, or None when it may."""
    if _is_identifier_of(obj, name):
        return None
    if _is_blocked(name):
        return f"access to attribute {name!r} is not allowed"
    if (_is_private(name) or name in GUEST_ONLY_DUNDERS) and not _is_guest_object(obj):
        return (
            f"access to private attribute {name!r} of a {type(obj).__name__} object is not "
            "allowed (private attributes of your own classes are fine)"
        )
    return None


def guest_getattr(obj: Any, name: str, *default: Any) -> Any:
    """`getattr` for guest code, and what `obj._x` in guest source compiles to.

    `str.format` / `format_map` come back guarded: their fields may not walk attributes
    or items, which would reach anything through the real `getattr`.
    """
    reason = _refusal(obj, name) if isinstance(name, str) else None
    if reason is not None:
        if default:
            return default[0]
        raise AttributeError(reason)
    value = getattr(obj, name, *default)
    if name in ("format", "format_map") and _is_str_or_kind(obj):
        return _guarded_format(obj, name)
    return value


def _is_str_or_kind(obj: Any) -> bool:
    """A str, or str or a subclass of it (whose `format` is str's own)."""
    return isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))


def _guarded_format(obj: Any, name: str) -> Callable[..., str]:
    unbound = isinstance(obj, type)

    def call(*args: Any, **kwargs: Any) -> str:
        template, rest = (args[0], args[1:]) if unbound else (obj, args)
        if not isinstance(template, str):
            raise TypeError(f"str.{name}() needs a str")
        _check_format(template)
        method = getattr(template, name)
        return str(method(*rest, **kwargs))

    return call


def _guarded_dataclass(dataclass: Callable[..., Any]) -> Callable[..., Any]:
    """`dataclasses.dataclass` for guest classes: it compiles source text from the field
    names, with the globals of `sys.modules[cls.__module__]` (the real builtins when that
    module does not exist), so the names must be identifiers and the class the guest's."""

    def check(cls: Any) -> None:
        if not isinstance(cls, type):
            return
        if getattr(cls, "__module__", None) != GUEST_MODULE:
            raise TypeError("dataclass() takes classes defined by this code only")
        import inspect  # the guest never gets this module; the guard only reads annotations

        names = inspect.get_annotations(cls)
        bad = [n for n in names if not (isinstance(n, str) and n.isidentifier())]
        if bad:
            raise TypeError(f"dataclass field names must be identifiers, not {bad[0]!r}")

    def guarded(cls: Any = None, /, **options: Any) -> Any:
        if cls is None:

            def wrap(inner: Any) -> Any:
                check(inner)
                return dataclass(inner, **options)

            return wrap
        check(cls)
        return dataclass(cls, **options)

    guarded.__name__ = guarded.__qualname__ = "dataclass"
    guarded.__doc__ = dataclass.__doc__
    return guarded


def guarded_cached_property(base: type) -> type:
    """`functools.cached_property` for the guest's own objects only: its `__get__` reads
    `instance.__dict__[attrname]`, so on a builtin type (`object`) with an attrname the
    guest chose it would hand out `object.__getattribute__`, a getattr with no guard."""

    class cached_property(base):  # type: ignore[misc]
        def __get__(self, instance: Any, owner: Any = None) -> Any:
            if instance is not None and not _is_guest_object(instance):
                raise TypeError("cached_property works on instances of your own classes only")
            return super().__get__(instance, owner)

    cached_property.__module__ = base.__module__
    cached_property.__doc__ = base.__doc__
    return cached_property


def _outside_brackets(field: str) -> str:
    """The parts of a field name outside `[...]`: `0[a.b].c` -> `0.c` (items may hold dots)."""
    out, depth = [], 0
    for char in field:
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _check_format(template: str, depth: int = 0) -> None:
    import string

    for _, field, spec, _ in string.Formatter().parse(template):
        if field is not None and "." in _outside_brackets(field):
            raise ValueError(
                f"format field {{{field}}} looks up an attribute, which is not allowed "
                "here; compute the value first, or use an f-string"
            )
        if spec and depth < 2:
            _check_format(spec, depth + 1)


def _is_identifier_of(obj: Any, name: object) -> bool:
    """A server of `tools` or a tool of `tools.<server>`: `_2fa` and `format` are fine there."""
    if not isinstance(name, str) or name in GUEST_ONLY_DUNDERS:
        return False  # `__dict__` & co. find the object's own, not a server or tool so named
    if isinstance(obj, _Tools):
        return name in obj.__dict__.get(_INDEX, ())
    return isinstance(obj, _Server) and name in obj._tools


def _library_getattr(obj: Any, name: str, *default: Any) -> Any:
    """`getattr` for stdlib code that reads names the guest chose (`functools.wraps`):
    the guard's, except that an object's `__dict__` (its attributes, not its module's
    globals) may be read, as `update_wrapper` does on every wrapper, and the guest's own
    objects may have attributes named like modules (a dataclass field `os`)."""
    if name == "__dict__":
        return getattr(obj, name, *default)
    if isinstance(name, str) and name not in REFUSED_DUNDERS and _is_guest_object(obj):
        return getattr(obj, name, *default)  # a field may be called `os` on the guest's class
    return guest_getattr(obj, name, *default)


def guarded_names() -> dict[str, Callable[..., Any]]:
    """The guarded builtins by name, for stdlib modules that apply the guest's names."""
    return {
        "getattr": _library_getattr,
        "setattr": _safe_setattr,
        "hasattr": _safe_hasattr,
        "delattr": _safe_delattr,
    }


def _safe_hasattr(obj: Any, name: str) -> bool:
    return (not isinstance(name, str) or _refusal(obj, name) is None) and hasattr(obj, name)


def _safe_setattr(obj: Any, name: str, value: Any) -> None:
    relabel = name == "__module__" and isinstance(obj, type)
    if _is_blocked(name) or relabel or name in ("__dict__", "__class__"):
        raise AttributeError(f"setting attribute {name!r} is not allowed")
    setattr(obj, name, value)


def _safe_delattr(obj: Any, name: str) -> None:
    if _is_blocked(name):
        raise AttributeError(f"deleting attribute {name!r} is not allowed")
    delattr(obj, name)


def _module_view_class(module: Any, allowed: frozenset[str], private: bool) -> type:
    """A view class of its own per module: the module is held in closures, not in a slot
    or attribute a guest could read (`type(view)._module` would hand out the real one)."""

    def getattr_(self: Any, name: str) -> Any:
        hidden = _is_blocked(name) or name in GUEST_ONLY_DUNDERS
        if hidden or (not private and _is_private(name)):
            raise AttributeError(f"access to attribute {name!r} is not allowed")
        value = getattr(module, name)
        if module.__name__ == "dataclasses" and name == "dataclass":
            return _guarded_dataclass(value)
        if isinstance(value, type(builtins)):
            root = value.__name__.partition(".")[0]
            if root not in allowed and value.__name__ not in LAZY_HELPERS:
                raise AttributeError(
                    f"{module.__name__}.{name} is the module {value.__name__!r}, "
                    "which is not allowed"
                )
            return ModuleView(value, allowed)
        return value

    def setattr_(self: Any, name: str, value: Any) -> None:
        if _is_blocked(name) or _is_private(name):
            raise AttributeError(f"setting attribute {name!r} is not allowed")
        setattr(module, name, value)

    def dir_(self: Any) -> Iterable[str]:
        return [n for n in dir(module) if not _is_blocked(n) and not _is_private(n)]

    def repr_(self: Any) -> str:
        return f"<module {module.__name__!r}>"

    namespace = {
        "__slots__": (),
        "__getattr__": getattr_,
        "__setattr__": setattr_,
        "__dir__": dir_,
        "__repr__": repr_,
    }
    return type("module", (ModuleView,), namespace)


_VIEW_CLASSES: dict[tuple[str, bool], type] = {}


class ModuleView:
    """What `import x` gives guest code: a module's attributes, but never another module
    outside the allowlist (`enum.bltns` is builtins, `dataclasses.inspect` reaches frames).

    Allowed submodules come back as views too; blocked names are refused as anywhere else.
    `ModuleView(module, allowed)` builds an instance of a per-module subclass.
    """

    __slots__ = ()

    def __new__(cls, module: Any, allowed: frozenset[str], *, private: bool = False) -> Any:
        key = (module.__name__, private)
        view_class = _VIEW_CLASSES.get(key)
        if view_class is None:
            view_class = _VIEW_CLASSES[key] = _module_view_class(module, allowed, private)
        return object.__new__(view_class)

    def __init__(self, module: Any, allowed: frozenset[str], *, private: bool = False) -> None:
        pass


class _Frozen:
    """Guest code cannot change `tools` or a server: the policy trusts what their names hold."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self!r} cannot be changed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{self!r} cannot be changed")


_Bind = Callable[[str, str], Callable[..., Any]]
"""Makes the callable of one tool from its server's and its own original names."""

GuestIndex = Mapping[str, Mapping[str, Any]]
"""A guest index as workers keep it: read-only all the way down (see `freeze_index`)."""

# Where `tools` and its servers keep what they make their attributes from: keys no attribute
# name can spell, and private to guest code (these objects are not the guest's own).
_BIND = "_ bind"
_INDEX = "_ index"


def freeze_index(servers: Mapping[str, Any]) -> GuestIndex:
    """`servers` (server identifier -> {"name", "tools": {tool id: name}, "error"?}) as
    read-only mappings: a worker keeps its index from run to run, so no run may change it."""
    return types.MappingProxyType(
        {
            ident: types.MappingProxyType(
                {**spec, "tools": types.MappingProxyType(dict(spec.get("tools", {})))}
            )
            for ident, spec in servers.items()
        }
    )


def _refuse_reinit(obj: _Frozen) -> None:
    """`tools.__class__.__init__(tools, ...)` would change what the policy trusts."""
    if _BIND in obj.__dict__:
        raise AttributeError(f"{type(obj).__name__} objects cannot be changed")


class _Server(_Frozen):
    """`tools.<server>`: one attribute per tool, each made when it is first read."""

    _name: str
    _error: str | None
    _tools: Mapping[str, str]

    def __init__(self, bind: _Bind, spec: Mapping[str, Any]) -> None:
        _refuse_reinit(self)
        name: str = spec["name"]
        tools: Mapping[str, str] = types.MappingProxyType(spec.get("tools", {}))
        self.__dict__[_BIND] = bind
        # A tool named like an attribute of this class would be hidden by it: made now.
        for tool_id in _SERVER_ATTRIBUTES:
            if tool_id in tools:
                self.__dict__[tool_id] = bind(name, tools[tool_id])
        # Set last: a tool whose identifier is one of these stays reachable by call_tool().
        self.__dict__.update(_name=name, _error=spec.get("error"), _tools=tools)

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__
        tools = state.get("_tools")
        if tools is not None and name in tools:
            tool = state[name] = state[_BIND](state["_name"], tools[name])
            return tool
        if name.startswith("_"):
            raise AttributeError(name)
        if self._error:
            raise _UnknownName(self._name, name, self._error)
        raise _UnknownName(self._name, name, f"no tool {name!r}{_closest(name, self._tools)}")

    def __dir__(self) -> Iterable[str]:
        return list(self._tools)

    def __repr__(self) -> str:
        return f"<tools.{self._name}: {', '.join(self._tools) or 'no tools'}>"


class _Tools(_Frozen):
    """`tools`: one attribute per server, each made when it is first read.

    Nothing is made for the servers and tools a run does not use, so `tools` costs next to
    nothing whatever the size of the catalog.
    """

    _names: list[str]

    def __init__(self, bind: _Bind, index: GuestIndex) -> None:
        _refuse_reinit(self)
        self.__dict__[_BIND] = bind
        self.__dict__[_INDEX] = index
        # A server named like an attribute of this class would be hidden by it: made now.
        for ident in _TOOLS_ATTRIBUTES:
            if ident in index:
                self.__dict__[ident] = _Server(bind, index[ident])
        self.__dict__["_names"] = list(index)

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__
        index = state.get(_INDEX)
        if index is not None and name in index:
            server = state[name] = _Server(state[_BIND], index[name])
            return server
        if name.startswith("_"):
            raise AttributeError(name)
        raise _UnknownName(name, "", f"unknown server{_closest(name, self._names)}")

    def __dir__(self) -> Iterable[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"<tools: {', '.join(self._names)}>"


# What ordinary lookup finds on the class before `__getattr__` is asked.
_SERVER_ATTRIBUTES = tuple(dir(_Server))
_TOOLS_ATTRIBUTES = tuple(dir(_Tools))


def _closest(name: str, candidates: Iterable[str]) -> str:
    options = list(candidates)
    close = difflib.get_close_matches(name, options, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"{hint} (available: {', '.join(options) or 'none'})"


class GuestRuntime:
    """Builds a fresh guest namespace for one run and carries its requests to the host."""

    def __init__(self, request: Requester, allowed_imports: Iterable[str]) -> None:
        self._request = request
        self.allowed_imports = frozenset(allowed_imports)
        self.logs: list[str] = []
        self.on_output: Callable[[int], None] = lambda n: None
        self.on_log: Callable[[str], None] = lambda line: None
        self._progress_at = -math.inf  # when progress() last reached the host

    def namespace(
        self, index: GuestIndex, input_value: Any, *, session: bool = False
    ) -> dict[str, Any]:
        """The globals of a run: restricted builtins plus the contract §4 names.

        A session (dspy CodeInterpreter) namespace also has `SUBMIT(**fields)`.
        """
        safe = self.safe_builtins()
        extra = {"SUBMIT": _submit} if session else {}
        return {
            **extra,
            "__builtins__": safe,
            "__name__": GUEST_MODULE,
            "tools": _Tools(self.tool_function, index),
            **{f.name: self._function(f) for f in GUEST_API},
            "input": input_value,
            "ToolError": ToolError,
        }

    def safe_builtins(self) -> dict[str, Any]:
        """The builtins guest code runs with (and string annotations are evaluated with)."""
        safe = _KEPT_BUILTINS.copy()
        safe.update(
            __import__=self._import,
            getattr=guest_getattr,
            hasattr=_safe_hasattr,
            setattr=_safe_setattr,
            delattr=_safe_delattr,
            _mcp_getattr_=guest_getattr,
        )
        return safe

    def tool_function(self, server: str, tool: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if args:
                raise TypeError(f"{tool}() takes keyword arguments only, e.g. {tool}(name=...)")
            return self.call_tool(server, tool, kwargs)

        call.__name__ = call.__qualname__ = tool
        return call

    def call_tool(self, server: str, tool: str, args: dict[str, Any] | None = None) -> Any:
        """Call one upstream tool by its original names; raises ToolError on failure."""
        outcome = self._request({"op": "call", "calls": [_spec(server, tool, args)]})[0]
        if not outcome["ok"]:
            raise ToolError(server, tool, outcome.get("error", "failed"))
        return outcome.get("value")

    def call_tools(self, calls: Iterable[Any]) -> list[Any]:
        """Run `(server, tool, args)` calls concurrently; a failed one yields its ToolError."""
        specs = [_spec(*_unpack(c)) for c in calls]
        if not specs:
            return []
        outcomes = self._request({"op": "call", "calls": specs})
        return [
            o.get("value") if o["ok"] else ToolError(s["server"], s["tool"], o.get("error", ""))
            for s, o in zip(specs, outcomes, strict=True)
        ]

    def _function(self, spec: GuestFunction) -> Callable[..., Any]:
        """The runtime's method of that name, else a query built from the declaration."""
        method = getattr(type(self), spec.name, None)
        if method is not None:
            return getattr(self, spec.name)  # type: ignore[no-any-return]
        assert spec.query is not None, f"{spec.name}: neither a method nor a query"
        kind, params = spec.query, spec.params

        def query(*args: Any, **kwargs: Any) -> Any:
            return self._query(kind, _bind(spec.name, params, args, kwargs))

        query.__name__ = query.__qualname__ = spec.name
        return query

    def log(self, *values: Any) -> None:
        """Append one line to `logs`, values joined with spaces as `print` does."""
        line = " ".join(str(v) for v in values)
        self.on_output(len(line) + 1)  # a line costs its newline: empty lines are not free
        self.logs.append(line)
        self.on_log(line)

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress to a client that asked for it (MCP progress notifications); a
        no-op otherwise. Reports closer together than `PROGRESS_EVERY_S` are skipped, except
        the one where `done` reaches `total`."""
        for name, value in (("done", done), ("total", total)):
            if (value is not None or name == "done") and not _is_number(value):
                raise TypeError(f"progress(): {name} must be a number, not {value!r}")
        if message is not None and not isinstance(message, str):
            raise TypeError(f"progress(): message must be a str, not {type(message).__name__}")
        now = time.monotonic()
        final = total is not None and done >= total
        if now - self._progress_at < PROGRESS_EVERY_S and not final:
            return
        self._progress_at = now
        text = None if message is None else message[:_PROGRESS_MESSAGE_CHARS]
        self._query("progress", {"done": done, "total": total, "message": text})

    def _query(self, kind: str, args: dict[str, Any]) -> Any:
        outcome = self._request({"op": "query", "kind": kind, "args": args})[0]
        if not outcome["ok"]:
            raise ToolError(str(args.get("server") or "gateway"), kind, outcome.get("error", ""))
        return outcome.get("value")

    def _import(
        self,
        name: str,
        globals: Any = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> Any:
        root = name.partition(".")[0]
        if level == 0 and name in LAZY_HELPERS and name in sys.modules:
            # C code importing its helper lazily (datetime.strptime -> _strptime) calls the
            # current frame's `__import__`, ours. It gets a view that shows the helper's
            # private functions, but still no module outside the allowlist.
            return ModuleView(sys.modules[name], self.allowed_imports, private=True)
        allowed = self.allowed_imports | ALWAYS_IMPORTABLE
        if level != 0 or root not in allowed:
            raise ImportRefused(
                f"import of {name!r} is not allowed; allowed modules: "
                f"{', '.join(sorted(self.allowed_imports))} (extend with MCP_CODE_ALLOWED_IMPORTS)"
            )
        module = importlib.import_module(name)
        return ModuleView(module if fromlist else importlib.import_module(root), allowed)


_KEPT_BUILTINS = {k: v for k, v in vars(builtins).items() if k not in _REMOVED_BUILTINS}
"""The builtins every run keeps, taken once (in the zygote, before any worker is forked)."""

_GUARDS: list[bool] = []


def install_guards(safe_builtins: dict[str, Any]) -> None:
    """Make `typing` evaluate string annotations with the guest's builtins (once per process).

    `typing.get_type_hints` (called by `functools.singledispatch().register`, for one)
    evaluates annotation text with a globals dict that may lack `__builtins__` (an object
    without `__globals__` gets `{}`); `eval` then inserts the *real* builtins, so
    `x: "__import__('os')"` would reach `os`. Every evaluation goes through
    `ForwardRef._evaluate`, so its globals get the guest's builtins.
    """
    import typing

    if _GUARDS:
        return
    _GUARDS.append(True)
    evaluate = typing.ForwardRef._evaluate

    def guarded(self: Any, globalns: Any, localns: Any, *args: Any, **kwargs: Any) -> Any:
        scope = dict(globalns) if isinstance(globalns, dict) else {}
        scope["__builtins__"] = safe_builtins
        return evaluate(self, scope, localns, *args, **kwargs)

    typing.ForwardRef._evaluate = guarded  # type: ignore[method-assign]


def _is_number(value: Any) -> bool:
    """A finite int or float (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _bind(
    name: str, params: tuple[tuple[str, object], ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Arguments by parameter name, as Python would bind them (defaults filled in)."""
    names = [n for n, _ in params]
    if len(args) > len(names):
        raise TypeError(f"{name}() takes at most {len(names)} arguments ({len(args)} given)")
    bound = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
        if key in bound:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        bound[key] = value
    for key, default in params:
        if key not in bound:
            if default is REQUIRED:
                raise TypeError(f"{name}() missing required argument {key!r}")
            bound[key] = default
    return bound


def _unpack(call: Any) -> tuple[str, str, dict[str, Any] | None]:
    if isinstance(call, dict):
        return call["server"], call["tool"], call.get("args")
    if isinstance(call, list | tuple) and len(call) in (2, 3):
        return call[0], call[1], (call[2] if len(call) == 3 else None)
    raise TypeError("call_tools expects (server, tool, args) tuples")


def _spec(server: Any, tool: Any, args: Any) -> dict[str, Any]:
    if not isinstance(server, str) or not isinstance(tool, str):
        raise TypeError("server and tool must be strings (the original MCP names)")
    if args is not None and not isinstance(args, dict):
        raise TypeError(f"args for {server}.{tool} must be a dict, not {type(args).__name__}")
    return {"server": server, "tool": tool, "args": args or {}}

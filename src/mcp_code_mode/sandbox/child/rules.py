"""What guest code may not name: the rules the policy (in the server) and the run-time
guards (in the worker) share. Stdlib only; data, and the lazy helpers' preload."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types

__all__ = [
    "ALWAYS_IMPORTABLE",
    "BLOCKED_ATTRIBUTES",
    "CHECKED_READS",
    "C_BOUND_METHODS",
    "C_UNBOUND_METHODS",
    "GUARDED_READS",
    "GUEST_MODULE",
    "GUEST_ONLY_DUNDERS",
    "LAZY_HELPERS",
    "LAZY_PACKAGES",
    "MAX_NESTING",
    "PRIVATE_OK",
    "REFUSED_DUNDERS",
    "REMOVED_BUILTINS",
    "SHOWN_READS",
    "TOO_DEEP",
    "VIEWED_DUNDERS",
    "WRITER_DUNDERS",
    "lazy_helper",
    "lazy_modules",
    "preload_lazy_modules",
    "refused_component",
]

# The callables written in C, which hold no code, globals or closure to change: bound to
# an object, and unbound (the descriptors a class holds). Compared by `type(x) is`, never
# `isinstance` (a guest's `__class__` answers that).
C_BOUND_METHODS = (types.BuiltinMethodType, types.MethodWrapperType)
C_UNBOUND_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)

MAX_NESTING = 1000
"""How deep guest code's syntax tree may nest: the policy refuses deeper code (python3
compiles some 2,000 levels; the worker's rewrite, run with room for this many, stopped at
400-450 with a bare RecursionError, and Pyodide's parser overflowed its stack at 1,900:
outside attack 112)."""

TOO_DEEP = (
    f"the code is nested more than {MAX_NESTING} levels deep (split long expressions "
    "and deep nesting into statements)"
)

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
        "__getattr__",  # a library's, called directly, forwards with the real getattr
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
        # typing's forward references: the code compiled from a string the policy never
        # saw, the module whose globals it is evaluated in, and what it evaluated to there
        "__forward_code__",
        "__forward_module__",
        "__forward_value__",
    ]
)
# Read like private attributes: fine on the guest's own objects, classes and functions
# (`self.__dict__`, `inc.__closure__`, `Item.__mro__`), refused on everything else (a
# builtin class's `__dict__` holds its descriptors; a library closure holds the library's
# internals; `().__class__.__base__` is the first step of the classic escape).
GUEST_ONLY_DUNDERS = frozenset(["__dict__", "__closure__", "__mro__", "__bases__", "__base__"])
# Methods that write onto their first argument with plain stores, past `setattr`: read
# through the run-time check, so that a library's, read off its class, is applied only to
# an object guest code may change (`guards.guest_getattr`, outside attack 94).
WRITER_DUNDERS = frozenset(
    [
        *("__init__", "__set_name__", "__post_init__", "__set__", "__delete__"),
        *("__setitem__", "__delitem__"),
    ]
)
# Read through the run-time check, which hands out a library's as a read-only view: the
# annotations dict of `json.dumps` or `uuid.UUID` is the library's own.
VIEWED_DUNDERS = frozenset(["__annotations__"])
# Private names any object may show: namedtuple's public API starts with `_`.
PRIVATE_OK = frozenset(["_asdict", "_replace", "_fields", "_make", "_field_defaults"])
# Public names whose reads go through the run-time check all the same, allowed on the
# guest's own objects (and memoryviews) only: an AttributeError's `obj` is the object a
# failed lookup was made on, a library's own (outside attack 26).
CHECKED_READS = frozenset(["obj"])
# Public names whose values are mapping proxies of a library's own dict (a compiled pattern's
# group names, a dict view's dict, a `singledispatch` function's registry, attack 127): read
# through the run-time check, which hands a proxy out as a `read_only.ReadOnly` view (a
# proxy gives its dict away, attack 101).
SHOWN_READS = frozenset(["groupindex", "mapping", "registry"])
# Public names guest code reads only through a run-time guard, never with the real getattr:
# the checked reads, and str's format methods (handed out guarded: their fields may not walk
# attributes). Text libraries evaluate may not read them either (outside attack 67).
GUARDED_READS = CHECKED_READS | SHOWN_READS | {"format", "format_map"}
# Imported whatever MCP_CODE_ALLOWED_IMPORTS says: a compiler directive, and two modules
# ordinary code expects that reach nothing the OS layers do not hold (`operator`'s
# attribute getters are blocked by name like everywhere else).
ALWAYS_IMPORTABLE = frozenset(["__future__", "copy", "operator"])

# Modules the Python layer does not guard, added to the allowlist: each hands guest code the
# real interpreter (a real module, its globals, the real builtins and from them the
# worker's channel and signal setter), so with one of them only the OS layers hold. The
# OS modules grant their own events by design; the others resolve names the guest chose
# with the real getattr or `sys.modules` (outside attack 36). The server warns at start.
UNGUARDED_MODULES = {
    **dict.fromkeys(
        ["builtins", "sys", "os", "posix", "io", "socket", "subprocess", "ctypes", "signal"],
        "the interpreter or the OS itself",
    ),
    **dict.fromkeys(
        ["threading", "multiprocessing", "importlib", "pty", "resource", "mmap"], "the OS itself"
    ),
    "inspect": "`getmodule`, `getattr_static`: real modules and descriptors",
    "pickle": "a stream's globals and state are resolved and applied with the real getattr",
    "pkgutil": "`resolve_name` walks a dotted name with the real getattr",
    "pydoc": "`locate` walks a dotted name with the real getattr",
    "logging": "`logging.config` resolves `ext://` names with the real `__import__`",
    "unittest": "`unittest.mock.patch` resolves its target with the real getattr",
    "doctest": "`DocTestFinder.find` copies a real module's globals into a test's `globs`",
    "optparse": "`Values.read_module` imports any name and copies the module's attributes",
    "gettext": "`NullTranslations.install` writes into the real builtins",
}

# Modules beyond the default allowlist that outside attacks ran code against and the Python
# layer holds for (attack 38 each of these, attack 39 their library-made objects; `gc` and
# `faulthandler` with their refused functions, `contextlib`'s redirects and `shlex`'s
# `instream` blocked, `ipaddress`'s cached properties checked): any other module added to
# the allowlist, the server says, has not been checked, and what guest code reaches through
# it is for the OS layers to hold.
CHECKED_EXTRAS = frozenset(
    [
        "time",
        "gc",
        "faulthandler",
        "contextlib",
        "struct",
        "binascii",
        "zlib",
        "heapq",
        "bisect",
        "secrets",
        "unicodedata",
        "graphlib",
        "numbers",
        "difflib",
        "shlex",
        "fnmatch",
        "html",
        "ipaddress",
        "tomllib",
    ]
)

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
        "ag_await",  # as `gi_yieldfrom` and `cr_await` (outside attack 60: it was not)
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
        # an importer's methods hand out any module by name (`BuiltinImporter`, one of the
        # classes outside attack 80 had singledispatch hand it: the real builtins)
        "load_module",
        "exec_module",
        "create_module",
        "cell_contents",  # what a closure holds: a library closure holds the library
        # contextlib's redirects read and set an attribute of the real `sys` named by a
        # class attribute a guest subclass chose (`_stream = "__dict__"`: outside attack 37)
        "redirect_stdout",
        "redirect_stderr",
        # shlex's stream: with none given, the worker's real `sys.stdin`, and past it the
        # `_io` classes (outside attack 39: `FileIO` re-initialised closed it)
        "instream",
        "findCaller",  # logging's frame walk, which names the worker's frames as text
        "extract_stack",  # asyncio.format_helpers' frame walk, likewise (outside attack 34)
        "add_signal_handler",  # the worker's SIGALRM is its soft time limit
        "remove_signal_handler",
        # asyncio's child watchers and the module of its file-descriptor transports: their
        # methods close descriptors and set signal handlers from their `self`'s state, any
        # object's when called unbound (outside attack 29: `os.close` of any descriptor)
        "AbstractChildWatcher",
        "SafeChildWatcher",
        "FastChildWatcher",
        "PidfdChildWatcher",
        "MultiLoopChildWatcher",
        "ThreadedChildWatcher",
        "get_child_watcher",
        "set_child_watcher",
        "unix_events",
        # event-loop methods that act on descriptor numbers a guest object's `fileno()`
        # gives (outside attack 30: `sock_sendfile` copied the output memfd into the host
        # channel with `os.sendfile`, past the worker's framing) or on the loop's selector
        "sock_sendfile",
        "sendfile",
        "sock_recv",  # these register the descriptor a guest socket names in the loop's epoll
        "sock_recv_into",
        "sock_recvfrom",
        "sock_recvfrom_into",
        "sock_sendall",
        "sock_sendto",
        "sock_accept",
        "connect_accepted_socket",
        "remove_reader",
        "remove_writer",
    ]
)


def refused_component(dotted: str) -> str | None:
    """The first part after the root of a dotted module name that no guest may import by
    name (private, or blocked everywhere: `asyncio.subprocess`, `re._parser`); None if
    there is none. `import a.b as c` reads `b` from `a` and, refused there, the
    interpreter looks `a.b` up in `sys.modules` itself (outside attack 27)."""
    for part in dotted.split(".")[1:]:
        if part.startswith("_") or part in BLOCKED_ATTRIBUTES or part in REFUSED_DUNDERS:
            return part
    return None


# Helpers that allowed modules import lazily; loaded ahead so the import succeeds in a worker.
LAZY_HELPERS = ("_strptime", "calendar", "locale", "unicodedata", "time")
# Packages whose every module is such a helper: `codecs.lookup` imports `encodings.<name>`
# on a codec's first use, which a worker cannot (outside attack 142: `b.decode("cp1252")`,
# `json.loads` of bytes with a BOM failed, and differently on each executor).
LAZY_PACKAGES = ("encodings",)


def lazy_helper(name: str) -> bool:
    """A module that allowed modules' C or library code imports lazily: loaded ahead."""
    root, dot, _ = name.partition(".")
    return name in LAZY_HELPERS or (dot == "." and root in LAZY_PACKAGES)


def lazy_modules() -> list[str]:
    """Every lazy helper by name (what a worker preloads), the packages' from their folders."""
    found = list(LAZY_HELPERS)
    for package in LAZY_PACKAGES:
        path = getattr(importlib.import_module(package), "__path__", [])
        found += [f"{package}.{module.name}" for module in pkgutil.iter_modules(path)]
    return found


def preload_lazy_modules() -> None:
    """Import every lazy helper; a package's module that does not import here (Windows'
    `encodings.mbcs`) is marked absent, so a later import fails as ImportError, never as a
    file the worker may not open (review 145: `b"".decode("ansi")`, LookupError on one
    executor, POLICY_VIOLATION on the other)."""
    for name in lazy_modules():
        try:
            importlib.import_module(name)
        except Exception:  # any failure: this helper is not there
            if name not in LAZY_HELPERS:
                sys.modules[name] = None  # type: ignore[assignment]


REMOVED_BUILTINS = (
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
    "__loader__",  # the builtins module's importer: `load_module("sys")` is the real sys
    "__spec__",
)

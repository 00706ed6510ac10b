"""The names guest code sees (contract §4): `tools`, `call_tool`, `call_tools`, `log`, ...

Runs inside the worker process. Stdlib only. Every tool call and discovery query
is a request on the pipe to the host; the guest blocks until the reply arrives.

The guest's view is assembled here from its parts: `tools` (`tools_view`), the guarded
builtins (`guards`), the allowlist importer and its module views (`module_view`).
"""

from __future__ import annotations

import builtins
import gc
import importlib
import math
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcp_code_mode.sandbox.child.guards import guest_getattr, safe_hasattr
from mcp_code_mode.sandbox.child.guest_api import GUEST_API, REQUIRED, GuestFunction
from mcp_code_mode.sandbox.child.module_view import ImportRefused, ModuleView
from mcp_code_mode.sandbox.child.outgoing import exact_json, pieces, refusal, refused_spec
from mcp_code_mode.sandbox.child.read_only import shown
from mcp_code_mode.sandbox.child.rules import (
    ALWAYS_IMPORTABLE,
    GUEST_MODULE,
    REMOVED_BUILTINS,
    lazy_helper,
    refused_component,
)
from mcp_code_mode.sandbox.child.scopes import MatchValues, SelfMatchingTypes
from mcp_code_mode.sandbox.child.tools_view import MADE, GuestIndex, ToolError, Tools
from mcp_code_mode.sandbox.child.writes import AttributeTarget, safe_delattr, safe_setattr
from mcp_code_mode.sandbox.protocol import MAX_NAME_CHARS, PROGRESS_MESSAGE_CHARS

if TYPE_CHECKING:
    from mcp_code_mode.sandbox.protocol import ErrorCode

__all__ = [
    "GUEST_FUNCTIONS",
    "PROGRESS_EVERY_S",
    "Fatal",
    "GuestRuntime",
    "ImportRefused",
    "Submitted",
]

GUEST_FUNCTIONS = tuple(f.name for f in GUEST_API)
"""Every function of the guest API: a method of `GuestRuntime` of the same name, or, for a
plain query, one `GuestRuntime.namespace` builds from its declaration."""

Requester = Callable[[dict[str, Any]], list[dict[str, Any]]]

PROGRESS_EVERY_S = 0.1  # progress() goes to the host at most this often (the last one always)


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


class GuestRuntime:
    """Builds a fresh guest namespace for one run and carries its requests to the host."""

    def __init__(
        self, request: Requester, allowed_imports: Iterable[str], max_call_bytes: int | None = None
    ) -> None:
        self._request = request
        self._max_call_bytes = max_call_bytes
        self._batches = 0  # numbers the pieces of each batch sent in several
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
            "tools": Tools(_plain(self.tool_function, "tool_function"), index, made=MADE),
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
            hasattr=safe_hasattr,
            setattr=safe_setattr,
            delattr=safe_delattr,
            _mcp_getattr_=guest_getattr,
            _mcp_target_=AttributeTarget,
            _mcp_builtins_=SelfMatchingTypes,
            _mcp_shown_=shown,
            _mcp_values_=MatchValues,  # a match's checked values (`rewrite.visit_Match`)
        )
        return safe

    def tool_function(self, server: str, tool: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if args:
                raise TypeError(  # the names its parameters have are in its docs
                    f"a tool takes keyword arguments only: get_tool_docs({server!r}, {tool!r}) "
                    "shows its parameters"
                )
            return self.call_tool(server, tool, kwargs)

        call.__name__ = call.__qualname__ = tool
        return call

    def call_tool(
        self, server: str, tool: str, args: dict[str, Any] | None = None, **named: Any
    ) -> Any:
        """Call one upstream tool by its original names; raises ToolError on failure."""
        if named:  # Python's own error named this class (a new user's first hour, M)
            raise TypeError(
                f"call_tool takes the tool's arguments as one dict: call_tool({server!r}, "
                f"{tool!r}, {{{', '.join(repr(str(n)[:40]) + ': ...' for n in list(named)[:3])}}})"
            )
        spec = self._sendable(_spec(server, tool, args))
        outcome = self._request({"op": "call", "calls": [spec]})[0]
        if not outcome["ok"]:
            raise ToolError(server, tool, outcome.get("error", "failed"))
        return outcome.get("value")

    def call_tools(self, calls: Iterable[Any]) -> list[Any]:
        """Run `(server, tool, args)` calls concurrently; a failed one yields its ToolError."""
        specs = [self._sendable(_spec(*_unpack(c))) for c in calls]
        self._batches += 1
        batch = {"batch": self._batches, "total": len(specs)}
        try:
            *held, last = pieces(specs)
        except ValueError:  # too long to send: the host judges its length by the call limit
            probe = refused_spec(specs[0], "not sent: its batch is too long")  # no arguments
            self._request({"op": "call", "calls": [probe], "more": True, **batch})
            raise
        if not held:  # one message: no batch to number
            batch = {}
        collecting = gc.isenabled()
        gc.disable()  # no finalizer of the run's may call a tool between two pieces
        try:
            for piece in held:  # the host answers with no results (protocol.CallRequest)
                self._request({"op": "call", "calls": piece, "more": True, **batch})
                batch.pop("total", None)  # admitted at the first piece
            outcomes = self._request({"op": "call", "calls": last, **batch}) if last else []
        finally:
            if collecting:
                gc.enable()
        return [
            o.get("value") if o["ok"] else ToolError(s["server"], s["tool"], o.get("error", ""))
            for s, o in zip(specs, outcomes, strict=True)
        ]

    def _sendable(self, spec: dict[str, Any]) -> dict[str, Any]:
        """`spec`, or in its place one that says why the host would refuse it, without its
        arguments: the host parses no arguments only to refuse them (outside attacks
        82-84), and still records the call (protocol.ToolCallSpec)."""
        why = self._over_limit(spec)
        return spec if why is None else refused_spec(spec, why)

    def _over_limit(self, spec: dict[str, Any]) -> str | None:
        limit = self._max_call_bytes
        try:  # what the checks walk and `encode` writes: exact built-in types (attack 87)
            spec["args"] = exact_json(spec["args"], limit)
        except ValueError as exc:
            return str(exc)
        return None if limit is None else refusal(spec["args"], limit)

    def _function(self, spec: GuestFunction) -> Callable[..., Any]:
        """The runtime's method of that name, else a query built from the declaration."""
        method = getattr(type(self), spec.name, None)
        if method is not None:
            return _plain(getattr(self, spec.name), spec.name)
        assert spec.query is not None, f"{spec.name}: neither a method nor a query"
        kind, params = spec.query, spec.params

        def query(*args: Any, **kwargs: Any) -> Any:
            return self._query(kind, _bind(spec.name, params, args, kwargs))

        query.__name__ = query.__qualname__ = spec.name
        return query

    def log(self, *values: Any) -> None:
        """Append one line to `logs`, values joined with spaces as `print` does."""
        line = " ".join(str(v) for v in values)
        # a line costs what it adds to the reply's `logs`: its quotes and a comma (charged 1,
        # 100,000 empty lines reached the host to be cut there: outside attack 88)
        self.on_output(len(line) + 3)
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
        text = None if message is None else message[:PROGRESS_MESSAGE_CHARS]
        self._query("progress", {"done": done, "total": total, "message": text})

    def _query(self, kind: str, args: dict[str, Any]) -> Any:
        # bounded as a call's are (a query of 14,000 long integers kept the host's offload
        # thread 1.2 s: attack 87); its text cut first, as the host reads 1,000 characters
        spec = {"args": {k: _clipped(v) for k, v in args.items()}}
        refused = self._over_limit(spec)
        if refused is not None:
            raise ToolError("gateway", kind, refused)
        args = spec["args"]
        outcome = self._request({"op": "query", "kind": kind, "args": args})[0]
        if not outcome["ok"]:
            raise ToolError("gateway", kind, outcome.get("error", ""))
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
        if level == 0 and lazy_helper(name) and sys.modules.get(name) is not None:
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
        if (part := refused_component(name)) is not None:
            raise ImportRefused(f"import of {name!r} is not allowed (its part {part!r})")
        return ModuleView(_load(name if fromlist else root, name), allowed)


def _load(wanted: str, name: str) -> Any:
    """`importlib.import_module(name)` (and `wanted`, the module the statement binds) with
    the collector off: this function is trusted for what an import does, whatever runs
    beneath it, and a collection there ran a guest's cycle's finalizer (a library callable
    that leaves no guest frame) under that trust (outside attack 40)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module(name)
        return importlib.import_module(wanted)
    finally:
        if enabled:
            gc.enable()


_PLAIN_DUNDERS = frozenset({"__name__", "__doc__", "__package__", "__build_class__", "__debug__"})
_KEPT_BUILTINS = {
    k: v
    for k, v in vars(builtins).items()
    if k not in REMOVED_BUILTINS and (not k.startswith("_") or k in _PLAIN_DUNDERS)
}
"""The builtins every run keeps, taken once (in the zygote, before any worker is forked):
CPython's own names, not what a platform added (Pyodide's `___EvalCodeResultException`,
a list its `eval_code` reads: outside attack 49)."""


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
    # the values the checks walk and `encode` writes: exact built-in types (attack 87)
    # a name past the limit is cut just past it, for the host to refuse (and record) as
    # it is: a 20 MB name was a 20 MB line for it to parse
    return {
        "server": str.__str__(server)[: MAX_NAME_CHARS + 1],
        "tool": str.__str__(tool)[: MAX_NAME_CHARS + 1],
        "args": args or {},
    }


def _clipped(value: Any) -> Any:
    """A query's text cut to `_QUERY_CHARS` (read through `str`'s own slicing)."""
    return str.__getitem__(value, slice(_QUERY_CHARS)) if isinstance(value, str) else value


_QUERY_CHARS = 4096  # of a query's text; the host reads the first 1,000


def _plain(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`method` as a plain function: what the guest holds must not lead to this runtime. A
    bound method carries `__self__`, which the stdlib follows without the guards
    (`copy.deepcopy` copies it and keeps the original in a memo the guest passed, outside
    attack 14); a function is copied as itself, and its closure is no attribute guest code
    may read."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return method(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call

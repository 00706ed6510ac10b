"""`tools` and `tools.<server>`: read-only views of the guest index, made lazily.

Nothing is made for the servers and tools a run does not use, so `tools` costs next to
nothing whatever the size of the catalog. Guest code cannot change them (`Frozen`): the
policy trusts what their names hold.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mcp_code_mode.sandbox.child.rules import GUEST_ONLY_DUNDERS

__all__ = [
    "MADE",
    "Frozen",
    "GuestIndex",
    "ToolError",
    "Tools",
    "UnknownName",
    "freeze_index",
    "is_identifier_of",
]


class ToolError(Exception):
    """A failed tool call; catchable. Has `.server`, `.tool` and `.message`."""

    def __init__(self, server: str, tool: str, message: str) -> None:
        super().__init__(f"{server}.{tool}: {message}" if tool else f"{server}: {message}")
        self.server = server
        self.tool = tool
        self.message = message


class UnknownName(ToolError, AttributeError):
    """An unknown server or tool: a ToolError for callers, an AttributeError for hasattr()."""


class Frozen:
    """Guest code cannot change `tools` or a server: the policy trusts what their names hold."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self!r} cannot be changed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{self!r} cannot be changed")

    # Copied as themselves: a copy would walk what they hold (the runtime's tool binding)
    # and keep the originals in a memo guest code passed (outside attack 14).
    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self


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


MADE = object()
"""What the runtime passes to make a view (`made=MADE`): guest code has no way to it, so it
cannot build a `_Server` of its own (with a dict subclass that says every name is a tool)
or run `__init__` on another object (which wrote its `__dict__`, outside attack 22)."""


def _refuse_reinit(obj: Frozen, made: object) -> None:
    """`tools.__class__.__init__(tools, ...)` would change what the policy trusts."""
    if made is not MADE or _BIND in obj.__dict__ or type(obj) not in (Tools, _Server):
        raise AttributeError(f"{type(obj).__name__} objects are made by the sandbox only")


def _refuse_foreign(obj: object, cls: type) -> None:
    """A view's lookup runs on the view itself only: on an object of a guest subclass, its
    `__dict__` property chose the index and the tools a `_Server` was made of, and a
    mapping that said every name was a tool switched the guards off (outside attack 69)."""
    if type(obj) is not cls:
        raise AttributeError(f"{cls.__name__}.__getattr__ reads the sandbox's own views only")


class _Server(Frozen):
    """`tools.<server>`: one attribute per tool, each made when it is first read."""

    _name: str
    _error: str | None
    _tools: Mapping[str, str]

    def __init__(self, bind: _Bind, spec: Mapping[str, Any], *, made: object = None) -> None:
        _refuse_reinit(self, made)
        name: str = spec["name"]
        tools: Mapping[str, str] = types.MappingProxyType(spec.get("tools", {}))
        self.__dict__[_BIND] = bind
        # A tool named like an attribute of this class would be hidden by it: made now.
        for tool_id in _SERVER_ATTRIBUTES:
            if tool_id in tools:
                self.__dict__[tool_id] = bind(name, tools[tool_id])
        # Set last: a tool whose identifier is one of these stays reachable by call_tool().
        self.__dict__.update(_name=name, _error=spec.get("error"), _tools=tools)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("tools views cannot be subclassed")

    def __getattr__(self, name: str) -> Any:
        _refuse_foreign(self, _Server)
        name = _exact(name)
        state = self.__dict__
        tools = state.get("_tools")
        if tools is not None and name in tools:
            tool = state[name] = state[_BIND](state["_name"], tools[name])
            return tool
        if name.startswith("_"):
            raise AttributeError(name)
        if self._error:
            raise UnknownName(self._name, name, self._error)
        listing = f"get_tool_docs({self._name!r})"
        raise UnknownName(
            self._name, name, f"no tool {name!r}{_closest(name, self._tools, listing)}"
        )

    def __dir__(self) -> Iterable[str]:
        return list(self._tools)

    def __repr__(self) -> str:
        return f"<tools.{self._name}: {', '.join(self._tools) or 'no tools'}>"


class Tools(Frozen):
    """`tools`: one attribute per server, each made when it is first read.

    Nothing is made for the servers and tools a run does not use, so `tools` costs next to
    nothing whatever the size of the catalog.
    """

    _names: list[str]

    def __init__(self, bind: _Bind, index: GuestIndex, *, made: object = None) -> None:
        _refuse_reinit(self, made)
        self.__dict__[_BIND] = bind
        self.__dict__[_INDEX] = index
        # A server named like an attribute of this class would be hidden by it: made now.
        for ident in _TOOLS_ATTRIBUTES:
            if ident in index:
                self.__dict__[ident] = _Server(bind, index[ident], made=MADE)
        self.__dict__["_names"] = list(index)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("tools views cannot be subclassed")

    def __getattr__(self, name: str) -> Any:
        _refuse_foreign(self, Tools)
        name = _exact(name)
        state = self.__dict__
        index = state.get(_INDEX)
        if index is not None and name in index:
            server = state[name] = _Server(state[_BIND], index[name], made=MADE)
            return server
        if name.startswith("_"):
            raise AttributeError(name)
        raise UnknownName(
            name, "", f"unknown server{_closest(name, self._names, 'list_servers()')}"
        )

    def __dir__(self) -> Iterable[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"<tools: {', '.join(self._names)}>"


def _exact(name: str) -> str:
    """A name as an exact str: a subclass's `__hash__` and `__eq__` chose which entry a
    lookup found and which it wrote (`typing`'s protocol check passes names through
    `hasattr` as they are; outside attack 65 made `tools.notes` the data server)."""
    return name if type(name) is str else str.__str__(name)


_CLOSE = 5  # names an unknown-name error offers
# What ordinary lookup finds on the class before `__getattr__` is asked.
_SERVER_ATTRIBUTES = tuple(dir(_Server))
_TOOLS_ATTRIBUTES = tuple(dir(Tools))


def _closest(name: str, candidates: Iterable[str], listing: str) -> str:
    """At most 5 names (contract §6): the close ones, or all when there are no more; past
    that, how many and what lists them (every name, 4 KB of them, was one error's text)."""
    options = list(candidates)
    close = difflib.get_close_matches(name, options, n=_CLOSE, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    if len(options) <= _CLOSE:
        return f"{hint} (available: {', '.join(options) or 'none'})"
    return f"{hint} ({len(options):,} in all: {listing} lists them)"


def is_identifier_of(obj: Any, name: object) -> bool:
    """A server of `tools` or a tool of `tools.<server>`: `_2fa` and `format` are fine there."""
    if not isinstance(name, str) or name in GUEST_ONLY_DUNDERS:
        return False  # `__dict__` & co. find the object's own, not a server or tool so named
    if type(obj) is Tools:  # exactly: `isinstance` believes a guest's `__class__` property
        return name in obj.__dict__.get(_INDEX, ())
    return type(obj) is _Server and name in obj._tools

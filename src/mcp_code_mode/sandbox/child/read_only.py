"""A read-only mapping that gives its mapping to no one: what the sandbox hands out where a
`types.MappingProxyType` would give its mapping away.

A proxy compares and `|`s through its mapping (`proxy == d` is `mapping == d`), so where `d`
is an instance of a guest `dict` subclass, Python calls that subclass's reflected `__eq__`
or `__ror__` first, with the mapping itself (outside attack 101: copy's dispatch table, the
library annotations the guard showed read-only, an enum's members and dataclasses' shared
empty metadata came back writable). `ReadOnly` keeps its mapping in a slot of a private
name, compares and joins on copies, and copies as itself. Made before the worker locks
down, the class is read-only and takes no subclass (`lockdown._sealed`).

Stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["ReadOnly", "read_only_members", "shown"]


class ReadOnly:
    """A live, read-only view of `mapping` (a `Mapping` by registration: not an ABC, so
    guest code has no `register` of its own to write)."""

    __slots__ = ("_mapping",)
    _mapping: Mapping[Any, Any]

    def __init__(self, mapping: Mapping[Any, Any]) -> None:
        object.__setattr__(self, "_mapping", mapping)

    def __getitem__(self, key: Any) -> Any:
        return self._mapping[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __contains__(self, key: object) -> bool:
        return key in self._mapping

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self._mapping)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._mapping.get(key, default)

    def copy(self) -> dict[Any, Any]:
        return dict(self._mapping)

    def __eq__(self, other: object) -> bool:
        return dict(self._mapping) == other  # a reflected `__eq__` gets the copy

    def __ne__(self, other: object) -> bool:
        return dict(self._mapping) != other

    __hash__ = None  # type: ignore[assignment]  # as a dict's

    def __or__(self, other: Any) -> Any:
        return dict(self._mapping) | other

    def __ror__(self, other: Any) -> Any:
        return other | dict(self._mapping)

    def keys(self) -> Any:  # as a proxy's: its mapping's (a dict view's `mapping` is guarded)
        return self._mapping.keys()

    def values(self) -> Any:
        return self._mapping.values()

    def items(self) -> Any:
        return self._mapping.items()

    def __repr__(self) -> str:
        if type(self._mapping) is MappingProxyType:
            return repr(self._mapping)
        return f"mappingproxy({self._mapping!r})"

    def __str__(self) -> str:
        return str(self._mapping)

    def __copy__(self) -> ReadOnly:
        return self

    def __deepcopy__(self, memo: Any) -> ReadOnly:
        return self

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("cannot pickle a read-only view")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a read-only view takes no attributes")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a read-only view takes no attributes")


Mapping.register(ReadOnly)
ReadOnly.__name__ = ReadOnly.__qualname__ = "mappingproxy"  # as errors and `type()` name it


def shown(value: Any) -> Any:
    """`value` as guest code may hold it: a mapping proxy becomes a `ReadOnly` view of the
    same mapping (live, as the proxy was)."""
    if type(value) is MappingProxyType:
        return ReadOnly(value)  # its mapping is the proxy: compares and joins as above
    return value


def read_only_members(members: Callable[[type], Mapping[str, Any]]) -> Callable[[type], ReadOnly]:
    """`EnumType.__members__`'s getter, answering a `ReadOnly` view of what it answered (a
    proxy of the class's own member map: written, `SafeUUID["safe"]` answered anything)."""

    def __members__(cls: type) -> ReadOnly:
        return ReadOnly(members(cls))

    return __members__

"""`dataclasses` for guest classes: what it compiles comes from names checked where it
reads them, and what it compiled serves the class it was made for (see `generated` for
the check of the text itself). Installed through the guest's view of the module."""

from __future__ import annotations

import keyword
import sys
from collections.abc import Callable
from typing import Any

from mcp_code_mode.sandbox.child.dataclass_methods import bind_generated, making
from mcp_code_mode.sandbox.child.guards import MRO, VARS
from mcp_code_mode.sandbox.child.read_only import ReadOnly
from mcp_code_mode.sandbox.child.rules import GUEST_MODULE

__all__ = ["guarded_dataclass", "guarded_make_dataclass"]


def guarded_dataclass(dataclass: Callable[..., Any]) -> Callable[..., Any]:
    """`dataclasses.dataclass` for guest classes: it compiles source text from the field
    names, with the globals of `sys.modules[cls.__module__]` (the real builtins when that
    module does not exist), so the names must be identifiers and the class the guest's."""

    def guarded(cls: Any = None, /, **options: Any) -> Any:
        if cls is None:
            return lambda inner: _checked_dataclass(dataclass, inner, options)
        return _checked_dataclass(dataclass, cls, options)

    guarded.__name__ = guarded.__qualname__ = "dataclass"
    guarded.__doc__ = dataclass.__doc__
    return guarded


def _checked_dataclass(dataclass: Callable[..., Any], cls: Any, options: dict[str, Any]) -> Any:
    """`dataclass(cls, **options)` once `cls` passed `_dataclass_check`, with what was
    checked being what dataclasses reads: a read-only copy of the annotations while it
    works (on 3.11 it iterates the class's own dict, and a guest descriptor it read on the
    way swapped a checked name for source text in place, outside attack 42)."""
    if not any(klass is type for klass in MRO(type(cls))):
        # dataclasses sets `__dataclass_params__` on whatever it is given before it fails
        # (`dataclass(json.dumps)` marked a library function)
        raise TypeError(f"dataclass() takes a class, not a {type(cls).__name__!r} object")
    _dataclass_check(cls)
    before = dict(VARS(cls))
    annotations = dict(before.get("__annotations__", {}))
    # 3.12+ reads them through `inspect.get_annotations`, which wants a dict and copies it
    read_only = ReadOnly(annotations) if sys.version_info < (3, 12) else annotations
    type.__setattr__(cls, "__annotations__", read_only)
    with making() as made_now:  # its methods serve no one until bound (attack 106)
        try:
            made = dataclass(cls, **options)
        finally:
            type.__setattr__(cls, "__annotations__", annotations)
    if made is not cls and isinstance(made, type):  # `slots=True` makes a new class
        type.__setattr__(made, "__annotations__", dict(annotations))
    return bind_generated(made, before, made_now)


def _dataclass_check(cls: type) -> None:
    # Read from the real `__dict__`s, once: a metaclass `__module__` property answered
    # the guard one way and dataclasses another, and an annotations dict subclass gave
    # dataclasses other names than it gave the guard (outside attack 17).
    module = VARS(cls).get("__module__")
    if not (type(module) is str and module == GUEST_MODULE) or _odd_metaclass(cls):
        raise TypeError("dataclass() takes classes defined by this code only")
    if any(klass is type for klass in MRO(cls)):  # its instances are classes (attack 50)
        raise TypeError("dataclass() does not take metaclasses in the sandbox")
    annotations = VARS(cls).get("__annotations__", {})
    if type(annotations) is not dict:
        raise TypeError("dataclass() takes a class whose annotations are a plain dict")
    bad = [n for n in annotations if not (type(n) is str and _is_field_name(n))]
    if bad:
        raise TypeError(f"dataclass field names must be identifiers, not {bad[0]!r}")
    _exact_fields(VARS(cls).values())
    _inherited_fields_check(cls)


def _exact_fields(values: Any) -> None:
    """Every `Field` among `values` is dataclasses' own class: dataclasses takes a class
    attribute that is a `Field` as the field, and a subclass's `name` property put source
    text into the `__repr__` it compiles (outside attack 45)."""
    field_type = getattr(sys.modules.get("dataclasses"), "Field", None)
    for value in values:
        kind = type(value)
        if field_type is not None and kind is not field_type and field_type in MRO(kind):
            raise TypeError("dataclass fields must be made by dataclasses.field()")


def _inherited_fields_check(cls: Any, *, inherited: bool = True) -> None:
    """Every `__dataclass_fields__` dataclasses could read for `cls`'s bases (`getattr` on
    each: their own dicts and their metaclasses') is a plain dict of exact `Field`s named
    by identifiers: `_process_class` puts the names of inherited fields into the source it
    compiles, and a base's field renamed to source text ran it as the trusted helper's
    code (outside attack 41)."""
    if not isinstance(cls, type):
        return
    if _odd_metaclass(cls):
        raise TypeError("dataclass() takes bases whose metaclass reads their attributes plainly")
    field_type = getattr(sys.modules.get("dataclasses"), "Field", None)
    classes = MRO(cls)[1:] if inherited else MRO(cls)
    for klass in (*classes, *MRO(type(cls))):
        fields = VARS(klass).get("__dataclass_fields__")
        if fields is None:
            continue
        if type(fields) is not dict:
            raise TypeError("dataclass() takes bases whose fields are dataclasses' own")
        for key, field in dict.items(fields):
            name = field.name if type(field) is field_type else None
            if not (type(name) is str and name == key and _is_field_name(name)):
                raise TypeError(f"dataclass fields must be named by identifiers, not {key!r}")


def _is_field_name(name: str) -> bool:
    # not one of the sandbox's own names (what guest source may not spell either)
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_mcp")


def _odd_metaclass(cls: type) -> bool:
    """Whether `cls`'s metaclass (or one of its bases) defines `__module__` other than as a
    str, or any of `_METACLASS_HOOKS` at all: a descriptor there answers
    `cls.__module__` instead of the class's own, and `cls.__dict__` (what dataclasses reads
    the annotations from, outside attack 42) with another mapping than the one checked."""
    for meta in MRO(type(cls)):
        if meta is type or meta is object:  # `type`'s own is the descriptor that reads it
            continue
        namespace = VARS(meta)
        value = namespace.get("__module__")
        if value is not None and type(value) is not str:
            return True
        if any(name in namespace for name in _METACLASS_HOOKS):
            return True
    return False


_METACLASS_HOOKS = ("__dict__", "__annotations__", "__getattr__", "__getattribute__")
"""What a metaclass may not define for dataclasses: each answers dataclasses' reads of a
class (`cls.__dict__`, `getattr(base, "__dataclass_fields__")`) past the real `__dict__`s
the guard checks (a `__getattr__` made up a base's fields: outside attack 43)."""


def guarded_make_dataclass(make_dataclass: Callable[..., Any]) -> Callable[..., Any]:
    """`dataclasses.make_dataclass` with field names that are exact `str` identifiers (a
    subclass's `isidentifier` and `__format__` put any text into the source it compiles,
    outside attack 12) and no `__module__` but the guest's (it picks the globals)."""

    def guarded(cls_name: Any, fields: Any, /, *args: Any, **options: Any) -> Any:
        specs = [spec if isinstance(spec, str) else tuple(spec) for spec in fields]
        for spec in specs:
            name = spec if isinstance(spec, str) else spec[0]
            if not (type(name) is str and _is_field_name(name)):
                raise TypeError(f"make_dataclass field names must be identifiers, not {name!r}")
            _exact_fields(() if isinstance(spec, str) else spec[2:])
        namespace = dict(options.get("namespace") or {})
        _exact_fields(namespace.values())
        module = options.get("module", namespace.get("__module__", GUEST_MODULE))
        if not (type(module) is str and module == GUEST_MODULE):
            raise TypeError("make_dataclass() makes classes of this code's own module only")
        options["namespace"] = {**namespace, "__module__": GUEST_MODULE}  # 3.11 says `types`
        if sys.version_info >= (3, 12):  # else it names the caller's module: this one's
            options["module"] = GUEST_MODULE  # (its globals then compile the methods: attack 45)
        bases = options.get("bases", args[0] if args else ())
        for base in bases if type(bases) is tuple else ():
            _inherited_fields_check(base, inherited=False)
        with making() as made_now:
            made = make_dataclass(cls_name, specs, *args, **options)
        return bind_generated(made, options["namespace"], made_now)

    guarded.__name__ = guarded.__qualname__ = "make_dataclass"
    guarded.__doc__ = make_dataclass.__doc__
    return guarded

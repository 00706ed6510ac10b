"""`type_hints`: hostile schemas and values give bounded hints and literals, in bounded time."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_code_mode.type_hints import (
    MAX_HINT_CHARS,
    MAX_LITERAL_CHARS,
    MAX_LITERALS,
    python_literal,
    type_hint,
)

BOUNDED = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def nested_array_unions(kinds: int, depth: int) -> dict[str, Any]:
    """The issue-26 schema: a type list of array kinds, nested: kinds^depth walks unbounded."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": ["array"] * kinds, "items": schema}
    return schema


def test_nested_unions_of_arrays_render_at_once() -> None:
    schema = nested_array_unions(kinds=7, depth=12)  # 7^12 walks without a bound
    assert len(json.dumps(schema)) < 1100  # about a kilobyte
    started = time.perf_counter()
    hint = type_hint(schema)
    assert time.perf_counter() - started < 0.5
    assert hint.startswith("list[") and len(hint) <= MAX_HINT_CHARS


def test_nested_anyof_renders_at_once() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(40):
        schema = {"anyOf": [schema, schema, {"type": "array", "items": schema}]}
    started = time.perf_counter()
    assert type_hint(schema) in {"Any"} or len(type_hint(schema)) <= MAX_HINT_CHARS
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("schema", "hint"),
    [
        ({"enum": list(range(100))}, "Literal[" + ", ".join(map(str, range(12))) + ", ...]"),
        ({"anyOf": [{"type": "string"}] * 9}, "Any"),  # past MAX_UNION members
        ({"type": ["string"] * 9}, "Any"),
        ({"enum": ["x" * 1000]}, "Literal[...]"),
        pytest.param({"const": 10**5000}, "Literal[...]", id="int-python-will-not-print"),
        ({"type": "array", "items": {"enum": [str(i) * 30 for i in range(12)]}}, "list"),
    ],
)
def test_hints_past_a_bound(schema: dict[str, Any], hint: str) -> None:
    assert type_hint(schema) == hint


def test_a_deep_array_nesting_stops_at_the_depth_bound() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(5000):
        schema = {"type": "array", "items": schema}
    hint = type_hint(schema)
    assert hint.startswith("list[list[") and "Any" in hint and len(hint) <= MAX_HINT_CHARS


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("short", "'short'"),
        ([1, "a", None, True], "[1, 'a', None, True]"),
        ({"k": [1.5]}, "{'k': [1.5]}"),
        ("x" * 100, "..."),
        (list(range(1000)), "..."),
        pytest.param(10**5000, "...", id="huge-int"),
        ({"k" * 100: 1}, "..."),
    ],
)
def test_python_literal(value: Any, literal: str) -> None:
    assert python_literal(value) == literal


def test_a_deeply_nested_literal_costs_its_bound_only() -> None:
    value: Any = 1
    for _ in range(100_000):
        value = [value]
    assert python_literal(value) == "..."


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)

leaf_schemas = st.sampled_from(
    [{"type": k} for k in ("string", "integer", "number", "boolean", "null", "object")]
    + [{}, {"$ref": "#/x"}, {"type": "array"}]
) | st.builds(lambda v: {"enum": v}, st.lists(json_values, max_size=40))


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    kinds = st.lists(st.sampled_from(["array", "object", "string", "null"]), max_size=10)
    return (
        st.builds(lambda i: {"type": "array", "items": i}, inner)
        | st.builds(lambda k, i: {"type": k, "items": i}, kinds, inner)
        | st.builds(lambda m: {"anyOf": m}, st.lists(inner, max_size=10))
        | st.builds(lambda m: {"oneOf": m}, st.lists(inner, max_size=10))
        | st.builds(lambda a: {"type": "object", "additionalProperties": a}, inner)
        | st.builds(lambda p: {"properties": p}, st.dictionaries(st.text(), inner, max_size=4))
    )


schemas = st.recursive(leaf_schemas, _extend, max_leaves=40)


@BOUNDED
@given(schemas)
def test_any_schema_gives_a_bounded_hint(schema: Any) -> None:
    hint = type_hint(schema)
    assert 0 < len(hint) <= MAX_HINT_CHARS


@BOUNDED
@given(json_values)
def test_any_value_gives_a_bounded_literal(value: Any) -> None:
    literal = python_literal(value)
    assert literal == "..." or len(literal) <= MAX_LITERAL_CHARS
    if literal != "...":
        assert eval(literal) == value  # it is the value


def test_enum_hint_shows_at_most_max_literals() -> None:
    hint = type_hint({"enum": [f"v{i}" for i in range(50)]})
    assert hint.count("'v") == MAX_LITERALS and hint.endswith(", ...]")

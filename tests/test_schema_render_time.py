"""Rendering any upstream schema of up to 64 KB costs a few milliseconds, never more.

An upstream's `inputSchema` / `outputSchema` is not checked: issue 26 found a 600-byte union
of array types nested a few levels that made stub rendering walk 7^7 branches on the event
loop. Here every hostile shape we know of (unions of arrays, nested `anyOf`, `$ref` cycles,
huge enums and defaults, deep nesting, `allOf`, tuple `items`, thousands of properties,
non-dict junk anywhere) and hypothesis-drawn ones are grown to just under 64 KB of JSON, and
everything the gateway renders of a tool (its `get_tool_docs` stub, a server listing line,
its search-hit signature) is timed: the median of three renders must be within 50 ms.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_code_mode.catalog import ToolEntry
from mcp_code_mode.tool_docs import Listing, listing, tool_docs
from mcp_code_mode.tool_formatter import ToolSchemaFormatter

from .servers.schema_upstream import HOSTILE_SCHEMAS, grown, nested_array_unions

LIMIT_BYTES = 64 * 1024
RENDER_MS = 50.0  # the median of three renders of one tool (issue 26's acceptance)
FORMATTER = ToolSchemaFormatter()


def render_ms(tool: mcp_types.Tool) -> float:
    """The median of three renders of everything shown of `tool`, in milliseconds."""
    entry = ToolEntry("hostile", tool.name, "hostile", "t", tool)
    about = Listing("hostile", "hostile", "", total=1)
    times = []
    for _ in range(3):
        started = time.perf_counter()
        tool_docs(FORMATTER, entry)
        listing(FORMATTER, about, [entry, entry], page=2)  # past page 1: the compact lines
        FORMATTER.signature(entry.source)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def size(value: Any) -> int:
    return len(json.dumps(value))


def test_the_issue_26_schema_renders_at_once() -> None:
    """The attack itself: a type list of 7 array kinds nested 7 deep (7^7 walks unbounded)."""
    schema = {"type": "object", "properties": {"x": nested_array_unions(7, 7)}}
    assert size(schema) < 700
    ms = render_ms(mcp_types.Tool(name="t", input_schema=schema))
    assert ms < RENDER_MS


@pytest.mark.parametrize("name", sorted(HOSTILE_SCHEMAS))
def test_a_hostile_schema_of_64_kb_renders_within_the_bound(name: str) -> None:
    tool = HOSTILE_SCHEMAS[name]()
    assert size(tool.model_dump(mode="json", by_alias=True, exclude_none=True)) <= LIMIT_BYTES
    assert render_ms(tool) < RENDER_MS, name


# --- hypothesis: compact descriptors, grown to 64 KB --------------------------------------

_junk = st.sampled_from([None, 0, 1.5, True, "x", [], [1, "a"], {"type": 7}, {"items": "no"}])
_literals = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=60),
    lambda inner: st.lists(inner, max_size=30) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=40,
)
_kinds = st.lists(
    st.sampled_from(["array", "object", "string", "integer", "null", "number", 5, None]),
    max_size=9,
)


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    members = st.lists(inner, max_size=9)
    return (
        st.builds(lambda k, i: {"type": k, "items": i}, _kinds, inner)
        | st.builds(lambda m: {"anyOf": m}, members)
        | st.builds(lambda m: {"oneOf": m}, members)
        | st.builds(lambda m: {"allOf": m}, members)
        | st.builds(lambda m: {"type": "array", "items": m}, members)  # tuple form
        | st.builds(lambda a: {"type": "object", "additionalProperties": a}, inner)
        | st.builds(
            lambda p: {"type": "object", "properties": p}, st.dictionaries(st.text(), inner)
        )
        | st.builds(
            lambda i, d: {**i, "default": d} if isinstance(i, dict) else i, inner, _literals
        )
    )


_leaves = (
    st.sampled_from(
        [{"type": k} for k in ("string", "integer", "number", "boolean", "null", "object")]
        + [{}, {"$ref": "#"}, {"$ref": "#/properties/p0"}, {"type": "array"}]
    )
    | st.builds(lambda v: {"enum": v}, st.lists(_literals, max_size=40))
    | st.builds(lambda v: {"const": v}, _literals)
    | _junk
)
schemas = st.recursive(_leaves, _extend, max_leaves=30)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(schemas, st.booleans(), st.booleans())
def test_any_schema_of_64_kb_renders_within_the_bound(
    schema: Any, as_output: bool, required: bool
) -> None:
    """A drawn property schema, repeated as many properties as fit in 64 KB (as the input
    schema, or as the output schema's properties too)."""

    def make(n: int) -> mcp_types.Tool:
        props = {f"p{i}": schema for i in range(n)}
        inputs: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            inputs["required"] = list(props)
        output = {"type": "object", "properties": props} if as_output else None
        return mcp_types.Tool(name="t", input_schema=inputs, output_schema=output)

    tool = grown(make, LIMIT_BYTES)
    if tool is None:  # one property is already over 64 KB
        return
    assert render_ms(tool) < RENDER_MS, json.dumps(schema)[:300]

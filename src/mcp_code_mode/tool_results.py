"""Turn an MCP `CallToolResult` into the plain JSON value guest code receives (contract §4)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, TypeAlias

import mcp_types

__all__ = [
    "JSON",
    "Reply",
    "ResultBudget",
    "error_text",
    "parse_input",
    "result_text",
    "text_chars",
    "unwrap_result",
]

JSON: TypeAlias = Any
"""A value that survives `json.dumps` / `json.loads` (dict, list, str, number, bool, None)."""


class Reply(NamedTuple):
    """A tool call's result: the value the guest gets, and its text as the wire carried it
    ("" when the result has no text blocks)."""

    value: JSON
    text: str


class ResultBudget:
    """What the results of one `call_tools` batch may add up to, in bytes: they reach the
    worker in one message, and 24 replies of 9.6 MB each, every one under the per-result
    limit, took the gateway to 750 MB (outside attack 85)."""

    def __init__(self, limit: int) -> None:
        self.limit = self.left = limit

    def take(self, size: int) -> bool:
        """Whether a result of `size` bytes still fits; it is counted when it does."""
        if size > self.left:
            return False
        self.left -= size
        return True


def unwrap_result(result: mcp_types.CallToolResult) -> JSON:
    """The value of a successful tool call.

    `structured_content` when present (a lone `{"result": x}` wrapper becomes `x`);
    else each content block as text parsed as JSON when it parses, else the text;
    several content blocks give a list.
    """
    structured = result.structured_content
    if structured is not None:
        if isinstance(structured, dict) and list(structured) == ["result"]:
            return structured["result"]
        return structured
    values = [_block_value(block) for block in result.content]
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def error_text(result: mcp_types.CallToolResult) -> str:
    """The message of a tool result with `is_error` set."""
    texts = [b.text for b in result.content if isinstance(b, mcp_types.TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content)
    return "the tool reported an error without a message"


def _reject_constant(name: str) -> Any:
    # NaN / Infinity are not JSON: such text stays text.
    raise ValueError(name)


def _block_value(block: mcp_types.ContentBlock) -> JSON:
    if isinstance(block, mcp_types.TextContent):
        try:
            return json.loads(block.text, parse_constant=_reject_constant)
        except ValueError:
            return block.text
    return block.model_dump(mode="json", by_alias=True, exclude_none=True)


def text_chars(result: mcp_types.CallToolResult) -> int:
    """Characters of text in a result's content blocks (what unwrapping parses)."""
    return sum(len(b.text) for b in result.content if isinstance(b, mcp_types.TextContent))


def result_text(result: mcp_types.CallToolResult) -> str:
    """The text of a result's content blocks, joined ("" when it has none)."""
    texts = [b.text for b in result.content if isinstance(b, mcp_types.TextContent)]
    return texts[0] if len(texts) == 1 else "\n".join(texts)


def parse_input(value: JSON) -> JSON:
    """A string that holds a JSON object or array is parsed (some clients send objects so)."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value

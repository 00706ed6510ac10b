"""`unwrap_result` / `error_text` (contract §4 "Unwrapped result") on hand-built results."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from mcp import types

from mcp_code_mode.tool_results import error_text, unwrap_result


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def result(
    *blocks: types.ContentBlock, structured: dict[str, Any] | None = None, is_error: bool = False
) -> types.CallToolResult:
    return types.CallToolResult(
        content=list(blocks), structured_content=structured, is_error=is_error
    )


IMAGE = types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")


def test_structured_content_wins_over_text() -> None:
    r = result(text('{"n": 1, "from": "text"}'), structured={"n": 1, "from": "structured"})
    assert unwrap_result(r) == {"n": 1, "from": "structured"}


def test_structured_content_wins_even_when_text_is_not_json() -> None:
    r = result(text("3 items"), structured={"items": [1, 2, 3]})
    assert unwrap_result(r) == {"items": [1, 2, 3]}


@pytest.mark.parametrize(
    ("inner", "expected"),
    [
        ("hey", "hey"),
        (42, 42),
        ([1, 2], [1, 2]),
        ({"a": 1}, {"a": 1}),
        ({"result": 1}, {"result": 1}),  # only one wrapper level is removed
        (None, None),
        (False, False),
    ],
)
def test_lone_result_wrapper_is_unwrapped(inner: Any, expected: Any) -> None:
    r = result(text(json.dumps(inner)), structured={"result": inner})
    assert unwrap_result(r) == expected


@pytest.mark.parametrize(
    "structured",
    [
        {"result": 1, "other": 2},
        {"other": 2, "result": 1},
        {"results": [1]},
        {"Result": 1},
        {},
    ],
)
def test_other_objects_are_not_unwrapped(structured: dict[str, Any]) -> None:
    assert unwrap_result(result(text("ignored"), structured=structured)) == structured


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"kind": "json-text", "values": [1, 2, 3]}', {"kind": "json-text", "values": [1, 2, 3]}),
        ("[1, 2]", [1, 2]),
        ("42", 42),
        ("3.5", 3.5),
        ("true", True),
        ("null", None),
        ('"quoted"', "quoted"),
        ('  {"padded": true}\n', {"padded": True}),
    ],
)
def test_json_text_is_parsed(body: str, expected: Any) -> None:
    assert unwrap_result(result(text(body))) == expected


@pytest.mark.parametrize(
    "body",
    [
        "hello from plain text",
        "",
        " ",
        "{not json}",
        "[1, 2",
        "42 apples",
        "True",
        "None",
        "ünïcödé ✓",
    ],
)
def test_plain_text_is_kept(body: str) -> None:
    assert unwrap_result(result(text(body))) == body


@pytest.mark.parametrize("body", ["NaN", "Infinity", "-Infinity"])
def test_non_json_constants_stay_text(body: str) -> None:
    value = unwrap_result(result(text(body)))
    assert value == body
    assert not (isinstance(value, float) and not math.isfinite(value))


def test_several_blocks_give_a_list() -> None:
    r = result(text("first"), text('{"second": 2}'), text("3"))
    assert unwrap_result(r) == ["first", {"second": 2}, 3]


def test_no_content_gives_none() -> None:
    assert unwrap_result(result()) is None


def test_image_block_gives_its_json_dict() -> None:
    assert unwrap_result(result(IMAGE)) == {
        "type": "image",
        "data": "iVBORw0KGgo=",
        "mimeType": "image/png",
    }


def test_mixed_blocks_keep_order() -> None:
    value = unwrap_result(result(text("caption"), IMAGE))
    assert isinstance(value, list)
    assert value[0] == "caption"
    assert value[1]["type"] == "image"
    assert value[1]["mimeType"] == "image/png"
    json.dumps(value)  # everything crosses the boundary as JSON


def test_embedded_resource_gives_its_json_dict() -> None:
    block = types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(uri="file:///a.txt", text="hi", mime_type="text/plain"),
    )
    value = unwrap_result(result(block))
    assert value == {
        "type": "resource",
        "resource": {"uri": "file:///a.txt", "text": "hi", "mimeType": "text/plain"},
    }


def test_error_text_joins_text_blocks() -> None:
    r = result(text("file not found"), text("path: /x"), is_error=True)
    assert error_text(r) == "file not found\npath: /x"


def test_error_text_skips_non_text_blocks() -> None:
    assert error_text(result(IMAGE, text("bad image"), is_error=True)) == "bad image"


def test_error_text_falls_back_to_structured_content() -> None:
    r = result(structured={"code": 404, "reason": "missing"}, is_error=True)
    assert json.loads(error_text(r)) == {"code": 404, "reason": "missing"}


def test_error_text_without_anything() -> None:
    message = error_text(result(is_error=True))
    assert isinstance(message, str)
    assert "error" in message

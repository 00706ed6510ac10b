"""`ToolSchemaFormatter`: JSON Schema → Python hints, guest signatures and stub docs."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import types

from mcp_code_mode.tool_formatter import ToolSchemaFormatter, ToolStubSource, one_line

F = ToolSchemaFormatter()
STR = {"type": "string"}
INT = {"type": "integer"}


def tool(
    name: str = "t",
    description: str | None = "A tool.",
    properties: dict[str, Any] | None = None,
    required: tuple[str, ...] = (),
    output: dict[str, Any] | None = None,
) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": properties or {}, "required": list(required)},
        output_schema=output,
    )


def source(t: types.Tool, server: str = "srv", server_id: str | None = None) -> ToolStubSource:
    return ToolStubSource(server, server_id or server, t.name.replace("-", "_"), t)


def wrapped(inner: dict[str, Any]) -> dict[str, Any]:
    """The output schema fastmcp declares for a tool returning a non-object."""
    return {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
        "x-fastmcp-wrap-result": True,
    }


ADD_NOTE = tool(
    "add_note",
    "Add a note to the store.",
    {"text": STR, "tags": {"type": "array", "items": STR, "default": []}},
    ("text",),
    {"type": "object", "properties": {"id": INT, "text": STR}},
)


@pytest.mark.parametrize(
    ("schema", "hint"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "null"}, "None"),
        ({"type": "array", "items": {"type": "string"}}, "list[str]"),
        ({"type": "array", "items": {"type": "integer"}}, "list[int]"),
        (
            {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
            "list[list[float]]",
        ),
        ({"type": "array"}, "list"),
        ({"type": "object"}, "dict"),
        ({"type": "object", "properties": {"a": STR}}, "dict"),
        ({"properties": {"a": STR}}, "dict"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
        ({"type": "string", "enum": ["low", "high"]}, "Literal['low', 'high']"),
        ({"enum": [1, 2, None]}, "Literal[1, 2, None]"),
        ({"const": "fixed"}, "Literal['fixed']"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "str | None"),
        ({"anyOf": [{"type": "null"}, {"type": "integer"}]}, "int | None"),  # None goes last
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
        ({"type": ["string", "null"]}, "str | None"),
        ({"type": ["integer", "string"]}, "int | str"),
        ({"anyOf": [{"type": "string"}, {"type": "string"}]}, "str"),
        ({"anyOf": [{"type": "string"}, {}]}, "Any"),
        ({"type": "array", "items": {"anyOf": [INT, {"type": "null"}]}}, "list[int | None]"),
        ({"anyOf": [{"type": "array", "items": STR}, {"type": "null"}]}, "list[str] | None"),
        ({}, "Any"),
        ({"description": "no type"}, "Any"),
        ({"$ref": "#/$defs/Thing"}, "Any"),
        (None, "Any"),
        (True, "Any"),
    ],
)
def test_type_hint(schema: Any, hint: str) -> None:
    assert F.type_hint(schema) == hint


def test_signature_matches_the_contract_example() -> None:
    t = tool(
        "add_note",
        "Add a note.",
        {"text": STR, "tags": {"type": "array", "items": STR, "default": []}},
        ("text",),
        {"type": "object", "properties": {"id": INT}},
    )
    assert (
        F.signature(source(t, "notes"))
        == "tools.notes.add_note(text: str, tags: list[str] = []) -> dict"
    )


def test_required_parameters_come_first() -> None:
    t = tool(
        "p",
        properties={
            "opt": {"type": "integer", "default": 3},
            "req_a": STR,
            "flag": {"type": "boolean"},
            "req_b": INT,
        },
        required=("req_b", "req_a"),
    )
    assert F.parameters(t) == [
        "req_a: str",
        "req_b: int",
        "opt: int = 3",
        "flag: bool | None = None",
    ]


@pytest.mark.parametrize(
    ("prop", "rendered"),
    [
        ({"type": "string", "default": "x"}, "p: str = 'x'"),
        ({"type": "string", "default": "it's"}, 'p: str = "it\'s"'),
        ({"type": "integer", "default": 0}, "p: int = 0"),
        ({"type": "number", "default": 1.5}, "p: float = 1.5"),
        ({"type": "boolean", "default": False}, "p: bool = False"),
        ({"type": "array", "items": STR, "default": ["a", "b"]}, "p: list[str] = ['a', 'b']"),
        ({"type": "object", "default": {"k": [1, None, True]}}, "p: dict = {'k': [1, None, True]}"),
        ({"anyOf": [STR, {"type": "null"}], "default": None}, "p: str | None = None"),
        ({"enum": ["asc", "desc"], "default": "asc"}, "p: Literal['asc', 'desc'] = 'asc'"),
        ({"type": "string"}, "p: str | None = None"),  # optional without default
        ({"anyOf": [STR, {"type": "null"}]}, "p: str | None = None"),  # no `| None | None`
        ({}, "p: Any = None"),
    ],
)
def test_optional_parameter_rendering(prop: dict[str, Any], rendered: str) -> None:
    assert F.parameters(tool("x", properties={"p": prop})) == [rendered]


def test_default_none_makes_the_hint_optional() -> None:
    assert F.parameters(tool("x", properties={"p": {"type": "integer", "default": None}})) == [
        "p: int | None = None"
    ]


def test_no_parameters_and_no_input_schema_properties() -> None:
    assert F.parameters(tool("x")) == []
    bare = types.Tool(name="bare", input_schema={"type": "object"})
    assert F.signature(source(bare, "s")) == "tools.s.bare() -> Any"


@pytest.mark.parametrize(
    ("output", "hint"),
    [
        (None, "Any"),
        ({"type": "object", "properties": {"id": INT}}, "dict"),
        (wrapped({"type": "integer"}), "int"),
        (wrapped({"type": "string"}), "str"),
        (wrapped({"type": "array", "items": STR}), "list[str]"),
        (
            wrapped({"type": "array", "items": {"type": "object", "properties": {"id": INT}}}),
            "list[dict]",
        ),
        (wrapped({"anyOf": [STR, {"type": "null"}]}), "str | None"),
        (wrapped({}), "Any"),
        ({"type": "object", "additionalProperties": STR}, "dict[str, str]"),
    ],
)
def test_return_hint(output: dict[str, Any] | None, hint: str) -> None:
    t = tool("r", output=output)
    assert F.return_hint(t) == hint
    assert F.signature(source(t, "s")) == f"tools.s.r() -> {hint}"


def test_result_property_without_the_fastmcp_marker_and_with_siblings_stays_a_dict() -> None:
    out = {"type": "object", "properties": {"result": INT, "page": INT}}
    assert F.return_hint(tool("r", output=out)) == "dict"


def test_return_hint_agrees_with_unwrap_for_a_lone_result_property() -> None:
    out = {"type": "object", "properties": {"result": INT}, "required": ["result"]}
    assert F.return_hint(tool("r", output=out)) == "int"


def test_signature_uses_identifiers() -> None:
    t = tool("get-user", properties={"user_id": INT}, required=("user_id",))
    src = ToolStubSource("my-server", "my_server", "get_user", t)
    assert F.signature(src) == "tools.my_server.get_user(user_id: int) -> Any"


def test_stub_holds_description_args_and_returns() -> None:
    stub = F.stub(source(ADD_NOTE, "notes"))
    assert stub.startswith("def add_note(text: str, tags: list[str] = []) -> dict:\n")
    assert "Add a note to the store." in stub
    assert "Call: tools.notes.add_note(...)" in stub
    assert "MCP name" not in stub  # identifiers equal the MCP names
    args = stub.split("Args:", 1)[1].split("Returns:", 1)[0]
    assert "text (str, required)" in args
    assert "tags (list[str], optional)" in args
    returns = stub.split("Returns:", 1)[1]
    assert '{"id": int, "text": str}' in returns
    compile(stub + "\n    ...\n", "<stub>", "exec")  # it is Python


def test_stub_names_the_mcp_names_when_identifiers_differ() -> None:
    t = tool("get-user", "Fetch a user.")
    stub = F.stub(ToolStubSource("my-server", "my_server", "get_user", t))
    assert "Call: tools.my_server.get_user(...)  (MCP name: my-server/get-user)" in stub


def test_stub_without_description_args_or_output() -> None:
    stub = F.stub(source(tool("ping", description=None)))
    assert stub == (
        'def ping() -> Any:\n    """\n    No description.\n\n    Call: tools.srv.ping(...)\n    """'
    )


def test_stub_parameter_descriptions() -> None:
    t = tool(
        "q",
        properties={"path": {"type": "string", "description": "Where to look.\nAbsolute."}},
        required=("path",),
    )
    assert "        path (str, required): Where to look. Absolute." in F.stub(source(t))


def test_stub_returns_shape_of_a_wrapped_list_of_objects() -> None:
    item = {"type": "object", "properties": {"id": INT, "tags": {"type": "array", "items": STR}}}
    stub = F.stub(source(tool("l", output=wrapped({"type": "array", "items": item}))))
    assert stub.split("Returns:\n", 1)[1].splitlines()[0].strip() == (
        'list[{"id": int, "tags": list[str]}]'
    )


def test_shape() -> None:
    nested = {
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {"id": INT, "meta": {"type": "object", "properties": {"x": INT}}},
            },
            "n": {"type": "number"},
        },
    }
    assert F.shape(nested) == '{"user": {"id": int, "meta": dict}, "n": float}'
    assert F.shape({"type": "string"}) == "str"
    assert F.shape(None) is None


GOLDEN_TOOL = types.Tool(
    name="search-notes",
    description="Search notes by text and tags, best matches first.",
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for."},
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Only notes with all of these tags.",
            },
            "limit": {"type": "integer", "default": 10},
            "order": {"enum": ["newest", "oldest"], "default": "newest"},
            "since": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "ISO date.",
            },
        },
        "required": ["query"],
    },
    output_schema=wrapped(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "text": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["id", "text", "tags"],
            },
        }
    ),
)

GOLDEN_STUB = '''\
def search_notes(query: str, tags: list[str] = [], limit: int = 10, order: Literal['newest', 'oldest'] = 'newest', since: str | None = None) -> list[dict]:
    """
    Search notes by text and tags, best matches first.

    Call: tools.my_notes.search_notes(...)  (MCP name: my-notes/search-notes)

    Args:
        query (str, required): Words to look for.
        tags (list[str], optional): Only notes with all of these tags.
        limit (int, optional)
        order (Literal['newest', 'oldest'], optional)
        since (str | None, optional): ISO date.

    Returns:
        list[{"id": int, "text": str, "tags": list[str]}]
    """'''


def test_golden_stub() -> None:
    src = ToolStubSource("my-notes", "my_notes", "search_notes", GOLDEN_TOOL)
    assert F.stub(src) == GOLDEN_STUB
    assert F.signature(src) == (
        "tools.my_notes.search_notes(query: str, tags: list[str] = [], limit: int = 10, "
        "order: Literal['newest', 'oldest'] = 'newest', since: str | None = None) -> list[dict]"
    )


LONG_DESCRIPTION = (
    "Read the complete contents of a file from the file system. Handles various text "
    "encodings and provides detailed error messages if the file cannot be read. Use the "
    "'head' parameter to read only the first N lines of a file, or the 'tail' parameter "
    "to read only the last N lines."
)


@pytest.mark.parametrize(
    "description",
    [LONG_DESCRIPTION, "Read a file.\n\nUse 'head' to read only the first N lines."],
)
def test_stub_keeps_the_whole_description(description: str) -> None:
    stub = F.stub(source(tool("read_file", description)))
    assert "'head'" in " ".join(stub.split())
    assert "…" not in stub


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, ""),
        ("", ""),
        ("  One line.  ", "One line."),
        ("First paragraph\nwraps here.\n\nSecond paragraph.", "First paragraph wraps here."),
        ("x" * 160, "x" * 160),
        ("x" * 161, "x" * 159 + "…"),
    ],
)
def test_one_line(text: str | None, expected: str) -> None:
    assert one_line(text) == expected
    assert len(one_line(text)) <= 160

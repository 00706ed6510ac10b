"""A hand-written stdio JSON-RPC upstream whose tools carry hostile schemas and hostile text.

No MCP library (stdlib only), so the gateway sees exactly these bytes. Its tools:

- `schema_<name>` for each of `HOSTILE_SCHEMAS`: input (or output) schemas of just under
  64 KB built to make stub rendering slow: unions of arrays, nested `anyOf`, `$ref` cycles,
  huge enums and defaults, deep nesting, `allOf`, tuple `items`, thousands of properties,
  non-dict junk. With `--copies N` each is served N times (`schema_<name>_<i>`).
- `paint`: a name, description, parameter name and parameter description full of terminal
  escapes (CSI, OSC 8 links, a DCS string), C0/C1 controls and bidi overrides; `fail_paint`
  answers every call with such an error text; `PAINT_NAME` is a tool name holding them.
- With `--die`, it writes such text to stderr and exits before answering: its
  `list_servers` row shows the stderr tail.

The test modules import the builders from here (`HOSTILE_SCHEMAS`, `grown`, ...).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

LIMIT_BYTES = 64 * 1024
MAX_NESTING = 60  # levels of a nested schema
T = TypeVar("T")

# What `clean_text` must take out, as an upstream would put it in its text.
ESCAPES = (
    "\x1b[31;1m"  # CSI: red, bold
    "\x1b]8;;https://evil.example/\x07link\x1b]8;;\x1b\\"  # OSC 8 hyperlink
    "\x1b]0;title\x1b\\"  # OSC: window title
    "\x1bP+q544e\x1b\\"  # DCS
    "\x9b2J"  # 8-bit CSI: clear the screen
    "\x1b7\x1b(0\x1bc"  # two-character escapes
    "\x00\x07\x08\r\x0b\x0c\x7f\x85\x9c"  # C0, DEL, C1
    "\u202e\u202d\u202a\u202b\u202c\u2066\u2067\u2068\u2069\u200e\u200f\u061c"  # bidi
)
PAINT_NAME = "paint\x1b[2J\u202e"  # a tool name with escapes: callable, shown cleaned


def nested_array_unions(kinds: int, depth: int) -> dict[str, Any]:
    """Issue 26's schema: a type list of `kinds` array kinds, nested `depth` deep."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": ["array"] * kinds, "items": schema}
    return schema


def grown(make: Callable[[int], T], limit: int = LIMIT_BYTES) -> T | None:
    """`make(n)` for the largest n whose JSON (`json.dumps`, or a pydantic model's dump) is
    at most `limit` bytes; None when even `make(1)` is bigger."""

    def fits(n: int) -> bool:
        value: Any = make(n)
        if hasattr(value, "model_dump"):
            value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return len(json.dumps(value)) <= limit

    if not fits(1):
        return None
    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return make(low)


def _object(props: dict[str, Any], *, required: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(props)
    return schema


def _many(prop: Callable[[int], Any], *, required: bool = False) -> Callable[[int], Any]:
    return lambda n: _object({f"p{i}": prop(i) for i in range(n)}, required=required)


def _nest(leaf: Any, wrap: Callable[[Any], Any], depth: int) -> Any:
    for _ in range(depth):
        leaf = wrap(leaf)
    return leaf


def _deep(wrap: Callable[[Any], Any]) -> Callable[[int], Any]:
    """A property nested `MAX_NESTING` deep (deeper is no JSON a client parses), and a long
    description beside it to fill the rest."""
    return lambda n: _object(
        {"x": _nest({"type": "integer"}, wrap, MAX_NESTING), "pad": {"description": "w " * n}}
    )


_LONG_LIST_ENUM = {"enum": [[0] * 30] * 12}  # each literal is over the literal bound
_UNION_OF_ENUMS = {"anyOf": [_LONG_LIST_ENUM] * 8}

# name -> (input schema grower, output schema grower or None)
_GROWERS: dict[str, tuple[Callable[[int], Any], Callable[[int], Any] | None]] = {
    "issue26_unions_of_arrays": (_many(lambda _: nested_array_unions(7, 7)), None),
    "arrays_of_unions_of_enums": (
        _many(lambda _: {"type": ["array"] * 8, "items": _UNION_OF_ENUMS}),
        None,
    ),
    "unions_of_long_enums": (_many(lambda _: _UNION_OF_ENUMS, required=True), None),
    "many_small_failing_literals": (
        _many(lambda _: {"anyOf": [{"enum": [[0] * 16 + ["ab"] * 4] * 12}] * 8}),
        None,
    ),
    "nested_anyof": (
        _many(lambda _: _nest({"type": "integer"}, lambda s: {"anyOf": [s, s, s]}, 6)),
        None,
    ),
    "deep_arrays": (_deep(lambda s: {"type": "array", "items": s}), None),
    "deep_additional_properties": (_deep(lambda s: {"additionalProperties": s}), None),
    "deep_properties": (_deep(lambda s: _object({"a": s, "b": {"enum": [1]}})), None),
    "deep_unions": (
        _deep(lambda s: {"type": ["array", "null"], "items": {"anyOf": [s, {"enum": [[0] * 9]}]}}),
        None,
    ),
    "ref_cycles": (
        _many(lambda i: {"$ref": f"#/properties/p{i}", "anyOf": [{"$ref": "#"}] * 8}),
        None,
    ),
    "huge_enum": (lambda n: _object({"e": {"enum": [f"v{i}" for i in range(n)]}}), None),
    "huge_default": (lambda n: _object({"d": {"type": "array", "default": list(range(n))}}), None),
    "many_defaults": (_many(lambda _: {"default": [[["x" * 20] * 3] * 3] * 3}), None),
    "all_of": (_many(lambda _: {"allOf": [{"type": "string"}, {"$ref": "#"}] * 8}), None),
    "tuple_items": (_many(lambda _: {"type": "array", "items": [{"enum": [[0] * 30]}] * 8}), None),
    "many_properties": (_many(lambda _: {"type": "string"}, required=True), None),
    "long_names_and_docs": (
        lambda n: _object({("n" * 900) + str(i): {"description": "word " * 200} for i in range(n)}),
        None,
    ),
    "junk_everywhere": (
        _many(
            lambda _: {
                "type": [7, None, "array", {}],
                "items": [1],
                "anyOf": 3,
                "enum": "no",
                "properties": [],
                "additionalProperties": 5,
                "description": 9,
                "default": {"k": [None, True, 1.5, {"x": []}]},
            }
        ),
        None,
    ),
    "output_shapes": (
        lambda _: _object({}),
        _many(
            lambda _: _object(
                {f"k{j}": {"anyOf": [{"enum": [[0] * 30] * 2}] * 2} for j in range(12)}
            )
        ),
    ),
    "output_unions": (
        lambda _: _object({}),
        _many(lambda _: _nest({}, lambda s: {"anyOf": [s, {"type": "array", "items": s}]}, 8)),
    ),
}


def _hostile_tool(name: str, n: int) -> dict[str, Any]:
    grow_input, grow_output = _GROWERS[name]
    tool: dict[str, Any] = {
        "name": f"schema_{name}",
        "description": f"A hostile schema: {name}",
        "inputSchema": grow_input(n if grow_output is None else 1),
    }
    if grow_output is not None:
        tool["outputSchema"] = grow_output(n)
    return tool


def _hostile_tools() -> dict[str, dict[str, Any]]:
    """Each hostile tool, grown to just under `LIMIT_BYTES` of JSON."""
    tools = {}
    for name in _GROWERS:
        tool = grown(lambda n, name=name: _hostile_tool(name, n))
        assert tool is not None, name
        tools[name] = tool
    return tools


def _as_model(tool: dict[str, Any]) -> Callable[[], Any]:
    def model() -> Any:
        import mcp_types  # the tests' side only: this server stays stdlib

        return mcp_types.Tool.model_validate(tool)

    return model


HOSTILE_TOOLS = _hostile_tools()
HOSTILE_SCHEMAS: dict[str, Callable[[], Any]] = {
    name: _as_model(tool) for name, tool in HOSTILE_TOOLS.items()
}
"""Each hostile tool as an `mcp_types.Tool` (made when called)."""

PAINT_TOOLS = [
    {
        "name": "paint",
        "description": f"Paint{ESCAPES} the {ESCAPES}screen.\n\nSecond{ESCAPES} paragraph.",
        "inputSchema": _object(
            {
                f"colour{ESCAPES}": {"type": "string", "description": f"A{ESCAPES} colour"},
                "shade": {"enum": [f"dark{ESCAPES}", "light"], "default": f"x{ESCAPES}"},
            }
        ),
    },
    {"name": PAINT_NAME, "description": f"Named{ESCAPES}.", "inputSchema": _object({})},
    {"name": "fail_paint", "description": "Fails.", "inputSchema": _object({})},
]


def _tools(copies: int) -> list[dict[str, Any]]:
    tools = list(PAINT_TOOLS)
    for name, tool in HOSTILE_TOOLS.items():
        for i in range(copies):
            tools.append({**tool, "name": f"schema_{name}" + (f"_{i}" if copies > 1 else "")})
    return tools


def _answer(request: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "schemas", "version": "1"},
            }
        }
    if method == "ping":
        return {"result": {}}
    if method == "tools/list":
        return {"result": {"tools": tools}}
    if method == "tools/call":
        name = params.get("name")
        error = name == "fail_paint"
        text = f"it failed{ESCAPES} badly" if error else f"called {name}"
        return {"result": {"content": [{"type": "text", "text": text}], "isError": error}}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    if "--die" in sys.argv:
        sys.stderr.write(f"fatal{ESCAPES}: cannot start\nsecond{ESCAPES} line\n")
        sys.exit(3)
    copies = int(sys.argv[sys.argv.index("--copies") + 1]) if "--copies" in sys.argv else 1
    tools = _tools(copies)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "id" not in request or "method" not in request:
            continue  # a notification or a response: nothing to answer
        reply = _answer(request, tools)
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], **reply}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

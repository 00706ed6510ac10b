"""`clean_text`: what an upstream wrote, as a model or a terminal may be shown it.

Terminal escape sequences (CSI, OSC, DCS and the other strings, two-character escapes),
C0 and C1 controls but newline and tab, and bidi embeddings, overrides, isolates and marks
are removed; every other text, whatever its script, comes back unchanged. Then the same
through what shows upstream text: stubs, listings, signatures, search hits.
"""

from __future__ import annotations

import re
import time
from typing import Any

import mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_code_mode.catalog import Catalog, ToolEntry
from mcp_code_mode.encodable import clean_text
from mcp_code_mode.tool_docs import Listing, listing, tool_docs
from mcp_code_mode.tool_formatter import ToolSchemaFormatter, clip, one_line

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
FORBIDDEN = {chr(c) for c in [*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]} | set(BIDI)
UNCLEAN = re.compile("[" + re.escape("".join(sorted(FORBIDDEN))) + "\ud800-\udfff]")

# Pieces of escape sequences, so drawn text holds whole, broken and nested sequences.
PIECES = [
    "\x1b",
    "\x1b[",
    "\x1b]",
    "\x1bP",
    "\x1b\\",
    "\x07",
    "\x9b",
    "\x9c",
    "\x9d",
    "\x90",
    "[31m",
    "0;1;",
    "8;;http://e/",
    "(B",
    "7",
    "\r\n",
    "\t",
    "\x00",
    "\x85",
    "\ud800",
    *BIDI,
]
hostile_text = st.lists(st.sampled_from(PIECES) | st.text(max_size=5), max_size=40).map("".join)
ordinary_text = st.text(
    st.characters(blacklist_characters="".join(FORBIDDEN), blacklist_categories=("Cs",))
)


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("\x1b[31;1mred\x1b[0m plain", "red plain"),
        ("a\x1b]8;;https://evil.example/\x07link\x1b]8;;\x1b\\b", "alinkb"),
        ("a\x1b]0;window title\x1b\\b", "ab"),
        ("a\x1bP+q544e\x1b\\b", "ab"),
        ("a\x9b2Jb", "ab"),
        ("a\x9d0;title\x9cb", "ab"),
        ("a\x1b7b\x1b(0c\x1bcd", "abcd"),
        ("a\x1b]unterminated", "aunterminated"),  # the rest is shown as the text it is
        ("a\x1b[", "a"),
        ("line\r\nnext\ttab\x00\x07\x08\x0b\x0c\x7f\x85end", "line\nnext\ttabend"),
        ("abc\u202edcba\u202c \u2067x\u2069 \u200e\u200f\u061c", "abcdcba x "),
        ("a\ud800b", "a\ufffdb"),
    ],
)
def test_what_is_removed(text: str, clean: str) -> None:
    assert clean_text(text) == clean


@pytest.mark.parametrize(
    "text",
    [
        "Добрый день, мир",
        "こんにちは世界 · 漢字",
        "مرحبا بالعالم",  # right-to-left text without bidi controls
        "שלום עולם",
        "👩‍👩‍👧‍👦 family, 🇫🇷 flag, 👍🏽 thumbs",  # zero-width joiners stay
        "e\u0301 combining, \u200b zero width space",
        "tabs\tand\nnewlines\n",
        "",
        "[31m text that looks like an escape without ESC",
    ],
)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert clean_text(text) == text


@given(hostile_text)
def test_nothing_forbidden_is_left(text: str) -> None:
    assert not UNCLEAN.search(clean_text(text))


@given(st.text())
def test_nothing_forbidden_is_left_in_any_text(text: str) -> None:
    cleaned = clean_text(text)
    assert not UNCLEAN.search(cleaned)
    assert clean_text(cleaned) == cleaned  # cleaning twice changes nothing more


@given(ordinary_text)
def test_any_ordinary_text_is_unchanged(text: str) -> None:
    assert clean_text(text) == text


@pytest.mark.parametrize(
    "unit", ["\x1b]", "\x9da", "\x1b[0;", "\x1b", BIDI, "a\x00", "\x1bP" + "x" * 100]
)
def test_cleaning_is_linear(unit: str) -> None:
    text = unit * (1_000_000 // len(unit))
    started = time.perf_counter()
    cleaned = clean_text(text)
    assert time.perf_counter() - started < 2.0  # about 0.1 s; quadratic would be hours
    assert not UNCLEAN.search(cleaned)


# --- where upstream text is shown ----------------------------------------------------------

FORMATTER = ToolSchemaFormatter()
BOUNDED = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tool(name: str, description: str, param: str, doc: str, value: str) -> mcp_types.Tool:
    props: dict[str, Any] = {
        param: {"type": "string", "description": doc, "default": value},
        "choice": {"enum": [value, "x"]},
    }
    output = {"type": "object", "properties": {param: {"type": "string"}}}
    return mcp_types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": props},
        output_schema=output,
    )


@BOUNDED
@given(hostile_text, hostile_text, hostile_text, hostile_text, hostile_text)
def test_stubs_listings_and_signatures_are_clean(
    name: str, description: str, param: str, doc: str, value: str
) -> None:
    tool = _tool(name or "t", description, param or "p", doc, value)
    entry = ToolEntry(f"srv{BIDI}", tool.name, "srv", "t", tool)
    about = Listing(entry.server, "srv", description, total=1)
    shown = [
        tool_docs(FORMATTER, entry),
        listing(FORMATTER, about, [entry]),
        listing(FORMATTER, about, [entry] * 60, page=2),  # compact lines
        FORMATTER.signature(entry.source),
        one_line(description),
        clip(name, 64),
    ]
    for text in shown:
        assert not UNCLEAN.search(text), repr(text)


@pytest.fixture(scope="module")
def painted() -> Catalog:
    tools = [
        _tool(
            "paint\x1b[2J\u202e", "Paint\x1b[31m the\u202e screen.", "colour\x1b]0;x\x07", "", ""
        ),
        _tool("plain", "Plain text.", "p", "", ""),
    ]
    return Catalog({"paint": tools}, background=False)


def test_search_hits_are_clean_and_the_name_still_calls(painted: Catalog) -> None:
    (hit,) = painted.search("paint the screen", 1)
    assert hit.tool == "paint" and hit.description == "Paint the screen."
    assert not UNCLEAN.search(hit.signature)
    entry = painted.get("paint", "paint\x1b[2J\u202e")  # the original name is the one called
    assert entry.tool == "paint\x1b[2J\u202e"

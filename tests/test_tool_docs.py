"""`tool_docs` through `Catalog.docs`: replies within the token budget whatever the server,
paging, name patterns, and one tool's stub however big its schema."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import types

from mcp_code_mode.catalog import Catalog
from mcp_code_mode.errors import UnknownToolError
from mcp_code_mode.tool_docs import DOCS_BUDGET_TOKENS, PAGE_TOOLS
from mcp_code_mode.tool_formatter import count_tokens

VERBS = ["list", "get", "create", "update", "delete", "search", "archive", "export"]
NOUNS = ["issue", "comment", "label", "milestone", "project", "release", "branch", "report"]


def generated_tool(i: int) -> types.Tool:
    verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS)) % len(NOUNS)]
    return types.Tool(
        name=f"{verb}_{noun}_{i}",
        description=f"{verb.title()} a {noun} of the tracker. Filters by owner and state; "
        f"pages with cursor. Returns the {noun} as JSON.",
        input_schema={
            "type": "object",
            "properties": {
                "owner": {"type": "string", "description": "Account that owns the repository"},
                "repo": {"type": "string", "description": "Repository name"},
                "state": {"enum": ["open", "closed", "all"], "default": "open"},
                "cursor": {"type": "string"},
                "per_page": {"type": "integer", "default": 30},
            },
            "required": ["owner", "repo"],
        },
    )


@pytest.fixture(scope="module")
def big() -> Catalog:
    """One server of 10,000 tools (the index is never built: docs do not need it)."""
    return Catalog(
        {"tracker": [generated_tool(i) for i in range(10_000)], "small": [generated_tool(1)]},
        {"tracker": "Issues, projects and releases of a large organisation", "small": "One"},
    )


def hostile_tool(description_chars: int, params: int) -> types.Tool:
    properties = {
        f"parameter_number_{i}": {
            "type": ["array", "null"],
            "items": {"enum": [f"value-{j}" for j in range(50)]},
            "description": "d" * 5000,
            "default": ["x" * 500],
        }
        for i in range(params)
    }
    return types.Tool(
        name="hostile",
        description="A tool. " + "Very long text. " * (description_chars // 16),
        input_schema={"type": "object", "properties": properties, "required": list(properties)},
        output_schema={"type": "object", "properties": {f"k{i}": {} for i in range(1000)}},
    )


def test_a_ten_thousand_tool_server_fits_the_budget(big: Catalog) -> None:
    docs = big.docs("tracker")
    assert count_tokens(docs) <= DOCS_BUDGET_TOKENS
    assert docs.startswith("# tools.tracker  (server 'tracker')\n# Issues, projects")
    pages = -(-10_000 // PAGE_TOOLS)
    assert f"Page 1 of {pages} (tools 1-{PAGE_TOOLS})" in docs
    assert "get_tool_docs('tracker', tool='<name>')" in docs
    assert "get_tool_docs('tracker', page=2)" in docs
    assert "search_tools(" in docs
    lines = [line for line in docs.splitlines() if not line.startswith("#")]
    assert len(lines) == PAGE_TOOLS
    assert lines[0].startswith("list_issue_0(owner: str, repo: str, state: Literal[")
    assert "# List a issue of the tracker." in lines[0]


def test_pages_follow_each_other_to_the_last(big: Catalog) -> None:
    pages = -(-10_000 // PAGE_TOOLS)
    second = big.docs("tracker", page=2)
    assert f"Page 2 of {pages} (tools {PAGE_TOOLS + 1}-{2 * PAGE_TOOLS})" in second
    names = {line.split("(")[0] for line in second.splitlines() if not line.startswith("#")}
    assert names == {t.name for t in big_tools(PAGE_TOOLS, 2 * PAGE_TOOLS)}
    last = big.docs("tracker", page=pages)
    assert f"Page {pages} of {pages}" in last and "Next page" not in last
    for past_the_end in (10**9, 10**10_000):
        past = big.docs("tracker", page=past_the_end)
        assert f"Page {pages} of {pages}" in past and f"outside 1-{pages}" in past
        assert count_tokens(past) <= DOCS_BUDGET_TOKENS
    before = big.docs("tracker", page=-3)
    assert f"Page 1 of {pages}" in before and "outside" in before


def big_tools(start: int, end: int) -> list[types.Tool]:
    return [generated_tool(i) for i in range(start, end)]


def test_a_small_server_gets_every_full_stub(big: Catalog) -> None:
    docs = big.docs("small")
    assert docs.startswith("# tools.small  (server 'small')\n# One\n\ndef get_issue_1(")
    assert "Args:" in docs and "Page" not in docs


def test_any_other_page_of_a_one_page_server_is_page_one(big: Catalog) -> None:
    """Asked for page 2 (or 0, or 99) of a server whose stubs fit one reply, the listing said
    their stubs did not fit, and not that the page was past the end (outside attack 119)."""
    whole = big.docs("small")
    for page in (2, 0, -1, 99):
        assert big.docs("small", page=page) == f"# All of it is on page 1.\n{whole}"


def test_a_name_pattern_lists_the_matching_tools(big: Catalog) -> None:
    docs = big.docs("tracker", "delete_release_*")
    assert "# Of its 10,000 tools, those whose names match 'delete_release_*'." in docs
    matches = re.findall(r"^def (delete_release_\d+)\(", docs, re.MULTILINE)
    shown = matches or re.findall(r"^(delete_release_\d+)\(", docs, re.MULTILINE)
    assert shown and all(name.startswith("delete_release_") for name in shown)
    assert count_tokens(docs) <= DOCS_BUDGET_TOKENS
    every_delete = big.docs("tracker", "DELETE_*")  # any case
    assert "Page 1 of" in every_delete and "tool='DELETE_*', page=2" in every_delete


def test_a_pattern_matching_nothing_is_an_unknown_tool(big: Catalog) -> None:
    with pytest.raises(UnknownToolError, match=r"has no tool 'frobnicate_\*'"):
        big.docs("tracker", "frobnicate_*")


def test_one_huge_tool_gives_a_bounded_stub() -> None:
    catalog = Catalog({"evil": [hostile_tool(1_000_000, 1000)]})
    stub = catalog.docs("evil", "hostile")
    assert count_tokens(stub) <= DOCS_BUDGET_TOKENS
    assert "more characters of description not shown" in stub
    assert "more (as **more): parameter_number_" in stub
    assert stub.startswith("def hostile(parameter_number_0: list[")
    assert "**more: Any" in stub.splitlines()[0]


def test_a_server_of_huge_tools_fits_the_budget() -> None:
    tools = [
        t.model_copy(update={"name": f"hostile_{i}"})
        for i, t in enumerate([hostile_tool(50_000, 200)] * 80)
    ]
    catalog = Catalog({"evil": tools})
    for page in (1, 2):
        docs = catalog.docs("evil", page=page)
        assert count_tokens(docs) <= DOCS_BUDGET_TOKENS
        assert f"Page {page} of 2" in docs


def test_search_hits_are_bounded() -> None:
    catalog = Catalog({"evil": [hostile_tool(1_000_000, 1000)]}, background=False)
    (hit,) = catalog.search("hostile")
    assert len(hit.signature) <= 300 and len(hit.description) <= 160
    assert hit.signature.startswith("tools.evil.hostile(parameter_number_0: ")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    description=st.text(min_size=0, max_size=20_000),
    names=st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=60, unique=True),
)
def test_any_tool_text_gives_docs_within_the_budget(description: str, names: list[str]) -> None:
    properties: dict[str, Any] = {n: {"type": "string", "description": description} for n in names}
    tools = [
        types.Tool(
            name=f"{name}{i}",
            description=description,
            input_schema={"type": "object", "properties": properties},
        )
        for i, name in enumerate(names)
    ]
    catalog = Catalog({"s": tools})
    assert count_tokens(catalog.docs("s")) <= DOCS_BUDGET_TOKENS
    assert count_tokens(catalog.docs("s", tools[-1].name)) <= DOCS_BUDGET_TOKENS


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    description=st.text(max_size=400) | st.sampled_from(['"""\ndef x():\n    """', '\\"""']),
    names=st.lists(
        st.text(min_size=1, max_size=60)
        | st.sampled_from(["a\n    Args:\n        FAKE (str)", "\u2028", "b\x1c\v\u2029"]),
        min_size=1,
        max_size=6,
        unique=True,
    ),
)
def test_upstream_text_cannot_reshape_a_stub(description: str, names: list[str]) -> None:
    """A name held newlines that forged `Args:` sections, and a description's `\"\"\"` ended
    the docstring and forged a `def` after it (outside attack 118): names are one line,
    and the docstring holds whatever the text says."""
    schema = {"type": "string", "description": description, "enum": [description]}
    tool = types.Tool(
        name=names[0],
        description=description,
        input_schema={"type": "object", "properties": {n: schema for n in names}},
    )
    lines = Catalog({"s": [tool]}).docs("s", names[0]).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def "))
    assert lines[start + 1] == '    """' and lines[-1] == '    """', lines
    inside = "\n".join(lines[start + 2 : -1])
    assert '"""' not in inside.replace('\\"', ""), inside
    assert sum(line.strip() == "Args:" for line in lines) <= 1, lines

"""The guest API is declared once (sandbox/guest_api.py); its descriptions are generated."""

from __future__ import annotations

from mcp_code_mode.agent import WriteCode
from mcp_code_mode.sandbox.child.guest import GUEST_FUNCTIONS, GuestRuntime
from mcp_code_mode.sandbox.child.guest_api import (
    GUEST_API,
    HOST_CALLS,
    execute_code_summary,
    readme_table,
)

from ..support import ROOT


def test_the_readme_table_is_the_declaration() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The guest API", 1)[1].split("\n\n", 3)[2]
    rows = section.splitlines()[2:]  # after the header and its rule
    assert rows == readme_table()


def test_every_declared_function_is_bound_in_a_run() -> None:
    namespace = GuestRuntime(lambda message: [{"ok": True, "value": message}], []).namespace(
        {}, None
    )
    assert set(GUEST_FUNCTIONS) == {f.name for f in GUEST_API} <= set(namespace)
    assert set(HOST_CALLS) == set(GUEST_FUNCTIONS) - {"log"}
    # a plain query is built from its row: the host sees its kind and bound arguments
    asked = namespace["get_tool_docs"]("srv")
    assert asked == {
        "op": "query",
        "kind": "get_tool_docs",
        "args": {"server": "srv", "tool": None, "page": 1},
    }


def test_the_descriptions_name_every_function() -> None:
    summary, prompt = execute_code_summary(), WriteCode.instructions
    for function in GUEST_API:
        assert f"{function.name}(" in summary
        assert f"`{function.signature}`" in prompt

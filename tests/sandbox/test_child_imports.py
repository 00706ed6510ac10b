"""The child side imports the stdlib and `sandbox.protocol` only (import-linter keeps our own
modules out; this keeps third-party packages out, which a forbidden list cannot name)."""

from __future__ import annotations

import sys

import grimp

CHILD = "mcp_code_mode.sandbox.child"


def _imported_by_child(graph: grimp.ImportGraph) -> set[str]:
    imported: set[str] = set()
    for module in graph.find_descendants(CHILD) | {CHILD}:
        imported |= graph.find_modules_directly_imported_by(module)
    return imported


def test_the_child_side_imports_only_the_stdlib_and_protocol() -> None:
    graph = grimp.build_graph("mcp_code_mode", include_external_packages=True, cache_dir=None)
    outside = {
        name
        for name in _imported_by_child(graph)
        if not name.startswith(f"{CHILD}.") and name != CHILD
    }
    ours = {name for name in outside if name.startswith("mcp_code_mode")}
    assert ours <= {"mcp_code_mode", "mcp_code_mode.sandbox", "mcp_code_mode.sandbox.protocol"}
    foreign = {name.partition(".")[0] for name in outside - ours}
    assert foreign, "the graph lists no stdlib import: the check would pass vacuously"
    # `pyodide` is the Pyodide runtime's own package (its event loop: `child/pyodide_loop.py`),
    # imported only when the child runs there, where it ships with the interpreter
    platform = set(sys.stdlib_module_names) | {"pyodide"}
    assert foreign <= platform, foreign - platform


def test_protocol_itself_is_stdlib_only() -> None:
    graph = grimp.build_graph("mcp_code_mode", include_external_packages=True, cache_dir=None)
    imported = graph.find_modules_directly_imported_by("mcp_code_mode.sandbox.protocol")
    foreign = {name.partition(".")[0] for name in imported if not name.startswith("mcp_code_mode")}
    assert foreign <= set(sys.stdlib_module_names)

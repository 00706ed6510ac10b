"""The house's size limits for src/: no module over 400 lines, no function over 50.

Counted as `wc -l` counts a module, and a function from its `def` (decorators aside) to its
last line, docstring included. Ruff's C901 (complexity 10) and PLR0915 (50 statements) are on
for src/ as well (pyproject.toml).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mcp_code_mode"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50
MODULES = sorted(SRC.rglob("*.py"))


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{node.name} (line {node.lineno}): {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_there_are_modules_to_measure() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_module_and_function_sizes(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines (at most {MAX_MODULE_LINES})"
    assert _long_functions(path) == []

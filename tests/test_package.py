"""The package surface: a pinned `__all__`, and a worker that never pays for heavy imports."""

from __future__ import annotations

import subprocess
import sys

import mcp_code_mode


def test_package_all_is_pinned() -> None:
    assert mcp_code_mode.__all__ == ["__version__"]
    assert mcp_code_mode.__version__ == "0.1.0"


def test_worker_modules_import_no_heavy_dependencies() -> None:
    probe = (
        "import sys, mcp_code_mode.sandbox.child.worker, mcp_code_mode.sandbox.policy\n"
        "print(sorted(m for m in ('pydantic', 'fastmcp', 'mcp', 'dspy', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"

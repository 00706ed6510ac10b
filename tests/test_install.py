"""A wheel built from the checkout carries the whole command: `pipx install .` /
`uv tool install .` install exactly this wheel (and its dependencies) for people who only
want `mcp-code-mode`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .support import ROOT

pytestmark = pytest.mark.slow


def _copy_of_the_checkout(into: Path) -> Path:
    """What a wheel is built from, copied: the build writes beside its sources (egg-info,
    build/), which a read-only checkout (the unprivileged suite) does not allow."""
    into.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, into / name)
    caches = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", into / "src", ignore=caches)
    return into


def test_a_wheel_of_the_checkout_runs_the_command_from_anywhere(tmp_path: Path) -> None:
    checkout = _copy_of_the_checkout(tmp_path / "checkout")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            str(checkout),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("mcp_code_mode-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    needed_files = (
        "sandbox/child/zygote.py",
        "sandbox/pyodide_runner.mjs",
        "sandbox/child/pyodide_guest.py",
    )
    for needed in needed_files:
        assert f"mcp_code_mode/{needed}" in names  # files the sandbox starts from, not imports
    site = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    # the wheel's package first (the dependencies come from this environment)
    env = {**os.environ, "PYTHONPATH": str(site), "MCP_CODE_POOL_SIZE": "1"}
    command = str(site / "bin" / "mcp-code-mode")
    version = subprocess.run([command, "--version"], capture_output=True, text=True, env=env)
    assert version.returncode == 0 and version.stdout.strip() == "mcp-code-mode 0.1.0"
    ran = subprocess.run(
        [command, "exec", "--code", "1 + 1"],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=120,
    )
    assert ran.returncode == 0 and ran.stdout.strip() == "2", ran.stdout + ran.stderr
    where = subprocess.run(
        [sys.executable, "-c", "import mcp_code_mode, sys; print(mcp_code_mode.__file__)"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert where.stdout.startswith(str(site))  # it was the wheel's code that ran

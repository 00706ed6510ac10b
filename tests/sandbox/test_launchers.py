"""The backend table: every MCP_EXECUTOR value has a launcher, and each one says so."""

from __future__ import annotations

from typing import get_args

from mcp_code_mode.sandbox.launchers import LAUNCHERS, launcher_for
from mcp_code_mode.settings import ExecutorName, Settings


def test_the_table_covers_every_executor_name() -> None:
    assert set(LAUNCHERS) == set(get_args(ExecutorName))


def test_each_launcher_is_named_for_its_row_and_has_sessions() -> None:
    settings = Settings()
    for name in get_args(ExecutorName):
        launcher = launcher_for(settings, name)
        assert launcher.name == name
        assert launcher.sessions  # the agent's steps and dspy sessions hold one worker


def test_mcp_executor_picks_the_row() -> None:
    assert launcher_for(Settings(executor="pyodide")).name == "pyodide"
    assert launcher_for(Settings(executor="local")).name == "local"

"""What the host makes of a worker's `done` report (`sandbox/results.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_code_mode.errors import WorkerCrashed
from mcp_code_mode.sandbox.results import from_done


def _done(**fields: Any) -> Any:
    return {
        "op": "done",
        "ok": True,
        "result": None,
        "stdout": "",
        "logs": [],
        "error": None,
    } | fields


def test_a_report_within_the_budget_is_used() -> None:
    result = from_done(_done(stdout="x" * 100_000, result="y" * 10), max_output_chars=100_000)
    assert result.ok and len(result.stdout) == 100_000 and result.result == "y" * 10


@pytest.mark.parametrize(
    "fields",
    [
        {"stdout": "x" * 300_000},
        {"logs": ["x" * 1000] * 300},
        {"result": ["x" * 1000] * 300},
    ],
)
def test_a_report_far_past_the_budget_is_not_used(fields: dict[str, Any]) -> None:
    """Only a worker whose guest code wrote to the channel itself sends one (outside attack
    30: a forged `done` line copied in with `os.sendfile`)."""
    with pytest.raises(WorkerCrashed, match="past the run's limit"):
        from_done(_done(**fields), max_output_chars=100_000)

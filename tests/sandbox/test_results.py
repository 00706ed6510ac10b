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
    with pytest.raises(WorkerCrashed, match="past the run's output limit"):
        from_done(_done(**fields), max_output_chars=100_000)


def test_a_huge_or_deep_report_costs_no_more_than_its_budget() -> None:
    """A forged report of 31 million list items was walked whole on the event loop, and
    one nested 1,000 deep raised RecursionError past the handler (outside attack 31)."""
    import time

    started = time.perf_counter()
    with pytest.raises(WorkerCrashed, match="past the"):
        from_done(_done(result=[0] * 31_000_000), max_output_chars=100_000)
    assert time.perf_counter() - started < 5.0  # walks ~300k items, not 31 million
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(WorkerCrashed, match="nested more than"):
        from_done(_done(result=deep), max_output_chars=100_000)
    with pytest.raises(WorkerCrashed, match="malformed"):
        from_done(_done(logs=[deep]), max_output_chars=100_000)
    assert from_done(_done(result=[[["fine"]]]), max_output_chars=100_000).result == [[["fine"]]]

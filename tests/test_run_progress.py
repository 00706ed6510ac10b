"""Live progress (contract §4, §10): a client that sends a progress token gets rate-limited
`notifications/progress` while a run makes upstream calls, and what the code reports with
`progress(...)`; a client that sends none gets none."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
from fastmcp import Client
from mcp import types as mcp_types

from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.runs.progress import DEFAULT_INTERVAL_S, RunProgress

from .support import TEST_SERVER, ConfigWriter, server_entry, start_gateway

HUNDRED_CALLS = """
for i in range(100):
    tools.testsrv.sleep(seconds=0.01)
"done"
"""
REPORTED = """
for i in range(40):
    tools.testsrv.sleep(seconds=0.01)
    progress(i + 1, 40, f"item {i + 1}")
"done"
"""

Notice = tuple[float, float, float | None, str | None]  # when, progress, total, message


@pytest.fixture
async def testsrv(write_config: ConfigWriter) -> Any:
    gateway = await start_gateway(write_config({"testsrv": server_entry(TEST_SERVER)}))
    try:
        yield gateway
    finally:
        await gateway.aclose()


async def _run(gateway: Gateway, code: str) -> tuple[mcp_types.CallToolResult, list[Notice]]:
    """`code` through execute_code, by a fastmcp Client with a progress handler."""
    got: list[Notice] = []

    async def handler(progress: float, total: float | None, message: str | None) -> None:
        got.append((time.monotonic(), progress, total, message))

    async with Client(build_server(gateway), progress_handler=handler) as client:
        result = await client.call_tool_mcp("execute_code", {"code": code})
        # The client runs each handler in a task of its own: wait until no notice has come
        # for 1 s (0.2 s lost the last one on a busy machine, twice), at most 10 s.
        seen, quiet = -1, 0
        for _ in range(50):
            await asyncio.sleep(0.2)
            quiet = quiet + 1 if len(got) == seen else 0
            if quiet == 5:
                break
            seen = len(got)
    return result, got


async def test_a_hundred_call_run_sends_rate_limited_progress(testsrv: Gateway) -> None:
    started = time.monotonic()
    result, got = await _run(testsrv, HUNDRED_CALLS)
    took = time.monotonic() - started
    assert result.is_error is False
    assert len(got) >= 2
    # At most one per interval (the first at once; the last state when the run ends).
    assert len(got) <= took / DEFAULT_INTERVAL_S + 2
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(got[:-1])]
    assert all(gap >= DEFAULT_INTERVAL_S * 0.8 for gap in gaps), gaps
    counts = [notice[1] for notice in got]
    assert counts == sorted(counts) and counts[-1] == 100.0
    assert all(notice[2] is None for notice in got)
    assert got[-1][3] is not None and got[-1][3].startswith("100 calls, ")


async def test_what_the_code_reports_is_forwarded(testsrv: Gateway) -> None:
    result, got = await _run(testsrv, REPORTED)
    assert result.is_error is False
    reported = [notice for notice in got if notice[2] == 40.0]
    assert reported and reported[-1][1:] == (40.0, 40.0, "item 40")  # the last one always
    assert all(message is not None and message.startswith("item ") for *_, message in reported)


async def test_a_client_without_a_progress_token_gets_none(testsrv: Gateway) -> None:
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        seen.append(message)

    async with Client(build_server(testsrv), message_handler=on_message) as client:
        # The MCP session's own call sends no progress token (fastmcp's always sends one).
        result = await client.session.call_tool("execute_code", {"code": REPORTED})
        with_token = await client.call_tool_mcp("execute_code", {"code": HUNDRED_CALLS})
        await asyncio.sleep(0.2)
    assert result.is_error is False and with_token.is_error is False
    progress = [m for m in seen if isinstance(m, mcp_types.ProgressNotification)]
    # Only the second call, which sent a token, got any: none says what the first reported.
    assert progress and not [m for m in progress if str(m.params.message).startswith("item")]


async def test_progress_is_a_no_op_without_a_client_and_checks_its_arguments(
    any_gateway: Gateway,
) -> None:
    ok = await any_gateway.execute("progress(1)\nprogress(2, 3, 'two of three')\n'fine'")
    assert ok.ok and ok.result == "fine"
    for call in ("progress('1')", "progress(1, total=float('nan'))", "progress(1, message=2)"):
        failed = await any_gateway.execute(call)
        assert not failed.ok and failed.error is not None
        assert "TypeError" in failed.error.message


async def test_both_executors_forward_progress_to_the_run(any_gateway: Gateway) -> None:
    sent: list[tuple[float, float | None, str | None]] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        sent.append((progress, total, message))

    watched = RunProgress(sink)
    code = "for i in range(3):\n    progress(i + 1, 3, 'step')\n'done'"
    reply = await any_gateway.execute(code, progress=watched)
    await watched.close()
    assert reply.ok, reply.error
    # The first at once, the last because it completes the total; the middle one was too soon.
    assert sent[0] == (1.0, 3.0, "step") and sent[-1] == (3.0, 3.0, "step")


async def test_progress_sent_only_increases(any_gateway: Gateway) -> None:
    """MCP: "the progress value MUST increase with each notification". Guest code may
    report anything, and its numbers follow the call count (the run's own reports, 12 calls
    then `progress(1, 10)`): a notification that would not increase is not sent."""
    sent: list[tuple[float, float | None, str | None]] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        sent.append((progress, total, message))

    watched = RunProgress(sink, interval_s=0)
    watched.call_ended()
    watched.call_ended()
    # each report completes its total, so the guest sends every one (none is too soon)
    code = "\n".join(f"progress({n}, {n})" for n in (1, 5, -1, 5, 4, 9)) + "\n'done'"
    reply = await any_gateway.execute(code, progress=watched)
    await watched.close()
    assert reply.ok, reply.error
    numbers = [progress for progress, *_ in sent]
    assert numbers[:2] == [1.0, 2.0] and numbers[-1] == 9.0, sent
    assert all(a < b for a, b in itertools.pairwise(numbers)), sent


async def test_notifications_are_rate_limited_and_the_last_state_is_sent() -> None:
    sent: list[tuple[float, float, float | None, str | None]] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        sent.append((time.monotonic(), progress, total, message))

    progress = RunProgress(sink, interval_s=0.1)
    for _ in range(50):  # 500 calls over ~0.5 s
        for _ in range(10):
            progress.call_ended()
        await asyncio.sleep(0.01)
    await progress.close()
    assert 2 <= len(sent) <= 8
    assert sent[-1][1] == 500.0
    progress.call_ended()  # after close: nothing more
    await asyncio.sleep(0.15)
    assert sent[-1][1] == 500.0 and progress.sent == len(sent)


async def test_a_client_that_goes_away_does_not_fail_the_run() -> None:
    async def gone(progress: float, total: float | None, message: str | None) -> None:
        raise ConnectionError("the client went away")

    progress = RunProgress(gone, interval_s=0.01)
    for _ in range(5):
        progress.call_ended()
        await asyncio.sleep(0.02)
    await progress.close()
    assert progress.sent >= 2

"""`CodeSession`: snippets sharing one worker's namespace, a bounded number at once (both
executors: a local forked worker, a Pyodide runner held and never reset)."""

from __future__ import annotations

import asyncio

import pytest

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.run_slots import RunSlots


async def test_sessions_keep_variables_and_wait_for_a_slot(any_gateway: Gateway) -> None:
    gateway = any_gateway
    executor = gateway.executor
    saved = executor.session_slots  # type: ignore[attr-defined]
    executor.session_slots = RunSlots(1)  # type: ignore[attr-defined]
    first, second = executor.open_session(), executor.open_session()
    assert first is not None and second is not None
    try:
        assert (await gateway.execute("x = 41", session=first)).ok
        assert (await gateway.execute("x + 1", session=first)).result == 42
        waiting = asyncio.ensure_future(gateway.execute("'second'", session=second))
        await asyncio.sleep(0.5)
        assert not waiting.done()  # the one slot is held by the first session
        first.close()
        assert (await asyncio.wait_for(waiting, 30)).result == "second"
        missing = await gateway.execute("x", session=second)  # a session of its own
        assert missing.error is not None and "x" in missing.error.message
    finally:
        first.close()
        second.close()
        executor.session_slots = saved  # type: ignore[attr-defined]


async def test_a_session_step_that_times_out_loses_the_variables_and_says_so(
    any_gateway: Gateway,
) -> None:
    gateway = any_gateway
    session = gateway.executor.open_session()
    assert session is not None
    try:
        assert (await gateway.execute("kept = 1", session=session)).ok
        out = await gateway.execute("while True:\n    pass", timeout_s=1, session=session)
        assert out.error is not None and out.error.type == "TIMEOUT"
        assert "variables were lost" in out.error.message
        after = await gateway.execute("kept", session=session)
        assert after.error is not None and after.error.type == "RUNTIME_ERROR"
        assert (await gateway.execute("1 + 1", session=session)).result == 2  # goes on
    finally:
        session.close()


@pytest.mark.parametrize("code", ["import os", "x ="])
async def test_a_refused_snippet_leaves_the_session_as_it_was(
    any_gateway: Gateway, code: str
) -> None:
    gateway = any_gateway
    session = gateway.executor.open_session()
    assert session is not None
    try:
        assert (await gateway.execute("kept = 7", session=session)).ok
        assert not (await gateway.execute(code, session=session)).ok
        assert (await gateway.execute("kept", session=session)).result == 7
    finally:
        session.close()
